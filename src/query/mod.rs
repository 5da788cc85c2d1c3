//! Query: answer a question from the wiki, citing its pages; optionally save the answer as an
//! `analysis` page (write-back), so knowledge compounds.
//!
//! 1. *Route*: when index.md fits the routing budget (a share of the context window, Decision 12
//!    estimates) the model reads it whole and picks pages; otherwise hybrid search (BM25 + vectors,
//!    RRF) shortlists index lines first and the model picks among them (field case F31a). One hop
//!    along the chosen pages' links adds their neighbours, bounded, hubs excluded.
//! 2. *Answer*: passages of the chosen pages ([`passages`]: split along headings and paragraphs,
//!    ranked by BM25F against the question) fill [`AskOptions::answer_budget`], every routed page
//!    keeping at least its best one → a streamed answer citing `[[pages]]`. Every citation is
//!    checked: one naming no page the answer was given is removed and counted (F32).
//! 3. *Write-back*: the answer becomes an `analysis` page citing its pages, one operation.
//!
//! Offline (no endpoint) routing is the hybrid search alone and the answer is extractive: the
//! passages that best match the question, each cited, and it says so.

pub mod passages;
#[cfg(feature = "test-support")]
pub mod scripted;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::documents::index_line_with_summary;
use crate::error::{Error, Result};
use crate::llm::prompt::{source_block, DATA_NOTICE};
use crate::llm::structured::chat_json;
use crate::llm::{Cancel, ChatRequest, JsonSchema, Llm, Message, OnToken, Purpose, Role};
use crate::markdown::resolve::Resolution;
use crate::markdown::wikilinks;
use crate::model::{Author, OperationKind, Page, PageKind, Revision, TokenUsage};
use crate::search::{SearchMode, SearchOptions};
use crate::storage::{Expect, Storage, Store};
use crate::text::TokenEstimator;
use crate::wiki::{revision_key, to_json, Wiki};

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
    /// Estimated tokens of page text the answer step is given (Decision 12 estimates): the
    /// passages of the chosen pages that best match the question ([`passages`]), in score order
    /// until this is spent. Range 200–100 000; default 1500 (about three of the ~512-token
    /// chunks a RAG pipeline sends, or nine of our ≤ 160-token passages). Whatever the budget,
    /// every routed page keeps its best passage that fits (so each can be cited) — unless the
    /// context window runs out first: it is never exceeded. Low values answer from little more than those best passages; at the
    /// top of the range whole pages are given, as before passages existed. Measured on the
    /// benchmark's wiki (answer input per question, system prompt and question included): 1318
    /// tokens at 1000, 1438 at 1500, 2717 at 3000, 3554 with whole pages (100 000).
    pub answer_budget: u64,
    /// The question's embedding for the search steps (set by [`Wiki::ask_configured`] from an
    /// embedding endpoint); `None`: the built-in offline embedding when configured, else BM25.
    #[serde(skip)]
    #[cfg_attr(target_arch = "wasm32", tsify(type = "never"))]
    pub query_vector: Option<crate::search::QueryVector>,
}

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
    /// Search alone (offline, or the model picked nothing).
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
    /// True when the answer rests on the wiki: it cites at least one page it was given. An
    /// ungrounded answer is shown as such and [`Wiki::write_back`] refuses it. Answers from
    /// before the field existed read as grounded when they cite a page.
    #[serde(default = "grounded_default")]
    pub grounded: bool,
    /// True when routing found no page for the question: no answer call was made and `answer`
    /// says the wiki has nothing on it ([`DECLINED_ANSWER`]).
    #[serde(default)]
    pub declined: bool,
    /// Questions the wiki could answer instead (empty for now; a later issue fills it).
    #[serde(default)]
    pub suggestions: Vec<String>,
}

fn grounded_default() -> bool {
    true
}

/// The answer of a declined question ([`Answer::declined`]).
pub const DECLINED_ANSWER: &str = "The wiki has nothing on this yet.";

/// What an answer model needs (the LLM or the offline extractor).
#[allow(async_fn_in_trait)] // used generically on one thread, never as dyn
pub trait QueryModel {
    /// Picks page keys (or titles) for `question` from `index` lines; `None` means "cannot route"
    /// (the search shortlist is then used as it is).
    async fn route(
        &self,
        question: &str,
        history: &[Turn],
        index: &str,
        max: usize,
        cancel: &Cancel,
    ) -> Result<(Option<Vec<String>>, TokenUsage)>;
    /// Answers from `pages` (key, title, text), streaming through `on_token`.
    async fn answer(
        &self,
        question: &str,
        history: &[Turn],
        pages: &[(String, String, String)],
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<(String, TokenUsage)>;
    /// True for the extractive model.
    fn extractive(&self) -> bool;
}

/// The query model backed by a chat endpoint.
pub struct LlmQuery<'a, L: Llm> {
    /// The endpoint.
    pub llm: &'a L,
    /// Output cap per call.
    pub max_output_tokens: Option<u32>,
}

fn route_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "pages": {"type": "array", "items": {"type": "string", "description": "A page key from the index, e.g. the text inside [[…]]."}},
            "reason": {"type": "string", "description": "One sentence: why these pages."}
        },
        "required": ["pages", "reason"],
        "additionalProperties": false
    })
}

/// System prompt of the answer call: answer from the pages only, cite each statement.
pub const ANSWER_SYSTEM: &str = "You answer questions from a personal wiki. Use only the wiki pages given in <source> blocks. \
After each statement, cite the page it comes from as [[page key]] with the key of its block. If the pages do not answer \
the question, say so plainly instead of guessing. Answer in the language of the question.";

fn history_messages(history: &[Turn]) -> Vec<Message> {
    history
        .iter()
        .flat_map(|t| {
            [
                Message {
                    role: Role::User,
                    content: t.question.clone(),
                },
                Message {
                    role: Role::Assistant,
                    content: t.answer.clone(),
                },
            ]
        })
        .collect()
}

impl<L: Llm> QueryModel for LlmQuery<'_, L> {
    async fn route(
        &self,
        question: &str,
        history: &[Turn],
        index: &str,
        max: usize,
        cancel: &Cancel,
    ) -> Result<(Option<Vec<String>>, TokenUsage)> {
        let mut messages = history_messages(history);
        messages.push(Message {
            role: Role::User,
            content: format!(
                "{}\n\nPick at most {max} pages of the wiki index above that are most likely to answer this question \
                 (keys as written inside [[…]]): {question}",
                source_block("index.md", index)
            ),
        });
        let request = ChatRequest {
            purpose: Purpose::Query,
            system: format!("You route questions to the pages of a personal wiki. {DATA_NOTICE}"),
            messages,
            json: Some(JsonSchema {
                name: "route".into(),
                schema: route_schema(),
            }),
            max_tokens: self.max_output_tokens.map(|m| m.min(1024)),
            temperature: Some(0.0),
        };
        let reply = chat_json(self.llm, &request, cancel).await?;
        let pages = reply
            .value
            .get("pages")
            .and_then(|p| p.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str())
                    .map(|s| {
                        s.trim()
                            .trim_start_matches("[[")
                            .trim_end_matches("]]")
                            .to_string()
                    })
                    .collect()
            });
        Ok((pages, reply.usage))
    }

    async fn answer(
        &self,
        question: &str,
        history: &[Turn],
        pages: &[(String, String, String)],
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<(String, TokenUsage)> {
        let mut messages = history_messages(history);
        let blocks: Vec<String> = pages
            .iter()
            .map(|(k, t, text)| source_block(k, &format!("# {t}\n\n{text}")))
            .collect();
        messages.push(Message {
            role: Role::User,
            content: format!("{}\n\nQuestion: {question}", blocks.join("\n\n")),
        });
        let request = ChatRequest {
            purpose: Purpose::Query,
            system: format!("{ANSWER_SYSTEM} {DATA_NOTICE}"),
            messages,
            json: None,
            max_tokens: self.max_output_tokens,
            temperature: Some(0.2),
        };
        let reply = self.llm.chat(&request, on_token, cancel).await?;
        Ok((reply.text, reply.usage))
    }

    fn extractive(&self) -> bool {
        false
    }
}

/// The extractive query model (offline): search routes; the answer is the best matching passages.
pub struct OfflineQuery;

/// Lead line of an extractive answer.
pub const EXTRACTIVE_NOTE: &str =
    "Extractive answer (no LLM configured): the passages of the wiki that best match the question.";

impl QueryModel for OfflineQuery {
    async fn route(
        &self,
        _: &str,
        _: &[Turn],
        _: &str,
        _: usize,
        _: &Cancel,
    ) -> Result<(Option<Vec<String>>, TokenUsage)> {
        Ok((None, TokenUsage::default()))
    }

    async fn answer(
        &self,
        question: &str,
        _: &[Turn],
        pages: &[(String, String, String)],
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<(String, TokenUsage)> {
        cancel.check()?;
        // The sentences of the passages given, ranked by the same BM25F as the passages
        // themselves ([`passages::rank`]: function words dropped, rare terms weigh more).
        let mut candidates: Vec<(usize, usize, String)> = Vec::new(); // (page, sentence, text)
        for (pi, (_, _, text)) in pages.iter().enumerate() {
            // Undefined `[^x]` markers (a hand-edited page) are text to the parser; quotes drop them.
            let plain = crate::markdown::plain::strip_refs(
                &crate::markdown::plain::without_footnotes(text),
            );
            for (si, s) in crate::markdown::blocks::text_blocks(&plain)
                .into_iter()
                .filter_map(|b| match b {
                    crate::markdown::blocks::TextBlock::Text(t) => Some(t),
                    _ => None,
                })
                .flat_map(|t| crate::extractive::sentences::sentences(&t))
                .enumerate()
            {
                candidates.push((pi, si, s));
            }
        }
        let units: Vec<passages::Unit<'_>> = candidates
            .iter()
            .map(|(_, _, s)| passages::Unit {
                context: "",
                aliases: &[],
                text: s,
            })
            .collect();
        let scores = passages::rank(question, &units);
        // One line per sentence, citing up to two of the pages that state it.
        let mut by_sentence: BTreeMap<String, Passage> = BTreeMap::new();
        for ((pi, si, s), &score) in candidates.iter().zip(&scores) {
            let score = f64::from(score);
            if score <= 0.0 {
                continue;
            }
            let e = by_sentence
                .entry(s.clone())
                .or_insert((score, *pi, *si, Vec::new()));
            if e.3.len() < 2 && !e.3.contains(&pages[*pi].0) {
                e.3.push(pages[*pi].0.clone());
            }
        }
        let mut ranked: Vec<(String, Passage)> = by_sentence.into_iter().collect();
        crate::util::sort_by(&mut ranked, &|a, b| {
            b.1 .0
                .total_cmp(&a.1 .0)
                .then(a.1 .1.cmp(&b.1 .1))
                .then(a.1 .2.cmp(&b.1 .2))
        });
        let lines: Vec<String> = ranked
            .into_iter()
            .take(5)
            .map(|(s, (_, _, _, keys))| {
                let cites: Vec<String> = keys.iter().map(|k| format!("[[{k}]]")).collect();
                format!("- {s} {}", cites.join(" "))
            })
            .collect();
        let text = if lines.is_empty() {
            format!("{EXTRACTIVE_NOTE}\n\nThe wiki has no passage about this question.")
        } else {
            format!("{EXTRACTIVE_NOTE}\n\n{}", lines.join("\n"))
        };
        if let Some(f) = on_token {
            f(&text);
        }
        Ok((text, TokenUsage::default()))
    }

    fn extractive(&self) -> bool {
        true
    }
}

/// A candidate passage of an extractive answer: score, page order, sentence order, citing pages.
type Passage = (f64, usize, usize, Vec<String>);

/// Longest summary, in characters, a shortlisted index line shows the router.
pub const ROUTING_SUMMARY_CHARS: usize = 160;

/// A shortlisted index line for the router: `- [[key]] (kind) — summary · aliases: a, b`, as
/// [`index_line`](crate::documents::index_line) but with the summary as plain text
/// ([`plain_text`](crate::markdown::plain::plain_text): link targets, images and emphasis
/// markers dropped, so a URL is not paid for on every question) and cut at a word boundary to
/// [`ROUTING_SUMMARY_CHARS`] characters (`…` marks a cut).
pub fn routing_line(p: &Page) -> String {
    let plain = crate::markdown::plain::plain_text(&p.summary);
    let summary = if plain.chars().count() > ROUTING_SUMMARY_CHARS {
        let cut: String = plain.chars().take(ROUTING_SUMMARY_CHARS).collect();
        let at = cut
            .rfind(char::is_whitespace)
            .filter(|&i| i > cut.len() / 2)
            .unwrap_or(cut.len());
        format!("{}…", cut[..at].trim_end())
    } else {
        plain
    };
    index_line_with_summary(p, &summary)
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
        let est = budget.estimator;
        let t0 = self.clock.now_ms();
        // Routing and the hop read the page table; only the pages answered from are read.
        let table = self.page_table().await?;
        let resolver = table.resolver();
        let max_pages = options.max_pages.clamp(1, 20);
        let mut usage = TokenUsage::default();

        // 1. Route.
        let index_md = self.index().await?;
        let routing_budget =
            (budget.context_window as f64 * options.routing_share.clamp(0.05, 0.8)) as u64;
        let search = |k: usize| SearchOptions {
            k,
            mode: SearchMode::Hybrid,
            query_vector: None,
            ..Default::default()
        };
        let query_vector = match &options.query_vector {
            Some(v) => Some(v.clone()),
            None => self.query_vector(question).await?,
        };
        let (index_text, method_if_model) = if est.estimate(&index_md) <= routing_budget {
            (index_md.clone(), RouteMethod::Index)
        } else {
            let mut o = search(options.shortlist.clamp(5, 200));
            o.query_vector = query_vector.clone();
            let hits = self.search(question, &o).await?.hits;
            let mut lines = String::new();
            for h in hits {
                if let Some(row) = table.get(&h.key) {
                    let line = routing_line(&row.page_without_body());
                    if est.estimate(&lines) + est.estimate(&line) > routing_budget {
                        break;
                    }
                    lines.push_str(&line);
                }
            }
            (lines, RouteMethod::Shortlist)
        };
        let (picked, u) = if model.extractive() || table.is_empty() {
            (None, TokenUsage::default())
        } else {
            model
                .route(question, &options.history, &index_text, max_pages, cancel)
                .await?
        };
        let route_usage = u;
        usage.add(&u);
        let mut routed: Vec<String> = Vec::new();
        for name in picked.iter().flatten() {
            if let Resolution::Page(k) = resolver.resolve(name) {
                if !routed.contains(&k) && routed.len() < max_pages {
                    routed.push(k);
                }
            }
        }
        let method = if routed.is_empty() {
            let mut o = search(max_pages);
            o.query_vector = query_vector;
            routed = self
                .search(question, &o)
                .await?
                .hits
                .into_iter()
                .map(|h| h.key)
                .collect();
            RouteMethod::Search
        } else {
            method_if_model
        };

        // One hop along links from the chosen pages, hubs excluded.
        let graph = table.link_graph();
        let hub = (table.len() / 10).max(10);
        let mut votes: BTreeMap<String, usize> = BTreeMap::new();
        for k in &routed {
            for target in graph.outgoing.get(k).into_iter().flatten() {
                let is_hub = graph.backlinks.get(target).is_some_and(|b| b.len() > hub);
                if !routed.contains(target) && !is_hub {
                    *votes.entry(target.clone()).or_default() += 1;
                }
            }
        }
        let mut hop: Vec<(String, usize)> = votes.into_iter().collect();
        crate::util::sort_by(&mut hop, &|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let hopped: Vec<String> = hop
            .into_iter()
            .take(options.hop_pages.min(10))
            .map(|(k, _)| k)
            .collect();
        let t1 = self.clock.now_ms();

        // 2. Answer from the chosen pages, within budget.
        let overhead = est.estimate(ANSWER_SYSTEM)
            + options
                .history
                .iter()
                .map(|t| est.estimate(&t.question) + est.estimate(&t.answer))
                .sum::<u64>()
            + est.estimate(question)
            + 200;
        let room = budget
            .context_window
            .saturating_sub(budget.max_output_tokens + overhead);
        let mut answered: BTreeMap<String, Page> = BTreeMap::new();
        for k in routed.iter().chain(&hopped) {
            if let Some((p, _)) = self.read::<Page>(Store::Pages, k).await? {
                answered.insert(k.clone(), p);
            }
        }
        let chosen_pages: Vec<passages::PageText> = routed
            .iter()
            .map(|k| (k, true))
            .chain(hopped.iter().map(|k| (k, false)))
            .filter_map(|(k, required)| {
                let p = answered.get(k.as_str())?;
                Some(passages::PageText {
                    key: p.key.clone(),
                    title: p.title.clone(),
                    aliases: p.aliases.clone(),
                    lead: p.summary.clone(),
                    passages: passages::split(
                        &crate::markdown::plain::without_footnotes(&p.body),
                        &est,
                    ),
                    required,
                })
            })
            .collect();
        let answer_budget = options.answer_budget.clamp(200, 100_000);
        // A follow-up ("where are they based?") is ranked with the question before it.
        let rank_query = match options.history.last() {
            Some(t) => format!("{} {question}", t.question),
            None => question.to_string(),
        };
        let picks = passages::select(&rank_query, &chosen_pages, answer_budget, room, &est);
        let mut given: Vec<(String, String, String)> = Vec::new();
        for (p, picked) in chosen_pages.iter().zip(&picks) {
            // A routed page without text (an empty body) is still shown by its title and lead.
            if !picked.is_empty() || (p.required && p.passages.is_empty()) {
                given.push((p.key.clone(), p.title.clone(), passages::render(p, picked)));
            }
        }
        // Nothing to answer from: no answer call (a model would answer from nowhere).
        if given.is_empty() {
            let t2 = self.clock.now_ms();
            return Ok(Answer {
                answer: DECLINED_ANSWER.into(),
                citations: vec![],
                removed_citations: vec![],
                routed,
                hopped,
                route: Some(method),
                extractive: model.extractive(),
                usage,
                route_usage,
                answer_usage: TokenUsage::default(),
                timings: Timings {
                    route_ms: elapsed(t0, t1),
                    answer_ms: elapsed(t1, t2),
                    write_ms: 0.0,
                },
                saved: None,
                worth_saving: false,
                grounded: false,
                declined: true,
                suggestions: vec![],
            });
        }
        let (raw, answer_usage) = model
            .answer(question, &options.history, &given, on_token, cancel)
            .await?;
        usage.add(&answer_usage);

        // Citations: keep those naming a given page, remove the others.
        let allowed: BTreeSet<&str> = given.iter().map(|(k, _, _)| k.as_str()).collect();
        let mut citations: Vec<String> = Vec::new();
        let mut removed: Vec<String> = Vec::new();
        let answer = wikilinks::rewrite(&raw, |l| match resolver.resolve_link(l, None) {
            Resolution::Page(k) if allowed.contains(k.as_str()) => {
                if !citations.contains(&k) {
                    citations.push(k.clone());
                }
                let alias = l
                    .alias
                    .clone()
                    .or_else(|| (k != l.target).then(|| l.target.clone()));
                Some(wikilinks::write_link(
                    false,
                    &k,
                    l.fragment.as_ref(),
                    alias.as_deref(),
                    l.in_table,
                ))
            }
            _ => {
                removed.push(l.target.clone());
                Some(String::new())
            }
        });
        let answer = tidy_spaces(&answer);
        let t2 = self.clock.now_ms();

        let mut result = Answer {
            worth_saving: citations.len() >= 2,
            grounded: !citations.is_empty(),
            declined: false,
            suggestions: vec![],
            answer,
            citations,
            removed_citations: removed,
            routed,
            hopped,
            route: Some(method),
            extractive: model.extractive(),
            usage,
            route_usage,
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

    /// Saves an answer as an `analysis` page: the question as title, the answer as body with a
    /// `## Sources` list of the cited pages, `sources` the union of theirs. One
    /// [`OperationKind::WriteBack`] operation (index.md, log.md and the search index with it).
    ///
    /// Errors: [`Error::Ungrounded`] for an answer that rests on no page (`grounded: false`,
    /// declined, or citing no page).
    pub async fn write_back(&self, question: &str, answer: &Answer) -> Result<Page> {
        if answer.declined || !answer.grounded || answer.citations.is_empty() {
            return Err(Error::Ungrounded(
                "an answer that cites no page of the wiki is not saved to it".into(),
            ));
        }
        let table = self.page_table().await?;
        let title: String = question
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(120)
            .collect();
        let taken: BTreeSet<String> = table.taken_keys();
        let key = crate::markdown::keys::readable_unique_key(&title, "analysis", &taken);
        let now = self.clock.now_ms();
        let mut body = answer.answer.trim().to_string();
        body.push_str("\n\n## Sources\n\n");
        let mut sources: Vec<String> = Vec::new();
        for c in &answer.citations {
            if let Some(p) = table.get(c) {
                body.push_str(&format!(
                    "- {}\n",
                    crate::documents::link_to(&p.key, &p.title)
                ));
                sources.extend(p.sources.iter().cloned());
            }
        }
        crate::util::sort_dedup(&mut sources);
        let revision = self.next_revision_number(&key).await?;
        let page = Page {
            key: key.clone(),
            title: title.clone(),
            kind: PageKind::Analysis,
            summary: answer
                .answer
                .lines()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.chars().take(160).collect())
                .unwrap_or_default(),
            aliases: vec![],
            tags: if answer.extractive {
                vec![crate::extractive::OFFLINE.into()]
            } else {
                vec![]
            },
            sources,
            created: now,
            updated: now,
            body,
            revision,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        };
        let mut ob = self
            .begin(OperationKind::WriteBack, format!("saved answer: {title}"))
            .await?;
        ob.op.pages.push(key.clone());
        ob.op.usage = answer.usage;
        ob.batch
            .put(Store::Pages, key.clone(), to_json(&page), Expect::Absent);
        let rev = Revision {
            page: key.clone(),
            number: revision,
            author: Author::Llm,
            op: ob.op.id,
            time: now,
            page_state: Some(page.clone()),
        };
        ob.batch.put(
            Store::Revisions,
            revision_key(&key, revision),
            to_json(&rev),
            Expect::Absent,
        );
        self.finish(ob).await?;
        Ok(page)
    }
}

/// Collapses the double spaces a removed citation leaves, and spaces before punctuation.
fn tidy_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.split('\n') {
        if !out.is_empty() || s.starts_with('\n') {
            out.push('\n');
        }
        let mut prev_space = false;
        let mut l = String::new();
        for c in line.chars() {
            if c == ' ' {
                if !prev_space {
                    l.push(c);
                }
                prev_space = true;
            } else {
                if prev_space && matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | '。' | '，') {
                    l.pop();
                }
                l.push(c);
                prev_space = false;
            }
        }
        out.push_str(l.trim_end());
    }
    out
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
        use crate::llm::client::HttpLlm;
        use crate::llm::config::Provider;
        use crate::llm::structured::Budgeted;
        let config = self.llm_config().await?;
        let resolved = config.resolve(Purpose::Query);
        let budget = AskBudget {
            context_window: u64::from(config.context_window),
            max_output_tokens: u64::from(resolved.max_output_tokens),
            estimator: config.estimator,
        };
        if config.provider == Provider::Offline {
            return self
                .ask(&OfflineQuery, question, options, budget, on_token, cancel)
                .await;
        }
        // The question's embedding from the endpoint, when the stored vectors are of its model;
        // an endpoint error leaves the search steps on BM25 (the answer does not depend on it).
        let mut options = options.clone();
        if options.query_vector.is_none() {
            options.query_vector = self
                .query_vector_configured(&transport, question, cancel)
                .await
                .unwrap_or(None);
        }
        let options = &options;
        let llm = HttpLlm::new(config.clone(), transport)?.with_learned(self.llm_learned().await?);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PageKind;

    fn page(key: &str, summary: &str) -> Page {
        Page {
            key: key.into(),
            title: key.into(),
            kind: PageKind::Source,
            summary: summary.into(),
            aliases: vec!["别名".into()],
            tags: vec![],
            sources: vec![],
            created: 0,
            updated: 0,
            body: String::new(),
            revision: 0,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        }
    }

    #[test]
    fn routing_lines_are_plain_text_and_short() {
        let line = routing_line(&page(
            "Installation",
            "The easiest way is to install the current stable release of [Rust](https://www.rust-lang.org/) by using [rustup](https://rustup.rs/).",
        ));
        assert_eq!(
            line,
            "- [[Installation]] (source) — The easiest way is to install the current stable release of Rust by using rustup. · aliases: 别名\n"
        );
        // A summary made of empty links is nothing to route by.
        let empty = routing_line(&page(
            "The Cargo Book",
            "[](https://doc.rust-lang.org/cargo/print.html \"Print this book\")[](https://github.com/rust-lang/cargo)",
        ));
        assert_eq!(empty, "- [[The Cargo Book]] (source) · aliases: 别名\n");
        // Long summaries are cut at a word boundary; CJK without spaces by characters.
        let summary_of = |line: &str| -> String {
            let after = line.split(" — ").nth(1).unwrap();
            after.split(" · ").next().unwrap().to_string()
        };
        let long = routing_line(&page("Long", &"word ".repeat(60)));
        let summary = summary_of(&long);
        assert!(summary.ends_with("word…"), "{summary}");
        assert!(summary.chars().count() <= ROUTING_SUMMARY_CHARS + 1);
        let cjk = routing_line(&page("长", &"流量控制".repeat(60)));
        let summary = summary_of(&cjk);
        assert_eq!(
            summary.chars().count(),
            ROUTING_SUMMARY_CHARS + 1,
            "{summary}"
        );
    }
}
