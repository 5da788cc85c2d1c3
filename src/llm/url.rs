//! Base-URL normalisation (field case F08): one function turns whatever the user pasted into the
//! endpoint URLs, and both the connection test and the real calls use it, so they can never
//! disagree.
//!
//! Accepted input: with or without `/v1`, another version segment (`/v4`, `/api/v3`, `/v1beta`),
//! trailing slashes, a full endpoint pasted (`…/chat/completions`, `…/api/chat`, `…/messages`,
//! `…/embeddings`), a query string (kept on every URL, e.g. `?api-version=…`), no scheme for a
//! `host:port` (then `http://` for local hosts, `https://` otherwise).
//!
//! *Invariant:* no version segment or endpoint path is ever doubled: a known endpoint suffix is
//! stripped first, and `/v1` is appended only when no suffix was stripped and no version segment
//! exists.

use crate::error::{Error, Result};
use crate::llm::config::{EmbeddingProvider, Provider};

/// The URLs of one chat endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// Chat completions (`…/chat/completions`, `…/api/chat`, `…/v1/messages`).
    pub chat: String,
    /// The model list (`…/models`, `…/api/tags`).
    pub models: String,
    /// The server's origin (`scheme://host:port/`), the target of the reachability probe.
    pub origin_root: String,
}

/// A parsed base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Parsed {
    /// `http` or `https`.
    scheme: String,
    /// `host[:port]`, as entered (userinfo removed).
    authority: String,
    /// Path segments, empty ones removed.
    segments: Vec<String>,
    /// `?…` including the `?`, or empty.
    query: String,
    /// The endpoint suffix that was stripped, if any.
    stripped: Option<Suffix>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Suffix {
    OpenAiChat,
    OpenAiCompletions,
    OpenAiModels,
    OpenAiEmbeddings,
    AnthropicMessages,
    OllamaApi,
}

/// Known endpoint suffixes, longest first, as lowercase segments.
const SUFFIXES: &[(&[&str], Suffix)] = &[
    (&["chat", "completions"], Suffix::OpenAiChat),
    (&["api", "chat"], Suffix::OllamaApi),
    (&["api", "generate"], Suffix::OllamaApi),
    (&["api", "tags"], Suffix::OllamaApi),
    (&["api", "embed"], Suffix::OllamaApi),
    (&["api", "embeddings"], Suffix::OllamaApi),
    (&["api", "show"], Suffix::OllamaApi),
    (&["api", "version"], Suffix::OllamaApi),
    (&["completions"], Suffix::OpenAiCompletions),
    (&["models"], Suffix::OpenAiModels),
    (&["embeddings"], Suffix::OpenAiEmbeddings),
    (&["messages"], Suffix::AnthropicMessages),
];

fn is_local_host(host: &str) -> bool {
    let host = host.rsplit_once(':').map_or(host, |(h, p)| {
        if p.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.starts_with("127.")
        || host == "::1"
        || host == "0.0.0.0"
        || host.ends_with(".local")
        || host.starts_with("192.168.")
        || host.starts_with("10.")
}

/// True for a version segment: `v` + digits, optionally followed by letters/digits/dots
/// (`v1`, `v4`, `v1beta`, `v2.1`).
fn is_version_segment(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2
        && (b[0] == b'v' || b[0] == b'V')
        && b[1].is_ascii_digit()
        && b[2..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'.')
}

fn parse(input: &str) -> Result<Parsed> {
    let input = input.trim();
    if input.is_empty() {
        return Err(Error::LlmConfig("the base URL is empty".into()));
    }
    if input.chars().any(char::is_whitespace) {
        return Err(Error::LlmConfig(format!(
            "the base URL {input:?} contains spaces"
        )));
    }
    let (scheme, rest) = match input.split_once("://") {
        Some((s, rest)) => (s.to_ascii_lowercase(), rest),
        None => {
            let host = input.split(['/', '?', '#']).next().unwrap_or("");
            let scheme = if is_local_host(host) { "http" } else { "https" };
            (scheme.to_string(), input)
        }
    };
    if scheme != "http" && scheme != "https" {
        return Err(Error::LlmConfig(format!(
            "the base URL must start with http:// or https://, not {scheme}://"
        )));
    }
    let rest = rest.split('#').next().unwrap_or("");
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) if !q.is_empty() => (r, format!("?{q}")),
        Some((r, _)) => (r, String::new()),
        None => (rest, String::new()),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    // Userinfo (`user:pass@host`) is dropped: fetch refuses credentials in URLs anyway, and it
    // must never end up in an error message.
    let authority = authority.rsplit('@').next().unwrap_or("");
    if authority.is_empty() || authority.starts_with(':') {
        return Err(Error::LlmConfig(format!(
            "the base URL {input:?} has no host"
        )));
    }
    let mut segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let mut stripped = None;
    for (suffix, kind) in SUFFIXES {
        if segments.len() >= suffix.len()
            && segments[segments.len() - suffix.len()..]
                .iter()
                .zip(suffix.iter())
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
        {
            segments.truncate(segments.len() - suffix.len());
            stripped = Some(*kind);
            break;
        }
    }
    Ok(Parsed {
        scheme,
        authority: authority.to_string(),
        segments,
        query,
        stripped,
    })
}

impl Parsed {
    fn url(&self, segments: &[String], tail: &str) -> String {
        let mut s = format!("{}://{}", self.scheme, self.authority);
        for seg in segments {
            s.push('/');
            s.push_str(seg);
        }
        s.push_str(tail);
        s.push_str(&self.query);
        s
    }

    fn origin_root(&self) -> String {
        format!("{}://{}/", self.scheme, self.authority)
    }

    /// The versioned API root of an OpenAI-style (or Anthropic) API: the path as entered when it
    /// has a version segment or a stripped endpoint suffix, else the path plus `/v1`.
    fn versioned_root(&self) -> Vec<String> {
        let mut segments = self.segments.clone();
        let has_version = segments.iter().any(|s| is_version_segment(s));
        if !has_version && self.stripped.is_none() {
            segments.push("v1".into());
        }
        segments
    }

    /// The root of Ollama's native API: the path without a trailing `/v1` or `/api`.
    fn ollama_root(&self) -> Vec<String> {
        let mut segments = self.segments.clone();
        if segments
            .last()
            .is_some_and(|s| s.eq_ignore_ascii_case("v1"))
        {
            segments.pop();
        }
        if segments
            .last()
            .is_some_and(|s| s.eq_ignore_ascii_case("api"))
        {
            segments.pop();
        }
        segments
    }
}

/// The chat and model-list URLs for `provider` at `base_url`.
///
/// | provider | chat | models |
/// |---|---|---|
/// | openai-compatible | `<root>/chat/completions` | `<root>/models` |
/// | ollama | `<host>/api/chat` | `<host>/api/tags` |
/// | anthropic | `<root>/messages` | `<root>/models` |
///
/// where `<root>` is the base URL with its version segment (`/v1` added only when it has none).
///
/// Errors: [`Error::LlmConfig`] for an empty URL, a scheme other than http(s), no host, or the
/// offline provider (which has no endpoint).
pub fn chat_endpoints(provider: Provider, base_url: &str) -> Result<Endpoints> {
    let p = parse(base_url)?;
    let (chat, models) = match provider {
        Provider::OpenAiCompatible => {
            let root = p.versioned_root();
            (p.url(&root, "/chat/completions"), p.url(&root, "/models"))
        }
        Provider::Anthropic => {
            let root = p.versioned_root();
            (p.url(&root, "/messages"), p.url(&root, "/models"))
        }
        Provider::Ollama => {
            let root = p.ollama_root();
            (p.url(&root, "/api/chat"), p.url(&root, "/api/tags"))
        }
        Provider::Offline => {
            return Err(Error::LlmConfig(
                "the offline provider has no chat endpoint".into(),
            ))
        }
    };
    Ok(Endpoints {
        chat,
        models,
        origin_root: p.origin_root(),
    })
}

/// The embeddings URL for `provider` at `base_url`: OpenAI `<root>/embeddings`, Ollama
/// `<host>/api/embed`, legacy Ollama `<host>/api/embeddings` (field case F14).
///
/// Errors: as [`chat_endpoints`]; the offline embedding has no URL.
pub fn embeddings_url(provider: EmbeddingProvider, base_url: &str) -> Result<String> {
    let p = parse(base_url)?;
    Ok(match provider {
        EmbeddingProvider::OpenAi => p.url(&p.versioned_root(), "/embeddings"),
        EmbeddingProvider::Ollama => p.url(&p.ollama_root(), "/api/embed"),
        EmbeddingProvider::OllamaLegacy => p.url(&p.ollama_root(), "/api/embeddings"),
        EmbeddingProvider::Offline => {
            return Err(Error::LlmConfig(
                "the offline embedding has no endpoint".into(),
            ))
        }
    })
}

/// The origin (`scheme://host:port`) of a URL, for messages; the URL itself when it does not parse.
pub fn origin_of(url: &str) -> String {
    parse(url)
        .map(|p| format!("{}://{}", p.scheme, p.authority))
        .unwrap_or_else(|_| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_segments() {
        for v in ["v1", "v4", "V2", "v1beta", "v2.1"] {
            assert!(is_version_segment(v), "{v}");
        }
        for v in ["v", "api", "vision", "1", "v1-beta"] {
            assert!(!is_version_segment(v), "{v}");
        }
    }

    #[test]
    fn bad_urls_are_config_errors() {
        for bad in [
            "",
            "   ",
            "ftp://x/v1",
            "http://",
            "http:///v1",
            "http://a b/v1",
        ] {
            let e = chat_endpoints(Provider::OpenAiCompatible, bad).unwrap_err();
            assert_eq!(e.code(), "LLM_CONFIG", "{bad:?}");
        }
        assert_eq!(
            chat_endpoints(Provider::Offline, "http://x")
                .unwrap_err()
                .code(),
            "LLM_CONFIG"
        );
    }

    #[test]
    fn no_scheme_local_is_http() {
        let e = chat_endpoints(Provider::OpenAiCompatible, "localhost:1234").unwrap();
        assert_eq!(e.chat, "http://localhost:1234/v1/chat/completions");
        let e = chat_endpoints(Provider::OpenAiCompatible, "api.example.test/v1").unwrap();
        assert_eq!(e.chat, "https://api.example.test/v1/chat/completions");
    }

    #[test]
    fn query_is_kept_and_userinfo_dropped() {
        let e = chat_endpoints(
            Provider::OpenAiCompatible,
            "https://user:pw@gw.example.test/openai/v1/?api-version=2024-06-01#x",
        )
        .unwrap();
        assert_eq!(
            e.chat,
            "https://gw.example.test/openai/v1/chat/completions?api-version=2024-06-01"
        );
        assert_eq!(e.origin_root, "https://gw.example.test/");
    }
}
