//! How a [`VectorStore`] is written to and read from its records (`vectors`, `vectors-delta`,
//! `hnsw`, and the `staging` pair; framing in [`crate::search::persist`]).
//!
//! *Invariant:* decoding never embeds and never panics: rows, dead flags and the graph are read
//! back as written and checked against each other, else a [`DecodeError`].

use std::sync::Arc;

use super::{decode_graph, HnswParams, Loc, VectorStore};
use crate::search::codec::{DecodeError, DecodeResult, Reader, Writer};

/// An immutable view of a [`VectorStore`]'s base rows ([`VectorStore::base_snapshot`]): what
/// its `vectors` record holds, written on demand after the store moved on.
#[derive(Debug, Clone)]
pub(crate) struct VectorsBaseSnapshot {
    model: String,
    dim: usize,
    generation: u64,
    docs: Vec<u32>,
    rows: Arc<[f32]>,
}

impl VectorsBaseSnapshot {
    /// The exact size in bytes of what [`VectorsBaseSnapshot::write`] writes.
    pub(crate) fn size(&self) -> usize {
        (4 + self.model.len()) + 4 + 8 + (4 + 4 * self.docs.len()) + (4 + 4 * self.rows.len())
    }

    /// Writes the record's payload: model, dim, generation, doc per row, rows as `f32`.
    pub(crate) fn write(&self, w: &mut Writer) {
        w.str(&self.model);
        w.u32(self.dim as u32);
        w.u64(self.generation);
        w.u32s(&self.docs);
        w.f32s(&self.rows);
    }
}

impl VectorStore {
    /// The base as of now, for writing its record later: the rows are shared (`Arc`; the base is
    /// only ever replaced, never changed in place), the doc per row copied (4 bytes a row).
    pub(crate) fn base_snapshot(&self) -> VectorsBaseSnapshot {
        debug_assert_eq!(self.base_docs.len() * self.dim, self.base.len());
        VectorsBaseSnapshot {
            model: self.model.clone(),
            dim: self.dim,
            generation: self.base_generation,
            docs: self.base_docs.clone(),
            rows: self.base.clone(),
        }
    }

    /// The delta record: generation, dead base rows, null docs, delta docs and rows.
    pub(crate) fn write_delta(&self, w: &mut Writer) {
        w.u64(self.base_generation);
        let dead: Vec<u32> = (0..self.base_dead.len() as u32)
            .filter(|&r| self.base_dead[r as usize])
            .collect();
        w.u32s(&dead);
        let mut nulls: Vec<u32> = self
            .loc
            .iter()
            .filter(|(_, l)| matches!(l, Loc::Null))
            .map(|(&d, _)| d)
            .collect();
        crate::util::sort(&mut nulls);
        w.u32s(&nulls);
        let mut docs = Vec::new();
        let mut rows = Vec::new();
        if self.dim > 0 {
            for (i, row) in self.delta.chunks_exact(self.dim).enumerate() {
                if !self.delta_dead[i] {
                    docs.push(self.delta_docs[i]);
                    rows.extend_from_slice(row);
                }
            }
        }
        w.u32s(&docs);
        w.f32s(&rows);
    }

    /// The graph record (its postcard bytes), when there is a graph.
    pub(crate) fn graph_bytes(&self) -> Option<&[u8]> {
        self.graph.as_ref().map(|g| g.bytes.as_slice())
    }

    /// Reads a base record, then its delta and graph records, validating ids and lengths.
    pub(crate) fn read(
        base: &mut Reader<'_>,
        delta: Option<&mut Reader<'_>>,
        graph: Option<&[u8]>,
        params: HnswParams,
        max_doc: u32,
    ) -> DecodeResult<Self> {
        let model = base.str()?.to_string();
        let dim = base.u32()? as usize;
        let generation = base.u64()?;
        let docs = base.u32s()?;
        let data = base.f32s()?;
        if dim == 0 || dim > 1 << 16 {
            return Err(DecodeError::new(format!("bad dimension {dim}")));
        }
        if data.len() != docs.len() * dim {
            return Err(DecodeError::new("vector rows do not match the doc list"));
        }
        let mut s = VectorStore::new(&model, dim, params);
        s.base_generation = generation;
        for (i, &d) in docs.iter().enumerate() {
            if d >= max_doc || s.loc.insert(d, Loc::Base(i as u32)).is_some() {
                return Err(DecodeError::new(format!(
                    "bad or repeated doc {d} in vectors"
                )));
            }
        }
        s.base_dead = vec![false; docs.len()];
        s.base_docs = docs;
        s.base = Arc::from(data);
        if let Some(r) = delta {
            let g = r.u64()?;
            if g != generation {
                return Err(DecodeError::new("vector delta belongs to another base"));
            }
            for row in r.u32s()? {
                let row = row as usize;
                if row >= s.base_dead.len() || s.base_dead[row] {
                    return Err(DecodeError::new("bad dead row"));
                }
                s.base_dead[row] = true;
                s.base_dead_count += 1;
                s.loc.remove(&s.base_docs[row]);
            }
            let nulls = r.u32s()?;
            let ddocs = r.u32s()?;
            let rows = r.f32s()?;
            if rows.len() != ddocs.len() * dim {
                return Err(DecodeError::new("delta rows do not match the doc list"));
            }
            for d in nulls {
                if d >= max_doc || s.loc.insert(d, Loc::Null).is_some() {
                    return Err(DecodeError::new("bad null doc"));
                }
            }
            for (i, &d) in ddocs.iter().enumerate() {
                if d >= max_doc || s.loc.insert(d, Loc::Delta(i as u32)).is_some() {
                    return Err(DecodeError::new("bad delta doc"));
                }
            }
            s.delta_dead = vec![false; ddocs.len()];
            s.delta_docs = ddocs;
            s.delta = rows;
        }
        if let Some(bytes) = graph {
            s.graph = Some(decode_graph(bytes, &s.base, dim)?);
        }
        s.dirty_base = false;
        s.dirty_delta = false;
        s.dirty_graph = false;
        Ok(s)
    }
}
