//! Passages: the parts of the chosen pages an answer is given, instead of whole pages.
//!
//! A page body is cut into *passages* along its markdown structure ([`split`]) by the one passage
//! cutter ([`crate::markdown::passages`], which also cuts sources for compile): top-level blocks
//! (paragraphs, list items, block quotes, code blocks, tables) are grouped under the heading they
//! stand under, up to [`PASSAGE_TOKENS`] estimated tokens each; a block longer than
//! [`MAX_PASSAGE_TOKENS`] is cut at line, then sentence ends (`.` `!` `?` `。` `！` `？`). Every
//! passage is a verbatim slice of the body, so quotes from it still verify — except that the
//! pieces of a long code block or table stand alone: each piece of a fence is closed and the
//! next opened again, and each piece of a table repeats its header rows.
//!
//! Passages are ranked against the question by BM25F ([`rank`]): the crate's own
//! [`Bm25Index`] over the passages alone, with the page's title and the passage's heading path
//! as the title field, the page's aliases as aliases, and the passage text as the body — so the
//! tokenizer (Decision 13: CJK unigrams + bigrams, NFKC, case-fold) and the scoring are those of
//! the wiki's search. Function words of the question ([`crate::extractive::stopwords::STOPWORDS`])
//! are dropped first. [`select`] then fills a token budget in score order, always keeping the
//! best passage of every page that must be cited, and [`render`] shows each page's passages in
//! page order under its heading path, with `[…]` where text was left out.

pub use crate::markdown::passages::{MAX_PASSAGE_TOKENS, PASSAGE_TOKENS};

use crate::markdown::passages::cut;
use crate::search::bm25::{Bm25Index, Bm25Params, DocFields};
use crate::text::TokenEstimator;

/// One passage of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// The headings it stands under, outermost first, joined by ` › ` (empty before the first).
    pub section: String,
    /// The markdown text: a verbatim slice of the body (trimmed), or a piece of a long code block
    /// or table made to stand alone.
    pub text: String,
    /// Position in the page, from 0.
    pub order: usize,
}

/// The passages of `body` (markdown), in page order: the one passage cutter
/// ([`crate::markdown::passages::cut`]) at [`PASSAGE_TOKENS`] and [`MAX_PASSAGE_TOKENS`].
/// Empty when the body has no text.
pub fn split(body: &str, est: &TokenEstimator) -> Vec<Passage> {
    cut(body, PASSAGE_TOKENS, MAX_PASSAGE_TOKENS, est)
        .into_iter()
        .enumerate()
        .map(|(order, c)| Passage {
            section: c.heading,
            text: c.text,
            order,
        })
        .collect()
}

/// `question` without function words ([`crate::extractive::stopwords::STOPWORDS`]), CJK runs and
/// everything else kept as written, so the tokenizer sees the same text shapes.
pub fn content_query(question: &str) -> String {
    use unicode_segmentation::UnicodeSegmentation;
    let stop = crate::extractive::stopwords::STOPWORDS;
    question
        .split_word_bounds()
        .map(|w| {
            if stop.contains(&w.to_lowercase().as_str()) {
                " "
            } else {
                w
            }
        })
        .collect()
}

/// One unit to rank: the context it stands in (page title, heading path), the page's aliases,
/// and its text.
#[derive(Debug, Clone, Copy)]
pub struct Unit<'a> {
    /// Page title and heading path (the BM25F title field).
    pub context: &'a str,
    /// The page's aliases.
    pub aliases: &'a [String],
    /// The text (the BM25F body field).
    pub text: &'a str,
}

/// BM25F scores of `units` for `question` (function words dropped), index-aligned; 0 for a unit
/// sharing no term with it. Default [`Bm25Params`]; statistics (N, df, average lengths) are
/// those of `units` alone.
pub fn rank(question: &str, units: &[Unit<'_>]) -> Vec<f32> {
    let mut scores = vec![0.0; units.len()];
    if units.is_empty() {
        return scores;
    }
    let mut index = Bm25Index::new(Bm25Params::default());
    index.upsert_many(units.iter().enumerate().map(|(i, u)| {
        (
            i as u32,
            DocFields {
                title: u.context,
                aliases: u.aliases,
                body: u.text,
            },
        )
    }));
    for (doc, score) in index.search_exhaustive(&content_query(question), units.len()) {
        scores[doc as usize] = score;
    }
    scores
}

/// What a unit of the answer's context is, which decides what it is owed before the ranking
/// fills the budget ([`select`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A page routing chose: always shown, at least by its title and lead line, so it can be
    /// cited; when it was chosen by meaning, its passages that match no word of the question
    /// still come before any other unmatched text (the router may have seen what the words do
    /// not).
    Routed,
    /// A one-hop neighbour: given only for passages that match the question.
    Hopped,
    /// A source passage (one passage, no lead): given when it matches the question, or, when
    /// it was found by meaning, in the order search found it (an endpoint model's vectors may
    /// match across wordings and languages); never when the text chosen before it already
    /// quotes it.
    Source,
}

/// One unit given to the answer step: a page (key, title, aliases, lead line and passages), or
/// a source passage ([`Role::Source`]: its passage alone, titled with its source and heading).
#[derive(Debug, Clone)]
pub struct PageText {
    /// Page key (the `[[key]]` citation target), or the passage key of a source passage.
    pub key: String,
    /// Page title, or `Source: {title} › {heading}` for a source passage.
    pub title: String,
    /// Other names.
    pub aliases: Vec<String>,
    /// The page's one-line summary (shown first; empty: none).
    pub lead: String,
    /// The passages.
    pub passages: Vec<Passage>,
    /// What it is owed.
    pub role: Role,
}

/// What [`select`] gives, index-aligned with its `units`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// Per unit, the passage orders to give, ascending.
    pub chosen: Vec<Vec<usize>>,
    /// Per unit, whether it is given at all: a unit with passages chosen, or a
    /// [`Role::Routed`] page whose title and lead fit the hard cap (given by them alone when
    /// nothing else).
    pub shown: Vec<bool>,
}

/// Which passages fill an answer ([`Selection`]). A unit with none chosen is not given, except
/// a [`Role::Routed`] page whose title and lead fit `limit`: it is given by them alone, so it
/// can be cited. A routed page that does not fit is not given: the hard cap holds.
///
/// One ranking fills the budget (BM25F over all the units' passages together, [`rank`]), so the
/// text that best matches the question is given whether a page or a source holds it:
/// 1. every routed page's title and lead line ([`render_cost`]) is reserved, within `limit`;
/// 2. every passage that matches the question (score > 0), in score order (ties: unit order,
///    then passage order), while the total stays within `budget` — a source passage only when
///    `quoted(unit, &chosen)` says the text chosen so far does not already quote it;
/// 3. then, when `unmatched` (the units were chosen by meaning, not by words: a model routed,
///    or an endpoint model's embedding searched), what matches no word of the question — a
///    question in other words or another language than the text: the opening passage of each
///    routed page given none, the source passages not yet given in unit order (the order
///    search found them), then the routed pages' other passages in routed and page order,
///    within `budget`.
///
/// A unit's heading and lead cost is counted with its first passage. `limit` ≥ `budget` is the
/// hard cap (the context room); `budget` is the target the caller asked for.
pub fn select(
    question: &str,
    units: &[PageText],
    budget: u64,
    limit: u64,
    est: &TokenEstimator,
    quoted: &dyn Fn(usize, &[Vec<usize>]) -> bool,
    unmatched: bool,
) -> Selection {
    let mut contexts: Vec<String> = Vec::new();
    let mut owner: Vec<(usize, usize)> = Vec::new(); // (unit, passage index)
    for (pi, p) in units.iter().enumerate() {
        for (i, s) in p.passages.iter().enumerate() {
            contexts.push(if s.section.is_empty() {
                p.title.clone()
            } else {
                format!("{} {}", p.title, s.section)
            });
            owner.push((pi, i));
        }
    }
    let ranked: Vec<Unit<'_>> = owner
        .iter()
        .zip(&contexts)
        .map(|(&(pi, i), c)| Unit {
            context: c,
            aliases: &units[pi].aliases,
            text: &units[pi].passages[i].text,
        })
        .collect();
    let scores = rank(question, &ranked);
    let mut order: Vec<usize> = (0..owner.len()).collect();
    crate::util::sort_by(&mut order, &|&a, &b| {
        scores[b]
            .total_cmp(&scores[a])
            .then(owner[a].cmp(&owner[b]))
    });
    let mut chosen: Vec<Vec<usize>> = vec![Vec::new(); units.len()];
    let mut shown = vec![false; units.len()];
    let mut used = 0u64;
    // 1. Every routed page's title and lead.
    for (pi, p) in units.iter().enumerate() {
        if p.role == Role::Routed {
            let c = render_cost(p, est);
            if used + c <= limit {
                used += c;
                shown[pi] = true;
            }
        }
    }
    let target = budget.min(limit);
    let mut try_add = |pi: usize, i: usize, chosen: &mut Vec<Vec<usize>>, used: &mut u64| {
        let p = &units[pi];
        if p.role == Role::Source && chosen[pi].is_empty() && quoted(pi, chosen) {
            return;
        }
        let s = &p.passages[i];
        let mut c = est.estimate(&s.text) + est.estimate(&s.section) + 4;
        if !shown[pi] {
            c += render_cost(p, est);
        }
        if *used + c <= target {
            *used += c;
            shown[pi] = true;
            chosen[pi].push(i);
        }
    };
    // 2. What matches the question, best first.
    for &u in &order {
        if scores[u] > 0.0 {
            let (pi, i) = owner[u];
            try_add(pi, i, &mut chosen, &mut used);
        }
    }
    // 3. What matches no word: the routed pages' openings, the source passages in the order
    // search found them, then the routed pages' other passages.
    if unmatched {
        for (pi, p) in units.iter().enumerate() {
            if p.role == Role::Routed && chosen[pi].is_empty() && !p.passages.is_empty() {
                try_add(pi, 0, &mut chosen, &mut used);
            }
        }
        for (pi, p) in units.iter().enumerate() {
            if p.role == Role::Source && chosen[pi].is_empty() {
                try_add(pi, 0, &mut chosen, &mut used);
            }
        }
        for (pi, p) in units.iter().enumerate() {
            if p.role == Role::Routed {
                for i in 0..p.passages.len() {
                    if !chosen[pi].contains(&i) {
                        try_add(pi, i, &mut chosen, &mut used);
                    }
                }
            }
        }
    }
    for c in &mut chosen {
        crate::util::sort(c);
    }
    Selection { chosen, shown }
}

/// The fixed cost of showing a page: its title line and lead line (estimated tokens; the lead is
/// counted even when [`render`] leaves it out).
pub fn render_cost(page: &PageText, est: &TokenEstimator) -> u64 {
    est.estimate(&page.title) + est.estimate(&page.lead) + 20
}

/// The text shown for one page (below its `# Title` line): the lead (unless the page's first
/// passage, its opening, is given), then the chosen passages in page order, each under its heading path (`## A › B`) when that changes, `[…]` where passages
/// were left out.
pub fn render(page: &PageText, chosen: &[usize]) -> String {
    let mut out = String::new();
    // The lead line stands in for the page's opening when that is not given.
    if !page.lead.trim().is_empty() && chosen.first() != Some(&0) {
        out.push_str(page.lead.trim());
        out.push_str("\n\n");
    }
    let mut section: Option<&str> = None;
    let mut prev: Option<usize> = None;
    for &i in chosen {
        let s = &page.passages[i];
        let gap = match prev {
            None => i > 0,
            Some(p) => i > p + 1,
        };
        if section != Some(s.section.as_str()) {
            if gap {
                out.push_str("[…]\n\n");
            }
            if !s.section.is_empty() {
                out.push_str(&format!("## {}\n\n", s.section));
            }
            section = Some(s.section.as_str());
        } else if gap {
            out.push_str("[…]\n\n");
        }
        out.push_str(&s.text);
        out.push_str("\n\n");
        prev = Some(i);
    }
    if prev.is_some_and(|p| p + 1 < page.passages.len()) {
        out.push_str("[…]\n");
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> TokenEstimator {
        TokenEstimator::default()
    }

    #[test]
    fn splits_along_headings_and_keeps_the_text_verbatim() {
        let body = "Lead paragraph.\n\n## Install\n\nRun `rustup`.\n\n- one\n- two\n\n### On Windows\n\nUse the installer.\n\n## Use\n\n```rust\nfn main() {}\n```\n";
        let p = split(body, &est());
        let got: Vec<(&str, &str)> = p
            .iter()
            .map(|p| (p.section.as_str(), p.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("", "Lead paragraph."),
                ("Install", "Run `rustup`.\n\n- one\n- two"),
                ("Install › On Windows", "Use the installer."),
                ("Use", "```rust\nfn main() {}\n```"),
            ]
        );
        for s in &p {
            assert!(body.contains(&s.text));
        }
    }

    #[test]
    fn html_blocks_are_kept_and_rules_dropped() {
        // A thematic break separates text; it is not text, so no passage carries it. It closes
        // the passage before it, so every passage stays a verbatim slice of the body.
        let body = "Before.\n\n<div>\nraw html\n</div>\n\n---\n\nAfter.";
        let p = split(body, &est());
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].text, "Before.\n\n<div>\nraw html\n</div>");
        assert_eq!(p[1].text, "After.");
    }

    #[test]
    fn long_blocks_are_cut_and_groups_stay_small() {
        let para = "Word ".repeat(100); // ~125 tokens
        let body = format!("{para}\n\n{para}\n\n{}", "Sentence here. ".repeat(200));
        let p = split(&body, &est());
        assert!(p.len() >= 4, "{}", p.len());
        for s in &p {
            assert!(est().estimate(&s.text) <= MAX_PASSAGE_TOKENS, "{}", s.text);
        }
        let cjk = "背压是一种流量控制机制。".repeat(100); // 1200 CJK tokens on one line
        let p = split(&cjk, &est());
        assert!(p.len() >= 3);
        assert_eq!(p.iter().map(|s| s.text.as_str()).collect::<String>(), cjk);
    }

    #[test]
    fn a_long_code_block_or_table_is_cut_into_pieces_that_stand_alone() {
        let code: String = (0..120)
            .map(|i| format!("    let value_{i} = compute(\"月{i}\", {i});\n"))
            .collect();
        let body =
            format!("## Listing\n\n```rust\nfn main() {{\n{code}}}\n```\n\nAfter the code.\n");
        let p = split(&body, &est());
        let pieces: Vec<&Passage> = p.iter().filter(|s| s.text.contains("let value_")).collect();
        assert!(pieces.len() >= 3, "{}", pieces.len());
        for s in &pieces {
            assert!(s.text.starts_with("```rust\n"), "{}", s.text);
            assert!(s.text.ends_with("\n```"), "{}", s.text);
            assert_eq!(s.text.matches("```").count(), 2, "{}", s.text);
            assert!(est().estimate(&s.text) <= MAX_PASSAGE_TOKENS, "{}", s.text);
            assert_eq!(s.section, "Listing");
        }
        // Every line of the code is in exactly one piece, in order.
        let joined: String = pieces
            .iter()
            .map(|s| {
                s.text
                    .trim_start_matches("```rust\n")
                    .trim_end_matches("```")
            })
            .collect();
        assert_eq!(joined, format!("fn main() {{\n{code}}}\n"));
        assert!(p.last().unwrap().text.contains("After the code."));

        // A tilde fence without its closing line (the page ends inside it) is closed.
        let open = format!("~~~~\n{code}");
        for s in split(&open, &est()) {
            assert!(
                s.text.starts_with("~~~~\n") && s.text.ends_with("\n~~~~"),
                "{}",
                s.text
            );
        }

        let rows: String = (0..80)
            .map(|i| format!("| item {i} | 数量 {i} | a longer description of row {i} |\n"))
            .collect();
        let table = format!("| Name | 数量 | Notes |\n|:-----|-----:|---|\n{rows}");
        let p = split(&table, &est());
        assert!(p.len() >= 3, "{}", p.len());
        for s in &p {
            assert!(
                s.text
                    .starts_with("| Name | 数量 | Notes |\n|:-----|-----:|---|\n| item "),
                "{}",
                s.text
            );
            assert!(est().estimate(&s.text) <= MAX_PASSAGE_TOKENS);
        }
        let n: usize = p.iter().map(|s| s.text.matches("| item ").count()).sum();
        assert_eq!(n, 80);
    }

    #[test]
    fn a_line_without_sentence_ends_is_still_cut_into_passages_that_fit() {
        // 5000 words on one line, and a CJK line with only commas: no sentence boundary.
        let words = "backpressure ".repeat(5000);
        let commas = "背压保护队列，".repeat(500);
        for text in [words.trim_end().to_string(), commas] {
            let p = split(&text, &est());
            assert!(p.len() >= 3, "{}", p.len());
            for s in &p {
                assert!(
                    est().estimate(&s.text) <= MAX_PASSAGE_TOKENS,
                    "{} tokens",
                    est().estimate(&s.text)
                );
            }
            let joined: String = p.iter().map(|s| s.text.as_str()).collect();
            assert_eq!(
                joined.split_whitespace().collect::<String>(),
                text.split_whitespace().collect::<String>()
            );
        }
    }

    #[test]
    fn rendering_shows_the_lead_headings_and_gaps() {
        let page = PageText {
            key: "K".into(),
            title: "T".into(),
            aliases: vec![],
            lead: "The lead.".into(),
            passages: split(
                "Opening.\n\n## A\n\nOne.\n\n## B\n\nTwo.\n\n## C\n\nThree.",
                &est(),
            ),
            role: Role::Routed,
        };
        assert_eq!(page.passages.len(), 4);
        assert_eq!(
            render(&page, &[2]),
            "The lead.\n\n[…]\n\n## B\n\nTwo.\n\n[…]"
        );
        assert_eq!(
            render(&page, &[0, 1, 3]),
            "Opening.\n\n## A\n\nOne.\n\n[…]\n\n## C\n\nThree."
        );
    }

    #[test]
    fn ranking_uses_the_search_tokenizer_in_english_and_chinese() {
        let u = |text| Unit {
            context: "Page",
            aliases: &[],
            text,
        };
        let units = [
            u("Rust has loops."),
            u("Ownership moves values."),
            u("背压保护队列不溢出。"),
            u("流量控制很重要。"),
        ];
        let s = rank("What is ownership?", &units);
        assert!(s[1] > 0.0 && s[0] == 0.0 && s[2] == 0.0, "{s:?}");
        let s = rank("背压是什么？", &units);
        assert!(s[2] > 0.0 && s[3] == 0.0 && s[1] == 0.0, "{s:?}");
        // Function words alone match nothing.
        assert!(rank("What is the", &units).iter().all(|x| *x == 0.0));
    }
}
