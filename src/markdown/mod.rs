//! Markdown and the vault: page keys, and (as they land) frontmatter, wikilinks, rendering.

pub mod keys;
