//! The vault: page views with backlinks, attachments, rename and delete that keep every link
//! working, and export/import as a zip (Decisions 10 and 15).
//!
//! The files of a vault (its layout, the JSON shapes and the zip) are [`crate::vault_files`].
//!
//! Importing a vault of ours ([`Wiki::import_vault`]) restores all of that exactly into an empty
//! wiki; pages edited, added or deleted in Obsidian since the export become one `import` operation
//! with human revisions. Importing a plain Obsidian vault brings each note in as a source (key =
//! its vault path, `text/markdown`) and every other file as an attachment, in one operation.
//!
//! *Invariant:* export → import → export gives the same bytes.
//!
//! Attachments: bytes live in the raw store under `assets/<sha256>` (stored once however many
//! names point at them); each name is a record `asset/<name>` in the meta store. Names are portable
//! file names, unique case-insensitively.

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::markdown::render::Ambiguity;
use crate::model::{Asset, OpId, OperationKind, Page, PageKind, PageRef};
use crate::storage::Storage;
use crate::wiki::Wiki;

mod export;
mod import;
mod rename;

pub use crate::vault_files::notes::{asset_name, mime_for, TemplateNotes};
use crate::vault_files::notes::{plan_asset, put_asset};

pub use crate::vault_files::{MAX_ENTRY_BYTES, MAX_TOTAL_BYTES, VAULT_FORMAT, VAULT_VERSION};

pub use crate::records::strip_secrets;

/// The wiki as a graph (JS: `graph()`): every page, and one edge per pair of pages where the first
/// links to the second (links and embeds, resolved as in [`LinkGraph`]: case-insensitively and
/// through aliases; links to missing or ambiguous targets and to the page itself are left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct WikiGraph {
    /// Every page, sorted by key.
    pub nodes: Vec<GraphNode>,
    /// Every link between two distinct pages, sorted by `from`, then `to`.
    pub edges: Vec<GraphEdge>,
}

/// A page in [`WikiGraph`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct GraphNode {
    /// Page key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Kind.
    pub kind: PageKind,
    /// Tags (e.g. `offline` for pages the offline compiler wrote).
    pub tags: Vec<String>,
    /// Keys of the sources the page draws on.
    pub sources: Vec<String>,
}

/// A link in [`WikiGraph`]: page `from` links to page `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct GraphEdge {
    /// Key of the linking page.
    pub from: String,
    /// Key of the linked page.
    pub to: String,
}

/// A page as the viewer shows it (JS: `pageView(key)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct PageView {
    /// The page record.
    pub page: Page,
    /// The body rendered to safe HTML (see `markdown::render`).
    pub html: String,
    /// Pages linking here, sorted by key.
    pub backlinks: Vec<PageRef>,
    /// Attachments the HTML shows (`data-asset` = `sha256`): load each with `asset(sha256)`.
    pub assets: Vec<Asset>,
    /// Link targets that lead nowhere.
    pub missing: Vec<String>,
    /// Ambiguous link targets with their candidates.
    pub ambiguous: Vec<Ambiguity>,
    /// Malformed wikilinks, as written.
    pub malformed: Vec<String>,
}

/// What [`Wiki::delete_page`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct DeleteReport {
    /// The deleted page's key.
    pub key: String,
    /// Keys of the pages whose links to it became plain text.
    pub unlinked: Vec<String>,
    /// The operation.
    pub op: OpId,
}

/// What kind of vault [`Wiki::import_vault`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub enum VaultKind {
    /// A vault exported by llm-wiki (has `.llm-wiki/vault.json`).
    LlmWiki,
    /// Any other folder of markdown notes (an Obsidian vault).
    Obsidian,
}

/// What [`Wiki::import_vault`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    /// What was read.
    pub kind: Option<VaultKind>,
    /// Pages restored (vault of ours).
    pub pages: u64,
    /// Sources added (notes of a plain vault; or restored).
    pub sources_added: Vec<String>,
    /// Notes whose source already existed with other text.
    pub sources_corrected: Vec<String>,
    /// Notes already present with the same text.
    pub sources_unchanged: Vec<String>,
    /// Attachments stored.
    pub assets: Vec<String>,
    /// Pages edited, added or deleted in the vault since its export (vault of ours), recorded as
    /// human revisions of one `import` operation.
    pub edited_pages: Vec<String>,
    /// Files not imported, each with the reason.
    pub skipped: Vec<String>,
    /// The `import` operation, when one was written.
    pub op: Option<OpId>,
}

/// Options of a vault import; every field optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct ImportOptions {
    /// What template notes (Templater `<% … %>`, core `{{date}}`/`{{title}}`) become.
    pub templates: TemplateNotes,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    // ---------------------------------------------------------------- viewing

    /// A page rendered to safe HTML with its backlinks, or `None`. The key matches exactly, else
    /// case-insensitively.
    pub async fn page_view(&self, key: &str) -> Result<Option<PageView>> {
        let Some(page) = self.page(key).await? else {
            return Ok(None);
        };
        // Links and backlinks from the page table: no other page's body is read.
        let table = self.page_table().await?;
        let (out, assets) = self
            .render_with_assets(&table, &page.body, Some(&page.key))
            .await?;
        let backlinks = table
            .link_graph()
            .backlinks_of(&page.key)
            .iter()
            .filter_map(|k| table.get(k))
            .map(|r| PageRef {
                key: r.key.clone(),
                title: r.title.clone(),
                kind: r.kind,
            })
            .collect();
        let shown = out
            .assets
            .iter()
            .filter_map(|sha| assets.iter().find(|a| &a.sha256 == sha).cloned())
            .collect();
        Ok(Some(PageView {
            page,
            html: out.html,
            backlinks,
            assets: shown,
            missing: out.missing,
            ambiguous: out.ambiguous,
            malformed: out.malformed,
        }))
    }

    /// Keys of the pages linking to `key`, sorted (links resolve case-insensitively and through
    /// aliases; see `markdown::resolve`).
    pub async fn backlinks(&self, key: &str) -> Result<Vec<String>> {
        Ok(self.page_table().await?.link_graph().backlinks_of(key))
    }

    /// Every page and every link between pages (see [`WikiGraph`]), for a graph view; from the
    /// page table (no body is read).
    pub async fn graph(&self) -> Result<WikiGraph> {
        let table = self.page_table().await?;
        let pages = table.pages_without_bodies(); // ordered by key
        let links = table.link_graph();
        let edges = links
            .outgoing
            .iter()
            .flat_map(|(from, tos)| {
                tos.iter().map(move |to| GraphEdge {
                    from: from.clone(),
                    to: to.clone(),
                })
            })
            .collect();
        let nodes = pages
            .into_iter()
            .map(|p| GraphNode {
                key: p.key,
                title: p.title,
                kind: p.kind,
                tags: p.tags,
                sources: p.sources,
            })
            .collect();
        Ok(WikiGraph { nodes, edges })
    }

    // ---------------------------------------------------------------- attachments

    /// Stores an attachment (an image or file from a clip, a PDF, a vault) under `raw/assets/`
    /// and returns its record. The name is made portable (`markdown::keys`) and kept when free;
    /// the same name with the same bytes returns the existing record and writes nothing; the same
    /// name with other bytes gets a suffix from the content hash (`diagram ~1a2b3c.png`). Bytes
    /// are stored once per SHA-256 however many names point at them.
    ///
    /// Errors: [`Error::InvalidInput`] for empty bytes; storage errors (nothing written).
    pub async fn add_attachment(&self, name: &str, mime: &str, bytes: &[u8]) -> Result<Asset> {
        if bytes.is_empty() {
            return Err(Error::InvalidInput(format!("attachment {name:?} is empty")));
        }
        let existing = self.assets().await?;
        let mut ob = self.begin(OperationKind::AddSource, String::new()).await?;
        let (asset, new) = plan_asset(&existing, name, mime, bytes, ob.op.id);
        if !new {
            return Ok(asset);
        }
        ob.op.summary = format!("attachment added: {}", asset.name);
        put_asset(&mut ob.batch, &asset, bytes);
        self.finish(ob).await?;
        Ok(asset)
    }
}

#[cfg(test)]
mod tests;
