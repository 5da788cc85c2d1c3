//! What sync tools leave when they cannot merge a file (issue #25, item 3): a *conflict copy*
//! beside it, or conflict markers inside it. The pull turns each into a conflict on the page
//! (the kind a page changed on both sides gives), so it is decided once, and never imports a copy
//! as a page of its own.
//!
//! | tool | what it leaves | example |
//! |---|---|---|
//! | Syncthing | `<name>.sync-conflict-<YYYYMMDD>-<HHMMSS>-<device>.<ext>` | `Rust.sync-conflict-20261204-213045-7ZQYK3M.md` |
//! | Dropbox | `<name> (<who>'s conflicted copy <date>).<ext>` | `Rust (Jane's conflicted copy 2026-12-04).md` |
//! | iCloud Drive | `<name> <n>.<ext>`, a copy of the file | `Rust 2.md` |
//! | git | `<<<<<<<`, `=======`, `>>>>>>>` lines after a failed merge | |
//!
//! iCloud's form is also an ordinary name ("Chapter 2"): a file is taken for its copy only when it
//! is new, no page has its name, and its frontmatter gives the title of the page it would copy
//! (a copy of the app's file does; a note a person started does not).

use serde::{Deserialize, Serialize};

/// The sync tool a conflict came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "lowercase")]
pub enum SyncTool {
    /// Syncthing's `.sync-conflict-…` copy.
    Syncthing,
    /// Dropbox's `(… conflicted copy …)` copy.
    Dropbox,
    /// iCloud Drive's `<name> 2` copy.
    #[serde(rename = "icloud")]
    ICloud,
    /// Conflict markers left in the file by a failed `git merge` or `git pull`.
    Git,
}

/// The file a conflict copy at `rel` copies (same folder), and the tool whose naming it follows,
/// for Syncthing's and Dropbox's names, which no one gives a note by chance. iCloud's
/// `<name> <n>` is [`icloud_original`]'s, as it needs more than the name.
pub fn named_copy_of(rel: &str) -> Option<(String, SyncTool)> {
    let (dir, file) = match rel.rsplit_once('/') {
        Some((d, f)) => (format!("{d}/"), f),
        None => (String::new(), rel),
    };
    let (stem, ext) = split_ext(file);
    if let Some(i) = stem.find(".sync-conflict-") {
        let tail = &stem[i + ".sync-conflict-".len()..];
        let parts: Vec<&str> = tail.split('-').collect();
        let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
        let device = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric());
        if i > 0
            && parts.len() == 3
            && digits(parts[0], 8)
            && digits(parts[1], 6)
            && device(parts[2])
        {
            return Some((format!("{dir}{}{ext}", &stem[..i]), SyncTool::Syncthing));
        }
    }
    if let Some(open) = stem
        .strip_suffix(')')
        .and_then(|s| s.rfind(" (").map(|i| (i, s)))
    {
        let (i, s) = open;
        let inner = s[i + 2..].to_lowercase();
        if i > 0 && inner.contains("conflicted copy") {
            return Some((format!("{dir}{}{ext}", &s[..i]), SyncTool::Dropbox));
        }
    }
    None
}

/// The file iCloud's copy at `rel` (`<name> <n>.<ext>`, n ≥ 2) would copy, by its name alone;
/// the caller checks the rest (see the module docs).
pub fn icloud_original(rel: &str) -> Option<String> {
    let (dir, file) = match rel.rsplit_once('/') {
        Some((d, f)) => (format!("{d}/"), f),
        None => (String::new(), rel),
    };
    let (stem, ext) = split_ext(file);
    let (name, n) = stem.rsplit_once(' ')?;
    let n: u32 = (!n.starts_with('0')).then_some(n)?.parse().ok()?;
    (n >= 2 && !name.trim().is_empty()).then(|| format!("{dir}{name}{ext}"))
}

/// `file` as (stem, extension with its dot); no extension gives `""`.
fn split_ext(file: &str) -> (&str, &str) {
    match file.rfind('.') {
        Some(i) if i > 0 => (&file[..i], &file[i..]),
        _ => (file, ""),
    }
}

/// When `text` holds git conflict markers (a line starting `<<<<<<< `, then `=======`, then one
/// starting `>>>>>>> `), the text with each conflicted hunk replaced by its incoming side (the
/// lines between `=======` and `>>>>>>>`: the other side's version, as `git checkout --theirs`
/// takes it), and the number of hunks. A diff3 base section (`|||||||`) is dropped. `None` when
/// there are no complete markers.
pub fn git_incoming(text: &str) -> Option<(String, usize)> {
    #[derive(PartialEq)]
    enum At {
        Outside,
        Ours,
        Base,
        Theirs,
    }
    let mut at = At::Outside;
    let mut out = String::with_capacity(text.len());
    let mut hunks = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        match at {
            At::Outside if bare.starts_with("<<<<<<<") => at = At::Ours,
            At::Ours if bare.starts_with("|||||||") => at = At::Base,
            At::Ours | At::Base if bare == "=======" => at = At::Theirs,
            At::Theirs if bare.starts_with(">>>>>>>") => {
                at = At::Outside;
                hunks += 1;
            }
            At::Outside | At::Theirs => out.push_str(line),
            At::Ours | At::Base => {}
        }
    }
    (hunks > 0 && at == At::Outside).then_some((out, hunks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_known_by_their_tools_names() {
        assert_eq!(
            named_copy_of("wiki/concept/Rust.sync-conflict-20261204-213045-7ZQYK3M.md"),
            Some(("wiki/concept/Rust.md".into(), SyncTool::Syncthing))
        );
        assert_eq!(
            named_copy_of("wiki/entity/所有权.sync-conflict-20261204-213045-ABCDEFG.md"),
            Some(("wiki/entity/所有权.md".into(), SyncTool::Syncthing))
        );
        assert_eq!(
            named_copy_of("wiki/concept/Rust (Jane Doe's conflicted copy 2026-12-04).md"),
            Some(("wiki/concept/Rust.md".into(), SyncTool::Dropbox))
        );
        assert_eq!(
            named_copy_of("wiki/concept/C++ (conflicted copy 2026-12-04 213045).md"),
            Some(("wiki/concept/C++.md".into(), SyncTool::Dropbox))
        );
        // Ordinary names, and near misses, are not copies.
        for name in [
            "wiki/concept/Rust.md",
            "wiki/concept/Rust (language).md",
            "wiki/concept/Rust.sync-conflict-2026-x.md",
            "wiki/concept/.sync-conflict-20261204-213045-ABCDEFG.md",
            "wiki/concept/Copies (conflicted copy).md.bak",
        ] {
            assert_eq!(named_copy_of(name), None, "{name}");
        }
        assert_eq!(
            icloud_original("wiki/concept/Rust 2.md"),
            Some("wiki/concept/Rust.md".into())
        );
        assert_eq!(icloud_original("wiki/concept/Rust 1.md"), None);
        assert_eq!(icloud_original("wiki/concept/Rust 02.md"), None);
        assert_eq!(icloud_original("wiki/concept/Rust.md"), None);
    }

    #[test]
    fn git_markers_give_the_incoming_side() {
        let text = "# Rust\n\nOne.\n<<<<<<< HEAD\nMine.\n=======\nTheirs.\n>>>>>>> origin/main\nTwo.\n<<<<<<< ours\na\n||||||| base\nb\n=======\nc\n>>>>>>> theirs\n";
        assert_eq!(
            git_incoming(text),
            Some(("# Rust\n\nOne.\nTheirs.\nTwo.\nc\n".into(), 2))
        );
        assert_eq!(git_incoming("# Rust\n\n=======\n\nA setext rule.\n"), None);
        assert_eq!(git_incoming("<<<<<<< HEAD\nunfinished\n=======\n"), None);
    }
}
