//! The compile pass in the browser (`wasm-pack test --headless --chrome --firefox`): the
//! three-source scenario of `tests/compile_native.rs` (English and Chinese, one contradiction) on
//! IndexedDB, over real `fetch` to the scripted LLM server that `scripts/test.sh` starts
//! (`LLM_WIKI_TEST_ENDPOINT`, compile time). Its pages, claims, ledger and index.md must equal —
//! byte for byte — those of the same scenario on MemoryStorage with the server answering
//! in-process, whose exact values the native test pins.
#![cfg(target_arch = "wasm32")]

use llm_wiki::clock::ManualClock;
use llm_wiki::compile::pipeline::CompileOptions;
use llm_wiki::llm::config::{Config, Provider};
use llm_wiki::llm::http::FetchTransport;
use llm_wiki::llm::transport::Transport;
use llm_wiki::llm::Cancel;
use llm_wiki::scripted::server::InProcess;
use llm_wiki::storage::idb::IdbBackend;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{Backend, OpenOptions, Storage, Store};
use llm_wiki::wiki::{NewSource, Wiki};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const S1: &str = "# Widgetron\n\nWidgetron is a gadget made by Acme Corp.\n\n## Acme Corp\n\nAcme Corp builds widgets in Ohio. It was founded in 1990.\n\n## Widgetron\n\nWidgetron was first released in 2015.\n";
const S2: &str = "# 流量控制\n\n流量控制让生产者等待慢的消费者。\n\n## 背压\n\n背压是一种流量控制机制。它保护队列。\n\n## Acme Corp\n\nAcme Corp 也使用背压。\n";
const S3: &str = "# Widget history\n\n## Widgetron\n\nWidgetron was first released in 2016.\n";

fn endpoint() -> String {
    option_env!("LLM_WIKI_TEST_ENDPOINT")
        .unwrap_or("http://127.0.0.1:11435")
        .trim_end_matches('/')
        .to_string()
}

/// Pages (key → body), claims, ledger (as stored JSON) and index.md.
type Content = (Vec<(String, String)>, Vec<Vec<u8>>, Vec<Vec<u8>>, String);

async fn run<B: Backend, T: Transport>(backend: &B, name: &str, transport: T) -> Content {
    backend.delete(name).await.unwrap();
    let w = Wiki::open(
        backend,
        name,
        ManualClock::new(1_795_986_300_000),
        OpenOptions::default(),
    )
    .await
    .unwrap();
    for (key, text) in [
        ("notes/widgetron.md", S1),
        ("notes/流量控制.md", S2),
        ("notes/widget-history.md", S3),
    ] {
        w.add_source(NewSource {
            key: Some(key.into()),
            mime: "text/markdown".into(),
            content: text.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    w.set_llm_config(Config {
        provider: Provider::OpenAiCompatible,
        base_url: format!("{}/v1", endpoint()),
        model: "scripted-chat".into(),
        context_window: 16_384,
        timeout_ms: 30_000,
        ..Config::default()
    })
    .await
    .unwrap();
    let r = w
        .compile_configured(
            transport,
            &CompileOptions::default(),
            &|_| {},
            &Cancel::new(),
        )
        .await
        .unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    assert_eq!(r.compiled.len(), 3);
    let pages = w
        .all_pages()
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.key, p.body))
        .collect();
    let records = |store| {
        let w = &w;
        async move {
            w.storage()
                .scan(store, "")
                .await
                .unwrap()
                .into_iter()
                .map(|(_, r)| r.data)
                .collect::<Vec<_>>()
        }
    };
    let claims = records(Store::Claims).await;
    let ledger = records(Store::Ledger).await;
    let index = w.index().await.unwrap();
    w.storage().close();
    backend.delete(name).await.unwrap();
    (pages, claims, ledger, index)
}

#[wasm_bindgen_test]
async fn three_sources_compile_on_indexeddb_over_fetch_as_they_do_natively() {
    let browser = run(
        &IdbBackend::new(),
        "web-compile-scenario",
        FetchTransport::new(),
    )
    .await;
    let reference = run(
        &MemoryBackend::new(),
        "web-compile-reference",
        InProcess::new(vec![]),
    )
    .await;
    let keys: Vec<&str> = browser.0.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "Acme Corp",
            "Widget history",
            "Widgetron",
            "Widgetron (source)",
            "流量控制",
            "背压"
        ]
    );
    assert_eq!(browser.2.len(), 1, "one contradiction: 2015 vs 2016");
    assert!(browser.1.len() >= 6, "{} claims", browser.1.len());
    assert_eq!(browser, reference);
}
