//! # llm-wiki
//!
//! A library that turns a person's raw notes and clipped web pages into a persistent, interlinked
//! markdown wiki written and maintained by an LLM, kept on the person's own device.
//!
//! The core is pure Rust and runs natively under `cargo test --features test-support`; the
//! browser parts (IndexedDB, `fetch`, the JS API) sit behind small traits and
//! `cfg(target_arch = "wasm32")`. See `ARCHITECTURE.md` for the code map, its layers and their
//! invariants. "Decision N" in the docs is a heading of `docs/decisions.md`; a field case such
//! as "F21" is a section of `docs/field-cases.md`.
//!
//! Entry points: [`wiki::Wiki`] (the kernel, generic over [`storage::Storage`] and
//! [`clock::Clock`], with each operation in an `impl Wiki` block of its own module); on wasm,
//! the `Wiki` class exported to JavaScript from `src/wasm/`.

#![warn(missing_docs)]

pub mod clock;
pub mod compile;
pub mod documents;
pub mod error;
pub mod extractive;
pub mod folder;
pub mod history;
pub mod injection;
pub mod lint;
pub mod llm;
pub mod markdown;
pub mod mirror;
pub mod model;
pub mod page_table;
pub mod payload;
pub mod query;
pub mod records;
#[cfg(feature = "test-support")]
pub mod scripted;
pub mod search;
pub mod search_ops;
pub mod settings;
pub mod sources;
pub mod storage;
pub mod text;
pub mod util;
pub mod vault;
pub mod vault_files;
pub mod views;
pub mod wiki;

#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use error::{Error, Result};
