//! Links, images and attachments: the HTML of a wikilink (resolved, missing, ambiguous,
//! malformed), of a markdown link by its URL class ([`classify_url`]), and of an image or an
//! attachment. *Invariant:* nothing here emits `src`: an attachment image is `data-asset`, a
//! remote image a link.

use std::fmt::Write as _;

use pulldown_cmark::LinkType;

use super::url::{classify_url, pct_encode, Url};
use super::{escape, heading_slug, push_unique, Ambiguity, AssetRef, Renderer};
use crate::markdown::resolve::{attachment_extension, Resolution};
use crate::markdown::wikilinks::{Fragment, Item, Problem};

impl Renderer<'_, '_> {
    pub(super) fn item_html(&mut self, n: usize) -> Option<String> {
        let item = self.items.get(n)?;
        let link = match item {
            Item::Malformed(m) => {
                push_unique(&mut self.out.malformed, &m.text);
                let why = match m.problem {
                    Problem::Unclosed => "unclosed",
                    Problem::Empty => "empty",
                    Problem::EscapedClose => "escaped closing brackets",
                    Problem::Bracket => "bracket in the target",
                };
                return Some(format!(
                    "<span class=\"wikilink malformed\" title=\"Malformed link ({why})\">{}</span>",
                    escape(&m.text)
                ));
            }
            Item::Link(l) => l,
        };
        // `[[C#]]` names the page `C#`: no heading, and the name shown whole.
        let whole = self.ctx.resolver.fragment_is_name(link);
        let display = match (&link.fragment, &link.alias, whole) {
            (Some(Fragment::Heading(h)), None, true) => escape(&format!("{}#{h}", link.target)),
            _ => escape(&link.display()),
        };
        Some(
            match self.ctx.resolver.resolve_link(link, self.ctx.self_key) {
                Resolution::Page(key) => {
                    let mut a = format!(
                        "<a class=\"wikilink{}\" href=\"#/page/{}\" data-page=\"{}\"",
                        if link.embed { " embed" } else { "" },
                        pct_encode(&key),
                        escape(&key)
                    );
                    match &link.fragment {
                        Some(Fragment::Heading(_)) if whole => {}
                        Some(Fragment::Heading(h)) => {
                            let _ = write!(a, " data-heading=\"{}\"", escape(&heading_slug(h)));
                        }
                        Some(Fragment::Block(b)) => {
                            let _ = write!(a, " data-block=\"{}\"", escape(b));
                        }
                        None => {}
                    }
                    format!("{a}>{display}</a>")
                }
                Resolution::Asset(name) => match self.asset(&name) {
                    Some(asset) => {
                        let alt = link.alias.clone().unwrap_or_else(|| asset.name.clone());
                        self.asset_html(&asset, &alt, link.embed)
                    }
                    None => self.missing(&link.target, &display, true),
                },
                Resolution::Ambiguous(candidates) => {
                    let title = format!("Ambiguous link: {}", candidates.join(", "));
                    let html = format!(
                    "<span class=\"wikilink ambiguous\" title=\"{}\" data-candidates=\"{}\">{display}</span>",
                    escape(&title),
                    escape(&candidates.join("\n"))
                );
                    if !self.out.ambiguous.iter().any(|a| a.target == link.target) {
                        self.out.ambiguous.push(Ambiguity {
                            target: link.target.clone(),
                            candidates,
                        });
                    }
                    html
                }
                Resolution::Missing => {
                    let attachment = attachment_extension(&link.target).is_some();
                    self.missing(&link.target, &display, attachment)
                }
            },
        )
    }

    fn missing(&mut self, target: &str, display: &str, attachment: bool) -> String {
        push_unique(&mut self.out.missing, target);
        if attachment {
            format!("<span class=\"asset missing\" title=\"Missing attachment\">{display}</span>")
        } else {
            format!(
                "<span class=\"wikilink missing\" title=\"{}\">{display}</span>",
                escape(&format!("No page named “{target}”"))
            )
        }
    }

    fn asset(&self, name: &str) -> Option<AssetRef> {
        self.ctx.assets.iter().find(|a| a.name == name).cloned()
    }

    fn asset_html(&mut self, asset: &AssetRef, alt: &str, embed: bool) -> String {
        push_unique(&mut self.out.assets, &asset.sha256);
        if embed && asset.mime.starts_with("image/") {
            format!(
                "<img class=\"asset\" data-asset=\"{}\" data-name=\"{}\" alt=\"{}\">",
                escape(&asset.sha256),
                escape(&asset.name),
                escape(alt)
            )
        } else {
            format!(
                "<a class=\"asset\" data-asset=\"{}\" data-name=\"{}\">{}</a>",
                escape(&asset.sha256),
                escape(&asset.name),
                escape(alt)
            )
        }
    }

    /// Opening HTML of a markdown link and the matching closing tag.
    pub(super) fn link_open(
        &mut self,
        link_type: LinkType,
        dest: &str,
        title: &str,
    ) -> (String, &'static str) {
        let dest = if link_type == LinkType::Email {
            format!("mailto:{dest}")
        } else {
            dest.to_string()
        };
        let title_attr = if title.is_empty() {
            String::new()
        } else {
            format!(" title=\"{}\"", escape(title))
        };
        match classify_url(&dest) {
            Url::External(u) => (
                format!(
                    "<a href=\"{}\" rel=\"noopener noreferrer nofollow\" target=\"_blank\"{title_attr}>",
                    escape(&u)
                ),
                "</a>",
            ),
            Url::Fragment(f) => (format!("<a href=\"{}\"{title_attr}>", escape(&f)), "</a>"),
            Url::Relative(path) => match self.ctx.resolver.resolve(&path) {
                Resolution::Page(key) => (
                    format!(
                        "<a class=\"wikilink\" href=\"#/page/{}\" data-page=\"{}\"{title_attr}>",
                        pct_encode(&key),
                        escape(&key)
                    ),
                    "</a>",
                ),
                Resolution::Asset(name) => match self.asset(&name) {
                    Some(a) => {
                        push_unique(&mut self.out.assets, &a.sha256);
                        (
                            format!(
                                "<a class=\"asset\" data-asset=\"{}\" data-name=\"{}\"{title_attr}>",
                                escape(&a.sha256),
                                escape(&a.name)
                            ),
                            "</a>",
                        )
                    }
                    None => self.missing_link(&path),
                },
                _ => self.missing_link(&path),
            },
            Url::Unsafe => (
                "<span class=\"link-removed\" title=\"Link removed: unsafe or unsupported URL\">"
                    .to_string(),
                "</span>",
            ),
        }
    }

    fn missing_link(&mut self, path: &str) -> (String, &'static str) {
        push_unique(&mut self.out.missing, path);
        (
            format!(
                "<span class=\"wikilink missing\" title=\"{}\">",
                escape(&format!("No page named “{path}”"))
            ),
            "</span>",
        )
    }

    pub(super) fn image(&mut self, dest: &str, title: &str, alt: &str) -> String {
        let title_attr = if title.is_empty() {
            String::new()
        } else {
            format!(" title=\"{}\"", escape(title))
        };
        match classify_url(dest) {
            Url::External(u) if !u.to_ascii_lowercase().starts_with("mailto:") => format!(
                "<a class=\"remote-image\" href=\"{}\" rel=\"noopener noreferrer nofollow\" target=\"_blank\"{title_attr}>{}</a>",
                escape(&u),
                escape(if alt.is_empty() { &u } else { alt })
            ),
            Url::Relative(path) => match self.ctx.resolver.resolve(&path) {
                Resolution::Asset(name) => match self.asset(&name) {
                    Some(a) => {
                        let alt = if alt.is_empty() { a.name.clone() } else { alt.to_string() };
                        self.asset_html(&a, &alt, true)
                    }
                    None => self.missing(&path, &escape(alt), true),
                },
                _ => {
                    let shown = if alt.is_empty() { path.clone() } else { alt.to_string() };
                    self.missing(&path, &escape(&shown), true)
                }
            },
            _ => format!(
                "<span class=\"image-removed\" title=\"Image removed: unsafe or unsupported URL\">{}</span>",
                escape(alt)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::ctx_render;
    use super::super::*;

    #[test]
    fn wikilinks_render_resolved_missing_ambiguous_and_malformed() {
        let out =
            ctx_render("[[rust lang]] [[Nope]] [[机器学习#监督 学习|ML]] [[Rust\\]] [[#Intro]]");
        assert!(
            out.html.contains(
                "<a class=\"wikilink\" href=\"#/page/Rust\" data-page=\"Rust\">rust lang</a>"
            ),
            "{}",
            out.html
        );
        assert!(out.html.contains(
            "<span class=\"wikilink missing\" title=\"No page named “Nope”\">Nope</span>"
        ));
        assert!(out.html.contains("href=\"#/page/%E6%9C%BA%E5%99%A8%E5%AD%A6%E4%B9%A0\" data-page=\"机器学习\" data-heading=\"监督-学习\">ML</a>"), "{}", out.html);
        assert!(out.html.contains("<span class=\"wikilink malformed\" title=\"Malformed link (escaped closing brackets)\">[[Rust\\]]</span>"));
        assert!(out
            .html
            .contains("data-page=\"Rust\" data-heading=\"intro\">Intro</a>"));
        assert_eq!(out.missing, vec!["Nope".to_string()]);
        assert_eq!(out.malformed, vec!["[[Rust\\]]".to_string()]);
        let resolver = Resolver::new([
            ("A", "A", &["X".to_string()][..]),
            ("B", "B", &["x".to_string()][..]),
        ]);
        let amb = render(
            "[[X]]",
            &RenderContext {
                resolver: &resolver,
                self_key: None,
                assets: &[],
            },
        );
        assert_eq!(
            amb.ambiguous,
            vec![Ambiguity {
                target: "X".into(),
                candidates: vec!["A".into(), "B".into()]
            }]
        );
        assert!(amb.html.contains("class=\"wikilink ambiguous\""));
    }

    #[test]
    fn f15_table_links_render_as_two_cells() {
        let out = ctx_render("| Lang | Note |\n|---|---|\n| [[Rust\\|Rust lang]] | fast |\n");
        assert_eq!(out.html.matches("<td>").count(), 2, "{}", out.html);
        assert!(out.html.contains(
            "<td><a class=\"wikilink\" href=\"#/page/Rust\" data-page=\"Rust\">Rust lang</a></td>"
        ));
    }

    #[test]
    fn attachments_and_remote_images_never_fetch() {
        let out = ctx_render("![[diagram.png]] ![[paper.pdf]] ![[missing.png]] ![chart](raw/assets/diagram.png) ![remote](https://cdn.example/x.png) [pdf](paper.pdf)");
        let h = &out.html;
        assert!(h.contains(&format!("<img class=\"asset\" data-asset=\"{}\" data-name=\"diagram.png\" alt=\"diagram.png\">", "ab".repeat(32))), "{h}");
        assert!(
            h.contains(&format!(
                "<img class=\"asset\" data-asset=\"{}\" data-name=\"diagram.png\" alt=\"chart\">",
                "ab".repeat(32)
            )),
            "{h}"
        );
        assert!(h.contains(&format!(
            "<a class=\"asset\" data-asset=\"{}\" data-name=\"paper.pdf\">paper.pdf</a>",
            "cd".repeat(32)
        )));
        assert!(h.contains(
            "<span class=\"asset missing\" title=\"Missing attachment\">missing.png</span>"
        ));
        assert!(h.contains("<a class=\"remote-image\" href=\"https://cdn.example/x.png\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">remote</a>"));
        assert!(!h.contains("src="), "{h}");
        assert_eq!(out.assets, vec!["ab".repeat(32), "cd".repeat(32)]);
    }
}
