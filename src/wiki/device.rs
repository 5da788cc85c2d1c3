//! The device id (issue #25): which browser profile wrote what, once a wiki's folder is kept
//! equal on several devices by a sync tool. One per browser profile and wiki, made on first use
//! and kept in a local meta record ([`META_DEVICE`]): never exported, journaled or rolled back, so
//! a wiki imported into another browser gets an id of its own.

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::records::{from_json, to_json, META_DEVICE};
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
            to_json(&DeviceRecord { id: id.clone() }),
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
}
