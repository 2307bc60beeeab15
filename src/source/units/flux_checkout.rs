//! A `GitRepository` that names the repository under test but another branch (a tenant's
//! branch: fluxcd/flux2-multi-tenancy's `dev-team`) holds that branch's content, not the
//! checkout's. The checkout stands for one branch, its **main line**: the bootstrap
//! GitRepository's `ref.branch` when the desired state defines it, else the local
//! repository's default branch (`origin/HEAD`), else its current branch. A GitRepository of
//! the same URL whose `ref.branch` is another is read at that branch: from the local
//! repository's own refs when it has them (no network, and the same content the remote
//! would send as of the last fetch), else fetched from its URL.

use super::model::{Context, Found, Sources, Tree};
use serde_json::Value;

/// The branch `source` (a GitRepository of the checkout's URL) names, when it is not the
/// branch the checkout stands for.
pub fn other_branch(source: &Found, sources: &Sources, ctx: &Context) -> Option<String> {
    let branch = source.spec().pointer("/ref/branch")?.as_str()?;
    let main_line = main_line(sources, ctx)?;
    (branch != main_line).then(|| branch.to_string())
}

fn main_line(sources: &Sources, ctx: &Context) -> Option<String> {
    let bootstrap = sources
        .get("GitRepository", "flux-system", "flux-system")
        .and_then(|s| s.spec().pointer("/ref/branch"))
        .and_then(Value::as_str);
    if let Some(branch) = bootstrap {
        return Some(branch.to_string());
    }
    let repo = git2::Repository::open(&ctx.checkout.root).ok()?;
    let default = repo
        .find_reference("refs/remotes/origin/HEAD")
        .ok()
        .and_then(|r| r.symbolic_target().ok().flatten().map(str::to_string))
        .and_then(|t| t.strip_prefix("refs/remotes/origin/").map(str::to_string));
    default.or_else(|| {
        let head = repo.head().ok()?;
        head.is_branch()
            .then(|| head.shorthand().ok().map(str::to_string))
            .flatten()
    })
}

/// The tree of `branch` of the repository under test.
pub fn branch_tree(
    source: &Found,
    url: &str,
    branch: &str,
    ctx: &Context,
) -> Result<Tree, crate::problem::Problem> {
    let local = git2::Repository::open(&ctx.checkout.root)
        .ok()
        .and_then(|repo| {
            [
                format!("refs/heads/{branch}"),
                format!("refs/remotes/origin/{branch}"),
            ]
            .into_iter()
            .find(|name| repo.find_reference(name).is_ok())
        });
    let (from, git_ref) = match local {
        Some(name) => (ctx.checkout.root.display().to_string(), name),
        None => (url.to_string(), branch.to_string()),
    };
    let spec = crate::source::git::GitSpec {
        url: from,
        git_ref: Some(git_ref),
        semver: None,
        cache_dir: ctx.cache_dir.to_path_buf(),
        ssh_key: None,
        known_hosts: None,
        token: None,
        login: None,
        limits: ctx.checkout.tree_limits,
    };
    let fetched = crate::source::git::fetch(&spec).map_err(|e| {
        source.problem(
            &["spec", "ref", "branch"],
            format!(
                "{} names branch {branch} of the repository under test, which tend reads apart from the checkout: {e}",
                source.id
            ),
        )
    })?;
    Ok(Tree {
        root: fetched.dir,
        revision: Some(format!("{branch}@sha1:{}", fetched.commit)),
        is_checkout: false,
        _staging: None,
    })
}
