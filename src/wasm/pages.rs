//! The `Wiki` methods on sources, pages and their history: adding and reading sources, pages and
//! their views, human edits, renames and deletes, proposals, attachments, index.md, log.md,
//! schema.md, the operations and their rollback (Decision 7).

use js_sys::Promise;
use tsify::Ts;
use wasm_bindgen::prelude::*;

use super::interop::{bytes_to_js, error_to_js, result_to_js, ts_to_rust};
use super::{promise, Wiki};
use crate::compile::proposals::HeldUpdate;
use crate::mirror::MirrorConflict;
use crate::wiki::NewSource;
use crate::wiki::PageEdit;

#[wasm_bindgen]
impl Wiki {
    /// Adds a source. Same key and same content: a no-op reported as `outcome: "unchanged"`;
    /// same key, new content: `"corrected"`. Throws `UNSUPPORTED_MIME` for anything but
    /// `text/markdown` and `text/plain`.
    #[wasm_bindgen(js_name = addSource, unchecked_return_type = "Promise<AddSourceReport>")]
    pub fn add_source(&self, input: Ts<NewSource>) -> Promise {
        let inner = self.inner.clone();
        let input = ts_to_rust("addSource", input);
        promise(async move { result_to_js(inner.core.add_source(input?).await) })
    }

    /// Every source, ordered by key.
    #[wasm_bindgen(unchecked_return_type = "Promise<Source[]>")]
    pub fn sources(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.sources().await) })
    }

    /// The sources whose current text holds instruction-like phrases ("ignore previous
    /// instructions", "you are now…", 忽略之前的指令…), ordered by key: a flag to show beside
    /// them. Such text was compiled as data, not followed; nothing compiled changes because of it.
    #[wasm_bindgen(js_name = sourceFlags, unchecked_return_type = "Promise<SourceFlag[]>")]
    pub fn source_flags(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.source_flags().await) })
    }

    /// One source with its text, or `undefined`.
    #[wasm_bindgen(unchecked_return_type = "Promise<SourceWithText | undefined>")]
    pub fn source(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.source(&key).await) })
    }

    /// Lines `first`–`last` (1-based, inclusive) of source `key` at `version` (the current one
    /// when `undefined`), or `undefined` when there is no such source: what a passage hit or a
    /// source citation points at. `{ key, title, version, current, lines, totalLines, text }`.
    ///
    /// @example
    /// ```ts
    /// const hit = (await wiki.search("Fresnel", { passages: true })).hits.find((h) => h.kind === "passage");
    /// if (hit && hit.source && hit.lines) {
    ///   const span = await wiki.sourceSpan(hit.source, hit.version, hit.lines[0], hit.lines[1]);
    ///   span?.text;
    /// }
    /// ```
    #[wasm_bindgen(js_name = sourceSpan, unchecked_return_type = "Promise<SourceSpan | undefined>")]
    pub fn source_span(
        &self,
        key: String,
        #[wasm_bindgen(unchecked_param_type = "string | undefined")] version: Option<String>,
        first: u32,
        last: u32,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            result_to_js(
                inner
                    .core
                    .source_span(&key, version.as_deref(), (first, last))
                    .await,
            )
        })
    }

    /// One line per page, ordered by key.
    #[wasm_bindgen(unchecked_return_type = "Promise<PageInfo[]>")]
    pub fn pages(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.pages().await) })
    }

    /// One page, or `undefined`; the key matches exactly, else case-insensitively.
    #[wasm_bindgen(unchecked_return_type = "Promise<Page | undefined>")]
    pub fn page(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.page(&key).await) })
    }

    /// A human edit: creates (no `key`) or updates a page as a new revision. Throws `CONFLICT` when
    /// `baseRevision` is stale.
    #[wasm_bindgen(js_name = putPage, unchecked_return_type = "Promise<Page>")]
    pub fn put_page(&self, edit: Ts<PageEdit>) -> Promise {
        let inner = self.inner.clone();
        let edit = ts_to_rust("putPage", edit);
        promise(async move { result_to_js(inner.core.put_page(edit?).await) })
    }

    /// A page's revisions, oldest first, each with `diff` (a unified line diff of the page file —
    /// frontmatter and body — against the revision before, empty when unchanged), `added` and
    /// `removed` (line counts).
    #[wasm_bindgen(unchecked_return_type = "Promise<HistoryEntry[]>")]
    pub fn history(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.history_diffs(&key).await) })
    }

    /// What `rollback(opId)` would undo, writing nothing: the operations (`opId` and every later
    /// one that changed the same pages, sources, claims or records), the pages restored, removed
    /// or unlinked, the sources, and counts of claims and ledger records. Throws `NOT_FOUND` for
    /// an unknown operation or one without an undo record (vault imports), `INVALID_INPUT` when it
    /// was already rolled back.
    #[wasm_bindgen(js_name = rollbackPreview, unchecked_return_type = "Promise<RollbackPlan>")]
    pub fn rollback_preview(&self, op: f64) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.rollback_preview(op as u64).await) })
    }

    /// Undoes operation `opId` and every later one that touched the same records (see
    /// `rollbackPreview`), in one `rollback` operation: pages, sources, claims, ledger, index.md
    /// and the search index. History is kept; roll the rollback back to redo.
    ///
    /// @example
    /// ```ts
    /// const plan = await wiki.rollbackPreview(12);
    /// if (confirm(`Undo ${plan.operations.length} operations?`)) await wiki.rollback(12);
    /// ```
    #[wasm_bindgen(unchecked_return_type = "Promise<RollbackReport>")]
    pub fn rollback(&self, op: f64) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.rollback(op as u64).await) })
    }

    /// The pages as they were right after operation `opId` (0: before the first), read from the
    /// revisions. Throws `NOT_FOUND` for an operation later than the last.
    #[wasm_bindgen(js_name = asOf, unchecked_return_type = "Promise<PageInfo[]>")]
    pub fn as_of(&self, op: f64) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            result_to_js(inner.core.pages_as_of(op as u64).await.map(|pages| {
                pages
                    .into_iter()
                    .map(crate::wiki::PageInfo::from)
                    .collect::<Vec<_>>()
            }))
        })
    }

    /// One page as it was right after operation `opId` (exact key, then case-insensitive), or
    /// `undefined`.
    #[wasm_bindgen(js_name = pageAsOf, unchecked_return_type = "Promise<Page | undefined>")]
    pub fn page_as_of(&self, key: String, op: f64) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.page_as_of(&key, op as u64).await) })
    }

    /// index.md (generated by the app from the page store).
    #[wasm_bindgen(unchecked_return_type = "Promise<string>")]
    pub fn index(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.index().await) })
    }

    /// log.md (append-only).
    #[wasm_bindgen(unchecked_return_type = "Promise<string>")]
    pub fn log(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.log().await) })
    }

    /// schema.md, the conventions the compile prompts follow.
    #[wasm_bindgen(unchecked_return_type = "Promise<string>")]
    pub fn schema(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.schema().await) })
    }

    /// Replaces schema.md.
    #[wasm_bindgen(js_name = setSchema, unchecked_return_type = "Promise<Operation>")]
    pub fn set_schema(&self, text: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.set_schema(&text).await) })
    }

    /// Every operation, oldest first.
    #[wasm_bindgen(unchecked_return_type = "Promise<Operation[]>")]
    pub fn operations(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.operations().await) })
    }

    /// A page rendered for reading: `{ page, html, backlinks, assets, missing, ambiguous,
    /// malformed }`, or `undefined`. The HTML is safe to assign to `innerHTML`: no raw HTML,
    /// handlers or script URLs survive, and nothing in it makes the browser fetch a URL.
    /// Wikilinks are `<a class="wikilink" href="#/page/<key>" data-page="<key>">`; missing ones
    /// are `<span class="wikilink missing">`. Attachment images are `<img data-asset="<sha256>">`
    /// without `src`: load the bytes with `asset(sha256)` and set a `blob:` URL.
    #[wasm_bindgen(js_name = pageView, unchecked_return_type = "Promise<PageView | undefined>")]
    pub fn page_view(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.page_view(&key).await) })
    }

    /// Keys of the pages linking to `key`, sorted.
    #[wasm_bindgen(unchecked_return_type = "Promise<string[]>")]
    pub fn backlinks(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.backlinks(&key).await) })
    }

    /// Every page (`{ key, title, kind, tags, sources }`, sorted by key) and every link between two pages
    /// (`{ from, to }`, resolved like the page view's links; missing and ambiguous targets are left
    /// out), for a graph view.
    #[wasm_bindgen(unchecked_return_type = "Promise<WikiGraph>")]
    pub fn graph(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.graph().await) })
    }

    /// Renames a page (new title, and the key it gives) and rewrites every link to it, in one
    /// operation. Throws `NOT_FOUND`, `INVALID_INPUT` (empty title), `CONFLICT`.
    #[wasm_bindgen(js_name = renamePage, unchecked_return_type = "Promise<RenameReport>")]
    pub fn rename_page(&self, key: String, title: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.rename_page(&key, &title).await) })
    }

    /// What waits beside a page for the person's choice: the compile updates held because they
    /// would drop a human's paragraphs (`kind: "update"`, Decision 5), then the pages changed
    /// both here and in the mirror's folder (`kind: "conflict"`, issue #24), each group by page
    /// key. A conflict is never stale: it ends only by `resolveMirrorConflict`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Proposal[]>")]
    pub fn proposals(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let all = async {
                let updates = inner.core.held_updates().await?;
                // An unreadable mirror state hides no held update: its conflicts are left
                // out and the error logged (`mirrorConflicts()` throws it).
                let conflicts = inner.core.mirror_conflicts().await.unwrap_or_else(|e| {
                    web_sys::console::error_1(&format!("mirror conflicts: {e}").into());
                    Vec::new()
                });
                Ok::<_, crate::error::Error>(
                    updates
                        .into_iter()
                        .map(Proposal::Update)
                        .chain(conflicts.into_iter().map(Proposal::Conflict))
                        .collect::<Vec<_>>(),
                )
            };
            result_to_js(all.await)
        })
    }

    /// Accepts the held update of a page: it becomes the next revision, in one operation.
    /// Resolves to the operation id. Throws `NOT_FOUND`, `CONFLICT`.
    #[wasm_bindgen(js_name = acceptProposal, unchecked_return_type = "Promise<number>")]
    pub fn accept_proposal(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.accept_proposal(&key).await) })
    }

    /// Rejects the held update of a page: the page stays as it is. Throws `NOT_FOUND`.
    #[wasm_bindgen(js_name = rejectProposal, unchecked_return_type = "Promise<void>")]
    pub fn reject_proposal(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.reject_proposal(&key).await) })
    }

    /// Removes a source in one operation: its summary page, its claims (and the lines citing
    /// them), its place in every page's `sources`, links to its summary page (now plain text);
    /// contradictions resting on its claims are closed. No model call. Throws `NOT_FOUND`,
    /// `CONFLICT`.
    #[wasm_bindgen(js_name = removeSource, unchecked_return_type = "Promise<RemoveSourceReport>")]
    pub fn remove_source(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.remove_source(&key).await) })
    }

    /// Deletes a page; every link to it becomes plain text, in one operation. Throws `NOT_FOUND`,
    /// `CONFLICT`.
    #[wasm_bindgen(js_name = deletePage, unchecked_return_type = "Promise<DeleteReport>")]
    pub fn delete_page(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.delete_page(&key).await) })
    }

    /// Stores an attachment (image or file) under `raw/assets/`, content-addressed; `![[name]]`
    /// and `![](name)` then show it. Same name and bytes again: the existing record, nothing
    /// written. Throws `INVALID_INPUT` for empty bytes.
    #[wasm_bindgen(js_name = addAttachment, unchecked_return_type = "Promise<Asset>")]
    pub fn add_attachment(&self, name: String, mime: String, bytes: Vec<u8>) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.add_attachment(&name, &mime, &bytes).await) })
    }

    /// Every attachment, ordered by name.
    #[wasm_bindgen(unchecked_return_type = "Promise<Asset[]>")]
    pub fn assets(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.assets().await) })
    }

    /// The bytes of the attachment with this SHA-256, or `undefined`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Uint8Array | undefined>")]
    pub fn asset(&self, sha256: String) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            match inner.core.asset_bytes(&sha256).await {
                Ok(Some(b)) => Ok(bytes_to_js(&b)),
                Ok(None) => Ok(JsValue::UNDEFINED),
                Err(e) => Err(error_to_js(&e)),
            }
        })
    }

    /// Restores a page to an earlier revision, as a new revision (history is kept).
    #[wasm_bindgen(unchecked_return_type = "Promise<Page>")]
    pub fn revert(&self, key: String, revision: f64) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.revert(&key, revision as u64).await) })
    }
}

/// One thing waiting for the person's choice beside a page (`proposals()`), tagged by `kind`.
#[derive(serde::Serialize, tsify::Tsify)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Proposal {
    /// A compile's update held because it would drop a human's paragraphs (Decision 5):
    /// `acceptProposal` or `rejectProposal`.
    Update(HeldUpdate),
    /// A page changed both in the wiki and in the mirror's folder since the mirror last wrote
    /// it: keep mine, keep theirs or a merge, by `resolveMirrorConflict`.
    Conflict(MirrorConflict),
}
