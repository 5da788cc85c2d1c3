//! Small helpers that keep the wasm binary small.
//!
//! The standard library's sorts are generic over the comparator, so every `sort_by(|a, b| …)` call
//! site instantiates the whole sort algorithm again (about 5 KB of wasm each; 26 call sites cost
//! 143 KB before this module). These helpers put the comparator behind `dyn`, so the algorithm is
//! instantiated once per element type.

use std::cmp::Ordering;

/// Stable sort by a comparator (one instantiation per `T`).
pub fn sort_by<T>(v: &mut [T], cmp: &dyn Fn(&T, &T) -> Ordering) {
    v.sort_by(|a, b| cmp(a, b));
}

/// Stable sort by a key (one sort instantiation per `T`).
pub fn sort_by_key<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    sort_by(v, &|a, b| key(a).cmp(&key(b)));
}

/// Stable sort in natural order (one instantiation per `T`).
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, &|a, b| a.cmp(b));
}

/// Sorts and removes consecutive duplicates.
pub fn sort_dedup<T: Ord>(v: &mut Vec<T>) {
    sort(v);
    v.dedup();
}

#[cfg(test)]
mod tests {
    #[test]
    fn sorts_are_stable() {
        let mut v = vec![(2, 'a'), (1, 'b'), (2, 'c'), (1, 'd')];
        super::sort_by_key(&mut v, |x| x.0);
        assert_eq!(v, vec![(1, 'b'), (1, 'd'), (2, 'a'), (2, 'c')]);
        let mut w = vec![3, 1, 3, 2];
        super::sort_dedup(&mut w);
        assert_eq!(w, vec![1, 2, 3]);
    }
}
