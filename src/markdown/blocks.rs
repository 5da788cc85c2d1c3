//! The one block cutter: a markdown body cut into blocks, in the shapes its callers need.
//!
//! - [`blocks`]: CommonMark's top-level blocks with their byte ranges (what dedup, lint and the
//!   page table read). Blocks are CommonMark's top-level blocks as pulldown-cmark parses them —
//!   paragraphs, headings, fenced and indented code, tables, block quotes (callouts included),
//!   footnote definitions, HTML blocks, thematic breaks — except that each item of a top-level
//!   list is a block of its own (a fact in a `## Facts` list is one item), and text CommonMark
//!   puts in no block (link reference definitions) is a block of its own too, so no text falls
//!   between blocks. A nested list stays inside its item.
//! - [`text_blocks`]: the prose of a document as headings and one-line text blocks, markup
//!   dropped (what the extractive methods read). Its text comes from pulldown-cmark's text events,
//!   so a sentence compared with [`super::plain::plain_text`] of the source always verifies.
//!   Code blocks, tables and raw HTML are skipped: they are not prose.
//! - [`cut_fence_or_table`]: a long fenced code block or table cut into pieces that each stand
//!   alone as markdown (the passage cutter [`super::passages`] uses it), with the fence
//!   helpers [`fence_marker`] and [`closes_fence`] and [`hard_split`] for a line too long.
//! - [`heading_names`], [`block_ids`]: the link fragments a body offers.
//!
//! What makes two blocks duplicates lives in [`super::dedup`]; footnote references and plain text
//! in [`super::plain`].
//!
//! *Invariant:* a [`Block`]'s range is a slice of the body, trailing blank lines excluded; every
//! piece [`cut_fence_or_table`] returns is a fence or table of its own.

use std::ops::Range;

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::text::TokenEstimator;

/// What a [`Block`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// An ATX or setext heading of this level (1–6).
    Heading(u8),
    /// A paragraph.
    Paragraph,
    /// One item of a top-level list, with everything nested in it.
    Item,
    /// A fenced or indented code block.
    Code,
    /// A GFM table.
    Table,
    /// A block quote (an Obsidian callout too).
    Quote,
    /// A footnote definition (`[^label]: …`).
    FootnoteDefinition,
    /// A raw HTML block.
    Html,
    /// A thematic break (`---`).
    Rule,
    /// Text CommonMark puts in no block — link reference definitions (`[label]: url`) — one
    /// run of non-blank lines each, so nothing of a body falls between blocks.
    Definition,
}

/// One block of a body: its kind and its byte range, trailing line ends and blank lines excluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What it is.
    pub kind: BlockKind,
    /// Where it is in the body.
    pub range: Range<usize>,
}

fn level(l: HeadingLevel) -> u8 {
    match l {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// The blocks of `body`, in order (see the module docs for what a block is).
pub fn blocks(body: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    // Depth of the top-level list whose items are blocks, while inside one.
    let mut in_list = false;
    let parser = Parser::new_ext(
        body,
        Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES | Options::ENABLE_STRIKETHROUGH,
    )
    .into_offset_iter();
    let mut push = |kind: BlockKind, range: Range<usize>| {
        let text = &body[range.clone()];
        let end = range.start + text.trim_end().len();
        if end > range.start {
            out.push(Block {
                kind,
                range: range.start..end,
            });
        }
    };
    for (event, range) in parser {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    let kind = match &tag {
                        Tag::List(_) => {
                            in_list = true;
                            None
                        }
                        Tag::Heading { level: l, .. } => Some(BlockKind::Heading(level(*l))),
                        Tag::CodeBlock(_) => Some(BlockKind::Code),
                        Tag::Table(_) => Some(BlockKind::Table),
                        Tag::BlockQuote(_) => Some(BlockKind::Quote),
                        Tag::FootnoteDefinition(_) => Some(BlockKind::FootnoteDefinition),
                        Tag::HtmlBlock => Some(BlockKind::Html),
                        _ => Some(BlockKind::Paragraph),
                    };
                    if let Some(kind) = kind {
                        push(kind, range.clone());
                    }
                } else if depth == 1 && in_list && matches!(tag, Tag::Item) {
                    push(BlockKind::Item, range.clone());
                }
                depth += 1;
            }
            Event::End(end) => {
                depth = depth.saturating_sub(1);
                if depth == 0 && matches!(end, TagEnd::List(_)) {
                    in_list = false;
                }
            }
            Event::Rule if depth == 0 => push(BlockKind::Rule, range),
            _ => {}
        }
    }
    // Text outside every block (link reference definitions produce no event): its runs of
    // non-blank lines become blocks too.
    let mut gaps = Vec::new();
    let mut at = 0;
    for b in &out {
        if b.range.start > at {
            gaps.push(at..b.range.start);
        }
        at = at.max(b.range.end);
    }
    gaps.push(at..body.len());
    for gap in gaps {
        let mut start: Option<usize> = None;
        let mut end = gap.start;
        let mut pos = gap.start;
        for line in body[gap.clone()].split_inclusive('\n') {
            if line.trim().is_empty() {
                if let Some(s) = start.take() {
                    out.push(Block {
                        kind: BlockKind::Definition,
                        range: s..end,
                    });
                }
            } else {
                start.get_or_insert(pos);
                end = pos + line.trim_end().len();
            }
            pos += line.len();
        }
        if let Some(s) = start {
            out.push(Block {
                kind: BlockKind::Definition,
                range: s..end,
            });
        }
    }
    out.sort_by_key(|b| b.range.start);
    out
}

/// The headings of `body` (ATX, `#` to `######`), folded as link fragments name them
/// ([`super::resolve::fold_name`]).
pub fn heading_names(body: &str) -> std::collections::BTreeSet<String> {
    body.lines()
        .filter_map(|l| {
            let t = l.trim_start();
            let n = t.chars().take_while(|&c| c == '#').count();
            ((1..=6).contains(&n) && t[n..].starts_with(' '))
                .then(|| super::resolve::fold_name(t[n..].trim().trim_end_matches('#').trim()))
        })
        .collect()
}

/// The block ids of `body` (`^id` ending a line: letters, digits and `-`).
pub fn block_ids(body: &str) -> std::collections::BTreeSet<String> {
    body.lines()
        .filter_map(|l| {
            let w = l.trim_end().rsplit(' ').next()?;
            let id = w.strip_prefix('^')?;
            (!id.is_empty() && id.chars().all(|c| c.is_alphanumeric() || c == '-'))
                .then(|| id.to_string())
        })
        .collect()
}

/// A block of prose: a heading or a run of text (see [`text_blocks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextBlock {
    /// A heading with its level (1–6) and text.
    Heading(u8, String),
    /// A paragraph or list item's text (one line, whitespace collapsed).
    Text(String),
}

/// The prose blocks of `markdown`, in order: text from pulldown-cmark's text events (emphasis and
/// code markers, link targets and HTML dropped), whitespace collapsed; code blocks, tables, raw
/// HTML, images and footnote definitions skipped.
pub fn text_blocks(markdown: &str) -> Vec<TextBlock> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut heading: Option<u8> = None;
    let mut skip = 0usize; // inside code blocks, tables, images
    let flush = |text: &mut String, heading: Option<u8>, out: &mut Vec<TextBlock>| {
        let t = text.split_whitespace().collect::<Vec<_>>().join(" ");
        text.clear();
        if t.is_empty() {
            return;
        }
        match heading {
            Some(level) => out.push(TextBlock::Heading(level, t)),
            None => out.push(TextBlock::Text(t)),
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

/// Cuts a fenced code block or a table longer than `max` estimated tokens into pieces that each
/// stand alone as markdown: a fence is cut between lines, each piece closed and the next opened
/// again with the block's fence line (its language kept); a table is cut between rows, each piece
/// under the table's header and delimiter rows, and a line too long for a piece is cut into
/// slices. Each piece comes with the byte range of `block` whose rows it holds (fence and header
/// lines excluded). `None` when `block` is neither, holds no line between its fence or header
/// lines, or those are too long to repeat (over half of `max`). The passage cutter
/// ([`super::passages`]) uses it for answer passages and compile chunks alike, so a source's long
/// code block reaches the model as code.
pub(crate) fn cut_fence_or_table(
    block: &str,
    max: u64,
    est: &TokenEstimator,
) -> Option<Vec<(String, Range<usize>)>> {
    let lines: Vec<&str> = block.split_inclusive('\n').collect();
    let fence = lines.first().and_then(|open| fence_marker(open));
    let (head, tail, rows): (String, String, &[&str]) = match (fence, lines.as_slice()) {
        (Some(marker), [open, body @ .., close]) => {
            if closes_fence(close, &marker) {
                (open.to_string(), close.trim_end().to_string(), body)
            } else {
                (open.to_string(), marker, &lines[1..])
            }
        }
        (None, [header, delimiter, ..]) if is_table_row(header) && is_delimiter_row(delimiter) => {
            (format!("{header}{delimiter}"), String::new(), &lines[2..])
        }
        _ => return None,
    };
    let fixed = est.estimate(&head) + est.estimate(&tail);
    if fixed > max / 2 || rows.is_empty() {
        return None;
    }
    let piece = |rows: &str| {
        let mut p = format!("{head}{rows}");
        if !tail.is_empty() {
            if !p.ends_with('\n') {
                p.push('\n');
            }
            p.push_str(&tail);
        }
        p.trim_end().to_string()
    };
    // A line too long to fit beside the fence or header lines (minified JSON, base64, a log line)
    // is cut into slices of about equal length ([`hard_split`]), each ending its own line.
    let room = max - fixed;
    let mut units: Vec<(std::borrow::Cow<'_, str>, Range<usize>)> = Vec::new();
    let mut at = head.len();
    for row in rows {
        if est.estimate(row) <= room {
            units.push(((*row).into(), at..at + row.len()));
        } else {
            let mut from = at;
            for slice in hard_split(row.strip_suffix('\n').unwrap_or(row), room, est) {
                units.push((format!("{slice}\n").into(), from..from + slice.len()));
                from += slice.len();
            }
        }
        at += row.len();
    }
    let mut pieces = Vec::new();
    let mut cur = String::new();
    let mut span = 0..0;
    let mut tokens = 0;
    for (unit, range) in &units {
        let t = est.estimate(unit);
        if !cur.is_empty() && fixed + tokens + t > max {
            pieces.push((piece(&cur), span.clone()));
            cur.clear();
            tokens = 0;
        }
        if cur.is_empty() {
            span.start = range.start;
        }
        span.end = range.end;
        tokens += t;
        cur.push_str(unit);
    }
    if !cur.trim().is_empty() {
        pieces.push((piece(&cur), span));
    }
    Some(pieces)
}

/// The fence a line opens (its run of three or more `` ` `` or `~`, after up to three spaces),
/// or `None`. As in CommonMark, a backtick fence's info string holds no backtick, so a line
/// opening with inline code (` ```x``` is code `) opens nothing.
pub(crate) fn fence_marker(line: &str) -> Option<String> {
    let t = line.trim_end();
    let indent = t.len() - t.trim_start_matches(' ').len();
    let t = t.trim_start_matches(' ');
    let c = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let run = t.chars().take_while(|&x| x == c).count();
    let info = &t[run..];
    (indent <= 3 && run >= 3 && !(c == '`' && info.contains('`')))
        .then(|| c.to_string().repeat(run))
}

/// True when `line` closes a fence opened by `marker`: the same character, a run at least as
/// long, nothing after it but spaces (at any indentation, looser than CommonMark's three spaces,
/// so a fence inside a list item closes).
pub(crate) fn closes_fence(line: &str, marker: &str) -> bool {
    let t = line.trim();
    t.starts_with(marker) && t.chars().all(|c| marker.starts_with(c))
}

/// A table row: a line holding a `|`.
fn is_table_row(line: &str) -> bool {
    line.contains('|')
}

/// A table's delimiter row (`| --- | :-: |`): cells of dashes with optional colons.
fn is_delimiter_row(line: &str) -> bool {
    let t = line.trim().trim_matches('|');
    !t.is_empty()
        && t.split('|').all(|cell| {
            let c = cell.trim();
            let dashes = c.trim_matches(':');
            !dashes.is_empty() && dashes.chars().all(|x| x == '-')
        })
}

/// `unit` itself when it fits `max` estimated tokens, else `⌈tokens / max⌉` slices of about equal
/// byte length, each ending at the last whitespace in its second half or else at a character
/// boundary (never inside a UTF-8 sequence).
pub(crate) fn hard_split<'a>(unit: &'a str, max: u64, est: &TokenEstimator) -> Vec<&'a str> {
    let tokens = est.estimate(unit);
    if tokens <= max {
        return vec![unit];
    }
    let n = tokens.div_ceil(max.max(1)) as usize;
    let target = unit.len().div_ceil(n).max(1);
    let mut out = Vec::with_capacity(n);
    let mut from = 0;
    while unit.len() - from > target {
        let mut end = from + target;
        while !unit.is_char_boundary(end) {
            end += 1;
        }
        let half = from + target / 2;
        if let Some(ws) = unit[from..end].rfind(char::is_whitespace) {
            if from + ws > half {
                end = from + ws + unit[from + ws..].chars().next().map_or(1, char::len_utf8);
            }
        }
        out.push(&unit[from..end]);
        from = end;
    }
    if from < unit.len() {
        out.push(&unit[from..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(body: &str) -> Vec<(BlockKind, String)> {
        blocks(body)
            .into_iter()
            .map(|b| (b.kind, body[b.range].to_string()))
            .collect()
    }

    #[test]
    fn blocks_are_top_level_blocks_and_list_items() {
        let body = "Intro\nline two.\n\n## Facts\n\n- a [^c1]\n- b\n  continued\n\n  loose\n- c\n\n```rust\nfn x() {}\n\nfn y() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> [!contradiction] x\n> y\n\n[^c1]: def\n";
        let got = kinds(body);
        let k: Vec<BlockKind> = got.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            k,
            vec![
                BlockKind::Paragraph,
                BlockKind::Heading(2),
                BlockKind::Item,
                BlockKind::Item,
                BlockKind::Item,
                BlockKind::Code,
                BlockKind::Table,
                BlockKind::Quote,
                BlockKind::FootnoteDefinition
            ]
        );
        assert_eq!(got[3].1, "- b\n  continued\n\n  loose");
        assert_eq!(got[5].1, "```rust\nfn x() {}\n\nfn y() {}\n```");
    }

    #[test]
    fn blocks_skip_code_and_strip_markup() {
        let md = "# Title\n\nSome *emphasis* and `code` with a [link](http://x).\n\n```rust\nfn main() {}\n```\n\n- item one\n- item two\n\n## 小节\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n中文句子。\n";
        assert_eq!(
            text_blocks(md),
            vec![
                TextBlock::Heading(1, "Title".into()),
                TextBlock::Text("Some emphasis and code with a link.".into()),
                TextBlock::Text("item one".into()),
                TextBlock::Text("item two".into()),
                TextBlock::Heading(2, "小节".into()),
                TextBlock::Text("中文句子。".into()),
            ]
        );
    }
}
