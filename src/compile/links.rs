//! Links the compile writes: every `[[link]]` in a compiled body resolves, or becomes plain text
//! (field cases F18, F32). A self-link becomes plain text too.
//!
//! Parsing, resolution and writing are the markdown module's ([`wikilinks::rewrite`],
//! [`Resolver`], [`wikilinks::write_link`]); this module applies the compile's policy: a link that
//! resolves is rewritten to Decision 6's form (`[[key]]`, or `[[key|shown text]]`, keeping its
//! alias text and heading or block anchor, the pipe escaped in table rows; a vault path or `.md`
//! written as the target shows as the name: `[[concepts/Tokio]]` → `[[Tokio]]`, field case F46), a missing target or
//! the page itself becomes its display text, an ambiguous one is left for lint.

use crate::markdown::resolve::{Resolution, Resolver};
use crate::markdown::wikilinks::{self, WikiLink};

fn rewrite_one(link: &WikiLink, resolver: &Resolver, self_key: &str) -> Option<String> {
    if link.embed {
        return None;
    }
    match resolver.resolve_link(link, Some(self_key)) {
        Resolution::Page(key) if key == self_key => Some(link.display()),
        Resolution::Page(key) => {
            // `[[C#]]`: the `#` belongs to the name, not to a heading.
            let whole = resolver.fragment_is_name(link);
            let (target, fragment) = match (&link.fragment, whole) {
                (Some(wikilinks::Fragment::Heading(h)), true) => {
                    (format!("{}#{h}", link.target).trim().to_string(), None)
                }
                _ => (link.target.clone(), link.fragment.as_ref()),
            };
            // A vault path written as the target (`wiki/concept/Tokio`, `Tokio.md`) shows as the
            // name, not the path; a shown text equal to the key needs no alias.
            let shown = match &link.alias {
                Some(a) => a.trim().to_string(),
                None => crate::markdown::resolve::strip_vault_folder(&target)
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        let t = target.as_str();
                        t.strip_suffix(".md").unwrap_or(t).to_string()
                    }),
            };
            let alias = (shown != key).then_some(shown);
            let written =
                wikilinks::write_link(false, &key, fragment, alias.as_deref(), link.in_table);
            let original = wikilinks::write_link(
                false,
                &link.target,
                link.fragment.as_ref(),
                link.alias.as_deref(),
                link.in_table,
            );
            (written != original).then_some(written)
        }
        Resolution::Missing | Resolution::Asset(_) => Some(link.display()),
        Resolution::Ambiguous(_) => None,
    }
}

/// Applies the compile's link policy (module docs) to `body`.
pub fn fix_links(body: &str, resolver: &Resolver, self_key: &str) -> String {
    wikilinks::rewrite(body, |l| rewrite_one(l, resolver, self_key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver() -> Resolver {
        let none: Vec<String> = vec![];
        let rust = vec!["Rust language".to_string()];
        let ai = vec!["Artificial Intelligence".to_string()];
        Resolver::new([
            ("Tokio", "Tokio", none.as_slice()),
            ("Rust", "Rust", rust.as_slice()),
            ("Futures", "Futures", none.as_slice()),
            ("Async IO", "Async IO", none.as_slice()),
            ("人工智能", "人工智能", ai.as_slice()),
        ])
    }

    #[test]
    fn f32_unknown_targets_become_text_and_self_links_go() {
        let body = "[[Tokio]] [[Rust]] [[Groundwater contamination]] [[Async IO]] [[Epoll]]";
        assert_eq!(
            fix_links(body, &resolver(), "Async IO"),
            "[[Tokio]] [[Rust]] Groundwater contamination Async IO Epoll"
        );
    }

    #[test]
    fn f18_links_resolve_through_aliases_and_case() {
        let body = "[[artificial intelligence]] [[人工智能|AI]] [[Machine Learning]] [[rust#Ownership|own]] `[[Epoll]]` ![[diagram.png]]";
        assert_eq!(
            fix_links(body, &resolver(), "X"),
            "[[人工智能|artificial intelligence]] [[人工智能|AI]] Machine Learning [[Rust#Ownership|own]] `[[Epoll]]` ![[diagram.png]]"
        );
    }

    #[test]
    fn links_to_names_with_symbols_reach_their_own_pages() {
        let none: Vec<String> = vec![];
        let r = Resolver::new([
            ("C", "C", none.as_slice()),
            ("C++", "C++", none.as_slice()),
            ("C＃", "C#", none.as_slice()),
            ("I／O", "I/O", none.as_slice()),
            ("I：O", "I:O", none.as_slice()),
            ("Wi-Fi", "Wi-Fi", none.as_slice()),
        ]);
        let body =
            "[[C]] [[C++]] [[C#]] [[C＃|C#]] [[I/O]] [[I:O]] [[WiFi]] [[Ｃ＋＋]] [[C#|sharp]]";
        assert_eq!(
            fix_links(body, &r, "X"),
            "[[C]] [[C++]] [[C＃|C#]] [[C＃|C#]] [[I／O|I/O]] [[I：O|I:O]] [[Wi-Fi|WiFi]] [[C++|Ｃ＋＋]] [[C＃|sharp]]"
        );
    }

    #[test]
    fn f46_vault_paths_become_canonical_links() {
        let body = "[[entity/Tokio|Tokio]] [[wiki/concept/Tokio]] [[Tokio.md]] [[concepts/tokio]] [[Rust|Rust]] [[Futures.md#Polling]]";
        assert_eq!(
            fix_links(body, &resolver(), "X"),
            "[[Tokio]] [[Tokio]] [[Tokio]] [[Tokio|tokio]] [[Rust]] [[Futures#Polling]]"
        );
    }

    #[test]
    fn table_pipes_and_fences_survive() {
        let body = "| a | b |\n|---|---|\n| [[Rust\\|Rust lang]] | fast |\n\n```\n[[Nope]]\n```\n\n| a | b |\n|---|---|\n| [[Nope\\|x]] | y |";
        assert_eq!(
            fix_links(body, &resolver(), "X"),
            "| a | b |\n|---|---|\n| [[Rust\\|Rust lang]] | fast |\n\n```\n[[Nope]]\n```\n\n| a | b |\n|---|---|\n| x | y |"
        );
    }
}
