//! The JSON shapes of the `.llm-wiki/` files: one value, an array with one record per line, an
//! object with one `"key": record` per line, and the wording of their parse errors.
//!
//! *Invariant:* the same records always give the same bytes (the stores' compact serializer,
//! keys in order).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::records::to_json;

/// One JSON value and a newline (compact: the same serializer the stores use, so no second,
/// pretty-printing copy of every `Serialize` impl lands in the wasm).
pub fn json_one<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = to_json(v);
    out.push(b'\n');
    out
}

/// A JSON array with one record per line (readable, and diffs record by record).
pub fn json_array<T: Serialize>(items: &[T]) -> Vec<u8> {
    let mut out = b"[".to_vec();
    for (i, item) in items.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
        out.extend(to_json(item));
    }
    out.extend_from_slice(if items.is_empty() { b"]\n" } else { b"\n]\n" });
    out
}

/// The error of a `.llm-wiki/` JSON file, worded as when the file was parsed into a `Value` first
/// and converted second: a syntax error names the path and its position, a shape error
/// `shape_name` and no position.
pub fn vault_json_error(path: &str, shape_name: &str, e: &serde_json::Error) -> Error {
    let message = if e.is_data() {
        let full = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        let detail = full.strip_suffix(&position).unwrap_or(&full);
        format!("{shape_name}: {detail}")
    } else {
        format!("{path}: {e}")
    };
    Error::InvalidInput(format!("vault: {message}"))
}

/// A JSON object with one `"key": record` per line, in key order.
pub fn json_map(map: &BTreeMap<String, Value>) -> Vec<u8> {
    let mut out = b"{".to_vec();
    for (i, (k, v)) in map.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
        out.extend(to_json(k));
        out.extend_from_slice(b": ");
        out.extend(to_json(v));
    }
    out.extend_from_slice(if map.is_empty() { b"}\n" } else { b"\n}\n" });
    out
}
