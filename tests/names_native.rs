//! Names end to end on MemoryStorage with the scripted model (Decision 14): names that differ in
//! a symbol get pages of their own (issue 21 item 2), lint offers a rename for a page the old
//! rule merged, and the model's drifting vocabulary — folder-prefixed keys, `.md`, plural
//! folders, case, `Open AI`, quotes copied from the prompt's index — never makes a stray page,
//! folder or dead link (field case F46).
#![cfg(not(target_arch = "wasm32"))]

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::io::{Cursor, Read, Write};

use futures::executor::block_on;
use llm_wiki::compile::model::LlmCompiler;
use llm_wiki::compile::pipeline::{CompileOptions, CompileReport};
use llm_wiki::compile::prompt::block;
use llm_wiki::lint::{FindingKind, Fix, LintOptions};
use llm_wiki::llm::{Cancel, ChatRequest, ChatResponse, FinishReason, Llm, OnToken};
use llm_wiki::markdown::keys::page_key;
use llm_wiki::model::{Claim, PageKind, TokenUsage};
use llm_wiki::storage::{Storage, Store};
use llm_wiki::text::estimate_tokens;
use llm_wiki::wiki::PageEdit;

mod common;
use common::{add, open, W};

type Drift = Box<dyn Fn(&str, &str, serde_json::Value) -> serde_json::Value>;

/// The scripted endpoint (replies derived from the request), each reply passed through `drift`
/// (task, user message, reply) — how a model rewords the wiki's identifiers. Records each call's
/// task and user message.
#[derive(Default)]
struct Scripted {
    drift: Option<Drift>,
    calls: RefCell<Vec<(String, String)>>,
}

impl Llm for Scripted {
    async fn chat(
        &self,
        req: &ChatRequest,
        _: Option<OnToken<'_>>,
        _: &Cancel,
    ) -> llm_wiki::Result<ChatResponse> {
        let user = req.messages.last().unwrap().content.clone();
        let task = req
            .json
            .as_ref()
            .map(|j| j.name.clone())
            .unwrap_or_default();
        self.calls.borrow_mut().push((task.clone(), user.clone()));
        let mut text = llm_wiki::scripted::reply(req).text;
        if let Some(drift) = &self.drift {
            if let Ok(v) = serde_json::from_str(&text) {
                text = drift(&task, &user, v).to_string();
            }
        }
        Ok(ChatResponse {
            usage: TokenUsage {
                input: estimate_tokens(&user),
                output: estimate_tokens(&text),
                calls: 1,
                estimated: true,
            },
            text,
            finish: FinishReason::Stop,
            model: "scripted".into(),
        })
    }
}

fn compile(w: &W, llm: &Scripted) -> CompileReport {
    let model = LlmCompiler {
        llm,
        max_output_tokens: None,
        model_name: "scripted".into(),
    };
    let report =
        block_on(w.compile(&model, &CompileOptions::default(), &|_| {}, &Cancel::new())).unwrap();
    assert!(
        report.failed.is_empty(),
        "compile failed: {:?}",
        report.failed
    );
    report
}

fn keys(w: &W) -> BTreeSet<String> {
    block_on(w.all_pages())
        .unwrap()
        .into_iter()
        .map(|p| p.key)
        .collect()
}

fn page(w: &W, key: &str) -> llm_wiki::model::Page {
    block_on(w.page(key))
        .unwrap()
        .unwrap_or_else(|| panic!("no page {key}: {:?}", keys(w)))
}

fn link_findings(w: &W) -> Vec<String> {
    block_on(w.lint(&LintOptions::default()))
        .unwrap()
        .into_iter()
        .filter(|f| {
            matches!(
                f.kind,
                FindingKind::BrokenLink | FindingKind::AmbiguousLink | FindingKind::MalformedLink
            )
        })
        .map(|f| f.message)
        .collect()
}

const SYMBOLS: &str = "# Languages and ratios\n\nNotes on names that differ in one symbol.\n\n## C\n\nC is a systems language from 1972.\n\n## C++\n\nC++ adds classes and templates.\n\n## C#\n\nC# runs on the common language runtime.\n\n## I/O\n\nI/O moves bytes between devices and memory.\n\n## I:O\n\nI:O is the ratio of inputs to outputs.\n";

#[test]
fn names_that_differ_only_in_a_symbol_become_pages_of_their_own() {
    let backend = llm_wiki::storage::memory::MemoryBackend::new();
    let w = open(&backend, "symbols");
    add(&w, "symbols.md", SYMBOLS);
    compile(&w, &Scripted::default());
    let ks = keys(&w);
    for title in ["C", "C++", "C#", "I/O", "I:O"] {
        let key = page_key(title);
        assert!(ks.contains(&key), "no page {key} for {title}: {ks:?}");
        let p = page(&w, &key);
        assert_eq!(p.title, title);
        assert_eq!(p.kind, PageKind::Entity);
        // No page holds another's name.
        for other in ["C", "C++", "C#", "I/O", "I:O"]
            .iter()
            .filter(|o| *o != &title)
        {
            assert!(!p.aliases.contains(&other.to_string()), "{title}: {p:?}");
        }
    }
    assert_eq!(page_key("I/O"), "I／O");
    assert_ne!(page_key("I/O"), page_key("I:O"));
    // index.md links each one to its own file.
    let index = block_on(w.index()).unwrap();
    assert!(index.contains("[[C＃|C#]]"), "{index}");
    assert!(index.contains("[[I／O|I/O]]"), "{index}");
    assert!(index.contains("[[I：O|I:O]]"), "{index}");
    assert!(link_findings(&w).is_empty(), "{:?}", link_findings(&w));
    // The vault has one file each.
    let files = unzip(&block_on(w.export_vault()).unwrap());
    for f in ["C", "C++", "C＃", "I／O", "I：O"] {
        assert!(
            files.iter().any(|p| p == &format!("wiki/entity/{f}.md")),
            "{f}: {files:?}"
        );
    }

    // A person's `[[C#]]` is the page C#, not a heading of C.
    block_on(w.put_page(PageEdit {
        title: Some("Comparison notes".into()),
        body: Some("Compare [[C#]] with [[C++]] and [[c]].\n".into()),
        ..Default::default()
    }))
    .unwrap();
    let findings = block_on(w.lint(&LintOptions::default())).unwrap();
    assert!(
        findings
            .iter()
            .all(|f| f.kind != FindingKind::MissingHeading && f.kind != FindingKind::BrokenLink),
        "{findings:?}"
    );
    for key in ["C＃", "C++", "C"] {
        assert!(
            block_on(w.backlinks(key))
                .unwrap()
                .iter()
                .any(|b| b == "Comparison notes"),
            "{key}"
        );
    }
    let ks = keys(&w);

    // A full-width name is the same name: a second source about `Ｃ＋＋` adds to C++.
    add(
        &w,
        "fullwidth.md",
        "# More notes\n\nA second look.\n\n## Ｃ＋＋\n\nＣ＋＋ gained modules in 2020.\n",
    );
    compile(&w, &Scripted::default());
    let after = keys(&w);
    let new: Vec<&String> = after.difference(&ks).collect();
    assert_eq!(new.len(), 1, "only the source page is new: {new:?}");
    assert!(page(&w, "C++")
        .sources
        .contains(&"fullwidth.md".to_string()));
}

#[test]
fn lint_offers_a_rename_for_a_page_that_merged_names() {
    let backend = llm_wiki::storage::memory::MemoryBackend::new();
    let w = open(&backend, "merged");
    // Pages as the old rule left them: `I/O` and `I:O` on one page keyed `I O`; `C#` and `C++`
    // as aliases of C.
    let io = block_on(w.put_page(PageEdit {
        title: Some("I O".into()),
        kind: Some(PageKind::Concept),
        body: Some("I/O moves bytes.\n".into()),
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(io.key, "I O");
    block_on(w.put_page(PageEdit {
        key: Some("I O".into()),
        title: Some("I/O".into()),
        aliases: Some(vec!["I:O".into()]),
        ..Default::default()
    }))
    .unwrap();
    block_on(w.put_page(PageEdit {
        title: Some("C".into()),
        kind: Some(PageKind::Entity),
        body: Some("C is old. See [[I O]].\n".into()),
        aliases: Some(vec!["C++".into(), "C#".into(), "C language".into()]),
        ..Default::default()
    }))
    .unwrap();
    block_on(w.put_page(PageEdit {
        title: Some("OpenAI".into()),
        kind: Some(PageKind::Entity),
        body: Some("A lab.\n".into()),
        aliases: Some(vec!["Open AI".into(), "OpenAI, Inc.".into()]),
        ..Default::default()
    }))
    .unwrap();

    let merged: Vec<_> = block_on(w.lint(&LintOptions::default()))
        .unwrap()
        .into_iter()
        .filter(|f| f.kind == FindingKind::MergedNames)
        .collect();
    assert_eq!(merged.len(), 2, "{merged:?}");
    let io_finding = merged.iter().find(|f| f.page == "I O").unwrap();
    assert_eq!(
        io_finding.fix,
        Some(Fix::RenamePage {
            page: "I O".into(),
            title: "I/O".into(),
            drop_aliases: vec!["I:O".into()],
        })
    );
    let c_finding = merged.iter().find(|f| f.page == "C").unwrap();
    assert_eq!(
        c_finding.fix,
        Some(Fix::RenamePage {
            page: "C".into(),
            title: "C".into(),
            drop_aliases: vec!["C++".into(), "C#".into()],
        })
    );

    // The renames: new keys, the merged names gone, the links rewritten.
    block_on(w.apply_fix(&io_finding.id, None, false)).unwrap();
    block_on(w.apply_fix(&c_finding.id, None, false)).unwrap();
    let io = page(&w, "I／O");
    assert_eq!(io.title, "I/O");
    assert!(io.aliases.is_empty());
    assert!(block_on(w.page("I O")).unwrap().is_none());
    let c = page(&w, "C");
    assert_eq!(c.aliases, vec!["C language".to_string()]);
    assert!(c.body.contains("[[I／O|I/O]]"), "{}", c.body);
    assert!(block_on(w.lint(&LintOptions::default()))
        .unwrap()
        .iter()
        .all(|f| f.kind != FindingKind::MergedNames));

    // The names now get pages of their own.
    add(
        &w,
        "ratios.md",
        "# Ratios\n\nSome ratios.\n\n## I:O\n\nI:O is the ratio of inputs to outputs.\n\n## C#\n\nC# is a language.\n",
    );
    compile(&w, &Scripted::default());
    assert_eq!(page(&w, "I：O").title, "I:O");
    assert_eq!(page(&w, "C＃").title, "C#");
    assert!(!page(&w, "I／O").sources.contains(&"ratios.md".to_string()));
}

const EXISTING_DRIFT: &str = "# Async Rust notes\n\nNotes on async Rust.\n\n## Rust\n\nRust is a language. Tokio is built on Rust. OpenAI uses Rust too.\n\n## Futures\n\nFutures are lazy values in Rust. Backpressure keeps queues of futures bounded.\n";

/// Links the way a drifting model writes them.
const DRIFTED_LINKS: &str = "See [[entity/OpenAI|OpenAI]], [[wiki/concept/Tokio]], [[Tokio.md]], [[concepts/Tokio]] and [[Backpressure]].";

/// F46 a/c: keys with folders, `.md`, plural folders and case; folder-prefixed links; a claim
/// quoting the prompt's `<index>` block.
fn drifting() -> Scripted {
    Scripted {
        drift: Some(Box::new(|task, user, mut v| {
            match task {
                "integrate_pages" => {
                    if let Some(pages) = v["pages"].as_array_mut() {
                        for (i, p) in pages.iter_mut().enumerate() {
                            let key = p["key"].as_str().unwrap_or_default().to_string();
                            p["key"] = serde_json::Value::String(match i % 4 {
                                0 => format!("concept/{key}"),
                                1 => format!("{key}.md"),
                                2 => format!("concepts/{key}"),
                                _ => key.to_lowercase(),
                            });
                            let body = p["body"].as_str().unwrap_or_default().to_string();
                            p["body"] = format!("{body}\n\n{DRIFTED_LINKS}").into();
                        }
                    }
                }
                "integrate" => {
                    let body = v["body"].as_str().unwrap_or_default().to_string();
                    v["body"] = format!("{body}\n\n{DRIFTED_LINKS}").into();
                }
                "extract" => {
                    // The index line of Tokio, copied from the prompt as if from the source.
                    let index = block(user, "index").map_or("", |(_, b)| b);
                    if let Some(line) = index.lines().find(|l| l.contains("Tokio")) {
                        v["claims"].as_array_mut().unwrap().push(serde_json::json!({
                            "text": "Tokio is an async runtime.",
                            "quote": line.trim(),
                            "about": ["Tokio"],
                        }));
                    }
                }
                _ => {}
            }
            v
        })),
        ..Default::default()
    }
}

fn drift_wiki(w: &W) {
    for (title, kind, body) in [
        ("OpenAI", PageKind::Entity, "OpenAI is an AI lab.\n"),
        (
            "Tokio",
            PageKind::Concept,
            "Tokio is an async runtime for Rust.\n",
        ),
        (
            "Backpressure (source)",
            PageKind::Source,
            "Backpressure notes.\n",
        ),
    ] {
        block_on(w.put_page(PageEdit {
            title: Some(title.into()),
            kind: Some(kind),
            body: Some(body.into()),
            summary: Some(body.trim().into()),
            ..Default::default()
        }))
        .unwrap();
    }
    // The source page's title is Backpressure; its key stays `Backpressure (source)`.
    block_on(w.put_page(PageEdit {
        key: Some("Backpressure (source)".into()),
        title: Some("Backpressure".into()),
        ..Default::default()
    }))
    .unwrap();
}

#[test]
fn f46_drifted_keys_and_links_map_onto_the_wiki_and_make_nothing_new() {
    let backend = llm_wiki::storage::memory::MemoryBackend::new();
    let w = open(&backend, "f46");
    drift_wiki(&w);
    add(&w, "async.md", EXISTING_DRIFT);
    let llm = drifting();
    compile(&w, &llm);

    // a) The drafts land on Rust and Futures; nothing named after a drifted key exists.
    let ks = keys(&w);
    let expected: BTreeSet<String> = [
        "Async Rust notes",
        "Backpressure (source)",
        "Futures",
        "OpenAI",
        "Rust",
        "Tokio",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(ks, expected);
    // The one multi-page call's entries were taken: no page needed a call of its own.
    let calls = llm.calls.borrow();
    assert!(calls.iter().any(|(t, _)| t == "integrate_pages"));
    for (task, user) in calls.iter() {
        if task == "integrate" {
            assert!(
                !user.contains("key=\"Rust\"") && !user.contains("key=\"Futures\""),
                "a drafted page was written again by a call of its own"
            );
        }
    }
    // Links resolve and are written canonically.
    for key in ["Rust", "Futures"] {
        let body = page(&w, key).body;
        for bad in [
            "[[entity/",
            "[[wiki/",
            ".md]]",
            "[[concepts/",
            "[[Backpressure]]",
        ] {
            assert!(!body.contains(bad), "{key}: {bad} in {body}");
        }
        assert!(body.contains("[[OpenAI]]"), "{body}");
        assert!(body.contains("[[Tokio]]"), "{body}");
        assert!(
            body.contains("[[Backpressure (source)|Backpressure]]"),
            "{body}"
        );
    }
    assert!(link_findings(&w).is_empty(), "{:?}", link_findings(&w));

    // c) The quote copied from the index is not in the source: the claim is unverified.
    let claims: Vec<Claim> = block_on(w.storage().scan(Store::Claims, ""))
        .unwrap()
        .into_iter()
        .map(|(_, r)| serde_json::from_slice(&r.data).unwrap())
        .collect();
    let copied: Vec<&Claim> = claims
        .iter()
        .filter(|c| c.text == "Tokio is an async runtime.")
        .collect();
    assert!(!copied.is_empty(), "the drift added the claim");
    assert!(copied.iter().all(|c| !c.verified), "{copied:?}");
    for p in block_on(w.all_pages()).unwrap() {
        for s in &p.sources {
            assert!(
                !["index.md", "log.md", "schema.md"].contains(&s.as_str()),
                "{} cites {s}",
                p.key
            );
        }
    }

    // Only the six kind folders under wiki/.
    let folders: BTreeSet<String> = unzip(&block_on(w.export_vault()).unwrap())
        .into_iter()
        .filter_map(|p| {
            p.strip_prefix("wiki/")
                .and_then(|r| r.split_once('/'))
                .map(|(f, _)| f.to_string())
        })
        .collect();
    let kinds: BTreeSet<String> = PageKind::ALL
        .iter()
        .map(|k| k.as_str().to_string())
        .collect();
    assert!(folders.is_subset(&kinds), "{folders:?}");
}

#[test]
fn f46_an_update_named_in_another_case_or_spacing_goes_to_the_existing_page() {
    let backend = llm_wiki::storage::memory::MemoryBackend::new();
    let w = open(&backend, "f46b");
    drift_wiki(&w);
    let before = keys(&w).len();
    // b) The model names OpenAI `openai`, then `Open AI`.
    add(
        &w,
        "one.md",
        "# Lab news\n\nNews from the lab.\n\n## openai\n\nopenai released a model in 2024.\n",
    );
    compile(&w, &drifting());
    add(
        &w,
        "two.md",
        "# More lab news\n\nMore news.\n\n## Open AI\n\nOpen AI opened an office in 2025.\n",
    );
    compile(&w, &drifting());
    let ks = keys(&w);
    // Only the two source pages are new.
    assert_eq!(ks.len(), before + 2, "{ks:?}");
    let openai = page(&w, "OpenAI");
    assert!(openai.sources.contains(&"one.md".to_string()), "{openai:?}");
    assert!(openai.sources.contains(&"two.md".to_string()), "{openai:?}");
    assert!(link_findings(&w).is_empty(), "{:?}", link_findings(&w));
}

#[test]
fn f46_a_keyed_draft_that_names_no_page_is_never_a_page() {
    use llm_wiki::compile::integrate::IntegrateInput;
    use llm_wiki::compile::model::drafted_page;
    let input = |key: &str, title: &str| IntegrateInput {
        key: key.into(),
        title: title.into(),
        kind: PageKind::Concept,
        current_body: String::new(),
        brief: String::new(),
        facts: vec![],
        retracted: vec![],
        relations: vec![],
        link_targets: vec![],
        schema_md: String::new(),
        append: false,
    };
    let inputs = vec![
        input("Rust", "Rust"),
        input("Futures", "Futures"),
        input("OpenAI", "OpenAI"),
        input("C＃", "C#"),
        input("C", "C"),
    ];
    let at = |k: &str| drafted_page(k, &inputs);
    assert_eq!(at("Rust"), Some(0));
    assert_eq!(at("concept/Rust"), Some(0));
    assert_eq!(at("wiki/concept/Rust.md"), Some(0));
    assert_eq!(at("Futures.md"), Some(1));
    assert_eq!(at("concepts/futures"), Some(1));
    assert_eq!(at("openai"), Some(2));
    assert_eq!(at("Open AI"), Some(2));
    assert_eq!(at("entities/Open AI.md"), Some(2));
    assert_eq!(at("C#"), Some(3));
    assert_eq!(at("C＃"), Some(3));
    assert_eq!(at("c"), Some(4));
    assert_eq!(at("Tokio"), None);
    assert_eq!(at("concept/Tokio"), None);
    assert_eq!(at("C++"), None);
    assert_eq!(at(""), None);
}

#[test]
fn f46_the_apps_own_index_log_and_schema_never_become_sources() {
    let backend = llm_wiki::storage::memory::MemoryBackend::new();
    let w = open(&backend, "f46-vault");
    // A vault of ours zipped without `.llm-wiki/`, and a plain vault holding our index and log.
    let ours = zip_of(&[
        (
            "index.md",
            "# Index\n\n1 pages.\n\n- [[Tokio]] — a runtime\n".as_bytes(),
        ),
        ("log.md", b"# Log\n\nnothing\n"),
        ("schema.md", b"# Wiki schema\n\nKinds.\n"),
        (
            "wiki/concept/Tokio.md",
            b"---\ntitle: Tokio\n---\nTokio is a runtime.\n",
        ),
    ]);
    let report = block_on(w.import_vault(&ours)).unwrap();
    let keys: Vec<String> = block_on(w.sources())
        .unwrap()
        .into_iter()
        .map(|s| s.key)
        .collect();
    assert_eq!(keys, vec!["wiki/concept/Tokio.md".to_string()]);
    assert_eq!(report.skipped.len(), 3, "{:?}", report.skipped);
    let plain = zip_of(&[
        (
            "index.md",
            b"# Index\n\n3 pages. Generated by llm-wiki from the page store on every change.\n",
        ),
        (
            "log.md",
            b"# Log\n\nEvery change to this wiki, oldest first. Append-only; written by llm-wiki.\n",
        ),
        ("notes/index.md", b"# My index\n\nA note of mine.\n"),
        ("schema.md", b"# My schema notes\n\nA note of mine too.\n"),
    ]);
    let w = open(&backend, "f46-plain");
    block_on(w.import_vault(&plain)).unwrap();
    let keys: Vec<String> = block_on(w.sources())
        .unwrap()
        .into_iter()
        .map(|s| s.key)
        .collect();
    assert_eq!(
        keys,
        vec!["notes/index.md".to_string(), "schema.md".to_string()]
    );
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

fn unzip(bytes: &[u8]) -> Vec<String> {
    let mut z = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    let mut out = Vec::new();
    for i in 0..z.len() {
        let mut f = z.by_index(i).unwrap();
        let mut sink = Vec::new();
        f.read_to_end(&mut sink).unwrap();
        out.push(f.name().to_string());
    }
    out
}
