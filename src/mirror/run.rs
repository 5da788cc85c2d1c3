//! A mirror run: the whole wiki (first run), or the operations since the last run; both write
//! the run's plan first to the state as pending, then the files, then the commit mark.

use std::collections::BTreeMap;

use super::plan::{Plan, Touched};
use super::pull::page_of_path;
use super::{MirrorReport, MirrorState};
use crate::clock::Clock;
use crate::documents::{INDEX_MD, LOG_MD};
use crate::error::{Error, Result};
use crate::folder::Folder;
use crate::model::{OpId, Operation, OperationKind, Store};
use crate::records::undo::UndoRecord;
use crate::records::{from_json, operation_key, portable_meta_value, undo_key, META_CONFIG};
use crate::storage::Storage;
use crate::text::sha256_hex;
use crate::vault_files::json::json_one;
use crate::vault_files::ops::{
    op_path, ops_dir, run_path, settings_path, OpFile, RunFile, SettingsFile, LEGACY_OPS_DIR,
};
use crate::vault_files::{Layout, VaultManifest, FOLDER_VERSION, MANIFEST_PATH};
use crate::wiki::Wiki;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The first run (or one that cannot tell what an operation changed): every file of the
    /// wiki in the folder layout as of operation `last`, written where its bytes differ; the
    /// files the mirror kept that the wiki no longer has and every operation file removed; the
    /// manifest last.
    pub(super) async fn mirror_whole<F: Folder>(
        &self,
        folder: &F,
        state: MirrorState,
        rev: Option<u64>,
        last: OpId,
    ) -> Result<MirrorReport> {
        // A first run goes into an empty folder (checked by the caller): nothing to read first.
        let check = !state.files.is_empty();
        let mut files = self.vault_snapshot(Layout::Folder).await?;
        // The manifest is the whole run's commit mark: written last.
        let manifest = files.remove(MANIFEST_PATH).unwrap_or_default();
        // Settings are per device (Decision 10): this device's file, not a shared one.
        files.remove(".llm-wiki/config.json");
        let time = self
            .operations()
            .await?
            .iter()
            .filter(|o| matches!(o.kind, OperationKind::Settings | OperationKind::Import))
            .map(|o| o.time)
            .max()
            .unwrap_or(0);
        files.insert(
            settings_path(&state.device),
            self.settings_file(time).await?,
        );
        let mut plan: Plan = files.into_iter().map(|(p, b)| (p, Some(b))).collect();
        for old in state.files.keys() {
            plan.entry(old.clone()).or_insert(None);
        }
        let root = state.root.clone();
        // This device's own files stay (its slot, its conflicts).
        let slot = self.device_slot().await?;
        if slot != 0 {
            let file = crate::vault_files::ops::DeviceFile {
                id: state.device.clone(),
                slot,
            };
            plan.insert(
                crate::vault_files::ops::device_file_path(&state.device),
                Some(json_one(&file)),
            );
        }
        if let Some((path, bytes)) = super::devices::conflicts_file(&state) {
            plan.insert(path, Some(bytes));
        }
        // This device's operation files, and those of a folder from before device folders:
        // the arrays now hold them. Not when other devices read the folder: they merge
        // operation files, not the arrays.
        let others = others_keep(folder, &state).await?;
        for dir in [ops_dir(&state.device), LEGACY_OPS_DIR.to_string()] {
            if others {
                break;
            }
            for e in folder.list(&format!("{root}/{dir}")).await? {
                let path = e.path[root.len() + 1..].to_string();
                plan.insert(path, None);
            }
        }
        let run = Run {
            plan,
            marks: vec![(MANIFEST_PATH.to_string(), manifest)],
            check,
            whole: true,
            last,
        };
        self.mirror_apply(folder, state, rev, run).await
    }

    /// A run over operations `state.synced + 1 ..= last`, from their undo records; without one
    /// of them, [`Wiki::mirror_whole`].
    pub(super) async fn mirror_since<F: Folder>(
        &self,
        folder: &F,
        state: MirrorState,
        rev: Option<u64>,
        last: OpId,
    ) -> Result<MirrorReport> {
        let ids: Vec<OpId> = (state.synced + 1..=last).collect();
        let keys: Vec<String> = ids.iter().map(|id| undo_key(*id)).collect();
        let mut undo: Vec<UndoRecord> = Vec::new();
        for (k, r) in keys
            .iter()
            .zip(self.storage.get_many(Store::Meta, &keys).await?)
        {
            let u: Option<UndoRecord> =
                r.map(|r| from_json(Store::Meta, k, &r.data)).transpose()?;
            match u {
                // Without one (an import), or written by an older build (which revisions it
                // wrote is unknown): what the operation changed cannot be told.
                Some(u) if u.revisions.is_some() => undo.push(u),
                _ => return self.mirror_whole(folder, state, rev, last).await,
            }
        }
        let op_keys: Vec<String> = ids.iter().map(|id| operation_key(*id)).collect();
        let mut operations: Vec<Operation> = Vec::new();
        for (k, r) in op_keys
            .iter()
            .zip(self.storage.get_many(Store::Operations, &op_keys).await?)
        {
            let r = r.ok_or_else(|| Error::Corrupt {
                store: Store::Operations,
                key: k.clone(),
                message: "an operation with an undo record has no record".into(),
            })?;
            operations.push(from_json(Store::Operations, k, &r.data)?);
        }
        let mut touched: Touched = undo
            .iter()
            .flat_map(|u| {
                let revisions = u.revisions.iter().flatten();
                u.entries
                    .iter()
                    .map(|e| (e.store, e.key.clone()))
                    .chain(revisions.map(|k| (Store::Revisions, k.clone())))
            })
            .collect();
        touched.extend(self.displaced_revisions(&undo).await?);
        // Their records are in this run's operation files; the pages other devices' operations
        // changed here are not, but their files are written as this wiki holds them.
        let records = Some(self.records_after(&touched).await?);
        touched.extend(state.dirty.iter().map(|k| (Store::Pages, k.clone())));
        let mut plan = self.touched_files(&touched, &state.files).await?;
        let config = (Store::Meta, META_CONFIG.to_string());
        if touched.contains(&config) {
            let time = operations
                .iter()
                .zip(&undo)
                .filter(|(_, u)| {
                    u.entries
                        .iter()
                        .any(|e| (e.store, &e.key) == (config.0, &config.1))
                })
                .map(|(o, _)| o.time)
                .max()
                .unwrap_or(0);
            plan.insert(
                settings_path(&state.device),
                Some(self.settings_file(time).await?),
            );
        }
        if state.version < FOLDER_VERSION {
            // A folder from before device folders: its manifest says a version whose readers
            // would not look in them.
            if let Some(b) = folder
                .read(&format!("{}/{MANIFEST_PATH}", state.root))
                .await?
            {
                let mut m: VaultManifest = serde_json::from_slice(&b).map_err(|e| {
                    Error::InvalidInput(format!("{}/{MANIFEST_PATH}: {e}", state.root))
                })?;
                m.version = m.version.max(FOLDER_VERSION);
                plan.insert(MANIFEST_PATH.to_string(), Some(json_one(&m)));
            }
        }
        if let Some((path, bytes)) = super::devices::conflicts_file(&state) {
            plan.insert(path, Some(bytes));
        }
        let mut records = records;
        let mut bases = Some(self.revision_ops(&undo).await?);
        // Operation files, the run's last one at the end: the commit mark.
        let mut marks = Vec::new();
        for (operation, undo) in operations.into_iter().zip(undo).rev() {
            let id = operation.id;
            let file = OpFile {
                operation,
                undo: Some(undo),
                run_last: last,
                records: records.take().unwrap_or_default(),
                bases: bases.take().unwrap_or_default(),
            };
            marks.push((op_path(&state.device, id), json_one(&file)));
        }
        marks.reverse();
        let run = Run {
            plan,
            marks,
            check: true,
            whole: false,
            last,
        };
        self.mirror_apply(folder, state, rev, run).await
    }

    /// Writes a run (see the module docs of [`crate::vault_files::ops`]): the state with the
    /// run pending, `run.json`, the plan's files whose bytes differ from what the mirror kept,
    /// the marks in order (always written), then the removals of raw files (content-addressed,
    /// so they go only once nothing counted needs them). A file the mirror did not write, or
    /// whose bytes changed in the folder since, is left as it is and listed in `held`. Removes
    /// only files the mirror wrote. Then the state is saved with the new hashes, nothing
    /// pending and `run.last` as the operation the folder holds.
    async fn mirror_apply<F: Folder>(
        &self,
        folder: &F,
        mut state: MirrorState,
        rev: Option<u64>,
        run: Run,
    ) -> Result<MirrorReport> {
        let mut report = MirrorReport {
            root: state.root.clone(),
            whole: run.whole,
            ..Default::default()
        };
        let state = &mut state;
        let report = &mut report;
        let mut todo: Vec<Step> = Vec::new();
        // Before a raw file is removed: whether other devices keep the folder (see `shared`).
        if !state.shared && run.plan.iter().any(|(p, b)| b.is_none() && by_hash(p)) {
            state.shared = others_keep(folder, state).await?;
        }
        for (path, bytes) in run.plan {
            let kept = state.files.get(&path);
            match bytes {
                Some(b) => {
                    let sha = sha256_hex(&b);
                    if kept == Some(&sha) {
                        report.unchanged += 1;
                    } else {
                        todo.push((path, Some((b, sha))));
                    }
                }
                // Another device may need a raw file this one no longer does (see `shared`).
                None if state.shared && by_hash(&path) => {
                    state.files.remove(&path);
                }
                None if kept.is_some() || op_file(&path) => todo.push((path, None)),
                None => {}
            }
        }
        // Raw files are removed last.
        crate::util::sort_by(&mut todo, &|a, b| {
            let late =
                |(p, b): &(String, Option<(Vec<u8>, String)>)| b.is_none() && p.starts_with("raw/");
            late(a).cmp(&late(b))
        });
        let planned: BTreeMap<String, Option<String>> = todo
            .iter()
            .map(|(p, b)| (p.clone(), b.as_ref().map(|(_, sha)| sha.clone())))
            .collect();
        let run_file = RunFile {
            run_last: run.last,
            whole: run.whole,
            files: planned.clone(),
        };
        let mut pending = planned;
        for (p, b) in &run.marks {
            pending.insert(p.clone(), Some(sha256_hex(b)));
        }
        // A run cut short left its files: they are the mirror's own writes too.
        let earlier = std::mem::replace(&mut state.pending, pending);
        let rev = self.save_mirror_state(state, rev).await?;
        let root = state.root.clone();
        folder
            .write(
                &format!("{root}/{}", run_path(&state.device)),
                &json_one(&run_file),
            )
            .await?;
        let mut marks = Some(run.marks);
        for (path, bytes) in todo {
            if bytes.is_none() && path.starts_with("raw/") {
                if let Some(marks) = marks.take() {
                    self.write_marks(folder, state, marks, report).await?;
                }
            }
            let full = format!("{root}/{path}");
            if state.held.contains(&path) {
                if bytes.is_none() {
                    // The page is gone from the wiki (deleted or renamed). A file deleted
                    // outside: nothing left to decide. A file in conflict: the folder's version
                    // is the only one left; the next pull reads it as a new page, so the
                    // conflict does not outlive its page and nothing is lost.
                    state.held.remove(&path);
                    state.files.remove(&path);
                    state.seen.remove(&path);
                    // (One with another device's version holds that version itself.)
                    state
                        .conflicts
                        .retain(|_, c| c.path != path || c.device.is_some());
                } else {
                    report.held.push(path);
                }
                continue;
            }
            // index.md and log.md are the app's (written over); ops files are written once.
            let ours = op_file(&path) || path == INDEX_MD || path == LOG_MD;
            if run.check && !ours {
                if let Some(there) = folder.read(&full).await? {
                    let there = sha256_hex(&there);
                    let ours = bytes.as_ref().map(|(_, sha)| sha);
                    let own = state.files.get(&path) == Some(&there)
                        || ours == Some(&there)
                        || state.known.get(&path).is_some_and(|k| k.contains(&there))
                        || earlier
                            .get(&path)
                            .is_some_and(|e| e.as_ref() == Some(&there));
                    if !own {
                        report.held.push(path);
                        continue;
                    }
                }
            }
            match bytes {
                Some((b, sha)) => {
                    let entry = folder.write(&full, &b).await?;
                    // A page file's size and mtime as written: the next pull need not read it
                    // back to know it is ours. (A change saved outside between the write's
                    // commit and the report, one browser call later, and to the same size,
                    // would pass for ours until the file changes again.)
                    if page_of_path(&path).is_some() && entry.size == b.len() as u64 {
                        state
                            .seen
                            .insert(path.clone(), (entry.size, entry.modified));
                    }
                    state.files.insert(path.clone(), sha);
                    // What other devices wrote there before is past: a person's return to one
                    // of those versions is an edit.
                    state.known.remove(&path);
                    report.written.push(path);
                }
                None => {
                    folder.remove(&full).await?;
                    state.files.remove(&path);
                    report.removed.push(path);
                }
            }
        }
        if let Some(marks) = marks.take() {
            self.write_marks(folder, state, marks, report).await?;
        }
        state.pending.clear();
        state.synced = run.last;
        state.version = FOLDER_VERSION;
        state.dirty.clear();
        self.save_mirror_state(state, Some(rev)).await?;
        report.synced = run.last;
        Ok(std::mem::take(report))
    }

    async fn write_marks<F: Folder>(
        &self,
        folder: &F,
        state: &mut MirrorState,
        marks: Vec<(String, Vec<u8>)>,
        report: &mut MirrorReport,
    ) -> Result<()> {
        for (path, b) in marks {
            folder.write(&format!("{}/{path}", state.root), &b).await?;
            if !op_file(&path) {
                state.files.insert(path.clone(), sha256_hex(&b));
            }
            report.written.push(path);
        }
        Ok(())
    }
}

/// Whether `path` is an operation file (of a device, or of a folder from before device
/// folders): written once, never read back as the mirror's kept files.
fn op_file(path: &str) -> bool {
    path.starts_with(".llm-wiki/devices/") && path.contains("/ops/")
        || path.starts_with(LEGACY_OPS_DIR)
}

/// One file of a run: its path, and its bytes with their SHA-256 (`None`: remove it).
type Step = (String, Option<(Vec<u8>, String)>);

/// What one run writes.
struct Run {
    /// The files (see [`Plan`]).
    plan: Plan,
    /// The commit marks, written after the plan's files in this order.
    marks: Vec<(String, Vec<u8>)>,
    /// Read each file before writing over it (off only for a first run into an empty folder).
    check: bool,
    /// Whether the run writes the whole wiki again.
    whole: bool,
    /// The run's last operation.
    last: OpId,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The operation that wrote each page revision the undo records name as a page's state
    /// before an operation ([`crate::vault_files::ops::OpFile::bases`]), by revision key.
    ///
    /// Errors: storage errors; [`Error::Corrupt`] for a revision that does not parse.
    async fn revision_ops(&self, undo: &[UndoRecord]) -> Result<BTreeMap<String, OpId>> {
        use crate::records::undo::Before;
        let keys: Vec<String> = undo
            .iter()
            .flat_map(|u| &u.entries)
            .filter_map(|e| match (e.store, &e.before) {
                (Store::Pages, Before::Revision(n)) => {
                    Some(crate::records::revision_key(&e.key, *n))
                }
                _ => None,
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut out = BTreeMap::new();
        for (k, r) in keys
            .iter()
            .zip(self.storage.get_many(Store::Revisions, &keys).await?)
        {
            if let Some(r) = r {
                let rev: crate::model::Revision = from_json(Store::Revisions, k, &r.data)?;
                out.insert(k.clone(), rev.op);
            }
        }
        Ok(out)
    }

    /// This device's settings file ([`SettingsFile`]): the configuration without secrets, saved
    /// at `time`.
    ///
    /// Errors: storage errors; [`Error::Corrupt`] for an unreadable configuration record.
    pub(super) async fn settings_file(&self, time: crate::clock::Millis) -> Result<Vec<u8>> {
        let config = match self.storage.get(Store::Meta, META_CONFIG).await? {
            Some(r) => {
                let mut v: serde_json::Value = from_json(Store::Meta, META_CONFIG, &r.data)?;
                portable_meta_value(META_CONFIG, &mut v);
                v
            }
            None => serde_json::Value::Null,
        };
        Ok(json_one(&SettingsFile { time, config }))
    }
}

/// Whether `path` is a raw file named by the hash of its bytes (a source's text or original),
/// which never changes: in a folder other devices keep, such a file stays (see `shared`).
/// Attachments are named by their names, which a later one may take again.
fn by_hash(path: &str) -> bool {
    path.starts_with("raw/text/") || path.starts_with("raw/original/")
}

/// Whether other devices keep the mirror's folder too: it holds another device's folder under
/// `.llm-wiki/devices/`.
///
/// Errors: [`crate::error::Error::Folder`].
async fn others_keep<F: Folder>(folder: &F, state: &MirrorState) -> Result<bool> {
    let dir = format!("{}/{}", state.root, crate::vault_files::ops::DEVICES_DIR);
    let own = format!("{dir}/{}/", state.device);
    Ok(folder
        .list(&dir)
        .await?
        .iter()
        .any(|e| !e.path.starts_with(&own)))
}
