//! Markdown → safe HTML (pulldown-cmark: CommonMark, tables, footnotes, task lists,
//! strikethrough).
//!
//! Sanitising is an event filter (Decision 11), not a second parser over the HTML:
//! - raw HTML (blocks and inline) becomes text: `<script>` shows as `&lt;script&gt;`. The one
//!   exception is an inline `<a href="…">…</a>` pair in one block whose href passes the link rule
//!   below: it is rebuilt as a fresh `<a>` carrying only that href (every other attribute, such as
//!   `onclick`, is dropped), so clipped links keep working;
//! - a link keeps its `href` only for `http:`, `https:` and `mailto:` (scheme checked after removing
//!   tabs and newlines and trimming controls and spaces, as browsers do) and for `#fragments`;
//!   `javascript:`, `data:`, `vbscript:`, any other scheme and protocol-relative `//host` links
//!   lose the link and keep their text (`<span class="link-removed">`);
//! - relative links (`[x](Rust.md)`) resolve like wikilinks, to a page or an attachment;
//! - the renderer never makes the browser fetch anything by itself (Decision 15): a remote image
//!   renders as a link (`<a class="remote-image">`), an attachment image as
//!   `<img data-asset="<sha256>">` *without* `src` (the app loads the bytes with `asset(sha)` and
//!   sets a `blob:` URL), a `data:` image not at all;
//! - wikilinks become `<a class="wikilink" href="#/page/<key>" data-page="<key>">`, missing ones
//!   `<span class="wikilink missing">`, ambiguous ones `<span class="wikilink ambiguous">`,
//!   malformed ones `<span class="wikilink malformed">`; alias text is always HTML-escaped;
//! - `> [!type] Title` callouts (Decision 4's `> [!contradiction]`) become
//!   `<div class="callout" data-callout="type">`; footnote citations (Decision 3) render as
//!   pulldown-cmark's footnote references and definitions; headings get `id`s
//!   ([`heading_slug`]).
//!
//! *Invariant:* every attribute value and text node in the output is escaped; the only HTML not
//! produced by pulldown-cmark from markdown structure is built in this module from escaped parts.
//! Sanitising happens at render time; stored markdown is never changed by it.
//!
//! This file holds the event filter (text, headings, callouts); `links` the HTML of links,
//! images and attachments, `raw_html` the rebuilt raw anchors, `url` the URL rule.

use std::collections::HashMap;
use std::fmt::Write as _;

use pulldown_cmark::{CowStr, Event, Parser, Tag, TagEnd, TextMergeStream};

use crate::markdown::resolve::Resolver;
use crate::markdown::wikilinks::{self, Item};

mod links;
mod raw_html;
mod url;

pub use url::pct_encode;

use raw_html::raw_anchors;

/// An attachment the renderer can show: its name in `raw/assets/`, SHA-256 and MIME type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssetRef {
    /// File name (unique case-insensitively).
    pub name: String,
    /// SHA-256 (hex) of the bytes.
    pub sha256: String,
    /// MIME type, e.g. `image/png`.
    pub mime: String,
}

/// What the renderer needs besides the markdown.
#[derive(Debug, Clone, Copy)]
pub struct RenderContext<'a> {
    /// Resolves link targets (pages and attachment names).
    pub resolver: &'a Resolver,
    /// The page being rendered (for `[[#heading]]` links), if any.
    pub self_key: Option<&'a str>,
    /// The attachments `resolver` knows by name.
    pub assets: &'a [AssetRef],
}

/// An ambiguous link target and the pages it could mean.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Ambiguity {
    /// The target as written.
    pub target: String,
    /// Keys of every page that answers to it, sorted.
    pub candidates: Vec<String>,
}

/// The result of [`render`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    /// Safe HTML.
    pub html: String,
    /// SHA-256 of every attachment shown (`data-asset` values), in order, without repeats.
    pub assets: Vec<String>,
    /// Link targets that resolve to nothing (pages and attachments), in order, without repeats.
    pub missing: Vec<String>,
    /// Ambiguous link targets.
    pub ambiguous: Vec<Ambiguity>,
    /// Malformed wikilinks, as written.
    pub malformed: Vec<String>,
}

const TOKEN_OPEN: char = '\u{E000}';
const TOKEN_CLOSE: char = '\u{E001}';

/// Renders markdown to safe HTML. See the module docs for what is kept and what is neutralised.
///
/// ```
/// use llm_wiki::markdown::render::{render, RenderContext};
/// use llm_wiki::markdown::resolve::Resolver;
/// let resolver = Resolver::new([("Rust", "Rust", &[][..])]);
/// let ctx = RenderContext { resolver: &resolver, self_key: None, assets: &[] };
/// let out = render("[[Rust|<b>R</b>]] <script>x</script> [[Go]]", &ctx);
/// assert!(out.html.contains(r##"<a class="wikilink" href="#/page/Rust" data-page="Rust">&lt;b&gt;R&lt;/b&gt;</a>"##));
/// assert!(out.html.contains("&lt;script&gt;"));
/// assert_eq!(out.missing, vec!["Go".to_string()]);
/// ```
pub fn render(markdown: &str, ctx: &RenderContext<'_>) -> Rendered {
    let items = wikilinks::scan(markdown);
    // Replace each wikilink by a token the parser treats as plain text, so a `|` inside a link
    // cannot split a table cell and link text is never parsed as markdown.
    let mut prepared = String::with_capacity(markdown.len());
    let mut last = 0;
    let push_clean = |out: &mut String, s: &str| {
        for c in s.chars() {
            out.push(if c == TOKEN_OPEN || c == TOKEN_CLOSE {
                '\u{FFFD}'
            } else {
                c
            });
        }
    };
    for (i, item) in items.iter().enumerate() {
        let range = match item {
            Item::Link(l) => l.range.clone(),
            Item::Malformed(m) => m.range.clone(),
        };
        push_clean(&mut prepared, &markdown[last..range.start]);
        let _ = write!(prepared, "{TOKEN_OPEN}{i}{TOKEN_CLOSE}");
        last = range.end;
    }
    push_clean(&mut prepared, &markdown[last..]);

    let mut r = Renderer {
        ctx,
        items: &items,
        out: Rendered::default(),
        slugs: HashMap::new(),
    };
    let events: Vec<Event<'_>> =
        TextMergeStream::new(Parser::new_ext(&prepared, wikilinks::parser_options())).collect();
    let filtered = r.filter(events);
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, filtered.into_iter());
    r.out.html = html;
    r.out
}

struct Renderer<'r, 'c> {
    ctx: &'r RenderContext<'c>,
    items: &'r [Item],
    out: Rendered,
    slugs: HashMap<String, usize>,
}

enum CalloutState {
    Title { wrote: bool, kind: String },
    Content,
}

impl Renderer<'_, '_> {
    fn filter<'a>(&mut self, events: Vec<Event<'a>>) -> Vec<Event<'a>> {
        let anchors = raw_anchors(&events);
        let mut out: Vec<Event<'a>> = Vec::with_capacity(events.len());
        let mut closers: Vec<&'static str> = Vec::new(); // per open Link
        let mut quotes: Vec<bool> = Vec::new(); // per open BlockQuote: is it a callout
        let mut callout: Option<CalloutState> = None;
        let mut i = 0;
        while i < events.len() {
            let ev = events[i].clone();
            i += 1;
            if let Some(html) = anchors.get(&(i - 1)) {
                if closers.is_empty() {
                    out.push(Event::Html(html.clone().into()));
                    continue;
                }
            }
            match ev {
                Event::Html(s) | Event::InlineHtml(s) => out.push(Event::Text(s)),
                Event::Start(Tag::HtmlBlock) => out.push(Event::Start(Tag::Paragraph)),
                Event::End(TagEnd::HtmlBlock) => out.push(Event::End(TagEnd::Paragraph)),
                Event::Text(t) => self.push_text(&mut out, &t, !closers.is_empty()),
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    ..
                }) => {
                    let (open, close) = self.link_open(link_type, &dest_url, &title);
                    out.push(Event::Html(open.into()));
                    closers.push(close);
                }
                Event::End(TagEnd::Link) => {
                    out.push(Event::Html(closers.pop().unwrap_or("").into()));
                }
                Event::Start(Tag::Image {
                    dest_url, title, ..
                }) => {
                    let (alt, next) = self.collect_plain(
                        &events,
                        i,
                        |e| matches!(e, Event::Start(Tag::Image { .. })),
                        |e| matches!(e, Event::End(TagEnd::Image)),
                    );
                    i = next;
                    out.push(Event::Html(self.image(&dest_url, &title, &alt).into()));
                }
                Event::Start(Tag::Heading {
                    level,
                    classes,
                    attrs,
                    ..
                }) => {
                    let (text, _) = self.collect_plain(
                        &events,
                        i,
                        |_| false,
                        |e| matches!(e, Event::End(TagEnd::Heading(_))),
                    );
                    let slug = self.unique_slug(&text);
                    out.push(Event::Start(Tag::Heading {
                        level,
                        id: Some(slug.into()),
                        classes,
                        attrs,
                    }));
                }
                Event::Start(Tag::BlockQuote(kind)) => {
                    let head = match (events.get(i), events.get(i + 1)) {
                        (Some(Event::Start(Tag::Paragraph)), Some(Event::Text(t))) => {
                            callout_head(t)
                        }
                        _ => None,
                    };
                    match head {
                        Some((kind_name, rest)) if callout.is_none() => {
                            out.push(Event::Html(
                                format!(
                                    "<div class=\"callout\" data-callout=\"{}\"><div class=\"callout-title\">",
                                    escape(&kind_name)
                                )
                                .into(),
                            ));
                            let wrote = !rest.trim().is_empty();
                            if wrote {
                                self.push_text(&mut out, rest.trim_start(), false);
                            }
                            callout = Some(CalloutState::Title {
                                wrote,
                                kind: kind_name,
                            });
                            quotes.push(true);
                            i += 2; // the paragraph start and the head text
                        }
                        _ => {
                            quotes.push(false);
                            out.push(Event::Start(Tag::BlockQuote(kind)));
                        }
                    }
                }
                Event::SoftBreak | Event::HardBreak
                    if matches!(callout, Some(CalloutState::Title { .. })) =>
                {
                    self.close_callout_title(&mut out, &mut callout);
                    out.push(Event::Html("<p>".into()));
                }
                Event::End(TagEnd::Paragraph)
                    if matches!(callout, Some(CalloutState::Title { .. })) =>
                {
                    self.close_callout_title(&mut out, &mut callout);
                }
                Event::End(TagEnd::BlockQuote(kind)) => {
                    if quotes.pop() == Some(true) {
                        if matches!(callout, Some(CalloutState::Title { .. })) {
                            self.close_callout_title(&mut out, &mut callout);
                        }
                        callout = None;
                        out.push(Event::Html("</div></div>\n".into()));
                    } else {
                        out.push(Event::End(TagEnd::BlockQuote(kind)));
                    }
                }
                other => out.push(other),
            }
        }
        out
    }

    fn close_callout_title<'a>(&self, out: &mut Vec<Event<'a>>, state: &mut Option<CalloutState>) {
        if let Some(CalloutState::Title { wrote, kind }) = state.take() {
            if !wrote {
                let mut t = kind.replace(['-', '_'], " ");
                if let Some(first) = t.get(..1) {
                    t = first.to_uppercase() + &t[1..];
                }
                out.push(Event::Text(t.into()));
            }
            out.push(Event::Html("</div><div class=\"callout-content\">".into()));
        }
        *state = Some(CalloutState::Content);
    }

    /// Plain text of the events from `start` to the end of the element that began just before it
    /// (nested elements of the same kind counted by `opens`); returns it and the index after it.
    fn collect_plain(
        &self,
        events: &[Event<'_>],
        start: usize,
        opens: impl Fn(&Event<'_>) -> bool,
        closes: impl Fn(&Event<'_>) -> bool,
    ) -> (String, usize) {
        let mut depth = 1;
        let mut text = String::new();
        let mut i = start;
        while i < events.len() {
            let e = &events[i];
            i += 1;
            if opens(e) {
                depth += 1;
            } else if closes(e) {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            match e {
                Event::Text(t) | Event::Code(t) => text.push_str(&self.plain(t)),
                Event::SoftBreak | Event::HardBreak => text.push(' '),
                _ => {}
            }
        }
        (text, i)
    }

    /// Text with tokens replaced by their display text.
    fn plain(&self, t: &str) -> String {
        let mut s = String::with_capacity(t.len());
        for piece in split_tokens(t) {
            match piece {
                Piece::Text(x) => s.push_str(x),
                Piece::Token(n) => match self.items.get(n) {
                    Some(Item::Link(l)) => s.push_str(&l.display()),
                    Some(Item::Malformed(m)) => s.push_str(&m.text),
                    None => {}
                },
            }
        }
        s
    }

    fn push_text<'a>(&mut self, out: &mut Vec<Event<'a>>, t: &str, inside_link: bool) {
        if !t.contains(TOKEN_OPEN) {
            out.push(Event::Text(CowStr::from(t.to_string())));
            return;
        }
        for piece in split_tokens(t) {
            match piece {
                Piece::Text(x) if !x.is_empty() => out.push(Event::Text(x.to_string().into())),
                Piece::Text(_) => {}
                Piece::Token(n) => {
                    if inside_link {
                        out.push(Event::Text(
                            self.plain(&format!("{TOKEN_OPEN}{n}{TOKEN_CLOSE}")).into(),
                        ));
                    } else if let Some(html) = self.item_html(n) {
                        out.push(Event::InlineHtml(html.into()));
                    }
                }
            }
        }
    }

    fn unique_slug(&mut self, text: &str) -> String {
        let base = heading_slug(text);
        let n = self.slugs.entry(base.clone()).or_insert(0);
        *n += 1;
        if *n == 1 {
            base
        } else {
            format!("{base}-{}", *n - 1)
        }
    }
}

/// `[!type] rest` at the start of a blockquote's first paragraph: the callout type (lower case,
/// `[a-z0-9_-]` only) and the rest of the line.
fn callout_head(t: &str) -> Option<(String, String)> {
    let rest = t.strip_prefix("[!")?;
    let end = rest.find(']')?;
    let kind: String = rest[..end]
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect();
    if kind.is_empty() {
        return None;
    }
    let after = &rest[end + 1..];
    let after = after.strip_prefix(['+', '-']).unwrap_or(after);
    Some((kind, after.to_string()))
}

enum Piece<'a> {
    Text(&'a str),
    Token(usize),
}

fn split_tokens(t: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(open) = rest.find(TOKEN_OPEN) {
        let after = &rest[open + TOKEN_OPEN.len_utf8()..];
        match after.find(TOKEN_CLOSE) {
            Some(close) => match after[..close].parse::<usize>() {
                Ok(n) => {
                    out.push(Piece::Text(&rest[..open]));
                    out.push(Piece::Token(n));
                    rest = &after[close + TOKEN_CLOSE.len_utf8()..];
                }
                Err(_) => {
                    out.push(Piece::Text(&rest[..open + TOKEN_OPEN.len_utf8()]));
                    rest = after;
                }
            },
            None => break,
        }
    }
    out.push(Piece::Text(rest));
    out
}

fn push_unique(list: &mut Vec<String>, s: &str) {
    if !list.iter().any(|x| x == s) {
        list.push(s.to_string());
    }
}

/// The `id` a heading gets and the `data-heading` of a link to it: lower case, letters and digits
/// of any script kept, runs of anything else turned into one `-`. Empty → `section`.
pub fn heading_slug(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    let mut dash = false;
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            if dash && !s.is_empty() {
                s.push('-');
            }
            dash = false;
            s.push(c);
        } else {
            dash = true;
        }
    }
    if s.is_empty() {
        "section".into()
    } else {
        s
    }
}

/// Escapes text for HTML element content and double- or single-quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Field case F21's page body.
    pub(crate) const F21: &str = "Hello <script>alert(1)</script>\n<img src=x onerror=\"alert(2)\">\n[click](javascript:alert(3))\n[tab](\tjavascript:alert(4))\n[proto](//evil.example/x)\n![img](data:text/html;base64,PHNjcmlwdD4=)\n[[Rust|<img src=x onerror=alert(5)>]]\n<a href=\"https://ok.example\" onclick=\"alert(6)\">ok</a>\n";

    pub(super) fn ctx_render(md: &str) -> Rendered {
        let aliases = vec!["Rust lang".to_string()];
        let resolver = Resolver::new([
            ("Rust", "Rust", aliases.as_slice()),
            ("机器学习", "机器学习", &[][..]),
        ])
        .with_assets(["diagram.png", "paper.pdf"]);
        let assets = vec![
            AssetRef {
                name: "diagram.png".into(),
                sha256: "ab".repeat(32),
                mime: "image/png".into(),
            },
            AssetRef {
                name: "paper.pdf".into(),
                sha256: "cd".repeat(32),
                mime: "application/pdf".into(),
            },
        ];
        render(
            md,
            &RenderContext {
                resolver: &resolver,
                self_key: Some("Rust"),
                assets: &assets,
            },
        )
    }

    #[test]
    fn f21_nothing_executable_survives() {
        let html = ctx_render(F21).html;
        assert_safe(&html, F21);
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        // Alias text is escaped inside a real link.
        assert!(html.contains("<a class=\"wikilink\" href=\"#/page/Rust\" data-page=\"Rust\">&lt;img src=x onerror=alert(5)&gt;</a>"), "{html}");
        // The https anchor survives, rebuilt without its handler.
        assert!(html.contains("<a href=\"https://ok.example\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">ok</a>"), "{html}");
        assert!(html.contains("<span class=\"link-removed\" title=\"Link removed: unsafe or unsupported URL\">proto</span>"));
        assert!(html.contains("<span class=\"image-removed\""));
    }

    #[test]
    fn callouts_footnotes_tasks_and_headings() {
        let md = "## Facts\n\nReleased in 2015.[^c7]\n\n> [!contradiction] Release year\n> Source A says 2015; source B says 2016.\n\n> [!note]\n> plain\n\n> quote\n\n- [x] done\n- [ ] todo\n\n## Facts\n\n[^c7]: [[Rust]]: \"released in 2015\"\n";
        let h = ctx_render(md).html;
        assert!(h.contains("<h2 id=\"facts\">Facts</h2>"), "{h}");
        assert!(h.contains("<h2 id=\"facts-1\">Facts</h2>"), "{h}");
        assert!(h.contains("<div class=\"callout\" data-callout=\"contradiction\"><div class=\"callout-title\">Release year</div><div class=\"callout-content\"><p>Source A says 2015; source B says 2016.</p>\n</div></div>"), "{h}");
        assert!(h.contains("<div class=\"callout\" data-callout=\"note\"><div class=\"callout-title\">Note</div><div class=\"callout-content\"><p>plain</p>"), "{h}");
        assert!(
            h.contains("<blockquote>\n<p>quote</p>\n</blockquote>"),
            "{h}"
        );
        assert!(
            h.contains("<sup class=\"footnote-reference\"><a href=\"#c7\">1</a></sup>"),
            "{h}"
        );
        assert!(
            h.contains("<div class=\"footnote-definition\" id=\"c7\">"),
            "{h}"
        );
        assert!(
            h.contains("<input disabled=\"\" type=\"checkbox\" checked=\"\"/>"),
            "{h}"
        );
    }

    #[test]
    fn f05e_fenced_examples_stay_code() {
        let h =
            ctx_render("# Syntax\nExample:\n```markdown\n[[Link]]\n<script>x</script>\n```\n").html;
        assert!(h.contains("<pre><code class=\"language-markdown\">[[Link]]\n&lt;script&gt;x&lt;/script&gt;\n</code></pre>"), "{h}");
    }

    #[test]
    fn xss_corpus_renders_nothing_executable() {
        // A corpus of known vectors (OWASP filter-evasion cheat sheet shapes, adapted to markdown).
        let corpus = [
            "<script>alert(1)</script>",
            "<SCRIPT SRC=//x.example/x.js></SCRIPT>",
            "<IMG SRC=\"javascript:alert('XSS');\">",
            "<img src=x onerror=alert(1)//",
            "<svg/onload=alert(1)>",
            "<iframe src=\"javascript:alert(1)\"></iframe>",
            "<body onload=alert(1)>",
            "<a href=\"&#106;avascript:alert(1)\">x</a>",
            "[x](&#106;avascript:alert(1))",
            "[x](javascript&colon;alert(1))",
            "[x](JaVaScRiPt:alert(1))",
            "[x]( javascript:alert(1))",
            "[x](<javascript:alert(1)>)",
            "[x](java\\\nscript:alert(1))",
            "[x](vbscript:msgbox(1))",
            "[x](data:text/html,<script>alert(1)</script>)",
            "![x](javascript:alert(1))",
            "![x](\"onerror=\"alert(1))",
            "[x]: javascript:alert(1)\n\n[y][x]",
            "<javascript:alert(1)>",
            "[[x\" onmouseover=\"alert(1)]]",
            "[[Rust|\" onmouseover=\"alert(1)]]",
            "[[Rust#\"><script>alert(1)</script>]]",
            "![[\"><img src=x onerror=alert(1)>.png]]",
            "> [!x\" onclick=\"alert(1)] title\n> body",
            "> [!note] <img src=x onerror=alert(1)>\n> body",
            "<details open ontoggle=alert(1)>",
            "<style>@import 'http://x.example/x.css';</style>",
            "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
            "<!-- --><script>alert(1)</script> -->",
            "`<script>` <b onclick=alert(1)>b</b>",
            "| a | b |\n|---|---|\n| <script>alert(1)</script> | [x](javascript:alert(1)) |",
            "[^1]\n\n[^1]: <script>alert(1)</script>",
            "# <img src=x onerror=alert(1)>",
            "<object data=\"data:text/html;base64,PHNjcmlwdD4=\"></object>",
            "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
            "<a href=\"javascript:alert(1)\">x</a>",
            "<a href=\" javascript:alert(1)\">x</a>",
            "<a href='https://ok.example' onclick='alert(1)' style='x'>x</a>",
            "<a href=https://ok.example onmouseover=alert(1)>x</a>",
            "<a onclick=\"alert(1)\" href=\"https://ok.example\">x</a>",
            "<a href=\"//evil.example\">x</a>",
            "<a href=\"https://ok.example\"><img src=x onerror=alert(1)></a>",
            "<a href=\"https://ok.example\">unclosed",
            "<a href=\"https://a.example/?q=&quot;&gt;&lt;script&gt;\">x</a>",
            "<A HREF=\"https://ok.example\">x</A>",
            "[md](https://ok.example) <a href=\"https://ok.example\">[inner](https://x.example)</a>",
        ];
        for md in corpus {
            let html = ctx_render(md).html;
            assert_safe(&html, md);
        }
    }

    /// No element but the ones this renderer and pulldown-cmark emit, no `on*` attribute, no
    /// dangerous URL: a small tag scanner over the output.
    pub(crate) fn assert_safe(html: &str, input: &str) {
        const ALLOWED: &[&str] = &[
            "a",
            "p",
            "span",
            "div",
            "em",
            "strong",
            "del",
            "code",
            "pre",
            "blockquote",
            "ul",
            "ol",
            "li",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
            "sup",
            "input",
            "hr",
            "br",
            "img",
        ];
        let mut rest = html;
        while let Some(lt) = rest.find('<') {
            let tag_text = &rest[lt + 1..];
            let end = tag_text.find('>').expect("unterminated tag");
            let inner = &tag_text[..end];
            rest = &tag_text[end..];
            let inner = inner.trim_start_matches('/');
            let name: String = inner
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_lowercase();
            assert!(
                ALLOWED.contains(&name.as_str()),
                "tag <{inner}> from {input:?}: {html}"
            );
            // Attributes: name="value" pairs only (values escaped, so no '"' inside).
            let mut attrs = &inner[name.len()..];
            loop {
                attrs = attrs.trim_start().trim_start_matches('/');
                if attrs.is_empty() {
                    break;
                }
                let eq = attrs
                    .find('=')
                    .unwrap_or_else(|| panic!("bare attribute in <{inner}> from {input:?}"));
                let attr = attrs[..eq].trim().to_lowercase();
                assert!(!attr.starts_with("on"), "{attr} from {input:?}: {html}");
                assert!(
                    attrs[eq + 1..].starts_with('"'),
                    "unquoted attribute in <{inner}>"
                );
                let close = attrs[eq + 2..].find('"').expect("closing quote") + eq + 2;
                let value = &attrs[eq + 2..close];
                if matches!(attr.as_str(), "href" | "src") {
                    assert_eq!(attr, "href", "no src attributes: {input:?}");
                    let v = value.to_lowercase();
                    assert!(
                        v.starts_with("https://")
                            || v.starts_with("http://")
                            || v.starts_with("mailto:")
                            || v.starts_with('#'),
                        "href {value:?} from {input:?}"
                    );
                }
                attrs = &attrs[close + 1..];
            }
            if name == "img" {
                assert!(
                    inner.contains("data-asset="),
                    "img without data-asset from {input:?}"
                );
            }
        }
    }
}
