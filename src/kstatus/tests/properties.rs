//! Properties of the status rules on random objects.

use super::*;
use proptest::prelude::*;

/// JSON trees built from the field names and values the rules read, so that random
/// objects reach deep into the rules.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..5).prop_map(Value::from),
        prop::sample::select(vec![
            "True",
            "False",
            "Unknown",
            "Running",
            "Pending",
            "Failed",
            "Bound",
            "Lost",
            "OnDelete",
            "LoadBalancer",
            "Ready",
            "Stalled",
            "Progressing",
            "ProgressDeadlineExceeded",
            "CrashLoopBackOff",
            "",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "status",
                    "spec",
                    "metadata",
                    "conditions",
                    "type",
                    "reason",
                    "message",
                    "replicas",
                    "readyReplicas",
                    "updatedReplicas",
                    "observedGeneration",
                    "generation",
                    "phase",
                    "containerStatuses",
                    "state",
                    "waiting",
                    "terminated",
                    "exitCode",
                    "updateStrategy",
                    "rollingUpdate",
                    "partition",
                    "loadBalancer",
                    "ingress",
                    "deletionTimestamp",
                    "finalizers",
                    "paused",
                    "suspend",
                ]),
                inner,
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

proptest! {
    /// Any object, however malformed, gets a status, and every non-Current status says why.
    #[test]
    fn compute_is_total(
        kind in prop::sample::select(vec![
            ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"),
            ("apps/v1", "ReplicaSet"), ("batch/v1", "Job"), ("v1", "Pod"),
            ("v1", "PersistentVolumeClaim"), ("v1", "Service"), ("v1", "Namespace"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"), ("example.com/v1", "Widget"),
        ]),
        metadata in value(),
        spec in value(),
        status in value(),
    ) {
        let object = json!({"apiVersion": kind.0, "kind": kind.1,
            "metadata": metadata, "spec": spec, "status": status});
        let result = compute(&object);
        if let Some(reason) = result.reason() {
            prop_assert!(!reason.trim().is_empty(), "{result:?}");
            prop_assert!(!reason.contains('\n'), "{result:?}");
        }
    }
}
