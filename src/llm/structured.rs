//! Structured calls over any [`Llm`]: lenient parse, validation, one repair round trip, and the
//! per-operation token budget.

use std::cell::Cell;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::llm::config::Config;
use crate::llm::parse::parse_json;
use crate::llm::provider::estimate_input;
use crate::llm::{Cancel, ChatRequest, ChatResponse, Llm, Message, OnToken, Purpose, Role};
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
    let first = llm.chat(request, None, cancel).await?;
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
    repair.messages.push(Message {
        role: Role::Assistant,
        content: quoted,
    });
    repair.messages.push(Message {
        role: Role::User,
        content: format!(
            "That reply could not be used: {}. Reply again with only the JSON value for the task \"{}\", matching the schema, with no prose and no code fence.",
            failure.message, json.name
        ),
    });
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
