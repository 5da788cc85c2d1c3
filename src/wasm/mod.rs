//! The JavaScript API: the `Wiki` class (wasm only).
//!
//! *Invariant:* this module (with `storage::idb`) is the only place that knows `JsValue`. Every
//! method is async and returns a `Promise`; the class holds `Rc<Inner>` and clones it before
//! awaiting, so a second call while one is pending never throws "recursive use of an object".

pub mod interop;

use std::rc::Rc;

use js_sys::{Promise, Reflect};
use tsify::Ts;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use crate::clock::SystemClock;
use crate::error::Error;
use crate::search::SearchOptions;
use crate::storage::idb::{IdbBackend, IdbStorage};
use crate::storage::{Backend, OnVersionChange, OpenOptions, Storage};
use crate::wiki::{NewSource, PageEdit, Wiki as CoreWiki};
use interop::{error_to_js, js_to_rust_or_default, result_to_js, ts_to_rust};

type Core = CoreWiki<IdbStorage, SystemClock>;

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
}

/** What the browser reports about this origin's storage. */
export interface StorageInfo {
  /** Bytes used by this origin (all wikis), if the browser reports it. */
  usage?: number;
  /** Bytes this origin may use, if the browser reports it. */
  quota?: number;
  /** Whether storage is persistent (not evicted under pressure). */
  persisted: boolean;
}

/** Every error llm-wiki throws: `name` is "LlmWikiError", `code` is stable. */
export interface LlmWikiError extends Error {
  name: "LlmWikiError";
  code:
    | "QUOTA_EXCEEDED" | "UPGRADE_BLOCKED" | "CLOSED" | "STORAGE_UNAVAILABLE" | "SCHEMA_TOO_NEW"
    | "CONFLICT" | "STORAGE" | "INJECTED_FAULT" | "CORRUPT" | "INVALID_INPUT" | "UNSUPPORTED_MIME"
    | "NOT_FOUND" | "CANCELLED";
}
"#;

struct Inner {
    core: Core,
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
    /// `STORAGE_UNAVAILABLE` or `INVALID_INPUT` (bad name).
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
            let core = CoreWiki::open(&IdbBackend::new(), &name, SystemClock, open)
                .await
                .map_err(|e| error_to_js(&e))?;
            Ok(Wiki {
                inner: Rc::new(Inner { core }),
                name,
            }
            .into())
        })
    }

    /// Names of the wikis in this origin, sorted.
    #[wasm_bindgen(unchecked_return_type = "Promise<string[]>")]
    pub fn list() -> Promise {
        promise(async move { result_to_js(IdbBackend::new().list().await) })
    }

    /// Deletes the wiki `name` and everything in it. Open connections (other tabs too) close.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn delete(name: String) -> Promise {
        promise(async move {
            IdbBackend::new()
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

    /// A page's revisions, oldest first.
    #[wasm_bindgen(unchecked_return_type = "Promise<Revision[]>")]
    pub fn history(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.history(&key).await) })
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
        promise(async move { result_to_js(inner.core.search(&text, &options?).await) })
    }

    /// Storage usage and quota of this origin, and whether it is persistent.
    #[wasm_bindgen(js_name = storageInfo, unchecked_return_type = "Promise<StorageInfo>")]
    pub fn storage_info(&self) -> Promise {
        promise(async move {
            let manager = storage_manager()?;
            let info = js_sys::Object::new();
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

    /// Asks the browser to make storage persistent (`navigator.storage.persist()`); resolves to
    /// whether it is. Headless browsers and some settings answer `false` without a prompt.
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn persist(&self) -> Promise {
        promise(async move {
            let manager = storage_manager()?;
            let r = JsFuture::from(manager.persist().map_err(|e| js_error(&e))?)
                .await
                .map_err(|e| js_error(&e))?;
            Ok(JsValue::from_bool(r.is_truthy()))
        })
    }
}

fn js_error(e: &JsValue) -> JsValue {
    error_to_js(&Error::StorageUnavailable(
        e.as_string().unwrap_or_else(|| format!("{e:?}")),
    ))
}

fn storage_manager() -> Result<web_sys::StorageManager, JsValue> {
    let navigator =
        Reflect::get(&js_sys::global(), &"navigator".into()).map_err(|e| js_error(&e))?;
    let storage = Reflect::get(&navigator, &"storage".into()).map_err(|e| js_error(&e))?;
    storage.dyn_into::<web_sys::StorageManager>().map_err(|_| {
        error_to_js(&Error::StorageUnavailable(
            "navigator.storage is not available".into(),
        ))
    })
}
