//! Token budgets: the estimate of a compile ([`Wiki::estimate`]), the chunk size of extract calls
//! under a context window and a reply cap, the token budget a compile may spend ([`Budget`]), and
//! the reply lengths learned per model and reply cap, so a chunk's extraction fits its reply.
//!
//! *Invariant:* an estimate calls no model and writes nothing; learned ratios only shrink chunks
//! (a chunk never exceeds what the window allows).

use super::claims::{canonical_ids, claims_to_check};
use super::report::{CompileEstimate, CompileOptions, SourceEstimate};
use crate::clock::Clock;
use crate::compile::extract::{
    chunk_text, claim_lines_cost_up_to, images_cost, images_of_chunk, index_slice, ExtractInput,
};
use crate::compile::prompt;
use crate::error::{Error, Result};
use crate::model::TokenUsage;
use crate::storage::Storage;
use crate::wiki::Wiki;

/// The latest extract reply lengths per token of source text seen in this connection, keyed by
/// `"<model name>|<reply cap>"` (see [`Wiki::learned_chunk_cap`]), kept in the kernel's
/// per-connection state; not stored.
#[derive(Default)]
struct ReplyRatios(std::cell::RefCell<Option<(String, std::collections::VecDeque<f64>)>>);

pub(super) struct Budget {
    pub(super) cap: Option<u64>,
    pub(super) used: std::cell::Cell<u64>,
}

impl Budget {
    pub(super) fn check(&self, next: u64) -> Result<()> {
        match self.cap {
            Some(cap) if self.used.get() + next > cap => Err(Error::LlmBudgetExceeded {
                budget: cap,
                used: self.used.get(),
                needed: next,
            }),
            _ => Ok(()),
        }
    }
    pub(super) fn spend(&self, u: &TokenUsage) {
        self.used.set(self.used.get() + u.input + u.output);
    }
}

/// The longest chunk whose extract reply, at `ratio` reply tokens per text token, fills at most
/// [`REPLY_FILL`] of the `output` cap; never below an eighth of `static_budget` (or 64), never
/// above it.
pub(super) fn chunk_cap_for_ratio(ratio: f64, output: u64, static_budget: u64) -> u64 {
    ((output as f64 * REPLY_FILL / ratio) as u64)
        .max(static_budget / 8)
        .max(64)
        .min(static_budget)
}

/// Share of the reply cap an extract reply is planned to fill once the model's reply length per
/// token of text is known ([`Wiki::learned_chunk_cap`]): room for a denser passage than those
/// seen so far.
pub(super) const REPLY_FILL: f64 = 0.8;

/// Reply tokens per token of source text assumed before a model has shown any
/// ([`Wiki::learned_chunk_cap`]): one, a reply as long as its text (an extraction quotes its
/// claims verbatim). Guessing high costs one more call's fixed part; guessing low costs a reply
/// cut at the cap — the whole call — and, cut again after two halvings, the source (F03: retries
/// are few).
pub(super) const REPLY_PRIOR: f64 = 1.0;

/// How many of a model's latest reply lengths per token [`Wiki::learned_chunk_cap`] looks at.
pub(super) const RATIO_WINDOW: usize = 8;

/// Texts shorter than this (estimated tokens) teach nothing about reply length: the fixed part
/// of a reply (summary, entities, JSON) outweighs what the text adds.
pub(super) const MIN_LEARN_TOKENS: u64 = 256;

/// The reply cap of a compile's calls: the configured output cap, at least 128 tokens and at
/// most half the context window.
pub(crate) fn reply_cap(options: &CompileOptions) -> u64 {
    options
        .max_output_tokens
        .clamp(128, options.context_window.max(1024) / 2)
}

/// The key reply lengths are learned and kept under: the model's name ([`CompileModel::name`])
/// and its reply cap, `"<name>|<cap>"`.
pub(crate) fn reply_ratio_key(model_name: &str, reply_cap: u64) -> String {
    format!("{model_name}|{reply_cap}")
}

/// The most source text one extract call reads: what fits the window after the reply and the
/// prompt, and — for a model with bounded replies — at most twice the reply cap, since an
/// extraction (claims with verbatim quotes) runs to about half the length of its text.
pub(super) fn extract_chunk_budget(window: u64, output: u64, overhead: u64, bounded: bool) -> u64 {
    let fits = window.saturating_sub(output + overhead);
    if bounded { fits.min(2 * output) } else { fits }.max(256)
}

/// The estimated tokens of existing claims an extract call of a chunk of `chunk_tokens` lists:
/// about one claim line per two lines of text, at least 256, at most `claims_cap`.
pub(super) fn chunk_claims_budget(chunk_tokens: u64, claims_cap: u64) -> u64 {
    claims_cap.min((chunk_tokens / 2).max(256))
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// What a compile with `options` would cost, before running it (Decision 12 estimates).
    ///
    /// Per source: the extract calls, one per chunk, chunks cut as the compile cuts them (for a
    /// model whose replies have not been seen yet; [`Wiki::estimate_configured`] uses what the
    /// configured model's replies showed), each counted as its prompt with the index lines of
    /// every page the source names and as many existing claims as the chunk's claims budget
    /// holds — at least what the compile sends for it as the wiki is now; and one integrate
    /// call per page it is likely to touch — its summary page plus one per second- or
    /// third-level heading, at most [`crate::compile::extract::MAX_ENTITIES_PER_SOURCE`] + 1. Output is
    /// bounded by `max_output_tokens` per call. A guess, not a promise: a batch's later sources
    /// meet the pages and claims its earlier ones add, and a reply cut at the cap (a model more
    /// verbose than it has shown) re-cuts a chunk, both of which cost more; the offline compiler
    /// costs 0 tokens.
    pub async fn estimate(&self, options: &CompileOptions) -> Result<CompileEstimate> {
        self.estimate_for(options, None).await
    }

    /// [`Wiki::estimate`] for the model named `model_name` ([`CompileModel::name`]): chunks are
    /// cut no longer than the reply lengths learned for it allow, as its compile will cut them.
    pub(crate) async fn estimate_for(
        &self,
        options: &CompileOptions,
        model_name: Option<&str>,
    ) -> Result<CompileEstimate> {
        let est = &options.estimator;
        let schema = self.schema().await?;
        // Page metadata and sizes from the page table; no body is read.
        let table = self.page_table().await?;
        let pages = table.pages_without_bodies();
        let avg_body = if table.is_empty() {
            300
        } else {
            let bytes: u64 = table.rows().map(|r| r.bytes).sum::<u64>() / table.len() as u64;
            (bytes as f64 / f64::from(est.chars_per_token.max(1.0))).ceil() as u64
        };
        let window = options.context_window.max(1024);
        let output = reply_cap(options);
        let index_budget = ((window as f64) * options.index_share.clamp(0.05, 0.5)) as u64;
        let claims_cap = index_budget / 2;
        let system = est.estimate(&prompt::extract_system());
        let schema_tokens = est.estimate(&schema);
        let mut out = CompileEstimate::default();
        for source in self.sources_to_compile(options).await? {
            let text = self.source_text(&source.version).await?;
            // The extract prompts as `extract_source` builds them, with the source's whole index
            // slice and a full claims budget in each (each chunk gets at most that): no ranking.
            let (slice, slice_keys) = index_slice(&text, &pages, index_budget, est);
            // The existing claims an extract call may list, as `extract_source` picks them.
            let mut snap = self.snapshot(&source.key).await?;
            self.load_candidate_claims(&mut snap, &source.key, &text, &slice_keys)
                .await?;
            let canonical = canonical_ids(&snap.claims, &pages);
            let claims_cost = claim_lines_cost_up_to(
                claims_to_check(&snap.claims, &canonical, &source.key),
                claims_cap,
                est,
            );
            // The pictures described so far (a compile with describeImages on may describe more).
            let images = self.described_images(&text).await?;
            let overhead = system
                + schema_tokens
                + est.estimate(&slice)
                + claims_cost
                + images_cost(&images, est)
                + 200;
            let static_budget = extract_chunk_budget(window, output, overhead, true);
            // A model not named is one whose replies have not been seen: the compile cuts its
            // first chunks for the prior reply length.
            let chunk_budget = model_name.map_or(
                chunk_cap_for_ratio(REPLY_PRIOR, output, static_budget),
                |name| {
                    self.learned_chunk_cap(&reply_ratio_key(name, output), output, static_budget)
                },
            );
            let chunks = chunk_text(&text, chunk_budget, chunk_budget / 10, est);
            let parts = chunks.len();
            let headings = text
                .lines()
                .filter(|l| l.starts_with("## ") || l.starts_with("### "))
                .count() as u64;
            let touched =
                (1 + headings).min(crate::compile::extract::MAX_ENTITIES_PER_SOURCE as u64 + 1);
            let text_tokens = est.estimate(&text);
            let extract_input: u64 = chunks
                .iter()
                .enumerate()
                .map(|(i, chunk)| {
                    let claims_budget = chunk_claims_budget(est.estimate(chunk), claims_cap);
                    let input = ExtractInput {
                        source_key: source.key.clone(),
                        source_title: source.title.clone(),
                        text: chunk.clone(),
                        part: i + 1,
                        parts,
                        schema_md: schema.clone(),
                        index_slice: slice.clone(),
                        existing_claims: String::new(),
                        images: images_of_chunk(&images, chunk, &text, i == 0),
                    };
                    system
                        + est.estimate(&prompt::extract_user(&input))
                        + claims_cost.min(claims_budget)
                })
                .sum();
            let integrate_input = touched
                * (est.estimate(&prompt::integrate_system()) + schema_tokens + avg_body + 200)
                + text_tokens / 2;
            let s = SourceEstimate {
                key: source.key.clone(),
                title: source.title.clone(),
                chunks: chunks.len(),
                calls: chunks.len() as u64 + touched,
                input: extract_input + integrate_input,
                output: (chunks.len() as u64 + touched) * output.min(avg_body + 400),
            };
            out.total.input += s.input;
            out.total.output += s.output;
            out.total.calls += s.calls;
            out.sources.push(s);
        }
        out.total.estimated = true;
        Ok(out)
    }

    /// The longest source chunk (estimated tokens) an extract call of the model `key`
    /// (`"<model name>|<reply cap>"`) should send, from the reply lengths it has shown
    /// ([`Wiki::learn_reply_ratio`], kept across connections): the text whose extraction, at the
    /// longest reply per token of the last [`RATIO_WINDOW`] seen — [`REPLY_PRIOR`] before any —
    /// fills [`REPLY_FILL`] of the reply cap `output`; never above `static_budget` (the chunk the
    /// window and reply cap allow), nor below an eighth of it or 64.
    pub(super) fn learned_chunk_cap(&self, key: &str, output: u64, static_budget: u64) -> u64 {
        let state = self.op_state.get::<ReplyRatios>();
        let learned = state.0.borrow();
        let ratio = match learned.as_ref() {
            Some((k, ratios)) if k == key => ratios.iter().copied().fold(0.0f64, f64::max),
            _ => 0.0,
        };
        let ratio = if ratio > 0.0 { ratio } else { REPLY_PRIOR };
        chunk_cap_for_ratio(ratio, output, static_budget)
    }

    /// The extract reply lengths per source token this connection has seen, with the key they
    /// were seen under ([`reply_ratio_key`]), oldest first; `None` before any.
    pub(crate) fn reply_ratios(&self) -> Option<(String, Vec<f64>)> {
        let state = self.op_state.get::<ReplyRatios>();
        let learned = state.0.borrow();
        let (k, ratios) = learned.as_ref()?;
        Some((k.clone(), ratios.iter().copied().collect()))
    }

    /// Starts this connection from reply lengths kept from an earlier one (`ratios` for `key`,
    /// oldest first, at most the last [`RATIO_WINDOW`] kept; non-finite or non-positive values
    /// dropped), unless it has seen replies for `key` itself.
    pub(crate) fn seed_reply_ratios(&self, key: &str, ratios: &[f64]) {
        let state = self.op_state.get::<ReplyRatios>();
        let mut learned = state.0.borrow_mut();
        if learned.as_ref().is_some_and(|(k, _)| k == key) {
            return;
        }
        let mut kept: std::collections::VecDeque<f64> = ratios
            .iter()
            .copied()
            .filter(|r| r.is_finite() && *r > 0.0)
            .collect();
        while kept.len() > RATIO_WINDOW {
            kept.pop_front();
        }
        if !kept.is_empty() {
            *learned = Some((key.to_string(), kept));
        }
    }

    /// Records a reply length per token of source text seen from the model `key` (a reply's, or
    /// for a reply cut at the cap, the cap's: a lower bound). The last [`RATIO_WINDOW`] are kept,
    /// so a dense passage shrinks the next chunks and, once it is that far behind, stops to.
    pub(super) fn learn_reply_ratio(&self, key: &str, ratio: f64) {
        if !ratio.is_finite() || ratio <= 0.0 {
            return;
        }
        let state = self.op_state.get::<ReplyRatios>();
        let mut learned = state.0.borrow_mut();
        match &mut *learned {
            Some((k, ratios)) if k == key => {
                if ratios.len() == RATIO_WINDOW {
                    ratios.pop_front();
                }
                ratios.push_back(ratio);
            }
            other => *other = Some((key.to_string(), [ratio].into())),
        }
    }
}
