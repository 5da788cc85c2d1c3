//! What the person decides about what a pull held: a conflict (keep the wiki's version, the
//! folder's, or a merge) and a page file deleted outside (write it back; deleting the page is
//! the ordinary `deletePage`).

use super::copies::{git_other_version, git_sides, SyncTool};
use super::{ConflictChoice, MirrorConflict, MirrorState};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::folder::Folder;
use crate::markdown::page::page_file;
use crate::model::{Author, OpId, OperationKind, Page, Store};
use crate::storage::Storage;
use crate::text::sha256_hex;
use crate::vault_files::notes::page_from_file;
use crate::vault_files::page_path;
use crate::wiki::Wiki;

/// The other version a conflict's file `bytes` hold beside the wiki's (`mine`): the text, or
/// for git conflict markers, the side that is not the wiki's (as the pull recorded it).
fn folder_version(conflict: &MirrorConflict, bytes: &[u8], mine: Option<&str>) -> String {
    let text = String::from_utf8_lossy(bytes).into_owned();
    match conflict.tool {
        Some(SyncTool::Git) => git_other_version(&text, mine).unwrap_or(text),
        _ => text,
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The pages changed both in the wiki and in the mirror's folder, waiting for a choice.
    ///
    /// Errors: storage errors.
    pub async fn mirror_conflicts(&self) -> Result<Vec<MirrorConflict>> {
        let (state, _) = self.mirror_state().await?;
        let mut out = Vec::new();
        for mut c in state.map(|s| s.conflicts).unwrap_or_default().into_values() {
            c.mine = self
                .page(&c.key)
                .await?
                .filter(|p| p.key == c.key)
                .map(|p| page_file(&p));
            out.push(c);
        }
        Ok(out)
    }

    /// Ends the conflict on page `key`: [`ConflictChoice::Mine`] writes the wiki's version over
    /// the file; [`ConflictChoice::Theirs`] and [`ConflictChoice::Merge`] make the folder's
    /// version or the merge the page's next human revision (one `human-edit` operation,
    /// returned), which the next mirror run writes to the file. `seen` is the folder's version
    /// the person decided on (the conflict's `theirs` as shown): a later version, saved in the
    /// folder meanwhile, is never written over by a choice made on an earlier one.
    ///
    /// Errors: [`Error::NotFound`] when the page has no conflict; [`Error::InvalidInput`] when
    /// the folder's version is no longer `seen` (a pull took a newer one, or the file changed
    /// again: the conflict then holds the new text; look at it and choose again);
    /// [`Error::Folder`]; storage errors.
    pub async fn resolve_mirror_conflict<F: Folder>(
        &self,
        folder: &F,
        key: &str,
        choice: ConflictChoice,
        seen: &str,
    ) -> Result<Option<OpId>> {
        let (state, rev) = self.mirror_state().await?;
        let mut state = state.ok_or_else(|| Error::NotFound("a mirror".into()))?;
        let conflict = state
            .conflicts
            .remove(key)
            .ok_or_else(|| Error::NotFound(format!("a conflict on page {key:?}")))?;
        if conflict.theirs != seen {
            return Err(Error::InvalidInput(format!(
                "the folder's version of {key:?} changed since it was shown: look at it and \
                 choose again"
            )));
        }
        if conflict.device.is_some() {
            return self
                .resolve_merge_conflict(state, rev, conflict, choice)
                .await;
        }
        // The other version is in the page's file, or in the sync tool's conflict copy.
        let full = format!(
            "{}/{}",
            state.root,
            conflict.copy.as_deref().unwrap_or(&conflict.path)
        );
        // The folder's version may have changed again since the pull that saw it: then the
        // person decides on what is there now, not on what was.
        let there = folder.read(&full).await?;
        let there_sha = there.as_deref().map(sha256_hex);
        let current = self.page(key).await?.filter(|p| p.key == key);
        let mine = current.as_ref().map(page_file);
        if let Some(theirs) = there
            .map(|b| folder_version(&conflict, &b, mine.as_deref()))
            .filter(|t| *t != conflict.theirs)
        {
            state
                .conflicts
                .insert(key.to_string(), MirrorConflict { theirs, ..conflict });
            self.save_mirror_state(&state, rev).await?;
            return Err(Error::InvalidInput(format!(
                "the folder's version of {key:?} changed again: look at it and choose again"
            )));
        }
        if let ConflictChoice::Merge(text) = &choice {
            if git_sides(text).is_some() {
                return Err(Error::InvalidInput(format!(
                    "the merge of {key:?} still has conflict markers (<<<<<<<, =======, \
                     >>>>>>>): keep the lines you want and remove the markers"
                )));
            }
        }
        if let Some(copy) = &conflict.copy {
            if matches!(choice, ConflictChoice::Mine) && current.is_none() {
                // The page is gone from the wiki: keeping "its" version would throw the copy's
                // away, the only one left.
                return Err(Error::NotFound(format!("page {key:?}")));
            }
            // A sync tool's conflict copy: the page's file is the mirror's as ever; the copy,
            // decided on, goes (and with it, through the sync tool, the conflict on the other
            // devices).
            let op = match choice {
                ConflictChoice::Mine => None,
                ConflictChoice::Theirs => Some(
                    self.page_from_folder(&conflict, current, &conflict.theirs)
                        .await?,
                ),
                ConflictChoice::Merge(text) => {
                    Some(self.page_from_folder(&conflict, current, &text).await?)
                }
            };
            folder.remove(&full).await?;
            state.seen.remove(copy);
            self.save_mirror_state(&state, rev).await?;
            return Ok(op);
        }
        let text = match choice {
            ConflictChoice::Mine => {
                let Some(page) = current else {
                    return Err(Error::NotFound(format!("page {key:?}")));
                };
                let bytes = page_file(&page).into_bytes();
                folder.write(&full, &bytes).await?;
                self.release(&mut state, &conflict.path, Some(sha256_hex(&bytes)));
                self.save_mirror_state(&state, rev).await?;
                return Ok(None);
            }
            ConflictChoice::Theirs => conflict.theirs.clone(),
            ConflictChoice::Merge(text) => text,
        };
        let op = self.page_from_folder(&conflict, current, &text).await?;
        self.release(&mut state, &conflict.path, there_sha);
        self.save_mirror_state(&state, rev).await?;
        Ok(Some(op))
    }

    /// Ends a conflict with another device's version (merge on read): the wiki's version
    /// (`Mine`: nothing changes), the other one or a merge (the page's next human revision).
    /// Either way every device ends it (`decided`, through this device's `conflicts.json`).
    /// When the other version is the page's deletion, `Theirs` is refused: delete the page.
    async fn resolve_merge_conflict(
        &self,
        mut state: MirrorState,
        rev: Option<u64>,
        conflict: MirrorConflict,
        choice: ConflictChoice,
    ) -> Result<Option<OpId>> {
        let text = match choice {
            ConflictChoice::Mine => None,
            ConflictChoice::Theirs if conflict.theirs.is_empty() => {
                return Err(Error::InvalidInput(format!(
                    "the other version of {:?} is its deletion: delete the page to keep that",
                    conflict.key
                )));
            }
            ConflictChoice::Theirs => Some(conflict.theirs.clone()),
            ConflictChoice::Merge(text) => Some(text),
        };
        let op = match text {
            Some(text) => {
                let current = self
                    .page(&conflict.key)
                    .await?
                    .filter(|p| p.key == conflict.key);
                Some(self.page_from_folder(&conflict, current, &text).await?)
            }
            None => None,
        };
        state.decided.insert(conflict.id());
        self.save_mirror_state(&state, rev).await?;
        Ok(op)
    }

    /// Writes the file of page `key` back into the mirror's folder after it was deleted there
    /// (the pull listed it in `deleted`), and writes it again from then on. A file that is back
    /// already is left as it is (the next pull reads it).
    ///
    /// Errors: [`Error::NotFound`] for no such page or no mirror; [`Error::Folder`]; storage
    /// errors.
    pub async fn restore_page_file<F: Folder>(&self, folder: &F, key: &str) -> Result<()> {
        let (state, rev) = self.mirror_state().await?;
        let mut state = state.ok_or_else(|| Error::NotFound("a mirror".into()))?;
        let page = self
            .page(key)
            .await?
            .filter(|p| p.key == key)
            .ok_or_else(|| Error::NotFound(format!("page {key:?}")))?;
        let path = page_path(page.kind, key);
        let full = format!("{}/{path}", state.root);
        let bytes = page_file(&page).into_bytes();
        // Back already (restored outside): the next pull reads it like any edit.
        let sha = match folder.read(&full).await? {
            Some(_) => state.files.get(&path).cloned(),
            None => {
                folder.write(&full, &bytes).await?;
                Some(sha256_hex(&bytes))
            }
        };
        self.release(&mut state, &path, sha);
        self.save_mirror_state(&state, rev).await?;
        Ok(())
    }

    /// The page's next human revision from a page file's `text`, in one operation.
    async fn page_from_folder(
        &self,
        conflict: &MirrorConflict,
        current: Option<Page>,
        text: &str,
    ) -> Result<OpId> {
        let (kind, key) = super::pull::page_of_path(&conflict.path)
            .ok_or_else(|| Error::InvalidInput(format!("{}: not a page file", conflict.path)))?;
        let mut ob = self
            .begin(
                OperationKind::HumanEdit,
                format!("folder conflict resolved: {key}"),
            )
            .await?;
        let now = ob.op.time;
        let stored = self.read::<Page>(Store::Pages, key).await?.map(|(_, r)| r);
        let base = current.unwrap_or_else(|| Page::blank(key, key, kind, now));
        let mut page = page_from_file(&base, kind, text);
        page.revision = self.next_revision_number(key).await?;
        page.updated = now;
        let op = ob.op.id;
        self.put_page_revision(&mut ob.batch, &page, stored, Author::Human, op, now);
        ob.op.pages.push(key.to_string());
        Ok(self.finish(ob).await?.id)
    }

    /// The mirror writes `path` again; `sha` is what the folder holds there now.
    ///
    /// (For a file with git conflict markers, `sha` is the marked file's: the next run writes
    /// the page over it.)
    fn release(&self, state: &mut MirrorState, path: &str, sha: Option<String>) {
        state.held.remove(path);
        state.seen.remove(path);
        match sha {
            Some(sha) => state.files.insert(path.to_string(), sha),
            None => state.files.remove(path),
        };
    }
}
