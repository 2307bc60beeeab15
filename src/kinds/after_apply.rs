//! tend's kinds after the apply stages ran: the statuses to write and the ownerReferences
//! that could not be set at first creation (the owner was created in the same run, so its uid
//! was unknown). Computed from [`RunState`], plain data the apply stage gathers; the writes
//! are the apply stage's.

use super::run::RunState;
use super::{owner_reference, TendKind};
use crate::object::{Object, ObjectKey};
use serde_json::{json, Value};

/// One status to write through the status subresource.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusPatch {
    pub key: ObjectKey,
    /// The apply patch: apiVersion, kind, name, namespace and `status`.
    pub patch: Value,
}

/// A generated object applied this run, with the ownerReference to its owner added, when
/// it lacks one and the owner's uid is now known (the owner was created in the same run).
/// The caller leaves out objects whose apply failed.
pub fn with_owner(object: &Object, run: &RunState<'_>) -> Option<Value> {
    let owner = object.origin.generated_by.as_ref()?;
    let owns = TendKind::from_kind(&owner.kind).is_some_and(TendKind::owns_generated);
    if !owns
        || owner.group != crate::GROUP
        || object.value.pointer("/metadata/ownerReferences").is_some()
    {
        return None;
    }
    let uid = run
        .current(owner)?
        .pointer("/metadata/uid")
        .and_then(Value::as_str)?;
    let mut value = object.value.clone();
    value.get_mut("metadata")?.as_object_mut()?.insert(
        "ownerReferences".into(),
        json!([owner_reference(owner, uid)]),
    );
    Some(value)
}

/// The status of `object`, if it is a tend object whose status differs from what the cluster
/// has (timestamps aside). The caller leaves out objects whose apply failed.
pub fn status_patch(object: &Object, run: &RunState<'_>) -> Option<StatusPatch> {
    if object.group() != crate::GROUP || object.origin.generated_by.is_some() {
        return None;
    }
    let tend = TendKind::from_kind(object.kind())?
        .parse(&object.value)
        .ok()?;
    let status = tend.status(run)?;
    let key = object.key();
    let old = run
        .current(&key)
        .and_then(|l| l.get("status"))
        .unwrap_or(&Value::Null);
    if same_status(old, &status) {
        return None;
    }
    Some(StatusPatch {
        patch: json!({
            "apiVersion": crate::API_VERSION,
            "kind": key.kind,
            "metadata": {"name": key.name, "namespace": key.namespace},
            "status": status,
        }),
        key,
    })
}

/// Statuses equal apart from timestamps that change every run.
fn same_status(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(map) = v.as_object_mut() {
            map.remove("lastSyncTime");
            map.retain(|_, v| !v.is_null());
        }
        v
    };
    strip(old) == strip(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::run::CopyOutcome;
    use crate::object::Origin;
    use k8s_openapi::jiff::Timestamp;
    use std::collections::{BTreeSet, HashMap};

    fn object(value: Value, generated_by: Option<ObjectKey>) -> Object {
        Object::new(
            value,
            Origin {
                file: "x.yaml".into(),
                line: 1,
                generated_by,
                sealed: Vec::new(),
            },
        )
    }

    struct Fixture {
        observed: HashMap<ObjectKey, Value>,
        applied: HashMap<ObjectKey, Value>,
        started: BTreeSet<ObjectKey>,
        outcomes: Vec<CopyOutcome>,
    }

    impl Fixture {
        fn run(&self) -> RunState<'_> {
            RunState {
                observed: &self.observed,
                applied: &self.applied,
                started: &self.started,
                copy_outcomes: &self.outcomes,
                releases: &[],
                now: Timestamp::UNIX_EPOCH,
            }
        }
    }

    fn mirror() -> Value {
        json!({"apiVersion": "tend.dev/v1alpha1", "kind": "RegistryMirror",
            "metadata": {"name": "m", "namespace": "r"},
            "spec": {"upstream": "https://a", "storage": {"size": "1Gi"}, "hostPort": 5001}})
    }

    fn immortal() -> Value {
        json!({"apiVersion": "tend.dev/v1alpha1", "kind": "ImmortalContainer",
            "metadata": {"name": "ic", "namespace": "web"}, "spec": {"image": "nginx"}})
    }

    fn fixture() -> Fixture {
        let mut applied_mirror = mirror();
        applied_mirror["metadata"]["uid"] = json!("u-m");
        applied_mirror["metadata"]["generation"] = json!(2);
        Fixture {
            observed: HashMap::from([(
                ObjectKey::new("apps", "StatefulSet", Some("r"), "m"),
                json!({"status": {"readyReplicas": 1}}),
            )]),
            applied: HashMap::from([(
                ObjectKey::new(crate::GROUP, "RegistryMirror", Some("r"), "m"),
                applied_mirror,
            )]),
            started: BTreeSet::from([ObjectKey::new("", "Pod", Some("web"), "ic-immortalpod")]),
            outcomes: vec![CopyOutcome {
                rule: "r".into(),
                copies: 2,
                targets: vec!["a".into(), "b".into()],
                conflicts: vec!["c/x".into()],
            }],
        }
    }

    #[test]
    fn owners_known_after_apply_are_set() {
        let f = fixture();
        let owner = ObjectKey::new(crate::GROUP, "RegistryMirror", Some("r"), "m");
        let svc = object(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "m", "namespace": "r"}}),
            Some(owner.clone()),
        );
        let mut already = svc.clone();
        already.value["metadata"]["ownerReferences"] = json!([]);
        let copy = object(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}}),
            Some(ObjectKey::new(crate::GROUP, "CopyRule", None, "r")),
        );
        assert_eq!(with_owner(&already, &f.run()), None, "set ones stay");
        assert_eq!(with_owner(&copy, &f.run()), None, "copies have no owner");
        let patched = with_owner(&svc, &f.run()).expect("owner known");
        assert_eq!(
            patched["metadata"]["ownerReferences"],
            json!([{"apiVersion": "tend.dev/v1alpha1", "blockOwnerDeletion": true, "controller": true,
                    "kind": "RegistryMirror", "name": "m", "uid": "u-m"}])
        );
    }

    const EPOCH: &str = "1970-01-01T00:00:00Z";

    #[test]
    fn typed_statuses_of_every_kind() {
        let f = fixture();
        let rule = json!({"apiVersion": "tend.dev/v1alpha1", "kind": "CopyRule", "metadata": {"name": "r"},
            "spec": {"kind": "ConfigMap", "sourceNamespace": "s", "selector": {"matchLabels": {"a": "b"}}}});
        let agent = json!({"apiVersion": "tend.dev/v1alpha1", "kind": "ChaosAgent", "metadata": {"name": "c"},
            "spec": {"eagerness": 1}});
        let objects: Vec<Object> = [mirror(), immortal(), rule, agent]
            .into_iter()
            .map(|v| object(v, None))
            .collect();
        let patches: Vec<StatusPatch> = objects
            .iter()
            .filter_map(|o| status_patch(o, &f.run()))
            .collect();
        let statuses: Vec<(String, Value)> = patches
            .iter()
            .map(|p| (p.key.kind.clone(), p.patch["status"].clone()))
            .collect();
        assert_eq!(
            statuses,
            [
                (
                    "RegistryMirror".to_string(),
                    json!({"readyReplicas": 1, "endpoint": "localhost:5001", "observedGeneration": 2,
                           "conditions": [{"type": "Ready", "status": "True", "reason": "RegistryReady",
                                           "message": "the registry is ready; nodes pull through localhost:5001",
                                           "observedGeneration": 2, "lastTransitionTime": EPOCH}]})
                ),
                (
                    "ImmortalContainer".to_string(),
                    json!({"currentPod": "ic-immortalpod", "startTimes": 1,
                           "conditions": [{"type": "Ready", "status": "False", "reason": "PodStarting",
                                           "message": "pod ic-immortalpod was (re)created by this run",
                                           "lastTransitionTime": EPOCH}]})
                ),
                (
                    "CopyRule".to_string(),
                    json!({"copies": 2, "targets": ["a", "b"], "conflicts": ["c/x"],
                           "conflictCount": 1, "lastSyncTime": EPOCH,
                           "conditions": [{"type": "Ready", "status": "False", "reason": "Conflicts",
                                           "message": "1 target object(s) exist but were not created by tend and are left alone: c/x",
                                           "lastTransitionTime": EPOCH}]})
                ),
            ],
            "ChaosAgent status is chaos's to write"
        );
        assert_eq!(
            patches[2].patch["metadata"],
            json!({"name": "r", "namespace": null})
        );
    }

    #[test]
    fn unchanged_statuses_are_not_written() {
        let mut f = fixture();
        let mut live = immortal();
        // The Ready condition's transition time is kept while it stays False.
        live["status"] = json!({"currentPod": "ic-immortalpod", "startTimes": 3,
            "conditions": [{"type": "Ready", "status": "False", "reason": "PodNotReady",
                            "message": "pod ic-immortalpod is not ready",
                            "lastTransitionTime": "2026-11-23T10:00:00Z"}]});
        f.observed.insert(
            ObjectKey::new(crate::GROUP, "ImmortalContainer", Some("web"), "ic"),
            live,
        );
        f.observed.insert(
            ObjectKey::new("", "Pod", Some("web"), "ic-immortalpod"),
            json!({}),
        );
        f.started.clear();
        let ic = object(immortal(), None);
        assert_eq!(status_patch(&ic, &f.run()), None);
        // A start counts once more.
        f.started
            .insert(ObjectKey::new("", "Pod", Some("web"), "ic-immortalpod"));
        let patch = status_patch(&ic, &f.run()).expect("changed");
        assert_eq!(patch.patch["status"]["startTimes"], 4);
        let ready = &patch.patch["status"]["conditions"][0];
        assert_eq!(ready["reason"], "PodStarting");
        assert_eq!(ready["lastTransitionTime"], "2026-11-23T10:00:00Z");
        assert!(same_status(
            &json!({"copies": 1, "lastSyncTime": "a", "x": null}),
            &json!({"copies": 1, "lastSyncTime": "b"})
        ));
    }
}
