//! All conversions between Rust and JavaScript values (style: automerge `interop.rs`, loro
//! `convert.rs`): errors into real JS `Error`s with a stable `code`, serde values in and out.

use js_sys::Reflect;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tsify::{Ts, Tsify};
use wasm_bindgen::JsValue;

use crate::error::Error;

/// Name of every error llm-wiki throws to JavaScript.
pub const ERROR_NAME: &str = "LlmWikiError";

/// Converts an [`Error`] into a JS `Error` with `name = "LlmWikiError"`, `message`, and `code` (the
/// stable [`Error::code`]).
pub fn error_to_js(e: &Error) -> JsValue {
    let err = js_sys::Error::new(&e.to_string());
    err.set_name(ERROR_NAME);
    let _ = Reflect::set(
        &err,
        &JsValue::from_str("code"),
        &JsValue::from_str(e.code()),
    );
    if let Error::QuotaExceeded { usage, quota } = e {
        for (name, value) in [("usage", usage), ("quota", quota)] {
            if let Some(n) = value {
                let _ = Reflect::set(&err, &name.into(), &JsValue::from_f64(*n as f64));
            }
        }
    }
    err.into()
}

/// A JS `Error` for input that JavaScript passed in the wrong shape.
pub fn bad_input(what: &str, detail: impl std::fmt::Display) -> JsValue {
    error_to_js(&Error::InvalidInput(format!("{what}: {detail}")))
}

/// Deserialises a `Ts<T>` argument, or throws `INVALID_INPUT` naming the argument.
pub fn ts_to_rust<T: Tsify + DeserializeOwned>(what: &str, v: Ts<T>) -> Result<T, JsValue> {
    serde_wasm_bindgen::from_value(v.js_value()).map_err(|e| bad_input(what, e))
}

/// Deserialises a JS value through `JSON.stringify` and serde_json, for large nested inputs whose
/// serde_json deserializer the wasm already has (the LLM `Config` is stored as JSON): a second,
/// `serde_wasm_bindgen` instantiation of the same types would only add size. `undefined` fields
/// are left out, as absent. Throws `INVALID_INPUT` naming the argument.
pub fn json_to_rust<T: DeserializeOwned>(what: &str, v: &JsValue) -> Result<T, JsValue> {
    let text: String = js_sys::JSON::stringify(v)
        .map_err(|_| bad_input(what, "not JSON-serialisable"))?
        .into();
    serde_json::from_slice(text.as_bytes()).map_err(|e| bad_input(what, e))
}

/// Deserialises an optional options bag: `undefined` or `null` give `T::default()`, anything
/// else must have `T`'s shape or throws `INVALID_INPUT` naming the argument.
pub fn js_to_rust_or_default<T: DeserializeOwned + Default>(
    what: &str,
    v: JsValue,
) -> Result<T, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(T::default());
    }
    serde_wasm_bindgen::from_value(v).map_err(|e| bad_input(what, e))
}

/// Serialises a value for JavaScript: plain objects (not `Map`s), `undefined` for `None`.
pub fn to_js<T: Serialize + ?Sized>(v: &T) -> Result<JsValue, JsValue> {
    let ser = serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true);
    v.serialize(&ser)
        .map_err(|e| error_to_js(&Error::Storage(format!("serialise: {e}"))))
}

/// `Result<T, Error>` into `Result<JsValue, JsValue>` through [`to_js`].
pub fn result_to_js<T: Serialize>(r: crate::Result<T>) -> Result<JsValue, JsValue> {
    match r {
        Ok(v) => to_js(&v),
        Err(e) => Err(error_to_js(&e)),
    }
}

/// Bytes as a JS `Uint8Array` (copied out of wasm memory).
pub fn bytes_to_js(bytes: &[u8]) -> JsValue {
    js_sys::Uint8Array::from(bytes).into()
}
