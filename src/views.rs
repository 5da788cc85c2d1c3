//! What an app shows beside the pages, computed by the core so no app re-implements wiki
//! semantics: markdown (a question's answer) rendered the way a page body is, the ledger's open
//! contradiction records of given pages (Decision 4), and *recall* — the pages that already say
//! something about a text the user is reading (the clipper's "your wiki on this page").
//!
//! *Invariant:* nothing here writes, and nothing here parses a rendered page back: answers go
//! through [`crate::markdown::render`] with the page table's resolver, contradictions are read
//! from the ledger (never from the `> [!contradiction]` callouts it is rendered into), and recall
//! ranks with the wiki's BM25 index and judges its terms with the extractive code's topic-token
//! rule ([`crate::extractive::textrank::tokens`], whose one stop list is [`crate::extractive::stopwords::STOPWORDS`]).

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::Result;
use crate::markdown::render::Ambiguity;
use crate::model::{Claim, Contradiction, ContradictionStatus, PageKind, PageRef};
use crate::page_table::PAGE_RECORDS_PREFIX;
use crate::search::{SearchMode, SearchOptions};
use crate::storage::{Storage, Store};
use crate::wiki::Wiki;

/// Markdown rendered like a page body (JS: `renderMarkdown`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct MarkdownView {
    /// Safe HTML, as `pageView().html` is: assign it to `innerHTML`.
    pub html: String,
    /// SHA-256 of every attachment shown (`<img data-asset>`), in order, without repeats.
    pub assets: Vec<String>,
    /// Link targets that resolve to no page or attachment.
    pub missing: Vec<String>,
    /// Ambiguous link targets.
    pub ambiguous: Vec<Ambiguity>,
    /// Malformed wikilinks, as written.
    pub malformed: Vec<String>,
}

/// One side of an open contradiction: a claim and the page stating it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct ContradictionSide {
    /// The claim id (its footnote label).
    pub claim: String,
    /// The page stating it.
    pub page: String,
    /// That page's title (its key when the page is gone).
    pub title: String,
    /// The statement, on one line.
    pub text: String,
}

/// An open record of the contradiction ledger (JS: `openContradictions`, `recall`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct OpenContradiction {
    /// Record id, e.g. `x3`.
    pub id: String,
    /// What disagrees, on one line.
    pub description: String,
    /// The record's pages that exist, in the record's order.
    pub pages: Vec<PageRef>,
    /// One entry per conflicting claim still stored, in the record's order.
    pub sides: Vec<ContradictionSide>,
}

/// Options of [`Wiki::recall`]; every field optional.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct RecallOptions {
    /// How many pages at most. Default 6.
    pub k: usize,
    /// A page must score at least this share of the best hit's BM25 score, 0–1. Default 0.3 (0
    /// keeps every page with enough terms; 1 only the best).
    pub min_share: f32,
    /// A page must match at least this many distinct topic terms of the query. Default 3 (0 or
    /// 1 lets a page in on one shared word).
    pub min_terms: usize,
    /// Characters of the text's body that go into the query (after the title). Default 600.
    pub chars: usize,
}

impl Default for RecallOptions {
    fn default() -> Self {
        RecallOptions {
            k: 6,
            min_share: 0.3,
            min_terms: 3,
            chars: 600,
        }
    }
}

/// A page recall found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct RecalledPage {
    /// Page key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Kind.
    pub kind: PageKind,
    /// One-line summary.
    pub summary: String,
    /// BM25 score.
    pub score: f32,
}

/// What the wiki already says about a text (JS: `recall`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Recall {
    /// The search query made from the text: its title and the start of its plain body.
    pub query: String,
    /// The pages about it, best first.
    pub pages: Vec<RecalledPage>,
    /// The open contradiction records of those pages.
    pub contradictions: Vec<OpenContradiction>,
}

/// The query recall searches with: `title`, then the first `chars` characters of the plain text
/// of `markdown` (its blocks' text, as the extractive compiler reads it: no code, tables, images,
/// link targets or footnote definitions), without a leading `# ` title line.
pub fn recall_query(title: &str, markdown: &str, chars: usize) -> String {
    let body = if markdown.starts_with("# ") {
        markdown.split_once('\n').map_or("", |(_, rest)| rest)
    } else {
        markdown
    };
    let text: Vec<String> = crate::markdown::blocks::text_blocks(body)
        .into_iter()
        .map(|b| match b {
            crate::markdown::blocks::TextBlock::Heading(_, t)
            | crate::markdown::blocks::TextBlock::Text(t) => t,
        })
        .collect();
    let start: String = text.join(" ").chars().take(chars).collect();
    format!("{title} {start}").trim().to_string()
}

/// True when a search term says what a text is about: the extractive code keeps it as a topic
/// token (not a stop word, not a single character or CJK unigram, not only digits).
pub fn is_topic_term(term: &str) -> bool {
    crate::extractive::textrank::tokens(term).contains(term)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Renders `markdown` (an answer, a note) as a page body renders: the same sanitising, and
    /// its wikilinks resolved against the wiki's pages and attachments (missing ones marked).
    pub async fn render_markdown(&self, markdown: &str) -> Result<MarkdownView> {
        let table = self.page_table().await?;
        let (out, _) = self.render_with_assets(&table, markdown, None).await?;
        Ok(MarkdownView {
            html: out.html,
            assets: out.assets,
            missing: out.missing,
            ambiguous: out.ambiguous,
            malformed: out.malformed,
        })
    }

    /// The open records of the contradiction ledger that involve any of `keys` (exact page
    /// keys), each once: in the order of `keys`, then by record id.
    pub async fn open_contradictions(&self, keys: &[String]) -> Result<Vec<OpenContradiction>> {
        let table = self.page_table().await?;
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for key in keys {
            let ids = crate::page_table::list(&self.storage, PAGE_RECORDS_PREFIX, key).await?;
            for id in ids {
                if !seen.insert(id.clone()) {
                    continue;
                }
                let Some((r, _)) = self.read::<Contradiction>(Store::Ledger, &id).await? else {
                    continue;
                };
                if r.status != ContradictionStatus::Open {
                    continue;
                }
                let mut sides = Vec::new();
                for claim in &r.claims {
                    if let Some((c, _)) = self.read::<Claim>(Store::Claims, claim).await? {
                        let title = table
                            .get(&c.page)
                            .map_or(c.page.clone(), |p| p.title.clone());
                        sides.push(ContradictionSide {
                            claim: c.id,
                            page: c.page,
                            title,
                            text: one_line(&c.text),
                        });
                    }
                }
                let pages = r
                    .pages
                    .iter()
                    .filter_map(|k| table.get(k))
                    .map(|p| PageRef {
                        key: p.key.clone(),
                        title: p.title.clone(),
                        kind: p.kind,
                    })
                    .collect();
                out.push(OpenContradiction {
                    id: r.id,
                    description: one_line(&r.description),
                    pages,
                    sides,
                });
            }
        }
        Ok(out)
    }

    /// What the wiki already says about a text the user reads (a page to clip): the pages that
    /// match its title and the start of its body ([`recall_query`]) by BM25, with their one-line
    /// summaries, and the open contradictions on them.
    ///
    /// A page counts when it matches at least `min_terms` distinct topic terms of the query
    /// ([`is_topic_term`]) that — in a wiki of four pages or more — are not in every page, and
    /// scores at least `min_share` of the best hit: a page that shares only common words with
    /// the text is left out.
    pub async fn recall(
        &self,
        title: &str,
        markdown: &str,
        options: &RecallOptions,
    ) -> Result<Recall> {
        let query = recall_query(title, markdown, options.chars);
        let results = self
            .search(
                &query,
                &SearchOptions {
                    k: options.k * 2,
                    mode: SearchMode::Bm25,
                    explain: true,
                    ..SearchOptions::default()
                },
            )
            .await?;
        let table = self.page_table().await?;
        let best = results.hits.first().map_or(0.0, |h| h.score);
        let pages: Vec<RecalledPage> = results
            .hits
            .iter()
            .filter(|h| {
                let bm25 = h.explain.bm25.as_ref();
                let n = bm25.map_or(table.len() as u32, |b| b.doc_count);
                let informative = bm25.map_or(0, |b| {
                    b.terms
                        .iter()
                        .filter(|t| {
                            t.contribution > 0.0
                                && is_topic_term(&t.term)
                                && (n < 4 || t.doc_freq < n)
                        })
                        .count()
                });
                table.contains(&h.key)
                    && informative >= options.min_terms
                    && h.score >= options.min_share * best
            })
            .take(options.k)
            .filter_map(|h| {
                table.get(&h.key).map(|p| RecalledPage {
                    key: p.key.clone(),
                    title: p.title.clone(),
                    kind: p.kind,
                    summary: p.summary.clone(),
                    score: h.score,
                })
            })
            .collect();
        let keys: Vec<String> = pages.iter().map(|p| p.key.clone()).collect();
        let contradictions = self.open_contradictions(&keys).await?;
        Ok(Recall {
            query,
            pages,
            contradictions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_query_is_the_title_and_the_start_of_the_plain_body() {
        let md = "# Backpressure\n\nA *slow* consumer [tells](https://example.com/x) the producer.\n\n```\ncode here\n```\n\n| a | b |\n|---|---|\n| cell | x |\n\n![alt text](img.png)\n\n## Buffers\n\nThey hold 16 chunks.[^1]\n\n[^1]: A footnote.\n";
        assert_eq!(
            recall_query("Backpressure", md, 600),
            "Backpressure A slow consumer tells the producer. Buffers They hold 16 chunks."
        );
        assert_eq!(recall_query("T", md, 6), "T A slow");
        assert_eq!(recall_query("", "plain words", 600), "plain words");
    }

    #[test]
    fn topic_terms_follow_the_extractive_rule() {
        for t in ["rust", "backpressure", "发酵", "的了"] {
            assert!(is_topic_term(t), "{t}");
        }
        for t in ["the", "with", "is", "x", "的", "2016", "rust's"] {
            assert!(!is_topic_term(t), "{t}");
        }
    }
}
