//! Obsidian wikilinks: finding them, reporting malformed ones, and writing them.
//!
//! Syntax read (field case F15): `[[T]]`, `[[T|alias]]`, `[[T#heading]]`, `[[T#^block]]`,
//! `[[#heading]]` (same page), `![[embed]]`, and `[[T\|alias]]` (the pipe escaped inside a table
//! cell). Links inside code spans, code blocks and raw HTML are not links. `\[[` is not a link.
//!
//! Malformed links are reported with a reason, never guessed at: `[[Rust\]]` (an escaped closing
//! bracket; the suggested repair is `[[Rust]]`), `[[]]`, a `[[` without `]]` on its line, and
//! brackets inside the target.
//!
//! Writing: [`link_to`] writes the link to a page as the app writes it. [`write_link`] escapes every pipe of a link that sits in a table row and never one in
//! prose; [`normalize_pipes`] applies that rule to a whole body (so `| [[Rust|Rust lang]] | fast |`
//! is stored as `| [[Rust\|Rust lang]] | fast |`, and `See [[Rust\|x]].` as `See [[Rust|x]].`).
//!
//! *Invariant:* [`scan`] is the single definition of "a link" in this crate: the renderer, the link
//! graph (backlinks) and rename/delete all use it, so the viewer and the graph never disagree.

use std::ops::Range;

use pulldown_cmark::{Event, Parser, Tag};

/// Where in the target page a link points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fragment {
    /// `#Heading` (nested headings keep their `#`: `A#B`).
    Heading(String),
    /// `#^block-id`.
    Block(String),
}

/// One well-formed wikilink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WikiLink {
    /// Byte range in the scanned text, including the `!` of an embed.
    pub range: Range<usize>,
    /// `![[…]]`.
    pub embed: bool,
    /// The target as written, trimmed, without fragment or alias (empty for `[[#heading]]`).
    pub target: String,
    /// `#heading` or `#^block`.
    pub fragment: Option<Fragment>,
    /// The display text after `|`, as written.
    pub alias: Option<String>,
    /// The alias pipe was written `\|`.
    pub escaped_pipe: bool,
    /// The link sits in a GFM table row.
    pub in_table: bool,
}

impl WikiLink {
    /// The text a reader sees: the alias, else `target > heading`, else the target.
    pub fn display(&self) -> String {
        if let Some(a) = &self.alias {
            return a.clone();
        }
        match (&self.fragment, self.target.is_empty()) {
            (Some(Fragment::Heading(h)), true) => h.clone(),
            (Some(Fragment::Heading(h)), false) => format!("{} > {h}", self.target),
            (Some(Fragment::Block(b)), true) => format!("^{b}"),
            (Some(Fragment::Block(b)), false) => format!("{} > ^{b}", self.target),
            (None, _) => self.target.clone(),
        }
    }

    /// What the link becomes when it is unlinked: its [`WikiLink::display`] text, with pipes
    /// escaped inside a table cell (where a bare `|` would split the cell).
    pub fn as_plain_text(&self) -> String {
        let text = self.display();
        if self.in_table {
            text.replace('|', "\\|")
        } else {
            text
        }
    }
}

/// Why a `[[…]]` is not a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// No `]]` before the end of the line (or another `[[` comes first).
    Unclosed,
    /// Nothing between the brackets.
    Empty,
    /// The closing brackets are escaped (`[[Rust\]]`), as models sometimes write.
    EscapedClose,
    /// A `[` or `]` inside the target.
    Bracket,
}

/// A `[[…]]` that is not a well-formed link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// Byte range of the offending text.
    pub range: Range<usize>,
    /// The offending text.
    pub text: String,
    /// Why.
    pub problem: Problem,
    /// A well-formed link that was probably meant (e.g. `[[Rust]]` for `[[Rust\]]`), if there is an
    /// unambiguous one. Never applied automatically.
    pub repair: Option<String>,
}

/// What [`scan`] finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A wikilink.
    Link(WikiLink),
    /// A malformed one.
    Malformed(Malformed),
}

/// The pulldown-cmark options every part of this crate parses bodies with: CommonMark plus
/// tables, footnotes, task lists and strikethrough.
pub fn parser_options() -> pulldown_cmark::Options {
    use pulldown_cmark::Options;
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_STRIKETHROUGH
}

/// Byte ranges where `[[` is not a link: code spans, code blocks, raw HTML. Sorted, merged.
fn opaque_ranges(text: &str) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for (ev, range) in Parser::new_ext(text, parser_options()).into_offset_iter() {
        let opaque = matches!(
            ev,
            Event::Code(_)
                | Event::Html(_)
                | Event::InlineHtml(_)
                | Event::Start(Tag::CodeBlock(_))
                | Event::Start(Tag::HtmlBlock)
        );
        if opaque {
            match out.last_mut() {
                Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
                _ => out.push(range),
            }
        }
    }
    crate::util::sort_by_key(&mut out, |r| r.start);
    out
}

/// Byte ranges of the lines that are GFM table rows (header, delimiter and body rows), outside
/// code. A table starts at a line with `|` followed by a delimiter row (`|---|:--:|`) and runs until
/// a blank line or a line without `|`. Blockquote markers (`> `) before a row are allowed.
pub fn table_rows(text: &str) -> Vec<Range<usize>> {
    table_rows_with(text, &opaque_ranges(text))
}

fn table_rows_with(text: &str, opaque: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut lines: Vec<Range<usize>> = Vec::new();
    let mut start = 0;
    for l in text.split_inclusive('\n') {
        lines.push(start..start + l.len());
        start += l.len();
    }
    let in_code = |r: &Range<usize>| opaque.iter().any(|o| o.start <= r.start && r.start < o.end);
    let content = |r: &Range<usize>| {
        let mut s = text[r.clone()].trim_end_matches('\n').trim_start();
        while let Some(rest) = s.strip_prefix('>') {
            s = rest.trim_start();
        }
        s
    };
    let mut rows = Vec::new();
    let mut i = 1;
    while i < lines.len() {
        let (head, delim) = (&lines[i - 1], &lines[i]);
        if !in_code(head)
            && !in_code(delim)
            && content(head).contains('|')
            && is_delimiter_row(content(delim))
        {
            rows.push(head.clone());
            rows.push(delim.clone());
            let mut j = i + 1;
            while j < lines.len() && !in_code(&lines[j]) {
                let c = content(&lines[j]);
                if c.trim().is_empty() || !c.contains('|') {
                    break;
                }
                rows.push(lines[j].clone());
                j += 1;
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    rows
}

fn is_delimiter_row(s: &str) -> bool {
    let s = s.trim();
    if !s.contains('|') && !s.starts_with(':') {
        return false;
    }
    let inner = s.strip_prefix('|').unwrap_or(s);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    !inner.is_empty()
        && inner.split('|').all(|cell| {
            let c = cell.trim();
            let c = c.strip_prefix(':').unwrap_or(c);
            let c = c.strip_suffix(':').unwrap_or(c);
            !c.is_empty() && c.chars().all(|ch| ch == '-')
        })
}

/// Finds every wikilink and malformed wikilink in `text`, in order.
///
/// ```
/// use llm_wiki::markdown::wikilinks::{scan, Item, Fragment};
/// let items = scan("See [[Rust#Ownership|moves]] and `[[not a link]]`.");
/// assert_eq!(items.len(), 1);
/// let Item::Link(l) = &items[0] else { panic!() };
/// assert_eq!((l.target.as_str(), l.alias.as_deref()), ("Rust", Some("moves")));
/// assert_eq!(l.fragment, Some(Fragment::Heading("Ownership".into())));
/// ```
pub fn scan(text: &str) -> Vec<Item> {
    let opaque = opaque_ranges(text);
    let tables = table_rows_with(text, &opaque);
    let bytes = text.as_bytes();
    let mut items = Vec::new();
    let mut pos = 0;
    let mut op = 0; // index into `opaque`
                    // Next `]]`, `[[` and line end at or after a position, cached so that a line full of `[[`
                    // is scanned in linear time.
    let mut next_close = Cached::new("]]");
    let mut next_open = Cached::new("[[");
    let mut next_line = Cached::new("\n");
    while let Some(found) = text[pos..].find("[[") {
        let open = pos + found;
        while op < opaque.len() && opaque[op].end <= open {
            op += 1;
        }
        if op < opaque.len() && opaque[op].start <= open {
            pos = opaque[op].end;
            continue;
        }
        let backslashes = bytes[..open]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 1 {
            pos = open + 1;
            continue;
        }
        let embed = open > 0 && bytes[open - 1] == b'!';
        let start = if embed { open - 1 } else { open };
        let body_start = open + 2;
        let line_end = next_line.at(text, body_start).unwrap_or(text.len());
        let close = next_close.at(text, body_start).filter(|&c| c < line_end);
        let reopen = next_open.at(text, body_start).filter(|&r| r < line_end);
        let in_table = tables.iter().any(|r| r.start <= open && open < r.end);
        match close {
            Some(c) if reopen.is_none_or(|r| r > c) => {
                // `]]]`: the link closes at the last `]` of the run, as in Obsidian.
                let body = &text[body_start..c];
                let end = c + 2;
                items.push(parse_body(body, start..end, embed, in_table, text));
                pos = end;
            }
            _ => {
                let stop = reopen.unwrap_or(line_end);
                items.push(Item::Malformed(Malformed {
                    range: start..stop,
                    text: text[start..stop].to_string(),
                    problem: Problem::Unclosed,
                    repair: None,
                }));
                pos = stop.max(open + 2);
            }
        }
    }
    items
}

/// The next occurrence of a pattern at or after a position, remembered between calls with
/// increasing positions.
struct Cached {
    pattern: &'static str,
    found: Option<Option<usize>>,
}

impl Cached {
    fn new(pattern: &'static str) -> Self {
        Cached {
            pattern,
            found: None,
        }
    }

    fn at(&mut self, text: &str, from: usize) -> Option<usize> {
        match self.found {
            Some(None) => return None,
            Some(Some(p)) if p >= from => return Some(p),
            _ => {}
        }
        let p = text[from..].find(self.pattern).map(|i| from + i);
        self.found = Some(p);
        p
    }
}

/// Only the well-formed links of [`scan`].
pub fn links(text: &str) -> Vec<WikiLink> {
    scan(text)
        .into_iter()
        .filter_map(|i| match i {
            Item::Link(l) => Some(l),
            Item::Malformed(_) => None,
        })
        .collect()
}

fn parse_body(body: &str, range: Range<usize>, embed: bool, in_table: bool, text: &str) -> Item {
    let malformed = |problem, repair| {
        Item::Malformed(Malformed {
            range: range.clone(),
            text: text[range.clone()].to_string(),
            problem,
            repair,
        })
    };
    if body.ends_with('\\') {
        let target = body.trim_end_matches('\\').trim();
        let repair = (!target.is_empty() && !target.contains(['[', ']']))
            .then(|| format!("{}[[{target}]]", if embed { "!" } else { "" }));
        return malformed(Problem::EscapedClose, repair);
    }
    if body.trim().is_empty() {
        return malformed(Problem::Empty, None);
    }
    let (dest, alias, escaped_pipe) = match body.find('|') {
        Some(p) if p > 0 && body.as_bytes()[p - 1] == b'\\' => {
            (&body[..p - 1], Some(&body[p + 1..]), true)
        }
        Some(p) => (&body[..p], Some(&body[p + 1..]), false),
        None => (body, None, false),
    };
    if dest.contains(['[', ']']) {
        return malformed(Problem::Bracket, None);
    }
    let (target, fragment) = match dest.find('#') {
        Some(h) => {
            let frag = dest[h + 1..].trim();
            let fragment = match frag.strip_prefix('^') {
                Some(b) => Fragment::Block(b.trim().to_string()),
                None => Fragment::Heading(frag.to_string()),
            };
            (dest[..h].trim(), Some(fragment))
        }
        None => (dest.trim(), None),
    };
    if target.is_empty() && fragment.is_none() {
        return malformed(Problem::Empty, None);
    }
    Item::Link(WikiLink {
        range,
        embed,
        target: target.to_string(),
        fragment,
        alias: alias.map(|a| a.replace("\\|", "|")),
        escaped_pipe,
        in_table,
    })
}

/// Writes a wikilink. In a table row (`in_table`) every `|` is written `\|` so the cell is not
/// split; in prose never. `[`, `]` and `|` in `target`, and `]]` in the alias, cannot be written
/// and are replaced by spaces (page keys never contain them).
///
/// ```
/// use llm_wiki::markdown::wikilinks::write_link;
/// assert_eq!(write_link(false, "Rust", None, Some("Rust lang"), true), "[[Rust\\|Rust lang]]");
/// assert_eq!(write_link(false, "Rust", None, Some("Rust lang"), false), "[[Rust|Rust lang]]");
/// ```
pub fn write_link(
    embed: bool,
    target: &str,
    fragment: Option<&Fragment>,
    alias: Option<&str>,
    in_table: bool,
) -> String {
    let clean = |s: &str, bad: &[char]| -> String {
        s.chars()
            .map(|c| if bad.contains(&c) { ' ' } else { c })
            .collect::<String>()
    };
    let mut out = String::new();
    if embed {
        out.push('!');
    }
    out.push_str("[[");
    out.push_str(clean(target, &['[', ']', '|', '#', '\n']).trim());
    match fragment {
        Some(Fragment::Heading(h)) => {
            out.push('#');
            out.push_str(clean(h, &['[', ']', '|', '\n']).trim());
        }
        Some(Fragment::Block(b)) => {
            out.push_str("#^");
            out.push_str(clean(b, &['[', ']', '|', '\n']).trim());
        }
        None => {}
    }
    if let Some(a) = alias {
        let a = clean(a, &['\n']).replace("]]", "] ]");
        let pipe = if in_table { "\\|" } else { "|" };
        out.push_str(pipe);
        out.push_str(&if in_table { a.replace('|', "\\|") } else { a });
    }
    out.push_str("]]");
    out
}

/// Rewrites links: `f` gets each well-formed link and returns its replacement text, or `None` to
/// leave it untouched. Text outside links is never changed.
pub fn rewrite(text: &str, mut f: impl FnMut(&WikiLink) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for l in links(text) {
        if let Some(new) = f(&l) {
            out.push_str(&text[last..l.range.start]);
            out.push_str(&new);
            last = l.range.end;
        }
    }
    out.push_str(&text[last..]);
    out
}

/// The writer's pipe rule for a whole body: links in table rows get every `|` escaped, links in
/// prose get `\|` unescaped. Links already in the right form, and all other text, are unchanged.
pub fn normalize_pipes(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut last = 0;
    for l in links(text) {
        let raw = &text[l.range.clone()];
        let fixed = if l.in_table {
            escape_unescaped_pipes(raw)
        } else {
            raw.replace("\\|", "|")
        };
        if fixed != raw {
            out.push_str(&text[last..l.range.start]);
            out.push_str(&fixed);
            last = l.range.end;
        }
    }
    out.push_str(&text[last..]);
    out
}

fn escape_unescaped_pipes(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    let mut prev_backslashes = 0;
    for c in s.chars() {
        if c == '|' && prev_backslashes % 2 == 0 {
            out.push('\\');
        }
        prev_backslashes = if c == '\\' { prev_backslashes + 1 } else { 0 };
        out.push(c);
    }
    out
}

/// A wikilink to a page as the app writes it (Decision 6): `[[key]]`, or `[[key|Title]]` when the
/// title differs from the key. A `|` or `]` in the title (never in a key) is replaced so the link
/// stays one link.
pub fn link_to(key: &str, title: &str) -> String {
    if key == title {
        format!("[[{key}]]")
    } else {
        let shown: String = title
            .chars()
            .map(|c| if matches!(c, '|' | '[' | ']') { ' ' } else { c })
            .collect();
        format!("[[{key}|{}]]", shown.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTES: &str = "[[Rust|the Rust language]] [[Rust#Ownership]] [[Rust#^own1]] ![[Rust#Ownership]] ![[diagram.png]] [[Rust.md]]\n\n| Lang | Note |\n|---|---|\n| [[Rust\\|Rust lang]] | fast |\n";
    const BAD: &str = "[[Rust#No such heading]] [[Missing page]] ![[missing.png]] [[Rust\\]]";

    fn link(items: &[Item], i: usize) -> &WikiLink {
        match &items[i] {
            Item::Link(l) => l,
            other => panic!("item {i} is {other:?}"),
        }
    }

    #[test]
    fn links_follow_decision_6() {
        assert_eq!(link_to("Tokio", "Tokio"), "[[Tokio]]");
        assert_eq!(link_to("A B", "A|B"), "[[A B|A B]]");
    }

    #[test]
    fn f15_every_variant_of_notes_md_parses_to_rust() {
        let items = scan(NOTES);
        assert_eq!(items.len(), 7, "{items:#?}");
        for i in [0, 1, 2, 3, 5, 6] {
            assert_eq!(link(&items, i).target.trim_end_matches(".md"), "Rust");
        }
        assert_eq!(link(&items, 0).alias.as_deref(), Some("the Rust language"));
        assert_eq!(
            link(&items, 1).fragment,
            Some(Fragment::Heading("Ownership".into()))
        );
        assert_eq!(
            link(&items, 2).fragment,
            Some(Fragment::Block("own1".into()))
        );
        assert!(link(&items, 3).embed && !link(&items, 1).embed);
        assert!(link(&items, 4).embed);
        assert_eq!(link(&items, 4).target, "diagram.png");
        let table = link(&items, 6);
        assert_eq!(
            (table.target.as_str(), table.alias.as_deref()),
            ("Rust", Some("Rust lang"))
        );
        assert!(table.escaped_pipe && table.in_table);
        assert!(!link(&items, 0).in_table);
        assert_eq!(&NOTES[table.range.clone()], "[[Rust\\|Rust lang]]");
    }

    #[test]
    fn f15_bad_md_reports_the_escaped_bracket_as_malformed() {
        let items = scan(BAD);
        assert_eq!(items.len(), 4);
        assert_eq!(link(&items, 0).target, "Rust");
        assert_eq!(link(&items, 1).target, "Missing page");
        assert_eq!(link(&items, 2).target, "missing.png");
        match &items[3] {
            Item::Malformed(m) => {
                assert_eq!(m.problem, Problem::EscapedClose);
                assert_eq!(m.text, "[[Rust\\]]");
                assert_eq!(m.repair.as_deref(), Some("[[Rust]]"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_and_non_links() {
        let items = scan("[[]] [[open\n[[a [[b]] \\[[escaped]] [[a]b]] `[[code]]`\n```\n[[fenced]]\n```\n<span>[[html]]</span>");
        let summary: Vec<String> = items
            .iter()
            .map(|i| match i {
                Item::Link(l) => format!("link {}", l.target),
                Item::Malformed(m) => format!("{:?} {}", m.problem, m.text),
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                "Empty [[]]",
                "Unclosed [[open",
                "Unclosed [[a ",
                "link b",
                "Bracket [[a]b]]",
                "link html"
            ]
        );
    }

    #[test]
    fn long_lines_of_brackets_scan_in_linear_time() {
        let text = "[[".repeat(200_000) + "]]";
        let items = scan(&text);
        assert_eq!(items.len(), 200_000);
        assert!(matches!(items.last(), Some(Item::Malformed(m)) if m.problem == Problem::Empty));
    }

    #[test]
    fn html_blocks_are_opaque() {
        assert!(links("<div>\n[[in a block]]\n</div>\n").is_empty());
    }

    #[test]
    fn f15_writer_escapes_pipes_in_tables_only() {
        let llm = "| Lang | Note |\n|---|---|\n| [[Rust|Rust lang]] | fast |\n\nSee [[Rust|Rust lang]].\n";
        let stored = normalize_pipes(llm);
        assert_eq!(
            stored,
            "| Lang | Note |\n|---|---|\n| [[Rust\\|Rust lang]] | fast |\n\nSee [[Rust|Rust lang]].\n"
        );
        assert_eq!(normalize_pipes(&stored), stored, "idempotent");
        assert_eq!(normalize_pipes("See [[Rust\\|x]]."), "See [[Rust|x]].");
        // A header row with a link, a blockquoted table, and a fenced example are handled too.
        assert_eq!(
            normalize_pipes("| [[A|a]] | b |\n| --- | :-: |\n"),
            "| [[A\\|a]] | b |\n| --- | :-: |\n"
        );
        assert_eq!(
            normalize_pipes("> | x | y |\n> |---|---|\n> | [[A|a]] | 1 |\n"),
            "> | x | y |\n> |---|---|\n> | [[A\\|a]] | 1 |\n"
        );
        let fenced = "```\n| x | y |\n|---|---|\n| [[A|a]] | 1 |\n```\n";
        assert_eq!(normalize_pipes(fenced), fenced);
    }

    #[test]
    fn written_links_scan_back() {
        for (in_table, alias) in [(false, "a|b"), (true, "a|b"), (false, "人工智能")] {
            let w = write_link(
                true,
                "机器学习",
                Some(&Fragment::Heading("监督学习".into())),
                Some(alias),
                in_table,
            );
            let text = if in_table {
                format!("| h | i |\n|---|---|\n| {w} | x |\n")
            } else {
                format!("x {w} y")
            };
            let l = &links(&text)[0];
            assert_eq!(l.target, "机器学习");
            assert_eq!(l.alias.as_deref(), Some(alias));
            assert!(l.embed);
        }
        assert_eq!(write_link(false, "a]]b", None, None, false), "[[a  b]]");
    }

    #[test]
    fn rewrite_changes_only_links() {
        let text = "A [[Old|x]] b `[[Old]]` [[Other]]";
        let out = rewrite(text, |l| {
            (l.target == "Old").then(|| "[[New|x]]".to_string())
        });
        assert_eq!(out, "A [[New|x]] b `[[Old]]` [[Other]]");
    }
}
