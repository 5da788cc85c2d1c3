//! Removing a source: the inverse of ingest + compile, as one operation, with no model calls.
//!
//! *Invariant:* after [`Wiki::remove_source`], no claim, footnote, `sources` entry or link refers to
//! the removed source or its summary page, every open contradiction that rested on one of its
//! claims is closed, and every link that resolved before and did not point at the summary page
//! still resolves. The raw bytes stay in `raw/` (content-addressed and immutable, so re-adding the
//! same text costs nothing and earlier revisions stay readable).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::pipeline::{Snapshot, FAILURE_PREFIX, PROPOSAL_PREFIX};
use crate::clock::{Clock, Millis};
use crate::error::{Error, Result};
use crate::markdown::page_body::{finalize_body, summary_pages, Finalize};
use crate::markdown::resolve::Resolver;
use crate::model::MoreFacts;
use crate::model::{
    Author, Claim, Contradiction, ContradictionStatus, OpId, OperationKind, Page, Source,
};
use crate::storage::{Expect, Storage, Store};
use crate::wiki::unlink_page;
use crate::wiki::{to_json, OpBuilder, Wiki};

/// What [`Wiki::remove_source`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct RemoveSourceReport {
    /// The removed source's key.
    pub key: String,
    /// Its summary page, deleted with it (`None` when it was never compiled).
    pub summary_page: Option<String>,
    /// The parts continuing the summary page, deleted with it.
    #[serde(default)]
    pub parts: Vec<String>,
    /// Pages rewritten: claims removed, the source pruned from `sources`, or links to the summary
    /// page turned into plain text. Sorted.
    pub updated: Vec<String>,
    /// Ids of the claims removed. Sorted.
    pub claims_removed: Vec<String>,
    /// Ids of the open contradictions closed because one side was a removed claim. Sorted.
    pub contradictions_closed: Vec<String>,
    /// The operation.
    pub op: OpId,
}

/// What removing a source takes away, worked out from the snapshot before anything is written.
struct Removal {
    /// The source removed.
    source: Source,
    /// When the operation runs (its records' times).
    now: Millis,
    /// The summary page, when it is still this source's (a renamed or deleted one is gone).
    summary: Option<String>,
    /// The parts continuing the summary page.
    parts: Vec<String>,
    /// The summary page and its parts: the pages deleted.
    gone_pages: Vec<String>,
    /// Ids of the source's claims.
    removed: BTreeSet<String>,
    /// The loaded claims without the removed ones, by id.
    claims_after: BTreeMap<String, Claim>,
    /// The loaded contradiction records, those resting on a removed claim closed.
    ledger_after: BTreeMap<String, Contradiction>,
    /// The records closed, as they are after closing.
    closed: Vec<Contradiction>,
}

impl Removal {
    /// The removal of `source` from `snap` (its pages loaded), in operation `op` at `now`: its
    /// summary page and parts, its claims, and the open contradictions resting on them, closed.
    fn of(snap: &Snapshot, source: Source, op: OpId, now: Millis) -> Removal {
        let summary = source
            .summary_page
            .clone()
            .filter(|k| snap.pages.contains_key(k));
        // The parts continuing it go with it.
        let parts: Vec<String> = source
            .parts
            .iter()
            .filter(|k| snap.pages.contains_key(*k) && Some(*k) != summary.as_ref())
            .cloned()
            .collect();
        let gone_pages: Vec<String> = summary.iter().chain(&parts).cloned().collect();
        let removed: BTreeSet<String> = crate::util::btree_set(
            snap.claims
                .values()
                .filter(|c| c.source_key == source.key)
                .map(|c| c.id.clone()),
        );
        let claims_after: BTreeMap<String, Claim> = crate::util::btree_map(
            snap.claims
                .iter()
                .filter(|(id, _)| !removed.contains(*id))
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        let mut closed: Vec<Contradiction> = Vec::new();
        let mut ledger_after = snap.ledger.clone();
        for r in ledger_after.values_mut() {
            if r.status == ContradictionStatus::Open && r.claims.iter().any(|c| removed.contains(c))
            {
                r.status = ContradictionStatus::Resolved;
                r.note = Some(format!("source removed: {}", source.title));
                r.closed_by = Some(op);
                closed.push(r.clone());
            }
        }
        Removal {
            source,
            now,
            summary,
            parts,
            gone_pages,
            removed,
            claims_after,
            ledger_after,
            closed,
        }
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Loads into `snap` the pages removing `source` may change, read alone: those stating its
    /// claims, listing it, counting its facts (a full page), linking its summary page or its
    /// parts, and the pages of the contradictions resting on its claims (loaded with the claim
    /// pages' records).
    async fn load_removal_pages(&self, snap: &mut Snapshot, source: &Source) -> Result<()> {
        self.load_source_claims(snap, &source.key).await?;
        let own: BTreeSet<String> = source
            .summary_page
            .iter()
            .chain(&source.parts)
            .filter(|k| snap.pages.contains_key(*k))
            .cloned()
            .collect();
        let graph = snap.table.link_graph();
        let mut reach: BTreeSet<String> = snap.claims.values().map(|c| c.page.clone()).collect();
        reach.extend(own.iter().cloned());
        for k in &own {
            reach.extend(graph.backlinks_of(k));
        }
        for r in snap.table.rows() {
            if r.sources.contains(&source.key) || r.more_facts > 0 {
                reach.insert(r.key.clone());
            }
        }
        reach.retain(|k| snap.pages.contains_key(k));
        self.load_pages(snap, &reach).await?;
        let record_pages: BTreeSet<String> = snap
            .ledger
            .values()
            .flat_map(|r| r.pages.iter().cloned())
            .filter(|k| !snap.loaded.contains(k) && snap.pages.contains_key(k))
            .collect();
        self.load_pages(snap, &record_pages).await
    }

    /// Writes into `ob` the loaded pages the removal changes (links to the gone pages turned into
    /// text, removed claims' lines and closed contradictions' callouts gone, the source pruned
    /// from `sources` and `more_facts`), as the app's edits. Returns their keys.
    async fn rewrite_pages_without(
        &self,
        ob: &mut OpBuilder,
        snap: &Snapshot,
        removal: &Removal,
    ) -> Result<Vec<String>> {
        let (op, source, now) = (ob.op.id, &removal.source, removal.now);
        // Pages whose text the removal changes: they hold a removed claim, show a closed
        // contradiction, or list the source.
        let closed_pages: BTreeSet<&String> =
            removal.closed.iter().flat_map(|r| r.pages.iter()).collect();
        let claim_pages: BTreeSet<&String> = snap
            .claims
            .values()
            .filter(|c| removal.removed.contains(&c.id))
            .map(|c| &c.page)
            .collect();

        let before: Vec<Page> = snap.pages.values().map(|(p, _)| p.clone()).collect();
        let resolver = Resolver::from_pages(&before);
        let after_map: BTreeMap<String, Page> = crate::util::btree_map(
            before
                .iter()
                .filter(|p| !removal.gone_pages.contains(&p.key))
                .map(|p| (p.key.clone(), p.clone())),
        );
        let titles: BTreeMap<String, String> =
            crate::util::btree_map(after_map.values().map(|p| (p.key.clone(), p.title.clone())));
        let mut others = snap.sources.clone();
        others.remove(&source.key);
        // Footnote definitions name the summary pages of the sources that remain.
        let source_pages = summary_pages(&others, &after_map);

        let mut updated = Vec::new();
        for page in after_map.values().filter(|p| snap.loaded.contains(&p.key)) {
            let mut body = page.body.clone();
            for gone in &removal.gone_pages {
                body = unlink_page(&body, &resolver, &page.key, gone);
            }
            // Facts the removed source held for this page, when it was full, are gone with it.
            let more: Vec<MoreFacts> = page
                .more_facts
                .iter()
                .filter(|m| m.source != source.key)
                .cloned()
                .collect();
            let more_changed = more.len() != page.more_facts.len();
            if claim_pages.contains(&page.key) || closed_pages.contains(&page.key) || more_changed {
                // Decision 5: a person's paragraphs are never removed or moved.
                let human = self.human_paragraphs(&page.key, page).await?;
                let page_claims: BTreeMap<String, Claim> = crate::util::btree_map(
                    removal
                        .claims_after
                        .values()
                        .filter(|c| c.page == page.key)
                        .map(|c| (c.id.clone(), c.clone())),
                );
                let open: Vec<&Contradiction> = removal
                    .ledger_after
                    .values()
                    .filter(|r| {
                        r.status == ContradictionStatus::Open && r.pages.contains(&page.key)
                    })
                    .collect();
                let f = Finalize {
                    page_claims: &page_claims,
                    retracted: &removal.removed,
                    open_contradictions: &open,
                    all_claims: &removal.claims_after,
                    titles: &titles,
                    source_pages: &source_pages,
                    self_key: &page.key,
                    protected: &human,
                    more_facts: &more,
                };
                body = finalize_body(&body, &f, str::to_string);
            }
            let mut sources = page.sources.clone();
            sources.retain(|s| *s != source.key);
            if body == page.body && sources == page.sources && !more_changed {
                continue;
            }
            let mut q = page.clone();
            q.body = body;
            q.sources = sources;
            q.more_facts = more;
            q.revision += 1;
            q.updated = now;
            // The app's edit, not the user's: Decision 5 does not count it as a human paragraph.
            self.put_page_revision(
                &mut ob.batch,
                &q,
                Some(snap.pages[&q.key].1),
                Author::App,
                op,
                now,
            );
            ob.op.pages.push(q.key.clone());
            updated.push(q.key.clone());
        }
        Ok(updated)
    }

    /// Writes into `ob` the deletions of the removal: the gone pages (listed first among the
    /// operation's pages) and their proposals, the claims, the source and its failure record;
    /// and the closed contradiction records.
    async fn delete_removed(
        &self,
        ob: &mut OpBuilder,
        snap: &Snapshot,
        removal: &Removal,
    ) -> Result<()> {
        let (op, source, now) = (ob.op.id, &removal.source, removal.now);
        for (i, gone) in removal.gone_pages.iter().enumerate() {
            let (_, rev) = &snap.pages[gone];
            self.delete_page_record(&mut ob.batch, gone, Some(*rev), Author::App, op, now)
                .await?;
            ob.batch
                .delete(Store::Meta, format!("{PROPOSAL_PREFIX}{gone}"), Expect::Any);
            ob.op.pages.insert(i, gone.clone());
        }
        for id in &removal.removed {
            ob.batch.delete(Store::Claims, id.clone(), Expect::Any);
        }
        for r in &removal.closed {
            ob.batch
                .put(Store::Ledger, r.id.clone(), to_json(r), Expect::Any);
        }
        ob.batch.delete(
            Store::Sources,
            source.key.clone(),
            Expect::Rev(snap.source_rev),
        );
        ob.batch.delete(
            Store::Meta,
            format!("{FAILURE_PREFIX}{}", source.key),
            Expect::Any,
        );
        Ok(())
    }

    /// Removes a source from the wiki in one [`OperationKind::RemoveSource`] operation: its
    /// summary page is deleted (its history stays readable), its claims are removed — and with
    /// them every line citing one, as when a corrected source retracts a claim — it is pruned
    /// from every page's `sources`, links to its summary page become their display text, and the
    /// open contradictions resting on its claims are closed as resolved with a note. index.md,
    /// log.md and the search index change in the same transaction. No model is called.
    ///
    /// Pages the source alone supported stay (lint reports pages without sources); the raw text
    /// and original bytes stay in `raw/`, content-addressed.
    ///
    /// `key` is matched as [`Wiki::source`] matches it (Unicode NFC, or a source stored in NFD).
    ///
    /// Errors: [`Error::NotFound`] for an unknown key; [`Error::Conflict`] when another operation
    /// landed meanwhile (nothing written: call again).
    pub async fn remove_source(&self, key: &str) -> Result<RemoveSourceReport> {
        // The key as stored (NFC, or an NFD key kept from before keys were normalised).
        let stored = self.find_source(key).await?.map(|(_, _, k)| k);
        let key = stored.as_deref().unwrap_or(key);
        let mut snap = self.snapshot(key).await?;
        let Some(source) = snap.sources.get(key).cloned() else {
            return Err(Error::NotFound(format!("source {key:?}")));
        };
        self.load_removal_pages(&mut snap, &source).await?;
        let now = self.clock.now_ms();
        let mut ob = self
            .begin(
                OperationKind::RemoveSource,
                format!("removed: {}", source.title),
            )
            .await?;
        ob.op.time = ob.op.time.max(now);
        ob.op.sources.push(source.key.clone());
        let removal = Removal::of(&snap, source, ob.op.id, now);
        let updated = self.rewrite_pages_without(&mut ob, &snap, &removal).await?;
        self.delete_removed(&mut ob, &snap, &removal).await?;
        let op = self.finish(ob).await?;
        Ok(RemoveSourceReport {
            key: removal.source.key,
            summary_page: removal.summary,
            parts: removal.parts,
            updated,
            claims_removed: removal.removed.into_iter().collect(),
            contradictions_closed: removal.closed.into_iter().map(|r| r.id).collect(),
            op: op.id,
        })
    }
}
