//! Browser tests for markdown and the vault: rendered HTML checked in a real DOM (field case F21,
//! plus an XSS corpus), and the vault export → import → export round trip on IndexedDB.
#![cfg(target_arch = "wasm32")]

use js_sys::{Promise, Reflect};
use llm_wiki::markdown::render::{render, RenderContext};
use llm_wiki::markdown::resolve::Resolver;
use llm_wiki::wasm::Wiki;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const F21: &str = "Hello <script>alert(1)</script>\n<img src=x onerror=\"alert(2)\">\n[click](javascript:alert(3))\n[tab](\tjavascript:alert(4))\n[proto](//evil.example/x)\n![img](data:text/html;base64,PHNjcmlwdD4=)\n[[Rust|<img src=x onerror=alert(5)>]]\n<a href=\"https://ok.example\" onclick=\"alert(6)\">ok</a>\n";

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

async fn fresh(name: &str) -> Wiki {
    call(Wiki::delete(name.into())).await.unwrap();
    let w = call(Wiki::open(name.into(), JsValue::UNDEFINED))
        .await
        .unwrap();
    use wasm_bindgen::convert::TryFromJsValue;
    Wiki::try_from_js_value(w).expect("a Wiki")
}

async fn put(w: &Wiki, title: &str, body: &str) -> JsValue {
    call(w.put_page(tsify::Ts::new_unchecked(obj(&[
        ("title", title.into()),
        ("body", body.into()),
    ]))))
    .await
    .unwrap()
}

async fn sleep(ms: u32) {
    gloo_timers::future::TimeoutFuture::new(ms).await;
}

/// Counts calls of `window.alert` (replaced for the test).
fn install_alert_counter() {
    let f = js_sys::Function::new_no_args("globalThis.__alerts = (globalThis.__alerts || 0) + 1;");
    Reflect::set(&js_sys::global(), &"alert".into(), &f).unwrap();
    Reflect::set(&js_sys::global(), &"__alerts".into(), &JsValue::from(0)).unwrap();
}

fn alerts() -> f64 {
    get(&js_sys::global(), "__alerts").as_f64().unwrap_or(0.0)
}

/// What a browser would treat as the URL's scheme: tabs and newlines removed anywhere, leading
/// C0 controls and spaces trimmed, lower case.
fn browser_view(url: &str) -> String {
    url.chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect::<String>()
        .trim_start_matches(|c: char| c <= ' ')
        .to_ascii_lowercase()
}

/// Parses `html` into a detached element and checks every element and attribute.
fn assert_dom_safe(html: &str, input: &str) -> web_sys::Element {
    let document = web_sys::window().unwrap().document().unwrap();
    let root = document.create_element("div").unwrap();
    root.set_inner_html(html);
    let all = root.query_selector_all("*").unwrap();
    for i in 0..all.length() {
        let el: web_sys::Element = all.item(i).unwrap().dyn_into().unwrap();
        let tag = el.tag_name().to_ascii_lowercase();
        assert!(
            !matches!(
                tag.as_str(),
                "script"
                    | "iframe"
                    | "object"
                    | "embed"
                    | "style"
                    | "meta"
                    | "link"
                    | "svg"
                    | "math"
                    | "form"
                    | "base"
                    | "details"
                    | "body"
            ),
            "<{tag}> from {input:?}: {html}"
        );
        if tag == "img" {
            assert!(
                el.get_attribute("src").is_none(),
                "img with src from {input:?}"
            );
        }
        let attrs = el.attributes();
        for j in 0..attrs.length() {
            let a = attrs.item(j).unwrap();
            let name = a.name().to_ascii_lowercase();
            assert!(
                !name.starts_with("on"),
                "{name} on <{tag}> from {input:?}: {html}"
            );
            if matches!(
                name.as_str(),
                "href"
                    | "src"
                    | "srcset"
                    | "action"
                    | "formaction"
                    | "xlink:href"
                    | "poster"
                    | "data"
            ) {
                let v = browser_view(&a.value());
                for bad in ["javascript:", "vbscript:", "data:", "//", "\\\\", "/\\"] {
                    assert!(!v.starts_with(bad), "{name}={v:?} from {input:?}: {html}");
                }
            }
        }
    }
    root
}

#[wasm_bindgen_test]
async fn f21_rendered_page_is_safe_in_a_real_dom() {
    install_alert_counter();
    let w = fresh("web-markdown-f21").await;
    put(&w, "Rust", "A language.\n").await;
    let page = put(&w, "Clipped", F21).await;
    let key = get(&page, "key").as_string().unwrap();
    let view = call(w.page_view(key.clone())).await.unwrap();
    let html = get(&view, "html").as_string().unwrap();
    let root = assert_dom_safe(&html, F21);
    sleep(200).await;

    assert!(root.query_selector("script").unwrap().is_none());
    // The https link is kept, without its handler.
    let ok = root
        .query_selector("a[href=\"https://ok.example\"]")
        .unwrap()
        .expect("the https link survives");
    assert_eq!(ok.text_content().as_deref(), Some("ok"));
    assert!(ok.get_attribute("onclick").is_none());
    // Protocol-relative and script links lost their link, kept their text.
    for text in ["proto", "click", "tab"] {
        let found = (0..root
            .query_selector_all("span.link-removed")
            .unwrap()
            .length())
            .any(|i| {
                root.query_selector_all("span.link-removed")
                    .unwrap()
                    .item(i)
                    .unwrap()
                    .text_content()
                    .as_deref()
                    == Some(text)
            });
        assert!(found, "{text} not neutralised: {html}");
    }
    // The alias is text inside a real wikilink, not markup.
    let link = root
        .query_selector("a.wikilink[data-page=\"Rust\"]")
        .unwrap()
        .expect("the wikilink");
    assert_eq!(
        link.text_content().as_deref(),
        Some("<img src=x onerror=alert(5)>")
    );
    assert_eq!(link.child_element_count(), 0);
    assert_eq!(alerts(), 0.0, "a handler fired");
    // Sanitising happened at render time: the stored markdown is unchanged.
    let stored = call(w.page(key)).await.unwrap();
    assert_eq!(get(&stored, "body").as_string().as_deref(), Some(F21));
    w.close();
}

#[wasm_bindgen_test]
async fn xss_corpus_is_inert_in_a_real_dom() {
    install_alert_counter();
    let corpus = [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<svg/onload=alert(1)>",
        "<iframe src=\"javascript:alert(1)\"></iframe>",
        "<a href=\"&#106;avascript:alert(1)\">x</a>",
        "[x](&#106;avascript:alert(1))",
        "[x](javascript&colon;alert(1))",
        "[x]( javascript:alert(1))",
        "[x](<javascript:alert(1)>)",
        "[x](java\tscript:alert(1))",
        "[x](data:text/html,<script>alert(1)</script>)",
        "![x](javascript:alert(1))",
        "![x](https://tracker.example/pixel.gif)",
        "[x]: javascript:alert(1)\n\n[y][x]",
        "<javascript:alert(1)>",
        "[[x\" onmouseover=\"alert(1)]]",
        "[[Rust|\" onmouseover=\"alert(1)]]",
        "![[\"><img src=x onerror=alert(1)>.png]]",
        "> [!x\" onclick=\"alert(1)] title\n> body",
        "<details open ontoggle=alert(1)>",
        "<a href='https://ok.example' onclick='alert(1)'>x</a>",
        "<a href=\"https://ok.example\"><img src=x onerror=alert(1)></a>",
        "| a | b |\n|---|---|\n| <script>alert(1)</script> | [x](javascript:alert(1)) |",
        "[^1]\n\n[^1]: <img src=x onerror=alert(1)>",
    ];
    let resolver = Resolver::new([("Rust", "Rust", &[][..])]);
    let ctx = RenderContext {
        resolver: &resolver,
        self_key: None,
        assets: &[],
    };
    for md in corpus {
        assert_dom_safe(&render(md, &ctx).html, md);
    }
    sleep(200).await;
    assert_eq!(alerts(), 0.0, "a handler fired");
}

#[wasm_bindgen_test]
async fn vault_export_import_export_is_byte_identical_on_indexeddb() {
    let a = fresh("web-vault-a").await;
    call(a.add_source(tsify::Ts::new_unchecked(obj(&[
        ("key", "https://example.org/ai".into()),
        ("url", "https://example.org/ai".into()),
        ("mime", "text/markdown".into()),
        (
            "content",
            "# 人工智能\n机器学习是人工智能的一个分支。\n".into(),
        ),
        (
            "original",
            js_sys::Uint8Array::from(&b"<p>original</p>"[..]).into(),
        ),
    ]))))
    .await
    .unwrap();
    let asset = call(a.add_attachment(
        "diagram.png".into(),
        "image/png".into(),
        b"\x89PNG fake".to_vec(),
    ))
    .await
    .unwrap();
    assert_eq!(
        get(&asset, "name").as_string().as_deref(),
        Some("diagram.png")
    );
    put(&a, "人工智能", "见 [[机器学习]]。\n\n![[diagram.png]]\n").await;
    put(
        &a,
        "机器学习",
        "| a | b |\n|---|---|\n| [[人工智能|AI]] | x |\n",
    )
    .await;
    put(&a, "Temp", "[[机器学习]]\n").await;
    let renamed = call(a.rename_page("机器学习".into(), "Machine Learning: 机器学习".into()))
        .await
        .unwrap();
    assert_eq!(
        get(&get(&renamed, "page"), "key").as_string().as_deref(),
        Some("Machine Learning： 机器学习")
    );
    call(a.delete_page("Temp".into())).await.unwrap();

    let first = js_sys::Uint8Array::new(&call(a.export_vault()).await.unwrap()).to_vec();
    assert!(first.starts_with(b"PK\x03\x04"), "a zip");

    let b = fresh("web-vault-b").await;
    let report = call(b.import_vault(first.clone(), JsValue::UNDEFINED))
        .await
        .unwrap();
    assert_eq!(get(&report, "kind").as_string().as_deref(), Some("llmWiki"));
    let second = js_sys::Uint8Array::new(&call(b.export_vault()).await.unwrap()).to_vec();
    assert!(first == second, "export → import → export differs");

    // It is really in IndexedDB: reopen and check again.
    b.close();
    let reopened = call(Wiki::open("web-vault-b".into(), JsValue::UNDEFINED))
        .await
        .unwrap();
    use wasm_bindgen::convert::TryFromJsValue;
    let b = Wiki::try_from_js_value(reopened).unwrap();
    let third = js_sys::Uint8Array::new(&call(b.export_vault()).await.unwrap()).to_vec();
    assert!(first == third, "not persisted exactly");
    let view = call(b.page_view("人工智能".into())).await.unwrap();
    let backlinks = js_sys::Array::from(&get(&view, "backlinks"));
    assert_eq!(backlinks.length(), 1);
    assert_eq!(
        get(&backlinks.get(0), "key").as_string().as_deref(),
        Some("Machine Learning： 机器学习")
    );
    let assets = js_sys::Array::from(&get(&view, "assets"));
    let sha = get(&assets.get(0), "sha256").as_string().unwrap();
    let bytes = js_sys::Uint8Array::new(&call(b.asset(sha)).await.unwrap()).to_vec();
    assert_eq!(bytes, b"\x89PNG fake");
    // A vault of ours goes only into an empty wiki.
    let err = call(b.import_vault(first, JsValue::UNDEFINED))
        .await
        .unwrap_err();
    assert_eq!(
        get(&err, "code").as_string().as_deref(),
        Some("INVALID_INPUT")
    );
    a.close();
    b.close();
}
