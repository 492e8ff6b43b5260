//! Fresh SQLite files for tests: each store gets its own file in its own temporary directory,
//! removed when the store is dropped.

// Each test file uses a part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use accord_engine::task::TaskStore;
use accord_store_sqlite::{SqliteStore, SqliteStoreConfig};
use accord_test_support::{Tap, Wrapped};

/// A directory under the system's temporary directory, deleted with its contents on drop.
#[derive(Debug)]
pub(crate) struct ScratchDir(PathBuf);

impl ScratchDir {
    pub(crate) fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = format!(
            "accord-store-sqlite-{}-{}-{}",
            std::process::id(),
            accord_engine::task::now_ms(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(&path).expect("create a scratch directory");
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// The database file's path inside the directory.
    pub(crate) fn database(&self) -> PathBuf {
        self.0.join("tasks.db")
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A directory keeps nothing from the store it sits beside: it is only removed after it.
impl Tap for ScratchDir {}

/// A [`SqliteStore`] on a fresh file that is deleted when the store is dropped (the store is
/// dropped first, then its directory).
pub(crate) struct ScratchStore;

impl ScratchStore {
    pub(crate) async fn open_shared() -> Arc<dyn TaskStore> {
        let dir = ScratchDir::new();
        let store = SqliteStore::open(SqliteStoreConfig::new(dir.database())).await.expect("open a fresh SQLite store");
        Arc::new(Wrapped::new(Arc::new(store), dir))
    }
}
