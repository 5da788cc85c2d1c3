//! Source passages as retrieval units beside the pages: a second BM25F index and vector store,
//! nested in the [`SearchIndex`] of the pages, over the passages every source is cut into
//! (`markdown::passages::cut`, called by the kernel), with a table of where each passage is.
//!
//! Pages and passages are kept apart rather than mixed in one posting list: BM25's length
//! normalisation and idf (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and
//! Beyond", 2009) depend on the collection's statistics, and passages (a few paragraphs each,
//! tens per source) would otherwise move every page's scores. A search with
//! [`super::SearchOptions::passages`] ranks each collection with its own statistics and returns
//! both, each hit tagged with its [`HitKind`].
//!
//! A passage's key is `"{source}#L{first}-{last}"` (its 1-based line range; `~2`, `~3`… added
//! when one line holds several passages). Its fields are the heading path (BM25F title) and the
//! text (body); its metadata ([`PassageMeta`]) says which source, version, heading and lines.
//!
//! *Invariant:* the passages of a source are those of exactly one version of it, the one the
//! table names; [`SearchIndex::set_source_passages`] replaces them whole, and
//! [`SearchIndex::remove_source_passages`] removes them whole. The nested index holds a passage
//! iff the table does (checked when the records are read: [`read_table`]).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::bm25::DocFields;
use super::codec::{DecodeError, DecodeResult, Reader, Writer};
use super::{SearchIndex, SyncReport};

/// Which collection a search hit is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "lowercase")]
pub enum HitKind {
    /// A wiki page (the key is the page key).
    #[default]
    Page,
    /// A passage of a source (the key is the passage key; the hit names the source).
    Passage,
}

/// Where a passage is: its source, the version it was cut from, its heading path and lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct PassageMeta {
    /// The source key.
    pub source: String,
    /// The source version (SHA-256 of its text) the passage was cut from.
    pub version: String,
    /// Heading path, outermost first, joined by " › " ("" before the first heading).
    pub heading: String,
    /// 1-based inclusive line range in the source text.
    pub lines: (u32, u32),
}

/// One passage given to [`SearchIndex::set_source_passages`].
#[derive(Debug, Clone, Copy)]
pub struct NewPassage<'a> {
    /// Heading path.
    pub heading: &'a str,
    /// The passage text.
    pub text: &'a str,
    /// 1-based inclusive line range.
    pub lines: (u32, u32),
}

/// The passages of one source, as the table keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SourceEntry {
    pub(crate) version: String,
    /// Passage keys in text order.
    pub(crate) keys: Vec<String>,
}

/// The passage collection of a [`SearchIndex`]: the nested index and the table.
#[derive(Debug, Default)]
pub(crate) struct Passages {
    /// BM25F and vectors over the passages (keys: passage keys). Never has passages of its own.
    pub(crate) index: SearchIndex,
    /// Per source key, its version and passage keys.
    pub(crate) sources: BTreeMap<String, SourceEntry>,
    /// Per passage key, where it is.
    pub(crate) meta: HashMap<String, PassageMeta>,
    /// The table changed since it was last persisted.
    pub(crate) dirty: bool,
}

/// The key of the passage of `source` at `lines`, unique among `taken`.
fn passage_key(source: &str, lines: (u32, u32), taken: &HashMap<String, PassageMeta>) -> String {
    let base = format!("{source}#L{}-{}", lines.0, lines.1);
    if !taken.contains_key(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}~{n}"))
        .find(|k| !taken.contains_key(k))
        .expect("an unbounded range has a free key")
}

impl Passages {
    pub(crate) fn remove_source(&mut self, source: &str) -> usize {
        let Some(entry) = self.sources.remove(source) else {
            return 0;
        };
        for k in &entry.keys {
            self.index.remove(k);
            self.meta.remove(k);
        }
        self.dirty = true;
        entry.keys.len()
    }
}

impl SearchIndex {
    /// The version of `source` whose passages are indexed, if any.
    pub fn passage_version(&self, source: &str) -> Option<&str> {
        self.passages
            .as_ref()?
            .sources
            .get(source)
            .map(|e| e.version.as_str())
    }

    /// Number of indexed passages.
    pub fn passage_count(&self) -> usize {
        self.passages.as_ref().map_or(0, |p| p.meta.len())
    }

    /// Sources with indexed passages, with their version, in key order.
    pub fn passage_sources(&self) -> Vec<(String, String)> {
        self.passages.as_ref().map_or_else(Vec::new, |p| {
            p.sources
                .iter()
                .map(|(k, e)| (k.clone(), e.version.clone()))
                .collect()
        })
    }

    /// Where the passage `key` is, if it is indexed.
    pub fn passage(&self, key: &str) -> Option<&PassageMeta> {
        self.passages.as_ref()?.meta.get(key)
    }

    /// The passage keys of `source`, in text order (empty when none is indexed).
    pub fn source_passage_keys(&self, source: &str) -> &[String] {
        self.passages
            .as_ref()
            .and_then(|p| p.sources.get(source))
            .map_or(&[], |e| e.keys.as_slice())
    }

    /// The nested index over the passages, if any source has passages (for embeddings, stats
    /// and benchmarks).
    pub fn passage_index(&self) -> Option<&SearchIndex> {
        self.passages.as_ref().map(|p| &p.index)
    }

    pub(crate) fn passages_mut(&mut self) -> &mut Passages {
        self.passages.get_or_insert_with(Box::default)
    }

    /// Indexes `passages` as the passages of `version` of `source`, replacing whatever of
    /// `source` was indexed (its vectors too: they describe the old text). A source with no
    /// passage (an empty text) is kept in the table with none, so it is not cut again.
    /// Returns what changed, in passages.
    pub fn set_source_passages(
        &mut self,
        source: &str,
        version: &str,
        passages: &[NewPassage<'_>],
    ) -> SyncReport {
        let p = self.passages_mut();
        let removed = p.remove_source(source);
        let mut keys = Vec::with_capacity(passages.len());
        for n in passages {
            let key = passage_key(source, n.lines, &p.meta);
            p.meta.insert(
                key.clone(),
                PassageMeta {
                    source: source.to_string(),
                    version: version.to_string(),
                    heading: n.heading.to_string(),
                    lines: n.lines,
                },
            );
            keys.push(key);
        }
        // Through the BM25 delta: a commit costs its source's passages, not a merge of every
        // passage (merges come when the delta is due one).
        for (key, n) in keys.iter().zip(passages) {
            p.index.upsert(key, &passage_fields(n), None);
        }
        let added = keys.len();
        p.sources.insert(
            source.to_string(),
            SourceEntry {
                version: version.to_string(),
                keys,
            },
        );
        p.dirty = true;
        SyncReport {
            added,
            updated: 0,
            removed,
        }
    }

    /// Indexes the passages of many sources at once, as [`SearchIndex::set_source_passages`]
    /// does for each, with one BM25 merge at the end: what a rebuild or a sync of many sources
    /// uses.
    pub fn set_many_source_passages<'a>(
        &mut self,
        sources: impl IntoIterator<Item = (&'a str, &'a str, &'a [NewPassage<'a>])>,
    ) -> SyncReport {
        let p = self.passages_mut();
        let mut report = SyncReport::default();
        let mut batch: Vec<(String, DocFields<'a>)> = Vec::new();
        for (source, version, passages) in sources {
            report.removed += p.remove_source(source);
            let mut keys = Vec::with_capacity(passages.len());
            for n in passages {
                let key = passage_key(source, n.lines, &p.meta);
                p.meta.insert(
                    key.clone(),
                    PassageMeta {
                        source: source.to_string(),
                        version: version.to_string(),
                        heading: n.heading.to_string(),
                        lines: n.lines,
                    },
                );
                batch.push((key.clone(), passage_fields(n)));
                keys.push(key);
            }
            report.added += keys.len();
            p.sources.insert(
                source.to_string(),
                SourceEntry {
                    version: version.to_string(),
                    keys,
                },
            );
        }
        p.index
            .upsert_many(batch.iter().map(|(k, f)| (k.as_str(), *f)));
        p.dirty = true;
        report
    }

    /// Removes every passage of `source`; returns how many there were.
    pub fn remove_source_passages(&mut self, source: &str) -> usize {
        let Some(p) = self.passages.as_mut() else {
            return 0;
        };
        if !p.sources.contains_key(source) {
            return 0;
        }
        p.remove_source(source)
    }

    /// The user confirmed re-embedding the passages with `(model, dim)` (as
    /// [`SearchIndex::confirm_reembed`] does for pages, which also starts this when the passages
    /// have vectors): their old vectors serve until every passage has a new one.
    pub fn confirm_passage_reembed(&mut self, model: &str, dim: usize) {
        if let Some(p) = self.passages.as_mut() {
            p.index.confirm_reembed(model, dim);
        }
    }

    /// Keys of passages that still need an embedding of `(model, dim)` (as
    /// [`SearchIndex::missing_embeddings`] for pages), in key order.
    pub fn missing_passage_embeddings(&self, model: &str, dim: usize) -> Vec<String> {
        self.passages
            .as_ref()
            .map_or_else(Vec::new, |p| p.index.missing_embeddings(model, dim))
    }

    /// Stores a batch of passage embeddings (as [`SearchIndex::put_embeddings`] for pages: all
    /// or nothing, one dimension, the active or the re-embedding model).
    ///
    /// Errors: as `put_embeddings` ([`super::SearchError::UnknownKey`] for a key that is no
    /// indexed passage).
    pub fn put_passage_embeddings(
        &mut self,
        model: &str,
        items: &[(&str, &[f32])],
    ) -> Result<usize, super::SearchError> {
        match self.passages.as_mut() {
            Some(p) => p.index.put_embeddings(model, items),
            None => match items.first() {
                Some((k, _)) => Err(super::SearchError::UnknownKey(k.to_string())),
                None => Ok(0),
            },
        }
    }
}

/// The fields a passage is indexed with: its heading path as the title, its text as the body.
pub fn passage_fields<'a>(p: &NewPassage<'a>) -> DocFields<'a> {
    DocFields {
        title: p.heading,
        aliases: &[],
        body: p.text,
    }
}

/// The text a passage's embedding is made from: its heading path and its text.
pub fn passage_embedding_text(heading: &str, text: &str) -> String {
    if heading.is_empty() {
        text.to_string()
    } else {
        format!("{heading}\n\n{text}")
    }
}

/// Writes the table: per source its key, version and passages (key, heading, lines).
pub(crate) fn write_table(p: &Passages, w: &mut Writer) {
    w.len(p.sources.len());
    for (source, entry) in &p.sources {
        w.str(source);
        w.str(&entry.version);
        w.len(entry.keys.len());
        for k in &entry.keys {
            let m = &p.meta[k];
            w.str(k);
            w.str(&m.heading);
            w.u32(m.lines.0);
            w.u32(m.lines.1);
        }
    }
}

/// Reads the table written by [`write_table`] and checks it against the nested `index`: the
/// same passages, none twice.
pub(crate) fn read_table(r: &mut Reader<'_>, index: SearchIndex) -> DecodeResult<Passages> {
    let mut p = Passages {
        index,
        ..Passages::default()
    };
    let n = r.len(1)?;
    for _ in 0..n {
        let source = r.str()?.to_string();
        let version = r.str()?.to_string();
        let count = r.len(1)?;
        let mut keys = Vec::with_capacity(count);
        for _ in 0..count {
            let key = r.str()?.to_string();
            let heading = r.str()?.to_string();
            let lines = (r.u32()?, r.u32()?);
            if !p.index.contains(&key) {
                return Err(DecodeError::new(format!("passage {key:?} is not indexed")));
            }
            let meta = PassageMeta {
                source: source.clone(),
                version: version.clone(),
                heading,
                lines,
            };
            if p.meta.insert(key.clone(), meta).is_some() {
                return Err(DecodeError::new(format!("passage {key:?} twice")));
            }
            keys.push(key);
        }
        if p.sources
            .insert(source.clone(), SourceEntry { version, keys })
            .is_some()
        {
            return Err(DecodeError::new(format!("source {source:?} twice")));
        }
    }
    if p.meta.len() != p.index.len() {
        return Err(DecodeError::new("indexed passages differ from the table"));
    }
    Ok(p)
}
