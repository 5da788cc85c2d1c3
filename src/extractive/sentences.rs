//! Sentences: text split into sentences, each verbatim with its terminator.
//!
//! Latin sentences end at `.`, `!` or `?` followed by a space and not after a common
//! abbreviation; CJK sentences end at `。`, `！`, `？` (and `；`). The input is one block of prose
//! ([`crate::markdown::blocks::text_blocks`]).
//!
//! *Invariant:* every sentence is a verbatim slice of its input, trimmed.

const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "cf", "mr", "mrs", "ms", "dr", "st", "no", "fig", "approx",
];

/// Splits text into sentences, each verbatim with its terminator: Latin sentences end at `.`, `!`
/// or `?` followed by a space and not after a common abbreviation; CJK sentences end at `。`, `！`,
/// `？` (and `；`). Fragments shorter than 4 characters are dropped.
pub fn sentences(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        cur.push(c);
        let boundary = match c {
            '。' | '！' | '？' | '；' => true,
            '.' | '!' | '?' => {
                let closers = chars[i + 1..]
                    .iter()
                    .take_while(|n| matches!(n, '"' | '\'' | '”' | '’' | ')' | '」' | '』' | '）'))
                    .count();
                let next_space = chars.get(i + 1 + closers).is_none_or(|n| n.is_whitespace());
                let after = chars[i + 1..].iter().find(|n| !n.is_whitespace());
                let next_starts = after.is_none_or(|n| {
                    n.is_uppercase() || !n.is_alphabetic() || crate::text::is_cjk(*n)
                });
                let word: String = cur
                    .trim_end_matches(c)
                    .rsplit(|x: char| x.is_whitespace())
                    .next()
                    .unwrap_or("")
                    .to_lowercase();
                let abbreviation = c == '.'
                    && (ABBREVIATIONS.contains(&word.trim_start_matches('('))
                        || (word.len() == 1 && word.chars().all(char::is_alphabetic)));
                next_space && next_starts && !abbreviation
            }
            _ => false,
        };
        if boundary {
            // Keep closing quotes and brackets with the sentence.
            while let Some(&n) = chars.get(i + 1) {
                if matches!(n, '"' | '\'' | '”' | '’' | ')' | '」' | '』' | '）') {
                    cur.push(n);
                    i += 1;
                } else {
                    break;
                }
            }
            push_sentence(&mut out, &mut cur);
        }
        i += 1;
    }
    push_sentence(&mut out, &mut cur);
    out
}

fn push_sentence(out: &mut Vec<String>, cur: &mut String) {
    let s = cur.trim();
    if s.chars().count() >= 4 {
        out.push(s.to_string());
    }
    cur.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentence_splitting() {
        assert_eq!(
            sentences(
                "Rust is fast. It uses e.g. ownership! Is it safe? Yes (mostly). 3.14 is pi."
            ),
            vec![
                "Rust is fast.",
                "It uses e.g. ownership!",
                "Is it safe?",
                "Yes (mostly).",
                "3.14 is pi."
            ]
        );
        assert_eq!(
            sentences("床前明月光。疑是地上霜！举头望明月"),
            vec!["床前明月光。", "疑是地上霜！", "举头望明月"]
        );
        assert_eq!(
            sentences("He said \"stop.\" Then left."),
            vec!["He said \"stop.\"", "Then left."]
        );
        assert_eq!(
            sentences("The `Vec::new` function. Next."),
            vec!["The `Vec::new` function.", "Next."]
        );
    }
}
