//! The compile pipeline: extract → resolve → integrate → commit, one source at a time.
//!
//! Sources compile in key order, one commit each, so a batch gives the same page keys, links,
//! claims and ledger whatever order its sources were added in. The model calls are behind
//! [`CompileModel`] (the LLM, the offline extractor, or a scripted model in tests), so the pipeline
//! is the same for all of them.
//!
//! *Invariant:* every failure — a model error, a malformed reply, cancellation, a storage error —
//! happens before or inside the one commit of its source, so the wiki is either as it was or has
//! the whole compile of that source. A failed source stays pending and gets a failure record
//! (`meta/compile-failure/<key>`), which is not part of the wiki's content.
//!
//! The pipeline's parts, in the order a source goes through them: [`snapshot`] (what a source
//! compiles against), [`budget`] (chunk sizes, token budgets, learned reply lengths), [`plan`]
//! (everything decided before the model writes pages), [`batches`] (the integrate calls),
//! [`commit`] (the drafts finalized and written in one operation); [`claims`] holds the checks on
//! claims across sources and [`report`] what a compile answers.

mod batches;
mod budget;
mod claims;
mod commit;
mod plan;
mod report;
mod snapshot;

use std::collections::{BTreeSet, HashMap};

use futures::stream::{self, StreamExt};

use self::batches::{integrate_batch, integrate_batches, Written};
use self::budget::{chunk_claims_budget, extract_chunk_budget, Budget, MIN_LEARN_TOKENS};
use self::claims::{canonical_ids, claims_to_check};
use self::commit::Draft;
use self::plan::{Extracted, PlanInput};
pub(in crate::compile) use self::snapshot::Snapshot;
use super::extract::{
    chunk_text, images_cost, images_of_chunk, index_slice, ClaimRanker, ExtractInput, Extraction,
    ImageNote,
};
use super::integrate::IntegrateInput;
use super::model::CompileModel;
use super::prompt;
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::llm::Cancel;
use crate::model::{Claim, Page, Source, SourceStatus, TokenUsage};
use crate::storage::{Expect, Storage, Store};
use crate::wiki::{to_json, Wiki};

pub(crate) use self::budget::{reply_cap, reply_ratio_key};
pub use self::report::{
    CompileEstimate, CompileOptions, CompileReport, FailureRecord, ImagesReport, Progress,
    RejectReason, RejectedContradiction, Retried, RetryReason, SourceEstimate, SourceFailure,
    SourceReport, FAILURE_PREFIX, PROPOSAL_PREFIX,
};

/// How often a commit is retried when a page changed underneath it.
const MAX_COMMIT_ATTEMPTS: usize = 3;

/// The per-run context every step needs.
#[derive(Clone, Copy)]
struct Run<'a> {
    options: &'a CompileOptions,
    budget: &'a Budget,
    on_progress: &'a dyn Fn(&Progress),
    cancel: &'a Cancel,
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Sources a compile with `options` would compile, in compile (key) order.
    pub async fn sources_to_compile(&self, options: &CompileOptions) -> Result<Vec<Source>> {
        let mut list: Vec<Source> = self
            .sources()
            .await?
            .into_iter()
            .filter(|s| match &options.sources {
                // Keys compare in Unicode NFC, as they are stored.
                Some(keys) => keys
                    .iter()
                    .any(|k| crate::wiki::source_key(k) == crate::wiki::source_key(&s.key)),
                None => true,
            })
            .filter(|s| {
                options.force
                    || !matches!(&s.status, SourceStatus::Compiled { version, .. } if *version == s.version && !s.version.is_empty())
            })
            .collect();
        crate::util::sort_by(&mut list, &|a, b| a.key.cmp(&b.key));
        Ok(list)
    }

    /// Compiles every new or changed source (or the selected ones) into pages, one operation per
    /// source. Unchanged compiled sources cost no model call. A failing source is reported and
    /// left pending; the others go on. Cancellation stops after the current call with
    /// [`Error::Cancelled`], keeping the sources already committed.
    pub async fn compile<M: CompileModel>(
        &self,
        model: &M,
        options: &CompileOptions,
        on_progress: &dyn Fn(&Progress),
        cancel: &Cancel,
    ) -> Result<CompileReport> {
        let sources = self.sources_to_compile(options).await?;
        let budget = Budget {
            cap: options.token_budget,
            used: std::cell::Cell::new(0),
        };
        let mut report = CompileReport::default();
        let total = sources.len();
        let run = Run {
            options,
            budget: &budget,
            on_progress,
            cancel,
        };
        for (index, source) in sources.into_iter().enumerate() {
            if cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            on_progress(&Progress::Source {
                key: source.key.clone(),
                index,
                total,
            });
            // The cap is per operation: each source starts from zero.
            budget.used.set(0);
            let result = match self.over_budget(model, &source, options).await {
                Ok(Some(e)) => Err(e),
                Ok(None) => self.compile_source(model, &source, &run).await,
                Err(e) => Err(e),
            };
            match result {
                Ok(r) => {
                    on_progress(&Progress::Committed {
                        key: r.key.clone(),
                        op: r.op,
                    });
                    report.usage.add(&r.usage);
                    report.unverified += r.unverified;
                    report.compiled.push(r);
                }
                Err(Error::Cancelled) => return Err(Error::Cancelled),
                Err(e) => {
                    let failure = SourceFailure {
                        key: source.key.clone(),
                        code: e.code().to_string(),
                        message: e.to_string(),
                    };
                    on_progress(&Progress::Failed {
                        key: failure.key.clone(),
                        code: failure.code.clone(),
                        message: failure.message.clone(),
                    });
                    self.record_failure(&source, &e).await;
                    report.failed.push(failure);
                }
            }
        }
        Ok(report)
    }

    /// With a token budget: the [`Error::LlmBudgetExceeded`] a source is refused with before any
    /// call, when its estimated input alone ([`Wiki::estimate`]) is over the budget — a source
    /// that cannot fit (a 400 KB changelog under the default budget) would otherwise spend
    /// nearly the whole budget on every compile before failing. `None`: try it (a source whose
    /// estimate fits may still fail at the budget, as before).
    async fn over_budget<M: CompileModel>(
        &self,
        model: &M,
        source: &Source,
        options: &CompileOptions,
    ) -> Result<Option<Error>> {
        let Some(cap) = options.token_budget else {
            return Ok(None);
        };
        if model.is_extractive() {
            return Ok(None);
        }
        let name = model.name();
        let one = CompileOptions {
            sources: Some(vec![source.key.clone()]),
            force: true,
            ..options.clone()
        };
        let estimate = self.estimate_for(&one, Some(&name)).await?;
        let needed: u64 = estimate.sources.iter().map(|s| s.input).sum();
        Ok((needed > cap).then_some(Error::LlmBudgetExceeded {
            budget: cap,
            used: 0,
            needed,
        }))
    }

    async fn record_failure(&self, source: &Source, e: &Error) {
        let record = FailureRecord {
            version: source.version.clone(),
            code: e.code().to_string(),
            reason: e.to_string(),
            time: self.clock.now_ms(),
        };
        let mut b = crate::storage::Batch::new();
        b.put(
            Store::Meta,
            format!("{FAILURE_PREFIX}{}", source.key),
            to_json(&record),
            Expect::Any,
        );
        // Best effort: the failure itself is already reported to the caller.
        let _ = self.storage.commit(b).await;
    }

    async fn extract_source<M: CompileModel>(
        &self,
        model: &M,
        source: &Source,
        text: &str,
        images: &[ImageNote],
        snap: &mut Snapshot,
        run: &Run<'_>,
    ) -> Result<(Extraction, Vec<String>, TokenUsage)> {
        let Run {
            options,
            budget,
            on_progress,
            cancel,
        } = *run;
        let est = &options.estimator;
        let window = options.context_window.max(1024);
        let output = reply_cap(options);
        let index_budget = ((window as f64) * options.index_share.clamp(0.05, 0.5)) as u64;
        let pages: Vec<Page> = snap.pages.values().map(|(p, _)| p.clone()).collect();
        // The pages the source names; each chunk is then given the lines and claims of the
        // pages *it* names, so a chunk's prompt carries what concerns it and no more.
        let (slice, slice_keys) = index_slice(text, &pages, index_budget, est);
        let slice_set: BTreeSet<&String> = crate::util::btree_set(slice_keys.iter());
        let slice_pages: Vec<Page> = pages
            .iter()
            .filter(|p| slice_set.contains(&p.key))
            .cloned()
            .collect();
        // Other sources' claims on the pages the source names or is most like are candidates for
        // the contradiction check: a claim on another source's summary page is about the same
        // topic without sharing a page name.
        self.load_candidate_claims(snap, &source.key, text, &slice_keys)
            .await?;
        let canonical = canonical_ids(&snap.claims, &pages);
        let claims: Vec<Claim> = claims_to_check(&snap.claims, &canonical, &source.key)
            .cloned()
            .collect();
        let claims_cap = index_budget / 2;
        let ranker = ClaimRanker::new(&claims);
        let overhead = est.estimate(&prompt::extract_system())
            + est.estimate(&snap.schema_md)
            + est.estimate(&slice)
            + ranker.lines_cost_up_to(claims_cap, est)
            + images_cost(images, est)
            + 200;
        let static_budget = extract_chunk_budget(window, output, overhead, model.bounded_replies());
        // What this model's replies showed (in this connection, or kept from an earlier one):
        // no chunk longer than its replies can fit.
        let learned_key = reply_ratio_key(&model.name(), output);
        let bounded = model.bounded_replies();
        let budget_now = || {
            if bounded {
                self.learned_chunk_cap(&learned_key, output, static_budget)
            } else {
                static_budget
            }
        };
        let chunk_budget = budget_now();
        let mut queue: std::collections::VecDeque<(String, u8)> =
            chunk_text(text, chunk_budget, chunk_budget / 10, est)
                .into_iter()
                .map(|c| (c, 0))
                .collect();
        let mut parts = queue.len();
        let mut extraction = Extraction::default();
        let mut usage = TokenUsage::default();
        let mut i = 0;
        while let Some((chunk, depth)) = queue.pop_front() {
            if cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            // A reply seen since this chunk was cut may show it too long for this model.
            let cap = budget_now();
            if est.estimate(&chunk) > cap {
                let pieces = chunk_text(&chunk, cap, 0, est);
                if pieces.len() > 1 {
                    for p in pieces.into_iter().rev() {
                        queue.push_front((p, depth));
                    }
                    parts = i + queue.len();
                    continue;
                }
            }
            let (chunk_slice, _) = index_slice(&chunk, &slice_pages, index_budget, est);
            // Claims to check the chunk against: the existing claims most alike the chunk (a
            // later chunk says "it", not the name; another source's claim sits on its summary
            // page), in a budget that scales with the chunk.
            let claims_budget = chunk_claims_budget(est.estimate(&chunk), claims_cap);
            let existing = ranker.lines(&chunk, claims_budget, est);
            let input = ExtractInput {
                images: images_of_chunk(images, &chunk, text, i == 0),
                source_key: source.key.clone(),
                source_title: source.title.clone(),
                text: chunk,
                part: i + 1,
                parts,
                schema_md: snap.schema_md.clone(),
                index_slice: chunk_slice,
                existing_claims: existing,
            };
            budget.check(
                est.estimate(&prompt::extract_system())
                    + est.estimate(&prompt::extract_user(&input))
                    + output,
            )?;
            let (e, u) = match model.extract(&input, cancel).await {
                // The reply did not fit the output cap: ask again about half the text at a time
                // (a changed request, at most twice deeper; field case F03). Never parse a cut
                // reply. What it shows of the model's reply length is kept, so the rest of the
                // queue and later sources are cut to fit rather than paid for twice.
                Err(Error::LlmTruncated { .. }) if depth < 2 && est.estimate(&input.text) > 64 => {
                    let tokens = est.estimate(&input.text);
                    if tokens >= MIN_LEARN_TOKENS {
                        self.learn_reply_ratio(&learned_key, output as f64 / tokens as f64);
                    }
                    let half = (tokens / 2).max(32);
                    let pieces = chunk_text(&input.text, half, 0, est);
                    if pieces.len() > 1 {
                        for p in pieces.into_iter().rev() {
                            queue.push_front((p, depth + 1));
                        }
                        parts = i + queue.len();
                        continue;
                    }
                    return Err(Error::LlmTruncated {
                        reason: "length".into(),
                        max_tokens: Some(output as u32),
                    });
                }
                other => other?,
            };
            // Only a chunk near the size in force says how long full chunks' replies run: a
            // short one's reply is mostly its fixed part (summary, entities, JSON).
            let tokens = est.estimate(&input.text);
            if tokens >= MIN_LEARN_TOKENS.max(budget_now() / 2) && u.output > 0 {
                self.learn_reply_ratio(&learned_key, u.output as f64 / tokens as f64);
            }
            budget.spend(&u);
            usage.add(&u);
            extraction.merge(e);
            i += 1;
            on_progress(&Progress::Extracted {
                key: source.key.clone(),
                part: i,
                parts,
            });
        }
        Ok((extraction.normalized(), slice_keys, usage))
    }

    /// The described pictures `text` shows, as the extract calls are given them.
    pub(super) async fn described_images(&self, text: &str) -> Result<Vec<ImageNote>> {
        Ok(self
            .shown_assets(text, |a| a.description.is_some())
            .await?
            .into_iter()
            .filter_map(|a| {
                a.description.map(|d| ImageNote {
                    name: a.name,
                    description: d.text,
                })
            })
            .collect())
    }

    /// Compiles one source (see [`Wiki::compile`]).
    async fn compile_source<M: CompileModel>(
        &self,
        model: &M,
        source: &Source,
        run: &Run<'_>,
    ) -> Result<SourceReport> {
        let Run {
            options,
            on_progress,
            cancel,
            ..
        } = *run;
        let text = self.source_text(&source.version).await?;
        let mut snap = self.snapshot(&source.key).await?;
        self.load_source_claims(&mut snap, &source.key).await?;
        let images = self.described_images(&text).await?;
        let (extraction, slice_keys, mut usage) = self
            .extract_source(model, source, &text, &images, &mut snap, run)
            .await?;
        let extracted = Extracted {
            text,
            extraction,
            slice_keys,
            images,
        };
        let mut drafts: HashMap<String, Draft> = HashMap::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            // Re-read: pages may have changed during the model calls.
            let snap = self.compile_snapshot(source, &extracted).await?;
            let op = self.next_op_id().await?;
            // What the plan changes is known before the bodies are: a first plan on the
            // metadata says which pages to read (and which records its contradictions would
            // be), the second is made with their bodies.
            let mut snap = snap;
            let probe = plan::plan(
                &snap,
                &PlanInput {
                    source,
                    extracted: &extracted,
                    op,
                    now: self.clock.now_ms(),
                    source_page_base: "",
                    probe: true,
                },
            );
            for r in &probe.new_records {
                self.load_record(&mut snap, &r.id).await?;
            }
            let mut touched = probe.touched();
            touched.extend(source.summary_page.iter().cloned());
            self.load_pages(&mut snap, &touched).await?;
            let base = match source.summary_page.as_ref().and_then(|k| snap.pages.get(k)) {
                Some((page, _)) => self.human_paragraphs(&page.key, page).await?.join("\n\n"),
                None => String::new(),
            };
            let mut plan = plan::plan(
                &snap,
                &PlanInput {
                    source,
                    extracted: &extracted,
                    op,
                    now: self.clock.now_ms(),
                    source_page_base: &base,
                    probe: false,
                },
            );
            debug_assert!(plan
                .touched()
                .iter()
                .all(|k| snap.loaded.contains(k) || plan.created.contains(k)));
            // A page too long to rewrite within the reply cap is extended instead (append mode).
            for input in &mut plan.integrate {
                if options.estimator.estimate(&input.current_body) > options.max_output_tokens / 2 {
                    input.append = true;
                    input.current_body = super::integrate::outline(&input.current_body);
                }
            }
            // Integrate the pages whose input changed since the last attempt.
            let todo: Vec<(String, IntegrateInput, String)> = plan
                .integrate
                .iter()
                .map(|input| {
                    let cache_key = serde_json::to_string(input).expect("serialisable");
                    (input.key.clone(), input.clone(), cache_key)
                })
                .filter(|(_, _, ck)| !drafts.contains_key(ck))
                .collect();
            let total = todo.len();
            let done = std::cell::Cell::new(0usize);
            let parallelism = options.parallelism.clamp(1, 16);
            let on_done = |page: &str| {
                done.set(done.get() + 1);
                on_progress(&Progress::Integrated {
                    key: source.key.clone(),
                    page: page.to_string(),
                    done: done.get(),
                    total,
                });
            };
            let batches = integrate_batches(todo, options.max_output_tokens, &options.estimator);
            let results: Vec<Result<Written>> = stream::iter(batches.into_iter().map(|batch| {
                let on_done = &on_done;
                async move { integrate_batch(model, batch, run, on_done).await }
            }))
            .buffer_unordered(parallelism)
            .collect()
            .await;
            for r in results {
                let (written, u) = r?;
                usage.add(&u);
                drafts.extend(written);
            }
            if cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            match self
                .commit_plan(source, &snap, plan, &drafts, &usage, model)
                .await
            {
                Err(Error::Conflict { .. }) if attempt < MAX_COMMIT_ATTEMPTS => continue,
                other => return other,
            }
        }
    }
}
