//! Query: routing, cited answers, citation checks, write-back, offline extractive answers, and a
//! 3000-page wiki whose index.md does not fit the context (field cases F31a, F32).
#![cfg(not(target_arch = "wasm32"))]

use std::cell::RefCell;

use futures::executor::block_on;
use llm_wiki::compile::model::LlmCompiler;
use llm_wiki::compile::pipeline::CompileOptions;
use llm_wiki::llm::Cancel;
use llm_wiki::model::PageKind;
use llm_wiki::query::{
    AskBudget, AskOptions, LlmQuery, OfflineQuery, RouteMethod, Router, Turn, EXTRACTIVE_NOTE,
};
use llm_wiki::scripted::ScriptedLlm;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{Batch, Expect, Storage, Store};
use llm_wiki::text::{estimate_tokens, TokenEstimator};

mod common;
use common::{add, open, Recording, W};

fn compiled() -> (MemoryBackend, W) {
    let backend = MemoryBackend::new();
    let w = open(&backend, "q");
    add(&w, "widgets.md", "# Widget notes\n\n## Widgetron\n\nWidgetron was first released in 2015. Widgetron is made by Acme Corp.\n\n## Acme Corp\n\nAcme Corp builds widgets in Ohio.\n");
    add(
        &w,
        "流量.md",
        "# 流量控制\n\n## 背压\n\n背压是一种流量控制机制。背压保护队列不溢出。\n",
    );
    let llm = ScriptedLlm::new();
    let model = LlmCompiler {
        llm: &llm,
        max_output_tokens: None,
        model_name: "scripted".into(),
    };
    let r =
        block_on(w.compile(&model, &CompileOptions::default(), &|_| {}, &Cancel::new())).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    (backend, w)
}

fn budget(window: u64) -> AskBudget {
    AskBudget {
        context_window: window,
        max_output_tokens: 1024,
        estimator: TokenEstimator::default(),
    }
}

#[test]
fn auto_routing_skips_the_routing_call_only_when_one_place_holds_the_whole_question() {
    let (_b, w) = compiled();
    let ask = |question: &str, router: Router| {
        let llm = Recording::default();
        let options = AskOptions {
            router,
            ..Default::default()
        };
        let a = ask_model(&w, &llm, question, &options, budget(16_384));
        let routing_calls = llm
            .prompts
            .borrow()
            .iter()
            .filter(|r| r.json.is_some())
            .count();
        (a, routing_calls)
    };
    // Every content word of the question is in one page: search routes alone, no routing call.
    let (a, calls) = ask("When was Widgetron first released?", Router::Auto);
    assert_eq!((a.route, calls), (Some(RouteMethod::Search), 0), "{a:?}");
    assert_eq!(a.route_usage.input, 0);
    assert!(a.routed.contains(&"Widgetron".to_string()), "{a:?}");
    assert!(a.answer.contains("2015"), "{}", a.answer);
    // No page holds "backpressure" (the wiki says 背压): the model routes, since it may know the
    // page by another word.
    let (a, calls) = ask(
        "Is Widgetron made where the backpressure queue is?",
        Router::Auto,
    );
    assert_eq!(calls, 1, "{a:?}");
    assert!(a.route_usage.input > 0);
    // The policy can be forced either way.
    let (a, calls) = ask("When was Widgetron first released?", Router::Model);
    assert_eq!((a.route, calls), (Some(RouteMethod::Index), 1), "{a:?}");
    let (a, calls) = ask(
        "Is Widgetron made where the backpressure queue is?",
        Router::Search,
    );
    assert_eq!((a.route, calls), (Some(RouteMethod::Search), 0), "{a:?}");
    // A question of function words alone is "held" anywhere, which says nothing about where
    // its answer is: the model routes it.
    let (a, calls) = ask("What is it?", Router::Auto);
    assert_eq!(calls, 1, "{a:?}");
}

#[test]
fn search_routes_a_follow_up_with_the_question_before_it() {
    let (_b, w) = compiled();
    let llm = Recording::default();
    // "Who makes it?" names nothing; the turn before names Widgetron.
    let options = AskOptions {
        router: Router::Search,
        history: vec![Turn {
            question: "When was Widgetron first released?".into(),
            answer: "In 2015 [[Widgetron]].".into(),
        }],
        ..Default::default()
    };
    let a = ask_model(&w, &llm, "Who makes it?", &options, budget(16_384));
    assert_eq!(a.route, Some(RouteMethod::Search), "{a:?}");
    assert!(a.routed.contains(&"Widgetron".to_string()), "{a:?}");
}

#[test]
fn routes_answers_with_valid_citations_and_writes_back() {
    let (_b, w) = compiled();
    let llm = Recording::default();
    let model = LlmQuery {
        llm: &llm,
        max_output_tokens: Some(1024),
    };
    let streamed = RefCell::new(String::new());
    let on_token = |t: &str| streamed.borrow_mut().push_str(t);
    let options = AskOptions {
        write_back: true,
        // The model routes (under `auto` search alone would: one page holds every word).
        router: Router::Model,
        ..Default::default()
    };
    let a = block_on(w.ask(
        &model,
        "When was Widgetron first released?",
        &options,
        budget(16_384),
        Some(&on_token),
        &Cancel::new(),
    ))
    .unwrap();
    assert_eq!(a.route, Some(RouteMethod::Index));
    assert!(a.routed.contains(&"Widgetron".to_string()), "{a:?}");
    assert!(a.answer.contains("2015"), "{}", a.answer);
    assert!(a.citations.contains(&"Widgetron".to_string()), "{a:?}");
    assert!(a.removed_citations.is_empty());
    assert!(!streamed.borrow().is_empty());
    // The route saw index.md whole; the answer saw the pages as data blocks.
    let prompts = llm.prompts.borrow();
    assert!(prompts[0].messages[0]
        .content
        .contains("<source key=\"index.md\">"));
    assert!(prompts[1].messages[0]
        .content
        .contains("<source key=\"Widgetron\">"));
    drop(prompts);
    // Written back: an analysis page citing its pages, in index.md and in search.
    let saved = a.saved.clone().unwrap();
    let page = block_on(w.page(&saved)).unwrap().unwrap();
    assert_eq!(page.kind, PageKind::Analysis);
    assert!(
        page.body.contains("## Sources\n\n- [[Widgetron]]"),
        "{}",
        page.body
    );
    assert_eq!(page.sources, vec!["widgets.md"]);
    assert!(block_on(w.index()).unwrap().contains(&format!("[[{saved}")));
    let hits = block_on(w.search("Widgetron released", &Default::default())).unwrap();
    assert!(hits.hits.iter().any(|h| h.key == saved));
}

#[test]
fn chinese_questions_route_to_chinese_pages() {
    let (_b, w) = compiled();
    let llm = Recording::default();
    let a = ask_model(
        &w,
        &llm,
        "背压是什么？",
        &AskOptions::default(),
        budget(16_384),
    );
    assert!(a.routed.contains(&"背压".to_string()), "{a:?}");
    assert!(a.answer.contains("背压是一种流量控制机制"), "{}", a.answer);
    assert!(
        a.citations.iter().any(|c| c == "背压" || c == "流量控制"),
        "{a:?}"
    );
}

#[test]
fn f32_citations_to_pages_not_given_are_removed() {
    let (_b, w) = compiled();
    let llm = Recording {
        answer_override: Some("Tokio uses a work-stealing scheduler [[Widgetron]] and beats Node [[Benchmarks 2024]].".into()),
        ..Default::default()
    };
    let a = ask_model(
        &w,
        &llm,
        "Widgetron release",
        &AskOptions::default(),
        budget(16_384),
    );
    assert_eq!(a.removed_citations, vec!["Benchmarks 2024"]);
    assert_eq!(a.citations, vec!["Widgetron"]);
    assert_eq!(
        a.answer,
        "Tokio uses a work-stealing scheduler [[Widgetron]] and beats Node."
    );
}

#[test]
fn unanswerable_questions_are_said_so() {
    let (_b, w) = compiled();
    let llm = Recording::default();
    let a = ask_model(
        &w,
        &llm,
        "What is the capital of Peru?",
        &AskOptions::default(),
        budget(16_384),
    );
    assert!(a.citations.is_empty());
    // No word of it occurs in the wiki: declined, without an answer call.
    assert!(a.declined && a.relevance == 0.0, "{a:?}");
    assert_eq!(a.answer, llm_wiki::query::DECLINED_ANSWER);
    // Nothing to ground it: not saved.
    assert!(block_on(w.write_back("What is the capital of Peru?", &a)).is_err());
}

#[test]
fn follow_up_questions_carry_the_history() {
    let (_b, w) = compiled();
    let llm = Recording::default();
    let model = LlmQuery {
        llm: &llm,
        max_output_tokens: Some(1024),
    };
    let history = vec![Turn {
        question: "Who makes Widgetron?".into(),
        answer: "Acme Corp [[Acme Corp]].".into(),
    }];
    let options = AskOptions {
        history,
        ..Default::default()
    };
    block_on(w.ask(
        &model,
        "Where are they based?",
        &options,
        budget(16_384),
        None,
        &Cancel::new(),
    ))
    .unwrap();
    let prompts = llm.prompts.borrow();
    let answer_call = prompts.last().unwrap();
    assert_eq!(answer_call.messages[0].content, "Who makes Widgetron?");
    assert_eq!(answer_call.messages[1].content, "Acme Corp [[Acme Corp]].");
}

#[test]
fn offline_answers_are_extractive_and_cited() {
    let (_b, w) = compiled();
    let a = block_on(w.ask(
        &OfflineQuery,
        "Where does Acme Corp build widgets?",
        &AskOptions::default(),
        budget(16_384),
        None,
        &Cancel::new(),
    ))
    .unwrap();
    assert!(a.extractive);
    assert_eq!(a.route, Some(RouteMethod::Search));
    assert!(a.answer.starts_with(EXTRACTIVE_NOTE), "{}", a.answer);
    assert!(
        a.answer.contains("Acme Corp builds widgets in Ohio."),
        "{}",
        a.answer
    );
    assert!(!a.citations.is_empty());
    assert_eq!(a.usage.calls, 0);
}

#[test]
fn f31a_a_3000_page_index_is_shortlisted_and_no_request_exceeds_the_context() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "q");
    let mut b = Batch::new();
    for i in 0..3000 {
        let title = format!("Topic {i:04}");
        let page = llm_wiki::model::Page {
            key: title.clone(),
            title: title.clone(),
            kind: PageKind::Concept,
            summary: format!("Synthetic page {i} about one narrow topic, with a summary long enough to cost about sixty tokens in an index line like real ones."),
            aliases: vec![],
            tags: vec![],
            sources: vec![],
            created: 0,
            updated: 0,
            body: if i == 1234 { "The answer to the quartz question is 42.".into() } else { format!("Filler text number {i}.") },
            revision: 1,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        };
        b.put(
            Store::Pages,
            title,
            serde_json::to_vec(&page).unwrap(),
            Expect::Absent,
        );
    }
    block_on(w.storage().commit(b)).unwrap();
    // index.md as the app keeps it (about 180k tokens).
    let pages = block_on(w.all_pages()).unwrap();
    let index = llm_wiki::documents::render_index(&pages);
    assert!(estimate_tokens(&index) > 100_000);
    let mut b = Batch::new();
    b.put(
        Store::Documents,
        "index.md",
        index.into_bytes(),
        Expect::Any,
    );
    block_on(w.storage().commit(b)).unwrap();

    let llm = Recording::default();
    let model = LlmQuery {
        llm: &llm,
        max_output_tokens: Some(1024),
    };
    let a = block_on(w.ask(
        &model,
        "What is the answer to the quartz question?",
        &AskOptions {
            router: Router::Model,
            ..AskOptions::default()
        },
        budget(32_768),
        None,
        &Cancel::new(),
    ))
    .unwrap();
    assert_eq!(a.route, Some(RouteMethod::Shortlist));
    assert!(
        llm.largest.get() + 1024 <= 32_768,
        "a request of {} tokens",
        llm.largest.get()
    );
    assert!(a.citations.contains(&"Topic 1234".to_string()), "{a:?}");
}

/// A wiki of `pages` (title, summary, body) written straight to storage, with index.md as the app
/// keeps it.
fn wiki_of(pages: &[(&str, &str, String)]) -> (MemoryBackend, W) {
    let backend = MemoryBackend::new();
    let w = open(&backend, "q");
    let mut b = Batch::new();
    for (title, summary, body) in pages {
        let page = llm_wiki::model::Page {
            key: title.to_string(),
            title: title.to_string(),
            kind: PageKind::Concept,
            summary: summary.to_string(),
            aliases: vec![],
            tags: vec![],
            sources: vec![],
            created: 0,
            updated: 0,
            body: body.clone(),
            revision: 1,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        };
        b.put(
            Store::Pages,
            title.to_string(),
            serde_json::to_vec(&page).unwrap(),
            Expect::Absent,
        );
    }
    block_on(w.storage().commit(b)).unwrap();
    let all = block_on(w.all_pages()).unwrap();
    let mut b = Batch::new();
    b.put(
        Store::Documents,
        "index.md",
        llm_wiki::documents::render_index(&all).into_bytes(),
        Expect::Any,
    );
    block_on(w.storage().commit(b)).unwrap();
    (backend, w)
}

/// `n` filler sections about nothing the questions ask, ~100 tokens each.
fn filler(n: usize, cjk: bool) -> String {
    (0..n)
        .map(|i| {
            if cjk {
                format!(
                    "## 杂记{i}\n\n{}\n\n",
                    "今天天气很好，我们去公园散步。".repeat(7)
                )
            } else {
                format!(
                    "## Aside {i}\n\n{}\n\n",
                    "The weather was mild and the garden was quiet that day. ".repeat(7)
                )
            }
        })
        .collect()
}

/// `w.ask` through an endpoint model over `llm` (output cap 1024 tokens).
fn ask_model<L: llm_wiki::llm::Llm>(
    w: &W,
    llm: &L,
    question: &str,
    options: &AskOptions,
    budget: AskBudget,
) -> llm_wiki::query::Answer {
    let model = LlmQuery {
        llm,
        max_output_tokens: Some(1024),
    };
    block_on(w.ask(&model, question, options, budget, None, &Cancel::new())).unwrap()
}

fn ask_with(w: &W, llm: &Recording, question: &str, answer_budget: u64) -> llm_wiki::query::Answer {
    let options = AskOptions {
        answer_budget,
        hop_pages: 0,
        ..Default::default()
    };
    ask_model(w, llm, question, &options, budget(16_384))
}

#[test]
fn the_answer_gets_the_matching_passages_not_whole_pages() {
    let ownership = format!(
        "Ownership is how Rust manages memory.\n\n{}## Borrowing\n\nA reference borrows a value without taking ownership; the borrow checker enforces the rules.\n\n{}",
        filler(10, false),
        filler(10, false)
    );
    let (_b, w) = wiki_of(&[
        ("Ownership", "How Rust manages memory.", ownership.clone()),
        ("Gardening", "Notes on the garden.", filler(20, false)),
    ]);
    let llm = Recording::default();
    let a = ask_with(&w, &llm, "How does borrowing work in ownership?", 600);
    assert_eq!(a.routed, vec!["Ownership"], "{a:?}");
    let blocks = llm.answer_blocks();
    assert_eq!(blocks.len(), 1);
    let (key, text) = &blocks[0];
    assert_eq!(key, "Ownership");
    // The matching section, under its heading, with the page's title and lead; not the filler.
    assert!(text.starts_with("# Ownership\n\n"), "{text}");
    assert!(
        text.contains("## Borrowing\n\nA reference borrows a value"),
        "{text}"
    );
    assert!(text.contains("[…]"), "{text}");
    assert!(
        estimate_tokens(text) < estimate_tokens(&ownership) / 3,
        "{text}"
    );
    assert!(estimate_tokens(text) <= 600, "{}", estimate_tokens(text));
    // The per-step usage adds up.
    assert_eq!(a.usage.input, a.route_usage.input + a.answer_usage.input);
    assert!(a.answer_usage.input < estimate_tokens(&ownership));
    assert_eq!(a.citations, vec!["Ownership"]);
}

#[test]
fn chinese_passages_are_ranked_with_the_search_tokenizer() {
    let body = format!(
        "{}## 背压\n\n背压是一种流量控制机制，它让下游告诉上游放慢速度。\n\n{}",
        filler(8, true),
        filler(8, true)
    );
    let (_b, w) = wiki_of(&[("流量控制", "关于流量控制的笔记。", body.clone())]);
    let llm = Recording::default();
    let a = ask_with(&w, &llm, "背压是什么？", 400);
    assert_eq!(a.routed, vec!["流量控制"], "{a:?}");
    let blocks = llm.answer_blocks();
    let text = &blocks[0].1;
    assert!(text.contains("## 背压\n\n背压是一种流量控制机制"), "{text}");
    assert!(estimate_tokens(text) <= 400, "{}", estimate_tokens(text));
    assert!(estimate_tokens(text) < estimate_tokens(&body) / 3);
    assert!(a.answer.contains("背压是一种流量控制机制"), "{}", a.answer);
    assert_eq!(a.citations, vec!["流量控制"]);
}

#[test]
fn routed_pages_whose_leads_do_not_fit_the_context_window_are_left_out() {
    // Twelve routed pages, a long conversation and a window with room for about two leads:
    // the request stays within the window, and the pages that fit are still given.
    let pages: Vec<(String, String)> = (0..12)
        .map(|i| {
            (
                format!("Widget {i}"),
                format!("The widget number {i} spins at a fixed speed."),
            )
        })
        .collect();
    let refs: Vec<(&str, &str, String)> = pages
        .iter()
        .map(|(t, b)| {
            (
                t.as_str(),
                "A widget that spins in the garden of the old house by the river.",
                b.clone(),
            )
        })
        .collect();
    let (_b, w) = wiki_of(&refs);
    let question = "How fast does each widget spin?";
    let history = vec![Turn {
        question: "Which widgets are there?".into(),
        answer: "There are twelve widgets in the garden. ".repeat(60),
    }];
    let est = TokenEstimator::default();
    let overhead = est.estimate(llm_wiki::query::ANSWER_SYSTEM)
        + est.estimate(&history[0].question)
        + est.estimate(&history[0].answer)
        + est.estimate(question)
        + 200;
    let window = 1024 + overhead + 70;
    let llm = Recording::default();
    let options = AskOptions {
        router: Router::Search,
        max_pages: 12,
        hop_pages: 0,
        history,
        ..Default::default()
    };
    let budget = AskBudget {
        context_window: window,
        max_output_tokens: 1024,
        estimator: est,
    };
    let a = ask_model(&w, &llm, question, &options, budget);
    assert!(a.routed.len() >= 6, "{a:?}");
    let blocks = llm.answer_blocks();
    assert!(
        !blocks.is_empty() && blocks.len() < a.routed.len(),
        "{blocks:?}"
    );
    assert!(
        llm.largest.get() + 1024 <= window,
        "a request of {} tokens in a window of {window}",
        llm.largest.get()
    );
}

#[test]
fn every_routed_page_is_given_and_the_budget_holds() {
    let pages: Vec<(String, String)> = ["Alpha", "Beta", "Gamma", "Delta"]
        .iter()
        .map(|t| {
            (
                format!("{t} widget"),
                format!(
                    "The {t} widget spins at a fixed speed.\n\n{}",
                    filler(6, false)
                ),
            )
        })
        .collect();
    let refs: Vec<(&str, &str, String)> = pages
        .iter()
        .map(|(t, b)| (t.as_str(), "A widget.", b.clone()))
        .collect();
    let (_b, w) = wiki_of(&refs);
    for budget_tokens in [200, 1500, 100_000] {
        let llm = Recording::default();
        let a = ask_with(&w, &llm, "How fast does each widget spin?", budget_tokens);
        assert_eq!(a.routed.len(), 4, "{a:?}");
        let blocks = llm.answer_blocks();
        // Every routed page is given (by its lead at least; here each one's best passage
        // matches the question and fits).
        let keys: Vec<&str> = blocks.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys.len(), 4, "{keys:?}");
        for (k, text) in &blocks {
            assert!(a.routed.contains(k));
            assert!(text.contains("widget spins at a fixed speed"), "{text}");
        }
        let given: u64 = blocks.iter().map(|(_, t)| estimate_tokens(t)).sum();
        if budget_tokens == 200 {
            // Past the budget only by the routed pages' leads, which are reserved before it
            // (the context window is their cap), and the headings rendering adds.
            assert!(given <= 4 * 60, "{given}");
        } else {
            assert!(given <= budget_tokens, "{given} > {budget_tokens}");
        }
        if budget_tokens == 100_000 {
            // A budget past the pages' size gives them whole.
            for (k, text) in &blocks {
                let body = &pages.iter().find(|(t, _)| t == k).unwrap().1;
                for line in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
                    assert!(text.contains(line), "{k}: {line}");
                }
                assert!(!text.contains("[…]"));
            }
        }
    }
}

#[test]
fn citations_to_pages_whose_passages_were_not_given_are_removed() {
    // A one-hop neighbour that shares nothing with the question gives no passage, so a citation
    // of it is removed; the routed page's stays.
    let (_b, w) = wiki_of(&[
        (
            "Widgetron",
            "A widget.",
            "Widgetron was first released in 2015. See [[Gardening]].".into(),
        ),
        ("Gardening", "Notes on the garden.", filler(3, false)),
    ]);
    let llm = Recording {
        answer_override: Some("Released in 2015 [[Widgetron]], see [[Gardening]].".into()),
        ..Default::default()
    };
    let model = LlmQuery {
        llm: &llm,
        max_output_tokens: Some(1024),
    };
    let a = block_on(w.ask(
        &model,
        "When was Widgetron released?",
        &AskOptions {
            router: Router::Model,
            ..AskOptions::default()
        },
        budget(16_384),
        None,
        &Cancel::new(),
    ))
    .unwrap();
    assert_eq!(a.routed, vec!["Widgetron"], "{a:?}");
    assert_eq!(a.hopped, vec!["Gardening"], "{a:?}");
    let keys: Vec<String> = llm.answer_blocks().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec!["Widgetron"]);
    assert_eq!(a.citations, vec!["Widgetron"]);
    assert_eq!(a.removed_citations, vec!["Gardening"]);
}

#[test]
fn the_answer_gets_the_facts_without_their_footnotes() {
    let body = "Ownership is how Rust manages memory.\n\n## Facts\n\n\
- Each value in Rust has an owner [^c1a2b3c4d5].\n\
- 所有权规则在编译时检查[^c9f8e7d6c5]。\n\
- A regex such as `[^c1a2b3c4d5]` is code and stays.\n\n\
[^c1a2b3c4d5]: \"Each value in Rust has an owner.\" — [[Understanding Ownership]]\n\
[^c9f8e7d6c5]: \"所有权规则在编译时检查。\" — [[所有权]]\n";
    let (_b, w) = wiki_of(&[("Ownership", "How Rust manages memory.", body.into())]);
    let llm = Recording::default();
    let a = ask_with(&w, &llm, "What owns a value in Rust ownership?", 1500);
    assert_eq!(a.routed, vec!["Ownership"], "{a:?}");
    let blocks = llm.answer_blocks();
    let (_, text) = &blocks[0];
    assert!(
        text.contains("- Each value in Rust has an owner.\n- 所有权规则在编译时检查。\n"),
        "{text}"
    );
    assert!(text.contains("`[^c1a2b3c4d5]` is code"), "{text}");
    // No reference outside the code, and no definition (they repeat the quotes).
    assert_eq!(text.matches("[^").count(), 1, "{text}");
    assert!(!text.contains("— [["), "{text}");
}

#[test]
fn a_routed_page_gives_its_other_passages_too_when_they_share_no_word_with_the_question() {
    // The model chose the page; "based" is not "headquarters", yet that passage is the answer.
    let body = "## Founding\n\nWidgetron was founded in 1990.\n\n\
## Headquarters\n\nIts headquarters are in Oslo.\n\n## Products\n\nIt sells gadgets.\n";
    let (_b, w) = wiki_of(&[("Widgetron", "A company founded in 1990.", body.into())]);
    let llm = Recording::default();
    let a = ask_with(
        &w,
        &llm,
        "Where is the company founded in 1990 based?",
        2000,
    );
    assert_eq!(a.routed, vec!["Widgetron"], "{a:?}");
    let (_, text) = &llm.answer_blocks()[0];
    assert!(text.contains("founded in 1990"), "{text}");
    assert!(text.contains("headquarters are in Oslo"), "{text}");
    assert!(text.contains("sells gadgets"), "{text}");
}

#[test]
fn a_question_on_an_empty_wiki_is_declined_without_a_model_call() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "empty");
    // A model that would answer from nowhere, as the small model did.
    let llm = Recording {
        answer_override: Some("The Kestrel is a 1980s aircraft designed for military use.".into()),
        ..Default::default()
    };
    let model = LlmQuery {
        llm: &llm,
        max_output_tokens: Some(1024),
    };
    let options = AskOptions {
        write_back: true,
        ..AskOptions::default()
    };
    let a = block_on(w.ask(
        &model,
        "How long does the Kestrel fly on one battery?",
        &options,
        budget(16_384),
        None,
        &Cancel::new(),
    ))
    .unwrap();
    assert!(llm.prompts.borrow().is_empty(), "no model call");
    assert!(a.declined && !a.grounded, "{a:?}");
    assert!(a.suggestions.is_empty() && a.citations.is_empty() && a.saved.is_none());
    assert_eq!(a.answer, llm_wiki::query::DECLINED_ANSWER);
    let err = block_on(w.write_back("How long does the Kestrel fly?", &a)).unwrap_err();
    assert_eq!(err.code(), "UNGROUNDED");
    assert!(block_on(w.all_pages()).unwrap().is_empty());
}

#[test]
fn an_answer_without_a_valid_citation_is_ungrounded_and_not_saved() {
    let (_b, w) = compiled();
    // Cites a page it was not given (removed) and nothing else.
    let llm = Recording {
        answer_override: Some("Widgetron came out in 2015 [[Gadget Weekly]].".into()),
        ..Default::default()
    };
    let model = LlmQuery {
        llm: &llm,
        max_output_tokens: Some(1024),
    };
    let options = AskOptions {
        write_back: true,
        ..AskOptions::default()
    };
    let pages_before = block_on(w.all_pages()).unwrap().len();
    let a = block_on(w.ask(
        &model,
        "When was Widgetron released?",
        &options,
        budget(16_384),
        None,
        &Cancel::new(),
    ))
    .unwrap();
    assert!(!a.declined && !a.grounded, "{a:?}");
    assert_eq!(a.removed_citations, ["Gadget Weekly"]);
    assert!(a.saved.is_none());
    assert_eq!(
        block_on(w.write_back("When was Widgetron released?", &a))
            .unwrap_err()
            .code(),
        "UNGROUNDED"
    );
    assert_eq!(block_on(w.all_pages()).unwrap().len(), pages_before);
    // A cited answer is grounded and saved.
    let llm = Recording::default();
    let a = ask_model(
        &w,
        &llm,
        "When was Widgetron released?",
        &options,
        budget(16_384),
    );
    assert!(a.grounded && !a.declined, "{a:?}");
    assert!(a.saved.is_some());
}
