//! Search over pages: BM25F, vectors, and their fusion, as one [`SearchIndex`].
//!
//! * [`tokenizer`] — Decision 13, shared by indexing and querying.
//! * [`bm25`] — incremental BM25F (title, aliases, body) with MaxScore top-k and `explain`.
//! * [`vectors`] — one embedding model's vectors: SIMD exact scan, HNSW above
//!   [`vectors::HNSW_MIN_ROWS`], a delta for rows added after the graph was built.
//! * [`fusion`] — reciprocal rank fusion.
//! * [`persist`] — the binary records the index lives in (`Store::Search`).
//! * `retokenize` — tokenizing a stored index again when an older tokenizer made it, keeping its
//!   vectors.
//!
//! The facade maps page keys to `u32` doc ids shared by both indexes, and keeps the vectors of
//! one embedding model *active* and, after the user confirmed a model change, a second one
//! *staging* until every page has a vector in it (field case F28).
//!
//! *Invariant:* vectors of different models (or dimensions) never meet: each store holds one
//! `(model, dim)`, a vector is only ever compared with vectors of its own store, and a vector for
//! no store is refused (reported, not stored). A query whose model is not the active one falls
//! back to BM25 with a status saying why — never a panic, never a silent empty list.
//!
//! *Invariant:* this module does no I/O and holds the only in-memory copy of the index; its
//! changes reach storage through [`SearchIndex::dirty_records`], which the commit code adds to
//! the same batch as the page change. If that commit fails, reload with
//! [`SearchIndex::from_records`] (in-memory state must not run ahead of storage, Decision 8).

pub mod bm25;
pub mod codec;
pub mod fusion;
// Generated (scripts/han-fold-table.mjs), laid out by the generator.
#[rustfmt::skip]
mod han_table;
pub mod passages;
pub mod persist;
mod query;
mod retokenize;
pub mod tokenizer;
mod topk;
pub mod vectors;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

pub use bm25::DocFields;
use bm25::{Bm25Index, Bm25Params};
use vectors::{HnswParams, PutOutcome, VectorError, VectorStore};

pub use passages::{HitKind, NewPassage, PassageMeta};
pub use query::{
    HitExplain, QueryVector, SearchHit, SearchMode, SearchOptions, SearchResults, SearchStatus,
};
pub use retokenize::PassageRetokenize;

/// Settings of a [`SearchIndex`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SearchConfig {
    /// BM25F parameters.
    pub bm25: Bm25Params,
    /// HNSW parameters.
    pub hnsw: HnswParams,
    /// The RRF constant (see [`fusion::RRF_K`]).
    pub rrf_k: f32,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            bm25: Bm25Params::default(),
            hnsw: HnswParams::default(),
            rrf_k: fusion::RRF_K,
        }
    }
}

/// A page's embedding given to [`SearchIndex::upsert`].
#[derive(Debug, Clone, Copy)]
pub struct Embedding<'a> {
    /// The model that produced it.
    pub model: &'a str,
    /// The vector; its length is the dimension.
    pub vector: &'a [f32],
}

/// What happened to the vector of an upserted page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum VectorOutcome {
    /// Stored in the store of its model.
    Stored,
    /// No vector was given: the page is listed by [`SearchIndex::missing_embeddings`].
    Missing,
    /// The vector was zero or not finite: the page is found by BM25 only.
    Null,
    /// The vector's model or dimension matches no store: not stored (never mixed).
    #[serde(rename_all = "camelCase")]
    Rejected {
        /// The active store's model.
        stored_model: String,
        /// Its dimension.
        stored_dim: usize,
        /// The vector's model.
        given_model: String,
        /// Its length.
        given_dim: usize,
    },
}

/// Where embeddings stand for a configured model (see [`SearchIndex::embedding_status`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum EmbeddingStatus {
    /// The active vectors are of this model; `missing` pages still need one.
    Ready {
        /// Pages without a vector.
        missing: usize,
    },
    /// No vectors yet.
    NoVectors,
    /// A re-embed to this model is under way.
    Reembedding {
        /// Pages embedded with the new model.
        done: usize,
        /// Pages in all.
        total: usize,
    },
    /// The stored vectors are of another model or dimension.
    #[serde(rename_all = "camelCase")]
    ReembedRequired {
        /// Stored model.
        stored_model: String,
        /// Stored dimension.
        stored_dim: usize,
    },
}

/// Errors of the search facade.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SearchError {
    /// No page with this key is indexed.
    #[error("no indexed page {0:?}")]
    UnknownKey(String),
    /// A batch of vectors matches neither the active nor the re-embedding model: nothing stored.
    #[error("vectors of {given_model} ({given_dim}-d) match no store (active: {active:?}); nothing was stored — confirm re-embedding first")]
    ModelMismatch {
        /// The active `(model, dim)`, if any.
        active: Option<(String, usize)>,
        /// The batch's model.
        given_model: String,
        /// The batch's dimension.
        given_dim: usize,
    },
    /// The vectors of one batch have different lengths: nothing stored.
    #[error("a batch mixes vector dimensions; nothing was stored")]
    MixedDimensions,
}

impl From<SearchError> for crate::Error {
    fn from(e: SearchError) -> Self {
        crate::Error::InvalidInput(e.to_string())
    }
}

/// Page keys ↔ `u32` doc ids (ids of removed pages are reused).
#[derive(Debug, Clone, Default)]
pub(crate) struct DocTable {
    pub(crate) keys: Vec<Option<String>>,
    /// Per doc id, a hash of the indexed fields ([`fields_hash`]), to resync without re-reading.
    pub(crate) hashes: Vec<u64>,
    pub(crate) by_key: HashMap<String, u32>,
    pub(crate) free: Vec<u32>,
}

impl DocTable {
    fn id(&self, key: &str) -> Option<u32> {
        self.by_key.get(key).copied()
    }
    fn insert(&mut self, key: &str) -> u32 {
        if let Some(id) = self.id(key) {
            return id;
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.keys.push(None);
                self.hashes.push(0);
                (self.keys.len() - 1) as u32
            }
        };
        self.keys[id as usize] = Some(key.to_string());
        self.by_key.insert(key.to_string(), id);
        id
    }
    fn remove(&mut self, key: &str) -> Option<u32> {
        let id = self.by_key.remove(key)?;
        self.keys[id as usize] = None;
        self.hashes[id as usize] = 0;
        self.free.push(id);
        Some(id)
    }
    pub(crate) fn key(&self, id: u32) -> &str {
        self.keys
            .get(id as usize)
            .and_then(|k| k.as_deref())
            .unwrap_or("")
    }
    fn len(&self) -> usize {
        self.by_key.len()
    }
}

/// A 64-bit hash of a page's indexed fields: equal hashes mean re-indexing would change nothing.
pub fn fields_hash(fields: &DocFields<'_>) -> u64 {
    let mut h = codec::hash64(fields.title.as_bytes());
    let mut mix = |part: &[u8]| {
        let mut b = h.to_le_bytes().to_vec();
        b.extend_from_slice(&codec::hash64(part).to_le_bytes());
        h = codec::hash64(&b);
    };
    for a in fields.aliases {
        mix(a.as_bytes());
    }
    mix(b"\0body");
    mix(fields.body.as_bytes());
    h
}

/// What [`SearchIndex::sync`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReport {
    /// Pages indexed for the first time.
    pub added: usize,
    /// Pages whose fields changed (re-tokenized; their vectors dropped as stale).
    pub updated: usize,
    /// Pages no longer present (removed).
    pub removed: usize,
}

/// The search index of one wiki: BM25F over every page, and the vectors of its embedding model.
#[derive(Debug)]
pub struct SearchIndex {
    pub(crate) config: SearchConfig,
    pub(crate) docs: DocTable,
    pub(crate) bm25: Bm25Index,
    pub(crate) active: Option<VectorStore>,
    pub(crate) staging: Option<VectorStore>,
    /// What storage holds, to know which records to delete (see `persist.rs`).
    pub(crate) persisted: persist::Persisted,
    pub(crate) dirty_meta: bool,
    /// The wiki operation the index was last synchronised with (set by `search_ops`).
    pub(crate) synced_op: Option<u64>,
    /// The revision of the stored `search/op` stamp this index was read or saved at (`None`: no
    /// stamp), so a save can expect it (set by `search_ops`).
    pub(crate) stamp_rev: Option<u64>,
    /// The passages of the sources (`None` until a source is indexed), see [`passages`].
    pub(crate) passages: Option<Box<passages::Passages>>,
    /// The [`tokenizer::TOKENIZER_VERSION`] the BM25 postings were made with.
    pub(crate) tokenizer: u32,
}

/// A full build of a [`SearchIndex`] (BM25 only; vectors come later through
/// [`SearchIndex::put_embeddings`]) in two passes over the pages, each fed in batches of any size:
/// [`IndexBuilder::count`] every page, then [`IndexBuilder::fill`] the same pages in the same
/// order, then [`IndexBuilder::finish`] (see [`bm25::Bm25Builder`] for the algorithm). Peak
/// memory is the index plus one batch of pages, not every page's text at once.
#[derive(Debug)]
pub struct IndexBuilder {
    index: SearchIndex,
    bm25: bm25::Bm25Builder,
}

impl IndexBuilder {
    /// Pass 1 for one page. Errors ([`crate::Error::InvalidInput`]) when `key` was already counted
    /// or pass 2 began.
    pub fn count(&mut self, key: &str, fields: &DocFields<'_>) -> crate::Result<()> {
        if self.index.docs.id(key).is_some() || self.bm25.is_filling() {
            return Err(crate::Error::InvalidInput(format!(
                "search build: page {key:?} given twice, or counted after the second pass began"
            )));
        }
        let doc = self.index.docs.insert(key);
        self.index.docs.hashes[doc as usize] = fields_hash(fields);
        self.bm25
            .count(doc, fields)
            .map_err(|e| crate::Error::InvalidInput(e.to_string()))
    }

    /// Pass 2 for one page: the same key and fields as the `count` at this position. Errors
    /// ([`crate::Error::InvalidInput`]) when the page is unknown or changed
    /// between the passes; the build is then void.
    pub fn fill(&mut self, key: &str, fields: &DocFields<'_>) -> crate::Result<()> {
        let doc = self.index.docs.id(key).ok_or_else(|| {
            crate::Error::InvalidInput(format!("search build: page {key:?} was not counted"))
        })?;
        if self.index.docs.hashes[doc as usize] != fields_hash(fields) {
            return Err(crate::Error::InvalidInput(format!(
                "search build: page {key:?} changed between the passes"
            )));
        }
        self.bm25
            .fill(doc, fields)
            .map_err(|e| crate::Error::InvalidInput(e.to_string()))
    }

    /// The built index (nothing persisted yet). Errors when pass 2 missed pages of pass 1.
    pub fn finish(self) -> crate::Result<SearchIndex> {
        let mut index = self.index;
        index.bm25 = self
            .bm25
            .finish()
            .map_err(|e| crate::Error::InvalidInput(e.to_string()))?;
        index.dirty_meta = true;
        Ok(index)
    }

    /// Pages counted so far.
    pub fn len(&self) -> usize {
        self.bm25.len()
    }

    /// True before the first page.
    pub fn is_empty(&self) -> bool {
        self.bm25.is_empty()
    }
}

impl Default for SearchIndex {
    fn default() -> Self {
        SearchIndex::new(SearchConfig::default())
    }
}

impl SearchIndex {
    /// An empty index.
    pub fn new(config: SearchConfig) -> Self {
        SearchIndex {
            config,
            docs: DocTable::default(),
            bm25: Bm25Index::new(config.bm25),
            active: None,
            staging: None,
            persisted: persist::Persisted::default(),
            dirty_meta: true,
            synced_op: None,
            stamp_rev: None,
            passages: None,
            tokenizer: tokenizer::current_version(),
        }
    }

    /// The settings.
    pub fn config(&self) -> SearchConfig {
        self.config
    }

    /// Number of indexed pages.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Keys of the indexed pages, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.docs.by_key.keys().cloned().collect();
        crate::util::sort(&mut keys);
        keys
    }

    /// Model and dimension of the vectors searches use now, if any.
    pub fn active_model(&self) -> Option<(&str, usize)> {
        self.active.as_ref().map(|s| (s.model(), s.dim()))
    }

    /// True when no page is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs.len() == 0
    }

    /// True when `key` is indexed.
    pub fn contains(&self, key: &str) -> bool {
        self.docs.id(key).is_some()
    }

    /// The BM25 index (for benchmarks and diagnostics).
    pub fn bm25(&self) -> &Bm25Index {
        &self.bm25
    }

    /// The active vector store, if any.
    pub fn vectors(&self) -> Option<&VectorStore> {
        self.active.as_ref()
    }

    /// Mutable access to the active vector store (e.g. to install a graph a worker built).
    pub fn vectors_mut(&mut self) -> Option<&mut VectorStore> {
        self.dirty_meta = true;
        self.active.as_mut()
    }

    /// Indexes a page (new or changed): its fields go to BM25 (tokenized once), its old vectors
    /// (which describe the old text) are dropped, and `embedding`, when given, is stored in the
    /// store of its model. A vector of no store's model is refused and reported, never mixed; the
    /// page is still indexed for BM25.
    pub fn upsert(
        &mut self,
        key: &str,
        fields: &DocFields<'_>,
        embedding: Option<Embedding<'_>>,
    ) -> VectorOutcome {
        let doc = self.docs.insert(key);
        self.docs.hashes[doc as usize] = fields_hash(fields);
        self.dirty_meta = true;
        self.bm25.upsert(doc, fields);
        for s in [&mut self.active, &mut self.staging].into_iter().flatten() {
            s.remove(doc);
        }
        let outcome = match embedding {
            None => VectorOutcome::Missing,
            Some(e) => self.store_vector(doc, e),
        };
        self.maybe_promote();
        outcome
    }

    /// Indexes many pages at once (one BM25 merge at the end): a full rebuild. Vectors are not
    /// touched; give them with [`SearchIndex::put_embeddings`].
    pub fn upsert_many<'a>(&mut self, pages: impl IntoIterator<Item = (&'a str, DocFields<'a>)>) {
        let mut batch = Vec::new();
        for (key, fields) in pages {
            let doc = self.docs.insert(key);
            self.docs.hashes[doc as usize] = fields_hash(&fields);
            for s in [&mut self.active, &mut self.staging].into_iter().flatten() {
                s.remove(doc);
            }
            batch.push((doc, fields));
        }
        self.bm25.upsert_many(batch);
        self.dirty_meta = true;
    }

    /// Removes every page whose key is not in `seen` (what [`SearchIndex::sync`] was not
    /// given); returns how many.
    fn remove_missing(&mut self, seen: &std::collections::HashSet<&str>) -> usize {
        let gone: Vec<String> = self
            .docs
            .by_key
            .keys()
            .filter(|k| !seen.contains(k.as_str()))
            .cloned()
            .collect();
        for key in &gone {
            self.remove(key);
        }
        gone.len()
    }

    /// Starts a full build fed in batches ([`IndexBuilder`]): the way a rebuild indexes a wiki
    /// without holding every page at once. The result has this index's settings and no vectors.
    pub fn builder(config: SearchConfig) -> IndexBuilder {
        IndexBuilder {
            index: SearchIndex::new(config),
            bm25: bm25::Bm25Builder::new(config.bm25, 0),
        }
    }

    /// Brings the index in line with `pages` (every page of the wiki): pages whose fields hash
    /// differs are re-indexed, new ones added, missing ones removed; unchanged pages keep their
    /// postings and vectors and are not tokenized.
    pub fn sync<'a>(
        &mut self,
        pages: impl IntoIterator<Item = (&'a str, DocFields<'a>)>,
    ) -> SyncReport {
        let mut report = SyncReport::default();
        let mut seen = std::collections::HashSet::new();
        let mut changed = Vec::new();
        for (key, fields) in pages {
            seen.insert(key);
            match self.docs.id(key) {
                Some(id) if self.docs.hashes[id as usize] == fields_hash(&fields) => {}
                Some(_) => {
                    report.updated += 1;
                    changed.push((key, fields));
                }
                None => {
                    report.added += 1;
                    changed.push((key, fields));
                }
            }
        }
        report.removed = self.remove_missing(&seen);
        if !changed.is_empty() {
            self.upsert_many(changed);
        }
        report
    }

    /// Applies one operation's page changes: `written` pages whose fields hash differs (or that
    /// are new) are indexed again, `deleted` ones removed; every other page keeps its postings
    /// and vectors. What [`SearchIndex::sync`] does for the pages it is given, without needing
    /// every page — and through the BM25 delta ([`SearchIndex::upsert`]), so a commit costs its
    /// pages, not a merge of the whole index (merges come when the delta is due one).
    pub fn apply<'a>(
        &mut self,
        written: impl IntoIterator<Item = (&'a str, DocFields<'a>)>,
        deleted: impl IntoIterator<Item = &'a str>,
    ) -> SyncReport {
        let mut report = SyncReport::default();
        for (key, fields) in written {
            match self.docs.id(key) {
                Some(id) if self.docs.hashes[id as usize] == fields_hash(&fields) => {}
                Some(_) => {
                    report.updated += 1;
                    self.upsert(key, &fields, None);
                }
                None => {
                    report.added += 1;
                    self.upsert(key, &fields, None);
                }
            }
        }
        for key in deleted {
            if self.remove(key) {
                report.removed += 1;
            }
        }
        report
    }

    fn store_vector(&mut self, doc: u32, e: Embedding<'_>) -> VectorOutcome {
        let dim = e.vector.len();
        if self.active.is_none() && self.staging.is_none() {
            self.active = Some(VectorStore::new(e.model, dim, self.config.hnsw));
        }
        let matches = |s: &Option<VectorStore>| {
            s.as_ref()
                .is_some_and(|s| s.model() == e.model && s.dim() == dim)
        };
        let target = if matches(&self.active) {
            self.active.as_mut()
        } else if matches(&self.staging) {
            self.staging.as_mut()
        } else {
            None
        };
        match target {
            Some(s) => match s.put(doc, e.vector) {
                Ok(PutOutcome::Stored) => VectorOutcome::Stored,
                Ok(PutOutcome::Null) => VectorOutcome::Null,
                Err(VectorError::Dimension { .. } | VectorError::NullQuery) => {
                    rejection(self.active.as_ref(), e)
                }
            },
            None => rejection(self.active.as_ref(), e),
        }
    }

    /// Removes a page from every index; returns whether it was indexed.
    pub fn remove(&mut self, key: &str) -> bool {
        let Some(doc) = self.docs.remove(key) else {
            return false;
        };
        self.bm25.remove(doc);
        for s in [&mut self.active, &mut self.staging].into_iter().flatten() {
            s.remove(doc);
        }
        self.dirty_meta = true;
        self.maybe_promote();
        true
    }

    /// Stores a batch of embeddings of `model` for indexed pages — late embeddings of new pages,
    /// or a re-embed batch. All or nothing: the batch must have one dimension, name indexed pages,
    /// and match the active store or the re-embedding one (or be the first vectors at all).
    /// Returns how many vectors were stored (null vectors count as stored).
    ///
    /// Errors: [`SearchError::UnknownKey`], [`SearchError::MixedDimensions`],
    /// [`SearchError::ModelMismatch`] (F28: an in-flight batch of the old model after the switch
    /// is refused whole, never mixed).
    pub fn put_embeddings(
        &mut self,
        model: &str,
        items: &[(&str, &[f32])],
    ) -> Result<usize, SearchError> {
        let Some(dim) = items.first().map(|i| i.1.len()) else {
            return Ok(0);
        };
        if items.iter().any(|i| i.1.len() != dim) {
            return Err(SearchError::MixedDimensions);
        }
        let mut docs = Vec::with_capacity(items.len());
        for (key, _) in items {
            docs.push(
                self.docs
                    .id(key)
                    .ok_or_else(|| SearchError::UnknownKey(key.to_string()))?,
            );
        }
        if self.active.is_none() && self.staging.is_none() {
            self.active = Some(VectorStore::new(model, dim, self.config.hnsw));
        }
        let is = |s: &Option<VectorStore>| {
            s.as_ref()
                .is_some_and(|s| s.model() == model && s.dim() == dim)
        };
        let store = if is(&self.active) {
            self.active.as_mut()
        } else if is(&self.staging) {
            self.staging.as_mut()
        } else {
            None
        };
        let Some(store) = store else {
            return Err(SearchError::ModelMismatch {
                active: self
                    .active
                    .as_ref()
                    .map(|s| (s.model().to_string(), s.dim())),
                given_model: model.to_string(),
                given_dim: dim,
            });
        };
        for (doc, (_, v)) in docs.iter().zip(items) {
            // Dimensions were checked above: put cannot fail.
            let _ = store.put(*doc, v);
        }
        self.dirty_meta = true;
        self.maybe_promote();
        Ok(items.len())
    }

    /// Keys of pages that still need an embedding of `(model, dim)`: pages missing from the
    /// active store when it is of that model, from the re-embedding store when that one is, all
    /// pages when there are no vectors yet, and none when the model needs a confirmed re-embed
    /// first (see [`SearchIndex::embedding_status`]).
    pub fn missing_embeddings(&self, model: &str, dim: usize) -> Vec<String> {
        let store = [&self.active, &self.staging]
            .into_iter()
            .flatten()
            .find(|s| s.model() == model && s.dim() == dim);
        let mut keys: Vec<String> = match store {
            Some(s) => self
                .docs
                .by_key
                .iter()
                .filter(|(_, &id)| !s.contains(id))
                .map(|(k, _)| k.clone())
                .collect(),
            None if self.active.is_none() => self.docs.by_key.keys().cloned().collect(),
            None => Vec::new(),
        };
        crate::util::sort(&mut keys);
        keys
    }

    /// The dimension of the stored vectors of `model` (active or being re-embedded), if any.
    pub fn embedding_dim(&self, model: &str) -> Option<usize> {
        [&self.staging, &self.active]
            .into_iter()
            .flatten()
            .find(|s| s.model() == model)
            .map(|s| s.dim())
    }

    /// Where embeddings stand for the configured `(model, dim)`.
    pub fn embedding_status(&self, model: &str, dim: usize) -> EmbeddingStatus {
        match (&self.active, &self.staging) {
            (Some(a), _) if a.model() == model && a.dim() == dim => EmbeddingStatus::Ready {
                missing: self.len() - a.embedded(),
            },
            (_, Some(s)) if s.model() == model && s.dim() == dim => EmbeddingStatus::Reembedding {
                done: s.embedded(),
                total: self.len(),
            },
            (None, _) => EmbeddingStatus::NoVectors,
            (Some(a), _) => EmbeddingStatus::ReembedRequired {
                stored_model: a.model().to_string(),
                stored_dim: a.dim(),
            },
        }
    }

    /// The user confirmed re-embedding with `(model, dim)`: start collecting vectors of that model
    /// (fed by [`SearchIndex::put_embeddings`] in batches, progress in
    /// [`SearchIndex::embedding_status`]). The old vectors stay active until every page has a new
    /// one, then they are replaced in one step. A no-op when `(model, dim)` is already active or
    /// already being collected.
    pub fn confirm_reembed(&mut self, model: &str, dim: usize) {
        let same = |s: &Option<VectorStore>| {
            s.as_ref()
                .is_some_and(|s| s.model() == model && s.dim() == dim)
        };
        if let Some(p) = self.passages.as_mut() {
            // The passages follow the pages' model: their own re-embed starts with it.
            if p.index.active.is_some() {
                p.index.confirm_reembed(model, dim);
            }
        }
        if same(&self.active) || same(&self.staging) {
            return;
        }
        self.staging = Some(VectorStore::new(model, dim, self.config.hnsw));
        self.dirty_meta = true;
        self.maybe_promote();
    }

    fn maybe_promote(&mut self) {
        let complete = self
            .staging
            .as_ref()
            .is_some_and(|s| s.embedded() >= self.docs.len());
        if complete {
            let mut s = self.staging.take().expect("checked above");
            s.dirty_base = true;
            s.dirty_delta = true;
            s.dirty_graph = s.has_graph();
            self.active = Some(s);
            self.dirty_meta = true;
        }
    }
}

fn rejection(active: Option<&VectorStore>, e: Embedding<'_>) -> VectorOutcome {
    VectorOutcome::Rejected {
        stored_model: active.map(|a| a.model().to_string()).unwrap_or_default(),
        stored_dim: active.map_or(0, VectorStore::dim),
        given_model: e.model.to_string(),
        given_dim: e.vector.len(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
