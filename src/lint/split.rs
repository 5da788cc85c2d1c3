//! Splitting a page past the soft limit ([`super::Fix::SplitPage`]) in memory: its blocks kept
//! while they fit, the rest moved to new `<title> (part N)` pages.
//!
//! *Invariant:* a human paragraph (Decision 5) never moves off the page.

use std::collections::BTreeSet;

use crate::error::{Error, Result};
use crate::model::{limits, Page};

/// Bytes and facts a part made by [`split_page`] is filled to: three quarters of the soft
/// limits, so a part has room to grow before lint reports it.
const PART_BYTES: usize = limits::SOFT_BYTES * 3 / 4;
const PART_FACTS: usize = limits::SOFT_FACTS * 3 / 4;

/// Splits page `key` of `pages` ([`Fix::SplitPage`](super::Fix::SplitPage)): the app's regenerated sections aside, the
/// page keeps its blocks in order while they fit in [`PART_BYTES`] and [`PART_FACTS`], and every
/// human paragraph (`human`, Decision 5: never moved); the blocks after go, in order, to new pages
/// `<title> (part N)` (pushed to `pages`, with keys not in `taken`), each filled the same way,
/// each section's heading repeated where its blocks continue. The page ends with a `## Parts`
/// list of links to its parts. Returns the new keys.
///
/// Errors: [`Error::NotFound`]; [`Error::InvalidInput`] when nothing would move.
pub(super) fn split_page(
    pages: &mut Vec<Page>,
    key: &str,
    human: &[String],
    taken: &mut BTreeSet<String>,
    now: i64,
) -> Result<Vec<String>> {
    use crate::markdown::blocks::{blocks, BlockKind};
    use crate::markdown::plain::footnote_refs;
    let page = pages
        .iter()
        .find(|p| p.key == key)
        .cloned()
        .ok_or_else(|| Error::NotFound(format!("page {key:?}")))?;
    let body = crate::markdown::page_body::strip_app_sections(&page.body);
    let is_human = |text: &str| {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        !flat.is_empty() && human.iter().any(|h| h.contains(&flat))
    };
    /// One page being filled: its blocks, size, facts and the section heading it is in.
    #[derive(Default)]
    struct Fill<'a> {
        blocks: Vec<&'a str>,
        bytes: usize,
        facts: usize,
        heading: Option<&'a str>,
    }
    impl<'a> Fill<'a> {
        fn fits(&self, b: &str) -> bool {
            self.blocks.is_empty()
                || (self.bytes + b.len() + 2 <= PART_BYTES
                    && self.facts + footnote_refs(b).len() <= PART_FACTS)
        }
        fn push(&mut self, heading: Option<&'a str>, b: &'a str) {
            if let Some(h) = heading.filter(|_| heading != self.heading) {
                self.blocks.push(h);
                self.bytes += h.len() + 2;
                self.heading = heading;
            }
            self.bytes += b.len() + 2;
            self.facts += footnote_refs(b).len();
            self.blocks.push(b);
        }
    }
    let mut kept = Fill::default();
    let mut parts: Vec<Fill> = Vec::new();
    let mut heading: Option<&str> = None;
    for b in blocks(&body) {
        let text = &body[b.range.clone()];
        if matches!(b.kind, BlockKind::Heading(l) if l <= 2) {
            heading = Some(text);
            continue;
        }
        if is_human(text) || (parts.is_empty() && kept.fits(text)) {
            kept.push(heading, text);
            continue;
        }
        if parts.last().is_none_or(|p| !p.fits(text)) {
            parts.push(Fill::default());
        }
        parts.last_mut().expect("one").push(heading, text);
    }
    if parts.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{}: nothing the app or the model wrote can move to a part",
            page.title
        )));
    }
    let mut keys = Vec::new();
    let mut links = Vec::new();
    for (n, part) in parts.iter().enumerate() {
        let title = format!("{} (part {})", page.title, n + 2);
        let k = crate::markdown::keys::readable_unique_key(&title, page.kind.as_str(), taken);
        taken.insert(crate::markdown::keys::fold_key(&k));
        links.push(format!(
            "- {}",
            crate::markdown::wikilinks::link_to(&k, &title)
        ));
        pages.push(Page {
            key: k.clone(),
            title,
            kind: page.kind,
            summary: String::new(),
            aliases: vec![],
            tags: page.tags.clone(),
            sources: page.sources.clone(),
            created: now,
            updated: now,
            body: format!("{}\n", part.blocks.join("\n\n")),
            revision: 0,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        });
        keys.push(k);
    }
    let text = format!(
        "{}\n\n## Parts\n\n{}\n",
        kept.blocks.join("\n\n"),
        links.join("\n")
    );
    if let Some(p) = pages.iter_mut().find(|p| p.key == key) {
        p.body = crate::markdown::dedup::dedup(&text, human);
    }
    Ok(keys)
}
