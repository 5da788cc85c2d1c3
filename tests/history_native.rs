//! History: rollback (with its preview and redo), as-of reads and diffs, on MemoryStorage with the
//! scripted endpoint (Decision 7).
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use futures::executor::block_on;
use llm_wiki::compile::model::LlmCompiler;
use llm_wiki::compile::pipeline::{CompileOptions, CompileReport};
use llm_wiki::history::PageAction;
use llm_wiki::llm::Cancel;
use llm_wiki::model::{OperationKind, PageKind};
use llm_wiki::scripted::ScriptedLlm;
use llm_wiki::search::{SearchMode, SearchOptions};
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{Storage, Store};
use llm_wiki::wiki::PageEdit;
use llm_wiki::Error;

mod common;
use common::{add, open, W};

const S1: &str = "# Widgetron\n\nWidgetron is a gadget made by Acme Corp.\n\n## Acme Corp\n\nAcme Corp builds widgets in Ohio. It was founded in 1990.\n\n## Widgetron\n\nWidgetron was first released in 2015.\n";
const S2: &str = "# 流量控制\n\n流量控制让生产者等待慢的消费者。\n\n## 背压\n\n背压是一种流量控制机制。它保护队列。\n\n## Acme Corp\n\nAcme Corp 也使用背压。\n";
const S3: &str = "# Widget history\n\n## Widgetron\n\nWidgetron was first released in 2016.\n\n## Gizmo Works\n\nGizmo Works sold the first Widgetron clones in Ohio.\n";

fn compile(w: &W, sources: &[&str]) -> CompileReport {
    let llm = ScriptedLlm::new();
    let model = LlmCompiler {
        llm: &llm,
        max_output_tokens: None,
        model_name: "scripted".into(),
    };
    let options = CompileOptions {
        sources: Some(sources.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    };
    let r = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    r
}

fn unzip(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut a = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    let mut out = BTreeMap::new();
    for i in 0..a.len() {
        let mut f = a.by_index(i).unwrap();
        let mut data = Vec::new();
        f.read_to_end(&mut data).unwrap();
        out.insert(f.name().to_string(), data);
    }
    out
}

fn export(w: &W) -> BTreeMap<String, Vec<u8>> {
    unzip(&block_on(w.export_vault()).unwrap())
}

/// The history files: they grow with every operation, a rollback included.
const HISTORY: &[&str] = &[
    "log.md",
    ".llm-wiki/vault.json",
    ".llm-wiki/operations.json",
    ".llm-wiki/revisions.json",
    ".llm-wiki/undo.json",
    ".llm-wiki/pages.json",
];

/// pages.json with each record's revision number left out (a restored page's revision counts on).
fn pages_without_revisions(files: &BTreeMap<String, Vec<u8>>) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> =
        serde_json::from_slice(&files[".llm-wiki/pages.json"]).unwrap();
    for p in &mut v {
        let rev = p.as_object_mut().unwrap().remove("revision");
        assert!(rev.is_some_and(|r| r.as_u64().unwrap() >= 1));
    }
    v
}

/// Asserts two exports hold the same wiki: every file byte for byte, except the history files
/// (which must only have grown) and page revision numbers.
fn assert_same_wiki(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) {
    let names = |f: &BTreeMap<String, Vec<u8>>| -> Vec<String> { f.keys().cloned().collect() };
    assert_eq!(names(before), names(after), "the same files");
    for (name, data) in before {
        if HISTORY.contains(&name.as_str()) {
            continue;
        }
        assert!(
            after[name] == *data,
            "{name} differs:\n--- before\n{}\n--- after\n{}",
            String::from_utf8_lossy(data),
            String::from_utf8_lossy(&after[name])
        );
    }
    assert_eq!(
        pages_without_revisions(before),
        pages_without_revisions(after)
    );
    let log = |f: &BTreeMap<String, Vec<u8>>| String::from_utf8(f["log.md"].clone()).unwrap();
    assert!(log(after).starts_with(&log(before)), "log.md only grows");
    let revs = |f: &BTreeMap<String, Vec<u8>>| -> Vec<serde_json::Value> {
        serde_json::from_slice(&f[".llm-wiki/revisions.json"]).unwrap()
    };
    let after_revs = revs(after);
    for r in revs(before) {
        assert!(after_revs.contains(&r), "revision kept: {r}");
    }
}

fn search_keys(w: &W, q: &str) -> Vec<String> {
    let r = block_on(w.search(
        q,
        &SearchOptions {
            mode: SearchMode::Bm25,
            ..Default::default()
        },
    ))
    .unwrap();
    r.hits.into_iter().map(|h| h.key).collect()
}

fn stored_search_stamp(w: &W) -> u64 {
    let r = block_on(w.storage().get(Store::Search, "op"))
        .unwrap()
        .unwrap();
    String::from_utf8(r.data).unwrap().parse().unwrap()
}

fn last_op(w: &W) -> u64 {
    block_on(w.operations()).unwrap().last().unwrap().id
}

/// Two sources compiled, a human edit; then S3 added (not compiled).
fn scenario(backend: &MemoryBackend) -> W {
    let w = open(backend, "history");
    add(&w, "notes/widgetron.md", S1);
    add(&w, "notes/流量控制.md", S2);
    compile(&w, &["notes/widgetron.md", "notes/流量控制.md"]);
    let acme = block_on(w.page("Acme Corp")).unwrap().unwrap();
    block_on(w.put_page(PageEdit {
        key: Some(acme.key.clone()),
        body: Some(format!("{}\n\nA note of mine about Acme.\n", acme.body)),
        ..Default::default()
    }))
    .unwrap();
    add(&w, "notes/widget-history.md", S3);
    w
}

#[test]
fn rollback_after_a_multi_page_compile_restores_the_exact_previous_state() {
    let backend = MemoryBackend::new();
    let w = scenario(&backend);
    let before = export(&w);
    let search_before = [
        search_keys(&w, "Widgetron"),
        search_keys(&w, "Gizmo Works"),
        search_keys(&w, "背压"),
    ];
    let pages_before = block_on(w.all_pages()).unwrap();

    let report = compile(&w, &["notes/widget-history.md"]);
    let c = &report.compiled[0];
    assert!(
        c.created.len() + c.updated.len() >= 3,
        "a multi-page compile: {c:?}"
    );
    assert!(!c.updated.is_empty(), "it changes existing pages: {c:?}");
    let compiled = export(&w);
    assert_ne!(compiled, before);
    assert!(!search_keys(&w, "Gizmo Works").is_empty());

    // The preview lists exactly what the compile did.
    let plan = block_on(w.rollback_preview(c.op)).unwrap();
    assert_eq!(
        plan.operations.iter().map(|o| o.id).collect::<Vec<_>>(),
        vec![c.op]
    );
    let mut expected: Vec<(String, PageAction)> = c
        .created
        .iter()
        .map(|k| (k.clone(), PageAction::Remove))
        .chain(c.updated.iter().map(|k| (k.clone(), PageAction::Restore)))
        .collect();
    expected.sort();
    let planned: Vec<(String, PageAction)> = plan
        .pages
        .iter()
        .map(|p| (p.key.clone(), p.action))
        .collect();
    assert_eq!(planned, expected);
    assert_eq!(plan.sources, vec!["notes/widget-history.md".to_string()]);
    assert_eq!(plan.claims as usize, c.claims);
    assert_eq!(export(&w), compiled, "a preview writes nothing");

    let done = block_on(w.rollback(c.op)).unwrap();
    assert_eq!(done.operation.kind, OperationKind::Rollback);
    let after = export(&w);
    assert_same_wiki(&before, &after);

    // The source is pending again; the undone operation is marked; the log says so.
    let s = block_on(w.source("notes/widget-history.md"))
        .unwrap()
        .unwrap();
    assert_eq!(s.source.status, llm_wiki::model::SourceStatus::Pending);
    let ops = block_on(w.operations()).unwrap();
    let undone = ops.iter().find(|o| o.id == c.op).unwrap();
    assert_eq!(undone.rolled_back_by, Some(done.operation.id));
    assert!(block_on(w.log())
        .unwrap()
        .contains(&format!("rolled back op {}", c.op)));

    // Pages come back with their old content and a new revision; history is kept.
    for p in &pages_before {
        let now = block_on(w.page(&p.key)).unwrap().unwrap();
        assert_eq!(now.body, p.body);
        assert!(now.revision >= p.revision);
    }
    for k in &c.created {
        assert!(block_on(w.page(k)).unwrap().is_none(), "{k} removed");
        let h = block_on(w.history(k)).unwrap();
        assert_eq!(h.last().unwrap().page_state, None, "{k} ends state-less");
    }

    // The search index moved with the pages, in the same commit (no rebuild on next use).
    assert_eq!(stored_search_stamp(&w), last_op(&w));
    assert_eq!(
        [
            search_keys(&w, "Widgetron"),
            search_keys(&w, "Gizmo Works"),
            search_keys(&w, "背压"),
        ],
        search_before
    );

    // It cannot be undone twice; rolling back the rollback redoes the compile.
    assert!(matches!(
        block_on(w.rollback(c.op)),
        Err(Error::InvalidInput(_))
    ));
    block_on(w.rollback(done.operation.id)).unwrap();
    assert_same_wiki(&compiled, &export(&w));
    let ops = block_on(w.operations()).unwrap();
    assert_eq!(
        ops.iter().find(|o| o.id == c.op).unwrap().rolled_back_by,
        None
    );
    assert!(!search_keys(&w, "Gizmo Works").is_empty());
}

#[test]
fn later_operations_on_the_same_pages_are_undone_with_it() {
    let backend = MemoryBackend::new();
    let w = scenario(&backend);
    let report = compile(&w, &["notes/widget-history.md"]);
    let c = &report.compiled[0];
    let created = c.created[0].clone();

    // A later edit of a page the compile created: undone with it.
    let p = block_on(w.page(&created)).unwrap().unwrap();
    let edit = block_on(w.put_page(PageEdit {
        key: Some(created.clone()),
        body: Some(format!("{}\n\nMore.\n", p.body)),
        ..Default::default()
    }))
    .unwrap();
    let edit_op = block_on(w.history(&created)).unwrap().last().unwrap().op;
    assert_eq!(edit.revision, 2);
    // A later page elsewhere that links to the created page: kept, its link becomes text.
    let other = block_on(w.put_page(PageEdit {
        title: Some("Reading list".into()),
        kind: Some(PageKind::Overview),
        body: Some(format!("See [[{created}]] and [[Acme Corp]].\n")),
        ..Default::default()
    }))
    .unwrap();
    let other_op = last_op(&w);

    let plan = block_on(w.rollback_preview(c.op)).unwrap();
    assert_eq!(
        plan.operations.iter().map(|o| o.id).collect::<Vec<_>>(),
        vec![c.op, edit_op]
    );
    assert!(plan
        .pages
        .iter()
        .any(|p| p.key == other.key && p.action == PageAction::Unlink));
    block_on(w.rollback(c.op)).unwrap();
    assert!(block_on(w.page(&created)).unwrap().is_none());
    let kept = block_on(w.page(&other.key)).unwrap().unwrap();
    assert!(
        kept.body
            .starts_with(&format!("See {created} and [[Acme Corp]].")),
        "{}",
        kept.body
    );
    let ops = block_on(w.operations()).unwrap();
    assert!(ops[..ops.len() - 1]
        .iter()
        .filter(|o| o.rolled_back_by.is_some())
        .map(|o| o.id)
        .eq([c.op, edit_op]));
    assert!(ops
        .iter()
        .any(|o| o.id == other_op && o.rolled_back_by.is_none()));
    // Rolling back one of them alone is refused now: it is already undone.
    assert!(matches!(
        block_on(w.rollback_preview(edit_op)),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        block_on(w.rollback_preview(999)),
        Err(Error::NotFound(_))
    ));
}

#[test]
fn settings_schema_and_sources_roll_back_without_secrets() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "settings");
    let schema_before = block_on(w.schema()).unwrap();
    let op = block_on(w.set_schema("# My schema\n")).unwrap();
    add(&w, "a.md", "# A\n\nAlpha text.\n");
    let plan = block_on(w.rollback_preview(op.id)).unwrap();
    assert_eq!(plan.other, vec!["schema.md".to_string()]);
    block_on(w.rollback(op.id)).unwrap();
    assert_eq!(block_on(w.schema()).unwrap(), schema_before);
    assert!(block_on(w.source("a.md")).unwrap().is_some(), "unrelated");

    // Undoing an add-source removes the source; its text stays in raw/ (content-addressed,
    // as removing a source keeps it), so undoing that undo brings the source back.
    let add_op = block_on(w.operations())
        .unwrap()
        .into_iter()
        .find(|o| o.kind == OperationKind::AddSource)
        .unwrap();
    let undone = block_on(w.rollback(add_op.id)).unwrap();
    assert!(block_on(w.sources()).unwrap().is_empty());
    let now = export(&w);
    assert!(
        now.keys().any(|k| k.starts_with("raw/text/")),
        "{:?}",
        now.keys()
    );
    let undo = String::from_utf8(now[".llm-wiki/undo.json"].clone()).unwrap();
    assert!(!undo.to_lowercase().contains("apikey"));
    block_on(w.rollback(undone.operation.id)).unwrap();
    let back = block_on(w.source("a.md")).unwrap().unwrap();
    assert_eq!(back.text, "# A\n\nAlpha text.\n");
}

#[test]
fn as_of_reads_the_wiki_after_any_operation() {
    let backend = MemoryBackend::new();
    let w = scenario(&backend);
    let op_before = last_op(&w);
    let before = block_on(w.all_pages()).unwrap();
    let report = compile(&w, &["notes/widget-history.md"]);
    let c = &report.compiled[0];
    let compiled = block_on(w.all_pages()).unwrap();
    let widgetron = c.updated.iter().find(|k| k.contains("Widgetron")).cloned();

    // Renamed and deleted afterwards: as-of still reads them under the key they had.
    let renamed = block_on(w.rename_page(&c.created[0], "Renamed page")).unwrap();
    block_on(w.delete_page(&renamed.page.key)).unwrap();

    let strip = |ps: Vec<llm_wiki::model::Page>| -> Vec<(String, String)> {
        ps.into_iter().map(|p| (p.key, p.body)).collect()
    };
    assert_eq!(
        strip(block_on(w.pages_as_of(op_before)).unwrap()),
        strip(before.clone())
    );
    assert_eq!(
        strip(block_on(w.pages_as_of(c.op)).unwrap()),
        strip(compiled.clone())
    );
    assert_eq!(block_on(w.pages_as_of(0)).unwrap(), vec![]);
    let at_rename = block_on(w.pages_as_of(renamed.op)).unwrap();
    assert!(at_rename.iter().any(|p| p.key == renamed.page.key));
    assert!(!at_rename.iter().any(|p| p.key == c.created[0]));
    assert!(!block_on(w.pages_as_of(last_op(&w)))
        .unwrap()
        .iter()
        .any(|p| p.key == renamed.page.key));
    if let Some(k) = widgetron {
        let old = before.iter().find(|p| p.key == k).unwrap();
        let got = block_on(w.page_as_of(&k.to_lowercase(), op_before))
            .unwrap()
            .unwrap();
        assert_eq!(got.body, old.body);
    }
    assert!(matches!(
        block_on(w.pages_as_of(last_op(&w) + 1)),
        Err(Error::NotFound(_))
    ));
}

#[test]
fn history_lists_revisions_with_diffs() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "diffs");
    let p = block_on(w.put_page(PageEdit {
        title: Some("机器学习".into()),
        body: Some("第一行\n第二行\n".into()),
        ..Default::default()
    }))
    .unwrap();
    block_on(w.put_page(PageEdit {
        key: Some(p.key.clone()),
        body: Some("第一行\n第二行改了\n第三行\n".into()),
        ..Default::default()
    }))
    .unwrap();
    block_on(w.revert(&p.key, 1)).unwrap();
    let h = block_on(w.history_diffs(&p.key)).unwrap();
    assert_eq!(h.len(), 3);
    assert!(h[0].diff.starts_with("--- /dev/null\n"), "{}", h[0].diff);
    assert!(h[0].diff.contains("+第一行\n"));
    assert!(h[0].diff.contains("+title: 机器学习\n"), "{}", h[0].diff);
    assert_eq!((h[1].added, h[1].removed), (2, 1));
    assert!(
        h[1].diff.contains("-第二行\n+第二行改了\n+第三行\n"),
        "{}",
        h[1].diff
    );
    assert_eq!((h[2].added, h[2].removed), (1, 2));
    assert_eq!(h[2].revision.number, 3);
}

#[test]
fn rollback_works_after_export_and_import() {
    let backend = MemoryBackend::new();
    let w = scenario(&backend);
    let before = export(&w);
    let report = compile(&w, &["notes/widget-history.md"]);
    let zip = block_on(w.export_vault()).unwrap();
    let b2 = MemoryBackend::new();
    let copy = open(&b2, "copy");
    block_on(copy.import_vault(&zip)).unwrap();
    assert_eq!(block_on(copy.export_vault()).unwrap(), zip);
    block_on(copy.rollback(report.compiled[0].op)).unwrap();
    assert_same_wiki(&before, &export(&copy));
}

#[test]
fn a_restored_page_keeps_the_author_of_the_revision_it_restores() {
    let backend = MemoryBackend::new();
    let w = scenario(&backend);
    let report = compile(&w, &["notes/widget-history.md"]);
    let c = &report.compiled[0];
    let plan = block_on(w.rollback_preview(c.op)).unwrap();
    block_on(w.rollback(c.op)).unwrap();
    let mut checked = 0;
    for p in plan.pages.iter().filter(|p| p.from_revision.is_some()) {
        let history = block_on(w.history(&p.key)).unwrap();
        let restored = history
            .iter()
            .find(|r| Some(r.number) == p.from_revision)
            .unwrap();
        let last = history.last().unwrap();
        assert_eq!(last.author, restored.author, "{}", p.key);
        checked += 1;
    }
    assert!(checked >= 1, "{plan:?}");
    // Widgetron goes back to the model's revision: the model's text stays the model's.
    let widgetron = block_on(w.history("Widgetron")).unwrap();
    assert_eq!(
        widgetron.last().unwrap().author,
        llm_wiki::model::Author::Llm
    );
}

#[test]
fn undo_records_never_hold_an_api_key() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "undo-secrets");
    // A configuration record that holds secrets (as written by an older version, or by hand).
    let config = block_on(w.llm_config()).unwrap();
    let mut raw = serde_json::to_value(&config).unwrap();
    raw["apiKey"] = "sk-live-SECRET-1".into();
    raw["headers"] = serde_json::json!({ "Authorization": "Bearer sk-live-SECRET-2" });
    raw["embeddings"]["apiKey"] = "sk-live-SECRET-3".into();
    let mut b = llm_wiki::storage::Batch::new();
    b.put(
        Store::Meta,
        "config",
        serde_json::to_vec(&raw).unwrap(),
        llm_wiki::storage::Expect::Any,
    );
    block_on(w.storage().commit(b)).unwrap();
    // Saving settings overwrites it: the undo record keeps what was there, without its secrets.
    let mut next = config.clone();
    next.model = "another-model".into();
    let op = block_on(w.set_llm_config(next)).unwrap();
    let undo = block_on(
        w.storage()
            .get(Store::Meta, &llm_wiki::history::undo_key(op.id)),
    )
    .unwrap()
    .expect("the settings operation has an undo record");
    let undo = String::from_utf8(undo.data).unwrap();
    assert!(undo.contains("config"), "{undo}");
    assert!(!undo.contains("sk-live-SECRET"), "{undo}");
    let files = export(&w);
    for (name, bytes) in &files {
        assert!(
            !String::from_utf8_lossy(bytes).contains("sk-live-SECRET"),
            "{name} holds a secret"
        );
    }
    // Rolling the settings back brings the configuration back, never the key.
    block_on(w.rollback(op.id)).unwrap();
    let stored = block_on(w.storage().get(Store::Meta, "config"))
        .unwrap()
        .unwrap();
    assert!(!String::from_utf8_lossy(&stored.data).contains("sk-live-SECRET"));

    // An undo record written before undo records were stripped (it holds the key) is exported
    // without it.
    let old = serde_json::json!({
        "op": op.id,
        "entries": [{ "store": "meta", "key": "config", "before": { "was": "data", "value": raw.to_string() } }],
    });
    let mut b = llm_wiki::storage::Batch::new();
    b.put(
        Store::Meta,
        llm_wiki::history::undo_key(op.id),
        serde_json::to_vec(&old).unwrap(),
        llm_wiki::storage::Expect::Any,
    );
    block_on(w.storage().commit(b)).unwrap();
    let stored = block_on(
        w.storage()
            .get(Store::Meta, &llm_wiki::history::undo_key(op.id)),
    )
    .unwrap()
    .unwrap();
    assert!(String::from_utf8_lossy(&stored.data).contains("sk-live-SECRET"));
    for (name, bytes) in &export(&w) {
        assert!(
            !String::from_utf8_lossy(bytes).contains("sk-live-SECRET"),
            "{name} holds a secret"
        );
    }
}
