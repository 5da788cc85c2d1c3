//! The endpoint client: [`HttpLlm`] and [`HttpEmbedder`], generic over a [`Transport`].
//!
//! Everything here is pure logic over the transport — retries with `Retry-After`, the
//! structured-output fallback and its memory, stream decoding, the think filter, secret
//! scrubbing — so it runs natively against the in-process scripted endpoint
//! (`crate::scripted::server::InProcess`, behind the `test-support` feature) and in the browser
//! over `fetch`.
//!
//! *Invariant:* every error a call returns went through [`scrub_error`]; the API key never
//! appears in one.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::llm::config::{Config, EmbeddingProvider, Provider};
use crate::llm::embed::{build_embed_request, chunk_text, normalize, parse_embed_response, pool};
use crate::llm::errors::{
    classify_http_error, is_format_rejection, json_body, origin_not_allowed, scrub_error,
};
use crate::llm::offline::OfflineEmbedder;
use crate::llm::provider::{
    build_chat_request_with, estimate_input, parse_chat_response, StructuredMode,
};
use crate::llm::stream::{ChatStream, ThinkFilter};
use crate::llm::structured::{has_caps, strip_caps};
use crate::llm::transport::{
    header, HttpRequest, HttpResponse, Method, ResponseBody, Timeouts, Transport,
};
use crate::llm::url::chat_endpoints;
use crate::llm::{Cancel, ChatRequest, ChatResponse, Embedder, Embeddings, Llm, OnToken};
use crate::model::TokenUsage;

pub use crate::llm::learned::{Learned, LearnedModes};

/// The key under which a structured mode is remembered.
pub fn endpoint_key(provider: Provider, chat_url: &str, model: &str) -> String {
    format!("{} {chat_url} {model}", provider.as_str())
}

/// Sends `request`, retrying rate limits and overload per the config's [`RetryPolicy`](crate::llm::retry::RetryPolicy).
/// Returns only 2xx responses: any other status is read and returned as its typed error.
pub async fn send_with_retry<T: Transport>(
    transport: &T,
    config: &Config,
    request: &HttpRequest,
    cancel: &Cancel,
    timeouts: Timeouts,
) -> Result<HttpResponse<T::Body>> {
    let mut attempts = 0u32;
    let mut waited = 0u64;
    loop {
        cancel.check()?;
        attempts += 1;
        let mut resp = match transport.send(request, cancel, timeouts).await {
            Ok(r) => r,
            Err(Error::LlmOriginNotAllowed { origin, url, .. }) => {
                return Err(origin_not_allowed(config.provider, &url, &origin))
            }
            Err(e) => return Err(e),
        };
        if (200..300).contains(&resp.status) {
            return Ok(resp);
        }
        let body = resp.body.read_all().await?;
        let err = classify_http_error(
            config.provider,
            resp.status,
            &resp.headers,
            &body,
            &request.url,
            transport.now_ms(),
        );
        match err {
            Error::LlmRateLimited {
                status,
                retry_after_ms,
                message,
                ..
            } => match config.retry.next_wait(attempts, waited, retry_after_ms) {
                Some(wait) => {
                    transport.sleep(wait, cancel).await?;
                    waited += wait;
                }
                None => {
                    return Err(Error::LlmRateLimited {
                        status,
                        retry_after_ms,
                        attempts,
                        message,
                    })
                }
            },
            other => return Err(other),
        }
    }
}

/// A chat endpoint configured by a [`Config`], over transport `T`.
#[derive(Debug)]
pub struct HttpLlm<T: Transport> {
    config: Config,
    transport: T,
    learned: Learned,
}

impl<T: Transport> HttpLlm<T> {
    /// A client for `config`. Errors: [`Error::LlmConfig`] when the config is invalid or offline.
    pub fn new(config: Config, transport: T) -> Result<Self> {
        config.validate()?;
        if config.provider == Provider::Offline {
            return Err(Error::LlmConfig(
                "the offline provider has no chat model: choose an endpoint in the settings".into(),
            ));
        }
        Ok(HttpLlm {
            config,
            transport,
            learned: Learned::default(),
        })
    }

    /// Shares `learned` (e.g. loaded from storage) instead of starting empty.
    pub fn with_learned(mut self, learned: Learned) -> Self {
        self.learned = learned;
        self
    }

    /// What was learned about the endpoint.
    pub fn learned(&self) -> &Learned {
        &self.learned
    }

    /// The key what is learned about the endpoint is kept under for `model`.
    fn endpoint_key(&self, model: &str) -> Result<String> {
        let endpoints = chat_endpoints(self.config.provider, &self.config.base_url)?;
        Ok(endpoint_key(self.config.provider, &endpoints.chat, model))
    }

    /// The request-parameter changes learned for the model of `purpose` (F38), in words; empty
    /// when none.
    pub fn adjustments(&self, purpose: crate::llm::Purpose) -> String {
        let model = self.config.resolve(purpose).model;
        self.endpoint_key(&model)
            .map(|k| self.learned.params(&k).describe())
            .unwrap_or_default()
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The model ids the server lists (`GET …/models` or `/api/tags`), sorted.
    ///
    /// Errors: as [`Llm::chat`] (auth, unreachable, origin not allowed, …).
    pub async fn list_models(&self, cancel: &Cancel) -> Result<Vec<String>> {
        let run = async {
            let endpoints = chat_endpoints(self.config.provider, &self.config.base_url)?;
            let headers = crate::llm::provider::endpoint_headers(&self.config);
            let request = HttpRequest {
                method: Method::Get,
                url: endpoints.models,
                headers,
                body: None,
                stream: false,
            };
            let mut resp = send_with_retry(
                &self.transport,
                &self.config,
                &request,
                cancel,
                self.config.timeouts(0),
            )
            .await?;
            let body = resp.body.read_all().await?;
            let v = json_body(
                resp.status,
                &resp.headers,
                &body,
                &request.url,
                "the model list",
            )?;
            let mut ids: Vec<String> = v
                .get("data")
                .or_else(|| v.get("models"))
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    Error::LlmBadResponse("the model list has no `data` or `models`".into())
                })?
                .iter()
                .filter_map(|m| {
                    m.get("id")
                        .or_else(|| m.get("name"))
                        .or_else(|| m.get("model"))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .collect();
            crate::util::sort_dedup(&mut ids);
            Ok(ids)
        };
        run.await
            .map_err(|e| scrub_error(e, &self.config.secrets()))
    }

    async fn chat_inner(
        &self,
        request: &ChatRequest,
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<ChatResponse> {
        cancel.check()?;
        let resolved = self.config.resolve(request.purpose);
        let max_tokens = request
            .max_tokens
            .unwrap_or(resolved.max_output_tokens)
            .max(1);
        let input = estimate_input(request, &self.config.estimator);
        if refused_before_sending(input, self.config.context_window) {
            return Err(Error::LlmContextOverflow {
                message: format!(
                    "the prompt is about {input} tokens (estimated) and the context window is {} tokens; {}",
                    self.config.context_window,
                    context_setting_advice(&self.config)
                ),
            });
        }
        if request.json.is_none() {
            return self
                .chat_once(
                    request,
                    StructuredMode::Prompt,
                    max_tokens,
                    on_token,
                    cancel,
                )
                .await;
        }
        let endpoints = chat_endpoints(self.config.provider, &self.config.base_url)?;
        let key = endpoint_key(self.config.provider, &endpoints.chat, &resolved.model);
        let all = StructuredMode::candidates(self.config.provider);
        let start = self
            .learned
            .get(&key)
            .and_then(|m| all.iter().position(|x| *x == m))
            .unwrap_or(0);
        let modes = &all[start..];
        // Size caps the endpoint refused before are not sent again (the parser enforces them).
        let capped = |r: &ChatRequest| r.json.as_ref().is_some_and(|j| has_caps(&j.schema));
        let mut owned: Option<ChatRequest> =
            (capped(request) && self.learned.rejects_caps(&key)).then(|| without_caps(request));
        let mut last = None;
        let mut i = 0;
        while i < modes.len() {
            let mode = modes[i];
            let req = owned.as_ref().unwrap_or(request);
            match self
                .chat_once(req, mode, max_tokens, on_token, cancel)
                .await
            {
                Ok(r) => {
                    self.learned.set(&key, mode);
                    return Ok(r);
                }
                // A strict endpoint refusing `maxItems` / `maxLength`: the same mode again,
                // without caps, once; remembered for this endpoint and model.
                Err(e) if mode != StructuredMode::Prompt && capped(req) && is_cap_rejection(&e) => {
                    self.learned.set_rejects_caps(&key);
                    let next = without_caps(req);
                    owned = Some(next);
                    continue;
                }
                Err(e) if is_format_rejection(&e) && i + 1 < modes.len() => last = Some(e),
                Err(e) => return Err(e),
            }
            i += 1;
        }
        Err(last.unwrap_or_else(|| Error::LlmBadResponse("no structured-output mode".into())))
    }

    async fn chat_once(
        &self,
        request: &ChatRequest,
        mode: StructuredMode,
        max_tokens: u32,
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<ChatResponse> {
        let resolved = self.config.resolve(request.purpose);
        let key = self.endpoint_key(&resolved.model)?;
        // F38: a refused parameter is changed (never the cap dropped) and the request sent once
        // more; each change is tried once and remembered for this endpoint and model.
        let mut adjust = self.learned.params(&key);
        let (http, mut resp) = loop {
            let http =
                build_chat_request_with(&self.config, request, mode, on_token.is_some(), adjust)?;
            let timeouts =
                self.config
                    .timeouts(estimate_sent(request, mode, &self.config.estimator));
            match send_with_retry(&self.transport, &self.config, &http, cancel, timeouts).await {
                Ok(resp) => break (http, resp),
                Err(e) => match adjust.after(&e, self.config.provider) {
                    Some(next) => {
                        adjust = next;
                        self.learned.set_params(&key, next);
                    }
                    None => return Err(e),
                },
            }
        };
        let provider = self.config.provider;
        let content_type = header(&resp.headers, "content-type")
            .unwrap_or("")
            .to_ascii_lowercase();
        let streamed_shape = content_type.contains("event-stream")
            || content_type.contains("ndjson")
            || (provider == Provider::Ollama && !content_type.contains("html"));
        let completion = match on_token {
            Some(on_token) if streamed_shape => {
                let mut stream = ChatStream::new(provider);
                let mut filter = ThinkFilter::new();
                while let Some(chunk) = resp.body.chunk().await? {
                    cancel.check()?;
                    let d = stream.feed(&chunk)?;
                    let shown = filter.feed(&d.content);
                    if !shown.is_empty() {
                        on_token(&shown);
                    }
                    if stream.is_done() {
                        break;
                    }
                }
                let (completion, tail) = stream.finish()?;
                let mut shown = filter.feed(&tail.content);
                shown.push_str(&filter.finish());
                if !shown.is_empty() {
                    on_token(&shown);
                }
                completion
            }
            _ => {
                // Not streaming, or a server that ignored `stream: true` and sent one JSON body.
                let body = resp.body.read_all().await?;
                let c = parse_chat_response(
                    provider,
                    resp.status,
                    &resp.headers,
                    &body,
                    &http.url,
                    self.transport.now_ms(),
                )?;
                if let Some(on_token) = on_token {
                    let shown = crate::llm::parse::strip_reasoning(&c.content);
                    if c.raw_finish.as_ref().map(|f| f.finish)
                        != Some(crate::llm::FinishReason::Length)
                        && !shown.trim().is_empty()
                    {
                        on_token(shown.trim());
                    }
                }
                c
            }
        };
        if let Some((reported, _)) = completion.usage {
            let sent = estimate_sent(request, mode, &self.config.estimator);
            if let Some(e) = server_truncation(&self.config, sent, reported) {
                // The answer is to a prompt the server cut: not used, and its usage taught nothing.
                return Err(e);
            }
        }
        completion.into_response(request, max_tokens, &self.config.estimator, &resolved.model)
    }
}

/// `request` with the size caps taken out of its schema ([`strip_caps`]).
fn without_caps(request: &ChatRequest) -> ChatRequest {
    let mut r = request.clone();
    if let Some(j) = r.json.as_mut() {
        j.schema = strip_caps(&j.schema);
    }
    r
}

/// True when `e` is an endpoint refusing a schema because of a size-cap keyword (`maxItems`,
/// `maxLength`; OpenAI strict mode: "'maxItems' is not permitted"), as a 400/422 or a 500.
pub fn is_cap_rejection(e: &Error) -> bool {
    let message = match e {
        Error::LlmRejected {
            status: 400 | 422,
            message,
            ..
        }
        | Error::LlmServer {
            status: 500,
            message,
        } => message,
        _ => return false,
    };
    let m = message.to_ascii_lowercase();
    ["maxitems", "maxlength", "max_items", "max_length"]
        .iter()
        .any(|k| m.contains(k))
}

/// Share of the estimate the server must count for a prompt estimated above the context window
/// to count as received whole (issue 21, item 3).
pub const SERVER_COUNT_SHARE: f64 = 0.8;

/// True when a prompt estimated at `input` tokens is refused before sending: when it exceeds
/// `context_window` by more than the estimate's tolerance (1 / [`SERVER_COUNT_SHARE`], 1.25×).
/// A prompt estimated between the window and that is sent, and the server's own count decides
/// ([`server_truncation`]): the estimate is a guess, a tokenizer may need fewer tokens.
pub fn refused_before_sending(input: u64, context_window: u32) -> bool {
    input as f64 * SERVER_COUNT_SHARE >= f64::from(context_window)
}

/// Estimated prompt tokens of `request` as sent in structured mode `mode`: the system prompt with
/// the structured-output instruction [`build_chat_request`] adds (the schema included unless the
/// endpoint enforces it), and every message.
pub fn estimate_sent(
    request: &ChatRequest,
    mode: StructuredMode,
    estimator: &crate::text::TokenEstimator,
) -> u64 {
    let mut n = estimate_input(request, estimator);
    if let Some(json) = &request.json {
        let instruction =
            crate::llm::provider::structured_instruction(json, mode != StructuredMode::JsonSchema);
        n += estimator.estimate(&instruction);
    }
    n
}

/// The [`Error::LlmContextOverflow`] for a call the server cut (issue 21, item 3), or `None`.
///
/// Servers such as Ollama cut a prompt longer than their context window from the front and still
/// answer; only the usage shows it. A call counts as cut when the estimate of what was sent
/// (`sent`, with `config.estimator`) exceeds `config.context_window` *and* the server counted
/// (`reported` prompt tokens) below [`SERVER_COUNT_SHARE`] (0.8) of it. A prompt that fits the
/// window is never judged by its count: CJK tokenizers legitimately count 0.6× the estimate.
/// A count of 0 (a server that reports none) says nothing.
pub fn server_truncation(config: &Config, sent: u64, reported: u64) -> Option<Error> {
    let window = u64::from(config.context_window);
    if reported == 0 || sent <= window || reported as f64 >= SERVER_COUNT_SHARE * sent as f64 {
        return None;
    }
    Some(Error::LlmContextOverflow {
        message: format!(
            "the server counted {reported} prompt tokens for a prompt estimated at {sent}, above the context window of {window}: it cut the prompt and answered the rest, so the answer was not used; {}",
            context_setting_advice(config)
        ),
    })
}

/// What to change when a prompt does not fit, for `config`'s provider: `contextWindow` (the
/// window the server really has), and for Ollama the window the server runs with (`num_ctx`,
/// which the `ollama-native` preset sends from `contextWindow`, or `OLLAMA_CONTEXT_LENGTH`).
pub fn context_setting_advice(config: &Config) -> String {
    let ollama_v1 = config.provider == Provider::OpenAiCompatible
        && (config.preset.as_deref() == Some("ollama") || config.base_url.contains(":11434"));
    if config.provider == Provider::Ollama {
        "the ollama-native preset sends contextWindow as options.num_ctx: raise contextWindow (up to what the model supports), or start Ollama with a larger OLLAMA_CONTEXT_LENGTH".into()
    } else if ollama_v1 {
        "Ollama's OpenAI-compatible /v1 endpoint ignores contextWindow and runs with its own window: start Ollama with a larger OLLAMA_CONTEXT_LENGTH, or use the ollama-native preset, which sends contextWindow as num_ctx; and set contextWindow to the window the server really has".into()
    } else {
        "set contextWindow to the context window the server really runs with (llama.cpp: --ctx-size; LM Studio: the model's context length; vLLM: --max-model-len), or use a model with a larger one".into()
    }
}

impl<T: Transport> Llm for HttpLlm<T> {
    /// False when this endpoint and model refused size caps before ([`Learned::rejects_caps`]).
    fn sends_schema_caps(&self, request: &ChatRequest) -> bool {
        let resolved = self.config.resolve(request.purpose);
        match chat_endpoints(self.config.provider, &self.config.base_url) {
            Ok(endpoints) => !self.learned.rejects_caps(&endpoint_key(
                self.config.provider,
                &endpoints.chat,
                &resolved.model,
            )),
            Err(_) => true,
        }
    }

    /// One chat completion; streams through `on_token` when given.
    ///
    /// Structured calls (`request.json`) try the modes of
    /// [`StructuredMode::candidates`], starting from the one remembered for this endpoint, and
    /// move on only when the server rejects the format (at most two extra requests; F13).
    ///
    /// Errors: [`Error::LlmContextOverflow`] before sending when the estimated prompt exceeds
    /// the context window by more than 1.25× ([`refused_before_sending`]), and after the answer
    /// when the server cut the prompt ([`server_truncation`]: the answer is not used); the transport's errors; the typed HTTP errors (auth, rejected, server,
    /// rate limited after retries, not an endpoint); [`Error::LlmTruncated`];
    /// [`Error::LlmEmptyCompletion`]; [`Error::Cancelled`]. The API key never appears in them.
    async fn chat(
        &self,
        request: &ChatRequest,
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<ChatResponse> {
        self.chat_inner(request, on_token, cancel)
            .await
            .map_err(|e| scrub_error(e, &self.config.secrets()))
    }
}

/// An embedding endpoint configured by a [`Config`]'s `embeddings`, over transport `T`.
///
/// Texts are sent `batchSize` at a time. A text above 80 % of `maxInputTokens` (estimated) is
/// split with [`chunk_text`], its chunks embedded, and mean-pooled (weighted by length). When the
/// server still reports a context overflow, the chunk limit is halved and the batch retried, at
/// most three times (F14d). Every vector is L2-normalised.
#[derive(Debug)]
pub struct HttpEmbedder<T: Transport> {
    config: Config,
    transport: T,
}

impl<T: Transport> HttpEmbedder<T> {
    /// A client for `config.embeddings`. Errors: [`Error::LlmConfig`] (invalid, or offline).
    pub fn new(config: Config, transport: T) -> Result<Self> {
        config.validate()?;
        if config.embeddings.provider == EmbeddingProvider::Offline {
            return Err(Error::LlmConfig(
                "the embeddings are offline: use OfflineEmbedder".into(),
            ));
        }
        Ok(HttpEmbedder { config, transport })
    }

    async fn embed_pieces(
        &self,
        pieces: &[String],
        cancel: &Cancel,
    ) -> Result<(Vec<Vec<f32>>, u64, bool)> {
        let e = &self.config.embeddings;
        let mut vectors = Vec::with_capacity(pieces.len());
        let mut tokens = 0u64;
        let mut estimated = false;
        let batch = if e.provider == EmbeddingProvider::OllamaLegacy {
            1
        } else {
            e.batch_size.max(1) as usize
        };
        for group in pieces.chunks(batch) {
            cancel.check()?;
            let request = build_embed_request(&self.config, group)?;
            let mut resp = send_with_retry(
                &self.transport,
                &self.config,
                &request,
                cancel,
                self.config.timeouts(0),
            )
            .await?;
            let body = resp.body.read_all().await?;
            let (vs, t) = parse_embed_response(
                e.provider,
                resp.status,
                &resp.headers,
                &body,
                &request.url,
                group.len(),
                self.transport.now_ms(),
            )?;
            match t {
                Some(t) => tokens += t,
                None => {
                    estimated = true;
                    tokens += group
                        .iter()
                        .map(|g| self.config.estimator.estimate(g))
                        .sum::<u64>();
                }
            }
            vectors.extend(vs);
        }
        Ok((vectors, tokens, estimated))
    }

    async fn embed_inner(&self, texts: &[String], cancel: &Cancel) -> Result<Embeddings> {
        let est = &self.config.estimator;
        let mut limit = (u64::from(self.config.embeddings.max_input_tokens) * 4 / 5).max(16);
        for _round in 0..4 {
            // Split every text into chunks under the limit, remembering which text each is from.
            let mut pieces = Vec::new();
            let mut owner = Vec::new();
            for (i, t) in texts.iter().enumerate() {
                let chunks = if t.trim().is_empty() {
                    vec![t.clone()]
                } else {
                    chunk_text(t, limit, est)
                };
                for c in chunks {
                    pieces.push(c);
                    owner.push(i);
                }
            }
            match self.embed_pieces(&pieces, cancel).await {
                Ok((vectors, tokens, estimated)) => {
                    let mut out = Vec::with_capacity(texts.len());
                    for i in 0..texts.len() {
                        let (vs, ws): (Vec<Vec<f32>>, Vec<f32>) = owner
                            .iter()
                            .zip(pieces.iter().zip(&vectors))
                            .filter(|(o, _)| **o == i)
                            .map(|(_, (p, v))| (v.clone(), est.estimate(p).max(1) as f32))
                            .unzip();
                        let mut v = if vs.len() == 1 {
                            vs.into_iter().next().unwrap_or_default()
                        } else {
                            pool(&vs, &ws)
                        };
                        normalize(&mut v);
                        out.push(v);
                    }
                    let dimension = out.first().map_or(0, Vec::len);
                    return Ok(Embeddings {
                        model: self.config.embeddings.model.clone(),
                        dimension,
                        vectors: out,
                        usage: TokenUsage {
                            input: tokens,
                            output: 0,
                            calls: 1,
                            estimated,
                        },
                    });
                }
                Err(Error::LlmContextOverflow { message }) => {
                    let longest = pieces.iter().map(|p| est.estimate(p)).max().unwrap_or(1);
                    if longest <= 16 {
                        return Err(Error::LlmContextOverflow { message });
                    }
                    limit = (limit.min(longest) / 2).max(16);
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::LlmContextOverflow {
            message:
                "the embedding endpoint refused even small chunks; lower embeddings.maxInputTokens"
                    .into(),
        })
    }
}

impl<T: Transport> Embedder for HttpEmbedder<T> {
    fn model(&self) -> String {
        self.config.embeddings.model.clone()
    }

    /// Errors: as [`Llm::chat`], plus [`Error::LlmBadResponse`] for empty or mismatched vectors.
    async fn embed(&self, texts: &[String], cancel: &Cancel) -> Result<Embeddings> {
        if texts.is_empty() {
            return Ok(Embeddings {
                model: self.model(),
                dimension: 0,
                vectors: vec![],
                usage: TokenUsage::default(),
            });
        }
        self.embed_inner(texts, cancel)
            .await
            .map_err(|e| scrub_error(e, &self.config.secrets()))
    }
}

/// The configured embedder: the built-in offline one, or an endpoint (Decision 11: an enum, not
/// `dyn`).
#[derive(Debug)]
pub enum AnyEmbedder<T: Transport> {
    /// `offline-hash-v1`.
    Offline(OfflineEmbedder),
    /// An embedding endpoint.
    Http(Box<HttpEmbedder<T>>),
}

impl<T: Transport> AnyEmbedder<T> {
    /// The embedder `config.embeddings` selects. Errors: [`Error::LlmConfig`].
    pub fn from_config(config: &Config, transport: T) -> Result<Self> {
        Ok(match config.embeddings.provider {
            EmbeddingProvider::Offline => AnyEmbedder::Offline(OfflineEmbedder::new()),
            _ => AnyEmbedder::Http(Box::new(HttpEmbedder::new(config.clone(), transport)?)),
        })
    }
}

impl<T: Transport> Embedder for AnyEmbedder<T> {
    fn model(&self) -> String {
        match self {
            AnyEmbedder::Offline(e) => e.model(),
            AnyEmbedder::Http(e) => e.model(),
        }
    }
    async fn embed(&self, texts: &[String], cancel: &Cancel) -> Result<Embeddings> {
        match self {
            AnyEmbedder::Offline(e) => e.embed(texts, cancel).await,
            AnyEmbedder::Http(e) => e.embed(texts, cancel).await,
        }
    }
}
