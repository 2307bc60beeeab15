//! Git source: fetch a repository into the cache dir and extract one exact commit.
//!
//! Layout of the cache (`GitSpec::cache_dir`):
//!
//! ```text
//! repos/<hash>-<name>/        one bare repository per remote, fetched into incrementally
//! repos/<hash>-<name>.trees   the commits last extracted for that remote, newest first
//! trees/<sha>/                the tree of one commit, as plain files (immutable once renamed)
//! ```
//!
//! Fetching: the remote's refs are listed first (one connection), the ref is resolved against
//! that list (branch, then tag, then commit SHA), and only that ref is fetched, with depth 1
//! where the transport supports it. A SHA that is not the tip of an advertised ref needs the
//! full history, so then all branches and tags are fetched without depth limit.
//!
//! Secrets: the token never appears in the remote URL we hand to libgit2 (it is given through
//! the credentials callback), and every text that can reach the user (errors, logs) goes
//! through [`redact_url`]/[`sanitize`] so userinfo embedded in a URL by the user is hidden too.
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use git2::{
    AutotagOption, CertificateCheckStatus, Cred, CredentialType, Direction, FetchOptions, Oid,
    RemoteCallbacks, Repository,
};
use hmac::{KeyInit, Mac};
use sha2::Digest as _;
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

mod auth;
mod extract;
mod fetch;
mod known_hosts;
mod trust;
mod url;

pub use trust::start_libgit2_without_ca_bundle;

pub use auth::*;

pub use fetch::*;
pub use known_hosts::*;
pub use url::*;

/// Username sent with `TEND_GIT_TOKEN` when the URL has none. GitHub documents
/// `x-access-token` for app installation tokens and accepts it for personal access tokens;
/// GitLab ignores the username for personal/project/group access tokens (any non-empty name
/// works). Hosts that need a specific name (Bitbucket: `x-token-auth`, GitLab deploy tokens)
/// get it from the URL: `https://x-token-auth@bitbucket.org/...`.
pub const TOKEN_USERNAME: &str = "x-access-token";

/// SSH user when the URL names none.
const DEFAULT_SSH_USER: &str = "git";

/// How many extracted trees to keep per remote (the newest ones).
const KEEP_TREES: usize = 5;

/// Temp directories of extractions older than this are leftovers of a crashed run.
const STALE_TMP: Duration = Duration::from_secs(3600);

/// libgit2's `GIT_ENOTSUPPORTED`, returned by transports that cannot do shallow fetches.
const GIT_ENOTSUPPORTED: i32 = -23;

/// libgit2's `GIT_FETCH_DEPTH_UNSHALLOW`: fetch the history cut off by earlier shallow fetches.
const DEPTH_UNSHALLOW: i32 = i32::MAX;

/// What to fetch and how to authenticate.
#[derive(Clone, Default)]
pub struct GitSpec {
    /// Remote URL: https://, ssh://, scp-like `git@host:path`, file:// or a local path.
    pub url: String,
    /// Branch, tag, or full/short commit SHA; `None` = the remote's default branch (HEAD).
    pub git_ref: Option<String>,
    /// A semver range (Masterminds/semver, as Flux's `ref.semver`): the highest tag that is
    /// a version in it, instead of `git_ref`.
    pub semver: Option<String>,
    /// Root of tend's cache; each remote gets its own subdirectory.
    pub cache_dir: PathBuf,
    /// Private key for SSH remotes.
    pub ssh_key: Option<PathBuf>,
    /// known_hosts file used to check SSH host keys (default `~/.ssh/known_hosts`, plus
    /// `/etc/ssh/ssh_known_hosts`).
    pub known_hosts: Option<PathBuf>,
    /// HTTPS token (from `TEND_GIT_TOKEN`); never printed.
    pub token: Option<String>,
    /// A login other than `TEND_GIT_TOKEN` (a Flux GitRepository's `secretRef`): the
    /// username sent with `token` as its password, and where the login came from (for
    /// messages; the login itself is never printed).
    pub login: Option<(String, String)>,
    /// How large a checked-out tree may be.
    pub limits: TreeLimits,
}

/// How large one commit's checked-out tree may be (RELIABILITY.md, "git bombs"): a small
/// repository can name one blob a billion times, or hold a blob of gigabytes of zeros that
/// packs into kilobytes. Checked while extracting, before anything is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeLimits {
    /// Bytes of all files together (`--max-source-bytes`).
    pub bytes: u64,
    /// Entries: files, directories and symlinks (`--max-source-files`).
    pub files: u64,
    /// Bytes of any one file (`--max-source-blob-bytes`).
    pub blob_bytes: u64,
}

impl TreeLimits {
    /// Bytes one fetch may download: twice what may be checked out, so a shallow fetch of a
    /// repository within the limits always fits (its pack is compressed) and a history or
    /// an incompressible blob far past them is stopped while it downloads.
    pub fn fetch_bytes(&self) -> u64 {
        self.bytes.saturating_mul(2)
    }
}

impl Default for TreeLimits {
    /// Far above any real repository of manifests (the largest monorepos of the helm corpus
    /// check out to tens of MiB and a few thousand files).
    fn default() -> Self {
        TreeLimits {
            bytes: 1 << 30,
            files: 200_000,
            blob_bytes: 64 << 20,
        }
    }
}

// Written by hand so that `{:?}` in a log line cannot print the token.
impl fmt::Debug for GitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitSpec")
            .field("url", &redact_url(&self.url))
            .field("git_ref", &self.git_ref)
            .field("semver", &self.semver)
            .field("cache_dir", &self.cache_dir)
            .field("ssh_key", &self.ssh_key)
            .field("known_hosts", &self.known_hosts)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("login", &self.login.as_ref().map(|(_, origin)| origin))
            .field("limits", &self.limits)
            .finish()
    }
}

/// A fetched commit, extracted into a directory.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Directory holding the commit's tree.
    pub dir: PathBuf,
    /// The cache's repository the commit was read from (its signatures are checked there).
    pub repository: PathBuf,
    /// Full 40-hex SHA of the commit.
    pub commit: String,
    /// The commit's time (committer), Unix seconds.
    pub commit_time: i64,
    /// The full ref name the commit was found through (`refs/heads/main`, `refs/tags/v1`);
    /// `None` when it was given as a SHA that no advertised ref points at.
    pub resolved_ref: Option<String>,
}

/// A libgit2 error with URLs and the token scrubbed from its message, so it is safe to keep
/// as an error source and print.
#[derive(Debug, Clone)]
pub struct LibgitError {
    pub message: String,
    pub code: git2::ErrorCode,
    pub class: git2::ErrorClass,
}

impl fmt::Display for LibgitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LibgitError {}

impl LibgitError {
    fn new(err: &git2::Error, token: Option<&str>) -> Self {
        LibgitError {
            message: sanitize(err.message(), token),
            code: err.code(),
            class: err.class(),
        }
    }
}

/// Errors of the git source. Each message is a complete sentence that already contains its
/// cause; `source()` carries the same cause for programs (scrubbed of secrets as well).
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot reach git remote {url}: {source}")]
    Unreachable {
        url: String,
        #[source]
        source: LibgitError,
    },
    #[error("unknown ref `{git_ref}`: not a branch, tag or commit of {url}")]
    UnknownRef { git_ref: String, url: String },
    #[error("commit SHA prefix `{git_ref}` is ambiguous in {url}; give more characters")]
    AmbiguousRef { git_ref: String, url: String },
    #[error("ref `{git_ref}` of {url} does not point to a commit")]
    NotACommit { git_ref: String, url: String },
    #[error("git remote {url} has no default branch (is the repository empty?); pass a ref")]
    NoDefaultBranch { url: String },
    #[error("authentication failed for {url}: {reason}")]
    AuthFailed { url: String, reason: String },
    #[error("bad SSH key {}: {problem}", path.display())]
    BadKey {
        path: PathBuf,
        problem: String,
        #[source]
        source: Option<io::Error>,
    },
    #[error(
        "host key for {} is not in {}{note}; add it with `{}`",
        host_display(host, *port),
        known_hosts.display(),
        keyscan_hint(host, *port, known_hosts)
    )]
    UnknownHostKey {
        host: String,
        port: u16,
        known_hosts: PathBuf,
        /// Extra detail, e.g. which key types are known for the host ("" if none).
        note: String,
    },
    #[error(
        "the host key of {} has changed: the server's key does not match {}:{line}. This can \
         be a man-in-the-middle attack; if the change is expected, remove the old entry \
         (`ssh-keygen -R {} -f {}`) and add the new one (`{}`)",
        host_display(host, *port),
        known_hosts.display(),
        host_display(host, *port),
        tilde(known_hosts),
        keyscan_hint(host, *port, known_hosts)
    )]
    HostKeyChanged {
        host: String,
        port: u16,
        known_hosts: PathBuf,
        line: usize,
    },
    #[error(
        "the host key of {} is marked @revoked in {}:{line}",
        host_display(host, *port),
        known_hosts.display()
    )]
    HostKeyRevoked {
        host: String,
        port: u16,
        known_hosts: PathBuf,
        line: usize,
    },
    #[error("cannot read known_hosts file {}: {source}", path.display())]
    KnownHosts {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("fetching from git remote {url} failed: {source}")]
    Fetch {
        url: String,
        #[source]
        source: LibgitError,
    },
    #[error("the git cache {} is broken and re-cloning it did not help: {source}", dir.display())]
    CorruptCache {
        dir: PathBuf,
        #[source]
        source: Box<GitError>,
    },
    #[error("git cache {} is unusable: {source}", dir.display())]
    CacheRepo {
        dir: PathBuf,
        #[source]
        source: LibgitError,
    },
    #[error("cannot {action} {}: {source}", path.display())]
    CacheIo {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("commit {commit} of {url} contains an unsafe path {name:?}; refusing to extract it")]
    UnsafePath {
        commit: String,
        url: String,
        name: String,
    },
    #[error(
        "commit {commit} of {url} is too large to check out: {what}, past the limit of \
         {limit}; nothing was extracted ({way_out})"
    )]
    TreeTooLarge {
        commit: String,
        url: String,
        what: String,
        limit: String,
        /// How to go on: the flag that raises the limit.
        way_out: String,
    },
    #[error(
        "{url} sent more than {limit} bytes for one fetch (twice --max-source-bytes); the \
         download was stopped and nothing was extracted (raise --max-source-bytes if the \
         repository is really this large)"
    )]
    FetchTooLarge { url: String, limit: u64 },
}

fn host_display(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    }
}

/// The command that adds the host's current keys to `file`. (Whoever runs it should compare
/// the fingerprints with the ones the git host publishes: keyscan trusts the network.)
fn keyscan_hint(host: &str, port: u16, file: &Path) -> String {
    let port = if port == 22 {
        String::new()
    } else {
        format!("-p {port} ")
    };
    format!("ssh-keyscan {port}{host} >> {}", tilde(file))
}

/// `path` with the home directory written as `~`, for commands shown to the user.
fn tilde(path: &Path) -> String {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    match home.and_then(|h| path.strip_prefix(h).ok().map(Path::to_path_buf)) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

/// The HEAD commit SHA if `dir` is inside a git work tree (for local-directory sources).
pub fn head_commit(dir: &Path) -> Option<(String, i64)> {
    let repo = Repository::discover(dir).ok()?;
    if repo.is_bare() {
        return None;
    }
    let commit = repo.head().ok()?.peel_to_commit().ok()?;
    Some((commit.id().to_string(), commit.time().seconds()))
}

/// The URL of the `origin` remote of the git repository holding `dir`, if any: what a
/// GitOps controller's source names when it means this repository.
pub fn origin_url(dir: &Path) -> Option<String> {
    let repo = Repository::discover(dir).ok()?;
    let remote = repo.find_remote("origin").ok()?;
    remote.url().ok().map(str::to_string)
}

#[cfg(test)]
mod tests;
