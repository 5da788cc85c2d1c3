//! The source passages the search index keeps beside the pages (`search::passages`): every
//! source's current text cut with the one passage cutter ([`crate::markdown::passages::cut`] at
//! [`PASSAGE_TOKENS`] / [`MAX_PASSAGE_TOKENS`]), indexed when a commit adds, corrects, re-keys
//! or removes a source, and brought in line with the sources when the index is built or behind.
//!
//! *Invariant:* the passages indexed for a source are those of the version its record names
//! after the commit that carries them: [`source_changes`] reads the commit's own batch, so an
//! operation's passage delta is in its transaction, like its pages' delta.

use std::collections::{BTreeMap, HashMap};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::offline::{OfflineEmbedder, OFFLINE_DIMENSION, OFFLINE_MODEL};
use crate::markdown::passages::{cut, Cut, MAX_PASSAGE_TOKENS, PASSAGE_TOKENS};
use crate::model::Source;
use crate::records::from_json;
use crate::search::passages::passage_embedding_text;
use crate::search::{NewPassage, SearchIndex, SyncReport};
use crate::storage::{Batch, Storage, Store, Write};
use crate::text::TokenEstimator;

use super::Wiki;

/// Sources cut per step of [`Wiki::sync_passages`] (one BM25 merge each): bounds the texts held.
pub(crate) const SYNC_SOURCES: usize = 64;

/// What a batch does to the sources: per source key, its new record (`None`: deleted). The
/// last write of a key wins, as in the commit.
pub(crate) fn source_changes(batch: &Batch) -> Result<BTreeMap<String, Option<Source>>> {
    let mut out = BTreeMap::new();
    for w in &batch.writes {
        match w {
            Write::Put {
                store: Store::Sources,
                key,
                data,
                ..
            } => {
                let source: Source = from_json(Store::Sources, key, &data.to_vec())?;
                out.insert(key.clone(), Some(source));
            }
            Write::Delete {
                store: Store::Sources,
                key,
                ..
            } => {
                out.insert(key.clone(), None);
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The text of `version` as `batch` writes it, if it does.
fn text_in_batch(batch: &Batch, version: &str) -> Option<String> {
    let key = format!("text/{version}");
    batch.writes.iter().rev().find_map(|w| match w {
        Write::Put {
            store: Store::Raw,
            key: k,
            data,
            ..
        } if *k == key => Some(String::from_utf8_lossy(&data.to_vec()).into_owned()),
        _ => None,
    })
}

/// The passages of a source text.
pub fn source_passages(text: &str) -> Vec<Cut> {
    cut(
        text,
        PASSAGE_TOKENS,
        MAX_PASSAGE_TOKENS,
        &TokenEstimator::default(),
    )
}

pub(crate) fn new_passages(cuts: &[Cut]) -> Vec<NewPassage<'_>> {
    cuts.iter()
        .map(|c| NewPassage {
            heading: &c.heading,
            text: &c.text,
            lines: c.lines,
        })
        .collect()
}

/// Embeds with the built-in offline model the passages of `texts` (source key → its passages)
/// that lack a vector of it.
fn embed_offline(index: &mut SearchIndex, cut_sources: &HashMap<String, Vec<Cut>>) -> Result<()> {
    let missing = index.missing_passage_embeddings(OFFLINE_MODEL, OFFLINE_DIMENSION);
    if missing.is_empty() {
        return Ok(());
    }
    let embedder = OfflineEmbedder::new();
    let mut vectors: Vec<(String, Vec<f32>)> = Vec::new();
    for (source, cuts) in cut_sources {
        for (key, c) in index.source_passage_keys(source).iter().zip(cuts) {
            if missing.binary_search(key).is_ok() {
                let text = passage_embedding_text(&c.heading, &c.text);
                vectors.push((key.clone(), embedder.embed_one(&text)));
            }
        }
    }
    if vectors.is_empty() {
        return Ok(());
    }
    let items: Vec<(&str, &[f32])> = vectors
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    index
        .put_passage_embeddings(OFFLINE_MODEL, &items)
        .map_err(|e| Error::Storage(format!("search index: {e}")))?;
    Ok(())
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Applies to `index` what `batch` does to the sources ([`source_changes`]): a source whose
    /// version changed (or that is new) is cut again, a deleted one loses its passages. The text
    /// is read from the batch, else from storage. With the offline embedding (`offline`), the new
    /// passages are embedded here. Returns whether any passage changed.
    ///
    /// Errors: [`Error::Corrupt`] when a written source's text is in neither (the commit would
    /// store a source without its text); storage errors.
    pub(crate) async fn passage_delta(
        &self,
        index: &mut SearchIndex,
        batch: &Batch,
        changes: &BTreeMap<String, Option<Source>>,
        offline: bool,
    ) -> Result<bool> {
        let mut changed = false;
        let mut cut_sources = HashMap::new();
        for (key, source) in changes {
            match source {
                None => changed |= index.remove_source_passages(key) > 0,
                Some(s) if index.passage_version(key) == Some(s.version.as_str()) => {}
                Some(s) => {
                    let text = match text_in_batch(batch, &s.version) {
                        Some(t) => t,
                        None => self.source_text(&s.version).await?,
                    };
                    let cuts = source_passages(&text);
                    index.set_source_passages(key, &s.version, &new_passages(&cuts));
                    cut_sources.insert(key.clone(), cuts);
                    changed = true;
                }
            }
        }
        if offline {
            embed_offline(index, &cut_sources)?;
        }
        Ok(changed)
    }

    /// The texts of the indexed passages `keys` of `index`, in the order given: each source's
    /// text read and cut once, a passage matched to its cut by position. A key that is no
    /// indexed passage, or whose source no longer cuts into as many passages as the table holds
    /// (never expected: the cutter is deterministic), is left out.
    ///
    /// Errors: storage errors (a missing text leaves its passages out).
    pub async fn passage_texts(
        &self,
        index: &SearchIndex,
        keys: &[String],
    ) -> Result<Vec<PassageText>> {
        let mut cuts: HashMap<(String, String), Option<Vec<Cut>>> = HashMap::new();
        let mut out = Vec::new();
        for k in keys {
            let Some(meta) = index.passage(k) else {
                continue;
            };
            let id = (meta.source.clone(), meta.version.clone());
            if !cuts.contains_key(&id) {
                let cut = match self.source_text(&meta.version).await {
                    Ok(text) => Some(source_passages(&text)),
                    Err(Error::Corrupt { .. }) => None,
                    Err(e) => return Err(e),
                };
                cuts.insert(id.clone(), cut);
            }
            let all = index.source_passage_keys(&meta.source);
            let Some(Some(cut)) = cuts.get(&id) else {
                continue;
            };
            if cut.len() != all.len() {
                continue;
            }
            if let Some(i) = all.iter().position(|x| x == k) {
                out.push(PassageText {
                    key: k.clone(),
                    meta: meta.clone(),
                    text: cut[i].text.clone(),
                });
            }
        }
        Ok(out)
    }

    /// Tokenizes the passages of `index` again with this build's tokenizer, keeping their
    /// vectors ([`SearchIndex::retokenize_passages`]): each source's indexed version is read and
    /// cut again, [`SYNC_SOURCES`] at a time. A source whose text cannot be read, or no longer
    /// cuts into the passages the table holds, loses its passages (the sync that follows cuts it
    /// again). Returns how many passages were removed.
    ///
    /// Errors: storage errors.
    pub(crate) async fn retokenize_passages(&self, index: &mut SearchIndex) -> Result<usize> {
        let sources = index.passage_sources();
        let mut job = index.retokenize_passages();
        for chunk in sources.chunks(SYNC_SOURCES) {
            let mut cuts: Vec<(&str, Option<Vec<Cut>>)> = Vec::with_capacity(chunk.len());
            for (key, version) in chunk {
                let cut = match self.source_text(version).await {
                    Ok(text) => Some(source_passages(&text)),
                    Err(Error::Corrupt { .. }) => None,
                    Err(e) => return Err(e),
                };
                cuts.push((key.as_str(), cut));
            }
            let news: Vec<(&str, Option<Vec<NewPassage<'_>>>)> = cuts
                .iter()
                .map(|(k, c)| (*k, c.as_deref().map(new_passages)))
                .collect();
            job.add(news.iter().map(|(k, n)| (*k, n.as_deref())));
        }
        Ok(job.finish())
    }

    /// Brings the passages of `index` in line with every stored source: sources whose version
    /// differs from the indexed one (or that are new) are cut again, [`SYNC_SOURCES`] at a time;
    /// passages of sources that are gone are removed; unchanged sources keep their passages and
    /// vectors. A source whose text cannot be read is left without passages and counted in
    /// `unreadable`. With the offline embedding (`offline`), new passages are embedded.
    ///
    /// Errors: storage errors.
    pub(crate) async fn sync_passages(
        &self,
        index: &mut SearchIndex,
        offline: bool,
    ) -> Result<PassageSync> {
        let sources: Vec<Source> = self.read_all(Store::Sources, "").await?;
        let mut report = PassageSync::default();
        let live: std::collections::HashSet<&str> =
            sources.iter().map(|s| s.key.as_str()).collect();
        for (key, _) in index.passage_sources() {
            if !live.contains(key.as_str()) {
                report.passages.removed += index.remove_source_passages(&key);
            }
        }
        let stale: Vec<&Source> = sources
            .iter()
            .filter(|s| index.passage_version(&s.key) != Some(s.version.as_str()))
            .collect();
        for chunk in stale.chunks(SYNC_SOURCES) {
            let mut cut_sources: HashMap<String, Vec<Cut>> = HashMap::new();
            for s in chunk {
                match self.source_text(&s.version).await {
                    Ok(text) => {
                        cut_sources.insert(s.key.clone(), source_passages(&text));
                    }
                    Err(Error::Corrupt { .. }) => {
                        report.passages.removed += index.remove_source_passages(&s.key);
                        report.unreadable.push(s.key.clone());
                    }
                    Err(e) => return Err(e),
                }
            }
            let news: Vec<(&str, &str, Vec<NewPassage<'_>>)> = chunk
                .iter()
                .filter_map(|s| {
                    let cuts = cut_sources.get(&s.key)?;
                    Some((s.key.as_str(), s.version.as_str(), new_passages(cuts)))
                })
                .collect();
            let r =
                index.set_many_source_passages(news.iter().map(|(k, v, n)| (*k, *v, n.as_slice())));
            report.passages.added += r.added;
            report.passages.removed += r.removed;
            report.sources += news.len();
            drop(news);
            if offline {
                embed_offline(index, &cut_sources)?;
            }
        }
        Ok(report)
    }
}

/// The text of an indexed passage ([`Wiki::passage_texts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassageText {
    /// The passage key.
    pub key: String,
    /// Where it is.
    pub meta: crate::search::PassageMeta,
    /// Its text, as cut (a verbatim slice of the source text, trimmed).
    pub text: String,
}

/// What [`Wiki::sync_passages`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PassageSync {
    /// Sources cut again.
    pub(crate) sources: usize,
    /// Passages added and removed.
    pub(crate) passages: SyncReport,
    /// Sources whose text could not be read (left without passages).
    pub(crate) unreadable: Vec<String>,
}
