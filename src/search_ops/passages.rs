//! Embedding the source passages (`search::passages`) with the pages' model, the second half of
//! [`Wiki::embed_pages`]: the passages that lack a vector of the model, grouped by source so
//! each source's text is read and cut once, embedded `batch_size` texts per call and saved per
//! call, like the pages.
//!
//! *Invariant:* a passage's vector is made from the text it was indexed from: the source version
//! its table entry names, cut by the one cutter ([`Wiki::passage_texts`]), matched by position;
//! a source whose cut no longer matches its passage count is skipped, never mis-assigned.

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::{Cancel, Embedder};
use crate::model::TokenUsage;
use crate::search::passages::passage_embedding_text;
use crate::search::SearchIndex;
use crate::storage::Storage;
use crate::wiki::Wiki;

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
    /// each call (an interrupted run resumes where it stopped). When the passages' vectors are of
    /// another model, they are re-embedded only with `confirm` (else nothing is stored). On a save conflict the index is
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
        confirm: bool,
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
            let found = self.passage_texts(index, &keys).await?;
            // A passage whose text cannot be had is not asked for again in this run.
            unmatched.extend(
                keys.iter()
                    .filter(|k| !found.iter().any(|p| &p.key == *k))
                    .cloned(),
            );
            let texts: Vec<(String, String)> = found
                .into_iter()
                .map(|p| (p.key, passage_embedding_text(&p.meta.heading, &p.text)))
                .collect();
            if texts.is_empty() {
                continue;
            }
            let strings: Vec<String> = texts.iter().map(|(_, t)| t.clone()).collect();
            let e = embedder.embed(&strings, cancel).await?;
            out.calls += 1;
            usage.add(&e.usage);
            let stored = index.passage_index().and_then(|p| p.active_model());
            if stored.is_some_and(|(m, d)| (m, d) != (model.as_str(), e.dimension))
                && index.passage_index().and_then(|p| p.embedding_dim(&model)) != Some(e.dimension)
            {
                // The passages' vectors are of another model: they are replaced only when the
                // user confirmed (F28), as the pages' are.
                if !confirm {
                    break;
                }
                index.confirm_passage_reembed(&model, e.dimension);
            }
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
}
