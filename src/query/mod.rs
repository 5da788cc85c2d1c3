//! Query: answer a question from the wiki, citing its pages; optionally save the answer as an
//! `analysis` page (write-back), so knowledge compounds.
//!
//! 1. *Search, then route*: hybrid search finds the source passages on offer and BM25 the best
//!    pages; a question the wiki does not know ([`relevance`]) is declined here, before any model
//!    call. Then, unless search already found one page or passage holding the whole question
//!    ([`Router::Auto`]), the model routes: when index.md fits the routing budget (a share of the
//!    context window, Decision 12 estimates) it reads it whole and picks pages; otherwise hybrid
//!    search (BM25 + vectors, RRF) shortlists index lines first and the model picks among them
//!    (field case F31a). One hop along the chosen pages' links adds their neighbours, bounded,
//!    hubs excluded.
//! 2. *Answer*: the passages of the chosen pages ([`passages`]: split along headings and
//!    paragraphs) and the source passages on offer (with those of the routed pages' own sources:
//!    the drill-down from a summary to its evidence) are ranked together by BM25F against the
//!    question and fill [`AskOptions::answer_budget`] best first, skipping a source passage a given
//!    page already quotes; every routed page is shown, by its title and lead at least
//!    → a streamed answer citing `[[pages]]` and source passages as `[^s1]` footnotes. Every
//!    citation is checked: one naming nothing the answer was given is removed and counted (F32);
//!    a kept passage footnote gets its definition (Decision 3's form, [`SourceCitation`]).
//! 3. *Write-back*: the answer becomes an `analysis` page citing its pages, one operation.
//!
//! Offline (no endpoint) routing is the hybrid search alone and the answer is extractive: the
//! passages that best match the question, each cited, and it says so.

mod citations;
mod context;
mod model;
mod offline;
pub mod passages;
pub mod relevance;
mod route;
#[cfg(feature = "test-support")]
pub mod scripted;
mod write_back;

pub use model::{Given, GivenPassage, LlmQuery, QueryModel, ANSWER_SYSTEM};
pub use offline::{OfflineQuery, EXTRACTIVE_NOTE};
pub use route::{routing_line, ROUTE_HELD, ROUTING_SUMMARY_CHARS};

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::{Cancel, OnToken, Purpose};
use crate::model::TokenUsage;
use crate::storage::Storage;
use crate::text::TokenEstimator;
use crate::wiki::Wiki;

/// One earlier turn of a conversation (for follow-up questions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// The question.
    pub question: String,
    /// The answer given.
    pub answer: String,
}

/// Options of [`Wiki::ask`] (JS: `ask(question, {...})`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct AskOptions {
    /// Earlier turns, oldest first.
    pub history: Vec<Turn>,
    /// Save the answer as an `analysis` page.
    pub write_back: bool,
    /// Pages the router may pick. Range 1–20; default 6.
    pub max_pages: usize,
    /// Pages one hop along links may add. Range 0–10; default 3; 0 disables the hop.
    pub hop_pages: usize,
    /// Share of the context window index.md may take to be routed whole. Range 0.05–0.8;
    /// default 0.1. Above it, search shortlists the index first (at most `shortlist` lines,
    /// within the same share). The routing call is paid on every question and reading index.md
    /// whole grows with the wiki (~26 estimated tokens per page): measured on the benchmark's
    /// 133-page wiki (3485-token index.md, 16k window; BENCHMARKS.md "Token cost"), routing
    /// read 3591 input tokens per question at 0.5 (the index read whole) against 963 from a
    /// 20-line shortlist at 0.1. At 0.1 a 16k window reads an index of about 60 pages whole, a
    /// 128k window about 500.
    pub routing_share: f64,
    /// Index lines the search shortlist gives the router. Range 5–200; default 20 (three times
    /// the default `max_pages` to pick from). On the benchmark's wiki a 40-line shortlist cost
    /// 1665 routing input tokens per question, 20 lines 963.
    pub shortlist: usize,
    /// Estimated tokens of page and source text the answer step is given (Decision 12
    /// estimates): the passages of the chosen pages and the source passages on offer, ranked
    /// together against the question ([`passages::select`]), best first until this is spent.
    /// Range 200–100 000; default 1500 (about three of the ~512-token chunks a RAG pipeline
    /// sends, or nine of our ≤ 160-token passages). Every routed page is shown by its title and
    /// lead line whatever the budget, so each can be cited; the context window is never
    /// exceeded. Low values answer from little more than the best few passages; at the top of
    /// the range whole pages are given. Measured on the benchmark's wiki, before source
    /// passages (answer input per question, system prompt and question included): 1318 tokens
    /// at 1000, 1438 at 1500, 2717 at 3000, 3554 with whole pages (100 000).
    pub answer_budget: u64,
    /// The question's embedding for the search steps (set by [`Wiki::ask_configured`] from an
    /// embedding endpoint); `None`: the built-in offline embedding when configured, else BM25.
    #[serde(skip)]
    #[cfg_attr(target_arch = "wasm32", tsify(type = "never"))]
    pub query_vector: Option<crate::search::QueryVector>,
    /// Decline when the question's relevance ([`Answer::relevance`], [`relevance`]) is below
    /// this: no answer call, and the closest pages as [`Answer::suggestions`]. Range 0–1;
    /// default [`DECLINE_BELOW`]; 0 never declines while anything was found. A question
    /// in another script than the text on offer ([`Answer::cross_lingual`]) is not declined on this
    /// ground when it was embedded by an endpoint model, which may match across languages; a wiki
    /// of fewer than [`relevance::MIN_COLLECTION`] units declines on it only a question none of
    /// whose words it holds ([`relevance::Relevance::declines`]).
    pub decline_below: f32,
    /// Who routes the question to pages ([`Router`]). Default `auto`: the model, unless search
    /// already found one page or source passage that holds every content word of the question
    /// (then the routing call, about 800 input tokens on the benchmark's wikis, is not paid).
    pub router: Router,
}

/// What `ask` searches and embeds for `question`: the question itself, or, for a follow-up
/// ("where are they based?"), the question before it and this one, so that the words naming
/// the topic are searched too.
fn search_text(question: &str, history: &[Turn]) -> String {
    match history.last() {
        Some(t) => format!("{} {question}", t.question),
        None => question.to_string(),
    }
}

/// Whether search routes the question without a routing call ([`Router`]).
fn search_routes_alone(options: &AskOptions, found: &relevance::Relevance) -> bool {
    match options.router {
        Router::Search => true,
        Router::Model => false,
        // A question of function words alone ("what is it?") is held anywhere: the model
        // routes it.
        Router::Auto => options.history.is_empty() && found.slots > 0 && found.held >= ROUTE_HELD,
    }
}

/// Who routes a question to pages ([`AskOptions::router`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub enum Router {
    /// The model routes, unless the question has no earlier turn, has a content word, and one
    /// page or source passage the search ranks best holds all of it
    /// ([`relevance::Relevance::held`] ≥ [`route::ROUTE_HELD`]): search has found where the
    /// answer is, and a routing call could only add a page worded otherwise than the question.
    /// The search's pages are then routed ([`RouteMethod::Search`]). A question worded
    /// otherwise than the wiki, one of function words alone, or a follow-up whose words are in
    /// the turn before, goes to the model. This is adaptive retrieval
    /// (Jeong et al., "Adaptive-RAG", NAACL 2024): the costlier step only where the cheap one
    /// is unsure.
    #[default]
    Auto,
    /// The model routes every question (over index.md or the search shortlist).
    Model,
    /// Search routes every question (a follow-up with the question before it); no routing
    /// call is made.
    Search,
}

/// The default [`AskOptions::decline_below`], calibrated on the calibrate half of the question
/// sets in `tests/fixtures/questions/` (`examples/answer_bench.rs` prints the scores; BENCHMARKS.md
/// "Declining"): the largest threshold that declines no more than 5 % of its answerable questions.
pub const DECLINE_BELOW: f32 = 0.78;

impl Default for AskOptions {
    fn default() -> Self {
        AskOptions {
            history: vec![],
            write_back: false,
            max_pages: 6,
            hop_pages: 3,
            routing_share: 0.1,
            shortlist: 20,
            answer_budget: 1500,
            query_vector: None,
            decline_below: DECLINE_BELOW,
            router: Router::Auto,
        }
    }
}

/// How the pages were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub enum RouteMethod {
    /// The model read the whole index.md.
    Index,
    /// Search shortlisted index lines, the model picked among them.
    Shortlist,
    /// Search alone: offline, [`Router::Search`], search found one place that holds the whole
    /// question ([`Router::Auto`]), or the model picked nothing.
    Search,
}

/// Milliseconds per step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// Routing.
    pub route_ms: f64,
    /// Answering.
    pub answer_ms: f64,
    /// Writing back.
    pub write_ms: f64,
}

/// What [`Wiki::ask`] returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// The answer, markdown, citations as `[[key]]` / `[[key|text]]`.
    pub answer: String,
    /// Pages the answer cites (every one was given to the model), in order of first citation.
    pub citations: Vec<String>,
    /// Source passages the answer cites as footnotes (every one was given to the model), in
    /// order of first citation; their definitions end `answer`.
    #[serde(default)]
    pub source_citations: Vec<SourceCitation>,
    /// Source passages given to the answer step (their keys, `"{source}#L{a}-{b}"`).
    #[serde(default)]
    pub passages: Vec<String>,
    /// Citations removed because they named no page the answer was given.
    pub removed_citations: Vec<String>,
    /// Pages routing chose.
    pub routed: Vec<String>,
    /// Pages the one-hop expansion added.
    pub hopped: Vec<String>,
    /// How routing worked.
    pub route: Option<RouteMethod>,
    /// True for an extractive (offline) answer.
    pub extractive: bool,
    /// Token usage of the model calls (the sum of the two below).
    pub usage: TokenUsage,
    /// Token usage of the routing call (zero when search routed alone; absent from answers
    /// saved before it was reported).
    #[serde(default)]
    pub route_usage: TokenUsage,
    /// Token usage of the answer call (zero for an extractive answer).
    #[serde(default)]
    pub answer_usage: TokenUsage,
    /// Time per step.
    pub timings: Timings,
    /// The analysis page written back, if any.
    pub saved: Option<String>,
    /// True when the answer cites two or more pages (worth offering "save to wiki").
    pub worth_saving: bool,
    /// True when the answer rests on the wiki: it cites at least one page or source passage it
    /// was given. An
    /// ungrounded answer is shown as such and [`Wiki::write_back`] refuses it. Answers from
    /// before the field existed read as grounded when they cite a page.
    #[serde(default = "grounded_default")]
    pub grounded: bool,
    /// True when routing found no page for the question, or its [`Answer::relevance`] is below
    /// [`AskOptions::decline_below`] (with that option's exceptions): no answer call was made
    /// and `answer` says the wiki has nothing on it ([`DECLINED_ANSWER`]).
    #[serde(default)]
    pub declined: bool,
    /// When declined: the closest pages (keys, best first), where the wiki comes nearest to the
    /// question. Empty otherwise.
    #[serde(default)]
    pub suggestions: Vec<String>,
    /// How much of the question the wiki holds, in `[0, 1]` ([`relevance`]: the IDF-weighted
    /// share of its content words held by the best routed page or source passage on offer,
    /// averaged with the share the wiki holds anywhere; 0 when no word of it occurs); below
    /// [`AskOptions::decline_below`] the question is declined. 0 for answers saved before the
    /// field existed.
    #[serde(default)]
    pub relevance: f32,
    /// The question's content words (slots, [`relevance::slots`]) its best page or passage
    /// lacks, rarest first: for a declined question, what the wiki has nothing on.
    #[serde(default)]
    pub unmatched: Vec<String>,
    /// True when the question is in another script than the text it would be answered from
    /// (an English question over Chinese sources: [`relevance::cross_script`]). Offline such a
    /// question is declined below the threshold like any other, since the offline search cannot
    /// match across languages; with an endpoint embedding it is answered.
    #[serde(default)]
    pub cross_lingual: bool,
}

/// A source passage an answer cites (Decision 3's footnote form: [`SourceCitation::footnote`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SourceCitation {
    /// The footnote id the answer cites it with (`s1` for `[^s1]`).
    pub id: String,
    /// The source key.
    pub source: String,
    /// The source version the passage was cut from (its text stays readable).
    pub version: String,
    /// The source's title.
    pub source_title: String,
    /// The passage's heading path (" › "-joined; "" before the first heading).
    pub heading: String,
    /// 1-based inclusive line range in that version's text.
    pub lines: (u32, u32),
    /// The source's summary page, when it has one (the footnote links it).
    pub summary_page: Option<String>,
    /// The passage, verbatim with whitespace folded to single spaces.
    pub quote: String,
}

impl SourceCitation {
    /// The footnote definition: `[^s1]: [[Summary page|Title]] — “quote” (key, lines a–b)`;
    /// the title in italics when the source has no summary page. Quote marks in the passage are
    /// kept as they are.
    pub fn footnote(&self) -> String {
        let named = match &self.summary_page {
            Some(page) => crate::markdown::wikilinks::link_to(page, &self.source_title),
            None => format!("*{}*", self.source_title.replace(['*', '[', ']'], "")),
        };
        let lines = if self.lines.0 == self.lines.1 {
            format!("line {}", self.lines.0)
        } else {
            format!("lines {}–{}", self.lines.0, self.lines.1)
        };
        format!(
            "[^{}]: {named} — “{}” ({}, {lines})",
            self.id, self.quote, self.source
        )
    }
}

fn grounded_default() -> bool {
    true
}

/// Closest pages a declined answer suggests.
const SUGGESTIONS: usize = 3;

/// The answer of a declined question ([`Answer::declined`]).
pub const DECLINED_ANSWER: &str = "The wiki has nothing on this yet.";

/// The answer of a declined question: [`DECLINED_ANSWER`], the first [`SUGGESTIONS`] of
/// `closest` as suggestions, and what routing did (its usage is the answer's).
fn declined(
    closest: Vec<String>,
    relevance: relevance::Relevance,
    routed: route::Routed,
    hopped: Vec<String>,
    extractive: bool,
    timings: Timings,
) -> Answer {
    Answer {
        answer: DECLINED_ANSWER.into(),
        suggestions: closest.into_iter().take(SUGGESTIONS).collect(),
        relevance: relevance.score,
        unmatched: relevance.unmatched,
        cross_lingual: relevance.cross_lingual,
        routed: routed.pages,
        hopped,
        route: Some(routed.method),
        extractive,
        usage: routed.usage,
        route_usage: routed.usage,
        timings,
        grounded: false,
        declined: true,
        ..Answer::default()
    }
}

/// A clock-free elapsed time in ms for the injected clock.
fn elapsed(start: i64, end: i64) -> f64 {
    (end - start).max(0) as f64
}

/// Budget figures for one ask.
#[derive(Debug, Clone, Copy)]
pub struct AskBudget {
    /// Context window in tokens.
    pub context_window: u64,
    /// Reply cap in tokens.
    pub max_output_tokens: u64,
    /// Token estimation.
    pub estimator: TokenEstimator,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Answers `question` (see the module docs). `on_token` receives the answer as it streams.
    ///
    /// Errors: the endpoint's (typed LLM errors), [`Error::Cancelled`], storage errors; a failed
    /// write-back leaves the wiki as it was and is reported as the error.
    pub async fn ask<M: QueryModel>(
        &self,
        model: &M,
        question: &str,
        options: &AskOptions,
        budget: AskBudget,
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<Answer> {
        let question = question.trim();
        if question.is_empty() {
            return Err(Error::InvalidInput("the question is empty".into()));
        }
        let t0 = self.clock.now_ms();
        // The question is embedded once, a follow-up with the question before it (the built-in
        // offline embedding, when configured and no endpoint's vector was given); every search
        // below reuses it.
        let embedded;
        let options = if options.query_vector.is_none() {
            embedded = AskOptions {
                query_vector: self
                    .query_vector(&search_text(question, &options.history))
                    .await?,
                ..options.clone()
            };
            &embedded
        } else {
            options
        };
        // Routing and the hop read the page table; only the pages answered from are read.
        let table = self.page_table().await?;
        let mut usage = TokenUsage::default();

        // 1. Search; decline when the wiki does not know the question; route (by search alone
        // when it found one place holding the question), then one hop along links from the
        // chosen pages, hubs excluded.
        let found = self.search_first(question, options, &table).await?;
        let decline_below = options.decline_below.clamp(0.0, 1.0);
        // Without an endpoint embedding the decision is lexical, and routing cannot lower the
        // score: a question the wiki does not know is declined before the routing call is paid.
        // (With one, a question in another language may still be answered: decided below.)
        if !route::semantic(options.query_vector.as_ref())
            && found.relevance.declines(decline_below)
        {
            let relevance = found.relevance;
            let t1 = self.clock.now_ms();
            return Ok(declined(
                found.pages,
                relevance,
                route::Routed {
                    pages: Vec::new(),
                    method: RouteMethod::Search,
                    usage: TokenUsage::default(),
                },
                Vec::new(),
                model.extractive(),
                Timings {
                    route_ms: elapsed(t0, t1),
                    answer_ms: 0.0,
                    write_ms: 0.0,
                },
            ));
        }
        let routed = if search_routes_alone(options, &found.relevance) {
            // A follow-up is searched with the question before it, as the passages were.
            self.route_by_search(&found.rank_query, options).await?
        } else {
            self.route_question(model, question, options, budget, &table, cancel)
                .await?
        };
        usage.add(&routed.usage);
        let hopped = route::hop(&table, &routed.pages, options.hop_pages);
        let t1 = self.clock.now_ms();

        // 2. Answer from the chosen pages, within budget.
        let (given, relevance) = self
            .answer_context(question, options, budget, found, &routed, &hopped)
            .await?;
        let given_passages: Vec<String> = given
            .iter()
            .filter_map(|g| g.passage.as_ref())
            .map(|p| p.key.clone())
            .collect();
        // Nothing to answer from, or nothing that holds enough of the question: no answer call
        // (a model would answer from nowhere, or quote what is near the topic but not on it).
        // A question in another script than the text on offer cannot match it word for word:
        // it is declined on its score only when its embedding cannot match across languages
        // either (the offline one cannot; an endpoint model may).
        let endpoint_embedding = route::semantic(options.query_vector.as_ref());
        let lexical_only = !(relevance.cross_lingual && endpoint_embedding);
        if given.is_empty() || (relevance.declines(decline_below) && lexical_only) {
            let t2 = self.clock.now_ms();
            return Ok(declined(
                routed.pages.clone(),
                relevance,
                routed,
                hopped,
                model.extractive(),
                Timings {
                    route_ms: elapsed(t0, t1),
                    answer_ms: elapsed(t1, t2),
                    write_ms: 0.0,
                },
            ));
        }
        let (raw, answer_usage) = model
            .answer(question, &options.history, &given, on_token, cancel)
            .await?;
        usage.add(&answer_usage);
        // Citations: keep those naming a given page, remove the others.
        let checked = citations::check(&raw, &given, table.resolver());
        let t2 = self.clock.now_ms();

        let cited = checked.citations.len() + checked.sources.len();
        let mut result = Answer {
            worth_saving: cited >= 2,
            grounded: cited > 0,
            source_citations: checked.sources,
            passages: given_passages,
            declined: false,
            suggestions: vec![],
            relevance: relevance.score,
            unmatched: relevance.unmatched,
            cross_lingual: relevance.cross_lingual,
            answer: checked.answer,
            citations: checked.citations,
            removed_citations: checked.removed,
            routed: routed.pages,
            hopped,
            route: Some(routed.method),
            extractive: model.extractive(),
            usage,
            route_usage: routed.usage,
            answer_usage,
            timings: Timings {
                route_ms: elapsed(t0, t1),
                answer_ms: elapsed(t1, t2),
                write_ms: 0.0,
            },
            saved: None,
        };
        // 3. Write-back.
        // (An ungrounded answer is not written back: `saved` stays empty.)
        if options.write_back && result.grounded {
            result.saved = Some(self.write_back(question, &result).await?.key);
            result.timings.write_ms = elapsed(t2, self.clock.now_ms());
        }
        Ok(result)
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// [`Wiki::ask`] with the configured endpoint over `transport` (offline and extractive when the
    /// provider is `offline`), its context window, output cap and query token budget.
    pub async fn ask_configured<T: crate::llm::transport::Transport>(
        &self,
        transport: T,
        question: &str,
        options: &AskOptions,
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<Answer> {
        use crate::llm::config::Provider;
        use crate::llm::structured::Budgeted;
        let config = self.llm_config().await?;
        let resolved = config.resolve(Purpose::Query);
        let budget = AskBudget {
            context_window: u64::from(config.context_window),
            max_output_tokens: u64::from(resolved.max_output_tokens),
            estimator: config.estimator,
        };
        // The question's embedding from the configured embedder (an endpoint's even when the
        // chat is offline), when the stored vectors are of its model; an endpoint error leaves
        // the search steps on BM25 (the answer does not depend on it). A follow-up is embedded
        // with the question before it, as it is searched.
        let mut options = options.clone();
        if options.query_vector.is_none() {
            let text = search_text(question, &options.history);
            options.query_vector = self
                .query_vector_configured(&transport, &text, cancel)
                .await
                .unwrap_or(None);
        }
        let options = &options;
        if config.provider == Provider::Offline {
            return self
                .ask(&OfflineQuery, question, options, budget, on_token, cancel)
                .await;
        }
        let llm = self.endpoint_llm(config.clone(), transport).await?;
        let budgeted = Budgeted::new(&llm, &config, Purpose::Query);
        let model = LlmQuery {
            llm: &budgeted,
            max_output_tokens: Some(resolved.max_output_tokens),
        };
        let answer = self
            .ask(&model, question, options, budget, on_token, cancel)
            .await;
        let _ = self.save_llm_learned(llm.learned()).await;
        answer
    }
}
