//! Whether an object is ready, in kstatus terms (README "Wait (`tend apply --wait`)"): the pure status function
//! behind `--wait`, modelled on kstatus's `Compute` (sigs.k8s.io/cli-utils/pkg/kstatus/status,
//! used by Flux and kpt) and kube-runtime's `wait::conditions`. No I/O, no clock: the caller
//! passes the object as the API server returned it and polls again.
//!
//! [`compute`] decides in this order:
//!
//! 1. **Every kind** (kstatus's generic rules): a `metadata.deletionTimestamp` → InProgress
//!    (terminating, naming finalizers); `status.observedGeneration < metadata.generation` →
//!    InProgress (the controller has not seen the change yet); a `Stalled=True` condition →
//!    Failed; a `Reconciling=True` condition → InProgress.
//! 2. **Kinds with rules of their own**, matched by API group and kind (table below). The four
//!    `apps` controllers must also have written `status.observedGeneration`.
//! 3. **Any other kind**, from its `Ready` condition, else its `Available` condition: `True` →
//!    Current; a condition whose own `observedGeneration` is older than `metadata.generation`
//!    → InProgress; `Available` not True → InProgress; `Ready=False` → Failed unless its
//!    reason says "not yet". The rule, case-insensitive on substrings of the reason: empty →
//!    InProgress (nothing to name); containing `fail`, `error`, `invalid`, `exceeded`,
//!    `denied`, `forbidden`, `timeout`, `timedout`, `rejected`, `unauthorized`, `crash` or
//!    `backoff` → Failed; else containing `progress`, `pending`, `wait`, `reconcil`, `creating`,
//!    `provisioning`, `installing`, `initializ`, `starting`, `updating`, `upgrading`,
//!    `scaling`, `deploying`, `issuing`, `notready`, `unavailable`, `doesnotexist` or
//!    `unknown` → InProgress; any other reason → Failed. So `InvalidConfig`,
//!    `ReconciliationFailed`, `Degraded` fail, while Flux's `Progressing`/`DependencyNotReady`,
//!    Crossplane's `Creating` and cert-manager's `DoesNotExist` (first issuance) wait.
//!    No such condition (ConfigMaps, Secrets, RBAC, most CRs before their controller writes
//!    status) → Current: the object exists and nothing says it is not ready.
//!
//! | kind | Current when | Failed when |
//! |------|--------------|-------------|
//! | Deployment | all `spec.replicas` (default 1) updated, ready, available, no old ones; `Progressing` reason `NewReplicaSetAvailable` (when a progress deadline is set); `Available=True`; or `spec.paused` | `Progressing` reason `ProgressDeadlineExceeded` |
//! | StatefulSet | all replicas created and ready (and available); updated up to the partition, or `currentRevision == updateRevision`; `OnDelete`: replicas ready | — |
//! | DaemonSet | `desiredNumberScheduled` pods scheduled, updated (unless `OnDelete`), ready and available | — |
//! | ReplicaSet | all replicas created, fully labelled, ready and available, no extra | — |
//! | Job | `Complete` / `SuccessCriteriaMet`, or suspended | `Failed` / `FailureTarget` |
//! | Pod | Running and `Ready=True`, or Succeeded | phase Failed; a container in `CrashLoopBackOff` or `InvalidImageName` |
//! | PersistentVolumeClaim | phase Bound | phase Lost |
//! | Service | not a LoadBalancer, or `status.loadBalancer.ingress` set | — |
//! | Namespace | phase Active (or no phase) | — |
//! | CustomResourceDefinition | `Established=True` | `NamesAccepted=False`; `Established=False` other than `Installing` |
//!
//! Where tend departs from kstatus, the rule's doc comment says why (a running Job and a
//! failed Pod are not Current; `Ready=False` can fail; Pod scheduling is not timed).
//!
//! [`Status::Unknown`] means the object could not be judged: it is not an object, has no kind,
//! or a field the rules read has the wrong type or an unknown value (a Pod's phase `Unknown`).
//! A waiter should keep polling it like InProgress (it never fails fast) and list it with its
//! reason if the timeout runs out.
//!
//! Reasons are one human-readable line without the object's identity, which the caller prints
//! in front: `1 of 3 replicas updated`,
//! `ProgressDeadlineExceeded: ReplicaSet "web-5d4f" has timed out progressing.`

mod core_kinds;
mod fields;
mod generic;
mod workloads;

#[cfg(test)]
mod tests;

use fields::{Condition, Malformed};
use serde::ser::SerializeStruct;
use serde_json::Value;
use std::fmt;

/// An object's readiness, with why when it is not Current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Ready: the controller has caught up with the object's spec (or it needs no controller).
    Current,
    /// Not ready yet, and nothing says it will not get there.
    InProgress(String),
    /// It will not get there without a change: fail the wait at once.
    Failed(String),
    /// The status could not be read (see the module docs); treat like InProgress.
    Unknown(String),
}

impl Status {
    /// kstatus's name for the status: `Current`, `InProgress`, `Failed`, `Unknown`.
    pub fn label(&self) -> &'static str {
        match self {
            Status::Current => "Current",
            Status::InProgress(_) => "InProgress",
            Status::Failed(_) => "Failed",
            Status::Unknown(_) => "Unknown",
        }
    }

    /// Why the object is not Current; `None` when it is.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Status::Current => None,
            Status::InProgress(r) | Status::Failed(r) | Status::Unknown(r) => Some(r),
        }
    }

    pub fn is_current(&self) -> bool {
        matches!(self, Status::Current)
    }

    pub fn is_failed(&self) -> bool {
        matches!(self, Status::Failed(_))
    }
}

/// `Current`, or `InProgress: 1 of 3 replicas updated`.
impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason() {
            None => f.write_str(self.label()),
            Some(reason) => write!(f, "{}: {reason}", self.label()),
        }
    }
}

/// `{"status": "Failed", "reason": "..."}`, the reason left out when Current: the shape of an
/// object's final status in `-o json` reports.
impl serde::Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let reason = self.reason();
        let mut s = serializer.serialize_struct("Status", 1 + usize::from(reason.is_some()))?;
        s.serialize_field("status", self.label())?;
        if let Some(reason) = reason {
            s.serialize_field("reason", reason)?;
        }
        s.end()
    }
}

/// A kind's own rule.
type Rule = fn(&Value, &[Condition]) -> Result<Status, Malformed>;

/// The rule for `kind` in API `group` (`""` for the core group), if it has one. Matching the
/// group too keeps a custom kind that happens to be called `Deployment` on the generic rules.
fn rule_for(group: &str, kind: &str) -> Option<Rule> {
    Some(match (group, kind) {
        ("apps", "Deployment") => workloads::deployment,
        ("apps", "StatefulSet") => workloads::statefulset,
        ("apps", "DaemonSet") => workloads::daemonset,
        ("apps", "ReplicaSet") => workloads::replicaset,
        ("batch", "Job") => workloads::job,
        ("", "Pod") => core_kinds::pod,
        ("", "PersistentVolumeClaim") => core_kinds::pvc,
        ("", "Service") => core_kinds::service,
        ("", "Namespace") => core_kinds::namespace,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => core_kinds::crd,
        _ => return None,
    })
}

/// The readiness of `object` (a live object as the API server returns it, status included).
pub fn compute(object: &Value) -> Status {
    judge(object).unwrap_or_else(Status::Unknown)
}

fn judge(object: &Value) -> Result<Status, Malformed> {
    if !object.is_object() {
        return Err("not a Kubernetes object (expected a mapping)".into());
    }
    let kind = fields::string(object, "/kind")?
        .filter(|k| !k.is_empty())
        .ok_or("the object has no kind")?;
    let api_version = fields::string(object, "/apiVersion")?.unwrap_or("");
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    match object.get("status") {
        None | Some(Value::Null) | Some(Value::Object(_)) => {}
        Some(_) => return Err("status is not a mapping".into()),
    }
    let conditions = fields::conditions(object)?;
    if let Some(status) = generic::before_kind(object, kind, &conditions)? {
        return Ok(status);
    }
    match rule_for(group, kind) {
        Some(rule) => rule(object, &conditions),
        None => generic::by_conditions(object, &conditions),
    }
}

/// The annotation that leaves an object out of `--wait`.
pub const WAIT_ANNOTATION: &str = "tend.dev/wait";
/// The one value of [`WAIT_ANNOTATION`].
pub const WAIT_SKIP: &str = "skip";

/// Whether the object is annotated `tend.dev/wait: skip`. Any other value does not skip
/// (rendering refuses other values, see [`check_wait_annotation`]).
pub fn wait_skipped(object: &Value) -> bool {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(WAIT_ANNOTATION))
        .and_then(Value::as_str)
        == Some(WAIT_SKIP)
}

/// Check the value of the object's `tend.dev/wait` annotation, if it has one. An unknown value
/// is an error, not ignored: a typo (`skipp`, `false`) would otherwise silently wait on, or
/// fail on, an object the author meant to leave out. The message says what is wrong and how to
/// fix it; the renderer adds file:line.
pub fn check_wait_annotation(object: &Value) -> Result<(), String> {
    let Some(value) = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(WAIT_ANNOTATION))
    else {
        return Ok(());
    };
    match value.as_str() {
        Some(WAIT_SKIP) => Ok(()),
        Some(other) => Err(format!(
            "annotation {WAIT_ANNOTATION} is {other:?}; its only value is \"{WAIT_SKIP}\" (leave this object out of --wait): set it to \"{WAIT_SKIP}\" or remove it"
        )),
        None => Err(format!(
            "annotation {WAIT_ANNOTATION} is {value}, not a string; its only value is \"{WAIT_SKIP}\" (leave this object out of --wait): set it to \"{WAIT_SKIP}\" or remove it"
        )),
    }
}
