//! The commit of a plan: the model's drafts finalized into page bodies (the app-owned sections,
//! links that resolve), each page fitted to the hard limit (`model::limits`) by keeping some of
//! this source's facts off it, pages that would lose a human paragraph held as proposals
//! (Decision 5), and everything written in one operation.
//!
//! *Invariant:* a commit writes all of a source's changes in one batch or none of them; the
//! ledger never names a claim that is not stored.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::claims::source_page_map;
use super::plan::Plan;
use super::report::{Retried, RetryReason, SourceReport, FAILURE_PREFIX, PROPOSAL_PREFIX};
use super::snapshot::Snapshot;
use crate::clock::Clock;
use crate::clock::Millis;
use crate::compile::integrate::{IntegrateInput, PageDraft};
use crate::compile::links::fix_links;
use crate::compile::model::CompileModel;
use crate::error::{Error, Result};
use crate::markdown::page::{clean_page, CleanOptions};
use crate::markdown::page_body::{
    finalize_body, missing_human_paragraphs, strip_app_sections, written_bytes, Finalize,
};
use crate::markdown::resolve::Resolver;
use crate::model::{
    limits, Author, Claim, Contradiction, ContradictionStatus, MoreFacts, OpId, OperationKind,
    Page, PageKind, Revision, Source, SourceStatus, TokenUsage,
};
use crate::records::contradiction_id;
use crate::storage::{Expect, Storage, Store};
use crate::wiki::OpBuilder;
use crate::wiki::{revision_key, to_json, Wiki};

/// A page draft, whether it is to be appended (append mode) rather than replace the body, and
/// whether a reply for it was cut at the output limit and asked again.
pub(super) type Draft = (PageDraft, bool, bool);

/// The most bytes a page's `## More facts` section takes: [`limits::MORE_FACTS_LINES`] lines of
/// a count and a link, and the line summing older sources.
pub(super) const MORE_FACTS_MAX_BYTES: usize = 3 * 1024;

/// `stored` with the entry of `source` replaced by `facts` facts (none when 0): what a full page
/// counts under `## More facts` after this compile of `source`.
pub(super) fn more_facts_with(stored: &[MoreFacts], source: &str, facts: usize) -> Vec<MoreFacts> {
    let mut more: Vec<MoreFacts> = stored
        .iter()
        .filter(|m| m.source != source)
        .cloned()
        .collect();
    if facts > 0 {
        more.push(MoreFacts {
            source: source.to_string(),
            facts: facts as u32,
        });
    }
    more
}

/// Finalizes page bodies for a commit ([`finalize_body`]): the app-owned sections (footnote
/// definitions, `## Facts`, `## More facts`, callouts) from the claims and the ledger after this
/// compile, and links that resolve.
struct Finalizer<'a> {
    claims_after: &'a BTreeMap<String, Claim>,
    retracted: &'a BTreeSet<String>,
    /// A RefCell: a record naming a claim kept off a full page is rewritten after the pages are
    /// finalized ([`retarget_records`]), and the pages it concerns finalized again.
    ledger_after: RefCell<BTreeMap<String, Contradiction>>,
    titles: BTreeMap<String, String>,
    source_pages: BTreeMap<String, (String, String)>,
    resolver: Resolver,
}

impl<'a> Finalizer<'a> {
    /// The finalizer of a plan's pages (after resolution), claims and new records.
    pub(super) fn new(
        snap: &Snapshot,
        source: &Source,
        pages: &BTreeMap<String, Page>,
        claims: (&'a BTreeMap<String, Claim>, &'a BTreeSet<String>),
        new_records: &[Contradiction],
        source_page: &str,
    ) -> Self {
        let mut ledger_after = snap.ledger.clone();
        for r in new_records {
            ledger_after.insert(r.id.clone(), r.clone());
        }
        let page_list: Vec<Page> = pages.values().cloned().collect();
        Finalizer {
            claims_after: claims.0,
            retracted: claims.1,
            ledger_after: RefCell::new(ledger_after),
            titles: crate::util::btree_map(pages.iter().map(|(k, p)| (k.clone(), p.title.clone()))),
            source_pages: source_page_map(
                &snap.sources,
                pages,
                &source.key,
                source_page,
                &source.title,
            ),
            resolver: Resolver::from_pages(&page_list),
        }
    }

    /// The body of page `key` from `draft_body`, without the claims in `off` (kept off a full
    /// page), keeping the `human` paragraphs and counting `more` under `## More facts`.
    pub(super) fn finalize(
        &self,
        key: &str,
        draft_body: &str,
        human: &[String],
        off: &BTreeSet<String>,
        more: &[MoreFacts],
    ) -> String {
        let page_claims: BTreeMap<String, Claim> = crate::util::btree_map(
            self.claims_after
                .values()
                .filter(|c| c.page == key && !off.contains(&c.id))
                .map(|c| (c.id.clone(), c.clone())),
        );
        let ledger = self.ledger_after.borrow();
        let open: Vec<&Contradiction> = ledger
            .values()
            .filter(|r| r.status == ContradictionStatus::Open && r.pages.iter().any(|p| p == key))
            .collect();
        let f = Finalize {
            page_claims: &page_claims,
            retracted: self.retracted,
            open_contradictions: &open,
            all_claims: self.claims_after,
            titles: &self.titles,
            source_pages: &self.source_pages,
            self_key: key,
            protected: human,
            more_facts: more,
        };
        // The model's page may come wrapped in fences or frontmatter (F05).
        let cleaned = clean_page(draft_body, CleanOptions::LLM).body;
        finalize_body(&cleaned, &f, |b| fix_links(b, &self.resolver, key))
    }
}

/// What a commit has decided so far about the pages it writes.
#[derive(Default)]
struct WriteState {
    /// Claims kept off pages that are full (their twins on the source's summary page stay):
    /// not stated, not cited, not stored.
    moved_off: BTreeSet<String>,
    /// Keys of the pages written.
    pages: Vec<String>,
    /// Pages held as proposals (a human paragraph would be lost), with the page proposed.
    held: Vec<(String, Page)>,
}

/// A page's text after the hard limit (`model::limits`): the body of `text` finalized with the
/// most of this source's new facts (`fresh`) that keep the page within the limit, the others kept
/// off it and counted under `## More facts`. Returns the body, the facts kept off and the
/// page's `## More facts` entries.
struct Fitted {
    body: String,
    off: BTreeSet<String>,
    more: Vec<MoreFacts>,
}

/// The inputs of [`fit_to_limit`] for one page.
struct FitInput<'a> {
    key: &'a str,
    text: &'a str,
    human: &'a [String],
    fresh: &'a [String],
    stored_more: &'a [MoreFacts],
    stored_body: &'a str,
    source_key: &'a str,
}

/// Fits one page to the hard limit: the body with all new facts when it fits, else the most that
/// fit (bisected between none and all), else the page's stored text without any of them.
fn fit_to_limit(fin: &Finalizer<'_>, w: &WriteState, body: String, input: &FitInput<'_>) -> Fitted {
    let FitInput {
        key,
        text,
        human,
        fresh,
        stored_more,
        ..
    } = *input;
    let stated = fin
        .claims_after
        .values()
        .filter(|c| c.page == key && !w.moved_off.contains(&c.id))
        .count();
    // The `## More facts` section may still grow to its bound without passing the
    // limit, so the rest of the page is held to the limit less that bound.
    let fits = |body: &str, off: usize, more: &[MoreFacts]| {
        let section = crate::markdown::page_body::more_facts_section(more, &fin.source_pages).len();
        written_bytes(body, human).saturating_sub(section) + section.max(MORE_FACTS_MAX_BYTES)
            <= limits::HARD_BYTES
            && stated - off <= limits::HARD_FACTS
    };
    // The page with the first `keep` of this source's new facts.
    let with = |keep: usize| {
        let off: BTreeSet<String> = crate::util::btree_set(fresh[keep..].iter().cloned());
        let more = more_facts_with(stored_more, input.source_key, off.len());
        let all_off: BTreeSet<String> = w.moved_off.union(&off).cloned().collect();
        let kept_text = crate::markdown::page_body::remove_citing_lines(text, &off);
        let body = fin.finalize(key, &kept_text, human, &all_off, &more);
        (body, off, more)
    };
    let mut body = body;
    let mut off: BTreeSet<String> = BTreeSet::new();
    let mut more = stored_more.to_vec();
    if !fits(&body, 0, &more) && !fresh.is_empty() {
        // The most facts that fit: none fit, or bisect between none and all.
        let (b, o, m) = with(0);
        (body, off, more) = (b, o, m);
        if fits(&body, off.len(), &more) {
            let (mut lo, mut hi) = (0, fresh.len());
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                let (b, o, m) = with(mid);
                if fits(&b, o.len(), &m) {
                    lo = mid;
                    (body, off, more) = (b, o, m);
                } else {
                    hi = mid;
                }
            }
        }
    }
    if !fits(&body, off.len(), &more) {
        // Even without this source's facts the model's text is too long: the page
        // keeps the text it had, and counts what it could not take.
        off = crate::util::btree_set(fresh.iter().cloned());
        more = more_facts_with(stored_more, input.source_key, off.len());
        let all_off: BTreeSet<String> = w.moved_off.union(&off).cloned().collect();
        body = fin.finalize(key, input.stored_body, human, &all_off, &more);
    }
    Fitted { body, off, more }
}

/// A new record naming a claim kept off a full page names the claim's twin on the source's own
/// pages instead (same source, text and quote, on the summary page or a part), so the ledger
/// never names a claim that is not stored. Records left with fewer than two claims, or already
/// in the ledger, go; the rest join `fin`'s ledger. Returns the pages whose callouts change.
fn retarget_records(
    new_records: &mut Vec<Contradiction>,
    fin: &Finalizer<'_>,
    moved_off: &BTreeSet<String>,
    source_parts: &[String],
    ledger: &BTreeMap<String, Contradiction>,
) -> BTreeSet<String> {
    let claims_after = fin.claims_after;
    let mut recallout: BTreeSet<String> = BTreeSet::new();
    for r in new_records.iter_mut() {
        if !r.claims.iter().any(|id| moved_off.contains(id)) {
            continue;
        }
        recallout.extend(r.pages.iter().cloned());
        let twin = |id: &String| -> Option<String> {
            let c = claims_after.get(id)?;
            claims_after
                .values()
                .find(|t| {
                    !moved_off.contains(&t.id)
                        && source_parts.contains(&t.page)
                        && t.source_key == c.source_key
                        && t.text == c.text
                        && t.quote == c.quote
                })
                .map(|t| t.id.clone())
        };
        let claims: Option<Vec<String>> = r
            .claims
            .iter()
            .map(|id| {
                if moved_off.contains(id) {
                    twin(id)
                } else {
                    Some(id.clone())
                }
            })
            .collect();
        fin.ledger_after.borrow_mut().remove(&r.id);
        let Some(mut claims) = claims else {
            // No twin (cannot happen: every fact is on its source's pages): no record.
            r.claims.clear();
            continue;
        };
        crate::util::sort(&mut claims);
        claims.dedup();
        let mut record_pages: Vec<String> = claims
            .iter()
            .filter_map(|id| claims_after.get(id).map(|c| c.page.clone()))
            .collect();
        crate::util::sort(&mut record_pages);
        record_pages.dedup();
        r.id = contradiction_id(&claims);
        r.claims = claims;
        r.pages = record_pages;
        recallout.extend(r.pages.iter().cloned());
    }
    new_records.retain(|r| r.claims.len() > 1 && !ledger.contains_key(&r.id));
    {
        let mut seen = BTreeSet::new();
        new_records.retain(|r| seen.insert(r.id.clone()));
    }
    for r in new_records.iter() {
        fin.ledger_after
            .borrow_mut()
            .insert(r.id.clone(), r.clone());
    }
    recallout
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Writes a plan in one operation (see the module docs). Fails with [`Error::Conflict`] when
    /// another operation landed since planning (the caller plans again).
    pub(super) async fn commit_plan<M: CompileModel>(
        &self,
        source: &Source,
        snap: &Snapshot,
        plan: Plan,
        drafts: &HashMap<String, Draft>,
        usage: &TokenUsage,
        model: &M,
    ) -> Result<SourceReport> {
        let now = self.clock.now_ms();
        let mut ob = self
            .begin(
                OperationKind::Compile,
                format!("compiled: {}", source.title),
            )
            .await?;
        if ob.op.id != plan.op {
            // Another operation landed since planning: plan again with the right id.
            return Err(Error::Conflict {
                store: Store::Meta,
                key: crate::records::META_OPS.into(),
                expected: format!("op {}", plan.op),
                found: format!("op {}", ob.op.id),
            });
        }
        let Plan {
            mut pages,
            created,
            integrate,
            refresh,
            mut claims_after,
            mut new_claims,
            retracted,
            mut new_records,
            rejected,
            instruction_like,
            source_page,
            source_parts,
            op,
        } = plan;
        let fin = Finalizer::new(
            snap,
            source,
            &pages,
            (&claims_after, &retracted),
            &new_records,
            &source_page,
        );
        let mut report = SourceReport {
            key: source.key.clone(),
            op,
            ..Default::default()
        };
        let mut w = WriteState::default();
        for input in &integrate {
            let ck = serde_json::to_string(input).expect("serialisable");
            let draft = drafts.get(&ck).expect("every integrate input has a draft");
            if draft.2 {
                report.retried.push(Retried {
                    page: input.key.clone(),
                    reason: RetryReason::Truncated,
                });
            }
            let target = DraftTarget {
                snap,
                source,
                created: &created,
                new_claims: &new_claims,
                source_parts: &source_parts,
            };
            self.write_drafted(&fin, &mut w, &mut pages, input, draft, &target)
                .await?;
        }
        let recallout = retarget_records(
            &mut new_records,
            &fin,
            &w.moved_off,
            &source_parts,
            &snap.ledger,
        );
        // Pages whose callouts change without new prose, and those of rewritten records, get
        // their app sections from the final ledger.
        let refinalize: BTreeSet<&String> = refresh
            .iter()
            .chain(
                recallout
                    .iter()
                    .filter(|k| pages.contains_key(*k) && !w.held.iter().any(|(h, _)| h == *k)),
            )
            .collect();
        for key in refinalize {
            let human = match snap.pages.get(key) {
                Some((stored, _)) => self.human_paragraphs(key, stored).await?,
                None => Vec::new(),
            };
            let page = pages.get_mut(key).expect("page");
            page.body = fin.finalize(key, &page.body, &human, &w.moved_off, &page.more_facts);
            w.pages.push(key.clone());
        }
        drop(fin);
        // What was kept off full pages is not stored as their claims.
        for id in &w.moved_off {
            claims_after.remove(id);
            new_claims.remove(id);
        }
        crate::util::sort(&mut w.pages);
        w.pages.dedup();

        let stamp = Stamp {
            now,
            op,
            offline: model.is_extractive(),
        };
        self.put_pages(
            &mut ob,
            &mut pages,
            &w.pages,
            &created,
            snap,
            stamp,
            &mut report,
        )
        .await?;
        let records = Records {
            retracted: &retracted,
            new_claims: &new_claims,
            claims_after: &claims_after,
            new_records: &new_records,
        };
        put_held_and_records(&mut ob, &w.held, &records, &mut report);
        report.contradictions_rejected = rejected;
        put_compiled_source(&mut ob, source, snap, op, &source_parts, instruction_like);

        let source_claims: Vec<&Claim> = claims_after
            .values()
            .filter(|c| c.source_key == source.key)
            .collect();
        report.claims = source_claims.len();
        report.unverified = source_claims.iter().filter(|c| !c.verified).count();
        report.usage = *usage;
        summarize(&mut ob, &report, source, &model.name(), w.pages);
        self.finish(ob).await?;
        Ok(report)
    }

    /// One drafted page into `pages`: the model's text (merged into the page in append mode,
    /// with the summary page's `## Parts` links), finalized and fitted to the hard limit, and
    /// its summary; or, when a human paragraph would be lost, held as a proposal with the
    /// stored page kept.
    async fn write_drafted(
        &self,
        fin: &Finalizer<'_>,
        w: &mut WriteState,
        pages: &mut BTreeMap<String, Page>,
        input: &IntegrateInput,
        (draft, append, _): &Draft,
        t: &DraftTarget<'_>,
    ) -> Result<()> {
        // Decision 5: a human edit since the last LLM revision must survive word for word.
        let human = if t.created.contains(&input.key) {
            Vec::new()
        } else {
            self.human_paragraphs(&input.key, &t.snap.pages[&input.key].0)
                .await?
        };
        let text = if *append {
            // The model saw only the page's headings: what it wrote goes into the page as it
            // is, adding only what the page does not already hold (an echoed outline or a
            // repeated fact adds nothing).
            let current = strip_app_sections(&pages[&input.key].body);
            let draft_body = clean_page(&draft.body, CleanOptions::LLM).body;
            crate::markdown::dedup::merge_append(&current, &draft_body, &human)
        } else {
            draft.body.clone()
        };
        // The summary page links the parts that continue it.
        let text = if input.key == t.source_parts[0] && t.source_parts.len() > 1 {
            let links: Vec<String> = t.source_parts[1..]
                .iter()
                .map(|k| {
                    format!(
                        "- {}",
                        crate::markdown::wikilinks::link_to(k, &pages[k].title)
                    )
                })
                .collect();
            format!("{}\n\n## Parts\n\n{}", text.trim_end(), links.join("\n"))
        } else {
            text
        };
        let stored_more = pages[&input.key].more_facts.clone();
        let mut body = fin.finalize(&input.key, &text, &human, &w.moved_off, &stored_more);
        // The hard limit (`model::limits`): a fact that would take the page past it stays on
        // the source's summary page only, and the page counts it under `## More facts`.
        // Source pages hold their source's facts and are cut into parts when planned.
        if pages[&input.key].kind != PageKind::Source {
            let fresh: Vec<String> = input
                .facts
                .iter()
                .map(|f| f.id.clone())
                .filter(|id| t.new_claims.contains(id))
                .collect();
            let stored_body = strip_app_sections(&pages[&input.key].body);
            let fit = FitInput {
                key: &input.key,
                text: &text,
                human: &human,
                fresh: &fresh,
                stored_more: &stored_more,
                stored_body: &stored_body,
                source_key: &t.source.key,
            };
            let fitted = fit_to_limit(fin, w, body, &fit);
            body = fitted.body;
            w.moved_off.extend(fitted.off);
            pages.get_mut(&input.key).expect("page").more_facts = fitted.more;
        }
        let page = pages.get_mut(&input.key).expect("page");
        if !draft.summary.trim().is_empty() && page.kind != PageKind::Source {
            page.summary = draft
                .summary
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
        }
        if !t.created.contains(&input.key) && !missing_human_paragraphs(&human, &body).is_empty() {
            let mut proposal = page.clone();
            proposal.body = body;
            w.held.push((input.key.clone(), proposal));
            // Keep the stored page as it is.
            *page = t.snap.pages[&input.key].0.clone();
            return Ok(());
        }
        page.body = body;
        w.pages.push(input.key.clone());
        Ok(())
    }

    /// The written pages into the batch: tagged, numbered and stamped, each with its revision;
    /// a held update of a page written now is dropped.
    #[allow(clippy::too_many_arguments)]
    async fn put_pages(
        &self,
        ob: &mut OpBuilder,
        pages: &mut BTreeMap<String, Page>,
        written: &[String],
        created: &BTreeSet<String>,
        snap: &Snapshot,
        stamp: Stamp,
        report: &mut SourceReport,
    ) -> Result<()> {
        let Stamp { now, op, offline } = stamp;
        for key in written {
            let page = pages.get_mut(key).expect("page");
            // Pages written by the offline compiler carry the `offline` tag until an LLM rewrites them.
            page.tags.retain(|t| t != crate::extractive::OFFLINE);
            if offline {
                page.tags.push(crate::extractive::OFFLINE.to_string());
            }
            if created.contains(key) {
                // A deleted or renamed page may have left its history under this key.
                page.revision = self.next_revision_number(key).await? - 1;
            }
            page.revision += 1;
            page.updated = now;
            let expect = match snap.pages.get(key) {
                Some((_, rev)) => Expect::Rev(*rev),
                None => Expect::Absent,
            };
            ob.batch
                .put(Store::Pages, key.clone(), to_json(&*page), expect);
            // A held update of this page is superseded by what is written now.
            ob.batch
                .delete(Store::Meta, format!("{PROPOSAL_PREFIX}{key}"), Expect::Any);
            let revision = Revision {
                page: key.clone(),
                number: page.revision,
                author: Author::Llm,
                op,
                time: now,
                page_state: Some(page.clone()),
            };
            ob.batch.put(
                Store::Revisions,
                revision_key(key, page.revision),
                to_json(&revision),
                Expect::Absent,
            );
            if created.contains(key) {
                report.created.push(key.clone());
            } else {
                report.updated.push(key.clone());
            }
        }
        Ok(())
    }
}

/// What [`Wiki::write_drafted`] reads of the commit besides the page.
struct DraftTarget<'a> {
    snap: &'a Snapshot,
    source: &'a Source,
    created: &'a BTreeSet<String>,
    new_claims: &'a BTreeSet<String>,
    /// The summary page and the parts continuing it.
    source_parts: &'a [String],
}

/// When and by what pages are written.
#[derive(Clone, Copy)]
struct Stamp {
    now: Millis,
    op: OpId,
    /// WriteState by the offline model ([`CompileModel::is_extractive`]).
    offline: bool,
}

/// The source's new status into the batch: compiled by `op` at its version, its summary page and
/// parts; its failure record gone; its instruction-like phrases flagged.
fn put_compiled_source(
    ob: &mut OpBuilder,
    source: &Source,
    snap: &Snapshot,
    op: OpId,
    source_parts: &[String],
    instruction_like: Vec<String>,
) {
    let mut updated_source = source.clone();
    updated_source.status = SourceStatus::Compiled {
        op,
        version: source.version.clone(),
    };
    updated_source.summary_page = Some(source_parts[0].clone());
    updated_source.parts = source_parts[1..].to_vec();
    ob.batch.put(
        Store::Sources,
        source.key.clone(),
        to_json(&updated_source),
        Expect::Rev(snap.source_rev),
    );
    ob.batch.delete(
        Store::Meta,
        format!("{FAILURE_PREFIX}{}", source.key),
        Expect::Any,
    );
    crate::wiki::put_source_flag(
        &mut ob.batch,
        &source.key,
        &source.version,
        instruction_like,
    );
}

/// The claims and ledger records a commit writes.
struct Records<'a> {
    retracted: &'a BTreeSet<String>,
    new_claims: &'a BTreeSet<String>,
    claims_after: &'a BTreeMap<String, Claim>,
    new_records: &'a [Contradiction],
}

/// The held proposals, the retracted and new claims and the new ledger records into the batch.
fn put_held_and_records(
    ob: &mut OpBuilder,
    held: &[(String, Page)],
    r: &Records<'_>,
    report: &mut SourceReport,
) {
    for (key, proposal) in held {
        ob.batch.put(
            Store::Meta,
            format!("{PROPOSAL_PREFIX}{key}"),
            to_json(proposal),
            Expect::Any,
        );
        report.held.push(key.clone());
    }
    for id in r.retracted {
        ob.batch.delete(Store::Claims, id.clone(), Expect::Any);
    }
    for id in r.new_claims {
        ob.batch.put(
            Store::Claims,
            id.clone(),
            to_json(&r.claims_after[id]),
            Expect::Absent,
        );
    }
    for rec in r.new_records {
        ob.batch
            .put(Store::Ledger, rec.id.clone(), to_json(rec), Expect::Absent);
        report.contradictions.push(rec.id.clone());
    }
}

/// The operation's usage, sources, pages and log summary for the commit of `source`.
fn summarize(
    ob: &mut OpBuilder,
    report: &SourceReport,
    source: &Source,
    model_name: &str,
    pages: Vec<String>,
) {
    ob.op.usage = report.usage;
    ob.op.sources = vec![source.key.clone()];
    ob.op.pages = pages;
    ob.op.summary = format!(
        "compiled: {} ({}; {} created, {} updated, {} claims, {} unverified)",
        source.title,
        model_name,
        report.created.len(),
        report.updated.len(),
        report.claims,
        report.unverified
    );
}
