//! LLM endpoints: the `Llm` and `Embedder` traits the operations call, and (as they land) the
//! providers (OpenAI-compatible, Ollama, Anthropic), output parsing and the scripted test endpoint.
//!
//! *Invariant:* the operations (compile, query, lint) only see these traits; HTTP lives in the
//! wasm-only transport, so everything runs natively under `cargo test` with a scripted LLM.

use std::cell::Cell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::model::TokenUsage;

/// Which operation a call belongs to (each may use its own model, Decision 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    /// The compile pass (extract, integrate).
    Compile,
    /// Query routing and answering.
    Query,
    /// LLM lint checks.
    Lint,
}

/// Role of a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user turn.
    User,
    /// An earlier assistant turn.
    Assistant,
}

/// One chat message (the system prompt is separate, see [`ChatRequest::system`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What they say.
    pub content: String,
}

/// A structured-output request: the reply must be one JSON value matching `schema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchema {
    /// Schema name (`^[a-zA-Z0-9_-]{1,64}$`), sent as `json_schema.name`; also tells the scripted
    /// test endpoint which task the call is (e.g. `extract`, `integrate`, `route`).
    pub name: String,
    /// JSON Schema (draft 2020-12 subset that OpenAI strict mode accepts).
    pub schema: serde_json::Value,
}

/// A chat completion request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The operation, which selects the model.
    pub purpose: Purpose,
    /// System prompt.
    pub system: String,
    /// The turns, last one from the user.
    pub messages: Vec<Message>,
    /// Ask for JSON matching this schema (structured output with fallbacks).
    pub json: Option<JsonSchema>,
    /// Cap on output tokens; `None` uses the configured default.
    pub max_tokens: Option<u32>,
    /// Sampling temperature; `None` uses the endpoint default.
    pub temperature: Option<f32>,
}

/// Why a completion stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FinishReason {
    /// Natural end (`stop`, `end_turn`, `done_reason: stop`).
    Stop,
    /// Cut by the token limit (`length`, `max_tokens`): surfaced as a Truncated error, never parsed.
    Length,
    /// Anything else the provider reported.
    Other,
}

/// A chat completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The answer text (reasoning removed).
    pub text: String,
    /// Token usage (reported, else estimated and marked so).
    pub usage: TokenUsage,
    /// Why it stopped.
    pub finish: FinishReason,
    /// The model that answered.
    pub model: String,
}

/// Cancellation shared between the caller (e.g. a JS `AbortSignal`) and a running operation.
/// Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Rc<Cell<bool>>);

impl Cancel {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Cancel::default()
    }
    /// Cancels.
    pub fn cancel(&self) {
        self.0.set(true);
    }
    /// True once cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.get()
    }
}

/// Receives streamed answer text as it arrives.
pub type OnToken<'a> = &'a dyn Fn(&str);

/// A chat-completion endpoint.
#[allow(async_fn_in_trait)] // used generically on one thread (the browser's), never as dyn
pub trait Llm {
    /// One chat completion. `on_token`, when given, receives the answer text as it streams.
    /// Errors: [`crate::Error`] LLM variants (truncated, auth, origin not allowed, …) or
    /// [`crate::Error::Cancelled`].
    async fn chat(
        &self,
        request: &ChatRequest,
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> crate::Result<ChatResponse>;
}

/// Embedding vectors for a batch of texts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Embeddings {
    /// Model identifier (vectors of different models never mix).
    pub model: String,
    /// Dimension of every vector.
    pub dimension: usize,
    /// One vector per input, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// Token usage.
    pub usage: TokenUsage,
}

/// An embedding endpoint (or the built-in offline embedding).
#[allow(async_fn_in_trait)] // see `Llm`
pub trait Embedder {
    /// The model id vectors are tagged with.
    fn model(&self) -> String;
    /// Embeds `texts`, one vector each, in order.
    async fn embed(&self, texts: &[String], cancel: &Cancel) -> crate::Result<Embeddings>;
}
