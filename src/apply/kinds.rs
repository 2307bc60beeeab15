//! tend's kinds in the apply stage: ImmortalContainer pods are recreated rather than patched;
//! objects expanded from a tend object get its ownerReference once it exists; every tend
//! object's status is written through the status subresource; live workloads that opted in
//! with `tend.dev/reload: "true"` get their config-hash annotation patched.

use super::live::Reload;
use super::lock::Clock;
use super::prepare::Prepared;
use crate::cluster::{self, ClusterError, Resource};
use crate::cluster::{key_of, Session};
use crate::kinds::RegistryMirror;
use crate::plan::{normalize::normalize, Action, Change};
use crate::render::copies::CopyOutcome;
use crate::render::immortal::{self, Recreate, IMMORTAL_LABEL};
use crate::render::mirror;
use crate::render::object::{Object, ObjectKey};
use crate::report::run::{Outcome, RunReport};
use kube::Client;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What online rendering found out, for the apply stage.
#[derive(Debug, Default)]
pub struct KindsContext {
    pub reloads: Vec<Reload>,
    pub copy_outcomes: Vec<CopyOutcome>,
}

/// Whether a desired object is the pod of an ImmortalContainer.
pub fn is_immortal_pod(object: &Object) -> bool {
    object.group().is_empty()
        && object.kind() == "Pod"
        && object
            .value
            .pointer("/metadata/labels")
            .and_then(|l| l.get(IMMORTAL_LABEL))
            .is_some()
        && object
            .origin
            .generated_by
            .as_deref()
            .is_some_and(|by| by.starts_with("ImmortalContainer "))
}

/// What to do with an ImmortalContainer's pod this run.
pub enum PodDecision {
    Keep,
    /// A pod of that name that tend did not create is in the way.
    Conflict(String),
    /// (Re)create it, for this reason.
    Create(String),
}

pub fn immortal_decision(object: &Object, live: Option<&Value>) -> PodDecision {
    let Ok(desired) =
        serde_json::from_value::<k8s_openapi::api::core::v1::Pod>(object.value.clone())
    else {
        return PodDecision::Conflict(format!("cannot read the desired pod {}", object.key()));
    };
    match immortal::recreate(&desired, live) {
        None => PodDecision::Keep,
        Some(Recreate::Missing) => PodDecision::Create("missing".into()),
        Some(Recreate::Foreign) => PodDecision::Conflict(format!(
            "conflict: pod {} exists but was not created by {}; delete or rename it",
            object.key(),
            object
                .origin
                .generated_by
                .as_deref()
                .unwrap_or("its ImmortalContainer")
        )),
        Some(Recreate::Terminating) => PodDecision::Create("terminating".into()),
        Some(Recreate::Terminated { phase }) => PodDecision::Create(format!("phase {phase}")),
        Some(Recreate::SpecChanged) => PodDecision::Create("spec changed".into()),
    }
}

/// Delete a pod, wait until it is gone, then create it anew from `desired`.
pub async fn recreate_pod(
    client: &Client,
    resource: &Resource,
    desired: &Value,
    timeout: Duration,
) -> Result<Value, ClusterError> {
    let key = key_of(desired);
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

fn owner_of(object: &Object) -> Option<ObjectKey> {
    let by = object.origin.generated_by.as_deref()?;
    let (kind, rest) = by.split_once(' ')?;
    if !matches!(kind, "RegistryMirror" | "ImmortalContainer") {
        return None;
    }
    let (namespace, name) = rest.split_once('/')?;
    Some(ObjectKey {
        group: crate::GROUP.into(),
        kind: kind.into(),
        namespace: Some(namespace.into()),
        name: name.into(),
    })
}

/// After all stages: ownerReferences, statuses, reloads. Returns run-level errors; none of
/// them undoes what was applied.
#[allow(clippy::too_many_arguments)]
pub async fn after_apply(
    session: &Session,
    prepared: &[Prepared],
    live_desired: &HashMap<ObjectKey, Value>,
    recreate: &std::collections::BTreeMap<ObjectKey, String>,
    report: &mut RunReport,
    kinds: &KindsContext,
    applied_tend: &HashMap<ObjectKey, Value>,
    clock: &dyn Clock,
) -> Vec<String> {
    let client = &session.client;
    let mut errors = Vec::new();
    let live_or_applied = |key: &ObjectKey| applied_tend.get(key).or_else(|| live_desired.get(key));
    let failed = |key: &ObjectKey| report.outcomes.get(key).is_some_and(|o| o.error.is_some());

    // ownerReferences for objects whose owner did not exist when they were rendered.
    for p in prepared {
        let key = p.object.key();
        let Some(owner) = owner_of(&p.object) else {
            continue;
        };
        if p.object
            .value
            .pointer("/metadata/ownerReferences")
            .is_some()
            || failed(&key)
        {
            continue;
        }
        let (Some(resource), Some(uid)) = (
            p.resource.as_ref(),
            live_or_applied(&owner)
                .and_then(|o| o.pointer("/metadata/uid"))
                .and_then(Value::as_str),
        ) else {
            continue;
        };
        let mut value = p.object.value.clone();
        value["metadata"]["ownerReferences"] = json!([{
            "apiVersion": crate::API_VERSION,
            "kind": owner.kind,
            "name": owner.name,
            "uid": uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }]);
        if let Err(err) =
            cluster::apply(client, resource, &value, crate::FIELD_MANAGER, true, false).await
        {
            errors.push(format!("cannot set the owner of {key}: {err}"));
        }
    }

    // Status of every tend object.
    let now = clock.now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    for p in prepared {
        let key = p.object.key();
        if key.group != crate::GROUP || p.object.origin.generated_by.is_some() || failed(&key) {
            continue;
        }
        let live = live_or_applied(&key);
        let old = live
            .and_then(|l| l.get("status"))
            .cloned()
            .unwrap_or(Value::Null);
        let status = match key.kind.as_str() {
            "RegistryMirror" => {
                let Ok(m) = serde_json::from_value::<RegistryMirror>(p.object.value.clone()) else {
                    continue;
                };
                let sts = ObjectKey {
                    group: "apps".into(),
                    kind: "StatefulSet".into(),
                    namespace: key.namespace.clone(),
                    name: key.name.clone(),
                };
                let ready = live_desired
                    .get(&sts)
                    .and_then(|s| s.pointer("/status/readyReplicas"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                let generation = live
                    .and_then(|l| l.pointer("/metadata/generation"))
                    .cloned()
                    .unwrap_or(Value::Null);
                json!({"readyReplicas": ready, "endpoint": mirror::endpoint(&m), "observedGeneration": generation})
            }
            "ImmortalContainer" => {
                let pod = ObjectKey {
                    group: String::new(),
                    kind: "Pod".into(),
                    namespace: key.namespace.clone(),
                    name: format!("{}-immortalpod", key.name),
                };
                let started = recreate.contains_key(&pod) && !failed(&pod);
                let before = old.get("startTimes").and_then(Value::as_i64).unwrap_or(0);
                let exists = started || live_desired.contains_key(&pod);
                json!({
                    // A pod that exists was started at least once, even if the status
                    // write that counted it failed.
                    "startTimes": (before + i64::from(started)).max(i64::from(exists)),
                    "currentPod": if exists { Value::String(pod.name.clone()) } else { Value::Null },
                })
            }
            "CopyRule" => {
                let Some(outcome) = kinds.copy_outcomes.iter().find(|o| o.rule == key.name) else {
                    continue;
                };
                json!({
                    "copies": outcome.copies,
                    "targets": outcome.targets,
                    "conflicts": outcome.conflicts,
                    "conflictCount": outcome.conflicts.len(),
                    "lastSyncTime": now,
                })
            }
            _ => continue,
        };
        if same_status(&old, &status) {
            continue;
        }
        let Some(resource) = session
            .resources
            .get(crate::GROUP, crate::VERSION, &key.kind)
        else {
            continue;
        };
        let patch = json!({
            "apiVersion": crate::API_VERSION,
            "kind": key.kind,
            "metadata": {"name": key.name, "namespace": key.namespace},
            "status": status,
        });
        if let Err(err) =
            cluster::apply_status(client, resource, &patch, crate::FIELD_MANAGER).await
        {
            errors.push(format!(
                "{err} (the applied objects are unaffected; the next run retries)"
            ));
        }
    }

    // Config-hash reloads of opted-in live workloads: only the annotation, with tend's manager.
    for reload in &kinds.reloads {
        if reload.current_hash() == Some(reload.hash.as_str()) {
            continue;
        }
        let started = Instant::now();
        let result = cluster::apply(
            client,
            &reload.resource,
            &reload.patch(),
            crate::FIELD_MANAGER,
            true,
            false,
        )
        .await;
        let error = result.err().map(|e| e.to_string());
        if let Some(e) = &error {
            errors.push(e.clone());
        }
        report.outcomes.insert(
            reload.key(),
            Outcome {
                duration: started.elapsed(),
                error,
                ..Outcome::default()
            },
        );
    }
    for error in &errors {
        tracing::error!("{error}");
    }
    errors
}

/// Statuses equal apart from timestamps that change every run.
fn same_status(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(map) = v.as_object_mut() {
            map.remove("lastSyncTime");
            map.retain(|_, v| !v.is_null());
        }
        v
    };
    strip(old) == strip(new)
}
