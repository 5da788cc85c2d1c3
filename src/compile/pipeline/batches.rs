//! Integrate calls: the pages to write grouped into calls ([`integrate_batches`]: new pages share
//! a call, a page with a body gets its own), each call made ([`integrate_batch`]), and a page's
//! reply asked again when it was cut at the output limit ([`integrate_fitting`]).
//!
//! *Invariant:* every page of a batch gets a draft, from the shared call or one of its own.

use std::collections::BTreeSet;

use super::commit::Draft;
use super::Run;
use crate::compile::integrate::{IntegrateInput, PageDraft};
use crate::compile::model::CompileModel;
use crate::compile::prompt;
use crate::error::{Error, Result};
use crate::llm::Cancel;
use crate::model::TokenUsage;
use crate::text::TokenEstimator;

/// Most new pages one integrate call writes ([`integrate_batches`]).
pub(super) const MAX_PAGES_PER_CALL: usize = 8;

/// One page to integrate: (page key, input, draft cache key).
pub(super) type IntegrateJob = (String, IntegrateInput, String);

/// What one group of integrate calls wrote: (draft cache key, draft) per page, and the usage.
pub(super) type Written = (Vec<(String, Draft)>, TokenUsage);

/// Groups the pages to integrate into calls: new pages (no current body, something to write)
/// share a call, up to [`MAX_PAGES_PER_CALL`] and while their briefs, facts and relations come to
/// at most a third of the reply cap `output` (the pages the model writes from them must fit its
/// reply); every other page (one with a body: human paragraphs to keep, Decision 5, or a page
/// long enough for append mode) gets a call of its own. Each call then carries the system prompt,
/// the schema and the link targets once instead of once per page.
pub(super) fn integrate_batches(
    todo: Vec<IntegrateJob>,
    output: u64,
    est: &TokenEstimator,
) -> Vec<Vec<IntegrateJob>> {
    let mut out = Vec::new();
    let mut cur: Vec<IntegrateJob> = Vec::new();
    let mut cur_tokens = 0u64;
    for job in todo {
        let input = &job.1;
        let new_page = !input.append && input.current_body.trim().is_empty();
        if !new_page || nothing_to_write(input) {
            out.push(vec![job]);
            continue;
        }
        let tokens = est.estimate(&input.brief)
            + input
                .facts
                .iter()
                .map(|f| est.estimate(&f.text) + 8)
                .sum::<u64>()
            + input.relations.iter().map(|r| est.estimate(r)).sum::<u64>();
        if !cur.is_empty() && (cur.len() >= MAX_PAGES_PER_CALL || cur_tokens + tokens > output / 3)
        {
            out.push(std::mem::take(&mut cur));
            cur_tokens = 0;
        }
        cur_tokens += tokens;
        cur.push(job);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Writes one group of pages from [`integrate_batches`]: a group of one through
/// [`integrate_fitting`]; a larger group in one [`CompileModel::integrate_pages`] call, split in
/// halves while the reply does not fit the cap; a page the reply did not give goes through
/// [`integrate_fitting`] on its own. Every call is checked against the budget first. Returns
/// (draft cache key, draft) per page.
pub(super) async fn integrate_batch<M: CompileModel>(
    model: &M,
    batch: Vec<IntegrateJob>,
    run: &Run<'_>,
    on_done: &dyn Fn(&str),
) -> Result<Written> {
    let Run {
        options,
        budget,
        cancel,
        ..
    } = *run;
    let est = &options.estimator;
    let mut out = Vec::new();
    let mut usage = TokenUsage::default();
    let mut queue: std::collections::VecDeque<Vec<IntegrateJob>> = [batch].into();
    // The pages (draft cache keys) of a group whose reply was cut at the output limit.
    let mut cut: BTreeSet<String> = BTreeSet::new();
    while let Some(mut group) = queue.pop_front() {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        if group.len() == 1 {
            let (page, input, ck) = group.pop().expect("one");
            if !nothing_to_write(&input) {
                budget.check(
                    est.estimate(&prompt::integrate_system())
                        + est.estimate(&prompt::integrate_user(&input))
                        + options.max_output_tokens,
                )?;
            }
            let (draft, append, retried, u) = integrate_fitting(model, input, cancel).await?;
            budget.spend(&u);
            usage.add(&u);
            on_done(&page);
            let retried = retried || cut.contains(&ck);
            out.push((ck, (draft, append, retried)));
            continue;
        }
        let inputs: Vec<IntegrateInput> = group.iter().map(|(_, i, _)| i.clone()).collect();
        budget.check(
            est.estimate(&prompt::integrate_pages_system())
                + est.estimate(&prompt::integrate_pages_user(&inputs))
                + options.max_output_tokens,
        )?;
        match model.integrate_pages(&inputs, cancel).await {
            Ok((drafts, u)) => {
                budget.spend(&u);
                usage.add(&u);
                if drafts.len() != group.len() {
                    return Err(Error::LlmBadOutput(format!(
                        "{} page drafts for {} pages",
                        drafts.len(),
                        group.len()
                    )));
                }
                for ((page, input, ck), draft) in group.into_iter().zip(drafts) {
                    match draft {
                        Some(draft) => {
                            on_done(&page);
                            let retried = cut.contains(&ck);
                            out.push((ck, (draft, false, retried)));
                        }
                        // Left out (or not its own text): a call of its own, budget checked.
                        None => queue.push_back(vec![(page, input, ck)]),
                    }
                }
            }
            // The pages did not fit one reply: half of them at a time (never parse a cut reply).
            Err(Error::LlmTruncated { .. }) => {
                cut.extend(group.iter().map(|(_, _, ck)| ck.clone()));
                let second = group.split_off(group.len() / 2);
                queue.push_front(second);
                queue.push_front(group);
            }
            Err(e) => return Err(e),
        }
    }
    Ok((out, usage))
}

/// One integrate call that fits the reply cap: when the reply is cut off (F03), ask again in append
/// mode with half the facts (the others are listed by the app under `## Facts`), at most twice.
/// Returns the draft, whether it is to be appended, whether a reply was cut and asked again,
/// and the usage of every call.
pub(super) async fn integrate_fitting<M: CompileModel>(
    model: &M,
    mut input: IntegrateInput,
    cancel: &Cancel,
) -> Result<(PageDraft, bool, bool, TokenUsage)> {
    let mut usage = TokenUsage::default();
    if nothing_to_write(&input) {
        // A new page named by the source with nothing said about it: a model could only invent
        // its body. The page keeps an empty body (the app adds its sections) and no call is paid.
        return Ok((PageDraft::default(), false, false, usage));
    }
    for attempt in 0..3 {
        match model.integrate(&input, cancel).await {
            Ok((draft, u)) => {
                usage.add(&u);
                return Ok((draft, input.append, attempt > 0, usage));
            }
            Err(Error::LlmTruncated { .. }) if attempt < 2 => {
                if !input.append {
                    input.append = true;
                    input.current_body = crate::compile::integrate::outline(&input.current_body);
                }
                let keep = (input.facts.len() / 2).max(1);
                input.facts.truncate(keep);
            }
            Err(e) => return Err(e),
        }
    }
    unreachable!("the loop returns on its last attempt")
}

/// Whether an integrate call has nothing to work from: no current body (not append mode, where
/// the body shown is only the page's headings), brief, facts, retracted facts or relations.
pub(super) fn nothing_to_write(input: &IntegrateInput) -> bool {
    !input.append
        && input.current_body.trim().is_empty()
        && input.brief.trim().is_empty()
        && input.facts.is_empty()
        && input.retracted.is_empty()
        && input.relations.is_empty()
}
