//! Turning HTTP failures into typed, actionable errors, and keeping secrets out of them.
//!
//! [`classify_http_error`] reads a non-2xx response (status, headers, body) of any provider:
//! HTML → not an LLM endpoint; 401/403 → authentication; 429/503/529 or an `overloaded` error →
//! rate limited (retryable); a context-length message or 413 → context overflow; other 4xx →
//! rejected (a configuration problem, not retried); 5xx → server error. The provider's message is
//! taken from `error.message`, an `error` string, `message`, or FastAPI's `detail`.
//!
//! *Invariant:* every error leaving the endpoint client went through [`scrub_error`], which
//! removes the configured secrets (and masked echoes of them such as `sk-pro****xyz`) from every
//! text field.

use serde_json::Value;

use crate::error::Error;
use crate::llm::config::Provider;
use crate::llm::retry::retry_after_from_headers;
use crate::llm::transport::header;

/// Longest provider message kept in an error, in characters.
const MAX_MESSAGE: usize = 300;

/// True when `body` (with its headers) is an HTML page rather than an API response.
pub fn is_html(headers: &[(String, String)], body: &str) -> bool {
    if header(headers, "content-type").is_some_and(|c| c.to_ascii_lowercase().contains("text/html"))
    {
        return true;
    }
    let start: String = body
        .trim_start()
        .chars()
        .take(20)
        .collect::<String>()
        .to_ascii_lowercase();
    ["<!doctype", "<html", "<head", "<body"]
        .iter()
        .any(|p| start.starts_with(p))
}

/// How much of a web page's visible text an [`Error::LlmNotAnEndpoint`] quotes, in characters.
pub const PAGE_TEXT_CHARS: usize = 200;

/// The visible text of an HTML page, at most `max` characters (then `…`): the `<title>`, then
/// the text of the rest, with comments, `<script>`, `<style>`, `<noscript>`, `<template>`,
/// `<svg>` and `<head>` content and every tag removed, the common character references decoded
/// (`&amp;`, `&lt;`, `&nbsp;`, `&#8212;`, `&#x2014;`…), and whitespace collapsed. Not a full HTML
/// parser: enough to show whose page came back (a proxy's "502 Bad Gateway", a login page).
pub fn page_text(html: &str, max: usize) -> String {
    let lower = html.to_ascii_lowercase();
    let mut title = String::new();
    if let Some(start) = lower.find("<title") {
        if let Some(gt) = lower[start..].find('>') {
            let from = start + gt + 1;
            let end = lower[from..]
                .find("</title")
                .map_or(html.len(), |e| from + e);
            title = html[from..end].to_string();
        }
    }
    let mut out = String::new();
    let mut i = 0;
    let b = lower.as_bytes();
    while i < html.len() {
        if b[i] == b'<' {
            if lower[i..].starts_with("<!--") {
                i = lower[i..].find("-->").map_or(html.len(), |e| i + e + 3);
                continue;
            }
            let name: String = lower[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            let skipped = [
                "script", "style", "noscript", "template", "svg", "head", "title",
            ];
            let end_of_tag = lower[i..].find('>').map_or(html.len(), |e| i + e + 1);
            if skipped.contains(&name.as_str()) {
                let close = format!("</{name}");
                i = lower[end_of_tag..]
                    .find(&close)
                    .and_then(|c| {
                        let at = end_of_tag + c;
                        lower[at..].find('>').map(|g| at + g + 1)
                    })
                    .unwrap_or(html.len());
            } else {
                i = end_of_tag;
            }
            out.push(' ');
            continue;
        }
        let next = lower[i..].find('<').map_or(html.len(), |n| i + n);
        out.push_str(&html[i..next]);
        i = next;
    }
    let text = if title.trim().is_empty() {
        out
    } else {
        format!("{title} {out}")
    };
    let text = decode_entities(&text);
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut shown: String = collapsed.chars().take(max).collect();
    if shown.chars().count() < collapsed.chars().count() {
        shown.push('…');
    }
    shown
}

/// Decodes the character references an error page is likely to hold; others are kept as written.
fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let tail = &rest[amp..];
        let end = tail.find(';').filter(|e| *e <= 10);
        let decoded = end.and_then(|e| {
            let name = &tail[1..e];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" | "#39" => Some('\''),
                "nbsp" => Some(' '),
                "mdash" => Some('—'),
                "ndash" => Some('–'),
                "hellip" => Some('…'),
                "copy" => Some('©'),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &tail[len..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The provider's message in an error body: `error.message`, an `error` string, `message`,
/// `detail` (string, or FastAPI's list of `{loc, msg}`). Shortened to 300 characters.
pub fn provider_message(v: &Value) -> Option<String> {
    let s = v
        .pointer("/error/message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| v.get("error").and_then(Value::as_str).map(str::to_string))
        .or_else(|| v.get("message").and_then(Value::as_str).map(str::to_string))
        .or_else(|| v.get("detail").and_then(Value::as_str).map(str::to_string))
        .or_else(|| {
            let list = v.get("detail")?.as_array()?;
            let parts: Vec<String> = list
                .iter()
                .filter_map(|d| {
                    let msg = d.get("msg")?.as_str()?;
                    let loc = d
                        .get("loc")
                        .and_then(Value::as_array)
                        .map(|l| {
                            l.iter()
                                .map(|p| match p {
                                    Value::String(s) => s.clone(),
                                    other => other.to_string(),
                                })
                                .collect::<Vec<_>>()
                                .join(".")
                        })
                        .unwrap_or_default();
                    Some(if loc.is_empty() {
                        msg.to_string()
                    } else {
                        format!("{loc}: {msg}")
                    })
                })
                .collect();
            (!parts.is_empty()).then(|| parts.join("; "))
        })?;
    Some(shorten(s.trim()))
}

fn shorten(s: &str) -> String {
    let mut t: String = s.chars().take(MAX_MESSAGE).collect();
    if t.chars().count() < s.chars().count() {
        t.push('…');
    }
    t
}

/// True when a message says the prompt does not fit the context window.
pub fn is_context_overflow(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "context size",
        "prompt is too long",
        "too many tokens",
        "exceeds the context",
        "input length exceeds",
        "n_ctx",
        "reduce the length",
        "input is too long",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// True when an error message says the server rejected the `response_format` / `format` field
/// (so the next structured-output mode should be tried; field case F13).
pub fn is_format_rejection(e: &Error) -> bool {
    match e {
        Error::LlmRejected {
            status: 400 | 422,
            message,
            ..
        } => {
            let m = message.to_ascii_lowercase();
            [
                "response_format",
                "json_schema",
                "json_object",
                "schema",
                "format",
                "grammar",
            ]
            .iter()
            .any(|w| m.contains(w))
        }
        Error::LlmServer {
            status: 500,
            message,
        } => {
            let m = message.to_ascii_lowercase();
            m.contains("response_format") || m.contains("json_schema")
        }
        _ => false,
    }
}

/// The body of a 2xx response as JSON. An HTML page is [`Error::LlmNotAnEndpoint`]; any other
/// body that is not JSON is [`Error::LlmBadResponse`] naming `what` (e.g. "the model list").
pub fn json_body(
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    url: &str,
    what: &str,
) -> Result<Value, Error> {
    let text = String::from_utf8_lossy(body);
    if is_html(headers, &text) {
        return Err(Error::LlmNotAnEndpoint {
            url: url.to_string(),
            status,
            text: page_text(&text, PAGE_TEXT_CHARS),
        });
    }
    serde_json::from_slice(text.trim().as_bytes()).map_err(|e| {
        Error::LlmBadResponse(format!("{what} is not JSON ({e}); is {url} an LLM API?"))
    })
}

/// The typed error for a non-2xx response (or a 2xx HTML page). `now_ms` dates `Retry-After`.
pub fn classify_http_error(
    provider: Provider,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    url: &str,
    now_ms: i64,
) -> Error {
    let text = String::from_utf8_lossy(body);
    if is_html(headers, &text) {
        return Error::LlmNotAnEndpoint {
            url: url.to_string(),
            status,
            text: page_text(&text, PAGE_TEXT_CHARS),
        };
    }
    let json: Option<Value> = serde_json::from_slice(text.trim().as_bytes()).ok();
    let message = json
        .as_ref()
        .and_then(provider_message)
        .unwrap_or_else(|| shorten(text.trim()));
    let error_type = json
        .as_ref()
        .and_then(|v| v.pointer("/error/type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    classify(
        provider,
        status,
        message,
        error_type,
        retry_after_from_headers(headers, now_ms),
    )
}

fn classify(
    provider: Provider,
    status: u16,
    message: String,
    error_type: &str,
    retry_after_ms: Option<u64>,
) -> Error {
    let lower = message.to_ascii_lowercase();
    let overloaded = error_type == "overloaded_error"
        || error_type == "rate_limit_error"
        || lower.contains("overloaded")
        || lower.contains("server busy");
    if matches!(status, 429 | 503 | 529) || (overloaded && status >= 500) {
        return Error::LlmRateLimited {
            status,
            retry_after_ms,
            attempts: 1,
            message,
        };
    }
    if matches!(status, 401 | 403) {
        return Error::LlmAuth { status, message };
    }
    if status == 413 || is_context_overflow(&message) {
        return Error::LlmContextOverflow { message };
    }
    if (400..500).contains(&status) {
        let hint = rejection_hint(provider, status, &lower);
        return Error::LlmRejected {
            status,
            message,
            hint,
        };
    }
    if status >= 500 {
        return Error::LlmServer { status, message };
    }
    Error::LlmBadResponse(format!("unexpected HTTP status {status}: {message}"))
}

fn rejection_hint(provider: Provider, status: u16, lower: &str) -> String {
    if lower.contains("cors requests are not allowed") || lower.contains("browser access") {
        return "the organisation behind this API key does not allow calls from a browser: ask its admin to allow browser access, or use another key or provider".into();
    }
    if lower.contains("model")
        && (lower.contains("not found")
            || lower.contains("does not exist")
            || lower.contains("no such")
            || lower.contains("unknown"))
    {
        return if provider == Provider::Ollama || lower.contains("pull") {
            "the model is not on the server: check the model name or pull it first (ollama pull <model>)".into()
        } else {
            "the model is not available on the server: check the model name (the connection test lists the models)".into()
        };
    }
    match status {
        404 | 405 => {
            "check the base URL (the connection test shows the URLs it called) and the model name"
                .into()
        }
        _ => "check the model name, the base URL and the provider in the settings".into(),
    }
}

/// The error an error object inside a stream stands for (OpenAI `data: {"error": …}`, Anthropic
/// `event: error`, Ollama `{"error": "…"}`).
pub fn stream_error(v: &Value) -> Error {
    let message = provider_message(v).unwrap_or_else(|| shorten(&v.to_string()));
    let error_type = v
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let status = v
        .pointer("/error/code")
        .and_then(Value::as_u64)
        .filter(|c| (400..600).contains(c))
        .map_or(500, |c| c as u16);
    let status = if error_type == "overloaded_error" {
        529
    } else {
        status
    };
    classify(
        Provider::OpenAiCompatible,
        status,
        message,
        error_type,
        None,
    )
}

/// Removes `secrets` from `text`: exact occurrences, and words that echo a masked secret (a word
/// with `****`, or starting with a secret's first 6 or ending with its last 4 characters).
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    let secrets: Vec<&str> = secrets
        .iter()
        .map(|s| s.trim())
        .filter(|s| s.len() >= 4)
        .collect();
    if secrets.is_empty() && !out.contains("***") {
        return out;
    }
    for s in &secrets {
        out = out.replace(s, "***");
    }
    let echoes = |word: &str| {
        let w =
            word.trim_matches(|c: char| !c.is_alphanumeric() && c != '*' && c != '-' && c != '_');
        if w.len() < 8 || w == "***" {
            return false;
        }
        w.contains("****")
            || secrets.iter().any(|s| {
                let prefix: String = s.chars().take(6).collect();
                let suffix: String = s
                    .chars()
                    .rev()
                    .take(4)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                (s.len() >= 10 && w.starts_with(&prefix)) || (s.len() >= 10 && w.ends_with(&suffix))
            })
    };
    out.split(' ')
        .map(|w| if echoes(w) { "***" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`scrub`] applied to every text field of an LLM error.
pub fn scrub_error(e: Error, secrets: &[String]) -> Error {
    if secrets.is_empty() {
        return e;
    }
    let s = |t: String| scrub(&t, secrets);
    match e {
        Error::LlmConfig(m) => Error::LlmConfig(s(m)),
        Error::LlmAuth { status, message } => Error::LlmAuth {
            status,
            message: s(message),
        },
        Error::LlmOriginNotAllowed { origin, url, hint } => Error::LlmOriginNotAllowed {
            origin,
            url: s(url),
            hint,
        },
        Error::LlmUnreachable { url, detail } => Error::LlmUnreachable {
            url: s(url),
            detail: s(detail),
        },
        Error::LlmTimeout { url, ms } => Error::LlmTimeout { url: s(url), ms },
        Error::LlmNotAnEndpoint { url, status, text } => Error::LlmNotAnEndpoint {
            url: s(url),
            status,
            text: s(text),
        },
        Error::LlmContextOverflow { message } => Error::LlmContextOverflow {
            message: s(message),
        },
        Error::LlmRateLimited {
            status,
            retry_after_ms,
            attempts,
            message,
        } => Error::LlmRateLimited {
            status,
            retry_after_ms,
            attempts,
            message: s(message),
        },
        Error::LlmEmptyCompletion { detail } => Error::LlmEmptyCompletion { detail: s(detail) },
        Error::LlmRejected {
            status,
            message,
            hint,
        } => Error::LlmRejected {
            status,
            message: s(message),
            hint,
        },
        Error::LlmServer { status, message } => Error::LlmServer {
            status,
            message: s(message),
        },
        Error::LlmBadResponse(m) => Error::LlmBadResponse(s(m)),
        Error::LlmBadOutput(m) => Error::LlmBadOutput(s(m)),
        other => other,
    }
}

/// The advice for a CORS refusal (field case F06): the exact origin to allow, for Ollama as
/// `OLLAMA_ORIGINS=<origin>`, for Anthropic the browser-access header.
pub fn origin_not_allowed(provider: Provider, url: &str, origin: &str) -> Error {
    let hint = match provider {
        Provider::Anthropic => "Anthropic only answers browsers that send the header \
            `anthropic-dangerous-direct-browser-access: true` (llm-wiki sends it); a proxy between \
            you and Anthropic may strip it, or the API key's organisation may disallow browser access"
            .to_string(),
        _ => format!(
            "allow this origin on the server. Ollama: set OLLAMA_ORIGINS={origin} (e.g. \
             `OLLAMA_ORIGINS={origin} ollama serve`, or `launchctl setenv OLLAMA_ORIGINS \
             \"{origin}\"` on macOS / the service's environment on Linux and Windows) and restart \
             Ollama; LM Studio: enable CORS in the server settings; vLLM: --allowed-origins \
             '[\"{origin}\"]'; llama-cpp-python: it allows every origin by default"
        ),
    };
    Error::LlmOriginNotAllowed {
        origin: origin.to_string(),
        url: url.to_string(),
        hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(ct: &str) -> Vec<(String, String)> {
        vec![("content-type".into(), ct.into())]
    }

    #[test]
    fn provider_message_shapes() {
        let cases = [
            (r#"{"error":{"message":"bad key","type":"x"}}"#, "bad key"),
            (r#"{"error":"model not found"}"#, "model not found"),
            (r#"{"message":"nope"}"#, "nope"),
            (r#"{"detail":"Not Found"}"#, "Not Found"),
            (
                r#"{"detail":[{"loc":["body","response_format","type"],"msg":"Input should be 'text' or 'json_object'"}]}"#,
                "body.response_format.type: Input should be 'text' or 'json_object'",
            ),
        ];
        for (body, want) in cases {
            let v: Value = serde_json::from_str(body).unwrap();
            assert_eq!(provider_message(&v).as_deref(), Some(want));
        }
    }

    #[test]
    fn classification() {
        let c = |status, body: &str| {
            classify_http_error(
                Provider::OpenAiCompatible,
                status,
                &h("application/json"),
                body.as_bytes(),
                "http://x",
                0,
            )
            .code()
        };
        assert_eq!(
            c(401, r#"{"error":{"message":"Incorrect API key"}}"#),
            "LLM_AUTH"
        );
        assert_eq!(c(429, "{}"), "LLM_RATE_LIMITED");
        assert_eq!(c(503, "busy"), "LLM_RATE_LIMITED");
        assert_eq!(
            c(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "LLM_RATE_LIMITED"
        );
        assert_eq!(
            c(
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#
            ),
            "LLM_CONTEXT_OVERFLOW"
        );
        assert_eq!(
            c(
                400,
                r#"{"error":"the input length exceeds the context length"}"#
            ),
            "LLM_CONTEXT_OVERFLOW"
        );
        assert_eq!(c(404, r#"{"error":"model 'x' not found"}"#), "LLM_REJECTED");
        assert_eq!(c(500, r#"{"error":"boom"}"#), "LLM_SERVER");
        assert_eq!(
            classify_http_error(
                Provider::Ollama,
                200,
                &h("text/html; charset=utf-8"),
                b"<!DOCTYPE html><html></html>",
                "http://x",
                0
            )
            .code(),
            "LLM_NOT_AN_ENDPOINT"
        );
        assert_eq!(
            c(404, "<html><body>Not Found</body></html>"),
            "LLM_NOT_AN_ENDPOINT"
        );
        let e = classify_http_error(
            Provider::OpenAiCompatible,
            429,
            &[("retry-after".into(), "3".into())],
            b"{}",
            "u",
            0,
        );
        assert!(matches!(
            e,
            Error::LlmRateLimited {
                retry_after_ms: Some(3000),
                ..
            }
        ));
    }

    #[test]
    fn server_error_carries_provider_message() {
        for body in [
            r#"{"error":{"message":"CUDA out of memory"}}"#,
            r#"{"error":"CUDA out of memory"}"#,
            r#"{"message":"CUDA out of memory"}"#,
        ] {
            let e = classify_http_error(
                Provider::OpenAiCompatible,
                500,
                &[],
                body.as_bytes(),
                "u",
                0,
            );
            assert_eq!(
                e,
                Error::LlmServer {
                    status: 500,
                    message: "CUDA out of memory".into()
                }
            );
            assert!(e.to_string().contains("CUDA out of memory"));
        }
    }

    #[test]
    fn format_rejections() {
        let lm_studio = classify_http_error(
            Provider::OpenAiCompatible,
            400,
            &[],
            br#"{"error":"'response_format.type' must be 'json_schema' or 'text'"}"#,
            "u",
            0,
        );
        assert!(is_format_rejection(&lm_studio));
        let other = classify_http_error(
            Provider::OpenAiCompatible,
            400,
            &[],
            br#"{"error":"model 'x' not found"}"#,
            "u",
            0,
        );
        assert!(!is_format_rejection(&other));
    }

    #[test]
    fn scrub_removes_secrets_and_masked_echoes() {
        let secrets = vec!["sk-proj-abcdef1234567890XYZW".to_string()];
        let msg = "Incorrect API key provided: sk-proj-abcdef1234567890XYZW. Also sk-pro*************XYZW and sk-pr***XYZW.";
        let s = scrub(msg, &secrets);
        assert!(!s.contains("abcdef"), "{s}");
        assert!(!s.contains("XYZW"), "{s}");
        assert!(s.starts_with("Incorrect API key provided: "), "{s}");
        let e = scrub_error(
            Error::LlmAuth {
                status: 401,
                message: msg.into(),
            },
            &secrets,
        );
        assert!(!e.to_string().contains("XYZW"));
    }
}
