//! Lint: deterministic checks of the wiki's health, as structured findings with proposed fixes
//! that the user applies one by one ([`Wiki::apply_fix`]), each a committed operation.
//!
//! Checks: orphan pages, broken links (with the likely target), ambiguous links, links to missing
//! headings or blocks, missing attachments, malformed links, names linked on several pages without
//! a page of their own, likely duplicate pages (one name's words contained in another's), pages
//! without sources, pages whose sources changed or were removed since they were compiled, source
//! texts that no longer match their hash, stale pages, open contradictions, and index drift.
//!
//! *Invariant:* a fix never rewrites a link that already resolves and never points a page at itself.

pub mod llm;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::clock::Clock;
use crate::documents;
use crate::error::{Error, Result};
use crate::markdown::keys::match_key;
use crate::markdown::resolve::{attachment_extension, fold_name, Resolution, Resolver};
use crate::markdown::wikilinks::{self, Fragment, Item};
use crate::model::{
    limits, Author, Claim, Contradiction, ContradictionStatus, OpId, OperationKind, Page, PageKind,
    Source, SourceStatus,
};
use crate::storage::{Batch, Expect, Storage, Store};
use crate::wiki::{to_json, Wiki};

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
    /// match rule tells apart from the title), as [`Wiki::rename_page`] does: every link to it
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

/// Options of [`Wiki::lint`].
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

/// Levenshtein distance over characters (Levenshtein 1966), for "did you mean" targets.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Every page name's match key, computed once for a lint run.
struct NameKeys {
    /// (page key, match key of its title or one alias).
    keys: Vec<(String, String)>,
}

impl NameKeys {
    fn of(pages: &[Page]) -> Self {
        NameKeys {
            keys: pages
                .iter()
                .flat_map(|p| {
                    std::iter::once(&p.title)
                        .chain(&p.aliases)
                        .map(move |n| (p.key.clone(), match_key(n)))
                })
                .collect(),
        }
    }

    /// The page a broken target most likely meant (never the linking page itself): the smallest
    /// edit distance between match keys, accepted within a third of the target's length or when
    /// one name begins with the other (at least four characters: "Tokio runtime" → "Tokio").
    fn likely_target(&self, target: &str, self_key: &str) -> Option<String> {
        let t = match_key(target);
        if t.is_empty() {
            return None;
        }
        let limit = (t.chars().count() / 3).max(1);
        self.keys
            .iter()
            .filter(|(p, _)| p != self_key)
            .filter_map(|(p, k)| {
                let d = edit_distance(&t, k);
                let (short, long) = if k.len() <= t.len() { (k, &t) } else { (&t, k) };
                let prefix = short.chars().count() >= 4 && long.starts_with(short.as_str());
                (d <= limit || prefix).then(|| (d, p.clone()))
            })
            .min()
            .map(|(_, k)| k)
    }
}

/// Rewrites the broken links to `from` on page `page`: to `to` when given, else to plain text.
/// Links that resolve are never touched; a page is never pointed at itself. Returns the page key.
fn rewrite_broken(
    pages: &mut [Page],
    resolver: &Resolver,
    page: &str,
    from: &str,
    to: Option<&str>,
) -> Result<String> {
    if to == Some(page) {
        return Err(Error::InvalidInput(
            "a fix never points a page at itself".into(),
        ));
    }
    let p = pages
        .iter_mut()
        .find(|p| p.key == page)
        .ok_or_else(|| Error::NotFound(page.to_string()))?;
    p.body = wikilinks::rewrite(&p.body, |l| {
        if l.target != from || !matches!(resolver.resolve_link(l, Some(page)), Resolution::Missing)
        {
            return None;
        }
        Some(match to {
            Some(k) => wikilinks::write_link(
                l.embed,
                k,
                l.fragment.as_ref(),
                Some(l.alias.as_deref().unwrap_or(&l.target)),
                l.in_table,
            ),
            None => l.display(),
        })
    });
    Ok(page.to_string())
}

/// Merges page `merged` into `survivor` in `pages` (see [`Fix::MergePages`]; `pages` holds
/// the two and every page linking to `merged`, `resolver` resolves over every page) and returns
/// the merged page, removed from `pages`. Only links that resolve to `merged` are rewritten.
fn merge_pages(
    pages: &mut Vec<Page>,
    resolver: &Resolver,
    survivor: &str,
    merged: &str,
) -> Result<Page> {
    if survivor == merged {
        return Err(Error::InvalidInput(
            "a page cannot be merged into itself".into(),
        ));
    }
    if !pages.iter().any(|p| p.key == survivor) {
        return Err(Error::NotFound(format!("page {survivor:?}")));
    }
    if !pages.iter().any(|p| p.key == merged) {
        return Err(Error::NotFound(format!("page {merged:?}")));
    }
    let to = |key: &str| Resolution::Page(key.to_string());
    // Links into the merged page, everywhere: to the survivor, or text on the survivor itself.
    for p in pages.iter_mut() {
        let on_survivor = p.key == survivor;
        let on_merged = p.key == merged;
        let from = p.key.clone();
        p.body = wikilinks::rewrite(&p.body, |l| {
            let r = resolver.resolve_link(l, Some(&from));
            let into_merged = r == to(merged);
            // The merged body moves onto the survivor: its links to the survivor become text too.
            let into_survivor_from_merged = on_merged && r == to(survivor);
            if !(into_merged || into_survivor_from_merged) {
                return None;
            }
            if on_survivor || on_merged {
                return Some(l.as_plain_text());
            }
            Some(wikilinks::write_link(
                l.embed,
                survivor,
                l.fragment.as_ref(),
                Some(l.alias.as_deref().unwrap_or(&l.target)),
                l.in_table,
            ))
        });
    }
    let gone = pages.remove(
        pages
            .iter()
            .position(|p| p.key == merged)
            .expect("checked above"),
    );
    let s = pages
        .iter_mut()
        .find(|p| p.key == survivor)
        .expect("checked above");
    let mut names: Vec<String> = s.aliases.clone();
    for n in std::iter::once(&gone.title).chain(&gone.aliases) {
        let f = fold_name(n);
        if f != fold_name(&s.title) && !names.iter().any(|a| fold_name(a) == f) {
            names.push(n.clone());
        }
    }
    s.aliases = names;
    for t in &gone.tags {
        if !s.tags.contains(t) {
            s.tags.push(t.clone());
        }
    }
    for k in &gone.sources {
        if !s.sources.contains(k) {
            s.sources.push(k.clone());
        }
    }
    if s.summary.trim().is_empty() {
        s.summary = gone.summary.clone();
    }
    if !gone.body.trim().is_empty() {
        s.body = format!(
            "{}\n\n## {}\n\n{}\n",
            s.body.trim_end(),
            gone.title,
            gone.body.trim()
        );
    }
    Ok(gone)
}

/// Bytes and facts a part made by [`split_page`] is filled to: three quarters of the soft
/// limits, so a part has room to grow before lint reports it.
const PART_BYTES: usize = limits::SOFT_BYTES * 3 / 4;
const PART_FACTS: usize = limits::SOFT_FACTS * 3 / 4;

/// Splits page `key` of `pages` ([`Fix::SplitPage`]): the app's regenerated sections aside, the
/// page keeps its blocks in order while they fit in [`PART_BYTES`] and [`PART_FACTS`], and every
/// human paragraph (`human`, Decision 5: never moved); the blocks after go, in order, to new pages
/// `<title> (part N)` (pushed to `pages`, with keys not in `taken`), each filled the same way,
/// each section's heading repeated where its blocks continue. The page ends with a `## Parts`
/// list of links to its parts. Returns the new keys.
///
/// Errors: [`Error::NotFound`]; [`Error::InvalidInput`] when nothing would move.
fn split_page(
    pages: &mut Vec<Page>,
    key: &str,
    human: &[String],
    taken: &mut BTreeSet<String>,
    now: i64,
) -> Result<Vec<String>> {
    use crate::markdown::blocks::{blocks, BlockKind};
    use crate::markdown::plain::footnote_refs;
    let page = pages
        .iter()
        .find(|p| p.key == key)
        .cloned()
        .ok_or_else(|| Error::NotFound(format!("page {key:?}")))?;
    let body = crate::markdown::page_body::strip_app_sections(&page.body);
    let is_human = |text: &str| {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        !flat.is_empty() && human.iter().any(|h| h.contains(&flat))
    };
    /// One page being filled: its blocks, size, facts and the section heading it is in.
    #[derive(Default)]
    struct Fill<'a> {
        blocks: Vec<&'a str>,
        bytes: usize,
        facts: usize,
        heading: Option<&'a str>,
    }
    impl<'a> Fill<'a> {
        fn fits(&self, b: &str) -> bool {
            self.blocks.is_empty()
                || (self.bytes + b.len() + 2 <= PART_BYTES
                    && self.facts + footnote_refs(b).len() <= PART_FACTS)
        }
        fn push(&mut self, heading: Option<&'a str>, b: &'a str) {
            if let Some(h) = heading.filter(|_| heading != self.heading) {
                self.blocks.push(h);
                self.bytes += h.len() + 2;
                self.heading = heading;
            }
            self.bytes += b.len() + 2;
            self.facts += footnote_refs(b).len();
            self.blocks.push(b);
        }
    }
    let mut kept = Fill::default();
    let mut parts: Vec<Fill> = Vec::new();
    let mut heading: Option<&str> = None;
    for b in blocks(&body) {
        let text = &body[b.range.clone()];
        if matches!(b.kind, BlockKind::Heading(l) if l <= 2) {
            heading = Some(text);
            continue;
        }
        if is_human(text) || (parts.is_empty() && kept.fits(text)) {
            kept.push(heading, text);
            continue;
        }
        if parts.last().is_none_or(|p| !p.fits(text)) {
            parts.push(Fill::default());
        }
        parts.last_mut().expect("one").push(heading, text);
    }
    if parts.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{}: nothing the app or the model wrote can move to a part",
            page.title
        )));
    }
    let mut keys = Vec::new();
    let mut links = Vec::new();
    for (n, part) in parts.iter().enumerate() {
        let title = format!("{} (part {})", page.title, n + 2);
        let k = crate::markdown::keys::readable_unique_key(&title, page.kind.as_str(), taken);
        taken.insert(crate::markdown::keys::fold_key(&k));
        links.push(format!("- {}", documents::link_to(&k, &title)));
        pages.push(Page {
            key: k.clone(),
            title,
            kind: page.kind,
            summary: String::new(),
            aliases: vec![],
            tags: page.tags.clone(),
            sources: page.sources.clone(),
            created: now,
            updated: now,
            body: format!("{}\n", part.blocks.join("\n\n")),
            revision: 0,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        });
        keys.push(k);
    }
    let text = format!(
        "{}\n\n## Parts\n\n{}\n",
        kept.blocks.join("\n\n"),
        links.join("\n")
    );
    if let Some(p) = pages.iter_mut().find(|p| p.key == key) {
        p.body = crate::markdown::dedup::dedup(&text, human);
    }
    Ok(keys)
}

/// The claims and ledger a fix leaves, with what compile's finalize needs besides, to rebuild a
/// page's app-written sections (the `## Facts` list, contradiction callouts, footnote
/// definitions) exactly as compile and removing a source write them
/// ([`crate::markdown::page_body::finalize_body`]).
struct AppSections {
    claims: BTreeMap<String, Claim>,
    ledger: BTreeMap<String, Contradiction>,
    titles: BTreeMap<String, String>,
    source_pages: BTreeMap<String, (String, String)>,
}

impl AppSections {
    /// Rewrites `p`'s body with its app sections rebuilt (at the end, once each). `human`: the
    /// page's human paragraphs (Decision 5), which the rebuild never removes or moves.
    fn rebuild(&self, p: &mut Page, human: &BTreeMap<String, Vec<String>>) {
        let protected = human.get(&p.key).map_or(&[][..], Vec::as_slice);
        let page_claims: BTreeMap<String, Claim> = crate::util::btree_map(
            self.claims
                .values()
                .filter(|c| c.page == p.key)
                .map(|c| (c.id.clone(), c.clone())),
        );
        let open: Vec<&Contradiction> = self
            .ledger
            .values()
            .filter(|r| r.status == ContradictionStatus::Open && r.pages.contains(&p.key))
            .collect();
        let more = p.more_facts.clone();
        let f = crate::markdown::page_body::Finalize {
            page_claims: &page_claims,
            retracted: &BTreeSet::new(),
            open_contradictions: &open,
            all_claims: &self.claims,
            titles: &self.titles,
            source_pages: &self.source_pages,
            self_key: &p.key,
            protected,
            more_facts: &more,
        };
        p.body = crate::markdown::page_body::finalize_body(&p.body, &f, str::to_string);
    }

    /// After a split of `page` into `parts` (all in `pages`): the claims of `page` that a part's
    /// body cites move to that part (writing the changed claims and ledger records to `batch`; a
    /// record of a moved claim names the part too). Returns the pages whose app sections must be
    /// rebuilt: the page, its parts and the pages of changed records.
    fn move_cited(
        &mut self,
        batch: &mut Batch,
        pages: &[Page],
        page: &str,
        parts: &[String],
        _op: OpId,
    ) -> BTreeSet<String> {
        let mut rebuild: BTreeSet<String> = std::iter::once(page.to_string())
            .chain(parts.iter().cloned())
            .collect();
        for part in parts {
            let Some(p) = pages.iter().find(|p| p.key == *part) else {
                continue;
            };
            let cited: BTreeSet<String> = crate::markdown::plain::footnote_refs(&p.body)
                .into_iter()
                .collect();
            let mut moved: BTreeSet<String> = BTreeSet::new();
            for c in self
                .claims
                .values_mut()
                .filter(|c| c.page == page && cited.contains(&c.id))
            {
                c.page = part.clone();
                batch.put(Store::Claims, c.id.clone(), to_json(&*c), Expect::Any);
                moved.insert(c.id.clone());
            }
            for r in self
                .ledger
                .values_mut()
                .filter(|r| r.claims.iter().any(|c| moved.contains(c)))
            {
                if !r.pages.contains(part) {
                    r.pages.push(part.clone());
                    r.pages.sort();
                }
                let still = r
                    .claims
                    .iter()
                    .any(|c| self.claims.get(c).is_some_and(|c| c.page == page));
                if !still {
                    r.pages.retain(|k| k != page);
                }
                batch.put(Store::Ledger, r.id.clone(), to_json(&*r), Expect::Any);
                rebuild.extend(r.pages.iter().cloned());
            }
        }
        rebuild
    }

    /// Moves the claims and ledger records of page `merged` to `survivor` (writing the changed
    /// records to `batch`). A record left naming only the survivor is no contradiction between
    /// pages any more: an open one is resolved with a note. Returns the pages whose app sections
    /// must be rebuilt: the survivor when it has claims or records, and every page of a changed
    /// record.
    fn merge(
        &mut self,
        batch: &mut Batch,
        merged: &str,
        survivor: &str,
        op: OpId,
    ) -> BTreeSet<String> {
        let mut rebuild = BTreeSet::new();
        for c in self.claims.values_mut().filter(|c| c.page == merged) {
            c.page = survivor.to_string();
            batch.put(Store::Claims, c.id.clone(), to_json(&*c), Expect::Any);
            rebuild.insert(survivor.to_string());
        }
        for r in self
            .ledger
            .values_mut()
            .filter(|r| r.pages.iter().any(|k| k == merged))
        {
            for k in r.pages.iter_mut().filter(|k| *k == merged) {
                *k = survivor.to_string();
            }
            r.pages.sort();
            r.pages.dedup();
            if r.pages.len() < 2 && r.status == ContradictionStatus::Open {
                r.status = ContradictionStatus::Resolved;
                r.note = Some(format!(
                    "pages merged: {merged} into {survivor} (no longer a contradiction between two pages)"
                ));
                r.closed_by = Some(op);
            }
            batch.put(Store::Ledger, r.id.clone(), to_json(&*r), Expect::Any);
            rebuild.extend(r.pages.iter().cloned());
        }
        if self.claims.values().any(|c| c.page == survivor)
            || self.ledger.values().any(|r| {
                r.status == ContradictionStatus::Open && r.pages.iter().any(|k| k == survivor)
            })
        {
            rebuild.insert(survivor.to_string());
        }
        rebuild
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The human paragraphs (Decision 5) of each of `pages` as stored, by key: empty for a page
    /// no person edited since the model last wrote it (the page table says so without reading
    /// its history).
    async fn humans_of(&self, pages: &[Page]) -> Result<BTreeMap<String, Vec<String>>> {
        let mut out = BTreeMap::new();
        for p in pages {
            out.insert(p.key.clone(), self.human_paragraphs(&p.key, p).await?);
        }
        Ok(out)
    }

    /// The [`AppSections`] of the wiki whose pages are `pages` (after the fix).
    /// What rebuilding the app sections of `pages` (the pages a fix changes) needs: every
    /// page's title and every source's summary page (from the page table), the claims stated on
    /// `pages` and the contradiction records naming them, with those records' claims.
    async fn app_sections(&self, pages: &[Page]) -> Result<AppSections> {
        use crate::page_table::{list, PAGE_CLAIMS_PREFIX, PAGE_RECORDS_PREFIX};
        let table = self.page_table().await?;
        let sources: BTreeMap<String, Source> = self.read_map(Store::Sources).await?;
        let mut by_key: BTreeMap<String, Page> = table
            .rows()
            .map(|r| (r.key.clone(), r.page_without_body()))
            .collect();
        for p in pages {
            by_key.insert(p.key.clone(), p.clone());
        }
        let mut claim_ids: BTreeSet<String> = BTreeSet::new();
        let mut ledger: BTreeMap<String, Contradiction> = BTreeMap::new();
        for p in pages {
            claim_ids.extend(list(&self.storage, PAGE_CLAIMS_PREFIX, &p.key).await?);
            for id in list(&self.storage, PAGE_RECORDS_PREFIX, &p.key).await? {
                if let Some((r, _)) = self.read::<Contradiction>(Store::Ledger, &id).await? {
                    claim_ids.extend(r.claims.iter().cloned());
                    ledger.insert(id, r);
                }
            }
        }
        let mut claims = BTreeMap::new();
        for id in claim_ids {
            if let Some((c, _)) = self.read::<Claim>(Store::Claims, &id).await? {
                claims.insert(id, c);
            }
        }
        Ok(AppSections {
            source_pages: crate::markdown::page_body::summary_pages(&sources, &by_key),
            titles: by_key
                .iter()
                .map(|(k, p)| (k.clone(), p.title.clone()))
                .collect(),
            claims,
            ledger,
        })
    }
}

/// The findings of this connection's last lint (kept in [`Wiki`]'s operation state): what
/// [`Wiki::apply_fix`] looks an id up in.
#[derive(Default)]
struct LastFindings(std::cell::RefCell<Vec<Finding>>);

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Runs the deterministic checks. Findings are sorted by severity, kind and page.
    pub async fn lint(&self, options: &LintOptions) -> Result<Vec<Finding>> {
        // Every page's metadata, links, headings and block ids come from the page table; the
        // bodies read are those of the pages linted (all of them in a full lint).
        let table = self.page_table().await?;
        let scope: Option<BTreeSet<String>> = options.pages.as_ref().map(|keys| {
            keys.iter()
                .filter_map(|k| table.find(k).map(|r| r.key.clone()))
                .collect()
        });
        let pages: Vec<Page> = match &scope {
            None => self.all_pages().await?,
            Some(keys) => {
                let mut v = Vec::with_capacity(keys.len());
                for k in keys {
                    if let Some((p, _)) = self.read::<Page>(Store::Pages, k).await? {
                        v.push(p);
                    }
                }
                v
            }
        };
        let in_scope = |k: &str| scope.as_ref().is_none_or(|s| s.contains(k));
        let meta: Vec<Page> = table.pages_without_bodies();
        let names = NameKeys::of(&meta);
        let asset_names: Vec<String> = self.assets().await?.into_iter().map(|a| a.name).collect();
        let resolver = table
            .resolver()
            .clone()
            .with_assets(asset_names.iter().map(String::as_str));
        let graph = table.link_graph();
        let mut out: Vec<Finding> = Vec::new();
        let mut missing_targets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        if scope.is_some() {
            // The other pages' links to names without a page, from their rows.
            for r in table.rows().filter(|r| !in_scope(&r.key)) {
                for t in &r.links {
                    if attachment_extension(t).is_none()
                        && resolver.resolve(t) == Resolution::Missing
                    {
                        missing_targets
                            .entry(t.clone())
                            .or_default()
                            .insert(r.key.clone());
                    }
                }
            }
        }

        for p in &pages {
            for item in wikilinks::scan(&p.body) {
                match item {
                    Item::Malformed(m) => out.push(finding(
                        FindingKind::MalformedLink,
                        Severity::Warning,
                        &p.key,
                        vec![],
                        format!(
                            "malformed link {}{}",
                            m.text,
                            m.repair
                                .as_ref()
                                .map(|r| format!(" (probably {r})"))
                                .unwrap_or_default()
                        ),
                        None,
                    )),
                    Item::Link(l) => match resolver.resolve_link(&l, Some(&p.key)) {
                        Resolution::Missing
                            if l.embed && attachment_extension(&l.target).is_some() =>
                        {
                            out.push(finding(
                                FindingKind::MissingAttachment,
                                Severity::Error,
                                &p.key,
                                vec![],
                                format!("missing attachment {}", l.target),
                                None,
                            ))
                        }
                        Resolution::Missing => {
                            missing_targets
                                .entry(l.target.clone())
                                .or_default()
                                .insert(p.key.clone());
                            let fix = match names.likely_target(&l.target, &p.key) {
                                Some(to) => Fix::RewriteLink {
                                    page: p.key.clone(),
                                    from: l.target.clone(),
                                    to,
                                },
                                None => Fix::UnlinkBroken {
                                    page: p.key.clone(),
                                    target: l.target.clone(),
                                },
                            };
                            out.push(finding(
                                FindingKind::BrokenLink,
                                Severity::Error,
                                &p.key,
                                vec![],
                                format!("broken link [[{}]]", l.target),
                                Some(fix),
                            ));
                        }
                        Resolution::Ambiguous(keys) => out.push(finding(
                            FindingKind::AmbiguousLink,
                            Severity::Warning,
                            &p.key,
                            keys.clone(),
                            format!("[[{}]] could mean any of: {}", l.target, keys.join(", ")),
                            None,
                        )),
                        Resolution::Page(to) => {
                            let target = table.get(&to);
                            // `[[C#]]`: the `#` is part of the name, not a heading.
                            let whole = resolver.fragment_is_name(&l);
                            match (&l.fragment, target) {
                                (Some(Fragment::Heading(_)), Some(_)) if whole => {}
                                (Some(Fragment::Heading(h)), Some(t))
                                    if !t.headings.contains(&fold_name(
                                        h.rsplit('#').next().unwrap_or(h),
                                    )) =>
                                {
                                    out.push(finding(
                                        FindingKind::MissingHeading,
                                        Severity::Warning,
                                        &p.key,
                                        vec![to.clone()],
                                        format!(
                                            "[[{}#{h}]]: {} has no heading \"{h}\"",
                                            l.target, t.title
                                        ),
                                        None,
                                    ))
                                }
                                (Some(Fragment::Block(b)), Some(t)) if !t.blocks.contains(b) => out
                                    .push(finding(
                                        FindingKind::MissingBlock,
                                        Severity::Warning,
                                        &p.key,
                                        vec![to.clone()],
                                        format!(
                                            "[[{}#^{b}]]: {} has no block ^{b}",
                                            l.target, t.title
                                        ),
                                        None,
                                    )),
                                _ => {}
                            }
                        }
                        Resolution::Asset(_) => {}
                    },
                }
            }
            if graph.backlinks.get(&p.key).is_none_or(|b| b.is_empty())
                && p.kind != PageKind::Source
            {
                out.push(finding(
                    FindingKind::Orphan,
                    Severity::Info,
                    &p.key,
                    vec![],
                    format!("no page links to {}", p.title),
                    None,
                ));
            }
            if p.sources.is_empty() && !matches!(p.kind, PageKind::Analysis) {
                out.push(finding(
                    FindingKind::NoSources,
                    Severity::Info,
                    &p.key,
                    vec![],
                    format!("{} cites no source", p.title),
                    None,
                ));
            }
            let age_days = (self.clock.now_ms() - p.updated) / 86_400_000;
            if age_days > i64::from(options.stale_days.clamp(1, 3650)) {
                out.push(finding(
                    FindingKind::Stale,
                    Severity::Info,
                    &p.key,
                    vec![],
                    format!("{} was last updated {age_days} days ago", p.title),
                    None,
                ));
            }
        }

        // Names linked from several pages that have no page.
        for (target, on) in &missing_targets {
            if on.len() >= 2 && on.iter().any(|k| in_scope(k)) {
                let on: Vec<String> = on.iter().cloned().collect();
                out.push(finding(
                    FindingKind::MissingPage,
                    Severity::Warning,
                    "",
                    on.clone(),
                    format!(
                        "[[{target}]] is linked from {} pages but has no page",
                        on.len()
                    ),
                    Some(Fix::CreatePage {
                        title: target.clone(),
                        mentioned_on: on,
                    }),
                ));
            }
        }

        // Likely duplicates: one name's folded words contained in another's (never merged automatically).
        let content: Vec<(&Page, String)> = meta
            .iter()
            .filter(|p| !matches!(p.kind, PageKind::Source | PageKind::Analysis))
            .map(|p| (p, match_key(&p.title)))
            .collect();
        for (i, (a, ka)) in content.iter().enumerate() {
            for (b, kb) in &content[i + 1..] {
                if !(in_scope(&a.key) || in_scope(&b.key)) {
                    continue;
                }
                let (ka, kb) = (ka.clone(), kb.clone());
                if ka.chars().count() < 3 || kb.chars().count() < 3 {
                    continue;
                }
                let (short, long) = if ka.len() <= kb.len() {
                    (&ka, &kb)
                } else {
                    (&kb, &ka)
                };
                if long.starts_with(short.as_str()) || long.ends_with(short.as_str()) {
                    let inbound = |p: &Page| graph.backlinks.get(&p.key).map_or(0, |b| b.len());
                    let (survivor, merged) = if (std::cmp::Reverse(inbound(a)), a.created, &a.key)
                        <= (std::cmp::Reverse(inbound(b)), b.created, &b.key)
                    {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    out.push(finding(
                        FindingKind::LikelyDuplicate,
                        Severity::Warning,
                        &a.key,
                        vec![b.key.clone()],
                        format!(
                            "{} and {} may be the same thing; merge them if so",
                            a.title, b.title
                        ),
                        Some(Fix::MergePages {
                            survivor: survivor.key.clone(),
                            merged: merged.key.clone(),
                        }),
                    ));
                }
            }
        }

        // Pages that hold names the match rule now tells apart (made before symbols counted).
        for p in meta.iter().filter(|p| in_scope(&p.key)) {
            let merged = crate::markdown::keys::merged_names(
                std::iter::once(p.title.as_str()).chain(p.aliases.iter().map(String::as_str)),
            );
            if merged.is_empty() {
                continue;
            }
            let title_key = match_key(&p.title);
            let drop_aliases: Vec<String> = p
                .aliases
                .iter()
                .filter(|a| merged.contains(&crate::markdown::keys::restore_stand_ins(a.trim())))
                .filter(|a| match_key(a) != title_key)
                .cloned()
                .collect();
            out.push(finding(
                FindingKind::MergedNames,
                Severity::Warning,
                &p.key,
                vec![],
                format!(
                    "{} holds names that are different now: {}; rename it to key {:?} and let {} have pages of their own",
                    p.title,
                    merged.join(", "),
                    crate::markdown::keys::page_key(&p.title),
                    if drop_aliases.is_empty() {
                        "the others".to_string()
                    } else {
                        drop_aliases.join(", ")
                    }
                ),
                Some(Fix::RenamePage {
                    page: p.key.clone(),
                    title: p.title.clone(),
                    drop_aliases,
                }),
            ));
        }

        // Sources: changed or removed since their pages were compiled, or text not matching its hash.
        let sources = self.sources().await?;
        let by_source: BTreeMap<&str, &crate::model::Source> =
            sources.iter().map(|s| (s.key.as_str(), s)).collect();
        for s in sources.iter().filter(|_| scope.is_none()) {
            if let Ok(text) = self.source_text(&s.version).await {
                let phrases = crate::injection::instruction_like(&text);
                if !phrases.is_empty() {
                    out.push(finding(
                        FindingKind::InstructionLike,
                        Severity::Info,
                        s.summary_page.as_deref().unwrap_or(""),
                        vec![s.key.clone()],
                        format!(
                            "source {} holds instruction-like text (\"{}\"): it was compiled as data, not followed",
                            s.key,
                            phrases.join("\", \"")
                        ),
                        None,
                    ));
                }
                if crate::text::content_version(&text) != s.version {
                    out.push(finding(
                        FindingKind::SourceTextChanged,
                        Severity::Warning,
                        "",
                        vec![s.key.clone()],
                        format!(
                            "the stored text of source {} no longer matches its hash: re-add it",
                            s.key
                        ),
                        None,
                    ));
                }
            }
        }
        for p in &pages {
            for key in &p.sources {
                match by_source.get(key.as_str()) {
                    None if p.kind != PageKind::Analysis => out.push(finding(
                        FindingKind::SourceChanged,
                        Severity::Warning,
                        &p.key,
                        vec![key.clone()],
                        format!("{} cites source {key}, which was removed", p.title),
                        None,
                    )),
                    Some(s) if !matches!(s.status, SourceStatus::Compiled { .. }) => {
                        out.push(finding(
                            FindingKind::SourceChanged,
                            Severity::Warning,
                            &p.key,
                            vec![key.clone()],
                            format!(
                                "source {key} changed since {} was compiled: compile again",
                                p.title
                            ),
                            None,
                        ))
                    }
                    _ => {}
                }
            }
        }

        // Open contradictions.
        let ledger: Vec<Contradiction> = match &scope {
            None => self.read_all(Store::Ledger, "").await?,
            Some(keys) => {
                let mut ids = BTreeSet::new();
                for k in keys {
                    ids.extend(
                        crate::page_table::list(
                            &self.storage,
                            crate::page_table::PAGE_RECORDS_PREFIX,
                            k,
                        )
                        .await?,
                    );
                }
                let mut v = Vec::new();
                for id in ids {
                    if let Some((r, _)) = self.read::<Contradiction>(Store::Ledger, &id).await? {
                        v.push(r);
                    }
                }
                v
            }
        };
        for r in ledger
            .iter()
            .filter(|r| r.status == ContradictionStatus::Open)
        {
            out.push(finding(
                FindingKind::Contradiction,
                Severity::Warning,
                r.pages.first().map_or("", String::as_str),
                r.pages.clone(),
                format!("open contradiction {}: {}", r.id, r.description),
                Some(Fix::ResolveContradiction { id: r.id.clone() }),
            ));
        }

        // Pages past the soft limit (`model::limits`; human paragraphs are not counted).
        for p in &pages {
            let facts = crate::page_table::list(
                &self.storage,
                crate::page_table::PAGE_CLAIMS_PREFIX,
                &p.key,
            )
            .await?
            .len();
            if p.body.len() <= limits::SOFT_BYTES && facts <= limits::SOFT_FACTS {
                continue;
            }
            let human = self.human_paragraphs(&p.key, p).await?;
            let bytes = crate::markdown::page_body::written_bytes(&p.body, &human);
            if bytes > limits::SOFT_BYTES || facts > limits::SOFT_FACTS {
                out.push(finding(
                    FindingKind::PageTooLong,
                    Severity::Warning,
                    &p.key,
                    vec![],
                    format!(
                        "page too long: {} has {} KB and {facts} facts, more than a page should hold ({} KB or {} facts): split it",
                        p.title,
                        bytes.div_ceil(1024),
                        limits::SOFT_BYTES / 1024,
                        limits::SOFT_FACTS
                    ),
                    Some(Fix::SplitPage { page: p.key.clone() }),
                ));
            }
        }

        // Index drift (F31b: the index lists every page).
        if scope.is_none() && self.index().await? != table.index_md() {
            out.push(finding(
                FindingKind::IndexDrift,
                Severity::Warning,
                "",
                vec![],
                "index.md does not list the pages as they are".into(),
                Some(Fix::RebuildIndex),
            ));
        }

        // The LLM checks' findings of the last run, while what they name still exists.
        out.extend(
            self.kept_llm_findings(&meta)
                .await?
                .into_iter()
                .filter(|f| in_scope(&f.page) || f.related.iter().any(|k| in_scope(k))),
        );
        // What this connection has listed: a full lint replaces it; a scoped one replaces what
        // concerns its pages, so the findings of an earlier full lint stay listed (and
        // `apply_fix`, whose check is a scoped lint, keeps the rest of the list).
        {
            let state = self.op_state.get::<LastFindings>();
            let mut listed = state.0.borrow_mut();
            if scope.is_some() {
                listed.retain(|f| !(in_scope(&f.page) || f.related.iter().any(|k| in_scope(k))));
                listed.extend(out.iter().cloned());
            } else {
                *listed = out.clone();
            }
        }

        crate::util::sort_by(&mut out, &|a, b| {
            (a.severity, a.kind, &a.page, &a.message)
                .cmp(&(b.severity, b.kind, &b.page, &b.message))
        });
        Ok(out)
    }

    /// Applies the fix of finding `id` (from a fresh [`Wiki::lint`]) as one operation. For a
    /// contradiction, `note` says how it was settled and `scoped` keeps both sides (status
    /// `scoped`) instead of `resolved`.
    ///
    /// Errors: [`Error::NotFound`] when no current finding has that id or it has no fix.
    pub async fn apply_fix(
        &self,
        id: &str,
        note: Option<&str>,
        scoped: bool,
    ) -> Result<crate::model::Operation> {
        // The finding must still hold: a finding this connection listed is checked again by a
        // lint of its pages alone; any other (or a wiki-wide one) by a full lint.
        let listed = self
            .op_state
            .get::<LastFindings>()
            .0
            .borrow()
            .iter()
            .find(|f| f.id == id)
            .cloned();
        let scope: Vec<String> = listed
            .iter()
            .flat_map(|f| std::iter::once(&f.page).chain(&f.related))
            .filter(|k| !k.is_empty())
            .cloned()
            .collect();
        let options = LintOptions {
            pages: (!scope.is_empty()).then_some(scope),
            ..LintOptions::default()
        };
        let findings = self.lint(&options).await?;
        let f = findings
            .into_iter()
            .find(|f| f.id == id)
            .ok_or_else(|| Error::NotFound(format!("lint finding {id} (run lint again)")))?;
        let fix = f
            .fix
            .clone()
            .ok_or_else(|| Error::NotFound(format!("finding {id} has no fix")))?;
        if let Fix::RenamePage {
            page,
            title,
            drop_aliases,
        } = &fix
        {
            let report = self
                .rename_page_dropping_aliases(page, title, drop_aliases)
                .await?;
            return self
                .operations()
                .await?
                .into_iter()
                .find(|o| o.id == report.op)
                .ok_or_else(|| Error::NotFound(format!("operation {}", report.op)));
        }
        // The pages the fix may change, read alone.
        let table = self.page_table().await?;
        let resolver = table.resolver();
        let mut needed: BTreeSet<String> = BTreeSet::new();
        match &fix {
            Fix::RewriteLink { page, .. } | Fix::UnlinkBroken { page, .. } => {
                needed.insert(page.clone());
            }
            Fix::CreatePage { mentioned_on, .. } => needed.extend(mentioned_on.iter().cloned()),
            Fix::ResolveContradiction { id } => {
                if let Some((r, _)) = self.read::<Contradiction>(Store::Ledger, id).await? {
                    needed.extend(r.pages);
                }
            }
            Fix::RebuildIndex => {}
            Fix::RecordContradiction { pages, .. } => needed.extend(pages.iter().cloned()),
            Fix::MergePages { survivor, merged } => {
                needed.insert(survivor.clone());
                needed.insert(merged.clone());
                needed.extend(table.link_graph().backlinks_of(merged));
                // The pages of the records that move (their callouts are rebuilt).
                for k in [survivor, merged] {
                    for id in crate::page_table::list(
                        &self.storage,
                        crate::page_table::PAGE_RECORDS_PREFIX,
                        k,
                    )
                    .await?
                    {
                        if let Some((r, _)) = self.read::<Contradiction>(Store::Ledger, &id).await?
                        {
                            needed.extend(r.pages);
                        }
                    }
                }
            }
            Fix::SplitPage { page } => {
                needed.insert(page.clone());
            }
            Fix::RenamePage { .. } => {}
        }
        let mut pages: Vec<Page> = Vec::with_capacity(needed.len());
        for k in &needed {
            if let Some((p, _)) = self.read::<Page>(Store::Pages, k).await? {
                pages.push(p);
            }
        }
        let mut ob = self
            .begin(OperationKind::Fix, format!("fix: {}", f.message))
            .await?;
        let now = self.clock.now_ms();
        let mut changed: Vec<String> = Vec::new();
        let mut removed: Vec<String> = Vec::new();
        match &fix {
            Fix::RewriteLink { page, from, to } => {
                changed.push(rewrite_broken(&mut pages, resolver, page, from, Some(to))?);
            }
            Fix::UnlinkBroken { page, target } => {
                changed.push(rewrite_broken(&mut pages, resolver, page, target, None)?);
            }
            Fix::CreatePage {
                title,
                mentioned_on,
            } => {
                let key = crate::markdown::keys::readable_unique_key(
                    title,
                    "concept",
                    &table.taken_keys(),
                );
                let mut lines = Vec::new();
                let mut sources = Vec::new();
                for k in mentioned_on {
                    if let Some(p) = pages.iter().find(|p| p.key == *k) {
                        sources.extend(p.sources.iter().cloned());
                        for s in crate::extractive::sentences::sentences(&p.body.replace('\n', " "))
                        {
                            if wikilinks::links(&s).iter().any(|l| l.target == *title) {
                                lines.push(format!(
                                    "- {} (from {})",
                                    s.trim(),
                                    documents::link_to(&p.key, &p.title)
                                ));
                            }
                        }
                    }
                }
                crate::util::sort_dedup(&mut sources);
                let revision = self.next_revision_number(&key).await?;
                pages.push(Page {
                    key: key.clone(),
                    title: title.clone(),
                    kind: PageKind::Concept,
                    summary: String::new(),
                    aliases: vec![],
                    tags: vec![],
                    sources,
                    created: now,
                    updated: now,
                    body: format!("## Mentions\n\n{}\n", lines.join("\n")),
                    revision: revision - 1,
                    extra_frontmatter: String::new(),
                    more_facts: vec![],
                });
                changed.push(key);
            }
            Fix::ResolveContradiction { id } => {
                let (mut r, rev) = self
                    .read::<Contradiction>(Store::Ledger, id)
                    .await?
                    .ok_or_else(|| Error::NotFound(id.clone()))?;
                r.status = if scoped {
                    ContradictionStatus::Scoped
                } else {
                    ContradictionStatus::Resolved
                };
                r.note = note.map(str::to_string);
                r.closed_by = Some(ob.op.id);
                ob.batch
                    .put(Store::Ledger, id.clone(), to_json(&r), Expect::Rev(rev));
                // The callouts leave the pages' bodies.
                for k in &r.pages {
                    if let Some(p) = pages.iter_mut().find(|p| p.key == *k) {
                        p.body = crate::markdown::page_body::remove_callout(&p.body, id);
                        changed.push(k.clone());
                    }
                }
            }
            Fix::RebuildIndex => ob.rewrite_index = true,
            Fix::RenamePage { .. } => {}
            Fix::SplitPage { page } => {
                let op = ob.op.id;
                let mut sections = self.app_sections(&pages).await?;
                let humans = self.humans_of(&pages).await?;
                let Some(human) = humans.get(page).cloned() else {
                    return Err(Error::NotFound(format!("page {page:?}")));
                };
                let mut taken = table.taken_keys();
                let parts = split_page(&mut pages, page, &human, &mut taken, now)?;
                for part in &parts {
                    let revision = self.next_revision_number(part).await?;
                    if let Some(p) = pages.iter_mut().find(|p| p.key == *part) {
                        p.revision = revision - 1;
                    }
                }
                sections
                    .titles
                    .extend(pages.iter().map(|p| (p.key.clone(), p.title.clone())));
                let rebuild = sections.move_cited(&mut ob.batch, &pages, page, &parts, op);
                for p in pages.iter_mut().filter(|p| rebuild.contains(&p.key)) {
                    sections.rebuild(p, &humans);
                }
                changed.push(page.clone());
                changed.extend(parts);
            }
            Fix::RecordContradiction {
                pages: involved,
                claims,
                description,
            } => {
                let id = crate::records::contradiction_id(claims);
                if self.storage.get(Store::Ledger, &id).await?.is_some() {
                    return Err(Error::InvalidInput(format!(
                        "the ledger already has record {id} for these claims"
                    )));
                }
                let record = Contradiction {
                    id: id.clone(),
                    pages: involved.clone(),
                    claims: claims.clone(),
                    description: description.clone(),
                    status: ContradictionStatus::Open,
                    note: None,
                    opened_by: ob.op.id,
                    closed_by: None,
                };
                ob.batch
                    .put(Store::Ledger, id.clone(), to_json(&record), Expect::Absent);
                // The callouts (and the footnotes their claims need) as compile writes them.
                let mut sections = self.app_sections(&pages).await?;
                let humans = self.humans_of(&pages).await?;
                sections.ledger.insert(id, record);
                for k in involved {
                    if let Some(p) = pages.iter_mut().find(|p| p.key == *k) {
                        sections.rebuild(p, &humans);
                        changed.push(k.clone());
                    }
                }
            }
            Fix::MergePages { survivor, merged } => {
                let bodies: BTreeMap<String, String> = pages
                    .iter()
                    .map(|p| (p.key.clone(), p.body.clone()))
                    .collect();
                let humans = self.humans_of(&pages).await?;
                let gone = merge_pages(&mut pages, resolver, survivor, merged)?;
                let op = ob.op.id;
                let mut sections = self.app_sections(&pages).await?;
                let rebuild = sections.merge(&mut ob.batch, &gone.key, survivor, op);
                for p in pages.iter_mut().filter(|p| rebuild.contains(&p.key)) {
                    sections.rebuild(p, &humans);
                }
                changed.extend(
                    pages
                        .iter()
                        .filter(|p| p.key == *survivor || bodies.get(&p.key) != Some(&p.body))
                        .map(|p| p.key.clone()),
                );
                let stored = self.storage.get(Store::Pages, &gone.key).await?;
                self.delete_page_record(
                    &mut ob.batch,
                    &gone.key,
                    stored.map(|r| r.rev),
                    Author::Human,
                    op,
                    now,
                )
                .await?;
                removed.push(gone.key);
            }
        }
        for k in &changed {
            let p = pages
                .iter_mut()
                .find(|p| p.key == *k)
                .expect("changed page");
            let stored = self.storage.get(Store::Pages, k).await?;
            p.revision += 1;
            p.updated = now;
            // A fix is a change the user accepted: recorded as theirs, so Decision 5 keeps
            // protecting every human paragraph on the page (an `llm` revision would become the
            // next compile's baseline and absorb them).
            self.put_page_revision(
                &mut ob.batch,
                p,
                stored.map(|r| r.rev),
                Author::Human,
                ob.op.id,
                now,
            );
        }
        changed.extend(removed);
        ob.op.pages = changed;
        self.finish(ob).await
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Restores page `key` to its state at revision `number`, as a new revision (author `human`:
    /// the user asked for it) in one [`OperationKind::Rollback`] operation. History is never
    /// rewritten: the revisions after `number` stay listed.
    ///
    /// Errors: [`Error::NotFound`] for an unknown page or revision, or a revision that deleted the
    /// page.
    pub async fn revert(&self, key: &str, number: u64) -> Result<Page> {
        let history = self.history(key).await?;
        let target = history
            .iter()
            .find(|r| r.number == number)
            .and_then(|r| r.page_state.clone())
            .ok_or_else(|| Error::NotFound(format!("revision {number} of page {key:?}")))?;
        let stored = self.storage.get(Store::Pages, key).await?;
        let last = history.iter().map(|r| r.number).max().unwrap_or(0);
        let now = self.clock.now_ms();
        let mut page = target;
        page.revision = last + 1;
        page.updated = now;
        let mut ob = self
            .begin(
                OperationKind::Rollback,
                format!("reverted {} to revision {number}", page.title),
            )
            .await?;
        ob.op.pages.push(key.to_string());
        self.put_page_revision(
            &mut ob.batch,
            &page,
            stored.map(|r| r.rev),
            Author::Human,
            ob.op.id,
            now,
        );
        self.finish(ob).await?;
        Ok(page)
    }
}
