//! Rebuilding the app-written sections of the pages a fix changes (the `## Facts` list,
//! contradiction callouts, footnote definitions) as compile writes them, after the fix moved
//! claims and ledger records between pages.
//!
//! *Invariant:* a rebuild never removes or moves a human paragraph (Decision 5).

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::Clock;
use crate::error::Result;
use crate::model::{Claim, Contradiction, ContradictionStatus, OpId, Page, Source};
use crate::storage::{Batch, Expect, Storage, Store};
use crate::wiki::{to_json, Wiki};

/// The claims and ledger a fix leaves, with what compile's finalize needs besides, to rebuild a
/// page's app-written sections (the `## Facts` list, contradiction callouts, footnote
/// definitions) exactly as compile and removing a source write them
/// ([`crate::markdown::page_body::finalize_body`]).
pub(super) struct AppSections {
    claims: BTreeMap<String, Claim>,
    pub(super) ledger: BTreeMap<String, Contradiction>,
    pub(super) titles: BTreeMap<String, String>,
    source_pages: BTreeMap<String, (String, String)>,
}

impl AppSections {
    /// Rewrites `p`'s body with its app sections rebuilt (at the end, once each). `human`: the
    /// page's human paragraphs (Decision 5), which the rebuild never removes or moves.
    pub(super) fn rebuild(&self, p: &mut Page, human: &BTreeMap<String, Vec<String>>) {
        let protected = human.get(&p.key).map_or(&[][..], Vec::as_slice);
        let page_claims: BTreeMap<String, Claim> = crate::util::btree_map(
            self.claims
                .values()
                .filter(|c| c.page == p.key)
                .map(|c| (c.id.clone(), c.clone())),
        );
        let open: Vec<&Contradiction> = self
            .ledger
            .values()
            .filter(|r| r.status == ContradictionStatus::Open && r.pages.contains(&p.key))
            .collect();
        let more = p.more_facts.clone();
        let f = crate::markdown::page_body::Finalize {
            page_claims: &page_claims,
            retracted: &BTreeSet::new(),
            open_contradictions: &open,
            all_claims: &self.claims,
            titles: &self.titles,
            source_pages: &self.source_pages,
            self_key: &p.key,
            protected,
            more_facts: &more,
        };
        p.body = crate::markdown::page_body::finalize_body(&p.body, &f, str::to_string);
    }

    /// After a split of `page` into `parts` (all in `pages`): the claims of `page` that a part's
    /// body cites move to that part (writing the changed claims and ledger records to `batch`; a
    /// record of a moved claim names the part too). Returns the pages whose app sections must be
    /// rebuilt: the page, its parts and the pages of changed records.
    pub(super) fn move_cited(
        &mut self,
        batch: &mut Batch,
        pages: &[Page],
        page: &str,
        parts: &[String],
        _op: OpId,
    ) -> BTreeSet<String> {
        let mut rebuild: BTreeSet<String> = std::iter::once(page.to_string())
            .chain(parts.iter().cloned())
            .collect();
        for part in parts {
            let Some(p) = pages.iter().find(|p| p.key == *part) else {
                continue;
            };
            let cited: BTreeSet<String> = crate::markdown::plain::footnote_refs(&p.body)
                .into_iter()
                .collect();
            let mut moved: BTreeSet<String> = BTreeSet::new();
            for c in self
                .claims
                .values_mut()
                .filter(|c| c.page == page && cited.contains(&c.id))
            {
                c.page = part.clone();
                batch.put(Store::Claims, c.id.clone(), to_json(&*c), Expect::Any);
                moved.insert(c.id.clone());
            }
            for r in self
                .ledger
                .values_mut()
                .filter(|r| r.claims.iter().any(|c| moved.contains(c)))
            {
                if !r.pages.contains(part) {
                    r.pages.push(part.clone());
                    r.pages.sort();
                }
                let still = r
                    .claims
                    .iter()
                    .any(|c| self.claims.get(c).is_some_and(|c| c.page == page));
                if !still {
                    r.pages.retain(|k| k != page);
                }
                batch.put(Store::Ledger, r.id.clone(), to_json(&*r), Expect::Any);
                rebuild.extend(r.pages.iter().cloned());
            }
        }
        rebuild
    }

    /// Moves the claims and ledger records of page `merged` to `survivor` (writing the changed
    /// records to `batch`). A record left naming only the survivor is no contradiction between
    /// pages any more: an open one is resolved with a note. Returns the pages whose app sections
    /// must be rebuilt: the survivor when it has claims or records, and every page of a changed
    /// record.
    pub(super) fn merge(
        &mut self,
        batch: &mut Batch,
        merged: &str,
        survivor: &str,
        op: OpId,
    ) -> BTreeSet<String> {
        let mut rebuild = BTreeSet::new();
        for c in self.claims.values_mut().filter(|c| c.page == merged) {
            c.page = survivor.to_string();
            batch.put(Store::Claims, c.id.clone(), to_json(&*c), Expect::Any);
            rebuild.insert(survivor.to_string());
        }
        for r in self
            .ledger
            .values_mut()
            .filter(|r| r.pages.iter().any(|k| k == merged))
        {
            for k in r.pages.iter_mut().filter(|k| *k == merged) {
                *k = survivor.to_string();
            }
            r.pages.sort();
            r.pages.dedup();
            if r.pages.len() < 2 && r.status == ContradictionStatus::Open {
                r.status = ContradictionStatus::Resolved;
                r.note = Some(format!(
                    "pages merged: {merged} into {survivor} (no longer a contradiction between two pages)"
                ));
                r.closed_by = Some(op);
            }
            batch.put(Store::Ledger, r.id.clone(), to_json(&*r), Expect::Any);
            rebuild.extend(r.pages.iter().cloned());
        }
        if self.claims.values().any(|c| c.page == survivor)
            || self.ledger.values().any(|r| {
                r.status == ContradictionStatus::Open && r.pages.iter().any(|k| k == survivor)
            })
        {
            rebuild.insert(survivor.to_string());
        }
        rebuild
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The human paragraphs (Decision 5) of each of `pages` as stored, by key: empty for a page
    /// no person edited since the model last wrote it (the page table says so without reading
    /// its history).
    pub(super) async fn humans_of(&self, pages: &[Page]) -> Result<BTreeMap<String, Vec<String>>> {
        let mut out = BTreeMap::new();
        for p in pages {
            out.insert(p.key.clone(), self.human_paragraphs(&p.key, p).await?);
        }
        Ok(out)
    }

    /// The [`AppSections`] of the wiki whose pages are `pages` (after the fix).
    /// What rebuilding the app sections of `pages` (the pages a fix changes) needs: every
    /// page's title and every source's summary page (from the page table), the claims stated on
    /// `pages` and the contradiction records naming them, with those records' claims.
    pub(super) async fn app_sections(&self, pages: &[Page]) -> Result<AppSections> {
        use crate::page_table::{list, PAGE_CLAIMS_PREFIX, PAGE_RECORDS_PREFIX};
        let table = self.page_table().await?;
        let sources: BTreeMap<String, Source> = self.read_map(Store::Sources).await?;
        let mut by_key: BTreeMap<String, Page> = table
            .rows()
            .map(|r| (r.key.clone(), r.page_without_body()))
            .collect();
        for p in pages {
            by_key.insert(p.key.clone(), p.clone());
        }
        let mut claim_ids: BTreeSet<String> = BTreeSet::new();
        let mut ledger: BTreeMap<String, Contradiction> = BTreeMap::new();
        for p in pages {
            claim_ids.extend(list(&self.storage, PAGE_CLAIMS_PREFIX, &p.key).await?);
            for id in list(&self.storage, PAGE_RECORDS_PREFIX, &p.key).await? {
                if let Some((r, _)) = self.read::<Contradiction>(Store::Ledger, &id).await? {
                    claim_ids.extend(r.claims.iter().cloned());
                    ledger.insert(id, r);
                }
            }
        }
        let mut claims = BTreeMap::new();
        for id in claim_ids {
            if let Some((c, _)) = self.read::<Claim>(Store::Claims, &id).await? {
                claims.insert(id, c);
            }
        }
        Ok(AppSections {
            source_pages: crate::markdown::page_body::summary_pages(&sources, &by_key),
            titles: by_key
                .iter()
                .map(|(k, p)| (k.clone(), p.title.clone()))
                .collect(),
            claims,
            ledger,
        })
    }
}
