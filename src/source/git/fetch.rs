//! Fetching: list the remote's refs, resolve the wanted ref, fetch only it (shallow where the transport allows).

use super::extract::{extract, record_tree, remove_dir_if_exists};
use super::*;

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
pub(super) enum Failure {
    Final(GitError),
    Cache(GitError),
}

impl From<GitError> for Failure {
    fn from(err: GitError) -> Self {
        Failure::Final(err)
    }
}

/// Everything about one fetch that does not change between attempts.
pub(super) struct Ctx<'a> {
    pub(super) spec: &'a GitSpec,
    /// The URL as it may be shown.
    pub(super) url: String,
    /// The ref as given, for messages.
    pub(super) ref_display: String,
    /// Local transports (file://, plain paths) cannot do shallow fetches.
    pub(super) local: bool,
    /// http(s) remotes: the only ones the token is sent to.
    pub(super) http: bool,
    /// Host and port for known_hosts lookups, for SSH URLs.
    pub(super) ssh_port: u16,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(spec: &'a GitSpec) -> Self {
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

    pub(super) fn token(&self) -> Option<&str> {
        self.spec.token.as_deref().filter(|t| !t.is_empty())
    }

    pub(super) fn libgit(&self, err: &git2::Error) -> LibgitError {
        LibgitError::new(err, self.token())
    }

    pub(super) fn cache_err(&self, dir: &Path, err: &git2::Error) -> Failure {
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

    pub(super) fn unknown_ref(&self) -> GitError {
        GitError::UnknownRef {
            git_ref: self.ref_display.clone(),
            url: self.url.clone(),
        }
    }
}

/// What the ref resolved to on the remote.
pub(super) enum Plan {
    /// Fetch this one ref (`refs/heads/x` or `refs/tags/x`), whose remote value is `oid`.
    Ref { name: String, oid: Oid },
    /// A commit SHA (or prefix) that no advertised ref points at: needs the full history.
    Sha(String),
}

pub(super) fn attempt(ctx: &Ctx<'_>, repo_dir: &Path, trees: &Path) -> Result<Fetched, Failure> {
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
                    repository: repo_dir.to_path_buf(),
                    commit: commit.id().to_string(),
                    commit_time: commit.time().seconds(),
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
        .connect_auth(
            Direction::Fetch,
            Some(auth.callbacks()),
            Some(proxy_from_environment()),
        )
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
                repository: repo_dir.to_path_buf(),
                commit: commit.id().to_string(),
                commit_time: commit.time().seconds(),
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
                repository: repo_dir.to_path_buf(),
                commit: commit.id().to_string(),
                commit_time: commit.time().seconds(),
                resolved_ref: None,
            })
        }
    }
}

pub(super) fn open_or_init(ctx: &Ctx<'_>, repo_dir: &Path) -> Result<Repository, Failure> {
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
pub(super) fn check_ref_targets(repo: &Repository) -> Result<(), LibgitError> {
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
pub(super) fn resolve(
    ctx: &Ctx<'_>,
    heads: &[(String, Oid)],
    default_branch: Option<&str>,
) -> Result<Plan, GitError> {
    let lookup = |name: &str| heads.iter().find(|(n, _)| n == name).map(|(_, oid)| *oid);
    if let Some(range) = &ctx.spec.semver {
        return highest_tag(ctx, heads, range);
    }
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

/// The highest tag whose name is a version in `range` (source-controller's `CheckoutSemVer`:
/// tags parsed as Masterminds versions, a leading `v` allowed, prereleases only for a range
/// that names one).
fn highest_tag(ctx: &Ctx<'_>, heads: &[(String, Oid)], range: &str) -> Result<Plan, GitError> {
    use crate::helm::funcs::{semver_compare, semver_order};
    let no_match = |why: &str| GitError::UnknownRef {
        git_ref: format!("semver {range} ({why})"),
        url: ctx.url.clone(),
    };
    if semver_compare(range, "0.0.0").is_err() {
        return Err(no_match("not a semver range"));
    }
    let mut best: Option<(&str, Oid)> = None;
    for (name, oid) in heads {
        let Some(tag) = name.strip_prefix("refs/tags/") else {
            continue;
        };
        if tag.ends_with("^{}") || !semver_compare(range, tag).unwrap_or(false) {
            continue;
        }
        let higher = best.is_none_or(|(b, _)| {
            let b = b.trim_start_matches("refs/tags/");
            semver_order(tag, b) == Some(std::cmp::Ordering::Greater)
        });
        if higher {
            best = Some((name, *oid));
        }
    }
    match best {
        Some((name, oid)) => Ok(Plan::Ref {
            name: name.to_string(),
            oid,
        }),
        None => Err(no_match("no tag matches it")),
    }
}

pub(super) fn default_plan(
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
pub(super) fn fetch_refspecs(
    ctx: &Ctx<'_>,
    auth: &Auth<'_>,
    remote: &mut git2::Remote<'_>,
    refspecs: &[String],
    depth: i32,
) -> Result<(), Failure> {
    // What the remote sent, stopped past the limit: the checkout is measured before it is
    // written, but the pack itself lands in the cache first.
    let limit = ctx.spec.limits.fetch_bytes();
    let received = std::cell::Cell::new(0u64);
    let run = |remote: &mut git2::Remote<'_>, depth: i32| {
        auth.reset();
        let mut callbacks = auth.callbacks();
        callbacks.transfer_progress(|progress| {
            received.set(progress.received_bytes() as u64);
            received.get() <= limit
        });
        let mut opts = FetchOptions::new();
        opts.remote_callbacks(callbacks)
            .proxy_options(proxy_from_environment())
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
        if received.get() > limit {
            return Failure::Final(GitError::FetchTooLarge {
                url: ctx.url.clone(),
                limit,
            });
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

pub(super) fn shallow_unsupported(err: &git2::Error) -> bool {
    err.raw_code() == GIT_ENOTSUPPORTED || err.message().contains("shallow")
}

/// Peel the local ref `name` (just fetched or updated) to its commit.
pub(super) fn peel_ref<'r>(
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
pub(super) fn find_commit_prefix<'r>(
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

/// libgit2's automatic proxy: git's `http.proxy` settings, else `HTTPS_PROXY`/`HTTP_PROXY`
/// with `NO_PROXY`, as `git fetch` and Flux's source-controller honour them.
fn proxy_from_environment() -> git2::ProxyOptions<'static> {
    let mut proxy = git2::ProxyOptions::new();
    proxy.auto();
    proxy
}
