//! The records and reports of pages and attachments that the kernel and several operations share:
//! an attachment ([`Asset`]), a page as a view names it ([`PageRef`]), and what a rename did
//! ([`RenameReport`]). Plain serde types like the rest of the model.

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use serde::{Deserialize, Serialize};

use super::{OpId, Page, PageKind};

/// An attachment: a file in `raw/assets/<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Asset {
    /// File name: a portable name (see `markdown::keys`), unique case-insensitively.
    pub name: String,
    /// MIME type.
    pub mime: String,
    /// SHA-256 (hex) of the bytes.
    pub sha256: String,
    /// Size in bytes.
    pub bytes: u64,
    /// The operation that added it.
    pub op: OpId,
}

impl Asset {
    /// The path of the file in an exported vault.
    pub fn path(&self) -> String {
        format!("raw/assets/{}", self.name)
    }
}

/// A page as a view names it: its key, title and kind (JS: `backlinks` of `pageView`, `pages` of
/// `openContradictions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct PageRef {
    /// Page key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Kind.
    pub kind: PageKind,
}

/// What [`crate::wiki::Wiki::rename_page`] did (JS: `renamePage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct RenameReport {
    /// The page after the rename (its key may have changed).
    pub page: Page,
    /// The key it had.
    pub old_key: String,
    /// Keys of the pages whose links were rewritten.
    pub rewritten: Vec<String>,
    /// The operation.
    pub op: OpId,
}
