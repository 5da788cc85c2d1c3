//! The zip container of a vault: written with fixed metadata (so the same files give the same
//! bytes) and read with limits and safe paths.
//!
//! *Invariant:* no path read from a zip climbs out of the vault (`..`, absolute roots, drive
//! letters and backslashes are refused), and no entry or total exceeds
//! [`super::MAX_ENTRY_BYTES`] / [`super::MAX_TOTAL_BYTES`].

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};

use super::{MAX_ENTRY_BYTES, MAX_TOTAL_BYTES};
use crate::error::{Error, Result};

/// A zip path without `..`, absolute roots, drive letters or backslashes; `None` when unsafe.
pub fn safe_path(name: &str) -> Option<String> {
    let name = name.replace('\\', "/");
    if name.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for (i, c) in name.split('/').enumerate() {
        match c {
            "" | "." => {}
            ".." => return None,
            c if i == 0 && c.ends_with(':') => return None,
            c if c.chars().any(|ch| ch.is_control()) => return None,
            c => parts.push(c),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Writes `files` (path → bytes, in path order) as a zip with fixed metadata.
pub fn write_zip(files: &BTreeMap<String, Vec<u8>>) -> Result<Vec<u8>> {
    use zip::write::SimpleFileOptions;
    let zip_err = |e: zip::result::ZipError| Error::Storage(format!("zip: {e}"));
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(6))
        .last_modified_time(zip::DateTime::default())
        .unix_permissions(0o644);
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (path, data) in files {
        w.start_file(path.as_str(), options).map_err(zip_err)?;
        w.write_all(data)
            .map_err(|e| Error::Storage(format!("zip: {e}")))?;
    }
    Ok(w.finish().map_err(zip_err)?.into_inner())
}

/// Reads every file of a zip (path → bytes), with limits, safe paths in Unicode NFC, and a
/// folder that wraps the whole vault removed. Two entries whose names are one in NFC are an
/// [`Error::InvalidInput`].
pub fn read_zip(bytes: &[u8]) -> Result<BTreeMap<String, Vec<u8>>> {
    let bad = |m: String| Error::InvalidInput(format!("vault zip: {m}"));
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| bad(e.to_string()))?;
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).map_err(|e| bad(e.to_string()))?;
        if f.is_dir() {
            continue;
        }
        let Some(path) = safe_path(f.name()) else {
            return Err(bad(format!("unsafe path {:?}", f.name())));
        };
        // Paths (and so source keys and page file names) in NFC: macOS writes NFD names.
        let path: String =
            unicode_normalization::UnicodeNormalization::nfc(path.as_str()).collect();
        if files.contains_key(&path) {
            return Err(bad(format!(
                "two entries are named {path:?} (one in another Unicode form)"
            )));
        }
        if f.size() > MAX_ENTRY_BYTES {
            return Err(bad(format!(
                "{path} is larger than {MAX_ENTRY_BYTES} bytes"
            )));
        }
        let mut data = Vec::with_capacity(f.size() as usize);
        (&mut f)
            .take(MAX_ENTRY_BYTES + 1)
            .read_to_end(&mut data)
            .map_err(|e| bad(format!("{path}: {e}")))?;
        total += data.len() as u64;
        if data.len() as u64 > MAX_ENTRY_BYTES || total > MAX_TOTAL_BYTES {
            return Err(bad(
                "the vault is larger than the import limit (1 GiB)".into()
            ));
        }
        files.insert(path, data);
    }
    // A single folder wrapping a vault (`MyVault/.obsidian`, `export/.llm-wiki/vault.json`).
    let root = files
        .keys()
        .next()
        .and_then(|p| p.split_once('/'))
        .map(|(r, _)| r.to_string());
    if let Some(root) = root {
        let prefix = format!("{root}/");
        let wraps = files.keys().all(|p| p.starts_with(&prefix))
            && files.keys().any(|p| {
                p.starts_with(&format!("{prefix}.llm-wiki/"))
                    || p.starts_with(&format!("{prefix}.obsidian/"))
            });
        if wraps {
            files = crate::util::btree_map(
                files
                    .into_iter()
                    .map(|(p, d)| (p[prefix.len()..].to_string(), d)),
            );
        }
    }
    Ok(files)
}
