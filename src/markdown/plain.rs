//! Plain text and footnote references: markdown read with its markup set aside.
//!
//! - [`plain_text`]: text reduced for quote matching (the normalisation provenance verifies
//!   quotes with): NFKC, link targets and emphasis dropped, typographic quotes mapped to ASCII.
//! - [`footnote_refs`], [`retain_refs`], [`strip_refs`]: footnote references (`[^label]`) listed,
//!   filtered and removed. A definition's label (`[^label]:` at a line start) is never a
//!   reference.
//! - [`without_footnotes`]: a body with its footnote references and definitions cut out, as the
//!   markdown parser finds them.
//!
//! *Invariant:* these functions only remove or map markup; they never reorder or invent text.

/// Text reduced for quote matching: NFKC; `[text](url)` → `text`; `*`, `_` used as emphasis, `` ` ``
/// and `>` line markers removed; typographic quotes and dashes mapped to ASCII; whitespace runs
/// collapsed to one space; trimmed.
pub fn plain_text(s: &str) -> String {
    let nfkc = crate::text::nfkc(s);
    let unlinked = strip_link_targets(&nfkc);
    let mut out = String::with_capacity(unlinked.len());
    let mut space = false;
    for c in unlinked.chars() {
        let c = match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{2032}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{2033}' | '«' | '»' => '"',
            '\u{2013}' | '\u{2014}' | '\u{2212}' => '-',
            '*' | '`' => continue,
            c => c,
        };
        if c.is_whitespace() || c == '>' && (out.is_empty() || space) {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    // `_` as emphasis: drop underscores at word edges, keep snake_case.
    let chars: Vec<char> = out.chars().collect();
    let mut cleaned = String::with_capacity(out.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            let inner =
                prev.is_some_and(char::is_alphanumeric) && next.is_some_and(char::is_alphanumeric);
            if !inner {
                continue;
            }
        }
        cleaned.push(c);
    }
    cleaned
}

/// `[text](target)` → `text` (one level, no nesting); images `![alt](src)` → `alt`.
fn strip_link_targets(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find('[') {
        let Some(close_rel) = rest[open..].find("](") else {
            break;
        };
        let close = open + close_rel;
        let Some(end_rel) = rest[close + 2..].find(')') else {
            break;
        };
        let end = close + 2 + end_rel;
        if rest[open + 1..close].contains('[') {
            out.push_str(&rest[..open + 1]);
            rest = &rest[open + 1..];
            continue;
        }
        let before = rest[..open].strip_suffix('!').unwrap_or(&rest[..open]);
        out.push_str(before);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Footnote labels referenced in `text` (`[^label]` not followed by `:` at a line start), in order
/// of first use.
pub fn footnote_refs(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("[^") {
        let after = &rest[i + 2..];
        match after.find(']') {
            Some(j) if j > 0 && !after[..j].contains(char::is_whitespace) => {
                let label = &after[..j];
                let is_def = after[j + 1..].starts_with(':');
                let at_line_start = i == 0 || rest[..i].ends_with('\n');
                let definition = is_def && at_line_start;
                if !definition && !out.iter().any(|l| l == label) {
                    out.push(label.to_string());
                }
                rest = &after[j + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

/// `text` without footnote references (`[^label]`, and the spaces before one); definitions'
/// labels at a line start are kept.
pub(crate) fn without_refs(text: &str) -> String {
    retain_refs(text, |_| false)
}

/// `text` with only the footnote references (`[^label]`) whose label `keep` accepts; a dropped
/// reference takes the spaces before it along. A definition's label (`[^label]:` at a line
/// start) is never a reference and always stays.
pub fn retain_refs(text: &str, keep: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("[^") {
        let after = &rest[i + 2..];
        match after.find(']') {
            Some(j) if j > 0 && !after[..j].contains(char::is_whitespace) => {
                let at_line_start = i == 0 || rest[..i].ends_with('\n');
                let is_def = after[j + 1..].starts_with(':') && at_line_start;
                out.push_str(&rest[..i]);
                if is_def || keep(&after[..j]) {
                    out.push_str(&rest[i..i + 2 + j + 1]);
                } else {
                    while out.ends_with(' ') {
                        out.pop();
                    }
                }
                rest = &after[j + 1..];
            }
            _ => {
                out.push_str(&rest[..i + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `text` without any `[^label]` footnote references.
pub fn strip_refs(text: &str) -> String {
    without_refs(text).trim().to_string()
}

/// `body` (markdown) without its footnotes: every footnote reference (`[^c1a2b3c4d5]`, and the
/// spaces before it) and every footnote definition (from its line's indentation to its last
/// non-blank character, so the blocks around it keep their separation) are cut out, as the
/// markdown parser finds them (ENABLE_FOOTNOTES): a `[^…]` inside code stays, and so does one
/// whose label has no definition (it is text). An answer cites pages, not footnotes, and a definition
/// repeats a quote the page already states: on the benchmark's wiki the references alone were
/// 9 % of the page text an answer was given (BENCHMARKS.md "Query tokens").
pub fn without_footnotes(body: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag};
    let mut cuts: Vec<std::ops::Range<usize>> = Vec::new();
    let parser = Parser::new_ext(body, Options::ENABLE_FOOTNOTES | Options::ENABLE_TABLES);
    for (event, range) in parser.into_offset_iter() {
        match event {
            Event::FootnoteReference(_) => {
                let start = body[..range.start].trim_end_matches([' ', '\t']).len();
                cuts.push(start..range.end);
            }
            Event::Start(Tag::FootnoteDefinition(_)) => {
                // From the start of its line when only indentation precedes it; up to its last
                // non-blank character (a definition's range takes the blank lines after it).
                let before = &body[..range.start];
                let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                let start = if before[line_start..].trim().is_empty() {
                    line_start
                } else {
                    range.start
                };
                let end = range.start + body[range.clone()].trim_end().len();
                cuts.push(start..end);
            }
            _ => {}
        }
    }
    if cuts.is_empty() {
        return body.to_string();
    }
    let mut out = String::with_capacity(body.len());
    let mut at = 0;
    for c in cuts {
        if c.start >= at {
            out.push_str(&body[at..c.start]);
            at = c.end;
        } else {
            at = at.max(c.end);
        }
    }
    out.push_str(&body[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footnote_refs_skip_definitions() {
        let body = "A [^c1] and [^c2] and [^c1].\n\n[^c2]: def\n[^note]";
        assert_eq!(footnote_refs(body), vec!["c1", "c2", "note"]);
    }

    #[test]
    fn footnotes_are_cut_but_code_keeps_its_brackets() {
        let body = "Rust has an owner [^c1a2b3c4d5]. 所有权[^c9f8e7d6c5]规则。\n\n\
- a fact [^c0000000001]\n- `grep '[^c1a2b3c4d5]'` stays\n\n\
```\nlet re = \"[^c1a2b3c4d5]\";\n```\n\n\
See [the [^x] docs](https://e.x/[^y]).\n\n\
[^c1a2b3c4d5]: \"Each value in Rust has an owner.\" — [[Ownership]]\n\
[^c9f8e7d6c5]: 引文\n[^c0000000001]: q\n";
        let out = without_footnotes(body);
        assert_eq!(
            out.trim_end(),
            "Rust has an owner. 所有权规则。\n\n- a fact\n- `grep '[^c1a2b3c4d5]'` stays\n\n\
```\nlet re = \"[^c1a2b3c4d5]\";\n```\n\nSee [the [^x] docs](https://e.x/[^y])."
        );
        // Nothing to cut: the body as it was.
        assert_eq!(without_footnotes("a [b] c"), "a [b] c");
        // A definition inside a list item or a block quote: the blocks around it stay apart.
        assert_eq!(
            without_footnotes("- item [^a]\n\n  [^a]: d\n- next\n"),
            "- item\n\n\n- next\n"
        );
        assert_eq!(
            without_footnotes("> quoted [^a]\n>\n> [^a]: d\n\nafter\n"),
            "> quoted\n>\n> \n\nafter\n"
        );
    }
}
