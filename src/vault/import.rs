//! Import: a vault of ours restored exactly into an empty wiki (with the edits made in
//! Obsidian since the export as one `import` operation), or a plain Obsidian vault brought in
//! as sources and attachments in one operation.
//!
//! *Invariant:* export → import → export gives the same bytes; an import never reads a file
//! outside the zip's safe paths ([`super::zip::read_zip`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{ImportOptions, ImportReport, VaultKind};
use crate::clock::Clock;
use crate::documents::{self, INDEX_MD, LOG_MD};
use crate::error::{Error, Result};
use crate::markdown::keys::{fold_key, page_key, unique_key};
use crate::markdown::page::page_file;
use crate::model::{Author, Operation, OperationKind, Page, PageKind, Revision, TokenUsage};
use crate::records::{
    operation_key, revision_key, to_json, undo_key, MetaRecord, META_CONFIG, META_OPS,
};
use crate::storage::{Batch, Expect, Storage, Store};
use crate::text::sha256_hex;
use crate::vault_files::notes::{page_from_file, put_asset};
use crate::vault_files::ops::settle_unfinished_run;
use crate::vault_files::read::{bad, read_manifest, read_our_vault, OurVault};
use crate::vault_files::zip::read_zip;
use crate::wiki::Wiki;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// `edits`: whether page files changed since the vault was written become an `import`
    /// operation of human revisions (a zip), or are left for the mirror's pull to read (a
    /// folder this wiki joins: an operation here would have no undo record, and the pull
    /// makes one with).
    async fn import_ours(
        &self,
        mut files: BTreeMap<String, Vec<u8>>,
        take_edits: bool,
    ) -> Result<ImportReport> {
        let manifest = read_manifest(&files)?;
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
        let vault = read_our_vault(&files, manifest)?;
        let settled = settle_unfinished_run(&vault, &mut files)?;
        let mut batch = Batch::new();
        let mut report = ImportReport {
            kind: Some(VaultKind::LlmWiki),
            ..Default::default()
        };
        for path in vault.unfinished.iter().chain(&settled) {
            report.skipped.push(format!(
                "{path}: written by a mirror run that did not finish"
            ));
        }
        put_our_records(&mut batch, &files, &vault, &mut report)?;
        // This wiki numbers its operations in its device's slot (Decision 7; 0 unless it is
        // joining a folder another device keeps): after the vault's last one there, whichever
        // devices made the others.
        let slot = self.device_slot().await?;
        let last_op = std::iter::once(vault.manifest.last_op)
            .chain(vault.operations.iter().map(|o| o.id))
            .filter(|id| crate::model::op_slot(*id) == slot)
            .max()
            .unwrap_or(crate::model::op_id(slot, 0))
            .max(crate::model::op_id(slot, 0));
        // Operations made here later order after those of the other devices (Decision 7).
        let last_time = vault
            .operations
            .iter()
            .filter(|o| crate::model::op_slot(o.id) != slot)
            .map(|o| o.time)
            .max()
            .unwrap_or(0);
        // What an operation made here sees of the other devices': the vault's.
        let mut seen = Vec::new();
        for o in vault
            .operations
            .iter()
            .filter(|o| crate::model::op_slot(o.id) != slot)
        {
            crate::model::note_seen(&mut seen, o.id);
        }
        let PageChanges {
            mut final_pages,
            mut edits,
            mut deleted,
        } = our_page_changes(&files, &vault, &mut report);
        if !take_edits {
            final_pages.extend(edits.drain(..).filter_map(|(_, recorded)| recorded));
            final_pages.append(&mut deleted);
            report.edited_pages.clear();
        }
        report.pages = (final_pages.len() + edits.len()) as u64;
        let mut counter = last_op;
        let mut log = files
            .get(LOG_MD)
            .map(|b| String::from_utf8_lossy(b).into_owned());
        let mut index = None;
        if !edits.is_empty() || !deleted.is_empty() {
            let now = match last_time {
                0 => self.clock.now_ms(),
                t => self.clock.now_ms().max(t + 1),
            };
            counter += 1;
            let mut op = put_vault_edits(
                &mut batch,
                VaultEdits {
                    id: counter,
                    now,
                    edits,
                    deleted,
                },
                &mut final_pages,
                &mut report,
            );
            op.seen = Some(seen.clone());
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
            to_json(&crate::records::OpsCounter {
                last: counter,
                time: last_time,
                seen: Some(seen),
            }),
            Expect::from_read(ops_rev),
        );
        self.storage.commit(batch).await?;
        Ok(report)
    }

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

    /// Imports the mirror another device keeps in `folder`/`root` (a vault of ours in the folder
    /// layout, as [`Wiki::import_vault`] restores a zip of it): the step of joining that folder
    /// before this wiki mirrors into it too. The wiki must be empty. Reads every file under
    /// `root` once.
    ///
    /// Errors: [`Error::InvalidInput`] when `root` holds no mirror of ours, or as
    /// [`Wiki::import_vault`]; [`Error::Folder`] when a file cannot be listed or read.
    pub async fn import_folder<F: crate::folder::Folder>(
        &self,
        folder: &F,
        root: &str,
    ) -> Result<ImportReport> {
        let prefix = format!("{root}/");
        let mut files = BTreeMap::new();
        for e in folder.list(root).await? {
            let Some(path) = e.path.strip_prefix(&prefix) else {
                continue;
            };
            if e.size > crate::vault_files::MAX_ENTRY_BYTES {
                return Err(bad(format!("{path} is larger than the vault allows")));
            }
            if let Some(b) = folder.read(&e.path).await? {
                files.insert(path.to_string(), b);
            }
        }
        if !files.contains_key(crate::vault_files::MANIFEST_PATH) {
            return Err(Error::InvalidInput(format!(
                "{root}/ holds no wiki mirrored by llm-wiki (no {})",
                crate::vault_files::MANIFEST_PATH
            )));
        }
        self.import_ours(files, false).await
    }

    /// [`Wiki::import_vault`] with options (they apply to a plain Obsidian vault).
    pub async fn import_vault_with(
        &self,
        bytes: &[u8],
        options: &ImportOptions,
    ) -> Result<ImportReport> {
        let files = read_zip(bytes)?;
        if files.contains_key(".llm-wiki/vault.json") {
            self.import_ours(files, true).await
        } else {
            self.import_obsidian(files, options).await
        }
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
        // Our layout without `.llm-wiki/` (a vault of ours zipped by hand).
        let ours = files.keys().any(|p| {
            p.strip_prefix("wiki/")
                .and_then(|r| r.split_once('/'))
                .is_some_and(|(kind, _)| PageKind::parse(kind).is_some())
        });
        let came = self
            .put_vault_files(
                &mut ob,
                files.iter().map(|(p, d)| (p.as_str(), d.as_slice())),
                ours,
                options.templates,
            )
            .await?;
        report.sources_added = came.added;
        report.sources_corrected = came.corrected;
        report.sources_unchanged = came.unchanged;
        report.assets = came.assets;
        report.skipped = came.skipped;
        if !came.wrote {
            return Ok(report);
        }
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

/// Adds every record of a vault of ours but the pages to `batch`: documents, raw texts and
/// originals (checked against their hashes), sources, attachments, revisions, operations,
/// claims, the ledger, meta records, undo records and the configuration.
fn put_our_records(
    batch: &mut Batch,
    files: &BTreeMap<String, Vec<u8>>,
    vault: &OurVault,
    report: &mut ImportReport,
) -> Result<()> {
    let OurVault {
        manifest,
        sources,
        revisions,
        operations,
        assets,
        claims,
        ledger,
        meta,
        undo,
        config,
        ..
    } = vault;
    // Documents.
    for name in &manifest.documents {
        let data = files
            .get(name)
            .ok_or_else(|| bad(format!("{name} is listed but missing")))?;
        batch.put(Store::Documents, name.clone(), data.clone(), Expect::Any);
    }
    // Raw texts and originals, checked against their hashes.
    for (path, data) in files {
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
    for s in sources {
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
    for a in assets {
        let data = files
            .get(&a.path())
            .ok_or_else(|| bad(format!("{} is missing", a.path())))?;
        if sha256_hex(data) != a.sha256 {
            return Err(bad(format!("{} does not match its SHA-256", a.path())));
        }
        put_asset(batch, a, data);
        report.assets.push(a.name.clone());
    }
    // Two devices' revisions of one number: one keeps the key, the other is displaced.
    let order = crate::model::op_orders(operations.iter());
    for (r, key) in revisions
        .iter()
        .zip(crate::records::revision_keys(revisions, &order))
    {
        batch.put(Store::Revisions, key, to_json(r), Expect::Any);
    }
    for o in operations {
        batch.put(
            Store::Operations,
            operation_key(o.id),
            to_json(o),
            Expect::Any,
        );
    }
    for (store, map) in [
        (Store::Claims, claims),
        (Store::Ledger, ledger),
        (Store::Meta, meta),
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
    for u in undo {
        batch.put(Store::Meta, undo_key(u.op), to_json(u), Expect::Any);
    }
    if !config.is_null() {
        batch.put(Store::Meta, META_CONFIG, to_json(&config), Expect::Any);
    }
    Ok(())
}

/// What the page files of a vault of ours say against its recorded pages.
struct PageChanges {
    /// Pages whose file matches the recorded state (restored as they were).
    final_pages: Vec<Page>,
    /// Pages edited (with their recorded state) or added (`None`) in the vault.
    edits: Vec<(Page, Option<Page>)>,
    /// Recorded pages whose file is gone.
    deleted: Vec<Page>,
}

/// Compares the `wiki/<kind>/<key>.md` files with the recorded pages: differences from the
/// recorded state are edits made in the vault. Files that are not page files are skipped (and
/// reported).
fn our_page_changes(
    files: &BTreeMap<String, Vec<u8>>,
    vault: &OurVault,
    report: &mut ImportReport,
) -> PageChanges {
    let (records, revisions) = (&vault.records, &vault.revisions);
    // Pages: the record, with the body of its .md file; differences from the recorded state
    // are edits made in the vault.
    let mut md: BTreeMap<String, (PageKind, &str)> = BTreeMap::new();
    for (path, data) in files {
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
    for r in revisions {
        let m = max_rev.entry(r.page.as_str()).or_insert(0);
        *m = (*m).max(r.number);
    }
    let mut final_pages = Vec::new();
    let mut edits: Vec<(Page, Option<Page>)> = Vec::new(); // (new state, recorded state)
    let mut deleted: Vec<Page> = Vec::new();
    for rec in records {
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
        let mut blank = Page::blank(&k, &key, kind, 0);
        blank.revision = max_rev.get(k.as_str()).copied().unwrap_or(0);
        edits.push((page_from_file(&blank, kind, text), None));
    }
    PageChanges {
        final_pages,
        edits,
        deleted,
    }
}

/// The `import` operation of the pages changed in a vault: its id and time, and the pages.
struct VaultEdits {
    id: u64,
    now: i64,
    edits: Vec<(Page, Option<Page>)>,
    deleted: Vec<Page>,
}

/// Adds the human revision of each page edited, added or deleted in the vault to `batch`, and
/// returns their `import` operation; the edited and added pages join `final_pages`.
fn put_vault_edits(
    batch: &mut Batch,
    e: VaultEdits,
    final_pages: &mut Vec<Page>,
    report: &mut ImportReport,
) -> Operation {
    let VaultEdits {
        id,
        now,
        edits,
        deleted,
    } = e;
    let mut op = Operation {
        id,
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
        seen: Some(vec![]),
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
    op
}
