//! Pages stay free of duplicates and within their bounds (issue 20), for every model: the offline
//! compiler, the scripted endpoint, and scripted models that echo the outline they are shown in
//! append mode, reword it, or repeat what they write.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use futures::executor::block_on;
use llm_wiki::compile::model::LlmCompiler;
use llm_wiki::compile::pipeline::{CompileOptions, CompileReport};
use llm_wiki::compile::scripted::Echo;
use llm_wiki::llm::Cancel;
use llm_wiki::model::{Claim, Page};
use llm_wiki::scripted::{Fault, ScriptedLlm};
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::storage::Store;

use common::{add, assert_within_hard_limit, claims_of, duplicate_blocks, open, W};

/// Twelve notes about one product: each repeats the product's definition (the same sentence in
/// every source) and adds facts of its own under headings some of the others share, so the
/// product's page outgrows what a model can rewrite and goes to append mode.
fn notes() -> Vec<(String, String)> {
    const NAMES: [&str; 12] = [
        "amber", "birch", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo",
        "juniper", "kestrel", "lagoon",
    ];
    NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let text = format!(
                "# Widgetron notes {n}\n\n\
                 ## Widgetron\n\n\
                 Widgetron is a modular widget platform made by Acme. \
                 The {n} release of Widgetron added support for sensors made of {n} wood. \
                 In the {n} trial the Widgetron ran through a whole {n} season.\n\n\
                 ## Widgetron Batteries\n\n\
                 The {n} battery of Widgetron is wrapped in {n} cloth. \
                 Charging the {n} battery needs the {n} dock.\n\n\
                 ## Acme\n\n\
                 Acme ships the Widgetron from its {n} plant. \
                 The {n} plant of Acme sits by the {n} river.\n"
            );
            (format!("notes/widgetron-{:02}.md", i + 1), text)
        })
        .collect()
}

fn compile_with(w: &W, llm: &ScriptedLlm) -> CompileReport {
    let model = LlmCompiler {
        llm,
        // A small reply cap: pages past ~1.5 KB are extended in append mode.
        max_output_tokens: Some(768),
        model_name: "scripted".into(),
    };
    let options = CompileOptions {
        max_output_tokens: 768,
        ..CompileOptions::default()
    };
    block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap()
}

/// No block twice on any page, and every claim of a page cited on it exactly once in its
/// footnote definitions.
fn assert_clean(w: &W, context: &str) {
    let pages: Vec<Page> = block_on(w.all_pages()).unwrap();
    let claims = claims_of(w);
    for p in &pages {
        let dups = duplicate_blocks(&p.body);
        assert!(
            dups.is_empty(),
            "{context}: {} repeats {dups:?}\n{}",
            p.key,
            p.body
        );
        for c in claims.iter().filter(|c| c.page == p.key) {
            let def = format!("[^{}]:", c.id);
            assert_eq!(
                p.body.matches(&def).count(),
                1,
                "{context}: {} must define claim {} once\n{}",
                p.key,
                c.id,
                p.body
            );
        }
    }
}

#[test]
fn every_echoing_model_adds_only_what_is_new() {
    for echo in [
        None,
        Some(Echo::Outline),
        Some(Echo::Paraphrase),
        Some(Echo::Repeat),
    ] {
        let backend = MemoryBackend::new();
        let w = open(&backend, "echo");
        let mut appended = false;
        let llm = match echo {
            Some(e) => ScriptedLlm::new().fault_always(Fault::Echo(e)),
            None => ScriptedLlm::new(),
        };
        for (key, text) in notes() {
            add(&w, &key, &text);
            let before = block_on(w.page("Widgetron")).unwrap();
            let report = compile_with(&w, &llm);
            assert!(report.failed.is_empty(), "{echo:?}: {:?}", report.failed);
            assert_clean(&w, &format!("{echo:?} after {key}"));
            let after = block_on(w.page("Widgetron")).unwrap().unwrap();
            if let Some(before) = before {
                // Growth is what this source adds (its facts and their definitions), not the page
                // again: each note adds at most three facts about the product.
                let grown = after.body.len().saturating_sub(before.body.len());
                assert!(
                    grown < 2_000,
                    "{echo:?}: {key} grew the page by {grown} bytes\n{}",
                    after.body
                );
                appended |= before.body.len() > 2_000;
            }
        }
        assert!(appended, "{echo:?}: the page never reached append mode");
        // The definition every note repeats is one fact line citing every source that says it.
        let page = block_on(w.page("Widgetron")).unwrap().unwrap();
        let stated =
            |l: &&str| l.contains("modular widget platform made by") && !l.starts_with("[^");
        let line = page
            .body
            .lines()
            .find(stated)
            .unwrap_or_else(|| panic!("{echo:?}: the definition is gone\n{}", page.body));
        let body_lines = page.body.lines().filter(stated).count();
        assert_eq!(
            body_lines, 1,
            "{echo:?}: the definition is stated once\n{}",
            page.body
        );
        assert!(line.matches("[^").count() >= 2, "{echo:?}: {line}");
    }
}

#[test]
fn the_offline_compiler_adds_only_what_is_new() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "offline");
    for (key, text) in notes() {
        add(&w, &key, &text);
        let model = block_on(w.offline_compiler()).unwrap();
        let options = CompileOptions {
            context_window: 10_000_000,
            ..CompileOptions::default()
        };
        let report = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
        assert!(report.failed.is_empty());
        assert_clean(&w, &format!("offline after {key}"));
    }
}

/// `n` notes that each say six new things about one product, so its page fills up.
fn many_notes(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            let mut text = format!("# Field report {i}\n\n## Widgetron\n\n");
            for j in 0..6 {
                text.push_str(&format!(
                    "Widgetron unit {i}-{j} was tested by team {} in the {} valley. \
                     The Widgetron crew {i}-{j} logged the sensor readings from the {} ridge by hand.\n\n",
                    word(i * 7 + j),
                    word(i * 3 + j + 1),
                    word(i + j * 5 + 2)
                ));
            }
            (format!("reports/{i:03}.md"), text)
        })
        .collect()
}

/// A made-up word for `n` (letters only, so no two facts differ in their numbers alone).
fn word(n: usize) -> String {
    const SYL: [&str; 12] = [
        "ka", "ro", "mi", "tu", "se", "la", "vo", "ne", "pi", "da", "ge", "zu",
    ];
    let mut n = n + 13;
    let mut w = String::new();
    while n > 0 {
        w.push_str(SYL[n % 12]);
        n /= 12;
    }
    w
}

/// The written part of every page (human paragraphs aside: these wikis have none) is within
/// the hard limit, and every fact a source gave is a claim on that source's own pages.
fn assert_bounded(w: &W, context: &str) {
    let pages: Vec<Page> = block_on(w.all_pages()).unwrap();
    let claims = claims_of(w);
    assert_within_hard_limit(&pages, &claims, context);
    for s in block_on(w.sources()).unwrap() {
        let own: Vec<String> = s.summary_page.iter().chain(&s.parts).cloned().collect();
        let on_own: std::collections::BTreeSet<&str> = claims
            .iter()
            .filter(|c| c.source_key == s.key && own.contains(&c.page))
            .map(|c| c.quote.as_str())
            .collect();
        for c in claims.iter().filter(|c| c.source_key == s.key) {
            assert!(
                on_own.contains(c.quote.as_str()),
                "{context}: the fact {:?} of {} is on {} but not on the source's pages",
                c.text,
                s.key,
                c.page
            );
        }
    }
}

#[test]
fn a_full_page_keeps_its_bound_and_counts_the_facts_it_could_not_take() {
    use llm_wiki::model::limits;
    let backend = MemoryBackend::new();
    let w = open(&backend, "full");
    let llm = ScriptedLlm::new();
    let notes = many_notes(40);
    let mut full_at = None;
    for (i, (key, text)) in notes.iter().enumerate() {
        add(&w, key, text);
        let report = compile_with(&w, &llm);
        assert!(report.failed.is_empty(), "{:?}", report.failed);
        assert_bounded(&w, key);
        let page = block_on(w.page("Widgetron")).unwrap().unwrap();
        if full_at.is_none() && !page.more_facts.is_empty() {
            full_at = Some(i);
        }
    }
    let full_at = full_at.expect("the product page filled up");
    let page = block_on(w.page("Widgetron")).unwrap().unwrap();
    // Every source after the page filled is counted, with as many facts as it could not place.
    let counted: u32 = page.more_facts.iter().map(|m| m.facts).sum();
    assert!(
        page.more_facts.len() >= notes.len() - full_at - 1,
        "{:?}",
        page.more_facts
    );
    assert!(counted > 0);
    let section = page
        .body
        .split("## More facts")
        .nth(1)
        .expect("the section is rendered");
    assert!(section.contains("more facts in"), "{section}");
    assert!(
        section.lines().filter(|l| l.starts_with("- ")).count() <= limits::MORE_FACTS_LINES + 1,
        "{section}"
    );
    // The last source's facts about the product are on its summary page, as claims.
    let last = block_on(w.sources())
        .unwrap()
        .into_iter()
        .max_by_key(|s| s.key.clone())
        .unwrap();
    let summary = last.summary_page.unwrap();
    assert!(claims_of(&w)
        .iter()
        .any(|c| c.page == summary && c.text.contains("Widgetron unit 39-")));
    assert_clean(&w, "full page");

    // Removing a source that the page counts drops its count.
    let counted_source = page.more_facts.last().unwrap().source.clone();
    block_on(w.remove_source(&counted_source)).unwrap();
    let page = block_on(w.page("Widgetron")).unwrap().unwrap();
    assert!(page.more_facts.iter().all(|m| m.source != counted_source));
    assert_bounded(&w, "after removing a source");
}

#[test]
fn the_offline_compiler_keeps_pages_bounded() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "offline-full");
    for (key, text) in many_notes(70) {
        add(&w, &key, &text);
        let model = block_on(w.offline_compiler()).unwrap();
        let options = CompileOptions {
            context_window: 10_000_000,
            ..CompileOptions::default()
        };
        let report = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
        assert!(report.failed.is_empty());
    }
    assert_bounded(&w, "offline");
    assert_clean(&w, "offline");
    let page = block_on(w.page("Widgetron")).unwrap().unwrap();
    assert!(
        !page.more_facts.is_empty(),
        "the page never filled: {} bytes",
        page.body.len()
    );
}

#[test]
fn a_source_with_more_facts_than_a_page_holds_continues_on_parts() {
    use llm_wiki::model::limits;
    let backend = MemoryBackend::new();
    let w = open(&backend, "parts");
    // One long source of 120 sections.
    let mut text = String::from("# Almanac\n\n");
    for s in 0..120 {
        text.push_str(&format!("## Region {}\n\n", word(s * 11)));
        for j in 0..3 {
            // Long sentences: the source's 60 facts (`MAX_CLAIMS_PER_SOURCE`) are more than its
            // summary page is planned to hold.
            text.push_str(&format!(
                "The {a} region grows {b} beans in the {c} field beside the old {d} road, where the {a} \
                 growers have kept the {b} seed stock since the {e} flood of the {c} valley took the \
                 lower farms. Its {d} farmers sell them at the {e} market every week of the {a} season, \
                 loading the {b} carts before dawn and driving them down the {c} pass to the {e} square \
                 where the {d} traders wait.\n\n",
                a = word(s * 11),
                b = word(s * 5 + j),
                c = word(s + j * 7),
                d = word(s * 2 + j + 3),
                e = word(s * 13 + j)
            ));
        }
    }
    add(&w, "almanac.md", &text);
    let llm = ScriptedLlm::new();
    let model = LlmCompiler {
        llm: &llm,
        max_output_tokens: Some(1024),
        model_name: "scripted".into(),
    };
    let options = CompileOptions {
        context_window: 32_768,
        max_output_tokens: 1024,
        ..CompileOptions::default()
    };
    let report = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let source = block_on(w.source("almanac.md")).unwrap().unwrap().source;
    assert!(
        !source.parts.is_empty(),
        "{} claims on one page",
        report.compiled[0].claims
    );
    assert_bounded(&w, "almanac");
    let summary = block_on(w.page(source.summary_page.as_ref().unwrap()))
        .unwrap()
        .unwrap();
    for part in &source.parts {
        let p = block_on(w.page(part)).unwrap().unwrap();
        assert!(
            summary.body.contains(&format!("[[{part}")),
            "{part} is linked from the summary page"
        );
        assert!(
            p.body.len() <= limits::SOFT_BYTES,
            "{part}: {} bytes",
            p.body.len()
        );
    }
    // Removing the source removes its parts too.
    let removed = block_on(w.remove_source("almanac.md")).unwrap();
    assert_eq!(removed.parts, source.parts);
    for part in &source.parts {
        assert!(block_on(w.page(part)).unwrap().is_none());
    }
}

/// The product's page after `n` reports, through the scripted endpoint.
fn filled_wiki(name: &str, n: usize) -> (MemoryBackend, W) {
    let backend = MemoryBackend::new();
    let w = open(&backend, name);
    let llm = ScriptedLlm::new();
    for (key, text) in many_notes(n) {
        add(&w, &key, &text);
        let report = compile_with(&w, &llm);
        assert!(report.failed.is_empty(), "{:?}", report.failed);
    }
    (backend, w)
}

#[test]
fn lint_reports_a_page_past_its_soft_limit_and_splitting_it_keeps_every_fact() {
    use llm_wiki::lint::{FindingKind, Fix, LintOptions};
    use llm_wiki::model::limits;
    let (_b, w) = filled_wiki("split", 24);
    let page = block_on(w.page("Widgetron")).unwrap().unwrap();
    assert!(
        page.body.len() > limits::SOFT_BYTES,
        "{} bytes",
        page.body.len()
    );
    let findings = block_on(w.lint(&LintOptions::default())).unwrap();
    let long = findings
        .iter()
        .find(|f| f.kind == FindingKind::PageTooLong && f.page == "Widgetron")
        .unwrap_or_else(|| panic!("{findings:#?}"));
    assert!(
        long.message.starts_with("page too long:"),
        "{}",
        long.message
    );
    assert_eq!(
        long.fix,
        Some(Fix::SplitPage {
            page: "Widgetron".into()
        })
    );
    // Only pages past the soft limit are reported.
    for f in findings
        .iter()
        .filter(|f| f.kind == FindingKind::PageTooLong)
    {
        let p = block_on(w.page(&f.page)).unwrap().unwrap();
        assert!(
            p.body.len() > limits::SOFT_BYTES
                || claims_of(&w).iter().filter(|c| c.page == p.key).count() > limits::SOFT_FACTS
        );
    }
    let before_claims: Vec<Claim> = claims_of(&w)
        .into_iter()
        .filter(|c| c.page == "Widgetron")
        .collect();
    let before = page.body.clone();

    let op = block_on(w.apply_fix(&long.id, None, false)).unwrap();
    let page = block_on(w.page("Widgetron")).unwrap().unwrap();
    assert!(
        page.body.len() <= limits::SOFT_BYTES,
        "{} bytes left",
        page.body.len()
    );
    let parts: Vec<Page> = block_on(w.all_pages())
        .unwrap()
        .into_iter()
        .filter(|p| p.title.starts_with("Widgetron (part "))
        .collect();
    assert!(!parts.is_empty());
    for p in &parts {
        assert!(
            p.body.len() <= limits::SOFT_BYTES,
            "{}: {} bytes",
            p.key,
            p.body.len()
        );
        assert!(
            page.body.contains(&format!("[[{}", p.key)),
            "{} is linked from the page",
            p.key
        );
    }
    // Every fact the page stated is stated, and cited, on the page or on one of its parts.
    let after = claims_of(&w);
    for c in &before_claims {
        let now = after
            .iter()
            .find(|a| a.id == c.id)
            .expect("no claim is lost");
        assert!(
            now.page == "Widgetron" || parts.iter().any(|p| p.key == now.page),
            "{now:?}"
        );
        let holder = if now.page == "Widgetron" {
            &page
        } else {
            parts.iter().find(|p| p.key == now.page).unwrap()
        };
        assert!(
            holder.body.contains(&format!("[^{}]:", c.id)),
            "{} on {}",
            c.id,
            holder.key
        );
    }
    assert_clean(&w, "after the split");
    assert!(block_on(w.page_table_differences()).unwrap().is_empty());
    let again = block_on(w.lint(&LintOptions::default())).unwrap();
    assert!(!again
        .iter()
        .any(|f| f.kind == FindingKind::PageTooLong && f.page == "Widgetron"));

    // One operation: rolling it back gives the page back and takes the parts away.
    block_on(w.rollback(op.id)).unwrap();
    assert_eq!(block_on(w.page("Widgetron")).unwrap().unwrap().body, before);
    for p in &parts {
        assert!(block_on(w.page(&p.key)).unwrap().is_none());
    }
    assert!(block_on(w.page_table_differences()).unwrap().is_empty());
}

#[test]
fn a_lint_of_some_pages_reads_them_alone_and_finds_what_a_full_lint_finds_there() {
    use llm_wiki::lint::{FindingKind, LintOptions};
    let (_b, w) = filled_wiki("scoped", 8);
    // A broken link and a human edit to find.
    let acme = block_on(w.page("Widgetron")).unwrap().unwrap();
    block_on(w.put_page(llm_wiki::wiki::PageEdit {
        key: Some(acme.key.clone()),
        body: Some(format!(
            "{}\n\nSee [[Widgetronn]] and [[Missing thing]].\n",
            acme.body
        )),
        ..Default::default()
    }))
    .unwrap();
    let full = block_on(w.lint(&LintOptions::default())).unwrap();
    let wide = [FindingKind::SourceTextChanged, FindingKind::IndexDrift];
    for p in block_on(w.pages()).unwrap() {
        let before = w.io_stats();
        let scoped = block_on(w.lint(&LintOptions {
            pages: Some(vec![p.key.clone()]),
            ..LintOptions::default()
        }))
        .unwrap();
        let read = w.io_stats().since(&before).of(Store::Pages).reads;
        assert!(read <= 1, "{}: read {read} pages", p.key);
        let expected: Vec<_> = full
            .iter()
            .filter(|f| !wide.contains(&f.kind))
            .filter(|f| f.page == p.key || f.related.contains(&p.key))
            .collect();
        let got: Vec<_> = scoped.iter().collect();
        assert_eq!(got, expected, "{}", p.key);
    }
    assert!(full
        .iter()
        .any(|f| f.kind == FindingKind::BrokenLink && f.page == "Widgetron"));
}
