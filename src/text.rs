//! Text normalisation, content hashing and token estimates.
//!
//! *Invariant:* a source's `version` is always [`content_version`] of its text, i.e. SHA-256 (FIPS
//! 180-4) over the text after [`normalize_source_text`] (Unicode NFC, LF line ends). Re-adding the
//! same text with CRLF line ends or decomposed accents therefore gives the same version (Decision 1).

use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

/// Normalises source text for storage and hashing: Unicode NFC (UAX #15), `\r\n` and lone `\r`
/// turned into `\n`, and a leading byte-order mark removed. Nothing else changes: trailing spaces,
/// blank lines and indentation are kept, because markdown gives them meaning.
pub fn normalize_source_text(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lf = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            lf.push('\n');
        } else {
            lf.push(c);
        }
    }
    lf.nfc().collect()
}

/// `text` in Unicode NFKC (UAX #15), borrowed when it already is (ASCII, or what the standard's
/// quick check answers "yes" for): the same string as `text.nfkc().collect()`, without the
/// decomposition pass over text that needs none.
pub fn nfkc(text: &str) -> std::borrow::Cow<'_, str> {
    use unicode_normalization::{is_nfkc_quick, IsNormalized};
    if text.is_ascii() || is_nfkc_quick(text.chars()) == IsNormalized::Yes {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(text.nfkc().collect())
    }
}

/// NFKC ([`nfkc`]), then every character lowercased (`char::to_lowercase`): the folding of
/// names, duplicate keys and topic tokens.
pub fn nfkc_lowercase(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    nfkc(text).chars().flat_map(char::to_lowercase).collect()
}

/// SHA-256 of `bytes`, as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The content version of source text: [`sha256_hex`] of [`normalize_source_text`]`(text)`.
pub fn content_version(text: &str) -> String {
    sha256_hex(normalize_source_text(text).as_bytes())
}

/// How the CJK table ([`cjk_class`]) classes a character.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cjk {
    /// A word character: Han ideographs, kana letters, Hangul.
    Letter,
    /// CJK, but not a word character: punctuation and symbols, the combining and spacing sound
    /// marks, `゠`, `・`, Bopomofo, and the code points those blocks leave unassigned.
    Other,
}

/// The one CJK table, read by [`is_cjk`] (any class) and [`is_cjk_letter`] ([`Cjk::Letter`]
/// only). The arms are disjoint and in code-point order; blocks are split where the two
/// predicates part, so each arm says what both answer.
fn cjk_class(c: char) -> Option<Cjk> {
    use Cjk::{Letter, Other};
    let class = match c as u32 {
        0x1100..=0x11FF => Letter,   // Hangul Jamo
        0x2E80..=0x2FDF => Letter,   // CJK radicals supplement, Kangxi radicals
        0x3000..=0x3004 => Other,    // ideographic space, 、 。 〃 〄
        0x3005..=0x3007 => Letter,   // 々 〆 〇
        0x3008..=0x3020 => Other,    // brackets, 〒 〓, 〜, quotation marks, 〠
        0x3021..=0x3029 => Letter,   // Hangzhou numerals
        0x302A..=0x3037 => Other,    // tone marks, 〰, kana repeat marks 〱–〵, 〶 〷
        0x3038..=0x303B => Letter,   // more Hangzhou numerals, 〻
        0x303C..=0x303F => Other,    // 〼 〽 〾 〿
        0x3040 => Other,             // unassigned
        0x3041..=0x3096 => Letter,   // Hiragana letters
        0x3097..=0x309C => Other,    // unassigned; combining and spacing (semi-)voiced marks
        0x309D..=0x309F => Letter,   // Hiragana iteration marks, ゟ
        0x30A0 => Other,             // ゠
        0x30A1..=0x30FA => Letter,   // Katakana letters
        0x30FB => Other,             // ・
        0x30FC..=0x30FF => Letter,   // ー, iteration marks, ヿ
        0x3100..=0x312F => Other,    // Bopomofo (not indexed)
        0x3130 => Other,             // unassigned
        0x3131..=0x318E => Letter,   // Hangul compatibility jamo
        0x318F => Other,             // unassigned
        0x31F0..=0x31FF => Letter,   // Katakana phonetic extensions
        0x3400..=0x4DBF => Letter,   // CJK extension A
        0x4E00..=0x9FFF => Letter,   // CJK unified ideographs
        0xA960..=0xA97F => Letter,   // Hangul jamo extended-A
        0xAC00..=0xD7AF => Letter,   // Hangul syllables
        0xD7B0..=0xD7FF => Letter,   // Hangul jamo extended-B
        0xF900..=0xFAFF => Letter,   // CJK compatibility ideographs
        0xFF65 => Other,             // ･ halfwidth Katakana middle dot
        0xFF66..=0xFF9F => Letter,   // halfwidth Katakana (NFKC maps them)
        0x20000..=0x3134F => Letter, // CJK extensions B..H and compatibility supplement
        _ => return None,
    };
    Some(class)
}

/// True for characters counted one token each by [`estimate_tokens`]: Han ideographs (CJK Unified
/// Ideographs and extensions, compatibility ideographs), Hiragana, Katakana, Hangul syllables and jamo,
/// Bopomofo and CJK symbols and punctuation. Every class of the CJK table ([`cjk_class`]).
pub fn is_cjk(c: char) -> bool {
    cjk_class(c).is_some()
}

/// True for the characters the search tokenizer indexes as unigrams and bigrams: Han ideographs
/// (unified, extensions A–H, compatibility, radicals, iteration marks `々〆〇`, Hangzhou
/// numerals), Hiragana and Katakana letters (with the prolonged sound mark `ー`, without the
/// punctuation `゠` and `・`) and Hangul (syllables and jamo). CJK punctuation and symbols (`。`,
/// `、`, `「`) and Bopomofo are not letters: they end a run and are not indexed. The letter class
/// of the CJK table ([`cjk_class`]), so every letter is also [`is_cjk`].
pub fn is_cjk_letter(c: char) -> bool {
    cjk_class(c) == Some(Cjk::Letter)
}

/// How token counts are estimated before a response reports real usage (Decision 12).
///
/// Defaults: each CJK character ([`is_cjk`]) is one token; other text is one token per four
/// characters (rounded up). Reported usage from the endpoint always replaces the estimate.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
// A stored estimator that lacks a field (written before it existed) reads it as its default.
#[serde(rename_all = "camelCase", default)]
pub struct TokenEstimator {
    /// Tokens per CJK character. Range `0.1..=4.0`; default 1.0. Lower for tokenizers with large
    /// CJK vocabularies (e.g. 0.7), higher for byte-level ones (up to ~2–3).
    pub cjk_tokens_per_char: f32,
    /// Characters per token for all other text. Range `1.0..=8.0`; default 4.0 (English prose with
    /// BPE tokenizers). 1.0 overestimates heavily; 8.0 underestimates code and numbers.
    pub chars_per_token: f32,
}

impl Default for TokenEstimator {
    fn default() -> Self {
        TokenEstimator {
            cjk_tokens_per_char: 1.0,
            chars_per_token: 4.0,
        }
    }
}

impl TokenEstimator {
    /// Estimated token count of `text` (never 0 for non-empty text).
    pub fn estimate(&self, text: &str) -> u64 {
        let (mut cjk, mut other) = (0u64, 0u64);
        for c in text.chars() {
            if is_cjk(c) {
                cjk += 1;
            } else {
                other += 1;
            }
        }
        let tokens = cjk as f64 * f64::from(self.cjk_tokens_per_char)
            + (other as f64 / f64::from(self.chars_per_token.max(0.1))).ceil();
        let tokens = tokens.ceil() as u64;
        if tokens == 0 && !text.is_empty() {
            1
        } else {
            tokens
        }
    }
}

/// [`TokenEstimator::estimate`] with the default estimator.
pub fn estimate_tokens(text: &str) -> u64 {
    TokenEstimator::default().estimate(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CJK table at every edge of its arms: the code point before each arm, its first and
    /// last, and the one after. Both predicates read the same table; a letter is always CJK.
    #[test]
    fn cjk_table_edges() {
        let letter = [
            0x1100, 0x11FF, 0x2E80, 0x2FDF, 0x3005, 0x3007, 0x3021, 0x3029, 0x3038, 0x303B, 0x3041,
            0x3096, 0x309D, 0x309F, 0x30A1, 0x30FA, 0x30FC, 0x30FF, 0x3131, 0x318E, 0x31F0, 0x31FF,
            0x3400, 0x4DBF, 0x4E00, 0x9FFF, 0xA960, 0xA97F, 0xAC00, 0xD7AF, 0xD7B0, 0xD7FF, 0xF900,
            0xFAFF, 0xFF66, 0xFF9F, 0x20000, 0x3134F,
        ];
        // CJK for the token estimate, not a word character for the tokenizer.
        let other = [
            0x3000, 0x3004, 0x3008, 0x3020, 0x302A, 0x3037, 0x303C, 0x303F, 0x3040, 0x3097, 0x309C,
            0x30A0, 0x30FB, 0x3100, 0x312F, 0x3130, 0x318F, 0xFF65,
        ];
        let neither = [
            0x10FF, 0x1200, 0x2E7F, 0x2FE0, 0x2FFF, 0x3190, 0x31EF, 0x3200, 0x33FF, 0x4DC0, 0x4DFF,
            0xA000, 0xA95F, 0xA980, 0xABFF, 0xF8FF, 0xFB00, 0xFF64, 0xFFA0, 0x1FFFF, 0x31350,
        ];
        let ch = |u: u32| char::from_u32(u).unwrap();
        for u in letter {
            assert!(
                is_cjk(ch(u)) && is_cjk_letter(ch(u)),
                "U+{u:04X} is a CJK letter"
            );
        }
        for u in other {
            assert!(
                is_cjk(ch(u)) && !is_cjk_letter(ch(u)),
                "U+{u:04X} is CJK, no letter"
            );
        }
        for u in neither {
            assert!(
                !is_cjk(ch(u)) && !is_cjk_letter(ch(u)),
                "U+{u:04X} is not CJK"
            );
        }
    }

    #[test]
    fn nfkc_borrows_only_what_needs_no_change() {
        use unicode_normalization::UnicodeNormalization;
        for t in [
            "plain ascii",
            "机器学习 — “quotes”",
            "ＲＵＳＴ ﬁ",
            "A\u{30a} Å",
            "ǅ İ ς",
        ] {
            assert_eq!(nfkc(t), t.nfkc().collect::<String>(), "{t:?}");
            let lower: String = t.nfkc().flat_map(char::to_lowercase).collect();
            assert_eq!(nfkc_lowercase(t), lower, "{t:?}");
        }
        assert!(matches!(
            nfkc("机器学习 — “quotes”"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert!(matches!(nfkc("ＲＵＳＴ"), std::borrow::Cow::Owned(_)));
    }

    #[test]
    fn line_ends_and_nfc_do_not_change_the_version() {
        let lf = "Widgetron was first released in 2015.\nCafé\n";
        let crlf = "Widgetron was first released in 2015.\r\nCafe\u{301}\r\n";
        assert_eq!(normalize_source_text(crlf), lf);
        assert_eq!(content_version(lf), content_version(crlf));
        assert_ne!(
            content_version(lf),
            content_version("Widgetron was first released in 2016.\n")
        );
    }

    #[test]
    fn lone_cr_and_bom() {
        assert_eq!(normalize_source_text("\u{feff}a\rb\r\n\rc"), "a\nb\n\nc");
    }

    #[test]
    fn sha256_known_vector() {
        // FIPS 180-4 example "abc".
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn token_estimates_follow_decision_12() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("a"), 1);
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(estimate_tokens("人工智能"), 4);
        assert_eq!(estimate_tokens("人工智能 is AI"), 4 + 2); // " is AI" = 6 chars -> 2
        assert_eq!(estimate_tokens("초과근무"), 4);
        assert_eq!(estimate_tokens("ひらがな"), 4);
    }
}
