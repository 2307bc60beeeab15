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
    /// Root of tend's cache; each remote gets its own subdirectory.
    pub cache_dir: PathBuf,
    /// Private key for SSH remotes.
    pub ssh_key: Option<PathBuf>,
    /// known_hosts file used to check SSH host keys (default `~/.ssh/known_hosts`, plus
    /// `/etc/ssh/ssh_known_hosts`).
    pub known_hosts: Option<PathBuf>,
    /// HTTPS token (from `TEND_GIT_TOKEN`); never printed.
    pub token: Option<String>,
}

// Written by hand so that `{:?}` in a log line cannot print the token.
impl fmt::Debug for GitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitSpec")
            .field("url", &redact_url(&self.url))
            .field("git_ref", &self.git_ref)
            .field("cache_dir", &self.cache_dir)
            .field("ssh_key", &self.ssh_key)
            .field("known_hosts", &self.known_hosts)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .finish()
    }
}

/// A fetched commit, extracted into a directory.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Directory holding the commit's tree.
    pub dir: PathBuf,
    /// Full 40-hex SHA of the commit.
    pub commit: String,
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

/// Fetch `spec.url` into the cache and extract the commit `spec.git_ref` resolves to.
pub fn fetch(spec: &GitSpec) -> Result<Fetched, GitError> {
    // A bad key is a local mistake: report it before any network traffic.
    if let Some(key) = &spec.ssh_key {
        check_private_key(key)?;
    }
    let ctx = Ctx::new(spec);
    let repos = spec.cache_dir.join("repos");
    let trees = spec.cache_dir.join("trees");
    for dir in [&repos, &trees] {
        fs::create_dir_all(dir).map_err(|source| GitError::CacheIo {
            action: "create cache directory",
            path: dir.clone(),
            source,
        })?;
    }
    // A plain local path (`.`, `../deploy`) means different repositories from different
    // working directories: key its cache by the absolute path.
    let key = match fs::canonicalize(&spec.url) {
        Ok(abs) if !looks_like_git_url(&spec.url) => cache_key(&abs.to_string_lossy()),
        _ => cache_key(&spec.url),
    };
    let repo_dir = repos.join(&key);
    let fetched = match attempt(&ctx, &repo_dir, &trees) {
        Ok(fetched) => fetched,
        Err(Failure::Final(err)) => return Err(err),
        Err(Failure::Cache(err)) => {
            // The cache repository looks damaged (interrupted write, disk trouble, manual
            // edits): start that remote over once rather than failing every future run.
            tracing::warn!(
                "git cache {} looks broken ({err}); deleting it and cloning again",
                repo_dir.display()
            );
            remove_dir_if_exists(&repo_dir)?;
            match attempt(&ctx, &repo_dir, &trees) {
                Ok(fetched) => fetched,
                Err(Failure::Final(err)) => return Err(err),
                Err(Failure::Cache(err)) => {
                    return Err(GitError::CorruptCache {
                        dir: repo_dir,
                        source: Box::new(err),
                    })
                }
            }
        }
    };
    record_tree(&repos, &key, &trees, &fetched.commit);
    Ok(fetched)
}

/// How an attempt failed: `Cache` errors may come from a damaged cache repository and are
/// retried once with a fresh clone; `Final` ones are reported as they are.
enum Failure {
    Final(GitError),
    Cache(GitError),
}

impl From<GitError> for Failure {
    fn from(err: GitError) -> Self {
        Failure::Final(err)
    }
}

/// Everything about one fetch that does not change between attempts.
struct Ctx<'a> {
    spec: &'a GitSpec,
    /// The URL as it may be shown.
    url: String,
    /// The ref as given, for messages.
    ref_display: String,
    /// Local transports (file://, plain paths) cannot do shallow fetches.
    local: bool,
    /// http(s) remotes: the only ones the token is sent to.
    http: bool,
    /// Host and port for known_hosts lookups, for SSH URLs.
    ssh_port: u16,
}

impl<'a> Ctx<'a> {
    fn new(spec: &'a GitSpec) -> Self {
        let lower = spec.url.to_ascii_lowercase();
        let local = lower.starts_with("file://") || !looks_like_git_url(&spec.url);
        Ctx {
            spec,
            url: redact_url(&spec.url),
            ref_display: spec.git_ref.clone().unwrap_or_else(|| "HEAD".to_string()),
            local,
            http: lower.starts_with("https://") || lower.starts_with("http://"),
            ssh_port: ssh_port(&spec.url).unwrap_or(22),
        }
    }

    fn token(&self) -> Option<&str> {
        self.spec.token.as_deref().filter(|t| !t.is_empty())
    }

    fn libgit(&self, err: &git2::Error) -> LibgitError {
        LibgitError::new(err, self.token())
    }

    fn cache_err(&self, dir: &Path, err: &git2::Error) -> Failure {
        let error = GitError::CacheRepo {
            dir: dir.to_path_buf(),
            source: self.libgit(err),
        };
        // A lock held by another tend run sharing the cache is not damage: never wipe the
        // repository from under it.
        if err.code() == git2::ErrorCode::Locked {
            Failure::Final(error)
        } else {
            Failure::Cache(error)
        }
    }

    fn unknown_ref(&self) -> GitError {
        GitError::UnknownRef {
            git_ref: self.ref_display.clone(),
            url: self.url.clone(),
        }
    }
}

/// What the ref resolved to on the remote.
enum Plan {
    /// Fetch this one ref (`refs/heads/x` or `refs/tags/x`), whose remote value is `oid`.
    Ref { name: String, oid: Oid },
    /// A commit SHA (or prefix) that no advertised ref points at: needs the full history.
    Sha(String),
}

fn attempt(ctx: &Ctx<'_>, repo_dir: &Path, trees: &Path) -> Result<Fetched, Failure> {
    let repo = open_or_init(ctx, repo_dir)?;

    // A full SHA names immutable content: if the cache has it, no need to ask the remote
    // (this also makes pinned deployments work while the git host is down).
    if let Some(r) = &ctx.spec.git_ref {
        if r.len() == 40 && is_hex(r) {
            if let Ok(commit) = Oid::from_str(r).and_then(|oid| repo.find_commit(oid)) {
                tracing::debug!("commit {r} is already in the cache; not contacting the remote");
                let dir = extract(ctx, &repo, repo_dir, &commit, trees)?;
                return Ok(Fetched {
                    dir,
                    commit: commit.id().to_string(),
                    resolved_ref: None,
                });
            }
        }
    }

    let auth = Auth::new(ctx);
    let mut remote = repo
        .remote_anonymous(&ctx.spec.url)
        .map_err(|e| GitError::Unreachable {
            url: ctx.url.clone(),
            source: ctx.libgit(&e),
        })?;
    auth.reset();
    let mut conn = remote
        .connect_auth(Direction::Fetch, Some(auth.callbacks()), None)
        .map_err(|e| auth.network_error(&e))?;
    let heads: Vec<(String, Oid)> = conn
        .list()
        .map_err(|e| auth.network_error(&e))?
        .iter()
        .map(|h| (h.name().to_string(), h.oid()))
        .collect();
    let default_branch = conn
        .default_branch()
        .ok()
        .and_then(|b| b.as_str().ok().map(str::to_string));
    let plan = resolve(ctx, &heads, default_branch.as_deref())?;

    match plan {
        Plan::Ref { name, oid } => {
            let up_to_date = repo.refname_to_id(&name).ok() == Some(oid);
            let have_object = repo.find_object(oid, None).is_ok();
            if up_to_date && have_object {
                tracing::debug!("{name} of {} is unchanged; nothing to fetch", ctx.url);
            } else if have_object {
                // Known object (e.g. a branch moved back, or a tag of a fetched commit).
                repo.reference(&name, oid, true, "tend: update from listing")
                    .map_err(|e| ctx.cache_err(repo_dir, &e))?;
            } else {
                let refspec = format!("+{name}:{name}");
                let depth = if ctx.local { 0 } else { 1 };
                tracing::info!(
                    "fetching {name} from {}{}",
                    ctx.url,
                    if depth > 0 { " (shallow)" } else { "" }
                );
                fetch_refspecs(ctx, &auth, conn.remote(), &[refspec], depth)?;
            }
            drop(conn);
            let commit = peel_ref(ctx, &repo, repo_dir, &name)?;
            let dir = extract(ctx, &repo, repo_dir, &commit, trees)?;
            Ok(Fetched {
                dir,
                commit: commit.id().to_string(),
                resolved_ref: Some(name),
            })
        }
        Plan::Sha(prefix) => {
            if find_commit_prefix(ctx, &repo, repo_dir, &prefix)?.is_none() {
                let depth = if repo.is_shallow() {
                    DEPTH_UNSHALLOW
                } else {
                    0
                };
                tracing::info!(
                    "fetching all branches and tags of {} to find commit {prefix}",
                    ctx.url
                );
                let refspecs = [
                    "+refs/heads/*:refs/heads/*".to_string(),
                    "+refs/tags/*:refs/tags/*".to_string(),
                ];
                fetch_refspecs(ctx, &auth, conn.remote(), &refspecs, depth)?;
            }
            drop(conn);
            let commit = find_commit_prefix(ctx, &repo, repo_dir, &prefix)?
                .ok_or_else(|| Failure::Final(ctx.unknown_ref()))?;
            let dir = extract(ctx, &repo, repo_dir, &commit, trees)?;
            Ok(Fetched {
                dir,
                commit: commit.id().to_string(),
                resolved_ref: None,
            })
        }
    }
}

fn open_or_init(ctx: &Ctx<'_>, repo_dir: &Path) -> Result<Repository, Failure> {
    if repo_dir.exists() {
        let repo = Repository::open_bare(repo_dir).map_err(|e| ctx.cache_err(repo_dir, &e))?;
        check_ref_targets(&repo).map_err(|source| {
            Failure::Cache(GitError::CacheRepo {
                dir: repo_dir.to_path_buf(),
                source,
            })
        })?;
        return Ok(repo);
    }
    let repo = Repository::init_bare(repo_dir).map_err(|e| {
        Failure::Final(GitError::CacheRepo {
            dir: repo_dir.to_path_buf(),
            source: ctx.libgit(&e),
        })
    })?;
    // For people looking into the cache: which remote this is (without secrets).
    if let Ok(mut config) = repo.config() {
        let _ = config.set_str("tend.url", &ctx.url);
    }
    Ok(repo)
}

/// Every ref of the cache must point to an object it has: a fetch trusts the refs (it tells
/// the server it has those commits and gets nothing for them), so a ref to a lost object
/// would make commits silently unreachable instead of failing.
fn check_ref_targets(repo: &Repository) -> Result<(), LibgitError> {
    let broken = |message: String| LibgitError {
        message,
        code: git2::ErrorCode::NotFound,
        class: git2::ErrorClass::Odb,
    };
    let odb = repo
        .odb()
        .map_err(|e| broken(format!("cannot open the object database: {}", e.message())))?;
    let refs = repo
        .references()
        .map_err(|e| broken(format!("cannot list refs: {}", e.message())))?;
    for reference in refs {
        let reference = reference.map_err(|e| broken(format!("bad ref: {}", e.message())))?;
        if let Some(oid) = reference.target() {
            if !odb.exists(oid) {
                let name = String::from_utf8_lossy(reference.name_bytes()).into_owned();
                return Err(broken(format!("ref {name} points to missing object {oid}")));
            }
        }
    }
    Ok(())
}

/// Resolve the requested ref against the remote's advertised refs: branch, then tag, then
/// commit SHA.
fn resolve(
    ctx: &Ctx<'_>,
    heads: &[(String, Oid)],
    default_branch: Option<&str>,
) -> Result<Plan, GitError> {
    let lookup = |name: &str| heads.iter().find(|(n, _)| n == name).map(|(_, oid)| *oid);
    let wanted = ctx.spec.git_ref.as_deref().filter(|r| *r != "HEAD");
    let Some(r) = wanted else {
        return default_plan(ctx, heads, default_branch);
    };
    if r.starts_with("refs/") {
        if let Some(oid) = lookup(r) {
            return Ok(Plan::Ref {
                name: r.to_string(),
                oid,
            });
        }
    }
    for prefix in ["refs/heads/", "refs/tags/"] {
        let name = format!("{prefix}{r}");
        if let Some(oid) = lookup(&name) {
            return Ok(Plan::Ref { name, oid });
        }
    }
    if r.len() >= 7 && r.len() <= 40 && is_hex(r) {
        let prefix = r.to_ascii_lowercase();
        // Most SHAs asked for are the tip of some branch or tag: fetch that ref (shallow)
        // instead of the whole history. Peeled tag entries (`refs/tags/v1^{}`) count too.
        let mut tips: Vec<(&str, Oid)> = heads
            .iter()
            .filter(|(n, oid)| n.starts_with("refs/") && oid.to_string().starts_with(&prefix))
            .map(|(n, oid)| (n.strip_suffix("^{}").unwrap_or(n), *oid))
            .collect();
        tips.sort_by_key(|(n, _)| (!n.starts_with("refs/heads/"), n.to_string()));
        let unique = tips.windows(2).all(|w| w[0].1 == w[1].1);
        if let (Some((name, _)), true) = (tips.first(), unique) {
            if let Some(oid) = lookup(name) {
                return Ok(Plan::Ref {
                    name: name.to_string(),
                    oid,
                });
            }
        }
        return Ok(Plan::Sha(prefix));
    }
    Err(ctx.unknown_ref())
}

fn default_plan(
    ctx: &Ctx<'_>,
    heads: &[(String, Oid)],
    default_branch: Option<&str>,
) -> Result<Plan, GitError> {
    let lookup = |name: &str| heads.iter().find(|(n, _)| n == name).map(|(_, oid)| *oid);
    if let Some(name) = default_branch {
        if let Some(oid) = lookup(name) {
            return Ok(Plan::Ref {
                name: name.to_string(),
                oid,
            });
        }
    }
    // No symbolic HEAD advertised: pick the branch HEAD points at, as git clone does.
    let Some(head) = lookup("HEAD") else {
        return Err(GitError::NoDefaultBranch {
            url: ctx.url.clone(),
        });
    };
    let mut branches: Vec<&str> = heads
        .iter()
        .filter(|(n, oid)| n.starts_with("refs/heads/") && *oid == head)
        .map(|(n, _)| n.as_str())
        .collect();
    branches.sort_by_key(|n| (*n != "refs/heads/main", *n != "refs/heads/master", *n));
    match branches.first() {
        Some(name) => Ok(Plan::Ref {
            name: name.to_string(),
            oid: head,
        }),
        None => Ok(Plan::Sha(head.to_string())),
    }
}

/// Fetch `refspecs` over the (already connected) remote, shallow when `depth > 0`, falling
/// back to a full fetch when the transport cannot do shallow ones.
fn fetch_refspecs(
    ctx: &Ctx<'_>,
    auth: &Auth<'_>,
    remote: &mut git2::Remote<'_>,
    refspecs: &[String],
    depth: i32,
) -> Result<(), Failure> {
    let run = |remote: &mut git2::Remote<'_>, depth: i32| {
        auth.reset();
        let mut opts = FetchOptions::new();
        opts.remote_callbacks(auth.callbacks())
            .download_tags(AutotagOption::None)
            .update_fetchhead(false)
            .depth(depth);
        remote.fetch(refspecs, Some(&mut opts), Some("tend: fetch"))
    };
    let result = match run(remote, depth) {
        Err(e) if depth > 0 && shallow_unsupported(&e) => {
            tracing::debug!(
                "the transport of {} does not support shallow fetches; fetching full history",
                ctx.url
            );
            run(remote, 0)
        }
        other => other,
    };
    result.map_err(|e| {
        if let Some(failure) = auth.take_failure() {
            return Failure::Final(failure);
        }
        match e.class() {
            git2::ErrorClass::Net
            | git2::ErrorClass::Http
            | git2::ErrorClass::Ssh
            | git2::ErrorClass::Ssl
            | git2::ErrorClass::Os
            | git2::ErrorClass::Callback => Failure::Final(auth.network_error(&e)),
            _ if e.code() == git2::ErrorCode::Locked => Failure::Final(GitError::Fetch {
                url: ctx.url.clone(),
                source: ctx.libgit(&e),
            }),
            // Anything else (odb, refs, indexer, shallow file…) may be the cache's fault.
            _ => Failure::Cache(GitError::Fetch {
                url: ctx.url.clone(),
                source: ctx.libgit(&e),
            }),
        }
    })
}

fn shallow_unsupported(err: &git2::Error) -> bool {
    err.raw_code() == GIT_ENOTSUPPORTED || err.message().contains("shallow")
}

/// Peel the local ref `name` (just fetched or updated) to its commit.
fn peel_ref<'r>(
    ctx: &Ctx<'_>,
    repo: &'r Repository,
    repo_dir: &Path,
    name: &str,
) -> Result<git2::Commit<'r>, Failure> {
    let object = repo
        .find_reference(name)
        .and_then(|r| r.peel(git2::ObjectType::Any))
        .map_err(|e| ctx.cache_err(repo_dir, &e))?;
    match object.peel_to_commit() {
        Ok(commit) => Ok(commit),
        Err(e) if e.class() == git2::ErrorClass::Odb => Err(ctx.cache_err(repo_dir, &e)),
        Err(_) => Err(Failure::Final(GitError::NotACommit {
            git_ref: ctx.ref_display.clone(),
            url: ctx.url.clone(),
        })),
    }
}

/// Look a (possibly short) SHA up in the cache; `None` if it is not there.
fn find_commit_prefix<'r>(
    ctx: &Ctx<'_>,
    repo: &'r Repository,
    repo_dir: &Path,
    prefix: &str,
) -> Result<Option<git2::Commit<'r>>, Failure> {
    match repo.find_object_by_prefix(prefix, None) {
        Ok(object) => match object.peel_to_commit() {
            Ok(commit) => Ok(Some(commit)),
            Err(_) => Err(Failure::Final(GitError::NotACommit {
                git_ref: ctx.ref_display.clone(),
                url: ctx.url.clone(),
            })),
        },
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) if e.code() == git2::ErrorCode::Ambiguous => {
            Err(Failure::Final(GitError::AmbiguousRef {
                git_ref: ctx.ref_display.clone(),
                url: ctx.url.clone(),
            }))
        }
        Err(e) => Err(ctx.cache_err(repo_dir, &e)),
    }
}

// ---------------------------------------------------------------------------------------
// Authentication and host key checking

/// State shared by the callbacks of one connection: which credential types were already
/// offered (libgit2 asks again after a rejection; asking forever would hang the run), and
/// the structured error a callback failed with (libgit2 only carries a string back).
struct Auth<'a> {
    ctx: &'a Ctx<'a>,
    tried: Cell<CredentialType>,
    failure: RefCell<Option<GitError>>,
}

impl<'a> Auth<'a> {
    fn new(ctx: &'a Ctx<'a>) -> Self {
        Auth {
            ctx,
            tried: Cell::new(CredentialType::empty()),
            failure: RefCell::new(None),
        }
    }

    /// A new connection may legitimately ask for every credential again.
    fn reset(&self) {
        self.tried.set(CredentialType::empty());
    }

    fn take_failure(&self) -> Option<GitError> {
        self.failure.borrow_mut().take()
    }

    /// Remember `err` and hand libgit2 an error with the same text.
    fn fail(&self, err: GitError) -> git2::Error {
        let text = err.to_string();
        *self.failure.borrow_mut() = Some(err);
        git2::Error::from_str(&text)
    }

    fn auth_failed(&self, reason: String) -> git2::Error {
        self.fail(GitError::AuthFailed {
            url: self.ctx.url.clone(),
            reason,
        })
    }

    /// The error for a failed connection or transfer.
    fn network_error(&self, err: &git2::Error) -> GitError {
        if let Some(failure) = self.take_failure() {
            return failure;
        }
        let source = self.ctx.libgit(err);
        // libssh2 reports a missing or unusable agent as a plain SSH error.
        let agent_trouble = !self.ctx.http
            && self.ctx.spec.ssh_key.is_none()
            && err.class() == git2::ErrorClass::Ssh
            && source.message.contains("agent");
        if agent_trouble {
            return GitError::AuthFailed {
                url: self.ctx.url.clone(),
                reason: format!(
                    "no --ssh-key given and ssh-agent is not usable: {}",
                    source.message
                ),
            };
        }
        if err.code() == git2::ErrorCode::Auth {
            return GitError::AuthFailed {
                url: self.ctx.url.clone(),
                reason: source.message,
            };
        }
        GitError::Unreachable {
            url: self.ctx.url.clone(),
            source,
        }
    }

    fn callbacks(&self) -> RemoteCallbacks<'_> {
        let mut cbs = RemoteCallbacks::new();
        cbs.credentials(|_url, username, allowed| self.credentials(username, allowed));
        cbs.certificate_check(|cert, host| self.certificate_check(cert, host));
        cbs
    }

    fn credentials(
        &self,
        username: Option<&str>,
        allowed: CredentialType,
    ) -> Result<Cred, git2::Error> {
        let spec = self.ctx.spec;
        let tried = self.tried.get();
        let first_try = |kind: CredentialType| {
            let fresh = !tried.contains(kind);
            self.tried.set(tried | kind);
            fresh
        };
        if allowed.contains(CredentialType::USERNAME) {
            if !first_try(CredentialType::USERNAME) {
                return Err(self.auth_failed("the server rejected the SSH username".into()));
            }
            return Cred::username(username.unwrap_or(DEFAULT_SSH_USER));
        }
        if allowed.contains(CredentialType::SSH_KEY) {
            let user = username.unwrap_or(DEFAULT_SSH_USER);
            if !first_try(CredentialType::SSH_KEY) {
                let reason = match &spec.ssh_key {
                    Some(key) => format!(
                        "the server rejected the SSH key {} for user `{user}`",
                        key.display()
                    ),
                    None => format!(
                        "no --ssh-key given and ssh-agent offered no key the server accepts \
                         for user `{user}`"
                    ),
                };
                return Err(self.auth_failed(reason));
            }
            return match &spec.ssh_key {
                Some(key) => Cred::ssh_key(user, None, key, None),
                None => Cred::ssh_key_from_agent(user).map_err(|e| {
                    self.auth_failed(format!(
                        "no --ssh-key given and ssh-agent is not usable: {}",
                        self.ctx.libgit(&e)
                    ))
                }),
            };
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) && !self.ctx.http {
            // An HTTPS token is never sent as an SSH (or other) password.
            return Err(self.auth_failed(
                "the server asks for a password; tend authenticates SSH with keys only \
                 (--ssh-key or ssh-agent)"
                    .into(),
            ));
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            let Some(token) = self.ctx.token() else {
                return Err(self.auth_failed(
                    "the remote asks for credentials (or the repository does not exist); set \
                     TEND_GIT_TOKEN to a token with read access"
                        .into(),
                ));
            };
            if !first_try(CredentialType::USER_PASS_PLAINTEXT) {
                return Err(self.auth_failed(
                    "the remote rejected the token in TEND_GIT_TOKEN (expired, revoked, or \
                     without read access to this repository?)"
                        .into(),
                ));
            }
            return Cred::userpass_plaintext(username.unwrap_or(TOKEN_USERNAME), token);
        }
        if allowed.contains(CredentialType::DEFAULT) && first_try(CredentialType::DEFAULT) {
            return Cred::default();
        }
        Err(self.auth_failed(format!(
            "the remote asks for an authentication method tend does not support ({allowed:?})"
        )))
    }

    fn certificate_check(
        &self,
        cert: &git2::cert::Cert<'_>,
        host: &str,
    ) -> Result<CertificateCheckStatus, git2::Error> {
        // TLS certificates are checked by libgit2 against the system's CA store.
        let Some(hostkey) = cert.as_hostkey() else {
            return Ok(CertificateCheckStatus::CertificatePassthrough);
        };
        let Some(key) = hostkey.hostkey() else {
            return Err(self.fail(GitError::Unreachable {
                url: self.ctx.url.clone(),
                source: LibgitError {
                    message: "the SSH library did not provide the server's host key".into(),
                    code: git2::ErrorCode::Certificate,
                    class: git2::ErrorClass::Ssh,
                },
            }));
        };
        match verify_host_key(
            self.ctx.spec.known_hosts.as_deref(),
            host,
            self.ctx.ssh_port,
            key,
        ) {
            Ok(()) => Ok(CertificateCheckStatus::CertificateOk),
            Err(err) => Err(self.fail(err)),
        }
    }
}

/// Result of looking a server's host key up in a known_hosts file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyStatus {
    /// Line `line` (1-based) lists this host with exactly this key.
    Known { line: usize },
    /// Line `line` lists this host with a different key of the same type.
    Changed { line: usize },
    /// Line `line` is a `@revoked` entry for this key.
    Revoked { line: usize },
    /// No entry for this host and key type; `other_types` are the key types that are listed
    /// for the host (the server offered a type the file does not know yet).
    Unknown { other_types: Vec<String> },
}

/// Look up `host`:`port` with the raw SSH host key `key` (wire format, as the server sends
/// it) in the text of a known_hosts file, with OpenSSH's rules: plain patterns
/// (comma-separated, `*`/`?` wildcards, `!` negation, `[host]:port` for ports other than 22,
/// case-insensitive), hashed entries (`|1|salt|hash`, HMAC-SHA1 of the name), `@revoked`
/// markers. `@cert-authority` lines are ignored (host certificates are not supported).
pub fn check_known_hosts(known_hosts: &str, host: &str, port: u16, key: &[u8]) -> HostKeyStatus {
    let host = host.to_ascii_lowercase();
    let name = host_display(&host, port);
    let server_type = ssh_key_type(key);
    let (mut known, mut changed, mut revoked) = (None, None, None);
    let mut other_types = BTreeSet::new();
    for (index, line) in known_hosts.lines().enumerate() {
        let line_no = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let Some(mut hosts) = fields.next() else {
            continue;
        };
        let mut marker = None;
        if hosts.starts_with('@') {
            marker = Some(hosts);
            let Some(next) = fields.next() else { continue };
            hosts = next;
        }
        if marker == Some("@cert-authority") {
            continue;
        }
        let (Some(key_type), Some(key_b64)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !host_matches(hosts, &name) {
            continue;
        }
        let Ok(entry_key) = BASE64.decode(key_b64) else {
            continue;
        };
        let entry_type = ssh_key_type(&entry_key).unwrap_or(key_type);
        if marker == Some("@revoked") {
            if entry_key == key {
                revoked.get_or_insert(line_no);
            }
            continue;
        }
        if entry_key == key {
            known.get_or_insert(line_no);
        } else if Some(entry_type) == server_type {
            changed.get_or_insert(line_no);
        } else {
            other_types.insert(entry_type.to_string());
        }
    }
    if let Some(line) = revoked {
        HostKeyStatus::Revoked { line }
    } else if let Some(line) = known {
        HostKeyStatus::Known { line }
    } else if let Some(line) = changed {
        HostKeyStatus::Changed { line }
    } else {
        HostKeyStatus::Unknown {
            other_types: other_types.into_iter().collect(),
        }
    }
}

/// Does the host field of a known_hosts line match `name` (`host` or `[host]:port`)?
fn host_matches(field: &str, name: &str) -> bool {
    if let Some(rest) = field.strip_prefix("|1|") {
        let Some((salt, hash)) = rest.split_once('|') else {
            return false;
        };
        let (Ok(salt), Ok(hash)) = (BASE64.decode(salt), BASE64.decode(hash)) else {
            return false;
        };
        return hashed_host(&salt, name).as_slice() == hash.as_slice();
    }
    let mut matched = false;
    for pattern in field.split(',') {
        let (negated, pattern) = match pattern.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pattern),
        };
        if glob_match(pattern.to_ascii_lowercase().as_bytes(), name.as_bytes()) {
            if negated {
                // OpenSSH: a matching negated pattern rejects the line outright.
                return false;
            }
            matched = true;
        }
    }
    matched
}

/// HMAC-SHA1 of `name` keyed with `salt`: the hash in a `|1|salt|hash` known_hosts entry.
pub fn hashed_host(salt: &[u8], name: &str) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <hmac::Hmac<sha1::Sha1> as KeyInit>::new_from_slice(salt)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(name.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Glob match with `*` (any run) and `?` (one byte).
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            backtrack = Some((p, t));
            p += 1;
        } else if let Some((bp, bt)) = backtrack {
            p = bp + 1;
            t = bt + 1;
            backtrack = Some((bp, bt + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// The key type inside an SSH wire-format public key blob (its first string).
fn ssh_key_type(blob: &[u8]) -> Option<&str> {
    let len = u32::from_be_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    std::str::from_utf8(blob.get(4..4usize.checked_add(len)?)?).ok()
}

/// Check a server's host key against the configured known_hosts file(s).
fn verify_host_key(
    known_hosts: Option<&Path>,
    host: &str,
    port: u16,
    key: &[u8],
) -> Result<(), GitError> {
    let user_file = match known_hosts {
        Some(path) => path.to_path_buf(),
        None => default_known_hosts(),
    };
    let mut files = vec![(user_file.clone(), true)];
    if known_hosts.is_none() {
        // Like OpenSSH's GlobalKnownHostsFile; only consulted for the default setup.
        files.push((PathBuf::from("/etc/ssh/ssh_known_hosts"), false));
    }
    let mut statuses = Vec::new();
    let mut user_file_missing = false;
    for (path, is_user_file) in &files {
        match fs::read_to_string(path) {
            Ok(text) => statuses.push((path.clone(), check_known_hosts(&text, host, port, key))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                user_file_missing |= *is_user_file;
            }
            Err(source) => {
                return Err(GitError::KnownHosts {
                    path: path.clone(),
                    source,
                })
            }
        }
    }
    for (path, status) in &statuses {
        if let HostKeyStatus::Revoked { line } = status {
            return Err(GitError::HostKeyRevoked {
                host: host.to_string(),
                port,
                known_hosts: path.clone(),
                line: *line,
            });
        }
    }
    if statuses
        .iter()
        .any(|(_, s)| matches!(s, HostKeyStatus::Known { .. }))
    {
        return Ok(());
    }
    for (path, status) in &statuses {
        if let HostKeyStatus::Changed { line } = status {
            return Err(GitError::HostKeyChanged {
                host: host.to_string(),
                port,
                known_hosts: path.clone(),
                line: *line,
            });
        }
    }
    let other: BTreeSet<&str> = statuses
        .iter()
        .flat_map(|(_, s)| match s {
            HostKeyStatus::Unknown { other_types } => other_types.as_slice(),
            _ => &[],
        })
        .map(String::as_str)
        .collect();
    let note = if user_file_missing {
        " (the file does not exist)".to_string()
    } else if !other.is_empty() {
        format!(
            " (it lists {} for this host, but the server offered {})",
            other.into_iter().collect::<Vec<_>>().join(", "),
            ssh_key_type(key).unwrap_or("another key type")
        )
    } else {
        String::new()
    };
    Err(GitError::UnknownHostKey {
        host: host.to_string(),
        port,
        known_hosts: user_file,
        note,
    })
}

fn default_known_hosts() -> PathBuf {
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => PathBuf::from(home).join(".ssh").join("known_hosts"),
        _ => PathBuf::from("~/.ssh/known_hosts"),
    }
}

/// Check that `path` holds a private key libssh2 can use without prompting.
pub fn check_private_key(path: &Path) -> Result<(), GitError> {
    let bad = |problem: &str, source: Option<io::Error>| GitError::BadKey {
        path: path.to_path_buf(),
        problem: problem.to_string(),
        source,
    };
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(bad("the file does not exist", Some(e)))
        }
        Err(e) => return Err(bad(&format!("cannot read it: {e}"), Some(e))),
    };
    if meta.is_dir() {
        return Err(bad("it is a directory, not a key file", None));
    }
    let bytes = fs::read(path).map_err(|e| bad(&format!("cannot read it: {e}"), Some(e)))?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(bad(
            "it is not a private key (binary content; expected an OpenSSH or PEM key)",
            None,
        ));
    };
    let text = text.trim();
    let public_prefixes = ["ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-"];
    if public_prefixes.iter().any(|p| text.starts_with(p)) {
        return Err(bad(
            "it is a public key; pass the private key (usually the same name without .pub)",
            None,
        ));
    }
    if text.starts_with("PuTTY-User-Key-File") {
        return Err(bad(
            "it is a PuTTY key; convert it with `puttygen KEY.ppk -O private-openssh -o KEY`",
            None,
        ));
    }
    let passphrase = "it is protected by a passphrase, which tend cannot ask for; load it into \
                      ssh-agent and omit --ssh-key, or use a deploy key without a passphrase";
    if text.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----") {
        let body: String = text
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .map(str::trim)
            .collect();
        let Ok(blob) = BASE64.decode(body) else {
            return Err(bad(
                "it is not a valid OpenSSH private key (damaged base64)",
                None,
            ));
        };
        let Some(rest) = blob.strip_prefix(b"openssh-key-v1\0") else {
            return Err(bad(
                "it is not a valid OpenSSH private key (bad header)",
                None,
            ));
        };
        return match ssh_key_type(rest) {
            Some("none") => Ok(()),
            Some(_) => Err(bad(passphrase, None)),
            None => Err(bad(
                "it is not a valid OpenSSH private key (truncated)",
                None,
            )),
        };
    }
    if text.starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        || text.contains("Proc-Type: 4,ENCRYPTED")
    {
        return Err(bad(passphrase, None));
    }
    let pem = [
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----BEGIN EC PRIVATE KEY-----",
        "-----BEGIN DSA PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----",
    ];
    if pem.iter().any(|p| text.starts_with(p)) {
        return Ok(());
    }
    Err(bad(
        "it is not a private key (expected a file starting with `-----BEGIN OPENSSH PRIVATE \
         KEY-----` or another PEM private key header)",
        None,
    ))
}

// ---------------------------------------------------------------------------------------
// Extraction

/// Extract `commit`'s tree into `trees/<sha>` (or reuse it), atomically: written into a temp
/// dir beside it and renamed, so a crash never leaves a half tree under the final name.
fn extract(
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
        .and_then(|tree| write_tree(ctx, repo, repo_dir, &sha, &tree, &tmp));
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

fn write_tree(
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
fn entry_name(bytes: &[u8]) -> Option<PathBuf> {
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
fn write_symlink(target: &[u8], path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), path)
}

#[cfg(not(unix))]
fn write_symlink(target: &[u8], path: &Path) -> io::Result<()> {
    // Without symlink support, do what git does with core.symlinks=false: a file holding
    // the target.
    fs::write(path, target)
}

fn remove_dir_if_exists(dir: &Path) -> Result<(), GitError> {
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
fn record_tree(repos: &Path, key: &str, trees: &Path, sha: &str) {
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

// ---------------------------------------------------------------------------------------
// URLs

/// Name of the cache directory of a remote: a short hash of the URL (without userinfo, so a
/// rotated password does not start a new clone) and its last path segment, for humans.
fn cache_key(url: &str) -> String {
    let without_userinfo = strip_userinfo(url.trim());
    let after_scheme =
        scheme_len(&without_userinfo).map_or(without_userinfo.as_str(), |n| &without_userinfo[n..]);
    let normalized = without_userinfo.trim_end_matches('/');
    let digest = sha2::Sha256::digest(normalized.as_bytes());
    let hash = hex::encode(&digest[..6]);
    let last = after_scheme
        .rsplit(['/', ':', '\\'])
        .find(|s| !s.is_empty() && *s != "." && *s != "..")
        .unwrap_or("");
    let last = last.strip_suffix(".git").unwrap_or(last);
    let mut name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    name = name.trim_start_matches('.').to_string();
    if name.is_empty() {
        name = "repo".to_string();
    }
    format!("{hash}-{name}")
}

/// `scheme://` prefix length of a URL with a syntactically valid scheme, if any.
fn scheme_len(s: &str) -> Option<usize> {
    let idx = s.find("://")?;
    let scheme = &s[..idx];
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(idx + 3)
}

fn strip_userinfo(url: &str) -> String {
    if let Some(start) = scheme_len(url) {
        let rest = &url[start..];
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            return format!("{}{}", &url[..start], &rest[at + 1..]);
        }
    }
    url.to_string()
}

fn is_ssh_scheme(scheme: &str) -> bool {
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "ssh" | "git+ssh" | "ssh+git"
    )
}

/// Is `s` a scp-like SSH address, `user@host:path`?
fn is_scp_like(s: &str) -> bool {
    if s.contains("://") {
        return false;
    }
    let Some((before, path)) = s.split_once(':') else {
        return false;
    };
    let Some((user, host)) = before.rsplit_once('@') else {
        return false;
    };
    !user.is_empty()
        && !host.is_empty()
        && !path.is_empty()
        && !before.contains(['/', '\\'])
        && !host.contains(char::is_whitespace)
}

/// True for URLs git would treat as remote addresses (`https://`, `http://`, `ssh://`,
/// `git://`, `file://`, `git+ssh://`, and scp-like `user@host:path`); false for plain local
/// paths.
pub fn looks_like_git_url(s: &str) -> bool {
    let lower = s.trim().to_ascii_lowercase();
    const SCHEMES: [&str; 7] = [
        "https://",
        "http://",
        "ssh://",
        "git://",
        "file://",
        "git+ssh://",
        "ssh+git://",
    ];
    SCHEMES.iter().any(|p| lower.starts_with(p)) || is_scp_like(s.trim())
}

/// Hide the userinfo of a URL: `https://user:token@host/x` → `https://***@host/x`. An SSH
/// username alone (`ssh://git@host/x`, `git@host:x`) is not a secret and is kept, but a
/// password next to it is hidden. Text that is not a URL is returned unchanged.
pub fn redact_url(s: &str) -> String {
    if let Some(start) = scheme_len(s) {
        let scheme = &s[..start - 3];
        let rest = &s[start..];
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            let userinfo = &rest[..at];
            let shown = match userinfo.split_once(':') {
                None if is_ssh_scheme(scheme) => userinfo.to_string(),
                Some((user, _)) if is_ssh_scheme(scheme) => format!("{user}:***"),
                _ => "***".to_string(),
            };
            return format!("{}{shown}@{}", &s[..start], &rest[at + 1..]);
        }
        return s.to_string();
    }
    // scp-like `user:password@host:path` is not valid for ssh, but never echo a password.
    if let Some((userinfo, rest)) = s.split_once('@') {
        if userinfo.contains(':') && !userinfo.contains(['/', '\\']) && !s.contains("://") {
            return format!("***@{rest}");
        }
    }
    s.to_string()
}

/// Scrub a free text (a libgit2 message) for display: redact every URL in it and replace
/// the token wherever it appears.
pub fn sanitize(text: &str, token: Option<&str>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(idx) = rest.find("://") {
        // The URL starts after the last delimiter before `://` and ends at the next one.
        let is_delim = |c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '<' | '>' | '`');
        let start = rest[..idx]
            .rfind(is_delim)
            .map(|i| i + rest[i..].chars().next().map_or(1, char::len_utf8))
            .unwrap_or(0);
        let end = rest[idx..].find(is_delim).map_or(rest.len(), |i| idx + i);
        out.push_str(&rest[..start]);
        out.push_str(&redact_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    match token {
        Some(token) if !token.is_empty() => out.replace(token, "***"),
        _ => out,
    }
}

/// The port of an SSH URL (`ssh://host:2222/x`); `None` for other URLs or no port.
fn ssh_port(url: &str) -> Option<u16> {
    let start = scheme_len(url)?;
    if !is_ssh_scheme(&url[..start - 3]) {
        return None;
    }
    let rest = &url[start..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once("]:").map(|(_, p)| p),
        None => host_port.rsplit_once(':').map(|(_, p)| p),
    };
    port.and_then(|p| p.parse().ok())
}

fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The HEAD commit SHA if `dir` is inside a git work tree (for local-directory sources).
pub fn head_commit(dir: &Path) -> Option<String> {
    let repo = Repository::discover(dir).ok()?;
    if repo.is_bare() {
        return None;
    }
    let commit = repo.head().ok()?.peel_to_commit().ok()?;
    Some(commit.id().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "ghp_S3cr3tT0k3nValue";

    #[test]
    fn redacts_userinfo() {
        assert_eq!(
            redact_url("https://user:pw@example.com/a/b.git"),
            "https://***@example.com/a/b.git"
        );
        assert_eq!(
            redact_url(&format!("https://{TOKEN}@github.com/o/r")),
            "https://***@github.com/o/r"
        );
        assert_eq!(redact_url("ssh://git@host/x"), "ssh://git@host/x");
        assert_eq!(redact_url("ssh://git:pw@host/x"), "ssh://git:***@host/x");
        assert_eq!(
            redact_url("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
        assert_eq!(redact_url("https://host/a@b"), "https://host/a@b");
        assert_eq!(redact_url("/some/path"), "/some/path");
    }

    #[test]
    fn sanitizes_messages() {
        let msg =
            format!("failed to fetch 'https://x:{TOKEN}@h.example/r.git': 401 (and also {TOKEN})");
        let clean = sanitize(&msg, Some(TOKEN));
        assert!(!clean.contains(TOKEN), "{clean}");
        assert!(clean.contains("'https://***@h.example/r.git'"), "{clean}");
        assert_eq!(sanitize("no urls here", None), "no urls here");
    }

    #[test]
    fn url_detection() {
        for url in [
            "https://github.com/o/r",
            "http://h/r",
            "ssh://git@h/r",
            "git://h/r",
            "file:///tmp/r",
            "git@github.com:o/r.git",
            "GIT+SSH://h/r",
        ] {
            assert!(looks_like_git_url(url), "{url}");
        }
        for path in [
            ".",
            "./deploy",
            "/srv/repo",
            "deploy/prod",
            "C:\\x",
            "a:b",
            "./u@h:p",
        ] {
            assert!(!looks_like_git_url(path), "{path}");
        }
    }

    #[test]
    fn ssh_ports() {
        assert_eq!(ssh_port("ssh://git@h:2222/r"), Some(2222));
        assert_eq!(ssh_port("ssh://[::1]:2200/r"), Some(2200));
        assert_eq!(ssh_port("ssh://h/r"), None);
        assert_eq!(ssh_port("git@h:r"), None);
        assert_eq!(ssh_port("https://h:8443/r"), None);
    }

    #[test]
    fn cache_keys() {
        let a = cache_key("https://github.com/org/deploy.git");
        assert!(a.ends_with("-deploy"), "{a}");
        assert_eq!(a.len(), 12 + 1 + "deploy".len());
        // Credentials do not change the cache entry; different remotes do.
        assert_eq!(a, cache_key("https://u:p@github.com/org/deploy.git"));
        assert_ne!(a, cache_key("https://github.com/other/deploy.git"));
        assert!(cache_key("git@h:weird name/..").ends_with("-weird_name"));
        assert!(cache_key("file:///").ends_with("-repo"));
    }

    #[test]
    fn glob() {
        assert!(glob_match(b"*.example.com", b"git.example.com"));
        assert!(!glob_match(b"*.example.com", b"example.com"));
        assert!(glob_match(b"gi?.h", b"git.h"));
        assert!(glob_match(b"*", b""));
        assert!(glob_match(b"a*b*c", b"aXbYbZc"));
        assert!(!glob_match(b"a*b*c", b"aXbYbZ"));
    }

    fn key_blob(kind: &str, body: &[u8]) -> Vec<u8> {
        let mut blob = (kind.len() as u32).to_be_bytes().to_vec();
        blob.extend_from_slice(kind.as_bytes());
        blob.extend_from_slice(body);
        blob
    }

    #[test]
    fn negated_patterns_and_markers() {
        let key = key_blob("ssh-ed25519", b"k1");
        let b64 = BASE64.encode(&key);
        let text = format!("*.example.com,!bad.example.com ssh-ed25519 {b64}\n");
        assert_eq!(
            check_known_hosts(&text, "git.example.com", 22, &key),
            HostKeyStatus::Known { line: 1 }
        );
        assert!(matches!(
            check_known_hosts(&text, "bad.example.com", 22, &key),
            HostKeyStatus::Unknown { .. }
        ));
        let revoked = format!("{text}@revoked * ssh-ed25519 {b64}\n");
        assert_eq!(
            check_known_hosts(&revoked, "git.example.com", 22, &key),
            HostKeyStatus::Revoked { line: 2 }
        );
        let ca = format!("@cert-authority * ssh-ed25519 {b64}\n");
        assert!(matches!(
            check_known_hosts(&ca, "git.example.com", 22, &key),
            HostKeyStatus::Unknown { .. }
        ));
    }

    #[test]
    fn other_key_types_are_not_a_change() {
        let server = key_blob("ecdsa-sha2-nistp256", b"k1");
        let listed = BASE64.encode(key_blob("ssh-ed25519", b"k2"));
        let text = format!("h ssh-ed25519 {listed}\n");
        assert_eq!(
            check_known_hosts(&text, "h", 22, &server),
            HostKeyStatus::Unknown {
                other_types: vec!["ssh-ed25519".into()]
            }
        );
    }

    #[test]
    fn key_checks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            fs::write(&p, text).expect("write");
            p
        };
        let problem = |p: &Path| match check_private_key(p) {
            Err(GitError::BadKey { problem, .. }) => problem,
            other => panic!("expected BadKey, got {other:?}"),
        };
        assert!(problem(&dir.path().join("missing")).contains("does not exist"));
        assert!(problem(dir.path()).contains("directory"));
        assert!(problem(&write("id.pub", "ssh-ed25519 AAAA me@h\n")).contains("public key"));
        assert!(problem(&write("junk", "hello\n")).contains("not a private key"));
        let pem = write(
            "rsa",
            "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
        );
        assert!(check_private_key(&pem).is_ok());
        let enc = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        assert!(problem(&write("enc", enc)).contains("passphrase"));
        // OpenSSH format: magic, then the cipher name as an SSH string.
        let openssh = |cipher: &str| {
            let mut blob = b"openssh-key-v1\0".to_vec();
            blob.extend(key_blob(cipher, b"rest"));
            format!(
                "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
                BASE64.encode(blob)
            )
        };
        assert!(check_private_key(&write("plain", &openssh("none"))).is_ok());
        assert!(problem(&write("aes", &openssh("aes256-ctr"))).contains("passphrase"));
    }

    /// The token must not leak through any error, whatever the path that built it.
    #[test]
    fn token_absent_from_every_error() {
        let url = format!("https://x-access-token:{TOKEN}@git.example.com/o/r.git");
        let spec = GitSpec {
            url: url.clone(),
            token: Some(TOKEN.to_string()),
            ..GitSpec::default()
        };
        let ctx = Ctx::new(&spec);
        let raw = git2::Error::from_str(&format!("failed to connect to {url}: token {TOKEN}"));
        let auth = Auth::new(&ctx);
        let lib = ctx.libgit(&raw);
        let errors = vec![
            GitError::Unreachable {
                url: ctx.url.clone(),
                source: lib.clone(),
            },
            GitError::Fetch {
                url: ctx.url.clone(),
                source: lib.clone(),
            },
            GitError::CacheRepo {
                dir: PathBuf::from("/c"),
                source: lib.clone(),
            },
            ctx.unknown_ref(),
            GitError::AmbiguousRef {
                git_ref: "abcdef1".into(),
                url: ctx.url.clone(),
            },
            GitError::NotACommit {
                git_ref: "v1".into(),
                url: ctx.url.clone(),
            },
            GitError::NoDefaultBranch {
                url: ctx.url.clone(),
            },
            auth.network_error(&raw),
            {
                let _ = auth.credentials(None, CredentialType::USER_PASS_PLAINTEXT);
                let _ = auth.credentials(None, CredentialType::USER_PASS_PLAINTEXT);
                auth.take_failure().expect("second try fails")
            },
            GitError::UnsafePath {
                commit: "0".repeat(40),
                url: ctx.url.clone(),
                name: "..".into(),
            },
            GitError::CorruptCache {
                dir: PathBuf::from("/c"),
                source: Box::new(GitError::Fetch {
                    url: ctx.url.clone(),
                    source: lib,
                }),
            },
        ];
        let debug = format!("{spec:?}");
        assert!(!debug.contains(TOKEN), "token leaked by Debug: {debug}");
        for err in errors {
            let mut text = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(s) = source {
                text.push_str(&s.to_string());
                source = s.source();
            }
            assert!(!text.contains(TOKEN), "token leaked: {text}");
        }
    }

    #[test]
    fn credential_retries_are_bounded() {
        let spec = GitSpec {
            url: "https://h.example/r".into(),
            token: Some(TOKEN.into()),
            ..GitSpec::default()
        };
        let ctx = Ctx::new(&spec);
        let auth = Auth::new(&ctx);
        assert!(auth
            .credentials(None, CredentialType::USER_PASS_PLAINTEXT)
            .is_ok());
        let second = auth.credentials(None, CredentialType::USER_PASS_PLAINTEXT);
        assert!(second.is_err());
        let failure = auth.take_failure().expect("recorded");
        assert!(matches!(failure, GitError::AuthFailed { .. }));
        assert!(
            failure.to_string().contains("rejected the token"),
            "{failure}"
        );
        // Without a token, the first request already fails with advice.
        let spec = GitSpec {
            url: "https://h.example/r".into(),
            ..GitSpec::default()
        };
        let ctx = Ctx::new(&spec);
        let auth = Auth::new(&ctx);
        assert!(auth
            .credentials(None, CredentialType::USER_PASS_PLAINTEXT)
            .is_err());
        let failure = auth.take_failure().expect("recorded");
        assert!(failure.to_string().contains("TEND_GIT_TOKEN"), "{failure}");
    }
}
