//! Reverting one page to an earlier revision, as a new revision in one rollback operation.
//!
//! *Invariant:* history is never rewritten: the revisions after the one restored stay listed.

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::model::{Author, OperationKind, Page};
use crate::storage::{Storage, Store};
use crate::wiki::Wiki;

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
