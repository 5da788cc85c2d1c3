//! The embedding routes: vectors from the offline embedder of the requested model's dimension,
//! OpenAI's `data` deliberately in reverse order (F14a).

use serde_json::{json, Value};

use super::faults::Faults;
use super::routes::{error_body, Route};
use super::ServerResponse;
use crate::scripted::cross_lingual::scripted_vector;
use crate::scripted::scripted_dimension;
use crate::text::TokenEstimator;

/// Answers an embeddings request (OpenAI, Ollama, or Ollama's legacy route) with the offline
/// embedder's vectors (cross-lingual for a model id holding `xling`, see
/// [`scripted_vector`]), applying the `ctx`, `zero-vector` and `nan-vector` faults.
pub(super) fn embeddings(faults: &Faults, r: Route, body: &Value) -> ServerResponse {
    let bad = |status: u16, msg: &str| ServerResponse::json(status, &error_body(r, status, msg));
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted-embed-32")
        .to_string();
    let dimension = scripted_dimension(&model);
    let est = TokenEstimator::default();
    let inputs: Vec<String> = if r == Route::OllamaLegacyEmbeddings {
        match body.get("prompt").and_then(Value::as_str) {
            Some(p) => vec![p.to_string()],
            // Real Ollama answers an `input` field here with an empty vector (F14c).
            None => return ServerResponse::json(200, &json!({"embedding": []})),
        }
    } else {
        match body.get("input") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => return bad(400, "input: Field required"),
        }
    };
    if let Some(ctx) = faults.num("ctx") {
        if inputs.iter().any(|i| est.estimate(i) > ctx) {
            return bad(400, "the input length exceeds the context length");
        }
    }
    let mut vectors: Vec<Vec<f32>> = inputs
        .iter()
        .map(|t| scripted_vector(&model, dimension, t))
        .collect();
    // An input holding the `zero-vector` word gets zeros; one holding the `nan-vector` word gets
    // NaN, written as the bare `NaN` tokens Python servers write (not JSON).
    let holds = |name: &str, t: &str| faults.get(name).is_some_and(|w| t.contains(w));
    let mut nan = false;
    for (t, v) in inputs.iter().zip(vectors.iter_mut()) {
        if holds("zero-vector", t) {
            v.fill(0.0);
        } else if holds("nan-vector", t) {
            v.fill(NAN_MARK);
            nan = true;
        }
    }
    let tokens: u64 = inputs.iter().map(|t| est.estimate(t)).sum();
    let v = match r {
        Route::OpenAiEmbeddings => {
            // Reverse order on purpose: clients must match by `index` (F14a).
            let data: Vec<Value> = vectors
                .iter()
                .enumerate()
                .rev()
                .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
                .collect();
            json!({"object": "list", "model": model, "data": data, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
        }
        Route::OllamaEmbed => {
            json!({"model": model, "embeddings": vectors, "prompt_eval_count": tokens})
        }
        _ => json!({"embedding": vectors[0]}),
    };
    if nan {
        let body = v.to_string().replace(&NAN_MARK.to_string(), "NaN");
        return ServerResponse::text(200, "application/json", &body);
    }
    ServerResponse::json(200, &v)
}

/// A value no embedding returns, written in place of NaN and then replaced by the token.
const NAN_MARK: f32 = 12345.5;
