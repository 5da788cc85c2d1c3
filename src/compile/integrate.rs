//! Integrate: one page + new facts → the page's new body (step 3 of the compile pipeline): what
//! the integrate call gets ([`IntegrateInput`]) and returns ([`PageDraft`], [`PageDrafts`]), with
//! the reply schemas.
//!
//! The LLM writes prose; the app owns everything that must be exact (footnote definitions, the
//! `## Facts` list, contradiction callouts, the check that human paragraphs survive), assembled by
//! [`crate::markdown::page_body`], which lint and removing a source use too.

use serde::{Deserialize, Serialize};

use crate::model::PageKind;

/// A claim as the integrate step sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// Claim id (also the footnote label).
    pub id: String,
    /// The claim.
    pub text: String,
    /// Verbatim quote from the source.
    pub quote: String,
    /// Whether the quote was found in the source.
    pub verified: bool,
    /// Key of the source's summary page (the footnote links it).
    pub source_page: String,
    /// Title of that page.
    pub source_title: String,
}

/// What the integrate call gets for one page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntegrateInput {
    /// Page key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Kind.
    pub kind: PageKind,
    /// The current body (empty for a new page).
    pub current_body: String,
    /// For a source page, the extracted summary; for others, a one-line description.
    pub brief: String,
    /// Facts to add, each to be cited with `[^id]`.
    pub facts: Vec<Fact>,
    /// Facts to remove (a corrected source no longer says them).
    pub retracted: Vec<Fact>,
    /// Relations worth a sentence (`A — uses → B`).
    pub relations: Vec<String>,
    /// Pages that may be linked, as `(key, title)`.
    pub link_targets: Vec<(String, String)>,
    /// schema.md.
    pub schema_md: String,
    /// Append mode: the page is too long to rewrite within the reply cap, so the model writes
    /// only new prose for the facts, which the app appends; `current_body` then holds the page's
    /// headings only, for context.
    #[serde(default)]
    pub append: bool,
}

/// What the integrate call returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageDraft {
    /// The full new markdown body (no frontmatter); in append mode, only the text to append.
    pub body: String,
    /// One line for index.md.
    pub summary: String,
}

/// The outline of a body (its heading lines), what an append-mode prompt shows of a long page.
pub fn outline(body: &str) -> String {
    body.lines()
        .filter(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// JSON Schema of [`PageDraft`] (strict-mode compatible).
pub fn page_draft_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "body": {"type": "string", "description": "The complete new page body in markdown, without frontmatter."},
            "summary": {"type": "string", "description": "One line describing the page, for the index."}
        },
        "required": ["body", "summary"],
        "additionalProperties": false
    })
}

/// JSON schema of the reply that writes several new pages at once: `{"pages": [{key, body,
/// summary}]}`, one entry per page asked for.
pub fn page_drafts_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "pages": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "key": {"type": "string", "description": "The key of the <page> block."},
                        "body": {"type": "string", "description": "The complete page body in markdown, without frontmatter."},
                        "summary": {"type": "string", "description": "One line describing the page, for the index."}
                    },
                    "required": ["key", "body", "summary"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["pages"],
        "additionalProperties": false
    })
}

/// The reply of [`page_drafts_schema`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageDrafts {
    /// One draft per page, with the page's key.
    pub pages: Vec<KeyedDraft>,
}

/// A [`PageDraft`] with the key of its page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedDraft {
    /// The page key as given in the prompt.
    pub key: String,
    /// The page body.
    pub body: String,
    /// One line for index.md.
    pub summary: String,
}

pub use crate::markdown::plain::footnote_refs;

#[cfg(test)]
mod tests {
    use super::*;

    const C1: &str = "c0000000001";
    const C2: &str = "c0000000002";

    #[test]
    fn footnote_refs_skip_definitions() {
        let body = format!("A [^{C1}] and [^{C2}] and [^{C1}].\n\n[^{C2}]: def\n[^note]");
        assert_eq!(footnote_refs(&body), vec![C1, C2, "note"]);
    }
}
