//! Applying a lint fix ([`Wiki::apply_fix`]) as one operation: the finding checked again, the
//! pages the fix may change read alone, one step per kind of fix, and every changed page written
//! with a revision by the user.
//!
//! *Invariant:* a fix never rewrites a link that already resolves and never points a page at
//! itself; a changed page's revision is the user's, so Decision 5 keeps protecting its human
//! paragraphs.

use std::collections::{BTreeMap, BTreeSet};

use super::merge::merge_pages;
use super::split::split_page;
use super::{Finding, Fix, LastFindings, LintOptions};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::markdown::resolve::{Resolution, Resolver};
use crate::markdown::wikilinks;
use crate::model::{
    Author, Contradiction, ContradictionStatus, Operation, OperationKind, Page, PageKind,
};
use crate::page_table::PageTable;
use crate::storage::{Expect, Storage, Store};
use crate::wiki::{to_json, OpBuilder, Wiki};

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Applies the fix of finding `id` (from a fresh [`Wiki::lint`]) as one operation. For a
    /// contradiction, `note` says how it was settled and `scoped` keeps both sides (status
    /// `scoped`) instead of `resolved`.
    ///
    /// Errors: [`Error::NotFound`] when no current finding has that id or it has no fix.
    pub async fn apply_fix(&self, id: &str, note: Option<&str>, scoped: bool) -> Result<Operation> {
        let f = self.current_finding(id).await?;
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
            return self.rename_fix(page, title, drop_aliases).await;
        }
        // The pages the fix may change, read alone.
        let table = self.page_table().await?;
        let resolver = table.resolver();
        let mut pages: Vec<Page> = Vec::new();
        for k in &self.pages_needed(&fix, &table).await? {
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
                let key = self
                    .create_page_fix(&mut pages, title, mentioned_on, &table, now)
                    .await?;
                changed.push(key);
            }
            Fix::ResolveContradiction { id } => {
                changed.extend(
                    self.resolve_fix(&mut ob, &mut pages, id, note, scoped)
                        .await?,
                );
            }
            Fix::RebuildIndex => ob.rewrite_index = true,
            Fix::RenamePage { .. } => {}
            Fix::SplitPage { page } => {
                changed.extend(
                    self.split_fix(&mut ob, &mut pages, page, &table, now)
                        .await?,
                );
            }
            Fix::RecordContradiction {
                pages: involved,
                claims,
                description,
            } => {
                changed.extend(
                    self.record_fix(&mut ob, &mut pages, involved, claims, description)
                        .await?,
                );
            }
            Fix::MergePages { survivor, merged } => {
                let (merge_changed, gone) = self
                    .merge_fix(&mut ob, &mut pages, resolver, survivor, merged, now)
                    .await?;
                changed.extend(merge_changed);
                removed.push(gone);
            }
        }
        self.write_changed(&mut ob, &mut pages, &changed, now)
            .await?;
        changed.extend(removed);
        ob.op.pages = changed;
        self.finish(ob).await
    }

    /// The current finding `id`: a finding this connection listed is checked again by a lint of
    /// its pages alone; any other (or a wiki-wide one) by a full lint. Errors:
    /// [`Error::NotFound`] when the lint no longer finds it.
    async fn current_finding(&self, id: &str) -> Result<Finding> {
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
        findings
            .into_iter()
            .find(|f| f.id == id)
            .ok_or_else(|| Error::NotFound(format!("lint finding {id} (run lint again)")))
    }

    /// [`Fix::RenamePage`]: the rename (its own operation), returned as that operation.
    async fn rename_fix(
        &self,
        page: &str,
        title: &str,
        drop_aliases: &[String],
    ) -> Result<Operation> {
        let report = self
            .rename_page_dropping_aliases(page, title, drop_aliases)
            .await?;
        self.operations()
            .await?
            .into_iter()
            .find(|o| o.id == report.op)
            .ok_or_else(|| Error::NotFound(format!("operation {}", report.op)))
    }

    /// The keys of the pages `fix` may change.
    async fn pages_needed(&self, fix: &Fix, table: &PageTable) -> Result<BTreeSet<String>> {
        let mut needed: BTreeSet<String> = BTreeSet::new();
        match fix {
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
        Ok(needed)
    }

    /// [`Fix::CreatePage`]: a concept page for `title` listing the sentences of the pages
    /// `mentioned_on` that link it (pushed to `pages`), with their sources. Returns its key.
    async fn create_page_fix(
        &self,
        pages: &mut Vec<Page>,
        title: &str,
        mentioned_on: &[String],
        table: &PageTable,
        now: i64,
    ) -> Result<String> {
        let key = crate::markdown::keys::readable_unique_key(title, "concept", &table.taken_keys());
        let mut lines = Vec::new();
        let mut sources = Vec::new();
        for k in mentioned_on {
            if let Some(p) = pages.iter().find(|p| p.key == *k) {
                sources.extend(p.sources.iter().cloned());
                for s in crate::extractive::sentences::sentences(&p.body.replace('\n', " ")) {
                    if wikilinks::links(&s).iter().any(|l| l.target == *title) {
                        lines.push(format!(
                            "- {} (from {})",
                            s.trim(),
                            crate::markdown::wikilinks::link_to(&p.key, &p.title)
                        ));
                    }
                }
            }
        }
        crate::util::sort_dedup(&mut sources);
        let revision = self.next_revision_number(&key).await?;
        pages.push(Page {
            key: key.clone(),
            title: title.to_string(),
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
        Ok(key)
    }

    /// [`Fix::ResolveContradiction`]: record `id` resolved (or scoped) with `note`, its callouts
    /// taken off its pages. Returns the pages changed.
    async fn resolve_fix(
        &self,
        ob: &mut OpBuilder,
        pages: &mut [Page],
        id: &str,
        note: Option<&str>,
        scoped: bool,
    ) -> Result<Vec<String>> {
        let (mut r, rev) = self
            .read::<Contradiction>(Store::Ledger, id)
            .await?
            .ok_or_else(|| Error::NotFound(id.to_string()))?;
        r.status = if scoped {
            ContradictionStatus::Scoped
        } else {
            ContradictionStatus::Resolved
        };
        r.note = note.map(str::to_string);
        r.closed_by = Some(ob.op.id);
        ob.batch
            .put(Store::Ledger, id.to_string(), to_json(&r), Expect::Rev(rev));
        // The callouts leave the pages' bodies.
        let mut changed = Vec::new();
        for k in &r.pages {
            if let Some(p) = pages.iter_mut().find(|p| p.key == *k) {
                p.body = crate::markdown::page_body::remove_callout(&p.body, id);
                changed.push(k.clone());
            }
        }
        Ok(changed)
    }

    /// [`Fix::SplitPage`]: `page` split into parts ([`split_page`]), the claims each part cites
    /// moved to it and the app sections of every page concerned rebuilt. Returns the page and
    /// its parts.
    async fn split_fix(
        &self,
        ob: &mut OpBuilder,
        pages: &mut Vec<Page>,
        page: &str,
        table: &PageTable,
        now: i64,
    ) -> Result<Vec<String>> {
        let op = ob.op.id;
        let mut sections = self.app_sections(pages).await?;
        let humans = self.humans_of(pages).await?;
        let Some(human) = humans.get(page).cloned() else {
            return Err(Error::NotFound(format!("page {page:?}")));
        };
        let mut taken = table.taken_keys();
        let parts = split_page(pages, page, &human, &mut taken, now)?;
        for part in &parts {
            let revision = self.next_revision_number(part).await?;
            if let Some(p) = pages.iter_mut().find(|p| p.key == *part) {
                p.revision = revision - 1;
            }
        }
        sections
            .titles
            .extend(pages.iter().map(|p| (p.key.clone(), p.title.clone())));
        let rebuild = sections.move_cited(&mut ob.batch, pages, page, &parts, op);
        for p in pages.iter_mut().filter(|p| rebuild.contains(&p.key)) {
            sections.rebuild(p, &humans);
        }
        Ok(std::iter::once(page.to_string()).chain(parts).collect())
    }

    /// [`Fix::RecordContradiction`]: a new open ledger record for `claims`, its callouts (and
    /// the footnotes their claims need) written on the pages `involved` as compile writes them.
    /// Returns the pages changed. Errors: [`Error::InvalidInput`] when the record exists.
    async fn record_fix(
        &self,
        ob: &mut OpBuilder,
        pages: &mut [Page],
        involved: &[String],
        claims: &[String],
        description: &str,
    ) -> Result<Vec<String>> {
        let id = crate::records::contradiction_id(claims);
        if self.storage.get(Store::Ledger, &id).await?.is_some() {
            return Err(Error::InvalidInput(format!(
                "the ledger already has record {id} for these claims"
            )));
        }
        let record = Contradiction {
            id: id.clone(),
            pages: involved.to_vec(),
            claims: claims.to_vec(),
            description: description.to_string(),
            status: ContradictionStatus::Open,
            note: None,
            opened_by: ob.op.id,
            closed_by: None,
        };
        ob.batch
            .put(Store::Ledger, id.clone(), to_json(&record), Expect::Absent);
        // The callouts (and the footnotes their claims need) as compile writes them.
        let mut sections = self.app_sections(pages).await?;
        let humans = self.humans_of(pages).await?;
        sections.ledger.insert(id, record);
        let mut changed = Vec::new();
        for k in involved {
            if let Some(p) = pages.iter_mut().find(|p| p.key == *k) {
                sections.rebuild(p, &humans);
                changed.push(k.clone());
            }
        }
        Ok(changed)
    }

    /// [`Fix::MergePages`]: `merged` merged into `survivor` ([`merge_pages`]), its claims and
    /// records moved over, the app sections of the pages concerned rebuilt and the merged page
    /// deleted. Returns the pages changed and the merged page's key.
    async fn merge_fix(
        &self,
        ob: &mut OpBuilder,
        pages: &mut Vec<Page>,
        resolver: &Resolver,
        survivor: &str,
        merged: &str,
        now: i64,
    ) -> Result<(Vec<String>, String)> {
        let bodies: BTreeMap<String, String> = pages
            .iter()
            .map(|p| (p.key.clone(), p.body.clone()))
            .collect();
        let humans = self.humans_of(pages).await?;
        let gone = merge_pages(pages, resolver, survivor, merged)?;
        let op = ob.op.id;
        let mut sections = self.app_sections(pages).await?;
        let rebuild = sections.merge(&mut ob.batch, &gone.key, survivor, op);
        for p in pages.iter_mut().filter(|p| rebuild.contains(&p.key)) {
            sections.rebuild(p, &humans);
        }
        let changed: Vec<String> = pages
            .iter()
            .filter(|p| p.key == *survivor || bodies.get(&p.key) != Some(&p.body))
            .map(|p| p.key.clone())
            .collect();
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
        Ok((changed, gone.key))
    }

    /// Writes each of the pages `changed` (in `pages`) as its next revision, by the user.
    async fn write_changed(
        &self,
        ob: &mut OpBuilder,
        pages: &mut [Page],
        changed: &[String],
        now: i64,
    ) -> Result<()> {
        for k in changed {
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
        Ok(())
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
