//! Merge on read (issue #25; Decisions 7 and 10): the operations other devices wrote into the
//! folder (`.llm-wiki/devices/<device>/ops/`) become operations of this wiki, with their ids,
//! undo records and records, so every device that holds the same operations holds the same
//! records.
//!
//! A pull reads each other device's operation files after the last of its operations held here,
//! in that device's order (its ids follow one another), a mirror run at a time (a run counts
//! only when its last file is there, as for an import; a missing file stops that device). A
//! page the run wrote keeps what the operations that wrote it and no other of them saw say
//! (its frontier, [`super::frontier`]), on every device alike whatever order and batches the
//! operations came in: the latest edit, else the deletion; so a deletion beside an edit keeps
//! the edit, and the frontier's other versions are conflicts both devices show (an edit a later
//! concurrent edit won over, its other version; a deletion an edit won over, an empty one, to
//! confirm). For every other record the run changed: here as the run left it, nothing to do;
//! else the later writer in the operations' total order keeps it (an operation here later than
//! the run's that wrote it keeps this device's; else the run's). Of two revisions of one page
//! and number, the later writer's keeps the key and the other is kept beside it, so no version
//! is lost.
//!
//! Raw files a run added (source texts, originals, attachments) are read from the folder and
//! checked against their hashes; a run whose files have not arrived yet waits for a later
//! pull. The pages a merge changed are written to the folder by this device's next run (the
//! same bytes the other device writes: their records agree).
//!
//! *Invariant:* a run is applied whole or not at all, once; no version of a page is lost.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::devices::DeviceFiles;
use super::pull::PullReport;
use super::{MirrorConflict, MirrorState};
use crate::clock::Clock;
use crate::error::Result;
use crate::folder::Folder;
use crate::markdown::page::page_file;
use crate::model::{op_orders, op_seq, OpId, OpOrder, Operation, Page, Revision, Store};
use crate::records::undo::{Before, UndoRecord};
use crate::records::{from_json, operation_key, revision_key, to_json, undo_key, META_CONFIG};
use crate::storage::{Batch, Expect, Storage};
use crate::text::sha256_hex;
use crate::vault_files::ops::{OpFile, RecordAfter};
use crate::vault_files::{page_path, raw_text_path};
use crate::wiki::Wiki;

/// A record's identity.
type RecordKey = (Store, String);

/// What the run's device held before the run and which of its operations last wrote each record.
pub(super) struct RunFacts {
    /// The last of the run's operations that wrote each record.
    writer: HashMap<RecordKey, OpId>,
    /// The order of every operation held here and of the run's.
    pub(super) order: BTreeMap<OpId, OpOrder>,
    /// Every operation held here and the run's, by id.
    pub(super) ops: HashMap<OpId, Operation>,
    /// This device's operations after the run's first one (in the order), with their undo
    /// records: who may have written a record since the devices last agreed.
    later: Vec<(OpOrder, UndoRecord)>,
}

impl RunFacts {
    /// Whether an operation held here, later in the order than `writer`, wrote `key`.
    fn written_later(&self, key: &RecordKey, writer: OpId) -> bool {
        let at = self.order.get(&writer).copied().unwrap_or((i64::MIN, 0, 0));
        self.later.iter().any(|(o, u)| {
            *o > at
                && (u.entries.iter().any(|e| e.store == key.0 && e.key == key.1)
                    || (key.0 == Store::Revisions
                        && u.revisions.iter().flatten().any(|r| *r == key.1)))
        })
    }

    fn writer_of(&self, key: &RecordKey, last: OpId) -> OpId {
        self.writer.get(key).copied().unwrap_or(last)
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Applies the operations other devices wrote into the folder since the last pull (see the
    /// module docs), each of their mirror runs as one transaction; records the conflicts and
    /// the pages to write in `state`, and the operations applied in `report`.
    ///
    /// Errors: [`crate::error::Error::Folder`]; storage errors (the runs applied before stay
    /// applied; the rest wait for the next pull).
    pub(super) async fn merge_devices<F: Folder>(
        &self,
        folder: &F,
        state: &mut MirrorState,
        others: &BTreeMap<String, DeviceFiles>,
        report: &mut PullReport,
    ) -> Result<()> {
        for (device, files) in others {
            // Each device's operations are numbered one after another in its slot (Decision
            // 7): the next one to apply is after the last held here, and a gap (a file not
            // synced yet) stops that device until a later pull.
            let Some(first_wanted) = self.first_unheld(&files.ops).await? else {
                continue;
            };
            let files = &files.ops;
            // The device's next files, one after another (a gap waits).
            let mut read: Vec<OpFile> = Vec::new();
            for (next, (id, path)) in (first_wanted..).zip(files.range(first_wanted..)) {
                if *id != next {
                    break;
                }
                let Some(bytes) = folder.read(path).await? else {
                    break; // gone since the listing: the next pull
                };
                match serde_json::from_slice::<OpFile>(&bytes) {
                    Ok(f) => read.push(f),
                    Err(e) => {
                        report.skipped.push(format!("{path}: {e}"));
                        break; // a file still being written, or damaged: later ones wait
                    }
                }
            }
            let mut start = 0;
            while let Some(end) = read[start..]
                .iter()
                .position(|f| f.operation.id == f.run_last)
                .map(|i| start + i)
            {
                // A raw file a run added may be gone again because a later operation of the
                // device removed it: that one is not waited for.
                let later: BTreeSet<String> = read[end + 1..]
                    .iter()
                    .flat_map(|f| f.undo.iter().flat_map(|u| &u.entries))
                    .filter(|e| e.store == Store::Raw)
                    .map(|e| e.key.clone())
                    .collect();
                if !self
                    .merge_run(folder, state, device, &read[start..=end], &later, report)
                    .await?
                {
                    break; // its raw files have not arrived
                }
                start = end + 1;
            }
        }
        Ok(())
    }

    /// The first of one device's operation files `ops` whose operation this wiki does not
    /// hold, when it follows the last one held of that device (else a file is missing: wait).
    /// The held ones are the first files (a device's ids follow one another, and its
    /// operations are applied in order), so a binary search reads a few operation records,
    /// not all.
    ///
    /// Errors: storage errors.
    async fn first_unheld(&self, ops: &BTreeMap<OpId, String>) -> Result<Option<OpId>> {
        let ids: Vec<OpId> = ops.keys().copied().collect();
        let held = |id: OpId| async move {
            Ok::<bool, crate::error::Error>(
                self.storage
                    .get(Store::Operations, &operation_key(id))
                    .await?
                    .is_some(),
            )
        };
        let (mut lo, mut hi) = (0, ids.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if held(ids[mid]).await? {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let Some(&first) = ids.get(lo) else {
            return Ok(None); // all held
        };
        let follows = op_seq(first) == 1 || held(first - 1).await?;
        Ok(follows.then_some(first))
    }

    /// Applies one run of `device` (see the module docs). Returns `false`, having written
    /// nothing, when a raw file it needs is not in the folder yet, unless a later operation of
    /// the device wrote that raw record again (`rewritten`: then the run is applied without
    /// it, and the records needing it wait for that operation).
    async fn merge_run<F: Folder>(
        &self,
        folder: &F,
        state: &mut MirrorState,
        device: &str,
        run: &[OpFile],
        rewritten: &BTreeSet<String>,
        report: &mut PullReport,
    ) -> Result<bool> {
        let Some(last_file) = run.last() else {
            return Ok(true);
        };
        let last = last_file.operation.id;
        let mut batch = Batch::new();
        let missing = self.merge_raw(folder, state, run, &mut batch).await?;
        if !missing.is_subset(rewritten) {
            return Ok(false);
        }
        let facts = self.run_facts(run).await?;
        let own: BTreeSet<String> = run.iter().map(|f| operation_key(f.operation.id)).collect();
        for r in last_file.records.iter().filter(|r| r.store == Store::Pages) {
            self.merge_page(state, device, r, &facts, last_file, &mut batch, report)
                .await?;
        }
        for r in &last_file.records {
            let key = (r.store, r.key.clone());
            match r.store {
                Store::Pages => {}
                Store::Revisions => self.merge_revision(r, &facts, &mut batch).await?,
                Store::Operations if own.contains(&r.key) => {}
                Store::Meta if r.key == META_CONFIG => {} // settings are per device
                // A source or attachment whose bytes a later run of the device removed (they
                // are not in the folder): that run changes the record again.
                _ if needs_missing(r, &missing) => {}
                _ => {
                    let writer = facts.writer_of(&key, last);
                    self.merge_record(r, &facts, writer, &mut batch).await?
                }
            }
        }
        let ops: Vec<Operation> = run.iter().map(|f| f.operation.clone()).collect();
        let undo: Vec<UndoRecord> = run.iter().filter_map(|f| f.undo.clone()).collect();
        self.commit_foreign(batch, &ops, undo, &facts.order).await?;
        report.merged.extend(ops.iter().map(|o| o.id));
        Ok(true)
    }

    /// The run's writers, the operations and their order, and this device's later operations.
    async fn run_facts(&self, run: &[OpFile]) -> Result<RunFacts> {
        let mut writer = HashMap::new();
        for f in run {
            if let Some(u) = &f.undo {
                for e in &u.entries {
                    writer.insert((e.store, e.key.clone()), f.operation.id);
                }
                for k in u.revisions.iter().flatten() {
                    writer.insert((Store::Revisions, k.clone()), f.operation.id);
                }
            }
        }
        let mut ops = self.operations().await?;
        let ids: BTreeSet<OpId> = run.iter().map(|f| f.operation.id).collect();
        ops.retain(|o| !ids.contains(&o.id));
        let held = ops.len();
        ops.extend(run.iter().map(|f| f.operation.clone()));
        let order = op_orders(ops.iter());
        let first = run
            .iter()
            .map(|f| order[&f.operation.id])
            .min()
            .unwrap_or((i64::MIN, 0, 0));
        let later_ids: Vec<OpId> = ops[..held]
            .iter()
            .filter(|o| order[&o.id] > first)
            .map(|o| o.id)
            .collect();
        let keys: Vec<String> = later_ids.iter().map(|id| undo_key(*id)).collect();
        let mut later = Vec::new();
        for (k, r) in keys
            .iter()
            .zip(self.storage.get_many(Store::Meta, &keys).await?)
        {
            if let Some(r) = r {
                let u: UndoRecord = from_json(Store::Meta, k, &r.data)?;
                later.push((order[&u.op], u));
            }
        }
        Ok(RunFacts {
            writer,
            order,
            ops: ops.into_iter().map(|o| (o.id, o)).collect(),
            later,
        })
    }

    /// Puts into `batch` the raw records (source texts, originals, attachment bytes) the run
    /// added and this wiki lacks, read from the folder and checked against their hashes.
    /// Returns the keys of those not (yet) there (the others are put).
    async fn merge_raw<F: Folder>(
        &self,
        folder: &F,
        state: &MirrorState,
        run: &[OpFile],
        batch: &mut Batch,
    ) -> Result<BTreeSet<String>> {
        let root = &state.root;
        let mut names: HashMap<String, String> = HashMap::new();
        if let Some(f) = run.last() {
            for r in &f.records {
                if let (Some(name), Some(v)) = (
                    r.key.strip_prefix(crate::records::ASSET_PREFIX),
                    r.value.as_ref(),
                ) {
                    if let Some(sha) = v.get("sha256").and_then(Value::as_str) {
                        names.insert(sha.to_string(), name.to_string());
                    }
                }
            }
        }
        let mut missing = BTreeSet::new();
        // The raw records the run added, and those its sources and attachments name (this
        // wiki may lack them: another operation here removed its copy).
        let mut wanted: BTreeSet<String> = BTreeSet::new();
        for f in run {
            for e in f.undo.iter().flat_map(|u| &u.entries) {
                // Added by the run (one it removed is not wanted).
                if e.store == Store::Raw && matches!(e.before, Before::Absent) {
                    wanted.insert(e.key.clone());
                }
            }
        }
        if let Some(f) = run.last() {
            for r in &f.records {
                let Some(v) = &r.value else { continue };
                let field = |n: &str| v.get(n).and_then(Value::as_str).map(str::to_string);
                match r.store {
                    Store::Sources => wanted.extend(field("version").map(|v| format!("text/{v}"))),
                    Store::Meta if r.key.starts_with(crate::records::ASSET_PREFIX) => {
                        wanted.extend(field("sha256").map(|s| format!("assets/{s}")))
                    }
                    _ => {}
                }
            }
        }
        for key in wanted {
            if self.storage.get(Store::Raw, &key).await?.is_some() {
                continue;
            }
            let (sha, path) = if let Some(v) = key.strip_prefix("text/") {
                (v.to_string(), Some(raw_text_path(v)))
            } else if let Some(sha) = key.strip_prefix("original/") {
                let prefix = format!("{root}/raw/original/{sha}.");
                let found = folder
                    .list(&format!("{root}/raw/original"))
                    .await?
                    .into_iter()
                    .find(|e| e.path.starts_with(&prefix));
                (
                    sha.to_string(),
                    found.map(|e| e.path[root.len() + 1..].to_string()),
                )
            } else if let Some(sha) = key.strip_prefix("assets/") {
                (
                    sha.to_string(),
                    names.get(sha).map(|n| format!("raw/assets/{n}")),
                )
            } else {
                continue;
            };
            let Some(path) = path else {
                continue; // removed again later in the run: nothing to keep
            };
            match folder.read(&format!("{root}/{path}")).await? {
                Some(b) if sha256_hex(&b) == sha => batch.put(Store::Raw, key, b, Expect::Any),
                _ => {
                    missing.insert(key);
                }
            }
        }
        Ok(missing)
    }

    /// A non-page record of the run (see the module docs).
    async fn merge_record(
        &self,
        r: &RecordAfter,
        facts: &RunFacts,
        writer: OpId,
        batch: &mut Batch,
    ) -> Result<()> {
        let key = (r.store, r.key.clone());
        let stored = self.storage.get(r.store, &r.key).await?;
        let rev = stored.as_ref().map(|s| s.rev);
        let cur: Option<Value> = stored
            .map(|s| from_json(r.store, &r.key, &s.data))
            .transpose()?;
        if cur == r.value {
            return Ok(());
        }
        // The later writer in the order keeps it, on every device alike.
        let take = !facts.written_later(&key, writer);
        if take {
            put_value(batch, r, rev);
        }
        Ok(())
    }

    /// A page revision of the run: the later writer of its number keeps it.
    async fn merge_revision(
        &self,
        r: &RecordAfter,
        facts: &RunFacts,
        batch: &mut Batch,
    ) -> Result<()> {
        let stored = self.storage.get(Store::Revisions, &r.key).await?;
        let rev = stored.as_ref().map(|s| s.rev);
        let cur: Option<Revision> = stored
            .map(|s| from_json(Store::Revisions, &r.key, &s.data))
            .transpose()?;
        let theirs: Option<Revision> = r
            .value
            .as_ref()
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let key = (Store::Revisions, r.key.clone());
        let take = match (&cur, &theirs) {
            (None, _) => theirs.is_some(),
            (Some(c), Some(t)) if c == t => false,
            // The later writer of the number keeps it (a rename's deletion too).
            _ => {
                let writer = theirs.as_ref().map_or(0, |t| t.op);
                !facts.written_later(&key, facts.writer_of(&key, writer))
            }
        };
        // Two devices' revisions of one number: the other one is kept beside it.
        if let (Some(c), Some(t)) = (&cur, &theirs) {
            if c.op != t.op
                && crate::records::parse_revision_key(&r.key).is_some_and(|k| k.2.is_none())
            {
                let loser = if take { c } else { t };
                batch.put(
                    Store::Revisions,
                    crate::records::displaced_revision_key(&loser.page, loser.number, loser.op),
                    to_json(loser),
                    Expect::Any,
                );
            }
        }
        if take {
            put_value(batch, r, rev);
        }
        Ok(())
    }

    /// A page of the run (see the module docs): its body is the revision it names.
    #[allow(clippy::too_many_arguments)]
    async fn merge_page(
        &self,
        state: &mut MirrorState,
        device: &str,
        r: &RecordAfter,
        facts: &RunFacts,
        last_file: &OpFile,
        batch: &mut Batch,
        report: &mut PullReport,
    ) -> Result<bool> {
        let key = (Store::Pages, r.key.clone());
        let stored = self.storage.get(Store::Pages, &r.key).await?;
        let rev = stored.as_ref().map(|s| s.rev);
        let cur: Option<Page> = stored
            .map(|s| from_json(Store::Pages, &r.key, &s.data))
            .transpose()?;
        let writer = facts.writer_of(&key, last_file.operation.id);
        let theirs = match &r.value {
            None => None,
            Some(v) => {
                let mut page: Page = match serde_json::from_value(v.clone()) {
                    Ok(p) => p,
                    Err(e) => {
                        report.skipped.push(format!("page {}: {e}", r.key));
                        return Ok(false);
                    }
                };
                page.body = match self.body_of(&page, last_file, writer).await? {
                    Some(b) => b,
                    None => {
                        report
                            .skipped
                            .push(format!("page {}: its revision is missing", r.key));
                        return Ok(false);
                    }
                };
                Some(page)
            }
        };
        let Some(outcome) = self
            .page_outcome(&r.key, writer, &theirs, facts, last_file)
            .await?
        else {
            return Ok(false);
        };
        let take = outcome.winner.op.id == writer;
        let kept = outcome.winner.value.clone();
        if take {
            match &r.value {
                Some(v) => {
                    let mut v = v.clone();
                    if let (Some(o), Some(t)) = (v.as_object_mut(), &theirs) {
                        o.insert("body".into(), Value::String(t.body.clone()));
                    }
                    batch.put(
                        Store::Pages,
                        r.key.clone(),
                        to_json(&v),
                        Expect::from_read(rev),
                    );
                }
                None => batch.delete(Store::Pages, r.key.clone(), Expect::from_read(rev)),
            }
        } else if kept != cur {
            // An operation held here keeps the page: its version (which may not be the one
            // here now, when the run's writer saw what replaced it).
            match &kept {
                Some(p) => batch.put(
                    Store::Pages,
                    r.key.clone(),
                    to_json(p),
                    Expect::from_read(rev),
                ),
                None => batch.delete(Store::Pages, r.key.clone(), Expect::from_read(rev)),
            }
        }
        // The page's files: as the other device's mirror writes them, and as this one will;
        // the versions the merge decided between are no edits to read back either.
        let versions = std::iter::once(&theirs)
            .chain(std::iter::once(&outcome.winner.value))
            .chain(outcome.losers.iter().map(|l| &l.value));
        for t in versions.flatten() {
            state
                .known
                .entry(page_path(t.kind, &r.key))
                .or_default()
                .insert(sha256_hex(page_file(t).as_bytes()));
        }
        state.dirty.insert(r.key.clone());
        // The frontier's other versions: conflicts, shown on both devices alike.
        for other in &outcome.losers {
            let Some(shown) = kept.as_ref().or(other.value.as_ref()) else {
                continue;
            };
            let shown_now = state.put_merge_conflict(MirrorConflict {
                key: r.key.clone(),
                path: page_path(shown.kind, &r.key),
                // The version the wiki did not keep; empty when that is a deletion.
                theirs: other.value.as_ref().map(page_file).unwrap_or_default(),
                mine: None,
                tool: None,
                copy: None,
                device: Some(device.to_string()),
                deleted: other.value.is_none() || kept.is_none(),
            });
            if shown_now {
                report.conflicts.push(r.key.clone());
            }
        }
        Ok(take)
    }

    /// The body of the page `page` as the run left it, written by its operation `writer`: that
    /// operation's revision of the page's number, kept beside another device's (displaced:
    /// a later deletion of the same number keeps the plain key while this edit keeps the page),
    /// else the number's revision when it holds a page; from the run's records or those held
    /// here.
    async fn body_of(
        &self,
        page: &Page,
        last_file: &OpFile,
        writer: OpId,
    ) -> Result<Option<String>> {
        let keys = [
            crate::records::displaced_revision_key(&page.key, page.revision, writer),
            revision_key(&page.key, page.revision),
        ];
        for key in keys {
            let from_run = last_file
                .records
                .iter()
                .find(|r| r.store == Store::Revisions && r.key == key)
                .and_then(|r| r.value.clone())
                .and_then(|v| serde_json::from_value::<Revision>(v).ok());
            let revision = match from_run {
                Some(r) => Some(r),
                None => self
                    .read::<Revision>(Store::Revisions, &key)
                    .await?
                    .map(|(r, _)| r),
            };
            if let Some(state) = revision.and_then(|r| r.page_state) {
                return Ok(Some(state.body));
            }
        }
        Ok(None)
    }
}

/// Whether record `r` (a source, an attachment) needs raw bytes among `missing`.
fn needs_missing(r: &RecordAfter, missing: &BTreeSet<String>) -> bool {
    if missing.is_empty() {
        return false;
    }
    let Some(v) = &r.value else {
        return false;
    };
    let field = |name: &str| v.get(name).and_then(Value::as_str).map(str::to_string);
    match r.store {
        Store::Sources => field("version").is_some_and(|v| missing.contains(&format!("text/{v}"))),
        Store::Meta if r.key.starts_with(crate::records::ASSET_PREFIX) => {
            field("sha256").is_some_and(|s| missing.contains(&format!("assets/{s}")))
        }
        _ => false,
    }
}

/// Puts the run's value of `r` into `batch` (or its deletion), over the record at `rev`.
fn put_value(batch: &mut Batch, r: &RecordAfter, rev: Option<u64>) {
    match &r.value {
        Some(v) => batch.put(r.store, r.key.clone(), to_json(v), Expect::from_read(rev)),
        None => batch.delete(r.store, r.key.clone(), Expect::from_read(rev)),
    }
}
