//! Where desired state comes from: a local directory, or a commit of a git repository
//! fetched into a cache; then the walk over its YAML files.

pub mod charts;
pub mod encrypted;
mod file;
pub mod git;
pub mod kustomize;
pub mod kustomize_annotations;
mod kustomize_cache;
mod kustomize_outside;
mod kustomize_refs;
pub mod paths;
pub mod post_render;
mod private_copy;
pub mod run_cluster;
pub mod units;
pub mod verify;
pub mod walk;
pub mod walk_paths;

pub use file::{SourceFile, MAX_FILE_BYTES};

use git::{GitError, GitSpec};
use std::path::{Component, Path, PathBuf};

/// Where to read desired state from (README "Desired state (sources)"), as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct SourceOptions {
    /// A local directory, or a git URL.
    pub repo: String,
    /// Branch, tag or commit. Given with a local directory that is a git repository, that
    /// repository is read at the ref instead of its work tree.
    pub git_ref: Option<String>,
    /// Subdirectory of the repository holding the desired state.
    pub path: Option<PathBuf>,
    /// More subdirectories read with `path` as one desired state (a Fleet cluster's
    /// `paths` after the first; see [`walk_paths`]).
    pub more_paths: Vec<PathBuf>,
    pub cache_dir: Option<PathBuf>,
    pub ssh_key: Option<PathBuf>,
    pub known_hosts: Option<PathBuf>,
    pub token: Option<String>,
    /// The kustomize builder's command words (`--kustomize-command`); default: found on PATH.
    pub kustomize_command: Option<String>,
    /// `--verify-signatures`: the signatures the commit or tag must carry.
    pub verify: Option<verify::VerifyMode>,
    /// `--trusted-keys` (and `--trusted-keys-secret`): who may sign commits, tags and charts.
    pub trusted_keys: std::sync::Arc<verify::TrustedKeys>,
    /// `--units-for-kubeconfig-secret`: the run is for the cluster this kubeconfig Secret
    /// (`namespace`, `name`) of the repository's units names (see [`units`]).
    pub units_for_kubeconfig_secret: Option<(String, String)>,
    /// The clusters of a run over several, as controllers' units see them (Argo CD
    /// destinations and the clusters generator).
    pub run_clusters: std::sync::Arc<Vec<run_cluster::RunCluster>>,
    /// How large a git checkout may be (`--max-source-bytes`, `--max-source-files`,
    /// `--max-source-blob-bytes`).
    pub tree_limits: git::TreeLimits,
    /// ConfigMaps and Secrets units read that only the cluster holds, as read so far (a run
    /// that connects); `None` for a run with no cluster.
    pub cluster_objects: Option<std::sync::Arc<units::ClusterObjects>>,
}

/// Desired state on disk, ready to walk.
#[derive(Debug, Clone)]
pub struct Checkout {
    /// The directory to walk (the repository root joined with `--path`).
    pub dir: PathBuf,
    /// The repository root (`--repo`, or the fetched commit's tree): what GitOps
    /// controllers' paths are relative to.
    pub root: PathBuf,
    /// The URL the repository is known by (the git URL given, or the `origin` remote of a
    /// local work tree): a controller's source naming it means this checkout.
    pub url: Option<String>,
    /// The commit SHA, when the source is git (or a local git work tree).
    pub commit: Option<String>,
    /// The commit's time (Unix seconds): what Helm's `now` gives charts, so a commit renders
    /// the same on every run.
    pub commit_time: Option<i64>,
    /// Human description for messages: the path, or the redacted URL and ref.
    pub description: String,
    /// With `--verify-signatures`: who signed the tag and the commit.
    pub signed_by: Option<String>,
    /// How large a git checkout may be: also for the repositories units fetch.
    pub tree_limits: git::TreeLimits,
    /// How to build the kustomize directories found in `dir`.
    pub kustomize: kustomize::KustomizeOptions,
}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("repository directory {0} does not exist; pass --repo with a directory or a git URL")]
    MissingDir(PathBuf),
    #[error("--path {0} must be a relative path inside the repository, without '..'")]
    BadPath(PathBuf),
    #[error("--path {path} does not exist in {repo}")]
    MissingPath { path: PathBuf, repo: String },
    #[error(transparent)]
    Verify(#[from] verify::VerifyError),
}

/// Resolve the source: fetch git if needed, and point at the `--path` subdirectory.
pub fn resolve(opts: &SourceOptions) -> Result<Checkout, SourceError> {
    let local = Path::new(&opts.repo);
    let is_git = git::looks_like_git_url(&opts.repo) || (opts.git_ref.is_some() && local.is_dir());
    let (root, commit, description, url, signed_by) = if is_git {
        let spec = GitSpec {
            url: opts.repo.clone(),
            git_ref: opts.git_ref.clone(),
            semver: None,
            login: None,
            cache_dir: opts.cache_dir.clone().unwrap_or_else(default_cache_dir),
            ssh_key: opts.ssh_key.clone(),
            known_hosts: opts.known_hosts.clone(),
            token: opts.token.clone(),
            limits: opts.tree_limits,
        };
        let fetched = git::fetch(&spec)?;
        let description = format!(
            "{}@{}",
            git::redact_url(&opts.repo),
            opts.git_ref.as_deref().unwrap_or("HEAD")
        );
        let target = verify::Target {
            repository: &fetched.repository,
            commit: &fetched.commit,
            resolved_ref: fetched.resolved_ref.as_deref(),
            work_tree: false,
        };
        let signed_by = verified(opts, &target)?;
        (
            fetched.dir,
            Some((fetched.commit, fetched.commit_time)),
            description,
            Some(opts.repo.clone()),
            signed_by,
        )
    } else {
        if !local.is_dir() {
            return Err(SourceError::MissingDir(local.to_path_buf()));
        }
        // Outside a git work tree there is no commit, and libgit2 need not start (its TLS
        // set-up alone costs tens of milliseconds on every run).
        let in_work_tree = local
            .canonicalize()
            .is_ok_and(|dir| dir.ancestors().any(|d| d.join(".git").exists()));
        let commit = in_work_tree.then(|| git::head_commit(local)).flatten();
        let signed_by = match (&opts.verify, &commit) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(verify::VerifyError::Usage {
                    mode: "head",
                    message: format!(
                        "{} is not a git work tree, so no signature covers it; pass a git \
                     repository",
                        opts.repo
                    ),
                }
                .into())
            }
            (Some(_), Some((sha, _))) => {
                let target = verify::Target {
                    repository: local,
                    commit: sha,
                    resolved_ref: None,
                    work_tree: true,
                };
                verified(opts, &target)?
            }
        };
        (
            local.to_path_buf(),
            commit,
            opts.repo.clone(),
            in_work_tree.then(|| git::origin_url(local)).flatten(),
            signed_by,
        )
    };
    let repository_root = root.clone();
    let dir = match &opts.path {
        None => root.clone(),
        Some(sub) => {
            let inside = sub
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            if !inside {
                return Err(SourceError::BadPath(sub.clone()));
            }
            let dir = root.join(sub);
            if !dir.is_dir() {
                return Err(SourceError::MissingPath {
                    path: sub.clone(),
                    repo: description,
                });
            }
            dir
        }
    };
    Ok(Checkout {
        dir,
        root,
        url,
        commit_time: commit.as_ref().map(|(_, time)| *time),
        commit: commit.map(|(sha, _)| sha),
        description,
        signed_by,
        tree_limits: opts.tree_limits,
        kustomize: kustomize::KustomizeOptions {
            command: opts.kustomize_command.clone(),
            keys: Default::default(),
            repository_root: Some(repository_root),
            cache_dir: Some(opts.cache_dir.clone().unwrap_or_else(default_cache_dir)),
        },
    })
}

/// With `--verify-signatures`: who signed, checked now; else nothing.
fn verified(
    opts: &SourceOptions,
    target: &verify::Target<'_>,
) -> Result<Option<String>, SourceError> {
    let Some(mode) = opts.verify else {
        return Ok(None);
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let verified = verify::verify_checkout(target, mode, &opts.trusted_keys, now)?;
    let signed_by = verified.describe();
    if let Some(signer) = &signed_by {
        tracing::info!("signatures verified: {signer}");
    }
    Ok(signed_by)
}

/// `$XDG_CACHE_HOME/tend`, else `$HOME/.cache/tend`, else a directory under the temp dir.
pub fn default_cache_dir() -> PathBuf {
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("tend");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home).join(".cache").join("tend");
    }
    std::env::temp_dir().join("tend-cache")
}
