//! Helpers the native integration tests share: a wiki on `MemoryStorage` with a manual clock, and
//! adding a markdown source. Each test binary includes this module (`mod common;`) and uses its
//! own subset of it.
#![allow(dead_code)]

use futures::executor::block_on;
use llm_wiki::clock::ManualClock;
use llm_wiki::compile::pipeline::{CompileOptions, CompileReport};
use llm_wiki::llm::transport::Transport;
use llm_wiki::llm::Cancel;
use llm_wiki::storage::memory::{MemoryBackend, MemoryStorage};
use llm_wiki::storage::OpenOptions;
use llm_wiki::wiki::{NewSource, Wiki};

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
