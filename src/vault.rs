//! The vault: page views with backlinks, attachments, rename and delete that keep every link
//! working, and export/import as a zip (Decisions 10 and 15).
//!
//! Vault layout (every path inside the zip, sorted; every entry dated 1980-01-01 00:00, deflated at
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
//! `config.json` and `meta.json` never hold a secret: any field named like an API key, token,
//! secret, password or authorization is removed, at any depth. The search store is not exported
//! (it is derived from the pages and rebuilt).
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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Cursor, Read, Write};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::Clock;
use crate::documents::{self, INDEX_MD, LOG_MD, SCHEMA_MD};
use crate::error::{Error, Result};
use crate::markdown::keys::{fold_key, legacy_page_key, page_key, unique_key};
use crate::markdown::obsidian::{self, NoteShape};
use crate::markdown::page::{clean_page, page_file, parse_page_file, CleanOptions};
use crate::markdown::render::{render, Ambiguity, AssetRef, RenderContext};
use crate::markdown::resolve::{fold_name, Resolution, Resolver};
use crate::markdown::wikilinks::{self, write_link};
use crate::model::{
    Artifact, Author, OpId, Operation, OperationKind, Page, PageKind, Revision, Source,
    SourceStatus, TokenUsage,
};
use crate::records::{
    from_json, operation_key, portable_meta_value, revision_key, to_json, undo_key, MetaRecord,
    ASSET_PREFIX, META_CONFIG, META_OPS,
};
use crate::storage::{Batch, Expect, Storage, Store, SCHEMA_VERSION};
use crate::text::{normalize_source_text, sha256_hex};
use crate::wiki::{unlink_page, Wiki};

/// Format marker in `.llm-wiki/vault.json`.
pub const VAULT_FORMAT: &str = "llm-wiki-vault";
/// The vault format version this build writes and the newest it reads.
pub const VAULT_VERSION: u32 = 1;
/// Largest single file accepted from a zip (256 MiB).
pub const MAX_ENTRY_BYTES: u64 = 256 << 20;
/// Largest total of uncompressed bytes accepted from a zip (1 GiB).
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;

pub use crate::records::strip_secrets;

/// An attachment: a file in `raw/assets/<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
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

/// A page linking to another (JS: `backlinks` of `pageView`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct PageRef {
    /// Page key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Kind.
    pub kind: PageKind,
}

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

/// What [`Wiki::rename_page`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
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

/// What a plain Obsidian vault's template notes become (`importVault(bytes, { templates })`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub enum TemplateNotes {
    /// Left out, listed in `skipped` with the placeholder that marks them. The default.
    #[default]
    Skip,
    /// Imported as sources like any note.
    Import,
}

/// Options of a vault import; every field optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct ImportOptions {
    /// What template notes (Templater `<% … %>`, core `{{date}}`/`{{title}}`) become.
    pub templates: TemplateNotes,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VaultManifest {
    format: String,
    version: u32,
    schema_version: u32,
    last_op: OpId,
    documents: Vec<String>,
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
        let assets = self.assets().await?;
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
        let out = render(
            &page.body,
            &RenderContext {
                resolver: &resolver,
                self_key: Some(&page.key),
                assets: &refs,
            },
        );
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

    // ---------------------------------------------------------------- rename and delete

    /// Renames a page: a new title, and the key that title gives (unique case-insensitively). Every
    /// link that reached the page by its key or title is rewritten to the new key in the same
    /// operation (keeping heading/block fragments, embeds, and any alias other than the old
    /// title); links through an alias are left alone, since they still resolve. The page's
    /// revisions are carried over to the new key; the old key's history ends with a revision
    /// without state. Claims and ledger records naming the old key are updated.
    ///
    /// Errors: [`Error::NotFound`], [`Error::InvalidInput`] for an empty title,
    /// [`Error::Conflict`] when another writer changed a page first (nothing written).
    pub async fn rename_page(&self, key: &str, title: &str) -> Result<RenameReport> {
        self.rename_page_dropping_aliases(key, title, &[]).await
    }

    /// [`Wiki::rename_page`], also removing the aliases in `drop_aliases` from the page (the lint
    /// fix for a page that merged names, [`crate::lint::Fix::RenamePage`]).
    pub(crate) async fn rename_page_dropping_aliases(
        &self,
        key: &str,
        title: &str,
        drop_aliases: &[String],
    ) -> Result<RenameReport> {
        let title = title.trim();
        if title.is_empty() {
            return Err(Error::InvalidInput("a page needs a title".into()));
        }
        // The page and the pages linking to it are read; the others are known from the table.
        let table = self.page_table().await?;
        let (old, pages, revs) = self.pages_linking(&table, key).await?;
        let taken: BTreeSet<String> = crate::util::btree_set(
            table
                .rows()
                .filter(|p| p.key != old.key)
                .map(|p| fold_key(&p.key)),
        );
        let new_key = unique_key(title, |k| taken.contains(k));
        let now = self.clock.now_ms();
        let full = table.resolver();
        let direct = Resolver::new([(old.key.as_str(), old.title.as_str(), &[][..])]);

        let mut ob = self
            .begin(
                OperationKind::Rename,
                format!("renamed: {} → {}", old.title, title),
            )
            .await?;
        ob.op.time = now;
        let op = ob.op.id;
        let mut rewritten = Vec::new();
        let mut renamed = old.clone();
        for p in &pages {
            let is_self = p.key == old.key;
            let body = wikilinks::rewrite(&p.body, |l| {
                if l.target.is_empty()
                    || full.resolve_link(l, Some(&p.key)) != Resolution::Page(old.key.clone())
                    || direct.resolve(&l.target) != Resolution::Page(old.key.clone())
                {
                    return None;
                }
                let alias = match l.alias.as_deref() {
                    Some(a) if a != old.title && a != old.key => Some(a.to_string()),
                    _ => (title != new_key).then(|| title.to_string()),
                };
                Some(write_link(
                    l.embed,
                    &new_key,
                    l.fragment.as_ref(),
                    alias.as_deref(),
                    l.in_table,
                ))
            });
            if is_self {
                renamed.body = body;
                continue;
            }
            if body == p.body {
                continue;
            }
            let q =
                self.put_body_revision(&mut ob.batch, p, body, revs.get(&p.key).copied(), op, now);
            rewritten.push(q.key.clone());
            ob.op.pages.push(q.key.clone());
        }
        renamed.key = new_key.clone();
        renamed.title = title.to_string();
        renamed.aliases.retain(|a| !drop_aliases.contains(a));
        renamed.revision += 1;
        renamed.updated = now;
        if new_key == old.key {
            self.put_page_revision(
                &mut ob.batch,
                &renamed,
                revs.get(&old.key).copied(),
                Author::Human,
                op,
                now,
            );
        } else {
            // Copy the history to the new key (after any history a deleted page left there), end
            // the old key's history, write the renamed page.
            let offset = self.next_revision_number(&new_key).await? - 1;
            for (k, r) in self
                .storage
                .scan(Store::Revisions, &format!("{}\u{0}", old.key))
                .await?
            {
                let mut rev: Revision = from_json(Store::Revisions, &k, &r.data)?;
                rev.number += offset;
                rev.page = new_key.clone();
                ob.batch.put(
                    Store::Revisions,
                    revision_key(&new_key, rev.number),
                    to_json(&rev),
                    Expect::Absent,
                );
            }
            self.delete_page_record(
                &mut ob.batch,
                &old.key,
                revs.get(&old.key).copied(),
                Author::Human,
                op,
                now,
            )
            .await?;
            renamed.revision = offset + old.revision + 1;
            self.put_page_revision(&mut ob.batch, &renamed, None, Author::Human, op, now);
            self.rekey_claims(&mut ob.batch, &old.key, &new_key).await?;
            // A source's summary page keeps being its summary page under the new key.
            for (k, r) in self.storage.scan(Store::Sources, "").await? {
                let mut source: Source = from_json(Store::Sources, &k, &r.data)?;
                if source.summary_page.as_deref() == Some(old.key.as_str()) {
                    source.summary_page = Some(new_key.clone());
                    ob.batch
                        .put(Store::Sources, k, to_json(&source), Expect::Rev(r.rev));
                }
            }
        }
        ob.op.pages.insert(0, new_key.clone());
        if new_key != old.key {
            ob.op.pages.insert(0, old.key.clone());
        }
        let op = self.finish(ob).await?;
        Ok(RenameReport {
            page: renamed,
            old_key: old.key,
            rewritten,
            op: op.id,
        })
    }

    /// Deletes a page. Every link to it (by key, title or alias) becomes its display text in the
    /// same operation, so no dead link is left behind. The page's history ends with a revision
    /// without state; its earlier revisions stay readable.
    ///
    /// Errors: [`Error::NotFound`], [`Error::Conflict`] (nothing written).
    pub async fn delete_page(&self, key: &str) -> Result<DeleteReport> {
        let table = self.page_table().await?;
        let (gone, pages, revs) = self.pages_linking(&table, key).await?;
        let full = table.resolver();
        let now = self.clock.now_ms();
        let mut ob = self
            .begin(OperationKind::Delete, format!("deleted: {}", gone.title))
            .await?;
        ob.op.time = now;
        ob.op.pages.push(gone.key.clone());
        let op = ob.op.id;
        let mut unlinked = Vec::new();
        for p in pages.iter().filter(|p| p.key != gone.key) {
            let body = unlink_page(&p.body, full, &p.key, &gone.key);
            if body == p.body {
                continue;
            }
            let q =
                self.put_body_revision(&mut ob.batch, p, body, revs.get(&p.key).copied(), op, now);
            unlinked.push(q.key.clone());
            ob.op.pages.push(q.key.clone());
        }
        self.delete_page_record(
            &mut ob.batch,
            &gone.key,
            revs.get(&gone.key).copied(),
            Author::Human,
            op,
            now,
        )
        .await?;
        let op = self.finish(ob).await?;
        Ok(DeleteReport {
            key: gone.key,
            unlinked,
            op: op.id,
        })
    }

    /// The page `key` names (the table's lookup: exact key, then case-insensitive), that page and
    /// the pages linking to it (the page table's backlinks), with their storage revisions: what
    /// renaming or deleting it may rewrite. Errors: [`Error::NotFound`].
    async fn pages_linking(
        &self,
        table: &crate::page_table::PageTable,
        key: &str,
    ) -> Result<(Page, Vec<Page>, HashMap<String, u64>)> {
        let not_found = || Error::NotFound(format!("page {key:?}"));
        let found = table.find(key).ok_or_else(not_found)?.key.clone();
        let mut pages = Vec::new();
        let mut revs = HashMap::new();
        let keys = std::iter::once(found.clone()).chain(table.link_graph().backlinks_of(&found));
        for k in keys {
            if let Some(r) = self.storage.get(Store::Pages, &k).await? {
                pages.push(from_json::<Page>(Store::Pages, &k, &r.data)?);
                revs.insert(k, r.rev);
            }
        }
        let page = pages
            .iter()
            .find(|p| p.key == found)
            .cloned()
            .ok_or_else(not_found)?;
        Ok((page, pages, revs))
    }

    /// `p` with `body`, as its next revision by a human at `now` in operation `op`, added to
    /// `batch` (expecting storage revision `stored`). Returns the new state.
    fn put_body_revision(
        &self,
        batch: &mut Batch,
        p: &Page,
        body: String,
        stored: Option<u64>,
        op: OpId,
        now: i64,
    ) -> Page {
        let mut q = p.clone();
        q.body = body;
        q.revision += 1;
        q.updated = now;
        self.put_page_revision(batch, &q, stored, Author::Human, op, now);
        q
    }

    // ---------------------------------------------------------------- export

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

    async fn records(&self, store: Store) -> Result<BTreeMap<String, Value>> {
        let mut out = BTreeMap::new();
        for (k, r) in self.storage.scan(store, "").await? {
            let v = from_json(store, &k, &r.data)?;
            out.insert(k, v);
        }
        Ok(out)
    }

    // ---------------------------------------------------------------- import

    /// Imports a zip. A vault exported by llm-wiki (it has `.llm-wiki/vault.json`) is restored
    /// exactly — pages, revisions, operations, sources with their texts and originals, claims,
    /// ledger, attachments, documents — and must go into an empty wiki; pages changed in the vault
    /// since (edited, added or deleted in Obsidian) become one `import` operation of human
    /// revisions. Any other zip is read as an Obsidian vault: each `.md` note becomes a source
    /// (key = its path in the vault, title = frontmatter `title` or the file name; same path and
    /// text as an existing source: unchanged), every other file an attachment; hidden folders
    /// (`.obsidian/`, `.trash/`) are skipped. A folder that wraps the whole vault is ignored.
    /// Notes that are not prose ([`crate::markdown::obsidian`]): an Excalidraw drawing becomes a
    /// source of its text elements only (the whole note is kept as the source's original), or is
    /// skipped when it has none; a template is skipped unless `options.templates` says
    /// otherwise. `ImportReport::skipped` lists every file left out and why.
    ///
    /// Errors: [`Error::InvalidInput`] for a damaged or oversized zip, a vault of ours into a
    /// non-empty wiki, a newer vault version, or files that do not match their hashes;
    /// [`Error::Corrupt`] for unreadable records. Nothing is written on error.
    pub async fn import_vault(&self, bytes: &[u8]) -> Result<ImportReport> {
        self.import_vault_with(bytes, &ImportOptions::default())
            .await
    }

    /// [`Wiki::import_vault`] with options (they apply to a plain Obsidian vault).
    pub async fn import_vault_with(
        &self,
        bytes: &[u8],
        options: &ImportOptions,
    ) -> Result<ImportReport> {
        let files = read_zip(bytes)?;
        if files.contains_key(".llm-wiki/vault.json") {
            self.import_ours(files).await
        } else {
            self.import_obsidian(files, options).await
        }
    }

    async fn import_ours(&self, files: BTreeMap<String, Vec<u8>>) -> Result<ImportReport> {
        let bad = |m: String| Error::InvalidInput(format!("vault: {m}"));
        let parse = |path: &str| -> Result<Value> {
            match files.get(path) {
                Some(b) => serde_json::from_slice(b).map_err(|e| bad(format!("{path}: {e}"))),
                None => Ok(Value::Null),
            }
        };
        // Each file straight into its type (the deserializers the storage reader has, no `Value`
        // in between). A missing file or `null` gives the default.
        fn typed<T: serde::de::DeserializeOwned + Default>(
            files: &BTreeMap<String, Vec<u8>>,
            name: &str,
        ) -> Result<T> {
            let path = format!(".llm-wiki/{name}");
            let Some(b) = files.get(&path) else {
                return Ok(T::default());
            };
            serde_json::from_slice::<Option<T>>(b)
                .map(Option::unwrap_or_default)
                .map_err(|e| vault_json_error(&path, name, &e))
        }
        let manifest: VaultManifest = serde_json::from_slice(
            files
                .get(".llm-wiki/vault.json")
                .map_or(&b"null"[..], Vec::as_slice),
        )
        .map_err(|e| vault_json_error(".llm-wiki/vault.json", ".llm-wiki/vault.json", &e))?;
        if manifest.format != VAULT_FORMAT || manifest.version > VAULT_VERSION {
            return Err(bad(format!(
                "format {:?} version {} is not one this build reads ({VAULT_FORMAT} ≤ {VAULT_VERSION}); update the app",
                manifest.format, manifest.version
            )));
        }
        // One record of each store is enough to tell.
        let mut nonempty = false;
        for store in [Store::Pages, Store::Sources, Store::Operations] {
            nonempty |= !self.storage.scan_page(store, "", None, 1).await?.is_empty();
        }
        if nonempty {
            return Err(Error::InvalidInput(
                "a vault exported by llm-wiki restores a whole wiki: import it into a new, empty wiki".into(),
            ));
        }
        let records: Vec<Page> = typed(&files, "pages.json")?;
        let sources: Vec<Source> = typed(&files, "sources.json")?;
        let revisions: Vec<Revision> = typed(&files, "revisions.json")?;
        let operations: Vec<Operation> = typed(&files, "operations.json")?;
        let assets: Vec<Asset> = typed(&files, "assets.json")?;
        let claims: BTreeMap<String, Value> = typed(&files, "claims.json")?;
        let ledger: BTreeMap<String, Value> = typed(&files, "ledger.json")?;
        let meta: BTreeMap<String, Value> = typed(&files, "meta.json")?;
        let undo: Vec<crate::records::undo::UndoRecord> = typed(&files, "undo.json")?;
        let config = parse(".llm-wiki/config.json")?;

        let mut batch = Batch::new();
        let mut report = ImportReport {
            kind: Some(VaultKind::LlmWiki),
            ..Default::default()
        };
        // Documents.
        for name in &manifest.documents {
            let data = files
                .get(name)
                .ok_or_else(|| bad(format!("{name} is listed but missing")))?;
            batch.put(Store::Documents, name.clone(), data.clone(), Expect::Any);
        }
        // Raw texts and originals, checked against their hashes.
        for (path, data) in &files {
            if let Some(version) = path
                .strip_prefix("raw/text/")
                .and_then(|n| n.strip_suffix(".md"))
            {
                if sha256_hex(data) != version {
                    return Err(bad(format!("{path} does not match its SHA-256")));
                }
                batch.put(
                    Store::Raw,
                    format!("text/{version}"),
                    data.clone(),
                    Expect::Any,
                );
            } else if let Some(name) = path.strip_prefix("raw/original/") {
                let sha = name.split('.').next().unwrap_or("");
                if sha256_hex(data) != sha {
                    return Err(bad(format!("{path} does not match its SHA-256")));
                }
                batch.put(
                    Store::Raw,
                    format!("original/{sha}"),
                    data.clone(),
                    Expect::Any,
                );
            }
        }
        for s in &sources {
            for v in std::iter::once(&s.version).chain(&s.previous_versions) {
                if !v.is_empty() && !files.contains_key(&format!("raw/text/{v}.md")) {
                    return Err(bad(format!(
                        "the text of source {:?} (raw/text/{v}.md) is missing",
                        s.key
                    )));
                }
            }
            batch.put(Store::Sources, s.key.clone(), to_json(s), Expect::Any);
            report.sources_added.push(s.key.clone());
        }
        for a in &assets {
            let data = files
                .get(&a.path())
                .ok_or_else(|| bad(format!("{} is missing", a.path())))?;
            if sha256_hex(data) != a.sha256 {
                return Err(bad(format!("{} does not match its SHA-256", a.path())));
            }
            put_asset(&mut batch, a, data);
            report.assets.push(a.name.clone());
        }
        for r in &revisions {
            batch.put(
                Store::Revisions,
                revision_key(&r.page, r.number),
                to_json(r),
                Expect::Any,
            );
        }
        for o in &operations {
            batch.put(
                Store::Operations,
                operation_key(o.id),
                to_json(o),
                Expect::Any,
            );
        }
        for (store, map) in [
            (Store::Claims, &claims),
            (Store::Ledger, &ledger),
            (Store::Meta, &meta),
        ] {
            for (k, v) in map {
                // meta.json holds only what an export writes there; anything else in it (a
                // hand-made or older vault) would overwrite records this import writes itself
                // or caches it must not bring in.
                if store == Store::Meta && !MetaRecord::of(k).in_meta_json() {
                    continue;
                }
                batch.put(store, k.clone(), to_json(v), Expect::Any);
            }
        }
        for u in &undo {
            batch.put(Store::Meta, undo_key(u.op), to_json(u), Expect::Any);
        }
        if !config.is_null() {
            batch.put(Store::Meta, META_CONFIG, to_json(&config), Expect::Any);
        }
        let last_op = manifest
            .last_op
            .max(operations.iter().map(|o| o.id).max().unwrap_or(0));

        // Pages: the record, with the body of its .md file; differences from the recorded state
        // are edits made in the vault.
        let mut md: BTreeMap<String, (PageKind, &str)> = BTreeMap::new();
        for (path, data) in &files {
            let Some(rest) = path.strip_prefix("wiki/") else {
                continue;
            };
            let parsed = rest
                .split_once('/')
                .and_then(|(kind, file)| Some((PageKind::parse(kind)?, file.strip_suffix(".md")?)))
                .filter(|(_, key)| !key.contains('/'));
            let text = std::str::from_utf8(data).ok();
            match (parsed, text) {
                (Some((kind, key)), Some(text)) => {
                    md.insert(key.to_string(), (kind, text));
                }
                _ => report
                    .skipped
                    .push(format!("{path}: not wiki/<kind>/<key>.md text")),
            }
        }
        let latest: HashMap<&str, &Revision> = revisions.iter().fold(HashMap::new(), |mut m, r| {
            let e = m.entry(r.page.as_str()).or_insert(r);
            if r.number > e.number {
                *e = r;
            }
            m
        });
        let mut max_rev: HashMap<&str, u64> = HashMap::new();
        for r in &revisions {
            let m = max_rev.entry(r.page.as_str()).or_insert(0);
            *m = (*m).max(r.number);
        }
        let mut final_pages = Vec::new();
        let mut edits: Vec<(Page, Option<Page>)> = Vec::new(); // (new state, recorded state)
        let mut deleted: Vec<Page> = Vec::new();
        for rec in &records {
            let recorded_body = latest
                .get(rec.key.as_str())
                .and_then(|r| r.page_state.as_ref())
                .map(|s| s.body.clone());
            let Some((kind, text)) = md.remove(&rec.key) else {
                let mut r = rec.clone();
                r.body = recorded_body.unwrap_or_default();
                deleted.push(r);
                continue;
            };
            let mut restored = rec.clone();
            restored.body = recorded_body.unwrap_or_else(|| page_from_file(rec, kind, text).body);
            if kind == rec.kind && page_file(&restored) == text {
                final_pages.push(restored);
            } else {
                edits.push((page_from_file(&restored, kind, text), Some(restored)));
            }
        }
        let mut taken: BTreeSet<String> =
            crate::util::btree_set(records.iter().map(|p| fold_key(&p.key)));
        for (key, (kind, text)) in md {
            let k = if taken.contains(&fold_key(&key)) || page_key(&key) != key {
                unique_key(&key, |f| taken.contains(f))
            } else {
                key.clone()
            };
            taken.insert(fold_key(&k));
            let blank = Page {
                key: k.clone(),
                title: key.clone(),
                kind,
                summary: String::new(),
                aliases: vec![],
                tags: vec![],
                sources: vec![],
                created: 0,
                updated: 0,
                body: String::new(),
                revision: max_rev.get(k.as_str()).copied().unwrap_or(0),
                extra_frontmatter: String::new(),
                more_facts: vec![],
            };
            edits.push((page_from_file(&blank, kind, text), None));
        }
        report.pages = (final_pages.len() + edits.len()) as u64;
        let mut counter = last_op;
        let mut log = files
            .get(LOG_MD)
            .map(|b| String::from_utf8_lossy(b).into_owned());
        let mut index = None;
        if !edits.is_empty() || !deleted.is_empty() {
            let now = self.clock.now_ms();
            counter += 1;
            let mut op = Operation {
                id: counter,
                kind: OperationKind::Import,
                time: now,
                summary: format!(
                    "vault import: {} pages changed in the vault",
                    edits.len() + deleted.len()
                ),
                pages: vec![],
                sources: vec![],
                usage: TokenUsage::default(),
                rolled_back_by: None,
            };
            for (mut page, recorded) in edits {
                if recorded.is_none() {
                    page.created = now;
                }
                page.revision += 1;
                page.updated = now;
                op.pages.push(page.key.clone());
                report.edited_pages.push(page.key.clone());
                batch.put(
                    Store::Revisions,
                    revision_key(&page.key, page.revision),
                    to_json(&Revision {
                        page: page.key.clone(),
                        number: page.revision,
                        author: Author::Human,
                        op: op.id,
                        time: now,
                        page_state: Some(page.clone()),
                    }),
                    Expect::Any,
                );
                final_pages.push(page);
            }
            for gone in deleted {
                op.pages.push(gone.key.clone());
                report.edited_pages.push(gone.key.clone());
                batch.put(
                    Store::Revisions,
                    revision_key(&gone.key, gone.revision + 1),
                    to_json(&Revision {
                        page: gone.key.clone(),
                        number: gone.revision + 1,
                        author: Author::Human,
                        op: op.id,
                        time: now,
                        page_state: None,
                    }),
                    Expect::Any,
                );
            }
            crate::util::sort_by(&mut final_pages, &|a, b| a.key.cmp(&b.key));
            let mut text = log.take().unwrap_or_else(documents::empty_log);
            text.push_str(&documents::log_entry(&op));
            log = Some(text);
            index = Some(documents::render_index(&final_pages));
            batch.put(
                Store::Operations,
                operation_key(op.id),
                to_json(&op),
                Expect::Absent,
            );
            report.op = Some(op.id);
        }
        for p in &final_pages {
            batch.put(Store::Pages, p.key.clone(), to_json(p), Expect::Absent);
        }
        if let Some(log) = log {
            batch.put(Store::Documents, LOG_MD, log.into_bytes(), Expect::Any);
        }
        if let Some(index) = index {
            batch.put(Store::Documents, INDEX_MD, index.into_bytes(), Expect::Any);
        }
        let ops_rev = self
            .storage
            .get(Store::Meta, META_OPS)
            .await?
            .map(|r| r.rev);
        batch.put(
            Store::Meta,
            META_OPS,
            to_json(&serde_json::json!({ "last": counter })),
            Expect::from_read(ops_rev),
        );
        self.storage.commit(batch).await?;
        Ok(report)
    }

    async fn import_obsidian(
        &self,
        files: BTreeMap<String, Vec<u8>>,
        options: &ImportOptions,
    ) -> Result<ImportReport> {
        let mut report = ImportReport {
            kind: Some(VaultKind::Obsidian),
            ..Default::default()
        };
        let mut ob = self.begin(OperationKind::Import, String::new()).await?;
        let op = ob.op.id;
        let now = ob.op.time;
        let mut assets = self.assets().await?;
        let mut written_assets = 0;
        let mut moves: Vec<(String, String)> = Vec::new();
        // Our layout without `.llm-wiki/` (a vault of ours zipped by hand).
        let ours = files.keys().any(|p| {
            p.strip_prefix("wiki/")
                .and_then(|r| r.split_once('/'))
                .is_some_and(|(kind, _)| PageKind::parse(kind).is_some())
        });
        for (path, data) in &files {
            if path
                .split('/')
                .any(|c| c.starts_with('.') || c == "__MACOSX")
            {
                report.skipped.push(format!("{path}: hidden"));
                continue;
            }
            let lower = path.to_ascii_lowercase();
            if lower.ends_with(".md") || lower.ends_with(".markdown") {
                let Ok(raw) = std::str::from_utf8(data) else {
                    report.skipped.push(format!("{path}: not UTF-8 text"));
                    continue;
                };
                if is_app_document(path, raw, ours) {
                    report.skipped.push(format!(
                        "{path}: written by llm-wiki (its index, log or schema), not a note"
                    ));
                    continue;
                }
                let text = normalize_source_text(raw);
                if text.trim().is_empty() {
                    report.skipped.push(format!("{path}: empty"));
                    continue;
                }
                let mut title = note_title(path, &text);
                if obsidian::is_drawing(path, &text) {
                    // `Drawing 2024.excalidraw.md` is the drawing "Drawing 2024".
                    if let Some(stem) = title.strip_suffix(".excalidraw") {
                        title = stem.to_string();
                    }
                }
                let mut original = None;
                let text = match obsidian::classify(path, &title, &text) {
                    NoteShape::Prose => text,
                    NoteShape::Template { .. } if options.templates == TemplateNotes::Import => {
                        text
                    }
                    NoteShape::Template { marker } => {
                        report
                            .skipped
                            .push(format!("{path}: a template (it holds {marker})"));
                        continue;
                    }
                    NoteShape::Drawing { text: None } => {
                        report
                            .skipped
                            .push(format!("{path}: an Excalidraw drawing with no text"));
                        continue;
                    }
                    NoteShape::Drawing {
                        text: Some(elements),
                    } => {
                        // The drawing stays whole as the source's original; only its text
                        // elements are the source's text.
                        let sha = sha256_hex(data);
                        ob.batch.put(
                            Store::Raw,
                            format!("original/{sha}"),
                            data.clone(),
                            Expect::Any,
                        );
                        original = Some(Artifact {
                            mime: "text/markdown".into(),
                            sha256: sha,
                            bytes: data.len() as u64,
                        });
                        normalize_source_text(&elements)
                    }
                };
                let version = sha256_hex(text.as_bytes());
                let found = self.find_source(path).await?;
                // A source stored earlier under the NFD form of this path moves to the path.
                let moved_from = found
                    .as_ref()
                    .map(|(_, _, k)| k.clone())
                    .filter(|k| k != path);
                let existing = found.map(|(s, rev, _)| (s, rev));
                if let (Some(old), Some((s, rev))) = (&moved_from, &existing) {
                    ob.batch
                        .delete(Store::Sources, old.clone(), Expect::Rev(*rev));
                    moves.push((old.clone(), path.clone()));
                    ob.op.sources.push(old.clone());
                    if !s.version.is_empty() && s.version == version {
                        let moved = Source {
                            key: path.clone(),
                            ..s.clone()
                        };
                        ob.batch.put(
                            Store::Sources,
                            path.clone(),
                            to_json(&moved),
                            Expect::Absent,
                        );
                        ob.op.sources.push(path.clone());
                        report.sources_unchanged.push(path.clone());
                        continue;
                    }
                }
                if let Some((s, _)) = &existing {
                    if !s.version.is_empty() && s.version == version {
                        report.sources_unchanged.push(path.clone());
                        continue;
                    }
                }
                ob.batch.put(
                    Store::Raw,
                    format!("text/{version}"),
                    text.clone().into_bytes(),
                    Expect::Any,
                );
                let (previous_versions, rev) = match &existing {
                    Some((s, rev)) => {
                        let mut pv = s.previous_versions.clone();
                        if !s.version.is_empty() {
                            pv.push(s.version.clone());
                        }
                        report.sources_corrected.push(path.clone());
                        (pv, Some(*rev))
                    }
                    None => {
                        report.sources_added.push(path.clone());
                        (vec![], None)
                    }
                };
                let source = Source {
                    key: path.clone(),
                    version,
                    title,
                    url: None,
                    mime: "text/markdown".into(),
                    captured_at: None,
                    added_at: now,
                    op,
                    text_bytes: text.len() as u64,
                    original,
                    previous_versions,
                    status: SourceStatus::Pending,
                    summary_page: None,
                    parts: vec![],
                };
                let expect = if moved_from.is_some() {
                    Expect::Absent
                } else {
                    Expect::from_read(rev)
                };
                ob.batch
                    .put(Store::Sources, path.clone(), to_json(&source), expect);
                ob.op.sources.push(path.clone());
            } else {
                let name = path.rsplit('/').next().unwrap_or(path);
                let (asset, new) = plan_asset(&assets, name, &mime_for(name), data, op);
                if new {
                    put_asset(&mut ob.batch, &asset, data);
                    assets.push(asset.clone());
                    written_assets += 1;
                }
                report.assets.push(asset.name);
            }
        }
        if ob.op.sources.is_empty() && written_assets == 0 {
            return Ok(report);
        }
        self.rekey_source_references(&mut ob, &moves).await?;
        ob.op.summary = format!(
            "vault import: {} notes added, {} corrected, {} unchanged; {} attachments",
            report.sources_added.len(),
            report.sources_corrected.len(),
            report.sources_unchanged.len(),
            report.assets.len()
        );
        let op = self.finish(ob).await?;
        report.op = Some(op.id);
        Ok(report)
    }
}

/// One JSON value and a newline (compact: the same serializer the stores use, so no second,
/// pretty-printing copy of every `Serialize` impl lands in the wasm).
fn json_one<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = to_json(v);
    out.push(b'\n');
    out
}

/// A JSON array with one record per line (readable, and diffs record by record).
fn json_array<T: Serialize>(items: &[T]) -> Vec<u8> {
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
fn vault_json_error(path: &str, shape_name: &str, e: &serde_json::Error) -> Error {
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
fn json_map(map: &BTreeMap<String, Value>) -> Vec<u8> {
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

/// `base` with the fields a page file carries (kind from its folder; title, aliases, tags,
/// summary, sources, unknown fields and body from the file).
fn page_from_file(base: &Page, kind: PageKind, text: &str) -> Page {
    let mut p = base.clone();
    p.kind = kind;
    let (fm, body) = match parse_page_file(text) {
        Ok((fm, body)) => (fm, body.to_string()),
        Err(_) => {
            let c = clean_page(text, CleanOptions::HUMAN);
            (c.frontmatter.unwrap_or_default(), c.body)
        }
    };
    p.title = fm.title.unwrap_or_else(|| base.title.clone());
    p.aliases = fm.aliases.unwrap_or_default();
    p.tags = fm.tags.unwrap_or_default();
    p.summary = fm.summary.unwrap_or_default();
    p.sources = fm.sources.unwrap_or_default();
    p.extra_frontmatter = fm.extra;
    p.body = body;
    p
}

/// A note's title: its frontmatter `title`, else its file name without `.md`.
fn note_title(path: &str, text: &str) -> String {
    let from_fm = crate::markdown::frontmatter::split(text)
        .and_then(|(yaml, _)| crate::markdown::frontmatter::parse_yaml_lenient(yaml).ok())
        .and_then(|(fm, _)| fm.title);
    from_fm.unwrap_or_else(|| {
        let file = path.rsplit('/').next().unwrap_or(path);
        let stem = file
            .strip_suffix(".md")
            .or_else(|| file.strip_suffix(".markdown"))
            .or_else(|| file.strip_suffix(".MD"))
            .unwrap_or(file);
        stem.to_string()
    })
}

/// Decides the record for an attachment: the existing one (same name, same bytes), or a new one
/// with a free name. Returns it and whether it is new.
fn plan_asset(existing: &[Asset], name: &str, mime: &str, bytes: &[u8], op: OpId) -> (Asset, bool) {
    let sha = sha256_hex(bytes);
    let base = asset_name(name);
    let folded = fold_name(&base);
    if let Some(a) = existing.iter().find(|a| fold_name(&a.name) == folded) {
        if a.sha256 == sha {
            return (a.clone(), false);
        }
    }
    let taken: BTreeSet<String> =
        crate::util::btree_set(existing.iter().map(|a| fold_name(&a.name)));
    let name = if taken.contains(&folded) {
        let (stem, ext) = match base.rsplit_once('.') {
            Some((s, e)) if !s.is_empty() => (s.to_string(), format!(".{e}")),
            _ => (base.clone(), String::new()),
        };
        (0u32..)
            .map(|n| {
                let suffix = if n == 0 {
                    format!(" ~{}", &sha[..6])
                } else {
                    format!(" ~{}-{n}", &sha[..6])
                };
                legacy_page_key(&format!("{stem}{suffix}{ext}"))
            })
            .find(|c| !taken.contains(&fold_name(c)))
            .unwrap_or(base)
    } else {
        base
    };
    let mime = if mime.trim().is_empty() {
        mime_for(&name)
    } else {
        mime.trim().to_ascii_lowercase()
    };
    (
        Asset {
            name,
            mime,
            sha256: sha,
            bytes: bytes.len() as u64,
            op,
        },
        true,
    )
}

fn put_asset(batch: &mut Batch, asset: &Asset, bytes: &[u8]) {
    batch.put(
        Store::Raw,
        format!("assets/{}", asset.sha256),
        bytes.to_vec(),
        Expect::Any,
    );
    batch.put(
        Store::Meta,
        format!("{ASSET_PREFIX}{}", asset.name),
        to_json(asset),
        Expect::Absent,
    );
}

/// Whether the note at `path` is one of the app's own documents (index.md, log.md, schema.md at
/// the vault root) rather than a person's note: it carries the mark the app writes into index.md
/// and log.md, or the vault has the app's layout (`ours`: `wiki/<kind>/` folders). Such a file
/// never becomes a source, so no page cites the app's own catalog (field case F46).
fn is_app_document(path: &str, text: &str, ours: bool) -> bool {
    let name = path.to_ascii_lowercase();
    if ![INDEX_MD, LOG_MD, SCHEMA_MD].contains(&name.as_str()) {
        return false;
    }
    ours || text.contains("Generated by llm-wiki") || text.contains("written by llm-wiki")
}

/// An attachment's stored name: the last path segment, made portable like a page key was before
/// stand-ins ([`legacy_page_key`]: illegal characters become spaces), so the names of stored
/// attachments do not change.
pub fn asset_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let key = legacy_page_key(base);
    if key == "untitled" && !base.contains("untitled") {
        "attachment".into()
    } else {
        key
    }
}

/// A MIME type from a file name's extension (`application/octet-stream` when unknown).
pub fn mime_for(name: &str) -> String {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "bmp" => "image/bmp",
        "avif" => "image/avif",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "m4a" => "audio/mp4",
        "flac" => "audio/flac",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mov" => "video/quicktime",
        "csv" => "text/csv",
        "txt" => "text/plain",
        "json" | "canvas" => "application/json",
        "html" | "htm" => "text/html",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
    .to_string()
}

fn extension_for(mime: &str) -> &'static str {
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

/// A zip path without `..`, absolute roots, drive letters or backslashes; `None` when unsafe.
fn safe_path(name: &str) -> Option<String> {
    let name = name.replace('\\', "/");
    if name.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for (i, c) in name.split('/').enumerate() {
        match c {
            "" | "." => {}
            ".." => return None,
            c if i == 0 && c.ends_with(':') => return None,
            c if c.chars().any(|ch| ch.is_control()) => return None,
            c => parts.push(c),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Writes `files` (path → bytes, in path order) as a zip with fixed metadata.
fn write_zip(files: &BTreeMap<String, Vec<u8>>) -> Result<Vec<u8>> {
    use zip::write::SimpleFileOptions;
    let zip_err = |e: zip::result::ZipError| Error::Storage(format!("zip: {e}"));
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(6))
        .last_modified_time(zip::DateTime::default())
        .unix_permissions(0o644);
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (path, data) in files {
        w.start_file(path.as_str(), options).map_err(zip_err)?;
        w.write_all(data)
            .map_err(|e| Error::Storage(format!("zip: {e}")))?;
    }
    Ok(w.finish().map_err(zip_err)?.into_inner())
}

/// Reads every file of a zip (path → bytes), with limits, safe paths in Unicode NFC, and a
/// folder that wraps the whole vault removed. Two entries whose names are one in NFC are an
/// [`Error::InvalidInput`].
fn read_zip(bytes: &[u8]) -> Result<BTreeMap<String, Vec<u8>>> {
    let bad = |m: String| Error::InvalidInput(format!("vault zip: {m}"));
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| bad(e.to_string()))?;
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).map_err(|e| bad(e.to_string()))?;
        if f.is_dir() {
            continue;
        }
        let Some(path) = safe_path(f.name()) else {
            return Err(bad(format!("unsafe path {:?}", f.name())));
        };
        // Paths (and so source keys and page file names) in NFC: macOS writes NFD names.
        let path: String =
            unicode_normalization::UnicodeNormalization::nfc(path.as_str()).collect();
        if files.contains_key(&path) {
            return Err(bad(format!(
                "two entries are named {path:?} (one in another Unicode form)"
            )));
        }
        if f.size() > MAX_ENTRY_BYTES {
            return Err(bad(format!(
                "{path} is larger than {MAX_ENTRY_BYTES} bytes"
            )));
        }
        let mut data = Vec::with_capacity(f.size() as usize);
        (&mut f)
            .take(MAX_ENTRY_BYTES + 1)
            .read_to_end(&mut data)
            .map_err(|e| bad(format!("{path}: {e}")))?;
        total += data.len() as u64;
        if data.len() as u64 > MAX_ENTRY_BYTES || total > MAX_TOTAL_BYTES {
            return Err(bad(
                "the vault is larger than the import limit (1 GiB)".into()
            ));
        }
        files.insert(path, data);
    }
    // A single folder wrapping a vault (`MyVault/.obsidian`, `export/.llm-wiki/vault.json`).
    let root = files
        .keys()
        .next()
        .and_then(|p| p.split_once('/'))
        .map(|(r, _)| r.to_string());
    if let Some(root) = root {
        let prefix = format!("{root}/");
        let wraps = files.keys().all(|p| p.starts_with(&prefix))
            && files.keys().any(|p| {
                p.starts_with(&format!("{prefix}.llm-wiki/"))
                    || p.starts_with(&format!("{prefix}.obsidian/"))
            });
        if wraps {
            files = crate::util::btree_map(
                files
                    .into_iter()
                    .map(|(p, d)| (p[prefix.len()..].to_string(), d)),
            );
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `.llm-wiki/*.json` files are read straight into their types; errors keep the wording of
    /// parsing into a `Value` first and converting second. (A file with both a shape error and a
    /// later syntax error now reports the shape error.)
    #[test]
    fn vault_json_errors_keep_their_wording() {
        let two_step = |bytes: &[u8], name: &str| -> String {
            let path = format!(".llm-wiki/{name}");
            match serde_json::from_slice::<Value>(bytes) {
                Err(e) => format!("vault: {path}: {e}"),
                Ok(v) => match serde_json::from_value::<Vec<Page>>(v) {
                    Err(e) => format!("vault: {name}: {e}"),
                    Ok(_) => "ok".into(),
                },
            }
        };
        for bytes in [
            &br#"[{"key": 5}]"#[..],
            br#"[{"key": "a", "title": "A"}]"#,
            br#"{"key": "a"}"#,
            br#"[{"key": "a", "kind": "nope"}]"#,
            b"[\n{\"key\": ",
            b"[",
            b"[] x",
        ] {
            let e = serde_json::from_slice::<Option<Vec<Page>>>(bytes).unwrap_err();
            assert_eq!(
                vault_json_error(".llm-wiki/pages.json", "pages.json", &e).to_string(),
                Error::InvalidInput(two_step(bytes, "pages.json")).to_string(),
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn zip_paths_are_checked() {
        assert_eq!(safe_path("a/./b//c.md").as_deref(), Some("a/b/c.md"));
        assert_eq!(safe_path("a\\b.md").as_deref(), Some("a/b.md"));
        for bad in ["../x", "a/../../x", "/etc/passwd", "C:/x", "a/\u{0}b", ""] {
            assert_eq!(safe_path(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn zips_are_deterministic_and_read_back() {
        let files: BTreeMap<String, Vec<u8>> = [
            ("b.md".to_string(), b"# B\n".to_vec()),
            ("a/人工智能.md".to_string(), "内容".as_bytes().to_vec()),
        ]
        .into();
        let z1 = write_zip(&files).unwrap();
        assert_eq!(write_zip(&files).unwrap(), z1);
        assert_eq!(read_zip(&z1).unwrap(), files);
        assert!(matches!(
            read_zip(b"not a zip"),
            Err(Error::InvalidInput(_))
        ));
    }

    #[test]
    fn wrapping_folders_are_removed_only_around_a_vault() {
        let wrapped: BTreeMap<String, Vec<u8>> = [
            ("MyVault/.obsidian/app.json".to_string(), b"{}".to_vec()),
            ("MyVault/Notes.md".to_string(), b"x".to_vec()),
        ]
        .into();
        let read = read_zip(&write_zip(&wrapped).unwrap()).unwrap();
        assert_eq!(
            read.keys().collect::<Vec<_>>(),
            vec![".obsidian/app.json", "Notes.md"]
        );
        let folder: BTreeMap<String, Vec<u8>> = [
            ("notes/a.md".to_string(), b"x".to_vec()),
            ("notes/b.md".to_string(), b"y".to_vec()),
        ]
        .into();
        let read = read_zip(&write_zip(&folder).unwrap()).unwrap();
        assert_eq!(
            read.keys().collect::<Vec<_>>(),
            vec!["notes/a.md", "notes/b.md"]
        );
    }

    #[test]
    fn attachment_names() {
        let a = |name: &str, sha: &str| Asset {
            name: name.into(),
            mime: "image/png".into(),
            sha256: sha.into(),
            bytes: 1,
            op: 1,
        };
        let existing = vec![a("diagram.png", &sha256_hex(b"one"))];
        let (same, new) = plan_asset(&existing, "Diagram.PNG", "", b"one", 2);
        assert!(!new);
        assert_eq!(same.name, "diagram.png");
        let (other, new) = plan_asset(&existing, "img/diagram.png", "image/png", b"two", 2);
        assert!(new);
        assert_eq!(
            other.name,
            format!("diagram ~{}.png", &sha256_hex(b"two")[..6])
        );
        assert_eq!(asset_name("C:\\clips\\a:b?.jpg"), "a b .jpg");
        assert_eq!(mime_for("x.JPEG"), "image/jpeg");
    }
}
