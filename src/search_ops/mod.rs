//! The search operations on an open wiki: rebuilding the [`SearchIndex`] kept in the `search`
//! store, embedding pages and keeping the vector graph. An `impl Wiki` block of its own above the
//! kernel, which loads, saves and updates the index and searches it ([`Wiki::search`], shared by
//! every operation that ranks pages; `crate::wiki`).
//!
//! The records of the index carry a stamp, `search/op`: the last operation id the index reflects.
//! Opening compares it with the wiki's op counter; when they agree the index is read back as it
//! was written (no tokenizing, no embedding). When the stamp is behind (an operation that did not
//! update the index yet), the index is synchronised with the pages by their field hashes (only
//! changed pages are tokenized; vectors of unchanged pages are kept); when the records are
//! missing or corrupt it is rebuilt from the pages. Either way it is saved in one batch.
//!
//! *Invariant:* a batch that changes pages and wants the index to stay current must carry the
//! index's [`SearchIndex::dirty_records`] and the new stamp
//! ([`search_writes`](crate::wiki::search_writes)) — in the same batch, so storage never holds
//! an index for other pages than the ones it holds.

use std::cell::Cell;

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::client::AnyEmbedder;
use crate::llm::config::EmbeddingProvider;
use crate::llm::offline::OFFLINE_MODEL;
use crate::llm::transport::Transport;
use crate::llm::{Cancel, Embedder};
use crate::model::TokenUsage;
use crate::search::vectors::{
    GraphBuildOptions, HnswParams, InstallOutcome, RebuildJob, HNSW_MIN_ROWS,
};
use crate::search::{EmbeddingStatus, SearchIndex};
use crate::storage::{Batch, Expect, Storage, Store};
use crate::wiki::Wiki;

mod passages;

pub use crate::records::{OBSERVED_DIM_KEY, SEARCH_OP_KEY, SKIPPED_KEY};

/// Options of [`Wiki::embed_pages`] (JS: `embedPages({...})`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct EmbedOptions {
    /// Start a re-embed when the stored vectors are of another model. Default false.
    pub confirm: bool,
    /// Texts per embedding call. Range 1–256; default 32.
    pub batch_size: usize,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions {
            confirm: false,
            batch_size: 32,
        }
    }
}

/// Progress of [`Wiki::embed_pages`]: pages embedded so far of those that needed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct EmbedProgress {
    /// Pages embedded and saved (those whose vector was unusable included).
    pub done: usize,
    /// Pages that needed a vector when the run started.
    pub total: usize,
}

/// Why a page's vector was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "kebab-case")]
pub enum BadVector {
    /// A value is NaN or infinite (or `null` in the response).
    NotFinite,
    /// Every value is zero.
    Zero,
}

/// A page whose vector the endpoint returned unusable: recorded as null (the page is found by
/// BM25 only until it changes and is embedded again); the other pages of its batch are stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SkippedEmbedding {
    /// The page key.
    pub page: String,
    /// What was wrong with its vector.
    pub reason: BadVector,
}

/// What is wrong with `v`, if anything.
pub fn bad_vector(v: &[f32]) -> Option<BadVector> {
    if v.iter().any(|x| !x.is_finite()) {
        Some(BadVector::NotFinite)
    } else if v.iter().all(|x| *x == 0.0) {
        Some(BadVector::Zero)
    } else {
        None
    }
}

/// [`Wiki::embedding_status`]: where the configured model stands, and the pages whose last
/// vector came back unusable (still without one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct EmbeddingState {
    /// The status (`state`, and its fields).
    #[serde(flatten)]
    pub status: EmbeddingStatus,
    /// Pages whose vector from the configured model came back unusable, still without one.
    #[serde(default)]
    pub skipped: Vec<SkippedEmbedding>,
}

/// The contents of the [`SKIPPED_KEY`] record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SkippedRecord {
    model: String,
    pages: Vec<SkippedEmbedding>,
}

/// What [`Wiki::embed_pages`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct EmbedReport {
    /// The embedding model.
    pub model: String,
    /// Pages embedded and saved in this run (with a usable vector; see `skipped`).
    pub embedded: usize,
    /// Source passages embedded and saved in this run (after the pages).
    #[serde(default)]
    pub passages_embedded: usize,
    /// Where the model stands now (`reembedRequired` when it needs `confirm`).
    pub status: EmbeddingStatus,
    /// Pages whose vector came back unusable in this run (NaN or all zero): not stored; the
    /// rest of their batch was.
    pub skipped: Vec<SkippedEmbedding>,
    /// Token usage of the embedding calls.
    pub usage: TokenUsage,
}

/// Pages read per storage call by [`Wiki::rebuild_search_index`].
pub use crate::storage::REBUILD_BATCH;
use crate::wiki::embedding_text;

/// Settings of the vector graph kept by an open [`Wiki`] (per connection, never stored). JS:
/// `Wiki.open(name, { vectorIndex: { minRows, requireCheaper } })`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct VectorIndexOptions {
    /// Live vectors from which an HNSW graph is built ([`Wiki::vector_rebuild_job`]). Default
    /// [`HNSW_MIN_ROWS`]; values below 1 count as 1. Lower it only to test the graph path.
    pub min_rows: usize,
    /// Drop a graph that is not predicted cheaper than the exact scan
    /// ([`crate::search::vectors::GRAPH_EVAL_COST`]). Default true; false only for tests, which
    /// need a graph on a few dozen rows.
    pub require_cheaper: bool,
}

impl Default for VectorIndexOptions {
    fn default() -> Self {
        VectorIndexOptions {
            min_rows: HNSW_MIN_ROWS,
            require_cheaper: true,
        }
    }
}

/// This connection's [`VectorIndexOptions`], held in the kernel's per-connection operation
/// state (never stored).
#[derive(Default)]
struct VectorSettings(Cell<VectorIndexOptions>);

/// A graph rebuild to run elsewhere (a Web Worker): give `job.vectors()`, `job.dim()`, `params`
/// and `options` to [`crate::search::vectors::build_graph_with`], then the bytes (or `None`) and
/// the job to [`Wiki::install_vector_graph`].
#[derive(Debug, Clone)]
pub struct VectorRebuild {
    /// The snapshot of the live vectors.
    pub job: RebuildJob,
    /// The wiki's HNSW parameters.
    pub params: HnswParams,
    /// The build options of this connection ([`VectorIndexOptions::require_cheaper`]).
    pub options: GraphBuildOptions,
}

/// Where the active vectors stand (JS `vectorIndexStatus()`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct VectorIndexStatus {
    /// The embedding model of the active vectors.
    pub model: String,
    /// Their dimension.
    pub dim: usize,
    /// Pages with a searchable (non-null) vector.
    pub rows: usize,
    /// True when an HNSW graph serves the base rows (else every search is an exact scan).
    pub graph: bool,
    /// The graph's calibrated `ef_search`, when there is a graph.
    pub ef_search: Option<usize>,
    /// Rows added or changed since the last rebuild (scanned exactly beside the graph).
    pub delta: usize,
    /// Base rows replaced or removed since the last rebuild.
    pub dead: usize,
    /// Live rows when the last graph build was given up (too slow or too low recall), if it was.
    pub declined_at: Option<usize>,
    /// True when [`Wiki::vector_rebuild_job`] would return a job.
    pub needs_rebuild: bool,
    /// This connection's [`VectorIndexOptions::min_rows`].
    pub min_rows: usize,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Rebuilds the search index from every page, dropping the stored one (vectors included:
    /// they come back through [`SearchIndex::put_embeddings`]), and saves it.
    ///
    /// The pages are read [`REBUILD_BATCH`] at a time, twice ([`SearchIndex::builder`]), so the
    /// rebuild never holds every page at once; if they change between the two reads (another
    /// tab committed), they are read again all at once. [`Wiki::search_index`] builds the same
    /// way when no index is stored or the stored one is unreadable.
    pub async fn rebuild_search_index(&self) -> Result<SearchIndex> {
        let last = self.last_op().await?;
        let mut index = self.fresh_search_index().await?;
        index.synced_op = Some(last);
        index.stamp_rev = self
            .storage
            .get(Store::Search, SEARCH_OP_KEY)
            .await?
            .map(|r| r.rev);
        self.save_search_index(&mut index).await?;
        Ok(index)
    }

    /// Where the configured embedding stands: `ready` (with pages still `missing` a vector),
    /// `noVectors`, `reembedding` (done of total) or `reembedRequired` (the stored vectors are of
    /// another model: search uses BM25 until [`Wiki::embed_pages`] runs with `confirm`).
    ///
    /// `skipped`: the pages whose vector came back unusable (NaN or all zero) from this model
    /// and that still have no usable one (recorded as null: found by BM25 only; a page edit
    /// drops the record, and the next `embed_pages` asks again).
    pub async fn embedding_status(&self) -> Result<EmbeddingState> {
        let config = self.llm_config().await?;
        let model = match config.embeddings.provider {
            EmbeddingProvider::Offline => OFFLINE_MODEL.to_string(),
            _ => config.embeddings.model.clone(),
        };
        let index = self.search_index_shared().await?;
        let dim = self.configured_dim(&index, &model).await?;
        let missing: std::collections::HashSet<String> = match index.embedding_dim(&model) {
            Some(d) => index.missing_embeddings(&model, d).into_iter().collect(),
            None => index.keys().into_iter().collect(),
        };
        let skipped = self
            .storage
            .get(Store::Search, SKIPPED_KEY)
            .await?
            .and_then(|r| serde_json::from_slice::<SkippedRecord>(&r.data).ok())
            .filter(|r| r.model == model)
            .map(|r| r.pages)
            .unwrap_or_default()
            .into_iter()
            .filter(|s| index.contains(&s.page) && !missing.contains(&s.page))
            .collect();
        Ok(EmbeddingState {
            status: index.embedding_status(&model, dim),
            skipped,
        })
    }

    /// Records the pages of `model` whose vector came back unusable: those `skipped` in this
    /// run, and those of the last record not `attempted` again. Written when that changes it.
    async fn note_skipped(
        &self,
        model: &str,
        skipped: &[SkippedEmbedding],
        attempted: &std::collections::HashSet<String>,
    ) -> Result<()> {
        let old = self.storage.get(Store::Search, SKIPPED_KEY).await?;
        let mut pages: Vec<SkippedEmbedding> = old
            .as_ref()
            .and_then(|r| serde_json::from_slice::<SkippedRecord>(&r.data).ok())
            .filter(|r| r.model == model)
            .map(|r| r.pages)
            .unwrap_or_default();
        pages.retain(|p| !attempted.contains(&p.page));
        pages.extend(skipped.iter().cloned());
        crate::util::sort_by_key(&mut pages, |p| p.page.clone());
        let record = SkippedRecord {
            model: model.to_string(),
            pages,
        };
        let bytes = serde_json::to_vec(&record).map_err(|e| Error::Storage(e.to_string()))?;
        if old.as_ref().map(|r| &r.data) == Some(&bytes)
            || (old.is_none() && record.pages.is_empty())
        {
            return Ok(());
        }
        let mut batch = Batch::new();
        batch.put(Store::Search, SKIPPED_KEY, bytes, Expect::Any);
        self.storage.commit(batch).await.map(|_| ())
    }

    /// Embeds the pages that lack a vector of `embedder`'s model, then the source passages that
    /// lack one (`passages_embedded`), in batches of `options.batch_size` texts (each batch saved
    /// as it lands, so an interrupted run resumes where it stopped). When the stored vectors are of another model, nothing is embedded
    /// unless `options.confirm`: then a re-embed starts (searches with the new model's query
    /// vectors use BM25 meanwhile), and when every page has a new vector the old ones are
    /// replaced in one step (F28). Not an operation: the
    /// pages do not change.
    ///
    /// Errors: the embedder's (endpoint errors, [`Error::Cancelled`]); storage errors. What was
    /// saved before the error stays.
    pub async fn embed_pages<E: Embedder>(
        &self,
        embedder: &E,
        options: &EmbedOptions,
        on_progress: &dyn Fn(EmbedProgress),
        cancel: &Cancel,
    ) -> Result<EmbedReport> {
        let model = embedder.model();
        let batch_size = options.batch_size.clamp(1, 256);
        let mut index = self.search_index().await?;
        let mut usage = TokenUsage::default();
        let mut embedded = 0;
        let dim = self.configured_dim(&index, &model).await?;
        let status = index.embedding_status(&model, dim);
        if matches!(status, EmbeddingStatus::ReembedRequired { .. }) && !options.confirm {
            return Ok(EmbedReport {
                model,
                embedded,
                passages_embedded: 0,
                status,
                skipped: vec![],
                usage,
            });
        }
        if index.active_model().is_some() && dim != 0 && index.embedding_dim(&model) != Some(dim) {
            // Confirmed, and the model is known to return another dimension now.
            index.confirm_reembed(&model, dim);
        }
        // Pages whose vector came back unusable (not asked for again in this run), and every page
        // a vector was asked for.
        let mut skipped: Vec<SkippedEmbedding> = Vec::new();
        let mut attempted: std::collections::HashSet<String> = std::collections::HashSet::new();
        // Pages saved in this run, skipped ones included (the progress count).
        let mut done = 0;
        let todo = |index: &SearchIndex, skipped: &[SkippedEmbedding]| {
            let mut keys = match index.embedding_dim(&model) {
                Some(dim) => index.missing_embeddings(&model, dim),
                None => index.keys(),
            };
            keys.retain(|k| !skipped.iter().any(|s| &s.page == k));
            keys
        };
        let total = todo(&index, &skipped).len();
        // Each round either saves a batch or reloads after a conflict; bounded so a wiki that
        // keeps changing underneath cannot loop forever.
        let mut rounds = 2 * total.div_ceil(batch_size) + 8;
        loop {
            cancel.check()?;
            let keys = todo(&index, &skipped);
            if keys.is_empty() || rounds == 0 {
                break;
            }
            rounds -= 1;
            let mut batch_keys = Vec::new();
            let mut texts = Vec::new();
            for k in keys.into_iter().take(batch_size) {
                if let Some(p) = self.page(&k).await? {
                    texts.push(embedding_text(&p));
                    batch_keys.push(k);
                }
            }
            if texts.is_empty() {
                // Indexed pages that are gone: the index is behind; reload it.
                index = self.search_index().await?;
                continue;
            }
            let e = embedder.embed(&texts, cancel).await?;
            usage.add(&e.usage);
            self.note_dim(&index, &model, e.dimension).await?;
            if index.active_model().is_some() && index.embedding_dim(&model) != Some(e.dimension) {
                // Another model, or this model under another dimension: its vectors cannot
                // join the stored ones (F28).
                if !options.confirm {
                    let status = index.embedding_status(&model, e.dimension);
                    return Ok(EmbedReport {
                        model,
                        embedded,
                        passages_embedded: 0,
                        status,
                        skipped,
                        usage,
                    });
                }
                index.confirm_reembed(&model, e.dimension);
            }
            // One unusable vector skips its page only, never its batch: it is recorded as null
            // (the page is found by BM25 only, and a re-embed can still complete) and reported.
            let items: Vec<(&str, &[f32])> = batch_keys
                .iter()
                .map(String::as_str)
                .zip(e.vectors.iter().map(Vec::as_slice))
                .collect();
            let mut bad = 0;
            for (k, v) in &items {
                attempted.insert(k.to_string());
                if let Some(reason) = bad_vector(v) {
                    bad += 1;
                    skipped.push(SkippedEmbedding {
                        page: k.to_string(),
                        reason,
                    });
                }
            }
            index
                .put_embeddings(&model, &items)
                .map_err(|err| Error::LlmBadResponse(format!("embeddings: {err}")))?;
            match self.save_search_index(&mut index).await {
                Ok(()) => {
                    embedded += items.len() - bad;
                    done += items.len();
                    on_progress(EmbedProgress { done, total });
                }
                // An operation landed meanwhile: its pages may have changed; start from it.
                Err(Error::Conflict { .. }) => index = self.search_index().await?,
                Err(err) => return Err(err),
            }
        }
        self.note_skipped(&model, &skipped, &attempted).await?;
        // Then the source passages, with the same model (not while a page re-embed is refused).
        let passages = self
            .embed_passages(
                embedder,
                &mut index,
                batch_size,
                options.confirm,
                &mut usage,
                cancel,
            )
            .await?;
        let dim = self.configured_dim(&index, &model).await?;
        let status = index.embedding_status(&model, dim);
        Ok(EmbedReport {
            model,
            embedded,
            passages_embedded: passages.embedded,
            status,
            skipped,
            usage,
        })
    }

    /// [`Wiki::embed_pages`] with the configured embedder (the built-in offline one or an
    /// endpoint). Errors: as `embed_pages`, plus [`Error::LlmConfig`].
    pub async fn embed_pages_configured<T: Transport>(
        &self,
        transport: T,
        options: &EmbedOptions,
        on_progress: &dyn Fn(EmbedProgress),
        cancel: &Cancel,
    ) -> Result<EmbedReport> {
        let config = self.llm_config().await?;
        let embedder = AnyEmbedder::from_config(&config, transport)?;
        self.embed_pages(&embedder, options, on_progress, cancel)
            .await
    }

    /// This connection's vector graph settings.
    pub fn vector_index_options(&self) -> VectorIndexOptions {
        self.op_state.get::<VectorSettings>().0.get()
    }

    /// Changes this connection's vector graph settings (not stored; tests lower `min_rows`).
    pub fn set_vector_index_options(&self, options: VectorIndexOptions) {
        self.op_state.get::<VectorSettings>().0.set(options);
    }

    /// Where the active vectors stand, or `None` when no page has a vector.
    ///
    /// Errors: storage errors.
    pub async fn vector_index_status(&self) -> Result<Option<VectorIndexStatus>> {
        let index = self.search_index_shared().await?;
        let options = self.op_state.get::<VectorSettings>().0.get();
        Ok(index.vectors().map(|s| {
            let (delta, dead) = s.pending();
            VectorIndexStatus {
                model: s.model().to_string(),
                dim: s.dim(),
                rows: s.live(),
                graph: s.has_graph(),
                ef_search: s.graph_ef_search(),
                delta,
                dead,
                declined_at: s.graph_declined_at(),
                needs_rebuild: s.needs_rebuild_at(options.min_rows),
                min_rows: options.min_rows,
            }
        }))
    }

    /// A graph rebuild when one is due ([`crate::search::vectors::VectorStore::needs_rebuild_at`]
    /// with this connection's `min_rows`: no graph yet from that many vectors, or a large delta),
    /// else `None`. Writes nothing; the snapshot is a copy (4 × rows × dim bytes), so the wiki may
    /// change while the graph is built elsewhere.
    ///
    /// Errors: storage errors.
    pub async fn vector_rebuild_job(&self) -> Result<Option<VectorRebuild>> {
        let index = self.search_index_shared().await?;
        let options = self.op_state.get::<VectorSettings>().0.get();
        Ok(index
            .vectors()
            .filter(|s| s.needs_rebuild_at(options.min_rows))
            .map(|s| VectorRebuild {
                job: s.rebuild_job(),
                params: index.config().hnsw,
                options: GraphBuildOptions {
                    require_cheaper: options.require_cheaper,
                },
            }))
    }

    /// Installs the graph built for `job` (`None`: the build gave the graph up; the rows are
    /// installed without one and no new build is due until the vectors grow by half) and saves
    /// the search index's changed records (`vectors`, `vectors-delta`, `hnsw`, `meta`) in one
    /// batch. Vectors that changed since the snapshot stay correct: their new rows stay in the
    /// exact-scan delta. Not an operation (the pages do not change); in the browser run it under
    /// the wiki's write lock like every other write.
    ///
    /// Returns [`InstallOutcome::Stale`], writing nothing, when the vectors were rebuilt or
    /// compacted since the snapshot, or replaced by another model's.
    ///
    /// Errors: [`Error::InvalidInput`] when `graph` does not decode against the job's rows
    /// (nothing is written); storage errors.
    pub async fn install_vector_graph(
        &self,
        job: RebuildJob,
        graph: Option<&[u8]>,
    ) -> Result<InstallOutcome> {
        // An operation may commit between loading and saving: reload and install again.
        for _ in 0..4 {
            let mut index = self.search_index().await?;
            let Some(store) = index.vectors_mut() else {
                return Ok(InstallOutcome::Stale);
            };
            let outcome = store
                .install(job.clone(), graph)
                .map_err(|e| Error::InvalidInput(format!("vector graph: {}", e.0)))?;
            if outcome == InstallOutcome::Stale {
                return Ok(outcome);
            }
            match self.save_search_index(&mut index).await {
                Ok(()) => return Ok(outcome),
                Err(Error::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(InstallOutcome::Stale)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use futures::executor::block_on;

    use super::*;
    use crate::clock::ManualClock;
    use crate::model::Page;
    use crate::records::from_json;
    use crate::search::SearchOptions;
    use crate::storage::memory::{MemoryBackend, MemoryStorage};
    use crate::storage::{OpenOptions, Record};
    use crate::wiki::page_fields;
    use crate::wiki::search_index::build_index_in_batches;
    use crate::wiki::PageEdit;

    /// The memory storage, changing one page's body when the `change_at`-th `scan_page` of the
    /// page store begins (another tab committing between the two passes of a build).
    struct ChangingStorage<'a> {
        inner: &'a MemoryStorage,
        scans: Cell<usize>,
        change_at: usize,
    }

    impl Storage for ChangingStorage<'_> {
        async fn get(&self, store: Store, key: &str) -> Result<Option<Record>> {
            self.inner.get(store, key).await
        }
        async fn scan(&self, store: Store, prefix: &str) -> Result<Vec<(String, Record)>> {
            self.inner.scan(store, prefix).await
        }
        async fn scan_page(
            &self,
            store: Store,
            prefix: &str,
            after: Option<&str>,
            limit: usize,
        ) -> Result<Vec<(String, Record)>> {
            if store == Store::Pages {
                self.scans.set(self.scans.get() + 1);
                if self.scans.get() == self.change_at {
                    let (key, record) = self.inner.scan(Store::Pages, "").await?.remove(7);
                    let mut page: Page = from_json(Store::Pages, &key, &record.data)?;
                    page.body.push_str(" changed between the passes");
                    let mut b = Batch::new();
                    b.put(
                        Store::Pages,
                        key,
                        serde_json::to_vec(&page).unwrap(),
                        Expect::Any,
                    );
                    self.inner.commit(b).await?;
                }
            }
            self.inner.scan_page(store, prefix, after, limit).await
        }
        async fn commit(&self, batch: Batch) -> Result<Vec<u64>> {
            self.inner.commit(batch).await
        }
        fn schema_version(&self) -> u32 {
            self.inner.schema_version()
        }
        fn close(&self) {
            self.inner.close()
        }
        fn is_closed(&self) -> bool {
            self.inner.is_closed()
        }
    }

    /// More pages than one batch: the batched build equals `upsert_many` over every page, record
    /// for record; when a page changes between the passes, it reports so instead of an index.
    #[test]
    fn batched_build_of_a_wiki_and_a_page_changed_between_the_passes() {
        let backend = MemoryBackend::new();
        let w = block_on(Wiki::open(
            &backend,
            "batched",
            ManualClock::new(1_795_986_300_000),
            OpenOptions::default(),
        ))
        .unwrap();
        let n = REBUILD_BATCH + 44;
        for i in 0..n {
            block_on(w.put_page(PageEdit {
                title: Some(format!("Page {i} 第{i}页")),
                body: Some(format!("body {i} shared words 明月 w{}", i % 17)),
                ..Default::default()
            }))
            .unwrap();
        }
        let pages = block_on(w.all_pages()).unwrap();
        assert_eq!(pages.len(), n);
        let mut whole = SearchIndex::default();
        whole.upsert_many(pages.iter().map(|p| (p.key.as_str(), page_fields(p))));

        let quiet = ChangingStorage {
            inner: w.storage(),
            scans: Cell::new(0),
            change_at: usize::MAX,
        };
        let built = block_on(build_index_in_batches(&quiet)).unwrap().unwrap();
        // Two batches and an empty read, per pass.
        assert_eq!(quiet.scans.get(), 6);
        assert_eq!(built.to_records(), whole.to_records());

        // The change lands as the second pass starts (scan 4).
        let changing = ChangingStorage {
            inner: w.storage(),
            scans: Cell::new(0),
            change_at: 4,
        };
        assert!(block_on(build_index_in_batches(&changing))
            .unwrap()
            .is_none());
        // The wiki falls back to reading every page: its index has the change.
        let index = block_on(w.fresh_search_index()).unwrap();
        let hits = index.search("changed", &SearchOptions::default()).hits;
        assert_eq!(hits.len(), 1);
    }
}
