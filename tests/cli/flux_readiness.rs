//! Readiness of Flux's units (README "Coming from Flux", "Readiness"): a unit's dependents,
//! and the end of the run, wait for what its controller would wait for — a Kustomization's
//! `wait` or `healthChecks` (nothing without them), a HelmRelease's release as Helm's
//! install or upgrade waits — within the unit's own timeout.

use crate::common::*;
use serde_json::{json, Value};
use tend_testserver::TestCluster;

const KUSTOMIZATION: &str = "apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: NAME
  namespace: flux-system
spec:
  interval: 10m
  path: ./NAME
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
";

/// `infra` applies a Deployment; `apps` depends on it and applies a ConfigMap. `extra` is
/// added to infra's spec.
fn depends_site(extra: &str) -> tempfile::TempDir {
    let infra = KUSTOMIZATION.replace("NAME", "infra") + extra;
    let apps = KUSTOMIZATION.replace("NAME", "apps") + "  dependsOn:\n    - name: infra\n";
    site(&[
        ("clusters/dev/infra.yaml", &infra),
        ("clusters/dev/apps.yaml", &apps),
        ("infra/namespace.yaml", &ns_yaml("infra")),
        (
            "infra/web.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: infra\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: nginx:1.27\n",
        ),
        ("apps/namespace.yaml", &ns_yaml("apps")),
        (
            "apps/hello.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\n  namespace: apps\ndata:\n  a: b\n",
        ),
    ])
}

fn apply(cluster: &TestCluster, dir: &tempfile::TempDir) -> (i32, String, String) {
    tend_on(
        cluster,
        dir.path(),
        &["apply", "--path", "clusters/dev", "--timeout", "3s"],
    )
}

fn hello(cluster: &TestCluster) -> Option<Value> {
    get(cluster, "", "configmaps", "apps", "hello")
}

/// A Deployment whose rollout has failed, as its controller reports it.
fn failed_rollout(kind: &str, object: &Value) -> Option<Value> {
    (kind == "Deployment" && object["status"]["conditions"].is_null()).then(|| {
        json!({
            "observedGeneration": object["metadata"]["generation"],
            "replicas": 1, "updatedReplicas": 1, "unavailableReplicas": 1,
            "conditions": [{
                "type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                "message": "ReplicaSet \"web-1\" has timed out progressing.",
            }],
        })
    })
}

/// kustomize-controller marks a Kustomization without `wait` or `healthChecks` ready once
/// applied: its dependents start at once. (tend used to wait for every object of the wave,
/// and here its 3 s `--timeout` would have stopped the run before `apps`.)
#[test]
fn a_kustomization_without_wait_or_health_checks_lets_its_dependents_start_at_once() {
    let cluster = TestCluster::start();
    let (code, stdout, stderr) = apply(&cluster, &depends_site(""));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(hello(&cluster).is_some(), "apps was applied");
    assert!(!stderr.contains("waiting up to"), "{stderr}");
}

/// With `healthChecks` (or `wait: true`), dependents start only once the objects named are
/// ready; a failed one stops the run there, named with its reason, without waiting out the
/// unit's timeout; with the controller played, both apply.
#[test]
fn health_checks_and_wait_hold_dependents_until_ready_and_a_failure_stops_the_run() {
    let checks =
        "  healthChecks:\n    - kind: Deployment\n      name: web\n      namespace: infra\n";
    for extra in [checks, "  wait: true\n"] {
        let dir = depends_site(extra);
        let cluster = TestCluster::start();
        let (code, stdout, stderr) =
            with_statuses_played(&cluster, failed_rollout, || apply(&cluster, &dir));
        assert_eq!(code, 2, "{extra}: {stdout}{stderr}");
        let all = format!("{stdout}{stderr}");
        assert!(
            all.contains("apps/Deployment infra/web failed: ProgressDeadlineExceeded"),
            "{extra}: {all}"
        );
        assert!(hello(&cluster).is_none(), "{extra}: apps must not start");

        let cluster = TestCluster::start();
        let (code, stdout, stderr) = with_controllers_played(&cluster, || apply(&cluster, &dir));
        assert_eq!(code, 0, "{extra}: {stdout}{stderr}");
        assert!(hello(&cluster).is_some(), "{extra}: apps was applied");
    }
}

fn release_site(repository: &str, extra: &str) -> tempfile::TempDir {
    site(&[
        ("apps/namespace.yaml", &ns_yaml("podinfo")),
        (
            "apps/podinfo.yaml",
            &format!(
                "apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: podinfo
  namespace: flux-system
spec:
  interval: 1h
  url: {repository}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: flux-system
spec:
  interval: 1h
  targetNamespace: podinfo
  chart:
    spec:
      chart: podinfo
      version: \">=6.0.0\"
      sourceRef:
        kind: HelmRepository
        name: podinfo
{extra}"
            ),
        ),
    ])
}

/// Helm's install waits for the release within the HelmRelease's timeout: the run fails
/// naming the limit and the unit; `install.disableWait` applies without waiting; the end
/// of the run waits even where no unit depends on the release.
#[test]
fn a_helm_release_waits_for_its_release_within_its_own_timeout() {
    let repository = crate::flux::chart_repository();
    let cluster = TestCluster::start();
    let dir = release_site(&repository, "  timeout: 2s\n");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--path", "apps"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains("not ready within 2s (spec.timeout of Flux HelmRelease flux-system/podinfo"),
        "{all}"
    );
    assert!(get(
        &cluster,
        "apps",
        "deployments",
        "podinfo",
        "podinfo-podinfo"
    )
    .is_some());

    let cluster = TestCluster::start();
    let dir = release_site(
        &repository,
        "  timeout: 2s\n  install:\n    disableWait: true\n",
    );
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--path", "apps"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // Now an upgrade: Helm's upgrade waits (upgrade.disableWait is not set).
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--path", "apps"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    let (code, stdout, stderr) = with_controllers_played(&cluster, || {
        tend_on(&cluster, dir.path(), &["apply", "--path", "apps"])
    });
    assert_eq!(code, 0, "{stdout}{stderr}");
}

/// A health check that could never pass is refused at its line before anything is written.
#[test]
fn health_checks_that_could_never_pass_are_refused_at_their_line() {
    let cases = [
        (
            "  healthChecks:\n    - apiVersion: helm.toolkit.fluxcd.io/v2\n      kind: HelmRelease\n      name: nowhere\n      namespace: flux-system\n",
            "infra.yaml:14: spec.healthChecks names HelmRelease flux-system/nowhere, which the desired state does not define",
        ),
        (
            "  healthChecks:\n    - kind: Deployment\n      name: web\n",
            "infra.yaml:14: spec.healthChecks names Deployment web without a namespace, so a cluster-scoped object, but this run applies it in namespace infra",
        ),
        (
            "  healthChecks:\n    - apiVersion: v1\n      kind: ConfigMap\n      name: hello\n      namespace: apps\n",
            "which this run applies in wave 100, after this unit's last wave 0",
        ),
        ("  timeout: soon\n", "infra.yaml:13: spec.timeout is not a duration"),
    ];
    for (extra, expected) in cases {
        let cluster = TestCluster::start();
        let (code, stdout, stderr) = apply(&cluster, &depends_site(extra));
        assert_eq!(code, 2, "{extra}: {stdout}{stderr}");
        assert!(stderr.contains(expected), "{extra}: {stderr}");
        assert!(
            get(&cluster, "", "namespaces", "", "infra").is_none(),
            "{extra}: nothing is written"
        );
    }
}
