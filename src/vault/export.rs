//! Export: the whole wiki as zip bytes in the vault layout (see [`crate::vault_files`]).
//!
//! *Invariant:* the same wiki always exports to the same bytes, and no secret leaves.

use crate::clock::Clock;
use crate::error::Result;
use crate::storage::Storage;
use crate::vault_files::zip::write_zip;
use crate::vault_files::Layout;
use crate::wiki::Wiki;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The whole wiki as zip bytes in the vault layout (see [`crate::vault_files`]). The same
    /// wiki always gives the same bytes.
    ///
    /// Errors: storage errors; [`crate::error::Error::Corrupt`] when an attachment's bytes are
    /// missing.
    pub async fn export_vault(&self) -> Result<Vec<u8>> {
        write_zip(&self.vault_snapshot(Layout::Zip).await?)
    }
}
