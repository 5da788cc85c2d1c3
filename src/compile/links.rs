//! Links the compile writes: every `[[link]]` in a compiled body resolves, or becomes plain text
//! (field cases F18, F32). A self-link becomes plain text too.
//!
//! Matching is by [`match_key`] over page keys, titles and aliases; a link that resolves is
//! rewritten to Decision 6's form (`[[key]]` or `[[key|shown text]]`), keeping its alias text and
//! heading or block anchor.

use std::collections::BTreeMap;

use super::resolve::match_key;

/// Resolves link targets against a set of pages.
#[derive(Debug, Clone, Default)]
pub struct LinkTargets {
    by_key: BTreeMap<String, String>,
}

impl LinkTargets {
    /// Adds a page: its key, title and aliases all resolve to the key (the first page added wins a
    /// shared name, so add pages in a deterministic order).
    pub fn add(&mut self, key: &str, title: &str, aliases: &[String]) {
        for n in std::iter::once(key)
            .chain(std::iter::once(title))
            .chain(aliases.iter().map(String::as_str))
        {
            let k = match_key(n);
            if !k.is_empty() {
                self.by_key.entry(k).or_insert_with(|| key.to_string());
            }
        }
    }

    /// The page key a link target resolves to.
    pub fn resolve(&self, target: &str) -> Option<&str> {
        let t = target.trim();
        let t = t.strip_suffix(".md").unwrap_or(t);
        self.by_key.get(&match_key(t)).map(String::as_str)
    }
}

/// Rewrites every `[[target#anchor|alias]]` in `body` (outside code spans and fenced code): to
/// `[[key#anchor|alias]]` when it resolves to a page other than `self_key`, else to its alias (or
/// target) as plain text. Embeds (`![[…]]`) are left alone. Escaped table pipes (`\|`) are kept.
pub fn fix_links(body: &str, targets: &LinkTargets, self_key: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut in_fence = false;
    for (i, line) in body.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            in_fence = !in_fence;
            out.push_str(line);
            continue;
        }
        if in_fence {
            out.push_str(line);
            continue;
        }
        out.push_str(&fix_line(line, targets, self_key));
    }
    out
}

fn fix_line(line: &str, targets: &LinkTargets, self_key: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    let mut in_code = false;
    loop {
        let next_tick = rest.find('`');
        let next_link = if in_code { None } else { rest.find("[[") };
        match (next_tick, next_link) {
            (Some(t), Some(l)) if t < l => {
                out.push_str(&rest[..=t]);
                rest = &rest[t + 1..];
                in_code = !in_code;
            }
            (Some(t), None) => {
                out.push_str(&rest[..=t]);
                rest = &rest[t + 1..];
                in_code = !in_code;
            }
            (_, Some(l)) => {
                let Some(end_rel) = rest[l + 2..].find("]]") else {
                    out.push_str(rest);
                    return out;
                };
                let inner = &rest[l + 2..l + 2 + end_rel];
                let embed = rest[..l].ends_with('!');
                out.push_str(&rest[..l]);
                if embed || inner.contains('[') {
                    out.push_str(&rest[l..l + 4 + end_rel]);
                } else {
                    out.push_str(&rewrite(inner, targets, self_key));
                }
                rest = &rest[l + 4 + end_rel..];
            }
            (None, None) => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

fn rewrite(inner: &str, targets: &LinkTargets, self_key: &str) -> String {
    let (target_part, alias, escaped) = if let Some((t, a)) = inner.split_once("\\|") {
        (t, Some(a), true)
    } else if let Some((t, a)) = inner.split_once('|') {
        (t, Some(a), false)
    } else {
        (inner, None, false)
    };
    let (target, anchor) = match target_part.find('#') {
        Some(i) => (&target_part[..i], Some(&target_part[i..])),
        None => (target_part, None),
    };
    let shown = alias.unwrap_or(target).trim();
    match targets.resolve(target) {
        Some(key) if key != self_key => {
            let anchor = anchor.unwrap_or("");
            let pipe = if escaped { "\\|" } else { "|" };
            match alias {
                Some(a) => format!("[[{key}{anchor}{pipe}{}]]", a.trim()),
                None if key == target.trim() => format!("[[{key}{anchor}]]"),
                None => format!("[[{key}{anchor}{pipe}{}]]", target.trim()),
            }
        }
        _ => shown.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets() -> LinkTargets {
        let mut t = LinkTargets::default();
        t.add("Tokio", "Tokio", &[]);
        t.add("Rust", "Rust", &["Rust language".into()]);
        t.add("Futures", "Futures", &[]);
        t.add("Async IO", "Async IO", &[]);
        t.add("人工智能", "人工智能", &["Artificial Intelligence".into()]);
        t
    }

    #[test]
    fn f32_unknown_targets_become_text_and_self_links_go() {
        let body = "[[Tokio]] [[Rust]] [[Groundwater contamination]] [[Async IO]] [[Epoll]]";
        assert_eq!(
            fix_links(body, &targets(), "Async IO"),
            "[[Tokio]] [[Rust]] Groundwater contamination Async IO Epoll"
        );
    }

    #[test]
    fn f18_links_resolve_through_aliases_and_case() {
        let body = "[[artificial intelligence]] [[人工智能|AI]] [[Machine Learning]] [[rust#Ownership|own]] `[[Epoll]]` ![[diagram.png]]";
        assert_eq!(
            fix_links(body, &targets(), "X"),
            "[[人工智能|artificial intelligence]] [[人工智能|AI]] Machine Learning [[Rust#Ownership|own]] `[[Epoll]]` ![[diagram.png]]"
        );
    }

    #[test]
    fn table_pipes_and_fences_survive() {
        let body = "| [[Rust\\|Rust lang]] | fast |\n```\n[[Nope]]\n```\n| [[Nope\\|x]] | y |";
        assert_eq!(
            fix_links(body, &targets(), "X"),
            "| [[Rust\\|Rust lang]] | fast |\n```\n[[Nope]]\n```\n| x | y |"
        );
    }
}
