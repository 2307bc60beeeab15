//! Shared report fixtures for the format tests: one change of each action, a Secret with
//! canary values that must never be printed.

use super::run::{Mode, Outcome, RunReport};
use crate::object::{ObjectKey, Origin};
use crate::plan::drift::Drift;
use crate::plan::{Action, Change};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

pub(crate) const CANARY: &str = "canary-hunter2";
pub(crate) const CANARY_B64: &str = "Y2FuYXJ5LWh1bnRlcjI="; // base64("canary-hunter2")

pub(crate) fn key(group: &str, kind: &str, ns: Option<&str>, name: &str) -> ObjectKey {
    ObjectKey {
        group: group.into(),
        kind: kind.into(),
        namespace: ns.map(str::to_string),
        name: name.into(),
    }
}

pub(crate) fn origin(file: &str, line: usize, by: Option<&str>) -> Option<Origin> {
    Some(Origin {
        file: PathBuf::from(file),
        line,
        generated_by: by
            .map(|owner| key(crate::GROUP, "RegistryMirror", Some("registries"), owner)),
        sealed: Vec::new(),
    })
}

pub(crate) fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "web"}, "data": data})
}

pub(crate) fn secret(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": "db", "namespace": "web"}, "data": data})
}

pub(crate) fn deployment(image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "nginx", "namespace": "web"},
           "spec": {"replicas": 2, "template": {"spec": {"containers": [
               {"name": "nginx", "image": image}]}}}})
}

pub(crate) fn changes() -> Vec<Change> {
    vec![
        Change {
            key: key("", "ConfigMap", Some("web"), "app"),
            api_version: "v1".into(),
            action: Action::Create,
            origin: origin("web/app.yaml", 1, None),
            before: None,
            after: Some(cm("app", json!({"mode": "a|b `x`"}))),
            reason: None,
            drift: vec![],
        },
        Change {
            key: key("apps", "Deployment", Some("web"), "nginx"),
            api_version: "apps/v1".into(),
            action: Action::Update,
            origin: origin("web/nginx.yaml", 12, None),
            before: Some(deployment("nginx:1.27")),
            after: Some(deployment("nginx:1.28")),
            reason: None,
            drift: vec![Drift {
                path: "spec.template.spec.containers[0].image".into(),
                before: Some("nginx:1.27".into()),
                after: Some("nginx:1.28".into()),
                manager: "kubectl-set".into(),
                time: Some("2026-11-23T21:40:00Z".into()),
            }],
        },
        Change {
            key: key("", "Secret", Some("web"), "db"),
            api_version: "v1".into(),
            action: Action::Update,
            origin: origin("web/db.yaml", 3, None),
            before: Some(secret(json!({"pw": "b2xk"}))),
            after: Some(secret(json!({"pw": CANARY_B64, "raw": CANARY}))),
            reason: None,
            drift: vec![],
        },
        Change {
            key: key("", "ConfigMap", Some("web"), "mirror"),
            api_version: "v1".into(),
            action: Action::Unchanged,
            origin: origin("registries/mirrors.yaml", 4, Some("dockerhub")),
            before: Some(cm("mirror", json!({"a": "1"}))),
            after: Some(cm("mirror", json!({"a": "1"}))),
            reason: None,
            drift: vec![],
        },
        Change {
            key: key("", "Secret", Some("web"), "same"),
            api_version: "v1".into(),
            action: Action::Unchanged,
            origin: origin("web/same.yaml", 1, None),
            before: Some(secret(json!({"pw": CANARY_B64}))),
            after: Some(secret(json!({"pw": CANARY_B64}))),
            reason: None,
            drift: vec![],
        },
        Change {
            key: key("", "ConfigMap", Some("web"), "old"),
            api_version: "v1".into(),
            action: Action::Prune,
            origin: None,
            before: Some(cm("old", json!({"x": "y"}))),
            after: None,
            reason: None,
            drift: vec![],
        },
        Change {
            key: key("", "Namespace", None, "legacy"),
            api_version: "v1".into(),
            action: Action::Prune,
            origin: None,
            before: Some(json!({"apiVersion": "v1", "kind": "Namespace",
                                "metadata": {"name": "legacy"}})),
            after: None,
            reason: None,
            drift: vec![],
        },
    ]
}

pub(crate) fn diff_report() -> RunReport {
    RunReport {
        command: Mode::Diff,
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        cluster: Some("dc1".into()),
        dry_run: false,
        changes: changes(),
        outcomes: Default::default(),
        waits: Default::default(),
        errors: vec![],
        duration: Duration::from_millis(1234),
        ..RunReport::default()
    }
}

/// An apply that stopped at wave 0: a pre-apply hook failed (with its log).
pub(crate) fn waves_report() -> RunReport {
    use crate::report::run::{HookRun, HookState, Phase};
    let mut r = apply_report();
    for (i, c) in r.changes.iter().enumerate() {
        r.waves.insert(c.key.clone(), if i == 0 { -1 } else { 0 });
    }
    r.hooks.push(HookRun {
        key: key("batch", "Job", Some("web"), "migrate"),
        phase: Phase::PreApply,
        wave: 0,
        state: HookState::Failed,
        error: Some("BackoffLimitExceeded: Job has reached the specified backoff limit".into()),
        log: vec!["migrating".into(), "error: relation exists".into()],
    });
    r.hooks.push(HookRun {
        key: key("batch", "Job", Some("web"), "smoke"),
        phase: Phase::PostApply,
        wave: 0,
        state: HookState::NotRun("the run stopped at wave 0".into()),
        error: None,
        log: vec![],
    });
    r.stopped_at_wave = Some(0);
    r
}

pub(crate) fn apply_report() -> RunReport {
    let mut r = diff_report();
    r.command = Mode::Apply;
    for c in &r.changes {
        r.outcomes.insert(
            c.key.clone(),
            Outcome {
                duration: Duration::from_millis(7),
                ..Default::default()
            },
        );
    }
    r.outcomes
        .get_mut(&key("apps", "Deployment", Some("web"), "nginx"))
        .unwrap()
        .error = Some("admission webhook denied the request".into());
    r.outcomes
        .get_mut(&key("", "Namespace", None, "legacy"))
        .unwrap()
        .skipped = Some("Namespaces are never pruned without tend.dev/prune: allow".into());
    r.errors = vec!["lease renewal failed | retrying".into()];
    r
}

pub(crate) fn assert_no_secret(out: &str) {
    for v in [CANARY, CANARY_B64, "b2xk", "Y2FuYXJ5"] {
        assert!(!out.contains(v), "secret value {v} leaked:\n{out}");
    }
}
