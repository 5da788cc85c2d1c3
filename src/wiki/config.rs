//! The stored LLM configuration as the kernel reads it: the configuration with its secrets (to
//! build a client, and for the commit's offline embedding), and what the client learned about
//! endpoints (a cache written without an operation). Saving the configuration is the `settings`
//! operation's.
//!
//! *Invariant:* the secrets are read back only here, to build request headers; nothing here
//! writes `meta/config` or `meta/secrets`.

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::client::{Learned, LearnedModes};
use crate::llm::config::{Config, Secret};
use crate::records::{to_json, Secrets, META_CONFIG, META_LEARNED, META_SECRETS};
use crate::storage::{Batch, Expect, Storage, Store};

use super::Wiki;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The LLM configuration with its secrets (to build a client). A wiki without one is offline
    /// ([`Config::default`]).
    pub async fn llm_config(&self) -> Result<Config> {
        let mut config = match self.read::<Config>(Store::Meta, META_CONFIG).await? {
            Some((c, _)) => c,
            None => Config::default(),
        };
        if let Some((s, _)) = self.read::<Secrets>(Store::Meta, META_SECRETS).await? {
            config.api_key = s.api_key.map(Secret::new);
            config.embeddings.api_key = s.embeddings_api_key.map(Secret::new);
            config.secret_headers =
                crate::util::btree_map(s.headers.into_iter().map(|(k, v)| (k, Secret::new(v))));
        }
        Ok(config)
    }

    /// What the client learned about endpoints (shared with clients built from it). A stored
    /// record that does not parse counts as nothing learned (it is a cache; the next save
    /// replaces it).
    pub async fn llm_learned(&self) -> Result<Learned> {
        let stored = match self.read::<LearnedModes>(Store::Meta, META_LEARNED).await {
            Ok(r) => r.map(|(m, _)| m).unwrap_or_default(),
            Err(Error::Corrupt { .. }) => LearnedModes::default(),
            Err(e) => return Err(e),
        };
        Ok(Learned::from_modes(stored))
    }

    /// A client for `config`'s endpoint over `transport`, starting from what clients learned
    /// about endpoints before ([`Wiki::llm_learned`]).
    ///
    /// Errors: [`Error::LlmConfig`] for a configuration no client can be built from; storage
    /// errors.
    pub async fn endpoint_llm<T: crate::llm::transport::Transport>(
        &self,
        config: Config,
        transport: T,
    ) -> Result<crate::llm::client::HttpLlm<T>> {
        Ok(crate::llm::client::HttpLlm::new(config, transport)?
            .with_learned(self.llm_learned().await?))
    }

    /// Stores what the client learned in this connection over what is stored now
    /// ([`Learned::merged_into`]: entries another tab stored meanwhile are kept), when that
    /// changes anything. This is a cache of endpoint behaviour, not wiki content: it is written
    /// without an operation. A stored record that does not parse is replaced.
    pub async fn save_llm_learned(&self, learned: &Learned) -> Result<()> {
        let (current, expect) = match self.read::<LearnedModes>(Store::Meta, META_LEARNED).await {
            Ok(Some((m, rev))) => (Some(m), Expect::Rev(rev)),
            Ok(None) => (None, Expect::Absent),
            Err(Error::Corrupt { .. }) => (None, Expect::Any),
            Err(e) => return Err(e),
        };
        let modes = learned.merged_into(current.clone().unwrap_or_default());
        if current.as_ref() == Some(&modes) {
            return Ok(());
        }
        let mut b = Batch::new();
        b.put(Store::Meta, META_LEARNED, to_json(&modes), expect);
        self.storage.commit(b).await.map(|_| ())
    }
}
