//! Flux units reading what the cluster holds (README "Coming from Flux"): a Kustomization's
//! `decryption` with the keys of the Secret it names, SOPS documents inside Secret data,
//! `substituteFrom` and `valuesFrom` objects only the cluster holds.

use crate::common::*;
use crate::sops::encryptor::{encrypt_yaml, Rules, FIXTURES, TEST_RECIPIENT};
use base64::Engine;
use serde_json::{json, Value};
use tend_testserver::TestCluster;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn decoded(secret: &Value, key: &str) -> String {
    let text = secret["data"][key].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
}

/// The bootstrap layout with one more Kustomization, `extra` its spec's lines after
/// `sourceRef`, building `./<path>` of the same repository.
fn site_with_unit(path: &str, extra: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let unit = format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {path}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./{path}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n{extra}"
    );
    let unit_file = format!("clusters/dev/{path}.yaml");
    let mut all: Vec<(&str, &str)> = vec![
        (
            "clusters/dev/flux-system/gotk-sync.yaml",
            "# This file will be generated automatically by flux boostrap.\n",
        ),
        (
            "clusters/dev/flux-system/sync.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        ),
        (&unit_file, &unit),
    ];
    all.extend_from_slice(files);
    site(&all)
}

fn seed_secret(cluster: &TestCluster, namespace: &str, name: &str, data: Value) {
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}))
        .ok();
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}, "data": data}))
        .unwrap();
}

#[test]
fn decryption_opens_encrypted_secrets_and_sops_documents_in_secret_data_with_the_cluster_keys() {
    let password = "s3cret-password-1";
    let db = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db", "namespace": "web"},
        "stringData": {"password": password},
    });
    let rules = Rules {
        encrypted_regex: Some("^(data|stringData)$".into()),
        ..Rules::default()
    };
    let db = encrypt_yaml(&[db], TEST_RECIPIENT, &rules, 41);
    // Flux's other form: whole sops files (as sops wrote them) as Secret data values.
    let config = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-config\n  namespace: web\ndata:\n  config.yaml: {}\n  app.env: {}\n  blob: {}\n  plain: {}\n",
        b64(fixture_text("secrets.yaml").as_bytes()),
        b64(fixture_text("secrets.env").as_bytes()),
        b64(fixture_text("secrets.bin").as_bytes()),
        b64(b"not encrypted"),
    );
    let dir = site_with_unit(
        "secrets",
        "  decryption:\n    provider: sops\n    secretRef:\n      name: sops-keys\n",
        &[
            ("secrets/namespace.yaml", &ns_yaml("web")),
            ("secrets/db.yaml", &db),
            ("secrets/app-config.yaml", &config),
        ],
    );
    let args = ["--path", "clusters/dev"];

    // Offline, the key Secret is nowhere: refused at the unit, with the way out.
    let (code, _, stderr) = run(tend()
        .args(["render", "--path", "clusters/dev", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("secrets.yaml:15: ")
            && stderr.contains("decryption.secretRef names Secret flux-system/sops-keys")
            && stderr.contains("tend render reads no cluster"),
        "{stderr}"
    );

    // A cluster without it: the same refusal, nothing written.
    let cluster = TestCluster::start();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("neither the desired state nor the cluster holds"),
        "{stderr}"
    );
    assert!(object_writes(&cluster).is_empty(), "{:?}", writes(&cluster));

    // With the keys in the cluster (age for the Secret, PGP for the fixtures' documents).
    seed_secret(
        &cluster,
        "flux-system",
        "sops-keys",
        json!({
            "age.agekey": b64(fixture_text("age-keys.txt").as_bytes()),
            "pgp.asc": b64(fixture_text("key.asc").as_bytes()),
            "other": b64(b"ignored"),
        }),
    );
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    for plain in [password, "example_value", "test_value", "binary_value"] {
        assert!(
            !stdout.contains(plain) && !stderr.contains(plain),
            "{plain} leaked:\n{stdout}{stderr}"
        );
    }
    let db = get(&cluster, "", "secrets", "web", "db").expect("applied");
    let stored = match db["data"]["password"].as_str() {
        Some(_) => decoded(&db, "password"),
        None => db["stringData"]["password"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    assert_eq!(stored, password);
    let config = get(&cluster, "", "secrets", "web", "app-config").expect("applied");
    assert!(
        decoded(&config, "config.yaml").contains("test_key: test_value"),
        "{config}"
    );
    assert!(
        !decoded(&config, "config.yaml").contains("ENC["),
        "{config}"
    );
    assert!(
        decoded(&config, "app.env").contains("example_key=example_value"),
        "{config}"
    );
    assert_eq!(decoded(&config, "blob"), "binary_value\n");
    assert_eq!(decoded(&config, "plain"), "not encrypted");

    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["diff"][..], &args].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[test]
fn a_secret_data_value_that_does_not_open_is_refused_at_the_secret() {
    let config = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-config\n  namespace: web\ndata:\n  app.env: {}\n",
        b64(fixture_text("secrets.env").as_bytes()),
    );
    let keys = format!(
        "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: sops-keys\n  namespace: flux-system\ndata:\n  age.agekey: {}\n",
        b64(fixture_text("age-keys.txt").as_bytes())
    );
    // The keys Secret in the desired state (age only; secrets.env is sealed for PGP).
    let dir = site_with_unit(
        "secrets",
        "  decryption:\n    provider: sops\n    secretRef:\n      name: sops-keys\n",
        &[
            ("secrets/namespace.yaml", &ns_yaml("web")),
            ("secrets/app-config.yaml", &config),
            ("clusters/dev/keys.yaml", &keys),
        ],
    );
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "clusters/dev", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("Secret field \"app.env\"")
            && stderr.contains("spec.decryption of Flux Kustomization flux-system/secrets"),
        "{stderr}"
    );
}

#[test]
fn substitute_from_and_values_from_read_objects_only_the_cluster_holds() {
    let chart = [
        ("charts/web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.2.3\n"),
        ("charts/web/values.yaml", "greeting: hi\ncolour: red\n"),
        (
            "charts/web/templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-values\ndata:\n  greeting: {{ .Values.greeting }}\n  colour: {{ .Values.colour }}\n",
        ),
    ];
    let release = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  interval: 1h\n  targetNamespace: web\n  chart:\n    spec:\n      chart: ./charts/web\n      sourceRef:\n        kind: GitRepository\n        name: flux-system\n  valuesFrom:\n    - kind: ConfigMap\n      name: web-values\n    - kind: ConfigMap\n      name: absent\n      optional: true\n";
    let mut files: Vec<(&str, &str)> = chart.to_vec();
    let ns = ns_yaml("web");
    files.push(("apps/namespace.yaml", &ns));
    files.push((
        "apps/greeting.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\n  namespace: web\ndata:\n  greeting: ${GREETING}\n",
    ));
    files.push(("apps/release.yaml", release));
    let dir = site_with_unit(
        "apps",
        "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n      - kind: Secret\n        name: absent\n        optional: true\n",
        &files,
    );
    let args = ["--path", "clusters/dev"];
    let cluster = TestCluster::start();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &[&["diff"][..], &args].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("substituteFrom names ConfigMap flux-system/cluster-vars, which neither the desired state nor the cluster holds"),
        "{stderr}"
    );
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "flux-system"}}))
        .unwrap();
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cluster-vars", "namespace": "flux-system"}, "data": {"GREETING": "hello from the cluster"}}))
        .unwrap();
    // The release's values are read once the unit holding it expanded: a second round.
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("valuesFrom names key \"values.yaml\" of ConfigMap flux-system/web-values, which neither the desired state nor the cluster holds"),
        "{stderr}"
    );
    assert!(object_writes(&cluster).is_empty(), "{:?}", writes(&cluster));
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-values", "namespace": "flux-system"}, "data": {"values.yaml": "colour: blue\n"}}))
        .unwrap();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    let greeting = get(&cluster, "", "configmaps", "web", "greeting").expect("applied");
    assert_eq!(greeting["data"]["greeting"], "hello from the cluster");
    let values = get(&cluster, "", "configmaps", "web", "web-web-values").expect("applied");
    assert_eq!(values["data"]["colour"], "blue");
    assert_eq!(values["data"]["greeting"], "hi");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["diff"][..], &args].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
}
