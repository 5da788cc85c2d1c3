//! LLM endpoint configuration: provider, URLs, models (per operation), limits, embeddings, and the
//! presets the settings screen offers.
//!
//! *Invariant:* secrets (the API keys and sensitive extra headers) are `skip_serializing`: a
//! [`Config`] serialised anywhere — storage's `config` record, a vault export, `config()` in JS,
//! a log line — never contains them. They are stored apart (see `crate::settings`) and only
//! [`HttpRequest`](crate::llm::transport::HttpRequest) building reads them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::llm::retry::RetryPolicy;
use crate::llm::Purpose;
use crate::text::TokenEstimator;

/// Which protocol the chat endpoint speaks (Decision 11: an enum, the core is generic, not `dyn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub enum Provider {
    /// `POST <root>/chat/completions` (OpenAI, Ollama's `/v1`, LM Studio, llama.cpp server,
    /// vLLM, most gateways).
    #[serde(rename = "openai-compatible")]
    OpenAiCompatible,
    /// Ollama's native API (`/api/chat`, NDJSON streaming, `options.num_ctx` set from
    /// [`Config::context_window`]).
    #[serde(rename = "ollama")]
    Ollama,
    /// Anthropic Messages (`POST <root>/messages`, with the browser-access header).
    #[serde(rename = "anthropic")]
    Anthropic,
    /// No chat endpoint: only the built-in offline embedding works.
    #[default]
    #[serde(rename = "offline")]
    Offline,
}

impl Provider {
    /// The serialised name (`openai-compatible`, `ollama`, `anthropic`, `offline`).
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAiCompatible => "openai-compatible",
            Provider::Ollama => "ollama",
            Provider::Anthropic => "anthropic",
            Provider::Offline => "offline",
        }
    }
}

/// Which embedding API to call (field case F14), or the built-in offline embedding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub enum EmbeddingProvider {
    /// Built-in hashed word and character n-gram vectors (`offline-hash-v1`), no endpoint.
    #[default]
    #[serde(rename = "offline")]
    Offline,
    /// OpenAI-style `POST <root>/embeddings` with `input: [...]`, answer `data[].embedding`
    /// matched by `data[].index`.
    #[serde(rename = "openai")]
    OpenAi,
    /// Ollama `POST /api/embed` with `input: [...]`, answer `embeddings: [[...]]`.
    #[serde(rename = "ollama")]
    Ollama,
    /// Ollama's legacy `POST /api/embeddings`, one `prompt` per request, answer `embedding`.
    #[serde(rename = "ollama-legacy")]
    OllamaLegacy,
}

/// A secret string (an API key). `Debug` prints `***`; it has no `Display` and no `Serialize`, so
/// it cannot end up in a message or a record by accident.
#[derive(Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    /// The secret value, for building a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.0.trim().is_empty()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Per-operation overrides (Decision 12: the model can differ per operation, each operation has a
/// token budget). `None` uses the top-level value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct PurposeSettings {
    /// Model for this operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Output-token cap per call for this operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Token budget (input + output, all calls) of one operation of this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
}

/// Embedding settings, independent of the chat endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct EmbeddingConfig {
    /// Which API (default: the built-in offline embedding).
    #[serde(default)]
    pub provider: EmbeddingProvider,
    /// Base URL; `None` uses the chat endpoint's base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Model name (ignored by the offline embedding).
    #[serde(default)]
    pub model: String,
    /// API key; `None` uses the chat endpoint's key. Never serialised.
    #[serde(default, skip_serializing)]
    #[cfg_attr(target_arch = "wasm32", tsify(type = "string", optional))]
    pub api_key: Option<Secret>,
    /// The embedding model's input limit in tokens. Longer texts are split into chunks of at
    /// most 80 % of this (estimated, Decision 12), embedded, and mean-pooled. Range 64..=1 000 000;
    /// default 2048 (nomic-embed-text's default context in Ollama).
    #[serde(default = "default_embed_input")]
    pub max_input_tokens: u32,
    /// Texts per request. Range 1..=2048; default 32.
    #[serde(default = "default_batch")]
    pub batch_size: u32,
}

fn default_embed_input() -> u32 {
    2048
}
fn default_batch() -> u32 {
    32
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        EmbeddingConfig {
            provider: EmbeddingProvider::Offline,
            base_url: None,
            model: String::new(),
            api_key: None,
            max_input_tokens: default_embed_input(),
            batch_size: default_batch(),
        }
    }
}

/// The LLM configuration of one wiki (stored in its `meta/config` record, secrets apart).
///
/// Numbers are tokens unless named otherwise. Defaults: `contextWindow` 8192,
/// `maxOutputTokens` 2048, `timeoutMs` 120 000, `tokenBudget` 200 000.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Config {
    /// The preset this configuration started from (`openai`, `ollama`, …), for display only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The protocol.
    #[serde(default)]
    pub provider: Provider,
    /// Base URL as the user entered it (normalised when used, see `llm::url`).
    #[serde(default)]
    pub base_url: String,
    /// The default model.
    #[serde(default)]
    pub model: String,
    /// API key (`Authorization: Bearer …`, or `x-api-key` for Anthropic). Never serialised.
    #[serde(default, skip_serializing)]
    #[cfg_attr(target_arch = "wasm32", tsify(type = "string", optional))]
    pub api_key: Option<Secret>,
    /// Extra request headers (non-secret). Headers whose name looks secret (`authorization`,
    /// `cookie`, or containing `key`, `token`, `secret`, `auth`) are moved to
    /// [`Config::secret_headers`] by [`Config::normalize`].
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", tsify(type = "Record<string, string>"))]
    pub headers: BTreeMap<String, String>,
    /// Extra headers that carry credentials. Never serialised.
    #[serde(default, skip_serializing)]
    #[cfg_attr(
        target_arch = "wasm32",
        tsify(type = "Record<string, string>", optional)
    )]
    pub secret_headers: BTreeMap<String, Secret>,
    /// The model's context window. Range 256..=10 000 000; default 8192. Prompts estimated above
    /// 1.25× it are refused before sending; one estimated above it that the server counts below
    /// 0.8× the estimate was cut by the server and fails with `LLM_CONTEXT_OVERFLOW`
    /// (`llm::client::server_truncation`). For the Ollama provider it is sent as
    /// `options.num_ctx`.
    #[serde(default = "default_context")]
    pub context_window: u32,
    /// Output-token cap per call. Range 1..=context window; default 2048.
    #[serde(default = "default_max_output")]
    pub max_output_tokens: u32,
    /// Milliseconds to wait for a response to start (its headers, then its first byte), plus
    /// [`START_MS_PER_PROMPT_TOKEN`] per estimated prompt token (a model on CPU reads a long
    /// prompt for minutes before its first token), up to [`START_MS_CAP`] in all. Range
    /// 1000..=3 600 000; default 120 000.
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
    /// Milliseconds a response that started may go without a byte before it fails with
    /// `LLM_TIMEOUT` and is aborted (a stalled stream); a stream that keeps producing is never
    /// cut. Range 1000..=3 600 000; default 60 000. Absent in settings stored before it existed.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_ms: u64,
    /// Token budget (input + output of all calls) of one operation. Range 1..; default 200 000.
    #[serde(default = "default_budget")]
    pub token_budget: u64,
    /// Overrides for the compile operation.
    #[serde(default)]
    pub compile: PurposeSettings,
    /// Overrides for queries.
    #[serde(default)]
    pub query: PurposeSettings,
    /// Overrides for lint.
    #[serde(default)]
    pub lint: PurposeSettings,
    /// Embeddings (default: the built-in offline embedding).
    #[serde(default)]
    pub embeddings: EmbeddingConfig,
    /// Token estimates used until a response reports usage (Decision 12).
    #[serde(default)]
    #[cfg_attr(
        target_arch = "wasm32",
        tsify(type = "{ cjkTokensPerChar: number; charsPerToken: number }", optional)
    )]
    pub estimator: TokenEstimator,
    /// Retries on rate limits and overload.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Describe pictures with the compile model before a source that shows them is compiled
    /// (opt-in, default off: the pictures are sent to the endpoint, and its model must read
    /// images: OpenAI-compatible vision models, Anthropic, Ollama's vision models). The
    /// descriptions are kept with the attachments; claims drawn from them are never verified.
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub describe_images: bool,
}

fn default_context() -> u32 {
    8192
}
fn default_max_output() -> u32 {
    2048
}
fn default_timeout() -> u64 {
    120_000
}
fn default_idle_timeout() -> u64 {
    60_000
}

/// Milliseconds of start wait added per estimated prompt token (20 tokens a second: a small
/// model's prompt processing on two CPU cores).
pub const START_MS_PER_PROMPT_TOKEN: u64 = 50;

/// The most the per-token allowance lets a start wait grow to (30 minutes; a `timeoutMs` above
/// it is kept as set): a hung endpoint sent a very long prompt is given up within that.
pub const START_MS_CAP: u64 = 1_800_000;

impl Config {
    /// The timeouts of a request whose prompt is estimated at `prompt_tokens`.
    pub fn timeouts(&self, prompt_tokens: u64) -> crate::llm::transport::Timeouts {
        crate::llm::transport::Timeouts {
            start_ms: self
                .timeout_ms
                .saturating_add(prompt_tokens.saturating_mul(START_MS_PER_PROMPT_TOKEN))
                .min(self.timeout_ms.max(START_MS_CAP)),
            idle_ms: self.idle_timeout_ms,
        }
    }
}

fn default_budget() -> u64 {
    200_000
}

impl Default for Config {
    fn default() -> Self {
        Config {
            preset: Some("offline".into()),
            provider: Provider::Offline,
            base_url: String::new(),
            model: String::new(),
            api_key: None,
            headers: BTreeMap::new(),
            secret_headers: BTreeMap::new(),
            context_window: default_context(),
            max_output_tokens: default_max_output(),
            timeout_ms: default_timeout(),
            idle_timeout_ms: default_idle_timeout(),
            token_budget: default_budget(),
            compile: PurposeSettings::default(),
            query: PurposeSettings::default(),
            lint: PurposeSettings::default(),
            embeddings: EmbeddingConfig::default(),
            estimator: TokenEstimator::default(),
            retry: RetryPolicy::default(),
            describe_images: false,
        }
    }
}

/// The settings that apply to one call, after per-operation overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The model.
    pub model: String,
    /// Output-token cap.
    pub max_output_tokens: u32,
    /// The operation's token budget.
    pub token_budget: u64,
}

/// True for a header name that carries credentials.
pub fn is_sensitive_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "authorization"
        || n == "cookie"
        || n == "proxy-authorization"
        || ["key", "token", "secret", "auth", "password"]
            .iter()
            .any(|w| n.contains(w))
}

fn valid_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl Config {
    /// The settings for a call of `purpose`.
    pub fn resolve(&self, purpose: Purpose) -> Resolved {
        let o = match purpose {
            Purpose::Compile => &self.compile,
            Purpose::Query => &self.query,
            Purpose::Lint => &self.lint,
        };
        Resolved {
            model: o
                .model
                .clone()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or_else(|| self.model.clone()),
            max_output_tokens: o.max_output_tokens.unwrap_or(self.max_output_tokens),
            token_budget: o.token_budget.unwrap_or(self.token_budget),
        }
    }

    /// Cleans user input: trims strings, drops empty secrets, and moves extra headers whose name
    /// looks secret into [`Config::secret_headers`].
    pub fn normalize(&mut self) {
        self.base_url = self.base_url.trim().to_string();
        self.model = self.model.trim().to_string();
        if self.api_key.as_ref().is_some_and(Secret::is_empty) {
            self.api_key = None;
        }
        if self
            .embeddings
            .api_key
            .as_ref()
            .is_some_and(Secret::is_empty)
        {
            self.embeddings.api_key = None;
        }
        self.embeddings.model = self.embeddings.model.trim().to_string();
        if let Some(b) = &self.embeddings.base_url {
            let b = b.trim();
            self.embeddings.base_url = (!b.is_empty()).then(|| b.to_string());
        }
        let headers = std::mem::take(&mut self.headers);
        for (name, value) in headers {
            let name = name.trim().to_string();
            if is_sensitive_header(&name) {
                self.secret_headers.insert(name, Secret::new(value.trim()));
            } else {
                self.headers.insert(name, value.trim().to_string());
            }
        }
        self.secret_headers.retain(|_, v| !v.is_empty());
    }

    /// Checks ranges and required fields.
    ///
    /// Errors: [`Error::LlmConfig`] naming the field and the allowed range.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::LlmConfig(m));
        if self.provider != Provider::Offline {
            crate::llm::url::chat_endpoints(self.provider, &self.base_url)?;
            if self.model.trim().is_empty() {
                return bad("no model is set: enter the model name (the connection test lists the models the server has)".into());
            }
        }
        if !(256..=10_000_000).contains(&self.context_window) {
            return bad(format!(
                "contextWindow must be 256..=10000000 tokens, not {}",
                self.context_window
            ));
        }
        for (what, v) in [
            ("maxOutputTokens", Some(self.max_output_tokens)),
            ("compile.maxOutputTokens", self.compile.max_output_tokens),
            ("query.maxOutputTokens", self.query.max_output_tokens),
            ("lint.maxOutputTokens", self.lint.max_output_tokens),
        ] {
            if let Some(v) = v {
                if v == 0 || v > self.context_window {
                    return bad(format!(
                        "{what} must be 1..={} (the context window), not {v}",
                        self.context_window
                    ));
                }
            }
        }
        if !(1000..=3_600_000).contains(&self.timeout_ms) {
            return bad(format!(
                "timeoutMs must be 1000..=3600000, not {}",
                self.timeout_ms
            ));
        }
        if !(1000..=3_600_000).contains(&self.idle_timeout_ms) {
            return bad(format!(
                "idleTimeoutMs must be 1000..=3600000, not {}",
                self.idle_timeout_ms
            ));
        }
        for (what, v) in [
            ("tokenBudget", Some(self.token_budget)),
            ("compile.tokenBudget", self.compile.token_budget),
            ("query.tokenBudget", self.query.token_budget),
            ("lint.tokenBudget", self.lint.token_budget),
        ] {
            if v == Some(0) {
                return bad(format!("{what} must be at least 1"));
            }
        }
        for name in self.headers.keys().chain(self.secret_headers.keys()) {
            if !valid_header_name(name) {
                return bad(format!("{name:?} is not a valid HTTP header name"));
            }
        }
        let e = &self.embeddings;
        if e.provider != EmbeddingProvider::Offline {
            let base = e.base_url.as_deref().unwrap_or(&self.base_url);
            crate::llm::url::embeddings_url(e.provider, base)?;
            if e.model.trim().is_empty() {
                return bad("no embedding model is set".into());
            }
        }
        if !(64..=1_000_000).contains(&e.max_input_tokens) {
            return bad(format!(
                "embeddings.maxInputTokens must be 64..=1000000, not {}",
                e.max_input_tokens
            ));
        }
        if !(1..=2048).contains(&e.batch_size) {
            return bad(format!(
                "embeddings.batchSize must be 1..=2048, not {}",
                e.batch_size
            ));
        }
        let est = &self.estimator;
        if !(0.1..=4.0).contains(&est.cjk_tokens_per_char)
            || !(1.0..=8.0).contains(&est.chars_per_token)
        {
            return bad(
                "estimator: cjkTokensPerChar must be 0.1..=4 and charsPerToken 1..=8".into(),
            );
        }
        self.retry.validate()
    }

    /// A copy without any secret (API keys, secret headers): what exports and logs may hold.
    /// (Serialising a `Config` already omits them; this also clears them in memory.)
    pub fn without_secrets(&self) -> Config {
        let mut c = self.clone();
        c.api_key = None;
        c.secret_headers.clear();
        c.embeddings.api_key = None;
        c
    }

    /// Every secret value in this configuration (to scrub from messages).
    pub fn secrets(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .api_key
            .iter()
            .chain(self.embeddings.api_key.iter())
            .chain(self.secret_headers.values())
            .map(|s| s.expose().to_string())
            .filter(|s| !s.trim().is_empty())
            .collect();
        crate::util::sort_dedup(&mut v);
        v
    }
}

/// A starting point for the settings screen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Preset {
    /// Stable id (`openai`, `ollama`, `ollama-native`, `lm-studio`, `llama-cpp`, `vllm`,
    /// `anthropic`, `offline`).
    pub id: String,
    /// Display name.
    pub label: String,
    /// Whether the user must enter an API key.
    pub needs_api_key: bool,
    /// One or two sentences for the settings screen (CORS recipe, where to find the key).
    pub notes: String,
    /// The configuration this preset sets (the model may be empty: pick one from the connection
    /// test's model list).
    pub config: Config,
}

/// The presets, as data (a JSON table is far smaller in wasm than the same structs built in code).
const PRESETS: &str = r#"[
{"id": "openai", "label": "OpenAI", "needsApiKey": true,
 "notes": "Needs an API key from platform.openai.com. The key stays in this browser and is never exported.",
 "config": {"preset": "openai", "provider": "openai-compatible", "baseUrl": "https://api.openai.com/v1",
            "model": "gpt-4o-mini", "contextWindow": 128000,
            "embeddings": {"provider": "openai", "model": "text-embedding-3-small", "maxInputTokens": 8191}}},
{"id": "ollama", "label": "Ollama", "needsApiKey": false,
 "notes": "Runs locally. Ollama refuses web pages and extensions until their origin is listed: start it with OLLAMA_ORIGINS set to this page's origin (the connection test shows the exact value). Pull the models first (ollama pull …).",
 "config": {"preset": "ollama", "provider": "openai-compatible", "baseUrl": "http://localhost:11434", "model": "llama3.2",
            "embeddings": {"provider": "ollama", "model": "nomic-embed-text"}}},
{"id": "ollama-native", "label": "Ollama (native API)", "needsApiKey": false,
 "notes": "Ollama's own API: it is sent the context window as num_ctx, so long sources are not silently cut. Ollama refuses web pages and extensions until their origin is listed in OLLAMA_ORIGINS (the connection test shows the exact value).",
 "config": {"preset": "ollama-native", "provider": "ollama", "baseUrl": "http://localhost:11434", "model": "llama3.2",
            "embeddings": {"provider": "ollama", "model": "nomic-embed-text"}}},
{"id": "lm-studio", "label": "LM Studio", "needsApiKey": false,
 "notes": "Start the local server in LM Studio's Developer tab and enable CORS there; pick a model from the connection test's list.",
 "config": {"preset": "lm-studio", "provider": "openai-compatible", "baseUrl": "http://localhost:1234/v1", "model": "",
            "embeddings": {"provider": "openai", "model": ""}}},
{"id": "llama-cpp", "label": "llama.cpp server", "needsApiKey": false,
 "notes": "llama-server (default port 8080) or llama-cpp-python (python -m llama_cpp.server, port 8000; see scripts/real-model.sh). Embeddings need the server started with --embedding.",
 "config": {"preset": "llama-cpp", "provider": "openai-compatible", "baseUrl": "http://localhost:8080/v1", "model": ""}},
{"id": "vllm", "label": "vLLM", "needsApiKey": false,
 "notes": "vllm serve <model> listens on port 8000; allow this page with --allowed-origins.",
 "config": {"preset": "vllm", "provider": "openai-compatible", "baseUrl": "http://localhost:8000/v1", "model": ""}},
{"id": "anthropic", "label": "Anthropic", "needsApiKey": true,
 "notes": "Needs an API key from console.anthropic.com; llm-wiki sends the browser-access header. Anthropic has no embedding API: embeddings stay offline unless you configure another endpoint.",
 "config": {"preset": "anthropic", "provider": "anthropic", "baseUrl": "https://api.anthropic.com",
            "model": "claude-3-5-haiku-latest", "contextWindow": 200000, "maxOutputTokens": 4096}},
{"id": "offline", "label": "Offline (no LLM)", "needsApiKey": false,
 "notes": "No endpoint: sources are stored and searchable with the built-in embedding; nothing is compiled.",
 "config": {"preset": "offline", "provider": "offline"}}
]"#;

/// The presets: OpenAI, Ollama (OpenAI-compatible `/v1`), Ollama native API, LM Studio,
/// llama.cpp server, vLLM, Anthropic, and offline. Fields a preset leaves out have the
/// [`Config`] defaults.
pub fn presets() -> Vec<Preset> {
    serde_json::from_slice(PRESETS.as_bytes()).expect("the preset table is valid (tested)")
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_start_wait_grows_with_the_prompt_up_to_its_cap() {
        let c = Config::default();
        assert_eq!(c.timeouts(0).start_ms, 120_000);
        assert_eq!(c.timeouts(1_000).start_ms, 170_000);
        // A 100k-token prompt to a hung endpoint is given up after 30 minutes, not 85.
        assert_eq!(c.timeouts(100_000).start_ms, START_MS_CAP);
        let long = Config {
            timeout_ms: 3_600_000,
            ..Config::default()
        };
        assert_eq!(
            long.timeouts(100_000).start_ms,
            3_600_000,
            "a longer setting is kept"
        );
        assert_eq!(c.timeouts(100_000).idle_ms, c.idle_timeout_ms);
    }

    use super::*;

    #[test]
    fn secrets_never_serialise() {
        let mut c = Config {
            provider: Provider::OpenAiCompatible,
            base_url: "http://localhost:1234/v1".into(),
            model: "m".into(),
            api_key: Some(Secret::new("sk-SECRET-123456")),
            ..Config::default()
        };
        c.headers
            .insert("X-Api-Key".into(), "hdr-SECRET-999".into());
        c.headers.insert("X-Title".into(), "llm-wiki".into());
        c.embeddings.api_key = Some(Secret::new("emb-SECRET-555"));
        c.normalize();
        assert!(c.secret_headers.contains_key("X-Api-Key"));
        let json = serde_json::to_string(&c).unwrap();
        for s in ["sk-SECRET", "hdr-SECRET", "emb-SECRET"] {
            assert!(!json.contains(s), "{s} leaked into {json}");
            assert!(!format!("{c:?}").contains(s), "{s} leaked into Debug");
        }
        assert!(json.contains("X-Title"));
        assert_eq!(c.secrets().len(), 3);
        assert!(c.without_secrets().secrets().is_empty());
        // Deserialising reads the key (it comes from the user or the secrets record).
        let back: Config =
            serde_json::from_str(r#"{"provider":"anthropic","apiKey":"sk-ant-TEST"}"#).unwrap();
        assert_eq!(back.api_key.unwrap().expose(), "sk-ant-TEST");
    }

    #[test]
    fn per_purpose_overrides() {
        let c = Config {
            model: "big".into(),
            query: PurposeSettings {
                model: Some("small".into()),
                token_budget: Some(5000),
                ..Default::default()
            },
            ..Config::default()
        };
        assert_eq!(c.resolve(Purpose::Query).model, "small");
        assert_eq!(c.resolve(Purpose::Query).token_budget, 5000);
        assert_eq!(c.resolve(Purpose::Compile).model, "big");
        assert_eq!(c.resolve(Purpose::Lint).max_output_tokens, 2048);
    }

    #[test]
    fn validation() {
        let ok = Config {
            provider: Provider::OpenAiCompatible,
            base_url: "http://localhost:1234/v1".into(),
            model: "m".into(),
            ..Config::default()
        };
        ok.validate().unwrap();
        Config::default().validate().unwrap();
        let cases = [
            Config {
                model: "".into(),
                ..ok.clone()
            },
            Config {
                base_url: "ftp://x".into(),
                ..ok.clone()
            },
            Config {
                max_output_tokens: 0,
                ..ok.clone()
            },
            Config {
                context_window: 100,
                ..ok.clone()
            },
            Config {
                timeout_ms: 10,
                ..ok.clone()
            },
            Config {
                embeddings: EmbeddingConfig {
                    provider: EmbeddingProvider::Ollama,
                    ..EmbeddingConfig::default()
                },
                ..ok.clone()
            },
        ];
        for c in cases {
            assert_eq!(c.validate().unwrap_err().code(), "LLM_CONFIG", "{c:?}");
        }
    }

    #[test]
    fn presets_are_valid_and_distinct() {
        let all = presets();
        let mut ids: Vec<_> = all.iter().map(|p| p.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
        for id in [
            "openai",
            "ollama",
            "lm-studio",
            "llama-cpp",
            "vllm",
            "anthropic",
        ] {
            assert!(ids.iter().any(|i| i == id), "{id}");
        }
        for p in &all {
            // A preset with an empty model is valid once the user picks one.
            let mut c = p.config.clone();
            if c.model.is_empty() {
                c.model = "picked".into();
            }
            if c.embeddings.model.is_empty() {
                c.embeddings.model = "picked".into();
            }
            c.validate().unwrap_or_else(|e| panic!("{}: {e}", p.id));
        }
    }
}
