//! The compile pass: sources → interlinked wiki pages (see `ARCHITECTURE.md`).

pub mod describe;
pub mod extract;
pub mod integrate;
pub mod links;
pub mod model;
pub mod offline;
pub mod pipeline;
pub mod prompt;
pub mod proposals;
pub mod provenance;
pub mod remove;
pub mod resolve;
pub mod run;
#[cfg(feature = "test-support")]
pub mod scripted;
