//! Kustomize builds kept from one run to the next (`<cache dir>/kustomize-builds/<key>.json`,
//! owner-only, written atomically): a build whose inputs are what they were builds to what it
//! built, so a no-op run does not start the builder again (running `kubectl kustomize` costs
//! far more than reading its output back).
//!
//! The key covers everything a build can read: every file of the unit's directory tree and of
//! each local path its kustomizations refer to, followed through the bases and components they
//! reach (relative names and contents, so a private copy of the tree keys as the tree itself),
//! the builder's command words and its executable (path, size, modification time). A build
//! that may read what is not a local file is never kept: a remote base, a kustomization's
//! `helmCharts` (which kustomize pulls), a path above the build's root, a symlink to a
//! directory. Builds of decrypted SOPS inputs are never kept either (the caller's rule).

use super::kustomize_refs::{is_remote, local_refs, KUSTOMIZATION_FILES};
use super::paths::normalize;
use sha2::Digest;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Component, Path, PathBuf};

/// Directories no build reads: git's own, and the overlays Argo CD sources are built through
/// (each keyed by its own text).
const SKIPPED_DIRS: [&str; 2] = [".git", ".tend-argo-overlay"];

/// Inputs larger than this are not hashed: the build is run instead.
const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// The key of a build of `dir` (relative to `root`) by the builder `words`, or `None` when it
/// must not be kept. `overlay` is the text of a kustomization file in `dir` that is not on
/// disk yet (an Argo CD source's options, written into a private copy only when built).
pub fn key(root: &Path, dir: &Path, overlay: Option<&str>, words: &[String]) -> Option<String> {
    let mut inputs = Inputs::default();
    let mut queue = VecDeque::from([dir.to_path_buf()]);
    if let Some(text) = overlay {
        inputs.kustomization(root, dir, &dir.join(KUSTOMIZATION_FILES[0]), text)?;
        queue.extend(inputs.pending.drain(..));
    }
    while let Some(path) = queue.pop_front() {
        if path
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return None;
        }
        if inputs.covered(&path) {
            continue;
        }
        inputs.add(root, &path)?;
        queue.extend(inputs.pending.drain(..));
    }
    let mut hash = sha2::Sha256::new();
    hash.update(format!(
        "tend {} kustomize build\0",
        env!("CARGO_PKG_VERSION")
    ));
    hash.update(builder_identity(words));
    hash.update([0]);
    hash.update(dir.to_string_lossy().as_bytes());
    hash.update([0]);
    for (path, digest) in &inputs.files {
        hash.update(path.to_string_lossy().as_bytes());
        hash.update([0]);
        hash.update(digest);
    }
    Some(hex::encode(hash.finalize()))
}

/// A build's output, with the notices the builder printed beside it (shown again whenever
/// the build is read back, as a run that built it would).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Kept {
    pub output: String,
    pub notes: Option<String>,
    /// The builder's command as messages show it.
    pub shown: String,
}

/// The kept build keyed `key`, its notices logged.
pub fn read(cache_dir: &Path, key: &str) -> Option<Kept> {
    let bytes = std::fs::read(entry(cache_dir, key)).ok()?;
    // A damaged entry is built again (and replaced).
    let kept: Kept = serde_json::from_slice(&bytes).ok()?;
    if let Some(notes) = &kept.notes {
        tracing::warn!("`{}`: {notes}", kept.shown);
    }
    Some(kept)
}

/// Keep a build; a failure only costs the next run a build.
pub fn write(cache_dir: &Path, key: &str, kept: &Kept) {
    use std::io::Write;
    let dir = cache_dir.join("kustomize-builds");
    let result = (|| -> std::io::Result<()> {
        let bytes = serde_json::to_vec(kept).map_err(std::io::Error::other)?;
        std::fs::create_dir_all(&dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let mut file = tempfile::NamedTempFile::new_in(&dir)?;
        file.write_all(&bytes)?;
        file.persist(entry(cache_dir, key)).map_err(|e| e.error)?;
        Ok(())
    })();
    if let Err(err) = result {
        tracing::debug!("cannot keep a kustomize build in {}: {err}", dir.display());
    }
}

fn entry(cache_dir: &Path, key: &str) -> PathBuf {
    cache_dir
        .join("kustomize-builds")
        .join(format!("{key}.json"))
}

/// The builder's words and its executable as found on PATH, with its size and modification
/// time: another kustomize (an upgrade) builds again.
fn builder_identity(words: &[String]) -> String {
    let program = words.first().map(String::as_str).unwrap_or_default();
    let found = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(program))
                .find(|candidate| candidate.is_file())
        })
    };
    let stamp = found
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}:{modified}", m.len())
        })
        .unwrap_or_default();
    format!(
        "{}\0{}\0{stamp}",
        words.join("\0"),
        found.map(|p| p.display().to_string()).unwrap_or_default()
    )
}

/// What one build reads, collected path by path.
#[derive(Default)]
struct Inputs {
    /// Every file, relative to the root, and the sha256 of its content.
    files: BTreeMap<PathBuf, Vec<u8>>,
    /// Directories whose whole tree is in `files`.
    dirs: Vec<PathBuf>,
    /// Paths the kustomizations read so far refer to, still to add.
    pending: Vec<PathBuf>,
    bytes: u64,
}

impl Inputs {
    fn covered(&self, path: &Path) -> bool {
        self.dirs.iter().any(|d| path.starts_with(d)) || self.files.contains_key(path)
    }

    /// Add the file or directory tree `path`; `None` when the build must not be kept.
    fn add(&mut self, root: &Path, path: &Path) -> Option<()> {
        let full = root.join(path);
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            // Missing: the builder says so, and a failed build is not kept.
            return Some(());
        };
        if meta.is_symlink() {
            let target = std::fs::metadata(&full).ok()?;
            if target.is_dir() {
                return None;
            }
        }
        if !std::fs::metadata(&full).ok()?.is_dir() {
            return self.file(root, path);
        }
        self.dirs.push(path.to_path_buf());
        let mut names: Vec<_> = std::fs::read_dir(&full)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        names.sort();
        for name in names {
            // A file already read stays as read: an overlay's kustomization (see [`key`])
            // stands for the file of that name on disk, as in the copy the build runs in.
            let child = path.join(&name);
            if SKIPPED_DIRS.iter().any(|s| name == *s) || self.files.contains_key(&child) {
                continue;
            }
            self.add(root, &child)?;
        }
        Some(())
    }

    fn file(&mut self, root: &Path, path: &Path) -> Option<()> {
        let bytes = std::fs::read(root.join(path)).ok()?;
        self.bytes += bytes.len() as u64;
        if self.bytes > MAX_INPUT_BYTES {
            return None;
        }
        let is_kustomization = path
            .file_name()
            .is_some_and(|n| KUSTOMIZATION_FILES.iter().any(|k| n == *k));
        if is_kustomization {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let dir = path.parent().unwrap_or(Path::new(""));
            self.kustomization(root, dir, path, &text)?;
        }
        self.files
            .insert(path.to_path_buf(), sha2::Sha256::digest(&bytes).to_vec());
        Some(())
    }

    /// Note what a kustomization refers to; `None` when it reaches past local files.
    fn kustomization(&mut self, root: &Path, dir: &Path, file: &Path, text: &str) -> Option<()> {
        let (docs, _) = crate::yaml::parse_file(file, text);
        if let Some(value) = docs.first().map(|d| &d.value) {
            // kustomize pulls the charts of `helmCharts`.
            if value.get("helmCharts").is_some() {
                return None;
            }
            for reference in local_refs(value) {
                if is_remote(&reference) {
                    return None;
                }
                let path = normalize(&dir.join(&reference));
                if !path.as_os_str().is_empty() && root.join(&path).exists() {
                    self.pending.push(path);
                } else if path.components().next() == Some(Component::ParentDir) {
                    return None;
                }
            }
        }
        self.files.insert(
            file.to_path_buf(),
            sha2::Sha256::digest(text.as_bytes()).to_vec(),
        );
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_key_follows_bases_outside_the_tree_and_refuses_remote_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(root, "base/kustomization.yaml", "resources: [cm.yaml]\n");
        write(root, "base/cm.yaml", "kind: ConfigMap\n");
        write(root, "app/kustomization.yaml", "resources: [../base]\n");
        write(root, "unrelated.yaml", "kind: Secret\n");
        let words = vec!["kustomize".to_string(), "build".to_string()];
        let first = key(root, Path::new("app"), None, &words).expect("kept");
        write(root, "unrelated.yaml", "kind: ConfigMap\n");
        assert_eq!(
            key(root, Path::new("app"), None, &words),
            Some(first.clone())
        );
        write(root, "base/cm.yaml", "kind: ConfigMap\nmetadata: {}\n");
        let second = key(root, Path::new("app"), None, &words).expect("kept");
        assert_ne!(first, second, "a base's file is an input");
        let other = vec!["kubectl".to_string(), "kustomize".to_string()];
        assert_ne!(key(root, Path::new("app"), None, &other), Some(second));
        write(
            root,
            "app/kustomization.yaml",
            "resources: [../base, https://github.com/org/repo//x?ref=v1]\n",
        );
        assert_eq!(key(root, Path::new("app"), None, &words), None);
        write(root, "app/kustomization.yaml", "helmCharts: [{name: x}]\n");
        assert_eq!(key(root, Path::new("app"), None, &words), None);
    }

    #[test]
    fn an_overlay_not_yet_written_keys_as_the_written_one() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(root, "app/kustomization.yaml", "resources: [cm.yaml]\n");
        write(root, "app/cm.yaml", "kind: ConfigMap\n");
        let words = vec!["kustomize".to_string()];
        let overlay = "resources: [../../app]\nnamePrefix: a-\n";
        let dir = Path::new("o/x");
        let virtual_key = key(root, dir, Some(overlay), &words).expect("kept");
        write(root, "o/x/kustomization.yaml", overlay);
        assert_eq!(key(root, dir, None, &words), Some(virtual_key));
    }
}
