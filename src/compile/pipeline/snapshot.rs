//! The snapshot a source compiles against: every page's metadata, every source and schema.md
//! ([`Snapshot`]), then only the bodies, claims and ledger records the plan needs, loaded on
//! demand, and the existing claims the extract prompt lists (the candidates most likely to be
//! contradicted: those of the pages the source's frequent topic tokens find).
//!
//! *Invariant:* a snapshot is read in one go from the store as it is; it is never written back.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::plan::Extracted;
use crate::clock::Clock;
use crate::error::Result;
use crate::model::{Claim, Contradiction, Page, Source};
use crate::storage::{Storage, Store};
use crate::wiki::{from_json, Wiki};

/// Topic tokens of a source's text that make the query finding pages like it
/// ([`Wiki::load_candidate_claims`]).
pub(super) const CANDIDATE_QUERY_TERMS: usize = 24;

/// Pages most like a source's text whose claims are candidates for its contradiction check.
pub(super) const CANDIDATE_PAGES: usize = 24;

/// At most this many claims of one candidate page are read for the contradiction check (a full
/// hub page states up to [`limits::HARD_FACTS`]), and at most [`CANDIDATE_CLAIMS`] in all, so the
/// check costs the same at 30 sources and at 300; a prompt shows only the few dozen most alike.
pub(super) const CANDIDATE_CLAIMS_PER_PAGE: usize = 80;

/// At most this many candidate claims in all ([`CANDIDATE_CLAIMS_PER_PAGE`]).
pub(super) const CANDIDATE_CLAIMS: usize = 1500;

/// The `n` most frequent topic tokens of `text` ([`crate::extractive::textrank::tokens`], counted
/// per sentence-sized piece), joined by spaces: ties by the token, so the query is the same for
/// the same text.
pub(super) fn frequent_topic_tokens(text: &str, n: usize) -> String {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for piece in text.split(['\n', '.', '。']) {
        for t in crate::extractive::textrank::tokens(piece) {
            *counts.entry(t).or_default() += 1;
        }
    }
    let mut ranked: Vec<(String, usize)> = counts.into_iter().filter(|(_, c)| *c > 1).collect();
    crate::util::sort_by(&mut ranked, &|a, b| {
        b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0))
    });
    ranked
        .into_iter()
        .take(n)
        .map(|(t, _)| t)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The snapshot of the wiki a plan is made from: every page's metadata (from the page table),
/// the bodies of only the pages loaded ([`Snapshot::load_pages`]: the ones a compile changes),
/// and the claims and contradiction records loaded for them — never the whole wiki.
pub(in crate::compile) struct Snapshot {
    /// Every page by key, with its storage revision: metadata from the page table and an empty
    /// body unless loaded (then the page record as stored).
    pub(in crate::compile) pages: BTreeMap<String, (Page, u64)>,
    /// The pages whose records (bodies included) are loaded.
    pub(in crate::compile) loaded: BTreeSet<String>,
    /// The page table the metadata came from.
    pub(in crate::compile) table: std::rc::Rc<crate::page_table::PageTable>,
    /// The claims loaded, by id.
    pub(in crate::compile) claims: BTreeMap<String, Claim>,
    /// The contradiction records loaded, by id.
    pub(in crate::compile) ledger: BTreeMap<String, Contradiction>,
    pub(in crate::compile) sources: BTreeMap<String, Source>,
    pub(in crate::compile) source_rev: u64,
    pub(in crate::compile) schema_md: String,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// A snapshot for compiling or removing `source_key`: every page's metadata, every source,
    /// schema.md; no body, claim or record yet.
    pub(in crate::compile) async fn snapshot(&self, source_key: &str) -> Result<Snapshot> {
        let table = self.page_table().await?;
        let pages = table
            .rows()
            .map(|r| (r.key.clone(), (r.page_without_body(), 0)))
            .collect();
        let mut sources = BTreeMap::new();
        let mut source_rev = 0;
        for (k, r) in self.storage.scan(Store::Sources, "").await? {
            let s: Source = from_json(Store::Sources, &k, &r.data)?;
            if k == source_key {
                source_rev = r.rev;
            }
            sources.insert(k, s);
        }
        let schema_md = self.schema().await?;
        Ok(Snapshot {
            pages,
            loaded: BTreeSet::new(),
            table,
            claims: BTreeMap::new(),
            ledger: BTreeMap::new(),
            sources,
            source_rev,
            schema_md,
        })
    }

    /// Loads the records (bodies and storage revisions) of `keys` into `snap`, and the claims
    /// stated on them and the contradiction records naming them (with those records' claims).
    pub(in crate::compile) async fn load_pages(
        &self,
        snap: &mut Snapshot,
        keys: &BTreeSet<String>,
    ) -> Result<()> {
        let wanted: Vec<String> = keys
            .iter()
            .filter(|k| !snap.loaded.contains(*k))
            .cloned()
            .collect();
        for (k, r) in wanted
            .iter()
            .zip(self.storage.get_many(Store::Pages, &wanted).await?)
        {
            if let Some(r) = r {
                let p: Page = from_json(Store::Pages, k, &r.data)?;
                snap.pages.insert(k.clone(), (p, r.rev));
                snap.loaded.insert(k.clone());
            }
        }
        let mut claim_ids: BTreeSet<String> = BTreeSet::new();
        for k in keys {
            claim_ids.extend(
                crate::page_table::list(&self.storage, crate::page_table::PAGE_CLAIMS_PREFIX, k)
                    .await?,
            );
            for id in
                crate::page_table::list(&self.storage, crate::page_table::PAGE_RECORDS_PREFIX, k)
                    .await?
            {
                if snap.ledger.contains_key(&id) {
                    continue;
                }
                if let Some((r, _)) = self.read::<Contradiction>(Store::Ledger, &id).await? {
                    claim_ids.extend(r.claims.iter().cloned());
                    snap.ledger.insert(id, r);
                }
            }
        }
        self.load_claims(snap, claim_ids).await
    }

    /// Loads the claims `ids` into `snap` (ids without a claim are skipped).
    pub(in crate::compile) async fn load_claims(
        &self,
        snap: &mut Snapshot,
        ids: impl IntoIterator<Item = String>,
    ) -> Result<()> {
        let mut wanted: Vec<String> = ids
            .into_iter()
            .filter(|id| !snap.claims.contains_key(id))
            .collect();
        wanted.sort();
        wanted.dedup();
        for (id, r) in wanted
            .iter()
            .zip(self.storage.get_many(Store::Claims, &wanted).await?)
        {
            if let Some(r) = r {
                let c: Claim = from_json(Store::Claims, id, &r.data)?;
                snap.claims.insert(id.clone(), c);
            }
        }
        Ok(())
    }

    /// Loads every claim of source `key` into `snap`.
    pub(in crate::compile) async fn load_source_claims(
        &self,
        snap: &mut Snapshot,
        key: &str,
    ) -> Result<()> {
        let ids =
            crate::page_table::list(&self.storage, crate::page_table::SOURCE_CLAIMS_PREFIX, key)
                .await?;
        self.load_claims(snap, ids).await
    }

    /// Loads the contradiction record `id` into `snap`, when there is one.
    pub(in crate::compile) async fn load_record(
        &self,
        snap: &mut Snapshot,
        id: &str,
    ) -> Result<()> {
        if !snap.ledger.contains_key(id) {
            if let Some((r, _)) = self.read::<Contradiction>(Store::Ledger, id).await? {
                snap.ledger.insert(id.to_string(), r);
            }
        }
        Ok(())
    }

    /// The snapshot a compile of `source` plans from after its extraction: every page's
    /// metadata, the source's own claims (a corrected source retracts those it no longer says),
    /// the existing claims its extraction says it contradicts and every claim of their sources
    /// (the contradiction names the claim on the most specific page, [`canonical_claim`]).
    pub(super) async fn compile_snapshot(
        &self,
        source: &Source,
        extracted: &Extracted,
    ) -> Result<Snapshot> {
        let mut snap = self.snapshot(&source.key).await?;
        self.load_source_claims(&mut snap, &source.key).await?;
        let named: Vec<String> = extracted
            .extraction
            .contradictions
            .iter()
            .map(|c| c.existing_claim.trim().to_string())
            .collect();
        self.load_claims(&mut snap, named.iter().cloned()).await?;
        let sources: BTreeSet<String> = named
            .iter()
            .filter_map(|id| snap.claims.get(id).map(|c| c.source_key.clone()))
            .collect();
        for k in sources {
            self.load_source_claims(&mut snap, &k).await?;
        }
        Ok(snap)
    }

    /// Claims of other sources worth checking a source against for contradictions, loaded into
    /// `snap`: those stated on the pages the source names by title or alias (`named`), and on the
    /// pages most like its text by BM25 (its [`CANDIDATE_QUERY_TERMS`] most frequent topic
    /// tokens as the query, the best [`CANDIDATE_PAGES`] pages) — where another source's claims
    /// about the same things sit, named or not (a summary page, a page named otherwise). Then
    /// [`ClaimRanker`] picks, per chunk, the most alike of them. Reads the lists and claims of
    /// those pages only: the named pages first, then the BM25 ones in rank order, each with at
    /// most [`CANDIDATE_CLAIMS_PER_PAGE`] claims (the first by id: a fixed sample of a full
    /// page), until [`CANDIDATE_CLAIMS`].
    pub(in crate::compile) async fn load_candidate_claims(
        &self,
        snap: &mut Snapshot,
        source_key: &str,
        text: &str,
        named: &[String],
    ) -> Result<()> {
        let mut pages: Vec<String> = Vec::new();
        for k in named {
            if !pages.contains(k) {
                pages.push(k.clone());
            }
        }
        let query = frequent_topic_tokens(text, CANDIDATE_QUERY_TERMS);
        if !query.is_empty() {
            let options = crate::search::SearchOptions {
                k: CANDIDATE_PAGES,
                mode: crate::search::SearchMode::Bm25,
                query_vector: None,
                ..Default::default()
            };
            let hits = self
                .search_index_shared()
                .await?
                .search(&query, &options)
                .hits;
            for h in hits {
                if !pages.contains(&h.key) {
                    pages.push(h.key);
                }
            }
        }
        let own: BTreeSet<&String> = snap
            .sources
            .get(source_key)
            .map(|s| s.summary_page.iter().chain(&s.parts).collect())
            .unwrap_or_default();
        let mut ids: Vec<String> = Vec::new();
        for k in pages.iter().filter(|k| !own.contains(k)) {
            if ids.len() >= CANDIDATE_CLAIMS {
                break;
            }
            let list =
                crate::page_table::list(&self.storage, crate::page_table::PAGE_CLAIMS_PREFIX, k)
                    .await?;
            let room = CANDIDATE_CLAIMS_PER_PAGE.min(CANDIDATE_CLAIMS - ids.len());
            ids.extend(list.into_iter().take(room));
        }
        self.load_claims(snap, ids).await
    }
}
