//! Lint: the deterministic checks and their fixes (field cases F15, F18, F30, F31b, F32, F34c).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use futures::executor::block_on;
use llm_wiki::lint::{Finding, FindingKind, Fix, LintOptions, Severity};
use llm_wiki::model::PageKind;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{Batch, Expect, Storage, Store};
use llm_wiki::wiki::{NewSource, PageEdit};

use common::W;

/// The wiki `lint` on `backend` ([`common::open`]).
fn open(backend: &MemoryBackend) -> W {
    common::open(backend, "lint")
}

fn page(w: &W, title: &str, body: &str, aliases: &[&str]) {
    block_on(w.put_page(PageEdit {
        title: Some(title.into()),
        kind: Some(PageKind::Concept),
        body: Some(body.into()),
        aliases: Some(aliases.iter().map(|a| a.to_string()).collect()),
        ..Default::default()
    }))
    .unwrap();
}

fn lint(w: &W) -> Vec<Finding> {
    block_on(w.lint(&LintOptions::default())).unwrap()
}

fn serious_on<'a>(findings: &'a [Finding], page: &str) -> Vec<&'a Finding> {
    findings
        .iter()
        .filter(|f| f.page == page && f.severity <= Severity::Warning)
        .collect()
}

#[test]
fn f15_link_syntax_variants() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    block_on(w.add_attachment("diagram.png", "image/png", b"\x89PNG fake")).unwrap();
    page(
        &w,
        "Rust",
        "# Rust\n## Ownership\nMove semantics. ^own1\n",
        &[],
    );
    page(&w, "Notes", "[[Rust|the Rust language]] [[Rust#Ownership]] [[Rust#^own1]] ![[Rust#Ownership]] ![[diagram.png]] [[Rust.md]]\n\n| Lang | Note |\n|---|---|\n| [[Rust\\|Rust lang]] | fast |\n", &[]);
    page(
        &w,
        "Bad",
        "[[Rust#No such heading]] [[Missing page]] ![[missing.png]] [[Rust\\]]",
        &[],
    );
    let f = lint(&w);
    assert!(
        !f.iter()
            .any(|x| x.kind == FindingKind::Orphan && x.page == "Rust"),
        "Rust is linked"
    );
    assert!(
        serious_on(&f, "Notes").is_empty(),
        "{:#?}",
        serious_on(&f, "Notes")
    );
    let bad = serious_on(&f, "Bad");
    let mut kinds: Vec<FindingKind> = bad.iter().map(|x| x.kind).collect();
    kinds.sort();
    assert_eq!(
        kinds,
        vec![
            FindingKind::BrokenLink,
            FindingKind::MissingHeading,
            FindingKind::MissingAttachment,
            FindingKind::MalformedLink
        ],
        "{bad:#?}"
    );
    assert!(bad.iter().any(|x| x.message.contains("[[Missing page]]")));
    assert!(bad.iter().any(|x| x.message.contains("missing.png")));
}

#[test]
fn f18_only_the_unknown_target_is_broken() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    page(&w, "人工智能", "AI.", &["Artificial Intelligence"]);
    page(&w, "机器学习", "## 监督学习\n\n内容。", &[]);
    page(&w, "日本語", "言語。", &[]);
    page(&w, "中文", "语言。", &[]);
    page(&w, "Note", "[[人工智能]] [[人工智能|AI]] [[机器学习#监督学习]] [[Artificial Intelligence]] [[Deep Learning]]", &[]);
    let broken: Vec<String> = lint(&w)
        .into_iter()
        .filter(|x| x.kind == FindingKind::BrokenLink)
        .map(|x| x.message)
        .collect();
    assert_eq!(broken, vec!["broken link [[Deep Learning]]"]);
}

#[test]
fn f32_the_fixer_rewrites_to_the_likely_page_never_to_itself_never_a_working_link() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    page(&w, "Tokio", "A runtime. See [[Tokioo]] and [[Rust]].", &[]);
    page(&w, "Rust", "A language.", &[]);
    page(
        &w,
        "Async IO",
        "Uses [[Tokio runtme]] heavily; also [[Rust]] and [[Groundwater contamination]].",
        &[],
    );
    let f = lint(&w);
    // On Tokio, the only near name is Tokio itself: the fix unlinks, it never self-links.
    let on_tokio = f
        .iter()
        .find(|x| x.page == "Tokio" && x.kind == FindingKind::BrokenLink)
        .unwrap();
    assert_eq!(
        on_tokio.fix,
        Some(Fix::UnlinkBroken {
            page: "Tokio".into(),
            target: "Tokioo".into()
        })
    );
    let near = f
        .iter()
        .find(|x| x.page == "Async IO" && x.message.contains("Tokio runtme"))
        .unwrap();
    assert_eq!(
        near.fix,
        Some(Fix::RewriteLink {
            page: "Async IO".into(),
            from: "Tokio runtme".into(),
            to: "Tokio".into()
        })
    );
    block_on(w.apply_fix(&near.id, None, false)).unwrap();
    let body = block_on(w.page("Async IO")).unwrap().unwrap().body;
    assert_eq!(
        body,
        "Uses [[Tokio|Tokio runtme]] heavily; also [[Rust]] and [[Groundwater contamination]]."
    );
    block_on(w.apply_fix(&on_tokio.id, None, false)).unwrap();
    assert_eq!(
        block_on(w.page("Tokio")).unwrap().unwrap().body,
        "A runtime. See Tokioo and [[Rust]]."
    );
    // Applied fixes are operations; the remaining broken link is still reported.
    let ops = block_on(w.operations()).unwrap();
    assert_eq!(
        ops.iter()
            .filter(|o| o.kind == llm_wiki::model::OperationKind::Fix)
            .count(),
        2
    );
    let broken: Vec<String> = lint(&w)
        .into_iter()
        .filter(|x| x.kind == FindingKind::BrokenLink)
        .map(|x| x.page)
        .collect();
    assert_eq!(broken, vec!["Async IO"]);
}

#[test]
fn a_name_linked_from_several_pages_gets_a_page_on_request() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    page(
        &w,
        "Tokio",
        "Tokio polls sockets with [[Epoll]] on Linux.",
        &[],
    );
    page(&w, "Mio", "Mio wraps [[Epoll]] and kqueue.", &[]);
    let f = lint(&w);
    let missing = f
        .iter()
        .find(|x| x.kind == FindingKind::MissingPage)
        .unwrap();
    assert_eq!(missing.related, vec!["Mio", "Tokio"]);
    block_on(w.apply_fix(&missing.id, None, false)).unwrap();
    let epoll = block_on(w.page("Epoll")).unwrap().unwrap();
    assert!(
        epoll
            .body
            .contains("Tokio polls sockets with [[Epoll]] on Linux."),
        "{}",
        epoll.body
    );
    assert!(!lint(&w).iter().any(|x| x.kind == FindingKind::BrokenLink));
}

#[test]
fn f30_near_duplicates_are_listed_not_merged() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    page(
        &w,
        "OpenAI",
        "An AI lab. See [[OpenAI Foundation]].",
        &["Open AI"],
    );
    page(
        &w,
        "OpenAI Foundation",
        "A foundation. See [[OpenAI]].",
        &[],
    );
    let dups: Vec<Finding> = lint(&w)
        .into_iter()
        .filter(|x| x.kind == FindingKind::LikelyDuplicate)
        .collect();
    assert_eq!(dups.len(), 1);
    assert_eq!(
        (dups[0].page.as_str(), dups[0].related.as_slice()),
        ("OpenAI", &["OpenAI Foundation".to_string()][..])
    );
    // A proposal the user may accept, never applied by lint itself.
    assert!(matches!(dups[0].fix, Some(Fix::MergePages { .. })));
    assert_eq!(
        block_on(w.pages()).unwrap().len(),
        2,
        "never merged automatically"
    );
}

/// Pages without their revision numbers and times, for comparing states.
fn state(w: &W) -> Vec<llm_wiki::model::Page> {
    block_on(w.all_pages())
        .unwrap()
        .into_iter()
        .map(|p| llm_wiki::model::Page {
            revision: 0,
            updated: 0,
            ..p
        })
        .collect()
}

/// The likely-duplicate finding, whose fix merges `merged` into `survivor`.
fn merge_finding(w: &W, survivor: &str, merged: &str) -> Finding {
    let dup = lint(w)
        .into_iter()
        .find(|x| x.kind == FindingKind::LikelyDuplicate)
        .unwrap();
    assert_eq!(
        dup.fix,
        Some(Fix::MergePages {
            survivor: survivor.into(),
            merged: merged.into()
        })
    );
    dup
}

#[test]
fn f30_merging_duplicates_rewrites_every_link_and_rolls_back() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    page(
        &w,
        "OpenAI",
        "An AI lab. See [[OpenAI Foundation]].",
        &["Open AI"],
    );
    page(
        &w,
        "OpenAI Foundation",
        "A foundation. See [[OpenAI]].\n\n## Grants\n\nIt gives grants.",
        &["OAIF"],
    );
    page(
        &w,
        "News",
        "[[OpenAI Foundation|the foundation]] and [[OpenAI Foundation#Grants]] and [[OAIF]] and [[OpenAI]] and [[Missing]]",
        &[],
    );
    page(
        &w,
        "Table",
        "| a | b |\n|---|---|\n| [[OpenAI Foundation\\|F]] | [[Open AI]] |\n",
        &[],
    );
    page(&w, "Other", "[[OpenAI]]", &[]);
    let before = state(&w);
    let index_before = block_on(w.index()).unwrap();
    // OpenAI has more pages linking to it: it survives.
    let dup = merge_finding(&w, "OpenAI", "OpenAI Foundation");
    let op = block_on(w.apply_fix(&dup.id, None, false)).unwrap();
    assert!(block_on(w.page("OpenAI Foundation")).unwrap().is_none());
    let s = block_on(w.page("OpenAI")).unwrap().unwrap();
    assert_eq!(s.aliases, vec!["Open AI", "OpenAI Foundation", "OAIF"]);
    assert_eq!(
        s.body,
        "An AI lab. See OpenAI Foundation.\n\n## OpenAI Foundation\n\nA foundation. See OpenAI.\n\n## Grants\n\nIt gives grants.\n"
    );
    assert_eq!(
        block_on(w.page("News")).unwrap().unwrap().body,
        "[[OpenAI|the foundation]] and [[OpenAI#Grants|OpenAI Foundation]] and [[OpenAI|OAIF]] and [[OpenAI]] and [[Missing]]"
    );
    assert_eq!(
        block_on(w.page("Table")).unwrap().unwrap().body,
        "| a | b |\n|---|---|\n| [[OpenAI\\|F]] | [[Open AI]] |\n"
    );
    assert_eq!(
        block_on(w.page("Other")).unwrap().unwrap().body,
        "[[OpenAI]]"
    );
    let mut touched = op.pages.clone();
    touched.sort();
    assert_eq!(
        touched,
        vec!["News", "OpenAI", "OpenAI Foundation", "Table"]
    );
    let after = lint(&w);
    assert!(
        !after
            .iter()
            .any(|f| f.kind == FindingKind::BrokenLink && f.page != "News"),
        "{after:#?}"
    );
    assert!(!after.iter().any(|f| f.kind == FindingKind::LikelyDuplicate));

    // Reversible: rolling the fix back restores both pages and every link.
    block_on(w.rollback(op.id)).unwrap();
    assert_eq!(state(&w), before);
    assert_eq!(block_on(w.index()).unwrap(), index_before);
}

#[test]
fn f31b_index_drift_is_found_and_fixed() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    for i in 0..7 {
        page(&w, &format!("Page {i}"), "x", &[]);
    }
    assert!(
        !lint(&w).iter().any(|x| x.kind == FindingKind::IndexDrift),
        "the app keeps index.md whole"
    );
    // Something (an old build, a hand edit) truncated index.md.
    let mut b = Batch::new();
    b.put(
        Store::Documents,
        "index.md",
        b"# Index\n\n- [[Page 0]]\n".to_vec(),
        Expect::Any,
    );
    block_on(w.storage().commit(b)).unwrap();
    let drift = lint(&w)
        .into_iter()
        .find(|x| x.kind == FindingKind::IndexDrift)
        .unwrap();
    block_on(w.apply_fix(&drift.id, None, false)).unwrap();
    assert!(!lint(&w).iter().any(|x| x.kind == FindingKind::IndexDrift));
    assert_eq!(block_on(w.index()).unwrap().matches("- [[Page ").count(), 7);
}

#[test]
fn f34c_a_source_edited_in_place_is_reported() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    let r = block_on(w.add_source(NewSource {
        key: Some("s".into()),
        mime: "text/markdown".into(),
        content: "Widgetron was first released in 2015.".into(),
        ..Default::default()
    }))
    .unwrap();
    assert!(!lint(&w)
        .iter()
        .any(|x| x.kind == FindingKind::SourceTextChanged));
    let mut b = Batch::new();
    b.put(
        Store::Raw,
        format!("text/{}", r.version),
        b"Widgetron was first released in 2016.".to_vec(),
        Expect::Any,
    );
    block_on(w.storage().commit(b)).unwrap();
    let f = lint(&w);
    let changed = f
        .iter()
        .find(|x| x.kind == FindingKind::SourceTextChanged)
        .unwrap();
    assert_eq!(changed.related, vec!["s"]);
}

#[test]
fn finding_ids_are_stable() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    page(&w, "A", "[[Nowhere]]", &[]);
    assert_eq!(lint(&w), lint(&w));
}

#[test]
fn revert_restores_an_earlier_revision_as_a_new_one() {
    let backend = MemoryBackend::new();
    let w = open(&backend);
    page(&w, "Tokio", "First text.", &[]);
    block_on(w.put_page(PageEdit {
        key: Some("Tokio".into()),
        body: Some("Second text.".into()),
        ..Default::default()
    }))
    .unwrap();
    let p = block_on(w.revert("Tokio", 1)).unwrap();
    assert_eq!((p.body.as_str(), p.revision), ("First text.", 3));
    let h = block_on(w.history("Tokio")).unwrap();
    assert_eq!(
        h.iter().map(|r| r.number).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(matches!(
        block_on(w.revert("Tokio", 9)),
        Err(llm_wiki::Error::NotFound(_))
    ));
}

/// A claim record for a hand-built ledger.
fn claim(id: &str, page: &str, text: &str) -> llm_wiki::model::Claim {
    llm_wiki::model::Claim {
        id: id.into(),
        page: page.into(),
        text: text.into(),
        source_key: "s.md".into(),
        source_version: String::new(),
        quote: text.into(),
        verified: true,
        stance: Default::default(),
        from_description: None,
    }
}

fn ledger(w: &W) -> Vec<llm_wiki::model::Contradiction> {
    block_on(w.storage().scan(Store::Ledger, ""))
        .unwrap()
        .into_iter()
        .map(|(_, r)| serde_json::from_slice(&r.data).unwrap())
        .collect()
}

#[test]
fn merging_duplicates_settles_their_contradiction_and_rebuilds_the_app_sections_once() {
    use llm_wiki::model::{Contradiction, ContradictionStatus};
    let backend = MemoryBackend::new();
    let w = open(&backend);
    let callout = |id: &str, a: (&str, &str), b: (&str, &str)| {
        format!(
            "> [!contradiction] Sources disagree ({id})\n> The years differ.\n> - {}: x [^{}]\n> - {}: y [^{}]",
            a.0, a.1, b.0, b.1
        )
    };
    let def = |c: &str| format!("[^{c}]: [[s.md]] — “q”");
    let (c1, c2, c3) = ("c0000000001", "c0000000002", "c0000000003");
    page(
        &w,
        "OpenAI",
        &format!(
            "An AI lab founded in 2015 [^{c1}].\n\n{}\n\n{}",
            callout("k1", ("**OpenAI**", c1), ("[[OpenAI Foundation]]", c2)),
            def(c1)
        ),
        &[],
    );
    page(
        &w,
        "OpenAI Foundation",
        &format!(
            "A foundation founded in 2016 [^{c2}]. See [[OpenAI]].\n\n{}\n\n{}\n\n{}\n{}",
            callout("k1", ("[[OpenAI]]", c1), ("**OpenAI Foundation**", c2)),
            callout("k2", ("**OpenAI Foundation**", c2), ("[[News]]", c3)),
            def(c1),
            def(c2)
        ),
        &[],
    );
    page(
        &w,
        "News",
        &format!(
            "[[OpenAI]] and [[OpenAI Foundation]] began in 2017 [^{c3}].\n\n{}\n\n{}\n{}",
            callout("k2", ("[[OpenAI Foundation]]", c2), ("**News**", c3)),
            def(c2),
            def(c3)
        ),
        &[],
    );
    let mut b = Batch::new();
    for c in [
        claim(c1, "OpenAI", "OpenAI was founded in 2015."),
        claim(c2, "OpenAI Foundation", "OpenAI was founded in 2016."),
        claim(c3, "News", "OpenAI began in 2017."),
    ] {
        b.put(
            Store::Claims,
            c.id.clone(),
            serde_json::to_vec(&c).unwrap(),
            Expect::Absent,
        );
    }
    for (id, pages, claims) in [
        ("k1", ["OpenAI", "OpenAI Foundation"], [c1, c2]),
        ("k2", ["News", "OpenAI Foundation"], [c2, c3]),
    ] {
        let r = Contradiction {
            id: id.into(),
            pages: pages.iter().map(|s| s.to_string()).collect(),
            claims: claims.iter().map(|s| s.to_string()).collect(),
            description: "The years differ.".into(),
            status: ContradictionStatus::Open,
            note: None,
            opened_by: 1,
            closed_by: None,
        };
        b.put(
            Store::Ledger,
            id,
            serde_json::to_vec(&r).unwrap(),
            Expect::Absent,
        );
    }
    // As another build writes them: an operation of its own (the op counter moves on).
    common::commit_as_another_build(&w, b);
    let before = state(&w);

    let dup = merge_finding(&w, "OpenAI", "OpenAI Foundation");
    let op = block_on(w.apply_fix(&dup.id, None, false)).unwrap();

    // The record between the two pages is no contradiction between pages any more: closed with a
    // note, never a page contradicting itself; the other one now names the survivor.
    let records = ledger(&w);
    let k1 = records.iter().find(|r| r.id == "k1").unwrap();
    assert_eq!(k1.status, ContradictionStatus::Resolved, "{k1:?}");
    assert_eq!(k1.closed_by, Some(op.id));
    assert!(
        k1.note.as_deref().is_some_and(|n| n.contains("merged")),
        "{k1:?}"
    );
    let k2 = records.iter().find(|r| r.id == "k2").unwrap();
    assert_eq!(k2.status, ContradictionStatus::Open);
    assert_eq!(k2.pages, vec!["News".to_string(), "OpenAI".to_string()]);
    for r in records
        .iter()
        .filter(|r| r.status == ContradictionStatus::Open)
    {
        let mut pages = r.pages.clone();
        pages.dedup();
        assert!(pages.len() >= 2, "a self-record: {r:?}");
    }

    // The survivor's app sections appear once, at their place: prose, the merged section, the
    // open record's callout, then the footnote definitions.
    let s = block_on(w.page("OpenAI")).unwrap().unwrap().body;
    assert_eq!(s.matches("[!contradiction]").count(), 1, "{s}");
    assert!(!s.contains("(k1)") && s.contains("(k2)"), "{s}");
    for c in [c1, c2, c3] {
        assert_eq!(s.matches(&format!("[^{c}]:")).count(), 1, "{c} in {s}");
    }
    let section = s.find("## OpenAI Foundation").expect(&s);
    let first_callout = s.find("> [!contradiction]").unwrap();
    let first_def = s.find("\n[^").unwrap();
    assert!(section < first_callout && first_callout < first_def, "{s}");
    assert!(
        s[first_def..]
            .lines()
            .all(|l| l.trim().is_empty() || l.starts_with("[^")),
        "{s}"
    );
    // The third page shows the record as it is now: no callout names the merged page.
    let news = block_on(w.page("News")).unwrap().unwrap().body;
    assert_eq!(news.matches("[!contradiction]").count(), 1, "{news}");
    assert!(!news.contains("[[OpenAI Foundation"), "{news}");

    // Still one operation that rollback undoes.
    block_on(w.rollback(op.id)).unwrap();
    assert_eq!(state(&w), before);
    assert!(ledger(&w)
        .iter()
        .all(|r| r.status == ContradictionStatus::Open));
}
