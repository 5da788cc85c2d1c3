//! Folder → wiki: what changed in the mirror's folder outside the app (Obsidian, a git pull, a
//! sync tool) comes in as one `import` operation per pull.
//!
//! A pull lists the folder's `wiki/` and `inbox/` and reads only the files whose size or mtime
//! differ from when it last saw them; a file whose hash is one the mirror wrote is its own
//! write and is left alone. Then:
//! - an edited page file becomes a human revision of its page, and a new one a new page;
//! - a page changed on both sides since the mirror last wrote it becomes a conflict (both
//!   versions kept: the page in the wiki, the file in the folder) until the user chooses;
//! - a note dropped into `inbox/` becomes a source (through the vault's note parser) and leaves
//!   the inbox (the mirror writes its text under `raw/`); other inbox files are listed for the
//!   app to convert (HTML, PDF: Decision 2);
//! - a page file deleted outside is listed for the user to confirm, and not written again
//!   meanwhile;
//! - a sync tool's conflict copy of a page file, or a page file with git conflict markers
//!   ([`super::copies`]), becomes a conflict on the page, never a page of its own.
//!
//! *Invariant:* a pull never writes a file of the folder other than removing inbox notes it
//! took in and conflict copies identical to their page, and never loses a version: what it does
//! not apply it holds.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::copies::{git_other_version, icloud_original, named_copy_of, SyncTool};
use super::{MirrorConflict, MirrorState};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::folder::Folder;
use crate::markdown::page::{page_file, parse_page_file};
use crate::model::{Author, OpId, OperationKind, Page, PageKind};
use crate::storage::Storage;
use crate::text::sha256_hex;
use crate::vault_files::notes::{note_source, page_from_file, TemplateNotes};
use crate::vault_files::page_path;
use crate::wiki::Wiki;

/// The folder a person drops files into, inside the mirror's root.
pub const INBOX: &str = "inbox/";

/// What one pull did (JS: `mirrorPull(folder)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct PullReport {
    /// Pages whose file was edited outside: each got a human revision.
    pub edited: Vec<String>,
    /// Pages created from new page files.
    pub added: Vec<String>,
    /// Sources added or corrected from notes dropped into `inbox/`.
    pub sources: Vec<String>,
    /// Inbox files the core does not read (HTML, PDF, images…), by path inside the root: the
    /// app converts each, adds it with `addSource` and removes it from the inbox.
    pub inbox_other: Vec<String>,
    /// Pages whose file was deleted outside, to confirm: delete the page, or write its file
    /// back (`restorePageFile`). The file is not written again meanwhile.
    pub deleted: Vec<String>,
    /// Pages changed both in the wiki and in the folder since the mirror last wrote them: see
    /// `mirrorConflicts`.
    pub conflicts: Vec<String>,
    /// Files left out, each with the reason.
    pub skipped: Vec<String>,
    /// The `import` operation, when something came in.
    pub op: Option<OpId>,
    /// Files listed.
    pub listed: u64,
    /// Files read (their size or mtime had changed since the last pull).
    pub read: u64,
    /// Other devices' operations applied (merge on read: they came through the folder), in
    /// the order applied.
    #[serde(default)]
    pub merged: Vec<OpId>,
}

/// A page file's kind and key, from its path `wiki/<kind>/<key>.md` inside the root.
pub(super) fn page_of_path(rel: &str) -> Option<(PageKind, &str)> {
    let (kind, file) = rel.strip_prefix("wiki/")?.split_once('/')?;
    let key = file.strip_suffix(".md")?;
    (!key.contains('/') && !key.is_empty()).then_some(())?;
    Some((PageKind::parse(kind)?, key))
}

/// Records the page file `c` of page `key` as a conflict whose other version is `theirs`: the
/// file is held (not written over) and not read again until it changes.
fn hold(
    state: &mut MirrorState,
    c: &Changed,
    key: &str,
    theirs: String,
    tool: Option<SyncTool>,
    report: &mut PullReport,
) {
    state.held.insert(c.rel.clone());
    state.seen.insert(c.rel.clone(), c.stat);
    state.conflicts.insert(
        key.to_string(),
        MirrorConflict {
            key: key.to_string(),
            path: c.rel.clone(),
            theirs,
            mine: None,
            tool,
            copy: None,
            device: None,
            deleted: false,
        },
    );
    report.conflicts.push(key.to_string());
}

/// A file the pull read and found changed.
struct Changed {
    rel: String,
    bytes: Vec<u8>,
    sha: String,
    stat: (u64, i64),
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Brings what changed in the mirror's folder outside the app into the wiki, as one
    /// `import` operation (see the module docs). Run it when the folder reports a change
    /// (`FileSystemObserver`), or on focus and at most every 10 s while visible.
    ///
    /// Errors: [`Error::InvalidInput`] when this wiki has no mirror in `root`; [`Error::Folder`]
    /// when the folder cannot be listed or read (nothing applied); storage errors.
    pub async fn mirror_pull<F: Folder>(&self, folder: &F, root: &str) -> Result<PullReport> {
        let (state, rev) = self.mirror_state().await?;
        let Some(mut state) = state.filter(|s| s.root == root) else {
            return Err(Error::InvalidInput(format!(
                "this wiki has no mirror in {root}/: run mirror first"
            )));
        };
        let mut report = PullReport::default();
        state.device = self.device_id().await?;
        // Other devices' operations first: what their mirrors wrote is then no edit to read.
        let others = super::devices::other_devices(folder, &state).await?;
        state.shared |= !others.is_empty();
        self.merge_devices(folder, &mut state, &others, &mut report)
            .await?;
        let mut ended_copies = self
            .exchange_conflicts(folder, &mut state, &others, &mut report)
            .await?;
        ended_copies.extend(self.document_copies(folder, root).await?);
        // What the merge learned (conflicts, the files the other devices write) is kept even
        // if the rest of the pull fails: the merged operations are committed.
        let rev = match report.merged.is_empty() && report.conflicts.is_empty() {
            true => rev,
            false => Some(self.save_mirror_state(&state, rev).await?),
        };
        let planned = others_planned(folder, &others).await?;
        let (pages, inbox, present) = self
            .scan_folder(folder, &mut state, &planned, &mut report)
            .await?;
        // A conflict copy gone from the folder was decided elsewhere (on another device, whose
        // choice the sync tool brings), or thrown away: nothing is left to decide here.
        state
            .conflicts
            .retain(|_, c| c.copy.as_ref().is_none_or(|p| present.contains(p)));
        let mut gone = Vec::new();
        for rel in state.files.keys() {
            if let Some((_, key)) = page_of_path(rel) {
                if present.contains(rel) {
                    continue;
                }
                if self
                    .read::<Page>(crate::model::Store::Pages, key)
                    .await?
                    .is_none()
                {
                    // Deleted here too (another device's deletion, merged): nothing to confirm.
                    gone.push(rel.clone());
                } else if state.held.insert(rel.clone()) {
                    report.deleted.push(key.to_string());
                }
            }
        }
        for rel in gone {
            state.files.remove(&rel);
            state.held.remove(&rel);
        }
        // A page file deleted outside that is back (a git checkout, Obsidian's trash) is no
        // longer waiting for a decision; if it changed, it is read as any edit below.
        let conflicted: BTreeSet<String> =
            state.conflicts.values().map(|c| c.path.clone()).collect();
        state
            .held
            .retain(|p| !present.contains(p) || conflicted.contains(p));
        let mut ob = self.begin(OperationKind::Import, String::new()).await?;
        let (accepted, identical) = self
            .pull_pages(&mut ob, &mut state, pages, &present, &mut report)
            .await?;
        // A file moved to another kind's folder is an edit of its page, not a deletion.
        report.deleted.retain(|k| !report.edited.contains(k));
        let mut taken = Vec::new();
        let mut moves = Vec::new();
        for c in inbox {
            let name = &c.rel[INBOX.len()..];
            let lower = name.to_ascii_lowercase();
            if ![".md", ".markdown", ".txt"]
                .iter()
                .any(|e| lower.ends_with(e))
            {
                // Handed to the app once per change: what it cannot convert stays, unread.
                state.seen.insert(c.rel.clone(), c.stat);
                report.inbox_other.push(c.rel.clone());
                continue;
            }
            let Some((title, text, original)) = note_source(
                name,
                &c.bytes,
                false,
                TemplateNotes::Skip,
                &mut ob.batch,
                &mut report.skipped,
            ) else {
                state.seen.insert(c.rel.clone(), c.stat); // said in `skipped`; read again if changed
                continue;
            };
            self.put_note_source(&mut ob, name, title, text, original, &mut moves)
                .await?;
            report.sources.push(name.to_string());
            taken.push(c.rel.clone());
        }
        for c in accepted {
            state.files.insert(c.rel.clone(), c.sha);
            state.seen.insert(c.rel, c.stat);
        }
        // A conflict this pull decided (or ended) lets one with another device's version in.
        report.conflicts.extend(state.put_waiting());
        report.conflicts.sort();
        report.conflicts.dedup();
        if !ob.op.pages.is_empty() || !ob.op.sources.is_empty() {
            self.rekey_source_references(&mut ob, &moves).await?;
            ob.op.summary = format!(
                "folder: {} pages edited, {} added, {} notes from the inbox",
                report.edited.len(),
                report.added.len(),
                report.sources.len()
            );
            // The state commits with the operation: the files it took in are the mirror's
            // from then on, or, if the commit fails, still changes to read.
            self.put_mirror_state(&mut ob.batch, &state, rev);
            report.op = Some(self.finish(ob).await?.id);
        } else {
            self.save_mirror_state(&state, rev).await?;
        }
        // The notes are sources now; the mirror writes their text under raw/. A conflict copy
        // that says what the page says holds nothing to decide.
        for rel in taken.into_iter().chain(identical).chain(ended_copies) {
            folder.remove(&format!("{root}/{rel}")).await?;
        }
        Ok(report)
    }

    /// Sync tools' conflict copies of index.md and log.md at the top of the mirror's folder, by
    /// path inside it: both are the app's, which each device writes again from its records, so
    /// a copy holds nothing to keep (an iCloud `index 2.md` only when its first line is the
    /// document's).
    ///
    /// Errors: [`Error::Folder`]; storage errors.
    async fn document_copies<F: Folder>(&self, folder: &F, root: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for e in folder.list_top(root).await? {
            let rel = &e.path[root.len() + 1..];
            let named = named_copy_of(rel).map(|(o, _)| o);
            let Some(original) = named.clone().or_else(|| icloud_original(rel)) else {
                continue;
            };
            let doc = match original.as_str() {
                crate::documents::INDEX_MD | crate::documents::LOG_MD => original,
                _ => continue,
            };
            if named.is_none() {
                let first = |t: &str| t.lines().next().unwrap_or_default().to_string();
                let ours = first(&self.document(&doc).await?);
                let copy = folder.read(&e.path).await?.unwrap_or_default();
                if ours.is_empty() || first(&String::from_utf8_lossy(&copy)) != ours {
                    continue;
                }
            }
            out.push(rel.to_string());
        }
        Ok(out)
    }

    /// Whether `text` is the file of a version of page `key` its history holds.
    ///
    /// Errors: storage errors.
    async fn in_history(&self, key: &str, text: &str) -> Result<bool> {
        Ok(self
            .history(key)
            .await?
            .iter()
            .filter_map(|r| r.page_state.as_ref())
            .any(|p| page_file(p) == text))
    }

    /// Lists the folder and reads the page and inbox files whose size or mtime changed since the
    /// last pull; returns the changed page files, the inbox files, and every path listed.
    async fn scan_folder<F: Folder>(
        &self,
        folder: &F,
        state: &mut MirrorState,
        planned: &BTreeSet<String>,
        report: &mut PullReport,
    ) -> Result<(Vec<Changed>, Vec<Changed>, BTreeSet<String>)> {
        let root = state.root.clone();
        let (mut pages, mut inbox, mut present) = (Vec::new(), Vec::new(), BTreeSet::new());
        // Only page files and the inbox are read back: raw/, .llm-wiki/ and the documents are
        // the app's, so their folders (most of a large mirror) are not even listed.
        let mut entries = folder.list(&format!("{root}/wiki")).await?;
        entries.extend(
            folder
                .list(&format!("{root}/{}", INBOX.trim_end_matches('/')))
                .await?,
        );
        for e in entries {
            report.listed += 1;
            let rel = e.path[root.len() + 1..].to_string();
            if rel.split('/').any(|p| p.starts_with('.')) {
                continue; // ours (.llm-wiki/), or hidden (.obsidian/, .trash/)
            }
            present.insert(rel.clone());
            let is_inbox = rel.starts_with(INBOX);
            if !is_inbox && page_of_path(&rel).is_none() {
                continue; // raw/, index.md, log.md, and the person's own files
            }
            let stat = (e.size, e.modified);
            // An inbox file left there (one neither side reads) is listed again only when it
            // changes.
            if state.seen.get(&rel) == Some(&stat) {
                continue;
            }
            let Some(bytes) = folder.read(&e.path).await? else {
                continue; // gone since the listing
            };
            report.read += 1;
            let sha = sha256_hex(&bytes);
            let own = state.files.get(&rel) == Some(&sha)
                || state
                    .pending
                    .get(&rel)
                    .is_some_and(|p| p.as_ref() == Some(&sha));
            if own {
                state.seen.insert(rel, stat);
                continue;
            }
            if state.known.get(&rel).is_some_and(|k| k.contains(&sha)) {
                // Another device's mirror wrote it for an operation merged here: a mirror's
                // file, which this one may write over.
                state.files.insert(rel.clone(), sha);
                state.seen.insert(rel, stat);
                continue;
            }
            if planned.contains(&sha) && !is_inbox {
                // Being written by another device's mirror run whose operation has not
                // arrived yet: read again once it has.
                continue;
            }
            let c = Changed {
                rel,
                bytes,
                sha,
                stat,
            };
            if is_inbox {
                inbox.push(c);
            } else {
                pages.push(c);
            }
        }
        // Files gone since (renamed, deleted, taken from the inbox) need no size or mtime.
        state.seen.retain(|p, _| present.contains(p));
        Ok((pages, inbox, present))
    }

    /// The changed page files: edits and new pages into `ob`, conflicts into `state`, then the
    /// sync tools' conflict copies among them (after the files they copy: a tool that could not
    /// merge puts one version under the file's name and the other in the copy, often in one
    /// sync). Returns the files now the pages' (to remember) and the copies to remove (each
    /// says what its page says, and its page's file did not change in this pull).
    async fn pull_pages(
        &self,
        ob: &mut crate::wiki::OpBuilder,
        state: &mut MirrorState,
        pages: Vec<Changed>,
        present: &BTreeSet<String>,
        report: &mut PullReport,
    ) -> Result<(Vec<Changed>, Vec<String>)> {
        let (mut accepted, mut identical, mut copies) = (Vec::new(), Vec::new(), Vec::new());
        let mut read: std::collections::BTreeMap<String, String> = Default::default();
        for c in pages {
            if let Some((original, tool)) = self.copy_of(&c, state, present).await? {
                copies.push((c, original, tool));
                continue;
            }
            read.insert(c.rel.clone(), c.sha.clone());
            if self.pull_page(ob, state, &c, report).await? {
                accepted.push(c);
            }
        }
        for (c, original, tool) in copies {
            let changed = read.get(&original).map(String::as_str);
            if self
                .pull_copy(state, &c, &original, tool, changed, report)
                .await?
            {
                identical.push(c.rel.clone());
            }
        }
        report.conflicts.sort();
        report.conflicts.dedup();
        Ok((accepted, identical))
    }

    /// The page file a sync tool's conflict copy `c` copies, and the tool, when `c` is one:
    /// by Syncthing's or Dropbox's name, or for iCloud's `<name> 2.md` when the file is new, no
    /// page has its name, the file it would copy is there, and its frontmatter title is that
    /// page's (see [`super::copies`]).
    async fn copy_of(
        &self,
        c: &Changed,
        state: &MirrorState,
        present: &BTreeSet<String>,
    ) -> Result<Option<(String, SyncTool)>> {
        if let Some(named) = named_copy_of(&c.rel) {
            return Ok(Some(named));
        }
        let Some(original) = icloud_original(&c.rel) else {
            return Ok(None);
        };
        let (Some((_, key)), Some((_, copy_key))) = (page_of_path(&original), page_of_path(&c.rel))
        else {
            return Ok(None);
        };
        if state.files.contains_key(&c.rel)
            || !(state.files.contains_key(&original) || present.contains(&original))
            || self.page(copy_key).await?.is_some()
        {
            return Ok(None);
        }
        let Some(page) = self.page(key).await?.filter(|p| p.key == key) else {
            return Ok(None);
        };
        let title = std::str::from_utf8(&c.bytes)
            .ok()
            .and_then(|t| parse_page_file(t).ok())
            .and_then(|(fm, _)| fm.title);
        Ok((title.as_deref() == Some(page.title.as_str())).then_some((original, SyncTool::ICloud)))
    }

    /// Records the conflict copy `c` of the page file `original` as a conflict on its page (or
    /// updates the one it already is). Returns true when the copy says what the page says and
    /// `original` did not change in this pull (`original_changed`): nothing to decide, and the
    /// caller removes it. A copy of a page that has another conflict waits, unread, until that
    /// one is decided; a copy under a name the page does not have exactly (another case, NFD)
    /// is left for the person.
    async fn pull_copy(
        &self,
        state: &mut MirrorState,
        c: &Changed,
        original: &str,
        tool: SyncTool,
        original_changed: Option<&str>,
        report: &mut PullReport,
    ) -> Result<bool> {
        let Some((_, key)) = page_of_path(original) else {
            report.skipped.push(format!(
                "{}: a sync tool's conflict copy of {original}, not a page file: not imported",
                c.rel
            ));
            state.seen.insert(c.rel.clone(), c.stat);
            return Ok(false);
        };
        let nfc: String = unicode_normalization::UnicodeNormalization::nfc(key).collect();
        // The page the copy's name reaches (by its match key), read once.
        let (current, other_case): (Option<Page>, Option<Page>) = match self.page(key).await? {
            Some(p) if p.key == key => (Some(p), None),
            other => (None, other),
        };
        if crate::markdown::keys::page_key(key) != key || nfc != key || other_case.is_some() {
            report.skipped.push(format!(
                "{}: a sync tool's conflict copy of {original}, which is not a page's file by its \
                 exact name: not imported",
                c.rel
            ));
            state.seen.insert(c.rel.clone(), c.stat);
            return Ok(false);
        }
        let Ok(text) = std::str::from_utf8(&c.bytes) else {
            report.skipped.push(format!("{}: not UTF-8 text", c.rel));
            return Ok(false);
        };
        let known = |sha: &str| state.known.get(original).is_some_and(|k| k.contains(sha));
        let mine = current
            .as_ref()
            .map(|p| sha256_hex(page_file(p).as_bytes()));
        // The page's file holds no new version either: unchanged, the wiki's, or a version
        // another device's mirror wrote for a merged operation.
        let file_known =
            original_changed.is_none_or(|sha| known(sha) || mine.as_deref() == Some(sha));
        if file_known && (known(&c.sha) || self.in_history(key, text).await?) {
            // A version another device's mirror wrote for an operation merged here: the
            // merge has it (and shows any conflict it makes); the copy holds nothing new.
            return Ok(true);
        }
        if let Some(other) = state.conflicts.get(key) {
            if other.device.is_some() {
                // A conflict with another device's version: the copy waits for that one.
                report.skipped.push(format!(
                    "{}: a conflict copy of {key:?}, read once the conflict on that page is decided",
                    c.rel
                ));
                return Ok(false);
            }
            if other.copy.as_deref() != Some(c.rel.as_str()) {
                report.skipped.push(format!(
                    "{}: a conflict copy of {key:?}, read once the conflict on that page is decided",
                    c.rel
                ));
                return Ok(false);
            }
        }
        if original_changed.is_none() && current.as_ref().is_some_and(|p| page_file(p) == text) {
            state.conflicts.remove(key);
            return Ok(true);
        }
        state.seen.insert(c.rel.clone(), c.stat);
        state.conflicts.insert(
            key.to_string(),
            MirrorConflict {
                key: key.to_string(),
                path: original.to_string(),
                theirs: text.to_string(),
                mine: None,
                tool: Some(tool),
                copy: Some(c.rel.clone()),
                device: None,
                deleted: false,
            },
        );
        report.conflicts.push(key.to_string());
        Ok(false)
    }

    /// Applies one changed page file to `ob` (an edit or a new page) or records it as a
    /// conflict. Returns whether the file's bytes are now the page's (to remember its hash).
    async fn pull_page(
        &self,
        ob: &mut crate::wiki::OpBuilder,
        state: &mut MirrorState,
        c: &Changed,
        report: &mut PullReport,
    ) -> Result<bool> {
        let (kind, key) = page_of_path(&c.rel).expect("only page files come here");
        let Ok(text) = std::str::from_utf8(&c.bytes) else {
            report.skipped.push(format!("{}: not UTF-8 text", c.rel));
            return Ok(false);
        };
        // A key the wiki's own rules would not give (a file named outside): left for the
        // person to rename, rather than a page no link can reach.
        let canonical = crate::markdown::keys::page_key(key);
        let nfc: String = unicode_normalization::UnicodeNormalization::nfc(key).collect();
        if canonical != key || nfc != key {
            report.skipped.push(format!(
                "{}: not a page key (the wiki would name it {canonical:?}): rename the file",
                c.rel
            ));
            state.seen.insert(c.rel.clone(), c.stat);
            return Ok(false);
        }
        // The page record with its storage revision (for the write's expectation), read once.
        let stored = self.read::<Page>(crate::model::Store::Pages, key).await?;
        if stored.is_none() {
            if let Some(other) = self.page(key).await? {
                report.skipped.push(format!(
                    "{}: the page {:?} has this name in another case",
                    c.rel, other.key
                ));
                return Ok(false);
            }
        }
        let (current, rev) = match stored {
            Some((p, r)) => (Some(p), Some(r)),
            None => (None, None),
        };
        // The page has a conflict with a sync tool's copy: this change is read once that one
        // is decided (the mirror does not write over a file it did not write meanwhile).
        if let Some(copy) = state.conflicts.get(key).and_then(|o| o.copy.clone()) {
            report.skipped.push(format!(
                "{}: read once the conflict with {copy} is decided",
                c.rel
            ));
            return Ok(false);
        }
        // A failed git merge left both versions in the file: the person decides, as for a page
        // changed on both sides; the file is not written over meanwhile.
        let mine = current.as_ref().map(page_file);
        if let Some(other) = git_other_version(text, mine.as_deref()) {
            hold(state, c, key, other, Some(SyncTool::Git), report);
            return Ok(false);
        }
        let now = ob.op.time;
        let (op, base) = match &current {
            Some(cur) => {
                let app = sha256_hex(page_file(cur).as_bytes());
                if app == c.sha {
                    // Both sides agree (also a conflict settled by hand): nothing to decide. (A
                    // conflict with another device's version is not about the file.)
                    if state.conflicts.get(key).is_some_and(|o| o.device.is_none()) {
                        state.conflicts.remove(key);
                        state.held.remove(&c.rel);
                    }
                    // The folder caught up: other devices' earlier versions of it are past.
                    state.known.remove(&c.rel);
                    return Ok(true);
                }
                if state.files.get(&c.rel) != Some(&app) {
                    if state.shared && self.in_history(key, text).await? {
                        // An earlier version of the page that a sync brought back (a device's
                        // mirror wrote it before the page changed again): no new version, the
                        // wiki's stands; the next run writes it over.
                        state.dirty.insert(key.to_string());
                        return Ok(true);
                    }
                    // The wiki changed it too since the mirror last wrote it.
                    hold(state, c, key, text.to_string(), None, report);
                    return Ok(false);
                }
                (ob.op.id, cur.clone())
            }
            None => (ob.op.id, Page::blank(key, key, kind, now)),
        };
        let mut page = page_from_file(&base, kind, text);
        if current.as_ref() == Some(&page) {
            return Ok(true);
        }
        page.revision = self.next_revision_number(key).await?;
        page.updated = now;
        self.put_page_revision(&mut ob.batch, &page, rev, Author::Human, op, now);
        ob.op.pages.push(key.to_string());
        if current.is_some() {
            report.edited.push(key.to_string());
        } else {
            report.added.push(key.to_string());
        }
        if page_path(page.kind, key) != c.rel {
            report
                .skipped
                .push(format!("{}: moved to its kind's folder", c.rel));
        }
        Ok(true)
    }
}

/// The SHA-256 of every file the other devices' last mirror runs planned to write (their
/// `run.json`): a page file with one of them is theirs, arriving before its operation.
///
/// Errors: [`Error::Folder`].
async fn others_planned<F: Folder>(
    folder: &F,
    others: &std::collections::BTreeMap<String, super::devices::DeviceFiles>,
) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    for path in others.values().filter_map(|f| f.run.as_ref()) {
        if let Some(b) = folder.read(path).await? {
            if let Ok(run) = serde_json::from_slice::<crate::vault_files::ops::RunFile>(&b) {
                out.extend(run.files.into_values().flatten());
            }
        }
    }
    Ok(out)
}
