//! The archives of Flux sources made in one expansion (`flux_ignore.rs`), by source tree and
//! `spec.ignore`: made once and shared by the units reading the same source, which would
//! each walk and link the tree again; removed when the expansion ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// A private directory holding an archive, or `None` for a tree read as it is.
pub type Archive = Option<Arc<tempfile::TempDir>>;

#[derive(Default)]
pub struct Archives(Mutex<HashMap<(PathBuf, Option<String>), Archive>>);

impl Archives {
    /// The archive of `key`, made by `make` the first time (an error is not kept).
    pub fn get_or_make<E>(
        &self,
        key: (PathBuf, Option<String>),
        make: impl FnOnce() -> Result<Archive, E>,
    ) -> Result<Archive, E> {
        // Held while making: units of the same source wait for one archive, not make two.
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(archive) = known.get(&key) {
            return Ok(archive.clone());
        }
        let archive = make()?;
        known.insert(key, archive.clone());
        Ok(archive)
    }
}
