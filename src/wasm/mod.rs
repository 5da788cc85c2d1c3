//! The JavaScript API: the `Wiki` class (wasm only).
//!
//! *Invariant:* this module (with `storage::idb`) is the only place that knows `JsValue`. Every
//! method is async and returns a `Promise`; the class holds `Rc<Inner>` and clones it before
//! awaiting, so a second call while one is pending never throws "recursive use of an object".

#[cfg(feature = "bench")]
pub mod bench;
pub mod interop;
mod views;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Promise, Reflect};
use tsify::Ts;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use crate::clock::SystemClock;
use crate::compile::pipeline::{CompileOptions, Progress};
use crate::error::Error;
use crate::lint::llm::LlmLintOptions;
use crate::llm::config::{presets, Config};
use crate::llm::http::{cancel_from_signal, AbortGuard, FetchTransport};
use crate::llm::Cancel;
use crate::search::vectors::{
    build_graph_with, GraphBuildOptions, HnswParams, InstallOutcome, RebuildJob,
};
use crate::search::SearchOptions;
use crate::storage::browser::{BackendKind, BrowserBackend, BrowserStorage};
use crate::storage::{Backend, OnVersionChange, OpenOptions, Storage};
use crate::wiki::{NewSource, PageEdit, Wiki as CoreWiki};
use crate::wiki_search::{EmbedOptions, EmbedProgress, VectorIndexOptions};
use interop::bytes_to_js;
use interop::{error_to_js, js_to_rust_or_default, result_to_js, to_js, ts_to_rust};

type Core = CoreWiki<BrowserStorage, SystemClock>;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
/** Milliseconds since the Unix epoch (UTC), as `Date.now()` gives them. */
export type Millis = number;
/** An operation id: monotonic, starting at 1. */
export type OpId = number;
/** Options of `Wiki.open`. */
export interface OpenWikiOptions {
  /**
   * Called when another tab upgrades or deletes this wiki. Save any draft (the returned promise is
   * awaited), then the connection closes; ask the user to reload.
   */
  onVersionChange?: () => void | Promise<void>;
  /** Milliseconds to wait for other tabs to close before `UPGRADE_BLOCKED`. Default 5000. */
  blockedTimeoutMs?: number;
  /** Vector graph settings of this connection (not stored). Change them only to test the graph path. */
  vectorIndex?: Partial<VectorIndexOptions>;
  /**
   * Where IndexedDB cannot be used at all (Firefox private windows, some embedded webviews:
   * `indexedDB.open` throws `InvalidStateError`), open the wiki in memory instead of throwing
   * `STORAGE_UNAVAILABLE`. Everything works; nothing is kept after the page closes (export a
   * vault). `storageInfo().backend` then says `"memory"`. Default false.
   */
  memoryFallback?: boolean;
}

/** Parameters of the HNSW graph (`vectorRebuildJob().params`, `buildHnswGraph`). */
export interface HnswParams {
  /** Candidate list size while building, 16–800; default 100. */
  efConstruction: number;
  /** Candidate list size while searching (the start of calibration), 16–800; default 100. */
  efSearch: number;
  /** Seed of the level generator (a `bigint`; a safe-integer `number` is accepted too). */
  seed: bigint | number;
  /** The paper's neighbour-selection heuristic; default false (6–19× slower builds). */
  heuristic: boolean;
}

/** Options of `buildHnswGraph`. */
export interface GraphBuildOptions {
  /** Drop a graph that is not predicted cheaper than the exact scan. Default true. */
  requireCheaper: boolean;
}

/** A graph rebuild to run in a Web Worker (`vectorRebuildJob()`). */
export interface VectorRebuildJob {
  /** Give it back to `installVectorGraph`. */
  jobId: number;
  /** The live vectors, `rows × dim` normalised floats, row after row (a copy: transfer it). */
  vectors: Float32Array;
  /** The dimension. */
  dim: number;
  /** Number of rows. */
  rows: number;
  /** The wiki's HNSW parameters. */
  params: HnswParams;
  /** This connection's build options. */
  options: GraphBuildOptions;
}

/** What `buildHnswGraph` produced. */
export interface GraphBuildResult {
  /** The serialised graph, or `null` when it was given up (`verdict`). */
  bytes: Uint8Array | null;
  /** The calibrated `ef_search` (or the last one tried). */
  efSearch: number;
  /** recall@10 on the calibration sample at `efSearch`, 0–1. */
  recall: number;
  /** Mean distance evaluations per calibration query. */
  evaluations: number;
  /** Rows the graph was built over. */
  rows: number;
  /** `"kept"`, `"lowRecall"` or `"notCheaper"`. */
  verdict: GraphVerdict;
}

/** What the browser reports about this origin's storage. */
export interface StorageInfo {
  /** Bytes used by this origin (all wikis), if the browser reports it. */
  usage?: number;
  /** Bytes this origin may use, if the browser reports it. */
  quota?: number;
  /** Whether storage is persistent (not evicted under pressure); always false in memory. */
  persisted: boolean;
  /** Where this wiki is kept: `"indexeddb"`, or `"memory"` (gone when the page closes). */
  backend: "indexeddb" | "memory";
}

/** Options of `compile()` and `estimate()`; every field optional. */
export interface CompileRequest extends Partial<CompileOptions> {
  /** Called as the compile goes: per source, per chunk, per page, commit or failure. */
  onProgress?: (progress: Progress) => void;
  /** Aborts the compile after the current model call; committed sources stay. */
  signal?: AbortSignal;
}

/** Options of `embedPages()`; every field optional. */
export interface EmbedRequest extends Partial<EmbedOptions> {
  /** Called after each saved batch. */
  onProgress?: (progress: EmbedProgress) => void;
  /** Stops after the current batch; saved batches stay. */
  signal?: AbortSignal;
}

/** Options of `ask()`; every field optional. */
export interface AskRequest extends Partial<AskOptions> {
  /** Receives the answer text as it streams. */
  onToken?: (text: string) => void;
  /** Aborts the question. */
  signal?: AbortSignal;
}

/** Every error llm-wiki throws: `name` is "LlmWikiError", `code` is stable. */
export interface LlmWikiError extends Error {
  name: "LlmWikiError";
  code:
    | "QUOTA_EXCEEDED" | "UPGRADE_BLOCKED" | "CLOSED" | "STORAGE_UNAVAILABLE" | "SCHEMA_TOO_NEW"
    | "CONFLICT" | "STORAGE" | "INJECTED_FAULT" | "CORRUPT" | "INVALID_INPUT" | "UNSUPPORTED_MIME"
    | "NOT_FOUND" | "CANCELLED" | "UNGROUNDED"
    | "LLM_CONFIG" | "LLM_AUTH" | "LLM_ORIGIN_NOT_ALLOWED" | "LLM_UNREACHABLE" | "LLM_TIMEOUT"
    | "LLM_NOT_AN_ENDPOINT" | "LLM_CONTEXT_OVERFLOW" | "LLM_TRUNCATED" | "LLM_RATE_LIMITED"
    | "LLM_EMPTY_COMPLETION" | "LLM_REJECTED" | "LLM_SERVER" | "LLM_BAD_RESPONSE" | "LLM_BAD_OUTPUT"
    | "LLM_BUDGET_EXCEEDED";
  /** `QUOTA_EXCEEDED` only: bytes this origin uses, from `navigator.storage.estimate()`. */
  usage?: number;
  /** `QUOTA_EXCEEDED` only: bytes this origin may use, from `navigator.storage.estimate()`. */
  quota?: number;
}

/**
 * LLM settings as `setConfig` takes them: `Config` plus the secrets, which `config()` never returns.
 * An absent `apiKey` keeps the stored key; `""` removes it.
 */
export type ConfigInput = Config & {
  /** API key (`Authorization: Bearer`, or `x-api-key` for Anthropic). */
  apiKey?: string;
  /** Extra headers carrying credentials (merged by name; `""` removes one). */
  secretHeaders?: Record<string, string>;
  /** Embedding settings, with their own optional key (default: the chat key). */
  embeddings?: EmbeddingConfig & { apiKey?: string };
};

/** Options of `testConnection`. */
export interface TestConnectionOptions {
  /** Test these settings instead of the stored ones (secrets left out are taken from storage). */
  config?: ConfigInput;
  /** Cancels the test. */
  signal?: AbortSignal;
}
"#;

struct Inner {
    core: Core,
    /// The latest `vectorRebuildJob()` (a newer one replaces it: one rebuild at a time).
    rebuild: RefCell<Option<(u32, RebuildJob)>>,
    next_job: Cell<u32>,
}

type AbortListener = Option<AbortGuard>;

/// Reads a `CompileRequest`: the options, the progress callback, and cancellation wired to the
/// signal (the returned listener must live as long as the operation).
fn compile_request(
    request: &JsValue,
) -> Result<(CompileOptions, impl Fn(&Progress), Cancel, AbortListener), JsValue> {
    progress_request("compile options", request)
}

/// An options bag `{...options, onProgress?, signal?}`: the options (defaults for the missing
/// fields), a callback calling `onProgress` with each progress value, and the cancellation of
/// `signal`.
fn progress_request<O: serde::de::DeserializeOwned + Default, P: serde::Serialize + ?Sized>(
    what: &str,
    request: &JsValue,
) -> Result<(O, impl Fn(&P), Cancel, AbortListener), JsValue> {
    let options: O = if request.is_object() {
        serde_wasm_bindgen::from_value(request.clone()).map_err(|e| interop::bad_input(what, e))?
    } else {
        O::default()
    };
    let callback = Reflect::get(request, &"onProgress".into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
    let on_progress = move |p: &P| {
        if let (Some(f), Ok(v)) = (&callback, interop::to_js(p)) {
            let _ = f.call1(&JsValue::UNDEFINED, &v);
        }
    };
    let (cancel, listener) = signal_of(request);
    Ok((options, on_progress, cancel, listener))
}

/// The cancellation of an options bag's `signal` (an `AbortSignal`), if it has one.
fn signal_of(options: &JsValue) -> (Cancel, AbortListener) {
    let signal = Reflect::get(options, &"signal".into())
        .ok()
        .and_then(|s| s.dyn_into::<web_sys::AbortSignal>().ok());
    match signal {
        Some(signal) => {
            let (cancel, guard) = cancel_from_signal(&signal);
            (cancel, Some(guard))
        }
        None => (Cancel::new(), None),
    }
}

/// A personal wiki stored in this browser's IndexedDB.
///
/// It keeps sources (immutable, content-addressed), pages written by the LLM and by you (with
/// append-only revisions), index.md, log.md and schema.md. It is not responsible for converting
/// HTML or PDF (do that in JS first, see `www/convert.js`) or for talking to other tabs beyond the
/// IndexedDB `versionchange` protocol.
///
/// @example
/// ```ts
/// import init, { Wiki } from "./pkg/llm_wiki.js";
/// await init();
/// const wiki = await Wiki.open("research");
/// const r = await wiki.addSource({ title: "Notes", mime: "text/markdown", content: "# Notes\n..." });
/// console.log(r.outcome, (await wiki.sources()).length);
/// ```
#[wasm_bindgen]
pub struct Wiki {
    inner: Rc<Inner>,
    name: String,
}

fn promise<F>(f: F) -> Promise
where
    F: std::future::Future<Output = Result<JsValue, JsValue>> + 'static,
{
    future_to_promise(f)
}

fn listener_from_js(callback: js_sys::Function) -> crate::storage::VersionChangeListener {
    let callback = Rc::new(callback);
    Rc::new(move || {
        let callback = callback.clone();
        Box::pin(async move {
            if let Ok(v) = callback.call0(&JsValue::UNDEFINED) {
                if let Ok(p) = v.dyn_into::<Promise>() {
                    let _ = JsFuture::from(p).await;
                }
            }
        }) as crate::storage::LocalFuture
    })
}

#[wasm_bindgen]
impl Wiki {
    /// Opens the wiki `name`, creating it on first use (with schema.md, index.md and log.md).
    /// Throws `UPGRADE_BLOCKED` when another tab holds an older version open, `SCHEMA_TOO_NEW`,
    /// `STORAGE_UNAVAILABLE` (IndexedDB cannot be used here and `memoryFallback` is not set),
    /// `QUOTA_EXCEEDED` or `INVALID_INPUT` (bad name).
    #[wasm_bindgen(unchecked_return_type = "Promise<Wiki>")]
    pub fn open(
        name: String,
        #[wasm_bindgen(unchecked_param_type = "OpenWikiOptions | undefined")] options: JsValue,
    ) -> Promise {
        promise(async move {
            let mut open = OpenOptions::default();
            if options.is_object() {
                if let Ok(f) = Reflect::get(&options, &"onVersionChange".into()) {
                    if let Ok(f) = f.dyn_into::<js_sys::Function>() {
                        open.on_version_change =
                            OnVersionChange::FlushThenClose(listener_from_js(f));
                    }
                }
                if let Some(ms) = Reflect::get(&options, &"blockedTimeoutMs".into())
                    .ok()
                    .and_then(|v| v.as_f64())
                {
                    open.blocked_timeout_ms = ms.clamp(0.0, 600_000.0) as u32;
                }
            }
            let vector_options: VectorIndexOptions = if options.is_object() {
                js_to_rust_or_default(
                    "vectorIndex",
                    Reflect::get(&options, &"vectorIndex".into()).unwrap_or(JsValue::UNDEFINED),
                )?
            } else {
                VectorIndexOptions::default()
            };
            let memory_fallback = options.is_object()
                && Reflect::get(&options, &"memoryFallback".into())
                    .map(|v| v.is_truthy())
                    .unwrap_or(false);
            let backend = BrowserBackend::with_memory_fallback(memory_fallback);
            let core = CoreWiki::open(&backend, &name, SystemClock, open)
                .await
                .map_err(|e| error_to_js(&e))?;
            core.set_vector_index_options(vector_options);
            Ok(Wiki {
                inner: Rc::new(Inner {
                    core,
                    rebuild: RefCell::new(None),
                    next_job: Cell::new(1),
                }),
                name,
            }
            .into())
        })
    }

    /// Names of the wikis in this origin, sorted.
    #[wasm_bindgen(unchecked_return_type = "Promise<string[]>")]
    pub fn list() -> Promise {
        promise(async move { result_to_js(BrowserBackend::new().list().await) })
    }

    /// Deletes the wiki `name` and everything in it. Open connections (other tabs too) close.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn delete(name: String) -> Promise {
        promise(async move {
            BrowserBackend::new()
                .delete(&name)
                .await
                .map_err(|e| error_to_js(&e))?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// The wiki's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// True once the connection closed (`close()`, another tab's upgrade, or deletion).
    #[wasm_bindgen(getter)]
    pub fn closed(&self) -> bool {
        self.inner.core.storage().is_closed()
    }

    /// What this connection has read and written since it opened, per store:
    /// `{ stores: { pages: { reads, readBytes, writes, writtenBytes, deletes }, … } }` (records
    /// and bytes). Take it before and after a call to see what the call cost: a compile reads
    /// the bodies (`pages` records) of the pages it changes, a question those it answers from.
    #[wasm_bindgen(js_name = ioStats, unchecked_return_type = "IoStats")]
    pub fn io_stats(&self) -> Result<JsValue, JsValue> {
        to_js(&self.inner.core.io_stats())
    }

    /// Closes the connection. Later calls throw `CLOSED`.
    pub fn close(&self) {
        self.inner.core.storage().close();
    }

    /// Adds a source. Same key and same content: a no-op reported as `outcome: "unchanged"`;
    /// same key, new content: `"corrected"`. Throws `UNSUPPORTED_MIME` for anything but
    /// `text/markdown` and `text/plain`.
    #[wasm_bindgen(js_name = addSource, unchecked_return_type = "Promise<AddSourceReport>")]
    pub fn add_source(&self, input: Ts<NewSource>) -> Promise {
        let inner = self.inner.clone();
        let input = ts_to_rust("addSource", input);
        promise(async move { result_to_js(inner.core.add_source(input?).await) })
    }

    /// Every source, ordered by key.
    #[wasm_bindgen(unchecked_return_type = "Promise<Source[]>")]
    pub fn sources(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.sources().await) })
    }

    /// The sources whose current text holds instruction-like phrases ("ignore previous
    /// instructions", "you are now…", 忽略之前的指令…), ordered by key: a flag to show beside
    /// them. Such text was compiled as data, not followed; nothing compiled changes because of it.
    #[wasm_bindgen(js_name = sourceFlags, unchecked_return_type = "Promise<SourceFlag[]>")]
    pub fn source_flags(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.source_flags().await) })
    }

    /// One source with its text, or `undefined`.
    #[wasm_bindgen(unchecked_return_type = "Promise<SourceWithText | undefined>")]
    pub fn source(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.source(&key).await) })
    }

    /// One line per page, ordered by key.
    #[wasm_bindgen(unchecked_return_type = "Promise<PageInfo[]>")]
    pub fn pages(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.pages().await) })
    }

    /// One page, or `undefined`; the key matches exactly, else case-insensitively.
    #[wasm_bindgen(unchecked_return_type = "Promise<Page | undefined>")]
    pub fn page(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.page(&key).await) })
    }

    /// A human edit: creates (no `key`) or updates a page as a new revision. Throws `CONFLICT` when
    /// `baseRevision` is stale.
    #[wasm_bindgen(js_name = putPage, unchecked_return_type = "Promise<Page>")]
    pub fn put_page(&self, edit: Ts<PageEdit>) -> Promise {
        let inner = self.inner.clone();
        let edit = ts_to_rust("putPage", edit);
        promise(async move { result_to_js(inner.core.put_page(edit?).await) })
    }

    /// A page's revisions, oldest first, each with `diff` (a unified line diff of the page file —
    /// frontmatter and body — against the revision before, empty when unchanged), `added` and
    /// `removed` (line counts).
    #[wasm_bindgen(unchecked_return_type = "Promise<HistoryEntry[]>")]
    pub fn history(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.history_diffs(&key).await) })
    }

    /// What `rollback(opId)` would undo, writing nothing: the operations (`opId` and every later
    /// one that changed the same pages, sources, claims or records), the pages restored, removed
    /// or unlinked, the sources, and counts of claims and ledger records. Throws `NOT_FOUND` for
    /// an unknown operation or one without an undo record (vault imports), `INVALID_INPUT` when it
    /// was already rolled back.
    #[wasm_bindgen(js_name = rollbackPreview, unchecked_return_type = "Promise<RollbackPlan>")]
    pub fn rollback_preview(&self, op: f64) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.rollback_preview(op as u64).await) })
    }

    /// Undoes operation `opId` and every later one that touched the same records (see
    /// `rollbackPreview`), in one `rollback` operation: pages, sources, claims, ledger, index.md
    /// and the search index. History is kept; roll the rollback back to redo.
    ///
    /// @example
    /// ```ts
    /// const plan = await wiki.rollbackPreview(12);
    /// if (confirm(`Undo ${plan.operations.length} operations?`)) await wiki.rollback(12);
    /// ```
    #[wasm_bindgen(unchecked_return_type = "Promise<RollbackReport>")]
    pub fn rollback(&self, op: f64) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.rollback(op as u64).await) })
    }

    /// The pages as they were right after operation `opId` (0: before the first), read from the
    /// revisions. Throws `NOT_FOUND` for an operation later than the last.
    #[wasm_bindgen(js_name = asOf, unchecked_return_type = "Promise<PageInfo[]>")]
    pub fn as_of(&self, op: f64) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            result_to_js(inner.core.pages_as_of(op as u64).await.map(|pages| {
                pages
                    .into_iter()
                    .map(crate::wiki::PageInfo::from)
                    .collect::<Vec<_>>()
            }))
        })
    }

    /// One page as it was right after operation `opId` (exact key, then case-insensitive), or
    /// `undefined`.
    #[wasm_bindgen(js_name = pageAsOf, unchecked_return_type = "Promise<Page | undefined>")]
    pub fn page_as_of(&self, key: String, op: f64) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.page_as_of(&key, op as u64).await) })
    }

    /// index.md (generated by the app from the page store).
    #[wasm_bindgen(unchecked_return_type = "Promise<string>")]
    pub fn index(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.index().await) })
    }

    /// log.md (append-only).
    #[wasm_bindgen(unchecked_return_type = "Promise<string>")]
    pub fn log(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.log().await) })
    }

    /// schema.md, the conventions the compile prompts follow.
    #[wasm_bindgen(unchecked_return_type = "Promise<string>")]
    pub fn schema(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.schema().await) })
    }

    /// Replaces schema.md.
    #[wasm_bindgen(js_name = setSchema, unchecked_return_type = "Promise<Operation>")]
    pub fn set_schema(&self, text: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.set_schema(&text).await) })
    }

    /// Every operation, oldest first.
    #[wasm_bindgen(unchecked_return_type = "Promise<Operation[]>")]
    pub fn operations(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.operations().await) })
    }

    /// Compiles every new or changed source (or `sources`) into pages, one operation per source,
    /// with the configured endpoint; with the `offline` provider (the default) it runs the
    /// extractive compiler. Resolves with a
    /// report; a source that fails is listed in `failed` and stays pending, the wiki unchanged by
    /// it. Rejects with `CANCELLED` when `signal` aborts (committed sources stay).
    #[wasm_bindgen(unchecked_return_type = "Promise<CompileReport>")]
    pub fn compile(
        &self,
        #[wasm_bindgen(unchecked_param_type = "CompileRequest | undefined")] request: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let (options, on_progress, cancel, _listener) = compile_request(&request)?;
            let report = inner
                .core
                .compile_configured(FetchTransport::new(), &options, &on_progress, &cancel)
                .await;
            result_to_js(report)
        })
    }

    /// The token cost a `compile()` with these options would have, per source and in total, with
    /// the configured compile model's settings and what its replies showed (0 for the offline
    /// provider). Sends nothing.
    #[wasm_bindgen(unchecked_return_type = "Promise<CompileEstimate>")]
    pub fn estimate(
        &self,
        #[wasm_bindgen(unchecked_param_type = "CompileRequest | undefined")] request: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let (options, _, _, _listener) = compile_request(&request)?;
            result_to_js(inner.core.estimate_configured(&options).await)
        })
    }

    /// A page rendered for reading: `{ page, html, backlinks, assets, missing, ambiguous,
    /// malformed }`, or `undefined`. The HTML is safe to assign to `innerHTML`: no raw HTML,
    /// handlers or script URLs survive, and nothing in it makes the browser fetch a URL.
    /// Wikilinks are `<a class="wikilink" href="#/page/<key>" data-page="<key>">`; missing ones
    /// are `<span class="wikilink missing">`. Attachment images are `<img data-asset="<sha256>">`
    /// without `src`: load the bytes with `asset(sha256)` and set a `blob:` URL.
    #[wasm_bindgen(js_name = pageView, unchecked_return_type = "Promise<PageView | undefined>")]
    pub fn page_view(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.page_view(&key).await) })
    }

    /// Keys of the pages linking to `key`, sorted.
    #[wasm_bindgen(unchecked_return_type = "Promise<string[]>")]
    pub fn backlinks(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.backlinks(&key).await) })
    }

    /// Every page (`{ key, title, kind, tags, sources }`, sorted by key) and every link between two pages
    /// (`{ from, to }`, resolved like the page view's links; missing and ambiguous targets are left
    /// out), for a graph view.
    #[wasm_bindgen(unchecked_return_type = "Promise<WikiGraph>")]
    pub fn graph(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.graph().await) })
    }

    /// Renames a page (new title, and the key it gives) and rewrites every link to it, in one
    /// operation. Throws `NOT_FOUND`, `INVALID_INPUT` (empty title), `CONFLICT`.
    #[wasm_bindgen(js_name = renamePage, unchecked_return_type = "Promise<RenameReport>")]
    pub fn rename_page(&self, key: String, title: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.rename_page(&key, &title).await) })
    }

    /// Compile updates held because they would drop a human's paragraphs (Decision 5), each with
    /// the proposed page and the paragraphs it would drop.
    #[wasm_bindgen(unchecked_return_type = "Promise<Proposal[]>")]
    pub fn proposals(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.proposals().await) })
    }

    /// Accepts the held update of a page: it becomes the next revision, in one operation.
    /// Resolves to the operation id. Throws `NOT_FOUND`, `CONFLICT`.
    #[wasm_bindgen(js_name = acceptProposal, unchecked_return_type = "Promise<number>")]
    pub fn accept_proposal(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.accept_proposal(&key).await) })
    }

    /// Rejects the held update of a page: the page stays as it is. Throws `NOT_FOUND`.
    #[wasm_bindgen(js_name = rejectProposal, unchecked_return_type = "Promise<void>")]
    pub fn reject_proposal(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.reject_proposal(&key).await) })
    }

    /// Removes a source in one operation: its summary page, its claims (and the lines citing
    /// them), its place in every page's `sources`, links to its summary page (now plain text);
    /// contradictions resting on its claims are closed. No model call. Throws `NOT_FOUND`,
    /// `CONFLICT`.
    #[wasm_bindgen(js_name = removeSource, unchecked_return_type = "Promise<RemoveSourceReport>")]
    pub fn remove_source(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.remove_source(&key).await) })
    }

    /// Deletes a page; every link to it becomes plain text, in one operation. Throws `NOT_FOUND`,
    /// `CONFLICT`.
    #[wasm_bindgen(js_name = deletePage, unchecked_return_type = "Promise<DeleteReport>")]
    pub fn delete_page(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.delete_page(&key).await) })
    }

    /// Stores an attachment (image or file) under `raw/assets/`, content-addressed; `![[name]]`
    /// and `![](name)` then show it. Same name and bytes again: the existing record, nothing
    /// written. Throws `INVALID_INPUT` for empty bytes.
    #[wasm_bindgen(js_name = addAttachment, unchecked_return_type = "Promise<Asset>")]
    pub fn add_attachment(&self, name: String, mime: String, bytes: Vec<u8>) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.add_attachment(&name, &mime, &bytes).await) })
    }

    /// Every attachment, ordered by name.
    #[wasm_bindgen(unchecked_return_type = "Promise<Asset[]>")]
    pub fn assets(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.assets().await) })
    }

    /// The bytes of the attachment with this SHA-256, or `undefined`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Uint8Array | undefined>")]
    pub fn asset(&self, sha256: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            match inner.core.asset_bytes(&sha256).await {
                Ok(Some(b)) => Ok(bytes_to_js(&b)),
                Ok(None) => Ok(JsValue::UNDEFINED),
                Err(e) => Err(error_to_js(&e)),
            }
        })
    }

    /// The whole wiki as a zip (the vault layout: `wiki/<kind>/<key>.md`, `raw/`, `index.md`,
    /// `log.md`, `schema.md`, `.llm-wiki/`), never containing an API key. The same wiki always
    /// gives the same bytes.
    #[wasm_bindgen(js_name = exportVault, unchecked_return_type = "Promise<Uint8Array>")]
    pub fn export_vault(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            match inner.core.export_vault().await {
                Ok(b) => Ok(bytes_to_js(&b)),
                Err(e) => Err(error_to_js(&e)),
            }
        })
    }

    /// Imports a zip: a vault exported by llm-wiki is restored exactly (into an empty wiki only);
    /// a plain Obsidian vault's notes come in as sources and its other files as attachments. Of
    /// its notes, an Excalidraw drawing gives only its text, and a template is skipped unless
    /// `options.templates` is `"import"`; `skipped` lists what was left out and why.
    /// Throws `INVALID_INPUT` (damaged zip, non-empty wiki, hash mismatch), `QUOTA_EXCEEDED`.
    #[wasm_bindgen(js_name = importVault, unchecked_return_type = "Promise<ImportReport>")]
    pub fn import_vault(
        &self,
        bytes: Vec<u8>,
        #[wasm_bindgen(unchecked_param_type = "Partial<ImportOptions> | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        let options =
            js_to_rust_or_default::<crate::vault::ImportOptions>("import options", options);
        promise(async move {
            let options = options?;
            result_to_js(inner.core.import_vault_with(&bytes, &options).await)
        })
    }

    /// Answers a question from the wiki, citing its pages as `[[key]]` (every citation names a
    /// page the answer was given; others are removed and listed in `removedCitations`). Streams
    /// the answer to `onToken`. With `writeBack: true` the answer is saved as an `analysis` page
    /// (`saved`); `worthSaving` says whether it cites two or more pages. With no endpoint the
    /// answer is extractive (`extractive: true`) and says so.
    ///
    /// With `writeBack` it commits a page: an app with several writers (tabs, an extension) calls
    /// it under its write lock, as `www/app.js` does (Decision 9). Without, it writes no wiki
    /// content, only the cache of what the endpoint accepted (`meta/llm-learned`, an optimistic
    /// write whose conflict is ignored), so it need not wait for the lock.
    #[wasm_bindgen(unchecked_return_type = "Promise<Answer>")]
    pub fn ask(
        &self,
        question: String,
        #[wasm_bindgen(unchecked_param_type = "AskRequest | undefined")] request: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let options: crate::query::AskOptions = if request.is_object() {
                interop::json_to_rust("ask options", &request)?
            } else {
                Default::default()
            };
            let callback = Reflect::get(&request, &"onToken".into())
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
            let on_token = |t: &str| {
                if let Some(f) = &callback {
                    let _ = f.call1(&JsValue::UNDEFINED, &JsValue::from_str(t));
                }
            };
            let (cancel, _listener) = signal_of(&request);
            let answer = inner
                .core
                .ask_configured(
                    FetchTransport::new(),
                    &question,
                    &options,
                    Some(&on_token),
                    &cancel,
                )
                .await;
            result_to_js(answer)
        })
    }

    /// Saves an answer `ask()` returned as an `analysis` page (the same as `writeBack: true`).
    /// Throws `UNGROUNDED` for an answer with `grounded: false` (declined, or citing no page).
    #[wasm_bindgen(js_name = saveAnswer, unchecked_return_type = "Promise<Page>")]
    pub fn save_answer(
        &self,
        question: String,
        #[wasm_bindgen(unchecked_param_type = "Answer")] answer: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let answer: crate::query::Answer = interop::json_to_rust("answer", &answer)?;
            result_to_js(inner.core.write_back(&question, &answer).await)
        })
    }

    /// Checks the wiki's health: findings (id, kind, severity, page, related, message, fix) sorted
    /// by severity. Apply a finding's fix with `applyFix(id)`.
    ///
    /// With `llm: true` the LLM checks run first with the lint model (contradictions between pages
    /// that share an entity, superseded claims, gaps, suggested questions; call `lintEstimate`
    /// before, they cost tokens); their findings stay listed by later `lint()` calls until the
    /// next LLM run. `signal` cancels them (`CANCELLED`). Throws `LLM_CONFIG` with no endpoint, and
    /// every LLM error but `LLM_BAD_OUTPUT` (a reply still malformed after its repair is left out).
    /// With `llm: true` it writes (the findings, and what the endpoint accepted): call it under
    /// the app's write lock, as `www/app.js` does (Decision 9).
    #[wasm_bindgen(unchecked_return_type = "Promise<Finding[]>")]
    pub fn lint(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "(Partial<LintOptions> & Partial<LlmLintOptions> & { llm?: boolean, signal?: AbortSignal }) | undefined"
        )]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        let (cancel, listener) = if options.is_object() {
            signal_of(&options)
        } else {
            (Cancel::new(), None)
        };
        promise(async move {
            let _listener = listener;
            let (options, llm_options): (crate::lint::LintOptions, Option<LlmLintOptions>) =
                if options.is_object() {
                    let llm = Reflect::get(&options, &"llm".into())
                        .ok()
                        .and_then(|v| v.as_bool())
                        .unwrap_or(false);
                    (
                        interop::json_to_rust("lint options", &options)?,
                        if llm {
                            Some(interop::json_to_rust("lint options", &options)?)
                        } else {
                            None
                        },
                    )
                } else {
                    Default::default()
                };
            if let Some(llm_options) = llm_options {
                inner
                    .core
                    .lint_llm_configured(FetchTransport::new(), &llm_options, &cancel)
                    .await
                    .map_err(|e| error_to_js(&e))?;
            }
            result_to_js(inner.core.lint(&options).await)
        })
    }

    /// What `lint({ llm: true })` would cost, before any call: `{ groups, input, output, total }`
    /// tokens (Decision 12 estimate; `groups` are the page groups, one call each).
    #[wasm_bindgen(js_name = lintEstimate, unchecked_return_type = "Promise<LlmLintEstimate>")]
    pub fn lint_estimate(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Partial<LlmLintOptions> | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let options: LlmLintOptions = if options.is_object() {
                interop::json_to_rust("lint options", &options)?
            } else {
                Default::default()
            };
            let config = inner.core.llm_config().await.map_err(|e| error_to_js(&e))?;
            result_to_js(
                inner
                    .core
                    .lint_llm_estimate(&options, &config.estimator)
                    .await,
            )
        })
    }

    /// Applies the fix of a current lint finding, as one operation. For a contradiction, `note`
    /// says how it was settled and `scoped: true` keeps both claims (status `scoped`).
    #[wasm_bindgen(js_name = applyFix, unchecked_return_type = "Promise<Operation>")]
    pub fn apply_fix(
        &self,
        id: String,
        #[wasm_bindgen(unchecked_param_type = "{ note?: string, scoped?: boolean } | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let note = Reflect::get(&options, &"note".into())
                .ok()
                .and_then(|v| v.as_string());
            let scoped = Reflect::get(&options, &"scoped".into())
                .ok()
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            result_to_js(inner.core.apply_fix(&id, note.as_deref(), scoped).await)
        })
    }

    /// Restores a page to an earlier revision, as a new revision (history is kept).
    #[wasm_bindgen(unchecked_return_type = "Promise<Page>")]
    pub fn revert(&self, key: String, revision: f64) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.revert(&key, revision as u64).await) })
    }

    /// Searches the pages. `options`: `k` (default 10), `mode` `"bm25"` | `"vector"` |
    /// `"hybrid"` (default), `queryVector` `{ model, vector }` for the vector modes, `depth`,
    /// `explain`. Each hit has `key`, `score` and `explain` (ranks, BM25 per-term breakdown,
    /// similarity); `status` says why vectors did not serve (e.g. `{ state: "reembedRequired",
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

    /// Storage usage and quota of this origin, whether it is persistent, and where this wiki is
    /// kept (`backend`). A wiki kept in memory (`memoryFallback`) reports `{ persisted: false,
    /// backend: "memory" }` and no figures.
    #[wasm_bindgen(js_name = storageInfo, unchecked_return_type = "Promise<StorageInfo>")]
    pub fn storage_info(&self) -> Promise {
        let kind = self.inner.core.storage().kind();
        promise(async move {
            let info = js_sys::Object::new();
            let _ = Reflect::set(&info, &"backend".into(), &kind.name().into());
            if kind == BackendKind::Memory {
                let _ = Reflect::set(&info, &"persisted".into(), &JsValue::FALSE);
                return Ok(info.into());
            }
            let manager = storage_manager()?;
            let estimate = JsFuture::from(manager.estimate().map_err(|e| js_error(&e))?)
                .await
                .map_err(|e| js_error(&e))?;
            for field in ["usage", "quota"] {
                if let Some(n) = Reflect::get(&estimate, &field.into())
                    .ok()
                    .and_then(|v| v.as_f64())
                {
                    let _ = Reflect::set(&info, &field.into(), &n.into());
                }
            }
            let persisted = JsFuture::from(manager.persisted().map_err(|e| js_error(&e))?)
                .await
                .map_err(|e| js_error(&e))?;
            let _ = Reflect::set(
                &info,
                &"persisted".into(),
                &JsValue::from_bool(persisted.is_truthy()),
            );
            Ok(info.into())
        })
    }

    /// Saves the LLM settings (one `settings` operation in log.md; never the key). An absent
    /// `apiKey` keeps the stored key, `""` removes it; extra headers whose name looks secret
    /// (`Authorization`, `*key*`, `*token*`…) are stored like the key. Throws `LLM_CONFIG` for
    /// invalid settings (nothing is written).
    ///
    /// @example
    /// ```ts
    /// const [ollama] = Wiki.presets().filter(p => p.id === "ollama");
    /// await wiki.setConfig({ ...ollama.config, model: "qwen2.5:7b" });
    /// ```
    #[wasm_bindgen(js_name = setConfig, unchecked_return_type = "Promise<Operation>")]
    pub fn set_config(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConfigInput")] config: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        let config: Result<Config, JsValue> = interop::json_to_rust("setConfig", &config);
        promise(async move { result_to_js(inner.core.set_llm_config(config?).await) })
    }

    /// The LLM settings without secrets: `hasApiKey` and `secretHeaderNames` say what is stored.
    /// A wiki that was never configured is offline.
    #[wasm_bindgen(unchecked_return_type = "Promise<ConfigView>")]
    pub fn config(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.llm_config_view().await) })
    }

    /// Starting points for the settings screen: OpenAI, Ollama (OpenAI-compatible `/v1`), Ollama
    /// native API, LM Studio, llama.cpp server, vLLM, Anthropic, offline.
    #[wasm_bindgen(unchecked_return_type = "Preset[]")]
    pub fn presets() -> Result<JsValue, JsValue> {
        to_js(&presets())
    }

    /// Tests the LLM settings (stored, or `options.config`) with the same URLs and requests the
    /// real calls use: the model list (reachability, CORS, key), a plain and a streamed chat, a
    /// structured call (which JSON mode the endpoint takes; remembered), and embeddings. Never
    /// throws for endpoint problems: each step reports `ok`, `failed` (with an error `code`) or
    /// `skipped`. An `LLM_ORIGIN_NOT_ALLOWED` step names the exact `OLLAMA_ORIGINS` value.
    /// It may store what the endpoint accepted (`meta/llm-learned`, a cache written with an
    /// optimistic check whose conflict is ignored): no write lock needed.
    #[wasm_bindgen(js_name = testConnection, unchecked_return_type = "Promise<ConnectionReport>")]
    pub fn test_connection(
        &self,
        #[wasm_bindgen(unchecked_param_type = "TestConnectionOptions | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let (cancel, _listener) = signal_of(&options);
            let mut given: Option<Config> = None;
            if options.is_object() {
                if let Ok(c) = Reflect::get(&options, &"config".into()) {
                    if c.is_object() {
                        given = Some(interop::json_to_rust("testConnection config", &c)?);
                    }
                }
            }
            let stored = inner.core.llm_config().await.map_err(|e| error_to_js(&e))?;
            let mut config = match given {
                Some(mut c) => {
                    if c.api_key.is_none() {
                        c.api_key = stored.api_key.clone();
                    }
                    if c.embeddings.api_key.is_none() {
                        c.embeddings.api_key = stored.embeddings.api_key.clone();
                    }
                    for (k, v) in &stored.secret_headers {
                        c.secret_headers
                            .entry(k.clone())
                            .or_insert_with(|| v.clone());
                    }
                    c
                }
                None => stored,
            };
            config.normalize();
            let learned = inner
                .core
                .llm_learned()
                .await
                .map_err(|e| error_to_js(&e))?;
            let report = crate::llm::connection::test_connection(
                &config,
                FetchTransport::new(),
                learned.clone(),
                &cancel,
            )
            .await;
            // What the endpoint accepted is worth keeping even if saving it fails.
            let _ = inner.core.save_llm_learned(&learned).await;
            to_js(&report)
        })
    }

    /// Asks the browser to make storage persistent (`navigator.storage.persist()`); resolves to
    /// whether it is. The request is made before this returns, so a call inside a click or drop
    /// handler carries that user gesture. Headless browsers and some settings answer `false`
    /// without a prompt; a wiki kept in memory (`memoryFallback`) always answers `false`.
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn persist(&self) -> Promise {
        if self.inner.core.storage().kind() == BackendKind::Memory {
            return Promise::resolve(&JsValue::FALSE);
        }
        let request = storage_manager().and_then(|m| m.persist().map_err(|e| js_error(&e)));
        promise(async move {
            let r = JsFuture::from(request?).await.map_err(|e| js_error(&e))?;
            Ok(JsValue::from_bool(r.is_truthy()))
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

fn js_error(e: &JsValue) -> JsValue {
    error_to_js(&Error::StorageUnavailable(
        e.as_string().unwrap_or_else(|| format!("{e:?}")),
    ))
}

fn storage_manager() -> Result<web_sys::StorageManager, JsValue> {
    crate::storage::idb::storage_manager().ok_or_else(|| {
        error_to_js(&Error::StorageUnavailable(
            "navigator.storage is not available".into(),
        ))
    })
}
