//! The status rules against fixtures of real status blocks (`fixtures/*.yaml`, one document per
//! state, named by `metadata.name`), plus the edge cases fixtures cannot show
//! ([`edge_cases`]) and properties of random objects ([`properties`]).

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
        include_str!("../fixtures/deployment.yaml"),
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
        include_str!("../fixtures/statefulset.yaml"),
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
        include_str!("../fixtures/daemonset.yaml"),
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
        include_str!("../fixtures/replicaset.yaml"),
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
        include_str!("../fixtures/job.yaml"),
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
        include_str!("../fixtures/pod.yaml"),
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
        include_str!("../fixtures/pvc.yaml"),
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
        include_str!("../fixtures/service.yaml"),
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
        include_str!("../fixtures/namespace.yaml"),
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
        include_str!("../fixtures/crd.yaml"),
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
        include_str!("../fixtures/custom.yaml"),
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
        include_str!("../fixtures/other.yaml"),
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

mod edge_cases;
mod properties;
