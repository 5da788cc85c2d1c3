//! The files of the whole wiki in the vault's zip layout ([`crate::vault_files`]), for the zip
//! export and for the first copy of a folder mirror.
//!
//! *Invariant:* the same wiki always gives the same files, and no secret is among them
//! ([`crate::records::MetaRecord`] decides what is carried, [`crate::records::portable_meta_value`]
//! strips it).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::Wiki;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::markdown::page::page_file;
use crate::model::{Page, Revision};
use crate::records::{from_json, portable_meta_value, MetaRecord};
use crate::storage::{Storage, Store, SCHEMA_VERSION};
use crate::vault_files::json::{json_array, json_map, json_one};
use crate::vault_files::zip::safe_path;
use crate::vault_files::{
    page_path, raw_original_path, raw_text_path, Layout, VaultManifest, FOLDER_VERSION,
    MANIFEST_PATH, VAULT_FORMAT, ZIP_VERSION,
};

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Every file of the wiki in the zip layout (path → bytes; see [`crate::vault_files`]), its
    /// manifest marked with `layout` (a zip's, or a folder mirror's as of its first run). The
    /// same wiki always gives the same files. Reads every record: for an export or a first
    /// mirror, never per operation.
    ///
    /// Errors: storage errors; [`Error::Corrupt`] when an attachment's bytes are missing.
    pub async fn vault_snapshot(&self, layout: Layout) -> Result<BTreeMap<String, Vec<u8>>> {
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
            files.insert(page_path(p.kind, &p.key), page_file(&p).into_bytes());
            page_records.push(Page {
                body: String::new(),
                ..p
            });
        }
        let sources = self.sources().await?;
        let mut original_mime: HashMap<&str, &str> = HashMap::new();
        for s in &sources {
            if let Some(a) = &s.original {
                original_mime.insert(&a.sha256, &a.mime);
            }
        }
        for (k, r) in self.storage.scan(Store::Raw, "").await? {
            if let Some(version) = k.strip_prefix("text/") {
                files.insert(raw_text_path(version), r.data);
            } else if let Some(sha) = k.strip_prefix("original/") {
                let mime = original_mime.get(sha).copied().unwrap_or("");
                files.insert(raw_original_path(sha, mime), r.data);
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
        let last_op = self.last_op().await?;
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
            version: match layout {
                Layout::Zip => ZIP_VERSION,
                Layout::Folder => FOLDER_VERSION,
            },
            layout,
            schema_version: SCHEMA_VERSION,
            last_op,
            documents,
        };
        files.insert(MANIFEST_PATH.into(), json_one(&manifest));
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
        Ok(files)
    }

    /// Every record of `store` as JSON values, by key.
    pub(crate) async fn records(&self, store: Store) -> Result<BTreeMap<String, Value>> {
        let mut out = BTreeMap::new();
        for (k, r) in self.storage.scan(store, "").await? {
            let v = from_json(store, &k, &r.data)?;
            out.insert(k, v);
        }
        Ok(out)
    }
}
