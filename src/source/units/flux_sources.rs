//! The sources Flux's units read: a `GitRepository` (the checkout under test, or fetched with
//! tend's git source at its `ref`), and the API versions of sources tend reads.

use super::model::{Context, Found, Sources, Tree};
use serde_json::Value;

/// The API versions of Flux's sources tend reads.
pub const SOURCE_VERSIONS: &[&str] = &["v1", "v1beta2", "v1beta1"];

/// The tree a `sourceRef` (of kind `GitRepository`) names: the checkout under test for the
/// bootstrap GitRepository (`flux-system/flux-system`, often a placeholder file) and for one
/// whose URL is the checkout's, else the repository fetched at its `ref`.
pub fn git_tree(
    unit: &Found,
    source_ref: &Value,
    field: &[&str],
    sources: &Sources,
    ctx: &Context,
) -> Result<Tree, crate::problem::Problem> {
    let text = |k: &str| source_ref.get(k).and_then(Value::as_str);
    let kind = text("kind").unwrap_or("");
    let name = text("name").unwrap_or("");
    let namespace = text("namespace").unwrap_or(&unit.id.namespace);
    if kind != "GitRepository" {
        return Err(unit.problem(
            field,
            format!(
                "a sourceRef of kind {kind:?} is not supported by tend yet; use a GitRepository, an OCIRepository or an ExternalArtifact of an ArtifactGenerator"
            ),
        ));
    }
    let checkout = || {
        let (root, revision) = ctx.tree_of_checkout();
        Tree {
            root,
            revision,
            is_checkout: true,
            _staging: None,
        }
    };
    let source = sources.get(kind, namespace, name);
    if let Some(source) = source {
        source_version(source)?;
    }
    let Some(source) = source else {
        if (namespace, name) == ("flux-system", "flux-system") {
            return Ok(checkout());
        }
        return Err(unit.problem(
            field,
            format!("sourceRef names GitRepository {namespace}/{name}, which the desired state does not define; define it, or fix the name"),
        ));
    };
    let url = source
        .spec()
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or("");
    let bootstrap = (namespace, name) == ("flux-system", "flux-system");
    if !bootstrap && ctx.is_checkout_url(url) {
        if let Some(branch) = super::flux_checkout::other_branch(source, sources, ctx) {
            return super::flux_checkout::branch_tree(source, url, &branch, ctx);
        }
    }
    if bootstrap || ctx.is_checkout_url(url) {
        if source.spec().get("verify").is_some() && ctx.checkout.signed_by.is_none() {
            return Err(source.problem(
                &["spec", "verify"],
                "this GitRepository is the repository under test and asks for signed commits: run tend with --verify-signatures (head, tag or tag-and-head) and the signers' keys (--trusted-keys or --trusted-keys-secret), so the checkout is verified as its controller would verify it",
            ));
        }
        return Ok(checkout());
    }
    fetch_git(source, url, (sources, ctx))
}

/// `spec.verify` of a fetched GitRepository (Flux's commit and tag signatures): checked with
/// the run's trusted keys and those of the Secret `secretRef` names, when the desired state
/// holds it. Returns who signed.
fn verify_fetched(
    source: &Found,
    fetched: &crate::source::git::Fetched,
    (sources, ctx): (&Sources, &Context),
) -> Result<Option<String>, crate::problem::Problem> {
    use crate::source::verify::{self, VerifyMode};
    let Some(spec) = source.spec().get("verify") else {
        return Ok(None);
    };
    let at = |message: String| source.problem(&["spec", "verify"], message);
    let mode = match spec
        .get("mode")
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase)
    {
        None => VerifyMode::Head,
        Some(m) if m == "head" => VerifyMode::Head,
        Some(m) if m == "tag" => VerifyMode::Tag,
        Some(m) if m == "tagandhead" => VerifyMode::TagAndHead,
        Some(other) => {
            return Err(at(format!(
                "mode {other:?} is not one of HEAD, Tag, TagAndHEAD"
            )))
        }
    };
    let mut keys = ctx.trusted_keys.clone();
    let secret = spec.pointer("/secretRef/name").and_then(Value::as_str);
    if let Some(name) = secret {
        let namespace = &source.id.namespace;
        let entries = sources.config_data("Secret", namespace, name).map_err(at)?;
        for (entry, text) in entries.unwrap_or_default() {
            keys.add(&format!("Secret {namespace}/{name} key {entry}"), &text)
                .map_err(|e| at(e.to_string()))?;
        }
    }
    if keys.is_empty() {
        return Err(at(format!(
            "no key to check the signatures with: {}; pass the signers' keys with --trusted-keys or --trusted-keys-secret",
            match secret {
                Some(name) => format!("the Secret {name} is not in the desired state"),
                None => "no secretRef".to_string(),
            }
        )));
    }
    let target = verify::Target {
        repository: &fetched.repository,
        commit: &fetched.commit,
        resolved_ref: fetched.resolved_ref.as_deref(),
        work_tree: false,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let verified = verify::verify_checkout(&target, mode, &keys, now)
        .map_err(|e| at(format!("GitRepository {}: {e}", source.id)))?;
    Ok(verified.describe())
}

/// A source in a version tend reads, or the problem at its apiVersion.
pub fn source_version(source: &Found) -> Result<(), crate::problem::Problem> {
    let version = source.api_version.split('/').nth(1).unwrap_or("");
    if SOURCE_VERSIONS.contains(&version) {
        return Ok(());
    }
    Err(source.problem(
        &["apiVersion"],
        format!(
            "{} is not a version of Flux's {} tend reads ({}); write one of them",
            source.api_version,
            source.id.kind,
            SOURCE_VERSIONS.join(", ")
        ),
    ))
}

/// A GitRepository other than the checkout, fetched with tend's git source at its `ref`,
/// and its signatures checked when it asks (`spec.verify`).
fn fetch_git(
    source: &Found,
    url: &str,
    (sources, ctx): (&Sources, &Context),
) -> Result<Tree, crate::problem::Problem> {
    let git_ref = source.spec().get("ref");
    let field = |k: &str| git_ref.and_then(|r| r.get(k)).and_then(Value::as_str);
    let login = super::flux_credentials::git_login(source, sources, ctx)?.unwrap_or_default();
    // source-controller's precedence: commit, name, semver, tag, branch.
    let semver = match field("commit").or(field("name")) {
        Some(_) => None,
        None => field("semver").map(str::to_string),
    };
    let chosen = field("commit")
        .or(field("name"))
        .or(field("tag"))
        .or(field("branch"))
        .map(|r| r.trim_start_matches("refs/heads/").to_string());
    let spec = crate::source::git::GitSpec {
        url: url.to_string(),
        git_ref: chosen,
        semver,
        cache_dir: ctx.cache_dir.to_path_buf(),
        ssh_key: login.identity.as_ref().map(|f| f.path().to_path_buf()),
        known_hosts: login.known_hosts.as_ref().map(|f| f.path().to_path_buf()),
        token: login.basic.as_ref().map(|(_, password)| password.clone()),
        login: login
            .basic
            .as_ref()
            .map(|(user, _)| (user.clone(), login.origin.clone())),
        limits: ctx.checkout.tree_limits,
    };
    let fetched = crate::source::git::fetch(&spec).map_err(|e| {
        source.problem(&["spec", "url"], format!("cannot fetch {}: {e}", source.id))
    })?;
    if let Some(signer) = verify_fetched(source, &fetched, (sources, ctx))? {
        tracing::info!("GitRepository {}: {signer}", source.id);
    }
    Ok(Tree {
        root: fetched.dir,
        revision: Some(fetched.commit),
        is_checkout: false,
        _staging: None,
    })
}
