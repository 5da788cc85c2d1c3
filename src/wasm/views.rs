//! The `Wiki` methods an app calls to show what the core computes beside the pages
//! ([`crate::views`]): an answer rendered like a page, the ledger's open contradiction records
//! of pages, and recall for a text. Read-only: none of them needs the write lock.

use wasm_bindgen::prelude::*;

use super::interop::{js_to_rust_or_default, result_to_js};
use super::{promise, Wiki};
use crate::views::RecallOptions;

#[wasm_bindgen]
impl Wiki {
    /// Renders markdown — an answer of `ask()`, a line of the app's own text — the way
    /// `pageView` renders a page body: the same sanitising (the HTML is safe to assign to
    /// `innerHTML`, nothing in it fetches a URL), and wikilinks resolved against this wiki's
    /// pages (`<a class="wikilink" href="#/page/<key>" data-page="<key>">`; a target that names
    /// no page is `<span class="wikilink missing">`). Resolves to `{ html, assets, missing,
    /// ambiguous, malformed }`.
    ///
    /// @example
    /// ```ts
    /// const answer = await wiki.ask("What is backpressure?");
    /// element.innerHTML = (await wiki.renderMarkdown(answer.answer)).html;
    /// ```
    #[wasm_bindgen(js_name = renderMarkdown, unchecked_return_type = "Promise<MarkdownView>")]
    pub fn render_markdown(&self, markdown: String) -> js_sys::Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.render_markdown(&markdown).await) })
    }

    /// The open records of the contradiction ledger (Decision 4) that involve any of `keys`
    /// (exact page keys), each once, in the order of `keys`: `{ id, description, pages, sides }`,
    /// each side a claim with the page stating it (`{ claim, page, title, text }`). Read from the
    /// ledger itself, not from the `> [!contradiction]` callouts the pages show.
    #[wasm_bindgen(js_name = openContradictions, unchecked_return_type = "Promise<OpenContradiction[]>")]
    pub fn open_contradictions(&self, keys: Vec<String>) -> js_sys::Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.open_contradictions(&keys).await) })
    }

    /// What the wiki already says about a text the user is reading (a page to clip: its `title`
    /// and `markdown`): the pages matching its title and the start of its body by BM25, with
    /// their one-line summaries, and the open contradictions on them. A page counts only when it
    /// shares enough topic terms with the text (`minTerms`, default 3 — function words, single
    /// characters and numbers are not topic terms) and scores at least `minShare` (default 0.3)
    /// of the best hit; `k` (default 6) caps the list, `chars` (default 600) the body's share of
    /// the query.
    #[wasm_bindgen(unchecked_return_type = "Promise<Recall>")]
    pub fn recall(
        &self,
        title: String,
        markdown: String,
        #[wasm_bindgen(unchecked_param_type = "Partial<RecallOptions> | undefined")]
        options: JsValue,
    ) -> js_sys::Promise {
        let inner = self.inner.clone();
        let options = js_to_rust_or_default::<RecallOptions>("recall options", options);
        promise(async move {
            let options = options?;
            result_to_js(inner.core.recall(&title, &markdown, &options).await)
        })
    }
}
