//! The chat routes: a provider chat body checked as the provider would check it (Anthropic's
//! headers and fields, the structured-output and parameter faults), parsed back into a
//! [`ChatRequest`], answered with the scripted [`reply`] shaped by the output faults, and
//! written in the provider's shape, streamed or whole.

use serde_json::{json, Value};

use super::faults::Faults;
use super::request::{requested_mode, to_chat_request};
use super::routes::{error_body, is_anthropic, is_ollama, Route};
use super::wire::{Finish, Reply};
use super::{ServerRequest, ServerResponse, ServerState};
use crate::compile::scripted::Echo;
use crate::llm::provider::{self, StructuredMode};
use crate::llm::transport::header;
use crate::llm::ChatRequest;
use crate::scripted::{credulous, echoed, fit_to_max_tokens, malformed, reply};
use crate::text::TokenEstimator;

/// Answers a chat request on route `r` (the faults are listed in the server's module docs).
pub(super) fn chat(
    state: &ServerState,
    req: &ServerRequest,
    faults: &Faults,
    r: Route,
    body: &Value,
) -> ServerResponse {
    let bad = |status: u16, msg: &str| ServerResponse::json(status, &error_body(r, status, msg));
    if let Some(refused) = refusal(req, faults, r, body) {
        return refused;
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
    let (request, prompt_tokens) = match served_prompt(faults, r, request, &est) {
        Ok(x) => x,
        Err(refused) => return refused,
    };
    let (content, reasoning, cut) = scripted_output(state, faults, &request, body, &est);
    let finish = if cut { Finish::Length } else { Finish::Stop };
    let usage = (!faults.has("no-usage")).then(|| {
        (
            prompt_tokens,
            (est.estimate(&content) + est.estimate(&reasoning)).max(1),
        )
    });
    let reply = Reply {
        model,
        content,
        reasoning,
        finish,
        usage,
    };
    written(&reply, faults, r, stream, body)
}

/// The error a provider answers before reading the prompt, if any: Anthropic's required
/// headers and `max_tokens`, and the `no-json-object`, `no-json-schema`, `no-response-format`,
/// `reasoning-model` and `no-caps` faults.
fn refusal(req: &ServerRequest, faults: &Faults, r: Route, body: &Value) -> Option<ServerResponse> {
    let get = |name: &str| header(&req.headers, name);
    let bad = |status: u16, msg: &str| ServerResponse::json(status, &error_body(r, status, msg));
    if r == Route::AnthropicMessages {
        if get("x-api-key").is_none() {
            return Some(bad(401, "x-api-key header is required"));
        }
        if get("anthropic-version").is_none() {
            return Some(bad(400, "anthropic-version: header is required"));
        }
        if body.get("max_tokens").and_then(Value::as_u64).is_none() {
            return Some(bad(400, "max_tokens: Field required"));
        }
    }
    // Pictures: their data must decode (as every provider checks), and a text-only model
    // refuses them.
    let images: Vec<crate::llm::Image> = body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(super::request::images_of)
        .collect();
    if !images.is_empty() {
        use base64::Engine;
        let valid = images.iter().all(|i| {
            i.mime.starts_with("image/")
                && base64::engine::general_purpose::STANDARD
                    .decode(i.base64.as_bytes())
                    .is_ok_and(|b| !b.is_empty())
        });
        if !valid {
            return Some(bad(
                400,
                "Invalid image: the data is not a base64-encoded picture",
            ));
        }
        if faults.has("text-only") {
            let message = match r {
                Route::OllamaChat => "this model is missing data required for image input",
                _ => "Invalid content type. image_url is only supported by certain models.",
            };
            return Some(bad(400, message));
        }
    }
    let mode = requested_mode(r, body);
    match mode {
        Some(StructuredMode::JsonObject) if faults.has("no-json-object") => {
            return Some(ServerResponse::json(
                400,
                &json!({"error": "'response_format.type' must be 'json_schema' or 'text'"}),
            ))
        }
        Some(StructuredMode::JsonSchema) if faults.has("no-json-schema") => {
            return Some(ServerResponse::json(
                422,
                &json!({"detail": [{"type": "literal_error", "loc": ["body", "response_format", "type"], "msg": "Input should be 'text' or 'json_object'", "input": "json_schema"}]}),
            ))
        }
        Some(_) if faults.has("no-response-format") => {
            return Some(bad(400, "response_format is not supported by this server"))
        }
        _ => {}
    }
    if faults.has("reasoning-model") && r == Route::OpenAiChat {
        // OpenAI's o-series / GPT-5 (F38a, b): no `max_tokens`, only the default temperature.
        if body.get("max_tokens").is_some() {
            return Some(ServerResponse::json(
                400,
                &json!({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}),
            ));
        }
        if let Some(t) = body
            .get("temperature")
            .and_then(Value::as_f64)
            .filter(|t| *t != 1.0)
        {
            return Some(ServerResponse::json(
                400,
                &json!({"error": {"message": format!("Unsupported value: 'temperature' does not support {t} with this model. Only the default (1) value is supported."), "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}),
            ));
        }
    }
    if faults.has("no-caps") {
        let sent = body
            .pointer("/response_format/json_schema/schema")
            .or_else(|| body.pointer("/response_format/schema"))
            .or_else(|| body.get("format").filter(|f| f.is_object()));
        if let Some(keyword) = sent.and_then(cap_keyword) {
            // OpenAI strict mode's wording.
            return Some(bad(
                400,
                &format!("Invalid schema for response_format: In context=('properties'), '{keyword}' is not permitted."),
            ));
        }
    }
    None
}

/// The prompt as the server takes it and its token count: refused over `ctx=N` with the
/// provider's context error, cut from the front to `cut-prompt=N`, counted at `prompt-share=P`.
fn served_prompt(
    faults: &Faults,
    r: Route,
    request: ChatRequest,
    est: &TokenEstimator,
) -> Result<(ChatRequest, u64), ServerResponse> {
    let prompt_tokens = provider::estimate_input(&request, est);
    if let Some(ctx) = faults.num("ctx") {
        if prompt_tokens > ctx {
            let msg = if is_ollama(r) {
                "the input length exceeds the context length".to_string()
            } else if is_anthropic(r) {
                format!("prompt is too long: {prompt_tokens} tokens > {ctx} maximum")
            } else {
                format!("This model's maximum context length is {ctx} tokens. However, your messages resulted in {prompt_tokens} tokens.")
            };
            return Err(ServerResponse::json(400, &error_body(r, 400, &msg)));
        }
    }
    // `cut-prompt=N`: the server's window is N tokens; a longer prompt loses its front (as
    // Ollama cuts it) and is answered anyway, its usage counting what was kept.
    let (request, prompt_tokens) = match faults.num("cut-prompt") {
        Some(window) if prompt_tokens > window => {
            let cut = cut_from_front(request, window, est);
            let kept = provider::estimate_input(&cut, est);
            (cut, kept)
        }
        _ => (request, prompt_tokens),
    };
    // `prompt-share=P`: the server's tokenizer counts P % of the estimate (CJK vocabularies).
    let prompt_tokens = match faults.num("prompt-share") {
        Some(p) => (prompt_tokens * p / 100).max(1),
        None => prompt_tokens,
    };
    Ok((request, prompt_tokens))
}

/// The reply's content and reasoning and whether it was cut: the scripted reply to `request`
/// with the output faults applied in order (the echo faults, `credulous`, `fill`, the output
/// cap or `local-caps`, `truncate`, `malformed`, `rewrite`, `empty`, `reasoning-only`, `think`).
fn scripted_output(
    state: &ServerState,
    faults: &Faults,
    request: &ChatRequest,
    body: &Value,
    est: &TokenEstimator,
) -> (String, String, bool) {
    let mut full = reply(request).text;
    for (name, echo) in [
        ("echo-outline", Echo::Outline),
        ("paraphrase-headings", Echo::Paraphrase),
        ("repeat-blocks", Echo::Repeat),
    ] {
        if faults.has(name) {
            full = echoed(request, &full, echo);
        }
    }
    if faults.has("credulous") {
        full = credulous(request, &full);
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
            full = fill_first_array(&full, &j.schema, max_tokens, est);
        }
    }
    let (mut content, mut cut) = fit_to_max_tokens(&full, max_tokens, est);
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
    (content, reasoning, cut)
}

/// `reply` in the shape of route `r`: a stream (SSE, or NDJSON for Ollama) in pieces of
/// `chunk=N` bytes (default 5) with `chunk-delay=MS` between them, or one JSON body.
fn written(reply: &Reply, faults: &Faults, r: Route, stream: bool, body: &Value) -> ServerResponse {
    let chunk = faults.num("chunk").unwrap_or(5).max(1) as usize;
    let chunk_delay = faults.num("chunk-delay").unwrap_or(0);
    let include_usage = body.pointer("/stream_options/include_usage") == Some(&json!(true));
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
