//! What the apply stage knows once its stages ran ([`RunState`]), plain data that tend's
//! kinds compute their statuses from ([`super::after_apply`] turns it into the writes).

use crate::object::ObjectKey;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// The result of one rule, for its status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CopyOutcome {
    pub rule: String,
    pub copies: usize,
    pub targets: Vec<String>,
    /// `<namespace>/<name>` of objects in the way that tend did not create.
    pub conflicts: Vec<String>,
}

/// A HelmChart's release as this run rendered it, for its status.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseOutcome {
    /// The HelmChart.
    pub helm_chart: ObjectKey,
    /// The chart's name, its version (as resolved from a repository's range), its
    /// `appVersion`, and the archive's digest for a chart from a repository.
    pub chart: String,
    pub version: String,
    pub app_version: Option<String>,
    pub digest: Option<String>,
    /// What `.Capabilities.KubeVersion` reported.
    pub kube_version: String,
    /// The files its templates rendered to (see `render::helm_charts`): its objects' origin.
    pub files: BTreeSet<std::path::PathBuf>,
    /// How many objects it rendered (tests and left-out hooks aside).
    pub objects: usize,
}

/// What the apply stage knows once every stage ran.
#[derive(Debug, Clone, Copy)]
pub struct RunState<'a> {
    /// Desired objects as read from the cluster before applying, by key. Needs at least the
    /// tend objects and what their statuses count: mirrors' StatefulSets, immortal pods.
    pub observed: &'a HashMap<ObjectKey, Value>,
    /// tend objects as this run's applies returned them (newer than `observed`).
    pub applied: &'a HashMap<ObjectKey, Value>,
    /// Pods this run created or recreated without error (ImmortalContainer starts).
    pub started: &'a BTreeSet<ObjectKey>,
    /// What each CopyRule's expansion found.
    pub copy_outcomes: &'a [CopyOutcome],
    /// Each HelmChart's release, with how many of its objects failed to apply.
    pub releases: &'a [(ReleaseOutcome, usize)],
    /// The time statuses are stamped with.
    pub now: Timestamp,
}

impl RunState<'_> {
    /// The object as the cluster has it now: as applied this run, else as read before.
    pub fn current(&self, key: &ObjectKey) -> Option<&Value> {
        self.applied.get(key).or_else(|| self.observed.get(key))
    }
}

impl RunState<'_> {
    /// The `metadata.generation` of a tend object as it is now (the status describes it).
    pub fn generation(&self, key: &ObjectKey) -> Option<i64> {
        self.current(key)
            .and_then(|l| l.pointer("/metadata/generation"))
            .and_then(Value::as_i64)
    }

    /// The `Ready` condition of a tend object's status, so kstatus-speaking tools (Flux, kpt,
    /// Argo CD health checks) understand tend's kinds. The transition time is kept from the
    /// previous status while `ready` does not change: otherwise every run would rewrite it.
    pub fn ready_condition(
        &self,
        key: &ObjectKey,
        ready: bool,
        reason: &str,
        message: String,
    ) -> Condition {
        let status = if ready { "True" } else { "False" };
        let since = self
            .current(key)
            .and_then(|l| l.pointer("/status/conditions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Ready" && c["status"] == status)
            .and_then(|c| c["lastTransitionTime"].as_str())
            .and_then(|t| t.parse::<Timestamp>().ok())
            .unwrap_or(self.now);
        Condition {
            type_: "Ready".into(),
            status: status.into(),
            reason: reason.into(),
            message,
            observed_generation: self.generation(key),
            last_transition_time: Time(since),
        }
    }
}
