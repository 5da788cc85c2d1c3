//! Browser tests (`wasm-pack test --headless --chrome --firefox`): the storage conformance suite on
//! IndexedDB, and the JS API end to end.
#![cfg(target_arch = "wasm32")]

use js_sys::{Promise, Reflect};
use llm_wiki::storage::conformance::{self as suite, Env};
use llm_wiki::storage::idb::IdbBackend;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

struct BrowserEnv;

impl Env for BrowserEnv {
    async fn sleep(&self, ms: u32) {
        gloo_timers::future::TimeoutFuture::new(ms).await;
    }
}

#[wasm_bindgen_test]
async fn idb_round_trip() {
    suite::round_trip(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_fault_at_every_write_leaves_nothing() {
    suite::fault_at_every_write_leaves_nothing(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_stale_revision_is_refused() {
    suite::stale_revision_is_refused(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_reopen_returns_what_was_committed() {
    suite::reopen_returns_what_was_committed(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_upgrade_while_another_connection_is_open() {
    suite::upgrade_while_another_connection_is_open(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_upgrade_blocked_by_a_connection_that_ignores_versionchange() {
    suite::upgrade_blocked_by_a_connection_that_ignores_versionchange(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_newer_schema_is_refused() {
    suite::newer_schema_is_refused(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_write_back_after_an_awaited_embedding_is_atomic() {
    suite::write_back_after_an_awaited_embedding_is_atomic(&IdbBackend::new(), &BrowserEnv).await;
}

#[wasm_bindgen_test]
async fn idb_list_and_delete() {
    suite::list_and_delete(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_cjk_keys_and_prefix_scan() {
    suite::cjk_keys_and_prefix_scan(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_record_sources_are_written_whole() {
    suite::record_sources_are_written_whole(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_paged_scan_returns_every_key_once() {
    suite::paged_scan_returns_every_key_once(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
async fn idb_get_many_matches_get() {
    suite::get_many_matches_get(&IdbBackend::new()).await;
}

#[wasm_bindgen_test]
fn every_conformance_function_runs_here() {
    let here = include_str!("web.rs");
    for name in suite::SUITE {
        assert!(
            here.contains(&format!("suite::{name}(")),
            "{name} does not run in the browser"
        );
    }
}

// ------------------------------------------------------------------ JS API

async fn call(p: Promise) -> Result<JsValue, JsValue> {
    JsFuture::from(p).await
}

fn get(v: &JsValue, field: &str) -> JsValue {
    Reflect::get(v, &field.into()).unwrap()
}

fn obj(pairs: &[(&str, JsValue)]) -> JsValue {
    let o = js_sys::Object::new();
    for (k, v) in pairs {
        Reflect::set(&o, &(*k).into(), v).unwrap();
    }
    o.into()
}

#[wasm_bindgen_test]
async fn js_api_add_list_reopen() {
    use llm_wiki::wasm::Wiki;
    let name = "js-api-test";
    call(Wiki::delete(name.into())).await.unwrap();
    let wiki: Wiki = call(Wiki::open(name.into(), JsValue::UNDEFINED))
        .await
        .unwrap()
        .unchecked_into::<JsValue>()
        .into_wiki();
    let input = obj(&[
        ("key", "notes/backpressure.md".into()),
        ("mime", "text/markdown".into()),
        (
            "content",
            "# Backpressure\r\n\r\n流量控制 keeps queues bounded.\r\n".into(),
        ),
        (
            "original",
            js_sys::Uint8Array::from(&b"<p>original</p>"[..]).into(),
        ),
        ("originalMime", "text/html".into()),
    ]);
    let report = call(wiki.add_source(tsify::Ts::new_unchecked(input.clone())))
        .await
        .unwrap();
    assert_eq!(
        get(&report, "outcome").as_string().as_deref(),
        Some("added")
    );
    let again = call(wiki.add_source(tsify::Ts::new_unchecked(input)))
        .await
        .unwrap();
    assert_eq!(
        get(&again, "outcome").as_string().as_deref(),
        Some("unchanged")
    );

    // A second call while one is pending does not throw (state behind Rc).
    let (a, b) = futures::join!(call(wiki.sources()), call(wiki.index()));
    let sources = js_sys::Array::from(&a.unwrap());
    assert_eq!(sources.length(), 1);
    assert_eq!(
        get(&sources.get(0), "title").as_string().as_deref(),
        Some("Backpressure")
    );
    assert!(b.unwrap().as_string().unwrap().starts_with("# Index"));

    // Errors are real JS Errors with a stable code.
    let bad = obj(&[("mime", "text/html".into()), ("content", "<p>x</p>".into())]);
    let err = call(wiki.add_source(tsify::Ts::new_unchecked(bad)))
        .await
        .unwrap_err();
    assert!(err.is_instance_of::<js_sys::Error>());
    assert_eq!(
        get(&err, "name").as_string().as_deref(),
        Some("LlmWikiError")
    );
    assert_eq!(
        get(&err, "code").as_string().as_deref(),
        Some("UNSUPPORTED_MIME")
    );
    let malformed = obj(&[("content", JsValue::from_f64(3.0))]);
    let err = call(wiki.add_source(tsify::Ts::new_unchecked(malformed)))
        .await
        .unwrap_err();
    assert_eq!(
        get(&err, "code").as_string().as_deref(),
        Some("INVALID_INPUT")
    );

    let page = call(wiki.put_page(tsify::Ts::new_unchecked(obj(&[
        ("title", "流量控制".into()),
        ("kind", "concept".into()),
        ("body", "人工编辑的段落。".into()),
    ]))))
    .await
    .unwrap();
    assert_eq!(get(&page, "key").as_string().as_deref(), Some("流量控制"));

    let names = js_sys::Array::from(&call(Wiki::list()).await.unwrap());
    assert!(names.iter().any(|n| n.as_string().as_deref() == Some(name)));
    wiki.close();
    assert!(wiki.closed());
    let err = call(wiki.sources()).await.unwrap_err();
    assert_eq!(get(&err, "code").as_string().as_deref(), Some("CLOSED"));

    let reopened: Wiki = call(Wiki::open(name.into(), JsValue::UNDEFINED))
        .await
        .unwrap()
        .into_wiki();
    let source = call(reopened.source("notes/backpressure.md".into()))
        .await
        .unwrap();
    assert_eq!(
        get(&source, "text").as_string().as_deref(),
        Some("# Backpressure\n\n流量控制 keeps queues bounded.\n")
    );
    let history = js_sys::Array::from(&call(reopened.history("流量控制".into())).await.unwrap());
    assert_eq!(history.length(), 1);
    assert_eq!(
        get(&history.get(0), "author").as_string().as_deref(),
        Some("human")
    );
    let info = call(reopened.storage_info()).await.unwrap();
    assert!(get(&info, "persisted").as_bool().is_some());
}

trait IntoWiki {
    fn into_wiki(self) -> llm_wiki::wasm::Wiki;
}

impl IntoWiki for JsValue {
    fn into_wiki(self) -> llm_wiki::wasm::Wiki {
        // A `Wiki` crossed into JS as an object wrapping a Rust pointer; take it back.
        use wasm_bindgen::convert::TryFromJsValue;
        llm_wiki::wasm::Wiki::try_from_js_value(self).expect("a Wiki")
    }
}

/// Makes `indexedDB.open` throw `InvalidStateError`, as in Firefox private windows and some
/// embedded webviews, until the returned guard is dropped.
struct IndexedDbBroken {
    original: JsValue,
}

impl IndexedDbBroken {
    fn new() -> Self {
        let proto = js_sys::eval("IDBFactory.prototype").unwrap();
        let original = Reflect::get(&proto, &"open".into()).unwrap();
        let broken = js_sys::Function::new_no_args(
            "throw new DOMException('A mutation operation was attempted on a database that did not allow mutations.', 'InvalidStateError');",
        );
        Reflect::set(&proto, &"open".into(), &broken).unwrap();
        IndexedDbBroken { original }
    }
}

impl Drop for IndexedDbBroken {
    fn drop(&mut self) {
        let proto = js_sys::eval("IDBFactory.prototype").unwrap();
        Reflect::set(&proto, &"open".into(), &self.original).unwrap();
    }
}

#[wasm_bindgen_test]
async fn without_indexeddb_open_fails_unless_memory_fallback_is_asked_for() {
    use llm_wiki::wasm::Wiki;
    let broken = IndexedDbBroken::new();
    // Without the option: STORAGE_UNAVAILABLE, as before.
    let err = call(Wiki::open("no-idb".into(), JsValue::UNDEFINED))
        .await
        .unwrap_err();
    assert_eq!(
        get(&err, "code").as_string().as_deref(),
        Some("STORAGE_UNAVAILABLE")
    );
    let off = obj(&[("memoryFallback", JsValue::FALSE)]);
    let err = call(Wiki::open("no-idb".into(), off)).await.unwrap_err();
    assert_eq!(
        get(&err, "code").as_string().as_deref(),
        Some("STORAGE_UNAVAILABLE")
    );

    // With it: a wiki in memory that works like any other.
    let wiki: Wiki = call(Wiki::open(
        "no-idb".into(),
        obj(&[("memoryFallback", JsValue::TRUE)]),
    ))
    .await
    .unwrap()
    .into_wiki();
    let info = call(wiki.storage_info()).await.unwrap();
    assert_eq!(get(&info, "backend").as_string().as_deref(), Some("memory"));
    assert_eq!(get(&info, "persisted").as_bool(), Some(false));
    assert_eq!(call(wiki.persist()).await.unwrap().as_bool(), Some(false));
    let input = obj(&[
        ("key", "notes/zürich.md".into()),
        ("mime", "text/markdown".into()),
        (
            "content",
            "# Zürich\n\n苏黎世 is a city on a lake.\n".into(),
        ),
    ]);
    let report = call(wiki.add_source(tsify::Ts::new_unchecked(input)))
        .await
        .unwrap();
    assert_eq!(
        get(&report, "outcome").as_string().as_deref(),
        Some("added")
    );
    call(wiki.compile(JsValue::UNDEFINED)).await.unwrap();
    let pages = js_sys::Array::from(&call(wiki.pages()).await.unwrap());
    assert!(pages.length() > 0, "the offline compile wrote pages");
    let results = call(wiki.search("苏黎世".into(), JsValue::UNDEFINED))
        .await
        .unwrap();
    let hits = js_sys::Array::from(&get(&results, "hits"));
    assert!(hits.length() > 0, "search works in memory");
    let vault = call(wiki.export_vault()).await.unwrap();
    assert!(js_sys::Uint8Array::new(&vault).length() > 0);
    // Closed and opened again (the app does so when switching wikis), it is still there, and
    // listed.
    wiki.close();
    let again: Wiki = call(Wiki::open(
        "no-idb".into(),
        obj(&[("memoryFallback", JsValue::TRUE)]),
    ))
    .await
    .unwrap()
    .into_wiki();
    let sources = js_sys::Array::from(&call(again.sources()).await.unwrap());
    assert_eq!(
        sources.length(),
        1,
        "the wiki in memory outlived its connection"
    );
    let names = js_sys::Array::from(&call(Wiki::list()).await.unwrap());
    assert!(names
        .iter()
        .any(|n| n.as_string().as_deref() == Some("no-idb")));
    call(Wiki::delete("no-idb".into())).await.unwrap();
    let names = js_sys::Array::from(&call(Wiki::list()).await.unwrap());
    assert!(!names
        .iter()
        .any(|n| n.as_string().as_deref() == Some("no-idb")));
    drop(broken);

    // The fallback is only for an IndexedDB that cannot be used: here it can, and the same
    // option opens the wiki in IndexedDB.
    call(Wiki::delete("with-idb".into())).await.unwrap();
    let wiki: Wiki = call(Wiki::open(
        "with-idb".into(),
        obj(&[("memoryFallback", JsValue::TRUE)]),
    ))
    .await
    .unwrap()
    .into_wiki();
    let info = call(wiki.storage_info()).await.unwrap();
    assert_eq!(
        get(&info, "backend").as_string().as_deref(),
        Some("indexeddb")
    );
    wiki.close();
    call(Wiki::delete("with-idb".into())).await.unwrap();
}

/// A fresh, empty folder in the origin-private file system.
async fn opfs_folder(name: &str) -> llm_wiki::folder::handle::HandleFolder {
    use llm_wiki::folder::handle::HandleFolder;
    let root = HandleFolder::origin_private().await.unwrap();
    root.remove_folder(name).await.unwrap();
    root.subfolder(name).await.unwrap()
}

#[wasm_bindgen_test]
async fn opfs_folder_conformance() {
    let folder = opfs_folder("conformance").await;
    llm_wiki::folder::conformance::run(&folder).await.unwrap();
}

#[wasm_bindgen_test]
async fn js_api_mirror_into_opfs() {
    use llm_wiki::folder::Folder;
    use llm_wiki::wasm::Wiki;
    let name = "js-api-mirror";
    call(Wiki::delete(name.into())).await.unwrap();
    let wiki: Wiki = call(Wiki::open(name.into(), JsValue::UNDEFINED))
        .await
        .unwrap()
        .unchecked_into::<JsValue>()
        .into_wiki();
    let folder = opfs_folder("mirror-test").await;
    let page = |body: &str| {
        obj(&[
            ("title", "流量控制".into()),
            ("kind", "concept".into()),
            ("body", body.into()),
        ])
    };
    call(wiki.put_page(tsify::Ts::new_unchecked(page("第一版。"))))
        .await
        .unwrap();
    let first = call(wiki.mirror(folder.handle().clone(), None))
        .await
        .unwrap();
    assert_eq!(get(&first, "whole").as_bool(), Some(true));
    let file = folder
        .read("llm-wiki/wiki/concept/流量控制.md")
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8(file).unwrap().contains("第一版。"));
    // Nothing changed: nothing written.
    let idle = call(wiki.mirror(folder.handle().clone(), None))
        .await
        .unwrap();
    assert_eq!(js_sys::Array::from(&get(&idle, "written")).length(), 0);
    let edit = page("第二版。");
    Reflect::set(&edit, &"key".into(), &"流量控制".into()).unwrap();
    call(wiki.put_page(tsify::Ts::new_unchecked(edit)))
        .await
        .unwrap();
    let next = call(wiki.mirror(folder.handle().clone(), None))
        .await
        .unwrap();
    let written: Vec<String> = js_sys::Array::from(&get(&next, "written"))
        .iter()
        .filter_map(|v| v.as_string())
        .collect();
    assert!(
        written.contains(&"wiki/concept/流量控制.md".to_string()),
        "{written:?}"
    );
    assert!(
        written.last().unwrap().starts_with(".llm-wiki/devices/")
            && written.last().unwrap().contains("/ops/"),
        "{written:?}"
    );
    let status = call(wiki.mirror_status()).await.unwrap();
    assert_eq!(get(&status, "behind").as_f64(), Some(0.0));
    // A first run into a folder that holds files is refused; without a name, the next free
    // one is taken.
    call(wiki.forget_mirror()).await.unwrap();
    let err = call(wiki.mirror(folder.handle().clone(), Some("llm-wiki".into())))
        .await
        .unwrap_err();
    assert_eq!(
        get(&err, "code").as_string().as_deref(),
        Some("INVALID_INPUT")
    );
    let again = call(wiki.mirror(folder.handle().clone(), None))
        .await
        .unwrap();
    assert_eq!(
        get(&again, "root").as_string().as_deref(),
        Some("llm-wiki 2")
    );
    wiki.close();
}

#[wasm_bindgen_test]
async fn js_api_device_id_is_random_and_kept() {
    use llm_wiki::wasm::Wiki;
    let open = |name: &'static str| async move {
        call(Wiki::open(name.into(), JsValue::UNDEFINED))
            .await
            .unwrap()
            .unchecked_into::<JsValue>()
            .into_wiki()
    };
    for name in ["device-a", "device-b"] {
        call(Wiki::delete(name.into())).await.unwrap();
    }
    let a = call(open("device-a").await.device_id()).await.unwrap();
    let a = a.as_string().unwrap();
    assert!(llm_wiki::wiki::is_device_id(&a), "{a}");
    // Kept: another connection reads the same; another wiki has its own.
    let again = call(open("device-a").await.device_id()).await.unwrap();
    assert_eq!(again.as_string().unwrap(), a);
    let b = call(open("device-b").await.device_id()).await.unwrap();
    assert_ne!(b.as_string().unwrap(), a);
}
