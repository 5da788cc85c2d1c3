//! Reading the `.llm-wiki/` files of a vault of ours into their types.
//!
//! *Invariant:* a file that does not parse is an [`Error::InvalidInput`] naming it; a missing
//! file reads as empty.

use std::collections::BTreeMap;

use serde_json::Value;

use super::json::vault_json_error;
use super::ops::replay;
use super::{Layout, VaultManifest, VAULT_FORMAT, VAULT_VERSION};
use crate::error::{Error, Result};
use crate::model::{Asset, Operation, Page, Revision, Source};

/// The `.llm-wiki/` files of a vault of ours, each read into its type.
pub struct OurVault {
    /// `vault.json`.
    pub manifest: VaultManifest,
    /// Page records without bodies (`pages.json`).
    pub records: Vec<Page>,
    /// Source records.
    pub sources: Vec<Source>,
    /// Page revisions, every page.
    pub revisions: Vec<Revision>,
    /// Operation records.
    pub operations: Vec<Operation>,
    /// Attachment records.
    pub assets: Vec<Asset>,
    /// Claims by id.
    pub claims: BTreeMap<String, Value>,
    /// Contradiction records by id.
    pub ledger: BTreeMap<String, Value>,
    /// Other meta records by key (`meta.json`).
    pub meta: BTreeMap<String, Value>,
    /// Undo records of the operations.
    pub undo: Vec<crate::records::undo::UndoRecord>,
    /// The configuration, without secrets (`null` when absent): `config.json`, or in a folder
    /// the newest device's settings ([`super::ops::SettingsFile`]).
    pub config: Value,
    /// Operation files of a folder left out: their mirror run did not finish.
    pub unfinished: Vec<String>,
}

/// An error in a vault's contents.
pub fn bad(m: String) -> Error {
    Error::InvalidInput(format!("vault: {m}"))
}

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

/// Reads the manifest of a vault of ours. Errors: [`Error::InvalidInput`] for a format or
/// version this build does not read, or a manifest that does not parse.
pub fn read_manifest(files: &BTreeMap<String, Vec<u8>>) -> Result<VaultManifest> {
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
    Ok(manifest)
}

/// Reads the record files of a vault of ours: in a folder, the `.llm-wiki/*.json` files and then
/// the operation files after them ([`super::ops::replay`]). Errors: [`Error::InvalidInput`] for a file that
/// does not parse.
pub fn read_our_vault(
    files: &BTreeMap<String, Vec<u8>>,
    manifest: VaultManifest,
) -> Result<OurVault> {
    let parse = |path: &str| -> Result<Value> {
        match files.get(path) {
            Some(b) => serde_json::from_slice(b).map_err(|e| bad(format!("{path}: {e}"))),
            None => Ok(Value::Null),
        }
    };
    let records: Vec<Page> = typed(files, "pages.json")?;
    let sources: Vec<Source> = typed(files, "sources.json")?;
    let revisions: Vec<Revision> = typed(files, "revisions.json")?;
    let operations: Vec<Operation> = typed(files, "operations.json")?;
    let assets: Vec<Asset> = typed(files, "assets.json")?;
    let claims: BTreeMap<String, Value> = typed(files, "claims.json")?;
    let ledger: BTreeMap<String, Value> = typed(files, "ledger.json")?;
    let meta: BTreeMap<String, Value> = typed(files, "meta.json")?;
    let undo: Vec<crate::records::undo::UndoRecord> = typed(files, "undo.json")?;
    // A folder keeps settings per device: an import starts from the newest.
    let config = match super::ops::newest_settings(files)? {
        Some(s) => s.config,
        None => parse(".llm-wiki/config.json")?,
    };

    let mut vault = OurVault {
        manifest,
        records,
        sources,
        revisions,
        operations,
        assets,
        claims,
        ledger,
        meta,
        undo,
        config,
        unfinished: Vec::new(),
    };
    if vault.manifest.layout == Layout::Folder {
        vault.unfinished = replay(&mut vault, files)?;
    }
    Ok(vault)
}
