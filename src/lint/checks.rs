//! The deterministic checks ([`Wiki::lint`]): which pages a run reads, the page checks (orphan,
//! no sources, stale, likely duplicates, names the match rule now tells apart, too long), the
//! source checks (instruction-like text, text not matching its hash, sources changed or removed
//! since a page was compiled), open contradictions and index drift; the link checks are in
//! [`super::links`].
//!
//! *Invariant:* a scoped lint reads the bodies of its own pages and the page table only, and
//! reports only what concerns its pages (the wiki-wide checks run in a full lint).

use std::collections::{BTreeMap, BTreeSet};

use super::links::{link_findings, missing_page_findings, missing_targets_elsewhere, NameKeys};
use super::{finding, Finding, FindingKind, Fix, LastFindings, LintOptions, Severity};
use crate::clock::Clock;
use crate::error::Result;
use crate::markdown::keys::match_key;
use crate::markdown::resolve::LinkGraph;
use crate::model::{limits, Contradiction, ContradictionStatus, Page, PageKind, SourceStatus};
use crate::page_table::PageTable;
use crate::storage::{Storage, Store};
use crate::wiki::Wiki;

/// The pages a lint concerns: every page (`None`), or those of [`LintOptions::pages`] the page
/// table finds, by key.
struct Scope(Option<BTreeSet<String>>);

impl Scope {
    fn of(table: &PageTable, options: &LintOptions) -> Scope {
        Scope(options.pages.as_ref().map(|keys| {
            keys.iter()
                .filter_map(|k| table.find(k).map(|r| r.key.clone()))
                .collect()
        }))
    }

    /// Whether the lint concerns page `k`.
    fn contains(&self, k: &str) -> bool {
        self.0.as_ref().is_none_or(|s| s.contains(k))
    }

    /// Whether this is a full lint.
    fn is_full(&self) -> bool {
        self.0.is_none()
    }

    /// Whether finding `f` is about a page the lint concerns.
    fn concerns(&self, f: &Finding) -> bool {
        self.contains(&f.page) || f.related.iter().any(|k| self.contains(k))
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Runs the deterministic checks. Findings are sorted by severity, kind and page.
    pub async fn lint(&self, options: &LintOptions) -> Result<Vec<Finding>> {
        // Every page's metadata, links, headings and block ids come from the page table; the
        // bodies read are those of the pages linted (all of them in a full lint).
        let table = self.page_table().await?;
        let scope = Scope::of(&table, options);
        let pages = self.linted_pages(&scope).await?;
        let meta: Vec<Page> = table.pages_without_bodies();
        let names = NameKeys::of(&meta);
        let asset_names: Vec<String> = self.assets().await?.into_iter().map(|a| a.name).collect();
        let resolver = table
            .resolver()
            .clone()
            .with_assets(asset_names.iter().map(String::as_str));
        let graph = table.link_graph();
        let mut out: Vec<Finding> = Vec::new();
        let mut missing_targets = if scope.is_full() {
            BTreeMap::new()
        } else {
            missing_targets_elsewhere(&table, &resolver, |k| scope.contains(k))
        };
        for p in &pages {
            out.extend(link_findings(
                p,
                &resolver,
                &table,
                &names,
                &mut missing_targets,
            ));
            let now = self.clock.now_ms();
            out.extend(page_findings(p, graph, now, options.stale_days));
        }
        out.extend(missing_page_findings(&missing_targets, |k| {
            scope.contains(k)
        }));
        out.extend(duplicate_findings(&meta, graph, &scope));
        out.extend(merged_name_findings(&meta, &scope));
        out.extend(self.source_findings(&pages, &scope).await?);
        out.extend(self.contradiction_findings(&scope).await?);
        out.extend(self.too_long_findings(&pages).await?);
        // Index drift (F31b: the index lists every page).
        if scope.is_full() && self.index().await? != table.index_md() {
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
                .filter(|f| scope.concerns(f)),
        );
        self.list_findings(&scope, &out);
        crate::util::sort_by(&mut out, &|a, b| {
            (a.severity, a.kind, &a.page, &a.message)
                .cmp(&(b.severity, b.kind, &b.page, &b.message))
        });
        Ok(out)
    }

    /// The pages a lint reads with their bodies: every page, or those of the scope.
    async fn linted_pages(&self, scope: &Scope) -> Result<Vec<Page>> {
        match &scope.0 {
            None => self.all_pages().await,
            Some(keys) => {
                let mut v = Vec::with_capacity(keys.len());
                for k in keys {
                    if let Some((p, _)) = self.read::<Page>(Store::Pages, k).await? {
                        v.push(p);
                    }
                }
                Ok(v)
            }
        }
    }

    /// Keeps what this connection has listed (what [`Wiki::apply_fix`] looks an id up in): a
    /// full lint replaces it; a scoped one replaces what concerns its pages, so the findings of
    /// an earlier full lint stay listed (and `apply_fix`, whose check is a scoped lint, keeps
    /// the rest of the list).
    fn list_findings(&self, scope: &Scope, out: &[Finding]) {
        let state = self.op_state.get::<LastFindings>();
        let mut listed = state.0.borrow_mut();
        if scope.is_full() {
            *listed = out.to_vec();
        } else {
            listed.retain(|f| !scope.concerns(f));
            listed.extend(out.iter().cloned());
        }
    }

    /// Sources: instruction-like text and text not matching its hash (full lint only), and the
    /// linted pages whose sources changed or were removed since they were compiled.
    async fn source_findings(&self, pages: &[Page], scope: &Scope) -> Result<Vec<Finding>> {
        let mut out = Vec::new();
        let sources = self.sources().await?;
        let by_source: BTreeMap<&str, &crate::model::Source> =
            sources.iter().map(|s| (s.key.as_str(), s)).collect();
        for s in sources.iter().filter(|_| scope.is_full()) {
            if let Ok(text) = self.source_text(&s.version).await {
                out.extend(source_text_findings(s, &text));
            }
        }
        for p in pages {
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
        Ok(out)
    }

    /// The open contradictions: of the whole ledger, or of the records naming a scope's pages.
    async fn contradiction_findings(&self, scope: &Scope) -> Result<Vec<Finding>> {
        let ledger: Vec<Contradiction> = match &scope.0 {
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
        Ok(ledger
            .iter()
            .filter(|r| r.status == ContradictionStatus::Open)
            .map(|r| {
                finding(
                    FindingKind::Contradiction,
                    Severity::Warning,
                    r.pages.first().map_or("", String::as_str),
                    r.pages.clone(),
                    format!("open contradiction {}: {}", r.id, r.description),
                    Some(Fix::ResolveContradiction { id: r.id.clone() }),
                )
            })
            .collect())
    }

    /// Pages past the soft limit (`model::limits`; human paragraphs are not counted).
    async fn too_long_findings(&self, pages: &[Page]) -> Result<Vec<Finding>> {
        let mut out = Vec::new();
        for p in pages {
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
        Ok(out)
    }
}

/// The findings about page `p` itself: no page links to it, it cites no source, or it was last
/// updated more than `stale_days` (clamped to 1–3650) before `now`.
fn page_findings(p: &Page, graph: &LinkGraph, now: i64, stale_days: u32) -> Vec<Finding> {
    let mut out = Vec::new();
    if graph.backlinks.get(&p.key).is_none_or(|b| b.is_empty()) && p.kind != PageKind::Source {
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
    let age_days = (now - p.updated) / 86_400_000;
    if age_days > i64::from(stale_days.clamp(1, 3650)) {
        out.push(finding(
            FindingKind::Stale,
            Severity::Info,
            &p.key,
            vec![],
            format!("{} was last updated {age_days} days ago", p.title),
            None,
        ));
    }
    out
}

/// Likely duplicates: one name's folded words contained in another's (never merged
/// automatically), each with the merge fix: the page more pages link to survives, then the
/// older, then the smaller key.
fn duplicate_findings(meta: &[Page], graph: &LinkGraph, scope: &Scope) -> Vec<Finding> {
    let mut out = Vec::new();
    let content: Vec<(&Page, String)> = meta
        .iter()
        .filter(|p| !matches!(p.kind, PageKind::Source | PageKind::Analysis))
        .map(|p| (p, match_key(&p.title)))
        .collect();
    for (i, (a, ka)) in content.iter().enumerate() {
        for (b, kb) in &content[i + 1..] {
            if !(scope.contains(&a.key) || scope.contains(&b.key)) {
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
    out
}

/// Pages that hold names the match rule now tells apart (made before symbols counted), each
/// with the rename fix that drops the aliases that are other names now.
fn merged_name_findings(meta: &[Page], scope: &Scope) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in meta.iter().filter(|p| scope.contains(&p.key)) {
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
    out
}

/// The findings about source `s` whose stored text is `text`: instruction-like phrases (compiled
/// as data, worth a look) and a text that no longer matches the source's version hash.
fn source_text_findings(s: &crate::model::Source, text: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let phrases = crate::injection::instruction_like(text);
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
    if crate::text::content_version(text) != s.version {
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
    out
}
