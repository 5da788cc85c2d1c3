//! Lint: deterministic checks of the wiki's health, as structured findings with proposed fixes
//! that the user applies one by one ([`Wiki::apply_fix`](crate::wiki::Wiki::apply_fix)), each a committed operation.
//!
//! Checks: orphan pages, broken links (with the likely target), ambiguous links, links to missing
//! headings or blocks, missing attachments, malformed links, names linked on several pages without
//! a page of their own, likely duplicate pages (one name's words contained in another's), pages
//! without sources, pages whose sources changed or were removed since they were compiled, source
//! texts that no longer match their hash, stale pages, open contradictions, and index drift.
//!
//! This module holds the findings and fixes as JavaScript sees them; the checks are in `checks`
//! (links in `links`), applying a fix in `fix` (merging and splitting pages in `merge` and
//! `split`, rebuilding the app-written sections in `sections`), reverting a page in `revert`,
//! and the opt-in LLM checks in [`llm`].
//!
//! *Invariant:* a fix never rewrites a link that already resolves and never points a page at itself.

pub mod llm;

mod checks;
mod fix;
mod links;
mod merge;
mod revert;
mod sections;
mod split;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something is wrong (a broken link).
    Error,
    /// Worth a look (a likely duplicate).
    Warning,
    /// For information (an orphan page).
    Info,
}

/// What kind of problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// No page links here.
    Orphan,
    /// A link to a page that does not exist.
    BrokenLink,
    /// A link that several pages answer to.
    AmbiguousLink,
    /// A link to a heading the target page does not have.
    MissingHeading,
    /// A link to a block id the target page does not have.
    MissingBlock,
    /// An embed of an attachment that is not stored.
    MissingAttachment,
    /// A `[[…]]` that is not a well-formed link.
    MalformedLink,
    /// A name linked from several pages that has no page.
    MissingPage,
    /// Two pages that may be one.
    LikelyDuplicate,
    /// One page holding names that differ in a symbol (`C`, `C++`, `C#`; `I/O`, `I:O`), made
    /// when such names were matched as one: rename it to its title's key and let the other
    /// names have pages of their own.
    MergedNames,
    /// A page that cites no source.
    NoSources,
    /// A page whose source changed or was removed since it was compiled.
    SourceChanged,
    /// A source whose stored text no longer matches its version hash.
    SourceTextChanged,
    /// A page not updated for a long time.
    Stale,
    /// An open contradiction.
    Contradiction,
    /// index.md does not match the pages.
    IndexDrift,
    /// A page past the soft limit (`model::limits`): split it.
    PageTooLong,
    /// LLM check: claims of two pages that may contradict each other.
    PossibleContradiction,
    /// LLM check: a claim a newer source may have replaced.
    Superseded,
    /// LLM check: something a page should say but does not.
    DataGap,
    /// LLM check: a question worth asking, with sources worth adding.
    SuggestedQuestion,
    /// A source holds text addressed to a model ("ignore previous instructions", "you are
    /// now…", 忽略之前的指令…). It was compiled as data, not followed; worth a look.
    InstructionLike,
}

/// A fix the user may apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", tag = "action")]
pub enum Fix {
    /// Point the broken links to `from` on `page` at `to`.
    #[serde(rename_all = "camelCase")]
    RewriteLink {
        /// Page holding the links.
        page: String,
        /// The broken target as written.
        from: String,
        /// The page key to link instead.
        to: String,
    },
    /// Turn the broken links to `target` on `page` into plain text.
    #[serde(rename_all = "camelCase")]
    UnlinkBroken {
        /// Page holding the links.
        page: String,
        /// The broken target as written.
        target: String,
    },
    /// Create a page for `title` from the sentences of the pages that link to it.
    #[serde(rename_all = "camelCase")]
    CreatePage {
        /// Title of the new page.
        title: String,
        /// Pages that link to it.
        mentioned_on: Vec<String>,
    },
    /// Mark a contradiction resolved or scoped, with a note.
    #[serde(rename_all = "camelCase")]
    ResolveContradiction {
        /// Ledger record id.
        id: String,
    },
    /// Regenerate index.md from the pages.
    RebuildIndex,
    /// Open a contradiction ledger record for claims an LLM check found at odds (status open;
    /// its callout goes on each page).
    #[serde(rename_all = "camelCase")]
    RecordContradiction {
        /// The pages involved.
        pages: Vec<String>,
        /// The claim ids, sorted.
        claims: Vec<String>,
        /// What disagrees.
        description: String,
    },
    /// Split `page` into parts under the soft limit (`model::limits`): its lead, its human
    /// paragraphs and the sections that fit stay; the rest goes, whole sections first (a section
    /// longer than a part is cut between blocks, its heading repeated), to new pages
    /// `<title> (part 2)`, … of the same kind, each with the claims its lines cite; the page ends
    /// with a `## Parts` list linking them. One operation: `rollback` undoes it.
    #[serde(rename_all = "camelCase")]
    SplitPage {
        /// The page to split.
        page: String,
    },
    /// Rename `page` to the key its title gets now (stand-ins for illegal characters,
    /// [`crate::markdown::keys::page_key`]) and drop the aliases in `drop_aliases` (names the
    /// match rule tells apart from the title), as [`Wiki::rename_page`](crate::wiki::Wiki::rename_page) does: every link to it
    /// is rewritten in the same operation. The next compile that names a dropped alias gives it
    /// a page of its own.
    #[serde(rename_all = "camelCase")]
    RenamePage {
        /// The page's current key.
        page: String,
        /// Its title (kept).
        title: String,
        /// The aliases that leave it.
        drop_aliases: Vec<String>,
    },
    /// Merge page `merged` into `survivor`: the survivor takes the other's title (as an alias),
    /// aliases, tags, sources and body (under a heading with its title); every link to `merged`
    /// is rewritten to the survivor (on the survivor itself it becomes text, never a self-link);
    /// claims and ledger records move over — a record between the two pages is resolved with a
    /// note (no page contradicts itself) — and the app-written sections (facts, callouts,
    /// footnotes) of the survivor and of the pages of moved records are rebuilt as compile writes
    /// them, once, at the end; `merged` is deleted. One operation: `rollback` undoes it.
    #[serde(rename_all = "camelCase")]
    MergePages {
        /// The page that stays: the one more pages link to, then the older, then the smaller key.
        survivor: String,
        /// The page merged into it and deleted.
        merged: String,
    },
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Stable id (same problem, same id across runs): `f` + 10 hex of SHA-256.
    pub id: String,
    /// What kind.
    pub kind: FindingKind,
    /// How much it matters.
    pub severity: Severity,
    /// The page where the problem is (empty for wiki-wide findings).
    pub page: String,
    /// Other pages involved.
    pub related: Vec<String>,
    /// What is wrong, in words.
    pub message: String,
    /// A proposed fix, if there is one.
    pub fix: Option<Fix>,
    /// The claim ids an LLM check's finding names: it is listed only while they all exist
    /// (empty for the other findings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub claims: Vec<String>,
}

/// Options of [`Wiki::lint`](crate::wiki::Wiki::lint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct LintOptions {
    /// A page not updated for this many days is stale. Range 1–3650; default 180.
    pub stale_days: u32,
    /// Only these pages (keys; matched as `Wiki::page` matches them): the findings about them,
    /// reading their bodies and the page table only — for the pages an operation changed. The
    /// wiki-wide checks (source texts against their hashes, index drift) run in a full lint
    /// only. `None` (the default): every page.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub pages: Option<Vec<String>>,
}

impl Default for LintOptions {
    fn default() -> Self {
        LintOptions {
            stale_days: 180,
            pages: None,
        }
    }
}

pub(crate) fn finding(
    kind: FindingKind,
    severity: Severity,
    page: &str,
    related: Vec<String>,
    message: String,
    fix: Option<Fix>,
) -> Finding {
    let mut h = Sha256::new();
    h.update(format!("{kind:?}\0{page}\0{}\0{message}", related.join("\0")).as_bytes());
    let id = format!("f{}", &hex::encode(h.finalize())[..10]);
    Finding {
        id,
        kind,
        severity,
        page: page.to_string(),
        related,
        message,
        fix,
        claims: vec![],
    }
}

impl Finding {
    /// The finding, naming `claims` (see [`Finding::claims`]).
    pub(crate) fn naming(mut self, claims: Vec<String>) -> Finding {
        self.claims = claims;
        self
    }
}

/// The findings of this connection's last lint (kept in [`Wiki`](crate::wiki::Wiki)'s operation
/// state): what [`Wiki::apply_fix`](crate::wiki::Wiki::apply_fix) looks an id up in.
#[derive(Default)]
struct LastFindings(std::cell::RefCell<Vec<Finding>>);
