//! Write-back: an answer saved as an `analysis` page citing the pages it rests on, one
//! [`OperationKind::WriteBack`] operation. *Invariant:* an answer that cites no page and no
//! source passage of the wiki is never saved ([`Error::Ungrounded`]).

use std::collections::BTreeSet;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::model::{Author, OperationKind, Page, PageKind, Revision};
use crate::storage::{Expect, Storage, Store};
use crate::wiki::{revision_key, to_json, Wiki};

use super::Answer;

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// Saves an answer as an `analysis` page: the question as title, the answer as body (its
    /// source-passage footnotes included) with a `## Sources` list of the cited pages, `sources`
    /// the union of theirs and of the cited passages' sources. One
    /// [`OperationKind::WriteBack`] operation (index.md, log.md and the search index with it).
    ///
    /// Errors: [`Error::Ungrounded`] for an answer that rests on no page (`grounded: false`,
    /// declined, or citing no page).
    pub async fn write_back(&self, question: &str, answer: &Answer) -> Result<Page> {
        if answer.declined
            || !answer.grounded
            || (answer.citations.is_empty() && answer.source_citations.is_empty())
        {
            return Err(Error::Ungrounded(
                "an answer that cites no page or source of the wiki is not saved to it".into(),
            ));
        }
        let table = self.page_table().await?;
        let title: String = question
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(120)
            .collect();
        let taken: BTreeSet<String> = table.taken_keys();
        let key = crate::markdown::keys::readable_unique_key(&title, "analysis", &taken);
        let now = self.clock.now_ms();
        let mut body = answer.answer.trim().to_string();
        if !answer.citations.is_empty() {
            body.push_str("\n\n## Sources\n\n");
        }
        let mut sources: Vec<String> = Vec::new();
        for c in &answer.citations {
            if let Some(p) = table.get(c) {
                body.push_str(&format!(
                    "- {}\n",
                    crate::markdown::wikilinks::link_to(&p.key, &p.title)
                ));
                sources.extend(p.sources.iter().cloned());
            }
        }
        // Source passages are cited by the footnotes the answer ends with (Decision 3's form),
        // which the page keeps; their sources are the page's sources too.
        sources.extend(answer.source_citations.iter().map(|c| c.source.clone()));
        crate::util::sort_dedup(&mut sources);
        let revision = self.next_revision_number(&key).await?;
        let page = Page {
            key: key.clone(),
            title: title.clone(),
            kind: PageKind::Analysis,
            summary: answer
                .answer
                .lines()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.chars().take(160).collect())
                .unwrap_or_default(),
            aliases: vec![],
            tags: if answer.extractive {
                vec![crate::extractive::OFFLINE.into()]
            } else {
                vec![]
            },
            sources,
            created: now,
            updated: now,
            body,
            revision,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        };
        let mut ob = self
            .begin(OperationKind::WriteBack, format!("saved answer: {title}"))
            .await?;
        ob.op.pages.push(key.clone());
        ob.op.usage = answer.usage;
        ob.batch
            .put(Store::Pages, key.clone(), to_json(&page), Expect::Absent);
        let rev = Revision {
            page: key.clone(),
            number: revision,
            author: Author::Llm,
            op: ob.op.id,
            time: now,
            page_state: Some(page.clone()),
        };
        ob.batch.put(
            Store::Revisions,
            revision_key(&key, revision),
            to_json(&rev),
            Expect::Absent,
        );
        self.finish(ob).await?;
        Ok(page)
    }
}
