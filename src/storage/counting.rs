//! [`Counting`]: a [`Storage`] that counts what passes through it, per store — how many records
//! and bytes one connection read and wrote. Every [`crate::wiki::Wiki`] holds its storage in one,
//! so an operation's cost in records is measurable (`Wiki::io_stats`, before and after): the
//! real-size suite checks that a commit reads the bodies of the pages it changes and not of the
//! rest of the wiki.
//!
//! *Invariant:* counting never changes what is read or written; it only adds to counters.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Batch, Record, Storage, Store, Write};
use crate::error::Result;

/// Records and bytes one connection moved through one store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct StoreIo {
    /// Records read (a `get` that found one, each record a scan returned).
    pub reads: u64,
    /// Bytes of the records read.
    pub read_bytes: u64,
    /// Puts in committed batches.
    pub writes: u64,
    /// Bytes of those puts.
    pub written_bytes: u64,
    /// Deletes in committed batches.
    pub deletes: u64,
}

impl StoreIo {
    /// `self - earlier`, per counter (saturating): what happened between two readings.
    pub fn since(&self, earlier: &StoreIo) -> StoreIo {
        StoreIo {
            reads: self.reads.saturating_sub(earlier.reads),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            writes: self.writes.saturating_sub(earlier.writes),
            written_bytes: self.written_bytes.saturating_sub(earlier.written_bytes),
            deletes: self.deletes.saturating_sub(earlier.deletes),
        }
    }
}

/// What one connection read and wrote, per store (by [`Store::name`]), since it opened.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct IoStats {
    /// Per store name (`"pages"`, `"claims"`, …); stores not touched are absent.
    pub stores: BTreeMap<String, StoreIo>,
}

impl IoStats {
    /// The counters of `store` (zero when untouched).
    pub fn of(&self, store: Store) -> StoreIo {
        self.stores.get(store.name()).copied().unwrap_or_default()
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &IoStats) -> IoStats {
        IoStats {
            stores: self
                .stores
                .iter()
                .map(|(k, v)| {
                    let before = earlier.stores.get(k).copied().unwrap_or_default();
                    (k.clone(), v.since(&before))
                })
                .collect(),
        }
    }
}

/// A [`Storage`] that counts, per store, the records and bytes read and written through it.
pub struct Counting<S: Storage> {
    inner: S,
    stats: RefCell<BTreeMap<Store, StoreIo>>,
}

impl<S: Storage> Counting<S> {
    /// Wraps `inner`, counters at zero.
    pub fn new(inner: S) -> Self {
        Counting {
            inner,
            stats: RefCell::new(BTreeMap::new()),
        }
    }

    /// The wrapped connection.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The counters so far.
    pub fn stats(&self) -> IoStats {
        IoStats {
            stores: self
                .stats
                .borrow()
                .iter()
                .map(|(s, io)| (s.name().to_string(), *io))
                .collect(),
        }
    }

    fn count_reads<'a>(&self, store: Store, records: impl Iterator<Item = &'a Record>) {
        let mut stats = self.stats.borrow_mut();
        let io = stats.entry(store).or_default();
        for r in records {
            io.reads += 1;
            io.read_bytes += r.data.len() as u64;
        }
    }
}

impl<S: Storage> Storage for Counting<S> {
    async fn get(&self, store: Store, key: &str) -> Result<Option<Record>> {
        let r = self.inner.get(store, key).await?;
        self.count_reads(store, r.iter());
        Ok(r)
    }

    async fn get_many(&self, store: Store, keys: &[String]) -> Result<Vec<Option<Record>>> {
        let rs = self.inner.get_many(store, keys).await?;
        self.count_reads(store, rs.iter().flatten());
        Ok(rs)
    }

    async fn scan(&self, store: Store, prefix: &str) -> Result<Vec<(String, Record)>> {
        let rs = self.inner.scan(store, prefix).await?;
        self.count_reads(store, rs.iter().map(|(_, r)| r));
        Ok(rs)
    }

    async fn scan_page(
        &self,
        store: Store,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Record)>> {
        let rs = self.inner.scan_page(store, prefix, after, limit).await?;
        self.count_reads(store, rs.iter().map(|(_, r)| r));
        Ok(rs)
    }

    async fn commit(&self, batch: Batch) -> Result<Vec<u64>> {
        let mut counts: Vec<(Store, bool, u64)> = Vec::with_capacity(batch.len());
        for w in &batch.writes {
            match w {
                Write::Put { store, data, .. } => counts.push((*store, true, data.len() as u64)),
                Write::Delete { store, .. } => counts.push((*store, false, 0)),
            }
        }
        let revs = self.inner.commit(batch).await?;
        let mut stats = self.stats.borrow_mut();
        for (store, put, bytes) in counts {
            let io = stats.entry(store).or_default();
            if put {
                io.writes += 1;
                io.written_bytes += bytes;
            } else {
                io.deletes += 1;
            }
        }
        Ok(revs)
    }

    fn schema_version(&self) -> u32 {
        self.inner.schema_version()
    }

    fn close(&self) {
        self.inner.close()
    }

    fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}
