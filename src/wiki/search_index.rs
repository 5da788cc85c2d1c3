//! The stored search index as the kernel keeps it: loading it (read back as written when its
//! stamp `search/op` matches the op counter, synchronised with the pages by their field hashes
//! when behind, rebuilt when missing or corrupt), saving it, and the delta an operation's commit
//! carries ([`Wiki::finish`] calls [`Wiki::search_delta`]). The search operations (queries,
//! embeddings, the vector graph) are in `search_ops`.
//!
//! *Invariant:* a batch that changes pages and wants the index to stay current must carry the
//! index's [`SearchIndex::dirty_records`] and the new stamp ([`search_writes`]) — in the same
//! batch, so storage never holds an index for other pages than the ones it holds.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::config::EmbeddingProvider;
use crate::llm::offline::{OfflineEmbedder, OFFLINE_DIMENSION, OFFLINE_MODEL};
use crate::model::{Page, Source};
use crate::records::{from_json, SEARCH_OP_KEY};
use crate::search::bm25::DocFields;
use crate::search::tokenizer::current_version;
use crate::search::{SearchConfig, SearchIndex};
use crate::storage::{Batch, Expect, Storage, Store, REBUILD_BATCH};

use super::Wiki;

/// The decoded search index a wiki keeps between searches, with the revision of the stamp
/// record it was read at (every save of the index rewrites the stamp, so a new revision — from
/// this page, another tab or the extension — means the cache is stale).
#[derive(Default)]
pub struct SearchCache(RefCell<Option<(u64, u64, Rc<SearchIndex>)>>);

impl std::fmt::Debug for SearchCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SearchCache")
    }
}

/// A new index of every page in `storage`: two passes over the page store
/// ([`IndexBuilder`](crate::search::IndexBuilder)),
/// [`REBUILD_BATCH`] pages per read. `Ok(None)` when the pages changed between the passes (the
/// caller reads them all at once instead); storage and page-decoding errors as they come.
pub(crate) async fn build_index_in_batches<S: Storage>(storage: &S) -> Result<Option<SearchIndex>> {
    let mut build = SearchIndex::builder(SearchConfig::default());
    for fill in [false, true] {
        let mut after: Option<String> = None;
        loop {
            let batch = storage
                .scan_page(Store::Pages, "", after.as_deref(), REBUILD_BATCH)
                .await?;
            let Some((last, _)) = batch.last() else {
                break;
            };
            after = Some(last.clone());
            for (key, record) in &batch {
                let page: Page = from_json(Store::Pages, key, &record.data)?;
                let fields = page_fields(&page);
                let step = if fill {
                    build.fill(&page.key, &fields)
                } else {
                    build.count(&page.key, &fields)
                };
                if step.is_err() {
                    return Ok(None);
                }
            }
        }
    }
    Ok(build.finish().ok())
}

/// Adds the index's changed records and the stamp `op` to `batch` (puts and deletes, no
/// expectation: commits are sequential under the one-writer rule, Decision 9).
pub fn search_writes(batch: &mut Batch, index: &SearchIndex, op: u64) {
    search_writes_expecting(batch, index, op, Expect::Any);
}

/// [`search_writes`] with an expectation on the stamp (its last write).
pub(crate) fn search_writes_expecting(
    batch: &mut Batch,
    index: &SearchIndex,
    op: u64,
    stamp: Expect,
) {
    for w in index.dirty_records() {
        match w.data {
            Some(data) => batch.put_data(Store::Search, w.key, data, Expect::Any),
            None => batch.delete(Store::Search, w.key, Expect::Any),
        }
    }
    batch.put(
        Store::Search,
        SEARCH_OP_KEY,
        op.to_string().into_bytes(),
        stamp,
    );
}

/// The text fields of a page as the index sees them.
pub fn page_fields(page: &Page) -> DocFields<'_> {
    DocFields {
        title: &page.title,
        aliases: &page.aliases,
        body: &page.body,
    }
}

/// The text a page's embedding is made from: title, aliases, one-line summary and body.
pub fn embedding_text(page: &Page) -> String {
    let mut s = page.title.clone();
    if !page.aliases.is_empty() {
        s.push('\n');
        s.push_str(&page.aliases.join(", "));
    }
    if !page.summary.is_empty() {
        s.push('\n');
        s.push_str(&page.summary);
    }
    s.push_str("\n\n");
    s.push_str(&page.body);
    s
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Adds to `batch` the search-index changes that take the index from the committed state to
    /// `pages` (every page after operation `op`) and to the `sources` the batch writes or deletes
    /// (their passages: [`Wiki::passage_delta`]), with the stamp `op`, so the operation's commit
    /// carries its index delta in the same transaction. Pages whose fields did not change are not
    /// tokenized again. With the built-in offline embedding (the default) the changed pages are
    /// embedded here, before the transaction opens; an endpoint's embeddings are added later by
    /// [`SearchIndex::put_embeddings`] (pages without a vector are still found by BM25).
    pub(crate) async fn search_delta(
        &self,
        batch: &mut Batch,
        op: u64,
        written: &[&Page],
        deleted: &[String],
        sources: &BTreeMap<String, Option<Source>>,
    ) -> Result<SearchIndex> {
        let mut index = self.search_index_for_commit().await?;
        index.apply(
            written.iter().map(|p| (p.key.as_str(), page_fields(p))),
            deleted.iter().map(String::as_str),
        );
        let offline = self.llm_config().await?.embeddings.provider == EmbeddingProvider::Offline;
        self.passage_delta(&mut index, batch, sources, offline)
            .await?;
        if offline {
            let by_key: HashMap<&str, &Page> =
                written.iter().map(|p| (p.key.as_str(), *p)).collect();
            let embedder = OfflineEmbedder::new();
            let vectors: Vec<(String, Vec<f32>)> = index
                .missing_embeddings(OFFLINE_MODEL, OFFLINE_DIMENSION)
                .into_iter()
                .filter_map(|k| {
                    let p = by_key.get(k.as_str())?;
                    Some((k, embedder.embed_one(&embedding_text(p))))
                })
                .collect();
            if !vectors.is_empty() {
                let items: Vec<(&str, &[f32])> = vectors
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_slice()))
                    .collect();
                index
                    .put_embeddings(OFFLINE_MODEL, &items)
                    .map_err(|e| Error::Storage(format!("search index: {e}")))?;
            }
        }
        search_writes(batch, &index, op);
        Ok(index)
    }

    /// The search index a commit changes: the one this connection keeps decoded, taken from the
    /// cache when its stamp is the stored one and nothing else holds it (no decode: the records
    /// are what it was read or saved from), else read from storage ([`Wiki::search_index`]).
    pub(crate) async fn search_index_for_commit(&self) -> Result<SearchIndex> {
        let last = self.last_op().await?;
        let rev = self
            .storage
            .get(Store::Search, SEARCH_OP_KEY)
            .await?
            .map(|r| r.rev);
        let cached = self.search_cache.0.borrow_mut().take();
        if let (Some(rev), Some((cached_rev, cached_op, index))) = (rev, cached) {
            if rev == cached_rev && last == cached_op {
                if let Ok(index) = Rc::try_unwrap(index) {
                    return Ok(index);
                }
            }
        }
        self.search_index().await
    }

    /// After a commit that carried `index`'s changes ([`Wiki::search_delta`]) with the stamp
    /// for operation `op` at storage revision `stamp_rev`: the index is what storage holds now,
    /// so it is kept for the next search and the next commit.
    pub(crate) fn committed_search_index(&self, mut index: SearchIndex, op: u64, stamp_rev: u64) {
        index.mark_persisted();
        index.synced_op = Some(op);
        index.stamp_rev = Some(stamp_rev);
        *self.search_cache.0.borrow_mut() = Some((stamp_rev, op, Rc::new(index)));
    }

    /// Moves the search index's stamp to `op` in `batch` when it stands at `op - 1` (the
    /// operation changes no page, so an index that was current stays current). Returns the
    /// stamp's storage revision before and the batch position of the write, for
    /// [`Wiki::restamp_search_cache`] once the batch is committed; `None` when nothing was written.
    pub(crate) async fn advance_search_stamp(
        &self,
        batch: &mut Batch,
        op: u64,
    ) -> Result<Option<(u64, usize)>> {
        let Some(record) = self.storage.get(Store::Search, SEARCH_OP_KEY).await? else {
            return Ok(None);
        };
        let stamp = std::str::from_utf8(&record.data)
            .ok()
            .and_then(|s| s.parse::<u64>().ok());
        if stamp != Some(op - 1) {
            return Ok(None);
        }
        batch.put(
            Store::Search,
            SEARCH_OP_KEY,
            op.to_string().into_bytes(),
            Expect::Any,
        );
        Ok(Some((record.rev, batch.len() - 1)))
    }

    /// After a commit that moved the search stamp from storage revision `before` to `rev`
    /// (operation `op`, which changed no page): the decoded index this connection keeps, when it
    /// was the one at `before`, is still what storage holds, so it stays cached under the new
    /// stamp instead of being decoded again by the next search or commit.
    pub(crate) fn restamp_search_cache(&self, before: u64, op: u64, rev: u64) {
        let mut cache = self.search_cache.0.borrow_mut();
        *cache = match cache.take() {
            Some((r, o, index)) if r == before && o + 1 == op => match Rc::try_unwrap(index) {
                Ok(mut index) => {
                    index.synced_op = Some(op);
                    index.stamp_rev = Some(rev);
                    Some((rev, op, Rc::new(index)))
                }
                Err(_) => None,
            },
            _ => None,
        };
    }

    /// The last operation id (0 before the first).
    pub(crate) async fn last_op(&self) -> Result<u64> {
        // `meta/ops` is `{"last": n}` (crate::records::OpsCounter).
        Ok(
            match self
                .storage
                .get(Store::Meta, crate::records::META_OPS)
                .await?
            {
                Some(r) => serde_json::from_slice::<serde_json::Value>(&r.data)
                    .ok()
                    .and_then(|v| v.get("last")?.as_u64())
                    .unwrap_or(0),
                None => 0,
            },
        )
    }

    /// The search index: read from storage when its stamp matches the op counter (nothing is
    /// tokenized). When the stamp is behind, the stored index is brought in line with the pages
    /// ([`SearchIndex::sync`]: only changed pages are tokenized, unchanged pages keep their
    /// vectors) and saved; when an older tokenizer made it ([`SearchIndex::needs_retokenize`]),
    /// every page and source passage is tokenized again, keeping every vector of unchanged text
    /// ([`SearchIndex::retokenize`], `Wiki::retokenize_passages`), and it is saved; when it is
    /// missing or corrupt, it is rebuilt from the pages.
    ///
    /// Errors: storage errors. A corrupt index is not an error: it is rebuilt.
    pub async fn search_index(&self) -> Result<SearchIndex> {
        let last = self.last_op().await?;
        let records = self.storage.scan(Store::Search, "").await?;
        let stamp_record = records.iter().find(|(k, _)| k == SEARCH_OP_KEY);
        let stamp_rev = stamp_record.map(|(_, r)| r.rev);
        let stamp =
            stamp_record.and_then(|(_, r)| std::str::from_utf8(&r.data).ok()?.parse::<u64>().ok());
        let loaded = SearchIndex::from_records(
            records
                .iter()
                .filter(|(k, _)| k != SEARCH_OP_KEY)
                .map(|(k, r)| (k.as_str(), r.data.as_slice())),
        );
        let stored = records.iter().any(|(k, _)| k != SEARCH_OP_KEY);
        drop(records);
        let mut index = match loaded {
            Ok(index)
                if stamp == Some(last)
                    && !index.needs_retokenize()
                    && (index.passage_index().is_some() || !self.has_sources().await?) =>
            {
                let mut index = index;
                index.synced_op = Some(last);
                index.stamp_rev = stamp_rev;
                return Ok(index);
            }
            // Current but without passages (an index written before they were indexed): the
            // passages are added.
            Ok(mut index) if stamp == Some(last) && !index.needs_retokenize() => {
                let offline = self.offline_embedding().await?;
                self.sync_passages(&mut index, offline).await?;
                index
            }
            // Behind, or made by an older tokenizer: only the pages and sources that changed are
            // indexed again — or, for an older tokenizer, every page and passage is tokenized
            // again, keeping the vectors of those that did not change.
            Ok(mut index) if stored => {
                let pages = self.all_pages().await?;
                let fields = pages.iter().map(|p| (p.key.as_str(), page_fields(p)));
                if index.tokenizer_version() == current_version() {
                    index.sync(fields);
                } else {
                    index.retokenize(fields);
                }
                drop(pages);
                if index
                    .passage_index()
                    .is_some_and(|p| p.tokenizer_version() != current_version())
                {
                    self.retokenize_passages(&mut index).await?;
                }
                let offline = self.offline_embedding().await?;
                self.sync_passages(&mut index, offline).await?;
                index
            }
            // None stored, or unreadable: a full build, reading the pages in batches.
            Ok(_) | Err(Error::Corrupt { .. }) => self.fresh_search_index().await?,
            Err(e) => return Err(e),
        };
        index.synced_op = Some(last);
        index.stamp_rev = stamp_rev;
        match self.save_search_index(&mut index).await {
            // Another writer saved or committed meanwhile: this index is still right for the
            // pages read; it is just not saved (`stamp_rev` is `None`: never cached).
            Err(Error::Conflict { .. }) => index.stamp_rev = None,
            r => r?,
        }
        Ok(index)
    }

    /// The search index for reading (searches, routing, status): kept decoded between calls,
    /// and read again only when its stamp record changed (a commit or a save, here or in another
    /// tab) — two small reads instead of decoding every record (≈ 170 ms at 10k pages, see
    /// BENCHMARKS.md "cold open"). Writers use [`Wiki::search_index`], which always reads storage.
    ///
    /// Errors: as [`Wiki::search_index`].
    pub async fn search_index_shared(&self) -> Result<Rc<SearchIndex>> {
        let last = self.last_op().await?;
        let rev = self
            .storage
            .get(Store::Search, SEARCH_OP_KEY)
            .await?
            .map(|r| r.rev);
        if let (Some(rev), Some((cached_rev, op, index))) = (rev, &*self.search_cache.0.borrow()) {
            if rev == *cached_rev && last == *op {
                return Ok(index.clone());
            }
        }
        let index = self.search_index().await?;
        // Cached at the stamp revision read in the same transaction as the records (or written
        // by its own save): a later save, wherever it comes from, moves the revision on.
        let (rev, op) = (index.stamp_rev, index.synced_op);
        let index = Rc::new(index);
        *self.search_cache.0.borrow_mut() = match (rev, op) {
            (Some(rev), Some(op)) => Some((rev, op, index.clone())),
            _ => None,
        };
        Ok(index)
    }

    /// A new index of every page (nothing saved), read [`REBUILD_BATCH`] pages at a time, twice
    /// (when the pages change between the two reads, another tab committed, read all at once),
    /// with the passages of every source ([`Wiki::sync_passages`]).
    pub(crate) async fn fresh_search_index(&self) -> Result<SearchIndex> {
        let mut index = match build_index_in_batches(&self.storage).await? {
            Some(index) => index,
            None => {
                let pages = self.all_pages().await?;
                let mut index = SearchIndex::default();
                index.upsert_many(pages.iter().map(|p| (p.key.as_str(), page_fields(p))));
                index
            }
        };
        let offline = self.offline_embedding().await?;
        self.sync_passages(&mut index, offline).await?;
        Ok(index)
    }

    /// True when the configured embedding is the built-in offline one (embedded at commit).
    async fn offline_embedding(&self) -> Result<bool> {
        Ok(self.llm_config().await?.embeddings.provider == EmbeddingProvider::Offline)
    }

    /// True when the wiki has a source (one record read).
    async fn has_sources(&self) -> Result<bool> {
        Ok(!self
            .storage
            .scan_page(Store::Sources, "", None, 1)
            .await?
            .is_empty())
    }

    /// Saves what changed in `index` (e.g. after [`SearchIndex::put_embeddings`]) with its stamp.
    ///
    /// Errors: [`Error::Conflict`] when an operation committed or another save landed since the
    /// index was loaded (reload it with [`Wiki::search_index`] and redo the change); storage
    /// errors.
    pub async fn save_search_index(&self, index: &mut SearchIndex) -> Result<()> {
        let last = self.last_op().await?;
        if index.synced_op != Some(last) {
            return Err(Error::Conflict {
                store: Store::Search,
                key: SEARCH_OP_KEY.into(),
                expected: format!(
                    "op {}",
                    index.synced_op.map_or("none".into(), |o| o.to_string())
                ),
                found: format!("op {last}"),
            });
        }
        // The stamp as it was read: a save by another writer since (an embedding batch, a graph
        // install, another tab) makes this one a conflict instead of mixing records.
        let mut batch = Batch::new();
        search_writes_expecting(&mut batch, index, last, Expect::from_read(index.stamp_rev));
        let revs = self.storage.commit(batch).await?;
        index.stamp_rev = revs.last().copied();
        index.mark_persisted();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
