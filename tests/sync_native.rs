//! A wiki's folder kept equal across devices by a sync tool (issue #25), on an in-memory folder:
//! what the tools leave when they cannot merge a file (a conflict copy beside it, or git's
//! conflict markers in it) becomes one conflict on the page, decided once, never a page of its own.
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use llm_wiki::folder::{Folder, MemoryFolder};
use llm_wiki::markdown::page::page_file;
use llm_wiki::mirror::{ConflictChoice, SyncTool};
use llm_wiki::model::PageKind;
use llm_wiki::storage::memory::MemoryBackend;

mod common;
use common::{edit, mirror, mirrored, new_page, open, pull, MIRROR_ROOT, W};

const ROOT: &str = "llm-wiki";
const ALPHA: &str = "llm-wiki/wiki/concept/Alpha.md";
/// The other device's version of Alpha, as its app wrote the file.
const OTHER: &str = "---\ntitle: Alpha\n---\nThe other device's version.\n";

fn read(folder: &MemoryFolder, path: &str) -> Option<String> {
    block_on(folder.read(path))
        .unwrap()
        .map(|b| String::from_utf8(b).unwrap())
}

/// Each tool's name for a conflict copy of Alpha's file.
const COPIES: [(&str, SyncTool); 3] = [
    (
        "llm-wiki/wiki/concept/Alpha.sync-conflict-20261204-213045-7ZQYK3M.md",
        SyncTool::Syncthing,
    ),
    (
        "llm-wiki/wiki/concept/Alpha (Jane's conflicted copy 2026-12-04).md",
        SyncTool::Dropbox,
    ),
    ("llm-wiki/wiki/concept/Alpha 2.md", SyncTool::ICloud),
];

#[test]
fn a_conflict_copy_is_a_conflict_on_its_page_never_a_page_of_its_own() {
    for (copy, tool) in COPIES {
        for choice in ["mine", "theirs", "merge"] {
            let backend = MemoryBackend::new();
            let (w, folder) = mirrored(&backend);
            edit(&w, "Alpha", "This device's version.\n");
            mirror(&w, &folder);
            folder.put_outside(copy, OTHER.as_bytes());
            let r = pull(&w, &folder);
            assert_eq!(r.conflicts, vec!["Alpha".to_string()], "{tool:?}: {r:?}");
            assert!(r.added.is_empty() && r.edited.is_empty(), "{tool:?}: {r:?}");
            assert_eq!(block_on(w.all_pages()).unwrap().len(), 2, "{tool:?}");
            let c = block_on(w.mirror_conflicts()).unwrap();
            assert_eq!(c.len(), 1);
            assert_eq!(c[0].tool, Some(tool));
            assert_eq!(c[0].copy.as_deref(), Some(&copy[ROOT.len() + 1..]));
            assert_eq!(c[0].path, "wiki/concept/Alpha.md");
            assert_eq!(c[0].theirs, OTHER);
            assert!(c[0]
                .mine
                .as_deref()
                .unwrap()
                .contains("This device's version."));
            // Surfaced once: the next pull does not report it again, and the mirror still
            // writes the page's file (only the copy holds the other version).
            assert!(pull(&w, &folder).conflicts.is_empty());
            edit(&w, "Alpha", "This device's version, edited on.\n");
            assert!(mirror(&w, &folder).held.is_empty());

            let c = block_on(w.mirror_conflicts()).unwrap();
            let pick = match choice {
                "mine" => ConflictChoice::Mine,
                "theirs" => ConflictChoice::Theirs,
                _ => ConflictChoice::Merge("---\ntitle: Alpha\n---\nBoth, merged.\n".into()),
            };
            let op =
                block_on(w.resolve_mirror_conflict(&folder, "Alpha", pick, &c[0].theirs)).unwrap();
            assert_eq!(op.is_some(), choice != "mine");
            // The copy is gone (the sync tool takes that to the other devices); the page's file
            // gets the choice.
            assert_eq!(read(&folder, copy), None, "{tool:?} {choice}");
            mirror(&w, &folder);
            let want = match choice {
                "mine" => "This device's version, edited on.",
                "theirs" => "The other device's version.",
                _ => "Both, merged.",
            };
            assert!(
                read(&folder, ALPHA).unwrap().contains(want),
                "{tool:?} {choice}"
            );
            assert!(block_on(w.mirror_conflicts()).unwrap().is_empty());
            let quiet = pull(&w, &folder);
            assert!(
                quiet.op.is_none() && quiet.conflicts.is_empty(),
                "{quiet:?}"
            );
        }
    }
}

#[test]
fn a_copy_decided_elsewhere_or_saying_what_the_page_says_ends_by_itself() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    let (copy, _) = COPIES[0];
    folder.put_outside(copy, OTHER.as_bytes());
    assert_eq!(pull(&w, &folder).conflicts.len(), 1);
    // Decided on the other device: its app removed the copy, and the sync tool removed it here.
    block_on(folder.remove(copy)).unwrap();
    pull(&w, &folder);
    assert!(block_on(w.mirror_conflicts()).unwrap().is_empty());

    // A copy of the version the page has: nothing to decide, and the copy goes.
    let page = block_on(w.page("Alpha")).unwrap().unwrap();
    folder.put_outside(copy, page_file(&page).as_bytes());
    let r = pull(&w, &folder);
    assert!(r.conflicts.is_empty() && r.added.is_empty(), "{r:?}");
    assert_eq!(read(&folder, copy), None);
}

#[test]
fn a_note_named_like_an_icloud_copy_is_a_page() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    // "Alpha 2" begun by a person: not a copy of Alpha's file (its title is its own).
    folder.put_outside(
        "llm-wiki/wiki/concept/Alpha 2.md",
        b"---\ntitle: Alpha 2\n---\nThe sequel.\n",
    );
    folder.put_outside(
        "llm-wiki/wiki/concept/Beta 3.md",
        b"No frontmatter at all.\n",
    );
    let r = pull(&w, &folder);
    assert!(r.conflicts.is_empty(), "{r:?}");
    assert_eq!(r.added, vec!["Alpha 2".to_string(), "Beta 3".to_string()]);
}

#[test]
fn two_copies_of_one_page_are_decided_one_after_the_other() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    let (first, _) = COPIES[0];
    let second = "llm-wiki/wiki/concept/Alpha.sync-conflict-20261205-080000-7ZQYK3M.md";
    folder.put_outside(first, OTHER.as_bytes());
    folder.put_outside(second, b"---\ntitle: Alpha\n---\nA third version.\n");
    let r = pull(&w, &folder);
    assert_eq!(r.conflicts, vec!["Alpha".to_string()]);
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    let c = block_on(w.mirror_conflicts()).unwrap();
    block_on(w.resolve_mirror_conflict(&folder, "Alpha", ConflictChoice::Theirs, &c[0].theirs))
        .unwrap();
    // The waiting copy comes up next.
    let r = pull(&w, &folder);
    assert_eq!(r.conflicts, vec!["Alpha".to_string()], "{r:?}");
    let c = block_on(w.mirror_conflicts()).unwrap();
    assert!(c[0].theirs.contains("A third version."), "{c:?}");
    block_on(w.resolve_mirror_conflict(&folder, "Alpha", ConflictChoice::Mine, &c[0].theirs))
        .unwrap();
    assert_eq!(read(&folder, first), None);
    assert_eq!(read(&folder, second), None);
    let body = block_on(w.page("Alpha")).unwrap().unwrap().body;
    assert!(body.contains("The other device's version."), "{body}");
}

#[test]
fn git_conflict_markers_are_a_conflict_and_never_reach_the_page() {
    for choice in ["mine", "theirs"] {
        let backend = MemoryBackend::new();
        let (w, folder) = mirrored(&backend);
        let marked = "---\ntitle: Alpha\n---\n<<<<<<< HEAD\nFirst.\n=======\nThe other device's version.\n>>>>>>> origin/main\n";
        folder.put_outside(ALPHA, marked.as_bytes());
        let r = pull(&w, &folder);
        assert_eq!(r.conflicts, vec!["Alpha".to_string()], "{r:?}");
        assert!(r.edited.is_empty(), "{r:?}");
        let body = block_on(w.page("Alpha")).unwrap().unwrap().body;
        assert!(!body.contains("<<<<<<<"), "{body}");
        let c = block_on(w.mirror_conflicts()).unwrap();
        assert_eq!(c[0].tool, Some(SyncTool::Git));
        assert_eq!(c[0].copy, None);
        assert_eq!(c[0].theirs, OTHER);
        // The marked file is not written over until the person decides.
        edit(&w, "Alpha", "Edited meanwhile.\n");
        assert_eq!(
            mirror(&w, &folder).held,
            vec!["wiki/concept/Alpha.md".to_string()]
        );
        assert_eq!(read(&folder, ALPHA).unwrap(), marked);
        let pick = if choice == "mine" {
            ConflictChoice::Mine
        } else {
            ConflictChoice::Theirs
        };
        block_on(w.resolve_mirror_conflict(&folder, "Alpha", pick, &c[0].theirs)).unwrap();
        mirror(&w, &folder);
        let file = read(&folder, ALPHA).unwrap();
        assert!(!file.contains("<<<<<<<"), "{file}");
        let want = if choice == "mine" {
            "Edited meanwhile."
        } else {
            "The other device's version."
        };
        assert!(file.contains(want), "{choice}: {file}");
        assert!(pull(&w, &folder).op.is_none());
    }
}

#[test]
fn each_browser_and_wiki_has_its_own_device_id_which_no_export_carries() {
    use llm_wiki::wiki::is_device_id;
    let backend = MemoryBackend::new();
    let w = open(&backend, "w");
    let id = block_on(w.device_id()).unwrap();
    assert!(is_device_id(&id), "{id}");
    // The same from then on, in another connection too.
    assert_eq!(block_on(w.device_id()).unwrap(), id);
    assert_eq!(block_on(open(&backend, "w").device_id()).unwrap(), id);
    // Another wiki, or the same wiki in another browser (an imported vault): another id.
    let other = block_on(open(&backend, "other").device_id()).unwrap();
    assert_ne!(other, id);
    new_page(&w, "Alpha", PageKind::Concept, "First.\n");
    let zip = block_on(w.export_vault()).unwrap();
    let files = llm_wiki::vault_files::zip::read_zip(&zip).unwrap();
    for (path, bytes) in &files {
        assert!(
            !String::from_utf8_lossy(bytes).contains(&id),
            "{path} carries the device id"
        );
    }
    let elsewhere = MemoryBackend::new();
    let copy = open(&elsewhere, "w");
    block_on(copy.import_vault(&zip)).unwrap();
    assert_ne!(block_on(copy.device_id()).unwrap(), id);
}

#[test]
fn the_device_whose_version_went_into_the_copy_is_asked_too() {
    // The usual case: both devices edited Alpha; the sync tool puts the other device's version
    // under Alpha.md and renames this device's into the copy, in one sync.
    for (copy, tool) in COPIES.into_iter().take(2) {
        let backend = MemoryBackend::new();
        let (w, folder) = mirrored(&backend);
        edit(&w, "Alpha", "This device's version.\n");
        mirror(&w, &folder);
        let mine = read(&folder, ALPHA).unwrap();
        folder.put_outside(copy, mine.as_bytes());
        folder.put_outside(ALPHA, OTHER.as_bytes());
        let r = pull(&w, &folder);
        assert_eq!(r.conflicts, vec!["Alpha".to_string()], "{tool:?}: {r:?}");
        assert_eq!(
            read(&folder, copy).as_deref(),
            Some(mine.as_str()),
            "{tool:?}"
        );
        let c = block_on(w.mirror_conflicts()).unwrap();
        assert_eq!(c[0].theirs, mine);
        assert!(
            c[0].mine.as_deref().unwrap().contains("other device's"),
            "{c:?}"
        );
        // Keeping the copy's version brings this device's text back.
        block_on(w.resolve_mirror_conflict(&folder, "Alpha", ConflictChoice::Theirs, &mine))
            .unwrap();
        let body = block_on(w.page("Alpha")).unwrap().unwrap().body;
        assert!(body.contains("This device's version."), "{body}");
        assert_eq!(read(&folder, copy), None);
    }
}

#[test]
fn a_copy_conflict_is_not_replaced_by_a_later_change_to_the_page_file() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    let (copy, _) = COPIES[1]; // sorts before Alpha.md
    folder.put_outside(copy, OTHER.as_bytes());
    edit(&w, "Alpha", "This device's version.\n");
    folder.put_outside(ALPHA, b"---\ntitle: Alpha\n---\nEdited in the folder.\n");
    let r = pull(&w, &folder);
    assert_eq!(r.conflicts, vec!["Alpha".to_string()], "{r:?}");
    // Whichever came first, one waits and nothing is lost: decide the one shown, then the
    // other comes up.
    let first = block_on(w.mirror_conflicts()).unwrap();
    assert_eq!(first.len(), 1);
    block_on(w.resolve_mirror_conflict(&folder, "Alpha", ConflictChoice::Theirs, &first[0].theirs))
        .unwrap();
    let r = pull(&w, &folder);
    assert_eq!(r.conflicts, vec!["Alpha".to_string()], "{r:?}");
    let second = block_on(w.mirror_conflicts()).unwrap();
    assert_ne!(second[0].theirs, first[0].theirs);
    let seen: Vec<&str> = [&first[0].theirs, &second[0].theirs]
        .iter()
        .map(|t| t.as_str())
        .collect();
    assert!(seen.contains(&OTHER), "{seen:?}");
    assert!(
        seen.iter().any(|t| t.contains("Edited in the folder.")),
        "{seen:?}"
    );
}

#[test]
fn a_copy_under_another_case_or_of_a_deleted_page_loses_nothing() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    // Another case: not Alpha's file by its exact name, so not taken (and not a page either).
    let lower = "llm-wiki/wiki/concept/alpha.sync-conflict-20261204-213045-7ZQYK3M.md";
    folder.put_outside(lower, OTHER.as_bytes());
    let r = pull(&w, &folder);
    assert!(r.conflicts.is_empty() && r.added.is_empty(), "{r:?}");
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    assert_eq!(block_on(w.all_pages()).unwrap().len(), 2);
    // The page deleted in the app: keeping "this app's version" would throw the only one away.
    let (copy, _) = COPIES[0];
    folder.put_outside(copy, OTHER.as_bytes());
    assert_eq!(pull(&w, &folder).conflicts.len(), 1);
    block_on(w.delete_page("Alpha")).unwrap();
    let e = block_on(w.resolve_mirror_conflict(&folder, "Alpha", ConflictChoice::Mine, OTHER))
        .unwrap_err();
    assert!(matches!(e, llm_wiki::Error::NotFound(_)), "{e:?}");
    assert!(read(&folder, copy).is_some());
    block_on(w.resolve_mirror_conflict(&folder, "Alpha", ConflictChoice::Theirs, OTHER)).unwrap();
    assert!(block_on(w.page("Alpha")).unwrap().is_some());
}

#[test]
fn a_merge_with_markers_left_in_is_refused_and_a_fenced_example_is_no_conflict() {
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    let (copy, _) = COPIES[0];
    folder.put_outside(copy, OTHER.as_bytes());
    pull(&w, &folder);
    let left =
        "---\ntitle: Alpha\n---\n<<<<<<< this app\nFirst.\n=======\nOther.\n>>>>>>> the folder\n";
    let e = block_on(w.resolve_mirror_conflict(
        &folder,
        "Alpha",
        ConflictChoice::Merge(left.into()),
        OTHER,
    ))
    .unwrap_err();
    assert!(matches!(e, llm_wiki::Error::InvalidInput(_)), "{e:?}");
    assert_eq!(block_on(w.mirror_conflicts()).unwrap().len(), 1);
    // A page that shows a conflict in a code block, edited in the folder: an edit.
    let shown = "---\ntitle: Beta\n---\nA conflict looks like this:\n\n```text\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> main\n```\n";
    folder.put_outside("llm-wiki/wiki/entity/Beta.md", shown.as_bytes());
    let r = pull(&w, &folder);
    assert_eq!(r.edited, vec!["Beta".to_string()], "{r:?}");
    let body = block_on(w.page("Beta")).unwrap().unwrap().body;
    assert!(body.contains("<<<<<<< HEAD\nours\n"), "{body}");
}

#[test]
fn no_api_key_or_secret_header_ever_enters_the_folder() {
    use llm_wiki::llm::config::{Config, Provider, Secret};
    let backend = MemoryBackend::new();
    let (w, folder) = mirrored(&backend);
    let key = "sk-test-KEY-that-must-stay-home";
    let header = "secret-header-value-that-must-stay-home";
    let mut config = Config {
        provider: Provider::OpenAiCompatible,
        base_url: "http://127.0.0.1:1/v1".into(),
        model: "m".into(),
        api_key: Some(Secret::new(key)),
        ..Config::default()
    };
    config
        .secret_headers
        .insert("x-api-token".into(), Secret::new(header));
    // Saved (an operation the next run writes a file for), then changed again, mirrored each time.
    block_on(w.set_llm_config(config.clone())).unwrap();
    mirror(&w, &folder);
    config.model = "m2".into();
    block_on(w.set_llm_config(config)).unwrap();
    edit(&w, "Alpha", "After the settings.\n");
    let run = mirror(&w, &folder);
    assert!(!run.written.is_empty());
    let files = folder.snapshot();
    // The settings themselves are there (so the check below looks where they went).
    assert!(
        files
            .values()
            .any(|b| String::from_utf8_lossy(b).contains("\"model\":\"m2\"")),
        "{:?}",
        files.keys()
    );
    for (path, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains(key), "{path} holds the API key");
        assert!(!text.contains(header), "{path} holds a secret header");
    }
}

#[test]
fn a_second_device_joins_and_neither_writes_the_others_files() {
    use llm_wiki::model::{op_slot, OperationKind};
    let (ba, bb, bc) = (
        MemoryBackend::new(),
        MemoryBackend::new(),
        MemoryBackend::new(),
    );
    let (a, folder) = mirrored(&ba);
    let a_model = block_on(a.llm_config()).unwrap().model;
    let b = common::join(&bb, "b", &folder);
    let slot = block_on(b.device_slot()).unwrap();
    assert_ne!(slot, 0);
    // The joined wiki is the folder's.
    assert_eq!(
        block_on(b.page("Alpha")).unwrap().unwrap().body,
        block_on(a.page("Alpha")).unwrap().unwrap().body
    );
    folder.take_log();
    let written_by = |w: &W, who: &str, seen: &mut Vec<(String, String)>| {
        mirror(w, &folder);
        let (written, removed) = folder.take_log();
        for p in written.into_iter().chain(removed) {
            seen.push((p, who.to_string()));
        }
    };
    let mut seen = Vec::new();
    for i in 0..3 {
        new_page(&a, &format!("A {i}"), PageKind::Entity, "From A.\n");
        written_by(&a, "a", &mut seen);
        new_page(&b, &format!("B {i}"), PageKind::Entity, "From B.\n");
        let mut cfg = block_on(b.llm_config()).unwrap();
        cfg.model = format!("b-model-{i}");
        block_on(b.set_llm_config(cfg)).unwrap();
        written_by(&b, "b", &mut seen);
    }
    // No file but the derived ones (index.md, log.md) is written by both devices.
    let mut writers: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
        Default::default();
    for (p, who) in &seen {
        writers.entry(p).or_default().insert(who);
    }
    for (p, who) in &writers {
        if who.len() > 1 {
            assert!(
                p.ends_with("/index.md") || p.ends_with("/log.md"),
                "{p} written by both devices"
            );
        }
    }
    // Their operation ids never collide: A's in slot 0, B's in its own.
    let ids = |w: &W| -> Vec<u64> {
        block_on(w.operations())
            .unwrap()
            .iter()
            .filter(|o| o.kind != OperationKind::Import)
            .map(|o| o.id)
            .collect()
    };
    let (ia, ib) = (ids(&a), ids(&b));
    assert!(ia.iter().all(|id| op_slot(*id) == 0), "{ia:?}");
    let own: Vec<&u64> = ib.iter().filter(|id| op_slot(**id) == slot).collect();
    assert_eq!(own.len(), 6, "{ib:?}");
    assert!(own.iter().all(|id| !ia.contains(id)));
    // A's settings stayed A's.
    assert_eq!(block_on(a.llm_config()).unwrap().model, a_model);
    // The folder holds both devices' work: a wiki imported from it has every page of both.
    let c = open(&bc, "c");
    let report = block_on(c.import_folder(&folder, MIRROR_ROOT)).unwrap();
    assert!(report.skipped.is_empty(), "{report:?}");
    assert!(report.edited_pages.is_empty(), "{report:?}");
    for key in ["Alpha", "Beta", "A 0", "A 2", "B 0", "B 2"] {
        assert!(block_on(c.page(key)).unwrap().is_some(), "{key} missing");
    }
    let all = ids(&c);
    for id in ia
        .iter()
        .chain(&own.into_iter().copied().collect::<Vec<_>>())
    {
        assert!(all.contains(id), "operation {id} missing from {all:?}");
    }
    // In the total order: by time, then device.
    let times: Vec<i64> = block_on(c.operations())
        .unwrap()
        .iter()
        .map(|o| o.time)
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
}

#[test]
fn a_picked_folder_says_which_wiki_it_holds_and_whether_it_may_be_joined() {
    let (ba, bb, bc) = (
        MemoryBackend::new(),
        MemoryBackend::new(),
        MemoryBackend::new(),
    );
    let (a, folder) = mirrored(&ba);
    let check = block_on(a.mirror_joinable(&folder)).unwrap();
    assert!(!check.empty && !check.inside);
    assert_eq!(check.wikis.len(), 1);
    assert_eq!(check.wikis[0].root, common::MIRROR_ROOT);
    assert!(check.wikis[0].own, "A's own mirror is not another wiki");
    // A new browser profile: an empty wiki, and the folder's wiki is another device's.
    let b = common::open(&bb, "b");
    let check = block_on(b.mirror_joinable(&folder)).unwrap();
    assert!(check.empty);
    assert_eq!((check.wikis[0].own, check.wikis[0].devices), (false, 1));
    drop(b);
    let b = common::join(&bb, "b", &folder);
    let check = block_on(b.mirror_joinable(&folder)).unwrap();
    assert!(!check.empty && check.wikis[0].own);
    mirror(&a, &folder);
    let c = common::open(&bc, "c");
    assert_eq!(
        block_on(c.mirror_joinable(&folder)).unwrap().wikis[0].devices,
        2
    );
    // Another wiki, whose operation ids are the same numbers: not this one.
    let bd = MemoryBackend::new();
    // (made at other times: the test clock of `common::open` stands still)
    let d = block_on(llm_wiki::wiki::Wiki::open(
        &bd,
        "d",
        llm_wiki::clock::ManualClock::new(1_795_990_000_000),
        llm_wiki::storage::OpenOptions::default(),
    ))
    .unwrap();
    for title in ["One", "Two", "Three", "Four", "Five"] {
        new_page(&d, title, PageKind::Concept, "Another wiki's page.\n");
    }
    let check = block_on(d.mirror_joinable(&folder)).unwrap();
    assert!(!check.empty && !check.wikis[0].own, "{check:?}");
    // Nor when the folder's arrays are missing (damaged, still arriving): an id alone does
    // not tell, and that wiki cannot take the folder; A, whose folder is there, still can.
    let ops = "llm-wiki/.llm-wiki/operations.json";
    let arrays = block_on(folder.read(ops)).unwrap().unwrap();
    block_on(folder.remove(ops)).unwrap();
    assert!(!block_on(d.mirror_joinable(&folder)).unwrap().wikis[0].own);
    assert!(block_on(d.mirror_take(&folder, common::MIRROR_ROOT)).is_err());
    assert!(block_on(a.mirror_joinable(&folder)).unwrap().wikis[0].own);
    block_on(folder.write(ops, &arrays)).unwrap();
    // A folder picked inside the mirror (the wiki's own folder) says so.
    let inner = MemoryFolder::new();
    for e in block_on(folder.list(common::MIRROR_ROOT)).unwrap() {
        let bytes = block_on(folder.read(&e.path)).unwrap().unwrap();
        let path = &e.path[common::MIRROR_ROOT.len() + 1..];
        block_on(inner.write(path, &bytes)).unwrap();
    }
    let check = block_on(c.mirror_joinable(&inner)).unwrap();
    assert!(check.inside && check.wikis.is_empty());
}

#[test]
fn a_third_device_joins_after_one_with_no_operation_wrote_the_whole_wiki() {
    let (ba, bb, bc) = (
        MemoryBackend::new(),
        MemoryBackend::new(),
        MemoryBackend::new(),
    );
    let (a, folder) = mirrored(&ba);
    let b = common::join(&bb, "b", &folder);
    // A changes a page; B merges it. The folder then loses the manifest (emptied, moved back
    // by hand), and B, with no operation of its own yet, writes the whole wiki again.
    edit(&a, "Alpha", "A's change.\n");
    mirror(&a, &folder);
    assert!(!pull(&b, &folder).merged.is_empty());
    block_on(folder.remove("llm-wiki/.llm-wiki/vault.json")).unwrap();
    mirror(&b, &folder);
    // A third device takes it up (its import holds the operations the folder's arrays
    // hold), and A still knows the folder as its own.
    let c = common::join(&bc, "c", &folder);
    assert!(block_on(c.page("Alpha")).unwrap().is_some());
    let check = block_on(a.mirror_joinable(&folder)).unwrap();
    assert!(check.wikis[0].own);
}

#[test]
fn sync_tools_copies_of_index_and_log_are_removed_and_nothing_else() {
    let ba = MemoryBackend::new();
    let (a, folder) = mirrored(&ba);
    let at = |p: &str| format!("{MIRROR_ROOT}/{p}");
    let index = read(&folder, &at("index.md")).unwrap();
    let log = read(&folder, &at("log.md")).unwrap();
    let copies = [
        (
            "index.sync-conflict-20261204-213045-7ZQYK3M.md",
            index.clone(),
        ),
        ("log (Jane's conflicted copy 2026-12-04).md", log.clone()),
        ("index 2.md", index.clone()),
    ];
    let kept = [
        // Not a copy of the app's log: a note someone named so.
        ("log 2.md", "# My log\nNot the app's.\n".to_string()),
        // A copy of a file that is not the app's document.
        (
            "notes.sync-conflict-20261204-213045-7ZQYK3M.md",
            "x\n".to_string(),
        ),
    ];
    for (p, text) in copies.iter().chain(&kept) {
        block_on(folder.write(&at(p), text.as_bytes())).unwrap();
    }
    let ops = block_on(a.operations()).unwrap().len();
    let report = pull(&a, &folder);
    for (p, _) in &copies {
        assert!(read(&folder, &at(p)).is_none(), "{p} left");
    }
    for (p, _) in &kept {
        assert!(read(&folder, &at(p)).is_some(), "{p} removed");
    }
    assert_eq!(report.op, None);
    assert_eq!(block_on(a.operations()).unwrap().len(), ops);
}
