//! Rules for core kinds whose readiness is not a rollout (Pod, PersistentVolumeClaim, Service,
//! Namespace) and for CustomResourceDefinitions.

use super::fields::{self, find, Condition, Malformed};
use super::Status;
use serde_json::Value;

/// Container waiting reasons that will not resolve without a change to the Pod: a container
/// that keeps crashing (kstatus: Failed) and an image reference that cannot be parsed. Other
/// waiting reasons (`ImagePullBackOff`, `ErrImagePull`, `CreateContainerConfigError`) can clear
/// on their own once the image is pushed or the Secret/ConfigMap created, so they stay
/// InProgress and are named.
const HOPELESS_WAITING: &[&str] = &["CrashLoopBackOff", "InvalidImageName"];

/// Waiting reasons that are just the normal way to start, not worth naming.
const ROUTINE_WAITING: &[&str] = &["ContainerCreating", "PodInitializing"];

/// A container that is waiting, with why.
struct Waiting<'a> {
    container: &'a str,
    reason: &'a str,
    message: &'a str,
}

impl Waiting<'_> {
    fn describe(&self) -> String {
        let message = fields::one_line(self.message);
        if message.is_empty() {
            format!("{}: container {}", self.reason, self.container)
        } else {
            format!("{}: container {}: {message}", self.reason, self.container)
        }
    }
}

/// A string field of a container status entry, empty when absent.
fn text<'a>(entry: &'a Value, key: &str) -> &'a str {
    entry.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Waiting containers, init containers first (they run, and block, first).
fn waiting_containers(object: &Value) -> Result<Vec<Waiting<'_>>, Malformed> {
    let mut waiting = Vec::new();
    for pointer in ["/status/initContainerStatuses", "/status/containerStatuses"] {
        for entry in fields::list(object, pointer)? {
            let Some(state) = entry.pointer("/state/waiting") else {
                continue;
            };
            waiting.push(Waiting {
                container: text(entry, "name"),
                reason: text(state, "reason"),
                message: text(state, "message"),
            });
        }
    }
    Ok(waiting)
}

/// Pod: Current when Running and Ready, or Succeeded. Failed when the phase is Failed (kstatus
/// calls that Current, "completed"; for a Pod tend applied itself, a failed run is a failure),
/// or a container is in CrashLoopBackOff / has an invalid image name. Unschedulable stays
/// InProgress with the scheduler's message: kstatus fails it after 15 s, which needs a clock,
/// and the condition can clear when nodes are added.
pub(super) fn pod(object: &Value, conditions: &[Condition]) -> Result<Status, Malformed> {
    let phase = fields::string(object, "/status/phase")?.unwrap_or("");
    match phase {
        "Succeeded" => return Ok(Status::Current),
        "Failed" => return Ok(Status::Failed(pod_failure(object)?)),
        "Running" | "Pending" => {}
        "" => {
            return Ok(Status::InProgress(
                "not scheduled yet (no status.phase)".into(),
            ))
        }
        "Unknown" => {
            return Ok(Status::Unknown(
                "phase Unknown: the Pod's node stopped reporting its state".into(),
            ))
        }
        other => return Err(format!("status.phase is {other:?}, not a Pod phase")),
    }
    let ready = find(conditions, "Ready");
    if phase == "Running" && ready.is_some_and(Condition::is_true) {
        return Ok(Status::Current);
    }
    let waiting = waiting_containers(object)?;
    if let Some(w) = waiting
        .iter()
        .find(|w| HOPELESS_WAITING.contains(&w.reason))
    {
        return Ok(Status::Failed(w.describe()));
    }
    let scheduled = find(conditions, "PodScheduled");
    if let Some(c) = scheduled.filter(|c| c.is_false()) {
        return Ok(Status::InProgress(c.describe()));
    }
    if let Some(w) = waiting
        .iter()
        .find(|w| !w.reason.is_empty() && !ROUTINE_WAITING.contains(&w.reason))
    {
        return Ok(Status::InProgress(w.describe()));
    }
    Ok(Status::InProgress(match (phase, ready) {
        ("Running", Some(c)) => format!("running, not ready ({})", c.describe()),
        ("Running", None) => "running, not ready".into(),
        _ if scheduled.is_none() => "waiting to be scheduled".into(),
        _ => "starting (phase Pending)".into(),
    }))
}

/// Why a Pod failed: its own reason (`Evicted`, `DeadlineExceeded`), else the first container
/// that exited unsuccessfully.
fn pod_failure(object: &Value) -> Result<String, Malformed> {
    let reason = fields::one_line(fields::string(object, "/status/reason")?.unwrap_or(""));
    let message = fields::one_line(fields::string(object, "/status/message")?.unwrap_or(""));
    match (reason.as_str(), message.as_str()) {
        ("", "") => {}
        (reason, "") => return Ok(reason.to_string()),
        ("", message) => return Ok(message.to_string()),
        (reason, message) => return Ok(format!("{reason}: {message}")),
    }
    for pointer in ["/status/initContainerStatuses", "/status/containerStatuses"] {
        for entry in fields::list(object, pointer)? {
            let Some(state) = entry.pointer("/state/terminated") else {
                continue;
            };
            let code = state.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
            if code == 0 {
                continue;
            }
            let name = text(entry, "name");
            let why = text(state, "reason");
            return Ok(format!(
                "container {name} exited with code {code}{}",
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({why})")
                }
            ));
        }
    }
    Ok("phase Failed".into())
}

/// PersistentVolumeClaim: Current when Bound; Lost (its volume is gone) is Failed; Pending
/// (including a claim whose StorageClass binds on first use) is InProgress.
pub(super) fn pvc(object: &Value, _conditions: &[Condition]) -> Result<Status, Malformed> {
    match fields::string(object, "/status/phase")? {
        Some("Bound") => Ok(Status::Current),
        Some("Pending") | None => Ok(Status::InProgress(
            "phase Pending: not bound to a PersistentVolume yet".into(),
        )),
        Some("Lost") => Ok(Status::Failed(
            "phase Lost: the PersistentVolume bound to this claim no longer exists".into(),
        )),
        Some(other) => Err(format!(
            "status.phase is {other:?}, not a PersistentVolumeClaim phase"
        )),
    }
}

/// Service: a LoadBalancer Service is Current once its load balancer has an address
/// (`status.loadBalancer.ingress`); every other type is Current as soon as it exists (the API
/// server assigns the cluster IP when it creates it).
pub(super) fn service(object: &Value, _conditions: &[Condition]) -> Result<Status, Malformed> {
    if fields::string(object, "/spec/type")? != Some("LoadBalancer") {
        return Ok(Status::Current);
    }
    Ok(
        if fields::list(object, "/status/loadBalancer/ingress")?.is_empty() {
            Status::InProgress(
                "waiting for the load balancer to be provisioned (no status.loadBalancer.ingress yet)"
                    .into(),
            )
        } else {
            Status::Current
        },
    )
}

/// Namespace: Current when Active. (A terminating Namespace has a deletionTimestamp and was
/// already decided by the generic rules; the phase check covers a status written without it.)
pub(super) fn namespace(object: &Value, _conditions: &[Condition]) -> Result<Status, Malformed> {
    match fields::string(object, "/status/phase")? {
        Some("Active") | None => Ok(Status::Current),
        Some("Terminating") => Ok(Status::InProgress("Terminating: being deleted".into())),
        Some(other) => Err(format!("status.phase is {other:?}, not a Namespace phase")),
    }
}

/// CustomResourceDefinition: Current when `Established`; Failed when its names are refused
/// (`NamesAccepted=False`, e.g. a plural already used by another CRD) or it is not established
/// for a reason other than still `Installing`.
pub(super) fn crd(_object: &Value, conditions: &[Condition]) -> Result<Status, Malformed> {
    if let Some(c) = find(conditions, "NamesAccepted").filter(|c| c.is_false()) {
        return Ok(Status::Failed(c.describe()));
    }
    match find(conditions, "Established") {
        Some(c) if c.is_true() => Ok(Status::Current),
        Some(c) if c.is_false() && c.reason != "Installing" => Ok(Status::Failed(c.describe())),
        Some(c) => Ok(Status::InProgress(c.describe())),
        None => Ok(Status::InProgress(
            "not established yet (no Established condition)".into(),
        )),
    }
}
