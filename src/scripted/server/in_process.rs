//! [`InProcess`], the scripted server as a [`Transport`] without a network: time on a fake
//! clock, the browser's CORS and `fetch` timeouts emulated.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{handle, ServerRequest, ServerResponse, ServerState};
use crate::clock::{Clock, ManualClock, Millis};
use crate::error::{Error, Result};
use crate::llm::transport::{
    header, HttpRequest, HttpResponse, Method, ResponseBody, Timeouts, Transport,
};
use crate::llm::Cancel;

/// A [`Transport`] that calls [`handle`] in-process: no network, time on a [`ManualClock`]
/// (sleeps and `delay=` faults advance it), and the browser's CORS behaviour emulated when a page
/// origin is set (a refused preflight or response becomes the same `LlmOriginNotAllowed` the
/// fetch transport reports after its reachability probe).
#[derive(Debug, Clone)]
pub struct InProcess {
    state: Arc<ServerState>,
    clock: ManualClock,
    origin: Option<String>,
    down: bool,
    sleeps: Arc<Mutex<Vec<u64>>>,
}

impl InProcess {
    /// A transport to a fresh scripted server allowing `allowed_origins` on `cors` paths.
    pub fn new(allowed_origins: Vec<String>) -> Self {
        InProcess {
            state: Arc::new(ServerState::new(allowed_origins)),
            clock: ManualClock::new(1_800_000_000_000),
            origin: None,
            down: false,
            sleeps: Arc::new(Mutex::new(vec![])),
        }
    }
    /// Sends requests as a page of `origin` would (CORS emulated).
    pub fn with_origin(mut self, origin: &str) -> Self {
        self.origin = Some(origin.to_string());
        self
    }
    /// Every request fails as if nothing listened.
    pub fn down(mut self) -> Self {
        self.down = true;
        self
    }
    /// The server state (recorded requests).
    pub fn state(&self) -> &ServerState {
        &self.state
    }
    /// The fake clock.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }
    /// Every sleep requested so far, in ms.
    pub fn sleeps(&self) -> Vec<u64> {
        self.sleeps.lock().map(|s| s.clone()).unwrap_or_default()
    }
    /// The recorded requests whose path contains `needle`.
    pub fn requests_to(&self, needle: &str) -> Vec<Value> {
        self.state
            .requests()
            .into_iter()
            .filter(|r| {
                r["path"].as_str().is_some_and(|p| p.contains(needle)) && r["method"] != "OPTIONS"
            })
            .collect()
    }
}

/// The path and query of `url`.
fn path_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.find('/') {
        Some(i) => rest[i..].to_string(),
        None => "/".into(),
    }
}

impl Transport for InProcess {
    type Body = TimedBody;

    async fn send(
        &self,
        request: &HttpRequest,
        cancel: &Cancel,
        timeouts: Timeouts,
    ) -> Result<HttpResponse<TimedBody>> {
        cancel.check()?;
        if self.down {
            return Err(Error::LlmUnreachable {
                url: request.url.clone(),
                detail: "connection refused".into(),
            });
        }
        let path = path_of(&request.url);
        let mut headers: Vec<(String, String)> = request
            .headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect();
        if let Some(origin) = &self.origin {
            headers.push(("origin".into(), origin.clone()));
            let refused = |resp: &ServerResponse| {
                header(&resp.headers, "access-control-allow-origin") != Some(origin.as_str())
            };
            // Anything but a simple GET is preflighted.
            if request.method == Method::Post {
                let names: Vec<String> = request
                    .headers
                    .iter()
                    .map(|(k, _)| k.to_ascii_lowercase())
                    .collect();
                let pre = handle(
                    &self.state,
                    &ServerRequest {
                        method: "OPTIONS".into(),
                        path: path.clone(),
                        headers: vec![
                            ("origin".into(), origin.clone()),
                            ("access-control-request-method".into(), "POST".into()),
                            ("access-control-request-headers".into(), names.join(",")),
                        ],
                        body: vec![],
                    },
                );
                if refused(&pre) {
                    return Err(self.cors_failure(&request.url));
                }
            }
            let resp = handle(
                &self.state,
                &ServerRequest {
                    method: request.method.as_str().into(),
                    path,
                    headers,
                    body: request.body.clone().unwrap_or_default().into_bytes(),
                },
            );
            if refused(&resp) {
                return Err(self.cors_failure(&request.url));
            }
            return self.finish(resp, &request.url, timeouts, cancel);
        }
        let resp = handle(
            &self.state,
            &ServerRequest {
                method: request.method.as_str().into(),
                path,
                headers,
                body: request.body.clone().unwrap_or_default().into_bytes(),
            },
        );
        self.finish(resp, &request.url, timeouts, cancel)
    }

    async fn sleep(&self, ms: u64, cancel: &Cancel) -> Result<()> {
        cancel.check()?;
        if let Ok(mut s) = self.sleeps.lock() {
            s.push(ms);
        }
        self.clock.advance(ms as Millis);
        Ok(())
    }

    fn now_ms(&self) -> Millis {
        self.clock.now_ms()
    }

    fn page_origin(&self) -> Option<String> {
        self.origin.clone()
    }
}

impl InProcess {
    fn cors_failure(&self, url: &str) -> Error {
        // The reachability probe (`GET /`, no-cors) always succeeds in-process.
        Error::LlmOriginNotAllowed {
            origin: self.origin.clone().unwrap_or_default(),
            url: url.to_string(),
            hint: String::new(),
        }
    }

    fn finish(
        &self,
        resp: ServerResponse,
        url: &str,
        timeouts: Timeouts,
        cancel: &Cancel,
    ) -> Result<HttpResponse<TimedBody>> {
        let timeout_ms = timeouts.start_ms;
        if resp.delay_ms > timeout_ms {
            self.clock.advance(timeout_ms as Millis);
            return Err(Error::LlmTimeout {
                url: url.to_string(),
                ms: timeout_ms,
            });
        }
        self.clock.advance(resp.delay_ms as Millis);
        Ok(HttpResponse {
            status: resp.status,
            headers: resp.headers,
            body: TimedBody {
                chunks: resp.chunks.into(),
                sent: 0,
                first_delay_ms: resp.first_chunk_delay_ms,
                chunk_delay_ms: resp.chunk_delay_ms,
                stall_after: resp.stall_after,
                start_left_ms: timeout_ms - resp.delay_ms,
                idle_ms: timeouts.idle_ms,
                clock: self.clock.clone(),
                cancel: cancel.clone(),
                url: url.to_string(),
            },
        })
    }
}

/// The body [`InProcess`] hands out: its chunks on the fake clock, each after its delay (the
/// first after `first-byte=`, later ones after `chunk-delay=`, none after `stall-after=`), with
/// the timeouts a browser `fetch` would apply: a wait longer than what is left of the start
/// timeout (first chunk) or than the idle timeout (later ones) advances the clock by that much
/// and fails with `LlmTimeout`, as the fetch transport does after aborting.
#[derive(Debug)]
pub struct TimedBody {
    chunks: std::collections::VecDeque<Vec<u8>>,
    sent: usize,
    first_delay_ms: u64,
    chunk_delay_ms: u64,
    stall_after: Option<usize>,
    start_left_ms: u64,
    idle_ms: u64,
    clock: ManualClock,
    cancel: Cancel,
    url: String,
}

impl ResponseBody for TimedBody {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>> {
        self.cancel.check()?;
        if self.chunks.is_empty() {
            return Ok(None);
        }
        let (delay, limit) = if self.sent == 0 {
            (self.first_delay_ms, self.start_left_ms)
        } else {
            (self.chunk_delay_ms, self.idle_ms)
        };
        let delay = if self.stall_after == Some(self.sent) {
            u64::MAX
        } else {
            delay
        };
        if delay > limit {
            self.clock.advance(limit as Millis);
            self.chunks.clear();
            return Err(Error::LlmTimeout {
                url: self.url.clone(),
                ms: limit,
            });
        }
        self.clock.advance(delay as Millis);
        self.sent += 1;
        Ok(self.chunks.pop_front())
    }
}
