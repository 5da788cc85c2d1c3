//! URLs from markdown, classified as browsers read them (tabs and newlines dropped, controls and
//! spaces trimmed): external (`http:`, `https:`, `mailto:`), `#fragment`, relative (resolved like
//! a wikilink) or unsafe; and the percent coding of paths and `#/page/<key>` hrefs.

use std::fmt::Write as _;

/// How a URL from markdown may be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Url {
    /// `http:`, `https:` or `mailto:`: kept, with `rel="noopener noreferrer nofollow"`.
    External(String),
    /// `#fragment`.
    Fragment(String),
    /// No scheme: a path to resolve as a page or attachment (percent-decoded, without query or
    /// fragment).
    Relative(String),
    /// Anything else (other schemes, protocol-relative `//host`, empty).
    Unsafe,
}

pub(super) fn classify_url(raw: &str) -> Url {
    // Browsers drop ASCII tab and newline anywhere in a URL and trim C0 controls and spaces.
    let cleaned: String = raw
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let s = cleaned.trim_matches(|c: char| c <= ' ');
    if s.is_empty() {
        return Url::Unsafe;
    }
    let b = s.as_bytes();
    if b.len() >= 2 && matches!(b[0], b'/' | b'\\') && matches!(b[1], b'/' | b'\\') {
        return Url::Unsafe;
    }
    if let Some(colon) = s.find(':') {
        let scheme = &s[..colon];
        let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if is_scheme {
            return match scheme.to_ascii_lowercase().as_str() {
                "http" | "https" | "mailto" => Url::External(s.to_string()),
                _ => Url::Unsafe,
            };
        }
    }
    if s.starts_with('#') {
        return Url::Fragment(s.to_string());
    }
    let path = s.split(['?', '#']).next().unwrap_or("");
    let decoded = pct_decode(path);
    let decoded = decoded.trim_start_matches("./").trim_start_matches('/');
    if decoded.is_empty() {
        Url::Unsafe
    } else {
        Url::Relative(decoded.to_string())
    }
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes everything but ASCII letters, digits and `-._~` (for `#/page/<key>` hrefs).
pub fn pct_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_classified_like_browsers_do() {
        assert_eq!(
            classify_url("https://ok.example/a"),
            Url::External("https://ok.example/a".into())
        );
        assert_eq!(
            classify_url("  HTTPS://x"),
            Url::External("HTTPS://x".into())
        );
        assert_eq!(
            classify_url("mailto:a@b.c"),
            Url::External("mailto:a@b.c".into())
        );
        for bad in [
            "javascript:alert(1)",
            "\tjavascript:alert(1)",
            "java\tscript:alert(1)",
            "\u{1}javascript:x",
            "JaVaScRiPt:x",
            "vbscript:x",
            "data:text/html;base64,xx",
            "data:image/png;base64,xx",
            "//evil.example/x",
            "\\\\evil.example",
            "/\\evil.example",
            "file:///etc/passwd",
            "",
            "  ",
        ] {
            assert_eq!(classify_url(bad), Url::Unsafe, "{bad:?}");
        }
        assert_eq!(classify_url("#intro"), Url::Fragment("#intro".into()));
        assert_eq!(
            classify_url("Rust%20Notes.md?x#y"),
            Url::Relative("Rust Notes.md".into())
        );
        assert_eq!(
            classify_url("../raw/assets/diagram.png"),
            Url::Relative("../raw/assets/diagram.png".into())
        );
    }
}
