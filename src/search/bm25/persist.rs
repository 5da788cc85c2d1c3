//! How a [`Bm25Index`] is written to and read from its records (`bm25`, `bm25-delta`; framing in
//! [`crate::search::persist`]): the base as a [`Bm25BaseSnapshot`] written on demand, the delta
//! written whole, and both read back into the CSR arrays without tokenizing anything.
//!
//! *Invariant:* decoding checks every count against the bytes before allocating, and every doc id
//! against the documents the record declares: a bad record is a [`DecodeError`], never a panic.

use std::rc::Rc;

use super::{Bm25Index, Bm25Params, FieldTf, TermDict, ABSENT, IN_BASE};
use crate::search::codec::{varint_len, DecodeError, DecodeResult, Reader, Varints, Writer};

/// Reads the varint postings of [`Bm25BaseSnapshot::write`] back into CSR arrays (starts, doc
/// ids, packed tfs). Counts are checked against the bytes before anything is allocated, every
/// block must be read exactly, and doc ids must strictly increase within a list.
pub(super) fn read_postings(r: &mut Reader<'_>) -> DecodeResult<(Vec<u32>, Vec<u32>, Vec<u32>)> {
    let offsets = r.u32()? as usize;
    let postings = r.u32()? as usize;
    let (lens, gaps, tfs) = (r.bytes()?, r.bytes()?, r.bytes()?);
    // Every varint is at least one byte.
    if offsets.saturating_sub(1) > lens.len() || postings > gaps.len() || postings > tfs.len() {
        return Err(DecodeError::new("postings: counts exceed their blocks"));
    }
    if offsets == 0 {
        if postings != 0 || !lens.is_empty() || !gaps.is_empty() || !tfs.is_empty() {
            return Err(DecodeError::new("postings without offsets"));
        }
        return Ok(Default::default());
    }
    let mut starts = Vec::with_capacity(offsets);
    starts.push(0u32);
    let mut v = Varints::new(lens);
    let mut end = 0u32;
    for _ in 1..offsets {
        end = end
            .checked_add(v.next()?)
            .filter(|&e| e as usize <= postings)
            .ok_or_else(|| DecodeError::new("postings: offsets do not cover the postings"))?;
        starts.push(end);
    }
    if end as usize != postings || !v.is_done() {
        return Err(DecodeError::new(
            "postings: offsets do not cover the postings",
        ));
    }
    // Decoded in place into arrays of their final size (at `opt-level = "z"` `Vec::push` stays
    // a call per posting), then the gaps of each list summed into doc ids.
    let mut docs = vec![0u32; postings];
    let mut v = Varints::new(gaps);
    v.read_into(&mut docs)?;
    for w in starts.windows(2) {
        let Some((first, rest)) = docs[w[0] as usize..w[1] as usize].split_first_mut() else {
            continue;
        };
        let mut prev = *first;
        for slot in rest {
            let g = *slot;
            prev = match prev.checked_add(g) {
                Some(d) if g > 0 => d,
                Some(_) => {
                    return Err(DecodeError::new(
                        "postings: doc ids not strictly increasing",
                    ))
                }
                None => return Err(DecodeError::new("postings: doc id above u32::MAX")),
            };
            *slot = prev;
        }
    }
    let mut t = Varints::new(tfs);
    let mut tfs = vec![0u32; postings];
    t.read_into(&mut tfs)?;
    if !v.is_done() || !t.is_done() {
        return Err(DecodeError::new("postings: trailing bytes in a block"));
    }
    Ok((starts, docs, tfs))
}

/// Checks decoded CSR postings in one pass over them (2M at 10k pages): each term's doc ids
/// strictly increase (already known for format 2, whose gaps are ≥ 1; needed for format 1) and
/// each names a base document (`state[d] == IN_BASE`). `starts` is already known to be in order
/// and to cover `docs`.
pub(super) fn check_postings(starts: &[u32], docs: &[u32], state: &[u8]) -> DecodeResult<()> {
    for w in starts.windows(2) {
        let mut next = 0u32;
        for &d in &docs[w[0] as usize..w[1] as usize] {
            // A `match`, not `!=` on `Option`: at `opt-level = "z"` the comparison stays a call.
            match state.get(d as usize) {
                Some(&IN_BASE) if d >= next => next = d + 1,
                Some(&IN_BASE) => {
                    return Err(DecodeError::new(
                        "postings: doc ids not strictly increasing",
                    ))
                }
                _ => return Err(DecodeError::new("postings name a document the base lacks")),
            }
        }
    }
    Ok(())
}

/// An immutable view of a [`Bm25Index`]'s base segment ([`Bm25Index::base_snapshot`]): what its
/// base record holds, written on demand ([`Bm25BaseSnapshot::write`]) after the index moved on.
#[derive(Debug, Clone)]
pub(crate) struct Bm25BaseSnapshot {
    generation: u64,
    params: Bm25Params,
    dict_bytes: Vec<u8>,
    dict_ends: Vec<u32>,
    starts: Rc<Vec<u32>>,
    docs: Rc<Vec<u32>>,
    tfs: Rc<Vec<u32>>,
    doc_count: u32,
    tfmax: Rc<Vec<f32>>,
    bound_avg: [f32; 3],
    lens: Vec<(u32, FieldTf)>,
    /// Bytes of the three varint blocks [`Bm25BaseSnapshot::write`] writes: list lengths,
    /// doc-id gaps, packed tfs.
    encoded: [usize; 3],
}

/// For each term's list in turn: calls `len` with its length, then `gap` with each of its doc
/// ids as written: the first as it is, each next one as the gap to the one before (≥ 1: ids
/// strictly increase).
pub(super) fn for_each_gap(
    starts: &[u32],
    docs: &[u32],
    mut len: impl FnMut(u32),
    mut gap: impl FnMut(u32),
) {
    for w in starts.windows(2) {
        len(w[1] - w[0]);
        let mut prev = 0;
        for (i, &d) in docs[w[0] as usize..w[1] as usize].iter().enumerate() {
            gap(if i == 0 { d } else { d - prev });
            prev = d;
        }
    }
}

impl Bm25BaseSnapshot {
    /// The payload format 1 wrote (postings as `u32` arrays), as builds before format 2 did:
    /// for the test that such records still open.
    #[cfg(test)]
    pub(crate) fn write_v1(&self, w: &mut Writer) {
        self.write_head(w);
        w.u32s(&self.starts);
        w.u32s(&self.docs);
        w.u32s(&self.tfs);
        self.write_tail(w);
    }

    /// The exact size in bytes of what [`Bm25BaseSnapshot::write`] writes.
    pub(crate) fn size(&self) -> usize {
        8 + 5 * 4
            + (4 + self.dict_bytes.len())
            + (4 + 4 * self.dict_ends.len())
            + 4
            + 4
            + self.encoded.iter().map(|n| 4 + n).sum::<usize>()
            + 4
            + (4 + 4 * self.tfmax.len())
            + 4 * self.bound_avg.len()
            + (4 + 16 * self.lens.len())
    }

    /// Writes the base record's payload (format 2): generation, parameters, dictionary, CSR
    /// postings, bounds, then `(doc id, [title, aliases, body] lengths)` of every base document.
    ///
    /// The postings are varints (LEB128; Zobel & Moffat, "Inverted files for text search
    /// engines", ACM Computing Surveys 38(2), 2006, §2.2 on d-gaps): the offset count and the
    /// posting count as `u32`, then three length-prefixed blocks: each term's list length; doc ids
    /// as gaps ([`for_each_gap`]); packed tfs. At 10k pages that is 5.1 MB instead of 16.8 MB of
    /// `u32` arrays: IndexedDB hands it back in 28–32 ms instead of 59 ms, more than the varints
    /// then take to decode (BENCHMARKS.md, "Cold open").
    pub(crate) fn write(&self, w: &mut Writer) {
        self.write_head(w);
        w.len(self.starts.len());
        w.len(self.docs.len());
        w.len(self.encoded[0]);
        for_each_gap(&self.starts, &self.docs, |n| w.varint(n), |_| {});
        w.len(self.encoded[1]);
        for_each_gap(&self.starts, &self.docs, |_| {}, |g| w.varint(g));
        w.len(self.encoded[2]);
        for &t in self.tfs.iter() {
            w.varint(t);
        }
        self.write_tail(w);
    }

    /// What comes before the postings (the same in both formats): generation, parameters,
    /// dictionary.
    pub(super) fn write_head(&self, w: &mut Writer) {
        w.u64(self.generation);
        let p = self.params;
        for v in [p.k1, p.b, p.title_weight, p.alias_weight, p.body_weight] {
            w.f32(v);
        }
        w.bytes(&self.dict_bytes);
        w.u32s(&self.dict_ends);
    }

    /// What follows the postings (the same in both formats): bounds, then base field lengths.
    pub(super) fn write_tail(&self, w: &mut Writer) {
        w.u32(self.doc_count);
        w.f32s(&self.tfmax);
        for a in self.bound_avg {
            w.f32(a);
        }
        w.len(self.lens.len());
        for (d, l) in &self.lens {
            w.u32(*d);
            for x in l {
                w.u32(*x);
            }
        }
    }
}

impl Bm25Index {
    /// The base segment as of now, for writing its record later: the postings and bounds are
    /// shared with the index (no copy), the dictionary and the base documents' lengths copied
    /// (a few hundred KB at 10k pages).
    pub(crate) fn base_snapshot(&self) -> Bm25BaseSnapshot {
        // Field lengths of the base documents, by doc id (delta documents are in the delta record).
        let lens = (0..self.state.len() as u32)
            .filter(|&d| self.state[d as usize] == IN_BASE || self.is_dead(d))
            .map(|d| {
                let l = if self.state[d as usize] == IN_BASE {
                    self.lens[d as usize]
                } else {
                    [0; 3]
                };
                (d, l)
            })
            .collect();
        Bm25BaseSnapshot {
            generation: self.base_generation,
            params: self.params,
            dict_bytes: self.dict.bytes.clone(),
            dict_ends: self.dict.ends.clone(),
            starts: self.base_starts.clone(),
            docs: self.base_docs.clone(),
            tfs: self.base_tfs.clone(),
            doc_count: self.base_doc_count,
            tfmax: self.base_tfmax.clone(),
            bound_avg: self.bound_avg,
            lens,
            encoded: {
                let (mut lists, mut gaps) = (0, 0);
                for_each_gap(
                    &self.base_starts,
                    &self.base_docs,
                    |n| lists += varint_len(n),
                    |g| gaps += varint_len(g),
                );
                let tfs = self.base_tfs.iter().map(|&t| varint_len(t)).sum();
                [lists, gaps, tfs]
            },
        }
    }

    /// Writes the delta: dead base doc ids, then each delta document with its lengths and its
    /// terms as strings (so the record does not depend on ids of terms the base lacks).
    pub(crate) fn write_delta(&self, w: &mut Writer) {
        w.u64(self.base_generation);
        let dead: Vec<u32> = (0..(self.base_dead.len() * 64) as u32)
            .filter(|&d| self.is_dead(d))
            .collect();
        w.u32s(&dead);
        w.len(self.delta_fwd.len());
        for (&doc, terms) in &self.delta_fwd {
            w.u32(doc);
            for x in self.lens[doc as usize] {
                w.u32(x);
            }
            w.len(terms.len());
            for &(t, tf) in terms {
                w.str(self.dict.term(t));
                w.u32(tf);
            }
        }
    }

    /// Reads a base segment written by [`Bm25BaseSnapshot::write`] (record format `version`: 1
    /// held the postings as `u32` arrays, 2 and 3 as varints), validating every offset and id.
    pub(crate) fn read_base(r: &mut Reader<'_>, max_doc: u32, version: u32) -> DecodeResult<Self> {
        let base_generation = r.u64()?;
        let params = Bm25Params {
            k1: r.f32()?,
            b: r.f32()?,
            title_weight: r.f32()?,
            alias_weight: r.f32()?,
            body_weight: r.f32()?,
        };
        let bytes = r.bytes()?.to_vec();
        let ends = r.u32s()?;
        let dict = TermDict::from_parts(bytes, ends)?;
        let (starts, docs, tfs) = match version {
            1 => (r.u32s()?, r.u32s()?, r.u32s()?),
            // Format 3 changed only `meta` (the tokenizer version).
            2 | 3 => read_postings(r)?,
            v => return Err(DecodeError::new(format!("bm25 format {v}"))),
        };
        let base_doc_count = r.u32()?;
        let tfmax = r.f32s()?;
        let bound_avg = [r.f32()?, r.f32()?, r.f32()?];
        if docs.len() != tfs.len() {
            return Err(DecodeError::new(
                "postings: doc and tf arrays differ in length",
            ));
        }
        if !starts.is_empty() {
            if starts.len() - 1 > dict.len() || starts[0] != 0 {
                return Err(DecodeError::new("postings: bad term offsets"));
            }
            if *starts.last().unwrap_or(&0) as usize != docs.len() {
                return Err(DecodeError::new(
                    "postings: offsets do not cover the postings",
                ));
            }
            if starts.windows(2).any(|w| w[0] > w[1]) {
                return Err(DecodeError::new("postings: offsets out of order"));
            }
        } else if !docs.is_empty() {
            return Err(DecodeError::new("postings without offsets"));
        }
        if tfmax.len() != starts.len().saturating_sub(1) {
            return Err(DecodeError::new("bounds: wrong length"));
        }
        if tfmax
            .iter()
            .chain(&bound_avg)
            .any(|x| !x.is_finite() || *x < 0.0)
        {
            return Err(DecodeError::new("bounds: not finite"));
        }
        let mut idx = Bm25Index {
            params: params.clamped(),
            dict,
            base_starts: Rc::new(starts),
            base_docs: Rc::new(docs),
            base_tfs: Rc::new(tfs),
            base_doc_count,
            base_tfmax: Rc::new(tfmax),
            bound_avg,
            base_generation,
            ..Default::default()
        };
        let n = r.len(16)?;
        let mut seen = 0u32;
        for _ in 0..n {
            let d = r.u32()?;
            if d >= max_doc {
                return Err(DecodeError::new(format!("doc id {d} out of range")));
            }
            let l = [r.u32()?, r.u32()?, r.u32()?];
            idx.ensure_doc(d);
            if idx.state[d as usize] != ABSENT {
                return Err(DecodeError::new(format!("doc id {d} twice")));
            }
            idx.state[d as usize] = IN_BASE;
            idx.lens[d as usize] = l;
            idx.count_lens(l, true);
            idx.live += 1;
            seen += 1;
        }
        if seen != base_doc_count {
            return Err(DecodeError::new("base document count mismatch"));
        }
        check_postings(&idx.base_starts, &idx.base_docs, &idx.state)?;
        if params != idx.params {
            // Stored parameters out of range: bounds were computed for other ones.
            idx.compute_bounds();
        }
        Ok(idx)
    }

    /// Applies a delta written by [`Bm25Index::write_delta`] to a freshly read base. Terms new to
    /// the dictionary are interned (hashing only: nothing is tokenized).
    pub(crate) fn read_delta(&mut self, r: &mut Reader<'_>, max_doc: u32) -> DecodeResult<()> {
        let generation = r.u64()?;
        if generation != self.base_generation {
            return Err(DecodeError::new(format!(
                "delta belongs to base generation {generation}, base is {}",
                self.base_generation
            )));
        }
        for d in r.u32s()? {
            if self.state.get(d as usize) != Some(&IN_BASE) || self.is_dead(d) {
                return Err(DecodeError::new(format!(
                    "dead doc {d} is not a base document"
                )));
            }
            // A dead base document's lengths no longer count.
            let l = self.lens[d as usize];
            self.count_lens(l, false);
            self.lens[d as usize] = [0; 3];
            self.state[d as usize] = ABSENT;
            self.live -= 1;
            self.set_dead(d);
        }
        let n = r.len(20)?;
        for _ in 0..n {
            let doc = r.u32()?;
            if doc >= max_doc {
                return Err(DecodeError::new(format!("doc id {doc} out of range")));
            }
            let lens = [r.u32()?, r.u32()?, r.u32()?];
            let m = r.len(8)?;
            let mut terms = Vec::with_capacity(m);
            for _ in 0..m {
                let t = r.str()?;
                let tf = r.u32()?;
                terms.push((self.dict.intern(t), tf));
            }
            crate::util::sort_by_key(&mut terms, |p| p.0);
            if terms.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(DecodeError::new("delta document repeats a term"));
            }
            if self.contains(doc) {
                return Err(DecodeError::new(format!(
                    "delta doc {doc} is also live elsewhere"
                )));
            }
            self.attach(doc, terms, lens, true);
        }
        self.dirty_base = false;
        self.dirty_delta = false;
        Ok(())
    }
}
