//! Small helpers that keep the wasm binary small.
//!
//! The standard library's sorts are generic over the element type and the comparator, so every
//! `sort_by(|a, b| …)` call site instantiates the whole sort algorithm again (about 3.5 KB of wasm
//! each; 45 instantiations cost 170 KB). These helpers sort a list of indices with the comparator
//! behind `dyn` and then move the elements into place, so the algorithm is instantiated once for
//! the whole crate; only the small permutation step is generic. `BTreeMap`/`BTreeSet`'s
//! `FromIterator` sorts too (one sort and one bulk-build per type): [`btree_map`] and [`btree_set`]
//! insert one by one instead.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// The stable order of `0..n` by `cmp`: the one instantiation of the standard sort.
#[inline(never)]
fn sorted_order(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// Moves `v[order[i]]` to position `i`, following each cycle of the permutation once.
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for i in 0..v.len() {
        let mut j = i;
        while order[j] != DONE {
            let k = order[j];
            order[j] = DONE;
            if k == i {
                break;
            }
            v.swap(j, k);
            j = k;
        }
    }
}

/// Stable sort by a comparator (the sort algorithm is shared by every `T`).
pub fn sort_by<T>(v: &mut [T], cmp: &dyn Fn(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let order = sorted_order(v.len(), &|a, b| cmp(&v[a], &v[b]));
    permute(v, order);
}

/// Stable sort by a key (the sort algorithm is shared by every `T`).
pub fn sort_by_key<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    sort_by(v, &|a, b| key(a).cmp(&key(b)));
}

/// Stable sort in natural order (the sort algorithm is shared by every `T`).
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, &|a, b| a.cmp(b));
}

/// Sorts and removes consecutive duplicates.
pub fn sort_dedup<T: Ord>(v: &mut Vec<T>) {
    sort(v);
    v.dedup();
}

/// A map from pairs; a later pair replaces the value of an equal key (as `collect()` does).
pub fn btree_map<K: Ord, V>(pairs: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, V> {
    let mut map = BTreeMap::new();
    for (k, v) in pairs {
        map.insert(k, v);
    }
    map
}

/// A set from items (as `collect()` builds it).
pub fn btree_set<T: Ord>(items: impl IntoIterator<Item = T>) -> BTreeSet<T> {
    let mut set = BTreeSet::new();
    for x in items {
        set.insert(x);
    }
    set
}

/// `navigator.storage` of the current global scope (a window or a worker), if it has one: the
/// IndexedDB estimate and persistence, and the origin-private file system's root.
#[cfg(target_arch = "wasm32")]
pub fn storage_manager() -> Option<web_sys::StorageManager> {
    use wasm_bindgen::JsCast;
    let navigator = js_sys::Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
    js_sys::Reflect::get(&navigator, &"storage".into())
        .ok()?
        .dyn_into::<web_sys::StorageManager>()
        .ok()
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

    #[test]
    fn sorts_agree_with_std() {
        // Every permutation shape (cycles of all lengths, fixed points, ties) on a pseudo-random
        // sequence, compared with the standard stable sort.
        let mut seed = 12345u64;
        for n in 0..200 {
            let v: Vec<(u8, usize)> = (0..n)
                .map(|i| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (((seed >> 33) % 7) as u8, i)
                })
                .collect();
            let mut ours = v.clone();
            super::sort_by(&mut ours, &|a, b| b.0.cmp(&a.0));
            let mut std_sorted = v.clone();
            std_sorted.sort_by_key(|b| std::cmp::Reverse(b.0));
            assert_eq!(ours, std_sorted);
        }
    }

    #[test]
    fn collections_keep_the_last_value() {
        let m = super::btree_map([(1, "a"), (2, "b"), (1, "c")]);
        assert_eq!(m, [(1, "a"), (2, "b"), (1, "c")].into_iter().collect());
        let s = super::btree_set([3, 1, 3]);
        assert_eq!(s.into_iter().collect::<Vec<_>>(), vec![1, 3]);
    }
}
