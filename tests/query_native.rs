//! Query: routing, cited answers, citation checks, write-back, offline extractive answers, and a
//! 3000-page wiki whose index.md does not fit the context (field cases F31a, F32).

use std::cell::{Cell, RefCell};

use futures::executor::block_on;
use llm_wiki::clock::ManualClock;
use llm_wiki::compile::pipeline::{CompileOptions, LlmCompiler};
use llm_wiki::llm::scripted::{reply, ScriptedLlm};
use llm_wiki::llm::{Cancel, ChatRequest, ChatResponse, FinishReason, Llm, OnToken};
use llm_wiki::model::{PageKind, TokenUsage};
use llm_wiki::query::{
    AskBudget, AskOptions, LlmQuery, OfflineQuery, RouteMethod, Turn, EXTRACTIVE_NOTE,
};
use llm_wiki::storage::memory::{MemoryBackend, MemoryStorage};
use llm_wiki::storage::{Batch, Expect, OpenOptions, Storage, Store};
use llm_wiki::text::{estimate_tokens, TokenEstimator};
use llm_wiki::wiki::{NewSource, Wiki};

type W = Wiki<MemoryStorage, ManualClock>;

fn open(backend: &MemoryBackend) -> W {
    block_on(Wiki::open(
        backend,
        "q",
        ManualClock::new(1_795_986_300_000),
        OpenOptions::default(),
    ))
    .unwrap()
}

fn add(w: &W, key: &str, text: &str) {
    block_on(w.add_source(NewSource {
        key: Some(key.into()),
        mime: "text/markdown".into(),
        content: text.into(),
        ..Default::default()
    }))
    .unwrap();
}

fn compiled() -> (MemoryBackend, W) {
    let backend = MemoryBackend::new();
    let w = open(&backend);
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

/// Records the prompts it is sent and answers like the scripted endpoint, or with an override.
#[derive(Default)]
struct Recording {
    prompts: RefCell<Vec<ChatRequest>>,
    answer_override: Option<String>,
    largest: Cell<u64>,
}

impl Llm for Recording {
    async fn chat(
        &self,
        req: &ChatRequest,
        on_token: Option<OnToken<'_>>,
        _: &Cancel,
    ) -> llm_wiki::Result<ChatResponse> {
        self.prompts.borrow_mut().push(req.clone());
        let size: u64 = estimate_tokens(&req.system)
            + req
                .messages
                .iter()
                .map(|m| estimate_tokens(&m.content))
                .sum::<u64>();
        self.largest.set(self.largest.get().max(size));
        let text = match (&self.answer_override, &req.json) {
            (Some(a), None) => a.clone(),
            _ => reply(req).text,
        };
        if let Some(f) = on_token {
            for chunk in text.as_bytes().chunks(7) {
                f(&String::from_utf8_lossy(chunk));
            }
        }
        Ok(ChatResponse {
            text,
            usage: TokenUsage {
                input: size,
                output: 10,
                calls: 1,
                estimated: true,
            },
            finish: FinishReason::Stop,
            model: "rec".into(),
        })
    }
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
    let model = LlmQuery {
        llm: &llm,
        max_output_tokens: Some(1024),
    };
    let a = block_on(w.ask(
        &model,
        "背压是什么？",
        &AskOptions::default(),
        budget(16_384),
        None,
        &Cancel::new(),
    ))
    .unwrap();
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
    let model = LlmQuery {
        llm: &llm,
        max_output_tokens: Some(1024),
    };
    let a = block_on(w.ask(
        &model,
        "Widgetron release",
        &AskOptions::default(),
        budget(16_384),
        None,
        &Cancel::new(),
    ))
    .unwrap();
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
    let model = LlmQuery {
        llm: &llm,
        max_output_tokens: Some(1024),
    };
    let a = block_on(w.ask(
        &model,
        "What is the capital of Peru?",
        &AskOptions::default(),
        budget(16_384),
        None,
        &Cancel::new(),
    ))
    .unwrap();
    assert!(a.citations.is_empty());
    assert!(a.answer.contains("do not answer"), "{}", a.answer);
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
    let w = open(&backend);
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
        &AskOptions::default(),
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
