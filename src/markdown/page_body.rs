//! A page body's app-written parts (Decision 4, 5): the footnote definitions (one per cited
//! claim, with its quote), the `## Facts` list of claims the prose did not cite, the removal of
//! retracted claims, the `> [!contradiction]` callouts of open ledger records and the `## More
//! facts` count, assembled by [`finalize_body`] and taken off again by [`strip_app_sections`];
//! and which paragraphs are a human's (Decision 5). Compile writes bodies with it, and so do the
//! lint fixes and removing a source, so every writer produces the same sections.
//!
//! *Invariant:* after [`finalize_body`], every footnote reference names a claim of this page or of a
//! contradiction shown on it, every such claim has exactly one definition, and no retracted claim is
//! cited.

use std::collections::{BTreeMap, BTreeSet};

use crate::markdown::plain::footnote_refs;
use crate::model::{limits, Claim, Contradiction, ContradictionStatus, MoreFacts, Page, Source};

fn is_claim_label(label: &str) -> bool {
    label.len() == 11 && label.starts_with('c') && label[1..].chars().all(|c| c.is_ascii_hexdigit())
}

/// The heading of the app-written section that counts the facts kept elsewhere because the page
/// was full ([`crate::model::Page::more_facts`]).
pub const MORE_FACTS_HEADING: &str = "## More facts";

/// Most contradiction callouts one page shows (the latest opened); the line
/// [`more_contradictions_line`] counts the others, which stay in the ledger (Decision 4).
pub const CALLOUTS_PER_PAGE: usize = 10;

/// The line that follows a page's callouts when it has more open contradictions than
/// [`CALLOUTS_PER_PAGE`].
pub fn more_contradictions_line(n: usize) -> String {
    format!("*{n} more open contradictions on this page are in the contradiction ledger (lint lists them).*")
}

fn is_more_contradictions_line(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('*')
        && t.ends_with(" more open contradictions on this page are in the contradiction ledger (lint lists them).*")
}

/// Removes what the app regenerates: footnote definitions of claim labels, contradiction callouts
/// (and the line counting those not shown) and the `## More facts` section.
pub fn strip_app_sections(body: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut in_callout = false;
    let mut in_more = false;
    for line in body.lines() {
        let t = line.trim_start();
        if line.trim_end() == MORE_FACTS_HEADING {
            in_more = true;
            continue;
        }
        if in_more {
            if line.starts_with("# ") || line.starts_with("## ") || t.starts_with("> [!") {
                in_more = false;
            } else if t.is_empty() || t.starts_with("- ") {
                continue;
            } else {
                in_more = false;
            }
        }
        if t.starts_with("> [!contradiction]") {
            in_callout = true;
            continue;
        }
        if is_more_contradictions_line(line) {
            continue;
        }
        if in_callout {
            if t.starts_with('>') {
                continue;
            }
            in_callout = false;
        }
        if let Some(rest) = t.strip_prefix("[^") {
            if let Some(j) = rest.find("]:") {
                if is_claim_label(&rest[..j]) {
                    continue;
                }
            }
        }
        out.push(line);
    }
    trim_blank_runs(&out.join("\n"))
}

fn trim_blank_runs(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = 0;
    for line in s.lines() {
        if line.trim().is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line.trim_end());
    }
    out
}

/// Removes the callout of contradiction `id` (its `> [!contradiction] … (id)` block) from a body.
pub fn remove_callout(body: &str, id: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut skipping = false;
    for line in body.lines() {
        let t = line.trim_start();
        if t.starts_with("> [!contradiction]") {
            skipping = t.contains(&format!("({id})"));
            if skipping {
                continue;
            }
        } else if skipping && !t.starts_with('>') {
            skipping = false;
        }
        if !skipping {
            out.push(line);
        }
    }
    trim_blank_runs(&out.join("\n"))
}

/// Removes what cites one of `ids`: a whole list item or heading line, else just the sentences of a
/// paragraph line that cite it.
pub fn remove_citing_lines(body: &str, ids: &BTreeSet<String>) -> String {
    if ids.is_empty() {
        return body.to_string();
    }
    let cites = |s: &str| footnote_refs(s).iter().any(|l| ids.contains(l));
    let mut kept: Vec<String> = Vec::new();
    for line in body.lines() {
        if !cites(line) {
            kept.push(line.to_string());
            continue;
        }
        let t = line.trim_start();
        let is_item = t.starts_with("- ")
            || t.starts_with("* ")
            || t.starts_with('#')
            || t.starts_with('|')
            || t.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if is_item {
            continue;
        }
        let rest: String = sentences(line).into_iter().filter(|s| !cites(s)).collect();
        if !rest.trim().is_empty() {
            kept.push(rest.trim_end().to_string());
        }
    }
    trim_blank_runs(&kept.join("\n"))
}

/// Splits a line into sentences, each keeping its terminator and following spaces.
fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    for (n, &(i, c)) in chars.iter().enumerate() {
        let end_here = match c {
            '。' | '！' | '？' => true,
            '.' | '!' | '?' => chars.get(n + 1).is_none_or(|&(_, next)| next == ' '),
            _ => false,
        };
        if end_here {
            let mut end = i + c.len_utf8();
            while line[end..].starts_with(' ') {
                end += 1;
            }
            if end > start {
                out.push(&line[start..end]);
            }
            start = end;
        }
    }
    if start < line.len() {
        out.push(&line[start..]);
    }
    out
}

/// Removes `[^label]` references whose label is not in `known` (invented by the model);
/// definitions stay ([`crate::markdown::plain::retain_refs`]).
pub fn drop_unknown_refs(body: &str, known: &BTreeSet<String>) -> String {
    crate::markdown::plain::retain_refs(body, |label| known.contains(label))
}

/// Renders one open contradiction as an Obsidian callout (Decision 4).
/// Claims on the page itself are named without a link (no page links to itself).
pub fn render_callout(
    record: &Contradiction,
    claims: &BTreeMap<String, Claim>,
    titles: &BTreeMap<String, String>,
    self_key: &str,
) -> String {
    let mut s = format!(
        "> [!contradiction] Sources disagree ({})\n> {}\n",
        record.id,
        one_line(&record.description)
    );
    for id in &record.claims {
        if let Some(c) = claims.get(id) {
            let title = titles
                .get(&c.page)
                .cloned()
                .unwrap_or_else(|| c.page.clone());
            let named = if c.page == self_key {
                format!("**{}**", title.replace('*', ""))
            } else {
                crate::markdown::wikilinks::link_to(&c.page, &title)
            };
            s.push_str(&format!("> - {named}: {} [^{}]\n", one_line(&c.text), c.id));
        }
    }
    s
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A footnote definition: `[^id]: [[Source page|Title]] — "quote"` (+ ` (unverified quote)`). On
/// the source's own summary page (`self_key == source_page`) the source is named without a link.
/// A claim drawn from a picture's description ([`Claim::from_description`]) cites the picture
/// too: `[^id]: [[Source page|Title]], picture [[name]] — "quote" (a model's description of the
/// picture, not verified)`.
pub fn footnote_definition(
    c: &Claim,
    source_page: &str,
    source_title: &str,
    self_key: &str,
) -> String {
    let named = if source_page == self_key {
        format!("*{}*", source_title.replace(['*', '[', ']'], ""))
    } else {
        crate::markdown::wikilinks::link_to(source_page, source_title)
    };
    let (picture, mark) = match &c.from_description {
        Some(name) => (
            format!(", picture [[{name}]]"),
            " (a model's description of the picture, not verified)",
        ),
        None if c.verified => (String::new(), ""),
        None => (String::new(), " (unverified quote)"),
    };
    format!(
        "[^{}]: {}{} — “{}”{}",
        c.id,
        named,
        picture,
        one_line(&c.quote),
        mark
    )
}

/// Everything [`finalize_body`] needs besides the draft.
pub struct Finalize<'a> {
    /// Claims of this page after the compile (existing minus retracted, plus new), by id.
    pub page_claims: &'a BTreeMap<String, Claim>,
    /// Retracted claim ids (lines citing them are removed).
    pub retracted: &'a BTreeSet<String>,
    /// Open ledger records involving this page.
    pub open_contradictions: &'a [&'a Contradiction],
    /// Every claim a callout may show, by id (claims of other pages too).
    pub all_claims: &'a BTreeMap<String, Claim>,
    /// Page titles by key (for links in callouts and footnotes).
    pub titles: &'a BTreeMap<String, String>,
    /// Source key → (summary page key, title) for footnote definitions.
    pub source_pages: &'a BTreeMap<String, (String, String)>,
    /// The page being written.
    pub self_key: &'a str,
    /// The page's human paragraphs (Decision 5; whitespace collapsed): kept as they are by the
    /// duplicate removal, never merged away or moved.
    pub protected: &'a [String],
    /// Facts kept on other pages because this one was full, rendered as `## More facts`.
    pub more_facts: &'a [MoreFacts],
}

/// The `## More facts` section for `more`: the latest [`limits::MORE_FACTS_LINES`] sources one
/// line each (`- 3 more facts in [[Source]]`), older ones summed in a first line; empty when
/// there is nothing to list.
pub fn more_facts_section(
    more: &[MoreFacts],
    source_pages: &BTreeMap<String, (String, String)>,
) -> String {
    let shown: Vec<(&MoreFacts, &(String, String))> = more
        .iter()
        .filter(|m| m.facts > 0)
        .filter_map(|m| source_pages.get(&m.source).map(|p| (m, p)))
        .collect();
    if shown.is_empty() {
        return String::new();
    }
    let facts = |n: u64| {
        if n == 1 {
            "1 more fact".to_string()
        } else {
            format!("{n} more facts")
        }
    };
    let mut s = format!("{MORE_FACTS_HEADING}\n\n");
    let cut = shown.len().saturating_sub(limits::MORE_FACTS_LINES);
    if cut > 0 {
        let n: u64 = shown[..cut].iter().map(|(m, _)| u64::from(m.facts)).sum();
        s.push_str(&format!("- {} in {cut} earlier sources\n", facts(n)));
    }
    for (m, (key, title)) in &shown[cut..] {
        s.push_str(&format!(
            "- {} in {}\n",
            facts(u64::from(m.facts)),
            crate::markdown::wikilinks::link_to(key, title)
        ));
    }
    s
}

/// Bytes of the part of `body` the app and the model wrote: without the blank-line paragraphs
/// listed in `human` (whitespace collapsed, Decision 5). What [`limits`] bound.
pub fn written_bytes(body: &str, human: &[String]) -> usize {
    if human.is_empty() {
        return body.len();
    }
    body.split("\n\n")
        .filter(|p| !human.contains(&one_line(p)))
        .map(|p| p.len() + 2)
        .sum::<usize>()
        .saturating_sub(2)
}

/// Turns a draft body into the stored body (see the module invariant). `fix_links` rewrites links
/// that do not resolve into plain text.
pub fn finalize_body(draft: &str, f: &Finalize<'_>, fix_links: impl Fn(&str) -> String) -> String {
    let mut body = strip_app_sections(draft);
    body = remove_citing_lines(&body, f.retracted);
    body = fix_links(&body);

    // Claims this page states but the prose does not cite go to `## Facts`.
    let cited: BTreeSet<String> = crate::util::btree_set(footnote_refs(&body));
    let uncited: Vec<&Claim> = f
        .page_claims
        .values()
        .filter(|c| !cited.contains(&c.id))
        .collect();
    if !uncited.is_empty() {
        let facts_heading = body.lines().any(|l| l.trim() == "## Facts");
        let mut list = String::new();
        for c in uncited {
            list.push_str(&format!("- {} [^{}]\n", one_line(&c.text), c.id));
        }
        if facts_heading {
            // Append after the existing Facts section's last line.
            let mut lines: Vec<String> = body.lines().map(str::to_string).collect();
            let start = lines
                .iter()
                .position(|l| l.trim() == "## Facts")
                .unwrap_or(0);
            let mut end = start + 1;
            while end < lines.len() && !lines[end].starts_with("## ") {
                end += 1;
            }
            while end > start + 1 && lines[end - 1].trim().is_empty() {
                end -= 1;
            }
            let insert: Vec<String> = list.lines().map(str::to_string).collect();
            lines.splice(end..end, insert);
            body = lines.join("\n");
        } else {
            if !body.is_empty() {
                body.push_str("\n\n");
            }
            body.push_str("## Facts\n\n");
            body.push_str(list.trim_end());
        }
    }

    // No block twice (`markdown::blocks`): a fact the prose or the list already holds adds its
    // citation to that copy; a repeated heading's section joins the first.
    body = crate::markdown::dedup::dedup(&body, f.protected);

    // Facts kept elsewhere because the page was full.
    let more = more_facts_section(f.more_facts, f.source_pages);
    if !more.is_empty() {
        body = format!("{}\n\n{}", body.trim_end(), more.trim_end());
    }

    // Callouts for open contradictions: the latest [`CALLOUTS_PER_PAGE`], and how many more the
    // ledger holds, so a page stays within its bounds whatever its sources dispute.
    let mut callout_claims: BTreeSet<String> = BTreeSet::new();
    let mut callouts = String::new();
    let mut open: Vec<&&Contradiction> = f
        .open_contradictions
        .iter()
        .filter(|r| r.status == ContradictionStatus::Open)
        .collect();
    crate::util::sort_by(&mut open, &|a, b| {
        b.opened_by.cmp(&a.opened_by).then_with(|| a.id.cmp(&b.id))
    });
    for record in open.iter().take(CALLOUTS_PER_PAGE) {
        callouts.push_str(&render_callout(record, f.all_claims, f.titles, f.self_key));
        callouts.push('\n');
        callout_claims.extend(record.claims.iter().cloned());
    }
    if open.len() > CALLOUTS_PER_PAGE {
        callouts.push_str(&more_contradictions_line(open.len() - CALLOUTS_PER_PAGE));
        callouts.push('\n');
    }
    let mut known: BTreeSet<String> = crate::util::btree_set(f.page_claims.keys().cloned());
    known.extend(
        callout_claims
            .iter()
            .filter(|id| f.all_claims.contains_key(*id))
            .cloned(),
    );
    body = drop_unknown_refs(&body, &known);
    if !callouts.is_empty() {
        body = format!("{}\n\n{}", body.trim_end(), callouts.trim_end());
    }

    // Footnote definitions, in order of first reference.
    let refs = footnote_refs(&body);
    let mut defs = String::new();
    for id in refs {
        let Some(c) = f.page_claims.get(&id).or_else(|| f.all_claims.get(&id)) else {
            continue;
        };
        let (page, title) = f
            .source_pages
            .get(&c.source_key)
            .cloned()
            .unwrap_or_else(|| (c.source_key.clone(), c.source_key.clone()));
        defs.push_str(&footnote_definition(c, &page, &title, f.self_key));
        defs.push('\n');
    }
    let mut out = body.trim().to_string();
    if !defs.is_empty() {
        out.push_str("\n\n");
        out.push_str(defs.trim_end());
    }
    out.push('\n');
    out
}

/// Paragraphs (blank-line separated, whitespace-collapsed) of `current` that are not in `base`:
/// what a human added since the last LLM revision.
pub fn added_paragraphs(base: &str, current: &str) -> Vec<String> {
    let base_set: BTreeSet<String> = crate::util::btree_set(paragraphs(base));
    paragraphs(current)
        .into_iter()
        .filter(|p| !base_set.contains(p))
        .collect()
}

/// Paragraphs the app's own revisions wrote over the model's text (Decision 5). `base` is the last
/// LLM revision's body; `later` are the bodies of the revisions after it, in order, each with
/// whether the app wrote it ([`crate::model::Author::App`]). The app removes text (cited
/// sentences go) and turns links into plain text (`[[Page#Heading|label]]` becomes `label`, or
/// `Page > Heading`), so a paragraph it wrote derives from one it replaced: it is the model's —
/// and returned here — only when it derives from a vanished model paragraph (of `base`, or one
/// the app rewrote before); in every other case it stays the human's (the safe side: at worst an
/// update is held for the user).
pub fn app_rewritten_paragraphs(base: &str, later: &[(bool, &str)]) -> BTreeSet<String> {
    let base_set: BTreeSet<String> = crate::util::btree_set(paragraphs(base));
    let mut app: BTreeSet<String> = BTreeSet::new();
    let mut prev: Vec<String> = paragraphs(base);
    for (by_app, body) in later {
        let now = paragraphs(body);
        if *by_app {
            let model_gone: Vec<&String> = prev
                .iter()
                .filter(|p| !now.contains(p) && (base_set.contains(*p) || app.contains(*p)))
                .collect();
            for n in now.iter().filter(|n| !prev.contains(n)) {
                if model_gone.iter().any(|g| derives_from(n, g)) {
                    app.insert(n.clone());
                }
            }
        }
        prev = now;
    }
    app
}

/// Whether `short` is `long` with text removed and links made plain: a subsequence once link
/// syntax (`[`, `]`, `#`, `^`, `|`, the ` > ` of a heading link's display) and whitespace are
/// left out of both.
fn derives_from(short: &str, long: &str) -> bool {
    let skeleton = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| !c.is_whitespace() && !matches!(c, '[' | ']' | '#' | '^' | '|' | '>'))
            .collect()
    };
    let long = skeleton(long);
    let mut rest = long.iter();
    skeleton(short).iter().all(|c| rest.any(|l| l == c))
}

fn paragraphs(s: &str) -> Vec<String> {
    s.split("\n\n")
        .map(one_line)
        .filter(|p| !p.is_empty())
        .collect()
}

/// The human paragraphs missing from `new_body` (Decision 5). Empty means the update may apply.
pub fn missing_human_paragraphs(human: &[String], new_body: &str) -> Vec<String> {
    let new_flat = one_line(new_body);
    human
        .iter()
        .filter(|p| !new_flat.contains(p.as_str()))
        .cloned()
        .collect()
}

/// Source key → (summary page key, title), for the sources whose summary page is in `pages`: the
/// [`Finalize::source_pages`] of a rebuild.
pub fn summary_pages(
    sources: &BTreeMap<String, Source>,
    pages: &BTreeMap<String, Page>,
) -> BTreeMap<String, (String, String)> {
    let mut m: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (k, s) in sources {
        if let Some(p) = s.summary_page.as_ref().and_then(|p| pages.get(p)) {
            m.insert(k.clone(), (p.key.clone(), p.title.clone()));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(id: &str, page: &str, text: &str, verified: bool) -> Claim {
        Claim {
            id: id.into(),
            page: page.into(),
            text: text.into(),
            source_key: "s1".into(),
            source_version: "v".into(),
            quote: format!("quote of {text}"),
            verified,
            stance: Default::default(),
            from_description: None,
        }
    }

    const C1: &str = "c0000000001";
    const C2: &str = "c0000000002";
    const C3: &str = "c0000000003";

    #[test]
    fn finalize_adds_definitions_facts_and_drops_inventions() {
        let mut page_claims = BTreeMap::new();
        page_claims.insert(
            C1.to_string(),
            claim(C1, "Widgetron", "Released in 2016.", true),
        );
        page_claims.insert(
            C2.to_string(),
            claim(C2, "Widgetron", "Made by Acme.", false),
        );
        let retracted: BTreeSet<String> = [C3.to_string()].into();
        let titles = BTreeMap::from([("Widgetron".to_string(), "Widgetron".to_string())]);
        let source_pages = BTreeMap::from([(
            "s1".to_string(),
            ("Widget notes".to_string(), "Widget notes".to_string()),
        )]);
        let f = Finalize {
            page_claims: &page_claims,
            retracted: &retracted,
            open_contradictions: &[],
            all_claims: &page_claims,
            titles: &titles,
            source_pages: &source_pages,
            self_key: "Widgetron",
            protected: &[],
            more_facts: &[],
        };
        let draft = format!(
            "```markdown\nignored fence is the markdown module's job\n```\nWidgetron is a widget [^{C1}]. It was released in 2015 [^{C3}].\nIt is great [^c9999999999].\n\n[^{C1}]: the model's own definition\n"
        );
        let out = finalize_body(&draft, &f, |s| s.to_string());
        assert!(!out.contains("2015"), "{out}");
        assert!(!out.contains("c9999999999"), "{out}");
        assert!(
            out.contains(&format!("Widgetron is a widget [^{C1}].\nIt is great.")),
            "{out}"
        );
        assert!(
            out.contains(&format!("## Facts\n\n- Made by Acme. [^{C2}]\n\n")),
            "{out}"
        );
        assert!(
            out.contains(&format!(
                "[^{C1}]: [[Widget notes]] — “quote of Released in 2016.”\n"
            )),
            "{out}"
        );
        assert!(
            out.ends_with(&format!(
                "[^{C2}]: [[Widget notes]] — “quote of Made by Acme.” (unverified quote)\n"
            )),
            "{out}"
        );
        assert!(!out.contains("the model's own definition"));
        // Idempotent: finalising the output again changes nothing.
        assert_eq!(finalize_body(&out, &f, |s| s.to_string()), out);
    }

    #[test]
    fn contradiction_callouts_render_on_the_page() {
        let a = claim(C1, "Widgetron", "Released in 2015.", true);
        let b = claim(C2, "Gadget", "Released in 2016.", true);
        let page_claims = BTreeMap::from([(C1.to_string(), a.clone())]);
        let all = BTreeMap::from([(C1.to_string(), a), (C2.to_string(), b)]);
        let record = Contradiction {
            id: "x0000000001".into(),
            pages: vec!["Widgetron".into(), "Gadget".into()],
            claims: vec![C1.into(), C2.into()],
            description: "Release years differ.".into(),
            status: ContradictionStatus::Open,
            note: None,
            opened_by: 1,
            closed_by: None,
        };
        let titles = BTreeMap::from([
            ("Widgetron".to_string(), "Widgetron".to_string()),
            ("Gadget".to_string(), "Gadget".to_string()),
        ]);
        let source_pages = BTreeMap::from([("s1".to_string(), ("S".to_string(), "S".to_string()))]);
        let open = [&record];
        let f = Finalize {
            page_claims: &page_claims,
            retracted: &BTreeSet::new(),
            open_contradictions: &open,
            all_claims: &all,
            titles: &titles,
            source_pages: &source_pages,
            self_key: "Widgetron",
            protected: &[],
            more_facts: &[],
        };
        let out = finalize_body(&format!("Widgetron [^{C1}]."), &f, |s| s.to_string());
        assert!(out.contains("> [!contradiction] Sources disagree (x0000000001)\n> Release years differ.\n> - **Widgetron**: Released in 2015. [^c0000000001]\n> - [[Gadget]]: Released in 2016. [^c0000000002]"), "{out}");
        assert!(out.contains(&format!("[^{C2}]: [[S]]")), "{out}");
        assert_eq!(finalize_body(&out, &f, |s| s.to_string()), out);
    }

    #[test]
    fn human_paragraphs_must_survive() {
        let base = "Intro.\n\nFacts here.";
        let current = "Intro.\n\nMy own   note,\nkept.\n\nFacts here.";
        let human = added_paragraphs(base, current);
        assert_eq!(human, vec!["My own note, kept."]);
        assert!(
            missing_human_paragraphs(&human, "Intro.\n\nMy own note, kept.\n\nNew facts.")
                .is_empty()
        );
        assert_eq!(
            missing_human_paragraphs(&human, "Intro.\n\nNew facts."),
            human
        );
    }

    #[test]
    fn what_the_app_rewrote_stays_with_whoever_wrote_it() {
        let base = "Model text, see [[Gone]].\n\nModel facts. Cited [^c1].";
        // A human adds a paragraph linking the page that goes; the app then unlinks both.
        let human = format!("{base}\n\nMy note on [[Gone|the old one]].");
        let app = "Model text, see Gone.\n\nModel facts.\n\nMy note on the old one.";
        let rewritten = app_rewritten_paragraphs(base, &[(false, &human), (true, app)]);
        assert_eq!(
            rewritten,
            BTreeSet::from([
                "Model text, see Gone.".to_string(),
                "Model facts.".to_string()
            ])
        );
        // What Decision 5 keeps is the human's paragraph as the app left it.
        let mut kept = added_paragraphs(base, app);
        kept.retain(|p| !rewritten.contains(p));
        assert_eq!(kept, vec!["My note on the old one.".to_string()]);
        // Without app revisions nothing is the app's.
        assert!(app_rewritten_paragraphs(base, &[(false, &human)]).is_empty());

        // A heading link's display text adds " > ": a model paragraph is still the model's, a
        // human one still the human's.
        let base = "Setup is in [[Src#Install|the guide]] and [[Src#Setup]].";
        let human = format!("{base}\n\nMine: read [[Src#Setup]] first.");
        let app = "Setup is in the guide and Src > Setup.\n\nMine: read Src > Setup first.";
        let rewritten = app_rewritten_paragraphs(base, &[(false, &human), (true, app)]);
        assert_eq!(
            rewritten,
            BTreeSet::from(["Setup is in the guide and Src > Setup.".to_string()])
        );
    }
}
