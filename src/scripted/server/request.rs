//! Provider request bodies read back: an OpenAI, Ollama or Anthropic chat body parsed into the
//! [`ChatRequest`] it was made from, with the structured-output mode and schema it asked for.

use serde_json::{json, Value};

use super::routes::Route;
use crate::llm::provider::StructuredMode;
use crate::llm::{picture_type, ChatRequest, Image, JsonSchema, Message, Purpose, Role};

/// The text of a message `content`: a string, or the `text` of its parts joined.
fn content_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The pictures of a message as any of the three providers sends them: OpenAI-compatible
/// `image_url` parts with a `data:` URL, Anthropic `image` blocks with a base64 source, Ollama's
/// `images` list (its MIME type read from the picture's magic bytes). Remote URLs are
/// not fetched: they are skipped.
pub(super) fn images_of(m: &Value) -> Vec<Image> {
    let mut out = Vec::new();
    if let Some(parts) = m.get("content").and_then(Value::as_array) {
        for p in parts {
            match p.get("type").and_then(Value::as_str) {
                Some("image_url") => {
                    let url = p
                        .pointer("/image_url/url")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    if let Some((mime, data)) = url
                        .strip_prefix("data:")
                        .and_then(|u| u.split_once(";base64,"))
                    {
                        out.push(Image {
                            mime: mime.to_string(),
                            base64: data.to_string(),
                        });
                    }
                }
                Some("image") => {
                    let field = |f: &str| {
                        p.pointer(&format!("/source/{f}"))
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string()
                    };
                    out.push(Image {
                        mime: field("media_type"),
                        base64: field("data"),
                    });
                }
                _ => {}
            }
        }
    }
    for data in m
        .get("images")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        use base64::Engine;
        let data = data.as_str().unwrap_or("").to_string();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.as_bytes())
            .unwrap_or_default();
        out.push(Image {
            mime: picture_type(&bytes)
                .unwrap_or("application/octet-stream")
                .to_string(),
            base64: data,
        });
    }
    out
}

/// Reads the task name and schema from the structured-output instruction in a system prompt
/// (see [`provider::structured_instruction`](crate::llm::provider::structured_instruction)).
pub fn instruction_schema(system: &str) -> Option<JsonSchema> {
    let marker = "for the task \"";
    let start = system.find(marker)? + marker.len();
    let end = start + system[start..].find('"')?;
    let name = system[start..end].to_string();
    let schema = system[end..]
        .find(":\n")
        .and_then(|i| {
            let text = &system[end + i + 2..];
            serde_json::Deserializer::from_str(text)
                .into_iter::<Value>()
                .next()
                .and_then(|r| r.ok())
        })
        .unwrap_or_else(|| json!({}));
    Some(JsonSchema { name, schema })
}

/// The structured-output mode of a request as sent, if any.
pub(super) fn requested_mode(r: Route, body: &Value) -> Option<StructuredMode> {
    match r {
        Route::OpenAiChat => match body
            .pointer("/response_format/type")
            .and_then(Value::as_str)
        {
            Some("json_schema") => Some(StructuredMode::JsonSchema),
            Some("json_object") => Some(StructuredMode::JsonObject),
            _ => None,
        },
        Route::OllamaChat => match body.get("format") {
            Some(Value::Object(_)) => Some(StructuredMode::JsonSchema),
            Some(Value::String(s)) if s == "json" => Some(StructuredMode::JsonObject),
            _ => None,
        },
        _ => None,
    }
}

/// Parses a provider request body back into a [`ChatRequest`] (and whether it asked to stream).
pub(super) fn to_chat_request(
    r: Route,
    body: &Value,
) -> std::result::Result<(ChatRequest, bool), String> {
    let mut system = String::new();
    let mut messages = Vec::new();
    if r == Route::AnthropicMessages {
        system = content_of(body.get("system").unwrap_or(&Value::Null));
    }
    let list = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("messages: Field required")?;
    for m in list {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let content = content_of(m.get("content").unwrap_or(&Value::Null));
        match role {
            "system" | "developer" if r != Route::AnthropicMessages => {
                if !system.is_empty() {
                    system.push('\n');
                }
                system.push_str(&content);
            }
            "user" => messages.push(Message {
                role: Role::User,
                content,
                images: images_of(m),
            }),
            "assistant" => messages.push(Message::assistant(content)),
            other => {
                return Err(format!(
                    "messages: Unexpected role \"{other}\". Use a top-level `system` parameter for system prompts."
                ))
            }
        }
    }
    let json = match r {
        Route::OpenAiChat => match body
            .pointer("/response_format/type")
            .and_then(Value::as_str)
        {
            Some("json_schema") => {
                body.pointer("/response_format/json_schema")
                    .map(|j| JsonSchema {
                        name: j
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        schema: j.get("schema").cloned().unwrap_or(json!({})),
                    })
            }
            Some("json_object") => instruction_schema(&system).map(|mut j| {
                if let Some(s) = body.pointer("/response_format/schema") {
                    j.schema = s.clone();
                }
                j
            }),
            _ => instruction_schema(&system),
        },
        Route::OllamaChat => match body.get("format") {
            Some(s @ Value::Object(_)) => instruction_schema(&system).map(|mut j| {
                j.schema = s.clone();
                j
            }),
            _ => instruction_schema(&system),
        },
        _ => instruction_schema(&system),
    };
    let max_tokens = body
        .get("max_tokens")
        .or_else(|| body.get("max_completion_tokens"))
        .or_else(|| body.pointer("/options/num_predict"))
        .and_then(Value::as_u64)
        .map(|n| n.min(u64::from(u32::MAX)) as u32);
    let stream = match r {
        // Ollama's native API streams unless told not to.
        Route::OllamaChat => body.get("stream").and_then(Value::as_bool) != Some(false),
        _ => body.get("stream").and_then(Value::as_bool) == Some(true),
    };
    Ok((
        ChatRequest {
            purpose: Purpose::Query,
            system,
            messages,
            json,
            max_tokens,
            temperature: body
                .get("temperature")
                .and_then(Value::as_f64)
                .map(|t| t as f32),
        },
        stream,
    ))
}
