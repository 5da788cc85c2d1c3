//! The link checks of a lint: every link of a page resolved (broken, ambiguous, to a missing
//! heading, block or attachment, malformed), the likely target of a broken one, and the names
//! linked from several pages that have no page.
//!
//! *Invariant:* a proposed target is never the linking page itself.

use std::collections::{BTreeMap, BTreeSet};

use super::{finding, Finding, FindingKind, Fix, Severity};
use crate::markdown::keys::match_key;
use crate::markdown::resolve::{attachment_extension, fold_name, Resolution, Resolver};
use crate::markdown::wikilinks::{self, Fragment, Item, WikiLink};
use crate::model::Page;
use crate::page_table::PageTable;

/// Link target as written → keys of the pages linking it, for the targets without a page.
pub(super) type MissingTargets = BTreeMap<String, BTreeSet<String>>;

/// Levenshtein distance over characters (Levenshtein 1966), for "did you mean" targets.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Every page name's match key, computed once for a lint run.
pub(super) struct NameKeys {
    /// (page key, match key of its title or one alias).
    keys: Vec<(String, String)>,
}

impl NameKeys {
    pub(super) fn of(pages: &[Page]) -> Self {
        NameKeys {
            keys: pages
                .iter()
                .flat_map(|p| {
                    std::iter::once(&p.title)
                        .chain(&p.aliases)
                        .map(move |n| (p.key.clone(), match_key(n)))
                })
                .collect(),
        }
    }

    /// The page a broken target most likely meant (never the linking page itself): the smallest
    /// edit distance between match keys, accepted within a third of the target's length or when
    /// one name begins with the other (at least four characters: "Tokio runtime" → "Tokio").
    pub(super) fn likely_target(&self, target: &str, self_key: &str) -> Option<String> {
        let t = match_key(target);
        if t.is_empty() {
            return None;
        }
        let limit = (t.chars().count() / 3).max(1);
        self.keys
            .iter()
            .filter(|(p, _)| p != self_key)
            .filter_map(|(p, k)| {
                let d = edit_distance(&t, k);
                let (short, long) = if k.len() <= t.len() { (k, &t) } else { (&t, k) };
                let prefix = short.chars().count() >= 4 && long.starts_with(short.as_str());
                (d <= limit || prefix).then(|| (d, p.clone()))
            })
            .min()
            .map(|(_, k)| k)
    }
}

/// The findings about the links of page `p` (malformed, missing attachment, broken, ambiguous,
/// missing heading or block), in the order they occur; each broken target is added to `missing`.
pub(super) fn link_findings(
    p: &Page,
    resolver: &Resolver,
    table: &PageTable,
    names: &NameKeys,
    missing: &mut MissingTargets,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for item in wikilinks::scan(&p.body) {
        match item {
            Item::Malformed(m) => out.push(finding(
                FindingKind::MalformedLink,
                Severity::Warning,
                &p.key,
                vec![],
                format!(
                    "malformed link {}{}",
                    m.text,
                    m.repair
                        .as_ref()
                        .map(|r| format!(" (probably {r})"))
                        .unwrap_or_default()
                ),
                None,
            )),
            Item::Link(l) => match resolver.resolve_link(&l, Some(&p.key)) {
                Resolution::Missing if l.embed && attachment_extension(&l.target).is_some() => out
                    .push(finding(
                        FindingKind::MissingAttachment,
                        Severity::Error,
                        &p.key,
                        vec![],
                        format!("missing attachment {}", l.target),
                        None,
                    )),
                Resolution::Missing => {
                    missing
                        .entry(l.target.clone())
                        .or_default()
                        .insert(p.key.clone());
                    out.push(broken_link(p, &l, names));
                }
                Resolution::Ambiguous(keys) => out.push(finding(
                    FindingKind::AmbiguousLink,
                    Severity::Warning,
                    &p.key,
                    keys.clone(),
                    format!("[[{}]] could mean any of: {}", l.target, keys.join(", ")),
                    None,
                )),
                Resolution::Page(to) => out.extend(fragment_finding(p, &l, &to, resolver, table)),
                Resolution::Asset(_) => {}
            },
        }
    }
    out
}

/// The finding of link `l` on page `p` that resolves to nothing, with its fix: pointed at the
/// likely target ([`NameKeys::likely_target`]), else made plain text.
fn broken_link(p: &Page, l: &WikiLink, names: &NameKeys) -> Finding {
    let fix = match names.likely_target(&l.target, &p.key) {
        Some(to) => Fix::RewriteLink {
            page: p.key.clone(),
            from: l.target.clone(),
            to,
        },
        None => Fix::UnlinkBroken {
            page: p.key.clone(),
            target: l.target.clone(),
        },
    };
    finding(
        FindingKind::BrokenLink,
        Severity::Error,
        &p.key,
        vec![],
        format!("broken link [[{}]]", l.target),
        Some(fix),
    )
}

/// The finding of link `l` on page `p`, resolving to page `to`, whose heading or block the page
/// `to` does not have (none when it has it, or when the `#` is part of the name: `[[C#]]`).
fn fragment_finding(
    p: &Page,
    l: &WikiLink,
    to: &str,
    resolver: &Resolver,
    table: &PageTable,
) -> Option<Finding> {
    let target = table.get(to);
    // `[[C#]]`: the `#` is part of the name, not a heading.
    let whole = resolver.fragment_is_name(l);
    match (&l.fragment, target) {
        (Some(Fragment::Heading(_)), Some(_)) if whole => None,
        (Some(Fragment::Heading(h)), Some(t))
            if !t
                .headings
                .contains(&fold_name(h.rsplit('#').next().unwrap_or(h))) =>
        {
            Some(finding(
                FindingKind::MissingHeading,
                Severity::Warning,
                &p.key,
                vec![to.to_string()],
                format!("[[{}#{h}]]: {} has no heading \"{h}\"", l.target, t.title),
                None,
            ))
        }
        (Some(Fragment::Block(b)), Some(t)) if !t.blocks.contains(b) => Some(finding(
            FindingKind::MissingBlock,
            Severity::Warning,
            &p.key,
            vec![to.to_string()],
            format!("[[{}#^{b}]]: {} has no block ^{b}", l.target, t.title),
            None,
        )),
        _ => None,
    }
}

/// The links to names without a page on the pages `linted` leaves out, from their rows (a
/// scoped lint reads only its own pages' bodies).
pub(super) fn missing_targets_elsewhere(
    table: &PageTable,
    resolver: &Resolver,
    linted: impl Fn(&str) -> bool,
) -> MissingTargets {
    let mut missing = MissingTargets::new();
    for r in table.rows().filter(|r| !linted(&r.key)) {
        for t in &r.links {
            if attachment_extension(t).is_none() && resolver.resolve(t) == Resolution::Missing {
                missing.entry(t.clone()).or_default().insert(r.key.clone());
            }
        }
    }
    missing
}

/// Names linked from two or more pages (one of them linted) that have no page, each with the
/// fix that creates it.
pub(super) fn missing_page_findings(
    missing: &MissingTargets,
    linted: impl Fn(&str) -> bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (target, on) in missing {
        if on.len() >= 2 && on.iter().any(|k| linted(k)) {
            let on: Vec<String> = on.iter().cloned().collect();
            out.push(finding(
                FindingKind::MissingPage,
                Severity::Warning,
                "",
                on.clone(),
                format!(
                    "[[{target}]] is linked from {} pages but has no page",
                    on.len()
                ),
                Some(Fix::CreatePage {
                    title: target.clone(),
                    mentioned_on: on,
                }),
            ));
        }
    }
    out
}
