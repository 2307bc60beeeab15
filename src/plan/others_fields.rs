//! `tend.dev/ignore-fields-of: MANAGER[,MANAGER...]` (README "Per-object policies"): the
//! fields those field managers own in the live object, where the desired object sets them to
//! another value, are taken out of the desired object before it is compared and applied, so
//! tend neither reports nor overwrites them (an autoscaler's `spec.replicas`, a webhook's
//! injected fields). Argo CD's `ignoreDifferences[].managedFieldsManagers` is this policy
//! (argo-cd `util/argo/managedfields/managed_fields.go`: the managers' fields that the
//! comparison finds modified are removed). Pure: the live object is handed in.

use serde_json::{Map, Value};

/// The annotation naming the managers.
pub const ANNOTATION: &str = "tend.dev/ignore-fields-of";

/// The managers `desired` names, if any.
pub fn managers(desired: &Value) -> Vec<&str> {
    crate::object::at(desired, &["metadata", "annotations"])
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str)
        .map(|text| {
            text.split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// `desired` without the fields the managers it names own in `live` and it sets otherwise;
/// `None` when that is nothing.
pub fn without_others_fields(desired: &Value, live: &Value) -> Option<Value> {
    let managers = managers(desired);
    if managers.is_empty() {
        return None;
    }
    let mut out = desired.clone();
    let mut changed = false;
    for entry in crate::object::at(live, &["metadata", "managedFields"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let manager = entry.get("manager").and_then(Value::as_str).unwrap_or("");
        // The status subresource's fields are never desired.
        let is_status = entry.get("subresource").and_then(Value::as_str) == Some("status");
        if !managers.contains(&manager) || is_status {
            continue;
        }
        if let Some(fields) = entry.get("fieldsV1").and_then(Value::as_object) {
            changed |= strip(&mut out, Some(live), fields);
        }
    }
    changed.then_some(out)
}

/// Remove from `desired` the leaves of `fields` (a `fieldsV1` set) whose value differs from
/// `live`'s. Returns whether anything was removed.
fn strip(desired: &mut Value, live: Option<&Value>, fields: &Map<String, Value>) -> bool {
    let mut changed = false;
    for (key, sub) in fields {
        let Some(sub) = sub.as_object() else {
            continue;
        };
        // `.` alone: the manager owns that the field exists, not its content.
        let leaf = sub.is_empty();
        if let Some(name) = key.strip_prefix("f:") {
            let Some(map) = desired.as_object_mut() else {
                continue;
            };
            let live_child = live.and_then(|l| l.get(name));
            if leaf {
                if map.get(name).is_some_and(|d| Some(d) != live_child) {
                    map.shift_remove(name);
                    changed = true;
                }
            } else if let Some(child) = map.get_mut(name) {
                changed |= strip(child, live_child, sub);
            }
        } else if let Some(item_key) = key.strip_prefix("k:") {
            let Ok(Value::Object(item_key)) = serde_json::from_str::<Value>(item_key) else {
                continue;
            };
            let Some(items) = desired.as_array_mut() else {
                continue;
            };
            let matches = |item: &Value| {
                item_key
                    .iter()
                    .all(|(k, want)| item.get(k).is_some_and(|got| got == want))
            };
            let live_item = live
                .and_then(Value::as_array)
                .and_then(|l| l.iter().find(|i| matches(i)));
            if let Some(item) = items.iter_mut().find(|i| matches(i)) {
                if !leaf {
                    changed |= strip(item, live_item, sub);
                }
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_the_named_managers_own_and_git_sets_otherwise_are_left_to_them() {
        let desired = json!({
            "metadata": {"name": "web", "annotations": {ANNOTATION: "kube-controller-manager, injector"}},
            "spec": {"replicas": 2, "paused": false, "template": {"spec": {"containers": [
                {"name": "app", "image": "app:1"},
                {"name": "proxy", "image": "proxy:1"},
            ]}}},
        });
        let live = json!({
            "metadata": {"name": "web", "managedFields": [
                {"manager": "tend", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
                {"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}},
                {"manager": "injector", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"proxy\"}": {".": {}, "f:image": {}},
                }}}}}},
                {"manager": "kube-controller-manager", "subresource": "status", "fieldsV1": {"f:spec": {"f:template": {}}}},
            ]},
            "spec": {"replicas": 5, "paused": false, "template": {"spec": {"containers": [
                {"name": "app", "image": "app:1"},
                {"name": "proxy", "image": "proxy:2"},
            ]}}},
        });
        let stripped = without_others_fields(&desired, &live).expect("changed");
        // replicas differ: left to the controller; paused is the same: still tend's.
        assert_eq!(stripped["spec"].get("replicas"), None);
        assert_eq!(stripped["spec"]["paused"], false);
        assert_eq!(
            stripped["spec"]["template"]["spec"]["containers"],
            json!([{"name": "app", "image": "app:1"}, {"name": "proxy"}])
        );
        // No managers named, or none of theirs differs: nothing to do.
        let mut plain = desired.clone();
        plain["metadata"]["annotations"] = json!({});
        assert_eq!(without_others_fields(&plain, &live), None);
        assert_eq!(without_others_fields(&desired, &desired), None);
    }
}
