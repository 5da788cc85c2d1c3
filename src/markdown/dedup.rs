//! The one definition of a *duplicate* block, and the passes that remove duplicates.
//!
//! Two blocks ([`super::blocks::blocks`]) are **duplicates** when their [`dup_key`]s are equal:
//! their text after NFKC, case folding, whitespace collapse, with footnote references (`[^c1]`)
//! and list markers removed and wikilinks read as their display text (`[[Acme]]` as `Acme`). A
//! code block (and a link reference definition) is compared whole — never split at its blank
//! lines — after NFKC and with trailing spaces removed, but never case-folded or re-spaced, since
//! case and indentation are what code says; a heading only matches a heading.
//! Footnote definitions keep their label, so two definitions never match.
//!
//! [`dedup`] removes the later copies of a block (a duplicate fact's citations join the copy that
//! stays) and merges a repeated heading's section into the first section of that heading.
//! [`merge_append`] is the append mode of the compile pipeline: text a model wrote for a page too
//! long to rewrite goes into the page's own sections, adding only what the page does not hold —
//! an echoed outline, repeated facts or a heading the page already has add nothing.
//!
//! *Invariant:* a body without duplicates comes back byte for byte; a protected block (a human
//! paragraph, Decision 5) is never removed, changed or moved.

use std::collections::HashMap;

use super::blocks::{blocks, BlockKind};
use super::plain::{footnote_refs, without_refs};

/// The list marker at the start of an item (`- `, `* `, `+ `, `1. `, `1) `), if any.
fn strip_list_marker(text: &str) -> &str {
    let t = text.trim_start();
    for m in ["- ", "* ", "+ "] {
        if let Some(rest) = t.strip_prefix(m) {
            return rest;
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits <= 9 {
        let rest = &t[digits..];
        if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return r;
        }
    }
    t
}

/// The heading's text without its `#` marks (ATX) or underline (setext).
fn heading_text(text: &str) -> &str {
    let t = text.trim();
    if t.starts_with('#') {
        t.trim_start_matches('#')
            .trim()
            .trim_end_matches('#')
            .trim()
    } else {
        t.lines().next().unwrap_or("").trim()
    }
}

/// NFKC, lower case (full case mapping, which folds like Unicode simple case folding for the
/// text pages hold), whitespace runs as one space, trimmed.
fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut push_words = |s: &str| {
        for w in s.split_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(w);
        }
    };
    if text.is_ascii() {
        // NFKC leaves ASCII as it is.
        push_words(&text.to_ascii_lowercase());
    } else {
        let lower = crate::text::nfkc_lowercase(text);
        push_words(&lower);
    }
    out
}

/// The key two blocks are duplicates by (see the module docs): empty for a block with no text.
/// Headings get the prefix `h:` (a heading never matches a paragraph), everything else `b:`, so
/// a list item and a paragraph with the same text match.
pub fn dup_key(kind: BlockKind, text: &str) -> String {
    let (prefix, text) = match kind {
        BlockKind::Heading(_) => ("h:", heading_text(text).to_string()),
        BlockKind::Item => ("b:", strip_list_marker(text).to_string()),
        _ => ("b:", text.to_string()),
    };
    // Code and definitions are compared whole, as they are: their case, spacing and markers
    // are what they say.
    if matches!(kind, BlockKind::Code | BlockKind::Definition) {
        let mut key = String::from("c:");
        for line in crate::text::nfkc(&text).trim_end().lines() {
            key.push_str(line.trim_end());
            key.push('\n');
        }
        return key;
    }
    // A link reads as its display text: "made by [[Acme]]" repeats "made by Acme".
    let text = if !text.contains("[[") {
        text
    } else {
        super::wikilinks::rewrite(&text, |l| Some(l.display()))
    };
    let folded = fold(&without_refs(&text));
    if folded.is_empty() {
        String::new()
    } else {
        format!("{prefix}{folded}")
    }
}

/// Words a paraphrase of a heading adds or drops without changing what it is about: articles,
/// and the prepositions and conjunction that turn "Ownership Rules" into "The Rules of
/// Ownership". Never a word that changes the meaning (not, no, only, before, after, more…), so
/// "Not supported" never matches "Supported".
const HEADING_FILLER: &[&str] = &[
    "a", "an", "the", "of", "and", "for", "in", "on", "to", "with", "by", "at", "its", "their",
];

/// The words a heading is about, for matching a model's paraphrase of a heading the page has
/// ("The Rules of Ownership" for "Ownership Rules"): folded words without articles and linking words ([`HEADING_FILLER`]),
/// a plural `s` dropped, sorted and deduplicated; a CJK run is one word.
fn heading_words(text: &str) -> Vec<String> {
    let folded = fold(heading_text(text));
    let mut words: Vec<String> = folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !HEADING_FILLER.contains(w))
        .map(|w| {
            if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && w.is_ascii() {
                w[..w.len() - 1].to_string()
            } else {
                w.to_string()
            }
        })
        .collect();
    words.sort();
    words.dedup();
    words
}

/// One block of the document being rebuilt.
#[derive(Debug, Clone)]
struct Piece {
    kind: BlockKind,
    text: String,
    /// The text between the previous block and this one as it was (`None`: placed by the merge,
    /// separated by a line end inside a list and a blank line otherwise).
    gap: Option<String>,
    protected: bool,
    /// Written by the model in append mode (not on the page yet).
    added: bool,
}

fn heading_level(kind: BlockKind) -> Option<u8> {
    match kind {
        BlockKind::Heading(l) => Some(l),
        _ => None,
    }
}

/// The pieces of `body`, each marked protected when the blank-line paragraph it starts in is one
/// of `protected` (paragraphs with whitespace collapsed, as Decision 5 compares them). Returns the
/// pieces and the text after the last block.
fn pieces(body: &str, protected: &[String], added: bool) -> (Vec<Piece>, String) {
    let bs = blocks(body);
    // Blank-line paragraphs as Decision 5 splits them, by start offset.
    let mut chunks: Vec<(usize, bool)> = Vec::new();
    let mut at = 0;
    for part in body.split("\n\n") {
        let flat = part.split_whitespace().collect::<Vec<_>>().join(" ");
        chunks.push((at, !flat.is_empty() && protected.contains(&flat)));
        at += part.len() + 2;
    }
    let is_protected = |start: usize| {
        chunks
            .iter()
            .rev()
            .find(|(s, _)| *s <= start)
            .is_some_and(|(_, p)| *p)
    };
    let mut out = Vec::with_capacity(bs.len());
    let mut prev_end = 0;
    for b in &bs {
        out.push(Piece {
            kind: b.kind,
            text: body[b.range.clone()].to_string(),
            gap: Some(body[prev_end..b.range.start].to_string()),
            protected: is_protected(b.range.start),
            added,
        });
        prev_end = b.range.end;
    }
    (out, body[prev_end..].to_string())
}

/// Adds the footnote references of `from` that `to` lacks to `to`: after its last reference, or
/// at its end.
fn merge_refs(to: &mut String, from: &str) {
    let have = footnote_refs(to);
    let extra: Vec<String> = footnote_refs(from)
        .into_iter()
        .filter(|r| !have.contains(r))
        .collect();
    if extra.is_empty() {
        return;
    }
    let insert: String = extra.iter().map(|r| format!("[^{r}]")).collect();
    match have
        .last()
        .and_then(|last| to.rfind(&format!("[^{last}]")).map(|i| (i, last)))
    {
        Some((i, last)) => {
            let at = i + last.len() + 3;
            to.insert_str(at, &insert);
        }
        None => {
            let end = to.trim_end().len();
            to.truncate(end);
            let spaced: String = extra.iter().map(|r| format!(" [^{r}]")).collect();
            to.push_str(&spaced);
        }
    }
}

/// Separates the keys of a heading's path.
const PATH_SEP: char = '\u{1f}';

/// For each piece of `input`, whether it is a heading whose section holds a protected block: a
/// repeated heading like that is not merged (the block could not move with it).
fn sections_holding_protected(input: &[Piece]) -> Vec<bool> {
    (0..input.len())
        .map(|i| {
            heading_level(input[i].kind).is_some_and(|l| {
                input[i + 1..]
                    .iter()
                    .take_while(|p| heading_level(p.kind).is_none_or(|x| x > l))
                    .any(|p| p.protected)
            })
        })
        .collect()
}

/// The state of one [`rebuild`] pass: the pieces placed so far and where the first copy of each
/// key sits among them.
#[derive(Default)]
struct Rebuild {
    out: Vec<Piece>,
    /// The index in `out` of the first copy of each block (not heading) key.
    seen: HashMap<String, usize>,
    /// The index in `out` of each heading, keyed by its path (the keys of the headings above it
    /// and its own), so `### Example` under `## Lifetimes` never merges into `### Example` under
    /// `## Borrowing`.
    headings: HashMap<String, usize>,
    /// The headings above the current piece: level and key.
    path: Vec<(u8, String)>,
    /// Each heading placed: its parent path, its [`heading_words`] and its index in `out`.
    heading_words_at: Vec<(String, Vec<String>, usize)>,
    /// Where blocks go while a repeated heading's section is merged into an earlier one: the
    /// insertion index and the level of the repeated heading.
    cursor: Option<(usize, u8)>,
    /// The gap of a dropped block, kept for the next block placed at the end.
    dropped_gap: Option<String>,
}

impl Rebuild {
    /// Moves every index at or after `from` one on (a piece is inserted at `from`).
    fn shift(&mut self, from: usize) {
        for v in self.seen.values_mut().chain(self.headings.values_mut()) {
            if *v >= from {
                *v += 1;
            }
        }
        for (_, _, v) in self.heading_words_at.iter_mut() {
            if *v >= from {
                *v += 1;
            }
        }
    }

    /// The index after the last piece of the section of the heading at `h`.
    fn section_end(&self, h: usize) -> usize {
        let l = heading_level(self.out[h].kind).unwrap_or(1);
        self.out
            .iter()
            .enumerate()
            .skip(h + 1)
            .find(|(_, p)| heading_level(p.kind).is_some_and(|x| x <= l))
            .map_or(self.out.len(), |(i, _)| i)
    }

    /// The key of `p` ([`dup_key`]) and, for a heading, its parent path: a heading's key is
    /// prefixed with that path, and the path is moved to the heading.
    fn keyed(&mut self, p: &Piece) -> (String, String) {
        let key = dup_key(p.kind, &p.text);
        let Some(l) = heading_level(p.kind) else {
            return (key, String::new());
        };
        while self.path.last().is_some_and(|(pl, _)| *pl >= l) {
            self.path.pop();
        }
        let mut parent = String::new();
        for (_, k) in &self.path {
            parent.push_str(k);
            parent.push(PATH_SEP);
        }
        self.path.push((l, key.clone()));
        (format!("{parent}{key}"), parent)
    }

    /// Places `p` at the end, taking over the gap of a block dropped before it.
    fn push_end(&mut self, mut p: Piece) {
        if let Some(g) = self.dropped_gap.take() {
            p.gap = Some(longer_gap(g, p.gap.take()));
        }
        self.out.push(p);
    }

    /// Places `p` at `at`, inside the section being merged (heading level `merged_level`).
    fn insert_merged(&mut self, at: usize, merged_level: u8, mut p: Piece) {
        self.shift(at);
        p.gap = None;
        self.out.insert(at, p);
        self.cursor = Some((at + 1, merged_level));
    }

    /// A protected piece is never removed, changed or moved: it stays where it is, at the end so
    /// far.
    fn place_protected(&mut self, key: String, p: Piece) {
        if heading_level(p.kind).is_some() {
            self.headings.entry(key).or_insert(self.out.len());
        } else if !key.is_empty() {
            self.seen.entry(key).or_insert(self.out.len());
        }
        self.push_end(p);
    }

    /// The earlier heading `p` (keyed `key`, under `parent`) repeats: the same path, or with
    /// `fuzzy`, the same [`heading_words`] under the same parent.
    fn repeated_heading(&self, key: &str, parent: &str, p: &Piece, fuzzy: bool) -> Option<usize> {
        self.headings.get(key).copied().or_else(|| {
            if !fuzzy {
                return None;
            }
            let w = heading_words(&p.text);
            (!w.is_empty())
                .then(|| {
                    self.heading_words_at
                        .iter()
                        .find(|(pa, x, _)| pa == parent && *x == w)
                        .map(|(_, _, i)| *i)
                })
                .flatten()
        })
    }

    /// Places the heading `p` (level `l`): a repeat of an earlier heading (unless its section
    /// `holds_protected`) is dropped and what follows goes into the earlier one's section; a
    /// subsection of a merged section goes with it; any other heading goes at the end.
    fn place_heading(
        &mut self,
        l: u8,
        keyed: (String, String),
        p: Piece,
        fuzzy: bool,
        holds_protected: bool,
    ) {
        let (key, parent) = keyed;
        let matched = self
            .repeated_heading(&key, &parent, &p, fuzzy)
            .filter(|_| !holds_protected);
        if let Some(h) = matched {
            // Its subsections continue under the heading it merged into.
            let merged_into = dup_key(self.out[h].kind, &self.out[h].text);
            if let Some(last) = self.path.last_mut() {
                last.1 = merged_into;
            }
            self.cursor = Some((self.section_end(h), l));
            if p.gap.is_some() {
                self.dropped_gap = self.dropped_gap.take().or(p.gap);
            }
            return;
        }
        let words = heading_words(&p.text);
        match self.cursor {
            Some((at, merged_level)) if l > merged_level => {
                self.insert_merged(at, merged_level, p);
                self.headings.insert(key, at);
                self.heading_words_at.push((parent, words, at));
            }
            _ => {
                self.cursor = None;
                self.headings.entry(key).or_insert(self.out.len());
                self.heading_words_at.push((parent, words, self.out.len()));
                self.push_end(p);
            }
        }
    }

    /// Places the block `p` (not a heading): a copy of an earlier block is dropped, its footnote
    /// references joining the first copy (kept instead when that copy is a human's and this one
    /// cites more); any other goes into the section being merged or at the end.
    fn place_block(&mut self, key: String, p: Piece) {
        if let Some(&j) = self.seen.get(&key).filter(|_| !key.is_empty()) {
            if !self.out[j].protected {
                merge_refs(&mut self.out[j].text, &p.text);
                if self.cursor.is_none() {
                    if let Some(g) = p.gap {
                        self.dropped_gap = Some(longer_gap(
                            self.dropped_gap.take().unwrap_or_default(),
                            Some(g),
                        ));
                    }
                }
                return;
            }
            // The copy that stays is a human's and cannot take citations: keep this one when it
            // cites what the human paragraph does not.
            let extra = footnote_refs(&p.text)
                .into_iter()
                .any(|r| !footnote_refs(&self.out[j].text).contains(&r));
            if !extra {
                return;
            }
        }
        match self.cursor {
            Some((at, merged_level)) => {
                self.insert_merged(at, merged_level, p);
                if !key.is_empty() {
                    self.seen.entry(key).or_insert(at);
                }
            }
            None => {
                if !key.is_empty() {
                    self.seen.entry(key).or_insert(self.out.len());
                }
                self.push_end(p);
            }
        }
    }
}

/// Removes the headings the model added that hold nothing (an echoed or paraphrased outline),
/// the next piece taking over a removed heading's gap.
fn drop_empty_added_headings(out: &mut Vec<Piece>) {
    loop {
        let empty = (0..out.len()).rev().find(|&h| {
            let Some(l) = heading_level(out[h].kind) else {
                return false;
            };
            out[h].added
                && out[h + 1..]
                    .iter()
                    .take_while(|p| heading_level(p.kind).is_none_or(|x| x > l))
                    .all(|p| heading_level(p.kind).is_some())
        });
        match empty {
            Some(h) => {
                let removed = out.remove(h);
                if let (Some(next), Some(g)) = (out.get_mut(h), removed.gap) {
                    next.gap = Some(longer_gap(g, next.gap.take()));
                }
            }
            None => break,
        }
    }
}

/// The dedup and merge pass over `input` (see [`dedup`] and [`merge_append`]). With
/// `fuzzy_added_headings`, an added heading also repeats a heading with the same
/// [`heading_words`].
fn rebuild(input: Vec<Piece>, fuzzy_added_headings: bool) -> Vec<Piece> {
    let holds_protected = sections_holding_protected(&input);
    let mut r = Rebuild {
        out: Vec::with_capacity(input.len()),
        ..Rebuild::default()
    };
    for (i, p) in input.into_iter().enumerate() {
        let keyed = r.keyed(&p);
        if p.protected {
            r.place_protected(keyed.0, p);
        } else if let Some(l) = heading_level(p.kind) {
            let fuzzy = fuzzy_added_headings && p.added;
            r.place_heading(l, keyed, p, fuzzy, holds_protected[i]);
        } else {
            r.place_block(keyed.0, p);
        }
    }
    let mut out = r.out;
    drop_empty_added_headings(&mut out);
    out
}

/// Of two gaps between blocks, the one with more line ends (`None` counts as none).
fn longer_gap(a: String, b: Option<String>) -> String {
    match b {
        Some(b) if b.matches('\n').count() >= a.matches('\n').count() => b,
        _ => a,
    }
}

fn render(prefix: &str, pieces: &[Piece], suffix: &str) -> String {
    let mut out = String::from(prefix);
    for (i, p) in pieces.iter().enumerate() {
        if i > 0 {
            match &p.gap {
                Some(g) if !g.is_empty() => out.push_str(g),
                _ => {
                    let list = p.kind == BlockKind::Item && pieces[i - 1].kind == BlockKind::Item;
                    out.push_str(if list { "\n" } else { "\n\n" });
                }
            }
        }
        out.push_str(&p.text);
    }
    out.push_str(suffix);
    out
}

/// The text before the first block of `body`.
fn leading(body: &str) -> &str {
    let start = blocks(body).first().map_or(body.len(), |b| b.range.start);
    &body[..start]
}

/// `body` with every later copy of a block removed (see the module docs): a removed copy's
/// footnote references join the copy that stays, and a repeated heading's section moves to the
/// end of the first section with that heading. Blocks of a blank-line paragraph listed in
/// `protected` (whitespace collapsed, as Decision 5 compares paragraphs) are kept as they are.
///
/// ```
/// use llm_wiki::markdown::dedup::dedup;
/// let body = "## Facts\n\n- Rust is fast. [^c1]\n- Rust is fast. [^c2]\n\n## Facts\n\n- Rust is safe. [^c3]\n";
/// assert_eq!(dedup(body, &[]), "## Facts\n\n- Rust is fast. [^c1][^c2]\n- Rust is safe. [^c3]\n");
/// ```
pub fn dedup(body: &str, protected: &[String]) -> String {
    let (ps, suffix) = pieces(body, protected, false);
    let prefix = leading(body);
    let n = ps.len();
    let out = rebuild(ps.clone(), false);
    if out.len() == n
        && out
            .iter()
            .zip(&ps)
            .all(|(a, b)| a.text == b.text && a.gap == b.gap)
    {
        return body.to_string();
    }
    render(prefix, &out, &suffix)
}

/// Append mode (a page too long for the model to rewrite): `addition`, the text the model wrote
/// for `current`, merged into it so that only what `current` does not hold is added. A block the
/// page already has adds its footnote references to the page's copy and nothing else; a heading
/// the page has (or a paraphrase of one: the same words, articles, linking words and plurals aside) puts
/// the blocks under it at the end of the page's section; a new heading with nothing under it is
/// dropped; anything else is appended. Then [`dedup`] applies to the whole. `protected` as in
/// [`dedup`] (paragraphs of `current`).
pub fn merge_append(current: &str, addition: &str, protected: &[String]) -> String {
    let (mut ps, _) = pieces(current, protected, false);
    let (added, _) = pieces(addition, &[], true);
    let prefix = leading(current).to_string();
    ps.extend(added.into_iter().enumerate().map(|(i, mut p)| {
        if i == 0 {
            p.gap = None;
        }
        p
    }));
    let out = rebuild(ps, true);
    let mut text = render(&prefix, &out, "");
    if current.ends_with('\n') || addition.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_by_the_definition() {
        let k = |kind, t| dup_key(kind, t);
        // NFKC (full-width letters), case, whitespace, footnote markers, list markers.
        assert_eq!(
            k(BlockKind::Item, "- Ｒust  is\nfast [^c1]."),
            k(BlockKind::Paragraph, "rust is fast.")
        );
        assert_eq!(
            k(BlockKind::Heading(2), "## Ownership Rules"),
            k(BlockKind::Heading(3), "### ownership rules ###")
        );
        assert_ne!(
            k(BlockKind::Heading(2), "## Facts"),
            k(BlockKind::Paragraph, "Facts")
        );
        assert_ne!(
            k(BlockKind::FootnoteDefinition, "[^c1]: q"),
            k(BlockKind::FootnoteDefinition, "[^c2]: q")
        );
        // Code is compared whole, blank lines and all.
        assert_ne!(
            k(BlockKind::Code, "```\na\n\nb\n```"),
            k(BlockKind::Code, "```\na\n```")
        );
        assert_eq!(k(BlockKind::Item, "- [^c1]"), "");
        assert_eq!(
            k(BlockKind::Item, "- Made by [[Acme]] [^c1]."),
            k(BlockKind::Item, "- Made by [[acme-inc|Acme]] [^c2].")
        );
    }

    #[test]
    fn dedup_keeps_a_clean_body_byte_for_byte() {
        for body in [
            "Intro.\n\n## Facts\n\n- a [^c1]\n- b [^c2]\n\n## Related\n\n- [[X]]\n\n[^c1]: d\n[^c2]: e\n",
            "  lead\n\n\n\npara\n",
            "",
            "# T\n\ntext",
        ] {
            assert_eq!(dedup(body, &[]), body);
        }
    }

    #[test]
    fn dedup_merges_citations_and_sections() {
        let body = "Lead.\n\n## Facts\n\n- Rust is fast. [^c1]\n- Rust is safe. [^c2]\n\n## Related\n\n- [[Cargo]]\n\n## Facts\n\n- rust is FAST. [^c3]\n- New one. [^c4]\n\n## Related\n\n- [[Cargo]]\n- [[Tokio]]\n";
        let out = dedup(body, &[]);
        assert_eq!(
            out,
            "Lead.\n\n## Facts\n\n- Rust is fast. [^c1][^c3]\n- Rust is safe. [^c2]\n- New one. [^c4]\n\n## Related\n\n- [[Cargo]]\n- [[Tokio]]\n"
        );
        assert_eq!(dedup(&out, &[]), out);
    }

    #[test]
    fn text_outside_blocks_is_kept() {
        // Link reference definitions produce no CommonMark block: they are blocks here, so no
        // merge or dedup drops them, wherever they are.
        let page = "Intro with [a ref][r].\n\n[r]: https://example.com/r\n\n## Notes\n\n- One.\n\n[s]: https://example.com/s \"S\"\n";
        assert_eq!(dedup(page, &[]), page);
        let out = merge_append(
            page,
            "[t]: https://example.com/t\n\n## Notes\n\n- One.\n- Two [t].",
            &[],
        );
        for needle in [
            "[r]: https://example.com/r",
            "[s]: https://example.com/s \"S\"",
            "[t]: https://example.com/t",
            "- Two [t].",
        ] {
            assert!(out.contains(needle), "{needle:?} in {out:?}");
        }
        assert_eq!(out.matches("- One.").count(), 1, "{out}");
        let kinds: Vec<BlockKind> = blocks(page).into_iter().map(|b| b.kind).collect();
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == BlockKind::Definition)
                .count(),
            2,
            "{kinds:?}"
        );
    }

    #[test]
    fn code_is_compared_as_written() {
        // Code differing in case or indentation is different code; trailing spaces are not.
        let body = "```py\nif x:\n    return A\n```\n\n```py\nif x:\n  return a\n```\n\n```py\nif x:   \n    return A\n```";
        assert_eq!(
            dedup(body, &[]),
            "```py\nif x:\n    return A\n```\n\n```py\nif x:\n  return a\n```"
        );
    }

    #[test]
    fn a_heading_merges_only_under_the_same_parents() {
        // `### Example` under another `##` is another section: nothing moves between them.
        let body = "## Borrowing\n\n### Example\n\nBorrow one.\n\n## Lifetimes\n\n### Example\n\nLifetime one.";
        assert_eq!(dedup(body, &[]), body);
        // A repeated `##` merges, its subsection with it, into the same path.
        let body = "## A\n\n### Ex\n\nOne.\n\n## B\n\nB text.\n\n## A\n\n### Ex\n\nTwo.";
        assert_eq!(
            dedup(body, &[]),
            "## A\n\n### Ex\n\nOne.\n\nTwo.\n\n## B\n\nB text."
        );
        // In append mode too: the reply's `### Example` under `## Lifetimes` stays there.
        let page = "## Borrowing\n\n### Example\n\nBorrow one.\n\n## Lifetimes\n\nLifetimes intro.";
        let out = merge_append(page, "## Lifetimes\n\n### Example\n\nLifetime one.", &[]);
        assert_eq!(out, format!("{page}\n\n### Example\n\nLifetime one."));
    }

    #[test]
    fn a_section_with_a_human_paragraph_is_not_merged() {
        let human = "A person wrote this.".to_string();
        let body =
            "## Notes\n\nModel one.\n\n## Other\n\nOther text.\n\n## Notes\n\nA person wrote this.";
        let out = dedup(body, std::slice::from_ref(&human));
        assert_eq!(
            out, body,
            "the repeated heading stays above the human paragraph"
        );
    }

    #[test]
    fn a_paraphrase_never_flips_a_heading() {
        // Negations and comparisons change what a heading is about: no fuzzy match.
        let page = "## Supported\n\n- Linux.\n\n## Before 2018\n\n- Old.";
        let out = merge_append(
            page,
            "## Not supported\n\n- Windows XP.\n\n## After 2018\n\n- New.",
            &[],
        );
        assert!(out.contains("## Not supported\n\n- Windows XP."), "{out}");
        assert!(out.contains("## After 2018\n\n- New."), "{out}");
        assert!(
            out.starts_with("## Supported\n\n- Linux.\n\n## Before 2018\n\n- Old."),
            "{out}"
        );
        // Articles and linking words do not: "The Rules of Ownership" is "Ownership Rules".
        let page = "## Ownership Rules\n\n- One owner.";
        assert_eq!(
            merge_append(
                page,
                "## The Rules of Ownership\n\n- Moves transfer it.",
                &[]
            ),
            "## Ownership Rules\n\n- One owner.\n- Moves transfer it."
        );
    }

    #[test]
    fn protected_paragraphs_stay_where_they_are() {
        let human = "My note.".to_string();
        let body = "My note.\n\nModel text.\n\nMy note.";
        // The later copy is a human paragraph too: both stay (never removed).
        assert_eq!(dedup(body, std::slice::from_ref(&human)), body);
        let body = "Model text.\n\nMy note.\n\nModel text.";
        assert_eq!(dedup(body, &[human]), "Model text.\n\nMy note.");
    }

    #[test]
    fn append_adds_only_what_is_new() {
        let page = "Lead [^c1].\n\n## Ownership Rules\n\n- Each value has an owner. [^c2]\n\n## Facts\n\n- One. [^c3]";
        // An echo of the outline with a repeated fact and one new fact under a known heading.
        let reply = "## Ownership Rules\n\n- Each value has an owner. [^c9]\n- There can only be one owner. [^c10]\n\n## Facts\n\n## Related\n\n- [[Cargo]]";
        let out = merge_append(page, reply, &[]);
        assert_eq!(
            out,
            "Lead [^c1].\n\n## Ownership Rules\n\n- Each value has an owner. [^c2][^c9]\n- There can only be one owner. [^c10]\n\n## Facts\n\n- One. [^c3]\n\n## Related\n\n- [[Cargo]]"
        );
        // A paraphrased outline: the same headings in other words add nothing.
        let reply = "## The Rules of Ownership\n\n## facts\n\n### Example";
        assert_eq!(merge_append(page, reply, &[]), page);
        // Appending the same reply twice adds nothing the second time.
        let once = merge_append(page, "## More\n\nA new paragraph [^c11].", &[]);
        assert_eq!(
            merge_append(&once, "## More\n\nA new paragraph [^c11].", &[]),
            once
        );
    }
}
