//! Benchmark-only JavaScript exports (cargo feature `bench`, never in the release product): the
//! search index and one vector store in isolation, without a wiki or IndexedDB around them, so the
//! browser benchmark (`bench/`) can time build, add, query, persist and open against other
//! libraries. Every method is a thin call into `search::`: nothing here changes how the product
//! indexes or ranks. The second `impl Wiki` block (at the end) adds benchmark-only methods to the
//! product's `Wiki` that time core calls from inside wasm.

use js_sys::{Array, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::interop::{error_to_js, js_to_rust_or_default};
use super::Wiki;

use crate::llm::offline::{OfflineEmbedder, OFFLINE_DIMENSION, OFFLINE_MODEL};
use crate::markdown::passages::Cut;
use crate::records::SEARCH_OP_KEY;
use crate::search::persist::PAGE_KEYS;
use crate::search::vectors::{HnswParams, VectorStore, HNSW_MIN_ROWS};
use crate::search::{
    DocFields, Embedding, IndexBuilder, NewPassage, QueryVector, SearchConfig, SearchIndex,
    SearchMode, SearchOptions,
};
use crate::storage::{Storage, Store};
use crate::text::{normalize_source_text, sha256_hex};
use crate::wiki::{new_passages, source_passages};

/// Calls `f` with each page of the parallel arrays, stopping at the first error.
fn each_page(
    keys: &[String],
    titles: &[String],
    bodies: &[String],
    mut f: impl FnMut(&str, &DocFields<'_>) -> crate::Result<()>,
) -> Result<(), JsValue> {
    for ((key, title), body) in keys.iter().zip(titles).zip(bodies) {
        let fields = DocFields {
            title,
            aliases: &[],
            body,
        };
        f(key, &fields).map_err(js_err)?;
    }
    Ok(())
}

fn js_err(e: impl std::fmt::Display) -> JsValue {
    js_sys::Error::new(&e.to_string()).into()
}

/// A [`SearchIndex`] (BM25F + vectors + fusion) with no storage around it.
#[wasm_bindgen]
pub struct BenchIndex {
    index: SearchIndex,
    build: Option<IndexBuilder>,
}

impl Default for BenchIndex {
    fn default() -> Self {
        Self::new()
    }
}

/// Pages per batch of a full build (`search_ops::REBUILD_BATCH`: what the product reads from
/// storage per call when it builds an index).
#[wasm_bindgen(js_name = rebuildBatch)]
pub fn rebuild_batch() -> usize {
    crate::search_ops::REBUILD_BATCH
}

#[wasm_bindgen]
impl BenchIndex {
    /// An empty index with the product's default settings.
    #[wasm_bindgen(constructor)]
    pub fn new() -> BenchIndex {
        BenchIndex {
            index: SearchIndex::default(),
            build: None,
        }
    }

    /// Pass 1 of a full build fed in batches (`SearchIndex::builder`), as the product builds the
    /// index of a wiki that has none stored: call with every batch of pages, then `buildFill`
    /// with the same batches, then `buildFinish`. The three arrays are parallel.
    #[wasm_bindgen(js_name = buildCount)]
    pub fn build_count(
        &mut self,
        keys: Vec<String>,
        titles: Vec<String>,
        bodies: Vec<String>,
    ) -> Result<(), JsValue> {
        let b = self
            .build
            .get_or_insert_with(|| SearchIndex::builder(SearchConfig::default()));
        each_page(&keys, &titles, &bodies, |k, f| b.count(k, f))
    }

    /// Pass 2 of the build (see `buildCount`).
    #[wasm_bindgen(js_name = buildFill)]
    pub fn build_fill(
        &mut self,
        keys: Vec<String>,
        titles: Vec<String>,
        bodies: Vec<String>,
    ) -> Result<(), JsValue> {
        let b = self
            .build
            .as_mut()
            .ok_or_else(|| js_err("buildFill before buildCount"))?;
        each_page(&keys, &titles, &bodies, |k, f| b.fill(k, f))
    }

    /// Ends the build: the index is the one built (replacing what it held).
    #[wasm_bindgen(js_name = buildFinish)]
    pub fn build_finish(&mut self) -> Result<(), JsValue> {
        let b = self
            .build
            .take()
            .ok_or_else(|| js_err("buildFinish before buildCount"))?;
        self.index = b.finish().map_err(js_err)?;
        Ok(())
    }

    /// Indexes many pages in one batch (`SearchIndex::upsert_many`: one BM25 merge), as a full
    /// rebuild does. The three arrays are parallel.
    #[wasm_bindgen(js_name = addPages)]
    pub fn add_pages(&mut self, keys: Vec<String>, titles: Vec<String>, bodies: Vec<String>) {
        let n = keys.len().min(titles.len()).min(bodies.len());
        self.index.upsert_many((0..n).map(|i| {
            (
                keys[i].as_str(),
                DocFields {
                    title: &titles[i],
                    aliases: &[],
                    body: &bodies[i],
                },
            )
        }));
    }

    /// Indexes one page (`SearchIndex::upsert`, the path of one commit), with its embedding when
    /// `vector` is given (model `model`).
    pub fn upsert(
        &mut self,
        key: &str,
        title: &str,
        body: &str,
        model: &str,
        vector: Option<Vec<f32>>,
    ) {
        let embedding = vector.as_deref().map(|v| Embedding { model, vector: v });
        self.index.upsert(
            key,
            &DocFields {
                title,
                aliases: &[],
                body,
            },
            embedding,
        );
    }

    /// Stores embeddings of indexed pages: `flat` holds `keys.len()` rows of `dim` floats.
    #[wasm_bindgen(js_name = putEmbeddings)]
    pub fn put_embeddings(
        &mut self,
        model: &str,
        keys: Vec<String>,
        flat: &[f32],
        dim: usize,
    ) -> Result<usize, JsValue> {
        if dim == 0 || flat.len() != keys.len() * dim {
            return Err(js_err(
                "putEmbeddings: flat.length must be keys.length * dim",
            ));
        }
        let items: Vec<(&str, &[f32])> = keys
            .iter()
            .zip(flat.chunks_exact(dim))
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        self.index.put_embeddings(model, &items).map_err(js_err)
    }

    /// `SearchIndex::search` without explanations: the keys of the hits, best first. `mode` is
    /// "bm25", "vector" or "hybrid"; `vector` (of `model`) is the query embedding; `depth` is the
    /// fusion depth (the product's default is 50); `passages` (default false) is the option of
    /// that name: up to `k` passage hits follow the page hits.
    #[allow(clippy::too_many_arguments)]
    pub fn search(
        &self,
        query: &str,
        k: usize,
        mode: &str,
        model: &str,
        vector: Option<Vec<f32>>,
        depth: usize,
        passages: Option<bool>,
    ) -> Vec<String> {
        let passages = passages.unwrap_or(false);
        self.search_with(query, k, mode, model, vector, depth, false, passages)
    }

    /// Indexes the passages of sources the way the product does when it builds the index of a
    /// wiki that has sources (`Wiki::sync_passages`): each stored text (`storedSource`: what
    /// `addSource` stored, normalised, and its version) cut by the product's cutter
    /// (`wiki::source_passages`), and the given sources indexed with one
    /// `set_many_source_passages` (one BM25 merge; the product takes `syncSourcesBatch()`
    /// sources per step). No embeddings. The three arrays are parallel. Returns the passages
    /// indexed.
    #[wasm_bindgen(js_name = addSources)]
    pub fn add_sources(
        &mut self,
        keys: Vec<String>,
        versions: Vec<String>,
        texts: Vec<String>,
    ) -> usize {
        let cuts: Vec<Vec<Cut>> = texts.iter().map(|t| source_passages(t)).collect();
        let news: Vec<Vec<NewPassage<'_>>> = cuts.iter().map(|c| new_passages(c)).collect();
        self.index
            .set_many_source_passages(
                keys.iter()
                    .zip(&versions)
                    .zip(&news)
                    .map(|((k, v), n)| (k.as_str(), v.as_str(), n.as_slice())),
            )
            .added
    }

    /// Indexed passages.
    #[wasm_bindgen(js_name = passageCount)]
    pub fn passage_count(&self) -> usize {
        self.index.passage_count()
    }

    /// Like `search`, with the per-term BM25 explanations the product's `wiki.search` returns by
    /// default (computed, then dropped): returns the number of hits.
    #[wasm_bindgen(js_name = searchExplained)]
    pub fn search_explained(
        &self,
        query: &str,
        k: usize,
        mode: &str,
        model: &str,
        vector: Option<Vec<f32>>,
        depth: usize,
    ) -> usize {
        self.search_with(query, k, mode, model, vector, depth, true, false)
            .len()
    }

    /// Every record of the index as `[key, Uint8Array]` pairs (what a first save writes).
    #[wasm_bindgen(js_name = toRecords)]
    pub fn to_records(&self) -> Array {
        let out = Array::new();
        for (key, bytes) in self.index.to_records() {
            let pair = Array::new();
            pair.push(&JsValue::from_str(&key));
            pair.push(&Uint8Array::from(bytes.as_slice()));
            out.push(&pair);
        }
        out
    }

    /// The records one commit would write now (`dirty_records`), each copied into a
    /// `Uint8Array` as the IndexedDB backend copies it before its transaction opens (then
    /// dropped), then marks them persisted: returns the bytes written (deletions count 0).
    #[wasm_bindgen(js_name = commitDirty)]
    pub fn commit_dirty(&mut self) -> f64 {
        let bytes: usize = self
            .index
            .dirty_records()
            .iter()
            .filter_map(|r| r.data.as_ref())
            .map(|d| crate::storage::idb::to_uint8array(d).map_or(0, |a| a.length() as usize))
            .sum();
        self.index.mark_persisted();
        bytes as f64
    }

    /// Opens an index from records (`SearchIndex::from_records`): parallel arrays of keys and
    /// bytes. Throws on a corrupt record.
    #[wasm_bindgen(js_name = fromRecords)]
    pub fn from_records(keys: Vec<String>, values: Vec<Uint8Array>) -> Result<BenchIndex, JsValue> {
        let bytes: Vec<Vec<u8>> = values.iter().map(Uint8Array::to_vec).collect();
        let index = SearchIndex::from_records(
            keys.iter()
                .map(String::as_str)
                .zip(bytes.iter().map(Vec::as_slice)),
        )
        .map_err(js_err)?;
        Ok(BenchIndex { index, build: None })
    }

    /// Indexed pages.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True when no page is indexed.
    #[wasm_bindgen(js_name = isEmpty)]
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Bytes the BM25 index and the active vectors account for on the Rust heap, the passages'
    /// own included.
    #[wasm_bindgen(js_name = heapBytes)]
    pub fn heap_bytes(&self) -> f64 {
        let of = |i: &SearchIndex| {
            i.bm25().heap_bytes() + i.vectors().map_or(0, VectorStore::heap_bytes)
        };
        (of(&self.index) + self.index.passage_index().map_or(0, of)) as f64
    }
}

impl BenchIndex {
    #[allow(clippy::too_many_arguments)]
    fn search_with(
        &self,
        query: &str,
        k: usize,
        mode: &str,
        model: &str,
        vector: Option<Vec<f32>>,
        depth: usize,
        explain: bool,
        passages: bool,
    ) -> Vec<String> {
        let mode = match mode {
            "vector" => SearchMode::Vector,
            "hybrid" => SearchMode::Hybrid,
            _ => SearchMode::Bm25,
        };
        let options = SearchOptions {
            k,
            mode,
            query_vector: vector.map(|vector| QueryVector {
                model: model.to_string(),
                vector,
            }),
            depth,
            explain,
            passages,
        };
        self.index
            .search(query, &options)
            .hits
            .into_iter()
            .map(|h| h.key)
            .collect()
    }
}

/// One [`VectorStore`] (document ids = row numbers) with the product's HNSW parameters.
#[wasm_bindgen]
pub struct BenchVectors {
    store: VectorStore,
    rows: u32,
}

#[wasm_bindgen]
impl BenchVectors {
    /// An empty store of `dim`-dimensional vectors.
    #[wasm_bindgen(constructor)]
    pub fn new(dim: usize) -> BenchVectors {
        BenchVectors {
            store: VectorStore::new("bench", dim, HnswParams::default()),
            rows: 0,
        }
    }

    /// Appends rows (`flat.length / dim` of them) with consecutive document ids, one `put` each.
    pub fn append(&mut self, flat: &[f32]) -> Result<(), JsValue> {
        let dim = self.store.dim();
        if dim == 0 || flat.len() % dim != 0 {
            return Err(js_err("append: flat.length must be a multiple of dim"));
        }
        for row in flat.chunks_exact(dim) {
            self.store.put(self.rows, row).map_err(js_err)?;
            self.rows += 1;
        }
        Ok(())
    }

    /// The product's rebuild (`VectorStore::rebuild_now`): an HNSW graph only from
    /// `HNSW_MIN_ROWS` rows on and only if it passes calibration, else the exact scan.
    #[wasm_bindgen(js_name = rebuildProduct)]
    pub fn rebuild_product(&mut self) {
        self.store.rebuild_now();
    }

    /// A graph at any size (`VectorStore::rebuild_with_graph`), kept only if it passes
    /// calibration; for finding where the graph starts to beat the exact scan.
    #[wasm_bindgen(js_name = rebuildGraph)]
    pub fn rebuild_graph(&mut self) {
        self.store.rebuild_with_graph();
    }

    /// True when a graph serves the base.
    #[wasm_bindgen(js_name = hasGraph)]
    pub fn has_graph(&self) -> bool {
        self.store.has_graph()
    }

    /// The calibrated `ef_search` of the graph (0 without one).
    #[wasm_bindgen(js_name = efSearch)]
    pub fn ef_search(&self) -> usize {
        self.store.graph_ef_search().unwrap_or(0)
    }

    /// `VectorStore::search` (the graph when there is one): document ids, best first.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<u32>, JsValue> {
        let hits = self.store.search(query, k).map_err(js_err)?;
        Ok(hits.into_iter().map(|h| h.0).collect())
    }

    /// `VectorStore::search_exact` (the simd128 scan): document ids, best first.
    #[wasm_bindgen(js_name = searchExact)]
    pub fn search_exact(&self, query: &[f32], k: usize) -> Result<Vec<u32>, JsValue> {
        let hits = self.store.search_exact(query, k).map_err(js_err)?;
        Ok(hits.into_iter().map(|h| h.0).collect())
    }

    /// Bytes the store accounts for on the Rust heap (rows, ids, graph).
    #[wasm_bindgen(js_name = heapBytes)]
    pub fn heap_bytes(&self) -> f64 {
        self.store.heap_bytes() as f64
    }

    /// `HNSW_MIN_ROWS`: from this many rows on the product builds a graph.
    #[wasm_bindgen(js_name = hnswMinRows)]
    pub fn hnsw_min_rows() -> usize {
        HNSW_MIN_ROWS
    }
}

/// Distance evaluations graph builds and searches made so far (`vectors::distance_evaluations`):
/// with `searchExact` and `search` timings, the browser's figure behind `GRAPH_EVAL_COST`.
#[wasm_bindgen(js_name = distanceEvaluations)]
pub fn distance_evaluations() -> f64 {
    crate::search::vectors::distance_evaluations() as f64
}

/// Sources per step when the product indexes the passages of many sources
/// (`Wiki::sync_passages`, one BM25 merge per step).
#[wasm_bindgen(js_name = syncSourcesBatch)]
pub fn sync_sources_batch() -> usize {
    crate::wiki::SYNC_SOURCES
}

/// A source text as `addSource` stores it (normalised) and its content version (SHA-256):
/// `[text, version]`, what an index build reads back per source.
#[wasm_bindgen(js_name = storedSource)]
pub fn stored_source(text: &str) -> Array {
    let text = normalize_source_text(text);
    let version = sha256_hex(text.as_bytes());
    let out = Array::new();
    out.push(&JsValue::from_str(&text));
    out.push(&JsValue::from_str(&version));
    out
}

/// The passages the product cuts source `key` with text `text` into, as `addSources` indexes
/// them: `[passageKey, heading, text]` each, in text order (the keys from an index of that one
/// source), so another library can be given the same units.
#[wasm_bindgen(js_name = sourcePassages)]
pub fn source_passage_units(key: &str, text: &str) -> Array {
    let text = normalize_source_text(text);
    let cuts = source_passages(&text);
    let mut index = SearchIndex::default();
    index.set_source_passages(key, "", &new_passages(&cuts));
    let out = Array::new();
    for (k, c) in index.source_passage_keys(key).iter().zip(&cuts) {
        let unit = Array::new();
        unit.push(&JsValue::from_str(k));
        unit.push(&JsValue::from_str(&c.heading));
        unit.push(&JsValue::from_str(&c.text));
        out.push(&unit);
    }
    out
}

/// The built-in offline embedding (`offline-hash-v1`) of `text`.
#[wasm_bindgen(js_name = offlineEmbed)]
pub fn offline_embed(text: &str) -> Vec<f32> {
    OfflineEmbedder::new().embed_one(text)
}

/// The offline embedding's model id and dimension, `[model, dim]`.
#[wasm_bindgen(js_name = offlineModel)]
pub fn offline_model() -> Array {
    let out = Array::new();
    out.push(&JsValue::from_str(OFFLINE_MODEL));
    out.push(&JsValue::from_f64(OFFLINE_DIMENSION as f64));
    out
}

/// The default token estimate of `text` (`text::estimate_tokens`, Decision 12): what the scripted
/// endpoint reports as usage, so a baseline prompt can be counted the same way.
#[wasm_bindgen(js_name = estimateTokens)]
pub fn estimate_tokens(text: &str) -> f64 {
    crate::text::estimate_tokens(text) as f64
}

#[wasm_bindgen]
extern "C" {
    /// `performance.now()` (window or worker): milliseconds, sub-millisecond where the page is
    /// cross-origin isolated.
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

/// Benchmark-only methods of the product's `Wiki` (the real-size phase, `BENCH_PHASES=scale`):
/// the core's own timings, measured inside wasm, so the JS boundary's share of a call can be
/// told apart from the core's.
#[wasm_bindgen]
impl Wiki {
    /// Runs each of `queries` `rounds` times through the core's search (`Wiki::search`, the path
    /// of `wiki.search` without the JS boundary: the index cache check against storage, then the
    /// in-memory search), then the same through the cached index alone (`SearchIndex::search`),
    /// each call timed with `performance.now()` inside wasm. `options` as `wiki.search`'s.
    /// Resolves to `{ core: number[], index: number[], hits: number }` (milliseconds per call, in
    /// call order; `hits`: the sum of hits of the last round).
    #[wasm_bindgen(js_name = benchSearchCore)]
    pub fn bench_search_core(
        &self,
        queries: Vec<String>,
        options: JsValue,
        rounds: u32,
    ) -> Promise {
        let inner = self.inner.clone();
        let options = js_to_rust_or_default::<SearchOptions>("search options", options);
        future_to_promise(async move {
            let options = options?;
            let rounds = rounds.max(1);
            let mut core = Vec::with_capacity(queries.len() * rounds as usize);
            let mut hits = 0usize;
            for round in 0..rounds {
                for q in &queries {
                    let t = performance_now();
                    let r = inner
                        .core
                        .search(q, &options)
                        .await
                        .map_err(|e| error_to_js(&e))?;
                    core.push(performance_now() - t);
                    if round + 1 == rounds {
                        hits += r.hits.len();
                    }
                }
            }
            let index = inner
                .core
                .search_index_shared()
                .await
                .map_err(|e| error_to_js(&e))?;
            let mut alone = Vec::with_capacity(core.len());
            for _ in 0..rounds {
                for q in &queries {
                    let t = performance_now();
                    let r = index.search(q, &options);
                    alone.push(performance_now() - t);
                    std::hint::black_box(r);
                }
            }
            let out = js_sys::Object::new();
            let set = |k: &str, v: &JsValue| Reflect::set(&out, &JsValue::from_str(k), v);
            set("core", &js_sys::Float64Array::from(core.as_slice()).into())?;
            set(
                "index",
                &js_sys::Float64Array::from(alone.as_slice()).into(),
            )?;
            set("hits", &JsValue::from_f64(hits as f64))?;
            Ok(out.into())
        })
    }

    /// The stored search index opened alone, with or without the source passages' records, to
    /// tell their share of a cold open apart (the product always opens both): the records read
    /// from storage — with `passages`, every record of the `search` store, as
    /// `Wiki::search_index` reads them; without, the pages' records only (`get_many` of their
    /// keys: what an index without passages reads) — then decoded (`SearchIndex::from_records`),
    /// then one BM25 top-10 search of `query` without explanations (with `passages`: pages and
    /// passages), each step timed inside wasm. Call it in a fresh page. Resolves to
    /// `{ readMs, decodeMs, searchMs, records, bytes, pages, passages, hits }`.
    #[wasm_bindgen(js_name = benchOpenIndex)]
    pub fn bench_open_index(&self, passages: bool, query: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let storage = inner.core.storage();
            let t0 = performance_now();
            let records: Vec<(String, Vec<u8>)> = if passages {
                storage
                    .scan(Store::Search, "")
                    .await
                    .map_err(|e| error_to_js(&e))?
                    .into_iter()
                    .map(|(k, r)| (k, r.data))
                    .collect()
            } else {
                let keys: Vec<String> = PAGE_KEYS.iter().map(|k| k.to_string()).collect();
                let found = storage
                    .get_many(Store::Search, &keys)
                    .await
                    .map_err(|e| error_to_js(&e))?;
                keys.into_iter()
                    .zip(found)
                    .filter_map(|(k, r)| Some((k, r?.data)))
                    .collect()
            };
            let t1 = performance_now();
            let index = SearchIndex::from_records(
                records
                    .iter()
                    .filter(|(k, _)| k != SEARCH_OP_KEY)
                    .map(|(k, d)| (k.as_str(), d.as_slice())),
            )
            .map_err(|e| error_to_js(&e))?;
            let t2 = performance_now();
            let options = SearchOptions {
                k: 10,
                mode: SearchMode::Bm25,
                explain: false,
                passages,
                ..SearchOptions::default()
            };
            let hits = index.search(&query, &options).hits.len();
            let t3 = performance_now();
            let out = js_sys::Object::new();
            let set = |k: &str, v: f64| Reflect::set(&out, &JsValue::from_str(k), &v.into());
            set("readMs", t1 - t0)?;
            set("decodeMs", t2 - t1)?;
            set("searchMs", t3 - t2)?;
            set("records", records.len() as f64)?;
            set(
                "bytes",
                records.iter().map(|(_, d)| d.len()).sum::<usize>() as f64,
            )?;
            set("pages", index.len() as f64)?;
            set("passages", index.passage_count() as f64)?;
            set("hits", hits as f64)?;
            Ok(out.into())
        })
    }
}
