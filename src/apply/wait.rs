//! Waits: CRDs until Established (before the stages that use them), and `--wait` for applied
//! workloads to roll out.

use crate::cluster::{self, key_of, Resource, Session};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Wait until the named CRDs report Established (bounded by `timeout`).
pub async fn established(session: &Session, names: &[String], timeout: Duration) {
    let Some(resource) = session
        .resources
        .get("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
        .cloned()
    else {
        return;
    };
    let deadline = Instant::now() + timeout;
    for name in names {
        loop {
            let established = match cluster::get(&session.client, &resource, None, name).await {
                Ok(Some(crd)) => crd
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Established" && c["status"] == "True")
                    }),
                _ => false,
            };
            if established || Instant::now() >= deadline {
                if !established {
                    tracing::warn!("CRD {name} did not become Established within {timeout:?}");
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// `--wait`: poll applied Deployments/StatefulSets/DaemonSets until their rollout is done.
/// Returns one message per workload that did not finish within `timeout`.
pub async fn rollouts(
    session: &Session,
    applied: &[(Resource, Value)],
    timeout: Duration,
) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    let mut errors = Vec::new();
    let workloads = applied.iter().filter(|(r, _)| {
        r.api.group == "apps"
            && matches!(
                r.api.kind.as_str(),
                "Deployment" | "StatefulSet" | "DaemonSet"
            )
    });
    for (resource, applied) in workloads {
        let key = key_of(applied);
        loop {
            let live = cluster::get(
                &session.client,
                resource,
                key.namespace.as_deref(),
                &key.name,
            )
            .await;
            if matches!(&live, Ok(Some(obj)) if rollout_done(obj)) {
                break;
            }
            if Instant::now() >= deadline {
                let message =
                    format!("{key} did not finish rolling out within {timeout:?} (--timeout)");
                tracing::error!("{message}");
                errors.push(message);
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    errors
}

/// Whether a workload's status shows its current generation fully rolled out.
pub fn rollout_done(obj: &Value) -> bool {
    let generation = obj
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status = &obj["status"];
    let observed = status["observedGeneration"].as_i64().unwrap_or(0);
    if observed < generation {
        return false;
    }
    let n = |v: &Value| v.as_i64().unwrap_or(0);
    match obj["kind"].as_str() {
        Some("DaemonSet") => {
            let want = n(&status["desiredNumberScheduled"]);
            n(&status["updatedNumberScheduled"]) >= want && n(&status["numberAvailable"]) >= want
        }
        _ => {
            let want = obj
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            n(&status["updatedReplicas"]) >= want
                && n(&status["availableReplicas"]).max(n(&status["readyReplicas"])) >= want
        }
    }
}
