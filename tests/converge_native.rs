//! Two devices, one wiki (issue #25): each keeps its own copy of the folder, a sync engine (this
//! test) copies changed files between the copies — sometimes late, sometimes only some of them,
//! sometimes as a Syncthing conflict copy — and each device's pull merges the other's
//! operations. Both must end with the same records and no edit lost; the conflicts both show
//! are counted.
//!
//! The 200 interleavings run twice: as the e2e runs five of them (no model call), and with
//! offline compiles among the steps (a compile of the pending sources in place of every tenth
//! kind of step). `CONVERGE_SEEDS` (default 200) and `CONVERGE_FROM` pick the interleavings;
//! `CONVERGE_DUMP=1` prints both histories.

use std::collections::{BTreeMap, BTreeSet};

use futures::executor::block_on;
use llm_wiki::folder::{Folder, MemoryFolder};
use llm_wiki::mirror::MirrorConflict;
use llm_wiki::model::PageKind;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{Batch, Expect, Storage, Store};

mod common;
use common::{edit, mirror, mirrored, new_page, pull, W};

/// The sync engine between two copies of a folder: what it last made equal, and a counter for
/// conflict copies' names.
struct Sync {
    base: BTreeMap<String, Vec<u8>>,
    copies: u32,
}

impl Sync {
    fn new(a: &MemoryFolder) -> Self {
        Sync {
            base: a.snapshot(),
            copies: 0,
        }
    }

    /// Copies what changed on either side since the last sync to the other, only the paths
    /// `take` accepts (a partial sync), and makes a Syncthing conflict copy when both changed a
    /// file to different bytes (the one named `b` keeps the name).
    fn sync(&mut self, a: &MemoryFolder, b: &MemoryFolder, take: &mut dyn FnMut(&str) -> bool) {
        let (sa, sb) = (a.snapshot(), b.snapshot());
        let paths: BTreeSet<String> = sa
            .keys()
            .chain(sb.keys())
            .chain(self.base.keys())
            .cloned()
            .collect();
        for p in paths {
            let (va, vb, base) = (sa.get(&p), sb.get(&p), self.base.get(&p));
            if va == vb {
                match va {
                    Some(v) => self.base.insert(p, v.clone()),
                    None => self.base.remove(&p),
                };
                continue;
            }
            if !take(&p) {
                continue;
            }
            let (ca, cb) = (va != base, vb != base);
            let winner = match (ca, cb) {
                (true, false) => va,
                (false, true) => vb,
                _ => {
                    // Both changed: b's keeps the name, a's goes to a conflict copy.
                    if let (Some(v), Some((stem, ext))) = (va, p.rsplit_once('.')) {
                        self.copies += 1;
                        let copy = format!(
                            "{stem}.sync-conflict-20261205-{:06}-AAAAAAA.{ext}",
                            self.copies
                        );
                        for f in [a, b] {
                            block_on(f.write(&copy, v)).unwrap();
                        }
                        self.base.insert(copy, v.clone());
                    }
                    vb.or(va)
                }
            };
            for f in [a, b] {
                match winner {
                    Some(v) => {
                        block_on(f.write(&p, v)).unwrap();
                    }
                    None => block_on(f.remove(&p)).unwrap(),
                }
            }
            match winner {
                Some(v) => self.base.insert(p, v.clone()),
                None => self.base.remove(&p),
            };
        }
    }

    fn all(&mut self, a: &MemoryFolder, b: &MemoryFolder) {
        self.sync(a, b, &mut |_| true);
    }
}

/// Device A (a mirrored wiki with two pages) and device B, joined from its own copy of the
/// folder.
fn two_devices(ba: &MemoryBackend, bb: &MemoryBackend) -> (W, W, MemoryFolder, MemoryFolder, Sync) {
    let (a, fa) = mirrored(ba);
    let fb = MemoryFolder::new();
    let mut sync = Sync::new(&MemoryFolder::new());
    sync.base.clear();
    sync.all(&fa, &fb);
    let b = common::join(bb, "b", &fb);
    sync.all(&fa, &fb);
    (a, b, fa, fb, sync)
}

/// Mirrors, syncs and pulls on both devices until a round writes nothing (as the app does:
/// it mirrors after each change, and pulls when the folder changes).
fn settle(a: &W, b: &W, fa: &MemoryFolder, fb: &MemoryFolder, sync: &mut Sync) {
    mirror(a, fa);
    mirror(b, fb);
    for round in 0.. {
        assert!(round < 20, "the devices never settled");
        sync.all(fa, fb);
        pull(a, fa);
        pull(b, fb);
        let (ra, rb) = (mirror(a, fa), mirror(b, fb));
        let idle =
            |r: &llm_wiki::mirror::MirrorReport| r.written.is_empty() && r.removed.is_empty();
        if idle(&ra) && idle(&rb) {
            break;
        }
    }
}

/// The records both devices must agree on, as JSON by store and key.
fn records(w: &W) -> BTreeMap<(String, String), serde_json::Value> {
    let mut out = BTreeMap::new();
    for store in [
        Store::Pages,
        Store::Revisions,
        Store::Sources,
        Store::Claims,
        Store::Ledger,
        Store::Operations,
    ] {
        for (k, r) in block_on(w.storage().scan(store, "")).unwrap() {
            let v: serde_json::Value = serde_json::from_slice(&r.data).unwrap();
            out.insert((format!("{store:?}"), k), v);
        }
    }
    for (k, r) in block_on(w.storage().scan(Store::Meta, "asset/")).unwrap() {
        out.insert(("Meta".into(), k), serde_json::from_slice(&r.data).unwrap());
    }
    out
}

fn assert_converged(a: &W, b: &W) {
    let (ra, rb) = (records(a), records(b));
    for k in ra.keys().chain(rb.keys()) {
        assert_eq!(ra.get(k), rb.get(k), "{k:?} differs");
    }
}

/// The conflicts with the other device's version, as both show them.
fn merge_conflicts(w: &W) -> BTreeSet<(String, String, bool)> {
    block_on(w.mirror_conflicts())
        .unwrap()
        .into_iter()
        .filter(|c: &MirrorConflict| c.device.is_some())
        .map(|c| (c.key, c.theirs, c.deleted))
        .collect()
}

#[test]
fn edits_on_each_device_reach_the_other() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    edit(&a, "Alpha", "Alpha, edited on A.\n");
    new_page(&b, "Gamma", PageKind::Entity, "Made on B.\n");
    edit(&b, "Beta", "Beta, edited on B.\n");
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_eq!(
        block_on(b.page("Alpha")).unwrap().unwrap().body,
        "Alpha, edited on A.\n"
    );
    assert_eq!(
        block_on(a.page("Gamma")).unwrap().unwrap().body,
        "Made on B.\n"
    );
    assert_eq!(
        block_on(a.page("Beta")).unwrap().unwrap().body,
        "Beta, edited on B.\n"
    );
    assert_converged(&a, &b);
    assert!(merge_conflicts(&a).is_empty() && merge_conflicts(&b).is_empty());
    // No edit came in as a person's edit of the folder.
    let imports = |w: &W| {
        block_on(w.operations())
            .unwrap()
            .iter()
            .filter(|o| o.summary.starts_with("folder:"))
            .count()
    };
    assert_eq!((imports(&a), imports(&b)), (0, 0));
    // Both folders hold the same files, but index.md and log.md (each device's own).
    let files = |f: &MemoryFolder| {
        f.snapshot()
            .into_iter()
            .filter(|(p, _)| p.contains("/wiki/"))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(files(&fa), files(&fb));
}

#[test]
fn one_page_edited_on_both_is_a_conflict_on_both_and_loses_nothing() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    edit(&a, "Alpha", "Alpha as A wrote it.\n");
    edit(&b, "Alpha", "Alpha as B wrote it.\n");
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_converged(&a, &b);
    let (ca, cb) = (merge_conflicts(&a), merge_conflicts(&b));
    assert_eq!(ca, cb);
    assert_eq!(ca.len(), 1, "{ca:?}");
    let kept = block_on(a.page("Alpha")).unwrap().unwrap().body;
    let other = &ca.iter().next().unwrap().1;
    let both = format!("{kept}\n{other}");
    assert!(both.contains("Alpha as A wrote it."), "{both}");
    assert!(both.contains("Alpha as B wrote it."), "{both}");
}

#[test]
fn a_page_deleted_on_one_and_edited_on_the_other_keeps_the_edit() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    block_on(a.delete_page("Beta")).unwrap();
    edit(&b, "Beta", "Beta, still wanted on B.\n");
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_converged(&a, &b);
    assert_eq!(
        block_on(a.page("Beta")).unwrap().unwrap().body,
        "Beta, still wanted on B.\n"
    );
    let (ca, cb) = (merge_conflicts(&a), merge_conflicts(&b));
    assert_eq!(ca, cb);
    assert!(ca.iter().any(|c| c.0 == "Beta" && c.2), "{ca:?}");
}

/// Sets device `w`'s clock `ms` after the time both started at.
fn at(w: &W, ms: i64) {
    w.clock().set(1_795_986_300_000 + ms);
}

/// Both devices hold `key` with `body`, and show one conflict on it: the deletion to confirm.
fn kept_with_the_deletion_to_confirm(a: &W, b: &W, key: &str, body: &str, case: &str) {
    assert_converged(a, b);
    for w in [a, b] {
        let page = block_on(w.page(key)).unwrap();
        assert_eq!(page.map(|p| p.body).as_deref(), Some(body), "{case}");
    }
    let (ca, cb) = (merge_conflicts(a), merge_conflicts(b));
    assert_eq!(ca, cb, "{case}");
    let want: BTreeSet<_> = [(key.to_string(), String::new(), true)].into();
    assert_eq!(ca, want, "{case}");
}

#[test]
fn a_deletion_beside_an_edit_keeps_the_edit_whichever_came_later() {
    for deletion_first in [true, false] {
        for deleter_is_a in [true, false] {
            let case = format!("deletion first: {deletion_first}, on A: {deleter_is_a}");
            let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
            let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
            let (deleter, editor) = if deleter_is_a { (&a, &b) } else { (&b, &a) };
            let (del, ed) = if deletion_first {
                (1_000, 2_000)
            } else {
                (2_000, 1_000)
            };
            at(deleter, del);
            block_on(deleter.delete_page("Beta")).unwrap();
            at(editor, ed);
            edit(editor, "Beta", "Beta, still wanted.\n");
            settle(&a, &b, &fa, &fb, &mut sync);
            kept_with_the_deletion_to_confirm(&a, &b, "Beta", "Beta, still wanted.\n", &case);
        }
    }
}

#[test]
fn a_deletion_after_an_edit_of_its_own_device_keeps_the_other_devices_edit() {
    // A edits; B edits later, then deletes (having seen its own edit, not A's). A takes in
    // B's two operations in one mirror run or in two, between which it shows B's edit.
    for separate_runs in [false, true] {
        let case = format!("separate runs: {separate_runs}");
        let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
        let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
        at(&a, 1_000);
        edit(&a, "Alpha", "Alpha as A wrote it.\n");
        mirror(&a, &fa);
        at(&b, 2_000);
        edit(&b, "Alpha", "Alpha as B wrote it.\n");
        if separate_runs {
            mirror(&b, &fb);
            sync.all(&fa, &fb);
            pull(&a, &fa);
            let now = block_on(a.page("Alpha")).unwrap().unwrap().body;
            assert_eq!(now, "Alpha as B wrote it.\n", "{case}");
        }
        at(&b, 3_000);
        block_on(b.delete_page("Alpha")).unwrap();
        settle(&a, &b, &fa, &fb, &mut sync);
        kept_with_the_deletion_to_confirm(&a, &b, "Alpha", "Alpha as A wrote it.\n", &case);
    }
}

/// A small seeded generator (xorshift64*), so each interleaving can be replayed by its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

static LOST: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static WRITTEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static ASYMMETRIC: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Fails on an error no person's step should meet: the store refusing a write (a revision
/// number taken) or a record that does not read.
fn no_store_error<T>(r: llm_wiki::Result<T>, what: &str) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e @ (llm_wiki::Error::Conflict { .. } | llm_wiki::Error::Corrupt { .. })) => {
            panic!("{what}: {e:?}")
        }
        Err(_) => None, // refused for the person's reasons (a title taken, nothing to undo)
    }
}

/// Every text an edit wrote, to find again at the end.
type Written = Vec<String>;

fn page_keys(w: &W) -> Vec<String> {
    block_on(w.all_pages())
        .unwrap()
        .into_iter()
        .map(|p| p.key)
        .collect()
}

/// One random step on device `w` (then its mirror runs, as the app runs it after each change).
fn act(
    w: &W,
    f: &MemoryFolder,
    who: &str,
    step: usize,
    rng: &mut Rng,
    written: &mut Written,
    compile: bool,
) {
    let keys = page_keys(w);
    let pick = |rng: &mut Rng| keys.get(rng.below(keys.len().max(1))).cloned();
    let n = rng.below(10);
    if n == 9 && compile {
        let _ = common::compile_offline(w);
        mirror(w, f);
        return;
    }
    match n {
        0..=3 => {
            if let Some(k) = pick(rng) {
                let text = format!("{k}: {who} wrote this at step {step}.\n");
                let edit = block_on(w.put_page(llm_wiki::wiki::PageEdit {
                    key: Some(k),
                    body: Some(text.clone()),
                    ..Default::default()
                }));
                if no_store_error(edit, "an edit").is_some() {
                    written.push(text);
                }
            }
        }
        4 => {
            let text = format!("Made on {who} at step {step}.\n");
            new_page(w, &format!("{who} page {step}"), PageKind::Entity, &text);
            written.push(text);
        }
        5 => {
            if let Some(k) = pick(rng) {
                no_store_error(block_on(w.delete_page(&k)), "a deletion");
            }
        }
        6 => {
            if let Some(k) = pick(rng) {
                let to = format!("{k} {who}{step}");
                no_store_error(block_on(w.rename_page(&k, &to)), "a rename");
            }
        }
        7 => {
            let ops = block_on(w.operations()).unwrap();
            let slot = block_on(w.device_slot()).unwrap();
            let own: Vec<u64> = ops
                .iter()
                .filter(|o| llm_wiki::model::op_slot(o.id) == slot && o.rolled_back_by.is_none())
                .map(|o| o.id)
                .collect();
            if let Some(op) = own.last() {
                // A rollback a person may ask for is never refused by a missing record
                // (a source text is kept, content-addressed, whoever removed the source).
                no_store_error(block_on(w.rollback(*op)), "a rollback");
            }
        }
        _ => {
            let key = format!("notes/{who}-{}", rng.below(3));
            let text = format!("# Note\n{who} noted this at step {step}. Widgets are blue.\n");
            common::add(w, &key, &text);
        }
    }
    mirror(w, f);
}

/// The pages `w` lacks although an edit of them is one no later write of them saw: the
/// operations that wrote a page (by its revisions) that no other one of them saw, leaving out
/// an import of another device's version it had not seen (that device's file arriving before
/// its operation), must then hold no edit (issue #25: a deletion beside an edit keeps the
/// edit).
fn deleted_over_an_unseen_edit(w: &W) -> Vec<String> {
    use llm_wiki::model::{op_slot, seen_by, OperationKind};
    let ops: BTreeMap<u64, llm_wiki::model::Operation> = block_on(w.operations())
        .unwrap()
        .into_iter()
        .map(|o| (o.id, o))
        .collect();
    // Each page's writers, with the page file each left (None: deleted).
    let mut writes: BTreeMap<String, BTreeMap<u64, (u64, Option<String>)>> = BTreeMap::new();
    for (_, r) in block_on(w.storage().scan(Store::Revisions, "")).unwrap() {
        let rv: llm_wiki::model::Revision = serde_json::from_slice(&r.data).unwrap();
        let file = rv
            .page_state
            .as_ref()
            .map(llm_wiki::markdown::page::page_file);
        let e = writes.entry(rv.page).or_default().entry(rv.op).or_default();
        if e.0 <= rv.number {
            *e = (rv.number, file);
        }
    }
    let mut out = Vec::new();
    for (page, by_op) in writes {
        if block_on(w.page(&page))
            .unwrap()
            .is_some_and(|p| p.key == page)
        {
            continue;
        }
        let echo = |id: u64, file: &Option<String>| {
            ops[&id].kind == OperationKind::Import
                && by_op.iter().any(|(x, (_, f))| {
                    op_slot(*x) != op_slot(id) && !seen_by(&ops[&id], &ops[x]) && f == file
                })
        };
        let mut last: BTreeMap<u16, u64> = BTreeMap::new();
        for (id, (_, file)) in &by_op {
            if ops.contains_key(id) && !echo(*id, file) {
                let l = last.entry(op_slot(*id)).or_default();
                *l = (*l).max(*id);
            }
        }
        let unseen_edit = last.values().any(|x| {
            by_op[x].1.is_some() && !last.values().any(|y| y != x && seen_by(&ops[y], &ops[x]))
        });
        if unseen_edit {
            out.push(page);
        }
    }
    out
}

/// One seeded interleaving of steps on both devices with syncs (some partial, some late) and
/// pulls between them (offline compiles among the steps when `compile`); then both settle.
/// Returns the number of conflicts shown.
fn interleaving(seed: u64, steps: usize, compile: bool) -> usize {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut written: Written = Vec::new();
    for step in 0..steps {
        match rng.below(6) {
            0 | 1 => act(&a, &fa, "A", step, &mut rng, &mut written, compile),
            2 | 3 => act(&b, &fb, "B", step, &mut rng, &mut written, compile),
            4 => {
                // A sync that copies only some of the changed files (one operation's files
                // can arrive in separate batches).
                let mut r = Rng(rng.next() | 1);
                let all = rng.chance(50);
                sync.sync(&fa, &fb, &mut |_| all || r.chance(50));
            }
            _ => {
                if rng.chance(50) {
                    pull(&a, &fa);
                } else {
                    pull(&b, &fb);
                }
            }
        }
    }
    settle(&a, &b, &fa, &fb, &mut sync);
    if std::env::var("CONVERGE_DUMP").is_ok() {
        for (n, w) in [("A", &a), ("B", &b)] {
            eprintln!("== {n} seed {seed}");
            for o in block_on(w.operations()).unwrap() {
                eprintln!(
                    "{:>18} {:?} {} {:?} rb={:?}",
                    o.id, o.kind, o.summary, o.pages, o.rolled_back_by
                );
            }
        }
    }
    assert_converged(&a, &b);
    let lost_edits = deleted_over_an_unseen_edit(&a);
    assert!(
        lost_edits.is_empty(),
        "seed {seed}: deleted over an edit: {lost_edits:?}"
    );
    let (ca, cb) = (merge_conflicts(&a), merge_conflicts(&b));
    if ca != cb {
        eprintln!("seed {seed}: the conflicts differ:\n A {ca:?}\n B {cb:?}");
        if std::env::var("CONVERGE_DUMP").is_ok() {
            for w in [&a, &b] {
                for c in block_on(w.mirror_conflicts()).unwrap() {
                    eprintln!(
                        "  {} tool={:?} copy={:?} device={:?} deleted={} theirs={:?}",
                        c.key, c.tool, c.copy, c.device, c.deleted, c.theirs
                    );
                }
                eprintln!("  --");
            }
        }
        ASYMMETRIC.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let ca: BTreeSet<_> = ca.union(&cb).cloned().collect();
    // No edit lost: each text is a page's, a revision's or a conflict's.
    let mut kept: Vec<String> = Vec::new();
    for (_, r) in block_on(a.storage().scan(Store::Revisions, ""))
        .unwrap()
        .into_iter()
        .chain(block_on(b.storage().scan(Store::Revisions, "")).unwrap())
    {
        let v: serde_json::Value = serde_json::from_slice(&r.data).unwrap();
        if let Some(body) = v["pageState"]["body"].as_str() {
            kept.push(body.to_string());
        }
    }
    kept.extend(ca.iter().map(|c| c.1.clone()));
    for text in &written {
        if !kept.iter().any(|k| k.contains(text.trim_end())) {
            eprintln!("seed {seed}: {text:?} was lost");
            LOST.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    WRITTEN.fetch_add(written.len(), std::sync::atomic::Ordering::Relaxed);
    ca.len()
}

#[test]
fn seeded_interleavings_on_two_devices_converge_and_lose_no_edit() {
    let seeds: u64 = std::env::var("CONVERGE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let from: u64 = std::env::var("CONVERGE_FROM")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    use std::sync::atomic::Ordering::Relaxed;
    for compile in [false, true] {
        let mut conflicts = 0;
        for seed in from..seeds {
            conflicts += interleaving(seed, 40, compile);
        }
        let (asymmetric, lost, written) = (
            ASYMMETRIC.swap(0, Relaxed),
            LOST.swap(0, Relaxed),
            WRITTEN.swap(0, Relaxed),
        );
        eprintln!(
            "{} interleavings{}: {conflicts} conflicts, {asymmetric} with the conflicts \
             differing; {lost} of {written} texts lost",
            seeds - from,
            if compile {
                " with offline compiles"
            } else {
                ""
            },
        );
        // The interleavings do reach the case the merge exists for.
        assert!(conflicts > 0, "no interleaving made a conflict");
        assert_eq!(lost, 0, "texts lost");
        // Every conflict is shown once, on both devices.
        assert_eq!(asymmetric, 0, "interleavings showed different conflicts");
    }
}

#[test]
fn another_device_adds_a_tenth_at_most_to_a_thousand_page_folder() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let a = common::open(&ba, "a");
    for i in 0..1000 {
        new_page(
            &a,
            &format!("Page {i}"),
            PageKind::Concept,
            &format!(
                "Page {i} links [[Page {}]] and says a few words about it.\n",
                (i + 1) % 1000
            ),
        );
    }
    let fa = MemoryFolder::new();
    mirror(&a, &fa);
    let fb = MemoryFolder::new();
    let mut sync = Sync::new(&MemoryFolder::new());
    sync.base.clear();
    sync.all(&fa, &fb);
    let bytes = |f: &MemoryFolder, prefix: &str| -> usize {
        f.snapshot()
            .iter()
            .filter(|(p, _)| p.contains(prefix))
            .map(|(_, b)| b.len())
            .sum()
    };
    let alone = bytes(&fa, "");
    let b = common::join(&bb, "b", &fb);
    // Both work a little, and the folder settles.
    for i in 0..10 {
        edit(&a, &format!("Page {i}"), &format!("Edited on A, {i}.\n"));
        edit(
            &b,
            &format!("Page {}", 500 + i),
            &format!("Edited on B, {i}.\n"),
        );
    }
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_converged(&a, &b);
    let device = block_on(b.device_id()).unwrap();
    let theirs = bytes(&fa, &format!(".llm-wiki/devices/{device}/"));
    let total = bytes(&fa, "");
    eprintln!("1,000 pages: {alone} bytes alone, {total} with two devices, {theirs} in the second's folder");
    assert!(theirs * 10 <= alone, "{theirs} of {alone} bytes");
}

#[test]
fn a_source_text_one_device_rolled_back_still_reaches_the_other_devices_compile() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    common::add(&a, "notes/n", "# Note\nWidgets are blue.\n");
    settle(&a, &b, &fa, &fb, &mut sync);
    let added = block_on(a.operations()).unwrap().last().unwrap().id;
    let version = block_on(b.sources()).unwrap()[0].version.clone();
    // A takes the source back (its text leaves A's wiki) while B, not knowing yet, compiles it.
    block_on(a.rollback(added)).unwrap();
    mirror(&a, &fa);
    common::compile_offline(&b).unwrap();
    mirror(&b, &fb);
    settle(&a, &b, &fa, &fb, &mut sync);
    // A applied B's compile: the text stayed in the folder for it.
    assert_converged(&a, &b);
    let text = format!("{}/raw/text/{version}.md", common::MIRROR_ROOT);
    assert!(block_on(fa.read(&text)).unwrap().is_some());
}

#[test]
fn a_page_file_before_its_operation_over_an_edit_here_is_still_a_conflict() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    edit(&a, "Alpha", "Alpha as A wrote it.\n");
    edit(&b, "Alpha", "Alpha as B wrote it.\n");
    mirror(&a, &fa);
    mirror(&b, &fb);
    // The sync tool brings A's page file first: B's pull reads it as an edit made in the
    // folder, over B's own edit (which only the page's history then holds).
    let path = format!("{}/wiki/concept/Alpha.md", common::MIRROR_ROOT);
    let file = block_on(fa.read(&path)).unwrap().unwrap();
    block_on(fb.write(&path, &file)).unwrap();
    pull(&b, &fb);
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_converged(&a, &b);
    let (ca, cb) = (merge_conflicts(&a), merge_conflicts(&b));
    assert_eq!(ca, cb);
    assert_eq!(ca.len(), 1, "{ca:?}");
    let kept = block_on(a.page("Alpha")).unwrap().unwrap().body;
    let both = format!("{kept}\n{}", ca.iter().next().unwrap().1);
    assert!(both.contains("Alpha as A wrote it."), "{both}");
    assert!(both.contains("Alpha as B wrote it."), "{both}");
}

#[test]
fn an_attachment_name_taken_again_after_a_rollback_reaches_the_other_device() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    block_on(a.add_attachment("x.png", "image/png", b"\x89PNG one")).unwrap();
    settle(&a, &b, &fa, &fb, &mut sync);
    let added = block_on(a.operations()).unwrap().last().unwrap().id;
    block_on(a.rollback(added)).unwrap();
    mirror(&a, &fa);
    // The name is free again: an attachment (named by its name, not its hash) takes it.
    block_on(a.add_attachment("x.png", "image/png", b"\x89PNG two")).unwrap();
    let r = mirror(&a, &fa);
    assert!(r.held.is_empty(), "{:?}", r.held);
    common::add(&a, "notes/later", "# Later\nA later source on A.\n");
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_converged(&a, &b);
    assert_eq!(block_on(b.sources()).unwrap().len(), 1);
}

#[test]
fn a_revision_displaced_before_its_run_was_written_reaches_the_other_device() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    // Both write Alpha's next revision number. B's run reaches A, and A's pull merges it before
    // A's run is written (as a pull's own import is): B's revision, later in the order, keeps
    // the number, and A's is kept displaced, beside it.
    edit(&a, "Alpha", "Alpha as A wrote it.\n");
    edit(&b, "Alpha", "Alpha as B wrote it.\n");
    mirror(&b, &fb);
    sync.all(&fa, &fb);
    pull(&a, &fa);
    // A's run then carries its revision as A holds it now, displaced, so B holds it too.
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_converged(&a, &b);
    let (ca, cb) = (merge_conflicts(&a), merge_conflicts(&b));
    assert_eq!((ca.len(), ca), (1, cb));
}

#[test]
fn a_device_takes_its_shared_folder_up_again_after_stopping() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    new_page(&a, "Gamma", PageKind::Concept, "Gamma, first.\n");
    edit(&b, "Alpha", "Alpha as B wrote it before stopping.\n");
    settle(&a, &b, &fa, &fb, &mut sync);
    // B stops using the folder; meanwhile B edits a page, A edits another, and the person
    // edits a third one's file in B's copy of the folder.
    block_on(b.forget_mirror()).unwrap();
    edit(&b, "Alpha", "Alpha as B wrote it while stopped.\n");
    edit(&a, "Beta", "Beta as A wrote it meanwhile.\n");
    mirror(&a, &fa);
    sync.all(&fa, &fb);
    let gamma = format!("{}/wiki/concept/Gamma.md", common::MIRROR_ROOT);
    let file = String::from_utf8(block_on(fb.read(&gamma)).unwrap().unwrap()).unwrap();
    let edited = file.replace("Gamma, first.", "Gamma, edited in the folder.");
    block_on(fb.write(&gamma, edited.as_bytes())).unwrap();
    // B takes the folder up again: nothing is lost, and no device forks.
    assert!(block_on(b.mirror_joinable(&fb)).unwrap().wikis[0].own);
    block_on(b.mirror_take(&fb, common::MIRROR_ROOT)).unwrap();
    // Its next run writes the one operation it made meanwhile, not all of its own again.
    let ops = |r: &llm_wiki::mirror::MirrorReport| {
        r.written.iter().filter(|p| p.contains("/ops/")).count()
    };
    assert_eq!(ops(&mirror(&b, &fb)), 1);
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_converged(&a, &b);
    for (w, who) in [(&a, "A"), (&b, "B")] {
        let body = |k: &str| block_on(w.page(k)).unwrap().unwrap().body;
        assert_eq!(
            body("Alpha"),
            "Alpha as B wrote it while stopped.\n",
            "{who}"
        );
        assert_eq!(body("Beta"), "Beta as A wrote it meanwhile.\n", "{who}");
        assert_eq!(body("Gamma"), "Gamma, edited in the folder.\n", "{who}");
    }
    let roots: BTreeSet<String> = fb
        .snapshot()
        .keys()
        .map(|p| p.split('/').next().unwrap().to_string())
        .collect();
    assert_eq!(roots.len(), 1, "{roots:?}");
}

#[test]
fn an_edit_kept_over_a_later_deletion_of_its_number_reaches_the_other_device() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    // A edits Alpha and its run waits; B deletes Alpha (later in the order: B's slot breaks the
    // tie) and its run reaches A first. The edit is kept; the deletion's revision keeps the
    // number's key, the edit's is kept beside it, and A's run carries that one to B.
    edit(&a, "Alpha", "Alpha as A wrote it.\n");
    block_on(b.delete_page("Alpha")).unwrap();
    mirror(&b, &fb);
    sync.all(&fa, &fb);
    pull(&a, &fa);
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_converged(&a, &b);
    for w in [&a, &b] {
        let page = block_on(w.page("Alpha")).unwrap().map(|p| p.body);
        assert_eq!(page.as_deref(), Some("Alpha as A wrote it.\n"));
    }
    let (ca, cb) = (merge_conflicts(&a), merge_conflicts(&b));
    assert_eq!((ca.len(), ca), (1, cb));
}

#[test]
fn a_device_upgraded_from_a_build_before_seen_sees_what_it_holds() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    edit(&a, "Alpha", "Alpha as A wrote it.\n");
    settle(&a, &b, &fa, &fb, &mut sync);
    // B's op counter as an older build wrote it: without `seen`.
    let storage = b.storage();
    let (counter, rev) = {
        let r = block_on(storage.get(Store::Meta, "ops")).unwrap().unwrap();
        let mut v: serde_json::Value = serde_json::from_slice(&r.data).unwrap();
        v.as_object_mut().unwrap().remove("seen");
        (v, r.rev)
    };
    let mut batch = Batch::new();
    batch.put(
        Store::Meta,
        "ops",
        serde_json::to_vec(&counter).unwrap(),
        Expect::Rev(rev),
    );
    block_on(storage.commit(batch)).unwrap();
    // B's next operation saw A's edit: B deletes the page after it, and the deletion stands.
    block_on(b.delete_page("Alpha")).unwrap();
    let last_a = block_on(a.operations()).unwrap().last().unwrap().id;
    let op = block_on(b.operations()).unwrap().last().unwrap().clone();
    assert_eq!(op.seen, Some(vec![last_a]));
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_converged(&a, &b);
    assert!(block_on(a.page("Alpha")).unwrap().is_none());
    assert!(merge_conflicts(&a).is_empty());
}

#[test]
fn one_new_page_file_read_on_both_devices_ends_as_one_page() {
    let (ba, bb) = (MemoryBackend::new(), MemoryBackend::new());
    let (a, b, fa, fb, mut sync) = two_devices(&ba, &bb);
    // A file that reached both folders before either device read it (an iCloud `Beta 2.md`
    // with no Beta 2 page, a note the person copied into both): each device reads it as a
    // page made in the folder.
    let path = format!("{}/wiki/entity/Delta.md", common::MIRROR_ROOT);
    let file = b"---\ntitle: Delta\n---\nA note made in the folder.\n";
    block_on(fa.write(&path, file)).unwrap();
    pull(&a, &fa);
    block_on(fb.write(&path, file)).unwrap();
    pull(&b, &fb);
    settle(&a, &b, &fa, &fb, &mut sync);
    assert_converged(&a, &b);
    assert!(merge_conflicts(&a).is_empty() && merge_conflicts(&b).is_empty());
}
