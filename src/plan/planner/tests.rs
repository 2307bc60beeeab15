//! The planner's tests: triage, plans from dry runs, policies, prunes and their guards.

use super::prune::PRUNE_ANNOTATION;
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
            sealed: Vec::new(),
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
    let ns = object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}}));
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
