//! Merging two pages ([`super::Fix::MergePages`]) in memory: the links into the merged page
//! rewritten, its names, tags, sources and body taken over by the survivor.
//!
//! *Invariant:* only links that resolve to the merged page change, and no page is left linking
//! to itself.

use crate::error::{Error, Result};
use crate::markdown::resolve::{fold_name, Resolution, Resolver};
use crate::markdown::wikilinks;
use crate::model::Page;

/// Merges page `merged` into `survivor` in `pages` (see [`Fix::MergePages`](super::Fix::MergePages); `pages` holds
/// the two and every page linking to `merged`, `resolver` resolves over every page) and returns
/// the merged page, removed from `pages`. Only links that resolve to `merged` are rewritten.
pub(super) fn merge_pages(
    pages: &mut Vec<Page>,
    resolver: &Resolver,
    survivor: &str,
    merged: &str,
) -> Result<Page> {
    if survivor == merged {
        return Err(Error::InvalidInput(
            "a page cannot be merged into itself".into(),
        ));
    }
    if !pages.iter().any(|p| p.key == survivor) {
        return Err(Error::NotFound(format!("page {survivor:?}")));
    }
    if !pages.iter().any(|p| p.key == merged) {
        return Err(Error::NotFound(format!("page {merged:?}")));
    }
    let to = |key: &str| Resolution::Page(key.to_string());
    // Links into the merged page, everywhere: to the survivor, or text on the survivor itself.
    for p in pages.iter_mut() {
        let on_survivor = p.key == survivor;
        let on_merged = p.key == merged;
        let from = p.key.clone();
        p.body = wikilinks::rewrite(&p.body, |l| {
            let r = resolver.resolve_link(l, Some(&from));
            let into_merged = r == to(merged);
            // The merged body moves onto the survivor: its links to the survivor become text too.
            let into_survivor_from_merged = on_merged && r == to(survivor);
            if !(into_merged || into_survivor_from_merged) {
                return None;
            }
            if on_survivor || on_merged {
                return Some(l.as_plain_text());
            }
            Some(wikilinks::write_link(
                l.embed,
                survivor,
                l.fragment.as_ref(),
                Some(l.alias.as_deref().unwrap_or(&l.target)),
                l.in_table,
            ))
        });
    }
    let gone = pages.remove(
        pages
            .iter()
            .position(|p| p.key == merged)
            .expect("checked above"),
    );
    let s = pages
        .iter_mut()
        .find(|p| p.key == survivor)
        .expect("checked above");
    let mut names: Vec<String> = s.aliases.clone();
    for n in std::iter::once(&gone.title).chain(&gone.aliases) {
        let f = fold_name(n);
        if f != fold_name(&s.title) && !names.iter().any(|a| fold_name(a) == f) {
            names.push(n.clone());
        }
    }
    s.aliases = names;
    for t in &gone.tags {
        if !s.tags.contains(t) {
            s.tags.push(t.clone());
        }
    }
    for k in &gone.sources {
        if !s.sources.contains(k) {
            s.sources.push(k.clone());
        }
    }
    if s.summary.trim().is_empty() {
        s.summary = gone.summary.clone();
    }
    if !gone.body.trim().is_empty() {
        s.body = format!(
            "{}\n\n## {}\n\n{}\n",
            s.body.trim_end(),
            gone.title,
            gone.body.trim()
        );
    }
    Ok(gone)
}
