//! Bounded top-k selection of `(score, doc)` hits, shared by the BM25 index and the vector stores.
//!
//! *Invariant:* the order is total and the same everywhere: a higher score is better, equal scores
//! go to the lower doc id, and scores compare by `f32::total_cmp` (so a NaN never breaks the heap).
//! The result therefore does not depend on the order hits are offered in.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A (score, doc) pair ordered so that the *worst* hit is the heap's top.
#[derive(Clone, Copy, PartialEq)]
struct Entry(f32, u32);
impl Eq for Entry {}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        // Better = higher score, then lower doc id. BinaryHeap is a max-heap: make "worse" greater.
        o.0.total_cmp(&self.0).then(self.1.cmp(&o.1))
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Keeps the k best (score, doc) pairs.
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Entry>,
}

impl TopK {
    /// Room for `k` hits (`k = 0` keeps none).
    pub(crate) fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(4096) + 1),
        }
    }
    /// How many hits it keeps.
    pub(crate) fn k(&self) -> usize {
        self.k
    }
    /// The score a new hit must beat (ties are decided by doc id), or 0 while not full.
    pub(crate) fn threshold(&self) -> f32 {
        if self.heap.len() < self.k {
            0.0
        } else {
            self.heap.peek().map_or(0.0, |e| e.0)
        }
    }
    /// Offers a hit; true when it was kept (it is among the k best so far).
    #[inline]
    pub(crate) fn offer(&mut self, score: f32, doc: u32) -> bool {
        if self.k == 0 {
            return false;
        }
        let e = Entry(score, doc);
        if self.heap.len() < self.k {
            self.heap.push(e);
            return true;
        }
        match self.heap.peek() {
            Some(worst) if e < *worst => {
                self.heap.pop();
                self.heap.push(e);
                true
            }
            _ => false,
        }
    }
    /// The kept hits as `(doc, score)`, best first.
    pub(crate) fn into_sorted(self) -> Vec<(u32, f32)> {
        let mut v: Vec<Entry> = self.heap.into_vec();
        crate::util::sort(&mut v);
        v.into_iter().map(|e| (e.1, e.0)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::TopK;

    #[test]
    fn keeps_the_best_with_ties_to_the_lower_doc() {
        let mut top = TopK::new(3);
        for (score, doc) in [(1.0, 9), (3.0, 4), (2.0, 7), (3.0, 2), (0.5, 1), (2.0, 3)] {
            top.offer(score, doc);
        }
        assert_eq!(top.threshold(), 2.0);
        assert_eq!(top.into_sorted(), vec![(2, 3.0), (4, 3.0), (3, 2.0)]);
    }

    #[test]
    fn offer_says_whether_the_hit_was_kept() {
        let mut top = TopK::new(1);
        assert_eq!(top.threshold(), 0.0);
        assert!(top.offer(1.0, 5));
        assert!(!top.offer(1.0, 6), "a tie with a higher doc id loses");
        assert!(top.offer(1.0, 4));
        assert!(!top.offer(0.5, 1));
        let mut none = TopK::new(0);
        assert!(!none.offer(9.0, 1));
        assert!(none.into_sorted().is_empty());
    }
}
