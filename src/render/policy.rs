//! Per-object policies (README "Per-object policies"): annotations in git that change how tend writes one object.
//! Checked here, while rendering, so an unknown value stops the run before any write; read by
//! the planner and the apply stage.

use serde_json::Value;

/// `tend.dev/apply: if-not-present`: create the object when it is missing, never update it
/// (Secrets and webhook configurations that something else fills in at run time).
pub const APPLY_ANNOTATION: &str = "tend.dev/apply";
pub const IF_NOT_PRESENT: &str = "if-not-present";
/// `tend.dev/replace: on-immutable`: delete and create the object again when the API refuses
/// an update as immutable.
pub const REPLACE_ANNOTATION: &str = "tend.dev/replace";
pub const ON_IMMUTABLE: &str = "on-immutable";

/// `tend.dev/keep-live-at: '["/spec/replicas"]'`: JSON pointers whose values tend takes
/// from the live object, where it exists (`plan::keep_live`).
pub const KEEP_LIVE_ANNOTATION: &str = "tend.dev/keep-live-at";

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// Whether the object is annotated `tend.dev/apply: if-not-present`.
pub fn if_not_present(object: &Value) -> bool {
    annotation(object, APPLY_ANNOTATION) == Some(IF_NOT_PRESENT)
}

/// Why the object is replaced when the API refuses an update as immutable, if it is: its
/// annotation, or being a Job (a Job's pod template can never change, and tend's config hash
/// changes it whenever a mounted ConfigMap changes).
pub fn replace_on_immutable(object: &Value) -> Option<&'static str> {
    if annotation(object, REPLACE_ANNOTATION) == Some(ON_IMMUTABLE) {
        return Some("tend.dev/replace: on-immutable");
    }
    let is_job = object.get("kind").and_then(Value::as_str) == Some("Job")
        && object
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("batch/"));
    is_job.then_some("a Job is replaced when its pod template changes")
}

/// The problem with one annotation's value, if it is a policy annotation with a value tend
/// does not know.
pub fn value_problem(key: &str, value: &str) -> Option<String> {
    if key == KEEP_LIVE_ANNOTATION {
        let pointers = serde_json::from_str::<Vec<String>>(value);
        let valid = pointers.is_ok_and(|list| list.iter().all(|p| p.starts_with('/')));
        return (!valid).then(|| {
            format!("metadata.annotations.{key}: {value:?} is not a JSON list of JSON pointers; write e.g. '[\"/spec/replicas\"]'")
        });
    }
    let known = match key {
        APPLY_ANNOTATION => IF_NOT_PRESENT,
        REPLACE_ANNOTATION => ON_IMMUTABLE,
        _ => return None,
    };
    (value != known).then(|| {
        format!("metadata.annotations.{key}: unknown value {value:?}; the only value is {known:?}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn annotated(kind: &str, key: &str, value: &str) -> Value {
        json!({"apiVersion": if kind == "Job" { "batch/v1" } else { "v1" }, "kind": kind,
               "metadata": {"name": "x", "annotations": {key: value}}})
    }

    #[test]
    fn policies_from_annotations() {
        assert!(if_not_present(&annotated(
            "Secret",
            APPLY_ANNOTATION,
            IF_NOT_PRESENT
        )));
        assert!(!if_not_present(&annotated(
            "Secret",
            "other",
            IF_NOT_PRESENT
        )));
        assert!(
            replace_on_immutable(&annotated("Service", REPLACE_ANNOTATION, ON_IMMUTABLE)).is_some()
        );
        assert!(replace_on_immutable(&annotated("Service", "other", "x")).is_none());
        // Jobs by default.
        assert!(replace_on_immutable(&annotated("Job", "other", "x")).is_some());
    }

    #[test]
    fn keep_live_at_takes_a_list_of_pointers() {
        let key = KEEP_LIVE_ANNOTATION;
        assert_eq!(value_problem(key, "[\"/spec/replicas\"]"), None);
        assert!(value_problem(key, "/spec/replicas").is_some());
        assert!(value_problem(key, "[\"spec/replicas\"]").is_some());
    }

    #[test]
    fn unknown_values_are_problems() {
        assert_eq!(value_problem(APPLY_ANNOTATION, IF_NOT_PRESENT), None);
        assert_eq!(value_problem(REPLACE_ANNOTATION, ON_IMMUTABLE), None);
        assert_eq!(value_problem("tend.dev/other", "x"), None);
        let p = value_problem(APPLY_ANNOTATION, "always").unwrap();
        assert!(
            p.contains("unknown value \"always\"") && p.contains("if-not-present"),
            "{p}"
        );
    }
}
