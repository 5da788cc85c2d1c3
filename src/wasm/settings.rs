//! The `Wiki` methods on the LLM settings: presets, saving and reading them (secrets never come
//! back), and the connection test.

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;

use super::interop::{self, error_to_js, result_to_js, to_js};
use super::{promise, signal_of, Wiki};
use crate::llm::config::presets;
use crate::llm::config::Config;
use crate::llm::http::FetchTransport;

#[wasm_bindgen]
impl Wiki {
    /// Saves the LLM settings (one `settings` operation in log.md; never the key). An absent
    /// `apiKey` keeps the stored key, `""` removes it; extra headers whose name looks secret
    /// (`Authorization`, `*key*`, `*token*`…) are stored like the key. Throws `LLM_CONFIG` for
    /// invalid settings (nothing is written).
    ///
    /// @example
    /// ```ts
    /// const [ollama] = Wiki.presets().filter(p => p.id === "ollama");
    /// await wiki.setConfig({ ...ollama.config, model: "qwen2.5:7b" });
    /// ```
    #[wasm_bindgen(js_name = setConfig, unchecked_return_type = "Promise<Operation>")]
    pub fn set_config(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConfigInput")] config: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        let config: Result<Config, JsValue> = interop::json_to_rust("setConfig", &config);
        promise(async move { result_to_js(inner.core.set_llm_config(config?).await) })
    }

    /// The LLM settings without secrets: `hasApiKey` and `secretHeaderNames` say what is stored.
    /// A wiki that was never configured is offline.
    #[wasm_bindgen(unchecked_return_type = "Promise<ConfigView>")]
    pub fn config(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.llm_config_view().await) })
    }

    /// This browser's device id for the wiki: 10 characters (`[0-9a-z]`, Crockford's base32),
    /// made on first use and kept locally; never exported, so a wiki imported into another
    /// browser gets its own. Several devices keeping one folder tell their writes apart by it.
    #[wasm_bindgen(js_name = deviceId, unchecked_return_type = "Promise<string>")]
    pub fn device_id(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move { result_to_js(inner.core.device_id().await) })
    }

    /// Starting points for the settings screen: OpenAI, Ollama (OpenAI-compatible `/v1`), Ollama
    /// native API, LM Studio, llama.cpp server, vLLM, Anthropic, offline.
    #[wasm_bindgen(unchecked_return_type = "Preset[]")]
    pub fn presets() -> Result<JsValue, JsValue> {
        to_js(&presets())
    }

    /// Tests the LLM settings (stored, or `options.config`) with the same URLs and requests the
    /// real calls use: the model list (reachability, CORS, key), a plain and a streamed chat, a
    /// structured call (which JSON mode the endpoint takes; remembered), and embeddings. Never
    /// throws for endpoint problems: each step reports `ok`, `failed` (with an error `code`) or
    /// `skipped`. An `LLM_ORIGIN_NOT_ALLOWED` step names the exact `OLLAMA_ORIGINS` value.
    /// It may store what the endpoint accepted (`meta/llm-learned`, a cache written with an
    /// optimistic check whose conflict is ignored): no write lock needed.
    #[wasm_bindgen(js_name = testConnection, unchecked_return_type = "Promise<ConnectionReport>")]
    pub fn test_connection(
        &self,
        #[wasm_bindgen(unchecked_param_type = "TestConnectionOptions | undefined")]
        options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let (cancel, _listener) = signal_of(&options);
            let mut given: Option<Config> = None;
            if options.is_object() {
                if let Ok(c) = Reflect::get(&options, &"config".into()) {
                    if c.is_object() {
                        given = Some(interop::json_to_rust("testConnection config", &c)?);
                    }
                }
            }
            let stored = inner.core.llm_config().await.map_err(|e| error_to_js(&e))?;
            let mut config = match given {
                Some(mut c) => {
                    if c.api_key.is_none() {
                        c.api_key = stored.api_key.clone();
                    }
                    if c.embeddings.api_key.is_none() {
                        c.embeddings.api_key = stored.embeddings.api_key.clone();
                    }
                    for (k, v) in &stored.secret_headers {
                        c.secret_headers
                            .entry(k.clone())
                            .or_insert_with(|| v.clone());
                    }
                    c
                }
                None => stored,
            };
            config.normalize();
            let learned = inner
                .core
                .llm_learned()
                .await
                .map_err(|e| error_to_js(&e))?;
            let report = crate::llm::connection::test_connection(
                &config,
                FetchTransport::new(),
                learned.clone(),
                &cancel,
            )
            .await;
            // What the endpoint accepted is worth keeping even if saving it fails.
            let _ = inner.core.save_llm_learned(&learned).await;
            to_js(&report)
        })
    }
}
