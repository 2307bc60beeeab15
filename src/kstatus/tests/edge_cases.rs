//! What fixtures cannot show: unreadable and malformed objects, each kind's edge cases, the
//! generic condition rules, reasons, display, and the `tend.dev/wait` annotation.

use super::*;

/// One fixture document, to vary in a test.
fn fixture(file: &str, text: &str, name: &str) -> Value {
    documents(file, text)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("fixtures/{file} has no document {name}"))
}

fn deployment(name: &str) -> Value {
    fixture(
        "deployment.yaml",
        include_str!("../fixtures/deployment.yaml"),
        name,
    )
}

#[test]
fn unreadable_objects_are_unknown() {
    assert_eq!(
        compute(&json!("a string")),
        Status::Unknown("not a Kubernetes object (expected a mapping)".into())
    );
    assert_eq!(
        compute(&json!({"apiVersion": "v1", "metadata": {"name": "x"}})),
        Status::Unknown("the object has no kind".into())
    );
    assert_eq!(
        compute(&json!({"apiVersion": "v1", "kind": "ConfigMap", "status": "ok"})),
        Status::Unknown("status is not a mapping".into())
    );

    let mut d = deployment("rolled-out");
    d["status"]["updatedReplicas"] = json!("3");
    assert_eq!(
        compute(&d),
        Status::Unknown("status.updatedReplicas is \"3\", not an integer".into())
    );
    let mut d = deployment("rolled-out");
    d["metadata"]["generation"] = json!(1.5);
    assert_eq!(
        compute(&d),
        Status::Unknown("metadata.generation is 1.5, not an integer".into())
    );
    let mut d = deployment("rolled-out");
    d["spec"]["paused"] = json!("yes");
    assert_eq!(
        compute(&d),
        Status::Unknown("spec.paused is \"yes\", not true/false".into())
    );

    let pod = |phase: &str| json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": phase}});
    assert_eq!(
        compute(&pod("Unknown")),
        Status::Unknown("phase Unknown: the Pod's node stopped reporting its state".into())
    );
    assert_eq!(
        compute(&pod("Exploded")),
        Status::Unknown("status.phase is \"Exploded\", not a Pod phase".into())
    );
    let pvc =
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Gone"}});
    assert_eq!(
        compute(&pvc),
        Status::Unknown("status.phase is \"Gone\", not a PersistentVolumeClaim phase".into())
    );
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Idle"}});
    assert_eq!(
        compute(&ns),
        Status::Unknown("status.phase is \"Idle\", not a Namespace phase".into())
    );
    let svc = json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"},
        "status": {"loadBalancer": {"ingress": "203.0.113.10"}}});
    assert_eq!(
        compute(&svc),
        Status::Unknown("status.loadBalancer.ingress is \"203.0.113.10\", not a list".into())
    );
}

#[test]
fn malformed_condition_entries_are_skipped() {
    let mut d = deployment("rolled-out");
    let conditions = d["status"]["conditions"]
        .as_array_mut()
        .expect("conditions");
    conditions.insert(0, json!("Available"));
    conditions.insert(0, json!({"status": "False", "reason": "NoType"}));
    assert_eq!(compute(&d), Status::Current);

    d["status"]["conditions"] = json!({"type": "Available"});
    assert_eq!(
        compute(&d),
        Status::Unknown("status.conditions is a mapping, not a list".into())
    );
}

#[test]
fn deployment_edge_cases() {
    // No progress deadline: the controller keeps no Progressing condition (kstatus's
    // depNoProgressDeadlineSeconds).
    let mut d = deployment("rolled-out");
    d["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("progressDeadlineSeconds");
    d["status"]["conditions"] = json!([{"type": "Available", "status": "True"}]);
    assert_eq!(compute(&d), Status::Current);
    // The "never" deadline counts as none.
    d["spec"]["progressDeadlineSeconds"] = json!(i32::MAX);
    assert_eq!(compute(&d), Status::Current);
    // A real deadline needs the controller's word that the rollout is complete.
    d["spec"]["progressDeadlineSeconds"] = json!(600);
    assert_eq!(
        compute(&d),
        ip("rollout not complete yet (no Progressing condition yet)")
    );
    d["status"]["conditions"] = json!([
        {"type": "Available", "status": "True"},
        {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
         "message": "ReplicaSet \"web-1\" is progressing."}
    ]);
    assert_eq!(
        compute(&d),
        ip("rollout not complete yet (ReplicaSetUpdated: ReplicaSet \"web-1\" is progressing.)")
    );

    // Counts fine, Available=False.
    let mut d = deployment("rolled-out");
    d["status"]["conditions"][0] = json!({"type": "Available", "status": "False",
        "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."});
    assert_eq!(
        compute(&d),
        ip("MinimumReplicasUnavailable: Deployment does not have minimum availability.")
    );

    // spec.replicas defaults to 1.
    let mut d = deployment("rolled-out");
    d["spec"].as_object_mut().expect("spec").remove("replicas");
    d["status"]["replicas"] = json!(0);
    assert_eq!(compute(&d), ip("0 of 1 replicas created"));

    // Old pods still terminating after the new ones are all up.
    let mut d = deployment("rolled-out");
    d["status"]["replicas"] = json!(4);
    assert_eq!(compute(&d), ip("1 old replica pending termination"));

    // Ready but not yet available for minReadySeconds.
    let mut d = deployment("rolled-out");
    d["status"]["availableReplicas"] = json!(2);
    assert_eq!(compute(&d), ip("2 of 3 updated replicas available"));

    // A ProgressDeadlineExceeded from before the last change is not trusted.
    let mut d = deployment("deadline-exceeded");
    d["metadata"]["generation"] = json!(3);
    assert_eq!(
        compute(&d),
        ip("the controller has observed generation 2, not yet generation 3")
    );
}

#[test]
fn statefulset_and_daemonset_edge_cases() {
    let sts = |name| {
        fixture(
            "statefulset.yaml",
            include_str!("../fixtures/statefulset.yaml"),
            name,
        )
    };
    // OnDelete still waits for the pods to be ready.
    let mut s = sts("on-delete");
    s["status"]["readyReplicas"] = json!(2);
    assert_eq!(compute(&s), ip("2 of 3 replicas ready"));
    // minReadySeconds: ready is not enough when the API server reports availability.
    let mut s = sts("ready");
    s["status"]["availableReplicas"] = json!(1);
    assert_eq!(compute(&s), ip("1 of 3 replicas available"));
    // Scale-down in progress.
    let mut s = sts("ready");
    s["spec"]["replicas"] = json!(1);
    assert_eq!(compute(&s), ip("2 extra replicas pending termination"));
    // A partition at or above the replica count updates nothing: nothing to wait for.
    let mut s = sts("partition-rolling");
    s["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = json!(5);
    s["status"]["updatedReplicas"] = json!(0);
    assert_eq!(compute(&s), Status::Current);
    // Revisions match but not every pod is at the current one yet.
    let mut s = sts("ready");
    s["status"]["currentReplicas"] = json!(2);
    assert_eq!(compute(&s), ip("2 of 3 replicas at the current revision"));

    let mut d = fixture(
        "daemonset.yaml",
        include_str!("../fixtures/daemonset.yaml"),
        "ready",
    );
    d["status"]["currentNumberScheduled"] = json!(2);
    assert_eq!(compute(&d), ip("2 of 3 pods scheduled"));
    d["status"]["currentNumberScheduled"] = json!(3);
    d["status"]["numberAvailable"] = json!(2);
    assert_eq!(compute(&d), ip("2 of 3 pods available"));
    d["status"]
        .as_object_mut()
        .expect("status")
        .remove("desiredNumberScheduled");
    assert_eq!(
        compute(&d),
        ip("waiting for the DaemonSet controller to count the nodes (no status.desiredNumberScheduled yet)")
    );
}

#[test]
fn job_edge_cases() {
    let job = |name| fixture("job.yaml", include_str!("../fixtures/job.yaml"), name);
    // spec.suspend before the controller has acknowledged it.
    let mut j = job("not-started");
    j["spec"]["suspend"] = json!(true);
    assert_eq!(compute(&j), Status::Current);
    // FailureTarget alone (pods still terminating) already decides the outcome.
    let mut j = job("running");
    j["status"]["conditions"] = json!([{"type": "FailureTarget", "status": "True",
        "reason": "PodFailurePolicy", "message": "Container main for pod app/running-x failed with exit code 42 matching FailJob rule at index 0"}]);
    assert_eq!(
        compute(&j),
        failed("PodFailurePolicy: Container main for pod app/running-x failed with exit code 42 matching FailJob rule at index 0")
    );
    // A resumed Job (Suspended=False) is running again.
    let mut j = job("running");
    j["status"]["conditions"] = json!([{"type": "Suspended", "status": "False",
        "reason": "JobResumed", "message": "Job resumed"}]);
    assert_eq!(
        compute(&j),
        ip("running: 0 of 1 completions succeeded, 1 active, 0 failed")
    );
}

#[test]
fn pod_edge_cases() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
    assert_eq!(compute(&pod), ip("not scheduled yet (no status.phase)"));
    // Running without a Ready condition at all.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running"}});
    assert_eq!(compute(&pod), ip("running, not ready"));
    // A failed Pod with nothing to say for itself.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Failed"}});
    assert_eq!(compute(&pod), failed("phase Failed"));
    // A missing Secret can still be created: InProgress, named.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [{"name": "app", "state": {"waiting": {
            "reason": "CreateContainerConfigError", "message": "secret \"db\" not found"}}}]}});
    assert_eq!(
        compute(&pod),
        ip("CreateContainerConfigError: container app: secret \"db\" not found")
    );
}

#[test]
fn namespace_and_crd_edge_cases() {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Terminating"}});
    assert_eq!(compute(&ns), ip("Terminating: being deleted"));
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new"}});
    assert_eq!(compute(&ns), Status::Current);
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"}});
    assert_eq!(
        compute(&crd),
        ip("not established yet (no Established condition)")
    );
}

#[test]
fn generic_condition_rules() {
    let cr = |conditions: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "generation": 4},
            "status": {"observedGeneration": 4, "conditions": conditions}})
    };
    // Stalled wins over Ready=True (kstatus checks it before anything else).
    assert_eq!(
        compute(&cr(json!([
            {"type": "Ready", "status": "True", "reason": "Ready"},
            {"type": "Stalled", "status": "True", "reason": "QuotaExhausted", "message": "no capacity left"}
        ]))),
        failed("QuotaExhausted: no capacity left")
    );
    // ...unless the Stalled condition is about an older generation.
    assert_eq!(
        compute(&cr(json!([
            {"type": "Stalled", "status": "True", "reason": "QuotaExhausted", "observedGeneration": 3}
        ]))),
        ip("the Stalled condition is for generation 3; waiting for the controller to observe generation 4")
    );
    // Stalled=False and Reconciling=False mean nothing.
    assert_eq!(
        compute(&cr(json!([
            {"type": "Stalled", "status": "False"},
            {"type": "Reconciling", "status": "False"},
            {"type": "Ready", "status": "True"}
        ]))),
        Status::Current
    );
    // Reconciling=True without reason or message.
    assert_eq!(
        compute(&cr(json!([{"type": "Reconciling", "status": "True"}]))),
        ip("Reconciling is True")
    );
    // Ready=False without a reason: nothing to name, so not a failure.
    assert_eq!(
        compute(&cr(json!([{"type": "Ready", "status": "False"}]))),
        ip("Ready is False")
    );
    assert_eq!(
        compute(&cr(
            json!([{"type": "Ready", "status": "Unknown", "message": "checking"}])
        )),
        ip("checking")
    );
    // Ready decides over Available.
    assert_eq!(
        compute(&cr(json!([
            {"type": "Available", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "Degraded"}
        ]))),
        failed("Degraded")
    );
    // Available=False is never a failure.
    assert_eq!(
        compute(&cr(
            json!([{"type": "Available", "status": "False", "reason": "BrokenDown"}])
        )),
        ip("BrokenDown")
    );
    // A negative observedGeneration (Flux's "never reconciled") is behind.
    let mut w = cr(json!([]));
    w["status"]["observedGeneration"] = json!(-1);
    assert_eq!(
        compute(&w),
        ip("the controller has observed generation -1, not yet generation 4")
    );
    // A deletionTimestamp on a custom resource: finalizers named.
    let mut w = cr(json!([{"type": "Ready", "status": "True"}]));
    w["metadata"]["deletionTimestamp"] = json!("2025-03-17T12:00:00Z");
    w["metadata"]["finalizers"] = json!(["example.com/cleanup", "example.com/backup"]);
    assert_eq!(
        compute(&w),
        ip("Terminating: being deleted; waiting for finalizers example.com/cleanup, example.com/backup")
    );
}

#[test]
fn ready_false_reasons() {
    for reason in [
        "InvalidSpec",
        "X",
        "Degraded",
        "ReconciliationFailed",
        "InstallFailed",
        "UpgradeFailed",
        "ProgressDeadlineExceeded",
        "ErrInitIssuer",
        "AccessDenied",
        "HealthCheckFailed",
        "UpstreamUnreachable",
    ] {
        assert!(
            generic::is_failure_reason(reason),
            "{reason} should be a failure"
        );
    }
    for reason in [
        "",
        "  ",
        "Progressing",
        "ProgressingWithRetry",
        "Reconciling",
        "Pending",
        "InProgress",
        "Creating",
        "Provisioning",
        "Installing",
        "Initializing",
        "WaitingForDatabase",
        "DependencyNotReady",
        "DoesNotExist",
        "Unavailable",
        "Issuing",
        "unknown",
    ] {
        assert!(
            !generic::is_failure_reason(reason),
            "{reason:?} should not be a failure"
        );
    }
}

#[test]
fn status_display_and_json() {
    assert_eq!(Status::Current.to_string(), "Current");
    assert_eq!(
        ip("1 of 3 replicas updated").to_string(),
        "InProgress: 1 of 3 replicas updated"
    );
    assert_eq!(failed("X").label(), "Failed");
    assert_eq!(Status::Unknown("u".into()).reason(), Some("u"));
    assert_eq!(Status::Current.reason(), None);
    assert!(Status::Current.is_current() && !Status::Current.is_failed());
    assert!(failed("X").is_failed() && !failed("X").is_current());
    assert_eq!(
        serde_json::to_value(Status::Current).expect("serialize"),
        json!({"status": "Current"})
    );
    assert_eq!(
        serde_json::to_value(failed("ProgressDeadlineExceeded: timed out")).expect("serialize"),
        json!({"status": "Failed", "reason": "ProgressDeadlineExceeded: timed out"})
    );
}

#[test]
fn wait_annotation() {
    let with = |value: Value| {
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "annotations": {WAIT_ANNOTATION: value}}})
    };
    let plain = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    assert!(wait_skipped(&with(json!("skip"))));
    assert!(!wait_skipped(&plain));
    assert!(!wait_skipped(&with(json!("Skip"))));
    assert!(!wait_skipped(&json!(null)));

    assert_eq!(check_wait_annotation(&plain), Ok(()));
    assert_eq!(check_wait_annotation(&with(json!("skip"))), Ok(()));
    assert_eq!(
        check_wait_annotation(&with(json!("skipp"))),
        Err("annotation tend.dev/wait is \"skipp\"; its only value is \"skip\" (leave this object out of --wait): set it to \"skip\" or remove it".into())
    );
    assert_eq!(
        check_wait_annotation(&with(json!(false))),
        Err("annotation tend.dev/wait is false, not a string; its only value is \"skip\" (leave this object out of --wait): set it to \"skip\" or remove it".into())
    );
}
