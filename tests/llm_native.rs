//! LLM endpoints natively: field cases F01, F02, F03, F06, F07, F08, F09, F13, F14 with their exact
//! inputs, plus retries, errors, cancellation, secrets, settings and the connection test.
//!
//! Two transports: `Canned` replays responses byte for byte (the field cases' mock provider), and
//! `InProcess` runs the scripted endpoint in-process (replies derived from the request).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::cell::RefCell;
use std::collections::VecDeque;

use futures::executor::block_on;
use llm_wiki::clock::{Clock, ManualClock, Millis};
use llm_wiki::llm::client::{HttpEmbedder, HttpLlm, Learned};
use llm_wiki::llm::config::{Config, EmbeddingConfig, EmbeddingProvider, Provider, Secret};
use llm_wiki::llm::connection::{test_connection, CheckStatus};
use llm_wiki::llm::provider::{build_chat_request, StructuredMode};
use llm_wiki::llm::stream::ChatStream;
use llm_wiki::llm::structured::{chat_json, Budgeted};
use llm_wiki::llm::transport::{ChunkedBody, HttpRequest, HttpResponse, Timeouts, Transport};
use llm_wiki::llm::url::{chat_endpoints, embeddings_url};
use llm_wiki::llm::{
    Cancel, ChatRequest, Embedder, FinishReason, JsonSchema, Llm, Message, Purpose,
};
use llm_wiki::scripted::server::InProcess;
use llm_wiki::Error;
use serde_json::{json, Value};

// ------------------------------------------------------------------ helpers

/// One canned response: status, headers, body chunks (one network read each).
type CannedResponse = (u16, Vec<(String, String)>, Vec<Vec<u8>>);

/// Replays canned responses (status, headers, body chunks) and records the requests.
#[derive(Clone)]
struct Canned {
    responses: std::rc::Rc<RefCell<VecDeque<CannedResponse>>>,
    requests: std::rc::Rc<RefCell<Vec<HttpRequest>>>,
    clock: ManualClock,
}

impl Canned {
    fn new() -> Self {
        Canned {
            responses: Default::default(),
            requests: Default::default(),
            clock: ManualClock::new(1_800_000_000_000),
        }
    }
    fn push(&self, status: u16, content_type: &str, chunks: Vec<Vec<u8>>) -> &Self {
        self.responses.borrow_mut().push_back((
            status,
            vec![("content-type".into(), content_type.into())],
            chunks,
        ));
        self
    }
    fn json(&self, status: u16, body: &Value) -> &Self {
        self.push(
            status,
            "application/json",
            vec![body.to_string().into_bytes()],
        )
    }
    fn requests(&self) -> Vec<HttpRequest> {
        self.requests.borrow().clone()
    }
}

impl Transport for Canned {
    type Body = ChunkedBody;
    async fn send(
        &self,
        request: &HttpRequest,
        cancel: &Cancel,
        _timeouts: Timeouts,
    ) -> llm_wiki::Result<HttpResponse<ChunkedBody>> {
        cancel.check()?;
        self.requests.borrow_mut().push(request.clone());
        let (status, headers, chunks) = self
            .responses
            .borrow_mut()
            .pop_front()
            .expect("a canned response for every request");
        Ok(HttpResponse {
            status,
            headers,
            body: ChunkedBody::new(chunks),
        })
    }
    async fn sleep(&self, ms: u64, cancel: &Cancel) -> llm_wiki::Result<()> {
        cancel.check()?;
        self.clock.advance(ms as Millis);
        Ok(())
    }
    fn now_ms(&self) -> Millis {
        self.clock.now_ms()
    }
}

fn openai(base: &str) -> Config {
    Config {
        provider: Provider::OpenAiCompatible,
        base_url: base.into(),
        model: "scripted-chat".into(),
        ..Config::default()
    }
}

trait TapModel {
    fn tap_model(self, model: &str) -> Self;
}

impl TapModel for Config {
    fn tap_model(mut self, model: &str) -> Self {
        self.model = model.into();
        self
    }
}

fn ask(user: &str) -> ChatRequest {
    ChatRequest {
        purpose: Purpose::Compile,
        system: "You maintain a wiki.".into(),
        messages: vec![Message::user(user)],
        json: None,
        max_tokens: None,
        temperature: None,
    }
}

fn page_schema() -> JsonSchema {
    JsonSchema {
        name: "page".into(),
        schema: json!({"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}}),
    }
}

fn ask_json(user: &str) -> ChatRequest {
    ChatRequest {
        json: Some(page_schema()),
        ..ask(user)
    }
}

fn openai_reply(message: Value, finish: &str) -> Value {
    json!({"id": "x", "object": "chat.completion", "model": "m",
           "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
}

fn canned_llm(replies: &[Value]) -> (HttpLlm<Canned>, Canned) {
    let t = Canned::new();
    for r in replies {
        t.json(200, r);
    }
    (
        HttpLlm::new(openai("http://localhost:1234/v1"), t.clone()).unwrap(),
        t,
    )
}

fn code<T: std::fmt::Debug>(r: llm_wiki::Result<T>) -> &'static str {
    r.unwrap_err().code()
}

// ------------------------------------------------------------------ F01

#[test]
fn f01_fenced_json_parses_without_residue() {
    let cases = [
        "```json\n{\"title\": \"Tokio\", \"links\": [\"Rust\"]}\n```",
        "```\n{\"title\": \"Tokio\", \"links\": [\"Rust\"]}\n```",
        "```JSON\r\n{\"title\": \"Tokio\", \"links\": [\"Rust\"]}\r\n```   ",
        "Here you go:\n```json\n{\"title\": \"Tokio\", \"links\": []}\n```",
    ];
    for content in cases {
        let (llm, t) = canned_llm(&[openai_reply(
            json!({"role": "assistant", "content": content}),
            "stop",
        )]);
        let r = block_on(chat_json(&llm, &ask_json("page"), &Cancel::new())).unwrap();
        assert_eq!(r.value["title"], "Tokio", "{content:?}");
        assert!(!r.repaired, "{content:?} needed no repair");
        let obj = r.value.as_object().unwrap();
        assert!(
            obj.keys().all(|k| k == "title" || k == "links"),
            "no residue: {obj:?}"
        );
        assert_eq!(t.requests().len(), 1);
    }
    // d) a fence inside a JSON string stays intact.
    let d = r#"{"title":"Tokio","body":"Example:\n```rust\nfn main() {}\n```\nDone."}"#;
    let (llm, _) = canned_llm(&[openai_reply(
        json!({"role": "assistant", "content": d}),
        "stop",
    )]);
    let r = block_on(chat_json(&llm, &ask_json("page"), &Cancel::new())).unwrap();
    assert_eq!(
        r.value["body"],
        "Example:\n```rust\nfn main() {}\n```\nDone."
    );
}

// ------------------------------------------------------------------ F02

#[test]
fn f02ab_reasoning_is_dropped_before_parsing() {
    for content in [
        "<think>\nMaybe {\"title\": \"Draft\"}? No.\n</think>\n\n{\"title\": \"Tokio\"}",
        "User wants a page. {\"title\":\"Draft\"} is wrong.\n</think>\n{\"title\": \"Tokio\"}",
    ] {
        let (llm, _) = canned_llm(&[openai_reply(
            json!({"role": "assistant", "content": content}),
            "stop",
        )]);
        let r = block_on(chat_json(&llm, &ask_json("page"), &Cancel::new())).unwrap();
        assert_eq!(r.value, json!({"title": "Tokio"}), "{content:?}");
        // The plain answer text has no reasoning either.
        let (llm, _) = canned_llm(&[openai_reply(
            json!({"role": "assistant", "content": content}),
            "stop",
        )]);
        let text = block_on(llm.chat(&ask("x"), None, &Cancel::new()))
            .unwrap()
            .text;
        assert!(
            !text.contains("Draft") && !text.contains("think"),
            "{text:?}"
        );
    }
}

#[test]
fn f02c_answer_only_in_reasoning_content_is_used_for_structured_calls() {
    let msg =
        json!({"role": "assistant", "content": "", "reasoning_content": "{\"title\": \"Tokio\"}"});
    let (llm, _) = canned_llm(&[openai_reply(msg.clone(), "stop")]);
    let r = block_on(chat_json(&llm, &ask_json("page"), &Cancel::new())).unwrap();
    assert_eq!(r.value, json!({"title": "Tokio"}));
    // A plain call has no schema to check the reasoning against: typed error.
    let (llm, _) = canned_llm(&[openai_reply(msg, "stop")]);
    let e = block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_EMPTY_COMPLETION");
    assert!(e.to_string().contains("reasoning_content"), "{e}");
}

#[test]
fn f02d_reasoning_prose_without_answer_is_a_typed_error_naming_the_field() {
    let msg = json!({"role": "assistant", "content": null, "reasoning_content": "I think the page should cover..."});
    let (llm, t) = canned_llm(&[openai_reply(msg, "stop")]);
    let e = block_on(chat_json(&llm, &ask_json("page"), &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_EMPTY_COMPLETION");
    let m = e.to_string();
    assert!(
        m.contains("`content` is empty") && m.contains("reasoning_content"),
        "{m}"
    );
    assert_eq!(t.requests().len(), 1, "no repair of an empty answer");
}

#[test]
fn f02e_think_tags_split_across_stream_deltas() {
    let deltas = ["<thi", "nk>plan {x}</th", "ink>{\"title\":\"Tokio\"}"];
    let mut sse = String::new();
    for d in deltas {
        sse.push_str(&format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"content": d}}]})
        ));
    }
    sse.push_str(&format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    ));
    sse.push_str("data: [DONE]\n\n");
    // One network read per delta frame.
    let frames: Vec<Vec<u8>> = sse
        .split_inclusive("\n\n")
        .map(|f| f.as_bytes().to_vec())
        .collect();
    let t = Canned::new();
    t.push(200, "text/event-stream", frames);
    let llm = HttpLlm::new(openai("http://localhost:1234/v1"), t).unwrap();
    let shown = RefCell::new(String::new());
    let on_token = |s: &str| shown.borrow_mut().push_str(s);
    let r = block_on(llm.chat(&ask_json("page"), Some(&on_token), &Cancel::new())).unwrap();
    assert_eq!(r.text, "{\"title\":\"Tokio\"}");
    assert_eq!(
        shown.into_inner(),
        "{\"title\":\"Tokio\"}",
        "nothing of the reasoning is shown"
    );
}

// ------------------------------------------------------------------ F03

#[test]
fn f03_truncation_is_its_own_error_in_every_shape() {
    // a) OpenAI, partial content; b) content null.
    for msg in [
        json!({"role": "assistant", "content": "{\"title\":\"Tokio\",\"related\":[\"Rust\",\"Futures\""}),
        json!({"role": "assistant", "content": null}),
    ] {
        let (llm, t) = canned_llm(&[openai_reply(msg, "length")]);
        let e = block_on(chat_json(&llm, &ask_json("page"), &Cancel::new())).unwrap_err();
        assert_eq!(e.code(), "LLM_TRUNCATED");
        assert!(e.to_string().contains("length"), "the cause is named: {e}");
        assert_eq!(
            t.requests().len(),
            1,
            "no blind retry, no repair, no bracket closing"
        );
    }
    // c) Anthropic.
    let t = Canned::new();
    t.json(
        200,
        &json!({"type": "message", "role": "assistant", "model": "claude",
        "content": [{"type": "text", "text": "{\"title\":\"Tokio\",\"related\":[\"Rust\""}],
        "stop_reason": "max_tokens", "usage": {"input_tokens": 10, "output_tokens": 20}}),
    );
    let cfg = Config {
        provider: Provider::Anthropic,
        base_url: "https://api.anthropic.com".into(),
        api_key: Some(Secret::new("sk-ant-TEST")),
        model: "claude".into(),
        ..Config::default()
    };
    let llm = HttpLlm::new(cfg, t).unwrap();
    let e = block_on(chat_json(&llm, &ask_json("page"), &Cancel::new())).unwrap_err();
    assert_eq!(
        e,
        Error::LlmTruncated {
            reason: "max_tokens".into(),
            max_tokens: Some(2048)
        }
    );
    // d) Ollama native, non-streamed and streamed.
    let ollama = Config {
        provider: Provider::Ollama,
        base_url: "http://localhost:11434".into(),
        model: "llama3.2".into(),
        ..Config::default()
    };
    let t = Canned::new();
    t.json(200, &json!({"model": "llama3.2", "message": {"role": "assistant", "content": "{\"title\":\"To"}, "done": true, "done_reason": "length"}));
    t.push(
        200,
        "application/x-ndjson",
        vec![
            b"{\"message\":{\"content\":\"{\\\"title\\\"\"},\"done\":false}\n".to_vec(),
            b"{\"message\":{\"content\":\"\"},\"done\":true,\"done_reason\":\"len".to_vec(),
            b"gth\"}\n".to_vec(),
        ],
    );
    let llm = HttpLlm::new(ollama, t).unwrap();
    assert_eq!(
        code(block_on(chat_json(&llm, &ask_json("page"), &Cancel::new()))),
        "LLM_TRUNCATED"
    );
    let on_token = |_: &str| {};
    assert_eq!(
        code(block_on(llm.chat(
            &ask_json("page"),
            Some(&on_token),
            &Cancel::new()
        ))),
        "LLM_TRUNCATED"
    );
}

// ------------------------------------------------------------------ F06

fn cors_config() -> Config {
    // The Ollama preset's base URL, behind the scripted server's `cors` fault.
    Config {
        embeddings: EmbeddingConfig {
            provider: EmbeddingProvider::Ollama,
            model: "nomic-embed-text".into(),
            ..EmbeddingConfig::default()
        },
        ..openai("http://localhost:11434/fault/cors")
    }
}

#[test]
fn f06_refused_origin_is_origin_not_allowed_with_the_exact_ollama_origins_value() {
    for origin in [
        "chrome-extension://abcdefghijklmnop",
        "https://wiki.example.test",
    ] {
        let t = InProcess::new(vec!["http://allowed.example.test".into()]).with_origin(origin);
        let report = block_on(test_connection(
            &cors_config(),
            t.clone(),
            Learned::default(),
            &Cancel::new(),
        ));
        let models = &report.checks.iter().find(|c| c.name == "models").unwrap();
        assert_eq!(
            models.code.as_deref(),
            Some("LLM_ORIGIN_NOT_ALLOWED"),
            "{report:#?}"
        );
        assert!(
            models.detail.contains(&format!("OLLAMA_ORIGINS={origin}")),
            "{}",
            models.detail
        );
        for later in ["chat", "stream", "structured", "embeddings"] {
            let c = report.checks.iter().find(|c| c.name == later).unwrap();
            assert_eq!(c.status, CheckStatus::Skipped, "{later}: no retry storm");
        }
        assert!(!report.chat_ok);
        // One preflight, refused: no request body ever reached the server.
        let posts: Vec<_> = t
            .state()
            .requests()
            .into_iter()
            .filter(|r| r["method"] != "OPTIONS")
            .collect();
        assert_eq!(posts.len(), 1, "only the model list GET: {posts:#?}");
        // A real call reports the same error.
        let llm = HttpLlm::new(cors_config(), t).unwrap();
        let e = block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap_err();
        assert_eq!(e.code(), "LLM_ORIGIN_NOT_ALLOWED");
        assert!(e.to_string().contains(&format!("OLLAMA_ORIGINS={origin}")));
    }
    // An allowed origin works on the same path.
    let t = InProcess::new(vec!["http://allowed.example.test".into()])
        .with_origin("http://allowed.example.test");
    let llm = HttpLlm::new(cors_config(), t).unwrap();
    block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap();
    // Distinct from "connection refused" and from 401.
    let down = HttpLlm::new(cors_config(), InProcess::new(vec![]).down()).unwrap();
    assert_eq!(
        code(block_on(down.chat(&ask("x"), None, &Cancel::new()))),
        "LLM_UNREACHABLE"
    );
    let auth = HttpLlm::new(
        openai("http://localhost:11434/fault/auth=k1"),
        InProcess::new(vec![]),
    )
    .unwrap();
    assert_eq!(
        code(block_on(auth.chat(&ask("x"), None, &Cancel::new()))),
        "LLM_AUTH"
    );
}

#[test]
fn f06_the_wiki_is_not_modified_by_a_refused_connection_test() {
    use llm_wiki::storage::memory::MemoryBackend;
    use llm_wiki::storage::OpenOptions;
    let w = block_on(llm_wiki::wiki::Wiki::open(
        &MemoryBackend::new(),
        "f06",
        ManualClock::new(0),
        OpenOptions::default(),
    ))
    .unwrap();
    block_on(w.set_llm_config(cors_config())).unwrap();
    let ops = block_on(w.operations()).unwrap().len();
    let log = block_on(w.log()).unwrap();
    let t = InProcess::new(vec![]).with_origin("https://wiki.example.test");
    let learned = block_on(w.llm_learned()).unwrap();
    let report = block_on(test_connection(
        &block_on(w.llm_config()).unwrap(),
        t,
        learned.clone(),
        &Cancel::new(),
    ));
    assert!(!report.chat_ok);
    block_on(w.save_llm_learned(&learned)).unwrap();
    assert_eq!(block_on(w.operations()).unwrap().len(), ops);
    assert_eq!(block_on(w.log()).unwrap(), log);
}

// ------------------------------------------------------------------ F07

#[test]
fn f07_anthropic_request_shape() {
    let cfg = Config {
        provider: Provider::Anthropic,
        base_url: "https://api.anthropic.com".into(),
        api_key: Some(Secret::new("sk-ant-TEST")),
        model: "claude-3-5-haiku-latest".into(),
        ..Config::default()
    };
    let req = ask("Summarise the source.");
    let http = build_chat_request(&cfg, &req, StructuredMode::Prompt, false).unwrap();
    assert_eq!(http.url, "https://api.anthropic.com/v1/messages");
    assert_eq!(http.method.as_str(), "POST");
    assert_eq!(http.header("x-api-key"), Some("sk-ant-TEST"));
    assert_eq!(http.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(http.header("content-type"), Some("application/json"));
    assert_eq!(
        http.header("anthropic-dangerous-direct-browser-access"),
        Some("true")
    );
    assert_eq!(http.header("authorization"), None);
    let body: Value = serde_json::from_str(http.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["model"], "claude-3-5-haiku-latest");
    assert!(
        body["max_tokens"].as_u64().unwrap() > 0,
        "a positive default max_tokens"
    );
    assert_eq!(body["system"], "You maintain a wiki.");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "Summarise the source."}])
    );
    assert!(!http
        .body
        .as_deref()
        .unwrap()
        .contains("\"role\":\"system\""));

    // End to end against the strict scripted Anthropic emulation, from a browser origin.
    let t = InProcess::new(vec![]).with_origin("https://wiki.example.test");
    let llm = HttpLlm::new(
        Config {
            base_url: "http://scripted.test".into(),
            ..cfg.clone()
        },
        t.clone(),
    )
    .unwrap();
    let r = block_on(llm.chat(&ask("Hello Claude"), None, &Cancel::new())).unwrap();
    assert_eq!(r.text, "You asked: Hello Claude");
    assert!(!r.usage.estimated);

    // The organisation forbids browser access: a configuration error with the provider's
    // message, not retried.
    let t = Canned::new();
    t.json(400, &json!({"type":"error","error":{"type":"invalid_request_error","message":"CORS requests are not allowed for this Organization because of its settings."}}));
    let llm = HttpLlm::new(cfg, t.clone()).unwrap();
    let e = block_on(llm.chat(&req, None, &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_REJECTED");
    let m = e.to_string();
    assert!(
        m.contains("CORS requests are not allowed for this Organization"),
        "{m}"
    );
    assert!(m.contains("browser access"), "{m}");
    assert_eq!(t.requests().len(), 1);
}

// ------------------------------------------------------------------ F08

#[test]
fn f08_base_url_normalisation() {
    let table = [
        (
            "http://localhost:11434",
            "http://localhost:11434/v1/chat/completions",
            "http://localhost:11434/v1/models",
        ),
        (
            "http://localhost:11434/v1/",
            "http://localhost:11434/v1/chat/completions",
            "http://localhost:11434/v1/models",
        ),
        (
            "http://localhost:1234/v1",
            "http://localhost:1234/v1/chat/completions",
            "http://localhost:1234/v1/models",
        ),
        (
            "http://localhost:8000/v1",
            "http://localhost:8000/v1/chat/completions",
            "http://localhost:8000/v1/models",
        ),
        (
            "https://open.bigmodel.cn/api/paas/v4",
            "https://open.bigmodel.cn/api/paas/v4/chat/completions",
            "https://open.bigmodel.cn/api/paas/v4/models",
        ),
        (
            "https://ark.example.test/api/v3",
            "https://ark.example.test/api/v3/chat/completions",
            "https://ark.example.test/api/v3/models",
        ),
        (
            "https://gw.example.test/v1/chat/completions",
            "https://gw.example.test/v1/chat/completions",
            "https://gw.example.test/v1/models",
        ),
        // More shapes users paste.
        (
            "http://localhost:1234/v1/models",
            "http://localhost:1234/v1/chat/completions",
            "http://localhost:1234/v1/models",
        ),
        (
            "http://localhost:1234//v1//",
            "http://localhost:1234/v1/chat/completions",
            "http://localhost:1234/v1/models",
        ),
        (
            "https://api.groq.com/openai",
            "https://api.groq.com/openai/v1/chat/completions",
            "https://api.groq.com/openai/v1/models",
        ),
        (
            "https://gw.example.test/deploy/x/chat/completions",
            "https://gw.example.test/deploy/x/chat/completions",
            "https://gw.example.test/deploy/x/models",
        ),
    ];
    for (entered, chat, models) in table {
        let e = chat_endpoints(Provider::OpenAiCompatible, entered).unwrap();
        assert_eq!(
            (e.chat.as_str(), e.models.as_str()),
            (chat, models),
            "{entered}"
        );
        assert!(!e.chat.contains("/v1/v1") && !e.chat.contains("completions/chat"));
    }
    assert_eq!(
        embeddings_url(EmbeddingProvider::OpenAi, "http://localhost:1234/v1").unwrap(),
        "http://localhost:1234/v1/embeddings"
    );
    // Ollama native, Anthropic, and the embedding shapes, with or without /v1.
    for base in [
        "http://localhost:11434",
        "http://localhost:11434/",
        "http://localhost:11434/v1",
        "http://localhost:11434/api",
        "http://localhost:11434/api/chat",
    ] {
        let e = chat_endpoints(Provider::Ollama, base).unwrap();
        assert_eq!(e.chat, "http://localhost:11434/api/chat", "{base}");
        assert_eq!(e.models, "http://localhost:11434/api/tags");
        assert_eq!(
            embeddings_url(EmbeddingProvider::Ollama, base).unwrap(),
            "http://localhost:11434/api/embed"
        );
        assert_eq!(
            embeddings_url(EmbeddingProvider::OllamaLegacy, base).unwrap(),
            "http://localhost:11434/api/embeddings"
        );
    }
    for base in [
        "https://api.anthropic.com",
        "https://api.anthropic.com/v1",
        "https://api.anthropic.com/v1/messages",
    ] {
        assert_eq!(
            chat_endpoints(Provider::Anthropic, base).unwrap().chat,
            "https://api.anthropic.com/v1/messages"
        );
    }
}

#[test]
fn f08_connection_test_and_real_calls_call_the_same_urls() {
    for base in [
        "http://x/api/paas/v4",
        "http://x/api/paas/v4/chat/completions",
        "http://x/api/paas/v4/",
    ] {
        let t = InProcess::new(vec![]);
        let cfg = openai(base);
        let report = block_on(test_connection(
            &cfg,
            t.clone(),
            Learned::default(),
            &Cancel::new(),
        ));
        assert!(report.chat_ok, "{report:#?}");
        let llm = HttpLlm::new(cfg, t.clone()).unwrap();
        block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap();
        let paths: Vec<String> = t
            .state()
            .requests()
            .iter()
            .map(|r| r["path"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(paths[0], "/api/paas/v4/models");
        assert!(
            paths[1..]
                .iter()
                .all(|p| p == "/api/paas/v4/chat/completions"),
            "{paths:?}"
        );
        assert_eq!(
            report.chat_url.as_deref(),
            Some("http://x/api/paas/v4/chat/completions")
        );
    }
}

// ------------------------------------------------------------------ F09

fn assemble(provider: Provider, reads: &[&[u8]]) -> (String, Option<FinishReason>, String) {
    let mut s = ChatStream::new(provider);
    let mut text = String::new();
    for r in reads {
        text.push_str(&s.feed(r).unwrap().content);
    }
    let (c, tail) = s.finish().unwrap();
    text.push_str(&tail.content);
    assert_eq!(text, c.content, "deltas add up to the completion");
    (
        text,
        c.raw_finish.as_ref().map(|f| f.finish),
        c.raw_finish.map(|f| f.word).unwrap_or_default(),
    )
}

#[test]
fn f09_stream_framing() {
    // a) a frame split mid-string, then [DONE].
    let (t, _, _) = assemble(
        Provider::OpenAiCompatible,
        &[
            br#"data: {"choices":[{"delta":{"content":"Hel"#,
            b"lo\"}}]}\n\n",
            b"data: [DONE]\n\n",
        ],
    );
    assert_eq!(t, "Hello");
    // b) 東京 with the read boundary between the 2nd and 3rd byte of 京 (E4 BA | AC).
    let frame =
        "data: {\"choices\":[{\"delta\":{\"content\":\"東京\"}}]}\n\ndata: [DONE]\n\n".as_bytes();
    let jing = frame
        .windows(3)
        .position(|w| w == [0xE4, 0xBA, 0xAC])
        .unwrap();
    let (t, _, _) = assemble(
        Provider::OpenAiCompatible,
        &[&frame[..jing + 2], &frame[jing + 2..]],
    );
    assert_eq!(t, "東京");
    assert!(!t.contains('\u{FFFD}'));
    // c) comment line, CRLF, no space after `data:`.
    let (t, _, _) = assemble(Provider::OpenAiCompatible, &[
        b": ping\r\n\r\ndata:{\"choices\":[{\"delta\":{\"content\":\"key: value\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n",
    ]);
    assert_eq!(t, "key: value");
    // d) Ollama NDJSON: two objects in one read, the last split inside done_reason.
    let (t, finish, word) = assemble(Provider::Ollama, &[
        b"{\"message\":{\"content\":\"A\"},\"done\":false}\n{\"message\":{\"content\":\"B\"},\"done\":false}\n",
        b"{\"message\":{\"content\":\"\"},\"done\":true,\"done_reason\":\"st",
        b"op\"}\n",
    ]);
    assert_eq!(
        (t.as_str(), finish, word.as_str()),
        ("AB", Some(FinishReason::Stop), "stop")
    );
    // e) one 40 KB delta over 5 reads.
    let big: String = (0..40 * 1024)
        .map(|i| if i % 7 == 0 { '思' } else { 'x' })
        .collect();
    let frame = format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"delta": {"reasoning_content": "", "content": big}}]})
    );
    let bytes = frame.as_bytes();
    let n = bytes.len() / 5 + 1;
    let reads: Vec<&[u8]> = bytes.chunks(n).collect();
    assert_eq!(reads.len(), 5);
    let (t, _, _) = assemble(Provider::OpenAiCompatible, &reads);
    assert_eq!(t, big);
    // No event lost or duplicated: the same bytes fed one byte at a time give the same text.
    let one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(assemble(Provider::OpenAiCompatible, &one_by_one).0, big);
}

#[test]
fn f09_streams_through_the_client_for_every_provider() {
    // The scripted server streams in 3-byte chunks, splitting frames and UTF-8 characters.
    let doc = llm_wiki::llm::prompt::source_block(
        "东京.md",
        "# 东京\n东京是日本的首都，也是世界上人口最多的城市之一。东京有很多人。",
    );
    for (provider, base) in [
        (Provider::OpenAiCompatible, "http://x/fault/chunk=3"),
        (Provider::Ollama, "http://x/fault/chunk=3"),
        (Provider::Anthropic, "http://x/fault/chunk=3"),
    ] {
        let cfg = Config {
            provider,
            base_url: base.into(),
            model: "scripted-chat".into(),
            api_key: Some(Secret::new("k")),
            ..Config::default()
        };
        let llm = HttpLlm::new(cfg, InProcess::new(vec![])).unwrap();
        let shown = RefCell::new(Vec::<String>::new());
        let on_token = |s: &str| shown.borrow_mut().push(s.to_string());
        let r = block_on(llm.chat(
            &ask(&format!("东京是哪个国家的首都？\n{doc}")),
            Some(&on_token),
            &Cancel::new(),
        ))
        .unwrap();
        assert_eq!(
            r.text, "东京是日本的首都，也是世界上人口最多的城市之一。",
            "{provider:?}"
        );
        let pieces = shown.into_inner();
        assert!(pieces.len() > 1, "{provider:?} streamed in pieces");
        assert_eq!(pieces.concat(), r.text);
        assert!(
            !r.usage.estimated,
            "{provider:?} reports usage in the stream"
        );
    }
}

// ------------------------------------------------------------------ F13

#[test]
fn f13_structured_output_falls_back_and_remembers() {
    let schema_req = ask_json("page");
    // LM Studio: json_object refused, json_schema accepted — the first try works.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(
        openai("http://localhost:1234/fault/no-json-object/v1"),
        t.clone(),
    )
    .unwrap();
    let r = block_on(chat_json(&llm, &schema_req, &Cancel::new())).unwrap();
    assert!(r.value["title"].is_string());
    assert_eq!(t.requests_to("chat/completions").len(), 1);
    assert_eq!(
        t.requests_to("chat/completions")[0]["body"]["response_format"]["type"],
        "json_schema"
    );

    // llama-cpp-python: json_schema refused (422) → json_object with the schema; remembered.
    let t = InProcess::new(vec![]);
    let learned = Learned::default();
    let llm = HttpLlm::new(openai("http://x/fault/no-json-schema/v1"), t.clone())
        .unwrap()
        .with_learned(learned.clone());
    block_on(chat_json(&llm, &schema_req, &Cancel::new())).unwrap();
    let sent = t.requests_to("chat/completions");
    assert_eq!(sent.len(), 2, "at most one extra request");
    assert_eq!(
        sent[1]["body"]["response_format"],
        json!({"type": "json_object", "schema": page_schema().schema})
    );
    block_on(chat_json(&llm, &schema_req, &Cancel::new())).unwrap();
    assert_eq!(
        t.requests_to("chat/completions").len(),
        3,
        "the working mode is used directly next time"
    );
    assert_eq!(
        learned.modes().modes.values().copied().collect::<Vec<_>>(),
        [StructuredMode::JsonObject]
    );

    // No response_format at all → prompt only, the schema in the system prompt.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(openai("http://x/fault/no-response-format/v1"), t.clone()).unwrap();
    let r = block_on(chat_json(&llm, &schema_req, &Cancel::new())).unwrap();
    assert!(r.value["title"].is_string());
    let sent = t.requests_to("chat/completions");
    assert_eq!(sent.len(), 3);
    assert!(sent[2]["body"].get("response_format").is_none());
    assert!(sent[2]["body"]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("\"required\":[\"title\"]"));

    // Not a format problem: no fallback.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(
        openai("http://x/fault/status=404,message=model%20not%20found/v1"),
        t.clone(),
    )
    .unwrap();
    assert_eq!(
        code(block_on(chat_json(&llm, &schema_req, &Cancel::new()))),
        "LLM_REJECTED"
    );
    assert_eq!(t.requests_to("chat/completions").len(), 1);
}

#[test]
fn f13_exact_lm_studio_reply_with_canned_transport() {
    // The server refuses json_object; a client starting from a remembered json_object (e.g. a
    // server that changed) moves on to prompt-only with exactly one extra request.
    let t = Canned::new();
    t.json(
        400,
        &json!({"error": "'response_format.type' must be 'json_schema' or 'text'"}),
    );
    t.json(
        200,
        &openai_reply(
            json!({"role": "assistant", "content": "{\"title\": \"Tokio\"}"}),
            "stop",
        ),
    );
    let cfg = openai("http://localhost:1234/v1");
    let learned = Learned::default();
    learned.set(
        &llm_wiki::llm::client::endpoint_key(
            Provider::OpenAiCompatible,
            "http://localhost:1234/v1/chat/completions",
            "scripted-chat",
        ),
        StructuredMode::JsonObject,
    );
    let llm = HttpLlm::new(cfg, t.clone())
        .unwrap()
        .with_learned(learned.clone());
    let r = block_on(chat_json(&llm, &ask_json("page"), &Cancel::new())).unwrap();
    assert_eq!(r.value["title"], "Tokio");
    assert_eq!(t.requests().len(), 2);
    assert!(!t.requests()[1]
        .body
        .as_ref()
        .unwrap()
        .contains("response_format"));
}

// ------------------------------------------------------------------ F14

fn embed_config(provider: EmbeddingProvider, base: &str, model: &str) -> Config {
    Config {
        base_url: base.into(),
        embeddings: EmbeddingConfig {
            provider,
            model: model.into(),
            ..EmbeddingConfig::default()
        },
        ..Config::default()
    }
}

#[test]
fn f14a_openai_vectors_are_matched_by_index() {
    let t = Canned::new();
    t.json(
        200,
        &json!({"object": "list", "data": [
        {"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
        {"object": "embedding", "index": 0, "embedding": [1.0, 0.0]}
    ], "usage": {"prompt_tokens": 2}}),
    );
    let e = HttpEmbedder::new(
        embed_config(EmbeddingProvider::OpenAi, "http://localhost:1234/v1", "m"),
        t.clone(),
    )
    .unwrap();
    let out = block_on(e.embed(&["alpha".into(), "beta".into()], &Cancel::new())).unwrap();
    assert_eq!(out.vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
    assert_eq!(out.usage.input, 2);
    assert_eq!(t.requests()[0].url, "http://localhost:1234/v1/embeddings");
    let body: Value = serde_json::from_str(t.requests()[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(body["input"], json!(["alpha", "beta"]));
}

#[test]
fn f14b_ollama_embed_shape_parses() {
    let t = Canned::new();
    t.json(
        200,
        &json!({"model":"nomic-embed-text","embeddings":[[0.1,0.2],[0.3,0.4]]}),
    );
    let e = HttpEmbedder::new(
        embed_config(
            EmbeddingProvider::Ollama,
            "http://localhost:11434",
            "nomic-embed-text",
        ),
        t.clone(),
    )
    .unwrap();
    let out = block_on(e.embed(&["a".into(), "b".into()], &Cancel::new())).unwrap();
    assert_eq!(out.dimension, 2);
    assert_eq!(t.requests()[0].url, "http://localhost:11434/api/embed");
    // L2-normalised, direction kept.
    let v = &out.vectors[0];
    assert!(
        (v[0] - 0.4472136).abs() < 1e-6 && (v[1] - 0.8944272).abs() < 1e-6,
        "{v:?}"
    );
}

#[test]
fn f14c_legacy_endpoint_gets_prompt_and_an_empty_vector_is_an_error() {
    let t = Canned::new();
    t.json(200, &json!({"embedding": [0.1, 0.2]}));
    t.json(200, &json!({"embedding": []}));
    let e = HttpEmbedder::new(
        embed_config(
            EmbeddingProvider::OllamaLegacy,
            "http://localhost:11434/v1",
            "nomic-embed-text",
        ),
        t.clone(),
    )
    .unwrap();
    block_on(e.embed(&["alpha".into()], &Cancel::new())).unwrap();
    let body: Value = serde_json::from_str(t.requests()[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"model": "nomic-embed-text", "prompt": "alpha"})
    );
    assert_eq!(t.requests()[0].url, "http://localhost:11434/api/embeddings");
    let err = block_on(e.embed(&["beta".into()], &Cancel::new())).unwrap_err();
    assert_eq!(err.code(), "LLM_BAD_RESPONSE");
    assert!(err.to_string().contains("empty vector"), "{err}");
    // Against the scripted server (which answers `input` with [] like real Ollama): works.
    let e = HttpEmbedder::new(
        embed_config(
            EmbeddingProvider::OllamaLegacy,
            "http://x",
            "scripted-embed-32",
        ),
        InProcess::new(vec![]),
    )
    .unwrap();
    let out = block_on(e.embed(&["one".into(), "two".into()], &Cancel::new())).unwrap();
    assert_eq!((out.vectors.len(), out.dimension), (2, 32));
}

#[test]
fn f14d_long_input_is_chunked_and_retried_smaller() {
    let page: String = (0..300)
        .map(|i| format!("Sentence number {i:04} is about embeddings. "))
        .collect::<String>();
    assert!(page.len() >= 12_000);
    let t = InProcess::new(vec![]);
    let mut cfg = embed_config(
        EmbeddingProvider::OpenAi,
        "http://x/fault/ctx=2000/v1",
        "scripted-embed-768",
    );
    cfg.embeddings.max_input_tokens = 8192; // the configured limit is too high for this server
    let e = HttpEmbedder::new(cfg, t.clone()).unwrap();
    let texts = vec!["short one".to_string(), page.clone()];
    let out = block_on(e.embed(&texts, &Cancel::new())).unwrap();
    assert_eq!((out.vectors.len(), out.dimension), (2, 768));
    let sent = t.requests_to("/embeddings");
    assert!(sent.len() >= 2, "first refused, then chunked");
    let last_inputs = sent.last().unwrap()["body"]["input"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        last_inputs.len() >= 3,
        "the page went in several chunks: {}",
        last_inputs.len()
    );
    let est = llm_wiki::text::TokenEstimator::default();
    assert!(last_inputs
        .iter()
        .all(|i| est.estimate(i.as_str().unwrap()) <= 2000));
    assert_eq!(
        last_inputs
            .iter()
            .skip(1)
            .map(|i| i.as_str().unwrap())
            .collect::<String>(),
        page,
        "chunks cover the page"
    );
    // With a correct limit no request is refused.
    let t = InProcess::new(vec![]);
    let mut cfg = embed_config(
        EmbeddingProvider::OpenAi,
        "http://x/fault/ctx=2000/v1",
        "scripted-embed-768",
    );
    cfg.embeddings.max_input_tokens = 2048;
    let e = HttpEmbedder::new(cfg, t.clone()).unwrap();
    block_on(e.embed(&texts, &Cancel::new())).unwrap();
    assert_eq!(t.requests_to("/embeddings").len(), 1);
}

// ------------------------------------------------------------------ retries, errors, cancel

#[test]
fn rate_limits_are_retried_honouring_retry_after_with_a_capped_total_wait() {
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(
        openai("http://x/fault/ratelimit=2,retry-after=3,id=a"),
        t.clone(),
    )
    .unwrap();
    block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap();
    assert_eq!(t.sleeps(), [3000, 3000]);
    assert_eq!(t.requests_to("chat/completions").len(), 3);

    // Never succeeds: gives up after maxAttempts (4), waits summed under the cap.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(
        openai("http://x/fault/ratelimit=99,retry-after=2,id=b"),
        t.clone(),
    )
    .unwrap();
    let e = block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap_err();
    assert_eq!(
        e,
        Error::LlmRateLimited {
            status: 429,
            retry_after_ms: Some(2000),
            attempts: 4,
            message: "Rate limit reached, slow down.".into()
        }
    );
    assert_eq!(t.sleeps(), [2000, 2000, 2000]);

    // A Retry-After beyond the total cap: no sleep at all.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(
        openai("http://x/fault/ratelimit=99,retry-after=600,id=c"),
        t.clone(),
    )
    .unwrap();
    assert_eq!(
        code(block_on(llm.chat(&ask("x"), None, &Cancel::new()))),
        "LLM_RATE_LIMITED"
    );
    assert!(t.sleeps().is_empty());

    // Overload (Anthropic 529) is retried too, with exponential backoff when no Retry-After.
    let t = InProcess::new(vec![]);
    let cfg = Config {
        provider: Provider::Anthropic,
        api_key: Some(Secret::new("k")),
        ..openai("http://x/fault/overloaded=2,id=d")
    };
    let llm = HttpLlm::new(cfg, t.clone()).unwrap();
    block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap();
    assert_eq!(t.sleeps(), [1000, 2000]);
}

#[test]
fn typed_errors_for_html_server_errors_timeouts_and_empty_answers() {
    let t = InProcess::new(vec![]);
    let e = block_on(
        HttpLlm::new(openai("http://x/fault/html"), t)
            .unwrap()
            .chat(&ask("x"), None, &Cancel::new()),
    )
    .unwrap_err();
    assert_eq!(
        e,
        Error::LlmNotAnEndpoint {
            url: "http://x/fault/html/v1/chat/completions".into(),
            status: 200,
            text: "Open WebUI Sign in".into(),
        }
    );
    for (path, message) in [
        (
            "status=500,message=CUDA%20out%20of%20memory",
            "CUDA out of memory",
        ),
        ("status=502,message=upstream%20failed", "upstream failed"),
    ] {
        let llm = HttpLlm::new(
            openai(&format!("http://x/fault/{path}")),
            InProcess::new(vec![]),
        )
        .unwrap();
        let e = block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap_err();
        assert_eq!(e.code(), "LLM_SERVER");
        assert!(e.to_string().contains(message), "{e}");
    }
    let llm = HttpLlm::new(openai("http://x/fault/delay=5000"), InProcess::new(vec![])).unwrap();
    let mut cfg = openai("http://x/fault/delay=5000");
    cfg.timeout_ms = 1000;
    let slow = HttpLlm::new(cfg, InProcess::new(vec![])).unwrap();
    assert_eq!(
        code(block_on(slow.chat(&ask("x"), None, &Cancel::new()))),
        "LLM_TIMEOUT"
    );
    block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap();
    let llm = HttpLlm::new(openai("http://x/fault/empty"), InProcess::new(vec![])).unwrap();
    assert_eq!(
        code(block_on(llm.chat(&ask("x"), None, &Cancel::new()))),
        "LLM_EMPTY_COMPLETION"
    );
    let llm = HttpLlm::new(openai("http://x/fault/bad-body"), InProcess::new(vec![])).unwrap();
    assert_eq!(
        code(block_on(llm.chat(&ask("x"), None, &Cancel::new()))),
        "LLM_BAD_RESPONSE"
    );
    let llm = HttpLlm::new(openai("http://x/fault/ctx=10"), InProcess::new(vec![])).unwrap();
    assert_eq!(
        code(block_on(llm.chat(
            &ask("a long enough question to overflow ten tokens for sure"),
            None,
            &Cancel::new()
        ))),
        "LLM_CONTEXT_OVERFLOW"
    );
    // The local estimate refuses before sending.
    let mut cfg = openai("http://x");
    cfg.context_window = 256;
    cfg.max_output_tokens = 100;
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(cfg, t.clone()).unwrap();
    assert_eq!(
        code(block_on(llm.chat(
            &ask(&"word ".repeat(400)),
            None,
            &Cancel::new()
        ))),
        "LLM_CONTEXT_OVERFLOW"
    );
    assert!(t.state().requests().is_empty());
}

#[test]
fn usage_is_reported_else_estimated_and_marked() {
    let llm = HttpLlm::new(openai("http://x"), InProcess::new(vec![])).unwrap();
    let r = block_on(llm.chat(&ask("机器学习 question"), None, &Cancel::new())).unwrap();
    assert!(!r.usage.estimated);
    assert_eq!(r.usage.calls, 1);
    let llm = HttpLlm::new(openai("http://x/fault/no-usage"), InProcess::new(vec![])).unwrap();
    let r = block_on(llm.chat(&ask("机器学习 question"), None, &Cancel::new())).unwrap();
    assert!(r.usage.estimated);
    let est = llm_wiki::text::TokenEstimator::default();
    assert_eq!(r.usage.output, est.estimate(&r.text));
    assert!(r.usage.input >= est.estimate("机器学习 question"));
}

#[test]
fn cancellation_stops_calls_and_sleeps() {
    let cancel = Cancel::new();
    cancel.cancel();
    let llm = HttpLlm::new(openai("http://x"), InProcess::new(vec![])).unwrap();
    assert_eq!(
        code(block_on(llm.chat(&ask("x"), None, &cancel))),
        "CANCELLED"
    );
    // Cancelled while streaming: the next chunk is not read.
    let cancel = Cancel::new();
    let llm = HttpLlm::new(openai("http://x/fault/chunk=2"), InProcess::new(vec![])).unwrap();
    let seen = std::cell::Cell::new(0);
    let on_token = |_: &str| {
        seen.set(seen.get() + 1);
        cancel.cancel();
    };
    let doc =
        llm_wiki::llm::prompt::source_block("a", "Alpha is a long sentence about many things.");
    assert_eq!(
        code(block_on(llm.chat(
            &ask(&format!("alpha?\n{doc}")),
            Some(&on_token),
            &cancel
        ))),
        "CANCELLED"
    );
    assert_eq!(seen.get(), 1);
    // Listeners run once and are removed with their guard.
    let c = Cancel::new();
    let hits = std::rc::Rc::new(std::cell::Cell::new(0));
    let h = hits.clone();
    let guard = c.on_cancel(move || h.set(h.get() + 1));
    let h2 = hits.clone();
    drop(c.on_cancel(move || h2.set(h2.get() + 10)));
    c.cancel();
    c.cancel();
    drop(guard);
    assert_eq!(hits.get(), 1);
    block_on(c.cancelled());
}

// ------------------------------------------------------------------ secrets and settings

const KEY: &str = "sk-live-SECRETabcdef0123456789";

#[test]
fn the_api_key_never_appears_in_errors_debug_or_records() {
    let mut cfg = openai("http://x/fault/auth=the-right-key");
    cfg.api_key = Some(Secret::new(KEY));
    let llm = HttpLlm::new(cfg.clone(), InProcess::new(vec![])).unwrap();
    let e = block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_AUTH");
    let all = format!("{e} {e:?}");
    assert!(
        !all.contains("SECRET") && !all.contains("6789") && !all.contains("sk-li"),
        "{all}"
    );
    // The server echoed a masked key ("sk-****6789"): scrubbed too.
    assert!(all.contains("***"), "{all}");
    // A key pasted into the base URL's query is scrubbed from every URL in errors.
    let mut cfg2 = openai(&format!("http://x/fault/html?key={KEY}"));
    cfg2.api_key = Some(Secret::new(KEY));
    let e = block_on(HttpLlm::new(cfg2, InProcess::new(vec![])).unwrap().chat(
        &ask("x"),
        None,
        &Cancel::new(),
    ))
    .unwrap_err();
    assert!(!e.to_string().contains("SECRET"), "{e}");
    let debug = format!(
        "{cfg:?} {:?}",
        build_chat_request(&cfg, &ask("x"), StructuredMode::Prompt, false).unwrap()
    );
    assert!(!debug.contains("SECRET"), "{debug}");

    use llm_wiki::storage::memory::MemoryBackend;
    use llm_wiki::storage::{OpenOptions, Storage, Store};
    let w = block_on(llm_wiki::wiki::Wiki::open(
        &MemoryBackend::new(),
        "k",
        ManualClock::new(0),
        OpenOptions::default(),
    ))
    .unwrap();
    block_on(w.set_llm_config(cfg)).unwrap();
    let config_record = block_on(w.storage().get(Store::Meta, "config"))
        .unwrap()
        .unwrap();
    assert!(!String::from_utf8_lossy(&config_record.data).contains("SECRET"));
    assert!(!block_on(w.log()).unwrap().contains("SECRET"));
    for op in block_on(w.operations()).unwrap() {
        assert!(!op.summary.contains("SECRET"));
    }
    let view = serde_json::to_string(&block_on(w.llm_config_view()).unwrap()).unwrap();
    assert!(
        !view.contains("SECRET") && view.contains("\"hasApiKey\":true"),
        "{view}"
    );
    assert_eq!(
        block_on(w.llm_config()).unwrap().api_key.unwrap().expose(),
        KEY
    );
}

#[test]
fn settings_round_trip_and_secret_merging() {
    use llm_wiki::model::OperationKind;
    use llm_wiki::storage::memory::MemoryBackend;
    use llm_wiki::storage::OpenOptions;
    let w = block_on(llm_wiki::wiki::Wiki::open(
        &MemoryBackend::new(),
        "s",
        ManualClock::new(0),
        OpenOptions::default(),
    ))
    .unwrap();
    assert_eq!(
        block_on(w.llm_config()).unwrap().provider,
        Provider::Offline,
        "offline by default"
    );
    let mut cfg = openai("http://localhost:1234/v1");
    cfg.api_key = Some(Secret::new(KEY));
    cfg.headers.insert("X-Title".into(), "llm-wiki".into());
    cfg.headers
        .insert("X-Proxy-Token".into(), "tok-SECRET".into());
    let op = block_on(w.set_llm_config(cfg.clone())).unwrap();
    assert_eq!(op.kind, OperationKind::Settings);
    assert!(
        op.summary
            .contains("openai-compatible scripted-chat at http://localhost:1234"),
        "{}",
        op.summary
    );
    let stored = block_on(w.llm_config()).unwrap();
    assert_eq!(
        stored.secret_headers.get("X-Proxy-Token").unwrap().expose(),
        "tok-SECRET"
    );
    assert_eq!(
        stored.headers.get("X-Title").map(String::as_str),
        Some("llm-wiki")
    );
    // Absent key: kept. Empty key: removed.
    let mut edit = stored.without_secrets();
    edit.model = "other".into();
    block_on(w.set_llm_config(edit.clone())).unwrap();
    let stored = block_on(w.llm_config()).unwrap();
    assert_eq!(
        (
            stored.model.as_str(),
            stored.api_key.as_ref().map(Secret::expose)
        ),
        ("other", Some(KEY))
    );
    assert!(stored.secret_headers.contains_key("X-Proxy-Token"));
    edit.api_key = Some(Secret::new(""));
    block_on(w.set_llm_config(edit)).unwrap();
    assert!(block_on(w.llm_config()).unwrap().api_key.is_none());
    // Invalid settings write nothing.
    let ops = block_on(w.operations()).unwrap().len();
    let bad = Config {
        model: String::new(),
        ..openai("http://x")
    };
    assert_eq!(code(block_on(w.set_llm_config(bad))), "LLM_CONFIG");
    assert_eq!(block_on(w.operations()).unwrap().len(), ops);
    // Learned modes persist.
    let learned = block_on(w.llm_learned()).unwrap();
    learned.set("k", StructuredMode::Prompt);
    block_on(w.save_llm_learned(&learned)).unwrap();
    assert_eq!(
        block_on(w.llm_learned()).unwrap().get("k"),
        Some(StructuredMode::Prompt)
    );
}

// ------------------------------------------------------------------ structured, budget, connection

#[test]
fn one_repair_round_trip_then_a_typed_error() {
    use llm_wiki::scripted::{Fault, ScriptedLlm};
    let doc = llm_wiki::llm::prompt::source_block("t.md", "# Tokio\nTokio is a runtime.");
    let llm = ScriptedLlm::new().fault_on(1, Fault::Malformed);
    let r = block_on(chat_json(&llm, &ask_json(&doc), &Cancel::new())).unwrap();
    assert!(r.repaired);
    assert_eq!(r.value["title"], "Tokio");
    assert_eq!(r.usage.calls, 2);
    let repair = &llm.requests()[1];
    assert_eq!(repair.messages.len(), 3);
    assert!(repair.messages[2].content.contains("could not be used"));
    let llm = ScriptedLlm::new().fault_always(Fault::Malformed);
    let e = block_on(chat_json(&llm, &ask_json(&doc), &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_BAD_OUTPUT");
    assert_eq!(llm.calls(), 2, "exactly one repair");
    // Same over HTTP: the server's `malformed=1` fault breaks only the first reply.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(openai("http://x/fault/malformed=1,id=r"), t.clone()).unwrap();
    let r = block_on(chat_json(&llm, &ask_json(&doc), &Cancel::new())).unwrap();
    assert!(r.repaired);
    assert_eq!(t.requests_to("chat/completions").len(), 2);
}

#[test]
fn the_token_budget_refuses_calls_before_sending() {
    use llm_wiki::scripted::ScriptedLlm;
    let llm = ScriptedLlm::new();
    let b = Budgeted::with_budget(&llm, 200, 100, Default::default());
    block_on(b.chat(&ask("short"), None, &Cancel::new())).unwrap();
    let used = b.usage();
    assert!(used.input > 0 && used.output > 0 && used.calls == 1);
    let e =
        block_on(b.chat(&ask(&"many words here ".repeat(40)), None, &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_BUDGET_EXCEEDED");
    assert_eq!(llm.calls(), 1, "the refused call was not sent");
    let cfg = Config {
        token_budget: 50_000,
        ..openai("http://x")
    };
    assert_eq!(
        Budgeted::new(&llm, &cfg, Purpose::Query).remaining(),
        50_000
    );
}

#[test]
fn connection_test_reports_what_works() {
    let cfg = Config {
        embeddings: EmbeddingConfig {
            provider: EmbeddingProvider::Ollama,
            model: "scripted-embed-768".into(),
            ..EmbeddingConfig::default()
        },
        ..openai("http://localhost:11434")
    };
    let learned = Learned::default();
    let t = InProcess::new(vec![]).with_origin("http://127.0.0.1:8080");
    let r = block_on(test_connection(&cfg, t, learned.clone(), &Cancel::new()));
    assert!(r.chat_ok && r.embeddings_ok, "{r:#?}");
    assert!(
        r.checks.iter().all(|c| c.status == CheckStatus::Ok),
        "{r:#?}"
    );
    assert_eq!(r.model_listed, Some(true));
    assert_eq!(r.structured_mode, Some(StructuredMode::JsonSchema));
    assert_eq!(r.embedding_dimension, Some(768));
    assert_eq!(r.origin.as_deref(), Some("http://127.0.0.1:8080"));
    assert!(r
        .checks
        .iter()
        .find(|c| c.name == "structured")
        .unwrap()
        .detail
        .contains("echo exact"));
    assert_eq!(learned.modes().modes.len(), 1);
    // Every provider's shape, through the same steps.
    for provider in [Provider::Ollama, Provider::Anthropic] {
        let cfg = Config {
            provider,
            api_key: Some(Secret::new("k")),
            ..cfg.clone()
        };
        let r = block_on(test_connection(
            &cfg,
            InProcess::new(vec![]),
            Learned::default(),
            &Cancel::new(),
        ));
        assert!(
            r.checks.iter().all(|c| c.status == CheckStatus::Ok),
            "{provider:?}: {r:#?}"
        );
        let mode = if provider == Provider::Anthropic {
            StructuredMode::Prompt
        } else {
            StructuredMode::JsonSchema
        };
        assert_eq!(r.structured_mode, Some(mode));
    }
    // No model yet (the LM Studio preset): the models are listed, generation is skipped.
    let r = block_on(test_connection(
        &openai("http://localhost:1234/v1").tap_model(""),
        InProcess::new(vec![]),
        Learned::default(),
        &Cancel::new(),
    ));
    assert_eq!(r.checks[0].status, CheckStatus::Ok);
    assert!(r.models.contains(&"scripted-chat".to_string()));
    assert_eq!(r.model_listed, None);
    assert_eq!(r.checks[1].status, CheckStatus::Skipped);
    assert!(r.checks[1].detail.contains("no model is set"));
    // Offline: only the embedding is tested.
    let r = block_on(test_connection(
        &Config::default(),
        InProcess::new(vec![]),
        Learned::default(),
        &Cancel::new(),
    ));
    assert!(!r.chat_ok && r.embeddings_ok);
    assert_eq!(r.embedding_model, "offline-hash-v1");
    // Invalid settings: one failed `config` check.
    let r = block_on(test_connection(
        &openai(""),
        InProcess::new(vec![]),
        Learned::default(),
        &Cancel::new(),
    ));
    assert_eq!(r.checks.len(), 1);
    assert_eq!(r.checks[0].code.as_deref(), Some("LLM_CONFIG"));
}

#[test]
fn ollama_native_sends_the_context_window_and_format() {
    let cfg = Config {
        provider: Provider::Ollama,
        base_url: "http://x".into(),
        model: "scripted-chat".into(),
        context_window: 16_384,
        ..Config::default()
    };
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(cfg, t.clone()).unwrap();
    let r = block_on(chat_json(&llm, &ask_json("page"), &Cancel::new())).unwrap();
    assert!(r.value["title"].is_string());
    let body = &t.requests_to("/api/chat")[0]["body"];
    assert_eq!(body["options"]["num_ctx"], 16_384);
    assert_eq!(body["stream"], false);
    assert_eq!(body["format"], page_schema().schema);
}

// ------------------------------------------------------------------ issue 21: prompts the server cut

/// A config for the scripted server at `base` with a small context window.
fn windowed(base: &str, window: u32) -> Config {
    Config {
        context_window: window,
        max_output_tokens: 200,
        ..openai(base)
    }
}

/// A prompt of about `tokens` estimated tokens (English, 4 characters a token).
fn english_prompt(tokens: usize) -> String {
    "Tokio is an asynchronous runtime for Rust. ".repeat(tokens * 4 / 43)
}

#[test]
fn a_prompt_above_the_window_that_the_server_cut_is_a_context_overflow_and_unused() {
    let est = llm_wiki::text::TokenEstimator::default();
    let prompt = english_prompt(1100);
    let estimate = est.estimate(&prompt);
    assert!((1050..1200).contains(&estimate), "{estimate}");
    // The server keeps the last 600 tokens and answers from them, counting 600.
    for (provider, base, setting) in [
        (
            Provider::OpenAiCompatible,
            "http://127.0.0.1:8000/fault/cut-prompt=600/v1",
            "--ctx-size",
        ),
        (
            Provider::Ollama,
            "http://127.0.0.1:11434/fault/cut-prompt=600",
            "num_ctx",
        ),
        (
            Provider::OpenAiCompatible,
            "http://localhost:11434/fault/cut-prompt=600/v1",
            "OLLAMA_CONTEXT_LENGTH",
        ),
    ] {
        let t = InProcess::new(vec![]);
        let cfg = Config {
            provider,
            ..windowed(base, 1000)
        };
        let llm = HttpLlm::new(cfg, t.clone()).unwrap();
        let tokens = RefCell::new(String::new());
        let on_token = |s: &str| tokens.borrow_mut().push_str(s);
        let e = block_on(llm.chat(&ask_json(&prompt), None, &Cancel::new())).unwrap_err();
        assert_eq!(e.code(), "LLM_CONTEXT_OVERFLOW", "{provider:?}: {e}");
        let text = e.to_string();
        assert!(
            text.contains("contextWindow") && text.contains(setting),
            "{text}"
        );
        assert!(
            text.contains("prompt tokens for a prompt estimated at"),
            "{text}"
        );
        // It was sent (the server's count decided), once: no retry, no other structured mode.
        let path = if provider == Provider::Ollama {
            "api/chat"
        } else {
            "chat/completions"
        };
        assert_eq!(t.requests_to(path).len(), 1, "{provider:?}");
        // Nothing was learned from the cut call (no structured mode remembered for it).
        assert!(llm.learned().modes().modes.is_empty());
        // Streamed: the same error at the end of the stream.
        let e = block_on(llm.chat(&ask(&prompt), Some(&on_token), &Cancel::new())).unwrap_err();
        assert_eq!(
            e.code(),
            "LLM_CONTEXT_OVERFLOW",
            "{provider:?} streamed: {e}"
        );
    }
}

#[test]
fn the_issue_figures_4096_counted_for_about_6000_sent_are_a_context_overflow() {
    let prompt = english_prompt(6000);
    let est = llm_wiki::text::TokenEstimator::default();
    let sent = est.estimate(&prompt) + est.estimate("You maintain a wiki.") + 4;
    let (_, t) = canned_llm(&[]);
    let reply = json!({"id": "x", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Pages from the last part."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 4096, "completion_tokens": 7, "total_tokens": 4103}});
    t.json(200, &reply);
    t.json(200, &reply);
    let llm = HttpLlm::new(windowed("http://localhost:1234/v1", 5000), t.clone()).unwrap();
    let e = block_on(llm.chat(&ask(&prompt), None, &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_CONTEXT_OVERFLOW", "{e}");
    assert!(
        e.to_string().contains(&format!("estimated at {sent}")),
        "{e}"
    );
    // The same count for a prompt that fits the window says nothing: the answer is used.
    let fits = english_prompt(4500);
    let r = block_on(llm.chat(&ask(&fits), None, &Cancel::new())).unwrap();
    assert_eq!(r.text, "Pages from the last part.");
    assert_eq!(r.usage.input, 4096);
}

#[test]
fn a_prompt_the_server_counts_whole_or_a_cjk_prompt_that_fits_is_used() {
    // Above the window, but the server counts 95 % of the estimate: it received it whole.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(
        windowed("http://x/fault/prompt-share=95/v1", 1000),
        t.clone(),
    )
    .unwrap();
    let r = block_on(llm.chat(&ask_json(&english_prompt(1100)), None, &Cancel::new())).unwrap();
    assert!(!r.text.is_empty() && !r.usage.estimated);
    // A Chinese prompt that fits the window, counted at 0.6× the estimate (a CJK vocabulary).
    let chinese = "东京是日本的首都，也是世界上人口最多的城市之一。".repeat(30);
    let est = llm_wiki::text::TokenEstimator::default();
    let estimate = est.estimate(&chinese);
    assert!((600..900).contains(&estimate), "{estimate}");
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(
        windowed("http://x/fault/prompt-share=60/v1", 1000),
        t.clone(),
    )
    .unwrap();
    for request in [ask(&chinese), ask_json(&chinese)] {
        let r = block_on(llm.chat(&request, None, &Cancel::new())).unwrap();
        assert!(!r.text.is_empty());
        assert!(
            r.usage.input * 10 < estimate * 7,
            "{} of {estimate}",
            r.usage.input
        );
    }
    // Far above the window (more than 1.25×): refused before sending, naming the setting.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(windowed("http://x/v1", 1000), t.clone()).unwrap();
    let e = block_on(llm.chat(&ask(&english_prompt(1400)), None, &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_CONTEXT_OVERFLOW");
    assert!(e.to_string().contains("--ctx-size"), "{e}");
    assert!(t.state().requests().is_empty());
}

#[test]
fn a_compile_whose_prompt_the_server_cut_writes_nothing() {
    use llm_wiki::storage::memory::MemoryBackend;
    let backend = MemoryBackend::new();
    let w = common::open(&backend, "cut");
    let mut source = String::from("# Kestrel drone\n\n");
    for i in 0..60 {
        source.push_str(&format!(
            "The Kestrel drone model {i} flies for {} minutes on one battery and carries a camera.\n\n",
            30 + i
        ));
    }
    common::add(&w, "kestrel.md", &source);
    let config = Config {
        context_window: CUT_WINDOW,
        max_output_tokens: 256,
        ..openai("http://127.0.0.1:8000/fault/no-json-schema,cut-prompt=300/v1")
    };
    block_on(w.set_llm_config(config)).unwrap();
    let before = block_on(w.pages()).unwrap();
    let t = InProcess::new(vec![]);
    let r = common::compile_with_settings(&w, t.clone());
    assert!(r.compiled.is_empty(), "{:?}", r.compiled);
    assert_eq!(r.failed.len(), 1, "{:?}", r.failed);
    assert_eq!(r.failed[0].code, "LLM_CONTEXT_OVERFLOW", "{:?}", r.failed);
    assert!(
        !t.requests_to("chat/completions").is_empty(),
        "the prompt was sent and judged by the server's count"
    );
    assert_eq!(block_on(w.pages()).unwrap(), before, "no page written");
}

const CUT_WINDOW: u32 = 1000;

// ------------------------------------------------------------------ issue 21: a web page as the error

#[test]
fn a_proxy_error_page_is_not_an_endpoint_and_quotes_its_visible_text() {
    let page = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>502 Bad Gateway</title>\
        <style>body { font-family: sans-serif; }</style><script>var t = 'hidden';</script></head>\
        <body><!-- cf-ray --><center><h1>502 Bad Gateway</h1></center><hr><center>nginx/1.25.3 &amp; \
        Cloudflare&nbsp;&#8212; Ray&#x20;ID 8f2c</center>\n</body></html>";
    let t = Canned::new();
    t.push(
        502,
        "text/html; charset=UTF-8",
        vec![page.as_bytes().to_vec()],
    );
    let llm = HttpLlm::new(openai("http://localhost:1234/v1"), t).unwrap();
    let e = block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_NOT_AN_ENDPOINT");
    let Error::LlmNotAnEndpoint { status, text, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*status, 502);
    assert_eq!(
        text,
        "502 Bad Gateway 502 Bad Gateway nginx/1.25.3 & Cloudflare — Ray ID 8f2c"
    );
    assert!(e.to_string().contains("nginx/1.25.3"), "{e}");
    assert!(!e.to_string().contains("hidden") && !e.to_string().contains("font-family"));
    // A long page: about the first 200 characters of its text, never its markup; no key leaks.
    let long = format!(
        "<html><body><p>{}</p><p>Bearer sk-SECRET-1234567890</p></body></html>",
        "Das Gateway antwortet nicht. ".repeat(20)
    );
    let t = Canned::new();
    t.push(200, "text/html", vec![long.into_bytes()]);
    let cfg = Config {
        api_key: Some(Secret::new("sk-SECRET-1234567890")),
        ..openai("http://localhost:1234/v1")
    };
    let llm = HttpLlm::new(cfg, t).unwrap();
    let e = block_on(llm.list_models(&Cancel::new())).unwrap_err();
    let Error::LlmNotAnEndpoint { text, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(text.chars().count(), 201, "{text}");
    assert!(text.starts_with("Das Gateway antwortet nicht.") && text.ends_with('…'));
    assert!(!text.contains('<'));
    // A page that shows no text: no quote at all.
    let t = Canned::new();
    t.push(
        404,
        "text/html",
        vec![b"<html><body><script>x()</script></body></html>".to_vec()],
    );
    let llm = HttpLlm::new(openai("http://localhost:1234/v1"), t).unwrap();
    let e = block_on(llm.chat(&ask("x"), None, &Cancel::new())).unwrap_err();
    assert!(
        matches!(&e, Error::LlmNotAnEndpoint { text, .. } if text.is_empty()),
        "{e:?}"
    );
    assert!(!e.to_string().contains("the page says"));
}

// ------------------------------------------------------------------ issue 21: Python-style JSON

#[test]
fn a_single_quoted_python_style_object_is_repaired_locally_without_a_round_trip() {
    use llm_wiki::llm::parse::parse_json;
    let schema = json!({"type": "object", "required": ["title"], "properties": {
        "title": {"type": "string"}, "links": {"type": "array", "items": {"type": "string"}}}});
    let cases: &[(&str, Value)] = &[
        ("{'title': 'Tokio', 'links': ['Rust', 'Futures']}", json!({"title": "Tokio", "links": ["Rust", "Futures"]})),
        // Nested, Python constants, a trailing comma.
        ("{'title': 'Tokio', 'meta': {'stable': True, 'deprecated': False, 'parent': None, 'tags': [{'n': 1}, {'n': 2.5}],},}",
         json!({"title": "Tokio", "meta": {"stable": true, "deprecated": false, "parent": null, "tags": [{"n": 1}, {"n": 2.5}]}})),
        // repr() escapes: \' inside, a double-quoted string holding an apostrophe, " inside '…'.
        (r#"{'title': 'Rust\'s borrow checker', 'alt': "Tom's notes", 'q': 'say "hi"', 'x': '\x41'}"#,
         json!({"title": "Rust's borrow checker", "alt": "Tom's notes", "q": "say \"hi\"", "x": "A"})),
        // CJK, a colon and a comma inside values, after prose and in a fence.
        ("Here is the page:\n```python\n{'title': '东京：首都, 人口', 'links': ['日本']}\n```", json!({"title": "东京：首都, 人口", "links": ["日本"]})),
        ("Sure! {'title': 'Tokio'} Hope it's useful.", json!({"title": "Tokio"})),
    ];
    for (text, want) in cases {
        assert_eq!(parse_json(text, &schema).as_ref(), Ok(want), "{text}");
    }
    // Through the client and chat_json: one call, not repaired by a round trip.
    let (llm, t) = canned_llm(&[openai_reply(
        json!({"role": "assistant", "content": "{'title': 'Tokio', 'links': ['Rust']}"}),
        "stop",
    )]);
    let r = block_on(chat_json(&llm, &ask_json("x"), &Cancel::new())).unwrap();
    assert_eq!(r.value, json!({"title": "Tokio", "links": ["Rust"]}));
    assert!(!r.repaired);
    assert_eq!(t.requests().len(), 1);
}

#[test]
fn an_apostrophe_inside_a_single_quoted_string_goes_back_for_the_round_trip() {
    use llm_wiki::llm::parse::{parse_json, repair_python_literal};
    for ambiguous in [
        "{'title': 'Rust's borrow checker'}",
        "{'title': 'Tokio', 'summary': 'the runtime's scheduler'}",
        "{'title': 'rock 'n' roll'}",
        "['it's', 'fine']",
    ] {
        assert_eq!(repair_python_literal(ambiguous), None, "{ambiguous}");
        assert!(parse_json(ambiguous, &json!({})).is_err(), "{ambiguous}");
    }
    // Not a literal at all: a bare word, unbalanced brackets.
    assert_eq!(repair_python_literal("{'a': undefined}"), None);
    assert_eq!(repair_python_literal("{'a': ['b'}"), None);
    let (llm, t) = canned_llm(&[
        openai_reply(
            json!({"role": "assistant", "content": "{'title': 'Rust's borrow checker'}"}),
            "stop",
        ),
        openai_reply(
            json!({"role": "assistant", "content": "{\"title\": \"Rust's borrow checker\"}"}),
            "stop",
        ),
    ]);
    let r = block_on(chat_json(&llm, &ask_json("x"), &Cancel::new())).unwrap();
    assert!(r.repaired, "the ambiguous reply went back to the model");
    assert_eq!(r.value["title"], "Rust's borrow checker");
    assert_eq!(t.requests().len(), 2);
}

// ------------------------------------------------------------------ issue 21: size caps in schemas

fn links_request(max_tokens: u32) -> ChatRequest {
    ChatRequest {
        json: Some(JsonSchema {
            name: "page".into(),
            schema: json!({"type": "object", "required": ["title", "links"], "additionalProperties": false,
                "properties": {"title": {"type": "string", "description": "One line: the title."},
                               "links": {"type": "array", "items": {"type": "string"}}}}),
        }),
        max_tokens: Some(max_tokens),
        ..ask("# Tokio\nTokio is a runtime for Rust.")
    }
}

#[test]
fn structured_schemas_carry_caps_derived_from_the_output_budget() {
    use llm_wiki::llm::structured::{cap_schema, has_caps, strip_caps};
    let schema = links_request(1).json.unwrap().schema;
    let small = cap_schema(&schema, 512);
    let large = cap_schema(&schema, 4096);
    let cap = |s: &Value, p: &str| s.pointer(p).and_then(Value::as_u64).unwrap();
    for p in [
        "/properties/links/maxItems",
        "/properties/links/items/maxLength",
        "/properties/title/maxLength",
    ] {
        assert!(cap(&small, p) < cap(&large, p), "{p}: {small} vs {large}");
    }
    // The sum of what the caps allow stays within the budget (4 characters a token).
    let links = cap(&small, "/properties/links/maxItems");
    assert!(links * 26 <= 512 * 4, "{small}");
    assert!(
        cap(&small, "/properties/title/maxLength") <= 512 * 4 / 5,
        "a one-line field gets a small share"
    );
    assert!(has_caps(&small) && !has_caps(&strip_caps(&small)));
    assert_eq!(strip_caps(&small), schema);
    // A property merely named like a keyword is not a cap.
    let named = json!({"type": "object", "properties": {"maxLength": {"type": "integer"}}});
    assert!(!has_caps(&named) && strip_caps(&named) == named);
    // chat_json sends the capped schema in every structured mode.
    for (base, pointer) in [
        ("http://x/v1", "/response_format/json_schema/schema"),
        (
            "http://x/fault/no-json-schema/v1",
            "/response_format/schema",
        ),
    ] {
        let t = InProcess::new(vec![]);
        let llm = HttpLlm::new(openai(base), t.clone()).unwrap();
        block_on(chat_json(&llm, &links_request(512), &Cancel::new())).unwrap();
        let sent = t.requests_to("chat/completions").last().unwrap()["body"]
            .pointer(pointer)
            .cloned()
            .unwrap();
        assert_eq!(sent, small, "{base}");
    }
}

#[test]
fn an_endpoint_refusing_cap_keywords_is_sent_the_schema_without_caps_and_it_is_remembered() {
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(openai("http://x/fault/no-caps/v1"), t.clone()).unwrap();
    let r = block_on(chat_json(&llm, &links_request(512), &Cancel::new())).unwrap();
    assert_eq!(r.value["title"].as_str().map(|s| !s.is_empty()), Some(true));
    let sent = t.requests_to("chat/completions");
    assert_eq!(sent.len(), 2, "one refused, one without caps");
    let schema_of = |r: &Value| {
        r["body"]
            .pointer("/response_format/json_schema/schema")
            .cloned()
            .unwrap()
    };
    assert!(llm_wiki::llm::structured::has_caps(&schema_of(&sent[0])));
    assert!(!llm_wiki::llm::structured::has_caps(&schema_of(&sent[1])));
    // The structured mode did not fall back: json_schema worked, without caps.
    assert_eq!(
        llm.learned()
            .get("openai-compatible http://x/fault/no-caps/v1/chat/completions scripted-chat"),
        Some(StructuredMode::JsonSchema)
    );
    assert_eq!(llm.learned().modes().no_caps.len(), 1);
    // Remembered: the next call goes without caps at once.
    block_on(chat_json(&llm, &links_request(512), &Cancel::new())).unwrap();
    let sent = t.requests_to("chat/completions");
    assert_eq!(sent.len(), 3);
    assert!(!llm_wiki::llm::structured::has_caps(&schema_of(&sent[2])));
    // And kept with what the wiki stores (another connection starts without caps too).
    let stored = llm.learned().merged_into(Default::default());
    let again = HttpLlm::new(openai("http://x/fault/no-caps/v1"), t.clone())
        .unwrap()
        .with_learned(Learned::from_modes(stored));
    block_on(chat_json(&again, &links_request(512), &Cancel::new())).unwrap();
    assert_eq!(t.requests_to("chat/completions").len(), 4);
    // The caps are enforced when parsing what the uncapped endpoint wrote: extra items dropped.
    let cap = llm_wiki::llm::structured::cap_schema(&links_request(1).json.unwrap().schema, 64);
    let max = cap
        .pointer("/properties/links/maxItems")
        .and_then(Value::as_u64)
        .unwrap() as usize;
    let many: Vec<String> = (0..max + 5).map(|i| format!("L{i}")).collect();
    let (llm, t) = canned_llm(&[]);
    t.json(400, &json!({"error": {"message": "Invalid schema for response_format 'page': In context=('properties', 'links'), 'maxItems' is not permitted.", "type": "invalid_request_error", "param": "response_format", "code": "invalid_json_schema"}}));
    t.json(200, &openai_reply(json!({"role": "assistant", "content": json!({"title": "Tokio", "links": many}).to_string()}), "stop"));
    let r = block_on(chat_json(&llm, &links_request(64), &Cancel::new())).unwrap();
    assert_eq!(r.value["links"].as_array().unwrap().len(), max);
    assert_eq!(r.value["links"][0], "L0");
}

#[test]
fn the_readme_real_model_recipe_compiles_a_short_source_against_a_model_that_fills_arrays() {
    use llm_wiki::storage::memory::MemoryBackend;
    let llama_cpp = llm_wiki::llm::config::presets()
        .into_iter()
        .find(|p| p.id == "llama-cpp")
        .unwrap()
        .config;
    // llama-cpp-python: json_schema refused, json_object with a schema taken; a small model that,
    // under the grammar, repeats array items until the output limit unless maxItems stops it.
    let base = "http://127.0.0.1:8000/fault/no-json-schema,fill/v1";
    let config = Config {
        base_url: base.into(),
        model: "smollm2".into(),
        context_window: 2048,
        max_output_tokens: 512,
        ..llama_cpp
    };
    // Without caps the fault does what the issue saw: cut at 512 tokens.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(config.clone(), t.clone()).unwrap();
    let e = block_on(llm.chat(&links_request(512), None, &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_TRUNCATED", "{e}");
    let backend = MemoryBackend::new();
    let w = common::open(&backend, "recipe");
    common::add(
        &w,
        "kestrel.md",
        "# Kestrel drone\n\nThe Kestrel is a survey drone built by Acme Robotics.\nIt flies for 42 minutes on one battery.\n\n## Acme Robotics\n\nAcme Robotics sells the Kestrel in Europe and Japan.\nPilots control it with the Kestrel app.\n",
    );
    block_on(w.set_llm_config(config)).unwrap();
    let t = InProcess::new(vec![]);
    let r = common::compile_with_settings(&w, t.clone());
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    assert_eq!(r.compiled.len(), 1);
    let pages = block_on(w.pages()).unwrap();
    assert!(r.compiled[0].claims >= 2, "{r:?}");
    assert!(pages.iter().any(|p| p.key == "Acme Robotics"), "{pages:?}");
    let source_page = pages.iter().find(|p| p.title == "Kestrel drone").unwrap();
    assert!(source_page.bytes > 100, "{source_page:?}");
    // Every structured call went in json_object mode with a capped schema.
    let calls = t.requests_to("chat/completions");
    let structured: Vec<&Value> = calls
        .iter()
        .filter(|c| c["body"].pointer("/response_format/type") == Some(&json!("json_object")))
        .collect();
    assert!(!structured.is_empty());
    for c in structured {
        let schema = c["body"].pointer("/response_format/schema").unwrap();
        assert!(llm_wiki::llm::structured::has_caps(schema), "{schema}");
    }
}

// ------------------------------------------------------------------ F38: reasoning-model parameters

fn gpt5() -> Config {
    let openai = llm_wiki::llm::config::presets()
        .into_iter()
        .find(|p| p.id == "openai")
        .unwrap()
        .config;
    Config {
        model: "gpt-5-mini".into(),
        api_key: Some(Secret::new("sk-TEST-1234567890")),
        ..openai
    }
}

fn body_of(r: &HttpRequest) -> Value {
    serde_json::from_str(r.body.as_deref().unwrap()).unwrap()
}

const F38A: &str = r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#;
const F38B: &str = r#"{"error":{"message":"Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}}"#;
const F38D: &str = r#"{"message":"invalid temperature: only 1 is allowed for this model","type":"invalid_request_error"}"#;

#[test]
fn f38_a_refused_max_tokens_or_temperature_is_corrected_once_and_remembered() {
    let ok = openai_reply(json!({"role": "assistant", "content": "OK"}), "stop");
    let request = ChatRequest {
        temperature: Some(0.2),
        ..ask("Reply OK.")
    };
    // a then b on the same call: one corrected retry each, then the answer.
    let t = Canned::new();
    t.json(400, &serde_json::from_str(F38A).unwrap());
    t.json(400, &serde_json::from_str(F38B).unwrap());
    t.json(200, &ok);
    t.json(200, &ok);
    let llm = HttpLlm::new(gpt5(), t.clone()).unwrap();
    let r = block_on(llm.chat(&request, None, &Cancel::new())).unwrap();
    assert_eq!(r.text, "OK");
    let sent: Vec<Value> = t.requests().iter().map(body_of).collect();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0]["max_tokens"], json!(2048));
    assert_eq!(sent[1]["max_completion_tokens"], json!(2048));
    assert!(sent[1].get("max_tokens").is_none());
    assert!(sent[2].get("temperature").is_none());
    assert_eq!(
        sent[2]["max_completion_tokens"],
        json!(2048),
        "the cap is never dropped"
    );
    // Remembered for this endpoint and model: the next call succeeds first time.
    block_on(llm.chat(&request, None, &Cancel::new())).unwrap();
    let last = body_of(t.requests().last().unwrap());
    assert_eq!(t.requests().len(), 4);
    assert!(last.get("max_tokens").is_none() && last.get("temperature").is_none());
    assert_eq!(last["max_completion_tokens"], json!(2048));
    let stored = llm.learned().merged_into(Default::default());
    assert_eq!(stored.params.len(), 1);
    assert!(llm
        .adjustments(Purpose::Query)
        .contains("max_completion_tokens"));
    // d) another vendor's words, top-level `message`: the temperature goes, the cap stays.
    let t = Canned::new();
    t.json(400, &serde_json::from_str(F38D).unwrap());
    t.json(200, &ok);
    let llm = HttpLlm::new(openai("https://vendor.example.test/v1"), t.clone()).unwrap();
    block_on(llm.chat(&request, None, &Cancel::new())).unwrap();
    let sent: Vec<Value> = t.requests().iter().map(body_of).collect();
    assert_eq!(sent.len(), 2);
    assert!(sent[1].get("temperature").is_none());
    assert_eq!(sent[1]["max_tokens"], json!(2048));
    // A refusal the adjustment does not explain is not retried: LLM_REJECTED after one request.
    let t = Canned::new();
    t.json(400, &serde_json::from_str(F38A).unwrap());
    t.json(400, &serde_json::from_str(F38A).unwrap());
    let llm = HttpLlm::new(gpt5(), t.clone()).unwrap();
    assert_eq!(
        code(block_on(llm.chat(&request, None, &Cancel::new()))),
        "LLM_REJECTED"
    );
    assert_eq!(t.requests().len(), 2, "one corrected retry, no loop");
}

#[test]
fn f38_local_servers_keep_getting_max_tokens_and_the_connection_test_reports_adjustments() {
    // c) every OpenAI-compatible preset sends max_tokens (never only max_completion_tokens).
    for p in llm_wiki::llm::config::presets() {
        if p.config.provider != Provider::OpenAiCompatible {
            continue;
        }
        let cfg = Config {
            model: "m".into(),
            ..p.config.clone()
        };
        let r = build_chat_request(&cfg, &ask("x"), StructuredMode::Prompt, false).unwrap();
        let body = body_of(&r);
        assert_eq!(body["max_tokens"], json!(2048), "{}", p.id);
        assert!(body.get("max_completion_tokens").is_none(), "{}", p.id);
    }
    // A server that ignores max_completion_tokens and stops at 16 tokens without max_tokens.
    let t = InProcess::new(vec![]);
    let cfg = Config {
        max_output_tokens: 300,
        ..openai("http://127.0.0.1:8000/fault/local-caps/v1")
    };
    let llm = HttpLlm::new(cfg, t.clone()).unwrap();
    let doc = llm_wiki::llm::prompt::source_block(
        "t.md",
        &"Tokio is an asynchronous runtime for the Rust programming language. ".repeat(3),
    );
    let r = block_on(llm.chat(
        &ask(&format!("{doc}\nWhat is Tokio?")),
        None,
        &Cancel::new(),
    ))
    .unwrap();
    assert!(
        r.usage.output > 16 && r.usage.output <= 300,
        "{:?}",
        r.usage
    );
    // The connection test against a reasoning model: chat passes, and says what was adjusted.
    let t = InProcess::new(vec![]);
    let cfg = Config {
        model: "gpt-5-mini".into(),
        ..openai("http://x/fault/reasoning-model/v1")
    };
    let report = block_on(test_connection(
        &cfg,
        t.clone(),
        Learned::default(),
        &Cancel::new(),
    ));
    let chat = report.checks.iter().find(|c| c.name == "chat").unwrap();
    assert_eq!(chat.status, CheckStatus::Ok, "{chat:?}");
    assert!(
        chat.detail.contains("max_completion_tokens") && chat.detail.contains("temperature"),
        "{}",
        chat.detail
    );
    for r in t.requests_to("chat/completions") {
        let b = &r["body"];
        assert!(
            b.get("max_tokens").is_some() || b.get("max_completion_tokens").is_some(),
            "{b}"
        );
    }
}

// ------------------------------------------------------------------ F37: stalled and slow streams

/// A chat streaming through `llm`, with what reached `on_token`.
fn stream_chat<T: Transport>(
    llm: &HttpLlm<T>,
    request: &ChatRequest,
    cancel: &Cancel,
) -> (llm_wiki::Result<llm_wiki::llm::ChatResponse>, String) {
    let shown = RefCell::new(String::new());
    let on_token = |s: &str| shown.borrow_mut().push_str(s);
    let r = block_on(llm.chat(request, Some(&on_token), cancel));
    (r, shown.into_inner())
}

#[test]
fn f37_a_stream_that_stalls_fails_after_the_idle_gap_not_a_total_timeout() {
    // a) headers at once, three chunks a second apart, then silence with the connection open.
    let t = InProcess::new(vec![]);
    let cfg = openai("http://x/fault/chunk=200,chunk-delay=1000,stall-after=3/v1");
    assert_eq!((cfg.timeout_ms, cfg.idle_timeout_ms), (120_000, 60_000));
    let llm = HttpLlm::new(cfg, t.clone()).unwrap();
    let start = t.clock().now_ms();
    let (r, shown) = stream_chat(&llm, &ask("What is Tokio?"), &Cancel::new());
    let e = r.unwrap_err();
    assert_eq!(e.code(), "LLM_TIMEOUT", "{e}");
    let waited = t.clock().now_ms() - start;
    assert_eq!(
        waited,
        2_000 + 60_000,
        "two gaps of 1 s, then the 60 s idle timeout"
    );
    assert!(e.to_string().contains("60000 ms"), "{e}");
    assert!(
        !shown.is_empty(),
        "the partial answer was shown, and is not returned"
    );
    assert_eq!(t.requests_to("chat/completions").len(), 1, "not resent");
    // The idle gap is configurable.
    let t = InProcess::new(vec![]);
    let cfg = Config {
        idle_timeout_ms: 5_000,
        ..openai("http://x/fault/chunk=200,chunk-delay=1000,stall-after=3/v1")
    };
    let llm = HttpLlm::new(cfg, t.clone()).unwrap();
    let start = t.clock().now_ms();
    assert_eq!(
        code(stream_chat(&llm, &ask("What is Tokio?"), &Cancel::new()).0),
        "LLM_TIMEOUT"
    );
    assert_eq!(t.clock().now_ms() - start, 2_000 + 5_000);
}

#[test]
fn f37_a_stream_slow_to_start_on_a_long_prompt_succeeds_and_is_never_cut_while_producing() {
    // b) first delta at 240 s, then a chunk every 200 ms: a 3,000-token prompt may take that long.
    let doc = llm_wiki::llm::prompt::source_block(
        "tokio.md",
        &"Tokio is an asynchronous runtime for the Rust programming language. ".repeat(175),
    );
    let long = ask(&format!("{doc}\nWhat is Tokio?"));
    let est = llm_wiki::text::TokenEstimator::default();
    assert!(llm_wiki::llm::provider::estimate_input(&long, &est) >= 2_900);
    let base = "http://x/fault/first-byte=240000,chunk-delay=200,chunk=40/v1";
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(openai(base), t.clone()).unwrap();
    let start = t.clock().now_ms();
    let (r, shown) = stream_chat(&llm, &long, &Cancel::new());
    let r = r.unwrap();
    assert_eq!(r.finish, FinishReason::Stop);
    assert_eq!(shown, r.text);
    let took = t.clock().now_ms() - start;
    // Far past timeoutMs (120 s) in all: no total timeout cuts a stream that is producing.
    assert!(took > 240_000 + 5_000, "{took}");
    // The same wait before a short prompt's first byte is a stall: timeoutMs, then LLM_TIMEOUT.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(openai(base), t.clone()).unwrap();
    let start = t.clock().now_ms();
    let (r, _) = stream_chat(&llm, &ask("What is Tokio?"), &Cancel::new());
    assert_eq!(code(r), "LLM_TIMEOUT");
    let waited = t.clock().now_ms() - start;
    assert!((120_000..130_000).contains(&waited), "{waited}");
    // c) a non-streaming body at 170 s: LLM_TIMEOUT naming timeoutMs, sent once.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(openai("http://x/fault/first-byte=170000/v1"), t.clone()).unwrap();
    let e = block_on(llm.chat(&ask("What is Tokio?"), None, &Cancel::new())).unwrap_err();
    assert_eq!(e.code(), "LLM_TIMEOUT");
    assert!(e.to_string().contains("timeoutMs"), "{e}");
    assert_eq!(t.requests_to("chat/completions").len(), 1);
    // d) the caller aborts mid-stream: CANCELLED at once, no further chunk read.
    let t = InProcess::new(vec![]);
    let llm = HttpLlm::new(openai(base), t.clone()).unwrap();
    let cancel = Cancel::new();
    let c = cancel.clone();
    let at = RefCell::new(None);
    let on_token = |_: &str| {
        at.borrow_mut().get_or_insert(t.clock().now_ms());
        c.cancel();
    };
    let e = block_on(llm.chat(&long, Some(&on_token), &cancel)).unwrap_err();
    assert_eq!(e.code(), "CANCELLED");
    assert!(t.clock().now_ms() - at.borrow().unwrap() < 1_000);
}
