//! The device id (issue #25): which browser profile wrote what, once a wiki's folder is kept
//! equal on several devices by a sync tool. One per browser profile and wiki, made on first use
//! and kept in a local meta record ([`META_DEVICE`]): never exported, journaled or rolled back, so
//! a wiki imported into another browser gets an id of its own.

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::records::{from_json, to_json, OpsCounter, META_DEVICE, META_OPS};
use crate::storage::{Batch, Expect, Storage, Store};

use super::Wiki;

/// Characters of a device id: Crockford's base32 alphabet, lower case (no `i`, `l`, `o`, `u`).
const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// Length of a device id: 10 characters, 50 random bits (two devices of one person collide
/// with a chance of about 1 in 10^15).
pub const DEVICE_ID_LEN: usize = 10;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct DeviceRecord {
    id: String,
    /// The device's slot in the wiki's operation ids ([`crate::model::op_id`]): 0 for the
    /// device that began the wiki, another for one that joined a folder another device keeps.
    #[serde(default)]
    slot: u16,
}

/// A new device id from the system's random source (`crypto.getRandomValues` in a browser).
///
/// Errors: [`Error::Storage`] when there is no random source.
pub fn new_device_id() -> Result<String> {
    let mut bytes = [0u8; DEVICE_ID_LEN];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| Error::Storage(format!("no random source for a device id: {e}")))?;
    Ok(bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(b & 31)]))
        .collect())
}

/// Whether `id` has the shape of a device id ([`DEVICE_ID_LEN`] characters of the alphabet).
pub fn is_device_id(id: &str) -> bool {
    id.len() == DEVICE_ID_LEN && id.bytes().all(|b| ALPHABET.contains(&b))
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// This browser's device id for the wiki: made and stored on first use, the same from then
    /// on (other connections and tabs included: the first to store it wins).
    ///
    /// Errors: storage errors; [`Error::Storage`] without a random source.
    pub async fn device_id(&self) -> Result<String> {
        if let Some(r) = self.storage.get(Store::Meta, META_DEVICE).await? {
            return Ok(from_json::<DeviceRecord>(Store::Meta, META_DEVICE, &r.data)?.id);
        }
        let id = new_device_id()?;
        let mut batch = Batch::new();
        batch.put(
            Store::Meta,
            META_DEVICE,
            to_json(&DeviceRecord {
                id: id.clone(),
                slot: 0,
            }),
            Expect::Absent,
        );
        match self.storage.commit(batch).await {
            Ok(_) => Ok(id),
            // Another connection stored one first: that one is the id.
            Err(Error::Conflict { .. }) => {
                let r = self
                    .storage
                    .get(Store::Meta, META_DEVICE)
                    .await?
                    .ok_or_else(|| Error::Storage("the device id vanished".into()))?;
                Ok(from_json::<DeviceRecord>(Store::Meta, META_DEVICE, &r.data)?.id)
            }
            Err(e) => Err(e),
        }
    }

    /// This device's slot in the wiki's operation ids (0 unless it joined a folder another
    /// device keeps: [`Wiki::take_device_slot`]).
    ///
    /// Errors: storage errors.
    pub async fn device_slot(&self) -> Result<u16> {
        Ok(match self.storage.get(Store::Meta, META_DEVICE).await? {
            Some(r) => from_json::<DeviceRecord>(Store::Meta, META_DEVICE, &r.data)?.slot,
            None => 0,
        })
    }

    /// Makes this (empty) wiki number its operations in `slot` (Decision 7): the step before it
    /// takes in a folder that another device keeps, so no id it gives collides with one
    /// another device gives.
    ///
    /// Errors: [`Error::InvalidInput`] when the wiki holds operations already, or for slot 0 or
    /// one above [`crate::model::MAX_SLOT`]; storage errors.
    pub async fn take_device_slot(&self, slot: u16) -> Result<()> {
        if slot == 0 || slot > crate::model::MAX_SLOT {
            return Err(Error::InvalidInput(format!(
                "device slot {slot} is not between 1 and {}",
                crate::model::MAX_SLOT
            )));
        }
        if !self
            .storage
            .scan_page(Store::Operations, "", None, 1)
            .await?
            .is_empty()
        {
            return Err(Error::InvalidInput(
                "a device joins a folder with an empty wiki: this one holds operations".into(),
            ));
        }
        let id = self.device_id().await?;
        let rev = self
            .storage
            .get(Store::Meta, META_DEVICE)
            .await?
            .map(|r| r.rev);
        let counter = self
            .storage
            .get(Store::Meta, META_OPS)
            .await?
            .map(|r| r.rev);
        let mut batch = Batch::new();
        batch.put(
            Store::Meta,
            META_DEVICE,
            to_json(&DeviceRecord { id, slot }),
            Expect::from_read(rev),
        );
        batch.put(
            Store::Meta,
            META_OPS,
            to_json(&OpsCounter {
                last: crate::model::op_id(slot, 0),
                time: 0,
                seen: Some(vec![]),
            }),
            Expect::from_read(counter),
        );
        self.storage.commit(batch).await.map(|_| ())
    }
}
