//! The HNSW graph over a store's base rows (`instant-distance`): its points (rows of a shared
//! slab), the build with its recall and cost checks ([`build_graph`]), and the checked decoding
//! of a stored graph.
//!
//! *Invariant:* a graph is kept only when it reaches the recall target on a sample and is
//! predicted cheaper than the exact scan; a stored graph is checked against the row count before
//! `instant-distance` sees it, so a bad record is a [`DecodeError`], never a panic.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use instant_distance::{Builder, Hnsw, Point, Search};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{dot, exact_top_k, normalized, HnswParams};
use crate::search::codec::{DecodeError, DecodeResult};

/// A graph node: a row of a shared slab of normalised vectors. Serialises as its row number only;
/// the slab is supplied when decoding (see [`decode_graph`]).
#[derive(Clone)]
pub(super) struct SlabPoint {
    pub(super) slab: Arc<[f32]>,
    pub(super) dim: u32,
    pub(super) row: u32,
}

impl SlabPoint {
    pub(super) fn vector(&self) -> &[f32] {
        let (d, r) = (self.dim as usize, self.row as usize);
        &self.slab[r * d..(r + 1) * d]
    }
}

thread_local! {
    /// Distance evaluations made by graph points on this thread (see [`build_graph`]'s cost
    /// check): a count, not a time, so the verdict does not depend on the machine or its load.
    static DISTANCE_EVALS: Cell<u64> = const { Cell::new(0) };
}

/// Distance evaluations graph searches and builds made on this thread so far (a wrapping
/// counter; take differences). For benchmarks: graph cost per evaluation vs exact cost per row
/// ([`GRAPH_EVAL_COST`]).
pub fn distance_evaluations() -> u64 {
    DISTANCE_EVALS.with(Cell::get)
}

impl Point for SlabPoint {
    fn distance(&self, other: &Self) -> f32 {
        DISTANCE_EVALS.with(|c| c.set(c.get() + 1));
        // Cosine distance of unit vectors.
        1.0 - dot(self.vector(), other.vector())
    }
}

impl Serialize for SlabPoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(self.row)
    }
}

/// A slab, its dimension and its row count.
pub(super) type SlabContext = Option<(Arc<[f32]>, u32, u32)>;

thread_local! {
    /// The slab graph points refer to while a graph is being decoded on this thread.
    static DECODE_SLAB: RefCell<SlabContext> = const { RefCell::new(None) };
}

impl<'de> Deserialize<'de> for SlabPoint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let row = u32::deserialize(d)?;
        DECODE_SLAB.with(|s| match &*s.borrow() {
            Some((slab, dim, rows)) if row < *rows => Ok(SlabPoint {
                slab: slab.clone(),
                dim: *dim,
                row,
            }),
            _ => Err(serde::de::Error::custom(
                "graph point outside the vector slab",
            )),
        })
    }
}

/// The serde shape of `instant_distance::Hnsw`, read first to check every neighbour id before the
/// real graph is decoded (the crate indexes arrays with them and would panic on a bad one).
#[derive(Deserialize)]
pub(super) struct HnswShape {
    ef_search: usize,
    points: Vec<u32>,
    zero: Vec<NodeShape<64>>,
    layers: Vec<Vec<NodeShape<32>>>,
}

pub(super) struct NodeShape<const N: usize>(Vec<u32>);

impl<'de, const N: usize> Deserialize<'de> for NodeShape<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const N: usize>;
        impl<'de, const N: usize> serde::de::Visitor<'de> for V<N> {
            type Value = NodeShape<N>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{N} neighbour ids")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                let mut v = Vec::with_capacity(N);
                for _ in 0..N {
                    v.push(
                        a.next_element::<u32>()?
                            .ok_or_else(|| serde::de::Error::custom("short node"))?,
                    );
                }
                Ok(NodeShape(v))
            }
        }
        // UpperNode is a newtype around [PointId; 32]; ZeroNode around a BigArray of 64. Both
        // reach postcard as a fixed-length tuple.
        struct Outer<const N: usize>;
        impl<'de, const N: usize> serde::de::Visitor<'de> for Outer<N> {
            type Value = NodeShape<N>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "a node")
            }
            fn visit_newtype_struct<D2: Deserializer<'de>>(
                self,
                d: D2,
            ) -> Result<Self::Value, D2::Error> {
                d.deserialize_tuple(N, V::<N>)
            }
        }
        d.deserialize_newtype_struct("Node", Outer::<N>)
    }
}

pub(super) fn check_shape(bytes: &[u8], rows: u32) -> DecodeResult<()> {
    pub(super) const INVALID: u32 = u32::MAX;
    let (shape, rest): (HnswShape, &[u8]) =
        postcard::take_from_bytes(bytes).map_err(|e| DecodeError::new(format!("graph: {e}")))?;
    if !rest.is_empty() {
        return Err(DecodeError::new("graph: trailing bytes"));
    }
    let n = shape.points.len();
    if n != rows as usize || shape.zero.len() != n {
        return Err(DecodeError::new(
            "graph: node count differs from the vector rows",
        ));
    }
    if shape.ef_search == 0 || shape.ef_search > 10_000 {
        return Err(DecodeError::new("graph: bad ef_search"));
    }
    if shape.points.iter().any(|&p| p >= rows) {
        return Err(DecodeError::new("graph: point outside the rows"));
    }
    let ok = |ids: &[u32], len: usize| ids.iter().all(|&p| p == INVALID || (p as usize) < len);
    if !shape.zero.iter().all(|z| ok(&z.0, n)) {
        return Err(DecodeError::new("graph: neighbour outside layer 0"));
    }
    let mut prev = n;
    for layer in &shape.layers {
        if layer.is_empty() || layer.len() > prev || !layer.iter().all(|u| ok(&u.0, layer.len())) {
            return Err(DecodeError::new("graph: malformed upper layer"));
        }
        prev = layer.len();
    }
    Ok(())
}

/// The recall@10 a graph must reach on a sample of its own data (see [`build_graph`]).
pub const RECALL_TARGET: f32 = 0.95;

/// Rewrites the leading `ef_search` (a postcard varint, the first field of the serialised
/// `Hnsw`) of graph bytes. `None` when the bytes do not start with a varint.
pub(super) fn with_ef_search(bytes: &[u8], ef: usize) -> Option<Vec<u8>> {
    let len = bytes.iter().position(|b| b & 0x80 == 0)? + 1;
    let mut out = Vec::with_capacity(bytes.len() + 2);
    let mut v = ef;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    }
    out.extend_from_slice(&bytes[len..]);
    Some(out)
}

/// How much one distance evaluation inside a graph search costs, in exact-scan row visits.
///
/// The exact scan reads rows in order and keeps a 10-entry heap; a graph search evaluates
/// distances to rows at random addresses (a cache miss each), checks a visited set and keeps an
/// `ef`-entry candidate heap. [`build_graph`] keeps a graph only when its mean distance
/// evaluations per sample query × this factor is below the row count, i.e. when the graph is
/// predicted to be cheaper than the exact scan. Counting evaluations (not timing) keeps the
/// decision independent of the machine and its load.
///
/// Measured (graph time per evaluation ÷ exact time per row, top-10 p50 over 200 queries,
/// clustered unless said otherwise):
/// - in wasm on V8 (`bench/eval-cost.mjs`: Node 20, Chromium's engine; the `--features bench`
///   build's `BenchVectors` and `distanceEvaluations`, opt-level 3, simd128; timings vary
///   with the machine's load): 384-d 1.9–4.0 at 5k–20k (graph 0.42–0.70× the scan), 256-d
///   5.6–5.8 at 10k (0.97–1.01×), 768-d 3.3 at 10k (0.61×);
/// - natively (`cargo run --release --example search_bench -- --vectors N [--dim D]
///   [--random]`, x86-64, machine loaded by other builds): 384-d 0.8 (2k random), 1.2 (2k),
///   1.6 (10k), 2.1 (20k), 2.7 (10k random); 32-d 3.8–5.6; 16-d 4.4–7.0.
///
/// The fixed per-evaluation overhead weighs more when a distance is cheap (fewer dimensions) and
/// in wasm. The product runs in the browser with embeddings of 256-d (the built-in one) or more:
/// 6 is above every wasm figure, so a graph kept is predicted no slower than the scan there.
pub const GRAPH_EVAL_COST: f32 = 6.0;

/// Whether [`build_graph`] kept its graph, and if not why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub enum GraphVerdict {
    /// The graph reached [`RECALL_TARGET`] and is predicted cheaper than the exact scan.
    Kept,
    /// No `ef_search` up to 800 reached [`RECALL_TARGET`] on the sample.
    LowRecall,
    /// At an `ef_search` that reached [`RECALL_TARGET`] — or before any did — the mean distance
    /// evaluations per query × [`GRAPH_EVAL_COST`] were not below the row count: the exact scan
    /// is predicted faster.
    NotCheaper,
}

/// Options of [`build_graph_with`] beyond the graph parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GraphBuildOptions {
    /// Drop a graph that is not predicted cheaper than the exact scan ([`GRAPH_EVAL_COST`]).
    /// Default true; false only for tests that need a graph on a few rows.
    pub require_cheaper: bool,
}

impl Default for GraphBuildOptions {
    fn default() -> Self {
        GraphBuildOptions {
            require_cheaper: true,
        }
    }
}

/// What [`build_graph`] produced.
#[derive(Debug, Clone)]
pub struct GraphBuild {
    /// The serialised graph (postcard; points are row numbers), or `None` when the graph was
    /// dropped ([`GraphBuild::verdict`] says why): the exact scan stays (recall 1).
    pub bytes: Option<Vec<u8>>,
    /// The `ef_search` chosen (the smallest reaching the target), or the last one tried.
    pub ef_search: u32,
    /// The recall@10 measured on the sample at that `ef_search`.
    pub recall: f32,
    /// Mean distance evaluations per sample query at that `ef_search` (0 for fewer than 2 rows).
    pub evaluations: f32,
    /// Number of rows the graph was built over.
    pub rows: usize,
    /// Kept, or why not.
    pub verdict: GraphVerdict,
}

/// [`build_graph_with`] with the default options (the product's: the cost check is on).
pub fn build_graph(vectors: &[f32], dim: usize, params: HnswParams) -> GraphBuild {
    build_graph_with(vectors, dim, params, GraphBuildOptions::default())
}

/// Builds an HNSW graph over `vectors` (rows of `dim` normalised `f32`s) and calibrates it: on up
/// to 100 sample queries made from the data (normalised midpoints of two random rows) it measures
/// recall@10 against the exact scan, starting at `params.ef_search` and doubling up to 800 until
/// [`RECALL_TARGET`] is met — or gives the graph up ([`GraphVerdict::LowRecall`]). It also counts
/// the distance evaluations of those searches: when their mean × [`GRAPH_EVAL_COST`] is not below
/// the row count the graph is given up too ([`GraphVerdict::NotCheaper`]; a larger `ef_search`
/// would only cost more), unless `options.require_cheaper` is false. The verdict depends on the
/// graph and the data only, never on timing; the graph itself is reproducible (same input and
/// `params.seed`) where the build runs on one thread, as in wasm — natively rayon inserts in
/// parallel and graphs differ slightly between runs. A pure function (bytes in, bytes out): the Web Worker entry point. The
/// graph is decoded against the same rows by [`VectorStore::install`].
pub fn build_graph_with(
    vectors: &[f32],
    dim: usize,
    params: HnswParams,
    options: GraphBuildOptions,
) -> GraphBuild {
    let p = params.clamped();
    let rows = vectors.len().checked_div(dim).unwrap_or(0);
    let slab: Arc<[f32]> = Arc::from(&vectors[..rows * dim]);
    let points: Vec<SlabPoint> = (0..rows as u32)
        .map(|row| SlabPoint {
            slab: slab.clone(),
            dim: dim as u32,
            row,
        })
        .collect();
    let (hnsw, _) = Builder::default()
        .ef_construction(p.ef_construction as usize)
        .ef_search(p.ef_search as usize)
        .seed(p.seed)
        .select_heuristic(p.heuristic.then(instant_distance::Heuristic::default))
        .build_hnsw(points);
    let bytes = postcard::to_allocvec(&hnsw).unwrap_or_default();
    drop(hnsw);
    if rows < 2 {
        return GraphBuild {
            bytes: Some(bytes),
            ef_search: p.ef_search,
            recall: 1.0,
            evaluations: 0.0,
            rows,
            verdict: GraphVerdict::Kept,
        };
    }
    // Sample queries and their exact top 10.
    let mut seed = p.seed | 1;
    let mut pick = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % rows as u64) as usize
    };
    let row = |r: usize| &slab[r * dim..(r + 1) * dim];
    let queries: Vec<Vec<f32>> = (0..100.min(rows))
        .filter_map(|_| {
            let (a, b) = (pick(), pick());
            let mid: Vec<f32> = row(a).iter().zip(row(b)).map(|(x, y)| x + y).collect();
            normalized(&mid)
        })
        .collect();
    let truth: Vec<Vec<u32>> = queries
        .iter()
        .map(|q| {
            exact_top_k(&slab, dim, q, 10)
                .into_iter()
                .map(|h| h.0)
                .collect()
        })
        .collect();
    let mut ef = p.ef_search as usize;
    let mut last = 0.0;
    let mut evaluations = 0.0;
    let too_costly = |evals: f32| options.require_cheaper && evals * GRAPH_EVAL_COST >= rows as f32;
    while let Some(candidate) = with_ef_search(&bytes, ef) {
        let Ok(graph) = decode_graph(&candidate, &slab, dim) else {
            break;
        };
        let mut found = 0usize;
        let mut wanted = 0usize;
        let mut search = Search::default();
        let before = DISTANCE_EVALS.with(Cell::get);
        for (q, t) in queries.iter().zip(&truth) {
            let point = SlabPoint {
                slab: Arc::from(q.as_slice()),
                dim: dim as u32,
                row: 0,
            };
            let got: Vec<u32> = graph
                .hnsw
                .search(&point, &mut search)
                .take(10)
                .map(|i| i.point.row)
                .collect();
            found += got.iter().filter(|r| t.contains(r)).count();
            wanted += t.len();
        }
        let evals = DISTANCE_EVALS.with(Cell::get).wrapping_sub(before);
        evaluations = evals as f32 / queries.len().max(1) as f32;
        last = found as f32 / wanted.max(1) as f32;
        let verdict = if too_costly(evaluations) {
            // A larger ef_search only evaluates more: give up now.
            Some(GraphVerdict::NotCheaper)
        } else if last >= RECALL_TARGET {
            Some(GraphVerdict::Kept)
        } else {
            None
        };
        if let Some(verdict) = verdict {
            return GraphBuild {
                bytes: (verdict == GraphVerdict::Kept).then_some(candidate),
                ef_search: ef as u32,
                recall: last,
                evaluations,
                rows,
                verdict,
            };
        }
        if ef >= 800 {
            break;
        }
        ef = (ef * 2).min(800);
    }
    GraphBuild {
        bytes: None,
        ef_search: ef as u32,
        recall: last,
        evaluations,
        rows,
        verdict: GraphVerdict::LowRecall,
    }
}

pub(super) struct Graph {
    pub(super) hnsw: Hnsw<SlabPoint>,
    pub(super) bytes: Vec<u8>,
    pub(super) ef_search: usize,
}

pub(super) fn decode_graph(bytes: &[u8], slab: &Arc<[f32]>, dim: usize) -> DecodeResult<Graph> {
    let rows = slab.len().checked_div(dim).unwrap_or(0) as u32;
    check_shape(bytes, rows)?;
    pub(super) struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            DECODE_SLAB.with(|s| *s.borrow_mut() = None);
        }
    }
    DECODE_SLAB.with(|s| *s.borrow_mut() = Some((slab.clone(), dim as u32, rows)));
    let _reset = Reset;
    let hnsw: Hnsw<SlabPoint> =
        postcard::from_bytes(bytes).map_err(|e| DecodeError::new(format!("graph: {e}")))?;
    let ef_search = postcard::take_from_bytes::<usize>(bytes)
        .map(|(v, _)| v)
        .unwrap_or(100);
    Ok(Graph {
        hnsw,
        bytes: bytes.to_vec(),
        ef_search,
    })
}
