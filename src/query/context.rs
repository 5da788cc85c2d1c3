//! The answer's context, step 2 of [`Wiki::ask`]: the passages of the routed and hopped pages
//! that best match the question ([`passages`]), within the answer budget and the room the
//! context window leaves. *Invariant:* the answer request never exceeds the context window, and
//! every routed page with text keeps its best passage that fits.

use std::collections::BTreeMap;

use crate::clock::Clock;
use crate::error::Result;
use crate::model::Page;
use crate::storage::{Storage, Store};
use crate::wiki::Wiki;

use super::{passages, AskBudget, AskOptions, ANSWER_SYSTEM};

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// What the answer call is given, as (key, title, text) per page in routed-then-hopped order:
    /// each page's chosen passages ([`passages::render`]), or a routed page without text by its
    /// title and lead alone. Empty when nothing is left to answer from.
    ///
    /// Errors: storage errors reading the pages.
    pub(super) async fn answer_context(
        &self,
        question: &str,
        options: &AskOptions,
        budget: AskBudget,
        routed: &[String],
        hopped: &[String],
    ) -> Result<Vec<(String, String, String)>> {
        let est = budget.estimator;
        let overhead = est.estimate(ANSWER_SYSTEM)
            + options
                .history
                .iter()
                .map(|t| est.estimate(&t.question) + est.estimate(&t.answer))
                .sum::<u64>()
            + est.estimate(question)
            + 200;
        let room = budget
            .context_window
            .saturating_sub(budget.max_output_tokens + overhead);
        let mut answered: BTreeMap<String, Page> = BTreeMap::new();
        for k in routed.iter().chain(hopped) {
            if let Some((p, _)) = self.read::<Page>(Store::Pages, k).await? {
                answered.insert(k.clone(), p);
            }
        }
        let chosen_pages: Vec<passages::PageText> = routed
            .iter()
            .map(|k| (k, true))
            .chain(hopped.iter().map(|k| (k, false)))
            .filter_map(|(k, required)| {
                let p = answered.get(k.as_str())?;
                Some(passages::PageText {
                    key: p.key.clone(),
                    title: p.title.clone(),
                    aliases: p.aliases.clone(),
                    lead: p.summary.clone(),
                    passages: passages::split(
                        &crate::markdown::plain::without_footnotes(&p.body),
                        &est,
                    ),
                    required,
                })
            })
            .collect();
        let answer_budget = options.answer_budget.clamp(200, 100_000);
        // A follow-up ("where are they based?") is ranked with the question before it.
        let rank_query = match options.history.last() {
            Some(t) => format!("{} {question}", t.question),
            None => question.to_string(),
        };
        let picks = passages::select(&rank_query, &chosen_pages, answer_budget, room, &est);
        let mut given: Vec<(String, String, String)> = Vec::new();
        for (p, picked) in chosen_pages.iter().zip(&picks) {
            // A routed page without text (an empty body) is still shown by its title and lead.
            if !picked.is_empty() || (p.required && p.passages.is_empty()) {
                given.push((p.key.clone(), p.title.clone(), passages::render(p, picked)));
            }
        }
        Ok(given)
    }
}
