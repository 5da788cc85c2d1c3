//! Source passages in the search index (issue 23, item 1): every source's text cut into
//! passages, indexed in the commit that adds, corrects or removes the source, read back with the
//! index, embedded by `embed_pages`, and searched only when a search asks for them.

mod common;

use common::{add, open, W};
use futures::executor::block_on;
use llm_wiki::llm::Cancel;
use llm_wiki::scripted::ScriptedEmbedder;
use llm_wiki::search::{HitKind, SearchHit, SearchIndex, SearchMode, SearchOptions};
use llm_wiki::search_ops::EmbedOptions;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{Batch, Expect, Storage, Store};
use llm_wiki::wiki::{page_fields, PageEdit};

const LIGHTHOUSE: &str = "# Lighthouses\n\nA lighthouse guides ships at night.\n\n## Fresnel lens\n\nThe Fresnel lens, invented by Augustin-Jean Fresnel in 1822, concentrates the lamp's light into a beam.\n\n## Keepers\n\nKeepers trimmed the wicks every four hours.\n";
const TEAHOUSE: &str =
    "# 茶馆\n\n茶馆是城市的客厅。\n\n## 盖碗\n\n盖碗茶由茶盖、茶碗和茶船组成，称为三才碗。\n";

fn bm25(passages: bool) -> SearchOptions {
    SearchOptions {
        mode: SearchMode::Bm25,
        passages,
        ..Default::default()
    }
}

fn passage_hits(w: &W, query: &str) -> Vec<SearchHit> {
    block_on(w.search(query, &bm25(true)))
        .unwrap()
        .hits
        .into_iter()
        .filter(|h| h.kind == HitKind::Passage)
        .collect()
}

/// The lines `lines` (1-based, inclusive) of `text`.
fn lines_of(text: &str, lines: (u32, u32)) -> String {
    text.lines()
        .skip(lines.0 as usize - 1)
        .take((lines.1 - lines.0 + 1) as usize)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_added_source_is_found_by_its_passages_with_where_they_are() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "p");
    add(&w, "lighthouse.md", LIGHTHOUSE);
    add(&w, "teahouse.md", TEAHOUSE);
    // Nothing compiled: no page has the term, a passage does.
    let hits = passage_hits(&w, "Fresnel lens 1822");
    let top = &hits[0];
    assert_eq!(top.source.as_deref(), Some("lighthouse.md"));
    let source = block_on(w.source("lighthouse.md")).unwrap().unwrap();
    assert_eq!(top.version.as_deref(), Some(source.source.version.as_str()));
    assert_eq!(top.heading.as_deref(), Some("Lighthouses › Fresnel lens"));
    let lines = top.lines.unwrap();
    assert!(lines_of(&source.text, lines).contains("invented by Augustin-Jean Fresnel"));
    assert!(top.key.starts_with("lighthouse.md#L"), "{}", top.key);
    // CJK text is cut and found the same way.
    let hits = passage_hits(&w, "三才碗");
    assert_eq!(hits[0].source.as_deref(), Some("teahouse.md"));
    assert_eq!(hits[0].heading.as_deref(), Some("茶馆 › 盖碗"));
    // A search that does not ask for passages gets pages only.
    let pages_only = block_on(w.search("Fresnel", &bm25(false))).unwrap();
    assert!(pages_only.hits.iter().all(|h| h.kind == HitKind::Page));
}

#[test]
fn pages_only_search_is_unchanged_by_the_passages() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "same");
    add(&w, "lighthouse.md", LIGHTHOUSE);
    add(&w, "teahouse.md", TEAHOUSE);
    for (title, body) in [
        (
            "Fresnel lens",
            "A lens of concentric rings, used in lighthouses.",
        ),
        (
            "Lighthouse keeper",
            "Keepers trimmed wicks; see [[Fresnel lens]].",
        ),
        ("盖碗", "茶具，三才碗。"),
    ] {
        block_on(w.put_page(PageEdit {
            title: Some(title.into()),
            body: Some(body.into()),
            ..Default::default()
        }))
        .unwrap();
    }
    let pages = block_on(w.all_pages()).unwrap();
    let mut only_pages = SearchIndex::default();
    only_pages.upsert_many(pages.iter().map(|p| (p.key.as_str(), page_fields(p))));
    for q in ["Fresnel lens", "keepers wicks", "三才碗", "lighthouse"] {
        let with = block_on(w.search(q, &bm25(false))).unwrap();
        let without = only_pages.search(q, &bm25(false));
        assert_eq!(with.hits, without.hits, "{q}");
        // Asked for, passages follow the same page hits.
        let both = block_on(w.search(q, &bm25(true))).unwrap();
        let n = without.hits.len();
        assert_eq!(both.hits[..n], without.hits[..], "{q}");
        assert!(both.hits[n..].iter().all(|h| h.kind == HitKind::Passage));
    }
}

#[test]
fn a_corrected_or_removed_source_changes_its_passages_in_the_same_commit() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "change");
    add(&w, "lighthouse.md", LIGHTHOUSE);
    add(&w, "teahouse.md", TEAHOUSE);
    assert!(!passage_hits(&w, "wicks").is_empty());
    // A corrected version replaces the old passages whole.
    add(
        &w,
        "lighthouse.md",
        "# Lighthouses\n\nModern lighthouses use LED beacons and no keepers.\n",
    );
    assert!(passage_hits(&w, "wicks").is_empty());
    let hits = passage_hits(&w, "LED beacons");
    let v2 = block_on(w.source("lighthouse.md")).unwrap().unwrap();
    assert_eq!(hits[0].version.as_deref(), Some(v2.source.version.as_str()));
    let index = block_on(w.search_index()).unwrap();
    assert_eq!(index.source_passage_keys("lighthouse.md").len(), 1);
    // Removing the source removes its passages.
    block_on(w.remove_source("lighthouse.md")).unwrap();
    assert!(passage_hits(&w, "LED beacons").is_empty());
    assert_eq!(
        passage_hits(&w, "三才碗")[0].source.as_deref(),
        Some("teahouse.md")
    );
    // Rolling the removal back brings them back.
    let last = block_on(w.operations()).unwrap().last().unwrap().id;
    block_on(w.rollback(last)).unwrap();
    assert!(!passage_hits(&w, "LED beacons").is_empty());
}

#[test]
fn passages_are_read_back_and_rebuilt_from_the_sources() {
    let backend = MemoryBackend::new();
    {
        let w = open(&backend, "reopen");
        add(&w, "lighthouse.md", LIGHTHOUSE);
        add(&w, "teahouse.md", TEAHOUSE);
    }
    // Read back as written: the records hold the passages and their table.
    let w = open(&backend, "reopen");
    let keys: Vec<String> = block_on(w.storage().scan(Store::Search, "passages/"))
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert!(keys.contains(&"passages/table".to_string()), "{keys:?}");
    let before = block_on(w.search_index()).unwrap();
    assert_eq!(
        passage_hits(&w, "Fresnel")[0].source.as_deref(),
        Some("lighthouse.md")
    );

    // An index stored without passages (an older build) gets them on the next read.
    let mut batch = Batch::new();
    for k in &keys {
        batch.delete(Store::Search, k.clone(), Expect::Any);
    }
    block_on(w.storage().commit(batch)).unwrap();
    let w = open(&backend, "reopen");
    let after = block_on(w.search_index()).unwrap();
    assert_eq!(after.passage_count(), before.passage_count());
    assert_eq!(after.passage_sources(), before.passage_sources());

    // A damaged table: the index is rebuilt, passages included.
    let mut batch = Batch::new();
    batch.put(
        Store::Search,
        "passages/table",
        b"garbage".to_vec(),
        Expect::Any,
    );
    block_on(w.storage().commit(batch)).unwrap();
    let w = open(&backend, "reopen");
    let rebuilt = block_on(w.search_index()).unwrap();
    assert_eq!(rebuilt.passage_sources(), before.passage_sources());
    assert_eq!(
        passage_hits(&w, "三才碗")[0].source.as_deref(),
        Some("teahouse.md")
    );

    // A wiki without sources writes no passage record.
    let empty = open(&backend, "empty");
    block_on(empty.put_page(PageEdit {
        title: Some("Alone".into()),
        body: Some("No source here.".into()),
        ..Default::default()
    }))
    .unwrap();
    assert!(block_on(empty.storage().scan(Store::Search, "passages/"))
        .unwrap()
        .is_empty());
}

#[test]
fn a_commit_reads_only_its_own_sources_text() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "cost");
    for i in 0..12 {
        add(
            &w,
            &format!("s{i}.md"),
            &format!("# Source {i}\n\nText number {i} about topic{i}.\n"),
        );
    }
    let before = w.io_stats();
    add(&w, "last.md", LIGHTHOUSE);
    let raw = w.io_stats().since(&before).of(Store::Raw);
    // The new source's own records, never the other twelve texts.
    assert!(raw.reads <= 3, "raw reads: {raw:?}");
    block_on(w.remove_source("s3.md")).unwrap();
    assert!(passage_hits(&w, "topic3").is_empty());
    assert!(!passage_hits(&w, "topic4").is_empty());
}

#[test]
fn embed_pages_embeds_the_passages_with_the_pages_model() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "embed");
    add(&w, "lighthouse.md", LIGHTHOUSE);
    add(&w, "teahouse.md", TEAHOUSE);
    block_on(w.put_page(PageEdit {
        title: Some("Fresnel lens".into()),
        body: Some("A lens of concentric rings.".into()),
        ..Default::default()
    }))
    .unwrap();
    let embedder = ScriptedEmbedder::new("scripted-embed-64");
    // The offline embedding (the default) embedded pages and passages at commit: switching to
    // another model is a confirmed re-embed of both.
    let offline = block_on(w.search_index()).unwrap();
    assert_eq!(
        offline.passage_index().unwrap().active_model(),
        Some((
            llm_wiki::llm::offline::OFFLINE_MODEL,
            llm_wiki::llm::offline::OFFLINE_DIMENSION
        ))
    );
    let options = EmbedOptions {
        batch_size: 2,
        confirm: true,
    };
    let report = block_on(w.embed_pages(&embedder, &options, &|_| {}, &Cancel::new())).unwrap();
    let index = block_on(w.search_index()).unwrap();
    let n = index.passage_count();
    assert!(n >= 5, "{n} passages");
    assert_eq!(report.passages_embedded, n);
    assert_eq!(
        index.missing_passage_embeddings("scripted-embed-64", 64),
        Vec::<String>::new()
    );
    assert_eq!(
        index.passage_index().unwrap().active_model(),
        Some(("scripted-embed-64", 64))
    );
    // Nothing left: a second run makes no call.
    let calls = embedder.calls();
    let again = block_on(w.embed_pages(&embedder, &options, &|_| {}, &Cancel::new())).unwrap();
    assert_eq!((again.embedded, again.passages_embedded), (0, 0));
    assert_eq!(embedder.calls(), calls);
    // A vector search of the passages now uses them.
    let q = llm_wiki::search::QueryVector {
        model: "scripted-embed-64".into(),
        vector: llm_wiki::llm::offline::OfflineEmbedder::with_model("scripted-embed-64", 64)
            .embed_one("盖碗茶 三才碗"),
    };
    let r = index.search_passages(
        "盖碗茶 三才碗",
        &SearchOptions {
            mode: SearchMode::Hybrid,
            query_vector: Some(q),
            ..Default::default()
        },
    );
    assert_eq!(r.mode, SearchMode::Hybrid);
    assert_eq!(r.hits[0].source.as_deref(), Some("teahouse.md"));
}
