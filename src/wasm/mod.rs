//! The JavaScript API: the `Wiki` class (wasm only).
//!
//! *Invariant:* this module (with `storage::idb`) is the only place that knows `JsValue`. Every
//! method is async and returns a `Promise`; the class holds `Rc<Inner>` and clones it before
//! awaiting, so a second call while one is pending never throws "recursive use of an object".

#[cfg(feature = "bench")]
pub mod bench;
pub mod interop;
mod mirror;
mod operations;
mod pages;
mod search;
mod settings;
mod storage;
mod types;
mod views;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use crate::clock::SystemClock;
use crate::compile::pipeline::{CompileOptions, Progress};
use crate::llm::http::{cancel_from_signal, AbortGuard};
use crate::llm::Cancel;
use crate::search::vectors::RebuildJob;
use crate::search_ops::VectorIndexOptions;
use crate::storage::browser::{BrowserBackend, BrowserStorage};
use crate::storage::{Backend, OnVersionChange, OpenOptions, Storage};
use crate::wiki::Wiki as CoreWiki;
use interop::{error_to_js, js_to_rust_or_default, result_to_js, to_js};

type Core = CoreWiki<BrowserStorage, SystemClock>;

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
/// HTML or PDF (do that in JS first, see `www/src/convert.js`) or for talking to other tabs beyond the
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
}
