//! The payload of a stored record: its bytes, or a [`RecordSource`] that writes them when the
//! storage backend asks. Foundation: the search index (which writes its large records on demand)
//! and storage (which takes them) both use these types, and neither imports the other for them.
//! `crate::storage` re-exports both.
//!
//! *Invariant:* a [`RecordSource`] writes exactly [`RecordSource::len`] bytes; storage refuses a
//! commit whose source writes other than its length (the conformance suite's `Liar` source).

use std::rc::Rc;

/// A record payload written on demand. A large record (the search index's postings: 5 MB at 10k
/// pages; its vectors: 15 MB at 10k × 384-d) is then never held whole in wasm memory beside the structure it is written from:
/// the backend asks for its length, then for its bytes, in order, in pieces (IndexedDB copies
/// each piece into one `Uint8Array` before its transaction opens).
pub trait RecordSource {
    /// The payload's exact length in bytes.
    fn len(&self) -> usize;
    /// True when the payload is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Passes the payload to `sink` in order, in pieces of any size; their lengths add up to
    /// [`RecordSource::len`].
    fn write_to(&self, sink: &mut dyn FnMut(&[u8]));
}

/// The payload of a put: bytes, or a [`RecordSource`] that writes them when the backend asks.
#[derive(Clone)]
pub enum Data {
    /// The bytes themselves.
    Bytes(Vec<u8>),
    /// Bytes written on demand.
    Source(Rc<dyn RecordSource>),
}

impl Data {
    /// The payload's length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Data::Bytes(b) => b.len(),
            Data::Source(s) => s.len(),
        }
    }
    /// True when the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Passes the payload to `sink` in pieces (one piece for [`Data::Bytes`]).
    pub fn write_to(&self, sink: &mut dyn FnMut(&[u8])) {
        match self {
            Data::Bytes(b) => sink(b),
            Data::Source(s) => s.write_to(sink),
        }
    }
    /// The payload as one buffer (writes a source out).
    pub fn to_vec(&self) -> Vec<u8> {
        match self {
            Data::Bytes(b) => b.clone(),
            Data::Source(s) => {
                let mut out = Vec::with_capacity(s.len());
                s.write_to(&mut |piece| out.extend_from_slice(piece));
                out
            }
        }
    }
    /// The payload as one buffer, without a copy for [`Data::Bytes`].
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            Data::Bytes(b) => b,
            source => source.to_vec(),
        }
    }
}

impl From<Vec<u8>> for Data {
    fn from(b: Vec<u8>) -> Self {
        Data::Bytes(b)
    }
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Data::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            Data::Source(s) => write!(f, "Source({} bytes)", s.len()),
        }
    }
}

/// Payloads are equal when their bytes are (a source is written out to compare).
impl PartialEq for Data {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.to_vec() == other.to_vec()
    }
}
