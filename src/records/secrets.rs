//! Secret stripping: what of a meta record may leave this device (a vault export, an undo
//! record). The settings go through their type ([`crate::llm::config::Config`], which never
//! serialises a credential); any other record loses every field named like a credential, at any
//! depth ([`strip_secrets`]).
//!
//! *Invariant:* a record that passed [`portable_meta_value`] holds no API key, token, password,
//! secret or sensitive header, whatever build wrote it.

use serde_json::Value;

use super::MetaRecord;

/// A meta record as it may leave this device (vault export, undo records): the settings
/// (`meta/config`) through their type — [`crate::llm::config::Config`], normalised, never
/// serialises its credentials (API keys, secret headers) and defaults any field the record lacks, so every
/// setting survives, `charsPerToken` included; any other record through [`strip_secrets`].
pub(crate) fn portable_meta_value(key: &str, v: &mut Value) {
    if MetaRecord::of(key) == MetaRecord::Config {
        if let Ok(mut c) = serde_json::from_value::<crate::llm::config::Config>(v.clone()) {
            // A record written by hand or an older build may hold a secret header among the
            // plain ones: normalising files it with the secrets, which never serialise.
            c.normalize();
            if let Ok(typed) = serde_json::to_value(c.without_secrets()) {
                *v = typed;
                return;
            }
        }
    }
    strip_secrets(v);
}

/// Names that hold a credential when a field ends with them (lower-cased without `-` and `_`):
/// never a name that merely contains a word like "token" (`charsPerToken`, `maxOutputTokens`).
const CREDENTIAL_NAMES: &[&str] = &[
    "apikey",
    "secret",
    "password",
    "passwd",
    "authorization",
    "bearer",
    "cookie",
    "accesstoken",
    "authtoken",
    "apitoken",
    "bearertoken",
    "refreshtoken",
    "sessiontoken",
    "idtoken",
    "csrftoken",
];

/// Removes fields that could hold a credential, at any depth, from a record that has no type
/// saying which fields do (the settings have one: [`portable_meta_value`]): names that,
/// lower-cased without `-` and `_`, are `token` or end with one of [`CREDENTIAL_NAMES`]
/// (`apiKey`, `clientSecret`, `accessToken`, …); and, inside an object named `headers` (or `…headers`),
/// every header [`crate::llm::config::is_sensitive_header`] calls sensitive — the rule
/// `Config::normalize` files secret headers by, so a header an older build stored among the plain
/// ones (`Cookie`, `X-Auth`, …) does not leave either.
pub fn strip_secrets(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let folded = |k: &str| -> String {
                k.chars()
                    .filter(|c| !matches!(c, '-' | '_'))
                    .flat_map(char::to_lowercase)
                    .collect()
            };
            map.retain(|k, _| {
                let n = folded(k);
                !(n == "token" || CREDENTIAL_NAMES.iter().any(|s| n.ends_with(s)))
            });
            for (k, child) in map.iter_mut() {
                if folded(k).ends_with("headers") {
                    if let Value::Object(headers) = child {
                        headers.retain(|name, _| !crate::llm::config::is_sensitive_header(name));
                    }
                }
                strip_secrets(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_secrets),
        _ => {}
    }
}

/// A meta record (e.g. `meta/config`) as an undo record keeps it: without any field that could
/// hold a credential, stripped as a vault export strips them
/// ([`portable_meta_value`]: the settings through their type).
/// A record with none keeps its exact bytes.
pub(crate) fn without_secrets(key: &str, text: String) -> String {
    let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return text;
    };
    let before = v.clone();
    portable_meta_value(key, &mut v);
    if v == before {
        text
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensitive_headers_never_leave_whatever_list_holds_them() {
        let mut v = serde_json::json!({
            "headers": {"Cookie": "a=1", "X-Auth": "b", "X-Session-Key": "c", "Accept": "text/plain"},
            "extraHeaders": {"proxy-authorization": "d", "X-Trace": "e"},
            "cookie": "f",
            "notes": {"Cookie-less": "kept: not a headers list"}
        });
        strip_secrets(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "headers": {"Accept": "text/plain"},
                "extraHeaders": {"X-Trace": "e"},
                "notes": {"Cookie-less": "kept: not a headers list"}
            })
        );
    }

    #[test]
    fn secrets_never_leave() {
        let mut v = serde_json::json!({
            "provider": {"kind": "openai", "apiKey": "sk-x", "api_key": "sk-y", "maxTokens": 512,
                         "headers": {"Authorization": "Bearer z", "x-api-key": "k"}},
            "endpoints": [{"token": "t", "url": "http://127.0.0.1"}],
            "clientSecret": "s", "password": "p", "model": "m"
        });
        strip_secrets(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "provider": {"kind": "openai", "maxTokens": 512, "headers": {}},
                "endpoints": [{"url": "http://127.0.0.1"}],
                "model": "m"
            })
        );
    }
}
