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
//! | git | `<<<<<<<`, `=======`, `>>>>>>>` lines after a failed merge or rebase | |
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

/// A marker line: the marker (seven characters, as git writes it) alone, or followed by a space
/// and a label.
fn is_marker(line: &str, marker: &str) -> bool {
    line == marker
        || line
            .strip_prefix(marker)
            .is_some_and(|l| l.starts_with(' '))
}

/// The two sides of a file with git conflict markers (a line `<<<<<<< …`, then `=======`, then
/// `>>>>>>> …`): the text with each conflicted hunk replaced by its first side ("ours", above
/// `=======`), and by its second ("theirs", the incoming side of a merge; during a rebase the
/// sides are the other way round). A diff3 base section (`||||||| …`) is dropped. `None` when
/// there are no complete markers. Marker lines inside a fenced code block (a page that shows
/// what a conflict looks like) are text, not markers.
pub fn git_sides(text: &str) -> Option<(String, String)> {
    #[derive(PartialEq)]
    enum At {
        Outside,
        Ours,
        Base,
        Theirs,
    }
    let mut at = At::Outside;
    let (mut ours, mut theirs) = (String::new(), String::new());
    let mut hunks = 0;
    // The fence a code block outside any hunk opened (its character and length), if one did.
    let mut fence: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if at == At::Outside {
            let t = bare.trim_start();
            let mark = t.chars().next().filter(|c| *c == '`' || *c == '~');
            let run = mark.map_or(0, |m| t.chars().take_while(|c| *c == m).count());
            match (fence, mark) {
                (None, Some(m)) if run >= 3 => fence = Some((m, run)),
                (Some((f, n)), Some(m)) if m == f && run >= n && t[run..].trim().is_empty() => {
                    fence = None
                }
                _ => {}
            }
            if fence.is_some() || run >= 3 {
                ours.push_str(line);
                theirs.push_str(line);
                continue;
            }
        }
        match at {
            At::Outside if is_marker(bare, "<<<<<<<") => at = At::Ours,
            At::Ours if is_marker(bare, "|||||||") => at = At::Base,
            At::Ours | At::Base if bare == "=======" => at = At::Theirs,
            At::Theirs if is_marker(bare, ">>>>>>>") => {
                at = At::Outside;
                hunks += 1;
            }
            At::Outside => {
                ours.push_str(line);
                theirs.push_str(line);
            }
            At::Ours => ours.push_str(line),
            At::Theirs => theirs.push_str(line),
            At::Base => {}
        }
    }
    (hunks > 0 && at == At::Outside).then_some((ours, theirs))
}

/// The other version a file with git conflict markers holds, as a conflict shows it beside the
/// wiki's (`mine`, the page's file as the app writes it): the incoming side, unless that is the
/// wiki's own version (a rebase puts the local commit there), then the other side. `None`
/// without markers.
pub fn git_other_version(text: &str, mine: Option<&str>) -> Option<String> {
    let (ours, theirs) = git_sides(text)?;
    Some(if Some(theirs.as_str()) == mine {
        ours
    } else {
        theirs
    })
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
    fn git_markers_give_both_sides() {
        let text = "# Rust\n\nOne.\n<<<<<<< HEAD\nMine.\n=======\nTheirs.\n>>>>>>> origin/main\nTwo.\n<<<<<<< ours\r\na\r\n||||||| base\r\nb\r\n=======\r\nc\r\n>>>>>>> theirs\r\n";
        assert_eq!(
            git_sides(text),
            Some((
                "# Rust\n\nOne.\nMine.\nTwo.\na\r\n".into(),
                "# Rust\n\nOne.\nTheirs.\nTwo.\nc\r\n".into()
            ))
        );
        // The other version is the incoming side, unless that is the wiki's own (a rebase).
        let ours = "# Rust\n\nOne.\nMine.\nTwo.\na\r\n";
        let theirs = "# Rust\n\nOne.\nTheirs.\nTwo.\nc\r\n";
        assert_eq!(git_other_version(text, Some(ours)).as_deref(), Some(theirs));
        assert_eq!(git_other_version(text, Some(theirs)).as_deref(), Some(ours));
        assert_eq!(git_sides("# Rust\n\n=======\n\nA setext rule.\n"), None);
        // Eight characters are not a marker.
        assert_eq!(git_sides("<<<<<<<< x\na\n=======\nb\n>>>>>>>> y\n"), None);
        // A page that shows what a conflict looks like, in a fenced block, is not one.
        let shown = "# Git\n\n```text\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> main\n```\n\n~~~~\n<<<<<<< a\n~~~\n=======\n>>>>>>> b\n~~~~\n";
        assert_eq!(git_sides(shown), None);
        // A real conflict after such a block still is.
        let both = format!("{shown}<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> main\n");
        assert_eq!(
            git_sides(&both),
            Some((format!("{shown}x\n"), format!("{shown}y\n")))
        );
        assert_eq!(git_sides("<<<<<<< HEAD\nunfinished\n=======\n"), None);
    }
}
