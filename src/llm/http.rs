//! The browser transport (wasm only): `fetch` with an `AbortController` for cancellation and
//! timeouts, and a `ReadableStream` reader for streamed bodies.
//!
//! A `fetch` that rejects with a `TypeError` is either a server that is not there or a response
//! the browser hid because of CORS. To tell them apart (field case F06), a `no-cors` `GET` of the
//! server's root follows: it resolves (with an opaque response) when something answers, so the
//! failure was CORS → `LlmOriginNotAllowed` with this page's exact origin
//! (`self.location.origin`, e.g. `chrome-extension://<id>` in an extension); otherwise
//! `LlmUnreachable`. Nothing is retried.
//!
//! *Invariant:* this module and `src/wasm/` are the only places that touch `fetch`; everything
//! above [`Transport`] is platform-independent.

use std::rc::Rc;

use futures::future::{select, Either};
use gloo_timers::future::TimeoutFuture;
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Headers, ReadableStreamDefaultReader, RequestInit, RequestMode};

use crate::clock::{Clock, Millis, SystemClock};
use crate::error::{Error, Result};
use crate::llm::transport::{HttpRequest, HttpResponse, Method, ResponseBody, Timeouts, Transport};
use crate::llm::{Cancel, CancelListener};

#[wasm_bindgen]
extern "C" {
    // The global `fetch`, in windows and workers alike.
    #[wasm_bindgen(js_name = fetch)]
    fn global_fetch(input: &web_sys::Request) -> js_sys::Promise;
}

/// The origin of the current page or worker (`self.location.origin`), if there is one.
pub fn page_origin() -> Option<String> {
    let global = js_sys::global();
    let from_location = Reflect::get(&global, &"location".into())
        .ok()
        .filter(|l| l.is_object())
        .and_then(|l| Reflect::get(&l, &"origin".into()).ok())
        .and_then(|o| o.as_string());
    from_location
        .or_else(|| {
            Reflect::get(&global, &"origin".into())
                .ok()
                .and_then(|o| o.as_string())
        })
        .filter(|o| !o.is_empty() && o != "null")
}

/// `fetch` as a [`Transport`].
#[derive(Debug, Clone, Default)]
pub struct FetchTransport {
    /// Timeout of the reachability probe after a network failure, ms.
    probe_timeout_ms: u32,
}

impl FetchTransport {
    /// A transport with a 3 s reachability probe.
    pub fn new() -> Self {
        FetchTransport {
            probe_timeout_ms: 3000,
        }
    }
}

fn js_message(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        let name: String = err.name().into();
        let message: String = err.message().into();
        format!("{name}: {message}")
    } else {
        e.as_string().unwrap_or_else(|| format!("{e:?}"))
    }
}

fn is_abort(e: &JsValue) -> bool {
    Reflect::get(e, &"name".into())
        .ok()
        .and_then(|n| n.as_string())
        .is_some_and(|n| n == "AbortError")
}

/// `scheme://host:port/` of `url`.
fn origin_root(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host = rest.split(['/', '?', '#']).next().unwrap_or("");
            format!("{scheme}://{host}/")
        }
        None => url.to_string(),
    }
}

impl FetchTransport {
    /// True when something answers at the root of `url` (a `no-cors` GET resolves).
    async fn reachable(&self, url: &str) -> bool {
        let init = RequestInit::new();
        init.set_method("GET");
        init.set_mode(RequestMode::NoCors);
        let Ok(controller) = AbortController::new() else {
            return false;
        };
        init.set_signal(Some(&controller.signal()));
        let Ok(req) = web_sys::Request::new_with_str_and_init(&origin_root(url), &init) else {
            return false;
        };
        let fetch = JsFuture::from(global_fetch(&req));
        let timeout = TimeoutFuture::new(self.probe_timeout_ms);
        match select(fetch, timeout).await {
            Either::Left((r, _)) => r.is_ok(),
            Either::Right(_) => {
                controller.abort();
                false
            }
        }
    }
}

/// A streamed `fetch` body.
pub struct FetchBody {
    reader: Option<ReadableStreamDefaultReader>,
    controller: Rc<AbortController>,
    cancel: Cancel,
    timeouts: Timeouts,
    /// True once a chunk arrived: later waits are `timeouts.idle_ms`, the first `start_ms`.
    started: bool,
    url: String,
    done: bool,
    _listener: CancelListener,
}

impl std::fmt::Debug for FetchBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchBody")
            .field("url", &self.url)
            .field("done", &self.done)
            .finish()
    }
}

impl Drop for FetchBody {
    fn drop(&mut self) {
        if !self.done {
            // Stop the download (e.g. after `[DONE]` on a connection the server keeps open).
            self.controller.abort();
        }
    }
}

impl ResponseBody for FetchBody {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>> {
        let Some(reader) = &self.reader else {
            self.done = true;
            return Ok(None);
        };
        self.cancel.check()?;
        let read = JsFuture::from(reader.read());
        let wait = if self.started {
            self.timeouts.idle_ms
        } else {
            self.timeouts.start_ms
        };
        let timeout = TimeoutFuture::new(wait.min(u64::from(u32::MAX)) as u32);
        let result = match select(read, timeout).await {
            Either::Left((r, _)) => r,
            Either::Right(_) => {
                // Stalled (or never started): abort, so the server stops generating.
                self.done = true;
                self.controller.abort();
                return Err(Error::LlmTimeout {
                    url: self.url.clone(),
                    ms: wait,
                });
            }
        };
        self.started = true;
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                self.done = true;
                if self.cancel.is_cancelled() || is_abort(&e) {
                    return Err(Error::Cancelled);
                }
                return Err(Error::LlmUnreachable {
                    url: self.url.clone(),
                    detail: format!("the connection broke while reading: {}", js_message(&e)),
                });
            }
        };
        let done = Reflect::get(&result, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true);
        if done {
            self.done = true;
            return Ok(None);
        }
        let value = Reflect::get(&result, &"value".into()).unwrap_or(JsValue::UNDEFINED);
        Ok(Some(Uint8Array::new(&value).to_vec()))
    }
}

impl Transport for FetchTransport {
    type Body = FetchBody;

    async fn send(
        &self,
        request: &HttpRequest,
        cancel: &Cancel,
        timeouts: Timeouts,
    ) -> Result<HttpResponse<FetchBody>> {
        let timeout_ms = timeouts.start_ms;
        cancel.check()?;
        let controller = Rc::new(
            AbortController::new()
                .map_err(|e| Error::LlmConfig(format!("AbortController: {}", js_message(&e))))?,
        );
        let init = RequestInit::new();
        init.set_method(request.method.as_str());
        init.set_mode(RequestMode::Cors);
        init.set_signal(Some(&controller.signal()));
        let headers =
            Headers::new().map_err(|e| Error::LlmConfig(format!("Headers: {}", js_message(&e))))?;
        for (k, v) in &request.headers {
            headers.append(k, v).map_err(|_| {
                // The value may be a secret: name the header only.
                Error::LlmConfig(format!("the header {k:?} has a value the browser refuses"))
            })?;
        }
        init.set_headers(&headers);
        if let (Method::Post, Some(body)) = (request.method, &request.body) {
            init.set_body(&JsValue::from_str(body));
        }
        let req = web_sys::Request::new_with_str_and_init(&request.url, &init).map_err(|e| {
            Error::LlmConfig(format!(
                "the browser refused the request to {}: {}",
                request.url,
                js_message(&e)
            ))
        })?;
        let listener = {
            let c = controller.clone();
            cancel.on_cancel(move || c.abort())
        };
        let fetch = JsFuture::from(global_fetch(&req));
        let timeout = TimeoutFuture::new(timeout_ms.min(u64::from(u32::MAX)) as u32);
        let response = match select(fetch, timeout).await {
            Either::Left((Ok(r), _)) => r,
            Either::Left((Err(e), _)) => {
                if cancel.is_cancelled() || is_abort(&e) {
                    return Err(Error::Cancelled);
                }
                // TypeError: the server is down, or the browser hid the response (CORS).
                return Err(if self.reachable(&request.url).await {
                    Error::LlmOriginNotAllowed {
                        origin: page_origin().unwrap_or_else(|| "null".into()),
                        url: request.url.clone(),
                        hint: String::new(),
                    }
                } else {
                    Error::LlmUnreachable {
                        url: request.url.clone(),
                        detail: js_message(&e),
                    }
                });
            }
            Either::Right(_) => {
                controller.abort();
                return Err(Error::LlmTimeout {
                    url: request.url.clone(),
                    ms: timeout_ms,
                });
            }
        };
        let response: web_sys::Response = response
            .dyn_into()
            .map_err(|_| Error::LlmBadResponse("fetch did not return a Response".into()))?;
        let mut headers = Vec::new();
        if let Ok(Some(iter)) = js_sys::try_iter(&response.headers()) {
            for entry in iter.flatten() {
                let pair = js_sys::Array::from(&entry);
                if let (Some(k), Some(v)) = (pair.get(0).as_string(), pair.get(1).as_string()) {
                    headers.push((k.to_ascii_lowercase(), v));
                }
            }
        }
        let reader = response.body().map(|b| {
            b.get_reader()
                .unchecked_into::<ReadableStreamDefaultReader>()
        });
        Ok(HttpResponse {
            status: response.status(),
            headers,
            body: FetchBody {
                reader,
                controller,
                cancel: cancel.clone(),
                timeouts,
                started: false,
                url: request.url.clone(),
                done: false,
                _listener: listener,
            },
        })
    }

    async fn sleep(&self, ms: u64, cancel: &Cancel) -> Result<()> {
        cancel.check()?;
        let timer = TimeoutFuture::new(ms.min(u64::from(u32::MAX)) as u32);
        match select(timer, cancel.cancelled()).await {
            Either::Left(_) => Ok(()),
            Either::Right(_) => Err(Error::Cancelled),
        }
    }

    fn now_ms(&self) -> Millis {
        SystemClock.now_ms()
    }

    fn page_origin(&self) -> Option<String> {
        page_origin()
    }
}

/// Listens to an `AbortSignal` while an operation runs; removes its listener when dropped, so a
/// later abort never calls a freed closure and nothing leaks.
pub struct AbortGuard {
    signal: web_sys::AbortSignal,
    closure: Closure<dyn FnMut()>,
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        let _ = self
            .signal
            .remove_event_listener_with_callback("abort", self.closure.as_ref().unchecked_ref());
    }
}

/// A [`Cancel`] that is cancelled when `signal` aborts (and at once if it already has), with the
/// guard that keeps the listener attached: hold it as long as the operation runs.
pub fn cancel_from_signal(signal: &web_sys::AbortSignal) -> (Cancel, AbortGuard) {
    let cancel = Cancel::new();
    if signal.aborted() {
        cancel.cancel();
    }
    let c = cancel.clone();
    let closure: Closure<dyn FnMut()> = Closure::new(move || c.cancel());
    let _ = signal.add_event_listener_with_callback("abort", closure.as_ref().unchecked_ref());
    (
        cancel,
        AbortGuard {
            signal: signal.clone(),
            closure,
        },
    )
}
