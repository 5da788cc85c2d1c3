//! The compile pass end to end on MemoryStorage with a scripted model (Decision 14).

use std::cell::Cell;
use std::collections::BTreeMap;

use futures::executor::block_on;
use llm_wiki::clock::ManualClock;
use llm_wiki::compile::pipeline::{CompileOptions, CompileReport, LlmCompiler};
use llm_wiki::compile::scripted;
use llm_wiki::llm::{Cancel, ChatRequest, ChatResponse, FinishReason, Llm, OnToken};
use llm_wiki::model::{Claim, Contradiction, TokenUsage};
use llm_wiki::storage::memory::{MemoryBackend, MemoryStorage};
use llm_wiki::storage::{FaultInjection, OpenOptions, Storage, Store};
use llm_wiki::text::estimate_tokens;
use llm_wiki::wiki::{NewSource, Wiki};
use llm_wiki::Error;

type Override = Box<dyn Fn(&str, &str) -> Option<serde_json::Value>>;

/// A scripted endpoint: replies derived from the request; can fail its k-th call; a test can
/// override the reply of a task.
#[derive(Default)]
struct Scripted {
    calls: Cell<usize>,
    fail_at: Cell<Option<usize>>,
    overrides: Option<Override>,
}

impl Llm for Scripted {
    async fn chat(
        &self,
        req: &ChatRequest,
        _: Option<OnToken<'_>>,
        _: &Cancel,
    ) -> llm_wiki::Result<ChatResponse> {
        let n = self.calls.get() + 1;
        self.calls.set(n);
        if self.fail_at.get() == Some(n) {
            return Err(Error::BadReply(format!("injected failure at call {n}")));
        }
        let user = &req.messages.last().unwrap().content;
        let task = req.json.as_ref().map(|j| j.name.as_str()).unwrap_or("");
        if let Some(v) = self.overrides.as_ref().and_then(|o| o(task, user)) {
            let text = v.to_string();
            return Ok(ChatResponse {
                usage: TokenUsage {
                    input: 1,
                    output: 1,
                    calls: 1,
                    estimated: true,
                },
                text,
                finish: FinishReason::Stop,
                model: "scripted".into(),
            });
        }
        let value = match req.json.as_ref().map(|j| j.name.as_str()) {
            Some("extract") => scripted::extract_reply(user),
            Some("integrate") => scripted::integrate_reply(user),
            other => panic!("unexpected task {other:?}"),
        };
        let text = value.to_string();
        Ok(ChatResponse {
            usage: TokenUsage {
                input: estimate_tokens(user),
                output: estimate_tokens(&text),
                calls: 1,
                estimated: true,
            },
            text,
            finish: FinishReason::Stop,
            model: "scripted".into(),
        })
    }
}

type W = Wiki<MemoryStorage, ManualClock>;

fn open(backend: &MemoryBackend, name: &str) -> W {
    block_on(Wiki::open(
        backend,
        name,
        ManualClock::new(1_795_986_300_000),
        OpenOptions::default(),
    ))
    .unwrap()
}

const S1: &str = "# Widgetron\n\nWidgetron is a gadget made by Acme Corp.\n\n## Acme Corp\n\nAcme Corp builds widgets in Ohio. It was founded in 1990.\n\n## Widgetron\n\nWidgetron was first released in 2015.\n";
const S2: &str = "# 流量控制\n\n流量控制让生产者等待慢的消费者。\n\n## 背压\n\n背压是一种流量控制机制。它保护队列。\n\n## Acme Corp\n\nAcme Corp 也使用背压。\n";
const S3: &str = "# Widget history\n\n## Widgetron\n\nWidgetron was first released in 2016.\n";

fn add(w: &W, key: &str, text: &str) {
    block_on(w.add_source(NewSource {
        key: Some(key.into()),
        mime: "text/markdown".into(),
        content: text.into(),
        ..Default::default()
    }))
    .unwrap();
}

fn compile(w: &W, llm: &Scripted) -> llm_wiki::Result<CompileReport> {
    let model = LlmCompiler {
        llm,
        max_output_tokens: None,
        model_name: "scripted".into(),
    };
    block_on(w.compile(&model, &CompileOptions::default(), &|_| {}, &Cancel::new()))
}

/// The wiki's content: pages, claims, ledger and index.md (not the failure log, not the log).
fn content(
    w: &W,
) -> (
    BTreeMap<String, String>,
    Vec<Claim>,
    Vec<Contradiction>,
    String,
) {
    let pages = block_on(w.all_pages())
        .unwrap()
        .into_iter()
        .map(|p| (p.key.clone(), p.body))
        .collect();
    let claims: Vec<Claim> = block_on(w.storage().scan(Store::Claims, ""))
        .unwrap()
        .into_iter()
        .map(|(_, r)| serde_json::from_slice(&r.data).unwrap())
        .collect();
    let ledger: Vec<Contradiction> = block_on(w.storage().scan(Store::Ledger, ""))
        .unwrap()
        .into_iter()
        .map(|(_, r)| serde_json::from_slice(&r.data).unwrap())
        .collect();
    (pages, claims, ledger, block_on(w.index()).unwrap())
}

fn links_of(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find("[[") {
        let Some(j) = rest[i..].find("]]") else { break };
        out.push(rest[i + 2..i + j].to_string());
        rest = &rest[i + j + 2..];
    }
    out
}

fn scenario() -> (MemoryBackend, W) {
    let backend = MemoryBackend::new();
    let w = open(&backend, "scenario");
    add(&w, "notes/widgetron.md", S1);
    add(&w, "notes/流量控制.md", S2);
    add(&w, "notes/widget-history.md", S3);
    (backend, w)
}

#[test]
fn three_sources_in_english_and_chinese() {
    let (_b, w) = scenario();
    let llm = Scripted::default();
    let r = compile(&w, &llm).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    assert_eq!(
        r.compiled
            .iter()
            .map(|c| c.key.as_str())
            .collect::<Vec<_>>(),
        [
            "notes/widget-history.md",
            "notes/widgetron.md",
            "notes/流量控制.md"
        ]
    );
    assert_eq!(r.unverified, 0);
    let (pages, claims, ledger, index) = content(&w);

    assert_eq!(
        pages.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "Acme Corp",
            "Widget history",
            "Widgetron",
            "Widgetron (source)",
            "流量控制",
            "背压"
        ]
    );
    let links: BTreeMap<&str, Vec<String>> = pages
        .iter()
        .map(|(k, b)| (k.as_str(), links_of(b)))
        .collect();
    for (page, ls) in &links {
        for l in ls {
            let target = l.split(['|', '#']).next().unwrap().trim_end_matches('\\');
            assert!(pages.contains_key(target), "{page} links to missing {l}");
            assert_ne!(target, *page, "{page} links to itself");
        }
    }
    let mut got: Vec<(&str, &str)> = claims
        .iter()
        .map(|c| (c.page.as_str(), c.quote.as_str()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("Acme Corp", "Acme Corp builds widgets in Ohio."),
            ("Acme Corp", "Acme Corp 也使用背压。"),
            ("Acme Corp", "It was founded in 1990."),
            ("Acme Corp", "Widgetron is a gadget made by Acme Corp."),
            ("Widget history", "Widgetron was first released in 2016."),
            ("Widgetron", "Widgetron is a gadget made by Acme Corp."),
            ("Widgetron", "Widgetron was first released in 2015."),
            ("Widgetron", "Widgetron was first released in 2016."),
            ("Widgetron (source)", "Acme Corp builds widgets in Ohio."),
            ("Widgetron (source)", "It was founded in 1990."),
            (
                "Widgetron (source)",
                "Widgetron is a gadget made by Acme Corp."
            ),
            (
                "Widgetron (source)",
                "Widgetron was first released in 2015."
            ),
            ("流量控制", "Acme Corp 也使用背压。"),
            ("流量控制", "它保护队列。"),
            ("流量控制", "流量控制让生产者等待慢的消费者。"),
            ("流量控制", "背压是一种流量控制机制。"),
            ("背压", "Acme Corp 也使用背压。"),
            ("背压", "它保护队列。"),
            ("背压", "背压是一种流量控制机制。"),
        ]
    );
    let link_targets = |k: &str| -> Vec<&str> {
        let mut v: Vec<&str> = links[k]
            .iter()
            .map(|l| l.split('|').next().unwrap())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    assert_eq!(
        link_targets("Acme Corp"),
        ["Widgetron", "Widgetron (source)", "流量控制"]
    );
    assert_eq!(link_targets("Widget history"), ["Widgetron"]);
    assert_eq!(
        link_targets("Widgetron"),
        ["Acme Corp", "Widget history", "Widgetron (source)"]
    );
    assert_eq!(
        link_targets("Widgetron (source)"),
        ["Acme Corp", "Widgetron"]
    );
    assert_eq!(link_targets("流量控制"), ["Acme Corp"]);
    assert_eq!(link_targets("背压"), ["Acme Corp", "流量控制"]);
    // Every footnote reference has its definition and every claim cited exists.
    for (k, body) in &pages {
        for id in llm_wiki::compile::integrate::footnote_refs(body) {
            assert!(
                body.contains(&format!("[^{id}]: ")),
                "{k}: [^{id}] has no definition"
            );
            assert!(
                claims.iter().any(|c| c.id == id),
                "{k}: [^{id}] names no claim"
            );
        }
    }
    // The 2015/2016 disagreement is one open record on the Widgetron page.
    assert_eq!(ledger.len(), 1, "{ledger:#?}");
    assert_eq!(ledger[0].pages, vec!["Widgetron"]);
    let quotes: Vec<&str> = ledger[0]
        .claims
        .iter()
        .map(|id| claims.iter().find(|c| &c.id == id).unwrap().quote.as_str())
        .collect();
    assert_eq!(
        quotes,
        [
            "Widgetron was first released in 2015.",
            "Widgetron was first released in 2016."
        ]
    );
    assert!(pages["Widgetron"].contains("> [!contradiction] Sources disagree ("));
    assert!(claims.iter().all(|c| c.verified));
    // Chinese pages keep Chinese keys and link each other.
    assert!(links["背压"].iter().any(|l| l == "流量控制"));
    assert!(links["流量控制"].iter().any(|l| l == "Acme Corp"));
    assert_eq!(
        index,
        "# Index\n\n6 pages. Generated by llm-wiki from the page store on every change; edits here are overwritten.\n\
         \n## Concepts\n\n- [[背压]] — 它保护队列。\n\
         \n## Entities\n\n- [[Acme Corp]] — Acme Corp 也使用背压。\n- [[Widgetron]] — Widgetron was first released in 2015.\n\
         \n## Sources\n\n- [[Widget history]] — Widgetron was first released in 2016.\n- [[Widgetron (source)|Widgetron]] — Widgetron is a gadget made by Acme Corp.\n- [[流量控制]] — 流量控制让生产者等待慢的消费者。\n"
    );

    // Compiling again costs nothing: every source is compiled and unchanged.
    let before = llm.calls.get();
    let again = compile(&w, &llm).unwrap();
    assert!(again.compiled.is_empty());
    assert_eq!(llm.calls.get(), before);
}

/// Compiles the scenario one source at a time, in compile order, with `arm` called before the
/// first compile. When a source fails, the wiki's content must equal its content just before that
/// source. Returns how many sources failed.
fn run_with_fault(arm: impl Fn(&W, &Scripted)) -> usize {
    let (_b, w) = scenario();
    let llm = Scripted::default();
    arm(&w, &llm);
    let mut failures = 0;
    for key in [
        "notes/widget-history.md",
        "notes/widgetron.md",
        "notes/流量控制.md",
    ] {
        let before = content(&w);
        let model = LlmCompiler {
            llm: &llm,
            max_output_tokens: None,
            model_name: "scripted".into(),
        };
        let options = CompileOptions {
            sources: Some(vec![key.into()]),
            ..Default::default()
        };
        let r = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
        if !r.failed.is_empty() {
            failures += 1;
            assert_eq!(
                content(&w),
                before,
                "a failing compile of {key} changed the wiki"
            );
            let failure = block_on(w.compile_failures()).unwrap();
            assert!(
                failure.contains_key(key),
                "the failure of {key} is recorded"
            );
            let s = block_on(w.source(key)).unwrap().unwrap();
            assert!(
                matches!(
                    s.source.status,
                    llm_wiki::model::SourceStatus::Failed { .. }
                ),
                "{key} shows as failed: {:?}",
                s.source.status
            );
        }
    }
    // Whatever failed compiles on the next run, and the result equals a clean run's.
    w.storage().inject_fault(None);
    llm.fail_at.set(None);
    let r = compile(&w, &llm).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    assert!(block_on(w.compile_failures()).unwrap().is_empty());
    let (_b2, clean) = scenario();
    compile(&clean, &Scripted::default()).unwrap();
    let (pages, claims, ledger, index) = content(&w);
    let (cpages, cclaims, cledger, cindex) = content(&clean);
    assert_eq!(
        pages.keys().collect::<Vec<_>>(),
        cpages.keys().collect::<Vec<_>>()
    );
    assert_eq!(claims, cclaims);
    assert_eq!(
        ledger
            .iter()
            .map(|r| (&r.id, &r.pages, &r.claims))
            .collect::<Vec<_>>(),
        cledger
            .iter()
            .map(|r| (&r.id, &r.pages, &r.claims))
            .collect::<Vec<_>>()
    );
    // Page wording (and so one-line summaries) may differ with the order; the catalog may not.
    let catalog = |i: &str| {
        i.lines()
            .map(|l| l.split(" — ").next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(catalog(&index), catalog(&cindex));
    failures
}

#[test]
fn a_fault_at_any_llm_call_leaves_the_wiki_as_it_was() {
    let total = {
        let (_b, w) = scenario();
        let llm = Scripted::default();
        compile(&w, &llm).unwrap();
        llm.calls.get()
    };
    assert!(total >= 9, "the scenario makes {total} calls");
    for k in 1..=total {
        let failures = run_with_fault(|_, llm| llm.fail_at.set(Some(k)));
        assert_eq!(failures, 1, "fault at LLM call {k}");
    }
}

#[test]
fn a_fault_at_any_storage_write_leaves_the_wiki_as_it_was() {
    let (_b, w) = scenario();
    let base = w.storage().writes_attempted();
    compile(&w, &Scripted::default()).unwrap();
    let total = w.storage().writes_attempted() - base;
    assert!(total > 30, "the scenario writes {total} records");
    for k in 1..=total {
        let failures = run_with_fault(|w, _| {
            let base = w.storage().writes_attempted();
            w.storage()
                .inject_fault(Some(llm_wiki::storage::Fault::AtGlobalWrite(base + k)));
        });
        assert_eq!(failures, 1, "fault at write {k}");
    }
}
