//! Citation checks (F32): every `[[link]]` of an answer that names a page the answer was given
//! is kept (written with the page's key); every `[^id]` footnote marker naming a source passage
//! it was given is kept, and gets its definition in Decision 3's form (the source's summary page
//! linked, the passage quoted verbatim, whitespace folded); every other citation is removed and
//! counted, and the spaces it leaves are tidied. *Invariant:* every citation kept names a page or
//! a passage given to the model, and every footnote marker kept has exactly one definition.

use std::collections::BTreeSet;

use crate::markdown::resolve::{Resolution, Resolver};
use crate::markdown::wikilinks;

use super::model::Given;
use super::SourceCitation;

/// An answer after its citations were checked.
pub(super) struct Checked {
    /// The answer with only the citations kept.
    pub(super) answer: String,
    /// Keys of the pages cited, in order of first citation.
    pub(super) citations: Vec<String>,
    /// Targets of the citations removed, as written, in order.
    pub(super) removed: Vec<String>,
    /// The source passages cited, in order of first citation.
    pub(super) sources: Vec<SourceCitation>,
}

/// Checks the citations of `raw` against `given` (pages and source passages), resolving page
/// link targets with `resolver`.
pub(super) fn check(raw: &str, given: &[Given], resolver: &Resolver) -> Checked {
    let allowed: BTreeSet<&str> = given
        .iter()
        .filter(|g| g.passage.is_none())
        .map(|g| g.key.as_str())
        .collect();
    let passage_ids: BTreeSet<&str> = given
        .iter()
        .filter(|g| g.passage.is_some())
        .map(|g| g.key.as_str())
        .collect();
    let mut citations: Vec<String> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    // Definitions the model wrote itself are dropped: the app writes them from what it gave.
    let raw: String = raw
        .lines()
        .filter(|l| !footnote_definition_line(l))
        .collect::<Vec<_>>()
        .join("\n");
    let answer = wikilinks::rewrite(&raw, |l| {
        // `[[^s1]]`: a passage cited in page form, written as its footnote marker.
        if let Some(id) = l.target.strip_prefix('^') {
            return Some(if passage_ids.contains(id) {
                format!("[^{id}]")
            } else {
                removed.push(l.target.clone());
                String::new()
            });
        }
        match resolver.resolve_link(l, None) {
            Resolution::Page(k) if allowed.contains(k.as_str()) => {
                if !citations.contains(&k) {
                    citations.push(k.clone());
                }
                let alias = l
                    .alias
                    .clone()
                    .or_else(|| (k != l.target).then(|| l.target.clone()));
                Some(wikilinks::write_link(
                    false,
                    &k,
                    l.fragment.as_ref(),
                    alias.as_deref(),
                    l.in_table,
                ))
            }
            _ => {
                removed.push(l.target.clone());
                Some(String::new())
            }
        }
    });
    let (answer, cited) = footnote_markers(&answer, &passage_ids, &mut removed);
    let mut answer = tidy_spaces(&answer);
    let mut sources = Vec::new();
    for id in &cited {
        let Some(g) = given.iter().find(|g| g.passage.is_some() && &g.key == id) else {
            continue;
        };
        let p = g.passage.as_ref().expect("filtered above");
        let quote = g.text.split_whitespace().collect::<Vec<_>>().join(" ");
        sources.push(SourceCitation {
            id: id.clone(),
            source: p.source.clone(),
            version: p.version.clone(),
            source_title: p.source_title.clone(),
            heading: p.heading.clone(),
            lines: p.lines,
            summary_page: p.summary_page.clone(),
            quote,
        });
    }
    if !sources.is_empty() {
        answer.push('\n');
        for c in &sources {
            answer.push('\n');
            answer.push_str(&c.footnote());
        }
    }
    Checked {
        answer,
        citations,
        removed,
        sources,
    }
}

/// True for a footnote definition line (`[^id]: …`).
fn footnote_definition_line(line: &str) -> bool {
    let t = line.trim_start();
    t.strip_prefix("[^")
        .and_then(|r| r.split_once("]:"))
        .is_some_and(|(id, _)| !id.is_empty() && !id.contains([' ', ']']))
}

/// Keeps the `[^id]` markers of `text` whose id is in `ids` and removes the others (their ids go
/// to `removed`); returns the text and the ids kept, in order of first use.
fn footnote_markers(
    text: &str,
    ids: &BTreeSet<&str>,
    removed: &mut Vec<String>,
) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut cited: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("[^") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after.find(']').filter(|&e| {
            e > 0
                && after[..e]
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        });
        match end {
            Some(e) => {
                let id = &after[..e];
                if ids.contains(id) {
                    out.push_str(&rest[at..at + 2 + e + 1]);
                    if !cited.iter().any(|c| c == id) {
                        cited.push(id.to_string());
                    }
                } else {
                    removed.push(format!("^{id}"));
                }
                rest = &after[e + 1..];
            }
            None => {
                out.push_str("[^");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    (out, cited)
}

/// Collapses the double spaces a removed citation leaves, and spaces before punctuation.
fn tidy_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.split('\n') {
        if !out.is_empty() || s.starts_with('\n') {
            out.push('\n');
        }
        let mut prev_space = false;
        let mut l = String::new();
        for c in line.chars() {
            if c == ' ' {
                if !prev_space {
                    l.push(c);
                }
                prev_space = true;
            } else {
                if prev_space && matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | '。' | '，') {
                    l.pop();
                }
                l.push(c);
                prev_space = false;
            }
        }
        out.push_str(l.trim_end());
    }
    out
}
