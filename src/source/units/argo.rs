//! Argo CD plugged into the units loop: an `ApplicationSet` expands into the Applications
//! its generators make (`argo_appset`), an `Application` into what Argo CD would sync to the
//! cluster tend runs against: each source's manifests (`argo_source`), the Namespace
//! `CreateNamespace=true` creates, the sync options and `ignoreDifferences` as tend's
//! per-object policies (`argo_app`). Applications in what an Application syncs expand in
//! turn (app of apps); the loop refuses cycles.

use super::argo_app::{self, Target};
use super::argo_appset::{self, ArgoCluster, GenerateContext, RepoTree};
use super::argo_source::{self, unit_line, AppSources};
use super::{Context, Controller, Expander, Found, LiveRule, Outcome, Produced, Role, Sources};
use crate::problem::Problem;
use crate::source::run_cluster::RunCluster;
use crate::source::SourceFile;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub struct ArgoCd;

pub const GROUP: &str = "argoproj.io";
const API_VERSION: &str = "argoproj.io/v1alpha1";

/// The fields of an ApplicationSet's `spec` (argoproj.io/v1alpha1).
const APPSET_FIELDS: &[&str] = &[
    "generators",
    "template",
    "templatePatch",
    "syncPolicy",
    "goTemplate",
    "goTemplateOptions",
    "strategy",
    "preservedFields",
    "ignoreApplicationDifferences",
    "applyNestedSelectors",
];

impl Expander for ArgoCd {
    fn controller(&self) -> Controller {
        Controller::ArgoCd
    }

    fn marker(&self) -> &'static str {
        GROUP
    }

    fn role(&self, api_version: &str, kind: &str) -> Option<Role> {
        if api_version != API_VERSION {
            return None;
        }
        match kind {
            "Application" | "ApplicationSet" => Some(Role::Unit),
            "AppProject" => Some(Role::Inert),
            _ => None,
        }
    }

    fn expand(&self, unit: &Found, sources: &Sources, ctx: &Context) -> Produced {
        let mut produced = match unit.id.kind.as_str() {
            "ApplicationSet" => application_set(unit, sources, ctx),
            _ => application(unit, sources, ctx),
        };
        produced.live = Some(live_rule(unit));
        produced
    }
}

/// A live Application is active when Argo CD syncs it on its own (automated sync); a live
/// ApplicationSet always is (its controller writes Applications).
fn live_rule(unit: &Found) -> LiveRule {
    if unit.id.kind == "ApplicationSet" {
        return LiveRule {
            group: GROUP,
            active: |_| true,
            way_out: format!(
                "delete the live ApplicationSet {} (with `kubectl delete applicationset -n {} {} --cascade=orphan`, which leaves its Applications' objects) or stop Argo CD's applicationset controller",
                unit.id, unit.id.namespace, unit.id.name
            ),
        };
    }
    LiveRule {
        group: GROUP,
        active: |live| {
            live.pointer("/spec/syncPolicy/automated").is_some_and(|a| {
                !a.is_null() && a.get("enabled").and_then(Value::as_bool) != Some(false)
            })
        },
        way_out: format!(
            "disable automated sync of Application {} (`argocd app set {} --sync-policy none`)",
            unit.id, unit.id.name
        ),
    }
}

fn application_set(unit: &Found, sources: &Sources, ctx: &Context) -> Produced {
    let problems = super::unknown_fields(unit, APPSET_FIELDS, "v1alpha1");
    if !problems.is_empty() {
        let mut produced = Produced::outcome(Outcome::NotExpanded("invalid spec".into()));
        produced.problems = problems;
        return produced;
    }
    let clusters = clusters(sources, ctx.run_clusters);
    let trees = Trees {
        ctx,
        read: Default::default(),
    };
    let generate = GenerateContext {
        clusters: &clusters,
        repo: &trees,
    };
    let mut doc = unit.doc.value.clone();
    if let Some(meta) = doc.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("namespace".into(), Value::String(unit.id.namespace.clone()));
    }
    let apps = match argo_appset::generate(&doc, &generate) {
        Ok(apps) => apps,
        Err(e) => return Produced::failed(unit.problem(&["spec"], format!("{}: {e}", unit.id))),
    };
    let mut produced = Produced::outcome(Outcome::Expanded);
    // The git files generator's files are its parameters, not manifests to apply.
    produced.claims = trees.read.take();
    if apps.is_empty() {
        return produced;
    }
    let text = apps
        .iter()
        .map(crate::yaml::to_yaml)
        .collect::<Vec<_>>()
        .join("---\n");
    produced.files.push(SourceFile {
        path: PathBuf::from(unit_line(unit)),
        text,
        unit: None,
    });
    produced
}

/// The lowest wave (`tend.dev/wave`, `argocd.argoproj.io/sync-wave`) of the files'
/// documents.
fn first_wave(files: &[SourceFile]) -> Option<i64> {
    files
        .iter()
        .filter(|f| f.text.contains("wave"))
        .flat_map(|f| crate::yaml::parse_file(&f.path, &f.text).0)
        .filter_map(|doc| {
            let annotations = doc.value.pointer("/metadata/annotations")?;
            let wave = annotations
                .get("tend.dev/wave")
                .or_else(|| annotations.get("argocd.argoproj.io/sync-wave"))?;
            wave.as_str()?.trim().parse::<i64>().ok()
        })
        .min()
}

/// The clusters Applications sync to and the clusters generator selects from: Argo CD's
/// cluster Secrets of the desired state, then the clusters of the run (a Secret with the
/// same name or server is that cluster, its labels joined by the Fleet's).
fn clusters(sources: &Sources, run_clusters: &[RunCluster]) -> Vec<ArgoCluster> {
    let mut out = cluster_secrets(sources);
    for member in run_clusters {
        let same = |c: &&mut ArgoCluster| {
            c.name == member.name
                || member.server.as_deref().is_some_and(|server| {
                    !c.server.is_empty()
                        && c.server.trim_end_matches('/') == server.trim_end_matches('/')
                })
        };
        match out.iter_mut().find(same) {
            Some(cluster) => {
                cluster.run_name = Some(member.name.clone());
                cluster.labels.extend(member.labels.clone());
            }
            None => out.push(ArgoCluster {
                name: member.name.clone(),
                server: member.server.clone().unwrap_or_default(),
                labels: member.labels.clone(),
                run_name: Some(member.name.clone()),
                ..ArgoCluster::default()
            }),
        }
    }
    out
}

/// Argo CD's cluster Secrets of the desired state (label
/// `argocd.argoproj.io/secret-type: cluster`): their `name`, `server` and `project` and the
/// Secret's labels and annotations.
fn cluster_secrets(sources: &Sources) -> Vec<ArgoCluster> {
    let mut secrets = Vec::new();
    for file in sources
        .files
        .iter()
        .filter(|f| f.text.contains("argocd.argoproj.io/secret-type"))
    {
        let (docs, _) = crate::source::kustomize_annotations::parse_source(
            &file.path,
            &file.text,
            file.unit.is_some(),
        );
        secrets.extend(docs.into_iter().map(|d| d.value).filter(|v| {
            v.get("kind").and_then(Value::as_str) == Some("Secret")
                && v.pointer("/metadata/labels/argocd.argoproj.io~1secret-type")
                    .and_then(Value::as_str)
                    == Some("cluster")
        }));
    }
    secrets
        .into_iter()
        .map(|v| {
            let data = super::model::config_entries(&v);
            let strings = |p: &str| -> BTreeMap<String, String> {
                v.pointer(p)
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            ArgoCluster {
                name: data.get("name").cloned().unwrap_or_default(),
                server: data.get("server").cloned().unwrap_or_default(),
                project: data.get("project").cloned().unwrap_or_default(),
                labels: strings("/metadata/labels"),
                annotations: strings("/metadata/annotations"),
                run_name: None,
            }
        })
        .collect()
}

/// The git generator's view of repositories: the checkout under test, or a fetched one.
struct Trees<'a, 'c> {
    ctx: &'a Context<'c>,
    /// Files of the checkout under test the files generator read (relative to its root).
    read: std::cell::RefCell<Vec<PathBuf>>,
}

impl RepoTree for Trees<'_, '_> {
    fn directories(&self, repo_url: &str, revision: &str) -> Result<Vec<String>, String> {
        let tree = argo_source::git_tree(self.ctx, repo_url, revision)?;
        let mut out = Vec::new();
        argo_source::directories(&tree.root, &tree.root, &mut out)?;
        Ok(out)
    }

    fn files(
        &self,
        repo_url: &str,
        revision: &str,
        pattern: &str,
    ) -> Result<Vec<(String, String)>, String> {
        let tree = argo_source::git_tree(self.ctx, repo_url, revision)?;
        let files = argo_source::matching_files(&tree.root, pattern)?;
        if self.ctx.is_checkout_url(repo_url) {
            let mut read = self.read.borrow_mut();
            read.extend(files.iter().map(|(path, _)| PathBuf::from(path)));
        }
        Ok(files)
    }
}

fn application(unit: &Found, sources: &Sources, ctx: &Context) -> Produced {
    let problems = super::unknown_fields(unit, argo_app::SPEC_FIELDS, "v1alpha1");
    if !problems.is_empty() {
        let mut produced = Produced::outcome(Outcome::NotExpanded("invalid spec".into()));
        produced.problems = problems;
        return produced;
    }
    let spec = unit.spec();
    let clusters = clusters(sources, ctx.run_clusters);
    match argo_app::target(spec, &clusters, ctx.cluster) {
        Err(e) => return Produced::failed(unit.problem(&["spec", "destination"], e)),
        Ok(Target::Other(cluster)) => {
            let mut produced = Produced::outcome(Outcome::NotExpanded(format!(
                "it syncs to cluster {cluster}, not the one tend runs against (Argo CD's in-cluster one, or the one --cluster names) nor one of the run's; add it to the run (--context, --fleet), or run tend against it with --cluster naming it"
            )));
            // Its directories are still its own, not this cluster's.
            produced.claims = super::argo_nested::checkout_paths(spec, ctx);
            return produced;
        }
        Ok(Target::OfRun(cluster)) => {
            let mut produced = Produced::outcome(Outcome::NotExpanded(format!(
                "it syncs to cluster {cluster} of the run (expanded in that cluster's own section)"
            )));
            produced.claims = super::argo_nested::checkout_paths(spec, ctx);
            return produced;
        }
        Ok(Target::ThisCluster) => {}
    }
    let rules = match argo_app::ignore_rules(spec) {
        Ok(rules) => rules,
        Err(e) => return Produced::failed(unit.problem(&["spec", "ignoreDifferences"], e)),
    };
    let namespace = spec
        .pointer("/destination/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty() && *n != "*")
        .map(str::to_string);
    let app = AppSources {
        unit,
        ctx,
        namespace: namespace.clone(),
        sync: argo_app::app_sync_options(spec),
        rules,
    };
    let mut produced = match app.expand() {
        Ok(produced) => produced,
        Err(problem) => return Produced::failed(problem),
    };
    if let (true, Some(ns)) = (app.sync.create_namespace, &namespace) {
        let mut namespace_doc = argo_app::managed_namespace(spec, ns);
        // Argo CD never deletes a Namespace it created.
        argo_app::apply_policies(
            &mut namespace_doc,
            &argo_app::SyncOptions {
                keep: true,
                ..Default::default()
            },
            &[],
        );
        // Argo CD creates it before the sync: before the first wave of what it syncs.
        if let Some(first) = first_wave(&produced.files).filter(|w| *w < 0) {
            if let Some(annotations) = namespace_doc
                .pointer_mut("/metadata/annotations")
                .and_then(Value::as_object_mut)
            {
                annotations.insert("tend.dev/wave".into(), Value::String(first.to_string()));
            }
        }
        produced.files.push(SourceFile {
            path: PathBuf::from(format!("{} (CreateNamespace=true)", unit_line(unit))),
            text: crate::yaml::to_yaml(&namespace_doc),
            unit: None,
        });
    }
    produced.namespace = namespace;
    match own_sync_wave(unit) {
        Ok(wave) => produced.sync_wave = wave,
        Err(problem) => produced.problems.push(problem),
    }
    produced
}

/// The Application's own `argocd.argoproj.io/sync-wave`: where Argo CD syncs it among what
/// its parent syncs. Its resources sync once it is, so they move by that many unit steps.
fn own_sync_wave(unit: &Found) -> Result<i64, Problem> {
    let key = "argocd.argoproj.io/sync-wave";
    let Some(text) = unit
        .doc
        .value
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
    else {
        return Ok(0);
    };
    text.as_str()
        .and_then(|t| t.trim().parse::<i64>().ok())
        .filter(|w| w.abs() <= MAX_SYNC_WAVE)
        .ok_or_else(|| {
            unit.problem(
                &["metadata", "annotations", key],
                format!(
                    "{key}: {text} is not a whole number between -{MAX_SYNC_WAVE} and {MAX_SYNC_WAVE}; write the Application's wave as a quoted integer, e.g. \"-1\""
                ),
            )
        })
}

/// Largest sync wave of an Application: its resources move by that many steps of
/// `render::waves::UNIT_WAVE_STEP`, which must not overflow.
const MAX_SYNC_WAVE: i64 = 1_000_000;
