//! Reply shapes per provider: one [`Reply`] written as an OpenAI chat completion or SSE stream,
//! an Ollama message or NDJSON stream, or an Anthropic message or event stream. Streams split
//! the text into pieces of 12 characters.

use serde_json::{json, Value};

/// Why the reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Finish {
    Stop,
    Length,
}

/// One chat reply, before it is written in a provider's shape.
pub(super) struct Reply {
    /// The model named in the request.
    pub(super) model: String,
    /// The answer text.
    pub(super) content: String,
    /// Reasoning text (`reasoning_content` / `thinking`), empty for none.
    pub(super) reasoning: String,
    /// Why it ended.
    pub(super) finish: Finish,
    /// `(prompt, completion)` tokens, `None` for no usage in the response.
    pub(super) usage: Option<(u64, u64)>,
}

/// Splits `s` into pieces of at most `n` characters.
fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

impl Reply {
    fn openai_finish(&self) -> &'static str {
        match self.finish {
            Finish::Stop => "stop",
            Finish::Length => "length",
        }
    }

    pub(super) fn openai(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": self.content});
        if !self.reasoning.is_empty() {
            message["reasoning_content"] = json!(self.reasoning);
        }
        let mut v = json!({
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.openai_finish()}],
        });
        if let Some((p, c)) = self.usage {
            v["usage"] = json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c});
        }
        v
    }

    pub(super) fn openai_stream(&self, include_usage: bool) -> Vec<u8> {
        let mut out = String::new();
        let frame = |v: Value| format!("data: {v}\n\n");
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": self.model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        out.push_str(": scripted stream\n\n");
        out.push_str(&frame(chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )));
        for p in pieces(&self.reasoning, 12) {
            out.push_str(&frame(chunk(json!({"reasoning_content": p}), Value::Null)));
        }
        for p in pieces(&self.content, 12) {
            out.push_str(&frame(chunk(json!({"content": p}), Value::Null)));
        }
        out.push_str(&frame(chunk(json!({}), json!(self.openai_finish()))));
        if let (true, Some((p, c))) = (include_usage, self.usage) {
            out.push_str(&frame(json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "model": self.model, "choices": [],
                "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}})));
        }
        out.push_str("data: [DONE]\n\n");
        out.into_bytes()
    }

    fn ollama_reason(&self) -> &'static str {
        match self.finish {
            Finish::Stop => "stop",
            Finish::Length => "length",
        }
    }

    pub(super) fn ollama(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": self.content});
        if !self.reasoning.is_empty() {
            message["thinking"] = json!(self.reasoning);
        }
        let mut v = json!({"model": self.model, "created_at": "2026-01-01T00:00:00Z", "message": message,
                           "done": true, "done_reason": self.ollama_reason()});
        if let Some((p, c)) = self.usage {
            v["prompt_eval_count"] = json!(p);
            v["eval_count"] = json!(c);
        }
        v
    }

    pub(super) fn ollama_stream(&self) -> Vec<u8> {
        let mut out = String::new();
        for p in pieces(&self.reasoning, 12) {
            out.push_str(&format!("{}\n", json!({"model": self.model, "message": {"role": "assistant", "content": "", "thinking": p}, "done": false})));
        }
        for p in pieces(&self.content, 12) {
            out.push_str(&format!("{}\n", json!({"model": self.model, "message": {"role": "assistant", "content": p}, "done": false})));
        }
        let mut last = json!({"model": self.model, "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": self.ollama_reason()});
        if let Some((p, c)) = self.usage {
            last["prompt_eval_count"] = json!(p);
            last["eval_count"] = json!(c);
        }
        out.push_str(&format!("{last}\n"));
        out.into_bytes()
    }

    fn anthropic_stop(&self) -> &'static str {
        match self.finish {
            Finish::Stop => "end_turn",
            Finish::Length => "max_tokens",
        }
    }

    pub(super) fn anthropic(&self) -> Value {
        let mut content = vec![];
        if !self.reasoning.is_empty() {
            content.push(json!({"type": "thinking", "thinking": self.reasoning}));
        }
        content.push(json!({"type": "text", "text": self.content}));
        let mut v = json!({"id": "msg_scripted", "type": "message", "role": "assistant", "model": self.model,
                           "content": content, "stop_reason": self.anthropic_stop()});
        if let Some((p, c)) = self.usage {
            v["usage"] = json!({"input_tokens": p, "output_tokens": c});
        }
        v
    }

    pub(super) fn anthropic_stream(&self) -> Vec<u8> {
        let mut out = String::new();
        let mut ev = |name: &str, v: Value| out.push_str(&format!("event: {name}\ndata: {v}\n\n"));
        let (p, c) = self.usage.unwrap_or((0, 0));
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message", "role": "assistant", "model": self.model, "content": [], "usage": {"input_tokens": p, "output_tokens": 1}}}),
        );
        let mut index = 0;
        if !self.reasoning.is_empty() {
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}}),
            );
            for piece in pieces(&self.reasoning, 12) {
                ev(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}}),
                );
            }
            ev(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            );
            index += 1;
        }
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        );
        ev("ping", json!({"type": "ping"}));
        for piece in pieces(&self.content, 12) {
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
            );
        }
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": self.anthropic_stop()}, "usage": {"output_tokens": c}}),
        );
        ev("message_stop", json!({"type": "message_stop"}));
        out.into_bytes()
    }
}
