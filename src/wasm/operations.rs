//! The `Wiki` methods that run the three operations with the configured endpoint (or offline):
//! compile and its estimate, ask and saving an answer, lint (with the LLM checks) and its fixes.
//! Each options bag's `onProgress` / `onToken` callback and `signal` are read here.

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::interop::{self, error_to_js, result_to_js};
use super::{compile_request, promise, signal_of, Wiki};
use crate::lint::llm::LlmLintOptions;
use crate::llm::http::FetchTransport;
use crate::llm::Cancel;

#[wasm_bindgen]
impl Wiki {
    /// Compiles every new or changed source (or `sources`) into pages, one operation per source,
    /// with the configured endpoint; with the `offline` provider (the default) it runs the
    /// extractive compiler. Resolves with a
    /// report; a source that fails is listed in `failed` and stays pending, the wiki unchanged by
    /// it. Rejects with `CANCELLED` when `signal` aborts (committed sources stay).
    #[wasm_bindgen(unchecked_return_type = "Promise<CompileReport>")]
    pub fn compile(
        &self,
        #[wasm_bindgen(unchecked_param_type = "CompileRequest | undefined")] request: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let (options, on_progress, cancel, _listener) = compile_request(&request)?;
            let report = inner
                .core
                .compile_configured(FetchTransport::new(), &options, &on_progress, &cancel)
                .await;
            result_to_js(report)
        })
    }

    /// Asks the configured compile model to describe the picture of attachment `name`, and
    /// keeps the description with it (`Asset.description`: text, model, time), replacing an
    /// earlier one, in one operation. The source text is untouched; the next compile of a
    /// source that shows the picture sees it, and claims drawn from it cite the picture and are
    /// never verified. `signal` cancels (`CANCELLED`, nothing stored). Throws `NOT_FOUND`,
    /// `UNSUPPORTED_MIME` (not PNG, JPEG, WebP or GIF), `INVALID_INPUT` (over 5 MB),
    /// `LLM_CONFIG` (the offline provider), and the endpoint's errors (`LLM_REJECTED` from a
    /// model that reads text only).
    #[wasm_bindgen(js_name = describeAttachment, unchecked_return_type = "Promise<Asset>")]
    pub fn describe_attachment(
        &self,
        name: String,
        #[wasm_bindgen(unchecked_param_type = "{ signal?: AbortSignal } | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let (cancel, _listener) = signal_of(&options);
            result_to_js(
                inner
                    .core
                    .describe_attachment_configured(FetchTransport::new(), &name, &cancel)
                    .await,
            )
        })
    }

    /// The token cost a `compile()` with these options would have, per source and in total, with
    /// the configured compile model's settings and what its replies showed (0 for the offline
    /// provider). Sends nothing.
    #[wasm_bindgen(unchecked_return_type = "Promise<CompileEstimate>")]
    pub fn estimate(
        &self,
        #[wasm_bindgen(unchecked_param_type = "CompileRequest | undefined")] request: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let (options, _, _, _listener) = compile_request(&request)?;
            result_to_js(inner.core.estimate_configured(&options).await)
        })
    }

    /// Answers a question from the wiki, citing its pages as `[[key]]` (every citation names a
    /// page the answer was given; others are removed and listed in `removedCitations`). Streams
    /// the answer to `onToken`. With `writeBack: true` the answer is saved as an `analysis` page
    /// (`saved`); `worthSaving` says whether it cites two or more pages. With no endpoint the
    /// answer is extractive (`extractive: true`) and says so.
    ///
    /// With `writeBack` it commits a page: an app with several writers (tabs, an extension) calls
    /// it under its write lock, as `www/app.js` does (Decision 9). Without, it writes no wiki
    /// content, only the cache of what the endpoint accepted (`meta/llm-learned`, an optimistic
    /// write whose conflict is ignored), so it need not wait for the lock.
    #[wasm_bindgen(unchecked_return_type = "Promise<Answer>")]
    pub fn ask(
        &self,
        question: String,
        #[wasm_bindgen(unchecked_param_type = "AskRequest | undefined")] request: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let options: crate::query::AskOptions = if request.is_object() {
                interop::json_to_rust("ask options", &request)?
            } else {
                Default::default()
            };
            let callback = Reflect::get(&request, &"onToken".into())
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
            let on_token = |t: &str| {
                if let Some(f) = &callback {
                    let _ = f.call1(&JsValue::UNDEFINED, &JsValue::from_str(t));
                }
            };
            let (cancel, _listener) = signal_of(&request);
            let answer = inner
                .core
                .ask_configured(
                    FetchTransport::new(),
                    &question,
                    &options,
                    Some(&on_token),
                    &cancel,
                )
                .await;
            result_to_js(answer)
        })
    }

    /// Saves an answer `ask()` returned as an `analysis` page (the same as `writeBack: true`).
    /// Throws `UNGROUNDED` for an answer with `grounded: false` (declined, or citing no page).
    #[wasm_bindgen(js_name = saveAnswer, unchecked_return_type = "Promise<Page>")]
    pub fn save_answer(
        &self,
        question: String,
        #[wasm_bindgen(unchecked_param_type = "Answer")] answer: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let answer: crate::query::Answer = interop::json_to_rust("answer", &answer)?;
            result_to_js(inner.core.write_back(&question, &answer).await)
        })
    }

    /// Checks the wiki's health: findings (id, kind, severity, page, related, message, fix) sorted
    /// by severity. Apply a finding's fix with `applyFix(id)`.
    ///
    /// With `llm: true` the LLM checks run first with the lint model (contradictions between pages
    /// that share an entity, superseded claims, gaps, suggested questions; call `lintEstimate`
    /// before, they cost tokens); their findings stay listed by later `lint()` calls until the
    /// next LLM run. `signal` cancels them (`CANCELLED`). Throws `LLM_CONFIG` with no endpoint, and
    /// every LLM error but `LLM_BAD_OUTPUT` (a reply still malformed after its repair is left out).
    /// With `llm: true` it writes (the findings, and what the endpoint accepted): call it under
    /// the app's write lock, as `www/app.js` does (Decision 9).
    #[wasm_bindgen(unchecked_return_type = "Promise<Finding[]>")]
    pub fn lint(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "(Partial<LintOptions> & Partial<LlmLintOptions> & { llm?: boolean, signal?: AbortSignal }) | undefined"
        )]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        let (cancel, listener) = if options.is_object() {
            signal_of(&options)
        } else {
            (Cancel::new(), None)
        };
        promise(async move {
            let _listener = listener;
            let (options, llm_options): (crate::lint::LintOptions, Option<LlmLintOptions>) =
                if options.is_object() {
                    let llm = Reflect::get(&options, &"llm".into())
                        .ok()
                        .and_then(|v| v.as_bool())
                        .unwrap_or(false);
                    (
                        interop::json_to_rust("lint options", &options)?,
                        if llm {
                            Some(interop::json_to_rust("lint options", &options)?)
                        } else {
                            None
                        },
                    )
                } else {
                    Default::default()
                };
            if let Some(llm_options) = llm_options {
                inner
                    .core
                    .lint_llm_configured(FetchTransport::new(), &llm_options, &cancel)
                    .await
                    .map_err(|e| error_to_js(&e))?;
            }
            result_to_js(inner.core.lint(&options).await)
        })
    }

    /// What `lint({ llm: true })` would cost, before any call: `{ groups, input, output, total }`
    /// tokens (Decision 12 estimate; `groups` are the page groups, one call each).
    #[wasm_bindgen(js_name = lintEstimate, unchecked_return_type = "Promise<LlmLintEstimate>")]
    pub fn lint_estimate(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Partial<LlmLintOptions> | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let options: LlmLintOptions = if options.is_object() {
                interop::json_to_rust("lint options", &options)?
            } else {
                Default::default()
            };
            let config = inner.core.llm_config().await.map_err(|e| error_to_js(&e))?;
            result_to_js(
                inner
                    .core
                    .lint_llm_estimate(&options, &config.estimator)
                    .await,
            )
        })
    }

    /// Applies the fix of a current lint finding, as one operation. For a contradiction, `note`
    /// says how it was settled and `scoped: true` keeps both claims (status `scoped`).
    #[wasm_bindgen(js_name = applyFix, unchecked_return_type = "Promise<Operation>")]
    pub fn apply_fix(
        &self,
        id: String,
        #[wasm_bindgen(unchecked_param_type = "{ note?: string, scoped?: boolean } | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let note = Reflect::get(&options, &"note".into())
                .ok()
                .and_then(|v| v.as_string());
            let scoped = Reflect::get(&options, &"scoped".into())
                .ok()
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            result_to_js(inner.core.apply_fix(&id, note.as_deref(), scoped).await)
        })
    }
}
