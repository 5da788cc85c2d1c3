//! The connection test: what works with the configured endpoint, step by step, with the same
//! URLs and request building the real calls use.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::clock::Millis;
use crate::error::Error;
use crate::llm::client::{endpoint_key, AnyEmbedder, HttpLlm, Learned};
use crate::llm::config::{Config, EmbeddingProvider, Provider};
use crate::llm::prompt::source_block;
use crate::llm::provider::StructuredMode;
use crate::llm::structured::chat_json;
use crate::llm::transport::Transport;
use crate::llm::url::{chat_endpoints, embeddings_url};
use crate::llm::{Cancel, ChatRequest, Embedder, JsonSchema, Message, Purpose};

/// One step of the connection test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct ConnectionCheck {
    /// `config`, `models`, `chat`, `stream`, `structured` or `embeddings`.
    pub name: String,
    /// `ok`, `failed`, or `skipped` (an earlier step failed in a way this one would repeat).
    pub status: CheckStatus,
    /// What happened, in words.
    pub detail: String,
    /// The error code when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Milliseconds the step took.
    pub ms: u64,
}

/// Outcome of a [`ConnectionCheck`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Worked.
    Ok,
    /// Failed (see `code` and `detail`).
    Failed,
    /// Not tried.
    Skipped,
}

/// What [`test_connection`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct ConnectionReport {
    /// The provider tested.
    pub provider: Provider,
    /// The chat URL the real calls use.
    pub chat_url: Option<String>,
    /// The model-list URL.
    pub models_url: Option<String>,
    /// The embeddings URL (`None` for the offline embedding).
    pub embeddings_url: Option<String>,
    /// The page origin the requests came from (what `OLLAMA_ORIGINS` must list).
    pub origin: Option<String>,
    /// True when plain chat works.
    pub chat_ok: bool,
    /// True when embeddings work.
    pub embeddings_ok: bool,
    /// The steps, in order.
    pub checks: Vec<ConnectionCheck>,
    /// Models the server lists.
    pub models: Vec<String>,
    /// Whether the configured model is in that list (`None` when the list is unavailable).
    pub model_listed: Option<bool>,
    /// The structured-output mode that worked.
    pub structured_mode: Option<StructuredMode>,
    /// The embedding model id and its dimension, when embeddings work.
    pub embedding_model: String,
    /// Dimension of the embedding vectors.
    pub embedding_dimension: Option<usize>,
}

/// Whether an error makes every later step fail the same way.
fn blocks_the_rest(e: &Error) -> bool {
    matches!(
        e,
        Error::LlmUnreachable { .. }
            | Error::LlmOriginNotAllowed { .. }
            | Error::LlmAuth { .. }
            | Error::LlmNotAnEndpoint { .. }
            | Error::LlmTimeout { .. }
            | Error::Cancelled
    )
}

fn failed(name: &str, e: &Error, ms: u64) -> ConnectionCheck {
    ConnectionCheck {
        name: name.into(),
        status: CheckStatus::Failed,
        detail: e.to_string(),
        code: Some(e.code().into()),
        ms,
    }
}

fn ok(name: &str, detail: String, ms: u64) -> ConnectionCheck {
    ConnectionCheck {
        name: name.into(),
        status: CheckStatus::Ok,
        detail,
        code: None,
        ms,
    }
}

fn skipped(name: &str, why: &str) -> ConnectionCheck {
    ConnectionCheck {
        name: name.into(),
        status: CheckStatus::Skipped,
        detail: why.into(),
        code: None,
        ms: 0,
    }
}

/// The request of the chat steps: a one-word answer within `max_tokens`.
fn ask_ok(max_tokens: u32) -> ChatRequest {
    ChatRequest {
        purpose: Purpose::Query,
        system: "You are a connection test. Answer briefly.".into(),
        messages: vec![Message::user("Reply with the single word OK.")],
        json: None,
        max_tokens: Some(max_tokens),
        temperature: Some(0.0),
    }
}

/// The request of the structured step: an object with `ok` and `echo` (the text `word`, given
/// in a source block).
fn ask_structured(word: &str) -> ChatRequest {
    ChatRequest {
        purpose: Purpose::Query,
        system: "You are a connection test.".into(),
        messages: vec![Message::user(format!(
            "Return ok = true and echo = the text inside the source block.\n{}",
            source_block("test", word)
        ))],
        json: Some(JsonSchema {
            name: "connection_test".into(),
            schema: json!({
                "type": "object",
                "properties": {"ok": {"type": "boolean"}, "echo": {"type": "string"}},
                "required": ["ok", "echo"],
                "additionalProperties": false
            }),
        }),
        max_tokens: Some(256),
        temperature: Some(0.0),
    }
}

/// The report before any step: the provider and the page origin, nothing found yet.
fn empty_report(provider: Provider, origin: Option<String>) -> ConnectionReport {
    ConnectionReport {
        provider,
        chat_url: None,
        models_url: None,
        embeddings_url: None,
        origin,
        chat_ok: false,
        embeddings_ok: false,
        checks: vec![],
        models: vec![],
        model_listed: None,
        structured_mode: None,
        embedding_model: String::new(),
        embedding_dimension: None,
    }
}

/// Fills in the chat, model-list and embeddings URLs the real calls use for `config`.
fn set_urls(report: &mut ConnectionReport, config: &Config) {
    if let Ok(ep) = chat_endpoints(config.provider, &config.base_url) {
        report.chat_url = Some(ep.chat);
        report.models_url = Some(ep.models);
    }
    if config.embeddings.provider != EmbeddingProvider::Offline {
        let base = config
            .embeddings
            .base_url
            .as_deref()
            .unwrap_or(&config.base_url);
        report.embeddings_url = embeddings_url(config.embeddings.provider, base).ok();
    }
}

/// The steps' shared state: the transport they run over, the report they fill in, and why the
/// later steps are skipped once one failed in a way they would repeat.
struct Run<'a, T> {
    transport: &'a T,
    cancel: &'a Cancel,
    report: ConnectionReport,
    blocked: Option<String>,
}

impl<T: Transport + Clone> Run<'_, T> {
    /// Milliseconds since `t0` on the transport's clock.
    fn since(&self, t0: Millis) -> u64 {
        (self.transport.now_ms() - t0) as u64
    }

    /// Records step `name` as failed with `e`; an error every later step would repeat blocks them.
    fn fail_blocking(&mut self, name: &str, e: &Error, ms: u64) {
        if blocks_the_rest(e) {
            self.blocked = Some(format!("skipped: {}", e.code()));
        }
        self.report.checks.push(failed(name, e, ms));
    }

    /// Step 1, the model list: reachability, CORS and the key, without generating anything.
    /// `no_model`: the user set no model (nothing to look for in the list).
    async fn models(&mut self, llm: &HttpLlm<T>, model: &str, no_model: bool) {
        let t0 = self.transport.now_ms();
        match llm.list_models(self.cancel).await {
            Ok(models) => {
                self.report.model_listed = (!no_model).then(|| {
                    models
                        .iter()
                        .any(|m| m == model || m.strip_suffix(":latest") == Some(model))
                });
                let detail = format!(
                    "{} model(s) listed{}",
                    models.len(),
                    if self.report.model_listed == Some(false) {
                        format!("; {model:?} is not among them")
                    } else {
                        String::new()
                    }
                );
                self.report.models = models;
                let ms = self.since(t0);
                self.report.checks.push(ok("models", detail, ms));
            }
            Err(e) => {
                let ms = self.since(t0);
                self.fail_blocking("models", &e, ms);
            }
        }
    }

    /// Steps 2 and 3: a plain chat (`stream` false) or a streamed one, named `name`.
    async fn chat(&mut self, llm: &HttpLlm<T>, name: &str, stream: bool) {
        if let Some(why) = &self.blocked {
            self.report.checks.push(skipped(name, why));
            return;
        }
        let t0 = self.transport.now_ms();
        let pieces = std::cell::Cell::new(0u32);
        let on_token = |_: &str| pieces.set(pieces.get() + 1);
        let r = crate::llm::Llm::chat(
            llm,
            &ask_ok(64),
            if stream { Some(&on_token) } else { None },
            self.cancel,
        )
        .await;
        let ms = self.since(t0);
        match r {
            Ok(r) => {
                let text: String = r.text.chars().take(40).collect();
                let detail = if stream {
                    format!("{} piece(s) streamed: {text:?}", pieces.get())
                } else {
                    format!(
                        "{} answered {text:?} ({} + {} tokens{})",
                        r.model,
                        r.usage.input,
                        r.usage.output,
                        if r.usage.estimated { ", estimated" } else { "" }
                    )
                };
                let adjusted = llm.adjustments(Purpose::Query);
                let detail = if adjusted.is_empty() {
                    detail
                } else {
                    format!("{detail}; adjusted for this model: {adjusted}")
                };
                if !stream {
                    self.report.chat_ok = true;
                }
                self.report.checks.push(ok(name, detail, ms));
            }
            Err(Error::LlmTruncated { .. }) => {
                // It answered; the short test limit cut it.
                if !stream {
                    self.report.chat_ok = true;
                }
                self.report.checks.push(ok(
                    name,
                    "the endpoint answered (the test's 64-token limit cut the reply)".into(),
                    ms,
                ));
            }
            Err(e) => self.fail_blocking(name, &e, ms),
        }
    }

    /// Step 4, structured output: which mode the endpoint takes (remembered in `llm`'s learned
    /// modes, and reported).
    async fn structured(&mut self, llm: &HttpLlm<T>, config: &Config) {
        if let Some(why) = &self.blocked {
            self.report.checks.push(skipped("structured", why));
            return;
        }
        let t0 = self.transport.now_ms();
        let word = "llm-wiki 连接";
        let r = chat_json(llm, &ask_structured(word), self.cancel).await;
        let ms = self.since(t0);
        let resolved = config.resolve(Purpose::Query);
        let key = chat_endpoints(config.provider, &config.base_url)
            .map(|e| endpoint_key(config.provider, &e.chat, &resolved.model))
            .unwrap_or_default();
        self.report.structured_mode = llm.learned().get(&key);
        match r {
            Ok(reply) => {
                let echoed = reply.value["echo"] == json!(word);
                let detail = format!(
                    "mode {}{}{}",
                    self.report
                        .structured_mode
                        .map(|m| serde_json::to_string(&m).unwrap_or_default())
                        .unwrap_or_default()
                        .trim_matches('"'),
                    if reply.repaired {
                        ", after one repair"
                    } else {
                        ""
                    },
                    if echoed {
                        ", echo exact"
                    } else {
                        ", echo differs"
                    }
                );
                self.report.checks.push(ok("structured", detail, ms))
            }
            Err(e) => self.report.checks.push(failed("structured", &e, ms)),
        }
    }

    /// Step 5, embeddings (skipped when blocked and served by the chat server).
    async fn embeddings(&mut self, config: &Config) {
        let t0 = self.transport.now_ms();
        let embedder = match AnyEmbedder::from_config(config, self.transport.clone()) {
            Ok(embedder) => embedder,
            Err(e) => {
                self.report.checks.push(failed("embeddings", &e, 0));
                return;
            }
        };
        self.report.embedding_model = embedder.model();
        let same_server = config.embeddings.base_url.is_none()
            && config.embeddings.provider != EmbeddingProvider::Offline;
        if let (Some(why), true) = (&self.blocked, same_server) {
            self.report.checks.push(skipped("embeddings", why));
            return;
        }
        let texts = vec!["connection test".to_string(), "连接测试".to_string()];
        let r = embedder.embed(&texts, self.cancel).await;
        let ms = self.since(t0);
        match r {
            Ok(e) => {
                self.report.embeddings_ok = true;
                self.report.embedding_dimension = Some(e.dimension);
                self.report.checks.push(ok(
                    "embeddings",
                    format!("{}: {} dimensions", e.model, e.dimension),
                    ms,
                ));
            }
            Err(e) => self.report.checks.push(failed("embeddings", &e, ms)),
        }
    }
}

/// Tests `config` over `transport`: the model list (reachability, CORS, authentication), a plain
/// chat, a streamed chat, a structured call (which mode works; it is remembered in `learned`), and
/// embeddings. Never fails: every problem is a failed [`ConnectionCheck`] with its error code.
pub async fn test_connection<T: Transport + Clone>(
    config: &Config,
    transport: T,
    learned: Learned,
    cancel: &Cancel,
) -> ConnectionReport {
    let mut run = Run {
        transport: &transport,
        cancel,
        report: empty_report(config.provider, transport.page_origin()),
        blocked: None,
    };
    // Without a model, still list the models so the user can pick one.
    let no_model = config.provider != Provider::Offline && config.model.trim().is_empty();
    let probe_config;
    let config = if no_model {
        probe_config = Config {
            model: "(none)".into(),
            ..config.clone()
        };
        &probe_config
    } else {
        config
    };
    if let Err(e) = config.validate() {
        run.report.checks.push(failed("config", &e, 0));
        return run.report;
    }
    set_urls(&mut run.report, config);
    if config.provider == Provider::Offline {
        for name in ["models", "chat", "stream", "structured"] {
            run.report
                .checks
                .push(skipped(name, "the offline provider has no chat endpoint"));
        }
    } else {
        let llm = match HttpLlm::new(config.clone(), transport.clone()) {
            Ok(l) => l.with_learned(learned),
            Err(e) => {
                run.report.checks.push(failed("config", &e, 0));
                return run.report;
            }
        };
        run.models(&llm, &config.model, no_model).await;
        if no_model && run.blocked.is_none() {
            run.blocked = Some("no model is set: pick one of the listed models".into());
        }
        for (name, stream) in [("chat", false), ("stream", true)] {
            run.chat(&llm, name, stream).await;
        }
        run.structured(&llm, config).await;
    }
    run.embeddings(config).await;
    run.report
}
