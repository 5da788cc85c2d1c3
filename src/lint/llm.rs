//! LLM lint checks (opt-in, with a token estimate first): contradictions between pages that share
//! entities, claims superseded by newer sources, data gaps, and questions and sources worth
//! adding. They run with the lint model (`Purpose::Lint`, which may differ from the compile model,
//! so the wiki is not graded only by the model that wrote it).
//!
//! Pages are checked in *groups*: an entity or concept page with up to three pages that link to
//! it (they share that entity). One structured call (task [`LINT_TASK`]) per group gets the
//! group's pages — title, claims with their ids, sources and dates, and the start of the body — as
//! data blocks. A reply that is not valid JSON for the schema gets one repair round trip
//! (`chat_json`); a reply that names a claim or page not in its group, or a contradiction within
//! one page, is rejected whole and reported — findings are never taken from part of a reply.
//!
//! The findings of the last run are kept in `meta/lint-llm` (a cache, not wiki content: neither
//! exported nor an operation) and listed by every [`Wiki::lint`] while the claims they name still
//! exist, so their fixes apply like any other: a possible contradiction's fix opens a ledger
//! record (and its callouts) in one operation.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{finding, Finding, FindingKind, Fix, Severity};
use crate::clock::{format_iso8601, Clock};
use crate::error::{Error, Result};
use crate::llm::prompt::{source_block, DATA_NOTICE};
use crate::llm::provider::estimate_input;
use crate::llm::structured::{chat_json, Budgeted};
use crate::llm::{Cancel, ChatRequest, JsonSchema, Llm, Message, Purpose};
use crate::markdown::resolve::LinkGraph;
use crate::model::{Claim, Page, PageKind, Source, TokenUsage};
use crate::storage::{Batch, Expect, Storage, Store};
use crate::text::TokenEstimator;
use crate::wiki::{to_json, Wiki};

/// The structured-output task name of a lint check.
pub const LINT_TASK: &str = "lint_check";

pub use crate::records::META_LINT_LLM;

/// Options of the LLM lint checks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct LlmLintOptions {
    /// Most page groups checked, one call each (the largest groups first). Range 1–500; default 20.
    pub max_groups: u32,
    /// Most characters of each page body sent (claims are always sent). Range 200–20 000;
    /// default 1 500.
    pub excerpt_chars: u32,
    /// Output cap of one call, in tokens. Range 128–8 192; default 1 024.
    pub max_output_tokens: u32,
}

impl Default for LlmLintOptions {
    fn default() -> Self {
        LlmLintOptions {
            max_groups: 20,
            excerpt_chars: 1500,
            max_output_tokens: 1024,
        }
    }
}

impl LlmLintOptions {
    fn clamped(self) -> Self {
        LlmLintOptions {
            max_groups: self.max_groups.clamp(1, 500),
            excerpt_chars: self.excerpt_chars.clamp(200, 20_000),
            max_output_tokens: self.max_output_tokens.clamp(128, 8192),
        }
    }
}

/// What the LLM checks would cost, before any call (JS: `lintEstimate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct LlmLintEstimate {
    /// The page groups that would be checked (page keys), one call each.
    pub groups: Vec<Vec<String>>,
    /// Estimated input tokens (Decision 12).
    pub input: u64,
    /// Output tokens at most (calls × output cap).
    pub output: u64,
    /// `input + output`.
    pub total: u64,
}

/// A reply that was not used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct RejectedReply {
    /// The group's pages.
    pub pages: Vec<String>,
    /// Why (the first problem found).
    pub reason: String,
}

/// What the LLM checks found (JS: `lint({ llm: true })` adds these findings to the list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct LlmLintReport {
    /// Findings of kinds `possible-contradiction`, `superseded`, `data-gap`, `suggested-question`.
    pub findings: Vec<Finding>,
    /// Groups checked.
    pub checked: Vec<Vec<String>>,
    /// Replies rejected (nothing was taken from them).
    pub rejected: Vec<RejectedReply>,
    /// Token usage of every call.
    pub usage: TokenUsage,
}

/// The JSON Schema of a lint check's reply.
pub fn lint_schema() -> Value {
    let obj = |required: &[&str], props: Value| json!({ "type": "object", "required": required, "properties": props });
    let list = |item: Value| json!({ "type": "array", "items": item });
    let s = json!({ "type": "string" });
    obj(
        &["contradictions", "superseded", "gaps", "questions"],
        json!({
            "contradictions": list(obj(&["claims", "description"], json!({
                "claims": list(s.clone()), "description": s.clone() }))),
            "superseded": list(obj(&["claim", "by", "reason"], json!({
                "claim": s.clone(), "by": s.clone(), "reason": s.clone() }))),
            "gaps": list(obj(&["page", "description"], json!({
                "page": s.clone(), "description": s.clone() }))),
            "questions": list(obj(&["question"], json!({
                "question": s.clone(), "sources": list(s.clone()) }))),
        }),
    )
}

/// Page groups sharing an entity: each entity/concept/comparison/overview page with up to three
/// such pages linking to it, deduplicated, largest first, then by key.
fn groups(pages: &[Page], max: usize) -> Vec<Vec<String>> {
    let content = |p: &Page| !matches!(p.kind, PageKind::Source | PageKind::Analysis);
    let graph = LinkGraph::build(pages);
    let kinds: BTreeMap<&str, bool> = pages.iter().map(|p| (p.key.as_str(), content(p))).collect();
    let mut seen: BTreeSet<Vec<String>> = BTreeSet::new();
    for p in pages.iter().filter(|p| content(p)) {
        let linkers: Vec<String> = graph
            .backlinks
            .get(&p.key)
            .map(|b| {
                b.iter()
                    .filter(|k| kinds.get(k.as_str()) == Some(&true) && **k != p.key)
                    .take(3)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if linkers.is_empty() {
            continue;
        }
        let mut g = vec![p.key.clone()];
        g.extend(linkers);
        g.sort();
        g.dedup();
        seen.insert(g);
    }
    let mut out: Vec<Vec<String>> = seen.into_iter().collect();
    crate::util::sort_by(&mut out, &|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    out.truncate(max);
    out
}

/// The text of one page in a lint prompt: title, claims (`[id] text — source, date`), body start.
fn page_text(
    p: &Page,
    claims: &[&Claim],
    sources: &BTreeMap<String, Source>,
    excerpt: usize,
) -> String {
    let mut s = format!("# {}\n\nClaims:\n", p.title);
    for c in claims {
        let when = sources
            .get(&c.source_key)
            .map(|s| format_iso8601(s.captured_at.unwrap_or(s.added_at)))
            .unwrap_or_default();
        s.push_str(&format!(
            "- [{}] {} (source {}, {when})\n",
            c.id, c.text, c.source_key
        ));
    }
    let body: String = p.body.chars().take(excerpt).collect();
    s.push_str("\nPage text:\n");
    s.push_str(&body);
    s
}

fn request(group_text: String, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        purpose: Purpose::Lint,
        system: format!(
            "You review a personal wiki for problems a careful editor would fix. {DATA_NOTICE}"
        ),
        messages: vec![Message::user(format!(
                "{group_text}\n\nThe pages above share an entity. Report, using only the claim ids \
                 (in [brackets]) and page keys (the block keys) shown above:\n\
                 - contradictions: claims of different pages that cannot both be true;\n\
                 - superseded: a claim a claim from a newer source replaces (`claim` is the old one, `by` the new one);\n\
                 - gaps: what a page should say but does not;\n\
                 - questions: questions worth asking next, with sources worth adding.\n\
                 Empty lists when there is nothing to report."
            ))],
        json: Some(JsonSchema {
            name: LINT_TASK.into(),
            schema: lint_schema(),
        }),
        max_tokens: Some(max_tokens),
        temperature: Some(0.0),
    }
}

/// The findings a valid reply gives, or the reason it is rejected whole.
fn findings_of(
    reply: &Value,
    group: &[String],
    claims: &BTreeMap<String, Claim>,
) -> std::result::Result<Vec<Finding>, String> {
    let in_group = |id: &str| claims.get(id).filter(|c| group.contains(&c.page));
    let text = |v: &Value, k: &str| -> std::result::Result<String, String> {
        let s = v.get(k).and_then(Value::as_str).unwrap_or("").trim();
        if s.is_empty() {
            Err(format!("empty {k}"))
        } else {
            Ok(s.to_string())
        }
    };
    let items = |k: &str| {
        reply
            .get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for c in items("contradictions") {
        let ids: Vec<String> = c
            .get("claims")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut pages = BTreeSet::new();
        for id in &ids {
            let claim = in_group(id).ok_or_else(|| format!("unknown claim {id:?}"))?;
            pages.insert(claim.page.clone());
        }
        if pages.len() < 2 {
            return Err("a contradiction needs claims of two pages".into());
        }
        let description = text(&c, "description")?;
        let pages: Vec<String> = pages.into_iter().collect();
        let mut ids = ids;
        ids.sort();
        ids.dedup();
        let first = pages[0].clone();
        out.push(
            finding(
                FindingKind::PossibleContradiction,
                Severity::Warning,
                &first,
                pages.clone(),
                format!("possible contradiction ({}): {description}", ids.join(", ")),
                Some(Fix::RecordContradiction {
                    pages,
                    claims: ids.clone(),
                    description,
                }),
            )
            .naming(ids),
        );
    }
    for s in items("superseded") {
        let (old, new) = (text(&s, "claim")?, text(&s, "by")?);
        let o = in_group(&old).ok_or_else(|| format!("unknown claim {old:?}"))?;
        let n = in_group(&new).ok_or_else(|| format!("unknown claim {new:?}"))?;
        if o.id == n.id || o.source_key == n.source_key {
            return Err(format!(
                "{old} cannot be superseded by a claim of its own source"
            ));
        }
        out.push(
            finding(
                FindingKind::Superseded,
                Severity::Warning,
                &o.page,
                vec![n.page.clone()],
                format!(
                    "claim {old} (\"{}\", source {}) may be superseded by {new} (source {}): {}",
                    o.text,
                    o.source_key,
                    n.source_key,
                    text(&s, "reason")?
                ),
                None,
            )
            .naming(vec![o.id.clone(), n.id.clone()]),
        );
    }
    for g in items("gaps") {
        let page = text(&g, "page")?;
        if !group.contains(&page) {
            return Err(format!("unknown page {page:?}"));
        }
        out.push(finding(
            FindingKind::DataGap,
            Severity::Info,
            &page,
            vec![],
            format!("gap: {}", text(&g, "description")?),
            None,
        ));
    }
    for q in items("questions") {
        let question = text(&q, "question")?;
        let sources: Vec<String> = q
            .get("sources")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        out.push(finding(
            FindingKind::SuggestedQuestion,
            Severity::Info,
            &group[0],
            group[1..].to_vec(),
            if sources.is_empty() {
                format!("worth asking: {question}")
            } else {
                format!(
                    "worth asking: {question} (sources to add: {})",
                    sources.join("; ")
                )
            },
            None,
        ));
    }
    Ok(out)
}

impl<S: Storage, C: Clock> Wiki<S, C> {
    /// The groups and prompts the LLM checks would send.
    async fn lint_prompts(
        &self,
        options: &LlmLintOptions,
    ) -> Result<Vec<(Vec<String>, ChatRequest)>> {
        let options = options.clamped();
        let pages = self.all_pages().await?;
        let claims: Vec<Claim> = self.read_all(Store::Claims, "").await?;
        let sources: BTreeMap<String, Source> = self
            .read_all::<Source>(Store::Sources, "")
            .await?
            .into_iter()
            .map(|s| (s.key.clone(), s))
            .collect();
        let by_key: BTreeMap<&str, &Page> = pages.iter().map(|p| (p.key.as_str(), p)).collect();
        let mut out = Vec::new();
        for g in groups(&pages, options.max_groups as usize) {
            let mut text = String::new();
            for k in &g {
                let p = by_key[k.as_str()];
                let mine: Vec<&Claim> = claims.iter().filter(|c| c.page == *k).collect();
                text.push_str(&source_block(
                    k,
                    &page_text(p, &mine, &sources, options.excerpt_chars as usize),
                ));
                text.push('\n');
            }
            out.push((g, request(text, options.max_output_tokens)));
        }
        Ok(out)
    }

    /// What the LLM checks would cost (Decision 12 estimate), without any call.
    pub async fn lint_llm_estimate(
        &self,
        options: &LlmLintOptions,
        estimator: &TokenEstimator,
    ) -> Result<LlmLintEstimate> {
        let prompts = self.lint_prompts(options).await?;
        let input = prompts
            .iter()
            .map(|(_, r)| estimate_input(r, estimator))
            .sum();
        let output = prompts
            .iter()
            .map(|(_, r)| u64::from(r.max_tokens.unwrap_or(0)))
            .sum();
        Ok(LlmLintEstimate {
            groups: prompts.into_iter().map(|(g, _)| g).collect(),
            input,
            output,
            total: input + output,
        })
    }

    /// Runs the LLM checks with `llm` (wrap it in [`Budgeted`] for the lint budget) and keeps
    /// their findings for [`Wiki::lint`] and [`Wiki::apply_fix`]. A failed call (budget,
    /// endpoint, cancel) fails the run and keeps the previous findings; a reply invalid after its
    /// repair, or naming claims or pages outside its group, is listed in `rejected`.
    ///
    /// Errors: every LLM error but [`Error::LlmBadOutput`] (which rejects that group only);
    /// storage errors.
    pub async fn lint_llm<L: Llm>(
        &self,
        llm: &L,
        options: &LlmLintOptions,
        cancel: &Cancel,
    ) -> Result<LlmLintReport> {
        let prompts = self.lint_prompts(options).await?;
        let claims: BTreeMap<String, Claim> = self.read_map(Store::Claims).await?;
        let mut report = LlmLintReport {
            findings: vec![],
            checked: vec![],
            rejected: vec![],
            usage: TokenUsage::default(),
        };
        for (group, req) in prompts {
            if cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            match chat_json(llm, &req, cancel).await {
                Ok(reply) => {
                    report.usage.add(&reply.usage);
                    match findings_of(&reply.value, &group, &claims) {
                        Ok(f) => report.findings.extend(f),
                        Err(reason) => report.rejected.push(RejectedReply {
                            pages: group.clone(),
                            reason,
                        }),
                    }
                }
                Err(Error::LlmBadOutput(reason)) => report.rejected.push(RejectedReply {
                    pages: group.clone(),
                    reason,
                }),
                Err(e) => return Err(e),
            }
            report.checked.push(group);
        }
        let mut seen = BTreeSet::new();
        report.findings.retain(|f| seen.insert(f.id.clone()));
        let mut b = Batch::new();
        b.put(
            Store::Meta,
            META_LINT_LLM,
            to_json(&report.findings),
            Expect::Any,
        );
        self.storage.commit(b).await?;
        Ok(report)
    }

    /// [`Wiki::lint_llm`] with the configured endpoint over `transport`: the lint model, its
    /// output cap and token budget.
    ///
    /// Errors: [`Error::LlmConfig`] when no endpoint is configured (provider `offline`).
    pub async fn lint_llm_configured<T: crate::llm::transport::Transport>(
        &self,
        transport: T,
        options: &LlmLintOptions,
        cancel: &Cancel,
    ) -> Result<LlmLintReport> {
        use crate::llm::config::Provider;
        let config = self.llm_config().await?;
        if config.provider == Provider::Offline {
            return Err(Error::LlmConfig(
                "the LLM lint checks need an endpoint: configure one in the settings".into(),
            ));
        }
        let llm = self.endpoint_llm(config.clone(), transport).await?;
        let budgeted = Budgeted::new(&llm, &config, Purpose::Lint);
        let options = LlmLintOptions {
            max_output_tokens: options
                .max_output_tokens
                .min(config.resolve(Purpose::Lint).max_output_tokens),
            ..*options
        };
        let report = self.lint_llm(&budgeted, &options, cancel).await;
        let _ = self.save_llm_learned(llm.learned()).await;
        report
    }

    /// The kept findings of the last LLM run whose claims and pages still exist.
    pub(crate) async fn kept_llm_findings(&self, pages: &[Page]) -> Result<Vec<Finding>> {
        let Some((kept, _)) = self
            .read::<Vec<Finding>>(Store::Meta, META_LINT_LLM)
            .await?
        else {
            return Ok(vec![]);
        };
        let keys: BTreeSet<&str> = pages.iter().map(|p| p.key.as_str()).collect();
        let mut out = Vec::new();
        for f in kept {
            let pages_exist = (f.page.is_empty() || keys.contains(f.page.as_str()))
                && f.related.iter().all(|k| keys.contains(k.as_str()));
            // A finding about a claim that is gone (its source removed, its page recompiled)
            // is stale.
            let mut claims_exist = true;
            for id in &f.claims {
                claims_exist &= self.storage.get(Store::Claims, id).await?.is_some();
            }
            // A recorded contradiction is in the ledger now (and lint lists it from there).
            if let Some(Fix::RecordContradiction { claims, .. }) = &f.fix {
                let id = crate::records::contradiction_id(claims);
                claims_exist &= self.storage.get(Store::Ledger, &id).await?.is_none();
                for id in claims {
                    claims_exist &= self.storage.get(Store::Claims, id).await?.is_some();
                }
            }
            if pages_exist && claims_exist {
                out.push(f);
            }
        }
        Ok(out)
    }
}

/// The scripted endpoint's lint check (Decision 14), derived from the request's page blocks:
/// two claims of different pages whose texts differ only in their digits contradict each other,
/// and the one from the older source is superseded by the newer; a page without claims is a gap;
/// the first page's title makes the question. Test support (feature `test-support`).
#[cfg(feature = "test-support")]
pub fn scripted_reply(blocks: &[crate::llm::prompt::SourceBlock]) -> Value {
    struct C {
        id: String,
        page: String,
        text: String,
        source: String,
        when: String,
    }
    let mut claims: Vec<C> = Vec::new();
    let mut gaps = Vec::new();
    for b in blocks {
        let mut any = false;
        for line in b.text.lines() {
            let Some(rest) = line.strip_prefix("- [") else {
                continue;
            };
            let Some((id, rest)) = rest.split_once("] ") else {
                continue;
            };
            let Some((text, meta)) = rest.rsplit_once(" (source ") else {
                continue;
            };
            let (source, when) = meta
                .trim_end_matches(')')
                .rsplit_once(", ")
                .unwrap_or((meta, ""));
            any = true;
            claims.push(C {
                id: id.into(),
                page: b.key.clone(),
                text: text.into(),
                source: source.into(),
                when: when.into(),
            });
        }
        if !any {
            gaps.push(json!({ "page": b.key, "description": "it states nothing with a source" }));
        }
    }
    let skeleton = |t: &str| -> String {
        t.to_lowercase()
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect()
    };
    let (mut contradictions, mut superseded) = (Vec::new(), Vec::new());
    for (i, a) in claims.iter().enumerate() {
        for b in &claims[i + 1..] {
            if a.page == b.page || a.text == b.text || skeleton(&a.text) != skeleton(&b.text) {
                continue;
            }
            contradictions.push(json!({
                "claims": [a.id, b.id],
                "description": format!("\"{}\" against \"{}\"", a.text, b.text),
            }));
            if a.source != b.source && a.when != b.when {
                let (old, new) = if a.when < b.when { (a, b) } else { (b, a) };
                superseded.push(json!({
                    "claim": old.id, "by": new.id,
                    "reason": format!("{} is newer than {}", new.source, old.source),
                }));
            }
        }
    }
    let questions: Vec<Value> = blocks
        .first()
        .and_then(|b| b.text.lines().next())
        .and_then(|l| l.strip_prefix("# "))
        .map(|title| {
            vec![json!({ "question": format!("What else is known about {title}?"), "sources": [] })]
        })
        .unwrap_or_default();
    json!({
        "contradictions": contradictions,
        "superseded": superseded,
        "gaps": gaps,
        "questions": questions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(id: &str, page: &str, source: &str) -> (String, Claim) {
        (
            id.into(),
            Claim {
                id: id.into(),
                page: page.into(),
                text: format!("text of {id}"),
                source_key: source.into(),
                source_version: "v".into(),
                quote: "q".into(),
                verified: true,
                stance: Default::default(),
                from_description: None,
            },
        )
    }

    #[test]
    fn a_reply_naming_anything_outside_its_group_is_rejected_whole() {
        let claims: BTreeMap<String, Claim> = [
            claim("c1", "A", "s1"),
            claim("c2", "B", "s2"),
            claim("c3", "Elsewhere", "s3"),
        ]
        .into_iter()
        .collect();
        let group = vec!["A".to_string(), "B".to_string()];
        let good = json!({
            "contradictions": [{"claims": ["c1", "c2"], "description": "years differ"}],
            "superseded": [{"claim": "c1", "by": "c2", "reason": "newer"}],
            "gaps": [{"page": "A", "description": "no founding date"}],
            "questions": [{"question": "Who founded A?", "sources": ["A's website"]}]
        });
        let f = findings_of(&good, &group, &claims).unwrap();
        let kinds: Vec<FindingKind> = f.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            vec![
                FindingKind::PossibleContradiction,
                FindingKind::Superseded,
                FindingKind::DataGap,
                FindingKind::SuggestedQuestion
            ]
        );
        for bad in [
            json!({"contradictions": [{"claims": ["c1", "c3"], "description": "x"}],
                   "superseded": [], "gaps": [], "questions": []}),
            json!({"contradictions": [{"claims": ["c1"], "description": "x"}],
                   "superseded": [], "gaps": [], "questions": []}),
            json!({"contradictions": [], "superseded": [{"claim": "c1", "by": "c1", "reason": "r"}],
                   "gaps": [], "questions": []}),
            json!({"contradictions": [], "superseded": [],
                   "gaps": [{"page": "Elsewhere", "description": "d"}], "questions": []}),
            json!({"contradictions": [{"claims": ["c1", "c2"], "description": " "}],
                   "superseded": [], "gaps": [], "questions": []}),
        ] {
            assert!(findings_of(&bad, &group, &claims).is_err(), "{bad}");
        }
    }
}
