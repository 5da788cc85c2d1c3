//! Tokenizing a stored index again when an older tokenizer made it (Decision 13: one tokenizer
//! for indexing and querying; [`TOKENIZER_VERSION`](super::tokenizer::TOKENIZER_VERSION) says
//! which). Queries are always tokenized by this build's tokenizer, so postings an older one made
//! would miss text its tokens no longer match (a Traditional question over postings of
//! Traditional characters that were never folded). The index records the version its postings
//! were made with (`meta`, from format 3 on); [`SearchIndex::needs_retokenize`] says when they
//! must be made again, [`SearchIndex::retokenize`] does it for the pages and
//! [`SearchIndex::retokenize_passages`] for the source passages.
//!
//! *Invariant:* re-tokenizing changes postings only: doc ids, the vectors of every page and
//! passage whose text did not change and the vector graph are kept as they are (an endpoint's
//! embeddings cost the user money and time), so their records are not even written again.

use std::collections::HashSet;

use super::bm25::{Bm25Index, DocFields};
use super::passages::{passage_fields, NewPassage, Passages};
use super::tokenizer::current_version;
use super::{fields_hash, SearchIndex, SyncReport};

impl SearchIndex {
    /// The tokenizer version ([`TOKENIZER_VERSION`](super::tokenizer::TOKENIZER_VERSION)) the
    /// pages' postings were made with: this build's for an index it built, an older one for an
    /// index read from records an older build wrote (see [`SearchIndex::needs_retokenize`]).
    pub fn tokenizer_version(&self) -> u32 {
        self.tokenizer
    }

    /// True when the postings of the pages or of the source passages were made by another
    /// tokenizer version than this build's. Queries are tokenized by this build's, so such an
    /// index must be tokenized again ([`SearchIndex::retokenize`],
    /// [`SearchIndex::retokenize_passages`]) before it is searched or changed; `Wiki::search_index`
    /// does so when it opens one.
    pub fn needs_retokenize(&self) -> bool {
        let current = current_version();
        self.tokenizer != current
            || self
                .passages
                .as_ref()
                .is_some_and(|p| p.index.tokenizer != current)
    }

    /// Tokenizes every page again with this build's tokenizer, keeping the vectors: what an index
    /// an older tokenizer made ([`SearchIndex::needs_retokenize`]) needs before it is used. The
    /// index is brought in line with `pages` (every page of the wiki) as [`SearchIndex::sync`]
    /// does it — a page whose fields changed loses its vectors (they describe the old text), a
    /// new page is added, a page not given is removed — except that every page is tokenized, in
    /// one two-pass build of a new BM25 base ([`Bm25Builder`](super::bm25::Bm25Builder)). Doc
    /// ids, the other pages' vectors and the vector graph are kept; the source passages are not
    /// touched ([`SearchIndex::retokenize_passages`]).
    pub fn retokenize<'a>(
        &mut self,
        pages: impl IntoIterator<Item = (&'a str, DocFields<'a>)>,
    ) -> SyncReport {
        let mut report = SyncReport::default();
        let mut seen = HashSet::new();
        let mut docs: Vec<(u32, DocFields<'a>)> = Vec::new();
        for (key, fields) in pages {
            seen.insert(key);
            let hash = fields_hash(&fields);
            let doc = match self.docs.id(key) {
                Some(id) if self.docs.hashes[id as usize] == hash => id,
                Some(id) => {
                    report.updated += 1;
                    for s in [&mut self.active, &mut self.staging].into_iter().flatten() {
                        s.remove(id);
                    }
                    id
                }
                None => {
                    report.added += 1;
                    self.docs.insert(key)
                }
            };
            self.docs.hashes[doc as usize] = hash;
            docs.push((doc, fields));
        }
        report.removed = self.remove_missing(&seen);
        // A new base (its generation derived from the old one, so records of the two never
        // combine): every page tokenized by this build's tokenizer.
        self.bm25.build(&docs);
        self.tokenizer = current_version();
        self.dirty_meta = true;
        self.maybe_promote();
        report
    }

    /// Starts tokenizing the source passages again with this build's tokenizer (the pages':
    /// [`SearchIndex::retokenize`]), as an index an older tokenizer made needs
    /// ([`SearchIndex::needs_retokenize`]). Their postings are cleared; each source's passages
    /// come back, with the vectors they had, when [`PassageRetokenize::add`] gives them as the
    /// table holds them. Give every source of [`SearchIndex::passage_sources`], cut from the
    /// version named there, in batches of any size (one BM25 merge each, as a full build of the
    /// passages does). Nothing to do when no source has passages.
    pub fn retokenize_passages(&mut self) -> PassageRetokenize<'_> {
        let mut passages = self.passages.as_deref_mut();
        if let Some(p) = passages.as_deref_mut() {
            let mut bm25 = Bm25Index::new(p.index.bm25.params());
            bm25.base_generation = p.index.bm25.base_generation;
            // An empty base of a new generation: the postings the older tokenizer wrote never
            // combine with it, and it is saved even if no passage comes back.
            bm25.merge();
            p.index.bm25 = bm25;
            p.index.dirty_meta = true;
        }
        PassageRetokenize {
            passages,
            removed: 0,
        }
    }
}

/// Tokenizing the source passages again, keeping their vectors
/// ([`SearchIndex::retokenize_passages`]): fed every source's passages in batches
/// ([`PassageRetokenize::add`]), then [`PassageRetokenize::finish`]ed. Until then the passages'
/// BM25 holds only the passages given so far; dropped unfinished, it finishes (the passages of
/// sources not given are removed), so the index is never left half done.
#[derive(Debug)]
pub struct PassageRetokenize<'a> {
    passages: Option<&'a mut Passages>,
    removed: usize,
}

impl PassageRetokenize<'_> {
    /// Tokenizes the passages of `sources` again: per source key, the passages its indexed
    /// version cuts into (`None`: its text could not be read). Passages as the table holds them
    /// (as many, with the same headings and line ranges) are indexed again and keep their
    /// vectors; a source whose passages differ or are `None` loses its passages (a sync of the
    /// sources cuts it again). A source the table does not hold is ignored.
    pub fn add<'b>(
        &mut self,
        sources: impl IntoIterator<Item = (&'b str, Option<&'b [NewPassage<'b>]>)>,
    ) {
        let Some(p) = self.passages.as_deref_mut() else {
            return;
        };
        let mut batch: Vec<(u32, DocFields<'b>)> = Vec::new();
        for (source, given) in sources {
            let Some(entry) = p.sources.get(source) else {
                continue;
            };
            let same = given.filter(|g| {
                g.len() == entry.keys.len()
                    && entry.keys.iter().zip(g.iter()).all(|(k, n)| {
                        p.meta
                            .get(k)
                            .is_some_and(|m| m.lines == n.lines && m.heading == n.heading)
                    })
            });
            match same {
                Some(given) => {
                    for (k, n) in entry.keys.iter().zip(given) {
                        if let Some(doc) = p.index.docs.id(k) {
                            batch.push((doc, passage_fields(n)));
                        }
                    }
                }
                None => self.removed += p.remove_source(source),
            }
        }
        if !batch.is_empty() {
            p.index.bm25.upsert_many(batch);
        }
    }

    /// Ends the re-tokenizing: the passages of sources no batch gave are removed, and the
    /// passages' index records this build's tokenizer version. Returns how many passages were
    /// removed in all.
    pub fn finish(mut self) -> usize {
        self.end()
    }

    fn end(&mut self) -> usize {
        let Some(p) = self.passages.take() else {
            return self.removed;
        };
        let left: Vec<String> = p
            .sources
            .iter()
            .filter(|(_, e)| {
                e.keys
                    .iter()
                    .any(|k| p.index.docs.id(k).is_none_or(|d| !p.index.bm25.contains(d)))
            })
            .map(|(s, _)| s.clone())
            .collect();
        for s in &left {
            self.removed += p.remove_source(s);
        }
        p.index.tokenizer = current_version();
        p.index.dirty_meta = true;
        self.removed
    }
}

impl Drop for PassageRetokenize<'_> {
    fn drop(&mut self) {
        self.end();
    }
}
