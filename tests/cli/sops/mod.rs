//! SOPS-encrypted secrets (README "Encrypted secrets (SOPS)", issue 19): decrypted natively with age keys, or refused at
//! file:line with exit 2 and nothing written; never applied as ciphertext.

pub(crate) mod encryptor;

use crate::common::*;
use encryptor::*;
use serde_json::{json, Value};
use std::path::Path;
use tend_testserver::TestCluster;

/// A decrypted value that must never show in any output.
const PLAINTEXT: &str = "s0ps-plain-canary-7c41e";

fn fixture_text(name: &str) -> Option<String> {
    let text = std::fs::read_to_string(Path::new(FIXTURES).join(name)).ok();
    if text.is_none() {
        eprintln!("no sops fixtures at {FIXTURES}: skipped");
    }
    text
}

fn secret(name: &str, password: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "default"},
        "type": "Opaque",
        "stringData": {"password": password, "port": "5432"},
    })
}

/// As Flux users encrypt Secrets: only `data`/`stringData`.
fn flux_rules() -> Rules {
    Rules {
        encrypted_regex: Some("^(data|stringData)$".into()),
        ..Rules::default()
    }
}

fn key_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("keys.txt");
    std::fs::write(&path, format!("# test key\n{TEST_IDENTITY}\n")).unwrap();
    path
}

/// `tend` with no key source from the developer's environment.
fn tend_clean() -> assert_cmd::Command {
    let mut cmd = tend();
    let home = scratch_home();
    cmd.env_remove("SOPS_AGE_KEY")
        .env_remove("SOPS_AGE_KEY_FILE")
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("HOME", &home);
    cmd
}

fn on(
    cluster: &TestCluster,
    dir: &Path,
    args: &[&str],
    keys: Option<&Path>,
) -> (i32, String, String) {
    let mut cmd = tend_clean();
    cmd.args(args)
        .arg("--repo")
        .arg(dir)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path());
    if let Some(keys) = keys {
        cmd.arg("--decryption-key-file").arg(keys);
    }
    run(&mut cmd)
}

#[test]
fn the_encryptor_agrees_with_real_sops() {
    let Some(text) = fixture_text("secrets.yaml") else {
        return;
    };
    let encrypted: Value = serde_yaml::from_str(&text).unwrap();
    let plain = json!({
        "test_key": "test_value",
        "a_list": ["e1", "e3"],
        "nested": {"test": {"file": "another value"}},
    });
    let rules = Rules {
        unencrypted_suffix: Some("_unencrypted".into()),
        ..Rules::default()
    };
    // The MAC rules: what this encryptor computes is what sops stored.
    assert_eq!(
        mac_of(std::slice::from_ref(&plain), &rules),
        stored_mac(&encrypted["sops"], TEST_IDENTITY)
    );
    // What it writes, tend reads back to the plaintext, with sops's value types.
    let widget = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"name": "x", "count": 3, "ratio": 0.5, "on": true, "off": false, "items": [1, "two"]},
    });
    let rules = Rules {
        encrypted_regex: Some("^spec$".into()),
        mac_only_encrypted: true,
        ..Rules::default()
    };
    let text = encrypt_yaml(std::slice::from_ref(&widget), TEST_RECIPIENT, &rules, 3);
    for kind in ["type:int", "type:float", "type:bool", "type:str"] {
        assert!(text.contains(kind), "{text}");
    }
    let dir = site(&[("w.yaml", &text)]);
    let keys = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(keys.path(), TEST_IDENTITY).unwrap();
    let (code, out, err) = run(tend_clean()
        .args(["render", "--repo"])
        .arg(dir.path())
        .arg("--decryption-key-file")
        .arg(keys.path())
        .args(["-o", "json", "--show-secrets"]));
    assert_eq!(code, 0, "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed["items"][0]["spec"], widget["spec"], "{out}");
    assert!(listed["items"][0].get("sops").is_none());
    // In any other kind, the fields sops sealed are masked where Secret data would be.
    let other = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"token": "t0ken-value", "size": 3}});
    let dir = site(&[("w.yaml", &encrypt_yaml(&[other], TEST_RECIPIENT, &rules, 4))]);
    for output in ["yaml", "json"] {
        let (code, out, err) = run(tend_clean()
            .args(["render", "--repo"])
            .arg(dir.path())
            .arg("--decryption-key-file")
            .arg(keys.path())
            .args(["-o", output, "-vvv"]));
        assert_eq!(code, 0, "{out}{err}");
        assert!(!err.contains("t0ken-value") && !out.contains("t0ken-value"));
        assert!(out.contains("***"), "{out}");
    }
    let (code, out, _) = run(tend_clean()
        .args(["render", "--repo"])
        .arg(dir.path())
        .arg("--decryption-key-file")
        .arg(keys.path())
        .args(["-o", "json", "--show-secrets"]));
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed["items"][0]["spec"]["token"], "t0ken-value");
}

/// A ConfigMap whose values sops sealed applies its plaintext; every report masks those values as it masks
/// Secret data, also when they change, while its other fields show as usual.
#[test]
fn encrypted_fields_of_any_kind_apply_in_plaintext_and_stay_masked() {
    let cluster = TestCluster::start();
    let config = |token: &str, level: &str| {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app", "namespace": "default"},
            "data": {"token": token, "level": level},
        })
    };
    // Its kind sealed too, as sops leaves it without `--encrypted-regex`; `level` open.
    let rules = Rules {
        encrypted_regex: Some("^(kind|token)$".into()),
        ..Rules::default()
    };
    let text = encrypt_yaml(&[config(PLAINTEXT, "info")], TEST_RECIPIENT, &rules, 21);
    assert!(text.contains("kind: ENC[AES256_GCM"), "{text}");
    let dir = site(&[("app.yaml", &text)]);
    let keys = tempfile::tempdir().unwrap();
    let keys = key_file(keys.path());
    let (code, out, err) = on(&cluster, dir.path(), &["apply", "-vvv"], Some(&keys));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        !out.contains(PLAINTEXT) && !err.contains(PLAINTEXT),
        "{out}\n{err}"
    );
    let live = get(&cluster, "", "configmaps", "default", "app").expect("created");
    assert_eq!(live["data"]["token"], PLAINTEXT);
    let (code, out, err) = on(&cluster, dir.path(), &["diff"], Some(&keys));
    assert_eq!(code, 0, "a second diff is clean: {out}\n{err}");
    // Both the sealed value and an open one change: only the open one is shown.
    let text = encrypt_yaml(&[config("new-s3cret", "debug")], TEST_RECIPIENT, &rules, 22);
    write_site(dir.path(), &[("app.yaml", &text)]);
    for format in ["text", "json", "markdown"] {
        let (code, out, err) = on(
            &cluster,
            dir.path(),
            &["diff", "-o", format, "-vvv"],
            Some(&keys),
        );
        assert_eq!(code, 1, "{out}\n{err}");
        for plain in [PLAINTEXT, "new-s3cret"] {
            assert!(
                !out.contains(plain) && !err.contains(plain),
                "{format}: {out}\n{err}"
            );
        }
        assert!(out.contains("(changed)"), "{format}: {out}");
        assert!(out.contains("debug"), "{format}: {out}");
    }
    // Someone else changes the sealed value in the cluster: drift is reported, masked.
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(cluster.client().await, "default");
        let params = kube::api::PatchParams {
            field_manager: Some("kubectl-edit".into()),
            ..Default::default()
        };
        let patch = json!({"data": {"token": "kubectl-edited"}});
        api.patch("app", &params, &kube::api::Patch::Merge(&patch))
            .await
            .expect("merge patch");
    });
    let (code, out, err) = on(&cluster, dir.path(), &["diff", "-vvv"], Some(&keys));
    assert_eq!(code, 1, "{out}\n{err}");
    for plain in [PLAINTEXT, "new-s3cret", "kubectl-edited"] {
        assert!(!out.contains(plain) && !err.contains(plain), "{out}\n{err}");
    }
    assert!(out.contains("kubectl-edit"), "the drift is named: {out}");
    let (code, out, err) = on(&cluster, dir.path(), &["apply"], Some(&keys));
    assert_eq!(code, 0, "{out}\n{err}");
    let live = get(&cluster, "", "configmaps", "default", "app").expect("kept");
    assert_eq!(live["data"]["token"], "new-s3cret");
    assert_eq!(live["data"]["level"], "debug");
}

/// A decrypted value that tend or the server refuses is named by its field, never quoted:
/// render's own check of a label value, and the server's 422 for a Job's changed pod spec
/// (kube-apiserver quotes the whole new spec, env values included).
#[test]
fn a_refused_decrypted_value_is_not_quoted_in_any_message() {
    let cluster = TestCluster::start();
    let keys = tempfile::tempdir().unwrap();
    let keys = key_file(keys.path());
    let check = |dir: &Path, args: &[&str], code: i32, expect: &str| {
        let (got, out, err) = on(&cluster, dir, args, Some(&keys));
        assert_eq!(got, code, "{args:?}: {out}\n{err}");
        assert!(
            !out.contains(PLAINTEXT) && !err.contains(PLAINTEXT),
            "{args:?}: {out}\n{err}"
        );
        assert!(
            format!("{out}{err}").contains(expect),
            "{args:?} says {expect:?}: {out}\n{err}"
        );
    };
    let labelled = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": "default",
                     "labels": {"tier": format!("{PLAINTEXT} not a label")}},
        "data": {"level": "info"},
    });
    let rules = Rules {
        encrypted_regex: Some("^(tier|value)$".into()),
        ..Rules::default()
    };
    let dir = site(&[(
        "app.yaml",
        &encrypt_yaml(&[labelled], TEST_RECIPIENT, &rules, 23),
    )]);
    check(
        dir.path(),
        &["diff", "-vvv"],
        2,
        "value \"***\" is not a valid label value",
    );

    let job = |password: &str| {
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "migrate", "namespace": "default"},
            "spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "m", "image": "migrate:1",
                                "env": [{"name": "PASSWORD", "value": password}]}],
            }}},
        })
    };
    let write = |password: &str, key: u8| {
        write_site(
            dir.path(),
            &[(
                "job.yaml",
                &encrypt_yaml(&[job(password)], TEST_RECIPIENT, &rules, key),
            )],
        )
    };
    write("first-s3cret-value", 24);
    let (code, out, err) = on(&cluster, dir.path(), &["apply"], Some(&keys));
    assert_eq!(code, 0, "{out}\n{err}");
    write(PLAINTEXT, 25);
    let replace = "replace: spec.template.spec: field is immutable";
    check(dir.path(), &["diff", "-vvv"], 1, replace);
    check(
        dir.path(),
        &["diff", "-o", "json", "-vvv"],
        1,
        "field is immutable",
    );
    check(dir.path(), &["apply", "-vvv"], 0, replace);
    let live = get(&cluster, "batch", "jobs", "default", "migrate").expect("replaced");
    let env = &live["spec"]["template"]["spec"]["containers"][0]["env"][0];
    assert_eq!(env["value"], PLAINTEXT);

    // A sealed selector label changed: refused (a Deployment is not replaced on its own), and
    // the server's text quoting the new selector is shown masked.
    let deployment = |app: &str| {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": app}},
                "template": {
                    "metadata": {"labels": {"app": app}},
                    "spec": {"containers": [{"name": "web", "image": "web:1"}]},
                },
            },
        })
    };
    let rules = Rules {
        encrypted_regex: Some("^app$".into()),
        ..Rules::default()
    };
    let write = |app: &str, key: u8| {
        write_site(
            dir.path(),
            &[(
                "web.yaml",
                &encrypt_yaml(&[deployment(app)], TEST_RECIPIENT, &rules, key),
            )],
        )
    };
    write("first-label", 26);
    let (code, out, err) = on(&cluster, dir.path(), &["apply"], Some(&keys));
    assert_eq!(code, 0, "{out}\n{err}");
    write(PLAINTEXT, 27);
    check(
        dir.path(),
        &["diff", "-vvv"],
        2,
        "MatchLabels:map[string]string{\"app\":\"***\"}",
    );
    check(
        dir.path(),
        &["apply", "-o", "json"],
        2,
        "field is immutable",
    );
}

/// A PGP key protected by a passphrase (made with `gpg --gen-key`, passphrase "correct horse
/// battery staple"): tend never prompts, so it refuses the key file at the key's line, says
/// how to go on, and writes nothing.
#[test]
fn a_passphrase_protected_pgp_key_is_refused_with_the_way_out() {
    let cluster = TestCluster::start();
    let key = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sops/passphrase-protected.asc"
    );
    let keys = tempfile::tempdir().unwrap();
    let file = keys.path().join("keys.asc");
    let armored = std::fs::read_to_string(key).unwrap();
    std::fs::write(&file, format!("# exported with gpg\n\n{armored}")).unwrap();
    let text = encrypt_yaml(
        &[secret("db", PLAINTEXT)],
        TEST_RECIPIENT,
        &flux_rules(),
        28,
    );
    let dir = site(&[("db.yaml", &text)]);
    let (code, out, err) = on(&cluster, dir.path(), &["apply", "-vvv"], Some(&file));
    assert_eq!(code, 2, "{out}\n{err}");
    let said = format!("{out}{err}");
    assert!(said.contains("keys.asc"), "{said}");
    assert!(said.contains("line 3"), "{said}");
    assert!(said.contains("protected by a passphrase"), "{said}");
    assert!(said.contains("sops updatekeys"), "{said}");
    let body = armored.lines().nth(2).unwrap();
    assert!(!said.contains(body), "no key material: {said}");
    assert!(get(&cluster, "", "secrets", "default", "db").is_none());
}

#[test]
fn the_real_sops_fixture_is_decrypted_with_sops_age_key_file() {
    let Some(text) = fixture_text("secrets.yaml") else {
        return;
    };
    let dir = site(&[("secrets.yaml", &text)]);
    // Without a key: the recipients and where tend looked.
    let (code, out, err) = run(tend_clean().args(["render", "--repo"]).arg(dir.path()));
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("secrets.yaml:"), "{err}");
    assert!(err.contains(TEST_RECIPIENT), "{err}");
    assert!(
        err.contains("PGP key 2504791468B153B8A3963CC97BA53D1919C5DFD4"),
        "{err}"
    );
    assert!(err.contains("SOPS_AGE_KEY_FILE (unset)"), "{err}");
    // With the fixture's key file: it opens and its MAC holds; what is left is that it is no
    // Kubernetes object (it is sops's own test file): refused as such, its values unprinted.
    let (code, out, err) = run(tend_clean().args(["render", "--repo"]).arg(dir.path()).env(
        "SOPS_AGE_KEY_FILE",
        Path::new(FIXTURES).join("age-keys.txt"),
    ));
    assert_eq!(code, 2);
    assert!(!err.contains("no available key"), "{err}");
    assert!(err.contains("secrets.yaml:1:"), "{err}");
    for value in ["test_value", "another value"] {
        assert!(!err.contains(value) && !out.contains(value), "{err}");
    }
}

#[test]
fn an_encrypted_secret_applies_its_plaintext_and_diffs_clean() {
    let cluster = TestCluster::start();
    let text = encrypt_yaml(&[secret("db", PLAINTEXT)], TEST_RECIPIENT, &flux_rules(), 9);
    assert!(!text.contains(PLAINTEXT));
    let dir = site(&[("db.yaml", &text)]);
    let keys = tempfile::tempdir().unwrap();
    let keys = key_file(keys.path());
    let (code, out, err) = on(&cluster, dir.path(), &["apply", "-vvv"], Some(&keys));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains(PLAINTEXT) && !err.contains(PLAINTEXT));
    let live = get(&cluster, "", "secrets", "default", "db").expect("the Secret was created");
    let stored = live["data"]["password"].as_str().unwrap();
    use base64::Engine;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(stored)
        .unwrap();
    assert_eq!(decoded, PLAINTEXT.as_bytes());
    assert_eq!(
        live["data"]["port"],
        json!(base64::engine::general_purpose::STANDARD.encode("5432"))
    );
    // Decryption is deterministic: nothing to change on a second look.
    for format in ["text", "json", "markdown"] {
        let (code, out, err) = on(
            &cluster,
            dir.path(),
            &["diff", "-o", format, "-vvv"],
            Some(&keys),
        );
        assert_eq!(code, 0, "{out}\n{err}");
        assert!(!out.contains(PLAINTEXT) && !err.contains(PLAINTEXT));
    }
    // A changed encrypted value shows as a masked change.
    let text = encrypt_yaml(
        &[secret("db", "another-pass")],
        TEST_RECIPIENT,
        &flux_rules(),
        9,
    );
    write_site(dir.path(), &[("db.yaml", &text)]);
    let (code, out, err) = on(&cluster, dir.path(), &["diff", "-vvv"], Some(&keys));
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        !out.contains("another-pass") && !err.contains("another-pass"),
        "{out}"
    );
}

/// Opened data keys are cached (sealed under a key derived from the identity) in the cache
/// directory: the next run opens none, the file holds neither plaintext nor data keys, and a
/// damaged or foreign cache only costs time.
#[test]
fn opened_data_keys_are_cached_for_the_next_run_and_only_for_its_keys() {
    let text = encrypt_yaml(
        &[secret("db", PLAINTEXT)],
        TEST_RECIPIENT,
        &flux_rules(),
        31,
    );
    let dir = site(&[("db.yaml", &text)]);
    let keys_dir = tempfile::tempdir().unwrap();
    let keys = key_file(keys_dir.path());
    let cache = tempfile::tempdir().unwrap();
    let render = || {
        run(tend_clean()
            .args(["-v", "render", "--repo"])
            .arg(dir.path())
            .arg("--decryption-key-file")
            .arg(&keys)
            .arg("--cache-dir")
            .arg(cache.path()))
    };
    let (code, first, err) = render();
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("SOPS data keys: 0 from the cache, 1 opened"),
        "{err}"
    );
    let file = cache.path().join("sops-data-keys");
    let stored = std::fs::read_to_string(&file).expect("the cache was written");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(
        !stored.contains(PLAINTEXT) && stored.lines().count() == 1,
        "{stored}"
    );
    let (code, second, err) = render();
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("SOPS data keys: 1 from the cache, 0 opened"),
        "{err}"
    );
    assert_eq!(first, second);
    // A damaged entry is passed over: the key opens the file again.
    let (index, sealed) = stored.trim().split_once(' ').unwrap();
    let flipped = if sealed.starts_with('0') { "1" } else { "0" };
    std::fs::write(&file, format!("{index} {flipped}{}\n", &sealed[1..])).unwrap();
    let (code, third, err) = render();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("0 from the cache, 1 opened"), "{err}");
    assert_eq!(first, third);
    // The cache opens nothing without the identity that filled it.
    let (code, _, err) = run(tend_clean()
        .args(["render", "--repo"])
        .arg(dir.path())
        .arg("--cache-dir")
        .arg(cache.path()));
    assert_eq!(code, 2);
    assert!(err.contains("no available key opens"), "{err}");
}

/// Each negative fixture: exit 2, its message at file:line, nothing written.
fn refused(files: &[(&str, &str)], keys: bool, expect: &[&str]) {
    let cluster = TestCluster::start();
    let dir = site(files);
    let key_dir = tempfile::tempdir().unwrap();
    let keys = keys.then(|| key_file(key_dir.path()));
    for command in ["diff", "apply"] {
        let (code, out, err) = on(&cluster, dir.path(), &[command], keys.as_deref());
        assert_eq!(code, 2, "{command}: {out}\n{err}");
        for needle in expect {
            assert!(
                err.contains(needle),
                "{command}: expected {needle:?} in\n{err}"
            );
        }
        assert!(!err.contains(PLAINTEXT) && !out.contains(PLAINTEXT));
    }
    assert_eq!(writes(&cluster), Vec::<String>::new());
}

fn tampered() -> String {
    let text = encrypt_yaml(&[secret("db", PLAINTEXT)], TEST_RECIPIENT, &flux_rules(), 5);
    // An unencrypted field changed after encryption: every seal holds, the MAC does not.
    text.replacen("name: db", "name: dc", 1)
}

#[test]
fn a_file_changed_after_encryption_is_refused() {
    let text = tampered();
    refused(
        &[("ns.yaml", &ns_yaml("other")), ("db.yaml", &text)],
        true,
        &["db.yaml:", "modified after it was encrypted"],
    );
}

#[test]
fn a_file_no_key_opens_is_refused_naming_recipients_and_places() {
    let text = encrypt_yaml(&[secret("db", PLAINTEXT)], TEST_RECIPIENT, &flux_rules(), 5);
    refused(
        &[("ns.yaml", &ns_yaml("other")), ("db.yaml", &text)],
        false,
        &[
            "db.yaml:",
            TEST_RECIPIENT,
            "SOPS_AGE_KEY (unset)",
            "(not found)",
        ],
    );
}

#[test]
fn a_kms_only_file_is_refused_with_the_way_to_add_an_age_recipient() {
    let text = encrypt_yaml(&[secret("db", PLAINTEXT)], TEST_RECIPIENT, &flux_rules(), 5);
    let mut value: Value = serde_yaml::from_str(&text).unwrap();
    value["sops"]["age"] = json!([]);
    value["sops"]["kms"] = json!([{"arn": "arn:aws:kms:eu-west-1:123456789012:key/abcd", "enc": "AQIC", "created_at": LASTMODIFIED}]);
    refused(
        &[("db.yaml", &serde_yaml::to_string(&value).unwrap())],
        true,
        &[
            "db.yaml:",
            "AWS KMS arn:aws:kms:eu-west-1:123456789012:key/abcd",
            "sops updatekeys",
        ],
    );
}

#[test]
fn a_sealed_value_without_metadata_is_refused_at_its_line() {
    let text = encrypt_yaml(&[secret("db", PLAINTEXT)], TEST_RECIPIENT, &flux_rules(), 5);
    let mut value: Value = serde_yaml::from_str(&text).unwrap();
    value.as_object_mut().unwrap().remove("sops");
    let text = serde_yaml::to_string(&value).unwrap();
    let line = text.lines().position(|l| l.contains("password:")).unwrap() + 1;
    refused(
        &[("db.yaml", &text)],
        true,
        &[&format!("db.yaml:{line}:"), "looks SOPS-encrypted"],
    );
}

#[test]
fn a_malformed_sealed_value_is_refused_at_its_line() {
    let text = encrypt_yaml(&[secret("db", PLAINTEXT)], TEST_RECIPIENT, &flux_rules(), 5);
    let text = text.replacen(",iv:", ",iv:!", 1);
    let line = text.lines().position(|l| l.contains(",iv:!")).unwrap() + 1;
    refused(
        &[("db.yaml", &text)],
        true,
        &[&format!("db.yaml:{line}:"), "not valid base64"],
    );
}

const KUSTOMIZATION: &str = "apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: default
resources: [db.yaml]
patches:
  - path: patch.yaml
secretGenerator:
  - name: app
    envs: [app.env]
    options:
      disableNameSuffixHash: true
";

/// A unit as Flux users write one: an encrypted Secret, an encrypted patch of it, and a
/// generator reading an encrypted dotenv file.
fn encrypted_unit(password: &str) -> Vec<(String, String)> {
    let patch = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db"},
        "stringData": {"user": "patched-user"},
    });
    vec![
        ("app/kustomization.yaml".into(), KUSTOMIZATION.into()),
        (
            "app/db.yaml".into(),
            encrypt_yaml(&[secret("db", password)], TEST_RECIPIENT, &flux_rules(), 11),
        ),
        (
            "app/patch.yaml".into(),
            encrypt_yaml(&[patch], TEST_RECIPIENT, &flux_rules(), 12),
        ),
        (
            "app/app.env".into(),
            encrypt_dotenv(
                &[("API_TOKEN", password), ("MODE", "a\nb")],
                TEST_RECIPIENT,
                13,
            ),
        ),
    ]
}

fn b64_of(value: &Value) -> String {
    use base64::Engine;
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            // kustomize wraps long values at 70 columns; the API server's decoder skips newlines.
            .decode(value.as_str().unwrap().replace('\n', ""))
            .unwrap(),
    )
    .unwrap()
}

#[test]
fn a_kustomize_unit_builds_from_decrypted_inputs_in_a_private_copy() {
    let cluster = TestCluster::start();
    let files = encrypted_unit(PLAINTEXT);
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let dir = site(&refs);
    let tmp = tempfile::tempdir().unwrap();
    let key_dir = tempfile::tempdir().unwrap();
    let keys = key_file(key_dir.path());
    let tend_here = |args: &[&str]| {
        run(tend_clean()
            .env("TMPDIR", tmp.path())
            .env("TEND_KUSTOMIZE_COMMAND", "kubectl kustomize")
            .args(args)
            .arg("--repo")
            .arg(dir.path())
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path())
            .arg("--decryption-key-file")
            .arg(&keys))
    };
    let (code, out, err) = tend_here(&["apply", "-vvv"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        !out.contains(PLAINTEXT) && !err.contains(PLAINTEXT),
        "{out}\n{err}"
    );
    let db = get(&cluster, "", "secrets", "default", "db").expect("db applied");
    assert_eq!(b64_of(&db["data"]["password"]), PLAINTEXT);
    assert_eq!(b64_of(&db["data"]["user"]), "patched-user");
    let app = get(&cluster, "", "secrets", "default", "app").expect("app generated");
    assert_eq!(b64_of(&app["data"]["API_TOKEN"]), PLAINTEXT);
    // The private copy is gone, and the repository holds no plaintext.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    for (name, _) in &files {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(!text.contains(PLAINTEXT));
    }
    let (code, out, err) = tend_here(&["diff"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

/// A builder that quotes its inputs on stderr (as a YAML error quotes the line it failed
/// on): with a unit built from decrypted inputs, none of it is shown, failed or not, at -vvv.
#[test]
fn a_builder_quoting_decrypted_inputs_is_never_shown() {
    let files = encrypted_unit(PLAINTEXT);
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let dir = site(&refs);
    let key_dir = tempfile::tempdir().unwrap();
    let keys = key_file(key_dir.path());
    let script = key_dir.path().join("quoting-builder");
    for (exit, builds) in [(1, ""), (0, "kubectl kustomize \"$1\"")] {
        std::fs::write(
            &script,
            format!("#!/bin/sh\ncat \"$1\"/app.env \"$1\"/db.yaml >&2\n{builds}\nexit {exit}\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (code, out, err) = run(tend_clean()
            .env("TEND_KUSTOMIZE_COMMAND", &script)
            .args(["render", "-vvv", "--repo"])
            .arg(dir.path())
            .arg("--decryption-key-file")
            .arg(&keys));
        assert!(
            !out.contains(PLAINTEXT) && !err.contains(PLAINTEXT),
            "{out}\n{err}"
        );
        if exit == 1 {
            assert_eq!(code, 2, "{err}");
            assert!(err.contains("app/kustomization.yaml:1"), "{err}");
            assert!(err.contains("its message is not shown"), "{err}");
        } else {
            assert_eq!(code, 0, "{err}");
            assert!(out.contains("name: app"), "{out}");
        }
    }
    // The same builder on a unit without encrypted inputs is quoted as before.
    let plain = site(&[
        ("app/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml]\n"),
        ("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  shown: visible-value\n"),
    ]);
    std::fs::write(&script, "#!/bin/sh\ncat \"$1\"/cm.yaml >&2\nexit 1\n").unwrap();
    let (code, _, err) = run(tend_clean()
        .env("TEND_KUSTOMIZE_COMMAND", &script)
        .args(["render", "--repo"])
        .arg(plain.path()));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("visible-value"), "{err}");
}

#[test]
fn a_kustomize_unit_with_an_input_no_key_opens_is_not_built() {
    let files = encrypted_unit(PLAINTEXT);
    let mut refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    refs.push((
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n",
    ));
    let cluster = TestCluster::start();
    let dir = site(&refs);
    // No builder is needed: the unit is refused before it is built.
    let (code, out, err) = run(tend_clean()
        .env("TEND_KUSTOMIZE_COMMAND", "false")
        .args(["apply", "--repo"])
        .arg(dir.path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    assert_eq!(code, 2, "{out}\n{err}");
    let env_line = files[3].1.lines().position(|l| l.contains("ENC[")).unwrap() + 1;
    assert!(err.contains(&format!("app/app.env:{env_line}:")), "{err}");
    assert!(err.contains("app/db.yaml:"), "{err}");
    assert!(err.contains(TEST_RECIPIENT), "{err}");
    assert!(
        err.contains("an input of the kustomization app/kustomization.yaml"),
        "{err}"
    );
    assert_eq!(writes(&cluster), Vec::<String>::new());
}

#[test]
fn real_sops_dotenv_ini_and_binary_files_feed_a_generator_with_a_pgp_key() {
    let (Some(env), Some(bin), Some(ini)) = (
        fixture_text("secrets.env"),
        fixture_text("secrets.bin"),
        fixture_text("secrets.ini"),
    ) else {
        return;
    };
    let kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: default\nsecretGenerator:\n  - name: real\n    envs: [secrets.env]\n    files: [secrets.bin, secrets.ini]\n    options:\n      disableNameSuffixHash: true\n";
    let dir = site(&[
        ("real/kustomization.yaml", kustomization),
        ("real/secrets.env", &env),
        ("real/secrets.bin", &bin),
        ("real/secrets.ini", &ini),
    ]);
    let cluster = TestCluster::start();
    let (code, out, err) = run(tend_clean()
        .env("TEND_KUSTOMIZE_COMMAND", "kubectl kustomize")
        .args(["apply", "--repo"])
        .arg(dir.path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .arg("--decryption-key-file")
        .arg(Path::new(FIXTURES).join("key.asc")));
    assert_eq!(code, 0, "{out}\n{err}");
    let real = get(&cluster, "", "secrets", "default", "real").expect("generated");
    assert_eq!(b64_of(&real["data"]["example_key"]), "example_value");
    assert_eq!(b64_of(&real["data"]["never_gonna"]), "give you up");
    assert_eq!(b64_of(&real["data"]["secrets.bin"]), "binary_value\n");
    // The INI file decrypted as a whole, its sections kept and its `[sops]` section gone.
    assert_eq!(
        b64_of(&real["data"]["secrets.ini"]),
        "[Welcome!]\nhello = Welcome to SOPS! Edit this file as you please!\nexample_key = example_value\nnever_gonna = give you up\n"
    );
    for plain in [
        "example_value",
        "give you up",
        "binary_value",
        "Welcome to SOPS",
    ] {
        assert!(!out.contains(plain) && !err.contains(plain));
    }
}

#[test]
fn keys_come_from_a_decryption_secret_in_the_cluster() {
    use base64::Engine;
    let cluster = TestCluster::start();
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let keys_secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "sops-keys", "namespace": "flux-system"},
        "data": {"identity.agekey": b64(&format!("# test\n{TEST_IDENTITY}\n")), "README": b64("not a key")},
    });
    let dir = site(&[
        ("ns.yaml", &ns_yaml("flux-system")),
        ("keys.yaml", &serde_yaml::to_string(&keys_secret).unwrap()),
    ]);
    let (code, out, err) = on(&cluster, dir.path(), &["apply"], None);
    assert_eq!(code, 0, "{out}\n{err}");
    let text = encrypt_yaml(
        &[secret("db", PLAINTEXT)],
        TEST_RECIPIENT,
        &flux_rules(),
        21,
    );
    write_site(
        dir.path(),
        &[
            ("ns.yaml", &ns_yaml("flux-system")),
            ("keys.yaml", &serde_yaml::to_string(&keys_secret).unwrap()),
            ("db.yaml", &text),
        ],
    );
    let args = [
        "apply",
        "-vvv",
        "--decryption-secret",
        "flux-system/sops-keys",
    ];
    let (code, out, err) = on(&cluster, dir.path(), &args, None);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains(PLAINTEXT) && !err.contains(PLAINTEXT));
    assert!(!err.contains(TEST_IDENTITY) && !out.contains(TEST_IDENTITY));
    let db = get(&cluster, "", "secrets", "default", "db").expect("db applied");
    assert_eq!(b64_of(&db["data"]["password"]), PLAINTEXT);
    // A Secret that is not there: exit 2, nothing written.
    let before = writes(&cluster).len();
    let args = ["diff", "--decryption-secret", "flux-system/missing"];
    let (code, _, err) = on(&cluster, dir.path(), &args, None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("flux-system/missing: no such Secret"), "{err}");
    let (code, _, err) = on(
        &cluster,
        dir.path(),
        &["diff", "--decryption-secret", "nope"],
        None,
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("expected NAMESPACE/NAME"), "{err}");
    assert_eq!(writes(&cluster).len(), before);
}

/// The README section runs as written (its commands are also run with the others by
/// `shipping::readme_commands_run`): the example decrypts, its values masked.
#[test]
fn the_readme_example_decrypts_and_stays_masked() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = &readme[readme
        .find("\n## Encrypted secrets (SOPS)\n")
        .expect("section")..];
    let command = section
        .lines()
        .find(|l| l.starts_with("tend render"))
        .expect("a render command");
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    let (code, out, err) = run(tend_clean().current_dir(repo_root()).args(&words));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("name: db-credentials"), "{out}");
    assert!(
        !out.contains("ENC[") && !out.contains("correct-horse"),
        "{out}"
    );
    let (code, out, _) = run(tend_clean().current_dir(repo_root()).args(&words).args([
        "--show-secrets",
        "-o",
        "json",
    ]));
    assert_eq!(code, 0);
    assert!(out.contains("correct-horse-battery-staple"));
}

/// An encrypted file that a configMapGenerator reads would put its plaintext into ConfigMap
/// data, which reports show (only Secret data is masked): refused at the file, nothing built
/// or written, the way out named.
/// In a kustomization, an encrypted resource that is not a Secret is refused: what
/// kustomize makes of it cannot be traced back to the sealed fields to mask them. A
/// secretGenerator's YAML input (a kubeconfig, `kind: Config`) is Secret data and builds.
#[test]
fn an_encrypted_config_map_in_a_kustomization_is_refused() {
    let mut files = encrypted_unit(PLAINTEXT);
    let config = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings"}, "data": {"token": PLAINTEXT},
    });
    files[1].1 = encrypt_yaml(&[config], TEST_RECIPIENT, &flux_rules(), 14);
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    refused(
        &refs,
        true,
        &[
            "app/db.yaml:",
            "this SOPS-encrypted ConfigMap is an input of the kustomization app/kustomization.yaml",
        ],
    );
    // A kubeconfig read by a secretGenerator: its `kind: Config` is no object of the unit.
    let kubeconfig = json!({"apiVersion": "v1", "kind": "Config", "users": [{"name": "u", "user": {"token": PLAINTEXT}}]});
    let mut files = encrypted_unit(PLAINTEXT);
    files[0].1 = KUSTOMIZATION.replace("    envs: [app.env]", "    files: [kubeconfig.yaml]");
    files[3] = (
        "app/kubeconfig.yaml".into(),
        encrypt_yaml(&[kubeconfig], TEST_RECIPIENT, &Rules::default(), 15),
    );
    let dir = site(
        &files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect::<Vec<_>>(),
    );
    let keys = tempfile::tempdir().unwrap();
    let keys = key_file(keys.path());
    let (code, out, err) = run(tend_clean()
        .args(["render", "--repo"])
        .arg(dir.path())
        .arg("--decryption-key-file")
        .arg(&keys)
        .env("TEND_KUSTOMIZE_COMMAND", "kubectl kustomize"));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("kubeconfig.yaml: '***'"), "{out}");
    assert!(!out.contains(PLAINTEXT) && !err.contains(PLAINTEXT));
}

#[test]
fn an_encrypted_file_feeding_a_config_map_is_refused() {
    let mut files = encrypted_unit(PLAINTEXT);
    files[0].1 = KUSTOMIZATION.replace("secretGenerator:", "configMapGenerator:");
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let env_line = files[3].1.lines().position(|l| l.contains("ENC[")).unwrap() + 1;
    refused(
        &refs,
        true,
        &[
            &format!("app/app.env:{env_line}:"),
            "feeds a configMapGenerator of app/kustomization.yaml",
            "secretGenerator",
        ],
    );
}

/// The shape of Flux's own SOPS testdata (fluxcd/kustomize-controller
/// `internal/controller/testdata/sops`, issue 32): a root kustomization whose `resources:`
/// are directories, each a kustomization of encrypted files (one nested a level deeper), a
/// component, an encrypted patch, and a generator reading an encrypted dotenv file. The walk
/// does not descend into a unit, so these are found by following the references.
fn flux_shaped_site(password: &str) -> Vec<(String, String)> {
    let kustomization = |body: &str| {
        format!("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n{body}")
    };
    let patch = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "algo", "namespace": "default"},
        "stringData": {"user": format!("{password}-patched")},
    });
    let enc = |name: &str, key: u8| {
        encrypt_yaml(
            &[secret(name, &format!("{password}-{name}"))],
            TEST_RECIPIENT,
            &flux_rules(),
            key,
        )
    };
    vec![
        (
            "kustomization.yaml".into(),
            kustomization("resources:\n  - algorithms\n  - envs\ncomponents:\n  - components/extra\npatches:\n  - path: patches/algo.yaml\n"),
        ),
        (
            "algorithms/kustomization.yaml".into(),
            kustomization("resources:\n  - algo.yaml\n  - deeper\n"),
        ),
        ("algorithms/algo.yaml".into(), enc("algo", 21)),
        (
            "algorithms/deeper/kustomization.yml".into(),
            kustomization("resources: [deep.yaml]\n"),
        ),
        ("algorithms/deeper/deep.yaml".into(), enc("deep", 22)),
        (
            "envs/kustomization.yaml".into(),
            kustomization("namespace: default\nsecretGenerator:\n  - name: env\n    envs: [app.env]\n    options:\n      disableNameSuffixHash: true\n"),
        ),
        (
            "envs/app.env".into(),
            encrypt_dotenv(&[("API_TOKEN", &format!("{password}-env"))], TEST_RECIPIENT, 23),
        ),
        (
            "components/extra/kustomization.yaml".into(),
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [extra.yaml]\n".into(),
        ),
        ("components/extra/extra.yaml".into(), enc("extra", 24)),
        (
            "patches/algo.yaml".into(),
            encrypt_yaml(&[patch], TEST_RECIPIENT, &flux_rules(), 25),
        ),
    ]
}

#[test]
fn encrypted_files_in_directory_bases_components_and_patches_are_decrypted() {
    let cluster = TestCluster::start();
    let mut files = flux_shaped_site(PLAINTEXT);
    // With the real sops fixtures: one more directory base, its dotenv encrypted by sops
    // itself with PGP, opened with the PGP key next to the age key (as Flux's testdata).
    let pgp = fixture_text("secrets.env");
    if let Some(env) = &pgp {
        files[0].1 = files[0].1.replace("  - envs\n", "  - envs\n  - pgp\n");
        files.push((
            "pgp/kustomization.yaml".into(),
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: default\nsecretGenerator:\n  - name: pgp\n    envs: [secrets.env]\n    options:\n      disableNameSuffixHash: true\n".into(),
        ));
        files.push(("pgp/secrets.env".into(), env.clone()));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let dir = site(&refs);
    let key_dir = tempfile::tempdir().unwrap();
    let keys = key_file(key_dir.path());
    let tend_here = |args: &[&str]| {
        let mut cmd = tend_clean();
        cmd.env("TEND_KUSTOMIZE_COMMAND", "kubectl kustomize")
            .args(args)
            .arg("--repo")
            .arg(dir.path())
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path())
            .arg("--decryption-key-file")
            .arg(&keys);
        if pgp.is_some() {
            cmd.arg("--decryption-key-file")
                .arg(Path::new(FIXTURES).join("key.asc"));
        }
        run(&mut cmd)
    };
    let (code, out, err) = tend_here(&["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    for plain in [PLAINTEXT, "example_value", "give you up"] {
        assert!(!out.contains(plain) && !err.contains(plain), "{out}\n{err}");
    }
    let data = |name: &str, key: &str| {
        let live = get(&cluster, "", "secrets", "default", name)
            .unwrap_or_else(|| panic!("secret {name} applied"));
        b64_of(&live["data"][key])
    };
    assert_eq!(data("algo", "password"), format!("{PLAINTEXT}-algo"));
    assert_eq!(data("algo", "user"), format!("{PLAINTEXT}-patched"));
    assert_eq!(data("deep", "password"), format!("{PLAINTEXT}-deep"));
    assert_eq!(data("extra", "password"), format!("{PLAINTEXT}-extra"));
    assert_eq!(data("env", "API_TOKEN"), format!("{PLAINTEXT}-env"));
    if pgp.is_some() {
        assert_eq!(data("pgp", "example_key"), "example_value");
        assert_eq!(data("pgp", "never_gonna"), "give you up");
    }
    let (code, out, err) = tend_here(&["diff"]);
    assert_eq!(code, 0, "{out}\n{err}");
    for (name, _) in &files {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(!text.contains(PLAINTEXT), "{name}");
    }
}

/// The refusals hold below a unit too: an encrypted file feeding a configMapGenerator of a
/// directory base is refused at its line, nothing written.
#[test]
fn an_encrypted_file_feeding_a_config_map_of_a_directory_base_is_refused() {
    let mut files = flux_shaped_site(PLAINTEXT);
    let envs = files
        .iter_mut()
        .find(|(name, _)| name == "envs/kustomization.yaml")
        .expect("envs");
    envs.1 = envs.1.replace("secretGenerator:", "configMapGenerator:");
    let env_text = &files
        .iter()
        .find(|(name, _)| name == "envs/app.env")
        .expect("app.env")
        .1;
    let env_line = env_text.lines().position(|l| l.contains("ENC[")).unwrap() + 1;
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    refused(
        &refs,
        true,
        &[
            &format!("envs/app.env:{env_line}:"),
            "feeds a configMapGenerator of envs/kustomization.yaml",
        ],
    );
}

/// An encrypted values file of a kustomization's `helmCharts` (here in a directory base) is
/// refused: what the chart makes of its values cannot be traced back to the sealed fields.
#[test]
fn an_encrypted_helm_charts_values_file_of_a_kustomization_is_refused() {
    let values = encrypt_yaml(
        &[json!({"db": {"password": PLAINTEXT}})],
        TEST_RECIPIENT,
        &Rules {
            encrypted_regex: Some("^password$".into()),
            ..Rules::default()
        },
        26,
    );
    let files = [
        (
            "kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [db]\n",
        ),
        (
            "db/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nhelmCharts:\n  - name: postgresql\n    repo: https://charts.example.com\n    version: 1.0.0\n    valuesFile: values.yaml\n",
        ),
        ("db/values.yaml", values.as_str()),
    ];
    refused(
        &files,
        true,
        &[
            "db/values.yaml:",
            "is a values file of a helmCharts entry of db/kustomization.yaml",
            "tend.dev HelmChart",
        ],
    );
}
