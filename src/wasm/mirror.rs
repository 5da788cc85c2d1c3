//! The `Wiki` methods of the folder mirror (issue #24; Decision 10): write the wiki into a
//! directory the app holds a handle to, and say how far behind it is.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use super::interop::result_to_js;
use super::{promise, Wiki};
use crate::folder::handle::HandleFolder;
use crate::mirror::DEFAULT_ROOT;

#[wasm_bindgen]
impl Wiki {
    /// Brings the mirror in `folder` (a `FileSystemDirectoryHandle`: a picked directory or the
    /// origin-private file system) up to date: the first time the whole wiki, in its folder
    /// layout under `root` (default `"llm-wiki"`), then only the files the operations since
    /// changed. Call it after each operation, in the tab holding the wiki's write lock. Files
    /// changed in the folder since the mirror wrote them are left as they are (`held`).
    /// Throws `INVALID_INPUT` (a first run into a `root` that holds files), `FOLDER` (no
    /// permission, folder gone, disk full: the wiki is unchanged and the next call resumes).
    #[wasm_bindgen(unchecked_return_type = "Promise<MirrorReport>")]
    pub fn mirror(
        &self,
        folder: web_sys::FileSystemDirectoryHandle,
        root: Option<String>,
    ) -> Promise {
        let inner = self.inner.clone();
        let folder = HandleFolder::new(folder);
        promise(async move {
            let root = root.unwrap_or_else(|| DEFAULT_ROOT.to_string());
            result_to_js(inner.core.mirror(&folder, &root).await)
        })
    }

    /// The mirror's state (`root`, the operation the folder holds, how many it is behind,
    /// whether a run was cut short), or `undefined` when this wiki has no mirror here.
    #[wasm_bindgen(js_name = mirrorStatus, unchecked_return_type = "Promise<MirrorStatus | undefined>")]
    pub fn mirror_status(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.mirror_status().await) })
    }

    /// Stops mirroring: forgets what was written (the folder's files stay). The next `mirror`
    /// needs an empty `root`.
    #[wasm_bindgen(js_name = forgetMirror, unchecked_return_type = "Promise<void>")]
    pub fn forget_mirror(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.forget_mirror().await) })
    }
}
