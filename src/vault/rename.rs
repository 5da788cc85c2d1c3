//! Renaming and deleting pages so that every link keeps working: a rename rewrites the links to
//! the page and carries its history to the new key (the kernel's rename, which lint's rename fix
//! shares); a delete turns the links to it into plain text. Each is one operation.
//!
//! *Invariant:* after a rename or delete no link that resolved to the page is left dangling.

use super::DeleteReport;
use crate::clock::Clock;
use crate::error::Result;
use crate::model::RenameReport;
use crate::model::{Author, OperationKind};
use crate::storage::Storage;
use crate::wiki::{unlink_page, Wiki};

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Renames a page: a new title, and the key that title gives (unique case-insensitively). Every
    /// link that reached the page by its key or title is rewritten to the new key in the same
    /// operation (keeping heading/block fragments, embeds, and any alias other than the old
    /// title); links through an alias are left alone, since they still resolve. The page's
    /// revisions are carried over to the new key; the old key's history ends with a revision
    /// without state. Claims and ledger records naming the old key are updated.
    ///
    /// Errors: [`Error::NotFound`], [`Error::InvalidInput`] for an empty title,
    /// [`Error::Conflict`] when another writer changed a page first (nothing written).
    pub async fn rename_page(&self, key: &str, title: &str) -> Result<RenameReport> {
        self.rename_page_dropping_aliases(key, title, &[]).await
    }

    /// Deletes a page. Every link to it (by key, title or alias) becomes its display text in the
    /// same operation, so no dead link is left behind. The page's history ends with a revision
    /// without state; its earlier revisions stay readable.
    ///
    /// Errors: [`Error::NotFound`], [`Error::Conflict`] (nothing written).
    pub async fn delete_page(&self, key: &str) -> Result<DeleteReport> {
        let table = self.page_table().await?;
        let (gone, pages, revs) = self.pages_linking(&table, key).await?;
        let full = table.resolver();
        let now = self.clock.now_ms();
        let mut ob = self
            .begin(OperationKind::Delete, format!("deleted: {}", gone.title))
            .await?;
        ob.op.time = ob.op.time.max(now);
        ob.op.pages.push(gone.key.clone());
        let op = ob.op.id;
        let mut unlinked = Vec::new();
        for p in pages.iter().filter(|p| p.key != gone.key) {
            let body = unlink_page(&p.body, full, &p.key, &gone.key);
            if body == p.body {
                continue;
            }
            let q = self
                .put_body_revision(&mut ob.batch, p, body, revs.get(&p.key).copied(), op, now)
                .await?;
            unlinked.push(q.key.clone());
            ob.op.pages.push(q.key.clone());
        }
        self.delete_page_record(
            &mut ob.batch,
            &gone.key,
            revs.get(&gone.key).copied(),
            Author::Human,
            op,
            now,
        )
        .await?;
        let op = self.finish(ob).await?;
        Ok(DeleteReport {
            key: gone.key,
            unlinked,
            op: op.id,
        })
    }
}
