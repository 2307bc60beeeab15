//! A HelmRelease's chart as source-controller builds it (README "Coming from Flux"):
//! `valuesFiles` replacing the chart's default values, from the GitRepository's tree or the
//! chart's own files.

use crate::common::*;
use crate::helm::subcharts::tgz;
use sha2::Digest;
use std::collections::BTreeMap;

const CHART_VALUES: &str = "greeting: hi\ncolour: red\nsize: small\n";

const TEMPLATE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  colour: {{ .Values.colour | quote }}\n  size: {{ .Values.size | default \"none\" | quote }}\n";

fn release(chart_spec: &str) -> String {
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  interval: 1h\n  chart:\n    spec:\n{chart_spec}  values:\n    greeting: from the release\n"
    )
}

#[test]
fn values_files_of_a_git_chart_replace_its_defaults_in_order() {
    let git_source = "      chart: ./charts/web\n      sourceRef:\n        kind: GitRepository\n        name: flux-system\n";
    let files = |chart_spec: &str| {
        vec![
            (
                "charts/web/Chart.yaml",
                "apiVersion: v2\nname: web\nversion: 1.0.0\n".to_string(),
            ),
            ("charts/web/values.yaml", CHART_VALUES.to_string()),
            ("charts/web/templates/cm.yaml", TEMPLATE.to_string()),
            ("envs/prod/values.yaml", "colour: blue\n".to_string()),
            (
                "envs/prod/more.yaml",
                "colour: green\nsize: large\n".to_string(),
            ),
            ("deploy/release.yaml", release(chart_spec)),
        ]
    };
    let as_refs =
        |files: &[(&'static str, String)]| -> Vec<(&'static str, String)> { files.to_vec() };
    let render = |chart_spec: &str| {
        let owned = as_refs(&files(chart_spec));
        let refs: Vec<(&str, &str)> = owned.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let dir = site(&refs);
        run(tend()
            .args(["render", "--path", "deploy", "--repo"])
            .arg(dir.path()))
    };
    // The chart's values.yaml listed first: the files over it, the release's values over all.
    let (code, stdout, stderr) = render(&format!(
        "{git_source}      valuesFiles:\n        - charts/web/values.yaml\n        - ./envs/prod/values.yaml\n        - envs/prod/more.yaml\n"
    ));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("greeting: from the release\n"), "{stdout}");
    assert!(stdout.contains("colour: green\n"), "{stdout}");
    assert!(stdout.contains("size: large\n"), "{stdout}");
    // Not listed, the chart's values.yaml counts for nothing: source-controller replaces it.
    let (code, stdout, stderr) = render(&format!(
        "{git_source}      valuesFiles:\n        - envs/prod/values.yaml\n"
    ));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("colour: blue\n"), "{stdout}");
    assert!(stdout.contains("size: none\n"), "{stdout}");
    // A missing file: an error at the release, unless ignoreMissingValuesFiles.
    let missing = format!("{git_source}      valuesFiles:\n        - envs/prod/values.yaml\n        - envs/prod/absent.yaml\n");
    let (code, _, stderr) = render(&missing);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("release.yaml:")
            && stderr.contains("no values file found at path \"envs/prod/absent.yaml\""),
        "{stderr}"
    );
    let (code, stdout, stderr) =
        render(&format!("{missing}      ignoreMissingValuesFiles: true\n"));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("colour: blue\n"), "{stdout}");
    // Out of the repository: refused.
    let (code, _, stderr) = render(&format!(
        "{git_source}      valuesFiles:\n        - ../../etc/passwd\n"
    ));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("leaves the repository"), "{stderr}");
}

#[test]
fn values_files_of_a_repository_chart_name_files_of_the_chart() {
    let archive = tgz(&[
        (
            "web/Chart.yaml",
            "apiVersion: v2\nname: web\nversion: 1.0.0\n",
        ),
        ("web/values.yaml", CHART_VALUES),
        ("web/values-prod.yaml", "colour: blue\n"),
        ("web/templates/cm.yaml", TEMPLATE),
    ]);
    let digest = hex::encode(sha2::Sha256::digest(&archive));
    let mut served = BTreeMap::new();
    served.insert(
        "/charts/index.yaml".to_string(),
        format!("apiVersion: v1\nentries:\n  web:\n    - name: web\n      version: 1.0.0\n      digest: {digest}\n      urls:\n        - web-1.0.0.tgz\n").into_bytes(),
    );
    served.insert("/charts/web-1.0.0.tgz".to_string(), archive);
    let (base, _) = crate::helm::remote::serve(served);
    let repository = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: {base}/charts\n"
    );
    let source = "      chart: web\n      version: \"1.x\"\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n";
    let cache = tempfile::tempdir().unwrap();
    let render = |chart_spec: &str| {
        let dir = site(&[
            ("repository.yaml", &repository),
            ("release.yaml", &release(chart_spec)),
        ]);
        run(tend()
            .args(["render", "--cache-dir"])
            .arg(cache.path())
            .arg("--repo")
            .arg(dir.path()))
    };
    let (code, stdout, stderr) = render(&format!(
        "{source}      valuesFiles:\n        - values.yaml\n        - values-prod.yaml\n"
    ));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("colour: blue\n"), "{stdout}");
    assert!(stdout.contains("size: small\n"), "{stdout}");
    assert!(stdout.contains("greeting: from the release\n"), "{stdout}");
    // Without values.yaml, its defaults are gone.
    let (code, stdout, stderr) = render(&format!(
        "{source}      valuesFiles:\n        - values-prod.yaml\n"
    ));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("size: none\n"), "{stdout}");
    let (code, _, stderr) = render(&format!(
        "{source}      valuesFiles:\n        - values-staging.yaml\n"
    ));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("release.yaml (Flux HelmRelease flux-system/web):")
            && stderr.contains("no values file found at path \"values-staging.yaml\" in chart web"),
        "{stderr}"
    );
}

#[test]
fn a_helm_repository_secret_ref_logs_in_to_the_repository() {
    use crate::helm::registry::{chart, serve, sha};
    let archive = chart("1.0.0");
    let digest = sha(&archive);
    let expected = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "flux:s3cret-login"
        )
    );
    let (base, _) = serve(move |request| {
        if request.header("Authorization") != Some(expected.as_str()) {
            return (401, vec![], b"unauthorized".to_vec());
        }
        match request.path.as_str() {
            "/charts/index.yaml" => (200, vec![], format!("apiVersion: v1\nentries:\n  shop:\n    - name: shop\n      version: 1.0.0\n      digest: {digest}\n      urls:\n        - shop-1.0.0.tgz\n").into_bytes()),
            "/charts/shop-1.0.0.tgz" => (200, vec![], archive.clone()),
            _ => crate::helm::registry::not_found(),
        }
    });
    let units = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: {base}/charts\n  secretRef:\n    name: charts-login\n---\n{}",
        release("      chart: shop\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n")
    );
    let login = |password: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: charts-login\n  namespace: flux-system\nstringData:\n  username: flux\n  password: {password}\n")
    };
    let cache = tempfile::tempdir().unwrap();
    let render = |files: &[(&str, &str)]| {
        let dir = site(files);
        run(tend()
            .args(["render", "--cache-dir"])
            .arg(cache.path())
            .arg("--repo")
            .arg(dir.path()))
    };
    // The login in the desired state.
    let (code, stdout, stderr) = render(&[
        ("units.yaml", &units),
        ("login.yaml", &login("s3cret-login")),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("name: web-shop\n"), "{stdout}");
    assert!(
        !stdout.contains("s3cret-login") || stdout.contains("kind: Secret"),
        "{stdout}"
    );
    // A wrong one: refused by the repository, the login never shown.
    let (code, _, stderr) = render(&[
        ("units.yaml", &units),
        ("login.yaml", &login("wrong-password")),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("Secret flux-system/charts-login of HelmRepository"),
        "{stderr}"
    );
    assert!(!stderr.contains("wrong-password"), "{stderr}");
    // Only in the cluster: read by diff.
    let cluster = tend_testserver::TestCluster::start();
    cluster
        .seed(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "flux-system"}}))
        .unwrap();
    cluster
        .seed(serde_json::json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "charts-login", "namespace": "flux-system"}, "data": {"username": "Zmx1eA==", "password": "czNjcmV0LWxvZ2lu"}}))
        .unwrap();
    let dir = site(&[
        ("units.yaml", &units),
        ("namespace.yaml", &ns_yaml("flux-system")),
    ]);
    let (code, stdout, stderr) = run(tend()
        .args(["diff", "--cache-dir"])
        .arg(tempfile::tempdir().unwrap().path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .arg("--repo")
        .arg(dir.path()));
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("web-shop"), "{stdout}");
}

#[test]
fn a_helm_repository_cert_secret_ref_is_refused_not_ignored() {
    let units = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: https://charts.example.com\n  certSecretRef:\n    name: charts-ca\n---\n{}",
        release("      chart: shop\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n")
    );
    let dir = site(&[("units.yaml", &units)]);
    let (code, _, stderr) = run(tend().args(["render", "--repo"]).arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("units.yaml:9") && stderr.contains("certSecretRef"),
        "{stderr}"
    );
}
