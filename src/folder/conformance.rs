//! The folder conformance suite: what every [`Folder`] must do, as one async function that
//! returns the first failure. `MemoryFolder` runs it natively; `tests/web.rs` runs it on a
//! `HandleFolder` over the origin-private file system in headless browsers. It expects an empty
//! folder and leaves it with the files it wrote removed.

use super::{Entry, Folder};
use crate::error::{Error, Result};

fn fail(what: String) -> Error {
    Error::Folder {
        path: String::new(),
        message: format!("conformance: {what}"),
    }
}

fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(fail(format!("{what}: got {got:?}, want {want:?}")))
    }
}

fn paths(entries: &[Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.path.as_str()).collect()
}

/// Runs every check on `folder` (empty at the start). Errors: the first check that failed, as
/// [`Error::Folder`], or the folder's own error.
pub async fn run(folder: &impl Folder) -> Result<()> {
    expect("an empty folder lists", folder.list("").await?.len(), 0)?;
    expect("a missing file reads", folder.read("a.md").await?, None)?;
    // Nested folders are created; CJK names and spaces are kept.
    folder
        .write("wiki/概念/检索 笔记.md", "正文".as_bytes())
        .await?;
    folder.write("a.md", b"one").await?;
    folder.write("wiki/b.md", b"").await?;
    expect(
        "reads back",
        folder.read("wiki/概念/检索 笔记.md").await?,
        Some("正文".as_bytes().to_vec()),
    )?;
    expect(
        "an empty file",
        folder.read("wiki/b.md").await?,
        Some(vec![]),
    )?;
    // A write replaces the whole file, also with fewer bytes.
    folder.write("a.md", b"two!").await?;
    let written = folder.write("a.md", b"3").await?;
    expect(
        "a shorter rewrite",
        folder.read("a.md").await?,
        Some(b"3".to_vec()),
    )?;
    let all = folder.list("").await?;
    // A write reports the file as the listing then shows it (size and mtime).
    expect(
        "the written file's entry",
        Some(&written),
        all.iter().find(|e| e.path == "a.md"),
    )?;
    let mut sorted = paths(&all);
    sorted.sort_unstable();
    expect("the listing is sorted", paths(&all), sorted)?;
    expect(
        "lists every file at any depth",
        paths(&all),
        vec!["a.md", "wiki/b.md", "wiki/概念/检索 笔记.md"],
    )?;
    let a = all.iter().find(|e| e.path == "a.md").map(|e| e.size);
    expect("the size", a, Some(1))?;
    expect(
        "a folder's listing",
        paths(&folder.list("wiki").await?),
        vec!["wiki/b.md", "wiki/概念/检索 笔记.md"],
    )?;
    expect(
        "a missing folder lists",
        folder.list("nope").await?.len(),
        0,
    )?;
    expect(
        "the top's files",
        paths(&folder.list_top("").await?),
        vec!["a.md"],
    )?;
    expect(
        "a folder's own files",
        paths(&folder.list_top("wiki").await?),
        vec!["wiki/b.md"],
    )?;
    expect(
        "a missing folder lists no file",
        folder.list_top("nope").await?.len(),
        0,
    )?;
    // Paths outside the folder are refused before anything is touched.
    for bad in ["../x.md", "/x.md", "a/../../x.md", "a\\b.md", ""] {
        if folder.write(bad, b"x").await.is_ok() {
            return Err(fail(format!("wrote outside the folder: {bad:?}")));
        }
    }
    folder.remove("a.md").await?;
    folder.remove("a.md").await?; // twice: no error
    folder.remove("wiki/b.md").await?;
    folder.remove("wiki/概念/检索 笔记.md").await?;
    expect("all removed", folder.list("").await?.len(), 0)?;
    Ok(())
}
