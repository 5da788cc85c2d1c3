//! Helpers the native integration tests share: a wiki on `MemoryStorage` with a manual clock, and
//! adding a markdown source. Each test binary includes this module (`mod common;`) and uses its
//! own subset of it.
#![allow(dead_code)]

use futures::executor::block_on;
use llm_wiki::clock::ManualClock;
use llm_wiki::compile::pipeline::{CompileOptions, CompileReport};
use llm_wiki::llm::transport::Transport;
use llm_wiki::llm::Cancel;
use llm_wiki::model::PageKind;
use llm_wiki::storage::memory::{MemoryBackend, MemoryStorage};
use llm_wiki::storage::OpenOptions;
use llm_wiki::storage::{Batch, Expect, Store};
use llm_wiki::wiki::{NewSource, PageEdit, Wiki};

/// A wiki as the native tests open it.
pub type W = Wiki<MemoryStorage, ManualClock>;

/// Opens (creating) the wiki `name` on `backend`, its clock at 2026-11-29 (ms since the epoch).
pub fn open(backend: &MemoryBackend, name: &str) -> W {
    block_on(Wiki::open(
        backend,
        name,
        ManualClock::new(1_795_986_300_000),
        OpenOptions::default(),
    ))
    .unwrap()
}

/// Adds the markdown source `text` under `key`.
pub fn add(w: &W, key: &str, text: &str) {
    block_on(w.add_source(NewSource {
        key: Some(key.into()),
        mime: "text/markdown".into(),
        content: text.into(),
        ..Default::default()
    }))
    .unwrap();
}

/// Compiles every new or changed source with the wiki's stored settings over `transport`
/// (`Wiki::compile_configured`, default options, no progress, not cancelled).
pub fn compile_with_settings<T: Transport>(w: &W, transport: T) -> CompileReport {
    block_on(w.compile_configured(
        transport,
        &CompileOptions::default(),
        &|_| {},
        &Cancel::new(),
    ))
    .unwrap()
}

/// The blocks of `body` that repeat an earlier block, by the definition the pages must meet
/// (issue 20): text equal after NFKC, lower-casing, whitespace collapse and without footnote
/// markers (`[^c1]`) and list markers; a fenced code block is one block. Blocks are split here,
/// line by line, independently of the crate's own block parser: blank lines end a block, every
/// list item and every heading is a block of its own, a fence runs to its closing fence.
pub fn duplicate_blocks(body: &str) -> Vec<String> {
    use unicode_normalization::UnicodeNormalization;
    let mut blocks: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut fence: Option<String> = None;
    let flush = |cur: &mut String, blocks: &mut Vec<String>| {
        if !cur.trim().is_empty() {
            blocks.push(std::mem::take(cur));
        }
        cur.clear();
    };
    for line in body.lines() {
        let t = line.trim_start();
        if let Some(f) = &fence {
            cur.push_str(line);
            cur.push('\n');
            if t.starts_with(f.as_str())
                && t.trim_end().chars().all(|c| c == f.chars().next().unwrap())
            {
                fence = None;
                flush(&mut cur, &mut blocks);
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            flush(&mut cur, &mut blocks);
            let mark: String = t.chars().take_while(|c| *c == '`' || *c == '~').collect();
            fence = Some(mark);
            cur.push_str(line);
            cur.push('\n');
            continue;
        }
        let item = t.starts_with("- ")
            || t.starts_with("* ")
            || t.starts_with('#')
            || t.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if t.is_empty() || (item && line.len() == t.len()) {
            flush(&mut cur, &mut blocks);
        }
        if !t.is_empty() {
            cur.push_str(line);
            cur.push('\n');
        }
        if t.starts_with('#') {
            flush(&mut cur, &mut blocks);
        }
    }
    flush(&mut cur, &mut blocks);
    let norm = |b: &str| -> String {
        let mut s = String::new();
        let mut rest = b;
        while let Some(i) = rest.find("[^") {
            let after = &rest[i + 2..];
            match after.find(']') {
                Some(j)
                    if !after[..j].contains(char::is_whitespace)
                        && !after[j + 1..].starts_with(':') =>
                {
                    s.push_str(rest[..i].trim_end_matches(' '));
                    rest = &after[j + 1..];
                }
                _ => {
                    s.push_str(&rest[..i + 2]);
                    rest = after;
                }
            }
        }
        s.push_str(rest);
        let t = s.trim_start();
        let t = t
            .strip_prefix("- ")
            .or_else(|| t.strip_prefix("* "))
            .unwrap_or(t);
        let folded: String = t.nfkc().flat_map(char::to_lowercase).collect();
        folded.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let mut seen = std::collections::HashSet::new();
    blocks
        .iter()
        .map(|b| norm(b))
        .filter(|n| !n.is_empty() && !seen.insert(n.clone()))
        .collect()
}

/// Commits `batch` raw, as another build of the app would write it: as an operation of its own
/// (the op counter moves on), without this build's derived records (the page table, the search
/// index), which are then brought up to date on first use.
pub fn commit_as_another_build(w: &W, mut batch: llm_wiki::storage::Batch) {
    use llm_wiki::storage::{Expect, Storage, Store};
    let last = block_on(w.storage().get(Store::Meta, "ops"))
        .unwrap()
        .map(|r| {
            serde_json::from_slice::<serde_json::Value>(&r.data).unwrap()["last"]
                .as_u64()
                .unwrap()
        })
        .unwrap_or(0);
    batch.put(
        Store::Meta,
        "ops",
        serde_json::json!({ "last": last + 1 })
            .to_string()
            .into_bytes(),
        Expect::Any,
    );
    block_on(w.storage().commit(batch)).unwrap();
}

/// Every claim stored, in id order.
pub fn claims_of(w: &W) -> Vec<llm_wiki::model::Claim> {
    use llm_wiki::storage::Storage;
    block_on(w.storage().scan(llm_wiki::storage::Store::Claims, ""))
        .unwrap()
        .into_iter()
        .map(|(_, r)| serde_json::from_slice(&r.data).unwrap())
        .collect()
}

/// No page's body (these wikis have no human paragraphs, so all of it is the written part) or
/// facts pass the hard limit (`model::limits`).
pub fn assert_within_hard_limit(
    pages: &[llm_wiki::model::Page],
    claims: &[llm_wiki::model::Claim],
    context: &str,
) {
    use llm_wiki::model::limits;
    for p in pages {
        let facts = claims.iter().filter(|c| c.page == p.key).count();
        assert!(
            p.body.len() <= limits::HARD_BYTES && facts <= limits::HARD_FACTS,
            "{context}: {} has {} bytes and {facts} facts",
            p.key,
            p.body.len()
        );
    }
}

/// A chat model for query tests: records every request it is sent and answers as the scripted
/// endpoint does (Decision 14), or an answer call (a request without a JSON schema) with
/// `answer_override`. Its usage is the request's estimated input tokens, 10 output tokens, one
/// call; it streams its reply in 7-byte pieces.
#[derive(Default)]
pub struct Recording {
    /// Every request, in order.
    pub prompts: std::cell::RefCell<Vec<llm_wiki::llm::ChatRequest>>,
    /// The answer calls' reply, instead of the scripted one.
    pub answer_override: Option<String>,
    /// The largest request, in estimated tokens.
    pub largest: std::cell::Cell<u64>,
}

impl Recording {
    /// How many answer calls (requests without a JSON schema) it was sent.
    pub fn answer_calls(&self) -> usize {
        self.prompts
            .borrow()
            .iter()
            .filter(|r| r.json.is_none())
            .count()
    }

    /// The data blocks of the last answer call, `(key, text)`; empty when there was none.
    pub fn answer_blocks(&self) -> Vec<(String, String)> {
        let prompts = self.prompts.borrow();
        let Some(last) = prompts.iter().rev().find(|r| r.json.is_none()) else {
            return Vec::new();
        };
        llm_wiki::llm::prompt::source_blocks(&last.messages.last().unwrap().content)
            .into_iter()
            .map(|b| (b.key, b.text))
            .collect()
    }
}

impl llm_wiki::llm::Llm for Recording {
    async fn chat(
        &self,
        req: &llm_wiki::llm::ChatRequest,
        on_token: Option<llm_wiki::llm::OnToken<'_>>,
        _: &Cancel,
    ) -> llm_wiki::Result<llm_wiki::llm::ChatResponse> {
        use llm_wiki::text::estimate_tokens;
        self.prompts.borrow_mut().push(req.clone());
        let size: u64 = estimate_tokens(&req.system)
            + req
                .messages
                .iter()
                .map(|m| estimate_tokens(&m.content))
                .sum::<u64>();
        self.largest.set(self.largest.get().max(size));
        let text = match (&self.answer_override, &req.json) {
            (Some(a), None) => a.clone(),
            _ => llm_wiki::scripted::reply(req).text,
        };
        if let Some(f) = on_token {
            for chunk in text.as_bytes().chunks(7) {
                f(&String::from_utf8_lossy(chunk));
            }
        }
        Ok(llm_wiki::llm::ChatResponse {
            text,
            usage: llm_wiki::model::TokenUsage {
                input: size,
                output: 10,
                calls: 1,
                estimated: true,
            },
            finish: llm_wiki::llm::FinishReason::Stop,
            model: "rec".into(),
        })
    }
}

/// Adds a page by `put_page`; returns its key.
pub fn new_page(w: &W, title: &str, kind: PageKind, body: &str) -> String {
    block_on(w.put_page(PageEdit {
        title: Some(title.into()),
        kind: Some(kind),
        body: Some(body.into()),
        ..Default::default()
    }))
    .expect("put_page")
    .key
}

/// A wiki with a bit of everything: CJK pages and links, a table link, an attachment, a source
/// with an original, a corrected source, a rename, a delete, claims, a ledger record and a
/// config holding an API key.
pub fn populated(backend: &MemoryBackend, name: &str) -> W {
    let w = open(backend, name);
    block_on(w.add_source(NewSource {
        key: Some("https://example.org/ai".into()),
        url: Some("https://example.org/ai".into()),
        mime: "text/markdown".into(),
        content: "# 人工智能\n机器学习是人工智能的一个分支。\n".into(),
        original: Some(b"<html><body>original</body></html>".to_vec()),
        original_mime: Some("text/html".into()),
        ..Default::default()
    }))
    .unwrap();
    block_on(w.add_source(NewSource {
        key: Some("notes/w.md".into()),
        mime: "text/markdown".into(),
        content: "Widgetron was first released in 2015.\n".into(),
        ..Default::default()
    }))
    .unwrap();
    block_on(w.add_source(NewSource {
        key: Some("notes/w.md".into()),
        mime: "text/markdown".into(),
        content: "Widgetron was first released in 2016.\n".into(),
        ..Default::default()
    }))
    .unwrap();
    block_on(w.add_attachment("diagram.png", "image/png", b"\x89PNG fake")).unwrap();
    block_on(w.put_page(PageEdit {
        title: Some("人工智能".into()),
        kind: Some(PageKind::Concept),
        aliases: Some(vec!["Artificial Intelligence".into()]),
        tags: Some(vec!["ai".into()]),
        summary: Some("Machines that learn: an overview".into()),
        body: Some(
            "---\ncssclass: wide\n---\n## 概述\n见 [[机器学习]]。\n\n![[diagram.png]]\n".into(),
        ),
        ..Default::default()
    }))
    .unwrap();
    new_page(
        &w,
        "机器学习",
        PageKind::Concept,
        "## 监督学习\n属于 [[人工智能|AI]]。\n",
    );
    new_page(
        &w,
        "Rust: Ownership",
        PageKind::Concept,
        "| Page | Note |\n|---|---|\n| [[机器学习|ML]] | x |\n",
    );
    new_page(
        &w,
        "Temp",
        PageKind::Entity,
        "Links [[Rust： Ownership]].\n",
    );
    let mut b = Batch::new();
    b.put(
        Store::Claims,
        "c1",
        r#"{"id":"c1","page":"机器学习","text":"t","sourceKey":"https://example.org/ai","sourceVersion":"v","quote":"q","verified":true}"#.as_bytes().to_vec(),
        Expect::Absent,
    );
    b.put(
        Store::Ledger,
        "x1",
        r#"{"id":"x1","pages":["人工智能","机器学习"],"claims":["c1"],"description":"d","status":"open","openedBy":1}"#.as_bytes().to_vec(),
        Expect::Absent,
    );
    b.put(
        Store::Meta,
        "config",
        br#"{"provider":"openai-compatible","baseUrl":"https://api.openai.com/v1","model":"m","maxOutputTokens":1024}"#.to_vec(),
        Expect::Absent,
    );
    b.put(
        Store::Meta,
        "secrets",
        br#"{"apiKey":"sk-SECRET","headers":{"x-api-key":"sk-SECRET"}}"#.to_vec(),
        Expect::Absent,
    );
    commit_as_another_build(&w, b);
    block_on(w.rename_page("机器学习", "机器学习 (ML)")).unwrap();
    block_on(w.delete_page("Temp")).unwrap();
    w
}

/// The folder a mirror writes into inside the picked one, as the app names it.
pub const MIRROR_ROOT: &str = "llm-wiki";

/// One mirror run of `w` into `folder` (under [`MIRROR_ROOT`]).
pub fn mirror(w: &W, folder: &llm_wiki::folder::MemoryFolder) -> llm_wiki::mirror::MirrorReport {
    block_on(w.mirror(folder, MIRROR_ROOT)).unwrap()
}

/// One pull of what changed in `folder` into `w`.
pub fn pull(w: &W, folder: &llm_wiki::folder::MemoryFolder) -> llm_wiki::mirror::PullReport {
    block_on(w.mirror_pull(folder, MIRROR_ROOT)).unwrap()
}

/// A person's edit of page `key`'s body.
pub fn edit(w: &W, key: &str, body: &str) {
    block_on(w.put_page(PageEdit {
        key: Some(key.into()),
        body: Some(body.into()),
        ..Default::default()
    }))
    .unwrap();
}

/// A wiki with two pages (Alpha, a concept; Beta, an entity), mirrored into a new folder.
pub fn mirrored(backend: &MemoryBackend) -> (W, llm_wiki::folder::MemoryFolder) {
    let w = open(backend, "w");
    new_page(&w, "Alpha", PageKind::Concept, "First.\n");
    new_page(&w, "Beta", PageKind::Entity, "Second.\n");
    let folder = llm_wiki::folder::MemoryFolder::new();
    mirror(&w, &folder);
    (w, folder)
}

/// A second device joining the wiki mirrored in `folder`: a new wiki on `backend` that takes a
/// slot, imports the folder and takes it as its mirror.
pub fn join(backend: &MemoryBackend, name: &str, folder: &llm_wiki::folder::MemoryFolder) -> W {
    let w = open(backend, name);
    block_on(w.mirror_join_slot(folder, MIRROR_ROOT)).unwrap();
    block_on(w.import_folder(folder, MIRROR_ROOT)).unwrap();
    block_on(w.mirror_take(folder, MIRROR_ROOT)).unwrap();
    w
}

/// Compiles the pending sources with the offline compiler (no endpoint).
pub fn compile_offline(w: &W) -> llm_wiki::Result<CompileReport> {
    let texts: Vec<String> = block_on(w.sources())
        .unwrap()
        .iter()
        .filter_map(|s| block_on(w.source_text(&s.version)).ok())
        .collect();
    let model = llm_wiki::compile::offline::OfflineCompiler::new(&texts);
    let options = CompileOptions {
        context_window: 2_000_000,
        max_output_tokens: 256,
        ..Default::default()
    };
    block_on(w.compile(&model, &options, &|_| {}, &Cancel::new()))
}
