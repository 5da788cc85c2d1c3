//! A [`Folder`] over a `FileSystemDirectoryHandle` (File System Access API): a directory the user
//! picked (`showDirectoryPicker`, Chromium) or the origin-private file system
//! (`navigator.storage.getDirectory()`, every current browser). The same code serves both; the
//! picker and the permission prompt are the app's (JS).
//!
//! Each write goes through `createWritable`, which writes to a swap file and replaces the file
//! when the stream closes, so a file is replaced whole or not at all. The bytes are copied into
//! a JS array first: the stream reads its chunk after `write` returns, when wasm memory may have
//! moved.

use js_sys::{AsyncIterator, Promise, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    File, FileSystemDirectoryHandle, FileSystemFileHandle, FileSystemGetDirectoryOptions,
    FileSystemGetFileOptions, FileSystemHandle, FileSystemHandleKind, FileSystemWritableFileStream,
};

use super::{check_path, Entry, Folder};
use crate::error::{Error, Result};

/// A folder over a directory handle.
#[derive(Debug, Clone)]
pub struct HandleFolder {
    root: FileSystemDirectoryHandle,
}

/// The name of a DOM exception (`NotFoundError`, `NotAllowedError`…), or `""`.
fn dom_name(e: &JsValue) -> String {
    Reflect::get(e, &"name".into())
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default()
}

fn folder_error(path: &str, e: &JsValue) -> Error {
    let message = Reflect::get(e, &"message".into())
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| format!("{e:?}"));
    let name = dom_name(e);
    let hint = match name.as_str() {
        "NotAllowedError" | "SecurityError" => {
            " (the browser no longer lets the app use this folder: grant it again)"
        }
        "QuotaExceededError" => " (the disk or the origin's quota is full)",
        _ => "",
    };
    Error::Folder {
        path: path.to_string(),
        message: format!("{name}: {message}{hint}"),
    }
}

async fn wait(path: &str, p: Promise) -> Result<JsValue> {
    JsFuture::from(p).await.map_err(|e| folder_error(path, &e))
}

/// Awaits `p`; `None` when it failed with `NotFoundError`.
async fn wait_found(path: &str, p: Promise) -> Result<Option<JsValue>> {
    match JsFuture::from(p).await {
        Ok(v) => Ok(Some(v)),
        Err(e) if dom_name(&e) == "NotFoundError" => Ok(None),
        Err(e) => Err(folder_error(path, &e)),
    }
}

impl HandleFolder {
    /// A folder over `handle`.
    pub fn new(handle: FileSystemDirectoryHandle) -> Self {
        HandleFolder { root: handle }
    }

    /// The origin-private file system's root directory.
    ///
    /// Errors: [`Error::Folder`] when the browser has none (an opaque origin, or storage turned
    /// off).
    pub async fn origin_private() -> Result<Self> {
        let manager = crate::util::storage_manager().ok_or_else(|| Error::Folder {
            path: String::new(),
            message: "navigator.storage is not available".into(),
        })?;
        let handle = wait("", manager.get_directory()).await?;
        Ok(HandleFolder::new(handle.unchecked_into()))
    }

    /// The folder at `path` inside this one, created when missing.
    ///
    /// Errors: [`Error::Folder`] for a path outside, or one the browser refuses.
    pub async fn subfolder(&self, path: &str) -> Result<HandleFolder> {
        let parts = check_path(path)?;
        let d = self
            .dir(path, &parts, true)
            .await?
            .ok_or_else(|| Error::Folder {
                path: path.to_string(),
                message: "could not be created".into(),
            })?;
        Ok(HandleFolder::new(d))
    }

    /// Removes the folder at `path` inside this one with everything in it (nothing when
    /// missing): for tests and benchmarks that start from an empty folder.
    ///
    /// Errors: [`Error::Folder`].
    pub async fn remove_folder(&self, path: &str) -> Result<()> {
        let parts = check_path(path)?;
        let (name, parents) = parts
            .split_last()
            .expect("check_path gives one part or more");
        let Some(dir) = self.dir(path, parents, false).await? else {
            return Ok(());
        };
        let options = web_sys::FileSystemRemoveOptions::new();
        options.set_recursive(true);
        wait_found(path, dir.remove_entry_with_options(name, &options)).await?;
        Ok(())
    }

    /// The handle.
    pub fn handle(&self) -> &FileSystemDirectoryHandle {
        &self.root
    }

    /// The directory at `parts` (created when `create`), or `None` when missing.
    async fn dir(
        &self,
        path: &str,
        parts: &[&str],
        create: bool,
    ) -> Result<Option<FileSystemDirectoryHandle>> {
        let mut d = self.root.clone();
        let options = FileSystemGetDirectoryOptions::new();
        options.set_create(create);
        for p in parts {
            match wait_found(path, d.get_directory_handle_with_options(p, &options)).await? {
                Some(h) => d = h.unchecked_into(),
                None => return Ok(None),
            }
        }
        Ok(Some(d))
    }

    async fn file_handle(
        &self,
        path: &str,
        create: bool,
    ) -> Result<Option<(FileSystemDirectoryHandle, FileSystemFileHandle)>> {
        let parts = check_path(path)?;
        let (name, parents) = parts
            .split_last()
            .expect("check_path gives one part or more");
        let Some(dir) = self.dir(path, parents, create).await? else {
            return Ok(None);
        };
        let options = FileSystemGetFileOptions::new();
        options.set_create(create);
        let found = wait_found(path, dir.get_file_handle_with_options(name, &options)).await?;
        Ok(found.map(|h| (dir, h.unchecked_into())))
    }

    /// [`Folder::list`] (`deep`) or [`Folder::list_top`].
    async fn listing(&self, dir: &str, deep: bool) -> Result<Vec<Entry>> {
        let (parts, prefix) = if dir.is_empty() {
            (Vec::new(), String::new())
        } else {
            (check_path(dir)?, format!("{dir}/"))
        };
        let mut out = Vec::new();
        if let Some(d) = self.dir(dir, &parts, false).await? {
            self.walk(d, prefix, deep, &mut out).await?;
        }
        crate::util::sort_by(&mut out, &|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Every file under `dir` (`prefix` is its path, `""` or ending in `/`), appended to `out`;
    /// without `deep`, only those directly in it.
    /// The files of one directory are stat'ed (`getFile`) together, [`STAT_AT_ONCE`] at a time:
    /// one by one, each waits a round trip to the browser's file system process.
    async fn walk(
        &self,
        dir: FileSystemDirectoryHandle,
        prefix: String,
        deep: bool,
        out: &mut Vec<Entry>,
    ) -> Result<()> {
        let mut todo = vec![(dir, prefix)];
        while let Some((dir, prefix)) = todo.pop() {
            let it: AsyncIterator = dir.values();
            let mut files: Vec<(String, FileSystemFileHandle)> = Vec::new();
            loop {
                let next = it.next().map_err(|e| folder_error(&prefix, &e))?;
                let step = wait(&prefix, next).await?;
                if Reflect::get(&step, &"done".into())
                    .map(|d| d.is_truthy())
                    .unwrap_or(true)
                {
                    break;
                }
                let h: FileSystemHandle = Reflect::get(&step, &"value".into())
                    .map_err(|e| folder_error(&prefix, &e))?
                    .unchecked_into();
                let path = format!("{prefix}{}", h.name());
                if h.kind() == FileSystemHandleKind::Directory {
                    if deep {
                        todo.push((h.unchecked_into(), format!("{path}/")));
                    }
                } else {
                    files.push((path, h.unchecked_into()));
                }
            }
            for chunk in files.chunks(STAT_AT_ONCE) {
                let stats = futures::future::join_all(
                    chunk
                        .iter()
                        .map(|(path, fh)| wait_found(path, fh.get_file())),
                )
                .await;
                for ((path, _), stat) in chunk.iter().zip(stats) {
                    // A file removed since the listing is left out.
                    if let Some(file) = stat? {
                        let file: File = file.unchecked_into();
                        out.push(Entry {
                            path: path.clone(),
                            size: file.size() as u64,
                            modified: file.last_modified() as i64,
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

/// How many files of a directory [`HandleFolder`] stats at once.
const STAT_AT_ONCE: usize = 256;

impl Folder for HandleFolder {
    async fn list(&self, dir: &str) -> Result<Vec<Entry>> {
        self.listing(dir, true).await
    }

    async fn list_top(&self, dir: &str) -> Result<Vec<Entry>> {
        self.listing(dir, false).await
    }

    async fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let Some((_, fh)) = self.file_handle(path, false).await? else {
            return Ok(None);
        };
        let Some(file) = wait_found(path, fh.get_file()).await? else {
            return Ok(None);
        };
        let file: File = file.unchecked_into();
        let buffer = wait(path, file.array_buffer()).await?;
        Ok(Some(Uint8Array::new(&buffer).to_vec()))
    }

    async fn write(&self, path: &str, bytes: &[u8]) -> Result<Entry> {
        let (_, fh) = self
            .file_handle(path, true)
            .await?
            .ok_or_else(|| Error::Folder {
                path: path.to_string(),
                message: "could not be created".into(),
            })?;
        let stream: FileSystemWritableFileStream =
            wait(path, fh.create_writable()).await?.unchecked_into();
        let copy = Uint8Array::from(bytes);
        let written = match stream.write_with_js_u8_array(&copy) {
            Ok(p) => wait(path, p).await.map(|_| ()),
            Err(e) => Err(folder_error(path, &e)),
        };
        if let Err(e) = written {
            // Abort: the swap file is dropped and the old file stays.
            let _ = JsFuture::from(stream.abort()).await;
            return Err(e);
        }
        wait(path, stream.close()).await?;
        let file: File = wait(path, fh.get_file()).await?.unchecked_into();
        Ok(Entry {
            path: path.to_string(),
            size: file.size() as u64,
            modified: file.last_modified() as i64,
        })
    }

    async fn remove(&self, path: &str) -> Result<()> {
        let parts = check_path(path)?;
        let (name, parents) = parts
            .split_last()
            .expect("check_path gives one part or more");
        let Some(dir) = self.dir(path, parents, false).await? else {
            return Ok(());
        };
        wait_found(path, dir.remove_entry(name)).await?;
        Ok(())
    }
}
