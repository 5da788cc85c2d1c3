//! History (Decision 7): the undo record every operation writes, `rollback(opId)` with its
//! preview, `asOf(opId)`, and page histories with diffs. An `impl Wiki` block of its own.
//!
//! **Undo records.** [`Wiki::finish`] (the one place operations commit) adds to the operation's
//! batch its [`UndoRecord`], `meta/undo/<op>`: for every record the batch writes, what was there
//! before — nothing, the exact bytes, or, for a page, the number of the revision whose state it was
//! (revisions already hold that state). Not recorded: the append-only records (revisions, the
//! operation's own record, log.md), derived ones (index.md and the search store, rebuilt from the
//! pages by every commit), the op counter, and `meta/secrets` and `meta/llm-learned` — a rollback
//! never brings an API key back, and a vault export never carries one (`.llm-wiki/undo.json`):
//! a meta record's before-image is also stripped of every field named like a credential, as
//! exports strip them (a configuration written by an older version may hold a key).
//! Raw bytes are content-addressed: their record only says whether they were there.
//!
//! **Rollback.** `rollback(op)` undoes `op` and every later operation that wrote a record one of
//! the undone operations wrote (transitively: the preview lists them), in one batch: each record
//! gets the state it had before the earliest undone operation that wrote it. Pages are restored as
//! new revisions (history is append-only: their content, title, summary, links and `updated` are
//! as they were, their revision number counts on), removed pages end with a state-less revision,
//! and links elsewhere that pointed at a removed page become plain text, as a delete does. The
//! undone operations are marked `rolledBackBy`; the rollback is itself an operation with its own
//! undo record, so rolling it back redoes what it undid.
//!
//! *Invariant:* after `rollback(op)`, every record but the history (revisions, operations, log.md,
//! undo records), page revision numbers and raw bytes (content-addressed; they stay, so a redo
//! finds them) is byte for byte what it was before `op` — tested on vault exports.
//!
//! **As of.** `pages_as_of(op)` rebuilds the page set after operation `op` from the revisions: per
//! key, the latest revision of an operation ≤ `op`. Revisions a rename copied to the new key keep
//! the old key in their state and are skipped, so a page is never listed under two keys.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::markdown::keys::fold_key;
use crate::markdown::page::page_file;
use crate::markdown::resolve::{Resolution, Resolver};
use crate::markdown::wikilinks;
use crate::model::{Author, OpId, Operation, OperationKind, Page, Revision};
use crate::records::{from_json, operation_key, revision_key, to_json};
use crate::storage::{Expect, Storage, Store};
use crate::wiki::Wiki;

pub use crate::records::undo::{Before, UndoEntry, UndoRecord};
pub use crate::records::{undo_key, UNDO_PREFIX};

/// What a rollback does to one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub enum PageAction {
    /// The page gets back the state it had (it may have been deleted since).
    Restore,
    /// The page did not exist before: it is removed.
    Remove,
    /// Outside the undone operations: its links to a removed page become plain text.
    Unlink,
}

/// One page in a [`RollbackPlan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct PageRollback {
    /// Page key.
    pub key: String,
    /// Title (as restored, or as it is now when removed).
    pub title: String,
    /// What happens to it.
    pub action: PageAction,
    /// For [`PageAction::Restore`], the revision whose state comes back, when known.
    pub from_revision: Option<u64>,
}

/// What `rollback(op)` would undo (JS: `rollbackPreview`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct RollbackPlan {
    /// The operation asked for.
    pub op: OpId,
    /// Every operation undone, oldest first: `op` and each later one that wrote a record an undone
    /// operation wrote.
    pub operations: Vec<Operation>,
    /// Pages restored, removed or unlinked, by key.
    pub pages: Vec<PageRollback>,
    /// Sources whose record is restored (a compiled source goes back to pending) or removed.
    pub sources: Vec<String>,
    /// Claim records restored or removed.
    pub claims: u64,
    /// Contradiction ledger records restored or removed.
    pub contradictions: u64,
    /// Other records restored: documents (`schema.md`) and settings (`meta/<key>`).
    pub other: Vec<String>,
}

/// What `rollback(op)` did (JS: `rollback`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct RollbackReport {
    /// What was undone.
    pub plan: RollbackPlan,
    /// The rollback operation (kind `rollback`; roll it back to redo).
    pub operation: Operation,
}

/// One revision of a page with its diff to the revision before (JS: `history`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// The revision.
    #[serde(flatten)]
    pub revision: Revision,
    /// Unified line diff (3 lines of context) of the page file — frontmatter and body — from the
    /// previous revision (or from nothing); empty when the file did not change.
    pub diff: String,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
}

/// A page's state diffed as its file (frontmatter + body); nothing for a deleted page.
fn file_of(state: Option<&Page>) -> String {
    state.map(page_file).unwrap_or_default()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Equal,
    Delete,
    Insert,
}

/// Most cells of the LCS table (the lines between the common prefix and suffix, old × new);
/// beyond it the middle is diffed as "all removed, all added" (still a correct diff).
const MAX_LCS_CELLS: usize = 4_000_000;

/// A line diff: common prefix and suffix, then a longest common subsequence of the middle (a
/// dynamic-programming table bounded by [`MAX_LCS_CELLS`]); removals come before additions.
fn line_tags(a: &[&str], b: &[&str]) -> Vec<Tag> {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let (n, m) = (am.len(), bm.len());
    let mut out = vec![Tag::Equal; pre];
    if n.saturating_mul(m) <= MAX_LCS_CELLS {
        let w = m + 1;
        let mut t = vec![0u32; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                t[i * w + j] = if am[i] == bm[j] {
                    t[(i + 1) * w + j + 1] + 1
                } else {
                    t[(i + 1) * w + j].max(t[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n && j < m {
            if am[i] == bm[j] {
                out.push(Tag::Equal);
                i += 1;
                j += 1;
            } else if t[(i + 1) * w + j] >= t[i * w + j + 1] {
                out.push(Tag::Delete);
                i += 1;
            } else {
                out.push(Tag::Insert);
                j += 1;
            }
        }
        out.extend(std::iter::repeat_n(Tag::Delete, n - i));
        out.extend(std::iter::repeat_n(Tag::Insert, m - j));
    } else {
        out.extend(std::iter::repeat_n(Tag::Delete, n));
        out.extend(std::iter::repeat_n(Tag::Insert, m));
    }
    out.extend(std::iter::repeat_n(Tag::Equal, suf));
    out
}

/// Unified diff of `old` → `new` with 3 lines of context, and the lines added and removed.
/// (Hand-written: the `similar` crate's text diff cost 78 KB gzipped in the wasm.)
pub fn unified_diff(old: &str, new: &str, old_name: &str, new_name: &str) -> (String, u32, u32) {
    const CONTEXT: usize = 3;
    if old == new {
        return (String::new(), 0, 0);
    }
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let tags = line_tags(&a, &b);
    // Each op with the old and new line index it starts at.
    let mut ops = Vec::with_capacity(tags.len());
    let (mut ai, mut bi) = (0usize, 0usize);
    for t in &tags {
        ops.push((*t, ai, bi));
        match t {
            Tag::Equal => {
                ai += 1;
                bi += 1;
            }
            Tag::Delete => ai += 1,
            Tag::Insert => bi += 1,
        }
    }
    let changes: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != Tag::Equal).collect();
    let added = tags.iter().filter(|t| **t == Tag::Insert).count() as u32;
    let removed = tags.iter().filter(|t| **t == Tag::Delete).count() as u32;
    let mut text = format!("--- {old_name}\n+++ {new_name}\n");
    let mut k = 0;
    while k < changes.len() {
        let mut last = k;
        while last + 1 < changes.len() && changes[last + 1] - changes[last] <= 2 * CONTEXT + 1 {
            last += 1;
        }
        let start = changes[k].saturating_sub(CONTEXT);
        let end = (changes[last] + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        let old_len = hunk.iter().filter(|o| o.0 != Tag::Insert).count();
        let new_len = hunk.iter().filter(|o| o.0 != Tag::Delete).count();
        let from = |first: usize, len: usize| if len == 0 { first } else { first + 1 };
        text.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@\n",
            from(hunk[0].1, old_len),
            from(hunk[0].2, new_len)
        ));
        for (tag, ai, bi) in hunk {
            let (mark, line) = match tag {
                Tag::Equal => (' ', a[*ai]),
                Tag::Delete => ('-', a[*ai]),
                Tag::Insert => ('+', b[*bi]),
            };
            text.push(mark);
            text.push_str(line);
            if !line.ends_with('\n') {
                text.push('\n');
            }
        }
        k = last + 1;
    }
    (text, added, removed)
}

/// One page write of a rollback: the state to put (`None`: remove), its revision number, the
/// stored record's revision to expect, and the author of the revision written.
struct PageWrite {
    key: String,
    page: Option<Page>,
    number: u64,
    stored: Option<u64>,
    author: Author,
}

impl PageWrite {
    fn new(
        key: &str,
        page: Option<Page>,
        number: u64,
        stored: Option<u64>,
        author: Author,
    ) -> Self {
        PageWrite {
            key: key.to_string(),
            page,
            number,
            stored,
            author,
        }
    }
}

/// Everything a rollback writes, computed before its operation begins.
struct Prepared {
    plan: RollbackPlan,
    /// Page records to write (`Some`) or delete (`None`, with the revision number of the
    /// state-less revision), with the storage revision read.
    page_writes: Vec<PageWrite>,
    /// Other records: put bytes or delete.
    other_writes: Vec<(Store, String, Option<String>)>,
    /// Operation records after the rollback, before the rolled-back marks are set.
    operations: BTreeMap<OpId, Operation>,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// What [`Wiki::rollback`] would undo, without writing anything.
    ///
    /// Errors: [`Error::NotFound`] for an unknown operation or one without an undo record
    /// (operations imported from a vault without `.llm-wiki/undo.json`, or vault imports
    /// themselves); [`Error::InvalidInput`] when it was already rolled back, or when a later
    /// operation that touched the same pages or sources has no undo record.
    pub async fn rollback_preview(&self, op: OpId) -> Result<RollbackPlan> {
        Ok(self.prepare_rollback(op).await?.plan)
    }

    /// Undoes operation `op` and every later operation that wrote a record one of them wrote
    /// (see [`Wiki::rollback_preview`]), in one [`OperationKind::Rollback`] operation: pages,
    /// sources, claims, the ledger, settings and schema.md get their earlier state; index.md and
    /// the search index follow the pages in the same batch; log.md records the rollback.
    ///
    /// Errors: those of [`Wiki::rollback_preview`]; [`Error::Conflict`] when another writer
    /// committed first (nothing written).
    pub async fn rollback(&self, op: OpId) -> Result<RollbackReport> {
        let p = self.prepare_rollback(op).await?;
        let undone: Vec<String> = p.plan.operations.iter().map(|o| o.id.to_string()).collect();
        let target = &p.plan.operations[0];
        let mut ob = self
            .begin(
                OperationKind::Rollback,
                format!(
                    "rolled back op {}: {}{}",
                    target.id,
                    target.summary,
                    if undone.len() > 1 {
                        format!(" (with ops {})", undone[1..].join(", "))
                    } else {
                        String::new()
                    }
                ),
            )
            .await?;
        let id = ob.op.id;
        let now = ob.op.time;
        for PageWrite {
            key,
            page,
            number: rev_number,
            stored,
            author,
        } in &p.page_writes
        {
            match page {
                Some(page) => {
                    debug_assert_eq!((&page.key, page.revision), (key, *rev_number));
                    self.put_page_revision(&mut ob.batch, page, *stored, *author, id, now);
                }
                None => {
                    let n = self
                        .delete_page_record(&mut ob.batch, key, *stored, *author, id, now)
                        .await?;
                    debug_assert_eq!(n, *rev_number);
                }
            }
            ob.op.pages.push(key.clone());
        }
        for (store, key, data) in &p.other_writes {
            match data {
                Some(d) => ob
                    .batch
                    .put(*store, key.clone(), d.clone().into_bytes(), Expect::Any),
                None => ob.batch.delete(*store, key.clone(), Expect::Any),
            }
        }
        let undone_ids: BTreeSet<OpId> = p.plan.operations.iter().map(|o| o.id).collect();
        for (oid, mut o) in p.operations {
            if undone_ids.contains(&oid) && o.rolled_back_by.is_none() {
                o.rolled_back_by = Some(id);
            }
            ob.batch.put(
                Store::Operations,
                operation_key(oid),
                to_json(&o),
                Expect::Any,
            );
        }
        ob.op.sources = p.plan.sources.clone();
        let operation = self.finish(ob).await?;
        Ok(RollbackReport {
            plan: p.plan,
            operation,
        })
    }

    /// The state a rollback gives page `key` (`None`: removed), the revision it restores, and
    /// the author of the restored revision: a restored state keeps the author of the revision it
    /// restores, so Decision 5 sees the model's text as the model's after a rollback.
    async fn restored_page_state(
        &self,
        key: &str,
        before: &Before,
    ) -> Result<(Option<Page>, Option<u64>, Author)> {
        Ok(match before {
            Before::Absent | Before::Present => (None, None, Author::Human),
            Before::Revision(n) => {
                let rk = revision_key(key, *n);
                let found = self.revision_state(key, *n).await?;
                let (state, author) = found.ok_or_else(|| Error::Corrupt {
                    store: Store::Revisions,
                    key: rk,
                    message: "the revision an undo record names is missing".into(),
                })?;
                (Some(state), Some(*n), author)
            }
            Before::Data(text) => (
                Some(from_json(Store::Pages, key, text.as_bytes())?),
                None,
                Author::Human,
            ),
        })
    }

    /// The write a rollback makes to a record of `store` other than pages and operations to
    /// give it its state `before` (`None`: it already has it), noted in `plan`. Raw bytes (a
    /// source's text, an original, an attachment's bytes) are content-addressed and never
    /// removed, as removing a source keeps them: an undo record keeps no bytes, so a later
    /// rollback of this one (a redo) finds them there.
    async fn other_write(
        &self,
        plan: &mut RollbackPlan,
        store: Store,
        key: &str,
        before: &Before,
    ) -> Result<Option<(Store, String, Option<String>)>> {
        let data = match before {
            Before::Present | Before::Revision(_) => return Ok(None),
            Before::Absent if store == Store::Raw => return Ok(None),
            Before::Absent => None,
            Before::Data(d) => Some(d.clone()),
        };
        let now = self.storage.get(store, key).await?;
        if now.as_ref().map(|r| r.data.as_slice()) == data.as_ref().map(|d| d.as_bytes()) {
            return Ok(None);
        }
        match store {
            Store::Sources => plan.sources.push(key.to_string()),
            Store::Claims => plan.claims += 1,
            Store::Ledger => plan.contradictions += 1,
            Store::Documents => plan.other.push(key.to_string()),
            _ => plan.other.push(format!("{}/{key}", store.name())),
        }
        Ok(Some((store, key.to_string(), data)))
    }

    /// Adds to `page_writes` (and `plan`) the revisions that turn links to a page the rollback
    /// removes into plain text, on every page read (`current`) that the rollback does not
    /// restore itself (`in_plan`), as a delete does; `after` gets their new state.
    async fn unlink_removed(
        &self,
        table: &crate::page_table::PageTable,
        after: &mut BTreeMap<String, Page>,
        current: &BTreeMap<String, (Page, u64)>,
        in_plan: &BTreeSet<String>,
        plan: &mut RollbackPlan,
        page_writes: &mut Vec<PageWrite>,
    ) -> Result<()> {
        // Links elsewhere to a page that goes away become plain text (as a delete does).
        let before_resolver = table.resolver();
        let after_pages: Vec<Page> = after.values().cloned().collect();
        let after_resolver = Resolver::from_pages(&after_pages);
        for p in &after_pages {
            if in_plan.contains(&p.key) || !current.contains_key(&p.key) {
                continue;
            }
            let body = wikilinks::rewrite(&p.body, |l| {
                let was = before_resolver.resolve_link(l, Some(&p.key));
                let will = after_resolver.resolve_link(l, Some(&p.key));
                (matches!(was, Resolution::Page(_)) && will == Resolution::Missing)
                    .then(|| l.as_plain_text())
            });
            if body == p.body {
                continue;
            }
            let number = self.next_revision_number(&p.key).await?;
            let mut q = p.clone();
            q.body = body;
            q.revision = number;
            q.updated = self.clock.now_ms();
            plan.pages.push(PageRollback {
                key: q.key.clone(),
                title: q.title.clone(),
                action: PageAction::Unlink,
                from_revision: None,
            });
            let stored = current.get(&q.key).map(|(_, rev)| *rev);
            after.insert(q.key.clone(), q.clone());
            let key = q.key.clone();
            page_writes.push(PageWrite::new(&key, Some(q), number, stored, Author::Human));
        }
        Ok(())
    }

    /// The pages a rollback reads, with their storage revisions: those it restores or removes
    /// (in `restore`), and those linking to them (links there may have to become text).
    async fn pages_read(
        &self,
        table: &crate::page_table::PageTable,
        restore: &BTreeMap<(Store, String), Before>,
    ) -> Result<BTreeMap<String, (Page, u64)>> {
        let graph = table.link_graph();
        let mut read: BTreeSet<String> = BTreeSet::new();
        for (store, key) in restore.keys() {
            if *store == Store::Pages {
                read.insert(key.clone());
                read.extend(graph.backlinks_of(key));
            }
        }
        let mut current: BTreeMap<String, (Page, u64)> = BTreeMap::new();
        for k in &read {
            if let Some(r) = self.storage.get(Store::Pages, k).await? {
                current.insert(k.clone(), (from_json(Store::Pages, k, &r.data)?, r.rev));
            }
        }
        Ok(current)
    }

    async fn prepare_rollback(&self, target: OpId) -> Result<Prepared> {
        let all_ops: BTreeMap<OpId, Operation> = self
            .operations()
            .await?
            .into_iter()
            .map(|o| (o.id, o))
            .collect();
        let first = all_ops
            .get(&target)
            .ok_or_else(|| Error::NotFound(format!("operation {target}")))?;
        if let Some(by) = first.rolled_back_by {
            return Err(Error::InvalidInput(format!(
                "operation {target} was already rolled back by operation {by}; roll that one back to redo it"
            )));
        }
        let undo = crate::records::undo::undo_records(&self.storage).await?;
        if !undo.contains_key(&target) {
            return Err(Error::NotFound(format!(
                "the undo record of operation {target} (imports and operations from a vault without undo records cannot be rolled back)"
            )));
        }
        let (included, operations) = rollback_closure(&all_ops, &undo, target)?;
        // Per record, the state before the earliest undone operation that wrote it.
        let mut restore: BTreeMap<(Store, String), Before> = BTreeMap::new();
        for r in &included {
            for e in &r.entries {
                restore
                    .entry((e.store, e.key.clone()))
                    .or_insert_with(|| e.before.clone());
            }
        }

        // The pages read: those the rollback restores or removes, and those linking to them
        // (links there may have to become text). Every other page is known from the page table.
        let table = self.page_table().await?;
        let current = self.pages_read(&table, &restore).await?;
        // Every page after the rollback: metadata from the table, the pages read in full.
        let mut after: BTreeMap<String, Page> = table
            .rows()
            .map(|r| (r.key.clone(), r.page_without_body()))
            .collect();
        for (k, (p, _)) in &current {
            after.insert(k.clone(), p.clone());
        }
        let mut plan = RollbackPlan {
            op: target,
            operations,
            pages: vec![],
            sources: vec![],
            claims: 0,
            contradictions: 0,
            other: vec![],
        };
        let mut page_writes = Vec::new();
        let mut other_writes = Vec::new();
        let mut ops_after = BTreeMap::new();
        let mut in_plan: BTreeSet<String> = BTreeSet::new();
        for ((store, key), before) in &restore {
            match store {
                Store::Pages => {
                    in_plan.insert(key.clone());
                    let (state, from_revision, author) =
                        self.restored_page_state(key, before).await?;
                    let now = current.get(key);
                    let same = match (&state, now) {
                        (Some(s), Some((c, _))) => {
                            Page {
                                revision: c.revision,
                                ..s.clone()
                            } == *c
                        }
                        (None, None) => true,
                        _ => false,
                    };
                    if same {
                        continue;
                    }
                    let number = self.next_revision_number(key).await?;
                    let stored = now.map(|(_, rev)| *rev);
                    let action = if state.is_some() {
                        PageAction::Restore
                    } else {
                        PageAction::Remove
                    };
                    let title = state
                        .as_ref()
                        .or(now.map(|(p, _)| p))
                        .map(|p| p.title.clone())
                        .unwrap_or_default();
                    plan.pages.push(PageRollback {
                        key: key.clone(),
                        title,
                        action,
                        from_revision,
                    });
                    match state {
                        Some(mut s) => {
                            s.revision = number;
                            after.insert(key.clone(), s.clone());
                            page_writes.push(PageWrite::new(key, Some(s), number, stored, author));
                        }
                        None => {
                            after.remove(key);
                            page_writes.push(PageWrite::new(key, None, number, stored, author));
                        }
                    }
                }
                Store::Operations => {
                    let oid: OpId = key.parse().map_err(|_| Error::Corrupt {
                        store: Store::Operations,
                        key: key.clone(),
                        message: "not an operation key".into(),
                    })?;
                    if let Before::Data(text) = before {
                        ops_after.insert(oid, from_json(Store::Operations, key, text.as_bytes())?);
                    }
                }
                _ => {
                    if let Some(write) = self.other_write(&mut plan, *store, key, before).await? {
                        other_writes.push(write);
                    }
                }
            }
        }
        // The undone operations' records, as restored, to be marked.
        for o in &plan.operations {
            ops_after.entry(o.id).or_insert_with(|| o.clone());
        }

        self.unlink_removed(
            &table,
            &mut after,
            &current,
            &in_plan,
            &mut plan,
            &mut page_writes,
        )
        .await?;
        crate::util::sort_by(&mut plan.pages, &|a, b| a.key.cmp(&b.key));
        Ok(Prepared {
            plan,
            page_writes,
            other_writes,
            operations: ops_after,
        })
    }

    /// Every page as it was right after operation `op` (0: before the first), ordered by key,
    /// rebuilt from the revisions.
    ///
    /// Errors: [`Error::NotFound`] when `op` is later than the last operation.
    pub async fn pages_as_of(&self, op: OpId) -> Result<Vec<Page>> {
        let mut latest: BTreeMap<String, Revision> = BTreeMap::new();
        let revisions: Vec<Revision> = self.read_all(Store::Revisions, "").await?;
        // Operations in the total order (Decision 7); 0 is before the first.
        let order = crate::model::op_orders(self.operations().await?.iter());
        let upto = match (op, order.get(&op)) {
            (0, _) => (i64::MIN, 0, 0),
            (_, Some(o)) => *o,
            (_, None) => {
                let last = order
                    .values()
                    .max()
                    .map_or(0, |o| crate::model::op_id(o.1, o.2));
                return Err(Error::NotFound(format!(
                    "operation {op} (the last is {last})"
                )));
            }
        };
        for r in revisions {
            // A revision whose operation has no record (an older vault's) counts as early.
            let at = order.get(&r.op).copied().unwrap_or((
                i64::MIN,
                crate::model::op_slot(r.op),
                crate::model::op_seq(r.op),
            ));
            if at > upto {
                continue;
            }
            // A rename copies history to the new key; those copies still name the old key.
            if r.page_state.as_ref().is_some_and(|s| s.key != r.page) {
                continue;
            }
            // Of one number, the revision under its own key (read first) over a displaced one.
            match latest.get(&r.page) {
                Some(l) if l.number >= r.number => {}
                _ => {
                    latest.insert(r.page.clone(), r);
                }
            }
        }
        Ok(latest.into_values().filter_map(|r| r.page_state).collect())
    }

    /// One page as it was right after operation `op`, or `None`: the key matched exactly, then
    /// case-insensitively.
    ///
    /// Errors: [`Error::NotFound`] when `op` is later than the last operation.
    pub async fn page_as_of(&self, key: &str, op: OpId) -> Result<Option<Page>> {
        let pages = self.pages_as_of(op).await?;
        if let Some(p) = pages.iter().find(|p| p.key == key) {
            return Ok(Some(p.clone()));
        }
        let folded = fold_key(key);
        Ok(pages.into_iter().find(|p| fold_key(&p.key) == folded))
    }

    /// A page's revisions, oldest first, each with a unified diff of the page file against the
    /// revision before it.
    pub async fn history_diffs(&self, key: &str) -> Result<Vec<HistoryEntry>> {
        let revisions = self.history(key).await?;
        let mut out = Vec::with_capacity(revisions.len());
        let mut prev: Option<&Revision> = None;
        for r in &revisions {
            let old = file_of(prev.and_then(|p| p.page_state.as_ref()));
            let new = file_of(r.page_state.as_ref());
            let old_name = prev.map_or_else(
                || "/dev/null".to_string(),
                |p| format!("{key} (revision {})", p.number),
            );
            let new_name = format!("{key} (revision {})", r.number);
            let (diff, added, removed) = unified_diff(&old, &new, &old_name, &new_name);
            out.push(HistoryEntry {
                revision: r.clone(),
                diff,
                added,
                removed,
            });
            prev = Some(r);
        }
        Ok(out)
    }
}

/// The operations a rollback of `target` undoes: `target` and every later operation that wrote
/// a record one of them wrote (transitively), with their undo records. Errors:
/// [`Error::InvalidInput`] when such a later operation has no undo record.
fn rollback_closure<'a>(
    all_ops: &BTreeMap<OpId, Operation>,
    undo: &'a BTreeMap<OpId, UndoRecord>,
    target: OpId,
) -> Result<(Vec<&'a UndoRecord>, Vec<Operation>)> {
    // The closure: later operations (in the total order) that wrote a record an undone
    // operation wrote.
    let order = crate::model::op_orders(all_ops.values());
    let from = order[&target];
    let mut later: Vec<(&OpId, &Operation)> = all_ops
        .iter()
        .filter(|(id, _)| order[*id] >= from)
        .collect();
    later.sort_by_key(|(id, _)| order[*id]);
    let mut touched: BTreeSet<(Store, String)> = BTreeSet::new();
    let mut included: Vec<&UndoRecord> = Vec::new();
    let mut operations: Vec<Operation> = Vec::new();
    for (oid, o) in later {
        match undo.get(oid) {
            Some(r) => {
                let keys: Vec<(Store, String)> =
                    r.entries.iter().map(|e| (e.store, e.key.clone())).collect();
                if *oid == target || keys.iter().any(|k| touched.contains(k)) {
                    touched.extend(keys);
                    included.push(r);
                    operations.push(o.clone());
                }
            }
            None => {
                let hit = o
                    .pages
                    .iter()
                    .map(|k| (Store::Pages, k.clone()))
                    .chain(o.sources.iter().map(|k| (Store::Sources, k.clone())))
                    .find(|k| touched.contains(k));
                if let Some((_, k)) = hit {
                    return Err(Error::InvalidInput(format!(
                        "operation {oid} ({}) came later and changed {k:?} but has no undo record, so operation {target} cannot be rolled back",
                        o.summary
                    )));
                }
            }
        }
    }
    Ok((included, operations))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_count_lines_and_carry_headers() {
        let (d, added, removed) = unified_diff(
            "a\nb\nc\n",
            "a\nB\nc\nd\n",
            "p (revision 1)",
            "p (revision 2)",
        );
        assert_eq!((added, removed), (2, 1));
        assert!(
            d.starts_with("--- p (revision 1)\n+++ p (revision 2)\n@@"),
            "{d}"
        );
        assert!(d.contains("-b\n+B\n"), "{d}");
        assert!(d.contains("+d\n"), "{d}");
        assert_eq!(
            unified_diff("same\n", "same\n", "a", "b"),
            (String::new(), 0, 0)
        );
        let (d, added, removed) = unified_diff("", "机器学习\n", "/dev/null", "k");
        assert_eq!((added, removed), (1, 0));
        assert!(d.contains("+机器学习\n"), "{d}");
    }

    #[test]
    fn hunks_keep_three_lines_of_context_and_split_when_far_apart() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new: String = (1..=20)
            .map(|i| match i {
                2 => "two\n".to_string(),
                18 => "eighteen\n".to_string(),
                _ => format!("{i}\n"),
            })
            .collect();
        let (d, added, removed) = unified_diff(&old, &new, "a", "b");
        assert_eq!((added, removed), (2, 2));
        assert_eq!(
            d,
            "--- a\n+++ b\n@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n"
        );
        // A page deleted: everything removed, the new side empty.
        let (d, added, removed) = unified_diff("x\ny", "", "a", "b");
        assert_eq!((added, removed), (0, 2));
        assert_eq!(d, "--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n");
    }
}
