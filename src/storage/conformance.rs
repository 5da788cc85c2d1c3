//! The storage conformance suite: plain async functions every [`Backend`] must pass.
//!
//! `tests/storage_native.rs` runs them on [`super::memory::MemoryBackend`]; `tests/web.rs` runs the
//! same functions on IndexedDB in headless Chromium and Firefox (style: tantivy's
//! `directory/tests.rs`). Each function uses its own wiki name (deleted first), so they can run in
//! any order in one browser profile. They panic with a message on failure.

use std::future::Future;
use std::rc::Rc;

use super::{
    Backend, Batch, Data, Expect, Fault, FaultInjection, OnVersionChange, OpenOptions, Record,
    RecordSource, Storage, Store, SCHEMA_VERSION,
};
use crate::error::Error;

/// What the suite needs from the environment besides the backend.
pub trait Env {
    /// Waits `ms` milliseconds (a real timer in the browser; natively a plain yield is enough).
    fn sleep(&self, ms: u32) -> impl Future<Output = ()>;
}

/// Every function of the suite, by name, for runners that loop.
pub const SUITE: &[&str] = &[
    "round_trip",
    "fault_at_every_write_leaves_nothing",
    "stale_revision_is_refused",
    "reopen_returns_what_was_committed",
    "upgrade_while_another_connection_is_open",
    "upgrade_blocked_by_a_connection_that_ignores_versionchange",
    "newer_schema_is_refused",
    "write_back_after_an_awaited_embedding_is_atomic",
    "list_and_delete",
    "cjk_keys_and_prefix_scan",
    "record_sources_are_written_whole",
    "paged_scan_returns_every_key_once",
];

/// Every record of every store of the current schema, for whole-database comparisons.
pub async fn dump(s: &impl Storage) -> Vec<(Store, String, Record)> {
    let mut out = Vec::new();
    for store in Store::in_version(s.schema_version()) {
        for (k, r) in s.scan(store, "").await.expect("scan") {
            out.push((store, k, r));
        }
    }
    out
}

async fn fresh<B: Backend>(backend: &B, name: &str) -> B::Storage {
    backend.delete(name).await.expect("delete before test");
    backend
        .open(name, OpenOptions::default())
        .await
        .expect("open")
}

fn put(b: &mut Batch, store: Store, key: &str, data: &str, expect: Expect) {
    b.put(store, key, data.as_bytes().to_vec(), expect);
}

async fn text(s: &impl Storage, store: Store, key: &str) -> Option<String> {
    s.get(store, key)
        .await
        .expect("get")
        .map(|r| String::from_utf8(r.data).expect("utf-8"))
}

/// Puts, gets, revisions, deletes, and a second put of one key inside one batch.
pub async fn round_trip<B: Backend>(backend: &B) {
    let s = fresh(backend, "conformance-round-trip").await;
    assert_eq!(s.schema_version(), SCHEMA_VERSION);
    assert_eq!(s.get(Store::Pages, "Tokio").await.unwrap(), None);

    let mut b = Batch::new();
    put(&mut b, Store::Pages, "Tokio", "v1", Expect::Absent);
    put(&mut b, Store::Pages, "Rust", "r1", Expect::Any);
    put(&mut b, Store::Pages, "Rust", "r2", Expect::Rev(1));
    let revs = s.commit(b).await.expect("commit");
    assert_eq!(revs, vec![1, 1, 2]);
    assert_eq!(text(&s, Store::Pages, "Rust").await.as_deref(), Some("r2"));
    assert_eq!(s.get(Store::Pages, "Rust").await.unwrap().unwrap().rev, 2);

    let mut b = Batch::new();
    put(&mut b, Store::Pages, "Tokio", "v2", Expect::Rev(1));
    b.delete(Store::Pages, "Rust", Expect::Rev(2));
    b.delete(Store::Pages, "never-there", Expect::Any);
    assert_eq!(s.commit(b).await.expect("commit"), vec![2, 0, 0]);
    assert_eq!(text(&s, Store::Pages, "Tokio").await.as_deref(), Some("v2"));
    assert_eq!(s.get(Store::Pages, "Rust").await.unwrap(), None);

    // Binary payloads survive byte for byte.
    let bytes: Vec<u8> = (0..=255u8).collect();
    let mut b = Batch::new();
    b.put(Store::Search, "blob", bytes.clone(), Expect::Any);
    s.commit(b).await.expect("commit binary");
    assert_eq!(
        s.get(Store::Search, "blob").await.unwrap().unwrap().data,
        bytes
    );

    // An empty batch commits and changes nothing.
    assert_eq!(
        s.commit(Batch::new()).await.expect("empty"),
        Vec::<u64>::new()
    );
}

/// A fault injected at the k-th write of a batch, for every k, leaves the database exactly as it was.
pub async fn fault_at_every_write_leaves_nothing<B: Backend>(backend: &B) {
    let s = fresh(backend, "conformance-faults").await;
    let mut seed = Batch::new();
    put(&mut seed, Store::Pages, "Existing", "old", Expect::Absent);
    put(&mut seed, Store::Meta, "counter", "1", Expect::Absent);
    s.commit(seed).await.expect("seed");
    let before = dump(&s).await;

    let make = || {
        let mut b = Batch::new();
        put(&mut b, Store::Pages, "Existing", "new", Expect::Rev(1));
        put(&mut b, Store::Pages, "New page", "fresh", Expect::Absent);
        put(
            &mut b,
            Store::Revisions,
            "New page\u{0}0000000001",
            "rev",
            Expect::Absent,
        );
        put(&mut b, Store::Search, "vectors", "\u{1}\u{2}", Expect::Any);
        b.delete(Store::Meta, "counter", Expect::Rev(1));
        b
    };
    let n = make().len();
    for k in 1..=n {
        s.inject_fault(Some(Fault::AtWrite(k)));
        let err = s
            .commit(make())
            .await
            .expect_err("the injected fault must fail the commit");
        assert!(
            matches!(err, Error::InjectedFault(_)),
            "fault at write {k}: expected InjectedFault, got {err:?}"
        );
        assert_eq!(
            dump(&s).await,
            before,
            "fault at write {k} of {n} left something written"
        );
    }
    s.inject_fault(None);
    s.commit(make())
        .await
        .expect("the same batch commits without a fault");
    assert_eq!(
        text(&s, Store::Pages, "Existing").await.as_deref(),
        Some("new")
    );
    assert_eq!(s.get(Store::Meta, "counter").await.unwrap(), None);
}

/// A write whose expected revision is stale is refused, and nothing of its batch is written.
pub async fn stale_revision_is_refused<B: Backend>(backend: &B) {
    let s = fresh(backend, "conformance-stale").await;
    let mut b = Batch::new();
    put(&mut b, Store::Pages, "Tokio", "v1", Expect::Absent);
    s.commit(b).await.unwrap();
    let mut b = Batch::new();
    put(&mut b, Store::Pages, "Tokio", "v2", Expect::Rev(1));
    s.commit(b).await.unwrap();
    let before = dump(&s).await;

    // Another writer read rev 1 and now tries to write.
    let mut b = Batch::new();
    put(&mut b, Store::Pages, "Other", "x", Expect::Absent);
    put(&mut b, Store::Pages, "Tokio", "stale", Expect::Rev(1));
    match s.commit(b).await {
        Err(Error::Conflict {
            store: Store::Pages,
            key,
            expected,
            found,
        }) => {
            assert_eq!(
                (key.as_str(), expected.as_str(), found.as_str()),
                ("Tokio", "rev 1", "rev 2")
            );
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    // Expecting absence of an existing key is refused too, and so is expecting a missing one.
    let mut b = Batch::new();
    put(&mut b, Store::Pages, "Tokio", "dup", Expect::Absent);
    assert!(matches!(s.commit(b).await, Err(Error::Conflict { .. })));
    let mut b = Batch::new();
    b.delete(Store::Pages, "Missing", Expect::Rev(3));
    assert!(matches!(s.commit(b).await, Err(Error::Conflict { .. })));
    assert_eq!(dump(&s).await, before);
}

/// Closing and reopening returns exactly what was committed, and a closed connection refuses work.
pub async fn reopen_returns_what_was_committed<B: Backend>(backend: &B) {
    let name = "conformance-reopen";
    let s = fresh(backend, name).await;
    let mut b = Batch::new();
    for i in 0..50 {
        put(
            &mut b,
            Store::Pages,
            &format!("page-{i:03}"),
            &format!("body {i}"),
            Expect::Absent,
        );
    }
    put(
        &mut b,
        Store::Documents,
        "index.md",
        "# Index\n",
        Expect::Absent,
    );
    s.commit(b).await.unwrap();
    let committed = dump(&s).await;
    s.close();
    assert!(s.is_closed());
    assert!(matches!(
        s.get(Store::Pages, "page-001").await,
        Err(Error::Closed)
    ));
    assert!(matches!(s.commit(Batch::new()).await, Err(Error::Closed)));
    drop(s);
    let s = backend
        .open(name, OpenOptions::default())
        .await
        .expect("reopen");
    assert_eq!(dump(&s).await, committed);
}

/// Field case F25: tab A (schema 1) holds an unsaved draft; tab B opens schema 2. A gets
/// `versionchange`, flushes the draft, closes; B's open resolves and the migration keeps every page.
pub async fn upgrade_while_another_connection_is_open<B: Backend>(backend: &B) {
    let name = "conformance-upgrade";
    backend.delete(name).await.unwrap();
    let old = OpenOptions {
        version: 1,
        ..OpenOptions::default()
    };
    let setup = backend.open(name, old.clone()).await.expect("open v1");
    assert_eq!(setup.schema_version(), 1);
    let mut b = Batch::new();
    put(&mut b, Store::Pages, "Tokio", "v1 page", Expect::Absent);
    setup.commit(b).await.unwrap();
    // Stores of schema 2 do not exist yet.
    assert!(setup.get(Store::Claims, "c1").await.is_err());
    setup.close();
    drop(setup);

    // Tab A reopens at v1 with a listener that flushes a draft before closing.
    let a_slot: Rc<std::cell::RefCell<Option<Rc<B::Storage>>>> = Rc::default();
    let flushed = Rc::new(std::cell::Cell::new(false));
    let listener = {
        let a_slot = a_slot.clone();
        let flushed = flushed.clone();
        Rc::new(move || {
            let a = a_slot.borrow().clone();
            let flushed = flushed.clone();
            Box::pin(async move {
                if let Some(a) = a {
                    let mut b = Batch::new();
                    put(
                        &mut b,
                        Store::Pages,
                        "Draft",
                        "unsaved draft",
                        Expect::Absent,
                    );
                    a.commit(b).await.expect("flush the draft before closing");
                    flushed.set(true);
                }
            }) as super::LocalFuture
        })
    };
    let a = Rc::new(
        backend
            .open(
                name,
                OpenOptions {
                    on_version_change: OnVersionChange::FlushThenClose(listener),
                    ..old
                },
            )
            .await
            .expect("A opens v1"),
    );
    *a_slot.borrow_mut() = Some(a.clone());

    let b_conn = backend
        .open(name, OpenOptions::default())
        .await
        .expect("B's upgrade goes through");
    a_slot.borrow_mut().take();
    assert!(flushed.get(), "A flushed its draft");
    assert!(a.is_closed(), "A closed its connection");
    assert!(matches!(
        a.get(Store::Pages, "Tokio").await,
        Err(Error::Closed)
    ));
    assert_eq!(b_conn.schema_version(), SCHEMA_VERSION);
    assert_eq!(
        text(&b_conn, Store::Pages, "Tokio").await.as_deref(),
        Some("v1 page")
    );
    assert_eq!(
        text(&b_conn, Store::Pages, "Draft").await.as_deref(),
        Some("unsaved draft")
    );
    // The new stores exist now.
    let mut batch = Batch::new();
    put(&mut batch, Store::Claims, "c1", "{}", Expect::Absent);
    b_conn.commit(batch).await.expect("v2 store usable");
}

/// Field case F25, variant: A ignores `versionchange`. B's open settles within the timeout with a
/// typed `UpgradeBlocked`; once A closes, a retry succeeds and keeps A's data.
pub async fn upgrade_blocked_by_a_connection_that_ignores_versionchange<B: Backend>(backend: &B) {
    let name = "conformance-blocked";
    backend.delete(name).await.unwrap();
    let a = backend
        .open(
            name,
            OpenOptions {
                version: 1,
                on_version_change: OnVersionChange::Ignore,
                ..Default::default()
            },
        )
        .await
        .expect("A opens v1");
    let mut b = Batch::new();
    put(&mut b, Store::Pages, "Kept", "kept", Expect::Absent);
    a.commit(b).await.unwrap();

    let quick = OpenOptions {
        blocked_timeout_ms: 300,
        ..OpenOptions::default()
    };
    match backend.open(name, quick.clone()).await {
        Err(Error::UpgradeBlocked { name: n, version }) => {
            assert_eq!((n.as_str(), version), (name, SCHEMA_VERSION));
        }
        Err(other) => panic!("expected UpgradeBlocked, got {other:?}"),
        Ok(_) => panic!("expected UpgradeBlocked, but the upgrade went through"),
    }
    // A is unaffected and still works.
    assert_eq!(
        text(&a, Store::Pages, "Kept").await.as_deref(),
        Some("kept")
    );
    a.close();
    drop(a);
    let b = backend
        .open(name, quick)
        .await
        .expect("retry after A closed");
    assert_eq!(b.schema_version(), SCHEMA_VERSION);
    assert_eq!(
        text(&b, Store::Pages, "Kept").await.as_deref(),
        Some("kept")
    );
}

/// Opening with an older build (lower schema) than what is stored is refused with a typed error.
pub async fn newer_schema_is_refused<B: Backend>(backend: &B) {
    let name = "conformance-too-new";
    let s = fresh(backend, name).await;
    s.close();
    drop(s);
    match backend
        .open(
            name,
            OpenOptions {
                version: 1,
                ..Default::default()
            },
        )
        .await
    {
        Err(Error::SchemaTooNew { found, known }) => {
            assert_eq!((found, known), (SCHEMA_VERSION, 1))
        }
        Err(other) => panic!("expected SchemaTooNew, got {other:?}"),
        Ok(_) => panic!("expected SchemaTooNew, but the open succeeded"),
    }
    backend
        .open(name, OpenOptions::default())
        .await
        .expect("the current build still opens it");
}

/// Field case F24: the write-back flow reads page "Tokio", awaits an embedding (a real 50 ms timer
/// in the browser), then writes page, vector and meta in one batch. No `TransactionInactiveError`;
/// a failing vector write leaves the page unwritten; a 100-page read-modify-write is one commit.
pub async fn write_back_after_an_awaited_embedding_is_atomic<B: Backend, E: Env>(
    backend: &B,
    env: &E,
) {
    let s = fresh(backend, "conformance-f24").await;
    let mut b = Batch::new();
    put(&mut b, Store::Pages, "Tokio", "Tokio v1", Expect::Absent);
    s.commit(b).await.unwrap();

    let s = &s;
    let flow = |fail_vector: bool| async move {
        let page = s.get(Store::Pages, "Tokio").await.unwrap().expect("page");
        env.sleep(50).await; // the embedding call
        let mut b = Batch::new();
        put(
            &mut b,
            Store::Pages,
            "Tokio",
            "Tokio v2",
            Expect::Rev(page.rev),
        );
        b.put(
            Store::Search,
            "vector/Tokio",
            vec![0, 0, 128, 63],
            Expect::Any,
        );
        put(&mut b, Store::Meta, "search-epoch", "1", Expect::Any);
        if fail_vector {
            s.inject_fault(Some(Fault::AtWrite(2)));
        }
        let r = s.commit(b).await;
        s.inject_fault(None);
        r
    };
    assert!(
        flow(true).await.is_err(),
        "the failing vector put fails the commit"
    );
    assert_eq!(
        text(s, Store::Pages, "Tokio").await.as_deref(),
        Some("Tokio v1")
    );
    assert_eq!(s.get(Store::Search, "vector/Tokio").await.unwrap(), None);
    assert_eq!(s.get(Store::Meta, "search-epoch").await.unwrap(), None);

    flow(false).await.expect("write-back commits");
    assert_eq!(
        text(s, Store::Pages, "Tokio").await.as_deref(),
        Some("Tokio v2")
    );
    assert!(s
        .get(Store::Search, "vector/Tokio")
        .await
        .unwrap()
        .is_some());

    // 100 pages read, modified, written in one batch.
    let mut seed = Batch::new();
    for i in 0..100 {
        put(
            &mut seed,
            Store::Pages,
            &format!("p{i:03}"),
            "0",
            Expect::Absent,
        );
    }
    s.commit(seed).await.unwrap();
    let pages = s.scan(Store::Pages, "p").await.unwrap();
    assert_eq!(pages.len(), 100);
    env.sleep(10).await;
    let mut b = Batch::new();
    for (k, r) in &pages {
        put(&mut b, Store::Pages, k, "1", Expect::Rev(r.rev));
    }
    let revs = s.commit(b).await.expect("100-page batch");
    assert!(revs.iter().all(|&r| r == 2));
    let after = s.scan(Store::Pages, "p").await.unwrap();
    assert!(after.iter().all(|(_, r)| r.data == b"1" && r.rev == 2));
}

/// Listing and deleting wikis; deleting closes open connections.
pub async fn list_and_delete<B: Backend>(backend: &B) {
    let (x, y) = ("conformance-list-x", "conformance-list-y");
    let sx = fresh(backend, x).await;
    let _sy = fresh(backend, y).await;
    let mut b = Batch::new();
    put(&mut b, Store::Pages, "a", "a", Expect::Absent);
    sx.commit(b).await.unwrap();
    let names = backend.list().await.unwrap();
    assert!(
        names.iter().any(|n| n == x) && names.iter().any(|n| n == y),
        "{names:?}"
    );
    let mut sorted = names.clone();
    crate::util::sort(&mut sorted);
    assert_eq!(names, sorted, "list() is sorted");

    backend
        .delete(x)
        .await
        .expect("delete with an open connection");
    assert!(
        sx.is_closed(),
        "the open connection was closed by the delete"
    );
    let names = backend.list().await.unwrap();
    assert!(!names.iter().any(|n| n == x), "{names:?}");
    let again = backend.open(x, OpenOptions::default()).await.unwrap();
    assert!(
        dump(&again).await.is_empty(),
        "a deleted wiki reopens empty"
    );

    assert!(matches!(
        backend.open("bad/name", OpenOptions::default()).await,
        Err(Error::InvalidInput(_))
    ));
}

/// CJK and other non-ASCII keys round-trip, and prefix scans return exactly the prefix, in order.
pub async fn cjk_keys_and_prefix_scan<B: Backend>(backend: &B) {
    let s = fresh(backend, "conformance-cjk").await;
    let keys = [
        "人工智能",
        "机器学习",
        "日本語",
        "中文",
        "초과근무",
        "café",
        "Rust",
    ];
    let mut b = Batch::new();
    for k in keys {
        put(&mut b, Store::Pages, k, k, Expect::Absent);
        put(
            &mut b,
            Store::Revisions,
            &format!("{k}\u{0}0000000001"),
            "r1",
            Expect::Absent,
        );
        put(
            &mut b,
            Store::Revisions,
            &format!("{k}\u{0}0000000002"),
            "r2",
            Expect::Absent,
        );
    }
    s.commit(b).await.unwrap();
    for k in keys {
        assert_eq!(text(&s, Store::Pages, k).await.as_deref(), Some(k));
        let revs = s
            .scan(Store::Revisions, &format!("{k}\u{0}"))
            .await
            .unwrap();
        let got: Vec<&str> = revs
            .iter()
            .map(|(k, _)| k.rsplit('\u{0}').next().unwrap())
            .collect();
        assert_eq!(got, ["0000000001", "0000000002"], "revisions of {k}");
    }
    // "人工" is a prefix of one key only.
    let hits = s.scan(Store::Pages, "人工").await.unwrap();
    assert_eq!(
        hits.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["人工智能"]
    );
    assert_eq!(s.scan(Store::Pages, "").await.unwrap().len(), keys.len());
}

/// A payload written in uneven pieces, some empty, crossing every 64 KB boundary.
struct Pieces(Vec<u8>);

impl RecordSource for Pieces {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn write_to(&self, sink: &mut dyn FnMut(&[u8])) {
        let mut at = 0;
        let mut step = 1;
        while at < self.0.len() {
            let end = (at + step).min(self.0.len());
            sink(&self.0[at..end]);
            sink(&[]);
            at = end;
            step = step * 3 + 7;
        }
    }
}

/// A put whose payload is a [`RecordSource`] stores exactly its bytes, beside ordinary puts in
/// the same batch; a failed batch with one stores nothing; a source that writes other than its
/// length is refused.
pub async fn record_sources_are_written_whole<B: Backend>(backend: &B) {
    let s = fresh(backend, "conformance-sources").await;
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
    let mut b = Batch::new();
    b.put_data(
        Store::Search,
        "big",
        Data::Source(Rc::new(Pieces(bytes.clone()))),
        Expect::Absent,
    );
    b.put_data(
        Store::Search,
        "empty",
        Data::Source(Rc::new(Pieces(Vec::new()))),
        Expect::Absent,
    );
    put(&mut b, Store::Pages, "p", "page", Expect::Absent);
    s.commit(b).await.unwrap();
    let got = s.get(Store::Search, "big").await.unwrap().unwrap();
    assert_eq!(got.rev, 1);
    assert!(got.data == bytes, "the source's bytes, in order");
    let empty = s.get(Store::Search, "empty").await.unwrap().unwrap();
    assert!(empty.data.is_empty());
    assert_eq!(text(&s, Store::Pages, "p").await.as_deref(), Some("page"));

    // A conflict later in the batch: the source's record keeps its first version.
    let mut b = Batch::new();
    b.put_data(
        Store::Search,
        "big",
        Data::Source(Rc::new(Pieces(vec![1, 2, 3]))),
        Expect::Rev(1),
    );
    put(&mut b, Store::Pages, "p", "changed", Expect::Absent);
    assert!(matches!(s.commit(b).await, Err(Error::Conflict { .. })));
    let got = s.get(Store::Search, "big").await.unwrap().unwrap();
    assert_eq!((got.rev, got.data.len()), (1, bytes.len()));

    // A source that writes other than its length is refused, and the batch writes nothing.
    let mut b = Batch::new();
    put(&mut b, Store::Pages, "q", "new", Expect::Absent);
    b.put_data(
        Store::Search,
        "liar",
        Data::Source(Rc::new(Liar(Pieces(vec![7; 1000])))),
        Expect::Absent,
    );
    assert!(matches!(s.commit(b).await, Err(Error::Storage(_))));
    assert!(s.get(Store::Search, "liar").await.unwrap().is_none());
    assert!(s.get(Store::Pages, "q").await.unwrap().is_none());
}

/// A source that claims one byte more than it writes.
struct Liar(Pieces);

impl RecordSource for Liar {
    fn len(&self) -> usize {
        self.0.len() + 1
    }
    fn write_to(&self, sink: &mut dyn FnMut(&[u8])) {
        self.0.write_to(sink);
    }
}

/// Paging with [`Storage::scan_page`] returns every key with the prefix exactly once, CJK and
/// astral-plane keys included, whatever the page size; the page after the last is empty.
pub async fn paged_scan_returns_every_key_once<B: Backend>(backend: &B) {
    let s = fresh(backend, "conformance-paged").await;
    let mut keys: Vec<String> = (0..23).map(|i| format!("p/{i:03}")).collect();
    keys.extend(
        [
            "p/人工智能",
            "p/中文",
            "p/😀 emoji",
            "p/ｆｕｌｌ",
            "p/café",
            "p/Z",
        ]
        .map(String::from),
    );
    let mut b = Batch::new();
    for k in &keys {
        put(&mut b, Store::Pages, k, k, Expect::Absent);
    }
    put(&mut b, Store::Pages, "q/outside", "x", Expect::Absent);
    put(&mut b, Store::Pages, "o/outside", "x", Expect::Absent);
    s.commit(b).await.unwrap();
    let mut want = keys.clone();
    crate::util::sort(&mut want);
    for limit in [1, 4, 7, 100] {
        let mut got: Vec<String> = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = s
                .scan_page(Store::Pages, "p/", after.as_deref(), limit)
                .await
                .unwrap();
            assert!(page.len() <= limit);
            let Some((last, _)) = page.last() else { break };
            after = Some(last.clone());
            for (k, r) in page {
                assert_eq!(r.data, k.as_bytes(), "{k}");
                got.push(k);
            }
            assert!(got.len() <= want.len(), "a key came twice: {got:?}");
        }
        crate::util::sort(&mut got);
        assert_eq!(got, want, "limit {limit}");
    }
    let all = s.scan_page(Store::Pages, "", None, 1000).await.unwrap();
    assert_eq!(all.len(), keys.len() + 2);
    assert!(s
        .scan_page(Store::Pages, "nothing/", None, 10)
        .await
        .unwrap()
        .is_empty());
    // `after` outside the prefix: before it reads from the start, past it reads nothing.
    assert_eq!(
        s.scan_page(Store::Pages, "p/", Some("a"), 100)
            .await
            .unwrap()
            .len(),
        keys.len()
    );
    assert!(s
        .scan_page(Store::Pages, "p/", Some("p0"), 100)
        .await
        .unwrap()
        .is_empty());
}

/// `get_many` returns the records of its keys in the order given, `None` for missing ones,
/// the same as one `get` per key — many keys (more than one event-loop turn's worth in
/// IndexedDB), repeated keys and CJK keys included.
pub async fn get_many_matches_get<B: Backend>(backend: &B) {
    let s = fresh(backend, "conformance-get-many").await;
    assert_eq!(s.get_many(Store::Claims, &[]).await.unwrap(), Vec::new());
    let mut b = Batch::new();
    for i in 0..600 {
        put(
            &mut b,
            Store::Claims,
            &format!("c{i}"),
            &format!("claim {i}"),
            Expect::Absent,
        );
    }
    put(
        &mut b,
        Store::Claims,
        "机器学习",
        "监督学习",
        Expect::Absent,
    );
    s.commit(b).await.expect("commit");
    let mut keys: Vec<String> = (0..700).rev().map(|i| format!("c{i}")).collect();
    keys.push("机器学习".into());
    keys.push("c5".into());
    let many = s.get_many(Store::Claims, &keys).await.expect("get_many");
    assert_eq!(many.len(), keys.len());
    for (k, r) in keys.iter().zip(&many) {
        assert_eq!(r, &s.get(Store::Claims, k).await.unwrap(), "{k}");
    }
    assert_eq!(many.iter().filter(|r| r.is_none()).count(), 100);
    assert_eq!(
        many[700].as_ref().map(|r| r.data.clone()),
        Some("监督学习".as_bytes().to_vec())
    );
}
