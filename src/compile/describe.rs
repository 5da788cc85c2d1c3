//! Pictures described by the model (issue 26): an attachment's picture is sent to the compile
//! model, and what it writes is kept with the attachment as a derived layer
//! ([`ImageDescription`], with the model and the time). It is not part of any source's text, so it
//! changes no source's version (Decision 1); the extract call sees it beside the text of a source
//! that shows the picture, and a claim whose quote comes from it cites the picture and is never
//! verified (Decision 3, [`crate::model::Claim::from_description`]).
//!
//! *Invariant:* a description is stored only whole, in an operation of its own
//! ([`OperationKind::Describe`]), so rolling it back restores the attachment as it was; a failed
//! or cancelled call stores nothing.

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::config::Provider;
use crate::llm::transport::Transport;
use crate::llm::{picture_type, Cancel, ChatRequest, Image, Llm, Message, Purpose};
use crate::model::{Asset, ImageDescription, OperationKind, Source, TokenUsage};
use crate::records::{to_json, ASSET_PREFIX};
use crate::storage::{Expect, Storage, Store};
use crate::wiki::Wiki;

use super::pipeline::{ImagesReport, Progress, SourceFailure};

/// The picture types every provider reads (OpenAI, Anthropic and Ollama all take these).
pub const DESCRIBABLE: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/gif"];

/// The largest picture sent, in bytes: its base64 (4 characters per 3 bytes) stays within
/// Anthropic's limit of 5 MB per picture, the smallest of the three providers', which applies
/// to the encoded data.
pub const MAX_DESCRIBED_BYTES: u64 = 5 * 1024 * 1024 / 4 * 3;

/// Longest description kept, in characters (a model that runs on is cut at a sentence's end
/// where it can be).
pub const MAX_DESCRIPTION_CHARS: usize = 4_000;

/// After this many failed pictures in one compile, the rest are left for the next one (an
/// endpoint whose model does not read images refuses them all).
const MAX_FAILURES: usize = 3;

/// The [`Error::InvalidInput`] for a picture over [`MAX_DESCRIBED_BYTES`], `None` for one within.
pub fn too_large(asset: &Asset) -> Option<Error> {
    let mb = |bytes: u64| bytes as f64 / 1_048_576.0;
    (asset.bytes > MAX_DESCRIBED_BYTES).then(|| {
        Error::InvalidInput(format!(
            "{} is {:.1} MB: pictures over {:.2} MB are not sent to the model",
            asset.name,
            mb(asset.bytes),
            mb(MAX_DESCRIBED_BYTES)
        ))
    })
}

/// The system prompt of a description call.
pub fn describe_system() -> String {
    "You describe one picture from a person's notes, for a wiki compiled from them. In plain \
sentences, say what kind of picture it is (photo, chart, diagram, screenshot, table, scan) and what \
it shows, and state every fact it gives: copy any text, labels, numbers and axis names exactly as \
written. Say nothing that is not visible. Write in the language of the text in the picture, or in \
English when it has none. Use at most about 300 words. Reply with the description only."
        .to_string()
}

/// The chat request that asks the compile model to describe the picture `bytes` of type `mime`
/// (as [`picture_type`] reads it), named `name`. Its output cap is the compile model's.
pub fn describe_request(name: &str, mime: &str, bytes: &[u8]) -> ChatRequest {
    let mut message = Message::user(format!(
        "Describe the picture \"{}\".",
        name.replace('"', "'")
    ));
    message.images.push(Image::new(mime, bytes));
    ChatRequest {
        purpose: Purpose::Compile,
        system: describe_system(),
        messages: vec![message],
        json: None,
        max_tokens: None,
        temperature: Some(0.0),
    }
}

/// `text` trimmed and, past [`MAX_DESCRIPTION_CHARS`], cut after the last sentence end that fits
/// (or at the limit).
fn kept(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= MAX_DESCRIPTION_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX_DESCRIPTION_CHARS).collect();
    let end = cut
        .char_indices()
        .rfind(|(_, c)| matches!(c, '.' | '。' | '!' | '?' | '！' | '？'))
        .map(|(i, c)| i + c.len_utf8());
    match end {
        Some(end) if end > cut.len() / 2 => cut[..end].to_string(),
        _ => cut,
    }
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Asks `llm` to describe the picture of the attachment `name` and stores the description
    /// with it, replacing an earlier one (one [`OperationKind::Describe`] operation). `model` is
    /// recorded when the reply names none. Returns the attachment as stored.
    ///
    /// Errors: [`Error::NotFound`] (no such attachment); [`Error::UnsupportedMime`] (not a PNG,
    /// JPEG, WebP or GIF picture); [`Error::InvalidInput`] (over [`MAX_DESCRIBED_BYTES`]); the
    /// endpoint's errors (an endpoint whose model does not read images refuses with
    /// `LLM_REJECTED`); [`Error::Cancelled`]; storage errors. Nothing is stored on an error.
    pub async fn describe_attachment<L: Llm>(
        &self,
        llm: &L,
        model: &str,
        name: &str,
        cancel: &Cancel,
    ) -> Result<Asset> {
        Ok(self.describe_one(llm, model, name, cancel).await?.0)
    }

    /// [`Wiki::describe_attachment`], with the tokens the call cost.
    async fn describe_one<L: Llm>(
        &self,
        llm: &L,
        model: &str,
        name: &str,
        cancel: &Cancel,
    ) -> Result<(Asset, TokenUsage)> {
        let key = format!("{ASSET_PREFIX}{name}");
        let (asset, _) = self
            .read::<Asset>(Store::Meta, &key)
            .await?
            .ok_or_else(|| Error::NotFound(format!("attachment {name:?}")))?;
        if !DESCRIBABLE.contains(&asset.mime.as_str()) {
            return Err(Error::UnsupportedMime(format!(
                "{} is {}: only PNG, JPEG, WebP and GIF pictures are described",
                asset.name, asset.mime
            )));
        }
        if let Some(e) = too_large(&asset) {
            return Err(e);
        }
        let bytes = self
            .asset_bytes(&asset.sha256)
            .await?
            .ok_or_else(|| Error::NotFound(format!("the bytes of attachment {name:?}")))?;
        let mime = picture_type(&bytes).ok_or_else(|| {
            Error::UnsupportedMime(format!(
                "{} is named {} but its bytes are not a PNG, JPEG, WebP or GIF picture",
                asset.name, asset.mime
            ))
        })?;
        let reply = llm
            .chat(&describe_request(&asset.name, mime, &bytes), None, cancel)
            .await?;
        let text = kept(&reply.text);
        if text.is_empty() {
            return Err(Error::LlmBadOutput(format!(
                "the description of {} is empty",
                asset.name
            )));
        }
        cancel.check()?;
        // Read again: the record may have changed during the call (a rollback, a new picture
        // under the name): a description of other bytes is not stored.
        let sent = asset.sha256;
        let (mut asset, rev) = self
            .read::<Asset>(Store::Meta, &key)
            .await?
            .filter(|(a, _)| a.sha256 == sent)
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "attachment {name:?} as it was sent: it changed during the call"
                ))
            })?;
        asset.description = Some(ImageDescription {
            text,
            model: if reply.model.is_empty() {
                model.to_string()
            } else {
                reply.model
            },
            time: self.clock.now_ms(),
        });
        let mut ob = self
            .begin(
                OperationKind::Describe,
                format!("picture described: {}", asset.name),
            )
            .await?;
        ob.op.usage = reply.usage;
        ob.batch.put(
            Store::Meta,
            key,
            to_json(&asset),
            Expect::from_read(Some(rev)),
        );
        self.finish(ob).await?;
        Ok((asset, reply.usage))
    }

    /// [`Wiki::describe_attachment`] with the configured compile model over `transport`.
    ///
    /// Errors: [`Error::LlmConfig`] with the offline provider (it has no model that reads
    /// pictures), and those of [`Wiki::describe_attachment`].
    pub async fn describe_attachment_configured<T: Transport>(
        &self,
        transport: T,
        name: &str,
        cancel: &Cancel,
    ) -> Result<Asset> {
        let config = self.llm_config().await?;
        if config.provider == Provider::Offline {
            return Err(Error::LlmConfig(
                "describing a picture needs an endpoint whose model reads images: the offline compiler reads text only".into(),
            ));
        }
        let model = config.resolve(Purpose::Compile).model;
        let llm = self.endpoint_llm(config, transport).await?;
        self.describe_attachment(&llm, &model, name, cancel).await
    }

    /// Describes every picture that `sources` show and that has no description yet (each
    /// attachment once), in source order, reporting [`Progress::Describing`]. A picture that
    /// cannot be described is listed with why and the others go on, up to [`MAX_FAILURES`]
    /// failures. Pictures of other types or over the size limit are skipped silently when
    /// linked (a PDF), and reported when too large.
    ///
    /// Errors: [`Error::Cancelled`]; storage errors.
    pub(crate) async fn describe_shown<L: Llm>(
        &self,
        llm: &L,
        model: &str,
        sources: &[Source],
        on_progress: &dyn Fn(&Progress),
        cancel: &Cancel,
    ) -> Result<ImagesReport> {
        let mut todo: Vec<Asset> = Vec::new();
        let mut report = ImagesReport::default();
        for source in sources {
            let text = self.source_text(&source.version).await?;
            let undescribed =
                |a: &Asset| DESCRIBABLE.contains(&a.mime.as_str()) && a.description.is_none();
            for asset in self.shown_assets(&text, undescribed).await? {
                if todo.iter().any(|a| a.name == asset.name)
                    || report.failed.iter().any(|f| f.key == asset.name)
                {
                    continue;
                }
                if let Some(e) = too_large(&asset) {
                    report.failed.push(SourceFailure {
                        key: asset.name.clone(),
                        code: e.code().to_string(),
                        message: e.to_string(),
                    });
                    continue;
                }
                todo.push(asset);
            }
        }
        let total = todo.len();
        let mut failures = 0;
        for (index, asset) in todo.into_iter().enumerate() {
            cancel.check()?;
            if failures >= MAX_FAILURES {
                report.failed.push(SourceFailure {
                    key: asset.name.clone(),
                    code: "NOT_TRIED".into(),
                    message: format!(
                        "not sent: the endpoint refused {MAX_FAILURES} pictures in this compile"
                    ),
                });
                continue;
            }
            on_progress(&Progress::Describing {
                name: asset.name.clone(),
                index,
                total,
            });
            match self.describe_one(llm, model, &asset.name, cancel).await {
                Ok((described, usage)) => {
                    report.usage.add(&usage);
                    report.described.push(described.name);
                }
                Err(Error::Cancelled) => return Err(Error::Cancelled),
                Err(e) => {
                    failures += 1;
                    report.failed.push(SourceFailure {
                        key: asset.name.clone(),
                        code: e.code().to_string(),
                        message: e.to_string(),
                    });
                }
            }
        }
        Ok(report)
    }
}
