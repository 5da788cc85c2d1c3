//! A vault's notes as sources: the one way the zip import, an adopted folder and the folder
//! mirror's pull add or correct a source from a note's text, and bring a vault's other files in
//! as attachments.

use super::{OpBuilder, Wiki};
use crate::clock::Clock;
use crate::error::Result;
use crate::model::{Artifact, Source, SourceStatus};
use crate::records::to_json;
use crate::storage::{Expect, Storage, Store};
use crate::text::sha256_hex;
use crate::vault_files::notes::{mime_for, note_source, plan_asset, put_asset, TemplateNotes};

/// What [`Wiki::put_note_source`] did with a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteOutcome {
    /// A new source.
    Added,
    /// The source stored under the note's path got the note's text as its new version.
    Corrected,
    /// The source already had this text (it may have moved to the path).
    Unchanged,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Adds the note at `path` (its title, text and, for a drawing, the whole note as the
    /// original) to `ob` as a source keyed by the path (`text/markdown`, pending compile): a new
    /// source, a correction of the source stored under the path (its version before kept in
    /// `previousVersions`), or nothing when the text is the same. A source an older build stored
    /// under the NFD form of the path moves to the path; `moves` gets `(old, new)` for
    /// [`Wiki::rekey_source_references`].
    ///
    /// Errors: storage errors.
    pub(crate) async fn put_note_source(
        &self,
        ob: &mut OpBuilder,
        path: &str,
        title: String,
        text: String,
        original: Option<Artifact>,
        moves: &mut Vec<(String, String)>,
    ) -> Result<NoteOutcome> {
        let (op, now) = (ob.op.id, ob.op.time);
        let version = sha256_hex(text.as_bytes());
        let found = self.find_source(path).await?;
        // A source stored earlier under the NFD form of this path moves to the path.
        let moved_from = found
            .as_ref()
            .map(|(_, _, k)| k.clone())
            .filter(|k| k != path);
        let existing = found.map(|(s, rev, _)| (s, rev));
        if let (Some(old), Some((s, rev))) = (&moved_from, &existing) {
            ob.batch
                .delete(Store::Sources, old.clone(), Expect::Rev(*rev));
            moves.push((old.clone(), path.to_string()));
            ob.op.sources.push(old.clone());
            if !s.version.is_empty() && s.version == version {
                let moved = Source {
                    key: path.to_string(),
                    ..s.clone()
                };
                ob.batch.put(
                    Store::Sources,
                    path.to_string(),
                    to_json(&moved),
                    Expect::Absent,
                );
                ob.op.sources.push(path.to_string());
                return Ok(NoteOutcome::Unchanged);
            }
        }
        if let Some((s, _)) = &existing {
            if !s.version.is_empty() && s.version == version {
                return Ok(NoteOutcome::Unchanged);
            }
        }
        ob.batch.put(
            Store::Raw,
            format!("text/{version}"),
            text.clone().into_bytes(),
            Expect::Any,
        );
        let (previous_versions, rev) = match &existing {
            Some((s, rev)) => {
                let mut pv = s.previous_versions.clone();
                if !s.version.is_empty() {
                    pv.push(s.version.clone());
                }
                (pv, Some(*rev))
            }
            None => (vec![], None),
        };
        let source = Source {
            key: path.to_string(),
            version,
            title,
            url: None,
            mime: "text/markdown".into(),
            captured_at: None,
            added_at: now,
            op,
            text_bytes: text.len() as u64,
            original,
            previous_versions,
            status: SourceStatus::Pending,
            summary_page: None,
            parts: vec![],
        };
        let expect = if moved_from.is_some() {
            Expect::Absent
        } else {
            Expect::from_read(rev)
        };
        ob.batch
            .put(Store::Sources, path.to_string(), to_json(&source), expect);
        ob.op.sources.push(path.to_string());
        Ok(if existing.is_some() {
            NoteOutcome::Corrected
        } else {
            NoteOutcome::Added
        })
    }
}

/// What [`Wiki::put_vault_files`] added to an operation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VaultFilesIn {
    /// Notes added as sources (key = path).
    pub added: Vec<String>,
    /// Notes whose source got their text as its new version.
    pub corrected: Vec<String>,
    /// Notes already sources with this text.
    pub unchanged: Vec<String>,
    /// Attachments (every file that is not a note), by stored name.
    pub assets: Vec<String>,
    /// Files left out, each with the reason.
    pub skipped: Vec<String>,
    /// Whether anything was written (a source, a moved source or a new attachment).
    pub wrote: bool,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Adds a plain vault's files to `ob`, the one way a vault's notes come in (a zip import, a
    /// picked folder adopted): each note (`.md`, `.markdown`) through the note parser
    /// ([`note_source`]: drawings give their text, templates are skipped unless `templates`
    /// says otherwise, the app's own documents are not notes when `ours`) as a source
    /// ([`Wiki::put_note_source`]); every other file as an attachment; paths in hidden folders
    /// (`.obsidian/`, `.trash/`) or `__MACOSX/` are skipped. Sources moved from an NFD key are
    /// re-keyed in the pages that cite them.
    ///
    /// Errors: storage errors.
    pub(crate) async fn put_vault_files<'a>(
        &self,
        ob: &mut OpBuilder,
        files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        ours: bool,
        templates: TemplateNotes,
    ) -> Result<VaultFilesIn> {
        let mut out = VaultFilesIn::default();
        let mut assets = self.assets().await?;
        let mut moves: Vec<(String, String)> = Vec::new();
        for (path, data) in files {
            if path
                .split('/')
                .any(|c| c.starts_with('.') || c == "__MACOSX")
            {
                out.skipped.push(format!("{path}: hidden"));
                continue;
            }
            let lower = path.to_ascii_lowercase();
            if lower.ends_with(".md") || lower.ends_with(".markdown") {
                let Some((title, text, original)) =
                    note_source(path, data, ours, templates, &mut ob.batch, &mut out.skipped)
                else {
                    continue;
                };
                let list = match self
                    .put_note_source(ob, path, title, text, original, &mut moves)
                    .await?
                {
                    NoteOutcome::Added => &mut out.added,
                    NoteOutcome::Corrected => &mut out.corrected,
                    NoteOutcome::Unchanged => &mut out.unchanged,
                };
                list.push(path.to_string());
            } else {
                let name = path.rsplit('/').next().unwrap_or(path);
                let (asset, new) = plan_asset(&assets, name, &mime_for(name), data, ob.op.id);
                if new {
                    put_asset(&mut ob.batch, &asset, data);
                    assets.push(asset.clone());
                    out.wrote = true;
                }
                out.assets.push(asset.name);
            }
        }
        out.wrote |= !ob.op.sources.is_empty();
        if out.wrote {
            self.rekey_source_references(ob, &moves).await?;
        }
        Ok(out)
    }
}
