//! A folder of files the wiki mirrors itself into (issue #24): a directory the user picked, or
//! the origin-private file system in tests. Paths are `/`-separated and relative to the folder;
//! nothing outside it can be named ([`check_path`]).
//!
//! Implementations: [`MemoryFolder`] (native and tests, with an injected failure for crash
//! tests) and, on wasm, `handle::HandleFolder` over a `FileSystemDirectoryHandle` (a picked
//! directory or OPFS: the same code). Both pass the same [`conformance`] suite.
//!
//! *Invariant:* a file is replaced as a whole or not at all (the browser's `createWritable`
//! writes to a swap file and commits on close), so a reader sees either the old bytes or the new.

pub mod conformance;
#[cfg(target_arch = "wasm32")]
pub mod handle;
mod memory;

pub use memory::MemoryFolder;

use crate::error::{Error, Result};

/// A file in a folder listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path inside the folder, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time (ms since the Unix epoch), as the file system reports it.
    pub modified: i64,
}

/// A folder of files. Futures are not `Send` (the browser is single-threaded); used generically.
#[allow(async_fn_in_trait)] // used only generically inside this crate's single-threaded executor
pub trait Folder {
    /// Every file under `dir` (`""`: the whole folder), at any depth, sorted by path. A missing
    /// `dir` lists nothing.
    async fn list(&self, dir: &str) -> Result<Vec<Entry>>;
    /// The files directly in `dir` (`""`: the folder's top), not in its subfolders, sorted by
    /// path. A missing `dir` lists nothing.
    async fn list_top(&self, dir: &str) -> Result<Vec<Entry>>;
    /// The bytes of the file at `path`, or `None` when there is none.
    async fn read(&self, path: &str) -> Result<Option<Vec<u8>>>;
    /// Writes the file at `path` whole, creating its folders; it replaces the old file only
    /// when complete. Returns the file as the folder lists it right after (its size and mtime),
    /// so a reader can tell it from a later change without reading it.
    async fn write(&self, path: &str, bytes: &[u8]) -> Result<Entry>;
    /// Removes the file at `path`; nothing when there is none. Emptied folders stay.
    async fn remove(&self, path: &str) -> Result<()>;
}

/// The parts of a relative path, or [`Error::Folder`] when it is empty, absolute, or has an
/// empty, `.` or `..` part, a backslash or a control character: a mirror never names a file
/// outside its folder.
pub fn check_path(path: &str) -> Result<Vec<&str>> {
    let bad = |why: &str| Error::Folder {
        path: path.to_string(),
        message: format!("not a path inside the folder ({why})"),
    };
    if path.is_empty() || path.starts_with('/') {
        return Err(bad("empty or absolute"));
    }
    let parts: Vec<&str> = path.split('/').collect();
    for p in &parts {
        if p.is_empty() || *p == "." || *p == ".." {
            return Err(bad("empty, . or .. part"));
        }
        if p.contains('\\') || p.chars().any(char::is_control) {
            return Err(bad("backslash or control character"));
        }
    }
    Ok(parts)
}
