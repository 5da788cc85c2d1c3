//! A page both devices changed (issue #25; Decision 10): which version it keeps, decided from
//! the set of operations held that wrote it, whatever order or batches they arrived in.
//!
//! A page is a multi-value register. Of the operations that wrote (or deleted) page P, its
//! *frontier* is those no other one of them saw ([`seen_by`]: an earlier operation of the same
//! device, or one of another device the operation's [`Operation::seen`] covers). The page holds
//! the frontier's latest edit in the operations' total order, or, when the frontier holds only
//! deletions, is deleted; the frontier's other versions are its conflicts: an edit a later
//! concurrent edit won over, or a deletion an edit won over (to confirm). A local operation
//! sees everything held, so after it the frontier is that operation alone.
//!
//! Only the latest writer of each device can be in the frontier (a device's operations see its
//! earlier ones), so a merge compares the run's last writer of P with the last writer of P of
//! each other device held here; their versions are the revisions of P they wrote.
//!
//! An import (an edit read from the folder) whose version of P is that of another device's
//! operation it did not see is that device's page file arriving before its operation file, not
//! a person's edit: it does not count (the device's writer before it does), so it neither
//! brings back a page that device deleted later nor hides an edit made here before it.

use std::collections::{BTreeMap, HashMap};

use super::merge::RunFacts;
use crate::clock::Clock;
use crate::error::Result;
use crate::markdown::page::page_file;
use crate::model::{op_slot, seen_by, OpId, OpOrder, Operation, OperationKind, Page, Revision};
use crate::records::parse_revision_key;
use crate::storage::{Storage, Store};
use crate::vault_files::ops::OpFile;
use crate::wiki::Wiki;

/// One operation's write of a page: the operation and the page as it left it (`None`: deleted).
#[derive(Debug, Clone)]
pub(super) struct PageWrite<'a> {
    /// The operation.
    pub(super) op: &'a Operation,
    /// The page after it.
    pub(super) value: Option<Page>,
}

/// What a page keeps: the winner of its frontier and the versions that lost to it.
#[derive(Debug)]
pub(super) struct Outcome<'a> {
    /// The operation whose version the page keeps.
    pub(super) winner: PageWrite<'a>,
    /// The frontier's other versions that differ from the winner's (the conflicts).
    pub(super) losers: Vec<PageWrite<'a>>,
}

/// A page's version as its file (kind and text), to compare two versions.
fn file(p: &Option<Page>) -> Option<(crate::model::PageKind, String)> {
    p.as_ref().map(|p| (p.kind, page_file(p)))
}

/// The outcome for one page (see the module docs) from `writes`: every operation held here or
/// in the run that wrote it, once each, with the page as it left it; `order`: the total order.
/// `None` when `writes` is empty.
pub(super) fn decide<'a>(
    writes: Vec<PageWrite<'a>>,
    order: &BTreeMap<OpId, OpOrder>,
) -> Option<Outcome<'a>> {
    let at = |w: &PageWrite<'_>| order.get(&w.op.id).copied().unwrap_or((i64::MIN, 0, 0));
    // Imports that are another device's page file arriving before its operation: left out. Of
    // two devices' imports of one file (it reached both folders), the earlier counts.
    let echo = |i: &PageWrite<'_>| {
        i.op.kind == OperationKind::Import
            && writes.iter().any(|x| {
                op_slot(x.op.id) != op_slot(i.op.id)
                    && !seen_by(i.op, x.op)
                    && file(&x.value) == file(&i.value)
                    && (x.op.kind != OperationKind::Import || at(x) < at(i))
            })
    };
    let counted: Vec<bool> = writes.iter().map(|w| !echo(w)).collect();
    // The latest of each device's writers.
    let mut last: BTreeMap<u16, PageWrite<'a>> = BTreeMap::new();
    for (w, _) in writes.into_iter().zip(counted).filter(|(_, c)| *c) {
        let slot = op_slot(w.op.id);
        if last.get(&slot).is_none_or(|l| l.op.id < w.op.id) {
            last.insert(slot, w);
        }
    }
    let candidates: Vec<PageWrite<'a>> = last.into_values().collect();
    let frontier: Vec<PageWrite<'a>> = candidates
        .iter()
        .filter(|x| {
            !candidates
                .iter()
                .any(|y| y.op.id != x.op.id && seen_by(y.op, x.op))
        })
        .cloned()
        .collect();
    // The latest edit, else the latest deletion.
    let winner = frontier
        .iter()
        .max_by_key(|w| (w.value.is_some(), at(w)))?
        .clone();
    let losers = frontier
        .into_iter()
        .filter(|w| w.op.id != winner.op.id && file(&w.value) != file(&winner.value))
        .collect();
    Some(Outcome { winner, losers })
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// What page `key` keeps when the run `last_file` ends merges (see the module docs):
    /// `writer`, the run's last operation that wrote it, left it as `theirs`; the other
    /// operations that wrote it are those of its revisions held here and in the run.
    ///
    /// Errors: storage errors.
    pub(super) async fn page_outcome<'a>(
        &self,
        key: &str,
        writer: OpId,
        theirs: &Option<Page>,
        facts: &'a RunFacts,
        last_file: &OpFile,
    ) -> Result<Option<Outcome<'a>>> {
        let mut revisions = self.history(key).await?;
        for r in &last_file.records {
            if r.store != Store::Revisions
                || parse_revision_key(&r.key).is_none_or(|(page, _, _)| page != key)
            {
                continue;
            }
            if let Some(rv) = r
                .value
                .as_ref()
                .and_then(|v| serde_json::from_value::<Revision>(v.clone()).ok())
            {
                revisions.push(rv);
            }
        }
        // Each operation's last revision of the page: the page as it left it.
        let mut left: HashMap<OpId, (u64, Option<Page>)> = HashMap::new();
        for rv in revisions {
            if left.get(&rv.op).is_none_or(|(n, _)| *n < rv.number) {
                left.insert(rv.op, (rv.number, rv.page_state));
            }
        }
        left.insert(writer, (u64::MAX, theirs.clone()));
        let writes = left
            .into_iter()
            .filter_map(|(op, (_, value))| {
                Some(PageWrite {
                    op: facts.ops.get(&op)?,
                    value,
                })
            })
            .collect();
        Ok(decide(writes, &facts.order))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{op_id, op_orders, PageKind, TokenUsage};

    fn op(id: OpId, time: i64, kind: OperationKind, seen: &[OpId]) -> Operation {
        Operation {
            id,
            kind,
            time,
            summary: String::new(),
            pages: vec!["P".into()],
            sources: vec![],
            usage: TokenUsage::default(),
            rolled_back_by: None,
            seen: Some(seen.to_vec()),
        }
    }

    fn w<'a>(op: &'a Operation, body: Option<&str>) -> PageWrite<'a> {
        let value = body.map(|b| {
            let mut p = Page::blank("P", "P", PageKind::Concept, 1);
            p.body = b.into();
            p
        });
        PageWrite { op, value }
    }

    fn body(o: &Outcome<'_>) -> Option<String> {
        o.winner.value.as_ref().map(|p| p.body.clone())
    }

    #[test]
    fn an_edit_wins_over_a_deletion_that_did_not_see_it_whatever_the_batches() {
        let b = |s| op_id(1, s);
        // A: a1 edits. B: b1 edits later, b2 deletes later still, having seen b1 only.
        let a1 = op(1, 10, OperationKind::HumanEdit, &[]);
        let b1 = op(b(1), 20, OperationKind::HumanEdit, &[]);
        let b2 = op(b(2), 30, OperationKind::HumanEdit, &[]);
        let b3 = op(b(3), 40, OperationKind::HumanEdit, &[1]);
        let order = op_orders([&a1, &b1, &b2, &b3]);
        // Whether b1 is held or not: the edit, and the deletion to confirm.
        for writes in [
            vec![w(&a1, Some("va")), w(&b2, None)],
            vec![w(&a1, Some("va")), w(&b1, Some("vb")), w(&b2, None)],
        ] {
            let o = decide(writes, &order).unwrap();
            assert_eq!(body(&o).as_deref(), Some("va"));
            assert_eq!(o.losers.len(), 1);
            assert!(o.losers[0].value.is_none());
        }
        // Before b2: two edits, the later one wins.
        let o = decide(vec![w(&a1, Some("va")), w(&b1, Some("vb"))], &order).unwrap();
        assert_eq!(body(&o).as_deref(), Some("vb"));
        // A deletion that saw the edit wins.
        let o = decide(vec![w(&a1, Some("va")), w(&b3, None)], &order).unwrap();
        assert!(o.winner.value.is_none() && o.losers.is_empty());
    }

    #[test]
    fn of_two_devices_imports_of_one_file_the_earlier_counts() {
        let b = |s| op_id(1, s);
        let ia = op(1, 10, OperationKind::Import, &[]);
        let ib = op(b(1), 20, OperationKind::Import, &[]);
        let order = op_orders([&ia, &ib]);
        let o = decide(vec![w(&ia, Some("v")), w(&ib, Some("v"))], &order).unwrap();
        assert_eq!(o.winner.op.id, ia.id);
        assert!(o.losers.is_empty());
    }

    #[test]
    fn an_import_of_another_devices_page_file_does_not_count() {
        let b = |s| op_id(1, s);
        let a1 = op(1, 10, OperationKind::HumanEdit, &[]);
        // A read b1's file before b1's operation arrived.
        let i = op(2, 25, OperationKind::Import, &[]);
        let b1 = op(b(1), 20, OperationKind::HumanEdit, &[]);
        let b2 = op(b(2), 30, OperationKind::HumanEdit, &[]);
        let order = op_orders([&a1, &i, &b1, &b2]);
        // b2 deleted the page after b1: deleted, no conflict.
        let writes = vec![w(&i, Some("vb")), w(&b1, Some("vb")), w(&b2, None)];
        let o = decide(writes, &order).unwrap();
        assert!(o.winner.value.is_none() && o.losers.is_empty());
        // A's own edit before the import still meets b1's.
        let writes = vec![w(&a1, Some("va")), w(&i, Some("vb")), w(&b1, Some("vb"))];
        let o = decide(writes, &order).unwrap();
        assert_eq!(body(&o).as_deref(), Some("vb"));
        assert_eq!(o.losers.len(), 1);
    }
}
