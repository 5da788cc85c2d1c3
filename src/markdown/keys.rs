//! Page keys: a title turned into a portable file name (Decision 6), and the match key that says
//! when two names are one.
//!
//! Key rules ([`page_key`]), in order: Unicode NFC; each character illegal in a Windows file name
//! or reserved in an Obsidian link becomes its fixed stand-in from [`STAND_INS`] (the full-width
//! form of the same character, so `I/O` → `I／O` and `I:O` → `I：O` are two files, and
//! [`restore_stand_ins`] gives the characters back); a leading or trailing dot becomes `．`
//! (`.NET` → `．NET`, so it is neither a hidden file nor the same file as `NET`); control
//! characters and noncharacters become spaces; bidirectional-text controls (which can disguise a
//! file name) are removed; whitespace runs collapse to one space, and leading and trailing spaces
//! go; a Windows device name before the first dot (`CON`, `nul.txt`, `COM1`…) gets a `_` after it
//! (`CON_`, `nul_.txt`); the key is cut on a grapheme-cluster boundary (never inside a character or
//! an emoji sequence) so that `<key>.md` is at most 255 bytes of UTF-8. CJK and every other script
//! are kept as they are (never transliterated, never emptied). An empty result becomes `untitled`.
//!
//! | character | `<` | `>` | `:` | `"` | `/` | `\` | `\|` | `?` | `*` | `[` | `]` | `#` | `^` | `.` (first or last) |
//! |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
//! | stand-in | `＜` | `＞` | `：` | `＂` | `／` | `＼` | `｜` | `？` | `＊` | `［` | `］` | `＃` | `＾` | `．` |
//!
//! Keys made before this rule replaced those characters by spaces and dropped edge dots
//! ([`legacy_page_key`]); pages keep the keys they have, and links written for the old keys still
//! resolve.
//!
//! Match rule ([`match_key`]): two names are one entity when they are equal after folding case
//! and width (NFKC, so `Ｃ＋＋` = `C++` and a stand-in equals its character), removing whitespace,
//! removing hyphens and underscores between letters or digits (`Wi-Fi` = `WiFi` = `Wi Fi`, `GPT-4` =
//! `GPT4`; not between two digits: `3-4` ≠ `34`), and dropping trailing legal forms
//! ([`LEGAL_FORMS`]: `OpenAI, Inc.` = `OpenAI`). Every other symbol counts: `C`, `C++` and `C#`
//! differ, and so do `.NET` and `NET`, `I/O` and `I:O`, `AT&T` and `ATT`.
//!
//! *Invariant:* [`page_key`] is idempotent (`page_key(page_key(t)) == page_key(t)`), never
//! returns an empty string, and keeps names apart ([`match_key`]`(page_key(t)) ==
//! match_key(t)` unless the key was cut or had to take a `_` or a space). Keys compare
//! case-insensitively through [`fold_key`].

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

/// Each character a key cannot hold and its stand-in (see the module docs): the full-width form
/// of the same character, which NFKC folds back, so a stand-in matches what it stands for.
pub const STAND_INS: &[(char, char)] = &[
    ('<', '\u{FF1C}'),
    ('>', '\u{FF1E}'),
    (':', '\u{FF1A}'),
    ('"', '\u{FF02}'),
    ('/', '\u{FF0F}'),
    ('\\', '\u{FF3C}'),
    ('|', '\u{FF5C}'),
    ('?', '\u{FF1F}'),
    ('*', '\u{FF0A}'),
    ('[', '\u{FF3B}'),
    (']', '\u{FF3D}'),
    ('#', '\u{FF03}'),
    ('^', '\u{FF3E}'),
];

/// The stand-in of a dot that starts or ends a key.
pub const DOT_STAND_IN: char = '\u{FF0E}';

fn stand_in(c: char) -> Option<char> {
    STAND_INS
        .iter()
        .find(|(from, _)| *from == c)
        .map(|(_, to)| *to)
}

fn is_blanked(c: char) -> bool {
    c.is_control() || is_noncharacter(c)
}

/// The characters [`legacy_page_key`] turned into spaces.
fn is_legacy_forbidden(c: char) -> bool {
    stand_in(c).is_some() || is_blanked(c)
}

/// Turns a title into a page key by the rules in the module docs.
///
/// ```
/// use llm_wiki::markdown::keys::page_key;
/// assert_eq!(page_key("Rust: Ownership and Borrowing"), "Rust： Ownership and Borrowing");
/// assert_eq!(page_key("I/O"), "I／O");
/// assert_ne!(page_key("I/O"), page_key("I:O"));
/// assert_eq!(page_key(".NET"), "．NET");
/// assert_eq!(page_key("C#"), "C＃");
/// assert_eq!(page_key("人工智能"), "人工智能");
/// assert_eq!(page_key("  \t  "), "untitled");
/// ```
pub fn page_key(title: &str) -> String {
    build_key(title, false)
}

/// The key [`page_key`] gave before stand-ins (keys of pages made then): every character of
/// [`STAND_INS`] became a space and leading and trailing dots were removed, so `I/O` and `I:O`
/// both gave `I O`. Used to find pages by the keys they already have; never for a new key.
///
/// ```
/// use llm_wiki::markdown::keys::legacy_page_key;
/// assert_eq!(legacy_page_key("I/O"), "I O");
/// assert_eq!(legacy_page_key(".NET"), "NET");
/// ```
pub fn legacy_page_key(title: &str) -> String {
    build_key(title, true)
}

/// `key` with each stand-in of [`STAND_INS`] and [`DOT_STAND_IN`] turned back into the
/// character it stands for (`I／O` → `I/O`, `．NET` → `.NET`). A title that held the full-width
/// form itself comes back with the ASCII one, which [`match_key`] treats as the same name.
pub fn restore_stand_ins(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c == DOT_STAND_IN {
                '.'
            } else {
                STAND_INS
                    .iter()
                    .find(|(_, to)| *to == c)
                    .map_or(c, |(from, _)| *from)
            }
        })
        .collect()
}

fn build_key(title: &str, legacy: bool) -> String {
    let nfc: String = title.nfc().collect();
    let mut out = String::with_capacity(nfc.len());
    let mut pending_space = false;
    for c in nfc.chars() {
        if is_bidi_control(c) {
            continue;
        }
        let c = if legacy {
            if is_legacy_forbidden(c) {
                ' '
            } else {
                c
            }
        } else if is_blanked(c) {
            ' '
        } else {
            stand_in(c).unwrap_or(c)
        };
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
    let mut key = if legacy {
        trim_key(&out).to_string()
    } else {
        edge_dots(out.trim_matches(' '))
    };
    let stem_len = key.find('.').unwrap_or(key.len());
    let stem = key[..stem_len].trim_end_matches(' ').to_ascii_uppercase();
    if WINDOWS_DEVICE_NAMES.contains(&stem.as_str()) {
        key.insert(key[..stem_len].trim_end_matches(' ').len(), '_');
    }
    if key.len() > MAX_KEY_BYTES {
        // A cut key loses its end anyway: a dot it now ends with is dropped, not replaced.
        key = cut_graphemes(&key, MAX_KEY_BYTES);
        key = if legacy {
            trim_key(&key).to_string()
        } else {
            key.trim_end_matches(['.', ' ']).to_string()
        };
    }
    if key.is_empty() {
        "untitled".to_string()
    } else {
        key
    }
}

/// `s` with the dots that start or end it replaced by [`DOT_STAND_IN`].
fn edge_dots(s: &str) -> String {
    let lead = s.len() - s.trim_start_matches('.').len();
    if lead == s.len() {
        return DOT_STAND_IN.to_string().repeat(s.chars().count());
    }
    let trail = s.len() - s.trim_end_matches('.').len();
    let mut out = String::with_capacity(s.len() + 2 * (lead + trail));
    out.extend(std::iter::repeat_n(DOT_STAND_IN, lead));
    out.push_str(&s[lead..s.len() - trail]);
    out.extend(std::iter::repeat_n(DOT_STAND_IN, trail));
    out
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

/// Trailing words that name a legal form, not the entity ([`match_key`] drops them; compared
/// after case folding, with their dots removed, so `Inc.`, `L.L.C.` and `S.A.` count).
pub const LEGAL_FORMS: &[&str] = &[
    "inc",
    "incorporated",
    "ltd",
    "limited",
    "llc",
    "llp",
    "corp",
    "corporation",
    "co",
    "company",
    "gmbh",
    "ag",
    "sa",
    "sas",
    "plc",
    "bv",
    "nv",
    "oy",
    "ab",
    "kk",
    "pty",
    "srl",
    "spa",
    "有限公司",
    "股份有限公司",
    "有限责任公司",
    "公司",
    "株式会社",
    "有限會社",
    "주식회사",
];

/// Typographic forms NFKC keeps apart from the ASCII character they are written for:
/// apostrophes and quotes, and the Unicode hyphens.
fn fold_typography(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{02BC}' => '\'',
        '\u{201C}' | '\u{201D}' => '"',
        '\u{2010}' | '\u{2011}' => '-',
        c => c,
    }
}

/// The identity of a name for matching (the match rule in the module docs): NFKC, lower case,
/// typographic quotes and hyphens as ASCII, trailing legal forms dropped (while another word
/// remains; a comma before one goes with it), whitespace removed, and hyphens and underscores
/// removed between two letters or digits unless both are digits. Empty for a name without a
/// letter or digit.
///
/// ```
/// use llm_wiki::markdown::keys::match_key;
/// assert_eq!(match_key("OpenAI"), match_key("Open AI"));
/// assert_eq!(match_key("OpenAI, Inc."), "openai");
/// assert_ne!(match_key("OpenAI Foundation"), "openai");
/// assert_eq!(match_key("ＯｐｅｎＡＩ"), "openai"); // full-width
/// assert_eq!(match_key("Wi-Fi"), match_key("WiFi"));
/// assert_ne!(match_key("C++"), match_key("C#"));
/// assert_ne!(match_key(".NET"), match_key("NET"));
/// assert_eq!(match_key("人工智能"), "人工智能");
/// ```
pub fn match_key(name: &str) -> String {
    let folded: String = crate::text::nfkc_lowercase(name)
        .chars()
        .map(fold_typography)
        .collect();
    let mut words: Vec<&str> = folded.split_whitespace().collect();
    while words.len() > 1 {
        let last = words[words.len() - 1];
        let bare: String = last.chars().filter(|c| *c != '.' && *c != ',').collect();
        if !LEGAL_FORMS.contains(&bare.as_str()) {
            break;
        }
        words.pop();
        if let Some(w) = words.last_mut() {
            *w = w.trim_end_matches(',');
            if w.is_empty() {
                words.pop();
            }
        }
    }
    let mut joined = words.concat();
    // A CJK legal form glued to the name ("字节跳动有限公司").
    for form in LEGAL_FORMS.iter().filter(|f| !f.is_ascii()) {
        if joined.len() > form.len() && joined.ends_with(form) {
            joined.truncate(joined.len() - form.len());
            break;
        }
    }
    if !joined.chars().any(char::is_alphanumeric) {
        return String::new();
    }
    let chars: Vec<char> = joined.chars().collect();
    let mut out = String::with_capacity(joined.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if matches!(c, '-' | '_') {
            let end = (i..chars.len())
                .find(|&j| !matches!(chars[j], '-' | '_'))
                .unwrap_or(chars.len());
            let before = i.checked_sub(1).map(|j| chars[j]);
            let after = chars.get(end).copied();
            if let (Some(b), Some(a)) = (before, after) {
                if b.is_alphanumeric() && a.is_alphanumeric() && !(b.is_numeric() && a.is_numeric())
                {
                    i = end;
                    continue;
                }
            }
            out.extend(&chars[i..end]);
            i = end;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The match key of the rule before symbols counted: the name's letters and digits only (NFKC,
/// lower case), a trailing legal form dropped, so `C`, `C++` and `C#` were all `c`. Never used
/// to match names; lint uses it to find pages that rule merged ([`merged_names`]).
pub fn legacy_match_key(name: &str) -> String {
    let folded = crate::text::nfkc_lowercase(name);
    let mut words: Vec<&str> = folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if words.len() > 1 && LEGAL_FORMS.contains(&words[words.len() - 1]) {
        words.pop();
    }
    let mut joined = words.concat();
    for form in LEGAL_FORMS.iter().filter(|f| !f.is_ascii()) {
        if joined.len() > form.len() && joined.ends_with(form) {
            joined.truncate(joined.len() - form.len());
            break;
        }
    }
    joined
}

/// The names of one page that the old rule made one and [`match_key`] tells apart: for a page
/// whose title and aliases are `names`, every name sharing a [`legacy_match_key`] with a name of
/// another [`match_key`], sorted and deduplicated (empty when there are none). A page titled
/// `I/O` with the alias `I:O` (keyed `I O`), or titled `C` with the aliases `C++` and `C#`,
/// merged names.
///
/// ```
/// use llm_wiki::markdown::keys::merged_names;
/// assert_eq!(merged_names(["C", "C++", "C#"]), vec!["C", "C#", "C++"]);
/// assert!(merged_names(["OpenAI", "Open AI", "OpenAI Inc."]).is_empty());
/// ```
pub fn merged_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut by_old: std::collections::BTreeMap<String, Vec<(String, String)>> =
        std::collections::BTreeMap::new();
    for n in names {
        let n = restore_stand_ins(n.trim());
        let old = legacy_match_key(&n);
        if old.is_empty() {
            continue;
        }
        let new = match_key(&n);
        by_old.entry(old).or_default().push((new, n));
    }
    let mut out: Vec<String> = by_old
        .into_values()
        .filter(|group| group.iter().any(|(k, _)| *k != group[0].0))
        .flat_map(|group| group.into_iter().map(|(_, n)| n))
        .collect();
    out.sort();
    out.dedup();
    out
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
    use std::collections::BTreeSet;

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
    fn illegal_characters_get_their_stand_ins() {
        assert_eq!(
            page_key("Rust: Ownership and Borrowing"),
            "Rust： Ownership and Borrowing"
        );
        assert_eq!(page_key("Tom's \"Quick\" Notes"), "Tom's ＂Quick＂ Notes");
        assert_eq!(
            page_key("a/b\\c|d?e*f<g>h[[i]]#j^k"),
            "a／b＼c｜d？e＊f＜g＞h［［i］］＃j＾k"
        );
        assert_eq!(page_key("  .hidden  name... "), "．hidden name．．．");
        assert_eq!(page_key(".NET"), "．NET");
        assert_eq!(page_key("Node.js"), "Node.js");
        assert_eq!(page_key("tab\tand\nnewline"), "tab and newline");
        assert_eq!(page_key("???"), "？？？");
        assert_eq!(page_key(""), "untitled");
        assert_eq!(page_key(" \u{0} "), "untitled");
        assert_eq!(page_key("con"), "con_");
        assert_eq!(page_key("LPT1.txt"), "LPT1_.txt");
        assert_eq!(page_key("nul .tar.gz"), "nul_ .tar.gz");
        assert_eq!(page_key("Console"), "Console");
        assert_eq!(page_key("a\u{202E}gpj.exe"), "agpj.exe");
        assert_eq!(page_key("Cafe\u{301}"), "Café");
        assert_eq!(page_key("x\u{FFFF}y"), "x y");
    }

    #[test]
    fn names_that_differ_in_a_symbol_get_different_files() {
        let names = [
            "C", "C++", "C#", "I/O", "I:O", ".NET", "NET", "F#", "F", "C++20", "AT&T", "A|B",
            "A?B", "A*B", "A<B", "A>B", "A\"B", "A\\B", "A[B]", "A^B",
        ];
        let keys: BTreeSet<String> = names.iter().map(|n| fold_key(&page_key(n))).collect();
        assert_eq!(keys.len(), names.len(), "{keys:?}");
        for n in names {
            let k = page_key(n);
            assert_eq!(restore_stand_ins(&k), n, "{n} → {k}");
            assert_eq!(match_key(&k), match_key(n), "{n} → {k}");
            assert!(!k.contains(['<', '>', ':', '"', '/', '\\', '|', '?', '*', '[', ']', '#', '^']));
        }
        // The table is one to one.
        let to: BTreeSet<char> = STAND_INS.iter().map(|(_, t)| *t).collect();
        assert_eq!(to.len(), STAND_INS.len());
    }

    #[test]
    fn legacy_keys_stay_fixed_points_and_are_what_pages_made_earlier_have() {
        assert_eq!(legacy_page_key("I/O"), "I O");
        assert_eq!(legacy_page_key("I:O"), "I O");
        assert_eq!(legacy_page_key("C#"), "C");
        assert_eq!(legacy_page_key("  ...  "), "untitled");
        assert_eq!(legacy_page_key("Rust: Ownership"), "Rust Ownership");
        // An old key is a key under the new rule too: importing it never re-keys the page.
        for t in ["I/O", "Rust: A/B", ".NET", "Inc.", "con", "a#b^c"] {
            let old = legacy_page_key(t);
            assert_eq!(page_key(&old), old, "{t:?}");
        }
    }

    #[test]
    fn match_keys_fold_case_width_space_hyphens_and_legal_forms_only() {
        let same = [
            ("Wi-Fi", "WiFi"),
            ("Wi-Fi", "wi fi"),
            ("Wi_Fi", "WIFI"),
            ("Ｃ＋＋", "C++"),
            ("ＯｐｅｎＡＩ", "OpenAI"),
            ("Open AI", "OpenAI"),
            ("OpenAI, Inc.", "OpenAI"),
            ("OpenAI Inc", "openai"),
            ("Samsung Electronics Co., Ltd.", "Samsung Electronics"),
            ("AT&T Inc.", "AT&T"),
            ("3.1 kg", "3.1kg"),
            ("Node.js", "node.js"),
            ("GPT-4", "GPT4"),
            ("C＃", "C#"),
            ("I／O", "I/O"),
            ("Rust\u{2019}s", "Rust's"),
            ("字节跳动有限公司", "字节跳动"),
        ];
        for (a, b) in same {
            assert_eq!(match_key(a), match_key(b), "{a} = {b}");
        }
        let different = [
            ("C", "C++"),
            ("C", "C#"),
            ("C++", "C#"),
            (".NET", "NET"),
            ("F#", "F"),
            ("C++20", "C++"),
            ("C++20", "C20"),
            ("I/O", "I:O"),
            ("I/O", "IO"),
            ("AT&T", "ATT"),
            ("3.1 kg", "31 kg"),
            ("3.1 kg", "3.1"),
            ("Node.js", "Nodejs"),
            ("3-4", "34"),
            ("OpenAI Foundation", "OpenAI"),
        ];
        for (a, b) in different {
            assert_ne!(match_key(a), match_key(b), "{a} ≠ {b}");
        }
        assert_eq!(match_key("---"), "");
        assert_eq!(match_key("Co"), "co");
        assert_eq!(match_key(".NET"), ".net");
        assert_eq!(match_key("C++20"), "c++20");
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
        for t in [
            "Rust: A/B",
            "  x. ",
            "人工智能",
            "con",
            &"é".repeat(300),
            ".NET",
            "I:O",
            "...",
            &".".repeat(300),
        ] {
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
