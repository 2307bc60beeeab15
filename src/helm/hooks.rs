//! Helm's hooks (`helm.sh/hook`, `helm.sh/hook-weight`, `helm.sh/hook-delete-policy`) as a
//! GitOps run can honour them. Every tend run is an install or an upgrade, so
//! `pre-install`/`pre-upgrade` run before the run's changes and `post-install`/`post-upgrade`
//! after them; tests, deletion and rollback hooks never run (there is no `helm test`,
//! `uninstall` or `rollback` in tend). The render stage turns the classification into tend's
//! own hook annotations.

use serde_json::Value;

pub const HOOK: &str = "helm.sh/hook";
pub const HOOK_WEIGHT: &str = "helm.sh/hook-weight";
pub const HOOK_DELETE_POLICY: &str = "helm.sh/hook-delete-policy";
/// `keep`: Helm never deletes the object (on upgrade or uninstall).
pub const RESOURCE_POLICY: &str = "helm.sh/resource-policy";

/// When a hook object takes part in a tend run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// `pre-install`/`pre-upgrade` (also when it is a post hook too: it must exist before
    /// the pre hooks that use it).
    Before,
    /// `post-install`/`post-upgrade` only.
    After,
}

/// What a `helm.sh/hook` object becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hook {
    /// Not a hook: rendered as it is.
    None,
    /// Never part of a tend run: a chart test, or only a delete or rollback hook. The reason
    /// names the hook events.
    LeftOut(String),
    /// A Job or Pod run as a tend hook.
    Run {
        when: When,
        /// `helm.sh/hook-weight`: order among hooks of the same phase (ascending).
        weight: i64,
        /// `hook-succeeded` in the delete policy.
        delete_on_success: bool,
    },
    /// Any other kind (ServiceAccounts, RBAC, Secrets that hook Jobs use): applied as an
    /// ordinary object, before the pre hooks run when it is a pre hook.
    Apply { when: When },
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .get("metadata")?
        .get("annotations")?
        .get(key)?
        .as_str()
}

/// The hook events of an object (`pre-install`, `test`, ...), if it is a hook.
pub fn events(object: &Value) -> Option<Vec<&str>> {
    annotation(object, HOOK).map(|h| {
        h.split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect()
    })
}

/// Whether an object is a chart test (`test`, or Helm 2's `test-success` that Helm 3 still
/// runs as one).
pub fn is_test(object: &Value) -> bool {
    events(object).is_some_and(|e| e.iter().any(|e| matches!(*e, "test" | "test-success")))
}

/// How tend treats the object, following Helm's annotations.
pub fn classify(object: &Value) -> Hook {
    let Some(events) = events(object) else {
        return Hook::None;
    };
    if is_test(object) {
        return Hook::LeftOut(format!("a chart test ({})", events.join(",")));
    }
    let before = events
        .iter()
        .any(|e| matches!(*e, "pre-install" | "pre-upgrade"));
    let after = events
        .iter()
        .any(|e| matches!(*e, "post-install" | "post-upgrade"));
    let when = match (before, after) {
        (true, _) => When::Before,
        (false, true) => When::After,
        (false, false) => {
            return Hook::LeftOut(format!(
                "a {} hook, which a GitOps run never triggers",
                events.join(",")
            ))
        }
    };
    let api = object.get("apiVersion").and_then(Value::as_str);
    let runs = match object.get("kind").and_then(Value::as_str) {
        Some("Job") => api.is_some_and(|v| v.starts_with("batch/")),
        Some("Pod") => api == Some("v1"),
        _ => false,
    };
    if !runs {
        return Hook::Apply { when };
    }
    let weight = annotation(object, HOOK_WEIGHT)
        .and_then(|w| w.trim().parse().ok())
        .unwrap_or(0);
    let delete_on_success = annotation(object, HOOK_DELETE_POLICY)
        .is_some_and(|p| p.split(',').any(|p| p.trim() == "hook-succeeded"));
    Hook::Run {
        when,
        weight,
        delete_on_success,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(kind: &str, annotations: Value) -> Value {
        let api = if kind == "Job" { "batch/v1" } else { "v1" };
        json!({"apiVersion": api, "kind": kind, "metadata": {"name": "x", "annotations": annotations}})
    }

    #[test]
    fn helm_hooks_as_tend_runs_them() {
        assert_eq!(classify(&object("Job", json!({}))), Hook::None);
        assert_eq!(
            classify(&object(
                "Job",
                json!({HOOK: "pre-install,pre-upgrade", HOOK_WEIGHT: "-5",
                       HOOK_DELETE_POLICY: "before-hook-creation,hook-succeeded"})
            )),
            Hook::Run {
                when: When::Before,
                weight: -5,
                delete_on_success: true
            }
        );
        assert_eq!(
            classify(&object("Pod", json!({HOOK: "post-upgrade"}))),
            Hook::Run {
                when: When::After,
                weight: 0,
                delete_on_success: false
            }
        );
        assert_eq!(
            classify(&object(
                "ServiceAccount",
                json!({HOOK: "pre-install,pre-upgrade,post-install,post-upgrade"})
            )),
            Hook::Apply { when: When::Before }
        );
        assert!(matches!(
            classify(&object("Job", json!({HOOK: "pre-delete"}))),
            Hook::LeftOut(why) if why.contains("pre-delete")
        ));
        assert!(matches!(
            classify(&object("Pod", json!({HOOK: "test-success"}))),
            Hook::LeftOut(why) if why.contains("chart test")
        ));
    }
}
