//! Citation checks (F32): every `[[link]]` of an answer that names a page the answer was given
//! is kept (written with the page's key); every other one is removed and counted, and the spaces
//! it leaves are tidied. *Invariant:* every citation kept names a page given to the model.

use std::collections::BTreeSet;

use crate::markdown::resolve::{Resolution, Resolver};
use crate::markdown::wikilinks;

/// An answer after its citations were checked.
pub(super) struct Checked {
    /// The answer with only the citations kept.
    pub(super) answer: String,
    /// Keys of the pages cited, in order of first citation.
    pub(super) citations: Vec<String>,
    /// Targets of the citations removed, as written, in order.
    pub(super) removed: Vec<String>,
}

/// Checks the citations of `raw` against the pages `given` (key, title, text), resolving link
/// targets with `resolver`.
pub(super) fn check(raw: &str, given: &[(String, String, String)], resolver: &Resolver) -> Checked {
    let allowed: BTreeSet<&str> = given.iter().map(|(k, _, _)| k.as_str()).collect();
    let mut citations: Vec<String> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    let answer = wikilinks::rewrite(raw, |l| match resolver.resolve_link(l, None) {
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
    });
    Checked {
        answer: tidy_spaces(&answer),
        citations,
        removed,
    }
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
