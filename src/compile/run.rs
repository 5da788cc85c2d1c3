//! Running a compile with the wiki's configured endpoint (or offline when none is configured).
//!
//! *Invariant:* this is the one place that turns settings into a [`CompileModel`]; the JS API and
//! the tests call it with a real `fetch` transport or an in-process scripted one.

use super::model::{llm_compiler_name, CompileModel, LlmCompiler};
use super::offline::OfflineCompiler;
use super::pipeline::{
    reply_cap, reply_ratio_key, CompileEstimate, CompileOptions, CompileReport, Progress,
};
use crate::clock::Clock;
use crate::error::Result;
use crate::llm::client::Learned;
use crate::llm::config::Config;
use crate::llm::config::Provider;
use crate::llm::transport::Transport;
use crate::llm::{Cancel, Purpose};
use crate::storage::Storage;
use crate::wiki::Wiki;

/// The offline compiler's corpus statistics as this connection last brought them up to date
/// (see [`Wiki::offline_compiler`]), kept in the kernel's per-connection state; not stored.
#[derive(Default)]
struct OfflineCorpus(std::cell::RefCell<Option<crate::extractive::terms::CorpusCache>>);

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The offline compiler over every source of this wiki (its corpus terms need them all).
    /// What each source adds to the corpus statistics is kept for this connection, so a compile
    /// reads the text of only the sources added or corrected since the last one.
    pub async fn offline_compiler(&self) -> Result<OfflineCompiler> {
        let current: std::collections::BTreeMap<String, String> = self
            .read_all::<crate::model::Source>(crate::storage::Store::Sources, "")
            .await?
            .into_iter()
            .map(|s| (s.key, s.version))
            .collect();
        let corpus = self.op_state.get::<OfflineCorpus>();
        let mut cache = corpus.0.take().unwrap_or_default();
        for key in cache.retain(&current) {
            let version = &current[&key];
            let text = self.source_text(version).await?;
            cache.add(&key, version, &text);
        }
        let terms = cache.terms();
        *corpus.0.borrow_mut() = Some(cache);
        Ok(OfflineCompiler::from_terms(terms))
    }

    /// Compiles with the configured endpoint over `transport`, or offline when the provider is
    /// `offline`. With `describeImages` on (an endpoint only), the pictures the sources to
    /// compile show are described first ([`Wiki::describe_attachment`]), each once. The context window, output cap and token budget come from the settings (the
    /// compile model's), overriding `options`. What the client learns about the endpoint
    /// (structured-output mode, how long its extract replies run per token of source) is saved
    /// afterwards and used by the next compile, in this connection or another.
    pub async fn compile_configured<T: Transport>(
        &self,
        transport: T,
        options: &CompileOptions,
        on_progress: &dyn Fn(&Progress),
        cancel: &Cancel,
    ) -> Result<CompileReport> {
        let config = self.llm_config().await?;
        if config.provider == Provider::Offline {
            let model = self.offline_compiler().await?;
            let options = CompileOptions {
                // Extractive: one chunk per source, whatever its size.
                context_window: 10_000_000,
                ..options.clone()
            };
            return self.compile(&model, &options, on_progress, cancel).await;
        }
        let resolved = config.resolve(Purpose::Compile);
        let llm = self.endpoint_llm(config.clone(), transport).await?;
        // The token budget is enforced per source (one operation each) by the pipeline.
        let model = LlmCompiler {
            llm: &llm,
            max_output_tokens: Some(resolved.max_output_tokens),
            model_name: resolved.model.clone(),
        };
        let options = configured(options, &config);
        self.seed_from(llm.learned(), &model.name(), &options);
        // Pictures first (opt-in): the extract calls then see their descriptions.
        let images = if config.describe_images {
            let sources = self.sources_to_compile(&options).await?;
            self.describe_shown(&llm, &resolved.model, &sources, on_progress, cancel)
                .await?
        } else {
            Default::default()
        };
        let report = self
            .compile(&model, &options, on_progress, cancel)
            .await
            .map(|mut r| {
                r.usage.add(&images.usage);
                CompileReport { images, ..r }
            });
        // Also after a failed compile: a reply cut at the cap is what is worth keeping.
        if let Some((key, ratios)) = self.reply_ratios() {
            llm.learned().set_reply_ratios(&key, ratios);
        }
        // A cache of endpoint behaviour; failing to store it must not fail the compile.
        let _ = self.save_llm_learned(llm.learned()).await;
        report
    }

    /// What [`Wiki::compile_configured`] with `options` would cost ([`Wiki::estimate`]), with
    /// the settings it would use: the compile model's context window, output cap and token
    /// estimator, and the reply lengths learned for that model (so chunks are counted as that
    /// compile will cut them). The offline provider costs nothing: every source 0 tokens and 0
    /// calls. Sends nothing.
    pub async fn estimate_configured(&self, options: &CompileOptions) -> Result<CompileEstimate> {
        let config = self.llm_config().await?;
        if config.provider == Provider::Offline {
            let mut out = self.estimate(options).await?;
            for s in &mut out.sources {
                // Extractive: one chunk per source, whatever its size (as `compile_configured`).
                s.chunks = 1;
                s.calls = 0;
                s.input = 0;
                s.output = 0;
            }
            out.total = crate::model::TokenUsage {
                estimated: true,
                ..Default::default()
            };
            return Ok(out);
        }
        let model = llm_compiler_name(&config.resolve(Purpose::Compile).model);
        let options = configured(options, &config);
        self.seed_from(&self.llm_learned().await?, &model, &options);
        self.estimate_for(&options, Some(&model)).await
    }

    /// Starts this connection from how long the extract replies of `model_name`
    /// ([`CompileModel::name`]) run at the reply cap of `options`, as `learned` keeps them from
    /// earlier connections.
    fn seed_from(&self, learned: &Learned, model_name: &str, options: &CompileOptions) {
        let key = reply_ratio_key(model_name, reply_cap(options));
        if let Some(kept) = learned.reply_ratios(&key) {
            self.seed_reply_ratios(&key, &kept);
        }
    }
}

/// `options` with the settings of the compile model in `config`: its context window, output cap,
/// token budget (unless `options` sets one) and token estimator.
fn configured(options: &CompileOptions, config: &Config) -> CompileOptions {
    let resolved = config.resolve(Purpose::Compile);
    CompileOptions {
        context_window: u64::from(config.context_window),
        max_output_tokens: u64::from(resolved.max_output_tokens),
        token_budget: options.token_budget.or(Some(resolved.token_budget)),
        estimator: config.estimator,
        ..options.clone()
    }
}
