//! Extraction of one commit's tree into the cache, atomically, and bookkeeping of extracted trees.

use super::*;

/// Extract `commit`'s tree into `trees/<sha>` (or reuse it), atomically: written into a temp
/// dir beside it and renamed, so a crash never leaves a half tree under the final name.
pub(super) fn extract(
    ctx: &Ctx<'_>,
    repo: &Repository,
    repo_dir: &Path,
    commit: &git2::Commit<'_>,
    trees: &Path,
) -> Result<PathBuf, Failure> {
    let sha = commit.id().to_string();
    let dest = trees.join(&sha);
    if dest.is_dir() {
        return Ok(dest);
    }
    let tmp = trees.join(format!(".tmp-{sha}-{}", std::process::id()));
    remove_dir_if_exists(&tmp)?;
    fs::create_dir(&tmp).map_err(|source| GitError::CacheIo {
        action: "create",
        path: tmp.clone(),
        source,
    })?;
    let written = commit
        .tree()
        .map_err(|e| ctx.cache_err(repo_dir, &e))
        .and_then(|tree| {
            // Measured whole before anything is written: one subtree named a billion times
            // costs one read of it, not a billion files on disk.
            let mut measure = Measure::new(ctx, repo, repo_dir, &sha)?;
            let size = measure.tree(tree.id(), Path::new(""), 0)?;
            measure.within_limits(size, Path::new(""))?;
            write_tree(ctx, repo, repo_dir, &sha, &tree, &tmp)
        });
    if let Err(err) = written {
        let _ = fs::remove_dir_all(&tmp);
        return Err(err);
    }
    match fs::rename(&tmp, &dest) {
        Ok(()) => Ok(dest),
        // Another tend run extracted the same commit at the same time: use theirs.
        Err(_) if dest.is_dir() => {
            let _ = fs::remove_dir_all(&tmp);
            Ok(dest)
        }
        Err(source) => {
            let _ = fs::remove_dir_all(&tmp);
            Err(Failure::Final(GitError::CacheIo {
                action: "rename the extracted tree to",
                path: dest,
                source,
            }))
        }
    }
}

/// How deep directories may nest: far past any real repository (paths of more than 4,096
/// bytes, Linux's `PATH_MAX`, cannot be written anyway), and shallow enough that measuring
/// and writing, which recurse, never run out of stack.
const MAX_TREE_DEPTH: usize = 512;

/// Entries and bytes of a tree as it would be checked out.
#[derive(Clone, Copy, Default)]
struct Size {
    entries: u64,
    bytes: u64,
}

/// The size of trees as checked out, each distinct tree and blob read once (against
/// [`TreeLimits`]): a tree is a DAG, and a bomb names one object many times.
struct Measure<'a, 'r> {
    ctx: &'a Ctx<'a>,
    repo_dir: &'a Path,
    sha: &'a str,
    repo: &'r Repository,
    odb: git2::Odb<'r>,
    trees: std::collections::HashMap<Oid, Size>,
}

impl<'a, 'r> Measure<'a, 'r> {
    fn new(
        ctx: &'a Ctx<'a>,
        repo: &'r Repository,
        repo_dir: &'a Path,
        sha: &'a str,
    ) -> Result<Self, Failure> {
        let odb = repo.odb().map_err(|e| ctx.cache_err(repo_dir, &e))?;
        Ok(Measure {
            ctx,
            repo_dir,
            sha,
            repo,
            odb,
            trees: Default::default(),
        })
    }

    fn refuse(&self, what: String, limit: String, way_out: String) -> Failure {
        Failure::Final(GitError::TreeTooLarge {
            commit: self.sha.to_string(),
            url: self.ctx.url.clone(),
            what,
            limit,
            way_out,
        })
    }

    /// Refuses `size` (of the tree at `path`) if past a limit.
    fn within_limits(&self, size: Size, path: &Path) -> Result<(), Failure> {
        let limits = &self.ctx.spec.limits;
        let at = if path.as_os_str().is_empty() {
            String::new()
        } else {
            format!(" (reached in {})", path.display())
        };
        if size.entries > limits.files {
            return Err(self.refuse(
                format!("its tree holds more than {} entries{at}", limits.files),
                format!("{} files, directories and symlinks", limits.files),
                "raise the limit with --max-source-files".into(),
            ));
        }
        if size.bytes > limits.bytes {
            return Err(self.refuse(
                format!("its files hold more than {} bytes{at}", limits.bytes),
                format!("{} bytes in all", limits.bytes),
                "raise the limit with --max-source-bytes".into(),
            ));
        }
        Ok(())
    }

    /// The size of tree `id`, found at `path` (`depth` levels down), as [`write_tree`]
    /// writes it.
    fn tree(&mut self, id: Oid, path: &Path, depth: usize) -> Result<Size, Failure> {
        if let Some(size) = self.trees.get(&id) {
            return Ok(*size);
        }
        if depth > MAX_TREE_DEPTH {
            return Err(self.refuse(
                format!("its directories nest more than {MAX_TREE_DEPTH} levels deep"),
                format!("{MAX_TREE_DEPTH} levels"),
                "no real repository nests that deep".into(),
            ));
        }
        let cache_err = |e: git2::Error| self.ctx.cache_err(self.repo_dir, &e);
        let tree = self.repo.find_tree(id).map_err(cache_err)?;
        let mut size = Size::default();
        for entry in tree.iter() {
            if entry.name_bytes().eq_ignore_ascii_case(b".git") {
                continue;
            }
            let name = String::from_utf8_lossy(entry.name_bytes());
            let entry_path = path.join(name.as_ref());
            let found = match entry.filemode() {
                0o040000 => {
                    let sub = self.tree(entry.id(), &entry_path, depth + 1)?;
                    Size {
                        entries: sub.entries + 1,
                        bytes: sub.bytes,
                    }
                }
                mode if mode == 0o120000 || mode & 0o170000 == 0o100000 => {
                    let (bytes, _) = self
                        .odb
                        .read_header(entry.id())
                        .map_err(|e| self.ctx.cache_err(self.repo_dir, &e))?;
                    let bytes = bytes as u64;
                    let limit = self.ctx.spec.limits.blob_bytes;
                    if bytes > limit {
                        return Err(self.refuse(
                            format!("the file {} holds {bytes} bytes", entry_path.display()),
                            format!("{limit} bytes per file"),
                            "raise the limit with --max-source-blob-bytes".into(),
                        ));
                    }
                    Size { entries: 1, bytes }
                }
                _ => Size::default(), // submodules and unknown modes are not written
            };
            size.entries = size.entries.saturating_add(found.entries);
            size.bytes = size.bytes.saturating_add(found.bytes);
            // Stop as soon as a limit is passed, not after walking what is left.
            self.within_limits(size, path)?;
        }
        self.trees.insert(id, size);
        Ok(size)
    }
}

pub(super) fn write_tree(
    ctx: &Ctx<'_>,
    repo: &Repository,
    repo_dir: &Path,
    sha: &str,
    tree: &git2::Tree<'_>,
    dir: &Path,
) -> Result<(), Failure> {
    for entry in tree.iter() {
        let name = entry_name(entry.name_bytes()).ok_or_else(|| {
            Failure::Final(GitError::UnsafePath {
                commit: sha.to_string(),
                url: ctx.url.clone(),
                name: String::from_utf8_lossy(entry.name_bytes()).into_owned(),
            })
        })?;
        if entry.name_bytes().eq_ignore_ascii_case(b".git") {
            continue; // as git checkout does: never materialize a nested .git
        }
        let path = dir.join(&name);
        let io_err = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| {
                Failure::Final(GitError::CacheIo {
                    action,
                    path,
                    source,
                })
            }
        };
        match entry.filemode() {
            0o040000 => {
                let sub = repo
                    .find_tree(entry.id())
                    .map_err(|e| ctx.cache_err(repo_dir, &e))?;
                fs::create_dir(&path).map_err(io_err("create", &path))?;
                write_tree(ctx, repo, repo_dir, sha, &sub, &path)?;
            }
            0o120000 => {
                let blob = repo
                    .find_blob(entry.id())
                    .map_err(|e| ctx.cache_err(repo_dir, &e))?;
                write_symlink(blob.content(), &path).map_err(io_err("create symlink", &path))?;
            }
            0o160000 => {
                // Submodule: its commit lives in another repository; tend does not follow it.
                tracing::debug!("skipping submodule {}", path.display());
            }
            mode if mode & 0o170000 == 0o100000 => {
                let blob = repo
                    .find_blob(entry.id())
                    .map_err(|e| ctx.cache_err(repo_dir, &e))?;
                // create_new: never write through something already there (e.g. a symlink
                // from a malformed tree listing the same name twice).
                fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .and_then(|mut f| f.write_all(blob.content()))
                    .map_err(io_err("write", &path))?;
            }
            mode => tracing::debug!("skipping {} with unknown mode {mode:o}", path.display()),
        }
    }
    Ok(())
}

/// A tree entry name as a single safe path component, or `None`.
pub(super) fn entry_name(bytes: &[u8]) -> Option<PathBuf> {
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return None;
    }
    if bytes.contains(&0) || bytes.contains(&b'\\') && cfg!(windows) {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
    }
    #[cfg(not(unix))]
    {
        std::str::from_utf8(bytes).ok().map(PathBuf::from)
    }
}

#[cfg(unix)]
pub(super) fn write_symlink(target: &[u8], path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), path)
}

#[cfg(not(unix))]
pub(super) fn write_symlink(target: &[u8], path: &Path) -> io::Result<()> {
    // Without symlink support, do what git does with core.symlinks=false: a file holding
    // the target.
    fs::write(path, target)
}

pub(super) fn remove_dir_if_exists(dir: &Path) -> Result<(), GitError> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(GitError::CacheIo {
            action: "remove",
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// Remember that this remote's `sha` was just used, and delete the trees of this remote that
/// fell off its list of the last [`KEEP_TREES`] (unless another remote's list still has them).
/// Cleanup is best effort: a failure here must not fail the run.
pub(super) fn record_tree(repos: &Path, key: &str, trees: &Path, sha: &str) {
    let list_path = repos.join(format!("{key}.trees"));
    let read_list = |path: &Path| -> Vec<String> {
        fs::read_to_string(path)
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    };
    let mut list = read_list(&list_path);
    list.retain(|s| s != sha);
    list.insert(0, sha.to_string());
    let dropped = if list.len() > KEEP_TREES {
        list.split_off(KEEP_TREES)
    } else {
        Vec::new()
    };
    let tmp = repos.join(format!(".{key}.trees.{}", std::process::id()));
    let written =
        fs::write(&tmp, list.join("\n") + "\n").and_then(|()| fs::rename(&tmp, &list_path));
    if let Err(e) = written {
        tracing::debug!("cannot update {}: {e}", list_path.display());
        let _ = fs::remove_file(&tmp);
        return;
    }
    if !dropped.is_empty() {
        let mut in_use = BTreeSet::new();
        if let Ok(entries) = fs::read_dir(repos) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path != list_path && path.extension().is_some_and(|e| e == "trees") {
                    in_use.extend(read_list(&path));
                }
            }
        }
        for old in dropped.iter().filter(|s| !in_use.contains(*s) && is_hex(s)) {
            let dir = trees.join(old);
            if let Err(e) = fs::remove_dir_all(&dir) {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::debug!("cannot remove old tree {}: {e}", dir.display());
                }
            }
        }
    }
    // Leftovers of runs that crashed while extracting.
    if let Ok(entries) = fs::read_dir(trees) {
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|age| age > STALE_TMP);
            if stale && entry.file_name().to_string_lossy().starts_with(".tmp-") {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}
