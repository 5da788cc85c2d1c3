//! The crate's error type.
//!
//! Every fallible public function returns [`Result<T>`]. Each variant has a stable, machine-readable
//! [`Error::code`] that reaches JavaScript unchanged as `error.code` (see `src/wasm/interop.rs`), so
//! apps can branch on it without parsing messages. Messages say what went wrong *and* what to do.
//!
//! *Invariant:* no message ever contains an API key or other secret.

use crate::model::Store;

/// ` (this site uses 1.4 MB of its 1.5 MB)`, or what of it is known, for the quota message.
fn quota_figures(usage: Option<u64>, quota: Option<u64>) -> String {
    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1_000_000.0);
    match (usage, quota) {
        (Some(u), Some(q)) => format!(" (this site uses {} of its {})", mb(u), mb(q)),
        (Some(u), None) => format!(" (this site uses {})", mb(u)),
        (None, Some(q)) => format!(" (this site may use {})", mb(q)),
        (None, None) => String::new(),
    }
}

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in llm-wiki.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The browser refused to store more data (IndexedDB `QuotaExceededError`). Nothing of the
    /// failed batch was written. The figures are this origin's, from
    /// `navigator.storage.estimate()` right after the failure, when the browser reports them (they
    /// reach JavaScript as `error.usage` and `error.quota`).
    #[error("storage quota exceeded: nothing was written{}; export a vault to keep a copy, delete wikis you no longer need, or ask for persistent storage (persist())", quota_figures(*usage, *quota))]
    QuotaExceeded {
        /// Bytes this origin uses, if known.
        usage: Option<u64>,
        /// Bytes this origin may use, if known.
        quota: Option<u64>,
    },

    /// Opening the wiki needs a schema upgrade, but another tab (or extension page) still has the
    /// wiki open and did not close it in time.
    #[error("the wiki {name:?} is open in another tab that blocks the upgrade to schema version {version}; close the other tabs and retry")]
    UpgradeBlocked {
        /// Wiki name.
        name: String,
        /// The schema version this build wants.
        version: u32,
    },

    /// The connection was closed because another tab upgraded the schema (IndexedDB
    /// `versionchange`), or the wiki was deleted. Reload the page.
    #[error("the wiki was upgraded or deleted in another tab; reload this page")]
    Closed,

    /// The storage backend is not available (private mode, disabled IndexedDB, no `window`).
    #[error("storage unavailable: {0}")]
    StorageUnavailable(String),

    /// The stored data was written by a newer build of llm-wiki (schema version higher than this
    /// build knows).
    #[error("the wiki was written by a newer version of llm-wiki (schema {found}, this build knows {known}); update the app")]
    SchemaTooNew {
        /// Version found on disk.
        found: u32,
        /// Newest version this build knows.
        known: u32,
    },

    /// A write expected a record at one revision but found another (optimistic concurrency): another
    /// writer got there first. Nothing of the batch was written; re-read and retry.
    #[error(
        "conflict in {store:?}/{key}: expected {expected}, found {found}; nothing was written"
    )]
    Conflict {
        /// The store of the conflicting record.
        store: Store,
        /// The record key.
        key: String,
        /// What the batch expected (`absent` or `rev N`).
        expected: String,
        /// What was stored (`absent` or `rev N`).
        found: String,
    },

    /// Any other storage failure, with the backend's message. Nothing of the batch was written.
    #[error("storage error: {0}")]
    Storage(String),

    /// A file of a mirrored folder could not be listed, read, written or removed (no permission,
    /// the folder was moved or deleted, the disk is full), with the browser's message. What the
    /// wiki holds is unchanged; the mirror catches up on its next run.
    #[error("folder {path:?}: {message}")]
    Folder {
        /// The path inside the folder.
        path: String,
        /// What failed.
        message: String,
    },

    /// A fault injected by a test (see [`crate::storage::FaultInjection`]).
    #[error("injected fault: {0}")]
    InjectedFault(String),

    /// A stored record could not be decoded.
    #[error("corrupt record {store:?}/{key}: {message}")]
    Corrupt {
        /// The store.
        store: Store,
        /// The record key.
        key: String,
        /// The decoder's message.
        message: String,
    },

    /// The caller passed something invalid (bad name, empty title, wrong shape).
    #[error("invalid input: {0}")]
    InvalidInput(String),

    /// `addSource` got a MIME type the core does not read. HTML and PDF are converted to markdown in
    /// the JS layer first (Decision 2).
    #[error("unsupported source type {0:?}: the core reads text/markdown and text/plain; convert HTML or PDF to markdown in the JS layer first")]
    UnsupportedMime(String),

    /// No wiki, source or page with that name or key.
    #[error("not found: {0}")]
    NotFound(String),

    /// `saveAnswer` got an answer that rests on no page (`grounded: false`: declined, or no
    /// valid citation): it is not written to the wiki.
    #[error("ungrounded answer: {0}")]
    Ungrounded(String),

    /// The operation was cancelled by the caller (an `AbortSignal`).
    #[error("cancelled")]
    Cancelled,

    // ------------------------------------------------------------------ LLM endpoints
    /// The LLM settings cannot work as they are (no model, a base URL that is not http(s), the
    /// offline provider asked for a chat completion). Fix the settings; nothing was sent.
    #[error("LLM settings: {0}")]
    LlmConfig(String),

    /// The endpoint refused the credentials (HTTP 401 or 403).
    #[error("the LLM endpoint refused the API key (HTTP {status}{}); check the API key in the settings", provider_suffix(.message))]
    LlmAuth {
        /// HTTP status.
        status: u16,
        /// The provider's message (secrets removed).
        message: String,
    },

    /// The browser blocked the response because the server does not allow this page's origin
    /// (CORS), while the server itself is reachable (a `no-cors` probe succeeded; field case F06).
    #[error("the LLM server at {url} is running but does not allow requests from this page's origin {origin}: {hint}")]
    LlmOriginNotAllowed {
        /// The page origin to allow, exactly (`self.location.origin`).
        origin: String,
        /// The URL that was refused.
        url: String,
        /// What to change, e.g. `set OLLAMA_ORIGINS=<origin> …`.
        hint: String,
    },

    /// Nothing answered at the endpoint (connection refused, DNS, TLS, blocked by the browser
    /// before reaching a server).
    #[error("cannot reach the LLM endpoint {url} ({detail}); check that the server is running and the base URL is right")]
    LlmUnreachable {
        /// The URL that was tried.
        url: String,
        /// What the browser reported.
        detail: String,
    },

    /// The endpoint did not start answering within `timeoutMs` (plus the allowance for a long
    /// prompt), or a reply that started went silent for `idleTimeoutMs` (field case F37); the
    /// request was aborted.
    #[error("the LLM endpoint {url} sent nothing for {ms} ms; for slow local models raise timeoutMs (the wait for a reply to start) or idleTimeoutMs (the longest pause in a stream), or check the server")]
    LlmTimeout {
        /// The URL.
        url: String,
        /// The timeout that elapsed, in milliseconds.
        ms: u64,
    },

    /// An HTML page came back instead of an API response: the base URL points at a web page
    /// (a login page, a web UI, a proxy's error page), not an LLM API.
    #[error("{url} answered with a web page (HTTP {status}), not an LLM API{}; check the base URL (it usually ends in /v1 for OpenAI-compatible servers)", page_text_suffix(.text))]
    LlmNotAnEndpoint {
        /// The URL.
        url: String,
        /// HTTP status.
        status: u16,
        /// The start of the page's visible text (title and body, tags and scripts removed,
        /// whitespace collapsed, at most about 200 characters), so the user sees whose page it
        /// is (a proxy's 502 page, a login page); empty when the page shows none.
        text: String,
    },

    /// The prompt (plus the requested output) does not fit the model's context window.
    #[error("the prompt does not fit the model's context window ({message}); use a model with a larger context, raise contextWindow if the model allows it, or shorten the input")]
    LlmContextOverflow {
        /// The provider's message, or the local estimate.
        message: String,
    },

    /// The reply was cut off by the output-token limit (finish_reason `length`, stop_reason
    /// `max_tokens`, done_reason `length`; field case F03). Nothing was parsed or written;
    /// brackets are never closed automatically.
    #[error("the model's reply was cut off at the output-token limit ({reason}{}); raise maxOutputTokens, or use a model that writes shorter output", max_tokens_suffix(*.max_tokens))]
    LlmTruncated {
        /// The provider's word for it (`length`, `max_tokens`).
        reason: String,
        /// The output-token limit the request had, if known.
        max_tokens: Option<u32>,
    },

    /// Rate limited or overloaded (HTTP 429, 503, 529), still after the bounded retries.
    #[error("the LLM endpoint is rate limited or overloaded (HTTP {status}{}) after {attempts} attempt(s){}; wait and retry, or lower the request rate", provider_suffix(.message), retry_suffix(*.retry_after_ms))]
    LlmRateLimited {
        /// HTTP status of the last answer.
        status: u16,
        /// The last `Retry-After` the server gave, in milliseconds.
        retry_after_ms: Option<u64>,
        /// Requests made.
        attempts: u32,
        /// The provider's message.
        message: String,
    },

    /// The model returned no answer text (field case F02c/d): `detail` names what came back
    /// instead (e.g. only `reasoning_content`).
    #[error("the model returned an empty answer: {detail}")]
    LlmEmptyCompletion {
        /// What came back instead, in words.
        detail: String,
    },

    /// The endpoint rejected the request as invalid (HTTP 400, 404, 405, 422…): a configuration
    /// problem such as a wrong model name, a wrong base URL or an organisation setting (field case
    /// F07). Not retried.
    #[error("the LLM endpoint rejected the request (HTTP {status}{}); {hint}", provider_suffix(.message))]
    LlmRejected {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// What to check.
        hint: String,
    },

    /// The endpoint failed (HTTP 5xx other than overload), with the provider's message.
    #[error("the LLM server failed (HTTP {status}{}); retry later or check the server's log", provider_suffix(.message))]
    LlmServer {
        /// HTTP status.
        status: u16,
        /// The provider's message (`error.message`, an `error` string, or `message`).
        message: String,
    },

    /// The response did not have the provider's shape (not JSON, missing fields, an empty
    /// embedding vector).
    #[error("unexpected response from the LLM endpoint: {0}")]
    LlmBadResponse(String),

    /// The model's structured output could not be parsed or did not match the expected shape, also
    /// after one repair round trip.
    #[error("the model's output is not the expected JSON ({0}); try a larger or instruction-tuned model")]
    LlmBadOutput(String),

    /// A call would exceed the operation's token budget (Decision 12).
    #[error("token budget exceeded: this operation may use {budget} tokens, {used} used, the next call needs about {needed}; raise the budget in the settings")]
    LlmBudgetExceeded {
        /// The operation's budget.
        budget: u64,
        /// Tokens used so far.
        used: u64,
        /// Estimated tokens of the refused call.
        needed: u64,
    },
}

fn provider_suffix(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

fn page_text_suffix(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(" (the page says: \"{text}\")")
    }
}

fn max_tokens_suffix(max_tokens: Option<u32>) -> String {
    max_tokens.map_or(String::new(), |m| format!(", limit {m} tokens"))
}

fn retry_suffix(retry_after_ms: Option<u64>) -> String {
    retry_after_ms.map_or(String::new(), |ms| {
        format!("; the server asked to wait {} s", ms.div_ceil(1000))
    })
}

impl Error {
    /// A stable, machine-readable code, in `SCREAMING_SNAKE_CASE`, one per variant.
    pub fn code(&self) -> &'static str {
        match self {
            Error::QuotaExceeded { .. } => "QUOTA_EXCEEDED",
            Error::UpgradeBlocked { .. } => "UPGRADE_BLOCKED",
            Error::Closed => "CLOSED",
            Error::StorageUnavailable(_) => "STORAGE_UNAVAILABLE",
            Error::SchemaTooNew { .. } => "SCHEMA_TOO_NEW",
            Error::Conflict { .. } => "CONFLICT",
            Error::Storage(_) => "STORAGE",
            Error::Folder { .. } => "FOLDER",
            Error::InjectedFault(_) => "INJECTED_FAULT",
            Error::Corrupt { .. } => "CORRUPT",
            Error::InvalidInput(_) => "INVALID_INPUT",
            Error::UnsupportedMime(_) => "UNSUPPORTED_MIME",
            Error::NotFound(_) => "NOT_FOUND",
            Error::Ungrounded(_) => "UNGROUNDED",
            Error::Cancelled => "CANCELLED",
            Error::LlmConfig(_) => "LLM_CONFIG",
            Error::LlmAuth { .. } => "LLM_AUTH",
            Error::LlmOriginNotAllowed { .. } => "LLM_ORIGIN_NOT_ALLOWED",
            Error::LlmUnreachable { .. } => "LLM_UNREACHABLE",
            Error::LlmTimeout { .. } => "LLM_TIMEOUT",
            Error::LlmNotAnEndpoint { .. } => "LLM_NOT_AN_ENDPOINT",
            Error::LlmContextOverflow { .. } => "LLM_CONTEXT_OVERFLOW",
            Error::LlmTruncated { .. } => "LLM_TRUNCATED",
            Error::LlmRateLimited { .. } => "LLM_RATE_LIMITED",
            Error::LlmEmptyCompletion { .. } => "LLM_EMPTY_COMPLETION",
            Error::LlmRejected { .. } => "LLM_REJECTED",
            Error::LlmServer { .. } => "LLM_SERVER",
            Error::LlmBadResponse(_) => "LLM_BAD_RESPONSE",
            Error::LlmBadOutput(_) => "LLM_BAD_OUTPUT",
            Error::LlmBudgetExceeded { .. } => "LLM_BUDGET_EXCEEDED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct() {
        let all = [
            Error::QuotaExceeded {
                usage: None,
                quota: None,
            },
            Error::UpgradeBlocked {
                name: "w".into(),
                version: 2,
            },
            Error::Closed,
            Error::StorageUnavailable("x".into()),
            Error::SchemaTooNew { found: 9, known: 2 },
            Error::Conflict {
                store: Store::Pages,
                key: "k".into(),
                expected: "absent".into(),
                found: "rev 1".into(),
            },
            Error::Storage("x".into()),
            Error::InjectedFault("x".into()),
            Error::Folder {
                path: "p".into(),
                message: "m".into(),
            },
            Error::Corrupt {
                store: Store::Pages,
                key: "k".into(),
                message: "m".into(),
            },
            Error::InvalidInput("x".into()),
            Error::UnsupportedMime("text/html".into()),
            Error::NotFound("x".into()),
            Error::Ungrounded("x".into()),
            Error::Cancelled,
            Error::LlmConfig("x".into()),
            Error::LlmAuth {
                status: 401,
                message: "m".into(),
            },
            Error::LlmOriginNotAllowed {
                origin: "o".into(),
                url: "u".into(),
                hint: "h".into(),
            },
            Error::LlmUnreachable {
                url: "u".into(),
                detail: "d".into(),
            },
            Error::LlmTimeout {
                url: "u".into(),
                ms: 1,
            },
            Error::LlmNotAnEndpoint {
                url: "u".into(),
                status: 200,
                text: String::new(),
            },
            Error::LlmContextOverflow {
                message: "m".into(),
            },
            Error::LlmTruncated {
                reason: "length".into(),
                max_tokens: Some(5),
            },
            Error::LlmRateLimited {
                status: 429,
                retry_after_ms: Some(1000),
                attempts: 3,
                message: "m".into(),
            },
            Error::LlmEmptyCompletion { detail: "d".into() },
            Error::LlmRejected {
                status: 400,
                message: "m".into(),
                hint: "h".into(),
            },
            Error::LlmServer {
                status: 500,
                message: "m".into(),
            },
            Error::LlmBadResponse("x".into()),
            Error::LlmBadOutput("x".into()),
            Error::LlmBudgetExceeded {
                budget: 1,
                used: 1,
                needed: 1,
            },
        ];
        let mut codes: Vec<_> = all.iter().map(Error::code).collect();
        crate::util::sort(&mut codes);
        codes.dedup();
        assert_eq!(codes.len(), all.len());
    }
}
