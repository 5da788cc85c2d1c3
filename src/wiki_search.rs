//! Search on an open wiki: loading, rebuilding and querying the [`SearchIndex`] kept in the
//! `search` store. An `impl Wiki` block of its own, beside `wiki.rs`.
//!
//! The records of the index carry a stamp, `search/op`: the last operation id the index reflects.
//! Opening compares it with the wiki's op counter; when they agree the index is read back as it
//! was written (no tokenizing, no embedding). When they differ (an operation that did not update
//! the index yet), or the records are missing or corrupt, the index is rebuilt from the pages and
//! saved in one batch.
//!
//! *Invariant:* a batch that changes pages and wants the index to stay current must carry the
//! index's [`SearchIndex::dirty_records`] and the new stamp ([`search_writes`]) — in the same
//! batch, so storage never holds an index for other pages than the ones it holds.

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::model::Page;
use crate::search::bm25::DocFields;
use crate::search::{SearchIndex, SearchOptions, SearchResults};
use crate::storage::{Batch, Expect, Storage, Store};
use crate::wiki::Wiki;

/// Key (in the `search` store) of the stamp: the last op id the stored index reflects, as
/// decimal text.
pub const SEARCH_OP_KEY: &str = "op";

/// Adds the index's changed records and the stamp `op` to `batch` (puts and deletes, no
/// expectation: commits are sequential under the one-writer rule, Decision 9).
pub fn search_writes(batch: &mut Batch, index: &SearchIndex, op: u64) {
    for w in index.dirty_records() {
        match w.data {
            Some(data) => batch.put(Store::Search, w.key, data, Expect::Any),
            None => batch.delete(Store::Search, w.key, Expect::Any),
        }
    }
    batch.put(
        Store::Search,
        SEARCH_OP_KEY,
        op.to_string().into_bytes(),
        Expect::Any,
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

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The last operation id (0 before the first).
    async fn last_op(&self) -> Result<u64> {
        // `meta/ops` is `{"last": n}` (see `wiki.rs`).
        Ok(match self.storage.get(Store::Meta, "ops").await? {
            Some(r) => serde_json::from_slice::<serde_json::Value>(&r.data)
                .ok()
                .and_then(|v| v.get("last")?.as_u64())
                .unwrap_or(0),
            None => 0,
        })
    }

    /// The search index: read from storage when its stamp matches the op counter (nothing is
    /// tokenized), else rebuilt from the pages and saved ([`Wiki::rebuild_search_index`]).
    ///
    /// Errors: storage errors. A corrupt index is not an error: it is rebuilt.
    pub async fn search_index(&self) -> Result<SearchIndex> {
        let last = self.last_op().await?;
        let records = self.storage.scan(Store::Search, "").await?;
        let stamp = records
            .iter()
            .find(|(k, _)| k == SEARCH_OP_KEY)
            .and_then(|(_, r)| std::str::from_utf8(&r.data).ok()?.parse::<u64>().ok());
        if stamp == Some(last) {
            let loaded = SearchIndex::from_records(
                records
                    .iter()
                    .filter(|(k, _)| k != SEARCH_OP_KEY)
                    .map(|(k, r)| (k.as_str(), r.data.as_slice())),
            );
            match loaded {
                Ok(index) => return Ok(index),
                Err(Error::Corrupt { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        self.rebuild_search_index().await
    }

    /// Rebuilds the search index from every page (BM25 only: vectors come from the embedding
    /// endpoint later, through [`SearchIndex::put_embeddings`]) and saves it with the current
    /// stamp in one batch, replacing whatever records were there.
    pub async fn rebuild_search_index(&self) -> Result<SearchIndex> {
        let last = self.last_op().await?;
        let pages = self.all_pages().await?;
        let mut index = SearchIndex::default();
        index.upsert_many(pages.iter().map(|p| (p.key.as_str(), page_fields(p))));
        let mut batch = Batch::new();
        search_writes(&mut batch, &index, last);
        self.storage.commit(batch).await?;
        index.mark_persisted();
        Ok(index)
    }

    /// Searches the pages (see [`SearchIndex::search`]).
    pub async fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchResults> {
        Ok(self.search_index().await?.search(query, options))
    }
}
