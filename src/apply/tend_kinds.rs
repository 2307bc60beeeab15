//! tend's kinds in the apply stage, the I/O half: [`crate::kinds`] decides (ImmortalContainer
//! pods recreated rather than patched, statuses, ownerReferences of objects whose owner was
//! created in the same run) and this writes. Also: live workloads that opted in with
//! `tend.dev/reload: "true"` get their config-hash annotation patched.

use super::live::Reload;
use super::lock::Clock;
use super::prepare::Prepared;
use crate::cluster::{self, ClusterError, Resource, Session};
use crate::kinds::after_apply;
use crate::kinds::run::{CopyOutcome, ReleaseOutcome, RunState};
use crate::object::ObjectKey;
use crate::plan::{normalize::normalize, Action, Change};
use crate::report::run::{Outcome, RunReport};
use kube::Client;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// What completing the rendered set found out, for the apply stage.
#[derive(Debug, Default)]
pub struct KindsContext {
    pub reloads: Vec<Reload>,
    pub copy_outcomes: Vec<CopyOutcome>,
    pub releases: Vec<ReleaseOutcome>,
}

/// Delete a pod, wait until it is gone, then create it anew from `desired`.
pub async fn recreate_pod(
    client: &Client,
    resource: &Resource,
    desired: &Value,
    timeout: Duration,
) -> Result<Value, ClusterError> {
    let key = ObjectKey::of_value(desired);
    cluster::delete(client, resource, key.namespace.as_deref(), &key.name, false).await?;
    let deadline = Instant::now() + timeout;
    while cluster::get(client, resource, key.namespace.as_deref(), &key.name)
        .await?
        .is_some()
    {
        if Instant::now() >= deadline {
            break; // the apply below reports what is wrong
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    cluster::apply(client, resource, desired, crate::FIELD_MANAGER, true, false).await
}

/// Show live workloads whose reload hash is out of date as updates.
pub fn add_reload_changes(report: &mut RunReport, kinds: &KindsContext) {
    for reload in &kinds.reloads {
        if reload.current_hash() == Some(reload.hash.as_str()) {
            continue;
        }
        let before = normalize(&reload.live);
        let mut after = before.clone();
        merge(&mut after, &reload.patch());
        report.changes.push(Change {
            key: reload.key(),
            api_version: reload.resource.api.api_version.clone(),
            action: Action::Update,
            origin: None,
            before: Some(before),
            after: Some(after),
            reason: None,
            drift: Vec::new(),
        });
    }
}

/// Deep-merge `patch` into `target` (maps only).
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// What the stages did that tend's kinds need afterwards.
pub struct AfterStages<'a> {
    pub prepared: &'a [Prepared],
    /// Live objects of tend's kinds (and their mirrors' StatefulSets and pods) as observed.
    pub live_desired: &'a HashMap<ObjectKey, Value>,
    /// ImmortalContainer pods (re)created this run, with the reason.
    pub recreate: &'a std::collections::BTreeMap<ObjectKey, String>,
    pub kinds: &'a KindsContext,
    /// tend's own objects as the apply answered them.
    pub applied_tend: &'a HashMap<ObjectKey, Value>,
}

/// After all stages: ownerReferences, statuses, reloads. Returns run-level errors; none of
/// them undoes what was applied.
pub async fn after_apply(
    session: &Session,
    stages: AfterStages<'_>,
    report: &mut RunReport,
    clock: &dyn Clock,
) -> Vec<String> {
    let AfterStages {
        prepared,
        live_desired,
        recreate,
        kinds,
        applied_tend,
    } = stages;
    let mut errors = Vec::new();
    let failed = |key: &ObjectKey| report.outcomes.get(key).is_some_and(|o| o.error.is_some());
    let started: BTreeSet<ObjectKey> = recreate.keys().filter(|k| !failed(k)).cloned().collect();
    let releases: Vec<(ReleaseOutcome, usize)> = kinds
        .releases
        .iter()
        .map(|release| {
            let failures = prepared
                .iter()
                .filter(|p| release.files.contains(&p.object.origin.file))
                .filter(|p| failed(&p.key))
                .count();
            (release.clone(), failures)
        })
        .collect();
    let run = RunState {
        observed: live_desired,
        applied: applied_tend,
        started: &started,
        copy_outcomes: &kinds.copy_outcomes,
        releases: &releases,
        now: clock.now(),
    };
    let applied: Vec<_> = prepared.iter().filter(|p| !failed(&p.key)).collect();

    errors.extend(set_owners(session, &applied, &run).await);
    errors.extend(write_statuses(session, &applied, &run).await);
    errors.extend(reload(session, &kinds.reloads, report).await);
    for error in &errors {
        tracing::error!("{error}");
    }
    errors
}

/// ownerReferences for objects whose owner did not exist when they were rendered.
async fn set_owners(session: &Session, applied: &[&Prepared], run: &RunState<'_>) -> Vec<String> {
    let mut errors = Vec::new();
    for p in applied {
        let (Some(resource), Some(value)) = (&p.resource, after_apply::with_owner(&p.object, run))
        else {
            continue;
        };
        let written = cluster::apply(
            &session.client,
            resource,
            &value,
            crate::FIELD_MANAGER,
            true,
            false,
        );
        if let Err(err) = written.await {
            errors.push(format!("cannot set the owner of {}: {err}", p.key.clone()));
        }
    }
    errors
}

/// The status of every tend object.
async fn write_statuses(
    session: &Session,
    applied: &[&Prepared],
    run: &RunState<'_>,
) -> Vec<String> {
    let mut errors = Vec::new();
    for p in applied {
        let Some(status) = after_apply::status_patch(&p.object, run) else {
            continue;
        };
        let Some(resource) = session
            .resources
            .get(crate::GROUP, crate::VERSION, &status.key.kind)
        else {
            continue;
        };
        let written = cluster::apply_status(
            &session.client,
            resource,
            &status.patch,
            crate::FIELD_MANAGER,
        );
        if let Err(err) = written.await {
            errors.push(format!(
                "{err} (the applied objects are unaffected; the next run retries)"
            ));
        }
    }
    errors
}

/// Config-hash reloads of opted-in live workloads: only the annotation, with tend's manager.
async fn reload(session: &Session, reloads: &[Reload], report: &mut RunReport) -> Vec<String> {
    let mut errors = Vec::new();
    for reload in reloads {
        if reload.current_hash() == Some(reload.hash.as_str()) {
            continue;
        }
        let started = Instant::now();
        let patch = reload.patch();
        let result = cluster::apply(
            &session.client,
            &reload.resource,
            &patch,
            crate::FIELD_MANAGER,
            true,
            false,
        )
        .await;
        let error = result.err().map(|e| e.to_string());
        if let Some(e) = &error {
            errors.push(e.clone());
        }
        let outcome = Outcome {
            duration: started.elapsed(),
            error,
            ..Outcome::default()
        };
        report.outcomes.insert(reload.key(), outcome);
    }
    errors
}
