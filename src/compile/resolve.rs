//! Resolve: map extracted entity and concept names onto pages (step 2 of the compile pipeline).
//!
//! Names match when their [`match_key`]s are equal (the match rule of [`crate::markdown::keys`]):
//! case and width folded (NFKC), whitespace removed, hyphens and underscores between letters
//! removed, and trailing legal forms (`Inc.`, `Ltd`, `GmbH`, `有限公司` …) dropped. So `OpenAI`,
//! `Open AI`, `openai` and `OpenAI Inc.` are one entity, while `OpenAI Foundation` is another
//! (field case F30), and every other symbol counts: `C`, `C++` and `C#` are three entities, and
//! so are `I/O` and `I:O`. Nothing is merged on similarity alone; near-duplicates are left to
//! lint.
//!
//! *Invariant:* resolution is order-independent: the same set of mentions gives the same groups,
//! titles, kinds and aliases whatever order the sources were extracted in.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::PageKind;

pub use crate::markdown::keys::{match_key, LEGAL_FORMS};

/// Splits `Name (Alias)` / `名称（别名）` into the name and the parenthesised alias.
pub fn split_parenthetical(name: &str) -> (String, Option<String>) {
    let t = name.trim();
    for (open, close) in [('(', ')'), ('（', '）')] {
        if t.ends_with(close) {
            if let Some(i) = t.rfind(open) {
                let inner = t[i + open.len_utf8()..t.len() - close.len_utf8()].trim();
                let outer = t[..i].trim();
                if !inner.is_empty() && !outer.is_empty() {
                    return (outer.to_string(), Some(inner.to_string()));
                }
            }
        }
    }
    (t.to_string(), None)
}

/// One mention of an entity or concept in one source's extraction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// The name as written.
    pub name: String,
    /// Entity or concept (any other kind is treated as concept).
    pub kind: PageKind,
    /// Other names given for it.
    pub aliases: Vec<String>,
    /// The source it came from.
    pub source_key: String,
}

/// An existing page as resolution sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownPage {
    /// Page key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Aliases.
    pub aliases: Vec<String>,
    /// Kind.
    pub kind: PageKind,
}

/// Where a group of mentions goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An existing page (by key).
    Existing(String),
    /// A new page with this title and kind.
    New {
        /// Canonical title: the most frequent surface form (ties: the smallest string).
        title: String,
        /// Majority kind (ties: entity before concept).
        kind: PageKind,
    },
}

/// One resolved entity: all its mentions, where they go, and the aliases they add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Where the mentions go.
    pub target: Target,
    /// Every surface form seen (names and aliases), sorted, deduplicated.
    pub names: Vec<String>,
    /// The sources that mention it, sorted.
    pub sources: Vec<String>,
    /// Other existing pages that also matched (an ambiguity for lint), sorted.
    pub also_matched: Vec<String>,
}

struct UnionFind(Vec<usize>);
impl UnionFind {
    fn find(&mut self, i: usize) -> usize {
        let mut r = i;
        while self.0[r] != r {
            r = self.0[r];
        }
        let mut j = i;
        while self.0[j] != r {
            let next = self.0[j];
            self.0[j] = r;
            j = next;
        }
        r
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.0[hi] = lo;
        }
    }
}

/// Resolves every mention of a batch against the existing pages.
///
/// Mentions whose names or aliases share a [`match_key`] form one group (union-find over names);
/// a group whose keys match existing pages' titles, keys or aliases goes to the existing page (the
/// smallest key when several match, the others reported in `also_matched`); otherwise it becomes a
/// new page. Source and analysis pages never absorb entities. The output is sorted by target.
pub fn resolve(mentions: &[Mention], pages: &[KnownPage]) -> Vec<Resolved> {
    let mut by_key: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in pages
        .iter()
        .filter(|p| !matches!(p.kind, PageKind::Source | PageKind::Analysis))
    {
        for n in std::iter::once(&p.title)
            .chain(std::iter::once(&p.key))
            .chain(&p.aliases)
        {
            let k = match_key(n);
            if !k.is_empty() {
                by_key.entry(k).or_default().insert(p.key.clone());
            }
        }
    }

    // Union mentions that share any match key (through names or aliases).
    let mut uf = UnionFind((0..mentions.len()).collect());
    let mut first_with_key: BTreeMap<String, usize> = BTreeMap::new();
    let mut mention_keys: Vec<Vec<String>> = Vec::with_capacity(mentions.len());
    for (i, m) in mentions.iter().enumerate() {
        let (name, paren) = split_parenthetical(&m.name);
        let mut keys: Vec<String> = std::iter::once(name)
            .chain(paren)
            .chain(m.aliases.iter().cloned())
            .map(|n| match_key(&n))
            .filter(|k| !k.is_empty())
            .collect();
        crate::util::sort(&mut keys);
        keys.dedup();
        for k in &keys {
            match first_with_key.get(k) {
                Some(&j) => uf.union(i, j),
                None => {
                    first_with_key.insert(k.clone(), i);
                }
            }
        }
        mention_keys.push(keys);
    }
    // Mentions that match the same existing page are one group too.
    let mut first_for_page: BTreeMap<String, usize> = BTreeMap::new();
    for (i, keys) in mention_keys.iter().enumerate() {
        for k in keys {
            for page in by_key.get(k).into_iter().flatten() {
                match first_for_page.get(page) {
                    Some(&j) => uf.union(i, j),
                    None => {
                        first_for_page.insert(page.clone(), i);
                    }
                }
            }
        }
    }

    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, keys) in mention_keys.iter().enumerate() {
        if keys.is_empty() {
            continue;
        }
        let root = uf.find(i);
        groups.entry(root).or_default().push(i);
    }

    let mut out: Vec<Resolved> = groups
        .into_values()
        .map(|members| {
            let mut matched: BTreeSet<String> = BTreeSet::new();
            let mut names: BTreeSet<String> = BTreeSet::new();
            let mut sources: BTreeSet<String> = BTreeSet::new();
            let mut counts: BTreeMap<String, usize> = BTreeMap::new();
            let (mut entity_votes, mut concept_votes) = (0usize, 0usize);
            for &i in &members {
                let m = &mentions[i];
                let (name, paren) = split_parenthetical(&m.name);
                *counts.entry(name.clone()).or_default() += 1;
                names.insert(name);
                names.extend(paren);
                names.extend(
                    m.aliases
                        .iter()
                        .map(|a| a.trim().to_string())
                        .filter(|a| !a.is_empty()),
                );
                sources.insert(m.source_key.clone());
                if m.kind == PageKind::Entity {
                    entity_votes += 1;
                } else {
                    concept_votes += 1;
                }
                for k in &mention_keys[i] {
                    matched.extend(by_key.get(k).into_iter().flatten().cloned());
                }
            }
            let target = match matched.iter().next() {
                Some(first) => Target::Existing(first.clone()),
                None => {
                    // Most frequent surface form; ties broken by the smallest string.
                    let title = counts
                        .iter()
                        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
                        .map(|(n, _)| n.clone())
                        .unwrap_or_default();
                    let kind = if entity_votes >= concept_votes {
                        PageKind::Entity
                    } else {
                        PageKind::Concept
                    };
                    Target::New { title, kind }
                }
            };
            let also_matched = matched.into_iter().skip(1).collect();
            Resolved {
                target,
                names: names.into_iter().collect(),
                sources: sources.into_iter().collect(),
                also_matched,
            }
        })
        .collect();
    crate::util::sort_by_key(&mut out, |r| target_sort_key(&r.target));
    out
}

fn target_sort_key(t: &Target) -> (u8, String) {
    match t {
        Target::Existing(k) => (0, k.clone()),
        Target::New { title, .. } => (1, title.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, kind: PageKind, source: &str) -> Mention {
        Mention {
            name: name.into(),
            kind,
            aliases: vec![],
            source_key: source.into(),
        }
    }

    #[test]
    fn f30_variants_of_one_entity_resolve_to_one_page() {
        let mentions = vec![
            m("OpenAI", PageKind::Entity, "S1"),
            m("Open AI", PageKind::Concept, "S2"),
            m("OpenAI Inc.", PageKind::Entity, "S3"),
            m("openai", PageKind::Entity, "S3"),
            m("OpenAI", PageKind::Concept, "S4"),
            m("OpenAI Foundation", PageKind::Entity, "S5"),
        ];
        let r = resolve(&mentions, &[]);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0].target,
            Target::New {
                title: "OpenAI".into(),
                kind: PageKind::Entity
            }
        );
        assert_eq!(r[0].sources, vec!["S1", "S2", "S3", "S4"]);
        assert_eq!(
            r[0].names,
            vec!["Open AI", "OpenAI", "OpenAI Inc.", "openai"]
        );
        assert_eq!(
            r[1].target,
            Target::New {
                title: "OpenAI Foundation".into(),
                kind: PageKind::Entity
            }
        );

        // Order does not matter.
        let mut reversed = mentions.clone();
        reversed.reverse();
        assert_eq!(resolve(&reversed, &[]), r);
    }

    #[test]
    fn existing_pages_absorb_mentions_through_titles_and_aliases() {
        let pages = vec![
            KnownPage {
                key: "人工智能".into(),
                title: "人工智能".into(),
                aliases: vec!["Artificial Intelligence".into()],
                kind: PageKind::Concept,
            },
            KnownPage {
                key: "OpenAI".into(),
                title: "OpenAI".into(),
                aliases: vec![],
                kind: PageKind::Entity,
            },
            KnownPage {
                key: "Summary of X".into(),
                title: "Summary of X".into(),
                aliases: vec![],
                kind: PageKind::Source,
            },
        ];
        let r = resolve(
            &[
                m("artificial intelligence", PageKind::Concept, "S"),
                m("人工智能（AI）", PageKind::Concept, "T"),
                m("OPEN AI", PageKind::Concept, "S"),
                m("Summary of X", PageKind::Concept, "S"),
            ],
            &pages,
        );
        let targets: Vec<_> = r.iter().map(|x| x.target.clone()).collect();
        assert_eq!(
            targets,
            vec![
                Target::Existing("OpenAI".into()),
                Target::Existing("人工智能".into()),
                Target::New {
                    title: "Summary of X".into(),
                    kind: PageKind::Concept
                },
            ]
        );
        assert_eq!(
            r[1].names,
            vec!["AI", "artificial intelligence", "人工智能"]
        );
        assert_eq!(r[1].sources, vec!["S", "T"]);
    }

    #[test]
    fn match_keys() {
        assert_eq!(
            match_key("Rust (programming language)"),
            "rust(programminglanguage)"
        );
        assert_eq!(
            split_parenthetical("Rust (programming language)"),
            ("Rust".into(), Some("programming language".into()))
        );
        assert_eq!(match_key("字节跳动有限公司"), "字节跳动");
        assert_eq!(match_key("Costco"), "costco");
        assert_eq!(match_key("Co"), "co");
        assert_eq!(match_key("café"), match_key("CAFÉ"));
        assert_eq!(match_key("---"), "");
        assert_eq!(match_key("Tokio-rs"), "tokiors");
    }

    #[test]
    fn names_that_differ_only_in_symbols_are_different_entities() {
        let names = [
            "C", "C++", "C#", "I/O", "I:O", ".NET", "NET", "F#", "C++20", "Node.js", "AT&T",
            "3.1 kg",
        ];
        let mentions: Vec<Mention> = names.iter().map(|n| m(n, PageKind::Concept, "S")).collect();
        let r = resolve(&mentions, &[]);
        let titles: BTreeSet<String> = r
            .iter()
            .map(|x| match &x.target {
                Target::New { title, .. } => title.clone(),
                Target::Existing(k) => k.clone(),
            })
            .collect();
        assert_eq!(titles.len(), names.len(), "{titles:?}");
        // What folds still folds: one entity each.
        let same = [
            m("Wi-Fi", PageKind::Concept, "S1"),
            m("WiFi", PageKind::Concept, "S2"),
            m("wi fi", PageKind::Concept, "S3"),
            m("Ｃ＋＋", PageKind::Concept, "S1"),
            m("C++", PageKind::Concept, "S2"),
            m("AT&T Inc.", PageKind::Entity, "S1"),
            m("AT&T", PageKind::Entity, "S2"),
        ];
        let r = resolve(&same, &[]);
        assert_eq!(r.len(), 3, "{r:?}");
        assert!(r.iter().all(|x| x.sources.len() >= 2), "{r:?}");
        // An existing page matched by a full-width name or its key's stand-in.
        let pages = vec![
            KnownPage {
                key: "C＃".into(),
                title: "C#".into(),
                aliases: vec![],
                kind: PageKind::Concept,
            },
            KnownPage {
                key: "C".into(),
                title: "C".into(),
                aliases: vec![],
                kind: PageKind::Concept,
            },
        ];
        let r = resolve(&[m("Ｃ＃", PageKind::Concept, "S")], &pages);
        assert_eq!(r[0].target, Target::Existing("C＃".into()));
        assert!(r[0].also_matched.is_empty());
    }

    #[test]
    fn ambiguous_existing_matches_are_reported() {
        let pages = vec![
            KnownPage {
                key: "AI".into(),
                title: "AI".into(),
                aliases: vec![],
                kind: PageKind::Concept,
            },
            KnownPage {
                key: "Adobe Illustrator".into(),
                title: "Adobe Illustrator".into(),
                aliases: vec!["AI".into()],
                kind: PageKind::Entity,
            },
        ];
        let r = resolve(&[m("ai", PageKind::Concept, "S")], &pages);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].target, Target::Existing("AI".into()));
        assert_eq!(r[0].also_matched, vec!["Adobe Illustrator"]);
    }
}
