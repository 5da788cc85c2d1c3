//! Routes: which provider endpoint a path names, and the error body each provider writes.

use serde_json::{json, Value};

/// The endpoint a path names (matched on its end, so any prefix works).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
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

/// The route of `path` (fault prefix already removed).
pub(super) fn route(path: &str) -> Route {
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

/// True for the Anthropic route.
pub(super) fn is_anthropic(r: Route) -> bool {
    r == Route::AnthropicMessages
}

/// True for the Ollama routes.
pub(super) fn is_ollama(r: Route) -> bool {
    matches!(
        r,
        Route::OllamaChat | Route::OllamaEmbed | Route::OllamaLegacyEmbeddings | Route::Tags
    )
}

/// A provider-shaped error body.
pub(super) fn error_body(r: Route, status: u16, message: &str) -> Value {
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
