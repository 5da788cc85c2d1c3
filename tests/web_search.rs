//! Browser tests of search (`wasm-pack test --headless --chrome --firefox`): the index persists
//! in IndexedDB and reopens without tokenizing; the JS `search` method.
#![cfg(target_arch = "wasm32")]

use js_sys::{Promise, Reflect};
use llm_wiki::clock::SystemClock;
use llm_wiki::search::tokenizer::tokenizer_calls;
use llm_wiki::search::{SearchMode, SearchOptions};
use llm_wiki::storage::idb::IdbBackend;
use llm_wiki::storage::{Backend, OpenOptions, Storage};
use llm_wiki::wiki::{PageEdit, Wiki};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn bm25() -> SearchOptions {
    SearchOptions {
        mode: SearchMode::Bm25,
        ..SearchOptions::default()
    }
}

#[wasm_bindgen_test]
async fn search_index_persists_in_indexeddb_and_reopens_without_tokenizing() {
    let backend = IdbBackend::new();
    let name = "search-reopen-test";
    backend.delete(name).await.unwrap();
    let w = Wiki::open(&backend, name, SystemClock, OpenOptions::default())
        .await
        .unwrap();
    for (title, body) in [
        ("静夜思", "床前明月光，疑是地上霜。举头望明月，低头思故乡。"),
        ("Ownership", "Each value in Rust has one owner."),
        ("초과근무", "초과근무 승인 규칙"),
        ("Café", "café naïve résumé"),
    ] {
        w.put_page(PageEdit {
            title: Some(title.into()),
            body: Some(body.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    let built = w.search_index().await.unwrap();
    assert_eq!(built.search("故乡", &bm25()).hits[0].key, "静夜思");
    w.storage().close();

    let w = Wiki::open(&backend, name, SystemClock, OpenOptions::default())
        .await
        .unwrap();
    let before = tokenizer_calls();
    let index = w.search_index().await.unwrap();
    assert_eq!(tokenizer_calls(), before, "reopening must not tokenize");
    assert_eq!(index.len(), 4);
    for q in ["故乡", "승인", "café", "owner", "明月"] {
        assert_eq!(index.search(q, &bm25()), built.search(q, &bm25()), "{q}");
    }
    w.storage().close();
    backend.delete(name).await.unwrap();
}

#[wasm_bindgen_test]
async fn js_search_method() {
    use llm_wiki::wasm::Wiki as JsWiki;
    use wasm_bindgen::convert::TryFromJsValue;
    let call = |p: Promise| JsFuture::from(p);
    let name = "search-js-test";
    call(JsWiki::delete(name.into())).await.unwrap();
    let v = call(JsWiki::open(name.into(), JsValue::UNDEFINED))
        .await
        .unwrap();
    let wiki = JsWiki::try_from_js_value(v).expect("a Wiki");
    let page = js_sys::Object::new();
    Reflect::set(&page, &"title".into(), &"故乡".into()).unwrap();
    Reflect::set(&page, &"body".into(), &"低头思故乡".into()).unwrap();
    call(wiki.put_page(tsify::Ts::new_unchecked(page.into())))
        .await
        .unwrap();
    let opts = js_sys::Object::new();
    Reflect::set(&opts, &"k".into(), &JsValue::from_f64(3.0)).unwrap();
    Reflect::set(&opts, &"mode".into(), &"hybrid".into()).unwrap();
    let r = call(wiki.search("故乡".into(), opts.into())).await.unwrap();
    let hits = js_sys::Array::from(&Reflect::get(&r, &"hits".into()).unwrap());
    assert_eq!(hits.length(), 1);
    let hit = hits.get(0);
    assert_eq!(
        Reflect::get(&hit, &"key".into())
            .unwrap()
            .as_string()
            .as_deref(),
        Some("故乡")
    );
    // Hybrid: the query is embedded with the built-in offline model (the default embedding).
    assert_eq!(
        Reflect::get(&r, &"mode".into())
            .unwrap()
            .as_string()
            .as_deref(),
        Some("hybrid")
    );
    let status = Reflect::get(&r, &"status".into()).unwrap();
    assert_eq!(
        Reflect::get(&status, &"state".into())
            .unwrap()
            .as_string()
            .as_deref(),
        Some("ok")
    );
    let explain = Reflect::get(&hit, &"explain".into()).unwrap();
    assert_eq!(
        Reflect::get(&explain, &"bm25Rank".into()).unwrap().as_f64(),
        Some(1.0)
    );
    // Defaults when no options are given; a malformed bag is INVALID_INPUT.
    let r = call(wiki.search("故乡".into(), JsValue::UNDEFINED))
        .await
        .unwrap();
    assert!(Reflect::get(&r, &"hits".into()).unwrap().is_object());
    let bad = js_sys::Object::new();
    Reflect::set(&bad, &"mode".into(), &"fuzzy".into()).unwrap();
    let err = call(wiki.search("x".into(), bad.into())).await.unwrap_err();
    assert_eq!(
        Reflect::get(&err, &"code".into())
            .unwrap()
            .as_string()
            .as_deref(),
        Some("INVALID_INPUT")
    );
    wiki.close();
    call(JsWiki::delete(name.into())).await.unwrap();
}
