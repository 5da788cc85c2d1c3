//! Scripted replies for the compile prompts (Decision 14), used by the scripted test endpoint.
//!
//! Every reply is derived from the request: entities from the source's headings, claims and quotes
//! copied verbatim from its sentences, contradictions from existing claims that differ from a new
//! sentence only in their numbers, page bodies from the page, facts and link targets in the prompt.
//! Nothing is canned per test input. For tests only: the demo never uses it.

use super::prompt::{attr_value, block, blocks, unescape_block};
use super::resolve::match_key;

/// Headings that name a document section, not a topic; never turned into entities.
const GENERIC_HEADINGS: &[&str] = &[
    "summary",
    "introduction",
    "conclusion",
    "overview",
    "references",
    "notes",
    "see also",
];

fn strip_md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if !matches!(c, '*' | '`' | '_') {
            out.push(c);
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Sentences of a paragraph, kept verbatim (terminator included).
fn sentences(p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = p.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        cur.push(c);
        let end = matches!(c, '。' | '！' | '？')
            || (matches!(c, '.' | '!' | '?') && chars.get(i + 1).is_none_or(|n| n.is_whitespace()));
        if end {
            let s = cur.trim().to_string();
            if s.chars().count() > 3 {
                out.push(s);
            }
            cur.clear();
        }
    }
    let s = cur.trim().to_string();
    if s.chars().count() > 3 {
        out.push(s);
    }
    out
}

struct Section {
    heading: Option<String>,
    paragraphs: Vec<String>,
}

fn sections(text: &str) -> (Option<String>, Vec<Section>) {
    let mut title = None;
    let mut out = vec![Section {
        heading: None,
        paragraphs: vec![],
    }];
    let mut para = String::new();
    let mut in_code = false;
    let flush = |para: &mut String, out: &mut Vec<Section>| {
        let p = para.trim();
        if !p.is_empty() {
            out.last_mut()
                .expect("one section")
                .paragraphs
                .push(p.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        para.clear();
    };
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_code = !in_code;
            flush(&mut para, &mut out);
            continue;
        }
        if in_code {
            continue;
        }
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
            flush(&mut para, &mut out);
            let h = strip_md(t[hashes..].trim());
            if hashes == 1 && title.is_none() {
                title = Some(h);
            } else {
                out.push(Section {
                    heading: Some(h),
                    paragraphs: vec![],
                });
            }
        } else if t.is_empty() || t.starts_with('|') || t.starts_with("<") {
            flush(&mut para, &mut out);
        } else {
            let t = t.trim_start_matches(['-', '*', '>', ' ']);
            para.push_str(t);
            para.push(' ');
        }
    }
    flush(&mut para, &mut out);
    (title, out)
}

fn digits_removed(s: &str) -> String {
    match_key(
        &s.chars()
            .filter(|c| !c.is_ascii_digit())
            .collect::<String>(),
    )
}

fn numbers(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_ascii_digit())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// The reply to an `extract` call: JSON derived from the `<source>` block of the last user message.
pub fn extract_reply(user: &str) -> serde_json::Value {
    let (attrs, text) = block(user, "source").unwrap_or(("", ""));
    let text = unescape_block(text);
    let source_title = attr_value(attrs, "title").unwrap_or_default();
    let (title, secs) = sections(&text);

    let mut entities: Vec<(String, String)> = Vec::new(); // (name, kind)
    for s in &secs {
        if let Some(h) = &s.heading {
            let h = h
                .trim_end_matches([':', '：', '.', '?', '？'])
                .trim()
                .to_string();
            if h.is_empty() || GENERIC_HEADINGS.contains(&h.to_lowercase().as_str()) {
                continue;
            }
            if entities.iter().any(|(n, _)| match_key(n) == match_key(&h)) {
                continue;
            }
            let words: Vec<&str> = h.split_whitespace().collect();
            let proper = words.len() <= 3
                && words
                    .iter()
                    .all(|w| w.chars().next().is_some_and(char::is_uppercase))
                && !h.chars().any(crate::text::is_cjk);
            entities.push((h, if proper { "entity" } else { "concept" }.to_string()));
        }
    }

    let mut claims = Vec::new();
    let mut first_sentences: Vec<String> = Vec::new();
    for s in &secs {
        let about_heading = s.heading.as_ref().and_then(|h| {
            entities.iter().find(|(n, _)| {
                match_key(n) == match_key(h.trim_end_matches([':', '：', '.', '?', '？']))
            })
        });
        for (pi, p) in s.paragraphs.iter().enumerate() {
            let sents = sentences(p);
            if let Some(first) = sents.first() {
                first_sentences.push(first.clone());
            }
            for sent in sents.iter().take(if pi < 2 { 2 } else { 1 }) {
                let mut about: Vec<String> =
                    about_heading.map(|(n, _)| n.clone()).into_iter().collect();
                let folded = match_key(sent);
                for (n, _) in &entities {
                    let k = match_key(n);
                    if !k.is_empty() && folded.contains(&k) && !about.contains(n) {
                        about.push(n.clone());
                    }
                }
                let stance = super::provenance::stance_of(sent);
                claims.push(serde_json::json!({"text": strip_md(sent), "quote": sent, "about": about, "stance": stance}));
            }
        }
    }

    // Contradictions: an existing claim equal to a new sentence except for its numbers.
    let mut contradictions = Vec::new();
    if let Some((_, existing)) = block(user, "existing-claims") {
        for line in unescape_block(existing).lines() {
            let Some(rest) = line.trim().strip_prefix("- [") else {
                continue;
            };
            let Some((id, rest)) = rest.split_once("] ") else {
                continue;
            };
            let old_text = rest.rsplit_once(" (page: ").map_or(rest, |(t, _)| t);
            let old_key = digits_removed(old_text);
            let old_nums = numbers(old_text);
            if old_nums.is_empty() || old_key.is_empty() {
                continue;
            }
            for c in &claims {
                let quote = c["quote"].as_str().unwrap_or_default();
                if digits_removed(quote) == old_key && numbers(quote) != old_nums {
                    contradictions.push(serde_json::json!({
                        "existing_claim": id,
                        "quote": quote,
                        "explanation": format!("The source says \"{}\" where the wiki says \"{}\".", strip_md(quote), old_text)
                    }));
                }
            }
        }
    }

    let mut relations = Vec::new();
    for s in &secs {
        let Some(h) = &s.heading else { continue };
        let Some((from, _)) = entities.iter().find(|(n, _)| {
            match_key(n) == match_key(h.trim_end_matches([':', '：', '.', '?', '？']))
        }) else {
            continue;
        };
        let body = match_key(&s.paragraphs.join(" "));
        for (to, _) in &entities {
            if to != from && body.contains(&match_key(to)) {
                relations.push(serde_json::json!({"from": from, "to": to, "label": "mentions"}));
            }
        }
    }

    // A model asked for the key claims gives a bounded list; then the first sentence of each
    // picture's description, quoted from it.
    claims.truncate(24);
    let after_source = user.find("</source>").map_or("", |i| &user[i..]);
    for (_, description) in blocks(after_source, "image") {
        let description = unescape_block(description);
        if let Some(first) = sentences(&description).into_iter().next() {
            let folded = match_key(&first);
            let about: Vec<&String> = entities
                .iter()
                .map(|(n, _)| n)
                .filter(|n| !match_key(n).is_empty() && folded.contains(&match_key(n)))
                .collect();
            claims.push(serde_json::json!({"text": strip_md(&first), "quote": first, "about": about, "stance": "asserted"}));
        }
    }
    let summary: String = first_sentences
        .iter()
        .take(3)
        .map(|s| strip_md(s))
        .collect::<Vec<_>>()
        .join(" ");
    let one_line = first_sentences
        .first()
        .map(|s| strip_md(s))
        .unwrap_or_else(|| title.clone().unwrap_or(source_title));
    serde_json::json!({
        "summary": summary,
        "one_line": one_line.chars().take(160).collect::<String>(),
        "claims": claims,
        "entities": entities.iter().map(|(n, k)| serde_json::json!({"name": n, "kind": k, "aliases": [], "description": ""})).collect::<Vec<_>>(),
        "relations": relations,
        "contradictions": contradictions,
    })
}

/// The existing claims an extract prompt lists: `(id, text)` of each `- [id] text (page: key)`
/// line of its `<existing-claims>` block.
fn existing_claims(user: &str) -> Vec<(String, String)> {
    let Some((_, existing)) = block(user, "existing-claims") else {
        return vec![];
    };
    unescape_block(existing)
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("- [")?;
            let (id, rest) = rest.split_once("] ")?;
            let text = rest.rsplit_once(" (page: ").map_or(rest, |(t, _)| t);
            Some((id.to_string(), text.to_string()))
        })
        .collect()
}

/// Lower-cased words of 3+ letters (the overlap a credulous model goes by).
fn topic_words(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .collect()
}

/// An `extract` reply as a credulous model writes its contradictions: for every existing claim
/// with a number that the source's text shares a word with, it proposes a disagreement —
/// citing the source's sentence most alike the claim that has other numbers, whatever that
/// sentence's stance, or, when the source has none, a quote it makes up (the claim with each
/// number plus one), which the source does not contain. Derived from the request (Decision 14);
/// what the app must turn away (issue 21, item 7). Other replies come back unchanged.
pub fn credulous_contradictions(user: &str, mut reply: serde_json::Value) -> serde_json::Value {
    let (_, text) = block(user, "source").unwrap_or(("", ""));
    let text = unescape_block(text);
    let text_words = topic_words(&text);
    let quotes: Vec<String> = reply["claims"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["quote"].as_str().map(unescape_block))
                .collect()
        })
        .unwrap_or_default();
    let mut proposals = Vec::new();
    for (id, old) in existing_claims(user) {
        let old_nums = numbers(&old);
        let old_words = topic_words(&old);
        if old_nums.is_empty() || !old_words.iter().any(|w| text_words.contains(w)) {
            continue;
        }
        let alike = quotes
            .iter()
            .filter(|q| {
                let n = numbers(q);
                !n.is_empty() && n != old_nums
            })
            .map(|q| {
                let w = topic_words(q);
                (old_words.iter().filter(|o| w.contains(o)).count(), q)
            })
            .filter(|(n, _)| *n > 0)
            .max_by_key(|(n, _)| *n)
            .map(|(_, q)| q.clone());
        let quote = alike.unwrap_or_else(|| {
            let mut out = String::new();
            let mut digits = String::new();
            for c in old.chars().chain(std::iter::once(' ')) {
                if c.is_ascii_digit() {
                    digits.push(c);
                    continue;
                }
                if !digits.is_empty() {
                    let n: u64 = digits.parse().unwrap_or(0);
                    out.push_str(&(n + 1).to_string());
                    digits.clear();
                }
                out.push(c);
            }
            out.trim_end().to_string()
        });
        let mut p = serde_json::json!({
            "existing_claim": id,
            "quote": quote,
            "explanation": format!("The source says \"{}\" where the wiki says \"{}\".", strip_md(&quote), old)
        });
        // As a model copying from its prompt writes it (the reply's other strings are so).
        super::prompt::escape_strings(&mut p);
        proposals.push(p);
    }
    if let Some(list) = reply["contradictions"].as_array_mut() {
        for p in proposals {
            if !list
                .iter()
                .any(|c| c["existing_claim"] == p["existing_claim"] && c["quote"] == p["quote"])
            {
                list.push(p);
            }
        }
    }
    reply
}

/// The reply to an `integrate_pages` call: each `<page>` block answered as [`integrate_reply`]
/// answers a one-page call with that page's brief, facts and relations and the shared link
/// targets, with the page's key.
pub fn integrate_pages_reply(user: &str) -> serde_json::Value {
    use super::prompt::blocks;
    let targets = block(user, "link-targets").map_or("", |(_, b)| b);
    let pages: Vec<serde_json::Value> = blocks(user, "page")
        .into_iter()
        .map(|(attrs, inner)| {
            let key = attr_value(attrs, "key").unwrap_or_default();
            let one = format!(
                "<page {attrs}>\n\n</page>\n\n{inner}\n\n<link-targets>\n{targets}\n</link-targets>"
            );
            let mut v = integrate_reply(&one);
            v["key"] = serde_json::Value::String(key);
            v
        })
        .collect();
    serde_json::json!({ "pages": pages })
}

/// The reply to an `integrate` call: the current page without retracted sentences, plus the brief
/// (for a new page) and one cited sentence per fact, with links to the link targets whose titles
/// the text mentions.
pub fn integrate_reply(user: &str) -> serde_json::Value {
    let (attrs, current) = block(user, "page").unwrap_or(("", ""));
    let key = attr_value(attrs, "key").unwrap_or_default();
    // In append mode only the new text is asked for.
    let append = attr_value(attrs, "mode").as_deref() == Some("append");
    let current = if append {
        String::new()
    } else {
        unescape_block(current)
    };
    let brief = block(user, "brief")
        .map(|(_, b)| unescape_block(b))
        .unwrap_or_default();
    let list = |tag: &str| -> Vec<(String, String)> {
        block(user, tag)
            .map(|(_, b)| {
                unescape_block(b)
                    .lines()
                    .filter_map(|l| l.trim().strip_prefix("- [^"))
                    .filter_map(|l| l.split_once("] "))
                    .map(|(id, t)| {
                        (
                            id.to_string(),
                            t.rsplit_once(" (source: ")
                                .map_or(t, |(x, _)| x)
                                .to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let facts = list("facts");
    let retracted: Vec<String> = list("retracted").into_iter().map(|(id, _)| id).collect();
    let targets: Vec<(String, String)> = block(user, "link-targets")
        .map(|(_, b)| {
            unescape_block(b)
                .lines()
                .filter_map(|l| {
                    l.trim()
                        .strip_prefix("- [[")?
                        .strip_suffix("]]")
                        .map(str::to_string)
                })
                .map(|inner| match inner.split_once('|') {
                    Some((k, t)) => (k.to_string(), t.to_string()),
                    None => (inner.clone(), inner),
                })
                .collect()
        })
        .unwrap_or_default();

    let mut body: Vec<String> = current
        .lines()
        .filter(|l| !retracted.iter().any(|id| l.contains(&format!("[^{id}]"))))
        .map(str::to_string)
        .collect();
    if current.trim().is_empty() && !brief.trim().is_empty() && !append {
        body.push(brief.trim().to_string());
        body.push(String::new());
    }
    for (id, text) in &facts {
        if !current.contains(&format!("[^{id}]")) {
            let t = text.trim_end();
            let (stem, end) = match t.char_indices().last() {
                Some((i, c)) if matches!(c, '.' | '。' | '!' | '?' | '！' | '？') => {
                    (&t[..i], c.to_string())
                }
                _ => (t, ".".to_string()),
            };
            body.push(format!("- {stem} [^{id}]{end}"));
        }
    }
    let mut text = body.join("\n");
    // Link the first mention of each target (never the page itself).
    for (k, title) in &targets {
        if *k == key || title.chars().count() < 3 {
            continue;
        }
        if let Some(i) = text.find(title.as_str()) {
            let before = &text[..i];
            if before.ends_with("[[") || before.ends_with('|') {
                continue;
            }
            let link = crate::markdown::wikilinks::link_to(k, title);
            text = format!("{}{}{}", &text[..i], link, &text[i + title.len()..]);
        }
    }
    let summary = brief
        .lines()
        .next()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| facts.first().map(|(_, t)| t.clone()))
        .unwrap_or_default();
    serde_json::json!({"body": text, "summary": summary})
}

/// How a scripted model that echoes its prompt writes an integrate reply (the fault modes
/// `echo-outline`, `paraphrase-headings` and `repeat-blocks` of the scripted endpoint): a
/// model shown a page's outline in append mode often writes the outline back around its new text,
/// or rewords it, or repeats what it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Echo {
    /// In append mode, the outline it was shown, then its new text.
    Outline,
    /// In append mode, the outline with every heading reworded ("Ownership Rules" → "The Rules
    /// of Ownership", "Facts" → "The Facts"), its new text under the first heading.
    Paraphrase,
    /// Every block of the body twice.
    Repeat,
}

/// A heading reworded the way models reword them: the words of a two-or-more-word heading in
/// reverse order joined by "of", one word preceded by "The"; the marks kept.
fn paraphrase_heading(line: &str) -> String {
    let marks: String = line.chars().take_while(|c| *c == '#').collect();
    let text = line[marks.len()..].trim();
    let words: Vec<&str> = text.split_whitespace().collect();
    let reworded = match words.as_slice() {
        [] => String::new(),
        [one] => format!("The {one}"),
        [first, rest @ ..] => format!("The {} of {first}", rest.join(" ")),
    };
    format!("{marks} {reworded}")
}

/// `reply` (the scripted reply to the integrate request `user`) as an echoing model writes it
/// ([`Echo`]). For an `integrate_pages` reply, each page's body is changed alike (new pages have
/// no outline to echo, so only [`Echo::Repeat`] changes them).
pub fn echo_integrate(user: &str, mut reply: serde_json::Value, echo: Echo) -> serde_json::Value {
    let outline = match block(user, "page") {
        Some((attrs, inner)) if attr_value(attrs, "mode").as_deref() == Some("append") => {
            Some(inner.trim().to_string())
        }
        _ => None,
    };
    let change = |body: &str| -> String {
        match (echo, &outline) {
            (Echo::Outline, Some(o)) => format!("{o}\n\n{body}"),
            (Echo::Paraphrase, Some(o)) => {
                let lines: Vec<String> = o
                    .lines()
                    .filter(|l| l.starts_with('#'))
                    .map(paraphrase_heading)
                    .collect();
                match lines.split_first() {
                    Some((first, rest)) => {
                        format!("{first}\n\n{body}\n\n{}", rest.join("\n\n"))
                    }
                    None => body.to_string(),
                }
            }
            (Echo::Repeat, _) => {
                let blocks: Vec<&str> = crate::markdown::blocks::blocks(body)
                    .into_iter()
                    .map(|b| &body[b.range])
                    .collect();
                blocks
                    .iter()
                    .flat_map(|b| [*b, *b])
                    .collect::<Vec<_>>()
                    .join("\n\n")
            }
            _ => body.to_string(),
        }
    };
    if let Some(body) = reply
        .get("body")
        .and_then(|b| b.as_str())
        .map(str::to_string)
    {
        reply["body"] = serde_json::Value::String(change(&body));
    }
    if let Some(pages) = reply.get_mut("pages").and_then(|p| p.as_array_mut()) {
        for p in pages {
            if let Some(body) = p.get("body").and_then(|b| b.as_str()).map(str::to_string) {
                p["body"] = serde_json::Value::String(change(&body));
            }
        }
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::extract::ExtractInput;
    use crate::compile::prompt::extract_user;

    #[test]
    fn extract_derives_entities_claims_and_contradictions_from_the_prompt() {
        let input = ExtractInput {
            source_key: "s".into(),
            source_title: "Widgets".into(),
            text: "# Widgets\n\nWidgets are small.\n\n## Widgetron\n\nWidgetron was first released in 2016. It is made by Acme.\n\n## 流量控制\n\n流量控制让队列有界。\n".into(),
            part: 1,
            parts: 1,
            schema_md: "s".into(),
            index_slice: String::new(),
            existing_claims: "- [c0123456789] Widgetron was first released in 2015. (page: Widgetron)\n".into(),
            images: Vec::new(),
        };
        let v = extract_reply(&extract_user(&input));
        let names: Vec<&str> = v["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["Widgetron", "流量控制"]);
        assert_eq!(v["entities"][0]["kind"], "entity");
        assert_eq!(v["entities"][1]["kind"], "concept");
        let quotes: Vec<&str> = v["claims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["quote"].as_str().unwrap())
            .collect();
        assert_eq!(
            quotes,
            vec![
                "Widgets are small.",
                "Widgetron was first released in 2016.",
                "It is made by Acme.",
                "流量控制让队列有界。"
            ]
        );
        assert_eq!(v["claims"][1]["about"], serde_json::json!(["Widgetron"]));
        assert_eq!(v["contradictions"][0]["existing_claim"], "c0123456789");
        assert_eq!(
            v["contradictions"][0]["quote"],
            "Widgetron was first released in 2016."
        );
    }
}
