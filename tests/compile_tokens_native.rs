//! What the compile pass sends: each prompt carries what concerns its chunk or page, and no call is
//! paid twice or for nothing (issue #11's compile-token figure; BENCHMARKS.md).
#![cfg(not(target_arch = "wasm32"))]

use std::cell::{Cell, RefCell};

use futures::executor::block_on;
use llm_wiki::compile::model::LlmCompiler;
use llm_wiki::compile::pipeline::{CompileOptions, CompileReport};
use llm_wiki::compile::prompt::{attr_value, block, unescape_block};
use llm_wiki::llm::{Cancel, ChatRequest, ChatResponse, FinishReason, Llm, OnToken};
use llm_wiki::model::TokenUsage;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::text::estimate_tokens;
use llm_wiki::Error;

mod common;
use common::{add, compile_with_settings, open, W};

/// One recorded call: the task (`extract`, `integrate`), the user message, and whether the reply
/// was cut at the output cap.
struct Call {
    task: String,
    user: String,
    cut: bool,
}

/// The scripted endpoint's replies, with every call recorded; with `cut` set, a reply longer than
/// the request's `max_tokens` is cut there, as a model's is; with `pages_per_reply`, so is the
/// reply of a call writing more pages than that.
#[derive(Default)]
struct Recorder {
    calls: RefCell<Vec<Call>>,
    cut: Cell<bool>,
    pages_per_reply: Cell<Option<usize>>,
    /// Rewrites a reply: (task, reply JSON) → new reply JSON.
    rewrite: Option<Rewrite>,
}

type Rewrite = Box<dyn Fn(&str, serde_json::Value) -> serde_json::Value>;

impl Llm for Recorder {
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
        let mut text = llm_wiki::scripted::reply(req).text;
        if let Some(rewrite) = &self.rewrite {
            text = rewrite(&task, serde_json::from_str(&text).unwrap()).to_string();
        }
        let pages = llm_wiki::compile::prompt::blocks(&user, "page").len();
        let cut = self.cut.get()
            && req
                .max_tokens
                .is_some_and(|max| estimate_tokens(&text) > u64::from(max))
            || self.pages_per_reply.get().is_some_and(|n| pages > n);
        self.calls.borrow_mut().push(Call {
            task,
            user: user.clone(),
            cut,
        });
        if cut {
            return Err(Error::LlmTruncated {
                reason: "length".into(),
                max_tokens: req.max_tokens,
            });
        }
        Ok(ChatResponse {
            usage: TokenUsage {
                input: estimate_tokens(&req.system) + estimate_tokens(&user),
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

impl Recorder {
    fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.calls.borrow_mut())
    }
}

fn compile(w: &W, llm: &Recorder, options: &CompileOptions) -> CompileReport {
    let model = LlmCompiler {
        llm,
        max_output_tokens: None,
        model_name: "recorder".into(),
    };
    let r = block_on(w.compile(&model, options, &|_| {}, &Cancel::new())).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    r
}

/// Compiles the new sources with `llm` as the model `name` whose replies are capped at 1024
/// tokens, in a 16k window; returns the extract calls.
fn compile_capped(w: &W, llm: &Recorder, name: &str) -> Vec<Call> {
    let options = CompileOptions {
        context_window: 16_384,
        max_output_tokens: 1024,
        ..Default::default()
    };
    let model = LlmCompiler {
        llm,
        max_output_tokens: Some(1024),
        model_name: name.into(),
    };
    let r = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    llm.take()
        .into_iter()
        .filter(|c| c.task == "extract")
        .collect()
}

/// The contents of the `<tag>` block of a prompt.
fn section(user: &str, tag: &str) -> String {
    block(user, tag).map_or(String::new(), |(_, b)| unescape_block(b))
}

const ACME: &str = "# Acme\n\n## Acme Corp\n\nAcme Corp builds widgets in Ohio. It was founded in 1990.\n\n## Widgetron\n\nWidgetron was first released in 2015.\n";
const FLOW: &str = "# 流量控制\n\n## 背压\n\n背压是一种流量控制机制。它保护队列。\n\n## Kafka\n\nKafka uses backpressure between brokers and consumers.\n";

/// A wiki that already has pages for Acme Corp, Widgetron, 背压 and Kafka, with claims.
fn wiki_with_pages(backend: &MemoryBackend) -> (W, Recorder) {
    let w = open(backend, "tokens");
    let llm = Recorder::default();
    add(&w, "notes/acme.md", ACME);
    add(&w, "notes/flow.md", FLOW);
    compile(&w, &llm, &CompileOptions::default());
    llm.take();
    (w, llm)
}

/// Paragraphs of about `tokens` estimated tokens that each name `name` once.
fn filler(name: &str, tokens: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while estimate_tokens(&s) < tokens as u64 {
        i += 1;
        s.push_str(&format!(
            "Paragraph {i} says that {name} keeps a steady pace through season {i} of the long year.\n\n"
        ));
    }
    s
}

#[test]
fn each_extract_call_carries_the_index_lines_and_claims_of_the_pages_its_chunk_names() {
    let backend = MemoryBackend::new();
    let (w, llm) = wiki_with_pages(&backend);
    // Two chunks: the first names Acme Corp, the second 背压.
    let text = format!(
        "# Two topics\n\n{}{}",
        filler("Acme Corp", 700),
        filler("背压", 700)
    );
    add(&w, "notes/two.md", &text);
    let options = CompileOptions {
        context_window: 4096,
        max_output_tokens: 256,
        ..Default::default()
    };
    compile(&w, &llm, &options);
    let extracts: Vec<Call> = llm
        .take()
        .into_iter()
        .filter(|c| c.task == "extract")
        .collect();
    assert!(extracts.len() >= 2, "{} extract calls", extracts.len());
    let names = |c: &Call| {
        let source = section(&c.user, "source");
        (source.contains("Acme Corp"), source.contains("背压"))
    };
    let mut seen = (false, false);
    for c in &extracts {
        let index = section(&c.user, "index");
        let claims = section(&c.user, "existing-claims");
        let (acme, backpressure) = names(c);
        // Lines and claims of a page the chunk names, and only of those.
        assert_eq!(index.contains("Acme Corp"), acme, "{index}");
        assert_eq!(index.contains("背压"), backpressure, "{index}");
        assert!(
            !index.contains("Widgetron") && !index.contains("Kafka"),
            "{index}"
        );
        assert_eq!(claims.contains("Ohio"), acme, "{claims}");
        assert_eq!(claims.contains("流量控制机制"), backpressure, "{claims}");
        // A claim of a named page that shares no word with the chunk is not worth its tokens.
        assert!(!claims.contains("保护队列"), "{claims}");
        assert!(!claims.contains("2015"), "{claims}");
        seen.0 |= acme && !backpressure;
        seen.1 |= backpressure && !acme;
    }
    assert_eq!(seen, (true, true), "a chunk naming only one of the two");
}

#[test]
fn existing_claims_most_alike_the_chunk_come_first_within_the_budget() {
    use llm_wiki::compile::extract::relevant_claim_lines;
    use llm_wiki::model::Claim;
    use llm_wiki::text::TokenEstimator;
    let claim = |id: &str, text: &str| Claim {
        id: id.into(),
        page: "p".into(),
        text: text.into(),
        source_key: "s".into(),
        source_version: "v".into(),
        quote: text.into(),
        verified: true,
        stance: Default::default(),
        from_description: None,
    };
    let claims = vec![
        claim("c1", "The bridge is painted red."),
        claim("c2", "The bridge opened in 1937 and spans the strait."),
        claim("c3", "Unrelated weather report from the north."),
        claim("c4", "大桥于1937年通车。"),
    ];
    let est = TokenEstimator::default();
    let lines = relevant_claim_lines(
        "The bridge opened in 1938 over the strait.",
        &claims,
        1000,
        &est,
    );
    let ids: Vec<&str> = lines
        .lines()
        .map(|l| l.trim_start_matches("- [").split(']').next().unwrap())
        .collect();
    assert_eq!(ids[0], "c2", "{lines}");
    assert!(ids.contains(&"c1"), "shares 'the bridge': {lines}");
    assert!(!ids.contains(&"c4"), "shares no token: {lines}");
    // CJK matches by unigrams and bigrams.
    let cjk = relevant_claim_lines("那座大桥哪年通车？", &claims, 1000, &est);
    assert!(cjk.starts_with("- [c4]"), "{cjk}");
    // The budget cuts the list in rank order.
    let one = relevant_claim_lines(
        "The bridge opened in 1938 over the strait.",
        &claims,
        est.estimate(lines.lines().next().unwrap()) + 1,
        &est,
    );
    assert_eq!(one.lines().count(), 1, "{one}");
    assert!(one.starts_with("- [c2]"), "{one}");
}

#[test]
fn claims_that_score_the_same_are_listed_in_page_then_id_order_every_time() {
    use llm_wiki::compile::extract::relevant_claim_lines;
    use llm_wiki::model::Claim;
    use llm_wiki::text::TokenEstimator;
    let claim = |id: String, page: &str, text: String| Claim {
        id,
        page: page.into(),
        text: text.clone(),
        source_key: "s".into(),
        source_version: "v".into(),
        quote: text,
        verified: true,
        stance: Default::default(),
        from_description: None,
    };
    // The same sentence on two pages, among others sharing some of its words: their scores are
    // sums over several tokens of different weights.
    let same = "The borrow checker rejects two mutable references to one value at a time.";
    let mut claims: Vec<Claim> = (0..30)
        .map(|i| {
            let words = [
                "borrow",
                "checker",
                "mutable",
                "references",
                "value",
                "time",
            ];
            claim(
                format!("c{i:02}"),
                "page-x",
                format!(
                    "Note {i}: the {} and the {} matter.",
                    words[i % 6],
                    words[(i + 2) % 6]
                ),
            )
        })
        .collect();
    claims.push(claim("cb".into(), "page-b", same.into()));
    claims.push(claim("ca".into(), "page-a", same.into()));
    let est = TokenEstimator::default();
    let chunk = "Two mutable references to one value are rejected by the borrow checker at a time.";
    let first = relevant_claim_lines(chunk, &claims, 10_000, &est);
    let (a, b) = (first.find("[ca]").unwrap(), first.find("[cb]").unwrap());
    assert!(a < b, "page-a before page-b: {first}");
    // Each ranker hashes its own sets: the order must not depend on that.
    for _ in 0..100 {
        assert_eq!(relevant_claim_lines(chunk, &claims, 10_000, &est), first);
    }
}

#[test]
fn a_reply_cut_at_the_cap_recuts_the_rest_of_the_source_and_later_sources_start_smaller() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "tokens");
    let llm = Recorder::default();
    // The scripted extraction of this text runs to ~3 reply tokens per text token (up to its
    // 24-claim limit): more than 1024 reply tokens for more than ~350 tokens of text.
    llm.cut.set(true);
    let run = |name: &str, key: &str, about: &str| -> Vec<Call> {
        add(&w, key, &format!("# {about}\n\n{}", filler(about, 1100)));
        compile_capped(&w, &llm, name)
    };
    let first = run("recorder", "notes/one.md", "Acme Corp");
    let cut: Vec<u64> = first
        .iter()
        .filter(|c| c.cut)
        .map(|c| estimate_tokens(&section(&c.user, "source")))
        .collect();
    // The first chunk (cut at the prior, a reply as long as its text), then its first half; the
    // rest is cut to what the replies showed before it is sent (halving alone would have it
    // cut too).
    assert_eq!(cut.len(), 2, "cut calls of {cut:?} tokens");
    assert!(
        cut[0] <= 1024 * 8 / 10 && cut[1] <= cut[0] / 2 + 16,
        "{cut:?}"
    );
    assert!(first.iter().filter(|c| !c.cut).count() >= 4);

    let second = run("recorder", "notes/two.md", "Widgetron");
    assert!(second.len() >= 4, "{} calls", second.len());
    assert!(
        second.iter().all(|c| !c.cut),
        "the next source starts from the size that fits"
    );
    // Every chunk was extracted: the parts cover the text.
    let parts: Vec<String> = second
        .iter()
        .map(|c| {
            let (attrs, _) = block(&c.user, "source").unwrap();
            attr_value(attrs, "part").unwrap()
        })
        .collect();
    let n = second.len();
    assert_eq!(parts.last().unwrap(), &format!("{n}/{n}"), "{parts:?}");

    // Another model (or reply cap) learns for itself.
    let third = run("another", "notes/three.md", "Kafka");
    assert!(third.iter().any(|c| c.cut));
}

#[test]
fn a_page_the_source_only_names_costs_no_integrate_call() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "tokens");
    let llm = Recorder::default();
    // "Hammer Drill" is a section with nothing but code: the source names it, says nothing of it.
    add(
        &w,
        "notes/tools.md",
        "# Tools\n\nTools make work easier. Acme Corp sells them.\n\n## Hammer Drill\n\n```\ndrill --fast\n```\n\n## Acme Corp\n\nAcme Corp sells tools in Ohio.\n",
    );
    let r = compile(&w, &llm, &CompileOptions::default());
    let report = &r.compiled[0];
    let pages = block_on(w.all_pages()).unwrap();
    let drill = pages
        .iter()
        .find(|p| p.title == "Hammer Drill")
        .expect("the page the source names");
    assert!(report.created.contains(&drill.key));
    let integrated: Vec<String> = integrate_calls(&llm.take())
        .into_iter()
        .flat_map(|(keys, _)| keys)
        .collect();
    assert!(!integrated.contains(&drill.key), "{integrated:?}");
    // Pages with something to say are still written by the model.
    let acme = pages.iter().find(|p| p.title == "Acme Corp").unwrap();
    assert!(integrated.contains(&acme.key), "{integrated:?}");
    assert!(acme.body.contains("Ohio"), "{}", acme.body);
    assert_eq!(drill.body.trim(), "", "{}", drill.body);
}

/// The integrate calls among `calls`: the keys of the pages each writes (one for `integrate`,
/// several for `integrate_pages`) and the keys of its link targets.
fn integrate_calls(calls: &[Call]) -> Vec<(Vec<String>, Vec<String>)> {
    use llm_wiki::compile::prompt::blocks;
    calls
        .iter()
        .filter(|c| c.task == "integrate" || c.task == "integrate_pages")
        .map(|c| {
            let keys = blocks(&c.user, "page")
                .into_iter()
                .map(|(attrs, _)| attr_value(attrs, "key").unwrap())
                .collect();
            let targets = section(&c.user, "link-targets")
                .lines()
                .map(|l| {
                    l.trim_start_matches("- [[")
                        .split(['|', ']'])
                        .next()
                        .unwrap()
                        .to_string()
                })
                .collect();
            (keys, targets)
        })
        .collect()
}

#[test]
fn integrate_calls_list_the_pages_their_text_names_as_link_targets() {
    let backend = MemoryBackend::new();
    let (w, llm) = wiki_with_pages(&backend);
    add(
        &w,
        "notes/texas.md",
        "# Acme in Texas\n\n## Acme Corp\n\nAcme Corp opened a plant in Texas in 2020.\n\n## Texas\n\nTexas is a large state in the south.\n\n## Kafka\n\nThe plant streams its events with Kafka.\n",
    );
    let r = compile(&w, &llm, &CompileOptions::default());
    let source_page = block_on(w.sources())
        .unwrap()
        .into_iter()
        .find(|s| s.key == "notes/texas.md")
        .unwrap()
        .summary_page
        .unwrap();
    let pages = block_on(w.all_pages()).unwrap();
    let key_of = |title: &str| pages.iter().find(|p| p.title == title).unwrap().key.clone();
    let calls = integrate_calls(&llm.take());
    let call_of = |key: &str| {
        calls
            .iter()
            .find(|(keys, _)| keys.iter().any(|k| k == key))
            .unwrap_or_else(|| panic!("an integrate call for {key}: {calls:?}"))
    };
    // Acme Corp has a body: a call of its own, whose targets are what its text names (the
    // new fact names Texas; nothing on the page names Kafka).
    let (keys, acme) = call_of(&key_of("Acme Corp"));
    assert_eq!(keys.len(), 1);
    assert!(acme.contains(&source_page), "{acme:?}");
    assert!(acme.contains(&key_of("Texas")), "{acme:?}");
    assert!(!acme.contains(&key_of("Kafka")), "{acme:?}");
    // The new pages (the summary and Texas) share a call; the summary names Acme Corp, Texas
    // and Kafka.
    let (keys, new_pages) = call_of(&source_page);
    assert!(keys.contains(&key_of("Texas")), "{keys:?}");
    for t in ["Acme Corp", "Texas", "Kafka"] {
        assert!(new_pages.contains(&key_of(t)), "{t} in {new_pages:?}");
    }
    // No call is offered a page this source's text never names.
    for (keys, targets) in &calls {
        for t in ["Widgetron", "背压"] {
            assert!(!targets.contains(&key_of(t)), "{t} offered to {keys:?}");
        }
    }
    assert!(r.compiled[0].created.contains(&key_of("Texas")));
}

#[test]
fn new_pages_share_integrate_calls_and_a_reply_that_does_not_fit_is_split() {
    let tools = ["Hammer", "Chisel", "Saw", "Plane", "Rasp", "Awl"];
    let mut text = String::from("# Workshop\n\nA workshop keeps six tools.\n");
    for t in tools {
        text.push_str(&format!(
            "\n## {t}\n\nThe {t} is a hand tool made of steel.\n"
        ));
    }
    let written = |pages_per_reply: Option<usize>| {
        let backend = MemoryBackend::new();
        let w = open(&backend, "tokens");
        let llm = Recorder::default();
        llm.pages_per_reply.set(pages_per_reply);
        let cap = 2048u32;
        add(&w, "notes/workshop.md", &text);
        let model = LlmCompiler {
            llm: &llm,
            max_output_tokens: Some(cap),
            model_name: "recorder".into(),
        };
        let options = CompileOptions {
            max_output_tokens: u64::from(cap),
            ..Default::default()
        };
        let r = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
        assert!(r.failed.is_empty(), "{:?}", r.failed);
        // Every new page holds its fact, cited.
        let pages = block_on(w.all_pages()).unwrap();
        for t in tools {
            let p = pages.iter().find(|p| p.title == t).unwrap();
            assert!(
                p.body
                    .contains(&format!("The {t} is a hand tool made of steel")),
                "{t}: {}",
                p.body
            );
            assert!(p.body.contains("[^c"), "{t}: {}", p.body);
        }
        llm.take()
    };
    // Seven new pages (six tools and the summary) in one or two calls, not seven.
    let calls = written(None);
    let writes = integrate_calls(&calls);
    let pages: usize = writes.iter().map(|(keys, _)| keys.len()).sum();
    assert_eq!(pages, 7, "{writes:?}");
    assert!(writes.len() <= 2, "{} integrate calls", writes.len());
    // A model that cannot fit more than two pages in a reply: the pages are split until they fit.
    let calls = written(Some(2));
    let cut_shared = calls
        .iter()
        .filter(|c| c.task == "integrate_pages" && c.cut)
        .count();
    assert!(cut_shared >= 1, "the shared call was cut");
    // Every page of a cut call was then written by a call that was not cut.
    let integrates: Vec<&Call> = calls
        .iter()
        .filter(|c| c.task.starts_with("integrate"))
        .collect();
    let writes = integrate_calls(&calls);
    let mut asked: Vec<&String> = writes.iter().flat_map(|(keys, _)| keys).collect();
    let mut written: Vec<&String> = writes
        .iter()
        .zip(&integrates)
        .filter(|(_, c)| !c.cut)
        .flat_map(|((keys, _), _)| keys)
        .collect();
    asked.sort();
    asked.dedup();
    written.sort();
    assert_eq!(asked, written);
}

#[test]
fn a_short_source_does_not_shrink_the_chunks_of_the_next() {
    // The first chunk of a long source, in a wiki that compiled `before` first (estimated tokens).
    let first_chunk = |before: Option<String>| -> u64 {
        let backend = MemoryBackend::new();
        let w = open(&backend, "tokens");
        let llm = Recorder::default();
        let model = LlmCompiler {
            llm: &llm,
            max_output_tokens: Some(2048),
            model_name: "recorder".into(),
        };
        let options = CompileOptions::default();
        let extract = |key: &str, text: String| -> Vec<Call> {
            add(&w, key, &text);
            let r = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
            assert!(r.failed.is_empty(), "{:?}", r.failed);
            llm.take()
                .into_iter()
                .filter(|c| c.task == "extract")
                .collect()
        };
        if let Some(text) = before {
            assert_eq!(extract("notes/short.md", text).len(), 1);
        }
        let calls = extract(
            "notes/long.md",
            format!("# Long\n\n{}", filler("Widgetron", 3000)),
        );
        assert!(calls.len() > 1);
        estimate_tokens(&section(&calls[0].user, "source"))
    };
    // A 300-token source's reply is mostly its fixed part: it says little of how long the reply
    // to a full chunk runs, so the next source starts as in a new wiki (at the prior: a reply as
    // long as its text, 80 % of the cap).
    let fresh = first_chunk(None);
    assert!((1400..=1638).contains(&fresh), "{fresh}");
    assert_eq!(
        first_chunk(Some(format!("# Short\n\n{}", filler("Acme Corp", 300)))),
        fresh
    );
}

#[test]
fn a_chunk_that_does_not_repeat_the_name_is_still_checked_against_its_claims() {
    let backend = MemoryBackend::new();
    let (w, llm) = wiki_with_pages(&backend);
    // The last chunk says "It was founded in 1991." of Acme Corp without naming it.
    let text = format!(
        "# Acme update\n\n{}{}It was founded in 1991.\n",
        filler("Acme Corp", 600),
        filler("the river", 700)
    );
    add(&w, "notes/update.md", &text);
    let options = CompileOptions {
        context_window: 4096,
        max_output_tokens: 256,
        ..Default::default()
    };
    compile(&w, &llm, &options);
    let calls = llm.take();
    let last = calls
        .iter()
        .find(|c| c.task == "extract" && section(&c.user, "source").contains("1991"))
        .unwrap();
    assert!(!section(&last.user, "source").contains("Acme Corp"));
    let claims = section(&last.user, "existing-claims");
    assert!(claims.contains("It was founded in 1990."), "{claims}");
}

#[test]
fn one_character_titles_are_found_as_whole_tokens() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "tokens");
    let llm = Recorder::default();
    add(
        &w,
        "notes/tea.md",
        "# 饮品\n\n## 茶\n\n茶是一种饮料。\n\n## C\n\nC is a language.\n",
    );
    compile(&w, &llm, &CompileOptions::default());
    llm.take();
    add(
        &w,
        "notes/green.md",
        "# 绿茶\n\n绿茶是一种茶，产于中国。Some write it in C.\n",
    );
    compile(&w, &llm, &CompileOptions::default());
    let calls = llm.take();
    let extract = calls.iter().find(|c| c.task == "extract").unwrap();
    let index = section(&extract.user, "index");
    assert!(index.contains("[[茶]]"), "{index}");
    assert!(index.contains("[[C]]"), "{index}");
    let offered: Vec<String> = integrate_calls(&calls)
        .into_iter()
        .flat_map(|(_, targets)| targets)
        .collect();
    assert!(offered.contains(&"茶".to_string()), "{offered:?}");
    // A one-letter title is a word, not any letter c.
    add(
        &w,
        "notes/cake.md",
        "# Cake\n\nA cake needs sugar and flour.\n",
    );
    compile(&w, &llm, &CompileOptions::default());
    let calls = llm.take();
    let index = section(
        &calls.iter().find(|c| c.task == "extract").unwrap().user,
        "index",
    );
    assert!(!index.contains("[[C]]"), "{index}");
}

#[test]
fn the_pages_a_body_links_stay_link_targets() {
    let backend = MemoryBackend::new();
    let w = open(&backend, "tokens");
    let llm = Recorder::default();
    add(
        &w,
        "notes/a.md",
        "# A\n\n## Acme Corp\n\nAcme Corp makes the Widgetron.\n\n## Widgetron\n\nWidgetron is a gadget.\n",
    );
    compile(&w, &llm, &CompileOptions::default());
    llm.take();
    let acme = block_on(w.all_pages())
        .unwrap()
        .into_iter()
        .find(|p| p.title == "Acme Corp")
        .unwrap();
    assert!(acme.body.contains("[[Widgetron]]"), "{}", acme.body);
    // The next source names Acme Corp only; the page's rewrite may keep its link.
    add(
        &w,
        "notes/b.md",
        "# B\n\n## Acme Corp\n\nAcme Corp moved to Texas in 2020.\n",
    );
    compile(&w, &llm, &CompileOptions::default());
    let calls = integrate_calls(&llm.take());
    let (_, targets) = calls
        .iter()
        .find(|(keys, _)| keys.contains(&acme.key))
        .expect("a call for Acme Corp");
    assert!(targets.contains(&"Widgetron".to_string()), "{targets:?}");
}

#[test]
fn a_shared_reply_is_taken_only_page_by_page_as_given() {
    let text = "# Workshop\n\nA workshop keeps tools.\n\n## Hammer\n\nThe Hammer drives nails.\n\n## Chisel\n\nThe Chisel cuts wood.\n";
    let run = |rewrite: Rewrite, budget: Option<u64>| {
        let backend = MemoryBackend::new();
        let w = open(&backend, "tokens");
        let llm = Recorder {
            rewrite: Some(rewrite),
            ..Default::default()
        };
        add(&w, "notes/workshop.md", text);
        let model = LlmCompiler {
            llm: &llm,
            max_output_tokens: None,
            model_name: "recorder".into(),
        };
        let options = CompileOptions {
            token_budget: budget,
            ..Default::default()
        };
        let r = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
        let pages = block_on(w.all_pages()).unwrap();
        (r, pages, llm.take())
    };
    // A reply that swaps two pages' bodies: neither is taken; each page is written on its own.
    let swap: Rewrite = Box::new(|task, mut v| {
        if task == "integrate_pages" {
            let pages = v["pages"].as_array_mut().unwrap();
            let bodies: Vec<serde_json::Value> = pages.iter().map(|p| p["body"].clone()).collect();
            for (i, p) in pages.iter_mut().enumerate() {
                p["body"] = bodies[(i + 1) % bodies.len()].clone();
            }
        }
        v
    });
    let (r, pages, calls) = run(swap, None);
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    for (title, own, other) in [
        ("Hammer", "drives nails", "cuts wood"),
        ("Chisel", "cuts wood", "drives nails"),
    ] {
        let p = pages.iter().find(|p| p.title == title).unwrap();
        assert!(
            p.body.contains(own) && !p.body.contains(other),
            "{title}: {}",
            p.body
        );
    }
    assert!(calls.iter().any(|c| c.task == "integrate"));
    // A reply that gives no page: the calls of their own are counted against the budget.
    let none: Rewrite = Box::new(|task, v| {
        if task == "integrate_pages" {
            serde_json::json!({"pages": []})
        } else {
            v
        }
    });
    let (unlimited, _, _) = run(Box::new(|_, v| v), None);
    // The budget check reserves a whole reply cap (2048) before each call.
    let budget = unlimited.usage.input + unlimited.usage.output + 2048;
    let (fits, _, _) = run(Box::new(|_, v| v), Some(budget));
    assert!(fits.failed.is_empty(), "{:?}", fits.failed);
    let (r, pages, _) = run(none, Some(budget));
    assert_eq!(r.failed.len(), 1, "over budget: {:?}", r.usage);
    assert_eq!(r.failed[0].code, "LLM_BUDGET_EXCEEDED");
    assert!(pages.is_empty(), "the wiki is left as it was");
}

#[test]
fn a_source_is_checked_against_claims_on_pages_it_does_not_name_and_a_record_needs_one_page() {
    use llm_wiki::storage::{Storage, Store};
    let backend = MemoryBackend::new();
    let w = open(&backend, "tokens");
    let llm = Recorder::default();
    // The first article's claim sits on its summary page, whose title the second never uses.
    add(
        &w,
        "notes/one.md",
        "# Understanding Backpressure\n\nThe default stream buffer holds 16 chunks before the producer pauses.\n",
    );
    compile(&w, &llm, &CompileOptions::default());
    add(
        &w,
        "notes/two.md",
        "# Backpressure in Stream Pipelines\n\nA pipeline connects a producer to a consumer. The default stream buffer holds 64 chunks before the producer pauses.\n",
    );
    let r = compile(&w, &llm, &CompileOptions::default());
    // The claim was checked: the model proposed the disagreement. But the two claims sit on
    // two summary pages and no page states both, so no record opens on it (issue 21, item 7);
    // the report says what was turned away.
    let rejected = &r.compiled[0].contradictions_rejected;
    assert_eq!(rejected.len(), 1, "{r:#?}");
    assert_eq!(
        rejected[0].reason,
        llm_wiki::compile::pipeline::RejectReason::DifferentPages
    );
    assert_eq!(
        rejected[0].pages,
        [
            "Understanding Backpressure",
            "Backpressure in Stream Pipelines"
        ]
    );
    assert!(block_on(w.storage().scan(Store::Ledger, ""))
        .unwrap()
        .is_empty());
}

#[test]
fn what_replies_showed_is_kept_for_the_next_connection() {
    use llm_wiki::llm::config::{Config, Provider};
    use llm_wiki::scripted::server::InProcess;
    // A reply cut at the cap costs a whole call; learning the model's reply length again in every
    // connection (each page load) would pay that on the first long source each time.
    let backend = MemoryBackend::new();
    let config = Config {
        provider: Provider::OpenAiCompatible,
        base_url: "http://scripted.test/v1".into(),
        model: "scripted-chat".into(),
        context_window: 16_384,
        max_output_tokens: 1024,
        ..Config::default()
    };
    let transport = InProcess::new(vec![]);
    // (extract calls, of them cut at the cap, the estimate's chunks) of compiling one new
    // source in a fresh connection.
    let run = |key: &str, about: &str| -> (usize, usize, usize) {
        let w = open(&backend, "tokens");
        block_on(w.set_llm_config(config.clone())).unwrap();
        add(&w, key, &format!("# {about}\n\n{}", filler(about, 1100)));
        let estimate = block_on(w.estimate_configured(&CompileOptions::default())).unwrap();
        transport.state().reset();
        let r = compile_with_settings(&w, transport.clone());
        assert!(r.failed.is_empty(), "{:?}", r.failed);
        let extract: Vec<serde_json::Value> = transport
            .state()
            .requests()
            .into_iter()
            .filter(|q| q["body"]["response_format"]["json_schema"]["name"] == "extract")
            .collect();
        let cut = extract
            .iter()
            .filter(|q| {
                let user = q["body"]["messages"].as_array().unwrap().last().unwrap()["content"]
                    .as_str()
                    .unwrap()
                    .to_string();
                // The scripted reply to it did not fit the cap.
                let reply = llm_wiki::compile::scripted::extract_reply(&user).to_string();
                estimate_tokens(&reply) > 1024
            })
            .count();
        assert!(transport.state().requests().len() > extract.len());
        (extract.len(), cut, estimate.sources[0].chunks)
    };
    let (calls, cut, estimated) = run("notes/one.md", "Acme Corp");
    assert!(cut >= 1 && calls > cut, "{calls} calls, {cut} cut");
    // Nothing learned yet: the estimate cuts chunks at the prior (a reply as long as its text,
    // 80 % of the 1024-token cap), as the compile's first call does.
    assert_eq!(estimated, 2);
    // A new connection (a reload) starts from what the replies showed: nothing is cut, and the
    // estimate counts the chunks the compile sends.
    let (calls, cut, estimated) = run("notes/two.md", "Widgetron");
    assert!(calls >= 4, "{calls} calls");
    assert_eq!(cut, 0, "{calls} calls");
    assert_eq!(estimated, calls);
}

#[test]
fn a_long_first_source_of_a_verbose_model_compiles() {
    // A model whose extraction runs to ~3 tokens per token of text, a 1024-token reply cap, and
    // nothing learned yet. Started at the chunk the window allows (twice the cap), the first
    // chunk was cut, then its half, then its quarter — and the source failed (F03: retries are
    // few). Started at the prior, two halvings reach a chunk whose reply fits.
    let backend = MemoryBackend::new();
    let w = open(&backend, "tokens");
    let llm = Recorder::default();
    llm.cut.set(true);
    add(
        &w,
        "notes/long.md",
        &format!("# Acme Corp\n\n{}", filler("Acme Corp", 9000)),
    );
    let extract = compile_capped(&w, &llm, "recorder");
    assert!(extract.iter().filter(|c| c.cut).count() <= 2);
    // Every chunk after the cut ones fits.
    assert!(extract.iter().skip(2).all(|c| !c.cut));
}

#[test]
fn the_estimate_counts_the_extract_prompts_the_compile_then_sends() {
    let backend = MemoryBackend::new();
    let (w, _) = wiki_with_pages(&backend);
    // A long source naming existing pages, so its chunks carry index lines and claims.
    let text = format!(
        "# Field notes\n\n{}{}",
        filler("Acme Corp", 2500),
        filler("背压", 2500)
    );
    add(&w, "notes/field.md", &text);
    let options = CompileOptions {
        context_window: 8192,
        max_output_tokens: 1024,
        ..Default::default()
    };
    let estimate = block_on(w.estimate(&options)).unwrap();
    // A terse model (a summary and two claims per chunk): no chunk is re-cut for a long reply.
    let llm = Recorder {
        rewrite: Some(Box::new(|task, mut v| {
            if task == "extract" {
                if let Some(c) = v.get_mut("claims").and_then(|c| c.as_array_mut()) {
                    c.truncate(2);
                }
                for k in ["entities", "relations", "contradictions"] {
                    v[k] = serde_json::json!([]);
                }
            }
            v
        })),
        ..Recorder::default()
    };
    let r = compile(&w, &llm, &options);
    let calls = llm.take();
    let extract: Vec<&Call> = calls.iter().filter(|c| c.task == "extract").collect();
    assert!(extract.len() > 2, "a long source: several chunks");
    let e = &estimate.sources[0];
    assert_eq!(
        e.chunks,
        extract.len(),
        "chunks cut as the compile cuts them"
    );
    // Each extract prompt is counted at least as sent (its chunk's index lines and claims are
    // within the source's slice and the chunk's claims budget) and no longer padded with a whole
    // index budget per chunk: the estimate bounds this source's cost within 2x.
    let sent: u64 = extract
        .iter()
        .map(|c| {
            estimate_tokens(&llm_wiki::compile::prompt::extract_system()) + estimate_tokens(&c.user)
        })
        .sum();
    assert!(
        e.input >= r.usage.input,
        "estimate {} < {} sent",
        e.input,
        r.usage.input
    );
    assert!(
        e.input <= 2 * r.usage.input,
        "estimate {} for {} sent ({sent} by the extract calls)",
        e.input,
        r.usage.input
    );
}

#[test]
fn a_source_over_the_budget_is_refused_before_any_call() {
    // A source whose estimated input alone is over the token budget fails at once, spending
    // nothing, instead of spending nearly the whole budget on every compile before failing; the
    // other sources compile.
    let backend = MemoryBackend::new();
    let w = open(&backend, "tokens");
    let llm = Recorder::default();
    let long: String = (0..1500)
        .map(|i| format!("Paragraph {i} says that widget {i} weighs {i} grams.\n\n"))
        .collect();
    add(&w, "notes/long.md", &format!("# Widgets\n\n{long}"));
    add(
        &w,
        "notes/short.md",
        "# Hammer\n\nThe Hammer drives nails.\n",
    );
    let estimate = block_on(w.estimate(&CompileOptions::default())).unwrap();
    let input = |key: &str| {
        estimate
            .sources
            .iter()
            .find(|s| s.key == key)
            .unwrap()
            .input
    };
    let budget = input("notes/long.md") / 2;
    assert!(input("notes/short.md") * 4 < budget, "{estimate:?}");
    let options = CompileOptions {
        token_budget: Some(budget),
        ..Default::default()
    };
    let model = LlmCompiler {
        llm: &llm,
        max_output_tokens: None,
        model_name: "recorder".into(),
    };
    let r = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
    assert_eq!(r.failed.len(), 1, "{:?}", r.failed);
    assert_eq!(r.failed[0].key, "notes/long.md");
    assert_eq!(r.failed[0].code, "LLM_BUDGET_EXCEEDED");
    assert!(
        r.failed[0].message.contains(" 0 used"),
        "{}",
        r.failed[0].message
    );
    assert_eq!(r.compiled.len(), 1);
    let calls = llm.take();
    assert!(!calls.is_empty());
    assert!(
        calls.iter().all(|c| !c.user.contains("widget 7 weighs")),
        "no call was made for the long source"
    );
    // Again: refused again at no cost.
    let r = block_on(w.compile(&model, &options, &|_| {}, &Cancel::new())).unwrap();
    assert_eq!(r.failed.len(), 1);
    let again: Vec<(String, usize)> = llm
        .take()
        .into_iter()
        .map(|c| (c.task, c.user.len()))
        .collect();
    assert!(again.is_empty(), "{again:?}");
}
