//! Markdown and the vault's file formats.
//!
//! - [`blocks`]: the one block cutter: a body as blocks, its prose, long fences and tables cut.
//! - [`passages`]: the one passage cutter: passages under heading paths, with line ranges
//!   (answer passages, source passages, compile chunks).
//! - [`dedup`]: the one definition of a duplicate block; dedup and append-mode merge.
//! - [`plain`]: plain text for quote matching; footnote references.
//! - [`keys`]: title → page key (a portable file name, CJK kept; Decision 6).
//! - [`frontmatter`]: YAML frontmatter read in every real-world shape and written as one block.
//! - [`page`]: cleaning what an LLM or a person hands in; the page file format.
//! - [`page_body`]: a body's app-written sections (facts, callouts, footnotes), assembled and
//!   stripped; which paragraphs are a human's.
//! - [`wikilinks`]: finding, validating and writing `[[links]]`.
//! - [`resolve`]: link targets → pages (case-insensitive, through aliases), backlinks.
//! - [`render`]: markdown → safe HTML.
//!
//! *Invariant:* nothing here does I/O or reads the clock; every function is pure over its inputs.

pub mod blocks;
pub mod dedup;
pub mod frontmatter;
pub mod keys;
pub mod obsidian;
pub mod page;
pub mod page_body;
pub mod passages;
pub mod plain;
pub mod render;
pub mod resolve;
pub mod wikilinks;
