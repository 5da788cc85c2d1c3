//! Renaming a page in the kernel, so that every link keeps working: the links to the page are
//! rewritten to its new key and its history is carried to that key, in one operation. Beside the
//! page writes because more than one operation renames (the vault's `rename_page`, lint's rename
//! fix); with the reads and writes a rename and a delete share ([`Wiki::pages_linking`],
//! [`Wiki::put_body_revision`]).
//!
//! *Invariant:* after a rename no link that resolved to the page is left dangling, and the old
//! key's revisions are readable under the new key.

use std::collections::{BTreeSet, HashMap};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::markdown::keys::{fold_key, unique_key};
use crate::markdown::resolve::{Resolution, Resolver};
use crate::markdown::wikilinks::{self, write_link};
use crate::model::{Author, OpId, OperationKind, Page, RenameReport, Revision, Source};
use crate::records::{from_json, revision_key, to_json};
use crate::storage::{Batch, Expect, Storage, Store};

use super::Wiki;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Renames page `key` to `title` as [`Wiki::rename_page`] describes (the links that reached it
    /// by key or title rewritten, its revisions carried to the new key, claims, ledger records and
    /// summary pages re-keyed), also removing the aliases in `drop_aliases` from the page (the
    /// lint fix for a page that merged names, [`crate::lint::Fix::RenamePage`]).
    ///
    /// Errors: [`Error::NotFound`], [`Error::InvalidInput`] for an empty title,
    /// [`Error::Conflict`] when another writer changed a page first (nothing written).
    pub(crate) async fn rename_page_dropping_aliases(
        &self,
        key: &str,
        title: &str,
        drop_aliases: &[String],
    ) -> Result<RenameReport> {
        let title = title.trim();
        if title.is_empty() {
            return Err(Error::InvalidInput("a page needs a title".into()));
        }
        // The page and the pages linking to it are read; the others are known from the table.
        let table = self.page_table().await?;
        let (old, pages, revs) = self.pages_linking(&table, key).await?;
        let taken: BTreeSet<String> = crate::util::btree_set(
            table
                .rows()
                .filter(|p| p.key != old.key)
                .map(|p| fold_key(&p.key)),
        );
        let new_key = unique_key(title, |k| taken.contains(k));
        let now = self.clock.now_ms();
        let full = table.resolver();
        let direct = Resolver::new([(old.key.as_str(), old.title.as_str(), &[][..])]);

        let mut ob = self
            .begin(
                OperationKind::Rename,
                format!("renamed: {} → {}", old.title, title),
            )
            .await?;
        ob.op.time = ob.op.time.max(now);
        let op = ob.op.id;
        let mut rewritten = Vec::new();
        let mut renamed = old.clone();
        for p in &pages {
            let is_self = p.key == old.key;
            let body = wikilinks::rewrite(&p.body, |l| {
                if l.target.is_empty()
                    || full.resolve_link(l, Some(&p.key)) != Resolution::Page(old.key.clone())
                    || direct.resolve(&l.target) != Resolution::Page(old.key.clone())
                {
                    return None;
                }
                let alias = match l.alias.as_deref() {
                    Some(a) if a != old.title && a != old.key => Some(a.to_string()),
                    _ => (title != new_key).then(|| title.to_string()),
                };
                Some(write_link(
                    l.embed,
                    &new_key,
                    l.fragment.as_ref(),
                    alias.as_deref(),
                    l.in_table,
                ))
            });
            if is_self {
                renamed.body = body;
                continue;
            }
            if body == p.body {
                continue;
            }
            let q = self
                .put_body_revision(&mut ob.batch, p, body, revs.get(&p.key).copied(), op, now)
                .await?;
            rewritten.push(q.key.clone());
            ob.op.pages.push(q.key.clone());
        }
        renamed.key = new_key.clone();
        renamed.title = title.to_string();
        renamed.aliases.retain(|a| !drop_aliases.contains(a));
        renamed.revision += 1;
        renamed.updated = now;
        if new_key == old.key {
            self.put_page_revision(
                &mut ob.batch,
                &renamed,
                revs.get(&old.key).copied(),
                Author::Human,
                op,
                now,
            );
        } else {
            // Copy the history to the new key (after any history a deleted page left there), end
            // the old key's history, write the renamed page.
            let offset = self.next_revision_number(&new_key).await? - 1;
            for (k, r) in self
                .storage
                .scan(Store::Revisions, &format!("{}\u{0}", old.key))
                .await?
            {
                let mut rev: Revision = from_json(Store::Revisions, &k, &r.data)?;
                rev.number += offset;
                rev.page = new_key.clone();
                let displaced = crate::records::parse_revision_key(&k).and_then(|(_, _, op)| op);
                ob.batch.put(
                    Store::Revisions,
                    match displaced {
                        Some(op) => {
                            crate::records::displaced_revision_key(&new_key, rev.number, op)
                        }
                        None => revision_key(&new_key, rev.number),
                    },
                    to_json(&rev),
                    Expect::Absent,
                );
            }
            self.delete_page_record(
                &mut ob.batch,
                &old.key,
                revs.get(&old.key).copied(),
                Author::Human,
                op,
                now,
            )
            .await?;
            renamed.revision = offset + self.next_revision_number(&old.key).await?;
            self.put_page_revision(&mut ob.batch, &renamed, None, Author::Human, op, now);
            self.rekey_claims(&mut ob.batch, &old.key, &new_key).await?;
            // A source's summary page keeps being its summary page under the new key.
            for (k, r) in self.storage.scan(Store::Sources, "").await? {
                let mut source: Source = from_json(Store::Sources, &k, &r.data)?;
                if source.summary_page.as_deref() == Some(old.key.as_str()) {
                    source.summary_page = Some(new_key.clone());
                    ob.batch
                        .put(Store::Sources, k, to_json(&source), Expect::Rev(r.rev));
                }
            }
        }
        ob.op.pages.insert(0, new_key.clone());
        if new_key != old.key {
            ob.op.pages.insert(0, old.key.clone());
        }
        let op = self.finish(ob).await?;
        Ok(RenameReport {
            page: renamed,
            old_key: old.key,
            rewritten,
            op: op.id,
        })
    }

    /// The page `key` names (the table's lookup: exact key, then case-insensitive), that page and
    /// the pages linking to it (the page table's backlinks), with their storage revisions: what
    /// renaming or deleting it may rewrite. Errors: [`Error::NotFound`].
    pub(crate) async fn pages_linking(
        &self,
        table: &crate::page_table::PageTable,
        key: &str,
    ) -> Result<(Page, Vec<Page>, HashMap<String, u64>)> {
        let not_found = || Error::NotFound(format!("page {key:?}"));
        let found = table.find(key).ok_or_else(not_found)?.key.clone();
        let mut pages = Vec::new();
        let mut revs = HashMap::new();
        let keys = std::iter::once(found.clone()).chain(table.link_graph().backlinks_of(&found));
        for k in keys {
            if let Some(r) = self.storage.get(Store::Pages, &k).await? {
                pages.push(from_json::<Page>(Store::Pages, &k, &r.data)?);
                revs.insert(k, r.rev);
            }
        }
        let page = pages
            .iter()
            .find(|p| p.key == found)
            .cloned()
            .ok_or_else(not_found)?;
        Ok((page, pages, revs))
    }

    /// `p` with `body`, as its next revision by a human at `now` in operation `op`, added to
    /// `batch` (expecting storage revision `stored`). Returns the new state.
    ///
    /// Errors: storage errors.
    pub(crate) async fn put_body_revision(
        &self,
        batch: &mut Batch,
        p: &Page,
        body: String,
        stored: Option<u64>,
        op: OpId,
        now: i64,
    ) -> Result<Page> {
        let mut q = p.clone();
        q.body = body;
        // After every revision the key has (another device's merged ones included).
        q.revision = self.next_revision_number(&p.key).await?;
        q.updated = now;
        self.put_page_revision(batch, &q, stored, Author::Human, op, now);
        Ok(q)
    }
}
