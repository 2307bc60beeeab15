//! Hooks (README "Waves and hooks"): Jobs and Pods annotated `tend.dev/hook` (or Argo CD's
//! `argocd.argoproj.io/hook`) that run to completion before the first change of a run, or
//! after every wave is ready. They are not ApplySet members: never pruned, never drift.
//!
//! Each run deletes the last run's copy and creates the hook anew (the copy stays until then,
//! for inspection), then polls it until it succeeds, fails, or `--timeout` passes.

use super::options::{EngineError, EngineOptions};
use super::prepare::{prepare, Prepared};
use crate::cluster::{self, Resources, Session};
use crate::kstatus::{self, Status};
use crate::object::{Object, ObjectKey};
use crate::plan::inventory;
use crate::plan::planner::Plan;
use crate::render::builtin::stage_of;
use crate::render::waves::{self, Phase};
use crate::report::run::{HookRun, HookState};
use serde_json::Value;
use std::time::{Duration, Instant};

/// How many lines of a failed hook's pod log the report carries.
const LOG_LINES: i64 = 20;
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// One hook of the site, resolved against discovery.
#[derive(Debug, Clone)]
pub struct Hook {
    pub prepared: Prepared,
    pub phase: Phase,
    pub wave: i64,
}

impl Hook {
    pub fn key(&self) -> ObjectKey {
        self.prepared.key.clone()
    }

    /// Its report entry before (or instead of) running.
    pub fn run_as(&self, state: HookState) -> HookRun {
        HookRun {
            key: self.key(),
            phase: self.phase,
            wave: self.wave,
            state,
            error: None,
            log: Vec::new(),
        }
    }
}

/// Split the desired set into the objects to apply and the hooks.
pub fn split(desired: Vec<Object>) -> (Vec<Object>, Vec<Object>) {
    desired
        .into_iter()
        .partition(|o| waves::hook_of(&o.value).is_none())
}

/// Take the hooks out of the desired set, resolved (before any write): (the rest, the hooks).
pub fn take(
    resources: &Resources,
    desired: Vec<Object>,
    opts: &EngineOptions,
) -> Result<(Vec<Object>, Vec<Hook>), EngineError> {
    let (desired, hooks) = split(desired);
    let id = opts.applyset_id();
    let hooks = prepare_hooks(resources, hooks, &opts.default_namespace, &id)?;
    Ok((desired, hooks))
}

/// A member that became a hook (annotated since the last run) is no longer desired as a
/// member, but pruning it would delete the hook this run recreates under the same name: it is
/// kept, and the report says why.
pub fn never_prune(plan: &mut Plan, hooks: &[Hook]) {
    for hook in hooks {
        let key = hook.key();
        if plan.prune.remove(&key) {
            plan.kept.insert(
                key,
                "it is a hook now (tend.dev/hook), and hooks are never pruned".into(),
            );
        }
    }
}

/// Resolve the hooks against discovery (with every problem reported before any write), without
/// the ApplySet membership label: a hook is never pruned. Ordered as they run: by phase, wave,
/// Helm's hook weight (charts), then identity.
pub fn prepare_hooks(
    resources: &Resources,
    hooks: Vec<Object>,
    default_namespace: &str,
    applyset_id: &str,
) -> Result<Vec<Hook>, EngineError> {
    let mut out: Vec<Hook> = prepare(resources, hooks, default_namespace, applyset_id)?
        .into_iter()
        .filter_map(|mut prepared| {
            let value = &mut prepared.object.value;
            if let Some(labels) = value
                .pointer_mut("/metadata/labels")
                .and_then(Value::as_object_mut)
            {
                labels.remove(inventory::PART_OF_LABEL);
            }
            let phase = waves::hook_of(value)?;
            let wave = waves::wave_of(value);
            Some(Hook {
                prepared,
                phase,
                wave,
            })
        })
        .collect();
    // Within a wave, Argo CD orders hooks by kind as it orders other objects: a
    // ServiceAccount and its RBAC before the Job that runs as it.
    out.sort_by_key(|h| {
        let weight = waves::hook_weight(&h.prepared.object.value);
        let key = h.key();
        let stage = stage_of(&key.group, &key.kind);
        (h.phase, h.wave, weight, stage, key)
    });
    Ok(out)
}

/// Run one hook: delete the last run's copy, create it, wait until it succeeds or fails (within
/// `--timeout`); on success delete it if its policy says so, on failure read the last lines of
/// its pod's log (masking `secrets`).
/// The hook's resource, and the client it runs with: a tenant's hook runs as its
/// ServiceAccount.
fn target(
    session: &Session,
    hook: &Hook,
    key: &ObjectKey,
) -> Result<(crate::cluster::Resource, kube::Client), String> {
    let Some(resource) = hook.prepared.resource.clone() else {
        return Err(format!("the cluster does not serve {}", key.kind));
    };
    let client = session.writer(key).map_err(|e| e.to_string())?;
    Ok((resource, client))
}

pub async fn run(
    session: &Session,
    hook: &Hook,
    opts: &EngineOptions,
    secrets: &[String],
) -> HookRun {
    let mut run = hook.run_as(HookState::Failed);
    let key = hook.key();
    tracing::info!(
        "running {} hook {} (wave {})",
        hook.phase.name(),
        key.kind_and_name(),
        hook.wave
    );
    let target = target(session, hook, &key).map_err(|error| run.error = Some(error));
    let Ok((resource, client)) = target else {
        return run;
    };
    let client = &client;
    let value = &hook.prepared.object.value;
    if let Err(error) = super::replace::replace(client, &resource, value, opts).await {
        run.error = Some(error);
        return run;
    }
    let namespace = key.namespace.as_deref();
    let deadline = Instant::now() + opts.timeout;
    let (status, live) = loop {
        let (status, live) = match cluster::get(client, &resource, namespace, &key.name).await {
            Ok(Some(live)) => (completion(&live), Some(live)),
            Ok(None) => (Status::Failed("deleted while it ran".into()), None),
            Err(err) => (Status::Unknown(format!("cannot read it: {err}")), None),
        };
        if status.is_current() || status.is_failed() || Instant::now() >= deadline {
            break (status, live);
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    };
    if status.is_current() {
        tracing::info!("hook {} succeeded", key.kind_and_name());
        run.state = HookState::Succeeded;
        if waves::delete_on_success(value) {
            if let Err(err) = cluster::delete(client, &resource, namespace, &key.name, false).await
            {
                tracing::warn!(
                    "cannot delete hook {} after it succeeded: {err}",
                    key.kind_and_name()
                );
            }
        }
        return run;
    }
    run.error = Some(match &status {
        Status::Failed(reason) => reason.clone(),
        other => format!(
            "not complete within --timeout {}s: {other}",
            opts.timeout.as_secs()
        ),
    });
    tracing::error!(
        "{} hook {} failed: {}",
        hook.phase.name(),
        key.kind_and_name(),
        run.error.as_deref().unwrap_or_default()
    );
    if let (Some(live), Some(ns)) = (live, namespace) {
        run.log = mask(log_tail(session, &key, &live, ns).await, secrets);
    }
    run
}

/// A hook's state in kstatus terms, where Current means run to completion: a Job complete, a
/// Pod Succeeded (a Running, Ready Pod is Current to kstatus but not done).
fn completion(live: &Value) -> Status {
    let status = kstatus::compute(live);
    let is_pod = live.get("kind").and_then(Value::as_str) == Some("Pod");
    let succeeded = live.pointer("/status/phase").and_then(Value::as_str) == Some("Succeeded");
    match status {
        Status::Current if is_pod && !succeeded => Status::InProgress("running".into()),
        other => other,
    }
}

/// The last lines of the log of the hook's newest pod; empty when the server gives none (no
/// pods, no log endpoint, no right to read it).
async fn log_tail(
    session: &Session,
    key: &ObjectKey,
    live: &Value,
    namespace: &str,
) -> Vec<String> {
    let pod = match key.kind.as_str() {
        "Pod" => Some(key.name.clone()),
        _ => newest_pod(session, live, namespace).await,
    };
    let Some(pod) = pod else {
        return Vec::new();
    };
    match cluster::pod_log_tail(&session.client, namespace, &pod, LOG_LINES).await {
        Ok(lines) => lines,
        Err(err) => {
            tracing::debug!("no log for hook pod {namespace}/{pod}: {err}");
            Vec::new()
        }
    }
}

/// The newest pod of a Job, selected as the Job selects them (`spec.selector`, which the API
/// server fills with the Job's controller uid), else by the `job-name` label.
async fn newest_pod(session: &Session, job: &Value, namespace: &str) -> Option<String> {
    let selector = job
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_else(|| {
            let name = job.pointer("/metadata/name").and_then(Value::as_str);
            format!("job-name={}", name.unwrap_or_default())
        });
    let resource = session.core("Pod").ok()?;
    let pods = cluster::list(&session.client, &resource, Some(namespace), Some(&selector))
        .await
        .ok()?;
    pods.iter()
        .max_by_key(|p| {
            p.pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        })
        .and_then(|p| p.pointer("/metadata/name")?.as_str().map(str::to_string))
}

/// The values of the site's Secrets (decoded), which must not reach a report through a log.
pub fn secret_values(prepared: &[Prepared]) -> Vec<String> {
    use base64::Engine;
    let mut out: Vec<String> = prepared
        .iter()
        .filter(|p| p.object.kind() == "Secret" && p.object.api_version() == "v1")
        .filter_map(|p| p.object.value.get("data")?.as_object().cloned())
        .flat_map(|data| data.into_iter())
        .filter_map(|(_, v)| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(v.as_str()?)
                .ok()?;
            String::from_utf8(bytes).ok()
        })
        .filter(|v| !v.trim().is_empty())
        .collect();
    // Longest first, so a value containing another is masked whole.
    out.sort_by_key(|v| std::cmp::Reverse(v.len()));
    out
}

/// `lines` with every Secret value replaced by `***`.
fn mask(lines: Vec<String>, secrets: &[String]) -> Vec<String> {
    lines
        .into_iter()
        .map(|mut line| {
            for secret in secrets {
                line = line.replace(secret.as_str(), "***");
            }
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn logs_are_masked() {
        let lines = vec!["connecting with hunter2 as admin".to_string()];
        assert_eq!(
            mask(lines, &["hunter2".into()]),
            ["connecting with *** as admin"]
        );
    }

    #[test]
    fn a_running_pod_is_not_done() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(!completion(&pod).is_current());
        let done = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "status": {"phase": "Succeeded"}});
        assert!(completion(&done).is_current());
    }
}
