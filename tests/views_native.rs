//! What the app and the extension show beside the pages, computed by the core (`src/views.rs`):
//! an answer rendered like a page body, the ledger's open contradiction records of pages, and
//! recall for a text. These replace the JS copies that `www/app.js` (`answerHtml`) and
//! `www/extension/clipper.js` (callout parsing, its own stop list) used to carry.
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use llm_wiki::compile::model::LlmCompiler;
use llm_wiki::compile::pipeline::CompileOptions;
use llm_wiki::llm::{Cancel, ChatRequest, ChatResponse, FinishReason, Llm, OnToken};
use llm_wiki::model::TokenUsage;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::text::estimate_tokens;
use llm_wiki::views::RecallOptions;

mod common;
use common::{add, open, W};

/// The scripted endpoint's derivation (Decision 14), answered in-process.
struct Scripted;

impl Llm for Scripted {
    async fn chat(
        &self,
        req: &ChatRequest,
        _: Option<OnToken<'_>>,
        _: &Cancel,
    ) -> llm_wiki::Result<ChatResponse> {
        let text = llm_wiki::scripted::reply(req).text;
        Ok(ChatResponse {
            usage: TokenUsage {
                input: estimate_tokens(&req.messages.last().unwrap().content),
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

const S1: &str = "# Widgetron\n\nWidgetron is a gadget made by Acme Corp.\n\n## Acme Corp\n\nAcme Corp builds widgets in Ohio. It was founded in 1990.\n\n## Widgetron\n\nWidgetron was first released in 2015.\n";
const S2: &str = "# 流量控制\n\n流量控制让生产者等待慢的消费者。\n\n## 背压\n\n背压是一种流量控制机制。它保护队列。\n\n## Acme Corp\n\nAcme Corp 也使用背压。\n";
const S3: &str = "# Widget history\n\n## Widgetron\n\nWidgetron was first released in 2016.\n";

/// The three-source scenario of `tests/compile_native.rs`, compiled: one open contradiction
/// record (2015 against 2016) on the Widgetron page.
fn compiled() -> (MemoryBackend, W) {
    let backend = MemoryBackend::new();
    let w = open(&backend, "views");
    add(&w, "notes/widgetron.md", S1);
    add(&w, "notes/流量控制.md", S2);
    add(&w, "notes/widget-history.md", S3);
    let model = LlmCompiler {
        llm: &Scripted,
        max_output_tokens: None,
        model_name: "scripted".into(),
    };
    let r =
        block_on(w.compile(&model, &CompileOptions::default(), &|_| {}, &Cancel::new())).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    (backend, w)
}

#[test]
fn open_contradictions_are_the_ledger_records_the_callouts_show() {
    let (_b, w) = compiled();
    let keys = |ks: &[&str]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    let open =
        block_on(w.open_contradictions(&keys(&["Acme Corp", "Widgetron", "Widgetron"]))).unwrap();
    assert_eq!(open.len(), 1, "{open:#?}");
    let x = &open[0];
    assert_eq!(
        x.pages.iter().map(|p| p.key.as_str()).collect::<Vec<_>>(),
        ["Widgetron"]
    );
    assert_eq!(x.pages[0].title, "Widgetron");
    let sides: Vec<(&str, &str)> = x
        .sides
        .iter()
        .map(|s| (s.title.as_str(), s.text.as_str()))
        .collect();
    assert_eq!(sides.len(), 2, "{sides:?}");
    assert!(
        sides.iter().any(|(_, t)| t.contains("2015"))
            && sides.iter().any(|(_, t)| t.contains("2016")),
        "{sides:?}"
    );
    // The page shows the same record as its callout: id, description and each side's claim.
    let body = block_on(w.page("Widgetron")).unwrap().unwrap().body;
    assert!(
        body.contains(&format!(
            "> [!contradiction] Sources disagree ({})\n> {}\n",
            x.id, x.description
        )),
        "{body}"
    );
    for s in &x.sides {
        assert!(
            body.contains(&format!(": {} [^{}]", s.text, s.claim)),
            "{body}"
        );
    }
    // Pages without records, and unknown keys, have none.
    assert!(
        block_on(w.open_contradictions(&keys(&["Acme Corp", "no such page"])))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn an_answer_renders_like_a_page_body() {
    let (_b, w) = compiled();
    let md = "Widgetron is a gadget [[widgetron|the gadget]], see [[Acme Corp]] and [[Nowhere]].\nIt was **released** <script>alert(1)</script>\n\n- one\n- two [x](javascript:alert(1))";
    let v = block_on(w.render_markdown(md)).unwrap();
    // Citations resolve as in a page (case-insensitively, to the page's key); missing ones are
    // marked, not linked.
    assert!(
        v.html.contains(
            r##"<a class="wikilink" href="#/page/Widgetron" data-page="Widgetron">the gadget</a>"##
        ),
        "{}",
        v.html
    );
    assert!(
        v.html.contains(r##"href="#/page/Acme%20Corp""##),
        "{}",
        v.html
    );
    assert!(
        v.html.contains(r#"<span class="wikilink missing""#),
        "{}",
        v.html
    );
    assert_eq!(v.missing, ["Nowhere"]);
    // Markdown is markdown: emphasis, one paragraph across a soft break, a list; raw HTML and
    // script URLs are neutralised.
    assert!(v.html.contains("<strong>released</strong>"), "{}", v.html);
    assert!(
        v.html.contains("<ul>") && v.html.contains("<li>one</li>"),
        "{}",
        v.html
    );
    assert!(
        v.html.contains("&lt;script&gt;") && !v.html.contains("<script"),
        "{}",
        v.html
    );
    assert!(!v.html.contains("javascript:"), "{}", v.html);
}

#[test]
fn recall_finds_the_pages_about_a_text_and_their_open_contradictions() {
    let (_b, w) = compiled();
    let text = "# Widgetron release\n\nWidgetron, the gadget Acme Corp makes, was first released in 2015; Acme Corp builds widgets in Ohio.\n";
    let r = block_on(w.recall("Widgetron release", text, &RecallOptions::default())).unwrap();
    assert!(
        r.query
            .starts_with("Widgetron release Widgetron, the gadget"),
        "{}",
        r.query
    );
    let keys: Vec<&str> = r.pages.iter().map(|p| p.key.as_str()).collect();
    assert!(keys.contains(&"Widgetron"), "{keys:?}");
    assert!(
        !keys.iter().any(|k| *k == "流量控制" || *k == "背压"),
        "{keys:?}"
    );
    let widgetron = r.pages.iter().find(|p| p.key == "Widgetron").unwrap();
    assert_eq!(
        widgetron.summary,
        block_on(w.page("Widgetron")).unwrap().unwrap().summary
    );
    assert_eq!(r.contradictions.len(), 1, "{:#?}", r.contradictions);
    assert_eq!(r.contradictions[0].pages[0].key, "Widgetron");

    // A text sharing only function words (and numbers) with the wiki recalls nothing.
    let common = "# Notes\n\nIt was first in the 2015 and it is by the one that was in it.\n";
    let r = block_on(w.recall("Notes", common, &RecallOptions::default())).unwrap();
    assert!(r.pages.is_empty(), "{:#?}", r.pages);
    assert!(r.contradictions.is_empty());

    // CJK: bigrams are topic terms, single characters are not.
    let zh = "# 背压\n\n背压是流量控制的一种机制，它让生产者等待消费者，保护队列。\n";
    let r = block_on(w.recall("背压", zh, &RecallOptions::default())).unwrap();
    let keys: Vec<&str> = r.pages.iter().map(|p| p.key.as_str()).collect();
    assert!(
        keys.contains(&"背压") || keys.contains(&"流量控制"),
        "{keys:?}"
    );
    assert!(!keys.contains(&"Widgetron"), "{keys:?}");
}
