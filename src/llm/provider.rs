//! The three wire protocols, as pure functions: build a chat request, parse a chat response.
//!
//! | | OpenAI-compatible | Ollama native | Anthropic Messages |
//! |---|---|---|---|
//! | URL | `<root>/chat/completions` | `/api/chat` | `<root>/messages` |
//! | auth | `Authorization: Bearer` | (none, or Bearer) | `x-api-key`, `anthropic-version`, `anthropic-dangerous-direct-browser-access: true` |
//! | system | first message, role `system` | first message, role `system` | top-level `system` |
//! | output cap | `max_tokens` (`max_completion_tokens` for models that refuse it, F38) | `options.num_predict` | `max_tokens` (required) |
//! | JSON | `response_format` `json_schema` → `json_object` (+ `schema`) → prompt | `format: <schema>` → `format: "json"` → prompt | prompt |
//! | stream | SSE, `[DONE]` | NDJSON, `done: true` | SSE, `message_stop` |
//! | cut off | `finish_reason: length` | `done_reason: length` | `stop_reason: max_tokens` |

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::llm::config::{Config, Provider};
use crate::llm::errors::{classify_http_error, json_body, stream_error};
use crate::llm::transport::{HttpRequest, Method};
use crate::llm::url::chat_endpoints;
use crate::llm::{ChatRequest, ChatResponse, FinishReason, JsonSchema, Role};
use crate::model::TokenUsage;
use crate::text::TokenEstimator;

/// How structured output is requested (best first). Which one an endpoint takes is learned on
/// the first structured call and remembered per endpoint (field case F13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "kebab-case")]
pub enum StructuredMode {
    /// OpenAI `response_format: {type: "json_schema", …}`; Ollama `format: <schema>`.
    JsonSchema,
    /// OpenAI `response_format: {type: "json_object", schema: …}` (llama-cpp-python takes the
    /// schema there); Ollama `format: "json"`.
    JsonObject,
    /// No request field: the schema is in the system prompt, and the lenient parser does the rest.
    Prompt,
}

impl StructuredMode {
    /// The modes to try for `provider`, best first.
    pub fn candidates(provider: Provider) -> &'static [StructuredMode] {
        match provider {
            Provider::OpenAiCompatible | Provider::Ollama => &[
                StructuredMode::JsonSchema,
                StructuredMode::JsonObject,
                StructuredMode::Prompt,
            ],
            Provider::Anthropic | Provider::Offline => &[StructuredMode::Prompt],
        }
    }
}

/// The anthropic-version header value sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The system-prompt instruction for structured output. It names the task (so the scripted test
/// endpoint can dispatch without `json_schema.name`) and, unless the endpoint enforces the schema
/// itself, includes the schema.
pub fn structured_instruction(json: &JsonSchema, include_schema: bool) -> String {
    if include_schema {
        format!(
            "Reply with only one JSON value for the task \"{}\", matching this JSON Schema, with no prose and no code fence:\n{}",
            json.name, json.schema
        )
    } else {
        format!(
            "Reply with only one JSON value for the task \"{}\", with no prose and no code fence.",
            json.name
        )
    }
}

/// True when every object in `schema` lists all its properties as required and forbids
/// additional ones: OpenAI's `strict: true` accepts only such schemas.
pub fn strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(s) => {
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                let required: Vec<&str> = s
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if s.get("additionalProperties") != Some(&Value::Bool(false))
                    || props.keys().any(|k| !required.contains(&k.as_str()))
                {
                    return false;
                }
            }
            s.values().all(strict_compatible)
        }
        Value::Array(items) => items.iter().all(strict_compatible),
        _ => true,
    }
}

/// The credential and protocol headers of `config`'s provider — `Authorization: Bearer <key>`, or
/// for Anthropic `x-api-key`, `anthropic-version` and `anthropic-dangerous-direct-browser-access:
/// true` — then the extra headers (secret ones included). Chat and model-list requests use them.
pub fn endpoint_headers(config: &Config) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    match (config.provider, &config.api_key) {
        (Provider::Anthropic, key) => {
            if let Some(key) = key {
                headers.push(("x-api-key".into(), key.expose().to_string()));
            }
            headers.push(("anthropic-version".into(), ANTHROPIC_VERSION.into()));
            headers.push((
                "anthropic-dangerous-direct-browser-access".into(),
                "true".into(),
            ));
        }
        (_, Some(key)) => {
            headers.push(("authorization".into(), format!("Bearer {}", key.expose())));
        }
        (_, None) => {}
    }
    push_extra_headers(config, &mut headers);
    headers
}

/// Appends `config`'s extra headers, the secret ones included.
pub fn push_extra_headers(config: &Config, headers: &mut Vec<(String, String)>) {
    for (k, v) in &config.headers {
        headers.push((k.clone(), v.clone()));
    }
    for (k, v) in &config.secret_headers {
        headers.push((k.clone(), v.expose().to_string()));
    }
}

/// Request-parameter changes an endpoint needed (field case F38), learned from its 400s and
/// remembered per endpoint and model: reasoning models (OpenAI o-series, GPT-5, via Azure too)
/// refuse `max_tokens` and any non-default `temperature`. The output cap is never dropped, only
/// renamed; generic and local servers keep getting `max_tokens`, which some of them need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ParamAdjust {
    /// Send the OpenAI-compatible output cap as `max_completion_tokens`, not `max_tokens`.
    pub max_completion_tokens: bool,
    /// Send no `temperature` (the model takes only its default).
    pub no_temperature: bool,
}

impl ParamAdjust {
    /// True when nothing is adjusted.
    pub fn is_none(&self) -> bool {
        *self == ParamAdjust::default()
    }

    /// The adjustments in words (for the connection test), empty when none.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.max_completion_tokens {
            parts.push(
                "the output cap is sent as max_completion_tokens (the model refuses max_tokens)",
            );
        }
        if self.no_temperature {
            parts.push("no temperature is sent (the model takes only its default)");
        }
        parts.join("; ")
    }

    /// The adjustment a refusal `e` of a request sent with `self` calls for, if it names a
    /// parameter not yet adjusted: `max_tokens` refused (OpenAI-compatible only) → rename the cap;
    /// `temperature` refused ("unsupported value", "only 1 is allowed", "does not support") →
    /// drop it. `None` for anything else, so each adjustment is tried once.
    pub fn after(&self, e: &Error, provider: Provider) -> Option<ParamAdjust> {
        let Error::LlmRejected {
            status: 400 | 422,
            message,
            ..
        } = e
        else {
            return None;
        };
        let m = message.to_ascii_lowercase();
        let refused = [
            "unsupported",
            "not supported",
            "only",
            "does not support",
            "not allowed",
        ]
        .iter()
        .any(|w| m.contains(w));
        if !refused {
            return None;
        }
        let mut next = *self;
        if !self.max_completion_tokens
            && provider == Provider::OpenAiCompatible
            && m.contains("max_tokens")
        {
            next.max_completion_tokens = true;
        } else if !self.no_temperature && m.contains("temperature") {
            next.no_temperature = true;
        }
        (next != *self).then_some(next)
    }
}

/// Builds the HTTP request for one chat call ([`build_chat_request_with`] without adjustments).
pub fn build_chat_request(
    config: &Config,
    request: &ChatRequest,
    mode: StructuredMode,
    stream: bool,
) -> Result<HttpRequest> {
    build_chat_request_with(config, request, mode, stream, ParamAdjust::default())
}

/// Builds the HTTP request for one chat call, with the parameter changes `adjust` the endpoint
/// needs (F38).
///
/// `mode` is the structured-output mode (ignored when `request.json` is `None`); `stream` asks
/// for SSE / NDJSON. The model and output cap come from `config` for `request.purpose` unless the
/// request sets `max_tokens`.
///
/// Errors: [`Error::LlmConfig`] (offline provider, bad base URL, no model).
pub fn build_chat_request_with(
    config: &Config,
    request: &ChatRequest,
    mode: StructuredMode,
    stream: bool,
    adjust: ParamAdjust,
) -> Result<HttpRequest> {
    let temperature = request.temperature.filter(|_| !adjust.no_temperature);
    let endpoints = chat_endpoints(config.provider, &config.base_url)?;
    let resolved = config.resolve(request.purpose);
    if resolved.model.trim().is_empty() {
        return Err(Error::LlmConfig("no model is set".into()));
    }
    let max_tokens = request
        .max_tokens
        .unwrap_or(resolved.max_output_tokens)
        .max(1);
    let mut system = request.system.clone();
    if let Some(json) = &request.json {
        let include_schema = !(mode == StructuredMode::JsonSchema);
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&structured_instruction(json, include_schema));
    }
    let role = |r: Role| match r {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let turns: Vec<Value> = request
        .messages
        .iter()
        .map(|m| turn(config.provider, role(m.role), m))
        .collect();
    let mut headers: Vec<(String, String)> =
        vec![("content-type".into(), "application/json".into())];
    let mut body = Map::new();
    body.insert("model".into(), json!(resolved.model));
    match config.provider {
        Provider::OpenAiCompatible => {
            let mut messages = Vec::with_capacity(turns.len() + 1);
            if !system.is_empty() {
                messages.push(json!({"role": "system", "content": system}));
            }
            messages.extend(turns);
            body.insert("messages".into(), Value::Array(messages));
            let cap = if adjust.max_completion_tokens {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.insert(cap.into(), json!(max_tokens));
            if let Some(t) = temperature {
                body.insert("temperature".into(), json!(t));
            }
            body.insert("stream".into(), json!(stream));
            if stream {
                body.insert("stream_options".into(), json!({"include_usage": true}));
            }
            if let Some(json) = &request.json {
                match mode {
                    StructuredMode::JsonSchema => {
                        body.insert(
                            "response_format".into(),
                            json!({"type": "json_schema", "json_schema": {
                                "name": json.name,
                                "schema": json.schema,
                                "strict": strict_compatible(&json.schema),
                            }}),
                        );
                    }
                    StructuredMode::JsonObject => {
                        body.insert(
                            "response_format".into(),
                            json!({"type": "json_object", "schema": json.schema}),
                        );
                    }
                    StructuredMode::Prompt => {}
                }
            }
        }
        Provider::Ollama => {
            let mut messages = Vec::with_capacity(turns.len() + 1);
            if !system.is_empty() {
                messages.push(json!({"role": "system", "content": system}));
            }
            messages.extend(turns);
            body.insert("messages".into(), Value::Array(messages));
            body.insert("stream".into(), json!(stream));
            let mut options = json!({"num_ctx": config.context_window, "num_predict": max_tokens});
            if let Some(t) = temperature {
                options["temperature"] = json!(t);
            }
            body.insert("options".into(), options);
            if let Some(json) = &request.json {
                match mode {
                    StructuredMode::JsonSchema => {
                        body.insert("format".into(), json.schema.clone());
                    }
                    StructuredMode::JsonObject => {
                        body.insert("format".into(), json!("json"));
                    }
                    StructuredMode::Prompt => {}
                }
            }
        }
        Provider::Anthropic => {
            body.insert("max_tokens".into(), json!(max_tokens));
            if !system.is_empty() {
                body.insert("system".into(), json!(system));
            }
            body.insert("messages".into(), Value::Array(turns));
            if let Some(t) = temperature {
                body.insert("temperature".into(), json!(t));
            }
            if stream {
                body.insert("stream".into(), json!(true));
            }
        }
        Provider::Offline => {
            return Err(Error::LlmConfig(
                "the offline provider has no chat model: choose an endpoint in the settings".into(),
            ))
        }
    }
    if stream {
        let accept = if config.provider == Provider::Ollama {
            "application/x-ndjson"
        } else {
            "text/event-stream"
        };
        headers.push(("accept".into(), accept.into()));
    }
    headers.extend(endpoint_headers(config));
    Ok(HttpRequest {
        method: Method::Post,
        url: endpoints.chat,
        headers,
        body: Some(Value::Object(body).to_string()),
        stream,
    })
}

/// One message as `provider` takes it: `{role, content}`, and with pictures, OpenAI-compatible
/// content parts (`text`, then one `image_url` with a `data:` URL per picture), Anthropic content
/// blocks (the pictures first, as its guide advises, then the text), or Ollama's `images` list
/// of base64 strings beside the text.
fn turn(provider: Provider, role: &str, m: &crate::llm::Message) -> Value {
    if m.images.is_empty() {
        return json!({"role": role, "content": m.content});
    }
    match provider {
        Provider::Anthropic => {
            let mut blocks: Vec<Value> = m
                .images
                .iter()
                .map(|i| {
                    json!({"type": "image", "source": {
                        "type": "base64", "media_type": i.mime, "data": i.base64,
                    }})
                })
                .collect();
            blocks.push(json!({"type": "text", "text": m.content}));
            json!({"role": role, "content": blocks})
        }
        Provider::Ollama => json!({
            "role": role,
            "content": m.content,
            "images": m.images.iter().map(|i| i.base64.as_str()).collect::<Vec<_>>(),
        }),
        Provider::OpenAiCompatible | Provider::Offline => {
            let mut parts = vec![json!({"type": "text", "text": m.content})];
            parts.extend(
                m.images
                    .iter()
                    .map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}})),
            );
            json!({"role": role, "content": parts})
        }
    }
}

/// A provider's finish reason: the normalised [`FinishReason`] and the provider's own word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFinish {
    /// Normalised.
    pub finish: FinishReason,
    /// As sent (`stop`, `length`, `end_turn`, `max_tokens`…).
    pub word: String,
}

impl RawFinish {
    /// OpenAI `finish_reason`.
    pub fn from_openai(word: &str) -> Self {
        let finish = match word {
            "stop" | "tool_calls" | "function_call" | "eos" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            _ => FinishReason::Other,
        };
        RawFinish {
            finish,
            word: word.to_string(),
        }
    }
    /// Anthropic `stop_reason`.
    pub fn from_anthropic(word: &str) -> Self {
        let finish = match word {
            "end_turn" | "stop_sequence" | "tool_use" => FinishReason::Stop,
            "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
            _ => FinishReason::Other,
        };
        RawFinish {
            finish,
            word: word.to_string(),
        }
    }
    /// Ollama `done_reason`.
    pub fn from_ollama(word: &str) -> Self {
        let finish = match word {
            "stop" | "" => FinishReason::Stop,
            "length" => FinishReason::Length,
            _ => FinishReason::Other,
        };
        RawFinish {
            finish,
            word: word.to_string(),
        }
    }
}

/// A completion as the provider returned it, before reasoning removal and checks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// The answer channel (`content`), raw (may contain `<think>`).
    pub content: String,
    /// A separate reasoning channel (`reasoning_content`, `reasoning`, `thinking`).
    pub reasoning: String,
    /// Why it stopped, if the provider said.
    pub raw_finish: Option<RawFinish>,
    /// Reported (input, output) tokens.
    pub usage: Option<(u64, u64)>,
    /// The model that answered, if reported.
    pub model: String,
}

/// Usage from an OpenAI-style `usage` object (`prompt_tokens`/`completion_tokens`, or
/// `input_tokens`/`output_tokens`).
pub fn openai_usage(u: &Value) -> Option<(u64, u64)> {
    let input = u
        .get("prompt_tokens")
        .or_else(|| u.get("input_tokens"))
        .and_then(Value::as_u64);
    let output = u
        .get("completion_tokens")
        .or_else(|| u.get("output_tokens"))
        .and_then(Value::as_u64);
    match (input, output) {
        (None, None) => None,
        (i, o) => Some((i.unwrap_or(0), o.unwrap_or(0))),
    }
}

/// Usage from an Ollama response (`prompt_eval_count`, `eval_count`).
pub fn ollama_usage(v: &Value) -> Option<(u64, u64)> {
    let input = v.get("prompt_eval_count").and_then(Value::as_u64);
    let output = v.get("eval_count").and_then(Value::as_u64);
    match (input, output) {
        (None, None) => None,
        (i, o) => Some((i.unwrap_or(0), o.unwrap_or(0))),
    }
}

/// Text of an OpenAI `content` that is a string or a list of `{type: "text", text}` parts.
fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Parses a complete (non-streamed) chat response of `provider`.
///
/// Errors: a non-2xx status or an HTML page → the typed error of [`classify_http_error`];
/// a body that is not JSON or lacks the provider's fields → [`Error::LlmBadResponse`]; an
/// `error` object in a 200 → classified like an error body.
pub fn parse_chat_response(
    provider: Provider,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    url: &str,
    now_ms: i64,
) -> Result<Completion> {
    if !(200..300).contains(&status) {
        return Err(classify_http_error(
            provider, status, headers, body, url, now_ms,
        ));
    }
    let v = json_body(status, headers, body, url, "the response")?;
    if v.get("error").is_some_and(|e| !e.is_null()) {
        return Err(stream_error(&v));
    }
    let mut c = Completion {
        model: v
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        ..Completion::default()
    };
    match provider {
        Provider::OpenAiCompatible | Provider::Offline => {
            let choice = v
                .get("choices")
                .and_then(Value::as_array)
                .and_then(|c| c.first())
                .ok_or_else(|| Error::LlmBadResponse("the response has no choices[0]".into()))?;
            let msg = choice
                .get("message")
                .or_else(|| choice.get("delta"))
                .cloned()
                .unwrap_or(Value::Null);
            c.content = content_text(msg.get("content"));
            if c.content.is_empty() {
                // Legacy completions shape.
                c.content = content_text(choice.get("text"));
            }
            c.reasoning = msg
                .get("reasoning_content")
                .or_else(|| msg.get("reasoning"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            c.raw_finish = choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .map(RawFinish::from_openai);
            c.usage = v.get("usage").and_then(openai_usage);
        }
        Provider::Anthropic => {
            let blocks = v.get("content").and_then(Value::as_array).ok_or_else(|| {
                Error::LlmBadResponse("the response has no content blocks".into())
            })?;
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => c
                        .content
                        .push_str(b.get("text").and_then(Value::as_str).unwrap_or_default()),
                    Some("thinking") => c.reasoning.push_str(
                        b.get("thinking")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                    ),
                    _ => {}
                }
            }
            c.raw_finish = v
                .get("stop_reason")
                .and_then(Value::as_str)
                .map(RawFinish::from_anthropic);
            c.usage = v.get("usage").and_then(openai_usage);
        }
        Provider::Ollama => {
            let msg = v
                .get("message")
                .ok_or_else(|| Error::LlmBadResponse("the response has no message".into()))?;
            c.content = content_text(msg.get("content"));
            c.reasoning = msg
                .get("thinking")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if v.get("done").and_then(Value::as_bool) != Some(false) {
                c.raw_finish = Some(RawFinish::from_ollama(
                    v.get("done_reason")
                        .and_then(Value::as_str)
                        .unwrap_or("stop"),
                ));
            }
            c.usage = ollama_usage(&v);
        }
    }
    Ok(c)
}

/// Estimated input tokens of a request (system prompt and every message, each picture at
/// [`IMAGE_TOKENS`](crate::llm::IMAGE_TOKENS)).
pub fn estimate_input(request: &ChatRequest, estimator: &TokenEstimator) -> u64 {
    let mut n = estimator.estimate(&request.system);
    for m in &request.messages {
        n += estimator.estimate(&m.content) + 4 + m.images.len() as u64 * crate::llm::IMAGE_TOKENS;
    }
    n
}

impl Completion {
    /// Checks the completion and turns it into a [`ChatResponse`]:
    /// cut off by the limit → [`Error::LlmTruncated`] (never parsed); the answer without
    /// reasoning empty → [`Error::LlmEmptyCompletion`], except for a structured call whose
    /// reasoning channel holds a valid JSON answer (field case F02c: documented fallback).
    /// Usage is the reported one, else estimated and marked so (Decision 12).
    pub fn into_response(
        self,
        request: &ChatRequest,
        max_tokens: u32,
        estimator: &TokenEstimator,
        configured_model: &str,
    ) -> Result<ChatResponse> {
        let finish = self
            .raw_finish
            .as_ref()
            .map_or(FinishReason::Stop, |f| f.finish);
        if finish == FinishReason::Length {
            return Err(Error::LlmTruncated {
                reason: self
                    .raw_finish
                    .map(|f| f.word)
                    .unwrap_or_else(|| "length".into()),
                max_tokens: Some(max_tokens),
            });
        }
        let stripped = crate::llm::parse::strip_reasoning(&self.content);
        let mut text = stripped.trim().to_string();
        if text.is_empty() {
            let reasoning = self.reasoning.trim();
            let in_content_tags = !self.content.trim().is_empty();
            let structured_fallback = request
                .json
                .as_ref()
                .and_then(|j| crate::llm::parse::parse_json(reasoning, &j.schema).ok());
            match structured_fallback {
                Some(v) if !reasoning.is_empty() => text = v.to_string(),
                _ => {
                    let detail = if !reasoning.is_empty() {
                        format!(
                            "`content` is empty and `reasoning_content` holds {} characters of reasoning: the model answered only in its reasoning channel; use a non-reasoning model, turn thinking off, or raise maxOutputTokens",
                            reasoning.chars().count()
                        )
                    } else if in_content_tags {
                        "the reply held only <think> reasoning and no answer; raise maxOutputTokens or turn thinking off".to_string()
                    } else {
                        "`content` is empty and no reasoning came back either; check that the model is a chat model".to_string()
                    };
                    return Err(Error::LlmEmptyCompletion { detail });
                }
            }
        }
        let usage = match self.usage {
            Some((input, output)) if input + output > 0 => TokenUsage {
                input,
                output,
                calls: 1,
                estimated: false,
            },
            _ => TokenUsage {
                input: estimate_input(request, estimator),
                output: estimator.estimate(&self.content) + estimator.estimate(&self.reasoning),
                calls: 1,
                estimated: true,
            },
        };
        Ok(ChatResponse {
            text,
            usage,
            finish,
            model: if self.model.is_empty() {
                configured_model.to_string()
            } else {
                self.model
            },
        })
    }
}
