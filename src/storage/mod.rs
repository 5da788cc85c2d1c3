//! Storage: batches of writes committed atomically, with optimistic concurrency (Decision 8).
//!
//! A wiki is one database of named [`Store`]s holding byte records under string keys. Every record
//! carries a revision counter (`rev`, 1 on first write, +1 on each put). A [`Batch`] lists puts and
//! deletes, each with the revision it [`Expect`]s; [`Storage::commit`] applies all of them or none.
//!
//! Implementations: [`memory::MemoryBackend`] (native and tests) and, on wasm, `idb::IdbBackend`
//! (IndexedDB through the `idb` crate). Both pass the same [`conformance`] suite. On wasm,
//! `browser::BrowserBackend` opens IndexedDB, or memory when IndexedDB is unavailable and the
//! caller asked for that fallback.
//!
//! *Invariant:* a commit never awaits anything but the storage itself. The batch is fully serialised
//! before the transaction opens, so no LLM call, embedding or timer can run inside a transaction and
//! let it auto-commit half-done (field case F24). "Committed" means the IndexedDB transaction's
//! `complete` event fired; quota errors that arrive on the transaction abort it and surface as
//! [`Error::QuotaExceeded`](crate::Error::QuotaExceeded).

#[cfg(target_arch = "wasm32")]
pub mod browser;
pub mod conformance;
pub mod counting;
#[cfg(target_arch = "wasm32")]
pub mod idb;
pub mod memory;

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::error::Result;

/// The schema version this build writes. Version history (each adds stores, never drops data):
/// 1 — `meta`, `sources`, `raw`, `pages`, `revisions`, `operations`, `documents`;
/// 2 — `claims`, `ledger`, `search`.
pub const SCHEMA_VERSION: u32 = 2;

pub use crate::model::Store;

/// A stored record: its bytes and its revision counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Revision counter: 1 after the first put, +1 per put.
    pub rev: u64,
    /// The payload (JSON for model records, binary for search blobs).
    pub data: Vec<u8>,
}

/// What a write expects to find before it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// No check.
    Any,
    /// The key must not exist.
    Absent,
    /// The record must exist at exactly this revision.
    Rev(u64),
}

impl Expect {
    /// `Absent` for `None`, `Rev(r)` for `Some(r)`: what to expect given a revision read earlier.
    pub fn from_read(rev: Option<u64>) -> Expect {
        rev.map_or(Expect::Absent, Expect::Rev)
    }

    /// Checks `found` (the stored revision, if any) against this expectation.
    pub fn check(self, found: Option<u64>) -> bool {
        match self {
            Expect::Any => true,
            Expect::Absent => found.is_none(),
            Expect::Rev(r) => found == Some(r),
        }
    }

    pub(crate) fn describe(self) -> String {
        match self {
            Expect::Any => "anything".into(),
            Expect::Absent => "absent".into(),
            Expect::Rev(r) => format!("rev {r}"),
        }
    }
}

pub(crate) fn describe_found(found: Option<u64>) -> String {
    found.map_or_else(|| "absent".into(), |r| format!("rev {r}"))
}

pub use crate::payload::{Data, RecordSource};

/// One write in a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Store `data` under `key`, bumping the revision.
    Put {
        /// Target store.
        store: Store,
        /// Record key.
        key: String,
        /// Payload.
        data: Data,
        /// Precondition.
        expect: Expect,
    },
    /// Remove `key` (a no-op when absent and `expect` allows it).
    Delete {
        /// Target store.
        store: Store,
        /// Record key.
        key: String,
        /// Precondition.
        expect: Expect,
    },
}

impl Write {
    /// The store written.
    pub fn store(&self) -> Store {
        match self {
            Write::Put { store, .. } | Write::Delete { store, .. } => *store,
        }
    }
    /// The key written.
    pub fn key(&self) -> &str {
        match self {
            Write::Put { key, .. } | Write::Delete { key, .. } => key,
        }
    }
    /// The precondition.
    pub fn expect(&self) -> Expect {
        match self {
            Write::Put { expect, .. } | Write::Delete { expect, .. } => *expect,
        }
    }
}

/// An ordered list of writes committed atomically. Later writes to the same key see earlier ones
/// (a put then a put with `Expect::Rev(old + 1)` succeeds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// The writes, applied in order.
    pub writes: Vec<Write>,
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Batch::default()
    }
    /// Adds a put.
    pub fn put(&mut self, store: Store, key: impl Into<String>, data: Vec<u8>, expect: Expect) {
        self.put_data(store, key, Data::Bytes(data), expect);
    }
    /// Adds a put whose payload may be a [`RecordSource`].
    pub fn put_data(&mut self, store: Store, key: impl Into<String>, data: Data, expect: Expect) {
        self.writes.push(Write::Put {
            store,
            key: key.into(),
            data,
            expect,
        });
    }
    /// Adds a delete.
    pub fn delete(&mut self, store: Store, key: impl Into<String>, expect: Expect) {
        self.writes.push(Write::Delete {
            store,
            key: key.into(),
            expect,
        });
    }
    /// Number of writes.
    pub fn len(&self) -> usize {
        self.writes.len()
    }
    /// True when there are no writes.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }
    /// The distinct stores the batch touches, in schema order.
    pub fn stores(&self) -> Vec<Store> {
        let mut s: Vec<Store> = self.writes.iter().map(Write::store).collect();
        crate::util::sort(&mut s);
        s.dedup();
        s
    }
}

/// Records read per storage call when every record of a store is read in pages
/// ([`Storage::scan_page`]) by an index rebuild (about 0.5 MB of text for pages of ~300 words).
pub const REBUILD_BATCH: usize = 256;

/// A connection to one wiki's database.
///
/// Futures are not `Send` (the browser is single-threaded); the trait is used generically, never as
/// `dyn`, so native `async fn` is enough (style: matrix-rust-sdk).
#[allow(async_fn_in_trait)] // used only generically inside this crate's single-threaded executor
pub trait Storage {
    /// Reads one record.
    async fn get(&self, store: Store, key: &str) -> Result<Option<Record>>;
    /// Reads the records of `keys` (in that order; `None` for a missing key), as one read:
    /// IndexedDB issues them in one transaction and waits once, instead of one transaction and
    /// one event-loop turn per key. The default reads them one by one.
    async fn get_many(&self, store: Store, keys: &[String]) -> Result<Vec<Option<Record>>> {
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            out.push(self.get(store, k).await?);
        }
        Ok(out)
    }
    /// Reads every record of a store whose key starts with `prefix`, in key order
    /// (lexicographic by UTF-16 code units in IndexedDB; our keys are chosen so that this equals
    /// byte order for the prefixes used).
    async fn scan(&self, store: Store, prefix: &str) -> Result<Vec<(String, Record)>>;
    /// Reads up to `limit` records of a store whose key starts with `prefix` and comes after
    /// `after` (from the first when `None`): pass the last key of one page as `after` to read the
    /// next, so a whole store is read without holding it all. Pages come in the backend's own
    /// key order (IndexedDB: UTF-16 code units, which may differ from [`Storage::scan`]'s code
    /// point order), and every key is returned once across the pages of an unchanged store.
    async fn scan_page(
        &self,
        store: Store,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Record)>>;
    /// Commits `batch` atomically: every write applies, or none does and the error says why.
    /// Returns the new revision of each put, in batch order (0 for deletes).
    async fn commit(&self, batch: Batch) -> Result<Vec<u64>>;
    /// The schema version of the open database.
    fn schema_version(&self) -> u32;
    /// Closes the connection. Later calls fail with [`crate::Error::Closed`].
    fn close(&self);
    /// True once closed (by [`Storage::close`], an upgrade from another tab, or deletion).
    fn is_closed(&self) -> bool;
}

/// A future returned by a version-change listener.
pub type LocalFuture = Pin<Box<dyn Future<Output = ()>>>;

/// Called when another connection wants to upgrade the schema or delete the database (IndexedDB
/// `versionchange`). The connection runs the returned future (e.g. to flush an unsaved draft), then
/// closes, so the other tab's upgrade can go on (field case F25).
pub type VersionChangeListener = Rc<dyn Fn() -> LocalFuture>;

/// How a connection reacts to `versionchange`.
#[derive(Clone, Default)]
pub enum OnVersionChange {
    /// Run the listener's future, if any, then close. The default.
    #[default]
    Close,
    /// Run the listener's future and then close (same as `Close`, with a listener).
    FlushThenClose(VersionChangeListener),
    /// Do nothing and stay open: simulates an old build without a handler. Tests only.
    Ignore,
}

impl std::fmt::Debug for OnVersionChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OnVersionChange::Close => "Close",
            OnVersionChange::FlushThenClose(_) => "FlushThenClose",
            OnVersionChange::Ignore => "Ignore",
        })
    }
}

/// Options for opening a wiki database.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Schema version to open at. Default [`SCHEMA_VERSION`]; tests open older versions to
    /// exercise the upgrade path.
    pub version: u32,
    /// How long to wait for other connections to close before failing with
    /// [`crate::Error::UpgradeBlocked`], in milliseconds. Default 5000.
    pub blocked_timeout_ms: u32,
    /// Reaction to another connection's upgrade.
    pub on_version_change: OnVersionChange,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            version: SCHEMA_VERSION,
            blocked_timeout_ms: 5000,
            on_version_change: OnVersionChange::Close,
        }
    }
}

/// Opens, lists and deletes wiki databases.
#[allow(async_fn_in_trait)] // used only generically, see `Storage`
pub trait Backend {
    /// The connection type.
    type Storage: Storage + FaultInjection + 'static;
    /// Opens (creating or upgrading as needed) the database of wiki `name`.
    async fn open(&self, name: &str, options: OpenOptions) -> Result<Self::Storage>;
    /// Names of the existing wikis, sorted.
    async fn list(&self) -> Result<Vec<String>>;
    /// Deletes wiki `name` and everything in it. Open connections receive `versionchange` and close.
    async fn delete(&self, name: &str) -> Result<()>;
}

/// A fault a test injects into the next commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The `k`-th write (1-based) of the next commit fails inside the transaction; the
    /// implementation must abort and leave nothing written.
    AtWrite(usize),
    /// Every commit fails at the `k`-th write, counting writes across commits (1-based), once.
    AtGlobalWrite(usize),
}

/// Failure injection for tests. Not part of normal operation.
pub trait FaultInjection {
    /// Arms (or with `None`, disarms) a fault.
    fn inject_fault(&self, fault: Option<Fault>);
    /// Writes attempted so far across all commits (counts the failing one).
    fn writes_attempted(&self) -> usize;
}

/// Shared bookkeeping for [`FaultInjection`]: decides whether the next write fails.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    fault: std::cell::Cell<Option<Fault>>,
    attempted: std::cell::Cell<usize>,
}

impl FaultState {
    pub(crate) fn arm(&self, fault: Option<Fault>) {
        self.fault.set(fault);
    }
    pub(crate) fn attempted(&self) -> usize {
        self.attempted.get()
    }
    /// Counts one write (`index_in_batch` is 1-based) and says whether it must fail.
    pub(crate) fn should_fail(&self, index_in_batch: usize) -> bool {
        let global = self.attempted.get() + 1;
        self.attempted.set(global);
        match self.fault.get() {
            Some(Fault::AtWrite(k)) if k == index_in_batch => {
                self.fault.set(None);
                true
            }
            Some(Fault::AtGlobalWrite(k)) if k == global => {
                self.fault.set(None);
                true
            }
            _ => false,
        }
    }
}

/// Wiki names are database names: 1–100 characters, no control characters, no `/`.
pub fn validate_wiki_name(name: &str) -> Result<()> {
    let n = name.chars().count();
    if n == 0 || n > 100 || name.chars().any(|c| c.is_control() || c == '/') || name.trim() != name
    {
        return Err(crate::Error::InvalidInput(format!(
            "wiki name {name:?} must be 1–100 characters, without '/', control characters or surrounding spaces"
        )));
    }
    Ok(())
}
