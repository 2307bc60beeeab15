//! The planner: given the prepared desired objects, what the LISTs returned and what the
//! server's dry runs answered, decide per object what a run does. Pure: the engine does the
//! requests and hands the answers in.
//!
//! A run plans in two steps: [`triage`] settles every object it can from the LIST data alone
//! (the fast path) and names those that need the server; after the dry runs, [`plan`] turns
//! everything into a [`Plan`], including prunes and the guards that keep some of them.

use super::{fast_path, normalize::normalize, Action, Change};
use crate::kinds::immortal_container::pod::{
    decision as immortal_decision, is_immortal_pod, PodDecision,
};
use crate::object::{Object, ObjectKey};
use crate::render::builtin::stage_of;
use crate::render::policy;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Annotation controlling pruning of one object: `disabled` keeps it, `allow` lets tend
/// delete a protected kind.
pub const PRUNE_ANNOTATION: &str = "tend.dev/prune";

/// One desired object, ready for the cluster.
#[derive(Debug, Clone, Copy)]
pub struct Desired<'a> {
    pub object: &'a Object,
    /// Whether the cluster serves its kind now (false for kinds whose CRD this run creates).
    pub served: bool,
}

/// What the fast path says about one desired object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Triage {
    /// Desired fields equal the live ones: no request needed.
    Unchanged,
    /// Its kind is not served yet (CRD created by this run): created as desired.
    CreateUnserved,
    /// An ImmortalContainer pod to (re)create, for this reason.
    Recreate(String),
    /// An ImmortalContainer pod whose place is taken by a pod tend did not create.
    Conflict(String),
    /// Only the server can say what applying it changes.
    NeedsServer,
}

/// Decide what the LIST data alone can settle.
pub fn triage(desired: Desired<'_>, live: Option<&Value>) -> Triage {
    // ImmortalContainer pods are recreated, never patched (a pod's spec is immutable).
    if is_immortal_pod(desired.object) {
        return match immortal_decision(desired.object, live) {
            PodDecision::Keep => Triage::Unchanged,
            PodDecision::Conflict(message) => Triage::Conflict(message),
            PodDecision::Create(reason) => Triage::Recreate(reason),
        };
    }
    match live {
        _ if !desired.served => Triage::CreateUnserved,
        // `tend.dev/apply: if-not-present`: whatever the live object holds now is kept.
        Some(live)
            if policy::if_not_present(&desired.object.value)
                && live.pointer("/metadata/deletionTimestamp").is_none() =>
        {
            Triage::Unchanged
        }
        Some(live)
            if fast_path::is_unchanged(&desired.object.value, live, crate::FIELD_MANAGER) =>
        {
            Triage::Unchanged
        }
        _ => Triage::NeedsServer,
    }
}

/// The server's answer to a dry-run apply of one object.
#[derive(Debug, Clone)]
pub enum DryRun {
    /// The object as it would be after the apply.
    Applied(Value),
    /// 404 because the object's namespace is created by this same run.
    NamespaceNotYetCreated,
    /// 422: the update changes immutable fields; the one-line cause
    /// (`spec.template: field is immutable`).
    Immutable {
        /// One line: `spec.selector: field is immutable`.
        cause: String,
        /// The server's full message (kept for `-v` and `-o json`).
        server: String,
    },
    /// Any other failure, as a message.
    Failed(String),
}

/// Everything the planner needs.
#[derive(Debug)]
pub struct PlanInput<'a> {
    pub desired: &'a [Desired<'a>],
    /// Live objects read (desired ones that may change, ApplySet members), by key.
    pub live: &'a HashMap<ObjectKey, Value>,
    /// Desired objects already settled as unchanged while reading (their live state need not
    /// be kept).
    pub unchanged: &'a HashSet<ObjectKey>,
    /// Dry-run answers for the objects [`triage`] said need the server.
    pub dry_runs: &'a HashMap<ObjectKey, DryRun>,
    /// Objects that need the server but were not dry-run: a real apply writes them next and
    /// takes the result from the apply itself.
    pub pending: &'a BTreeSet<ObjectKey>,
    /// The ApplySet id: live objects labelled with it are members.
    pub applyset_id: &'a str,
}

/// What a run does.
#[derive(Debug, Default)]
pub struct Plan {
    /// In apply order: by stage, then identity; prunes last.
    pub changes: Vec<Change>,
    /// Applied without a dry run first: their `after` comes from the apply response.
    pub pending: BTreeSet<ObjectKey>,
    /// ImmortalContainer pods to (re)create, with the reason.
    pub recreate: BTreeMap<ObjectKey, String>,
    /// Per-object planning errors (a dry run rejected, a conflict), by key.
    pub errors: BTreeMap<ObjectKey, String>,
    /// Members to delete.
    pub prune: BTreeSet<ObjectKey>,
    /// Members no longer desired that a guard keeps: key → reason. Also listed in `changes`
    /// as prunes, so reports show them as skipped.
    pub kept: BTreeMap<ObjectKey, String>,
}

/// Classify every desired object and every member no longer desired.
pub fn plan(input: PlanInput<'_>) -> Plan {
    let mut plan = Plan::default();
    for d in input.desired {
        let key = d.object.key();
        let live = input.live.get(&key);
        let triaged = match input.unchanged.contains(&key) {
            true => Triage::Unchanged,
            false => triage(*d, live),
        };
        let change = match triaged {
            Triage::Unchanged => change_of(d.object, Action::Unchanged, None, None),
            Triage::CreateUnserved => change_of(
                d.object,
                Action::Create,
                None,
                Some(normalize(&d.object.value)),
            ),
            Triage::Conflict(message) => {
                plan.errors.insert(key, message);
                let normal = live.map(normalize);
                change_of(d.object, Action::Update, normal.clone(), normal)
            }
            Triage::Recreate(reason) => {
                plan.recreate.insert(key, reason);
                change_of(
                    d.object,
                    create_or_update(live),
                    live.map(normalize),
                    Some(normalize(&d.object.value)),
                )
            }
            Triage::NeedsServer if input.pending.contains(&key) => {
                plan.pending.insert(key);
                change_of(d.object, create_or_update(live), live.map(normalize), None)
            }
            Triage::NeedsServer => {
                let answer = input.dry_runs.get(&key).cloned().unwrap_or_else(|| {
                    DryRun::Failed(format!("{key}: no dry-run result (internal error)"))
                });
                settle(d.object, live, answer, &mut plan.errors)
            }
        };
        plan.changes.push(change);
    }

    let desired_keys: BTreeSet<ObjectKey> = input.desired.iter().map(|d| d.object.key()).collect();
    for (key, value) in input.live {
        if desired_keys.contains(key) || !super::inventory::is_member(value, input.applyset_id) {
            continue;
        }
        match prune_guard(key, value) {
            Some(reason) => {
                plan.kept.insert(key.clone(), reason);
            }
            None => {
                plan.prune.insert(key.clone());
            }
        }
        plan.changes.push(Change {
            key: key.clone(),
            api_version: value["apiVersion"].as_str().unwrap_or("").to_string(),
            action: Action::Prune,
            origin: None,
            before: Some(normalize(value)),
            after: None,
            reason: None,
            drift: Vec::new(),
        });
    }
    plan.changes.sort_by_cached_key(|c| {
        (
            c.action == Action::Prune,
            stage_of(&c.key.group, &c.key.kind),
            c.key.clone(),
        )
    });
    plan
}

/// The change for an object the server dry-ran.
fn settle(
    object: &Object,
    live: Option<&Value>,
    answer: DryRun,
    errors: &mut BTreeMap<ObjectKey, String>,
) -> Change {
    let before = live.map(normalize);
    match answer {
        DryRun::Applied(after) => {
            let after = normalize(&after);
            let action = match &before {
                None => Action::Create,
                Some(b) if *b == after => Action::Unchanged,
                Some(_) => Action::Update,
            };
            let drift = match (live, &before) {
                (Some(live), Some(b)) if action == Action::Update => {
                    super::drift::drift(live, b, &after, crate::FIELD_MANAGER)
                }
                _ => Vec::new(),
            };
            Change {
                drift,
                ..change_of(object, action, before, Some(after))
            }
        }
        // The server cannot dry-run objects in a namespace that does not exist yet: show the
        // desired object as the creation.
        DryRun::NamespaceNotYetCreated => {
            change_of(object, Action::Create, None, Some(normalize(&object.value)))
        }
        DryRun::Immutable { cause, server } => {
            match (policy::replace_on_immutable(&object.value), live) {
                (Some(why), Some(live)) => {
                    let mut change = change_of(
                        object,
                        Action::Replace,
                        before,
                        Some(normalize(&overlay(live, &object.value))),
                    );
                    change.reason = Some(format!("{cause} ({why})"));
                    change
                }
                _ => {
                    let message = format!(
                    "cannot dry-run apply {}: {cause}; annotate it {}: {} to have tend delete and recreate it",
                    object.key().kind_and_name(),
                    policy::REPLACE_ANNOTATION,
                    policy::ON_IMMUTABLE
                );
                    let message = crate::problem::with_server_text(message, Some(&server));
                    settle(object, live, DryRun::Failed(message), errors)
                }
            }
        }
        DryRun::Failed(message) => {
            errors.insert(object.key(), message);
            let action = create_or_update(live);
            // No server view of the result: no diff for an update, the object for a create.
            let after = match &before {
                Some(b) => b.clone(),
                None => normalize(&object.value),
            };
            change_of(object, action, before, Some(after))
        }
    }
}

fn create_or_update(live: Option<&Value>) -> Action {
    if live.is_some() {
        Action::Update
    } else {
        Action::Create
    }
}

fn change_of(
    object: &Object,
    action: Action,
    before: Option<Value>,
    after: Option<Value>,
) -> Change {
    Change {
        key: object.key(),
        api_version: object.api_version().to_string(),
        action,
        origin: Some(object.origin.clone()),
        before,
        after,
        reason: None,
        drift: Vec::new(),
    }
}

/// What a replaced object will look like, for its diff: the server cannot dry-run creating an
/// object that exists, so git's fields are laid over the live object (maps merged, lists of
/// the same length merged item by item, anything else taken from git). The old object's
/// server defaults then show as context rather than as removals.
fn overlay(live: &Value, desired: &Value) -> Value {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => {
            let mut out = l.clone();
            for (k, v) in d {
                let merged = match l.get(k) {
                    Some(lv) => overlay(lv, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(l), Value::Array(d)) if l.len() == d.len() => {
            Value::Array(l.iter().zip(d).map(|(lv, dv)| overlay(lv, dv)).collect())
        }
        (_, d) => d.clone(),
    }
}

/// Why a member must not be pruned, if it must not: `tend.dev/prune: disabled`, or a
/// protected kind (Namespace, PVC, PV, CRD) without `tend.dev/prune: allow`.
pub fn prune_guard(key: &ObjectKey, live: &Value) -> Option<String> {
    let annotation = live
        .get("metadata")
        .and_then(|m| m.get("annotations"))
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

/// Limits on a whole run's prunes.
#[derive(Debug, Clone, Copy, Default)]
pub struct PruneLimits {
    /// `--allow-empty`: an empty desired set may prune everything.
    pub allow_empty: bool,
    /// `--max-deletions N`.
    pub max_deletions: Option<usize>,
}

/// Run-wide prune guards: refuse all prunes when the desired set is empty (unless allowed)
/// or when there are more than `--max-deletions`.
pub fn check_prune_limits(
    prunes: usize,
    desired: usize,
    limits: PruneLimits,
) -> Result<(), String> {
    if prunes == 0 {
        return Ok(());
    }
    if desired == 0 && !limits.allow_empty {
        return Err(format!(
            "refusing to prune {} because the desired set is empty (a wrong --path or --ref?); pass --allow-empty to prune everything",
            crate::text::count(prunes, "object")
        ));
    }
    if let Some(max) = limits.max_deletions {
        if prunes > max {
            return Err(format!(
                "refusing to prune {prunes} objects: more than --max-deletions {max}; nothing was pruned"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Origin;
    use crate::plan::inventory::PART_OF_LABEL;
    use serde_json::json;

    const ID: &str = "applyset-test-v1";

    fn object(value: Value) -> Object {
        Object::new(
            value,
            Origin {
                file: "site/app.yaml".into(),
                line: 3,
                generated_by: None,
            },
        )
    }

    fn cm(name: &str, data: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "web", "labels": {PART_OF_LABEL: ID}},
               "data": {"k": data}})
    }

    /// A ConfigMap as the server returns it after tend applied it (with tend's managedFields).
    fn applied_cm(name: &str, data: &str) -> Value {
        let mut v = cm(name, data);
        v["metadata"]["managedFields"] = json!([{
            "manager": crate::FIELD_MANAGER, "operation": "Apply", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}
        }]);
        v
    }

    fn member(
        api_version: &str,
        kind: &str,
        ns: Option<&str>,
        name: &str,
        annotations: Value,
    ) -> Value {
        let mut v = json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "labels": {PART_OF_LABEL: ID}, "annotations": annotations}});
        if let Some(ns) = ns {
            v["metadata"]["namespace"] = json!(ns);
        }
        v
    }

    struct Case {
        desired: Vec<Object>,
        served: bool,
        live: HashMap<ObjectKey, Value>,
        dry_runs: HashMap<ObjectKey, DryRun>,
        pending: BTreeSet<ObjectKey>,
    }

    impl Case {
        fn new(desired: Vec<Object>) -> Case {
            Case {
                desired,
                served: true,
                live: HashMap::new(),
                dry_runs: HashMap::new(),
                pending: BTreeSet::new(),
            }
        }
        fn live(mut self, value: Value) -> Case {
            self.live.insert(crate::cluster::key_of(&value), value);
            self
        }
        fn dry_run(mut self, key: ObjectKey, answer: DryRun) -> Case {
            self.dry_runs.insert(key, answer);
            self
        }
        fn plan(&self) -> Plan {
            let desired: Vec<Desired<'_>> = self
                .desired
                .iter()
                .map(|object| Desired {
                    object,
                    served: self.served,
                })
                .collect();
            plan(PlanInput {
                desired: &desired,
                live: &self.live,
                unchanged: &HashSet::new(),
                dry_runs: &self.dry_runs,
                pending: &self.pending,
                applyset_id: ID,
            })
        }
    }

    fn actions(plan: &Plan) -> Vec<(String, Action)> {
        plan.changes
            .iter()
            .map(|c| (c.key.name.clone(), c.action))
            .collect()
    }

    #[test]
    fn unchanged_from_the_list_alone_needs_no_dry_run() {
        let desired = object(cm("a", "1"));
        let case = Case::new(vec![desired.clone()]).live(applied_cm("a", "1"));
        let d = Desired {
            object: &desired,
            served: true,
        };
        assert_eq!(triage(d, case.live.values().next()), Triage::Unchanged);
        let plan = case.plan();
        assert_eq!(actions(&plan), [("a".into(), Action::Unchanged)]);
        // Unchanged objects keep no copies.
        assert!(plan.changes[0].before.is_none() && plan.changes[0].after.is_none());
    }

    #[test]
    fn changed_or_missing_objects_need_the_server() {
        let desired = object(cm("a", "2"));
        let live = cm("a", "1");
        assert_eq!(
            triage(
                Desired {
                    object: &desired,
                    served: true
                },
                Some(&live)
            ),
            Triage::NeedsServer
        );
        assert_eq!(
            triage(
                Desired {
                    object: &desired,
                    served: true
                },
                None
            ),
            Triage::NeedsServer
        );
        // Being deleted is never unchanged.
        let mut terminating = cm("a", "2");
        terminating["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(
            triage(
                Desired {
                    object: &desired,
                    served: true
                },
                Some(&terminating)
            ),
            Triage::NeedsServer
        );
    }

    #[test]
    fn update_from_a_dry_run_shows_before_and_after() {
        let desired = object(cm("a", "2"));
        let key = desired.key();
        let plan = Case::new(vec![desired])
            .live(cm("a", "1"))
            .dry_run(key, DryRun::Applied(cm("a", "2")))
            .plan();
        assert_eq!(actions(&plan), [("a".into(), Action::Update)]);
        let diff = plan.changes[0].diff();
        assert!(
            diff.contains("-  k: \"1\"") || diff.contains("-  k: '1'"),
            "{diff}"
        );
        assert!(plan.errors.is_empty());
    }

    #[test]
    fn update_names_the_manager_of_drifted_fields() {
        let desired = object(cm("a", "2"));
        let key = desired.key();
        let mut live = cm("a", "1");
        live["metadata"]["managedFields"] = json!([
            {"manager": "kubectl-edit", "operation": "Update", "time": "2026-11-23T21:40:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}
        ]);
        let plan = Case::new(vec![desired])
            .live(live)
            .dry_run(key, DryRun::Applied(cm("a", "2")))
            .plan();
        let drift = &plan.changes[0].drift;
        assert_eq!(drift.len(), 1, "{drift:?}");
        assert_eq!(
            drift[0].to_string(),
            "data.k: 1 → 2 (set by kubectl-edit at 2026-11-23T21:40:00Z)"
        );
        // The diff still has no managedFields (normalized before diffing).
        assert!(!plan.changes[0].diff().contains("managedFields"));
    }

    #[test]
    fn dry_run_equal_to_live_is_unchanged() {
        let desired = object(cm("a", "1"));
        let key = desired.key();
        // The fast path declines (tend never applied it: no managedFields of tend's) but the
        // server's result equals the live object.
        let plan = Case::new(vec![desired])
            .live(cm("a", "1"))
            .dry_run(key.clone(), DryRun::Applied(cm("a", "1")))
            .plan();
        assert_eq!(actions(&plan), [("a".into(), Action::Unchanged)]);
    }

    #[test]
    fn create_from_a_dry_run_and_in_a_namespace_created_by_the_same_run() {
        let a = object(cm("a", "1"));
        let b = object(cm("b", "1"));
        let plan = Case::new(vec![a.clone(), b.clone()])
            .dry_run(a.key(), DryRun::Applied(cm("a", "1")))
            .dry_run(b.key(), DryRun::NamespaceNotYetCreated)
            .plan();
        assert_eq!(
            actions(&plan),
            [("a".into(), Action::Create), ("b".into(), Action::Create)]
        );
        assert!(plan
            .changes
            .iter()
            .all(|c| c.before.is_none() && c.after.is_some()));
        assert!(plan.errors.is_empty());
    }

    #[test]
    fn kinds_not_served_yet_are_created_as_desired() {
        let cr = object(
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        );
        let mut case = Case::new(vec![cr]);
        case.served = false;
        let plan = case.plan();
        assert_eq!(actions(&plan), [("w".into(), Action::Create)]);
        assert_eq!(plan.changes[0].after.as_ref().unwrap()["kind"], "Widget");
    }

    #[test]
    fn a_failed_dry_run_is_an_error_of_that_object_only() {
        let a = object(cm("a", "2"));
        let b = object(cm("b", "1"));
        let plan = Case::new(vec![a.clone(), b.clone()])
            .live(cm("a", "1"))
            .dry_run(a.key(), DryRun::Failed("admission webhook denied".into()))
            .dry_run(b.key(), DryRun::Applied(cm("b", "1")))
            .plan();
        assert_eq!(
            plan.errors.get(&a.key()).map(String::as_str),
            Some("admission webhook denied")
        );
        assert_eq!(
            actions(&plan),
            [("a".into(), Action::Update), ("b".into(), Action::Create)]
        );
        // No server view: an update shows no diff.
        assert_eq!(plan.changes[0].before, plan.changes[0].after);
    }

    #[test]
    fn pending_objects_wait_for_the_real_apply() {
        let a = object(cm("a", "2"));
        let mut case = Case::new(vec![a.clone()]).live(cm("a", "1"));
        case.pending.insert(a.key());
        let plan = case.plan();
        assert_eq!(actions(&plan), [("a".into(), Action::Update)]);
        assert!(plan.pending.contains(&a.key()));
        assert!(plan.changes[0].after.is_none());
    }

    fn annotated(mut value: Value, key: &str, val: &str) -> Value {
        value["metadata"]["annotations"] = json!({key: val});
        value
    }

    fn job(config_hash: &str) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "migrate", "namespace": "web", "labels": {PART_OF_LABEL: ID}},
               "spec": {"template": {"metadata": {"annotations": {"tend.dev/config-hash": config_hash}},
                        "spec": {"restartPolicy": "Never",
                                 "containers": [{"name": "m", "image": "migrate:1"}]}}}})
    }

    #[test]
    fn if_not_present_objects_are_created_but_never_updated() {
        let secret = |v: &str| {
            annotated(
                json!({"apiVersion": "v1", "kind": "Secret",
                       "metadata": {"name": "token", "namespace": "web"}, "data": {"t": v}}),
                policy::APPLY_ANNOTATION,
                policy::IF_NOT_PRESENT,
            )
        };
        let desired = object(secret("Z2l0"));
        let d = Desired {
            object: &desired,
            served: true,
        };
        // Edited in the cluster: unchanged without asking the server.
        let live = secret("ZWRpdGVk");
        assert_eq!(triage(d, Some(&live)), Triage::Unchanged);
        let plan = Case::new(vec![desired.clone()]).live(live).plan();
        assert_eq!(actions(&plan), [("token".into(), Action::Unchanged)]);
        // Missing: created as usual.
        assert_eq!(triage(d, None), Triage::NeedsServer);
        let plan = Case::new(vec![desired.clone()])
            .dry_run(desired.key(), DryRun::Applied(secret("Z2l0")))
            .plan();
        assert_eq!(actions(&plan), [("token".into(), Action::Create)]);
        // Being deleted: not settled as present.
        let mut terminating = secret("ZWRpdGVk");
        terminating["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(triage(d, Some(&terminating)), Triage::NeedsServer);
    }

    #[test]
    fn jobs_refused_as_immutable_are_replaced_with_the_reason() {
        let desired = object(job("new"));
        let plan = Case::new(vec![desired.clone()])
            .live(job("old"))
            .dry_run(
                desired.key(),
                DryRun::Immutable {
                    cause: "spec.template: field is immutable".into(),
                    server: String::new(),
                },
            )
            .plan();
        assert_eq!(actions(&plan), [("migrate".into(), Action::Replace)]);
        assert!(plan.errors.is_empty(), "{:?}", plan.errors);
        let change = &plan.changes[0];
        let reason = change.reason.as_deref().unwrap_or_default();
        assert!(
            reason.starts_with("spec.template: field is immutable (a Job"),
            "{reason}"
        );
        let diff = change.diff();
        assert!(
            diff.contains("-        tend.dev/config-hash: old"),
            "{diff}"
        );
        assert!(
            diff.contains("+        tend.dev/config-hash: new"),
            "{diff}"
        );
        assert_eq!(crate::plan::Summary::of(&plan.changes).replace, 1);
        assert!(crate::plan::Summary::of(&plan.changes).has_differences());
    }

    #[test]
    fn immutable_updates_are_replaced_only_where_the_policy_allows() {
        let deployment = |app: &str| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "api", "namespace": "web"},
                   "spec": {"selector": {"matchLabels": {"app": app}}}})
        };
        let refused = DryRun::Immutable {
            cause: "spec.selector: field is immutable".into(),
            server: String::new(),
        };
        // Annotated: replaced; the old object's server defaults stay as context in the diff.
        let mut live = deployment("v1");
        live["spec"]["revisionHistoryLimit"] = json!(10);
        let desired = object(annotated(
            deployment("v2"),
            policy::REPLACE_ANNOTATION,
            policy::ON_IMMUTABLE,
        ));
        let plan = Case::new(vec![desired.clone()])
            .live(live.clone())
            .dry_run(desired.key(), refused.clone())
            .plan();
        assert_eq!(actions(&plan), [("api".into(), Action::Replace)]);
        assert_eq!(
            plan.changes[0].reason.as_deref(),
            Some("spec.selector: field is immutable (tend.dev/replace: on-immutable)")
        );
        assert!(!plan.changes[0].diff().contains("-  revisionHistoryLimit"));
        // Not annotated: an error of that object, one line, with the way out.
        let desired = object(deployment("v2"));
        let plan = Case::new(vec![desired.clone()])
            .live(live)
            .dry_run(desired.key(), refused)
            .plan();
        assert_eq!(actions(&plan), [("api".into(), Action::Update)]);
        let error = plan.errors.get(&desired.key()).cloned().unwrap_or_default();
        assert!(
            error.contains("spec.selector: field is immutable;")
                && error.contains("tend.dev/replace: on-immutable")
                && !error.contains('\n'),
            "{error}"
        );
    }

    fn immortal_pod(image: &str) -> Object {
        let mut o = object(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-immortalpod", "namespace": "web",
                         "labels": {crate::kinds::immortal_container::pod::IMMORTAL_LABEL: "web"}},
            "spec": {"containers": [{"name": "main", "image": image}]}}));
        o.origin.generated_by = Some(ObjectKey::new(
            crate::GROUP,
            "ImmortalContainer",
            Some("web"),
            "web",
        ));
        o
    }

    #[test]
    fn immortal_pods_are_recreated_never_patched() {
        let pod = immortal_pod("nginx:1");
        let plan = Case::new(vec![pod.clone()]).plan();
        assert_eq!(actions(&plan), [("web-immortalpod".into(), Action::Create)]);
        assert_eq!(
            plan.recreate.get(&pod.key()).map(String::as_str),
            Some("missing")
        );
        // A pod of that name that tend did not create is a conflict, not a takeover.
        let foreign = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-immortalpod", "namespace": "web"},
            "spec": {"containers": [{"name": "main", "image": "nginx:1"}]},
            "status": {"phase": "Running"}});
        let plan = Case::new(vec![pod.clone()]).live(foreign).plan();
        assert!(
            plan.errors
                .get(&pod.key())
                .is_some_and(|e| e.contains("conflict")),
            "{:?}",
            plan.errors
        );
        assert!(plan.recreate.is_empty());
    }

    #[test]
    fn members_no_longer_desired_are_pruned_and_others_left_alone() {
        let gone = member("v1", "ConfigMap", Some("web"), "old", json!({}));
        let mut foreign = cm("theirs", "1");
        foreign["metadata"]["labels"] = json!({PART_OF_LABEL: "applyset-other-v1"});
        let plan = Case::new(vec![object(cm("a", "1"))])
            .live(applied_cm("a", "1"))
            .live(gone.clone())
            .live(foreign)
            .plan();
        assert_eq!(
            actions(&plan),
            [
                ("a".into(), Action::Unchanged),
                ("old".into(), Action::Prune)
            ]
        );
        assert_eq!(plan.prune.len(), 1);
        assert!(plan.kept.is_empty());
        assert!(plan.changes[1].after.is_none() && plan.changes[1].before.is_some());
    }

    #[test]
    fn prune_guards_keep_protected_kinds_and_disabled_objects() {
        let cases = [
            member("v1", "Namespace", None, "ns", json!({})),
            member(
                "v1",
                "PersistentVolumeClaim",
                Some("web"),
                "data",
                json!({}),
            ),
            member("v1", "PersistentVolume", None, "pv", json!({})),
            member(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                "w.example.com",
                json!({}),
            ),
            member(
                "v1",
                "ConfigMap",
                Some("web"),
                "keep",
                json!({PRUNE_ANNOTATION: "disabled"}),
            ),
            member(
                "v1",
                "Namespace",
                None,
                "keep-ns",
                json!({PRUNE_ANNOTATION: "disabled"}),
            ),
        ];
        let mut case = Case::new(vec![object(cm("a", "1"))]);
        for c in &cases {
            case = case.live(c.clone());
        }
        let plan = case.plan();
        assert!(plan.prune.is_empty(), "{:?}", plan.prune);
        assert_eq!(plan.kept.len(), cases.len());
        // Kept prunes are still listed as prunes, so reports can show them as skipped.
        assert_eq!(
            plan.changes
                .iter()
                .filter(|c| c.action == Action::Prune)
                .count(),
            cases.len()
        );
        let reason = |name: &str| {
            plan.kept
                .iter()
                .find(|(k, _)| k.name == name)
                .map(|(_, r)| r.clone())
                .unwrap_or_default()
        };
        assert!(reason("ns").contains("Namespace is protected from pruning"));
        assert!(reason("data").contains("PersistentVolumeClaim is protected"));
        assert!(reason("pv").contains("PersistentVolume is protected"));
        assert!(reason("w.example.com").contains("CustomResourceDefinition is protected"));
        assert_eq!(reason("keep"), "tend.dev/prune: disabled");
        assert_eq!(reason("keep-ns"), "tend.dev/prune: disabled");
    }

    #[test]
    fn protected_kinds_are_pruned_when_they_allow_it() {
        let ns = member(
            "v1",
            "Namespace",
            None,
            "ns",
            json!({PRUNE_ANNOTATION: "allow"}),
        );
        let plan = Case::new(vec![object(cm("a", "1"))]).live(ns).plan();
        assert_eq!(plan.prune.len(), 1);
        assert!(plan.kept.is_empty());
    }

    #[test]
    fn prunes_come_last_and_objects_in_stage_order() {
        let ns =
            object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}}));
        let deploy = object(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "web"}}),
        );
        let old = member("v1", "ConfigMap", Some("web"), "old", json!({}));
        let plan = Case::new(vec![deploy.clone(), ns.clone()])
            .live(old)
            .dry_run(deploy.key(), DryRun::Applied(deploy.value.clone()))
            .dry_run(ns.key(), DryRun::Applied(ns.value.clone()))
            .plan();
        let order: Vec<_> = plan.changes.iter().map(|c| c.key.kind.as_str()).collect();
        assert_eq!(order, ["Namespace", "Deployment", "ConfigMap"]);
    }

    #[test]
    fn run_wide_prune_limits() {
        let none = PruneLimits::default();
        assert_eq!(check_prune_limits(0, 0, none), Ok(()));
        assert_eq!(check_prune_limits(3, 5, none), Ok(()));
        let empty = check_prune_limits(3, 0, none).unwrap_err();
        assert!(
            empty.contains("desired set is empty") && empty.contains("--allow-empty"),
            "{empty}"
        );
        let allowed = PruneLimits {
            allow_empty: true,
            max_deletions: None,
        };
        assert_eq!(check_prune_limits(3, 0, allowed), Ok(()));
        let max = PruneLimits {
            allow_empty: false,
            max_deletions: Some(2),
        };
        assert_eq!(check_prune_limits(2, 5, max), Ok(()));
        let over = check_prune_limits(3, 5, max).unwrap_err();
        assert!(over.contains("more than --max-deletions 2"), "{over}");
    }
}
