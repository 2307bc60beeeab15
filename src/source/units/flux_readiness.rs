//! When a Flux unit is ready, as its controller judges it (README "Coming from Flux",
//! "Readiness"): what its dependents (`dependsOn`) wait for, and what the run waits for
//! before it ends.
//!
//! - *Kustomization* (kustomize-controller `checkHealth`): `wait: true` checks every object
//!   it applied (and `healthChecks` is ignored); else `healthChecks` names the objects to
//!   check (a missing `apiVersion` is `apps/v1`, v1beta1's default; a missing namespace a
//!   cluster-scoped object; the unit itself is left out); with neither, it is ready once
//!   applied. Within `spec.timeout`, else `spec.interval` less 30 s, at least 30 s
//!   (`GetTimeout`).
//! - *HelmRelease* (helm-controller `internal/action`): Helm waits for every object of the
//!   release unless `disableWait` of the action, Jobs too unless `disableWaitForJobs`;
//!   within the action's `timeout`, else `spec.timeout`, else 5 minutes. The action is
//!   install on the release's first apply, upgrade after.

use super::model::{CheckRef, Checks, Found, Readiness, WaitRule};
use crate::problem::Problem;
use crate::yaml::Step;
use serde_json::Value;
use std::time::Duration;

/// kustomize-controller's floor and margin: a health check gets at least 30 s, and by
/// default 30 s less than the interval.
const KUSTOMIZATION_MARGIN: Duration = Duration::from_secs(30);
/// helm-controller's default `spec.timeout`.
const HELM_RELEASE_TIMEOUT: Duration = Duration::from_secs(300);

/// The readiness of a Kustomization or HelmRelease; a duration or health check Flux would
/// refuse is a problem at its line.
pub fn readiness(unit: &Found) -> Result<Readiness, Problem> {
    match unit.id.kind.as_str() {
        "Kustomization" => {
            let rule = kustomization_rule(unit)?;
            Ok(Readiness {
                install: rule.clone(),
                upgrade: rule,
            })
        }
        _ => Ok(Readiness {
            install: helm_rule(unit, "install")?,
            upgrade: helm_rule(unit, "upgrade")?,
        }),
    }
}

fn kustomization_rule(unit: &Found) -> Result<WaitRule, Problem> {
    let spec = unit.spec();
    let timeout = match duration(unit, &["spec", "timeout"])? {
        Some(timeout) => (timeout, "spec.timeout".to_string()),
        None => {
            let interval = duration(unit, &["spec", "interval"])?.unwrap_or_default();
            let timeout = interval.saturating_sub(KUSTOMIZATION_MARGIN);
            (timeout, "spec.interval less 30s".to_string())
        }
    };
    let timeout = match timeout.0 < KUSTOMIZATION_MARGIN {
        true => (KUSTOMIZATION_MARGIN, format!("{}, at least 30s", timeout.1)),
        false => timeout,
    };
    let checks = match spec.get("wait").and_then(Value::as_bool) {
        Some(true) => Checks::All { jobs: true },
        _ => match health_checks(unit)? {
            named if named.is_empty() => Checks::Applied,
            named => Checks::Named(named),
        },
    };
    Ok(WaitRule {
        checks,
        timeout: Some(timeout),
    })
}

/// `spec.healthChecks`, without the unit itself (kustomize-controller's guard against
/// waiting on itself).
fn health_checks(unit: &Found) -> Result<Vec<CheckRef>, Problem> {
    let Some(list) = unit.spec().get("healthChecks") else {
        return Ok(Vec::new());
    };
    let Some(list) = list.as_array() else {
        return Err(unit.problem(
            &["spec", "healthChecks"],
            "spec.healthChecks is not a list; write a list of {apiVersion, kind, name, namespace}",
        ));
    };
    let mut checks = Vec::new();
    for (index, entry) in list.iter().enumerate() {
        let path = [
            Step::Key("spec".into()),
            Step::Key("healthChecks".into()),
            Step::Index(index),
        ];
        let line = unit.doc.line_at(&path);
        let field = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or_default();
        let (kind, name) = (field("kind"), field("name"));
        if kind.is_empty() || name.is_empty() {
            return Err(Problem::new(
                &unit.file,
                line,
                format!("spec.healthChecks[{index}] needs a kind and a name; write the object to check as {{apiVersion, kind, name, namespace}}"),
            ));
        }
        let api_version = match field("apiVersion") {
            "" => "apps/v1",
            written => written,
        };
        let namespace = Some(field("namespace")).filter(|n| !n.is_empty());
        let is_itself = kind == "Kustomization"
            && name == unit.id.name
            && namespace == Some(unit.id.namespace.as_str());
        if !is_itself {
            checks.push(CheckRef {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                namespace: namespace.map(str::to_string),
                name: name.to_string(),
                line,
            });
        }
    }
    Ok(checks)
}

fn helm_rule(unit: &Found, action: &str) -> Result<WaitRule, Problem> {
    let settings = unit.spec().get(action);
    let flag = |key: &str| {
        settings
            .and_then(|s| s.get(key))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let checks = match flag("disableWait") {
        true => Checks::Applied,
        false => Checks::All {
            jobs: !flag("disableWaitForJobs"),
        },
    };
    let timeout = match duration(unit, &["spec", action, "timeout"])? {
        Some(timeout) => (timeout, format!("spec.{action}.timeout")),
        None => match duration(unit, &["spec", "timeout"])? {
            Some(timeout) => (timeout, "spec.timeout".to_string()),
            None => (HELM_RELEASE_TIMEOUT, "helm-controller's 5m default".into()),
        },
    };
    Ok(WaitRule {
        checks,
        timeout: Some(timeout),
    })
}

/// A duration field (Go's `metav1.Duration`: `5m`, `1h30m`, `90s`).
fn duration(unit: &Found, keys: &[&str]) -> Result<Option<Duration>, Problem> {
    let mut value = &unit.doc.value;
    for key in keys {
        match value.get(key) {
            Some(inner) => value = inner,
            None => return Ok(None),
        }
    }
    let text = match value {
        Value::String(text) => text.as_str(),
        Value::Null => return Ok(None),
        _ => "",
    };
    let nanos = crate::helm::funcs::parse_duration(text).filter(|n| *n >= 0);
    match nanos {
        Some(nanos) => Ok(Some(Duration::from_nanos(nanos as u64))),
        None => Err(unit.problem(
            keys,
            format!(
                "{} is not a duration ({value}); write one as Flux does: 30s, 5m, 1h30m",
                keys.join(".")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::units::model::{Controller, UnitId};
    use std::path::PathBuf;
    use std::sync::Arc;

    fn found(kind: &str, spec: &str) -> Found {
        let text = format!("apiVersion: x/v1\nkind: {kind}\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n{spec}");
        let (docs, problems) = crate::yaml::parse_file(std::path::Path::new("apps.yaml"), &text);
        assert!(problems.is_empty());
        let doc = docs.into_iter().next().unwrap();
        Found {
            id: UnitId {
                controller: Controller::Flux,
                kind: kind.into(),
                namespace: "flux-system".into(),
                name: "apps".into(),
            },
            api_version: "x/v1".into(),
            file: PathBuf::from("apps.yaml"),
            doc,
            chain: Arc::new(Vec::new()),
            target: None,
        }
    }

    fn rule(kind: &str, spec: &str) -> Readiness {
        readiness(&found(kind, spec)).unwrap()
    }

    #[test]
    fn a_kustomization_waits_as_kustomize_controller_decides() {
        let plain = rule("Kustomization", "  interval: 10m\n");
        assert_eq!(plain.install.checks, Checks::Applied);
        assert_eq!(plain.install.timeout.unwrap().0, Duration::from_secs(570));
        let waits = rule("Kustomization", "  interval: 1m\n  wait: true\n  healthChecks:\n    - kind: Deployment\n      name: x\n      namespace: y\n");
        assert_eq!(waits.upgrade.checks, Checks::All { jobs: true });
        // interval - 30 s, but never under 30 s.
        assert_eq!(waits.upgrade.timeout.unwrap().0, Duration::from_secs(30));
        let short = rule("Kustomization", "  interval: 5m\n  timeout: 10s\n");
        assert_eq!(short.install.timeout.unwrap().0, Duration::from_secs(30));
        let named = rule("Kustomization", "  interval: 5m\n  timeout: 2m\n  healthChecks:\n    - kind: Deployment\n      name: web\n      namespace: shop\n    - apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      name: apps\n      namespace: flux-system\n    - apiVersion: v1\n      kind: Namespace\n      name: shop\n");
        assert_eq!(
            named.install.timeout.unwrap(),
            (Duration::from_secs(120), "spec.timeout".into())
        );
        let Checks::Named(checks) = named.install.checks else {
            panic!("named checks expected");
        };
        // The unit itself is left out; apps/v1 is the default apiVersion; no namespace means
        // a cluster-scoped object.
        assert_eq!(checks.len(), 2);
        assert_eq!(
            (checks[0].api_version.as_str(), checks[0].line),
            ("apps/v1", 10)
        );
        assert_eq!(checks[1].namespace, None);
    }

    #[test]
    fn a_helm_release_waits_as_helm_does_per_action() {
        let default = rule("HelmRelease", "  interval: 5m\n");
        assert_eq!(default.install.checks, Checks::All { jobs: true });
        assert_eq!(default.install.timeout.unwrap().0, Duration::from_secs(300));
        let set = rule("HelmRelease", "  timeout: 10m\n  install:\n    disableWait: true\n  upgrade:\n    disableWaitForJobs: true\n    timeout: 1m\n");
        assert_eq!(set.install.checks, Checks::Applied);
        assert_eq!(set.install.timeout.unwrap().0, Duration::from_secs(600));
        assert_eq!(set.upgrade.checks, Checks::All { jobs: false });
        assert_eq!(
            set.upgrade.timeout.unwrap(),
            (Duration::from_secs(60), "spec.upgrade.timeout".into())
        );
    }

    #[test]
    fn bad_durations_and_checks_are_refused_at_their_line() {
        let err =
            readiness(&found("Kustomization", "  interval: 5m\n  timeout: soon\n")).unwrap_err();
        assert_eq!(err.line, 8);
        assert!(
            err.message.contains("spec.timeout is not a duration"),
            "{}",
            err.message
        );
        let err = readiness(&found(
            "Kustomization",
            "  interval: 5m\n  healthChecks:\n    - kind: Deployment\n",
        ))
        .unwrap_err();
        assert_eq!(err.line, 9);
        assert!(
            err.message.contains("needs a kind and a name"),
            "{}",
            err.message
        );
    }
}
