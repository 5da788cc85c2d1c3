//! Extractive text methods: what the offline model and the query's passage ranking compute from
//! text without an LLM.
//!
//! - [`sentences`]: prose split into verbatim sentences.
//! - [`textrank`]: TextRank sentence ranking (Mihalcea & Tarau 2004) and the topic tokens it
//!   compares sentences by.
//! - [`terms`]: the terms a corpus of sources is about (headings, recurring capitalised
//!   multi-word terms, recurring CJK terms), cached per corpus.
//! - [`stopwords`]: the one list of function words.
//!
//! *Invariant:* nothing here does I/O or reads the clock; every function is pure over its inputs,
//! and every sentence it returns is a verbatim slice of its input.

pub mod sentences;
pub mod stopwords;
pub mod terms;
pub mod textrank;

/// Name of the offline (extractive) model in the log, and the tag of every page it writes (an
/// extractive answer saved as a page too).
pub const OFFLINE: &str = "offline";
