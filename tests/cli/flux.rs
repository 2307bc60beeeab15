//! Flux repositories run unchanged (README "Coming from Flux"): Kustomizations and
//! HelmReleases expanded into what Flux's controllers would apply, with no controller.

use crate::common::*;
use serde_json::json;
use tend_testserver::TestCluster;

/// A bootstrap layout: `clusters/dev` holds the flux-system Kustomization (the walked
/// directory itself) and one that builds `./apps` of the same repository.
fn bootstrap_site() -> tempfile::TempDir {
    site(&[
        (
            "clusters/dev/flux-system/gotk-sync.yaml",
            "# This file will be generated automatically by flux boostrap.\n",
        ),
        (
            "clusters/dev/flux-system/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gotk-sync.yaml\n  - sync.yaml\n",
        ),
        (
            "clusters/dev/flux-system/sync.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        ),
        (
            "clusters/dev/apps.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps\n  prune: true\n  targetNamespace: web\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  postBuild:\n    substitute:\n      GREETING: hello\n",
        ),
        ("apps/namespace.yaml", &ns_yaml("web")),
        (
            "apps/config/greeting.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  greeting: ${GREETING}\n  other: ${MISSING:=fallback}\n",
        ),
    ])
}

#[test]
fn a_kustomization_of_the_checkout_is_built_as_kustomize_controller_builds_it() {
    let dir = bootstrap_site();
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "clusters/dev", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    // Generated kustomization (no kustomization.yaml in ./apps), targetNamespace and
    // substitution; the unit named in the source.
    assert!(
        stdout.contains("# Source: apps (kustomize build) (Flux Kustomization flux-system/apps)"),
        "{stdout}"
    );
    assert!(stdout.contains("greeting: hello\n"), "{stdout}");
    assert!(stdout.contains("other: fallback\n"), "{stdout}");
    assert!(stdout.contains("namespace: web\n"), "{stdout}");
    // Flux's own objects are not rendered: nothing would read them.
    assert!(!stdout.contains("toolkit.fluxcd.io"), "{stdout}");
    assert!(
        stderr.contains("2 objects of Flux or Argo CD not applied"),
        "{stderr}"
    );

    // With the flag, they are ordinary objects and nothing is expanded.
    let (code, stdout, stderr) = run(tend()
        .args([
            "render",
            "--apply-controller-objects",
            "--path",
            "clusters/dev",
            "--repo",
        ])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("kind: Kustomization\nmetadata:\n  name: apps"),
        "{stdout}"
    );
    assert!(!stdout.contains("greeting: hello"), "{stdout}");
}

#[test]
fn apply_then_diff_is_in_sync() {
    let cluster = TestCluster::start();
    let dir = bootstrap_site();
    let args = ["--path", "clusters/dev"];
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 0, "{stderr}");
    let cm = get(&cluster, "", "configmaps", "web", "greeting").expect("applied");
    assert_eq!(cm["data"]["greeting"], "hello");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["diff"][..], &args].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
}

/// A test cluster serving Flux's Kustomization, holding `flux-system/apps`.
fn cluster_with_live_kustomization(suspend: bool) -> TestCluster {
    let cluster = TestCluster::start();
    cluster
        .seed(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "kustomizations.kustomize.toolkit.fluxcd.io"},
            "spec": {
                "group": "kustomize.toolkit.fluxcd.io",
                "names": {"kind": "Kustomization", "plural": "kustomizations", "singular": "kustomization", "listKind": "KustomizationList"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
            },
        }))
        .unwrap();
    let live = json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": "flux-system"},
            "spec": {"path": "./apps", "suspend": suspend, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
    });
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "flux-system"}}))
        .unwrap();
    cluster.seed(live).unwrap();
    cluster
}

#[test]
fn apply_refuses_to_fight_a_live_unsuspended_flux_kustomization() {
    let cluster = cluster_with_live_kustomization(false);
    let dir = bootstrap_site();
    let args = ["--path", "clusters/dev"];
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "apps.yaml:1: Flux Kustomization flux-system/apps is live in the cluster and active"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("flux suspend kustomization apps -n flux-system"),
        "{stderr}"
    );
    assert!(
        object_writes(&cluster).is_empty(),
        "{:?}",
        object_writes(&cluster)
    );
    // diff is the read-only preview.
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &[&["diff"][..], &args].concat());
    assert_eq!(code, 1, "{stderr}");
    // Suspended: tend may apply.
    let cluster = cluster_with_live_kustomization(true);
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 0, "{stderr}");
}
