//! The settings operation: saving the wiki's LLM configuration (`meta/config`) with its secrets
//! (`meta/secrets`), showing it without them ([`ConfigView`]), and editing schema.md. The kernel
//! reads the stored configuration (`Wiki::llm_config`, `Wiki::llm_learned`).
//!
//! *Invariant:* `meta/config` never holds a secret — [`Config`] does not serialise its API keys or
//! secret headers — so it can be exported as it is (Decision 10). The secrets live only in
//! `meta/secrets`, which exporters must skip ([`META_SECRETS`]); they are read back only to build
//! request headers.

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::documents::SCHEMA_MD;
use crate::error::Result;
use crate::llm::config::{Config, Provider, Secret};
use crate::model::{Operation, OperationKind};
use crate::records::{to_json, Secrets};
use crate::storage::{Expect, Storage, Store};
use crate::text::normalize_source_text;
use crate::wiki::Wiki;

pub use crate::records::{META_CONFIG, META_LEARNED, META_SECRETS};

/// The configuration as shown to the user: no secret, only whether one is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct ConfigView {
    /// The configuration (secrets are never serialised).
    #[serde(flatten)]
    pub config: Config,
    /// True when an API key is stored.
    pub has_api_key: bool,
    /// True when a separate embeddings API key is stored.
    pub embeddings_has_api_key: bool,
    /// Names of the extra headers stored as secrets (values hidden).
    pub secret_header_names: Vec<String>,
}

impl ConfigView {
    /// The view of `config`.
    pub fn of(config: &Config) -> ConfigView {
        ConfigView {
            config: config.without_secrets(),
            has_api_key: config.api_key.is_some(),
            embeddings_has_api_key: config.embeddings.api_key.is_some(),
            secret_header_names: config.secret_headers.keys().cloned().collect(),
        }
    }
}

fn describe(config: &Config) -> String {
    match config.provider {
        Provider::Offline => "LLM settings: offline".into(),
        p => format!(
            "LLM settings: {} {} at {}",
            p.as_str(),
            config.model,
            crate::llm::url::origin_of(&config.base_url)
        ),
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Saves the LLM configuration as one [`OperationKind::Settings`] operation.
    ///
    /// Secrets merge with the stored ones: an absent `apiKey` (or embeddings `apiKey`) keeps the
    /// stored key, an empty string removes it; secret headers merge by name, an empty value
    /// removes one. Extra headers whose name looks secret become secret headers.
    ///
    /// Errors: [`crate::Error::LlmConfig`] (validation; nothing written), storage errors.
    pub async fn set_llm_config(&self, mut input: Config) -> Result<Operation> {
        let stored = self.llm_config().await?;
        let clear_key = input.api_key.as_ref().is_some_and(Secret::is_empty);
        let clear_embed_key = input
            .embeddings
            .api_key
            .as_ref()
            .is_some_and(Secret::is_empty);
        if input.api_key.is_none() {
            input.api_key = stored.api_key.clone();
        }
        if input.embeddings.api_key.is_none() {
            input.embeddings.api_key = stored.embeddings.api_key.clone();
        }
        if clear_key {
            input.api_key = None;
        }
        if clear_embed_key {
            input.embeddings.api_key = None;
        }
        let mut headers = stored.secret_headers.clone();
        for (k, v) in std::mem::take(&mut input.secret_headers) {
            headers.insert(k, v);
        }
        input.secret_headers = headers;
        input.normalize();
        input.validate()?;

        let secrets = Secrets {
            api_key: input.api_key.as_ref().map(|s| s.expose().to_string()),
            embeddings_api_key: input
                .embeddings
                .api_key
                .as_ref()
                .map(|s| s.expose().to_string()),
            headers: crate::util::btree_map(
                input
                    .secret_headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.expose().to_string())),
            ),
        };
        let config_rev = self
            .storage
            .get(Store::Meta, META_CONFIG)
            .await?
            .map(|r| r.rev);
        let secrets_rev = self
            .storage
            .get(Store::Meta, META_SECRETS)
            .await?
            .map(|r| r.rev);
        let mut ob = self
            .begin(OperationKind::Settings, describe(&input))
            .await?;
        ob.batch.put(
            Store::Meta,
            META_CONFIG,
            to_json(&input),
            Expect::from_read(config_rev),
        );
        ob.batch.put(
            Store::Meta,
            META_SECRETS,
            to_json(&secrets),
            Expect::from_read(secrets_rev),
        );
        self.finish(ob).await
    }

    /// The stored configuration for display ([`ConfigView`]: no secret values).
    pub async fn llm_config_view(&self) -> Result<ConfigView> {
        Ok(ConfigView::of(&self.llm_config().await?))
    }

    /// Replaces schema.md (one [`OperationKind::Settings`] operation). It steers the next compile.
    pub async fn set_schema(&self, text: &str) -> Result<Operation> {
        let text = normalize_source_text(text);
        let mut ob = self
            .begin(OperationKind::Settings, "schema.md edited".into())
            .await?;
        let rev = self
            .storage
            .get(Store::Documents, SCHEMA_MD)
            .await?
            .map(|r| r.rev);
        ob.batch.put(
            Store::Documents,
            SCHEMA_MD,
            text.into_bytes(),
            Expect::from_read(rev),
        );
        self.finish(ob).await
    }
}
