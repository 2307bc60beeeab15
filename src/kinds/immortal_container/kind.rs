//! ImmortalContainer as one of tend's kinds: its checks, what it expands to, its status.

use super::{pod, validate_name, ImmortalContainer, ImmortalContainerStatus};
use crate::kinds::run::RunState;
use crate::object::ObjectKey;
use serde::Deserialize;
use crate::kinds::{Expansion, FieldProblem, Kind, TendKind};

impl Kind for ImmortalContainer {
    const KIND: TendKind = TendKind::ImmortalContainer;
    const OWNS_GENERATED: bool = true;
    type Status = ImmortalContainerStatus;

    fn validate(&self) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        validate_name(&self.metadata, &mut problems);
        self.spec.validate(&mut problems);
        problems
    }

    fn expand(&self) -> Expansion {
        Expansion {
            objects: vec![pod::pod_value(self)],
            note: None,
        }
    }

    /// Every pod this run started counts once; a pod that exists was started at least once,
    /// even if the status write that counted it failed.
    fn status(&self, run: &RunState<'_>) -> Option<ImmortalContainerStatus> {
        let me = self.key();
        let pod = ObjectKey {
            group: String::new(),
            kind: "Pod".into(),
            namespace: me.namespace.clone(),
            name: pod::pod_name(self),
        };
        let before = run
            .current(&me)
            .and_then(|l| l.get("status"))
            .and_then(|s| ImmortalContainerStatus::deserialize(s).ok())
            .map_or(0, |s| s.start_times);
        let started = run.started.contains(&pod);
        let observed = run.observed.get(&pod);
        let exists = started || observed.is_some();
        let pod_ready = observed
            .and_then(|p| p.pointer("/status/conditions"))
            .and_then(serde_json::Value::as_array)
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
        // Reasons in kstatus's "not yet" vocabulary (Starting, NotReady): readers wait on them.
        let condition = match (started, pod_ready) {
            (true, _) => run.ready_condition(
                &me,
                false,
                "PodStarting",
                format!("pod {} was (re)created by this run", pod.name),
            ),
            (false, true) => {
                run.ready_condition(&me, true, "PodReady", format!("pod {} is ready", pod.name))
            }
            (false, false) => run.ready_condition(
                &me,
                false,
                "PodNotReady",
                format!("pod {} is not ready", pod.name),
            ),
        };
        Some(ImmortalContainerStatus {
            start_times: (before + i64::from(started)).max(i64::from(exists)),
            current_pod: exists.then_some(pod.name),
            observed_generation: run.generation(&me),
            conditions: vec![condition],
        })
    }
}
