//! Held updates (Decision 5): when a compile's new body for a page would drop paragraphs a human
//! wrote since the last LLM revision, the page is not written and the body is kept as a
//! *proposal* in `meta/proposal/<key>`. The user sees it beside the page and accepts or rejects it.

use serde::{Deserialize, Serialize};

use super::pipeline::PROPOSAL_PREFIX;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::model::{Author, OpId, OperationKind, Page, Revision};
use crate::storage::{Expect, Storage, Store};
use crate::wiki::{from_json, revision_key, to_json, Wiki};

/// A compile's update to a page, held because it would drop a human's paragraphs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct HeldUpdate {
    /// The page it would update.
    pub key: String,
    /// The page as the compile would have written it.
    pub proposed: Page,
    /// The human paragraphs the proposal drops (present on the stored page, absent from
    /// `proposed`), in page order. Empty once the proposal no longer drops any.
    pub dropped: Vec<String>,
    /// The page changed since the update was held (an edit, a fix, a rollback): it can only be
    /// rejected; the next compile of its source makes a fresh one if still needed.
    pub stale: bool,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Every held update, by page key. A proposal whose page was deleted since is left out.
    pub async fn held_updates(&self) -> Result<Vec<HeldUpdate>> {
        let mut out = Vec::new();
        for (k, r) in self.storage.scan(Store::Meta, PROPOSAL_PREFIX).await? {
            let proposed: Page = from_json(Store::Meta, &k, &r.data)?;
            let key = k[PROPOSAL_PREFIX.len()..].to_string();
            let Some(current) = self.page(&key).await? else {
                continue;
            };
            let human = self.human_paragraphs(&key, &current).await?;
            let dropped =
                crate::markdown::page_body::missing_human_paragraphs(&human, &proposed.body);
            let stale = current.revision != proposed.revision;
            out.push(HeldUpdate {
                key,
                proposed,
                dropped,
                stale,
            });
        }
        Ok(out)
    }

    /// Accepts the held update of `key`: the proposed body becomes the page's next revision
    /// (author `llm`, since the model wrote it), in one [`OperationKind::HumanEdit`] operation
    /// (index.md, log.md and the search index with it), and the proposal is gone.
    ///
    /// Errors: [`Error::NotFound`] when there is no proposal for `key` or its page is gone;
    /// [`Error::Conflict`] when the page changed since the update was held (the proposal is
    /// stale: reject it) or meanwhile (nothing written).
    pub async fn accept_proposal(&self, key: &str) -> Result<OpId> {
        let pkey = format!("{PROPOSAL_PREFIX}{key}");
        let Some((proposed, prev)) = self.read::<Page>(Store::Meta, &pkey).await? else {
            return Err(Error::NotFound(format!("proposal for {key:?}")));
        };
        let Some((current, rev)) = self.read::<Page>(Store::Pages, key).await? else {
            return Err(Error::NotFound(format!("page {key:?}")));
        };
        if current.revision != proposed.revision {
            // Accepting would undo whatever changed the page since (claims, links, sources).
            return Err(Error::Conflict {
                store: Store::Pages,
                key: key.to_string(),
                expected: format!("revision {} (when the update was held)", proposed.revision),
                found: format!("revision {}", current.revision),
            });
        }
        let now = self.clock.now_ms();
        let mut ob = self
            .begin(
                OperationKind::HumanEdit,
                format!("accepted held update: {}", current.title),
            )
            .await?;
        let op = ob.op.id;
        ob.op.time = ob.op.time.max(now);
        ob.op.pages.push(key.to_string());
        let mut page = proposed;
        page.key = current.key.clone();
        page.created = current.created;
        page.revision = self.next_revision_number(key).await?;
        page.updated = now;
        ob.batch
            .put(Store::Pages, key, to_json(&page), Expect::Rev(rev));
        ob.batch.put(
            Store::Revisions,
            revision_key(key, page.revision),
            to_json(&Revision {
                page: key.to_string(),
                number: page.revision,
                author: Author::Llm,
                op,
                time: now,
                page_state: Some(page.clone()),
            }),
            Expect::Absent,
        );
        ob.batch.delete(Store::Meta, pkey, Expect::Rev(prev));
        Ok(self.finish(ob).await?.id)
    }

    /// Rejects the held update of `key`: the proposal is deleted; the page stays as it is.
    /// Not an operation (the wiki's content does not change).
    ///
    /// Errors: [`Error::NotFound`] when there is no proposal for `key`.
    pub async fn reject_proposal(&self, key: &str) -> Result<()> {
        let pkey = format!("{PROPOSAL_PREFIX}{key}");
        let Some(r) = self.storage.get(Store::Meta, &pkey).await? else {
            return Err(Error::NotFound(format!("proposal for {key:?}")));
        };
        let mut batch = crate::storage::Batch::new();
        batch.delete(Store::Meta, pkey, Expect::Rev(r.rev));
        self.storage.commit(batch).await?;
        Ok(())
    }
}
