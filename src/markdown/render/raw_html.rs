//! Raw HTML in markdown: it all stays text, but for inline `<a href="…">…</a>` pairs in one block
//! whose href passes the link rule, which are rebuilt as fresh `<a>` tags carrying only that href
//! (entities decoded after the scheme was checked on the raw text).

use std::collections::HashMap;

use pulldown_cmark::Event;

use super::escape;
use super::url::{classify_url, Url};

/// Inline raw `<a href="…">…</a>` pairs whose href is `http:`, `https:`, `mailto:` or a
/// `#fragment`, within one block: event index → the safe HTML that replaces the event (a rebuilt
/// `<a>` with only the href, or `</a>`). Every other attribute (`onclick`, `style`…) is dropped;
/// unpaired or unsafe anchors stay text.
pub(super) fn raw_anchors(events: &[Event<'_>]) -> HashMap<usize, String> {
    let mut out = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let Event::InlineHtml(tag) = e else { continue };
        let Some(href) = anchor_href(tag) else {
            continue;
        };
        let open = match classify_url(&href) {
            Url::External(u) if u.starts_with(|c: char| c.is_ascii_alphabetic()) => format!(
                "<a href=\"{}\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">",
                escape(&decode_entities(&u))
            ),
            Url::Fragment(f) => format!("<a href=\"{}\">", escape(&decode_entities(&f))),
            _ => continue,
        };
        // The matching `</a>` in the same block, with no other anchor in between.
        let mut depth = 0i32;
        for (j, later) in events.iter().enumerate().skip(i + 1) {
            match later {
                Event::Start(_) => depth += 1,
                Event::End(_) => {
                    depth -= 1;
                    if depth < 0 {
                        break;
                    }
                }
                Event::InlineHtml(t) if depth == 0 => {
                    let t = t.trim().to_ascii_lowercase();
                    if t == "</a>" {
                        out.insert(i, open);
                        out.insert(j, "</a>".to_string());
                        break;
                    }
                    if t.starts_with("<a") {
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The `href` of a raw `<a …>` opening tag, as written (entities not decoded).
fn anchor_href(tag: &str) -> Option<String> {
    let t = tag.trim();
    let rest = t.strip_prefix('<')?;
    if !(rest.len() > 1
        && rest.as_bytes()[0].eq_ignore_ascii_case(&b'a')
        && rest.as_bytes()[1].is_ascii_whitespace())
    {
        return None;
    }
    let mut attrs = rest[1..].strip_suffix('>')?.trim_end_matches('/');
    loop {
        attrs = attrs.trim_start();
        if attrs.is_empty() {
            return None;
        }
        let name_end = attrs
            .find(|c: char| c.is_whitespace() || c == '=')
            .unwrap_or(attrs.len());
        let name = attrs[..name_end].to_ascii_lowercase();
        attrs = attrs[name_end..].trim_start();
        let value = if let Some(v) = attrs.strip_prefix('=') {
            let v = v.trim_start();
            let (value, rest) = match v.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let end = v[1..].find(q)? + 1;
                    (&v[1..end], &v[end + 1..])
                }
                _ => {
                    let end = v.find(char::is_whitespace).unwrap_or(v.len());
                    (&v[..end], &v[end..])
                }
            };
            attrs = rest;
            Some(value)
        } else {
            None
        };
        if name == "href" {
            return value.map(str::to_string);
        }
    }
}

/// Decodes the character references a URL in an attribute commonly holds (`&amp;`, `&quot;`,
/// `&#39;`, `&lt;`, `&gt;`, numeric). Used only after the scheme was checked on the raw text.
fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let decoded = after.find(';').and_then(|semi| {
            let name = &after[..semi];
            let c = match name {
                "amp" => Some('&'),
                "quot" => Some('"'),
                "apos" | "#39" => Some('\''),
                "lt" => Some('<'),
                "gt" => Some('>'),
                n if n.starts_with("#x") || n.starts_with("#X") => u32::from_str_radix(&n[2..], 16)
                    .ok()
                    .and_then(char::from_u32),
                n if n.starts_with('#') => n[1..].parse().ok().and_then(char::from_u32),
                _ => None,
            }?;
            Some((c, semi + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &after[len..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::ctx_render;
    use super::*;

    #[test]
    fn raw_anchors_are_rebuilt_only_when_safe_and_paired() {
        let h = ctx_render("<a onclick=\"x\" href='https://ok.example/?a=1&amp;b=2'>ok</a>").html;
        assert!(h.contains("<a href=\"https://ok.example/?a=1&amp;b=2\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">ok</a>"), "{h}");
        let h = ctx_render("<a href=\"https://ok.example\">unclosed").html;
        assert!(
            h.contains("&lt;a href=\"https://ok.example\"&gt;unclosed"),
            "{h}"
        );
        let h = ctx_render("<a href=\"javascript:alert(1)\">x</a>").html;
        assert!(
            h.contains("&lt;a href=\"javascript:alert(1)\"&gt;x&lt;/a&gt;"),
            "{h}"
        );
        assert_eq!(
            anchor_href("<a  href = x title=\"y\">").as_deref(),
            Some("x")
        );
        assert_eq!(anchor_href("<abbr href=x>"), None);
        assert_eq!(decode_entities("a&amp;b&#x3a;&#58;&bogus;"), "a&b::&bogus;");
    }
}
