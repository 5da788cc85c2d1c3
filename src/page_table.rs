//! The page table: what operations need to know about every page without reading its body.
//!
//! One *row* per page (`meta/row/<key>`): its metadata, the size of its body, the link targets,
//! headings and block ids in it, and what its history says about human edits (Decision 5). Beside
//! the rows, three lists of ids: the claims stated on each page (`meta/page-claims/<key>`), the
//! claims of each source (`meta/source-claims/<key>`) and the contradiction records naming each
//! page (`meta/page-records/<key>`). Routing, link resolution, backlinks, the one-hop
//! neighbours of an answer, index.md, the extension's popup and a compile's plan read these, and
//! then the bodies of only the pages they change or answer from.
//!
//! Everything here is derived: [`derive`] computes the changes from an operation's batch — the
//! page, revision, claim and ledger records it writes — and `Wiki::finish` commits them in the
//! same transaction, with the stamp `meta/page-table` (the operation's id). A stamp behind the op
//! counter (a write by an older build, an import of a vault) makes the next reader rebuild the
//! table from the records ([`rebuild`]). The table is never exported, journaled for rollback or
//! imported: it is rebuilt.
//!
//! *Invariant:* after every committed operation, the rows and lists equal what [`rebuild`] would
//! derive from the page, claim and ledger records (tests compare them after every source of the
//! real-size suite).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::error::Result;
use crate::markdown::keys::fold_key;
use crate::markdown::resolve::{LinkGraph, Resolver};
use crate::model::{Author, Claim, Contradiction, OpId, Page, PageKind, Revision};
use crate::storage::{Batch, Expect, Storage, Store, Write};

pub use crate::records::{
    is_derived, PAGE_CLAIMS_PREFIX, PAGE_RECORDS_PREFIX, ROW_PREFIX, SOURCE_CLAIMS_PREFIX,
    STAMP_KEY,
};

/// What a page's history says for Decision 5, so a compile need not read it: the last revision
/// the model wrote (0: none) and whether a person edited the page after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryMark {
    /// The last revision by [`Author::Llm`] (0 when the model never wrote the page).
    pub llm: u64,
    /// A revision by [`Author::Human`] came after it.
    pub human_after: bool,
}

impl HistoryMark {
    /// The mark after `revision`, starting from `self`.
    fn after(self, revision: &Revision) -> HistoryMark {
        match revision.author {
            Author::Llm => HistoryMark {
                llm: revision.number,
                human_after: false,
            },
            Author::Human => HistoryMark {
                human_after: true,
                ..self
            },
            Author::App => self,
        }
    }
}

/// One page's row: everything about it but its body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageRow {
    /// Page key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Kind.
    pub kind: PageKind,
    /// One-line summary.
    #[serde(default)]
    pub summary: String,
    /// Aliases.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Source keys.
    #[serde(default)]
    pub sources: Vec<String>,
    /// Creation time (ms).
    pub created: Millis,
    /// Last change (ms).
    pub updated: Millis,
    /// Latest revision number.
    pub revision: u64,
    /// Bytes of the body.
    pub bytes: u64,
    /// The distinct link targets of the body's wikilinks and embeds, as written, in order of
    /// first use (`[[#heading]]` links to the page itself are left out; `[[C#]]` keeps its `#`).
    #[serde(default)]
    pub links: Vec<String>,
    /// The body's headings, folded as links name them.
    #[serde(default)]
    pub headings: Vec<String>,
    /// The body's block ids (`^id`).
    #[serde(default)]
    pub blocks: Vec<String>,
    /// Facts kept elsewhere because the page was full ([`Page::more_facts`]): how many sources.
    #[serde(default)]
    pub more_facts: usize,
    /// What the history says for Decision 5; `None` when not known (rebuilt from the pages
    /// alone): read the history.
    #[serde(default)]
    pub history: Option<HistoryMark>,
}

impl PageRow {
    /// The row of `page` with the history mark `history`.
    pub fn of(page: &Page, history: Option<HistoryMark>) -> PageRow {
        let mut links: Vec<String> = Vec::new();
        for l in crate::markdown::wikilinks::links(&page.body) {
            // `[[C#]]` (an empty heading) names the page `C#` when there is one: keep the `#`,
            // which resolves to C# first and to C otherwise.
            let target = match &l.fragment {
                Some(crate::markdown::wikilinks::Fragment::Heading(h))
                    if h.is_empty() && !l.target.is_empty() =>
                {
                    format!("{}#", l.target)
                }
                _ => l.target,
            };
            if !target.is_empty() && !links.contains(&target) {
                links.push(target);
            }
        }
        PageRow {
            key: page.key.clone(),
            title: page.title.clone(),
            kind: page.kind,
            summary: page.summary.clone(),
            aliases: page.aliases.clone(),
            tags: page.tags.clone(),
            sources: page.sources.clone(),
            created: page.created,
            updated: page.updated,
            revision: page.revision,
            bytes: page.body.len() as u64,
            links,
            headings: crate::markdown::blocks::heading_names(&page.body)
                .into_iter()
                .collect(),
            blocks: crate::markdown::blocks::block_ids(&page.body)
                .into_iter()
                .collect(),
            more_facts: page.more_facts.len(),
            history,
        }
    }

    /// The page without its body (and without what only the page record holds: unknown
    /// frontmatter, the `more_facts` entries): for code that needs a [`Page`]'s metadata.
    pub fn page_without_body(&self) -> Page {
        Page {
            key: self.key.clone(),
            title: self.title.clone(),
            kind: self.kind,
            summary: self.summary.clone(),
            aliases: self.aliases.clone(),
            tags: self.tags.clone(),
            sources: self.sources.clone(),
            created: self.created,
            updated: self.updated,
            body: String::new(),
            revision: self.revision,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        }
    }

    /// The page's line in `Wiki::pages`.
    pub fn info(&self) -> crate::model::PageInfo {
        crate::model::PageInfo {
            key: self.key.clone(),
            title: self.title.clone(),
            kind: self.kind,
            summary: self.summary.clone(),
            updated: self.updated,
            revision: self.revision,
            bytes: self.bytes,
        }
    }
}

/// Every page's row, by key; the resolver and link graph over them are built on first use and
/// kept with the table (a table is never changed in place once shared).
#[derive(Debug, Clone, Default)]
pub struct PageTable {
    rows: BTreeMap<String, PageRow>,
    resolver: std::cell::OnceCell<Resolver>,
    graph: std::cell::OnceCell<LinkGraph>,
}

impl PartialEq for PageTable {
    fn eq(&self, other: &Self) -> bool {
        self.rows == other.rows
    }
}

impl PageTable {
    /// A table of `rows`.
    pub fn from_rows(rows: impl IntoIterator<Item = PageRow>) -> Self {
        PageTable {
            rows: rows.into_iter().map(|r| (r.key.clone(), r)).collect(),
            ..Default::default()
        }
    }

    /// The row of `key`, exactly.
    pub fn get(&self, key: &str) -> Option<&PageRow> {
        self.rows.get(key)
    }

    /// The row of `key`, exactly, else case-insensitively (NFC, as keys compare).
    pub fn find(&self, key: &str) -> Option<&PageRow> {
        self.rows.get(key).or_else(|| {
            let folded = fold_key(key);
            self.rows.values().find(|r| fold_key(&r.key) == folded)
        })
    }

    /// Every row, by key.
    pub fn rows(&self) -> impl Iterator<Item = &PageRow> {
        self.rows.values()
    }

    /// Number of pages.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True for a wiki without pages.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Whether a page has this key (exactly).
    pub fn contains(&self, key: &str) -> bool {
        self.rows.contains_key(key)
    }

    /// The folded keys of every page (for new keys that must not collide).
    pub fn taken_keys(&self) -> BTreeSet<String> {
        self.rows.keys().map(|k| fold_key(k)).collect()
    }

    /// A link resolver over every page (keys, titles, aliases).
    pub fn resolver(&self) -> &Resolver {
        self.resolver.get_or_init(|| {
            Resolver::new(
                self.rows
                    .values()
                    .map(|r| (r.key.as_str(), r.title.as_str(), r.aliases.as_slice())),
            )
        })
    }

    /// The link graph of every page, from the rows' link targets.
    pub fn link_graph(&self) -> &LinkGraph {
        self.graph.get_or_init(|| {
            LinkGraph::from_targets(
                self.resolver(),
                self.rows
                    .values()
                    .map(|r| (r.key.as_str(), r.links.as_slice())),
            )
        })
    }

    /// Every page without its body, by key ([`PageRow::page_without_body`]).
    pub fn pages_without_bodies(&self) -> Vec<Page> {
        self.rows.values().map(PageRow::page_without_body).collect()
    }

    /// index.md for these pages ([`crate::documents::render_index`]).
    pub fn index_md(&self) -> String {
        crate::documents::render_index_entries(
            self.rows
                .values()
                .map(|r| (r.key.as_str(), r.title.as_str(), r.kind, r.summary.as_str())),
        )
    }

    fn apply(&mut self, changes: &BTreeMap<String, Option<PageRow>>) {
        self.resolver = Default::default();
        self.graph = Default::default();
        for (k, row) in changes {
            match row {
                Some(r) => {
                    self.rows.insert(k.clone(), r.clone());
                }
                None => {
                    self.rows.remove(k);
                }
            }
        }
    }
}

/// The stamp record.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Stamp {
    /// The operation the table is current after.
    pub op: OpId,
}

/// What [`derive`] found in a batch and added to it.
#[derive(Debug, Default)]
pub struct Derived {
    /// The pages the batch writes, after it (by key).
    pub written: BTreeMap<String, Page>,
    /// The pages the batch deletes.
    pub deleted: Vec<String>,
    /// The table after the batch.
    pub table: PageTable,
    /// Where the stamp put sits in the batch (to read its new revision after the commit).
    pub stamp_at: usize,
}

impl Derived {
    /// Whether the batch changes any page.
    pub fn pages_changed(&self) -> bool {
        !self.written.is_empty() || !self.deleted.is_empty()
    }
}

fn parse<T: serde::de::DeserializeOwned>(store: Store, key: &str, bytes: &[u8]) -> Result<T> {
    crate::records::from_json(store, key, bytes)
}

/// One id list (`prefix<key>` → sorted ids) with the changes to make to it.
#[derive(Default)]
struct ListChanges {
    add: BTreeMap<String, BTreeSet<String>>,
    remove: BTreeMap<String, BTreeSet<String>>,
}

impl ListChanges {
    fn add(&mut self, key: &str, id: &str) {
        if let Some(r) = self.remove.get_mut(key) {
            r.remove(id);
        }
        self.add
            .entry(key.to_string())
            .or_default()
            .insert(id.to_string());
    }
    fn remove(&mut self, key: &str, id: &str) {
        if let Some(a) = self.add.get_mut(key) {
            a.remove(id);
        }
        self.remove
            .entry(key.to_string())
            .or_default()
            .insert(id.to_string());
    }
    fn keys(&self) -> BTreeSet<&String> {
        self.add.keys().chain(self.remove.keys()).collect()
    }
}

/// The changes to the lists of claims per page and per source that writing `claims_put` (id,
/// new claim or `None` for a delete, the write's expectation) makes: the old claim's page and
/// source leave, the new one's come. Reads each claim overwritten once.
async fn claim_lists<S: Storage>(
    storage: &S,
    claims_put: &[(String, Option<Claim>, Expect)],
) -> Result<(ListChanges, ListChanges)> {
    let mut page_claims = ListChanges::default();
    let mut source_claims = ListChanges::default();
    let mut before_claims: BTreeMap<String, Option<Claim>> = BTreeMap::new();
    for (id, new, expect) in claims_put {
        if !before_claims.contains_key(id) {
            let old = if *expect == Expect::Absent {
                None
            } else {
                match storage.get(Store::Claims, id).await? {
                    Some(r) => Some(parse::<Claim>(Store::Claims, id, &r.data)?),
                    None => None,
                }
            };
            before_claims.insert(id.clone(), old);
        }
        if let Some(Some(old)) = before_claims.get(id) {
            page_claims.remove(&old.page, id);
            source_claims.remove(&old.source_key, id);
        }
        if let Some(c) = new {
            page_claims.add(&c.page, id);
            source_claims.add(&c.source_key, id);
        }
        before_claims.insert(id.clone(), new.clone());
    }
    Ok((page_claims, source_claims))
}

/// The changes to the lists of contradiction records per page that writing `records_put`
/// makes (as [`claim_lists`] for claims).
async fn record_lists<S: Storage>(
    storage: &S,
    records_put: &[(String, Option<Contradiction>, Expect)],
) -> Result<ListChanges> {
    let mut page_records = ListChanges::default();
    let mut before_records: BTreeMap<String, Option<Contradiction>> = BTreeMap::new();
    for (id, new, expect) in records_put {
        if !before_records.contains_key(id) {
            let old = if *expect == Expect::Absent {
                None
            } else {
                match storage.get(Store::Ledger, id).await? {
                    Some(r) => Some(parse::<Contradiction>(Store::Ledger, id, &r.data)?),
                    None => None,
                }
            };
            before_records.insert(id.clone(), old);
        }
        if let Some(Some(old)) = before_records.get(id) {
            for p in &old.pages {
                page_records.remove(p, id);
            }
        }
        if let Some(r) = new {
            for p in &r.pages {
                page_records.add(p, id);
            }
        }
        before_records.insert(id.clone(), new.clone());
    }
    Ok(page_records)
}

/// Adds to `batch` the id lists (`prefix<key>`) that `lists` change, each read in one request
/// per prefix; an emptied list is deleted.
async fn put_id_lists<S: Storage>(
    storage: &S,
    batch: &mut Batch,
    lists: [(&str, &ListChanges); 3],
) -> Result<()> {
    for (prefix, changes) in lists {
        // The lists this batch changes, read in one request.
        let keys: Vec<&String> = changes.keys().into_iter().collect();
        let records: Vec<String> = keys.iter().map(|k| format!("{prefix}{k}")).collect();
        let stored = storage.get_many(Store::Meta, &records).await?;
        for ((key, record), stored) in keys.into_iter().zip(records).zip(stored) {
            let mut ids: BTreeSet<String> = match stored {
                Some(r) => parse::<Vec<String>>(Store::Meta, &record, &r.data)?
                    .into_iter()
                    .collect(),
                None => BTreeSet::new(),
            };
            let before = ids.clone();
            for id in changes.remove.get(key).into_iter().flatten() {
                ids.remove(id);
            }
            ids.extend(changes.add.get(key).into_iter().flatten().cloned());
            if ids == before {
                continue;
            }
            if ids.is_empty() {
                batch.delete(Store::Meta, record, Expect::Any);
            } else {
                let list: Vec<&String> = ids.iter().collect();
                batch.put(
                    Store::Meta,
                    record,
                    crate::records::to_json(&list),
                    Expect::Any,
                );
            }
        }
    }
    Ok(())
}

/// Adds to `batch` the page table's changes for what `batch` writes (see the module docs), and
/// the stamp for operation `op`. `table` is the table before the batch. Reads the records the
/// batch overwrites or deletes among claims and contradiction records (to know the pages and
/// sources they leave), and the id lists it changes: in proportion to the batch, never the
/// whole wiki.
pub async fn derive<S: Storage>(
    storage: &S,
    batch: &mut Batch,
    table: &PageTable,
    op: OpId,
) -> Result<Derived> {
    let mut written: BTreeMap<String, Page> = BTreeMap::new();
    let mut deleted: Vec<String> = Vec::new();
    let mut marks: BTreeMap<String, Option<HistoryMark>> = BTreeMap::new();
    let mut claims_put: Vec<(String, Option<Claim>, Expect)> = Vec::new();
    let mut records_put: Vec<(String, Option<Contradiction>, Expect)> = Vec::new();
    for w in &batch.writes {
        match w {
            Write::Put {
                store: Store::Pages,
                key,
                data,
                ..
            } => {
                let page: Page = parse(Store::Pages, key, &data.to_vec())?;
                deleted.retain(|k| k != key);
                written.insert(key.clone(), page);
            }
            Write::Delete {
                store: Store::Pages,
                key,
                ..
            } => {
                written.remove(key);
                if !deleted.contains(key) {
                    deleted.push(key.clone());
                }
            }
            Write::Put {
                store: Store::Revisions,
                key,
                data,
                ..
            } => {
                let r: Revision = parse(Store::Revisions, key, &data.to_vec())?;
                let start = marks.get(&r.page).copied().unwrap_or_else(|| {
                    match table.get(&r.page) {
                        Some(row) => row.history,
                        // A page new to the table starts with no history of its own.
                        None => Some(HistoryMark {
                            llm: 0,
                            human_after: false,
                        }),
                    }
                });
                marks.insert(r.page.clone(), start.map(|m| m.after(&r)));
            }
            Write::Put {
                store: Store::Claims,
                key,
                data,
                expect,
            } => {
                let c: Claim = parse(Store::Claims, key, &data.to_vec())?;
                claims_put.push((key.clone(), Some(c), *expect));
            }
            Write::Delete {
                store: Store::Claims,
                key,
                expect,
            } => claims_put.push((key.clone(), None, *expect)),
            Write::Put {
                store: Store::Ledger,
                key,
                data,
                expect,
            } => {
                let r: Contradiction = parse(Store::Ledger, key, &data.to_vec())?;
                records_put.push((key.clone(), Some(r), *expect));
            }
            Write::Delete {
                store: Store::Ledger,
                key,
                expect,
            } => records_put.push((key.clone(), None, *expect)),
            _ => {}
        }
    }

    // Claim and record lists: the old record's page and source leave, the new one's come.
    let (page_claims, source_claims) = claim_lists(storage, &claims_put).await?;
    let page_records = record_lists(storage, &records_put).await?;
    put_id_lists(
        storage,
        batch,
        [
            (PAGE_CLAIMS_PREFIX, &page_claims),
            (SOURCE_CLAIMS_PREFIX, &source_claims),
            (PAGE_RECORDS_PREFIX, &page_records),
        ],
    )
    .await?;

    // Rows.
    let mut rows: BTreeMap<String, Option<PageRow>> = BTreeMap::new();
    for (k, page) in &written {
        let history = match marks.get(k) {
            Some(m) => *m,
            None => table.get(k).and_then(|r| r.history),
        };
        let row = PageRow::of(page, history);
        batch.put(
            Store::Meta,
            format!("{ROW_PREFIX}{k}"),
            crate::records::to_json(&row),
            Expect::Any,
        );
        rows.insert(k.clone(), Some(row));
    }
    for k in &deleted {
        batch.delete(Store::Meta, format!("{ROW_PREFIX}{k}"), Expect::Any);
        rows.insert(k.clone(), None);
    }
    let mut after = table.clone();
    after.apply(&rows);
    let stamp_at = batch.len();
    batch.put(
        Store::Meta,
        STAMP_KEY,
        crate::records::to_json(&Stamp { op }),
        Expect::Any,
    );
    Ok(Derived {
        written,
        deleted,
        table: after,
        stamp_at,
    })
}

/// The page table derived from the records themselves (every page, claim and contradiction
/// record: a full read), and the batch that replaces the stored table with it (stale rows and
/// lists deleted), stamped for operation `op`. Rows get no history mark: a compile reads the
/// history of a page it changes until the page's next revision marks it.
pub async fn rebuild<S: Storage>(storage: &S, op: OpId) -> Result<(PageTable, Batch)> {
    let mut batch = Batch::new();
    let mut rows = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let chunk = storage
            .scan_page(
                Store::Pages,
                "",
                after.as_deref(),
                crate::storage::REBUILD_BATCH,
            )
            .await?;
        let Some((last, _)) = chunk.last() else { break };
        after = Some(last.clone());
        for (k, r) in &chunk {
            let page: Page = parse(Store::Pages, k, &r.data)?;
            rows.push(PageRow::of(&page, None));
        }
    }
    let mut lists: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (id, r) in storage.scan(Store::Claims, "").await? {
        let c: Claim = parse(Store::Claims, &id, &r.data)?;
        lists
            .entry(format!("{PAGE_CLAIMS_PREFIX}{}", c.page))
            .or_default()
            .insert(id.clone());
        lists
            .entry(format!("{SOURCE_CLAIMS_PREFIX}{}", c.source_key))
            .or_default()
            .insert(id);
    }
    for (id, r) in storage.scan(Store::Ledger, "").await? {
        let rec: Contradiction = parse(Store::Ledger, &id, &r.data)?;
        for p in &rec.pages {
            lists
                .entry(format!("{PAGE_RECORDS_PREFIX}{p}"))
                .or_default()
                .insert(id.clone());
        }
    }
    let mut keep: BTreeSet<String> = BTreeSet::new();
    for row in &rows {
        let key = format!("{ROW_PREFIX}{}", row.key);
        batch.put(
            Store::Meta,
            key.clone(),
            crate::records::to_json(row),
            Expect::Any,
        );
        keep.insert(key);
    }
    for (key, ids) in &lists {
        let list: Vec<&String> = ids.iter().collect();
        batch.put(
            Store::Meta,
            key.clone(),
            crate::records::to_json(&list),
            Expect::Any,
        );
        keep.insert(key.clone());
    }
    for prefix in [
        ROW_PREFIX,
        PAGE_CLAIMS_PREFIX,
        SOURCE_CLAIMS_PREFIX,
        PAGE_RECORDS_PREFIX,
    ] {
        for (k, _) in storage.scan(Store::Meta, prefix).await? {
            if !keep.contains(&k) {
                batch.delete(Store::Meta, k, Expect::Any);
            }
        }
    }
    batch.put(
        Store::Meta,
        STAMP_KEY,
        crate::records::to_json(&Stamp { op }),
        Expect::Any,
    );
    Ok((PageTable::from_rows(rows), batch))
}

/// The ids of the list `prefix<key>` (claims of a page or a source, records of a page), sorted.
pub async fn list<S: Storage>(storage: &S, prefix: &str, key: &str) -> Result<Vec<String>> {
    let record = format!("{prefix}{key}");
    Ok(match storage.get(Store::Meta, &record).await? {
        Some(r) => parse(Store::Meta, &record, &r.data)?,
        None => Vec::new(),
    })
}

/// The differences between the stored page table and the one [`rebuild`] derives from the
/// records (history marks aside, which a rebuild does not know): empty when the table is right.
/// For tests and diagnostics; reads everything.
pub async fn differences<S: Storage>(storage: &S) -> Result<Vec<String>> {
    let (rebuilt, batch) = rebuild(storage, 0).await?;
    let mut out = Vec::new();
    let stored: BTreeMap<String, PageRow> = storage
        .scan(Store::Meta, ROW_PREFIX)
        .await?
        .into_iter()
        .map(|(k, r)| parse::<PageRow>(Store::Meta, &k, &r.data).map(|row| (row.key.clone(), row)))
        .collect::<Result<_>>()?;
    for row in rebuilt.rows() {
        match stored.get(&row.key) {
            None => out.push(format!("row {} missing", row.key)),
            Some(s) => {
                let mut s = s.clone();
                s.history = None;
                if s != *row {
                    out.push(format!(
                        "row {} differs: stored {s:?}, derived {row:?}",
                        row.key
                    ));
                }
            }
        }
    }
    for k in stored.keys().filter(|k| !rebuilt.contains(k)) {
        out.push(format!("row {k} has no page"));
    }
    let mut lists: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for prefix in [
        PAGE_CLAIMS_PREFIX,
        SOURCE_CLAIMS_PREFIX,
        PAGE_RECORDS_PREFIX,
    ] {
        for (k, r) in storage.scan(Store::Meta, prefix).await? {
            lists.insert(k, r.data);
        }
    }
    let mut derived: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for w in &batch.writes {
        if let Write::Put {
            store: Store::Meta,
            key,
            data,
            ..
        } = w
        {
            if key.starts_with(PAGE_CLAIMS_PREFIX)
                || key.starts_with(SOURCE_CLAIMS_PREFIX)
                || key.starts_with(PAGE_RECORDS_PREFIX)
            {
                derived.insert(key.clone(), data.to_vec());
            }
        }
    }
    for (k, v) in &derived {
        if lists.get(k) != Some(v) {
            out.push(format!(
                "list {k}: stored {:?}, derived {:?}",
                lists
                    .get(k)
                    .map(|b| String::from_utf8_lossy(b).into_owned()),
                String::from_utf8_lossy(v)
            ));
        }
    }
    for k in lists.keys().filter(|k| !derived.contains_key(*k)) {
        out.push(format!("list {k} should not exist"));
    }
    Ok(out)
}
