//! Scoring and top-k search over a [`Bm25Index`]: query terms, the BM25F scorer, MaxScore
//! pruning (see the parent module's docs) and the per-hit explanation.
//!
//! *Invariant:* pruned search returns exactly what exhaustive evaluation returns, ties broken by
//! the lower doc id (the `maxscore_equals_exhaustive` test).

use std::collections::HashMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{unpack, Bm25Index, Bm25Params, FieldTf, IN_BASE, IN_DELTA};
use crate::search::tokenizer::for_each_token;
use crate::search::topk::TopK;

/// One term's explanation in a hit (see [`Bm25Index::explain`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct TermExplain {
    /// The query token (after NFKC + case fold).
    pub term: String,
    /// How often it was in the query.
    pub query_count: u32,
    /// Documents containing it (`df`).
    pub doc_freq: u32,
    /// `ln(1 + (N − df + 0.5) / (df + 0.5))`.
    pub idf: f32,
    /// Occurrences in this page by field: `[title, aliases, body]`.
    pub field_tf: [u32; 3],
    /// The field lengths of this page in tokens: `[title, aliases, body]`.
    pub field_len: [u32; 3],
    /// The weighted, length-normalised frequency `tf~`.
    pub pseudo_tf: f32,
    /// This term's share of the score.
    pub contribution: f32,
}

/// Why a page got its BM25 score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Bm25Explain {
    /// The sum of the contributions.
    pub score: f32,
    /// `N`, the document count used by idf.
    pub doc_count: u32,
    /// Average field lengths over live documents: `[title, aliases, body]`.
    pub avg_len: [f32; 3],
    /// The parameters.
    pub params: Bm25Params,
    /// One entry per distinct query term found in the page.
    pub terms: Vec<TermExplain>,
}

pub(super) struct Scorer {
    k1: f32,
    b: f32,
    w: [f32; 3],
    inv_avg: [f32; 3],
}

impl Scorer {
    #[inline]
    pub(super) fn pseudo_tf(&self, tf: FieldTf, len: FieldTf) -> f32 {
        let mut x = 0.0;
        for f in 0..3 {
            if tf[f] > 0 {
                let norm = 1.0 - self.b + self.b * len[f] as f32 * self.inv_avg[f];
                x += self.w[f] * tf[f] as f32 / norm.max(1e-6);
            }
        }
        x
    }
    #[inline]
    pub(super) fn saturate(&self, x: f32) -> f32 {
        if x <= 0.0 {
            0.0
        } else {
            x * (self.k1 + 1.0) / (x + self.k1)
        }
    }
}

/// A query tokenized and looked up in one index ([`Bm25Index::prepare`]). Valid for that index
/// until it changes.
#[derive(Debug, Clone)]
pub struct Bm25Query(Vec<QueryTerm>);

impl Bm25Query {
    /// True when no query term occurs in the index.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Debug, Clone)]
pub(super) struct QueryTerm {
    id: u32,
    count: u32,
    weight: f32,
    df: u32,
    idf: f32,
}

impl Bm25Index {
    pub(super) fn scorer(&self) -> Scorer {
        let avg = self.avg_len();
        Scorer {
            k1: self.params.k1,
            b: self.params.b,
            w: self.params.weights(),
            inv_avg: avg.map(|a| if a > 0.0 { 1.0 / a } else { 0.0 }),
        }
    }

    pub(super) fn compute_bounds(&mut self) {
        let scorer = self.scorer();
        let mut tfmax = vec![0f32; self.base_terms()];
        for (t, m) in tfmax.iter_mut().enumerate() {
            let (docs, tfs) = self.postings(t as u32);
            for (&d, &tf) in docs.iter().zip(tfs) {
                if !self.is_dead(d) {
                    *m = m.max(scorer.pseudo_tf(unpack(tf), self.lens[d as usize]));
                }
            }
        }
        self.base_tfmax = Rc::new(tfmax);
        self.bound_avg = self.avg_len();
    }

    /// How much larger `tf~` can be now than when the bounds were computed (≥ 1): average lengths
    /// that grew shrink every length ratio by at most `avg_now / avg_then` (derivation in the
    /// module docs of `bm25/mod.rs`).
    pub(super) fn bound_scale(&self) -> f32 {
        let now = self.avg_len();
        let mut s = 1.0f32;
        for (n, then) in now.iter().zip(self.bound_avg) {
            if then > 0.0 {
                s = s.max(n / then);
            }
        }
        s
    }

    pub(super) fn doc_count_stat(&self) -> u32 {
        self.base_doc_count + self.delta_fwd.len() as u32
    }

    pub(super) fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
        let mut counts: Vec<(u32, u32)> = Vec::new();
        for_each_token(query, |t| {
            if let Some(id) = self.dict.get(t) {
                match counts.iter_mut().find(|c| c.0 == id) {
                    Some(c) => c.1 += 1,
                    None => counts.push((id, 1)),
                }
            }
        });
        let n = self.doc_count_stat() as f32;
        counts
            .into_iter()
            .filter_map(|(id, count)| {
                let df =
                    self.postings(id).0.len() as u32 + self.delta_df.get(&id).copied().unwrap_or(0);
                if df == 0 {
                    return None;
                }
                let idf = (1.0 + (n - df as f32 + 0.5) / (df as f32 + 0.5)).ln();
                Some(QueryTerm {
                    id,
                    count,
                    weight: idf * count as f32,
                    df,
                    idf,
                })
            })
            .collect()
    }

    /// Tokenizes and looks up `query` once, for [`Bm25Index::search_query`] and
    /// [`Bm25Index::explain_query`].
    pub fn prepare(&self, query: &str) -> Bm25Query {
        Bm25Query(self.query_terms(query))
    }

    /// The `k` best documents for `query` as `(doc, score)`, best first (ties: lower doc id first).
    /// Only documents with a score above zero are returned, so fewer than `k` when fewer match;
    /// an empty query or index gives an empty list. Tokenizes the query once.
    pub fn search(&self, query: &str, k: usize) -> Vec<(u32, f32)> {
        self.search_query(&self.prepare(query), k)
    }

    /// [`Bm25Index::search`] for a prepared query (MaxScore pruning).
    pub fn search_query(&self, query: &Bm25Query, k: usize) -> Vec<(u32, f32)> {
        self.search_terms(&query.0, k, true)
    }

    /// The same ranking as [`Bm25Index::search`] without pruning: every posting is scored.
    /// For tests and benchmarks.
    pub fn search_exhaustive(&self, query: &str, k: usize) -> Vec<(u32, f32)> {
        let terms = self.query_terms(query);
        self.search_terms(&terms, k, false)
    }

    pub(super) fn search_terms(
        &self,
        terms: &[QueryTerm],
        k: usize,
        prune: bool,
    ) -> Vec<(u32, f32)> {
        if k == 0 || terms.is_empty() || self.live == 0 {
            return Vec::new();
        }
        let scorer = self.scorer();
        let mut top = TopK::new(k);
        // Delta documents: exhaustive (the delta is small by the merge policy).
        if !self.delta_fwd.is_empty() {
            let mut acc: HashMap<u32, f32> = HashMap::new();
            for q in terms {
                if let Some(list) = self.delta_inv.get(&q.id) {
                    for &(doc, tf) in list {
                        let x = scorer.pseudo_tf(unpack(tf), self.lens[doc as usize]);
                        *acc.entry(doc).or_insert(0.0) += q.weight * scorer.saturate(x);
                    }
                }
            }
            for (doc, s) in acc {
                if s > 0.0 {
                    top.offer(s, doc);
                }
            }
        }
        if prune {
            self.maxscore(terms, &scorer, &mut top);
        } else {
            let mut acc: HashMap<u32, f32> = HashMap::new();
            for q in terms {
                let (docs, tfs) = self.postings(q.id);
                for (&doc, &tf) in docs.iter().zip(tfs) {
                    if !self.is_dead(doc) {
                        let x = scorer.pseudo_tf(unpack(tf), self.lens[doc as usize]);
                        *acc.entry(doc).or_insert(0.0) += q.weight * scorer.saturate(x);
                    }
                }
            }
            for (doc, s) in acc {
                if s > 0.0 {
                    top.offer(s, doc);
                }
            }
        }
        top.into_sorted()
    }

    pub(super) fn maxscore(&self, terms: &[QueryTerm], scorer: &Scorer, top: &mut TopK) {
        struct Cursor<'a> {
            docs: &'a [u32],
            tfs: &'a [u32],
            pos: usize,
            weight: f32,
            ub: f32,
        }
        impl Cursor<'_> {
            fn doc(&self) -> u32 {
                self.docs.get(self.pos).copied().unwrap_or(u32::MAX)
            }
            /// Advances to the first posting with doc ≥ `target` (galloping search).
            fn seek(&mut self, target: u32) {
                if self.doc() >= target {
                    return;
                }
                let mut step = 1;
                let mut lo = self.pos;
                let mut hi = self.pos + 1;
                while hi < self.docs.len() && self.docs[hi] < target {
                    lo = hi;
                    hi += step;
                    step *= 2;
                }
                let hi = hi.min(self.docs.len());
                self.pos = lo + self.docs[lo..hi].partition_point(|&d| d < target);
            }
        }
        let scale = self.bound_scale();
        let mut cursors: Vec<Cursor<'_>> = terms
            .iter()
            .filter(|q| (q.id as usize) < self.base_terms())
            .map(|q| {
                let (docs, tfs) = self.postings(q.id);
                let tfmax = self.base_tfmax[q.id as usize] * scale;
                Cursor {
                    docs,
                    tfs,
                    pos: 0,
                    weight: q.weight,
                    // A little headroom absorbs float rounding between bound and score.
                    ub: q.weight * scorer.saturate(tfmax) * (1.0 + 1e-4) + 1e-6,
                }
            })
            .filter(|c| !c.docs.is_empty())
            .collect();
        if cursors.is_empty() {
            return;
        }
        crate::util::sort_by(&mut cursors, &|a, b| a.ub.total_cmp(&b.ub));
        let n = cursors.len();
        let mut prefix = vec![0f32; n];
        let mut sum = 0.0;
        for (i, c) in cursors.iter().enumerate() {
            sum += c.ub;
            prefix[i] = sum;
        }
        let mut first_essential = 0;
        let mut theta = top.threshold();
        while first_essential < n && prefix[first_essential] < theta {
            first_essential += 1;
        }
        let mut cur = cursors[first_essential..]
            .iter()
            .map(Cursor::doc)
            .min()
            .unwrap_or(u32::MAX);
        while first_essential < n && cur != u32::MAX {
            let mut next = u32::MAX;
            let dead = self.is_dead(cur);
            let len = self.lens[cur as usize];
            let mut score = 0.0f32;
            for c in &mut cursors[first_essential..] {
                if c.doc() == cur {
                    if !dead {
                        let x = scorer.pseudo_tf(unpack(c.tfs[c.pos]), len);
                        score += c.weight * scorer.saturate(x);
                    }
                    c.pos += 1;
                }
                next = next.min(c.doc());
            }
            if !dead {
                let mut i = first_essential;
                while i > 0 {
                    i -= 1;
                    if score + prefix[i] < theta {
                        break;
                    }
                    let c = &mut cursors[i];
                    c.seek(cur);
                    if c.doc() == cur {
                        let x = scorer.pseudo_tf(unpack(c.tfs[c.pos]), len);
                        score += c.weight * scorer.saturate(x);
                    }
                }
                if score > 0.0 && top.offer(score, cur) {
                    theta = top.threshold();
                    while first_essential < n && prefix[first_essential] < theta {
                        first_essential += 1;
                    }
                }
            }
            cur = next;
        }
    }

    pub(super) fn doc_terms_tf(&self, doc: u32, term: u32) -> Option<u32> {
        match self.state.get(doc as usize).copied()? {
            IN_BASE => {
                let (docs, tfs) = self.postings(term);
                docs.binary_search(&doc).ok().map(|i| tfs[i])
            }
            IN_DELTA => {
                let terms = self.delta_fwd.get(&doc)?;
                terms
                    .binary_search_by_key(&term, |p| p.0)
                    .ok()
                    .map(|i| terms[i].1)
            }
            _ => None,
        }
    }

    /// Documents holding `term` (one token as the tokenizer emits it: folded, a word or a CJK
    /// unigram or bigram), counted as idf counts them; 0 when no document does.
    pub fn doc_freq(&self, term: &str) -> u32 {
        match self.dict.get(term) {
            Some(id) => {
                self.postings(id).0.len() as u32 + self.delta_df.get(&id).copied().unwrap_or(0)
            }
            None => 0,
        }
    }

    /// `N` of the idf: the documents counted by [`Bm25Index::doc_freq`].
    pub fn doc_count(&self) -> u32 {
        self.doc_count_stat()
    }

    /// Whether `doc` holds `term` (one token, see [`Bm25Index::doc_freq`]) in any field; false
    /// for a document not indexed.
    pub fn holds(&self, doc: u32, term: &str) -> bool {
        self.dict
            .get(term)
            .is_some_and(|id| self.doc_terms_tf(doc, id).is_some())
    }

    /// Explains the score of `doc` for `query`: N, average lengths, and per query term its idf,
    /// field frequencies, `tf~` and contribution. `None` when `doc` is not indexed.
    pub fn explain(&self, query: &str, doc: u32) -> Option<Bm25Explain> {
        self.explain_query(&self.prepare(query), doc)
    }

    /// [`Bm25Index::explain`] for a prepared query.
    pub fn explain_query(&self, query: &Bm25Query, doc: u32) -> Option<Bm25Explain> {
        if !self.contains(doc) {
            return None;
        }
        let scorer = self.scorer();
        let len = self.lens[doc as usize];
        let mut out = Vec::new();
        let mut score = 0.0;
        for q in &query.0 {
            if let Some(tf) = self.doc_terms_tf(doc, q.id) {
                let tf = unpack(tf);
                let x = scorer.pseudo_tf(tf, len);
                let c = q.weight * scorer.saturate(x);
                score += c;
                out.push(TermExplain {
                    term: self.dict.term(q.id).to_string(),
                    query_count: q.count,
                    doc_freq: q.df,
                    idf: q.idf,
                    field_tf: tf,
                    field_len: len,
                    pseudo_tf: x,
                    contribution: c,
                });
            }
        }
        Some(Bm25Explain {
            score,
            doc_count: self.doc_count_stat(),
            avg_len: self.avg_len(),
            params: self.params,
            terms: out,
        })
    }
}
