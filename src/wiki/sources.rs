//! Source reads of the kernel: the stored sources with their state, their texts and originals,
//! the instruction-like flags, the failure records, and re-keying a source everywhere it is
//! named (used by the ingest and import operations).
//!
//! *Invariant:* a source key is stored in Unicode NFC ([`source_key`]); a record stored under an
//! older form of the key is still found ([`Wiki::find_source`]) and moved when written again.

use std::collections::BTreeMap;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::model::{Author, FailureRecord, Page, Source, SourceFlag, SourceStatus, SourceWithText};
use crate::records::{from_json, to_json, FAILURE_PREFIX, SOURCE_FLAG_PREFIX};
use crate::storage::{Batch, Expect, Storage, Store};

use super::{OpBuilder, Wiki};

/// Adds to `batch` the [`SourceFlag`] of source `key` at `version` when it has instruction-like
/// `phrases`, else the deletion of any flag it had. Nothing else changes.
pub(crate) fn put_source_flag(batch: &mut Batch, key: &str, version: &str, phrases: Vec<String>) {
    let record = format!("{SOURCE_FLAG_PREFIX}{key}");
    if phrases.is_empty() {
        batch.delete(Store::Meta, record, Expect::Any);
    } else {
        let flag = SourceFlag {
            key: key.to_string(),
            version: version.to_string(),
            instruction_like: phrases,
        };
        batch.put(Store::Meta, record, to_json(&flag), Expect::Any);
    }
}

/// Lines of a source version ([`Wiki::source_span`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SourceSpan {
    /// The source key.
    pub key: String,
    /// Its title.
    pub title: String,
    /// The version the lines are of.
    pub version: String,
    /// True when that is the source's current version.
    pub current: bool,
    /// The 1-based inclusive lines given (the last clamped to the text).
    pub lines: (u32, u32),
    /// Lines in that version's text.
    pub total_lines: u32,
    /// The lines, joined by `\n`, verbatim.
    pub text: String,
}

/// Shows a pending source whose current version failed to compile as failed.
pub(crate) fn show_failure(
    s: &mut Source,
    failures: &std::collections::BTreeMap<String, crate::model::FailureRecord>,
) {
    if let Some(f) = failures.get(&s.key) {
        if f.version == s.version && s.status == SourceStatus::Pending {
            s.status = SourceStatus::Failed {
                reason: f.reason.clone(),
                code: f.code.clone(),
            };
        }
    }
}

/// A source key as stored: trimmed and in Unicode NFC (UAX #15), like page keys, so a file name
/// written in NFD (as macOS writes `Zu\u{308}rich.md`) and the same name in NFC are one key.
///
/// ```
/// use llm_wiki::wiki::source_key;
/// assert_eq!(source_key(" Zu\u{308}rich.md "), "Z\u{fc}rich.md");
/// ```
pub fn source_key(key: &str) -> String {
    unicode_normalization::UnicodeNormalization::nfc(key.trim()).collect()
}
impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The stored source `key` names, its storage revision and the key it is stored under: the
    /// record under [`source_key`]`(key)` (NFC), else one stored under the key's NFD form (a key
    /// kept before keys were normalised; macOS writes file names in NFD), else under `key` as
    /// given. Errors: storage errors.
    pub async fn find_source(&self, key: &str) -> Result<Option<(Source, u64, String)>> {
        let nfc = source_key(key);
        let mut forms = vec![nfc.clone()];
        for form in [
            unicode_normalization::UnicodeNormalization::nfd(nfc.as_str()).collect::<String>(),
            key.to_string(),
        ] {
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
        for form in forms {
            if let Some((s, rev)) = self.read::<Source>(Store::Sources, &form).await? {
                return Ok(Some((s, rev, form)));
            }
        }
        Ok(None)
    }

    /// Adds to `ob` what moving each source `old` to key `new` (`moves`: `(old, new)`) changes
    /// elsewhere: the claims citing it and the pages listing it among their sources (or keeping
    /// facts for it) name `new`. Each changed page gets one revision by the app.
    pub(crate) async fn rekey_source_references(
        &self,
        ob: &mut OpBuilder,
        moves: &[(String, String)],
    ) -> Result<()> {
        if moves.is_empty() {
            return Ok(());
        }
        let to: BTreeMap<&str, &str> = moves
            .iter()
            .map(|(o, n)| (o.as_str(), n.as_str()))
            .collect();
        // The source's flag moves with it.
        for (old, new) in moves {
            let record = format!("{SOURCE_FLAG_PREFIX}{old}");
            if let Some((flag, rev)) = self.read::<SourceFlag>(Store::Meta, &record).await? {
                ob.batch.delete(Store::Meta, record, Expect::Rev(rev));
                put_source_flag(&mut ob.batch, new, &flag.version, flag.instruction_like);
            }
        }
        for (id, r) in self.storage.scan(Store::Claims, "").await? {
            let mut claim: crate::model::Claim = from_json(Store::Claims, &id, &r.data)?;
            if let Some(new) = to.get(claim.source_key.as_str()) {
                claim.source_key = new.to_string();
                ob.batch
                    .put(Store::Claims, id, to_json(&claim), Expect::Rev(r.rev));
            }
        }
        let table = self.page_table().await?;
        let keys: Vec<String> = table
            .rows()
            .filter(|r| r.sources.iter().any(|s| to.contains_key(s.as_str())) || r.more_facts > 0)
            .map(|r| r.key.clone())
            .collect();
        let (op, now) = (ob.op.id, ob.op.time);
        for k in keys {
            let Some((mut page, rev)) = self.read::<Page>(Store::Pages, &k).await? else {
                continue;
            };
            let before = page.clone();
            for s in page.sources.iter_mut() {
                if let Some(new) = to.get(s.as_str()) {
                    *s = new.to_string();
                }
            }
            for m in page.more_facts.iter_mut() {
                if let Some(new) = to.get(m.source.as_str()) {
                    m.source = new.to_string();
                }
            }
            if page == before {
                continue;
            }
            page.revision += 1;
            page.updated = now;
            self.put_page_revision(&mut ob.batch, &page, Some(rev), Author::App, op, now);
            ob.op.pages.push(page.key.clone());
        }
        Ok(())
    }

    /// Every source, ordered by key. A pending source whose last compile failed shows as
    /// [`SourceStatus::Failed`] with the reason (the stored record stays pending).
    pub async fn sources(&self) -> Result<Vec<Source>> {
        let mut sources: Vec<Source> = self.read_all(Store::Sources, "").await?;
        let failures = self.compile_failures().await?;
        for s in &mut sources {
            show_failure(s, &failures);
        }
        Ok(sources)
    }

    /// The sources whose current text holds instruction-like phrases
    /// ([`crate::injection::instruction_like`]), in key order: a flag to show beside the source
    /// (the text was compiled as data, not followed). Recorded when a source is added or
    /// compiled; a full lint checks every source's text as well.
    pub async fn source_flags(&self) -> Result<Vec<SourceFlag>> {
        let mut out = Vec::new();
        for (k, r) in self.storage.scan(Store::Meta, SOURCE_FLAG_PREFIX).await? {
            let Ok(flag) = serde_json::from_slice::<SourceFlag>(&r.data) else {
                continue;
            };
            let current = self
                .read::<Source>(Store::Sources, &flag.key)
                .await?
                .is_some_and(|(s, _)| s.version == flag.version);
            if current && k.strip_prefix(SOURCE_FLAG_PREFIX) == Some(flag.key.as_str()) {
                out.push(flag);
            }
        }
        Ok(out)
    }

    /// One source with its current text, or `None`. `key` is matched in Unicode NFC, and a source
    /// stored under the NFD form of the key is found too ([`Wiki::find_source`]).
    pub async fn source(&self, key: &str) -> Result<Option<SourceWithText>> {
        let Some((mut source, _, _)) = self.find_source(key).await? else {
            return Ok(None);
        };
        show_failure(&mut source, &self.compile_failures().await?);
        let text = self.source_text(&source.version).await?;
        Ok(Some(SourceWithText { source, text }))
    }

    /// Lines `lines` (1-based, inclusive; clamped to the text) of source `key` at `version` (the
    /// current one when `None`; old versions stay readable): what a passage hit or a passage
    /// citation points at, for the source view to show. `None` when there is no such source.
    ///
    /// Errors: [`Error::InvalidInput`] for an empty or reversed range; [`Error::Corrupt`] when
    /// the version's text is missing; storage errors.
    pub async fn source_span(
        &self,
        key: &str,
        version: Option<&str>,
        lines: (u32, u32),
    ) -> Result<Option<SourceSpan>> {
        if lines.0 == 0 || lines.1 < lines.0 {
            return Err(Error::InvalidInput(format!(
                "source lines {}-{}: a 1-based, inclusive range",
                lines.0, lines.1
            )));
        }
        let Some((source, _, _)) = self.find_source(key).await? else {
            return Ok(None);
        };
        let version = version.unwrap_or(&source.version).to_string();
        let text = self.source_text(&version).await?;
        let total = text.lines().count() as u32;
        let last = lines.1.min(total);
        let span: Vec<&str> = text
            .lines()
            .skip(lines.0 as usize - 1)
            .take(last.saturating_sub(lines.0 - 1) as usize)
            .collect();
        Ok(Some(SourceSpan {
            current: version == source.version,
            key: source.key,
            title: source.title,
            version,
            lines: (lines.0, last.max(lines.0)),
            total_lines: total,
            text: span.join("\n"),
        }))
    }

    /// The text of a source version (content-addressed; old versions stay readable).
    pub async fn source_text(&self, version: &str) -> Result<String> {
        let key = format!("text/{version}");
        let r = self
            .storage
            .get(Store::Raw, &key)
            .await?
            .ok_or_else(|| Error::Corrupt {
                store: Store::Raw,
                key: key.clone(),
                message: "source text missing".into(),
            })?;
        String::from_utf8(r.data).map_err(|e| Error::Corrupt {
            store: Store::Raw,
            key,
            message: e.to_string(),
        })
    }

    /// The original bytes (e.g. clipped HTML) with this SHA-256, if kept.
    pub async fn original(&self, sha256: &str) -> Result<Option<Vec<u8>>> {
        Ok(self
            .storage
            .get(Store::Raw, &format!("original/{sha256}"))
            .await?
            .map(|r| r.data))
    }

    /// Failure records by source key.
    pub async fn compile_failures(&self) -> Result<BTreeMap<String, FailureRecord>> {
        let mut out = BTreeMap::new();
        for (k, r) in self.storage.scan(Store::Meta, FAILURE_PREFIX).await? {
            let f: FailureRecord = from_json(Store::Meta, &k, &r.data)?;
            out.insert(k[FAILURE_PREFIX.len()..].to_string(), f);
        }
        Ok(out)
    }
}
