//! Page keys: a title turned into a portable file name (Decision 6).
//!
//! Rules, in order: Unicode NFC; characters illegal in Windows file names (`< > : " / \ | ? *`),
//! characters reserved in Obsidian links (`[ ] # ^ |`), control characters and noncharacters become
//! spaces; bidirectional-text controls (which can disguise a file name) are removed; whitespace
//! runs collapse to one space; leading dots and spaces and trailing dots and spaces are removed;
//! a Windows device name before the first dot (`CON`, `nul.txt`, `COM1`…) gets a `_` after it
//! (`CON_`, `nul_.txt`); the key is cut on a grapheme-cluster boundary (never inside a character or
//! an emoji sequence) so that `<key>.md` is at most 255 bytes of UTF-8. CJK and every other script
//! are kept as they are (never transliterated, never emptied). An empty result becomes `untitled`.
//!
//! *Invariant:* [`page_key`] is idempotent (`page_key(page_key(t)) == page_key(t)`) and never
//! returns an empty string. Keys compare case-insensitively through [`fold_key`].

use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

/// Longest file name, in bytes, including the `.md` extension (ext4, NTFS, APFS limit).
pub const MAX_FILE_NAME_BYTES: usize = 255;

/// Longest key, in bytes.
pub const MAX_KEY_BYTES: usize = MAX_FILE_NAME_BYTES - ".md".len();

const WINDOWS_DEVICE_NAMES: &[&str] = &[
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
    "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

fn is_noncharacter(c: char) -> bool {
    let u = c as u32;
    (0xFDD0..=0xFDEF).contains(&u) || (u & 0xFFFE) == 0xFFFE
}

/// Bidirectional formatting characters: left out of keys entirely.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn is_forbidden(c: char) -> bool {
    matches!(
        c,
        '<' | '>' | ':' | '"' | '/' | '\\' | '|' | '?' | '*' | '[' | ']' | '#' | '^'
    ) || c.is_control()
        || is_noncharacter(c)
}

/// Turns a title into a page key by the rules in the module docs.
///
/// ```
/// use llm_wiki::markdown::keys::page_key;
/// assert_eq!(page_key("Rust: Ownership and Borrowing"), "Rust Ownership and Borrowing");
/// assert_eq!(page_key("人工智能"), "人工智能");
/// assert_eq!(page_key("  ...  "), "untitled");
/// ```
pub fn page_key(title: &str) -> String {
    let nfc: String = title.nfc().collect();
    let mut out = String::with_capacity(nfc.len());
    let mut pending_space = false;
    for c in nfc.chars() {
        if is_bidi_control(c) {
            continue;
        }
        let c = if is_forbidden(c) { ' ' } else { c };
        if c.is_whitespace() {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(c);
        }
    }
    let mut key = trim_key(&out).to_string();
    let stem_len = key.find('.').unwrap_or(key.len());
    let stem = key[..stem_len].trim_end_matches(' ').to_ascii_uppercase();
    if WINDOWS_DEVICE_NAMES.contains(&stem.as_str()) {
        key.insert(key[..stem_len].trim_end_matches(' ').len(), '_');
    }
    if key.len() > MAX_KEY_BYTES {
        key = cut_graphemes(&key, MAX_KEY_BYTES);
        key = trim_key(&key).to_string();
    }
    if key.is_empty() {
        "untitled".to_string()
    } else {
        key
    }
}

/// The longest prefix of `s` made of whole grapheme clusters that fits in `max` bytes.
fn cut_graphemes(s: &str, max: usize) -> String {
    let mut end = 0;
    for (i, g) in s.grapheme_indices(true) {
        if i + g.len() > max {
            break;
        }
        end = i + g.len();
    }
    s[..end].to_string()
}

fn trim_key(s: &str) -> &str {
    s.trim_start_matches(['.', ' '])
        .trim_end_matches(['.', ' '])
}

/// The case-insensitive identity of a key: NFC, then Unicode lowercase. Two keys with the same fold
/// cannot coexist in one wiki (they would be one file on Windows and macOS).
pub fn fold_key(key: &str) -> String {
    key.nfc().collect::<String>().to_lowercase()
}

/// A key for `title` that does not collide (case-insensitively) with any key for which `taken`
/// returns true. When the plain key is taken, a suffix derived from the title's SHA-256 is added
/// (`"Key ~1a2b3c"`), so the result does not depend on the order pages are created in; further
/// collisions add a counter.
pub fn unique_key(title: &str, taken: impl Fn(&str) -> bool) -> String {
    let base = page_key(title);
    if !taken(&fold_key(&base)) {
        return base;
    }
    let digest = hex::encode(Sha256::digest(title.as_bytes()));
    for n in 0u32.. {
        let suffix = if n == 0 {
            format!(" ~{}", &digest[..6])
        } else {
            format!(" ~{}-{n}", &digest[..6])
        };
        let stem = cut_graphemes(&base, MAX_KEY_BYTES - suffix.len());
        let candidate = format!("{}{suffix}", trim_key(&stem));
        if !taken(&fold_key(&candidate)) {
            return candidate;
        }
    }
    unreachable!("u32 counter exhausted")
}

/// A key for a new page that reads well: the title's key when free (case-insensitively, `taken`
/// holds [`fold_key`]s), else `Title (hint)` (e.g. `Widgetron (source)`), else [`unique_key`]'s
/// title-derived suffix.
pub fn readable_unique_key(
    title: &str,
    hint: &str,
    taken: &std::collections::BTreeSet<String>,
) -> String {
    let plain = page_key(title);
    if !taken.contains(&fold_key(&plain)) {
        return plain;
    }
    let hinted = page_key(&format!("{title} ({hint})"));
    if !taken.contains(&fold_key(&hinted)) {
        return hinted;
    }
    unique_key(title, |k| taken.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cjk_titles_keep_their_characters() {
        // Field case F18: every CJK title gets a non-empty, stable key.
        for t in [
            "人工智能",
            "机器学习",
            "日本語",
            "中文",
            "초과근무 승인 규칙",
        ] {
            assert_eq!(page_key(t), t);
        }
    }

    #[test]
    fn forbidden_characters_and_edges() {
        assert_eq!(
            page_key("Rust: Ownership and Borrowing"),
            "Rust Ownership and Borrowing"
        );
        assert_eq!(page_key("Tom's \"Quick\" Notes"), "Tom's Quick Notes");
        assert_eq!(
            page_key("a/b\\c|d?e*f<g>h[[i]]#j^k"),
            "a b c d e f g h i j k"
        );
        assert_eq!(page_key("  .hidden  name... "), "hidden name");
        assert_eq!(page_key("tab\tand\nnewline"), "tab and newline");
        assert_eq!(page_key("???"), "untitled");
        assert_eq!(page_key(""), "untitled");
        assert_eq!(page_key("con"), "con_");
        assert_eq!(page_key("LPT1.txt"), "LPT1_.txt");
        assert_eq!(page_key("nul .tar.gz"), "nul_ .tar.gz");
        assert_eq!(page_key("Console"), "Console");
        assert_eq!(page_key("a\u{202E}gpj.exe"), "agpj.exe");
        assert_eq!(page_key("Cafe\u{301}"), "Café");
        assert_eq!(page_key("x\u{FFFF}y"), "x y");
    }

    #[test]
    fn long_titles_are_cut_on_a_character_boundary() {
        let t = "漢".repeat(200); // 600 bytes
        let k = page_key(&t);
        assert!(k.len() + 3 <= MAX_FILE_NAME_BYTES);
        assert_eq!(k.len(), 84 * 3); // 252 bytes = 84 three-byte characters
        assert!(k.chars().all(|c| c == '漢'));
    }

    #[test]
    fn long_titles_never_split_a_grapheme() {
        // A family emoji is one grapheme of 25 bytes (four people joined by ZWJ).
        let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}";
        let t = format!("{}{}", "a".repeat(240), family);
        assert_eq!(page_key(&t), "a".repeat(240));
        let t = format!("{}{}", "a".repeat(200), family.repeat(3));
        assert_eq!(
            page_key(&t),
            format!("{}{}", "a".repeat(200), family.repeat(2))
        );
        // Unique keys of long titles stay within the limit too.
        let long = "漢".repeat(200);
        assert_eq!(unique_key(&long, |_| false), page_key(&long));
        let first = page_key(&long);
        let k = unique_key(&long, |f| f == fold_key(&first));
        assert!(k.len() + 3 <= MAX_FILE_NAME_BYTES, "{k}");
        let (stem, suffix) = k.rsplit_once(" ~").unwrap();
        assert!(stem.chars().all(|c| c == '漢') && suffix.len() == 6, "{k}");
    }

    #[test]
    fn idempotent() {
        for t in ["Rust: A/B", "  x. ", "人工智能", "con", &"é".repeat(300)] {
            let k = page_key(t);
            assert_eq!(page_key(&k), k, "{t:?}");
        }
    }

    #[test]
    fn unique_keys_are_case_insensitive_and_deterministic() {
        let taken = ["openai".to_string()];
        let is_taken = |k: &str| taken.iter().any(|t| t == k);
        let a = unique_key("OpenAI", is_taken);
        assert!(
            a.starts_with("OpenAI ~") && a.len() == "OpenAI ~".len() + 6,
            "{a}"
        );
        assert_eq!(unique_key("OpenAI", is_taken), a);
        assert_eq!(unique_key("Anthropic", is_taken), "Anthropic");
    }
}
