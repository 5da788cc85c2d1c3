//! Querying a [`SearchIndex`]: the options, the results with their explanation, and
//! [`SearchIndex::search`], which ranks by BM25F, by vector similarity, or fuses both (RRF).
//!
//! *Invariant:* a search never fails and never panics: when vectors cannot serve, it runs on BM25
//! and [`SearchResults::status`] says why.

use serde::{Deserialize, Serialize};

use super::bm25::Bm25Explain;
use super::{fusion, EmbeddingStatus, HitKind, SearchIndex};

/// Which ranking a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// BM25F only.
    Bm25,
    /// Vector similarity only.
    Vector,
    /// Both, fused with RRF. The default.
    #[default]
    Hybrid,
}

/// A query embedding, tagged with the model that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct QueryVector {
    /// The embedding model id (the configured one).
    pub model: String,
    /// The vector (any norm; it is normalised).
    pub vector: Vec<f32>,
}

/// Options of [`SearchIndex::search`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct SearchOptions {
    /// How many hits at most. Default 10; 0 gives none; more than the pages gives all matches.
    pub k: usize,
    /// Ranking. Default hybrid.
    pub mode: SearchMode,
    /// The query's embedding, for vector and hybrid modes. Without it they fall back to BM25.
    pub query_vector: Option<QueryVector>,
    /// How many candidates each list contributes to fusion. Default 50 (at least `k`).
    pub depth: usize,
    /// Include the per-term BM25 breakdown in each hit. Default true.
    pub explain: bool,
    /// Also search the source passages: up to `k` passage hits follow the page hits (each list
    /// ranked within its own collection, best first). Default false: pages only.
    pub passages: bool,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            k: 10,
            mode: SearchMode::Hybrid,
            query_vector: None,
            depth: 50,
            explain: true,
            passages: false,
        }
    }
}

/// Why a search returned what it did (besides the hits).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum SearchStatus {
    /// The requested mode was served.
    Ok,
    /// The stored vectors belong to another model or dimension than the query's: BM25 was used.
    /// The old vectors are kept until the user confirms re-embedding.
    #[serde(rename_all = "camelCase")]
    ReembedRequired {
        /// The model of the stored vectors.
        stored_model: String,
        /// Their dimension.
        stored_dim: usize,
        /// The model of the query vector (the configured one).
        configured_model: String,
        /// Its dimension.
        configured_dim: usize,
    },
    /// Re-embedding with the query's model is running: BM25 was used until it completes.
    #[serde(rename_all = "camelCase")]
    Reembedding {
        /// The new model.
        model: String,
        /// Pages embedded so far.
        done: usize,
        /// Pages in all.
        total: usize,
    },
    /// No page has a vector yet: BM25 was used.
    NoVectors,
    /// Vector or hybrid mode without a query vector: BM25 was used.
    NoQueryVector,
    /// The query vector is zero or not finite: BM25 was used.
    NullQueryVector,
}

/// Where a hit came from and why it scored as it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct HitExplain {
    /// 1-based rank in the BM25 list.
    pub bm25_rank: Option<u32>,
    /// The BM25 score.
    pub bm25_score: Option<f32>,
    /// 1-based rank in the vector list.
    pub vector_rank: Option<u32>,
    /// Cosine similarity to the query.
    pub similarity: Option<f32>,
    /// The RRF constant used (hybrid only).
    pub rrf_k: Option<f32>,
    /// Per-term BM25 breakdown (when `explain` was asked for and the page matched BM25).
    pub bm25: Option<Bm25Explain>,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    /// The page key, or for a passage its passage key (`"{source}#L{first}-{last}"`).
    pub key: String,
    /// A page or a source passage.
    #[serde(default)]
    pub kind: HitKind,
    /// A passage's source key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A passage's source version (SHA-256 of the text it was cut from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// A passage's heading path (" › "-joined; "" before the first heading).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    /// A passage's 1-based inclusive line range in the source text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<(u32, u32)>,
    /// BM25 score, cosine similarity, or RRF score, by [`SearchResults::mode`].
    pub score: f32,
    /// Why.
    pub explain: HitExplain,
}

/// The answer of [`SearchIndex::search`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SearchResults {
    /// Best first.
    pub hits: Vec<SearchHit>,
    /// The mode actually used (BM25 when vectors could not serve).
    pub mode: SearchMode,
    /// Why a fallback happened, or `Ok`.
    pub status: SearchStatus,
}

impl SearchIndex {
    /// The collection of `kind`: the pages, or the nested passages (`None` before a source is
    /// indexed).
    fn collection(&self, kind: HitKind) -> Option<&SearchIndex> {
        match kind {
            HitKind::Page => Some(self),
            HitKind::Passage => self.passages.as_ref().map(|p| &p.index),
        }
    }

    /// `(df, N)` of `term` (one token as [`super::tokenizer::for_each_token`] emits it) in the
    /// collection of `kind`: the units holding it and the units counted, as BM25's idf counts
    /// them (`(0, 0)` for an empty collection).
    pub fn term_doc_freq(&self, kind: HitKind, term: &str) -> (u32, u32) {
        self.collection(kind)
            .map_or((0, 0), |c| (c.bm25.doc_freq(term), c.bm25.doc_count()))
    }

    /// Whether the unit `key` of `kind` (a page key, or a passage key) holds `term` (one token)
    /// in any field; false for a key not indexed.
    pub fn unit_holds(&self, kind: HitKind, key: &str, term: &str) -> bool {
        self.collection(kind)
            .and_then(|c| c.docs.id(key).map(|id| c.bm25.holds(id, term)))
            .unwrap_or(false)
    }
}

impl SearchIndex {
    /// Searches the pages, and with [`SearchOptions::passages`] the source passages too (their
    /// hits after the pages', tagged [`HitKind::Passage`] with their source, version, heading and
    /// lines).
    ///
    /// `Bm25` ranks by BM25F. `Vector` ranks by cosine similarity to `query_vector`. `Hybrid`
    /// fuses the best `depth` of each with RRF. When vectors cannot serve (no query vector, a null
    /// one, another model, a re-embed under way, no vectors yet) the search runs on BM25 and
    /// [`SearchResults::status`] says why. Never panics; an empty index or `k = 0` gives no hits.
    pub fn search(&self, query: &str, options: &SearchOptions) -> SearchResults {
        let mut results = self.search_pages(query, options);
        if options.passages {
            results
                .hits
                .extend(self.search_passages(query, options).hits);
        }
        results
    }

    /// Searches the source passages only (as [`SearchIndex::search`] does the pages): hits of
    /// kind [`HitKind::Passage`], best first; the status is that of the passages' vectors.
    pub fn search_passages(&self, query: &str, options: &SearchOptions) -> SearchResults {
        let Some(p) = self.passages.as_ref() else {
            return SearchResults {
                hits: Vec::new(),
                mode: SearchMode::Bm25,
                status: SearchStatus::Ok,
            };
        };
        let mut results = p.index.search_pages(query, options);
        for h in &mut results.hits {
            if let Some(m) = p.meta.get(&h.key) {
                h.kind = HitKind::Passage;
                h.source = Some(m.source.clone());
                h.version = Some(m.version.clone());
                h.heading = Some(m.heading.clone());
                h.lines = Some(m.lines);
            }
        }
        results
    }

    fn search_pages(&self, query: &str, options: &SearchOptions) -> SearchResults {
        let k = options.k;
        let depth = options.depth.max(k);
        let mut status = SearchStatus::Ok;
        let mut vector_hits: Option<Vec<(u32, f32)>> = None;
        if options.mode != SearchMode::Bm25 {
            match &options.query_vector {
                None => status = SearchStatus::NoQueryVector,
                Some(qv) => {
                    let dim = qv.vector.len();
                    match self.embedding_status(&qv.model, dim) {
                        EmbeddingStatus::Ready { .. } => {
                            let store = self.active.as_ref().expect("ready means active");
                            let want = if options.mode == SearchMode::Vector {
                                k
                            } else {
                                depth
                            };
                            match store.search(&qv.vector, want) {
                                Ok(h) => vector_hits = Some(h),
                                Err(_) => status = SearchStatus::NullQueryVector,
                            }
                        }
                        EmbeddingStatus::NoVectors => status = SearchStatus::NoVectors,
                        EmbeddingStatus::Reembedding { done, total } => {
                            status = SearchStatus::Reembedding {
                                model: qv.model.clone(),
                                done,
                                total,
                            }
                        }
                        EmbeddingStatus::ReembedRequired {
                            stored_model,
                            stored_dim,
                        } => {
                            status = SearchStatus::ReembedRequired {
                                stored_model,
                                stored_dim,
                                configured_model: qv.model.clone(),
                                configured_dim: dim,
                            }
                        }
                    }
                }
            }
        }
        let mode = match (options.mode, &vector_hits) {
            (SearchMode::Bm25, _) | (_, None) => SearchMode::Bm25,
            (m, Some(_)) => m,
        };
        let prepared = (mode != SearchMode::Vector).then(|| self.bm25.prepare(query));
        let bm25_hits = match &prepared {
            Some(q) => self
                .bm25
                .search_query(q, if mode == SearchMode::Hybrid { depth } else { k }),
            None => Vec::new(),
        };
        let explain_bm25 = |doc: u32| {
            prepared
                .as_ref()
                .filter(|_| options.explain)
                .and_then(|q| self.bm25.explain_query(q, doc))
        };
        let hit = |doc: u32, score: f32, explain: HitExplain| SearchHit {
            key: self.docs.key(doc).to_string(),
            kind: HitKind::Page,
            source: None,
            version: None,
            heading: None,
            lines: None,
            score,
            explain,
        };
        let hits = match mode {
            SearchMode::Bm25 => bm25_hits
                .iter()
                .enumerate()
                .map(|(i, &(doc, s))| {
                    hit(
                        doc,
                        s,
                        HitExplain {
                            bm25_rank: Some(i as u32 + 1),
                            bm25_score: Some(s),
                            vector_rank: None,
                            similarity: None,
                            rrf_k: None,
                            bm25: explain_bm25(doc),
                        },
                    )
                })
                .collect(),
            SearchMode::Vector => vector_hits
                .unwrap_or_default()
                .iter()
                .enumerate()
                .map(|(i, &(doc, s))| {
                    hit(
                        doc,
                        s,
                        HitExplain {
                            bm25_rank: None,
                            bm25_score: None,
                            vector_rank: Some(i as u32 + 1),
                            similarity: Some(s),
                            rrf_k: None,
                            bm25: None,
                        },
                    )
                })
                .collect(),
            SearchMode::Hybrid => {
                let vh = vector_hits.unwrap_or_default();
                fusion::rrf(&bm25_hits, &vh, self.config.rrf_k, k)
                    .into_iter()
                    .map(|f| {
                        hit(
                            f.doc,
                            f.score,
                            HitExplain {
                                bm25_rank: f.bm25.map(|b| b.0),
                                bm25_score: f.bm25.map(|b| b.1),
                                vector_rank: f.vector.map(|v| v.0),
                                similarity: f.vector.map(|v| v.1),
                                rrf_k: Some(self.config.rrf_k),
                                bm25: if f.bm25.is_some() {
                                    explain_bm25(f.doc)
                                } else {
                                    None
                                },
                            },
                        )
                    })
                    .collect()
            }
        };
        SearchResults { hits, mode, status }
    }
}
