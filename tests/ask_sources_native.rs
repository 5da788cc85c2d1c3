//! `ask` answers from both layers (issue 23, item 2): the routed pages, then the source passages
//! that best match the question, cited as footnotes in Decision 3's form, checked like page
//! citations, and kept by write-back.
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use llm_wiki::compile::model::LlmCompiler;
use llm_wiki::compile::pipeline::CompileOptions;
use llm_wiki::llm::Cancel;
use llm_wiki::query::{Answer, AskBudget, AskOptions, LlmQuery, OfflineQuery};
use llm_wiki::scripted::ScriptedLlm;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::text::TokenEstimator;

mod common;
use common::{add, open, Recording, W};

const VALVES: &str = "# Valves of the old pumping station\n\nThe station had three pumps.\n\n## Zephyrine valve\n\nThe Zephyrine valve was patented in 1911 by Ottilie Brandt of Bremen.\n";

/// A compiled wiki (scripted endpoint) and one more source, added but never compiled: what it
/// says is in no page.
fn wiki() -> (MemoryBackend, W) {
    let backend = MemoryBackend::new();
    let w = open(&backend, "both");
    add(&w, "widgets.md", "# Widget notes\n\n## Widgetron\n\nWidgetron was first released in 2015. Widgetron is made by Acme Corp.\n\n## Acme Corp\n\nAcme Corp builds widgets in Ohio.\n");
    let llm = ScriptedLlm::new();
    let model = LlmCompiler {
        llm: &llm,
        max_output_tokens: None,
        model_name: "scripted".into(),
    };
    block_on(w.compile(&model, &CompileOptions::default(), &|_| {}, &Cancel::new())).unwrap();
    add(&w, "valves.md", VALVES);
    (backend, w)
}

fn budget() -> AskBudget {
    AskBudget {
        context_window: 16_384,
        max_output_tokens: 1024,
        estimator: TokenEstimator::default(),
    }
}

fn ask(w: &W, llm: &Recording, q: &str) -> Answer {
    let model = LlmQuery {
        llm,
        max_output_tokens: None,
    };
    block_on(w.ask(
        &model,
        q,
        &AskOptions::default(),
        budget(),
        None,
        &Cancel::new(),
    ))
    .unwrap()
}

#[test]
fn a_fact_only_a_source_holds_is_answered_and_cited_as_a_footnote() {
    let (_b, w) = wiki();
    let llm = Recording::default();
    let a = ask(&w, &llm, "Who patented the Zephyrine valve?");
    assert!(a.answer.contains("Ottilie Brandt"), "{}", a.answer);
    assert!(a.grounded && !a.declined);
    let c = &a.source_citations[0];
    assert_eq!(c.source, "valves.md");
    assert!(c.quote.contains("patented in 1911 by Ottilie Brandt"));
    let v = block_on(w.source("valves.md")).unwrap().unwrap();
    assert_eq!(c.version, v.source.version);
    // The line range holds the quote, and the footnote is defined once, at the end.
    let span = block_on(w.source_span("valves.md", Some(&c.version), c.lines))
        .unwrap()
        .unwrap();
    assert!(span.text.contains("Ottilie Brandt"), "{}", span.text);
    let marker = format!("[^{}]", c.id);
    assert!(a.answer.contains(&marker));
    assert_eq!(a.answer.matches(&format!("{marker}:")).count(), 1);
    assert!(a.answer.trim_end().ends_with(&c.footnote()));
    // The answer call saw the passage as a block of its own.
    assert!(llm
        .answer_blocks()
        .iter()
        .any(|(k, t)| k == &format!("^{}", c.id) && t.contains("Zephyrine")));
    assert!(a.passages.iter().any(|k| k.starts_with("valves.md#L")));
}

#[test]
fn offline_answers_quote_source_passages_too() {
    let (_b, w) = wiki();
    let a = block_on(w.ask(
        &OfflineQuery,
        "Who patented the Zephyrine valve?",
        &AskOptions::default(),
        budget(),
        None,
        &Cancel::new(),
    ))
    .unwrap();
    assert!(a.extractive);
    let line = a
        .answer
        .lines()
        .find(|l| l.contains("Ottilie Brandt"))
        .unwrap_or_else(|| panic!("{}", a.answer));
    let c = &a.source_citations[0];
    assert!(line.contains(&format!("[^{}]", c.id)), "{line}");
    assert!(a.grounded);
}

#[test]
fn passage_citations_are_checked_like_page_citations() {
    let (_b, w) = wiki();
    let llm = Recording {
        answer_override: Some(
            "Ottilie Brandt patented it [[^s1]]. It was 1911 [^s1]. Made up [^s9].\n\n[^s1]: invented by the model".into(),
        ),
        ..Default::default()
    };
    let a = ask(&w, &llm, "Who patented the Zephyrine valve?");
    assert_eq!(a.source_citations.len(), 1);
    assert!(
        a.removed_citations.contains(&"^s9".to_string()),
        "{:?}",
        a.removed_citations
    );
    assert!(!a.answer.contains("[^s9]"));
    assert!(!a.answer.contains("invented by the model"));
    assert_eq!(a.answer.matches("[^s1]").count(), 3, "{}", a.answer); // two markers, one definition
}

#[test]
fn a_passage_the_pages_already_quote_is_not_given_again() {
    let (_b, w) = wiki();
    let llm = Recording::default();
    let a = ask(&w, &llm, "When was Widgetron first released?");
    assert!(a.grounded);
    let blocks = llm.answer_blocks();
    let pages: String = blocks
        .iter()
        .filter(|(k, _)| !k.starts_with('^'))
        .map(|(_, t)| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for (k, t) in blocks.iter().filter(|(k, _)| k.starts_with('^')) {
        let sentences: Vec<&str> = t
            .lines()
            .skip(2)
            .flat_map(|l| l.split_inclusive(". "))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let quoted = sentences.iter().filter(|s| pages.contains(*s)).count();
        assert!(
            quoted * 2 < sentences.len().max(1),
            "{k} is quoted by a page: {t}"
        );
    }
}

#[test]
fn write_back_keeps_the_source_footnotes() {
    let (_b, w) = wiki();
    let llm = Recording::default();
    let a = ask(&w, &llm, "Who patented the Zephyrine valve?");
    let page = block_on(w.write_back("Who patented the Zephyrine valve?", &a)).unwrap();
    let c = &a.source_citations[0];
    assert!(page.body.contains(&c.footnote()), "{}", page.body);
    assert!(page.sources.contains(&"valves.md".to_string()));
}
