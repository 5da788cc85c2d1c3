//! Cross-language questions (issue 23, item 5): an English question over Chinese sources. With
//! the offline embedding it finds them only through shared words; with an endpoint embedding
//! that matches across languages it finds them, because the passages are embedded with the
//! endpoint's model and hybrid routing and the answer's passage search use those vectors.
//!
//! The endpoint is the scripted one over its wire protocol (`InProcess`), its model
//! `scripted-xling-64` cross-lingual for a small fixed vocabulary
//! (`llm_wiki::scripted::cross_lingual`).
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use llm_wiki::llm::config::{Config, EmbeddingConfig, EmbeddingProvider, Provider};
use llm_wiki::llm::Cancel;
use llm_wiki::query::{Answer, AskOptions, RouteMethod, Router};
use llm_wiki::scripted::server::InProcess;
use llm_wiki::search::{HitKind, SearchMode, SearchOptions};
use llm_wiki::search_ops::EmbedOptions;
use llm_wiki::storage::memory::MemoryBackend;

mod common;
use common::{add, compile_with_settings, open, W};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const MOVABLE_TYPE: &str = "zh/bi-sheng-movable-type.md";
const PI: &str = "zh/zu-chongzhi-pi.md";
/// Asked in English of a Chinese source; every content word but the names is in English sources
/// too ("invented", "type", "printing" …), none in the Chinese one.
const QUESTION: &str = "Who invented movable type printing with clay, and who wrote it down?";
const MODEL: &str = "scripted-xling-256";

/// Two Chinese articles among the Cargo book's chapters (over 40 passages), compiled offline.
fn wiki() -> (MemoryBackend, W) {
    let backend = MemoryBackend::new();
    let w = open(&backend, "xling");
    for key in [MOVABLE_TYPE, PI] {
        add(
            &w,
            key,
            &std::fs::read_to_string(format!("{FIXTURES}/{key}")).unwrap(),
        );
    }
    let mut chapters: Vec<_> = std::fs::read_dir(format!("{FIXTURES}/cargo-book"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    for p in chapters {
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        add(
            &w,
            &format!("cargo/{name}"),
            &std::fs::read_to_string(&p).unwrap(),
        );
    }
    let r = compile_with_settings(&w, InProcess::new(vec![]).down());
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    (backend, w)
}

/// The scripted endpoint for chat, and for embeddings `model` over its OpenAI route.
fn endpoint(w: &W, model: &str) {
    block_on(w.set_llm_config(Config {
        provider: Provider::OpenAiCompatible,
        base_url: "http://127.0.0.1:1/v1".into(),
        model: "scripted-chat".into(),
        context_window: 16_384,
        embeddings: EmbeddingConfig {
            provider: EmbeddingProvider::OpenAi,
            model: model.into(),
            ..Config::default().embeddings
        },
        ..Config::default()
    }))
    .unwrap();
}

fn embed(w: &W, transport: &InProcess) {
    let options = EmbedOptions {
        batch_size: 32,
        confirm: true,
    };
    block_on(w.embed_pages_configured(transport.clone(), &options, &|_| {}, &Cancel::new()))
        .unwrap();
}

fn ask(w: &W, transport: &InProcess, options: &AskOptions) -> Answer {
    block_on(w.ask_configured(transport.clone(), QUESTION, options, None, &Cancel::new())).unwrap()
}

/// The sources of the passage hits of a search for [`QUESTION`] in `mode`, best first.
fn passage_sources(w: &W, transport: &InProcess, mode: SearchMode) -> Vec<String> {
    let options = SearchOptions {
        mode,
        passages: true,
        k: 5,
        ..Default::default()
    };
    block_on(w.search_configured(transport.clone(), QUESTION, &options))
        .unwrap()
        .hits
        .into_iter()
        .filter(|h| h.kind == HitKind::Passage)
        .filter_map(|h| h.source)
        .collect()
}

fn summary_page(w: &W, source: &str) -> String {
    block_on(w.source(source))
        .unwrap()
        .unwrap()
        .source
        .summary_page
        .unwrap()
}

/// Whether a routing request made over `transport` listed the page `key`.
fn shortlists(transport: &InProcess, key: &str) -> bool {
    transport
        .requests_to("/chat/completions")
        .iter()
        .map(|r| r["body"].to_string())
        .filter(|b| b.contains("\"route\""))
        .any(|b| b.contains(&format!("[[{key}")))
}

/// Routing over a shortlist (index.md does not fit), so that hybrid search picks its lines.
fn shortlisted() -> AskOptions {
    AskOptions {
        routing_share: 0.05,
        // The model routes every question, so the shortlist it is offered can be checked.
        router: Router::Model,
        ..AskOptions::default()
    }
}

#[test]
fn offline_an_english_question_does_not_find_the_chinese_source() {
    let (_b, w) = wiki();
    let transport = InProcess::new(vec![]).down();
    let hybrid = passage_sources(&w, &transport, SearchMode::Hybrid);
    assert!(!hybrid.iter().any(|s| s == MOVABLE_TYPE), "{hybrid:?}");
    let a = ask(&w, &transport, &AskOptions::default());
    assert!(
        !a.passages.iter().any(|p| p.starts_with(MOVABLE_TYPE)),
        "{:?}",
        a.passages
    );
    assert!(!a.routed.contains(&summary_page(&w, MOVABLE_TYPE)), "{a:?}");
}

#[test]
fn a_cross_lingual_endpoint_embedding_finds_the_chinese_source_through_its_passages() {
    let (_b, w) = wiki();
    endpoint(&w, MODEL);
    let transport = InProcess::new(vec![]);
    embed(&w, &transport);

    // The passages are embedded with the endpoint's model, through the endpoint.
    let index = block_on(w.search_index()).unwrap();
    assert!(index.passage_count() >= 40, "{}", index.passage_count());
    assert_eq!(
        index.passage_index().unwrap().active_model(),
        Some((MODEL, 256))
    );
    assert!(index.missing_passage_embeddings(MODEL, 256).is_empty());
    let sent: Vec<String> = transport
        .requests_to("/embeddings")
        .iter()
        .flat_map(|r| {
            r["body"]["input"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_string))
        })
        .collect();
    assert!(
        sent.iter().any(|t| t.contains("胶泥活字")),
        "no passage text of the Chinese source was sent to the endpoint"
    );

    // Words alone do not find it; the vectors do.
    let bm25 = passage_sources(&w, &transport, SearchMode::Bm25);
    assert!(!bm25.iter().any(|s| s == MOVABLE_TYPE), "{bm25:?}");
    let vector = passage_sources(&w, &transport, SearchMode::Vector);
    assert_eq!(
        vector.first().map(String::as_str),
        Some(MOVABLE_TYPE),
        "{vector:?}"
    );

    // Asked: the question is embedded by the endpoint, hybrid routing shortlists the Chinese
    // source's summary page, and the answer is given that source's passages, not declined.
    let before = transport.requests_to("/embeddings").len();
    let a = ask(&w, &transport, &shortlisted());
    let asked = transport.requests_to("/embeddings");
    assert!(
        asked[before..]
            .iter()
            .any(|r| r["body"]["input"].to_string().contains("movable type")),
        "the question was not embedded by the endpoint"
    );
    assert!(
        matches!(a.route, Some(RouteMethod::Shortlist | RouteMethod::Search)),
        "{:?}",
        a.route
    );
    // The scripted router picks lines by shared words, so the page is offered, not picked.
    let page = summary_page(&w, MOVABLE_TYPE);
    assert!(
        shortlists(&transport, &page),
        "the routing shortlist lacks [[{page}]]"
    );
    assert!(
        a.passages.iter().any(|p| p.starts_with(MOVABLE_TYPE)),
        "{:?}",
        a.passages
    );
    assert!(a.cross_lingual && !a.declined, "{a:?}");
}

#[test]
fn an_endpoint_embedding_that_is_not_cross_lingual_does_not_find_it() {
    // The same wiki and endpoint with a model that matches words only: the finding above is the
    // model's, not the endpoint's.
    let (_b, w) = wiki();
    endpoint(&w, "scripted-embed-256");
    let transport = InProcess::new(vec![]);
    embed(&w, &transport);
    let vector = passage_sources(&w, &transport, SearchMode::Vector);
    assert_ne!(
        vector.first().map(String::as_str),
        Some(MOVABLE_TYPE),
        "{vector:?}"
    );
    let a = ask(&w, &transport, &shortlisted());
    assert!(!shortlists(&transport, &summary_page(&w, MOVABLE_TYPE)));
    assert!(
        !a.passages.iter().any(|p| p.starts_with(MOVABLE_TYPE)),
        "{:?}",
        a.passages
    );
}

#[test]
fn a_follow_up_is_embedded_with_the_question_before_it() {
    // "And where did he live?" names nothing the vectors could place; with the question before
    // it, the endpoint's embedding finds the Chinese source again, as its words are searched.
    let (_b, w) = wiki();
    endpoint(&w, MODEL);
    let transport = InProcess::new(vec![]);
    embed(&w, &transport);
    let before = transport.requests_to("/embeddings").len();
    let options = AskOptions {
        history: vec![llm_wiki::query::Turn {
            question: QUESTION.into(),
            answer: "Bi Sheng, with clay type; Shen Kuo wrote it down.".into(),
        }],
        ..AskOptions::default()
    };
    let a = block_on(w.ask_configured(
        transport.clone(),
        "And where did he live?",
        &options,
        None,
        &Cancel::new(),
    ))
    .unwrap();
    let asked = transport.requests_to("/embeddings");
    assert!(
        asked[before..].iter().any(|r| {
            let input = r["body"]["input"].to_string();
            input.contains("movable type") && input.contains("where did he live")
        }),
        "the follow-up was not embedded with the question before it"
    );
    assert!(
        a.passages.iter().any(|p| p.starts_with(MOVABLE_TYPE)),
        "{:?}",
        a.passages
    );
}
