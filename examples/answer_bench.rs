//! The question set of issue #23 scored against a top-8-chunk BM25 RAG baseline, natively.
//!
//! Run: `cargo run --features test-support --example answer_bench` (the dev profile is optimized)
//! (needs `target/scale-corpus`, made by `node scripts/scale-corpus.mjs`, or
//! `LLM_WIKI_SCALE_CORPUS=<dir>`). Selection by environment:
//! - `ANSWER_BENCH_MODE` = `offline` | `scripted` | `both` (default): the offline compiler and
//!   extractive answers, or the in-process scripted endpoint (`scripted::server::InProcess`).
//! - `ANSWER_BENCH_SET` = `en` | `zh` | `both` (default): the Cargo book + Rustonomicon set
//!   (`tests/fixtures/questions/cargo-nomicon.json`) or the Chinese one (`zh.json`).
//! - `ANSWER_BENCH_CHANGELOG=1` also adds Cargo's 400 KB CHANGELOG (left out by default: no
//!   question is on it and it alone is a quarter of the corpus's text).
//!
//! Per set and mode one wiki on `MemoryStorage` gets every source of the set's corpus and is
//! compiled once (`Wiki::compile_configured`); every question is then asked with the product's
//! defaults (`Wiki::ask_configured`) — public API only, so the figures are what users get. The
//! baseline cuts the same sources into ~512-token chunks at paragraph boundaries (Decision 12
//! estimate) and indexes them in the crate's own `SearchIndex` (BM25), as `bench/page.js`'s
//! `tokenBench` does; its input is the question plus its top 8 chunks.
//!
//! Printed per half (calibrate, held out) and overall, as a markdown table:
//! - R@1 / R@5: a supporting source's summary page (for RAG: a chunk of it) among the top 1 / 5
//!   of `Wiki::search` (default hybrid mode; RAG: BM25);
//! - answer context recall: the answer call's request text (recorded by the scripted endpoint)
//!   holds a key phrase, by the rule of bench/run.mjs (`norm_answer`); offline, where no call is
//!   made, the extractive answer is the context;
//! - key phrases in the answer: all / at least one (answerable questions);
//! - declines: unanswerable ones declined, answerable ones wrongly declined;
//! - citations: the share of answers whose every citation resolves to a page;
//! - input tokens per question: route + answer calls (RAG: question + 8 chunks).
//!
//! `ANSWER_BENCH_ROWS=1` also prints one line per question to stderr, with its relevance (what
//! the decline threshold is calibrated on). `ANSWER_BENCH_DIAG=1` adds, per answerable question,
//! where its key phrase was: how it was routed, whether the pages or the source passages given
//! held it, the rank of the first passage holding it in the BM25 and hybrid passage searches,
//! and which pages hold it; `ANSWER_BENCH_DIAG_ANSWERS=1` also prints the extractive answers.
//!
//! A question is cross-lingual by its label in the question file (asked in English about
//! Chinese text), not by what the product detects; such questions are reported apart from the
//! wrongly declined ones and left out of the calibration.

#[path = "../tests/support/question_set.rs"]
mod question_set;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use futures::executor::block_on;
use llm_wiki::clock::ManualClock;
use llm_wiki::compile::pipeline::CompileOptions;
use llm_wiki::llm::config::{Config, Provider};
use llm_wiki::llm::Cancel;
use llm_wiki::model::PageKind;
use llm_wiki::query::AskOptions;
use llm_wiki::scripted::server::InProcess;
use llm_wiki::search::bm25::DocFields;
use llm_wiki::search::{SearchIndex, SearchMode, SearchOptions};
use llm_wiki::storage::memory::{MemoryBackend, MemoryStorage};
use llm_wiki::storage::OpenOptions;
use llm_wiki::text::estimate_tokens;
use llm_wiki::wiki::{NewSource, Wiki};

use question_set::{holds_all, holds_any, load, scale_docs, zh_docs, Doc, Kind, Question};

type W = Wiki<MemoryStorage, ManualClock>;

const CHUNK_TOKENS: u64 = 512;
const RAG_K: usize = 8;

/// The scores of one question.
#[derive(Debug, Default, Clone)]
struct Row {
    answerable: bool,
    r1: bool,
    r5: bool,
    context: bool,
    all_phrases: bool,
    any_phrase: bool,
    declined: bool,
    citations_ok: bool,
    input: u64,
    route_input: u64,
    answer_input: u64,
    relevance: f32,
    cross_lingual: bool,
    unmatched: Vec<String>,
    rag_r1: bool,
    rag_r5: bool,
    rag_context: bool,
    rag_input: u64,
    /// Where the key phrase was (`ANSWER_BENCH_DIAG=1`): a diagnosis line.
    diag: String,
}

/// Splits `text` into chunks of about `tokens` estimated tokens at paragraph boundaries
/// (bench/page.js `chunk`).
fn chunk(text: &str, tokens: u64) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    for p in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
        let next = if cur.is_empty() {
            p.to_string()
        } else {
            format!("{cur}\n\n{p}")
        };
        if !cur.is_empty() && estimate_tokens(&next) > tokens {
            out.push(std::mem::replace(&mut cur, p.to_string()));
        } else {
            cur = next;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The RAG baseline: chunks (with their source path) and their BM25 index.
struct Rag {
    chunks: Vec<(String, String)>,
    index: SearchIndex,
}

impl Rag {
    fn new(docs: &[Doc]) -> Rag {
        let chunks: Vec<(String, String)> = docs
            .iter()
            .flat_map(|d| {
                chunk(&d.text, CHUNK_TOKENS)
                    .into_iter()
                    .map(|c| (d.path.clone(), c))
            })
            .collect();
        let keys: Vec<String> = (0..chunks.len()).map(|i| format!("c{i}")).collect();
        let mut index = SearchIndex::default();
        index.upsert_many(keys.iter().zip(&chunks).map(|(k, (_, c))| {
            (
                k.as_str(),
                DocFields {
                    title: "",
                    aliases: &[],
                    body: c,
                },
            )
        }));
        Rag { chunks, index }
    }

    /// The top chunks of `q`: (source path, text).
    fn top(&self, q: &str) -> Vec<&(String, String)> {
        let options = SearchOptions {
            k: RAG_K,
            mode: SearchMode::Bm25,
            explain: false,
            ..SearchOptions::default()
        };
        self.index
            .search(q, &options)
            .hits
            .iter()
            .filter_map(|h| self.chunks.get(h.key[1..].parse::<usize>().ok()?))
            .collect()
    }
}

fn open(backend: &MemoryBackend, name: &str) -> W {
    block_on(Wiki::open(
        backend,
        name,
        ManualClock::new(1_795_986_300_000),
        OpenOptions::default(),
    ))
    .unwrap()
}

/// The user message of a recorded chat request.
fn user_text(r: &serde_json::Value) -> String {
    r["body"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .next_back()
        .unwrap_or_default()
        .to_string()
}

/// Builds the wiki of `docs` in `mode` and scores every question of `qs`.
fn run(mode: &str, docs: &[Doc], qs: &[Question], rag: &Rag) -> Vec<Row> {
    let backend = MemoryBackend::new();
    let w = open(&backend, mode);
    let transport = InProcess::new(vec![]);
    if mode == "scripted" {
        block_on(w.set_llm_config(Config {
            provider: Provider::OpenAiCompatible,
            preset: Some("openai".into()),
            base_url: "http://scripted.test/v1".into(),
            model: "scripted-chat".into(),
            context_window: 16_384,
            ..Config::default()
        }))
        .unwrap();
    }
    let t = Instant::now();
    for d in docs {
        block_on(w.add_source(NewSource {
            key: Some(d.key.clone()),
            title: Some(d.title.clone()),
            mime: "text/markdown".into(),
            content: d.text.clone(),
            ..Default::default()
        }))
        .unwrap();
    }
    let report = block_on(w.compile_configured(
        transport.clone(),
        &CompileOptions::default(),
        &|_| {},
        &Cancel::new(),
    ))
    .unwrap();
    let pages = block_on(w.all_pages()).unwrap();
    eprintln!(
        "{mode}: {} sources compiled ({} failed) into {} pages in {:.0} s",
        report.compiled.len(),
        report.failed.len(),
        pages.len(),
        t.elapsed().as_secs_f64()
    );
    let page_keys: BTreeSet<String> = pages.iter().map(|p| p.key.to_lowercase()).collect();
    // Source path → its summary pages.
    let path_of: BTreeMap<&str, &str> = docs
        .iter()
        .map(|d| (d.key.as_str(), d.path.as_str()))
        .collect();
    let mut summaries: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in pages.iter().filter(|p| p.kind == PageKind::Source) {
        for s in &p.sources {
            if let Some(path) = path_of.get(s.as_str()) {
                summaries
                    .entry(path.to_string())
                    .or_default()
                    .insert(p.key.clone());
            }
        }
    }
    let t = Instant::now();
    let rows = qs
        .iter()
        .map(|q| score(&w, &transport, q, rag, &summaries, &page_keys))
        .collect();
    eprintln!(
        "{mode}: {} questions in {:.0} s",
        qs.len(),
        t.elapsed().as_secs_f64()
    );
    rows
}

fn score(
    w: &W,
    transport: &InProcess,
    q: &Question,
    rag: &Rag,
    summaries: &BTreeMap<String, BTreeSet<String>>,
    page_keys: &BTreeSet<String>,
) -> Row {
    let answerable = q.kind != Kind::Unanswerable;
    let supporting: BTreeSet<&String> = q
        .sources
        .iter()
        .flat_map(|s| summaries.get(s))
        .flatten()
        .collect();
    let search = SearchOptions {
        k: 5,
        explain: false,
        ..SearchOptions::default()
    };
    let found = block_on(w.search(&q.question, &search)).unwrap();
    let hits: Vec<String> = found.hits.into_iter().map(|h| h.key).collect();
    transport.state().reset();
    let a = block_on(w.ask_configured(
        transport.clone(),
        &q.question,
        &AskOptions::default(),
        None,
        &Cancel::new(),
    ))
    .unwrap();
    let context = if a.extractive {
        a.answer.clone()
    } else {
        transport
            .state()
            .requests()
            .iter()
            .map(user_text)
            .filter(|t| t.contains("\n\nQuestion: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let top = rag.top(&q.question);
    let rag_text: Vec<&str> = top.iter().map(|(_, c)| c.as_str()).collect();
    let diag = if answerable && std::env::var("ANSWER_BENCH_DIAG").is_ok_and(|v| v == "1") {
        diagnose(w, q, &a, &context)
    } else {
        String::new()
    };
    Row {
        diag,
        answerable,
        r1: hits.first().is_some_and(|h| supporting.contains(h)),
        r5: hits.iter().any(|h| supporting.contains(h)),
        context: answerable && holds_any(&context, &q.key_phrases),
        all_phrases: answerable && holds_all(&a.answer, &q.key_phrases),
        any_phrase: answerable && holds_any(&a.answer, &q.key_phrases),
        declined: a.declined,
        citations_ok: a
            .citations
            .iter()
            .all(|c| page_keys.contains(&c.to_lowercase()))
            && a.source_citations.iter().all(|c| {
                // A passage citation resolves when its source version's lines hold the quote.
                block_on(w.source_span(&c.source, Some(&c.version), c.lines))
                    .ok()
                    .flatten()
                    .is_some_and(|s| {
                        s.text
                            .split_whitespace()
                            .collect::<Vec<_>>()
                            .join(" ")
                            .contains(&c.quote)
                    })
            }),
        input: a.usage.input,
        route_input: a.route_usage.input,
        answer_input: a.answer_usage.input,
        relevance: a.relevance,
        cross_lingual: q.cross_lingual,
        unmatched: a.unmatched.clone(),
        rag_r1: top.first().is_some_and(|(s, _)| q.sources.contains(s)),
        rag_r5: top.iter().take(5).any(|(s, _)| q.sources.contains(s)),
        rag_context: answerable && holds_any(&rag_text.join("\n\n"), &q.key_phrases),
        rag_input: estimate_tokens(&q.question)
            + rag_text.iter().map(|c| estimate_tokens(c)).sum::<u64>(),
    }
}

/// Where a question's key phrase is: in the given pages or passages, in which rank of the
/// passage search (BM25 and hybrid), in which wiki page.
fn diagnose(w: &W, q: &Question, a: &llm_wiki::query::Answer, context: &str) -> String {
    let blocks = llm_wiki::llm::prompt::source_blocks(context);
    let in_pages = blocks
        .iter()
        .filter(|b| !b.key.starts_with('^'))
        .any(|b| holds_any(&b.text, &q.key_phrases));
    let in_passages = blocks
        .iter()
        .filter(|b| b.key.starts_with('^'))
        .any(|b| holds_any(&b.text, &q.key_phrases));
    let index = block_on(w.search_index_shared()).unwrap();
    let rank_of = |mode: SearchMode| -> String {
        let o = SearchOptions {
            k: 60,
            depth: 60,
            mode,
            explain: false,
            passages: true,
            ..SearchOptions::default()
        };
        let text = llm_wiki::query::passages::content_query(&q.question);
        let hits: Vec<String> = index
            .search_passages(&text, &o)
            .hits
            .into_iter()
            .map(|h| h.key)
            .collect();
        let texts = block_on(w.passage_texts(&index, &hits)).unwrap();
        texts
            .iter()
            .position(|p| holds_any(&p.text, &q.key_phrases))
            .map_or("-".into(), |i| (i + 1).to_string())
    };
    let bm25 = rank_of(SearchMode::Bm25);
    let hybrid = rank_of(SearchMode::Hybrid);
    let pages = block_on(w.all_pages()).unwrap();
    let holding: Vec<String> = pages
        .iter()
        .filter(|p| holds_any(&p.body, &q.key_phrases))
        .map(|p| p.key.clone())
        .take(3)
        .collect();
    let routed_hold: Vec<&String> = a
        .routed
        .iter()
        .chain(&a.hopped)
        .filter(|k| holding.contains(k))
        .collect();
    format!(
        "route {:?} | given pages {in_pages} passages {in_passages} | passage rank bm25 {bm25} hybrid {hybrid} | pages holding {holding:?} routed {routed_hold:?} | routed {:?} hopped {:?} given passages {}",
        a.route,
        a.routed,
        a.hopped,
        a.passages.len()
    ) + &if a.extractive && std::env::var("ANSWER_BENCH_DIAG_ANSWERS").is_ok() {
        format!("\n{}", a.answer)
    } else {
        String::new()
    }
}

/// `n/d` as a share with two decimals, `—` without questions.
fn share(rows: &[&Row], f: impl Fn(&Row) -> bool) -> String {
    if rows.is_empty() {
        return "—".into();
    }
    let n = rows.iter().filter(|r| f(r)).count();
    format!("{:.2} ({n}/{})", n as f64 / rows.len() as f64, rows.len())
}

fn mean(rows: &[&Row], f: impl Fn(&Row) -> u64) -> String {
    if rows.is_empty() {
        return "—".into();
    }
    format!(
        "{:.0}",
        rows.iter().map(|r| f(r) as f64).sum::<f64>() / rows.len() as f64
    )
}

/// One line per question (`ANSWER_BENCH_ROWS=1`): the relevance a decline threshold is
/// calibrated on beside what happened.
fn print_rows(set: &str, mode: &str, qs: &[Question], rows: &[Row]) {
    for (q, r) in qs.iter().zip(rows) {
        eprintln!(
            "{set} {mode} {} {} {} relevance {:.3} cross-lingual {} R@5 {} context {} declined {} RAG context {} unmatched {}",
            q.id,
            q.half,
            q.kind.name(),
            r.relevance,
            r.cross_lingual,
            r.r5,
            r.context,
            r.declined,
            r.rag_context,
            r.unmatched.join(",")
        );
        if !r.diag.is_empty() {
            eprintln!("    {}", r.diag);
        }
    }
}

/// The decline threshold the calibrate halves of every table call for: the largest relevance
/// below which at most 5 % of their answerable questions in the script of their text fall
/// (Decision 16), with the unanswerable ones it would decline there and the lowest threshold
/// that declines those same ones (the highest of their scores: any threshold above it, up to
/// the largest, declines them all).
fn calibrate(tables: &[(&str, &str, Vec<Question>, Vec<Row>)]) -> (f32, f32, usize, usize) {
    let cal: Vec<&Row> = tables
        .iter()
        .flat_map(|(_, _, qs, rows)| qs.iter().zip(rows))
        .filter(|(q, _)| q.half == "calibrate")
        .map(|(_, r)| r)
        .collect();
    // A cross-lingual question's words cannot match its text's: its score says nothing, and it
    // does not move the threshold.
    let mut answerable: Vec<f32> = cal
        .iter()
        .filter(|r| r.answerable && !r.cross_lingual)
        .map(|r| r.relevance)
        .collect();
    answerable.sort_by(f32::total_cmp);
    let allowed = answerable.len() / 20;
    // Declining below the (allowed + 1)-th lowest answerable score declines `allowed` of them
    // (ties aside).
    let threshold = answerable.get(allowed).copied().unwrap_or(0.0);
    let un: Vec<&&Row> = cal.iter().filter(|r| !r.answerable).collect();
    let below: Vec<f32> = un
        .iter()
        .map(|r| r.relevance)
        .filter(|&s| s < threshold)
        .collect();
    let lowest = below.iter().copied().fold(0.0, f32::max);
    (threshold, lowest, below.len(), un.len())
}

/// One table row per half and overall.
fn print_table(set: &str, mode: &str, qs: &[Question], rows: &[Row]) {
    for half in ["calibrate", "heldout", "all"] {
        let of: Vec<&Row> = qs
            .iter()
            .zip(rows)
            .filter(|(q, _)| half == "all" || q.half == half)
            .map(|(_, r)| r)
            .collect();
        let ans: Vec<&Row> = of.iter().copied().filter(|r| r.answerable).collect();
        let un: Vec<&Row> = of.iter().copied().filter(|r| !r.answerable).collect();
        println!(
            "| {set} | {mode} | {half} | {} / {} | {} / {} | {} / {} | {} / {} | {} | {} (cross-lingual: {}) | {} | {} ({} + {}) / {} |",
            share(&ans, |r| r.r1),
            share(&ans, |r| r.r5),
            share(&ans, |r| r.rag_r1),
            share(&ans, |r| r.rag_r5),
            share(&ans, |r| r.context),
            share(&ans, |r| r.rag_context),
            share(&ans, |r| r.all_phrases),
            share(&ans, |r| r.any_phrase),
            share(&un, |r| r.declined),
            share(&ans, |r| r.declined),
            share(&ans, |r| r.declined && r.cross_lingual),
            share(&of, |r| r.citations_ok),
            mean(&of, |r| r.input),
            mean(&of, |r| r.route_input),
            mean(&of, |r| r.answer_input),
            mean(&of, |r| r.rag_input),
        );
    }
}

fn main() {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let modes: Vec<&str> = match env("ANSWER_BENCH_MODE", "both").as_str() {
        "offline" => vec!["offline"],
        "scripted" => vec!["scripted"],
        _ => vec!["offline", "scripted"],
    };
    let sets: Vec<&str> = match env("ANSWER_BENCH_SET", "both").as_str() {
        "en" => vec!["en"],
        "zh" => vec!["zh"],
        _ => vec!["en", "zh"],
    };
    let changelog = env("ANSWER_BENCH_CHANGELOG", "0") == "1";
    let t0 = Instant::now();
    let mut tables = vec![];
    for set in sets {
        let (file, docs) = if set == "en" {
            let docs = match scale_docs(&["cargo/", "nomicon/"]) {
                Ok(d) => d,
                Err(why) => {
                    eprintln!("skipped the English set: {why}");
                    continue;
                }
            };
            let docs: Vec<Doc> = docs
                .into_iter()
                .filter(|d| changelog || d.path != "cargo/CHANGELOG.html")
                .collect();
            ("cargo-nomicon.json", docs)
        } else {
            ("zh.json", zh_docs())
        };
        let qs = load(file).questions;
        let rag = Rag::new(&docs);
        eprintln!(
            "{set}: {} sources, {} RAG chunks, {} questions",
            docs.len(),
            rag.chunks.len(),
            qs.len()
        );
        for mode in &modes {
            let rows = run(mode, &docs, &qs, &rag);
            tables.push((set, *mode, qs.clone(), rows));
        }
    }
    println!(
        "| set | mode | half | R@1 / R@5 | RAG R@1 / R@5 | answer context recall: wiki / RAG | key phrases in answer: all / any | unanswerable declined | answerable wrongly declined | citations resolve | input tokens per question: wiki (route + answer) / RAG |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (set, mode, qs, rows) in &tables {
        print_table(set, mode, qs, rows);
        if env("ANSWER_BENCH_ROWS", "0") == "1" {
            print_rows(set, mode, qs, rows);
        }
    }
    let (threshold, lowest, declined, of) = calibrate(&tables);
    println!(
        "\ncalibrate halves: decline below {threshold:.3} (declines {declined} of {of} unanswerable there, as does any threshold above {lowest:.3}); the product's default is {:.3}",
        llm_wiki::query::DECLINE_BELOW
    );
    eprintln!("total {:.0} s", t0.elapsed().as_secs_f64());
}
