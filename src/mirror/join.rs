//! Joining a folder another device keeps (issue #25; Decisions 7 and 10): a second browser
//! profile, on this device or another, whose folder a sync tool or git keeps equal to the first
//! one's, becomes a device of the same wiki. Three steps, in this order, with an empty wiki:
//! [`Wiki::mirror_join_slot`] gives this device a slot no other device of the folder has (its
//! operation ids are then its own), [`Wiki::import_folder`] restores the wiki from the folder,
//! and [`Wiki::mirror_take`] makes the folder this device's mirror, so later runs write only
//! this device's files (`.llm-wiki/devices/<device>/`) beside the others'.
//!
//! *Invariant:* no two devices of a folder share a slot, unless two joined at once before either
//! saw the other's `device.json` (the chance is about 1 in 8,000 per such pair).

use serde::{Deserialize, Serialize};

use super::MirrorState;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::folder::Folder;
use crate::model::{op_id, MAX_SLOT};
use crate::records::META_MIRROR;
use crate::storage::Storage;
use crate::text::sha256_hex;
use crate::vault_files::json::json_one;
use crate::vault_files::ops::{device_file_path, settings_path, DeviceFile, DEVICES_DIR};
use crate::vault_files::{FOLDER_VERSION, MANIFEST_PATH};
use crate::wiki::Wiki;

/// What [`Wiki::mirror_take`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct JoinReport {
    /// This device's id.
    pub device: String,
    /// Its slot in the wiki's operation ids.
    pub slot: u16,
    /// The files of the folder taken as the mirror's own (written by the other devices).
    pub files: u64,
}

/// A wiki mirrored in a picked folder ([`Wiki::mirror_joinable`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct FolderWiki {
    /// Its folder inside the picked one (`llm-wiki`, `llm-wiki 2`…).
    pub root: String,
    /// The devices that keep it: those with a folder under `.llm-wiki/devices/`, at least 1.
    pub devices: u32,
    /// Whether it is this wiki (this device's folder is there, or this wiki holds the last
    /// operation the folder names): mirror into it, do not join it.
    pub own: bool,
}

/// What a picked folder holds for joining ([`Wiki::mirror_joinable`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct JoinCheck {
    /// Whether this wiki holds no operation yet: only such a wiki can join another.
    pub empty: bool,
    /// Whether the picked folder is itself a wiki's mirror folder (it holds
    /// `.llm-wiki/vault.json`): the person should pick the folder that holds it.
    pub inside: bool,
    /// The wikis mirrored in it, by `root`.
    pub wikis: Vec<FolderWiki>,
}

/// How many mirror folders [`Wiki::mirror_joinable`] looks at: `llm-wiki` … `llm-wiki 9`.
const JOIN_ROOTS: u32 = 9;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Which wikis the picked `folder` holds in the mirror folders a first run names
    /// ([`super::DEFAULT_ROOT`], `llm-wiki 2` … `llm-wiki 9`), and whether this wiki may join
    /// one (it is empty). The app asks this before its first run into a picked folder: a wiki
    /// there that is not `own` is another device's, to join with a new, empty wiki.
    ///
    /// Errors: [`Error::Folder`]; storage errors.
    pub async fn mirror_joinable<F: Folder>(&self, folder: &F) -> Result<JoinCheck> {
        let device = self.device_id().await?;
        let mut wikis = Vec::new();
        for n in 1..=JOIN_ROOTS {
            let root = match n {
                1 => super::DEFAULT_ROOT.to_string(),
                n => format!("{} {n}", super::DEFAULT_ROOT),
            };
            let Some(manifest) = folder.read(&format!("{root}/{MANIFEST_PATH}")).await? else {
                continue;
            };
            let last_op = serde_json::from_slice::<crate::vault_files::VaultManifest>(&manifest)
                .map(|m| m.last_op)
                .unwrap_or(0);
            let holds = self.holds_mirror(folder, &root, last_op).await?;
            let prefix = format!("{root}/{DEVICES_DIR}/");
            let mut ids = std::collections::BTreeSet::new();
            for e in folder.list(&format!("{root}/{DEVICES_DIR}")).await? {
                if let Some(id) = e
                    .path
                    .strip_prefix(&prefix)
                    .and_then(|p| p.split('/').next())
                {
                    ids.insert(id.to_string());
                }
            }
            let own = ids.contains(&device) || holds == Some(true);
            wikis.push(FolderWiki {
                root,
                devices: (ids.len() as u32).max(1),
                own,
            });
        }
        Ok(JoinCheck {
            empty: self
                .storage
                .scan_page(crate::storage::Store::Operations, "", None, 1)
                .await?
                .is_empty(),
            inside: folder.read(MANIFEST_PATH).await?.is_some(),
            wikis,
        })
    }

    /// The last operation of this device (`slot`) the mirror in `folder`/`root` already holds:
    /// the last of its operation files there, or the manifest's `last_op` when it is this
    /// device's (a whole run's arrays hold up to it); else `op_id(slot, 0)` (a device that
    /// joins). A device that takes up its folder again after stopping then writes only the
    /// operations it made since, not all of its own again.
    ///
    /// Errors: [`Error::Folder`].
    async fn synced_in<F: Folder>(
        &self,
        folder: &F,
        root: &str,
        device: &str,
        slot: u16,
        last_op: crate::model::OpId,
    ) -> Result<crate::model::OpId> {
        let dir = format!("{root}/{}", crate::vault_files::ops::ops_dir(device));
        let files = folder.list(&dir).await?.into_iter().filter_map(|e| {
            let name = e.path.rsplit_once('/')?.1.strip_suffix(".json")?;
            name.parse::<crate::model::OpId>().ok()
        });
        Ok(files
            .chain(std::iter::once(last_op))
            .filter(|id| crate::model::op_slot(*id) == slot)
            .fold(op_id(slot, 0), crate::model::OpId::max))
    }

    /// Whether this wiki is the one mirrored in `folder`/`root`, whose manifest names
    /// `last_op`: whether it holds that operation. Another wiki numbers its operations from 1
    /// too, so a held id counts only when the folder's record of it (in
    /// `.llm-wiki/operations.json`) was made at the same time, of the same kind. A device that
    /// joined the folder and made no operation of its own yet names none (its slot's
    /// `op_id(slot, 0)`): then the last operation of those arrays decides. `None` when nothing
    /// tells: a wiki that had no operation, or arrays that lack the operation (missing,
    /// damaged, still arriving).
    ///
    /// Errors: [`Error::Folder`]; storage errors; [`Error::Corrupt`] for an unreadable
    /// operation record.
    async fn holds_mirror<F: Folder>(
        &self,
        folder: &F,
        root: &str,
        last_op: crate::model::OpId,
    ) -> Result<Option<bool>> {
        use serde_json::Value;
        if last_op == 0 {
            return Ok(None);
        }
        let ops = folder
            .read(&format!("{root}/.llm-wiki/operations.json"))
            .await?
            .and_then(|b| serde_json::from_slice::<Vec<Value>>(&b).ok())
            .unwrap_or_default();
        let id_of = |o: &Value| o.get("id").and_then(Value::as_u64);
        let id = match crate::model::op_seq(last_op) {
            0 => match ops.last().and_then(id_of) {
                Some(id) => id,
                None => return Ok(None),
            },
            _ => last_op,
        };
        let key = crate::records::operation_key(id);
        let Some(held) = self
            .storage
            .get(crate::storage::Store::Operations, &key)
            .await?
        else {
            return Ok(Some(false));
        };
        let Some(theirs) = ops.iter().find(|o| id_of(o) == Some(id)) else {
            return Ok(None); // an id alone does not tell: another wiki has it too
        };
        let held: Value =
            crate::records::from_json(crate::storage::Store::Operations, &key, &held.data)?;
        Ok(Some(
            ["time", "kind"]
                .iter()
                .all(|f| held.get(f) == theirs.get(f)),
        ))
    }

    /// The first step of joining the mirror in `folder`/`root` (see the module docs): picks a
    /// slot at random among those no device of the folder has (their `device.json`; slot 0 is
    /// the device that began the wiki) and makes this empty wiki number its operations there.
    ///
    /// Errors: [`Error::InvalidInput`] when `root` holds no mirror, or the wiki is not empty;
    /// [`Error::Folder`]; storage errors; [`Error::Storage`] without a random source.
    pub async fn mirror_join_slot<F: Folder>(&self, folder: &F, root: &str) -> Result<u16> {
        if folder
            .read(&format!("{root}/{MANIFEST_PATH}"))
            .await?
            .is_none()
        {
            return Err(Error::InvalidInput(format!(
                "{root}/ holds no wiki mirrored by llm-wiki"
            )));
        }
        let mut taken = vec![0u16];
        for e in folder.list(&format!("{root}/{DEVICES_DIR}")).await? {
            if !e.path.ends_with("/device.json") {
                continue;
            }
            if let Some(b) = folder.read(&e.path).await? {
                if let Ok(d) = serde_json::from_slice::<DeviceFile>(&b) {
                    taken.push(d.slot);
                }
            }
        }
        let slot = loop {
            let mut b = [0u8; 2];
            getrandom::getrandom(&mut b)
                .map_err(|e| Error::Storage(format!("no random source for a device slot: {e}")))?;
            let s = u16::from_le_bytes(b) & MAX_SLOT;
            if !taken.contains(&s) {
                break s;
            }
        };
        self.take_device_slot(slot).await?;
        Ok(slot)
    }

    /// The last step of joining (see the module docs): after [`Wiki::import_folder`], takes the
    /// mirror in `folder`/`root` as this device's. Every file there but the devices' own is
    /// taken as written by the mirror (so a later run may write over it, and a pull sees no
    /// change in it); this device's `device.json` (its slot) and `settings.json` are written.
    ///
    /// Errors: [`Error::InvalidInput`] when this wiki already mirrors somewhere, or does not
    /// hold the folder's wiki (import it first); [`Error::Folder`]; storage errors.
    pub async fn mirror_take<F: Folder>(&self, folder: &F, root: &str) -> Result<JoinReport> {
        if self.mirror_state().await?.0.is_some() {
            return Err(Error::InvalidInput(
                "this wiki mirrors into a folder already: stop using it first".into(),
            ));
        }
        let manifest = folder
            .read(&format!("{root}/{MANIFEST_PATH}"))
            .await?
            .ok_or_else(|| {
                Error::InvalidInput(format!("{root}/ holds no wiki mirrored by llm-wiki"))
            })?;
        let manifest: crate::vault_files::VaultManifest = serde_json::from_slice(&manifest)
            .map_err(|e| Error::InvalidInput(format!("{root}/{MANIFEST_PATH}: {e}")))?;
        let device = self.device_id().await?;
        // This wiki's: it holds the folder's last operation, or its device keeps the folder
        // already (taken up again after Stop); a folder whose wiki had no operation too.
        let mine = match self.holds_mirror(folder, root, manifest.last_op).await? {
            Some(held) => held,
            None => {
                manifest.last_op == 0
                    || folder
                        .read(&format!("{root}/{}", settings_path(&device)))
                        .await?
                        .is_some()
            }
        };
        if !mine {
            return Err(Error::InvalidInput(format!(
                "this wiki is not the one in {root}/: import that folder into an empty wiki first"
            )));
        }
        let slot = self.device_slot().await?;
        let mut state = MirrorState::new(META_MIRROR, root);
        state.device = device.clone();
        state.synced = self
            .synced_in(folder, root, &device, slot, manifest.last_op)
            .await?;
        let prefix = format!("{root}/");
        let devices = format!("{DEVICES_DIR}/");
        for e in folder.list(root).await? {
            let Some(path) = e.path.strip_prefix(&prefix) else {
                continue;
            };
            if path.starts_with(&devices)
                || path.starts_with(crate::vault_files::ops::LEGACY_OPS_DIR)
                || path == crate::vault_files::ops::LEGACY_RUN_PATH
                || path.starts_with(super::pull::INBOX)
            {
                continue;
            }
            let Some(b) = folder.read(&e.path).await? else {
                continue;
            };
            if let Some((_, key)) = super::pull::page_of_path(path) {
                // A page file edited in the folder since the mirror wrote it: the first pull
                // reads it as the person's edit.
                let page = self
                    .read::<crate::model::Page>(crate::storage::Store::Pages, key)
                    .await?;
                if page.is_none_or(|(p, _)| crate::markdown::page::page_file(&p).as_bytes() != b) {
                    continue;
                }
                state.seen.insert(path.to_string(), (e.size, e.modified));
            }
            state.files.insert(path.to_string(), sha256_hex(&b));
        }
        let files = state.files.len() as u64;
        let mut own = vec![(
            settings_path(&device),
            self.settings_file(self.clock.now_ms()).await?,
        )];
        // Slot 0 is the device that began the wiki; a run writes no `device.json` for it.
        if slot != 0 {
            let file = DeviceFile {
                id: device.clone(),
                slot,
            };
            own.push((device_file_path(&device), json_one(&file)));
        }
        for (path, bytes) in own {
            folder.write(&format!("{root}/{path}"), &bytes).await?;
            state.files.insert(path, sha256_hex(&bytes));
        }
        state.version = FOLDER_VERSION;
        state.shared = true;
        self.save_mirror_state(&state, None).await?;
        Ok(JoinReport {
            device,
            slot,
            files,
        })
    }
}
