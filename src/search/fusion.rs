//! Reciprocal rank fusion (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms
//! Condorcet and individual Rank Learning Methods", SIGIR 2009).
//!
//! `score(d) = Σ_lists 1 / (k + rank(d))`, ranks 1-based; a list that does not contain `d`
//! adds nothing. Only ranks matter, so BM25 scores and cosine similarities, which live on
//! unrelated scales, need no normalisation.

use serde::{Deserialize, Serialize};

/// The constant `k` of RRF: 60, the value Cormack et al. found robust across TREC collections.
/// Range `1.0..=1000.0`. Small `k` lets the first few ranks of either list dominate; large `k`
/// flattens the curve so that appearing in both lists matters more than where.
pub const RRF_K: f32 = 60.0;

/// One fused document with the ranks it had in each list (1-based) and their scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fused {
    /// The document.
    pub doc: u32,
    /// The RRF score.
    pub score: f32,
    /// `(rank, score)` in the BM25 list.
    pub bm25: Option<(u32, f32)>,
    /// `(rank, similarity)` in the vector list.
    pub vector: Option<(u32, f32)>,
}

/// Fuses a BM25 list and a vector list (each `(doc, score)`, best first) and returns the best
/// `limit`, best first. Ties go to the document with the better single rank, then the lower id.
/// `k` is clamped to `1.0..=1000.0` (NaN → [`RRF_K`]).
pub fn rrf(bm25: &[(u32, f32)], vector: &[(u32, f32)], k: f32, limit: usize) -> Vec<Fused> {
    let k = if k.is_nan() {
        RRF_K
    } else {
        k.clamp(1.0, 1000.0)
    };
    let mut out: Vec<Fused> = Vec::with_capacity(bm25.len() + vector.len());
    let mut at: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for (i, &(doc, s)) in bm25.iter().enumerate() {
        let rank = i as u32 + 1;
        at.insert(doc, out.len());
        out.push(Fused {
            doc,
            score: 1.0 / (k + rank as f32),
            bm25: Some((rank, s)),
            vector: None,
        });
    }
    for (i, &(doc, s)) in vector.iter().enumerate() {
        let rank = i as u32 + 1;
        let add = 1.0 / (k + rank as f32);
        match at.get(&doc) {
            Some(&j) => {
                out[j].score += add;
                out[j].vector = Some((rank, s));
            }
            None => out.push(Fused {
                doc,
                score: add,
                bm25: None,
                vector: Some((rank, s)),
            }),
        }
    }
    let best_rank = |f: &Fused| {
        f.bm25
            .map_or(u32::MAX, |b| b.0)
            .min(f.vector.map_or(u32::MAX, |v| v.0))
    };
    crate::util::sort_by(&mut out, &|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(best_rank(a).cmp(&best_rank(b)))
            .then(a.doc.cmp(&b.doc))
    });
    out.truncate(limit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_follow_the_formula() {
        let bm25 = [(1, 9.0), (2, 5.0), (3, 1.0)];
        let vector = [(3, 0.9), (4, 0.8)];
        let f = rrf(&bm25, &vector, 60.0, 10);
        let score = |d: u32| f.iter().find(|x| x.doc == d).unwrap().score;
        assert!((score(3) - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-7);
        assert!((score(1) - 1.0 / 61.0).abs() < 1e-7);
        // In both lists beats first in one.
        assert_eq!(f[0].doc, 3);
        assert_eq!(f[0].bm25, Some((3, 1.0)));
        assert_eq!(f[0].vector, Some((1, 0.9)));
        // 1 and 4... 1 has rank 1 in BM25, 4 rank 2 in vectors.
        assert_eq!(f.iter().map(|x| x.doc).collect::<Vec<_>>(), [3, 1, 2, 4]);
    }

    #[test]
    fn ties_and_limits() {
        // Doc 7 is first in BM25, doc 8 first in vectors: equal scores, equal best rank → lower id.
        let f = rrf(&[(7, 1.0)], &[(8, 1.0)], 60.0, 10);
        assert_eq!(f.iter().map(|x| x.doc).collect::<Vec<_>>(), [7, 8]);
        assert!(rrf(&[], &[], 60.0, 10).is_empty());
        assert_eq!(rrf(&[(1, 1.0), (2, 1.0)], &[], 60.0, 1).len(), 1);
        assert!(rrf(&[(1, 1.0)], &[], 60.0, 0).is_empty());
        // k clamps; NaN falls back to the default.
        let a = rrf(&[(1, 1.0)], &[], f32::NAN, 1);
        assert!((a[0].score - 1.0 / 61.0).abs() < 1e-7);
        let b = rrf(&[(1, 1.0)], &[], 0.0, 1);
        assert!((b[0].score - 0.5).abs() < 1e-7);
    }

    #[test]
    fn small_k_rewards_the_top_rank_large_k_rewards_agreement() {
        // Doc 1: rank 1 in BM25 only. Doc 2: rank 3 in both lists.
        let bm25 = [(1, 3.0), (5, 2.0), (2, 1.0)];
        let vector = [(6, 0.9), (7, 0.8), (2, 0.7)];
        assert_eq!(rrf(&bm25, &vector, 1.0, 1)[0].doc, 1); // 1/2 > 2/4
        assert_eq!(rrf(&bm25, &vector, 60.0, 1)[0].doc, 2); // 2/63 > 1/61
    }
}
