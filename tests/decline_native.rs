//! Declining when the wiki does not know (issue 23, item 3): a question whose best page and
//! source passage hold too little of it gets "the wiki has nothing on this", no model call, and
//! the closest pages as suggestions; a question they do hold is answered.
#![cfg(not(target_arch = "wasm32"))]

use futures::executor::block_on;
use llm_wiki::compile::model::LlmCompiler;
use llm_wiki::compile::pipeline::CompileOptions;
use llm_wiki::llm::Cancel;
use llm_wiki::query::{Answer, AskBudget, AskOptions, LlmQuery, OfflineQuery, DECLINED_ANSWER};
use llm_wiki::scripted::ScriptedLlm;
use llm_wiki::storage::memory::MemoryBackend;
use llm_wiki::text::TokenEstimator;

mod common;
use common::{add, open, Recording, W};

/// Topics of the notebook's other notes, with words of their own.
const TOPICS: &[(&str, [&str; 4])] = &[
    ("Beekeeping", ["hive", "queen", "smoker", "swarm"]),
    ("Sourdough", ["starter", "levain", "crumb", "proofing"]),
    ("Tide pools", ["anemone", "barnacle", "limpet", "urchin"]),
    ("Bookbinding", ["signature", "awl", "linen", "spine"]),
    ("Pottery", ["kiln", "glaze", "slip", "wheel"]),
    (
        "Birdwatching",
        ["warbler", "binoculars", "heron", "plumage"],
    ),
    ("Cheesemaking", ["rennet", "curd", "whey", "brine"]),
    (
        "Orienteering",
        ["compass", "bearing", "contour", "checkpoint"],
    ),
    ("Origami", ["crease", "valley", "crane", "sheet"]),
    ("Astronomy", ["telescope", "nebula", "eyepiece", "comet"]),
    (
        "Fermentation",
        ["kimchi", "crock", "lactobacillus", "airlock"],
    ),
    ("Knitting", ["purl", "skein", "gauge", "cable"]),
];

/// The aspects each topic's note has a section on.
const ASPECTS: [&str; 4] = ["history", "tools", "care", "mistakes"];

/// One note per topic, a section per aspect: 48 passages, enough for the idf to tell
/// ([`llm_wiki::query::relevance::MIN_COLLECTION`]).
fn notebook(w: &W) {
    for (i, (topic, words)) in TOPICS.iter().enumerate() {
        let mut text = format!("# {topic}\n\n");
        for (j, aspect) in ASPECTS.iter().enumerate() {
            let (a, b) = (words[j], words[(j + 1) % 4]);
            text.push_str(&format!(
                "## {topic} {aspect}\n\nOn {aspect}: the {a} matters more than the {b}. \
                 Note {i}.{j} keeps the {a} apart from the {b}.\n\n"
            ));
        }
        add(w, &format!("notes/{i:02}.md"), &text);
    }
}

/// A wiki of two sources on widgets and valves, compiled with the scripted endpoint, a Chinese
/// one on movable type, and (with `notebook`) a dozen other notes.
fn wiki() -> (MemoryBackend, W) {
    wiki_of(true)
}

fn wiki_of(with_notebook: bool) -> (MemoryBackend, W) {
    let backend = MemoryBackend::new();
    let w = open(&backend, "decline");
    if with_notebook {
        notebook(&w);
    }
    add(&w, "widgets.md", "# Widget notes\n\n## Widgetron\n\nWidgetron was first released in 2015. Widgetron is made by Acme Corp.\n\n## Acme Corp\n\nAcme Corp builds widgets in Ohio.\n");
    add(&w, "valves.md", "# Valves of the old pumping station\n\nThe station had three pumps.\n\n## Zephyrine valve\n\nThe Zephyrine valve was patented in 1911 by Ottilie Brandt of Bremen.\n");
    add(&w, "huozi.md", "# 活字印刷\n\n北宋庆历年间，毕昇发明了胶泥活字。每个字刻在一块胶泥上，用火烧硬。\n\n## 木活字\n\n元代王祯改用木活字，并发明了转轮排字架。\n");
    let llm = ScriptedLlm::new();
    let model = LlmCompiler {
        llm: &llm,
        max_output_tokens: None,
        model_name: "scripted".into(),
    };
    block_on(w.compile(&model, &CompileOptions::default(), &|_| {}, &Cancel::new())).unwrap();
    (backend, w)
}

fn budget() -> AskBudget {
    AskBudget {
        context_window: 16_384,
        max_output_tokens: 1024,
        estimator: TokenEstimator::default(),
    }
}

fn ask_offline(w: &W, q: &str, options: &AskOptions) -> Answer {
    block_on(w.ask(&OfflineQuery, q, options, budget(), None, &Cancel::new())).unwrap()
}

#[test]
fn a_question_about_what_no_source_mentions_is_declined_with_suggestions() {
    let (_b, w) = wiki();
    let a = ask_offline(
        &w,
        "Which npm registry mirror does Acme Corp recommend?",
        &AskOptions::default(),
    );
    assert!(a.declined && !a.grounded, "{a:?}");
    assert_eq!(a.answer, DECLINED_ANSWER);
    assert!(
        a.relevance < llm_wiki::query::DECLINE_BELOW,
        "{}",
        a.relevance
    );
    assert!(a.citations.is_empty() && a.source_citations.is_empty());
    // The closest pages: what the wiki has on Acme Corp.
    assert!(!a.suggestions.is_empty(), "{a:?}");
    assert!(a.suggestions.len() <= 3);
    let pages = block_on(w.all_pages()).unwrap();
    for s in &a.suggestions {
        assert!(pages.iter().any(|p| &p.key == s), "{s} is no page");
    }
}

#[test]
fn a_question_the_wiki_holds_is_answered() {
    let (_b, w) = wiki();
    let a = ask_offline(
        &w,
        "Who patented the Zephyrine valve?",
        &AskOptions::default(),
    );
    assert!(!a.declined && a.grounded, "{a:?}");
    assert!(a.relevance >= 0.9, "{}", a.relevance);
    assert!(a.suggestions.is_empty());
}

#[test]
fn with_an_endpoint_a_declined_question_makes_no_model_call() {
    let (_b, w) = wiki();
    let llm = Recording::default();
    let model = LlmQuery {
        llm: &llm,
        max_output_tokens: None,
    };
    let options = AskOptions {
        write_back: true,
        ..AskOptions::default()
    };
    let ask =
        |q: &str| block_on(w.ask(&model, q, &options, budget(), None, &Cancel::new())).unwrap();
    let a = ask("How many Kubernetes pods does Widgetron need?");
    assert!(a.declined && a.saved.is_none(), "{a:?}");
    // Without an endpoint embedding the decline is lexical and decided before routing: neither
    // a routing call nor an answer call is made.
    assert_eq!(llm.prompts.borrow().len(), 0, "no model call");
    let a = ask("When was Widgetron first released?");
    assert!(!a.declined && a.grounded, "{a:?}");
    assert_eq!(llm.answer_calls(), 1);
}

#[test]
fn chinese_questions_decline_on_a_word_no_source_has() {
    let (_b, w) = wiki();
    let known = ask_offline(&w, "毕昇发明了什么活字？", &AskOptions::default());
    assert!(!known.declined, "{known:?}");
    // 去世 ("died") occurs nowhere; the question's other words do.
    let unknown = ask_offline(&w, "毕昇是哪一年去世的？", &AskOptions::default());
    assert!(unknown.declined, "{unknown:?}");
    assert!(unknown.relevance < known.relevance);
}

#[test]
fn a_question_in_traditional_characters_over_simplified_text_is_answered() {
    let (_b, w) = wiki();
    // The Chinese source is in Simplified characters; the same questions in Traditional ones
    // score the same and are answered from it.
    for (simplified, traditional) in [
        ("毕昇发明了什么活字？", "畢昇發明了什麼活字？"),
        ("王祯发明了什么排字架？", "王禎發明了什麼排字架？"),
    ] {
        let s = ask_offline(&w, simplified, &AskOptions::default());
        let t = ask_offline(&w, traditional, &AskOptions::default());
        assert!(!t.declined && t.grounded, "{t:?}");
        assert_eq!(t.relevance, s.relevance, "{traditional}");
        assert_eq!(t.answer, s.answer, "{traditional}");
    }
}

#[test]
fn a_zero_threshold_never_declines_what_was_found() {
    let (_b, w) = wiki();
    let options = AskOptions {
        decline_below: 0.0,
        ..AskOptions::default()
    };
    let a = ask_offline(
        &w,
        "Which npm registry mirror does Acme Corp recommend?",
        &options,
    );
    assert!(!a.declined, "{a:?}");
    assert!(a.relevance > 0.0 && a.relevance < llm_wiki::query::DECLINE_BELOW);
}

#[test]
fn a_small_wiki_declines_only_a_question_none_of_whose_words_it_holds() {
    let (_b, w) = wiki_of(false);
    // "mirror", "npm" and "recommend" are absent, but three notes cannot tell a rare word
    // from a common one they happen to lack.
    let a = ask_offline(
        &w,
        "Which npm registry mirror does Acme Corp recommend?",
        &AskOptions::default(),
    );
    assert!(!a.declined, "{a:?}");
    assert!(
        a.relevance < llm_wiki::query::DECLINE_BELOW,
        "{}",
        a.relevance
    );
    let a = ask_offline(&w, "What is the capital of Peru?", &AskOptions::default());
    assert!(a.declined && a.relevance == 0.0, "{a:?}");
}

#[test]
fn a_question_in_another_script_that_only_a_source_passage_matches_is_not_declined() {
    // Chinese notes, never compiled (no page at all), one of which names a Zettelkasten. An
    // English question naming it matches that source passage by the one word the scripts share;
    // its other words cannot match Chinese text, so the score cannot tell, and the question is
    // declined only when none of its words occurs.
    let backend = MemoryBackend::new();
    let w = open(&backend, "decline-xling");
    const WORDS: [&str; 12] = [
        "蜂箱", "酵母", "海葵", "书脊", "陶窑", "苍鹭", "凝乳", "罗盘", "折纸", "星云", "泡菜",
        "毛线",
    ];
    const ASPECTS: [&str; 4] = ["历史", "工具", "保养", "错误"];
    for (i, a) in WORDS.iter().enumerate() {
        let mut text = format!("# 笔记{a}\n\n");
        for (j, aspect) in ASPECTS.iter().enumerate() {
            let b = WORDS[(i + j + 1) % WORDS.len()];
            text.push_str(&format!(
                "## {a}的{aspect}\n\n关于{aspect}：{a}比{b}更重要。第{i}.{j}条笔记把{a}和{b}分开。\n\n"
            ));
        }
        add(&w, &format!("notes/{i:02}.md"), &text);
    }
    add(
        &w,
        "zettel.md",
        "# 卡片盒\n\n卢曼用 Zettelkasten 管理他的九万张卡片，每张卡片都有编号和链接。\n",
    );
    let a = ask_offline(
        &w,
        "How did Luhmann number the cards in his Zettelkasten?",
        &AskOptions::default(),
    );
    assert!(a.cross_lingual, "{a:?}");
    assert!(!a.declined, "{a:?}");
    assert!(a.answer.contains("Zettelkasten"), "{}", a.answer);
    // A question none of whose words the wiki holds is still declined.
    let a = ask_offline(&w, "What is the capital of Peru?", &AskOptions::default());
    assert!(a.declined, "{a:?}");
}
