//! The bad-input corpus (`tests/fixtures/bad/`): each repository exits 2, renders nothing,
//! and reports every defect as `path:line: message`.

use crate::common::*;

/// (fixture, the exact problem lines expected on stderr)
const CASES: &[(&str, &[&str])] = &[
    ("annotation-not-string", &["deploy.yaml:6: metadata.annotations.tend.dev/reload must be a string, found a boolean; quote the value (e.g. \"true\")"]),
    ("bad-yaml", &["cm.yaml:7: did not find expected ',' or ']'"]),
    ("duplicate-after-default-namespace", &["both.yaml:6: duplicate object ConfigMap default/app: first defined at both.yaml:1; remove one of them"]),
    ("duplicate-keys", &["cm.yaml:7: data: duplicate entry with key \"a\""]),
    ("duplicate-objects", &["b.yaml:2: duplicate object ConfigMap web/app: first defined at a.yaml:1; remove one of them"]),
    ("generate-name", &["cm.yaml:3: missing metadata.name: generateName is not supported, tend needs a stable name to diff and prune"]),
    ("invalid-name", &["cm.yaml:4: metadata.name \"My_App\" is not a valid name: use lowercase letters, digits, '-' and '.', start and end with a letter or digit, at most 253 characters"]),
    ("metadata-not-mapping", &["cm.yaml:3: metadata must be a mapping, found a string"]),
    ("missing-apiversion", &["cm.yaml:1: missing apiVersion (e.g. `apiVersion: v1`)"]),
    ("missing-kind", &["cm.yaml:1: missing kind (e.g. `kind: ConfigMap`)"]),
    ("missing-name", &["cm.yaml:3: missing metadata.name; every object needs a name"]),
    ("namespace-on-cluster-scoped", &["ns.yaml:5: Namespace is cluster-scoped and cannot have metadata.namespace; remove it"]),
    ("non-utf8", &["cm.yaml:6: file is not valid UTF-8 (binary or another encoding); save it as UTF-8 or add it to .tendignore"]),
    ("not-a-mapping", &["list.yaml:1: document is a list, not a mapping; every document must be a Kubernetes object with apiVersion, kind and metadata"]),
    ("removed-api", &["deploy.yaml:2: unknown kind Deployment in apps/v1beta1; use apiVersion apps/v1"]),
    ("symlink-escape", &["evil.yaml:1: symlink points outside the repository (to /etc/hosts); copy the file into the repository instead"]),
    ("tab-indent", &["cm.yaml:4: tab character used for indentation; YAML allows only spaces"]),
    ("tend-bad-enum", &["rule.yaml:6: spec.kind: unknown variant `Pod`, expected `ConfigMap` or `Secret`"]),
    ("tend-missing-required", &["mirror.yaml:6: spec: missing field `upstream`"]),
    ("tend-out-of-range", &["chaos.yaml:7: spec.eagerness: must be between 1 and 100, got 200"]),
    ("tend-unknown-field", &["chaos.yaml:8: spec: unknown field `tantrumMod`, expected one of `tantrumMode`, `cancerMode`, `ipsumMode`, `podTolerance`, `eagerness`, `excludedNamespaces`, `maxActions`"]),
    ("tend-unknown-kind", &["x.yaml:2: unknown kind RegistryMirrors in tend.dev/v1alpha1; tend's kinds are CopyRule, RegistryMirror, ImmortalContainer and ChaosAgent"]),
    ("tend-wrong-version", &["x.yaml:1: unknown apiVersion tend.dev/v1; tend's kinds are served as tend.dev/v1alpha1"]),
    ("unknown-kind", &["deploy.yaml:2: unknown kind Deploymnet in apps/v1; check the spelling of kind (kinds are CamelCase, e.g. Deployment)"]),
    ("tend-unknown-root-field", &[
        "mirror.yaml:1: missing field `spec`",
        "mirror.yaml:5: unknown field `image` at the top level; a tend object has only apiVersion, kind, metadata and spec (did you mean to put it under spec?)",
    ]),
    ("mirror-host-port-clash", &["mirrors.yaml:17: RegistryMirror default/quay uses hostPort 5001 like RegistryMirror default/hub (mirrors.yaml:1); give each mirror targeted at a cluster its own port"]),
    ("several-defects", &[
        "a.yaml:7: missing apiVersion (e.g. `apiVersion: v1`)",
        "a.yaml:17: spec.eagerness: must be between 1 and 100, got 0",
        "b.yaml:1: duplicate object ConfigMap web/ok: first defined at a.yaml:1; remove one of them",
        "b.yaml:11: did not find expected ',' or ']'",
    ]),
];

/// Lines of stderr shaped like `path:line: message`.
fn problem_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            let mut parts = l.splitn(3, ':');
            matches!((parts.next(), parts.next(), parts.next()),
                (Some(p), Some(n), Some(_)) if !p.is_empty() && !p.contains(' ') && n.parse::<usize>().is_ok())
        })
        .collect()
}

#[test]
fn every_broken_repo_exits_2_and_reports_each_defect() {
    let all = std::fs::read_dir(fixture("bad")).unwrap().count();
    assert!(all >= 20, "corpus has {all} repos");
    assert_eq!(all, CASES.len(), "every fixture has a case");
    let mut failures = Vec::new();
    for (name, expected) in CASES {
        let (code, stdout, stderr) = run(tend()
            .args(["render", "--repo"])
            .arg(fixture("bad").join(name)));
        let lines = problem_lines(&stderr);
        if code != 2 || !stdout.is_empty() || lines != *expected {
            failures.push(format!(
                "{name}: exit {code}, stdout {} bytes\n  expected {expected:#?}\n  got {lines:#?}\n  stderr: {stderr}",
                stdout.len()
            ));
        }
        let count = expected.len();
        let headline = format!(
            "error: the desired state has {count} problem{}; nothing was rendered:",
            if count == 1 { "" } else { "s" }
        );
        if !stderr.starts_with(&headline) {
            failures.push(format!(
                "{name}: first line is not the summary sentence: {stderr}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn missing_repo_directory_is_a_clear_error() {
    let (code, _, stderr) = run(tend().args(["render", "--repo", "/nonexistent/site"]));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("repository directory /nonexistent/site does not exist"),
        "{stderr}"
    );
}
