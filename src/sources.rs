//! The sources operation: adding a source (ingest, with corrections and NFC re-keying) and a
//! person's page edits. An `impl Wiki` block above the kernel.
//!
//! *Invariant:* a source's text is content-addressed and never overwritten: a new version of a
//! key is a corrected source, pending compile (Decision 1); a page edit is a new revision by
//! [`Author::Human`] (Decision 5).

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::markdown::keys::unique_key;
use crate::model::{
    AddOutcome, AddSourceReport, Artifact, Author, NewSource, OperationKind, Page, PageEdit,
    PageKind, Revision, Source, SourceStatus, SUPPORTED_MIME,
};
use crate::records::{revision_key, to_json};
use crate::storage::{Batch, Expect, Storage, Store};
use crate::text::{normalize_source_text, sha256_hex};
use crate::wiki::{put_source_flag, source_key, Wiki};

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Adds a source (ingest). Same key and same version: nothing is written
    /// ([`AddOutcome::Unchanged`]). Same key, new version: a corrected source, pending compile.
    ///
    /// Errors: [`Error::UnsupportedMime`] for anything but markdown or plain text;
    /// [`Error::InvalidInput`] for empty content; storage errors (nothing written).
    pub async fn add_source(&self, input: NewSource) -> Result<AddSourceReport> {
        let mime = normalize_mime(&input.mime)?;
        let text = normalize_source_text(&input.content);
        if text.trim().is_empty() {
            return Err(Error::InvalidInput("the source is empty".into()));
        }
        let version = sha256_hex(text.as_bytes());
        let key = source_key(match (&input.key, &input.url) {
            (Some(k), _) if !k.trim().is_empty() => k,
            (_, Some(u)) if !u.trim().is_empty() => u,
            _ => "",
        });
        let key = if key.is_empty() {
            format!("sha256:{}", &version[..16])
        } else {
            key
        };
        let found = self.find_source(&key).await?;
        // A source stored earlier under another form of the key (NFD) is moved to the NFC key.
        let moved_from = found
            .as_ref()
            .map(|(_, _, k)| k.clone())
            .filter(|k| *k != key);
        let existing = found.map(|(s, rev, _)| (s, rev));
        if let (Some(old), Some((s, rev))) = (&moved_from, &existing) {
            if !s.version.is_empty() && s.version == version {
                return self.move_to_nfc_key(s, *rev, old, key, version).await;
            }
        }
        if let Some((s, _)) = &existing {
            // A legacy record without a version is always treated as changed (F34d).
            if !s.version.is_empty() && s.version == version {
                return Ok(AddSourceReport {
                    key,
                    version,
                    outcome: AddOutcome::Unchanged,
                    op: None,
                    previous_version: None,
                });
            }
        }
        let title = input
            .title
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| default_title(&text, &key));
        let outcome = if existing.is_some() {
            AddOutcome::Corrected
        } else {
            AddOutcome::Added
        };
        let verb = if existing.is_some() {
            "corrected"
        } else {
            "added"
        };
        let mut ob = self
            .begin(OperationKind::AddSource, format!("{verb}: {title}"))
            .await?;
        ob.op.sources.push(key.clone());
        if let (Some(old), Some((_, rev))) = (&moved_from, &existing) {
            ob.op.sources.insert(0, old.clone());
            ob.batch
                .delete(Store::Sources, old.clone(), Expect::Rev(*rev));
            self.rekey_source_references(&mut ob, &[(old.clone(), key.clone())])
                .await?;
        }

        ob.batch.put(
            Store::Raw,
            format!("text/{version}"),
            text.clone().into_bytes(),
            Expect::Any,
        );
        let original = put_original(&mut ob.batch, &input);
        let (previous_versions, previous_version, rev) = match &existing {
            Some((s, rev)) => {
                let mut pv = s.previous_versions.clone();
                if !s.version.is_empty() {
                    pv.push(s.version.clone());
                }
                (
                    pv,
                    Some(s.version.clone()).filter(|v| !v.is_empty()),
                    Some(*rev),
                )
            }
            None => (vec![], None, None),
        };
        let source = Source {
            key: key.clone(),
            version: version.clone(),
            title,
            url: input.url.clone().filter(|u| !u.trim().is_empty()),
            mime,
            captured_at: input.captured_at.map(|t| t as i64),
            added_at: ob.op.time,
            op: ob.op.id,
            text_bytes: text.len() as u64,
            original,
            previous_versions,
            status: SourceStatus::Pending,
            summary_page: existing.as_ref().and_then(|(s, _)| s.summary_page.clone()),
            parts: existing
                .as_ref()
                .map(|(s, _)| s.parts.clone())
                .unwrap_or_default(),
        };
        let expect = if moved_from.is_some() {
            Expect::Absent
        } else {
            Expect::from_read(rev)
        };
        ob.batch
            .put(Store::Sources, key.clone(), to_json(&source), expect);
        put_source_flag(
            &mut ob.batch,
            &key,
            &version,
            crate::injection::instruction_like(&text),
        );
        let op = self.finish(ob).await?;
        Ok(AddSourceReport {
            key,
            version,
            outcome,
            op: Some(op.id),
            previous_version,
        })
    }

    /// The part of [`Wiki::add_source`] for a source stored under another form of its key (NFD)
    /// whose text did not change: one operation that moves the record to the NFC `key` and
    /// re-keys what names it; the report says [`AddOutcome::Unchanged`].
    async fn move_to_nfc_key(
        &self,
        s: &Source,
        rev: u64,
        old: &str,
        key: String,
        version: String,
    ) -> Result<AddSourceReport> {
        let mut ob = self
            .begin(
                OperationKind::AddSource,
                format!("re-keyed: {} (Unicode NFC)", s.title),
            )
            .await?;
        ob.op.sources.push(old.to_string());
        ob.op.sources.push(key.clone());
        let moved = Source {
            key: key.clone(),
            ..s.clone()
        };
        ob.batch
            .delete(Store::Sources, old.to_string(), Expect::Rev(rev));
        ob.batch
            .put(Store::Sources, key.clone(), to_json(&moved), Expect::Absent);
        self.rekey_source_references(&mut ob, &[(old.to_string(), key.clone())])
            .await?;
        let op = self.finish(ob).await?;
        Ok(AddSourceReport {
            key,
            version,
            outcome: AddOutcome::Unchanged,
            op: Some(op.id),
            previous_version: None,
        })
    }

    /// A human edit: creates or updates a page as a new revision by [`Author::Human`], in one
    /// operation that also regenerates index.md.
    ///
    /// Errors: [`Error::InvalidInput`] (no title for a new page, unknown key),
    /// [`Error::Conflict`] when `base_revision` is stale or another writer committed first.
    pub async fn put_page(&self, edit: PageEdit) -> Result<Page> {
        // Frontmatter or fences in the body become fields; table pipes are escaped (markdown::page).
        let (edit, extra_frontmatter) = crate::markdown::page::absorb_edit(edit);
        let now = self.clock.now_ms();
        let existing = match &edit.key {
            Some(k) => Some(
                self.read::<Page>(Store::Pages, k)
                    .await?
                    .map(|(p, _)| p)
                    .ok_or_else(|| Error::NotFound(format!("page {k:?}")))?,
            ),
            None => None,
        };
        let (page, expect) = match &existing {
            Some(old) => {
                if let Some(base) = edit.base_revision {
                    if base != old.revision {
                        return Err(Error::Conflict {
                            store: Store::Pages,
                            key: old.key.clone(),
                            expected: format!("revision {base}"),
                            found: format!("revision {}", old.revision),
                        });
                    }
                }
                let mut p = old.clone();
                if let Some(t) = edit
                    .title
                    .as_deref()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                {
                    p.title = t.to_string();
                }
                if let Some(k) = edit.kind {
                    p.kind = k;
                }
                if let Some(b) = edit.body {
                    p.body = normalize_source_text(&b);
                }
                if let Some(s) = edit.summary {
                    p.summary = s.trim().to_string();
                }
                if let Some(a) = edit.aliases {
                    p.aliases = clean_list(a);
                }
                if let Some(t) = edit.tags {
                    p.tags = clean_list(
                        t.into_iter()
                            .map(|t| t.trim_start_matches('#').into())
                            .collect(),
                    );
                }
                if let Some(x) = extra_frontmatter {
                    p.extra_frontmatter = x;
                }
                p.updated = now;
                // After every revision the key has (another device's merged ones included).
                p.revision = self.next_revision_number(&p.key).await?;
                (p, Expect::Any)
            }
            None => {
                let title = edit
                    .title
                    .as_deref()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| Error::InvalidInput("a new page needs a title".into()))?
                    .to_string();
                let taken = self.page_table().await?.taken_keys();
                let key = unique_key(&title, |k| taken.contains(k));
                // A key a deleted page used keeps its history: continue its numbering.
                let revision = self.next_revision_number(&key).await?;
                let p = Page {
                    key,
                    title,
                    kind: edit.kind.unwrap_or(PageKind::Concept),
                    summary: edit.summary.unwrap_or_default().trim().to_string(),
                    aliases: clean_list(edit.aliases.unwrap_or_default()),
                    tags: clean_list(
                        edit.tags
                            .unwrap_or_default()
                            .into_iter()
                            .map(|t| t.trim_start_matches('#').into())
                            .collect(),
                    ),
                    sources: vec![],
                    created: now,
                    updated: now,
                    body: normalize_source_text(&edit.body.unwrap_or_default()),
                    revision,
                    extra_frontmatter: extra_frontmatter.unwrap_or_default(),
                    more_facts: vec![],
                };
                (p, Expect::Absent)
            }
        };
        // The page record's own storage revision guards against a concurrent writer.
        let expect = match expect {
            Expect::Absent => Expect::Absent,
            _ => Expect::from_read(
                self.storage
                    .get(Store::Pages, &page.key)
                    .await?
                    .map(|r| r.rev),
            ),
        };
        let mut ob = self
            .begin(OperationKind::HumanEdit, format!("edited: {}", page.title))
            .await?;
        ob.op.time = ob.op.time.max(now);
        ob.op.pages.push(page.key.clone());
        ob.batch
            .put(Store::Pages, page.key.clone(), to_json(&page), expect);
        let revision = Revision {
            page: page.key.clone(),
            number: page.revision,
            author: Author::Human,
            op: ob.op.id,
            time: now,
            page_state: Some(page.clone()),
        };
        ob.batch.put(
            Store::Revisions,
            revision_key(&page.key, page.revision),
            to_json(&revision),
            Expect::Absent,
        );
        self.finish(ob).await?;
        Ok(page)
    }
}

/// Adds the original bytes of `input` (e.g. the clipped HTML), content-addressed, to `batch`,
/// and returns their artifact record.
fn put_original(batch: &mut Batch, input: &NewSource) -> Option<Artifact> {
    input.original.as_ref().map(|bytes| {
        let sha = sha256_hex(bytes);
        batch.put(
            Store::Raw,
            format!("original/{sha}"),
            bytes.clone(),
            Expect::Any,
        );
        Artifact {
            mime: input
                .original_mime
                .clone()
                .unwrap_or_else(|| "text/html".into()),
            sha256: sha,
            bytes: bytes.len() as u64,
        }
    })
}

fn clean_list(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        let i = i.trim().to_string();
        if !i.is_empty() && !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

fn normalize_mime(mime: &str) -> Result<String> {
    let base = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let base = match base.as_str() {
        "text/x-markdown" | "text/md" => "text/markdown".to_string(),
        "" => "text/plain".to_string(),
        _ => base,
    };
    if SUPPORTED_MIME.contains(&base.as_str()) {
        Ok(base)
    } else {
        Err(Error::UnsupportedMime(mime.to_string()))
    }
}

/// The first ATX heading's text, else the first non-empty line (≤ 80 characters), else the key.
fn default_title(text: &str, key: &str) -> String {
    let heading = text.lines().find_map(|l| {
        let t = l.trim_start();
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
            Some(t[hashes..].trim().trim_end_matches('#').trim().to_string())
        } else {
            None
        }
    });
    let line = || {
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| l.chars().take(80).collect())
    };
    heading
        .filter(|h| !h.is_empty())
        .or_else(line)
        .unwrap_or_else(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_normalisation() {
        assert_eq!(
            normalize_mime("text/markdown; charset=utf-8").unwrap(),
            "text/markdown"
        );
        assert_eq!(normalize_mime("text/x-markdown").unwrap(), "text/markdown");
        assert_eq!(normalize_mime("TEXT/PLAIN").unwrap(), "text/plain");
        assert_eq!(
            normalize_mime("text/html"),
            Err(Error::UnsupportedMime("text/html".into()))
        );
    }

    #[test]
    fn default_titles() {
        assert_eq!(default_title("intro\n# Ownership #\n", "k"), "Ownership");
        assert_eq!(
            default_title("\n\n  first line \nsecond", "k"),
            "first line"
        );
        assert_eq!(default_title("#hashtag only", "k"), "#hashtag only");
        assert_eq!(default_title("  \n", "k"), "k");
    }
}
