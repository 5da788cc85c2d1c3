//! LLM endpoints: the `Llm` and `Embedder` traits the operations call, the providers
//! (OpenAI-compatible, Ollama, Anthropic) and output parsing.
//!
//! Map: [`config`] (settings, presets) → [`url`] (base-URL normalisation) → [`provider`] (wire
//! shapes, pure) and [`embed`] → [`client`] (retries, structured fallback, streaming; generic over
//! [`transport::Transport`]; what it learns about endpoints in [`learned`]) → `http` (browser
//! `fetch`, wasm only). [`parse`] is the lenient JSON
//! parser, [`stream`] the SSE/NDJSON decoders, [`errors`] the HTTP-error classification,
//! [`structured`] the repair round trip and token budget, [`offline`] the built-in embedding,
//! [`prompt`] the data-block convention, [`connection`] the connection test. The stored
//! configuration is read by the kernel and saved by `crate::settings`. The scripted test endpoint
//! is `crate::scripted` (feature `test-support`).
//!
//! *Invariant:* the operations (compile, query, lint) only see these traits; HTTP lives in the
//! wasm-only transport, so everything runs natively under `cargo test` with the scripted LLM
//! of `crate::scripted`.
//!
//! *Invariant:* no API key leaves this module except in the request header that needs it: it is
//! never serialised, logged, exported, or part of an error message.

pub mod client;
pub mod config;
pub mod connection;
pub mod embed;
pub mod errors;
#[cfg(target_arch = "wasm32")]
pub mod http;
pub mod learned;
pub mod offline;
pub mod parse;
pub mod prompt;
pub mod provider;
pub mod retry;
pub mod stream;
pub mod structured;
pub mod transport;
pub mod url;

use std::cell::{Cell, RefCell};
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
    /// Pictures sent with the text (a user turn only), for endpoints whose model reads images:
    /// OpenAI-compatible `image_url` parts, Anthropic `image` blocks, Ollama `images`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

impl Message {
    /// A user turn of text alone.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
            images: Vec::new(),
        }
    }
    /// An earlier assistant turn.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
            images: Vec::new(),
        }
    }
}

/// A picture in a chat message: its MIME type (`image/png`, `image/jpeg`, `image/webp`,
/// `image/gif`, the types all three providers take) and its bytes in standard base64 (RFC 4648,
/// with padding), the encoding every provider's wire format uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// MIME type.
    pub mime: String,
    /// The bytes, base64.
    pub base64: String,
}

impl Image {
    /// The picture `bytes` of type `mime`.
    pub fn new(mime: &str, bytes: &[u8]) -> Self {
        use base64::Engine;
        Image {
            mime: mime.to_string(),
            base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }
    /// As a `data:` URL (what OpenAI-compatible endpoints take in `image_url.url`).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime, self.base64)
    }
}

/// The picture type `bytes` hold, by their magic bytes (PNG, JPEG, GIF, WebP), whatever the
/// file's name says: providers check the data against the type sent.
pub fn picture_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// What one picture counts for in a prompt's token estimate: about what OpenAI (765 for a
/// 1024 × 1024 picture in high detail) and Anthropic (width × height / 750, at most about 1,600)
/// charge for a picture they scale down, taken at the larger.
pub const IMAGE_TOKENS: u64 = 1_600;

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
/// Clones share the flag and the listeners.
///
/// Besides the flag (polled between steps), listeners registered with [`Cancel::on_cancel`] run
/// once, synchronously, when [`Cancel::cancel`] is called: the fetch transport aborts its
/// `AbortController` that way, and [`Cancel::cancelled`] is a future that resolves then.
#[derive(Clone, Default)]
pub struct Cancel(Rc<CancelState>);

type Listener = Box<dyn FnOnce()>;

#[derive(Default)]
struct CancelState {
    cancelled: Cell<bool>,
    next_id: Cell<u64>,
    listeners: RefCell<Vec<(u64, Listener)>>,
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .field("listeners", &self.0.listeners.borrow().len())
            .finish()
    }
}

impl Cancel {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Cancel::default()
    }
    /// Cancels: sets the flag, then runs (and forgets) every listener. Idempotent.
    pub fn cancel(&self) {
        if self.0.cancelled.replace(true) {
            return;
        }
        let listeners = std::mem::take(&mut *self.0.listeners.borrow_mut());
        for (_, f) in listeners {
            f();
        }
    }
    /// True once cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.get()
    }
    /// `Err(Error::Cancelled)` once cancelled, else `Ok(())`.
    pub fn check(&self) -> crate::Result<()> {
        if self.is_cancelled() {
            Err(crate::Error::Cancelled)
        } else {
            Ok(())
        }
    }
    /// Runs `f` when this token is cancelled (at once if it already is). The listener is removed
    /// when the returned guard drops, so per-request listeners do not pile up.
    pub fn on_cancel(&self, f: impl FnOnce() + 'static) -> CancelListener {
        if self.is_cancelled() {
            f();
            return CancelListener { state: None, id: 0 };
        }
        let id = self.0.next_id.get();
        self.0.next_id.set(id + 1);
        self.0.listeners.borrow_mut().push((id, Box::new(f)));
        CancelListener {
            state: Some(Rc::downgrade(&self.0)),
            id,
        }
    }
    /// A future that resolves when this token is cancelled (never, if it never is).
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            cancel: self.clone(),
            waker: Rc::new(RefCell::new(None)),
            _listener: None,
        }
    }
}

/// Keeps a [`Cancel::on_cancel`] listener registered; dropping it removes the listener.
#[must_use = "the listener is removed when this guard drops"]
pub struct CancelListener {
    state: Option<std::rc::Weak<CancelState>>,
    id: u64,
}

impl Drop for CancelListener {
    fn drop(&mut self) {
        if let Some(state) = self.state.take().and_then(|w| w.upgrade()) {
            // `try_borrow_mut`: a listener may drop its own guard while `cancel` runs it.
            if let Ok(mut listeners) = state.listeners.try_borrow_mut() {
                listeners.retain(|(id, _)| *id != self.id);
            }
        }
    }
}

/// Future returned by [`Cancel::cancelled`].
pub struct Cancelled {
    cancel: Cancel,
    waker: Rc<RefCell<Option<std::task::Waker>>>,
    _listener: Option<CancelListener>,
}

impl std::future::Future for Cancelled {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.cancel.is_cancelled() {
            return std::task::Poll::Ready(());
        }
        *self.waker.borrow_mut() = Some(cx.waker().clone());
        if self._listener.is_none() {
            let waker = self.waker.clone();
            let listener = self.cancel.on_cancel(move || {
                if let Some(w) = waker.borrow_mut().take() {
                    w.wake();
                }
            });
            self._listener = Some(listener);
        }
        std::task::Poll::Pending
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

    /// Whether a structured `request` goes out with the size caps of its schema (`maxItems`,
    /// `maxLength`): false once the endpoint refused them and the client sends the schema
    /// without (issue 21, item 13). [`structured::chat_json`] then holds the reply to the caps
    /// itself. The default: true.
    fn sends_schema_caps(&self, request: &ChatRequest) -> bool {
        let _ = request;
        true
    }
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
