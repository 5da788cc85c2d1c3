//! The query models: what routing and answering need of a model ([`QueryModel`]), and
//! [`LlmQuery`], the one backed by a chat endpoint (route by a structured call over index lines,
//! answer by a streamed call over `<source>` blocks of the pages given).

use crate::error::Result;
use crate::llm::prompt::{source_block, DATA_NOTICE};
use crate::llm::structured::chat_json;
use crate::llm::{Cancel, ChatRequest, JsonSchema, Llm, Message, OnToken, Purpose};
use crate::model::TokenUsage;

use super::Turn;

/// One text the answer call is given: a page, or a passage of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    /// The citation key: a page key (cited `[[key]]`), or a passage's footnote id (`s1`, cited
    /// `[^s1]`).
    pub key: String,
    /// The page title, or for a passage its source title and heading path.
    pub title: String,
    /// The text: a page's chosen passages, or the source passage verbatim.
    pub text: String,
    /// Where a source passage is (`None` for a page).
    pub passage: Option<GivenPassage>,
}

/// Where a given source passage is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenPassage {
    /// The passage key in the search index (`"{source}#L{a}-{b}"`).
    pub key: String,
    /// The source key.
    pub source: String,
    /// The source version the passage was cut from.
    pub version: String,
    /// Its title.
    pub source_title: String,
    /// The heading path.
    pub heading: String,
    /// 1-based inclusive line range.
    pub lines: (u32, u32),
    /// The source's summary page, when it has one.
    pub summary_page: Option<String>,
}

impl Given {
    /// The key of its `<source>` block: the page key, or `^id` for a passage (the footnote it
    /// is cited with).
    pub fn block_key(&self) -> String {
        match self.passage {
            Some(_) => format!("^{}", self.key),
            None => self.key.clone(),
        }
    }
}

/// What an answer model needs (the LLM or the offline extractor).
#[allow(async_fn_in_trait)] // used generically on one thread, never as dyn
pub trait QueryModel {
    /// Picks page keys (or titles) for `question` from `index` lines; `None` means "cannot route"
    /// (the search shortlist is then used as it is).
    async fn route(
        &self,
        question: &str,
        history: &[Turn],
        index: &str,
        max: usize,
        cancel: &Cancel,
    ) -> Result<(Option<Vec<String>>, TokenUsage)>;
    /// Answers from `given` (pages and source passages), streaming through `on_token`.
    async fn answer(
        &self,
        question: &str,
        history: &[Turn],
        given: &[Given],
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<(String, TokenUsage)>;
    /// True for the extractive model.
    fn extractive(&self) -> bool;
}

/// The query model backed by a chat endpoint.
pub struct LlmQuery<'a, L: Llm> {
    /// The endpoint.
    pub llm: &'a L,
    /// Output cap per call.
    pub max_output_tokens: Option<u32>,
}

fn route_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "pages": {"type": "array", "items": {"type": "string", "description": "A page key from the index, e.g. the text inside [[…]]."}},
            "reason": {"type": "string", "description": "One sentence: why these pages."}
        },
        "required": ["pages", "reason"],
        "additionalProperties": false
    })
}

/// System prompt of the answer call: answer from the pages only, cite each statement.
pub const ANSWER_SYSTEM: &str = "You answer questions from a personal wiki. Use only the wiki pages and source passages given in <source> blocks. \
After each statement, cite where it comes from: a wiki page as [[page key]] with the key of its block; a source passage \
(a block whose key starts with ^, e.g. ^s1) as the footnote marker [^s1]. Prefer the wiki pages; use a source passage for \
what the pages lack. If neither answers the question, say so plainly instead of guessing. Answer in the language of the question.";

fn history_messages(history: &[Turn]) -> Vec<Message> {
    history
        .iter()
        .flat_map(|t| {
            [
                Message::user(t.question.clone()),
                Message::assistant(t.answer.clone()),
            ]
        })
        .collect()
}

impl<L: Llm> QueryModel for LlmQuery<'_, L> {
    async fn route(
        &self,
        question: &str,
        history: &[Turn],
        index: &str,
        max: usize,
        cancel: &Cancel,
    ) -> Result<(Option<Vec<String>>, TokenUsage)> {
        let mut messages = history_messages(history);
        messages.push(Message::user(format!(
                "{}\n\nPick at most {max} pages of the wiki index above that are most likely to answer this question \
                 (keys as written inside [[…]]): {question}",
                source_block("index.md", index)
            )));
        let request = ChatRequest {
            purpose: Purpose::Query,
            system: format!("You route questions to the pages of a personal wiki. {DATA_NOTICE}"),
            messages,
            json: Some(JsonSchema {
                name: "route".into(),
                schema: route_schema(),
            }),
            max_tokens: self.max_output_tokens.map(|m| m.min(1024)),
            temperature: Some(0.0),
        };
        let reply = chat_json(self.llm, &request, cancel).await?;
        let pages = reply
            .value
            .get("pages")
            .and_then(|p| p.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str())
                    .map(|s| {
                        s.trim()
                            .trim_start_matches("[[")
                            .trim_end_matches("]]")
                            .to_string()
                    })
                    .collect()
            });
        Ok((pages, reply.usage))
    }

    async fn answer(
        &self,
        question: &str,
        history: &[Turn],
        given: &[Given],
        on_token: Option<OnToken<'_>>,
        cancel: &Cancel,
    ) -> Result<(String, TokenUsage)> {
        let mut messages = history_messages(history);
        let blocks: Vec<String> = given
            .iter()
            .map(|g| source_block(&g.block_key(), &format!("# {}\n\n{}", g.title, g.text)))
            .collect();
        messages.push(Message::user(format!(
            "{}\n\nQuestion: {question}",
            blocks.join("\n\n")
        )));
        let request = ChatRequest {
            purpose: Purpose::Query,
            system: format!("{ANSWER_SYSTEM} {DATA_NOTICE}"),
            messages,
            json: None,
            max_tokens: self.max_output_tokens,
            temperature: Some(0.2),
        };
        let reply = self.llm.chat(&request, on_token, cancel).await?;
        Ok((reply.text, reply.usage))
    }

    fn extractive(&self) -> bool {
        false
    }
}
