//! Embedding the source passages (`search::passages`) with the pages' model, the second half of
//! [`Wiki::embed_pages`]: the passages that lack a vector of the model, grouped by source so
//! each source's text is read and cut once, embedded `batch_size` texts per call and saved per
//! call, like the pages.
//!
//! *Invariant:* a passage's vector is made from the text it was indexed from: the source version
//! its table entry names, cut by the one cutter (`crate::wiki::source_passages`), matched by
//! position; a source whose cut no longer matches its passage count is skipped, never
//! mis-assigned.

use std::collections::BTreeMap;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::{Cancel, Embedder};
use crate::model::TokenUsage;
use crate::search::passages::passage_embedding_text;
use crate::search::SearchIndex;
use crate::storage::Storage;
use crate::wiki::{source_passages, Wiki};

/// What [`Wiki::embed_passages`] did.
#[derive(Debug, Default)]
pub(crate) struct PassageEmbedding {
    /// Passages embedded and saved.
    pub(crate) embedded: usize,
    /// Embedding calls made.
    pub(crate) calls: usize,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Embeds every passage of `index` that lacks a vector of `embedder`'s model, saving after
    /// each call (an interrupted run resumes where it stopped). On a save conflict the index is
    /// read again and the run goes on from it. `dim` is the model's known dimension (0: none
    /// yet). Token usage is added to `usage`.
    ///
    /// Errors: the embedder's; storage errors; [`Error::LlmBadResponse`] when a vector matches
    /// no store (another dimension than the pages').
    pub(crate) async fn embed_passages<E: Embedder>(
        &self,
        embedder: &E,
        index: &mut SearchIndex,
        batch_size: usize,
        usage: &mut TokenUsage,
        cancel: &Cancel,
    ) -> Result<PassageEmbedding> {
        let model = embedder.model();
        let mut out = PassageEmbedding::default();
        let todo = |index: &SearchIndex| -> Vec<String> {
            let Some(p) = index.passage_index() else {
                return Vec::new();
            };
            match p.embedding_dim(&model).or(index.embedding_dim(&model)) {
                Some(dim) => index.missing_passage_embeddings(&model, dim),
                None => p.keys(),
            }
        };
        let total = todo(index).len();
        let mut rounds = 2 * total.div_ceil(batch_size) + 8;
        // Passages whose source cut no longer lines up with its table entry: not asked again.
        let mut unmatched: std::collections::HashSet<String> = Default::default();
        loop {
            cancel.check()?;
            let mut keys = todo(index);
            keys.retain(|k| !unmatched.contains(k));
            if keys.is_empty() || rounds == 0 {
                break;
            }
            rounds -= 1;
            let keys: Vec<String> = keys.into_iter().take(batch_size).collect();
            let texts = self.passage_texts(index, &keys, &mut unmatched).await?;
            if texts.is_empty() {
                continue;
            }
            let strings: Vec<String> = texts.iter().map(|(_, t)| t.clone()).collect();
            let e = embedder.embed(&strings, cancel).await?;
            out.calls += 1;
            usage.add(&e.usage);
            let items: Vec<(&str, &[f32])> = texts
                .iter()
                .map(|(k, _)| k.as_str())
                .zip(e.vectors.iter().map(Vec::as_slice))
                .collect();
            index
                .put_passage_embeddings(&model, &items)
                .map_err(|err| Error::LlmBadResponse(format!("passage embeddings: {err}")))?;
            match self.save_search_index(index).await {
                Ok(()) => out.embedded += items.len(),
                Err(Error::Conflict { .. }) => *index = self.search_index().await?,
                Err(err) => return Err(err),
            }
        }
        Ok(out)
    }

    /// The embedding texts of the passages `keys`, by key: each source's text read and cut once.
    /// Passages whose source cut does not line up with the table go to `unmatched`.
    async fn passage_texts(
        &self,
        index: &SearchIndex,
        keys: &[String],
        unmatched: &mut std::collections::HashSet<String>,
    ) -> Result<Vec<(String, String)>> {
        let mut by_source: BTreeMap<(String, String), Vec<&String>> = BTreeMap::new();
        for k in keys {
            match index.passage(k) {
                Some(m) => by_source
                    .entry((m.source.clone(), m.version.clone()))
                    .or_default()
                    .push(k),
                None => {
                    unmatched.insert(k.clone());
                }
            }
        }
        let mut out = Vec::new();
        for ((source, version), wanted) in by_source {
            let all = index.source_passage_keys(&source);
            let cuts = match self.source_text(&version).await {
                Ok(text) => source_passages(&text),
                Err(Error::Corrupt { .. }) => Vec::new(),
                Err(e) => return Err(e),
            };
            if cuts.len() != all.len() {
                unmatched.extend(all.iter().cloned());
                continue;
            }
            for (k, c) in all.iter().zip(&cuts) {
                if wanted.contains(&k) {
                    out.push((k.clone(), passage_embedding_text(&c.heading, &c.text)));
                }
            }
        }
        Ok(out)
    }
}
