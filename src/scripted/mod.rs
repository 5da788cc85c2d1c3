//! The scripted test endpoint (Decision 14): replies derived from the request, never canned text
//! per test input.
//!
//! Test support only: compiled with the `test-support` feature (`cargo test --features
//! test-support`, the `scripted-llm-server` example), never in the release build. It sits above
//! every operation (layer 6, beside `wasm/`): its task handlers call the operations' own scripted
//! replies (`compile::scripted`, `query::scripted`, `lint::llm::scripted_reply`, gated the same
//! way), and nothing in the product imports it.
//!
//! * [`reply`] is the one derivation. Structured calls dispatch on the task name
//!   (`request.json.name`) to a handler in [`TASKS`]; a task without a handler gets a value
//!   generated from its schema and the request's data blocks; plain calls get sentences copied
//!   verbatim from the data blocks (`<source key="…">`, see [`crate::llm::prompt`]) that share the
//!   most terms with the question.
//! * [`ScriptedLlm`] / [`ScriptedEmbedder`]: in-process [`Llm`] / [`Embedder`] for native tests,
//!   counting calls, with fault injection.
//! * [`server`]: the same endpoint speaking the three wire protocols (used in-process by
//!   [`server::InProcess`] and over TCP by `tests/support/scripted_llm_server.rs`).
//!
//! Adding a task handler is one line in [`TASKS`] plus the function:
//! `("extract", tasks::extract)`, where `fn extract(request: &ChatRequest, schema: &JsonSchema,
//! material: &Material) -> Value`.

pub mod cross_lingual;
pub mod server;

use std::cell::{Cell, RefCell};

use serde_json::{json, Map, Value};

use crate::error::Error;
use crate::llm::offline::OfflineEmbedder;
use crate::llm::prompt::{outside_blocks, source_blocks, SourceBlock};
use crate::llm::provider::{Completion, RawFinish};
use crate::llm::{
    Cancel, ChatRequest, ChatResponse, Embedder, Embeddings, JsonSchema, Llm, OnToken, Role,
};
use crate::model::TokenUsage;
use crate::text::TokenEstimator;

/// A structured-output task handler: returns the JSON value the task's reply holds.
pub type TaskHandler = fn(&ChatRequest, &JsonSchema, &Material) -> Value;

/// Task handlers by task name (`JsonSchema::name`). Adding a task is one line here.
pub const TASKS: &[(&str, TaskHandler)] = &[
    ("connection_test", connection_test),
    ("extract", compile_extract),
    ("integrate", compile_integrate),
    ("integrate_pages", compile_integrate_pages),
    ("route", query_route),
    ("lint_check", lint_check),
];

/// The LLM lint check ([`crate::lint::llm::scripted_reply`]).
fn lint_check(_: &ChatRequest, _: &JsonSchema, m: &Material) -> Value {
    crate::lint::llm::scripted_reply(&m.blocks)
}

/// The query's route task ([`crate::query::scripted::route_reply`]).
fn query_route(request: &ChatRequest, _: &JsonSchema, _: &Material) -> Value {
    crate::query::scripted::route_reply(request)
}

/// The last user message (where the compile prompts put their data blocks).
fn last_user(request: &ChatRequest) -> &str {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_str())
}

/// The compile pass's extract task ([`crate::compile::scripted::extract_reply`]).
fn compile_extract(request: &ChatRequest, _: &JsonSchema, _: &Material) -> Value {
    copied(crate::compile::scripted::extract_reply(last_user(request)))
}

/// A compile reply as a model that copies text from its prompt writes it: with the prompt's block
/// escapes in it (the derivation reads unescaped text; the compile undoes the escapes).
fn copied(mut reply: Value) -> Value {
    crate::compile::prompt::escape_strings(&mut reply);
    reply
}

/// The compile pass's integrate task ([`crate::compile::scripted::integrate_reply`]).
fn compile_integrate(request: &ChatRequest, _: &JsonSchema, _: &Material) -> Value {
    copied(crate::compile::scripted::integrate_reply(last_user(
        request,
    )))
}

fn compile_integrate_pages(request: &ChatRequest, _: &JsonSchema, _: &Material) -> Value {
    copied(crate::compile::scripted::integrate_pages_reply(last_user(
        request,
    )))
}

/// What a reply can be derived from: the request's data blocks, split up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Material {
    /// The data blocks of the system prompt and the messages, in order.
    pub blocks: Vec<SourceBlock>,
    /// Markdown headings (`#`…`######`) in the blocks, in order, without the marks.
    pub headings: Vec<String>,
    /// Sentences of the blocks (verbatim, headings excluded), in order.
    pub sentences: Vec<String>,
    /// The key of the block each sentence comes from (parallel to `sentences`).
    pub sentence_keys: Vec<String>,
    /// The last user message outside any data block (the question or instruction).
    pub question: String,
}

impl Material {
    /// Splits the request's data blocks into headings and sentences.
    pub fn from_request(request: &ChatRequest) -> Material {
        let mut blocks = source_blocks(&request.system);
        for m in &request.messages {
            blocks.extend(source_blocks(&m.content));
        }
        let mut headings = Vec::new();
        let mut sentences = Vec::new();
        let mut sentence_keys = Vec::new();
        for b in &blocks {
            for line in b.text.lines() {
                let t = line.trim();
                let hashes = t.chars().take_while(|c| *c == '#').count();
                if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
                    headings.push(t[hashes..].trim().to_string());
                } else if !t.is_empty() {
                    for s in split_sentences(t) {
                        sentences.push(s);
                        sentence_keys.push(b.key.clone());
                    }
                }
            }
        }
        let question = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| outside_blocks(&m.content).trim().to_string())
            .unwrap_or_default();
        Material {
            blocks,
            headings,
            sentences,
            sentence_keys,
            question,
        }
    }
}

/// Splits text into sentences after `.`, `!`, `?` followed by a space, and after `。！？`.
/// Every sentence is a verbatim slice of the input (trimmed).
pub fn split_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(pos, c)) in chars.iter().enumerate() {
        let end = pos + c.len_utf8();
        let boundary = match c {
            '。' | '！' | '？' => true,
            '.' | '!' | '?' => chars.get(i + 1).is_none_or(|(_, n)| n.is_whitespace()),
            _ => false,
        };
        if boundary {
            let s = text[start..end].trim();
            if !s.is_empty() {
                out.push(s.to_string());
            }
            start = end;
        }
    }
    let s = text[start..].trim();
    if !s.is_empty() {
        out.push(s.to_string());
    }
    out
}

/// Terms for overlap scoring: lowercase words of 3+ characters, and CJK character bigrams.
fn terms(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    let mut run: Vec<char> = Vec::new();
    let mut word = String::new();
    let flush_word = |word: &mut String, out: &mut Vec<String>| {
        if word.chars().count() >= 3 {
            out.push(std::mem::take(word));
        } else {
            word.clear();
        }
    };
    for c in lower.chars().chain(std::iter::once(' ')) {
        if crate::text::is_cjk(c) && !matches!(c as u32, 0x3000..=0x303F) {
            flush_word(&mut word, &mut out);
            run.push(c);
            continue;
        }
        if run.len() == 1 {
            out.push(run[0].to_string());
        }
        for w in run.windows(2) {
            out.push(w.iter().collect());
        }
        run.clear();
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush_word(&mut word, &mut out);
        }
    }
    out
}

/// A derived reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedReply {
    /// The answer text (a JSON value's text for structured calls).
    pub text: String,
}

/// Derives the reply to `request` (see the module docs).
pub fn reply(request: &ChatRequest) -> ScriptedReply {
    let material = Material::from_request(request);
    let text = match &request.json {
        Some(schema) => {
            let value = TASKS
                .iter()
                .find(|(name, _)| *name == schema.name)
                .map(|(_, handler)| handler(request, schema, &material))
                .unwrap_or_else(|| generate(&schema.schema, &material, "", &mut 0));
            value.to_string()
        }
        // A picture is described from what its file says of itself.
        None if last_images(request).next().is_some() => last_images(request)
            .map(describe_picture)
            .collect::<Vec<_>>()
            .join("\n\n"),
        // A system prompt that asks for `[[page]]` citations gets them (the query's answer call).
        None => plain_answer(&material, request.system.contains("[[")),
    };
    ScriptedReply { text }
}

/// The pictures of the last user message.
fn last_images(request: &ChatRequest) -> impl Iterator<Item = &crate::llm::Image> {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .into_iter()
        .flat_map(|m| m.images.iter())
}

/// A picture's description as derived from its file (a test endpoint cannot see): the text of
/// a PNG's `Description` or `Comment` text chunk (`tEXt`), then its type and size, e.g.
/// "The chart shows … A PNG picture, 40 × 20 pixels." Other types get their type alone.
pub fn describe_picture(image: &crate::llm::Image) -> String {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(image.base64.as_bytes())
        .unwrap_or_default();
    let mut said = String::new();
    let mut size = None;
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        let mut at = 8;
        while at + 12 <= bytes.len() {
            let len = u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
                as usize;
            let kind = &bytes[at + 4..at + 8];
            let Some(data) = bytes.get(at + 8..at + 8 + len) else {
                break;
            };
            if kind == b"IHDR" && len >= 8 {
                let w = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
                let h = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
                size = Some((w, h));
            } else if kind == b"tEXt" {
                if let Some(nul) = data.iter().position(|b| *b == 0) {
                    if matches!(&data[..nul], b"Description" | b"Comment") {
                        said.push_str(String::from_utf8_lossy(&data[nul + 1..]).trim());
                        said.push(' ');
                    }
                }
            }
            at += 12 + len;
        }
    }
    let kind = image
        .mime
        .strip_prefix("image/")
        .unwrap_or(&image.mime)
        .to_ascii_uppercase();
    match size {
        Some((w, h)) => format!("{said}A {kind} picture, {w} × {h} pixels."),
        None => format!("{said}A {kind} picture."),
    }
}

/// Plain answer: the sentence from the data blocks sharing the most terms with the question, and
/// the runner-up when it shares at least half as many, in their original order; without data
/// blocks, the question quoted back. With `cite`, each sentence is followed by `[[key]]` of its
/// block (`[^id]` for a source passage's block `^id`), and a question no sentence shares a term with is answered "not in these pages".
fn plain_answer(m: &Material, cite: bool) -> String {
    if m.sentences.is_empty() {
        let q: String = m.question.chars().take(200).collect();
        return if q.is_empty() {
            "(no question)".into()
        } else {
            format!("You asked: {q}")
        };
    }
    let q = terms(&m.question);
    let mut scored: Vec<(usize, usize)> = m
        .sentences
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let st = terms(s);
            (q.iter().filter(|t| st.contains(t)).count(), i)
        })
        .collect();
    crate::util::sort_by(&mut scored, &|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let best = scored.first().map_or(0, |s| s.0);
    // The best sentence, and a second one when it is at least half as relevant.
    let mut picked: Vec<usize> = scored
        .iter()
        .take(2)
        .filter(|(s, _)| *s > 0 && *s * 2 >= best)
        .map(|(_, i)| *i)
        .collect();
    if picked.is_empty() {
        if cite {
            return "These pages do not answer the question.".into();
        }
        picked.push(0);
    }
    crate::util::sort(&mut picked);
    picked
        .iter()
        .map(|&i| {
            if cite {
                // A source passage's block (`^s1`) is cited by its footnote marker.
                match m.sentence_keys[i].strip_prefix('^') {
                    Some(id) => format!("{} [^{id}]", m.sentences[i]),
                    None => format!("{} [[{}]]", m.sentences[i], m.sentence_keys[i]),
                }
            } else {
                m.sentences[i].clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A JSON value for `schema` built from the material: strings named like titles take headings,
/// other strings take sentences (verbatim, round robin through `cursor`), arrays get one or two
/// items (at least `minItems`), enums their first option, numbers their minimum or 0, booleans
/// `true`.
pub fn generate(schema: &Value, m: &Material, name: &str, cursor: &mut usize) -> Value {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return options.first().cloned().unwrap_or(Value::Null);
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(first) = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return generate(first, m, name, cursor);
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ if schema.get("items").is_some() => "array",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, sub) in props {
                    out.insert(k.clone(), generate(sub, m, k, cursor));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
            let max = schema.get("maxItems").and_then(Value::as_u64).unwrap_or(2) as usize;
            let n = min.max(2.min(max)).max(min);
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            let singular = name.trim_end_matches('s');
            Value::Array(
                (0..n)
                    .map(|_| generate(&items, m, singular, cursor))
                    .collect(),
            )
        }
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or_else(|| json!(0)),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => {
            let lname = name.to_ascii_lowercase();
            let title_like = [
                "title", "name", "entity", "concept", "page", "link", "alias", "tag", "key",
            ]
            .iter()
            .any(|w| lname.contains(w));
            let pick = |list: &[String], cursor: &mut usize| -> Option<String> {
                if list.is_empty() {
                    return None;
                }
                let s = list[*cursor % list.len()].clone();
                *cursor += 1;
                Some(s)
            };
            let s = if title_like {
                pick(&m.headings, cursor).or_else(|| m.blocks.first().map(|b| b.key.clone()))
            } else {
                pick(&m.sentences, cursor)
            };
            Value::String(s.unwrap_or_else(|| {
                let q: String = m.question.chars().take(80).collect();
                if q.is_empty() {
                    name.to_string()
                } else {
                    q
                }
            }))
        }
    }
}

/// `connection_test`: `{ "ok": true, "echo": <the text of the first data block> }`.
fn connection_test(_: &ChatRequest, schema: &JsonSchema, m: &Material) -> Value {
    let mut v = generate(&schema.schema, m, "", &mut 0);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("ok".into(), json!(true));
        if let Some(b) = m.blocks.first() {
            obj.insert("echo".into(), json!(b.text.trim()));
        }
    }
    v
}

/// Cuts `text` so its estimated tokens fit `max_tokens`; returns the text and whether it was cut.
pub fn fit_to_max_tokens(
    text: &str,
    max_tokens: u32,
    estimator: &TokenEstimator,
) -> (String, bool) {
    if estimator.estimate(text) <= u64::from(max_tokens) {
        return (text.to_string(), false);
    }
    let mut out = String::new();
    for c in text.chars() {
        out.push(c);
        if estimator.estimate(&out) > u64::from(max_tokens) {
            out.pop();
            break;
        }
    }
    (out, true)
}

/// Deterministically broken JSON for the `malformed` fault: prose and an object that never closes
/// (not repairable, so the repair round trip is exercised).
pub fn malformed(text: &str) -> String {
    let cut: String = text.chars().take(text.chars().count() / 2).collect();
    format!("Sure! Here is the JSON you asked for:\n{cut}")
}

/// A fault a [`ScriptedLlm`] call can be given.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Fail with this error.
    Fail(Error),
    /// Cut the reply in half with finish reason `length`.
    Truncate,
    /// Reply with [`malformed`] JSON.
    Malformed,
    /// Reply with empty content.
    Empty,
    /// Empty content; the answer in the reasoning channel (F02c).
    ReasoningOnly,
    /// Prefix the answer with a `<think>` block.
    Think,
    /// Integrate replies echo the page outline they were shown in append mode, reworded or
    /// not, or repeat their blocks ([`crate::compile::scripted::Echo`]); other calls are as
    /// without a fault.
    Echo(crate::compile::scripted::Echo),
    /// Extract replies propose contradictions credulously, against every numeric existing
    /// claim the source shares a word with ([`credulous`]); other calls are as without a fault.
    Credulous,
}

/// `text` (the reply to `request`) as a credulous model writes it, when `request` is an
/// `extract` call: see [`crate::compile::scripted::credulous_contradictions`]. Any other reply
/// comes back unchanged.
pub fn credulous(request: &ChatRequest, text: &str) -> String {
    let extract = request.json.as_ref().is_some_and(|j| j.name == "extract");
    match serde_json::from_str::<Value>(text) {
        Ok(v) if extract => {
            crate::compile::scripted::credulous_contradictions(last_user(request), v).to_string()
        }
        _ => text.to_string(),
    }
}

/// `text` (the reply to `request`) as a model that echoes writes it, when `request` is an
/// integrate call (`integrate` or `integrate_pages`): see [`crate::compile::scripted::Echo`].
/// Any other reply comes back unchanged.
pub fn echoed(request: &ChatRequest, text: &str, echo: crate::compile::scripted::Echo) -> String {
    let integrate = request
        .json
        .as_ref()
        .is_some_and(|j| j.name == "integrate" || j.name == "integrate_pages");
    match serde_json::from_str::<Value>(text) {
        Ok(v) if integrate => {
            crate::compile::scripted::echo_integrate(last_user(request), v, echo).to_string()
        }
        _ => text.to_string(),
    }
}

/// An in-process [`Llm`] answering with [`reply`]: counts calls, records requests, and applies
/// the [`Fault`] registered for the k-th call (1-based). Replies longer than the request's
/// `max_tokens` are cut and reported as truncated, like a real endpoint. Usage is reported
/// (estimated with the default estimator, `estimated: false`).
#[derive(Debug, Default)]
pub struct ScriptedLlm {
    calls: Cell<u32>,
    requests: RefCell<Vec<ChatRequest>>,
    faults: RefCell<Vec<(u32, Fault)>>,
    always: RefCell<Option<Fault>>,
}

impl ScriptedLlm {
    /// A scripted LLM without faults.
    pub fn new() -> Self {
        ScriptedLlm::default()
    }
    /// Applies `fault` to call number `k` (1-based).
    pub fn fault_on(self, k: u32, fault: Fault) -> Self {
        self.faults.borrow_mut().push((k, fault));
        self
    }
    /// Applies `fault` to every call without a per-call fault.
    pub fn fault_always(self, fault: Fault) -> Self {
        *self.always.borrow_mut() = Some(fault);
        self
    }
    /// Calls made so far.
    pub fn calls(&self) -> u32 {
        self.calls.get()
    }
    /// The requests received, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.borrow().clone()
    }
}

/// The model name [`ScriptedLlm`] reports.
pub const SCRIPTED_MODEL: &str = "scripted-chat";

impl Llm for ScriptedLlm {
    async fn chat(
        &self,
        request: &ChatRequest,
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> crate::Result<ChatResponse> {
        cancel.check()?;
        let k = self.calls.get() + 1;
        self.calls.set(k);
        self.requests.borrow_mut().push(request.clone());
        let fault = self
            .faults
            .borrow()
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, f)| f.clone())
            .or_else(|| self.always.borrow().clone());
        let estimator = TokenEstimator::default();
        let max_tokens = request.max_tokens.unwrap_or(4096);
        let mut text = reply(request).text;
        if let Some(Fault::Echo(echo)) = &fault {
            text = echoed(request, &text, *echo);
        }
        if fault == Some(Fault::Credulous) {
            text = credulous(request, &text);
        }
        let (mut content, cut) = fit_to_max_tokens(&text, max_tokens, &estimator);
        let mut reasoning = String::new();
        let mut finish = if cut { "length" } else { "stop" };
        match fault {
            Some(Fault::Fail(e)) => return Err(e),
            Some(Fault::Truncate) => {
                content = text.chars().take(text.chars().count() / 2).collect();
                finish = "length";
            }
            Some(Fault::Malformed) => content = malformed(&text),
            Some(Fault::Empty) => content.clear(),
            Some(Fault::ReasoningOnly) => reasoning = std::mem::take(&mut content),
            Some(Fault::Echo(_)) | Some(Fault::Credulous) | None => {}
            Some(Fault::Think) => {
                content =
                    format!("<think>\nPlan: maybe {{\"draft\": true}}? No.\n</think>\n\n{content}")
            }
        }
        if let Some(on_token) = on_token {
            let mut filter = crate::llm::stream::ThinkFilter::new();
            let chars: Vec<char> = content.chars().collect();
            for piece in chars.chunks(8) {
                cancel.check()?;
                let shown = filter.feed(&piece.iter().collect::<String>());
                if !shown.is_empty() {
                    on_token(&shown);
                }
            }
            let tail = filter.finish();
            if !tail.is_empty() {
                on_token(&tail);
            }
        }
        let input = crate::llm::provider::estimate_input(request, &estimator);
        let output = estimator.estimate(&content) + estimator.estimate(&reasoning);
        Completion {
            content,
            reasoning,
            raw_finish: Some(RawFinish::from_openai(finish)),
            usage: Some((input, output.max(1))),
            model: SCRIPTED_MODEL.into(),
        }
        .into_response(request, max_tokens, &estimator, SCRIPTED_MODEL)
    }
}

/// Dimension of a scripted embedding model: the number after its last `-`
/// (`scripted-embed-768` → 768), else 32.
pub fn scripted_dimension(model: &str) -> usize {
    model
        .rsplit('-')
        .next()
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| (1..=8192).contains(n))
        .unwrap_or(32)
}

/// An in-process [`Embedder`]: the hashed n-gram method under `model`'s id and dimension (see
/// [`scripted_dimension`]), cross-lingual for a model id holding `xling`
/// ([`cross_lingual::scripted_vector`]), counting calls and texts, failing call k when told to.
#[derive(Debug)]
pub struct ScriptedEmbedder {
    inner: OfflineEmbedder,
    calls: Cell<u32>,
    texts: Cell<u64>,
    faults: RefCell<Vec<(u32, Error)>>,
    bad: RefCell<Vec<(String, bool)>>,
}

impl ScriptedEmbedder {
    /// An embedder for `model` (e.g. `scripted-embed-768`).
    pub fn new(model: &str) -> Self {
        ScriptedEmbedder {
            inner: OfflineEmbedder::with_model(model, scripted_dimension(model)),
            calls: Cell::new(0),
            texts: Cell::new(0),
            faults: RefCell::new(vec![]),
            bad: RefCell::new(vec![]),
        }
    }
    /// Answers every input that contains `needle` with an unusable vector: all NaN, or all zero
    /// with `zero` (the other inputs of the batch as usual).
    pub fn bad_vector_for(self, needle: &str, zero: bool) -> Self {
        self.bad.borrow_mut().push((needle.to_string(), zero));
        self
    }
    /// Fails call number `k` (1-based) with `error`.
    pub fn fail_call(self, k: u32, error: Error) -> Self {
        self.faults.borrow_mut().push((k, error));
        self
    }
    /// Calls made so far.
    pub fn calls(&self) -> u32 {
        self.calls.get()
    }
    /// Texts embedded so far.
    pub fn texts(&self) -> u64 {
        self.texts.get()
    }
}

impl Embedder for ScriptedEmbedder {
    fn model(&self) -> String {
        self.inner.model()
    }
    async fn embed(&self, texts: &[String], cancel: &Cancel) -> crate::Result<Embeddings> {
        cancel.check()?;
        let k = self.calls.get() + 1;
        self.calls.set(k);
        if let Some((_, e)) = self.faults.borrow().iter().find(|(n, _)| *n == k) {
            return Err(e.clone());
        }
        self.texts.set(self.texts.get() + texts.len() as u64);
        let mut e = self.inner.embed(texts, cancel).await?;
        let model = self.inner.model();
        if cross_lingual::is_cross_lingual(&model) {
            for (t, v) in texts.iter().zip(e.vectors.iter_mut()) {
                *v = cross_lingual::scripted_vector(&model, e.dimension, t);
            }
        }
        for (t, v) in texts.iter().zip(e.vectors.iter_mut()) {
            if let Some((_, zero)) = self.bad.borrow().iter().find(|(n, _)| t.contains(n)) {
                v.fill(if *zero { 0.0 } else { f32::NAN });
            }
        }
        let est = TokenEstimator::default();
        e.usage = TokenUsage {
            input: texts.iter().map(|t| est.estimate(t)).sum(),
            output: 0,
            calls: 1,
            estimated: false,
        };
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::prompt::source_block;
    use crate::llm::{Message, Purpose};

    fn ask(system: &str, user: &str, json: Option<JsonSchema>) -> ChatRequest {
        ChatRequest {
            purpose: Purpose::Query,
            system: system.into(),
            messages: vec![Message::user(user)],
            json,
            max_tokens: None,
            temperature: None,
        }
    }

    #[test]
    fn sentences_are_verbatim() {
        assert_eq!(
            split_sentences("Tokio is fast. It uses epoll! 东京很大。真的吗？ v1.2 stays"),
            [
                "Tokio is fast.",
                "It uses epoll!",
                "东京很大。",
                "真的吗？",
                "v1.2 stays"
            ]
        );
    }

    #[test]
    fn plain_answers_copy_the_relevant_sentences() {
        let doc = "# Tokio\nTokio is an async runtime for Rust. The weather is nice today. Tokio schedules tasks with work stealing.";
        let r = reply(&ask(
            "Answer from the sources.",
            &format!(
                "How does Tokio schedule tasks?\n{}",
                source_block("tokio.md", doc)
            ),
            None,
        ));
        assert_eq!(
            r.text,
            "Tokio is an async runtime for Rust. Tokio schedules tasks with work stealing."
        );
        let zh = "# 机器学习\n机器学习是人工智能的一个分支。监督学习使用标注数据。今天天气很好。";
        let r = reply(&ask(
            "",
            &format!("什么是监督学习？{}", source_block("ml.md", zh)),
            None,
        ));
        assert_eq!(r.text, "监督学习使用标注数据。");
        // Different input, different reply: nothing is canned.
        let r2 = reply(&ask("", "Hello there", None));
        assert_eq!(r2.text, "You asked: Hello there");
    }

    #[test]
    fn structured_replies_follow_the_schema() {
        let schema = json!({
            "type": "object",
            "required": ["title", "claims", "kind"],
            "properties": {
                "title": {"type": "string"},
                "claims": {"type": "array", "minItems": 1, "items": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}, "quote": {"type": "string"}}
                }},
                "kind": {"enum": ["entity", "concept"]},
                "confidence": {"type": "number", "minimum": 0.5}
            }
        });
        let doc = "# Tokio\nTokio is an async runtime. It has a scheduler.";
        let req = ask(
            "",
            &source_block("t.md", doc),
            Some(JsonSchema {
                name: "unregistered_task".into(),
                schema: schema.clone(),
            }),
        );
        let v: Value = serde_json::from_str(&reply(&req).text).unwrap();
        crate::llm::parse::validate(&v, &schema).unwrap();
        assert_eq!(v["title"], "Tokio");
        assert_eq!(v["kind"], "entity");
        // Strings are verbatim sentences of the source, round robin.
        assert_eq!(v["claims"][0]["quote"], "Tokio is an async runtime.");
        assert_eq!(v["claims"][0]["text"], "It has a scheduler.");
        assert!(doc.contains(v["claims"][1]["text"].as_str().unwrap()));
        assert_eq!(v["confidence"], 0.5);
    }

    #[test]
    fn scripted_llm_faults_and_truncation() {
        let llm = ScriptedLlm::new()
            .fault_on(
                2,
                Fault::Fail(Error::LlmServer {
                    status: 500,
                    message: "x".into(),
                }),
            )
            .fault_on(3, Fault::Truncate);
        let req = ask(
            "",
            &source_block("a", "Alpha is first. Beta is second."),
            None,
        );
        let cancel = Cancel::new();
        let r = futures::executor::block_on(llm.chat(&req, None, &cancel)).unwrap();
        assert!(!r.usage.estimated);
        assert_eq!(
            futures::executor::block_on(llm.chat(&req, None, &cancel))
                .unwrap_err()
                .code(),
            "LLM_SERVER"
        );
        assert_eq!(
            futures::executor::block_on(llm.chat(&req, None, &cancel))
                .unwrap_err()
                .code(),
            "LLM_TRUNCATED"
        );
        let short = ChatRequest {
            max_tokens: Some(2),
            ..req.clone()
        };
        assert_eq!(
            futures::executor::block_on(llm.chat(&short, None, &cancel))
                .unwrap_err()
                .code(),
            "LLM_TRUNCATED",
            "a reply longer than max_tokens is cut like a real endpoint"
        );
        assert_eq!(llm.calls(), 4);
    }
}
