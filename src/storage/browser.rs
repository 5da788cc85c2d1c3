//! The browser's storage with an in-memory fallback (wasm only).
//!
//! [`BrowserBackend`] opens a wiki in IndexedDB ([`IdbBackend`]). Where IndexedDB cannot be used
//! at all — `indexedDB.open` throws `InvalidStateError` in Firefox private windows and some
//! embedded webviews, or `indexedDB` is missing — and the caller asked for it
//! ([`BrowserBackend::with_memory_fallback`]), it opens the wiki in memory instead
//! ([`MemoryBackend`]): everything works, and nothing is kept after the page closes.
//!
//! *Invariant:* the fallback is taken only on [`Error::StorageUnavailable`] from the open itself;
//! every other error (quota, a blocked upgrade, a newer schema) is returned as it is, so a wiki
//! that exists in IndexedDB is never silently replaced by an empty one in memory.

use super::idb::{IdbBackend, IdbStorage};
use super::memory::{MemoryBackend, MemoryStorage};
use super::{Backend, Batch, Fault, FaultInjection, OpenOptions, Record, Storage, Store};
use crate::error::{Error, Result};

/// Where a [`BrowserStorage`] keeps the wiki.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// IndexedDB: kept across reloads (until the browser evicts it, unless persisted).
    IndexedDb,
    /// Memory: gone when the page closes.
    Memory,
}

impl BackendKind {
    /// `"indexeddb"` or `"memory"`, as `storageInfo().backend` reports it.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::IndexedDb => "indexeddb",
            BackendKind::Memory => "memory",
        }
    }
}

/// A connection to a wiki in IndexedDB or, as a fallback, in memory.
pub enum BrowserStorage {
    /// An IndexedDB database.
    IndexedDb(IdbStorage),
    /// An in-memory database (IndexedDB was unavailable).
    Memory(MemoryStorage),
}

impl BrowserStorage {
    /// Where this connection keeps the wiki.
    pub fn kind(&self) -> BackendKind {
        match self {
            BrowserStorage::IndexedDb(_) => BackendKind::IndexedDb,
            BrowserStorage::Memory(_) => BackendKind::Memory,
        }
    }
}

macro_rules! delegate {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            BrowserStorage::IndexedDb($s) => $e,
            BrowserStorage::Memory($s) => $e,
        }
    };
}

impl Storage for BrowserStorage {
    async fn get(&self, store: Store, key: &str) -> Result<Option<Record>> {
        delegate!(self, s => s.get(store, key).await)
    }
    async fn get_many(&self, store: Store, keys: &[String]) -> Result<Vec<Option<Record>>> {
        delegate!(self, s => s.get_many(store, keys).await)
    }
    async fn scan(&self, store: Store, prefix: &str) -> Result<Vec<(String, Record)>> {
        delegate!(self, s => s.scan(store, prefix).await)
    }
    async fn scan_page(
        &self,
        store: Store,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Record)>> {
        delegate!(self, s => s.scan_page(store, prefix, after, limit).await)
    }
    async fn commit(&self, batch: Batch) -> Result<Vec<u64>> {
        delegate!(self, s => s.commit(batch).await)
    }
    fn schema_version(&self) -> u32 {
        delegate!(self, s => s.schema_version())
    }
    fn close(&self) {
        delegate!(self, s => s.close())
    }
    fn is_closed(&self) -> bool {
        delegate!(self, s => s.is_closed())
    }
}

impl FaultInjection for BrowserStorage {
    fn inject_fault(&self, fault: Option<Fault>) {
        delegate!(self, s => s.inject_fault(fault))
    }
    fn writes_attempted(&self) -> usize {
        delegate!(self, s => s.writes_attempted())
    }
}

thread_local! {
    /// The wikis opened in memory in this page (or worker): one set for its lifetime, so a
    /// wiki in memory that the app closes and opens again (switching wikis) is still there.
    static MEMORY: MemoryBackend = MemoryBackend::new();
}

/// Opens wikis in IndexedDB, and in memory when IndexedDB is unavailable and the fallback is on.
/// Every `BrowserBackend` of a page shares the page's wikis in memory.
#[derive(Clone)]
pub struct BrowserBackend {
    memory_fallback: bool,
    memory: MemoryBackend,
}

impl Default for BrowserBackend {
    fn default() -> Self {
        BrowserBackend::with_memory_fallback(false)
    }
}

impl BrowserBackend {
    /// IndexedDB only: an unavailable IndexedDB fails the open with `STORAGE_UNAVAILABLE`.
    pub fn new() -> Self {
        BrowserBackend::default()
    }

    /// IndexedDB, or memory when IndexedDB is unavailable (`memory_fallback`).
    pub fn with_memory_fallback(memory_fallback: bool) -> Self {
        BrowserBackend {
            memory_fallback,
            memory: MEMORY.with(MemoryBackend::clone),
        }
    }
}

impl Backend for BrowserBackend {
    type Storage = BrowserStorage;

    /// Errors: those of [`IdbBackend::open`]; [`Error::StorageUnavailable`] only without the
    /// fallback.
    async fn open(&self, name: &str, options: OpenOptions) -> Result<BrowserStorage> {
        match IdbBackend::new().open(name, options.clone()).await {
            Ok(s) => Ok(BrowserStorage::IndexedDb(s)),
            Err(Error::StorageUnavailable(_)) if self.memory_fallback => Ok(
                BrowserStorage::Memory(self.memory.open(name, options).await?),
            ),
            Err(e) => Err(e),
        }
    }

    /// The wikis in IndexedDB and those in memory, sorted; only the ones in memory where
    /// IndexedDB is unavailable.
    async fn list(&self) -> Result<Vec<String>> {
        let mut names = self.memory.list().await?;
        match IdbBackend::new().list().await {
            Ok(more) => names.extend(more),
            Err(Error::StorageUnavailable(_)) if !names.is_empty() => {}
            Err(e) => return Err(e),
        }
        crate::util::sort(&mut names);
        names.dedup();
        Ok(names)
    }

    /// Deletes the wiki from memory and from IndexedDB (where IndexedDB is unavailable, from
    /// memory only).
    async fn delete(&self, name: &str) -> Result<()> {
        let in_memory = self.memory.list().await?.iter().any(|n| n == name);
        self.memory.delete(name).await?;
        match IdbBackend::new().delete(name).await {
            Err(Error::StorageUnavailable(_)) if in_memory => Ok(()),
            other => other,
        }
    }
}
