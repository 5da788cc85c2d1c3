//! Lenient parsing of a model's structured output (field cases F01, F02), and validation against
//! the expected shape.
//!
//! [`parse_json`] tries, in this order, and stops at the first candidate that parses *and*
//! validates against the schema:
//! 1. strict parse of the trimmed text;
//! 2. strip a fence that encloses the whole text (```` ``` ````, ```` ```json ````, any case,
//!    CRLF, trailing spaces) — a fence is unwrapped only when it encloses everything, so fences
//!    inside JSON strings are never touched;
//! 3. drop reasoning: `<think>…</think>` blocks, and everything before a lone `</think>` (the
//!    opening tag was in the chat template), then step 2 again;
//! 4. take the first JSON object or array that parses after any prose (e.g. `Here you go:` and a
//!    fence);
//! 5. repair trailing commas (`,}` / `,]` outside strings) in each of the above.
//!
//! Brackets are never closed automatically: a truncated reply is a separate error, detected from
//! the finish reason before parsing (F03).

use serde_json::Value;

/// Why structured output could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseFailure {
    /// What went wrong, for the repair prompt and the error message (e.g.
    /// `$.links[0]: expected string, found number`).
    pub message: String,
}

/// Removes reasoning from a model's answer: every `<think>…</think>` block, and — when a
/// `</think>` appears with no opening tag before it — everything up to that closing tag. An
/// unclosed `<think>` drops the rest of the text (it was all reasoning).
pub fn strip_reasoning(text: &str) -> String {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    let mut t = text;
    // A lone closing tag: the opening one was part of the prompt template.
    if let Some(close) = t.find(CLOSE) {
        let open = t.find(OPEN);
        if open.is_none_or(|o| o > close) {
            t = &t[close + CLOSE.len()..];
        }
    }
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while let Some(open) = rest.find(OPEN) {
        out.push_str(&rest[..open]);
        match rest[open..].find(CLOSE) {
            Some(close) => rest = &rest[open + close + CLOSE.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Unwraps a markdown code fence that encloses the whole (trimmed) text: an opening line of three
/// or more backticks or tildes with an optional info string (`json`, `JSON`, `js`…), and a closing
/// line of the same fence. Returns `None` when the text is not one enclosing fence.
pub fn strip_enclosing_fence(text: &str) -> Option<&str> {
    let t = text.trim();
    let fence_char = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let fence_len = t.chars().take_while(|c| *c == fence_char).count();
    if fence_len < 3 {
        return None;
    }
    let first_line_end = t.find('\n')?;
    let info = t[fence_len..first_line_end].trim();
    if info.contains(fence_char) || info.contains(char::is_whitespace) {
        return None;
    }
    let body_and_close = &t[first_line_end + 1..];
    let close_start = body_and_close.rfind('\n').map_or(0, |i| i + 1);
    let close = body_and_close[close_start..].trim();
    if close.len() < fence_len || !close.chars().all(|c| c == fence_char) {
        return None;
    }
    let body = &body_and_close[..close_start];
    Some(body.trim_end_matches(['\n', '\r']))
}

/// Removes commas that directly precede `}` or `]` (whitespace between allowed), outside strings.
pub fn repair_trailing_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if c == '"' {
            in_string = true;
        } else if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Repairs a Python-style literal (what `repr()` of a dict prints, and what small models write)
/// starting at the `{` or `[` that opens `text` into JSON: single-quoted strings become
/// double-quoted (`\'` unescaped, `"` escaped, `\xNN` → `\u00NN`), `True` / `False` / `None`
/// outside strings become `true` / `false` / `null`, and trailing commas go. Double-quoted
/// strings are kept as they are, so `{'title': "Rust's borrow checker"}` repairs too. Stops after
/// the value that `text` opens; what follows is dropped.
///
/// Returns `None` when the repair is ambiguous or the text is no such literal: a `'` inside a
/// single-quoted string that is not followed by `,` `:` `}` `]` or the end (`'Rust's borrow
/// checker'`: an apostrophe or the end of the string?), unbalanced brackets, or a bare word other
/// than those three. Such a reply goes back to the model for the repair round trip.
pub fn repair_python_literal(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    if !matches!(chars.first(), Some('{') | Some('[')) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut stack: Vec<char> = Vec::new();
    let mut i = 0;
    let structural =
        |c: Option<&char>| matches!(c, None | Some(',') | Some(':') | Some('}') | Some(']'));
    while i < chars.len() {
        let c = chars[i];
        match c {
            '{' | '[' => {
                stack.push(if c == '{' { '}' } else { ']' });
                out.push(c);
            }
            '}' | ']' => {
                if stack.pop() != Some(c) {
                    return None;
                }
                out.push(c);
                if stack.is_empty() {
                    return Some(repair_trailing_commas(&out));
                }
            }
            '"' => {
                // A JSON string: copied as it is, escapes included.
                out.push('"');
                i += 1;
                loop {
                    let d = *chars.get(i)?;
                    out.push(d);
                    if d == '\\' {
                        out.push(*chars.get(i + 1)?);
                        i += 2;
                        continue;
                    }
                    if d == '"' {
                        break;
                    }
                    i += 1;
                }
            }
            '\'' => {
                out.push('"');
                i += 1;
                loop {
                    let d = *chars.get(i)?;
                    match d {
                        '\\' => {
                            let e = *chars.get(i + 1)?;
                            match e {
                                '\'' => out.push('\''),
                                'x' => {
                                    let hex: String = chars.get(i + 2..i + 4)?.iter().collect();
                                    u8::from_str_radix(&hex, 16).ok()?;
                                    out.push_str("\\u00");
                                    out.push_str(&hex);
                                    i += 2;
                                }
                                _ => {
                                    out.push('\\');
                                    out.push(e);
                                }
                            }
                            i += 2;
                        }
                        '"' => {
                            out.push_str("\\\"");
                            i += 1;
                        }
                        '\n' | '\r' | '\t' => {
                            out.push_str(match d {
                                '\n' => "\\n",
                                '\r' => "\\r",
                                _ => "\\t",
                            });
                            i += 1;
                        }
                        '\'' => {
                            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
                            if !structural(next) {
                                return None;
                            }
                            out.push('"');
                            break;
                        }
                        _ => {
                            out.push(d);
                            i += 1;
                        }
                    }
                }
            }
            c if c.is_ascii_alphabetic() => {
                let word: String = chars[i..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                    .collect();
                let json = match word.as_str() {
                    "True" | "true" => "true",
                    "False" | "false" => "false",
                    "None" | "null" => "null",
                    _ => return None,
                };
                out.push_str(json);
                i += word.len();
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    None
}

/// The JSON values that start at a `{` or `[` in `text` and parse (trailing text ignored), in
/// order of position.
fn embedded_values(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.char_indices()
        .filter(|(_, c)| *c == '{' || *c == '[')
        // Bounded: a long reply full of brackets must not cost quadratic time.
        .take(256)
        .filter_map(move |(i, _)| {
            let mut it =
                serde_json::Deserializer::from_slice(&text.as_bytes()[i..]).into_iter::<Value>();
            match it.next() {
                Some(Ok(v)) if v.is_object() || v.is_array() => Some(v),
                _ => None,
            }
        })
}

/// Parses a model's answer as one JSON value matching `schema` (a JSON Schema subset, see
/// [`validate`]), leniently, in the order described in the module docs. Arrays longer than
/// their `maxItems` keep their first items first ([`crate::llm::structured::enforce_caps`]).
///
/// Errors: a [`ParseFailure`] saying why the last candidate failed (the first validation error
/// when something parsed, else the strict parser's error).
pub fn parse_json(text: &str, schema: &Value) -> Result<Value, ParseFailure> {
    let mut first_invalid: Option<String> = None;
    let try_value = |mut v: Value, first_invalid: &mut Option<String>| -> Option<Value> {
        crate::llm::structured::enforce_caps(&mut v, schema);
        match validate(&v, schema) {
            Ok(()) => Some(v),
            Err(e) => {
                first_invalid.get_or_insert(e);
                None
            }
        }
    };
    let mut candidates: Vec<String> = Vec::new();
    let trimmed = text.trim();
    candidates.push(trimmed.to_string());
    if let Some(inner) = strip_enclosing_fence(trimmed) {
        candidates.push(inner.to_string());
    }
    let no_reasoning = strip_reasoning(trimmed);
    let no_reasoning = no_reasoning.trim();
    if no_reasoning != trimmed {
        candidates.push(no_reasoning.to_string());
        if let Some(inner) = strip_enclosing_fence(no_reasoning) {
            candidates.push(inner.to_string());
        }
    }
    let strict_error = serde_json::from_slice::<Value>(trimmed.as_bytes())
        .err()
        .map(|e| e.to_string());
    for c in &candidates {
        if let Ok(v) = serde_json::from_slice::<Value>(c.as_bytes()) {
            if let Some(v) = try_value(v, &mut first_invalid) {
                return Ok(v);
            }
        }
    }
    // After prose: the first embedded value that validates (within the reasoning-free text).
    for v in embedded_values(no_reasoning) {
        if let Some(v) = try_value(v, &mut first_invalid) {
            return Ok(v);
        }
    }
    // Trailing commas, in every candidate and after prose.
    let repaired: Vec<String> = candidates
        .iter()
        .map(|c| repair_trailing_commas(c))
        .collect();
    for c in &repaired {
        if let Ok(v) = serde_json::from_slice::<Value>(c.as_bytes()) {
            if let Some(v) = try_value(v, &mut first_invalid) {
                return Ok(v);
            }
        }
    }
    let repaired_text = repair_trailing_commas(no_reasoning);
    for v in embedded_values(&repaired_text) {
        if let Some(v) = try_value(v, &mut first_invalid) {
            return Ok(v);
        }
    }
    // A Python-style literal (`{'title': 'Tokio', 'ok': True}`), repaired only when unambiguous,
    // as a whole candidate or after prose (from each `{` / `[`, bounded like `embedded_values`).
    let python = candidates
        .iter()
        .map(|c| c.trim_start())
        .chain(
            no_reasoning
                .char_indices()
                .filter(|(_, c)| *c == '{' || *c == '[')
                .take(256)
                .map(|(i, _)| &no_reasoning[i..]),
        )
        .filter(|c| c.contains('\''));
    for c in python {
        if let Some(v) = repair_python_literal(c)
            .and_then(|r| serde_json::from_slice::<Value>(r.as_bytes()).ok())
        {
            if let Some(v) = try_value(v, &mut first_invalid) {
                return Ok(v);
            }
        }
    }
    let message = match (first_invalid, strict_error) {
        (Some(invalid), _) => format!("the JSON does not match the expected shape: {invalid}"),
        (None, Some(e)) if no_reasoning.is_empty() => {
            format!("no JSON in the reply (only reasoning or nothing): {e}")
        }
        (None, Some(e)) => format!("no JSON value could be parsed from the reply: {e}"),
        (None, None) => "no JSON value could be parsed from the reply".into(),
    };
    Err(ParseFailure { message })
}

/// Validates `value` against `schema`, a JSON Schema subset: `type` (a name or a list), `enum`,
/// `const`, `properties`, `required`, `additionalProperties: false`, `items`, `minItems`,
/// `maxItems`, `minLength`, `maxLength`, `anyOf`/`oneOf` (any branch), `minimum`/`maximum`. Other keywords
/// are ignored (accepted). `true`/`{}` accept everything.
///
/// Errors: the first violation, with its path (`$.related[1]: expected string, found number`).
pub fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    validate_at(value, schema, "$")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(v: &Value, t: &str) -> bool {
    let actual = type_name(v);
    actual == t
        || (t == "number" && actual == "integer")
        || (t == "integer" && v.as_f64().is_some_and(|f| f.fract() == 0.0))
}

fn validate_at(v: &Value, schema: &Value, path: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return if schema == &Value::Bool(false) {
            Err(format!("{path}: no value is allowed here"))
        } else {
            Ok(())
        };
    };
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !types.is_empty() && !types.iter().any(|t| type_matches(v, t)) {
            return Err(format!(
                "{path}: expected {}, found {}",
                types.join(" or "),
                type_name(v)
            ));
        }
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        if !options.contains(v) {
            return Err(format!(
                "{path}: {v} is not one of {}",
                Value::Array(options.clone())
            ));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Err(format!("{path}: expected {c}"));
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = s.get(key).and_then(Value::as_array) {
            if !branches.is_empty() && !branches.iter().any(|b| validate_at(v, b, path).is_ok()) {
                return Err(format!("{path}: matches none of the {key} alternatives"));
            }
        }
    }
    match v {
        Value::Object(map) => {
            if let Some(required) = s.get("required").and_then(Value::as_array) {
                for r in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(r) {
                        return Err(format!("{path}: missing required field {r:?}"));
                    }
                }
            }
            let props = s.get("properties").and_then(Value::as_object);
            for (k, child) in map {
                let child_path = format!("{path}.{k}");
                match props.and_then(|p| p.get(k)) {
                    Some(sub) => validate_at(child, sub, &child_path)?,
                    None => match s.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            return Err(format!("{path}: unexpected field {k:?}"))
                        }
                        Some(sub @ Value::Object(_)) => validate_at(child, sub, &child_path)?,
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
                if (items.len() as u64) < min {
                    return Err(format!(
                        "{path}: expected at least {min} items, found {}",
                        items.len()
                    ));
                }
            }
            if let Some(max) = s.get("maxItems").and_then(Value::as_u64) {
                if (items.len() as u64) > max {
                    return Err(format!(
                        "{path}: expected at most {max} items, found {}",
                        items.len()
                    ));
                }
            }
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate_at(item, item_schema, &format!("{path}[{i}]"))?;
                }
            }
        }
        Value::String(text) => {
            if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
                if (text.chars().count() as u64) < min {
                    return Err(format!("{path}: expected at least {min} characters"));
                }
            }
            if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
                let n = text.chars().count() as u64;
                if n > max {
                    return Err(format!(
                        "{path}: expected at most {max} characters, found {n}: shorten it"
                    ));
                }
            }
        }
        Value::Number(n) => {
            // Numbers are shown through serde_json (not `{f64}`, which links core's float
            // formatting into the wasm for one message).
            let f = n.as_f64().unwrap_or(0.0);
            if let Some(min) = s
                .get("minimum")
                .filter(|m| m.as_f64().is_some_and(|m| f < m))
            {
                return Err(format!("{path}: {n} is below the minimum {min}"));
            }
            if let Some(max) = s
                .get("maximum")
                .filter(|m| m.as_f64().is_some_and(|m| f > m))
            {
                return Err(format!("{path}: {n} is above the maximum {max}"));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fences() {
        assert_eq!(strip_enclosing_fence("```json\n{}\n```"), Some("{}"));
        assert_eq!(strip_enclosing_fence("~~~\n[1]\n~~~"), Some("[1]"));
        assert_eq!(
            strip_enclosing_fence("````md\na\n```\nb\n````"),
            Some("a\n```\nb")
        );
        assert_eq!(strip_enclosing_fence("text ```json\n{}\n```"), None);
        assert_eq!(strip_enclosing_fence("```json\n{}\n``` and more"), None);
        assert_eq!(strip_enclosing_fence("```\n{}"), None);
    }

    #[test]
    fn trailing_commas_outside_strings_only() {
        assert_eq!(
            repair_trailing_commas(r#"{"a": [1, 2, ], "b": ",}", }"#),
            r#"{"a": [1, 2 ], "b": ",}" }"#
        );
    }

    #[test]
    fn reasoning_variants() {
        assert_eq!(strip_reasoning("<think>x</think>y"), "y");
        assert_eq!(strip_reasoning("a</think>b"), "b");
        assert_eq!(
            strip_reasoning("a<think>b</think>c<think>d</think>e"),
            "ace"
        );
        assert_eq!(strip_reasoning("answer <think>unfinished"), "answer ");
        assert_eq!(strip_reasoning("no tags"), "no tags");
    }

    #[test]
    fn validation_paths() {
        let schema = json!({
            "type": "object",
            "required": ["title", "related"],
            "properties": {
                "title": {"type": "string", "minLength": 1},
                "related": {"type": "array", "items": {"type": "string"}},
                "kind": {"enum": ["entity", "concept"]}
            },
            "additionalProperties": false
        });
        assert_eq!(
            validate(&json!({"title": "T", "related": []}), &schema),
            Ok(())
        );
        assert_eq!(
            validate(&json!({"title": "T", "related": ["a", 2]}), &schema),
            Err("$.related[1]: expected string, found integer".into())
        );
        assert_eq!(
            validate(&json!({"title": "T"}), &schema),
            Err("$: missing required field \"related\"".into())
        );
        assert!(validate(&json!({"title": "T", "related": [], "x": 1}), &schema).is_err());
        assert!(validate(
            &json!({"title": "T", "related": [], "kind": "person"}),
            &schema
        )
        .is_err());
        assert_eq!(validate(&json!(3), &json!({"type": "number"})), Ok(()));
        assert_eq!(validate(&json!(3.0), &json!({"type": "integer"})), Ok(()));
    }

    #[test]
    fn prefers_a_value_that_validates() {
        let schema = json!({"type": "object", "required": ["title"]});
        let text = "Options: {\"draft\": true} or rather {\"title\": \"Tokio\"}";
        assert_eq!(parse_json(text, &schema), Ok(json!({"title": "Tokio"})));
    }

    #[test]
    fn never_closes_brackets() {
        let e = parse_json(r#"{"title":"Tokio","related":["Rust""#, &json!({})).unwrap_err();
        assert!(e.message.contains("no JSON value"), "{}", e.message);
    }
}
