//! Attachments in the kernel: reading the records (`asset/<name>` in the meta store) and their
//! bytes (`assets/<sha256>` in the raw store), and rendering markdown the way a page body renders,
//! its links resolved against the pages and the attachments. Adding attachments is the vault's.
//!
//! *Invariant:* a page view and rendered markdown resolve links and attachments the same way:
//! both go through [`Wiki::render_with_assets`].

use crate::clock::Clock;
use crate::error::Result;
use crate::markdown::render::{render, AssetRef, RenderContext, Rendered};
use crate::model::Asset;
use crate::page_table::PageTable;
use crate::records::ASSET_PREFIX;
use crate::storage::{Storage, Store};

use super::Wiki;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Every attachment, ordered by name.
    pub async fn assets(&self) -> Result<Vec<Asset>> {
        self.read_all(Store::Meta, ASSET_PREFIX).await
    }

    /// The bytes of the attachment with this SHA-256, if stored.
    pub async fn asset_bytes(&self, sha256: &str) -> Result<Option<Vec<u8>>> {
        Ok(self
            .storage
            .get(Store::Raw, &format!("assets/{sha256}"))
            .await?
            .map(|r| r.data))
    }

    /// The attachments among those `keep` accepts that `markdown` shows or links (`![[name]]`,
    /// `[[name]]`, `![alt](raw/assets/name)`), resolved as a page body resolves them, in the
    /// order of their records. When `keep` accepts none, nothing is rendered (the compile asks
    /// this of every source; most wikis have no described picture).
    ///
    /// Errors: storage errors.
    pub async fn shown_assets(
        &self,
        markdown: &str,
        keep: impl Fn(&Asset) -> bool,
    ) -> Result<Vec<Asset>> {
        let mut assets = self.assets().await?;
        assets.retain(|a| keep(a));
        if assets.is_empty() {
            return Ok(assets);
        }
        let table = self.page_table().await?;
        let out = render_with(&table, markdown, None, &assets);
        assets.retain(|a| out.assets.contains(&a.sha256));
        Ok(assets)
    }

    /// `markdown` rendered to safe HTML as a page body is: its wikilinks resolved with `table`'s
    /// resolver and the wiki's attachments by name, `self_key` the page it is the body of (for
    /// `[[#heading]]` links), if any. Returns the output and every attachment (the output names
    /// those it shows by SHA-256).
    ///
    /// Errors: storage errors.
    pub(crate) async fn render_with_assets(
        &self,
        table: &PageTable,
        markdown: &str,
        self_key: Option<&str>,
    ) -> Result<(Rendered, Vec<Asset>)> {
        let assets = self.assets().await?;
        let out = render_with(table, markdown, self_key, &assets);
        Ok((out, assets))
    }
}

/// `markdown` rendered as [`Wiki::render_with_assets`] renders it, with `assets` the
/// attachments links may resolve to.
fn render_with(
    table: &PageTable,
    markdown: &str,
    self_key: Option<&str>,
    assets: &[Asset],
) -> Rendered {
    let refs: Vec<AssetRef> = assets
        .iter()
        .map(|a| AssetRef {
            name: a.name.clone(),
            sha256: a.sha256.clone(),
            mime: a.mime.clone(),
        })
        .collect();
    let resolver = table
        .resolver()
        .clone()
        .with_assets(refs.iter().map(|a| a.name.as_str()));
    render(
        markdown,
        &RenderContext {
            resolver: &resolver,
            self_key,
            assets: &refs,
        },
    )
}
