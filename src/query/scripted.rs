//! The scripted endpoint's `route` task (Decision 14): the index lines in the request whose page
//! names share the most words with the question, derived from the request alone.

use crate::llm::prompt::source_blocks;
use crate::llm::{ChatRequest, Role};
use crate::markdown::keys::match_key;

/// Words of the question that can name a page: Latin words of 3+ letters (folded), CJK runs.
fn question_terms(q: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in q.split(|c: char| !c.is_alphanumeric()) {
        let k = match_key(w);
        if k.chars().count() >= 3 || k.chars().any(crate::text::is_cjk) && k.chars().count() >= 2 {
            out.push(k.trim_end_matches('s').to_string());
        }
    }
    out
}

/// The reply to a `route` call: `{"pages": [...], "reason": "..."}`.
pub fn route_reply(request: &ChatRequest) -> serde_json::Value {
    let user = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_str());
    let index = source_blocks(user)
        .into_iter()
        .find(|b| b.key == "index.md")
        .map(|b| b.text)
        .unwrap_or_default();
    let question = user.rsplit(": ").next().unwrap_or("");
    let terms = question_terms(question);
    let mut scored: Vec<(usize, String)> = index
        .lines()
        .filter_map(|l| {
            let inner = l.trim().strip_prefix("- [[")?;
            let (link, rest) = inner.split_once("]]")?;
            let key = link.split('|').next()?.to_string();
            let folded = match_key(&format!("{link} {rest}"));
            let score = terms.iter().filter(|t| folded.contains(t.as_str())).count();
            (score > 0).then_some((score, key))
        })
        .collect();
    crate::util::sort_by(&mut scored, &|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let pages: Vec<String> = scored.into_iter().take(5).map(|(_, k)| k).collect();
    serde_json::json!({"pages": pages, "reason": "index lines that name words of the question"})
}
