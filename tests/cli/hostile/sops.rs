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

/// A chart whose one template is `template`, released with an encrypted values file
/// holding `password` (the canary) and `port` (an encrypted number), rendered bounded.
fn chart_with_encrypted_values(template: &str) -> Outcome {
    let dir = chart_repo(&[("templates/t.yaml", template.as_bytes())]);
    let release = "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: r\n  namespace: default\nspec:\n  chart: ../charts/c\n  valuesFiles: [secret-values.yaml]\n";
    std::fs::write(dir.path().join("apps/release.yaml"), release).unwrap();
    let values = json!({"password": CANARY, "port": 54321});
    std::fs::write(
        dir.path().join("apps/secret-values.yaml"),
        encrypt_yaml(&[values], TEST_RECIPIENT, &Rules::default(), 9),
    )
    .unwrap();
    let keys = dir.path().join(".keys.txt");
    std::fs::write(&keys, format!("{TEST_IDENTITY}\n")).unwrap();
    render_bounded(
        dir.path(),
        &["--decryption-key-file", keys.to_str().unwrap()],
    )
}

/// No form of the canary in anything tend printed.
#[track_caller]
fn no_canary(out: &Outcome) {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(CANARY);
    let hex = hex::encode(CANARY);
    for form in [
        CANARY.to_string(),
        CANARY.to_uppercase(),
        b64,
        hex,
        "54321".into(),
    ] {
        for text in [&out.stdout, &out.stderr] {
            assert!(!text.contains(&form), "{form} printed:\n{text}");
        }
    }
}

#[test]
fn decrypted_values_through_template_transforms_are_refused_naming_template_and_line() {
    let config_map = |line: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\n  namespace: default\n{line}\n")
    };
    let cases = [
        config_map("data:\n  k: {{ .Values.password | b64enc }}"),
        config_map("data:\n  k: {{ .Values.password | upper }}"),
        config_map("data:\n  k: {{ printf \"%x\" .Values.password }}"),
        config_map("data:\n  k: {{ cat \"user:\" .Values.password | b64enc }}"),
        config_map("data:\n  {{ .Values.password }}: x"),
        config_map("data:\n  k: \"{{ .Values.port }}\""),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\n  namespace: default\n  labels:\n    l: {{ .Values.password }}\n".to_string(),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: leak\n  namespace: default\n  annotations:\n    a: {{ .Values.password }}\n".to_string(),
        "apiVersion: example.com/v1\nkind: Secret\nmetadata:\n  name: leak\n  namespace: default\ndata:\n  k: {{ .Values.password | b64enc }}\n".to_string(),
    ];
    for template in cases {
        let out = chart_with_encrypted_values(&template);
        out.refused_with("(templates/t.yaml:");
        out.refused_with("only Secret data is masked");
        no_canary(&out);
    }
    // In a core Secret's data, masked: rendered.
    let out = chart_with_encrypted_values(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ok\n  namespace: default\ndata:\n  k: {{ .Values.password | b64enc }}\nstringData:\n  u: {{ .Values.password | upper }}\n",
    );
    out.rendered();
    no_canary(&out);
}

#[test]
fn a_kustomize_replacement_copying_a_decrypted_field_into_a_config_map_is_refused() {
    let kustomization = "resources: [secret.yaml, cm.yaml]\nreplacements:\n  - source:\n      kind: Secret\n      name: db\n      fieldPath: stringData.password\n    targets:\n      - select:\n          kind: ConfigMap\n          name: copy\n        fieldPaths: [data.k]\n";
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: copy\n  namespace: default\ndata:\n  k: placeholder\n";
    let dir = site(&[
        ("app/kustomization.yaml", kustomization),
        ("app/cm.yaml", cm),
    ]);
    std::fs::write(
        dir.path().join("app/secret.yaml"),
        encrypt_yaml(&[secret("db")], TEST_RECIPIENT, &data_only(), 11),
    )
    .unwrap();
    let keys = dir.path().join(".keys.txt");
    std::fs::write(&keys, format!("{TEST_IDENTITY}\n")).unwrap();
    let out = render_bounded(
        dir.path(),
        &[
            "--decryption-key-file",
            keys.to_str().unwrap(),
            "--kustomize-command",
            "kubectl kustomize",
        ],
    );
    out.refused_with("reaches this ConfigMap");
    no_canary(&out);
    // Without the replacement, the Secret renders, masked.
    std::fs::write(
        dir.path().join("app/kustomization.yaml"),
        "resources: [secret.yaml, cm.yaml]\n",
    )
    .unwrap();
    let out = render_bounded(
        dir.path(),
        &[
            "--decryption-key-file",
            keys.to_str().unwrap(),
            "--kustomize-command",
            "kubectl kustomize",
        ],
    );
    out.rendered();
    no_canary(&out);
}

#[test]
fn decrypted_values_through_encodings_digests_and_parts_are_refused() {
    let config_map = |expr: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\n  namespace: default\ndata:\n  k: {{{{ {expr} }}}}\n")
    };
    for expr in [
        ".Values.password | b32enc",
        "cat \"user:\" .Values.password | b32enc",
        ".Values.password | urlquery",
        ".Values.password | sha256sum",
        ".Values.password | sha1sum",
        ".Values.password | trunc 14",
        ".Values.password | substr 3 17",
        ".Values.password | quote",
    ] {
        let out = chart_with_encrypted_values(&config_map(expr));
        out.refused_with("(templates/t.yaml:");
        no_canary(&out);
        for text in [&out.stdout, &out.stderr] {
            assert!(!text.contains(&CANARY[..12]), "{expr}: {text}");
        }
    }
}

#[test]
fn messages_that_quote_a_decrypted_value_are_masked() {
    // The chart's own `fail`, and Go's and the schema's messages, quote what they refuse.
    let out =
        chart_with_encrypted_values("{{ fail (printf \"bad password %s\" .Values.password) }}");
    out.refused_with("bad password");
    no_canary(&out);
    let out = chart_with_encrypted_values(
        "{{ required (printf \"missing, not %q\" .Values.password) .Values.nothing }}",
    );
    out.refused_with("missing, not");
    no_canary(&out);
    let dir_schema = r#"{"properties": {"password": {"type": "string", "maxLength": 3}, "port": {"maximum": 10}}}"#;
    let dir = chart_repo(&[
        ("templates/t.yaml", b"" as &[u8]),
        ("values.schema.json", dir_schema.as_bytes()),
    ]);
    let release = "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: r\n  namespace: default\nspec:\n  chart: ../charts/c\n  valuesFiles: [secret-values.yaml]\n";
    std::fs::write(dir.path().join("apps/release.yaml"), release).unwrap();
    std::fs::write(
        dir.path().join("apps/secret-values.yaml"),
        encrypt_yaml(
            &[json!({"password": CANARY, "port": 54321})],
            TEST_RECIPIENT,
            &Rules::default(),
            9,
        ),
    )
    .unwrap();
    let keys = dir.path().join(".keys.txt");
    std::fs::write(&keys, format!("{TEST_IDENTITY}\n")).unwrap();
    let out = render_bounded(
        dir.path(),
        &["--decryption-key-file", keys.to_str().unwrap()],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    no_canary(&out);
}

/// A HelmChart whose `spec.values` sops sealed, its chart's one template `template`.
fn encrypted_helm_chart(template: &str) -> Outcome {
    let dir = chart_repo(&[("templates/t.yaml", template.as_bytes())]);
    let release = json!({"apiVersion": "tend.dev/v1alpha1", "kind": "HelmChart",
        "metadata": {"name": "r", "namespace": "default"},
        "spec": {"chart": "../charts/c", "values": {"password": CANARY}}});
    let rules = Rules {
        encrypted_regex: Some("^values$".into()),
        ..Rules::default()
    };
    std::fs::write(
        dir.path().join("apps/release.yaml"),
        encrypt_yaml(&[release], TEST_RECIPIENT, &rules, 13),
    )
    .unwrap();
    let keys = dir.path().join(".keys.txt");
    std::fs::write(&keys, format!("{TEST_IDENTITY}\n")).unwrap();
    render_bounded(
        dir.path(),
        &["--decryption-key-file", keys.to_str().unwrap()],
    )
}

#[test]
fn an_encrypted_helm_chart_renders_from_its_decrypted_values_and_they_stay_secret() {
    let out = encrypted_helm_chart(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: default\nstringData:\n  password: {{ .Values.password }}\n  length: \"{{ len .Values.password }}\"\n",
    );
    out.rendered();
    // Rendered from the plaintext, not refused as ciphertext.
    assert!(out.stdout.contains("name: db"), "{}", out.stdout);
    assert!(!out.stdout.contains("ENC["), "{}", out.stdout);
    no_canary(&out);
    let out = encrypted_helm_chart(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\n  namespace: default\ndata:\n  k: {{ .Values.password | upper }}\n",
    );
    out.refused_with("(templates/t.yaml:");
    no_canary(&out);
}
