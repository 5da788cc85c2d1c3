//! Pages in the kernel: the reads (every page, the page list from the page table, one page, a
//! page's revisions) and the one way an operation writes or deletes a page together with its
//! revision, shared by every operation that changes pages (sources, compile, lint, history,
//! vault), and which paragraphs of a page are a human's (Decision 5), which compile and the lint
//! fixes both protect.
//!
//! *Invariant:* a page record is never written or deleted without its revision in the same
//! batch, and a revision number is never used twice for a key (a deleted or renamed page's
//! history keeps counting).

use serde_json::Value;

use crate::clock::Clock;
use crate::error::Result;
use crate::markdown::page_body::{added_paragraphs, app_rewritten_paragraphs, strip_app_sections};
use crate::markdown::resolve::{Resolution, Resolver};
use crate::markdown::wikilinks;
use crate::model::{Author, OpId, Page, PageInfo, Revision};
use crate::records::{from_json, revision_key, to_json};
use crate::storage::{Batch, Expect, Storage, Store};

use super::Wiki;

/// `body` (of page `self_key`) with every link that resolves to `gone` turned into its display
/// text (alias pipes escaped inside table cells); other links, resolving or not, stay as written.
pub fn unlink_page(body: &str, resolver: &Resolver, self_key: &str, gone: &str) -> String {
    wikilinks::rewrite(body, |l| {
        (resolver.resolve_link(l, Some(self_key)) == Resolution::Page(gone.to_string()))
            .then(|| l.as_plain_text())
    })
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Every page, ordered by key.
    pub async fn all_pages(&self) -> Result<Vec<Page>> {
        self.read_all(Store::Pages, "").await
    }

    /// One line per page, ordered by key.
    pub async fn pages(&self) -> Result<Vec<PageInfo>> {
        // From the page table: no body is read.
        Ok(self.page_table().await?.rows().map(|r| r.info()).collect())
    }

    /// One page, or `None`. The key is matched exactly first, then case-insensitively.
    pub async fn page(&self, key: &str) -> Result<Option<Page>> {
        if let Some((p, _)) = self.read::<Page>(Store::Pages, key).await? {
            return Ok(Some(p));
        }
        let Some(row) = self.page_table().await?.find(key).map(|r| r.key.clone()) else {
            return Ok(None);
        };
        Ok(self.read::<Page>(Store::Pages, &row).await?.map(|(p, _)| p))
    }

    /// A page's revisions, oldest first.
    pub async fn history(&self, key: &str) -> Result<Vec<Revision>> {
        self.read_all(Store::Revisions, &format!("{key}\u{0}"))
            .await
    }

    /// The page state and author of revision `number` of `key`: the one under its key, or,
    /// when another device's revision of the same number (a deletion) took the key, the one
    /// kept beside it ([`crate::records::displaced_revision_key`]). `None` when neither holds
    /// a state.
    ///
    /// Errors: storage errors; [`crate::Error::Corrupt`] for a revision that does not parse.
    pub(crate) async fn revision_state(
        &self,
        key: &str,
        number: u64,
    ) -> Result<Option<(Page, crate::model::Author)>> {
        let rk = revision_key(key, number);
        let own = self
            .read::<Revision>(Store::Revisions, &rk)
            .await?
            .and_then(|(r, _)| Some((r.page_state?, r.author)));
        if own.is_some() {
            return Ok(own);
        }
        let beside: Vec<Revision> = self
            .read_all(Store::Revisions, &format!("{rk}\u{0}"))
            .await?;
        Ok(beside
            .into_iter()
            .find_map(|r| Some((r.page_state?, r.author))))
    }

    /// The number the next revision of `key` gets: one more than any revision stored under that
    /// key, including the history a deleted or renamed page left behind (so a key used again never
    /// overwrites history).
    pub(crate) async fn next_revision_number(&self, key: &str) -> Result<u64> {
        let mut max = 0;
        for (k, r) in self
            .storage
            .scan(Store::Revisions, &format!("{key}\u{0}"))
            .await?
        {
            max = max.max(from_json::<Revision>(Store::Revisions, &k, &r.data)?.number);
        }
        Ok(max + 1)
    }

    /// Adds the page record (expecting storage revision `rev`, or absence) and its revision
    /// `page.revision` by `author` to `batch`: the one way an operation writes a page and its
    /// history entry.
    pub(crate) fn put_page_revision(
        &self,
        batch: &mut Batch,
        page: &Page,
        rev: Option<u64>,
        author: Author,
        op: OpId,
        now: i64,
    ) {
        batch.put(
            Store::Pages,
            page.key.clone(),
            to_json(page),
            Expect::from_read(rev),
        );
        batch.put(
            Store::Revisions,
            revision_key(&page.key, page.revision),
            to_json(&Revision {
                page: page.key.clone(),
                number: page.revision,
                author,
                op,
                time: now,
                page_state: Some(page.clone()),
            }),
            Expect::Absent,
        );
    }

    /// Adds to `batch` the deletion of page `key` (its record expected at storage revision
    /// `stored`, or absent) and the page's state-less revision by `author`, numbered after every
    /// revision the key has: the one way an operation deletes a page (delete, rename, merge,
    /// removing a source, rollback). Returns the revision number.
    pub(crate) async fn delete_page_record(
        &self,
        batch: &mut Batch,
        key: &str,
        stored: Option<u64>,
        author: Author,
        op: OpId,
        now: i64,
    ) -> Result<u64> {
        let number = self.next_revision_number(key).await?;
        batch.delete(Store::Pages, key.to_string(), Expect::from_read(stored));
        batch.put(
            Store::Revisions,
            revision_key(key, number),
            to_json(&Revision {
                page: key.to_string(),
                number,
                author,
                op,
                time: now,
                page_state: None,
            }),
            Expect::Absent,
        );
        Ok(number)
    }

    /// Points claims (`page`) and ledger records (`pages`) at a renamed page's new key.
    pub(crate) async fn rekey_claims(&self, batch: &mut Batch, old: &str, new: &str) -> Result<()> {
        use crate::page_table::{list, PAGE_CLAIMS_PREFIX, PAGE_RECORDS_PREFIX};
        for (store, field, prefix) in [
            (Store::Claims, "page", PAGE_CLAIMS_PREFIX),
            (Store::Ledger, "pages", PAGE_RECORDS_PREFIX),
        ] {
            // The page table lists the claims and records naming the page.
            for k in list(&self.storage, prefix, old).await? {
                let Some(r) = self.storage.get(store, &k).await? else {
                    continue;
                };
                let mut v: Value = from_json(store, &k, &r.data)?;
                let changed = match v.get_mut(field) {
                    Some(Value::String(s)) if s == old => {
                        *s = new.to_string();
                        true
                    }
                    Some(Value::Array(items)) => {
                        let mut any = false;
                        for i in items.iter_mut() {
                            if i.as_str() == Some(old) {
                                *i = Value::String(new.to_string());
                                any = true;
                            }
                        }
                        any
                    }
                    _ => false,
                };
                if changed {
                    batch.put(store, k, to_json(&v), Expect::Rev(r.rev));
                }
            }
        }
        Ok(())
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Paragraphs a human added to `current` since the page's last LLM revision (all paragraphs
    /// when the LLM never wrote it).
    pub(crate) async fn human_paragraphs(&self, key: &str, current: &Page) -> Result<Vec<String>> {
        // The page table says whether anyone edited the page since the model last wrote it, so
        // the history is read only when someone did, and then from that revision on.
        let mark = self.page_table().await?.get(key).and_then(|r| r.history);
        let history = match mark {
            Some(m) if !m.human_after => return Ok(Vec::new()),
            Some(m) if m.llm > 0 => {
                let prefix = format!("{key}\u{0}");
                let after = revision_key(key, m.llm - 1);
                self.storage
                    .scan_page(Store::Revisions, &prefix, Some(&after), usize::MAX)
                    .await?
                    .into_iter()
                    .map(|(k, r)| from_json(Store::Revisions, &k, &r.data))
                    .collect::<Result<Vec<Revision>>>()?
            }
            _ => self.history(key).await?,
        };
        let last_llm = history.iter().rev().find(|r| r.author == Author::Llm);
        let human_after = history
            .iter()
            .any(|r| r.author == Author::Human && last_llm.is_none_or(|l| r.number > l.number));
        if !human_after {
            return Ok(Vec::new());
        }
        let base = last_llm
            .and_then(|r| r.page_state.as_ref())
            .map(|p| strip_app_sections(&p.body))
            .unwrap_or_default();
        // What the app's own revisions (removing a source) rewrote in the model's text is not
        // the user's.
        let later: Vec<(bool, String)> = history
            .iter()
            .filter(|r| last_llm.is_none_or(|l| r.number > l.number))
            .map(|r| {
                (
                    r.author == Author::App,
                    r.page_state
                        .as_ref()
                        .map(|p| strip_app_sections(&p.body))
                        .unwrap_or_default(),
                )
            })
            .collect();
        let later: Vec<(bool, &str)> = later.iter().map(|(a, b)| (*a, b.as_str())).collect();
        let app = app_rewritten_paragraphs(&base, &later);
        let mut human = added_paragraphs(&base, &strip_app_sections(&current.body));
        human.retain(|p| !app.contains(p));
        Ok(human)
    }
}
