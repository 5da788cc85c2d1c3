//! The wiki facade: one open wiki over a [`Storage`] and a [`Clock`].
//!
//! Every mutating method is one numbered [`Operation`] committed as one [`Batch`]: the records it
//! writes, the operation record, the op counter, log.md and (when pages change) index.md. The op
//! counter is written with an expected revision, so two writers can never commit the same op id;
//! the loser gets [`Error::Conflict`] and nothing of its batch is written.
//!
//! *Invariant:* this module never does I/O of its own; it reads and commits through the storage
//! trait only, and holds no state that could disagree with what is committed.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::documents::{self, INDEX_MD, LOG_MD, SCHEMA_MD};
use crate::error::{Error, Result};
use crate::markdown::keys::unique_key;
use crate::model::{
    Artifact, Author, OpId, Operation, OperationKind, Page, PageKind, Revision, Source,
    SourceStatus, TokenUsage, SUPPORTED_MIME,
};
use crate::page_table::PageTable;
use crate::storage::{Backend, Batch, Expect, OpenOptions, Storage, Store};
use crate::text::{normalize_source_text, sha256_hex};

/// Meta record holding the last operation id.
const META_OPS: &str = "ops";

/// Input of [`Wiki::add_source`] (JS: `addSource`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct NewSource {
    /// Stable identity. Default: `url` when given, else `sha256:<first 16 hex of the version>`.
    #[serde(default)]
    pub key: Option<String>,
    /// Display title. Default: the first markdown heading, else the first line, else the key.
    #[serde(default)]
    pub title: Option<String>,
    /// Where the source came from.
    #[serde(default)]
    pub url: Option<String>,
    /// `text/markdown` (also `text/x-markdown`) or `text/plain`; parameters such as
    /// `; charset=utf-8` are ignored.
    pub mime: String,
    /// The text (markdown or plain). HTML and PDF are converted in JS first (Decision 2).
    pub content: String,
    /// The original bytes (e.g. the clipped HTML), kept as the raw artifact.
    #[serde(default, with = "serde_bytes")]
    #[cfg_attr(
        target_arch = "wasm32",
        tsify(type = "Uint8Array | undefined", optional)
    )]
    pub original: Option<Vec<u8>>,
    /// MIME type of `original`. Default `text/html`.
    #[serde(default)]
    pub original_mime: Option<String>,
    /// When the user captured it, in ms since the epoch.
    #[serde(default)]
    pub captured_at: Option<f64>,
}

/// A source flagged for instruction-like text ([`Wiki::source_flags`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SourceFlag {
    /// The source key.
    pub key: String,
    /// The source version the text was checked in.
    pub version: String,
    /// The phrases found (normalised: lower case, punctuation as spaces; at most 5).
    pub instruction_like: Vec<String>,
}

/// Meta key prefix of the [`SourceFlag`] records (`source-flag/<key>`).
pub const SOURCE_FLAG_PREFIX: &str = "source-flag/";

/// Adds to `batch` the [`SourceFlag`] of source `key` at `version` when it has instruction-like
/// `phrases`, else the deletion of any flag it had. Nothing else changes.
pub(crate) fn put_source_flag(batch: &mut Batch, key: &str, version: &str, phrases: Vec<String>) {
    let record = format!("{SOURCE_FLAG_PREFIX}{key}");
    if phrases.is_empty() {
        batch.delete(Store::Meta, record, Expect::Any);
    } else {
        let flag = SourceFlag {
            key: key.to_string(),
            version: version.to_string(),
            instruction_like: phrases,
        };
        batch.put(Store::Meta, record, to_json(&flag), Expect::Any);
    }
}

/// What [`Wiki::add_source`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub enum AddOutcome {
    /// A new source.
    Added,
    /// Same key, same version: nothing was written and nothing will be recompiled.
    Unchanged,
    /// Same key, new version: a corrected source, pending compile.
    Corrected,
}

/// Report of [`Wiki::add_source`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct AddSourceReport {
    /// The source key.
    pub key: String,
    /// The version (SHA-256 hex of the normalised text).
    pub version: String,
    /// Added, unchanged or corrected.
    pub outcome: AddOutcome,
    /// The operation, when something was written.
    pub op: Option<OpId>,
    /// The version this one replaced, for a corrected source.
    pub previous_version: Option<String>,
}

/// A source with its text (JS: `source(key)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SourceWithText {
    /// The record.
    #[serde(flatten)]
    pub source: Source,
    /// The normalised text of the current version.
    pub text: String,
}

/// A human edit of a page (JS: `putPage`). Fields left out keep their current value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct PageEdit {
    /// The page to edit; absent to create a page (its key is derived from the title).
    #[serde(default)]
    pub key: Option<String>,
    /// Title; required when creating.
    #[serde(default)]
    pub title: Option<String>,
    /// Kind; default `concept` when creating.
    #[serde(default)]
    pub kind: Option<PageKind>,
    /// New markdown body.
    #[serde(default)]
    pub body: Option<String>,
    /// New one-line summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// New aliases.
    #[serde(default)]
    pub aliases: Option<Vec<String>>,
    /// New tags.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// The revision the editor started from; when set and the page moved on, the edit is refused
    /// with [`Error::Conflict`] instead of overwriting the newer revision.
    #[serde(default)]
    pub base_revision: Option<u64>,
}

pub use crate::model::PageInfo;
pub(crate) use crate::storage::{from_json, to_json};

/// Key of revision `number` of `page` in the revisions store.
pub fn revision_key(page: &str, number: u64) -> String {
    format!("{page}\u{0}{number:010}")
}

/// Key of operation `id` in the operations store.
pub fn operation_key(id: OpId) -> String {
    format!("{id:012}")
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct OpsCounter {
    last: OpId,
}

/// An operation being assembled: the batch, the op record, and the documents it touches.
pub(crate) struct OpBuilder {
    pub(crate) batch: Batch,
    pub(crate) op: Operation,
    /// Write index.md even when no page changes (the lint fix that rebuilds it).
    pub(crate) rewrite_index: bool,
}

/// One open wiki.
pub struct Wiki<S: Storage, C: Clock> {
    pub(crate) name: String,
    /// The connection, counting what each store reads and writes ([`Wiki::io_stats`]).
    pub(crate) storage: crate::storage::counting::Counting<S>,
    pub(crate) clock: C,
    /// The last search index read, for searches (see [`Wiki::search_index_shared`]).
    pub(crate) search_cache: crate::wiki_search::SearchCache,
    /// The page table as last read or committed here, with the revision of its stamp record
    /// (see [`Wiki::page_table`]).
    pub(crate) page_table_cache: std::cell::RefCell<Option<(u64, std::rc::Rc<PageTable>)>>,
    /// The offline compiler's corpus statistics as this connection last brought them up to date
    /// (see `Wiki::offline_compiler`; not stored).
    pub(crate) offline_corpus: std::cell::RefCell<Option<crate::extractive::terms::CorpusCache>>,
    /// The findings of this connection's last lint (what `Wiki::apply_fix` looks an id up in).
    pub(crate) last_findings: std::cell::RefCell<Vec<crate::lint::Finding>>,
    /// Settings of the vector graph for this connection (not stored; see `wiki_search.rs`).
    pub(crate) vector_options: std::cell::Cell<crate::wiki_search::VectorIndexOptions>,
    /// The latest extract reply lengths per token of source text seen in this connection, keyed
    /// by `"<model name>|<reply cap>"` (not stored; see `Wiki::learned_chunk_cap` in
    /// `compile/pipeline.rs`).
    pub(crate) extract_reply_ratio:
        std::cell::RefCell<Option<(String, std::collections::VecDeque<f64>)>>,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Opens (creating if needed) the wiki `name` on `backend`. A new wiki gets schema.md, an empty
    /// index.md and log.md.
    ///
    /// Errors: [`Error::InvalidInput`] for a bad name, [`Error::UpgradeBlocked`],
    /// [`Error::SchemaTooNew`], [`Error::StorageUnavailable`].
    pub async fn open<B: Backend<Storage = S>>(
        backend: &B,
        name: &str,
        clock: C,
        options: OpenOptions,
    ) -> Result<Self> {
        let storage = backend.open(name, options).await?;
        let wiki = Wiki {
            name: name.to_string(),
            storage: crate::storage::counting::Counting::new(storage),
            clock,
            search_cache: Default::default(),
            page_table_cache: Default::default(),
            offline_corpus: Default::default(),
            last_findings: Default::default(),
            vector_options: Default::default(),
            extract_reply_ratio: Default::default(),
        };
        wiki.init_documents().await?;
        Ok(wiki)
    }

    /// Wraps an already open storage connection.
    pub async fn from_storage(name: &str, storage: S, clock: C) -> Result<Self> {
        let wiki = Wiki {
            name: name.to_string(),
            storage: crate::storage::counting::Counting::new(storage),
            clock,
            search_cache: Default::default(),
            page_table_cache: Default::default(),
            offline_corpus: Default::default(),
            last_findings: Default::default(),
            vector_options: Default::default(),
            extract_reply_ratio: Default::default(),
        };
        wiki.init_documents().await?;
        Ok(wiki)
    }

    async fn init_documents(&self) -> Result<()> {
        if self
            .storage
            .get(Store::Documents, SCHEMA_MD)
            .await?
            .is_some()
        {
            return Ok(());
        }
        let mut b = Batch::new();
        b.put(
            Store::Documents,
            SCHEMA_MD,
            documents::DEFAULT_SCHEMA.into(),
            Expect::Absent,
        );
        b.put(
            Store::Documents,
            INDEX_MD,
            documents::render_index(&[]).into(),
            Expect::Absent,
        );
        b.put(
            Store::Documents,
            LOG_MD,
            documents::empty_log().into(),
            Expect::Absent,
        );
        match self.storage.commit(b).await {
            // Another tab initialised it between our read and our commit: fine.
            Ok(_) | Err(Error::Conflict { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The wiki's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The storage connection (for tests and the search layer). Reads and writes made through
    /// it directly are not counted in [`Wiki::io_stats`].
    pub fn storage(&self) -> &S {
        self.storage.inner()
    }

    /// The differences between the stored page table and the one the page, claim and ledger
    /// records give ([`crate::page_table::differences`]): empty when it is right. For tests and
    /// diagnostics: it reads everything.
    pub async fn page_table_differences(&self) -> Result<Vec<String>> {
        crate::page_table::differences(self.storage.inner()).await
    }

    /// What this connection has read and written, per store, since it opened: records and bytes.
    /// Take it before and after an operation to see what the operation cost
    /// ([`crate::storage::counting::IoStats::since`]).
    pub fn io_stats(&self) -> crate::storage::counting::IoStats {
        self.storage.stats()
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    pub(crate) async fn read<T: DeserializeOwned>(
        &self,
        store: Store,
        key: &str,
    ) -> Result<Option<(T, u64)>> {
        match self.storage.get(store, key).await? {
            Some(r) => Ok(Some((from_json(store, key, &r.data)?, r.rev))),
            None => Ok(None),
        }
    }

    pub(crate) async fn read_all<T: DeserializeOwned>(
        &self,
        store: Store,
        prefix: &str,
    ) -> Result<Vec<T>> {
        self.storage
            .scan(store, prefix)
            .await?
            .into_iter()
            .map(|(k, r)| from_json(store, &k, &r.data))
            .collect()
    }

    /// Every record of `store` by its key (claims and ledger records by id, sources by key).
    pub(crate) async fn read_map<T: DeserializeOwned>(
        &self,
        store: Store,
    ) -> Result<BTreeMap<String, T>> {
        let mut out = BTreeMap::new();
        for (k, r) in self.storage.scan(store, "").await? {
            let v = from_json(store, &k, &r.data)?;
            out.insert(k, v);
        }
        Ok(out)
    }

    pub(crate) async fn document(&self, name: &str) -> Result<String> {
        let r = self.storage.get(Store::Documents, name).await?;
        Ok(r.map(|r| String::from_utf8_lossy(&r.data).into_owned())
            .unwrap_or_default())
    }

    /// The id the next operation will get (as of now; [`Wiki::begin`] checks it at commit).
    pub(crate) async fn next_op_id(&self) -> Result<OpId> {
        Ok(self
            .read::<OpsCounter>(Store::Meta, META_OPS)
            .await?
            .map_or(0, |(c, _)| c.last)
            + 1)
    }

    /// Starts an operation: allocates the next op id (checked at commit by the counter's revision).
    pub(crate) async fn begin(&self, kind: OperationKind, summary: String) -> Result<OpBuilder> {
        let (counter, rev) = match self.read::<OpsCounter>(Store::Meta, META_OPS).await? {
            Some((c, rev)) => (c, Some(rev)),
            None => (OpsCounter::default(), None),
        };
        let id = counter.last + 1;
        let mut batch = Batch::new();
        batch.put(
            Store::Meta,
            META_OPS,
            to_json(&OpsCounter { last: id }),
            Expect::from_read(rev),
        );
        Ok(OpBuilder {
            batch,
            rewrite_index: false,
            op: Operation {
                id,
                kind,
                time: self.clock.now_ms(),
                summary,
                pages: vec![],
                sources: vec![],
                usage: TokenUsage::default(),
                rolled_back_by: None,
            },
        })
    }

    /// Finishes an operation: adds the op record and the log entry, then what the batch's page,
    /// revision, claim and ledger writes change in the page table ([`crate::page_table::derive`]),
    /// and — when pages change — a fresh index.md from the table and the search-index delta of
    /// the pages written and deleted; then the operation's undo record ([`crate::history`]), then
    /// commits. Reads the bodies of no page but those in the batch.
    pub(crate) async fn finish(&self, mut ob: OpBuilder) -> Result<Operation> {
        ob.batch.put(
            Store::Operations,
            operation_key(ob.op.id),
            to_json(&ob.op),
            Expect::Absent,
        );
        let log = self.storage.get(Store::Documents, LOG_MD).await?;
        let (mut text, rev) = match log {
            Some(r) => (String::from_utf8_lossy(&r.data).into_owned(), Some(r.rev)),
            None => (documents::empty_log(), None),
        };
        text.push_str(&documents::log_entry(&ob.op));
        ob.batch.put(
            Store::Documents,
            LOG_MD,
            text.into_bytes(),
            Expect::from_read(rev),
        );
        let table = self.page_table().await?;
        let derived =
            crate::page_table::derive(&self.storage, &mut ob.batch, &table, ob.op.id).await?;
        if derived.pages_changed() || ob.rewrite_index {
            ob.batch.put(
                Store::Documents,
                INDEX_MD,
                derived.table.index_md().into_bytes(),
                Expect::Any,
            );
        }
        let mut search = None;
        let mut restamp = None;
        if derived.pages_changed() {
            // The search index changes in the same transaction as the pages.
            let written: Vec<&Page> = derived.written.values().collect();
            let index = self
                .search_delta(&mut ob.batch, ob.op.id, &written, &derived.deleted)
                .await?;
            // Its stamp is the batch's last search write so far.
            search = Some((index, ob.batch.len() - 1));
        } else {
            // The pages did not change: an index current before this operation is current after
            // it, so its stamp moves along (and reading it later never has to write).
            restamp = self.advance_search_stamp(&mut ob.batch, ob.op.id).await?;
        }
        // What the batch overwrites, for rollback (crate::history).
        let undo = self.undo_record(&ob.batch, ob.op.id).await?;
        ob.batch.put(
            Store::Meta,
            crate::history::undo_key(ob.op.id),
            to_json(&undo),
            Expect::Absent,
        );
        let stamp_at = derived.stamp_at;
        let op = ob.op.id;
        let revs = self.storage.commit(ob.batch).await?;
        *self.page_table_cache.borrow_mut() = revs
            .get(stamp_at)
            .map(|rev| (*rev, std::rc::Rc::new(derived.table)));
        if let Some((index, at)) = search {
            if let Some(rev) = revs.get(at) {
                self.committed_search_index(index, op, *rev);
            }
        }
        if let Some((before, at)) = restamp {
            if let Some(rev) = revs.get(at) {
                self.restamp_search_cache(before, op, *rev);
            }
        }
        Ok(ob.op)
    }

    /// The page table (see [`crate::page_table`]): kept between calls while its stamp record is
    /// unchanged (one small read), read again when another connection committed, and rebuilt
    /// from the records — a full read, saved — when its stamp is behind the op counter (a wiki
    /// written by an older build, an imported vault).
    ///
    /// Errors: storage errors, [`Error::Corrupt`] for a record that does not parse.
    pub(crate) async fn page_table(&self) -> Result<std::rc::Rc<PageTable>> {
        let last = self
            .read::<OpsCounter>(Store::Meta, META_OPS)
            .await?
            .map_or(0, |(c, _)| c.last);
        let stamp = self
            .storage
            .get(Store::Meta, crate::page_table::STAMP_KEY)
            .await?;
        if let Some(r) = &stamp {
            let s: crate::page_table::Stamp =
                from_json(Store::Meta, crate::page_table::STAMP_KEY, &r.data)?;
            if s.op == last {
                if let Some((rev, table)) = &*self.page_table_cache.borrow() {
                    if *rev == r.rev {
                        return Ok(table.clone());
                    }
                }
                let rows: Vec<crate::page_table::PageRow> = self
                    .read_all(Store::Meta, crate::page_table::ROW_PREFIX)
                    .await?;
                let table = std::rc::Rc::new(PageTable::from_rows(rows));
                *self.page_table_cache.borrow_mut() = Some((r.rev, table.clone()));
                return Ok(table);
            }
        }
        let (table, batch) = crate::page_table::rebuild(&self.storage, last).await?;
        let table = std::rc::Rc::new(table);
        // Saved when it can be; a conflict with another writer just means another rebuild later.
        match self.storage.commit(batch).await {
            Ok(revs) => {
                *self.page_table_cache.borrow_mut() = revs.last().map(|rev| (*rev, table.clone()));
            }
            Err(Error::Conflict { .. }) => {}
            Err(e) => return Err(e),
        }
        Ok(table)
    }

    // ---------------------------------------------------------------- sources

    /// Adds a source (ingest). Same key and same version: nothing is written
    /// ([`AddOutcome::Unchanged`]). Same key, new version: a corrected source, pending compile.
    ///
    /// Errors: [`Error::UnsupportedMime`] for anything but markdown or plain text;
    /// [`Error::InvalidInput`] for empty content; storage errors (nothing written).
    pub async fn add_source(&self, input: NewSource) -> Result<AddSourceReport> {
        let mime = normalize_mime(&input.mime)?;
        let text = normalize_source_text(&input.content);
        if text.trim().is_empty() {
            return Err(Error::InvalidInput("the source is empty".into()));
        }
        let version = sha256_hex(text.as_bytes());
        let key = source_key(match (&input.key, &input.url) {
            (Some(k), _) if !k.trim().is_empty() => k,
            (_, Some(u)) if !u.trim().is_empty() => u,
            _ => "",
        });
        let key = if key.is_empty() {
            format!("sha256:{}", &version[..16])
        } else {
            key
        };
        let found = self.find_source(&key).await?;
        // A source stored earlier under another form of the key (NFD) is moved to the NFC key.
        let moved_from = found
            .as_ref()
            .map(|(_, _, k)| k.clone())
            .filter(|k| *k != key);
        let existing = found.map(|(s, rev, _)| (s, rev));
        if let (Some(old), Some((s, rev))) = (&moved_from, &existing) {
            if !s.version.is_empty() && s.version == version {
                let mut ob = self
                    .begin(
                        OperationKind::AddSource,
                        format!("re-keyed: {} (Unicode NFC)", s.title),
                    )
                    .await?;
                ob.op.sources.push(old.clone());
                ob.op.sources.push(key.clone());
                let moved = Source {
                    key: key.clone(),
                    ..s.clone()
                };
                ob.batch
                    .delete(Store::Sources, old.clone(), Expect::Rev(*rev));
                ob.batch
                    .put(Store::Sources, key.clone(), to_json(&moved), Expect::Absent);
                self.rekey_source_references(&mut ob, &[(old.clone(), key.clone())])
                    .await?;
                let op = self.finish(ob).await?;
                return Ok(AddSourceReport {
                    key,
                    version,
                    outcome: AddOutcome::Unchanged,
                    op: Some(op.id),
                    previous_version: None,
                });
            }
        }
        if let Some((s, _)) = &existing {
            // A legacy record without a version is always treated as changed (F34d).
            if !s.version.is_empty() && s.version == version {
                return Ok(AddSourceReport {
                    key,
                    version,
                    outcome: AddOutcome::Unchanged,
                    op: None,
                    previous_version: None,
                });
            }
        }
        let title = input
            .title
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| default_title(&text, &key));
        let outcome = if existing.is_some() {
            AddOutcome::Corrected
        } else {
            AddOutcome::Added
        };
        let verb = if existing.is_some() {
            "corrected"
        } else {
            "added"
        };
        let mut ob = self
            .begin(OperationKind::AddSource, format!("{verb}: {title}"))
            .await?;
        ob.op.sources.push(key.clone());
        if let (Some(old), Some((_, rev))) = (&moved_from, &existing) {
            ob.op.sources.insert(0, old.clone());
            ob.batch
                .delete(Store::Sources, old.clone(), Expect::Rev(*rev));
            self.rekey_source_references(&mut ob, &[(old.clone(), key.clone())])
                .await?;
        }

        ob.batch.put(
            Store::Raw,
            format!("text/{version}"),
            text.clone().into_bytes(),
            Expect::Any,
        );
        let original = input.original.as_ref().map(|bytes| {
            let sha = sha256_hex(bytes);
            ob.batch.put(
                Store::Raw,
                format!("original/{sha}"),
                bytes.clone(),
                Expect::Any,
            );
            Artifact {
                mime: input
                    .original_mime
                    .clone()
                    .unwrap_or_else(|| "text/html".into()),
                sha256: sha,
                bytes: bytes.len() as u64,
            }
        });
        let (previous_versions, previous_version, rev) = match &existing {
            Some((s, rev)) => {
                let mut pv = s.previous_versions.clone();
                if !s.version.is_empty() {
                    pv.push(s.version.clone());
                }
                (
                    pv,
                    Some(s.version.clone()).filter(|v| !v.is_empty()),
                    Some(*rev),
                )
            }
            None => (vec![], None, None),
        };
        let source = Source {
            key: key.clone(),
            version: version.clone(),
            title,
            url: input.url.clone().filter(|u| !u.trim().is_empty()),
            mime,
            captured_at: input.captured_at.map(|t| t as i64),
            added_at: ob.op.time,
            op: ob.op.id,
            text_bytes: text.len() as u64,
            original,
            previous_versions,
            status: SourceStatus::Pending,
            summary_page: existing.as_ref().and_then(|(s, _)| s.summary_page.clone()),
            parts: existing
                .as_ref()
                .map(|(s, _)| s.parts.clone())
                .unwrap_or_default(),
        };
        let expect = if moved_from.is_some() {
            Expect::Absent
        } else {
            Expect::from_read(rev)
        };
        ob.batch
            .put(Store::Sources, key.clone(), to_json(&source), expect);
        put_source_flag(
            &mut ob.batch,
            &key,
            &version,
            crate::injection::instruction_like(&text),
        );
        let op = self.finish(ob).await?;
        Ok(AddSourceReport {
            key,
            version,
            outcome,
            op: Some(op.id),
            previous_version,
        })
    }

    /// The stored source `key` names, its storage revision and the key it is stored under: the
    /// record under [`source_key`]`(key)` (NFC), else one stored under the key's NFD form (a key
    /// kept before keys were normalised; macOS writes file names in NFD), else under `key` as
    /// given. Errors: storage errors.
    pub async fn find_source(&self, key: &str) -> Result<Option<(Source, u64, String)>> {
        let nfc = source_key(key);
        let mut forms = vec![nfc.clone()];
        for form in [
            unicode_normalization::UnicodeNormalization::nfd(nfc.as_str()).collect::<String>(),
            key.to_string(),
        ] {
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
        for form in forms {
            if let Some((s, rev)) = self.read::<Source>(Store::Sources, &form).await? {
                return Ok(Some((s, rev, form)));
            }
        }
        Ok(None)
    }

    /// Adds to `ob` what moving each source `old` to key `new` (`moves`: `(old, new)`) changes
    /// elsewhere: the claims citing it and the pages listing it among their sources (or keeping
    /// facts for it) name `new`. Each changed page gets one revision by the app.
    pub(crate) async fn rekey_source_references(
        &self,
        ob: &mut OpBuilder,
        moves: &[(String, String)],
    ) -> Result<()> {
        if moves.is_empty() {
            return Ok(());
        }
        let to: BTreeMap<&str, &str> = moves
            .iter()
            .map(|(o, n)| (o.as_str(), n.as_str()))
            .collect();
        // The source's flag moves with it.
        for (old, new) in moves {
            let record = format!("{SOURCE_FLAG_PREFIX}{old}");
            if let Some((flag, rev)) = self.read::<SourceFlag>(Store::Meta, &record).await? {
                ob.batch.delete(Store::Meta, record, Expect::Rev(rev));
                put_source_flag(&mut ob.batch, new, &flag.version, flag.instruction_like);
            }
        }
        for (id, r) in self.storage.scan(Store::Claims, "").await? {
            let mut claim: crate::model::Claim = from_json(Store::Claims, &id, &r.data)?;
            if let Some(new) = to.get(claim.source_key.as_str()) {
                claim.source_key = new.to_string();
                ob.batch
                    .put(Store::Claims, id, to_json(&claim), Expect::Rev(r.rev));
            }
        }
        let table = self.page_table().await?;
        let keys: Vec<String> = table
            .rows()
            .filter(|r| r.sources.iter().any(|s| to.contains_key(s.as_str())) || r.more_facts > 0)
            .map(|r| r.key.clone())
            .collect();
        let (op, now) = (ob.op.id, ob.op.time);
        for k in keys {
            let Some((mut page, rev)) = self.read::<Page>(Store::Pages, &k).await? else {
                continue;
            };
            let before = page.clone();
            for s in page.sources.iter_mut() {
                if let Some(new) = to.get(s.as_str()) {
                    *s = new.to_string();
                }
            }
            for m in page.more_facts.iter_mut() {
                if let Some(new) = to.get(m.source.as_str()) {
                    m.source = new.to_string();
                }
            }
            if page == before {
                continue;
            }
            page.revision += 1;
            page.updated = now;
            self.put_page_revision(&mut ob.batch, &page, Some(rev), Author::App, op, now);
            ob.op.pages.push(page.key.clone());
        }
        Ok(())
    }

    /// Every source, ordered by key. A pending source whose last compile failed shows as
    /// [`SourceStatus::Failed`] with the reason (the stored record stays pending).
    pub async fn sources(&self) -> Result<Vec<Source>> {
        let mut sources: Vec<Source> = self.read_all(Store::Sources, "").await?;
        let failures = self.compile_failures().await?;
        for s in &mut sources {
            show_failure(s, &failures);
        }
        Ok(sources)
    }

    /// The sources whose current text holds instruction-like phrases
    /// ([`crate::injection::instruction_like`]), in key order: a flag to show beside the source
    /// (the text was compiled as data, not followed). Recorded when a source is added or
    /// compiled; a full lint checks every source's text as well.
    pub async fn source_flags(&self) -> Result<Vec<SourceFlag>> {
        let mut out = Vec::new();
        for (k, r) in self.storage.scan(Store::Meta, SOURCE_FLAG_PREFIX).await? {
            let Ok(flag) = serde_json::from_slice::<SourceFlag>(&r.data) else {
                continue;
            };
            let current = self
                .read::<Source>(Store::Sources, &flag.key)
                .await?
                .is_some_and(|(s, _)| s.version == flag.version);
            if current && k.strip_prefix(SOURCE_FLAG_PREFIX) == Some(flag.key.as_str()) {
                out.push(flag);
            }
        }
        Ok(out)
    }

    /// One source with its current text, or `None`. `key` is matched in Unicode NFC, and a source
    /// stored under the NFD form of the key is found too ([`Wiki::find_source`]).
    pub async fn source(&self, key: &str) -> Result<Option<SourceWithText>> {
        let Some((mut source, _, _)) = self.find_source(key).await? else {
            return Ok(None);
        };
        show_failure(&mut source, &self.compile_failures().await?);
        let text = self.source_text(&source.version).await?;
        Ok(Some(SourceWithText { source, text }))
    }

    /// The text of a source version (content-addressed; old versions stay readable).
    pub async fn source_text(&self, version: &str) -> Result<String> {
        let key = format!("text/{version}");
        let r = self
            .storage
            .get(Store::Raw, &key)
            .await?
            .ok_or_else(|| Error::Corrupt {
                store: Store::Raw,
                key: key.clone(),
                message: "source text missing".into(),
            })?;
        String::from_utf8(r.data).map_err(|e| Error::Corrupt {
            store: Store::Raw,
            key,
            message: e.to_string(),
        })
    }

    /// The original bytes (e.g. clipped HTML) with this SHA-256, if kept.
    pub async fn original(&self, sha256: &str) -> Result<Option<Vec<u8>>> {
        Ok(self
            .storage
            .get(Store::Raw, &format!("original/{sha256}"))
            .await?
            .map(|r| r.data))
    }

    // ---------------------------------------------------------------- pages

    /// Every page, ordered by key.
    pub async fn all_pages(&self) -> Result<Vec<Page>> {
        self.read_all(Store::Pages, "").await
    }

    /// One line per page, ordered by key.
    pub async fn pages(&self) -> Result<Vec<PageInfo>> {
        // From the page table: no body is read.
        Ok(self.page_table().await?.rows().map(|r| r.info()).collect())
    }

    /// One page, or `None`. The key is matched exactly first, then case-insensitively.
    pub async fn page(&self, key: &str) -> Result<Option<Page>> {
        if let Some((p, _)) = self.read::<Page>(Store::Pages, key).await? {
            return Ok(Some(p));
        }
        let Some(row) = self.page_table().await?.find(key).map(|r| r.key.clone()) else {
            return Ok(None);
        };
        Ok(self.read::<Page>(Store::Pages, &row).await?.map(|(p, _)| p))
    }

    /// A human edit: creates or updates a page as a new revision by [`Author::Human`], in one
    /// operation that also regenerates index.md.
    ///
    /// Errors: [`Error::InvalidInput`] (no title for a new page, unknown key),
    /// [`Error::Conflict`] when `base_revision` is stale or another writer committed first.
    pub async fn put_page(&self, edit: PageEdit) -> Result<Page> {
        // Frontmatter or fences in the body become fields; table pipes are escaped (markdown::page).
        let (edit, extra_frontmatter) = crate::markdown::page::absorb_edit(edit);
        let now = self.clock.now_ms();
        let existing = match &edit.key {
            Some(k) => Some(
                self.read::<Page>(Store::Pages, k)
                    .await?
                    .map(|(p, _)| p)
                    .ok_or_else(|| Error::NotFound(format!("page {k:?}")))?,
            ),
            None => None,
        };
        let (page, expect) = match &existing {
            Some(old) => {
                if let Some(base) = edit.base_revision {
                    if base != old.revision {
                        return Err(Error::Conflict {
                            store: Store::Pages,
                            key: old.key.clone(),
                            expected: format!("revision {base}"),
                            found: format!("revision {}", old.revision),
                        });
                    }
                }
                let mut p = old.clone();
                if let Some(t) = edit
                    .title
                    .as_deref()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                {
                    p.title = t.to_string();
                }
                if let Some(k) = edit.kind {
                    p.kind = k;
                }
                if let Some(b) = edit.body {
                    p.body = normalize_source_text(&b);
                }
                if let Some(s) = edit.summary {
                    p.summary = s.trim().to_string();
                }
                if let Some(a) = edit.aliases {
                    p.aliases = clean_list(a);
                }
                if let Some(t) = edit.tags {
                    p.tags = clean_list(
                        t.into_iter()
                            .map(|t| t.trim_start_matches('#').into())
                            .collect(),
                    );
                }
                if let Some(x) = extra_frontmatter {
                    p.extra_frontmatter = x;
                }
                p.updated = now;
                p.revision += 1;
                (p, Expect::Any)
            }
            None => {
                let title = edit
                    .title
                    .as_deref()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| Error::InvalidInput("a new page needs a title".into()))?
                    .to_string();
                let taken = self.page_table().await?.taken_keys();
                let key = unique_key(&title, |k| taken.contains(k));
                // A key a deleted page used keeps its history: continue its numbering.
                let revision = self.next_revision_number(&key).await?;
                let p = Page {
                    key,
                    title,
                    kind: edit.kind.unwrap_or(PageKind::Concept),
                    summary: edit.summary.unwrap_or_default().trim().to_string(),
                    aliases: clean_list(edit.aliases.unwrap_or_default()),
                    tags: clean_list(
                        edit.tags
                            .unwrap_or_default()
                            .into_iter()
                            .map(|t| t.trim_start_matches('#').into())
                            .collect(),
                    ),
                    sources: vec![],
                    created: now,
                    updated: now,
                    body: normalize_source_text(&edit.body.unwrap_or_default()),
                    revision,
                    extra_frontmatter: extra_frontmatter.unwrap_or_default(),
                    more_facts: vec![],
                };
                (p, Expect::Absent)
            }
        };
        // The page record's own storage revision guards against a concurrent writer.
        let expect = match expect {
            Expect::Absent => Expect::Absent,
            _ => Expect::from_read(
                self.storage
                    .get(Store::Pages, &page.key)
                    .await?
                    .map(|r| r.rev),
            ),
        };
        let mut ob = self
            .begin(OperationKind::HumanEdit, format!("edited: {}", page.title))
            .await?;
        ob.op.time = now;
        ob.op.pages.push(page.key.clone());
        ob.batch
            .put(Store::Pages, page.key.clone(), to_json(&page), expect);
        let revision = Revision {
            page: page.key.clone(),
            number: page.revision,
            author: Author::Human,
            op: ob.op.id,
            time: now,
            page_state: Some(page.clone()),
        };
        ob.batch.put(
            Store::Revisions,
            revision_key(&page.key, page.revision),
            to_json(&revision),
            Expect::Absent,
        );
        self.finish(ob).await?;
        Ok(page)
    }

    /// A page's revisions, oldest first.
    pub async fn history(&self, key: &str) -> Result<Vec<Revision>> {
        self.read_all(Store::Revisions, &format!("{key}\u{0}"))
            .await
    }

    // ---------------------------------------------------------------- documents and operations

    /// index.md, as last generated.
    pub async fn index(&self) -> Result<String> {
        self.document(INDEX_MD).await
    }

    /// log.md.
    pub async fn log(&self) -> Result<String> {
        self.document(LOG_MD).await
    }

    /// schema.md.
    pub async fn schema(&self) -> Result<String> {
        self.document(SCHEMA_MD).await
    }

    /// Replaces schema.md (one [`OperationKind::Settings`] operation). It steers the next compile.
    pub async fn set_schema(&self, text: &str) -> Result<Operation> {
        let text = normalize_source_text(text);
        let mut ob = self
            .begin(OperationKind::Settings, "schema.md edited".into())
            .await?;
        let rev = self
            .storage
            .get(Store::Documents, SCHEMA_MD)
            .await?
            .map(|r| r.rev);
        ob.batch.put(
            Store::Documents,
            SCHEMA_MD,
            text.into_bytes(),
            Expect::from_read(rev),
        );
        self.finish(ob).await
    }

    /// Every operation, oldest first.
    pub async fn operations(&self) -> Result<Vec<Operation>> {
        self.read_all(Store::Operations, "").await
    }
}

/// Shows a pending source whose current version failed to compile as failed.
fn show_failure(
    s: &mut Source,
    failures: &std::collections::BTreeMap<String, crate::compile::pipeline::FailureRecord>,
) {
    if let Some(f) = failures.get(&s.key) {
        if f.version == s.version && s.status == SourceStatus::Pending {
            s.status = SourceStatus::Failed {
                reason: f.reason.clone(),
                code: f.code.clone(),
            };
        }
    }
}

fn clean_list(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        let i = i.trim().to_string();
        if !i.is_empty() && !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

fn normalize_mime(mime: &str) -> Result<String> {
    let base = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let base = match base.as_str() {
        "text/x-markdown" | "text/md" => "text/markdown".to_string(),
        "" => "text/plain".to_string(),
        _ => base,
    };
    if SUPPORTED_MIME.contains(&base.as_str()) {
        Ok(base)
    } else {
        Err(Error::UnsupportedMime(mime.to_string()))
    }
}

/// A source key as stored: trimmed and in Unicode NFC (UAX #15), like page keys, so a file name
/// written in NFD (as macOS writes `Zu\u{308}rich.md`) and the same name in NFC are one key.
///
/// ```
/// use llm_wiki::wiki::source_key;
/// assert_eq!(source_key(" Zu\u{308}rich.md "), "Z\u{fc}rich.md");
/// ```
pub fn source_key(key: &str) -> String {
    unicode_normalization::UnicodeNormalization::nfc(key.trim()).collect()
}

/// The first ATX heading's text, else the first non-empty line (≤ 80 characters), else the key.
fn default_title(text: &str, key: &str) -> String {
    let heading = text.lines().find_map(|l| {
        let t = l.trim_start();
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
            Some(t[hashes..].trim().trim_end_matches('#').trim().to_string())
        } else {
            None
        }
    });
    let line = || {
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.chars().take(80).collect())
    };
    heading
        .filter(|h| !h.is_empty())
        .or_else(line)
        .unwrap_or_else(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_normalisation() {
        assert_eq!(
            normalize_mime("text/markdown; charset=utf-8").unwrap(),
            "text/markdown"
        );
        assert_eq!(normalize_mime("text/x-markdown").unwrap(), "text/markdown");
        assert_eq!(normalize_mime("TEXT/PLAIN").unwrap(), "text/plain");
        assert_eq!(
            normalize_mime("text/html"),
            Err(Error::UnsupportedMime("text/html".into()))
        );
    }

    #[test]
    fn default_titles() {
        assert_eq!(default_title("intro\n# Ownership #\n", "k"), "Ownership");
        assert_eq!(
            default_title("\n\n  first line \nsecond", "k"),
            "first line"
        );
        assert_eq!(default_title("#hashtag only", "k"), "#hashtag only");
        assert_eq!(default_title("  \n", "k"), "k");
    }
}
