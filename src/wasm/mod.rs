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
use crate::llm::config::{presets, Config};
use crate::llm::http::{cancel_from_signal, FetchTransport};
use crate::storage::idb::{IdbBackend, IdbStorage};
use crate::storage::{Backend, OnVersionChange, OpenOptions, Storage};
use crate::wiki::{NewSource, PageEdit, Wiki as CoreWiki};
use interop::{error_to_js, result_to_js, to_js, ts_to_rust};

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
    | "NOT_FOUND" | "CANCELLED"
    | "LLM_CONFIG" | "LLM_AUTH" | "LLM_ORIGIN_NOT_ALLOWED" | "LLM_UNREACHABLE" | "LLM_TIMEOUT"
    | "LLM_NOT_AN_ENDPOINT" | "LLM_CONTEXT_OVERFLOW" | "LLM_TRUNCATED" | "LLM_RATE_LIMITED"
    | "LLM_EMPTY_COMPLETION" | "LLM_REJECTED" | "LLM_SERVER" | "LLM_BAD_RESPONSE" | "LLM_BAD_OUTPUT"
    | "LLM_BUDGET_EXCEEDED";
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
    #[wasm_bindgen(js_name = testConnection, unchecked_return_type = "Promise<ConnectionReport>")]
    pub fn test_connection(
        &self,
        #[wasm_bindgen(unchecked_param_type = "TestConnectionOptions | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let mut cancel = crate::llm::Cancel::new();
            let mut given: Option<Config> = None;
            if options.is_object() {
                if let Ok(signal) = Reflect::get(&options, &"signal".into()) {
                    if let Ok(signal) = signal.dyn_into::<web_sys::AbortSignal>() {
                        cancel = cancel_from_signal(&signal);
                    }
                }
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
