//! The rules for every kind (kstatus's generic rules: deletion, generation, `Stalled`,
//! `Reconciling`), and the condition rules for kinds without rules of their own (`Ready`,
//! `Available`).

use super::fields::{self, find, find_true, Condition, Malformed};
use super::Status;
use serde_json::Value;

/// Decide from what every object has, before its kind's own rules; `None` when undecided.
pub(super) fn before_kind(
    object: &Value,
    kind: &str,
    conditions: &[Condition],
) -> Result<Option<Status>, Malformed> {
    if fields::string(object, "/metadata/deletionTimestamp")?.is_some_and(|t| !t.is_empty()) {
        return Ok(Some(Status::InProgress(terminating(
            object, kind, conditions,
        )?)));
    }
    let generation = fields::int(object, "/metadata/generation")?;
    let observed = fields::int(object, "/status/observedGeneration")?;
    if let (Some(generation), Some(observed)) = (generation, observed) {
        if observed < generation {
            return Ok(Some(Status::InProgress(format!(
                "the controller has observed generation {observed}, not yet generation {generation}"
            ))));
        }
    }
    if let Some(stalled) = find_true(conditions, "Stalled") {
        return Ok(Some(match stalled.stale(generation) {
            Some(why) => Status::InProgress(why),
            None => Status::Failed(stalled.describe()),
        }));
    }
    if let Some(reconciling) = find_true(conditions, "Reconciling") {
        return Ok(Some(Status::InProgress(reconciling.describe())));
    }
    Ok(None)
}

/// Why an object with a deletionTimestamp is still there: its finalizers, and for a Namespace
/// what its controller says is left.
fn terminating(object: &Value, kind: &str, conditions: &[Condition]) -> Result<String, Malformed> {
    let mut why = "Terminating: being deleted".to_string();
    let finalizers: Vec<&str> = fields::list(object, "/metadata/finalizers")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if !finalizers.is_empty() {
        why.push_str(&format!(
            "; waiting for finalizers {}",
            finalizers.join(", ")
        ));
    }
    if kind == "Namespace" {
        // NamespaceContentRemaining, NamespaceFinalizersRemaining, NamespaceDeletion*Failure.
        for c in conditions
            .iter()
            .filter(|c| c.is_true() && c.kind.starts_with("Namespace"))
        {
            why.push_str("; ");
            why.push_str(&c.describe());
        }
    }
    Ok(why)
}

/// The status of an object of a kind without rules of its own, from its `Ready` condition, or
/// else its `Available` condition; Current when it has neither (kstatus: nothing says it is
/// not ready, and tend cannot know whether a controller will ever write one).
pub(super) fn by_conditions(object: &Value, conditions: &[Condition]) -> Result<Status, Malformed> {
    let generation = fields::int(object, "/metadata/generation")?;
    for kind in ["Ready", "Available"] {
        let Some(c) = find(conditions, kind) else {
            continue;
        };
        if let Some(why) = c.stale(generation) {
            return Ok(Status::InProgress(why));
        }
        return Ok(if c.is_true() {
            Status::Current
        } else if c.is_false() && kind == "Ready" && is_failure_reason(c.reason) {
            Status::Failed(c.describe())
        } else {
            Status::InProgress(c.describe())
        });
    }
    Ok(Status::Current)
}

/// Reason words that say the object gave up or was refused: checked first, so
/// `ProgressDeadlineExceeded` or `InstallFailed` are failures despite `Progress`/`Install`.
const FAILURE_WORDS: &[&str] = &[
    "fail",
    "error",
    "invalid",
    "exceeded",
    "denied",
    "forbidden",
    "timeout",
    "timedout",
    "rejected",
    "unauthorized",
    "crash",
    "backoff",
];

/// Reason words that say "not yet" (Flux `Progressing`/`DependencyNotReady`, Crossplane
/// `Creating`/`Unavailable`, cert-manager `DoesNotExist`/`Issuing`, operators' `Pending`,
/// `Provisioning`, `WaitingFor...`).
const PROGRESS_WORDS: &[&str] = &[
    "progress",
    "pending",
    "wait",
    "reconcil",
    "creating",
    "provisioning",
    "installing",
    "initializ",
    "starting",
    "updating",
    "upgrading",
    "scaling",
    "deploying",
    "issuing",
    "notready",
    "unavailable",
    "doesnotexist",
    "unknown",
];

/// Whether `Ready=False` with this reason means the object failed rather than is still on its
/// way. SPEC: a `Ready=False` reason fails the wait at once. But many controllers report
/// `Ready=False` while they work (`Progressing`, `Creating`, `DoesNotExist` while a certificate
/// is issued), and failing those would make `--wait` useless for them. The rule:
/// no reason → not a failure (nothing to name); a reason with a failure word → failure;
/// a reason with a progress word → not a failure; any other reason → failure.
/// Matching is case-insensitive on substrings, so `ReconciliationFailed` is a failure and
/// `WaitingForDatabase` is not.
pub(super) fn is_failure_reason(reason: &str) -> bool {
    let reason = reason.trim().to_ascii_lowercase();
    if reason.is_empty() {
        return false;
    }
    if FAILURE_WORDS.iter().any(|w| reason.contains(w)) {
        return true;
    }
    !PROGRESS_WORDS.iter().any(|w| reason.contains(w))
}
