//! Validation of updates that kube-apiserver's registry strategies apply: immutable fields
//! (a Job's pod template and selector, workload selectors, immutable ConfigMaps and
//! Secrets), the Job status transitions it accepts (pkg/apis/batch/validation with the
//! JobManagedBy options, on by default since 1.32) and consistent Deployment status counts.

use super::*;

/// A cause: (field path, cause reason, message after the path).
type Cause = (&'static str, &'static str, String);

/// Go's `%#v` of a `metav1.LabelSelector`, as field errors print a changed selector.
fn go_selector(v: Option<&Value>) -> String {
    let Some(sel) = v.filter(|v| v.is_object()) else {
        return "null".into();
    };
    let labels = match sel.get("matchLabels").and_then(Value::as_object) {
        // serde_json's maps keep insertion order; Go prints map keys sorted.
        Some(m) => {
            let mut pairs: Vec<(&String, &Value)> = m.iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or("")))
                .collect();
            format!("map[string]string{{{}}}", inner.join(", "))
        }
        None => "map[string]string(nil)".into(),
    };
    let exprs = match sel.get("matchExpressions").and_then(Value::as_array) {
        Some(a) => {
            let inner: Vec<String> = a
                .iter()
                .map(|e| {
                    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    let values: Vec<String> = e
                        .get("values")
                        .and_then(Value::as_array)
                        .map(|vs| vs.iter().map(|v| format!("{:?}", v.as_str().unwrap_or(""))).collect())
                        .unwrap_or_default();
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{:?}, Operator:{:?}, Values:[]string{{{}}}}}",
                        s("key"),
                        s("operator"),
                        values.join(", ")
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", inner.join(", "))
        }
        None => "[]v1.LabelSelectorRequirement(nil)".into(),
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{exprs}}}")
}

/// A metav1.Time as Go's `time.Time.String()` prints it.
fn go_time(v: &Value) -> String {
    v.as_str()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string())
        .unwrap_or_else(|| v.to_string())
}

fn immutable(field: &'static str, value: String) -> Cause {
    (
        field,
        "FieldValueInvalid",
        format!("Invalid value: {value}: field is immutable"),
    )
}

fn immutable_causes(def: &ResourceDef, old: &Value, new: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let changed = |p: &str| old.pointer(p) != new.pointer(p);
    match def.plural.as_str() {
        "jobs" => {
            if changed("/spec/selector") {
                causes.push(immutable(
                    "spec.selector",
                    go_selector(new.pointer("/spec/selector")),
                ));
            }
            // kube-apiserver 1.36 refuses a changed pod spec at `spec.template.spec` (the
            // value is the new pod spec); a change to the template's metadata alone is still
            // refused at `spec.template`, as before.
            if changed("/spec/template/spec") {
                let t = new
                    .pointer("/spec/template/spec")
                    .cloned()
                    .unwrap_or(Value::Null);
                causes.push(immutable("spec.template.spec", t.to_string()));
            } else if changed("/spec/template") {
                let t = new
                    .pointer("/spec/template")
                    .cloned()
                    .unwrap_or(Value::Null);
                causes.push(immutable("spec.template", t.to_string()));
            }
            if changed("/spec/completionMode") {
                let m = new
                    .pointer("/spec/completionMode")
                    .cloned()
                    .unwrap_or(Value::Null);
                causes.push(immutable("spec.completionMode", m.to_string()));
            }
        }
        "deployments" | "replicasets" | "daemonsets" if changed("/spec/selector") => {
            causes.push(immutable(
                "spec.selector",
                go_selector(new.pointer("/spec/selector")),
            ));
        }
        "configmaps" | "secrets" if old.get("immutable") == Some(&json!(true)) => {
            let msg = "Forbidden: field is immutable when `immutable` is set".to_string();
            if new.get("immutable") != Some(&json!(true)) {
                causes.push(("immutable", "FieldValueForbidden", msg.clone()));
            }
            if changed("/data") {
                causes.push(("data", "FieldValueForbidden", msg.clone()));
            }
            if changed("/binaryData") && def.plural == "configmaps" {
                causes.push(("binaryData", "FieldValueForbidden", msg));
            }
        }
        _ => {}
    }
    causes
}

fn condition_true(obj: &Value, ty: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type") == Some(&json!(ty)) && c.get("status") == Some(&json!("True"))
            })
        })
}

/// validateJobStatus and ValidateJobStatusUpdate with the options kube-apiserver's Job
/// strategy sets: most rules only fire when the fields they look at change, so a status
/// write that leaves them alone is not refused for an older violation.
fn job_status_causes(old: &Value, new: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let st = |v: &Value, k: &str| v.pointer(&format!("/status/{k}")).cloned();
    let num = |v: &Value, k: &str| st(v, k).and_then(|x| x.as_i64()).unwrap_or(0);
    let (complete, old_complete) = (
        condition_true(new, "Complete"),
        condition_true(old, "Complete"),
    );
    let (failed, old_failed) = (condition_true(new, "Failed"), condition_true(old, "Failed"));
    let failure_target = condition_true(new, "FailureTarget");
    let finished = complete || failed;
    let finished_changed = finished != (old_complete || old_failed);
    let complete_changed = complete != old_complete;
    let failed_changed = failed != old_failed;
    let completion_changed = st(old, "completionTime") != st(new, "completionTime");
    let start_changed = st(old, "startTime") != st(new, "startTime");
    let invalid = |m: &str| format!("Invalid value: {m}");
    if (complete_changed || failed_changed) && complete && failed {
        causes.push((
            "status.conditions",
            "FieldValueInvalid",
            invalid("cannot set Complete=True and Failed=true conditions"),
        ));
    }
    if complete_changed && complete && !condition_true(new, "SuccessCriteriaMet") {
        causes.push((
            "status.conditions",
            "FieldValueInvalid",
            invalid(
                "cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
            ),
        ));
    }
    if failed_changed && failed && !failure_target {
        causes.push((
            "status.conditions",
            "FieldValueInvalid",
            invalid("cannot set Failed=True condition without the FailureTarget=true condition"),
        ));
    }
    if complete_changed || completion_changed {
        match st(new, "completionTime").filter(|t| !t.is_null()) {
            Some(t) if !complete => causes.push((
                "status.completionTime",
                "FieldValueInvalid",
                format!("Invalid value: \"{}\": cannot set completionTime when there is no Complete=True condition", go_time(&t)),
            )),
            None if complete => causes.push((
                "status.completionTime",
                "FieldValueRequired",
                "Required value: completionTime is required for Complete jobs".into(),
            )),
            _ => {}
        }
    }
    if (finished_changed || start_changed)
        && finished
        && st(new, "startTime").is_none_or(|t| t.is_null())
    {
        causes.push((
            "status.startTime",
            "FieldValueRequired",
            "Required value: startTime is required for finished job".into(),
        ));
    }
    if (finished_changed || num(old, "active") != num(new, "active"))
        && finished
        && num(new, "active") > 0
    {
        causes.push((
            "status.active",
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: active>0 is invalid for finished job",
                num(new, "active")
            ),
        ));
    }
    for ty in ["Failed", "Complete", "FailureTarget"] {
        if condition_true(old, ty) && !condition_true(new, ty) {
            causes.push((
                "status.conditions",
                "FieldValueInvalid",
                invalid(&format!("cannot disable the terminal {ty}=True condition")),
            ));
        }
    }
    for (k, field) in [
        ("failed", "status.failed"),
        ("succeeded", "status.succeeded"),
    ] {
        if num(new, k) < num(old, k) {
            causes.push((
                field,
                "FieldValueInvalid",
                format!(
                    "Invalid value: {}: cannot decrease the {k} counter",
                    num(new, k)
                ),
            ));
        }
    }
    causes
}

/// ValidateDeploymentStatus: counts are non-negative and consistent with each other.
fn deployment_status_causes(new: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let num = |k: &str| new.pointer(&format!("/status/{k}")).and_then(Value::as_i64);
    for (k, field) in [
        ("observedGeneration", "status.observedGeneration"),
        ("replicas", "status.replicas"),
        ("updatedReplicas", "status.updatedReplicas"),
        ("readyReplicas", "status.readyReplicas"),
        ("availableReplicas", "status.availableReplicas"),
        ("unavailableReplicas", "status.unavailableReplicas"),
        ("collisionCount", "status.collisionCount"),
    ] {
        if let Some(n) = num(k).filter(|n| *n < 0) {
            causes.push((
                field,
                "FieldValueInvalid",
                format!("Invalid value: {n}: must be greater than or equal to 0"),
            ));
        }
    }
    let replicas = num("replicas").unwrap_or(0);
    for (k, field) in [
        ("updatedReplicas", "status.updatedReplicas"),
        ("readyReplicas", "status.readyReplicas"),
        ("availableReplicas", "status.availableReplicas"),
    ] {
        if let Some(n) = num(k).filter(|n| *n > replicas) {
            causes.push((
                field,
                "FieldValueInvalid",
                format!("Invalid value: {n}: cannot be greater than status.replicas"),
            ));
        }
    }
    let available = num("availableReplicas").unwrap_or(0);
    if available > num("readyReplicas").unwrap_or(0) {
        causes.push((
            "status.availableReplicas",
            "FieldValueInvalid",
            format!("Invalid value: {available}: cannot be greater than readyReplicas"),
        ));
    }
    causes
}

/// The causes kube-apiserver would refuse this update with (422), if any.
pub(super) fn validate_update(def: &ResourceDef, old: &Value, new: &Value) -> Result<(), ApiError> {
    if def.crd.is_some() {
        return Ok(());
    }
    let mut causes = immutable_causes(def, old, new);
    if def.plural == "jobs" {
        causes.extend(job_status_causes(old, new));
    }
    if def.plural == "deployments" && old.get("status") != new.get("status") {
        causes.extend(deployment_status_causes(new));
    }
    if causes.is_empty() {
        return Ok(());
    }
    let name = meta_str(old, "name").unwrap_or("");
    Err(ApiError::invalid(&def.group, &def.kind, name, &causes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_print_like_go() {
        assert_eq!(
            go_selector(Some(&json!({"matchLabels": {"b": "2", "a": "1"}}))),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"a":"1", "b":"2"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        );
    }

    #[test]
    fn job_completion_needs_success_criteria_and_times() {
        let old = json!({"status": {}});
        let new = json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        let msgs: Vec<String> = job_status_causes(&old, &new)
            .into_iter()
            .map(|(f, _, m)| format!("{f}: {m}"))
            .collect();
        assert!(
            msgs.iter()
                .any(|m| m.contains("without the SuccessCriteriaMet=true")),
            "{msgs:?}"
        );
        assert!(
            msgs.iter()
                .any(|m| m.starts_with("status.completionTime: Required")),
            "{msgs:?}"
        );
        assert!(
            msgs.iter()
                .any(|m| m.starts_with("status.startTime: Required")),
            "{msgs:?}"
        );
        let ok = json!({"status": {"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:00Z",
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}});
        assert!(job_status_causes(&old, &ok).is_empty());
    }
}
