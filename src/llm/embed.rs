//! Embedding endpoints as pure functions (field case F14): request building, response parsing for
//! the three shapes, and token-aware chunking of long inputs.
//!
//! | provider | URL | request | response |
//! |---|---|---|---|
//! | OpenAI | `<root>/embeddings` | `{model, input: [..]}` | `data[].embedding`, matched by `data[].index` |
//! | Ollama | `/api/embed` | `{model, input: [..]}` | `embeddings: [[..]]` |
//! | legacy Ollama | `/api/embeddings` | `{model, prompt}` (one text per request) | `embedding: [..]` |
//!
//! *Invariant:* an empty vector, a missing or duplicate index, or vectors of different lengths are
//! errors, never stored.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::llm::config::{Config, EmbeddingProvider};
use crate::llm::errors::{classify_http_error, json_body};
use crate::llm::transport::{HttpRequest, Method};
use crate::llm::url::embeddings_url;
use crate::text::{is_cjk, TokenEstimator};

/// The embeddings request for `texts` (exactly one text for the legacy endpoint).
///
/// Errors: [`Error::LlmConfig`] (offline provider, bad URL, no model).
pub fn build_embed_request(config: &Config, texts: &[String]) -> Result<HttpRequest> {
    let e = &config.embeddings;
    let base = e.base_url.as_deref().unwrap_or(&config.base_url);
    let url = embeddings_url(e.provider, base)?;
    if e.model.trim().is_empty() {
        return Err(Error::LlmConfig("no embedding model is set".into()));
    }
    let body = match e.provider {
        EmbeddingProvider::OllamaLegacy => {
            let [text] = texts else {
                return Err(Error::LlmConfig(
                    "the legacy /api/embeddings endpoint takes one text per request".into(),
                ));
            };
            json!({"model": e.model, "prompt": text})
        }
        _ => json!({"model": e.model, "input": texts}),
    };
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    let key = e.api_key.as_ref().or(config.api_key.as_ref());
    if let Some(key) = key {
        headers.push(("authorization".into(), format!("Bearer {}", key.expose())));
    }
    crate::llm::provider::push_extra_headers(config, &mut headers);
    Ok(HttpRequest {
        method: Method::Post,
        url,
        headers,
        body: Some(body.to_string()),
        stream: false,
    })
}

fn vector(v: &Value, what: &str) -> Result<Vec<f32>> {
    let arr = v
        .as_array()
        .ok_or_else(|| Error::LlmBadResponse(format!("{what} is not an array of numbers")))?;
    if arr.is_empty() {
        return Err(Error::LlmBadResponse(format!(
            "{what} is an empty vector (the legacy /api/embeddings endpoint returns one when sent `input` instead of `prompt`); nothing was stored"
        )));
    }
    // `null` (what a server writes for NaN) and "NaN"/"Infinity" strings are a bad value of this
    // vector, not a bad response: the caller skips this one input's page, not the batch.
    arr.iter()
        .map(|x| match x {
            Value::Null => Ok(f32::NAN),
            Value::String(t) if non_finite_word(t) => Ok(f32::NAN),
            _ => x
                .as_f64()
                .map(|f| f as f32)
                .ok_or_else(|| Error::LlmBadResponse(format!("{what} holds a non-number"))),
        })
        .collect()
}

fn non_finite_word(t: &str) -> bool {
    matches!(
        t.trim()
            .trim_start_matches(['-', '+'])
            .to_ascii_lowercase()
            .as_str(),
        "nan" | "inf" | "infinity"
    )
}

/// `body` with the bare `NaN`, `Infinity` and `-Infinity` tokens Python's `json` module writes
/// (outside strings) replaced by `null`, or `None` when it has none.
fn non_finite_as_null(body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut changed = false;
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            out.push(b);
            i += 1;
            continue;
        }
        let rest = &body[i..];
        let token = [&b"-Infinity"[..], b"Infinity", b"NaN"]
            .into_iter()
            .find(|t| rest.starts_with(t));
        match token {
            Some(t) => {
                out.extend_from_slice(b"null");
                i += t.len();
                changed = true;
            }
            None => {
                out.push(b);
                i += 1;
            }
        }
    }
    changed.then_some(out)
}

/// Parses an embeddings response into one vector per input (in input order) and the reported
/// input tokens.
///
/// Errors: non-2xx → the typed error of [`classify_http_error`]; HTML → not an endpoint; wrong
/// count, missing/duplicate `index`, empty vectors, mixed dimensions → [`Error::LlmBadResponse`].
pub fn parse_embed_response(
    provider: EmbeddingProvider,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    url: &str,
    expected: usize,
    now_ms: i64,
) -> Result<(Vec<Vec<f32>>, Option<u64>)> {
    if !(200..300).contains(&status) {
        return Err(classify_http_error(
            crate::llm::config::Provider::OpenAiCompatible,
            status,
            headers,
            body,
            url,
            now_ms,
        ));
    }
    let v = match json_body(status, headers, body, url, "the embeddings response") {
        Ok(v) => v,
        // Python servers write NaN as a bare token, which is not JSON: read it as null (one bad
        // vector), never as a bad batch.
        Err(e) => match non_finite_as_null(body) {
            Some(fixed) => json_body(status, headers, &fixed, url, "the embeddings response")?,
            None => return Err(e),
        },
    };
    let (vectors, tokens) = match provider {
        EmbeddingProvider::OpenAi => {
            let data = v
                .get("data")
                .and_then(Value::as_array)
                .ok_or_else(|| Error::LlmBadResponse("the response has no `data` list".into()))?;
            let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
            for (pos, item) in data.iter().enumerate() {
                let index = item
                    .get("index")
                    .and_then(Value::as_u64)
                    .map_or(pos, |i| i as usize);
                let slot = slots.get_mut(index).ok_or_else(|| {
                    Error::LlmBadResponse(format!(
                        "data[{pos}].index is {index}, but {expected} inputs were sent"
                    ))
                })?;
                if slot.is_some() {
                    return Err(Error::LlmBadResponse(format!(
                        "index {index} appears twice in `data`"
                    )));
                }
                *slot = Some(vector(
                    item.get("embedding").unwrap_or(&Value::Null),
                    &format!("data[{pos}].embedding"),
                )?);
            }
            let vectors = slots
                .into_iter()
                .enumerate()
                .map(|(i, s)| {
                    s.ok_or_else(|| Error::LlmBadResponse(format!("no embedding for input {i}")))
                })
                .collect::<Result<Vec<_>>>()?;
            let tokens = v.pointer("/usage/prompt_tokens").and_then(Value::as_u64);
            (vectors, tokens)
        }
        EmbeddingProvider::Ollama => {
            let list = v
                .get("embeddings")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    Error::LlmBadResponse("the response has no `embeddings` list".into())
                })?;
            let vectors = list
                .iter()
                .enumerate()
                .map(|(i, e)| vector(e, &format!("embeddings[{i}]")))
                .collect::<Result<Vec<_>>>()?;
            (vectors, v.get("prompt_eval_count").and_then(Value::as_u64))
        }
        EmbeddingProvider::OllamaLegacy => (
            vec![vector(
                v.get("embedding").unwrap_or(&Value::Null),
                "`embedding`",
            )?],
            None,
        ),
        EmbeddingProvider::Offline => {
            return Err(Error::LlmConfig(
                "the offline embedding has no endpoint".into(),
            ))
        }
    };
    if vectors.len() != expected {
        return Err(Error::LlmBadResponse(format!(
            "{} vectors for {expected} inputs",
            vectors.len()
        )));
    }
    if let Some(first) = vectors.first() {
        if vectors.iter().any(|v| v.len() != first.len()) {
            return Err(Error::LlmBadResponse(
                "the vectors have different dimensions".into(),
            ));
        }
    }
    Ok((vectors, tokens))
}

/// Splits `text` into chunks of at most `max_tokens` estimated tokens each, cutting at the best
/// boundary inside the limit: a blank line, else a line end, else a sentence end (`. ` `。`…), else
/// a space, else anywhere (between characters). Chunks are verbatim slices, in order, and
/// together hold the whole text.
pub fn chunk_text(text: &str, max_tokens: u64, estimator: &TokenEstimator) -> Vec<String> {
    let max_tokens = max_tokens.max(1) as f64;
    let cjk = f64::from(estimator.cjk_tokens_per_char);
    let other = 1.0 / f64::from(estimator.chars_per_token.max(0.1));
    let mut out = Vec::new();
    let mut start = 0usize; // byte offset of the current chunk
    let mut tokens = 0.0;
    // best boundaries seen in the current chunk: (rank, byte offset after the boundary)
    let mut best: [Option<usize>; 4] = [None; 4];
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (pos, c) = chars[i];
        let cost = if is_cjk(c) { cjk } else { other };
        if tokens + cost > max_tokens && pos > start {
            let cut = best
                .iter()
                .flatten()
                .next()
                .copied()
                .filter(|&b| b > start)
                .unwrap_or(pos);
            out.push(text[start..cut].to_string());
            start = cut;
            tokens = 0.0;
            best = [None; 4];
            // Re-scan from the cut.
            i = chars.partition_point(|(p, _)| *p < cut);
            continue;
        }
        tokens += cost;
        let after = pos + c.len_utf8();
        let next = chars.get(i + 1).map(|(_, n)| *n);
        let prev = i.checked_sub(1).map(|j| chars[j].1);
        match c {
            '\n' if prev == Some('\n') => best[0] = Some(after),
            '\n' => best[1] = Some(after),
            '。' | '！' | '？' => best[2] = Some(after),
            '.' | '!' | '?' if next.is_some_and(char::is_whitespace) => best[2] = Some(after),
            ' ' | '\t' => best[3] = Some(after),
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        out.push(text[start..].to_string());
    }
    out
}

/// Mean of `vectors` weighted by `weights`, L2-normalised.
pub fn pool(vectors: &[Vec<f32>], weights: &[f32]) -> Vec<f32> {
    let dim = vectors.first().map_or(0, Vec::len);
    let mut out = vec![0f32; dim];
    for (v, w) in vectors.iter().zip(weights) {
        for (o, x) in out.iter_mut().zip(v) {
            *o += x * w;
        }
    }
    normalize(&mut out);
    out
}

/// L2-normalises `v` in place (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        for x in v {
            *x /= n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nan_or_null_vector_is_one_bad_vector_not_a_bad_batch() {
        // Python servers write NaN as a bare token (not JSON); others write null.
        for (provider, body) in [
            (
                EmbeddingProvider::OpenAi,
                r#"{"data":[{"index":0,"embedding":[0.5,0.5]},{"index":1,"embedding":[NaN,-Infinity]},{"index":2,"embedding":[null,null]}],"model":"m"}"#,
            ),
            (
                EmbeddingProvider::Ollama,
                r#"{"embeddings":[[0.5,0.5],[NaN,NaN],["NaN",0.1]],"note":"NaN in a string stays"}"#,
            ),
        ] {
            let (v, _) =
                parse_embed_response(provider, 200, &[], body.as_bytes(), "http://x/v1", 3, 0)
                    .unwrap();
            assert_eq!(v[0], [0.5, 0.5]);
            assert!(
                v[1].iter().all(|x| !x.is_finite()) && v[2][0].is_nan(),
                "{v:?}"
            );
        }
        // Anything else that is not a number still fails the response.
        assert!(parse_embed_response(
            EmbeddingProvider::Ollama,
            200,
            &[],
            br#"{"embeddings":[[0.5,"x"]]}"#,
            "http://x/v1",
            1,
            0
        )
        .is_err());
    }

    #[test]
    fn chunks_cover_the_text_at_good_boundaries() {
        let est = TokenEstimator::default();
        let text = "First paragraph is here.\n\nSecond one follows. It has two sentences.\nA last line without end";
        let chunks = chunk_text(text, 8, &est);
        assert_eq!(chunks.concat(), text);
        for c in &chunks {
            assert!(est.estimate(c) <= 8, "{c:?} is {} tokens", est.estimate(c));
        }
        assert_eq!(chunks[0], "First paragraph is here.\n\n");
        let zh = "监督学习使用标注数据。无监督学习不使用标注。强化学习依靠奖励。";
        let chunks = chunk_text(zh, 12, &est);
        assert_eq!(
            chunks,
            [
                "监督学习使用标注数据。",
                "无监督学习不使用标注。",
                "强化学习依靠奖励。"
            ]
        );
        let one = chunk_text("short", 100, &est);
        assert_eq!(one, ["short"]);
        let hard = chunk_text("abcdefghijkl", 1, &est);
        assert_eq!(hard, ["abcd", "efgh", "ijkl"]);
    }
}
