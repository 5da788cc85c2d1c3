//! Native figures for the source-passage index (issue 23, item 1) on the real-size suite (the 383
//! toolchain docs of `target/scale-corpus`, made by `node scripts/scale-corpus.mjs`, or
//! `LLM_WIKI_SCALE_CORPUS=<dir>`): every source added and compiled offline, one at a time, to one
//! wiki, then
//!
//! - passages per source (mean, p50, max) and the passage index's size;
//! - the stored index's bytes, and its cold open (decoding every record, `SearchIndex::from_records`)
//!   with and without the `passages/…` records;
//! - BM25 top-10 p50 / p95 over 200 queries (titles of the sources) for pages only and with
//!   passages, on the same index;
//! - what `embed_pages` needs per source once passages are embedded too: calls (batch 32) and
//!   input tokens (Decision 12 estimates, a scripted embedder).
//!
//! Run: `cargo run --release --features test-support --example passage_bench`. Wall-clock
//! timings on whatever machine runs it; say which when you quote them.

use std::time::Instant;

use futures::executor::block_on;
use llm_wiki::clock::ManualClock;
use llm_wiki::compile::pipeline::CompileOptions;
use llm_wiki::llm::Cancel;
use llm_wiki::scripted::ScriptedEmbedder;
use llm_wiki::search::{SearchIndex, SearchMode, SearchOptions};
use llm_wiki::search_ops::EmbedOptions;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{OpenOptions, Storage, Store};
use llm_wiki::wiki::{NewSource, Wiki};

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_secs_f64() * 1000.0)
}

fn main() {
    let dir = std::env::var("LLM_WIKI_SCALE_CORPUS")
        .unwrap_or_else(|_| format!("{}/target/scale-corpus", env!("CARGO_MANIFEST_DIR")));
    let manifest = std::fs::read_to_string(format!("{dir}/manifest.json"))
        .expect("no real-size corpus: run node scripts/scale-corpus.mjs");
    let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let sources: Vec<(String, String, String)> = m["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["key"].as_str().unwrap().to_string(),
                s["title"].as_str().unwrap().to_string(),
                std::fs::read_to_string(format!("{dir}/{}", s["file"].as_str().unwrap())).unwrap(),
            )
        })
        .collect();
    let bytes: usize = sources.iter().map(|s| s.2.len()).sum();
    println!(
        "real-size suite: {} sources, {:.1} MB of markdown",
        sources.len(),
        bytes as f64 / 1e6
    );

    let backend = MemoryBackend::new();
    let w = block_on(Wiki::open(
        &backend,
        "passages",
        ManualClock::new(1_795_986_300_000),
        OpenOptions::default(),
    ))
    .unwrap();
    let mut add_ms = Vec::new();
    for (key, title, text) in &sources {
        let (_, ms) = timed(|| {
            block_on(w.add_source(NewSource {
                key: Some(key.clone()),
                title: Some(title.clone()),
                mime: "text/markdown".into(),
                content: text.clone(),
                ..Default::default()
            }))
            .unwrap()
        });
        add_ms.push(ms);
        // Compiled offline one at a time, as the real-size suite does: the pages beside them.
        let model = block_on(w.offline_compiler()).unwrap();
        let options = CompileOptions {
            context_window: 10_000_000,
            ..CompileOptions::default()
        };
        block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
    }
    add_ms.sort_by(f64::total_cmp);
    let index = block_on(w.search_index()).unwrap();
    let mut per: Vec<usize> = sources
        .iter()
        .map(|(k, _, _)| index.source_passage_keys(k).len())
        .collect();
    per.sort();
    let n = index.passage_count();
    println!(
        "passages: {n} in all; per source mean {:.1}, p50 {}, max {}",
        n as f64 / sources.len() as f64,
        per[per.len() / 2],
        per.last().unwrap()
    );
    println!(
        "addSource (offline embedding of the new passages included): p50 {:.1} ms, p95 {:.1} ms",
        pct(&add_ms, 0.5),
        pct(&add_ms, 0.95)
    );

    // Stored records, and a cold open with and without the passages' records.
    let records = block_on(w.storage().scan(Store::Search, "")).unwrap();
    let all: Vec<(&str, &[u8])> = records
        .iter()
        .filter(|(k, _)| k != "op")
        .map(|(k, r)| (k.as_str(), r.data.as_slice()))
        .collect();
    let pages_only: Vec<(&str, &[u8])> = all
        .iter()
        .copied()
        .filter(|(k, _)| !k.starts_with("passages/"))
        .collect();
    let size = |rs: &[(&str, &[u8])]| rs.iter().map(|(_, b)| b.len()).sum::<usize>();
    let open = |rs: &[(&str, &[u8])]| {
        let mut times = Vec::new();
        for _ in 0..7 {
            let (idx, ms) = timed(|| SearchIndex::from_records(rs.iter().copied()).unwrap());
            drop(idx);
            times.push(ms);
        }
        times.sort_by(f64::total_cmp);
        times[3]
    };
    println!(
        "index bytes: {:.2} MB with passages, {:.2} MB pages only ({} pages)",
        size(&all) as f64 / 1e6,
        size(&pages_only) as f64 / 1e6,
        index.len()
    );
    println!(
        "cold open (decode, median of 7): {:.1} ms with passages, {:.1} ms pages only",
        open(&all),
        open(&pages_only)
    );

    // BM25 top-10: pages only, and pages + passages, on the same index.
    let queries: Vec<String> = sources
        .iter()
        .step_by((sources.len() / 200).max(1))
        .map(|(_, t, _)| t.clone())
        .take(200)
        .collect();
    for passages in [false, true] {
        let o = SearchOptions {
            k: 10,
            mode: SearchMode::Bm25,
            explain: false,
            passages,
            ..Default::default()
        };
        let mut times: Vec<f64> = queries
            .iter()
            .map(|q| timed(|| index.search(q, &o)).1)
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "BM25 top-10, {}: p50 {:.3} ms, p95 {:.3} ms ({} queries)",
            if passages {
                "pages + passages"
            } else {
                "pages only"
            },
            pct(&times, 0.5),
            pct(&times, 0.95),
            queries.len()
        );
    }

    // What an endpoint embedding costs per source once passages are embedded too.
    let embedder = ScriptedEmbedder::new("scripted-embed-384");
    let options = EmbedOptions {
        confirm: true,
        batch_size: 32,
    };
    let (report, ms) =
        timed(|| block_on(w.embed_pages(&embedder, &options, &|_| {}, &Cancel::new())).unwrap());
    println!(
        "embedPages (batch 32): {} pages + {} passages, {} calls, {} input tokens: {:.2} calls and {:.0} tokens per source; {:.0} ms here",
        report.embedded,
        report.passages_embedded,
        embedder.calls(),
        report.usage.input,
        embedder.calls() as f64 / sources.len() as f64,
        report.usage.input as f64 / sources.len() as f64,
        ms
    );
}
