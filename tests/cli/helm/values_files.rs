//! `spec.valuesFiles`: values files relative to the HelmChart's file, applied in order under
//! `spec.values` (as `helm template -f a -f b --set ...`); SOPS-encrypted ones decrypted with
//! the run's keys, their plaintext kept out of everything tend prints.

use super::{chart_site, DEPLOYMENT, RELEASE};
use crate::common::*;
use crate::kinds::cluster_with_crds;
use crate::sops::encryptor::{encrypt_yaml, Rules, TEST_IDENTITY, TEST_RECIPIENT};
use serde_json::json;

const WITH_FILES: &str = "\
apiVersion: tend.dev/v1alpha1
kind: HelmChart
metadata:
  name: store
  namespace: shop
spec:
  chart: ../charts/shop
  valuesFiles:
    - values/base.yaml
    - values/prod.yaml
  values:
    image:
      tag: \"1.27\"
";

fn deployment(objects: &[serde_json::Value]) -> serde_json::Value {
    objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .cloned()
        .expect("a Deployment")
}

#[test]
fn values_files_apply_in_order_under_inline_values_and_are_not_manifests() {
    let cluster = cluster_with_crds();
    let dir = chart_site(WITH_FILES, DEPLOYMENT);
    write(&dir, "apps/values/base.yaml", "replicas: 2\nimage:\n  tag: \"1.25\"\n  repository: registry.example.com/nginx\nresources: null\n");
    write(&dir, "apps/values/prod.yaml", "replicas: 5\n");

    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let deploy = deployment(&parse_stream(&stdout));
    assert_eq!(deploy["spec"]["replicas"], 5, "the later file wins");
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["image"], "registry.example.com/nginx:1.27",
        "spec.values wins over every file; maps merge"
    );
    assert!(
        container["resources"].is_null(),
        "null in a values file removes the chart's default (toYaml of nothing is null): {container}"
    );

    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let live = get(&cluster, "apps", "deployments", "shop", "store-shop").expect("applied");
    assert_eq!(live["spec"]["replicas"], 5);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "in sync:\n{stdout}\n{stderr}");

    // A changed values file is a difference.
    write(&dir, "apps/values/prod.yaml", "replicas: 6\n");
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("replicas"), "{stdout}");
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) {
    let path = dir.path().join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_missing_or_outside_values_file_is_refused_at_the_helm_chart_line() {
    let cluster = cluster_with_crds();
    let dir = chart_site(WITH_FILES, DEPLOYMENT);
    write(&dir, "apps/values/base.yaml", "replicas: 2\n");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("apps/store.yaml:10"), "{stderr}");
    assert!(stderr.contains("spec.valuesFiles[1]"), "{stderr}");
    assert!(stderr.contains("\"apps/values/prod.yaml\""), "{stderr}");
    assert!(stderr.contains("no such file"), "{stderr}");
    assert!(object_writes(&cluster).is_empty(), "nothing written");

    let outside = WITH_FILES.replace("values/prod.yaml", "../../prod.yaml");
    let dir = chart_site(&outside, DEPLOYMENT);
    write(&dir, "apps/values/base.yaml", "replicas: 2\n");
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2);
    assert!(stderr.contains("outside the repository"), "{stderr}");

    // A values file that is not a map of values names its own line.
    let dir = chart_site(WITH_FILES, DEPLOYMENT);
    write(&dir, "apps/values/base.yaml", "replicas: 2\n");
    write(&dir, "apps/values/prod.yaml", "- a\n- b\n");
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2);
    assert!(stderr.contains("apps/values/prod.yaml:1"), "{stderr}");
    assert!(stderr.contains("must hold a map of values"), "{stderr}");
}

/// Extra `..` components climb out of the repository; they must not be dropped at its root,
/// which would read the repository's own files in their place (issue 32, item 3).
#[test]
fn paths_that_climb_out_of_the_repository_are_refused_not_read_from_its_root() {
    // Three `..` from apps/ leave the repository by two levels; dropping them would read
    // the repository's own values.yaml.
    let outside = WITH_FILES.replace(
        "    - values/base.yaml\n    - values/prod.yaml\n",
        "    - ../../../values.yaml\n",
    );
    let dir = chart_site(&outside, DEPLOYMENT);
    write(&dir, "values.yaml", "replicas: 7\n");
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("apps/store.yaml:9"), "{stderr}");
    assert!(stderr.contains("spec.valuesFiles[0]"), "{stderr}");
    assert!(stderr.contains("\"../../values.yaml\""), "{stderr}");
    assert!(stderr.contains("outside the repository"), "{stderr}");
    assert!(!stdout.contains("replicas: 7"), "{stdout}");

    // The same for a chart directory: out and back in again is still out, and the
    // repository's root is not the chart either.
    for (chart, shown) in [
        ("../../../charts/shop", "../../charts/shop"),
        ("../../..", "../.."),
    ] {
        let release = RELEASE.replace("chart: ../charts/shop", &format!("chart: {chart}"));
        let dir = chart_site(&release, DEPLOYMENT);
        let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
        assert_eq!(code, 2, "{chart}: {stdout}\n{stderr}");
        assert!(stderr.contains("apps/store.yaml:7"), "{chart}: {stderr}");
        assert!(
            stderr.contains(&format!("spec.chart: no chart at \"{shown}\"")),
            "{chart}: {stderr}"
        );
        assert!(
            stderr.contains("outside the repository"),
            "{chart}: {stderr}"
        );
        assert!(!stdout.contains("kind: Deployment"), "{chart}: {stdout}");
    }
}

/// `.Files` holds the chart's own files only (read by the source stage, a map by path), so a
/// path that climbs out finds nothing, as Helm's `.Files.Get` of a missing file gives "".
#[test]
fn files_paths_that_climb_out_of_the_chart_find_nothing() {
    const PEEK: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: peek\ndata:\n  up: {{ .Files.Get \"../../notes.txt\" | quote }}\n  root: {{ .Files.Get \"../../../apps/secret.txt\" | quote }}\n  own: {{ .Files.Get \"files/own.txt\" | quote }}\n";
    let dir = chart_site(RELEASE, DEPLOYMENT);
    write(&dir, "notes.txt", "the repository's\n");
    write(&dir, "apps/secret.txt", "not the chart's\n");
    write(&dir, "charts/shop/files/own.txt", "the chart's");
    write(&dir, "charts/shop/templates/peek.yaml", PEEK);
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let objects = parse_stream(&stdout);
    let peek = objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == "peek")
        .expect("the ConfigMap");
    assert_eq!(
        peek["data"],
        json!({"up": "", "root": "", "own": "the chart's"})
    );
}

const SECRET_TEMPLATE: &str = "apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-db
stringData:
  password: {{ .Values.db.password | quote }}
";

const PASSWORD: &str = "helm-s0ps-canary-93b1";

fn sops_site(extra_template: Option<&str>) -> tempfile::TempDir {
    let release = RELEASE.replace(
        "  values:\n",
        "  valuesFiles:\n    - secrets.enc.yaml\n  values:\n",
    );
    let dir = chart_site(&release, DEPLOYMENT);
    write(&dir, "charts/shop/templates/secret.yaml", SECRET_TEMPLATE);
    if let Some(t) = extra_template {
        write(&dir, "charts/shop/templates/leak.yaml", t);
    }
    let encrypted = encrypt_yaml(
        &[json!({"db": {"password": PASSWORD, "user": "shop"}})],
        TEST_RECIPIENT,
        &Rules {
            encrypted_regex: Some("^password$".into()),
            ..Rules::default()
        },
        7,
    );
    write(&dir, "apps/secrets.enc.yaml", &encrypted);
    dir
}

fn keyed(cmd: &mut assert_cmd::Command) -> &mut assert_cmd::Command {
    let home = scratch_home();
    cmd.env("SOPS_AGE_KEY", TEST_IDENTITY)
        .env_remove("SOPS_AGE_KEY_FILE")
        .env("XDG_CONFIG_HOME", home.join("config"))
}

#[test]
fn a_sops_encrypted_values_file_is_decrypted_and_its_plaintext_never_shown() {
    let cluster = cluster_with_crds();
    let dir = sops_site(None);
    let (code, stdout, stderr) = run(keyed(&mut tend())
        .args(["apply", "--repo"])
        .arg(dir.path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));
    let live = get(&cluster, "", "secrets", "shop", "store-db").expect("applied");
    let data = live["data"]["password"]
        .as_str()
        .map(String::from)
        .or_else(|| live["stringData"]["password"].as_str().map(String::from));
    let data = data.expect("password");
    use base64::Engine as _;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(&data)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or(data);
    assert_eq!(decoded, PASSWORD, "the Secret holds the decrypted value");

    // Without a key: the values file is the problem, nothing is written.
    let cluster = cluster_with_crds();
    let home = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(tend()
        .env_remove("SOPS_AGE_KEY")
        .env_remove("SOPS_AGE_KEY_FILE")
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("HOME", home.path())
        .args(["apply", "--repo"])
        .arg(dir.path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("apps/secrets.enc.yaml:"), "{stderr}");
    assert!(stderr.contains("no available key"), "{stderr}");
    assert!(stderr.contains("a values file of a HelmChart"), "{stderr}");
    assert!(object_writes(&cluster).is_empty());
}

#[test]
fn encrypted_values_may_not_reach_objects_tend_prints_in_plain_text() {
    let leak = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  dsn: \"postgres://shop:{{ .Values.db.password }}@db\"\n";
    let dir = sops_site(Some(leak));
    let (code, stdout, stderr) = run(keyed(&mut tend())
        .args(["render", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        !stdout.contains(PASSWORD) && !stderr.contains(PASSWORD),
        "{stderr}"
    );
    assert!(stderr.contains("apps/store.yaml:"), "{stderr}");
    assert!(
        stderr.contains("ConfigMap leak (templates/leak.yaml:6)"),
        "{stderr}"
    );
    assert!(stderr.contains("Secrets only"), "{stderr}");
}

/// A values file is read as Helm reads `-f`: YAML 1.1 (go-yaml v2), so `yes` and `on` are
/// true and `0644` is the number 420 (every number a float64 to the templates).
#[test]
fn values_files_are_read_as_helm_reads_yaml_1_1() {
    const KINDS: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kinds\ndata:\n  enabled: {{ kindOf .Values.enabled | quote }}\n  flag: {{ .Values.flag | quote }}\n  mode: {{ .Values.mode | quote }}\n  modeKind: {{ kindOf .Values.mode | quote }}\n";
    let release = "\
apiVersion: tend.dev/v1alpha1
kind: HelmChart
metadata:
  name: store
  namespace: shop
spec:
  chart: ../charts/shop
  valuesFiles:
    - values/old.yaml
";
    let dir = chart_site(release, DEPLOYMENT);
    write(&dir, "charts/shop/templates/kinds.yaml", KINDS);
    write(
        &dir,
        "apps/values/old.yaml",
        "enabled: yes\nflag: on\nmode: 0644\n",
    );
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let objects = parse_stream(&stdout);
    let kinds = objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == "kinds")
        .expect("the ConfigMap");
    assert_eq!(
        kinds["data"],
        json!({"enabled": "bool", "flag": "true", "mode": "420", "modeKind": "float64"})
    );
}
