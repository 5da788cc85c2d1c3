//! Search on a wiki in MemoryStorage: build, save, reopen without tokenizing, rebuild when stale.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use futures::executor::block_on;
use llm_wiki::search::tokenizer::tokenizer_calls;
use llm_wiki::search::vectors::{build_graph_with, GraphVerdict, InstallOutcome, HNSW_MIN_ROWS};
use llm_wiki::search::{SearchMode, SearchOptions};
use llm_wiki::search_ops::{VectorIndexOptions, SEARCH_OP_KEY};
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{Batch, Expect, Storage, Store};
use llm_wiki::wiki::PageEdit;

use common::W;

/// The wiki `search` on `backend` ([`common::open`]).
fn open(backend: &MemoryBackend) -> W {
    common::open(backend, "search")
}

fn put(w: &W, title: &str, body: &str) {
    block_on(w.put_page(PageEdit {
        title: Some(title.into()),
        body: Some(body.into()),
        ..Default::default()
    }))
    .unwrap();
}

fn bm25() -> SearchOptions {
    SearchOptions {
        mode: SearchMode::Bm25,
        ..SearchOptions::default()
    }
}

#[test]
fn index_is_saved_and_reopened_without_tokenizing() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    put(
        &w,
        "静夜思",
        "床前明月光，疑是地上霜。举头望明月，低头思故乡。",
    );
    put(&w, "Ownership", "Each value in Rust has one owner.");
    put(&w, "초과근무", "초과근무 승인 규칙");
    let r = block_on(w.search("故乡", &bm25())).unwrap();
    assert_eq!(r.hits[0].key, "静夜思");
    w.storage().close();

    let w = open(&backend);
    let before = tokenizer_calls();
    let index = block_on(w.search_index()).unwrap();
    assert_eq!(tokenizer_calls(), before, "reopening must not tokenize");
    assert_eq!(index.len(), 3);
    assert_eq!(index.search("승인", &bm25()).hits[0].key, "초과근무");
    assert_eq!(index.search("owner", &bm25()).hits[0].key, "Ownership");

    // Every operation carried its index delta, vectors included (the built-in offline embedding).
    assert_eq!(index.vectors().unwrap().live(), 3);
    assert_eq!(index.vectors().unwrap().model(), "offline-hash-v1");

    // An operation that did not update the index (an older build, a raw write) makes it stale:
    // it is synchronised with the pages, tokenizing only the new page (title and body: two
    // calls) and keeping the vectors of the others.
    let mut page: llm_wiki::model::Page = serde_json::from_slice(
        &block_on(w.storage().get(Store::Pages, "Ownership"))
            .unwrap()
            .unwrap()
            .data,
    )
    .unwrap();
    page.key = "故乡".into();
    page.title = "故乡".into();
    page.body = "Hometown.".into();
    let mut b = Batch::new();
    b.put(
        Store::Pages,
        "故乡",
        serde_json::to_vec(&page).unwrap(),
        Expect::Absent,
    );
    common::commit_as_another_build(&w, b);
    let before = tokenizer_calls();
    let index = block_on(w.search_index()).unwrap();
    assert_eq!(tokenizer_calls() - before, 2);
    let r = index.search("故乡", &bm25());
    assert_eq!(r.hits[0].key, "故乡"); // the title weighs more than one body occurrence
    assert_eq!(r.hits.len(), 2);
    assert_eq!(index.vectors().unwrap().live(), 3);
    // Saving an index loaded before another operation is refused.
    let mut stale = index;
    put(&w, "Other", "x");
    assert!(matches!(
        block_on(w.save_search_index(&mut stale)),
        Err(llm_wiki::Error::Conflict { .. })
    ));
}

#[test]
fn corrupt_records_are_rebuilt() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    put(&w, "Alpha", "first page");
    block_on(w.search_index()).unwrap();
    let mut b = Batch::new();
    b.put(Store::Search, "bm25", b"garbage".to_vec(), Expect::Any);
    block_on(w.storage().commit(b)).unwrap();
    let index = block_on(w.search_index()).unwrap();
    assert_eq!(index.search("first", &bm25()).hits[0].key, "Alpha");
    // And the rebuilt records are sound again.
    let stamp = block_on(w.storage().get(Store::Search, SEARCH_OP_KEY)).unwrap();
    assert!(stamp.is_some());
    let before = tokenizer_calls();
    block_on(w.search_index()).unwrap();
    assert_eq!(tokenizer_calls(), before);
}

/// An embedding model of its own (another name and dimension than the offline one), counting
/// its calls: the offline hashed vectors, folded to `dim` dimensions (32 unless changed: the
/// same model name can start returning another dimension).
struct Folded {
    calls: std::cell::Cell<usize>,
    dim: std::cell::Cell<usize>,
}

impl Folded {
    fn new() -> Self {
        Folded {
            calls: Default::default(),
            dim: std::cell::Cell::new(32),
        }
    }
}

impl llm_wiki::llm::Embedder for Folded {
    fn model(&self) -> String {
        "folded-32".into()
    }
    async fn embed(
        &self,
        texts: &[String],
        cancel: &llm_wiki::llm::Cancel,
    ) -> llm_wiki::Result<llm_wiki::llm::Embeddings> {
        cancel.check()?;
        self.calls.set(self.calls.get() + 1);
        let offline = llm_wiki::llm::offline::OfflineEmbedder::new();
        let vectors: Vec<Vec<f32>> = texts
            .iter()
            .map(|t| {
                let d = self.dim.get();
                let mut v = vec![0f32; d];
                for (i, x) in offline.embed_one(t).into_iter().enumerate() {
                    v[i % d] += x;
                }
                v
            })
            .collect();
        Ok(llm_wiki::llm::Embeddings {
            model: self.model(),
            dimension: self.dim.get(),
            vectors,
            usage: Default::default(),
        })
    }
}

#[test]
fn f28_a_new_embedding_model_waits_for_confirmation_then_re_embeds_in_saved_batches() {
    use llm_wiki::search::{EmbeddingStatus, QueryVector, SearchStatus};
    use llm_wiki::search_ops::{EmbedOptions, EmbedProgress};
    let backend = MemoryBackend::new();
    let w = open(&backend);
    for (t, b) in [
        ("Ownership", "Each value in Rust has one owner."),
        ("Borrowing", "References borrow a value without owning it."),
        ("Slices", "A slice references a contiguous sequence."),
        ("静夜思", "床前明月光，疑是地上霜。"),
        ("Threads", "Threads run code at the same time."),
    ] {
        put(&w, t, b);
    }
    // The offline vectors are there (the default embedding).
    assert_eq!(
        block_on(w.embedding_status()).unwrap().status,
        EmbeddingStatus::Ready { missing: 0 }
    );
    let model = Folded::new();
    let none = llm_wiki::llm::Cancel::new();
    // Another model: nothing is embedded without confirmation.
    let r = block_on(w.embed_pages(&model, &EmbedOptions::default(), &|_| {}, &none)).unwrap();
    assert_eq!(r.embedded, 0);
    assert_eq!(model.calls.get(), 0);
    assert!(
        matches!(r.status, EmbeddingStatus::ReembedRequired { .. }),
        "{r:?}"
    );

    // Confirmed, in batches of 2; cancelled after the first batch: that batch stays saved.
    let cancel = llm_wiki::llm::Cancel::new();
    let seen = std::cell::RefCell::new(Vec::<EmbedProgress>::new());
    let options = EmbedOptions {
        confirm: true,
        batch_size: 2,
    };
    let r = block_on(w.embed_pages(
        &model,
        &options,
        &|p| {
            seen.borrow_mut().push(p);
            cancel.cancel();
        },
        &cancel,
    ));
    assert!(matches!(r, Err(llm_wiki::Error::Cancelled)), "{r:?}");
    assert_eq!(*seen.borrow(), vec![EmbedProgress { done: 2, total: 5 }]);
    // Meanwhile searches keep the old vectors: an offline query vector is still served.
    let hybrid = SearchOptions::default();
    let r = block_on(w.search("owner", &hybrid)).unwrap();
    assert_eq!(r.status, SearchStatus::Ok);
    assert_eq!(r.hits[0].key, "Ownership");

    // Reopened, the run resumes with the 3 pages left and then replaces the old vectors.
    w.storage().close();
    let w = open(&backend);
    seen.borrow_mut().clear();
    let r =
        block_on(w.embed_pages(&model, &options, &|p| seen.borrow_mut().push(p), &none)).unwrap();
    assert_eq!(r.embedded, 3);
    assert_eq!(r.status, EmbeddingStatus::Ready { missing: 0 });
    assert_eq!(
        seen.borrow().last(),
        Some(&EmbedProgress { done: 3, total: 3 })
    );
    let index = block_on(w.search_index()).unwrap();
    assert_eq!(index.active_model(), Some(("folded-32", 32)));
    // The new model's query vectors are served; the old model's fall back to BM25, saying why.
    let q = block_on(llm_wiki::llm::Embedder::embed(
        &model,
        &["owner".into()],
        &none,
    ))
    .unwrap();
    let with = SearchOptions {
        query_vector: Some(QueryVector {
            model: "folded-32".into(),
            vector: q.vectors[0].clone(),
        }),
        mode: SearchMode::Vector,
        ..SearchOptions::default()
    };
    let r = block_on(w.search("owner", &with)).unwrap();
    assert_eq!((r.mode, &r.status), (SearchMode::Vector, &SearchStatus::Ok));
    let r = block_on(w.search("owner", &hybrid)).unwrap();
    assert_eq!(r.mode, SearchMode::Bm25);
    assert!(
        matches!(r.status, SearchStatus::ReembedRequired { .. }),
        "{r:?}"
    );
    assert_eq!(r.hits[0].key, "Ownership");

    // A new page lacks a vector of the model until the next run embeds just that one.
    put(&w, "Closures", "Closures capture their environment.");
    let calls = model.calls.get();
    let r = block_on(w.embed_pages(&model, &EmbedOptions::default(), &|_| {}, &none)).unwrap();
    assert_eq!((r.embedded, model.calls.get()), (1, calls + 1));
    // Nothing left: no call at all.
    let r = block_on(w.embed_pages(&model, &EmbedOptions::default(), &|_| {}, &none)).unwrap();
    assert_eq!((r.embedded, model.calls.get()), (0, calls + 1));
}

/// A model that keeps its name but starts returning another dimension (a new variant behind the
/// same tag): no error, nothing mixed — `reembedRequired` until confirmed, BM25 meanwhile, then
/// a re-embed to the new dimension.
#[test]
fn the_same_model_under_a_new_dimension_needs_a_confirmed_re_embed() {
    use llm_wiki::llm::config::{Config, EmbeddingProvider};
    use llm_wiki::search::{EmbeddingStatus, QueryVector, SearchStatus};
    use llm_wiki::search_ops::EmbedOptions;
    let backend = MemoryBackend::new();
    let w = open(&backend);
    let mut config = Config {
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "chat".into(),
        ..Config::default()
    };
    config.embeddings.provider = EmbeddingProvider::OpenAi;
    config.embeddings.model = "folded-32".into();
    block_on(w.set_llm_config(config)).unwrap();
    for (t, b) in [
        ("Ownership", "Each value in Rust has one owner."),
        ("Borrowing", "References borrow a value without owning it."),
        ("静夜思", "床前明月光，疑是地上霜。"),
    ] {
        put(&w, t, b);
    }
    let model = Folded::new();
    let none = llm_wiki::llm::Cancel::new();
    let r = block_on(w.embed_pages(&model, &EmbedOptions::default(), &|_| {}, &none)).unwrap();
    assert_eq!(r.embedded, 3);
    assert_eq!(r.status, EmbeddingStatus::Ready { missing: 0 });

    // The model now answers with 48 dimensions. A new page needs a vector: the call shows the
    // change, and nothing is stored or mixed.
    model.dim.set(48);
    put(&w, "Slices", "A slice references a contiguous sequence.");
    let r = block_on(w.embed_pages(&model, &EmbedOptions::default(), &|_| {}, &none)).unwrap();
    assert_eq!(r.embedded, 0);
    let required = EmbeddingStatus::ReembedRequired {
        stored_model: "folded-32".into(),
        stored_dim: 32,
    };
    assert_eq!(r.status, required);
    // The status says so from now on, without a call; so does a search with the new vectors.
    let calls = model.calls.get();
    assert_eq!(block_on(w.embedding_status()).unwrap().status, required);
    let r = block_on(w.embed_pages(&model, &EmbedOptions::default(), &|_| {}, &none)).unwrap();
    assert_eq!((r.embedded, &r.status), (0, &required));
    assert_eq!(model.calls.get(), calls);
    let q = block_on(llm_wiki::llm::Embedder::embed(
        &model,
        &["owner".into()],
        &none,
    ))
    .unwrap();
    let with = SearchOptions {
        query_vector: Some(QueryVector {
            model: "folded-32".into(),
            vector: q.vectors[0].clone(),
        }),
        ..SearchOptions::default()
    };
    let r = block_on(w.search("owner", &with)).unwrap();
    assert_eq!(r.mode, SearchMode::Bm25);
    assert!(
        matches!(
            r.status,
            SearchStatus::ReembedRequired {
                stored_dim: 32,
                configured_dim: 48,
                ..
            }
        ),
        "{r:?}"
    );
    assert_eq!(r.hits[0].key, "Ownership");

    // Confirmed: every page gets a 48-d vector, and they replace the 32-d ones.
    let confirm = EmbedOptions {
        confirm: true,
        ..EmbedOptions::default()
    };
    let r = block_on(w.embed_pages(&model, &confirm, &|_| {}, &none)).unwrap();
    assert_eq!(r.embedded, 4);
    assert_eq!(r.status, EmbeddingStatus::Ready { missing: 0 });
    assert_eq!(
        block_on(w.search_index()).unwrap().active_model(),
        Some(("folded-32", 48))
    );
    assert_eq!(
        block_on(w.embedding_status()).unwrap().status,
        EmbeddingStatus::Ready { missing: 0 }
    );
    let r = block_on(w.search("owner", &with)).unwrap();
    assert_eq!((r.mode, &r.status), (SearchMode::Hybrid, &SearchStatus::Ok));
}

/// Searches reuse the decoded index until its stamp record changes — a commit here, or a save
/// by another tab on the same database — and then see the change.
#[test]
fn searches_reuse_the_decoded_index_until_a_commit_or_another_tab_changes_it() {
    use std::rc::Rc;
    let backend = MemoryBackend::new();
    let w = open(&backend);
    put(&w, "Ownership", "Each value in Rust has one owner.");
    let a = block_on(w.search_index_shared()).unwrap();
    let b = block_on(w.search_index_shared()).unwrap();
    assert!(
        Rc::ptr_eq(&a, &b),
        "the second read decoded the index again"
    );
    assert_eq!(block_on(w.search("owner", &bm25())).unwrap().hits.len(), 1);

    // A commit here.
    put(
        &w,
        "Borrowing",
        "Borrowing a value leaves the owner in place.",
    );
    let c = block_on(w.search_index_shared()).unwrap();
    assert!(!Rc::ptr_eq(&b, &c));
    assert_eq!(block_on(w.search("owner", &bm25())).unwrap().hits.len(), 2);

    // Another tab commits (a second connection to the same database).
    let other = open(&backend);
    put(
        &other,
        "Owners",
        "An owner drops its value at the end of scope.",
    );
    let hits = block_on(w.search("owner", &bm25())).unwrap().hits;
    assert_eq!(hits.len(), 3, "{hits:?}");
    // Another tab saves the index without an operation (embeddings): read again too.
    let d = block_on(w.search_index_shared()).unwrap();
    let mut index = block_on(other.search_index()).unwrap();
    block_on(other.save_search_index(&mut index)).unwrap();
    let e = block_on(w.search_index_shared()).unwrap();
    assert!(!Rc::ptr_eq(&d, &e));

    // Two saves from the same stamp (an embedding batch here, a graph install in another tab):
    // the second is a conflict, never a mix of the two indexes' records.
    let mut mine = block_on(w.search_index()).unwrap();
    let mut theirs = block_on(other.search_index()).unwrap();
    block_on(other.save_search_index(&mut theirs)).unwrap();
    let r = block_on(w.save_search_index(&mut mine));
    assert!(matches!(r, Err(llm_wiki::Error::Conflict { .. })), "{r:?}");
    // Reloaded, it saves; and the cache serves what was saved last.
    let mut mine = block_on(w.search_index()).unwrap();
    block_on(w.save_search_index(&mut mine)).unwrap();
    let f = block_on(w.search_index_shared()).unwrap();
    assert!(!Rc::ptr_eq(&e, &f));
    assert!(Rc::ptr_eq(&f, &block_on(w.search_index_shared()).unwrap()));
}

/// A page body of words drawn from a small vocabulary by `i`, so the offline vectors differ.
fn body_of(i: usize) -> String {
    const WORDS: [&str; 12] = [
        "harbour", "lantern", "granite", "meadow", "copper", "violin", "glacier", "orchard",
        "saffron", "quartz", "falcon", "tundra",
    ];
    (0..12)
        .map(|j| WORDS[(i * 7 + j * j * 3 + i / 3) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
        + &format!(" item{i}")
}

fn vector_top(w: &W, query: &str) -> Vec<String> {
    let opts = SearchOptions {
        k: 10,
        mode: SearchMode::Vector,
        explain: false,
        ..SearchOptions::default()
    };
    let r = block_on(w.search(query, &opts)).unwrap();
    assert_eq!(r.mode, SearchMode::Vector, "{:?}", r.status);
    r.hits.into_iter().map(|h| h.key).collect()
}

#[test]
fn vector_graph_job_install_persist_and_changes_made_during_the_build() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    for i in 0..60 {
        put(&w, &format!("Page {i}"), &body_of(i));
    }
    // Below the default threshold: no job, exact scan.
    assert!(block_on(w.vector_rebuild_job()).unwrap().is_none());
    let status = block_on(w.vector_index_status()).unwrap().unwrap();
    assert_eq!(status.rows, 60);
    assert_eq!(status.min_rows, HNSW_MIN_ROWS);
    assert!(!status.graph && !status.needs_rebuild);
    let queries = [
        "harbour lantern",
        "glacier falcon tundra",
        "item7",
        "violin orchard",
    ];
    let exact: Vec<Vec<String>> = queries.iter().map(|q| vector_top(&w, q)).collect();

    // A lower threshold (the test-only knob): a job; the graph is built "in a worker".
    w.set_vector_index_options(VectorIndexOptions {
        min_rows: 40,
        require_cheaper: false,
    });
    assert!(
        block_on(w.vector_index_status())
            .unwrap()
            .unwrap()
            .needs_rebuild
    );
    let rebuild = block_on(w.vector_rebuild_job()).unwrap().unwrap();
    assert_eq!(rebuild.job.len(), 60);
    assert!(!rebuild.options.require_cheaper);
    let built = build_graph_with(
        rebuild.job.vectors(),
        rebuild.job.dim(),
        rebuild.params,
        rebuild.options,
    );
    assert_eq!(built.verdict, GraphVerdict::Kept, "{built:?}");

    // Meanwhile (after the snapshot, before the install): a page changes, one is added.
    let p5 = block_on(w.page("Page 5")).unwrap().unwrap();
    block_on(w.put_page(PageEdit {
        key: Some(p5.key.clone()),
        body: Some("zeppelin zeppelin zeppelin mandolin".into()),
        ..Default::default()
    }))
    .unwrap();
    put(&w, "Page new", "mandolin zeppelin");

    let installed = block_on(w.install_vector_graph(rebuild.job.clone(), built.bytes.as_deref()));
    assert_eq!(installed.unwrap(), InstallOutcome::Installed);
    let status = block_on(w.vector_index_status()).unwrap().unwrap();
    assert!(status.graph, "{status:?}");
    assert_eq!(status.rows, 61);
    // The changed page's new vector and the new page sit in the exact-scan delta; the changed
    // page's snapshot row is dead.
    assert_eq!((status.delta, status.dead), (2, 1));
    assert!(!status.needs_rebuild);
    let mut top2 = vector_top(&w, "zeppelin mandolin")[..2].to_vec();
    top2.sort();
    let new_key = block_on(w.page("Page new")).unwrap().unwrap().key;
    let mut want = vec![p5.key.clone(), new_key.clone()];
    want.sort();
    assert_eq!(top2, want);
    // The same job again: stale (the base was rebuilt), nothing written.
    let again = block_on(w.install_vector_graph(rebuild.job.clone(), built.bytes.as_deref()));
    assert_eq!(again.unwrap(), InstallOutcome::Stale);
    // Garbage bytes for a fresh job: an error, nothing written.
    w.set_vector_index_options(VectorIndexOptions {
        min_rows: 1,
        require_cheaper: false,
    });
    let status_before = block_on(w.vector_index_status()).unwrap();
    let fresh = block_on(w.vector_rebuild_job()).unwrap();
    if let Some(fresh) = fresh {
        assert!(block_on(w.install_vector_graph(fresh.job, Some(&[1, 2, 3]))).is_err());
    }
    assert_eq!(block_on(w.vector_index_status()).unwrap(), status_before);
    w.storage().close();

    // Reopened from storage: the graph is read back, searches agree with the exact scan.
    let w = open(&backend);
    let status = block_on(w.vector_index_status()).unwrap().unwrap();
    assert!(
        status.graph,
        "the graph comes back from storage: {status:?}"
    );
    assert_eq!(status.ef_search, Some(built.ef_search as usize));
    for (q, want) in queries.iter().zip(&exact) {
        let got = vector_top(&w, q);
        // Page 5 changed since the exact answers were taken: compare without it.
        let strip = |v: &[String]| -> Vec<String> {
            v.iter()
                .filter(|k| **k != p5.key && **k != new_key)
                .cloned()
                .collect()
        };
        let (g, e) = (strip(&got), strip(want));
        let n = g.len().min(e.len()).min(8);
        assert_eq!(g[..n], e[..n], "query {q}");
    }
}

#[test]
fn a_declined_graph_build_is_remembered_until_the_vectors_grow_by_half() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    for i in 0..40 {
        put(&w, &format!("Page {i}"), &body_of(i));
    }
    // The product's cost check on 40 rows: the exact scan is cheaper, the graph is dropped.
    w.set_vector_index_options(VectorIndexOptions {
        min_rows: 20,
        require_cheaper: true,
    });
    let rebuild = block_on(w.vector_rebuild_job()).unwrap().unwrap();
    let built = build_graph_with(
        rebuild.job.vectors(),
        rebuild.job.dim(),
        rebuild.params,
        rebuild.options,
    );
    assert_eq!(built.verdict, GraphVerdict::NotCheaper, "{built:?}");
    assert!(built.bytes.is_none());
    assert_eq!(
        block_on(w.install_vector_graph(rebuild.job, None)).unwrap(),
        InstallOutcome::Installed
    );
    w.storage().close();
    let w = open(&backend);
    w.set_vector_index_options(VectorIndexOptions {
        min_rows: 20,
        require_cheaper: true,
    });
    let status = block_on(w.vector_index_status()).unwrap().unwrap();
    assert_eq!(
        status.declined_at,
        Some(40),
        "remembered in storage: {status:?}"
    );
    assert!(!status.graph && !status.needs_rebuild);
    assert!(block_on(w.vector_rebuild_job()).unwrap().is_none());
    for i in 40..59 {
        put(&w, &format!("Page {i}"), &body_of(i));
    }
    assert!(
        block_on(w.vector_rebuild_job()).unwrap().is_none(),
        "59 < 60"
    );
    put(&w, "Page 59", &body_of(59));
    assert!(
        block_on(w.vector_rebuild_job()).unwrap().is_some(),
        "60 = 40 × 1.5"
    );
}

#[test]
fn one_unusable_vector_in_a_batch_skips_only_its_page_and_says_so() {
    use llm_wiki::search::{EmbeddingStatus, QueryVector, SearchStatus};
    use llm_wiki::search_ops::{BadVector, EmbedOptions, SkippedEmbedding};
    let backend = MemoryBackend::new();
    let w = open(&backend);
    for (t, b) in [
        ("Ownership", "Each value in Rust has one owner."),
        ("Borrowing", "References borrow a value without owning it."),
        ("Slices", "A slice references a contiguous sequence."),
        ("静夜思", "床前明月光，疑是地上霜。"),
        ("Threads", "Threads run code at the same time."),
    ] {
        put(&w, t, b);
    }
    // One batch of five: the endpoint answers one input with NaN and another with zeros.
    let model = llm_wiki::scripted::ScriptedEmbedder::new("scripted-embed-32")
        .bad_vector_for("contiguous", false)
        .bad_vector_for("床前", true);
    let none = llm_wiki::llm::Cancel::new();
    let options = EmbedOptions {
        confirm: true,
        batch_size: 8,
    };
    let r = block_on(w.embed_pages(&model, &options, &|_| {}, &none)).unwrap();
    assert_eq!(model.calls(), 1);
    assert_eq!(r.embedded, 3, "{r:?}");
    let skipped = vec![
        SkippedEmbedding {
            page: "Slices".into(),
            reason: BadVector::NotFinite,
        },
        SkippedEmbedding {
            page: "静夜思".into(),
            reason: BadVector::Zero,
        },
    ];
    assert_eq!(r.skipped, skipped);
    // The re-embed completed: the new model's vectors serve the other pages.
    assert_eq!(r.status, EmbeddingStatus::Ready { missing: 0 });
    let index = block_on(w.search_index()).unwrap();
    assert_eq!(index.active_model(), Some(("scripted-embed-32", 32)));
    let q = block_on(llm_wiki::llm::Embedder::embed(
        &model,
        &["Each value in Rust has one owner.".into()],
        &none,
    ))
    .unwrap();
    let vector = SearchOptions {
        query_vector: Some(QueryVector {
            model: "scripted-embed-32".into(),
            vector: q.vectors[0].clone(),
        }),
        mode: SearchMode::Vector,
        k: 10,
        ..SearchOptions::default()
    };
    let hits = block_on(w.search("owner", &vector)).unwrap();
    assert_eq!(
        (hits.mode, &hits.status),
        (SearchMode::Vector, &SearchStatus::Ok)
    );
    assert_eq!(hits.hits[0].key, "Ownership");
    let keys: Vec<&str> = hits.hits.iter().map(|h| h.key.as_str()).collect();
    assert!(
        !keys.contains(&"Slices") && !keys.contains(&"静夜思"),
        "{keys:?}"
    );
    // The skipped pages are still found by BM25.
    assert_eq!(
        block_on(w.search("contiguous", &bm25())).unwrap().hits[0].key,
        "Slices"
    );
    // The status names them per page, also after reopening, until they are embedded again.
    w.storage().close();
    let w = open(&backend);
    let mut cfg = block_on(w.llm_config()).unwrap();
    cfg.embeddings.provider = llm_wiki::llm::config::EmbeddingProvider::OpenAi;
    cfg.embeddings.model = "scripted-embed-32".into();
    cfg.provider = llm_wiki::llm::config::Provider::OpenAiCompatible;
    cfg.base_url = "http://scripted.test/v1".into();
    cfg.model = "scripted-chat".into();
    block_on(w.set_llm_config(cfg)).unwrap();
    let status = block_on(w.embedding_status()).unwrap();
    assert_eq!(status.skipped, skipped);
    block_on(w.put_page(PageEdit {
        key: Some("Slices".into()),
        body: Some("A slice references a contiguous run of elements.".into()),
        ..Default::default()
    }))
    .unwrap();
    let good = llm_wiki::scripted::ScriptedEmbedder::new("scripted-embed-32");
    let r = block_on(w.embed_pages(&good, &EmbedOptions::default(), &|_| {}, &none)).unwrap();
    assert_eq!((r.embedded, r.skipped.len()), (1, 0));
    let status = block_on(w.embedding_status()).unwrap();
    assert_eq!(status.skipped, skipped[1..]);
}

#[test]
fn nan_tokens_from_a_python_style_server_skip_only_their_page() {
    use llm_wiki::llm::config::{EmbeddingProvider, Provider};
    use llm_wiki::scripted::server::InProcess;
    use llm_wiki::search_ops::{BadVector, EmbedOptions};
    let backend = MemoryBackend::new();
    let w = open(&backend);
    for (t, b) in [
        ("Ownership", "Each value in Rust has one owner."),
        ("Slices", "A slice references a contiguous sequence."),
        ("Threads", "Threads run code at the same time."),
        ("Closures", "Closures capture their environment."),
    ] {
        put(&w, t, b);
    }
    // The server answers the input holding "contiguous" with bare NaN tokens (not JSON), and
    // the one holding "environment" with zeros, in one batch of four.
    for (provider, base) in [
        (
            EmbeddingProvider::OpenAi,
            "http://scripted.test/fault/nan-vector=contiguous,zero-vector=environment/v1",
        ),
        (
            EmbeddingProvider::Ollama,
            "http://scripted.test/fault/nan-vector=contiguous,zero-vector=environment",
        ),
    ] {
        let mut cfg = block_on(w.llm_config()).unwrap();
        cfg.provider = Provider::OpenAiCompatible;
        cfg.base_url = "http://scripted.test/v1".into();
        cfg.model = "scripted-chat".into();
        cfg.embeddings.provider = provider;
        cfg.embeddings.base_url = Some(base.into());
        cfg.embeddings.model = format!(
            "scripted-embed-{}",
            if provider == EmbeddingProvider::OpenAi {
                32
            } else {
                48
            }
        );
        block_on(w.set_llm_config(cfg)).unwrap();
        let options = EmbedOptions {
            confirm: true,
            batch_size: 8,
        };
        let r = block_on(w.embed_pages_configured(
            InProcess::new(vec![]),
            &options,
            &|_| {},
            &llm_wiki::llm::Cancel::new(),
        ))
        .unwrap();
        assert_eq!(r.embedded, 2, "{provider:?}: {r:?}");
        let skipped: Vec<(&str, BadVector)> = r
            .skipped
            .iter()
            .map(|s| (s.page.as_str(), s.reason))
            .collect();
        assert_eq!(
            skipped,
            [
                ("Closures", BadVector::Zero),
                ("Slices", BadVector::NotFinite)
            ],
            "{provider:?}"
        );
        assert_eq!(block_on(w.embedding_status()).unwrap().skipped, r.skipped);
    }
}
