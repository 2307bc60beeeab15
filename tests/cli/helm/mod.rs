//! `HelmChart` (README "HelmChart"): a chart in the repository rendered by tend itself, applied like
//! any other objects.

use crate::common::*;
use crate::kinds::cluster_with_crds;
use tend_testserver::TestCluster;

const CHART_YAML: &str = "apiVersion: v2\nname: shop\nversion: 1.2.3\nappVersion: \"4.5\"\n";

const VALUES: &str = "\
replicas: 1
image:
  repository: nginx
  tag: \"\"
ports:
  http: 80
  metrics: 9090
resources:
  limits:
    memory: 64Mi
";

const HELPERS: &str = r#"{{- define "shop.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "shop.labels" -}}
app.kubernetes.io/name: {{ include "shop.fullname" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
"#;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "shop.fullname" . }}
  labels:
    {{- include "shop.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ include "shop.fullname" . }}
  template:
    metadata:
      labels:
        {{- include "shop.labels" . | nindent 8 }}
    spec:
      containers:
        - name: web
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          ports:
          {{- range $name, $port := .Values.ports }}
            - name: {{ $name }}
              containerPort: {{ $port }}
          {{- end }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
{{- if semverCompare ">=1.30-0" .Capabilities.KubeVersion.Version }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "shop.fullname" . }}-env
data:
  release: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
{{- end }}
"#;

const TEST_HOOK: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: {{ include "shop.fullname" . }}-test-{{ randAlphaNum 5 | lower }}
  annotations:
    "helm.sh/hook": test
spec:
  containers:
    - name: wget
      image: busybox
"#;

/// A namespaced CustomResourceDefinition of `kind` (plural `<kind>s`, lowercase) in `group`,
/// as charts keep them in `crds/`.
pub(super) fn crd(group: &str, kind: &str) -> String {
    let singular = kind.to_lowercase();
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {singular}s.{group}
spec:
  group: {group}
  names: {{kind: {kind}, plural: {singular}s, singular: {singular}, listKind: {kind}List}}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"
    )
}

const RELEASE: &str = "\
apiVersion: tend.dev/v1alpha1
kind: HelmChart
metadata:
  name: store
  namespace: shop
spec:
  chart: ../charts/shop
  values:
    replicas: 3
    image:
      tag: \"1.27\"
";

fn chart_site(release: &str, deployment: &str) -> tempfile::TempDir {
    site(&[
        ("namespaces.yaml", &ns_yaml("shop")),
        ("apps/store.yaml", release),
        ("charts/shop/Chart.yaml", CHART_YAML),
        ("charts/shop/values.yaml", VALUES),
        ("charts/shop/templates/_helpers.tpl", HELPERS),
        ("charts/shop/templates/deployment.yaml", deployment),
        (
            "charts/shop/templates/NOTES.txt",
            "Thanks for installing {{ .Chart.Name }}\n",
        ),
        (
            "charts/shop/templates/tests/test-connection.yaml",
            TEST_HOOK,
        ),
        (
            "charts/shop/crds/carts.yaml",
            &crd("shop.example.com", "Cart"),
        ),
    ])
}

#[test]
fn a_chart_renders_applies_and_is_then_in_sync() {
    let cluster = cluster_with_crds();
    let dir = chart_site(RELEASE, DEPLOYMENT);

    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let objects = parse_stream(&stdout);
    assert_eq!(
        ids(&objects),
        ids(&parse_stream(
            &run(tend().arg("render").arg("--repo").arg(dir.path())).1
        )),
        "renders are stable"
    );
    let names: Vec<String> = ids(&objects);
    for expected in [
        "Deployment",
        "ConfigMap",
        "CustomResourceDefinition",
        "HelmChart",
    ] {
        assert!(
            names.iter().any(|n| n.contains(expected)),
            "{expected} in {names:?}"
        );
    }
    assert!(
        !names.iter().any(|n| n.contains("Pod")),
        "chart tests are left out: {names:?}"
    );
    let deploy = objects.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(deploy["metadata"]["name"], "store-shop");
    // Namespaced objects without a namespace land in the release namespace.
    assert_eq!(deploy["metadata"]["namespace"], "shop");
    assert_eq!(deploy["spec"]["replicas"], 3);
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.27");
    assert_eq!(container["ports"][0]["name"], "http");
    assert_eq!(container["ports"][1]["containerPort"], 9090);
    assert_eq!(container["resources"]["limits"]["memory"], "64Mi");
    assert_eq!(
        deploy["metadata"]["labels"]["app.kubernetes.io/version"],
        "4.5"
    );

    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let live = get(&cluster, "apps", "deployments", "shop", "store-shop").expect("applied");
    assert_eq!(live["spec"]["replicas"], 3);
    let cm = get(&cluster, "", "configmaps", "shop", "store-shop-env").expect("applied");
    assert_eq!(cm["data"]["release"], "store");
    assert_eq!(cm["data"]["namespace"], "shop");

    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "a second diff is in sync:\n{stdout}\n{stderr}");

    // A values change shows as a difference, then applies.
    std::fs::write(
        dir.path().join("apps/store.yaml"),
        RELEASE.replace("replicas: 3", "replicas: 4"),
    )
    .unwrap();
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("store-shop"), "{stdout}");
}

#[test]
fn template_errors_name_chart_template_and_line_and_change_nothing() {
    let cluster = cluster_with_crds();
    let broken = DEPLOYMENT.replace(
        "  replicas: {{ .Values.replicas }}",
        "  replicas: {{ required \"set values.replicas\" .Values.missing }}",
    );
    let dir = chart_site(RELEASE, &broken);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("apps/store.yaml:"), "{stderr}");
    assert!(stderr.contains("chart shop"), "{stderr}");
    assert!(
        stderr.contains("shop/templates/deployment.yaml:8"),
        "{stderr}"
    );
    assert!(stderr.contains("set values.replicas"), "{stderr}");
    assert!(
        object_writes(&cluster).is_empty(),
        "nothing written: {:?}",
        object_writes(&cluster)
    );

    let unknown = DEPLOYMENT.replace("| nindent 4", "| shout 4");
    let dir = chart_site(RELEASE, &unknown);
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("function \"shout\" not defined"),
        "{stderr}"
    );
    assert!(
        stderr.contains("shop/templates/deployment.yaml:6"),
        "{stderr}"
    );
}

#[test]
fn unsupported_sources_and_missing_charts_are_refused_clearly() {
    let remote = RELEASE.replace(
        "chart: ../charts/shop",
        "repository: s3://bucket/charts\n  name: shop\n  version: 1.x",
    );
    let dir = chart_site(&remote, DEPLOYMENT);
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2);
    assert!(stderr.contains("apps/store.yaml:"), "{stderr}");
    assert!(stderr.contains("is not a chart repository URL"), "{stderr}");

    let missing = RELEASE.replace("../charts/shop", "../charts/nope");
    let dir = chart_site(&missing, DEPLOYMENT);
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2);
    assert!(stderr.contains("apps/store.yaml:7"), "{stderr}");
    assert!(stderr.contains("no chart at \"charts/nope\""), "{stderr}");
}

#[test]
fn random_values_are_never_predictable_and_the_run_says_they_change() {
    let token = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: token\ndata:\n  token: {{ randAlphaNum 16 | quote }}\n";
    let dir = chart_site(RELEASE, DEPLOYMENT);
    std::fs::write(dir.path().join("charts/shop/templates/token.yaml"), token).unwrap();
    let render = || {
        let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
        assert_eq!(code, 0, "{stderr}");
        let objects = parse_stream(&stdout);
        let cm = objects
            .iter()
            .find(|o| o["metadata"]["name"] == "token")
            .cloned()
            .unwrap();
        (cm["data"]["token"].as_str().unwrap().to_string(), stderr)
    };
    let (first, stderr) = render();
    let (second, _) = render();
    assert_eq!(first.len(), 16);
    assert_ne!(
        first, second,
        "a fresh seed each run, derived from nothing in the repository"
    );
    assert!(
        stderr.contains("templates/token.yaml use random functions: offline, their values come from a throwaway seed"),
        "{stderr}"
    );
    // The chart's test pod uses randAlphaNum too, but is left out: no note about it.
    assert!(!stderr.contains("test-connection"), "{stderr}");
}

/// Against a cluster, random values are drawn once: the first apply stores the seed in a
/// Secret of tend's state namespace, and every later run renders the same values, so a
/// second diff is clean. Another cluster draws its own.
#[test]
fn random_values_are_stable_in_a_cluster_once_applied() {
    let token = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: token\ndata:\n  token: {{ randAlphaNum 16 | quote }}\n";
    let dir = chart_site(RELEASE, DEPLOYMENT);
    std::fs::write(dir.path().join("charts/shop/templates/token.yaml"), token).unwrap();
    let cluster = cluster_with_crds();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stderr.contains("no seed is stored yet"), "{stderr}");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "this first run draws their seed and stores it in Secret tend-system/tend-helm-seed"
        ),
        "{stderr}"
    );
    let seed = get(&cluster, "", "secrets", "tend-system", "tend-helm-seed").expect("the seed");
    assert!(seed["data"]["seed"].is_string());
    let token_of = |cluster: &TestCluster| {
        get(cluster, "", "configmaps", "shop", "token").expect("applied")["data"]["token"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = token_of(&cluster);
    for _ in 0..2 {
        let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
        assert_eq!(code, 0, "the same values: {stdout}\n{stderr}");
        assert!(!stderr.contains("random functions"), "{stderr}");
    }
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(token_of(&cluster), first);
    // Nothing in git decides it: another cluster draws another.
    let other = cluster_with_crds();
    let (code, _, stderr) = tend_on(&other, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    assert_ne!(token_of(&other), first);
}

/// A release renders once: the next run takes its render from the cache directory while
/// chart, values and capabilities are unchanged. Renders that drew random values are never
/// kept (they hold what the seed made).
#[test]
fn unchanged_releases_are_not_rendered_again_and_random_ones_are_never_kept() {
    let dir = chart_site(RELEASE, DEPLOYMENT);
    let cache = tempfile::tempdir().unwrap();
    let render = |dir: &std::path::Path| {
        let (code, stdout, stderr) = run(tend()
            .args(["-v", "render", "--cache-dir"])
            .arg(cache.path())
            .arg("--repo")
            .arg(dir));
        assert_eq!(code, 0, "{stderr}");
        (stdout, stderr)
    };
    let (first, stderr) = render(dir.path());
    assert!(
        stderr.contains("Helm releases: 0 render(s) from the cache, 1 kept for the next run"),
        "{stderr}"
    );
    let kept: Vec<_> = std::fs::read_dir(cache.path().join("helm-renders"))
        .unwrap()
        .collect();
    assert_eq!(kept.len(), 1);
    let (second, stderr) = render(dir.path());
    assert!(
        stderr.contains("Helm releases: 1 render(s) from the cache, 0 kept"),
        "{stderr}"
    );
    assert_eq!(first, second, "the same objects");
    // Another value: rendered again.
    let changed = RELEASE.replace("replicas: 3", "replicas: 4");
    std::fs::write(dir.path().join("apps/store.yaml"), &changed).unwrap();
    let (third, stderr) = render(dir.path());
    assert!(
        stderr.contains("0 render(s) from the cache, 1 kept"),
        "{stderr}"
    );
    assert!(third.contains("replicas: 4"), "{third}");

    let token = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: token\ndata:\n  token: {{ randAlphaNum 16 | quote }}\n";
    std::fs::write(dir.path().join("charts/shop/templates/token.yaml"), token).unwrap();
    for _ in 0..2 {
        let (_, stderr) = render(dir.path());
        assert!(
            !stderr.contains("Helm releases:"),
            "neither taken nor kept: {stderr}"
        );
    }
}

/// With the cluster's seed stored, a release that drew random values is kept too: sealed
/// under a key of that seed, so the next run takes it from the cache and the passwords it
/// holds are not readable in the cache directory.
#[test]
fn random_renders_are_kept_sealed_once_the_clusters_seed_is_stored() {
    let token = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: token\ndata:\n  token: {{ randAlphaNum 16 | quote }}\n";
    let dir = chart_site(RELEASE, DEPLOYMENT);
    std::fs::write(dir.path().join("charts/shop/templates/token.yaml"), token).unwrap();
    let cluster = cluster_with_crds();
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap().to_string();
    let run_with = |command: &str| {
        tend_on(
            &cluster,
            dir.path(),
            &["-v", command, "--cache-dir", &cache_dir],
        )
    };
    let (code, stdout, stderr) = run_with("apply");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // The first apply drew a throwaway seed: nothing of it is kept.
    assert!(!stderr.contains("kept for the next run"), "{stderr}");
    let token_value = get(&cluster, "", "configmaps", "shop", "token").expect("applied")["data"]
        ["token"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, stdout, stderr) = run_with("diff");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("Helm releases: 0 render(s) from the cache, 1 kept for the next run"),
        "{stderr}"
    );
    let (code, stdout, stderr) = run_with("diff");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("Helm releases: 1 render(s) from the cache, 0 kept"),
        "{stderr}"
    );
    for entry in std::fs::read_dir(cache.path().join("helm-renders")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(&token_value), "the drawn value is sealed");
    }
    // Another cluster has another seed: the sealed render is not its.
    let other = cluster_with_crds();
    let (code, _, stderr) = tend_on(
        &other,
        dir.path(),
        &["-v", "apply", "--cache-dir", &cache_dir],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("render(s) from the cache"), "{stderr}");
    let other_token =
        get(&other, "", "configmaps", "shop", "token").expect("applied")["data"]["token"].clone();
    assert_ne!(other_token.as_str(), Some(token_value.as_str()));
}

mod cluster;
mod crypto;
mod dependencies;
mod hooks;
mod kept_parse;
mod oci;
pub(crate) mod registry;
pub mod remote;
mod stamps;
pub(crate) mod subcharts;
mod template_text;
mod values_files;

#[test]
fn rendered_objects_are_reported_at_the_helm_chart_file_and_line_with_chart_and_template() {
    let cluster = cluster_with_crds();
    let dir = chart_site(&format!("# the shop\n{RELEASE}"), DEPLOYMENT);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("apps/store.yaml:2 (chart shop, templates/deployment.yaml)"),
        "{stdout}"
    );
    let (_, json, _) = tend_on(&cluster, dir.path(), &["diff", "-o", "json"]);
    assert!(
        json.contains("\"apps/store.yaml:2 (chart shop, templates/deployment.yaml)\""),
        "the machine report too: {json}"
    );

    // A problem in what a template rendered: at the HelmChart, naming chart and template.
    let nameless =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    a: b\ndata:\n  k: v\n";
    std::fs::write(
        dir.path().join("charts/shop/templates/nameless.yaml"),
        nameless,
    )
    .unwrap();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("apps/store.yaml:2 (chart shop, templates/nameless.yaml): "),
        "{stderr}"
    );
}

/// The README's HelmChart section: its files (each block starts with `# <path>`), with the
/// corpus's podinfo chart as `charts/podinfo`, render as it says.
#[test]
fn the_readme_section_renders_as_written() {
    let corpus = repo_root().join("../shared/helm-corpus/charts/podinfo");
    if !corpus.is_dir() {
        eprintln!("skipped: no Helm corpus at {}", corpus.display());
        return;
    }
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = readme
        .split("\n### HelmChart — ")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README has a HelmChart section");
    let dir = site(&[("namespaces.yaml", &ns_yaml("apps"))]);
    let mut written = 0;
    // The repository examples need the network: checked by the kind's checks only.
    for block in section.split("```yaml\n").skip(1) {
        let text = block.split("```").next().unwrap();
        if text.contains("repository: https://") || text.contains("repository: oci://") {
            continue;
        }
        let path = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# "))
            .expect("a path");
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        written += 1;
    }
    assert_eq!(written, 2);
    copy_tree(&corpus, &dir.path().join("charts/podinfo"));
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let objects = parse_stream(&stdout);
    let deploy = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment");
    assert_eq!(deploy["spec"]["replicas"], 2, "spec.values");
    assert_eq!(deploy["metadata"]["namespace"], "apps");
    let ingress = objects
        .iter()
        .find(|o| o["kind"] == "Ingress")
        .expect("the values file's Ingress");
    assert_eq!(ingress["spec"]["rules"][0]["host"], "podinfo.example.com");
    assert!(
        !objects.iter().any(|o| o["kind"] == "Pod"),
        "tests left out"
    );
}
