//! Markdown → blocks and sentences, for the offline extractor.
//!
//! Text comes from pulldown-cmark's text events (emphasis and code markers, link targets and HTML
//! dropped), so a sentence compared with [`crate::compile::provenance::plain_text`] of the source
//! always verifies. Code blocks, tables and raw HTML are skipped: they are not prose.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// A block of a markdown document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A heading with its level (1–6) and text.
    Heading(u8, String),
    /// A paragraph or list item's text (one line, whitespace collapsed).
    Text(String),
}

/// The blocks of `markdown`, in order.
pub fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut heading: Option<u8> = None;
    let mut skip = 0usize; // inside code blocks, tables, images
    let flush = |text: &mut String, heading: Option<u8>, out: &mut Vec<Block>| {
        let t = text.split_whitespace().collect::<Vec<_>>().join(" ");
        text.clear();
        if t.is_empty() {
            return;
        }
        match heading {
            Some(level) => out.push(Block::Heading(level, t)),
            None => out.push(Block::Text(t)),
        }
    };
    for event in Parser::new_ext(
        markdown,
        Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES | Options::ENABLE_STRIKETHROUGH,
    ) {
        match event {
            Event::Start(
                Tag::CodeBlock(_)
                | Tag::Table(_)
                | Tag::Image { .. }
                | Tag::HtmlBlock
                | Tag::FootnoteDefinition(_),
            ) => {
                skip += 1;
            }
            Event::End(
                TagEnd::CodeBlock
                | TagEnd::Table
                | TagEnd::Image
                | TagEnd::HtmlBlock
                | TagEnd::FootnoteDefinition,
            ) => {
                skip = skip.saturating_sub(1);
            }
            Event::Start(Tag::Heading { level, .. }) => {
                flush(&mut text, None, &mut out);
                heading = Some(match level {
                    HeadingLevel::H1 => 1,
                    HeadingLevel::H2 => 2,
                    HeadingLevel::H3 => 3,
                    HeadingLevel::H4 => 4,
                    HeadingLevel::H5 => 5,
                    HeadingLevel::H6 => 6,
                });
            }
            Event::End(TagEnd::Heading(_)) => {
                flush(&mut text, heading, &mut out);
                heading = None;
            }
            Event::Start(Tag::Paragraph | Tag::Item)
            | Event::End(TagEnd::Paragraph | TagEnd::Item)
                if skip == 0 =>
            {
                flush(&mut text, heading, &mut out);
            }
            Event::Text(t) | Event::Code(t) if skip == 0 => text.push_str(&t),
            Event::SoftBreak | Event::HardBreak if skip == 0 => text.push(' '),
            _ => {}
        }
    }
    flush(&mut text, heading, &mut out);
    out
}

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
    fn blocks_skip_code_and_strip_markup() {
        let md = "# Title\n\nSome *emphasis* and `code` with a [link](http://x).\n\n```rust\nfn main() {}\n```\n\n- item one\n- item two\n\n## 小节\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n中文句子。\n";
        assert_eq!(
            blocks(md),
            vec![
                Block::Heading(1, "Title".into()),
                Block::Text("Some emphasis and code with a link.".into()),
                Block::Text("item one".into()),
                Block::Text("item two".into()),
                Block::Heading(2, "小节".into()),
                Block::Text("中文句子。".into()),
            ]
        );
    }

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
