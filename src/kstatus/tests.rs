//! The status rules against fixtures of real status blocks (`fixtures/*.yaml`, one document per
//! state, named by `metadata.name`), plus the edge cases fixtures cannot show.

use super::*;
use serde::Deserialize;
use serde_json::json;

fn ip(reason: &str) -> Status {
    Status::InProgress(reason.into())
}

fn failed(reason: &str) -> Status {
    Status::Failed(reason.into())
}

const CURRENT: Status = Status::Current;

/// The documents of a fixture file, by `metadata.name`.
fn documents(file: &str, text: &str) -> Vec<(String, Value)> {
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| {
            let value = Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("fixtures/{file} does not parse: {e}"));
            let name = value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("a document in fixtures/{file} has no metadata.name"))
                .to_string();
            (name, value)
        })
        .collect()
}

/// Assert the status of every document of a fixture file; every document must be listed, so
/// no fixture goes unchecked.
fn check(file: &str, text: &str, expected: &[(&str, Status)]) {
    let docs = documents(file, text);
    for (name, _) in &docs {
        assert!(
            expected.iter().any(|(n, _)| n == name),
            "fixtures/{file}: document {name} has no expected status"
        );
    }
    for (name, want) in expected {
        let (_, object) = docs
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("fixtures/{file} has no document {name}"));
        assert_eq!(&compute(object), want, "fixtures/{file}: {name}");
    }
}

#[test]
fn deployments() {
    check(
        "deployment.yaml",
        include_str!("fixtures/deployment.yaml"),
        &[
            ("rolled-out", CURRENT),
            ("rolling", ip("1 of 3 replicas updated")),
            (
                "deadline-exceeded",
                failed("ProgressDeadlineExceeded: ReplicaSet \"web-6b8d9c7f4d\" has timed out progressing."),
            ),
            (
                "quota-exceeded",
                ip("2 of 3 replicas created; FailedCreate: pods \"web-4262182780-\" is forbidden: exceeded quota: object-counts, requested: pods=1, used: pods=3, limited: pods=2"),
            ),
            (
                "new-generation",
                ip("the controller has observed generation 2, not yet generation 3"),
            ),
            (
                "just-created",
                ip("waiting for the Deployment controller to report status (no status.observedGeneration yet)"),
            ),
            ("scaled-to-zero", CURRENT),
            ("paused", CURRENT),
            (
                "terminating",
                ip("Terminating: being deleted; waiting for finalizers foregroundDeletion"),
            ),
        ],
    );
}

#[test]
fn statefulsets() {
    check(
        "statefulset.yaml",
        include_str!("fixtures/statefulset.yaml"),
        &[
            ("ready", CURRENT),
            ("scaling-up", ip("2 of 3 replicas created")),
            (
                "rolling",
                ip("1 of 3 replicas updated to revision postgres-7f8e9d6c5"),
            ),
            ("partition-done", CURRENT),
            (
                "partition-rolling",
                ip("1 of 2 replicas updated (partition 1)"),
            ),
            ("on-delete", CURRENT),
            (
                "just-created",
                ip("waiting for the StatefulSet controller to report status (no status.observedGeneration yet)"),
            ),
        ],
    );
}

#[test]
fn daemonsets() {
    check(
        "daemonset.yaml",
        include_str!("fixtures/daemonset.yaml"),
        &[
            ("ready", CURRENT),
            ("rolling", ip("1 of 3 pods updated")),
            ("not-ready", ip("2 of 3 pods ready")),
            ("on-delete", CURRENT),
            (
                "new-generation",
                ip("the controller has observed generation 1, not yet generation 2"),
            ),
            (
                "just-created",
                ip("waiting for the DaemonSet controller to report status (no status.observedGeneration yet)"),
            ),
        ],
    );
}

#[test]
fn replicasets() {
    check(
        "replicaset.yaml",
        include_str!("fixtures/replicaset.yaml"),
        &[
            ("ready", CURRENT),
            (
                "quota-exceeded",
                ip("2 of 3 replicas created; FailedCreate: pods \"web-4262182780-7xkqz\" is forbidden: exceeded quota: object-counts, requested: pods=1, used: pods=3, limited: pods=2"),
            ),
            ("not-ready", ip("2 of 3 replicas ready")),
        ],
    );
}

#[test]
fn jobs() {
    check(
        "job.yaml",
        include_str!("fixtures/job.yaml"),
        &[
            ("complete", CURRENT),
            (
                "running",
                ip("running: 0 of 1 completions succeeded, 1 active, 0 failed"),
            ),
            (
                "backoff-limit",
                failed("BackoffLimitExceeded: Job has reached the specified backoff limit"),
            ),
            (
                "deadline",
                failed("DeadlineExceeded: Job was active longer than specified deadline"),
            ),
            ("suspended", CURRENT),
            ("not-started", ip("not started yet")),
            ("work-queue", ip("running: 0 succeeded, 2 active, 1 failed")),
        ],
    );
}

#[test]
fn pods() {
    check(
        "pod.yaml",
        include_str!("fixtures/pod.yaml"),
        &[
            ("running-ready", CURRENT),
            (
                "running-not-ready",
                ip("running, not ready (ContainersNotReady: containers with unready status: [web])"),
            ),
            (
                "crash-loop",
                failed("CrashLoopBackOff: container api: back-off 2m40s restarting failed container=api pod=crash-loop_default(5c6d7e8f-90a1-4bc2-d3e4-f5061728394a)"),
            ),
            (
                "image-pull-backoff",
                ip("ImagePullBackOff: container web: Back-off pulling image \"nginx:1.99\""),
            ),
            (
                "unschedulable",
                ip("Unschedulable: 0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."),
            ),
            ("succeeded", CURRENT),
            ("failed", failed("container once exited with code 1 (Error)")),
            (
                "evicted",
                failed("Evicted: The node was low on resource: memory. Threshold quantity: 100Mi, available: 91316Ki."),
            ),
            (
                "invalid-image",
                failed("InvalidImageName: container web: Failed to apply default image tag \"nginx:\": couldn't parse image name \"nginx:\": invalid reference format"),
            ),
            (
                "init-crash-loop",
                failed("CrashLoopBackOff: container migrate: back-off 1m20s restarting failed container=migrate pod=init-crash-loop_default(c3d4e5f6-0718-4293-a4b5-c6d7e8f9a0b2)"),
            ),
            ("container-creating", ip("starting (phase Pending)")),
            ("just-created", ip("waiting to be scheduled")),
        ],
    );
}

#[test]
fn persistent_volume_claims() {
    check(
        "pvc.yaml",
        include_str!("fixtures/pvc.yaml"),
        &[
            ("bound", CURRENT),
            (
                "pending",
                ip("phase Pending: not bound to a PersistentVolume yet"),
            ),
            (
                "lost",
                failed("phase Lost: the PersistentVolume bound to this claim no longer exists"),
            ),
        ],
    );
}

#[test]
fn services() {
    check(
        "service.yaml",
        include_str!("fixtures/service.yaml"),
        &[
            ("cluster-ip", CURRENT),
            (
                "lb-pending",
                ip("waiting for the load balancer to be provisioned (no status.loadBalancer.ingress yet)"),
            ),
            ("lb-ip", CURRENT),
            ("lb-hostname", CURRENT),
            ("external-name", CURRENT),
        ],
    );
}

#[test]
fn namespaces() {
    check(
        "namespace.yaml",
        include_str!("fixtures/namespace.yaml"),
        &[
            ("active", CURRENT),
            (
                "terminating",
                ip("Terminating: being deleted; SomeResourcesRemain: Some resources are remaining: pods. has 1 resource instances"),
            ),
        ],
    );
}

#[test]
fn custom_resource_definitions() {
    check(
        "crd.yaml",
        include_str!("fixtures/crd.yaml"),
        &[
            ("registrymirrors.tend.dev", CURRENT),
            (
                "copyrules.tend.dev",
                ip("Installing: the initial names have been accepted"),
            ),
            (
                "mirrors.tend.dev",
                failed("KindConflict: \"RegistryMirror\" is already in use"),
            ),
        ],
    );
}

#[test]
fn custom_resources() {
    check(
        "custom.yaml",
        include_str!("fixtures/custom.yaml"),
        &[
            ("cert-ready", CURRENT),
            (
                "cert-issuing",
                ip("DoesNotExist: Issuing certificate as Secret does not exist"),
            ),
            (
                "cert-stale",
                ip("the Ready condition is for generation 1; waiting for the controller to observe generation 2"),
            ),
            ("flux-ready", CURRENT),
            (
                "flux-reconciling",
                ip("ProgressingWithRetry: Building manifests for revision main@sha1:5b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e with a timeout of 9m30s"),
            ),
            (
                "flux-dependency-not-ready",
                ip("DependencyNotReady: dependency 'flux-system/infra' is not ready"),
            ),
            (
                "flux-build-failed",
                failed("ArtifactFailed: kustomization path not found: stat /tmp/kustomization-1573389254/apps/staging: no such file or directory"),
            ),
            (
                "flux-stalled",
                failed("RetriesExceeded: Failed to install after 1 attempt(s)"),
            ),
            ("crossplane-creating", ip("Creating")),
            (
                "widget-invalid",
                failed("InvalidSpec: spec.size must be positive"),
            ),
            ("not-apps-deployment", CURRENT),
            ("mirror-serving", CURRENT),
            (
                "mirror-progressing",
                ip("Progressing: StatefulSet registry/docker-io: 1 of 2 replicas ready"),
            ),
            (
                "immortal-failed",
                failed("PodFailed: Pod default/immortal-failed-immortalpod: CrashLoopBackOff: container nginx: back-off 40s restarting failed container=nginx"),
            ),
        ],
    );
}

#[test]
fn kinds_without_readiness() {
    check(
        "other.yaml",
        include_str!("fixtures/other.yaml"),
        &[
            ("configmap", CURRENT),
            ("secret", CURRENT),
            ("serviceaccount", CURRENT),
            ("clusterrole", CURRENT),
            ("cronjob", CURRENT),
            ("pdb", CURRENT),
            (
                "v1beta1.metrics.k8s.io",
                ip("MissingEndpoints: endpoints for service/metrics-server in \"kube-system\" have no addresses with port name \"https\""),
            ),
            ("v1beta1.custom.metrics.k8s.io", CURRENT),
        ],
    );
}

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
        include_str!("fixtures/deployment.yaml"),
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
            include_str!("fixtures/statefulset.yaml"),
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
        include_str!("fixtures/daemonset.yaml"),
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
    let job = |name| fixture("job.yaml", include_str!("fixtures/job.yaml"), name);
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

mod properties {
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
                .prop_map(|m| Value::Object(
                    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
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
}
