//! The wiki kernel: one open wiki over a [`Storage`] and a [`Clock`] — the struct, opening,
//! reads, the begin/finish of an operation, and the page writes every operation shares. The
//! operations (`sources`, `compile`, `query`, `lint`, `history`, `vault`, `search_ops`,
//! `settings`) are `impl Wiki` blocks of their own above it; the kernel calls none of them.
//!
//! Every mutating method is one numbered [`Operation`] committed as one [`Batch`]: the records it
//! writes, the operation record, the op counter, log.md and (when pages change) index.md. The op
//! counter is written with an expected revision, so two writers can never commit the same op id;
//! the loser gets [`Error::Conflict`] and nothing of its batch is written.
//!
//! Submodules: `sources` (source reads and re-keying), `pages` (page reads and the one way to
//! write or delete a page with its revision), `rename` (renaming a page with its links and
//! history), `assets` (attachment reads, and markdown rendered as a page body against the pages
//! and attachments), `search_index` (the stored search index an operation's commit carries its
//! delta to), `search` (searching it, with the query's embedding, for every operation that ranks
//! pages), `config` (the stored LLM configuration the commit and the operations read).
//!
//! *Invariant:* this module never does I/O of its own; it reads and commits through the storage
//! trait only. What it keeps between calls (the page table, the decoded search index, per
//! connection settings and the operations' scratch state in [`OpState`]) is a cache keyed by
//! the stamp records it was read at, or state that is never stored.

mod assets;
mod config;
mod device;
mod files;
mod notes;
mod pages;
mod rename;
mod search;
pub(crate) mod search_index;
mod source_passages;
mod sources;

pub use device::{is_device_id, new_device_id, DEVICE_ID_LEN};
pub use notes::{NoteOutcome, VaultFilesIn};
pub use pages::unlink_page;
pub use search_index::{embedding_text, page_fields, search_writes, SearchCache};
pub use source_passages::{source_passages, PassageText};
// The benchmark build feeds sources to an index in the steps the product builds it in.
#[cfg(all(feature = "bench", target_arch = "wasm32"))]
pub(crate) use source_passages::{new_passages, SYNC_SOURCES};
pub(crate) use sources::put_source_flag;
pub use sources::{source_key, SourceSpan};

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;

use crate::clock::Clock;
use crate::documents::{self, INDEX_MD, LOG_MD, SCHEMA_MD};
use crate::error::{Error, Result};
use crate::model::{OpId, Operation, OperationKind, Page, TokenUsage};
use crate::page_table::PageTable;
use crate::storage::{Backend, Batch, Expect, OpenOptions, Storage, Store};

pub use crate::records::SOURCE_FLAG_PREFIX;

pub use crate::model::{
    AddOutcome, AddSourceReport, NewSource, PageEdit, PageInfo, SourceFlag, SourceWithText,
};
pub(crate) use crate::records::{from_json, to_json};
pub use crate::records::{operation_key, revision_key};
use crate::records::{OpsCounter, META_OPS};

/// An operation being assembled: the batch, the op record, and the documents it touches.
pub(crate) struct OpBuilder {
    pub(crate) batch: Batch,
    pub(crate) op: Operation,
    /// Write index.md even when no page changes (the lint fix that rebuilds it).
    pub(crate) rewrite_index: bool,
}

/// State an operation keeps for one connection between calls, never stored: one value per type,
/// created with its `Default` the first time it is asked for. The kernel holds it without
/// knowing the operations' types, so no operation's type appears in [`Wiki`].
#[derive(Default)]
pub(crate) struct OpState(std::cell::RefCell<Vec<std::rc::Rc<dyn std::any::Any>>>);

impl OpState {
    /// The value of type `T` of this connection (a new `T::default()` the first time).
    pub(crate) fn get<T: Default + 'static>(&self) -> std::rc::Rc<T> {
        let mut values = self.0.borrow_mut();
        if let Some(v) = values.iter().find_map(|v| v.clone().downcast::<T>().ok()) {
            return v;
        }
        let v = std::rc::Rc::new(T::default());
        values.push(v.clone());
        v
    }
}

/// One open wiki.
pub struct Wiki<S: Storage, C: Clock> {
    pub(crate) name: String,
    /// The connection, counting what each store reads and writes ([`Wiki::io_stats`]).
    pub(crate) storage: crate::storage::counting::Counting<S>,
    pub(crate) clock: C,
    /// The last search index read, for searches (see [`Wiki::search_index_shared`]).
    pub(crate) search_cache: SearchCache,
    /// The page table as last read or committed here, with the revision of its stamp record
    /// (see [`Wiki::page_table`]).
    pub(crate) page_table_cache: std::cell::RefCell<Option<(u64, std::rc::Rc<PageTable>)>>,
    /// State the operations keep for this connection between calls (not stored), by type: e.g.
    /// the findings of the last lint, which `Wiki::apply_fix` looks an id up in, the vector graph
    /// settings (`Wiki::set_vector_index_options`), the offline compiler's corpus statistics and
    /// the extract reply lengths a compile has seen.
    pub(crate) op_state: OpState,
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
        Self::from_storage(name, storage, clock).await
    }

    /// Wraps an already open storage connection.
    pub async fn from_storage(name: &str, storage: S, clock: C) -> Result<Self> {
        let wiki = Wiki {
            name: name.to_string(),
            storage: crate::storage::counting::Counting::new(storage),
            clock,
            search_cache: Default::default(),
            page_table_cache: Default::default(),
            op_state: Default::default(),
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
        let seen = self.seen_now(&counter).await?;
        let now = self.clock.now_ms();
        let time = if counter.time > 0 {
            now.max(counter.time + 1)
        } else {
            now
        };
        let mut batch = Batch::new();
        batch.put(
            Store::Meta,
            META_OPS,
            to_json(&OpsCounter {
                last: id,
                time: counter.time,
                seen: Some(seen.clone()),
            }),
            Expect::from_read(rev),
        );
        Ok(OpBuilder {
            batch,
            rewrite_index: false,
            op: Operation {
                id,
                kind,
                time,
                summary,
                pages: vec![],
                sources: vec![],
                usage: TokenUsage::default(),
                rolled_back_by: None,
                seen: Some(seen),
            },
        })
    }

    /// What an operation made now sees of the other devices' ([`Operation::seen`]): the op
    /// counter's, or, in a counter an older build wrote, the last operation of each other slot
    /// among those held (read once: the next counter keeps it).
    ///
    /// Errors: storage errors.
    async fn seen_now(&self, counter: &OpsCounter) -> Result<Vec<OpId>> {
        if let Some(seen) = &counter.seen {
            return Ok(seen.clone());
        }
        let slot = crate::model::op_slot(counter.last);
        let mut seen = Vec::new();
        for o in self.read_all::<Operation>(Store::Operations, "").await? {
            if crate::model::op_slot(o.id) != slot {
                crate::model::note_seen(&mut seen, o.id);
            }
        }
        Ok(seen)
    }

    /// Finishes an operation: adds the op record and the log entry, then what the batch's page,
    /// revision, claim and ledger writes change in the page table ([`crate::page_table::derive`]),
    /// and — when pages change — a fresh index.md from the table; when pages or sources change,
    /// the search-index delta of the pages written and deleted and of the sources' passages;
    /// then the operation's undo record ([`crate::records::undo`]), then
    /// commits. Reads the bodies of no page but those in the batch.
    pub(crate) async fn finish(&self, mut ob: OpBuilder) -> Result<Operation> {
        ob.batch.put(
            Store::Operations,
            operation_key(ob.op.id),
            to_json(&ob.op),
            Expect::Absent,
        );
        let op = ob.op.clone();
        self.commit_derived(
            ob.batch,
            std::slice::from_ref(&op),
            op.id,
            ob.rewrite_index,
            None,
        )
        .await?;
        Ok(ob.op)
    }

    /// Commits operations another device made (issue #25: a folder two devices keep), their
    /// records' writes in `batch` (as the merge decided them), with their undo records as that
    /// device wrote them: the operation records, log entries (in their places in the total
    /// `order` of every operation held, [`documents::merge_log`]), page table, index.md and
    /// search index change as [`Wiki::finish`] changes them, in one transaction. This device's op
    /// counter stays (their ids are in another slot, Decision 7); its time moves up to theirs, so
    /// an operation made here later orders after them.
    ///
    /// Errors: storage errors ([`Error::Conflict`] when another connection committed meanwhile:
    /// nothing is written).
    pub(crate) async fn commit_foreign(
        &self,
        mut batch: Batch,
        ops: &[Operation],
        undo: Vec<crate::records::undo::UndoRecord>,
        order: &BTreeMap<OpId, crate::model::OpOrder>,
    ) -> Result<()> {
        let (counter, rev) = match self.read::<OpsCounter>(Store::Meta, META_OPS).await? {
            Some((c, rev)) => (c, Some(rev)),
            None => (OpsCounter::default(), None),
        };
        let time = ops.iter().map(|o| o.time).max().unwrap_or(0);
        let stamp = counter.last;
        let mut seen = self.seen_now(&counter).await?;
        for o in ops {
            crate::model::note_seen(&mut seen, o.id);
        }
        batch.put(
            Store::Meta,
            META_OPS,
            to_json(&OpsCounter {
                last: counter.last,
                time: counter.time.max(time),
                seen: Some(seen),
            }),
            Expect::from_read(rev),
        );
        for o in ops {
            batch.put(
                Store::Operations,
                operation_key(o.id),
                to_json(o),
                Expect::Any,
            );
        }
        self.commit_derived(batch, ops, stamp, false, Some((undo, order)))
            .await
    }

    /// The rest of [`Wiki::finish`] and [`Wiki::commit_foreign`]: log entries for `ops`, the
    /// derived records stamped `stamp`, the undo records (computed from the batch for the one
    /// operation `stamp` when `foreign` is `None`; else another device's, with the order its
    /// log entries go in), the commit, the caches.
    async fn commit_derived(
        &self,
        mut batch: Batch,
        ops: &[Operation],
        stamp: OpId,
        rewrite_index: bool,
        foreign: Option<(
            Vec<crate::records::undo::UndoRecord>,
            &BTreeMap<OpId, crate::model::OpOrder>,
        )>,
    ) -> Result<()> {
        let log = self.storage.get(Store::Documents, LOG_MD).await?;
        let (mut text, rev) = match log {
            Some(r) => (String::from_utf8_lossy(&r.data).into_owned(), Some(r.rev)),
            None => (documents::empty_log(), None),
        };
        let (undo, order) = match foreign {
            Some((u, o)) => (Some(u), Some(o)),
            None => (None, None),
        };
        match order {
            Some(order) => text = documents::merge_log(&text, ops, order),
            None => {
                for o in ops {
                    text.push_str(&documents::log_entry(o));
                }
            }
        }
        batch.put(
            Store::Documents,
            LOG_MD,
            text.into_bytes(),
            Expect::from_read(rev),
        );
        let table = self.page_table().await?;
        let derived = crate::page_table::derive(&self.storage, &mut batch, &table, stamp).await?;
        if derived.pages_changed() || rewrite_index {
            batch.put(
                Store::Documents,
                INDEX_MD,
                derived.table.index_md().into_bytes(),
                Expect::Any,
            );
        }
        let mut search = None;
        let mut restamp = None;
        let sources = source_passages::source_changes(&batch)?;
        if derived.pages_changed() || !sources.is_empty() {
            // The search index changes in the same transaction as the pages and sources.
            let written: Vec<&Page> = derived.written.values().collect();
            let index = self
                .search_delta(&mut batch, stamp, &written, &derived.deleted, &sources)
                .await?;
            // Its stamp is the batch's last search write so far.
            search = Some((index, batch.len() - 1));
        } else if undo.is_none() {
            // The pages did not change: an index current before this operation is current after
            // it, so its stamp moves along (and reading it later never has to write).
            restamp = self.advance_search_stamp(&mut batch, stamp).await?;
        }
        // What the batch overwrites, for rollback (crate::history); another device's as it
        // wrote them (a merge may bring one again: written over).
        let (undo, expect) = match undo {
            Some(u) => (u, Expect::Any),
            None => (
                vec![crate::records::undo::undo_record(&self.storage, &batch, stamp).await?],
                Expect::Absent,
            ),
        };
        for u in &undo {
            batch.put(
                Store::Meta,
                crate::records::undo_key(u.op),
                to_json(u),
                expect,
            );
        }
        let stamp_at = derived.stamp_at;
        let revs = self.storage.commit(batch).await?;
        *self.page_table_cache.borrow_mut() = revs
            .get(stamp_at)
            .map(|rev| (*rev, std::rc::Rc::new(derived.table)));
        if let Some((index, at)) = search {
            if let Some(rev) = revs.get(at) {
                self.committed_search_index(index, stamp, *rev);
            }
        }
        if let Some((before, at)) = restamp {
            if let Some(rev) = revs.get(at) {
                self.restamp_search_cache(before, stamp, *rev);
            }
        }
        Ok(())
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

    /// Every operation, oldest first: in the total order of Decision 7
    /// ([`crate::model::op_orders`]).
    pub async fn operations(&self) -> Result<Vec<Operation>> {
        let mut ops: Vec<Operation> = self.read_all(Store::Operations, "").await?;
        crate::model::sort_operations(&mut ops);
        Ok(ops)
    }
}
