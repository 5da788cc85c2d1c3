//! LLM lint checks against the scripted endpoint (Decision 14): estimate first, findings derived
//! from the request, malformed replies repaired or rejected whole, fixes as operations.
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use llm_wiki::lint::llm::LlmLintOptions;
use llm_wiki::lint::{FindingKind, Fix, LintOptions};
use llm_wiki::llm::structured::Budgeted;
use llm_wiki::llm::Cancel;
use llm_wiki::model::{Claim, Contradiction, ContradictionStatus, PageKind};
use llm_wiki::scripted::{Fault, ScriptedLlm};
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::{Batch, Expect, Storage, Store};
use llm_wiki::text::TokenEstimator;
use llm_wiki::wiki::PageEdit;
use llm_wiki::Error;

mod common;
use common::{add, open, W};

fn page(w: &W, title: &str, body: &str) {
    block_on(w.put_page(PageEdit {
        title: Some(title.into()),
        kind: Some(PageKind::Concept),
        body: Some(body.into()),
        ..Default::default()
    }))
    .unwrap();
}

fn claim(id: &str, page: &str, text: &str, source: &str) -> Claim {
    Claim {
        id: id.into(),
        page: page.into(),
        text: text.into(),
        source_key: source.into(),
        source_version: String::new(),
        quote: text.into(),
        verified: true,
        stance: Default::default(),
        from_description: None,
    }
}

/// Widgetron and Gadget history both link Acme Corp; their claims disagree on a year, and the
/// second source is a month newer.
fn wiki(backend: &MemoryBackend) -> W {
    let w = open(backend, "lint-llm");
    for (key, text) in [
        ("s1.md", "# Old\n\nWidgetron was first released in 2015.\n"),
        ("s2.md", "# New\n\nWidgetron was first released in 2016.\n"),
    ] {
        add(&w, key, text);
        w.clock().advance(30 * 86_400_000);
    }
    page(&w, "Acme Corp", "A maker of widgets.");
    page(
        &w,
        "Widgetron",
        "A gadget by [[Acme Corp]]. Released in 2015.",
    );
    page(
        &w,
        "Gadget history",
        "[[Acme Corp]] released Widgetron in 2016.",
    );
    let mut b = Batch::new();
    for c in [
        claim(
            "c0000000001",
            "Widgetron",
            "Widgetron was first released in 2015.",
            "s1.md",
        ),
        claim(
            "c0000000002",
            "Gadget history",
            "Widgetron was first released in 2016.",
            "s2.md",
        ),
    ] {
        b.put(
            Store::Claims,
            c.id.clone(),
            serde_json::to_vec(&c).unwrap(),
            Expect::Absent,
        );
    }
    common::commit_as_another_build(&w, b);
    w
}

fn kinds(findings: &[llm_wiki::lint::Finding]) -> Vec<FindingKind> {
    let mut k: Vec<FindingKind> = findings.iter().map(|f| f.kind).collect();
    k.sort();
    k
}

#[test]
fn estimate_then_check_then_record_the_contradiction() {
    let backend = MemoryBackend::new();
    let w = wiki(&backend);
    let options = LlmLintOptions::default();
    let estimate = block_on(w.lint_llm_estimate(&options, &TokenEstimator::default())).unwrap();
    assert_eq!(
        estimate.groups,
        vec![vec![
            "Acme Corp".to_string(),
            "Gadget history".to_string(),
            "Widgetron".to_string()
        ]]
    );
    assert_eq!(estimate.output, u64::from(options.max_output_tokens));
    assert!(estimate.input > 50 && estimate.total == estimate.input + estimate.output);
    // The estimate cost nothing and changed nothing.
    assert!(!lint_kinds(&w).contains(&FindingKind::PossibleContradiction));

    let llm = ScriptedLlm::new();
    let report = block_on(w.lint_llm(&llm, &options, &Cancel::new())).unwrap();
    assert_eq!(llm.calls(), 1);
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    assert_eq!(
        kinds(&report.findings),
        vec![
            FindingKind::PossibleContradiction,
            FindingKind::Superseded,
            FindingKind::DataGap,
            FindingKind::SuggestedQuestion
        ]
    );
    let sup = report
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::Superseded)
        .unwrap();
    assert_eq!(
        sup.page, "Widgetron",
        "the older source's claim is superseded"
    );
    assert!(sup.message.contains("c0000000001") && sup.message.contains("s2.md"));
    let gap = report
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::DataGap)
        .unwrap();
    assert_eq!(gap.page, "Acme Corp");
    // The prompt went out as the lint purpose (the lint model).
    assert_eq!(llm.requests()[0].purpose, llm_wiki::llm::Purpose::Lint);

    // lint() lists them; the contradiction's fix opens a ledger record with callouts.
    let listed = block_on(w.lint(&LintOptions::default())).unwrap();
    let c = listed
        .iter()
        .find(|f| f.kind == FindingKind::PossibleContradiction)
        .unwrap();
    assert!(matches!(c.fix, Some(Fix::RecordContradiction { .. })));
    let op = block_on(w.apply_fix(&c.id, None, false)).unwrap();
    let ledger: Vec<Contradiction> = block_on(w.storage().scan(Store::Ledger, ""))
        .unwrap()
        .into_iter()
        .map(|(_, r)| serde_json::from_slice(&r.data).unwrap())
        .collect();
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0].status, ContradictionStatus::Open);
    assert_eq!(ledger[0].opened_by, op.id);
    for k in ["Widgetron", "Gadget history"] {
        let body = block_on(w.page(k)).unwrap().unwrap().body;
        assert!(
            body.contains(&format!(
                "> [!contradiction] Sources disagree ({})",
                ledger[0].id
            )),
            "{body}"
        );
        assert!(
            body.contains("[^c0000000001]:") && body.contains("[^c0000000002]:"),
            "{body}"
        );
    }
    let after = lint_kinds(&w);
    assert!(!after.contains(&FindingKind::PossibleContradiction));
    assert!(
        after.contains(&FindingKind::Contradiction),
        "listed from the ledger now"
    );
    // Reversible like every fix.
    block_on(w.rollback(op.id)).unwrap();
    assert!(block_on(w.storage().scan(Store::Ledger, ""))
        .unwrap()
        .is_empty());
    assert!(!block_on(w.page("Widgetron"))
        .unwrap()
        .unwrap()
        .body
        .contains("[!contradiction]"));
}

fn lint_kinds(w: &W) -> Vec<FindingKind> {
    kinds(&block_on(w.lint(&LintOptions::default())).unwrap())
}

#[test]
fn a_malformed_reply_is_repaired_once_or_the_group_is_rejected_whole() {
    let backend = MemoryBackend::new();
    let w = wiki(&backend);
    let options = LlmLintOptions::default();

    let repaired = ScriptedLlm::new().fault_on(1, Fault::Malformed);
    let r = block_on(w.lint_llm(&repaired, &options, &Cancel::new())).unwrap();
    assert_eq!(repaired.calls(), 2, "one repair round trip");
    assert_eq!(r.findings.len(), 4);
    assert_eq!(r.usage.calls, 2);

    let broken = ScriptedLlm::new()
        .fault_on(1, Fault::Malformed)
        .fault_on(2, Fault::Malformed);
    let r = block_on(w.lint_llm(&broken, &options, &Cancel::new())).unwrap();
    assert_eq!(broken.calls(), 2);
    assert!(r.findings.is_empty());
    assert_eq!(r.rejected.len(), 1);
    assert!(
        !lint_kinds(&w).contains(&FindingKind::DataGap),
        "nothing kept from it"
    );
}

#[test]
fn the_lint_budget_is_checked_before_any_call() {
    let backend = MemoryBackend::new();
    let w = wiki(&backend);
    let options = LlmLintOptions::default();
    block_on(w.lint_llm(&ScriptedLlm::new(), &options, &Cancel::new())).unwrap();
    let before = lint_kinds(&w);
    let llm = ScriptedLlm::new();
    let tight = Budgeted::with_budget(&llm, 100, 1024, TokenEstimator::default());
    assert!(matches!(
        block_on(w.lint_llm(&tight, &options, &Cancel::new())),
        Err(Error::LlmBudgetExceeded { .. })
    ));
    assert_eq!(llm.calls(), 0);
    assert_eq!(lint_kinds(&w), before, "the last run's findings are kept");
}

#[test]
fn without_an_endpoint_the_llm_checks_say_so() {
    let backend = MemoryBackend::new();
    let w = wiki(&backend);
    let transport = llm_wiki::scripted::server::InProcess::new(vec![]).down();
    assert!(matches!(
        block_on(w.lint_llm_configured(transport, &LlmLintOptions::default(), &Cancel::new())),
        Err(Error::LlmConfig(_))
    ));
}

#[test]
fn findings_naming_removed_claims_are_no_longer_listed() {
    let backend = MemoryBackend::new();
    let w = wiki(&backend);
    block_on(w.lint_llm(
        &ScriptedLlm::new(),
        &LlmLintOptions::default(),
        &Cancel::new(),
    ))
    .unwrap();
    let listed = lint_kinds(&w);
    assert!(listed.contains(&FindingKind::Superseded), "{listed:?}");
    assert!(listed.contains(&FindingKind::PossibleContradiction));
    // The older source goes, and with it the claim the superseded finding names.
    block_on(w.remove_source("s1.md")).unwrap();
    assert!(block_on(w.storage().get(Store::Claims, "c0000000001"))
        .unwrap()
        .is_none());
    let listed = block_on(w.lint(&LintOptions::default())).unwrap();
    assert!(
        listed.iter().all(|f| !f.message.contains("c0000000001")),
        "{listed:#?}"
    );
    let kinds = kinds(&listed);
    assert!(!kinds.contains(&FindingKind::Superseded), "{kinds:?}");
    assert!(!kinds.contains(&FindingKind::PossibleContradiction));
    // What names no claim stays (the gap, the question).
    assert!(kinds.contains(&FindingKind::DataGap), "{kinds:?}");
}
