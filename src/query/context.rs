//! The answer's context, step 2 of [`Wiki::ask`]: the passages of the routed and hopped pages
//! and the source passages that best match the question, ranked together ([`passages::select`]),
//! within the answer budget and the room the context window leaves.
//! *Invariant:* the answer request never exceeds the context window, and every routed page
//! whose title and lead fit it is given, by them at least (so it can be cited).

use std::collections::BTreeMap;

use crate::clock::Clock;
use crate::error::Result;
use crate::model::Page;
use crate::page_table::PageTable;
use crate::storage::{Storage, Store};
use crate::wiki::{PassageText, Wiki};

use super::model::{Given, GivenPassage};
use super::relevance::{cross_script, relevance, Relevance};
use super::route::{semantic, with_vector_best, Routed, VECTOR_BEST};
use super::{passages, AskBudget, AskOptions, RouteMethod, ANSWER_SYSTEM};
use crate::search::HitKind;

/// Pages BM25 ranks best for a question, scored for its relevance beside the routed ones.
const RELEVANCE_PAGES: usize = 10;

/// Source passages searched for a question (the best of all sources).
const SOURCE_CANDIDATES: usize = 8;
/// The best source passages found that, with the pages found, say which script the question
/// would be answered from ([`cross_script`]).
const SCRIPT_PASSAGES: usize = 3;
/// Passages of the routed pages' own sources added to them (the drill-down).
const DRILL_DOWN: usize = 3;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// What the answer call is given: per page in routed-then-hopped order its chosen passages
    /// ([`passages::render`]; a routed page with none by its title and lead alone), then the
    /// chosen source passages, `s1`, `s2`, … in the order search found them. The pages'
    /// passages and the source passages on offer ([`Wiki::source_candidates`]) compete in one
    /// ranking for the answer budget ([`passages::select`]); when a model routed, or an
    /// endpoint model embedded the question, what matches no word of the question may fill
    /// what is left. Empty when nothing is left to answer from.
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
        found: Found,
        routed: &Routed,
        hopped: &[String],
    ) -> Result<(Vec<Given>, Relevance)> {
        // A model routed: its pages were chosen by meaning, not only by words.
        let by_meaning = routed.method != RouteMethod::Search;
        let routed = &routed.pages;
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
            .map(|k| (k, passages::Role::Routed))
            .chain(hopped.iter().map(|k| (k, passages::Role::Hopped)))
            .filter_map(|(k, role)| {
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
                    role,
                })
            })
            .collect();
        let answer_budget = options.answer_budget.clamp(200, 100_000);
        let rank_query = found.rank_query;
        let drill: Vec<String> = routed
            .iter()
            .filter_map(|k| answered.get(k.as_str()))
            .flat_map(|p| p.sources.iter().cloned())
            .collect();
        let mut candidates = found.passages;
        let extra = self
            .drill_down(&rank_query, options, &drill, &candidates)
            .await?;
        candidates.extend(extra);
        let index = self.search_index_shared().await?;
        let units: Vec<(HitKind, String)> = routed
            .iter()
            .chain(hopped)
            .chain(&found.pages)
            .map(|k| (HitKind::Page, k.clone()))
            .chain(candidates.iter().map(|k| (HitKind::Passage, k.clone())))
            .collect();
        let mut relevance = relevance(&index, &rank_query, &units);
        drop(index);
        // The pages' passages and the source passages compete in one ranking for the budget.
        let mut units = chosen_pages;
        let pages = units.len();
        let (source_units, found): (Vec<_>, Vec<_>) = self
            .source_units(&candidates, found.texts)
            .await?
            .into_iter()
            .unzip();
        units.extend(source_units);
        // A source passage half of whose sentences the page text chosen before it holds
        // verbatim is already given.
        let units = &units;
        let quoted = |pi: usize, chosen: &[Vec<usize>]| {
            let given: String = chosen[..pages]
                .iter()
                .enumerate()
                .flat_map(|(i, c)| c.iter().map(move |&j| fold(&units[i].passages[j].text)))
                .collect::<Vec<_>>()
                .join("\n");
            let sentences = crate::extractive::sentences::sentences(&units[pi].passages[0].text);
            let already = sentences
                .iter()
                .filter(|s| given.contains(&fold(s)))
                .count();
            !sentences.is_empty() && already * 2 >= sentences.len()
        };
        let passages::Selection {
            chosen: picks,
            shown,
        } = passages::select(
            &rank_query,
            units,
            answer_budget,
            room,
            &est,
            &quoted,
            by_meaning || semantic(options.query_vector.as_ref()),
        );
        let mut given: Vec<Given> = Vec::new();
        for ((p, picked), &shown) in units[..pages].iter().zip(&picks).zip(&shown) {
            // Only what fits the context room: a routed page whose lead did not fit is left out.
            if shown {
                given.push(Given {
                    key: p.key.clone(),
                    title: p.title.clone(),
                    text: passages::render(p, picked),
                    passage: None,
                });
            }
        }
        let mut cited = 0;
        for ((unit, passage), picked) in units[pages..].iter().zip(found).zip(&picks[pages..]) {
            if !picked.is_empty() {
                cited += 1;
                given.push(Given {
                    key: format!("s{cited}"),
                    title: if passage.heading.is_empty() {
                        format!("Source: {}", passage.source_title)
                    } else {
                        format!("Source: {} › {}", passage.source_title, passage.heading)
                    },
                    text: unit.passages[0].text.clone(),
                    passage: Some(passage),
                });
            }
        }
        relevance.cross_lingual = cross_script(question, given.iter().map(|g| g.text.as_str()));
        Ok((given, relevance))
    }

    /// What search finds for `question` before routing ([`Found`]): the question ranked with
    /// the one before it when it follows up ("where are they based?"), the source passages on
    /// offer, the pages BM25 ranks best (whether the wiki knows is asked of them too, not only
    /// of the pages routing will choose: a router may miss the page that holds the words), and
    /// the question's relevance to them, cross-lingual when the question is in another script
    /// than those pages' titles and leads and the best [`SCRIPT_PASSAGES`] source passages
    /// found ([`cross_script`]).
    ///
    /// Errors: storage errors reading the search index and those passages' source texts.
    pub(super) async fn search_first(
        &self,
        question: &str,
        options: &AskOptions,
        table: &PageTable,
    ) -> Result<Found> {
        let rank_query = super::search_text(question, &options.history);
        let passages = self.source_candidates(&rank_query, options).await?;
        let index = self.search_index_shared().await?;
        let pages: Vec<String> = index
            .search(
                &passages::content_query(&rank_query),
                &crate::search::SearchOptions {
                    k: RELEVANCE_PAGES,
                    mode: crate::search::SearchMode::Bm25,
                    explain: false,
                    ..Default::default()
                },
            )
            .hits
            .into_iter()
            .map(|h| h.key)
            .collect();
        let units: Vec<(HitKind, String)> = pages
            .iter()
            .map(|k| (HitKind::Page, k.clone()))
            .chain(passages.iter().map(|k| (HitKind::Passage, k.clone())))
            .collect();
        let mut relevance = relevance(&index, &rank_query, &units);
        // The pages found, by their titles and leads, and the best source passages found stand
        // for the text the question would be answered from (a term may be in a source only).
        let mut nearest: Vec<String> = pages
            .iter()
            .filter_map(|k| table.get(k))
            .map(|r| format!("{} {}", r.title, r.summary))
            .collect();
        let best = &passages[..passages.len().min(SCRIPT_PASSAGES)];
        let texts = self.passage_texts(&index, best).await?;
        drop(index);
        nearest.extend(texts.iter().map(|p| p.text.clone()));
        relevance.cross_lingual = cross_script(question, nearest.iter().map(String::as_str));
        Ok(Found {
            texts,
            rank_query,
            passages,
            pages,
            relevance,
        })
    }

    /// The source passages on offer for `query`: the best [`SOURCE_CANDIDATES`] of all sources
    /// (hybrid search with the question's embedding, as routing searches; with an endpoint
    /// model's embedding, a passage the vectors alone find too, and the vectors' best ones:
    /// [`with_vector_best`]). Keys, best first.
    async fn source_candidates(&self, query: &str, options: &AskOptions) -> Result<Vec<String>> {
        let index = self.search_index_shared().await?;
        if index.passage_count() == 0 {
            return Ok(Vec::new());
        }
        let query_vector = &options.query_vector;
        let semantic = semantic(query_vector.as_ref());
        let text = passages::content_query(query);
        let mut keys: Vec<String> = index
            .search_passages(&text, &passage_options(SOURCE_CANDIDATES, query_vector))
            .hits
            .into_iter()
            .filter(|h| semantic || h.explain.bm25_rank.is_some())
            .map(|h| h.key)
            .collect();
        if semantic {
            let vector = crate::search::SearchOptions {
                mode: crate::search::SearchMode::Vector,
                ..passage_options(VECTOR_BEST, query_vector)
            };
            let r = index.search_passages(&text, &vector);
            if r.mode == crate::search::SearchMode::Vector {
                let best: Vec<String> = r.hits.into_iter().map(|h| h.key).collect();
                keys = with_vector_best(keys, &best);
            }
        }
        Ok(keys)
    }

    /// Up to [`DRILL_DOWN`] passages of the `drill` sources (those of the routed pages) that
    /// match `query` best and are not among `taken`: the drill-down from a summary page to its
    /// evidence. Keys, best first.
    async fn drill_down(
        &self,
        query: &str,
        options: &AskOptions,
        drill: &[String],
        taken: &[String],
    ) -> Result<Vec<String>> {
        let index = self.search_index_shared().await?;
        if drill.is_empty() || index.passage_count() == 0 {
            return Ok(Vec::new());
        }
        let query_vector = &options.query_vector;
        let semantic = semantic(query_vector.as_ref());
        Ok(index
            .search_passages(
                &passages::content_query(query),
                &passage_options(200, query_vector),
            )
            .hits
            .into_iter()
            .filter(|h| semantic || h.explain.bm25_rank.is_some())
            .filter(|h| h.source.as_ref().is_some_and(|s| drill.contains(s)))
            .map(|h| h.key)
            .filter(|k| !taken.contains(k))
            .take(DRILL_DOWN)
            .collect())
    }

    /// The candidate passages as units of the answer's ranking ([`passages::Role::Source`]:
    /// titled with their source's title, their heading path as their section), each with where
    /// it is; in candidate order. The texts in `read` (of some candidates, read before) are not
    /// read again. A passage whose source text cannot be read is left out.
    async fn source_units(
        &self,
        candidates: &[String],
        read: Vec<PassageText>,
    ) -> Result<Vec<(passages::PageText, GivenPassage)>> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let mut by_key: BTreeMap<String, PassageText> =
            read.into_iter().map(|t| (t.key.clone(), t)).collect();
        let unread: Vec<String> = candidates
            .iter()
            .filter(|k| !by_key.contains_key(*k))
            .cloned()
            .collect();
        let index = self.search_index_shared().await?;
        by_key.extend(
            self.passage_texts(&index, &unread)
                .await?
                .into_iter()
                .map(|t| (t.key.clone(), t)),
        );
        drop(index);
        let texts = candidates.iter().filter_map(|k| by_key.remove(k));
        let mut titles: BTreeMap<String, (String, Option<String>)> = BTreeMap::new();
        let mut out = Vec::new();
        for p in texts {
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
            let unit = passages::PageText {
                key: p.key.clone(),
                title: source_title.clone(),
                aliases: vec![],
                lead: String::new(),
                passages: vec![passages::Passage {
                    section: p.meta.heading.clone(),
                    text: p.text,
                    order: 0,
                }],
                role: passages::Role::Source,
            };
            out.push((
                unit,
                GivenPassage {
                    key: p.key,
                    source: p.meta.source,
                    version: p.meta.version,
                    source_title,
                    heading: p.meta.heading,
                    lines: p.meta.lines,
                    summary_page,
                },
            ));
        }
        Ok(out)
    }
}

/// What search finds for a question before routing ([`Wiki::search_first`]).
pub(super) struct Found {
    /// The text passages are ranked with: the question, after the one before it when there is
    /// one.
    pub(super) rank_query: String,
    /// The source passages on offer ([`Wiki::source_candidates`]), best first.
    pub(super) passages: Vec<String>,
    /// The [`RELEVANCE_PAGES`] pages BM25 ranks best, best first.
    pub(super) pages: Vec<String>,
    /// The question's relevance to those pages and passages.
    pub(super) relevance: Relevance,
    /// The texts of the best [`SCRIPT_PASSAGES`] passages, read for the script check and
    /// given to the answer's ranking as they are.
    pub(super) texts: Vec<PassageText>,
}

/// Hybrid search options for the `k` best passages.
fn passage_options(
    k: usize,
    query_vector: &Option<crate::search::QueryVector>,
) -> crate::search::SearchOptions {
    crate::search::SearchOptions {
        k,
        depth: k.max(50),
        explain: false,
        query_vector: query_vector.clone(),
        ..Default::default()
    }
}

/// `s` with whitespace folded to single spaces (for the already-quoted check).
fn fold(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
