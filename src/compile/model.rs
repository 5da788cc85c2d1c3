//! The compile model: what the compile pipeline asks of a model ([`CompileModel`]), and its
//! implementation over a chat-completion endpoint ([`LlmCompiler`]). The offline model is
//! [`super::offline::OfflineCompiler`].
//!
//! *Invariant:* a model only turns inputs into replies; it never reads or writes the wiki, and a
//! multi-page reply's entry lands only on the page its key names ([`drafted_page`]).

use std::collections::BTreeSet;

use super::extract::{extraction_schema, ExtractInput, Extraction};
use super::integrate::{
    page_draft_schema, page_drafts_schema, IntegrateInput, PageDraft, PageDrafts,
};
use super::prompt;
use super::resolve::match_key;
use crate::error::{Error, Result};
use crate::llm::structured::chat_json;
use crate::llm::{Cancel, ChatRequest, JsonSchema, Llm, Message, Purpose};
use crate::model::TokenUsage;

/// What the compile pipeline asks of a model. Implemented by [`LlmCompiler`] and by the offline
/// extractor.
#[allow(async_fn_in_trait)] // used generically on one thread, never as dyn
pub trait CompileModel {
    /// Extracts one chunk of a source.
    async fn extract(
        &self,
        input: &ExtractInput,
        cancel: &Cancel,
    ) -> Result<(Extraction, TokenUsage)>;
    /// Writes one page's new body.
    async fn integrate(
        &self,
        input: &IntegrateInput,
        cancel: &Cancel,
    ) -> Result<(PageDraft, TokenUsage)>;
    /// Writes several new pages (no current body) in one call: one entry per input, in order,
    /// `None` for a page the reply did not give (the pipeline then writes it with a call of its
    /// own). The default writes each with [`CompileModel::integrate`].
    async fn integrate_pages(
        &self,
        inputs: &[IntegrateInput],
        cancel: &Cancel,
    ) -> Result<(Vec<Option<PageDraft>>, TokenUsage)> {
        let mut drafts = Vec::with_capacity(inputs.len());
        let mut usage = TokenUsage::default();
        for input in inputs {
            let (d, u) = self.integrate(input, cancel).await?;
            usage.add(&u);
            drafts.push(Some(d));
        }
        Ok((drafts, usage))
    }
    /// A name for the log and for pages' provenance (`llm:<model>`, `offline`).
    fn name(&self) -> String;
    /// Whether replies are bounded by an output-token cap (an LLM): then a chunk of source text
    /// is kept to what an extraction of it can fit in a reply.
    fn bounded_replies(&self) -> bool {
        true
    }
    /// Whether this is the offline (extractive) model ([`super::offline::OfflineCompiler`]): it
    /// spends no tokens, so no token budget applies, and the pages it writes carry the
    /// [`OFFLINE`](crate::extractive::OFFLINE) tag until an LLM rewrites them.
    fn is_extractive(&self) -> bool {
        false
    }
}

/// The compile model backed by a chat-completion endpoint.
pub struct LlmCompiler<'a, L: Llm> {
    /// The endpoint.
    pub llm: &'a L,
    /// Output cap per call; `None` uses the endpoint's configured default.
    pub max_output_tokens: Option<u32>,
    /// Model name for the log.
    pub model_name: String,
}

/// One structured call through [`chat_json`] (lenient parsing, one repair round trip), the
/// prompt's block escapes a model copied undone ([`prompt::unescape_copied`]), then the JSON
/// value into `T`. Errors: the endpoint's, or [`Error::LlmBadOutput`].
async fn structured<L: Llm, T: serde::de::DeserializeOwned>(
    llm: &L,
    request: &ChatRequest,
    cancel: &Cancel,
) -> Result<(T, TokenUsage)> {
    let mut reply = chat_json(llm, request, cancel).await?;
    let sent = request.messages.iter().map(|m| m.content.as_str());
    prompt::unescape_copied(&mut reply.value, sent);
    let what = request.json.as_ref().map_or("reply", |j| j.name.as_str());
    let value = serde_json::from_value(reply.value)
        .map_err(|e| Error::LlmBadOutput(format!("{what}: {e}")))?;
    Ok((value, reply.usage))
}

impl<L: Llm> CompileModel for LlmCompiler<'_, L> {
    async fn extract(
        &self,
        input: &ExtractInput,
        cancel: &Cancel,
    ) -> Result<(Extraction, TokenUsage)> {
        let request = ChatRequest {
            purpose: Purpose::Compile,
            system: prompt::extract_system(),
            messages: vec![Message::user(prompt::extract_user(input))],
            json: Some(JsonSchema {
                name: "extract".into(),
                schema: extraction_schema(),
            }),
            max_tokens: self.max_output_tokens,
            temperature: Some(0.0),
        };
        structured(self.llm, &request, cancel).await
    }

    async fn integrate(
        &self,
        input: &IntegrateInput,
        cancel: &Cancel,
    ) -> Result<(PageDraft, TokenUsage)> {
        let request = ChatRequest {
            purpose: Purpose::Compile,
            system: prompt::integrate_system(),
            messages: vec![Message::user(prompt::integrate_user(input))],
            json: Some(JsonSchema {
                name: "integrate".into(),
                schema: page_draft_schema(),
            }),
            max_tokens: self.max_output_tokens,
            temperature: Some(0.0),
        };
        structured(self.llm, &request, cancel).await
    }

    /// One call for all `inputs`. An entry is taken only when the reply gives the page once,
    /// under its key (or a form of it models write: [`drafted_page`]), and its body cites only the page's own facts (and at least one of them when
    /// it has any), so one page's text never lands on another; any other page is `None`.
    async fn integrate_pages(
        &self,
        inputs: &[IntegrateInput],
        cancel: &Cancel,
    ) -> Result<(Vec<Option<PageDraft>>, TokenUsage)> {
        let request = ChatRequest {
            purpose: Purpose::Compile,
            system: prompt::integrate_pages_system(),
            messages: vec![Message::user(prompt::integrate_pages_user(inputs))],
            json: Some(JsonSchema {
                name: "integrate_pages".into(),
                schema: page_drafts_schema(),
            }),
            max_tokens: self.max_output_tokens,
            temperature: Some(0.0),
        };
        let (reply, usage): (PageDrafts, TokenUsage) =
            structured(self.llm, &request, cancel).await?;
        // Each entry goes to the one page its key names ([`drafted_page`]); no entry makes a page.
        let owner: Vec<Option<usize>> = reply
            .pages
            .iter()
            .map(|p| drafted_page(&p.key, inputs))
            .collect();
        let drafts = inputs
            .iter()
            .enumerate()
            .map(|(i, input)| {
                let mut given = reply
                    .pages
                    .iter()
                    .zip(&owner)
                    .filter(|(_, o)| **o == Some(i))
                    .map(|(p, _)| p);
                let (Some(p), None) = (given.next(), given.next()) else {
                    return None;
                };
                let own: BTreeSet<&str> = input.facts.iter().map(|f| f.id.as_str()).collect();
                let cited = super::integrate::footnote_refs(&p.body);
                let foreign = cited.iter().any(|id| !own.contains(id.as_str()));
                let uncited = !own.is_empty() && cited.is_empty();
                (!foreign && !uncited).then(|| PageDraft {
                    body: p.body.clone(),
                    summary: p.summary.clone(),
                })
            })
            .collect();
        Ok((drafts, usage))
    }

    fn name(&self) -> String {
        llm_compiler_name(&self.model_name)
    }
}

/// The page of `inputs` that a multi-page reply's `key` names, as models write keys (field case
/// F46): the key as given (attribute escapes undone), else with a vault folder prefix
/// (`concept/`, `wiki/entity/`, `concepts/`) and `.md` removed and compared case-insensitively
/// with each page's key and title, else by [`match_key`] (`Open AI` for `OpenAI`). A key that
/// names no page, or several at one step, names none: its entry is not used, and that page is
/// written by a call of its own.
pub fn drafted_page(key: &str, inputs: &[IntegrateInput]) -> Option<usize> {
    let given = key.replace("&quot;", "\"").replace("&amp;", "&");
    let given = given.trim();
    let one = |hits: Vec<usize>| -> Option<Option<usize>> {
        match hits.as_slice() {
            [] => None,
            [i] => Some(Some(*i)),
            _ => Some(None),
        }
    };
    let exact: Vec<usize> = (0..inputs.len())
        .filter(|&i| inputs[i].key == given)
        .collect();
    if let Some(hit) = one(exact) {
        return hit;
    }
    let bare = crate::markdown::resolve::strip_vault_folder(given).unwrap_or(given);
    let bare = bare
        .strip_suffix(".md")
        .or_else(|| bare.strip_suffix(".MD"))
        .unwrap_or(bare);
    let folded = crate::markdown::resolve::fold_name(bare);
    let named: Vec<usize> = (0..inputs.len())
        .filter(|&i| {
            crate::markdown::resolve::fold_name(&inputs[i].key) == folded
                || crate::markdown::resolve::fold_name(&inputs[i].title) == folded
        })
        .collect();
    if let Some(hit) = one(named) {
        return hit;
    }
    let m = match_key(bare);
    if m.is_empty() {
        return None;
    }
    let matched: Vec<usize> = (0..inputs.len())
        .filter(|&i| match_key(&inputs[i].key) == m || match_key(&inputs[i].title) == m)
        .collect();
    one(matched).flatten()
}

/// The [`CompileModel::name`] of an [`LlmCompiler`] for `model`.
pub(crate) fn llm_compiler_name(model: &str) -> String {
    format!("llm:{model}")
}
