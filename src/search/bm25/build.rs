//! The two-pass full build of a [`Bm25Index`] ([`Bm25Builder`]): counts first, then postings
//! written straight into arrays of their final size.
//!
//! *Invariant:* the second pass must see the same documents in the same order as the first;
//! otherwise the build is void ([`BuildMismatch`]) and nothing half-built is returned.

use std::rc::Rc;

use super::{for_each_field_token, pack, Bm25Index, Bm25Params, DocFields, FieldTf, IN_BASE};

/// Why a [`Bm25Builder`]'s second pass did not match its first (the documents changed between
/// the passes, or came in another order): the build is void; build again, or index the documents
/// with [`Bm25Index::upsert_many`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("BM25 build: {0}")]
pub struct BuildMismatch(pub String);

/// A full build of a [`Bm25Index`] in two passes over the documents, fed in any batches, so
/// neither the documents' text nor their postings are ever held all at once (BENCHMARKS.md,
/// "Memory"). Pass 1 ([`Bm25Builder::count`], doc ids strictly increasing) tokenizes each
/// document to intern its terms, count each term's document frequency and record its field
/// lengths. [`Bm25Builder::start_fill`] allocates the CSR arrays at their exact size. Pass 2
/// ([`Bm25Builder::fill`], the same documents in the same order) tokenizes again and writes each
/// posting straight into its place, so postings come out sorted by doc id.
/// [`Bm25Builder::finish`] computes the bounds. Peak memory: the base itself plus per-term
/// counters; cost: tokenizing twice. O(tokens + postings + terms).
#[derive(Debug)]
pub struct Bm25Builder {
    index: Bm25Index,
    /// Pass 1: documents per term, and the last document (position) that counted each term.
    df: Vec<u32>,
    last_seen: Vec<u32>,
    /// The doc ids of pass 1, in order; pass 2 must give the same.
    order: Vec<u32>,
    /// Pass 2: where the next posting of each term goes, how far pass 2 got, and per-document
    /// scratch (field frequencies by term, terms touched).
    fill: Vec<u32>,
    filled: usize,
    acc: Vec<FieldTf>,
    touched: Vec<u32>,
    filling: bool,
    /// A `count` or `fill` failed: the build is void and `finish` says so.
    failed: bool,
    docs: Vec<u32>,
    tfs: Vec<u32>,
    starts: Vec<u32>,
}

impl Bm25Builder {
    /// An empty build with `params`; `generation` is the previous base's (the new one is
    /// derived from it and the new contents).
    pub fn new(params: Bm25Params, generation: u64) -> Self {
        let mut index = Bm25Index::new(params);
        index.base_generation = generation;
        Bm25Builder {
            index,
            df: Vec::new(),
            last_seen: Vec::new(),
            order: Vec::new(),
            fill: Vec::new(),
            filled: 0,
            acc: Vec::new(),
            touched: Vec::new(),
            filling: false,
            failed: false,
            docs: Vec::new(),
            tfs: Vec::new(),
            starts: Vec::new(),
        }
    }

    /// Pass 1 for one document. Errors when `doc` is not above the previous one or pass 2 began.
    pub fn count(&mut self, doc: u32, fields: &DocFields<'_>) -> Result<(), BuildMismatch> {
        if self.filling || self.order.last().is_some_and(|&d| d >= doc) {
            self.failed = true;
            return Err(BuildMismatch(format!(
                "doc {doc} counted out of order or after the first pass"
            )));
        }
        let n = self.order.len() as u32;
        self.order.push(doc);
        let mut lens = [0u32; 3];
        let (dict, df, last_seen) = (&mut self.index.dict, &mut self.df, &mut self.last_seen);
        for_each_field_token(fields, |f, t| {
            let id = dict.intern(t) as usize;
            if id == df.len() {
                df.push(0);
                last_seen.push(u32::MAX);
            }
            if last_seen[id] != n {
                last_seen[id] = n;
                df[id] += 1;
            }
            lens[f] += 1;
        });
        let ix = &mut self.index;
        ix.ensure_doc(doc);
        ix.lens[doc as usize] = lens;
        ix.count_lens(lens, true);
        ix.state[doc as usize] = IN_BASE;
        ix.live += 1;
        Ok(())
    }

    /// Ends pass 1: allocates the postings at their exact size.
    pub fn start_fill(&mut self) {
        if self.filling {
            return;
        }
        self.filling = true;
        self.last_seen = Vec::new();
        let df = std::mem::take(&mut self.df);
        let mut starts = Vec::with_capacity(df.len() + 1);
        starts.push(0u32);
        let mut total = 0u32;
        for &c in &df {
            total += c;
            starts.push(total);
        }
        drop(df);
        self.fill = starts[..starts.len() - 1].to_vec();
        self.docs = vec![0u32; total as usize];
        self.tfs = vec![0u32; total as usize];
        self.acc = vec![[0; 3]; self.index.dict.len()];
        self.starts = starts;
    }

    /// Pass 2 for one document: the same doc id and fields as the `count` at this position.
    pub fn fill(&mut self, doc: u32, fields: &DocFields<'_>) -> Result<(), BuildMismatch> {
        if !self.filling {
            self.start_fill();
        }
        if self.order.get(self.filled) != Some(&doc) {
            self.failed = true;
            return Err(BuildMismatch(format!(
                "doc {doc} at position {} of the second pass differs from the first",
                self.filled
            )));
        }
        self.filled += 1;
        let (dict, acc, touched) = (&self.index.dict, &mut self.acc, &mut self.touched);
        let mut unknown = false;
        let mut lens = [0u32; 3];
        for_each_field_token(fields, |f, t| match dict.get(t) {
            Some(id) => {
                let a = &mut acc[id as usize];
                if *a == [0; 3] {
                    touched.push(id);
                }
                a[f] += 1;
                lens[f] += 1;
            }
            None => unknown = true,
        });
        let mut result = Ok(());
        if unknown || lens != self.index.lens[doc as usize] {
            result = Err(BuildMismatch(format!(
                "doc {doc} changed between the passes"
            )));
        }
        for &t in &self.touched {
            let t = t as usize;
            let at = self.fill[t];
            if result.is_ok() && at < self.starts[t + 1] {
                self.docs[at as usize] = doc;
                self.tfs[at as usize] = pack(self.acc[t]);
                self.fill[t] += 1;
            } else if result.is_ok() {
                result = Err(BuildMismatch(format!(
                    "doc {doc} has more terms than it had in the first pass"
                )));
            }
            self.acc[t] = [0; 3];
        }
        self.touched.clear();
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    /// True once pass 2 began ([`Bm25Builder::start_fill`] or the first `fill`).
    pub fn is_filling(&self) -> bool {
        self.filling
    }

    /// The built index. Errors when any `count` or `fill` failed, or pass 2 did not give every
    /// document of pass 1 with the same terms.
    pub fn finish(mut self) -> Result<Bm25Index, BuildMismatch> {
        if !self.filling {
            self.start_fill();
        }
        if self.failed
            || self.filled != self.order.len()
            || self.fill.iter().zip(&self.starts[1..]).any(|(f, s)| f != s)
        {
            return Err(BuildMismatch(format!(
                "a call failed, or the second pass gave {} of {} documents, or fewer postings",
                self.filled,
                self.order.len()
            )));
        }
        let mut ix = self.index;
        ix.base_starts = Rc::new(self.starts);
        ix.base_docs = Rc::new(self.docs);
        ix.base_tfs = Rc::new(self.tfs);
        ix.base_doc_count = ix.live;
        ix.finish_base();
        Ok(ix)
    }

    /// Documents counted by pass 1.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True before the first [`Bm25Builder::count`].
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}
