//! The files of a vault, below the operations so that the zip export and the folder mirror
//! share them (Decision 10): the paths of pages, source texts, originals and attachments, the
//! `.llm-wiki/` record files and their JSON shapes, the manifest, and the zip container.
//!
//! The zip layout (every path inside the zip, sorted; every entry dated 1980-01-01 00:00, deflated at
//! level 6, mode 0644, so the same wiki always exports to the same bytes):
//!
//! ```text
//! index.md  log.md  schema.md           documents, byte for byte
//! wiki/<kind>/<key>.md                  pages: one frontmatter block + body (markdown::page)
//! raw/text/<version>.md                 source texts, content-addressed (SHA-256 of the text)
//! raw/original/<sha256>.<ext>           original artifacts (clipped HTML, PDF…)
//! raw/assets/<name>                     attachments (images, files)
//! .llm-wiki/vault.json                  format marker, version, last operation id, documents
//! .llm-wiki/pages.json                  page records without bodies (the bodies are the .md files)
//! .llm-wiki/sources.json  revisions.json  operations.json  assets.json     model records
//! .llm-wiki/claims.json  ledger.json  meta.json  config.json               records by key
//! .llm-wiki/undo.json                   undo records of the operations (rollback; never a secret)
//! ```
//!
//! `config.json` and `meta.json` never hold a secret (the fields that hold credentials, chosen by
//! type: [`crate::records::portable_meta_value`]). The search store is not exported (it is
//! derived from the pages and rebuilt).
//!
//! The folder layout (a live mirror, `vault.json` version 3, `"layout": "folder"`) is the same
//! files as of the manifest's `lastOp` (without `config.json`), then, per device that mirrors the
//! wiki, `.llm-wiki/devices/<device>/ops/<id>.json` per later operation, its `run.json` and its
//! `settings.json` ([`ops`]); an `inbox/` for notes dropped in. Version 2 (one `.llm-wiki/ops/`,
//! `run.json` and `config.json` for the folder) is still read.
//!
//! *Invariant:* the same records always give the same files, byte for byte.

use serde::{Deserialize, Serialize};

use crate::model::{OpId, PageKind};

pub mod json;
pub mod notes;
pub mod ops;
pub mod read;
pub mod zip;

/// Format marker in `.llm-wiki/vault.json`.
pub const VAULT_FORMAT: &str = "llm-wiki-vault";
/// The vault format version this build writes into a zip.
pub const ZIP_VERSION: u32 = 1;
/// The vault format version of a folder mirror (the zip layout plus one file per operation).
/// 3: operation files and settings per device, under `.llm-wiki/devices/<device>/`; 2 had one
/// `.llm-wiki/ops/` folder and `config.json` (still read).
pub const FOLDER_VERSION: u32 = 3;
/// The newest vault format version this build reads.
pub const VAULT_VERSION: u32 = 3;
/// Largest single file accepted from a zip (256 MiB).
pub const MAX_ENTRY_BYTES: u64 = 256 << 20;
/// Largest total of uncompressed bytes accepted from a zip (1 GiB).
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;
/// The manifest's path.
pub const MANIFEST_PATH: &str = ".llm-wiki/vault.json";

/// `.llm-wiki/vault.json`: what the vault is, and the documents it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VaultManifest {
    /// [`VAULT_FORMAT`].
    pub format: String,
    /// The format version it was written in.
    pub version: u32,
    /// The file layout: absent in a zip, `"folder"` in a folder mirror.
    #[serde(default, skip_serializing_if = "Layout::is_zip")]
    pub layout: Layout,
    /// The storage schema version of the wiki it was written from.
    pub schema_version: u32,
    /// The id of the last operation its `.llm-wiki/*.json` files hold (in a folder, the operation
    /// files after it hold the rest).
    pub last_op: OpId,
    /// The documents it holds (`index.md`, `log.md`, `schema.md`), by path.
    pub documents: Vec<String>,
}

/// How a vault's records are laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Layout {
    /// Every record in the `.llm-wiki/*.json` files (a zip export).
    #[default]
    Zip,
    /// Those files as of `last_op`, then one file per later operation (a folder mirror).
    Folder,
}

impl Layout {
    fn is_zip(&self) -> bool {
        *self == Layout::Zip
    }
}

/// A page's file: `wiki/<kind>/<key>.md`.
pub fn page_path(kind: PageKind, key: &str) -> String {
    format!("wiki/{}/{key}.md", kind.as_str())
}

/// A source text's file: `raw/text/<version>.md` (the version is the text's SHA-256).
pub fn raw_text_path(version: &str) -> String {
    format!("raw/text/{version}.md")
}

/// An original artifact's file: `raw/original/<sha256>.<ext>`, the extension from its MIME type.
pub fn raw_original_path(sha256: &str, mime: &str) -> String {
    format!("raw/original/{sha256}.{}", extension_for(mime))
}

/// The file extension for a MIME type (`bin` when unknown).
pub fn extension_for(mime: &str) -> &'static str {
    match mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "text/html" => "html",
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        "text/markdown" => "md",
        "application/json" => "json",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        _ => "bin",
    }
}
