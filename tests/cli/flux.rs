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

/// A Kustomization's kept build is found without copying the tree (the copy and its
/// removal were most of a no-op run's time), and renders the same.
#[test]
fn a_kept_kustomization_build_is_found_without_copying_the_tree() {
    let dir = bootstrap_site();
    let cache = tempfile::tempdir().unwrap();
    let render = || {
        run(tend()
            .args(["render", "-v", "--path", "clusters/dev", "--cache-dir"])
            .arg(cache.path())
            .arg("--repo")
            .arg(dir.path()))
    };
    let (code, first, stderr) = render();
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("without copying the tree"), "{stderr}");
    let (code, second, stderr) = render();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("apps built as kept, found without copying the tree"),
        "{stderr}"
    );
    assert_eq!(first, second);
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
    // Labelled with their Kustomization, as kustomize-controller labels what it applies.
    assert!(
        stdout.contains("    kustomize.toolkit.fluxcd.io/name: apps\n    kustomize.toolkit.fluxcd.io/namespace: flux-system\n"),
        "{stdout}"
    );
    // Flux's own objects are not rendered: nothing would read them.
    assert!(!stdout.contains("kind: Kustomization"), "{stdout}");
    assert!(
        !stdout.contains("apiVersion: kustomize.toolkit.fluxcd.io"),
        "{stdout}"
    );
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
pub(crate) fn chart_repository() -> String {
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
    // helm-controller waits for the release's Deployment (Helm's install waits).
    let (code, _, stderr) =
        with_controllers_played(&cluster, || tend_on(&cluster, dir.path(), &["apply"]));
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
    assert_eq!(unit["revision"], "chart podinfo 6.14.1");
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

/// The repository of `flux2-hub-spoke-example` (the issue's test material), a git work tree
/// with its public origin, its chart repositories pointed at `charts` (an HTTP repository;
/// its OCI one served over HTTP too).
fn hub_and_spoke_repository(charts: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &repo_root().join("../shared/gitops-repos/flux2-hub-spoke-example"),
        dir.path(),
    );
    for file in [
        "deploy/infra-controllers/cert-manager.yaml",
        "deploy/infra-controllers/ingress-nginx.yaml",
        "deploy/apps/podinfo.yaml",
    ] {
        let path = dir.path().join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text
            .replace("  type: oci\n", "")
            .replace("oci://ghcr.io/stefanprodan/charts", charts)
            .replace("https://charts.jetstack.io", charts)
            .replace("https://kubernetes.github.io/ingress-nginx", charts);
        std::fs::write(path, text).unwrap();
    }
    let repo = git2::Repository::init(dir.path()).unwrap();
    repo.remote(
        "origin",
        "https://github.com/fluxcd/flux2-hub-spoke-example.git",
    )
    .unwrap();
    commit_all(&repo, "flux2-hub-spoke-example");
    dir
}

/// `cluster`'s kubeconfig in Secret `namespace/cluster-kubeconfig` of `hub`, under `key`.
fn seed_kubeconfig_secret(hub: &TestCluster, namespace: &str, key: &str, cluster: &TestCluster) {
    use base64::Engine;
    let config = base64::engine::general_purpose::STANDARD.encode(cluster.kubeconfig_yaml());
    hub.seed(serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace}}))
        .unwrap();
    hub.seed(serde_json::json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "cluster-kubeconfig", "namespace": namespace},
        "data": {key: config}}))
        .unwrap();
}

/// Acceptance: one run against the hub applies the hub's own objects to the hub and, to each
/// spoke, what the hub's units targeting it (through the kubeconfig Secret the hub holds)
/// would apply, in `dependsOn` order, each spoke its own section; a second diff is in sync.
#[test]
fn flux2_hub_spoke_example_applies_in_one_run_and_a_second_diff_is_in_sync() {
    let charts = chart_repository();
    let dir = hub_and_spoke_repository(&charts);
    let (hub, staging, production) = (
        TestCluster::start(),
        TestCluster::start(),
        TestCluster::start(),
    );
    // Flux reads `value`, else `value.yaml`.
    seed_kubeconfig_secret(&hub, "staging", "value", &staging);
    seed_kubeconfig_secret(&hub, "production", "value.yaml", &production);
    let spokes = [("staging", &staging), ("production", &production)];
    let played = |args: &[&str]| {
        with_controllers_played(&staging, || {
            with_controllers_played(&production, || tend_on(&hub, dir.path(), args))
        })
    };
    let (code, stdout, stderr) = played(&["apply", "--path", "hub", "-o", "json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect(&stdout);
    let names: Vec<&str> = report["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "default",
            "production/cluster-kubeconfig",
            "staging/cluster-kubeconfig"
        ]
    );
    assert!(get(&hub, "", "namespaces", "", "staging").is_some());
    assert!(get(&hub, "apps", "deployments", "podinfo", "podinfo").is_none());
    for (env, spoke) in spokes {
        // tenants: the Namespace named by postBuild substitution; apps: podinfo's release.
        assert!(get(spoke, "", "namespaces", "", env).is_some(), "{env}");
        assert!(get(spoke, "", "serviceaccounts", env, "flux-restricted").is_some());
        let podinfo = get(spoke, "apps", "deployments", "podinfo", "podinfo").expect("podinfo");
        assert_eq!(podinfo["metadata"]["namespace"], "podinfo");
        // Its HelmRelease's serviceAccountName (patched in by the hub): written as that (the
        // status writes are the played controllers').
        let restricted = format!("system:serviceaccount:{env}:flux-restricted");
        assert!(spoke
            .requests()
            .iter()
            .filter(|r| is_write(r) && r.resource == "deployments" && r.subresource.is_none())
            .filter(|r| r.name.as_deref() == Some("podinfo"))
            .all(|r| r.impersonated.as_deref() == Some(restricted.as_str())));
        assert!(get(spoke, "apps", "deployments", "cert-manager", "cert-manager").is_some());
        // Nothing of the hub's own, nor of the other spoke.
        let other = if env == "staging" {
            "production"
        } else {
            "staging"
        };
        assert!(get(spoke, "", "namespaces", "", other).is_none(), "{env}");
        assert!(
            get(spoke, "", "namespaces", "", "flux-system").is_none(),
            "{env}"
        );
    }
    let (code, stdout, stderr) = played(&["diff", "-v", "--path", "hub"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // The Kustomizations' builds, whose paths hold a kustomization.yaml the unit's fields
    // are written into, are found kept without copying the repository.
    assert!(
        stderr.contains("clusters/staging/apps built as kept, found without copying the tree"),
        "{stderr}"
    );
    assert!(
        stdout.contains("unit Flux Kustomization staging/apps → HelmRelease staging/podinfo: not expanded: it targets the cluster of kubeconfig Secret staging/cluster-kubeconfig"),
        "{stdout}"
    );
    assert!(stdout.contains("production/cluster-kubeconfig"), "{stdout}");

    // status lists the spokes' ApplySets after the hub's, their kubeconfigs read from the hub.
    let (code, stdout, stderr) = tend_on(&hub, dir.path(), &["status", "-o", "json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        status_results(&stdout),
        [
            ("default".to_string(), "succeeded".to_string()),
            ("production/cluster-kubeconfig".into(), "succeeded".into()),
            ("staging/cluster-kubeconfig".into(), "succeeded".into()),
        ]
    );

    // A spoke that is unreachable fails alone: the hub and the other spoke still run.
    production.stop();
    let (code, stdout, stderr) = played(&["diff", "--path", "hub", "-o", "json"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect(&stdout);
    assert_eq!(report["clusters"][0]["result"], "in sync", "{stdout}");
    assert_eq!(report["clusters"][1]["result"], "error", "{stdout}");
    assert_eq!(report["clusters"][2]["result"], "in sync", "{stdout}");
    // status says so too: the unreachable spoke an error, exit 2.
    let (code, stdout, stderr) = tend_on(&hub, dir.path(), &["status", "-o", "json"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert_eq!(
        status_results(&stdout)[1],
        ("production/cluster-kubeconfig".into(), "error".into()),
        "{stdout}"
    );

    // One spoke alone, as before: --units-for-kubeconfig-secret with its kubeconfig.
    let args = [
        "--path",
        "hub",
        "--units-for-kubeconfig-secret",
        "staging/cluster-kubeconfig",
    ];
    let (code, stdout, stderr) = with_controllers_played(&staging, || {
        tend_on(&staging, dir.path(), &[&["diff"][..], &args].concat())
    });
    assert_eq!(code, 0, "{stdout}{stderr}");
}

/// `tend status -o json`'s clusters: name, and the first ApplySet's result (`error` when
/// the cluster could not be read).
fn status_results(stdout: &str) -> Vec<(String, String)> {
    let doc: serde_json::Value = serde_json::from_str(stdout).expect(stdout);
    doc["clusters"]
        .as_array()
        .expect(stdout)
        .iter()
        .map(|c| {
            let result = match c["error"].as_str() {
                Some(_) => "error",
                None => c["applysets"][0]["result"].as_str().unwrap_or("none"),
            };
            (c["name"].as_str().unwrap().to_string(), result.to_string())
        })
        .collect()
}

/// A hub whose own run ends in an error still runs its spokes (their units were read), and the
/// exit code is the worst; `--fail-fast` starts no spoke after the hub failed.
#[test]
fn a_hub_whose_run_fails_still_runs_its_spokes_unless_fail_fast() {
    let charts = chart_repository();
    let dir = hub_and_spoke_repository(&charts);
    let (hub, staging, production) = (
        TestCluster::start(),
        TestCluster::start(),
        TestCluster::start(),
    );
    seed_kubeconfig_secret(&hub, "staging", "value", &staging);
    seed_kubeconfig_secret(&hub, "production", "value", &production);
    // The hub's own ApplySet parent cannot be read: its run ends in an error.
    hub.inject(
        tend_testserver::Fault::status(403)
            .verb(tend_testserver::Verb::Get)
            .path_contains("/namespaces/tend-system/secrets/tend")
            .always(),
    );
    let played = |args: &[&str]| {
        with_controllers_played(&staging, || {
            with_controllers_played(&production, || tend_on(&hub, dir.path(), args))
        })
    };
    let podinfo = |spoke: &TestCluster| get(spoke, "apps", "deployments", "podinfo", "podinfo");
    let results = |stdout: &str| -> Vec<String> {
        let report: serde_json::Value = serde_json::from_str(stdout).expect(stdout);
        let clusters = report["clusters"].as_array().expect(stdout);
        clusters.iter().map(|c| c["result"].to_string()).collect()
    };

    let (code, stdout, stderr) = played(&["apply", "--path", "hub", "--fail-fast", "-o", "json"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert_eq!(
        results(&stdout),
        [r#""error""#, r#""not run""#, r#""not run""#],
        "{stdout}"
    );
    assert!(podinfo(&staging).is_none() && podinfo(&production).is_none());

    let (code, stdout, stderr) = played(&["apply", "--path", "hub", "-o", "json"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert_eq!(
        results(&stdout),
        [r#""error""#, r#""applied""#, r#""applied""#],
        "{stdout}"
    );
    assert!(podinfo(&staging).is_some() && podinfo(&production).is_some());
}

/// kustomize-controller's per-object settings (labels or annotations) become tend's
/// policies: `ssa: IfNotPresent` creates and never updates, `prune: disabled` keeps,
/// `force: enabled` replaces, `reconcile: disabled` both keeps and never updates.
#[test]
fn an_objects_own_flux_settings_become_tend_policies() {
    let dir = bootstrap_site();
    let config = |name: &str, metadata: &str, value: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{metadata}data:\n  v: \"{value}\"\n")
    };
    let objects = |value: &str| {
        [
            config(
                "seeded",
                "  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n",
                value,
            ),
            config(
                "kept",
                "  labels:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n",
                value,
            ),
            config(
                "forced",
                "  annotations:\n    kustomize.toolkit.fluxcd.io/force: enabled\n",
                value,
            ),
            config(
                "paused",
                "  annotations:\n    kustomize.toolkit.fluxcd.io/reconcile: disabled\n",
                value,
            ),
        ]
        .join("---\n")
    };
    let write = |text: &str| std::fs::write(dir.path().join("apps/settings.yaml"), text).unwrap();
    write(&objects("1"));
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "clusters/dev", "-o", "json", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    let rendered: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let annotations = |name: &str| {
        let items = rendered["items"].as_array().unwrap();
        let object = items
            .iter()
            .find(|o| o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {stdout}"));
        object["metadata"]["annotations"].clone()
    };
    assert_eq!(annotations("seeded")["tend.dev/apply"], "if-not-present");
    assert_eq!(annotations("kept")["tend.dev/prune"], "disabled");
    assert_eq!(annotations("forced")["tend.dev/replace"], "on-immutable");
    assert_eq!(annotations("paused")["tend.dev/prune"], "disabled");
    assert_eq!(annotations("paused")["tend.dev/apply"], "if-not-present");

    let cluster = TestCluster::start();
    let args = ["apply", "--path", "clusters/dev"];
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    // New values: only `forced` is written; then `kept` and `paused` leave git and stay.
    write(&objects("2"));
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let value =
        |name: &str| get(&cluster, "", "configmaps", "web", name).map(|c| c["data"]["v"].clone());
    assert_eq!(value("seeded"), Some(json!("1")));
    assert_eq!(value("paused"), Some(json!("1")));
    assert_eq!(value("forced"), Some(json!("2")));
    write(&config("forced", "", "2"));
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &args);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(value("kept").is_some() && value("paused").is_some(), "kept");
    assert!(
        value("seeded").is_none(),
        "an object without prune: disabled is pruned"
    );
}

/// `spec.ignore` (Flux 2.7): the paths its rules name on the objects they select keep the
/// in-cluster value once the object exists (an autoscaler's replicas), in diff and apply;
/// a new object is created with git's.
#[test]
fn ignore_rules_keep_the_live_values_of_their_paths() {
    let dir = bootstrap_site();
    let deployment = |replicas: u32, image: &str| {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n        - name: web\n          image: {image}\n")
    };
    let write = |text: &str| std::fs::write(dir.path().join("apps/web.yaml"), text).unwrap();
    write(&deployment(2, "nginx:1.27"));
    let apps = std::fs::read_to_string(dir.path().join("clusters/dev/apps.yaml")).unwrap();
    let ignore = "  ignore:\n    - paths: [\"/spec/replicas\"]\n      target:\n        kind: Deployment\n        name: \"we.*\"\n";
    std::fs::write(
        dir.path().join("clusters/dev/apps.yaml"),
        format!("{apps}{ignore}"),
    )
    .unwrap();
    let cluster = TestCluster::start();
    let run_tend =
        |command: &str| tend_on(&cluster, dir.path(), &[command, "--path", "clusters/dev"]);
    let (code, stdout, stderr) = run_tend("apply");
    assert_eq!(code, 0, "{stdout}{stderr}");
    let web = || get(&cluster, "apps", "deployments", "web", "web").expect("applied");
    assert_eq!(web()["spec"]["replicas"], 2, "created with git's value");
    // An autoscaler scales it; git changes the replicas and the image.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        use kube::api::{Api, Patch, PatchParams};
        let client = cluster.client().await;
        let api: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client, "web");
        let params = PatchParams::apply("kube-controller-manager").force();
        let patch = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 5}});
        api.patch("web", &params, &Patch::Apply(&patch))
            .await
            .unwrap();
    });
    write(&deployment(3, "nginx:1.28"));
    let (code, stdout, stderr) = run_tend("diff");
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("nginx:1.28"), "{stdout}");
    assert!(!stdout.contains("replicas"), "{stdout}");
    let (code, stdout, stderr) = run_tend("apply");
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(web()["spec"]["replicas"], 5, "the autoscaler's value stays");
    assert_eq!(
        web()["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.28"
    );
    let (code, stdout, stderr) = run_tend("diff");
    assert_eq!(code, 0, "{stdout}{stderr}");
}

/// A Kustomization of `./apps` named `name`, with `extra` lines under `spec:`.
fn kustomization(name: &str, api_version: &str, extra: &str) -> String {
    format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/{api_version}\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n{extra}"
    )
}

/// `tend render` of a repository whose `clusters/dev/units.yaml` is `units`, beside the
/// bootstrap site's `apps/`.
fn render_units(units: &str) -> (i32, String, String) {
    let dir = bootstrap_site();
    std::fs::write(dir.path().join("clusters/dev/apps.yaml"), units).unwrap();
    run(tend()
        .args(["render", "--path", "clusters/dev", "--repo"])
        .arg(dir.path()))
}

#[test]
fn bad_units_are_refused_at_their_line_before_anything_is_rendered() {
    let cases = [
        (
            kustomization("apps", "v1", "  pathh: ./x\n"),
            "apps.yaml:12: spec.pathh is not a field of Kustomization v1",
        ),
        (
            kustomization("apps", "v1beta1", ""),
            "apps.yaml:1: kustomize.toolkit.fluxcd.io/v1beta1 is not a version of Flux's Kustomization tend reads (v1, v1beta2)",
        ),
        (
            kustomization("apps", "v1", "  dependsOn:\n    - name: infra\n"),
            "apps.yaml:1: dependsOn names Kustomization flux-system/infra, which the desired state does not define",
        ),
        (
            format!(
                "{}---\n{}",
                kustomization("a", "v1", "  targetNamespace: a\n  dependsOn:\n    - name: b\n"),
                kustomization("b", "v1", "  targetNamespace: b\n  dependsOn:\n    - name: a\n"),
            ),
            "dependsOn makes a cycle (Kustomization flux-system/a → Kustomization flux-system/b → Kustomization flux-system/a)",
        ),
        (
            kustomization("apps", "v1", "").replace("./apps", "./clusters/dev/more"),
            "apps.yaml:8: spec.path clusters/dev/more is inside the directory tend reads (clusters/dev)",
        ),
        (
            kustomization("apps", "v1", "").replace("name: flux-system\n", "name: elsewhere\n"),
            "apps.yaml:9: sourceRef names GitRepository flux-system/elsewhere, which the desired state does not define",
        ),
    ];
    for (units, expected) in cases {
        let (code, stdout, stderr) = render_units(&units);
        assert_eq!(code, 2, "{units}\n{stdout}{stderr}");
        assert!(
            stderr.contains(expected),
            "{units}\nwant: {expected}\n{stderr}"
        );
        assert!(stdout.is_empty(), "{stdout}");
    }
}

#[test]
fn prune_and_force_become_tend_policies_and_a_suspended_unit_applies_nothing() {
    let units = format!(
        "{}---\n{}",
        kustomization(
            "kept",
            "v1",
            "  targetNamespace: web\n  prune: false\n  force: true\n"
        ),
        kustomization(
            "paused",
            "v1",
            "  targetNamespace: paused\n  suspend: true\n"
        ),
    );
    let (code, stdout, stderr) = render_units(&units);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("tend.dev/prune: disabled"), "{stdout}");
    assert!(
        stdout.contains("tend.dev/replace: on-immutable"),
        "{stdout}"
    );
    assert!(!stdout.contains("namespace: paused"), "{stdout}");
    let cluster = TestCluster::start();
    let dir = bootstrap_site();
    std::fs::write(dir.path().join("clusters/dev/apps.yaml"), &units).unwrap();
    let args = ["--path", "clusters/dev"];
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["diff"][..], &args].concat());
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stdout.contains(
            "unit Flux Kustomization flux-system/paused: suspended (spec.suspend), nothing applied"
        ),
        "{stdout}"
    );
}

#[test]
fn a_helm_release_renders_a_chart_from_the_checkout_at_its_path_from_the_root() {
    let dir = bootstrap_site();
    let files = [
        (
            "charts/web/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 1.2.3\n",
        ),
        ("charts/web/values.yaml", "greeting: hi\n"),
        (
            "charts/web/templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting }}\n",
        ),
        (
            "apps/web.yaml",
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/web\n      sourceRef:\n        kind: GitRepository\n        name: flux-system\n        namespace: flux-system\n  values:\n    greeting: ${GREETING}\n",
        ),
    ];
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "clusters/dev", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    // helm-controller labels every object of a release with the HelmRelease's name and
    // namespace (its OriginLabels post-renderer).
    // The HelmRelease came out of the Kustomization (targetNamespace web, GREETING
    // substituted); the release is `<targetNamespace>-<name>`, in the target namespace.
    assert!(
        stdout.contains(
            "# Source: apps (kustomize build) (Flux Kustomization flux-system/apps → HelmRelease web/web)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "kind: ConfigMap\nmetadata:\n  name: web\n  labels:\n    helm.toolkit.fluxcd.io/name: web\n    helm.toolkit.fluxcd.io/namespace: web\n  namespace: web\ndata:\n  greeting: hello\n"
        ),
        "{stdout}"
    );
}

#[test]
fn substitute_from_reads_config_maps_and_keeps_secret_values_out_of_other_kinds() {
    let vars = |kind: &str| {
        let data = match kind {
            "Secret" => "data:\n  GREETING: aGVsbG8gZnJvbSBhIHNlY3JldA==\n", // hello from a secret
            _ => "data:\n  GREETING: hello from a map\n",
        };
        format!(
            "---\napiVersion: v1\nkind: {kind}\nmetadata:\n  name: vars\n  namespace: flux-system\n{data}"
        )
    };
    let unit = |kind: &str| {
        kustomization(
            "apps",
            "v1",
            &format!("  targetNamespace: web\n  postBuild:\n    substituteFrom:\n      - kind: {kind}\n        name: vars\n      - kind: ConfigMap\n        name: absent\n        optional: true\n"),
        )
    };
    let (code, stdout, stderr) =
        render_units(&format!("{}{}", unit("ConfigMap"), vars("ConfigMap")));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("greeting: hello from a map\n"), "{stdout}");
    let (code, stdout, stderr) = render_units(&format!("{}{}", unit("Secret"), vars("Secret")));
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stderr.contains("ConfigMap greeting in apps (kustomize build) would get ${GREETING}, read from a Secret"),
        "{stderr}"
    );
    assert!(!stderr.contains("hello from a secret"), "{stderr}");
}
