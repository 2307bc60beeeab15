//! The engine: plan a desired set against the cluster, then apply it.
//!
//! Plan (read-only): read the ApplySet parent; LIST each (kind, namespace) the desired set or
//! the recorded inventory touches; decide each desired object by the fast path (LIST data
//! alone) or, when it may change, by a server-side dry-run apply; every member no longer
//! desired is a prune. Apply: take the lock, widen the parent, apply stage by stage with
//! bounded concurrency, prune with guards in reverse order, narrow the parent and record
//! the run.

use super::inventory::{self, GroupKind, Inventory};
use super::lock::{self, Clock, Lock};
use crate::cluster::{self, ClusterError, Resource, Resources};
use crate::plan::{fast_path, normalize::normalize, Action, Change, Summary};
use crate::problem::{Problem, Problems};
use crate::render::builtin::{stage_of, Stage};
use crate::render::object::{split_api_version, Object, ObjectKey, Origin};
use crate::report::run::{Outcome, RunReport};
use futures::stream::{self, StreamExt};
use kube::Client;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Annotation controlling pruning of one object: `disabled` keeps it, `allow` lets tend
/// delete a protected kind.
pub const PRUNE_ANNOTATION: &str = "tend.dev/prune";

#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Name of the ApplySet parent Secret (`--applyset`).
    pub applyset: String,
    pub state_namespace: String,
    pub default_namespace: String,
    pub force_conflicts: bool,
    pub dry_run: bool,
    pub concurrency: usize,
    pub max_deletions: Option<usize>,
    pub allow_empty: bool,
    pub lock_timeout: Duration,
    pub wait: bool,
    pub timeout: Duration,
    pub commit: Option<String>,
    pub cluster_name: Option<String>,
    /// Draw progress bars (stderr is a terminal); otherwise plain log lines only.
    pub progress: bool,
}

/// A progress bar on a terminal, nothing otherwise (CI logs get one line per stage instead).
fn progress_bar(opts: &EngineOptions, total: usize, what: &str) -> indicatif::ProgressBar {
    if !opts.progress || total < 2 {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total as u64);
    let style =
        indicatif::ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("the desired state does not match what the cluster serves; nothing was changed:\n{0}")]
    Unresolved(Problems),
    #[error(transparent)]
    Lock(#[from] lock::LockError),
    #[error("{0}")]
    Guard(String),
}

/// A desired object ready for the cluster: labelled as an ApplySet member, with its resource.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub(crate) object: Object,
    /// None when the kind is defined by a CRD of this same run and not served yet.
    pub(crate) resource: Option<Resource>,
}

/// The outcome of planning.
pub struct Planned {
    pub changes: Vec<Change>,
    /// Objects that may change and are applied without a dry run first (real applies only):
    /// their `after` and final action come from the apply response.
    pub pending: BTreeSet<ObjectKey>,
    /// ImmortalContainer pods to (re)create, with the reason.
    pub recreate: BTreeMap<ObjectKey, String>,
    /// Live state of the desired objects that exist.
    pub live_desired: HashMap<ObjectKey, Value>,
    /// Whether the ApplySet parent existed before this run.
    has_parent: bool,
    /// Per-object planning errors (e.g. a dry run rejected), by key.
    pub errors: BTreeMap<ObjectKey, String>,
    /// Prunes kept by a guard: key → reason.
    pub kept: BTreeMap<ObjectKey, String>,
    pub(crate) prepared: Vec<Prepared>,
    /// Live members not desired, by key (for prune).
    prune_targets: BTreeMap<ObjectKey, (Resource, Value)>,
    recorded: Inventory,
    id: String,
}

/// Everything a run needs from the cluster side.
pub struct Session {
    pub client: Client,
    pub resources: Resources,
    pub stats: Arc<cluster::RequestStats>,
}

impl Session {
    pub async fn connect(access: &cluster::Access) -> Result<Session, ClusterError> {
        let stats = Arc::new(cluster::RequestStats::default());
        let client = cluster::connect(access, stats.clone()).await?;
        let resources = cluster::discover(&client).await?;
        Ok(Session {
            client,
            resources,
            stats,
        })
    }

    fn core(&self, kind: &str) -> Result<Resource, ClusterError> {
        self.resources
            .get("", "v1", kind)
            .cloned()
            .ok_or_else(|| ClusterError::Config(format!("the cluster does not serve v1 {kind}")))
    }
}

pub fn key_of(value: &Value) -> ObjectKey {
    ObjectKey::of_value(value)
}

/// Resolve every desired object against discovery. Unknown kinds, scope mismatches and
/// missing CRDs are reported together, before anything is written.
fn prepare(
    session: &Session,
    desired: &[Object],
    opts: &EngineOptions,
    id: &str,
) -> Result<Vec<Prepared>, EngineError> {
    // Kinds whose CRD is part of this desired set: not served yet on a first run.
    let defined_here: BTreeSet<(String, String)> = desired
        .iter()
        .filter(|o| o.kind() == "CustomResourceDefinition")
        .filter_map(|o| {
            let spec = o.value.get("spec")?;
            Some((
                spec.get("group")?.as_str()?.to_string(),
                spec.pointer("/names/kind")?.as_str()?.to_string(),
            ))
        })
        .collect();
    let mut problems = Vec::new();
    let mut prepared = Vec::with_capacity(desired.len());
    for object in desired {
        let mut object = object.clone();
        let (group, version) = split_api_version(object.api_version());
        let (group, version) = (group.to_string(), version.to_string());
        let resource = session
            .resources
            .get(&group, &version, object.kind())
            .cloned();
        match &resource {
            Some(r) => {
                if r.namespaced && object.namespace().is_none() {
                    object.set_namespace(&opts.default_namespace);
                } else if !r.namespaced && object.namespace().is_some() {
                    problems.push(Problem::new(
                        &object.origin.file,
                        object.origin.line,
                        format!("{} is cluster-scoped and cannot have metadata.namespace; remove it", object.kind()),
                    ));
                    continue;
                }
            }
            None if defined_here.contains(&(group.clone(), object.kind().to_string())) => {}
            None if group == crate::GROUP => problems.push(Problem::new(
                &object.origin.file,
                object.origin.line,
                format!(
                    "the cluster does not serve {} {}: tend's CRDs are not installed; install them with `tend crds | kubectl apply -f -`",
                    object.api_version(),
                    object.kind()
                ),
            )),
            None => {
                let hint = match session.resources.any_version(&group, object.kind()) {
                    Some(r) => format!("; the cluster serves it as {}", r.api.api_version),
                    None => "; check apiVersion and kind, or install the CRD that defines it".to_string(),
                };
                problems.push(Problem::new(
                    &object.origin.file,
                    object.origin.line,
                    format!("the cluster does not serve {} {}{hint}", object.api_version(), object.kind()),
                ));
                continue;
            }
        }
        inventory::label_member(&mut object.value, id);
        secret_string_data_to_data(&mut object.value);
        prepared.push(Prepared { object, resource });
    }
    if problems.is_empty() {
        Ok(prepared)
    } else {
        problems.sort();
        Err(EngineError::Unresolved(Problems(problems)))
    }
}

/// Fold a Secret's `stringData` into `data` (base64), as the API server does on write. The
/// server never returns `stringData`, so applying it would make every run look changed.
fn secret_string_data_to_data(value: &mut Value) {
    use base64::Engine;
    if value["apiVersion"] != "v1" || value["kind"] != "Secret" {
        return;
    }
    let Some(map) = value.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(data) = data.as_object_mut() {
        for (key, v) in string_data {
            let text = v.as_str().unwrap_or_default();
            data.insert(
                key,
                Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

/// Advances a progress bar when one request is done, however it ends.
struct Tick<'a>(&'a indicatif::ProgressBar);

impl Drop for Tick<'_> {
    fn drop(&mut self) {
        self.0.inc(1);
        if self.0.length() == Some(self.0.position()) {
            self.0.finish_and_clear();
        }
    }
}

/// What to LIST: (resource, namespace) → whether unfiltered (desired objects live there) or
/// only members (label selector).
struct Scan {
    resource: Resource,
    namespace: Option<String>,
    unfiltered: bool,
}

/// Plan the desired set against the cluster. Read-only: LISTs, one GET of the parent, and
/// dry-run applies for objects that may change.
pub async fn plan(
    session: &Session,
    desired: &[Object],
    opts: &EngineOptions,
    apply_pending: bool,
) -> Result<Planned, EngineError> {
    let secret = session.core("Secret")?;
    let id = inventory::applyset_id(&opts.applyset, &opts.state_namespace, "Secret", "");
    let parent = cluster::get(
        &session.client,
        &secret,
        Some(&opts.state_namespace),
        &opts.applyset,
    )
    .await?;
    let recorded = parent
        .as_ref()
        .map(Inventory::from_parent)
        .unwrap_or_default();
    let prepared = prepare(session, desired, opts, &id)?;

    // Which LISTs: every (kind, namespace) with desired objects, unfiltered; every recorded
    // group-kind in every recorded namespace, by label.
    let mut scans: BTreeMap<(GroupKind, Option<String>), Scan> = BTreeMap::new();
    for p in &prepared {
        let Some(resource) = &p.resource else {
            continue;
        };
        let gk = GroupKind::new(&resource.api.group, &resource.api.kind);
        let ns = p.object.namespace().map(str::to_string);
        scans.insert(
            (gk, ns.clone()),
            Scan {
                resource: resource.clone(),
                namespace: ns,
                unfiltered: true,
            },
        );
    }
    let mut namespaces: BTreeSet<String> = recorded.namespaces.clone();
    namespaces.insert(opts.state_namespace.clone());
    for gk in &recorded.group_kinds {
        let Some(resource) = session.resources.any_version(&gk.group, &gk.kind) else {
            tracing::warn!(
                "the cluster no longer serves {}; its members cannot be pruned",
                gk.encode()
            );
            continue;
        };
        let targets: Vec<Option<String>> = if resource.namespaced {
            namespaces.iter().cloned().map(Some).collect()
        } else {
            vec![None]
        };
        for ns in targets {
            scans.entry((gk.clone(), ns.clone())).or_insert(Scan {
                resource: resource.clone(),
                namespace: ns,
                unfiltered: false,
            });
        }
    }
    let selector = format!("{}={}", inventory::PART_OF_LABEL, id);
    let lists = stream::iter(scans.into_values().map(|scan| {
        let client = session.client.clone();
        let selector = selector.clone();
        async move {
            let sel = if scan.unfiltered {
                None
            } else {
                Some(selector.as_str())
            };
            match cluster::list(&client, &scan.resource, scan.namespace.as_deref(), sel).await {
                Ok(items) => Ok((scan.resource, items)),
                // A recorded namespace that is gone has no members left to prune.
                Err(err) if err.code() == Some(404) && !scan.unfiltered => {
                    Ok((scan.resource, Vec::new()))
                }
                Err(err) if err.code() == Some(404) => Ok((scan.resource, Vec::new())),
                Err(err) => Err(err),
            }
        }
    }))
    .buffer_unordered(opts.concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    let mut live: HashMap<ObjectKey, (Resource, Value)> = HashMap::new();
    for result in lists {
        let (resource, items) = result?;
        for item in items {
            live.insert(key_of(&item), (resource.clone(), item));
        }
    }

    // Classify desired objects; dry-run only those the fast path cannot settle.
    let desired_keys: BTreeSet<ObjectKey> = prepared.iter().map(|p| p.object.key()).collect();
    let mut changes = Vec::with_capacity(prepared.len());
    let mut errors = BTreeMap::new();
    let mut to_dry_run: Vec<(&Prepared, Resource, Option<Value>)> = Vec::new();
    let mut recreate: BTreeMap<ObjectKey, String> = BTreeMap::new();
    for p in &prepared {
        let key = p.object.key();
        let current = live.get(&key).map(|(_, v)| v);
        // ImmortalContainer pods are recreated, never patched (a pod's spec is immutable).
        if super::kinds::is_immortal_pod(&p.object) {
            match super::kinds::immortal_decision(&p.object, current) {
                super::kinds::PodDecision::Keep => {
                    changes.push(change(&p.object, Action::Unchanged, None, None));
                }
                super::kinds::PodDecision::Conflict(message) => {
                    errors.insert(key.clone(), message);
                    let normal = current.map(normalize);
                    changes.push(change(&p.object, Action::Update, normal.clone(), normal));
                }
                super::kinds::PodDecision::Create(reason) => {
                    recreate.insert(key.clone(), reason);
                    let action = if current.is_some() {
                        Action::Update
                    } else {
                        Action::Create
                    };
                    changes.push(change(
                        &p.object,
                        action,
                        current.map(normalize),
                        Some(normalize(&p.object.value)),
                    ));
                }
            }
            continue;
        }
        match (&p.resource, current) {
            (None, _) => changes.push(change(
                &p.object,
                Action::Create,
                None,
                Some(normalize(&p.object.value)),
            )),
            (Some(_), Some(current))
                if fast_path::is_unchanged(&p.object.value, current, crate::FIELD_MANAGER) =>
            {
                // Unchanged objects need no diff: keep no copies (memory at 10k objects).
                changes.push(change(&p.object, Action::Unchanged, None, None));
            }
            (Some(resource), current) => to_dry_run.push((p, resource.clone(), current.cloned())),
        }
    }
    // A real apply writes each of these next anyway, and reports the diff against what the
    // server returns then: a dry run first would double its requests and prevent nothing
    // (independent objects are applied even when one fails). `diff` and `--dry-run` need it.
    let mut pending = BTreeSet::new();
    if apply_pending {
        for (p, _, current) in to_dry_run.drain(..) {
            let action = if current.is_some() {
                Action::Update
            } else {
                Action::Create
            };
            pending.insert(p.object.key());
            changes.push(change(
                &p.object,
                action,
                current.as_ref().map(normalize),
                None,
            ));
        }
    }
    let force = opts.force_conflicts;
    let bar = progress_bar(opts, to_dry_run.len(), "dry run");
    let dry_runs = stream::iter(to_dry_run.into_iter().map(|(p, resource, current)| {
        let client = session.client.clone();
        let bar = bar.clone();
        async move {
            let _tick = Tick(&bar);
            let result = cluster::apply(
                &client,
                &resource,
                &p.object.value,
                crate::FIELD_MANAGER,
                force,
                true,
            )
            .await;
            (p, current, result)
        }
    }))
    .buffer_unordered(opts.concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    let new_namespaces: BTreeSet<&str> = prepared
        .iter()
        .filter(|p| {
            p.object.group().is_empty()
                && p.object.kind() == "Namespace"
                && !live.contains_key(&p.object.key())
        })
        .map(|p| p.object.name())
        .collect();
    for (p, current, result) in dry_runs {
        let before = current.as_ref().map(normalize);
        match result {
            Ok(after) => {
                let after = normalize(&after);
                let action = match &before {
                    None => Action::Create,
                    Some(b) if *b == after => Action::Unchanged,
                    Some(_) => Action::Update,
                };
                changes.push(change(&p.object, action, before, Some(after)));
            }
            // A namespace this run creates does not exist yet, so the server cannot dry-run
            // objects inside it: show the desired object as the creation.
            Err(err)
                if err.code() == Some(404)
                    && before.is_none()
                    && p.object
                        .namespace()
                        .is_some_and(|ns| new_namespaces.contains(ns)) =>
            {
                changes.push(change(
                    &p.object,
                    Action::Create,
                    None,
                    Some(normalize(&p.object.value)),
                ));
            }
            Err(err) => {
                errors.insert(p.object.key(), err.to_string());
                let action = if before.is_some() {
                    Action::Update
                } else {
                    Action::Create
                };
                // No server view of the result: show no diff for an update, the object for a create.
                let after = match &before {
                    Some(b) => b.clone(),
                    None => normalize(&p.object.value),
                };
                changes.push(change(&p.object, action, before, Some(after)));
            }
        }
    }

    // Members no longer desired are prunes, unless a guard keeps them.
    let mut prune_targets = BTreeMap::new();
    let mut kept = BTreeMap::new();
    for (key, (resource, value)) in &live {
        if desired_keys.contains(key) || !inventory::is_member(value, &id) {
            continue;
        }
        if let Some(reason) = prune_guard(key, value) {
            kept.insert(key.clone(), reason);
            continue;
        }
        prune_targets.insert(key.clone(), (resource.clone(), value.clone()));
        changes.push(Change {
            key: key.clone(),
            api_version: value["apiVersion"].as_str().unwrap_or("").to_string(),
            action: Action::Prune,
            origin: None,
            before: Some(normalize(value)),
            after: None,
        });
    }
    changes.sort_by_cached_key(|c| {
        (
            c.action == Action::Prune,
            stage_of(&c.key.group, &c.key.kind),
            c.key.clone(),
        )
    });
    // Kept for tend's kinds only: their own status, their mirrors' StatefulSets, their pods.
    let live_desired: HashMap<ObjectKey, Value> = live
        .iter()
        .filter(|(k, _)| desired_keys.contains(*k))
        .filter(|(k, _)| {
            k.group == crate::GROUP
                || (k.group == "apps" && k.kind == "StatefulSet")
                || (k.group.is_empty() && k.kind == "Pod")
        })
        .map(|(k, (_, v))| (k.clone(), v.clone()))
        .collect();
    Ok(Planned {
        changes,
        pending,
        recreate,
        live_desired,
        has_parent: parent.is_some(),
        errors,
        kept,
        prepared,
        prune_targets,
        recorded,
        id,
    })
}

fn change(object: &Object, action: Action, before: Option<Value>, after: Option<Value>) -> Change {
    Change {
        key: object.key(),
        api_version: object.api_version().to_string(),
        action,
        origin: Some(object.origin.clone()),
        before,
        after,
    }
}

/// Why a member must not be pruned, if it must not.
fn prune_guard(key: &ObjectKey, live: &Value) -> Option<String> {
    let annotation = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(PRUNE_ANNOTATION))
        .and_then(Value::as_str);
    if annotation == Some("disabled") {
        return Some(format!("{PRUNE_ANNOTATION}: disabled"));
    }
    let protected = matches!(
        (key.group.as_str(), key.kind.as_str()),
        (
            "",
            "Namespace" | "PersistentVolumeClaim" | "PersistentVolume"
        ) | ("apiextensions.k8s.io", "CustomResourceDefinition")
    );
    if protected && annotation != Some("allow") {
        return Some(format!(
            "{} is protected from pruning; annotate it {PRUNE_ANNOTATION}: allow to let tend delete it",
            key.kind
        ));
    }
    None
}

/// Run-wide prune guards: refuse all prunes when the desired set is empty (unless allowed)
/// or when there are more than `--max-deletions`.
fn check_prune_guards(
    planned: &Planned,
    desired_count: usize,
    opts: &EngineOptions,
) -> Result<(), String> {
    let prunes = planned.prune_targets.len();
    if prunes == 0 {
        return Ok(());
    }
    if desired_count == 0 && !opts.allow_empty {
        return Err(format!(
            "refusing to prune {prunes} object{} because the desired set is empty (a wrong --path or --ref?); pass --allow-empty to prune everything",
            if prunes == 1 { "" } else { "s" }
        ));
    }
    if let Some(max) = opts.max_deletions {
        if prunes > max {
            return Err(format!(
                "refusing to prune {prunes} objects: more than --max-deletions {max}; nothing was pruned"
            ));
        }
    }
    Ok(())
}

/// `tend diff`: plan and report, writing nothing.
pub async fn diff(
    session: &Session,
    desired: &[Object],
    opts: &EngineOptions,
    kinds: &super::kinds::KindsContext,
) -> Result<RunReport, EngineError> {
    let started = Instant::now();
    let planned = plan(session, desired, opts, false).await?;
    let mut report = base_report("diff", opts, &planned);
    super::kinds::add_reload_changes(&mut report, kinds);
    if let Err(message) = check_prune_guards(&planned, desired.len(), opts) {
        report.errors.push(message);
    }
    report.duration = started.elapsed();
    Ok(report)
}

fn base_report(command: &str, opts: &EngineOptions, planned: &Planned) -> RunReport {
    let mut report = RunReport {
        command: command.into(),
        commit: opts.commit.clone(),
        cluster: opts.cluster_name.clone(),
        dry_run: opts.dry_run,
        changes: planned.changes.clone(),
        ..RunReport::default()
    };
    for (key, error) in &planned.errors {
        tracing::error!("{error}");
        report.outcomes.insert(
            key.clone(),
            Outcome {
                error: Some(error.clone()),
                ..Outcome::default()
            },
        );
    }
    for (key, reason) in &planned.kept {
        tracing::warn!("not pruning {key}: {reason}");
    }
    report
}

/// `tend apply`: lock, plan, apply, prune, record.
pub async fn apply(
    session: &Session,
    desired: &[Object],
    opts: &EngineOptions,
    kinds: &super::kinds::KindsContext,
    clock: Arc<dyn Clock>,
) -> Result<RunReport, EngineError> {
    let started = Instant::now();
    // Validate against discovery before the first write (the lock and state namespace are writes).
    let id = inventory::applyset_id(&opts.applyset, &opts.state_namespace, "Secret", "");
    prepare(session, desired, opts, &id)?;
    let lock = if opts.dry_run {
        None
    } else {
        ensure_namespace(session, &opts.state_namespace).await?;
        let lease = session
            .resources
            .get("coordination.k8s.io", "v1", "Lease")
            .cloned()
            .ok_or_else(|| {
                ClusterError::Config(
                    "the cluster does not serve coordination.k8s.io/v1 Lease".into(),
                )
            })?;
        let name = if opts.applyset == "tend" {
            "tend-lock".to_string()
        } else {
            format!("tend-lock-{}", opts.applyset)
        };
        Some(
            Lock::acquire(
                &session.client,
                &lease,
                &opts.state_namespace,
                &name,
                &lock::holder_identity(),
                opts.lock_timeout,
                clock.clone(),
            )
            .await?,
        )
    };
    let result = apply_locked(session, desired, opts, kinds, clock.as_ref()).await;
    if let Some(lock) = lock {
        if let Err(err) = lock.release().await {
            tracing::warn!("cannot release the lock: {err}");
        }
    }
    let mut report = result?;
    report.duration = started.elapsed();
    Ok(report)
}

async fn ensure_namespace(session: &Session, namespace: &str) -> Result<(), ClusterError> {
    let ns = session.core("Namespace")?;
    if cluster::get(&session.client, &ns, None, namespace)
        .await?
        .is_none()
    {
        let object = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        cluster::apply(
            &session.client,
            &ns,
            &object,
            crate::FIELD_MANAGER,
            true,
            false,
        )
        .await?;
    }
    Ok(())
}

async fn apply_locked(
    session: &Session,
    desired: &[Object],
    opts: &EngineOptions,
    kinds: &super::kinds::KindsContext,
    clock: &dyn Clock,
) -> Result<RunReport, EngineError> {
    let planned = plan(session, desired, opts, !opts.dry_run).await?;
    let mut report = base_report("apply", opts, &planned);
    super::kinds::add_reload_changes(&mut report, kinds);
    let secret = session.core("Secret")?;

    // Widen the parent first: a crash after this point still leaves every member findable.
    let desired_inventory = inventory_of(planned.prepared.iter().map(|p| &p.object.value), opts);
    let widened = planned.recorded.union(&desired_inventory);
    let mut recorded = planned.recorded.clone();
    recorded.namespaces.insert(opts.state_namespace.clone());
    // Nothing new to widen by on a steady-state run: skip the write.
    let unchanged_parent = planned.has_parent && widened == recorded;
    if !opts.dry_run && !unchanged_parent {
        let parent = inventory::parent_object(
            &opts.applyset,
            &opts.state_namespace,
            &planned.id,
            &widened,
            &[],
        );
        cluster::apply(
            &session.client,
            &secret,
            &parent,
            crate::FIELD_MANAGER,
            true,
            false,
        )
        .await?;
    }

    // Apply stage by stage.
    let by_key: HashMap<ObjectKey, &Prepared> = planned
        .prepared
        .iter()
        .map(|p| (p.object.key(), p))
        .collect();
    let mut stages: BTreeMap<Stage, Vec<&Prepared>> = BTreeMap::new();
    for c in &planned.changes {
        // A dry run was already done for every object that may change, while planning.
        if opts.dry_run {
            break;
        }
        if matches!(c.action, Action::Create | Action::Update)
            && !planned.errors.contains_key(&c.key)
        {
            if let Some(p) = by_key.get(&c.key) {
                stages
                    .entry(stage_of(&c.key.group, &c.key.kind))
                    .or_default()
                    .push(p);
            }
        }
    }
    let mut resources = session.resources.clone();
    let mut applied_results: HashMap<ObjectKey, Value> = HashMap::new();
    let mut applied_tend: HashMap<ObjectKey, Value> = HashMap::new();
    // Immortal pods that exist and must be replaced (deleted, then created).
    let recreate_keys: BTreeSet<ObjectKey> = planned
        .recreate
        .keys()
        .filter(|k| planned.live_desired.contains_key(*k))
        .cloned()
        .collect();
    let recreate_keys = &recreate_keys;
    let mut applied_workloads = Vec::new();
    for (stage, items) in stages {
        let count = items.len();
        let bar = progress_bar(opts, count, &format!("{stage:?}").to_lowercase());
        let results = stream::iter(items.into_iter().map(|p| {
            let client = session.client.clone();
            let bar = bar.clone();
            let resource = p.resource.clone().or_else(|| {
                let (g, v) = split_api_version(p.object.api_version());
                resources.get(g, v, p.object.kind()).cloned()
            });
            async move {
                let _tick = Tick(&bar);
                let started = Instant::now();
                let replace = recreate_keys.contains(&p.object.key());
                let result = match resource {
                    Some(r) if replace => {
                        super::kinds::recreate_pod(&client, &r, &p.object.value, opts.timeout)
                            .await
                            .map_err(|e| e.to_string())
                    }
                    Some(r) => cluster::apply(
                        &client,
                        &r,
                        &p.object.value,
                        crate::FIELD_MANAGER,
                        opts.force_conflicts,
                        opts.dry_run,
                    )
                    .await
                    .map_err(|e| e.to_string()),
                    None => Err(format!(
                        "the cluster does not serve {} {} (its CRD did not become established)",
                        p.object.api_version(),
                        p.object.kind()
                    )),
                };
                (p, started.elapsed(), result)
            }
        }))
        .buffer_unordered(opts.concurrency.max(1))
        .collect::<Vec<_>>()
        .await;
        let mut failed = 0;
        let mut crds = Vec::new();
        for (p, duration, result) in results {
            let key = p.object.key();
            match result {
                Ok(applied) => {
                    tracing::debug!("applied {key}");
                    if planned.pending.contains(&key) {
                        applied_results.insert(key.clone(), normalize(&applied));
                    }
                    if key.group == crate::GROUP {
                        applied_tend.insert(key.clone(), applied.clone());
                    }
                    if key.kind == "CustomResourceDefinition" {
                        crds.push(key.name.clone());
                    }
                    if matches!(
                        key.kind.as_str(),
                        "Deployment" | "StatefulSet" | "DaemonSet"
                    ) && key.group == "apps"
                    {
                        applied_workloads.push((p.resource.clone(), applied));
                    }
                    report.outcomes.insert(
                        key,
                        Outcome {
                            duration,
                            ..Outcome::default()
                        },
                    );
                }
                Err(error) => {
                    failed += 1;
                    tracing::error!("{error}");
                    report.outcomes.insert(
                        key,
                        Outcome {
                            duration,
                            error: Some(error),
                            ..Outcome::default()
                        },
                    );
                }
            }
        }
        tracing::info!(
            "{}applied {} object{} in stage {:?}{}",
            if opts.dry_run { "dry-run: " } else { "" },
            count - failed,
            if count - failed == 1 { "" } else { "s" },
            stage,
            if failed > 0 {
                format!(", {failed} failed")
            } else {
                String::new()
            }
        );
        if stage == Stage::Crds && !crds.is_empty() && !opts.dry_run {
            wait_established(session, &crds, opts.timeout).await;
            resources = cluster::discover(&session.client).await?;
        }
    }

    // tend's kinds: ownerReferences for objects whose owner was created just now, status of
    // every tend object, config-hash reloads of opted-in live workloads.
    if !opts.dry_run {
        let errors =
            super::kinds::after_apply(session, &planned, &mut report, kinds, &applied_tend, clock)
                .await;
        report.errors.extend(errors);
    }

    // Objects applied without a dry run: the diff is live vs what the server returned.
    for c in report.changes.iter_mut() {
        if !planned.pending.contains(&c.key) {
            continue;
        }
        match applied_results.remove(&c.key) {
            Some(after) => {
                if c.before.as_ref() == Some(&after) {
                    c.action = Action::Unchanged;
                }
                c.after = Some(after);
            }
            None => {
                c.after = c
                    .before
                    .clone()
                    .or_else(|| by_key.get(&c.key).map(|p| normalize(&p.object.value)));
            }
        }
    }

    // Prune, in reverse stage order, after everything else.
    let mut still_members: Vec<Value> = Vec::new();
    match check_prune_guards(&planned, desired.len(), opts) {
        Err(message) => {
            tracing::error!("{message}");
            report.errors.push(message);
            still_members.extend(planned.prune_targets.values().map(|(_, v)| v.clone()));
        }
        Ok(()) => {
            let mut targets: Vec<_> = planned.prune_targets.iter().collect();
            targets.sort_by_key(|(key, _)| std::cmp::Reverse(stage_of(&key.group, &key.kind)));
            let mut by_stage: BTreeMap<std::cmp::Reverse<Stage>, Vec<_>> = BTreeMap::new();
            for (key, target) in targets {
                by_stage
                    .entry(std::cmp::Reverse(stage_of(&key.group, &key.kind)))
                    .or_default()
                    .push((key, target));
            }
            for (_, items) in by_stage {
                let results = stream::iter(items.into_iter().map(|(key, (resource, value))| {
                    let client = session.client.clone();
                    async move {
                        let started = Instant::now();
                        let result = cluster::delete(
                            &client,
                            resource,
                            key.namespace.as_deref(),
                            &key.name,
                            opts.dry_run,
                        )
                        .await;
                        (key, value, started.elapsed(), result)
                    }
                }))
                .buffer_unordered(opts.concurrency.max(1))
                .collect::<Vec<_>>()
                .await;
                for (key, value, duration, result) in results {
                    match result {
                        Ok(()) => {
                            tracing::debug!("pruned {key}");
                            report.outcomes.insert(
                                key.clone(),
                                Outcome {
                                    duration,
                                    ..Outcome::default()
                                },
                            );
                        }
                        Err(err) => {
                            tracing::error!("{err}");
                            still_members.push(value.clone());
                            report.outcomes.insert(
                                key.clone(),
                                Outcome {
                                    duration,
                                    error: Some(err.to_string()),
                                    ..Outcome::default()
                                },
                            );
                        }
                    }
                }
            }
        }
    }
    for (key, reason) in &planned.kept {
        report.outcomes.insert(
            key.clone(),
            Outcome {
                skipped: Some(reason.clone()),
                ..Outcome::default()
            },
        );
    }

    // Narrow the parent to what is desired plus members that still exist, and record the run.
    if !opts.dry_run {
        let kept_values: Vec<Value> = planned
            .kept
            .keys()
            .map(|k| serde_json::json!({"apiVersion": if k.group.is_empty() { "v1".to_string() } else { format!("{}/v1", k.group) }, "kind": k.kind, "metadata": {"namespace": k.namespace, "name": k.name}}))
            .collect();
        let narrowed = inventory_of(
            planned
                .prepared
                .iter()
                .map(|p| &p.object.value)
                .chain(still_members.iter())
                .chain(kept_values.iter()),
            opts,
        );
        let summary = report.summary();
        let record = [
            (
                inventory::LAST_COMMIT_ANNOTATION,
                opts.commit.clone().unwrap_or_default(),
            ),
            (
                inventory::LAST_RUN_ANNOTATION,
                clock.now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            ),
            (
                inventory::LAST_SUMMARY_ANNOTATION,
                summary_record(&summary, report.failed()),
            ),
        ];
        let parent = inventory::parent_object(
            &opts.applyset,
            &opts.state_namespace,
            &planned.id,
            &narrowed,
            &record,
        );
        if let Err(err) = cluster::apply(
            &session.client,
            &secret,
            &parent,
            crate::FIELD_MANAGER,
            true,
            false,
        )
        .await
        {
            let message = format!("cannot record the run on the ApplySet parent: {err}");
            tracing::error!("{message}");
            report.errors.push(message);
        }
    }

    if opts.wait && !opts.dry_run {
        for error in wait_rollouts(session, &applied_workloads, opts.timeout).await {
            report.errors.push(error);
        }
    }
    Ok(report)
}

fn summary_record(summary: &Summary, failed: usize) -> String {
    format!(
        "{} created, {} updated, {} pruned, {} unchanged, {} failed",
        summary.create, summary.update, summary.prune, summary.unchanged, failed
    )
}

/// The inventory (group-kinds, namespaces) of a set of objects.
fn inventory_of<'a>(objects: impl Iterator<Item = &'a Value>, opts: &EngineOptions) -> Inventory {
    let mut inv = Inventory::default();
    inv.namespaces.insert(opts.state_namespace.clone());
    for value in objects {
        let key = key_of(value);
        inv.group_kinds
            .insert(GroupKind::new(&key.group, &key.kind));
        if let Some(ns) = key.namespace {
            inv.namespaces.insert(ns);
        }
    }
    inv
}

/// Wait until the named CRDs report Established (bounded by `timeout`).
async fn wait_established(session: &Session, names: &[String], timeout: Duration) {
    let Some(resource) = session
        .resources
        .get("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
        .cloned()
    else {
        return;
    };
    let deadline = Instant::now() + timeout;
    for name in names {
        loop {
            let established = match cluster::get(&session.client, &resource, None, name).await {
                Ok(Some(crd)) => crd
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Established" && c["status"] == "True")
                    }),
                _ => false,
            };
            if established || Instant::now() >= deadline {
                if !established {
                    tracing::warn!("CRD {name} did not become Established within {timeout:?}");
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// `--wait`: poll applied Deployments/StatefulSets/DaemonSets until their rollout is done.
async fn wait_rollouts(
    session: &Session,
    workloads: &[(Option<Resource>, Value)],
    timeout: Duration,
) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    let mut errors = Vec::new();
    for (resource, applied) in workloads {
        let Some(resource) = resource else { continue };
        let key = key_of(applied);
        loop {
            let live = cluster::get(
                &session.client,
                resource,
                key.namespace.as_deref(),
                &key.name,
            )
            .await;
            let done = matches!(&live, Ok(Some(obj)) if rollout_done(obj));
            if done {
                break;
            }
            if Instant::now() >= deadline {
                let message =
                    format!("{key} did not finish rolling out within {timeout:?} (--timeout)");
                tracing::error!("{message}");
                errors.push(message);
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    errors
}

/// Whether a workload's status shows its current generation fully rolled out.
pub fn rollout_done(obj: &Value) -> bool {
    let generation = obj
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status = &obj["status"];
    let observed = status["observedGeneration"].as_i64().unwrap_or(0);
    if observed < generation {
        return false;
    }
    let n = |v: &Value| v.as_i64().unwrap_or(0);
    match obj["kind"].as_str() {
        Some("DaemonSet") => {
            let want = n(&status["desiredNumberScheduled"]);
            n(&status["updatedNumberScheduled"]) >= want && n(&status["numberAvailable"]) >= want
        }
        _ => {
            let want = obj
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            n(&status["updatedReplicas"]) >= want
                && n(&status["availableReplicas"]).max(n(&status["readyReplicas"])) >= want
        }
    }
}

/// The origin of a change, for reports.
pub fn origin_text(origin: &Option<Origin>) -> Option<String> {
    origin
        .as_ref()
        .map(|o| format!("{}:{}", o.file.display(), o.line))
}
