//! An incremental BM25F inverted index over pages (fields: title, aliases, body).
//!
//! **Scoring** is BM25F as given by Robertson & Zaragoza, "The Probabilistic Relevance Framework:
//! BM25 and Beyond" (2009), §3.5 with one `b` for all fields:
//!
//! ```text
//! tf~(t, d) = Σ_f  w_f · tf(t, f, d) / (1 − b + b · len(f, d) / avglen(f))
//! score(q, d) = Σ_{t ∈ q}  qtf(t) · idf(t) · tf~ · (k1 + 1) / (tf~ + k1)
//! idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))          (never negative)
//! ```
//!
//! **Layout.** Documents are `u32` ids given by the caller. Terms are interned in a `TermDict`
//! (one byte arena, `u32` offsets, an open-addressing table of `u32` ids). Postings live in a
//! *base* segment stored as contiguous arrays (CSR: `starts[term]`, `docs[]`, packed `tfs[]`, sorted
//! by doc id), plus a small *delta* for documents added or changed since the last merge. Removing
//! or replacing a base document sets a bit in `base_dead`; its base postings are skipped until the
//! next merge rewrites the base (as Lucene does with deletions). A posting is 8 bytes: the doc id
//! and the three field frequencies packed in one `u32` (body 16 bits, title 8, aliases 8,
//! saturating).
//!
//! **Statistics.** `N` and `df` count base documents removed or replaced since the last merge (as
//! Lucene counts deleted documents until its segments merge); the merge policy keeps those at most
//! 1/8 of the base, and [`Bm25Index::merge`] makes them exact. `avglen(f)` is always exact: the
//! mean over live documents whose field `f` is not empty (most pages have no aliases; averaging
//! over all pages would punish the few that have some).
//!
//! **Top-k with pruning: MaxScore** (Turtle & Flood, "Query evaluation: strategies and
//! optimizations", 1995), document-at-a-time over the base postings. Each term has an upper bound
//! on its contribution (from the largest `tf~` in its postings, stored per term at merge time and
//! scaled up if average lengths have since shrunk). Terms are sorted by bound; once the k-th best
//! score θ exceeds the sum of the smallest bounds, those terms become *non-essential*: only
//! documents in the essential terms' postings are candidates, and a candidate stops being scored as
//! soon as its score plus the remaining bounds cannot reach θ. Chosen over WAND because it needs no
//! per-step pivot sorting (cheap on short queries of CJK unigrams + bigrams, where a few common
//! unigrams have long lists and small bounds — exactly the terms MaxScore skips), and over a bare
//! bounded heap because that still scores every posting of every query term. Results equal
//! exhaustive evaluation (ties broken by lower doc id); see the `maxscore_equals_exhaustive` test.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::codec::fold_words;
use super::tokenizer::for_each_token;

mod build;
mod dict;
mod persist;
mod query;

pub use build::{Bm25Builder, BuildMismatch};
pub(crate) use dict::TermDict;
use dict::EMPTY;
pub(crate) use persist::Bm25BaseSnapshot;
pub use query::{Bm25Explain, Bm25Query, TermExplain};

/// The fields of a document, in the order of [`FieldTf`] arrays.
pub const FIELD_NAMES: [&str; 3] = ["title", "aliases", "body"];

/// BM25F parameters. Style: pagefind's `RankingWeights` — every knob has a range and both extremes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct Bm25Params {
    /// Term-frequency saturation `k1`. Range `0.0..=3.0`; default 1.2. At 0 a term counts once
    /// however often it occurs (binary relevance); towards 3 each extra occurrence keeps adding
    /// almost linearly, favouring long, repetitive pages.
    pub k1: f32,
    /// Length normalisation `b`. Range `0.0..=1.0`; default 0.75. At 0 page length is ignored (long
    /// pages win by sheer size); at 1 term frequency is divided by the page's length relative to
    /// the average, fully (short pages that mention a term once rank high).
    pub b: f32,
    /// Weight of a title occurrence relative to the body. Range `0.0..=10.0`; default 3.0. At 0
    /// titles are not searched; at 10 a title match outranks nearly any body text.
    pub title_weight: f32,
    /// Weight of an alias occurrence. Range `0.0..=10.0`; default 2.0 (an alias is another title,
    /// but less certain). At 0 aliases are not searched.
    pub alias_weight: f32,
    /// Weight of a body occurrence. Range `0.0..=10.0`; default 1.0. At 0 only titles and aliases
    /// are searched.
    pub body_weight: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params {
            k1: 1.2,
            b: 0.75,
            title_weight: 3.0,
            alias_weight: 2.0,
            body_weight: 1.0,
        }
    }
}

impl Bm25Params {
    /// The parameters clamped into their documented ranges; NaN becomes the default.
    pub fn clamped(self) -> Self {
        let d = Bm25Params::default();
        let c = |v: f32, lo: f32, hi: f32, def: f32| if v.is_nan() { def } else { v.clamp(lo, hi) };
        Bm25Params {
            k1: c(self.k1, 0.0, 3.0, d.k1),
            b: c(self.b, 0.0, 1.0, d.b),
            title_weight: c(self.title_weight, 0.0, 10.0, d.title_weight),
            alias_weight: c(self.alias_weight, 0.0, 10.0, d.alias_weight),
            body_weight: c(self.body_weight, 0.0, 10.0, d.body_weight),
        }
    }

    fn weights(&self) -> [f32; 3] {
        [self.title_weight, self.alias_weight, self.body_weight]
    }
}

/// The text of one document, by field.
#[derive(Debug, Clone, Copy, Default)]
pub struct DocFields<'a> {
    /// The page title.
    pub title: &'a str,
    /// Other names of the page.
    pub aliases: &'a [String],
    /// The markdown body.
    pub body: &'a str,
}

/// Per-field term frequencies `[title, aliases, body]`.
pub type FieldTf = [u32; 3];

fn pack(tf: FieldTf) -> u32 {
    let t = tf[0].min(0xff);
    let a = tf[1].min(0xff);
    let b = tf[2].min(0xffff);
    b | (t << 16) | (a << 24)
}

fn unpack(p: u32) -> FieldTf {
    [(p >> 16) & 0xff, p >> 24, p & 0xffff]
}

/// Calls `f(field, token)` for every token of `fields`, field by field in [`FieldTf`] order
/// (title, each alias, body): the one definition of what a document's fields contribute.
fn for_each_field_token(fields: &DocFields<'_>, mut f: impl FnMut(usize, &str)) {
    for_each_token(fields.title, |t| f(0, t));
    for a in fields.aliases {
        for_each_token(a, |t| f(1, t));
    }
    for_each_token(fields.body, |t| f(2, t));
}

const ABSENT: u8 = 0;
const IN_BASE: u8 = 1;
const IN_DELTA: u8 = 2;

/// Merge when the delta and the dead base documents exceed this many…
const MERGE_MIN_DOCS: usize = 256;
/// …and this fraction (1/n) of the base.
const MERGE_BASE_FRACTION: usize = 8;

/// An incremental BM25F index (see the module docs for the algorithm and layout).
#[derive(Debug, Clone, Default)]
pub struct Bm25Index {
    params: Bm25Params,
    dict: TermDict,
    // Base segment (CSR over term ids < base_terms). Never changed in place, only replaced: the
    // arrays are shared (`Rc`) with the snapshots the base record is written from.
    base_starts: Rc<Vec<u32>>,
    base_docs: Rc<Vec<u32>>,
    base_tfs: Rc<Vec<u32>>,
    base_doc_count: u32,
    /// Largest `tf~` per base term, computed with `bound_avg`.
    base_tfmax: Rc<Vec<f32>>,
    bound_avg: [f32; 3],
    /// Bit per doc id: ignore this id's base postings.
    base_dead: Vec<u64>,
    dead_count: u32,
    // Delta segment.
    delta_fwd: BTreeMap<u32, Vec<(u32, u32)>>,
    delta_inv: HashMap<u32, Vec<(u32, u32)>>,
    delta_df: HashMap<u32, u32>,
    // Per doc id.
    lens: Vec<FieldTf>,
    state: Vec<u8>,
    live: u32,
    len_sum: [u64; 3],
    /// Live documents with a non-empty field, per field (the denominators of the averages).
    field_docs: [u32; 3],
    /// The base arrays changed since the last `mark_persisted`.
    pub(crate) dirty_base: bool,
    /// The delta (or dead set) changed since the last `mark_persisted`.
    pub(crate) dirty_delta: bool,
    /// A fingerprint of the base, renewed on every merge; ties the delta record to its base.
    pub(crate) base_generation: u64,
}

impl Bm25Index {
    /// An empty index with `params` (clamped into range).
    pub fn new(params: Bm25Params) -> Self {
        Bm25Index {
            params: params.clamped(),
            ..Default::default()
        }
    }

    /// The parameters in use.
    pub fn params(&self) -> Bm25Params {
        self.params
    }

    /// Changes the parameters (clamped). Recomputes the per-term bounds: O(postings).
    pub fn set_params(&mut self, params: Bm25Params) {
        self.params = params.clamped();
        self.compute_bounds();
        self.dirty_base = true;
    }

    /// Number of live documents.
    pub fn len(&self) -> usize {
        self.live as usize
    }

    /// True when no document is indexed.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// True when `doc` is indexed.
    pub fn contains(&self, doc: u32) -> bool {
        self.state.get(doc as usize).is_some_and(|&s| s != ABSENT)
    }

    /// Distinct terms in the dictionary (including terms only removed documents used, until the
    /// next merge).
    pub fn term_count(&self) -> usize {
        self.dict.len()
    }

    /// Documents in the delta, and base documents removed or replaced since the last merge.
    pub fn pending_merge(&self) -> (usize, usize) {
        (self.delta_fwd.len(), self.dead_count as usize)
    }

    fn is_dead(&self, doc: u32) -> bool {
        self.base_dead
            .get(doc as usize / 64)
            .is_some_and(|w| w & (1 << (doc % 64)) != 0)
    }

    fn set_dead(&mut self, doc: u32) {
        let w = doc as usize / 64;
        if self.base_dead.len() <= w {
            self.base_dead.resize(w + 1, 0);
        }
        self.base_dead[w] |= 1 << (doc % 64);
        self.dead_count += 1;
    }

    fn ensure_doc(&mut self, doc: u32) {
        let n = doc as usize + 1;
        if self.state.len() < n {
            self.state.resize(n, ABSENT);
            self.lens.resize(n, [0; 3]);
        }
    }

    /// Tokenizes a document into sorted `(term id, packed tf)` pairs and field lengths.
    fn analyse(&mut self, fields: &DocFields<'_>) -> (Vec<(u32, u32)>, FieldTf) {
        let mut counts: HashMap<u32, FieldTf> = HashMap::new();
        let mut lens = [0u32; 3];
        let dict = &mut self.dict;
        for_each_field_token(fields, |f, t| {
            let id = dict.intern(t);
            counts.entry(id).or_insert([0; 3])[f] += 1;
            lens[f] += 1;
        });
        let mut terms: Vec<(u32, u32)> = counts.into_iter().map(|(t, tf)| (t, pack(tf))).collect();
        crate::util::sort_by_key(&mut terms, |p| p.0);
        (terms, lens)
    }

    fn detach(&mut self, doc: u32) {
        match self.state.get(doc as usize).copied().unwrap_or(ABSENT) {
            ABSENT => return,
            IN_BASE => {
                self.set_dead(doc);
            }
            _ => {
                if let Some(terms) = self.delta_fwd.remove(&doc) {
                    for (t, _) in terms {
                        if let Some(list) = self.delta_inv.get_mut(&t) {
                            if let Some(i) = list.iter().position(|p| p.0 == doc) {
                                list.swap_remove(i);
                            }
                            if list.is_empty() {
                                self.delta_inv.remove(&t);
                            }
                        }
                        if let Some(df) = self.delta_df.get_mut(&t) {
                            *df -= 1;
                            if *df == 0 {
                                self.delta_df.remove(&t);
                            }
                        }
                    }
                }
            }
        }
        let l = self.lens[doc as usize];
        self.count_lens(l, false);
        self.lens[doc as usize] = [0; 3];
        self.state[doc as usize] = ABSENT;
        self.live -= 1;
        self.dirty_delta = true;
    }

    fn attach(&mut self, doc: u32, terms: Vec<(u32, u32)>, lens: FieldTf, inverted: bool) {
        self.ensure_doc(doc);
        for &(t, tf) in &terms {
            if inverted {
                self.delta_inv.entry(t).or_default().push((doc, tf));
            }
            *self.delta_df.entry(t).or_insert(0) += 1;
        }
        self.delta_fwd.insert(doc, terms);
        self.lens[doc as usize] = lens;
        self.count_lens(lens, true);
        self.state[doc as usize] = IN_DELTA;
        self.live += 1;
        self.dirty_delta = true;
    }

    /// Indexes (or re-indexes) document `doc`. Tokenizes each field once; merges the delta into
    /// the base when the merge policy says so (amortised O(postings)).
    pub fn upsert(&mut self, doc: u32, fields: &DocFields<'_>) {
        self.detach(doc);
        let (terms, lens) = self.analyse(fields);
        self.attach(doc, terms, lens, true);
        self.maybe_merge();
    }

    /// Removes `doc`; returns whether it was indexed.
    pub fn remove(&mut self, doc: u32) -> bool {
        let was = self.contains(doc);
        self.detach(doc);
        self.maybe_merge();
        was
    }

    /// Indexes many documents and merges once at the end: the fast path for a full (re)build.
    /// When a document id occurs more than once, its last fields win.
    ///
    /// On an index with no live documents this is [`Bm25Index::build`] (two passes, no
    /// intermediate postings); otherwise the documents go through the delta and one merge.
    pub fn upsert_many<'a>(&mut self, docs: impl IntoIterator<Item = (u32, DocFields<'a>)>) {
        if self.live == 0 {
            let docs: Vec<(u32, DocFields<'a>)> = docs.into_iter().collect();
            self.build(&docs);
            return;
        }
        self.upsert_through_delta(docs);
    }

    /// Every document through the delta, then one merge.
    fn upsert_through_delta<'a>(&mut self, docs: impl IntoIterator<Item = (u32, DocFields<'a>)>) {
        for (doc, fields) in docs {
            self.detach(doc);
            let (terms, lens) = self.analyse(&fields);
            self.attach(doc, terms, lens, false);
        }
        self.merge();
    }

    /// Builds the base from scratch in two passes over `docs`, replacing whatever the index held
    /// (a [`Bm25Builder`] fed with every document twice). When a doc id occurs more than once,
    /// its last fields win.
    pub fn build(&mut self, docs: &[(u32, DocFields<'_>)]) {
        // The last occurrence of each doc id, in doc id order.
        let mut order: Vec<u32> = (0..docs.len() as u32).collect();
        crate::util::sort_by_key(&mut order, |&i| (docs[i as usize].0, u32::MAX - i));
        order.dedup_by_key(|i| docs[*i as usize].0);
        let mut b = Bm25Builder::new(self.params, self.base_generation);
        for &i in &order {
            let (doc, fields) = &docs[i as usize];
            // Strictly increasing by construction.
            let _ = b.count(*doc, fields);
        }
        b.start_fill();
        for &i in &order {
            let (doc, fields) = &docs[i as usize];
            let _ = b.fill(*doc, fields);
        }
        match b.finish() {
            Ok(index) => *self = index,
            // Unreachable: both passes saw the same documents. Index them the slow way.
            Err(_) => {
                let generation = self.base_generation;
                *self = Bm25Index::new(self.params);
                self.base_generation = generation;
                self.upsert_through_delta(order.iter().map(|&i| docs[i as usize]));
            }
        }
    }

    fn maybe_merge(&mut self) {
        let pending = self.delta_fwd.len() + self.dead_count as usize;
        if pending > MERGE_MIN_DOCS.max(self.base_doc_count as usize / MERGE_BASE_FRACTION) {
            self.merge();
        }
    }

    fn base_terms(&self) -> usize {
        self.base_starts.len().saturating_sub(1)
    }

    fn postings(&self, term: u32) -> (&[u32], &[u32]) {
        let t = term as usize;
        if t + 1 >= self.base_starts.len() {
            return (&[], &[]);
        }
        let (s, e) = (
            self.base_starts[t] as usize,
            self.base_starts[t + 1] as usize,
        );
        (&self.base_docs[s..e], &self.base_tfs[s..e])
    }

    /// Rewrites the base from its live postings and the delta, drops terms no live document uses,
    /// and recomputes the per-term bounds. Afterwards `N` and `df` are exact. O(postings).
    pub fn merge(&mut self) {
        let n_terms = self.dict.len();
        let mut counts = vec![0u32; n_terms];
        for (t, c) in counts.iter_mut().enumerate().take(self.base_terms()) {
            let (docs, _) = self.postings(t as u32);
            *c = docs.iter().filter(|&&d| !self.is_dead(d)).count() as u32;
        }
        for terms in self.delta_fwd.values() {
            for &(t, _) in terms {
                counts[t as usize] += 1;
            }
        }
        // Keep used terms, in their old order.
        let mut remap = vec![EMPTY; n_terms];
        let mut bytes = Vec::with_capacity(self.dict.bytes.len());
        let mut ends = Vec::new();
        let mut starts = Vec::with_capacity(n_terms + 1);
        starts.push(0u32);
        let mut total = 0u32;
        for (old, &c) in counts.iter().enumerate() {
            if c > 0 {
                remap[old] = ends.len() as u32;
                bytes.extend_from_slice(self.dict.term(old as u32).as_bytes());
                ends.push(bytes.len() as u32);
                total += c;
                starts.push(total);
            }
        }
        let kept = ends.len();
        let mut fill: Vec<u32> = starts[..kept].to_vec();
        let mut docs = vec![0u32; total as usize];
        let mut tfs = vec![0u32; total as usize];
        for (old, &new) in remap.iter().enumerate().take(self.base_terms()) {
            if new == EMPTY {
                continue;
            }
            let (d, f) = self.postings(old as u32);
            for (&doc, &tf) in d.iter().zip(f) {
                if !self.is_dead(doc) {
                    let at = &mut fill[new as usize];
                    docs[*at as usize] = doc;
                    tfs[*at as usize] = tf;
                    *at += 1;
                }
            }
        }
        let base_filled: Vec<u32> = fill.clone();
        for (&doc, terms) in &self.delta_fwd {
            for &(t, tf) in terms {
                let at = &mut fill[remap[t as usize] as usize];
                docs[*at as usize] = doc;
                tfs[*at as usize] = tf;
                *at += 1;
            }
        }
        // Base postings and delta postings are each sorted by doc; interleave where both exist.
        for t in 0..kept {
            let (s, m, e) = (
                starts[t] as usize,
                base_filled[t] as usize,
                starts[t + 1] as usize,
            );
            if m > s && m < e && docs[m - 1] > docs[m] {
                let mut pairs: Vec<(u32, u32)> = docs[s..e]
                    .iter()
                    .copied()
                    .zip(tfs[s..e].iter().copied())
                    .collect();
                crate::util::sort_by_key(&mut pairs, |p| p.0);
                for (i, (d, f)) in pairs.into_iter().enumerate() {
                    docs[s + i] = d;
                    tfs[s + i] = f;
                }
            }
        }
        self.dict = TermDict::from_parts(bytes, ends).unwrap_or_default();
        self.base_starts = Rc::new(starts);
        self.base_docs = Rc::new(docs);
        self.base_tfs = Rc::new(tfs);
        for s in self.state.iter_mut() {
            if *s == IN_DELTA {
                *s = IN_BASE;
            }
        }
        self.base_doc_count = self.live;
        self.base_dead.clear();
        self.dead_count = 0;
        self.delta_fwd.clear();
        self.delta_inv.clear();
        self.delta_df.clear();
        self.finish_base();
    }

    /// After the base arrays were rewritten: a new generation, fresh bounds, both records dirty.
    fn finish_base(&mut self) {
        // The generation is a fingerprint of the new base, so that records of two different
        // histories never pass for one another.
        self.base_generation = fold_words(
            self.base_generation ^ 0xb25,
            self.base_docs
                .iter()
                .chain(self.base_tfs.iter())
                .chain(self.base_starts.iter())
                .copied()
                .chain(self.dict.bytes.iter().map(|&b| u32::from(b))),
        );
        self.compute_bounds();
        self.dirty_base = true;
        self.dirty_delta = true;
    }

    fn count_lens(&mut self, l: FieldTf, add: bool) {
        for (f, &len) in l.iter().enumerate() {
            if add {
                self.len_sum[f] += u64::from(len);
                self.field_docs[f] += u32::from(len > 0);
            } else {
                self.len_sum[f] -= u64::from(len);
                self.field_docs[f] -= u32::from(len > 0);
            }
        }
    }

    /// Average length of each field over the live documents where it is not empty (most pages
    /// have no aliases; averaging over all pages would punish the few that have some).
    fn avg_len(&self) -> [f32; 3] {
        [0, 1, 2].map(|f| {
            if self.field_docs[f] == 0 {
                0.0
            } else {
                (self.len_sum[f] as f64 / f64::from(self.field_docs[f])) as f32
            }
        })
    }

    /// Bytes of heap memory held (capacities), for benchmarks.
    pub fn heap_bytes(&self) -> usize {
        let delta: usize = self
            .delta_fwd
            .values()
            .map(|v| 8 * v.capacity() + 48)
            .sum::<usize>()
            + self
                .delta_inv
                .values()
                .map(|v| 8 * v.capacity() + 40)
                .sum::<usize>()
            + 16 * self.delta_df.capacity();
        self.dict.heap_bytes()
            + 4 * (self.base_starts.capacity()
                + self.base_docs.capacity()
                + self.base_tfs.capacity()
                + self.base_tfmax.capacity())
            + 8 * self.base_dead.capacity()
            + 12 * self.lens.capacity()
            + self.state.capacity()
            + delta
    }

    /// Doc ids of live documents.
    pub fn docs(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.state.len() as u32).filter(|&d| self.state[d as usize] != ABSENT)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::persist::read_postings;
    use super::*;
    use crate::search::codec::{Reader, Writer};

    fn body(text: &str) -> DocFields<'_> {
        DocFields {
            title: "",
            aliases: &[],
            body: text,
        }
    }

    fn ids(hits: &[(u32, f32)]) -> Vec<u32> {
        hits.iter().map(|h| h.0).collect()
    }

    #[test]
    fn pack_saturates_each_field() {
        assert_eq!(unpack(pack([3, 4, 5])), [3, 4, 5]);
        assert_eq!(unpack(pack([300, 1000, 70000])), [255, 255, 65535]);
    }

    #[test]
    fn dictionary_interns_and_survives_growth() {
        let mut d = TermDict::default();
        let ids: Vec<u32> = (0..1000).map(|i| d.intern(&format!("t{i}"))).collect();
        assert_eq!(ids, (0..1000).collect::<Vec<_>>());
        assert_eq!(d.intern("t5"), 5);
        assert_eq!(d.get("t999"), Some(999));
        assert_eq!(d.get("nope"), None);
        assert_eq!(d.term(42), "t42");
    }

    #[test]
    fn varint_postings_decode_and_refuse_bad_blocks() {
        // (offsets, postings, list lengths, doc-id gaps, packed tfs) as `write` lays them out.
        let block = |offsets: u32, postings: u32, lens: &[u32], gaps: &[u32], tfs: &[u32]| {
            let mut w = Writer::default();
            w.u32(offsets);
            w.u32(postings);
            for part in [lens, gaps, tfs] {
                let mut b = Writer::default();
                part.iter().for_each(|&x| b.varint(x));
                w.bytes(&b.buf);
            }
            w.buf
        };
        let read = |b: &[u8]| read_postings(&mut Reader::new(b));
        // Two terms: docs [3, 200, 70000] and [0]; tfs with title bits (3-byte varints).
        let ok = block(
            3,
            4,
            &[3, 1],
            &[3, 197, 69_800, 0],
            &[1, 2, pack([1, 0, 1]), 5],
        );
        let (starts, docs, tfs) = read(&ok).unwrap();
        assert_eq!(starts, [0, 3, 4]);
        assert_eq!(docs, [3, 200, 70_000, 0]);
        assert_eq!(tfs, [1, 2, pack([1, 0, 1]), 5]);
        assert_eq!(
            read(&block(0, 0, &[], &[], &[])).unwrap(),
            Default::default()
        );
        let refused = |b: Vec<u8>, why: &str| {
            let e = read(&b).unwrap_err().0;
            assert!(e.contains(why), "{e} (expected {why})");
        };
        // A gap of 0 (the same doc twice), a doc id past u32::MAX.
        refused(block(2, 2, &[2], &[5, 0], &[1, 1]), "strictly increasing");
        refused(block(2, 2, &[2], &[u32::MAX, 1], &[1, 1]), "above u32::MAX");
        // Lengths that do not add up to the postings, or overflow.
        refused(block(3, 2, &[1, 2], &[1, 1], &[1, 1]), "do not cover");
        refused(
            block(3, 2, &[u32::MAX, 2], &[1, 1], &[1, 1]),
            "do not cover",
        );
        // Counts larger than their blocks could hold (nothing is allocated for them).
        refused(block(2, 1_000_000, &[1], &[1], &[1]), "exceed");
        refused(block(1_000, 1, &[1], &[1], &[1]), "exceed");
        // Bytes left over in a block; postings without offsets; a truncated block.
        refused(block(2, 1, &[1], &[1, 7], &[1]), "trailing");
        refused(block(0, 1, &[], &[1], &[1]), "without offsets");
        let mut cut = ok.clone();
        cut.truncate(cut.len() - 1);
        assert!(read(&cut).is_err());
    }

    #[test]
    fn a_decoded_dictionary_is_checked() {
        let mut d = TermDict::default();
        for t in ["明月", "moon", "月"] {
            d.intern(t);
        }
        let back = TermDict::from_parts(d.bytes.clone(), d.ends.clone()).unwrap();
        assert_eq!(
            (
                back.get("明月"),
                back.get("moon"),
                back.get("月"),
                back.get("明")
            ),
            (Some(0), Some(1), Some(2), None)
        );
        // The same term twice, a boundary inside a character, trailing bytes: all refused.
        let dup = TermDict::from_parts(b"abab".to_vec(), vec![2, 4]);
        assert_eq!(dup.unwrap_err().0, "duplicate term in dictionary");
        assert!(TermDict::from_parts("明月".as_bytes().to_vec(), vec![1, 6]).is_err());
        assert!(TermDict::from_parts(b"abc".to_vec(), vec![2]).is_err());
    }

    #[test]
    fn bm25_matches_the_formula() {
        // Three documents; check one score by hand.
        let mut idx = Bm25Index::new(Bm25Params::default());
        idx.upsert(0, &body("apple banana apple"));
        idx.upsert(1, &body("banana cherry"));
        idx.upsert(2, &body("cherry date elderberry fig"));
        let hits = idx.search("apple", 10);
        assert_eq!(ids(&hits), [0]);
        let (n, df) = (3.0f32, 1.0f32);
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let avg = (3.0 + 2.0 + 4.0) / 3.0; // every document has a body
        let tf = 2.0 / (1.0 - 0.75 + 0.75 * 3.0 / avg);
        let expected = idf * tf * 2.2 / (tf + 1.2);
        assert!(
            (hits[0].1 - expected).abs() < 1e-5,
            "{} vs {expected}",
            hits[0].1
        );
        let ex = idx.explain("apple", 0).unwrap();
        assert_eq!(ex.terms.len(), 1);
        assert_eq!(ex.terms[0].field_tf, [0, 0, 2]);
        assert!((ex.score - hits[0].1).abs() < 1e-6);
        assert!((ex.terms[0].idf - idf).abs() < 1e-6);
    }

    #[test]
    fn title_and_aliases_are_boosted() {
        let mut idx = Bm25Index::new(Bm25Params::default());
        let aliases = vec!["Rust language".to_string()];
        idx.upsert(
            0,
            &DocFields {
                title: "Cargo",
                aliases: &[],
                body: "Rust build tool",
            },
        );
        idx.upsert(
            1,
            &DocFields {
                title: "Rust",
                aliases: &[],
                body: "A systems language.",
            },
        );
        idx.upsert(
            2,
            &DocFields {
                title: "Ferris",
                aliases: &aliases,
                body: "The crab.",
            },
        );
        assert_eq!(ids(&idx.search("rust", 10)), [1, 2, 0]);
        // With title and alias weights at 0, only the body counts.
        idx.set_params(Bm25Params {
            title_weight: 0.0,
            alias_weight: 0.0,
            ..Bm25Params::default()
        });
        assert_eq!(ids(&idx.search("rust", 10)), [0]);
    }

    #[test]
    fn update_and_remove_without_rebuild() {
        let mut idx = Bm25Index::new(Bm25Params::default());
        idx.upsert_many((0..20u32).map(|i| {
            (
                i,
                body(if i % 2 == 0 {
                    "even number"
                } else {
                    "odd number"
                }),
            )
        }));
        assert_eq!(idx.pending_merge(), (0, 0));
        assert_eq!(idx.search("even", 100).len(), 10);
        idx.upsert(4, &body("now odd"));
        idx.remove(6);
        assert_eq!(idx.pending_merge(), (1, 2));
        let even = ids(&idx.search("even", 100));
        assert_eq!(even, [0, 2, 8, 10, 12, 14, 16, 18]);
        assert!(ids(&idx.search("odd", 100)).contains(&4));
        assert!(idx.search("now", 10).iter().all(|h| h.0 == 4));
        assert_eq!(idx.len(), 19);
        idx.merge();
        assert_eq!(idx.pending_merge(), (0, 0));
        assert_eq!(ids(&idx.search("even", 100)), even);
        assert!(!idx.remove(6));
        assert!(idx.remove(4));
        assert!(idx.search("now", 10).is_empty());
        // The word only doc 4 used is gone from the dictionary after a merge.
        idx.merge();
        assert_eq!(idx.dict.get("now"), None);
    }

    #[test]
    fn degenerate_queries_and_k() {
        let mut idx = Bm25Index::new(Bm25Params::default());
        assert!(idx.search("anything", 10).is_empty());
        idx.upsert(0, &body("alpha beta"));
        assert!(idx.search("", 10).is_empty());
        assert!(idx.search("。。", 10).is_empty());
        assert!(idx.search("alpha", 0).is_empty());
        assert_eq!(idx.search("alpha", 1000).len(), 1);
        assert!(idx.search("gamma", 10).is_empty());
        assert!(idx.explain("alpha", 7).is_none());
    }

    /// Deterministic pseudo-random numbers (xorshift64*), so the test corpus is reproducible.
    pub(crate) struct Rng(pub(crate) u64);
    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        /// A Zipf-like rank in `0..n` (log-uniform).
        pub(crate) fn zipf(&mut self, n: usize) -> usize {
            let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
            (((n as f64).powf(u)) as usize).saturating_sub(1).min(n - 1)
        }
    }

    fn corpus_doc(rng: &mut Rng, words: usize) -> String {
        (0..words)
            .map(|_| format!("w{}", rng.zipf(5000)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn maxscore_equals_exhaustive() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut idx = Bm25Index::new(Bm25Params::default());
        let texts: Vec<String> = (0..600).map(|_| corpus_doc(&mut rng, 60)).collect();
        idx.upsert_many(texts.iter().enumerate().map(|(i, t)| (i as u32, body(t))));
        // Some churn so that dead base docs and a delta exist, and averages moved.
        for i in 0..40u32 {
            let t = corpus_doc(&mut rng, 120);
            idx.upsert(i * 7 % 600, &body(&t));
        }
        for i in 0..30u32 {
            idx.remove(i * 13 % 600 + 1);
        }
        assert!(idx.pending_merge().0 > 0 && idx.pending_merge().1 > 0);
        for q in 0..200 {
            let query = corpus_doc(&mut rng, 1 + q % 6);
            for k in [1, 5, 10, 50] {
                let a = idx.search(&query, k);
                let b = idx.search_exhaustive(&query, k);
                assert_eq!(a.len(), b.len(), "query {query:?} k {k}");
                for (x, y) in a.iter().zip(&b) {
                    assert!(
                        (x.1 - y.1).abs() <= 1e-4 * y.1.max(1.0),
                        "{query:?} {a:?} {b:?}"
                    );
                    if x.0 != y.0 {
                        // Only a near-tie may order differently.
                        assert!((x.1 - y.1).abs() <= 1e-4, "{query:?} {a:?} {b:?}");
                    }
                }
            }
        }
    }

    /// The two-pass build gives the same base as putting every document through the delta and
    /// merging once: same dictionary, same postings in the same order, same statistics, same
    /// bounds, same scores; a doc id given twice keeps its last fields; and a build on an index
    /// whose documents were all removed starts afresh.
    #[test]
    fn two_pass_build_equals_delta_then_merge() {
        let mut rng = Rng(0x5eed);
        let aliases = vec!["別名 Alias".to_string(), "other name".to_string()];
        let texts: Vec<String> = (0..700)
            .map(|i| {
                let mut t = corpus_doc(&mut rng, 20 + i % 90);
                if i % 5 == 0 {
                    t.push_str(" 明月几时有 Ｆｕｌｌ-width ŒUVRE");
                }
                t
            })
            .collect();
        // Out of doc id order, with ids 9 and 300 given twice (the later fields must win).
        let mut docs: Vec<(u32, DocFields<'_>)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                (
                    ((i * 379) % 700) as u32,
                    DocFields {
                        title: &t[..t.len().min(12)],
                        aliases: if i % 7 == 0 { &aliases } else { &[] },
                        body: t,
                    },
                )
            })
            .collect();
        docs.push((9, body("replaced nine 故乡")));
        docs.push((300, body("replaced three hundred")));

        let mut built = Bm25Index::new(Bm25Params::default());
        built.upsert_many(docs.iter().copied());
        assert!(
            built.delta_fwd.is_empty(),
            "the build writes the base directly"
        );

        // The reference: every document through the delta (in doc id order, the build's
        // interning order), then one merge.
        let mut sorted: Vec<(u32, DocFields<'_>)> = Vec::new();
        for d in &docs {
            sorted.retain(|x| x.0 != d.0);
            sorted.push(*d);
        }
        sorted.sort_by_key(|d| d.0);
        let mut merged = Bm25Index::new(Bm25Params::default());
        for (doc, fields) in &sorted {
            let (terms, lens) = merged.analyse(fields);
            merged.attach(*doc, terms, lens, false);
        }
        merged.merge();

        assert_eq!(built.len(), 700);
        assert_eq!(built.dict.bytes, merged.dict.bytes);
        assert_eq!(built.dict.ends, merged.dict.ends);
        assert_eq!(built.base_starts, merged.base_starts);
        assert_eq!(built.base_docs, merged.base_docs);
        assert_eq!(built.base_tfs, merged.base_tfs);
        assert_eq!(built.base_tfmax, merged.base_tfmax);
        assert_eq!(built.lens, merged.lens);
        assert_eq!(built.len_sum, merged.len_sum);
        assert_eq!(built.field_docs, merged.field_docs);
        assert_eq!(built.base_doc_count, merged.base_doc_count);
        assert_eq!(built.search("nine 故乡", 5)[0].0, 9);
        assert!(built.search("replaced", 10).len() == 2);
        for q in 0..100 {
            let query = corpus_doc(&mut rng, 1 + q % 5);
            assert_eq!(
                built.search(&query, 10),
                merged.search(&query, 10),
                "{query}"
            );
        }

        // All documents removed, then a build: nothing of the old index is left.
        for d in 0..700 {
            built.remove(d);
        }
        assert_eq!(built.len(), 0);
        let generation = built.base_generation;
        built.upsert_many([(3, body("fresh start")), (1, body("fresh again"))]);
        assert_eq!(built.len(), 2);
        assert_ne!(built.base_generation, generation);
        assert_eq!(ids(&built.search("fresh", 10)).len(), 2);
        assert!(built.search("w1", 10).is_empty());
        assert_eq!(built.dict.len(), 3);
        assert!(built.dirty_base && built.dirty_delta);

        // A failed fill voids the build even when the caller goes on (the reviewer's case: the
        // second document's postings would be half written).
        let mut b = Bm25Builder::new(Bm25Params::default(), 0);
        for (d, t) in [(0, "x x"), (1, "y z"), (2, "z")] {
            b.count(d, &body(t)).unwrap();
        }
        let _ = b.fill(0, &body("x y"));
        assert!(b.fill(1, &body("z y")).is_err(), "y's postings are full");
        b.fill(2, &body("z")).unwrap();
        assert!(b.finish().is_err());
        let mut b = Bm25Builder::new(Bm25Params::default(), 0);
        b.count(0, &body("a")).unwrap();
        b.start_fill();
        assert!(b.count(1, &body("b")).is_err());
        b.fill(0, &body("a")).unwrap();
        assert!(
            b.finish().is_err(),
            "a count after pass 2 began voids the build"
        );
    }

    #[test]
    fn persistence_round_trip_without_tokenizing() {
        let mut idx = Bm25Index::new(Bm25Params::default());
        idx.upsert_many((0..50u32).map(|i| {
            (
                i,
                body(if i % 3 == 0 {
                    "三 明月 alpha"
                } else {
                    "beta gamma"
                }),
            )
        }));
        idx.upsert(3, &body("changed 故乡"));
        idx.remove(5);
        idx.upsert(77, &body("new page 明月"));
        let mut wb = Writer::default();
        idx.base_snapshot().write(&mut wb);
        assert_eq!(wb.buf.len(), idx.base_snapshot().size());
        let mut wd = Writer::default();
        idx.write_delta(&mut wd);
        let before = crate::search::tokenizer::tokenizer_calls();
        let mut back = Bm25Index::read_base(&mut Reader::new(&wb.buf), 1000, 2).unwrap();
        back.read_delta(&mut Reader::new(&wd.buf), 1000).unwrap();
        let after = crate::search::tokenizer::tokenizer_calls();
        assert_eq!(after, before, "decoding must not tokenize");
        assert_eq!(back.len(), idx.len());
        for q in ["明月", "alpha", "故乡", "beta", "page"] {
            assert_eq!(back.search(q, 100), idx.search(q, 100), "{q}");
        }
    }
}
