//! [`OfflineQuery`], the extractive query model (no endpoint): search routes alone, and the
//! answer is the sentences of the given pages and source passages that best match the question,
//! each cited (`[[page]]`, or `[^s1]` for a source passage). *Invariant:* every line of its
//! answer is text of a page or passage it was given.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::llm::{Cancel, OnToken};
use crate::model::TokenUsage;

use super::{passages, Given, QueryModel, Turn};

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
        pages: &[Given],
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<(String, TokenUsage)> {
        cancel.check()?;
        // The sentences of the passages given, ranked by the same BM25F as the passages
        // themselves ([`passages::rank`]: function words dropped, rare terms weigh more).
        let mut candidates: Vec<(usize, usize, String)> = Vec::new(); // (page, sentence, text)
        for (pi, Given { text, .. }) in pages.iter().enumerate() {
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
        let sentence_scores = passages::rank(question, &units);
        // A sentence is weighed with the text it stands in: the same words in the passage that
        // matches the question best outrank them in a passage about something else (sentence
        // retrieval with its document's score as evidence: Murdock & Croft, "A translation
        // model for sentence retrieval", HLT/EMNLP 2005). Both scores are scaled to their
        // maximum and added.
        let whole: Vec<passages::Unit<'_>> = pages
            .iter()
            .map(|g| passages::Unit {
                context: &g.title,
                aliases: &[],
                text: &g.text,
            })
            .collect();
        let unit_scores = passages::rank(question, &whole);
        let top = |v: &[f32]| v.iter().copied().fold(0.0f32, f32::max);
        let (top_sentence, top_unit) = (top(&sentence_scores), top(&unit_scores));
        let scores: Vec<f32> = candidates
            .iter()
            .zip(&sentence_scores)
            .map(|((pi, _, s), &score)| {
                if score <= 0.0 || only_links(s) {
                    0.0
                } else {
                    score / top_sentence + unit_scores[*pi] / top_unit.max(f32::MIN_POSITIVE)
                }
            })
            .collect();
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
            let cite = match pages[*pi].passage {
                Some(_) => format!("[^{}]", pages[*pi].key),
                None => format!("[[{}]]", pages[*pi].key),
            };
            if e.3.len() < 2 && !e.3.contains(&cite) {
                e.3.push(cite);
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
            .map(|(s, (_, _, _, keys))| format!("- {s} {}", keys.join(" ")))
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

/// Whether `sentence` says nothing but links: a list of `[[wikilinks]]` (a page's "related"
/// line) is navigation, not a statement that answers.
fn only_links(sentence: &str) -> bool {
    let mut rest = String::with_capacity(sentence.len());
    let mut at = 0;
    for item in crate::markdown::wikilinks::scan(sentence) {
        if let crate::markdown::wikilinks::Item::Link(l) = item {
            rest.push_str(&sentence[at..l.range.start]);
            at = l.range.end;
        }
    }
    rest.push_str(&sentence[at..]);
    !rest.chars().any(char::is_alphanumeric)
}

/// A candidate passage of an extractive answer: score, page order, sentence order, citations.
type Passage = (f64, usize, usize, Vec<String>);
