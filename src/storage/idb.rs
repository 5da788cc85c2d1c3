//! IndexedDB storage (wasm only), over the `idb` crate.
//!
//! One IndexedDB database per wiki, named `llm-wiki/<name>`, one object store per [`Store`], records
//! `{rev: number, data: Uint8Array}` under out-of-line string keys.
//!
//! *Invariant:* a commit opens one `readwrite` transaction, reads the revisions it must check,
//! issues every put and delete without awaiting anything else, and reports success only on the
//! transaction's `complete` event. Every error path aborts the transaction explicitly (the `idb`
//! crate does not abort a dropped transaction). Opening uses `web_sys` directly, because a blocked
//! upgrade must be able to give up after a timeout and still close the connection if the open
//! succeeds later (field case F25).

use std::cell::{Cell, RefCell};
use std::future::IntoFuture;
use std::rc::Rc;

use futures::channel::oneshot;
use futures::future::{select, Either};
use idb::{Database, KeyRange, ObjectStore, TransactionMode, TransactionResult};
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{IdbDatabase, IdbFactory, IdbOpenDbRequest, IdbTransaction, IdbVersionChangeEvent};

use super::{
    describe_found, validate_wiki_name, Backend, Batch, Data, Fault, FaultInjection, FaultState,
    OnVersionChange, OpenOptions, Record, Storage, Store, Write,
};
use crate::error::{Error, Result};

/// Prefix of every wiki database name.
pub const DB_PREFIX: &str = "llm-wiki/";

/// Opens wiki databases in this origin's IndexedDB (window, worker or extension page).
#[derive(Debug, Clone, Copy, Default)]
pub struct IdbBackend;

impl IdbBackend {
    /// The backend of the current global scope.
    pub fn new() -> Self {
        IdbBackend
    }
}

fn factory() -> Result<IdbFactory> {
    let global = js_sys::global();
    let value = Reflect::get(&global, &JsValue::from_str("indexedDB")).map_err(|_| {
        Error::StorageUnavailable("indexedDB is not defined in this context".into())
    })?;
    if value.is_undefined() || value.is_null() {
        return Err(Error::StorageUnavailable(
            "IndexedDB is disabled (private browsing or browser settings)".into(),
        ));
    }
    value
        .dyn_into::<IdbFactory>()
        .map_err(|_| Error::StorageUnavailable("indexedDB is not an IDBFactory".into()))
}

fn js_message(v: &JsValue) -> String {
    if let Some(e) = v.dyn_ref::<web_sys::DomException>() {
        return format!("{}: {}", e.name(), e.message());
    }
    if let Some(e) = v.dyn_ref::<js_sys::Error>() {
        return String::from(e.message());
    }
    v.as_string().unwrap_or_else(|| format!("{v:?}"))
}

fn dom_error(e: Option<web_sys::DomException>, context: &str) -> Error {
    match e {
        Some(e) if e.name() == "QuotaExceededError" => Error::QuotaExceeded {
            usage: None,
            quota: None,
        },
        Some(e) => Error::Storage(format!("{context}: {}: {}", e.name(), e.message())),
        None => Error::Storage(format!("{context}: aborted")),
    }
}

fn idb_error(e: idb::Error, context: &str) -> Error {
    match e {
        idb::Error::DomException(d) => dom_error(Some(d), context),
        other => Error::Storage(format!("{context}: {other}")),
    }
}

/// This origin's storage figures, `(usage, quota)` in bytes, from `navigator.storage.estimate()`
/// (window, worker or extension page); `None` for what the browser does not report. Test quota
/// overrides (CDP `Storage.overrideQuotaForOrigin`) do not show here.
pub async fn estimate() -> (Option<u64>, Option<u64>) {
    let Some(manager) = storage_manager() else {
        return (None, None);
    };
    let Ok(promise) = manager.estimate() else {
        return (None, None);
    };
    let Ok(estimate) = wasm_bindgen_futures::JsFuture::from(promise).await else {
        return (None, None);
    };
    let field = |name: &str| {
        Reflect::get(&estimate, &name.into())
            .ok()
            .and_then(|v| v.as_f64())
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| n as u64)
    };
    (field("usage"), field("quota"))
}

pub use crate::util::storage_manager;

/// A quota error with this origin's figures filled in; any other error as it is.
async fn with_figures(e: Error) -> Error {
    match e {
        Error::QuotaExceeded {
            usage: None,
            quota: None,
        } => {
            let (usage, quota) = estimate().await;
            Error::QuotaExceeded { usage, quota }
        }
        other => other,
    }
}

async fn sleep_ms(ms: u32) {
    gloo_timers::future::TimeoutFuture::new(ms).await;
}

/// What the open request reported.
enum OpenOutcome {
    Opened(IdbDatabase),
    Failed(Option<web_sys::DomException>),
}

/// Issues `indexedDB.open(name, version)`, creating the stores of every schema version between the
/// old and the new one in `upgradeneeded`. Resolves with the outcome, or with `Err(())` when the
/// request stayed blocked for `blocked_timeout_ms`; a connection that opens after that is closed at
/// once, so it never holds the database.
async fn open_request(
    db_name: &str,
    version: Option<u32>,
    blocked_timeout_ms: u32,
) -> Result<std::result::Result<OpenOutcome, ()>> {
    let factory = factory()?;
    let request: IdbOpenDbRequest = match version {
        Some(v) => factory.open_with_u32(db_name, v),
        None => factory.open(db_name),
    }
    .map_err(|e| Error::StorageUnavailable(js_message(&e)))?;

    let abandoned = Rc::new(Cell::new(false));
    let (done_tx, done_rx) = oneshot::channel::<OpenOutcome>();
    let done_tx = Rc::new(RefCell::new(Some(done_tx)));
    let (blocked_tx, blocked_rx) = oneshot::channel::<()>();

    {
        let request_ = request.clone();
        let on_upgrade = Closure::once_into_js(move |event: IdbVersionChangeEvent| {
            let old = event.old_version() as u32;
            let new = event.new_version().unwrap_or(0.0) as u32;
            if let Ok(db) = request_.result().and_then(|r| r.dyn_into::<IdbDatabase>()) {
                for store in Store::in_version(new).filter(|s| s.since_version() > old) {
                    // Upgrades only add stores, so data of older versions stays as it was.
                    let _ = db.create_object_store(store.name());
                }
            }
        });
        request.set_onupgradeneeded(Some(on_upgrade.unchecked_ref()));
    }
    {
        let request_ = request.clone();
        let done = done_tx.clone();
        let abandoned = abandoned.clone();
        let on_success = Closure::once_into_js(move || {
            let db: IdbDatabase = match request_.result().and_then(|r| r.dyn_into()) {
                Ok(db) => db,
                Err(_) => return,
            };
            if abandoned.get() {
                db.close();
                return;
            }
            match done.borrow_mut().take() {
                Some(tx) => {
                    if let Err(OpenOutcome::Opened(db)) = tx.send(OpenOutcome::Opened(db)) {
                        db.close();
                    }
                }
                None => db.close(),
            }
        });
        request.set_onsuccess(Some(on_success.unchecked_ref()));
    }
    {
        let request_ = request.clone();
        let done = done_tx.clone();
        let on_error = Closure::once_into_js(move || {
            let error = request_.error().ok().flatten();
            if let Some(tx) = done.borrow_mut().take() {
                let _ = tx.send(OpenOutcome::Failed(error));
            }
        });
        request.set_onerror(Some(on_error.unchecked_ref()));
    }
    {
        let on_blocked = Closure::once_into_js(move || {
            let _ = blocked_tx.send(());
        });
        request.set_onblocked(Some(on_blocked.unchecked_ref()));
    }

    let blocked_then_timeout = async move {
        if blocked_rx.await.is_err() {
            // The request settled without being blocked: never time out.
            futures::future::pending::<()>().await;
        }
        sleep_ms(blocked_timeout_ms).await;
    };
    match select(done_rx, Box::pin(blocked_then_timeout)).await {
        Either::Left((Ok(outcome), _)) => Ok(Ok(outcome)),
        Either::Left((Err(_), _)) => Err(Error::Storage("open request dropped".into())),
        Either::Right(((), _)) => {
            abandoned.set(true);
            Ok(Err(()))
        }
    }
}

/// Reads the version of an existing database without upgrading it.
async fn current_version(db_name: &str) -> Result<u32> {
    match open_request(db_name, None, 5000).await? {
        Ok(OpenOutcome::Opened(db)) => {
            let v = db.version() as u32;
            db.close();
            Ok(v)
        }
        Ok(OpenOutcome::Failed(e)) => Err(dom_error(e, "open")),
        Err(()) => Err(Error::Storage("version probe blocked".into())),
    }
}

struct ConnState {
    closed: Cell<bool>,
}

/// A connection to one wiki's IndexedDB database.
pub struct IdbStorage {
    db: IdbDatabase,
    version: u32,
    state: Rc<ConnState>,
    faults: FaultState,
    _on_version_change: Closure<dyn FnMut()>,
    _on_close: Closure<dyn FnMut()>,
}

impl Backend for IdbBackend {
    type Storage = IdbStorage;

    async fn open(&self, name: &str, options: OpenOptions) -> Result<IdbStorage> {
        validate_wiki_name(name)?;
        let db_name = format!("{DB_PREFIX}{name}");
        let db = match open_request(&db_name, Some(options.version), options.blocked_timeout_ms)
            .await?
        {
            Ok(OpenOutcome::Opened(db)) => db,
            Ok(OpenOutcome::Failed(Some(e))) if e.name() == "VersionError" => {
                let found = current_version(&db_name).await?;
                return Err(Error::SchemaTooNew {
                    found,
                    known: options.version,
                });
            }
            // Firefox private windows and some webviews fail every open this way: IndexedDB
            // cannot be used at all here (and `SecurityError` for contexts denied storage).
            Ok(OpenOutcome::Failed(Some(e)))
                if matches!(e.name().as_str(), "InvalidStateError" | "SecurityError") =>
            {
                return Err(Error::StorageUnavailable(format!(
                    "{}: {}",
                    e.name(),
                    e.message()
                )))
            }
            Ok(OpenOutcome::Failed(e)) => return Err(with_figures(dom_error(e, "open")).await),
            Err(()) => {
                return Err(Error::UpgradeBlocked {
                    name: name.to_string(),
                    version: options.version,
                })
            }
        };

        let state = Rc::new(ConnState {
            closed: Cell::new(false),
        });
        let on_version_change: Closure<dyn FnMut()> = {
            let db = db.clone();
            let state = state.clone();
            let policy = options.on_version_change.clone();
            Closure::new(move || match &policy {
                OnVersionChange::Ignore => {}
                OnVersionChange::Close => {
                    state.closed.set(true);
                    db.close();
                }
                OnVersionChange::FlushThenClose(listener) => {
                    let flush = listener();
                    let db = db.clone();
                    let state = state.clone();
                    wasm_bindgen_futures::spawn_local(async move {
                        flush.await;
                        state.closed.set(true);
                        db.close();
                    });
                }
            })
        };
        db.set_onversionchange(Some(on_version_change.as_ref().unchecked_ref()));
        let on_close: Closure<dyn FnMut()> = {
            let state = state.clone();
            Closure::new(move || state.closed.set(true))
        };
        db.set_onclose(Some(on_close.as_ref().unchecked_ref()));

        Ok(IdbStorage {
            version: db.version() as u32,
            db,
            state,
            faults: FaultState::default(),
            _on_version_change: on_version_change,
            _on_close: on_close,
        })
    }

    async fn list(&self) -> Result<Vec<String>> {
        let factory = factory()?;
        let databases = Reflect::get(&factory, &JsValue::from_str("databases"))
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            .ok_or_else(|| {
                Error::StorageUnavailable("indexedDB.databases() is not supported here".into())
            })?;
        let promise: js_sys::Promise = databases
            .call0(&factory)
            .map_err(|e| Error::Storage(js_message(&e)))?
            .dyn_into()
            .map_err(|_| Error::Storage("databases() did not return a promise".into()))?;
        let list = wasm_bindgen_futures::JsFuture::from(promise)
            .await
            .map_err(|e| Error::Storage(js_message(&e)))?;
        let mut names: Vec<String> = js_sys::Array::from(&list)
            .iter()
            .filter_map(|info| {
                Reflect::get(&info, &JsValue::from_str("name"))
                    .ok()?
                    .as_string()
            })
            .filter_map(|n| n.strip_prefix(DB_PREFIX).map(str::to_string))
            .collect();
        crate::util::sort(&mut names);
        names.dedup();
        Ok(names)
    }

    async fn delete(&self, name: &str) -> Result<()> {
        validate_wiki_name(name)?;
        let factory = factory()?;
        let request = factory
            .delete_database(&format!("{DB_PREFIX}{name}"))
            .map_err(|e| Error::StorageUnavailable(js_message(&e)))?;
        let (done_tx, done_rx) = oneshot::channel::<std::result::Result<(), Error>>();
        let done_tx = Rc::new(RefCell::new(Some(done_tx)));
        let (blocked_tx, blocked_rx) = oneshot::channel::<()>();
        {
            let done = done_tx.clone();
            let f = Closure::once_into_js(move || {
                if let Some(tx) = done.borrow_mut().take() {
                    let _ = tx.send(Ok(()));
                }
            });
            request.set_onsuccess(Some(f.unchecked_ref()));
        }
        {
            let done = done_tx.clone();
            let request_ = request.clone();
            let f = Closure::once_into_js(move || {
                let e = request_.error().ok().flatten();
                if let Some(tx) = done.borrow_mut().take() {
                    let _ = tx.send(Err(dom_error(e, "delete")));
                }
            });
            request.set_onerror(Some(f.unchecked_ref()));
        }
        {
            let f = Closure::once_into_js(move || {
                let _ = blocked_tx.send(());
            });
            request.set_onblocked(Some(f.unchecked_ref()));
        }
        let timeout = async move {
            if blocked_rx.await.is_err() {
                futures::future::pending::<()>().await;
            }
            sleep_ms(5000).await;
        };
        match select(done_rx, Box::pin(timeout)).await {
            Either::Left((Ok(r), _)) => r,
            Either::Left((Err(_), _)) => Err(Error::Storage("delete request dropped".into())),
            // The deletion stays queued and completes once the other tab closes.
            Either::Right(((), _)) => Err(Error::UpgradeBlocked {
                name: name.to_string(),
                version: 0,
            }),
        }
    }
}

/// Up to `count` records of `query` (keys and values read together, in IndexedDB's key order),
/// those whose key starts with `prefix`, decoded.
async fn read_range(
    os: &ObjectStore,
    store: Store,
    prefix: &str,
    query: Option<idb::Query>,
    count: Option<u32>,
) -> Result<Vec<(String, Record)>> {
    let keys_req = os
        .get_all_keys(query.clone(), count)
        .map_err(|e| idb_error(e, "scan"))?;
    let values_req = os.get_all(query, count).map_err(|e| idb_error(e, "scan"))?;
    let (keys, values) =
        futures::future::join(keys_req.into_future(), values_req.into_future()).await;
    let keys = keys.map_err(|e| idb_error(e, "scan"))?;
    let values = values.map_err(|e| idb_error(e, "scan"))?;
    let mut out = Vec::with_capacity(keys.len());
    for (k, v) in keys.iter().zip(values.iter()) {
        let k = k.as_string().ok_or_else(|| Error::Corrupt {
            store,
            key: format!("{k:?}"),
            message: "non-string key".into(),
        })?;
        if k.starts_with(prefix) {
            let r = decode(store, &k, v)?;
            out.push((k, r));
        }
    }
    Ok(out)
}

fn encode(rev: u64, data: &Uint8Array) -> JsValue {
    let obj = Object::new();
    let _ = Reflect::set(&obj, &"rev".into(), &JsValue::from_f64(rev as f64));
    let _ = Reflect::set(&obj, &"data".into(), data);
    obj.into()
}

/// Copies a payload into one new `Uint8Array`, piece by piece: a [`Data::Source`] is written
/// straight into JS memory, never whole into wasm memory. Errors ([`Error::Storage`]) when a
/// source writes more or fewer bytes than its length.
pub(crate) fn to_uint8array(data: &Data) -> Result<Uint8Array> {
    match data {
        Data::Bytes(b) => Ok(Uint8Array::from(b.as_slice())),
        Data::Source(s) => {
            let len = s.len();
            let out = Uint8Array::new_with_length(len as u32);
            let mut written = 0usize;
            s.write_to(&mut |piece| {
                let start = written.min(len);
                let end = (written + piece.len()).min(len);
                out.subarray(start as u32, end as u32)
                    .copy_from(&piece[..end - start]);
                written += piece.len();
            });
            if written != len {
                return Err(Error::Storage(format!(
                    "a record source wrote {written} bytes for a length of {len}"
                )));
            }
            Ok(out)
        }
    }
}

fn decode(store: Store, key: &str, value: &JsValue) -> Result<Record> {
    let corrupt = |message: &str| Error::Corrupt {
        store,
        key: key.to_string(),
        message: message.to_string(),
    };
    let rev = Reflect::get(value, &"rev".into())
        .ok()
        .and_then(|v| v.as_f64())
        .ok_or_else(|| corrupt("missing rev"))? as u64;
    let data = Reflect::get(value, &"data".into())
        .ok()
        .and_then(|v| v.dyn_into::<Uint8Array>().ok())
        .ok_or_else(|| corrupt("missing data"))?
        .to_vec();
    Ok(Record { rev, data })
}

impl IdbStorage {
    fn check(&self, stores: &[Store]) -> Result<()> {
        if self.state.closed.get() {
            return Err(Error::Closed);
        }
        if let Some(s) = stores.iter().find(|s| s.since_version() > self.version) {
            return Err(Error::Storage(format!(
                "object store {:?} does not exist in schema version {}",
                s.name(),
                self.version
            )));
        }
        Ok(())
    }

    fn transaction(&self, stores: &[Store], mode: TransactionMode) -> Result<IdbTransaction> {
        let names: Vec<&str> = stores.iter().map(|s| s.name()).collect();
        Database::from(self.db.clone())
            .transaction(&names, mode)
            .map(IdbTransaction::from)
            .map_err(|e| match e {
                idb::Error::TransactionOpenFailed(v)
                    if js_message(&v).contains("InvalidStateError") =>
                {
                    self.state.closed.set(true);
                    Error::Closed
                }
                other => idb_error(other, "transaction"),
            })
    }
}

fn object_store(tx: &IdbTransaction, store: Store) -> Result<ObjectStore> {
    idb::Transaction::from(tx.clone())
        .object_store(store.name())
        .map_err(|e| idb_error(e, "object store"))
}

async fn finish(tx: &IdbTransaction) -> Result<()> {
    match idb::Transaction::from(tx.clone()).await {
        Ok(TransactionResult::Committed) => Ok(()),
        Ok(TransactionResult::Aborted) => Err(dom_error(tx.error(), "transaction aborted")),
        Err(e) => Err(idb_error(e, "transaction")),
    }
}

impl Storage for IdbStorage {
    async fn get(&self, store: Store, key: &str) -> Result<Option<Record>> {
        self.check(&[store])?;
        let tx = self.transaction(&[store], TransactionMode::ReadOnly)?;
        let value = object_store(&tx, store)?
            .get(JsValue::from_str(key))
            .map_err(|e| idb_error(e, "get"))?
            .await
            .map_err(|e| idb_error(e, "get"))?;
        value.map(|v| decode(store, key, &v)).transpose()
    }

    async fn get_many(&self, store: Store, keys: &[String]) -> Result<Vec<Option<Record>>> {
        self.check(&[store])?;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let tx = self.transaction(&[store], TransactionMode::ReadOnly)?;
        let os = object_store(&tx, store)?;
        // Every request is issued, its success and error handlers attached (`into_future`: idb
        // attaches them there, and an event that fires before they are attached is lost), before
        // the first is awaited: the transaction serves them in order and the results come
        // together.
        let requests = keys
            .iter()
            .map(|k| {
                os.get(JsValue::from_str(k))
                    .map(std::future::IntoFuture::into_future)
                    .map_err(|e| idb_error(e, "get"))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(keys.len());
        for (k, request) in keys.iter().zip(requests) {
            let value = request.await.map_err(|e| idb_error(e, "get"))?;
            out.push(value.map(|v| decode(store, k, &v)).transpose()?);
        }
        Ok(out)
    }

    async fn scan(&self, store: Store, prefix: &str) -> Result<Vec<(String, Record)>> {
        self.check(&[store])?;
        let tx = self.transaction(&[store], TransactionMode::ReadOnly)?;
        let os = object_store(&tx, store)?;
        let query = if prefix.is_empty() {
            None
        } else {
            // Keys never contain U+FFFF (a noncharacter), so this bound covers every key with the prefix.
            let upper = format!("{prefix}\u{FFFF}");
            let range = KeyRange::bound(&prefix.into(), &upper.as_str().into(), None, None)
                .map_err(|e| idb_error(e, "key range"))?;
            Some(idb::Query::from(range))
        };
        let mut out = read_range(&os, store, prefix, query, None).await?;
        // IndexedDB orders by UTF-16 code units; return Rust string (code point) order like every backend.
        crate::util::sort_by(&mut out, &|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    async fn scan_page(
        &self,
        store: Store,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Record)>> {
        self.check(&[store])?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let tx = self.transaction(&[store], TransactionMode::ReadOnly)?;
        let os = object_store(&tx, store)?;
        // Keys never contain U+FFFF (a noncharacter), so this bound covers every key with the prefix.
        let upper = format!("{prefix}\u{FFFF}");
        let (lower, lower_open) = match after {
            Some(a) if a.starts_with(prefix) => (a, true),
            // Past every key with the prefix.
            Some(a) if a > prefix => return Ok(Vec::new()),
            _ => (prefix, false),
        };
        let range = KeyRange::bound(
            &lower.into(),
            &upper.as_str().into(),
            Some(lower_open),
            None,
        )
        .map_err(|e| idb_error(e, "key range"))?;
        let query = Some(idb::Query::from(range));
        let count = Some(u32::try_from(limit).unwrap_or(u32::MAX));
        // In IndexedDB's order: the caller pages on from the last key.
        read_range(&os, store, prefix, query, count).await
    }

    async fn commit(&self, batch: Batch) -> Result<Vec<u64>> {
        let stores = batch.stores();
        self.check(&stores)?;
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        // Every payload is serialised into JS memory before the transaction opens (a record
        // source writes its pieces synchronously; nothing is awaited).
        let payloads: Vec<Option<Uint8Array>> = batch
            .writes
            .iter()
            .map(|w| match w {
                Write::Put { data, .. } => to_uint8array(data).map(Some),
                Write::Delete { .. } => Ok(None),
            })
            .collect::<Result<_>>()?;
        let tx = self.transaction(&stores, TransactionMode::ReadWrite)?;
        let abort = |e: Error| {
            let _ = tx.abort();
            e
        };

        // 1. Read the current revision of every key the batch writes (all requests at once).
        let mut ids: Vec<(Store, String)> = batch
            .writes
            .iter()
            .map(|w| (w.store(), w.key().to_string()))
            .collect();
        crate::util::sort(&mut ids);
        ids.dedup();
        let mut reads = Vec::with_capacity(ids.len());
        for (store, key) in &ids {
            let os = object_store(&tx, *store).map_err(abort)?;
            let req = os
                .get(JsValue::from_str(key))
                .map_err(|e| abort(idb_error(e, "get")))?;
            reads.push(req.into_future());
        }
        let results = futures::future::join_all(reads).await;
        let mut current: std::collections::HashMap<(Store, String), Option<u64>> =
            std::collections::HashMap::with_capacity(ids.len());
        for ((store, key), r) in ids.into_iter().zip(results) {
            let value = r.map_err(|e| abort(idb_error(e, "get")))?;
            let rev = match value {
                Some(v) => Some(decode(store, &key, &v).map_err(abort)?.rev),
                None => None,
            };
            current.insert((store, key), rev);
        }

        // 2. Check and issue every write, synchronously: nothing is awaited until the commit.
        let mut revs = Vec::with_capacity(batch.len());
        for (i, write) in batch.writes.iter().enumerate() {
            let id = (write.store(), write.key().to_string());
            let found = current.get(&id).copied().flatten();
            if !write.expect().check(found) {
                return Err(abort(Error::Conflict {
                    store: id.0,
                    key: id.1,
                    expected: write.expect().describe(),
                    found: describe_found(found),
                }));
            }
            let os = object_store(&tx, id.0).map_err(abort)?;
            if self.faults.should_fail(i + 1) {
                // A real IndexedDB failure: NaN is not a valid key, so put() throws a DataError.
                let r = os.put(
                    &encode(1, &Uint8Array::new_with_length(0)),
                    Some(&JsValue::from_f64(f64::NAN)),
                );
                let detail = match r {
                    Err(e) => format!("{e}"),
                    Ok(_) => "put accepted an invalid key".to_string(),
                };
                return Err(abort(Error::InjectedFault(format!(
                    "write {} of {} ({}/{}): {detail}",
                    i + 1,
                    batch.len(),
                    id.0.name(),
                    id.1
                ))));
            }
            match &payloads[i] {
                Some(data) => {
                    let rev = found.unwrap_or(0) + 1;
                    os.put(&encode(rev, data), Some(&JsValue::from_str(&id.1)))
                        .map_err(|e| abort(idb_error(e, "put")))?;
                    revs.push(rev);
                    current.insert(id, Some(rev));
                }
                None => {
                    os.delete(JsValue::from_str(&id.1))
                        .map_err(|e| abort(idb_error(e, "delete")))?;
                    revs.push(0);
                    current.insert(id, None);
                }
            }
        }

        // 3. Committed means the `complete` event. A quota failure arrives here, on the
        // transaction; its figures are read once it has ended.
        if let Err(e) = finish(&tx).await {
            return Err(with_figures(e).await);
        }
        Ok(revs)
    }

    fn schema_version(&self) -> u32 {
        self.version
    }

    fn close(&self) {
        self.state.closed.set(true);
        self.db.close();
    }

    fn is_closed(&self) -> bool {
        self.state.closed.get()
    }
}

impl Drop for IdbStorage {
    fn drop(&mut self) {
        self.db.set_onversionchange(None);
        self.db.set_onclose(None);
        self.close();
    }
}

impl FaultInjection for IdbStorage {
    fn inject_fault(&self, fault: Option<Fault>) {
        self.faults.arm(fault);
    }
    fn writes_attempted(&self) -> usize {
        self.faults.attempted()
    }
}
