//! Export: the whole wiki as zip bytes in the vault layout (see the module docs of
//! [`crate::vault`]), and the JSON shapes of the `.llm-wiki/` files.
//!
//! *Invariant:* the same wiki always exports to the same bytes, and no secret leaves
//! ([`crate::records::MetaRecord`] decides what is carried, [`crate::records::portable_meta_value`]
//! strips it).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use super::files::extension_for;
use super::zip::{safe_path, write_zip};
use super::{VaultManifest, VAULT_FORMAT, VAULT_VERSION};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::markdown::page::page_file;
use crate::model::{Page, Revision};
use crate::records::{from_json, portable_meta_value, to_json, MetaRecord, META_OPS};
use crate::storage::{Storage, Store, SCHEMA_VERSION};
use crate::wiki::Wiki;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The whole wiki as zip bytes in the vault layout (see the module docs). The same wiki
    /// always gives the same bytes.
    pub async fn export_vault(&self) -> Result<Vec<u8>> {
        let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut documents = Vec::new();
        for (name, r) in self.storage.scan(Store::Documents, "").await? {
            if safe_path(&name).as_deref() == Some(name.as_str()) && !name.starts_with(".llm-wiki/")
            {
                documents.push(name.clone());
                files.insert(name, r.data);
            }
        }
        let mut page_records = Vec::new();
        for p in self.all_pages().await? {
            files.insert(
                format!("wiki/{}/{}.md", p.kind.as_str(), p.key),
                page_file(&p).into_bytes(),
            );
            page_records.push(Page {
                body: String::new(),
                ..p
            });
        }
        let sources = self.sources().await?;
        let mut original_ext: HashMap<String, &'static str> = HashMap::new();
        for s in &sources {
            if let Some(a) = &s.original {
                original_ext.insert(a.sha256.clone(), extension_for(&a.mime));
            }
        }
        for (k, r) in self.storage.scan(Store::Raw, "").await? {
            if let Some(version) = k.strip_prefix("text/") {
                files.insert(format!("raw/text/{version}.md"), r.data);
            } else if let Some(sha) = k.strip_prefix("original/") {
                let ext = original_ext.get(sha).copied().unwrap_or("bin");
                files.insert(format!("raw/original/{sha}.{ext}"), r.data);
            }
        }
        let assets = self.assets().await?;
        for a in &assets {
            let bytes = self
                .asset_bytes(&a.sha256)
                .await?
                .ok_or_else(|| Error::Corrupt {
                    store: Store::Raw,
                    key: format!("assets/{}", a.sha256),
                    message: format!("bytes of attachment {:?} missing", a.name),
                })?;
            files.insert(a.path(), bytes);
        }
        let revisions: Vec<Revision> = self.read_all(Store::Revisions, "").await?;
        let operations = self.operations().await?;
        let last_op = self
            .read::<Value>(Store::Meta, META_OPS)
            .await?
            .and_then(|(v, _)| v.get("last").and_then(Value::as_u64))
            .unwrap_or(0);
        let mut meta = BTreeMap::new();
        let mut config = Value::Null;
        for (k, r) in self.storage.scan(Store::Meta, "").await? {
            let kind = MetaRecord::of(&k);
            if !kind.in_meta_json() && kind != MetaRecord::Config {
                continue;
            }
            let mut v: Value = from_json(Store::Meta, &k, &r.data)?;
            portable_meta_value(&k, &mut v);
            if kind == MetaRecord::Config {
                config = v;
            } else {
                meta.insert(k, v);
            }
        }
        let manifest = VaultManifest {
            format: VAULT_FORMAT.into(),
            version: VAULT_VERSION,
            schema_version: SCHEMA_VERSION,
            last_op,
            documents,
        };
        files.insert(".llm-wiki/vault.json".into(), json_one(&manifest));
        files.insert(".llm-wiki/pages.json".into(), json_array(&page_records));
        files.insert(".llm-wiki/sources.json".into(), json_array(&sources));
        files.insert(".llm-wiki/revisions.json".into(), json_array(&revisions));
        files.insert(".llm-wiki/operations.json".into(), json_array(&operations));
        files.insert(".llm-wiki/assets.json".into(), json_array(&assets));
        files.insert(
            ".llm-wiki/claims.json".into(),
            json_map(&self.records(Store::Claims).await?),
        );
        files.insert(
            ".llm-wiki/ledger.json".into(),
            json_map(&self.records(Store::Ledger).await?),
        );
        files.insert(".llm-wiki/meta.json".into(), json_map(&meta));
        files.insert(
            ".llm-wiki/undo.json".into(),
            json_array(&crate::records::undo::all_undo_records(&self.storage).await?),
        );
        files.insert(".llm-wiki/config.json".into(), json_one(&config));
        write_zip(&files)
    }

    pub(super) async fn records(&self, store: Store) -> Result<BTreeMap<String, Value>> {
        let mut out = BTreeMap::new();
        for (k, r) in self.storage.scan(store, "").await? {
            let v = from_json(store, &k, &r.data)?;
            out.insert(k, v);
        }
        Ok(out)
    }
}

/// One JSON value and a newline (compact: the same serializer the stores use, so no second,
/// pretty-printing copy of every `Serialize` impl lands in the wasm).
pub(super) fn json_one<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = to_json(v);
    out.push(b'\n');
    out
}

/// A JSON array with one record per line (readable, and diffs record by record).
pub(super) fn json_array<T: Serialize>(items: &[T]) -> Vec<u8> {
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
pub(super) fn vault_json_error(path: &str, shape_name: &str, e: &serde_json::Error) -> Error {
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
pub(super) fn json_map(map: &BTreeMap<String, Value>) -> Vec<u8> {
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
