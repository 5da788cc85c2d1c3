//! A vector store for one embedding model: exact SIMD scan, and an HNSW graph above a size.
//!
//! **Shape.** Vectors are L2-normalised on the way in and kept as contiguous `f32` rows (row `i`
//! is `data[i * dim .. (i + 1) * dim]`), so cosine similarity is a dot product. Like the BM25
//! index, the store has a *base* (rows shared with the HNSW graph, never rewritten in place) and a
//! *delta* of rows added since the last rebuild; replaced or removed rows are flagged dead.
//!
//! **Search.** Exact scan: the dot product of the query with every live row, keeping the best `k`
//! in a bounded heap; on wasm it uses `simd128` (`core::arch::wasm32`, enabled by
//! `.cargo/config.toml`), elsewhere an 8-lane scalar loop the compiler vectorises. From
//! [`HNSW_MIN_ROWS`] base rows on, [`VectorStore::rebuild_now`] (or a Web Worker through
//! [`RebuildJob`] and [`build_graph`]) builds a Hierarchical Navigable Small World graph
//! (Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using
//! Hierarchical Navigable Small World graphs", IEEE TPAMI 2018) with `instant-distance`, which has
//! no insert: rows added later are scanned exactly in the delta and merged with the graph's
//! results.
//!
//! **Degenerate input.** A vector whose norm is zero or not finite (NaN, ∞) is recorded as *null*:
//! the page counts as embedded but never appears in vector results. A null query vector is an
//! error the caller turns into a BM25 fallback. `k = 0` gives nothing; `k > n` gives all live rows.
//!
//! *Invariant:* every stored row has exactly `dim` values; a vector of another length is refused
//! with [`VectorError::Dimension`], never truncated or padded.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use instant_distance::Search;
use serde::{Deserialize, Serialize};

use super::codec::{fold_words, DecodeResult};
use super::topk::TopK;

mod graph;
mod persist;

pub use graph::{
    build_graph, build_graph_with, distance_evaluations, GraphBuild, GraphBuildOptions,
    GraphVerdict, GRAPH_EVAL_COST, RECALL_TARGET,
};
use graph::{decode_graph, Graph, SlabPoint};
pub(crate) use persist::VectorsBaseSnapshot;

/// From this many live rows on, a graph is built ([`VectorStore::needs_rebuild`],
/// [`VectorStore::rebuild_now`]); [`build_graph`] still drops it if it cannot reach recall@10 ≥
/// 0.95 on a sample or is not predicted cheaper than the exact scan ([`GRAPH_EVAL_COST`]).
///
/// Figures behind it (native, release, 384-d, M = 32, ef_construction 100, heuristic off,
/// calibrated ef, top-10 p50 of graph ÷ exact scan, 200 queries): clustered vectors 0.49× at
/// 10k (ef 200, recall 1.0, 5.5 s build) and 0.29× at 20k (ef 200, recall 0.999, 13 s);
/// uniformly random vectors 1.75× at 10k (ef 400, recall 0.984, 9.6 s) and 2.19× at 20k (ef 800,
/// 29 s) — the graph wins on clustered data (what embeddings look like) from about 10k rows and
/// loses on random data at every size, which the cost check catches (at 10k random it is
/// dropped after calibration, ~6 700 evaluations per query × 6 > 10 000 rows). Below 10k rows
/// the exact scan takes under ~8 ms natively (7.6–8.1 ms p50 at 10k, loaded machine), and a
/// graph build would cost seconds in a worker for little gain. The browser figures
/// (BENCHMARKS.md: graph 0.80× the scan at 10k clustered) agree on the crossover.
pub const HNSW_MIN_ROWS: usize = 10_000;

/// Parameters of the HNSW graph (`instant-distance` fixes `M = 32` neighbours per node).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HnswParams {
    /// Candidate list size while building. Range `16..=800`; default 100. Small: fast builds,
    /// poorer graphs (lower recall); large: slow builds, recall saturates near 1.
    pub ef_construction: u32,
    /// Candidate list size while searching, also the most results one graph search returns.
    /// Range `16..=800`; default 100. Small: fast, lower recall; large: slower, recall → 1.
    pub ef_search: u32,
    /// Seed of the level generator, so builds are reproducible.
    pub seed: u64,
    /// Select neighbours with the paper's heuristic (algorithm 4, keeping pruned links) instead
    /// of simply the nearest. Default false: with the heuristic, builds were 6–19× slower for the
    /// same calibrated `ef_search` and similar query times (native release, 384-d, graph ÷ exact
    /// top-10 time): 2k random rows 17.0 s vs 0.91 s; 10k clustered 32.7 s vs 5.5 s, ef 200 both,
    /// 0.41× vs 0.49× of the exact scan. (It re-selects each neighbour's links on every insert,
    /// O(M²) distances.)
    pub heuristic: bool,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            ef_construction: 100,
            ef_search: 100,
            seed: 0x6c6c_6d2d_7769_6b69,
            heuristic: false,
        }
    }
}

impl HnswParams {
    fn clamped(self) -> Self {
        HnswParams {
            ef_construction: self.ef_construction.clamp(16, 800),
            ef_search: self.ef_search.clamp(16, 800),
            seed: self.seed,
            heuristic: self.heuristic,
        }
    }
}

/// Why a vector was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VectorError {
    /// The vector's length is not the store's dimension.
    #[error("vector has {given} dimensions, the store holds {expected}")]
    Dimension {
        /// The store's dimension.
        expected: usize,
        /// The vector's length.
        given: usize,
    },
    /// The query vector is zero or holds NaN/∞: there is no direction to compare.
    #[error("the query vector is zero or not finite")]
    NullQuery,
}

// ------------------------------------------------------------------------------------ kernels

/// Dot product of two equally long slices (the shorter length is used if they differ).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    use core::arch::wasm32::*;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let chunks = n / 16;
    let mut acc = [f32x4_splat(0.0); 4];
    for c in 0..chunks {
        let at = c * 16;
        for (j, slot) in acc.iter_mut().enumerate() {
            // SAFETY: at + 4j + 4 <= 16 * chunks <= n = a.len() = b.len(), so the 16 bytes read
            // are inside both slices; `v128_load` accepts unaligned addresses.
            let (va, vb) = unsafe {
                (
                    v128_load(a.as_ptr().add(at + 4 * j) as *const v128),
                    v128_load(b.as_ptr().add(at + 4 * j) as *const v128),
                )
            };
            *slot = f32x4_add(*slot, f32x4_mul(va, vb));
        }
    }
    let s = f32x4_add(f32x4_add(acc[0], acc[1]), f32x4_add(acc[2], acc[3]));
    let mut sum = f32x4_extract_lane::<0>(s)
        + f32x4_extract_lane::<1>(s)
        + f32x4_extract_lane::<2>(s)
        + f32x4_extract_lane::<3>(s);
    for i in chunks * 16..n {
        sum += a[i] * b[i];
    }
    sum
}

/// Dot product of two equally long slices (the shorter length is used if they differ).
/// Eight independent accumulators let the compiler vectorise it without `-ffast-math`.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut sum = (acc[0] + acc[4]) + (acc[1] + acc[5]) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        sum += x * y;
    }
    sum
}

/// `v / |v|`, or `None` when the norm is zero or not finite.
pub fn normalized(v: &[f32]) -> Option<Vec<f32>> {
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return None;
    }
    let out: Vec<f32> = v.iter().map(|&x| (f64::from(x) / norm) as f32).collect();
    out.iter().all(|x| x.is_finite()).then_some(out)
}

/// Exact top-k over `rows` of `data` (skipping rows where `dead[i]`), best first.
fn scan(data: &[f32], dim: usize, docs: &[u32], dead: &[bool], q: &[f32], top: &mut TopK) {
    if top.k() == 0 || dim == 0 {
        return;
    }
    for (i, row) in data.chunks_exact(dim).enumerate() {
        if !dead[i] {
            top.offer(dot(q, row), docs[i]);
        }
    }
}

/// Exact top-k of `query` over contiguous rows: `(row index, similarity)`, best first. `query`
/// and rows must be normalised. The reference the HNSW recall is measured against.
pub fn exact_top_k(data: &[f32], dim: usize, query: &[f32], k: usize) -> Vec<(u32, f32)> {
    let rows = data.len().checked_div(dim).unwrap_or(0);
    let ids: Vec<u32> = (0..rows as u32).collect();
    let mut top = TopK::new(k);
    scan(data, dim, &ids, &vec![false; rows], query, &mut top);
    top.into_sorted()
}
// ------------------------------------------------------------------------------------ store

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    Base(u32),
    Delta(u32),
    Null,
}

/// What happened to a vector given to [`VectorStore::put`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// Stored (normalised).
    Stored,
    /// Zero or not finite: recorded as null (never a vector hit).
    Null,
}

/// A snapshot of the live rows for building a graph elsewhere (a Web Worker): pass
/// [`RebuildJob::vectors`] to [`build_graph`], then hand the bytes to [`VectorStore::install`].
/// It holds no reference to the store: the store may change (and be saved and reloaded) while
/// the graph is built.
#[derive(Debug, Clone)]
pub struct RebuildJob {
    from_generation: u64,
    model: String,
    docs: Vec<u32>,
    slab: Arc<[f32]>,
    dim: usize,
}

impl RebuildJob {
    /// The rows, contiguous, `len() * dim()` values.
    pub fn vectors(&self) -> &[f32] {
        &self.slab
    }
    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.docs.len()
    }
    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
    /// The embedding model of the rows.
    pub fn model(&self) -> &str {
        &self.model
    }
}

/// What [`VectorStore::install`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallOutcome {
    /// The snapshot became the base; changes made since the snapshot stay in the delta.
    Installed,
    /// Another rebuild was installed since this job's snapshot: nothing changed.
    Stale,
}

/// Vectors of one embedding model (see the module docs).
pub struct VectorStore {
    model: String,
    dim: usize,
    params: HnswParams,
    base: Arc<[f32]>,
    base_docs: Vec<u32>,
    base_dead: Vec<bool>,
    base_dead_count: usize,
    graph: Option<Graph>,
    delta: Vec<f32>,
    delta_docs: Vec<u32>,
    delta_dead: Vec<bool>,
    loc: HashMap<u32, Loc>,
    /// Live rows when a graph build over this base was last given up ([`GraphVerdict`] other
    /// than kept): no new attempt until the store grows by half (see
    /// [`VectorStore::needs_rebuild`]). Persisted in the `meta` record.
    pub(crate) declined_at: Option<u32>,
    pub(crate) base_generation: u64,
    pub(crate) dirty_base: bool,
    pub(crate) dirty_delta: bool,
    pub(crate) dirty_graph: bool,
}

impl std::fmt::Debug for VectorStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorStore")
            .field("model", &self.model)
            .field("dim", &self.dim)
            .field("live", &self.live())
            .field("graph", &self.graph.is_some())
            .finish()
    }
}

impl VectorStore {
    /// An empty store for `model` with `dim`-dimensional vectors.
    pub fn new(model: &str, dim: usize, params: HnswParams) -> Self {
        VectorStore {
            model: model.to_string(),
            dim,
            params: params.clamped(),
            base: Arc::from(Vec::new()),
            base_docs: Vec::new(),
            base_dead: Vec::new(),
            base_dead_count: 0,
            graph: None,
            delta: Vec::new(),
            delta_docs: Vec::new(),
            delta_dead: Vec::new(),
            loc: HashMap::new(),
            declined_at: None,
            base_generation: 0,
            dirty_base: true,
            dirty_delta: true,
            dirty_graph: false,
        }
    }

    /// The model id.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Documents with a vector or a null record.
    pub fn embedded(&self) -> usize {
        self.loc.len()
    }

    /// Documents with a searchable (non-null) vector.
    pub fn live(&self) -> usize {
        self.loc
            .values()
            .filter(|l| !matches!(l, Loc::Null))
            .count()
    }

    /// True when `doc` has a vector or a null record.
    pub fn contains(&self, doc: u32) -> bool {
        self.loc.contains_key(&doc)
    }

    /// True when an HNSW graph serves the base.
    pub fn has_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// The graph's `ef_search` (as calibrated by [`build_graph`]), when there is a graph.
    pub fn graph_ef_search(&self) -> Option<usize> {
        self.graph.as_ref().map(|g| g.ef_search)
    }

    /// Rows in the delta and dead rows in the base.
    pub fn pending(&self) -> (usize, usize) {
        (
            self.delta_dead.iter().filter(|d| !**d).count(),
            self.base_dead_count,
        )
    }

    fn unlink(&mut self, doc: u32) {
        match self.loc.remove(&doc) {
            Some(Loc::Base(r)) => {
                self.base_dead[r as usize] = true;
                self.base_dead_count += 1;
            }
            Some(Loc::Delta(r)) => self.delta_dead[r as usize] = true,
            Some(Loc::Null) | None => {}
        }
    }

    /// Stores the vector of `doc`, replacing any earlier one.
    ///
    /// Errors: [`VectorError::Dimension`] when `vector.len() != dim` (nothing changes).
    pub fn put(&mut self, doc: u32, vector: &[f32]) -> Result<PutOutcome, VectorError> {
        if vector.len() != self.dim {
            return Err(VectorError::Dimension {
                expected: self.dim,
                given: vector.len(),
            });
        }
        self.unlink(doc);
        self.dirty_delta = true;
        let outcome = match normalized(vector) {
            Some(v) => {
                let row = self.delta_docs.len() as u32;
                self.delta.extend_from_slice(&v);
                self.delta_docs.push(doc);
                self.delta_dead.push(false);
                self.loc.insert(doc, Loc::Delta(row));
                PutOutcome::Stored
            }
            None => {
                self.loc.insert(doc, Loc::Null);
                PutOutcome::Null
            }
        };
        self.maybe_compact();
        Ok(outcome)
    }

    /// Forgets the vector of `doc`; returns whether it had one (or a null record).
    pub fn remove(&mut self, doc: u32) -> bool {
        let had = self.loc.contains_key(&doc);
        if had {
            self.unlink(doc);
            self.dirty_delta = true;
            self.maybe_compact();
        }
        had
    }

    /// Without a graph, folding the delta into the base is a copy: do it when the delta is large.
    /// With a graph, the caller decides when to rebuild ([`VectorStore::needs_rebuild`]).
    fn maybe_compact(&mut self) {
        if self.graph.is_some() {
            return;
        }
        let (delta, dead) = self.pending();
        if delta + dead > 256.max(self.base_docs.len() / 8) {
            let job = self.rebuild_job();
            self.install_rows(job, None);
        }
    }

    /// [`VectorStore::needs_rebuild_at`] with [`HNSW_MIN_ROWS`].
    pub fn needs_rebuild(&self) -> bool {
        self.needs_rebuild_at(HNSW_MIN_ROWS)
    }

    /// True when a graph (re)build is due, from `min_rows` live rows on: the store has no graph
    /// and no build was given up on it, or the last one was given up at fewer than ⅔ of today's
    /// rows (it grew by half since), or it has a graph and its delta and dead rows exceed a tenth
    /// of the base (at least 1024).
    pub fn needs_rebuild_at(&self, min_rows: usize) -> bool {
        let live = self.live();
        if live < min_rows.max(1) {
            return false;
        }
        let (delta, dead) = self.pending();
        match (&self.graph, self.declined_at) {
            (Some(_), _) => delta + dead > 1024.max(self.base_docs.len() / 10),
            (None, Some(n)) => live >= n as usize + (n as usize).div_ceil(2),
            (None, None) => true,
        }
    }

    /// Live rows when the last graph build was given up, if it was.
    pub fn graph_declined_at(&self) -> Option<usize> {
        self.declined_at.map(|n| n as usize)
    }

    /// A snapshot of every live row (base, then delta) for a rebuild.
    pub fn rebuild_job(&self) -> RebuildJob {
        let d = self.dim;
        let rows = if d == 0 {
            0
        } else {
            self.base_dead.iter().filter(|dead| !**dead).count()
                + self.delta_dead.iter().filter(|dead| !**dead).count()
        };
        let mut docs = Vec::with_capacity(rows);
        // The slab is allocated once, at its final size: filling a Vec and converting it into an
        // `Arc<[f32]>` would copy it, holding the rows twice more next to the old base and delta
        // (wasm linear memory keeps that high-water mark).
        let mut slab: Arc<[f32]> = std::iter::repeat_n(0.0, rows * d).collect();
        if let Some(data) = Arc::get_mut(&mut slab) {
            let mut rows_out = data.chunks_exact_mut(d.max(1));
            let live = self
                .base
                .chunks_exact(d.max(1))
                .zip(&self.base_docs)
                .zip(&self.base_dead)
                .chain(
                    self.delta
                        .chunks_exact(d.max(1))
                        .zip(&self.delta_docs)
                        .zip(&self.delta_dead),
                )
                .filter(|(_, dead)| !**dead);
            for ((row, &doc), _) in live.take(rows) {
                if let Some(out) = rows_out.next() {
                    out.copy_from_slice(row);
                    docs.push(doc);
                }
            }
        }
        RebuildJob {
            from_generation: self.base_generation,
            model: self.model.clone(),
            docs,
            slab,
            dim: d,
        }
    }

    /// Installs a rebuilt base: `graph` is what [`build_graph`] returned for `job.vectors()`, or
    /// `None` when the build gave the graph up (the rows are installed without a graph and no new
    /// build is due until the store grows by half, [`VectorStore::needs_rebuild_at`]). Changes
    /// made after the snapshot are kept: a document whose vector differs from the snapshot's (or
    /// is gone) has its snapshot row marked dead, and its current row stays in the delta. The
    /// comparison is by content, so it holds across a save and reload of the store.
    ///
    /// Returns [`InstallOutcome::Stale`] (nothing changes) when the base was rebuilt or compacted
    /// since the snapshot, or the store is of another model or dimension.
    ///
    /// Errors: a [`DecodeError`] when `graph` does not decode against the job's rows (nothing
    /// changes).
    pub fn install(
        &mut self,
        job: RebuildJob,
        graph: Option<&[u8]>,
    ) -> DecodeResult<InstallOutcome> {
        if job.from_generation != self.base_generation
            || job.model != self.model
            || job.dim != self.dim
        {
            return Ok(InstallOutcome::Stale);
        }
        let decoded = match graph {
            Some(bytes) => Some(decode_graph(bytes, &job.slab, job.dim)?),
            None => None,
        };
        self.declined_at = match decoded {
            Some(_) => None,
            None => Some(job.len() as u32),
        };
        self.install_rows(job, decoded);
        Ok(InstallOutcome::Installed)
    }

    /// The current row of `doc`, if it has a live one.
    fn row_of(&self, doc: u32) -> Option<&[f32]> {
        let d = self.dim;
        match self.loc.get(&doc)? {
            Loc::Base(r) => Some(&self.base[*r as usize * d..(*r as usize + 1) * d]),
            Loc::Delta(r) => Some(&self.delta[*r as usize * d..(*r as usize + 1) * d]),
            Loc::Null => None,
        }
    }

    fn install_rows(&mut self, job: RebuildJob, graph: Option<Graph>) {
        let d = self.dim;
        let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
        // A snapshot row serves the new base only if it is still the document's vector.
        let base_dead: Vec<bool> = job
            .docs
            .iter()
            .enumerate()
            .map(|(i, &doc)| {
                self.row_of(doc)
                    .is_none_or(|now| !same(now, &job.slab[i * d..(i + 1) * d]))
            })
            .collect();
        let in_base: HashSet<u32> = job
            .docs
            .iter()
            .zip(&base_dead)
            .filter(|(_, dead)| !**dead)
            .map(|(doc, _)| *doc)
            .collect();
        let mut delta = Vec::new();
        let mut delta_docs = Vec::new();
        if d > 0 {
            for (i, row) in self.delta.chunks_exact(d).enumerate() {
                let doc = self.delta_docs[i];
                if !self.delta_dead[i] && !in_base.contains(&doc) {
                    delta.extend_from_slice(row);
                    delta_docs.push(doc);
                }
            }
        }
        self.loc.retain(|_, l| matches!(l, Loc::Null));
        for (i, &doc) in job.docs.iter().enumerate() {
            if !base_dead[i] {
                self.loc.insert(doc, Loc::Base(i as u32));
            }
        }
        for (i, &doc) in delta_docs.iter().enumerate() {
            self.loc.insert(doc, Loc::Delta(i as u32));
        }
        self.base_dead_count = base_dead.iter().filter(|d| **d).count();
        self.base = job.slab;
        self.base_docs = job.docs;
        self.base_dead = base_dead;
        self.delta_dead = vec![false; delta_docs.len()];
        self.delta = delta;
        self.delta_docs = delta_docs;
        self.dirty_graph = self.graph.is_some() || graph.is_some();
        self.graph = graph;
        // A fingerprint of the new base (see the BM25 index).
        self.base_generation = fold_words(
            self.base_generation ^ 0x7ec,
            self.base_docs
                .iter()
                .copied()
                .chain(self.base.iter().map(|x| x.to_bits())),
        );
        self.dirty_base = true;
        self.dirty_delta = true;
    }

    /// Rebuilds here and now: snapshot, [`build_graph`] when at least [`HNSW_MIN_ROWS`] rows are
    /// live (else no graph), install. Seconds at 10k rows: in the browser, use a worker
    /// ([`VectorStore::rebuild_job`], [`build_graph`], [`VectorStore::install`]).
    pub fn rebuild_now(&mut self) {
        let job = self.rebuild_job();
        if job.len() >= HNSW_MIN_ROWS {
            let built = build_graph(job.vectors(), job.dim, self.params);
            self.install_built(job, built);
        } else {
            self.install_rows(job, None);
        }
    }

    /// Like [`VectorStore::rebuild_now`] whatever the size (tests, benchmarks); the graph is kept
    /// only if it passed calibration ([`build_graph`]). Returns what the build reported.
    pub fn rebuild_with_graph(&mut self) -> GraphBuild {
        self.rebuild_with_graph_using(GraphBuildOptions::default())
    }

    /// [`VectorStore::rebuild_with_graph`] with build options (`require_cheaper: false` keeps a
    /// graph that reaches the recall target on a few rows, for tests).
    pub fn rebuild_with_graph_using(&mut self, options: GraphBuildOptions) -> GraphBuild {
        let job = self.rebuild_job();
        let built = build_graph_with(job.vectors(), job.dim, self.params, options);
        self.install_built(job, built.clone());
        built
    }

    fn install_built(&mut self, job: RebuildJob, built: GraphBuild) {
        let decoded = built
            .bytes
            .and_then(|b| decode_graph(&b, &job.slab, job.dim).ok());
        self.declined_at = match decoded {
            Some(_) => None,
            None => Some(job.len() as u32),
        };
        self.install_rows(job, decoded);
    }

    /// The `k` nearest documents to `query` by cosine similarity, `(doc, similarity)`, best first
    /// (ties: lower doc id). Uses the graph for the base when there is one (falling back to the
    /// exact scan when the graph cannot supply `k` live rows), and the exact scan for the delta.
    ///
    /// Errors: [`VectorError::Dimension`], [`VectorError::NullQuery`].
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u32, f32)>, VectorError> {
        let q = self.prepare_query(query)?;
        let mut top = TopK::new(k);
        if k == 0 {
            return Ok(Vec::new());
        }
        let base_live = self.base_docs.len() - self.base_dead_count;
        let mut from_graph = false;
        if let Some(g) = &self.graph {
            let want = k.min(base_live);
            if want <= g.ef_search {
                let point = SlabPoint {
                    slab: Arc::from(q.as_slice()),
                    dim: self.dim as u32,
                    row: 0,
                };
                let mut search = Search::default();
                let mut found = Vec::with_capacity(want);
                for item in g.hnsw.search(&point, &mut search) {
                    let row = item.point.row as usize;
                    if !self.base_dead[row] {
                        found.push((1.0 - item.distance, self.base_docs[row]));
                    }
                }
                if found.len() >= want {
                    for (s, d) in found {
                        top.offer(s, d);
                    }
                    from_graph = true;
                }
            }
        }
        if !from_graph {
            scan(
                &self.base,
                self.dim,
                &self.base_docs,
                &self.base_dead,
                &q,
                &mut top,
            );
        }
        scan(
            &self.delta,
            self.dim,
            &self.delta_docs,
            &self.delta_dead,
            &q,
            &mut top,
        );
        Ok(top.into_sorted())
    }

    /// [`VectorStore::search`] without the graph: the exact answer.
    pub fn search_exact(&self, query: &[f32], k: usize) -> Result<Vec<(u32, f32)>, VectorError> {
        let q = self.prepare_query(query)?;
        let mut top = TopK::new(k);
        scan(
            &self.base,
            self.dim,
            &self.base_docs,
            &self.base_dead,
            &q,
            &mut top,
        );
        scan(
            &self.delta,
            self.dim,
            &self.delta_docs,
            &self.delta_dead,
            &q,
            &mut top,
        );
        Ok(top.into_sorted())
    }

    fn prepare_query(&self, query: &[f32]) -> Result<Vec<f32>, VectorError> {
        if query.len() != self.dim {
            return Err(VectorError::Dimension {
                expected: self.dim,
                given: query.len(),
            });
        }
        normalized(query).ok_or(VectorError::NullQuery)
    }

    /// The similarity of `doc`'s vector to `query` (`None` without a vector), for explain.
    pub fn similarity(&self, doc: u32, query: &[f32]) -> Option<f32> {
        let q = self.prepare_query(query).ok()?;
        let d = self.dim;
        match self.loc.get(&doc)? {
            Loc::Base(r) => Some(dot(&q, &self.base[*r as usize * d..(*r as usize + 1) * d])),
            Loc::Delta(r) => Some(dot(&q, &self.delta[*r as usize * d..(*r as usize + 1) * d])),
            Loc::Null => None,
        }
    }

    /// Bytes of heap memory held, for benchmarks (the graph counted by its serialised size, which
    /// is close to its in-memory node arrays).
    pub fn heap_bytes(&self) -> usize {
        4 * (self.base.len() + self.delta.capacity())
            + 4 * (self.base_docs.capacity() + self.delta_docs.capacity())
            + self.base_dead.capacity()
            + 9 * self.delta_dead.capacity()
            + 16 * self.loc.capacity()
            + self.graph.as_ref().map_or(0, |g| g.bytes.len() * 2)
    }
    /// Doc ids with a vector or null record.
    pub fn docs(&self) -> impl Iterator<Item = u32> + '_ {
        self.loc.keys().copied()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Deterministic uniform floats in [-1, 1).
    pub(crate) struct Rng(pub(crate) u64);
    impl Rng {
        pub(crate) fn f(&mut self) -> f32 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40;
            (x as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        }
        pub(crate) fn vec(&mut self, dim: usize) -> Vec<f32> {
            (0..dim).map(|_| self.f()).collect()
        }
        /// Vectors around `clusters` random centres (spread 0.35), like real embeddings.
        pub(crate) fn clustered(&mut self, n: usize, dim: usize, clusters: usize) -> Vec<Vec<f32>> {
            let centres: Vec<Vec<f32>> = (0..clusters).map(|_| self.vec(dim)).collect();
            (0..n)
                .map(|i| {
                    let c = &centres[i % clusters];
                    c.iter().map(|&x| x + 0.35 * self.f()).collect()
                })
                .collect()
        }
    }

    /// Build options that keep a graph reaching the recall target however small the store.
    pub(crate) const NO_COST_CHECK: GraphBuildOptions = GraphBuildOptions {
        require_cheaper: false,
    };

    #[test]
    fn dot_matches_naive_at_every_length() {
        let mut rng = Rng(7);
        for n in 0..70 {
            let a = rng.vec(n);
            let b = rng.vec(n);
            let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-4, "n = {n}");
        }
    }

    #[test]
    fn zero_nan_and_wrong_dimension() {
        let mut s = VectorStore::new("m", 3, HnswParams::default());
        assert_eq!(s.put(1, &[0.0, 0.0, 0.0]), Ok(PutOutcome::Null));
        assert_eq!(s.put(2, &[f32::NAN, 1.0, 0.0]), Ok(PutOutcome::Null));
        assert_eq!(s.put(3, &[f32::INFINITY, 1.0, 0.0]), Ok(PutOutcome::Null));
        assert_eq!(
            s.put(4, &[1.0, 0.0]),
            Err(VectorError::Dimension {
                expected: 3,
                given: 2
            })
        );
        assert_eq!(s.put(5, &[2.0, 0.0, 0.0]), Ok(PutOutcome::Stored));
        assert_eq!(s.embedded(), 4);
        assert_eq!(s.live(), 1);
        let hits = s.search(&[1.0, 0.0, 0.0], 10).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 5);
        assert!((hits[0].1 - 1.0).abs() < 1e-6);
        assert_eq!(s.search(&[0.0, 0.0, 0.0], 10), Err(VectorError::NullQuery));
        assert_eq!(
            s.search(&[f32::NAN, 0.0, 0.0], 10),
            Err(VectorError::NullQuery)
        );
        assert!(matches!(
            s.search(&[1.0; 4], 10),
            Err(VectorError::Dimension { .. })
        ));
        assert_eq!(s.search(&[1.0, 0.0, 0.0], 0), Ok(vec![]));
        let empty = VectorStore::new("m", 3, HnswParams::default());
        assert_eq!(empty.search(&[1.0, 0.0, 0.0], 5), Ok(vec![]));
    }

    #[test]
    fn replace_remove_and_compaction_keep_answers_exact() {
        let mut rng = Rng(11);
        let mut s = VectorStore::new("m", 16, HnswParams::default());
        let mut truth: HashMap<u32, Vec<f32>> = HashMap::new();
        for i in 0..1500u32 {
            let v = rng.vec(16);
            s.put(i % 700, &v).unwrap();
            truth.insert(i % 700, v);
            if i % 9 == 0 {
                s.remove(i % 350);
                truth.remove(&(i % 350));
            }
        }
        assert_eq!(s.live(), truth.len());
        let q = rng.vec(16);
        let hits = s.search(&q, 2000).unwrap();
        assert_eq!(hits.len(), truth.len());
        let qn = normalized(&q).unwrap();
        for (doc, sim) in &hits {
            let want = dot(&qn, &normalized(&truth[doc]).unwrap());
            assert!((sim - want).abs() < 1e-5);
        }
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
    }

    fn recall(store: &VectorStore, queries: &[Vec<f32>], k: usize) -> f64 {
        let mut hit = 0;
        for q in queries {
            let exact: Vec<u32> = store
                .search_exact(q, k)
                .unwrap()
                .iter()
                .map(|h| h.0)
                .collect();
            let approx: Vec<u32> = store.search(q, k).unwrap().iter().map(|h| h.0).collect();
            hit += approx.iter().filter(|d| exact.contains(d)).count();
        }
        hit as f64 / (k * queries.len()) as f64
    }

    #[test]
    fn hnsw_recall_at_10_is_at_least_0_95() {
        let mut rng = Rng(42);
        let dim = 64;
        let data = rng.clustered(4000, dim, 40);
        let mut s = VectorStore::new("m", dim, HnswParams::default());
        for (i, v) in data.iter().enumerate() {
            s.put(i as u32, v).unwrap();
        }
        s.rebuild_with_graph_using(NO_COST_CHECK);
        assert!(s.has_graph());
        let queries: Vec<Vec<f32>> = (0..100)
            .map(|i| data[i * 37].iter().map(|x| x + 0.2 * rng.f()).collect())
            .collect();
        let r = recall(&s, &queries, 10);
        assert!(r >= 0.95, "recall@10 = {r}");
        // Rows added after the build are found through the exact delta scan.
        let fresh = rng.vec(dim);
        s.put(9999, &fresh).unwrap();
        assert_eq!(s.search(&fresh, 1).unwrap()[0].0, 9999);
        // A removed row never comes back from the graph.
        let gone = s.search(&data[5], 1).unwrap()[0].0;
        s.remove(gone);
        assert!(s.search(&data[5], 50).unwrap().iter().all(|h| h.0 != gone));
    }

    #[test]
    fn calibration_keeps_a_graph_only_when_it_reaches_the_recall_target() {
        // Uniformly random vectors: the worst case for graph search.
        let mut rng = Rng(77);
        let dim = 48;
        let data: Vec<Vec<f32>> = (0..3000).map(|_| rng.vec(dim)).collect();
        let mut s = VectorStore::new("m", dim, HnswParams::default());
        for (i, v) in data.iter().enumerate() {
            s.put(i as u32, v).unwrap();
        }
        let job = s.rebuild_job();
        let built = build_graph(job.vectors(), dim, HnswParams::default());
        assert!(
            built.recall >= RECALL_TARGET || built.bytes.is_none(),
            "{built:?}"
        );
        assert!(built.ef_search >= 100 && built.ef_search <= 800);
        assert_eq!(
            s.install(job, built.bytes.as_deref()),
            Ok(InstallOutcome::Installed)
        );
        // Fresh queries (not the calibration sample): the target holds, graph or no graph.
        let queries: Vec<Vec<f32>> = (0..60)
            .map(|i| {
                data[i * 11]
                    .iter()
                    .zip(&data[i * 13 + 1])
                    .map(|(a, b)| a + b + 0.1 * rng.f())
                    .collect()
            })
            .collect();
        let r = recall(&s, &queries, 10);
        assert!(r >= 0.93, "recall@10 = {r}, ef {:?}", s.graph_ef_search());
    }

    #[test]
    fn worker_style_rebuild_keeps_changes_made_meanwhile() {
        let mut rng = Rng(5);
        let dim = 8;
        let mut s = VectorStore::new("m", dim, HnswParams::default());
        for i in 0..300u32 {
            s.put(i, &rng.vec(dim)).unwrap();
        }
        let job = s.rebuild_job();
        let graph = build_graph_with(
            job.vectors(),
            job.dim(),
            HnswParams::default(),
            NO_COST_CHECK,
        )
        .bytes
        .unwrap();
        // Meanwhile: one page changes, one is removed, one is added.
        let changed = rng.vec(dim);
        s.put(10, &changed).unwrap();
        s.remove(20);
        let added = rng.vec(dim);
        s.put(1000, &added).unwrap();
        assert_eq!(s.install(job, Some(&graph)), Ok(InstallOutcome::Installed));
        assert!(s.has_graph());
        assert_eq!(s.live(), 300);
        assert_eq!(s.search(&changed, 1).unwrap()[0].0, 10);
        assert_eq!(s.search(&added, 1).unwrap()[0].0, 1000);
        assert!(s.search(&changed, 400).unwrap().iter().all(|h| h.0 != 20));
        // A second job from before that install is stale.
        let old = RebuildJob {
            from_generation: 12345,
            model: "m".into(),
            docs: vec![],
            slab: Arc::from(Vec::new()),
            dim,
        };
        assert_eq!(s.install(old, None), Ok(InstallOutcome::Stale));
        // Garbage graph bytes: an error, nothing changes.
        let job = s.rebuild_job();
        assert!(s.install(job, Some(&[1, 2, 3])).is_err());
        assert!(s.has_graph());
    }

    #[test]
    fn graph_bytes_with_bad_neighbours_are_refused() {
        let mut rng = Rng(9);
        let rows: Vec<f32> = (0..100)
            .flat_map(|_| normalized(&rng.vec(4)).unwrap())
            .collect();
        let bytes = build_graph_with(&rows, 4, HnswParams::default(), NO_COST_CHECK)
            .bytes
            .unwrap();
        let slab: Arc<[f32]> = Arc::from(rows.clone());
        assert!(decode_graph(&bytes, &slab, 4).is_ok());
        // Fewer rows than the graph has nodes.
        let short: Arc<[f32]> = Arc::from(&rows[..40]);
        assert!(decode_graph(&bytes, &short, 4).is_err());
        // Every single-byte corruption either decodes to a valid graph or is refused: no panic.
        for i in (0..bytes.len()).step_by(7) {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            if let Ok(g) = decode_graph(&b, &slab, 4) {
                let mut search = Search::default();
                let p = SlabPoint {
                    slab: slab.clone(),
                    dim: 4,
                    row: 0,
                };
                let _ = g.hnsw.search(&p, &mut search).count();
            }
        }
    }

    #[test]
    fn cost_check_drops_the_graph_on_random_vectors_and_keeps_it_on_clustered_ones() {
        let mut rng = Rng(31);
        let rows = |data: &[Vec<f32>]| -> Vec<f32> {
            data.iter().flat_map(|v| normalized(v).unwrap()).collect()
        };
        // Uniformly random 32-d vectors: the graph evaluates most of the rows.
        let random: Vec<Vec<f32>> = (0..3000).map(|_| rng.vec(32)).collect();
        let built = build_graph(&rows(&random), 32, HnswParams::default());
        assert_eq!(built.verdict, GraphVerdict::NotCheaper, "{built:?}");
        assert!(built.bytes.is_none());
        assert!(built.evaluations * GRAPH_EVAL_COST >= 3000.0);
        assert_eq!(built.rows, 3000);
        // Clustered 16-d vectors: a search visits a small part of the rows.
        let clustered = rng.clustered(12_000, 16, 120);
        let built = build_graph(&rows(&clustered), 16, HnswParams::default());
        assert_eq!(built.verdict, GraphVerdict::Kept, "{built:?}");
        assert!(built.bytes.is_some() && built.recall >= RECALL_TARGET);
        assert!(built.evaluations * GRAPH_EVAL_COST < 12_000.0);
    }

    #[test]
    fn a_declined_build_waits_until_the_store_grows_by_half() {
        let mut rng = Rng(3);
        let mut s = VectorStore::new("m", 8, HnswParams::default());
        for i in 0..50u32 {
            s.put(i, &rng.vec(8)).unwrap();
        }
        assert!(!s.needs_rebuild(), "below HNSW_MIN_ROWS");
        assert!(s.needs_rebuild_at(40));
        let job = s.rebuild_job();
        assert_eq!(s.install(job, None), Ok(InstallOutcome::Installed));
        assert_eq!(s.graph_declined_at(), Some(50));
        assert!(!s.needs_rebuild_at(40));
        for i in 50..74u32 {
            s.put(i, &rng.vec(8)).unwrap();
        }
        assert!(!s.needs_rebuild_at(40), "74 < 75");
        s.put(74, &rng.vec(8)).unwrap();
        assert!(s.needs_rebuild_at(40), "75 = 50 × 1.5");
        // A kept graph clears it.
        let job = s.rebuild_job();
        let g = build_graph_with(job.vectors(), 8, HnswParams::default(), NO_COST_CHECK);
        assert_eq!(
            s.install(job, g.bytes.as_deref()),
            Ok(InstallOutcome::Installed)
        );
        assert_eq!(s.graph_declined_at(), None);
        assert!(!s.needs_rebuild_at(40));
    }

    #[test]
    fn a_job_of_another_model_or_dimension_is_stale() {
        let mut rng = Rng(4);
        let mut a = VectorStore::new("a", 4, HnswParams::default());
        let mut b = VectorStore::new("b", 4, HnswParams::default());
        for i in 0..10u32 {
            a.put(i, &rng.vec(4)).unwrap();
            b.put(i, &rng.vec(4)).unwrap();
        }
        // Both bases are empty (generation 0): only the model tells them apart.
        assert_eq!(b.install(a.rebuild_job(), None), Ok(InstallOutcome::Stale));
        assert_eq!(b.live(), 10);
    }
}
