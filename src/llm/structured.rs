//! Structured calls over any [`Llm`]: lenient parse, validation, one repair round trip, and the
//! per-operation token budget.

use std::cell::Cell;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::llm::config::Config;
use crate::llm::parse::parse_json;
use crate::llm::provider::estimate_input;
use crate::llm::{Cancel, ChatRequest, ChatResponse, Llm, Message, OnToken, Purpose};
use crate::model::TokenUsage;
use crate::text::TokenEstimator;

/// The answer of [`chat_json`].
#[derive(Debug, Clone, PartialEq)]
pub struct JsonReply {
    /// The parsed value; it validates against the request's schema.
    pub value: Value,
    /// Usage of every call made (one, or two with the repair).
    pub usage: TokenUsage,
    /// True when the repair round trip was needed.
    pub repaired: bool,
    /// The model that answered.
    pub model: String,
}

/// Longest bad reply quoted back in a repair request, in characters.
const MAX_QUOTED: usize = 6000;

/// One structured call: sends `request` (which must have `json`), parses the answer leniently
/// ([`crate::llm::parse::parse_json`]) and validates it. When that fails, sends one repair
/// request (the bad reply plus what was wrong) and parses again.
///
/// Errors: [`Error::InvalidInput`] without `request.json`; [`Error::LlmBadOutput`] when the
/// repaired reply still fails; every error of [`Llm::chat`] unchanged — a truncated reply
/// ([`Error::LlmTruncated`]) is never repaired or parsed (F03).
pub async fn chat_json<L: Llm>(
    llm: &L,
    request: &ChatRequest,
    cancel: &Cancel,
) -> Result<JsonReply> {
    let json = request.json.as_ref().ok_or_else(|| {
        Error::InvalidInput("chat_json needs a request with a JSON schema".into())
    })?;
    // Caps derived from the output budget, so a grammar-constrained model stops by itself. A
    // reply is held to them only where the endpoint refused them (the client then sends the
    // schema without): a model that was sent them and wrote more finished its reply, and every
    // item it wrote is kept (pages have bounds of their own).
    let uncapped = json;
    let capped;
    let request = match request.max_tokens {
        Some(max_tokens) if !has_caps(&json.schema) => {
            let mut r = request.clone();
            if let Some(j) = r.json.as_mut() {
                j.schema = cap_schema(&j.schema, max_tokens);
            }
            capped = r;
            &capped
        }
        _ => request,
    };
    let first = llm.chat(request, None, cancel).await?;
    // Asked after the call: a refusal of the caps is learned during it.
    let json = if llm.sends_schema_caps(request) {
        uncapped
    } else {
        request.json.as_ref().unwrap_or(json)
    };
    let failure = match parse_json(&first.text, &json.schema) {
        Ok(value) => {
            return Ok(JsonReply {
                value,
                usage: first.usage,
                repaired: false,
                model: first.model,
            })
        }
        Err(f) => f,
    };
    let mut repair = request.clone();
    let quoted: String = first.text.chars().take(MAX_QUOTED).collect();
    repair.messages.push(Message::assistant(quoted));
    repair.messages.push(Message::user(format!(
            "That reply could not be used: {}. Reply again with only the JSON value for the task \"{}\", matching the schema, with no prose and no code fence.",
            failure.message, json.name
        )));
    let second = llm.chat(&repair, None, cancel).await?;
    let mut usage = first.usage;
    usage.add(&second.usage);
    match parse_json(&second.text, &json.schema) {
        Ok(value) => Ok(JsonReply {
            value,
            usage,
            repaired: true,
            model: second.model,
        }),
        Err(f) => Err(Error::LlmBadOutput(format!(
            "task {:?}, after one repair: {}",
            json.name, f.message
        ))),
    }
}

/// The JSON Schema keywords that cap a reply's size: `maxItems` (arrays) and `maxLength`
/// (strings).
pub const CAP_KEYWORDS: [&str; 2] = ["maxItems", "maxLength"];

/// Characters of reply per output token the caps assume (English prose with BPE tokenizers).
/// Text that needs more tokens per character (CJK, code) reaches the token limit first, which is
/// reported as `LLM_TRUNCATED` as before.
pub const CAP_CHARS_PER_TOKEN: u64 = 4;

/// The least `maxLength` of a "one line" / "one sentence" string (when the budget allows it).
pub const ONE_LINE_CHARS: u64 = 200;

/// True when `schema` has a cap keyword anywhere.
pub fn has_caps(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => {
            CAP_KEYWORDS
                .iter()
                .any(|k| m.get(*k).is_some_and(Value::is_u64))
                || m.values().any(has_caps)
        }
        Value::Array(a) => a.iter().any(has_caps),
        _ => false,
    }
}

/// `schema` without its cap keywords (for an endpoint that rejects them).
pub fn strip_caps(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => Value::Object(
            m.iter()
                // A keyword's value is a number; a property that happens to be named so is not.
                .filter(|(k, v)| !(CAP_KEYWORDS.contains(&k.as_str()) && v.is_u64()))
                .map(|(k, v)| (k.clone(), strip_caps(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_caps).collect()),
        other => other.clone(),
    }
}

/// The smallest size, in characters of JSON, that a value of `schema` reasonably takes: a short
/// phrase for a string (24), 6 for a number, boolean or enum value, nothing but brackets for an
/// array, the sum of the fields (with their keys) for an object. What the array caps divide by.
fn floor_chars(schema: &Value) -> u64 {
    let Some(s) = schema.as_object() else {
        return 6;
    };
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        return e
            .iter()
            .map(|v| v.to_string().chars().count() as u64)
            .max()
            .unwrap_or(6);
    }
    match s.get("type").and_then(Value::as_str) {
        Some("string") => 24,
        Some("array") => 2,
        Some("object") => {
            2 + s
                .get("properties")
                .and_then(Value::as_object)
                .map_or(0, |p| {
                    p.iter()
                        .map(|(k, v)| k.chars().count() as u64 + 4 + floor_chars(v))
                        .sum()
                })
        }
        _ => 6,
    }
}

/// How much of an object's budget a field gets, relative to its siblings: a string described as
/// "one line" or "one sentence" a tenth, a number, boolean or enum none (it is small anyway),
/// anything else one share.
fn weight(schema: &Value) -> f64 {
    let Some(s) = schema.as_object() else {
        return 0.0;
    };
    if s.contains_key("enum") || s.contains_key("const") {
        return 0.0;
    }
    match s.get("type").and_then(Value::as_str) {
        Some("string") => {
            let d = s
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_lowercase();
            if d.contains("one line") || d.contains("one sentence") {
                0.1
            } else {
                1.0
            }
        }
        Some("array") | Some("object") => 1.0,
        _ => 0.0,
    }
}

/// `schema` with size caps derived from an output budget of `max_output_tokens` (issue 21, item
/// 13): what lets a grammar-constrained model (llama.cpp, Ollama's `format`) stop by itself
/// instead of filling arrays and strings until the token limit.
///
/// The budget is `max_output_tokens × 4` characters ([`CAP_CHARS_PER_TOKEN`]). An object splits
/// its budget, less its keys, among its fields by [`weight`]; a string gets `maxLength` = its
/// share (at least 16, and at least [`ONE_LINE_CHARS`] for a line or a sentence); an array gets `maxItems` = its share ÷ the smallest size of one item (at
/// least 1, at most 100), and its items are capped within the array's share. Keywords already
/// present are kept. Only the two [`CAP_KEYWORDS`] are added, so strict endpoints that refuse
/// them can be sent [`strip_caps`] of it.
pub fn cap_schema(schema: &Value, max_output_tokens: u32) -> Value {
    let budget = u64::from(max_output_tokens.max(1)) * CAP_CHARS_PER_TOKEN;
    cap_within(schema, budget)
}

fn cap_within(schema: &Value, budget: u64) -> Value {
    let Some(s) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = s.clone();
    if s.contains_key("enum") || s.contains_key("const") {
        return Value::Object(out);
    }
    match s.get("type").and_then(Value::as_str) {
        Some("string") => {
            out.entry("maxLength")
                .or_insert_with(|| Value::from(budget.max(16)));
        }
        Some("array") => {
            if let Some(items) = s.get("items") {
                let each = floor_chars(items).max(1) + 1;
                out.entry("maxItems")
                    .or_insert_with(|| Value::from((budget / each).clamp(1, 100)));
                out.insert("items".into(), cap_within(items, budget));
            }
        }
        Some("object") => {
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                let keys: u64 = props.keys().map(|k| k.chars().count() as u64 + 4).sum();
                let total: f64 = props.values().map(weight).sum();
                let left = budget.saturating_sub(keys + 2);
                let capped = props
                    .iter()
                    .map(|(k, v)| {
                        let w = weight(v);
                        let mut share = if total > 0.0 {
                            (left as f64 * w / total) as u64
                        } else {
                            left
                        };
                        if w > 0.0 && w < 1.0 {
                            // A line or a sentence gets room for one, within the object's budget.
                            share = share.max(ONE_LINE_CHARS.min(left));
                        }
                        (k.clone(), cap_within(v, share))
                    })
                    .collect();
                out.insert("properties".into(), Value::Object(capped));
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// Holds `value` to the array caps of `schema`: an array longer than its `maxItems` keeps its
/// first `maxItems` items (an endpoint that could not be sent the caps, or ignored them). Strings
/// over `maxLength` are left to validation (`parse::validate`), which sends them back for the
/// repair round trip rather than cutting text.
pub fn enforce_caps(value: &mut Value, schema: &Value) {
    let Some(s) = schema.as_object() else {
        return;
    };
    match value {
        Value::Array(items) => {
            if let Some(max) = s.get("maxItems").and_then(Value::as_u64) {
                items.truncate(max as usize);
            }
            if let Some(item_schema) = s.get("items") {
                for item in items {
                    enforce_caps(item, item_schema);
                }
            }
        }
        Value::Object(map) => {
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (k, v) in map.iter_mut() {
                    if let Some(sub) = props.get(k) {
                        enforce_caps(v, sub);
                    }
                }
            }
        }
        _ => {}
    }
}

/// An [`Llm`] that enforces one operation's token budget (Decision 12) and adds up its usage.
///
/// Before each call it estimates the input and adds the output cap (`request.max_tokens`, else
/// the configured cap for the purpose); when `used + that` exceeds the budget the call is refused
/// with [`Error::LlmBudgetExceeded`] without being sent. After each call the reported (or
/// estimated) usage is added.
#[derive(Debug)]
pub struct Budgeted<'a, L: Llm> {
    inner: &'a L,
    budget: u64,
    default_max_output: u32,
    estimator: TokenEstimator,
    used: Cell<TokenUsage>,
}

impl<'a, L: Llm> Budgeted<'a, L> {
    /// Wraps `inner` with the budget and output cap `config` gives `purpose`.
    pub fn new(inner: &'a L, config: &Config, purpose: Purpose) -> Self {
        let r = config.resolve(purpose);
        Budgeted {
            inner,
            budget: r.token_budget,
            default_max_output: r.max_output_tokens,
            estimator: config.estimator,
            used: Cell::new(TokenUsage::default()),
        }
    }

    /// Wraps `inner` with an explicit budget and default output cap.
    pub fn with_budget(
        inner: &'a L,
        budget: u64,
        default_max_output: u32,
        estimator: TokenEstimator,
    ) -> Self {
        Budgeted {
            inner,
            budget,
            default_max_output,
            estimator,
            used: Cell::new(TokenUsage::default()),
        }
    }

    /// Usage so far (all calls).
    pub fn usage(&self) -> TokenUsage {
        self.used.get()
    }

    /// Tokens left.
    pub fn remaining(&self) -> u64 {
        let u = self.used.get();
        self.budget.saturating_sub(u.input + u.output)
    }
}

impl<L: Llm> Llm for Budgeted<'_, L> {
    fn sends_schema_caps(&self, request: &ChatRequest) -> bool {
        self.inner.sends_schema_caps(request)
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<ChatResponse> {
        let used = self.used.get();
        let needed = estimate_input(request, &self.estimator)
            + u64::from(request.max_tokens.unwrap_or(self.default_max_output));
        if used.input + used.output + needed > self.budget {
            return Err(Error::LlmBudgetExceeded {
                budget: self.budget,
                used: used.input + used.output,
                needed,
            });
        }
        let r = self.inner.chat(request, on_token, cancel).await?;
        let mut u = self.used.get();
        u.add(&r.usage);
        self.used.set(u);
        Ok(r)
    }
}
