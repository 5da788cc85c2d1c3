//! Link resolution and backlinks.
//!
//! A target resolves, in order (each step case-insensitive after NFC and whitespace folding, a
//! trailing `.md` ignored, and a vault folder prefix such as `wiki/concept/`, `concepts/` or
//! `Entity/` ignored when the target as written names nothing): to the page whose key it is;
//! else to the one page whose title or alias it is (when several pages share that title or alias
//! it is [`Resolution::Ambiguous`] with every candidate); else to the page whose key the target
//! would get as a title ([`page_key`], or [`legacy_page_key`] for pages keyed before stand-ins);
//! else to the one page whose key, title or alias has the target's [`match_key`] (so `[[WiFi]]`
//! finds `Wi-Fi` and `[[Ｃ＋＋]]` finds `C++`, while `[[C]]` never finds `C++`; several such pages
//! are ambiguous); else to the page whose key is the target's last path segment (`[[notes/Tokio]]`);
//! else it is [`Resolution::Missing`]. A target with a file extension other than `.md` that names
//! an attachment resolves to the attachment. `[[C#]]`, which Obsidian reads as page `C` at an
//! empty heading, goes to the page named `C#` when there is one ([`Resolver::resolve_link`]).
//!
//! *Invariant:* resolving is pure: it never creates, renames or changes a page.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::markdown::keys::{fold_key, legacy_page_key, match_key, page_key};
use crate::markdown::wikilinks::{self, Fragment, WikiLink};
use crate::model::Page;

/// Folds a name for comparison: NFC, lower case, whitespace runs as one space, trimmed.
pub fn fold_name(s: &str) -> String {
    fold_key(&s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Where a link target leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The page with this key.
    Page(String),
    /// Several pages answer to the name (title or alias); their keys, sorted. A warning: the link
    /// is not followed.
    Ambiguous(Vec<String>),
    /// An attachment, by its name in `raw/assets/`.
    Asset(String),
    /// No page (and no attachment) has that name.
    Missing,
}

/// File extensions that name attachments rather than notes, so `![[missing.png]]` is a missing
/// attachment, not a missing page.
pub const ATTACHMENT_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "webp", "svg", "bmp", "avif", "ico", "pdf", "mp3", "wav", "ogg",
    "m4a", "flac", "mp4", "webm", "mov", "mkv", "csv", "zip", "json", "txt", "canvas",
];

/// The extension of an attachment-like target (`"png"` for `a/diagram.PNG`), lower-cased, if it
/// is in [`ATTACHMENT_EXTENSIONS`].
pub fn attachment_extension(target: &str) -> Option<String> {
    let base = target.rsplit('/').next().unwrap_or(target);
    let (_, ext) = base.rsplit_once('.')?;
    let ext = ext.to_ascii_lowercase();
    ATTACHMENT_EXTENSIONS.contains(&ext.as_str()).then_some(ext)
}

/// Resolves link targets against a set of pages and attachment names.
#[derive(Debug, Clone, Default)]
pub struct Resolver {
    by_key: HashMap<String, String>,
    by_name: HashMap<String, BTreeSet<String>>,
    by_match: HashMap<String, BTreeSet<String>>,
    assets: HashMap<String, String>,
}

/// `target` without a vault folder prefix: a leading `wiki/`, then a first segment naming a
/// page kind's folder in the singular or plural, any case (`concept/`, `Concepts/`,
/// `analyses/`), and a trailing `.md`. `None` when there is no such prefix.
///
/// ```
/// use llm_wiki::markdown::resolve::strip_vault_folder;
/// assert_eq!(strip_vault_folder("wiki/concept/Tokio.md"), Some("Tokio"));
/// assert_eq!(strip_vault_folder("concepts/Tokio"), Some("Tokio"));
/// assert_eq!(strip_vault_folder("I/O"), None);
/// ```
pub fn strip_vault_folder(target: &str) -> Option<&str> {
    let t = strip_md(target.trim());
    let mut rest = t;
    let mut stripped = false;
    if rest.len() > 5 && rest.is_char_boundary(5) && rest[..5].eq_ignore_ascii_case("wiki/") {
        rest = &rest[5..];
        stripped = true;
    }
    if let Some((first, tail)) = rest.split_once('/') {
        let f = first.trim().to_ascii_lowercase();
        let kind = crate::model::PageKind::ALL.iter().any(|k| {
            let one = k.as_str();
            let many = match one {
                "entity" => "entities".to_string(),
                "analysis" => "analyses".to_string(),
                _ => format!("{one}s"),
            };
            f == one || f == many
        });
        if kind && !tail.trim().is_empty() {
            rest = tail;
            stripped = true;
        }
    }
    let rest = rest.trim();
    (stripped && !rest.is_empty()).then_some(rest)
}

impl Resolver {
    /// A resolver over `pages` (key, title, aliases).
    pub fn new<'a>(pages: impl IntoIterator<Item = (&'a str, &'a str, &'a [String])>) -> Self {
        let mut r = Resolver::default();
        for (key, title, aliases) in pages {
            r.by_key.insert(fold_name(key), key.to_string());
            for name in std::iter::once(title).chain(aliases.iter().map(String::as_str)) {
                r.by_name
                    .entry(fold_name(name))
                    .or_default()
                    .insert(key.to_string());
            }
            for name in [key, title]
                .into_iter()
                .chain(aliases.iter().map(String::as_str))
            {
                let m = match_key(name);
                if !m.is_empty() {
                    r.by_match.entry(m).or_default().insert(key.to_string());
                }
            }
        }
        r
    }

    /// A resolver over page records.
    pub fn from_pages(pages: &[Page]) -> Self {
        Resolver::new(
            pages
                .iter()
                .map(|p| (p.key.as_str(), p.title.as_str(), p.aliases.as_slice())),
        )
    }

    /// Adds attachment names (file names in `raw/assets/`).
    pub fn with_assets<'a>(mut self, names: impl IntoIterator<Item = &'a str>) -> Self {
        for n in names {
            self.assets.insert(fold_name(n), n.to_string());
        }
        self
    }

    /// Resolves a link target (as written, without fragment or alias).
    ///
    /// ```
    /// use llm_wiki::markdown::resolve::{Resolver, Resolution};
    /// let aliases = vec!["Artificial Intelligence".to_string()];
    /// let r = Resolver::new([("人工智能", "人工智能", aliases.as_slice())]);
    /// assert_eq!(r.resolve("artificial  intelligence"), Resolution::Page("人工智能".into()));
    /// assert_eq!(r.resolve("Deep Learning"), Resolution::Missing);
    /// ```
    pub fn resolve(&self, target: &str) -> Resolution {
        let target = target.trim();
        if target.is_empty() {
            return Resolution::Missing;
        }
        if attachment_extension(target).is_some() {
            let base = target.rsplit('/').next().unwrap_or(target);
            return match self
                .assets
                .get(&fold_name(target))
                .or_else(|| self.assets.get(&fold_name(base)))
            {
                Some(name) => Resolution::Asset(name.clone()),
                None => Resolution::Missing,
            };
        }
        let stripped = strip_md(target);
        let folder = strip_vault_folder(target);
        let forms: Vec<&str> = [target, stripped].into_iter().chain(folder).collect();
        for form in &forms {
            if let Some(k) = self.by_key.get(&fold_name(form)) {
                return Resolution::Page(k.clone());
            }
        }
        for form in &forms {
            if let Some(keys) = self.by_name.get(&fold_name(form)) {
                return if keys.len() == 1 {
                    Resolution::Page(keys.iter().next().cloned().unwrap_or_default())
                } else {
                    Resolution::Ambiguous(keys.iter().cloned().collect())
                };
            }
        }
        for form in &forms[1..] {
            for key in [page_key(form), legacy_page_key(form)] {
                if let Some(k) = self.by_key.get(&fold_name(&key)) {
                    return Resolution::Page(k.clone());
                }
            }
        }
        for form in &forms[1..] {
            if let Some(keys) = self.by_match.get(&match_key(form)) {
                return if keys.len() == 1 {
                    Resolution::Page(keys.iter().next().cloned().unwrap_or_default())
                } else {
                    Resolution::Ambiguous(keys.iter().cloned().collect())
                };
            }
        }
        let base = stripped.rsplit('/').next().unwrap_or(stripped);
        if let Some(k) = self.by_key.get(&fold_name(base)) {
            return Resolution::Page(k.clone());
        }
        // An attachment named without one of the usual extensions.
        if let Some(name) = self.assets.get(&fold_name(base)) {
            return Resolution::Asset(name.clone());
        }
        Resolution::Missing
    }

    /// Resolves a link; a link with an empty target (`[[#heading]]`) resolves to `self_key`.
    ///
    /// A link whose heading fragment is empty or absent from the target's own name, written
    /// like `[[C#]]` or `[[F# language]]` (Obsidian's page `C` at heading ``), goes to the page
    /// whose key or name is the whole text (`C#`) when one exists: a name with `#` cannot be
    /// linked any other way from a model's text. [`Resolver::fragment_is_name`] tells callers
    /// that rewrite links.
    pub fn resolve_link(&self, link: &WikiLink, self_key: Option<&str>) -> Resolution {
        if let Some(whole) = self.whole_name(link) {
            return whole;
        }
        match (link.target.is_empty(), self_key) {
            (true, Some(k)) => Resolution::Page(k.to_string()),
            (true, None) => Resolution::Missing,
            _ => self.resolve(&link.target),
        }
    }

    /// Whether `link`'s `#…` is part of a page name (`[[C#]]` → the page `C#`), not a heading.
    pub fn fragment_is_name(&self, link: &WikiLink) -> bool {
        self.whole_name(link).is_some()
    }

    fn whole_name(&self, link: &WikiLink) -> Option<Resolution> {
        let Some(Fragment::Heading(h)) = &link.fragment else {
            return None;
        };
        if link.target.is_empty() || h.contains('#') {
            return None;
        }
        let whole = format!("{}#{h}", link.target);
        let hit = |k: &String| Resolution::Page(k.clone());
        if let Some(k) = self.by_key.get(&fold_name(&page_key(&whole))) {
            return Some(hit(k));
        }
        if let Some(keys) = self.by_name.get(&fold_name(&whole)) {
            if keys.len() == 1 {
                return keys.iter().next().map(hit);
            }
        }
        match self.by_match.get(&match_key(&whole)) {
            Some(keys) if keys.len() == 1 => keys.iter().next().map(hit),
            _ => None,
        }
    }
}

fn strip_md(target: &str) -> &str {
    let n = target.len();
    if n > 3 && target.is_char_boundary(n - 3) && target[n - 3..].eq_ignore_ascii_case(".md") {
        &target[..n - 3]
    } else {
        target
    }
}

/// The links between pages: for every page, the pages it links to and the pages that link to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkGraph {
    /// Page key → keys of the pages it links to (resolved, without itself), sorted.
    pub outgoing: BTreeMap<String, BTreeSet<String>>,
    /// Page key → keys of the pages that link to it (without itself), sorted. Every page has an
    /// entry, possibly empty.
    pub backlinks: BTreeMap<String, BTreeSet<String>>,
}

impl LinkGraph {
    /// Builds the graph of `pages` (links and embeds in their bodies).
    pub fn build(pages: &[Page]) -> Self {
        let resolver = Resolver::from_pages(pages);
        let mut g = LinkGraph::default();
        for p in pages {
            g.backlinks.entry(p.key.clone()).or_default();
            g.outgoing.entry(p.key.clone()).or_default();
        }
        for p in pages {
            for link in wikilinks::links(&p.body) {
                if let Resolution::Page(to) = resolver.resolve_link(&link, Some(&p.key)) {
                    if to != p.key {
                        g.outgoing
                            .entry(p.key.clone())
                            .or_default()
                            .insert(to.clone());
                        g.backlinks.entry(to).or_default().insert(p.key.clone());
                    }
                }
            }
        }
        g
    }

    /// Builds the graph from each page's link targets as written (`pages`: key and targets),
    /// resolved with `resolver`; a page's links to itself are left out.
    pub fn from_targets<'a>(
        resolver: &Resolver,
        pages: impl IntoIterator<Item = (&'a str, &'a [String])>,
    ) -> Self {
        let pages: Vec<(&str, &[String])> = pages.into_iter().collect();
        let mut g = LinkGraph::default();
        for (k, _) in &pages {
            g.backlinks.entry(k.to_string()).or_default();
            g.outgoing.entry(k.to_string()).or_default();
        }
        for (k, targets) in &pages {
            for t in targets.iter() {
                if let Resolution::Page(to) = resolver.resolve(t) {
                    if to != *k {
                        g.outgoing
                            .entry(k.to_string())
                            .or_default()
                            .insert(to.clone());
                        g.backlinks.entry(to).or_default().insert(k.to_string());
                    }
                }
            }
        }
        g
    }

    /// Keys of the pages linking to `key`, sorted.
    pub fn backlinks_of(&self, key: &str) -> Vec<String> {
        self.backlinks
            .get(key)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Replaces every link in `text` that resolves to nothing with its display text (plain text),
/// keeping links that resolve (directly or through an alias) and ambiguous ones. Returns the new
/// text and the targets that were unlinked, in order. For text an LLM wrote (field cases F18,
/// F32): a proposed link to a page that does not exist never becomes a dead link.
pub fn unlink_missing(
    text: &str,
    resolver: &Resolver,
    self_key: Option<&str>,
) -> (String, Vec<String>) {
    let mut removed = Vec::new();
    let out = wikilinks::rewrite(text, |l| match resolver.resolve_link(l, self_key) {
        Resolution::Missing => {
            removed.push(l.target.clone());
            Some(l.display())
        }
        _ => None,
    });
    (out, removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::keys::page_key;

    fn page(key: &str, title: &str, aliases: &[&str], body: &str) -> Page {
        Page {
            key: key.into(),
            title: title.into(),
            kind: crate::model::PageKind::Concept,
            summary: String::new(),
            aliases: aliases.iter().map(|s| s.to_string()).collect(),
            tags: vec![],
            sources: vec![],
            created: 0,
            updated: 0,
            body: body.into(),
            revision: 1,
            extra_frontmatter: String::new(),
            more_facts: vec![],
        }
    }

    fn f18_pages() -> Vec<Page> {
        vec![
            page("人工智能", "人工智能", &["Artificial Intelligence"], "AI."),
            page("机器学习", "机器学习", &[], "## 监督学习\n"),
            page("日本語", "日本語", &[], ""),
            page("中文", "中文", &[], ""),
            page(
                "Note",
                "Note",
                &[],
                "[[人工智能]] [[人工智能|AI]] [[机器学习#监督学习]] [[Artificial Intelligence]] [[Deep Learning]]",
            ),
        ]
    }

    #[test]
    fn f18_cjk_links_resolve_through_keys_and_aliases() {
        let pages = f18_pages();
        let r = Resolver::from_pages(&pages);
        let results: Vec<Resolution> = wikilinks::links(&pages[4].body)
            .iter()
            .map(|l| r.resolve_link(l, Some("Note")))
            .collect();
        assert_eq!(
            results,
            vec![
                Resolution::Page("人工智能".into()),
                Resolution::Page("人工智能".into()),
                Resolution::Page("机器学习".into()),
                Resolution::Page("人工智能".into()),
                Resolution::Missing,
            ]
        );
        // The writer turns the proposed [[Machine Learning]] into plain text.
        let (text, removed) = unlink_missing(
            "See [[Machine Learning]] and [[人工智能|AI]].",
            &r,
            Some("Note"),
        );
        assert_eq!(text, "See Machine Learning and [[人工智能|AI]].");
        assert_eq!(removed, vec!["Machine Learning".to_string()]);
    }

    #[test]
    fn f18_backlinks() {
        let g = LinkGraph::build(&f18_pages());
        assert_eq!(g.backlinks_of("人工智能"), vec!["Note".to_string()]);
        assert_eq!(g.backlinks_of("机器学习"), vec!["Note".to_string()]);
        assert!(g.backlinks_of("日本語").is_empty());
        assert_eq!(g.outgoing["Note"].len(), 2);
    }

    #[test]
    fn case_unicode_paths_and_ambiguity() {
        let pages = vec![
            page("Café", "Café", &["Coffee"], ""),
            page("Rust Ownership", "Rust: Ownership", &[], ""),
            page("Tokio", "Tokio", &["Runtime"], ""),
            page("async-std", "async-std", &["Runtime"], ""),
            page("Node.js", "Node.js", &[], ""),
        ];
        let r = Resolver::from_pages(&pages).with_assets(["diagram.png"]);
        let p = |k: &str| Resolution::Page(k.into());
        assert_eq!(r.resolve("cafe\u{301}"), p("Café"));
        assert_eq!(r.resolve("CAFÉ.md"), p("Café"));
        assert_eq!(r.resolve("wiki/concept/Café.md"), p("Café"));
        assert_eq!(r.resolve("coffee"), p("Café"));
        assert_eq!(r.resolve("Rust: Ownership"), p("Rust Ownership"));
        assert_eq!(r.resolve("rust   ownership"), p("Rust Ownership"));
        assert_eq!(r.resolve("Rust/Ownership"), p("Rust Ownership"));
        assert_eq!(r.resolve("node.js"), p("Node.js"));
        assert_eq!(
            r.resolve("runtime"),
            Resolution::Ambiguous(vec!["Tokio".into(), "async-std".into()])
        );
        assert_eq!(
            r.resolve("Diagram.PNG"),
            Resolution::Asset("diagram.png".into())
        );
        assert_eq!(r.resolve("missing.png"), Resolution::Missing);
        assert_eq!(r.resolve("Nothing"), Resolution::Missing);
    }

    #[test]
    fn names_differing_in_a_symbol_resolve_to_their_own_pages() {
        let titles = [
            "C",
            "C++",
            "C#",
            ".NET",
            "NET",
            "F#",
            "C++20",
            "Node.js",
            "AT&T",
            "Wi-Fi",
            "3.1 kg",
            "I/O",
            "I:O",
            "人工智能：导论",
        ];
        let pages: Vec<Page> = titles
            .iter()
            .map(|t| page(&page_key(t), t, &[], ""))
            .collect();
        let r = Resolver::from_pages(&pages);
        let p = |t: &str| Resolution::Page(page_key(t));
        for t in titles {
            assert_eq!(r.resolve(t), p(t), "{t} by its title");
            assert_eq!(r.resolve(&page_key(t)), p(t), "{t} by its key");
            assert_eq!(r.resolve(&t.to_lowercase()), p(t), "{t} lower case");
        }
        // Case, width, spaces and hyphens fold; nothing else does.
        assert_eq!(r.resolve("WiFi"), p("Wi-Fi"));
        assert_eq!(r.resolve("wi fi"), p("Wi-Fi"));
        assert_eq!(r.resolve("Ｃ＋＋"), p("C++"));
        assert_eq!(r.resolve("Ｃ＃"), p("C#"));
        assert_eq!(r.resolve("．ＮＥＴ"), p(".NET"));
        assert_eq!(r.resolve("3.1kg"), p("3.1 kg"));
        assert_eq!(r.resolve("AT&T Inc."), p("AT&T"));
        assert_eq!(r.resolve("人工智能:导论"), p("人工智能：导论"));
        assert_eq!(r.resolve("Nodejs"), Resolution::Missing);
        assert_eq!(r.resolve("ATT"), Resolution::Missing);
        assert_eq!(r.resolve("IO"), Resolution::Missing);
        assert_eq!(r.resolve("C+"), Resolution::Missing);
        // `[[C#]]` is the page C#, not a heading of C; `[[C#Intro]]` is still a heading.
        let link = |s: &str| wikilinks::links(s).remove(0);
        assert_eq!(r.resolve_link(&link("[[C#]]"), None), p("C#"));
        assert_eq!(r.resolve_link(&link("[[F#]]"), None), p("F#"));
        assert!(r.fragment_is_name(&link("[[c#]]")));
        assert_eq!(r.resolve_link(&link("[[C#Intro]]"), None), p("C"));
        assert!(!r.fragment_is_name(&link("[[C#Intro]]")));
    }

    #[test]
    fn old_keys_keep_resolving_and_vault_folders_are_ignored() {
        let pages = vec![
            page("I O", "I/O", &["I:O"], ""),
            page("OpenAI", "OpenAI", &[], ""),
            page("Tokio", "Tokio", &[], ""),
            page("Backpressure (source)", "Backpressure", &[], ""),
            page("O", "O", &[], ""),
        ];
        let r = Resolver::from_pages(&pages);
        let p = |k: &str| Resolution::Page(k.into());
        assert_eq!(r.resolve("I/O"), p("I O"));
        assert_eq!(r.resolve("I O"), p("I O"));
        assert_eq!(r.resolve("I：O"), p("I O"));
        // Field case F46: folder prefixes, `.md`, plural folders and case.
        for t in [
            "entity/OpenAI",
            "wiki/entity/OpenAI.md",
            "Entities/openai",
            "Open AI",
        ] {
            assert_eq!(r.resolve(t), p("OpenAI"), "{t}");
        }
        for t in [
            "wiki/concept/Tokio",
            "Tokio.md",
            "concepts/Tokio",
            "CONCEPT/tokio.md",
        ] {
            assert_eq!(r.resolve(t), p("Tokio"), "{t}");
        }
        assert_eq!(r.resolve("Backpressure"), p("Backpressure (source)"));
        assert_eq!(r.resolve("notes/Tokio"), p("Tokio"));
        assert_eq!(strip_vault_folder("analyses/Why"), Some("Why"));
        assert_eq!(strip_vault_folder("concept/"), None);
    }
}
