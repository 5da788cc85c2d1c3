//! One file per operation, the folder layout's log (Decision 10):
//! `.llm-wiki/devices/<device>/ops/<id>.json` holds the operation record and its undo record. Each
//! device (browser profile) that mirrors the wiki writes under its own `devices/<device>/`
//! folder only, so no file there is one two devices both rewrite; folders written before device
//! folders existed (`vault.json` version 2) hold them in `.llm-wiki/ops/`, which is still read. A mirror run writes the files of one or more
//! operations; the last one's file also holds every record the run changed (page revisions
//! among them), as it was after that operation, and is written after the run's other files.
//! It is the run's commit mark: a reader counts an operation only when the file of its run's
//! last operation exists.
//!
//! Before anything else, a run writes its device's `run.json` ([`RunFile`]): its last operation
//! and every file it is about to write, with the bytes' SHA-256. A reader that finds the run
//! unfinished puts back what the counted operations say for each file the run had already
//! written ([`settle_unfinished_run`]), so a run cut short leaves the folder at the operation
//! before it.
//!
//! *Invariant:* replaying the counted operation files over the `.llm-wiki/*.json` files of the
//! manifest's `last_op` gives the records the wiki held after the last counted operation.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::read::{bad, OurVault};
use crate::error::Result;
use crate::model::{Asset, OpId, Operation, Page, Revision, Source, Store};
use crate::records::undo::UndoRecord;
use crate::records::MetaRecord;

/// The folder of the per-device folders.
pub const DEVICES_DIR: &str = ".llm-wiki/devices";

/// The folder of operation files of a folder written before device folders existed.
pub const LEGACY_OPS_DIR: &str = ".llm-wiki/ops";

/// The `run.json` of a folder written before device folders existed.
pub const LEGACY_RUN_PATH: &str = ".llm-wiki/run.json";

/// The folder of what `device` writes: `.llm-wiki/devices/<device>`.
pub fn device_dir(device: &str) -> String {
    format!("{DEVICES_DIR}/{device}")
}

/// The folder of `device`'s operation files: `.llm-wiki/devices/<device>/ops`.
pub fn ops_dir(device: &str) -> String {
    format!("{DEVICES_DIR}/{device}/ops")
}

/// The file of operation `id`, written by `device`: `.llm-wiki/devices/<device>/ops/<id, 12
/// digits>.json`.
pub fn op_path(device: &str, id: OpId) -> String {
    format!("{}/{id:012}.json", ops_dir(device))
}

/// The `run.json` of `device`'s mirror runs.
pub fn run_path(device: &str) -> String {
    format!("{DEVICES_DIR}/{device}/run.json")
}

/// `device`'s `conflicts.json`: the conflicts with other devices' versions it shows and those
/// decided on it (the mirror's own shape), so every device shows and ends the same ones.
pub fn conflicts_path(device: &str) -> String {
    format!("{DEVICES_DIR}/{device}/conflicts.json")
}

/// `device`'s `device.json` ([`DeviceFile`]).
pub fn device_file_path(device: &str) -> String {
    format!("{DEVICES_DIR}/{device}/device.json")
}

/// A device's `device.json`: its id and its slot in the wiki's operation ids
/// ([`crate::model::op_id`]); a device that joins the folder takes a slot none has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceFile {
    /// The device id.
    pub id: String,
    /// Its slot.
    pub slot: u16,
}

/// The settings `device` keeps in the folder ([`SettingsFile`]).
pub fn settings_path(device: &str) -> String {
    format!("{DEVICES_DIR}/{device}/settings.json")
}

/// The folder of operation files `path` is in (a device's, or the legacy one), when it is one:
/// `…/ops/<id, 12 digits or more>.json`.
fn op_file_dir(path: &str) -> Option<&str> {
    let (dir, name) = path.rsplit_once('/')?;
    let id = name.strip_suffix(".json")?;
    // 12 digits at least: ids of a slot above 0 have more (Decision 7).
    let ok = id.len() >= 12 && id.bytes().all(|b| b.is_ascii_digit());
    let device_ops = dir
        .strip_prefix(DEVICES_DIR)
        .and_then(|d| d.strip_prefix('/'))
        .and_then(|d| d.strip_suffix("/ops"))
        .is_some_and(|d| !d.is_empty() && !d.contains('/'));
    (ok && (dir == LEGACY_OPS_DIR || device_ops)).then_some(dir)
}

/// Whether `path` (inside a mirror's root) is a `run.json`: a device's or the legacy one.
pub fn is_run_path(path: &str) -> bool {
    path == LEGACY_RUN_PATH
        || path
            .strip_prefix(DEVICES_DIR)
            .and_then(|d| d.strip_prefix('/'))
            .and_then(|d| d.strip_suffix("/run.json"))
            .is_some_and(|d| !d.is_empty() && !d.contains('/'))
}

/// A device's settings in the folder: the configuration as that device last saved it (no
/// secret: [`crate::records::portable_meta_value`]). Settings are per device (Decision 10): a
/// device never takes another's; an import of the folder starts from the newest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettingsFile {
    /// When the operation that last saved them ran (ms): of several devices' settings, an
    /// import takes the newest.
    pub time: crate::clock::Millis,
    /// The configuration (`null`: none saved).
    pub config: Value,
}

/// The newest of the devices' settings among `files` (see [`SettingsFile`]), if any.
///
/// Errors: [`crate::error::Error::InvalidInput`] for a settings file that does not parse.
pub fn newest_settings(files: &BTreeMap<String, Vec<u8>>) -> Result<Option<SettingsFile>> {
    let prefix = format!("{DEVICES_DIR}/");
    let mut newest: Option<SettingsFile> = None;
    for (path, data) in files.range(prefix.clone()..) {
        if !path.starts_with(&prefix) {
            break;
        }
        let device = &path[prefix.len()..];
        if device
            .strip_suffix("/settings.json")
            .is_none_or(|d| d.contains('/'))
        {
            continue;
        }
        let s: SettingsFile =
            serde_json::from_slice(data).map_err(|e| bad(format!("{path}: {e}")))?;
        if newest.as_ref().is_none_or(|n| s.time > n.time) {
            newest = Some(s);
        }
    }
    Ok(newest)
}

/// `.llm-wiki/devices/<device>/ops/<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpFile {
    /// The operation record.
    pub operation: Operation,
    /// Its undo record (`None` for an operation that has none, such as an import's).
    #[serde(default)]
    pub undo: Option<UndoRecord>,
    /// The last operation of the mirror run that wrote this file: this file counts only when
    /// that operation's file exists.
    pub run_last: OpId,
    /// In the run's last file only: every record the run's operations wrote, as it was after
    /// the run (`None`: deleted). Pages without their bodies (the `.md` files hold them), meta
    /// records without secrets, only what a vault carries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<RecordAfter>,
    /// In the run's last file only: for each page revision the undo records name as a page's
    /// state before an operation (`Before::Revision`), the operation that wrote it, by
    /// revision key. Another device merging the run tells by it whether its own revision of
    /// that number is the same one (two devices can each write a page's next number).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bases: BTreeMap<String, OpId>,
}

/// A record as a mirror run left it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordAfter {
    /// The store.
    pub store: Store,
    /// The key.
    pub key: String,
    /// The record, or `None` when the run deleted it.
    pub value: Option<Value>,
}

/// Whether a vault carries a record of `store`/`key` in its `.llm-wiki/` files (the rest are
/// files of their own, derived, or local to one browser).
pub fn carried(store: Store, key: &str) -> bool {
    match store {
        Store::Pages
        | Store::Revisions
        | Store::Sources
        | Store::Claims
        | Store::Ledger
        | Store::Operations => true,
        Store::Meta => {
            let kind = MetaRecord::of(key);
            kind.exported() && kind != MetaRecord::Undo
        }
        Store::Raw | Store::Documents | Store::Search => false,
    }
}

/// Replays the operation files among `files` (every device's) whose operations the arrays do
/// not hold and that are counted (see the module docs) onto `vault`, in the total order of
/// Decision 7, and moves its `last_op` to the last of them in that order.
/// Returns the paths of the files left out because their run did not finish.
///
/// Errors: [`crate::error::Error::InvalidInput`] for an operation file that does not parse.
pub fn replay(vault: &mut OurVault, files: &BTreeMap<String, Vec<u8>>) -> Result<Vec<String>> {
    let mut ops: Vec<(String, OpFile)> = Vec::new();
    for (path, data) in files.range(".llm-wiki/".to_string()..) {
        if !path.starts_with(".llm-wiki/") {
            break;
        }
        if op_file_dir(path).is_none() {
            continue;
        }
        let f: OpFile = serde_json::from_slice(data).map_err(|e| bad(format!("{path}: {e}")))?;
        ops.push((path.clone(), f));
    }
    let mut ids: HashMap<OpId, usize> = vault
        .operations
        .iter()
        .enumerate()
        .map(|(i, o)| (o.id, i))
        .collect();
    // The arrays hold what a whole run wrote: the operations in them are there already, as
    // of then.
    ops.retain(|(_, f)| !ids.contains_key(&f.operation.id));
    // In the total order (Decision 7), whichever devices wrote them.
    let order = crate::model::op_orders(ops.iter().map(|(_, f)| &f.operation));
    ops.sort_by_key(|(_, f)| order[&f.operation.id]);
    let mut left_out = Vec::new();
    for (path, f) in ops {
        let dir = op_file_dir(&path).unwrap_or(LEGACY_OPS_DIR);
        let run_last = format!("{dir}/{:012}.json", f.run_last);
        if !files.contains_key(&run_last) || f.run_last < f.operation.id {
            left_out.push(path);
            continue;
        }
        let id = f.operation.id;
        upsert_operation(&mut vault.operations, &mut ids, f.operation);
        vault.undo.retain(|u| u.op != id);
        vault.undo.extend(f.undo);
        for r in f.records {
            apply(vault, &mut ids, r)?;
        }
        vault.manifest.last_op = id;
    }
    Ok(left_out)
}

fn upsert_operation(ops: &mut Vec<Operation>, ids: &mut HashMap<OpId, usize>, op: Operation) {
    match ids.get(&op.id) {
        Some(&i) => ops[i] = op,
        None => {
            ids.insert(op.id, ops.len());
            ops.push(op);
        }
    }
}

fn typed<T: serde::de::DeserializeOwned>(r: &RecordAfter, v: &Value) -> Result<T> {
    serde_json::from_value(v.clone()).map_err(|e| {
        bad(format!(
            "record {:?}/{} in an operation file: {e}",
            r.store, r.key
        ))
    })
}

fn set<T>(list: &mut Vec<T>, same: impl Fn(&T) -> bool, value: Option<T>) {
    match (list.iter().position(same), value) {
        (Some(i), Some(v)) => list[i] = v,
        (Some(i), None) => {
            list.remove(i);
        }
        (None, Some(v)) => list.push(v),
        (None, None) => {}
    }
}

/// Applies one record of a run to `vault`.
fn apply(vault: &mut OurVault, ids: &mut HashMap<OpId, usize>, r: RecordAfter) -> Result<()> {
    let key = r.key.as_str();
    match (r.store, &r.value) {
        (Store::Pages, v) => {
            let page: Option<Page> = v.as_ref().map(|v| typed(&r, v)).transpose()?;
            set(&mut vault.records, |p| p.key == key, page);
        }
        (Store::Revisions, v) => {
            let revision: Option<Revision> = v.as_ref().map(|v| typed(&r, v)).transpose()?;
            let (page, number, displaced) =
                crate::records::parse_revision_key(key).unwrap_or((key, 0, None));
            set(
                &mut vault.revisions,
                |x| x.page == page && x.number == number && displaced.is_none_or(|op| x.op == op),
                revision,
            );
        }
        (Store::Sources, v) => {
            let source: Option<Source> = v.as_ref().map(|v| typed(&r, v)).transpose()?;
            set(&mut vault.sources, |s| s.key == key, source);
        }
        (Store::Operations, Some(v)) => {
            let op: Operation = typed(&r, v)?;
            upsert_operation(&mut vault.operations, ids, op);
        }
        (Store::Claims | Store::Ledger | Store::Meta, v) => {
            let map = match r.store {
                Store::Claims => &mut vault.claims,
                Store::Ledger => &mut vault.ledger,
                _ => match MetaRecord::of(key) {
                    MetaRecord::Asset => {
                        let asset: Option<Asset> = v.as_ref().map(|v| typed(&r, v)).transpose()?;
                        let name = key.strip_prefix(crate::records::ASSET_PREFIX);
                        set(&mut vault.assets, |a| Some(a.name.as_str()) == name, asset);
                        return Ok(());
                    }
                    MetaRecord::Config => {
                        vault.config = v.clone().unwrap_or(Value::Null);
                        return Ok(());
                    }
                    kind if kind.in_meta_json() => &mut vault.meta,
                    _ => return Ok(()),
                },
            };
            match v {
                Some(v) => map.insert(r.key.clone(), v.clone()),
                None => map.remove(key),
            };
        }
        // Operation records are never deleted; raw bytes, revisions and documents are files
        // or travel in the operation's own file.
        _ => {}
    }
    Ok(())
}

/// A device's `run.json`: the mirror run it last started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFile {
    /// Its last operation: the run finished when that operation's file exists (or, for a whole
    /// run, when the manifest's `last_op` reached it).
    pub run_last: OpId,
    /// Whether it writes the whole wiki again (the `.llm-wiki/*.json` files among them).
    #[serde(default)]
    pub whole: bool,
    /// Every file it writes or removes: path → SHA-256 of the new bytes, or `None`.
    pub files: BTreeMap<String, Option<String>>,
}

/// Puts back, in `files`, what the counted operations say for every file an unfinished mirror
/// run (see the module docs) had already written or removed: a page file as its recorded page
/// and last counted revision give it (or no file, for a page the run created), index.md from
/// the recorded pages, log.md without the entries of uncounted operations, and no file for a
/// new source text, original or attachment. schema.md keeps the run's version (nothing holds
/// the one before). Files the run had not reached yet, or that changed since, stay as they are.
/// Every `run.json` (each device's, and a legacy one) is settled so, and dropped. Returns the
/// paths put back.
///
/// Errors: [`crate::error::Error::InvalidInput`] for a `run.json` that does not parse, or an
/// unfinished run that was writing the whole wiki again (its `.llm-wiki/*.json` files are
/// mixed: the browser that mirrors the wiki finishes the run on its next start).
pub fn settle_unfinished_run(
    vault: &OurVault,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<Vec<String>> {
    let runs: Vec<String> = files.keys().filter(|p| is_run_path(p)).cloned().collect();
    let mut settled = Vec::new();
    for path in runs {
        let Some(bytes) = files.remove(&path) else {
            continue;
        };
        let run: RunFile =
            serde_json::from_slice(&bytes).map_err(|e| bad(format!("{path}: {e}")))?;
        settled.extend(settle_run(vault, files, run)?);
    }
    Ok(settled)
}

/// [`settle_unfinished_run`] for one run.
fn settle_run(
    vault: &OurVault,
    files: &mut BTreeMap<String, Vec<u8>>,
    run: RunFile,
) -> Result<Vec<String>> {
    use crate::documents::INDEX_MD;
    use crate::model::op_slot;
    // The last counted operation of the run's device (Decision 7: its slot): the run finished
    // when it reached its own last one.
    let slot = op_slot(run.run_last);
    let last = std::iter::once(vault.manifest.last_op)
        .chain(vault.operations.iter().map(|o| o.id))
        .filter(|id| op_slot(*id) == slot)
        .max()
        .unwrap_or(0);
    if run.run_last <= last {
        return Ok(Vec::new());
    }
    if run.whole {
        return Err(bad(format!(
            "a mirror run that writes the whole wiki again (up to operation {}) did not finish: \
             open the wiki in the browser that mirrors it, so the run finishes, then import",
            run.run_last
        )));
    }
    let mut settled = Vec::new();
    for (path, planned) in &run.files {
        let there = files.get(path).map(|b| crate::text::sha256_hex(b));
        if there != *planned {
            continue; // not reached, or changed since: as it is
        }
        if path == crate::documents::LOG_MD {
            if let Some(b) = files.get_mut(path) {
                *b = log_up_to(b, slot, last);
            }
        } else if path.starts_with("wiki/") || path.starts_with("raw/") || path == INDEX_MD {
            match committed_file(vault, path) {
                Some(b) => files.insert(path.clone(), b),
                None => files.remove(path),
            };
        } else {
            // schema.md: its bytes before the run are not kept anywhere; the run's are taken.
            continue;
        }
        settled.push(path.clone());
    }
    Ok(settled)
}

/// What the counted records say `path` holds (`None`: no such file).
fn committed_file(vault: &OurVault, path: &str) -> Option<Vec<u8>> {
    use crate::documents::{render_index, INDEX_MD};
    if path == INDEX_MD {
        return Some(render_index(&vault.records).into_bytes());
    }
    let (kind, key) = path
        .strip_prefix("wiki/")?
        .split_once('/')
        .and_then(|(k, f)| Some((crate::model::PageKind::parse(k)?, f.strip_suffix(".md")?)))?;
    let record = vault
        .records
        .iter()
        .find(|p| p.key == key && p.kind == kind)?;
    let body = vault
        .revisions
        .iter()
        .filter(|r| r.page == key)
        .max_by_key(|r| r.number)
        .and_then(|r| r.page_state.as_ref())
        .map(|s| s.body.clone())?;
    let page = Page {
        body,
        ..record.clone()
    };
    Some(crate::markdown::page::page_file(&page).into_bytes())
}

/// log.md without the entries of the operations of `slot` after `last` (each entry is a
/// `## [time] kind | summary` heading followed by `- op <id>`; see
/// [`crate::documents::log_entry`]): the device's log ends with them.
fn log_up_to(log: &[u8], slot: u16, last: OpId) -> Vec<u8> {
    let text = String::from_utf8_lossy(log);
    let mut at = 0;
    while let Some(i) = text[at..].find("\n## [") {
        let start = at + i;
        let id = text[start + 1..]
            .split_once("\n\n- op ")
            .and_then(|(_, rest)| rest.split('\n').next())
            .and_then(|n| n.trim().parse::<OpId>().ok());
        if id.is_some_and(|id| crate::model::op_slot(id) == slot && id > last) {
            return text[..start].as_bytes().to_vec();
        }
        at = start + 1;
    }
    log.to_vec()
}
