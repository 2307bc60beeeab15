//! A Pod in a namespace created by the same run. On a real cluster the namespace's
//! `default` ServiceAccount appears a moment after the namespace (kube-controller-manager
//! creates it), and until then the ServiceAccount admission plugin refuses the Pod with
//! 403 `serviceaccount "default" not found`. tend retries that refusal, and only that one.

use crate::common::*;
use std::time::{Duration, Instant};
use tend_testserver::{Fault, TestCluster, TestClusterOptions};

const NS: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fresh\n";

const POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: worker
  namespace: fresh
spec:
  containers:
  - name: worker
    image: busybox:1.36
    command: [sleep, infinity]
";

/// A cluster whose controllers take 2 s to set up a new namespace.
fn slow_cluster() -> TestCluster {
    TestCluster::start_with(TestClusterOptions {
        namespace_setup_delay: Duration::from_secs(2),
        ..TestClusterOptions::default()
    })
}

fn pod_refusals(cluster: &TestCluster) -> usize {
    cluster
        .requests()
        .iter()
        .filter(|r| r.resource == "pods" && r.status == Some(403))
        .count()
}

#[test]
fn pod_in_a_new_namespace_waits_for_its_service_account() {
    let cluster = slow_cluster();
    let dir = site(&[("ns.yaml", NS), ("pod.yaml", POD)]);
    let started = Instant::now();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let pod = cluster
        .object("", "pods", "fresh", "worker")
        .expect("the Pod was created");
    assert_eq!(pod["spec"]["serviceAccountName"], "default");
    assert!(
        pod_refusals(&cluster) >= 1,
        "the race happened: the Pod was refused before the ServiceAccount existed"
    );
    assert!(started.elapsed() >= Duration::from_secs(2));
    // The next run finds everything in place.
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

#[test]
fn other_forbidden_pods_are_not_retried() {
    let cluster = TestCluster::start();
    cluster.inject(
        Fault::status(403)
            .method("PATCH")
            .path_contains("/namespaces/fresh/pods")
            .message(r#"pods "worker" is forbidden: User "ci" cannot patch resource "pods" in API group "" in the namespace "fresh""#)
            .always(),
    );
    let dir = site(&[("ns.yaml", NS), ("pod.yaml", POD)]);
    let started = Instant::now();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("forbidden"), "{stderr}");
    let writes = cluster
        .requests()
        .iter()
        .filter(|r| r.resource == "pods" && r.verb.is_mutating())
        .count();
    assert_eq!(writes, 1, "one attempt, no retries");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(cluster.object("", "namespaces", "", "fresh").is_some());
}

#[test]
fn a_service_account_that_never_comes_fails_after_the_wait() {
    // A ServiceAccount named in the Pod that nothing creates: refused until tend gives up.
    let cluster = TestCluster::start();
    let pod = POD.replace("spec:\n", "spec:\n  serviceAccountName: robot\n");
    let dir = site(&[("ns.yaml", NS), ("pod.yaml", &pod)]);
    let started = Instant::now();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(r#"serviceaccount "robot" not found"#),
        "{stderr}"
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(10) && waited < Duration::from_secs(30),
        "{waited:?}"
    );
    assert!(pod_refusals(&cluster) > 3);
}
