//! GitOps controllers' units: objects of Flux (`Kustomization`, `HelmRelease`) and Argo CD
//! (`Application`, `ApplicationSet`) found in the desired state, expanded into what their
//! controllers would apply, with no controller. Runs after [`super::walk::walk_with`] (see
//! `run::load::load`); the files it adds are read like any other.
//!
//! # The contract, for a controller plugging in
//!
//! The shared model lives in `model.rs` (re-exported here); each controller is files of its
//! own (`flux*.rs`; Argo CD: `argo*.rs`) that import `super::model`, never this file. A
//! controller is an [`Expander`] listed in [`EXPANDERS`] (with its [`Controller`] variant).
//! It says which of its kinds are **units** (expanded), **sources** (named by units:
//! `GitRepository`, `HelmRepository`, ...) or **inert** (neither; `AppProject`, a Flux
//! `Alert`), by apiVersion and kind ([`Expander::role`]; every kind it claims is left out of
//! render unless `--apply-controller-objects`, see [`is_controller_object`]); names the
//! cluster a unit targets through a kubeconfig Secret ([`Expander::kube_config`], default
//! none); and expands one unit ([`Expander::expand`]) into [`Produced`]:
//!
//! - `files`: [`SourceFile`]s, labelled as the walk labels them relative to the tree they came
//!   from (`clusters/staging/apps (kustomize build)`); the loop appends the unit chain, so every
//!   message reads `<label> (Flux Kustomization staging/apps → HelmRelease podinfo/podinfo)`.
//!   A Helm release is a file holding a tend `HelmChart` document annotated with
//!   [`EXPANDED_ANNOTATION`] and padded to the unit's line (see `flux_helm.rs`): the chart
//!   pipeline fetches and renders it, and render does not apply the HelmChart object itself.
//!   `charts`: charts read from a source's tree, keyed by an absolute path the HelmChart's
//!   `spec.chart` names; `chart`: a release's repository chart, whose resolved version
//!   becomes the `revision` once fetched (`run::load`).
//! - `outcome`: expanded, suspended, the walked directory itself, or not expanded with the
//!   reason (reported, never silently dropped); `revision`: the source revision it read.
//! - `depends_on`: other units it waits for (their depth becomes waves,
//!   `render::waves::UNIT_WAVE_STEP` apart in render; a unit inside another never before
//!   it); `sync_wave`: its own wave among what the unit it came from syncs (an Argo CD
//!   Application's sync-wave), in the same steps, added to that unit's; `live`: how to tell a live
//!   controller's copy of it is active (the no-fight rule: `run::units_live` reads the live
//!   object of the unit's kind in `LiveRule::group`, any served version, and refuses `apply`
//!   when `LiveRule::active` says so, naming `LiveRule::way_out`).
//! - `problems`: at file:line; any problem fails the run before anything is written.
//!
//! The loop ([`expand`]) scans the walked files for controller documents (parsed with their
//! file:line), indexes the sources of each round before expanding its units, expands every
//! unit found, and scans what they produced again (the bootstrap pattern `clusters/<env>` →
//! infrastructure → apps). A unit met again in its own chain is a cycle, and one defined
//! twice is refused, both at file:line. A unit targeting another cluster
//! ([`Expander::kube_config`], or inherited from the unit it came from) is expanded only by a
//! run for that cluster ([`Context::for_kubeconfig`]: the run of the hub adds one per
//! Secret its units name, `ops::reconcile::spokes`, or `--units-for-kubeconfig-secret`),
//! which then keeps only what such units produce; [`Expanded::spokes`] lists the Secrets.
//!
//! Shared helpers: [`same_repository`] (a source URL naming the checkout under test),
//! [`Context::tree_of_checkout`], [`Context::is_checkout_url`], [`Context::walked_dir`],
//! [`Sources::config_data`] (a ConfigMap's or Secret's data from the desired state),
//! [`unknown_fields`] (top-level `spec` fields a published schema lacks), [`chain_label`].
//! Reports (`report::units`) show each [`ExpandedUnit`] with its objects' counts.
//!
//! `--apply-controller-objects` turns all of this off: the controllers' objects are applied as
//! ordinary objects and nothing is expanded.

mod argo;
mod argo_app;
mod argo_appset;
mod argo_jq;
mod argo_jsonnet;
mod argo_match;
mod argo_nested;
mod argo_source;
mod argo_template;
mod cluster_objects;
mod flux;
mod flux_archives;
mod flux_artifacts;
mod flux_checkout;
mod flux_credentials;
mod flux_decrypt;
mod flux_drift_ignore;
mod flux_helm;
mod flux_ignore;
mod flux_kustomize;
mod flux_oci;
mod flux_post_render;
mod flux_readiness;
mod flux_sources;
mod flux_substitute;
mod flux_values_files;
mod lookup;
mod model;
mod tenant;

pub use argo_app::{apply_encoded_policies, POLICIES_ANNOTATION};
pub use cluster_objects::{ClusterObjects, Entries, ObjectRef};
pub use flux_post_render::{HookStrategy, PostRenderers, POST_RENDERERS_ANNOTATION};
pub use flux_values_files::{merged_from_chart, Listed, VALUES_FILES_ANNOTATION};
pub use lookup::live_entries;
pub use model::*;
pub use tenant::{tenants, Tenant};

use super::walk::Walked;
use super::SourceFile;
use crate::problem::Problem;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The controllers, in the order their documents are looked for.
pub const EXPANDERS: &[&dyn Expander] = &[&flux::Flux, &argo::ArgoCd];

/// Whether `api_version`/`kind` is a controller's own object, which nothing would read if
/// applied (left out by render unless `--apply-controller-objects`).
pub fn is_controller_object(api_version: &str, kind: &str) -> bool {
    EXPANDERS
        .iter()
        .any(|e| e.role(api_version, kind).is_some())
}
/// The result of [`expand`].
#[derive(Debug, Default)]
pub struct Expanded {
    pub units: Vec<ExpandedUnit>,
}

impl Expanded {
    /// The kubeconfig Secrets units target other clusters through (hub and spoke), each
    /// once, in the order first met.
    pub fn spokes(&self) -> Vec<KubeConfigRef> {
        let mut out: Vec<KubeConfigRef> = Vec::new();
        for target in self.units.iter().filter_map(|u| u.target.as_ref()) {
            if !out.iter().any(|t| t.same_secret(target)) {
                out.push(target.clone());
            }
        }
        out
    }
}

/// A file to scan, with the units it came from and the cluster they target.
type Pending = (SourceFile, Arc<Vec<UnitId>>, Option<KubeConfigRef>);

/// Find and expand every unit of `walked`, adding what they produce to its files (and their
/// problems to its problems). With `--units-for-kubeconfig-secret`, only what the units
/// targeting that cluster produce is kept.
pub fn expand(walked: &mut Walked, ctx: &Context) -> Expanded {
    let mut out = Expanded::default();
    let mut sources = Sources::default();
    sources.default_namespace = ctx.default_namespace.to_string();
    let mut seen: BTreeMap<UnitId, Seen> = BTreeMap::new();
    let walked_own = walked.files.len();
    let mut claims = Vec::new();
    let mut frontier: Vec<Pending> = walked
        .files
        .iter()
        .map(|f| (f.clone(), Arc::new(Vec::new()), None))
        .collect();
    while !frontier.is_empty() {
        sources
            .files
            .extend(frontier.iter().map(|(f, _, _)| f.clone()));
        let mut next = Vec::new();
        let mut units = Vec::new();
        // Sources first: a unit may name one defined after it.
        for (role, expander, found) in scan(&frontier, ctx.default_namespace) {
            match role {
                Role::Unit => units.push((expander, found)),
                Role::Source => sources.insert(found),
                Role::Inert => {}
            }
        }
        for (expander, unit) in units {
            match first_sight(&unit, &mut seen) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(problem) => {
                    walked.problems.push(problem);
                    continue;
                }
            }
            let (expanded, files) = expand_one(expander, &unit, &sources, ctx, walked, &mut claims);
            next.extend(files);
            out.units.push(expanded);
        }
        walked.files.extend(next.iter().map(|(f, _, _)| f.clone()));
        frontier = next;
    }
    drop_claimed(walked, walked_own, &claims, ctx);
    order_by_dependencies(&mut out.units, &mut walked.problems);
    if let Some(selected) = ctx.for_kubeconfig {
        let kept: std::collections::BTreeSet<&PathBuf> = out
            .units
            .iter()
            .filter(|u| u.target.as_ref().is_some_and(|t| t.same_secret(selected)))
            .flat_map(|u| &u.files)
            .collect();
        walked.files.retain(|f| kept.contains(&f.path));
    }
    out
}

/// Where a unit was first met, and its definition.
type Seen = (PathBuf, usize, serde_json::Value);

/// The walk's own files (the first `own` of `walked.files`) inside a directory a unit of the
/// checkout syncs are that unit's: they leave the run's own files, but the file that holds
/// a claiming unit itself (an app of apps in the directory it syncs is a cycle, said
/// elsewhere).
fn drop_claimed(walked: &mut Walked, own: usize, claims: &[(PathBuf, PathBuf)], ctx: &Context) {
    let root = ctx.walked_dir();
    let inside: Vec<(String, &PathBuf)> = claims
        .iter()
        .filter_map(|(dir, holder)| {
            let rel = dir.strip_prefix(&root).ok()?;
            (!rel.as_os_str().is_empty())
                .then(|| (rel.to_string_lossy().replace('\\', "/"), holder))
        })
        .collect();
    if inside.is_empty() {
        return;
    }
    let mut index = 0;
    walked.files.retain(|file| {
        index += 1;
        if index > own {
            return true;
        }
        let label = file.path.to_string_lossy();
        !inside.iter().any(|(dir, holder)| {
            let under = label.strip_prefix(dir.as_str()).is_some_and(|rest| {
                rest.is_empty() || rest.starts_with('/') || rest.starts_with(' ')
            });
            under && file.path != **holder
        })
    });
}

/// A unit met again in its own chain is a cycle; one met twice, defined twice, unless both
/// are the same definition (an Application of the walked directory that its app of apps
/// syncs too): then it is expanded once (`Ok(false)` the second time).
fn first_sight(unit: &Found, seen: &mut BTreeMap<UnitId, Seen>) -> Result<bool, Problem> {
    let line = unit.doc.line;
    if unit.chain.contains(&unit.id) {
        return Err(Problem::new(
            &unit.file,
            line,
            format!(
                "{} expands itself ({} → {}): a cycle; point its path somewhere that does not hold it",
                unit.id,
                chain_label(&unit.chain),
                unit.id
            ),
        ));
    }
    if let Some((file, first, definition)) = seen.get(&unit.id) {
        if *definition == unit.doc.value {
            return Ok(false);
        }
        return Err(Problem::new(
            &unit.file,
            line,
            format!(
                "{} is defined twice: first at {}:{first}; remove one of them",
                unit.id,
                file.display()
            ),
        ));
    }
    seen.insert(
        unit.id.clone(),
        (unit.file.clone(), line, unit.doc.value.clone()),
    );
    Ok(true)
}

/// Expand one unit (unless it targets a cluster other than the run's), its files labelled
/// with its chain.
fn expand_one(
    expander: &dyn Expander,
    unit: &Found,
    sources: &Sources,
    ctx: &Context,
    walked: &mut Walked,
    claims: &mut Vec<(PathBuf, PathBuf)>,
) -> (ExpandedUnit, Vec<Pending>) {
    let target = expander.kube_config(unit).or_else(|| unit.target.clone());
    let produced = match &target {
        Some(target) if !ctx.for_kubeconfig.is_some_and(|s| s.same_secret(target)) => {
            Produced::outcome(Outcome::NotExpanded(format!(
                "it targets the cluster of kubeconfig Secret {target} (expanded in that cluster's own section of the run)"
            )))
        }
        _ => expander.expand(unit, sources, ctx),
    };
    let mut chain = (*unit.chain).clone();
    chain.push(unit.id.clone());
    let label = chain_label(&chain);
    let chain = Arc::new(chain);
    let mut labels = Vec::new();
    let mut files = Vec::new();
    // A file of the unit's own file (a release) already names the units around it.
    let around = format!(" ({})", chain_label(&unit.chain));
    for mut file in produced.files {
        let shown = file.path.display().to_string();
        let shown = match unit.chain.is_empty() {
            true => shown.as_str(),
            false => shown.strip_suffix(&around).unwrap_or(&shown),
        };
        file.path = PathBuf::from(format!("{shown} ({label})"));
        labels.push(file.path.clone());
        if let Some(namespace) = &produced.namespace {
            walked
                .namespaces
                .insert(file.path.clone(), namespace.clone());
        }
        files.push((file, chain.clone(), target.clone()));
    }
    walked.problems.extend(produced.problems);
    walked.charts.dirs.extend(produced.charts);
    claims.extend(
        produced
            .claims
            .into_iter()
            .map(|dir| (dir, unit.file.clone())),
    );
    let expanded = ExpandedUnit {
        id: unit.id.clone(),
        file: unit.file.clone(),
        line: unit.doc.line,
        parents: (*unit.chain).clone(),
        outcome: produced.outcome,
        revision: produced.revision,
        chart: produced.chart,
        files: labels,
        depends_on: produced.depends_on,
        live: produced.live,
        target,
        sync_wave: produced.sync_wave,
        readiness: produced.readiness,
        wave: 0,
        service_account: tenant::service_account_name(unit),
    };
    (expanded, files)
}

/// Each unit's wave, its depth in the `dependsOn` graph; a dependency on a unit that does not
/// exist, or a cycle, is a problem at the unit.
fn order_by_dependencies(units: &mut [ExpandedUnit], problems: &mut Vec<Problem>) {
    let index: BTreeMap<&UnitId, usize> =
        units.iter().enumerate().map(|(i, u)| (&u.id, i)).collect();
    let mut waves: Vec<Option<i64>> = vec![None; units.len()];
    for start in 0..units.len() {
        let mut path = Vec::new();
        depth(start, units, &index, &mut waves, &mut path, problems);
    }
    for (unit, wave) in units.iter_mut().zip(waves) {
        unit.wave = wave.unwrap_or(0);
    }
}

fn depth(
    at: usize,
    units: &[ExpandedUnit],
    index: &BTreeMap<&UnitId, usize>,
    waves: &mut Vec<Option<i64>>,
    path: &mut Vec<usize>,
    problems: &mut Vec<Problem>,
) -> i64 {
    if let Some(wave) = waves[at] {
        return wave;
    }
    let unit = &units[at];
    if let Some(first) = path.iter().position(|&i| i == at) {
        let cycle: Vec<String> = path[first..]
            .iter()
            .chain([&at])
            .map(|&i| units[i].id.to_string())
            .collect();
        problems.push(Problem::new(
            &unit.file,
            unit.line,
            format!(
                "dependsOn makes a cycle ({}); remove one of the dependencies",
                cycle.join(" → ")
            ),
        ));
        waves[at] = Some(0);
        return 0;
    }
    path.push(at);
    // What a unit holds exists once the unit is applied: never before its wave. A tenant's
    // unit starts after it: the Namespace, ServiceAccount and RoleBindings it is written
    // with come first (see `tenant.rs`).
    let parent = unit.parents.last().and_then(|p| index.get(p)).copied();
    let mut wave = unit.sync_wave
        + match parent {
            Some(parent) => {
                depth(parent, units, index, waves, path, problems)
                    + i64::from(tenant::starts_after_parent(unit, &units[parent]))
            }
            None => 0,
        };
    for dependency in &unit.depends_on {
        match index.get(dependency) {
            Some(&i) => wave = wave.max(depth(i, units, index, waves, path, problems) + 1),
            None => problems.push(Problem::new(
                &unit.file,
                unit.line,
                format!(
                    "dependsOn names {dependency}, which the desired state does not define; define it, or remove the dependency"
                ),
            )),
        }
    }
    path.pop();
    waves[at] = Some(wave);
    wave
}
/// The controller documents of `files`, with their roles, in file order.
fn scan(files: &[Pending], default_namespace: &str) -> Vec<(Role, &'static dyn Expander, Found)> {
    let mut out = Vec::new();
    for (file, chain, target) in files {
        let expanders: Vec<&'static dyn Expander> = EXPANDERS
            .iter()
            .copied()
            .filter(|e| file.text.contains(e.marker()))
            .collect();
        if expanders.is_empty() {
            continue;
        }
        let (docs, _) =
            super::kustomize_annotations::parse_source(&file.path, &file.text, file.unit.is_some());
        for doc in docs {
            let text = |k: &str| doc.value.get(k).and_then(Value::as_str).map(str::to_string);
            let (Some(api_version), Some(kind)) = (text("apiVersion"), text("kind")) else {
                continue;
            };
            let Some((role, expander)) = expanders
                .iter()
                .find_map(|e| e.role(&api_version, &kind).map(|r| (r, *e)))
            else {
                continue;
            };
            let meta = |k: &str| {
                doc.value
                    .pointer(&format!("/metadata/{k}"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            let id = UnitId {
                controller: expander.controller(),
                kind,
                namespace: meta("namespace").unwrap_or_else(|| default_namespace.to_string()),
                name: meta("name").unwrap_or_default(),
            };
            out.push((
                role,
                expander,
                Found {
                    id,
                    api_version,
                    file: file.path.clone(),
                    doc,
                    chain: chain.clone(),
                    target: target.clone(),
                },
            ));
        }
    }
    out
}
