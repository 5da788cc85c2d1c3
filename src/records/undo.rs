//! Undo records (Decision 7): what one operation overwrote, computed from its batch before it
//! commits (`Wiki::finish` adds it to the batch as `meta/undo/<op>`), and read back for a
//! rollback or a vault export. For every record the batch writes that [`super::journaled`]
//! keeps: nothing, the exact bytes (a meta record stripped of secrets,
//! [`super::secrets::without_secrets`]), or, for a page, the number of the revision whose state
//! it was (revisions already hold that state). Raw bytes are content-addressed: their entry only
//! says whether they were there.
//!
//! *Invariant:* an undo record never holds a secret, and never a record a rollback must not
//! restore (the op counter, derived records, the append-only history).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::secrets::without_secrets;
use super::{from_json, journaled, operation_key, revision_key, UNDO_PREFIX};
use crate::error::{Error, Result};
use crate::model::{OpId, Page, Revision, Store};
use crate::storage::{Batch, Expect, Storage};

/// What one operation overwrote: the state before it of every record it wrote (see the module
/// docs for what is left out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UndoRecord {
    /// The operation.
    pub op: OpId,
    /// One entry per record written, in batch order.
    pub entries: Vec<UndoEntry>,
    /// The keys of the page revisions the operation wrote or deleted (a rename moves a page's
    /// history), sorted. Revisions are history, never restored by a rollback; the folder
    /// mirror copies them. `None` in records written before this field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revisions: Option<Vec<String>>,
}

/// The state of one record before an operation wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UndoEntry {
    /// The store.
    pub store: Store,
    /// The record key.
    pub key: String,
    /// What was there.
    pub before: Before,
}

/// What a record held before an operation wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "was", content = "value")]
pub enum Before {
    /// Nothing: the operation created it.
    Absent,
    /// Content-addressed raw bytes that were already there (the same bytes, by their key).
    Present,
    /// A page record equal to the state of this revision of the same key.
    Revision(u64),
    /// These bytes (UTF-8: JSON records and documents).
    Data(String),
}

/// The undo record of an operation whose batch is `batch` (read before it commits).
pub(crate) async fn undo_record<S: Storage>(
    storage: &S,
    batch: &Batch,
    op: OpId,
) -> Result<UndoRecord> {
    let own = operation_key(op);
    let mut seen: BTreeSet<(Store, String)> = BTreeSet::new();
    let mut todo: Vec<(Store, String, Expect)> = Vec::new();
    let mut revisions: BTreeSet<String> = BTreeSet::new();
    for w in &batch.writes {
        let (store, key) = (w.store(), w.key());
        if store == Store::Revisions {
            revisions.insert(key.to_string());
        }
        if journaled(store, key, &own) && seen.insert((store, key.to_string())) {
            todo.push((store, key.to_string(), w.expect()));
        }
    }
    // A write that expects its record absent has nothing to restore (the batch commits only
    // if it is absent); the others' records are read in one request per store.
    let mut found: std::collections::HashMap<(Store, String), crate::storage::Record> =
        std::collections::HashMap::new();
    let stores: BTreeSet<Store> = todo.iter().map(|(s, _, _)| *s).collect();
    for store in stores {
        let keys: Vec<String> = todo
            .iter()
            .filter(|(s, _, e)| *s == store && *e != Expect::Absent)
            .map(|(_, k, _)| k.clone())
            .collect();
        for (k, r) in keys.iter().zip(storage.get_many(store, &keys).await?) {
            if let Some(r) = r {
                found.insert((store, k.clone()), r);
            }
        }
    }
    let mut entries = Vec::new();
    for (store, key, _) in todo {
        let key = key.as_str();
        let before = match found.remove(&(store, key.to_string())) {
            None => Before::Absent,
            Some(_) if store == Store::Raw => Before::Present,
            Some(r) => {
                let text = String::from_utf8(r.data).map_err(|e| Error::Corrupt {
                    store,
                    key: key.to_string(),
                    message: e.to_string(),
                })?;
                match store {
                    Store::Pages => page_before(storage, key, text).await?,
                    Store::Meta => Before::Data(without_secrets(key, text)),
                    _ => Before::Data(text),
                }
            }
        };
        entries.push(UndoEntry {
            store,
            key: key.to_string(),
            before,
        });
    }
    Ok(UndoRecord {
        op,
        entries,
        revisions: Some(revisions.into_iter().collect()),
    })
}

/// A page record's before-image: the revision holding exactly this state, else the bytes.
async fn page_before<S: Storage>(storage: &S, key: &str, text: String) -> Result<Before> {
    let page: Page = from_json(Store::Pages, key, text.as_bytes())?;
    let rk = revision_key(key, page.revision);
    if let Some(r) = storage.get(Store::Revisions, &rk).await? {
        let rev: Revision = from_json(Store::Revisions, &rk, &r.data)?;
        if rev.page_state.as_ref() == Some(&page) {
            return Ok(Before::Revision(page.revision));
        }
    }
    Ok(Before::Data(text))
}

/// Every undo record, by operation.
pub(crate) async fn undo_records<S: Storage>(storage: &S) -> Result<BTreeMap<OpId, UndoRecord>> {
    let mut records = Vec::new();
    for (k, r) in storage.scan(Store::Meta, UNDO_PREFIX).await? {
        records.push(from_json::<UndoRecord>(Store::Meta, &k, &r.data)?);
    }
    Ok(records.into_iter().map(|r| (r.op, r)).collect())
}

/// Every undo record, oldest first (for the vault export), with meta before-images stripped
/// of secrets again: records written before undo records were stripped may hold a key.
pub(crate) async fn all_undo_records<S: Storage>(storage: &S) -> Result<Vec<UndoRecord>> {
    let mut records: Vec<UndoRecord> = undo_records(storage).await?.into_values().collect();
    for e in records.iter_mut().flat_map(|r| r.entries.iter_mut()) {
        if let (Store::Meta, Before::Data(text)) = (e.store, &mut e.before) {
            *text = without_secrets(&e.key, std::mem::take(text));
        }
    }
    Ok(records)
}
