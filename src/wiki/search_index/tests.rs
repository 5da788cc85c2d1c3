//! Opening an index an older build wrote: tokenized again once, every vector kept.

use futures::executor::block_on;

use super::*;
use crate::clock::ManualClock;
use crate::model::NewSource;
use crate::search::tests::as_format_2;
use crate::search::tokenizer::{as_version_1, tokenizer_calls, TOKENIZER_VERSION};
use crate::search::{HitKind, SearchMode, SearchOptions};
use crate::storage::memory::{MemoryBackend, MemoryStorage};
use crate::storage::OpenOptions;
use crate::wiki::PageEdit;

type W = Wiki<MemoryStorage, ManualClock>;

fn open(backend: &MemoryBackend) -> W {
    block_on(Wiki::open(
        backend,
        "retokenize",
        ManualClock::new(1_795_986_300_000),
        OpenOptions::default(),
    ))
    .unwrap()
}

/// The model of the endpoint vectors the test stores (the offline method under another id).
const ENDPOINT: &str = "endpoint-24";

fn endpoint_vector(text: &str) -> Vec<f32> {
    OfflineEmbedder::with_model(ENDPOINT, 24).embed_one(text)
}

fn bm25(passages: bool) -> SearchOptions {
    SearchOptions {
        mode: SearchMode::Bm25,
        passages,
        ..SearchOptions::default()
    }
}

/// The search store's framed records (not the stamp and the JSON records beside them).
fn index_records(w: &W) -> BTreeMap<String, Vec<u8>> {
    block_on(w.storage().scan(Store::Search, ""))
        .unwrap()
        .into_iter()
        .filter(|(_, r)| r.data.starts_with(b"LWSI"))
        .map(|(k, r)| (k, r.data))
        .collect()
}

#[test]
fn an_index_an_older_tokenizer_wrote_is_retokenized_once_keeping_every_vector() {
    let backend = MemoryBackend::new();
    // What an older build left: pages and a source in both scripts, indexed by tokenizer 1, with
    // endpoint vectors for every page and passage, saved in format 2.
    as_version_1(|| {
        let w = open(&backend);
        for (title, body) in [
            ("編譯維基", "編譯維基把筆記整理成頁面，問題從頁面回答。"),
            ("活字印刷", "现存最早的金属活字印本是《直指》。"),
            ("静夜思", "床前明月光，疑是地上霜。"),
        ] {
            block_on(w.put_page(PageEdit {
                title: Some(title.into()),
                body: Some(body.into()),
                ..Default::default()
            }))
            .unwrap();
        }
        for (key, text) in [
            (
                "trad.md",
                "# 壓縮\n\n編譯維基的壓縮會丟失資訊。\n\n## 分塊\n\n分塊太小，一段話失去上下文。\n",
            ),
            (
                "simp.md",
                "# 活字\n\n毕昇发明了胶泥活字，每个字刻在一块胶泥上。\n",
            ),
        ] {
            block_on(w.add_source(NewSource {
                key: Some(key.into()),
                mime: "text/markdown".into(),
                content: text.into(),
                ..Default::default()
            }))
            .unwrap();
        }
        let mut index = block_on(w.search_index()).unwrap();
        assert_eq!(index.tokenizer_version(), 1);
        index.confirm_reembed(ENDPOINT, 24);
        let pages = block_on(w.all_pages()).unwrap();
        let vs: Vec<(String, Vec<f32>)> = pages
            .iter()
            .map(|p| (p.key.clone(), endpoint_vector(&embedding_text(p))))
            .collect();
        let items: Vec<(&str, &[f32])> = vs.iter().map(|(k, v)| (k.as_str(), &v[..])).collect();
        index.put_embeddings(ENDPOINT, &items).unwrap();
        let keys: Vec<String> = index
            .passage_sources()
            .iter()
            .flat_map(|(s, _)| index.source_passage_keys(s).to_vec())
            .collect();
        let vs: Vec<Vec<f32>> = keys.iter().map(|k| endpoint_vector(k)).collect();
        let items: Vec<(&str, &[f32])> = keys
            .iter()
            .map(String::as_str)
            .zip(vs.iter().map(Vec::as_slice))
            .collect();
        index.put_passage_embeddings(ENDPOINT, &items).unwrap();
        assert_eq!(index.active_model(), Some((ENDPOINT, 24)));
        block_on(w.save_search_index(&mut index)).unwrap();
        let old = as_format_2(index_records(&w));
        let mut b = Batch::new();
        for (k, v) in old {
            b.put(Store::Search, k, v, Expect::Any);
        }
        block_on(w.storage().commit(b)).unwrap();
        w.storage().close();
    });
    let stored = index_records(&open(&backend));
    let vector_keys: Vec<&String> = stored
        .keys()
        .filter(|k| k.contains("vectors") || k.contains("hnsw"))
        .collect();
    assert_eq!(vector_keys.len(), 4, "{vector_keys:?}");

    // Opened by this build: every page and passage is tokenized again, and saved.
    let w = open(&backend);
    let before = tokenizer_calls();
    let index = block_on(w.search_index()).unwrap();
    assert!(tokenizer_calls() > before);
    assert!(!index.needs_retokenize());
    assert_eq!(index.tokenizer_version(), TOKENIZER_VERSION);
    // A Simplified question finds the Traditional page and passage, and the reverse.
    let top = |q: &str, passages: bool| block_on(w.search(q, &bm25(passages))).unwrap().hits;
    assert_eq!(top("编译维基", false)[0].key, "編譯維基");
    assert_eq!(top("金屬活字", false)[0].key, "活字印刷");
    let passage_source = |q: &str| {
        let hits = top(q, true);
        let hit = hits.iter().find(|h| h.kind == HitKind::Passage).unwrap();
        index.passage(&hit.key).unwrap().source.clone()
    };
    assert_eq!(passage_source("压缩会丢失资讯"), "trad.md");
    assert_eq!(passage_source("膠泥活字"), "simp.md");
    // Every vector is the one stored: the vector records were not even written again.
    let now = index_records(&w);
    for k in &vector_keys {
        assert_eq!(now[*k], stored[*k], "{k}");
    }
    assert_eq!(index.active_model(), Some((ENDPOINT, 24)));
    assert_eq!(index.vectors().unwrap().live(), 3);
    let passages = index.passage_index().unwrap();
    assert_eq!(passages.vectors().unwrap().live(), index.passage_count());
    assert_eq!(passages.tokenizer_version(), TOKENIZER_VERSION);

    // Opened again: nothing is tokenized.
    w.storage().close();
    let w = open(&backend);
    let before = tokenizer_calls();
    let again = block_on(w.search_index()).unwrap();
    assert_eq!(tokenizer_calls(), before, "reopening must not tokenize");
    assert!(!again.needs_retokenize());
    let r = again.search("编译维基", &bm25(false));
    assert_eq!(r.hits[0].key, "編譯維基");
}
