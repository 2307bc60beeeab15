//! Normalization of live objects and dry-run results before they are compared or diffed:
//! the fields the API server owns (README "Reconcile (diff and apply)") say nothing about whether git and the cluster
//! agree, and would make every diff noisy.

use serde_json::{Map, Value};

/// `metadata` fields written by the API server, never by tend.
const SERVER_METADATA: &[&str] = &[
    "managedFields",
    "resourceVersion",
    "uid",
    "generation",
    "creationTimestamp",
    "selfLink",
];

/// kubectl's client-side-apply bookkeeping; it embeds a full copy of the object (for a
/// Secret: its values) and is not part of the desired state.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A copy of `obj` without server-managed fields: `metadata.{managedFields, resourceVersion,
/// uid, generation, creationTimestamp, selfLink}`, `status`, the last-applied annotation, and
/// `metadata.labels`/`metadata.annotations` when that leaves them empty. Nothing else is
/// touched, so a field the desired object sets is never dropped.
pub fn normalize(obj: &Value) -> Value {
    let mut out = obj.clone();
    let Some(map) = out.as_object_mut() else {
        return out;
    };
    map.shift_remove("status");
    if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in SERVER_METADATA {
            meta.shift_remove(*field);
        }
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.shift_remove(LAST_APPLIED);
        }
        for field in ["annotations", "labels"] {
            if is_empty_or_null(meta.get(field)) {
                meta.shift_remove(field);
            }
        }
    }
    out
}

/// An empty map or `null` (what an empty `labels:` in YAML parses to).
fn is_empty_or_null(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Null) => true,
        _ => false,
    }
}

/// A copy of `v` with every map's keys sorted, recursively (list order is kept: it is
/// meaningful). Gives diffs a stable order whatever order the server or the YAML used.
pub fn sort_keys(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(map.len());
            for k in keys {
                if let Some(child) = map.get(k) {
                    out.insert(k.clone(), sort_keys(child));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drops_server_fields_only() {
        let live = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "app", "namespace": "web",
                "uid": "1234", "resourceVersion": "42", "generation": 3,
                "creationTimestamp": "2024-01-01T00:00:00Z", "selfLink": "/api/v1/x",
                "managedFields": [{"manager": "tend"}],
                "labels": {"app": "web"},
                "annotations": {LAST_APPLIED: "{}"},
            },
            "data": {"status": "kept", "uid": "kept"},
            "status": {"phase": "x"},
        });
        let n = normalize(&live);
        assert_eq!(
            n,
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "app", "namespace": "web", "labels": {"app": "web"}},
                "data": {"status": "kept", "uid": "kept"},
            })
        );
    }

    #[test]
    fn keeps_desired_fields() {
        let desired = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "n", "labels": {"a": "b"}, "annotations": {"x": "y"}, "finalizers": ["f"]},
            "spec": {"replicas": 2, "template": {"metadata": {"labels": {}}}},
        });
        assert_eq!(normalize(&desired), desired);
    }

    #[test]
    fn non_objects_pass_through() {
        assert_eq!(normalize(&json!([1, 2])), json!([1, 2]));
        assert_eq!(normalize(&Value::Null), Value::Null);
    }

    #[test]
    fn sort_keys_is_recursive_and_keeps_lists() {
        let v = json!({"b": 1, "a": {"d": [ {"z": 1, "y": 2}, 3 ], "c": 2}});
        let s = sort_keys(&v);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"a":{"c":2,"d":[{"y":2,"z":1},3]},"b":1}"#
        );
    }
}
