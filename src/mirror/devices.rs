//! What each device says to the others beside its operations (issue #25; Decision 10): the
//! other devices' files under `.llm-wiki/devices/` (listed once per pull) and each device's
//! `conflicts.json`, the conflicts it shows and those it decided, so every device shows and
//! ends the same ones.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::pull::PullReport;
use super::{MirrorConflict, MirrorState};
use crate::clock::Clock;
use crate::error::Result;
use crate::folder::Folder;
use crate::markdown::page::page_file;
use crate::model::{OpId, Page, Store};
use crate::storage::Storage;
use crate::text::sha256_hex;
use crate::vault_files::ops::{conflicts_path, DEVICES_DIR};
use crate::wiki::Wiki;

/// A device's `conflicts.json` ([`conflicts_path`]).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConflictsFile {
    /// The conflicts with another device's version it shows.
    open: Vec<MirrorConflict>,
    /// Those decided, by [`MirrorConflict::id`].
    decided: Vec<String>,
}

/// This device's `conflicts.json` as the mirror writes it now: `None` when it has nothing to say.
pub(super) fn conflicts_file(state: &MirrorState) -> Option<(String, Vec<u8>)> {
    let open: Vec<MirrorConflict> = state
        .conflicts
        .values()
        .filter(|c| c.device.is_some())
        .cloned()
        .collect();
    let path = conflicts_path(&state.device);
    if open.is_empty() && state.decided.is_empty() && !state.files.contains_key(&path) {
        return None;
    }
    let file = ConflictsFile {
        open,
        decided: state.decided.iter().cloned().collect(),
    };
    Some((path, crate::vault_files::json::json_one(&file)))
}

/// Another device's files in the folder, by path inside the picked folder.
#[derive(Debug, Default)]
pub(super) struct DeviceFiles {
    /// Its operation files, by id.
    pub(super) ops: BTreeMap<OpId, String>,
    /// Its `run.json`.
    pub(super) run: Option<String>,
    /// Its `conflicts.json`.
    conflicts: Option<String>,
}

/// The other devices' files, by device id: one listing of `.llm-wiki/devices/` for all a pull
/// reads there.
///
/// Errors: [`crate::error::Error::Folder`].
pub(super) async fn other_devices<F: Folder>(
    folder: &F,
    state: &MirrorState,
) -> Result<BTreeMap<String, DeviceFiles>> {
    let dir = format!("{}/{DEVICES_DIR}", state.root);
    let mut out: BTreeMap<String, DeviceFiles> = BTreeMap::new();
    for e in folder.list(&dir).await? {
        let Some((device, rest)) = e.path[dir.len() + 1..].split_once('/') else {
            continue;
        };
        if device == state.device {
            continue;
        }
        let files = out.entry(device.to_string()).or_default();
        match rest {
            "run.json" => files.run = Some(e.path.clone()),
            "conflicts.json" => files.conflicts = Some(e.path.clone()),
            _ => {
                let id = rest
                    .strip_prefix("ops/")
                    .and_then(|n| n.strip_suffix(".json"))
                    .and_then(|n| n.parse::<OpId>().ok());
                if let Some(id) = id {
                    files.ops.insert(id, e.path.clone());
                }
            }
        }
    }
    Ok(out)
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Takes in the conflicts the other devices show and those they decided (their
    /// `conflicts.json`), and ends those with nothing left to decide (the page now is the
    /// other version, or the deletion that lost is the page's state; a folder version another
    /// device's mirror wrote for a merged operation): every device then shows the same ones.
    /// Returns the sync tools' conflict copies so ended, to remove.
    ///
    /// Errors: [`crate::error::Error::Folder`]; storage errors.
    pub(super) async fn exchange_conflicts<F: Folder>(
        &self,
        folder: &F,
        state: &mut MirrorState,
        others: &BTreeMap<String, DeviceFiles>,
        report: &mut PullReport,
    ) -> Result<Vec<String>> {
        for (device, files) in others {
            let Some(path) = &files.conflicts else {
                continue;
            };
            let Some(b) = folder.read(path).await? else {
                continue;
            };
            let Ok(file) = serde_json::from_slice::<ConflictsFile>(&b) else {
                report.skipped.push(format!("{path}: not a conflicts file"));
                continue;
            };
            state.decided.extend(file.decided);
            for mut c in file.open {
                c.device = Some(device.to_string());
                c.mine = None;
                let key = c.key.clone();
                if state.put_merge_conflict(c) {
                    report.conflicts.push(key);
                }
            }
        }
        // A page file (or a sync tool's copy of one) taken for an edit made outside, in
        // conflict with the wiki, that another device's mirror wrote for an operation merged
        // since: the merge has that version (and shows any conflict it makes).
        let written: Vec<(String, Option<String>)> = state
            .conflicts
            .values()
            .filter(|c| c.device.is_none() && c.tool != Some(super::SyncTool::Git))
            .map(|c| (c, sha256_hex(c.theirs.as_bytes())))
            .filter(|(c, sha)| state.known.get(&c.path).is_some_and(|k| k.contains(sha)))
            .map(|(c, sha)| (c.key.clone(), c.path.clone(), c.copy.clone(), sha))
            .collect::<Vec<_>>()
            .into_iter()
            .map(|(k, path, copy, sha)| {
                if copy.is_none() {
                    state.held.remove(&path);
                    state.seen.remove(&path);
                    state.files.insert(path, sha);
                }
                (k, copy)
            })
            .collect();
        let mut copies = Vec::new();
        for (k, copy) in written {
            state.conflicts.remove(&k);
            copies.extend(copy);
        }
        // The merge's conflicts those kept out (still kept out: they wait again).
        report.conflicts.extend(state.put_waiting());
        let mut ended = Vec::new();
        for c in state.conflicts.values_mut().filter(|c| c.device.is_some()) {
            let now = self
                .read::<Page>(Store::Pages, &c.key)
                .await?
                .map(|(p, _)| p);
            let settled = match &now {
                Some(p) => page_file(p) == c.theirs,
                None => c.theirs.is_empty(),
            };
            if settled || state.decided.contains(&c.id()) {
                ended.push(c.key.clone());
            }

            // A deletion on one side: as the records say now, alike on every device.
            c.deleted = c.theirs.is_empty() || now.is_none();
        }
        for k in ended {
            state.conflicts.remove(&k);
        }
        Ok(copies)
    }
}
