//! Tests of the search facade: field cases F27 and F28, degenerate input, persistence.

use std::collections::HashMap;

use super::persist::{RecordWrite, KEY_BM25, KEY_BM25_DELTA, KEY_HNSW, KEY_META, KEY_VECTORS};
use super::tokenizer::tokenizer_calls;
use super::*;

fn page<'a>(title: &'a str, body: &'a str) -> DocFields<'a> {
    DocFields {
        title,
        aliases: &[],
        body,
    }
}

fn bm25_only(k: usize) -> SearchOptions {
    SearchOptions {
        k,
        mode: SearchMode::Bm25,
        ..SearchOptions::default()
    }
}

fn keys(r: &SearchResults) -> Vec<&str> {
    r.hits.iter().map(|h| h.key.as_str()).collect()
}

/// A deterministic mock embedding: `dim` values hashed from the text's tokens (what an embedding
/// endpoint returns, reduced to what these tests need: same text → same vector).
fn mock_embed(text: &str, dim: usize, salt: u64) -> Vec<f32> {
    let mut v = vec![0f32; dim];
    for t in tokenizer::tokenize(text) {
        let h = codec::hash64(format!("{salt}:{t}").as_bytes());
        v[(h % dim as u64) as usize] += if h & (1 << 40) == 0 { 1.0 } else { -1.0 };
    }
    v
}

// ------------------------------------------------------------------------------------ F27

const F27_PAGES: [(&str, &str); 7] = [
    ("P1", "床前明月光"),
    ("P2", "疑是地上霜"),
    ("P3", "举头望明月"),
    ("P4", "低头思故乡"),
    ("P5", "OpenAI 发布了新的模型"),
    ("P6", "초과근무 승인 규칙"),
    ("P7", "café naïve résumé"),
];

fn f27_index() -> SearchIndex {
    let mut idx = SearchIndex::default();
    for (key, text) in F27_PAGES {
        // The page text is the body; titles are neutral so that only the text decides.
        idx.upsert(key, &page("", text), None);
    }
    idx
}

/// The same pages through a full build fed in batches (`SearchIndex::builder`, two passes), the
/// way a wiki with no stored index builds one.
fn f27_index_built_in_batches() -> SearchIndex {
    let mut b = SearchIndex::builder(SearchConfig::default());
    for batch in F27_PAGES.chunks(3) {
        for (key, text) in batch {
            b.count(key, &page("", text)).unwrap();
        }
    }
    for batch in F27_PAGES.chunks(2) {
        for (key, text) in batch {
            b.fill(key, &page("", text)).unwrap();
        }
    }
    b.finish().unwrap()
}

#[test]
fn f27_bm25_on_cjk_text_without_spaces() {
    check_f27(&f27_index());
    check_f27(&f27_index_built_in_batches());
}

/// The expectations of field case F27 on an index of its seven pages.
fn check_f27(idx: &SearchIndex) {
    let top = |q: &str| idx.search(q, &bm25_only(10));

    let r = top("故乡");
    assert_eq!(r.status, SearchStatus::Ok);
    assert_eq!(r.mode, SearchMode::Bm25);
    assert_eq!(keys(&r)[0], "P4");
    assert!(r.hits[0].score > 0.0);

    let r = top("明月");
    let first_two: std::collections::BTreeSet<&str> = keys(&r)[..2].iter().copied().collect();
    assert_eq!(first_two, ["P1", "P3"].into_iter().collect());
    // P1 and P3 both contain the bigram 明月: equal BM25 evidence, above every other page.
    assert!(r.hits.len() == 2 || r.hits[2].score < r.hits[1].score);

    assert_eq!(keys(&top("模型 OpenAI"))[0], "P5");
    assert_eq!(keys(&top("승인"))[0], "P6");
    let r = top("café");
    assert_eq!(keys(&r), ["P7"]);
    // Accented Latin is one token: `caf` matches nothing.
    assert!(top("caf").hits.is_empty());

    // A one-character query still matches (unigrams).
    assert_eq!(keys(&top("霜")), ["P2"]);
    // The explanation names the bigram that matched.
    let ex = top("故乡").hits[0].explain.bm25.clone().unwrap();
    assert!(ex
        .terms
        .iter()
        .any(|t| t.term == "故乡" && t.field_tf == [0, 0, 1]));
}

#[test]
fn f27_english_results_are_unchanged_and_one_tokenizer_serves_both_sides() {
    let mut idx = f27_index();
    idx.upsert(
        "Ownership",
        &page(
            "Ownership",
            "Rust's ownership rules: each value has one owner.",
        ),
        None,
    );
    idx.upsert(
        "GC",
        &page(
            "Garbage collection",
            "Python frees memory with reference counting.",
        ),
        None,
    );
    idx.upsert(
        "Borrowing",
        &page(
            "Borrowing",
            "References borrow a value without taking ownership.",
        ),
        None,
    );
    let r = idx.search("ownership", &bm25_only(10));
    assert_eq!(keys(&r), ["Ownership", "Borrowing"]);
    assert_eq!(
        keys(&idx.search("Reference counting", &bm25_only(10)))[0],
        "GC"
    );
    assert_eq!(keys(&idx.search("GARBAGE", &bm25_only(10))), ["GC"]);
    // A search tokenizes the query exactly once, with the indexing tokenizer.
    let before = tokenizer_calls();
    idx.search("明月 ownership", &bm25_only(10));
    assert_eq!(tokenizer_calls() - before, 1);
}

#[test]
fn f27_traditional_and_simplified_characters_find_each_other() {
    let mut idx = SearchIndex::default();
    // One page in Traditional, one in Simplified characters, one about something else.
    idx.upsert("trad", &page("", "編譯維基把筆記整理成頁面"), None);
    idx.upsert("simp", &page("", "现存最早的金属活字印本"), None);
    idx.upsert("poem", &page("", "床前明月光，疑是地上霜"), None);
    let top = |q: &str| -> Vec<String> {
        let r = idx.search(q, &bm25_only(10));
        keys(&r).into_iter().map(String::from).collect()
    };
    // A Traditional question finds the Simplified page, a Simplified one the Traditional page,
    // and either form of a question gets the same results (the tokens are the same).
    assert_eq!(top("現存最早的金屬活字印本"), ["simp"]);
    assert_eq!(top("编译维基"), ["trad"]);
    for (t, s) in [
        ("金屬活字", "金属活字"),
        ("編譯", "编译"),
        ("筆記頁面", "笔记页面"),
        ("編译維基", "编譯维基"),
    ] {
        assert_eq!(
            idx.search(t, &bm25_only(10)),
            idx.search(s, &bm25_only(10)),
            "{t} / {s}"
        );
        assert!(!top(t).is_empty(), "{t}");
    }
    // The explanation names the folded token.
    let opts = SearchOptions {
        explain: true,
        ..bm25_only(10)
    };
    let ex = idx.search("金屬", &opts).hits[0]
        .explain
        .bm25
        .clone()
        .unwrap();
    assert!(ex.terms.iter().any(|t| t.term == "金属"), "{ex:?}");
}

// ------------------------------------------------------------------------------------ F28

const A: &str = "model-a";
const B: &str = "model-b";
const C: &str = "model-c";

fn f28_pages() -> Vec<(String, String)> {
    (0..20)
        .map(|i| {
            (
                format!("page-{i:02}"),
                format!("Page {i} about topic{} and shared words", i % 5),
            )
        })
        .collect()
}

fn query(model: &str, text: &str, dim: usize, salt: u64, mode: SearchMode) -> SearchOptions {
    SearchOptions {
        k: 5,
        mode,
        query_vector: Some(QueryVector {
            model: model.into(),
            vector: mock_embed(text, dim, salt),
        }),
        ..SearchOptions::default()
    }
}

#[test]
fn f28_embedding_model_switched() {
    // 1. Index 20 pages with model A (768-d).
    let mut idx = SearchIndex::default();
    for (key, text) in f28_pages() {
        let v = mock_embed(&text, 768, 1);
        let out = idx.upsert(
            &key,
            &page(&key, &text),
            Some(Embedding {
                model: A,
                vector: &v,
            }),
        );
        assert_eq!(out, VectorOutcome::Stored);
    }
    let r = idx.search("topic3", &query(A, "topic3", 768, 1, SearchMode::Hybrid));
    assert_eq!(r.status, SearchStatus::Ok);
    assert_eq!(r.mode, SearchMode::Hybrid);
    let store = idx.vectors().unwrap();
    assert_eq!((store.model(), store.dim(), store.live()), (A, 768, 20));

    // 2. Switch to model B (1024-d) and query: BM25 fallback with a status, results not empty.
    for mode in [SearchMode::Vector, SearchMode::Hybrid] {
        let r = idx.search("topic3", &query(B, "topic3", 1024, 2, mode));
        assert_eq!(
            r.status,
            SearchStatus::ReembedRequired {
                stored_model: A.into(),
                stored_dim: 768,
                configured_model: B.into(),
                configured_dim: 1024,
            }
        );
        assert_eq!(r.mode, SearchMode::Bm25);
        assert_eq!(r.hits.len(), 4, "pages 3, 8, 13, 18 mention topic3");
        assert!(r.hits.iter().all(|h| h.explain.bm25_rank.is_some()));
    }
    assert_eq!(
        idx.embedding_status(B, 1024),
        EmbeddingStatus::ReembedRequired {
            stored_model: A.into(),
            stored_dim: 768
        }
    );
    // The old vectors are kept until the user confirms.
    assert_eq!(idx.vectors().unwrap().live(), 20);
    assert!(idx.missing_embeddings(B, 1024).is_empty());

    // 3. Ingest one new page, embedded with B: indexed for BM25, its vector refused (never stored
    //    with the wrong dimension), reported.
    let v = mock_embed("new page about topic3", 1024, 2);
    let out = idx.upsert(
        "new-page",
        &page("New", "new page about topic3"),
        Some(Embedding {
            model: B,
            vector: &v,
        }),
    );
    assert_eq!(
        out,
        VectorOutcome::Rejected {
            stored_model: A.into(),
            stored_dim: 768,
            given_model: B.into(),
            given_dim: 1024,
        }
    );
    let store = idx.vectors().unwrap();
    assert_eq!((store.dim(), store.live()), (768, 20));
    assert!(!store.contains(idx.docs.id("new-page").unwrap()));
    assert!(keys(&idx.search("topic3", &bm25_only(10))).contains(&"new-page"));
    assert_eq!(idx.missing_embeddings(A, 768), ["new-page"]);

    // 4a. A batch of 10 pages being embedded with A when the switch happens: it finishes with A
    //     (it matches the active store) — consistent, not mixed.
    let batch_a: Vec<(String, Vec<f32>)> = f28_pages()[..10]
        .iter()
        .map(|(k, t)| (k.clone(), mock_embed(t, 768, 1)))
        .collect();
    idx.confirm_reembed(B, 1024);
    assert_eq!(
        idx.embedding_status(B, 1024),
        EmbeddingStatus::Reembedding { done: 0, total: 21 }
    );
    let items: Vec<(&str, &[f32])> = batch_a
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    assert_eq!(idx.put_embeddings(A, &items), Ok(10));
    assert_eq!(idx.vectors().unwrap().dim(), 768);
    // While re-embedding, a B query still falls back to BM25, saying how far it got.
    let r = idx.search("topic3", &query(B, "topic3", 1024, 2, SearchMode::Hybrid));
    assert_eq!(
        r.status,
        SearchStatus::Reembedding {
            model: B.into(),
            done: 0,
            total: 21
        }
    );
    assert_eq!(r.mode, SearchMode::Bm25);

    // 4b. Re-embedding with B is under way; the user switches again (to C, 768-d like A) while a
    //     batch of 10 B vectors is in flight. The B batch arrives after the switch: refused whole.
    let keys_all: Vec<String> = idx.missing_embeddings(B, 1024);
    assert_eq!(keys_all.len(), 21);
    let first: Vec<(String, Vec<f32>)> = keys_all[..5]
        .iter()
        .map(|k| (k.clone(), mock_embed(k, 1024, 2)))
        .collect();
    let items: Vec<(&str, &[f32])> = first
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    assert_eq!(idx.put_embeddings(B, &items), Ok(5));
    let in_flight: Vec<(String, Vec<f32>)> = keys_all[5..15]
        .iter()
        .map(|k| (k.clone(), mock_embed(k, 1024, 2)))
        .collect();
    idx.confirm_reembed(C, 768);
    let items: Vec<(&str, &[f32])> = in_flight
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    assert!(matches!(
        idx.put_embeddings(B, &items),
        Err(SearchError::ModelMismatch { .. })
    ));
    // Same dimension, other model: still refused (A's active store is 768-d too, but it is A).
    let c_as_a: Vec<f32> = mock_embed("x", 768, 3);
    let out = idx.put_embeddings("model-d", &[("page-00", c_as_a.as_slice())]);
    assert!(matches!(out, Err(SearchError::ModelMismatch { .. })));
    // A batch mixing dimensions is refused whole.
    let (v768, v1024) = (vec![1.0f32; 768], vec![1.0f32; 1024]);
    assert_eq!(
        idx.put_embeddings(
            C,
            &[("page-00", v768.as_slice()), ("page-01", v1024.as_slice())]
        ),
        Err(SearchError::MixedDimensions)
    );
    assert_eq!(
        idx.embedding_status(C, 768),
        EmbeddingStatus::Reembedding { done: 0, total: 21 }
    );
    // The old vectors are still the active ones, untouched.
    let store = idx.vectors().unwrap();
    assert_eq!((store.model(), store.dim(), store.live()), (A, 768, 20));

    // The re-embed with C survives a reopen half-way.
    let todo = idx.missing_embeddings(C, 768);
    let half: Vec<(String, Vec<f32>)> = todo[..11]
        .iter()
        .map(|k| (k.clone(), mock_embed(k, 768, 3)))
        .collect();
    let items: Vec<(&str, &[f32])> = half
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    idx.put_embeddings(C, &items).unwrap();
    let mut idx = reopen(&idx);
    assert_eq!(
        idx.embedding_status(C, 768),
        EmbeddingStatus::Reembedding {
            done: 11,
            total: 21
        }
    );
    let rest: Vec<(String, Vec<f32>)> = idx
        .missing_embeddings(C, 768)
        .iter()
        .map(|k| (k.clone(), mock_embed(k, 768, 3)))
        .collect();
    assert_eq!(rest.len(), 10);
    let items: Vec<(&str, &[f32])> = rest
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    idx.put_embeddings(C, &items).unwrap();
    // Complete: C replaced A in one step.
    assert_eq!(
        idx.embedding_status(C, 768),
        EmbeddingStatus::Ready { missing: 0 }
    );
    let store = idx.vectors().unwrap();
    assert_eq!((store.model(), store.dim(), store.live()), (C, 768, 21));
    let r = idx.search("page-07", &query(C, "page-07", 768, 3, SearchMode::Vector));
    assert_eq!(r.status, SearchStatus::Ok);
    assert_eq!(r.mode, SearchMode::Vector);
    assert_eq!(r.hits[0].key, "page-07");
    // Now an A query is the one that needs a re-embed.
    let r = idx.search("topic3", &query(A, "topic3", 768, 1, SearchMode::Hybrid));
    assert!(matches!(r.status, SearchStatus::ReembedRequired { .. }));
    // And the staging records are gone from storage after the next save.
    let writes = idx.dirty_records();
    assert!(writes
        .iter()
        .any(|w| w.key == persist::KEY_STAGING && w.data.is_none()));
}

// ------------------------------------------------------------------------------------ degenerate

#[test]
fn degenerate_inputs_have_defined_results() {
    let empty = SearchIndex::default();
    for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Hybrid] {
        let r = empty.search("anything", &query(A, "anything", 8, 1, mode));
        assert!(r.hits.is_empty());
        if mode != SearchMode::Bm25 {
            assert_eq!(r.status, SearchStatus::NoVectors);
        }
    }
    let mut idx = SearchIndex::default();
    for i in 0..5 {
        let text = format!("alpha number{i}");
        let v = mock_embed(&text, 8, 1);
        idx.upsert(
            &format!("p{i}"),
            &page("", &text),
            Some(Embedding {
                model: A,
                vector: &v,
            }),
        );
    }
    // A zero and a NaN page vector: stored as null, found by BM25 only.
    let out = idx.upsert(
        "zero",
        &page("", "alpha zero"),
        Some(Embedding {
            model: A,
            vector: &[0.0; 8],
        }),
    );
    assert_eq!(out, VectorOutcome::Null);
    let nan = [f32::NAN; 8];
    let out = idx.upsert(
        "nan",
        &page("", "alpha nan"),
        Some(Embedding {
            model: A,
            vector: &nan,
        }),
    );
    assert_eq!(out, VectorOutcome::Null);
    let r = idx.search("alpha", &query(A, "alpha", 8, 1, SearchMode::Vector));
    assert_eq!(r.hits.len(), 5);
    assert!(r.hits.iter().all(|h| h.key.starts_with('p')));
    // k larger than the pages: every match, no padding.
    let mut o = query(A, "alpha", 8, 1, SearchMode::Hybrid);
    o.k = 1000;
    let r = idx.search("alpha", &o);
    assert_eq!(r.hits.len(), 7);
    assert!(r.hits.windows(2).all(|w| w[0].score >= w[1].score));
    // k = 0.
    o.k = 0;
    assert!(idx.search("alpha", &o).hits.is_empty());
    // Zero and NaN query vectors: BM25 with a status.
    for v in [vec![0.0; 8], vec![f32::NAN; 8]] {
        let o = SearchOptions {
            query_vector: Some(QueryVector {
                model: A.into(),
                vector: v,
            }),
            ..SearchOptions::default()
        };
        let r = idx.search("alpha", &o);
        assert_eq!(r.status, SearchStatus::NullQueryVector);
        assert_eq!(r.mode, SearchMode::Bm25);
        assert_eq!(r.hits.len(), 7);
    }
    // Vector mode without a query vector.
    let o = SearchOptions {
        mode: SearchMode::Vector,
        ..SearchOptions::default()
    };
    let r = idx.search("alpha", &o);
    assert_eq!(r.status, SearchStatus::NoQueryVector);
    assert_eq!(r.hits.len(), 7);
    // An empty query in BM25 mode matches nothing; removing an unknown key is false.
    assert!(idx.search("", &bm25_only(10)).hits.is_empty());
    assert!(!idx.remove("nope"));
    // put_embeddings for an unknown key changes nothing.
    assert_eq!(
        idx.put_embeddings(A, &[("nope", &[1.0; 8])]),
        Err(SearchError::UnknownKey("nope".into()))
    );
}

#[test]
fn hybrid_fuses_both_lists_with_explain() {
    let mut idx = SearchIndex::default();
    let texts = [
        ("rust", "Rust is a systems programming language"),
        ("cargo", "Cargo builds Rust code"),
        ("python", "Python is a scripting language"),
    ];
    for (k, t) in texts {
        let v = mock_embed(t, 16, 1);
        idx.upsert(
            k,
            &page(k, t),
            Some(Embedding {
                model: A,
                vector: &v,
            }),
        );
    }
    let r = idx.search(
        "rust",
        &query(A, "Cargo builds Rust code", 16, 1, SearchMode::Hybrid),
    );
    assert_eq!(r.mode, SearchMode::Hybrid);
    let cargo = r.hits.iter().find(|h| h.key == "cargo").unwrap();
    assert_eq!(cargo.explain.vector_rank, Some(1));
    assert!(cargo.explain.bm25_rank.is_some());
    assert_eq!(cargo.explain.rrf_k, Some(60.0));
    let want = 1.0 / (60.0 + cargo.explain.bm25_rank.unwrap() as f32) + 1.0 / 61.0;
    assert!((cargo.score - want).abs() < 1e-6);
    assert!(cargo.explain.bm25.as_ref().unwrap().score > 0.0);
    // python is only in the vector list.
    let py = r.hits.iter().find(|h| h.key == "python").unwrap();
    assert!(py.explain.bm25_rank.is_none() && py.explain.bm25.is_none());
}

// ------------------------------------------------------------------------------------ persistence

fn reopen(idx: &SearchIndex) -> SearchIndex {
    let recs = idx.to_records();
    SearchIndex::from_records(recs.iter().map(|(k, v)| (k.as_str(), v.as_slice()))).unwrap()
}

fn apply(store: &mut HashMap<String, Vec<u8>>, writes: Vec<RecordWrite>) {
    for w in writes {
        match w.data {
            Some(d) => {
                store.insert(w.key, d.into_vec());
            }
            None => {
                store.remove(&w.key);
            }
        }
    }
}

fn open(store: &HashMap<String, Vec<u8>>) -> crate::Result<SearchIndex> {
    SearchIndex::from_records(store.iter().map(|(k, v)| (k.as_str(), v.as_slice())))
}

/// One record (key `key`, framed as this build frames it) framed as format `version` did,
/// checksummed with `sum`: below 3, a `meta` payload (the pages' or the passages') without the
/// tokenizer version format 3 added. (A format-1 `bm25` payload differs too: the caller swaps it.)
pub(crate) fn reframe(key: &str, bytes: &[u8], version: u32, sum: fn(&[u8]) -> u64) -> Vec<u8> {
    const HEADER: usize = 25;
    // rrf_k, ef_construction, ef_search, seed, heuristic: then the tokenizer version.
    const TOKENIZER_AT: usize = HEADER + 4 + 4 + 4 + 8 + 1;
    let mut v = bytes.to_vec();
    assert_eq!(&v[4..8], &persist::FORMAT_VERSION.to_le_bytes());
    let meta = key.strip_prefix(persist::PASSAGES_PREFIX).unwrap_or(key) == KEY_META;
    if version < 3 && meta {
        v.drain(TOKENIZER_AT..TOKENIZER_AT + 4);
        let len = (v.len() - HEADER) as u64;
        v[9..17].copy_from_slice(&len.to_le_bytes());
    }
    v[4..8].copy_from_slice(&version.to_le_bytes());
    let s = sum(&v[HEADER..]);
    v[17..25].copy_from_slice(&s.to_le_bytes());
    v
}

/// `records` as format 2 wrote them ([`reframe`]): what a wiki saved before the tokenizer
/// version was recorded holds.
pub(crate) fn as_format_2(
    records: impl IntoIterator<Item = (String, Vec<u8>)>,
) -> HashMap<String, Vec<u8>> {
    records
        .into_iter()
        .map(|(k, v)| {
            let v = reframe(&k, &v, 2, codec::checksum);
            (k, v)
        })
        .collect()
}

fn big_index(n: usize, dim: usize) -> SearchIndex {
    let mut idx = SearchIndex::default();
    let mut rng = bm25_tests_rng();
    for i in 0..n {
        let body: String = (0..30)
            .map(|_| format!("w{} ", rng.zipf(2000)))
            .collect::<String>()
            + if i % 10 == 0 { "明月 故乡" } else { "" };
        let v = mock_embed(&body, dim, 1);
        idx.upsert(
            &format!("k{i}"),
            &page(&format!("T{i}"), &body),
            Some(Embedding {
                model: A,
                vector: &v,
            }),
        );
    }
    idx
}

fn bm25_tests_rng() -> bm25::tests::Rng {
    bm25::tests::Rng(0x1234_5678_9abc_def1)
}

#[test]
fn persistence_round_trip_with_graph_and_zero_tokenizer_calls() {
    let mut idx = big_index(600, 32);
    idx.vectors_mut()
        .unwrap()
        .rebuild_with_graph_using(vectors::tests::NO_COST_CHECK);
    idx.upsert("late", &page("Late", "明月 arrives late"), None);
    idx.remove("k7");
    let mut store = HashMap::new();
    let writes = idx.dirty_records();
    // The large records are written on demand from snapshots of their bases.
    for key in [KEY_BM25, KEY_VECTORS] {
        let w = writes.iter().find(|w| w.key == key).unwrap();
        assert!(
            matches!(w.data, Some(crate::payload::Data::Source(_))),
            "{key}"
        );
    }
    apply(&mut store, writes);
    idx.mark_persisted();
    assert!(store.contains_key(KEY_HNSW));

    let before = tokenizer_calls();
    let back = open(&store).unwrap();
    assert_eq!(tokenizer_calls(), before, "opening must not tokenize");
    assert_eq!(back.len(), idx.len());
    assert!(back.vectors().unwrap().has_graph());
    for q in ["明月", "w1 w2", "故乡 w5", "late", "w17"] {
        let o = query(A, q, 32, 1, SearchMode::Hybrid);
        assert_eq!(back.search(q, &o), idx.search(q, &o), "{q}");
    }

    // An ordinary change writes meta and the deltas, not the large base records.
    idx.upsert(
        "k8",
        &page("T8", "rewritten 故乡"),
        Some(Embedding {
            model: A,
            vector: &mock_embed("x", 32, 1),
        }),
    );
    let writes = idx.dirty_records();
    let written: Vec<&str> = writes.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(
        written,
        [KEY_META, KEY_BM25_DELTA, persist::KEY_VECTORS_DELTA]
    );
    apply(&mut store, writes);
    idx.mark_persisted();
    assert!(idx.dirty_records().is_empty());
    let back = open(&store).unwrap();
    let q = "rewritten 故乡";
    assert_eq!(back.search(q, &bm25_only(5)), idx.search(q, &bm25_only(5)));
    assert_eq!(back.search(q, &bm25_only(5)).hits[0].key, "k8");
}

#[test]
fn garbage_records_are_typed_errors_never_panics() {
    let mut idx = big_index(60, 8);
    idx.vectors_mut()
        .unwrap()
        .rebuild_with_graph_using(vectors::tests::NO_COST_CHECK);
    idx.upsert("x", &page("", "delta doc"), None);
    let recs: HashMap<String, Vec<u8>> = idx.to_records().into_iter().collect();
    assert!(open(&recs).is_ok());
    // Nothing at all: an empty index (the caller rebuilds).
    assert!(open(&HashMap::new()).unwrap().is_empty());
    let is_corrupt = |r: crate::Result<SearchIndex>, key: &str| match r {
        Err(crate::Error::Corrupt { store, key: k, .. }) => {
            assert_eq!(store, crate::storage::Store::Search);
            assert_eq!(k, key);
        }
        Err(e) => panic!("{key}: unexpected error {e:?}"),
        Ok(_) => panic!("{key}: decoded"),
    };
    for key in recs.keys() {
        // Missing.
        let mut m = recs.clone();
        m.remove(key);
        is_corrupt(open(&m), key);
        // Truncated.
        let mut m = recs.clone();
        let v = m.get_mut(key).unwrap();
        v.truncate(v.len() / 2);
        is_corrupt(open(&m), key);
        // Random bytes.
        let mut m = recs.clone();
        let mut rng = bm25_tests_rng();
        *m.get_mut(key).unwrap() = (0..200).map(|_| rng.next() as u8).collect();
        is_corrupt(open(&m), key);
        // One flipped bit anywhere: the checksum catches it.
        let mut m = recs.clone();
        let v = m.get_mut(key).unwrap();
        let at = v.len() - 1;
        v[at] ^= 1;
        is_corrupt(open(&m), key);
    }
    // Records from another commit do not combine: an older bm25 base with the newer delta.
    let mut old = SearchIndex::default();
    for i in 0..300 {
        old.upsert(&format!("k{i}"), &page("", "older text"), None);
    }
    let old_recs: HashMap<String, Vec<u8>> = old.to_records().into_iter().collect();
    let mut m = recs.clone();
    m.insert(KEY_BM25.into(), old_recs[KEY_BM25].clone());
    assert!(open(&m).is_err());
    let mut m = recs.clone();
    m.insert(KEY_VECTORS.into(), recs[KEY_BM25].clone());
    is_corrupt(open(&m), KEY_VECTORS);
}

#[test]
fn version_1_records_still_open() {
    // Version 1 framed the same payloads with a `hash64` checksum (and `meta` without the
    // tokenizer version, as version 2): a wiki saved by an older build keeps its index and
    // embeddings. Any other version is refused.
    let mut idx = big_index(60, 8);
    idx.vectors_mut()
        .unwrap()
        .rebuild_with_graph_using(vectors::tests::NO_COST_CHECK);
    // Postings in the base (what the two formats lay out differently) and in the delta.
    idx.bm25.merge();
    idx.upsert("x", &page("", "delta 明月"), None);
    let recs: HashMap<String, Vec<u8>> = idx.to_records().into_iter().collect();
    // The bm25 payload as format 1 laid it out (postings as u32 arrays); every other payload is
    // the same in both formats.
    let mut w = codec::Writer::default();
    idx.bm25().base_snapshot().write_v1(&mut w);
    let bm25_v1 = w.buf;
    let framed = |version: u32, sum: fn(&[u8]) -> u64| -> HashMap<String, Vec<u8>> {
        recs.iter()
            .map(|(k, v)| {
                let mut v = v.clone();
                if version == 1 && k == KEY_BM25 {
                    v.truncate(25);
                    v[9..17].copy_from_slice(&(bm25_v1.len() as u64).to_le_bytes());
                    v.extend_from_slice(&bm25_v1);
                }
                (k.clone(), reframe(k, &v, version, sum))
            })
            .collect()
    };
    assert!(
        bm25_v1.len() > recs[KEY_BM25].len() - 25,
        "u32 arrays are larger"
    );
    let v1 = open(&framed(1, codec::hash64)).unwrap();
    for q in ["明月", "w1 w3", "delta"] {
        let opts = query(A, q, 8, 1, SearchMode::Hybrid);
        assert_eq!(v1.search(q, &opts), idx.search(q, &opts));
    }
    // Formats 1 and 2 name no tokenizer version: their postings are tokenizer 1's.
    assert_eq!(v1.tokenizer_version(), 1);
    assert_eq!(
        open(&framed(2, codec::checksum))
            .unwrap()
            .tokenizer_version(),
        1
    );
    assert_eq!(idx.tokenizer_version(), tokenizer::TOKENIZER_VERSION);
    assert!(v1.vectors().is_some_and(|v| v.has_graph()));
    // A version-1 frame checksummed the new way, and an unknown version, are refused; so is
    // a current frame around a format-1 bm25 payload.
    assert!(open(&framed(1, codec::checksum)).is_err());
    assert!(open(&framed(persist::FORMAT_VERSION + 1, codec::checksum)).is_err());
    assert!(open(&framed(persist::FORMAT_VERSION, codec::checksum)).is_ok());
    let mut m = framed(1, codec::hash64);
    let v = m.get_mut(KEY_BM25).unwrap();
    v[4..8].copy_from_slice(&persist::FORMAT_VERSION.to_le_bytes());
    let s = codec::checksum(&v[25..]);
    v[17..25].copy_from_slice(&s.to_le_bytes());
    assert!(open(&m).is_err());
}

#[test]
fn altered_payloads_with_valid_checksums_never_panic() {
    // Corruption that the checksum cannot see (the frame is rebuilt): every structural check
    // must hold, and whatever decodes must search without panicking.
    let mut idx = big_index(40, 8);
    idx.vectors_mut()
        .unwrap()
        .rebuild_with_graph_using(vectors::tests::NO_COST_CHECK);
    // BM25 postings in the base record too (varint blocks), not only in the delta.
    idx.bm25.merge();
    assert!(
        idx.bm25.base_snapshot().size() > 2000,
        "{}",
        idx.bm25.base_snapshot().size()
    );
    idx.upsert(
        "x",
        &page("x", "delta 明月"),
        Some(Embedding {
            model: A,
            vector: &[1.0; 8],
        }),
    );
    idx.remove("k3");
    let recs: HashMap<String, Vec<u8>> = idx.to_records().into_iter().collect();
    const HEADER: usize = 25;
    let mut decoded = 0;
    let mut refused = 0;
    for (key, bytes) in &recs {
        let kind = bytes[8];
        let payload = &bytes[HEADER..];
        let step = (payload.len() / 150).max(1);
        for at in (0..payload.len()).step_by(step) {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut p = payload.to_vec();
                p[at] ^= flip;
                let mut framed = bytes[..HEADER].to_vec();
                framed[17..25].copy_from_slice(&codec::checksum(&p).to_le_bytes());
                framed.extend_from_slice(&p);
                assert_eq!(framed[8], kind);
                let mut m = recs.clone();
                m.insert(key.clone(), framed);
                match open(&m) {
                    Ok(back) => {
                        decoded += 1;
                        for q in ["明月", "w1 w3", "delta"] {
                            let _ = back.search(q, &query(A, q, 8, 1, SearchMode::Hybrid));
                        }
                    }
                    Err(crate::Error::Corrupt { .. }) => refused += 1,
                    Err(e) => panic!("unexpected {e:?}"),
                }
            }
        }
    }
    assert!(
        refused > 0 && decoded > 0,
        "refused {refused}, decoded {decoded}"
    );
}

#[test]
fn ids_of_removed_pages_are_reused_safely() {
    let mut idx = SearchIndex::default();
    for i in 0..300 {
        idx.upsert(
            &format!("p{i}"),
            &page("", &format!("common unique{i}")),
            None,
        );
    }
    for i in 0..100 {
        idx.remove(&format!("p{i}"));
    }
    for i in 0..100 {
        idx.upsert(
            &format!("q{i}"),
            &page("", &format!("fresh unique{i}")),
            None,
        );
    }
    // Old ids now belong to q-pages; the p-pages' base postings must not leak into them.
    let r = idx.search("unique5", &bm25_only(10));
    assert_eq!(keys(&r), ["q5"]);
    assert_eq!(idx.search("common", &bm25_only(1000)).hits.len(), 200);
    assert_eq!(idx.search("fresh", &bm25_only(1000)).hits.len(), 100);
    let back = reopen(&idx);
    assert_eq!(back.search("unique5", &bm25_only(10)), r);
}

#[test]
fn the_large_records_are_written_in_one_allocation() {
    // A first save of a big index must not hold a record twice (growth by doubling, or a copy
    // into its frame): wasm linear memory keeps that high-water mark.
    let mut idx = SearchIndex::default();
    let bodies: Vec<String> = (0..300)
        .map(|i| {
            format!(
                "page {i} about topic{} and topic{} 明月{}",
                i % 7,
                i % 13,
                i % 5
            )
        })
        .collect();
    for (i, b) in bodies.iter().enumerate() {
        let key = format!("p{i}");
        let v = mock_embed(b, 16, 1);
        idx.upsert(
            &key,
            &page(&key, b),
            Some(Embedding {
                model: A,
                vector: &v,
            }),
        );
    }
    idx.bm25.merge();
    let recs = idx.to_records();
    for key in [KEY_BM25, KEY_VECTORS] {
        let (_, rec) = recs.iter().find(|(k, _)| k == key).unwrap();
        assert_eq!(rec.capacity(), rec.len(), "{key}");
    }
    // Still the same format: it opens and answers alike.
    let back = reopen(&idx);
    assert_eq!(
        keys(&back.search("topic3 明月", &bm25_only(5))),
        keys(&idx.search("topic3 明月", &bm25_only(5)))
    );
}

/// The `bm25` record is a source written on demand from a snapshot of the base: written after
/// the index merged (and its old base arrays were replaced), it still holds the base as it was
/// when the records were taken, decodes, and equals `to_records`' bytes of that moment.
#[test]
fn bm25_record_written_after_the_index_moved_on_is_the_base_it_was_taken_from() {
    let mut idx = SearchIndex::default();
    let bodies: Vec<String> = (0..400)
        .map(|i| format!("alpha w{i} 明月 {}", i % 7))
        .collect();
    let names: Vec<String> = (0..400).map(|i| format!("k{i}")).collect();
    idx.upsert_many(
        names
            .iter()
            .zip(&bodies)
            .map(|(k, b)| (k.as_str(), page("T", b))),
    );
    let then: HashMap<String, Vec<u8>> = idx.to_records().into_iter().collect();
    let writes = idx.dirty_records();
    let bm25 = writes
        .iter()
        .find(|w| w.key == KEY_BM25)
        .and_then(|w| w.data.clone())
        .unwrap();
    assert!(matches!(bm25, crate::payload::Data::Source(_)));
    idx.mark_persisted();

    // Move on: enough changes for a merge, which replaces the base arrays.
    for i in 0..300 {
        idx.upsert(&format!("k{i}"), &page("T", "changed beta 故乡"), None);
    }
    assert!(idx.dirty_records().iter().any(|w| w.key == KEY_BM25));

    let bytes = bm25.to_vec();
    assert_eq!(bm25.len(), bytes.len());
    assert_eq!(
        &bytes, &then[KEY_BM25],
        "the snapshot's record, byte for byte"
    );
    let mut store = then.clone();
    store.insert(KEY_BM25.into(), bytes);
    let back = open(&store).unwrap();
    assert_eq!(back.len(), 400);
    assert_eq!(keys(&back.search("beta", &bm25_only(10))).len(), 0);
    assert_eq!(keys(&back.search("alpha", &bm25_only(500))).len(), 400);
}

/// A build fed in batches (two passes) gives the same index as `upsert_many` — the same records,
/// byte for byte — and refuses a second pass that differs from the first.
#[test]
fn batched_build_equals_upsert_many_and_refuses_a_changed_second_pass() {
    let mut rng = bm25_tests_rng();
    let pages: Vec<(String, String, String)> = (0..500)
        .map(|i| {
            let body: String = (0..40).map(|_| format!("w{} ", rng.zipf(3000))).collect();
            let body = if i % 9 == 0 {
                body + "明月几时有 故乡"
            } else {
                body
            };
            (format!("page-{i}"), format!("Title {i}"), body)
        })
        .collect();
    fn fields(p: &(String, String, String)) -> DocFields<'_> {
        DocFields {
            title: &p.1,
            aliases: &[],
            body: &p.2,
        }
    }
    let mut whole = SearchIndex::default();
    whole.upsert_many(pages.iter().map(|p| (p.0.as_str(), fields(p))));

    let mut b = SearchIndex::builder(SearchConfig::default());
    for chunk in pages.chunks(64) {
        for p in chunk {
            b.count(&p.0, &fields(p)).unwrap();
        }
    }
    for chunk in pages.chunks(100) {
        for p in chunk {
            b.fill(&p.0, &fields(p)).unwrap();
        }
    }
    let built = b.finish().unwrap();
    assert_eq!(built.len(), 500);
    assert_eq!(built.to_records(), whole.to_records());
    for q in ["明月", "w1 w2", "故乡 w5", "title 7"] {
        assert_eq!(
            keys(&built.search(q, &bm25_only(10))),
            keys(&whole.search(q, &bm25_only(10))),
            "{q}"
        );
    }

    // A page given twice, a page changed between the passes, a page missing from the second.
    let mut b = SearchIndex::builder(SearchConfig::default());
    b.count("a", &page("A", "one two")).unwrap();
    assert!(b.count("a", &page("A", "one two")).is_err());
    b.count("b", &page("B", "three")).unwrap();
    assert!(b.fill("a", &page("A", "one two changed")).is_err());
    let mut b = SearchIndex::builder(SearchConfig::default());
    b.count("a", &page("A", "one two")).unwrap();
    b.count("b", &page("B", "three")).unwrap();
    assert!(b.fill("b", &page("B", "three")).is_err(), "out of order");
    let mut b = SearchIndex::builder(SearchConfig::default());
    b.count("a", &page("A", "one two")).unwrap();
    b.count("b", &page("B", "three")).unwrap();
    b.fill("a", &page("A", "one two")).unwrap();
    assert!(b.fill("c", &page("C", "x")).is_err(), "never counted");
    assert!(b.finish().is_err(), "b is missing from the second pass");
}

// ------------------------------------------------------------------- older tokenizer's index

/// Pages of an index tokenizer 1 made: one in Traditional characters, one in Simplified.
const OLD_PAGES: [(&str, &str, &str); 3] = [
    ("trad", "編譯維基", "編譯維基把筆記整理成頁面。"),
    ("simp", "活字", "现存最早的金属活字印本"),
    ("poem", "靜夜思", "床前明月光，疑是地上霜。"),
];

const OLD_PASSAGES: [NewPassage<'static>; 2] = [
    NewPassage {
        heading: "編譯",
        text: "編譯維基的壓縮會丟失資訊。",
        lines: (1, 3),
    },
    NewPassage {
        heading: "",
        text: "分块太小，一段话失去上下文。",
        lines: (5, 5),
    },
];

#[test]
fn an_index_an_older_tokenizer_made_is_retokenized_keeping_its_vectors() {
    let fields = || OLD_PAGES.iter().map(|(k, t, b)| (*k, page(t, b)));
    // Written as an older build wrote it: tokenizer 1, format 2, with vectors, a graph and
    // source passages with vectors of their own.
    let old = tokenizer::as_version_1(|| {
        let mut idx = SearchIndex::default();
        for (k, t, b) in OLD_PAGES {
            let v = mock_embed(b, 8, 1);
            let e = Embedding {
                model: A,
                vector: &v,
            };
            idx.upsert(k, &page(t, b), Some(e));
        }
        idx.vectors_mut()
            .unwrap()
            .rebuild_with_graph_using(vectors::tests::NO_COST_CHECK);
        idx.set_source_passages("notes.md", "v1", &OLD_PASSAGES);
        let keys = idx.source_passage_keys("notes.md").to_vec();
        let vs: Vec<Vec<f32>> = OLD_PASSAGES
            .iter()
            .map(|p| mock_embed(p.text, 8, 2))
            .collect();
        let items: Vec<(&str, &[f32])> = keys
            .iter()
            .map(String::as_str)
            .zip(vs.iter().map(Vec::as_slice))
            .collect();
        idx.put_passage_embeddings(A, &items).unwrap();
        idx
    });
    assert_eq!(old.tokenizer_version(), 1);
    let mut store = as_format_2(old.to_records());
    let vector_keys: Vec<String> = store
        .keys()
        .filter(|k| k.contains("vectors") || k.contains("hnsw"))
        .cloned()
        .collect();
    assert_eq!(vector_keys.len(), 5, "{vector_keys:?}");
    let stored_vectors: Vec<Vec<u8>> = vector_keys.iter().map(|k| store[k].clone()).collect();

    let mut idx = open(&store).unwrap();
    assert_eq!(idx.tokenizer_version(), 1);
    assert!(idx.needs_retokenize());
    // Its postings hold the Traditional characters as written: a Simplified question misses.
    assert!(idx.search("编译", &bm25_only(10)).hits.is_empty());
    let by_vector = |idx: &SearchIndex| {
        let pages = idx.search("x", &query(A, "编译维基", 8, 1, SearchMode::Vector));
        let mut o = query(A, "压缩", 8, 2, SearchMode::Vector);
        o.passages = true;
        (pages, idx.search("x", &o))
    };
    let vector_hits = by_vector(&idx);
    assert!(!vector_hits.0.hits.is_empty() && !vector_hits.1.hits.is_empty());

    let before = tokenizer_calls();
    assert_eq!(idx.retokenize(fields()), SyncReport::default());
    let mut job = idx.retokenize_passages();
    job.add([("notes.md", Some(&OLD_PASSAGES[..]))]);
    assert_eq!(job.finish(), 0);
    // Every field (title and body) of every page and passage, in the two passes of one build.
    assert_eq!(tokenizer_calls() - before, 2 * (3 * 2 + 2 * 2));
    assert!(!idx.needs_retokenize());
    assert_eq!(idx.tokenizer_version(), tokenizer::TOKENIZER_VERSION);

    // Either script finds text in both.
    assert_eq!(keys(&idx.search("编译", &bm25_only(10))), ["trad"]);
    assert_eq!(keys(&idx.search("金屬活字", &bm25_only(10))), ["simp"]);
    let mut o = bm25_only(10);
    o.passages = true;
    let r = idx.search("压缩会丢失", &o);
    assert_eq!(r.hits[0].kind, HitKind::Passage);
    assert_eq!(idx.passage(&r.hits[0].key).unwrap().heading, "編譯");
    // The vectors are those stored: the same hits by vector, and their records are not written.
    assert_eq!(by_vector(&idx), vector_hits);
    let writes = idx.dirty_records();
    assert!(
        writes.iter().all(|w| !vector_keys.contains(&w.key)),
        "{:?}",
        writes.iter().map(|w| &w.key).collect::<Vec<_>>()
    );
    apply(&mut store, writes);
    idx.mark_persisted();
    for (k, bytes) in vector_keys.iter().zip(&stored_vectors) {
        assert_eq!(&store[k], bytes, "{k}");
    }

    // Reopened: current, nothing tokenized, the same results.
    let before = tokenizer_calls();
    let back = open(&store).unwrap();
    assert_eq!(tokenizer_calls(), before);
    assert!(!back.needs_retokenize());
    for q in ["编译", "金屬活字", "明月"] {
        assert_eq!(
            back.search(q, &bm25_only(10)),
            idx.search(q, &bm25_only(10)),
            "{q}"
        );
    }
    assert_eq!(back.search("压缩会丢失", &o), idx.search("压缩会丢失", &o));
    assert_eq!(by_vector(&back), vector_hits);
}

#[test]
fn retokenizing_drops_what_changed_and_passages_that_no_longer_match() {
    let mut idx = tokenizer::as_version_1(|| {
        let mut idx = SearchIndex::default();
        for (k, t, b) in OLD_PAGES {
            let v = mock_embed(b, 8, 1);
            let e = Embedding {
                model: A,
                vector: &v,
            };
            idx.upsert(k, &page(t, b), Some(e));
        }
        idx.set_source_passages("a.md", "v1", &OLD_PASSAGES[..1]);
        idx.set_source_passages("b.md", "v1", &OLD_PASSAGES[1..]);
        idx.set_source_passages("c.md", "v1", &OLD_PASSAGES);
        idx
    });
    // A page changed since (its vector describes the old text), one is gone, one is new.
    let pages = [
        ("trad", "編譯維基", "編譯維基，改過了。"),
        ("simp", "活字", "现存最早的金属活字印本"),
        ("new", "新頁", "新的一頁"),
    ];
    let r = idx.retokenize(pages.iter().map(|(k, t, b)| (*k, page(t, b))));
    assert_eq!(
        r,
        SyncReport {
            added: 1,
            updated: 1,
            removed: 1
        }
    );
    assert_eq!(idx.missing_embeddings(A, 8), ["new", "trad"]);
    assert_eq!(keys(&idx.search("编译", &bm25_only(10))), ["trad"]);
    assert!(idx.search("明月", &bm25_only(10)).hits.is_empty());
    // a.md cuts as before; b.md now cuts otherwise; c.md's text is unreadable; d.md is not
    // indexed. Dropped unfinished, the job still finishes.
    let moved = [NewPassage {
        lines: (6, 6),
        ..OLD_PASSAGES[1]
    }];
    {
        let mut job = idx.retokenize_passages();
        job.add([
            ("a.md", Some(&OLD_PASSAGES[..1])),
            ("b.md", Some(&moved[..])),
            ("c.md", None),
            ("d.md", Some(&OLD_PASSAGES[..])),
        ]);
    }
    assert!(!idx.needs_retokenize());
    assert_eq!(idx.passage_sources().len(), 1);
    assert_eq!(idx.passage_count(), 1);
    let mut o = bm25_only(10);
    o.passages = true;
    assert_eq!(idx.search("压缩", &o).hits.len(), 1);
    // Sources no batch gave lose their passages too.
    let mut idx2 = tokenizer::as_version_1(|| {
        let mut idx = SearchIndex::default();
        idx.set_source_passages("a.md", "v1", &OLD_PASSAGES);
        idx
    });
    assert_eq!(idx2.retokenize_passages().finish(), 2);
    assert_eq!(idx2.passage_count(), 0);
    let nested = idx2.passage_index().unwrap().tokenizer_version();
    assert_eq!(nested, tokenizer::TOKENIZER_VERSION);
    // The records still open.
    let store: HashMap<String, Vec<u8>> = idx.to_records().into_iter().collect();
    assert!(open(&store).is_ok());
}
