//! The term dictionary of a [`super::Bm25Index`]: terms interned as `u32` ids.
//!
//! *Invariant:* a term's id never changes while the index lives (postings, bounds and delta
//! lists name terms by id); the hash table is derived from the arena and rebuilt on decode.

use crate::search::codec::{hash64, DecodeError, DecodeResult};

pub(super) const EMPTY: u32 = u32::MAX;

/// Interned terms: one UTF-8 byte arena, `u32` end offsets, and an open-addressing (linear probing)
/// table of term ids. About `len + 12` bytes per term.
#[derive(Debug, Clone, Default)]
pub(crate) struct TermDict {
    pub(super) bytes: Vec<u8>,
    /// `ends[i]` is the end of term `i` in `bytes`; its start is `ends[i - 1]` (0 for term 0).
    pub(super) ends: Vec<u32>,
    table: Vec<u32>,
}

impl TermDict {
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn term(&self, id: u32) -> &str {
        // The arena is validated UTF-8 and every boundary is a term boundary.
        std::str::from_utf8(self.term_bytes(id)).unwrap_or("")
    }

    /// Term `id`'s UTF-8 bytes (compared and hashed without validating them again).
    pub(super) fn term_bytes(&self, id: u32) -> &[u8] {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    pub(super) fn slot(&self, term: &str) -> (usize, Option<u32>) {
        self.slot_bytes(term.as_bytes())
    }

    pub(super) fn slot_bytes(&self, term: &[u8]) -> (usize, Option<u32>) {
        let mask = self.table.len() - 1;
        let mut i = hash64(term) as usize & mask;
        loop {
            let id = self.table[i];
            if id == EMPTY {
                return (i, None);
            }
            if self.term_bytes(id) == term {
                return (i, Some(id));
            }
            i = (i + 1) & mask;
        }
    }

    pub(crate) fn get(&self, term: &str) -> Option<u32> {
        if self.table.is_empty() {
            return None;
        }
        self.slot(term).1
    }

    pub(crate) fn intern(&mut self, term: &str) -> u32 {
        if self.table.len() < 2 * (self.ends.len() + 1) {
            self.grow();
        }
        let (slot, found) = self.slot(term);
        if let Some(id) = found {
            return id;
        }
        let id = self.ends.len() as u32;
        self.bytes.extend_from_slice(term.as_bytes());
        self.ends.push(self.bytes.len() as u32);
        self.table[slot] = id;
        id
    }

    pub(super) fn grow(&mut self) {
        let cap = (2 * (self.ends.len() + 1)).next_power_of_two().max(16) * 2;
        // Interned terms are distinct, so this cannot fail.
        let rehashed = self.rehash(cap);
        debug_assert!(rehashed.is_ok(), "a term interned twice");
    }

    /// Rebuilds the table with `cap` slots (a power of two). Errors when two ids hold the same
    /// term (possible only in a decoded dictionary: `intern` never adds one twice).
    pub(super) fn rehash(&mut self, cap: usize) -> Result<(), u32> {
        self.table = vec![EMPTY; cap];
        for id in 0..self.ends.len() as u32 {
            match self.slot_bytes(self.term_bytes(id)) {
                (slot, None) => self.table[slot] = id,
                (_, Some(_)) => return Err(id),
            }
        }
        Ok(())
    }

    pub(super) fn from_parts(bytes: Vec<u8>, ends: Vec<u32>) -> DecodeResult<Self> {
        let text = std::str::from_utf8(&bytes)
            .map_err(|e| DecodeError::new(format!("dictionary is not UTF-8: {e}")))?;
        let mut prev = 0u32;
        for &e in &ends {
            if e < prev || e as usize > bytes.len() || !text.is_char_boundary(e as usize) {
                return Err(DecodeError::new("dictionary offsets out of order"));
            }
            prev = e;
        }
        if prev as usize != bytes.len() {
            return Err(DecodeError::new("dictionary arena has trailing bytes"));
        }
        let mut d = TermDict {
            bytes,
            ends,
            table: Vec::new(),
        };
        let cap = (2 * (d.ends.len() + 1)).next_power_of_two().max(16) * 2;
        // A duplicate term would make lookups ambiguous.
        d.rehash(cap)
            .map_err(|_| DecodeError::new("duplicate term in dictionary"))?;
        Ok(d)
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + 4 * self.ends.capacity() + 4 * self.table.capacity()
    }
}
