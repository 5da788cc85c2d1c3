//! Provenance: claim ids and quote verification.
//!
//! A quote verifies when, after [`plain_text`] on both sides, it occurs in the source text. The
//! normalisation forgives what models and markdown change without changing meaning — Unicode
//! compatibility forms (NFKC), curly versus straight quotes, runs of whitespace, emphasis and code
//! markers, link syntax — and nothing else: a changed word, number or character fails.

use sha2::{Digest, Sha256};

use crate::markdown::plain::plain_text;
use crate::model::Stance;

/// True when `quote` (non-empty after normalisation) occurs in `source` by [`plain_text`].
pub fn quote_occurs(quote: &str, source_plain: &str) -> bool {
    let q = plain_text(quote);
    let q = q
        .trim_matches(|c: char| c == '"' || c == '\'' || c.is_whitespace() || c == '…' || c == '.');
    !q.is_empty() && source_plain.contains(q)
}

/// True when `a` and `b` say the same words but different numbers ("released in 2015" versus
/// "released in 2016"): the extractive contradiction signal. Texts without digits never differ
/// only in numbers.
pub fn differ_only_in_numbers(a: &str, b: &str) -> bool {
    let numbers = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_ascii_digit())
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect()
    };
    let words = |s: &str| {
        plain_text(
            &s.chars()
                .filter(|c| !c.is_ascii_digit())
                .collect::<String>(),
        )
        .to_lowercase()
    };
    let (na, nb) = (numbers(a), numbers(b));
    !na.is_empty() && !nb.is_empty() && na != nb && words(a) == words(b)
}

/// Words and phrases that mark a sentence's claim as withdrawn (checked first).
const RETRACTED_MARKS: &[&str] = &[
    "withdrew",
    "withdrawn",
    "retracted",
    "retracts",
    "recanted",
    "took back",
    "takes back",
    "no longer",
    "was corrected",
    "later corrected",
    "撤回",
    "收回",
    "更正",
];
/// … as someone else's word.
const REPORTED_MARKS: &[&str] = &[
    "claimed",
    "claims that",
    "claim that",
    "said that",
    "says that",
    "stated that",
    "reported",
    "reportedly",
    "according to",
    "alleged",
    "allegedly",
    "rumored",
    "rumoured",
    "声称",
    "据报道",
    "据称",
    "据说",
];
/// … as a possibility or condition.
const HYPOTHETICAL_MARKS: &[&str] = &[
    "if",
    "would",
    "might",
    "could",
    "suppose",
    "supposing",
    "hypothetically",
    "如果",
    "假如",
    "假设",
    "可能",
];

/// The stance a sentence states its claim with, read from marker words (the extractive
/// reading the offline compiler and the scripted endpoint use; a real model answers it in the
/// extraction's `stance`): withdrawn (`withdrew`, `retracted`, `no longer`, 撤回…) first, then
/// someone else's word (`claimed`, `according to`, 据报道…), then a condition (`if`, `might`,
/// 如果…); otherwise asserted. Latin marks match whole words (case-folded), CJK marks anywhere.
pub fn stance_of(sentence: &str) -> Stance {
    let folded = sentence.to_lowercase();
    let words: Vec<&str> = folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |mark: &str| -> bool {
        if mark.chars().any(crate::text::is_cjk) {
            return folded.contains(mark);
        }
        let m: Vec<&str> = mark.split(' ').collect();
        words.windows(m.len()).any(|w| w == m.as_slice())
    };
    if RETRACTED_MARKS.iter().any(|m| has(m)) {
        Stance::Retracted
    } else if REPORTED_MARKS.iter().any(|m| has(m)) {
        Stance::Reported
    } else if HYPOTHETICAL_MARKS.iter().any(|m| has(m)) {
        Stance::Hypothetical
    } else {
        Stance::Asserted
    }
}

/// A claim id: `c` + 10 hex digits of SHA-256 over page key, source key and the normalised quote and
/// text. Deterministic, so a batch gives the same ids whatever the compile order.
pub fn claim_id(page: &str, source_key: &str, text: &str, quote: &str) -> String {
    let mut h = Sha256::new();
    for part in [page, source_key, &plain_text(text), &plain_text(quote)] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    format!("c{}", &hex::encode(h.finalize())[..10])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stance_is_read_from_reporting_withdrawal_and_condition_words() {
        for (s, want) in [
            (
                "The Kestrel drone has a flight time of 42 minutes.",
                Stance::Asserted,
            ),
            (
                "A reviewer once claimed a flight time of 35 minutes, then withdrew the claim.",
                Stance::Retracted,
            ),
            (
                "According to the vendor, it flies for 40 minutes.",
                Stance::Reported,
            ),
            (
                "Critics said that the battery lasts 30 minutes.",
                Stance::Reported,
            ),
            (
                "If the wind is calm, it might fly for 50 minutes.",
                Stance::Hypothetical,
            ),
            ("The model is no longer sold in Europe.", Stance::Retracted),
            ("据报道，该无人机续航35分钟。", Stance::Reported),
            ("评测者后来撤回了35分钟的说法。", Stance::Retracted),
            ("如果天气好，它可以飞50分钟。", Stance::Hypothetical),
            ("该无人机续航42分钟。", Stance::Asserted),
            // Whole words only: "iffy", "Claimedia" and 名称 are no marks.
            ("The iffy Claimedia name lasts 2 hours.", Stance::Asserted),
            ("它的名称是红隼。", Stance::Asserted),
        ] {
            assert_eq!(stance_of(s), want, "{s}");
        }
    }

    #[test]
    fn quotes_verify_across_harmless_differences() {
        let src = plain_text(
            "Ownership is **Rust's** most unique feature.\r\n\n> It enables  memory safety\nwithout a [garbage collector](https://x).\n“流量控制”很重要。",
        );
        assert!(quote_occurs(
            "Ownership is Rust’s most unique feature.",
            &src
        ));
        assert!(quote_occurs(
            "It enables memory safety without a garbage collector",
            &src
        ));
        assert!(quote_occurs("\"流量控制\"很重要", &src));
        assert!(quote_occurs(
            "“Ownership is Rust's most unique feature…”",
            &src
        ));
        assert!(!quote_occurs(
            "Ownership is Rust's most important feature.",
            &src
        ));
        assert!(!quote_occurs(
            "released in 2016",
            &plain_text("released in 2015")
        ));
        assert!(!quote_occurs("  ", &src));
        assert_eq!(
            plain_text("snake_case and _emphasis_"),
            "snake_case and emphasis"
        );
        assert_eq!(plain_text("![alt](x.png) [a](b)"), "alt a");
    }

    #[test]
    fn numbers_only_differences() {
        assert!(differ_only_in_numbers(
            "Widgetron was first released in 2015.",
            "Widgetron was first released in 2016."
        ));
        assert!(!differ_only_in_numbers(
            "Released in 2015.",
            "Released in 2015."
        ));
        assert!(!differ_only_in_numbers(
            "Released in 2015.",
            "Launched in 2016."
        ));
        assert!(!differ_only_in_numbers("No digits.", "No digits."));
    }

    #[test]
    fn ids_are_deterministic_and_distinct() {
        let a = claim_id(
            "Widgetron",
            "s",
            "Released in 2015.",
            "first released in 2015",
        );
        assert_eq!(
            a,
            claim_id(
                "Widgetron",
                "s",
                "Released in  2015.",
                "first released in 2015"
            )
        );
        assert_ne!(
            a,
            claim_id(
                "Widgetron",
                "s",
                "Released in 2016.",
                "first released in 2016"
            )
        );
        assert_ne!(
            a,
            claim_id("Other", "s", "Released in 2015.", "first released in 2015")
        );
        assert_eq!(a.len(), 11);
    }
}
