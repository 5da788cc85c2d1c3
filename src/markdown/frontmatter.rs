//! YAML frontmatter: reading it in every real-world shape, writing exactly one block per page.
//!
//! Reading ([`parse_yaml`], [`split`]) uses `yaml-rust2` (Decision 11). The fields a page owns are
//! mapped by hand, forgivingly (field case F20):
//!
//! | key (any case)        | accepted shapes                                              |
//! |-----------------------|--------------------------------------------------------------|
//! | `title`               | string, number, boolean                                      |
//! | `aliases`, `alias`    | block or flow list, or one string split on commas            |
//! | `tags`, `tag`         | block or flow list, or a string split on commas and spaces;  |
//! |                       | leading `#` removed                                          |
//! | `summary`             | string                                                       |
//! | `sources`, `source`   | list or one string                                           |
//!
//! Every other top-level field is kept as the YAML text it had, verbatim and in order
//! ([`Frontmatter::extra`]), and written back after the known fields, so unknown fields round-trip
//! byte for byte. When the text cannot be cut into per-key pieces (a flow mapping at the root), the
//! unknown fields are re-emitted through yaml-rust2 instead: same values, new layout.
//!
//! Writing ([`write_block`]) emits the known fields in a fixed order with block lists
//! (`tags:\n  - rust`), through yaml-rust2's emitter for scalars, and double-quotes (with YAML
//! escapes) any string a YAML 1.1 parser would read as something else (dates, `1_000`, `0b1`) or
//! that holds control characters. A standard YAML parser reads every title back exactly.
//!
//! *Invariant:* [`write_block`] output parses with yaml-rust2 to the same known values, and contains
//! no key twice.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

/// Known frontmatter fields plus the unknown ones as raw YAML.
///
/// `None` means the key was absent; `Some(vec![])` means present but empty (`tags:`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontmatter {
    /// `title`.
    pub title: Option<String>,
    /// `aliases` / `alias`, trimmed, deduplicated case-insensitively, in order.
    pub aliases: Option<Vec<String>>,
    /// `tags` / `tag`, without `#`, deduplicated case-insensitively, in order.
    pub tags: Option<Vec<String>>,
    /// `summary`.
    pub summary: Option<String>,
    /// `sources` / `source`: source keys.
    pub sources: Option<Vec<String>>,
    /// Every other top-level field, as YAML text: each field's lines verbatim, in their order,
    /// ending with a newline (empty when there are none).
    pub extra: String,
    /// Known fields whose value had an unusable shape (e.g. `title: [a, b]`) and were dropped.
    pub dropped: Vec<String>,
}

impl Frontmatter {
    /// Adds `other`'s fields where `self` has none (scalars), or appends them (lists, extra);
    /// unknown fields whose key `self` already has are skipped, so no key appears twice.
    pub fn merge_missing(&mut self, other: Frontmatter) {
        fn list(a: &mut Option<Vec<String>>, b: Option<Vec<String>>, tags: bool) {
            if let Some(b) = b {
                let mut all = a.take().unwrap_or_default();
                all.extend(b);
                *a = Some(dedup_fold(all, tags));
            }
        }
        if self.title.is_none() {
            self.title = other.title;
        }
        if self.summary.is_none() {
            self.summary = other.summary;
        }
        list(&mut self.aliases, other.aliases, false);
        list(&mut self.tags, other.tags, true);
        list(&mut self.sources, other.sources, false);
        let have: Vec<String> = extra_keys(&self.extra);
        for (key, text) in extra_segments(&other.extra) {
            if !have.contains(&key) {
                self.extra.push_str(&text);
            }
        }
        self.dropped.extend(other.dropped);
    }
}

/// Why a frontmatter block could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError(pub String);

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid YAML frontmatter: {}", self.0)
    }
}

/// Splits a document into its frontmatter YAML and its body, exactly: the text must start with a
/// `---` line, and the block ends at the next `---` or `...` line. Returns `None` when there is no
/// such block. The body is everything after the closing line, byte for byte.
///
/// ```
/// use llm_wiki::markdown::frontmatter::split;
/// assert_eq!(split("---\ntitle: A\n---\n# A\n"), Some(("title: A\n", "# A\n")));
/// assert_eq!(split("# no frontmatter\n"), None);
/// ```
pub fn split(text: &str) -> Option<(&str, &str)> {
    let first_end = text.find('\n')?;
    if text[..first_end].trim_end() != "---" {
        return None;
    }
    let yaml_start = first_end + 1;
    let mut pos = yaml_start;
    while pos <= text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
        let line = text[pos..end].trim_end();
        if line == "---" || line == "..." {
            let body_start = (end + 1).min(text.len());
            return Some((&text[yaml_start..pos], &text[body_start..]));
        }
        if end == text.len() {
            break;
        }
        pos = end + 1;
    }
    None
}

/// Parses frontmatter YAML (without the `---` fences). Empty YAML or `null` gives an empty
/// [`Frontmatter`].
///
/// Errors: [`YamlError`] when the text is not YAML or its root is not a mapping. See
/// [`parse_yaml_lenient`] for text an LLM wrote.
pub fn parse_yaml(yaml: &str) -> Result<Frontmatter, YamlError> {
    check_size(yaml)?;
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| YamlError(e.to_string()))?;
    let root = match docs.into_iter().next() {
        None | Some(Yaml::Null) => return Ok(Frontmatter::default()),
        Some(Yaml::Hash(h)) => h,
        Some(_) => return Err(YamlError("the frontmatter is not a mapping".into())),
    };
    let mut fm = Frontmatter::default();
    let mut unknown = yaml_rust2::yaml::Hash::new();
    for (k, v) in root {
        let Some(name) = scalar_text(&k) else {
            unknown.insert(k, v);
            continue;
        };
        match name.to_lowercase().as_str() {
            "title" => match scalar_text(&v) {
                Some(t) if !t.trim().is_empty() => fm.title = Some(t.trim().to_string()),
                Some(_) => {}
                None => fm.dropped.push(name),
            },
            "summary" => match scalar_text(&v) {
                Some(t) => fm.summary = Some(t.trim().to_string()).filter(|t| !t.is_empty()),
                None => fm.dropped.push(name),
            },
            "aliases" | "alias" => {
                let items = string_items(&v, ListKind::Aliases, &mut fm.dropped, &name);
                let mut all = fm.aliases.take().unwrap_or_default();
                all.extend(items);
                fm.aliases = Some(dedup_fold(all, false));
            }
            "tags" | "tag" => {
                let items = string_items(&v, ListKind::Tags, &mut fm.dropped, &name);
                let mut all = fm.tags.take().unwrap_or_default();
                all.extend(items);
                fm.tags = Some(dedup_fold(all, true));
            }
            "sources" | "source" => {
                let items = string_items(&v, ListKind::Plain, &mut fm.dropped, &name);
                let mut all = fm.sources.take().unwrap_or_default();
                all.extend(items);
                fm.sources = Some(dedup_fold(all, false));
            }
            _ => {
                unknown.insert(k, v);
            }
        }
    }
    if !unknown.is_empty() {
        fm.extra = verbatim_unknown(yaml).unwrap_or_else(|| emit_hash(unknown));
    }
    Ok(fm)
}

/// Largest frontmatter read, in bytes.
pub const MAX_YAML_BYTES: usize = 256 * 1024;
/// Most aliases (`*name`) a frontmatter block may use. yaml-rust2 copies the anchored node for
/// every alias, so nested aliases grow exponentially ("billion laughs"); real frontmatter uses
/// none.
pub const MAX_YAML_ALIASES: usize = 64;

#[derive(Default)]
struct AliasCount(usize);

impl MarkedEventReceiver for AliasCount {
    fn on_event(&mut self, ev: Event, _: Marker) {
        if matches!(ev, Event::Alias(_)) {
            self.0 += 1;
        }
    }
}

/// Refuses frontmatter that is too large or uses too many aliases, before anything expands it.
fn check_size(yaml: &str) -> Result<(), YamlError> {
    if yaml.len() > MAX_YAML_BYTES {
        return Err(YamlError(format!(
            "the frontmatter is larger than {MAX_YAML_BYTES} bytes"
        )));
    }
    if yaml.contains('*') {
        let mut count = AliasCount::default();
        Parser::new_from_str(yaml)
            .load(&mut count, false)
            .map_err(|e| YamlError(e.to_string()))?;
        if count.0 > MAX_YAML_ALIASES {
            return Err(YamlError(format!(
                "the frontmatter uses more than {MAX_YAML_ALIASES} aliases"
            )));
        }
    }
    Ok(())
}

/// [`parse_yaml`], and when that fails, one repair an LLM commonly needs: a top-level
/// `key: value` line whose plain value contains `: ` or ` #` (e.g. `title: Rust: Ownership`) gets
/// its value quoted. Returns the frontmatter and whether it was repaired.
///
/// Errors: [`YamlError`] from the strict parse when the repair does not help.
pub fn parse_yaml_lenient(yaml: &str) -> Result<(Frontmatter, bool), YamlError> {
    let err = match parse_yaml(yaml) {
        Ok(fm) => return Ok((fm, false)),
        Err(e) => e,
    };
    let mut repaired = String::with_capacity(yaml.len() + 16);
    let mut changed = false;
    for line in yaml.split_inclusive('\n') {
        let (content, nl) = match line.strip_suffix('\n') {
            Some(c) => (c, "\n"),
            None => (line, ""),
        };
        match repair_line(content) {
            Some(fixed) => {
                repaired.push_str(&fixed);
                changed = true;
            }
            None => repaired.push_str(content),
        }
        repaired.push_str(nl);
    }
    if !changed {
        return Err(err);
    }
    parse_yaml(&repaired).map(|fm| (fm, true)).map_err(|_| err)
}

fn repair_line(line: &str) -> Option<String> {
    let first = line.chars().next()?;
    if first.is_whitespace() || matches!(first, '#' | '-' | '"' | '\'' | '{' | '[') {
        return None;
    }
    let colon = line.find(": ")?;
    let (key, value) = (&line[..colon], line[colon + 2..].trim());
    if key.is_empty() || key.contains(['"', '\'', '#']) || value.is_empty() {
        return None;
    }
    let quoted_or_structured = value.starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!']);
    if quoted_or_structured || !(value.contains(": ") || value.contains(" #")) {
        return None;
    }
    Some(format!("{key}: {}", double_quoted(value)))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ListKind {
    Tags,
    Aliases,
    Plain,
}

fn scalar_text(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn string_items(v: &Yaml, kind: ListKind, dropped: &mut Vec<String>, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut push_str = |s: &str, from_list: bool| match kind {
        ListKind::Tags => out.extend(
            s.split(|c: char| c == ',' || c.is_whitespace())
                .map(clean_tag)
                .filter(|t| !t.is_empty()),
        ),
        ListKind::Aliases if !from_list => out.extend(
            s.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string),
        ),
        _ => {
            let t = s.trim();
            if !t.is_empty() {
                out.push(t.to_string());
            }
        }
    };
    match v {
        Yaml::Null => {}
        Yaml::Array(items) => {
            for item in items {
                match scalar_text(item) {
                    Some(s) => push_str(&s, true),
                    None if *item == Yaml::Null => {}
                    None => dropped.push(format!("{key}[…]")),
                }
            }
        }
        other => match scalar_text(other) {
            Some(s) => push_str(&s, false),
            None => dropped.push(key.to_string()),
        },
    }
    out
}

/// A tag as stored: trimmed, without leading `#`.
pub fn clean_tag(t: &str) -> String {
    t.trim().trim_start_matches('#').trim().to_string()
}

fn dedup_fold(items: Vec<String>, tags: bool) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .map(|i| {
            if tags {
                clean_tag(&i)
            } else {
                i.trim().to_string()
            }
        })
        .filter(|i| !i.is_empty() && seen.insert(crate::markdown::keys::fold_key(i)))
        .collect()
}

/// Collects the line (1-based) of each key of the root mapping.
#[derive(Default)]
struct KeyLines {
    depth: usize,
    /// In the root mapping: whether the next node is a key.
    expect_key: bool,
    lines: Vec<usize>,
}

impl MarkedEventReceiver for KeyLines {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if self.depth == 1 {
                    if self.expect_key {
                        self.lines.push(mark.line());
                    }
                    self.expect_key = !self.expect_key;
                } else if self.depth == 0 {
                    self.expect_key = true;
                }
                self.depth += 1;
            }
            Event::MappingEnd | Event::SequenceEnd => self.depth = self.depth.saturating_sub(1),
            Event::Scalar(..) | Event::Alias(_) if self.depth == 1 => {
                if self.expect_key {
                    self.lines.push(mark.line());
                }
                self.expect_key = !self.expect_key;
            }
            _ => {}
        }
    }
}

/// Cuts a block mapping into one piece of text per root key: (lower-cased key, its lines).
/// Comment lines right above a key belong to that key. `None` when the text cannot be cut so
/// (keys sharing a line, a flow mapping at the root, a piece that does not parse on its own).
fn segments(yaml: &str) -> Option<Vec<(String, String)>> {
    let mut recv = KeyLines::default();
    Parser::new_from_str(yaml).load(&mut recv, false).ok()?;
    let lines: Vec<&str> = yaml.split_inclusive('\n').collect();
    let keys = recv.lines;
    if keys.is_empty() || keys.windows(2).any(|w| w[0] >= w[1]) {
        return None;
    }
    let is_comment = |i: usize| lines[i].starts_with('#');
    let is_blank = |i: usize| lines[i].trim().is_empty();
    // 0-based start line of each piece.
    let mut starts = Vec::with_capacity(keys.len());
    for (n, &k) in keys.iter().enumerate() {
        let line = lines.get(k.checked_sub(1)?)?;
        if line.starts_with([' ', '\t', '{', '-', '[']) {
            return None;
        }
        let floor = if n == 0 { 0 } else { keys[n - 1] };
        let mut s = k - 1;
        while s > floor && (is_comment(s - 1) || is_blank(s - 1)) {
            s -= 1;
        }
        while s < k - 1 && is_blank(s) {
            s += 1;
        }
        starts.push(if n == 0 { 0 } else { s });
    }
    let mut out = Vec::with_capacity(keys.len());
    for (n, &s) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(lines.len());
        let mut text: String = lines[s..end].concat();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let docs = YamlLoader::load_from_str(&text).ok()?;
        let Some(Yaml::Hash(h)) = docs.into_iter().next() else {
            return None;
        };
        if h.len() != 1 {
            return None;
        }
        let key = h.keys().next().and_then(scalar_text)?.to_lowercase();
        out.push((key, text));
    }
    Some(out)
}

/// The verbatim text of the root keys that are not known page fields, or `None` when the YAML
/// cannot be cut per key (see [`segments`]).
fn verbatim_unknown(yaml: &str) -> Option<String> {
    Some(
        segments(yaml)?
            .into_iter()
            .filter(|(k, _)| !is_known_key(k))
            .map(|(_, text)| text)
            .collect(),
    )
}

fn is_known_key(name: &str) -> bool {
    matches!(
        name.to_lowercase().as_str(),
        "title" | "summary" | "aliases" | "alias" | "tags" | "tag" | "sources" | "source"
    )
}

/// Splits `extra` (as produced by [`parse_yaml`]) into (lower-cased key, text) pieces.
fn extra_segments(extra: &str) -> Vec<(String, String)> {
    if extra.is_empty() {
        return vec![];
    }
    segments(extra).unwrap_or_default()
}

fn extra_keys(extra: &str) -> Vec<String> {
    extra_segments(extra).into_iter().map(|(k, _)| k).collect()
}

fn emit_hash(h: yaml_rust2::yaml::Hash) -> String {
    let mut out = String::new();
    let mut e = YamlEmitter::new(&mut out);
    e.multiline_strings(true);
    if e.dump(&Yaml::Hash(h)).is_err() {
        return String::new();
    }
    let body = out.strip_prefix("---\n").unwrap_or(&out).to_string();
    if body.is_empty() || body.ends_with('\n') {
        body
    } else {
        body + "\n"
    }
}

/// The known fields of a page's frontmatter, in the order [`write_block`] emits them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageFields<'a> {
    /// Written always.
    pub title: &'a str,
    /// Written as a block list when non-empty.
    pub aliases: &'a [String],
    /// Written as a block list, without `#`, when non-empty.
    pub tags: &'a [String],
    /// Written when non-empty.
    pub summary: &'a str,
    /// Source keys, written as a block list when non-empty.
    pub sources: &'a [String],
    /// Unknown fields, appended verbatim (see [`Frontmatter::extra`]).
    pub extra: &'a str,
}

/// Writes one frontmatter block, `---\n…---\n`, for `fields`.
///
/// ```
/// use llm_wiki::markdown::frontmatter::{write_block, PageFields};
/// let tags = vec!["rust".to_string()];
/// let block = write_block(&PageFields { title: "Rust: Ownership", tags: &tags, ..Default::default() });
/// assert_eq!(block, "---\ntitle: \"Rust: Ownership\"\ntags:\n  - rust\n---\n");
/// ```
pub fn write_block(fields: &PageFields<'_>) -> String {
    let mut out = String::from("---\n");
    out.push_str(&format!("title: {}\n", scalar(fields.title)));
    fn list(out: &mut String, name: &str, items: &[String], tags: bool) {
        let items: Vec<String> = items
            .iter()
            .map(|i| {
                if tags {
                    clean_tag(i)
                } else {
                    i.trim().to_string()
                }
            })
            .filter(|i| !i.is_empty())
            .collect();
        if !items.is_empty() {
            out.push_str(name);
            out.push_str(":\n");
            for i in items {
                out.push_str(&format!("  - {}\n", scalar(&i)));
            }
        }
    }
    list(&mut out, "aliases", fields.aliases, false);
    list(&mut out, "tags", fields.tags, true);
    if !fields.summary.trim().is_empty() {
        out.push_str(&format!("summary: {}\n", scalar(fields.summary.trim())));
    }
    list(&mut out, "sources", fields.sources, false);
    out.push_str(fields.extra);
    if !fields.extra.is_empty() && !fields.extra.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("---\n");
    out
}

/// One YAML scalar for `s`: yaml-rust2's emitter (which quotes what YAML 1.2 would misread), or a
/// double-quoted string with escapes when a YAML 1.1 parser would misread the emitter's plain form
/// or `s` has characters outside YAML's printable set.
pub fn scalar(s: &str) -> String {
    if yaml11_ambiguous(s) || s.chars().any(|c| !is_yaml_printable(c) || c == '\n') {
        return double_quoted(s);
    }
    let mut out = String::new();
    let mut e = YamlEmitter::new(&mut out);
    match e.dump(&Yaml::String(s.to_string())) {
        Ok(()) => out
            .strip_prefix("---")
            .map(|r| r.trim_start_matches([' ', '\n']).to_string())
            .unwrap_or(out),
        Err(_) => double_quoted(s),
    }
}

/// Plain scalars that YAML 1.1 resolves to non-strings but yaml-rust2 leaves unquoted: dates and
/// times, sexagesimal and underscored numbers, binary and octal literals.
fn yaml11_ambiguous(s: &str) -> bool {
    let mut chars = s.chars();
    let first = match chars.next() {
        Some(c) => c,
        None => return false,
    };
    let starts_numeric = first.is_ascii_digit()
        || (matches!(first, '+' | '-' | '.') && s[1..].starts_with(|c: char| c.is_ascii_digit()));
    starts_numeric
        && s.chars().all(|c| {
            c.is_ascii_hexdigit()
                || matches!(
                    c,
                    '_' | '.'
                        | ':'
                        | '-'
                        | '+'
                        | ' '
                        | 'x'
                        | 'X'
                        | 'o'
                        | 'O'
                        | 'b'
                        | 'B'
                        | 'T'
                        | 't'
                        | 'Z'
                        | 'z'
                )
        })
}

fn is_yaml_printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{7E}' | '\u{85}' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
        && c != '\u{FEFF}'
}

/// `s` as a YAML double-quoted scalar: `\\`, `"` and every character outside YAML's printable set
/// escaped.
pub fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if !is_yaml_printable(c) => {
                if (c as u32) <= 0xFFFF {
                    out.push_str(&format!("\\u{:04X}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08X}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> yaml_rust2::yaml::Hash {
        match YamlLoader::load_from_str(yaml).unwrap().remove(0) {
            Yaml::Hash(h) => h,
            other => panic!("not a mapping: {other:?}"),
        }
    }

    fn title_of(block: &str) -> String {
        let (yaml, _) = split(block).unwrap();
        load(yaml)[&Yaml::String("title".into())]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn tags(yaml: &str) -> Option<Vec<String>> {
        parse_yaml(yaml).unwrap().tags
    }

    #[test]
    fn f20_tags_and_aliases_in_every_shape() {
        let both = Some(vec!["rust".to_string(), "async".to_string()]);
        assert_eq!(tags("tags: rust, async\n"), both);
        assert_eq!(tags("tags: [rust, async]\n"), both);
        assert_eq!(tags("tags:\n  - rust\n  - \"#async\"\n"), both);
        assert_eq!(tags("tags:\n- rust\n- \"#async\"\n"), both);
        assert_eq!(tags("tag: rust\n"), Some(vec!["rust".to_string()]));
        let five = parse_yaml("aliases: Tokio runtime\ntags:\ncustom_field: {a: 1}\n").unwrap();
        assert_eq!(five.aliases, Some(vec!["Tokio runtime".to_string()]));
        assert_eq!(five.tags, Some(vec![]));
        assert_eq!(five.extra, "custom_field: {a: 1}\n");
        // More real-world shapes: space-separated tags, '#' in flow lists, numbers, duplicates.
        assert_eq!(
            tags("tags: \"#rust #async rust\"\n"),
            Some(vec!["rust".into(), "async".into()])
        );
        assert_eq!(
            tags("Tags: [2024, '#Rust', rust]\n"),
            Some(vec!["2024".into(), "Rust".into()])
        );
        assert_eq!(
            parse_yaml("alias: [AI, 人工智能, ai]\n").unwrap().aliases,
            Some(vec!["AI".into(), "人工智能".into()])
        );
        assert_eq!(
            parse_yaml("aliases: a, b\n").unwrap().aliases,
            Some(vec!["a".into(), "b".into()])
        );
        // Unusable shapes are dropped and reported, never a crash.
        let odd = parse_yaml("title: [a, b]\ntags: {x: 1}\n").unwrap();
        assert_eq!((odd.title, odd.tags), (None, Some(vec![])));
        assert_eq!(odd.dropped, vec!["title".to_string(), "tags".to_string()]);
    }

    #[test]
    fn f20_export_writes_block_lists_and_keeps_unknown_fields() {
        let five = parse_yaml("aliases: Tokio runtime\ntags:\ncustom_field: {a: 1}\n").unwrap();
        let block = write_block(&PageFields {
            title: "Tokio",
            aliases: five.aliases.as_deref().unwrap(),
            tags: &["#rust".into(), "async".into()],
            extra: &five.extra,
            ..Default::default()
        });
        assert_eq!(
            block,
            "---\ntitle: Tokio\naliases:\n  - Tokio runtime\ntags:\n  - rust\n  - async\ncustom_field: {a: 1}\n---\n"
        );
        let again = parse_yaml(split(&block).unwrap().0).unwrap();
        assert_eq!(again.extra, five.extra);
        assert_eq!(again.tags, Some(vec!["rust".into(), "async".into()]));
    }

    #[test]
    fn unknown_fields_are_verbatim_in_order_with_nesting_and_comments() {
        let yaml = "cssclass: wide\ntitle: X\nnested:\n  a: [1, 2]\n  b:\n    - c # note\ntags: [t]\n# trailing comment\nlast: 'q'\n";
        let fm = parse_yaml(yaml).unwrap();
        assert_eq!(
            fm.extra,
            "cssclass: wide\nnested:\n  a: [1, 2]\n  b:\n    - c # note\n# trailing comment\nlast: 'q'\n"
        );
        // A flow mapping root cannot be cut per key: the values are re-emitted instead.
        let fm = parse_yaml("{title: X, k: v}").unwrap();
        assert_eq!(fm.title.as_deref(), Some("X"));
        assert_eq!(fm.extra, "k: v\n");
    }

    #[test]
    fn f05d_titles_with_colons_and_quotes_round_trip() {
        for t in [
            "Rust: Ownership and Borrowing",
            "Tom's \"Quick\" Notes",
            "no",
            "2024-01-05",
            "1_000",
            "0b101",
            "12:30",
            "- dash",
            "#hash",
            "@at",
            "key: value # not a comment",
            "人工智能：概述",
            "tab\there",
            "null",
            "~",
            " padded ",
            "back\\slash",
        ] {
            let block = write_block(&PageFields {
                title: t,
                ..Default::default()
            });
            assert_eq!(title_of(&block), t, "{block}");
        }
        assert_eq!(
            write_block(&PageFields {
                title: "Rust: Ownership and Borrowing",
                ..Default::default()
            }),
            "---\ntitle: \"Rust: Ownership and Borrowing\"\n---\n"
        );
        assert_eq!(
            scalar("Tom's \"Quick\" Notes"),
            "\"Tom's \\\"Quick\\\" Notes\""
        );
        assert_eq!(scalar("2024-01-05"), "\"2024-01-05\"");
        assert_eq!(scalar("Tokio"), "Tokio");
    }

    #[test]
    fn f05d_unquoted_colon_titles_are_repaired() {
        let yaml = "title: Rust: Ownership and Borrowing\ntags: [rust]\n";
        assert!(parse_yaml(yaml).is_err());
        let (fm, repaired) = parse_yaml_lenient(yaml).unwrap();
        assert!(repaired);
        assert_eq!(fm.title.as_deref(), Some("Rust: Ownership and Borrowing"));
        assert_eq!(fm.tags, Some(vec!["rust".to_string()]));
        assert!(parse_yaml_lenient("a: [unclosed\n").is_err());
    }

    #[test]
    fn alias_bombs_and_huge_blocks_are_refused() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12u8 {
            let prev = (b'a' + i - 1) as char;
            let name = (b'a' + i) as char;
            let refs = vec![format!("*{prev}"); 10].join(", ");
            bomb.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        assert!(parse_yaml(&bomb).unwrap_err().0.contains("aliases"));
        assert!(parse_yaml(&"k: v\n".repeat(60_000))
            .unwrap_err()
            .0
            .contains("larger"));
        // A few aliases are fine.
        let fm = parse_yaml("base: &b {x: 1}\nother: *b\ntags: [a]\n").unwrap();
        assert_eq!(fm.tags, Some(vec!["a".to_string()]));
    }

    #[test]
    fn split_is_exact() {
        assert_eq!(split("---\n---\nbody"), Some(("", "body")));
        assert_eq!(
            split("---\na: 1\n...\n\nbody\n"),
            Some(("a: 1\n", "\nbody\n"))
        );
        assert_eq!(split("---\na: 1\n---"), Some(("a: 1\n", "")));
        assert_eq!(split("---\na: 1\n"), None);
        assert_eq!(split("--- \na: 1\n---  \nx"), Some(("a: 1\n", "x")));
        assert_eq!(split("----\n"), None);
    }

    #[test]
    fn merge_keeps_first_scalars_and_unions_lists_without_duplicate_keys() {
        let mut a = parse_yaml("title: Tokio\ntags: [rust]\ncustom: 1\n").unwrap();
        let b = parse_yaml("title: Other\ntags: [async, Rust]\ncustom: 2\nmore: x\n").unwrap();
        a.merge_missing(b);
        assert_eq!(a.title.as_deref(), Some("Tokio"));
        assert_eq!(a.tags, Some(vec!["rust".into(), "async".into()]));
        assert_eq!(a.extra, "custom: 1\nmore: x\n");
    }
}
