//! The binary records a [`SearchIndex`] is stored in (IndexedDB store `search`).
//!
//! | key | holds | rewritten |
//! |---|---|---|
//! | `meta` | doc table (page key per doc id), settings, the tokenizer version the postings were made with (from format 3 on; 1 before), the generations of the other records, per vector store whether it has a graph (0 no, 1 yes, 2 no: a build was given up at the `u32` row count that follows) | every change |
//! | `bm25` | dictionary (byte arena + `u32` offsets), CSR postings (varints: list lengths, doc-id gaps, packed tfs), per-term bounds, base field lengths | on a BM25 merge |
//! | `bm25-delta` | dead base doc ids; delta docs with lengths and `(term, tf)` lists | every change |
//! | `vectors` | model, dim, doc per row, rows as contiguous little-endian `f32` | on a rebuild/compaction |
//! | `vectors-delta` | dead base rows, null docs, delta docs and rows | every vector change |
//! | `hnsw` | the HNSW graph over the `vectors` rows (postcard; points are row numbers) | on a graph rebuild |
//! | `staging`, `staging-delta` | the same two for a re-embed in progress | during a re-embed |
//! | `passages/…` | every record above again, for the source passages' own index (`passages/meta`, `passages/bm25`, …) | as above, when passages change |
//! | `passages/table` | per source: key, version, its passages (key, heading path, line range) | when a source's passages change |
//!
//! Every record is framed: magic `LWSI`, format version (`u32`, [`FORMAT_VERSION`]), record kind
//! (`u8`), payload length (`u64`), a checksum of the payload (`u64`; XXH3-64 from version 2 on,
//! the older `hash64` in version 1), the payload. All integers and floats are little-endian. A base record and its delta carry the base's generation, and
//! `meta` names the generations it expects, so records from different commits never combine.
//!
//! *Invariant:* decoding never tokenizes, never embeds and never panics: opening a wiki reads the
//! arrays back as they were written (the dictionary hash table and the doc-id map are rebuilt by
//! hashing), and any truncated, altered or mismatched record is a typed
//! [`Error::Corrupt`] naming the record, after which the caller rebuilds
//! the index from the pages.

use std::collections::HashMap;
use std::rc::Rc;

use super::bm25::{Bm25BaseSnapshot, Bm25Index};
use super::codec::{checksum, hash64, Checksum, DecodeError, DecodeResult, Reader, Writer};
use super::passages::{read_table, write_table, Passages};
use super::vectors::{HnswParams, VectorStore, VectorsBaseSnapshot};
use super::{DocTable, SearchConfig, SearchIndex};
use crate::error::{Error, Result};
use crate::model::Store;
use crate::payload::{Data, RecordSource};

/// The format version written. Version 3 adds to `meta` the tokenizer version of the postings;
/// versions 1 and 2 (tokenizer 1) are still read, so that an existing wiki keeps its index and
/// embeddings ([`SearchIndex::needs_retokenize`]). Version 2 has XXH3-64 checksums
/// ([`checksum`]) and varint `bm25` postings; version 1 `hash64` checksums and postings as `u32`
/// arrays, every other payload as in version 2. Decoding refuses any other.
pub const FORMAT_VERSION: u32 = 3;

const MAGIC: [u8; 4] = *b"LWSI";
const HEADER: usize = 4 + 4 + 1 + 8 + 8;

/// Record key: doc table, settings and generations.
pub const KEY_META: &str = "meta";
/// Record key: the BM25 base segment.
pub const KEY_BM25: &str = "bm25";
/// Record key: the BM25 delta.
pub const KEY_BM25_DELTA: &str = "bm25-delta";
/// Record key: the active vectors' base rows.
pub const KEY_VECTORS: &str = "vectors";
/// Record key: the active vectors' delta.
pub const KEY_VECTORS_DELTA: &str = "vectors-delta";
/// Record key: the HNSW graph over the active base rows.
pub const KEY_HNSW: &str = "hnsw";
/// Record key: the re-embedding vectors' base rows.
pub const KEY_STAGING: &str = "staging";
/// Record key: the re-embedding vectors' delta.
pub const KEY_STAGING_DELTA: &str = "staging-delta";
/// Every record key of the pages' index (what an index that leaves the passages out reads).
pub const PAGE_KEYS: [&str; 8] = [
    KEY_META,
    KEY_BM25,
    KEY_BM25_DELTA,
    KEY_VECTORS,
    KEY_VECTORS_DELTA,
    KEY_HNSW,
    KEY_STAGING,
    KEY_STAGING_DELTA,
];
/// Prefix of the records of the passages' index (`passages/meta`, `passages/bm25`, …).
pub const PASSAGES_PREFIX: &str = "passages/";
/// Record key: the passage table.
pub const KEY_PASSAGE_TABLE: &str = "passages/table";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Meta = 1,
    Bm25 = 2,
    Bm25Delta = 3,
    Vectors = 4,
    VectorsDelta = 5,
    Graph = 6,
    PassageTable = 7,
}

/// The header of a record holding `payload`.
fn header(kind: Kind, payload: &[u8]) -> [u8; HEADER] {
    header_of(kind, payload.len(), checksum(payload))
}

/// The header of a record whose payload has `len` bytes and hash `sum`.
fn header_of(kind: Kind, len: usize, sum: u64) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..4].copy_from_slice(&MAGIC);
    h[4..8].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[8] = kind as u8;
    h[9..17].copy_from_slice(&(len as u64).to_le_bytes());
    h[17..25].copy_from_slice(&sum.to_le_bytes());
    h
}

/// A base segment as of a moment (BM25 postings or vector rows), shared with the index it came
/// from, that can write its record's payload any number of times.
trait BaseSnapshot {
    fn size(&self) -> usize;
    fn write(&self, w: &mut Writer);
}

impl BaseSnapshot for Bm25BaseSnapshot {
    fn size(&self) -> usize {
        Bm25BaseSnapshot::size(self)
    }
    fn write(&self, w: &mut Writer) {
        Bm25BaseSnapshot::write(self, w)
    }
}

impl BaseSnapshot for VectorsBaseSnapshot {
    fn size(&self) -> usize {
        VectorsBaseSnapshot::size(self)
    }
    fn write(&self, w: &mut Writer) {
        VectorsBaseSnapshot::write(self, w)
    }
}

/// A large record (`bm25`: 5.1 MB at 10k pages; `vectors`, `staging`: 15.4 MB at 10k × 384-d)
/// written on demand from a snapshot of its base (a [`RecordSource`]): it goes to storage in
/// 64 KB pieces instead of being held whole beside the index. Written twice per save: once to
/// hash the payload for the header, once to hand it over.
struct BaseRecord<T: BaseSnapshot> {
    kind: Kind,
    base: T,
}

impl<T: BaseSnapshot> RecordSource for BaseRecord<T> {
    fn len(&self) -> usize {
        HEADER + self.base.size()
    }

    fn write_to(&self, sink: &mut dyn FnMut(&[u8])) {
        let size = self.base.size();
        let mut hasher = Checksum::default();
        {
            let mut hash = |piece: &[u8]| hasher.update(piece);
            let mut w = Writer::streaming(&mut hash);
            self.base.write(&mut w);
            w.flush();
        }
        sink(&header_of(self.kind, size, hasher.finish()));
        let mut w = Writer::streaming(sink);
        self.base.write(&mut w);
        w.flush();
    }
}

fn vectors_base_record(store: &VectorStore) -> Data {
    Data::Source(Rc::new(BaseRecord {
        kind: Kind::Vectors,
        base: store.base_snapshot(),
    }))
}

fn bm25_base_record(bm25: &Bm25Index) -> Data {
    Data::Source(Rc::new(BaseRecord {
        kind: Kind::Bm25,
        base: bm25.base_snapshot(),
    }))
}

fn frame(kind: Kind, payload: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(&header(kind, &payload));
    out.extend_from_slice(&payload);
    out
}

/// The payload of a framed record, with its format version (1 to [`FORMAT_VERSION`]).
fn unframe(kind: Kind, bytes: &[u8]) -> DecodeResult<(u32, &[u8])> {
    let mut r = Reader::new(bytes);
    if r.take(4)? != MAGIC {
        return Err(DecodeError::new("not a search record (bad magic)"));
    }
    let version = r.u32()?;
    if !(1..=FORMAT_VERSION).contains(&version) {
        return Err(DecodeError::new(format!(
            "format version {version}, this build reads 1 to {FORMAT_VERSION}"
        )));
    }
    let k = r.u8()?;
    if k != kind as u8 {
        return Err(DecodeError::new(format!(
            "record kind {k}, expected {}",
            kind as u8
        )));
    }
    let len = r.u64()?;
    let sum = r.u64()?;
    if len != r.remaining() as u64 {
        return Err(DecodeError::new("payload length mismatch (truncated?)"));
    }
    let payload = r.take(len as usize)?;
    let sum_of = if version == 1 { hash64 } else { checksum };
    if sum_of(payload) != sum {
        return Err(DecodeError::new("checksum mismatch"));
    }
    Ok((version, payload))
}

/// One change for the `search` store: `Some(data)` to put, `None` to delete.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordWrite {
    /// The record key (one of the `KEY_*` constants).
    pub key: String,
    /// The framed record (the `bm25` base as a [`RecordSource`] written on demand), or `None` to
    /// delete the record.
    pub data: Option<Data>,
}

/// Which records storage holds, as of the last [`SearchIndex::mark_persisted`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Persisted {
    any: bool,
    active: bool,
    graph: bool,
    staging: bool,
    passages: bool,
}

/// Every record key a passages index can have.
fn passage_keys() -> Vec<String> {
    PAGE_KEYS
        .iter()
        .map(|k| format!("{PASSAGES_PREFIX}{k}"))
        .chain([KEY_PASSAGE_TABLE.to_string()])
        .collect()
}

fn table_record(p: &Passages) -> Vec<u8> {
    write_with(Kind::PassageTable, |w| write_table(p, w))
}

fn write_meta(idx: &SearchIndex) -> Vec<u8> {
    let mut w = Writer::default();
    let c = &idx.config;
    w.f32(c.rrf_k);
    w.u32(c.hnsw.ef_construction);
    w.u32(c.hnsw.ef_search);
    w.u64(c.hnsw.seed);
    w.u8(u8::from(c.hnsw.heuristic));
    w.u32(idx.tokenizer);
    w.len(idx.docs.keys.len());
    for (k, h) in idx.docs.keys.iter().zip(&idx.docs.hashes) {
        match k {
            Some(k) => {
                w.u8(1);
                w.str(k);
                w.u64(*h);
            }
            None => w.u8(0),
        }
    }
    w.u64(idx.bm25.base_generation);
    for s in [&idx.active, &idx.staging] {
        match s {
            Some(s) => {
                w.u8(1);
                w.u64(s.base_generation);
                match (s.graph_bytes().is_some(), s.declined_at) {
                    (true, _) => w.u8(1),
                    (false, None) => w.u8(0),
                    (false, Some(rows)) => {
                        w.u8(2);
                        w.u32(rows);
                    }
                }
            }
            None => w.u8(0),
        }
    }
    frame(Kind::Meta, w.buf)
}

/// A small record (meta, the deltas) written in place after room for its header. The large
/// ones (`bm25`, `vectors`, `staging`) are [`BaseRecord`]s written in pieces instead.
fn write_with(kind: Kind, f: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::with_capacity(HEADER);
    w.buf.resize(HEADER, 0);
    f(&mut w);
    let h = header(kind, &w.buf[HEADER..]);
    w.buf[..HEADER].copy_from_slice(&h);
    w.buf
}

fn write_graph(s: &VectorStore) -> Option<Vec<u8>> {
    let g = s.graph_bytes()?;
    let mut w = Writer::with_capacity(g.len() + 16);
    w.u64(s.base_generation);
    w.bytes(g);
    Some(frame(Kind::Graph, w.buf))
}

/// The [`Error::Corrupt`] of record `key` (store `search`).
fn corrupt(key: &str, e: DecodeError) -> Error {
    Error::Corrupt {
        store: Store::Search,
        key: key.to_string(),
        message: e.0,
    }
}

/// The records an index is opened from, by key.
struct Records<'a>(HashMap<&'a str, &'a [u8]>);

impl<'a> Records<'a> {
    /// The format version and payload of record `key`, framed as `kind`.
    fn get_versioned(&self, key: &str, kind: Kind) -> Result<(u32, &'a [u8])> {
        let bytes: &'a [u8] = self
            .0
            .get(key)
            .copied()
            .ok_or_else(|| corrupt(key, DecodeError::new("missing")))?;
        unframe(kind, bytes).map_err(|e| corrupt(key, e))
    }

    /// The payload of record `key`, framed as `kind`.
    fn get(&self, key: &str, kind: Kind) -> Result<&'a [u8]> {
        self.get_versioned(key, kind).map(|(_, p)| p)
    }
}

/// What `meta` says of one vector store: its base generation, whether it has a graph, and the
/// row count at which a graph build was given up.
type StoreMeta = (u64, bool, Option<u32>);

/// The `meta` record, decoded.
struct Meta {
    rrf_k: f32,
    hnsw: HnswParams,
    /// The tokenizer version of the postings (1 before format 3).
    tokenizer: u32,
    docs: DocTable,
    bm25_gen: u64,
    /// The active and the staging vector store, when there is one.
    stores: [Option<StoreMeta>; 2],
}

/// The doc table of `meta`: per doc id a flag, then the page key and the fields' hash of a live
/// doc. A key twice is an error.
fn read_doc_table(r: &mut Reader<'_>) -> DecodeResult<DocTable> {
    let n = r.len(1)?;
    let mut docs = DocTable::default();
    for id in 0..n as u32 {
        docs.keys.push(None);
        docs.hashes.push(0);
        if r.u8()? == 1 {
            let key = r.str()?.to_string();
            docs.hashes[id as usize] = r.u64()?;
            if docs.by_key.insert(key.clone(), id).is_some() {
                return Err(DecodeError::new(format!("key {key:?} twice")));
            }
            docs.keys[id as usize] = Some(key);
        }
    }
    docs.free = (0..n as u32)
        .rev()
        .filter(|&id| docs.keys[id as usize].is_none())
        .collect();
    Ok(docs)
}

/// Decodes the `meta` payload of format `version` whole (nothing may follow it).
fn read_meta(payload: &[u8], version: u32) -> DecodeResult<Meta> {
    let mut r = Reader::new(payload);
    let rrf_k = r.f32()?;
    let hnsw = HnswParams {
        ef_construction: r.u32()?,
        ef_search: r.u32()?,
        seed: r.u64()?,
        // Stored by every build, read as off: indexes written before the default
        // changed hold `true`, which made their graph builds 6–19× slower (see
        // `HnswParams::heuristic`); it is not a user setting.
        heuristic: r.u8().map(|_| false)?,
    };
    let tokenizer = if version >= 3 { r.u32()? } else { 1 };
    let docs = read_doc_table(&mut r)?;
    let bm25_gen = r.u64()?;
    let mut stores = [None, None];
    for s in &mut stores {
        if r.u8()? == 1 {
            let generation = r.u64()?;
            *s = Some(match r.u8()? {
                0 => (generation, false, None),
                1 => (generation, true, None),
                2 => (generation, false, Some(r.u32()?)),
                g => return Err(DecodeError::new(format!("graph flag {g}"))),
            });
        }
    }
    r.finish()?;
    Ok(Meta {
        rrf_k,
        hnsw,
        tokenizer,
        docs,
        bm25_gen,
        stores,
    })
}

/// The BM25 index of the `bm25` and `bm25-delta` records, checked against `meta`: the base
/// generation it names, and the documents of its doc table.
fn read_bm25(records: &Records<'_>, meta: &Meta) -> Result<Bm25Index> {
    let docs = &meta.docs;
    let max_doc = docs.keys.len() as u32;
    let (version, payload) = records.get_versioned(KEY_BM25, Kind::Bm25)?;
    let mut rb = Reader::new(payload);
    let mut bm25 = Bm25Index::read_base(&mut rb, max_doc, version)
        .and_then(|b| rb.finish().map(|_| b))
        .map_err(|e| corrupt(KEY_BM25, e))?;
    if bm25.base_generation != meta.bm25_gen {
        return Err(corrupt(
            KEY_BM25,
            DecodeError::new("generation differs from meta"),
        ));
    }
    let mut rd = Reader::new(records.get(KEY_BM25_DELTA, Kind::Bm25Delta)?);
    bm25.read_delta(&mut rd, max_doc)
        .and_then(|_| rd.finish())
        .map_err(|e| corrupt(KEY_BM25_DELTA, e))?;
    let live: Vec<u32> = bm25.docs().collect();
    let expected: Vec<u32> = (0..max_doc)
        .filter(|&d| docs.keys[d as usize].is_some())
        .collect();
    if live != expected {
        return Err(corrupt(
            KEY_BM25,
            DecodeError::new("indexed documents differ from the doc table"),
        ));
    }
    Ok(bm25)
}

/// The record keys of one vector store: base rows, delta, and the graph (`None`: it has none).
struct StoreKeys {
    base: &'static str,
    delta: &'static str,
    graph: Option<&'static str>,
}

/// The vector store `store` (as `meta` describes it; `None`: there is none) read from its
/// records `keys`, checked against `meta`: its generation, and no vector of a removed page.
fn read_store(
    records: &Records<'_>,
    meta: &Meta,
    store: Option<StoreMeta>,
    keys: StoreKeys,
) -> Result<Option<VectorStore>> {
    let Some((generation, has_graph, declined_at)) = store else {
        return Ok(None);
    };
    let docs = &meta.docs;
    let max_doc = docs.keys.len() as u32;
    let base_key = keys.base;
    let mut rb = Reader::new(records.get(base_key, Kind::Vectors)?);
    let mut rd = Reader::new(records.get(keys.delta, Kind::VectorsDelta)?);
    let graph = match keys.graph.filter(|_| has_graph) {
        Some(k) => {
            let mut rg = Reader::new(records.get(k, Kind::Graph)?);
            let g = rg.u64().map_err(|e| corrupt(k, e))?;
            if g != generation {
                return Err(corrupt(k, DecodeError::new("graph of another base")));
            }
            Some(rg.bytes().map_err(|e| corrupt(k, e))?)
        }
        None => None,
    };
    let mut s = VectorStore::read(&mut rb, Some(&mut rd), graph, meta.hnsw, max_doc)
        .and_then(|s| rb.finish().and_then(|_| rd.finish()).map(|_| s))
        .map_err(|e| corrupt(base_key, e))?;
    if s.base_generation != generation {
        return Err(corrupt(
            base_key,
            DecodeError::new("generation differs from meta"),
        ));
    }
    s.declined_at = declined_at;
    if s.docs().any(|d| docs.keys[d as usize].is_none()) {
        return Err(corrupt(
            base_key,
            DecodeError::new("vector of a removed page"),
        ));
    }
    Ok(Some(s))
}

/// The passages' index and table from the `passages/…` records, or `None` when there are none.
/// A `passages/…` record without `passages/meta` or `passages/table` is corrupt.
fn read_passages(records: &Records<'_>) -> Result<Option<Box<Passages>>> {
    let nested: Vec<(&str, &[u8])> = records
        .0
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(PASSAGES_PREFIX)?, *v)))
        .filter(|(k, _)| *k != &KEY_PASSAGE_TABLE[PASSAGES_PREFIX.len()..])
        .collect();
    let has_table = records.0.contains_key(KEY_PASSAGE_TABLE);
    if nested.is_empty() && !has_table {
        return Ok(None);
    }
    if !nested.iter().any(|(k, _)| *k == KEY_META) {
        let key = format!("{PASSAGES_PREFIX}{KEY_META}");
        return Err(corrupt(&key, DecodeError::new("missing")));
    }
    let index = SearchIndex::from_records(nested).map_err(|e| match e {
        Error::Corrupt {
            store,
            key,
            message,
        } => Error::Corrupt {
            store,
            key: format!("{PASSAGES_PREFIX}{key}"),
            message,
        },
        e => e,
    })?;
    let payload = records.get(KEY_PASSAGE_TABLE, Kind::PassageTable)?;
    let mut r = Reader::new(payload);
    let mut p = read_table(&mut r, index)
        .and_then(|p| r.finish().map(|_| p))
        .map_err(|e| corrupt(KEY_PASSAGE_TABLE, e))?;
    p.dirty = false;
    Ok(Some(Box::new(p)))
}

impl SearchIndex {
    /// Every record of the index, framed: what a first save or an export writes.
    pub fn to_records(&self) -> Vec<(String, Vec<u8>)> {
        self.records()
            .into_iter()
            .map(|(k, d)| (k, d.into_vec()))
            .collect()
    }

    /// [`SearchIndex::to_records`], with the `bm25` base as a [`RecordSource`].
    fn records(&self) -> Vec<(String, Data)> {
        let mut out: Vec<(String, Data)> = vec![
            (KEY_META.to_string(), write_meta(self).into()),
            (KEY_BM25.to_string(), bm25_base_record(&self.bm25)),
            (
                KEY_BM25_DELTA.to_string(),
                write_with(Kind::Bm25Delta, |w| self.bm25.write_delta(w)).into(),
            ),
        ];
        if let Some(a) = &self.active {
            out.push((KEY_VECTORS.into(), vectors_base_record(a)));
            out.push((
                KEY_VECTORS_DELTA.into(),
                write_with(Kind::VectorsDelta, |w| a.write_delta(w)).into(),
            ));
            if let Some(g) = write_graph(a) {
                out.push((KEY_HNSW.into(), g.into()));
            }
        }
        if let Some(s) = &self.staging {
            out.push((KEY_STAGING.into(), vectors_base_record(s)));
            out.push((
                KEY_STAGING_DELTA.into(),
                write_with(Kind::VectorsDelta, |w| s.write_delta(w)).into(),
            ));
        }
        if let Some(p) = &self.passages {
            for (k, d) in p.index.records() {
                out.push((format!("{PASSAGES_PREFIX}{k}"), d));
            }
            out.push((KEY_PASSAGE_TABLE.into(), table_record(p).into()));
        }
        out
    }

    /// The records that changed since the last [`SearchIndex::mark_persisted`] (all of them
    /// before the first), including deletions of records that no longer exist. Add them to the
    /// commit's batch; call `mark_persisted` once it committed. Usually `meta` and the two
    /// deltas — a few KB to a few hundred KB — and the large base records only after a merge or
    /// rebuild.
    pub fn dirty_records(&self) -> Vec<RecordWrite> {
        let put = |(key, data): (String, Vec<u8>)| RecordWrite {
            key,
            data: Some(Data::Bytes(data)),
        };
        let del = |key: &str| RecordWrite {
            key: key.to_string(),
            data: None,
        };
        if !self.persisted.any {
            let mut out: Vec<RecordWrite> = self
                .records()
                .into_iter()
                .map(|(key, data)| RecordWrite {
                    key,
                    data: Some(data),
                })
                .collect();
            // A fresh index may replace records an older one left behind.
            let stale = [
                KEY_VECTORS,
                KEY_VECTORS_DELTA,
                KEY_HNSW,
                KEY_STAGING,
                KEY_STAGING_DELTA,
            ]
            .map(String::from)
            .into_iter()
            .chain(passage_keys());
            for key in stale {
                if !out.iter().any(|r| r.key == key) {
                    out.push(del(&key));
                }
            }
            return out;
        }
        let mut out = Vec::new();
        if self.bm25.dirty_base {
            out.push(RecordWrite {
                key: KEY_BM25.into(),
                data: Some(bm25_base_record(&self.bm25)),
            });
        }
        if self.bm25.dirty_delta || self.bm25.dirty_base {
            out.push(put((
                KEY_BM25_DELTA.into(),
                write_with(Kind::Bm25Delta, |w| self.bm25.write_delta(w)),
            )));
        }
        match &self.active {
            Some(a) => {
                if a.dirty_base || !self.persisted.active {
                    out.push(RecordWrite {
                        key: KEY_VECTORS.into(),
                        data: Some(vectors_base_record(a)),
                    });
                }
                if a.dirty_delta || a.dirty_base || !self.persisted.active {
                    out.push(put((
                        KEY_VECTORS_DELTA.into(),
                        write_with(Kind::VectorsDelta, |w| a.write_delta(w)),
                    )));
                }
                match write_graph(a) {
                    Some(g) if a.dirty_graph || a.dirty_base || !self.persisted.graph => {
                        out.push(put((KEY_HNSW.into(), g)))
                    }
                    None if self.persisted.graph => out.push(del(KEY_HNSW)),
                    _ => {}
                }
            }
            None if self.persisted.active => {
                out.extend([del(KEY_VECTORS), del(KEY_VECTORS_DELTA), del(KEY_HNSW)]);
            }
            None => {}
        }
        match &self.staging {
            Some(s) => {
                if s.dirty_base || !self.persisted.staging {
                    out.push(RecordWrite {
                        key: KEY_STAGING.into(),
                        data: Some(vectors_base_record(s)),
                    });
                }
                if s.dirty_delta || s.dirty_base || !self.persisted.staging {
                    out.push(put((
                        KEY_STAGING_DELTA.into(),
                        write_with(Kind::VectorsDelta, |w| s.write_delta(w)),
                    )));
                }
            }
            None if self.persisted.staging => {
                out.extend([del(KEY_STAGING), del(KEY_STAGING_DELTA)]);
            }
            None => {}
        }
        if self.dirty_meta || !out.is_empty() {
            out.insert(0, put((KEY_META.into(), write_meta(self))));
        }
        match &self.passages {
            Some(p) => {
                if !self.persisted.passages {
                    // The first passages: every record, over any an older index left behind.
                    for (key, data) in p.index.records() {
                        out.push(RecordWrite {
                            key: format!("{PASSAGES_PREFIX}{key}"),
                            data: Some(data),
                        });
                    }
                } else {
                    for w in p.index.dirty_records() {
                        out.push(RecordWrite {
                            key: format!("{PASSAGES_PREFIX}{}", w.key),
                            data: w.data,
                        });
                    }
                }
                if p.dirty || !self.persisted.passages {
                    out.push(put((KEY_PASSAGE_TABLE.into(), table_record(p))));
                }
            }
            None if self.persisted.passages => {
                out.extend(passage_keys().iter().map(|k| del(k)));
            }
            None => {}
        }
        out
    }

    /// Records that the writes of [`SearchIndex::dirty_records`] were committed.
    pub fn mark_persisted(&mut self) {
        if let Some(p) = self.passages.as_mut() {
            p.index.mark_persisted();
            p.dirty = false;
        }
        self.dirty_meta = false;
        self.bm25.dirty_base = false;
        self.bm25.dirty_delta = false;
        for s in [&mut self.active, &mut self.staging].into_iter().flatten() {
            s.dirty_base = false;
            s.dirty_delta = false;
            s.dirty_graph = false;
        }
        self.persisted = Persisted {
            any: true,
            active: self.active.is_some(),
            graph: self.active.as_ref().is_some_and(|a| a.has_graph()),
            staging: self.staging.is_some(),
            passages: self.passages.is_some(),
        };
    }

    /// Opens an index from its records (key, framed bytes), without tokenizing or embedding
    /// anything. No records at all gives an empty index (a wiki that never had one: the caller
    /// rebuilds it from the pages). Postings an older tokenizer made open as they are: see
    /// [`SearchIndex::needs_retokenize`].
    ///
    /// Errors: [`Error::Corrupt`] (store `search`, the record's key) for a missing, truncated,
    /// altered, foreign-version or mismatched record.
    pub fn from_records<'a>(
        records: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Result<Self> {
        let records = Records(records.into_iter().collect());
        if records.0.is_empty() {
            return Ok(SearchIndex::default());
        }
        let passages = read_passages(&records)?;
        let (version, meta) = records.get_versioned(KEY_META, Kind::Meta)?;
        let meta = read_meta(meta, version).map_err(|e| corrupt(KEY_META, e))?;
        let bm25 = read_bm25(&records, &meta)?;
        let [active_meta, staging_meta] = meta.stores;
        let active_keys = StoreKeys {
            base: KEY_VECTORS,
            delta: KEY_VECTORS_DELTA,
            graph: Some(KEY_HNSW),
        };
        let active = read_store(&records, &meta, active_meta, active_keys)?;
        let staging_keys = StoreKeys {
            base: KEY_STAGING,
            delta: KEY_STAGING_DELTA,
            graph: None,
        };
        let staging = read_store(&records, &meta, staging_meta, staging_keys)?;

        let config = SearchConfig {
            bm25: bm25.params(),
            hnsw: meta.hnsw,
            rrf_k: meta.rrf_k,
        };
        Ok(SearchIndex {
            config,
            docs: meta.docs,
            bm25,
            persisted: Persisted {
                any: true,
                active: active.is_some(),
                graph: active.as_ref().is_some_and(|a| a.has_graph()),
                staging: staging.is_some(),
                passages: passages.is_some(),
            },
            active,
            staging,
            dirty_meta: false,
            synced_op: None,
            stamp_rev: None,
            passages,
            tokenizer: meta.tokenizer,
        })
    }
}
