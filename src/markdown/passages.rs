//! The one passage cutter: a markdown text cut into passages under their heading paths, with the
//! line ranges they cover. Answer passages of pages (`query::passages`), source passages and the
//! compile chunker (`compile::extract::chunk_text`) all cut with it.
//!
//! It reads CommonMark's top-level blocks ([`super::blocks::blocks`]: paragraphs, list items,
//! code blocks, tables, block quotes, …) and
//! - [`cut`] groups the blocks under the heading they stand under, up to a target of estimated
//!   tokens ([`PASSAGE_TOKENS`] for answers), a heading or a thematic break closing the group;
//! - [`pieces`] gives every block on its own, headings and breaks included (what a chunker
//!   groups again);
//!
//! and both cut a block longer than a maximum ([`MAX_PASSAGE_TOKENS`] for answers): a fenced code
//! block or a table into pieces that stand alone ([`super::blocks::cut_fence_or_table`]: fences
//! closed and reopened, the header rows repeated), anything else at line ends, then sentence ends
//! (`.` `!` `?` followed by whitespace, `。` `！` `？`), then by [`super::blocks::hard_split`]
//! (a CJK run without sentence ends, one long line). A fenced run inside a long list item or
//! quote is not cut at its lines unless it alone is over the maximum.
//!
//! *Invariant:* every passage's text is a verbatim slice of the text, trimmed — except the pieces
//! of a long fence or table, which repeat the fence or header lines — and every block's text
//! (headings as the heading path, thematic breaks aside) is in some passage, in order.

use std::ops::Range;

use super::blocks::{blocks, closes_fence, cut_fence_or_table, fence_marker, hard_split};
use super::blocks::{text_blocks, BlockKind, TextBlock};
use crate::text::TokenEstimator;

/// Passages are grouped up to this many estimated tokens (a few paragraphs).
pub const PASSAGE_TOKENS: u64 = 160;
/// A single block longer than this is cut.
pub const MAX_PASSAGE_TOKENS: u64 = 400;

/// One passage of a markdown text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// Heading path, outermost first, joined by " › " ("" before the first heading).
    pub heading: String,
    /// Verbatim slice of the text (trimmed), or a piece of a long fence/table made to stand alone.
    pub text: String,
    /// 1-based inclusive line range of the text this passage covers. The piece of a long fence or
    /// table covers its rows, the first piece from the fence or header line, the last through the
    /// closing line.
    pub lines: (u32, u32),
}

/// The passages of `text` in order: blocks grouped under their heading up to `target` tokens,
/// a block over `max` cut (fence/table pieces stand alone; else line, sentence, hard split).
///
/// `target` and `max` are estimated tokens ([`TokenEstimator`]); a group's size is the sum of its
/// blocks' estimates. A heading or a thematic break (`---`) closes the group being made; the
/// break itself is in no passage. Empty when the text has no block.
pub fn cut(text: &str, target: u64, max: u64, est: &TokenEstimator) -> Vec<Cut> {
    let lines = LineIndex::new(text);
    let mut out = Vec::new();
    let mut path = HeadingPath::default();
    // The group being made: byte range and estimated tokens.
    let mut group: Option<(Range<usize>, u64)> = None;
    let flush = |group: &mut Option<(Range<usize>, u64)>, out: &mut Vec<Cut>, heading: &str| {
        if let Some((range, _)) = group.take() {
            out.push(Cut {
                heading: heading.to_string(),
                text: text[range.clone()].to_string(),
                lines: lines.span(&range),
            });
        }
    };
    for unit in units(text, max, est, &lines) {
        match unit {
            Unit::Heading(level, name, _) => {
                flush(&mut group, &mut out, path.joined());
                path.enter(level, name);
            }
            Unit::Rule(_) => flush(&mut group, &mut out, path.joined()),
            Unit::Block(range, tokens) => {
                if let Some((g, t)) = group.as_mut() {
                    if *t + tokens <= target {
                        g.end = range.end;
                        *t += tokens;
                        continue;
                    }
                }
                flush(&mut group, &mut out, path.joined());
                group = Some((range, tokens));
            }
            Unit::Piece(piece, span) => {
                flush(&mut group, &mut out, path.joined());
                out.push(Cut {
                    heading: path.joined().to_string(),
                    text: piece,
                    lines: span,
                });
            }
        }
    }
    flush(&mut group, &mut out, path.joined());
    out
}

/// Every block of `text` as a passage of its own, in order — headings (text: the heading's own
/// markdown line, heading path: including it) and thematic breaks included — a block over `max`
/// estimated tokens cut as [`cut`] cuts it. Joined in order (blank lines between pieces whose
/// lines are not adjacent), the pieces hold all of the text. What the compile chunker groups.
pub fn pieces(text: &str, max: u64, est: &TokenEstimator) -> Vec<Cut> {
    let lines = LineIndex::new(text);
    let mut path = HeadingPath::default();
    let mut out = Vec::new();
    for unit in units(text, max, est, &lines) {
        let (piece, span) = match unit {
            Unit::Heading(level, name, range) => {
                path.enter(level, name);
                (text[range.clone()].to_string(), lines.span(&range))
            }
            Unit::Rule(range) | Unit::Block(range, _) => {
                (text[range.clone()].to_string(), lines.span(&range))
            }
            Unit::Piece(piece, span) => (piece, span),
        };
        out.push(Cut {
            heading: path.joined().to_string(),
            text: piece,
            lines: span,
        });
    }
    out
}

/// What the cutters walk: a text's blocks, a long one already cut.
enum Unit {
    /// A heading: level, text (markup dropped, whitespace collapsed), byte range.
    Heading(u8, String, Range<usize>),
    /// A thematic break's byte range.
    Rule(Range<usize>),
    /// A block within the maximum: byte range (trimmed) and estimated tokens.
    Block(Range<usize>, u64),
    /// A piece of a long block: its text and line range.
    Piece(String, (u32, u32)),
}

fn units(text: &str, max: u64, est: &TokenEstimator, lines: &LineIndex) -> Vec<Unit> {
    let mut out = Vec::new();
    for b in blocks(text) {
        let Some(range) = trimmed(text, b.range.clone()) else {
            continue;
        };
        let slice = &text[range.clone()];
        match b.kind {
            BlockKind::Heading(level) => {
                let name = match text_blocks(slice).into_iter().next() {
                    Some(TextBlock::Heading(_, t)) => t,
                    _ => String::new(),
                };
                out.push(Unit::Heading(level, name, range));
                continue;
            }
            BlockKind::Rule => {
                out.push(Unit::Rule(range));
                continue;
            }
            _ => {}
        }
        let tokens = est.estimate(slice);
        if tokens <= max {
            out.push(Unit::Block(range, tokens));
            continue;
        }
        if matches!(b.kind, BlockKind::Code | BlockKind::Table) {
            if let Some(cut) = cut_fence_or_table(slice, max, est) {
                let n = cut.len();
                for (i, (piece, rows)) in cut.into_iter().enumerate() {
                    let from = if i == 0 { 0 } else { rows.start };
                    let to = if i + 1 == n { slice.len() } else { rows.end };
                    let span = lines.span(&(range.start + from..range.start + to));
                    if est.estimate(&piece) <= max {
                        out.push(Unit::Piece(piece, span));
                    } else {
                        // Estimates of slices are not exact: a piece still over is cut as text.
                        for r in plain_spans(&piece, max, est) {
                            out.push(Unit::Piece(piece[r].to_string(), span));
                        }
                    }
                }
                continue;
            }
        }
        for r in plain_spans(slice, max, est) {
            let r = range.start + r.start..range.start + r.end;
            out.push(Unit::Piece(text[r.clone()].to_string(), lines.span(&r)));
        }
    }
    out
}

/// Cuts `block` into byte ranges of at most `max` estimated tokens (each trimmed, none empty) at
/// line ends, a line longer than that at sentence ends, and a sentence longer still by
/// [`hard_split`]; a fenced run of lines is one unit unless it alone is over `max`.
fn plain_spans(block: &str, max: u64, est: &TokenEstimator) -> Vec<Range<usize>> {
    let mut units: Vec<Range<usize>> = Vec::new();
    let mut pos = 0;
    let mut fence: Option<(String, usize)> = None; // open fence: marker and start
    for line in block.split_inclusive('\n') {
        let (start, end) = (pos, pos + line.len());
        pos = end;
        match &fence {
            Some((marker, from)) => {
                if closes_fence(line, marker) {
                    let run = *from..end;
                    fence = None;
                    if est.estimate(&block[run.clone()]) <= max {
                        units.push(run);
                    } else {
                        line_units(block, run, max, est, &mut units);
                    }
                }
                continue;
            }
            None => {
                if let Some(m) = fence_marker(line.trim_start()) {
                    fence = Some((m, start));
                    continue;
                }
            }
        }
        line_units(block, start..end, max, est, &mut units);
    }
    if let Some((_, from)) = fence {
        line_units(block, from..block.len(), max, est, &mut units);
    }
    let mut out = Vec::new();
    let mut cur: Option<(Range<usize>, u64)> = None;
    for u in units {
        let t = est.estimate(&block[u.clone()]);
        match cur.as_mut() {
            Some((r, n)) if *n + t <= max => {
                r.end = u.end;
                *n += t;
            }
            _ => {
                out.extend(cur.take().and_then(|(r, _)| trimmed(block, r)));
                cur = Some((u, t));
            }
        }
    }
    out.extend(cur.and_then(|(r, _)| trimmed(block, r)));
    out
}

/// The lines of `block[range]` as units: a line within `max` whole, a longer one at sentence
/// ends, a sentence longer still by [`hard_split`].
fn line_units(
    block: &str,
    range: Range<usize>,
    max: u64,
    est: &TokenEstimator,
    out: &mut Vec<Range<usize>>,
) {
    let mut pos = range.start;
    for line in block[range].split_inclusive('\n') {
        let base = pos;
        pos += line.len();
        if est.estimate(line) <= max {
            out.push(base..pos);
            continue;
        }
        let mut sentences = Vec::new();
        let mut from = 0;
        let mut it = line.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            let end = i + c.len_utf8();
            let boundary = matches!(c, '。' | '！' | '？')
                || (matches!(c, '.' | '!' | '?')
                    && it.peek().is_some_and(|(_, n)| n.is_whitespace()));
            if boundary {
                sentences.push(from..end);
                from = end;
            }
        }
        if from < line.len() {
            sentences.push(from..line.len());
        }
        for s in sentences {
            let mut at = base + s.start;
            for slice in hard_split(&line[s], max, est) {
                out.push(at..at + slice.len());
                at += slice.len();
            }
        }
    }
}

/// `range` of `text` without leading and trailing whitespace; `None` when nothing is left.
fn trimmed(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let s = &text[range.clone()];
    let start = range.start + (s.len() - s.trim_start().len());
    let end = range.start + s.trim_end().len();
    (end > start).then_some(start..end)
}

/// The heading stack: (level, text), outermost first, and its joined form.
#[derive(Default)]
struct HeadingPath {
    stack: Vec<(u8, String)>,
    joined: String,
}

impl HeadingPath {
    /// A heading of `level` closes every heading of its level or deeper and opens its own.
    fn enter(&mut self, level: u8, name: String) {
        self.stack.retain(|(l, _)| *l < level);
        self.stack.push((level, name));
        self.joined = self
            .stack
            .iter()
            .map(|(_, t)| t.as_str())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(" › ");
    }

    fn joined(&self) -> &str {
        &self.joined
    }
}

/// Byte offset → 1-based line number.
struct LineIndex {
    /// Byte offsets of the text's `\n`s.
    newlines: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        LineIndex {
            newlines: text.match_indices('\n').map(|(i, _)| i).collect(),
        }
    }

    /// The line of byte `at`.
    fn line(&self, at: usize) -> u32 {
        (self.newlines.partition_point(|&n| n < at) + 1) as u32
    }

    /// First and last line of a non-empty byte range.
    fn span(&self, range: &Range<usize>) -> (u32, u32) {
        (
            self.line(range.start),
            self.line(range.end.max(range.start + 1) - 1),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> TokenEstimator {
        TokenEstimator::default()
    }

    /// The text of lines `from..=to` (1-based) of `text`.
    fn line_text(text: &str, (from, to): (u32, u32)) -> String {
        text.split('\n')
            .skip(from as usize - 1)
            .take((to - from + 1) as usize)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Every verbatim passage's lines hold its text, its first line in the first and its last
    /// line in the last (the range is tight).
    fn assert_lines_hold_text(text: &str, cuts: &[Cut]) {
        for c in cuts {
            assert!(c.lines.0 >= 1 && c.lines.0 <= c.lines.1, "{c:?}");
            if !text.contains(&c.text) {
                continue;
            }
            assert!(line_text(text, c.lines).contains(&c.text), "{c:?}");
            let first = line_text(text, (c.lines.0, c.lines.0));
            let last = line_text(text, (c.lines.1, c.lines.1));
            assert!(first.contains(c.text.lines().next().unwrap()), "{c:?}");
            assert!(last.contains(c.text.lines().last().unwrap()), "{c:?}");
        }
    }

    #[test]
    fn heading_paths_nest_and_lines_are_right() {
        let text = "Lead paragraph.\n\n# Guide\n\n## Install\n\nRun `rustup`.\n\n- one\n- two\n\n### On *Windows*\n\nUse the installer.\n\n## Use\n\n```rust\nfn main() {}\n```\n\n# Other\n\nLast.\n";
        let c = cut(text, PASSAGE_TOKENS, MAX_PASSAGE_TOKENS, &est());
        let got: Vec<(&str, &str, (u32, u32))> = c
            .iter()
            .map(|c| (c.heading.as_str(), c.text.as_str(), c.lines))
            .collect();
        assert_eq!(
            got,
            vec![
                ("", "Lead paragraph.", (1, 1)),
                ("Guide › Install", "Run `rustup`.\n\n- one\n- two", (7, 10)),
                (
                    "Guide › Install › On Windows",
                    "Use the installer.",
                    (14, 14)
                ),
                ("Guide › Use", "```rust\nfn main() {}\n```", (18, 20)),
                ("Other", "Last.", (24, 24)),
            ]
        );
        assert_lines_hold_text(text, &c);
    }

    #[test]
    fn groups_stay_within_the_target_and_a_rule_closes_one() {
        let para = "Word ".repeat(40); // 50 tokens
        let text = format!("{p}\n\n{p}\n\n{p}\n\n{p}\n\n---\n\nAfter.", p = para.trim());
        let c = cut(&text, 120, MAX_PASSAGE_TOKENS, &est());
        let texts: Vec<usize> = c.iter().map(|c| c.text.matches("Word").count()).collect();
        assert_eq!(texts, vec![80, 80, 0]);
        assert_eq!(c[2].text, "After.");
        assert_eq!(c[1].lines, (5, 7));
        assert_lines_hold_text(&text, &c);
        assert!(c.iter().all(|c| !c.text.contains("---")));
    }

    #[test]
    fn cjk_text_without_headings_has_its_lines() {
        let text = "背压是一种流量控制机制。\n它保护队列。\n\n第二段讲缓冲区。\n\n第三段。";
        let c = cut(text, 8, 20, &est());
        let got: Vec<(&str, &str, (u32, u32))> = c
            .iter()
            .map(|c| (c.heading.as_str(), c.text.as_str(), c.lines))
            .collect();
        assert_eq!(
            got,
            vec![
                ("", "背压是一种流量控制机制。\n它保护队列。", (1, 2)),
                ("", "第二段讲缓冲区。", (4, 4)),
                ("", "第三段。", (6, 6)),
            ]
        );
    }

    #[test]
    fn a_long_cjk_paragraph_without_sentence_ends_is_cut_verbatim() {
        let line = "背压保护队列，".repeat(300); // 2100 CJK tokens, commas only
        let text = format!("## 背压\n\n{line}\n第二行，没有句号\n\n尾段。");
        let c = cut(&text, PASSAGE_TOKENS, MAX_PASSAGE_TOKENS, &est());
        assert!(c.len() >= 6, "{}", c.len());
        for p in &c {
            assert!(est().estimate(&p.text) <= MAX_PASSAGE_TOKENS);
            assert!(text.contains(&p.text));
            assert_eq!(p.heading, "背压");
        }
        // The pieces of line 3 say so, the second line of the paragraph is line 4.
        let long: Vec<&Cut> = c.iter().filter(|p| p.text.contains("背压保护")).collect();
        assert!(long.iter().all(|p| p.lines.0 == 3));
        let joined: String = c[..c.len() - 1].iter().map(|p| p.text.as_str()).collect();
        assert_eq!(joined, format!("{line}\n第二行，没有句号"));
        assert_eq!(c[c.len() - 2].lines, (3, 4));
        assert_eq!(c.last().unwrap().lines, (6, 6));
        assert_lines_hold_text(&text, &c);
    }

    #[test]
    fn a_long_line_is_cut_at_sentence_ends() {
        let text = "Sentence number here. ".repeat(120);
        let c = cut(text.trim(), PASSAGE_TOKENS, 100, &est());
        assert!(c.len() >= 6);
        for p in &c {
            assert!(p.text.ends_with("here."), "{}", p.text);
            assert_eq!(p.lines, (1, 1));
        }
    }

    #[test]
    fn a_long_fence_is_cut_into_pieces_that_stand_alone_with_their_lines() {
        let code: String = (0..120)
            .map(|i| format!("    let value_{i} = compute(\"月{i}\", {i});\n"))
            .collect();
        let text = format!("## Listing\n\n```rust\n{code}```\n\nAfter the code.\n");
        let c = cut(&text, PASSAGE_TOKENS, MAX_PASSAGE_TOKENS, &est());
        let pieces = &c[..c.len() - 1];
        assert!(pieces.len() >= 3, "{}", pieces.len());
        let mut next = 3; // the fence opens on line 3
        for p in pieces {
            assert!(p.text.starts_with("```rust\n") && p.text.ends_with("\n```"));
            assert!(est().estimate(&p.text) <= MAX_PASSAGE_TOKENS);
            assert_eq!(p.heading, "Listing");
            assert_eq!(p.lines.0, next, "{:?}", p.lines);
            next = p.lines.1 + 1;
            // Its lines hold its rows.
            let rows = p
                .text
                .trim_start_matches("```rust\n")
                .trim_end_matches("\n```");
            assert!(line_text(&text, p.lines).contains(rows));
        }
        assert_eq!(next, 125); // the closing fence is line 124
        let last = c.last().unwrap();
        assert_eq!(
            (last.text.as_str(), last.lines),
            ("After the code.", (126, 126))
        );
    }

    #[test]
    fn a_long_table_repeats_its_header_and_covers_its_rows() {
        let rows: String = (0..80)
            .map(|i| format!("| item {i} | 数量 {i} | a longer description of row {i} |\n"))
            .collect();
        let text = format!("Intro.\n\n| Name | 数量 | Notes |\n|:-----|-----:|---|\n{rows}");
        let c = cut(&text, PASSAGE_TOKENS, MAX_PASSAGE_TOKENS, &est());
        assert_eq!((c[0].text.as_str(), c[0].lines), ("Intro.", (1, 1)));
        let pieces = &c[1..];
        assert!(pieces.len() >= 3);
        let mut next = 3;
        let mut n = 0;
        for p in pieces {
            assert!(p
                .text
                .starts_with("| Name | 数量 | Notes |\n|:-----|-----:|---|\n| item "));
            assert_eq!(p.lines.0, next);
            next = p.lines.1 + 1;
            n += p.text.matches("| item ").count();
            let first = p.text.lines().nth(2).unwrap();
            assert!(line_text(&text, p.lines).contains(first));
        }
        assert_eq!(n, 80);
        assert_eq!(next, 85);
    }

    #[test]
    fn nothing_of_the_prose_is_lost() {
        let text = "# T\n\nOne *a*.\n\n> quote\n> more\n\n1. first\n2. second\n\n[ref]: http://x\n\n<div>\nraw\n</div>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nLast[^1].\n\n[^1]: Note.\n";
        for (target, max) in [(0, 400), (5, 8), (160, 400)] {
            let c = cut(text, target, max, &est());
            assert_lines_hold_text(text, &c);
            for b in blocks(text) {
                let s = &text[b.range];
                if matches!(b.kind, BlockKind::Heading(_)) {
                    continue;
                }
                // Whitespace aside, a cut block's text is the concatenation of its pieces.
                let squeeze = |t: &str| t.split_whitespace().collect::<String>();
                let all: String = c.iter().map(|c| squeeze(&c.text)).collect();
                assert!(all.contains(&squeeze(s)), "{s:?} lost at {target}/{max}");
            }
        }
    }

    #[test]
    fn pieces_keep_headings_and_every_block_alone() {
        let text = "# Title\n\nOne.\nTwo.\n\n- a\n- b\n\n---\n\n## Sub\n\nThree.";
        let p = pieces(text, 400, &est());
        let got: Vec<(&str, &str, (u32, u32))> = p
            .iter()
            .map(|c| (c.heading.as_str(), c.text.as_str(), c.lines))
            .collect();
        assert_eq!(
            got,
            vec![
                ("Title", "# Title", (1, 1)),
                ("Title", "One.\nTwo.", (3, 4)),
                ("Title", "- a", (6, 6)),
                ("Title", "- b", (7, 7)),
                ("Title", "---", (9, 9)),
                ("Title › Sub", "## Sub", (11, 11)),
                ("Title › Sub", "Three.", (13, 13)),
            ]
        );
    }
}
