//! An in-memory [`Folder`]: native tests and benchmarks, with a failure injected after a number
//! of writes (a crash mid-mirror) and a record of every write and removal.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use super::{check_path, Entry, Folder};
use crate::error::{Error, Result};

/// An in-memory folder. Each write stamps the file with the next tick of a counter, as mtime.
#[derive(Debug, Default)]
pub struct MemoryFolder {
    files: RefCell<BTreeMap<String, (Vec<u8>, i64)>>,
    tick: Cell<i64>,
    fail_after: Cell<Option<usize>>,
    writes: RefCell<Vec<String>>,
    removals: RefCell<Vec<String>>,
}

impl MemoryFolder {
    /// An empty folder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every write or removal after the next `n` fail with [`Error::Folder`], until
    /// [`MemoryFolder::heal`].
    pub fn fail_after(&self, n: usize) {
        self.fail_after.set(Some(n));
    }

    /// Lets writes succeed again.
    pub fn heal(&self) {
        self.fail_after.set(None);
    }

    /// Paths written since the last [`MemoryFolder::take_log`], in order; then the removals.
    pub fn take_log(&self) -> (Vec<String>, Vec<String>) {
        (
            std::mem::take(&mut *self.writes.borrow_mut()),
            std::mem::take(&mut *self.removals.borrow_mut()),
        )
    }

    /// Every file, path → bytes.
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        crate::util::btree_map(
            self.files
                .borrow()
                .iter()
                .map(|(p, (b, _))| (p.clone(), b.clone())),
        )
    }

    /// Writes a file as another program would (not logged, never failing).
    pub fn put_outside(&self, path: &str, bytes: &[u8]) {
        let t = self.tick.get() + 1;
        self.tick.set(t);
        self.files
            .borrow_mut()
            .insert(path.to_string(), (bytes.to_vec(), t));
    }

    fn spend(&self, path: &str) -> Result<()> {
        match self.fail_after.get() {
            Some(0) => Err(Error::Folder {
                path: path.to_string(),
                message: "injected failure".into(),
            }),
            Some(n) => {
                self.fail_after.set(Some(n - 1));
                Ok(())
            }
            None => Ok(()),
        }
    }
}

impl Folder for MemoryFolder {
    async fn list(&self, dir: &str) -> Result<Vec<Entry>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            check_path(dir)?;
            format!("{dir}/")
        };
        Ok(self
            .files
            .borrow()
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .map(|(p, (b, t))| Entry {
                path: p.clone(),
                size: b.len() as u64,
                modified: *t,
            })
            .collect())
    }

    async fn list_top(&self, dir: &str) -> Result<Vec<Entry>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut all = self.list(dir).await?;
        all.retain(|e| !e.path[prefix.len()..].contains('/'));
        Ok(all)
    }

    async fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        check_path(path)?;
        Ok(self.files.borrow().get(path).map(|(b, _)| b.clone()))
    }

    async fn write(&self, path: &str, bytes: &[u8]) -> Result<Entry> {
        check_path(path)?;
        self.spend(path)?;
        self.put_outside(path, bytes);
        self.writes.borrow_mut().push(path.to_string());
        Ok(Entry {
            path: path.to_string(),
            size: bytes.len() as u64,
            modified: self.tick.get(),
        })
    }

    async fn remove(&self, path: &str) -> Result<()> {
        check_path(path)?;
        self.spend(path)?;
        if self.files.borrow_mut().remove(path).is_some() {
            self.removals.borrow_mut().push(path.to_string());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_folder_passes_the_conformance_suite() {
        futures::executor::block_on(crate::folder::conformance::run(&MemoryFolder::new())).unwrap();
    }

    #[test]
    fn an_injected_failure_writes_nothing() {
        futures::executor::block_on(async {
            let f = MemoryFolder::new();
            f.fail_after(1);
            f.write("a.md", b"a").await.unwrap();
            assert!(f.write("b.md", b"b").await.is_err());
            assert_eq!(f.read("b.md").await.unwrap(), None);
            f.heal();
            f.write("b.md", b"b").await.unwrap();
        });
    }
}
