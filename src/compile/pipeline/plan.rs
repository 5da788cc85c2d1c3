//! The plan of one source's compile: everything decided before the model writes pages.
//!
//! [`plan`] is a function of a [`Snapshot`] of the wiki and what the extract step produced
//! ([`Extracted`]): it resolves the source's entities and concepts to pages (new pages under
//! readable unique keys), finds or makes the source's summary page and the parts continuing it,
//! puts each claim on its source page and on the pages it is about, opens the contradictions
//! that pass the app's checks ([`check_contradiction`]), and lists the pages the model rewrites,
//! each with its integrate input, and those that only get their callouts refreshed.
//!
//! *Invariant:* planning reads nothing but its inputs and writes nothing: the same snapshot and
//! extraction give the same plan.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::claims::{check_contradiction, source_page_map};
use super::report::RejectedContradiction;
use super::snapshot::Snapshot;
use crate::clock::Millis;
use crate::compile::extract::{Extraction, ImageNote};
use crate::compile::integrate::{Fact, IntegrateInput};
use crate::compile::provenance::{claim_id, quote_occurs};
use crate::compile::resolve::{match_key, resolve, KnownPage, Mention, Target};
use crate::markdown::keys::fold_key;
use crate::markdown::page_body::strip_app_sections;
use crate::markdown::plain::plain_text;
use crate::model::{
    limits, Claim, Contradiction, ContradictionStatus, OpId, Page, PageKind, Source,
};
use crate::records::contradiction_id;

/// Most link targets listed in one integrate prompt.
pub(super) const MAX_LINK_TARGETS: usize = 150;

/// The link targets one page's integrate call is given: of the compile's candidates (`all`, as
/// `(key, title)`), the source's summary page and every page whose title or an alias occurs in
/// `text` ([`crate::compile::extract::NameMatcher`]; what the page will say: its body, brief, facts and
/// relations), never the page itself. A page can only link what its text
/// names, and the list is paid for in every integrate call.
pub(super) fn link_targets_for(
    key: &str,
    source_page: &str,
    all: &[(String, String)],
    names: &mut FoldedNames<'_>,
    text: &str,
) -> Vec<(String, String)> {
    let matcher = crate::compile::extract::NameMatcher::new(text);
    all.iter()
        .filter(|(k, _)| k != key)
        .filter(|(k, title)| {
            k == source_page || names.of(k, title).iter().any(|n| matcher.occurs(n))
        })
        .cloned()
        .collect()
}

/// Each candidate page's title and aliases folded once per plan ([`crate::compile::extract::FoldedName`]),
/// not once per page whose link targets are chosen.
pub(super) struct FoldedNames<'a> {
    pub(super) pages: &'a BTreeMap<String, Page>,
    pub(super) folded: HashMap<String, Vec<crate::compile::extract::FoldedName>>,
}

impl<'a> FoldedNames<'a> {
    pub(super) fn new(pages: &'a BTreeMap<String, Page>) -> Self {
        FoldedNames {
            pages,
            folded: HashMap::new(),
        }
    }

    /// The folded title and aliases of page `key` (titled `title`).
    pub(super) fn of(&mut self, key: &str, title: &str) -> &[crate::compile::extract::FoldedName] {
        let pages = self.pages;
        self.folded.entry(key.to_string()).or_insert_with(|| {
            std::iter::once(title)
                .chain(
                    pages
                        .get(key)
                        .map(|p| &p.aliases)
                        .into_iter()
                        .flatten()
                        .map(String::as_str),
                )
                .map(crate::compile::extract::FoldedName::new)
                .collect()
        })
    }
}

/// What the extract step produced for one source.
pub(super) struct Extracted {
    pub(super) text: String,
    pub(super) extraction: Extraction,
    pub(super) slice_keys: Vec<String>,
    /// The described pictures the source shows (sent with its chunks).
    pub(super) images: Vec<ImageNote>,
}

/// Everything decided before the model writes pages.
pub(super) struct Plan {
    /// Pages by key after this compile's metadata changes (bodies not yet written).
    pub(super) pages: BTreeMap<String, Page>,
    /// Keys of pages this compile creates.
    pub(super) created: BTreeSet<String>,
    /// Integrate inputs, one per page whose facts change.
    pub(super) integrate: Vec<IntegrateInput>,
    /// Pages that only need their callouts refreshed.
    pub(super) refresh: BTreeSet<String>,
    /// Claims after the compile, by id.
    pub(super) claims_after: BTreeMap<String, Claim>,
    /// New claim ids.
    pub(super) new_claims: BTreeSet<String>,
    /// Retracted claim ids.
    pub(super) retracted: BTreeSet<String>,
    /// New ledger records.
    pub(super) new_records: Vec<Contradiction>,
    /// Proposed contradictions turned away.
    pub(super) rejected: Vec<RejectedContradiction>,
    /// Instruction-like phrases in the source's text (a flag on the source; nothing compiled
    /// changes because of them).
    pub(super) instruction_like: Vec<String>,
    /// The source's summary page key.
    pub(super) source_page: String,
    /// The summary page and the parts continuing it, in order.
    pub(super) source_parts: Vec<String>,
    /// The op id the commit will use.
    pub(super) op: OpId,
}

impl Plan {
    /// The existing pages the plan writes: those integrated and those refreshed (created pages
    /// aside, which have no record yet).
    pub(super) fn touched(&self) -> BTreeSet<String> {
        self.integrate
            .iter()
            .map(|i| i.key.clone())
            .chain(self.refresh.iter().cloned())
            .filter(|k| !self.created.contains(k))
            .collect()
    }
}

/// Estimated bytes a fact adds to a source page besides its text, quote and the source's title:
/// list marker, footnote reference and definition markup.
pub(super) const FACT_OVERHEAD_BYTES: usize = 64;

/// For each extracted claim of a source titled `title`, in order, the part of the source's pages
/// it goes on: 0 for the summary page, 1 for `<title> (part 2)`, …. A part takes facts while their
/// estimated size stays within three quarters of the soft byte limit and their count within the
/// soft fact limit (`model::limits`), leaving room for the summary and the prose.
pub(super) fn source_parts_of(
    claims: &[crate::compile::extract::ExtractedClaim],
    title: &str,
) -> Vec<usize> {
    let (mut part, mut bytes, mut count) = (0usize, 0usize, 0usize);
    claims
        .iter()
        .map(|c| {
            let cost = c.text.len() + c.quote.len() + title.len() + FACT_OVERHEAD_BYTES;
            if count > 0
                && (bytes + cost > limits::SOFT_BYTES * 3 / 4 || count >= limits::SOFT_FACTS)
            {
                part += 1;
                bytes = 0;
                count = 0;
            }
            bytes += cost;
            count += 1;
            part
        })
        .collect()
}

/// What [`plan`] is given besides the snapshot: the source, what the extract step produced, the
/// op id the commit will use and the time its new pages are stamped with.
pub(super) struct PlanInput<'a> {
    /// The source being compiled.
    pub(super) source: &'a Source,
    /// Its extraction.
    pub(super) extracted: &'a Extracted,
    /// The op id the commit will use.
    pub(super) op: OpId,
    /// Creation time of new pages.
    pub(super) now: Millis,
    /// The body the source's summary page is rebuilt from (its human paragraphs), so no wording
    /// of an earlier version survives.
    pub(super) source_page_base: &'a str,
    /// Only what the plan changes matters (the bodies are not loaded yet): the integrate inputs
    /// get no link targets.
    pub(super) probe: bool,
}

/// Everything decided before the model writes pages, from `snap` alone (see the module docs).
pub(super) fn plan(snap: &Snapshot, input: &PlanInput<'_>) -> Plan {
    let PlanInput {
        source,
        extracted,
        op,
        ..
    } = *input;
    let mut resolved = resolve_pages(snap, source, &extracted.extraction, input.now);
    let source_plain = plain_text(&extracted.text);
    let described: Vec<(&str, String)> = extracted
        .images
        .iter()
        .map(|i| (i.name.as_str(), plain_text(&i.description)))
        .collect();
    let claims = claim_changes(
        snap,
        source,
        &extracted.extraction,
        &resolved,
        &source_plain,
        &described,
    );
    let (new_records, rejected) = open_contradictions(
        snap,
        &extracted.extraction,
        &claims,
        &resolved.pages,
        &source.key,
        &source_plain,
        op,
    );
    let rewrites = rewrites(snap, source, &resolved, &claims, &new_records);
    let integrate = integrate_inputs(snap, input, &resolved, &rewrites);
    update_metadata(
        &mut resolved,
        source,
        &extracted.extraction,
        &rewrites,
        &claims,
    );
    Plan {
        pages: resolved.pages,
        created: resolved.created,
        integrate,
        refresh: rewrites.refresh,
        claims_after: claims.claims_after,
        new_claims: claims.fresh,
        retracted: claims.retracted,
        new_records,
        rejected,
        instruction_like: crate::injection::instruction_like(&extracted.text),
        source_page: resolved.source_page,
        source_parts: resolved.source_parts,
        op,
    }
}

/// The pages of a plan after the source's names are resolved: every page by key (new ones as
/// skeletons), and where the source's names and facts go.
struct Resolved {
    /// Pages by key, the new ones included (bodies not yet written).
    pages: BTreeMap<String, Page>,
    /// Keys of the pages this compile creates.
    created: BTreeSet<String>,
    /// [`match_key`] of every name the source uses → the page it names.
    name_to_page: BTreeMap<String, String>,
    /// The model's description of an entity, by page key.
    briefs: BTreeMap<String, String>,
    /// The source's summary page key.
    source_page: String,
    /// The summary page and the parts continuing it, in order.
    source_parts: Vec<String>,
    /// For each extracted claim, the index in `source_parts` of the page it goes on.
    part_of_claim: Vec<usize>,
}

/// Resolves the source's entities and concepts to pages (existing ones through their titles and
/// aliases, new ones under readable unique keys), and finds or makes its summary page and the
/// parts continuing it.
fn resolve_pages(
    snap: &Snapshot,
    source: &Source,
    extraction: &Extraction,
    now: Millis,
) -> Resolved {
    let mut pages: BTreeMap<String, Page> =
        crate::util::btree_map(snap.pages.iter().map(|(k, (p, _))| (k.clone(), p.clone())));
    let mut taken: BTreeSet<String> = crate::util::btree_set(pages.keys().map(|k| fold_key(k)));
    let mut created: BTreeSet<String> = BTreeSet::new();
    let skeleton =
        |key: String, title: String, kind: PageKind| Page::blank(&key, &title, kind, now);

    // Resolve entities and concepts.
    let known: Vec<KnownPage> = pages
        .values()
        .map(|p| KnownPage {
            key: p.key.clone(),
            title: p.title.clone(),
            aliases: p.aliases.clone(),
            kind: p.kind,
        })
        .collect();
    let mentions: Vec<Mention> = extraction
        .entities
        .iter()
        .map(|e| Mention {
            name: e.name.clone(),
            kind: Extraction::kind_of(e),
            aliases: e.aliases.clone(),
            source_key: source.key.clone(),
        })
        .collect();
    let mut name_to_page: BTreeMap<String, String> = BTreeMap::new();
    let mut briefs: BTreeMap<String, String> = BTreeMap::new();
    for r in resolve(&mentions, &known) {
        let key = match &r.target {
            Target::Existing(k) => k.clone(),
            Target::New { title, kind } => {
                let key = crate::markdown::keys::readable_unique_key(title, kind.as_str(), &taken);
                taken.insert(fold_key(&key));
                created.insert(key.clone());
                pages.insert(key.clone(), skeleton(key.clone(), title.clone(), *kind));
                key
            }
        };
        let page = pages.get_mut(&key).expect("resolved page exists");
        for n in &r.names {
            name_to_page.insert(match_key(n), key.clone());
            if *n != page.title && *n != page.key && !page.aliases.contains(n) {
                page.aliases.push(n.clone());
            }
        }
        if let Some(e) = extraction.entities.iter().find(|e| {
            r.names
                .contains(&crate::compile::resolve::split_parenthetical(&e.name).0)
        }) {
            if !e.description.is_empty() {
                briefs.insert(key.clone(), e.description.clone());
            }
        }
    }

    // The source's summary page.
    let source_page = match source
        .summary_page
        .as_ref()
        .filter(|k| pages.contains_key(*k))
    {
        Some(k) => k.clone(),
        None => {
            let key = crate::markdown::keys::readable_unique_key(&source.title, "source", &taken);
            taken.insert(fold_key(&key));
            created.insert(key.clone());
            pages.insert(
                key.clone(),
                skeleton(key.clone(), source.title.clone(), PageKind::Source),
            );
            key
        }
    };

    // The source's facts go on its summary page, and on parts continuing it when they are
    // more than one page should hold (the soft limit of `model::limits`, each fact estimated
    // as its line and footnote definition), so no page of the source passes the hard limit.
    let part_of_claim = source_parts_of(&extraction.claims, &source.title);
    let mut source_parts: Vec<String> = vec![source_page.clone()];
    let kept_parts: Vec<&String> = source
        .parts
        .iter()
        .filter(|k| pages.get(*k).is_some_and(|p| p.kind == PageKind::Source))
        .collect();
    for n in 1..=part_of_claim.last().copied().unwrap_or(0) {
        let key = match kept_parts.get(n - 1) {
            Some(k) => (*k).clone(),
            None => {
                let title = format!("{} (part {})", source.title, n + 1);
                let key = crate::markdown::keys::readable_unique_key(&title, "source", &taken);
                taken.insert(fold_key(&key));
                created.insert(key.clone());
                pages.insert(key.clone(), skeleton(key.clone(), title, PageKind::Source));
                key
            }
        };
        source_parts.push(key);
    }
    Resolved {
        pages,
        created,
        name_to_page,
        briefs,
        source_page,
        source_parts,
        part_of_claim,
    }
}

/// The claims of a plan.
struct ClaimChanges {
    /// This source's claims after the compile, by id.
    new_claims: BTreeMap<String, Claim>,
    /// Those of them not stored yet.
    fresh: BTreeSet<String>,
    /// This source's stored claims it no longer makes.
    retracted: BTreeSet<String>,
    /// Every claim after the compile, by id.
    claims_after: BTreeMap<String, Claim>,
}

/// Claims: each on the source page (or its part) and on the pages it is about.
fn claim_changes(
    snap: &Snapshot,
    source: &Source,
    extraction: &Extraction,
    resolved: &Resolved,
    source_plain: &str,
    described: &[(&str, String)],
) -> ClaimChanges {
    let mut new_claims: BTreeMap<String, Claim> = BTreeMap::new();
    for (i, c) in extraction.claims.iter().enumerate() {
        let verified = quote_occurs(&c.quote, source_plain);
        // A quote that is not the source's own text but a picture's description cites the
        // picture, and stays unverified: a model wrote it (Decision 3).
        let from_description = (!verified)
            .then(|| {
                described
                    .iter()
                    .find(|(_, plain)| quote_occurs(&c.quote, plain))
                    .map(|(name, _)| name.to_string())
            })
            .flatten();
        let mut targets = vec![resolved.source_parts[resolved.part_of_claim[i]].clone()];
        for a in &c.about {
            if let Some(k) = resolved.name_to_page.get(&match_key(a)) {
                if !targets.contains(k) {
                    targets.push(k.clone());
                }
            }
        }
        for page in targets {
            let id = claim_id(&page, &source.key, &c.text, &c.quote);
            new_claims.entry(id.clone()).or_insert(Claim {
                id,
                page,
                text: c.text.clone(),
                source_key: source.key.clone(),
                source_version: source.version.clone(),
                quote: c.quote.clone(),
                verified,
                stance: c.stance,
                from_description: from_description.clone(),
            });
        }
    }
    let retracted: BTreeSet<String> = crate::util::btree_set(
        snap.claims
            .values()
            .filter(|c| c.source_key == source.key && !new_claims.contains_key(&c.id))
            .map(|c| c.id.clone()),
    );
    let fresh: BTreeSet<String> = crate::util::btree_set(
        new_claims
            .keys()
            .filter(|id| !snap.claims.contains_key(*id))
            .cloned(),
    );
    let mut claims_after: BTreeMap<String, Claim> = crate::util::btree_map(
        snap.claims
            .iter()
            .filter(|(id, _)| !retracted.contains(*id))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    for (id, c) in &new_claims {
        claims_after.insert(id.clone(), c.clone());
    }
    ClaimChanges {
        new_claims,
        fresh,
        retracted,
        claims_after,
    }
}

/// Contradictions with claims of other sources: a record opens on the app's checks, not on the
/// model's word — both claims asserted, both quotes verbatim in their own sources, both claims
/// on one page ([`check_contradiction`]). Returns the new records and the proposals turned away.
fn open_contradictions(
    snap: &Snapshot,
    extraction: &Extraction,
    claims: &ClaimChanges,
    pages: &BTreeMap<String, Page>,
    source_key: &str,
    source_plain: &str,
    op: OpId,
) -> (Vec<Contradiction>, Vec<RejectedContradiction>) {
    let mut new_records: Vec<Contradiction> = Vec::new();
    let mut rejected: Vec<RejectedContradiction> = Vec::new();
    for cand in &extraction.contradictions {
        match check_contradiction(
            cand,
            &claims.claims_after,
            &claims.new_claims,
            pages,
            source_key,
            source_plain,
        ) {
            Err(r) => {
                if !rejected.contains(&r) {
                    rejected.push(r);
                }
            }
            Ok((existing, new)) => {
                let id = contradiction_id(&[existing.id.clone(), new.id.clone()]);
                if snap.ledger.contains_key(&id) || new_records.iter().any(|r| r.id == id) {
                    continue;
                }
                let mut record_claims = vec![existing.id.clone(), new.id.clone()];
                crate::util::sort(&mut record_claims);
                new_records.push(Contradiction {
                    id,
                    pages: vec![existing.page.clone()],
                    claims: record_claims,
                    description: cand.explanation.clone(),
                    status: ContradictionStatus::Open,
                    note: None,
                    opened_by: op,
                    closed_by: None,
                });
            }
        }
    }
    (new_records, rejected)
}

/// Which pages the model rewrites and which only get their callouts refreshed.
struct Rewrites {
    /// New facts by page key.
    facts: BTreeMap<String, Vec<Fact>>,
    /// Retracted facts by page key.
    retracted_facts: BTreeMap<String, Vec<Fact>>,
    /// Pages the model rewrites.
    rewrite: BTreeSet<String>,
    /// Pages whose metadata or callouts change without new prose.
    refresh: BTreeSet<String>,
}

/// The facts each page gains and loses, and from them the pages to rewrite (with facts, the
/// summary page, the new pages) and to refresh (new records, metadata changes).
fn rewrites(
    snap: &Snapshot,
    source: &Source,
    resolved: &Resolved,
    claims: &ClaimChanges,
    new_records: &[Contradiction],
) -> Rewrites {
    let pages = &resolved.pages;
    let source_of = |id: &String| snap.claims.get(id).or_else(|| claims.new_claims.get(id));
    let mut facts: BTreeMap<String, Vec<Fact>> = BTreeMap::new();
    let mut retracted_facts: BTreeMap<String, Vec<Fact>> = BTreeMap::new();
    let source_pages = source_page_map(
        &snap.sources,
        pages,
        &source.key,
        &resolved.source_page,
        &source.title,
    );
    let to_fact = |c: &Claim| {
        let (sp, st) = source_pages
            .get(&c.source_key)
            .cloned()
            .unwrap_or_else(|| (c.source_key.clone(), c.source_key.clone()));
        Fact {
            id: c.id.clone(),
            text: c.text.clone(),
            quote: c.quote.clone(),
            verified: c.verified,
            source_page: sp,
            source_title: st,
        }
    };
    for id in &claims.fresh {
        let c = &claims.new_claims[id];
        facts.entry(c.page.clone()).or_default().push(to_fact(c));
    }
    for id in &claims.retracted {
        if let Some(c) = source_of(id) {
            retracted_facts
                .entry(c.page.clone())
                .or_default()
                .push(to_fact(c));
        }
    }
    let mut rewrite: BTreeSet<String> =
        crate::util::btree_set(facts.keys().chain(retracted_facts.keys()).cloned());
    rewrite.insert(resolved.source_page.clone());
    for k in &resolved.created {
        rewrite.insert(k.clone());
    }
    let mut refresh: BTreeSet<String> =
        crate::util::btree_set(new_records.iter().flat_map(|r| r.pages.iter().cloned()));
    // Pages this source mentions without new facts still list it as a source and take its
    // aliases: their metadata changes, their prose does not.
    for k in resolved.name_to_page.values() {
        let changed = match snap.pages.get(k) {
            Some((old, _)) => !old.sources.contains(&source.key) || old.aliases != pages[k].aliases,
            None => true,
        };
        if changed {
            refresh.insert(k.clone());
        }
    }
    refresh.retain(|k| !rewrite.contains(k) && pages.contains_key(k));
    Rewrites {
        facts,
        retracted_facts,
        rewrite,
        refresh,
    }
}

/// One integrate input per page to rewrite: its brief, facts, retracted facts, relations and the
/// link targets its text names (this compile's pages first, then the index slice).
fn integrate_inputs(
    snap: &Snapshot,
    input: &PlanInput<'_>,
    resolved: &Resolved,
    rw: &Rewrites,
) -> Vec<IntegrateInput> {
    let extraction = &input.extracted.extraction;
    let (pages, source_page) = (&resolved.pages, &resolved.source_page);
    // Link targets: this compile's pages first, then the index slice.
    let mut link_targets: Vec<(String, String)> = Vec::new();
    for k in rw.rewrite.iter().chain(input.extracted.slice_keys.iter()) {
        if let Some(p) = pages.get(k) {
            if !link_targets.iter().any(|(x, _)| x == k) && link_targets.len() < MAX_LINK_TARGETS {
                link_targets.push((p.key.clone(), p.title.clone()));
            }
        }
    }
    let names_page = |name: &str, key: &str| {
        resolved
            .name_to_page
            .get(&match_key(name))
            .is_some_and(|k| k == key)
    };
    let relations_for = |key: &str| -> Vec<String> {
        extraction
            .relations
            .iter()
            .filter(|r| names_page(&r.from, key) || names_page(&r.to, key))
            .map(|r| format!("{} — {} → {}", r.from, r.label, r.to))
            .collect()
    };

    let mut folded = FoldedNames::new(pages);
    rw.rewrite
        .iter()
        .map(|k| {
            let p = &pages[k];
            let brief = if k == source_page {
                extraction.summary.clone()
            } else {
                resolved.briefs.get(k).cloned().unwrap_or_default()
            };
            let page_facts = rw.facts.get(k).cloned().unwrap_or_default();
            let relations = relations_for(k);
            // What the page will say: the pages it can link are the ones this text names.
            let mut text = format!("{}\n{}\n{}\n", p.title, p.body, brief);
            for f in &page_facts {
                text.push_str(&f.text);
                text.push('\n');
            }
            for r in &relations {
                text.push_str(r);
                text.push('\n');
            }
            IntegrateInput {
                key: k.clone(),
                title: p.title.clone(),
                kind: p.kind,
                current_body: if k == source_page {
                    input.source_page_base.to_string()
                } else {
                    strip_app_sections(&p.body)
                },
                brief,
                facts: page_facts,
                retracted: rw.retracted_facts.get(k).cloned().unwrap_or_default(),
                relations,
                link_targets: if input.probe {
                    Vec::new()
                } else {
                    // The pages the body links already stay linkable.
                    let mut candidates = link_targets.clone();
                    let mut seen: BTreeSet<&str> =
                        link_targets.iter().map(|(c, _)| c.as_str()).collect();
                    for l in crate::markdown::wikilinks::links(&p.body) {
                        if let Some(t) = pages.get(&l.target) {
                            if seen.insert(t.key.as_str()) {
                                candidates.push((t.key.clone(), t.title.clone()));
                            }
                        }
                    }
                    link_targets_for(k, source_page, &candidates, &mut folded, &text)
                },
                schema_md: snap.schema_md.clone(),
                append: false,
            }
        })
        .collect()
}

/// Metadata of the pages this compile writes: the source joins the sources of the pages it gives
/// facts to, creates or names; the summary page takes the source's title and one line; a page
/// whose only support was this source's retracted claims loses it as a source.
fn update_metadata(
    resolved: &mut Resolved,
    source: &Source,
    extraction: &Extraction,
    rw: &Rewrites,
    claims: &ClaimChanges,
) {
    let pages = &mut resolved.pages;
    let (created, source_page) = (&resolved.created, &resolved.source_page);
    let mentioned: BTreeSet<&String> = crate::util::btree_set(resolved.name_to_page.values());
    for k in rw.rewrite.iter().chain(rw.refresh.iter()) {
        let p = pages.get_mut(k).expect("page");
        if !p.sources.contains(&source.key)
            && (rw.facts.contains_key(k)
                || k == source_page
                || created.contains(k)
                || mentioned.contains(k))
        {
            p.sources.push(source.key.clone());
            crate::util::sort(&mut p.sources);
        }
        if k == source_page {
            p.title = source.title.clone();
            p.summary = extraction.one_line.clone();
        }
    }
    // A page whose only support was this source's retracted claims loses it as a source.
    for (k, _) in rw.retracted_facts.iter() {
        let still = claims
            .claims_after
            .values()
            .any(|c| c.page == *k && c.source_key == source.key);
        if !still && k != source_page {
            if let Some(p) = pages.get_mut(k) {
                p.sources.retain(|s| *s != source.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::extract::{ExtractedClaim, ExtractedEntity, Relation};
    use crate::model::{SourceStatus, Stance};

    fn page(key: &str, kind: PageKind, body: &str) -> Page {
        Page {
            key: key.into(),
            title: key.into(),
            kind,
            summary: String::new(),
            aliases: vec![],
            tags: vec![],
            sources: vec![],
            created: 1,
            updated: 1,
            body: body.into(),
            revision: 1,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        }
    }

    fn claim(text: &str, about: &str) -> ExtractedClaim {
        ExtractedClaim {
            text: text.into(),
            quote: text.into(),
            about: vec![about.into()],
            stance: Stance::default(),
        }
    }

    #[test]
    fn a_plan_is_made_from_a_hand_built_snapshot() {
        let source = Source {
            key: "notes".into(),
            version: "v1".into(),
            title: "Rust notes".into(),
            url: None,
            mime: "text/markdown".into(),
            captured_at: None,
            added_at: 1,
            op: 1,
            text_bytes: 60,
            original: None,
            previous_versions: vec![],
            status: SourceStatus::Pending,
            summary_page: None,
            parts: vec![],
        };
        let snap = Snapshot {
            pages: BTreeMap::from([(
                "Borrowing".to_string(),
                (
                    page("Borrowing", PageKind::Concept, "Borrowing lends a value."),
                    3,
                ),
            )]),
            loaded: BTreeSet::new(),
            table: Default::default(),
            claims: BTreeMap::new(),
            ledger: BTreeMap::new(),
            sources: BTreeMap::new(),
            source_rev: 1,
            schema_md: "# schema".into(),
        };
        let extracted = Extracted {
            text: "Each value has one owner. A reference borrows a value.".into(),
            extraction: Extraction {
                summary: "How Rust owns values.".into(),
                one_line: "Ownership in Rust.".into(),
                claims: vec![
                    claim("Each value has one owner.", "Ownership"),
                    claim("A reference borrows a value.", "borrowing"),
                    claim("Borrowing is free.", "Borrowing"),
                ],
                entities: vec![
                    ExtractedEntity {
                        name: "Ownership".into(),
                        kind: "concept".into(),
                        aliases: vec![],
                        description: "Rust's memory rule.".into(),
                    },
                    ExtractedEntity {
                        name: "borrowing".into(),
                        kind: "concept".into(),
                        aliases: vec![],
                        description: String::new(),
                    },
                ],
                relations: vec![Relation {
                    from: "Ownership".into(),
                    to: "Borrowing".into(),
                    label: "enables".into(),
                }],
                contradictions: vec![],
            },
            slice_keys: vec![],
            images: vec![],
        };
        let input = PlanInput {
            source: &source,
            extracted: &extracted,
            op: 7,
            now: 100,
            source_page_base: "",
            probe: false,
        };
        let p = plan(&snap, &input);
        // A new page for the new concept and for the source; the existing page is resolved.
        assert_eq!(
            p.created,
            BTreeSet::from(["Ownership".to_string(), "Rust notes".to_string()])
        );
        assert_eq!(p.source_page, "Rust notes");
        assert_eq!(p.source_parts, vec!["Rust notes".to_string()]);
        assert_eq!(p.op, 7);
        // Every claim is on the source page and on the page it is about; the one whose quote
        // is not in the text is unverified.
        assert_eq!(p.new_claims.len(), 6);
        let on = |page: &str| -> Vec<(&str, bool)> {
            p.claims_after
                .values()
                .filter(|c| c.page == page)
                .map(|c| (c.text.as_str(), c.verified))
                .collect()
        };
        assert_eq!(on("Ownership"), vec![("Each value has one owner.", true)]);
        let mut borrowing = on("Borrowing");
        borrowing.sort();
        assert_eq!(
            borrowing,
            vec![
                ("A reference borrows a value.", true),
                ("Borrowing is free.", false)
            ]
        );
        // All three pages are rewritten; none is only refreshed.
        let keys: Vec<&str> = p.integrate.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(keys, vec!["Borrowing", "Ownership", "Rust notes"]);
        assert!(p.refresh.is_empty());
        assert_eq!(p.touched(), BTreeSet::from(["Borrowing".to_string()]));
        let own = &p.integrate[1];
        assert_eq!(own.brief, "Rust's memory rule.");
        assert_eq!(own.relations, vec!["Ownership — enables → Borrowing"]);
        assert_eq!(own.schema_md, "# schema");
        assert_eq!(p.integrate[2].brief, "How Rust owns values.");
        assert_eq!(p.integrate[0].current_body, "Borrowing lends a value.");
        // Metadata: the source joins every page it writes; the summary page takes its one line.
        for k in ["Borrowing", "Ownership", "Rust notes"] {
            assert_eq!(p.pages[k].sources, vec!["notes".to_string()], "{k}");
        }
        assert_eq!(p.pages["Rust notes"].summary, "Ownership in Rust.");
        assert_eq!(p.pages["Ownership"].created, 100);
        assert!(p.new_records.is_empty() && p.rejected.is_empty() && p.retracted.is_empty());
    }
}
