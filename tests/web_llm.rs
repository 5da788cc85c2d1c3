//! Browser tests of the LLM endpoint client: real `fetch` in headless Chromium and Firefox
//! against the scripted LLM server (`tests/support/scripted_llm_server.rs`), which
//! `scripts/test.sh` starts before `wasm-pack test` and passes as `LLM_WIKI_TEST_ENDPOINT`
//! (compile time; default `http://127.0.0.1:11435`).
#![cfg(target_arch = "wasm32")]

use std::cell::RefCell;

use js_sys::Reflect;
use llm_wiki::llm::client::{HttpEmbedder, HttpLlm};
use llm_wiki::llm::config::{Config, EmbeddingConfig, EmbeddingProvider, Provider, Secret};
use llm_wiki::llm::http::{cancel_from_signal, page_origin, FetchTransport};
use llm_wiki::llm::prompt::source_block;
use llm_wiki::llm::structured::chat_json;
use llm_wiki::llm::transport::{HttpRequest, Method, ResponseBody, Timeouts, Transport};
use llm_wiki::llm::{Cancel, ChatRequest, Embedder, JsonSchema, Llm, Message, Purpose};
use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn endpoint() -> String {
    option_env!("LLM_WIKI_TEST_ENDPOINT")
        .unwrap_or("http://127.0.0.1:11435")
        .trim_end_matches('/')
        .to_string()
}

/// A fault path with a fresh counter.
fn fault(spec: &str) -> String {
    let id = (js_sys::Math::random() * 1e12) as u64;
    format!("{}/fault/{spec},id={id}", endpoint())
}

fn config(provider: Provider, base: &str) -> Config {
    Config {
        provider,
        base_url: base.into(),
        model: "scripted-chat".into(),
        api_key: Some(Secret::new("sk-test-browser-key-0001")),
        timeout_ms: 20_000,
        ..Config::default()
    }
}

fn ask(user: &str) -> ChatRequest {
    ChatRequest {
        purpose: Purpose::Query,
        system: "You maintain a wiki.".into(),
        messages: vec![Message::user(user)],
        json: None,
        max_tokens: None,
        temperature: None,
    }
}

fn doc() -> String {
    source_block(
        "东京.md",
        "# 东京\n东京是日本的首都，也是世界上人口最多的城市之一。Tokyo has many trains.",
    )
}

fn now() -> f64 {
    js_sys::Date::now()
}

/// The requests the server recorded whose path contains `needle` (preflights excluded).
async fn recorded(needle: &str) -> Vec<Value> {
    let t = FetchTransport::new();
    let mut r = t
        .send(
            &HttpRequest {
                method: Method::Get,
                url: format!("{}/__requests", endpoint()),
                headers: vec![],
                body: None,
                stream: false,
            },
            &Cancel::new(),
            Timeouts {
                start_ms: 10_000,
                idle_ms: 10_000,
            },
        )
        .await
        .expect("the scripted server runs (scripts/test.sh starts it)");
    let all: Vec<Value> = serde_json::from_slice(&r.body.read_all().await.unwrap()).unwrap();
    all.into_iter()
        .filter(|r| {
            r["path"].as_str().is_some_and(|p| p.contains(needle)) && r["method"] != "OPTIONS"
        })
        .collect()
}

#[wasm_bindgen_test]
async fn chat_plain_and_streamed_with_split_frames_and_utf8() {
    for provider in [
        Provider::OpenAiCompatible,
        Provider::Ollama,
        Provider::Anthropic,
    ] {
        let llm = HttpLlm::new(config(provider, &fault("chunk=3")), FetchTransport::new()).unwrap();
        let question = format!("东京是哪个国家的首都？\n{}", doc());
        let plain = llm
            .chat(&ask(&question), None, &Cancel::new())
            .await
            .unwrap();
        assert_eq!(
            plain.text, "东京是日本的首都，也是世界上人口最多的城市之一。",
            "{provider:?}"
        );
        let pieces = RefCell::new(Vec::<String>::new());
        let on_token = |s: &str| pieces.borrow_mut().push(s.to_string());
        let streamed = llm
            .chat(&ask(&question), Some(&on_token), &Cancel::new())
            .await
            .unwrap();
        assert_eq!(streamed.text, plain.text, "{provider:?}");
        let pieces = pieces.into_inner();
        assert!(pieces.len() > 1, "{provider:?}: {pieces:?}");
        assert_eq!(pieces.concat(), plain.text);
        assert!(!streamed.usage.estimated);
    }
}

#[wasm_bindgen_test]
async fn f07_anthropic_headers_reach_the_server_from_the_browser() {
    let base = fault("anthropic");
    let llm = HttpLlm::new(config(Provider::Anthropic, &base), FetchTransport::new()).unwrap();
    llm.chat(&ask("Hello"), None, &Cancel::new()).await.unwrap();
    let path = base.trim_start_matches(&endpoint()).to_string();
    let sent = recorded(&path).await;
    assert_eq!(sent.len(), 1);
    let r = &sent[0];
    assert!(r["path"].as_str().unwrap().ends_with("/v1/messages"));
    let h = &r["headers"];
    assert_eq!(h["x-api-key"], "sk-test-browser-key-0001");
    assert_eq!(h["anthropic-version"], "2023-06-01");
    assert_eq!(h["anthropic-dangerous-direct-browser-access"], "true");
    assert!(h["content-type"]
        .as_str()
        .unwrap()
        .starts_with("application/json"));
    assert_eq!(r["body"]["system"], "You maintain a wiki.");
    assert!(r["body"]["max_tokens"].as_u64().unwrap() > 0);
}

#[wasm_bindgen_test]
async fn f13_structured_output_falls_back_over_fetch() {
    let base = fault("no-json-schema");
    let llm = HttpLlm::new(
        config(Provider::OpenAiCompatible, &base),
        FetchTransport::new(),
    )
    .unwrap();
    let request = ChatRequest {
        json: Some(JsonSchema {
            name: "page".into(),
            schema: json!({"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}}),
        }),
        ..ask(&doc())
    };
    let r = chat_json(&llm, &request, &Cancel::new()).await.unwrap();
    assert_eq!(r.value["title"], "东京");
    let path = base.trim_start_matches(&endpoint()).to_string();
    let sent = recorded(&path).await;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["body"]["response_format"]["type"], "json_object");
    // LM Studio's refusal of json_object costs nothing: json_schema is tried first.
    let base = fault("no-json-object");
    let llm = HttpLlm::new(
        config(Provider::OpenAiCompatible, &base),
        FetchTransport::new(),
    )
    .unwrap();
    chat_json(&llm, &request, &Cancel::new()).await.unwrap();
    assert_eq!(
        recorded(base.trim_start_matches(&endpoint())).await.len(),
        1
    );
}

#[wasm_bindgen_test]
async fn rate_limit_retry_after_is_read_through_cors() {
    let llm = HttpLlm::new(
        config(
            Provider::OpenAiCompatible,
            &fault("ratelimit=1,retry-after=1"),
        ),
        FetchTransport::new(),
    )
    .unwrap();
    let t0 = now();
    llm.chat(&ask("x"), None, &Cancel::new()).await.unwrap();
    let waited = now() - t0;
    assert!(waited >= 950.0, "slept for Retry-After: {waited} ms");
    assert!(waited < 5000.0, "{waited} ms");
}

#[wasm_bindgen_test]
async fn typed_errors_over_fetch() {
    let cases = [
        ("html", "LLM_NOT_AN_ENDPOINT"),
        ("truncate", "LLM_TRUNCATED"),
        ("status=500,message=boom", "LLM_SERVER"),
        ("status=400,message=model%20x%20not%20found", "LLM_REJECTED"),
        ("auth=other-key", "LLM_AUTH"),
        ("empty", "LLM_EMPTY_COMPLETION"),
    ];
    for (spec, code) in cases {
        let llm = HttpLlm::new(
            config(Provider::OpenAiCompatible, &fault(spec)),
            FetchTransport::new(),
        )
        .unwrap();
        let e = llm.chat(&ask("x"), None, &Cancel::new()).await.unwrap_err();
        assert_eq!(e.code(), code, "{spec}: {e}");
        assert!(!e.to_string().contains("sk-test-browser-key-0001"), "{e}");
    }
    // F03 streamed: truncation is detected from the stream's finish reason.
    for provider in [
        Provider::OpenAiCompatible,
        Provider::Ollama,
        Provider::Anthropic,
    ] {
        let llm =
            HttpLlm::new(config(provider, &fault("truncate")), FetchTransport::new()).unwrap();
        let on_token = |_: &str| {};
        let e = llm
            .chat(&ask(&doc()), Some(&on_token), &Cancel::new())
            .await
            .unwrap_err();
        assert_eq!(e.code(), "LLM_TRUNCATED", "{provider:?}");
    }
    // A closed port: unreachable (the no-cors probe fails too).
    let llm = HttpLlm::new(
        config(Provider::OpenAiCompatible, "http://127.0.0.1:9"),
        FetchTransport::new(),
    )
    .unwrap();
    let e = llm.chat(&ask("x"), None, &Cancel::new()).await.unwrap_err();
    assert_eq!(e.code(), "LLM_UNREACHABLE", "{e}");
    // Timeout.
    let mut cfg = config(Provider::OpenAiCompatible, &fault("delay=4000"));
    cfg.timeout_ms = 1000;
    let llm = HttpLlm::new(cfg, FetchTransport::new()).unwrap();
    let t0 = now();
    assert_eq!(
        llm.chat(&ask("x"), None, &Cancel::new())
            .await
            .unwrap_err()
            .code(),
        "LLM_TIMEOUT"
    );
    assert!(now() - t0 < 3500.0);
}

#[wasm_bindgen_test]
async fn f06_cors_refusal_is_origin_not_allowed_with_the_page_origin() {
    let origin = page_origin().expect("a page origin");
    let llm = HttpLlm::new(
        config(Provider::OpenAiCompatible, &fault("cors")),
        FetchTransport::new(),
    )
    .unwrap();
    let e = llm.chat(&ask("x"), None, &Cancel::new()).await.unwrap_err();
    assert_eq!(e.code(), "LLM_ORIGIN_NOT_ALLOWED", "{e}");
    assert!(
        e.to_string().contains(&format!("OLLAMA_ORIGINS={origin}")),
        "{e}"
    );
    // Same through the JS API's connection test, on the Ollama preset's shape.
    use llm_wiki::wasm::Wiki;
    let name = "web-llm-f06";
    let _ = JsFuture::from(Wiki::delete(name.into())).await;
    let wiki = open(name).await;
    let options = js_sys::Object::new();
    let cfg = serde_json::to_value(config(Provider::OpenAiCompatible, &fault("cors"))).unwrap();
    Reflect::set(&options, &"config".into(), &js(&cfg)).unwrap();
    let ops_before =
        js_sys::Array::from(&JsFuture::from(wiki.operations()).await.unwrap()).length();
    let report = JsFuture::from(wiki.test_connection(options.into()))
        .await
        .unwrap();
    let report: Value = serde_wasm_bindgen::from_value(report).unwrap();
    assert_eq!(report["checks"][0]["name"], "models");
    assert_eq!(report["checks"][0]["code"], "LLM_ORIGIN_NOT_ALLOWED");
    assert!(report["checks"][0]["detail"]
        .as_str()
        .unwrap()
        .contains(&format!("OLLAMA_ORIGINS={origin}")));
    assert_eq!(report["checks"][1]["status"], "skipped");
    assert_eq!(report["origin"], json!(origin));
    let ops_after = js_sys::Array::from(&JsFuture::from(wiki.operations()).await.unwrap()).length();
    assert_eq!(ops_before, ops_after, "the wiki is not modified");
    wiki.close();
}

#[wasm_bindgen_test]
async fn f14_embedding_shapes_over_fetch() {
    let cases = [
        (
            EmbeddingProvider::OpenAi,
            format!("{}/v1", endpoint()),
            "scripted-embed-768",
            768,
        ),
        (
            EmbeddingProvider::Ollama,
            endpoint(),
            "scripted-embed-1024",
            1024,
        ),
        (
            EmbeddingProvider::OllamaLegacy,
            endpoint(),
            "scripted-embed-32",
            32,
        ),
    ];
    let texts = vec![
        "alpha".to_string(),
        "机器学习".to_string(),
        "beta".to_string(),
    ];
    for (provider, base, model, dim) in cases {
        let cfg = Config {
            base_url: base,
            embeddings: EmbeddingConfig {
                provider,
                model: model.into(),
                ..EmbeddingConfig::default()
            },
            ..Config::default()
        };
        let e = HttpEmbedder::new(cfg, FetchTransport::new()).unwrap();
        let out = e.embed(&texts, &Cancel::new()).await.unwrap();
        assert_eq!((out.vectors.len(), out.dimension), (3, dim), "{provider:?}");
        // Matched by index even though the OpenAI shape comes back reversed.
        let reference = llm_wiki::llm::offline::OfflineEmbedder::with_model(model, dim);
        for (t, v) in texts.iter().zip(&out.vectors) {
            let want = reference.embed_one(t);
            let dot: f32 = want.iter().zip(v).map(|(a, b)| a * b).sum();
            assert!(dot > 0.999, "{provider:?} {t}: {dot}");
        }
    }
}

#[wasm_bindgen_test]
async fn cancellation_from_an_abort_signal() {
    // Mid-stream: a slow stream (50 ms between 16-byte chunks), aborted after the first token.
    let controller = web_sys::AbortController::new().unwrap();
    let (cancel, _guard) = cancel_from_signal(&controller.signal());
    let llm = HttpLlm::new(
        config(
            Provider::OpenAiCompatible,
            &fault("chunk=16,chunk-delay=50"),
        ),
        FetchTransport::new(),
    )
    .unwrap();
    let tokens = std::cell::Cell::new(0);
    let on_token = |_: &str| {
        tokens.set(tokens.get() + 1);
        controller.abort();
    };
    let t0 = now();
    let e = llm
        .chat(&ask(&doc()), Some(&on_token), &cancel)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "CANCELLED");
    assert_eq!(tokens.get(), 1);
    assert!(now() - t0 < 5000.0, "{} ms", now() - t0);
    // Before the response: a 5 s delay, aborted after 200 ms.
    let controller = web_sys::AbortController::new().unwrap();
    let (cancel, _guard) = cancel_from_signal(&controller.signal());
    let llm = HttpLlm::new(
        config(Provider::OpenAiCompatible, &fault("delay=5000")),
        FetchTransport::new(),
    )
    .unwrap();
    let abort = controller.clone();
    wasm_bindgen_futures::spawn_local(async move {
        gloo_timers::future::TimeoutFuture::new(200).await;
        abort.abort();
    });
    let t0 = now();
    let e = llm.chat(&ask("x"), None, &cancel).await.unwrap_err();
    assert_eq!(e.code(), "CANCELLED");
    assert!(now() - t0 < 2000.0, "{} ms", now() - t0);
    // During a Retry-After sleep.
    let controller = web_sys::AbortController::new().unwrap();
    let (cancel, _guard) = cancel_from_signal(&controller.signal());
    let llm = HttpLlm::new(
        config(
            Provider::OpenAiCompatible,
            &fault("ratelimit=5,retry-after=5"),
        ),
        FetchTransport::new(),
    )
    .unwrap();
    let abort = controller.clone();
    wasm_bindgen_futures::spawn_local(async move {
        gloo_timers::future::TimeoutFuture::new(300).await;
        abort.abort();
    });
    let t0 = now();
    assert_eq!(
        llm.chat(&ask("x"), None, &cancel).await.unwrap_err().code(),
        "CANCELLED"
    );
    assert!(now() - t0 < 2000.0);
}

async fn open(name: &str) -> llm_wiki::wasm::Wiki {
    use wasm_bindgen::convert::TryFromJsValue;
    let w = JsFuture::from(llm_wiki::wasm::Wiki::open(name.into(), JsValue::UNDEFINED))
        .await
        .unwrap();
    llm_wiki::wasm::Wiki::try_from_js_value(w).expect("a Wiki")
}

/// A JSON value as a plain JS object (not a `Map`).
fn js(v: &Value) -> JsValue {
    use serde::Serialize;
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap()
}

fn get(v: &JsValue, field: &str) -> JsValue {
    Reflect::get(v, &field.into()).unwrap()
}

#[wasm_bindgen_test]
async fn js_api_config_presets_and_test_connection() {
    use llm_wiki::wasm::Wiki;
    let name = "web-llm-config";
    let _ = JsFuture::from(Wiki::delete(name.into())).await;
    let wiki = open(name).await;
    let presets = js_sys::Array::from(&Wiki::presets().unwrap());
    let ids: Vec<String> = presets
        .iter()
        .map(|p| get(&p, "id").as_string().unwrap())
        .collect();
    for id in [
        "openai",
        "ollama",
        "lm-studio",
        "llama-cpp",
        "vllm",
        "anthropic",
        "offline",
    ] {
        assert!(ids.iter().any(|i| i == id), "{id}");
    }
    // Never configured: offline.
    let view = JsFuture::from(wiki.config()).await.unwrap();
    assert_eq!(
        get(&view, "provider").as_string().as_deref(),
        Some("offline")
    );

    let mut cfg = serde_json::to_value(config(Provider::OpenAiCompatible, &endpoint())).unwrap();
    cfg["apiKey"] = json!("sk-test-browser-key-0001");
    cfg["embeddings"] = json!({"provider": "ollama", "model": "scripted-embed-768"});
    let input = js(&cfg);
    let op = JsFuture::from(wiki.set_config(input)).await.unwrap();
    assert_eq!(get(&op, "kind").as_string().as_deref(), Some("settings"));
    let view = JsFuture::from(wiki.config()).await.unwrap();
    assert_eq!(get(&view, "hasApiKey").as_bool(), Some(true));
    assert!(get(&view, "apiKey").is_undefined());
    let json_text: String = js_sys::JSON::stringify(&view).unwrap().into();
    assert!(
        !json_text.contains("sk-test-browser-key-0001"),
        "{json_text}"
    );
    let log: String = JsFuture::from(wiki.log())
        .await
        .unwrap()
        .as_string()
        .unwrap();
    assert!(!log.contains("sk-test"));

    let report = JsFuture::from(wiki.test_connection(JsValue::UNDEFINED))
        .await
        .unwrap();
    let report: Value = serde_wasm_bindgen::from_value(report).unwrap();
    assert_eq!(report["chatOk"], true, "{report:#}");
    assert_eq!(report["embeddingsOk"], true, "{report:#}");
    assert_eq!(report["structuredMode"], "json-schema");
    assert_eq!(report["embeddingDimension"], 768);
    for c in report["checks"].as_array().unwrap() {
        assert_eq!(c["status"], "ok", "{c:#}");
    }

    // Invalid settings throw LLM_CONFIG as a real Error.
    let bad = js(&json!({"provider": "openai-compatible", "baseUrl": "ftp://x", "model": "m"}));
    let err = JsFuture::from(wiki.set_config(bad)).await.unwrap_err();
    assert!(err.is_instance_of::<js_sys::Error>());
    assert_eq!(get(&err, "code").as_string().as_deref(), Some("LLM_CONFIG"));
    assert_eq!(
        get(&err, "name").as_string().as_deref(),
        Some("LlmWikiError")
    );
    wiki.close();
    let _ = JsFuture::from(Wiki::delete(name.into())).await;
}

#[wasm_bindgen_test]
fn offline_embedding_is_the_same_in_the_browser() {
    // The same pinned values as the native unit test in src/llm/offline.rs.
    let e = llm_wiki::llm::offline::OfflineEmbedder::new();
    let v = e.embed_one("机器学习");
    let nonzero: Vec<(usize, f32)> = v
        .into_iter()
        .enumerate()
        .filter(|(_, x)| *x != 0.0)
        .collect();
    let k = 1.0 / 7f32.sqrt();
    assert_eq!(
        nonzero,
        [
            (0, -k),
            (5, -k),
            (38, -k),
            (79, -k),
            (114, k),
            (145, k),
            (146, k)
        ]
    );
}

#[wasm_bindgen_test]
async fn js_api_endpoint_embeddings_re_embed_on_confirmation_and_serve_hybrid_search() {
    use llm_wiki::wasm::Wiki;
    let name = "web-llm-embed";
    let _ = JsFuture::from(Wiki::delete(name.into())).await;
    let wiki = open(name).await;
    for (title, body) in [
        ("Ownership", "Each value in Rust has one owner."),
        ("借用", "引用借用一个值而不拥有它。"),
        ("Threads", "Threads run code at the same time."),
    ] {
        let page = js(&json!({"title": title, "body": body}));
        JsFuture::from(wiki.put_page(tsify::Ts::new_unchecked(page)))
            .await
            .unwrap();
    }
    // The pages have offline vectors; the endpoint's model needs a confirmed re-embed.
    let mut cfg = serde_json::to_value(config(Provider::OpenAiCompatible, &endpoint())).unwrap();
    cfg["apiKey"] = json!("sk-test-browser-key-0001");
    cfg["embeddings"] = json!({"provider": "ollama", "model": "scripted-embed-768"});
    JsFuture::from(wiki.set_config(js(&cfg))).await.unwrap();
    let status = JsFuture::from(wiki.embedding_status()).await.unwrap();
    assert_eq!(
        get(&status, "state").as_string().as_deref(),
        Some("reembedRequired")
    );
    let report = JsFuture::from(wiki.embed_pages(JsValue::UNDEFINED))
        .await
        .unwrap();
    assert_eq!(get(&report, "embedded").as_f64(), Some(0.0));

    // Confirmed, one page per call, with progress.
    let seen = std::rc::Rc::new(RefCell::new(Vec::<f64>::new()));
    let sink = seen.clone();
    let on_progress =
        wasm_bindgen::closure::Closure::<dyn FnMut(JsValue)>::new(move |p: JsValue| {
            sink.borrow_mut().push(get(&p, "done").as_f64().unwrap());
        });
    let request = js(&json!({"confirm": true, "batchSize": 1}));
    Reflect::set(&request, &"onProgress".into(), on_progress.as_ref()).unwrap();
    let report = JsFuture::from(wiki.embed_pages(request)).await.unwrap();
    assert_eq!(get(&report, "embedded").as_f64(), Some(3.0));
    assert_eq!(*seen.borrow(), vec![1.0, 2.0, 3.0]);
    let status = get(&report, "status");
    assert_eq!(get(&status, "state").as_string().as_deref(), Some("ready"));
    assert_eq!(get(&status, "missing").as_f64(), Some(0.0));

    // Hybrid search embeds the query at the endpoint and fuses.
    let r = JsFuture::from(wiki.search("owner".into(), js(&json!({"mode": "hybrid"}))))
        .await
        .unwrap();
    assert_eq!(get(&r, "mode").as_string().as_deref(), Some("hybrid"));
    assert_eq!(
        get(&get(&r, "status"), "state").as_string().as_deref(),
        Some("ok")
    );
    let hits = js_sys::Array::from(&get(&r, "hits"));
    assert_eq!(
        get(&hits.get(0), "key").as_string().as_deref(),
        Some("Ownership")
    );
    // An endpoint that is down: search still answers, on BM25, saying why.
    cfg["baseUrl"] = json!("http://127.0.0.1:9");
    JsFuture::from(wiki.set_config(js(&cfg))).await.unwrap();
    let r = JsFuture::from(wiki.search("owner".into(), js(&json!({"mode": "hybrid"}))))
        .await
        .unwrap();
    assert_eq!(get(&r, "mode").as_string().as_deref(), Some("bm25"));
    let hits = js_sys::Array::from(&get(&r, "hits"));
    assert_eq!(
        get(&hits.get(0), "key").as_string().as_deref(),
        Some("Ownership")
    );
    wiki.close();
    let _ = JsFuture::from(Wiki::delete(name.into())).await;
}

/// Issue 21 over `fetch`: a web page's text in the error (item 5), a prompt the server cut
/// (item 3), a schema whose caps the endpoint refuses (item 13).
#[wasm_bindgen_test]
async fn issue21_page_text_server_cut_prompts_and_refused_caps_over_fetch() {
    let llm = HttpLlm::new(
        config(Provider::OpenAiCompatible, &fault("html")),
        FetchTransport::new(),
    )
    .unwrap();
    let e = llm.chat(&ask("x"), None, &Cancel::new()).await.unwrap_err();
    assert!(e.to_string().contains("Open WebUI Sign in"), "{e}");
    let mut cfg = config(Provider::OpenAiCompatible, &fault("cut-prompt=300"));
    cfg.context_window = 1000;
    cfg.max_output_tokens = 200;
    let llm = HttpLlm::new(cfg, FetchTransport::new()).unwrap();
    let prompt = "Tokio is an asynchronous runtime for Rust. ".repeat(100);
    let e = llm
        .chat(&ask(&prompt), None, &Cancel::new())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "LLM_CONTEXT_OVERFLOW", "{e}");
    let llm = HttpLlm::new(
        config(Provider::OpenAiCompatible, &fault("no-caps")),
        FetchTransport::new(),
    )
    .unwrap();
    let request = ChatRequest {
        json: Some(llm_wiki::llm::JsonSchema {
            name: "page".into(),
            schema: serde_json::json!({"type": "object", "required": ["title"],
                "properties": {"title": {"type": "string"}, "links": {"type": "array", "items": {"type": "string"}}}}),
        }),
        max_tokens: Some(256),
        ..ask("# Tokio\nTokio is a runtime.")
    };
    let r = llm_wiki::llm::structured::chat_json(&llm, &request, &Cancel::new())
        .await
        .unwrap();
    assert!(r.value.get("title").is_some());
    assert_eq!(llm.learned().modes().no_caps.len(), 1);
}

/// F37 over `fetch`: a stream that stalls fails after the idle gap and is aborted; one that is
/// slow to start on a longer prompt is waited for.
#[wasm_bindgen_test]
async fn f37_stalled_and_slow_streams_over_fetch() {
    let mut cfg = config(
        Provider::OpenAiCompatible,
        &fault("chunk=200,chunk-delay=100,stall-after=3"),
    );
    cfg.idle_timeout_ms = 1500;
    let llm = HttpLlm::new(cfg, FetchTransport::new()).unwrap();
    let on_token = |_: &str| {};
    let t0 = now();
    let e = llm
        .chat(&ask("What is Tokio?"), Some(&on_token), &Cancel::new())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "LLM_TIMEOUT", "{e}");
    let waited = now() - t0;
    assert!((1400.0..8000.0).contains(&waited), "{waited} ms");
    // First byte after 2.5 s with timeoutMs 1 s: a 100-token prompt adds 5 s to the start wait.
    let mut cfg = config(
        Provider::OpenAiCompatible,
        &fault("first-byte=2500,chunk-delay=10"),
    );
    cfg.timeout_ms = 1000;
    let llm = HttpLlm::new(cfg, FetchTransport::new()).unwrap();
    let prompt = "Tokio is an asynchronous runtime for Rust. ".repeat(10);
    let r = llm
        .chat(&ask(&prompt), Some(&on_token), &Cancel::new())
        .await
        .unwrap();
    assert!(!r.text.is_empty());
}

#[wasm_bindgen_test]
async fn js_api_one_nan_vector_skips_only_its_page_and_the_status_says_so() {
    use llm_wiki::wasm::Wiki;
    let name = "web-llm-nan";
    let _ = JsFuture::from(Wiki::delete(name.into())).await;
    let wiki = open(name).await;
    for (title, body) in [
        ("Ownership", "Each value in Rust has one owner."),
        ("Slices", "A slice references a contiguous sequence."),
        ("Threads", "Threads run code at the same time."),
    ] {
        let page = js(&json!({"title": title, "body": body}));
        JsFuture::from(wiki.put_page(tsify::Ts::new_unchecked(page)))
            .await
            .unwrap();
    }
    // A Python-style server: bare NaN tokens for the input holding "contiguous".
    let mut cfg = serde_json::to_value(config(Provider::OpenAiCompatible, &endpoint())).unwrap();
    cfg["apiKey"] = json!("sk-test-browser-key-0001");
    cfg["embeddings"] = json!({
        "provider": "openai",
        "model": "scripted-embed-32",
        "baseUrl": format!("{}/fault/nan-vector=contiguous/v1", endpoint()),
    });
    JsFuture::from(wiki.set_config(js(&cfg))).await.unwrap();
    let report = JsFuture::from(wiki.embed_pages(js(&json!({"confirm": true, "batchSize": 8}))))
        .await
        .unwrap();
    assert_eq!(get(&report, "embedded").as_f64(), Some(2.0));
    let skipped = js_sys::Array::from(&get(&report, "skipped"));
    assert_eq!(skipped.length(), 1);
    assert_eq!(
        get(&skipped.get(0), "page").as_string().as_deref(),
        Some("Slices")
    );
    assert_eq!(
        get(&skipped.get(0), "reason").as_string().as_deref(),
        Some("not-finite")
    );
    let status = JsFuture::from(wiki.embedding_status()).await.unwrap();
    assert_eq!(get(&status, "state").as_string().as_deref(), Some("ready"));
    let skipped = js_sys::Array::from(&get(&status, "skipped"));
    assert_eq!(
        get(&skipped.get(0), "page").as_string().as_deref(),
        Some("Slices")
    );
    // Vector search works for the others.
    let r = JsFuture::from(wiki.search("owner".into(), js(&json!({"mode": "vector"}))))
        .await
        .unwrap();
    assert_eq!(get(&r, "mode").as_string().as_deref(), Some("vector"));
    let hits = js_sys::Array::from(&get(&r, "hits"));
    assert_eq!(
        get(&hits.get(0), "key").as_string().as_deref(),
        Some("Ownership")
    );
    wiki.close();
    let _ = JsFuture::from(Wiki::delete(name.into())).await;
}
