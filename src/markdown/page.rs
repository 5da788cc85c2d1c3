//! Page files: what an LLM (or a person) hands in is cleaned into one body plus frontmatter
//! fields ([`clean_page`]); a stored page is written as exactly one frontmatter block plus its body
//! ([`page_file`]) and read back exactly ([`parse_page_file`]).
//!
//! Cleaning (field case F05): a whole page wrapped in a `` ```markdown `` (or `md`, or bare) fence
//! is unwrapped; frontmatter wrapped in a `` ```yaml `` fence is taken as frontmatter; several
//! frontmatter blocks on top of each other are merged (the first one wins for single values, lists
//! are joined); an unquoted `title: A: B` is repaired. A fenced example inside the body is never
//! touched. Then [`normalize_pipes`](super::wikilinks::normalize_pipes) applies the table-pipe rule.
//!
//! *Invariant:* a stored body never starts with a frontmatter block, so [`page_file`] always
//! holds exactly one, and `parse_page_file(page_file(p))` gives back `p`'s fields and body exactly.

use crate::markdown::frontmatter::{self, Frontmatter, PageFields, YamlError};
use crate::markdown::wikilinks::normalize_pipes;
use crate::model::Page;
use crate::model::PageEdit;
use crate::text::normalize_source_text;

/// How forgiving [`clean_page`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CleanOptions {
    /// Unwrap a page that is entirely one `` ```markdown `` / `` ```md `` / bare fence even when
    /// no frontmatter follows the fence. On for LLM output; off for human edits, where such a
    /// fence is only unwrapped when it starts with frontmatter.
    pub unwrap_bare_page_fence: bool,
}

impl CleanOptions {
    /// For text an LLM wrote.
    pub const LLM: CleanOptions = CleanOptions {
        unwrap_bare_page_fence: true,
    };
    /// For text a person wrote.
    pub const HUMAN: CleanOptions = CleanOptions {
        unwrap_bare_page_fence: false,
    };
}

/// The result of [`clean_page`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanPage {
    /// Every frontmatter block found, merged; `None` when there was none.
    pub frontmatter: Option<Frontmatter>,
    /// The body: normalised (NFC, LF), without frontmatter or wrapping fence, leading blank lines
    /// removed, table pipes escaped.
    pub body: String,
    /// What was repaired, in words (for the compile log); empty when the input was clean.
    pub repairs: Vec<String>,
}

/// Cleans a page as handed in (see the module docs).
///
/// ```
/// use llm_wiki::markdown::page::{clean_page, CleanOptions};
/// let c = clean_page("```markdown\n---\ntitle: Tokio\n---\n# Tokio\nSee [[Rust]].\n```", CleanOptions::LLM);
/// assert_eq!(c.body, "# Tokio\nSee [[Rust]].\n");
/// assert_eq!(c.frontmatter.unwrap().title.as_deref(), Some("Tokio"));
/// ```
pub fn clean_page(raw: &str, options: CleanOptions) -> CleanPage {
    let text = normalize_source_text(raw);
    let mut repairs = Vec::new();
    let mut rest: String = match unwrap_page_fence(&text, options) {
        Some(inner) => {
            repairs.push("unwrapped a fence around the whole page".to_string());
            inner
        }
        None => text,
    };
    let mut merged: Option<Frontmatter> = None;
    let mut blocks = 0;
    loop {
        let trimmed = rest.trim_start_matches(['\n', ' ', '\t']);
        let found = frontmatter_block(trimmed);
        let Some((fm, after, fenced, repaired)) = found else {
            break;
        };
        blocks += 1;
        if fenced {
            repairs.push("frontmatter was inside a code fence".to_string());
        }
        if repaired {
            repairs.push("quoted a YAML value that held ': '".to_string());
        }
        match &mut merged {
            Some(m) => m.merge_missing(fm),
            None => merged = Some(fm),
        }
        rest = after.to_string();
    }
    if blocks > 1 {
        repairs.push(format!("merged {blocks} frontmatter blocks into one"));
    }
    let body = rest.trim_start_matches('\n');
    let body = normalize_pipes(body);
    if body != rest.trim_start_matches('\n') {
        repairs.push("escaped link pipes in table rows".to_string());
    }
    CleanPage {
        frontmatter: merged,
        body,
        repairs,
    }
}

/// A fence line: its character, length and info string.
fn fence(line: &str) -> Option<(char, usize, &str)> {
    let l = line.trim_end();
    let indent = l.len() - l.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let l = &l[indent..];
    let c = l.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let n = l.chars().take_while(|&x| x == c).count();
    if n < 3 {
        return None;
    }
    let info = l[n..].trim();
    if c == '`' && info.contains('`') {
        return None;
    }
    Some((c, n, info))
}

/// The inside of a fence that encloses the whole text, when its info string says markdown (or is
/// empty) and `options` allow it.
fn unwrap_page_fence(text: &str, options: CleanOptions) -> Option<String> {
    let trimmed = text.trim_matches(|c: char| c == '\n' || c == ' ' || c == '\t');
    let mut lines = trimmed.split_inclusive('\n');
    let first = lines.next()?;
    let (c, n, info) = fence(first)?;
    if !matches!(info.to_ascii_lowercase().as_str(), "" | "markdown" | "md") {
        return None;
    }
    let inner_start = first.len();
    let mut pos = inner_start;
    for line in lines {
        if let Some((c2, n2, info2)) = fence(line) {
            if c2 == c && n2 >= n && info2.is_empty() {
                // The first closing fence must be the last line.
                if pos + line.len() < trimmed.len() {
                    return None;
                }
                let inner = &trimmed[inner_start..pos];
                let starts_with_frontmatter = inner.trim_start_matches('\n').starts_with("---");
                if options.unwrap_bare_page_fence || starts_with_frontmatter {
                    return Some(inner.to_string());
                }
                return None;
            }
        }
        pos += line.len();
    }
    None
}

/// A frontmatter block at the very start of `text`: `---` fenced, or inside a `` ```yaml ``
/// fence. Returns it, the text after it, whether it was in a code fence, and whether the YAML
/// needed a repair. Blocks whose YAML is not a mapping are not frontmatter.
fn frontmatter_block(text: &str) -> Option<(Frontmatter, &str, bool, bool)> {
    if let Some((yaml, after)) = frontmatter::split(text) {
        let (fm, repaired) = frontmatter::parse_yaml_lenient(yaml).ok()?;
        if yaml.trim().is_empty() || fm != Frontmatter::default() {
            return Some((fm, after, false, repaired));
        }
        return None;
    }
    let first_end = text.find('\n')?;
    let (c, n, info) = fence(&text[..first_end])?;
    let info = info.to_ascii_lowercase();
    let inner_start = first_end + 1;
    let mut pos = inner_start;
    for line in text[inner_start..].split_inclusive('\n') {
        if let Some((c2, n2, info2)) = fence(line) {
            if c2 == c && n2 >= n && info2.is_empty() {
                let inner = &text[inner_start..pos];
                let dashed = inner.trim_start().starts_with("---");
                if !(matches!(info.as_str(), "yaml" | "yml") || (info.is_empty() && dashed)) {
                    return None;
                }
                let yaml = match frontmatter::split(inner.trim_start_matches('\n')) {
                    Some((y, after)) if after.trim().is_empty() => y.to_string(),
                    Some(_) => return None,
                    None => inner.to_string(),
                };
                let (fm, repaired) = frontmatter::parse_yaml_lenient(&yaml).ok()?;
                if fm == Frontmatter::default() {
                    return None;
                }
                return Some((fm, &text[pos + line.len()..], true, repaired));
            }
        }
        pos += line.len();
    }
    None
}

/// The file a page is exported as: one frontmatter block (title, aliases, tags, summary, sources,
/// then the unknown fields verbatim) followed by the body.
pub fn page_file(page: &Page) -> String {
    let mut out = frontmatter::write_block(&PageFields {
        title: &page.title,
        aliases: &page.aliases,
        tags: &page.tags,
        summary: &page.summary,
        sources: &page.sources,
        extra: &page.extra_frontmatter,
    });
    out.push_str(&page.body);
    out
}

/// Reads a page file exactly: the first frontmatter block and the body after it, byte for byte.
/// A file without frontmatter is all body.
///
/// Errors: [`YamlError`] when the frontmatter is not valid YAML (even after the
/// [`parse_yaml_lenient`](frontmatter::parse_yaml_lenient) repair).
pub fn parse_page_file(text: &str) -> Result<(Frontmatter, &str), YamlError> {
    match frontmatter::split(text) {
        Some((yaml, body)) => Ok((frontmatter::parse_yaml_lenient(yaml)?.0, body)),
        None => Ok((Frontmatter::default(), text)),
    }
}

/// Applies [`clean_page`] (human options) to an edit's body: frontmatter in the body fills the
/// title, summary, aliases and tags the edit leaves out, and its unknown fields are returned (to
/// replace the page's). `None` when the body had no frontmatter.
pub fn absorb_edit(mut edit: PageEdit) -> (PageEdit, Option<String>) {
    let Some(body) = edit.body.take() else {
        return (edit, None);
    };
    let clean = clean_page(&body, CleanOptions::HUMAN);
    edit.body = Some(clean.body);
    let Some(fm) = clean.frontmatter else {
        return (edit, None);
    };
    if edit.title.is_none() {
        edit.title = fm.title;
    }
    if edit.summary.is_none() {
        edit.summary = fm.summary;
    }
    if edit.aliases.is_none() {
        edit.aliases = fm.aliases;
    }
    if edit.tags.is_none() {
        edit.tags = fm.tags;
    }
    (edit, Some(fm.extra))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PageKind;

    fn page(title: &str, body: &str) -> Page {
        Page {
            key: crate::markdown::keys::page_key(title),
            title: title.into(),
            kind: PageKind::Concept,
            summary: String::new(),
            aliases: vec![],
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

    /// A page built from cleaned LLM output, as the compile step stores it.
    fn stored(raw: &str) -> Page {
        let c = clean_page(raw, CleanOptions::LLM);
        let fm = c.frontmatter.unwrap_or_default();
        let mut p = page("Tokio", &c.body);
        p.tags = fm.tags.unwrap_or_default();
        p.extra_frontmatter = fm.extra;
        p
    }

    fn assert_one_block_no_fences(file: &str) {
        assert!(file.starts_with("---\n"), "{file}");
        let (_, body) = frontmatter::split(file).unwrap();
        assert!(
            frontmatter::split(body.trim_start()).is_none(),
            "second block in {file}"
        );
        assert!(!file.contains("```"), "stray fence in {file}");
    }

    #[test]
    fn f05a_whole_page_in_a_markdown_fence() {
        let p = stored("```markdown\n---\ntitle: Tokio\n---\n# Tokio\nSee [[Rust]].\n```");
        assert_eq!(p.body, "# Tokio\nSee [[Rust]].\n");
        let file = page_file(&p);
        assert_one_block_no_fences(&file);
        assert_eq!(file, "---\ntitle: Tokio\n---\n# Tokio\nSee [[Rust]].\n");
    }

    #[test]
    fn f05b_frontmatter_in_a_yaml_fence() {
        let c = clean_page(
            "```yaml\n---\ntitle: Tokio\n---\n```\n# Tokio\nSee [[Rust]].",
            CleanOptions::LLM,
        );
        assert_eq!(c.body, "# Tokio\nSee [[Rust]].");
        assert_eq!(c.frontmatter.unwrap().title.as_deref(), Some("Tokio"));
        let file = page_file(&stored(
            "```yaml\n---\ntitle: Tokio\n---\n```\n# Tokio\nSee [[Rust]].",
        ));
        assert_one_block_no_fences(&file);
        // Without the dashes, too.
        let c = clean_page(
            "```yml\ntitle: Tokio\ntags: [rust]\n```\n\n# Tokio\n",
            CleanOptions::LLM,
        );
        assert_eq!(c.body, "# Tokio\n");
    }

    #[test]
    fn f05c_two_blocks_become_one() {
        let library = "---\ntitle: Tokio\nstatus: draft\n---\n";
        let llm = "---\ntitle: Tokio\ntags: [rust]\n---\n# Tokio";
        let c = clean_page(&format!("{library}{llm}"), CleanOptions::LLM);
        let fm = c.frontmatter.clone().unwrap();
        assert_eq!(c.body, "# Tokio");
        assert_eq!(fm.tags, Some(vec!["rust".to_string()]));
        assert_eq!(fm.extra, "status: draft\n");
        let file = page_file(&stored(&format!("{library}{llm}")));
        assert_one_block_no_fences(&file);
        assert_eq!(
            file,
            "---\ntitle: Tokio\ntags:\n  - rust\nstatus: draft\n---\n# Tokio"
        );
    }

    #[test]
    fn f05d_titles_round_trip_through_the_page_file() {
        for title in ["Rust: Ownership and Borrowing", "Tom's \"Quick\" Notes"] {
            let p = page(title, "Body.\n");
            let file = page_file(&p);
            let (fm, body) = parse_page_file(&file).unwrap();
            assert_eq!(fm.title.as_deref(), Some(title));
            assert_eq!(body, "Body.\n");
            let yaml = frontmatter::split(&file).unwrap().0;
            let doc = &yaml_rust2::YamlLoader::load_from_str(yaml).unwrap()[0];
            assert_eq!(doc["title"].as_str(), Some(title));
        }
        // The unquoted form an LLM writes is repaired when cleaned.
        let c = clean_page(
            "---\ntitle: Rust: Ownership and Borrowing\n---\nBody",
            CleanOptions::LLM,
        );
        assert_eq!(
            c.frontmatter.unwrap().title.as_deref(),
            Some("Rust: Ownership and Borrowing")
        );
    }

    #[test]
    fn f05e_a_body_ending_in_a_fenced_example_is_kept() {
        let e = "# Syntax\nExample:\n```markdown\n[[Link]]\n```";
        for options in [CleanOptions::LLM, CleanOptions::HUMAN] {
            let c = clean_page(e, options);
            assert_eq!(c.body, e);
            assert!(c.frontmatter.is_none() && c.repairs.is_empty());
        }
        // A page that is only an example block is kept for people, unwrapped for the LLM.
        let only = "```markdown\n# Title\n```";
        assert_eq!(clean_page(only, CleanOptions::HUMAN).body, only);
        assert_eq!(clean_page(only, CleanOptions::LLM).body, "# Title\n");
        // A fence that closes before the end does not enclose the page.
        let two = "```\na\n```\ntext\n```\nb\n```";
        assert_eq!(clean_page(two, CleanOptions::LLM).body, two);
    }

    #[test]
    fn thematic_breaks_are_not_frontmatter() {
        let body = "---\nJust a line\n---\nMore";
        assert_eq!(clean_page(body, CleanOptions::HUMAN).body, body);
    }

    #[test]
    fn page_files_round_trip_exactly() {
        let mut p = page(
            "人工智能",
            "## 概述\n\n| a | b |\n|---|---|\n| [[X\\|y]] | z |\n",
        );
        p.aliases = vec!["Artificial Intelligence".into(), "AI".into()];
        p.tags = vec!["ai".into()];
        p.summary = "Machines that learn: an overview".into();
        p.sources = vec!["https://example.org/ai".into()];
        p.extra_frontmatter = "cssclass: wide\nrating: 5 # out of 5\n".into();
        let file = page_file(&p);
        let (fm, body) = parse_page_file(&file).unwrap();
        assert_eq!(body, p.body);
        assert_eq!(fm.title.as_deref(), Some("人工智能"));
        assert_eq!(fm.aliases.as_deref(), Some(&p.aliases[..]));
        assert_eq!(fm.tags.as_deref(), Some(&p.tags[..]));
        assert_eq!(fm.summary.as_deref(), Some(p.summary.as_str()));
        assert_eq!(fm.sources.as_deref(), Some(&p.sources[..]));
        assert_eq!(fm.extra, p.extra_frontmatter);
    }

    #[test]
    fn human_edits_absorb_frontmatter() {
        let edit = PageEdit {
            key: Some("k".into()),
            tags: Some(vec!["kept".into()]),
            body: Some("---\ntitle: New\ntags: [ignored]\ncssclass: wide\n---\nText".into()),
            ..Default::default()
        };
        let (edit, extra) = absorb_edit(edit);
        assert_eq!(edit.body.as_deref(), Some("Text"));
        assert_eq!(edit.title.as_deref(), Some("New"));
        assert_eq!(edit.tags, Some(vec!["kept".to_string()]));
        assert_eq!(extra.as_deref(), Some("cssclass: wide\n"));
    }
}
