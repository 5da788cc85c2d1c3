//! Claims across sources: which stored claims a source is checked against, the app's checks on a
//! contradiction the model proposed ([`check_contradiction`]), the canonical copy of a claim
//! stated on several pages, and the map of summary pages a commit's footnotes name
//! ([`source_page_map`]).
//!
//! *Invariant:* pure functions of the claims and pages given.

use std::collections::{BTreeMap, HashMap};

use super::report::{RejectReason, RejectedContradiction};
use crate::compile::provenance::quote_occurs;
use crate::markdown::page_body::summary_pages;
use crate::markdown::plain::plain_text;
use crate::model::{Claim, Page, PageKind, Source};

/// The existing claims an extract call of `source_key` checks for contradictions: every other
/// source's, one line per (source, quote) — the claim on the most specific page (`canonical`:
/// [`canonical_ids`]).
pub(super) fn claims_to_check<'a>(
    claims: &'a BTreeMap<String, Claim>,
    canonical: &'a HashMap<String, String>,
    source_key: &'a str,
) -> impl Iterator<Item = &'a Claim> {
    claims.values().filter(move |c| {
        // Only a verified, asserted claim can be a side of a record: no other is offered.
        c.source_key != source_key
            && c.verified
            && c.stance.is_asserted()
            && canonical.get(&c.id) == Some(&c.id)
    })
}

/// The app's checks on a contradiction the model proposed (the model's word opens nothing):
/// the existing claim it names is another source's, verified and asserted; the quote it gives
/// occurs verbatim in this source (`source_plain`, [`plain_text`]) and is the quote of a new
/// claim this source asserts; and a copy of each claim is on one page (the most specific such
/// page, [`claim_rank`]). Returns the two claims on that page, or why not.
pub(super) fn check_contradiction<'a>(
    cand: &crate::compile::extract::CandidateContradiction,
    claims_after: &'a BTreeMap<String, Claim>,
    new_claims: &'a BTreeMap<String, Claim>,
    pages: &BTreeMap<String, Page>,
    source_key: &str,
    source_plain: &str,
) -> std::result::Result<(&'a Claim, &'a Claim), RejectedContradiction> {
    let reject = |pages: Vec<String>, quotes: Vec<String>, reason| RejectedContradiction {
        pages,
        quotes,
        reason,
    };
    let Some(existing) = claims_after.get(cand.existing_claim.trim()) else {
        return Err(reject(
            vec![],
            vec![cand.quote.clone()],
            RejectReason::UnknownClaim,
        ));
    };
    let quotes = vec![existing.quote.clone(), cand.quote.clone()];
    let pages_of = |claims: &[&Claim]| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for c in claims {
            if !v.contains(&c.page) {
                v.push(c.page.clone());
            }
        }
        v
    };
    if existing.source_key == source_key {
        return Err(reject(
            vec![existing.page.clone()],
            quotes,
            RejectReason::SameSource,
        ));
    }
    if !existing.verified {
        return Err(reject(
            vec![existing.page.clone()],
            quotes,
            RejectReason::UnverifiedExisting,
        ));
    }
    if !existing.stance.is_asserted() {
        return Err(reject(
            vec![existing.page.clone()],
            quotes,
            RejectReason::ExistingNotAsserted,
        ));
    }
    if !quote_occurs(&cand.quote, source_plain) {
        return Err(reject(
            vec![existing.page.clone()],
            quotes,
            RejectReason::QuoteNotInSource,
        ));
    }
    // The new claim: this source's claim whose quote is the one proposed (or contains it, or is
    // contained in it: a model may quote a clause of the sentence).
    let cq = plain_text(&cand.quote);
    let news: Vec<&Claim> = new_claims
        .values()
        .filter(|c| {
            let q = plain_text(&c.quote);
            c.verified && !q.is_empty() && (q == cq || q.contains(&cq) || cq.contains(&q))
        })
        .collect();
    if news.is_empty() {
        return Err(reject(
            vec![existing.page.clone()],
            quotes,
            RejectReason::NoSuchClaim,
        ));
    }
    let asserted: Vec<&Claim> = news
        .iter()
        .copied()
        .filter(|c| c.stance.is_asserted())
        .collect();
    if asserted.is_empty() {
        let mut p = vec![existing.page.clone()];
        p.extend(pages_of(&news).into_iter().filter(|k| *k != existing.page));
        return Err(reject(p, quotes, RejectReason::NotAsserted));
    }
    // Copies of the existing claim (same source and quote) on every page that states it.
    let eq = plain_text(&existing.quote);
    let olds: Vec<&Claim> = claims_after
        .values()
        .filter(|c| c.source_key == existing.source_key && plain_text(&c.quote) == eq)
        .collect();
    let kind = |c: &Claim| pages.get(&c.page).map(|p| p.kind);
    let best = olds
        .iter()
        .filter_map(|o| {
            asserted
                .iter()
                .filter(|n| n.page == o.page)
                .min_by_key(|n| n.id.clone())
                .map(|n| (*o, *n))
        })
        .min_by_key(|(o, _)| claim_rank(o, kind(o)));
    match best {
        Some(pair) => Ok(pair),
        None => {
            let canonical = canonical_claim(existing, claims_after, pages);
            let mut p = vec![canonical.page.clone()];
            p.extend(
                pages_of(&asserted)
                    .into_iter()
                    .filter(|k| *k != canonical.page),
            );
            Err(reject(p, quotes, RejectReason::DifferentPages))
        }
    }
}

/// How claims with the same source and quote are ranked to pick the one a contradiction names:
/// claims on an entity, concept or other non-source page first, then the smallest page key.
/// `page_kind`: the kind of the claim's page, `None` when there is no such page.
pub(super) fn claim_rank(c: &Claim, page_kind: Option<PageKind>) -> (bool, String) {
    (
        page_kind.is_none_or(|k| k == PageKind::Source),
        c.page.clone(),
    )
}

/// Among claims with the same source and quote, the one a contradiction should name
/// ([`claim_rank`]).
pub(super) fn canonical_claim<'a>(
    claim: &'a Claim,
    all: &'a BTreeMap<String, Claim>,
    pages: &BTreeMap<String, Page>,
) -> &'a Claim {
    let q = plain_text(&claim.quote);
    all.values()
        .filter(|c| c.source_key == claim.source_key && plain_text(&c.quote) == q)
        .min_by_key(|c| claim_rank(c, pages.get(&c.page).map(|p| p.kind)))
        .unwrap_or(claim)
}

/// [`canonical_claim`] for every claim at once (one pass): claim id → canonical claim id.
pub(super) fn canonical_ids(
    all: &BTreeMap<String, Claim>,
    pages: &[Page],
) -> HashMap<String, String> {
    let kinds: HashMap<&str, PageKind> = pages.iter().map(|p| (p.key.as_str(), p.kind)).collect();
    let mut best: HashMap<(String, String), (bool, String, String)> = HashMap::new();
    let mut group_of: Vec<(String, (String, String))> = Vec::with_capacity(all.len());
    for c in all.values() {
        let group = (c.source_key.clone(), plain_text(&c.quote));
        let (is_source, page) = claim_rank(c, kinds.get(c.page.as_str()).copied());
        let candidate = (is_source, page, c.id.clone());
        match best.get(&group) {
            Some(b) if *b <= candidate => {}
            _ => {
                best.insert(group.clone(), candidate);
            }
        }
        group_of.push((c.id.clone(), group));
    }
    group_of
        .into_iter()
        .map(|(id, g)| (id, best[&g].2.clone()))
        .collect()
}

/// Source key → (summary page key, title), for footnote definitions.
pub(in crate::compile) fn source_page_map(
    sources: &BTreeMap<String, Source>,
    pages: &BTreeMap<String, Page>,
    this_key: &str,
    this_page: &str,
    this_title: &str,
) -> BTreeMap<String, (String, String)> {
    let mut m = summary_pages(sources, pages);
    m.insert(
        this_key.to_string(),
        (this_page.to_string(), this_title.to_string()),
    );
    m
}
