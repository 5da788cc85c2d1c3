//! The compile pipeline: extract → resolve → integrate → commit, one source at a time.
//!
//! Sources compile in key order, one commit each, so a batch gives the same page keys, links,
//! claims and ledger whatever order its sources were added in. The model calls are behind
//! [`CompileModel`] (the LLM, the offline extractor, or a scripted model in tests), so the pipeline
//! is the same for all of them.
//!
//! *Invariant:* every failure — a model error, a malformed reply, cancellation, a storage error —
//! happens before or inside the one commit of its source, so the wiki is either as it was or has
//! the whole compile of that source. A failed source stays pending and gets a failure record
//! (`meta/compile-failure/<key>`), which is not part of the wiki's content.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};

use super::extract::{
    chunk_text, claim_lines_cost_up_to, index_slice, ClaimRanker, ExtractInput, Extraction,
};
use super::integrate::{
    added_paragraphs, app_rewritten_paragraphs, finalize_body, missing_human_paragraphs,
    strip_app_sections, written_bytes, Fact, Finalize, IntegrateInput, PageDraft,
};
use super::links::fix_links;
use super::model::CompileModel;
use super::prompt;
use super::provenance::{claim_id, contradiction_id, quote_occurs};
use super::resolve::{match_key, resolve, KnownPage, Mention, Target};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::Cancel;
use crate::markdown::keys::fold_key;
use crate::markdown::page::{clean_page, CleanOptions};
use crate::markdown::plain::plain_text;
use crate::markdown::resolve::Resolver;
use crate::model::{
    limits, Author, Claim, Contradiction, ContradictionStatus, MoreFacts, OpId, OperationKind,
    Page, PageKind, Revision, Source, SourceStatus, TokenUsage,
};
use crate::storage::{Expect, Storage, Store};
use crate::text::TokenEstimator;
use crate::wiki::{from_json, revision_key, to_json, Wiki};

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
    /// Total token usage.
    pub usage: TokenUsage,
    /// Total unverified claims.
    pub unverified: usize,
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

/// A failure record (`meta/compile-failure/<source key>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct FailureRecord {
    /// The source version that failed.
    pub version: String,
    /// Error code.
    pub code: String,
    /// Message.
    pub reason: String,
    /// When (ms).
    pub time: i64,
}

/// Meta key prefix of failure records.
pub const FAILURE_PREFIX: &str = "compile-failure/";
/// Meta key prefix of held proposals (a page update that would drop a human edit).
pub const PROPOSAL_PREFIX: &str = "proposal/";

/// Most link targets listed in one integrate prompt.
const MAX_LINK_TARGETS: usize = 150;
/// How often a commit is retried when a page changed underneath it.
const MAX_COMMIT_ATTEMPTS: usize = 3;

/// The per-run context every step needs.
#[derive(Clone, Copy)]
struct Run<'a> {
    options: &'a CompileOptions,
    budget: &'a Budget,
    on_progress: &'a dyn Fn(&Progress),
    cancel: &'a Cancel,
}

struct Budget {
    cap: Option<u64>,
    used: std::cell::Cell<u64>,
}

impl Budget {
    fn check(&self, next: u64) -> Result<()> {
        match self.cap {
            Some(cap) if self.used.get() + next > cap => Err(Error::LlmBudgetExceeded {
                budget: cap,
                used: self.used.get(),
                needed: next,
            }),
            _ => Ok(()),
        }
    }
    fn spend(&self, u: &TokenUsage) {
        self.used.set(self.used.get() + u.input + u.output);
    }
}

/// Topic tokens of a source's text that make the query finding pages like it
/// ([`Wiki::load_candidate_claims`]).
const CANDIDATE_QUERY_TERMS: usize = 24;
/// Pages most like a source's text whose claims are candidates for its contradiction check.
const CANDIDATE_PAGES: usize = 24;
/// At most this many claims of one candidate page are read for the contradiction check (a full
/// hub page states up to [`limits::HARD_FACTS`]), and at most [`CANDIDATE_CLAIMS`] in all, so the
/// check costs the same at 30 sources and at 300; a prompt shows only the few dozen most alike.
const CANDIDATE_CLAIMS_PER_PAGE: usize = 80;
/// At most this many candidate claims in all ([`CANDIDATE_CLAIMS_PER_PAGE`]).
const CANDIDATE_CLAIMS: usize = 1500;

/// The `n` most frequent topic tokens of `text` ([`crate::extractive::textrank::tokens`], counted
/// per sentence-sized piece), joined by spaces: ties by the token, so the query is the same for
/// the same text.
fn frequent_topic_tokens(text: &str, n: usize) -> String {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for piece in text.split(['\n', '.', '。']) {
        for t in crate::extractive::textrank::tokens(piece) {
            *counts.entry(t).or_default() += 1;
        }
    }
    let mut ranked: Vec<(String, usize)> = counts.into_iter().filter(|(_, c)| *c > 1).collect();
    crate::util::sort_by(&mut ranked, &|a, b| {
        b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0))
    });
    ranked
        .into_iter()
        .take(n)
        .map(|(t, _)| t)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The longest chunk whose extract reply, at `ratio` reply tokens per text token, fills at most
/// [`REPLY_FILL`] of the `output` cap; never below an eighth of `static_budget` (or 64), never
/// above it.
fn chunk_cap_for_ratio(ratio: f64, output: u64, static_budget: u64) -> u64 {
    ((output as f64 * REPLY_FILL / ratio) as u64)
        .max(static_budget / 8)
        .max(64)
        .min(static_budget)
}

/// The existing claims an extract call of `source_key` checks for contradictions: every other
/// source's, one line per (source, quote) — the claim on the most specific page (`canonical`:
/// [`canonical_ids`]).
fn claims_to_check<'a>(
    claims: &'a BTreeMap<String, Claim>,
    canonical: &'a HashMap<String, String>,
    source_key: &'a str,
) -> impl Iterator<Item = &'a Claim> {
    claims.values().filter(move |c| {
        // Only a verified, asserted claim can be a side of a record: no other is offered.
        c.source_key != source_key
            && c.verified
            && c.stance.is_asserted()
            && canonical.get(&c.id) == Some(&c.id)
    })
}

/// The snapshot of the wiki a plan is made from: every page's metadata (from the page table),
/// the bodies of only the pages loaded ([`Snapshot::load_pages`]: the ones a compile changes),
/// and the claims and contradiction records loaded for them — never the whole wiki.
pub(super) struct Snapshot {
    /// Every page by key, with its storage revision: metadata from the page table and an empty
    /// body unless loaded (then the page record as stored).
    pub(super) pages: BTreeMap<String, (Page, u64)>,
    /// The pages whose records (bodies included) are loaded.
    pub(super) loaded: BTreeSet<String>,
    /// The page table the metadata came from.
    pub(super) table: std::rc::Rc<crate::page_table::PageTable>,
    /// The claims loaded, by id.
    pub(super) claims: BTreeMap<String, Claim>,
    /// The contradiction records loaded, by id.
    pub(super) ledger: BTreeMap<String, Contradiction>,
    pub(super) sources: BTreeMap<String, Source>,
    pub(super) source_rev: u64,
    pub(super) schema_md: String,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// A snapshot for compiling or removing `source_key`: every page's metadata, every source,
    /// schema.md; no body, claim or record yet.
    pub(super) async fn snapshot(&self, source_key: &str) -> Result<Snapshot> {
        let table = self.page_table().await?;
        let pages = table
            .rows()
            .map(|r| (r.key.clone(), (r.page_without_body(), 0)))
            .collect();
        let mut sources = BTreeMap::new();
        let mut source_rev = 0;
        for (k, r) in self.storage.scan(Store::Sources, "").await? {
            let s: Source = from_json(Store::Sources, &k, &r.data)?;
            if k == source_key {
                source_rev = r.rev;
            }
            sources.insert(k, s);
        }
        let schema_md = self.schema().await?;
        Ok(Snapshot {
            pages,
            loaded: BTreeSet::new(),
            table,
            claims: BTreeMap::new(),
            ledger: BTreeMap::new(),
            sources,
            source_rev,
            schema_md,
        })
    }

    /// Loads the records (bodies and storage revisions) of `keys` into `snap`, and the claims
    /// stated on them and the contradiction records naming them (with those records' claims).
    pub(super) async fn load_pages(
        &self,
        snap: &mut Snapshot,
        keys: &BTreeSet<String>,
    ) -> Result<()> {
        let wanted: Vec<String> = keys
            .iter()
            .filter(|k| !snap.loaded.contains(*k))
            .cloned()
            .collect();
        for (k, r) in wanted
            .iter()
            .zip(self.storage.get_many(Store::Pages, &wanted).await?)
        {
            if let Some(r) = r {
                let p: Page = from_json(Store::Pages, k, &r.data)?;
                snap.pages.insert(k.clone(), (p, r.rev));
                snap.loaded.insert(k.clone());
            }
        }
        let mut claim_ids: BTreeSet<String> = BTreeSet::new();
        for k in keys {
            claim_ids.extend(
                crate::page_table::list(&self.storage, crate::page_table::PAGE_CLAIMS_PREFIX, k)
                    .await?,
            );
            for id in
                crate::page_table::list(&self.storage, crate::page_table::PAGE_RECORDS_PREFIX, k)
                    .await?
            {
                if snap.ledger.contains_key(&id) {
                    continue;
                }
                if let Some((r, _)) = self.read::<Contradiction>(Store::Ledger, &id).await? {
                    claim_ids.extend(r.claims.iter().cloned());
                    snap.ledger.insert(id, r);
                }
            }
        }
        self.load_claims(snap, claim_ids).await
    }

    /// Loads the claims `ids` into `snap` (ids without a claim are skipped).
    pub(super) async fn load_claims(
        &self,
        snap: &mut Snapshot,
        ids: impl IntoIterator<Item = String>,
    ) -> Result<()> {
        let mut wanted: Vec<String> = ids
            .into_iter()
            .filter(|id| !snap.claims.contains_key(id))
            .collect();
        wanted.sort();
        wanted.dedup();
        for (id, r) in wanted
            .iter()
            .zip(self.storage.get_many(Store::Claims, &wanted).await?)
        {
            if let Some(r) = r {
                let c: Claim = from_json(Store::Claims, id, &r.data)?;
                snap.claims.insert(id.clone(), c);
            }
        }
        Ok(())
    }

    /// Loads every claim of source `key` into `snap`.
    pub(super) async fn load_source_claims(&self, snap: &mut Snapshot, key: &str) -> Result<()> {
        let ids =
            crate::page_table::list(&self.storage, crate::page_table::SOURCE_CLAIMS_PREFIX, key)
                .await?;
        self.load_claims(snap, ids).await
    }

    /// Loads the contradiction record `id` into `snap`, when there is one.
    pub(super) async fn load_record(&self, snap: &mut Snapshot, id: &str) -> Result<()> {
        if !snap.ledger.contains_key(id) {
            if let Some((r, _)) = self.read::<Contradiction>(Store::Ledger, id).await? {
                snap.ledger.insert(id.to_string(), r);
            }
        }
        Ok(())
    }

    /// The snapshot a compile of `source` plans from after its extraction: every page's
    /// metadata, the source's own claims (a corrected source retracts those it no longer says),
    /// the existing claims its extraction says it contradicts and every claim of their sources
    /// (the contradiction names the claim on the most specific page, [`canonical_claim`]).
    async fn compile_snapshot(&self, source: &Source, extracted: &Extracted) -> Result<Snapshot> {
        let mut snap = self.snapshot(&source.key).await?;
        self.load_source_claims(&mut snap, &source.key).await?;
        let named: Vec<String> = extracted
            .extraction
            .contradictions
            .iter()
            .map(|c| c.existing_claim.trim().to_string())
            .collect();
        self.load_claims(&mut snap, named.iter().cloned()).await?;
        let sources: BTreeSet<String> = named
            .iter()
            .filter_map(|id| snap.claims.get(id).map(|c| c.source_key.clone()))
            .collect();
        for k in sources {
            self.load_source_claims(&mut snap, &k).await?;
        }
        Ok(snap)
    }

    /// Claims of other sources worth checking a source against for contradictions, loaded into
    /// `snap`: those stated on the pages the source names by title or alias (`named`), and on the
    /// pages most like its text by BM25 (its [`CANDIDATE_QUERY_TERMS`] most frequent topic
    /// tokens as the query, the best [`CANDIDATE_PAGES`] pages) — where another source's claims
    /// about the same things sit, named or not (a summary page, a page named otherwise). Then
    /// [`ClaimRanker`] picks, per chunk, the most alike of them. Reads the lists and claims of
    /// those pages only: the named pages first, then the BM25 ones in rank order, each with at
    /// most [`CANDIDATE_CLAIMS_PER_PAGE`] claims (the first by id: a fixed sample of a full
    /// page), until [`CANDIDATE_CLAIMS`].
    pub(super) async fn load_candidate_claims(
        &self,
        snap: &mut Snapshot,
        source_key: &str,
        text: &str,
        named: &[String],
    ) -> Result<()> {
        let mut pages: Vec<String> = Vec::new();
        for k in named {
            if !pages.contains(k) {
                pages.push(k.clone());
            }
        }
        let query = frequent_topic_tokens(text, CANDIDATE_QUERY_TERMS);
        if !query.is_empty() {
            let options = crate::search::SearchOptions {
                k: CANDIDATE_PAGES,
                mode: crate::search::SearchMode::Bm25,
                query_vector: None,
                ..Default::default()
            };
            let hits = self
                .search_index_shared()
                .await?
                .search(&query, &options)
                .hits;
            for h in hits {
                if !pages.contains(&h.key) {
                    pages.push(h.key);
                }
            }
        }
        let own: BTreeSet<&String> = snap
            .sources
            .get(source_key)
            .map(|s| s.summary_page.iter().chain(&s.parts).collect())
            .unwrap_or_default();
        let mut ids: Vec<String> = Vec::new();
        for k in pages.iter().filter(|k| !own.contains(k)) {
            if ids.len() >= CANDIDATE_CLAIMS {
                break;
            }
            let list =
                crate::page_table::list(&self.storage, crate::page_table::PAGE_CLAIMS_PREFIX, k)
                    .await?;
            let room = CANDIDATE_CLAIMS_PER_PAGE.min(CANDIDATE_CLAIMS - ids.len());
            ids.extend(list.into_iter().take(room));
        }
        self.load_claims(snap, ids).await
    }

    /// What a compile with `options` would cost, before running it (Decision 12 estimates).
    ///
    /// Per source: the extract calls, one per chunk, chunks cut as the compile cuts them (for a
    /// model whose replies have not been seen yet; [`Wiki::estimate_configured`] uses what the
    /// configured model's replies showed), each counted as its prompt with the index lines of
    /// every page the source names and as many existing claims as the chunk's claims budget
    /// holds — at least what the compile sends for it as the wiki is now; and one integrate
    /// call per page it is likely to touch — its summary page plus one per second- or
    /// third-level heading, at most [`super::extract::MAX_ENTITIES_PER_SOURCE`] + 1. Output is
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
            let overhead = system + schema_tokens + est.estimate(&slice) + claims_cost + 200;
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
            let touched = (1 + headings).min(super::extract::MAX_ENTITIES_PER_SOURCE as u64 + 1);
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

    /// Sources a compile with `options` would compile, in compile (key) order.
    pub async fn sources_to_compile(&self, options: &CompileOptions) -> Result<Vec<Source>> {
        let mut list: Vec<Source> = self
            .sources()
            .await?
            .into_iter()
            .filter(|s| match &options.sources {
                // Keys compare in Unicode NFC, as they are stored.
                Some(keys) => keys
                    .iter()
                    .any(|k| crate::wiki::source_key(k) == crate::wiki::source_key(&s.key)),
                None => true,
            })
            .filter(|s| {
                options.force
                    || !matches!(&s.status, SourceStatus::Compiled { version, .. } if *version == s.version && !s.version.is_empty())
            })
            .collect();
        crate::util::sort_by(&mut list, &|a, b| a.key.cmp(&b.key));
        Ok(list)
    }

    /// Compiles every new or changed source (or the selected ones) into pages, one operation per
    /// source. Unchanged compiled sources cost no model call. A failing source is reported and
    /// left pending; the others go on. Cancellation stops after the current call with
    /// [`Error::Cancelled`], keeping the sources already committed.
    pub async fn compile<M: CompileModel>(
        &self,
        model: &M,
        options: &CompileOptions,
        on_progress: &dyn Fn(&Progress),
        cancel: &Cancel,
    ) -> Result<CompileReport> {
        let sources = self.sources_to_compile(options).await?;
        let budget = Budget {
            cap: options.token_budget,
            used: std::cell::Cell::new(0),
        };
        let mut report = CompileReport::default();
        let total = sources.len();
        let run = Run {
            options,
            budget: &budget,
            on_progress,
            cancel,
        };
        for (index, source) in sources.into_iter().enumerate() {
            if cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            on_progress(&Progress::Source {
                key: source.key.clone(),
                index,
                total,
            });
            // The cap is per operation: each source starts from zero.
            budget.used.set(0);
            let result = match self.over_budget(model, &source, options).await {
                Ok(Some(e)) => Err(e),
                Ok(None) => self.compile_source(model, &source, &run).await,
                Err(e) => Err(e),
            };
            match result {
                Ok(r) => {
                    on_progress(&Progress::Committed {
                        key: r.key.clone(),
                        op: r.op,
                    });
                    report.usage.add(&r.usage);
                    report.unverified += r.unverified;
                    report.compiled.push(r);
                }
                Err(Error::Cancelled) => return Err(Error::Cancelled),
                Err(e) => {
                    let failure = SourceFailure {
                        key: source.key.clone(),
                        code: e.code().to_string(),
                        message: e.to_string(),
                    };
                    on_progress(&Progress::Failed {
                        key: failure.key.clone(),
                        code: failure.code.clone(),
                        message: failure.message.clone(),
                    });
                    self.record_failure(&source, &e).await;
                    report.failed.push(failure);
                }
            }
        }
        Ok(report)
    }

    /// With a token budget: the [`Error::LlmBudgetExceeded`] a source is refused with before any
    /// call, when its estimated input alone ([`Wiki::estimate`]) is over the budget — a source
    /// that cannot fit (a 400 KB changelog under the default budget) would otherwise spend
    /// nearly the whole budget on every compile before failing. `None`: try it (a source whose
    /// estimate fits may still fail at the budget, as before).
    async fn over_budget<M: CompileModel>(
        &self,
        model: &M,
        source: &Source,
        options: &CompileOptions,
    ) -> Result<Option<Error>> {
        let Some(cap) = options.token_budget else {
            return Ok(None);
        };
        if model.is_extractive() {
            return Ok(None);
        }
        let name = model.name();
        let one = CompileOptions {
            sources: Some(vec![source.key.clone()]),
            force: true,
            ..options.clone()
        };
        let estimate = self.estimate_for(&one, Some(&name)).await?;
        let needed: u64 = estimate.sources.iter().map(|s| s.input).sum();
        Ok((needed > cap).then_some(Error::LlmBudgetExceeded {
            budget: cap,
            used: 0,
            needed,
        }))
    }

    async fn record_failure(&self, source: &Source, e: &Error) {
        let record = FailureRecord {
            version: source.version.clone(),
            code: e.code().to_string(),
            reason: e.to_string(),
            time: self.clock.now_ms(),
        };
        let mut b = crate::storage::Batch::new();
        b.put(
            Store::Meta,
            format!("{FAILURE_PREFIX}{}", source.key),
            to_json(&record),
            Expect::Any,
        );
        // Best effort: the failure itself is already reported to the caller.
        let _ = self.storage.commit(b).await;
    }

    /// Failure records by source key.
    pub async fn compile_failures(&self) -> Result<BTreeMap<String, FailureRecord>> {
        let mut out = BTreeMap::new();
        for (k, r) in self.storage.scan(Store::Meta, FAILURE_PREFIX).await? {
            let f: FailureRecord = from_json(Store::Meta, &k, &r.data)?;
            out.insert(k[FAILURE_PREFIX.len()..].to_string(), f);
        }
        Ok(out)
    }

    async fn extract_source<M: CompileModel>(
        &self,
        model: &M,
        source: &Source,
        text: &str,
        snap: &mut Snapshot,
        run: &Run<'_>,
    ) -> Result<(Extraction, Vec<String>, TokenUsage)> {
        let Run {
            options,
            budget,
            on_progress,
            cancel,
        } = *run;
        let est = &options.estimator;
        let window = options.context_window.max(1024);
        let output = reply_cap(options);
        let index_budget = ((window as f64) * options.index_share.clamp(0.05, 0.5)) as u64;
        let pages: Vec<Page> = snap.pages.values().map(|(p, _)| p.clone()).collect();
        // The pages the source names; each chunk is then given the lines and claims of the
        // pages *it* names, so a chunk's prompt carries what concerns it and no more.
        let (slice, slice_keys) = index_slice(text, &pages, index_budget, est);
        let slice_set: BTreeSet<&String> = crate::util::btree_set(slice_keys.iter());
        let slice_pages: Vec<Page> = pages
            .iter()
            .filter(|p| slice_set.contains(&p.key))
            .cloned()
            .collect();
        // Other sources' claims on the pages the source names or is most like are candidates for
        // the contradiction check: a claim on another source's summary page is about the same
        // topic without sharing a page name.
        self.load_candidate_claims(snap, &source.key, text, &slice_keys)
            .await?;
        let canonical = canonical_ids(&snap.claims, &pages);
        let claims: Vec<Claim> = claims_to_check(&snap.claims, &canonical, &source.key)
            .cloned()
            .collect();
        let claims_cap = index_budget / 2;
        let ranker = ClaimRanker::new(&claims);
        let overhead = est.estimate(&prompt::extract_system())
            + est.estimate(&snap.schema_md)
            + est.estimate(&slice)
            + ranker.lines_cost_up_to(claims_cap, est)
            + 200;
        let static_budget = extract_chunk_budget(window, output, overhead, model.bounded_replies());
        // What this model's replies showed (in this connection, or kept from an earlier one):
        // no chunk longer than its replies can fit.
        let learned_key = reply_ratio_key(&model.name(), output);
        let bounded = model.bounded_replies();
        let budget_now = || {
            if bounded {
                self.learned_chunk_cap(&learned_key, output, static_budget)
            } else {
                static_budget
            }
        };
        let chunk_budget = budget_now();
        let mut queue: std::collections::VecDeque<(String, u8)> =
            chunk_text(text, chunk_budget, chunk_budget / 10, est)
                .into_iter()
                .map(|c| (c, 0))
                .collect();
        let mut parts = queue.len();
        let mut extraction = Extraction::default();
        let mut usage = TokenUsage::default();
        let mut i = 0;
        while let Some((chunk, depth)) = queue.pop_front() {
            if cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            // A reply seen since this chunk was cut may show it too long for this model.
            let cap = budget_now();
            if est.estimate(&chunk) > cap {
                let pieces = chunk_text(&chunk, cap, 0, est);
                if pieces.len() > 1 {
                    for p in pieces.into_iter().rev() {
                        queue.push_front((p, depth));
                    }
                    parts = i + queue.len();
                    continue;
                }
            }
            let (chunk_slice, _) = index_slice(&chunk, &slice_pages, index_budget, est);
            // Claims to check the chunk against: the existing claims most alike the chunk (a
            // later chunk says "it", not the name; another source's claim sits on its summary
            // page), in a budget that scales with the chunk.
            let claims_budget = chunk_claims_budget(est.estimate(&chunk), claims_cap);
            let existing = ranker.lines(&chunk, claims_budget, est);
            let input = ExtractInput {
                source_key: source.key.clone(),
                source_title: source.title.clone(),
                text: chunk,
                part: i + 1,
                parts,
                schema_md: snap.schema_md.clone(),
                index_slice: chunk_slice,
                existing_claims: existing,
            };
            budget.check(
                est.estimate(&prompt::extract_system())
                    + est.estimate(&prompt::extract_user(&input))
                    + output,
            )?;
            let (e, u) = match model.extract(&input, cancel).await {
                // The reply did not fit the output cap: ask again about half the text at a time
                // (a changed request, at most twice deeper; field case F03). Never parse a cut
                // reply. What it shows of the model's reply length is kept, so the rest of the
                // queue and later sources are cut to fit rather than paid for twice.
                Err(Error::LlmTruncated { .. }) if depth < 2 && est.estimate(&input.text) > 64 => {
                    let tokens = est.estimate(&input.text);
                    if tokens >= MIN_LEARN_TOKENS {
                        self.learn_reply_ratio(&learned_key, output as f64 / tokens as f64);
                    }
                    let half = (tokens / 2).max(32);
                    let pieces = chunk_text(&input.text, half, 0, est);
                    if pieces.len() > 1 {
                        for p in pieces.into_iter().rev() {
                            queue.push_front((p, depth + 1));
                        }
                        parts = i + queue.len();
                        continue;
                    }
                    return Err(Error::LlmTruncated {
                        reason: "length".into(),
                        max_tokens: Some(output as u32),
                    });
                }
                other => other?,
            };
            // Only a chunk near the size in force says how long full chunks' replies run: a
            // short one's reply is mostly its fixed part (summary, entities, JSON).
            let tokens = est.estimate(&input.text);
            if tokens >= MIN_LEARN_TOKENS.max(budget_now() / 2) && u.output > 0 {
                self.learn_reply_ratio(&learned_key, u.output as f64 / tokens as f64);
            }
            budget.spend(&u);
            usage.add(&u);
            extraction.merge(e);
            i += 1;
            on_progress(&Progress::Extracted {
                key: source.key.clone(),
                part: i,
                parts,
            });
        }
        Ok((extraction.normalized(), slice_keys, usage))
    }

    /// The longest source chunk (estimated tokens) an extract call of the model `key`
    /// (`"<model name>|<reply cap>"`) should send, from the reply lengths it has shown
    /// ([`Wiki::learn_reply_ratio`], kept across connections): the text whose extraction, at the
    /// longest reply per token of the last [`RATIO_WINDOW`] seen — [`REPLY_PRIOR`] before any —
    /// fills [`REPLY_FILL`] of the reply cap `output`; never above `static_budget` (the chunk the
    /// window and reply cap allow), nor below an eighth of it or 64.
    fn learned_chunk_cap(&self, key: &str, output: u64, static_budget: u64) -> u64 {
        let learned = self.extract_reply_ratio.borrow();
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
        let learned = self.extract_reply_ratio.borrow();
        let (k, ratios) = learned.as_ref()?;
        Some((k.clone(), ratios.iter().copied().collect()))
    }

    /// Starts this connection from reply lengths kept from an earlier one (`ratios` for `key`,
    /// oldest first, at most the last [`RATIO_WINDOW`] kept; non-finite or non-positive values
    /// dropped), unless it has seen replies for `key` itself.
    pub(crate) fn seed_reply_ratios(&self, key: &str, ratios: &[f64]) {
        let mut learned = self.extract_reply_ratio.borrow_mut();
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
    fn learn_reply_ratio(&self, key: &str, ratio: f64) {
        if !ratio.is_finite() || ratio <= 0.0 {
            return;
        }
        let mut learned = self.extract_reply_ratio.borrow_mut();
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

    /// Compiles one source (see [`Wiki::compile`]).
    async fn compile_source<M: CompileModel>(
        &self,
        model: &M,
        source: &Source,
        run: &Run<'_>,
    ) -> Result<SourceReport> {
        let Run {
            options,
            on_progress,
            cancel,
            ..
        } = *run;
        let text = self.source_text(&source.version).await?;
        let mut snap = self.snapshot(&source.key).await?;
        self.load_source_claims(&mut snap, &source.key).await?;
        let (extraction, slice_keys, mut usage) = self
            .extract_source(model, source, &text, &mut snap, run)
            .await?;
        let extracted = Extracted {
            text,
            extraction,
            slice_keys,
        };
        let mut drafts: HashMap<String, Draft> = HashMap::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            // Re-read: pages may have changed during the model calls.
            let snap = self.compile_snapshot(source, &extracted).await?;
            let op = self.next_op_id().await?;
            // What the plan changes is known before the bodies are: a first plan on the
            // metadata says which pages to read (and which records its contradictions would
            // be), the second is made with their bodies.
            let mut snap = snap;
            let probe = self.plan(source, &extracted, &snap, op, "", true)?;
            for r in &probe.new_records {
                self.load_record(&mut snap, &r.id).await?;
            }
            let mut touched = probe.touched();
            touched.extend(source.summary_page.iter().cloned());
            self.load_pages(&mut snap, &touched).await?;
            let base = match source.summary_page.as_ref().and_then(|k| snap.pages.get(k)) {
                Some((page, _)) => self.human_paragraphs(&page.key, page).await?.join("\n\n"),
                None => String::new(),
            };
            let mut plan = self.plan(source, &extracted, &snap, op, &base, false)?;
            debug_assert!(plan
                .touched()
                .iter()
                .all(|k| snap.loaded.contains(k) || plan.created.contains(k)));
            // A page too long to rewrite within the reply cap is extended instead (append mode).
            for input in &mut plan.integrate {
                if options.estimator.estimate(&input.current_body) > options.max_output_tokens / 2 {
                    input.append = true;
                    input.current_body = super::integrate::outline(&input.current_body);
                }
            }
            // Integrate the pages whose input changed since the last attempt.
            let todo: Vec<(String, IntegrateInput, String)> = plan
                .integrate
                .iter()
                .map(|input| {
                    let cache_key = serde_json::to_string(input).expect("serialisable");
                    (input.key.clone(), input.clone(), cache_key)
                })
                .filter(|(_, _, ck)| !drafts.contains_key(ck))
                .collect();
            let total = todo.len();
            let done = std::cell::Cell::new(0usize);
            let parallelism = options.parallelism.clamp(1, 16);
            let on_done = |page: &str| {
                done.set(done.get() + 1);
                on_progress(&Progress::Integrated {
                    key: source.key.clone(),
                    page: page.to_string(),
                    done: done.get(),
                    total,
                });
            };
            let batches = integrate_batches(todo, options.max_output_tokens, &options.estimator);
            let results: Vec<Result<Written>> = stream::iter(batches.into_iter().map(|batch| {
                let on_done = &on_done;
                async move { integrate_batch(model, batch, run, on_done).await }
            }))
            .buffer_unordered(parallelism)
            .collect()
            .await;
            for r in results {
                let (written, u) = r?;
                usage.add(&u);
                drafts.extend(written);
            }
            if cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            match self
                .commit_plan(source, &snap, plan, &drafts, &usage, model)
                .await
            {
                Err(Error::Conflict { .. }) if attempt < MAX_COMMIT_ATTEMPTS => continue,
                other => return other,
            }
        }
    }
}

/// The link targets one page's integrate call is given: of the compile's candidates (`all`, as
/// `(key, title)`), the source's summary page and every page whose title or an alias occurs in
/// `text` ([`super::extract::NameMatcher`]; what the page will say: its body, brief, facts and
/// relations), never the page itself. A page can only link what its text
/// names, and the list is paid for in every integrate call.
fn link_targets_for(
    key: &str,
    source_page: &str,
    all: &[(String, String)],
    names: &mut FoldedNames<'_>,
    text: &str,
) -> Vec<(String, String)> {
    let matcher = super::extract::NameMatcher::new(text);
    all.iter()
        .filter(|(k, _)| k != key)
        .filter(|(k, title)| {
            k == source_page || names.of(k, title).iter().any(|n| matcher.occurs(n))
        })
        .cloned()
        .collect()
}

/// Each candidate page's title and aliases folded once per plan ([`super::extract::FoldedName`]),
/// not once per page whose link targets are chosen.
struct FoldedNames<'a> {
    pages: &'a BTreeMap<String, Page>,
    folded: HashMap<String, Vec<super::extract::FoldedName>>,
}

impl<'a> FoldedNames<'a> {
    fn new(pages: &'a BTreeMap<String, Page>) -> Self {
        FoldedNames {
            pages,
            folded: HashMap::new(),
        }
    }

    /// The folded title and aliases of page `key` (titled `title`).
    fn of(&mut self, key: &str, title: &str) -> &[super::extract::FoldedName] {
        let pages = self.pages;
        self.folded.entry(key.to_string()).or_insert_with(|| {
            std::iter::once(title)
                .chain(
                    pages
                        .get(key)
                        .map(|p| &p.aliases)
                        .into_iter()
                        .flatten()
                        .map(String::as_str),
                )
                .map(super::extract::FoldedName::new)
                .collect()
        })
    }
}

/// A page draft, whether it is to be appended (append mode) rather than replace the body, and
/// whether a reply for it was cut at the output limit and asked again.
type Draft = (PageDraft, bool, bool);

/// What the extract step produced for one source.
struct Extracted {
    text: String,
    extraction: Extraction,
    slice_keys: Vec<String>,
}

/// Everything decided before the model writes pages.
struct Plan {
    /// Pages by key after this compile's metadata changes (bodies not yet written).
    pages: BTreeMap<String, Page>,
    /// Keys of pages this compile creates.
    created: BTreeSet<String>,
    /// Integrate inputs, one per page whose facts change.
    integrate: Vec<IntegrateInput>,
    /// Pages that only need their callouts refreshed.
    refresh: BTreeSet<String>,
    /// Claims after the compile, by id.
    claims_after: BTreeMap<String, Claim>,
    /// New claim ids.
    new_claims: BTreeSet<String>,
    /// Retracted claim ids.
    retracted: BTreeSet<String>,
    /// New ledger records.
    new_records: Vec<Contradiction>,
    /// Proposed contradictions turned away.
    rejected: Vec<RejectedContradiction>,
    /// Instruction-like phrases in the source's text (a flag on the source; nothing compiled
    /// changes because of them).
    instruction_like: Vec<String>,
    /// The source's summary page key.
    source_page: String,
    /// The summary page and the parts continuing it, in order.
    source_parts: Vec<String>,
    /// The op id the commit will use.
    op: OpId,
}

impl Plan {
    /// The existing pages the plan writes: those integrated and those refreshed (created pages
    /// aside, which have no record yet).
    fn touched(&self) -> BTreeSet<String> {
        self.integrate
            .iter()
            .map(|i| i.key.clone())
            .chain(self.refresh.iter().cloned())
            .filter(|k| !self.created.contains(k))
            .collect()
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// `source_page_base`: the body the source's summary page is rebuilt from (its human
    /// paragraphs), so no wording of an earlier version survives.
    /// `probe`: only what the plan changes matters (the bodies are not loaded yet): the
    /// integrate inputs get no link targets.
    fn plan(
        &self,
        source: &Source,
        extracted: &Extracted,
        snap: &Snapshot,
        op: OpId,
        source_page_base: &str,
        probe: bool,
    ) -> Result<Plan> {
        let Extracted {
            text,
            extraction,
            slice_keys,
        } = extracted;
        let now = self.clock.now_ms();
        let mut pages: BTreeMap<String, Page> =
            crate::util::btree_map(snap.pages.iter().map(|(k, (p, _))| (k.clone(), p.clone())));
        let mut taken: BTreeSet<String> = crate::util::btree_set(pages.keys().map(|k| fold_key(k)));
        let mut created: BTreeSet<String> = BTreeSet::new();
        let skeleton = |key: String, title: String, kind: PageKind| Page {
            key,
            title,
            kind,
            summary: String::new(),
            aliases: vec![],
            tags: vec![],
            sources: vec![],
            created: now,
            updated: now,
            body: String::new(),
            revision: 0,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        };

        // Resolve entities and concepts.
        let known: Vec<KnownPage> = pages
            .values()
            .map(|p| KnownPage {
                key: p.key.clone(),
                title: p.title.clone(),
                aliases: p.aliases.clone(),
                kind: p.kind,
            })
            .collect();
        let mentions: Vec<Mention> = extraction
            .entities
            .iter()
            .map(|e| Mention {
                name: e.name.clone(),
                kind: Extraction::kind_of(e),
                aliases: e.aliases.clone(),
                source_key: source.key.clone(),
            })
            .collect();
        let mut name_to_page: BTreeMap<String, String> = BTreeMap::new();
        let mut briefs: BTreeMap<String, String> = BTreeMap::new();
        for r in resolve(&mentions, &known) {
            let key = match &r.target {
                Target::Existing(k) => k.clone(),
                Target::New { title, kind } => {
                    let key =
                        crate::markdown::keys::readable_unique_key(title, kind.as_str(), &taken);
                    taken.insert(fold_key(&key));
                    created.insert(key.clone());
                    pages.insert(key.clone(), skeleton(key.clone(), title.clone(), *kind));
                    key
                }
            };
            let page = pages.get_mut(&key).expect("resolved page exists");
            for n in &r.names {
                name_to_page.insert(match_key(n), key.clone());
                if *n != page.title && *n != page.key && !page.aliases.contains(n) {
                    page.aliases.push(n.clone());
                }
            }
            if let Some(e) = extraction.entities.iter().find(|e| {
                r.names
                    .contains(&super::resolve::split_parenthetical(&e.name).0)
            }) {
                if !e.description.is_empty() {
                    briefs.insert(key.clone(), e.description.clone());
                }
            }
        }

        // The source's summary page.
        let source_page = match source
            .summary_page
            .as_ref()
            .filter(|k| pages.contains_key(*k))
        {
            Some(k) => k.clone(),
            None => {
                let key =
                    crate::markdown::keys::readable_unique_key(&source.title, "source", &taken);
                taken.insert(fold_key(&key));
                created.insert(key.clone());
                pages.insert(
                    key.clone(),
                    skeleton(key.clone(), source.title.clone(), PageKind::Source),
                );
                key
            }
        };

        // The source's facts go on its summary page, and on parts continuing it when they are
        // more than one page should hold (the soft limit of `model::limits`, each fact estimated
        // as its line and footnote definition), so no page of the source passes the hard limit.
        let part_of_claim = source_parts_of(&extraction.claims, &source.title);
        let mut source_parts: Vec<String> = vec![source_page.clone()];
        let kept_parts: Vec<&String> = source
            .parts
            .iter()
            .filter(|k| pages.get(*k).is_some_and(|p| p.kind == PageKind::Source))
            .collect();
        for n in 1..=part_of_claim.last().copied().unwrap_or(0) {
            let key = match kept_parts.get(n - 1) {
                Some(k) => (*k).clone(),
                None => {
                    let title = format!("{} (part {})", source.title, n + 1);
                    let key = crate::markdown::keys::readable_unique_key(&title, "source", &taken);
                    taken.insert(fold_key(&key));
                    created.insert(key.clone());
                    pages.insert(key.clone(), skeleton(key.clone(), title, PageKind::Source));
                    key
                }
            };
            source_parts.push(key);
        }

        // Claims: each on the source page (or its part) and on the pages it is about.
        let source_plain = plain_text(text);
        let mut new_claims: BTreeMap<String, Claim> = BTreeMap::new();
        for (i, c) in extraction.claims.iter().enumerate() {
            let verified = quote_occurs(&c.quote, &source_plain);
            let mut targets = vec![source_parts[part_of_claim[i]].clone()];
            for a in &c.about {
                if let Some(k) = name_to_page.get(&match_key(a)) {
                    if !targets.contains(k) {
                        targets.push(k.clone());
                    }
                }
            }
            for page in targets {
                let id = claim_id(&page, &source.key, &c.text, &c.quote);
                new_claims.entry(id.clone()).or_insert(Claim {
                    id,
                    page,
                    text: c.text.clone(),
                    source_key: source.key.clone(),
                    source_version: source.version.clone(),
                    quote: c.quote.clone(),
                    verified,
                    stance: c.stance,
                });
            }
        }
        let retracted: BTreeSet<String> = crate::util::btree_set(
            snap.claims
                .values()
                .filter(|c| c.source_key == source.key && !new_claims.contains_key(&c.id))
                .map(|c| c.id.clone()),
        );
        let fresh: BTreeSet<String> = crate::util::btree_set(
            new_claims
                .keys()
                .filter(|id| !snap.claims.contains_key(*id))
                .cloned(),
        );
        let mut claims_after: BTreeMap<String, Claim> = crate::util::btree_map(
            snap.claims
                .iter()
                .filter(|(id, _)| !retracted.contains(*id))
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        for (id, c) in &new_claims {
            claims_after.insert(id.clone(), c.clone());
        }

        // Contradictions with claims of other sources: a record opens on the app's checks, not
        // on the model's word — both claims asserted, both quotes verbatim in their own
        // sources, both claims on one page.
        let mut new_records: Vec<Contradiction> = Vec::new();
        let mut rejected: Vec<RejectedContradiction> = Vec::new();
        for cand in &extraction.contradictions {
            match check_contradiction(
                cand,
                &claims_after,
                &new_claims,
                &pages,
                &source.key,
                &source_plain,
            ) {
                Err(r) => {
                    if !rejected.contains(&r) {
                        rejected.push(r);
                    }
                }
                Ok((existing, new)) => {
                    let id = contradiction_id(&[existing.id.clone(), new.id.clone()]);
                    if snap.ledger.contains_key(&id) || new_records.iter().any(|r| r.id == id) {
                        continue;
                    }
                    let mut record_claims = vec![existing.id.clone(), new.id.clone()];
                    crate::util::sort(&mut record_claims);
                    new_records.push(Contradiction {
                        id,
                        pages: vec![existing.page.clone()],
                        claims: record_claims,
                        description: cand.explanation.clone(),
                        status: ContradictionStatus::Open,
                        note: None,
                        opened_by: op,
                        closed_by: None,
                    });
                }
            }
        }

        // Which pages the model rewrites, and which only get their callouts refreshed.
        let source_of = |id: &String| snap.claims.get(id).or_else(|| new_claims.get(id));
        let mut facts: BTreeMap<String, Vec<Fact>> = BTreeMap::new();
        let mut retracted_facts: BTreeMap<String, Vec<Fact>> = BTreeMap::new();
        let source_pages = source_page_map(
            &snap.sources,
            &pages,
            &source.key,
            &source_page,
            &source.title,
        );
        let to_fact = |c: &Claim| {
            let (sp, st) = source_pages
                .get(&c.source_key)
                .cloned()
                .unwrap_or_else(|| (c.source_key.clone(), c.source_key.clone()));
            Fact {
                id: c.id.clone(),
                text: c.text.clone(),
                quote: c.quote.clone(),
                verified: c.verified,
                source_page: sp,
                source_title: st,
            }
        };
        for id in &fresh {
            let c = &new_claims[id];
            facts.entry(c.page.clone()).or_default().push(to_fact(c));
        }
        for id in &retracted {
            if let Some(c) = source_of(id) {
                retracted_facts
                    .entry(c.page.clone())
                    .or_default()
                    .push(to_fact(c));
            }
        }
        let mut rewrite: BTreeSet<String> =
            crate::util::btree_set(facts.keys().chain(retracted_facts.keys()).cloned());
        rewrite.insert(source_page.clone());
        for k in &created {
            rewrite.insert(k.clone());
        }
        let mut refresh: BTreeSet<String> =
            crate::util::btree_set(new_records.iter().flat_map(|r| r.pages.iter().cloned()));
        // Pages this source mentions without new facts still list it as a source and take its
        // aliases: their metadata changes, their prose does not.
        for k in name_to_page.values() {
            let changed = match snap.pages.get(k) {
                Some((old, _)) => {
                    !old.sources.contains(&source.key) || old.aliases != pages[k].aliases
                }
                None => true,
            };
            if changed {
                refresh.insert(k.clone());
            }
        }
        refresh.retain(|k| !rewrite.contains(k) && pages.contains_key(k));

        // Link targets: this compile's pages first, then the index slice.
        let mut link_targets: Vec<(String, String)> = Vec::new();
        for k in rewrite.iter().chain(slice_keys.iter()) {
            if let Some(p) = pages.get(k) {
                if !link_targets.iter().any(|(x, _)| x == k)
                    && link_targets.len() < MAX_LINK_TARGETS
                {
                    link_targets.push((p.key.clone(), p.title.clone()));
                }
            }
        }

        let relations_for = |key: &str| -> Vec<String> {
            extraction
                .relations
                .iter()
                .filter(|r| {
                    name_to_page
                        .get(&match_key(&r.from))
                        .is_some_and(|k| k == key)
                        || name_to_page
                            .get(&match_key(&r.to))
                            .is_some_and(|k| k == key)
                })
                .map(|r| format!("{} — {} → {}", r.from, r.label, r.to))
                .collect()
        };

        let mut folded = FoldedNames::new(&pages);
        let integrate: Vec<IntegrateInput> = rewrite
            .iter()
            .map(|k| {
                let p = &pages[k];
                let brief = if *k == source_page {
                    extraction.summary.clone()
                } else {
                    briefs.get(k).cloned().unwrap_or_default()
                };
                let page_facts = facts.get(k).cloned().unwrap_or_default();
                let relations = relations_for(k);
                // What the page will say: the pages it can link are the ones this text names.
                let mut text = format!("{}\n{}\n{}\n", p.title, p.body, brief);
                for f in &page_facts {
                    text.push_str(&f.text);
                    text.push('\n');
                }
                for r in &relations {
                    text.push_str(r);
                    text.push('\n');
                }
                IntegrateInput {
                    key: k.clone(),
                    title: p.title.clone(),
                    kind: p.kind,
                    current_body: if *k == source_page {
                        source_page_base.to_string()
                    } else {
                        strip_app_sections(&p.body)
                    },
                    brief,
                    facts: page_facts,
                    retracted: retracted_facts.get(k).cloned().unwrap_or_default(),
                    relations,
                    link_targets: if probe {
                        Vec::new()
                    } else {
                        // The pages the body links already stay linkable.
                        let mut candidates = link_targets.clone();
                        let mut seen: BTreeSet<&str> =
                            link_targets.iter().map(|(c, _)| c.as_str()).collect();
                        for l in crate::markdown::wikilinks::links(&p.body) {
                            if let Some(t) = pages.get(&l.target) {
                                if seen.insert(t.key.as_str()) {
                                    candidates.push((t.key.clone(), t.title.clone()));
                                }
                            }
                        }
                        link_targets_for(k, &source_page, &candidates, &mut folded, &text)
                    },
                    schema_md: snap.schema_md.clone(),
                    append: false,
                }
            })
            .collect();

        // Metadata of the pages this compile writes.
        let mentioned: BTreeSet<&String> = crate::util::btree_set(name_to_page.values());
        for k in rewrite.iter().chain(refresh.iter()) {
            let p = pages.get_mut(k).expect("page");
            if !p.sources.contains(&source.key)
                && (facts.contains_key(k)
                    || *k == source_page
                    || created.contains(k)
                    || mentioned.contains(k))
            {
                p.sources.push(source.key.clone());
                crate::util::sort(&mut p.sources);
            }
            if *k == source_page {
                p.title = source.title.clone();
                p.summary = extraction.one_line.clone();
            }
        }
        // A page whose only support was this source's retracted claims loses it as a source.
        for (k, _) in retracted_facts.iter() {
            let still = claims_after
                .values()
                .any(|c| c.page == *k && c.source_key == source.key);
            if !still && *k != source_page {
                if let Some(p) = pages.get_mut(k) {
                    p.sources.retain(|s| *s != source.key);
                }
            }
        }

        Ok(Plan {
            pages,
            created,
            integrate,
            refresh,
            claims_after,
            new_claims: fresh,
            retracted,
            new_records,
            rejected,
            instruction_like: crate::injection::instruction_like(text),
            source_page,
            source_parts,
            op,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn commit_plan<M: CompileModel>(
        &self,
        source: &Source,
        snap: &Snapshot,
        plan: Plan,
        drafts: &HashMap<String, Draft>,
        usage: &TokenUsage,
        model: &M,
    ) -> Result<SourceReport> {
        let now = self.clock.now_ms();
        let mut ob = self
            .begin(
                OperationKind::Compile,
                format!("compiled: {}", source.title),
            )
            .await?;
        if ob.op.id != plan.op {
            // Another operation landed since planning: plan again with the right id.
            return Err(Error::Conflict {
                store: Store::Meta,
                key: "ops".into(),
                expected: format!("op {}", plan.op),
                found: format!("op {}", ob.op.id),
            });
        }
        let Plan {
            mut pages,
            created,
            integrate,
            refresh,
            mut claims_after,
            mut new_claims,
            retracted,
            mut new_records,
            rejected,
            instruction_like,
            source_page,
            source_parts,
            op,
        } = plan;

        // A RefCell: a record naming a claim kept off a full page is rewritten after the pages
        // are finalized (below), and the pages it concerns finalized again.
        let ledger_after: std::cell::RefCell<BTreeMap<String, Contradiction>> =
            std::cell::RefCell::new(snap.ledger.clone());
        for r in &new_records {
            ledger_after.borrow_mut().insert(r.id.clone(), r.clone());
        }
        let titles: BTreeMap<String, String> =
            crate::util::btree_map(pages.iter().map(|(k, p)| (k.clone(), p.title.clone())));
        let source_pages = source_page_map(
            &snap.sources,
            &pages,
            &source.key,
            &source_page,
            &source.title,
        );
        let page_list: Vec<Page> = pages.values().cloned().collect();
        let resolver = Resolver::from_pages(&page_list);

        // Claims this compile keeps off pages that are full (their twins on the source's summary
        // page stay): not stated, not cited, not stored.
        let mut moved_off: BTreeSet<String> = BTreeSet::new();
        let finalize = |key: &str,
                        draft_body: &str,
                        human: &[String],
                        off: &BTreeSet<String>,
                        more: &[MoreFacts]|
         -> String {
            let page_claims: BTreeMap<String, Claim> = crate::util::btree_map(
                claims_after
                    .values()
                    .filter(|c| c.page == key && !off.contains(&c.id))
                    .map(|c| (c.id.clone(), c.clone())),
            );
            let ledger = ledger_after.borrow();
            let open: Vec<&Contradiction> = ledger
                .values()
                .filter(|r| {
                    r.status == ContradictionStatus::Open && r.pages.iter().any(|p| p == key)
                })
                .collect();
            let f = Finalize {
                page_claims: &page_claims,
                retracted: &retracted,
                open_contradictions: &open,
                all_claims: &claims_after,
                titles: &titles,
                source_pages: &source_pages,
                self_key: key,
                protected: human,
                more_facts: more,
            };
            // The model's page may come wrapped in fences or frontmatter (F05).
            let cleaned = clean_page(draft_body, CleanOptions::LLM).body;
            finalize_body(&cleaned, &f, |b| fix_links(b, &resolver, key))
        };

        let mut report = SourceReport {
            key: source.key.clone(),
            op,
            ..Default::default()
        };
        let mut written: Vec<String> = Vec::new();
        let mut held: Vec<(String, Page)> = Vec::new();
        for input in &integrate {
            let ck = serde_json::to_string(input).expect("serialisable");
            let (draft, append, retried) =
                drafts.get(&ck).expect("every integrate input has a draft");
            if *retried {
                report.retried.push(Retried {
                    page: input.key.clone(),
                    reason: RetryReason::Truncated,
                });
            }
            // Decision 5: a human edit since the last LLM revision must survive word for word.
            let human = if created.contains(&input.key) {
                Vec::new()
            } else {
                self.human_paragraphs(&input.key, &snap.pages[&input.key].0)
                    .await?
            };
            let text = if *append {
                // The model saw only the page's headings: what it wrote goes into the page as it
                // is, adding only what the page does not already hold (an echoed outline or a
                // repeated fact adds nothing).
                let current = strip_app_sections(&pages[&input.key].body);
                let draft_body = clean_page(&draft.body, CleanOptions::LLM).body;
                crate::markdown::dedup::merge_append(&current, &draft_body, &human)
            } else {
                draft.body.clone()
            };
            // The summary page links the parts that continue it.
            let text = if input.key == source_page && source_parts.len() > 1 {
                let links: Vec<String> = source_parts[1..]
                    .iter()
                    .map(|k| format!("- {}", crate::documents::link_to(k, &pages[k].title)))
                    .collect();
                format!("{}\n\n## Parts\n\n{}", text.trim_end(), links.join("\n"))
            } else {
                text
            };
            let stored_more = pages[&input.key].more_facts.clone();
            let mut body = finalize(&input.key, &text, &human, &moved_off, &stored_more);
            // The hard limit (`model::limits`): a fact that would take the page past it stays on
            // the source's summary page only, and the page counts it under `## More facts`.
            // Source pages hold their source's facts and are cut into parts when planned.
            if pages[&input.key].kind != PageKind::Source {
                let fresh: Vec<String> = input
                    .facts
                    .iter()
                    .map(|f| f.id.clone())
                    .filter(|id| new_claims.contains(id))
                    .collect();
                let stated = claims_after
                    .values()
                    .filter(|c| c.page == input.key && !moved_off.contains(&c.id))
                    .count();
                // The `## More facts` section may still grow to its bound without passing the
                // limit, so the rest of the page is held to the limit less that bound.
                let fits = |body: &str, off: usize, more: &[MoreFacts]| {
                    let section = super::integrate::more_facts_section(more, &source_pages).len();
                    written_bytes(body, &human).saturating_sub(section)
                        + section.max(MORE_FACTS_MAX_BYTES)
                        <= limits::HARD_BYTES
                        && stated - off <= limits::HARD_FACTS
                };
                // The page with the first `keep` of this source's new facts.
                let with = |keep: usize| {
                    let off: BTreeSet<String> =
                        crate::util::btree_set(fresh[keep..].iter().cloned());
                    let more = more_facts_with(&stored_more, &source.key, off.len());
                    let all_off: BTreeSet<String> = moved_off.union(&off).cloned().collect();
                    let kept_text = super::integrate::remove_citing_lines(&text, &off);
                    let body = finalize(&input.key, &kept_text, &human, &all_off, &more);
                    (body, off, more)
                };
                let mut off: BTreeSet<String> = BTreeSet::new();
                let mut more = stored_more.clone();
                if !fits(&body, 0, &more) && !fresh.is_empty() {
                    // The most facts that fit: none fit, or bisect between none and all.
                    let (b, o, m) = with(0);
                    (body, off, more) = (b, o, m);
                    if fits(&body, off.len(), &more) {
                        let (mut lo, mut hi) = (0, fresh.len());
                        while hi - lo > 1 {
                            let mid = (lo + hi) / 2;
                            let (b, o, m) = with(mid);
                            if fits(&b, o.len(), &m) {
                                lo = mid;
                                (body, off, more) = (b, o, m);
                            } else {
                                hi = mid;
                            }
                        }
                    }
                }
                if !fits(&body, off.len(), &more) {
                    // Even without this source's facts the model's text is too long: the page
                    // keeps the text it had, and counts what it could not take.
                    off = crate::util::btree_set(fresh.iter().cloned());
                    more = more_facts_with(&stored_more, &source.key, off.len());
                    let all_off: BTreeSet<String> = moved_off.union(&off).cloned().collect();
                    let stored = strip_app_sections(&pages[&input.key].body);
                    body = finalize(&input.key, &stored, &human, &all_off, &more);
                }
                moved_off.extend(off);
                pages.get_mut(&input.key).expect("page").more_facts = more;
            }
            let page = pages.get_mut(&input.key).expect("page");
            if !draft.summary.trim().is_empty() && page.kind != PageKind::Source {
                page.summary = draft
                    .summary
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            if !created.contains(&input.key) && !missing_human_paragraphs(&human, &body).is_empty()
            {
                let mut proposal = page.clone();
                proposal.body = body;
                held.push((input.key.clone(), proposal));
                // Keep the stored page as it is.
                *page = snap.pages[&input.key].0.clone();
                continue;
            }
            page.body = body;
            written.push(input.key.clone());
        }
        // A new record naming a claim kept off a full page names the claim's twin on the
        // source's own pages instead (same source, text and quote, on the summary page or a
        // part), so the ledger never names a claim that is not stored; the pages of such
        // records are finalized again for their callouts.
        let mut recallout: BTreeSet<String> = BTreeSet::new();
        for r in new_records.iter_mut() {
            if !r.claims.iter().any(|id| moved_off.contains(id)) {
                continue;
            }
            recallout.extend(r.pages.iter().cloned());
            let twin = |id: &String| -> Option<String> {
                let c = claims_after.get(id)?;
                claims_after
                    .values()
                    .find(|t| {
                        !moved_off.contains(&t.id)
                            && source_parts.contains(&t.page)
                            && t.source_key == c.source_key
                            && t.text == c.text
                            && t.quote == c.quote
                    })
                    .map(|t| t.id.clone())
            };
            let claims: Option<Vec<String>> = r
                .claims
                .iter()
                .map(|id| {
                    if moved_off.contains(id) {
                        twin(id)
                    } else {
                        Some(id.clone())
                    }
                })
                .collect();
            ledger_after.borrow_mut().remove(&r.id);
            let Some(mut claims) = claims else {
                // No twin (cannot happen: every fact is on its source's pages): no record.
                r.claims.clear();
                continue;
            };
            crate::util::sort(&mut claims);
            claims.dedup();
            let mut record_pages: Vec<String> = claims
                .iter()
                .filter_map(|id| claims_after.get(id).map(|c| c.page.clone()))
                .collect();
            crate::util::sort(&mut record_pages);
            record_pages.dedup();
            r.id = contradiction_id(&claims);
            r.claims = claims;
            r.pages = record_pages;
            recallout.extend(r.pages.iter().cloned());
        }
        new_records.retain(|r| r.claims.len() > 1 && !snap.ledger.contains_key(&r.id));
        {
            let mut seen = BTreeSet::new();
            new_records.retain(|r| seen.insert(r.id.clone()));
        }
        for r in &new_records {
            ledger_after.borrow_mut().insert(r.id.clone(), r.clone());
        }
        // Pages whose callouts change without new prose, and those of rewritten records, get
        // their app sections from the final ledger.
        let refinalize: BTreeSet<&String> = refresh
            .iter()
            .chain(
                recallout
                    .iter()
                    .filter(|k| pages.contains_key(*k) && !held.iter().any(|(h, _)| h == *k)),
            )
            .collect();
        for key in refinalize {
            let human = match snap.pages.get(key) {
                Some((stored, _)) => self.human_paragraphs(key, stored).await?,
                None => Vec::new(),
            };
            let page = pages.get_mut(key).expect("page");
            page.body = finalize(key, &page.body, &human, &moved_off, &page.more_facts);
            written.push(key.clone());
        }
        // What was kept off full pages is not stored as their claims.
        for id in &moved_off {
            claims_after.remove(id);
            new_claims.remove(id);
        }
        crate::util::sort(&mut written);
        written.dedup();

        let offline = model.is_extractive();
        for key in &written {
            let page = pages.get_mut(key).expect("page");
            // Pages written by the offline compiler carry the `offline` tag until an LLM rewrites them.
            page.tags.retain(|t| t != crate::extractive::OFFLINE);
            if offline {
                page.tags.push(crate::extractive::OFFLINE.to_string());
            }
            if created.contains(key) {
                // A deleted or renamed page may have left its history under this key.
                page.revision = self.next_revision_number(key).await? - 1;
            }
            page.revision += 1;
            page.updated = now;
            let expect = match snap.pages.get(key) {
                Some((_, rev)) => Expect::Rev(*rev),
                None => Expect::Absent,
            };
            ob.batch
                .put(Store::Pages, key.clone(), to_json(&*page), expect);
            // A held update of this page is superseded by what is written now.
            ob.batch
                .delete(Store::Meta, format!("{PROPOSAL_PREFIX}{key}"), Expect::Any);
            let revision = Revision {
                page: key.clone(),
                number: page.revision,
                author: Author::Llm,
                op,
                time: now,
                page_state: Some(page.clone()),
            };
            ob.batch.put(
                Store::Revisions,
                revision_key(key, page.revision),
                to_json(&revision),
                Expect::Absent,
            );
            if created.contains(key) {
                report.created.push(key.clone());
            } else {
                report.updated.push(key.clone());
            }
        }
        for (key, proposal) in &held {
            ob.batch.put(
                Store::Meta,
                format!("{PROPOSAL_PREFIX}{key}"),
                to_json(proposal),
                Expect::Any,
            );
            report.held.push(key.clone());
        }
        for id in &retracted {
            ob.batch.delete(Store::Claims, id.clone(), Expect::Any);
        }
        for id in &new_claims {
            ob.batch.put(
                Store::Claims,
                id.clone(),
                to_json(&claims_after[id]),
                Expect::Absent,
            );
        }
        for r in &new_records {
            ob.batch
                .put(Store::Ledger, r.id.clone(), to_json(r), Expect::Absent);
            report.contradictions.push(r.id.clone());
        }
        report.contradictions_rejected = rejected;
        let mut updated_source = source.clone();
        updated_source.status = SourceStatus::Compiled {
            op,
            version: source.version.clone(),
        };
        updated_source.summary_page = Some(source_page.clone());
        updated_source.parts = source_parts[1..].to_vec();
        ob.batch.put(
            Store::Sources,
            source.key.clone(),
            to_json(&updated_source),
            Expect::Rev(snap.source_rev),
        );
        ob.batch.delete(
            Store::Meta,
            format!("{FAILURE_PREFIX}{}", source.key),
            Expect::Any,
        );
        crate::wiki::put_source_flag(
            &mut ob.batch,
            &source.key,
            &source.version,
            instruction_like,
        );

        let source_claims: Vec<&Claim> = claims_after
            .values()
            .filter(|c| c.source_key == source.key)
            .collect();
        report.claims = source_claims.len();
        report.unverified = source_claims.iter().filter(|c| !c.verified).count();
        report.usage = *usage;
        ob.op.usage = *usage;
        ob.op.sources = vec![source.key.clone()];
        ob.op.pages = written.clone();
        ob.op.summary = format!(
            "compiled: {} ({}; {} created, {} updated, {} claims, {} unverified)",
            source.title,
            model.name(),
            report.created.len(),
            report.updated.len(),
            report.claims,
            report.unverified
        );
        self.finish(ob).await?;
        Ok(report)
    }

    /// Paragraphs a human added to `current` since the page's last LLM revision (all paragraphs
    /// when the LLM never wrote it).
    pub(crate) async fn human_paragraphs(&self, key: &str, current: &Page) -> Result<Vec<String>> {
        // The page table says whether anyone edited the page since the model last wrote it, so
        // the history is read only when someone did, and then from that revision on.
        let mark = self.page_table().await?.get(key).and_then(|r| r.history);
        let history = match mark {
            Some(m) if !m.human_after => return Ok(Vec::new()),
            Some(m) if m.llm > 0 => {
                let prefix = format!("{key}\u{0}");
                let after = revision_key(key, m.llm - 1);
                self.storage
                    .scan_page(Store::Revisions, &prefix, Some(&after), usize::MAX)
                    .await?
                    .into_iter()
                    .map(|(k, r)| from_json(Store::Revisions, &k, &r.data))
                    .collect::<Result<Vec<Revision>>>()?
            }
            _ => self.history(key).await?,
        };
        let last_llm = history.iter().rev().find(|r| r.author == Author::Llm);
        let human_after = history
            .iter()
            .any(|r| r.author == Author::Human && last_llm.is_none_or(|l| r.number > l.number));
        if !human_after {
            return Ok(Vec::new());
        }
        let base = last_llm
            .and_then(|r| r.page_state.as_ref())
            .map(|p| strip_app_sections(&p.body))
            .unwrap_or_default();
        // What the app's own revisions (removing a source) rewrote in the model's text is not
        // the user's.
        let later: Vec<(bool, String)> = history
            .iter()
            .filter(|r| last_llm.is_none_or(|l| r.number > l.number))
            .map(|r| {
                (
                    r.author == Author::App,
                    r.page_state
                        .as_ref()
                        .map(|p| strip_app_sections(&p.body))
                        .unwrap_or_default(),
                )
            })
            .collect();
        let later: Vec<(bool, &str)> = later.iter().map(|(a, b)| (*a, b.as_str())).collect();
        let app = app_rewritten_paragraphs(&base, &later);
        let mut human = added_paragraphs(&base, &strip_app_sections(&current.body));
        human.retain(|p| !app.contains(p));
        Ok(human)
    }
}

/// The most bytes a page's `## More facts` section takes: [`limits::MORE_FACTS_LINES`] lines of
/// a count and a link, and the line summing older sources.
const MORE_FACTS_MAX_BYTES: usize = 3 * 1024;

/// Estimated bytes a fact adds to a source page besides its text, quote and the source's title:
/// list marker, footnote reference and definition markup.
const FACT_OVERHEAD_BYTES: usize = 64;

/// For each extracted claim of a source titled `title`, in order, the part of the source's pages
/// it goes on: 0 for the summary page, 1 for `<title> (part 2)`, …. A part takes facts while their
/// estimated size stays within three quarters of the soft byte limit and their count within the
/// soft fact limit (`model::limits`), leaving room for the summary and the prose.
fn source_parts_of(claims: &[super::extract::ExtractedClaim], title: &str) -> Vec<usize> {
    let (mut part, mut bytes, mut count) = (0usize, 0usize, 0usize);
    claims
        .iter()
        .map(|c| {
            let cost = c.text.len() + c.quote.len() + title.len() + FACT_OVERHEAD_BYTES;
            if count > 0
                && (bytes + cost > limits::SOFT_BYTES * 3 / 4 || count >= limits::SOFT_FACTS)
            {
                part += 1;
                bytes = 0;
                count = 0;
            }
            bytes += cost;
            count += 1;
            part
        })
        .collect()
}

/// `stored` with the entry of `source` replaced by `facts` facts (none when 0): what a full page
/// counts under `## More facts` after this compile of `source`.
fn more_facts_with(stored: &[MoreFacts], source: &str, facts: usize) -> Vec<MoreFacts> {
    let mut more: Vec<MoreFacts> = stored
        .iter()
        .filter(|m| m.source != source)
        .cloned()
        .collect();
    if facts > 0 {
        more.push(MoreFacts {
            source: source.to_string(),
            facts: facts as u32,
        });
    }
    more
}

/// Most new pages one integrate call writes ([`integrate_batches`]).
const MAX_PAGES_PER_CALL: usize = 8;

/// One page to integrate: (page key, input, draft cache key).
type IntegrateJob = (String, IntegrateInput, String);

/// What one group of integrate calls wrote: (draft cache key, draft) per page, and the usage.
type Written = (Vec<(String, Draft)>, TokenUsage);

/// Groups the pages to integrate into calls: new pages (no current body, something to write)
/// share a call, up to [`MAX_PAGES_PER_CALL`] and while their briefs, facts and relations come to
/// at most a third of the reply cap `output` (the pages the model writes from them must fit its
/// reply); every other page (one with a body: human paragraphs to keep, Decision 5, or a page
/// long enough for append mode) gets a call of its own. Each call then carries the system prompt,
/// the schema and the link targets once instead of once per page.
fn integrate_batches(
    todo: Vec<IntegrateJob>,
    output: u64,
    est: &TokenEstimator,
) -> Vec<Vec<IntegrateJob>> {
    let mut out = Vec::new();
    let mut cur: Vec<IntegrateJob> = Vec::new();
    let mut cur_tokens = 0u64;
    for job in todo {
        let input = &job.1;
        let new_page = !input.append && input.current_body.trim().is_empty();
        if !new_page || nothing_to_write(input) {
            out.push(vec![job]);
            continue;
        }
        let tokens = est.estimate(&input.brief)
            + input
                .facts
                .iter()
                .map(|f| est.estimate(&f.text) + 8)
                .sum::<u64>()
            + input.relations.iter().map(|r| est.estimate(r)).sum::<u64>();
        if !cur.is_empty() && (cur.len() >= MAX_PAGES_PER_CALL || cur_tokens + tokens > output / 3)
        {
            out.push(std::mem::take(&mut cur));
            cur_tokens = 0;
        }
        cur_tokens += tokens;
        cur.push(job);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Writes one group of pages from [`integrate_batches`]: a group of one through
/// [`integrate_fitting`]; a larger group in one [`CompileModel::integrate_pages`] call, split in
/// halves while the reply does not fit the cap; a page the reply did not give goes through
/// [`integrate_fitting`] on its own. Every call is checked against the budget first. Returns
/// (draft cache key, draft) per page.
async fn integrate_batch<M: CompileModel>(
    model: &M,
    batch: Vec<IntegrateJob>,
    run: &Run<'_>,
    on_done: &dyn Fn(&str),
) -> Result<Written> {
    let Run {
        options,
        budget,
        cancel,
        ..
    } = *run;
    let est = &options.estimator;
    let mut out = Vec::new();
    let mut usage = TokenUsage::default();
    let mut queue: std::collections::VecDeque<Vec<IntegrateJob>> = [batch].into();
    // The pages (draft cache keys) of a group whose reply was cut at the output limit.
    let mut cut: BTreeSet<String> = BTreeSet::new();
    while let Some(mut group) = queue.pop_front() {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        if group.len() == 1 {
            let (page, input, ck) = group.pop().expect("one");
            if !nothing_to_write(&input) {
                budget.check(
                    est.estimate(&prompt::integrate_system())
                        + est.estimate(&prompt::integrate_user(&input))
                        + options.max_output_tokens,
                )?;
            }
            let (draft, append, retried, u) = integrate_fitting(model, input, cancel).await?;
            budget.spend(&u);
            usage.add(&u);
            on_done(&page);
            let retried = retried || cut.contains(&ck);
            out.push((ck, (draft, append, retried)));
            continue;
        }
        let inputs: Vec<IntegrateInput> = group.iter().map(|(_, i, _)| i.clone()).collect();
        budget.check(
            est.estimate(&prompt::integrate_pages_system())
                + est.estimate(&prompt::integrate_pages_user(&inputs))
                + options.max_output_tokens,
        )?;
        match model.integrate_pages(&inputs, cancel).await {
            Ok((drafts, u)) => {
                budget.spend(&u);
                usage.add(&u);
                if drafts.len() != group.len() {
                    return Err(Error::LlmBadOutput(format!(
                        "{} page drafts for {} pages",
                        drafts.len(),
                        group.len()
                    )));
                }
                for ((page, input, ck), draft) in group.into_iter().zip(drafts) {
                    match draft {
                        Some(draft) => {
                            on_done(&page);
                            let retried = cut.contains(&ck);
                            out.push((ck, (draft, false, retried)));
                        }
                        // Left out (or not its own text): a call of its own, budget checked.
                        None => queue.push_back(vec![(page, input, ck)]),
                    }
                }
            }
            // The pages did not fit one reply: half of them at a time (never parse a cut reply).
            Err(Error::LlmTruncated { .. }) => {
                cut.extend(group.iter().map(|(_, _, ck)| ck.clone()));
                let second = group.split_off(group.len() / 2);
                queue.push_front(second);
                queue.push_front(group);
            }
            Err(e) => return Err(e),
        }
    }
    Ok((out, usage))
}

/// One integrate call that fits the reply cap: when the reply is cut off (F03), ask again in append
/// mode with half the facts (the others are listed by the app under `## Facts`), at most twice.
/// Returns the draft, whether it is to be appended, whether a reply was cut and asked again,
/// and the usage of every call.
async fn integrate_fitting<M: CompileModel>(
    model: &M,
    mut input: IntegrateInput,
    cancel: &Cancel,
) -> Result<(PageDraft, bool, bool, TokenUsage)> {
    let mut usage = TokenUsage::default();
    if nothing_to_write(&input) {
        // A new page named by the source with nothing said about it: a model could only invent
        // its body. The page keeps an empty body (the app adds its sections) and no call is paid.
        return Ok((PageDraft::default(), false, false, usage));
    }
    for attempt in 0..3 {
        match model.integrate(&input, cancel).await {
            Ok((draft, u)) => {
                usage.add(&u);
                return Ok((draft, input.append, attempt > 0, usage));
            }
            Err(Error::LlmTruncated { .. }) if attempt < 2 => {
                if !input.append {
                    input.append = true;
                    input.current_body = super::integrate::outline(&input.current_body);
                }
                let keep = (input.facts.len() / 2).max(1);
                input.facts.truncate(keep);
            }
            Err(e) => return Err(e),
        }
    }
    unreachable!("the loop returns on its last attempt")
}

/// Whether an integrate call has nothing to work from: no current body (not append mode, where
/// the body shown is only the page's headings), brief, facts, retracted facts or relations.
fn nothing_to_write(input: &IntegrateInput) -> bool {
    !input.append
        && input.current_body.trim().is_empty()
        && input.brief.trim().is_empty()
        && input.facts.is_empty()
        && input.retracted.is_empty()
        && input.relations.is_empty()
}

/// Share of the reply cap an extract reply is planned to fill once the model's reply length per
/// token of text is known ([`Wiki::learned_chunk_cap`]): room for a denser passage than those
/// seen so far.
const REPLY_FILL: f64 = 0.8;

/// Reply tokens per token of source text assumed before a model has shown any
/// ([`Wiki::learned_chunk_cap`]): one, a reply as long as its text (an extraction quotes its
/// claims verbatim). Guessing high costs one more call's fixed part; guessing low costs a reply
/// cut at the cap — the whole call — and, cut again after two halvings, the source (F03: retries
/// are few).
const REPLY_PRIOR: f64 = 1.0;

/// How many of a model's latest reply lengths per token [`Wiki::learned_chunk_cap`] looks at.
const RATIO_WINDOW: usize = 8;

/// Texts shorter than this (estimated tokens) teach nothing about reply length: the fixed part
/// of a reply (summary, entities, JSON) outweighs what the text adds.
const MIN_LEARN_TOKENS: u64 = 256;

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
fn extract_chunk_budget(window: u64, output: u64, overhead: u64, bounded: bool) -> u64 {
    let fits = window.saturating_sub(output + overhead);
    if bounded { fits.min(2 * output) } else { fits }.max(256)
}

/// The estimated tokens of existing claims an extract call of a chunk of `chunk_tokens` lists:
/// about one claim line per two lines of text, at least 256, at most `claims_cap`.
fn chunk_claims_budget(chunk_tokens: u64, claims_cap: u64) -> u64 {
    claims_cap.min((chunk_tokens / 2).max(256))
}

/// The app's checks on a contradiction the model proposed (the model's word opens nothing):
/// the existing claim it names is another source's, verified and asserted; the quote it gives
/// occurs verbatim in this source (`source_plain`, [`plain_text`]) and is the quote of a new
/// claim this source asserts; and a copy of each claim is on one page (the most specific such
/// page, [`claim_rank`]). Returns the two claims on that page, or why not.
fn check_contradiction<'a>(
    cand: &super::extract::CandidateContradiction,
    claims_after: &'a BTreeMap<String, Claim>,
    new_claims: &'a BTreeMap<String, Claim>,
    pages: &BTreeMap<String, Page>,
    source_key: &str,
    source_plain: &str,
) -> std::result::Result<(&'a Claim, &'a Claim), RejectedContradiction> {
    let reject = |pages: Vec<String>, quotes: Vec<String>, reason| RejectedContradiction {
        pages,
        quotes,
        reason,
    };
    let Some(existing) = claims_after.get(cand.existing_claim.trim()) else {
        return Err(reject(
            vec![],
            vec![cand.quote.clone()],
            RejectReason::UnknownClaim,
        ));
    };
    let quotes = vec![existing.quote.clone(), cand.quote.clone()];
    let pages_of = |claims: &[&Claim]| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for c in claims {
            if !v.contains(&c.page) {
                v.push(c.page.clone());
            }
        }
        v
    };
    if existing.source_key == source_key {
        return Err(reject(
            vec![existing.page.clone()],
            quotes,
            RejectReason::SameSource,
        ));
    }
    if !existing.verified {
        return Err(reject(
            vec![existing.page.clone()],
            quotes,
            RejectReason::UnverifiedExisting,
        ));
    }
    if !existing.stance.is_asserted() {
        return Err(reject(
            vec![existing.page.clone()],
            quotes,
            RejectReason::ExistingNotAsserted,
        ));
    }
    if !quote_occurs(&cand.quote, source_plain) {
        return Err(reject(
            vec![existing.page.clone()],
            quotes,
            RejectReason::QuoteNotInSource,
        ));
    }
    // The new claim: this source's claim whose quote is the one proposed (or contains it, or is
    // contained in it: a model may quote a clause of the sentence).
    let cq = plain_text(&cand.quote);
    let news: Vec<&Claim> = new_claims
        .values()
        .filter(|c| {
            let q = plain_text(&c.quote);
            c.verified && !q.is_empty() && (q == cq || q.contains(&cq) || cq.contains(&q))
        })
        .collect();
    if news.is_empty() {
        return Err(reject(
            vec![existing.page.clone()],
            quotes,
            RejectReason::NoSuchClaim,
        ));
    }
    let asserted: Vec<&Claim> = news
        .iter()
        .copied()
        .filter(|c| c.stance.is_asserted())
        .collect();
    if asserted.is_empty() {
        let mut p = vec![existing.page.clone()];
        p.extend(pages_of(&news).into_iter().filter(|k| *k != existing.page));
        return Err(reject(p, quotes, RejectReason::NotAsserted));
    }
    // Copies of the existing claim (same source and quote) on every page that states it.
    let eq = plain_text(&existing.quote);
    let olds: Vec<&Claim> = claims_after
        .values()
        .filter(|c| c.source_key == existing.source_key && plain_text(&c.quote) == eq)
        .collect();
    let kind = |c: &Claim| pages.get(&c.page).map(|p| p.kind);
    let best = olds
        .iter()
        .filter_map(|o| {
            asserted
                .iter()
                .filter(|n| n.page == o.page)
                .min_by_key(|n| n.id.clone())
                .map(|n| (*o, *n))
        })
        .min_by_key(|(o, _)| claim_rank(o, kind(o)));
    match best {
        Some(pair) => Ok(pair),
        None => {
            let canonical = canonical_claim(existing, claims_after, pages);
            let mut p = vec![canonical.page.clone()];
            p.extend(
                pages_of(&asserted)
                    .into_iter()
                    .filter(|k| *k != canonical.page),
            );
            Err(reject(p, quotes, RejectReason::DifferentPages))
        }
    }
}

/// How claims with the same source and quote are ranked to pick the one a contradiction names:
/// claims on an entity, concept or other non-source page first, then the smallest page key.
/// `page_kind`: the kind of the claim's page, `None` when there is no such page.
fn claim_rank(c: &Claim, page_kind: Option<PageKind>) -> (bool, String) {
    (
        page_kind.is_none_or(|k| k == PageKind::Source),
        c.page.clone(),
    )
}

/// Among claims with the same source and quote, the one a contradiction should name
/// ([`claim_rank`]).
fn canonical_claim<'a>(
    claim: &'a Claim,
    all: &'a BTreeMap<String, Claim>,
    pages: &BTreeMap<String, Page>,
) -> &'a Claim {
    let q = plain_text(&claim.quote);
    all.values()
        .filter(|c| c.source_key == claim.source_key && plain_text(&c.quote) == q)
        .min_by_key(|c| claim_rank(c, pages.get(&c.page).map(|p| p.kind)))
        .unwrap_or(claim)
}

/// [`canonical_claim`] for every claim at once (one pass): claim id → canonical claim id.
fn canonical_ids(all: &BTreeMap<String, Claim>, pages: &[Page]) -> HashMap<String, String> {
    let kinds: HashMap<&str, PageKind> = pages.iter().map(|p| (p.key.as_str(), p.kind)).collect();
    let mut best: HashMap<(String, String), (bool, String, String)> = HashMap::new();
    let mut group_of: Vec<(String, (String, String))> = Vec::with_capacity(all.len());
    for c in all.values() {
        let group = (c.source_key.clone(), plain_text(&c.quote));
        let (is_source, page) = claim_rank(c, kinds.get(c.page.as_str()).copied());
        let candidate = (is_source, page, c.id.clone());
        match best.get(&group) {
            Some(b) if *b <= candidate => {}
            _ => {
                best.insert(group.clone(), candidate);
            }
        }
        group_of.push((c.id.clone(), group));
    }
    group_of
        .into_iter()
        .map(|(id, g)| (id, best[&g].2.clone()))
        .collect()
}

/// Source key → (summary page key, title), for footnote definitions.
pub(super) fn source_page_map(
    sources: &BTreeMap<String, Source>,
    pages: &BTreeMap<String, Page>,
    this_key: &str,
    this_page: &str,
    this_title: &str,
) -> BTreeMap<String, (String, String)> {
    let mut m = summary_pages(sources, pages);
    m.insert(
        this_key.to_string(),
        (this_page.to_string(), this_title.to_string()),
    );
    m
}

/// Source key → (summary page key, title), for the sources whose summary page is in `pages`.
pub(crate) fn summary_pages(
    sources: &BTreeMap<String, Source>,
    pages: &BTreeMap<String, Page>,
) -> BTreeMap<String, (String, String)> {
    let mut m: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (k, s) in sources {
        if let Some(p) = s.summary_page.as_ref().and_then(|p| pages.get(p)) {
            m.insert(k.clone(), (p.key.clone(), p.title.clone()));
        }
    }
    m
}
