//! The layering of `src/`, checked: every `use crate::…` path and every `crate::x::…` path in
//! the code of every file under `src/` (test modules left out) is resolved through the crate's
//! re-exports (`pub use crate::…`) to the top-level module that defines it, and the import fails
//! the test when
//!
//! - (a) it comes from a higher layer than the importing module's,
//! - (b) it goes from one operation (layer 5) to another,
//! - (c) it goes between two top-level modules of one lower layer that [`SAME_LAYER`] does not
//!   list, or
//! - (d) the top-level modules import each other round a cycle;
//!
//! and a call fails it when
//!
//! - (e) an operation calls `self.f(…)` or `wiki.f(…)` where `f` is a `Wiki` method defined only
//!   in another operation's `impl … Wiki<S, C>` block (the operations never use each other, not
//!   even through methods on the one `Wiki` type; a method the kernel defines, or one defined in
//!   several modules, is fine), or the kernel calls a method an operation defines (it calls
//!   nothing above it).
//!
//! The layers (bottom-up; ARCHITECTURE.md draws them): 1 foundation, 2 mechanisms, 3 records, 4
//! the `wiki` kernel, 5 operations, 6 the JS bindings and the test doubles. A failure names the
//! file and the import. Known violations are listed, each with the work
//! that removes it, in [`ALLOWED`]; an entry that no longer matches anything fails the test too,
//! so the list only shrinks.
//!
//! The same file holds the size limits on `src/` (at most 800 lines per file and 150 per
//! function outside test code; see the *Size* section below), with [`OVERSIZE`] as their
//! shrink-only list.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layer of each top-level module of the crate.
const LAYERS: &[(&str, u8)] = &[
    // 1: foundation
    ("model", 1),
    ("error", 1),
    ("clock", 1),
    ("text", 1),
    ("util", 1),
    ("payload", 1),
    // 2: mechanisms
    ("markdown", 2),
    ("extractive", 2),
    ("search", 2),
    ("storage", 2),
    ("llm", 2),
    ("injection", 2),
    ("documents", 2),
    ("folder", 2),
    // 3: records
    ("records", 3),
    ("page_table", 3),
    ("vault_files", 3),
    // 4: the kernel
    ("wiki", 4),
    // 5: operations
    ("sources", 5),
    ("compile", 5),
    ("query", 5),
    ("lint", 5),
    ("history", 5),
    ("vault", 5),
    ("mirror", 5),
    ("search_ops", 5),
    ("settings", 5),
    // What an app shows beside the pages (answer rendering, open records, recall): composed of
    // reads, so it sits with the operations.
    ("views", 5),
    // 6: bindings and test doubles
    ("wasm", 6),
    ("scripted", 6),
];

/// Imports between two different top-level modules of one layer below the operations that are
/// allowed (importer, imported). Every other same-layer import in layers 1–4 fails.
const SAME_LAYER: &[(&str, &str)] = &[
    // Foundation: the model dates records with the clock's type; errors name a store.
    ("model", "clock"),
    ("error", "model"),
    // Mechanisms use the foundation only, except that extractive methods read markdown blocks
    // and the documents the app writes (index.md, the log) link pages with `markdown`'s writer.
    ("extractive", "markdown"),
    ("documents", "markdown"),
    // The page table is derived from the records and names them through `records`.
    ("page_table", "records"),
    // The vault's files carry records (undo records, secrets stripped from meta values).
    ("vault_files", "records"),
];

/// A known violation, kept until the change that removes it lands: the importing file, the item
/// it imports (the resolved path, e.g. `crate::compile::integrate::finalize_body`: one entry per
/// item, so a new import from the same module is not let through; for a call of rule (e), the
/// method as `Wiki::name`), and the work that removes it.
/// An entry that matches nothing fails [`layering_holds`], so the list only shrinks.
struct Allowed {
    file: &'static str,
    imports: &'static str,
    owner: &'static str,
}

const fn allow(file: &'static str, imports: &'static str, owner: &'static str) -> Allowed {
    Allowed {
        file,
        imports,
        owner,
    }
}

/// Known violations, each with the work that removes it (an entry left over fails the test).
/// None today: add one as `allow(file, imported item, the work that removes it)`.
const ALLOWED: &[Allowed] = &[];

/// The layer of top-level module `m` (`None`: not a module, e.g. `crate::Error` unresolved).
fn layer(m: &str) -> Option<u8> {
    LAYERS.iter().find(|(n, _)| *n == m).map(|(_, l)| *l)
}

/// One import found in a file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Import {
    /// The file (`src/…`).
    file: String,
    /// The path as written, made absolute (`crate::wiki::to_json`).
    path: String,
    /// The path after the crate's re-exports were followed (`crate::records::to_json`).
    resolved: String,
}

impl Import {
    /// The top-level module the resolved path is in.
    fn target(&self) -> &str {
        self.resolved.split("::").nth(1).unwrap_or("")
    }
}

/// The module path of a file under `src/` (`src/wiki/mod.rs` → `crate::wiki`).
fn module_of(file: &str) -> String {
    let rel = file.trim_start_matches("src/").trim_end_matches(".rs");
    let mut parts: Vec<&str> = rel.split('/').collect();
    if matches!(parts.last(), Some(&"mod") | Some(&"lib")) {
        parts.pop();
    }
    std::iter::once("crate")
        .chain(parts)
        .collect::<Vec<_>>()
        .join("::")
}

/// The top-level module of a file (`src/wiki/pages.rs` → `wiki`; `src/lib.rs` → empty).
fn top_of(file: &str) -> String {
    module_of(file).split("::").nth(1).unwrap_or("").to_string()
}

/// `src` without comments, and with string and char literals emptied, so neither a doc comment
/// nor a string that mentions `crate::x` counts as an import, and a brace in either does not
/// count as code. Every line break of what is dropped is kept, so lines keep their numbers.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    newline(b[i], &mut out);
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // A raw string r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c as char);
                i += 1;
                continue;
            }
            j += 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while j < b.len() && !b[j..].starts_with(&close) {
                newline(b[j], &mut out);
                j += 1;
            }
            i = j + close.len();
            out.push_str("\"\"");
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                if let Some(&c) = b.get(i) {
                    newline(c, &mut out);
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{0}') or a lifetime ('a).
            let rest = &src[i + 1..];
            let lit = if rest.starts_with('\\') {
                rest.find('\'').map(|e| e + 2)
            } else {
                let mut cs = rest.char_indices();
                match (cs.next(), cs.next()) {
                    (Some(_), Some((k, '\''))) => Some(k + 2),
                    _ => None,
                }
            };
            match lit {
                Some(len) => {
                    i += len;
                    out.push_str("' '");
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            // Copy one whole UTF-8 character.
            let ch = src[i..].chars().next().expect("a character");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Keeps a line break of dropped text.
fn newline(c: u8, out: &mut String) {
    if c == b'\n' {
        out.push('\n');
    }
}

/// The end (exclusive) of the item starting at `from`: the `;` before any `{`, else the brace
/// matching the first `{`.
fn item_end(s: &str, from: usize) -> usize {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b';' if depth == 0 => return i + 1,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// `code` (stripped) without the items under `#[cfg(test)]`, and the names of the modules
/// declared `#[cfg(test)] mod name;` (their files are test code too).
fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_files = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let end = item_end(after, 0);
        let item = after[..end].trim();
        if let Some(decl) = item
            .strip_prefix("mod ")
            .or_else(|| item.strip_prefix("pub mod "))
        {
            if let Some(name) = decl.strip_suffix(';') {
                test_files.push(name.trim().to_string());
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    (out, test_files)
}

/// Expands one `use` tree (`crate::a::{b, c::{d as e}}`) into full paths, each with the name it
/// binds (the last segment, or its alias).
fn expand_use(tree: &str) -> Vec<(String, String)> {
    fn split_top(s: &str) -> Vec<&str> {
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0, 0);
        for (i, c) in s.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&s[start..]);
        parts
    }
    fn go(prefix: &str, tree: &str, out: &mut Vec<(String, String)>) {
        let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
        let tree = tree.trim();
        if tree.is_empty() {
            return;
        }
        let join = |p: &str, s: &str| {
            if p.is_empty() {
                s.to_string()
            } else {
                format!("{p}::{s}")
            }
        };
        if let Some(open) = tree.find('{') {
            let head = tree[..open].trim().trim_end_matches("::").trim();
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let base = join(prefix, head);
            for part in split_top(inner) {
                go(&base, part, out);
            }
        } else {
            let (path, alias) = match tree.split_once(" as ") {
                Some((p, a)) => (p.trim(), Some(a.trim())),
                None => (tree, None),
            };
            if path == "self" {
                let name = prefix.rsplit("::").next().unwrap_or("");
                out.push((prefix.to_string(), alias.unwrap_or(name).to_string()));
            } else {
                let full = join(prefix, path.replace(' ', "").as_str());
                let name = full.rsplit("::").next().unwrap_or("").to_string();
                out.push((full, alias.map(str::to_string).unwrap_or(name)));
            }
        }
    }
    let mut out = Vec::new();
    go("", tree, &mut out);
    out
}

/// What one file says: its `use` statements (path, bound name, whether re-exported) and the
/// `crate::…` paths in the rest of its code.
struct Parsed {
    uses: Vec<(String, String, bool)>,
    paths: Vec<String>,
    test_files: Vec<String>,
    /// The methods its inherent `impl … Wiki<…>` blocks define.
    wiki_methods: Vec<String>,
    /// The methods it calls as `self.f(` or `wiki.f(`.
    calls: Vec<String>,
}

/// Whether `c` can be part of an identifier.
fn ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn parse(file: &str, src: &str) -> Parsed {
    let (code, test_files) = without_tests(&strip(src));
    let module = module_of(file);
    let is_root = file == "src/lib.rs";
    let mut uses = Vec::new();
    let mut rest_code = String::new();
    let b = code.as_bytes();
    let mut i = 0;
    let mut copied = 0;
    while let Some(off) = code[i..].find("use ") {
        let at = i + off;
        let boundary = at == 0 || !ident(b[at - 1]);
        if !boundary {
            i = at + 4;
            continue;
        }
        let end = item_end(&code, at);
        let stmt = &code[at + 4..end].trim_end_matches(';');
        // `pub use` / `pub(crate) use` re-export.
        let before = code[..at].trim_end();
        let public = before.ends_with("pub")
            || before.ends_with(')') && {
                let open = before.rfind('(').unwrap_or(0);
                before[..open].trim_end().ends_with("pub")
            };
        let stmt = stmt.trim().trim_start_matches("::");
        for (path, name) in expand_use(stmt) {
            let first = path.split("::").next().unwrap_or("");
            let full = match first {
                "crate" => path.clone(),
                "self" => path.replacen("self", &module, 1),
                "super" => {
                    let parent = module.rsplit_once("::").map_or("crate", |(p, _)| p);
                    path.replacen("super", parent, 1)
                }
                _ if is_root => format!("crate::{path}"),
                // A child module of this one (`pub use secrets::strip_secrets` in mod.rs).
                _ => format!("{module}::{path}"),
            };
            uses.push((full, name, public));
        }
        rest_code.push_str(&code[copied..at]);
        copied = end;
        i = end;
    }
    rest_code.push_str(&code[copied..]);
    let mut paths = Vec::new();
    let rb = rest_code.as_bytes();
    let mut j = 0;
    while let Some(off) = rest_code[j..].find("crate::") {
        let at = j + off;
        j = at + 7;
        if at > 0 && (ident(rb[at - 1]) || rb[at - 1] == b':') {
            continue;
        }
        let mut k = j;
        loop {
            let seg_start = k;
            while k < rb.len() && ident(rb[k]) {
                k += 1;
            }
            if k == seg_start {
                break;
            }
            if rest_code[k..].starts_with("::") && rb.get(k + 2).is_some_and(|c| ident(*c)) {
                k += 2;
            } else {
                break;
            }
        }
        paths.push(rest_code[at..k].trim_end_matches("::").to_string());
    }
    Parsed {
        uses,
        paths,
        test_files,
        wiki_methods: wiki_methods(&code),
        calls: method_calls(&code),
    }
}

/// The end (exclusive) of the balanced `<…>` starting at `from` (a `<`); `->` is not a bracket.
fn angle_end(b: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// The names of the methods defined directly in the inherent `impl … Wiki<…> { … }` blocks of
/// `code` (stripped, test modules left out); trait impls (`impl Drop for Wiki<…>`) and impls of
/// a `Wiki` without type parameters (the JS class) do not count.
fn wiki_methods(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = code[i..].find("impl") {
        let at = i + off;
        i = at + 4;
        if (at > 0 && ident(b[at - 1])) || b.get(at + 4).is_some_and(|c| ident(*c)) {
            continue;
        }
        let mut k = at + 4;
        while b.get(k).is_some_and(u8::is_ascii_whitespace) {
            k += 1;
        }
        if b.get(k) == Some(&b'<') {
            k = angle_end(b, k);
        }
        let Some(open) = code[k..].find('{').map(|o| k + o) else {
            break;
        };
        let header = code[k..open].split(" where ").next().unwrap_or("").trim();
        let ty = header.split('<').next().unwrap_or("").trim();
        // The kernel's `Wiki<S, C>`, not a type of the same name (the JS class in `wasm`).
        let generic = header[ty.len()..].trim_start().starts_with('<');
        if header.contains(" for ") || ty.rsplit("::").next() != Some("Wiki") || !generic {
            continue;
        }
        let end = item_end(code, open);
        let mut depth = 0usize;
        let body = &b[open + 1..end.saturating_sub(1)];
        for (j, c) in body.iter().enumerate() {
            match c {
                b'{' => depth += 1,
                b'}' => depth = depth.saturating_sub(1),
                b'f' if depth == 0
                    && body[j..].starts_with(b"fn ")
                    && (j == 0 || !ident(body[j - 1])) =>
                {
                    let name: String = body[j + 3..]
                        .iter()
                        .take_while(|c| ident(**c))
                        .map(|c| *c as char)
                        .collect();
                    if !name.is_empty() {
                        out.push(name);
                    }
                }
                _ => {}
            }
        }
        i = end;
    }
    out
}

/// The methods `code` (stripped, test modules left out) calls on `self` or on a value named
/// `wiki`: `self.f(`, `wiki.f(`, also across lines (`self\n    .f(`) and with a turbofish.
fn method_calls(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices('.') {
        let mut s = at;
        while s > 0 && b[s - 1].is_ascii_whitespace() {
            s -= 1;
        }
        let mut r = s;
        while r > 0 && ident(b[r - 1]) {
            r -= 1;
        }
        let receiver = &code[r..s];
        if receiver != "self" && receiver != "wiki" {
            continue;
        }
        let mut k = at + 1;
        while b.get(k).is_some_and(u8::is_ascii_whitespace) {
            k += 1;
        }
        let start = k;
        while b.get(k).is_some_and(|c| ident(*c)) {
            k += 1;
        }
        let name = &code[start..k];
        if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
            continue;
        }
        if code[k..].starts_with("::<") {
            k = angle_end(b, k + 2);
        }
        if b.get(k) == Some(&b'(') {
            out.push(name.to_string());
        }
    }
    out
}

/// The crate as the checker sees it: the imports of every file, resolved.
struct Crate {
    imports: Vec<Import>,
    /// Each `Wiki` method: the top-level modules whose `impl … Wiki` blocks define it.
    wiki_methods: BTreeMap<String, BTreeSet<String>>,
    /// Each `(file, method)` a file calls on `self` or `wiki` (see [`method_calls`]).
    calls: BTreeSet<(String, String)>,
}

/// Follows re-exports (`pub use` at `crate::m::Name` of `crate::x::…::Name`) until the path
/// names where its item is defined.
fn resolve(path: &str, reexports: &BTreeMap<String, String>) -> String {
    let mut p = path.to_string();
    for _ in 0..16 {
        let segs: Vec<&str> = p.split("::").collect();
        let mut next = None;
        for n in (2..=segs.len()).rev() {
            let prefix = segs[..n].join("::");
            if let Some(to) = reexports.get(&prefix) {
                if *to != prefix {
                    let tail = segs[n..].join("::");
                    next = Some(if tail.is_empty() {
                        to.clone()
                    } else {
                        format!("{to}::{tail}")
                    });
                    break;
                }
            }
        }
        match next {
            Some(n) if n != p => p = n,
            _ => break,
        }
    }
    p
}

/// Reads `files` (path under `src/`, text) into their resolved imports. Files declared as test
/// modules (`#[cfg(test)] mod tests;`) are left out.
fn analyse(files: &[(String, String)]) -> Crate {
    let parsed: Vec<(String, Parsed)> = files
        .iter()
        .map(|(f, s)| (f.clone(), parse(f, s)))
        .collect();
    let mut test_files = BTreeSet::new();
    for (f, p) in &parsed {
        let dir = if f.ends_with("mod.rs") || f.ends_with("lib.rs") {
            f.rsplit_once('/').map_or("", |(d, _)| d).to_string()
        } else {
            f.trim_end_matches(".rs").to_string()
        };
        for t in &p.test_files {
            test_files.insert(format!("{dir}/{t}.rs"));
            test_files.insert(format!("{dir}/{t}/mod.rs"));
        }
    }
    let mut reexports = BTreeMap::new();
    for (f, p) in &parsed {
        let module = module_of(f);
        for (path, name, public) in &p.uses {
            if *public && name != "*" && name != "_" {
                reexports.insert(format!("{module}::{name}"), path.clone());
            }
        }
    }
    let mut imports = Vec::new();
    let mut wiki_methods: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut calls = BTreeSet::new();
    for (f, p) in &parsed {
        if test_files.contains(f) || f == "src/lib.rs" {
            continue;
        }
        for m in &p.wiki_methods {
            wiki_methods.entry(m.clone()).or_default().insert(top_of(f));
        }
        for c in &p.calls {
            calls.insert((f.clone(), c.clone()));
        }
        let all = p
            .uses
            .iter()
            .map(|(path, _, _)| path.clone())
            .chain(p.paths.iter().cloned());
        for path in all {
            if !path.starts_with("crate::") {
                continue;
            }
            let resolved = resolve(&path, &reexports);
            imports.push(Import {
                file: f.clone(),
                path,
                resolved,
            });
        }
    }
    imports.sort();
    imports.dedup();
    Crate {
        imports,
        wiki_methods,
        calls,
    }
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Violation {
    file: String,
    /// The top-level module imported from.
    imports: String,
    /// The item imported, its path resolved through re-exports.
    item: String,
    /// What is wrong, naming the import.
    message: String,
}

/// Every import that breaks the layering, and every cycle among top-level modules. Imports
/// `allowed` lists are left out of the cycles (they are reported, or allowed, as imports).
fn check(krate: &Crate, allowed: &[Allowed]) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut edges: BTreeMap<String, BTreeMap<String, &Import>> = BTreeMap::new();
    for imp in &krate.imports {
        let (from, to) = (top_of(&imp.file), imp.target().to_string());
        let (Some(lf), Some(lt)) = (layer(&from), layer(&to)) else {
            continue;
        };
        if from == to {
            continue;
        }
        if !allowed
            .iter()
            .any(|a| a.file == imp.file && a.imports == imp.resolved)
        {
            edges
                .entry(from.clone())
                .or_default()
                .entry(to.clone())
                .or_insert(imp);
        }
        let shown = if imp.path == imp.resolved {
            imp.path.clone()
        } else {
            format!("{} (= {})", imp.path, imp.resolved)
        };
        let message = if lt > lf {
            Some(format!(
                "{}: `{shown}`: {from} (layer {lf}) imports from {to}, a higher layer ({lt})",
                imp.file
            ))
        } else if lt == lf && lf == 5 {
            Some(format!(
                "{}: `{shown}`: operation {from} imports operation {to}; shared logic goes down \
                 a layer",
                imp.file
            ))
        } else if lt == lf && lf < 5 && !SAME_LAYER.contains(&(from.as_str(), to.as_str())) {
            Some(format!(
                "{}: `{shown}`: {from} imports {to} of its own layer ({lf}), which is not listed \
                 in SAME_LAYER",
                imp.file
            ))
        } else {
            None
        };
        if let Some(message) = message {
            out.push(Violation {
                file: imp.file.clone(),
                imports: to,
                item: imp.resolved.clone(),
                message,
            });
        }
    }
    out.extend(cross_operation_calls(krate));
    // Cycles: a path back from `to` to `from` for an edge from → to.
    // Only an edge that does not go down can close a cycle's loop (a cycle has at least one), so
    // the legitimate downward imports on it are not reported.
    for (from, tos) in &edges {
        for (to, imp) in tos {
            if layer(to) < layer(from) {
                continue;
            }
            if let Some(back) = path_between(&edges, to, from) {
                let mut cycle = vec![from.clone()];
                cycle.extend(back);
                out.push(Violation {
                    file: imp.file.clone(),
                    imports: to.clone(),
                    item: imp.resolved.clone(),
                    message: format!(
                        "{}: `{}`: closes the cycle {} across folders",
                        imp.file,
                        imp.path,
                        cycle.join(" → ")
                    ),
                });
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Rule (e): every call in an operation's file of a `Wiki` method that only another operation
/// defines (not the kernel, and not several modules), and every call in the kernel of a method
/// an operation defines. The bindings (layer 6) may call anything; layers 1-3 cannot name `Wiki`
/// (the import rules see to that), and there `self` is another type.
fn cross_operation_calls(krate: &Crate) -> Vec<Violation> {
    let mut out = Vec::new();
    for (file, method) in &krate.calls {
        let from = top_of(file);
        let Some(from_layer) = layer(&from) else {
            continue;
        };
        let Some(owners) = krate.wiki_methods.get(method) else {
            continue;
        };
        let Some(owner) = owners.iter().next().filter(|_| owners.len() == 1) else {
            continue;
        };
        let Some(owner_layer) = layer(owner) else {
            continue;
        };
        let message = if *owner == from || from_layer == 6 {
            continue;
        } else if from_layer == 5 && owner_layer == 5 {
            format!(
                "{file}: `Wiki::{method}`: operation {from} calls a method of operation {owner}; \
                 shared logic goes down a layer"
            )
        } else if from_layer == 4 && owner_layer > 4 {
            format!(
                "{file}: `Wiki::{method}`: {from} (layer {from_layer}) calls a method of {owner} \
                 (layer {owner_layer}), above it"
            )
        } else {
            continue;
        };
        out.push(Violation {
            file: file.clone(),
            imports: owner.clone(),
            item: format!("Wiki::{method}"),
            message,
        });
    }
    out
}

/// The modules on a path of imports from `a` to `b` (both included), if there is one.
fn path_between(
    edges: &BTreeMap<String, BTreeMap<String, &Import>>,
    a: &str,
    b: &str,
) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![vec![a.to_string()]];
    while let Some(path) = stack.pop() {
        let last = path.last().expect("a path").clone();
        if last == b {
            return Some(path);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for next in edges.get(&last).into_iter().flat_map(|m| m.keys()) {
            let mut p = path.clone();
            p.push(next.clone());
            stack.push(p);
        }
    }
    None
}

/// Every `.rs` file under `dir`, as (path relative to the crate root, text).
fn read_tree(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_tree(root, &p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).expect("under the root");
            let rel = rel.to_string_lossy().replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&p).expect("source is UTF-8")));
        }
    }
}

/// Splits `violations` into those [`ALLOWED`] lists and the rest, and returns the allow-list
/// entries that matched nothing.
fn apply_allowed(
    violations: Vec<Violation>,
    allowed: &[Allowed],
) -> (Vec<Violation>, Vec<&Allowed>) {
    let mut used = vec![false; allowed.len()];
    let mut left = Vec::new();
    for v in violations {
        match allowed
            .iter()
            .position(|a| a.file == v.file && a.imports == v.item)
        {
            Some(i) => used[i] = true,
            None => left.push(v),
        }
    }
    let stale = allowed
        .iter()
        .zip(used)
        .filter(|(_, u)| !u)
        .map(|(a, _)| a)
        .collect();
    (left, stale)
}

#[test]
fn layering_holds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    read_tree(root, &root.join("src"), &mut files);
    assert!(files.len() > 50, "read {} files", files.len());
    let krate = analyse(&files);
    for (file, _) in &files {
        let top = top_of(file);
        assert!(
            file == "src/lib.rs" || layer(&top).is_some(),
            "{file}: its top-level module {top} has no layer in LAYERS: add it"
        );
    }
    let (left, stale) = apply_allowed(check(&krate, ALLOWED), ALLOWED);
    // A SAME_LAYER pair that no import uses is an allowance nothing needs: it fails too.
    let used_pairs: BTreeSet<(String, String)> = krate
        .imports
        .iter()
        .map(|i| (top_of(&i.file), i.target().to_string()))
        .collect();
    let unused: Vec<String> = SAME_LAYER
        .iter()
        .filter(|(a, b)| !used_pairs.contains(&(a.to_string(), b.to_string())))
        .map(|(a, b)| format!("SAME_LAYER entry ({a}, {b}) matches no import: remove it"))
        .collect();
    assert!(unused.is_empty(), "{}", unused.join("\n"));
    let mut report = String::new();
    for v in &left {
        report.push_str(&v.message);
        report.push('\n');
    }
    for a in &stale {
        report.push_str(&format!(
            "ALLOWED entry {} → {} ({}) matches nothing now: remove it\n",
            a.file, a.imports, a.owner
        ));
    }
    assert!(report.is_empty(), "the layering is broken:\n{report}");
}

/// A tiny crate with one of each violation, to show the checker catches them and names them.
fn fixture() -> Vec<(String, String)> {
    let f = |p: &str, s: &str| (p.to_string(), s.to_string());
    vec![
        f(
            "src/lib.rs",
            "pub mod model;\npub mod wiki;\npub use error::{Error, Result};\n",
        ),
        f(
            "src/model.rs",
            "//! Uses `crate::wiki` only in a comment.\nuse crate::clock::Millis;\n\
             pub fn s() -> &'static str { \"crate::vault::x\" }\n",
        ),
        f("src/error.rs", "pub enum Error {}\n"),
        // (a) a mechanism importing the kernel, through a re-export of the model.
        f(
            "src/markdown/page.rs",
            "use crate::wiki::PageEdit;\nuse crate::{model::Page, text::{self, nfc as n}};\n",
        ),
        f(
            "src/wiki/mod.rs",
            "pub use crate::model::PageEdit;\nuse crate::history::undo_key;\n",
        ),
        // (b) operation to operation, written as a path in code.
        f(
            "src/history.rs",
            "fn f() { let _ = crate::vault::strip_secrets; }\n\
             #[cfg(test)]\nmod tests { use crate::lint::Finding; }\n",
        ),
        f(
            "src/vault/mod.rs",
            "use crate::wiki::Wiki;\n#[cfg(test)]\nmod tests;\n",
        ),
        f("src/vault/tests.rs", "use crate::history::x;\n"),
        // (c) a same-layer import that is not listed.
        f(
            "src/search/persist.rs",
            "use crate::storage::{Batch, Store};\n",
        ),
    ]
}

#[test]
fn the_checker_names_each_broken_rule() {
    let krate = analyse(&fixture());
    let messages: Vec<String> = check(&krate, &[]).into_iter().map(|v| v.message).collect();
    let has = |needle: &str| messages.iter().any(|m| m.contains(needle));
    // A re-export is followed: `crate::wiki::PageEdit` is the model's, so markdown may use it.
    assert!(
        !has("src/markdown/page.rs: `crate::wiki::PageEdit"),
        "{messages:#?}"
    );
    // (a) the kernel importing an operation.
    assert!(
        has("src/wiki/mod.rs: `crate::history::undo_key`: wiki (layer 4) imports from history"),
        "{messages:#?}"
    );
    // (b) an operation importing another, from a path in code; test modules do not count.
    assert!(
        has("src/history.rs: `crate::vault::strip_secrets`: operation history imports operation vault"),
        "{messages:#?}"
    );
    assert!(!has("crate::lint::Finding"), "{messages:#?}");
    assert!(!has("src/vault/tests.rs"), "{messages:#?}");
    // (c) an unlisted same-layer import.
    assert!(
        has("src/search/persist.rs: `crate::storage::Batch`: search imports storage of its own layer"),
        "{messages:#?}"
    );
    // (d) the cycle wiki → history → vault → wiki.
    assert!(has("closes the cycle"), "{messages:#?}");
    assert!(
        has("wiki → history → vault → wiki")
            || has("history → vault → wiki → history")
            || has("vault → wiki → history → vault"),
        "{messages:#?}"
    );
    // Comments and strings are not imports.
    assert!(!has("src/model.rs"), "{messages:#?}");
}

/// A tiny crate of `impl Wiki` blocks, for rule (e): the kernel defines `page`, vault `assets`
/// and `drop` (the latter in a trait impl), two operations `both`.
fn call_fixture() -> Vec<(String, String)> {
    let f = |p: &str, s: &str| (p.to_string(), s.to_string());
    let block = |fns: &str| format!("impl<S: Storage, C: Clock> Wiki<S, C> {{\n{fns}}}\n");
    vec![
        f(
            "src/wiki/mod.rs",
            &format!(
                "pub struct Wiki<S, C>(S, C);\n{}",
                block(
                    "    pub async fn page(&self) -> u8 { 0 }\n    \
                     fn finish(&self) { self.rename_page(); }\n"
                )
            ),
        ),
        f(
            "src/vault/mod.rs",
            &format!(
                "{}impl<S: Storage, C: Clock> Drop for Wiki<S, C> {{\n    fn drop(&mut self) {{}}\n}}\n",
                block(
                    "    pub async fn assets(&self) -> u8 { 0 }\n    \
                     fn own(&self) { let _ = self.assets(); }\n"
                )
            ),
        ),
        f("src/settings.rs", &block("    fn both(&self) {}\n")),
        f("src/sources.rs", &block("    fn both(&self) {}\n")),
        // A call across lines, one in a comment, one in a string, one in a test module.
        f(
            "src/lint/mod.rs",
            &format!(
                "{}#[cfg(test)]\nmod tests {{\n    fn t(wiki: &W) {{ wiki.rename_page(); }}\n}}\n",
                block(
                    "    async fn lint(&self) {\n        let _ = self.page().await;\n        \
                     let _n = self\n            .assets()\n            .await;\n        \
                     // self.rename_page(\n        let _s = \"wiki.rename_page()\";\n        \
                     self.both();\n        let _ = self.assets;\n    }\n"
                )
            ),
        ),
        // Below the kernel `self` is another type, whatever its method is called.
        f(
            "src/search/persist.rs",
            "impl Index {\n    fn f(&self) { self.assets(); }\n}\n",
        ),
        // The JS class of the same name does not define the kernel's methods.
        f(
            "src/wasm/pages.rs",
            "impl Wiki {\n    pub fn assets(&self) {}\n}\n",
        ),
        // A free function over a `wiki` argument, with a turbofish.
        f(
            "src/history.rs",
            "fn undo<S, C>(wiki: &Wiki<S, C>) { wiki . assets::<u8>(); wiki.drop(); }\n",
        ),
        f(
            "src/vault/rename.rs",
            &block("    pub(crate) async fn rename_page(&self) {}\n"),
        ),
    ]
}

#[test]
fn the_checker_names_a_call_of_another_operations_method() {
    let krate = analyse(&call_fixture());
    assert_eq!(
        krate.wiki_methods.get("rename_page").map(|o| o.len()),
        Some(1)
    );
    assert!(!krate.wiki_methods.contains_key("drop"));
    let messages: Vec<String> = check(&krate, &[]).into_iter().map(|v| v.message).collect();
    assert_eq!(
        messages,
        [
            "src/history.rs: `Wiki::assets`: operation history calls a method of operation vault; \
             shared logic goes down a layer",
            "src/lint/mod.rs: `Wiki::assets`: operation lint calls a method of operation vault; \
             shared logic goes down a layer",
            "src/wiki/mod.rs: `Wiki::rename_page`: wiki (layer 4) calls a method of vault \
             (layer 5), above it",
        ],
        "the kernel calling up is reported; kernel methods (`page`), methods of several modules \
         (`both`), trait methods (`drop`), calls within one operation, calls below the kernel, in \
         comments, strings and test modules are not"
    );
    // The allow list takes a call as `Wiki::name`.
    let allowed = [allow("src/lint/mod.rs", "Wiki::assets", "a test")];
    let (left, stale) = apply_allowed(check(&krate, &allowed), &allowed);
    assert_eq!(left.len(), 2);
    assert!(stale.is_empty());
}

#[test]
fn use_trees_expand_and_re_exports_resolve() {
    let paths: Vec<String> = expand_use("crate::{model::Page, text::{self, nfc as n}}")
        .into_iter()
        .map(|(p, n)| format!("{p} as {n}"))
        .collect();
    assert_eq!(
        paths,
        [
            "crate::model::Page as Page",
            "crate::text as text",
            "crate::text::nfc as n"
        ]
    );
    let mut re = BTreeMap::new();
    re.insert(
        "crate::wiki::to_json".to_string(),
        "crate::records::to_json".to_string(),
    );
    re.insert(
        "crate::records::to_json".to_string(),
        "crate::records::codec::to_json".to_string(),
    );
    assert_eq!(
        resolve("crate::wiki::to_json", &re),
        "crate::records::codec::to_json"
    );
    assert_eq!(resolve("crate::wiki::Wiki", &re), "crate::wiki::Wiki");
}

#[test]
fn an_allow_list_entry_that_matches_nothing_is_reported() {
    let krate = analyse(&fixture());
    let allowed = [
        allow("src/search/persist.rs", "crate::storage::Batch", "a test"),
        allow("src/search/persist.rs", "crate::llm::Llm", "nobody"),
    ];
    let (left, stale) = apply_allowed(check(&krate, &allowed), &allowed);
    // The entry is per item: `Store`, from the same module as the allowed `Batch`, still fails.
    let persist: Vec<&str> = left
        .iter()
        .filter(|v| v.file == "src/search/persist.rs")
        .map(|v| v.item.as_str())
        .collect();
    assert_eq!(persist, ["crate::storage::Store"]);
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0].imports, "crate::llm::Llm");
}

// ---------------------------------------------------------------------------------------------
// Size: at most MAX_FILE_LINES lines per file under `src/` and MAX_FN_LINES lines per function,
// outside `#[cfg(test)]` code (CONTRIBUTING.md). A file's counted part is its lines before the
// first top-level `#[cfg(test)]` line; files a parent includes as `#[cfg(test)] mod x;` are not
// counted. A function runs from its `fn` line (doc comments excluded) to the brace that closes its
// body, counted on `strip`ped code so braces in strings, chars and comments do not count.

/// Lines per file, outside test modules.
const MAX_FILE_LINES: usize = 800;
/// Lines per function, from the `fn` line to the closing brace.
const MAX_FN_LINES: usize = 150;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The files included only under `#[cfg(test)]`: `#[cfg(test)] mod x;` names `x.rs` or `x/mod.rs`
/// beside the declaring file (or in its folder, for a `mod.rs`/`lib.rs`).
fn test_only_files(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim() != "#[cfg(test)]" {
                continue;
            }
            let Some(next) = lines.get(i + 1).map(|l| l.trim()) else {
                continue;
            };
            let Some(name) = next
                .strip_prefix("mod ")
                .or_else(|| next.strip_prefix("pub mod "))
                .or_else(|| next.strip_prefix("pub(crate) mod "))
                .and_then(|rest| rest.strip_suffix(';'))
            else {
                continue;
            };
            let stem = file.file_stem().unwrap().to_str().unwrap();
            let dir = if stem == "mod" || stem == "lib" {
                file.parent().unwrap().to_path_buf()
            } else {
                file.parent().unwrap().join(stem)
            };
            out.push(dir.join(format!("{name}.rs")));
            out.push(dir.join(name).join("mod.rs"));
        }
    }
    out
}

/// The lines of `text` before its first top-level `#[cfg(test)]`.
fn counted_lines(text: &str) -> Vec<&str> {
    text.lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .collect()
}

/// `(name, first line (1-based), length in lines)` of every function with a body in `lines`
/// (already passed through [`strip`]).
fn functions(lines: &[&str]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        let mut depth = 0i64;
        let mut opened = false;
        'scan: for (offset, l) in lines[start..].iter().enumerate() {
            for ch in l.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => {
                        depth -= 1;
                        if opened && depth == 0 {
                            out.push((name.clone(), start + 1, offset + 1));
                            break 'scan;
                        }
                    }
                    // A declaration without a body (trait method, extern fn).
                    ';' if !opened && depth == 0 => break 'scan,
                    _ => {}
                }
            }
        }
    }
    out
}

/// The name of the function a line declares, if it starts one.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    loop {
        let before = rest;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "async ",
            "const ",
            "unsafe ",
        ] {
            if let Some(r) = rest.strip_prefix(prefix) {
                rest = r;
            }
        }
        if let Some(r) = rest.strip_prefix("extern ") {
            rest = r.trim_start_matches(|c: char| c != ' ').trim_start();
        }
        if rest == before {
            break;
        }
    }
    let rest = rest.strip_prefix("fn ")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// One file or function over its limit: `(path from the crate root, the function's name or
/// "" for the file, its lines)`.
type Oversize = (String, String, usize);

/// Every file and function over its limit under `root` (a `src/` folder).
fn oversize(root: &Path) -> Vec<Oversize> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let test_only = test_only_files(&files);
    let mut out = Vec::new();
    for file in &files {
        if test_only.contains(file) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let counted = counted_lines(&text);
        let name = file
            .strip_prefix(root.parent().unwrap())
            .unwrap()
            .display()
            .to_string();
        if counted.len() > MAX_FILE_LINES {
            out.push((name.clone(), String::new(), counted.len()));
        }
        let code = strip(&counted.join("\n"));
        let code_lines: Vec<&str> = code.lines().collect();
        for (f, _, len) in functions(&code_lines) {
            if len > MAX_FN_LINES {
                out.push((name.clone(), f, len));
            }
        }
    }
    out
}

/// What is over a limit, as `(file, function or "" for the file, its lines now)`: none today.
/// The test fails when anything else is over, when an entry grows past the lines listed, and
/// when an entry is within the limit now (remove it).
const OVERSIZE: &[(&str, &str, usize)] = &[];

#[test]
fn every_file_and_function_in_src_is_within_its_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = oversize(&root);
    let new: Vec<String> = found
        .iter()
        .filter(|(f, n, len)| {
            !OVERSIZE
                .iter()
                .any(|(of, on, max)| of == f && on == n && len <= max)
        })
        .map(|(f, n, len)| match n.as_str() {
            "" => format!("{f}: {len} lines outside test modules (at most {MAX_FILE_LINES})"),
            n => format!("{f}: fn {n} is {len} lines (at most {MAX_FN_LINES})"),
        })
        .collect();
    let gone: Vec<String> = OVERSIZE
        .iter()
        .filter(|(f, n, _)| !found.iter().any(|(ff, nn, _)| ff == f && nn == n))
        .map(|(f, n, _)| format!("{f} {n}"))
        .collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "over the limits (or past the lines OVERSIZE lists):\n{}\nwithin the limits now (remove from OVERSIZE):\n{}",
        new.join("\n"),
        gone.join("\n")
    );
}

#[test]
fn the_lexer_ignores_braces_in_strings_chars_and_comments() {
    let src = "fn a() {\n    let s = \"}}\"; let c = '}'; let r = r#\"}\"#;\n    // }\n    /* } */ let l: &'static str = s;\n}\nfn b() {}\n";
    let code = strip(src);
    let lines: Vec<&str> = code.lines().collect();
    let found = functions(&lines);
    assert_eq!(
        found,
        vec![("a".to_string(), 1, 5), ("b".to_string(), 6, 1)]
    );
}

/// A scratch `src/` folder under the temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, files: &[(&str, String)]) -> Scratch {
        let dir = std::env::temp_dir().join(format!("llm-wiki-{name}-{}", std::process::id()));
        for (path, text) in files {
            let path = dir.join("src").join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Scratch(dir)
    }
    fn src(&self) -> PathBuf {
        self.0.join("src")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_long_function_and_a_long_file_are_reported() {
    let body = "    let _x = 1;\n".repeat(MAX_FN_LINES);
    let filler = "// filler\n".repeat(MAX_FILE_LINES + 1);
    let scratch = Scratch::new(
        "limits",
        &[
            ("long_fn.rs", format!("pub fn long() {{\n{body}}}\n")),
            (
                "long_file.rs",
                format!("{filler}#[cfg(test)]\nmod tests {{}}\n"),
            ),
            // Test code after `#[cfg(test)]` does not count.
            (
                "short.rs",
                format!("pub fn ok() {{}}\n#[cfg(test)]\nmod tests {{\n{filler}}}\n"),
            ),
        ],
    );
    let found = oversize(&scratch.src());
    let names: Vec<(&str, &str, usize)> = found
        .iter()
        .map(|(f, n, l)| (f.as_str(), n.as_str(), *l))
        .collect();
    assert_eq!(
        names,
        vec![
            ("src/long_file.rs", "", MAX_FILE_LINES + 1),
            ("src/long_fn.rs", "long", MAX_FN_LINES + 2)
        ]
    );
}
