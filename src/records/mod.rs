//! The stored records' names and rules: every store key and meta-record name the wiki writes,
//! the key formats of revisions, operations and undo records, the JSON codec of the records, the
//! one policy of which meta records a vault export carries and which an undo record journals
//! ([`MetaRecord`]), with the stripping of secrets ([`secrets`]), and the undo-record computation
//! ([`undo`]).
//!
//! Layer 3: it sits above the mechanisms (`storage`, `markdown`, `llm`'s configuration type) and
//! below the [`crate::wiki`] kernel and every operation, so an operation names a record through
//! this module and never through another operation.
//!
//! *Invariant:* a record name is spelled once, here; a meta record's export and journal rules are
//! decided by [`MetaRecord::of`] alone, so an export never carries what a rollback must not bring
//! back (the secrets, the op counter, derived records).

pub mod secrets;
pub mod undo;

use serde::{Deserialize, Serialize};

use crate::documents::{INDEX_MD, LOG_MD};
use crate::error::Result;
use crate::model::{OpId, Store};

pub(crate) use secrets::portable_meta_value;
pub use secrets::strip_secrets;

// ---------------------------------------------------------------- meta store

/// Meta record holding the last operation id (`{"last": n}`, [`OpsCounter`]).
pub const META_OPS: &str = "ops";
/// Meta record of the configuration (no secrets; exportable).
pub const META_CONFIG: &str = "config";
/// Meta record of the secrets (API keys, secret headers). Never exported.
pub const META_SECRETS: &str = "secrets";
/// Meta record of what the client learned (structured-output mode per endpoint).
pub const META_LEARNED: &str = "llm-learned";
/// Meta record holding the findings of the last LLM lint run.
pub const META_LINT_LLM: &str = "lint-llm";
/// Meta record of the folder mirror's state (which operation the folder holds, the hash of every
/// file written): local to this browser, never exported, journaled or rolled back.
pub const META_MIRROR: &str = "mirror";
/// Meta record of what the downloads of changes (`exportChanges`) held: like [`META_MIRROR`].
pub const META_DOWNLOAD: &str = "mirror-download";
/// Meta record of this browser's device id for the wiki (`{"id": "…"}`): local, never exported,
/// journaled or rolled back, so a wiki imported elsewhere gets its own.
pub const META_DEVICE: &str = "device";
/// Meta key prefix of the attachment records (`asset/<name>`).
pub const ASSET_PREFIX: &str = "asset/";
/// Prefix of the undo records in the meta store: `undo/<op, 12 digits>`.
pub const UNDO_PREFIX: &str = "undo/";
/// Meta key prefix of the source flag records (`source-flag/<key>`).
pub const SOURCE_FLAG_PREFIX: &str = "source-flag/";
/// Meta key prefix of failure records (`compile-failure/<source key>`).
pub const FAILURE_PREFIX: &str = "compile-failure/";
/// Meta key prefix of held proposals (a page update that would drop a human edit).
pub const PROPOSAL_PREFIX: &str = "proposal/";

/// Meta key prefix of the page table's rows.
pub const ROW_PREFIX: &str = "row/";
/// Meta key prefix of the lists of claim ids stated on a page.
pub const PAGE_CLAIMS_PREFIX: &str = "page-claims/";
/// Meta key prefix of the lists of claim ids of a source.
pub const SOURCE_CLAIMS_PREFIX: &str = "source-claims/";
/// Meta key prefix of the lists of contradiction record ids naming a page.
pub const PAGE_RECORDS_PREFIX: &str = "page-records/";
/// Meta key of the page table's stamp: `{"op": n}`, the operation the table is current after.
pub const STAMP_KEY: &str = "page-table";

/// Whether a meta record is part of the page table (derived: never exported, journaled or
/// imported).
pub fn is_derived(meta_key: &str) -> bool {
    meta_key == STAMP_KEY
        || meta_key.starts_with(ROW_PREFIX)
        || meta_key.starts_with(PAGE_CLAIMS_PREFIX)
        || meta_key.starts_with(SOURCE_CLAIMS_PREFIX)
        || meta_key.starts_with(PAGE_RECORDS_PREFIX)
}

/// The secrets record ([`META_SECRETS`]): API keys and secret header values, never exported
/// or journaled.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Secrets {
    /// The API key.
    #[serde(default)]
    pub(crate) api_key: Option<String>,
    /// The embeddings endpoint's API key.
    #[serde(default)]
    pub(crate) embeddings_api_key: Option<String>,
    /// Secret headers by name.
    #[serde(default)]
    pub(crate) headers: std::collections::BTreeMap<String, String>,
}

// ---------------------------------------------------------------- search store

/// Key (in the `search` store) of the stamp: the last op id the stored index reflects, as
/// decimal text.
pub const SEARCH_OP_KEY: &str = "op";

/// Key (in the `search` store) of the dimension the configured embedding model last returned,
/// as JSON `{"model": string, "dim": number}`. A model can change its dimension under the same
/// name (another variant behind one tag, a `dimensions` setting): this record lets
/// `Wiki::embedding_status` report `reembedRequired` without calling the endpoint. Written
/// whenever an embedding call returns another dimension than the recorded one; not part of the
/// index's records (they ignore it).
pub const OBSERVED_DIM_KEY: &str = "observed-dim";

/// Search store key of the pages the last `embed_pages` skipped.
pub const SKIPPED_KEY: &str = "embed-skipped";

// ---------------------------------------------------------------- keys

/// Key of revision `number` of `page` in the revisions store.
pub fn revision_key(page: &str, number: u64) -> String {
    format!("{page}\u{0}{number:010}")
}

/// Key a revision is kept under when another device's revision of the same page and number
/// took its place (issue #25: two devices each wrote the page's next number; the later writer
/// in the operations' order keeps [`revision_key`], the other is kept here, so no version is
/// lost).
pub fn displaced_revision_key(page: &str, number: u64, op: OpId) -> String {
    format!("{}\u{0}{op:012}", revision_key(page, number))
}

/// A revision key's page, number and, for a [`displaced_revision_key`], the operation.
pub fn parse_revision_key(key: &str) -> Option<(&str, u64, Option<OpId>)> {
    let (page, rest) = key.split_once('\u{0}')?;
    match rest.split_once('\u{0}') {
        Some((n, op)) => Some((page, n.parse().ok()?, Some(op.parse().ok()?))),
        None => Some((page, rest.parse().ok()?, None)),
    }
}

/// The keys of `revisions` (several devices' revisions of one page and number among them):
/// [`revision_key`] for the one whose operation is latest in `order`, a
/// [`displaced_revision_key`] for each other.
pub fn revision_keys(
    revisions: &[crate::model::Revision],
    order: &std::collections::BTreeMap<OpId, crate::model::OpOrder>,
) -> Vec<String> {
    let at = |op: OpId| order.get(&op).copied().unwrap_or((i64::MIN, 0, op));
    let mut latest: std::collections::HashMap<(&str, u64), OpId> = Default::default();
    for r in revisions {
        let e = latest.entry((r.page.as_str(), r.number)).or_insert(r.op);
        if at(r.op) > at(*e) {
            *e = r.op;
        }
    }
    revisions
        .iter()
        .map(|r| {
            if latest[&(r.page.as_str(), r.number)] == r.op {
                revision_key(&r.page, r.number)
            } else {
                displaced_revision_key(&r.page, r.number, r.op)
            }
        })
        .collect()
}

/// Key of operation `id` in the operations store.
pub fn operation_key(id: OpId) -> String {
    format!("{id:012}")
}

/// Key (in the meta store) of operation `op`'s undo record.
pub fn undo_key(op: OpId) -> String {
    format!("{UNDO_PREFIX}{op:012}")
}

/// A contradiction ledger record's id (its key in the ledger store): `x` + 10 hex digits of
/// SHA-256 over the sorted claim ids it relates, so the same claims always name the same record.
pub fn contradiction_id(claims: &[String]) -> String {
    use sha2::{Digest, Sha256};
    let mut sorted: Vec<&String> = claims.iter().collect();
    crate::util::sort(&mut sorted);
    let mut h = Sha256::new();
    for c in sorted {
        h.update(c.as_bytes());
        h.update([0]);
    }
    format!("x{}", &hex::encode(h.finalize())[..10])
}

/// The op counter record ([`META_OPS`]).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct OpsCounter {
    /// The last operation id this device gave (its slot's id 0 before the first; see
    /// [`crate::model::op_id`]).
    pub(crate) last: OpId,
    /// The latest time of another device's operation the wiki holds (ms; 0: none): a new one
    /// is later, so an operation made here orders after every one it has seen, whatever the
    /// clocks say (Decision 7).
    #[serde(default)]
    pub(crate) time: crate::clock::Millis,
    /// The last operation of each other device this wiki holds, one id per slot: what an
    /// operation made here sees ([`crate::model::Operation::seen`]). `None` in a counter an
    /// older build wrote: worked out from the operations held at the next operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) seen: Option<Vec<OpId>>,
}

// ---------------------------------------------------------------- codec

/// A model value as the JSON bytes a record stores.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("model types always serialise")
}

/// A record's JSON bytes as a model value. Errors: [`crate::Error::Corrupt`] naming the store
/// and key when they do not parse as `T`.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    store: Store,
    key: &str,
    data: &[u8],
) -> Result<T> {
    serde_json::from_slice(data).map_err(|e| crate::Error::Corrupt {
        store,
        key: key.to_string(),
        message: e.to_string(),
    })
}

// ---------------------------------------------------------------- the export and journal policy

/// What a meta record is, for the one policy of what leaves the device in a vault export
/// ([`MetaRecord::exported`]) and what an undo record keeps ([`MetaRecord::journaled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaRecord {
    /// The op counter ([`META_OPS`]): the vault manifest carries the last id; a rollback never
    /// moves it back.
    OpCounter,
    /// The secrets ([`META_SECRETS`]): they never leave the browser and a rollback never brings
    /// an API key back.
    Secrets,
    /// What the client learned about the endpoint ([`META_LEARNED`]: structured-output mode,
    /// reply lengths): a cache of endpoint behaviour that a rollback keeps, so an export must not
    /// carry it either.
    Learned,
    /// An undo record ([`UNDO_PREFIX`]): exported in its own file, never journaled.
    Undo,
    /// A page-table record ([`is_derived`]): rebuilt, never exported or journaled.
    Derived,
    /// An attachment record ([`ASSET_PREFIX`]): exported in its own file, journaled.
    Asset,
    /// The LLM lint cache ([`META_LINT_LLM`]): journaled, not exported.
    LintCache,
    /// The configuration ([`META_CONFIG`]): exported in its own file (through
    /// [`portable_meta_value`]), journaled without secrets.
    Config,
    /// The folder mirror's state ([`META_MIRROR`], [`META_DOWNLOAD`]) and the device id
    /// ([`META_DEVICE`]): this browser's own, so never exported, journaled or rolled back.
    Mirror,
    /// Any other record (flags, failures, proposals…): exported in `meta.json`, journaled.
    Other,
}

impl MetaRecord {
    /// The kind of the meta record `key`.
    pub fn of(key: &str) -> MetaRecord {
        match key {
            META_OPS => MetaRecord::OpCounter,
            META_SECRETS => MetaRecord::Secrets,
            META_LEARNED => MetaRecord::Learned,
            META_LINT_LLM => MetaRecord::LintCache,
            META_CONFIG => MetaRecord::Config,
            META_MIRROR | META_DOWNLOAD | META_DEVICE => MetaRecord::Mirror,
            _ if key.starts_with(UNDO_PREFIX) => MetaRecord::Undo,
            _ if key.starts_with(ASSET_PREFIX) => MetaRecord::Asset,
            _ if is_derived(key) => MetaRecord::Derived,
            _ => MetaRecord::Other,
        }
    }

    /// Whether a vault export carries the record at all (in `meta.json`, or — the
    /// configuration, attachments and undo records — in their own file).
    pub fn exported(self) -> bool {
        !matches!(
            self,
            MetaRecord::OpCounter
                | MetaRecord::Secrets
                | MetaRecord::Learned
                | MetaRecord::Derived
                | MetaRecord::LintCache
                | MetaRecord::Mirror
        )
    }

    /// Whether the record travels in a vault's `meta.json` (and is read back from it): the
    /// exported records that have no file of their own.
    pub fn in_meta_json(self) -> bool {
        self.exported()
            && !matches!(
                self,
                MetaRecord::Asset | MetaRecord::Undo | MetaRecord::Config
            )
    }

    /// Whether an operation's write of the record goes into its undo record.
    pub fn journaled(self) -> bool {
        !matches!(
            self,
            MetaRecord::OpCounter
                | MetaRecord::Secrets
                | MetaRecord::Learned
                | MetaRecord::Undo
                | MetaRecord::Derived
                | MetaRecord::Mirror
        )
    }
}

/// Whether operation `own`'s (its [`operation_key`]) batch write to `store`/`key` goes into its
/// undo record: not the append-only records (revisions, the operation's own record, log.md), the
/// derived ones (index.md, the search store) nor the meta records [`MetaRecord::journaled`]
/// leaves out.
pub fn journaled(store: Store, key: &str, own: &str) -> bool {
    match store {
        Store::Revisions | Store::Search => false,
        Store::Operations => key != own,
        Store::Documents => key != INDEX_MD && key != LOG_MD,
        Store::Meta => MetaRecord::of(key).journaled(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_undo_record_leaves_out() {
        let own = operation_key(7);
        assert!(!journaled(Store::Revisions, "p\u{0}0000000001", &own));
        assert!(!journaled(Store::Search, "op", &own));
        assert!(!journaled(Store::Operations, &own, &own));
        assert!(journaled(Store::Operations, &operation_key(3), &own));
        assert!(!journaled(Store::Documents, LOG_MD, &own));
        assert!(!journaled(Store::Documents, INDEX_MD, &own));
        assert!(journaled(
            Store::Documents,
            crate::documents::SCHEMA_MD,
            &own
        ));
        assert!(!journaled(Store::Meta, "secrets", &own));
        assert!(!journaled(Store::Meta, META_MIRROR, &own));
        assert!(!MetaRecord::of(META_MIRROR).exported());
        assert!(!MetaRecord::of(META_DEVICE).exported());
        assert!(!journaled(Store::Meta, META_DEVICE, &own));
        assert!(!journaled(Store::Meta, META_OPS, &own));
        assert!(!journaled(Store::Meta, &undo_key(3), &own));
        assert!(journaled(Store::Meta, "config", &own));
        assert!(journaled(Store::Pages, "Rust", &own));
    }

    #[test]
    fn a_contradiction_id_does_not_depend_on_the_claim_order() {
        let x = contradiction_id(&["c2".into(), "c1".into()]);
        assert_eq!(x, contradiction_id(&["c1".into(), "c2".into()]));
    }

    #[test]
    fn what_a_vault_export_carries() {
        // The two lists vault.rs and history.rs kept by hand before this policy.
        for key in [
            META_OPS,
            META_SECRETS,
            META_LEARNED,
            META_LINT_LLM,
            STAMP_KEY,
            "row/Rust",
        ] {
            assert!(!MetaRecord::of(key).in_meta_json(), "{key}");
        }
        for key in ["asset/a.png", "undo/000000000001", META_CONFIG] {
            assert!(MetaRecord::of(key).exported(), "{key}");
            assert!(!MetaRecord::of(key).in_meta_json(), "{key}");
        }
        assert!(MetaRecord::of("source-flag/a").in_meta_json());
        assert!(MetaRecord::of("compile-failure/a").in_meta_json());
        assert!(MetaRecord::of(META_LINT_LLM).journaled());
        assert!(MetaRecord::of("asset/a.png").journaled());
    }
}
