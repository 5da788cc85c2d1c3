//! Attachments in the kernel: reading the records (`asset/<name>` in the meta store) and their
//! bytes (`assets/<sha256>` in the raw store), which page views, rendered markdown, lint and the
//! vault's export all need. Adding attachments is the vault's.

use crate::clock::Clock;
use crate::error::Result;
use crate::model::Asset;
use crate::records::ASSET_PREFIX;
use crate::storage::{Storage, Store};

use super::Wiki;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Every attachment, ordered by name.
    pub async fn assets(&self) -> Result<Vec<Asset>> {
        self.read_all(Store::Meta, ASSET_PREFIX).await
    }

    /// The bytes of the attachment with this SHA-256, if stored.
    pub async fn asset_bytes(&self, sha256: &str) -> Result<Option<Vec<u8>>> {
        Ok(self
            .storage
            .get(Store::Raw, &format!("assets/{sha256}"))
            .await?
            .map(|r| r.data))
    }
}
