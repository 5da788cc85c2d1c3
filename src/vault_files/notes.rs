//! Files of a vault read back: a page from its `.md` file, a note as a source's text (drawings
//! and templates), a note's title, the attachments' names, records and MIME types, and which
//! notes are the app's own documents. The zip import and the folder mirror's pull share them.
//!
//! *Invariant:* attachment names are portable file names, unique case-insensitively; the bytes
//! of an attachment are stored once however many names point at them.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::documents::{INDEX_MD, LOG_MD, SCHEMA_MD};
use crate::markdown::keys::legacy_page_key;
use crate::markdown::obsidian::{self, NoteShape};
use crate::markdown::page::{clean_page, parse_page_file, CleanOptions};
use crate::markdown::resolve::fold_name;
use crate::model::Artifact;
use crate::model::Asset;
use crate::model::{OpId, Page, PageKind};
use crate::records::{to_json, ASSET_PREFIX};
use crate::storage::{Batch, Expect, Store};
use crate::text::{normalize_source_text, sha256_hex};

/// `base` with the fields a page file carries (kind from its folder; title, aliases, tags,
/// summary, sources, unknown fields and body from the file).
pub fn page_from_file(base: &Page, kind: PageKind, text: &str) -> Page {
    let mut p = base.clone();
    p.kind = kind;
    let (fm, body) = match parse_page_file(text) {
        Ok((fm, body)) => (fm, body.to_string()),
        Err(_) => {
            let c = clean_page(text, CleanOptions::HUMAN);
            (c.frontmatter.unwrap_or_default(), c.body)
        }
    };
    p.title = fm.title.unwrap_or_else(|| base.title.clone());
    p.aliases = fm.aliases.unwrap_or_default();
    p.tags = fm.tags.unwrap_or_default();
    p.summary = fm.summary.unwrap_or_default();
    p.sources = fm.sources.unwrap_or_default();
    p.extra_frontmatter = fm.extra;
    p.body = body;
    p
}

/// A note's title: its frontmatter `title`, else its file name without `.md`.
pub fn note_title(path: &str, text: &str) -> String {
    let from_fm = crate::markdown::frontmatter::split(text)
        .and_then(|(yaml, _)| crate::markdown::frontmatter::parse_yaml_lenient(yaml).ok())
        .and_then(|(fm, _)| fm.title);
    from_fm.unwrap_or_else(|| {
        let file = path.rsplit('/').next().unwrap_or(path);
        let stem = file
            .strip_suffix(".md")
            .or_else(|| file.strip_suffix(".markdown"))
            .or_else(|| file.strip_suffix(".MD"))
            .unwrap_or(file);
        stem.to_string()
    })
}

/// What a plain Obsidian vault's template notes become (`importVault(bytes, { templates })`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub enum TemplateNotes {
    /// Left out, listed in `skipped` with the placeholder that marks them. The default.
    #[default]
    Skip,
    /// Imported as sources like any note.
    Import,
}

/// Decides the record for an attachment: the existing one (same name, same bytes), or a new one
/// with a free name. Returns it and whether it is new.
pub fn plan_asset(
    existing: &[Asset],
    name: &str,
    mime: &str,
    bytes: &[u8],
    op: OpId,
) -> (Asset, bool) {
    let sha = sha256_hex(bytes);
    let base = asset_name(name);
    let folded = fold_name(&base);
    if let Some(a) = existing.iter().find(|a| fold_name(&a.name) == folded) {
        if a.sha256 == sha {
            return (a.clone(), false);
        }
    }
    let taken: BTreeSet<String> =
        crate::util::btree_set(existing.iter().map(|a| fold_name(&a.name)));
    let name = if taken.contains(&folded) {
        let (stem, ext) = match base.rsplit_once('.') {
            Some((s, e)) if !s.is_empty() => (s.to_string(), format!(".{e}")),
            _ => (base.clone(), String::new()),
        };
        (0u32..)
            .map(|n| {
                let suffix = if n == 0 {
                    format!(" ~{}", &sha[..6])
                } else {
                    format!(" ~{}-{n}", &sha[..6])
                };
                legacy_page_key(&format!("{stem}{suffix}{ext}"))
            })
            .find(|c| !taken.contains(&fold_name(c)))
            .unwrap_or(base)
    } else {
        base
    };
    let mime = if mime.trim().is_empty() {
        mime_for(&name)
    } else {
        mime.trim().to_ascii_lowercase()
    };
    (
        Asset {
            name,
            mime,
            sha256: sha,
            bytes: bytes.len() as u64,
            op,
            description: None,
        },
        true,
    )
}

/// Adds an attachment's bytes (content-addressed) and its record to `batch`.
pub fn put_asset(batch: &mut Batch, asset: &Asset, bytes: &[u8]) {
    batch.put(
        Store::Raw,
        format!("assets/{}", asset.sha256),
        bytes.to_vec(),
        Expect::Any,
    );
    batch.put(
        Store::Meta,
        format!("{ASSET_PREFIX}{}", asset.name),
        to_json(asset),
        Expect::Absent,
    );
}

/// Whether the note at `path` is one of the app's own documents (index.md, log.md, schema.md at
/// the vault root) rather than a person's note: it carries the mark the app writes into index.md
/// and log.md, or the vault has the app's layout (`ours`: `wiki/<kind>/` folders). Such a file
/// never becomes a source, so no page cites the app's own catalog (field case F46).
pub fn is_app_document(path: &str, text: &str, ours: bool) -> bool {
    let name = path.to_ascii_lowercase();
    if ![INDEX_MD, LOG_MD, SCHEMA_MD].contains(&name.as_str()) {
        return false;
    }
    ours || text.contains("Generated by llm-wiki") || text.contains("written by llm-wiki")
}

/// An attachment's stored name: the last path segment, made portable like a page key was before
/// stand-ins ([`legacy_page_key`]: illegal characters become spaces), so the names of stored
/// attachments do not change.
pub fn asset_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let key = legacy_page_key(base);
    if key == "untitled" && !base.contains("untitled") {
        "attachment".into()
    } else {
        key
    }
}

/// A MIME type from a file name's extension (`application/octet-stream` when unknown).
pub fn mime_for(name: &str) -> String {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "bmp" => "image/bmp",
        "avif" => "image/avif",
        "ico" => "image/x-icon",
        "pdf" => "application/pdf",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "m4a" => "audio/mp4",
        "flac" => "audio/flac",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mov" => "video/quicktime",
        "csv" => "text/csv",
        "txt" => "text/plain",
        "json" | "canvas" => "application/json",
        "html" | "htm" => "text/html",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
    .to_string()
}

/// A note of a plain Obsidian vault as a source: its title, its text, and the original kept
/// when the text is only part of the note (a drawing's text elements, whose whole note is added
/// to `batch`); `None` when the note is skipped, with the reason in `skipped`.
pub fn note_source(
    path: &str,
    data: &[u8],
    ours: bool,
    templates: TemplateNotes,
    batch: &mut Batch,
    skipped: &mut Vec<String>,
) -> Option<(String, String, Option<Artifact>)> {
    let Ok(raw) = std::str::from_utf8(data) else {
        skipped.push(format!("{path}: not UTF-8 text"));
        return None;
    };
    if is_app_document(path, raw, ours) {
        skipped.push(format!(
            "{path}: written by llm-wiki (its index, log or schema), not a note"
        ));
        return None;
    }
    let text = normalize_source_text(raw);
    if text.trim().is_empty() {
        skipped.push(format!("{path}: empty"));
        return None;
    }
    let mut title = note_title(path, &text);
    if obsidian::is_drawing(path, &text) {
        // `Drawing 2024.excalidraw.md` is the drawing "Drawing 2024".
        if let Some(stem) = title.strip_suffix(".excalidraw") {
            title = stem.to_string();
        }
    }
    let mut original = None;
    let text = match obsidian::classify(path, &title, &text) {
        NoteShape::Prose => text,
        NoteShape::Template { .. } if templates == TemplateNotes::Import => text,
        NoteShape::Template { marker } => {
            skipped.push(format!("{path}: a template (it holds {marker})"));
            return None;
        }
        NoteShape::Drawing { text: None } => {
            skipped.push(format!("{path}: an Excalidraw drawing with no text"));
            return None;
        }
        NoteShape::Drawing {
            text: Some(elements),
        } => {
            // The drawing stays whole as the source's original; only its text
            // elements are the source's text.
            let sha = sha256_hex(data);
            batch.put(
                Store::Raw,
                format!("original/{sha}"),
                data.to_vec(),
                Expect::Any,
            );
            original = Some(Artifact {
                mime: "text/markdown".into(),
                sha256: sha,
                bytes: data.len() as u64,
            });
            normalize_source_text(&elements)
        }
    };
    Some((title, text, original))
}
