//! Adopting the folder a mirror goes into: when the person picks an Obsidian vault, its notes
//! become sources and its other files attachments, as a vault import of it would make them, in
//! one `import` operation. The mirror's own folder and hidden folders (`.obsidian/`, `.trash/`)
//! are left out.
//!
//! *Invariant:* adopting reads the folder and writes nothing to it; a note already a source with
//! the same text is unchanged, so adopting twice adds nothing.

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::Result;
use crate::folder::Folder;
use crate::model::{OpId, OperationKind};
use crate::storage::Storage;
use crate::vault_files::notes::TemplateNotes;
use crate::vault_files::MAX_ENTRY_BYTES;
use crate::wiki::Wiki;

/// What [`Wiki::mirror_adopt`] did (JS: `mirrorAdopt(folder)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct AdoptReport {
    /// Notes added as sources (key = the note's path in the folder).
    pub sources_added: Vec<String>,
    /// Notes whose source existed with other text: corrected.
    pub sources_corrected: Vec<String>,
    /// Notes already sources with this text.
    pub sources_unchanged: Vec<String>,
    /// Attachments stored (the folder's other files).
    pub assets: Vec<String>,
    /// Files left out, each with the reason.
    pub skipped: Vec<String>,
    /// The `import` operation, when something came in.
    pub op: Option<OpId>,
}

/// Whether the file at `path` is a note (markdown), as [`Wiki::put_vault_files`] reads it.
fn is_note(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".md") || lower.ends_with(".markdown")
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// How many notes (`.md`) `folder` holds outside `root` and hidden folders: more than none
    /// means the person picked a vault the app can adopt ([`Wiki::mirror_adopt`]).
    ///
    /// Errors: [`crate::error::Error::Folder`].
    pub async fn folder_notes<F: Folder>(&self, folder: &F, root: &str) -> Result<u64> {
        let entries = folder.list("").await?;
        let roots = mirror_roots(&entries, root);
        Ok(entries
            .iter()
            .filter(|e| outside(&e.path, &roots) && is_note(&e.path))
            .count() as u64)
    }

    /// Brings the notes of `folder` outside `root` in as sources (key = path, title from the
    /// frontmatter or the file name; Excalidraw drawings give their text, templates are
    /// skipped unless `templates` says otherwise) and its other files as attachments, in one
    /// `import` operation — what `importVault` does with a zip of the same vault.
    ///
    /// Errors: [`crate::error::Error::Folder`]; storage errors. Nothing is written on error.
    pub async fn mirror_adopt<F: Folder>(
        &self,
        folder: &F,
        root: &str,
        templates: TemplateNotes,
    ) -> Result<AdoptReport> {
        let mut report = AdoptReport::default();
        let entries = folder.list("").await?;
        let roots = mirror_roots(&entries, root);
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        for e in entries {
            if !outside(&e.path, &roots) {
                continue;
            }
            if e.size > MAX_ENTRY_BYTES {
                report
                    .skipped
                    .push(format!("{}: larger than {MAX_ENTRY_BYTES} bytes", e.path));
                continue;
            }
            if let Some(data) = folder.read(&e.path).await? {
                files.push((e.path, data));
            }
        }
        let mut ob = self.begin(OperationKind::Import, String::new()).await?;
        let came = self
            .put_vault_files(
                &mut ob,
                files.iter().map(|(p, d)| (p.as_str(), d.as_slice())),
                false,
                templates,
            )
            .await?;
        report.sources_added = came.added;
        report.sources_corrected = came.corrected;
        report.sources_unchanged = came.unchanged;
        report.assets = came.assets;
        report.skipped.extend(came.skipped);
        if !came.wrote {
            return Ok(report);
        }
        ob.op.summary = format!(
            "folder adopted: {} notes added, {} corrected, {} unchanged; {} attachments",
            report.sources_added.len(),
            report.sources_corrected.len(),
            report.sources_unchanged.len(),
            report.assets.len()
        );
        report.op = Some(self.finish(ob).await?.id);
        Ok(report)
    }
}

/// The folders of `entries` that hold a mirror (theirs `.llm-wiki/vault.json`), with `root`:
/// their pages are a wiki's, not a person's notes.
fn mirror_roots(entries: &[crate::folder::Entry], root: &str) -> Vec<String> {
    let mut roots = vec![format!("{root}/")];
    for e in entries {
        if let Some(r) = e.path.strip_suffix(crate::vault_files::MANIFEST_PATH) {
            roots.push(r.to_string());
        }
    }
    roots
}

/// Whether `path` is outside every mirror's folder (`roots`, each ending in `/`; `""` for a
/// mirror at the top) and every hidden folder.
fn outside(path: &str, roots: &[String]) -> bool {
    !roots.iter().any(|r| path.starts_with(r.as_str()))
        && !path
            .split('/')
            .any(|c| c.starts_with('.') || c == "__MACOSX")
}
