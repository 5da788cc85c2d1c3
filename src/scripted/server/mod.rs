//! The scripted LLM endpoint as a pure request → response function speaking the three wire
//! protocols, plus [`InProcess`], a [`Transport`](crate::llm::transport::Transport) that calls it
//! directly (native tests, fake clock). `tests/support/scripted_llm_server.rs` serves the same
//! function over TCP for browser tests.
//!
//! # Protocol
//!
//! Routes (matched on the path's end, so any prefix such as `/api/paas/v4` works):
//! `GET /` (reachability), `GET …/models`, `GET /api/tags`, `POST …/chat/completions` (OpenAI),
//! `POST /api/chat` (Ollama, NDJSON stream by default), `POST …/messages` (Anthropic),
//! `POST …/embeddings` (OpenAI; `data` deliberately in reverse order), `POST /api/embed`,
//! `POST /api/embeddings` (legacy: `prompt` → vector, `input` → `{"embedding":[]}` as real
//! Ollama does). Control: `GET /__requests` (recorded requests as JSON), `POST /__reset`.
//!
//! Faults: a path prefix `/fault/<spec>/…`, where `<spec>` is a comma-separated list of
//! `name` or `name=value` (values percent-decoded). Counters (`ratelimit=N`, `malformed=N`) are
//! kept per spec string: put an `id=<unique>` in it to get a fresh counter.
//!
//! | fault | effect |
//! |---|---|
//! | `delay=MS` | wait before the response headers |
//! | `first-byte=MS` | wait after the headers before the first body chunk (a model reading a long prompt) |
//! | `stall-after=N` | send N body chunks, then nothing more, the connection left open |
//! | `chunk=N`, `chunk-delay=MS` | stream chunk size in bytes (default 5: splits frames and UTF-8 characters) and the pause between chunks |
//! | `ratelimit=N`, `retry-after=S` | the first N requests get 429 with `Retry-After: S` (default 1) |
//! | `overloaded=N` | the first N requests get 529 (Anthropic) / 503 (others) |
//! | `status=CODE`, `message=TEXT` | answer CODE with a provider-shaped error body |
//! | `html` | 200 with an HTML page |
//! | `bad-body` | 200 with a body that is not JSON |
//! | `truncate` | half the reply, finish `length` / `max_tokens` / done_reason `length` |
//! | `malformed[=N]` | the (first N) replies are broken JSON after prose |
//! | `echo-outline` | integrate replies in append mode start with the page outline they were shown |
//! | `paraphrase-headings` | … start with that outline reworded, their new text under its first heading |
//! | `repeat-blocks` | integrate replies give every block of their body twice |
//! | `nan-vector=WORD`, `zero-vector=WORD` | embeddings: each input containing WORD gets a vector of bare `NaN` tokens (as Python servers write) / of zeros |
//! | `credulous` | extract replies propose contradictions against every numeric existing claim the source shares a word with, made-up quotes included |
//! | `rewrite` | integrate replies replace the whole page with one sentence (drops human paragraphs: Decision 5) |
//! | `text-only` | a request carrying a picture gets 400, as from a model that reads text only |
//! | `empty` | empty content |
//! | `reasoning-only` | empty content, the answer in `reasoning_content` / `thinking` |
//! | `think` | the answer after a `<think>` block |
//! | `no-json-object` | 400 (LM Studio's message) for `response_format.type = json_object` |
//! | `no-json-schema` | 422 (llama-cpp-python's validation error) for `json_schema` |
//! | `no-response-format` | 400 for any `response_format` |
//! | `no-usage` | no usage in responses |
//! | `ctx=N` | prompts (or embedding inputs) over N estimated tokens get the provider's context error |
//! | `reasoning-model` | 400 (OpenAI's words) for `max_tokens` and for a `temperature` other than 1 (F38) |
//! | `local-caps` | `max_completion_tokens` ignored, `max_tokens` honoured, 16 tokens and `length` without a cap it reads (F38c) |
//! | `no-caps` | 400 (OpenAI strict mode's "'maxItems' is not permitted") for a schema with `maxItems` or `maxLength` |
//! | `fill` | structured replies repeat the items of their first non-empty array up to its `maxItems`, or without one until past the output limit (a small model under a grammar) |
//! | `cut-prompt=N` | prompts over N estimated tokens lose their front until N are left (as Ollama cuts them), are answered anyway, and the usage counts what was kept |
//! | `prompt-share=P` | the usage counts P % of the prompt's estimate (a tokenizer with a large CJK vocabulary) |
//! | `auth=KEY` | require `Authorization: Bearer KEY` / `x-api-key: KEY`, else 401 |
//! | `cors` | refuse every origin not on the server's allow-list: 403, empty body, no `Access-Control-Allow-Origin`, for preflights too |
//!
//! Anthropic is emulated strictly: a browser request (with `Origin`) without
//! `anthropic-dangerous-direct-browser-access` is refused like a CORS failure; `max_tokens` is
//! required; `role: "system"` in `messages` is a 400.

//!
//! The files: `faults` (the fault spec), `routes` (endpoints and error bodies), `request`
//! (provider bodies read back), `chat` and `embeddings` (the two kinds of answer), `wire` (reply
//! shapes per provider), `in_process` ([`InProcess`]).

mod chat;
mod embeddings;
mod faults;
mod in_process;
mod request;
mod routes;
mod wire;

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::llm::transport::header;

use chat::chat;
use embeddings::embeddings;
pub use faults::{percent_decode, percent_encode};
use faults::{split_faults, Faults};
pub use in_process::{InProcess, TimedBody};
pub use request::instruction_schema;
use routes::{error_body, is_anthropic, route, Route};

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRequest {
    /// `GET`, `POST`, `OPTIONS`…
    pub method: String,
    /// Path and query (`/v1/chat/completions`).
    pub path: String,
    /// Headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

/// A response to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerResponse {
    /// HTTP status.
    pub status: u16,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// Body chunks, to be written separately (streams) or together.
    pub chunks: Vec<Vec<u8>>,
    /// True for streamed bodies (no Content-Length; written chunk by chunk).
    pub streamed: bool,
    /// Wait before the headers, ms.
    pub delay_ms: u64,
    /// Wait between chunks, ms.
    pub chunk_delay_ms: u64,
    /// Wait after the headers before the first chunk, ms (a model reading a long prompt).
    pub first_chunk_delay_ms: u64,
    /// Send only this many chunks, then nothing, the connection left open (a stalled stream).
    pub stall_after: Option<usize>,
}

impl ServerResponse {
    fn new(status: u16) -> Self {
        ServerResponse {
            status,
            headers: vec![],
            chunks: vec![],
            streamed: false,
            delay_ms: 0,
            chunk_delay_ms: 0,
            first_chunk_delay_ms: 0,
            stall_after: None,
        }
    }
    fn json(status: u16, v: &Value) -> Self {
        let mut r = ServerResponse::new(status);
        r.headers
            .push(("content-type".into(), "application/json".into()));
        r.chunks.push(v.to_string().into_bytes());
        r
    }
    fn text(status: u16, content_type: &str, body: &str) -> Self {
        let mut r = ServerResponse::new(status);
        r.headers.push(("content-type".into(), content_type.into()));
        r.chunks.push(body.as_bytes().to_vec());
        r
    }
    /// The body, all chunks joined.
    pub fn body(&self) -> Vec<u8> {
        self.chunks.concat()
    }
}

/// Shared server state: the origin allow-list of the `cors` fault, fault counters, and the
/// recorded requests. Thread-safe (the TCP server answers on several threads).
#[derive(Debug, Default)]
pub struct ServerState {
    allowed_origins: Vec<String>,
    inner: Mutex<StateInner>,
}

#[derive(Debug, Default)]
struct StateInner {
    counters: HashMap<String, u32>,
    requests: Vec<Value>,
}

impl ServerState {
    /// A server allowing `allowed_origins` on `cors` fault paths (every origin elsewhere).
    pub fn new(allowed_origins: Vec<String>) -> Self {
        ServerState {
            allowed_origins,
            inner: Mutex::new(StateInner::default()),
        }
    }

    /// The recorded requests (what `GET /__requests` returns), oldest first.
    pub fn requests(&self) -> Vec<Value> {
        self.lock().requests.clone()
    }

    /// Forgets recorded requests and fault counters.
    pub fn reset(&self) {
        let mut s = self.lock();
        s.requests.clear();
        s.counters.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StateInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self, key: &str) -> u32 {
        let mut s = self.lock();
        let n = s.counters.entry(key.to_string()).or_insert(0);
        *n += 1;
        *n
    }
}

/// Handles one request (see the module docs for the protocol).
pub fn handle(state: &ServerState, req: &ServerRequest) -> ServerResponse {
    let get = |name: &str| header(&req.headers, name);
    let origin = get("origin").map(str::to_string);
    let (faults, path) = split_faults(&req.path);
    let control = path.starts_with("/__");
    if !control {
        let body = serde_json::from_slice::<Value>(&req.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&req.body).into_owned()));
        let headers: serde_json::Map<String, Value> = req
            .headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), Value::String(v.clone())))
            .collect();
        state.lock().requests.push(json!({
            "method": req.method, "path": req.path, "headers": headers, "body": body,
        }));
    }
    let r = route(&path);

    // CORS: is this origin allowed?
    let origin_allowed = match &origin {
        None => true,
        Some(_) if control => true,
        Some(o) if faults.has("cors") => state.allowed_origins.iter().any(|a| a == o),
        Some(_) if is_anthropic(r) => {
            // Anthropic answers browsers only when they opt in with the header.
            let named = get("access-control-request-headers")
                .unwrap_or("")
                .to_ascii_lowercase()
                .contains("anthropic-dangerous-direct-browser-access");
            named || get("anthropic-dangerous-direct-browser-access") == Some("true")
        }
        Some(_) => true,
    };
    let mut resp = if !origin_allowed {
        // Ollama's behaviour (F06): 403, empty body, no CORS headers — preflight included.
        let r = ServerResponse::new(403);
        return r;
    } else if req.method == "OPTIONS" {
        let mut r = ServerResponse::new(204);
        r.headers.push((
            "access-control-allow-methods".into(),
            "GET, POST, OPTIONS".into(),
        ));
        if let Some(h) = get("access-control-request-headers") {
            r.headers
                .push(("access-control-allow-headers".into(), h.to_string()));
        }
        r.headers
            .push(("access-control-max-age".into(), "0".into()));
        r
    } else if control {
        match (req.method.as_str(), path.as_str()) {
            ("GET", "/__requests") => ServerResponse::json(200, &Value::Array(state.requests())),
            ("POST", "/__reset") => {
                state.reset();
                ServerResponse::json(200, &json!({"ok": true}))
            }
            _ => ServerResponse::json(404, &json!({"error": "unknown control endpoint"})),
        }
    } else {
        respond(state, req, &faults, &path, r)
    };
    if let Some(d) = faults.num("delay") {
        resp.delay_ms = d;
    }
    if let Some(d) = faults.num("first-byte") {
        resp.first_chunk_delay_ms = d;
    }
    if let Some(n) = faults.num("stall-after") {
        resp.stall_after = Some(n as usize);
    }
    // The wasm-bindgen test page is cross-origin isolated (COEP: require-corp): without this, a
    // `no-cors` reachability probe is blocked by the page, not by the server.
    resp.headers
        .push(("cross-origin-resource-policy".into(), "cross-origin".into()));
    if let Some(o) = origin {
        resp.headers.push(("access-control-allow-origin".into(), o));
        resp.headers.push(("vary".into(), "Origin".into()));
        resp.headers.push((
            "access-control-expose-headers".into(),
            "retry-after, retry-after-ms, content-type".into(),
        ));
    }
    resp
}

fn respond(
    state: &ServerState,
    req: &ServerRequest,
    faults: &Faults,
    path: &str,
    r: Route,
) -> ServerResponse {
    let get = |name: &str| header(&req.headers, name);
    if r == Route::Root {
        return ServerResponse::text(200, "text/plain; charset=utf-8", "scripted LLM server\n");
    }
    if let Some(key) = faults.get("auth") {
        let bearer = get("authorization").and_then(|a| a.strip_prefix("Bearer "));
        let given = if is_anthropic(r) {
            get("x-api-key")
        } else {
            bearer
        };
        if given != Some(key) {
            let shown: String = given
                .map(|g| {
                    format!(
                        "{}****{}",
                        g.chars().take(3).collect::<String>(),
                        g.chars()
                            .rev()
                            .take(4)
                            .collect::<Vec<_>>()
                            .into_iter()
                            .rev()
                            .collect::<String>()
                    )
                })
                .unwrap_or_else(|| "(none)".into());
            return ServerResponse::json(
                401,
                &error_body(r, 401, &format!("Incorrect API key provided: {shown}.")),
            );
        }
    }
    if let Some(n) = faults.num("ratelimit") {
        if u64::from(state.bump(&format!("{}#ratelimit", faults.spec))) <= n {
            let mut resp =
                ServerResponse::json(429, &error_body(r, 429, "Rate limit reached, slow down."));
            let after = faults.get("retry-after").unwrap_or("1");
            resp.headers.push(("retry-after".into(), after.to_string()));
            return resp;
        }
    }
    if let Some(n) = faults.num("overloaded") {
        if u64::from(state.bump(&format!("{}#overloaded", faults.spec))) <= n {
            let status = if is_anthropic(r) { 529 } else { 503 };
            return ServerResponse::json(status, &error_body(r, status, "Overloaded"));
        }
    }
    if let Some(code) = faults.num("status") {
        let code = code as u16;
        let msg = faults.get("message").unwrap_or("scripted failure");
        return ServerResponse::json(code, &error_body(r, code, msg));
    }
    if faults.has("html") {
        return ServerResponse::text(
            200,
            "text/html; charset=utf-8",
            "<!DOCTYPE html>\n<html><head><title>Open WebUI</title></head><body><div id=\"app\">Sign in</div></body></html>\n",
        );
    }
    if faults.has("bad-body") {
        return ServerResponse::text(200, "application/json", "{\"choices\": [{\"message\": ");
    }
    let body: Value = match r {
        Route::Models | Route::Tags => Value::Null,
        _ => match serde_json::from_slice(&req.body) {
            Ok(v) => v,
            Err(e) => {
                return ServerResponse::json(
                    400,
                    &error_body(r, 400, &format!("invalid JSON body: {e}")),
                )
            }
        },
    };
    match r {
        Route::Models => ServerResponse::json(
            200,
            &json!({"object": "list", "data": MODELS.iter().map(|m| json!({"id": m, "object": "model", "type": "model", "owned_by": "scripted"})).collect::<Vec<_>>(), "has_more": false}),
        ),
        Route::Tags => ServerResponse::json(
            200,
            &json!({"models": MODELS.iter().map(|m| json!({"name": format!("{m}:latest"), "model": format!("{m}:latest"), "size": 0})).collect::<Vec<_>>()}),
        ),
        Route::OpenAiChat | Route::OllamaChat | Route::AnthropicMessages => {
            chat(state, req, faults, r, &body)
        }
        Route::OpenAiEmbeddings | Route::OllamaEmbed | Route::OllamaLegacyEmbeddings => {
            embeddings(faults, r, &body)
        }
        Route::Root | Route::Unknown => ServerResponse::json(
            404,
            &json!({"error": {"message": format!("no route for {} {path}", req.method)}}),
        ),
    }
}

/// Model names the model list reports.
pub const MODELS: &[&str] = &[
    "scripted-chat",
    "scripted-embed-32",
    "scripted-embed-768",
    "scripted-embed-1024",
];
