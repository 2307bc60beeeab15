//! RegistryMirror as one of tend's kinds: its checks, what it expands to, its status.

use super::{expand, validate_name, RegistryMirror, RegistryMirrorStatus};
use crate::kinds::run::RunState;
use crate::object::ObjectKey;
use crate::kinds::{Expansion, FieldProblem, Kind, TendKind};

impl Kind for RegistryMirror {
    const KIND: TendKind = TendKind::RegistryMirror;
    const OWNS_GENERATED: bool = true;
    type Status = RegistryMirrorStatus;

    fn validate(&self) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        validate_name(&self.metadata, &mut problems);
        self.spec.validate(&mut problems);
        problems
    }

    fn clusters(&self) -> Option<&[String]> {
        self.spec.clusters.as_deref()
    }

    fn expand(&self) -> Expansion {
        Expansion {
            objects: expand::objects(self),
            note: None,
        }
    }

    /// Ready replicas of its StatefulSet as read before applying; the generation applied.
    fn status(&self, run: &RunState<'_>) -> Option<RegistryMirrorStatus> {
        let me = self.key();
        let sts = ObjectKey {
            group: "apps".into(),
            kind: "StatefulSet".into(),
            ..me.clone()
        };
        let ready = run
            .observed
            .get(&sts)
            .and_then(|s| s.pointer("/status/readyReplicas"))
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(0);
        let endpoint = expand::endpoint(self);
        let condition = if ready >= 1 {
            run.ready_condition(
                &me,
                true,
                "RegistryReady",
                format!("the registry is ready; nodes pull through {endpoint}"),
            )
        } else {
            // "NotReady": kstatus readers wait on it rather than fail.
            run.ready_condition(
                &me,
                false,
                "RegistryNotReady",
                format!("StatefulSet {} has no ready replica yet", sts.name),
            )
        };
        Some(RegistryMirrorStatus {
            ready_replicas: i32::try_from(ready).unwrap_or(i32::MAX),
            endpoint: Some(endpoint),
            observed_generation: run.generation(&me),
            conditions: vec![condition],
        })
    }
}
