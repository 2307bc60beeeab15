//! SOPS files written to be refused or to leak: valid encrypted files of every shape are
//! decrypted, and no form of a decrypted value reaches the output.

use super::*;
use crate::sops::encryptor::{encrypt_yaml, Rules, TEST_IDENTITY, TEST_RECIPIENT};
use serde_json::{json, Value};

/// A decrypted value that must never show in any output.
const CANARY: &str = "h0stile-sops-canary-51d2";

/// `files` (name, plain text) and the encrypted `docs` as `encrypted.yaml`, rendered with
/// the test key, bounded.
fn render_encrypted(docs: &[Value], rules: &Rules, files: &[(&str, &str)]) -> Outcome {
    let dir = site(files);
    std::fs::write(
        dir.path().join("encrypted.yaml"),
        encrypt_yaml(docs, TEST_RECIPIENT, rules, 7),
    )
    .unwrap();
    let keys = dir.path().join(".keys.txt");
    std::fs::write(&keys, format!("{TEST_IDENTITY}\n")).unwrap();
    render_bounded(
        dir.path(),
        &["--decryption-key-file", keys.to_str().unwrap()],
    )
}

fn secret(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": "default"},
        "stringData": {"password": CANARY}})
}

fn data_only() -> Rules {
    Rules {
        encrypted_regex: Some("^(data|stringData)$".into()),
        ..Rules::default()
    }
}

#[test]
fn an_encrypted_list_of_secrets_is_decrypted_and_masked() {
    let list = json!({"apiVersion": "v1", "kind": "List",
        "items": [secret("one"), secret("two")]});
    for rules in [Rules::default(), data_only()] {
        let out = render_encrypted(std::slice::from_ref(&list), &rules, &[]);
        out.rendered();
        assert!(
            out.stdout.contains("name: one") && out.stdout.contains("name: two"),
            "{}",
            out.stdout
        );
        assert!(
            !out.stdout.contains(CANARY) && !out.stderr.contains(CANARY),
            "{}",
            out.stdout
        );
    }
}

#[test]
fn a_fully_encrypted_config_map_list_is_decrypted_with_its_values_masked() {
    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": [
        {"metadata": {"name": "a", "namespace": "default"}, "data": {"k": CANARY}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "default"}, "data": {"k": CANARY}}]});
    let out = render_encrypted(&[list], &Rules::default(), &[]);
    out.rendered();
    assert!(
        out.stdout.contains("name: a") && out.stdout.contains("name: b"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains(CANARY) && !out.stderr.contains(CANARY),
        "{}",
        out.stdout
    );
}

#[test]
fn an_encrypted_tend_kind_is_decrypted() {
    let mirror = json!({"apiVersion": "tend.dev/v1alpha1", "kind": "RegistryMirror",
        "metadata": {"name": "hub", "namespace": "registries"},
        "spec": {"upstream": "https://registry-1.docker.io", "hostPort": 5001,
            "storage": {"size": "50Gi"}}});
    let out = render_encrypted(
        &[mirror],
        &Rules::default(),
        &[(
            "ns.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: registries\n",
        )],
    );
    out.rendered();
    assert!(out.stdout.contains("name: hub"), "{}", out.stdout);
    assert!(!out.stderr.contains("ENC["), "{}", out.stderr);
}
