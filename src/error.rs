//! The crate's error type.
//!
//! Every fallible public function returns [`Result<T>`]. Each variant has a stable, machine-readable
//! [`Error::code`] that reaches JavaScript unchanged as `error.code` (see `src/wasm/interop.rs`), so
//! apps can branch on it without parsing messages. Messages say what went wrong *and* what to do.
//!
//! *Invariant:* no message ever contains an API key or other secret.

use crate::storage::Store;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in llm-wiki.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The browser refused to store more data (IndexedDB `QuotaExceededError`). Nothing of the
    /// failed batch was written.
    #[error("storage quota exceeded: nothing was written; free space, export the vault, or grant persistent storage")]
    QuotaExceeded,

    /// Opening the wiki needs a schema upgrade, but another tab (or extension page) still has the
    /// wiki open and did not close it in time.
    #[error("the wiki {name:?} is open in another tab that blocks the upgrade to schema version {version}; close the other tabs and retry")]
    UpgradeBlocked {
        /// Wiki name.
        name: String,
        /// The schema version this build wants.
        version: u32,
    },

    /// The connection was closed because another tab upgraded the schema (IndexedDB
    /// `versionchange`), or the wiki was deleted. Reload the page.
    #[error("the wiki was upgraded or deleted in another tab; reload this page")]
    Closed,

    /// The storage backend is not available (private mode, disabled IndexedDB, no `window`).
    #[error("storage unavailable: {0}")]
    StorageUnavailable(String),

    /// The stored data was written by a newer build of llm-wiki (schema version higher than this
    /// build knows).
    #[error("the wiki was written by a newer version of llm-wiki (schema {found}, this build knows {known}); update the app")]
    SchemaTooNew {
        /// Version found on disk.
        found: u32,
        /// Newest version this build knows.
        known: u32,
    },

    /// A write expected a record at one revision but found another (optimistic concurrency): another
    /// writer got there first. Nothing of the batch was written; re-read and retry.
    #[error(
        "conflict in {store:?}/{key}: expected {expected}, found {found}; nothing was written"
    )]
    Conflict {
        /// The store of the conflicting record.
        store: Store,
        /// The record key.
        key: String,
        /// What the batch expected (`absent` or `rev N`).
        expected: String,
        /// What was stored (`absent` or `rev N`).
        found: String,
    },

    /// Any other storage failure, with the backend's message. Nothing of the batch was written.
    #[error("storage error: {0}")]
    Storage(String),

    /// A fault injected by a test (see [`crate::storage::FaultInjection`]).
    #[error("injected fault: {0}")]
    InjectedFault(String),

    /// A stored record could not be decoded.
    #[error("corrupt record {store:?}/{key}: {message}")]
    Corrupt {
        /// The store.
        store: Store,
        /// The record key.
        key: String,
        /// The decoder's message.
        message: String,
    },

    /// The caller passed something invalid (bad name, empty title, wrong shape).
    #[error("invalid input: {0}")]
    InvalidInput(String),

    /// `addSource` got a MIME type the core does not read. HTML and PDF are converted to markdown in
    /// the JS layer first (Decision 2).
    #[error("unsupported source type {0:?}: the core reads text/markdown and text/plain; convert HTML or PDF to markdown in the JS layer first")]
    UnsupportedMime(String),

    /// No wiki, source or page with that name or key.
    #[error("not found: {0}")]
    NotFound(String),

    /// The model's reply could not be used (not the JSON asked for, even after repair). Nothing was
    /// written.
    #[error("the model's reply could not be used: {0}")]
    BadReply(String),

    /// The operation would exceed its token budget cap (Decision 12). Nothing was written.
    #[error("token budget exceeded: {used} tokens used or estimated, cap {cap}; raise the cap or compile fewer sources")]
    BudgetExceeded {
        /// Tokens used so far plus the next call's estimate.
        used: u64,
        /// The configured cap.
        cap: u64,
    },

    /// The operation was cancelled by the caller (an `AbortSignal`).
    #[error("cancelled")]
    Cancelled,
}

impl Error {
    /// A stable, machine-readable code, in `SCREAMING_SNAKE_CASE`, one per variant.
    pub fn code(&self) -> &'static str {
        match self {
            Error::QuotaExceeded => "QUOTA_EXCEEDED",
            Error::UpgradeBlocked { .. } => "UPGRADE_BLOCKED",
            Error::Closed => "CLOSED",
            Error::StorageUnavailable(_) => "STORAGE_UNAVAILABLE",
            Error::SchemaTooNew { .. } => "SCHEMA_TOO_NEW",
            Error::Conflict { .. } => "CONFLICT",
            Error::Storage(_) => "STORAGE",
            Error::InjectedFault(_) => "INJECTED_FAULT",
            Error::Corrupt { .. } => "CORRUPT",
            Error::InvalidInput(_) => "INVALID_INPUT",
            Error::UnsupportedMime(_) => "UNSUPPORTED_MIME",
            Error::NotFound(_) => "NOT_FOUND",
            Error::BadReply(_) => "BAD_REPLY",
            Error::BudgetExceeded { .. } => "BUDGET_EXCEEDED",
            Error::Cancelled => "CANCELLED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct() {
        let all = [
            Error::QuotaExceeded,
            Error::UpgradeBlocked {
                name: "w".into(),
                version: 2,
            },
            Error::Closed,
            Error::StorageUnavailable("x".into()),
            Error::SchemaTooNew { found: 9, known: 2 },
            Error::Conflict {
                store: Store::Pages,
                key: "k".into(),
                expected: "absent".into(),
                found: "rev 1".into(),
            },
            Error::Storage("x".into()),
            Error::InjectedFault("x".into()),
            Error::Corrupt {
                store: Store::Pages,
                key: "k".into(),
                message: "m".into(),
            },
            Error::InvalidInput("x".into()),
            Error::UnsupportedMime("text/html".into()),
            Error::NotFound("x".into()),
            Error::BadReply("x".into()),
            Error::BudgetExceeded { used: 2, cap: 1 },
            Error::Cancelled,
        ];
        let mut codes: Vec<_> = all.iter().map(Error::code).collect();
        crate::util::sort(&mut codes);
        codes.dedup();
        assert_eq!(codes.len(), all.len());
    }
}
