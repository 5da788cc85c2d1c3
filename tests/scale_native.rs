//! The real-size suite's invariants, natively on the in-memory store (issue 20): the toolchain's
//! own docs (`bench/scale-sources.txt`, converted as the app converts them by
//! `scripts/scale-corpus.mjs` into `target/scale-corpus/`) added and compiled one at a time —
//! 100 sources offline and 30 through the scripted endpoint — and after every source:
//!
//! - no page passes the hard limit (`model::limits`: bytes and facts);
//! - no block appears twice on a page (the definition in `tests/common`, checked independently
//!   of the crate's own block parser);
//! - the page table equals the one the records give;
//! - the commit read at most three times the page bodies it wrote (and never every page).
//!
//! `scripts/test.sh` converts the corpus first and sets `LLM_WIKI_SCALE_REQUIRED=1`, so a missing
//! corpus fails there; a plain `cargo test` without it says so and checks nothing else.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use futures::executor::block_on;
use llm_wiki::compile::model::LlmCompiler;
use llm_wiki::compile::pipeline::{CompileOptions, CompileReport};
use llm_wiki::llm::Cancel;
use llm_wiki::scripted::ScriptedLlm;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{Storage, Store};
use llm_wiki::wiki::NewSource;

use common::{assert_within_hard_limit, claims_of, duplicate_blocks, open, W};

struct Source {
    key: String,
    title: String,
    text: String,
}

/// The first `n` sources of the converted corpus, or `None` when it is not there.
fn corpus(n: usize) -> Option<Vec<Source>> {
    let dir = std::env::var("LLM_WIKI_SCALE_CORPUS")
        .unwrap_or_else(|_| format!("{}/target/scale-corpus", env!("CARGO_MANIFEST_DIR")));
    let manifest = match std::fs::read_to_string(format!("{dir}/manifest.json")) {
        Ok(m) => m,
        Err(e) => {
            let required = std::env::var("LLM_WIKI_SCALE_REQUIRED").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "the real-size corpus is missing ({dir}/manifest.json: {e}): run node scripts/scale-corpus.mjs"
            );
            eprintln!(
                "skipped: no real-size corpus in {dir} (node scripts/scale-corpus.mjs makes it)"
            );
            return None;
        }
    };
    let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let sources: Vec<Source> = m["sources"]
        .as_array()
        .unwrap()
        .iter()
        .take(n)
        .map(|s| Source {
            key: s["key"].as_str().unwrap().to_string(),
            title: s["title"].as_str().unwrap().to_string(),
            text: std::fs::read_to_string(format!("{dir}/{}", s["file"].as_str().unwrap()))
                .unwrap(),
        })
        .collect();
    assert_eq!(sources.len(), n, "the corpus has fewer than {n} sources");
    Some(sources)
}

/// Adds and compiles every source one at a time with `compile`, checking the invariants after
/// each. Returns the pages read and written by the commits, summed.
fn run(name: &str, sources: &[Source], compile: impl Fn(&W) -> CompileReport) -> (u64, u64) {
    let backend = MemoryBackend::new();
    let w = open(&backend, name);
    let (mut read, mut written) = (0, 0);
    for (i, s) in sources.iter().enumerate() {
        let context = format!("{name}, source {} ({})", i + 1, s.key);
        block_on(w.add_source(NewSource {
            key: Some(s.key.clone()),
            title: Some(s.title.clone()),
            mime: "text/markdown".into(),
            content: s.text.clone(),
            ..Default::default()
        }))
        .unwrap();
        let before = w.io_stats();
        let report = compile(&w);
        let io = w.io_stats().since(&before).of(Store::Pages);
        assert!(report.failed.is_empty(), "{context}: {:?}", report.failed);
        let pages = block_on(w.all_pages()).unwrap();
        // Reads proportional to the change: at most 3x the bodies written, never every page.
        assert!(
            io.reads <= 3 * io.writes.max(1),
            "{context}: the commit read {} page records to write {}",
            io.reads,
            io.writes
        );
        if pages.len() > 60 {
            assert!(
                io.reads < pages.len() as u64 / 2,
                "{context}: read {} of {} pages",
                io.reads,
                pages.len()
            );
        }
        read += io.reads;
        written += io.writes;
        let claims = claims_of(&w);
        assert_within_hard_limit(&pages, &claims, &context);
        for p in &pages {
            let dups = duplicate_blocks(&p.body);
            assert!(dups.is_empty(), "{context}: {} repeats {dups:?}", p.key);
        }
        // The ledger names only claims and pages that exist.
        let claim_ids: std::collections::BTreeSet<&str> =
            claims.iter().map(|c| c.id.as_str()).collect();
        let page_keys: std::collections::BTreeSet<&str> =
            pages.iter().map(|p| p.key.as_str()).collect();
        for (k, r) in block_on(w.storage().scan(Store::Ledger, "")).unwrap() {
            let r: serde_json::Value = serde_json::from_slice(&r.data).unwrap();
            for c in r["claims"].as_array().unwrap() {
                let c = c.as_str().unwrap();
                assert!(
                    claim_ids.contains(c),
                    "{context}: record {k} names claim {c}, which is not stored"
                );
            }
            for p in r["pages"].as_array().unwrap() {
                let p = p.as_str().unwrap();
                assert!(
                    page_keys.contains(p),
                    "{context}: record {k} names page {p}, which does not exist"
                );
            }
        }
        let diff = block_on(w.page_table_differences()).unwrap();
        assert!(
            diff.is_empty(),
            "{context}: the page table is off: {diff:#?}"
        );
    }
    (read, written)
}

#[test]
fn a_hundred_real_sources_compile_offline_within_the_invariants() {
    let Some(sources) = corpus(100) else { return };
    let (read, written) = run("offline", &sources, |w| {
        let model = block_on(w.offline_compiler()).unwrap();
        let options = CompileOptions {
            context_window: 10_000_000,
            ..CompileOptions::default()
        };
        block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap()
    });
    eprintln!("offline: the commits read {read} page records and wrote {written}");
}

#[test]
fn thirty_real_sources_compile_through_the_scripted_endpoint_within_the_invariants() {
    let Some(sources) = corpus(30) else { return };
    let llm = ScriptedLlm::new();
    let (read, written) = run("scripted", &sources, |w| {
        let model = LlmCompiler {
            llm: &llm,
            max_output_tokens: None,
            model_name: "scripted".into(),
        };
        let options = CompileOptions {
            context_window: 16_384,
            ..CompileOptions::default()
        };
        block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap()
    });
    eprintln!("scripted: the commits read {read} page records and wrote {written}");
}
