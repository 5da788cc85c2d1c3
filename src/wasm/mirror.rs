//! The `Wiki` methods of the folder mirror (issue #24; Decision 10): write the wiki into a
//! directory the app holds a handle to, and say how far behind it is.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use super::interop::{error_to_js, result_to_js};
use super::{promise, Wiki};
use crate::folder::handle::HandleFolder;
use crate::mirror::ConflictChoice;

#[wasm_bindgen]
impl Wiki {
    /// Brings the mirror in `folder` (a `FileSystemDirectoryHandle`: a picked directory or the
    /// origin-private file system) up to date: the first time the whole wiki, in its folder
    /// layout under `root` (default: the last run's, else the first free of `"llm-wiki"`,
    /// `"llm-wiki 2"`…), then only the files the operations since
    /// changed. Call it after each operation, in the tab holding the wiki's write lock. Files
    /// changed in the folder since the mirror wrote them are left as they are (`held`).
    /// Throws `INVALID_INPUT` (a first run into a `root` given explicitly that holds files), `FOLDER` (no
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
            let root = root_in(&inner, &folder, root).await?;
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

    /// Stops mirroring: forgets what was written, and any conflict or deleted page file waiting
    /// for a choice (the folder's files stay, so nothing is lost). The next `mirror` starts a
    /// new mirror in a free folder (`llm-wiki 2`… when `llm-wiki` holds files).
    #[wasm_bindgen(js_name = forgetMirror, unchecked_return_type = "Promise<void>")]
    pub fn forget_mirror(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.forget_mirror().await) })
    }

    /// Brings what changed in the mirror's folder outside the app into the wiki, as one
    /// `import` operation: edited page files become human revisions, new ones pages, notes
    /// dropped into `inbox/` sources (other inbox files are listed in `inboxOther` for the app
    /// to convert and add). A page changed on both sides is listed in `conflicts`, a page file
    /// deleted outside in `deleted`; neither is applied. Call it when `FileSystemObserver`
    /// reports a change, else on focus and at most every 10 s while visible.
    /// Throws `INVALID_INPUT` (no mirror in `root`), `FOLDER`.
    #[wasm_bindgen(js_name = mirrorPull, unchecked_return_type = "Promise<PullReport>")]
    pub fn mirror_pull(
        &self,
        folder: web_sys::FileSystemDirectoryHandle,
        root: Option<String>,
    ) -> Promise {
        let inner = self.inner.clone();
        let folder = HandleFolder::new(folder);
        promise(async move {
            let root = root_in(&inner, &folder, root).await?;
            result_to_js(inner.core.mirror_pull(&folder, &root).await)
        })
    }

    /// The pages changed both in the wiki and in the folder, each with the folder's text.
    #[wasm_bindgen(js_name = mirrorConflicts, unchecked_return_type = "Promise<MirrorConflict[]>")]
    pub fn mirror_conflicts(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.mirror_conflicts().await) })
    }

    /// Ends a conflict: `{ keep: "mine" }` writes the wiki's version over the file,
    /// `{ keep: "theirs" }` or `{ keep: "merge", text }` makes that text the page's next
    /// revision (resolves to its operation id). `seen` is the conflict's `theirs` the person
    /// decided on. Throws `NOT_FOUND`, `INVALID_INPUT` (the folder's version changed since it
    /// was shown: list the conflicts again), `FOLDER`.
    #[wasm_bindgen(
        js_name = resolveMirrorConflict,
        unchecked_return_type = "Promise<number | undefined>"
    )]
    pub fn resolve_mirror_conflict(
        &self,
        folder: web_sys::FileSystemDirectoryHandle,
        key: String,
        choice: tsify::Ts<ConflictChoice>,
        seen: String,
    ) -> Promise {
        let inner = self.inner.clone();
        let folder = HandleFolder::new(folder);
        let choice = crate::wasm::interop::ts_to_rust("conflict choice", choice);
        promise(async move {
            let choice = choice?;
            result_to_js(
                inner
                    .core
                    .resolve_mirror_conflict(&folder, &key, choice, &seen)
                    .await,
            )
        })
    }

    /// Writes the file of page `key` back into the folder after it was deleted there (to delete
    /// the page instead, `deletePage`). Throws `NOT_FOUND`, `FOLDER`.
    #[wasm_bindgen(js_name = restorePageFile, unchecked_return_type = "Promise<void>")]
    pub fn restore_page_file(
        &self,
        folder: web_sys::FileSystemDirectoryHandle,
        key: String,
    ) -> Promise {
        let inner = self.inner.clone();
        let folder = HandleFolder::new(folder);
        promise(async move { result_to_js(inner.core.restore_page_file(&folder, &key).await) })
    }

    /// The files changed since the last call, as zip bytes to unzip over a folder, for browsers
    /// without a directory picker: the first call gives the whole wiki in the mirror's folder
    /// layout under `llm-wiki/`, each later one only what the operations since changed, in the
    /// same layout; files to delete are listed in `llm-wiki/.llm-wiki/removed.txt`.
    /// `fromStart`: forget what earlier downloads held and give the whole wiki again.
    #[wasm_bindgen(js_name = exportChanges, unchecked_return_type = "Promise<Uint8Array>")]
    pub fn export_changes(&self, from_start: Option<bool>) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            match inner.core.export_changes(from_start.unwrap_or(false)).await {
                Ok(c) => Ok(crate::wasm::interop::bytes_to_js(&c.zip)),
                Err(e) => Err(error_to_js(&e)),
            }
        })
    }

    /// Which wikis the picked `folder` holds (in `llm-wiki`, `llm-wiki 2` … `llm-wiki 9`), and
    /// whether this wiki may join one (`empty`). Ask it before the first `mirror` into a
    /// picked folder: a wiki there that is not `own` is another device's, to join
    /// (`mirrorJoin`) from an empty wiki rather than mirror beside. Throws `FOLDER`.
    #[wasm_bindgen(js_name = mirrorJoinable, unchecked_return_type = "Promise<JoinCheck>")]
    pub fn mirror_joinable(&self, folder: web_sys::FileSystemDirectoryHandle) -> Promise {
        let inner = self.inner.clone();
        let folder = HandleFolder::new(folder);
        promise(async move { result_to_js(inner.core.mirror_joinable(&folder).await) })
    }

    /// Makes this browser one more device of the wiki another device mirrors in
    /// `folder`/`root` (issue #25): this empty wiki takes a device slot no other device there
    /// has, imports the folder's wiki, and takes the folder as its mirror, so later runs write
    /// only its own files (`.llm-wiki/devices/<device>/`) and `mirrorPull` merges the others'
    /// operations. A join cut short resumes: call it again. Throws `INVALID_INPUT` (no wiki
    /// in `root`, or this wiki holds operations of its own), `FOLDER`, `QUOTA_EXCEEDED`.
    #[wasm_bindgen(js_name = mirrorJoin, unchecked_return_type = "Promise<JoinReport>")]
    pub fn mirror_join(&self, folder: web_sys::FileSystemDirectoryHandle, root: String) -> Promise {
        let inner = self.inner.clone();
        let folder = HandleFolder::new(folder);
        promise(async move {
            let core = &inner.core;
            let join = async {
                if core.mirror_joinable(&folder).await?.empty {
                    core.mirror_join_slot(&folder, &root).await?;
                    core.import_folder(&folder, &root).await?;
                }
                core.mirror_take(&folder, &root).await
            };
            result_to_js(join.await)
        })
    }

    /// How many notes (`.md`) `folder` holds outside the mirror's folder and hidden folders:
    /// more than none means the person picked a vault the app can adopt (`mirrorAdopt`).
    #[wasm_bindgen(js_name = folderNotes, unchecked_return_type = "Promise<number>")]
    pub fn folder_notes(&self, folder: web_sys::FileSystemDirectoryHandle) -> Promise {
        let inner = self.inner.clone();
        let folder = HandleFolder::new(folder);
        promise(async move {
            let root = root_in(&inner, &folder, None).await?;
            result_to_js(inner.core.folder_notes(&folder, &root).await)
        })
    }

    /// Adopts the picked folder (an Obsidian vault): its notes outside the mirror's folder
    /// become sources and its other files attachments, as `importVault` would make them, in one
    /// operation. `options.templates`: `"skip"` (default) or `"import"`. Throws `FOLDER`.
    #[wasm_bindgen(js_name = mirrorAdopt, unchecked_return_type = "Promise<AdoptReport>")]
    pub fn mirror_adopt(
        &self,
        folder: web_sys::FileSystemDirectoryHandle,
        #[wasm_bindgen(unchecked_param_type = "Partial<ImportOptions> | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        let folder = HandleFolder::new(folder);
        let options = crate::wasm::interop::js_to_rust_or_default::<crate::vault::ImportOptions>(
            "adopt options",
            options,
        );
        promise(async move {
            let options = options?;
            let root = root_in(&inner, &folder, None).await?;
            result_to_js(
                inner
                    .core
                    .mirror_adopt(&folder, &root, options.templates)
                    .await,
            )
        })
    }
}

/// The mirror's folder inside `folder`: `root` when given, else the last run's or the first free
/// name (`Wiki::mirror_root`).
async fn root_in(
    inner: &super::Inner,
    folder: &HandleFolder,
    root: Option<String>,
) -> Result<String, JsValue> {
    match root {
        Some(r) => Ok(r),
        None => inner
            .core
            .mirror_root(folder)
            .await
            .map_err(|e| error_to_js(&e)),
    }
}
