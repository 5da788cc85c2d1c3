//! What a compile is asked and what it answers: [`CompileOptions`], the [`Progress`] events, the
//! per-source [`SourceReport`] with its retries and rejected contradictions, the whole
//! [`CompileReport`], the token [`CompileEstimate`], and the [`FailureRecord`] a failed source
//! leaves under [`FAILURE_PREFIX`].
//!
//! *Invariant:* these are plain serialisable values (the JS API's types); nothing here reads or
//! writes the wiki.

use serde::{Deserialize, Serialize};

use crate::model::{OpId, TokenUsage};
use crate::text::TokenEstimator;

/// Options of [`Wiki::compile`] (JS: `compile({...})`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct CompileOptions {
    /// Recompile every selected source, even compiled and unchanged ones.
    pub force: bool,
    /// Only these source keys (default: every pending source).
    pub sources: Option<Vec<String>>,
    /// Integrate calls in flight at once. Range 1–16; default 4. 1 is slowest and gentlest on a
    /// local model; 16 suits hosted endpoints with high rate limits.
    pub parallelism: usize,
    /// The model's context window in tokens. Range 2 048–2 000 000; default 8 192. Sources are
    /// split so that one extract call fits.
    pub context_window: u64,
    /// Tokens reserved for each reply. Range 256–65 536; default 2 048.
    pub max_output_tokens: u64,
    /// Share of the context window for the index slice in extract prompts. Range 0.05–0.5;
    /// default 0.2.
    pub index_share: f64,
    /// Cap on the tokens (input + output) of each source's compile — one operation (Decision 12);
    /// `None` for no cap. A source that would exceed it fails with `LLM_BUDGET_EXCEEDED` and the
    /// wiki is left as it was.
    pub token_budget: Option<u64>,
    /// Token estimation (Decision 12).
    pub estimator: TokenEstimator,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            force: false,
            sources: None,
            parallelism: 4,
            context_window: 8192,
            max_output_tokens: 2048,
            index_share: 0.2,
            token_budget: None,
            estimator: TokenEstimator::default(),
        }
    }
}

/// Progress of a compile, reported as it goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", tag = "stage")]
pub enum Progress {
    /// Starting source `index` (0-based) of `total`.
    Source {
        /// Source key.
        key: String,
        /// 0-based position in the batch.
        index: usize,
        /// Batch size.
        total: usize,
    },
    /// Extracted one chunk.
    Extracted {
        /// Source key.
        key: String,
        /// 1-based chunk.
        part: usize,
        /// Chunks.
        parts: usize,
    },
    /// Integrated one page.
    Integrated {
        /// Source key.
        key: String,
        /// Page key.
        page: String,
        /// Pages done.
        done: usize,
        /// Pages to do.
        total: usize,
    },
    /// The source's commit landed.
    Committed {
        /// Source key.
        key: String,
        /// Its operation.
        op: OpId,
    },
    /// Describing picture `index` (0-based) of `total`, an attachment a source to compile
    /// shows (with `describeImages` on).
    Describing {
        /// The attachment's name.
        name: String,
        /// 0-based position.
        index: usize,
        /// Pictures to describe.
        total: usize,
    },
    /// The source failed; the wiki is as it was.
    Failed {
        /// Source key.
        key: String,
        /// Error code.
        code: String,
        /// Message.
        message: String,
    },
}

/// What the compile of one source did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SourceReport {
    /// Source key.
    pub key: String,
    /// The compile operation.
    pub op: OpId,
    /// Pages created.
    pub created: Vec<String>,
    /// Pages updated.
    pub updated: Vec<String>,
    /// Claims stated.
    pub claims: usize,
    /// Claims whose quote was not found in the source.
    pub unverified: usize,
    /// Contradiction records opened.
    pub contradictions: Vec<String>,
    /// Contradictions the model proposed that the app turned away, each with why
    /// ([`RejectedContradiction`]).
    pub contradictions_rejected: Vec<RejectedContradiction>,
    /// Pages whose update was held as a proposal (it would have dropped a human edit).
    pub held: Vec<String>,
    /// Pages whose update was asked again, and why (a reply cut at the output limit is asked
    /// again in append mode with fewer facts, or with fewer pages per call; the facts left out
    /// are listed under `## Facts`, so nothing is lost).
    pub retried: Vec<Retried>,
    /// Token usage.
    pub usage: TokenUsage,
}

/// Why a page's update was asked again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "kebab-case")]
pub enum RetryReason {
    /// The reply was cut at the output limit (`maxOutputTokens`).
    Truncated,
}

/// A page whose update was asked again ([`SourceReport::retried`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Retried {
    /// The page key.
    pub page: String,
    /// Why.
    pub reason: RetryReason,
}

/// Why a proposed contradiction opened no record. A record opens only when both claims are
/// asserted, both quotes occur verbatim in their own sources, and both claims are on one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "kebab-case")]
pub enum RejectReason {
    /// The proposal names no existing claim the extract call was shown.
    UnknownClaim,
    /// The existing claim is this source's own.
    SameSource,
    /// The new quote does not occur in this source.
    QuoteNotInSource,
    /// The existing claim's quote was not found in its source.
    UnverifiedExisting,
    /// No claim of this source has the proposed quote.
    NoSuchClaim,
    /// The source states its side as reported, retracted or hypothetical.
    NotAsserted,
    /// The existing claim is stated as reported, retracted or hypothetical.
    ExistingNotAsserted,
    /// The two claims are not on one page.
    DifferentPages,
}

/// A contradiction the model proposed and the app turned away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct RejectedContradiction {
    /// The pages of the two claims (the existing claim's first; empty when it names none).
    pub pages: Vec<String>,
    /// The existing claim's quote (when there is such a claim), then the quote the model gave
    /// from this source.
    pub quotes: Vec<String>,
    /// Why no record opened.
    pub reason: RejectReason,
}

/// A source that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SourceFailure {
    /// Source key.
    pub key: String,
    /// Error code.
    pub code: String,
    /// Message.
    pub message: String,
}

/// What [`Wiki::compile`] did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct CompileReport {
    /// Compiled sources, in order.
    pub compiled: Vec<SourceReport>,
    /// Failed sources (each left pending, the wiki unchanged by it).
    pub failed: Vec<SourceFailure>,
    /// Total token usage (the pictures' descriptions included).
    pub usage: TokenUsage,
    /// Total unverified claims.
    pub unverified: usize,
    /// Pictures described before the compile (with `describeImages` on), and those that could
    /// not be: their sources were compiled from their text alone.
    #[serde(default)]
    pub images: ImagesReport,
}

/// What describing pictures did before a compile ([`CompileReport::images`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct ImagesReport {
    /// Names of the attachments described.
    pub described: Vec<String>,
    /// The attachments that were not, with why (`key` is the attachment's name).
    pub failed: Vec<SourceFailure>,
    /// Tokens the descriptions cost.
    pub usage: TokenUsage,
}

/// The estimated cost of compiling one source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SourceEstimate {
    /// Source key.
    pub key: String,
    /// Source title.
    pub title: String,
    /// Extract calls (chunks).
    pub chunks: usize,
    /// All model calls.
    pub calls: u64,
    /// Input tokens.
    pub input: u64,
    /// Output tokens (upper bound).
    pub output: u64,
}

/// What [`Wiki::estimate`] returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct CompileEstimate {
    /// Per source, in compile order.
    pub sources: Vec<SourceEstimate>,
    /// The sum, marked estimated.
    pub total: TokenUsage,
}

pub use crate::model::FailureRecord;

pub use crate::records::{FAILURE_PREFIX, PROPOSAL_PREFIX};
