//! Offline compile: the compile pipeline with extractive methods instead of an LLM (provider
//! `offline`), so a wiki builds from real notes with no endpoint at all.
//!
//! - Summary: the source's most central sentences by TextRank ([`textrank`]; Mihalcea & Tarau 2004),
//!   in document order.
//! - Key claims: verbatim sentences (so every quote verifies): the most central ones, and for each
//!   term the most central sentences that mention it.
//! - Entities and concepts: the corpus terms of [`terms`] (headings, recurring capitalised
//!   multi-word terms, recurring CJK terms) that the source uses.
//! - Pages: the sentences about a term from every source, with citations, and links to the pages
//!   whose terms they co-mention. No text is invented.
//!
//! *Invariant:* every word the offline compiler writes into a page comes from a source or is a
//! fixed heading (`## Facts`, `## Related`).

use std::collections::BTreeSet;

use super::extract::{
    CandidateContradiction, ExtractInput, ExtractedClaim, ExtractedEntity, Extraction, Relation,
};
use super::integrate::{IntegrateInput, PageDraft};
use super::model::CompileModel;
use super::prompt::escape_block;
use super::provenance::{differ_only_in_numbers, stance_of};
use crate::error::Result;
use crate::extractive::sentences::sentences;
use crate::extractive::terms::{self, corpus_terms, Doc, Term, Tokenized};
use crate::extractive::textrank;
use crate::extractive::OFFLINE;
use crate::llm::Cancel;
use crate::markdown::blocks::{text_blocks, TextBlock};
use crate::model::{PageKind, TokenUsage};

/// Most terms one source contributes.
const MAX_TERMS: usize = 15;
/// Sentences kept per term per source.
const SENTENCES_PER_TERM: usize = 3;

/// The extractive compile model.
#[derive(Debug, Clone)]
pub struct OfflineCompiler {
    terms: Vec<Term>,
}

impl OfflineCompiler {
    /// Builds the corpus terms from the texts of every source of the wiki.
    pub fn new(source_texts: &[String]) -> Self {
        let parsed: Vec<Vec<TextBlock>> = source_texts.iter().map(|t| text_blocks(t)).collect();
        let docs: Vec<Doc<'_>> = parsed.iter().map(|b| Doc { blocks: b }).collect();
        OfflineCompiler {
            terms: corpus_terms(&docs),
        }
    }

    /// The compiler for a corpus whose terms are `terms` ([`terms::CorpusCache::terms`]).
    pub fn from_terms(terms: Vec<Term>) -> Self {
        OfflineCompiler { terms }
    }

    /// The corpus terms.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    fn extract_sync(&self, input: &ExtractInput) -> Extraction {
        let blocks = text_blocks(&input.text);
        let headings: Vec<&str> = blocks
            .iter()
            .filter_map(|b| match b {
                TextBlock::Heading(_, t) => Some(t.as_str()),
                TextBlock::Text(_) => None,
            })
            .collect();
        let sents: Vec<String> = blocks
            .iter()
            .filter_map(|b| match b {
                TextBlock::Text(t) => Some(sentences(t)),
                TextBlock::Heading(..) => None,
            })
            .flatten()
            .collect();
        let body = sents.join("\n");
        let body_tokens = Tokenized::new(&body);
        let sent_tokens: Vec<Tokenized<'_>> = sents.iter().map(|s| Tokenized::new(s)).collect();
        let heading_tokens: Vec<Tokenized<'_>> =
            headings.iter().map(|h| Tokenized::new(h)).collect();
        let scores = textrank::rank(&sents);
        let mut by_rank: Vec<usize> = (0..sents.len()).collect();
        crate::util::sort_by(&mut by_rank, &|&a, &b| {
            scores[b].total_cmp(&scores[a]).then(a.cmp(&b))
        });

        // Terms this source uses.
        let mut used: Vec<(&Term, usize)> = self
            .terms
            .iter()
            .filter_map(|t| {
                let in_headings = heading_tokens
                    .iter()
                    .filter(|h| t.count_in_tokens(h) > 0)
                    .count();
                let in_body = t.count_in_tokens(&body_tokens);
                // A term with no sentence here would make an empty page.
                (in_body >= 1 && (in_headings > 0 || in_body >= 2))
                    .then_some((t, 3 * in_headings + in_body))
            })
            .collect();
        crate::util::sort_by(&mut used, &|a, b| {
            b.1.cmp(&a.1).then_with(|| a.0.title.cmp(&b.0.title))
        });
        used.truncate(MAX_TERMS);
        let used: Vec<&Term> = used.into_iter().map(|(t, _)| t).collect();

        // Claims: the most central sentences overall and per term.
        let mut chosen: BTreeSet<usize> =
            crate::util::btree_set(by_rank.iter().take((sents.len() / 10).clamp(3, 8)).copied());
        for t in &used {
            chosen.extend(
                by_rank
                    .iter()
                    .filter(|&&i| t.count_in_tokens(&sent_tokens[i]) > 0)
                    .take(SENTENCES_PER_TERM),
            );
        }
        let about = |i: usize| -> Vec<String> {
            used.iter()
                .filter(|t| t.count_in_tokens(&sent_tokens[i]) > 0)
                .map(|t| t.title.clone())
                .collect()
        };
        let claims: Vec<ExtractedClaim> = chosen
            .iter()
            .map(|&i| ExtractedClaim {
                text: sents[i].clone(),
                quote: sents[i].clone(),
                about: about(i),
                stance: stance_of(&sents[i]),
            })
            .collect();

        let mut relations: Vec<Relation> = Vec::new();
        for c in &claims {
            for (i, a) in c.about.iter().enumerate() {
                for b in &c.about[i + 1..] {
                    if !relations.iter().any(|r| r.from == *a && r.to == *b) {
                        relations.push(Relation {
                            from: a.clone(),
                            to: b.clone(),
                            label: "co-mentioned".into(),
                        });
                    }
                }
            }
        }

        // Contradictions: an existing claim that differs from a sentence only in its numbers.
        let mut contradictions = Vec::new();
        for line in input.existing_claims.lines() {
            let Some(rest) = line.trim().strip_prefix("- [") else {
                continue;
            };
            let Some((id, rest)) = rest.split_once("] ") else {
                continue;
            };
            let old = rest.rsplit_once(" (page: ").map_or(rest, |(t, _)| t);
            // Only a sentence the source asserts can disagree (a reported or withdrawn figure
            // is no contradiction: the app would turn it away).
            for c in claims.iter().filter(|c| c.stance.is_asserted()) {
                if differ_only_in_numbers(old, &c.quote) {
                    contradictions.push(CandidateContradiction {
                        existing_claim: id.to_string(),
                        quote: c.quote.clone(),
                        explanation: format!("“{}” / “{}”", old, c.quote),
                    });
                }
            }
        }

        let top: Vec<usize> = textrank::top_sentences(&sents, 3);
        let summary = top
            .iter()
            .map(|&i| sents[i].as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let one_line = by_rank
            .first()
            .map(|&i| truncate(&sents[i], 160))
            .unwrap_or_default();
        Extraction {
            summary,
            one_line,
            claims,
            entities: used
                .iter()
                .map(|t| ExtractedEntity {
                    name: t.title.clone(),
                    kind: if t.kind == PageKind::Entity {
                        "entity"
                    } else {
                        "concept"
                    }
                    .into(),
                    aliases: t.forms.iter().filter(|f| **f != t.title).cloned().collect(),
                    description: String::new(),
                })
                .collect(),
            relations,
            contradictions,
        }
    }

    fn integrate_sync(&self, input: &IntegrateInput) -> PageDraft {
        let mut body = remove_section(&input.current_body, "## Related");
        if body.trim().is_empty() && !input.brief.trim().is_empty() {
            body = input.brief.trim().to_string();
        }
        // Related pages: link targets whose names the page's facts mention.
        let mut facts_text: String = input
            .facts
            .iter()
            .map(|f| f.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        facts_text.push('\n');
        facts_text.push_str(&body);
        let facts_tokens = Tokenized::new(&facts_text);
        let mut related: Vec<(String, String)> = input
            .link_targets
            .iter()
            .filter(|(k, t)| *k != input.key && mentions(&facts_tokens, t))
            .cloned()
            .collect();
        crate::util::sort_by_key(&mut related, |r| r.1.to_lowercase());
        related.dedup();
        if !related.is_empty() {
            body.push_str("\n\n## Related\n\n");
            for (k, t) in &related {
                body.push_str(&format!(
                    "- {}\n",
                    crate::markdown::wikilinks::link_to(k, t)
                ));
            }
        }
        // One line for the index: among every fact on the page (new ones and the `## Facts` list
        // already there), the shortest that names the page in its first five words (a
        // definition-like sentence), else the shortest.
        let mut candidates: Vec<String> = input.facts.iter().map(|f| f.text.clone()).collect();
        candidates.extend(
            input
                .current_body
                .lines()
                .filter_map(|l| l.strip_prefix("- "))
                .filter(|l| l.contains("[^"))
                .map(crate::markdown::plain::strip_refs),
        );
        crate::util::sort_by(&mut candidates, &|a, b| {
            a.len().cmp(&b.len()).then_with(|| a.cmp(b))
        });
        let early = |text: &&String| {
            let head: String = text
                .split_whitespace()
                .take(5)
                .collect::<Vec<_>>()
                .join(" ");
            mentions(&Tokenized::new(&head), &input.title)
        };
        let pick = candidates.iter().find(early).or(candidates.first());
        let summary = match input.kind {
            PageKind::Source => String::new(),
            _ => pick.map(|t| truncate(t, 160)).unwrap_or_default(),
        };
        PageDraft {
            body: body.trim().to_string(),
            summary,
        }
    }
}

fn mentions(text: &Tokenized<'_>, title: &str) -> bool {
    let t = Term {
        title: title.into(),
        kind: PageKind::Concept,
        norm: if title.chars().any(crate::text::is_cjk) {
            title.into()
        } else {
            terms::norm_words(title).join(" ")
        },
        forms: vec![],
    };
    !t.norm.is_empty() && t.count_in_tokens(text) > 0
}

/// Removes a `## ` section (its heading line up to the next `## ` heading or the end).
fn remove_section(body: &str, heading: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut skipping = false;
    for line in body.lines() {
        if line.trim() == heading {
            skipping = true;
            continue;
        }
        if skipping && line.starts_with("## ") {
            skipping = false;
        }
        if !skipping {
            out.push(line);
        }
    }
    out.join("\n").trim().to_string()
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max - 1).collect();
    format!("{}…", cut.trim_end())
}

impl CompileModel for OfflineCompiler {
    async fn extract(
        &self,
        input: &ExtractInput,
        cancel: &Cancel,
    ) -> Result<(Extraction, TokenUsage)> {
        if cancel.is_cancelled() {
            return Err(crate::Error::Cancelled);
        }
        let _ = escape_block; // source text is never interpreted, only split into sentences
        Ok((self.extract_sync(input), TokenUsage::default()))
    }

    async fn integrate(
        &self,
        input: &IntegrateInput,
        cancel: &Cancel,
    ) -> Result<(PageDraft, TokenUsage)> {
        if cancel.is_cancelled() {
            return Err(crate::Error::Cancelled);
        }
        Ok((self.integrate_sync(input), TokenUsage::default()))
    }

    fn name(&self) -> String {
        OFFLINE.to_string()
    }

    fn bounded_replies(&self) -> bool {
        false
    }

    fn is_extractive(&self) -> bool {
        true
    }
}
