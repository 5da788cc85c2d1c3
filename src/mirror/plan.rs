//! What a mirror run writes for the records some operations wrote: their files as they are now,
//! their records as the operation files carry them, and the revisions the operations added.
//!
//! *Invariant:* only the records the operations wrote are read (one page, source or attachment
//! at a time), never the whole wiki.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::clock::Clock;
use crate::documents::{INDEX_MD, LOG_MD};
use crate::error::Result;
use crate::markdown::page::page_file;
use crate::model::{Asset, Page, PageKind, Source, Store};
use crate::records::{from_json, portable_meta_value, MetaRecord, ASSET_PREFIX, META_CONFIG};
use crate::storage::Storage;
use crate::vault_files::ops::{carried, RecordAfter};
use crate::vault_files::{page_path, raw_original_path, raw_text_path};
use crate::wiki::Wiki;

/// Files to write (path inside the mirror's root → bytes) or remove (`None`).
pub(super) type Plan = BTreeMap<String, Option<Vec<u8>>>;

/// The records some operations wrote, by store and key.
pub(super) type Touched = BTreeSet<(Store, String)>;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The files of the records in `touched` as they are now, plus index.md and log.md (which
    /// every operation may change); `kept` (the files the mirror keeps, path → hash) tells where
    /// a page or original of a removed record was.
    pub(super) async fn touched_files(
        &self,
        touched: &Touched,
        kept: &BTreeMap<String, String>,
    ) -> Result<Plan> {
        let mut plan = Plan::new();
        let mut originals: Vec<&str> = Vec::new();
        for (store, key) in touched {
            match store {
                Store::Pages => {
                    let page = self.page(key).await?.filter(|p| p.key == *key);
                    let now = page.as_ref().map(|p| page_path(p.kind, &p.key));
                    for kind in PageKind::ALL {
                        let path = page_path(kind, key);
                        if Some(&path) != now.as_ref() && kept.contains_key(&path) {
                            plan.insert(path, None);
                        }
                    }
                    if let (Some(p), Some(path)) = (page, now) {
                        plan.insert(path, Some(page_file(&p).into_bytes()));
                    }
                }
                Store::Raw => {
                    if let Some(version) = key.strip_prefix("text/") {
                        let bytes = self.storage.get(Store::Raw, key).await?.map(|r| r.data);
                        plan.insert(raw_text_path(version), bytes);
                    } else if let Some(sha) = key.strip_prefix("original/") {
                        originals.push(sha);
                    }
                }
                Store::Meta if MetaRecord::of(key) == MetaRecord::Asset => {
                    let name = key.strip_prefix(ASSET_PREFIX).unwrap_or(key);
                    let path = format!("raw/assets/{name}");
                    let asset = self.read::<Asset>(Store::Meta, key).await?;
                    let bytes = match asset {
                        Some((a, _)) => self.asset_bytes(&a.sha256).await?,
                        None => None,
                    };
                    plan.insert(path, bytes);
                }
                // The text of a source an operation here changed (compiled, say), when the folder
                // lacks it: another device's operation added it and a third removed the file,
                // while a device applying this operation needs it (its texts are by hash, so
                // writing one again is harmless).
                Store::Sources => {
                    if let Some((s, _)) = self.read::<Source>(Store::Sources, key).await? {
                        let path = raw_text_path(&s.version);
                        if !kept.contains_key(&path) && !plan.contains_key(&path) {
                            let raw = format!("text/{}", s.version);
                            if let Some(r) = self.storage.get(Store::Raw, &raw).await? {
                                plan.insert(path, Some(r.data));
                            }
                        }
                    }
                }
                Store::Documents if key != INDEX_MD && key != LOG_MD => {
                    let bytes = self
                        .storage
                        .get(Store::Documents, key)
                        .await?
                        .map(|r| r.data);
                    plan.insert(key.clone(), bytes);
                }
                _ => {}
            }
        }
        if !originals.is_empty() {
            self.plan_originals(touched, &originals, kept, &mut plan)
                .await?;
        }
        for doc in [INDEX_MD, LOG_MD] {
            let bytes = self
                .storage
                .get(Store::Documents, doc)
                .await?
                .map(|r| r.data);
            plan.insert(doc.to_string(), bytes);
        }
        Ok(plan)
    }

    /// The original artifacts among the touched raw records: their path needs the MIME type
    /// their source records, found among the touched sources, else among all.
    async fn plan_originals(
        &self,
        touched: &Touched,
        originals: &[&str],
        kept: &BTreeMap<String, String>,
        plan: &mut Plan,
    ) -> Result<()> {
        let mut mime: HashMap<String, String> = HashMap::new();
        let note = |s: &Source, mime: &mut HashMap<String, String>| {
            if let Some(a) = &s.original {
                mime.insert(a.sha256.clone(), a.mime.clone());
            }
        };
        for (store, key) in touched {
            if *store == Store::Sources {
                if let Some((s, _)) = self.read::<Source>(Store::Sources, key).await? {
                    note(&s, &mut mime);
                }
            }
        }
        if originals.iter().any(|sha| !mime.contains_key(*sha)) {
            for s in self.sources().await? {
                note(&s, &mut mime);
            }
        }
        for sha in originals {
            let key = format!("original/{sha}");
            let bytes = self.storage.get(Store::Raw, &key).await?.map(|r| r.data);
            let prefix = format!("raw/original/{sha}.");
            let path = raw_original_path(sha, mime.get(*sha).map_or("", String::as_str));
            for old in kept
                .keys()
                .filter(|p| p.starts_with(&prefix) && **p != path)
            {
                plan.insert(old.clone(), None);
            }
            plan.insert(path, bytes);
        }
        Ok(())
    }

    /// The revisions the operations of `undo` wrote that a merge here has since moved to their
    /// [`crate::records::displaced_revision_key`] (another device's revision of the same
    /// number came later in the order), as records the run carries: a device that merged that
    /// other revision before this run reached it never saw this one under its own key, so it
    /// gets it here, displaced, as this wiki holds it.
    ///
    /// Errors: storage errors.
    pub(super) async fn displaced_revisions(
        &self,
        undo: &[crate::records::undo::UndoRecord],
    ) -> Result<Vec<(Store, String)>> {
        use crate::records::{displaced_revision_key, parse_revision_key};
        let keys: Vec<String> = undo
            .iter()
            .flat_map(|u| {
                u.revisions
                    .iter()
                    .flatten()
                    .filter_map(move |k| match parse_revision_key(k) {
                        Some((page, n, None)) => Some(displaced_revision_key(page, n, u.op)),
                        _ => None,
                    })
            })
            .collect();
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let found = self.storage.get_many(Store::Revisions, &keys).await?;
        Ok(keys
            .into_iter()
            .zip(found)
            .filter(|(_, r)| r.is_some())
            .map(|(k, _)| (Store::Revisions, k))
            .collect())
    }

    /// The records in `touched` that a vault carries, as they are now (pages without bodies,
    /// meta records without secrets), but the configuration: the folder keeps it per device,
    /// in the device's settings file.
    pub(super) async fn records_after(&self, touched: &Touched) -> Result<Vec<RecordAfter>> {
        let mut out = Vec::new();
        for (store, key) in touched {
            if !carried(*store, key) || (*store, key.as_str()) == (Store::Meta, META_CONFIG) {
                continue;
            }
            let value = match self.storage.get(*store, key).await? {
                None => None,
                Some(r) if *store == Store::Pages => {
                    // Without its body: the page's .md file holds it.
                    let page: Page = from_json(*store, key, &r.data)?;
                    Some(
                        serde_json::to_value(Page {
                            body: String::new(),
                            ..page
                        })
                        .unwrap_or(Value::Null),
                    )
                }
                Some(r) => {
                    let mut v: Value = from_json(*store, key, &r.data)?;
                    if *store == Store::Meta {
                        portable_meta_value(key, &mut v);
                    }
                    Some(v)
                }
            };
            out.push(RecordAfter {
                store: *store,
                key: key.clone(),
                value,
            });
        }
        Ok(out)
    }
}
