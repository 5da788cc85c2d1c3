//! The answer's context, step 2 of [`Wiki::ask`]: the passages of the routed and hopped pages
//! that best match the question ([`passages`]), then the source passages that best match it
//! ([`Wiki::source_context`]), within the answer budget and the room the context window leaves.
//! *Invariant:* the answer request never exceeds the context window, and every routed page with
//! text keeps its best passage that fits.

use std::collections::BTreeMap;

use crate::clock::Clock;
use crate::error::Result;
use crate::model::Page;
use crate::storage::{Storage, Store};
use crate::wiki::Wiki;

use super::model::{Given, GivenPassage};
use super::relevance::{cross_script, relevance, Relevance};
use super::route::{semantic, with_vector_best, VECTOR_BEST};
use super::{passages, AskBudget, AskOptions, ANSWER_SYSTEM};
use crate::search::HitKind;

/// Pages BM25 ranks best for a question, scored for its relevance beside the routed ones.
const RELEVANCE_PAGES: usize = 10;

/// Source passages searched for a question (the best of all sources).
const SOURCE_CANDIDATES: usize = 8;
/// Passages of the routed pages' own sources added to them (the drill-down).
const DRILL_DOWN: usize = 3;
/// Share of the answer budget the pages get when source passages are on offer (what they leave
/// goes to the passages).
const PAGE_SHARE: f64 = 0.6;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// What the answer call is given: per page in routed-then-hopped order its chosen passages
    /// ([`passages::render`]), or a routed page without text by its title and lead alone; then
    /// source passages ([`Wiki::source_context`]) in what the pages leave of the budget. Empty
    /// when nothing is left to answer from.
    ///
    /// With it, the question's [`Relevance`] to the best of the routed and hopped pages, BM25's
    /// top [`RELEVANCE_PAGES`] pages and the source passages on offer, and whether the question
    /// is in another script than the text given ([`Relevance::cross_lingual`]).
    ///
    /// Errors: storage errors reading the pages and sources.
    pub(super) async fn answer_context(
        &self,
        question: &str,
        options: &AskOptions,
        budget: AskBudget,
        routed: &[String],
        hopped: &[String],
    ) -> Result<(Vec<Given>, Relevance)> {
        let est = budget.estimator;
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
        for k in routed.iter().chain(hopped) {
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
        let drill: Vec<String> = routed
            .iter()
            .filter_map(|k| answered.get(k.as_str()))
            .flat_map(|p| p.sources.iter().cloned())
            .collect();
        let candidates = self.source_candidates(&rank_query, options, &drill).await?;
        // Whether the wiki knows is asked of the pages search ranks best too, not only of those
        // routing chose: a router's choice over index.md may miss the page that holds the words.
        let index = self.search_index_shared().await?;
        let searched = index.search(
            &passages::content_query(&rank_query),
            &crate::search::SearchOptions {
                k: RELEVANCE_PAGES,
                mode: crate::search::SearchMode::Bm25,
                explain: false,
                ..Default::default()
            },
        );
        let units: Vec<(HitKind, String)> = routed
            .iter()
            .chain(hopped)
            .chain(searched.hits.iter().map(|h| &h.key))
            .map(|k| (HitKind::Page, k.clone()))
            .chain(candidates.iter().map(|k| (HitKind::Passage, k.clone())))
            .collect();
        let mut relevance = relevance(&index, &rank_query, &units);
        drop(index);
        let page_budget = if candidates.is_empty() {
            answer_budget
        } else {
            (answer_budget as f64 * PAGE_SHARE) as u64
        };
        let picks = passages::select(&rank_query, &chosen_pages, page_budget, room, &est);
        let mut given: Vec<Given> = Vec::new();
        let mut used = 0u64;
        for (p, picked) in chosen_pages.iter().zip(&picks) {
            // A routed page without text (an empty body) is still shown by its title and lead.
            if !picked.is_empty() || (p.required && p.passages.is_empty()) {
                let text = passages::render(p, picked);
                used += est.estimate(&text) + est.estimate(&p.title) + 8;
                given.push(Given {
                    key: p.key.clone(),
                    title: p.title.clone(),
                    text,
                    passage: None,
                });
            }
        }
        let left = answer_budget.min(room).saturating_sub(used);
        given.extend(self.source_context(candidates, &given, left, &est).await?);
        relevance.cross_lingual = cross_script(question, given.iter().map(|g| g.text.as_str()));
        Ok((given, relevance))
    }

    /// The source passages on offer for `query`: the best [`SOURCE_CANDIDATES`] of all sources
    /// (hybrid search with the question's embedding, as routing searches; with an endpoint
    /// model's embedding, a passage the vectors alone find too, and the vectors' best ones:
    /// [`with_vector_best`]), then up to
    /// [`DRILL_DOWN`] of the `drill` sources (those of the routed pages) not among them. Keys,
    /// best first.
    async fn source_candidates(
        &self,
        query: &str,
        options: &AskOptions,
        drill: &[String],
    ) -> Result<Vec<String>> {
        let index = self.search_index_shared().await?;
        if index.passage_count() == 0 {
            return Ok(Vec::new());
        }
        let query_vector = match &options.query_vector {
            Some(v) => Some(v.clone()),
            None => self.query_vector(query).await?,
        };
        // A passage only the vectors find is kept when they are an endpoint model's (and the
        // vectors' best are added, see `with_vector_best`); offline, a vector-only hit of the
        // hashed n-grams is noise.
        let semantic = semantic(query_vector.as_ref());
        let found = |h: &crate::search::SearchHit| semantic || h.explain.bm25_rank.is_some();
        let text = passages::content_query(query);
        let search = |k: usize| crate::search::SearchOptions {
            k,
            depth: k.max(50),
            explain: false,
            query_vector: query_vector.clone(),
            ..Default::default()
        };
        let mut keys: Vec<String> = index
            .search_passages(&text, &search(SOURCE_CANDIDATES))
            .hits
            .into_iter()
            .filter(found)
            .map(|h| h.key)
            .collect();
        if semantic {
            let vector = crate::search::SearchOptions {
                mode: crate::search::SearchMode::Vector,
                ..search(VECTOR_BEST)
            };
            let r = index.search_passages(&text, &vector);
            if r.mode == crate::search::SearchMode::Vector {
                let best: Vec<String> = r.hits.into_iter().map(|h| h.key).collect();
                keys = with_vector_best(keys, &best);
            }
        }
        if !drill.is_empty() {
            let extra: Vec<String> = index
                .search_passages(&text, &search(200))
                .hits
                .into_iter()
                .filter(found)
                .filter(|h| h.source.as_ref().is_some_and(|s| drill.contains(s)))
                .map(|h| h.key)
                .filter(|k| !keys.contains(k))
                .take(DRILL_DOWN)
                .collect();
            keys.extend(extra);
        }
        Ok(keys)
    }

    /// The candidate passages that fit in `left` estimated tokens, in candidate order, skipping
    /// any whose sentences the `given` pages already quote (half or more of them, verbatim).
    /// Each gets a footnote id `s1`, `s2`, … in the order given.
    async fn source_context(
        &self,
        candidates: Vec<String>,
        given: &[Given],
        left: u64,
        est: &crate::text::TokenEstimator,
    ) -> Result<Vec<Given>> {
        if candidates.is_empty() || left == 0 {
            return Ok(Vec::new());
        }
        let index = self.search_index_shared().await?;
        let texts = self.passage_texts(&index, &candidates).await?;
        let quoted: String = given
            .iter()
            .map(|g| fold(&g.text))
            .collect::<Vec<_>>()
            .join("\n");
        let mut out = Vec::new();
        let mut used = 0u64;
        let mut titles: BTreeMap<String, (String, Option<String>)> = BTreeMap::new();
        for p in texts {
            let sentences = crate::extractive::sentences::sentences(&p.text);
            let already = sentences
                .iter()
                .filter(|s| quoted.contains(&fold(s)))
                .count();
            if !sentences.is_empty() && already * 2 >= sentences.len() {
                continue;
            }
            let cost = est.estimate(&p.text) + est.estimate(&p.meta.heading) + 24;
            if used + cost > left {
                continue;
            }
            used += cost;
            if !titles.contains_key(&p.meta.source) {
                let named = match self
                    .read::<crate::model::Source>(Store::Sources, &p.meta.source)
                    .await?
                {
                    Some((s, _)) => (s.title, s.summary_page),
                    None => (p.meta.source.clone(), None),
                };
                titles.insert(p.meta.source.clone(), named);
            }
            let (source_title, summary_page) = titles[&p.meta.source].clone();
            let title = if p.meta.heading.is_empty() {
                format!("Source: {source_title}")
            } else {
                format!("Source: {source_title} › {}", p.meta.heading)
            };
            out.push(Given {
                key: format!("s{}", out.len() + 1),
                title,
                text: p.text,
                passage: Some(GivenPassage {
                    key: p.key,
                    source: p.meta.source,
                    version: p.meta.version,
                    source_title,
                    heading: p.meta.heading,
                    lines: p.meta.lines,
                    summary_page,
                }),
            });
        }
        Ok(out)
    }
}

/// `s` with whitespace folded to single spaces (for the already-quoted check).
fn fold(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
