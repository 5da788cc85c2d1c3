//! Streaming decoders (field case F09): byte-level, fed one network read at a time.
//!
//! * [`SseDecoder`]: Server-Sent Events (WHATWG HTML §9.2.6): lines end in LF, CRLF or CR;
//!   `:` starts a comment; `data:` with or without the space; several `data` lines join with LF;
//!   an event is dispatched on a blank line (and, leniently, at the end of the stream).
//! * [`NdjsonDecoder`]: one JSON value per line (Ollama's native stream); one read may hold
//!   several lines, and a line may span reads.
//! * [`ChatStream`]: turns the events of one provider into answer deltas and, at the end, a
//!   [`Completion`](crate::llm::provider::Completion).
//! * [`ThinkFilter`]: removes `<think>…</think>` from streamed deltas, tags split across deltas
//!   included (F02e).
//!
//! *Invariant:* bytes are only decoded as UTF-8 once a whole line is buffered. Lines are split at
//! ASCII bytes, which never occur inside a multi-byte UTF-8 sequence, so a character split across
//! reads (`E4 BA ⟂ AC`) is never replaced by U+FFFD.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::llm::config::Provider;
use crate::llm::errors::stream_error;
use crate::llm::provider::{self, Completion, RawFinish};

/// Splits a byte stream into lines (LF, CRLF or CR), keeping partial lines between reads.
#[derive(Debug, Default)]
struct LineSplitter {
    buf: Vec<u8>,
    /// Bytes of `buf` already scanned for a line end.
    scanned: usize,
    /// The last line ended in CR: skip an LF that starts the next read.
    skip_lf: bool,
}

impl LineSplitter {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<String>) {
        let mut bytes = bytes;
        if self.skip_lf && !bytes.is_empty() {
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
            self.skip_lf = false;
        }
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        let mut i = self.scanned;
        while i < self.buf.len() {
            match self.buf[i] {
                b'\n' => {
                    out.push(String::from_utf8_lossy(&self.buf[start..i]).into_owned());
                    start = i + 1;
                }
                b'\r' => {
                    out.push(String::from_utf8_lossy(&self.buf[start..i]).into_owned());
                    if i + 1 < self.buf.len() {
                        if self.buf[i + 1] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.skip_lf = true;
                    }
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        self.buf.drain(..start);
        self.scanned = self.buf.len();
    }

    fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.buf);
        self.scanned = 0;
        (!rest.is_empty()).then(|| String::from_utf8_lossy(&rest).into_owned())
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if any (Anthropic names its events; OpenAI does not).
    pub event: Option<String>,
    /// The `data` lines joined with LF.
    pub data: String,
}

/// Decodes Server-Sent Events from arbitrary byte chunks.
#[derive(Debug, Default)]
pub struct SseDecoder {
    lines: LineSplitter,
    event: Option<String>,
    data: Option<String>,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        SseDecoder::default()
    }

    /// Feeds one read; returns the events completed by it.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut lines = Vec::new();
        self.lines.feed(bytes, &mut lines);
        let mut out = Vec::new();
        for line in lines {
            self.line(&line, &mut out);
        }
        out
    }

    /// Ends the stream: a last line without a line end, and an event without its blank line, are
    /// still delivered.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        if let Some(line) = self.lines.finish() {
            self.line(&line, &mut out);
        }
        self.dispatch(&mut out);
        out
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if let Some(data) = self.data.take() {
            out.push(SseEvent { event, data });
        }
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return; // comment (keep-alive ping)
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            "event" => self.event = Some(value.to_string()),
            _ => {} // id, retry and unknown fields are ignored
        }
    }
}

/// Decodes newline-delimited JSON from arbitrary byte chunks into lines (blank lines skipped).
#[derive(Debug, Default)]
pub struct NdjsonDecoder {
    lines: LineSplitter,
}

impl NdjsonDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        NdjsonDecoder::default()
    }

    /// Feeds one read; returns the complete, non-blank lines in it.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        self.lines.feed(bytes, &mut lines);
        lines.retain(|l| !l.trim().is_empty());
        lines
    }

    /// Ends the stream: a last line without a line end is still delivered.
    pub fn finish(&mut self) -> Vec<String> {
        self.lines
            .finish()
            .filter(|l| !l.trim().is_empty())
            .into_iter()
            .collect()
    }
}

/// Assembles one streamed chat completion of any provider.
#[derive(Debug)]
pub struct ChatStream {
    provider: Provider,
    sse: SseDecoder,
    ndjson: NdjsonDecoder,
    completion: Completion,
    done: bool,
    saw_event: bool,
}

/// Text that arrived in one read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Deltas {
    /// Answer text (may still contain `<think>` tags; see [`ThinkFilter`]).
    pub content: String,
    /// Reasoning text from a separate channel (`reasoning_content`, `thinking`).
    pub reasoning: String,
}

impl ChatStream {
    /// A stream of `provider`'s shape: SSE for OpenAI-compatible and Anthropic, NDJSON for Ollama.
    pub fn new(provider: Provider) -> Self {
        ChatStream {
            provider,
            sse: SseDecoder::new(),
            ndjson: NdjsonDecoder::new(),
            completion: Completion::default(),
            done: false,
            saw_event: false,
        }
    }

    /// True once the stream said it is complete (`[DONE]`, `message_stop`, `done: true`).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds one read. Errors: an error object inside the stream (classified like an HTTP error
    /// body), or a frame that is not JSON ([`Error::LlmBadResponse`]).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Deltas> {
        let mut d = Deltas::default();
        match self.provider {
            Provider::Ollama => {
                for line in self.ndjson.feed(bytes) {
                    self.ollama_line(&line, &mut d)?;
                }
            }
            _ => {
                for ev in self.sse.feed(bytes) {
                    self.sse_event(ev, &mut d)?;
                }
            }
        }
        Ok(d)
    }

    /// Ends the stream and returns what was assembled. A stream that ended without its end marker
    /// and without a finish reason is reported as [`Error::LlmBadResponse`] (connection cut).
    pub fn finish(mut self) -> Result<(Completion, Deltas)> {
        let mut d = Deltas::default();
        match self.provider {
            Provider::Ollama => {
                for line in self.ndjson.finish() {
                    self.ollama_line(&line, &mut d)?;
                }
            }
            _ => {
                for ev in self.sse.finish() {
                    self.sse_event(ev, &mut d)?;
                }
            }
        }
        if !self.saw_event {
            return Err(Error::LlmBadResponse(
                "the stream ended without any event (is this a streaming endpoint?)".into(),
            ));
        }
        if !self.done && self.completion.raw_finish.is_none() {
            return Err(Error::LlmBadResponse(
                "the stream ended before the completion finished (connection cut?)".into(),
            ));
        }
        Ok((self.completion, d))
    }

    fn push(&mut self, d: &mut Deltas, content: Option<&str>, reasoning: Option<&str>) {
        if let Some(c) = content {
            self.completion.content.push_str(c);
            d.content.push_str(c);
        }
        if let Some(r) = reasoning {
            self.completion.reasoning.push_str(r);
            d.reasoning.push_str(r);
        }
    }

    fn sse_event(&mut self, ev: SseEvent, d: &mut Deltas) -> Result<()> {
        self.saw_event = true;
        let data = ev.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let v: Value = serde_json::from_slice(data.as_bytes()).map_err(|e| {
            Error::LlmBadResponse(format!(
                "a stream event is not JSON ({e}): {}",
                snippet(data)
            ))
        })?;
        if ev.event.as_deref() == Some("error") || v.get("error").is_some_and(|e| !e.is_null()) {
            return Err(stream_error(&v));
        }
        match self.provider {
            Provider::Anthropic => self.anthropic_event(ev.event.as_deref(), &v, d),
            _ => self.openai_chunk(&v, d),
        }
        Ok(())
    }

    fn openai_chunk(&mut self, v: &Value, d: &mut Deltas) {
        if let Some(m) = v.get("model").and_then(Value::as_str) {
            self.completion.model = m.to_string();
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.completion.usage = provider::openai_usage(u).or(self.completion.usage);
        }
        if let Some(choice) = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        {
            let delta = choice.get("delta").or_else(|| choice.get("message"));
            if let Some(delta) = delta {
                let content = delta.get("content").and_then(Value::as_str);
                let reasoning = delta
                    .get("reasoning_content")
                    .or_else(|| delta.get("reasoning"))
                    .and_then(Value::as_str);
                self.push(d, content, reasoning);
            }
            if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
                self.completion.raw_finish = Some(RawFinish::from_openai(f));
            }
        }
    }

    fn anthropic_event(&mut self, event: Option<&str>, v: &Value, d: &mut Deltas) {
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .or(event)
            .unwrap_or("");
        match kind {
            "message_start" => {
                let m = &v["message"];
                if let Some(model) = m.get("model").and_then(Value::as_str) {
                    self.completion.model = model.to_string();
                }
                if let Some(i) = m.pointer("/usage/input_tokens").and_then(Value::as_u64) {
                    let out = self.completion.usage.map_or(0, |u| u.1);
                    self.completion.usage = Some((i, out));
                }
            }
            "content_block_delta" => {
                let delta = &v["delta"];
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        self.push(d, delta.get("text").and_then(Value::as_str), None)
                    }
                    Some("thinking_delta") => {
                        self.push(d, None, delta.get("thinking").and_then(Value::as_str))
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.completion.raw_finish = Some(RawFinish::from_anthropic(r));
                }
                if let Some(o) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    let input = self.completion.usage.map_or(0, |u| u.0);
                    self.completion.usage = Some((input, o));
                }
            }
            "message_stop" => self.done = true,
            _ => {} // ping, content_block_start/stop
        }
    }

    fn ollama_line(&mut self, line: &str, d: &mut Deltas) -> Result<()> {
        self.saw_event = true;
        let v: Value = serde_json::from_slice(line.trim().as_bytes()).map_err(|e| {
            Error::LlmBadResponse(format!(
                "a stream line is not JSON ({e}): {}",
                snippet(line)
            ))
        })?;
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return Err(stream_error(&v));
        }
        if let Some(m) = v.get("model").and_then(Value::as_str) {
            self.completion.model = m.to_string();
        }
        let msg = &v["message"];
        self.push(
            d,
            msg.get("content").and_then(Value::as_str),
            msg.get("thinking").and_then(Value::as_str),
        );
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            self.done = true;
            let reason = v
                .get("done_reason")
                .and_then(Value::as_str)
                .unwrap_or("stop");
            self.completion.raw_finish = Some(RawFinish::from_ollama(reason));
            self.completion.usage = provider::ollama_usage(&v);
        }
        Ok(())
    }
}

/// Removes `<think>…</think>` blocks from streamed deltas, with tags split across deltas. Text
/// inside a block is dropped; text that might be the start of a tag is held back until the next
/// delta decides.
///
/// Limitation: when the model omits the *opening* tag (its chat template inserted it), the
/// reasoning before a lone `</think>` has already been streamed by the time the closing tag shows
/// it was reasoning. The final [`ChatResponse::text`](crate::llm::ChatResponse) is always computed
/// from the whole text with [`crate::llm::parse::strip_reasoning`], which handles that case.
#[derive(Debug, Default)]
pub struct ThinkFilter {
    inside: bool,
    pending: String,
    /// Just left a block: drop whitespace before the answer starts.
    after_block: bool,
}

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

impl ThinkFilter {
    /// A filter outside any block.
    pub fn new() -> Self {
        ThinkFilter::default()
    }

    /// Feeds one delta; returns the text to show.
    pub fn feed(&mut self, delta: &str) -> String {
        self.pending.push_str(delta);
        let mut out = String::new();
        loop {
            let tag = if self.inside { CLOSE } else { OPEN };
            if let Some(i) = self.pending.find(tag) {
                let before: String = self.pending[..i].to_string();
                if !self.inside {
                    self.emit(&before, &mut out);
                }
                self.pending.drain(..i + tag.len());
                self.inside = !self.inside;
                if !self.inside {
                    self.after_block = true;
                }
                continue;
            }
            // Keep back a suffix that could be the start of `tag`.
            let keep = (1..tag.len())
                .rev()
                .find(|&n| self.pending.ends_with(&tag[..n]))
                .unwrap_or(0);
            let cut = self.pending.len() - keep;
            let text: String = self.pending[..cut].to_string();
            self.pending.drain(..cut);
            if !self.inside {
                self.emit(&text, &mut out);
            }
            return out;
        }
    }

    /// Ends the stream: a held-back partial tag outside a block is text after all.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        let mut out = String::new();
        if !self.inside {
            self.emit(&rest, &mut out);
        }
        out
    }

    fn emit(&mut self, text: &str, out: &mut String) {
        let text = if self.after_block {
            let t = text.trim_start();
            if !t.is_empty() {
                self.after_block = false;
            }
            t
        } else {
            text
        };
        out.push_str(text);
    }
}

fn snippet(s: &str) -> String {
    let mut t: String = s.chars().take(120).collect();
    if t.len() < s.len() {
        t.push('…');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.feed(c));
        }
        out.extend(d.finish());
        out
    }

    #[test]
    fn sse_multiline_data_and_fields() {
        let ev = sse_all(&[b"event: x\ndata: a\ndata:b\nid: 3\nretry: 10\n\n"]);
        assert_eq!(
            ev,
            vec![SseEvent {
                event: Some("x".into()),
                data: "a\nb".into()
            }]
        );
        // CR alone ends lines; a CR at the end of a read followed by LF in the next is one end.
        let ev = sse_all(&[b"data: 1\r", b"\ndata: 2\r\r", b"data: 3"]);
        assert_eq!(
            ev.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(),
            ["1\n2", "3"]
        );
    }

    #[test]
    fn think_filter_plain_text_passes() {
        let mut f = ThinkFilter::new();
        let mut s = f.feed("a <b> c <");
        s += &f.feed("thin");
        s += &f.feed("g");
        s += &f.finish();
        assert_eq!(s, "a <b> c <thing");
    }
}
