//! The `Wiki` methods on search and vectors: search, embeddings, and the HNSW graph rebuild whose
//! build runs in a Web Worker (`buildHnswGraph`, a free function so a worker needs no wiki).

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::interop::{self, error_to_js, js_to_rust_or_default, result_to_js, to_js};
use super::{progress_request, promise, Wiki};
use crate::error::Error;
use crate::llm::http::FetchTransport;
use crate::search::vectors::build_graph_with;
use crate::search::vectors::GraphBuildOptions;
use crate::search::vectors::HnswParams;
use crate::search::vectors::InstallOutcome;
use crate::search::SearchOptions;
use crate::search_ops::EmbedOptions;
use crate::search_ops::EmbedProgress;

#[wasm_bindgen]
impl Wiki {
    /// Searches the pages. `options`: `k` (default 10), `mode` `"bm25"` | `"vector"` |
    /// `"hybrid"` (default), `queryVector` `{ model, vector }` for the vector modes, `depth`,
    /// `explain`, `passages` (default false: with true, up to `k` source-passage hits follow the
    /// page hits). Each hit has `key`, `kind` (`"page"` | `"passage"`), `score` and `explain`
    /// (ranks, BM25 per-term breakdown, similarity); a passage hit also `source`, `version`,
    /// `heading` and `lines` (`[first, last]`, 1-based; open them with `sourceSpan`); `status` says why vectors did not serve (e.g. `{ state: "reembedRequired",
    /// storedModel, storedDim, configuredModel, configuredDim }`), and `mode` what was used.
    ///
    /// @example
    /// ```ts
    /// const r = await wiki.search("明月", { k: 5, mode: "bm25" });
    /// r.hits.map((h) => h.key);
    /// ```
    #[wasm_bindgen(unchecked_return_type = "Promise<SearchResults>")]
    pub fn search(
        &self,
        text: String,
        #[wasm_bindgen(unchecked_param_type = "Partial<SearchOptions> | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        let options = js_to_rust_or_default::<SearchOptions>("search options", options);
        promise(async move {
            let options = options?;
            result_to_js(
                inner
                    .core
                    .search_configured(FetchTransport::new(), &text, &options)
                    .await,
            )
        })
    }

    /// Where the configured embedding stands: `{state: "ready", missing}`, `{state:
    /// "noVectors"}`, `{state: "reembedding", done, total}` or `{state: "reembedRequired",
    /// storedModel, storedDim}` (search runs on BM25 until `embedPages({confirm: true})`).
    #[wasm_bindgen(js_name = embeddingStatus, unchecked_return_type = "Promise<EmbeddingState>")]
    pub fn embedding_status(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.embedding_status().await) })
    }

    /// Embeds the pages that lack a vector of the configured embedding model, in batches saved
    /// as they land (an interrupted run resumes). With vectors of another model stored, nothing
    /// happens unless `confirm: true`; then search uses BM25 until the new vectors are
    /// complete and replace the old ones in one step. Throws the endpoint's `LLM_*` errors, `CANCELLED`.
    #[wasm_bindgen(js_name = embedPages, unchecked_return_type = "Promise<EmbedReport>")]
    pub fn embed_pages(
        &self,
        #[wasm_bindgen(unchecked_param_type = "EmbedRequest | undefined")] request: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let (options, on_progress, cancel, _listener) =
                progress_request::<EmbedOptions, EmbedProgress>("embed options", &request)?;
            let on_progress = |p: EmbedProgress| on_progress(&p);
            result_to_js(
                inner
                    .core
                    .embed_pages_configured(FetchTransport::new(), &options, &on_progress, &cancel)
                    .await,
            )
        })
    }

    /// Where the active vectors stand: `{ model, dim, rows, graph, efSearch, delta, dead,
    /// declinedAt, needsRebuild, minRows }` — `graph` true when an HNSW graph serves searches
    /// (else the exact scan), `declinedAt` the vector count at which the last graph build was
    /// given up. `undefined` when no page has a vector.
    #[wasm_bindgen(js_name = vectorIndexStatus, unchecked_return_type = "Promise<VectorIndexStatus | undefined>")]
    pub fn vector_index_status(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.vector_index_status().await) })
    }

    /// A graph rebuild to run off the main thread, or `null` when none is due (fewer vectors
    /// than `minRows` — 10 000 by default —, a graph that is current, or a build given up since
    /// the vectors last grew by half). Pass `vectors`, `dim`, `params` and `options` to
    /// `buildHnswGraph` in a Web Worker (`www/hnsw-worker.js`), then the bytes to
    /// `installVectorGraph(jobId, bytes)`. Only the latest job can be installed. Writes nothing.
    ///
    /// @example
    /// ```ts
    /// const job = await wiki.vectorRebuildJob();
    /// if (job) {
    ///   const r = buildHnswGraph(job.vectors, job.dim, job.params, job.options); // in a worker
    ///   await wiki.installVectorGraph(job.jobId, r.bytes);
    /// }
    /// ```
    #[wasm_bindgen(js_name = vectorRebuildJob, unchecked_return_type = "Promise<VectorRebuildJob | null>")]
    pub fn vector_rebuild_job(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let Some(r) = inner
                .core
                .vector_rebuild_job()
                .await
                .map_err(|e| error_to_js(&e))?
            else {
                return Ok(JsValue::NULL);
            };
            let id = inner.next_job.get();
            inner.next_job.set(id.wrapping_add(1));
            let out = js_sys::Object::new();
            let set = |k: &str, v: &JsValue| Reflect::set(&out, &k.into(), v).map(|_| ());
            set("jobId", &id.into())?;
            set(
                "vectors",
                &js_sys::Float32Array::from(r.job.vectors()).into(),
            )?;
            set("dim", &(r.job.dim() as f64).into())?;
            set("rows", &(r.job.len() as f64).into())?;
            set("params", &params_to_js(&r.params)?)?;
            set("options", &to_js(&r.options)?)?;
            inner.rebuild.replace(Some((id, r.job)));
            Ok(out.into())
        })
    }

    /// Installs what `buildHnswGraph` returned for job `jobId` (`bytes`, or `null` when the
    /// build gave the graph up) and saves the vector index; call it under the wiki's write lock.
    /// Vectors changed while the graph was built stay correct (they are scanned exactly until the
    /// next rebuild). Resolves to `"installed"`, or `"stale"` (nothing written) for a job that is
    /// not the latest or whose vectors were rebuilt meanwhile. Throws `INVALID_INPUT` for bytes
    /// that are not a graph over the job's rows, storage errors.
    #[wasm_bindgen(js_name = installVectorGraph, unchecked_return_type = "Promise<\"installed\" | \"stale\">")]
    pub fn install_vector_graph(&self, job_id: u32, bytes: Option<Vec<u8>>) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let job = {
                let mut slot = inner.rebuild.borrow_mut();
                match slot.take() {
                    Some((id, job)) if id == job_id => Some(job),
                    other => {
                        *slot = other;
                        None
                    }
                }
            };
            let outcome = match job {
                Some(job) => inner
                    .core
                    .install_vector_graph(job, bytes.as_deref())
                    .await
                    .map_err(|e| error_to_js(&e))?,
                None => InstallOutcome::Stale,
            };
            Ok(JsValue::from_str(match outcome {
                InstallOutcome::Installed => "installed",
                InstallOutcome::Stale => "stale",
            }))
        })
    }
}

/// HNSW parameters for JavaScript, the 64-bit seed as a `bigint`.
fn params_to_js(p: &HnswParams) -> Result<JsValue, JsValue> {
    let ser = serde_wasm_bindgen::Serializer::new()
        .serialize_maps_as_objects(true)
        .serialize_large_number_types_as_bigints(true);
    serde::Serialize::serialize(p, &ser)
        .map_err(|e| error_to_js(&Error::Storage(format!("serialise: {e}"))))
}

/// Builds and calibrates an HNSW graph over `vectors` (`rows × dim` normalised floats, row after
/// row — `vectorRebuildJob().vectors`): the Web Worker side of a vector rebuild
/// (`www/hnsw-worker.js`). Pure and synchronous (seconds per 10 000 rows of 384-d: call it in a
/// worker, never on the page's thread). Returns `{ bytes, efSearch, recall, evaluations, rows,
/// verdict }`; `bytes` is `null` when the graph was given up: recall@10 below 0.95 on the
/// calibration sample at every `efSearch` up to 800 (`"lowRecall"`), or not predicted cheaper
/// than the exact scan (`"notCheaper"`, unless `options.requireCheaper` is false). Throws
/// `INVALID_INPUT` when `dim` is 0 or does not divide `vectors.length`, or for bad `params`.
#[wasm_bindgen(js_name = buildHnswGraph, unchecked_return_type = "GraphBuildResult")]
pub fn build_hnsw_graph(
    vectors: &[f32],
    dim: usize,
    #[wasm_bindgen(unchecked_param_type = "Partial<HnswParams> | undefined")] params: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Partial<GraphBuildOptions> | undefined")]
    options: JsValue,
) -> Result<JsValue, JsValue> {
    if dim == 0 || vectors.len() % dim != 0 {
        return Err(interop::bad_input(
            "buildHnswGraph",
            format!("{} values do not make rows of {dim}", vectors.len()),
        ));
    }
    let params: HnswParams = js_to_rust_or_default("buildHnswGraph params", params)?;
    let options: GraphBuildOptions = js_to_rust_or_default("buildHnswGraph options", options)?;
    let built = build_graph_with(vectors, dim, params, options);
    let out = js_sys::Object::new();
    let set = |k: &str, v: &JsValue| Reflect::set(&out, &k.into(), v).map(|_| ());
    set(
        "bytes",
        &built
            .bytes
            .as_deref()
            .map_or(JsValue::NULL, interop::bytes_to_js),
    )?;
    set("efSearch", &built.ef_search.into())?;
    set("recall", &built.recall.into())?;
    set("evaluations", &built.evaluations.into())?;
    set("rows", &(built.rows as f64).into())?;
    set("verdict", &to_js(&built.verdict)?)?;
    Ok(out.into())
}
