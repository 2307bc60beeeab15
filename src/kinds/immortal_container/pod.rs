//! The pod of an `ImmortalContainer` (README "ImmortalContainer"), and what a run does about it:
//! pods are recreated, never patched (a pod's spec is immutable), when gone, terminated or
//! changed ([`decision`]).

use super::{ImmortalContainer, POD_SUFFIX};
use crate::kinds::{parse_quantity, GENERATED_BY_ANNOTATION, MANAGED_BY_LABEL};
use crate::object::Object;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use std::collections::BTreeMap;

/// Label on the pod naming its ImmortalContainer.
pub const IMMORTAL_LABEL: &str = "tend.dev/immortal";
/// Name of the one container in the pod.
pub const CONTAINER_NAME: &str = "immortal";

/// `<name>-immortalpod`.
pub fn pod_name(ic: &ImmortalContainer) -> String {
    format!(
        "{}{}",
        ic.metadata.name.as_deref().unwrap_or_default(),
        POD_SUFFIX
    )
}

/// The pod tend creates for `ic`, in the CR's namespace (the loader has defaulted it),
/// without its ownerReference (the CR's uid is the cluster's, added when rendering is
/// completed).
pub fn pod(ic: &ImmortalContainer) -> Pod {
    let name = ic.metadata.name.clone().unwrap_or_default();
    let namespace = ic
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let spec = &ic.spec;
    Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(ic)),
            namespace: Some(namespace.clone()),
            labels: Some(BTreeMap::from([
                (IMMORTAL_LABEL.to_string(), name.clone()),
                (
                    MANAGED_BY_LABEL.to_string(),
                    crate::FIELD_MANAGER.to_string(),
                ),
            ])),
            annotations: Some(BTreeMap::from([(
                GENERATED_BY_ANNOTATION.to_string(),
                format!("ImmortalContainer {namespace}/{name}"),
            )])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: CONTAINER_NAME.into(),
                image: Some(spec.image.clone()),
                command: spec.command.clone(),
                args: spec.args.clone(),
                env: spec.env.clone(),
                resources: spec.resources.clone(),
                ..Default::default()
            }],
            // Never: when the container exits, the pod stays Succeeded/Failed and the next
            // tend run recreates it and counts the start in status.startTimes (the original ImmortalContainer operator's
            // semantics: one pod per start). With Always, the kubelet would restart it in
            // place, invisibly to tend and to startTimes. Recreation also covers what no
            // restartPolicy can: a deleted or evicted pod, or a lost node.
            restart_policy: Some("Never".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// [`pod`] as JSON with `apiVersion: v1` and `kind: Pod`.
pub fn pod_value(ic: &ImmortalContainer) -> Value {
    // A k8s-openapi Pod always serializes (string keys, infallible impls).
    serde_json::to_value(pod(ic)).expect("k8s-openapi objects serialize to JSON")
}

/// Why the engine must (delete and) create the pod, or `None` when the live pod is fine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recreate {
    /// No pod of that name: create it.
    Missing,
    /// A pod of that name exists but tend did not create it for this ImmortalContainer (its
    /// `tend.dev/immortal` label is not the CR's name): report a conflict, never delete it.
    Foreign,
    /// The pod is already being deleted: wait until it is gone, then create.
    Terminating,
    /// The container has exited (phase `Succeeded` or `Failed`): delete and create.
    Terminated { phase: String },
    /// The pod no longer matches the spec (see [`spec_matches`]): delete and create.
    SpecChanged,
}

/// What to do about `live` (the pod `<name>-immortalpod` as read from the cluster, or
/// `None` if it does not exist) given the `desired` pod from [`pod`].
pub fn recreate(desired: &Pod, live: Option<&Value>) -> Option<Recreate> {
    let Some(live) = live else {
        return Some(Recreate::Missing);
    };
    let owner = desired
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(IMMORTAL_LABEL));
    let live_owner = live
        .pointer("/metadata/labels")
        .and_then(|l| l.get(IMMORTAL_LABEL))
        .and_then(Value::as_str);
    if owner.map(String::as_str) != live_owner {
        return Some(Recreate::Foreign);
    }
    if live
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Some(Recreate::Terminating);
    }
    if let Some(phase @ ("Succeeded" | "Failed")) =
        live.pointer("/status/phase").and_then(Value::as_str)
    {
        return Some(Recreate::Terminated {
            phase: phase.to_string(),
        });
    }
    if !spec_matches(desired, live) {
        return Some(Recreate::SpecChanged);
    }
    None
}

/// Whether a desired object is the pod of an ImmortalContainer.
pub fn is_immortal_pod(object: &Object) -> bool {
    object.group().is_empty()
        && object.kind() == "Pod"
        && object
            .value
            .pointer("/metadata/labels")
            .and_then(|l| l.get(IMMORTAL_LABEL))
            .is_some()
        && object.origin.generated_by.as_ref().is_some_and(|by| {
            by.group == crate::GROUP && by.kind == super::TendKind::ImmortalContainer.kind()
        })
}

/// What to do with an ImmortalContainer's pod this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodDecision {
    Keep,
    /// A pod of that name that tend did not create is in the way.
    Conflict(String),
    /// (Re)create it, for this reason.
    Create(String),
}

/// What to do about the desired pod `object` given the `live` pod of that name, if any.
pub fn decision(object: &Object, live: Option<&Value>) -> PodDecision {
    let Ok(desired) = serde_json::from_value::<Pod>(object.value.clone()) else {
        return PodDecision::Conflict(format!("cannot read the desired pod {}", object.key()));
    };
    match recreate(&desired, live) {
        None => PodDecision::Keep,
        Some(Recreate::Missing) => PodDecision::Create("missing".into()),
        Some(Recreate::Foreign) => PodDecision::Conflict(format!(
            "conflict: pod {} exists but was not created by {}; delete or rename it",
            object.key(),
            object
                .origin
                .generated_by
                .as_ref()
                .map_or_else(|| "its ImmortalContainer".to_string(), |by| by.kind_and_name())
        )),
        Some(Recreate::Terminating) => PodDecision::Create("terminating".into()),
        Some(Recreate::Terminated { phase }) => PodDecision::Create(format!("phase {phase}")),
        Some(Recreate::SpecChanged) => PodDecision::Create("spec changed".into()),
    }
}

/// Whether the live pod still runs what `desired` asks for, comparing only what tend sets
/// on the `immortal` container: image, command, args, env and resources.
///
/// Live pods carry server-side defaults and admission changes, so the comparison is:
/// - image, command, args, env: equal, where an absent list equals an empty one, and within
///   env items only the fields tend set are compared (the apiserver adds e.g.
///   `fieldRef.apiVersion: v1`); an empty string/list/map/false/0 equals an absent field,
///   as Go's `omitempty` drops them;
/// - resources: every request/limit tend sets must be present with an equal quantity
///   (`1024Mi` equals `1Gi`, as the apiserver canonicalizes). Extra live entries are
///   ignored, because a LimitRange may add them; so is a removed `resources` block, which
///   can't be told apart from LimitRange defaults.
///
/// Other containers (e.g. injected sidecars) are ignored.
pub fn spec_matches(desired: &Pod, live: &Value) -> bool {
    let Some(want) = desired
        .spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == CONTAINER_NAME))
    else {
        return false;
    };
    let Some(have) = live
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["name"] == CONTAINER_NAME))
    else {
        return false;
    };
    have.get("image").and_then(Value::as_str) == want.image.as_deref()
        && list_matches(json(&want.command), have.get("command"))
        && list_matches(json(&want.args), have.get("args"))
        && list_matches(json(&want.env), have.get("env"))
        && resources_match(json(&want.resources), have.get("resources"))
}

fn json<T: serde::Serialize>(value: &T) -> Value {
    // Lists of strings, EnvVars and ResourceRequirements always serialize; Null = absent.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Go's `omitempty` drops these, so they equal an absent field.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// Lists must have the same length, each live item containing the desired one.
fn list_matches(want: Value, have: Option<&Value>) -> bool {
    let empty = Vec::new();
    let want = want.as_array().unwrap_or(&empty);
    let have = have.and_then(Value::as_array).unwrap_or(&empty);
    want.len() == have.len() && want.iter().zip(have).all(|(w, h)| contains(w, Some(h)))
}

/// Whether `have` has every non-empty field of `want` with an equal value.
fn contains(want: &Value, have: Option<&Value>) -> bool {
    if is_empty(want) {
        return have.is_none_or(|h| is_empty(h) || h == want);
    }
    let Some(have) = have else {
        return false;
    };
    match (want, have) {
        (Value::Object(w), Value::Object(h)) => w.iter().all(|(k, wv)| {
            // resourceFieldRef.divisor is a quantity the apiserver canonicalizes.
            if k == "divisor" {
                quantity_eq(wv, h.get(k))
            } else {
                contains(wv, h.get(k))
            }
        }),
        (Value::Array(w), Value::Array(h)) => {
            w.len() == h.len() && w.iter().zip(h).all(|(wi, hi)| contains(wi, Some(hi)))
        }
        _ => want == have,
    }
}

fn quantity_eq(want: &Value, have: Option<&Value>) -> bool {
    let parse = |v: &Value| match v {
        Value::String(s) => parse_quantity(s),
        Value::Number(n) => n.as_i64().and_then(|i| parse_quantity(&i.to_string())),
        _ => None,
    };
    match (parse(want), have.and_then(parse)) {
        (Some(w), Some(h)) => w == h,
        _ => Some(want) == have,
    }
}

fn resources_match(want: Value, have: Option<&Value>) -> bool {
    let Some(want) = want.as_object() else {
        return true; // tend sets no resources: whatever the cluster added is fine
    };
    want.iter()
        .all(|(section, wv)| match (section.as_str(), wv) {
            ("limits" | "requests", Value::Object(quantities)) => {
                quantities.iter().all(|(res, q)| {
                    quantity_eq(
                        q,
                        have.and_then(|h| h.get(section)).and_then(|s| s.get(res)),
                    )
                })
            }
            _ => contains(wv, have.and_then(|h| h.get(section))),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::immortal_container::ImmortalContainerSpec;
    use crate::object::{ObjectKey, Origin};
    use k8s_openapi::api::core::v1::{
        EnvVar, EnvVarSource, ObjectFieldSelector, ResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use serde_json::json;

    fn ic() -> ImmortalContainer {
        let mut ic = ImmortalContainer::new(
            "example",
            ImmortalContainerSpec {
                image: "nginx:1.27".into(),
                command: None,
                args: Some(vec!["-g".into(), "daemon off;".into()]),
                env: Some(vec![
                    EnvVar {
                        name: "MODE".into(),
                        value: Some("prod".into()),
                        ..Default::default()
                    },
                    EnvVar {
                        name: "NODE".into(),
                        value_from: Some(EnvVarSource {
                            field_ref: Some(ObjectFieldSelector {
                                field_path: "spec.nodeName".into(),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                ]),
                resources: Some(ResourceRequirements {
                    limits: Some(BTreeMap::from([(
                        "memory".to_string(),
                        Quantity("1024Mi".into()),
                    )])),
                    requests: Some(BTreeMap::from([(
                        "cpu".to_string(),
                        Quantity("0.5".into()),
                    )])),
                    ..Default::default()
                }),
            },
        );
        ic.metadata.namespace = Some("web".into());
        ic
    }

    /// The pod as the apiserver returns it: defaults filled in, quantities canonicalized,
    /// a sidecar injected, status set.
    fn live(ic: &ImmortalContainer) -> Value {
        let mut v = pod_value(ic);
        v["metadata"]["uid"] = json!("pod-uid");
        v["metadata"]["creationTimestamp"] = json!("2024-01-01T00:00:00Z");
        let c = &mut v["spec"]["containers"][0];
        c["imagePullPolicy"] = json!("IfNotPresent");
        c["terminationMessagePath"] = json!("/dev/termination-log");
        if let Some(field_ref) = c.pointer_mut("/env/1/valueFrom/fieldRef") {
            field_ref["apiVersion"] = json!("v1");
        }
        if c.get("resources").is_some() {
            c["resources"]["limits"]["memory"] = json!("1Gi");
            c["resources"]["requests"]["cpu"] = json!("500m");
            c["resources"]["requests"]["memory"] = json!("64Mi"); // from a LimitRange
        }
        if let Some(cs) = v["spec"]["containers"].as_array_mut() {
            cs.push(json!({"name": "istio-proxy", "image": "istio/proxyv2"}));
        }
        v["spec"]["dnsPolicy"] = json!("ClusterFirst");
        v["spec"]["nodeName"] = json!("node-1");
        v["status"] = json!({"phase": "Running"});
        v
    }

    #[test]
    fn pod_shape() {
        let v = pod_value(&ic());
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["kind"], "Pod");
        assert_eq!(v["metadata"]["name"], "example-immortalpod");
        assert_eq!(v["metadata"]["namespace"], "web");
        assert_eq!(v["metadata"]["labels"]["tend.dev/immortal"], "example");
        assert_eq!(
            v["metadata"]["annotations"]["tend.dev/generated-by"],
            "ImmortalContainer web/example"
        );
        assert!(v["metadata"].get("ownerReferences").is_none());
        assert_eq!(v["spec"]["restartPolicy"], "Never");
        let containers = v["spec"]["containers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(containers.len(), 1);
        let c = &containers[0];
        assert_eq!(c["name"], "immortal");
        assert_eq!(c["image"], "nginx:1.27");
        assert!(c.get("command").is_none());
        assert_eq!(c["args"], json!(["-g", "daemon off;"]));
        assert_eq!(c["env"][0], json!({"name": "MODE", "value": "prod"}));
        assert_eq!(c["resources"]["limits"]["memory"], "1024Mi");
        assert_eq!(pod_name(&ic()), "example-immortalpod");
    }

    #[test]
    fn live_pod_with_server_defaults_matches() {
        let ic = ic();
        let desired = pod(&ic);
        assert!(spec_matches(&desired, &live(&ic)));
        assert_eq!(recreate(&desired, Some(&live(&ic))), None);
    }

    #[test]
    fn changes_are_detected() {
        let ic = ic();
        let desired = pod(&ic);
        let c = "/spec/containers/0";
        let cases = [
            ("image", format!("{c}/image"), json!("nginx:1.26")),
            ("args", format!("{c}/args"), json!(["-g"])),
            ("command", format!("{c}/command"), json!(["sh"])),
            ("env value", format!("{c}/env/0/value"), json!("dev")),
            (
                "env extra",
                format!("{c}/env"),
                json!([{"name": "MODE", "value": "prod"},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "X", "value": "1"}]),
            ),
            (
                "limit",
                format!("{c}/resources/limits/memory"),
                json!("2Gi"),
            ),
            ("no container", format!("{c}/name"), json!("other")),
        ];
        for (what, pointer, value) in cases {
            let mut v = live(&ic);
            if let Some(Value::Object(parent)) = pointer
                .rsplit_once('/')
                .and_then(|(parent, _)| v.pointer_mut(parent))
            {
                let key = pointer.rsplit('/').next().unwrap_or_default();
                parent.insert(key.to_string(), value);
            } else {
                panic!("{pointer} not in the live pod");
            }
            assert!(!spec_matches(&desired, &v), "{what} change not detected");
            assert_eq!(
                recreate(&desired, Some(&v)),
                Some(Recreate::SpecChanged),
                "{what}"
            );
        }
    }

    #[test]
    fn empty_values_equal_absent_ones() {
        let mut ic = ic();
        ic.spec.command = Some(vec![]);
        ic.spec.env = Some(vec![EnvVar {
            name: "EMPTY".into(),
            value: Some(String::new()),
            ..Default::default()
        }]);
        ic.spec.resources = None;
        let desired = pod(&ic);
        let mut v = live(&ic);
        // The apiserver omits empty strings and lists.
        v["spec"]["containers"][0]
            .as_object_mut()
            .map(|c| c.remove("command"));
        v["spec"]["containers"][0]["env"] = json!([{"name": "EMPTY"}]);
        v["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "100m"}});
        assert!(spec_matches(&desired, &v));
    }

    #[test]
    fn recreate_reasons() {
        let ic = ic();
        let desired = pod(&ic);
        assert_eq!(recreate(&desired, None), Some(Recreate::Missing));
        for phase in ["Succeeded", "Failed"] {
            let mut v = live(&ic);
            v["status"]["phase"] = json!(phase);
            assert_eq!(
                recreate(&desired, Some(&v)),
                Some(Recreate::Terminated {
                    phase: phase.into()
                })
            );
        }
        let mut v = live(&ic);
        v["status"]["phase"] = json!("Pending");
        assert_eq!(recreate(&desired, Some(&v)), None);
        v["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        assert_eq!(recreate(&desired, Some(&v)), Some(Recreate::Terminating));
        let mut v = live(&ic);
        v["metadata"]["labels"] = json!({"app": "someone-else"});
        assert_eq!(recreate(&desired, Some(&v)), Some(Recreate::Foreign));
    }

    #[test]
    fn decisions_name_the_owner() {
        let ic = ic();
        let owner = ObjectKey::new(crate::GROUP, "ImmortalContainer", Some("web"), "example");
        let object = Object::new(
            pod_value(&ic),
            Origin {
                file: "ic.yaml".into(),
                line: 1,
                generated_by: Some(owner),
                sealed: Vec::new(),
            },
        );
        assert!(is_immortal_pod(&object));
        assert_eq!(decision(&object, Some(&live(&ic))), PodDecision::Keep);
        assert_eq!(
            decision(&object, None),
            PodDecision::Create("missing".into())
        );
        let mut foreign = live(&ic);
        foreign["metadata"]["labels"] = json!({});
        assert_eq!(
            decision(&object, Some(&foreign)),
            PodDecision::Conflict("conflict: pod Pod web/example-immortalpod exists but was not created by ImmortalContainer web/example; delete or rename it".into())
        );
        let mut plain = object.clone();
        plain.origin.generated_by = None;
        assert!(!is_immortal_pod(&plain), "a pod in git with the label is not tend's");
    }
}
