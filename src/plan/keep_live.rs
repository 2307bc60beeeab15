//! `tend.dev/keep-live-at: '["/spec/replicas"]'` (README "Per-object policies"): where the
//! object exists, the values at these JSON pointers are the live object's (left out where it
//! has none), so tend neither reports nor changes them; a new object is created with git's.
//! Flux's Kustomization `spec.ignore` is this policy (fluxcd/pkg `ssa` `computeDriftedPaths`:
//! an ignored field that differs takes the in-cluster value, or is left to the apply manager
//! that owns it, which comes to the same object). Pure: the live object is handed in.

use serde_json::Value;

pub use crate::render::policy::KEEP_LIVE_ANNOTATION as ANNOTATION;

/// The pointers `desired` names, if any (render refuses a value that is not a list of them).
pub fn pointers(desired: &Value) -> Vec<String> {
    crate::object::at(desired, &["metadata", "annotations"])
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok())
        .unwrap_or_default()
}

/// `desired` with the live values at the pointers it names; `None` when that changes
/// nothing.
pub fn with_live_values(desired: &Value, live: &Value) -> Option<Value> {
    let pointers = pointers(desired);
    if pointers.is_empty() {
        return None;
    }
    let mut out = desired.clone();
    for pointer in &pointers {
        let wanted = live.pointer(pointer);
        if out.pointer(pointer) == wanted {
            continue;
        }
        match wanted {
            Some(value) => set(&mut out, pointer, value.clone()),
            None => remove(&mut out, pointer),
        }
    }
    (out != *desired).then_some(out)
}

/// The unescaped tokens of a JSON pointer and the parent's pointer.
fn split(pointer: &str) -> Option<(&str, String)> {
    let (parent, last) = pointer.rsplit_once('/')?;
    Some((parent, last.replace("~1", "/").replace("~0", "~")))
}

/// Set the value at `pointer`, making the objects on the way; a list index must exist.
fn set(object: &mut Value, pointer: &str, value: Value) {
    let Some((parent, last)) = split(pointer) else {
        return;
    };
    if object.pointer(parent).is_none() {
        set(object, parent, Value::Object(Default::default()));
    }
    match object.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(last, value);
        }
        Some(Value::Array(items)) => {
            if let Some(item) = last.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                *item = value;
            }
        }
        _ => {}
    }
}

fn remove(object: &mut Value, pointer: &str) {
    let Some((parent, last)) = split(pointer) else {
        return;
    };
    match object.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                items.remove(i);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn desired(replicas: i64) -> Value {
        json!({"metadata": {"name": "web", "annotations": {ANNOTATION: "[\"/spec/replicas\", \"/metadata/labels/team~1owner\"]"}},
               "spec": {"replicas": replicas, "paused": false}})
    }

    #[test]
    fn live_values_replace_desired_ones_at_the_pointers() {
        let live = json!({"metadata": {"name": "web", "labels": {"team/owner": "ops"}},
                          "spec": {"replicas": 5, "paused": true}});
        let kept = with_live_values(&desired(2), &live).unwrap();
        assert_eq!(kept["spec"], json!({"replicas": 5, "paused": false}));
        assert_eq!(kept["metadata"]["labels"]["team/owner"], "ops");
        // A field the live object lacks is left out, so tend does not set it.
        let bare = json!({"metadata": {"name": "web"}, "spec": {}});
        let kept = with_live_values(&desired(2), &bare).unwrap();
        assert_eq!(kept["spec"], json!({"paused": false}));
        // Already the same: nothing to do.
        let same = json!({"spec": {"replicas": 2}});
        let desired = json!({"metadata": {"annotations": {ANNOTATION: "[\"/spec/replicas\"]"}}, "spec": {"replicas": 2}});
        assert_eq!(with_live_values(&desired, &same), None);
    }
}
