//! Markdown and the vault on MemoryStorage: page views and backlinks, attachments, rename and
//! delete, export/import (field cases F05, F15, F18, F20 end to end).
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};

use futures::executor::block_on;
use llm_wiki::markdown::frontmatter;
use llm_wiki::model::{Author, OperationKind, PageKind};
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{Batch, Expect, Storage, Store};
use llm_wiki::vault::VaultKind;
use llm_wiki::wiki::{NewSource, PageEdit};
use llm_wiki::Error;

mod common;

use common::{new_page, open, populated, W};

fn body(w: &W, key: &str) -> String {
    block_on(w.page(key)).unwrap().unwrap().body
}

fn unzip(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut a = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    let mut out = BTreeMap::new();
    for i in 0..a.len() {
        let mut f = a.by_index(i).unwrap();
        let mut data = Vec::new();
        f.read_to_end(&mut data).unwrap();
        out.insert(f.name().to_string(), data);
    }
    out
}

fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in files {
        w.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

fn text(files: &BTreeMap<String, Vec<u8>>, path: &str) -> String {
    String::from_utf8(
        files
            .get(path)
            .unwrap_or_else(|| panic!("{path} missing"))
            .clone(),
    )
    .unwrap()
}

#[test]
fn export_import_export_is_byte_identical() {
    let backend = MemoryBackend::new();
    let w = populated(&backend, "source-wiki");
    let first = block_on(w.export_vault()).unwrap();
    assert_eq!(
        block_on(w.export_vault()).unwrap(),
        first,
        "export is deterministic"
    );

    let files = unzip(&first);
    let paths: Vec<&str> = files.keys().map(String::as_str).collect();
    for expected in [
        "index.md",
        "log.md",
        "schema.md",
        "wiki/concept/人工智能.md",
        "wiki/concept/机器学习 (ML).md",
        "wiki/concept/Rust： Ownership.md",
        "raw/assets/diagram.png",
        ".llm-wiki/vault.json",
        ".llm-wiki/revisions.json",
        ".llm-wiki/config.json",
    ] {
        assert!(paths.contains(&expected), "{expected} not in {paths:?}");
    }
    assert!(!paths.iter().any(|p| p.contains("Temp")), "{paths:?}");
    assert_eq!(
        paths.iter().filter(|p| p.starts_with("raw/text/")).count(),
        3
    );
    assert_eq!(
        paths
            .iter()
            .filter(|p| p.starts_with("raw/original/") && p.ends_with(".html"))
            .count(),
        1
    );
    // Never the API key; the rest of the config travels.
    let all: Vec<u8> = files.values().flatten().copied().collect();
    assert!(!String::from_utf8_lossy(&all).contains("sk-SECRET"));
    assert!(text(&files, ".llm-wiki/config.json").contains("\"maxOutputTokens\":1024"));
    // Claims and ledger records follow the renamed page.
    assert!(text(&files, ".llm-wiki/claims.json").contains("\"page\":\"机器学习 (ML)\""));
    assert!(text(&files, ".llm-wiki/ledger.json").contains("\"机器学习 (ML)\""));
    // One frontmatter block, known fields first, unknown ones after, body exactly.
    assert_eq!(
        text(&files, "wiki/concept/人工智能.md"),
        "---\ntitle: 人工智能\naliases:\n  - Artificial Intelligence\ntags:\n  - ai\nsummary: \"Machines that learn: an overview\"\ncssclass: wide\n---\n## 概述\n见 [[机器学习 (ML)]]。\n\n![[diagram.png]]\n"
    );

    let backend2 = MemoryBackend::new();
    let copy = open(&backend2, "copy");
    let report = block_on(copy.import_vault(&first)).unwrap();
    assert_eq!(report.kind, Some(VaultKind::LlmWiki));
    assert_eq!(report.op, None, "an unchanged vault adds no operation");
    assert_eq!(report.pages, 3);
    let second = block_on(copy.export_vault()).unwrap();
    assert!(first == second, "export → import → export differs");

    // Everything is really back, not just the bytes.
    assert_eq!(
        block_on(copy.pages()).unwrap(),
        block_on(w.pages()).unwrap()
    );
    assert_eq!(
        block_on(copy.sources()).unwrap(),
        block_on(w.sources()).unwrap()
    );
    assert_eq!(
        block_on(copy.operations()).unwrap(),
        block_on(w.operations()).unwrap()
    );
    assert_eq!(
        block_on(copy.history("机器学习 (ML)")).unwrap(),
        block_on(w.history("机器学习 (ML)")).unwrap()
    );
    assert_eq!(block_on(copy.log()).unwrap(), block_on(w.log()).unwrap());
    let src = block_on(copy.source("https://example.org/ai"))
        .unwrap()
        .unwrap();
    let original = src.source.original.clone().unwrap();
    assert_eq!(
        block_on(copy.original(&original.sha256)).unwrap().unwrap(),
        b"<html><body>original</body></html>"
    );
    let view = block_on(copy.page_view("人工智能")).unwrap().unwrap();
    assert_eq!(view.assets.len(), 1);
    assert_eq!(
        block_on(copy.asset_bytes(&view.assets[0].sha256))
            .unwrap()
            .unwrap(),
        b"\x89PNG fake"
    );
    // The op counter continues where the exported wiki stopped.
    let counter: serde_json::Value = serde_json::from_slice(
        &block_on(w.storage().get(Store::Meta, "ops"))
            .unwrap()
            .unwrap()
            .data,
    )
    .unwrap();
    let next = block_on(copy.set_schema("# mine\n")).unwrap();
    assert_eq!(next.id, counter["last"].as_u64().unwrap() + 1);
}

#[test]
fn a_vault_of_ours_goes_only_into_an_empty_wiki() {
    let backend = MemoryBackend::new();
    let w = populated(&backend, "a");
    let zip = block_on(w.export_vault()).unwrap();
    let err = block_on(w.import_vault(&zip)).unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    // Tampered files are refused, and nothing is written.
    let mut files = unzip(&zip);
    let text_path = files
        .keys()
        .find(|p| p.starts_with("raw/text/"))
        .unwrap()
        .clone();
    files.insert(text_path, b"tampered".to_vec());
    let tampered: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    let empty = open(&MemoryBackend::new(), "b");
    let err = block_on(empty.import_vault(&zip_of(&tampered))).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(m) if m.contains("SHA-256")));
    assert!(block_on(empty.pages()).unwrap().is_empty());
    assert!(block_on(empty.operations()).unwrap().is_empty());
}

#[test]
fn f20_pages_edited_in_obsidian_come_back_as_human_revisions() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "f20");
    new_page(&w, "Tokio", PageKind::Entity, "Runtime.\n");
    new_page(&w, "Gone", PageKind::Concept, "Bye.\n");
    let zip = block_on(w.export_vault()).unwrap();
    let mut files = unzip(&zip);
    // The five frontmatter shapes of F20, as a person might leave them in Obsidian.
    let shapes = [
        ("wiki/concept/N1.md", "---\ntags: rust, async\n---\nOne\n"),
        ("wiki/concept/N2.md", "---\ntags: [rust, async]\n---\nTwo\n"),
        ("wiki/concept/N3.md", "---\ntags:\n  - rust\n  - \"#async\"\n---\nThree\n"),
        ("wiki/concept/N4.md", "---\ntag: rust\n---\nFour\n"),
        (
            "wiki/entity/Tokio.md",
            "---\ntitle: Tokio\naliases: Tokio runtime\ntags:\ncustom_field: {a: 1}\n---\nRuntime, edited.\n",
        ),
    ];
    for (path, body) in shapes {
        files.insert(path.to_string(), body.as_bytes().to_vec());
    }
    files.remove("wiki/concept/Gone.md");
    let edited: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();

    let copy = open(&MemoryBackend::new(), "copy");
    let report = block_on(copy.import_vault(&zip_of(&edited))).unwrap();
    let mut changed = report.edited_pages.clone();
    changed.sort();
    assert_eq!(changed, vec!["Gone", "N1", "N2", "N3", "N4", "Tokio"]);
    let op = report.op.expect("an import operation");
    let ops = block_on(copy.operations()).unwrap();
    assert_eq!(ops.last().unwrap().kind, OperationKind::Import);
    assert_eq!(ops.last().unwrap().id, op);

    let tags = |k: &str| block_on(copy.page(k)).unwrap().unwrap().tags;
    let both = vec!["rust".to_string(), "async".to_string()];
    assert_eq!(tags("N1"), both);
    assert_eq!(tags("N2"), both);
    assert_eq!(tags("N3"), both);
    assert_eq!(tags("N4"), vec!["rust".to_string()]);
    let tokio = block_on(copy.page("Tokio")).unwrap().unwrap();
    assert_eq!(tokio.aliases, vec!["Tokio runtime".to_string()]);
    assert!(tokio.tags.is_empty());
    assert_eq!(tokio.body, "Runtime, edited.\n");
    assert_eq!(tokio.revision, 2);
    let history = block_on(copy.history("Tokio")).unwrap();
    assert_eq!(history.last().unwrap().author, Author::Human);
    assert_eq!(history.last().unwrap().op, op);
    assert!(block_on(copy.page("Gone")).unwrap().is_none());
    assert!(block_on(copy.history("Gone"))
        .unwrap()
        .last()
        .unwrap()
        .page_state
        .is_none());
    assert!(block_on(copy.index()).unwrap().contains("[[N1]]"));

    // Export writes tags as block lists without '#', and the unknown field unchanged.
    let out = unzip(&block_on(copy.export_vault()).unwrap());
    assert_eq!(
        text(&out, "wiki/concept/N3.md"),
        "---\ntitle: N3\ntags:\n  - rust\n  - async\n---\nThree\n"
    );
    assert_eq!(
        text(&out, "wiki/entity/Tokio.md"),
        "---\ntitle: Tokio\naliases:\n  - Tokio runtime\ncustom_field: {a: 1}\n---\nRuntime, edited.\n"
    );
    // ...and that export round-trips exactly again.
    let third = open(&MemoryBackend::new(), "third");
    let again = block_on(copy.export_vault()).unwrap();
    assert_eq!(block_on(third.import_vault(&again)).unwrap().op, None);
    assert!(block_on(third.export_vault()).unwrap() == again);
}

const RUST_MD: &str = "# Rust\n## Ownership\nMove semantics. ^own1\n";
const NOTES_MD: &str = "[[Rust|the Rust language]] [[Rust#Ownership]] [[Rust#^own1]] ![[Rust#Ownership]] ![[diagram.png]] [[Rust.md]]\n\n| Lang | Note |\n|---|---|\n| [[Rust\\|Rust lang]] | fast |\n";
const BAD_MD: &str = "[[Rust#No such heading]] [[Missing page]] ![[missing.png]] [[Rust\\]]";

#[test]
fn f15_and_f20_a_plain_obsidian_vault_comes_in_as_sources() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "obsidian");
    let zip = zip_of(&[
        ("MyVault/.obsidian/app.json", b"{}"),
        ("MyVault/Rust.md", RUST_MD.as_bytes()),
        ("MyVault/Notes.md", NOTES_MD.as_bytes()),
        ("MyVault/Bad.md", BAD_MD.as_bytes()),
        ("MyVault/assets/diagram.png", b"\x89PNG diagram"),
        ("MyVault/f20/1.md", b"---\ntags: rust, async\n---\nOne\n"),
        ("MyVault/f20/2.md", b"---\ntags: [rust, async]\n---\nTwo\n"),
        ("MyVault/f20/3.md", b"---\ntags:\n  - rust\n  - \"#async\"\n---\nThree\n"),
        ("MyVault/f20/4.md", b"---\ntag: rust\n---\nFour\n"),
        (
            "MyVault/f20/5.md",
            b"---\ntitle: Tokio notes\naliases: Tokio runtime\ntags:\ncustom_field: {a: 1}\n---\nFive\n",
        ),
    ]);
    let report = block_on(w.import_vault(&zip)).unwrap();
    assert_eq!(report.kind, Some(VaultKind::Obsidian));
    assert_eq!(report.sources_added.len(), 8);
    assert_eq!(report.assets, vec!["diagram.png".to_string()]);
    assert_eq!(
        report.skipped,
        vec![".obsidian/app.json: hidden".to_string()]
    );
    let sources = block_on(w.sources()).unwrap();
    let keys: Vec<&str> = sources.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(
        keys,
        vec![
            "Bad.md", "Notes.md", "Rust.md", "f20/1.md", "f20/2.md", "f20/3.md", "f20/4.md",
            "f20/5.md"
        ]
    );
    assert!(sources.iter().all(|s| s.mime == "text/markdown"));
    let title = |k: &str| sources.iter().find(|s| s.key == k).unwrap().title.clone();
    assert_eq!(title("Notes.md"), "Notes");
    assert_eq!(title("f20/5.md"), "Tokio notes");
    // The note text is kept verbatim (sources are immutable); its frontmatter reads in every shape.
    let fm = |k: &str| {
        let t = block_on(w.source(k)).unwrap().unwrap().text;
        let (yaml, _) = frontmatter::split(&t).unwrap();
        frontmatter::parse_yaml(yaml).unwrap()
    };
    let both = Some(vec!["rust".to_string(), "async".to_string()]);
    for k in ["f20/1.md", "f20/2.md", "f20/3.md"] {
        assert_eq!(fm(k).tags, both, "{k}");
    }
    assert_eq!(fm("f20/4.md").tags, Some(vec!["rust".to_string()]));
    let five = fm("f20/5.md");
    assert_eq!(five.aliases, Some(vec!["Tokio runtime".to_string()]));
    assert_eq!(five.tags.unwrap_or_default(), Vec::<String>::new());
    assert_eq!(five.extra, "custom_field: {a: 1}\n");
    assert_eq!(
        block_on(w.source("Notes.md")).unwrap().unwrap().text,
        NOTES_MD
    );

    // Importing the same vault again changes nothing and writes no operation.
    let ops = block_on(w.operations()).unwrap().len();
    let again = block_on(w.import_vault(&zip)).unwrap();
    assert_eq!(again.sources_unchanged.len(), 8);
    assert_eq!(again.op, None);
    assert_eq!(block_on(w.operations()).unwrap().len(), ops);
}

#[test]
fn f15_writer_and_viewer_on_the_field_vault() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "f15");
    block_on(w.add_attachment("diagram.png", "image/png", b"\x89PNG")).unwrap();
    new_page(&w, "Rust", PageKind::Concept, RUST_MD);
    new_page(&w, "Notes", PageKind::Overview, NOTES_MD);
    new_page(&w, "Bad", PageKind::Overview, BAD_MD);
    // The compiled page: the table pipe is escaped when stored, the prose pipe is not.
    let compiled = new_page(
        &w,
        "Languages",
        PageKind::Comparison,
        "| Lang | Note |\n|---|---|\n| [[Rust|Rust lang]] | fast |\n\nSee [[Rust|Rust lang]].\n",
    );
    assert_eq!(
        body(&w, &compiled),
        "| Lang | Note |\n|---|---|\n| [[Rust\\|Rust lang]] | fast |\n\nSee [[Rust|Rust lang]].\n"
    );
    let view = block_on(w.page_view(&compiled)).unwrap().unwrap();
    assert_eq!(view.html.matches("<td>").count(), 2, "{}", view.html);
    // Rust is not an orphan; Notes has no broken links; Bad's problems are reported.
    let backlinks = block_on(w.backlinks("Rust")).unwrap();
    assert_eq!(backlinks, vec!["Bad", "Languages", "Notes"]);
    let notes = block_on(w.page_view("Notes")).unwrap().unwrap();
    assert!(
        notes.missing.is_empty() && notes.malformed.is_empty(),
        "{notes:?}"
    );
    assert_eq!(notes.assets.len(), 1);
    let bad = block_on(w.page_view("Bad")).unwrap().unwrap();
    assert_eq!(
        bad.missing,
        vec!["Missing page".to_string(), "missing.png".to_string()]
    );
    assert_eq!(bad.malformed, vec!["[[Rust\\]]".to_string()]);
    let rust = block_on(w.page_view("rust")).unwrap().unwrap();
    assert_eq!(
        rust.backlinks
            .iter()
            .map(|b| b.key.as_str())
            .collect::<Vec<_>>(),
        vec!["Bad", "Languages", "Notes"]
    );
}

#[test]
fn f18_cjk_titles_keys_and_links() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "f18");
    let ai = block_on(w.put_page(PageEdit {
        title: Some("人工智能".into()),
        aliases: Some(vec!["Artificial Intelligence".into()]),
        body: Some("AI.\n".into()),
        ..Default::default()
    }))
    .unwrap();
    let ml = new_page(&w, "机器学习", PageKind::Concept, "## 监督学习\n");
    let ja = new_page(&w, "日本語", PageKind::Concept, "");
    let zh = new_page(&w, "中文", PageKind::Concept, "");
    assert_eq!(
        (ai.key.as_str(), ml.as_str(), ja.as_str(), zh.as_str()),
        ("人工智能", "机器学习", "日本語", "中文")
    );
    let note = new_page(
        &w,
        "Note",
        PageKind::Overview,
        "[[人工智能]] [[人工智能|AI]] [[机器学习#监督学习]] [[Artificial Intelligence]] [[Deep Learning]]",
    );
    let view = block_on(w.page_view(&note)).unwrap().unwrap();
    assert_eq!(view.missing, vec!["Deep Learning".to_string()]);
    assert_eq!(
        view.html.matches("class=\"wikilink\"").count(),
        4,
        "{}",
        view.html
    );
    assert_eq!(
        block_on(w.backlinks("人工智能")).unwrap(),
        vec!["Note".to_string()]
    );
    // A second page with the same title gets a stable, distinct key.
    let twin = new_page(&w, "人工智能", PageKind::Entity, "");
    assert!(
        twin.starts_with("人工智能 ~") && twin != "人工智能",
        "{twin}"
    );
}

#[test]
fn f05_llm_style_bodies_are_stored_with_one_frontmatter_block() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "f05");
    let cases = [
        (
            "A",
            "```markdown\n---\ntitle: Tokio\n---\n# Tokio\nSee [[Rust]].\n```",
            "# Tokio\nSee [[Rust]].\n",
        ),
        (
            "B",
            "```yaml\n---\ntitle: Tokio\n---\n```\n# Tokio\nSee [[Rust]].",
            "# Tokio\nSee [[Rust]].",
        ),
        (
            "C",
            "---\ntitle: Tokio\ntags: [rust]\n---\n# Tokio",
            "# Tokio",
        ),
        (
            "E",
            "# Syntax\nExample:\n```markdown\n[[Link]]\n```",
            "# Syntax\nExample:\n```markdown\n[[Link]]\n```",
        ),
    ];
    for (title, raw, stored) in cases {
        let key = new_page(&w, title, PageKind::Concept, raw);
        assert_eq!(body(&w, &key), stored, "{title}");
    }
    // C's tags came from its frontmatter.
    assert_eq!(
        block_on(w.page("C")).unwrap().unwrap().tags,
        vec!["rust".to_string()]
    );
    for title in ["Rust: Ownership and Borrowing", "Tom's \"Quick\" Notes"] {
        new_page(&w, title, PageKind::Concept, "x\n");
    }
    let files = unzip(&block_on(w.export_vault()).unwrap());
    for (path, data) in files.iter().filter(|(p, _)| p.starts_with("wiki/")) {
        let file = String::from_utf8(data.clone()).unwrap();
        assert!(file.starts_with("---\n"), "{path}");
        let (yaml, rest) = frontmatter::split(&file).unwrap();
        assert!(
            frontmatter::split(rest.trim_start()).is_none(),
            "{path} has two blocks"
        );
        if !path.ends_with("/E.md") {
            assert!(!file.contains("```"), "{path} has a stray fence");
        }
        let doc = &yaml_rust2::YamlLoader::load_from_str(yaml).unwrap()[0];
        let title = doc["title"].as_str().unwrap();
        assert!(
            block_on(w.pages())
                .unwrap()
                .iter()
                .any(|p| p.title == title),
            "{title}"
        );
    }
    assert!(files.contains_key("wiki/concept/Rust： Ownership and Borrowing.md"));
    assert!(files.contains_key("wiki/concept/Tom's ＂Quick＂ Notes.md"));
}

#[test]
fn rename_rewrites_every_backlink_in_one_operation() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "rename");
    block_on(w.put_page(PageEdit {
        title: Some("Rust".into()),
        aliases: Some(vec!["Rust lang".into()]),
        body: Some("## Ownership\nSee [[#Ownership]] and [[Rust#Ownership]].\n".into()),
        ..Default::default()
    }))
    .unwrap();
    let a = new_page(
        &w,
        "A",
        PageKind::Concept,
        "[[Rust]] [[rust|my words]] [[Rust#Ownership|Rust]] ![[Rust]] [[Rust lang]] `[[Rust]]`\n\n| x | y |\n|---|---|\n| [[Rust\\|R]] | [[Rust]] |\n",
    );
    let b = new_page(&w, "B", PageKind::Concept, "Nothing here.\n");
    let ops_before = block_on(w.operations()).unwrap().len();
    let report = block_on(w.rename_page("Rust", "Rust: The Language")).unwrap();
    assert_eq!(report.old_key, "Rust");
    assert_eq!(report.page.key, "Rust： The Language");
    assert_eq!(report.page.title, "Rust: The Language");
    assert_eq!(report.rewritten, vec![a.clone()]);
    assert_eq!(
        block_on(w.operations()).unwrap().len(),
        ops_before + 1,
        "one operation"
    );
    assert_eq!(
        body(&w, &a),
        "[[Rust： The Language|Rust: The Language]] [[Rust： The Language|my words]] [[Rust： The Language#Ownership|Rust: The Language]] ![[Rust： The Language|Rust: The Language]] [[Rust lang]] `[[Rust]]`\n\n| x | y |\n|---|---|\n| [[Rust： The Language\\|R]] | [[Rust： The Language\\|Rust: The Language]] |\n"
    );
    assert_eq!(body(&w, &b), "Nothing here.\n");
    assert_eq!(
        body(&w, "Rust： The Language"),
        "## Ownership\nSee [[#Ownership]] and [[Rust： The Language#Ownership|Rust: The Language]].\n"
    );
    assert!(block_on(w.page("Rust")).unwrap().is_none());
    // History moved with the page; the old key's history ends with a revision without state.
    let history = block_on(w.history("Rust： The Language")).unwrap();
    assert_eq!(
        history.iter().map(|r| r.number).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(
        history[1].page_state.as_ref().unwrap().title,
        "Rust: The Language"
    );
    let old = block_on(w.history("Rust")).unwrap();
    assert!(old.last().unwrap().page_state.is_none());
    assert_eq!(
        block_on(w.backlinks("Rust： The Language")).unwrap(),
        vec![a.clone()]
    );
    assert!(block_on(w.index())
        .unwrap()
        .contains("[[Rust： The Language|Rust: The Language]]"));

    // Renaming back onto a key with history continues its numbering instead of overwriting it.
    let back = block_on(w.rename_page("Rust： The Language", "Rust")).unwrap();
    assert_eq!(back.page.key, "Rust");
    let h = block_on(w.history("Rust")).unwrap();
    let numbers: Vec<u64> = h.iter().map(|r| r.number).collect();
    assert_eq!(numbers, vec![1, 2, 3, 4, 5]);
    assert_eq!(back.page.revision, 5);
    assert!(
        body(&w, &a).starts_with("[[Rust]] [[Rust|my words]] [[Rust#Ownership]] ![[Rust]]"),
        "{}",
        body(&w, &a)
    );

    assert_eq!(
        block_on(w.rename_page("Nope", "X")).unwrap_err().code(),
        "NOT_FOUND"
    );
    assert_eq!(
        block_on(w.rename_page("Rust", "  ")).unwrap_err().code(),
        "INVALID_INPUT"
    );
}

#[test]
fn delete_unlinks_every_backlink_and_the_key_can_be_used_again() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "delete");
    block_on(w.put_page(PageEdit {
        title: Some("Epoll".into()),
        aliases: Some(vec!["epoll(7)".into()]),
        body: Some("Linux.\n".into()),
        ..Default::default()
    }))
    .unwrap();
    let a = new_page(
        &w,
        "A",
        PageKind::Concept,
        "Uses [[Epoll]], [[epoll(7)|the syscall]] and [[Epoll#Edge]].\n\n| a | b |\n|---|---|\n| [[Epoll\\|x|y]] | z |\n",
    );
    let report = block_on(w.delete_page("epoll")).unwrap();
    assert_eq!(report.key, "Epoll");
    assert_eq!(report.unlinked, vec![a.clone()]);
    assert_eq!(
        body(&w, &a),
        "Uses Epoll, the syscall and Epoll > Edge.\n\n| a | b |\n|---|---|\n| x\\|y | z |\n"
    );
    assert!(block_on(w.page("Epoll")).unwrap().is_none());
    assert!(!block_on(w.index()).unwrap().contains("Epoll"));
    let view = block_on(w.page_view(&a)).unwrap().unwrap();
    assert!(view.missing.is_empty());
    // A new page under the same key continues the history instead of colliding with it.
    let again = block_on(w.put_page(PageEdit {
        title: Some("Epoll".into()),
        body: Some("Back.\n".into()),
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(again.revision, 3);
    assert_eq!(block_on(w.history("Epoll")).unwrap().len(), 3);
}

#[test]
fn attachments_are_content_addressed_and_named_portably() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "assets");
    let a = block_on(w.add_attachment("clips/diagram.png", "image/png", b"one")).unwrap();
    assert_eq!(a.name, "diagram.png");
    assert_eq!(a.path(), "raw/assets/diagram.png");
    let ops = block_on(w.operations()).unwrap().len();
    let same = block_on(w.add_attachment("Diagram.png", "image/png", b"one")).unwrap();
    assert_eq!(same, a);
    assert_eq!(
        block_on(w.operations()).unwrap().len(),
        ops,
        "same name and bytes: nothing written"
    );
    let other = block_on(w.add_attachment("diagram.png", "", b"two")).unwrap();
    assert_ne!(other.name, a.name);
    assert_eq!(other.mime, "image/png");
    let alias = block_on(w.add_attachment("copy.png", "image/png", b"one")).unwrap();
    assert_eq!(alias.sha256, a.sha256);
    assert_eq!(block_on(w.assets()).unwrap().len(), 3);
    // Bytes are stored once per hash.
    let raw = block_on(w.storage().scan(Store::Raw, "assets/")).unwrap();
    assert_eq!(raw.len(), 2);
    assert_eq!(
        block_on(w.add_attachment("x.png", "image/png", b""))
            .unwrap_err()
            .code(),
        "INVALID_INPUT"
    );
}

#[test]
fn graph_has_every_page_and_each_resolved_link_once() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "graph");
    block_on(w.put_page(PageEdit {
        title: Some("人工智能".into()),
        aliases: Some(vec!["Artificial Intelligence".into()]),
        body: Some("See [[机器学习]] and [[人工智能]] (itself).\n".into()),
        ..Default::default()
    }))
    .unwrap();
    new_page(&w, "机器学习", PageKind::Concept, "Part of [[人工智能]].\n");
    // Two links to one page (by key and by alias), one with a heading, one missing, one ambiguous.
    new_page(
        &w,
        "Note",
        PageKind::Overview,
        "[[人工智能]] [[Artificial Intelligence|AI]] [[机器学习#监督学习]] [[Deep Learning]] [[Shared]]\n",
    );
    for title in ["Twin A", "Twin B"] {
        block_on(w.put_page(PageEdit {
            title: Some(title.into()),
            aliases: Some(vec!["Shared".into()]),
            body: Some(String::new()),
            ..Default::default()
        }))
        .unwrap();
    }
    new_page(&w, "Lonely", PageKind::Entity, "No links.\n");

    let g = block_on(w.graph()).unwrap();
    let keys: Vec<&str> = g.nodes.iter().map(|n| n.key.as_str()).collect();
    let pages = block_on(w.pages()).unwrap();
    assert_eq!(
        keys,
        pages.iter().map(|p| p.key.as_str()).collect::<Vec<_>>()
    );
    assert_eq!(g.nodes.len(), 6);
    let lonely = g.nodes.iter().find(|n| n.key == "Lonely").unwrap();
    assert_eq!(
        (lonely.title.as_str(), lonely.kind),
        ("Lonely", PageKind::Entity)
    );
    let edges: Vec<(&str, &str)> = g
        .edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    // `[[Shared]]` names two pages: ambiguous, so no edge; missing targets and self-links neither.
    assert_eq!(
        edges,
        vec![
            ("Note", "人工智能"),
            ("Note", "机器学习"),
            ("人工智能", "机器学习"),
            ("机器学习", "人工智能"),
        ]
    );
    // The same links the page views show as backlinks.
    for n in &g.nodes {
        let mut from: Vec<&str> = edges
            .iter()
            .filter(|(_, to)| *to == n.key)
            .map(|(f, _)| *f)
            .collect();
        from.sort();
        assert_eq!(block_on(w.backlinks(&n.key)).unwrap(), from, "{}", n.key);
    }
}

#[test]
fn what_the_client_learned_about_the_endpoint_is_not_exported() {
    // A cache of endpoint behaviour (structured-output mode, extract reply lengths): a rollback
    // keeps it, so an export carrying it would differ after a rollback.
    let backend = MemoryBackend::new();
    let w = open(&backend, "learned");
    let learned = llm_wiki::llm::client::Learned::default();
    learned.set_reply_ratios("llm:some-model|2048", vec![1.5, 2.0]);
    block_on(w.save_llm_learned(&learned)).unwrap();
    assert_eq!(
        block_on(w.llm_learned())
            .unwrap()
            .reply_ratios("llm:some-model|2048"),
        Some(vec![1.5, 2.0])
    );
    let files = unzip(&block_on(w.export_vault()).unwrap());
    for (path, data) in &files {
        let text = String::from_utf8_lossy(data);
        assert!(
            !text.contains("llm-learned") && !text.contains("reply_ratios"),
            "{path}: {text}"
        );
    }
}

#[test]
fn caches_and_counters_in_an_imported_meta_json_are_not_taken() {
    // A vault made by hand or by an older version may carry records an export leaves out; a
    // malformed endpoint cache among them would otherwise break every later LLM call.
    let backend = MemoryBackend::new();
    let w = populated(&backend, "exporter");
    let mut files = unzip(&block_on(w.export_vault()).unwrap());
    let path = ".llm-wiki/meta.json";
    let mut meta: serde_json::Value = serde_json::from_slice(&files[path]).unwrap();
    meta["llm-learned"] = serde_json::json!({"modes": 5});
    meta["ops"] = serde_json::json!({"last": 999_999});
    meta["secrets"] = serde_json::json!({"apiKey": "sk-from-a-vault"});
    files.insert(path.into(), serde_json::to_vec(&meta).unwrap());
    let entries: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    let zip = zip_of(&entries);

    let target = open(&backend, "importer");
    block_on(target.import_vault(&zip)).unwrap();
    assert!(block_on(target.llm_learned()).is_ok());
    assert!(!block_on(target.llm_config_view()).unwrap().has_api_key);
    // The op counter is the one the import sets, not the file's.
    let ops = block_on(target.storage().get(Store::Meta, "ops"))
        .unwrap()
        .unwrap();
    let ops: serde_json::Value = serde_json::from_slice(&ops.data).unwrap();
    assert!(ops["last"].as_u64().unwrap() < 1000, "{ops}");
    // Exporting again gives the same vault as the original export.
    assert_eq!(
        unzip(&block_on(target.export_vault()).unwrap())[path],
        unzip(&block_on(w.export_vault()).unwrap())[path]
    );
}

#[test]
fn two_connections_learning_at_once_keep_each_others_entries() {
    use llm_wiki::llm::provider::StructuredMode;
    let backend = MemoryBackend::new();
    let w = open(&backend, "learned");
    // Both loaded what was stored before either learned anything (two tabs).
    let compile_tab = block_on(w.llm_learned()).unwrap();
    let query_tab = block_on(w.llm_learned()).unwrap();
    compile_tab.set_reply_ratios("llm:m|2048", vec![2.0]);
    block_on(w.save_llm_learned(&compile_tab)).unwrap();
    query_tab.set(
        "openai-compatible http://x/v1/chat/completions m",
        StructuredMode::JsonObject,
    );
    block_on(w.save_llm_learned(&query_tab)).unwrap();
    let stored = block_on(w.llm_learned()).unwrap();
    assert_eq!(stored.reply_ratios("llm:m|2048"), Some(vec![2.0]));
    assert_eq!(
        stored.get("openai-compatible http://x/v1/chat/completions m"),
        Some(StructuredMode::JsonObject)
    );
    // A stored record that does not parse counts as nothing learned, and a save replaces it.
    let mut b = Batch::new();
    b.put(
        Store::Meta,
        "llm-learned",
        b"{\"modes\": 5}".to_vec(),
        Expect::Any,
    );
    block_on(w.storage().commit(b)).unwrap();
    let fresh = block_on(w.llm_learned()).unwrap();
    assert_eq!(fresh.reply_ratios("llm:m|2048"), None);
    fresh.set_reply_ratios("llm:m|2048", vec![1.5]);
    block_on(w.save_llm_learned(&fresh)).unwrap();
    assert_eq!(
        block_on(w.llm_learned())
            .unwrap()
            .reply_ratios("llm:m|2048"),
        Some(vec![1.5])
    );
}

#[test]
fn every_setting_survives_export_and_import() {
    use llm_wiki::llm::config::{Config, EmbeddingProvider, Provider, PurposeSettings};
    // Every field away from its default, secrets included (they must not travel).
    let backend = MemoryBackend::new();
    let w = open(&backend, "settings");
    let mut cfg: Config = serde_json::from_value(serde_json::json!({
        "preset": "ollama",
        "provider": "ollama",
        "baseUrl": "http://127.0.0.1:11434",
        "model": "qwen2.5:7b",
        "apiKey": "sk-secret-never-exported",
        "headers": { "X-Team": "notes", "X-Api-Token": "header-secret" },
        "contextWindow": 32768,
        "maxOutputTokens": 3000,
        "timeoutMs": 90000,
        "idleTimeoutMs": 45000,
        "tokenBudget": 123456,
        "compile": { "model": "qwen2.5:14b", "maxOutputTokens": 4000, "tokenBudget": 300000 },
        "query": { "model": "qwen2.5:3b", "maxOutputTokens": 700, "tokenBudget": 20000 },
        "lint": { "model": "qwen2.5:1.5b", "maxOutputTokens": 900, "tokenBudget": 50000 },
        "embeddings": { "provider": "ollama", "baseUrl": "http://127.0.0.1:11435", "model": "nomic-embed-text", "apiKey": "embed-secret", "maxInputTokens": 4096, "batchSize": 16 },
        "estimator": { "cjkTokensPerChar": 0.7, "charsPerToken": 3.5 },
        "retry": { "maxAttempts": 5, "maxTotalWaitMs": 45000, "baseBackoffMs": 700, "maxBackoffMs": 9000 }
    }))
    .unwrap();
    assert_eq!(cfg.provider, Provider::Ollama);
    assert_eq!(cfg.embeddings.provider, EmbeddingProvider::Ollama);
    assert_ne!(cfg.compile, PurposeSettings::default());
    block_on(w.set_llm_config(cfg.clone())).unwrap();
    let stored = block_on(w.llm_config()).unwrap();
    let zip = block_on(w.export_vault()).unwrap();
    let files = unzip(&zip);
    let exported = text(&files, ".llm-wiki/config.json");
    for secret in ["sk-secret-never-exported", "header-secret", "embed-secret"] {
        assert!(!exported.contains(secret), "{secret} left in {exported}");
        for (path, bytes) in &files {
            assert!(
                !String::from_utf8_lossy(bytes).contains(secret),
                "{secret} in {path}"
            );
        }
    }
    let copy = open(&backend, "settings-copy");
    block_on(copy.import_vault(&zip)).unwrap();
    let restored = block_on(copy.llm_config()).unwrap();
    // Everything but the credentials, exactly.
    assert_eq!(restored, stored.without_secrets());
    assert_eq!(restored.estimator.chars_per_token, 3.5);
    // The restored wiki can be configured and compiled again.
    cfg.model = "qwen2.5:32b".into();
    block_on(copy.set_llm_config(cfg)).unwrap();
    // And again: export → import → export is byte-identical.
    let again = open(&backend, "settings-again");
    block_on(again.import_vault(&block_on(copy.export_vault()).unwrap())).unwrap();
    assert_eq!(
        text(
            &unzip(&block_on(again.export_vault()).unwrap()),
            ".llm-wiki/config.json"
        ),
        text(
            &unzip(&block_on(copy.export_vault()).unwrap()),
            ".llm-wiki/config.json"
        )
    );
}

#[test]
fn a_settings_record_without_a_later_field_reads_it_as_its_default() {
    // A record written before `charsPerToken` (or any other field) existed reads, never fails.
    let backend = MemoryBackend::new();
    let w = open(&backend, "old-settings");
    let mut b = Batch::new();
    b.put(
        Store::Meta,
        "config",
        br#"{"provider":"openai-compatible","baseUrl":"http://127.0.0.1:1","model":"m","estimator":{"cjkTokensPerChar":0.8}}"#.to_vec(),
        Expect::Any,
    );
    block_on(w.storage().commit(b)).unwrap();
    let c = block_on(w.llm_config()).unwrap();
    assert_eq!(c.estimator.cjk_tokens_per_char, 0.8);
    assert_eq!(c.estimator.chars_per_token, 4.0);
    assert_eq!(c.model, "m");
}

/// F43c's vault: three ordinary notes, an Excalidraw drawing with two text elements and a
/// 20 KB `compressed-json` block, a Templater daily-note template, and a canvas.
fn f43_vault() -> (Vec<u8>, String) {
    // Base64-looking drawing data that no note's prose contains.
    let mut data = String::new();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    while data.len() < 20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data.push(alphabet[(x % 64) as usize] as char);
        if data.len() % 77 == 76 {
            data.push('\n');
        }
    }
    let drawing = format!(
        "---\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n---\n==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠==\n\n# Excalidraw Data\n\n## Text Elements\nIngest queue feeds the compiler ^Xk3mQp9a\n\n编译器 writes wiki pages ^b7Tz2LqW\n\n%%\n## Drawing\n```compressed-json\n{data}\n```\n%%\n"
    );
    let zip = zip_of(&[
        ("Vault/.obsidian/app.json", b"{}"),
        ("Vault/Rust.md", b"# Rust\n\nRust is a systems programming language with a borrow checker.\n"),
        ("Vault/Tokio.md", b"# Tokio\n\nTokio is an asynchronous runtime for Rust.\n"),
        ("Vault/notes/Backpressure.md", b"# Backpressure\n\nBackpressure keeps queues bounded when consumers are slow.\n"),
        ("Vault/Drawing 2024.excalidraw.md", drawing.as_bytes()),
        (
            "Vault/Templates/Daily.md",
            b"# <% tp.date.now(\"YYYY-MM-DD\") %>\n\n## Tasks\n\n## Notes\n\n## Links\n",
        ),
        ("Vault/Board.canvas", br#"{"nodes":[{"id":"a","type":"text","text":"Plan","x":0,"y":0,"width":200,"height":60}],"edges":[]}"#),
    ]);
    (zip, data.lines().next().unwrap().to_string())
}

#[test]
fn f43_a_drawing_gives_its_text_a_template_is_skipped_a_canvas_is_an_attachment() {
    use llm_wiki::llm::config::{Config, Provider};
    use llm_wiki::scripted::server::InProcess;
    let backend = MemoryBackend::new();
    let w = open(&backend, "f43");
    let (zip, drawing_line) = f43_vault();
    let report = block_on(w.import_vault(&zip)).unwrap();
    let mut added = report.sources_added.clone();
    added.sort();
    assert_eq!(
        added,
        vec![
            "Drawing 2024.excalidraw.md",
            "Rust.md",
            "Tokio.md",
            "notes/Backpressure.md"
        ]
    );
    assert_eq!(report.assets, vec!["Board.canvas".to_string()]);
    assert_eq!(report.skipped.len(), 2, "{:?}", report.skipped);
    assert_eq!(report.skipped[0], ".obsidian/app.json: hidden");
    assert!(
        report.skipped[1].starts_with("Templates/Daily.md: a template")
            && report.skipped[1].contains("<% tp.date.now"),
        "{:?}",
        report.skipped
    );

    // The drawing's source is its text elements, titled by the file name; the whole note is kept
    // beside it as the source's original.
    let drawing = block_on(w.source("Drawing 2024.excalidraw.md"))
        .unwrap()
        .unwrap();
    assert_eq!(drawing.source.title, "Drawing 2024");
    assert_eq!(
        drawing.text,
        "# Drawing 2024\n\nIngest queue feeds the compiler\n\n编译器 writes wiki pages\n"
    );
    let original = drawing
        .source
        .original
        .clone()
        .expect("the drawing is kept");
    let bytes = block_on(w.original(&original.sha256)).unwrap().unwrap();
    assert!(String::from_utf8(bytes).unwrap().contains(&drawing_line));

    // Compiled against an endpoint, no request carries the drawing data, and the search index
    // knows the drawing's text but not its data.
    let config = Config {
        provider: Provider::OpenAiCompatible,
        base_url: "http://127.0.0.1:1/v1".into(),
        model: "scripted-chat".into(),
        context_window: 16_384,
        ..Config::default()
    };
    block_on(w.set_llm_config(config)).unwrap();
    let transport = InProcess::new(vec![]);
    let r = block_on(w.compile_configured(
        transport.clone(),
        &llm_wiki::compile::pipeline::CompileOptions::default(),
        &|_| {},
        &llm_wiki::llm::Cancel::new(),
    ))
    .unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    assert_eq!(r.compiled.len(), 4);
    let requests = transport.state().requests();
    assert!(!requests.is_empty());
    let prompts = serde_json::to_string(&requests).unwrap();
    assert!(prompts.contains("Ingest queue feeds the compiler"));
    assert!(
        !prompts.contains(&drawing_line),
        "drawing data reached the model"
    );
    assert!(!prompts.contains("compressed-json"));
    assert!(
        !prompts.contains("tp.date.now"),
        "the template reached the model"
    );
    for p in block_on(w.all_pages()).unwrap() {
        assert!(
            !p.body.contains(&drawing_line),
            "{} holds drawing data",
            p.key
        );
    }
    let bm25 = llm_wiki::search::SearchOptions {
        mode: llm_wiki::search::SearchMode::Bm25,
        ..Default::default()
    };
    let search = |q: &str| block_on(w.search(q, &bm25)).unwrap().hits.len();
    assert!(search("ingest queue compiler") > 0);
    assert_eq!(search(&drawing_line[..40]), 0);

    // Templates are imported when asked for.
    let w2 = open(&backend, "f43-templates");
    let options = llm_wiki::vault::ImportOptions {
        templates: llm_wiki::vault::TemplateNotes::Import,
    };
    let report = block_on(w2.import_vault_with(&zip, &options)).unwrap();
    assert!(report
        .sources_added
        .contains(&"Templates/Daily.md".to_string()));
    assert_eq!(
        report.skipped,
        vec![".obsidian/app.json: hidden".to_string()]
    );
}

#[test]
fn nfd_file_names_in_a_vault_import_become_nfc_source_keys() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "nfd-vault");
    let note = "# Zürich\n\nThe Limmat flows through Zürich.\n";
    // macOS writes decomposed names.
    let nfd = zip_of(&[
        ("Zu\u{308}rich.md", note.as_bytes()),
        ("Cafe\u{301}s/Bern.md", b"# Bern\n\nBern is a city.\n"),
    ]);
    let report = block_on(w.import_vault(&nfd)).unwrap();
    assert_eq!(
        report.sources_added,
        vec![
            "Caf\u{e9}s/Bern.md".to_string(),
            "Z\u{fc}rich.md".to_string()
        ]
    );
    // The same vault zipped elsewhere (NFC names) is the same two sources.
    let nfc = zip_of(&[
        ("Z\u{fc}rich.md", note.as_bytes()),
        ("Caf\u{e9}s/Bern.md", b"# Bern\n\nBern is a city.\n"),
    ]);
    let again = block_on(w.import_vault(&nfc)).unwrap();
    assert_eq!(again.sources_unchanged.len(), 2);
    assert_eq!(again.op, None);
    assert_eq!(block_on(w.sources()).unwrap().len(), 2);
    // A note added by hand under the NFD name is that source too.
    let r = block_on(w.add_source(NewSource {
        key: Some("Zu\u{308}rich.md".into()),
        mime: "text/markdown".into(),
        content: note.into(),
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(r.op, None);
    assert_eq!(block_on(w.sources()).unwrap().len(), 2);
    // Two entries that are one name in NFC: a clear error, nothing written.
    let ops = block_on(w.operations()).unwrap().len();
    let both = zip_of(&[("Zu\u{308}rich.md", b"one"), ("Z\u{fc}rich.md", b"two")]);
    assert!(matches!(
        block_on(w.import_vault(&both)),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(block_on(w.operations()).unwrap().len(), ops);
}

#[test]
fn a_vault_import_moves_a_source_an_older_build_stored_under_an_nfd_key() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "nfd-legacy-vault");
    let note = "# Zürich\n\nThe Limmat flows through Zürich.\n";
    let version = llm_wiki::text::content_version(note);
    let legacy = llm_wiki::model::Source {
        key: "Zu\u{308}rich.md".into(),
        version: version.clone(),
        title: "Zürich".into(),
        url: None,
        mime: "text/markdown".into(),
        captured_at: None,
        added_at: 0,
        op: 0,
        text_bytes: note.len() as u64,
        original: None,
        previous_versions: vec![],
        status: llm_wiki::model::SourceStatus::Pending,
        summary_page: None,
        parts: vec![],
    };
    let mut b = Batch::new();
    b.put(
        Store::Raw,
        format!("text/{version}"),
        note.as_bytes().to_vec(),
        Expect::Any,
    );
    b.put(
        Store::Sources,
        "Zu\u{308}rich.md",
        serde_json::to_vec(&legacy).unwrap(),
        Expect::Absent,
    );
    block_on(w.storage().commit(b)).unwrap();
    assert_eq!(
        block_on(w.sources()).unwrap().len(),
        1,
        "the legacy record reads"
    );
    let report = block_on(w.import_vault(&zip_of(&[("Z\u{fc}rich.md", note.as_bytes())]))).unwrap();
    assert_eq!(report.sources_unchanged, vec!["Z\u{fc}rich.md".to_string()]);
    assert!(report.op.is_some());
    let keys: Vec<String> = block_on(w.sources())
        .unwrap()
        .into_iter()
        .map(|s| s.key)
        .collect();
    assert_eq!(keys, vec!["Z\u{fc}rich.md".to_string()]);
}
