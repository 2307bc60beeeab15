//! The fast path (README "Reconcile (diff and apply)"): decide from the LISTed live object alone that applying the desired
//! object would change nothing, so a no-op run needs no per-object request.
//!
//! The decision errs one way only. A false "changed" costs one dry-run request; a false
//! "unchanged" would leave the cluster out of sync, so every doubt answers "changed".
//!
//! An apply changes nothing when
//! 1. every field the desired object sets is already live with the same value ([`contains`]),
//! 2. and tend owns no field the desired object no longer sets ([`owned_paths_dropped`]):
//!    server-side apply removes such fields, so their mere presence live means a change.

use crate::object::at;
use serde_json::{Map, Number, Value};
use std::borrow::Cow;

/// Whether every field `desired` sets is present in `live` with an equal value.
///
/// Maps are compared as a recursive subset (the server adds defaults and other managers'
/// fields). Lists must have the same length and match element by element (the server adds
/// defaults inside items: `imagePullPolicy`, a port's `protocol`). Scalars are equal exactly,
/// except that an integer equals a float of the same value. A desired `null` means "absent" and
/// is satisfied when live lacks the key (or holds `null`). Quantities (`0.5` vs `500m`) are
/// deliberately not normalized: such a mismatch falls back to a dry-run.
pub fn contains(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => map_contains(d, l),
        (Value::Array(d), Value::Array(l)) => {
            d.len() == l.len() && d.iter().zip(l).all(|(d, l)| contains(d, l))
        }
        (Value::Number(d), Value::Number(l)) => numbers_equal(d, l),
        (Value::Null, Value::Null) => true,
        (Value::Bool(d), Value::Bool(l)) => d == l,
        (Value::String(d), Value::String(l)) => d == l,
        _ => false,
    }
}

fn map_contains(desired: &Map<String, Value>, live: &Map<String, Value>) -> bool {
    desired.iter().all(|(key, d)| match live.get(key) {
        Some(l) => contains(d, l),
        None => d.is_null(),
    })
}

/// `1 == 1.0`, but only when the float is exactly that integer (no rounding through f64 for
/// large integers).
fn numbers_equal(a: &Number, b: &Number) -> bool {
    if a == b {
        return true;
    }
    let as_int = |n: &Number| -> Option<i128> {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (as_int(a), as_int(b), a.as_f64(), b.as_f64()) {
        (Some(i), None, _, Some(f)) | (None, Some(i), Some(f), _) => float_is_int(f, i),
        (None, None, Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn float_is_int(f: f64, i: i128) -> bool {
    // |f| < 2^63 guarantees the cast is exact for an integral f.
    f.fract() == 0.0 && f.abs() < 9.223_372_036_854_776e18 && f as i128 == i
}

/// Whether applying `desired` would remove a field that `manager` owns through server-side
/// apply, i.e. some leaf path of `manager`'s `Apply` entry in `managed_fields` (the live
/// `metadata.managedFields` array) does not exist in `desired`.
///
/// Returns true (not eligible for the fast path) when there is no such entry (the object was
/// never applied by `manager`, e.g. created by hand and now adopted), when an entry was
/// recorded for a different apiVersion than `desired`'s (field paths can differ between
/// versions), and when the `fieldsV1` cannot be read. Entries for subresources (`status`) are
/// ignored: applying the main resource never removes them.
pub fn owned_paths_dropped(managed_fields: &Value, manager: &str, desired: &Value) -> bool {
    let Some(entries) = managed_fields.as_array() else {
        return true;
    };
    let desired_version = desired.get("apiVersion").and_then(Value::as_str);
    let mut found = false;
    for entry in entries {
        if entry.get("manager").and_then(Value::as_str) != Some(manager)
            || entry.get("operation").and_then(Value::as_str) != Some("Apply")
        {
            continue;
        }
        match entry.get("subresource").and_then(Value::as_str) {
            None | Some("") => {}
            Some(_) => continue,
        }
        found = true;
        let version = entry.get("apiVersion").and_then(Value::as_str);
        if desired_version.is_some() && version != desired_version {
            return true;
        }
        if entry.get("fieldsType").and_then(Value::as_str) != Some("FieldsV1") {
            return true;
        }
        let Some(fields) = entry.get("fieldsV1").and_then(Value::as_object) else {
            return true;
        };
        match dropped(fields, desired) {
            Ok(false) => {}
            Ok(true) | Err(Garbled) => return true,
        }
    }
    !found
}

/// `fieldsV1` that does not follow the Kubernetes format.
struct Garbled;

/// Whether some path owned under `fields` (a fieldsV1 node) is missing from `desired` (the
/// desired value at the same position, known to exist).
fn dropped(fields: &Map<String, Value>, desired: &Value) -> Result<bool, Garbled> {
    for (key, child) in fields {
        let child = child.as_object().ok_or(Garbled)?;
        if key == "." {
            // The node itself: it exists, or we would not be here.
            continue;
        }
        let next = if let Some(name) = key.strip_prefix("f:") {
            desired.as_object().and_then(|m| m.get(name))
        } else if let Some(keys) = key.strip_prefix("k:") {
            let keys: Map<String, Value> = serde_json::from_str(keys).map_err(|_| Garbled)?;
            desired
                .as_array()
                .and_then(|items| items.iter().find(|item| item_has_keys(item, &keys)))
        } else if let Some(value) = key.strip_prefix("v:") {
            let value: Value = serde_json::from_str(value).map_err(|_| Garbled)?;
            desired
                .as_array()
                .and_then(|items| items.iter().find(|item| same_value(item, &value)))
        } else if let Some(index) = key.strip_prefix("i:") {
            let index: usize = index.parse().map_err(|_| Garbled)?;
            desired.as_array().and_then(|items| items.get(index))
        } else {
            return Err(Garbled);
        };
        // A desired `null` is an absent field to server-side apply.
        match next {
            None | Some(Value::Null) => return Ok(true),
            Some(next) => {
                if dropped(child, next)? {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// Key fields the API server defaults before recording ownership, so a desired list item may
/// omit them and still be the owned item: `ports[].protocol` is `TCP` unless set (container
/// ports, Service ports, both keyed by port and protocol).
const DEFAULTED_KEYS: &[(&str, &str)] = &[("protocol", "TCP")];

/// Whether an associative-list item carries the key fields of a `k:{...}` entry.
fn item_has_keys(item: &Value, keys: &Map<String, Value>) -> bool {
    let Some(item) = item.as_object() else {
        return false;
    };
    keys.iter().all(|(k, want)| match item.get(k) {
        Some(got) if !got.is_null() => same_value(got, want),
        _ => DEFAULTED_KEYS
            .iter()
            .any(|(dk, dv)| dk == k && want.as_str() == Some(*dv)),
    })
}

/// Equality with the integer/float tolerance of [`contains`].
fn same_value(a: &Value, b: &Value) -> bool {
    contains(a, b) && contains(b, a)
}

/// Whether applying `desired` (as manager `manager`) to the object `live` (as LISTed, with
/// `metadata.managedFields`) would change nothing: [`contains`] and not
/// [`owned_paths_dropped`]. An object being deleted (`deletionTimestamp`) is never unchanged.
pub fn is_unchanged(desired: &Value, live: &Value, manager: &str) -> bool {
    if at(live, &["metadata", "deletionTimestamp"]).is_some() {
        return false;
    }
    let managed = live
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .unwrap_or(&Value::Null);
    contains(&without_ignored(desired), live) && !owned_paths_dropped(managed, manager, desired)
}

/// `desired` without what the server ignores but generated manifests carry:
/// `metadata.creationTimestamp: null` (`kubectl create --dry-run -o yaml`) and empty
/// `metadata.labels`/`metadata.annotations` (the server never stores an empty map there).
fn without_ignored(desired: &Value) -> Cow<'_, Value> {
    let Some(meta) = desired.get("metadata").and_then(Value::as_object) else {
        return Cow::Borrowed(desired);
    };
    let ignored = |key: &str| match meta.get(key) {
        Some(Value::Null) => key == "creationTimestamp",
        Some(Value::Object(m)) => m.is_empty() && (key == "labels" || key == "annotations"),
        _ => false,
    };
    let keys = ["creationTimestamp", "labels", "annotations"];
    if !keys.iter().any(|k| ignored(k)) {
        return Cow::Borrowed(desired);
    }
    let mut out = desired.clone();
    if let Some(out_meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in keys.into_iter().filter(|k| ignored(k)) {
            out_meta.shift_remove(key);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TEND: &str = "tend";

    fn deployment_desired() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "nginx",
                "namespace": "web",
                "labels": {"app": "nginx", "tier": "front"},
                "annotations": {"tend.dev/config-hash": "abc"},
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {
                    "metadata": {"labels": {"app": "nginx"}},
                    "spec": {
                        "containers": [{
                            "name": "nginx",
                            "image": "nginx:1.27",
                            "args": ["-g", "daemon off;"],
                            "env": [{"name": "MODE", "value": "prod"}, {"name": "LEVEL", "value": "2"}],
                            "ports": [{"containerPort": 8080}, {"containerPort": 9090, "protocol": "UDP"}],
                            "volumeMounts": [{"name": "conf", "mountPath": "/etc/nginx"}],
                        }],
                        "volumes": [{"name": "conf", "configMap": {"name": "nginx-conf"}}],
                    },
                },
            },
        })
    }

    /// managedFields as a real API server records them for `deployment_desired()` applied by
    /// tend, plus the controller's status update and another manager's annotation.
    fn deployment_managed_fields() -> Value {
        json!([
            {
                "manager": "tend",
                "operation": "Apply",
                "apiVersion": "apps/v1",
                "time": "2024-05-01T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {
                        "f:annotations": {"f:tend.dev/config-hash": {}},
                        "f:labels": {"f:app": {}, "f:tier": {}},
                    },
                    "f:spec": {
                        "f:replicas": {},
                        "f:selector": {},
                        "f:template": {
                            "f:metadata": {"f:labels": {"f:app": {}}},
                            "f:spec": {
                                "f:containers": {
                                    "k:{\"name\":\"nginx\"}": {
                                        ".": {},
                                        "f:args": {},
                                        "f:env": {
                                            "k:{\"name\":\"MODE\"}": {".": {}, "f:name": {}, "f:value": {}},
                                            "k:{\"name\":\"LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}},
                                        },
                                        "f:image": {},
                                        "f:name": {},
                                        "f:ports": {
                                            "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
                                                ".": {}, "f:containerPort": {},
                                            },
                                            "k:{\"containerPort\":9090,\"protocol\":\"UDP\"}": {
                                                ".": {}, "f:containerPort": {}, "f:protocol": {},
                                            },
                                        },
                                        "f:volumeMounts": {
                                            "k:{\"mountPath\":\"/etc/nginx\"}": {
                                                ".": {}, "f:mountPath": {}, "f:name": {},
                                            },
                                        },
                                    },
                                },
                                "f:volumes": {
                                    "k:{\"name\":\"conf\"}": {
                                        ".": {}, "f:configMap": {"f:name": {}}, "f:name": {},
                                    },
                                },
                            },
                        },
                    },
                },
            },
            {
                "manager": "kubectl-annotate",
                "operation": "Update",
                "apiVersion": "apps/v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:annotations": {"f:note": {}}}},
            },
            {
                "manager": "kube-controller-manager",
                "operation": "Update",
                "apiVersion": "apps/v1",
                "subresource": "status",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": {"f:replicas": {}, "f:conditions": {}}},
            },
        ])
    }

    /// The live object: desired plus server defaults, another manager's annotation, status.
    fn deployment_live() -> Value {
        let mut live = deployment_desired();
        let meta = &mut live["metadata"];
        meta["uid"] = json!("5f1c");
        meta["resourceVersion"] = json!("1234");
        meta["generation"] = json!(3);
        meta["creationTimestamp"] = json!("2024-05-01T10:00:00Z");
        meta["annotations"]["note"] = json!("by hand");
        meta["annotations"]["deployment.kubernetes.io/revision"] = json!("3");
        meta["managedFields"] = deployment_managed_fields();
        let spec = &mut live["spec"];
        spec["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}});
        spec["revisionHistoryLimit"] = json!(10);
        spec["progressDeadlineSeconds"] = json!(600);
        let pod = &mut spec["template"]["spec"];
        pod["restartPolicy"] = json!("Always");
        pod["dnsPolicy"] = json!("ClusterFirst");
        pod["volumes"][0]["configMap"]["defaultMode"] = json!(420);
        let c = &mut pod["containers"][0];
        c["imagePullPolicy"] = json!("IfNotPresent");
        c["terminationMessagePath"] = json!("/dev/termination-log");
        c["ports"][0]["protocol"] = json!("TCP");
        live["status"] = json!({"replicas": 2, "readyReplicas": 2});
        live
    }

    #[test]
    fn deployment_with_server_defaults_is_unchanged() {
        assert!(is_unchanged(
            &deployment_desired(),
            &deployment_live(),
            TEND
        ));
    }

    #[test]
    fn changed_value_is_changed() {
        let mut d = deployment_desired();
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
        assert!(!is_unchanged(&d, &deployment_live(), TEND));
        let mut d = deployment_desired();
        d["spec"]["replicas"] = json!(3);
        assert!(!is_unchanged(&d, &deployment_live(), TEND));
    }

    #[test]
    fn removed_owned_label_is_changed() {
        let mut d = deployment_desired();
        d["metadata"]["labels"]
            .as_object_mut()
            .unwrap()
            .remove("tier");
        // Still a subset of live, but tend owns the label: the apply must remove it.
        assert!(contains(&d, &deployment_live()));
        assert!(!is_unchanged(&d, &deployment_live(), TEND));
    }

    #[test]
    fn removed_field_owned_by_someone_else_is_unchanged() {
        // `note` is owned by kubectl-annotate; dropping nothing of tend's keeps the fast path.
        let d = deployment_desired();
        let live = deployment_live();
        assert_eq!(live["metadata"]["annotations"]["note"], "by hand");
        assert!(is_unchanged(&d, &live, TEND));
    }

    #[test]
    fn list_items_added_or_removed_are_changed() {
        let mut d = deployment_desired();
        d["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "NEW", "value": "1"}));
        assert!(!contains(&d, &deployment_live()));
        assert!(!is_unchanged(&d, &deployment_live(), TEND));

        let mut d = deployment_desired();
        d["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array_mut()
            .unwrap()
            .remove(1);
        assert!(!is_unchanged(&d, &deployment_live(), TEND));

        // Removing an env item the live object still has, owned by tend, is caught by the
        // managedFields walk even when live was already trimmed by someone else.
        let mut live = deployment_live();
        live["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array_mut()
            .unwrap()
            .remove(1);
        assert!(contains(&d, &live));
        assert!(!is_unchanged(&d, &live, TEND));
    }

    #[test]
    fn multi_key_list_items() {
        // 8080 omits its defaulted protocol in desired; 9090 says UDP explicitly.
        assert!(!owned_paths_dropped(
            &deployment_managed_fields(),
            TEND,
            &deployment_desired()
        ));
        // Switching 9090 to TCP (a different key) drops the UDP item tend owns.
        let mut d = deployment_desired();
        d["spec"]["template"]["spec"]["containers"][0]["ports"][1]["protocol"] = json!("TCP");
        assert!(owned_paths_dropped(&deployment_managed_fields(), TEND, &d));
        // Dropping the explicit UDP (so it defaults to TCP) also drops the owned UDP item.
        let mut d = deployment_desired();
        d["spec"]["template"]["spec"]["containers"][0]["ports"][1]
            .as_object_mut()
            .unwrap()
            .remove("protocol");
        assert!(owned_paths_dropped(&deployment_managed_fields(), TEND, &d));
        // An owned port removed from desired.
        let mut d = deployment_desired();
        d["spec"]["template"]["spec"]["containers"][0]["ports"]
            .as_array_mut()
            .unwrap()
            .remove(0);
        assert!(owned_paths_dropped(&deployment_managed_fields(), TEND, &d));
    }

    #[test]
    fn owned_nested_field_removed_is_dropped() {
        let mut d = deployment_desired();
        d["spec"]["template"]["spec"]["volumes"][0]["configMap"]
            .as_object_mut()
            .unwrap()
            .remove("name");
        assert!(owned_paths_dropped(&deployment_managed_fields(), TEND, &d));
        let mut d = deployment_desired();
        d["spec"].as_object_mut().unwrap().remove("replicas");
        assert!(owned_paths_dropped(&deployment_managed_fields(), TEND, &d));
        // A desired null is an absent field to server-side apply.
        let mut d = deployment_desired();
        d["spec"]["replicas"] = Value::Null;
        assert!(owned_paths_dropped(&deployment_managed_fields(), TEND, &d));
    }

    fn configmap() -> (Value, Value) {
        let desired = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "app", "namespace": "web",
                         "labels": {"applyset.kubernetes.io/part-of": "applyset-x"}},
            "data": {"a": "1", "b": "2"},
        });
        let mut live = desired.clone();
        live["metadata"]["resourceVersion"] = json!("7");
        live["metadata"]["managedFields"] = json!([{
            "manager": "tend", "operation": "Apply", "apiVersion": "v1",
            "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:data": {"f:a": {}, "f:b": {}},
                "f:metadata": {"f:labels": {"f:applyset.kubernetes.io/part-of": {}}},
            },
        }]);
        (desired, live)
    }

    #[test]
    fn configmap_cases() {
        let (d, live) = configmap();
        assert!(is_unchanged(&d, &live, TEND));
        // Value changed.
        let mut d2 = d.clone();
        d2["data"]["a"] = json!("3");
        assert!(!is_unchanged(&d2, &live, TEND));
        // Key removed from git.
        let mut d3 = d.clone();
        d3["data"].as_object_mut().unwrap().remove("b");
        assert!(!is_unchanged(&d3, &live, TEND));
        // Key added in git.
        let mut d4 = d.clone();
        d4["data"]["c"] = json!("x");
        assert!(!is_unchanged(&d4, &live, TEND));
        // Another manager's key live is fine.
        let mut live2 = live.clone();
        live2["data"]["z"] = json!("other");
        assert!(is_unchanged(&d, &live2, TEND));
    }

    #[test]
    fn not_applied_by_tend_is_not_eligible() {
        let (d, mut live) = configmap();
        live["metadata"]["managedFields"][0]["manager"] = json!("kubectl-client-side-apply");
        assert!(!is_unchanged(&d, &live, TEND));
        live["metadata"]["managedFields"][0]["manager"] = json!("tend");
        live["metadata"]["managedFields"][0]["operation"] = json!("Update");
        assert!(!is_unchanged(&d, &live, TEND));
        live["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert!(!is_unchanged(&d, &live, TEND));
    }

    #[test]
    fn garbled_or_foreign_version_fields_are_conservative() {
        let (d, live) = configmap();
        let mf = |fields: Value| {
            json!([{"manager": "tend", "operation": "Apply", "apiVersion": "v1",
                    "fieldsType": "FieldsV1", "fieldsV1": fields}])
        };
        assert!(owned_paths_dropped(&mf(json!({"x:weird": {}})), TEND, &d));
        assert!(owned_paths_dropped(
            &mf(json!({"f:data": "nope"})),
            TEND,
            &d
        ));
        assert!(owned_paths_dropped(&mf(json!("nope")), TEND, &d));
        assert!(owned_paths_dropped(
            &mf(json!({"f:data": {"k:{bad json": {}}})),
            TEND,
            &d
        ));
        assert!(owned_paths_dropped(&json!("nope"), TEND, &d));
        let mut other_version = live["metadata"]["managedFields"].clone();
        other_version[0]["apiVersion"] = json!("v2");
        assert!(owned_paths_dropped(&other_version, TEND, &d));
    }

    #[test]
    fn status_subresource_entries_are_ignored() {
        let (d, mut live) = configmap();
        live["metadata"]["managedFields"]
            .as_array_mut()
            .unwrap()
            .push(
                json!({"manager": "tend", "operation": "Apply", "apiVersion": "v1",
                          "subresource": "status", "fieldsType": "FieldsV1",
                          "fieldsV1": {"f:status": {"f:phase": {}}}}),
            );
        assert!(is_unchanged(&d, &live, TEND));
    }

    #[test]
    fn set_and_index_items() {
        let d = json!({"apiVersion": "v1", "metadata": {"finalizers": ["a", "b"]}, "spec": {"l": [1, 2]}});
        let mf = |fields: Value| {
            json!([{"manager": "tend", "operation": "Apply", "apiVersion": "v1",
                    "fieldsType": "FieldsV1", "fieldsV1": fields}])
        };
        let owned = json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"a\"": {}, "v:\"b\"": {}}},
                           "f:spec": {"f:l": {"i:0": {}, "i:1": {}}}});
        assert!(!owned_paths_dropped(&mf(owned), TEND, &d));
        let owned = json!({"f:metadata": {"f:finalizers": {"v:\"c\"": {}}}});
        assert!(owned_paths_dropped(&mf(owned), TEND, &d));
        let owned = json!({"f:spec": {"f:l": {"i:2": {}}}});
        assert!(owned_paths_dropped(&mf(owned), TEND, &d));
    }

    #[test]
    fn scalar_semantics() {
        assert!(contains(&json!({"a": 1}), &json!({"a": 1.0})));
        assert!(contains(&json!({"a": 1.0}), &json!({"a": 1})));
        assert!(!contains(&json!({"a": 1.5}), &json!({"a": 1})));
        assert!(!contains(&json!({"a": "1"}), &json!({"a": 1})));
        assert!(!contains(&json!({"a": true}), &json!({"a": "true"})));
        assert!(!contains(&json!({"cpu": "0.5"}), &json!({"cpu": "500m"})));
        assert!(contains(&json!({"a": null}), &json!({})));
        assert!(contains(&json!({"a": null}), &json!({"a": null})));
        assert!(!contains(&json!({"a": null}), &json!({"a": 1})));
        assert!(!contains(&json!({"a": {}}), &json!({})));
        assert!(!contains(&json!([1]), &json!([1, 2])));
        assert!(!contains(&json!({"a": 1}), &json!({"a": [1]})));
        // 2^53 + 1 does not equal the float 2^53 even though f64 cannot tell them apart.
        assert!(!contains(
            &json!(9_007_199_254_740_993_u64),
            &json!(9_007_199_254_740_992.0)
        ));
    }

    #[test]
    fn null_creation_timestamp_is_ignored() {
        let (mut d, live) = configmap();
        d["metadata"]["creationTimestamp"] = Value::Null;
        let mut live = live;
        live["metadata"]["creationTimestamp"] = json!("2024-05-01T10:00:00Z");
        assert!(is_unchanged(&d, &live, TEND));
    }

    #[test]
    fn empty_metadata_maps_are_ignored() {
        let (mut d, mut live) = configmap();
        d["metadata"]["annotations"] = json!({});
        live["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:annotations"] = json!({});
        assert!(is_unchanged(&d, &live, TEND));
        // But an empty map elsewhere must match.
        d["data"]["nested"] = json!({});
        assert!(!is_unchanged(&d, &live, TEND));
    }

    #[test]
    fn terminating_object_is_not_unchanged() {
        let (d, mut live) = configmap();
        live["metadata"]["deletionTimestamp"] = json!("2024-05-01T10:00:00Z");
        assert!(!is_unchanged(&d, &live, TEND));
    }

    mod props {
        use super::super::contains;
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        fn leaf() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::from),
                (-1.0e6f64..1.0e6).prop_map(Value::from),
                "[a-z0-9]{0,6}".prop_map(Value::String),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(4, 48, 5, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::btree_map("[a-z]{1,4}", inner, 0..5)
                        .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
                ]
            })
        }

        fn object() -> impl Strategy<Value = Value> {
            prop::collection::btree_map("[a-z]{1,4}", value(), 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
        }

        /// Add a key (absent from `d`) to every map in `v`.
        fn add_keys(v: &mut Value, extra: &Value) {
            match v {
                Value::Object(m) => {
                    for child in m.values_mut() {
                        add_keys(child, extra);
                    }
                    m.insert("EXTRA".into(), extra.clone());
                }
                Value::Array(items) => items.iter_mut().for_each(|i| add_keys(i, extra)),
                _ => {}
            }
        }

        /// Pointers to every scalar leaf.
        fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    for (k, c) in m {
                        leaves(c, format!("{at}/{k}"), out);
                    }
                }
                Value::Array(items) => {
                    for (i, c) in items.iter().enumerate() {
                        leaves(c, format!("{at}/{i}"), out);
                    }
                }
                _ => out.push(at),
            }
        }

        fn changed(v: &Value) -> Value {
            match v {
                Value::Null => Value::String("x".into()),
                Value::Bool(b) => Value::Bool(!b),
                Value::String(s) => Value::String(format!("{s}x")),
                Value::Number(n) => match n.as_i64() {
                    Some(i) => Value::from(i.wrapping_add(1)),
                    None => Value::from(n.as_f64().unwrap_or(0.0) + 1.0),
                },
                other => other.clone(),
            }
        }

        proptest! {
            #[test]
            fn contains_itself(d in object()) {
                prop_assert!(contains(&d, &d));
            }

            #[test]
            fn extra_live_keys_keep_contains(d in object(), extra in value()) {
                let mut live = d.clone();
                add_keys(&mut live, &extra);
                prop_assert!(contains(&d, &live));
            }

            #[test]
            fn changed_leaf_breaks_contains(d in object(), pick in any::<prop::sample::Index>()) {
                let mut paths = Vec::new();
                leaves(&d, String::new(), &mut paths);
                prop_assume!(!paths.is_empty());
                let path = &paths[pick.index(paths.len())];
                let mut live = d.clone();
                let leaf = live.pointer_mut(path).unwrap();
                *leaf = changed(leaf);
                prop_assert!(!contains(&d, &live), "{} {}", path, live);
            }
        }
    }
}
