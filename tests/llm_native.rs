//! LLM endpoints natively: field cases F01, F02, F03, F06, F07, F08, F09, F13, F14 with their exact
//! inputs, plus retries, errors, cancellation, secrets, settings and the connection test.
//!
//! Two transports: `Canned` replays responses byte for byte (the field cases' mock provider), and
//! `InProcess` runs the scripted endpoint in-process (replies derived from the request).
#![cfg(not(target_arch = "wasm32"))]

use std::cell::RefCell;
use std::collections::VecDeque;

use futures::executor::block_on;
use llm_wiki::clock::{Clock, ManualClock, Millis};
use llm_wiki::llm::client::{HttpEmbedder, HttpLlm, Learned};
use llm_wiki::llm::config::{Config, EmbeddingConfig, EmbeddingProvider, Provider, Secret};
use llm_wiki::llm::connection::{test_connection, CheckStatus};
use llm_wiki::llm::provider::{build_chat_request, StructuredMode};
use llm_wiki::llm::scripted::server::InProcess;
use llm_wiki::llm::stream::ChatStream;
use llm_wiki::llm::structured::{chat_json, Budgeted};
use llm_wiki::llm::transport::{ChunkedBody, HttpRequest, HttpResponse, Transport};
use llm_wiki::llm::url::{chat_endpoints, embeddings_url};
use llm_wiki::llm::{
    Cancel, ChatRequest, Embedder, FinishReason, JsonSchema, Llm, Message, Purpose, Role,
};
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
        _timeout_ms: u64,
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
        messages: vec![Message {
            role: Role::User,
            content: user.into(),
        }],
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
            status: 200
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
    use llm_wiki::llm::scripted::{Fault, ScriptedLlm};
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
    use llm_wiki::llm::scripted::ScriptedLlm;
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
