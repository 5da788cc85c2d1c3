//! The folder mirror (issue #24) on an in-memory folder: a mirrored folder imports back to the
//! same wiki, a run writes only what its operations changed, a run cut short at any write leaves
//! the folder at the operation before it, and nothing of the user's is written over.

use std::collections::BTreeMap;

use futures::executor::block_on;
use llm_wiki::folder::{Folder, MemoryFolder};
use llm_wiki::markdown::page::page_file;
use llm_wiki::mirror::ConflictChoice;
use llm_wiki::model::PageKind;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::vault::VaultKind;
use llm_wiki::vault_files::zip::{read_zip, write_zip};
use llm_wiki::wiki::{NewSource, PageEdit};
use llm_wiki::Error;

mod common;

use common::{edit, mirror, mirrored, new_page, open, populated, pull, W};

const ROOT: &str = "llm-wiki";

/// The files of the mirror's root, as a vault zip (the way a user would import the folder).
fn folder_zip(folder: &MemoryFolder) -> Vec<u8> {
    let files: BTreeMap<String, Vec<u8>> = folder
        .snapshot()
        .into_iter()
        .filter_map(|(p, b)| Some((p.strip_prefix(&format!("{ROOT}/"))?.to_string(), b)))
        .collect();
    write_zip(&files).unwrap()
}

/// What a fresh wiki imported from the folder exports.
fn reimported(folder: &MemoryFolder, name: &str) -> (Vec<u8>, llm_wiki::vault::ImportReport) {
    let backend = MemoryBackend::new();
    let w = open(&backend, name);
    let report = block_on(w.import_vault(&folder_zip(folder))).unwrap();
    (block_on(w.export_vault()).unwrap(), report)
}

/// Asserts two vault zips hold the same files, naming the first that differs.
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    let (got, want) = (read_zip(got).unwrap(), read_zip(want).unwrap());
    for path in got.keys().chain(want.keys()) {
        let (g, w) = (got.get(path), want.get(path));
        if g != w {
            let lines = |b: Option<&Vec<u8>>| -> Vec<String> {
                b.map(|b| {
                    String::from_utf8_lossy(b)
                        .lines()
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
            };
            let (gl, wl) = (lines(g), lines(w));
            let at = (0..gl.len().max(wl.len()))
                .find(|i| gl.get(*i) != wl.get(*i))
                .unwrap_or(0);
            panic!(
                "{what}: {path} differs at line {at} (of {} / {})\n got: {:?}\nwant: {:?}",
                gl.len(),
                wl.len(),
                gl.get(at),
                wl.get(at)
            );
        }
    }
}

/// One operation of a test.
type Step = Box<dyn Fn(&W)>;

/// Operations of every kind after the first run: sources added and corrected, attachments,
/// page edits, a rename, a delete, a rollback and settings.
fn more_operations(w: &W, folder: &MemoryFolder, after_each: &mut dyn FnMut(&W, &MemoryFolder)) {
    let steps: Vec<Step> = vec![
        Box::new(|w| {
            new_page(w, "检索", PageKind::Concept, "见 [[人工智能]]。\n");
        }),
        Box::new(|w| {
            block_on(w.add_source(NewSource {
                key: Some("clip/b".into()),
                mime: "text/markdown".into(),
                content: "# B\nBeta text.\n".into(),
                original: Some(b"%PDF-1.4 fake".to_vec()),
                original_mime: Some("application/pdf".into()),
                ..Default::default()
            }))
            .unwrap();
        }),
        Box::new(|w| {
            block_on(w.add_attachment("图 1.png", "image/png", b"\x89PNG two")).unwrap();
        }),
        Box::new(|w| {
            block_on(w.put_page(PageEdit {
                key: Some("检索".into()),
                body: Some("改过的正文，链接 [[机器学习 (ML)]]。\n".into()),
                ..Default::default()
            }))
            .unwrap();
        }),
        Box::new(|w| {
            block_on(w.rename_page("检索", "信息检索")).unwrap();
        }),
        Box::new(|w| {
            let op = block_on(w.delete_page("Rust： Ownership")).unwrap().op;
            block_on(w.rollback(op)).unwrap();
        }),
        Box::new(|w| {
            block_on(w.remove_source("clip/b")).unwrap();
        }),
    ];
    for step in steps {
        step(w);
        after_each(w, folder);
    }
}

#[test]
fn a_mirrored_folder_imports_back_to_the_same_wiki() {
    let backend = MemoryBackend::new();
    let w = populated(&backend, "a");
    let folder = MemoryFolder::new();
    let first = mirror(&w, &folder);
    assert!(first.whole);
    assert_same(
        &reimported(&folder, "b").0,
        &block_on(w.export_vault()).unwrap(),
        "after the first run",
    );
    let mut runs = 0;
    more_operations(&w, &folder, &mut |w, folder| {
        let r = mirror(w, folder);
        assert!(!r.whole, "{r:?}");
        runs += 1;
        let (exported, report) = reimported(folder, &format!("r{runs}"));
        assert_eq!(report.kind, Some(VaultKind::LlmWiki));
        assert!(report.edited_pages.is_empty(), "{report:?}");
        assert_same(
            &exported,
            &block_on(w.export_vault()).unwrap(),
            &format!("after run {runs}"),
        );
    });
    // Nothing outside the root.
    assert!(folder.snapshot().keys().all(|p| p.starts_with("llm-wiki/")));
}

#[test]
fn a_run_writes_only_the_files_its_operations_changed() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "w");
    for i in 0..30 {
        new_page(
            &w,
            &format!("Page {i}"),
            PageKind::Concept,
            &format!("Body {i}.\n"),
        );
    }
    common::add(&w, "notes/a.md", "Alpha is a letter.\n");
    let folder = MemoryFolder::new();
    mirror(&w, &folder);
    folder.take_log();
    // Nothing happened: nothing is written.
    let idle = mirror(&w, &folder);
    assert!(
        idle.written.is_empty() && idle.removed.is_empty(),
        "{idle:?}"
    );
    // One page edited: the run's note, its file, the log and the operation file (index.md
    // keeps its bytes).
    block_on(w.put_page(PageEdit {
        key: Some("Page 3".into()),
        body: Some("Body three, edited.\n".into()),
        ..Default::default()
    }))
    .unwrap();
    let r = mirror(&w, &folder);
    let (written, removed) = folder.take_log();
    let op = r.synced;
    let device = block_on(w.device_id()).unwrap();
    assert_eq!(
        written,
        vec![
            format!("llm-wiki/.llm-wiki/devices/{device}/run.json"),
            "llm-wiki/log.md".to_string(),
            "llm-wiki/wiki/concept/Page 3.md".to_string(),
            format!("llm-wiki/.llm-wiki/devices/{device}/ops/{op:012}.json"),
        ]
    );
    assert!(removed.is_empty());
    assert!(r.unchanged >= 1, "index.md was planned and kept: {r:?}");
    // A source added: its text, the index and log, one operation file; no page file.
    common::add(&w, "notes/b.md", "Beta is a letter.\n");
    mirror(&w, &folder);
    let (written, _) = folder.take_log();
    assert!(written.iter().any(|p| p.starts_with("llm-wiki/raw/text/")));
    assert!(
        !written.iter().any(|p| p.starts_with("llm-wiki/wiki/")),
        "{written:?}"
    );
    assert_eq!(written.iter().filter(|p| p.contains("/ops/")).count(), 1);
    // Several operations in one run: one file each, the last one last.
    new_page(&w, "New one", PageKind::Entity, "x\n");
    new_page(&w, "New two", PageKind::Entity, "y\n");
    let r = mirror(&w, &folder);
    let (written, _) = folder.take_log();
    let ops: Vec<&String> = written.iter().filter(|p| p.contains("/ops/")).collect();
    assert_eq!(ops.len(), 2);
    assert_eq!(
        written.last().unwrap(),
        &format!(
            "llm-wiki/.llm-wiki/devices/{device}/ops/{:012}.json",
            r.synced
        )
    );
}

/// A mirrored wiki and three operations the folder does not hold yet (pages, a source, an
/// attachment), with the exports before and after them.
fn three_behind(backend: &MemoryBackend) -> (W, MemoryFolder, Vec<u8>, Vec<u8>) {
    let w = populated(backend, "a");
    let folder = MemoryFolder::new();
    mirror(&w, &folder);
    let before = block_on(w.export_vault()).unwrap();
    new_page(&w, "检索", PageKind::Concept, "见 [[人工智能]]。\n");
    common::add(&w, "notes/c.md", "Gamma.\n");
    block_on(w.add_attachment("c.png", "image/png", b"\x89PNG c")).unwrap();
    let after = block_on(w.export_vault()).unwrap();
    (w, folder, before, after)
}

#[test]
fn a_run_cut_short_at_any_write_leaves_the_operation_before_it() {
    cut_at_every_write(three_behind, 3);
}

/// A mirrored wiki with operations the folder does not hold yet, and its exports before and
/// after them.
type Behind = fn(&MemoryBackend) -> (W, MemoryFolder, Vec<u8>, Vec<u8>);

/// Cuts a mirror run after 0, 1, 2… writes (a fresh wiki from `setup` each time) until a run
/// finishes. After each cut the folder imports as the wiki before the run (schema.md may keep
/// the run's text: nothing holds the one before), and the next run finishes the job without
/// taking its own writes for edits made outside. The finishing run must write more than
/// `min_writes` files.
fn cut_at_every_write(setup: Behind, min_writes: usize) {
    for cut in 0.. {
        let backend = MemoryBackend::new();
        let (w, folder, before, after) = setup(&backend);
        folder.fail_after(cut);
        let result = block_on(w.mirror(&folder, ROOT));
        folder.heal();
        let (exported, report) = reimported(&folder, &format!("t{cut}"));
        match result {
            Err(Error::Folder { .. }) => {
                let got = read_zip(&exported).unwrap();
                let mut want = read_zip(&before).unwrap();
                if let Some(schema) = got.get("schema.md") {
                    want.insert("schema.md".into(), schema.clone());
                }
                assert_same(
                    &write_zip(&got).unwrap(),
                    &write_zip(&want).unwrap(),
                    &format!("cut after {cut}: {report:?}"),
                );
                let done = block_on(w.mirror(&folder, ROOT)).unwrap();
                assert!(done.held.is_empty(), "cut after {cut}: {done:?}");
                assert_same(
                    &reimported(&folder, "d").0,
                    &after,
                    &format!("cut after {cut}"),
                );
            }
            Ok(r) => {
                assert_same(&exported, &after, "a run not cut");
                assert!(cut > min_writes, "the run wrote only {cut} files: {r:?}");
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn the_mirror_never_writes_over_files_it_did_not_write() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "w");
    new_page(&w, "Alpha", PageKind::Concept, "First.\n");
    let folder = MemoryFolder::new();
    folder.put_outside("llm-wiki/notes.md", b"mine");
    let e = block_on(w.mirror(&folder, ROOT)).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    assert_eq!(folder.snapshot().len(), 1, "nothing written");
    for bad in ["../up", "/abs", "a/../../b", ""] {
        assert!(block_on(w.mirror(&folder, bad)).is_err(), "{bad:?}");
    }
    // The first free name is taken instead.
    let root = block_on(w.mirror_root(&folder)).unwrap();
    assert_eq!(root, "llm-wiki 2");
    mirror_at(&w, &folder, &root);
    assert_eq!(
        block_on(w.mirror_root(&folder)).unwrap(),
        root,
        "the last run's from then on"
    );
    // A page file edited outside since the last run is held, not written over.
    folder.put_outside("llm-wiki 2/wiki/concept/Alpha.md", b"edited in Obsidian\n");
    block_on(w.put_page(PageEdit {
        key: Some("Alpha".into()),
        body: Some("Edited in the app.\n".into()),
        ..Default::default()
    }))
    .unwrap();
    let r = block_on(w.mirror(&folder, "llm-wiki 2")).unwrap();
    assert_eq!(r.held, vec!["wiki/concept/Alpha.md".to_string()]);
    assert_eq!(
        block_on(folder.read("llm-wiki 2/wiki/concept/Alpha.md")).unwrap(),
        Some(b"edited in Obsidian\n".to_vec())
    );
    assert_eq!(folder.snapshot()["llm-wiki/notes.md"], b"mine");
    // index.md and log.md are the app's: an edit there is written over.
    folder.put_outside("llm-wiki 2/log.md", b"edited");
    new_page(&w, "Gamma", PageKind::Concept, "Third.\n");
    let r = block_on(w.mirror(&folder, "llm-wiki 2")).unwrap();
    assert!(r.held.iter().all(|p| p != "log.md"), "{r:?}");
    assert_ne!(folder.snapshot()["llm-wiki 2/log.md"], b"edited");
}

fn mirror_at(w: &W, folder: &MemoryFolder, root: &str) {
    let r = block_on(w.mirror(folder, root)).unwrap();
    assert!(r.whole && r.held.is_empty(), "{r:?}");
}

#[test]
fn the_status_says_how_far_behind_the_folder_is() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "w");
    assert_eq!(block_on(w.mirror_status()).unwrap(), None);
    new_page(&w, "Alpha", PageKind::Concept, "First.\n");
    let folder = MemoryFolder::new();
    mirror(&w, &folder);
    new_page(&w, "Beta", PageKind::Concept, "Second.\n");
    let s = block_on(w.mirror_status()).unwrap().unwrap();
    assert_eq!((s.root.as_str(), s.behind, s.interrupted), (ROOT, 1, false));
    folder.fail_after(0);
    assert!(block_on(w.mirror(&folder, ROOT)).is_err());
    assert!(block_on(w.mirror_status()).unwrap().unwrap().interrupted);
    folder.heal();
    mirror(&w, &folder);
    let s = block_on(w.mirror_status()).unwrap().unwrap();
    assert_eq!((s.behind, s.interrupted), (0, false));
    // Forgetting the mirror keeps the files; the next run needs a free folder again.
    block_on(w.forget_mirror()).unwrap();
    assert_eq!(block_on(w.mirror_status()).unwrap(), None);
    assert!(block_on(w.mirror(&folder, ROOT)).is_err());
}

#[test]
fn a_pull_ignores_the_mirrors_own_writes_without_reading_them() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    // The run noted each page file's size and mtime as it wrote it.
    let first = pull(&w, &folder);
    assert_eq!((first.op, first.read), (None, 0), "{first:?}");
    assert!(first.listed >= 2, "{first:?}");
    // A page edited in the app and not mirrored yet, its file unchanged: not a conflict, and
    // nothing comes back.
    edit(&w, "Beta", "Edited in the app only.\n");
    let quiet = pull(&w, &folder);
    assert!(
        quiet.conflicts.is_empty() && quiet.op.is_none(),
        "{quiet:?}"
    );
    // After a run that rewrote two pages, nothing is read either.
    edit(&w, "Alpha", "Edited in the app.\n");
    mirror(&w, &folder);
    let after = pull(&w, &folder);
    assert_eq!((after.op, after.read), (None, 0), "{after:?}");
    // A file changed outside since is read, and only it.
    let alpha = "llm-wiki/wiki/concept/Alpha.md";
    let text = block_on(folder.read(alpha)).unwrap().unwrap();
    folder.put_outside(alpha, &[text.as_slice(), b"Added outside.\n"].concat());
    let outside = pull(&w, &folder);
    assert_eq!(outside.read, 1, "{outside:?}");
    assert_eq!(outside.edited, vec!["Alpha".to_string()]);
}

#[test]
fn an_edit_a_new_page_and_an_inbox_note_come_in_as_one_operation() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    let alpha = "llm-wiki/wiki/concept/Alpha.md";
    let text = String::from_utf8(block_on(folder.read(alpha)).unwrap().unwrap()).unwrap();
    folder.put_outside(
        alpha,
        text.replace("First.", "First, edited in Obsidian.")
            .as_bytes(),
    );
    folder.put_outside(
        "llm-wiki/wiki/concept/新页.md",
        "新的页面，链接 [[Alpha]]。\n".as_bytes(),
    );
    folder.put_outside(
        "llm-wiki/inbox/paper.md",
        b"# Paper\nA note dropped in the inbox.\n",
    );
    folder.put_outside("llm-wiki/inbox/scan.pdf", b"%PDF-1.4");
    folder.put_outside("llm-wiki/.obsidian/app.json", b"{}");
    folder.put_outside("llm-wiki/my own.md", b"not a page");
    let r = pull(&w, &folder);
    assert!(r.op.is_some(), "{r:?}");
    assert_eq!(r.edited, vec!["Alpha".to_string()]);
    assert_eq!(r.added, vec!["新页".to_string()]);
    assert_eq!(r.sources, vec!["paper.md".to_string()]);
    assert_eq!(r.inbox_other, vec!["inbox/scan.pdf".to_string()]);
    assert!(r.deleted.is_empty() && r.conflicts.is_empty(), "{r:?}");
    let alpha_page = block_on(w.page("Alpha")).unwrap().unwrap();
    assert!(alpha_page.body.contains("edited in Obsidian"));
    let history = block_on(w.history("Alpha")).unwrap();
    assert_eq!(
        history.last().map(|r| r.author),
        Some(llm_wiki::model::Author::Human)
    );
    assert!(block_on(w.page("新页")).unwrap().is_some());
    assert!(block_on(w.source("paper.md")).unwrap().is_some());
    // The note left the inbox; the next run writes its text under raw/.
    assert_eq!(
        block_on(folder.read("llm-wiki/inbox/paper.md")).unwrap(),
        None
    );
    let run = mirror(&w, &folder);
    assert!(
        run.written.iter().any(|p| p.starts_with("raw/text/")),
        "{run:?}"
    );
    assert!(
        run.held.is_empty(),
        "the pulled files are the mirror's own now: {run:?}"
    );
    assert_eq!(pull(&w, &folder).op, None);
    assert_same(
        &reimported(&folder, "r").0,
        &block_on(w.export_vault()).unwrap(),
        "after the pull and the run",
    );
}

#[test]
fn a_page_changed_on_both_sides_is_a_conflict_that_loses_nothing() {
    for choice in ["mine", "theirs", "merge"] {
        let backend = MemoryBackend::new();
        let (w, folder) = mirrored(&backend);
        let path = "llm-wiki/wiki/concept/Alpha.md";
        edit(&w, "Alpha", "The app's version.\n");
        let theirs = "---\ntitle: Alpha\n---\nThe folder's version.\n";
        folder.put_outside(path, theirs.as_bytes());
        let r = pull(&w, &folder);
        assert_eq!(r.conflicts, vec!["Alpha".to_string()], "{choice}: {r:?}");
        assert_eq!(r.op, None);
        // The run holds the file; both versions are kept.
        let run = mirror(&w, &folder);
        assert_eq!(run.held, vec!["wiki/concept/Alpha.md".to_string()]);
        assert_eq!(
            block_on(folder.read(path)).unwrap().unwrap(),
            theirs.as_bytes()
        );
        assert!(block_on(w.page("Alpha"))
            .unwrap()
            .unwrap()
            .body
            .contains("app's"));
        let conflicts = block_on(w.mirror_conflicts()).unwrap();
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].theirs, theirs);
        // The same conflict is not reported again.
        assert!(pull(&w, &folder).conflicts.is_empty());
        let pick = match choice {
            "mine" => ConflictChoice::Mine,
            "theirs" => ConflictChoice::Theirs,
            _ => ConflictChoice::Merge("---\ntitle: Alpha\n---\nBoth, merged.\n".into()),
        };
        assert!(conflicts[0]
            .mine
            .as_deref()
            .unwrap()
            .contains("The app's version."));
        let op = block_on(w.resolve_mirror_conflict(&folder, "Alpha", pick, theirs)).unwrap();
        assert_eq!(op.is_some(), choice != "mine");
        mirror(&w, &folder);
        let body = block_on(w.page("Alpha")).unwrap().unwrap().body;
        let file = String::from_utf8(block_on(folder.read(path)).unwrap().unwrap()).unwrap();
        let want = match choice {
            "mine" => "The app's version.",
            "theirs" => "The folder's version.",
            _ => "Both, merged.",
        };
        assert!(body.contains(want), "{choice}: {body}");
        assert!(file.contains(want), "{choice}: {file}");
        assert!(block_on(w.mirror_conflicts()).unwrap().is_empty());
        assert_eq!(pull(&w, &folder).op, None, "{choice}");
    }
}

#[test]
fn a_page_file_deleted_outside_is_listed_and_not_written_again() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    let path = "llm-wiki/wiki/entity/Beta.md";
    block_on(folder.remove(path)).unwrap();
    let r = pull(&w, &folder);
    assert_eq!(r.deleted, vec!["Beta".to_string()]);
    assert_eq!(r.op, None, "nothing is deleted before the person confirms");
    assert!(block_on(w.page("Beta")).unwrap().is_some());
    edit(&w, "Beta", "Edited while its file is gone.\n");
    let run = mirror(&w, &folder);
    assert_eq!(run.held, vec!["wiki/entity/Beta.md".to_string()]);
    assert_eq!(block_on(folder.read(path)).unwrap(), None);
    assert!(pull(&w, &folder).deleted.is_empty(), "listed once");
    let status = block_on(w.mirror_status()).unwrap().unwrap();
    assert_eq!(
        status.deleted,
        vec!["Beta".to_string()],
        "and kept in the status"
    );
    // Keep the page: its file comes back and is written again from then on.
    block_on(w.restore_page_file(&folder, "Beta")).unwrap();
    assert!(
        String::from_utf8(block_on(folder.read(path)).unwrap().unwrap())
            .unwrap()
            .contains("Edited while")
    );
    edit(&w, "Beta", "Edited again.\n");
    assert!(mirror(&w, &folder)
        .written
        .contains(&"wiki/entity/Beta.md".to_string()));
    // Or delete it: the page goes, and nothing is held any more.
    block_on(folder.remove(path)).unwrap();
    assert_eq!(pull(&w, &folder).deleted, vec!["Beta".to_string()]);
    block_on(w.delete_page("Beta")).unwrap();
    let run = mirror(&w, &folder);
    assert!(run.held.is_empty(), "{run:?}");
    assert_eq!(block_on(w.mirror_status()).unwrap().unwrap().behind, 0);
}

#[test]
fn downloads_of_changes_unzipped_in_turn_read_as_the_wiki() {
    let backend = MemoryBackend::new();
    let w = populated(&backend, "a");
    let folder = MemoryFolder::new();
    let unzip_over = |zip: &[u8]| {
        for (p, b) in read_zip(zip).unwrap() {
            folder.put_outside(&format!("{ROOT}/{p}"), &b);
        }
    };
    let first = block_on(w.export_changes(false)).unwrap();
    assert!(first.report.whole);
    unzip_over(&first.zip);
    let mut n = 0;
    more_operations(&w, &MemoryFolder::new(), &mut |w, _| {
        n += 1;
        let next = block_on(w.export_changes(false)).unwrap();
        assert!(!next.report.whole, "{:?}", next.report);
        let files = read_zip(&next.zip).unwrap();
        assert!(files.len() < 12, "only what changed: {:?}", files.keys());
        unzip_over(&next.zip);
        if let Some(list) = files.get(".llm-wiki/removed.txt") {
            for p in String::from_utf8(list.clone()).unwrap().lines() {
                block_on(folder.remove(&format!("{ROOT}/{p}"))).unwrap();
            }
        }
        assert_same(
            &reimported(&folder, &format!("d{n}")).0,
            &block_on(w.export_vault()).unwrap(),
            &format!("after download {n}"),
        );
    });
    // From the start again: the whole wiki.
    let again = block_on(w.export_changes(true)).unwrap();
    assert!(again.report.whole);
    // The downloads keep their own state: a live mirror is still a first run.
    assert_eq!(block_on(w.mirror_status()).unwrap(), None);
}

/// A mirrored wiki and operations of every other kind the folder does not hold yet: a page
/// edited, one moved to another kind, one renamed, one deleted, the schema changed and a source
/// removed, with the exports before and after them.
fn others_behind(backend: &MemoryBackend) -> (W, MemoryFolder, Vec<u8>, Vec<u8>) {
    let w = populated(backend, "a");
    common::add(&w, "notes/gone.md", "To be removed.\n");
    new_page(&w, "Kind", PageKind::Concept, "A concept for now.\n");
    let folder = MemoryFolder::new();
    mirror(&w, &folder);
    let before = block_on(w.export_vault()).unwrap();
    edit(&w, "人工智能", "## 概述\n改写。\n");
    block_on(w.put_page(PageEdit {
        key: Some("Kind".into()),
        kind: Some(PageKind::Entity),
        ..Default::default()
    }))
    .unwrap();
    block_on(w.rename_page("机器学习 (ML)", "Machine Learning")).unwrap();
    block_on(w.delete_page("Rust： Ownership")).unwrap();
    block_on(w.set_schema("# Schema\n\nOur own conventions.\n")).unwrap();
    block_on(w.remove_source("notes/gone.md")).unwrap();
    let after = block_on(w.export_vault()).unwrap();
    (w, folder, before, after)
}

#[test]
fn a_run_of_edits_renames_deletes_and_removals_cut_short_reads_as_before() {
    cut_at_every_write(others_behind, 5);
}

#[test]
fn what_waits_for_a_decision_is_released_when_it_resolves_itself() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    // A page file deleted outside, then back: no longer listed, and written again.
    let beta = "llm-wiki/wiki/entity/Beta.md";
    let bytes = block_on(folder.read(beta)).unwrap().unwrap();
    block_on(folder.remove(beta)).unwrap();
    assert_eq!(pull(&w, &folder).deleted, vec!["Beta".to_string()]);
    folder.put_outside(beta, &bytes);
    pull(&w, &folder);
    assert!(block_on(w.mirror_status())
        .unwrap()
        .unwrap()
        .deleted
        .is_empty());
    edit(&w, "Beta", "Written again.\n");
    assert!(mirror(&w, &folder)
        .written
        .contains(&"wiki/entity/Beta.md".to_string()));
    // A conflict settled by hand (the file made equal to the app's page) ends by itself.
    let alpha = "llm-wiki/wiki/concept/Alpha.md";
    edit(&w, "Alpha", "The app's version.\n");
    folder.put_outside(alpha, b"---\ntitle: Alpha\n---\nThe folder's version.\n");
    assert_eq!(pull(&w, &folder).conflicts.len(), 1);
    let page = block_on(w.page("Alpha")).unwrap().unwrap();
    folder.put_outside(alpha, page_file(&page).as_bytes());
    pull(&w, &folder);
    assert!(block_on(w.mirror_conflicts()).unwrap().is_empty());
    edit(&w, "Alpha", "Written again too.\n");
    assert!(mirror(&w, &folder)
        .written
        .contains(&"wiki/concept/Alpha.md".to_string()));
}

#[test]
fn a_conflict_whose_file_changed_again_asks_again() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    let alpha = "llm-wiki/wiki/concept/Alpha.md";
    edit(&w, "Alpha", "The app's version.\n");
    folder.put_outside(alpha, b"---\ntitle: Alpha\n---\nFirst outside edit.\n");
    assert_eq!(pull(&w, &folder).conflicts.len(), 1);
    let shown = block_on(w.mirror_conflicts()).unwrap()[0].theirs.clone();
    folder.put_outside(alpha, b"---\ntitle: Alpha\n---\nSecond outside edit.\n");
    let e = block_on(w.resolve_mirror_conflict(&folder, "Alpha", ConflictChoice::Mine, &shown))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    let file = block_on(folder.read(alpha)).unwrap().unwrap();
    assert!(
        file.ends_with(b"Second outside edit.\n"),
        "not written over"
    );
    let c = block_on(w.mirror_conflicts()).unwrap();
    assert!(c[0].theirs.contains("Second outside edit."), "{c:?}");
    block_on(w.resolve_mirror_conflict(&folder, "Alpha", ConflictChoice::Theirs, &c[0].theirs))
        .unwrap();
    let body = block_on(w.page("Alpha")).unwrap().unwrap().body;
    assert!(body.contains("Second outside edit."), "{body}");
}

#[test]
fn a_choice_made_on_a_version_a_later_pull_replaced_is_refused() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    let alpha = "llm-wiki/wiki/concept/Alpha.md";
    edit(&w, "Alpha", "The app's version.\n");
    folder.put_outside(alpha, b"---\ntitle: Alpha\n---\nFirst outside edit.\n");
    pull(&w, &folder);
    let shown = block_on(w.mirror_conflicts()).unwrap()[0].theirs.clone();
    // Saved again in the folder while the person writes a merge of the first version; the
    // watcher's pull takes the new version into the conflict.
    folder.put_outside(alpha, b"---\ntitle: Alpha\n---\nSecond outside edit.\n");
    pull(&w, &folder);
    for choice in [
        ConflictChoice::Merge("---\ntitle: Alpha\n---\nA merge of the first.\n".into()),
        ConflictChoice::Mine,
    ] {
        let e = block_on(w.resolve_mirror_conflict(&folder, "Alpha", choice, &shown)).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    }
    let file = block_on(folder.read(alpha)).unwrap().unwrap();
    assert!(
        file.ends_with(b"Second outside edit.\n"),
        "not written over"
    );
    let body = block_on(w.page("Alpha")).unwrap().unwrap().body;
    assert!(body.contains("The app's version."), "{body}");
    let c = block_on(w.mirror_conflicts()).unwrap();
    assert!(c[0].theirs.contains("Second outside edit."), "{c:?}");
}

#[test]
fn a_conflict_on_a_page_deleted_in_the_app_brings_the_folders_version_back() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    let alpha = "llm-wiki/wiki/concept/Alpha.md";
    edit(&w, "Alpha", "The app's version.\n");
    folder.put_outside(alpha, b"---\ntitle: Alpha\n---\nThe folder's version.\n");
    pull(&w, &folder);
    block_on(w.delete_page("Alpha")).unwrap();
    mirror(&w, &folder);
    assert!(
        block_on(w.mirror_conflicts()).unwrap().is_empty(),
        "no conflict without its page"
    );
    let r = pull(&w, &folder);
    assert_eq!(r.added, vec!["Alpha".to_string()], "{r:?}");
    let body = block_on(w.page("Alpha")).unwrap().unwrap().body;
    assert!(body.contains("The folder's version."), "{body}");
}

#[test]
fn an_inbox_file_the_app_cannot_read_is_handed_over_once_per_change() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    folder.put_outside("llm-wiki/inbox/photo.png", b"\x89PNG one");
    assert_eq!(
        pull(&w, &folder).inbox_other,
        vec!["inbox/photo.png".to_string()]
    );
    let again = pull(&w, &folder);
    assert!(again.inbox_other.is_empty(), "{again:?}");
    assert_eq!(again.read, 0);
    folder.put_outside("llm-wiki/inbox/photo.png", b"\x89PNG two, longer");
    assert_eq!(
        pull(&w, &folder).inbox_other,
        vec!["inbox/photo.png".to_string()]
    );
}

#[test]
fn a_file_named_outside_the_wikis_key_rules_is_left_for_renaming() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    folder.put_outside("llm-wiki/wiki/concept/C#.md", b"A page named by hand.\n");
    let r = pull(&w, &folder);
    assert!(r.added.is_empty(), "{r:?}");
    assert!(
        r.skipped
            .iter()
            .any(|s| s.contains("C#.md") && s.contains("C＃")),
        "{r:?}"
    );
    assert!(pull(&w, &folder).skipped.is_empty(), "reported once");
}

#[test]
fn a_picked_vault_is_adopted_its_notes_as_sources_the_mirror_left_out() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "w");
    let folder = MemoryFolder::new();
    folder.put_outside(
        "Daily/2026-12-04.md",
        "# 今天\n读了所有权一章。\n".as_bytes(),
    );
    folder.put_outside("Ideas.md", b"---\ntitle: Ideas\n---\nA note.\n");
    folder.put_outside("Templates/Day.md", b"# {{date}}\n");
    folder.put_outside("img/a.png", b"\x89PNG a");
    folder.put_outside(".obsidian/app.json", b"{}");
    // Another wiki's mirror in the same vault: its pages are not notes.
    folder.put_outside("old wiki/.llm-wiki/vault.json", b"{}");
    folder.put_outside("old wiki/wiki/concept/X.md", b"x");
    new_page(&w, "Alpha", PageKind::Concept, "First.\n");
    mirror(&w, &folder);
    assert_eq!(block_on(w.folder_notes(&folder, ROOT)).unwrap(), 3);
    let r = block_on(w.mirror_adopt(&folder, ROOT, Default::default())).unwrap();
    assert_eq!(
        r.sources_added,
        vec!["Daily/2026-12-04.md".to_string(), "Ideas.md".to_string()]
    );
    assert_eq!(r.assets, vec!["a.png".to_string()]);
    assert!(
        r.skipped.iter().any(|s| s.starts_with("Templates/Day.md")),
        "{r:?}"
    );
    assert!(r.op.is_some());
    // Twice: nothing new.
    let again = block_on(w.mirror_adopt(&folder, ROOT, Default::default())).unwrap();
    assert_eq!(
        (again.op, again.sources_added.len()),
        (None, 0),
        "{again:?}"
    );
    // The mirror writes the new sources' texts; the notes stay where they were.
    let run = mirror(&w, &folder);
    assert!(
        run.written.iter().any(|p| p.starts_with("raw/text/")),
        "{run:?}"
    );
    assert!(block_on(folder.read("Ideas.md")).unwrap().is_some());
}

/// The folder as a build before device folders wrote it (`vault.json` version 2): operation
/// files in `.llm-wiki/ops/`, one `run.json`, the settings in `config.json`.
fn as_version_2(folder: &MemoryFolder, device: &str) -> MemoryFolder {
    let old = MemoryFolder::new();
    let dir = format!("{ROOT}/.llm-wiki/devices/{device}/");
    for (path, bytes) in folder.snapshot() {
        let (path, bytes) = match path.strip_prefix(&dir) {
            Some("settings.json") => {
                let s: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                let config = serde_json::to_vec(&s["config"]).unwrap();
                (format!("{ROOT}/.llm-wiki/config.json"), config)
            }
            Some(rest) => (format!("{ROOT}/.llm-wiki/{rest}"), bytes),
            None if path.ends_with("/.llm-wiki/vault.json") => {
                let mut m: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                m["version"] = 2.into();
                (path, serde_json::to_vec(&m).unwrap())
            }
            None => (path, bytes),
        };
        block_on(old.write(&path, &bytes)).unwrap();
    }
    old
}

#[test]
fn each_device_writes_its_operations_and_settings_in_a_folder_of_its_own() {
    let backend = MemoryBackend::new();
    let w = populated(&backend, "a");
    let folder = MemoryFolder::new();
    mirror(&w, &folder);
    more_operations(&w, &folder, &mut |w, folder| {
        mirror(w, folder);
    });
    let mut config = block_on(w.llm_config()).unwrap();
    config.model = "second".into();
    config.api_key = Some(llm_wiki::llm::config::Secret::new("sk-device-secret"));
    block_on(w.set_llm_config(config)).unwrap();
    mirror(&w, &folder);
    let device = block_on(w.device_id()).unwrap();
    let files = folder.snapshot();
    let mine = format!("{ROOT}/.llm-wiki/devices/{device}/");
    // Every file the app writes for itself is this device's, or written once by the first run.
    let shared: Vec<&String> = files
        .keys()
        .filter(|p| p.contains("/.llm-wiki/") && !p.starts_with(&mine))
        .collect();
    for p in &shared {
        let name = p.rsplit('/').next().unwrap();
        assert!(
            name.ends_with(".json") && !p.contains("/ops/") && name != "run.json",
            "{p} is neither per device nor the first run's arrays"
        );
    }
    assert!(!files.contains_key(&format!("{ROOT}/.llm-wiki/config.json")));
    // The settings file holds this device's settings; no operation file carries them.
    let settings: serde_json::Value =
        serde_json::from_slice(&files[&format!("{mine}settings.json")]).unwrap();
    let config = block_on(w.export_vault()).unwrap();
    let config = read_zip(&config).unwrap()[".llm-wiki/config.json"].clone();
    assert_eq!(
        settings["config"],
        serde_json::from_slice::<serde_json::Value>(&config).unwrap()
    );
    assert_eq!(settings["config"]["model"], "second");
    assert!(settings["time"].as_i64().unwrap() > 0, "{settings}");
    assert!(files
        .values()
        .all(|b| !String::from_utf8_lossy(b).contains("sk-device-secret")));
    for (p, b) in files.iter().filter(|(p, _)| p.contains("/ops/")) {
        let f: serde_json::Value = serde_json::from_slice(b).unwrap();
        let records = f["records"].as_array().cloned().unwrap_or_default();
        assert!(
            !records.iter().any(|r| r["key"] == "config"),
            "{p} carries the settings"
        );
    }
    // An import starts from the newest device's settings, whichever device saved them.
    let other = format!("{ROOT}/.llm-wiki/devices/0THERDEV1C/settings.json");
    let newer = serde_json::json!({
        "time": settings["time"].as_i64().unwrap() + 1,
        "config": { "model": "from-the-other-device" },
    });
    block_on(folder.write(&other, newer.to_string().as_bytes())).unwrap();
    let (exported, _) = reimported(&folder, "newer");
    let config = read_zip(&exported).unwrap()[".llm-wiki/config.json"].clone();
    assert!(
        String::from_utf8_lossy(&config).contains("from-the-other-device"),
        "{}",
        String::from_utf8_lossy(&config)
    );
    let older = serde_json::json!({ "time": 1, "config": { "model": "older" } });
    block_on(folder.write(&other, older.to_string().as_bytes())).unwrap();
    assert_same(
        &reimported(&folder, "older").0,
        &block_on(w.export_vault()).unwrap(),
        "with an older device's settings beside",
    );
}

#[test]
fn a_folder_from_before_device_folders_imports_and_is_continued() {
    let backend = MemoryBackend::new();
    let w = populated(&backend, "a");
    let folder = MemoryFolder::new();
    mirror(&w, &folder);
    let device = block_on(w.device_id()).unwrap();
    let mut steps = 0;
    more_operations(&w, &folder, &mut |w, folder| {
        steps += 1;
        if steps <= 3 {
            mirror(w, folder);
        }
    });
    // The first three operations as an older build wrote them, the rest not mirrored yet.
    let old = as_version_2(&folder, &device);
    let legacy = old
        .snapshot()
        .into_keys()
        .filter(|p| p.contains("/.llm-wiki/ops/"))
        .count();
    assert!(legacy >= 3, "{legacy}");
    // Read as it is.
    let (_, report) = reimported(&old, "v2");
    assert_eq!(report.kind, Some(VaultKind::LlmWiki));
    assert!(report.edited_pages.is_empty(), "{report:?}");
    // Continued by this build (its state as an older build left it): the new operations go to
    // the device's folder, the manifest says so, and the folder reads as the wiki.
    let mut state: serde_json::Value = serde_json::from_slice(
        &block_on(llm_wiki::storage::Storage::get(
            w.storage(),
            llm_wiki::storage::Store::Meta,
            "mirror",
        ))
        .unwrap()
        .unwrap()
        .data,
    )
    .unwrap();
    // What the older build recorded: its manifest and config.json, no device folder.
    state.as_object_mut().unwrap().remove("version");
    let kept = state["files"].as_object_mut().unwrap();
    kept.retain(|p, _| !p.starts_with(".llm-wiki/devices/"));
    for p in [".llm-wiki/vault.json", ".llm-wiki/config.json"] {
        let b = &old.snapshot()[&format!("{ROOT}/{p}")];
        kept.insert(p.into(), llm_wiki::text::sha256_hex(b).into());
    }
    let mut batch = llm_wiki::storage::Batch::new();
    batch.put(
        llm_wiki::storage::Store::Meta,
        "mirror",
        state.to_string().into_bytes(),
        llm_wiki::storage::Expect::Any,
    );
    block_on(llm_wiki::storage::Storage::commit(w.storage(), batch)).unwrap();
    let r = mirror(&w, &old);
    assert!(!r.whole, "{r:?}");
    assert!(
        r.written.contains(&".llm-wiki/vault.json".to_string()),
        "{r:?}"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&old.snapshot()[&format!("{ROOT}/.llm-wiki/vault.json")]).unwrap();
    assert_eq!(manifest["version"], 3);
    assert!(r
        .written
        .iter()
        .filter(|p| p.contains("/ops/"))
        .all(|p| p.starts_with(&format!(".llm-wiki/devices/{device}/ops/"))));
    assert_same(
        &reimported(&old, "v2-continued").0,
        &block_on(w.export_vault()).unwrap(),
        "a version 2 folder continued",
    );
    // Once only.
    new_page(&w, "Later", PageKind::Entity, "x\n");
    let next = mirror(&w, &old);
    assert!(
        !next.written.iter().any(|p| p.contains("vault.json")),
        "{next:?}"
    );
}
