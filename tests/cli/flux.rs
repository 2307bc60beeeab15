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

/// The shared chart repository (podinfo, cert-manager, ingress-nginx, ...) served over HTTP.
fn chart_repository() -> String {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/gitops-repos/chart-repo");
    let files = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (format!("/{name}"), std::fs::read(&p).unwrap())
        })
        .collect();
    crate::helm::remote::serve(files).0
}

fn helm_release_site(repository: &str) -> tempfile::TempDir {
    site(&[
        ("apps/namespace.yaml", &ns_yaml("podinfo")),
        ("apps/flux-system.yaml", &ns_yaml("flux-system")),
        (
            "apps/podinfo.yaml",
            &format!(
                "apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: HelmRepository
metadata:
  name: podinfo
  namespace: flux-system
spec:
  interval: 1h
  url: {repository}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: podinfo-values
  namespace: flux-system
data:
  values.yaml: |
    replicaCount: 3
    ui:
      message: from a ConfigMap
  color: \"#123456\"
---
apiVersion: helm.toolkit.fluxcd.io/v2beta1
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
  valuesFrom:
    - kind: ConfigMap
      name: podinfo-values
    - kind: ConfigMap
      name: podinfo-values
      valuesKey: color
      targetPath: ui.color
    - kind: Secret
      name: not-there
      optional: true
  values:
    replicaCount: 2
"
            ),
        ),
    ])
}

#[test]
fn a_helm_release_renders_its_chart_with_flux_values_and_release_name() {
    let repository = chart_repository();
    let dir = helm_release_site(&repository);
    let (code, stdout, stderr) = run(tend().args(["render", "--repo"]).arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    // `<targetNamespace>-<name>`, in the target namespace; spec.values over valuesFrom.
    assert!(
        stdout.contains("name: podinfo-podinfo\n  namespace: podinfo\n"),
        "{stdout}"
    );
    assert!(stdout.contains("replicas: 2\n"), "{stdout}");
    assert!(stdout.contains("value: from a ConfigMap"), "{stdout}");
    assert!(
        stdout.contains("value: '#123456'") || stdout.contains("value: \"#123456\""),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "# Source: apps/podinfo.yaml (Flux HelmRelease flux-system/podinfo):22 (chart podinfo, templates/deployment.yaml)"
        ),
        "{stdout}"
    );
    // Neither the HelmRelease, its source nor the HelmChart it became is applied.
    assert!(!stdout.contains("kind: HelmChart"), "{stdout}");
    assert!(!stdout.contains("kind: HelmRelease"), "{stdout}");
}

#[test]
fn a_helm_release_applies_and_a_second_diff_is_in_sync() {
    let repository = chart_repository();
    let dir = helm_release_site(&repository);
    let cluster = TestCluster::start();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    let deployment = get(
        &cluster,
        "apps",
        "deployments",
        "podinfo",
        "podinfo-podinfo",
    )
    .expect("applied");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff", "-o", "json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let unit = &report["units"][0];
    assert_eq!(unit["name"], "Flux HelmRelease flux-system/podinfo");
    assert_eq!(unit["result"], "expanded");
    assert_eq!(unit["revision"], "chart podinfo >=6.0.0");
    let deployment = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .unwrap();
    assert_eq!(deployment["unit"], "Flux HelmRelease flux-system/podinfo");
}

/// The README's "Coming from Flux": its files written, its commands run as written, on a
/// cluster of its own; then a second diff finds nothing to do.
#[test]
fn the_readme_section_runs_as_written() {
    use crate::shipping::{bin_dir, output, readme, readme_steps, shell, ReadmeStep};
    let readme = readme();
    let start = readme
        .find("\n## Coming from Flux\n")
        .expect("README section");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    let cluster = TestCluster::start();
    let bin = bin_dir();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut commands = Vec::new();
    for step in readme_steps(&rest[..end]) {
        match step {
            ReadmeStep::File(path, text) => {
                let path = work.path().join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            ReadmeStep::Command(command) => commands.push(command),
        }
    }
    assert_eq!(commands.len(), 3, "{commands:?}");
    let mut last = String::new();
    for command in &commands {
        let mut cmd = shell("bash", bin.path(), home.path(), &cluster, command);
        cmd.current_dir(work.path());
        let (code, stdout, stderr) = output(&mut cmd);
        let ok = if command.starts_with("tend diff") {
            code == 1
        } else {
            code == 0
        };
        assert!(ok, "`{command}` exited {code}:\n{stdout}\n{stderr}");
        last = stdout;
    }
    assert!(
        last.contains("unit Flux Kustomization flux-system/apps"),
        "{last}"
    );
    let cm = get(&cluster, "", "configmaps", "shop", "greeting").expect("applied");
    assert_eq!(cm["data"]["greeting"], "hello");
    assert_eq!(cm["data"]["colour"], "blue");
    let mut cmd = shell("bash", bin.path(), home.path(), &cluster, &commands[1]);
    cmd.current_dir(work.path());
    let (code, stdout, stderr) = output(&mut cmd);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}
