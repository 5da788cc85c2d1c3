//! Native micro-benchmark of the search core (the browser benchmark against MiniSearch is a
//! later issue). Run: `cargo run --release --example search_bench [-- --quick | --large]`.
//!
//! Prints, for synthetic Zipf text (1k and 10k pages): BM25 build time, query p50/p95 with
//! MaxScore and exhaustively, heap memory, record size, cold open; and for 384-d vectors (random
//! and clustered, 10k; 50k with `--large`): exact-scan and HNSW query p50/p95, HNSW build time,
//! recall@10. Timings are wall-clock on whatever machine runs it; say which when you quote them.
//!
//! One text size alone: `-- --bm25 N` (N pages, 50k-word vocabulary).
//!
//! The tokenizer alone: `-- --tokenizer` — `for_each_token` over the Chinese texts of
//! `tests/fixtures/zh/` (Simplified, Traditional and Cantonese, with some English) repeated to
//! about 2 MB, best of 7 rounds, in ns per character and MB/s.
//!
//! One vector size alone: `-- --vectors N [--dim D] [--random] [--heuristic] [--ef E] [--efc C]` — also
//! prints the graph's distance evaluations per query and "cost/eval ÷ cost/row" (graph time per
//! distance evaluation over exact-scan time per row: the figure behind
//! `vectors::GRAPH_EVAL_COST`), measured on a graph built without the cost check.

use std::time::Instant;

use llm_wiki::search::bm25::{Bm25Index, Bm25Params, DocFields};
use llm_wiki::search::vectors::{distance_evaluations, GraphBuildOptions, HnswParams, VectorStore};
use llm_wiki::search::{SearchIndex, SearchMode, SearchOptions};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Zipf(s = 1) over `n` ranks by inverse-CDF on the harmonic approximation.
    fn zipf(&mut self, n: usize) -> usize {
        let h = (n as f64).ln() + 0.5772;
        let r = (self.unit() * h - 0.5772).exp();
        (r as usize).min(n - 1)
    }
    fn f(&mut self) -> f32 {
        (self.unit() * 2.0 - 1.0) as f32
    }
}

/// A pseudo-word for rank `r`: short for frequent ranks, like natural language.
fn word(r: usize) -> String {
    const SYL: [&str; 16] = [
        "ka", "to", "ri", "mu", "se", "na", "lo", "pe", "di", "ga", "vo", "zu", "be", "xi", "ho",
        "ne",
    ];
    let mut s = String::new();
    let mut x = r + 1;
    while x > 0 {
        s.push_str(SYL[x % 16]);
        x /= 16;
    }
    s
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let out = f();
    (out, t.elapsed().as_secs_f64() * 1000.0)
}

fn bench_bm25(n: usize, vocab: usize, words: usize, queries: usize) {
    let mut rng = Rng(0x5eed ^ n as u64);
    let pages: Vec<(String, String, String)> = (0..n)
        .map(|i| {
            let title = (0..3)
                .map(|_| word(rng.zipf(vocab)))
                .collect::<Vec<_>>()
                .join(" ");
            let len = words / 2 + (rng.next() as usize % words);
            let body = (0..len)
                .map(|_| word(rng.zipf(vocab)))
                .collect::<Vec<_>>()
                .join(" ");
            (format!("page-{i}"), title, body)
        })
        .collect();
    let text_mb = pages.iter().map(|p| p.1.len() + p.2.len()).sum::<usize>() as f64 / 1e6;
    let (idx, build_ms) = time(|| {
        let mut idx = SearchIndex::default();
        idx.upsert_many(pages.iter().map(|(k, t, b)| {
            (
                k.as_str(),
                DocFields {
                    title: t,
                    aliases: &[],
                    body: b,
                },
            )
        }));
        idx
    });
    // Incremental: one page at a time into a plain BM25 index (merges included).
    let (_, incr_ms) = time(|| {
        let mut b = Bm25Index::new(Bm25Params::default());
        for (i, (_, t, body)) in pages.iter().enumerate().take(n.min(2000)) {
            b.upsert(
                i as u32,
                &DocFields {
                    title: t,
                    aliases: &[],
                    body,
                },
            );
        }
    });
    let qs: Vec<String> = (0..queries)
        .map(|i| {
            let terms = 1 + i % 3;
            (0..terms)
                .map(|_| word(rng.zipf(vocab) / 2))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let opts = SearchOptions {
        k: 10,
        mode: SearchMode::Bm25,
        explain: false,
        ..SearchOptions::default()
    };
    let mut pruned: Vec<f64> = Vec::new();
    let mut full: Vec<f64> = Vec::new();
    for q in &qs {
        let (_, ms) = time(|| idx.search(q, &opts));
        pruned.push(ms);
        let (_, ms) = time(|| idx.bm25().search_exhaustive(q, 10));
        full.push(ms);
    }
    let recs = idx.to_records();
    let bytes: usize = recs.iter().map(|r| r.1.len()).sum();
    // Best of three opens (the first also pays for page faults on fresh allocations).
    let open_ms = (0..std::env::var("OPEN_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3))
        .map(|_| {
            time(|| {
                SearchIndex::from_records(recs.iter().map(|(k, v)| (k.as_str(), v.as_slice())))
                    .unwrap()
            })
            .1
        })
        .fold(f64::INFINITY, f64::min);
    println!(
        "bm25 {n:>6} pages ({text_mb:.1} MB text, {} terms): build {build_ms:.0} ms (incremental {} pages: {incr_ms:.0} ms) | top-10 p50 {:.3} ms p95 {:.3} ms (exhaustive p50 {:.3} p95 {:.3}) | heap {:.1} MB | records {:.1} MB | open {open_ms:.1} ms",
        idx.bm25().term_count(),
        n.min(2000),
        percentile(&mut pruned, 0.5),
        percentile(&mut pruned, 0.95),
        percentile(&mut full, 0.5),
        percentile(&mut full, 0.95),
        idx.bm25().heap_bytes() as f64 / 1e6,
        bytes as f64 / 1e6,
    );
}

fn bench_vectors(n: usize, dim: usize, clustered: bool, params: HnswParams) {
    let mut rng = Rng(0xfeed ^ n as u64 ^ u64::from(clustered));
    let centres: Vec<Vec<f32>> = (0..(n / 100).max(10))
        .map(|_| (0..dim).map(|_| rng.f()).collect())
        .collect();
    let gen = |rng: &mut Rng| -> Vec<f32> {
        if clustered {
            let c = &centres[rng.next() as usize % centres.len()];
            c.iter().map(|x| x + 0.4 * rng.f()).collect()
        } else {
            (0..dim).map(|_| rng.f()).collect()
        }
    };
    let mut store = VectorStore::new("bench", dim, params);
    for i in 0..n {
        let v = gen(&mut rng);
        store.put(i as u32, &v).unwrap();
    }
    let queries: Vec<Vec<f32>> = (0..200).map(|_| gen(&mut rng)).collect();
    let mut exact_ms: Vec<f64> = Vec::new();
    let mut truth = Vec::new();
    for q in &queries {
        let (hits, ms) = time(|| store.search_exact(q, 10).unwrap());
        exact_ms.push(ms);
        truth.push(hits.into_iter().map(|h| h.0).collect::<Vec<_>>());
    }
    // The product's verdict first, then (for the timing figures) a graph without the cost check.
    let (product, build_ms) = time(|| store.rebuild_with_graph());
    if product.bytes.is_none() {
        store.rebuild_with_graph_using(GraphBuildOptions {
            require_cheaper: false,
        });
    }
    let mut hnsw_ms: Vec<f64> = Vec::new();
    let mut found = 0;
    let evals_before = distance_evaluations();
    for (q, t) in queries.iter().zip(&truth) {
        let (hits, ms) = time(|| store.search(q, 10).unwrap());
        hnsw_ms.push(ms);
        found += hits.iter().filter(|h| t.contains(&h.0)).count();
    }
    let evals = (distance_evaluations() - evals_before) as f64 / queries.len() as f64;
    let recall = found as f64 / (10 * queries.len()) as f64;
    let (e50, e95) = (
        percentile(&mut exact_ms, 0.5),
        percentile(&mut exact_ms, 0.95),
    );
    let (h50, h95) = (
        percentile(&mut hnsw_ms, 0.5),
        percentile(&mut hnsw_ms, 0.95),
    );
    println!(
        "vectors {n:>6} × {dim} {:<9} ef {:>3}/{:>3}{} → product: {:?} (ef {}, recall {:.3}, {:.0} evals/query) | measured graph ef {}: exact p50 {e50:.3} ms p95 {e95:.3} | hnsw p50 {h50:.3} ms p95 {h95:.3} ({:.2}× exact) recall@10 {recall:.3} | {evals:.0} evals/query, cost/eval ÷ cost/row {:.2} | product build+calibrate {:.1} s | heap {:.0} MB",
        if clustered { "clustered" } else { "random" },
        params.ef_construction,
        params.ef_search,
        if params.heuristic { " heuristic" } else { "" },
        product.verdict,
        product.ef_search,
        product.recall,
        product.evaluations,
        store.graph_ef_search().map_or("none".to_string(), |ef| ef.to_string()),
        h50 / e50,
        (h50 / evals) / (e50 / n as f64),
        build_ms / 1000.0,
        store.heap_bytes() as f64 / 1e6,
    );
}

/// `for_each_token` over the Chinese fixtures (see the module docs).
fn bench_tokenizer() {
    use llm_wiki::search::tokenizer::for_each_token;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/zh");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("tests/fixtures/zh")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md") && !p.ends_with("README.md"))
        .collect();
    paths.sort();
    let bodies: Vec<String> = paths
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("fixture"))
        .collect();
    let one: usize = bodies.iter().map(String::len).sum();
    let reps = (2_000_000 / one).max(1);
    let bytes = one * reps;
    let chars = reps * bodies.iter().map(|b| b.chars().count()).sum::<usize>();
    let mut best = f64::MAX;
    let mut tokens = 0usize;
    for _ in 0..7 {
        let ((), ms) = time(|| {
            tokens = 0;
            for _ in 0..reps {
                for body in &bodies {
                    for_each_token(body, |t| tokens += t.len());
                }
            }
        });
        best = best.min(ms);
    }
    println!(
        "tokenizer: {:.2} MB, {chars} chars of {} fixtures: best of 7 {best:.1} ms = {:.1} ns/char, {:.1} MB/s ({tokens} token bytes)",
        bytes as f64 / 1e6,
        paths.len(),
        best * 1e6 / chars as f64,
        bytes as f64 / 1e3 / best,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<usize>().ok())
    };
    let mut params = HnswParams::default();
    if let Some(v) = arg("--efc") {
        params.ef_construction = v as u32;
    }
    if let Some(v) = arg("--ef") {
        params.ef_search = v as u32;
    }
    params.heuristic = args.iter().any(|a| a == "--heuristic");
    if args.iter().any(|a| a == "--tokenizer") {
        bench_tokenizer();
        return;
    }
    if let Some(n) = arg("--bm25") {
        bench_bm25(n, 50_000, 300, 500);
        return;
    }
    if let Some(n) = arg("--vectors") {
        let clustered = !args.iter().any(|a| a == "--random");
        bench_vectors(n, arg("--dim").unwrap_or(384), clustered, params);
        return;
    }
    let large = args.iter().any(|a| a == "--large");
    println!(
        "search_bench ({} build, {} threads available)",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    bench_bm25(1_000, 20_000, 300, 500);
    if !quick {
        bench_bm25(10_000, 50_000, 300, 500);
    }
    let sizes: &[usize] = if quick {
        &[2_000]
    } else if large {
        &[5_000, 10_000, 20_000, 50_000]
    } else {
        &[5_000, 10_000, 20_000]
    };
    for &n in sizes {
        for clustered in [true, false] {
            bench_vectors(n, 384, clustered, params);
        }
    }
}
