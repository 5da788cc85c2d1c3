//! The question set of issue #23 (`tests/fixtures/questions/*.json`) and its corpora, shared by
//! `tests/questions_native.rs` (which checks the set itself) and `examples/answer_bench.rs`
//! (which scores the product against a top-8-chunk RAG baseline). Included with `#[path]`.
//!
//! A question names its supporting sources by path: the manifest path of the real-size corpus
//! (`cargo/reference/manifest.html`, converted by `scripts/scale-corpus.mjs` into
//! `target/scale-corpus/`) or `zh/<file>` for the Chinese fixtures (`tests/fixtures/zh/`), which
//! is also the key those fixtures are added under.
#![allow(dead_code)]

use serde::Deserialize;

/// single-hop | multi-hop | unanswerable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// One source answers it.
    SingleHop,
    /// The answer combines two sources, or two parts of one.
    MultiHop,
    /// No source answers it: the product should decline.
    Unanswerable,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 3] = [Kind::SingleHop, Kind::MultiHop, Kind::Unanswerable];
    /// As in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Kind::SingleHop => "single-hop",
            Kind::MultiHop => "multi-hop",
            Kind::Unanswerable => "unanswerable",
        }
    }
}

/// One question of the set.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// Unique across the files (`en-001`, `zh-001`).
    pub id: String,
    /// As asked.
    pub question: String,
    /// `en`, `zh` (Simplified), `zh-Hant` (Traditional), `yue` (Cantonese).
    pub language: String,
    /// What kind of question.
    pub kind: Kind,
    /// Short verbatim phrases of the supporting sources (after [`norm_answer`]); a text holds the
    /// answer when it holds one of them. Empty for unanswerable questions.
    pub key_phrases: Vec<String>,
    /// Supporting sources by path (see the module docs). Empty for unanswerable questions.
    pub sources: Vec<String>,
    /// `calibrate` or `heldout`, fixed in the file.
    pub half: String,
    /// Asked in English about Chinese text.
    #[serde(default)]
    pub cross_lingual: bool,
}

/// One question file.
#[derive(Debug, Clone, Deserialize)]
pub struct QuestionFile {
    /// `scale-corpus` or `zh`.
    pub corpus: String,
    /// The questions.
    pub questions: Vec<Question>,
}

/// One source document of a corpus.
#[derive(Debug, Clone)]
pub struct Doc {
    /// The path the questions use.
    pub path: String,
    /// The source key the wiki gets (the URL for the real-size corpus, the path for `zh/`).
    pub key: String,
    /// Its title.
    pub title: String,
    /// Its markdown.
    pub text: String,
}

/// The question files, in order: the Cargo book and Rustonomicon set, then the Chinese one.
pub const FILES: [&str; 2] = ["cargo-nomicon.json", "zh.json"];

/// The repository root.
pub fn root() -> String {
    env!("CARGO_MANIFEST_DIR").to_string()
}

/// Reads `tests/fixtures/questions/<name>`. Panics on a malformed file (a fixture error).
pub fn load(name: &str) -> QuestionFile {
    let path = format!("{}/tests/fixtures/questions/{name}", root());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Text as compared for key phrases, the same rule as bench/run.mjs's `normAnswer`: lower case,
/// curly single quotes straight, no `\`, backticks, `*` or `_`, every whitespace run one space.
pub fn norm_answer(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars().flat_map(char::to_lowercase) {
        let c = match c {
            '\u{2018}' | '\u{2019}' => '\'',
            '\\' | '`' | '*' | '_' => continue,
            c => c,
        };
        if c.is_whitespace() {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    out
}

/// Whether `text` holds at least one of `phrases` (after [`norm_answer`]).
pub fn holds_any(text: &str, phrases: &[String]) -> bool {
    let t = norm_answer(text);
    phrases.iter().any(|p| t.contains(&norm_answer(p)))
}

/// Whether `text` holds every one of `phrases` (after [`norm_answer`]).
pub fn holds_all(text: &str, phrases: &[String]) -> bool {
    let t = norm_answer(text);
    phrases.iter().all(|p| t.contains(&norm_answer(p)))
}

/// The directory of the converted real-size corpus (`LLM_WIKI_SCALE_CORPUS` or
/// `target/scale-corpus`).
pub fn scale_dir() -> String {
    std::env::var("LLM_WIKI_SCALE_CORPUS")
        .unwrap_or_else(|_| format!("{}/target/scale-corpus", root()))
}

/// The real-size corpus's sources whose manifest path starts with one of `prefixes` (e.g.
/// `cargo/`), in manifest order; `Err` with the reason when the corpus is not there.
pub fn scale_docs(prefixes: &[&str]) -> Result<Vec<Doc>, String> {
    let dir = scale_dir();
    let manifest = std::fs::read_to_string(format!("{dir}/manifest.json")).map_err(|e| {
        format!("no real-size corpus in {dir} ({e}): run node scripts/scale-corpus.mjs")
    })?;
    let m: serde_json::Value = serde_json::from_str(&manifest).map_err(|e| e.to_string())?;
    let mut out = vec![];
    for s in m["sources"].as_array().into_iter().flatten() {
        let path = s["path"].as_str().unwrap_or_default();
        if !prefixes.iter().any(|p| path.starts_with(p)) {
            continue;
        }
        let file = format!("{dir}/{}", s["file"].as_str().unwrap_or_default());
        out.push(Doc {
            path: path.to_string(),
            key: s["key"].as_str().unwrap_or(path).to_string(),
            title: s["title"].as_str().unwrap_or(path).to_string(),
            text: std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?,
        });
    }
    Ok(out)
}

/// The Chinese fixtures (`tests/fixtures/zh/*.md` but the README), by file name, each keyed and
/// named `zh/<file>`, titled by its first heading.
pub fn zh_docs() -> Vec<Doc> {
    let dir = format!("{}/tests/fixtures/zh", root());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".md") && n != "README.md")
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(format!("{dir}/{n}")).unwrap();
            let title = text
                .lines()
                .find_map(|l| l.strip_prefix("# "))
                .unwrap_or(&n)
                .trim()
                .to_string();
            let path = format!("zh/{n}");
            Doc {
                key: path.clone(),
                path,
                title,
                text,
            }
        })
        .collect()
}
