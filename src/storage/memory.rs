//! In-memory storage: the reference implementation of [`Storage`], used natively and in tests.
//!
//! It models what matters of IndexedDB: named databases with a schema version, several connections
//! to one database, `versionchange` notification of open connections on upgrade or delete, a
//! blocked upgrade while a connection stays open, and all-or-nothing batches.
//!
//! *Invariant:* a failed commit changes nothing: writes are staged and applied only after every
//! check passed.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::{Rc, Weak};

use super::{
    describe_found, validate_wiki_name, Backend, Batch, Fault, FaultInjection, FaultState,
    OnVersionChange, OpenOptions, Record, Storage, Store, Write,
};
use crate::error::{Error, Result};

#[derive(Default)]
struct MemDb {
    version: u32,
    data: BTreeMap<Store, BTreeMap<String, Record>>,
    connections: Vec<Weak<Conn>>,
}

struct Conn {
    closed: Cell<bool>,
    version: u32,
    on_version_change: OnVersionChange,
    faults: FaultState,
}

type Databases = Rc<RefCell<HashMap<String, Rc<RefCell<MemDb>>>>>;

/// A set of in-memory databases. Clones share them, like tabs share an origin's IndexedDB.
#[derive(Clone, Default)]
pub struct MemoryBackend {
    dbs: Databases,
}

impl MemoryBackend {
    /// An empty backend.
    pub fn new() -> Self {
        MemoryBackend::default()
    }

    /// Notifies every open connection of `db` that it must go, runs their listeners, and reports
    /// whether any connection is still open afterwards.
    async fn evict_connections(db: &Rc<RefCell<MemDb>>) -> bool {
        let live: Vec<Rc<Conn>> = {
            let mut d = db.borrow_mut();
            d.connections
                .retain(|w| w.upgrade().is_some_and(|c| !c.closed.get()));
            d.connections.iter().filter_map(Weak::upgrade).collect()
        };
        for conn in &live {
            match &conn.on_version_change {
                OnVersionChange::Close => conn.closed.set(true),
                OnVersionChange::FlushThenClose(listener) => {
                    listener().await;
                    conn.closed.set(true);
                }
                OnVersionChange::Ignore => {}
            }
        }
        live.iter().any(|c| !c.closed.get())
    }
}

impl Backend for MemoryBackend {
    type Storage = MemoryStorage;

    async fn open(&self, name: &str, options: OpenOptions) -> Result<MemoryStorage> {
        validate_wiki_name(name)?;
        let db = self
            .dbs
            .borrow_mut()
            .entry(name.to_string())
            .or_default()
            .clone();
        let current = db.borrow().version;
        if current > options.version {
            return Err(Error::SchemaTooNew {
                found: current,
                known: options.version,
            });
        }
        if options.version > current {
            if current > 0 && Self::evict_connections(&db).await {
                return Err(Error::UpgradeBlocked {
                    name: name.to_string(),
                    version: options.version,
                });
            }
            db.borrow_mut().version = options.version;
        }
        let conn = Rc::new(Conn {
            closed: Cell::new(false),
            version: options.version,
            on_version_change: options.on_version_change,
            faults: FaultState::default(),
        });
        db.borrow_mut().connections.push(Rc::downgrade(&conn));
        Ok(MemoryStorage { db, conn })
    }

    async fn list(&self) -> Result<Vec<String>> {
        let mut names: Vec<String> = self.dbs.borrow().keys().cloned().collect();
        crate::util::sort(&mut names);
        Ok(names)
    }

    async fn delete(&self, name: &str) -> Result<()> {
        let db = self.dbs.borrow().get(name).cloned();
        let Some(db) = db else { return Ok(()) };
        if Self::evict_connections(&db).await {
            return Err(Error::UpgradeBlocked {
                name: name.to_string(),
                version: 0,
            });
        }
        self.dbs.borrow_mut().remove(name);
        Ok(())
    }
}

/// A connection to one in-memory database.
pub struct MemoryStorage {
    db: Rc<RefCell<MemDb>>,
    conn: Rc<Conn>,
}

impl MemoryStorage {
    fn check(&self, store: Store) -> Result<()> {
        if self.conn.closed.get() {
            return Err(Error::Closed);
        }
        if store.since_version() > self.conn.version {
            return Err(Error::Storage(format!(
                "object store {:?} does not exist in schema version {}",
                store.name(),
                self.conn.version
            )));
        }
        Ok(())
    }
}

impl Storage for MemoryStorage {
    async fn get(&self, store: Store, key: &str) -> Result<Option<Record>> {
        self.check(store)?;
        Ok(self
            .db
            .borrow()
            .data
            .get(&store)
            .and_then(|m| m.get(key))
            .cloned())
    }

    async fn scan(&self, store: Store, prefix: &str) -> Result<Vec<(String, Record)>> {
        self.check(store)?;
        let db = self.db.borrow();
        let Some(map) = db.data.get(&store) else {
            return Ok(Vec::new());
        };
        Ok(map
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect())
    }

    async fn scan_page(
        &self,
        store: Store,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Record)>> {
        use std::ops::Bound;
        self.check(store)?;
        let db = self.db.borrow();
        let Some(map) = db.data.get(&store) else {
            return Ok(Vec::new());
        };
        let lower = match after {
            Some(a) if a.starts_with(prefix) => Bound::Excluded(a.to_string()),
            // Past every key with the prefix.
            Some(a) if a > prefix => return Ok(Vec::new()),
            _ => Bound::Included(prefix.to_string()),
        };
        Ok(map
            .range((lower, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(limit)
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect())
    }

    async fn commit(&self, batch: Batch) -> Result<Vec<u64>> {
        if self.conn.closed.get() {
            return Err(Error::Closed);
        }
        for s in batch.stores() {
            self.check(s)?;
        }
        // Stage every write; apply only when all passed.
        let mut staged: HashMap<(Store, String), Option<Record>> = HashMap::new();
        let mut revs = Vec::with_capacity(batch.len());
        {
            let db = self.db.borrow();
            for (i, write) in batch.writes.iter().enumerate() {
                if self.conn.faults.should_fail(i + 1) {
                    return Err(Error::InjectedFault(format!(
                        "write {} of {} ({}/{})",
                        i + 1,
                        batch.len(),
                        write.store().name(),
                        write.key()
                    )));
                }
                let id = (write.store(), write.key().to_string());
                let found = match staged.get(&id) {
                    Some(r) => r.as_ref().map(|r| r.rev),
                    None => db.data.get(&id.0).and_then(|m| m.get(&id.1)).map(|r| r.rev),
                };
                if !write.expect().check(found) {
                    return Err(Error::Conflict {
                        store: id.0,
                        key: id.1,
                        expected: write.expect().describe(),
                        found: describe_found(found),
                    });
                }
                match write {
                    Write::Put { data, .. } => {
                        let bytes = data.to_vec();
                        if bytes.len() != data.len() {
                            return Err(Error::Storage(format!(
                                "a record source wrote {} bytes for a length of {}",
                                bytes.len(),
                                data.len()
                            )));
                        }
                        let rev = found.unwrap_or(0) + 1;
                        revs.push(rev);
                        staged.insert(id, Some(Record { rev, data: bytes }));
                    }
                    Write::Delete { .. } => {
                        revs.push(0);
                        staged.insert(id, None);
                    }
                }
            }
        }
        let mut db = self.db.borrow_mut();
        for ((store, key), record) in staged {
            let map = db.data.entry(store).or_default();
            match record {
                Some(r) => {
                    map.insert(key, r);
                }
                None => {
                    map.remove(&key);
                }
            }
        }
        Ok(revs)
    }

    fn schema_version(&self) -> u32 {
        self.conn.version
    }

    fn close(&self) {
        self.conn.closed.set(true);
    }

    fn is_closed(&self) -> bool {
        self.conn.closed.get()
    }
}

impl Drop for MemoryStorage {
    fn drop(&mut self) {
        self.conn.closed.set(true);
    }
}

impl FaultInjection for MemoryStorage {
    fn inject_fault(&self, fault: Option<Fault>) {
        self.conn.faults.arm(fault);
    }
    fn writes_attempted(&self) -> usize {
        self.conn.faults.attempted()
    }
}
