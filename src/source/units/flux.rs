//! Flux's kinds (fluxcd/flux2): which are units (`Kustomization`, `HelmRelease`), which are
//! sources, which are neither; and the rules both units share (their sources, `dependsOn`,
//! the live-controller rule).

use super::{Context, Controller, Expander, Found, LiveRule, Produced, Role, Sources, UnitId};
use serde_json::Value;
use std::path::PathBuf;

pub struct Flux;

pub const KUSTOMIZE_GROUP: &str = "kustomize.toolkit.fluxcd.io";
pub const HELM_GROUP: &str = "helm.toolkit.fluxcd.io";
pub const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";

/// The API versions each unit kind is read in (all still found in real repositories).
pub const KUSTOMIZATION_VERSIONS: &[&str] = &["v1", "v1beta2"];
pub const HELM_RELEASE_VERSIONS: &[&str] = &["v2", "v2beta2", "v2beta1"];
pub const SOURCE_VERSIONS: &[&str] = &["v1", "v1beta2", "v1beta1"];

impl Expander for Flux {
    fn controller(&self) -> Controller {
        Controller::Flux
    }

    fn marker(&self) -> &'static str {
        "toolkit.fluxcd.io"
    }

    fn role(&self, api_version: &str, kind: &str) -> Option<Role> {
        let group = api_version.split('/').next().unwrap_or("");
        match (group, kind) {
            (KUSTOMIZE_GROUP, "Kustomization") | (HELM_GROUP, "HelmRelease") => Some(Role::Unit),
            (SOURCE_GROUP, _) => Some(Role::Source),
            (g, _) if g.ends_with(".toolkit.fluxcd.io") => Some(Role::Inert),
            _ => None,
        }
    }

    fn expand(&self, unit: &Found, sources: &Sources, ctx: &Context) -> Produced {
        let version = unit.api_version.split('/').nth(1).unwrap_or("");
        let (versions, expand): (&[&str], fn(&Found, &Sources, &Context) -> Produced) =
            match unit.id.kind.as_str() {
                "Kustomization" => (KUSTOMIZATION_VERSIONS, super::flux_kustomize::expand),
                _ => (HELM_RELEASE_VERSIONS, super::flux_helm::expand),
            };
        if !versions.contains(&version) {
            return Produced::failed(unit.problem(
                &["apiVersion"],
                format!(
                    "{} is not a version of Flux's {} tend reads ({}); write one of them",
                    unit.api_version,
                    unit.id.kind,
                    versions.join(", ")
                ),
            ));
        }
        let mut produced = expand(unit, sources, ctx);
        produced.depends_on = depends_on(unit);
        produced.live = Some(live_rule(unit));
        produced
    }
}

/// `spec.dependsOn`: units of the same kind, in the unit's namespace unless named.
fn depends_on(unit: &Found) -> Vec<UnitId> {
    let list = unit.spec().get("dependsOn").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(|entry| {
            let name = entry.get("name")?.as_str()?;
            let namespace = entry
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or(&unit.id.namespace);
            Some(UnitId {
                controller: Controller::Flux,
                kind: unit.id.kind.clone(),
                namespace: namespace.to_string(),
                name: name.to_string(),
            })
        })
        .collect()
}

/// A live Flux object is active unless `spec.suspend` is true.
fn live_rule(unit: &Found) -> LiveRule {
    let (group, command) = match unit.id.kind.as_str() {
        "Kustomization" => (KUSTOMIZE_GROUP, "kustomization"),
        _ => (HELM_GROUP, "helmrelease"),
    };
    LiveRule {
        group,
        active: |live| live.pointer("/spec/suspend").and_then(Value::as_bool) != Some(true),
        way_out: format!(
            "flux suspend {command} {} -n {}",
            unit.id.name, unit.id.namespace
        ),
    }
}

/// A tree of manifests or charts a unit reads: its root directory and revision.
pub struct Tree {
    pub root: PathBuf,
    pub revision: Option<String>,
    /// Whether it is the checkout under test.
    pub is_checkout: bool,
}

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
                "a sourceRef of kind {kind:?} is not supported by tend yet; use a GitRepository"
            ),
        ));
    }
    let checkout = || {
        let (root, revision) = ctx.tree_of_checkout();
        Tree {
            root,
            revision,
            is_checkout: true,
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
    if (namespace, name) == ("flux-system", "flux-system") || ctx.is_checkout_url(url) {
        return Ok(checkout());
    }
    fetch_git(source, url, ctx)
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

/// A GitRepository other than the checkout, fetched with tend's git source at its `ref`.
fn fetch_git(source: &Found, url: &str, ctx: &Context) -> Result<Tree, crate::problem::Problem> {
    let git_ref = source.spec().get("ref");
    let field = |k: &str| git_ref.and_then(|r| r.get(k)).and_then(Value::as_str);
    if field("semver").is_some() {
        return Err(source.problem(
            &["spec", "ref", "semver"],
            "a semver ref is not supported by tend yet; name a tag, branch or commit",
        ));
    }
    if source.spec().get("secretRef").is_some() {
        return Err(source.problem(
            &["spec", "secretRef"],
            "a GitRepository with credentials (secretRef) is not supported by tend yet; give tend the repository with --repo, or make it readable without credentials",
        ));
    }
    let chosen = field("commit")
        .or(field("name"))
        .or(field("tag"))
        .or(field("branch"))
        .map(|r| r.trim_start_matches("refs/heads/").to_string());
    let spec = crate::source::git::GitSpec {
        url: url.to_string(),
        git_ref: chosen,
        cache_dir: ctx.cache_dir.to_path_buf(),
        ssh_key: None,
        known_hosts: None,
        token: None,
    };
    let fetched = crate::source::git::fetch(&spec).map_err(|e| {
        source.problem(
            &["spec", "url"],
            format!("cannot fetch GitRepository {}: {e}", source.id),
        )
    })?;
    Ok(Tree {
        root: fetched.dir,
        revision: Some(fetched.commit),
        is_checkout: false,
    })
}
