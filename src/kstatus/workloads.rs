//! Rules for the workload controllers (`apps` Deployment, StatefulSet, DaemonSet, ReplicaSet
//! and `batch` Job). The generic rules have already checked deletion and
//! `status.observedGeneration` against `metadata.generation` when both are set.

use super::fields::{self, find, find_true, Condition, Malformed};
use super::Status;
use crate::text::count;
use serde_json::Value;

/// The controllers of Deployments, StatefulSets, DaemonSets and ReplicaSets always write
/// `status.observedGeneration`. Until they have, the status is not theirs (a just-created
/// object with 0 replicas would otherwise read as rolled out before any controller saw it).
/// kstatus requires this of DaemonSets only; tend requires it of all four.
fn not_observed_yet(object: &Value, kind: &str) -> Result<Option<Status>, Malformed> {
    Ok(match fields::int(object, "/status/observedGeneration")? {
        Some(_) => None,
        None => Some(Status::InProgress(format!(
            "waiting for the {kind} controller to report status (no status.observedGeneration yet)"
        ))),
    })
}

/// An in-progress reason, followed by what a `ReplicaFailure` condition says (quota, admission
/// refusals), which is usually the actual reason nothing moves.
fn in_progress(what: String, replica_failure: Option<&Condition>) -> Status {
    Status::InProgress(match replica_failure {
        Some(c) => format!("{what}; {}", c.describe()),
        None => what,
    })
}

/// Whether `spec.updateStrategy.type` is `OnDelete`: pods are replaced only when someone
/// deletes them, so waiting for them to be updated would wait for a person.
fn on_delete(object: &Value) -> Result<bool, Malformed> {
    Ok(fields::string(object, "/spec/updateStrategy/type")? == Some("OnDelete"))
}

/// Deployment: rolled out when every replica is updated, ready and available, no old replica
/// is left, and the controller says the rollout is complete (`Progressing` with reason
/// `NewReplicaSetAvailable`, and `Available=True`). `ProgressDeadlineExceeded` is Failed.
/// A paused Deployment is Current: it deliberately does not roll out (Helm's `--wait` treats it
/// the same way).
pub(super) fn deployment(object: &Value, conditions: &[Condition]) -> Result<Status, Malformed> {
    if fields::flag(object, "/spec/paused")? {
        return Ok(Status::Current);
    }
    if let Some(waiting) = not_observed_yet(object, "Deployment")? {
        return Ok(waiting);
    }
    let progressing = find(conditions, "Progressing");
    if let Some(c) = progressing.filter(|c| c.reason == "ProgressDeadlineExceeded") {
        return Ok(Status::Failed(c.describe()));
    }
    let failure = find_true(conditions, "ReplicaFailure");

    let spec = fields::int_or(object, "/spec/replicas", 1)?;
    let replicas = fields::int_or(object, "/status/replicas", 0)?;
    let updated = fields::int_or(object, "/status/updatedReplicas", 0)?;
    let ready = fields::int_or(object, "/status/readyReplicas", 0)?;
    let available = fields::int_or(object, "/status/availableReplicas", 0)?;
    if replicas < spec {
        return Ok(in_progress(
            format!("{replicas} of {spec} replicas created"),
            failure,
        ));
    }
    if updated < spec {
        return Ok(in_progress(
            format!("{updated} of {spec} replicas updated"),
            failure,
        ));
    }
    if replicas > spec {
        return Ok(in_progress(
            format!(
                "{} pending termination",
                count(replicas - spec, "old replica")
            ),
            failure,
        ));
    }
    if ready < spec {
        return Ok(in_progress(
            format!("{ready} of {spec} replicas ready"),
            failure,
        ));
    }
    if available < updated {
        return Ok(in_progress(
            format!("{available} of {updated} updated replicas available"),
            failure,
        ));
    }
    // Without a progress deadline (unset, or the "never" value i32::MAX) the controller does
    // not keep a Progressing condition, so there is nothing more to ask it.
    let deadline = fields::int(object, "/spec/progressDeadlineSeconds")?;
    if deadline.is_some_and(|s| s != i64::from(i32::MAX))
        && !progressing.is_some_and(|c| c.is_true() && c.reason == "NewReplicaSetAvailable")
    {
        let said = progressing.map_or("no Progressing condition yet".into(), |c| c.describe());
        return Ok(in_progress(
            format!("rollout not complete yet ({said})"),
            failure,
        ));
    }
    match find(conditions, "Available") {
        Some(c) if c.is_true() => Ok(Status::Current),
        Some(c) => Ok(in_progress(c.describe(), failure)),
        None => Ok(in_progress("no Available condition yet".into(), failure)),
    }
}

/// StatefulSet: every replica created, ready (and available, where the API server reports
/// it), none extra, and updated: up to the partition with a partitioned rolling update,
/// otherwise `currentRevision == updateRevision`. With `OnDelete` only the replica counts
/// matter (kstatus calls OnDelete Current outright, even before the pods are ready).
pub(super) fn statefulset(object: &Value, _conditions: &[Condition]) -> Result<Status, Malformed> {
    if let Some(waiting) = not_observed_yet(object, "StatefulSet")? {
        return Ok(waiting);
    }
    let spec = fields::int_or(object, "/spec/replicas", 1)?;
    let replicas = fields::int_or(object, "/status/replicas", 0)?;
    let ready = fields::int_or(object, "/status/readyReplicas", 0)?;
    let current = fields::int_or(object, "/status/currentReplicas", 0)?;
    let updated = fields::int_or(object, "/status/updatedReplicas", 0)?;
    if replicas < spec {
        return Ok(Status::InProgress(format!(
            "{replicas} of {spec} replicas created"
        )));
    }
    if ready < spec {
        return Ok(Status::InProgress(format!(
            "{ready} of {spec} replicas ready"
        )));
    }
    if let Some(available) = fields::int(object, "/status/availableReplicas")? {
        if available < spec {
            return Ok(Status::InProgress(format!(
                "{available} of {spec} replicas available"
            )));
        }
    }
    if replicas > spec {
        return Ok(Status::InProgress(format!(
            "{} pending termination",
            count(replicas - spec, "extra replica")
        )));
    }
    if on_delete(object)? {
        return Ok(Status::Current);
    }
    // With a partition, pods with an ordinal below it keep the old revision on purpose, so the
    // revisions never match; the rollout is done when every pod from the partition up is new.
    let partition = fields::int_or(object, "/spec/updateStrategy/rollingUpdate/partition", 0)?;
    if partition > 0 {
        let want = (spec - partition).max(0);
        return Ok(if updated < want {
            Status::InProgress(format!(
                "{updated} of {want} replicas updated (partition {partition})"
            ))
        } else {
            Status::Current
        });
    }
    let current_revision = fields::string(object, "/status/currentRevision")?;
    let update_revision = fields::string(object, "/status/updateRevision")?;
    if current_revision != update_revision {
        return Ok(Status::InProgress(format!(
            "{updated} of {spec} replicas updated to revision {}",
            update_revision.unwrap_or("(none)")
        )));
    }
    if current < spec {
        return Ok(Status::InProgress(format!(
            "{current} of {spec} replicas at the current revision"
        )));
    }
    Ok(Status::Current)
}

/// DaemonSet: a pod scheduled, updated (unless `OnDelete`), ready and available on every node
/// that should run one.
pub(super) fn daemonset(object: &Value, _conditions: &[Condition]) -> Result<Status, Malformed> {
    if let Some(waiting) = not_observed_yet(object, "DaemonSet")? {
        return Ok(waiting);
    }
    let Some(desired) = fields::int(object, "/status/desiredNumberScheduled")? else {
        return Ok(Status::InProgress(
            "waiting for the DaemonSet controller to count the nodes (no status.desiredNumberScheduled yet)"
                .into(),
        ));
    };
    let scheduled = fields::int_or(object, "/status/currentNumberScheduled", 0)?;
    let updated = fields::int_or(object, "/status/updatedNumberScheduled", 0)?;
    let ready = fields::int_or(object, "/status/numberReady", 0)?;
    let available = fields::int_or(object, "/status/numberAvailable", 0)?;
    if scheduled < desired {
        return Ok(Status::InProgress(format!(
            "{scheduled} of {desired} pods scheduled"
        )));
    }
    if updated < desired && !on_delete(object)? {
        return Ok(Status::InProgress(format!(
            "{updated} of {desired} pods updated"
        )));
    }
    if ready < desired {
        return Ok(Status::InProgress(format!(
            "{ready} of {desired} pods ready"
        )));
    }
    if available < desired {
        return Ok(Status::InProgress(format!(
            "{available} of {desired} pods available"
        )));
    }
    Ok(Status::Current)
}

/// ReplicaSet: every replica created, fully labelled, ready and available, none extra.
/// `ReplicaFailure` (quota, admission) is named but stays InProgress, as in kstatus: it clears
/// when the quota frees up.
pub(super) fn replicaset(object: &Value, conditions: &[Condition]) -> Result<Status, Malformed> {
    if let Some(waiting) = not_observed_yet(object, "ReplicaSet")? {
        return Ok(waiting);
    }
    let failure = find_true(conditions, "ReplicaFailure");
    let spec = fields::int_or(object, "/spec/replicas", 1)?;
    let replicas = fields::int_or(object, "/status/replicas", 0)?;
    let labelled = fields::int_or(object, "/status/fullyLabeledReplicas", 0)?;
    let ready = fields::int_or(object, "/status/readyReplicas", 0)?;
    let available = fields::int_or(object, "/status/availableReplicas", 0)?;
    if replicas < spec {
        return Ok(in_progress(
            format!("{replicas} of {spec} replicas created"),
            failure,
        ));
    }
    if labelled < spec {
        return Ok(in_progress(
            format!("{labelled} of {spec} replicas fully labelled"),
            failure,
        ));
    }
    if ready < spec {
        return Ok(in_progress(
            format!("{ready} of {spec} replicas ready"),
            failure,
        ));
    }
    if available < spec {
        return Ok(in_progress(
            format!("{available} of {spec} replicas available"),
            failure,
        ));
    }
    if replicas > spec {
        return Ok(in_progress(
            format!(
                "{} pending termination",
                count(replicas - spec, "extra replica")
            ),
            failure,
        ));
    }
    Ok(Status::Current)
}

/// Job: Current when complete (`Complete`, or `SuccessCriteriaMet` which Kubernetes 1.31+ sets
/// first), Failed when failed (`Failed`, or `FailureTarget` which 1.31+ sets as soon as the
/// outcome is decided, before the pods are gone). A suspended Job is Current, as in kstatus:
/// it runs nothing until someone resumes it. A running Job is InProgress: unlike kstatus,
/// which calls a started Job Current, tend waits for it to finish (database migrations).
pub(super) fn job(object: &Value, conditions: &[Condition]) -> Result<Status, Malformed> {
    for kind in ["Failed", "FailureTarget"] {
        if let Some(c) = find_true(conditions, kind) {
            return Ok(Status::Failed(c.describe()));
        }
    }
    if ["Complete", "SuccessCriteriaMet"]
        .iter()
        .any(|kind| find_true(conditions, kind).is_some())
    {
        return Ok(Status::Current);
    }
    // spec.suspend: the controller adds Suspended=True only once it has acted on it.
    if find_true(conditions, "Suspended").is_some() || fields::flag(object, "/spec/suspend")? {
        return Ok(Status::Current);
    }
    if fields::string(object, "/status/startTime")?.is_none() {
        return Ok(Status::InProgress("not started yet".into()));
    }
    let succeeded = fields::int_or(object, "/status/succeeded", 0)?;
    let active = fields::int_or(object, "/status/active", 0)?;
    let failed = fields::int_or(object, "/status/failed", 0)?;
    let done = match fields::int(object, "/spec/completions")? {
        Some(completions) => format!("{succeeded} of {completions} completions succeeded"),
        None => format!("{succeeded} succeeded"),
    };
    Ok(Status::InProgress(format!(
        "running: {done}, {active} active, {failed} failed"
    )))
}
