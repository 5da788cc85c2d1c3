//! Routing, step 1 of [`Wiki::ask`]: index.md read whole when it fits the routing budget, else
//! a hybrid-search shortlist of its lines (F31a; with an endpoint embedding, plus the pages the
//! vectors alone rank best); the model picks among them; search alone when it picks nothing,
//! when it is extractive, or when search already found one place that holds the whole question
//! ([`Router::Auto`](super::Router::Auto), [`ROUTE_HELD`]); then one hop along the chosen
//! pages' links.
//! *Invariant:* every routed or hopped key names a page of the table.

use std::collections::BTreeMap;

use crate::clock::Clock;
use crate::documents::index_line_with_summary;
use crate::error::Result;
use crate::llm::Cancel;
use crate::markdown::resolve::Resolution;
use crate::model::{Page, TokenUsage};
use crate::page_table::PageTable;
use crate::search::{QueryVector, SearchMode, SearchOptions};
use crate::storage::Storage;
use crate::text::TokenEstimator;
use crate::wiki::Wiki;

use super::{AskBudget, AskOptions, QueryModel, RouteMethod};

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

/// What routing chose.
pub(super) struct Routed {
    /// Page keys, at most [`AskOptions::max_pages`] (clamped to 1–20), in the router's order.
    pub(super) pages: Vec<String>,
    /// How they were chosen.
    pub(super) method: RouteMethod,
    /// Token usage of the routing call (zero when search routed alone).
    pub(super) usage: TokenUsage,
}

/// The share of a question ([`Relevance::held`](super::relevance::Relevance::held): its
/// IDF-weighted content words) that one page or source passage search found before routing must
/// hold for search to route alone under [`Router::Auto`](super::Router::Auto): every content
/// word of the question in one place, so a routing call could add only a page worded otherwise
/// than the question.
pub const ROUTE_HELD: f32 = 1.0;

/// Units (pages or passages) the vectors alone rank best that a fused list gains, when the
/// question's embedding is an endpoint model's ([`semantic`]). RRF ranks a unit found by one list
/// below every unit found by both (Cormack, Clarke and Büttcher, SIGIR 2009), so a unit BM25 cannot
/// find (an English question over a Chinese source, a synonym) is never in a short fused list
/// however well the vectors rank it.
pub(super) const VECTOR_BEST: usize = 3;

/// Fused hits the vector-best units are placed after (so that a budget cut keeps them).
const VECTOR_BEST_AFTER: usize = 5;

/// Whether `v` is an endpoint model's embedding, which can match meaning across wordings and
/// languages; the offline hashed n-grams match words, as BM25 does better.
pub(super) fn semantic(v: Option<&QueryVector>) -> bool {
    v.is_some_and(|v| v.model != crate::llm::offline::OFFLINE_MODEL)
}

/// `fused` with the keys of `best` (the vector list's best, best first) it lacks, up to
/// [`VECTOR_BEST`], placed after its first [`VECTOR_BEST_AFTER`] keys.
pub(super) fn with_vector_best(mut fused: Vec<String>, best: &[String]) -> Vec<String> {
    let extra: Vec<String> = best
        .iter()
        .filter(|k| !fused.contains(k))
        .take(VECTOR_BEST)
        .cloned()
        .collect();
    let at = fused.len().min(VECTOR_BEST_AFTER);
    fused.splice(at..at, extra);
    fused
}

/// Hybrid search options for the `k` best pages.
fn hybrid(k: usize, query_vector: Option<QueryVector>) -> SearchOptions {
    SearchOptions {
        k,
        mode: SearchMode::Hybrid,
        query_vector,
        ..Default::default()
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Routes `question` over `table` (see the module docs): the model's picks resolved to pages,
    /// or the hybrid search's best pages when there are none.
    ///
    /// Errors: the model's routing call, [`Error::Cancelled`](crate::error::Error::Cancelled),
    /// storage and search errors.
    pub(super) async fn route_question<M: QueryModel>(
        &self,
        model: &M,
        question: &str,
        options: &AskOptions,
        budget: AskBudget,
        table: &PageTable,
        cancel: &Cancel,
    ) -> Result<Routed> {
        if model.extractive() || table.is_empty() {
            return self.route_by_search(question, options).await;
        }
        let est = budget.estimator;
        let resolver = table.resolver();
        let max_pages = options.max_pages.clamp(1, 20);
        let index_md = self.index().await?;
        let routing_budget =
            (budget.context_window as f64 * options.routing_share.clamp(0.05, 0.8)) as u64;
        let (index_text, method) = if est.estimate(&index_md) <= routing_budget {
            (index_md, RouteMethod::Index)
        } else {
            let o = hybrid(
                options.shortlist.clamp(5, 200),
                options.query_vector.clone(),
            );
            let lines = self
                .shortlist_lines(question, &o, table, routing_budget, est)
                .await?;
            (lines, RouteMethod::Shortlist)
        };
        let (picked, usage) = model
            .route(question, &options.history, &index_text, max_pages, cancel)
            .await?;
        let mut routed: Vec<String> = Vec::new();
        for name in picked.iter().flatten() {
            if let Resolution::Page(k) = resolver.resolve(name) {
                if !routed.contains(&k) && routed.len() < max_pages {
                    routed.push(k);
                }
            }
        }
        if routed.is_empty() {
            let mut by_search = self.route_by_search(question, options).await?;
            by_search.usage = usage;
            return Ok(by_search);
        }
        Ok(Routed {
            pages: routed,
            method,
            usage,
        })
    }

    /// Routes `question` by hybrid search alone: its best [`AskOptions::max_pages`] pages.
    ///
    /// Errors: storage and search errors.
    pub(super) async fn route_by_search(
        &self,
        question: &str,
        options: &AskOptions,
    ) -> Result<Routed> {
        let o = hybrid(options.max_pages.clamp(1, 20), options.query_vector.clone());
        let pages = self
            .search(question, &o)
            .await?
            .hits
            .into_iter()
            .map(|h| h.key)
            .collect();
        Ok(Routed {
            pages,
            method: RouteMethod::Search,
            usage: TokenUsage::default(),
        })
    }

    /// The index lines ([`routing_line`]) of the search hits for `question`, in rank order (with
    /// an endpoint embedding, the vectors' best pages among them: [`with_vector_best`]), as many
    /// as fit `routing_budget` estimated tokens.
    async fn shortlist_lines(
        &self,
        question: &str,
        search: &SearchOptions,
        table: &PageTable,
        routing_budget: u64,
        est: TokenEstimator,
    ) -> Result<String> {
        let mut keys: Vec<String> = self
            .search(question, search)
            .await?
            .hits
            .into_iter()
            .map(|h| h.key)
            .collect();
        if semantic(search.query_vector.as_ref()) {
            let vector = SearchOptions {
                k: VECTOR_BEST,
                mode: SearchMode::Vector,
                ..search.clone()
            };
            let r = self.search(question, &vector).await?;
            if r.mode == SearchMode::Vector {
                let best: Vec<String> = r.hits.into_iter().map(|h| h.key).collect();
                keys = with_vector_best(keys, &best);
            }
        }
        let mut lines = String::new();
        for k in keys {
            if let Some(row) = table.get(&k) {
                let line = routing_line(&row.page_without_body());
                if est.estimate(&lines) + est.estimate(&line) > routing_budget {
                    break;
                }
                lines.push_str(&line);
            }
        }
        Ok(lines)
    }
}

/// One hop along links from the `routed` pages: the pages they link to that are neither routed
/// nor hubs (more backlinks than a tenth of the wiki, at least 10), most votes first, then by
/// key; at most `hop_pages` (capped at 10).
pub(super) fn hop(table: &PageTable, routed: &[String], hop_pages: usize) -> Vec<String> {
    let graph = table.link_graph();
    let hub = (table.len() / 10).max(10);
    let mut votes: BTreeMap<String, usize> = BTreeMap::new();
    for k in routed {
        for target in graph.outgoing.get(k).into_iter().flatten() {
            let is_hub = graph.backlinks.get(target).is_some_and(|b| b.len() > hub);
            if !routed.contains(target) && !is_hub {
                *votes.entry(target.clone()).or_default() += 1;
            }
        }
    }
    let mut hop: Vec<(String, usize)> = votes.into_iter().collect();
    crate::util::sort_by(&mut hop, &|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    hop.into_iter()
        .take(hop_pages.min(10))
        .map(|(k, _)| k)
        .collect()
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
