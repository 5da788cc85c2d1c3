//! The scripted LLM endpoint as a pure request → response function speaking the three wire
//! protocols, plus [`InProcess`], a [`Transport`] that calls it directly (native tests, fake
//! clock). `tests/support/scripted_llm_server.rs` serves the same function over TCP for browser tests.
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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::clock::{Clock, ManualClock, Millis};
use crate::compile::scripted::Echo;
use crate::error::{Error, Result};
use crate::llm::provider::{self, StructuredMode};
use crate::llm::transport::{
    header, HttpRequest, HttpResponse, Method, ResponseBody, Timeouts, Transport,
};
use crate::llm::{Cancel, ChatRequest, JsonSchema, Message, Purpose, Role};
use crate::scripted::{credulous, echoed, fit_to_max_tokens, malformed, reply, scripted_dimension};
use crate::text::TokenEstimator;

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

/// Percent-decodes `s` (`%XX`; `+` is kept).
pub fn percent_decode(s: &str) -> String {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes everything but unreserved characters (for building fault paths).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Parsed fault spec.
#[derive(Debug, Default, Clone)]
struct Faults {
    spec: String,
    items: Vec<(String, Option<String>)>,
}

impl Faults {
    fn has(&self, name: &str) -> bool {
        self.items.iter().any(|(n, _)| n == name)
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.items
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_deref())
    }
    fn num(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(|v| v.parse().ok())
    }
}

fn split_faults(path: &str) -> (Faults, String) {
    let path = path.split('?').next().unwrap_or("");
    if let Some(rest) = path.strip_prefix("/fault/") {
        let (spec, rest) = rest.split_once('/').unwrap_or((rest, ""));
        let items = spec
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|item| match item.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(percent_decode(v))),
                None => (item.to_string(), None),
            })
            .collect();
        (
            Faults {
                spec: spec.to_string(),
                items,
            },
            format!("/{rest}"),
        )
    } else {
        (Faults::default(), path.to_string())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Root,
    Models,
    Tags,
    OpenAiChat,
    OllamaChat,
    AnthropicMessages,
    OpenAiEmbeddings,
    OllamaEmbed,
    OllamaLegacyEmbeddings,
    Unknown,
}

fn route(path: &str) -> Route {
    let p = path.trim_end_matches('/');
    if p.is_empty() {
        Route::Root
    } else if p.ends_with("/api/tags") {
        Route::Tags
    } else if p.ends_with("/api/chat") {
        Route::OllamaChat
    } else if p.ends_with("/api/embed") {
        Route::OllamaEmbed
    } else if p.ends_with("/api/embeddings") {
        Route::OllamaLegacyEmbeddings
    } else if p.ends_with("/chat/completions") {
        Route::OpenAiChat
    } else if p.ends_with("/messages") {
        Route::AnthropicMessages
    } else if p.ends_with("/embeddings") {
        Route::OpenAiEmbeddings
    } else if p.ends_with("/models") {
        Route::Models
    } else {
        Route::Unknown
    }
}

fn is_anthropic(r: Route) -> bool {
    r == Route::AnthropicMessages
}

fn is_ollama(r: Route) -> bool {
    matches!(
        r,
        Route::OllamaChat | Route::OllamaEmbed | Route::OllamaLegacyEmbeddings | Route::Tags
    )
}

/// A provider-shaped error body.
fn error_body(r: Route, status: u16, message: &str) -> Value {
    if is_anthropic(r) {
        let kind = match status {
            401 => "authentication_error",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            400 | 422 => "invalid_request_error",
            404 => "not_found_error",
            _ => "api_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": message}})
    } else if is_ollama(r) {
        json!({"error": message})
    } else {
        json!({"error": {"message": message, "type": "invalid_request_error", "code": Value::Null}})
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

fn content_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Reads the task name and schema from the structured-output instruction in a system prompt
/// (see [`provider::structured_instruction`]).
pub fn instruction_schema(system: &str) -> Option<JsonSchema> {
    let marker = "for the task \"";
    let start = system.find(marker)? + marker.len();
    let end = start + system[start..].find('"')?;
    let name = system[start..end].to_string();
    let schema = system[end..]
        .find(":\n")
        .and_then(|i| {
            let text = &system[end + i + 2..];
            serde_json::Deserializer::from_str(text)
                .into_iter::<Value>()
                .next()
                .and_then(|r| r.ok())
        })
        .unwrap_or_else(|| json!({}));
    Some(JsonSchema { name, schema })
}

/// The structured-output mode of a request as sent, if any.
fn requested_mode(r: Route, body: &Value) -> Option<StructuredMode> {
    match r {
        Route::OpenAiChat => match body
            .pointer("/response_format/type")
            .and_then(Value::as_str)
        {
            Some("json_schema") => Some(StructuredMode::JsonSchema),
            Some("json_object") => Some(StructuredMode::JsonObject),
            _ => None,
        },
        Route::OllamaChat => match body.get("format") {
            Some(Value::Object(_)) => Some(StructuredMode::JsonSchema),
            Some(Value::String(s)) if s == "json" => Some(StructuredMode::JsonObject),
            _ => None,
        },
        _ => None,
    }
}

/// Parses a provider request body back into a [`ChatRequest`] (and whether it asked to stream).
fn to_chat_request(r: Route, body: &Value) -> std::result::Result<(ChatRequest, bool), String> {
    let mut system = String::new();
    let mut messages = Vec::new();
    if r == Route::AnthropicMessages {
        system = content_of(body.get("system").unwrap_or(&Value::Null));
    }
    let list = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("messages: Field required")?;
    for m in list {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let content = content_of(m.get("content").unwrap_or(&Value::Null));
        match role {
            "system" | "developer" if r != Route::AnthropicMessages => {
                if !system.is_empty() {
                    system.push('\n');
                }
                system.push_str(&content);
            }
            "user" => messages.push(Message {
                role: Role::User,
                content,
            }),
            "assistant" => messages.push(Message {
                role: Role::Assistant,
                content,
            }),
            other => {
                return Err(format!(
                    "messages: Unexpected role \"{other}\". Use a top-level `system` parameter for system prompts."
                ))
            }
        }
    }
    let json = match r {
        Route::OpenAiChat => match body
            .pointer("/response_format/type")
            .and_then(Value::as_str)
        {
            Some("json_schema") => {
                body.pointer("/response_format/json_schema")
                    .map(|j| JsonSchema {
                        name: j
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        schema: j.get("schema").cloned().unwrap_or(json!({})),
                    })
            }
            Some("json_object") => instruction_schema(&system).map(|mut j| {
                if let Some(s) = body.pointer("/response_format/schema") {
                    j.schema = s.clone();
                }
                j
            }),
            _ => instruction_schema(&system),
        },
        Route::OllamaChat => match body.get("format") {
            Some(s @ Value::Object(_)) => instruction_schema(&system).map(|mut j| {
                j.schema = s.clone();
                j
            }),
            _ => instruction_schema(&system),
        },
        _ => instruction_schema(&system),
    };
    let max_tokens = body
        .get("max_tokens")
        .or_else(|| body.get("max_completion_tokens"))
        .or_else(|| body.pointer("/options/num_predict"))
        .and_then(Value::as_u64)
        .map(|n| n.min(u64::from(u32::MAX)) as u32);
    let stream = match r {
        // Ollama's native API streams unless told not to.
        Route::OllamaChat => body.get("stream").and_then(Value::as_bool) != Some(false),
        _ => body.get("stream").and_then(Value::as_bool) == Some(true),
    };
    Ok((
        ChatRequest {
            purpose: Purpose::Query,
            system,
            messages,
            json,
            max_tokens,
            temperature: body
                .get("temperature")
                .and_then(Value::as_f64)
                .map(|t| t as f32),
        },
        stream,
    ))
}

fn chat(
    state: &ServerState,
    req: &ServerRequest,
    faults: &Faults,
    r: Route,
    body: &Value,
) -> ServerResponse {
    let get = |name: &str| header(&req.headers, name);
    let bad = |status: u16, msg: &str| ServerResponse::json(status, &error_body(r, status, msg));
    if r == Route::AnthropicMessages {
        if get("x-api-key").is_none() {
            return bad(401, "x-api-key header is required");
        }
        if get("anthropic-version").is_none() {
            return bad(400, "anthropic-version: header is required");
        }
        if body.get("max_tokens").and_then(Value::as_u64).is_none() {
            return bad(400, "max_tokens: Field required");
        }
    }
    let mode = requested_mode(r, body);
    match mode {
        Some(StructuredMode::JsonObject) if faults.has("no-json-object") => {
            return ServerResponse::json(
                400,
                &json!({"error": "'response_format.type' must be 'json_schema' or 'text'"}),
            )
        }
        Some(StructuredMode::JsonSchema) if faults.has("no-json-schema") => {
            return ServerResponse::json(
                422,
                &json!({"detail": [{"type": "literal_error", "loc": ["body", "response_format", "type"], "msg": "Input should be 'text' or 'json_object'", "input": "json_schema"}]}),
            )
        }
        Some(_) if faults.has("no-response-format") => {
            return bad(400, "response_format is not supported by this server")
        }
        _ => {}
    }
    if faults.has("reasoning-model") && r == Route::OpenAiChat {
        // OpenAI's o-series / GPT-5 (F38a, b): no `max_tokens`, only the default temperature.
        if body.get("max_tokens").is_some() {
            return ServerResponse::json(
                400,
                &json!({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}),
            );
        }
        if let Some(t) = body
            .get("temperature")
            .and_then(Value::as_f64)
            .filter(|t| *t != 1.0)
        {
            return ServerResponse::json(
                400,
                &json!({"error": {"message": format!("Unsupported value: 'temperature' does not support {t} with this model. Only the default (1) value is supported."), "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}),
            );
        }
    }
    if faults.has("no-caps") {
        let sent = body
            .pointer("/response_format/json_schema/schema")
            .or_else(|| body.pointer("/response_format/schema"))
            .or_else(|| body.get("format").filter(|f| f.is_object()));
        if let Some(keyword) = sent.and_then(cap_keyword) {
            // OpenAI strict mode's wording.
            return bad(
                400,
                &format!("Invalid schema for response_format: In context=('properties'), '{keyword}' is not permitted."),
            );
        }
    }
    let (request, stream) = match to_chat_request(r, body) {
        Ok(x) => x,
        Err(e) => return bad(400, &e),
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted-chat")
        .to_string();
    let est = TokenEstimator::default();
    let prompt_tokens = provider::estimate_input(&request, &est);
    if let Some(ctx) = faults.num("ctx") {
        if prompt_tokens > ctx {
            let msg = if is_ollama(r) {
                "the input length exceeds the context length".to_string()
            } else if is_anthropic(r) {
                format!("prompt is too long: {prompt_tokens} tokens > {ctx} maximum")
            } else {
                format!("This model's maximum context length is {ctx} tokens. However, your messages resulted in {prompt_tokens} tokens.")
            };
            return bad(400, &msg);
        }
    }
    // `cut-prompt=N`: the server's window is N tokens; a longer prompt loses its front (as
    // Ollama cuts it) and is answered anyway, its usage counting what was kept.
    let (request, prompt_tokens) = match faults.num("cut-prompt") {
        Some(window) if prompt_tokens > window => {
            let cut = cut_from_front(request, window, &est);
            let kept = provider::estimate_input(&cut, &est);
            (cut, kept)
        }
        _ => (request, prompt_tokens),
    };
    // `prompt-share=P`: the server's tokenizer counts P % of the estimate (CJK vocabularies).
    let prompt_tokens = match faults.num("prompt-share") {
        Some(p) => (prompt_tokens * p / 100).max(1),
        None => prompt_tokens,
    };
    let mut full = reply(&request).text;
    for (name, echo) in [
        ("echo-outline", Echo::Outline),
        ("paraphrase-headings", Echo::Paraphrase),
        ("repeat-blocks", Echo::Repeat),
    ] {
        if faults.has(name) {
            full = echoed(&request, &full, echo);
        }
    }
    if faults.has("credulous") {
        full = credulous(&request, &full);
    }
    // `local-caps` (F38c): `max_completion_tokens` ignored, `max_tokens` honoured, 16 tokens
    // when no cap it reads is sent (llama-cpp-python's default).
    let max_tokens = if faults.has("local-caps") {
        body.get("max_tokens")
            .and_then(Value::as_u64)
            .map_or(16, |n| n.min(u64::from(u32::MAX)) as u32)
    } else {
        request.max_tokens.unwrap_or(4096)
    };
    if faults.has("fill") {
        if let Some(j) = &request.json {
            full = fill_first_array(&full, &j.schema, max_tokens, &est);
        }
    }
    let (mut content, mut cut) = fit_to_max_tokens(&full, max_tokens, &est);
    let mut reasoning = String::new();
    if faults.has("truncate") {
        content = full.chars().take(full.chars().count() / 2).collect();
        cut = true;
    }
    if faults.has("malformed") {
        let limit = faults.num("malformed").unwrap_or(u64::MAX);
        if u64::from(state.bump(&format!("{}#malformed", faults.spec))) <= limit {
            content = malformed(&full);
        }
    }
    if faults.has("rewrite") && request.json.as_ref().is_some_and(|j| j.name == "integrate") {
        content = json!({"body": "Rewritten by the model.", "summary": "Rewritten."}).to_string();
    }
    if faults.has("empty") {
        content.clear();
    }
    if faults.has("reasoning-only") {
        reasoning = std::mem::take(&mut content);
    }
    if faults.has("think") {
        content =
            format!("<think>\nThe user wants {{\"draft\": true}}? No.\n</think>\n\n{content}");
    }
    let finish = if cut { Finish::Length } else { Finish::Stop };
    let usage = (!faults.has("no-usage")).then(|| {
        (
            prompt_tokens,
            (est.estimate(&content) + est.estimate(&reasoning)).max(1),
        )
    });
    let chunk = faults.num("chunk").unwrap_or(5).max(1) as usize;
    let chunk_delay = faults.num("chunk-delay").unwrap_or(0);
    let include_usage = body.pointer("/stream_options/include_usage") == Some(&json!(true));
    let reply = Reply {
        model,
        content,
        reasoning,
        finish,
        usage,
    };
    if stream {
        let bytes = match r {
            Route::OllamaChat => reply.ollama_stream(),
            Route::AnthropicMessages => reply.anthropic_stream(),
            _ => reply.openai_stream(include_usage),
        };
        let content_type = if r == Route::OllamaChat {
            "application/x-ndjson"
        } else {
            "text/event-stream"
        };
        let mut resp = ServerResponse::new(200);
        resp.headers
            .push(("content-type".into(), content_type.into()));
        resp.headers
            .push(("cache-control".into(), "no-cache".into()));
        resp.chunks = bytes.chunks(chunk).map(<[u8]>::to_vec).collect();
        resp.streamed = true;
        resp.chunk_delay_ms = chunk_delay;
        resp
    } else {
        let v = match r {
            Route::OllamaChat => reply.ollama(),
            Route::AnthropicMessages => reply.anthropic(),
            _ => reply.openai(),
        };
        ServerResponse::json(200, &v)
    }
}

/// The first size-cap keyword (`maxItems`, `maxLength`) in a schema, if any.
fn cap_keyword(schema: &Value) -> Option<&'static str> {
    match schema {
        Value::Object(m) => ["maxItems", "maxLength"]
            .into_iter()
            .find(|k| m.get(*k).is_some_and(Value::is_u64))
            .or_else(|| m.values().find_map(cap_keyword)),
        Value::Array(a) => a.iter().find_map(cap_keyword),
        _ => None,
    }
}

/// The `fill` fault, a small model under a grammar: the reply's first non-empty top-level array
/// is repeated item by item up to the schema's `maxItems` for it when there is one, else until
/// the reply is past `max_tokens` (and so is cut there).
fn fill_first_array(full: &str, schema: &Value, max_tokens: u32, est: &TokenEstimator) -> String {
    let Ok(Value::Object(mut reply)) = serde_json::from_str::<Value>(full) else {
        return full.to_string();
    };
    let Some((name, items)) = reply.iter().find_map(|(k, v)| {
        v.as_array()
            .filter(|a| !a.is_empty())
            .map(|a| (k.clone(), a.clone()))
    }) else {
        return full.to_string();
    };
    let cap = schema
        .pointer(&format!("/properties/{name}/maxItems"))
        .and_then(Value::as_u64);
    let mut filled = items.clone();
    let mut n = 0;
    loop {
        let done = match cap {
            Some(cap) => filled.len() as u64 >= cap,
            None => {
                reply.insert(name.clone(), Value::Array(filled.clone()));
                est.estimate(&Value::Object(reply.clone()).to_string()) > u64::from(max_tokens)
            }
        };
        if done {
            break;
        }
        filled.push(items[n % items.len()].clone());
        n += 1;
    }
    reply.insert(name, Value::Array(filled));
    Value::Object(reply).to_string()
}

/// `request` with its front cut until its estimate is at most `window` tokens: the system prompt
/// first, then the messages in order (what a server that keeps the end of an overlong prompt
/// keeps). The requested schema stays (it is not part of the prompt).
fn cut_from_front(mut request: ChatRequest, window: u64, est: &TokenEstimator) -> ChatRequest {
    let over = |r: &ChatRequest| provider::estimate_input(r, est) > window;
    let drop_front = |text: &mut String, r_over: &dyn Fn(&str) -> bool| {
        // Halve the kept length until it fits, then grow back by quarters: O(log n) estimates.
        let chars: Vec<char> = text.chars().collect();
        let (mut lo, mut hi) = (0usize, chars.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let rest: String = chars[mid..].iter().collect();
            if r_over(&rest) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        *text = chars[lo..].iter().collect();
    };
    if over(&request) {
        let probe = request.clone();
        drop_front(&mut request.system, &|rest| {
            let mut r = probe.clone();
            r.system = rest.to_string();
            over(&r)
        });
    }
    let mut i = 0;
    while over(&request) && i < request.messages.len() {
        let probe = request.clone();
        drop_front(&mut request.messages[i].content, &|rest| {
            let mut r = probe.clone();
            r.messages[i].content = rest.to_string();
            over(&r)
        });
        i += 1;
    }
    request
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    Stop,
    Length,
}

struct Reply {
    model: String,
    content: String,
    reasoning: String,
    finish: Finish,
    usage: Option<(u64, u64)>,
}

/// Splits `s` into pieces of at most `n` characters.
fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

impl Reply {
    fn openai_finish(&self) -> &'static str {
        match self.finish {
            Finish::Stop => "stop",
            Finish::Length => "length",
        }
    }

    fn openai(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": self.content});
        if !self.reasoning.is_empty() {
            message["reasoning_content"] = json!(self.reasoning);
        }
        let mut v = json!({
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.openai_finish()}],
        });
        if let Some((p, c)) = self.usage {
            v["usage"] = json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c});
        }
        v
    }

    fn openai_stream(&self, include_usage: bool) -> Vec<u8> {
        let mut out = String::new();
        let frame = |v: Value| format!("data: {v}\n\n");
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": self.model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        out.push_str(": scripted stream\n\n");
        out.push_str(&frame(chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )));
        for p in pieces(&self.reasoning, 12) {
            out.push_str(&frame(chunk(json!({"reasoning_content": p}), Value::Null)));
        }
        for p in pieces(&self.content, 12) {
            out.push_str(&frame(chunk(json!({"content": p}), Value::Null)));
        }
        out.push_str(&frame(chunk(json!({}), json!(self.openai_finish()))));
        if let (true, Some((p, c))) = (include_usage, self.usage) {
            out.push_str(&frame(json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "model": self.model, "choices": [],
                "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}})));
        }
        out.push_str("data: [DONE]\n\n");
        out.into_bytes()
    }

    fn ollama_reason(&self) -> &'static str {
        match self.finish {
            Finish::Stop => "stop",
            Finish::Length => "length",
        }
    }

    fn ollama(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": self.content});
        if !self.reasoning.is_empty() {
            message["thinking"] = json!(self.reasoning);
        }
        let mut v = json!({"model": self.model, "created_at": "2026-01-01T00:00:00Z", "message": message,
                           "done": true, "done_reason": self.ollama_reason()});
        if let Some((p, c)) = self.usage {
            v["prompt_eval_count"] = json!(p);
            v["eval_count"] = json!(c);
        }
        v
    }

    fn ollama_stream(&self) -> Vec<u8> {
        let mut out = String::new();
        for p in pieces(&self.reasoning, 12) {
            out.push_str(&format!("{}\n", json!({"model": self.model, "message": {"role": "assistant", "content": "", "thinking": p}, "done": false})));
        }
        for p in pieces(&self.content, 12) {
            out.push_str(&format!("{}\n", json!({"model": self.model, "message": {"role": "assistant", "content": p}, "done": false})));
        }
        let mut last = json!({"model": self.model, "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": self.ollama_reason()});
        if let Some((p, c)) = self.usage {
            last["prompt_eval_count"] = json!(p);
            last["eval_count"] = json!(c);
        }
        out.push_str(&format!("{last}\n"));
        out.into_bytes()
    }

    fn anthropic_stop(&self) -> &'static str {
        match self.finish {
            Finish::Stop => "end_turn",
            Finish::Length => "max_tokens",
        }
    }

    fn anthropic(&self) -> Value {
        let mut content = vec![];
        if !self.reasoning.is_empty() {
            content.push(json!({"type": "thinking", "thinking": self.reasoning}));
        }
        content.push(json!({"type": "text", "text": self.content}));
        let mut v = json!({"id": "msg_scripted", "type": "message", "role": "assistant", "model": self.model,
                           "content": content, "stop_reason": self.anthropic_stop()});
        if let Some((p, c)) = self.usage {
            v["usage"] = json!({"input_tokens": p, "output_tokens": c});
        }
        v
    }

    fn anthropic_stream(&self) -> Vec<u8> {
        let mut out = String::new();
        let mut ev = |name: &str, v: Value| out.push_str(&format!("event: {name}\ndata: {v}\n\n"));
        let (p, c) = self.usage.unwrap_or((0, 0));
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message", "role": "assistant", "model": self.model, "content": [], "usage": {"input_tokens": p, "output_tokens": 1}}}),
        );
        let mut index = 0;
        if !self.reasoning.is_empty() {
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}}),
            );
            for piece in pieces(&self.reasoning, 12) {
                ev(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}}),
                );
            }
            ev(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            );
            index += 1;
        }
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        );
        ev("ping", json!({"type": "ping"}));
        for piece in pieces(&self.content, 12) {
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
            );
        }
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": self.anthropic_stop()}, "usage": {"output_tokens": c}}),
        );
        ev("message_stop", json!({"type": "message_stop"}));
        out.into_bytes()
    }
}

fn embeddings(faults: &Faults, r: Route, body: &Value) -> ServerResponse {
    let bad = |status: u16, msg: &str| ServerResponse::json(status, &error_body(r, status, msg));
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted-embed-32")
        .to_string();
    let embedder =
        crate::llm::offline::OfflineEmbedder::with_model(model.clone(), scripted_dimension(&model));
    let est = TokenEstimator::default();
    let inputs: Vec<String> = if r == Route::OllamaLegacyEmbeddings {
        match body.get("prompt").and_then(Value::as_str) {
            Some(p) => vec![p.to_string()],
            // Real Ollama answers an `input` field here with an empty vector (F14c).
            None => return ServerResponse::json(200, &json!({"embedding": []})),
        }
    } else {
        match body.get("input") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => return bad(400, "input: Field required"),
        }
    };
    if let Some(ctx) = faults.num("ctx") {
        if inputs.iter().any(|i| est.estimate(i) > ctx) {
            return bad(400, "the input length exceeds the context length");
        }
    }
    let mut vectors: Vec<Vec<f32>> = inputs.iter().map(|t| embedder.embed_one(t)).collect();
    // An input holding the `zero-vector` word gets zeros; one holding the `nan-vector` word gets
    // NaN, written as the bare `NaN` tokens Python servers write (not JSON).
    let holds = |name: &str, t: &str| faults.get(name).is_some_and(|w| t.contains(w));
    let mut nan = false;
    for (t, v) in inputs.iter().zip(vectors.iter_mut()) {
        if holds("zero-vector", t) {
            v.fill(0.0);
        } else if holds("nan-vector", t) {
            v.fill(NAN_MARK);
            nan = true;
        }
    }
    let tokens: u64 = inputs.iter().map(|t| est.estimate(t)).sum();
    let v = match r {
        Route::OpenAiEmbeddings => {
            // Reverse order on purpose: clients must match by `index` (F14a).
            let data: Vec<Value> = vectors
                .iter()
                .enumerate()
                .rev()
                .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
                .collect();
            json!({"object": "list", "model": model, "data": data, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
        }
        Route::OllamaEmbed => {
            json!({"model": model, "embeddings": vectors, "prompt_eval_count": tokens})
        }
        _ => json!({"embedding": vectors[0]}),
    };
    if nan {
        let body = v.to_string().replace(&NAN_MARK.to_string(), "NaN");
        return ServerResponse::text(200, "application/json", &body);
    }
    ServerResponse::json(200, &v)
}

/// A value no embedding returns, written in place of NaN and then replaced by the token.
const NAN_MARK: f32 = 12345.5;

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
