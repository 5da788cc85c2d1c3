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
    /// What a model saw in the picture, when one was asked (`describeAttachment`, or a compile
    /// with `describeImages` on). A derived layer: it is not part of any source's text, so it
    /// changes no source's version (Decision 1), and claims drawn from it are never verified
    /// (Decision 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub description: Option<ImageDescription>,
}

/// A model's description of a picture (see [`Asset::description`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct ImageDescription {
    /// The description: what the picture shows, with any text in it copied out.
    pub text: String,
    /// The model that wrote it.
    pub model: String,
    /// When, in milliseconds since the Unix epoch.
    pub time: super::Millis,
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
