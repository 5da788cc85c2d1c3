//! Notes of a plain Obsidian vault that are not prose (field case F43c): drawings of the
//! Excalidraw plugin and templates.
//!
//! A vault import reads every `.md` file as a source. Two kinds of note are markdown files but
//! hold no prose of their own, and would send noise to the model, the search index and the
//! embeddings:
//! - **Excalidraw drawings** (`*.excalidraw.md`, or frontmatter `excalidraw-plugin:`): the text
//!   a person wrote on the drawing sits in a `Text Elements` section, one element per paragraph
//!   with a `^blockid` at its end; the drawing itself is a `compressed-json` (or `json`) fenced
//!   block under `Drawing`, often tens of KB of base64. Only the text elements are a source.
//! - **Templates** (the core Templates plugin's `{{date}}`, `{{time}}`, `{{title}}` and the
//!   Templater plugin's `<% … %>` tags): skeletons filled in when a note is created, with empty
//!   headings and placeholders, not notes. Placeholders shown as code (inline code or fenced
//!   blocks, as in a note *about* Templater) do not count.

use pulldown_cmark::{Event, Options, Parser, Tag};

/// What a vault note is, for an import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteShape {
    /// Ordinary markdown: imported as it is.
    Prose,
    /// An Excalidraw drawing: `text` is the markdown a source gets (a title heading and the text
    /// elements, one paragraph each), `None` when the drawing holds no text.
    Drawing {
        /// The source text, or `None` for a drawing without text elements.
        text: Option<String>,
    },
    /// A template: `marker` is the first placeholder found (e.g. `<% tp.date.now() %>`).
    Template {
        /// The placeholder that marks it, as written (at most 60 characters).
        marker: String,
    },
}

/// Classifies the note at vault path `path` (its `/`-separated path in the zip) with normalised
/// text `text` (NFC, LF). `title` is the note's title (for a drawing's heading).
pub fn classify(path: &str, title: &str, text: &str) -> NoteShape {
    if is_drawing(path, text) {
        return NoteShape::Drawing {
            text: drawing_text(title, text),
        };
    }
    match template_marker(text) {
        Some(marker) => NoteShape::Template { marker },
        None => NoteShape::Prose,
    }
}

/// True for an Excalidraw drawing: the file name ends in `.excalidraw.md`, or the frontmatter
/// has the plugin's `excalidraw-plugin` key.
pub fn is_drawing(path: &str, text: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_lowercase();
    if name.ends_with(".excalidraw.md") {
        return true;
    }
    frontmatter_lines(text).any(|l| l.trim_start().starts_with("excalidraw-plugin:"))
}

/// The lines of a leading `---` frontmatter block (none when there is no such block).
fn frontmatter_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut lines = text.lines();
    let open = lines.next().is_some_and(|l| l.trim_end() == "---");
    lines
        .take_while(move |l| open && l.trim_end() != "---" && l.trim_end() != "...")
        .filter(move |_| open)
}

/// A drawing's text elements as a source: `# <title>` and one paragraph per element, their
/// `^blockid` markers removed; `None` when it has none. The elements are the paragraphs between
/// a `Text Elements` heading (any level) and the next heading or `%%` comment fence.
pub fn drawing_text(title: &str, text: &str) -> Option<String> {
    let mut in_section = false;
    let mut elements: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let flush = |current: &mut Vec<&str>, elements: &mut Vec<String>| {
        let joined = current.join("\n");
        let cleaned = strip_block_id(joined.trim()).trim().to_string();
        if !cleaned.is_empty() {
            elements.push(cleaned);
        }
        current.clear();
    };
    for line in text.lines() {
        let trimmed = line.trim();
        let heading = trimmed.starts_with('#')
            && trimmed.trim_start_matches('#').starts_with(' ')
            && trimmed.len() > trimmed.trim_start_matches('#').len();
        if heading {
            if in_section {
                flush(&mut current, &mut elements);
            }
            let name = trimmed.trim_start_matches('#').trim();
            in_section = name.eq_ignore_ascii_case("text elements");
            continue;
        }
        if !in_section {
            continue;
        }
        if trimmed.starts_with("%%") {
            flush(&mut current, &mut elements);
            in_section = false;
        } else if trimmed.is_empty() {
            flush(&mut current, &mut elements);
        } else {
            current.push(line);
        }
    }
    if in_section {
        flush(&mut current, &mut elements);
    }
    if elements.is_empty() {
        return None;
    }
    let mut out = format!("# {}\n", title.trim());
    for e in elements {
        out.push('\n');
        out.push_str(&e);
        out.push('\n');
    }
    Some(out)
}

/// `text` without a trailing Obsidian block id (` ^abc123`).
fn strip_block_id(text: &str) -> &str {
    if let Some(i) = text.rfind(" ^") {
        let id = &text[i + 2..];
        if !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return &text[..i];
        }
    }
    text
}

/// The first template placeholder outside code in `text`: a Templater tag (`<% … %>`, `<%* … %>`)
/// or a core Templates variable (`{{date}}`, `{{time}}`, `{{title}}`, with an optional
/// `:format`). `None` for a note without one.
pub fn template_marker(text: &str) -> Option<String> {
    // Byte ranges of code (inline and blocks): placeholders shown there are examples, not
    // placeholders.
    let mut code: Vec<std::ops::Range<usize>> = Vec::new();
    let mut block_start: Option<usize> = None;
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        match event {
            Event::Code(_) => code.push(range),
            Event::Start(Tag::CodeBlock(_)) => block_start = Some(range.start),
            Event::End(pulldown_cmark::TagEnd::CodeBlock) => {
                if let Some(s) = block_start.take() {
                    code.push(s..range.end);
                }
            }
            _ => {}
        }
    }
    let in_code = |i: usize| code.iter().any(|r| r.contains(&i));
    let bytes = text.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        let marker = if bytes[i] == b'<' && bytes[i + 1] == b'%' {
            text[i..].find("%>").map(|end| &text[i..i + end + 2])
        } else if bytes[i] == b'{' && bytes[i + 1] == b'{' {
            text[i..].find("}}").and_then(|end| {
                let inner = text[i + 2..i + end].trim();
                let name = inner.split(':').next().unwrap_or("").trim();
                matches!(name, "date" | "time" | "title").then(|| &text[i..i + end + 2])
            })
        } else {
            None
        };
        if let Some(m) = marker {
            if !in_code(i) && !m.contains('\n') {
                return Some(m.chars().take(60).collect());
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const DRAWING: &str = "---\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n---\n==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠==\n\n# Excalidraw Data\n## Text Elements\nIngest queue ^a1B2c3D4\n\n编译器 writes pages ^x9Y8z7W6\n\n%%\n## Drawing\n```compressed-json\nN4KAkARALgngDgUwgLgAQQQDwMYEMA2AlgCYBOuA7hADTgQBuCpAzoQPYB2KqATLZMzYBXUtiRoIACyhQ4zZAHoFAc0JRJQgEYA6bGwC2CgF7N6hbEcK4OCtptbErHALRY8RMpWdx8Q1TdIEfARcZgRmBShcZQUebTiAZhoCAEU9BHhGAElbLQBGTmSANgAOSR4ABiKAdgAWNQBOHgB2D\n```\n%%\n";

    #[test]
    fn a_drawing_gives_only_its_text_elements() {
        assert!(is_drawing("Drawing 2024.excalidraw.md", "# x"));
        assert!(is_drawing("Sketches/board.md", DRAWING));
        let NoteShape::Drawing { text: Some(text) } =
            classify("Drawing 2024.excalidraw.md", "Drawing 2024", DRAWING)
        else {
            panic!("a drawing with text");
        };
        assert_eq!(
            text,
            "# Drawing 2024\n\nIngest queue\n\n编译器 writes pages\n"
        );
        assert!(!text.contains("N4KA"), "no drawing data in the source");
    }

    #[test]
    fn a_drawing_without_text_elements_gives_no_text() {
        let bare = "---\nexcalidraw-plugin: parsed\n---\n# Text Elements\n%%\n# Drawing\n```json\n{\"type\":\"excalidraw\"}\n```\n%%\n";
        assert_eq!(
            classify("a.excalidraw.md", "a", bare),
            NoteShape::Drawing { text: None }
        );
    }

    #[test]
    fn templates_are_known_by_their_placeholders() {
        let templater = "# <% tp.date.now(\"YYYY-MM-DD\") %>\n\n## Tasks\n\n## Notes\n";
        assert_eq!(
            classify("Templates/Daily.md", "Daily", templater),
            NoteShape::Template {
                marker: "<% tp.date.now(\"YYYY-MM-DD\") %>".into()
            }
        );
        for (text, marker) in [
            ("# {{title}}\n\nCreated {{date:YYYY-MM-DD}}\n", "{{title}}"),
            ("会议记录 {{date}} {{time}}\n", "{{date}}"),
            ("<%* tR += tp.file.title %>\n", "<%* tR += tp.file.title %>"),
        ] {
            assert_eq!(template_marker(text).as_deref(), Some(marker), "{text:?}");
        }
    }

    #[test]
    fn placeholders_shown_as_code_or_other_braces_are_prose() {
        for text in [
            "# Templater\n\nWrite `<% tp.date.now() %>` to insert the date.\n",
            "# Templater\n\n```\n<% tp.file.title %>\n{{date}}\n```\n",
            "# Handlebars\n\nThe {{name}} variable and a {{ user }} greeting.\n",
            "# Maths\n\n5 < 6 % 4 and 10 % 3 > 0.\n",
        ] {
            assert_eq!(
                classify("Notes/x.md", "x", text),
                NoteShape::Prose,
                "{text:?}"
            );
        }
    }
}
