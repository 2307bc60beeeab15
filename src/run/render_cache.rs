//! Kept renders of Helm releases (see [`crate::render::helm_cache`]) as files of the cache
//! directory: `<cache dir>/helm-renders/<sha256>.json`, one per release render, written
//! atomically, owner-only. The file name mixes in the binary's identity, so a rebuilt or
//! upgraded tend never reads what another build rendered.

use crate::helm::chart::Manifest;
use crate::render::helm_cache::KeptRenders;
use sha2::Digest;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct FileRenderCache {
    dir: PathBuf,
    /// This binary: its version, size and modification time.
    build: String,
}

impl FileRenderCache {
    pub fn new(cache_dir: &Path) -> FileRenderCache {
        let exe = std::env::current_exe()
            .and_then(std::fs::metadata)
            .map(|m| {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                format!("{}:{modified}", m.len())
            })
            .unwrap_or_default();
        FileRenderCache {
            dir: cache_dir.join("helm-renders"),
            build: format!("{} {exe}", env!("CARGO_PKG_VERSION")),
        }
    }

    fn path(&self, key: &str) -> PathBuf {
        let mut hash = sha2::Sha256::new();
        hash.update(self.build.as_bytes());
        hash.update([0]);
        hash.update(key.as_bytes());
        self.dir
            .join(format!("{}.json", hex::encode(hash.finalize())))
    }

    /// What was kept under `keys`, for a render to take.
    pub fn read(&self, keys: &[String]) -> KeptRenders {
        let found = keys
            .iter()
            .filter_map(|key| {
                let bytes = std::fs::read(self.path(key)).ok()?;
                // A damaged entry is rendered again (and replaced).
                let manifests: Vec<Manifest> = serde_json::from_slice(&bytes).ok()?;
                Some((key.clone(), manifests))
            })
            .collect();
        KeptRenders::new(found)
    }

    /// Keep what a render added. Returns how many were written.
    pub fn write(&self, added: &[(String, Vec<Manifest>)]) -> usize {
        let mut written = 0;
        for (key, manifests) in added {
            let path = self.path(key);
            let result = serde_json::to_vec(manifests)
                .map_err(std::io::Error::other)
                .and_then(|bytes| write_private(&self.dir, &path, &bytes));
            match result {
                Ok(()) => written += 1,
                // Only a cost: the next run renders it again.
                Err(err) => {
                    tracing::debug!("cannot keep a Helm render in {}: {err}", path.display())
                }
            }
        }
        written
    }
}

/// Write `bytes` to `path` in `dir` (created owner-only) through a temporary file, so a
/// reader never sees half of it.
pub(super) fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(bytes)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_render_is_read_back_and_a_damaged_one_is_not() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = FileRenderCache::new(dir.path());
        let manifests = vec![Manifest {
            template: "templates/a.yaml".into(),
            crd: false,
            text: "kind: ConfigMap\n".into(),
            random: false,
        }];
        let keys = ["k".to_string(), "other".to_string()];
        assert_eq!(cache.read(&keys).get("k"), None);
        assert_eq!(cache.write(&[("k".to_string(), manifests.clone())]), 1);
        let kept = cache.read(&keys);
        assert_eq!(kept.get("k"), Some(manifests));
        assert_eq!(kept.get("other"), None);
        assert_eq!(kept.taken(), 1);
        std::fs::write(cache.path("k"), b"{not json").expect("write");
        assert_eq!(cache.read(&keys).get("k"), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("helm-renders"))
                .expect("dir")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }
}
