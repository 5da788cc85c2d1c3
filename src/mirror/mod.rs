//! The folder mirror (issue #24; Decision 10): the wiki kept as files in a folder the user picked,
//! so Obsidian, git or a sync tool sees it as it changes.
//!
//! The mirror writes under one folder of its own inside the picked one (`root`, by default
//! [`DEFAULT_ROOT`]), in the vault's folder layout ([`crate::vault_files`]): the zip layout as of
//! the first run, then one file per operation. Each run after the first writes only the files the
//! operations since the last run changed (a compile that touched 12 pages writes those 12 files,
//! index.md, log.md, any new raw files and one file per operation), and never a file whose bytes
//! are already there. The run's last operation file is written last: a run cut short leaves a
//! folder whose readers see the operation before it, and the next run finishes the job.
//!
//! What this browser wrote (the hash of every file, the last operation the folder holds, the run
//! in progress) is a meta record local to the browser ([`crate::records::META_MIRROR`]): never
//! exported, journaled or rolled back.
//!
//! A run reads the wiki but never writes a record of it other than that state; the app runs it
//! after each operation, in the tab that holds the wiki's write lock. The other way, a pull
//! (`pull`) brings what changed in the folder outside the app into the wiki, and holds what it
//! cannot apply (a page changed on both sides, a page file deleted outside) until the person
//! decides (`resolve`).
//!
//! *Invariants:* nothing is written outside `root`; a first run writes only into an empty or
//! missing `root`; after a finished run, importing the folder gives the wiki's records.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::folder::{check_path, Folder};
use crate::model::{OpId, Store};
use crate::records::{from_json, to_json, META_DOWNLOAD, META_MIRROR};
use crate::storage::{Batch, Expect, Storage};
use crate::vault_files::MANIFEST_PATH;
use crate::wiki::Wiki;

mod adopt;
mod copies;
mod devices;
mod frontier;
mod join;
mod merge;
mod plan;
mod pull;
mod resolve;
mod run;

pub use adopt::AdoptReport;
pub use copies::SyncTool;
pub use join::{FolderWiki, JoinCheck, JoinReport};
pub use pull::{PullReport, INBOX};

/// The folder the mirror writes into, inside the picked folder, unless the app names another.
pub const DEFAULT_ROOT: &str = "llm-wiki";

/// What this browser wrote to the folder ([`crate::records::META_MIRROR`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MirrorState {
    /// The meta record it is kept in: [`META_MIRROR`], or [`META_DOWNLOAD`] for what the
    /// downloads of changes held.
    #[serde(skip, default = "mirror_record")]
    record: &'static str,
    /// The mirror's folder inside the picked one.
    root: String,
    /// The last operation the folder holds (its run finished).
    synced: OpId,
    /// SHA-256 of every file the mirror wrote and keeps (all but the operation files), by path
    /// inside `root`.
    files: BTreeMap<String, String>,
    /// The files of a run in progress: path → SHA-256 of the bytes being written, or `None` for
    /// a removal. Empty between runs; after a crash, how to tell the run's own writes from
    /// edits made outside.
    #[serde(default)]
    pending: BTreeMap<String, Option<String>>,
    /// Size and mtime of files whose hash the last pull checked, by path: a file that still
    /// has them is not read again.
    #[serde(default)]
    seen: BTreeMap<String, (u64, i64)>,
    /// Files the mirror does not write until the user decides: a page changed on both sides,
    /// or a page file deleted outside.
    #[serde(default)]
    held: BTreeSet<String>,
    /// The conflicts, by page key.
    #[serde(default)]
    conflicts: BTreeMap<String, MirrorConflict>,
    /// Pages another device's operations changed here since the last run: the next run writes
    /// their files (every device writes the files of the records it holds; the records agree).
    #[serde(default)]
    dirty: BTreeSet<String>,
    /// Conflicts with another device's version decided (on this device or another), by
    /// [`MirrorConflict::id`]: never shown again.
    #[serde(default)]
    decided: BTreeSet<String>,
    /// Page files' SHA-256 as another device's mirror writes them (its operations' pages), by
    /// path: such a file is a mirror's write, never an edit to read back.
    #[serde(default)]
    known: BTreeMap<String, BTreeSet<String>>,
    /// The folder layout version the mirror last wrote ([`crate::vault_files::FOLDER_VERSION`]);
    /// 0 for a mirror begun by a build before device folders (its manifest is rewritten).
    #[serde(default)]
    version: u32,
    /// Whether other devices keep the folder too (a pull found their files, or this device
    /// joined): raw files are then never removed, as another device may still need one to
    /// apply an operation it made before the removal reached it (they are immutable, by hash).
    #[serde(default)]
    shared: bool,
    /// This device's id ([`Wiki::device_id`]): its files go under
    /// `.llm-wiki/devices/<device>/`. Set when the state is read for a run, not stored.
    #[serde(skip)]
    device: String,
    /// Conflicts with another device's version found on a page where a sync tool's conflict
    /// or a held file was (which is decided first): put again by each pull until that one has
    /// ended (a merge accounts for a version it knows, [`MirrorState::known`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    waiting: Vec<MirrorConflict>,
}

fn mirror_record() -> &'static str {
    META_MIRROR
}

impl MirrorState {
    fn new(record: &'static str, root: &str) -> Self {
        MirrorState {
            record,
            root: root.to_string(),
            synced: 0,
            files: BTreeMap::new(),
            pending: BTreeMap::new(),
            seen: BTreeMap::new(),
            held: BTreeSet::new(),
            conflicts: BTreeMap::new(),
            dirty: BTreeSet::new(),
            decided: BTreeSet::new(),
            known: BTreeMap::new(),
            version: crate::vault_files::FOLDER_VERSION,
            shared: false,
            device: String::new(),
            waiting: Vec::new(),
        }
    }
}

/// What [`Wiki::export_changes`] gives: a zip of the files changed since the last download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangesExport {
    /// The zip: the mirror's folder layout under `llm-wiki/`, only the files that changed, and
    /// `llm-wiki/.llm-wiki/removed.txt` listing the files to delete, one path per line, when
    /// there are any.
    pub zip: Vec<u8>,
    /// What the run wrote (`whole` for the first download).
    pub report: MirrorReport,
}

/// A page changed both in the wiki and in the folder since the mirror last wrote it (JS:
/// `mirrorConflicts()`). The wiki keeps its version, the folder's file keeps the other, until
/// `resolveMirrorConflict`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct MirrorConflict {
    /// The page.
    pub key: String,
    /// Its file, by path inside the mirror's root.
    pub path: String,
    /// The file's text (the folder's version).
    pub theirs: String,
    /// The page as this app would write its file now (the wiki's version), when the page
    /// exists; filled in by `mirror_conflicts`, not stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mine: Option<String>,
    /// The sync tool that left this conflict, when one did: a conflict copy beside the page's
    /// file (Syncthing, Dropbox, iCloud Drive), or conflict markers in it (git, whose
    /// incoming side `theirs` then holds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tool: Option<SyncTool>,
    /// The conflict copy holding `theirs`, by path inside the mirror's root: removed when the
    /// conflict is decided; a copy deleted outside (decided on another device) ends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub copy: Option<String>,
    /// The other device whose operation changed the page at the same time as this one did
    /// (merge on read), when one did: `theirs` is then the version the wiki did not keep (of
    /// two edits, the earlier writer's in the operations' order), and the file shows the
    /// wiki's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub device: Option<String>,
    /// With `device`: one side deleted the page while the other edited it. The edit is kept
    /// and `theirs` is empty: keep the page (`mine`), or delete it (`deletePage`). (When the
    /// page is gone since, `theirs` is the edit, which `theirs` brings back.)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub deleted: bool,
}

impl MirrorConflict {
    /// The conflict's identity across devices: its page and the SHA-256 of the other version.
    pub fn id(&self) -> String {
        format!(
            "{}\u{0}{}",
            self.key,
            crate::text::sha256_hex(self.theirs.as_bytes())
        )
    }
}

impl MirrorState {
    /// Records a conflict with another device's version (merge on read), as every device
    /// records it whichever order it learns of them in: not one decided already, not over a
    /// conflict a sync tool left on the page or a held file (that one is decided first; this
    /// one waits, [`MirrorState::waiting`]), and of two on one page the one with the greater
    /// [`MirrorConflict::id`] (the other version is in the page's history either way).
    fn put_merge_conflict(&mut self, c: MirrorConflict) -> bool {
        let id = c.id();
        if self.decided.contains(&id) {
            return false;
        }
        match self.conflicts.get(&c.key) {
            Some(o) if o.device.is_none() => {
                if !self.waiting.iter().any(|w| w.id() == id) {
                    self.waiting.push(c);
                }
                false
            }
            Some(o) if o.id() >= id => false,
            _ => {
                self.conflicts.insert(c.key.clone(), c);
                true
            }
        }
    }
}

impl MirrorState {
    /// Puts again the conflicts [`MirrorState::waiting`] holds (those still kept out wait
    /// again); returns the pages whose conflict is shown now.
    fn put_waiting(&mut self) -> Vec<String> {
        let mut shown = Vec::new();
        for c in std::mem::take(&mut self.waiting) {
            let key = c.key.clone();
            if self.put_merge_conflict(c) {
                shown.push(key);
            }
        }
        shown
    }
}

/// How a conflict ends (JS: `resolveMirrorConflict(folder, key, choice, seen)`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", tag = "keep", content = "text")]
pub enum ConflictChoice {
    /// The wiki's version: the file is written over with it.
    Mine,
    /// The folder's version: it becomes the page's next (human) revision.
    Theirs,
    /// A merge the person wrote (a whole page file): it becomes the page's next revision and
    /// the file.
    Merge(String),
}

/// What one mirror run did (JS: `mirror(folder)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct MirrorReport {
    /// The mirror's folder inside the picked one.
    pub root: String,
    /// The last operation the folder holds now.
    pub synced: OpId,
    /// Whether the run wrote the whole wiki (the first run, or one that found no undo record
    /// to tell what an operation changed).
    pub whole: bool,
    /// Files written, by path inside `root`, in the order written (the operation files last).
    pub written: Vec<String>,
    /// Files removed, by path inside `root`.
    pub removed: Vec<String>,
    /// Files the run had to write that already held those bytes (not rewritten).
    pub unchanged: u64,
    /// Files the run left as they are because they changed in the folder since the mirror
    /// wrote them, or because the mirror never wrote them: an edit made outside, which the
    /// folder keeps until it is read back into the wiki.
    pub held: Vec<String>,
}

/// The mirror's state as the app shows it (JS: `mirrorStatus()`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct MirrorStatus {
    /// The mirror's folder inside the picked one.
    pub root: String,
    /// The last operation the folder holds.
    pub synced: OpId,
    /// Operations done since that the folder does not hold yet.
    pub behind: u64,
    /// Files the mirror keeps there (not counting one file per operation).
    pub files: u64,
    /// Whether a run was cut short (the next run finishes it).
    pub interrupted: bool,
    /// Pages whose file was deleted outside, waiting for the person to delete the page or
    /// write its file back (`restorePageFile`).
    pub deleted: Vec<String>,
    /// Pages changed on both sides, waiting for a choice (`mirrorConflicts`).
    pub conflicts: u64,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Brings the folder mirror in `folder`/`root` up to date with the wiki: the first time, the
    /// whole wiki; then the files the operations since the last run changed (see the module
    /// docs). Another `root` than the last run's starts a new mirror there. Run it after each
    /// operation, in the tab holding the write lock.
    ///
    /// Errors: [`Error::InvalidInput`] when `root` is not a relative path, or when a first run
    /// finds files in `root` (the mirror never writes over files it did not write: pick another
    /// name); [`Error::Folder`] when a file cannot be listed, read, written or removed (the
    /// wiki is unchanged, and the next run resumes); storage errors.
    pub async fn mirror<F: Folder>(&self, folder: &F, root: &str) -> Result<MirrorReport> {
        self.mirror_at(folder, root, META_MIRROR).await
    }

    /// The files changed since the last call, as a zip to unzip over a folder (for browsers
    /// without a directory picker): the first call gives the whole wiki in the mirror's folder
    /// layout, each later one the files the operations since changed, in the same layout, so
    /// the folder reads as a mirror. Files to delete are listed in `.llm-wiki/removed.txt`.
    /// `from_start` forgets what earlier downloads held and gives the whole wiki again (a
    /// download that never arrived, a new folder).
    ///
    /// Errors: storage errors.
    pub async fn export_changes(&self, from_start: bool) -> Result<ChangesExport> {
        if from_start {
            self.drop_mirror_state(META_DOWNLOAD).await?;
        }
        let folder = crate::folder::MemoryFolder::new();
        let report = self.mirror_at(&folder, DEFAULT_ROOT, META_DOWNLOAD).await?;
        let mut files = folder.snapshot();
        if !report.removed.is_empty() {
            let list: String = report.removed.iter().map(|p| format!("{p}\n")).collect();
            files.insert(
                format!("{DEFAULT_ROOT}/.llm-wiki/removed.txt"),
                list.into_bytes(),
            );
        }
        Ok(ChangesExport {
            zip: crate::vault_files::zip::write_zip(&files)?,
            report,
        })
    }

    /// A run into `folder`/`root` with the state kept in `record`. A download (its `record`,
    /// [`META_DOWNLOAD`]) goes into an empty folder each time: the folder is not checked.
    async fn mirror_at<F: Folder>(
        &self,
        folder: &F,
        root: &str,
        record: &'static str,
    ) -> Result<MirrorReport> {
        check_path(root).map_err(|_| {
            Error::InvalidInput(format!("mirror folder {root:?} is not a relative path"))
        })?;
        let live = record == META_MIRROR;
        let (state, rev) = self.mirror_state_at(record).await?;
        let last = self.last_op().await?;
        let device = self.device_id().await?;
        let mut state = match state {
            Some(s) if s.root == root => s,
            _ => {
                if !folder.list(root).await?.is_empty() {
                    return Err(Error::InvalidInput(format!(
                        "{root}/ already holds files: the mirror writes only into a new folder; \
                         pick another name or an empty folder"
                    )));
                }
                let mut fresh = MirrorState::new(record, root);
                fresh.device = device;
                return self.mirror_whole(folder, fresh, rev, last).await;
            }
        };
        state.device = device;
        let manifest = format!("{root}/{MANIFEST_PATH}");
        if live && folder.read(&manifest).await?.is_none() {
            // The folder lost the mirror (moved, emptied): write it again.
            return self.mirror_whole(folder, state, rev, last).await;
        }
        let conflicts_written = devices::conflicts_file(&state)
            .is_none_or(|(p, b)| state.files.get(&p) == Some(&crate::text::sha256_hex(&b)));
        if state.synced >= last
            && state.pending.is_empty()
            && state.dirty.is_empty()
            && conflicts_written
        {
            return Ok(MirrorReport {
                root: state.root,
                synced: state.synced,
                ..Default::default()
            });
        }
        self.mirror_since(folder, state, rev, last).await
    }

    /// The folder the mirror writes into inside `folder`: the last run's, else the first of
    /// [`DEFAULT_ROOT`], `llm-wiki 2`, `llm-wiki 3`… that holds no file, so a first run never
    /// writes where something already is.
    ///
    /// Errors: [`Error::Folder`]; storage errors.
    pub async fn mirror_root<F: Folder>(&self, folder: &F) -> Result<String> {
        if let (Some(s), _) = self.mirror_state().await? {
            return Ok(s.root);
        }
        for n in 1.. {
            let root = match n {
                1 => DEFAULT_ROOT.to_string(),
                n => format!("{DEFAULT_ROOT} {n}"),
            };
            if folder.list(&root).await?.is_empty() {
                return Ok(root);
            }
        }
        unreachable!("some name is free")
    }

    /// The mirror's state, or `None` when this wiki has no mirror in this browser.
    ///
    /// Errors: storage errors; [`Error::Corrupt`] for an unreadable state record.
    pub async fn mirror_status(&self) -> Result<Option<MirrorStatus>> {
        let (state, _) = self.mirror_state().await?;
        let last = self.last_op().await?;
        Ok(state.map(|s| MirrorStatus {
            deleted: s
                .held
                .iter()
                .filter(|p| !s.conflicts.values().any(|c| &c.path == *p))
                .filter_map(|p| pull::page_of_path(p).map(|(_, k)| k.to_string()))
                .collect(),
            conflicts: s.conflicts.len() as u64,
            behind: last.saturating_sub(s.synced),
            files: s.files.len() as u64,
            interrupted: !s.pending.is_empty(),
            root: s.root,
            synced: s.synced,
        }))
    }

    /// Stops mirroring: forgets what was written (the folder's files stay). The next
    /// [`Wiki::mirror`] starts a new mirror.
    ///
    /// Errors: storage errors.
    pub async fn forget_mirror(&self) -> Result<()> {
        self.drop_mirror_state(META_MIRROR).await
    }

    /// Deletes the state kept in `record`: the next run there starts afresh.
    async fn drop_mirror_state(&self, record: &'static str) -> Result<()> {
        let mut batch = Batch::new();
        batch.delete(Store::Meta, record, Expect::Any);
        self.storage.commit(batch).await?;
        Ok(())
    }

    async fn mirror_state(&self) -> Result<(Option<MirrorState>, Option<u64>)> {
        self.mirror_state_at(META_MIRROR).await
    }

    async fn mirror_state_at(
        &self,
        record: &'static str,
    ) -> Result<(Option<MirrorState>, Option<u64>)> {
        Ok(match self.storage.get(Store::Meta, record).await? {
            Some(r) => {
                let mut state: MirrorState = from_json(Store::Meta, record, &r.data)?;
                state.record = record;
                (Some(state), Some(r.rev))
            }
            None => (None, None),
        })
    }

    /// Saves the state; returns its new revision.
    async fn save_mirror_state(&self, state: &MirrorState, rev: Option<u64>) -> Result<u64> {
        let mut batch = Batch::new();
        self.put_mirror_state(&mut batch, state, rev);
        let revs = self.storage.commit(batch).await?;
        Ok(revs.first().copied().unwrap_or(1))
    }

    /// Adds the state's write to `batch` (expecting the record at `rev`).
    fn put_mirror_state(&self, batch: &mut Batch, state: &MirrorState, rev: Option<u64>) {
        batch.put(
            Store::Meta,
            state.record,
            to_json(state),
            Expect::from_read(rev),
        );
    }
}
