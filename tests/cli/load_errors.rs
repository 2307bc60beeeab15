//! The bad-input corpus (`tests/fixtures/bad/`): each repository exits 2, renders nothing,
//! and reports every defect as `path:line: message`; run through `tend diff` and `tend apply`
//! against the test API server, it changes nothing (zero mutating requests). Inputs too big
//! to commit (a 50 MB file, alias bombs of large strings) or impossible to commit (a FIFO)
//! are generated at test time. `tests/fixtures/bad-cluster/` holds repositories that render
//! fine offline but that the cluster cannot serve (unknown kinds, missing CRDs): they too
//! must change nothing.

use crate::common::*;
use std::path::Path;
use std::time::{Duration, Instant};
use tend_testserver::TestCluster;

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
    ("tend-unknown-kind", &["x.yaml:2: unknown kind RegistryMirrors in tend.dev/v1alpha1; tend's kinds are CopyRule, RegistryMirror, ImmortalContainer, ChaosAgent, HelmChart and Fleet"]),
    ("tend-wrong-version", &["x.yaml:1: unknown apiVersion tend.dev/v1; tend's kinds are served as tend.dev/v1alpha1"]),
    ("unknown-kind", &["deploy.yaml:2: unknown kind Deploymnet in apps/v1; check the spelling of kind (kinds are CamelCase, e.g. Deployment)"]),
    ("tend-unknown-root-field", &[
        "mirror.yaml:1: missing field `spec`",
        "mirror.yaml:5: unknown field `image` at the top level; a tend object has only apiVersion, kind, metadata and spec (did you mean to put it under spec?)",
    ]),
    ("mirror-host-port-clash", &["mirrors.yaml:17: RegistryMirror default/quay uses hostPort 5001 like RegistryMirror default/hub (mirrors.yaml:1); give each mirror targeted at a cluster its own port"]),
    ("alias-unknown-anchor", &["cm.yaml:7: alias *defaults refers to an anchor (`&name`) that is not defined before it in this document; anchors do not carry across `---`"]),
    ("anchor-across-documents", &["cm.yaml:15: alias *shared refers to an anchor (`&name`) that is not defined before it in this document; anchors do not carry across `---`"]),
    ("bad-yaml-in-middle-document", &["all.yaml:13: mapping values are not allowed in this context"]),
    ("bad-yaml-indentation", &["cm.yaml:8: mapping values are not allowed in this context"]),
    ("bad-yaml-unclosed-quote", &["cm.yaml:9: found unexpected end of stream"]),
    ("billion-laughs", &["lol.yaml:8: YAML aliases expand this document to more than 16 MiB (an alias bomb, \"billion laughs\"?); write the values out or use fewer aliases"]),
    ("binary-file", &["logo.yaml:1: file is not valid UTF-8 (binary or another encoding); save it as UTF-8 or add it to .tendignore"]),
    ("broken-symlink", &["app.yaml:1: broken symlink: its target does not exist"]),
    ("control-characters", &["cm.yaml:6: control characters are not allowed"]),
    ("deep-nesting-block", &["cm.yaml:134: collections are nested more than 128 levels deep; a Kubernetes object is never this deep"]),
    ("deep-nesting-flow", &["cm.yaml:7: collections are nested more than 128 levels deep; a Kubernetes object is never this deep"]),
    ("duplicate-cluster-scoped", &["rbac/b.yaml:1: duplicate object rbac.authorization.k8s.io/ClusterRole reader: first defined at rbac/a.yaml:1; remove one of them"]),
    ("duplicate-keys-nested", &["cm.yaml:8: metadata.labels: duplicate entry with key \"team\""]),
    ("duplicate-objects-across-dirs", &["overlays/prod/app.yaml:2: duplicate object ConfigMap web/settings: first defined at base/app.yaml:1; remove one of them"]),
    ("empty-kind", &["cm.yaml:2: kind is empty (e.g. `kind: ConfigMap`)"]),
    ("integer-overflow", &["deploy.yaml:7: spec.replicas: integer is too large; numbers must fit in 64 bits (quote it if it is meant as a string)"]),
    ("invalid-label-key", &["cm.yaml:6: metadata.annotations key \"Example.COM/owner\" is not valid: the prefix \"Example.COM\" must be a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253 characters)"]),
    ("invalid-label-value", &["cm.yaml:7: metadata.labels.owner value \"Jane Doe\" is not a valid label value: at most 63 characters, letters, digits, '-', '_' and '.', starting and ending with a letter or digit"]),
    ("invalid-namespace-name", &["cm.yaml:5: metadata.namespace \"Web_Prod\" is not a valid namespace name (lowercase letters, digits and '-', at most 63 characters)"]),
    ("invalid-namespace-object-name", &["ns.yaml:4: metadata.name \"team.a\" is not a valid Namespace name: use lowercase letters, digits and '-', start and end with a letter or digit, at most 63 characters"]),
    ("invalid-service-name", &["svc.yaml:4: metadata.name \"1-web\" is not a valid Service name: use lowercase letters, digits and '-', start with a letter, end with a letter or digit, at most 63 characters"]),
    ("json-unclosed-brace", &["cm.yaml:4: did not find expected ',' or '}'"]),
    ("malformed-apiversion", &["widget.yaml:1: apiVersion \"my group/version1\" is not of the form <group>/<version> (e.g. apps/v1)"]),
    ("name-too-long", &["cm.yaml:4: metadata.name \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\" (254 characters) is not a valid name: use lowercase letters, digits, '-' and '.', start and end with a letter or digit, at most 253 characters"]),
    ("namespace-on-clusterrole", &["role.yaml:5: ClusterRole is cluster-scoped and cannot have metadata.namespace; remove it"]),
    ("non-string-key", &["cm.yaml:6: data: mapping key [\"a\",\"b\"] is not a string; keys of Kubernetes objects are strings (quote it)"]),
    ("null-name", &["cm.yaml:4: metadata.name must be a string, found null; quote it"]),
    ("scalar-document", &["notes.yaml:2: document is a string, not a mapping; every document must be a Kubernetes object with apiVersion, kind and metadata"]),
    ("symlink-dir-escape", &["shared:1: symlink points outside the repository (to /etc); copy the file into the repository instead"]),
    ("tab-in-sequence", &["deploy.yaml:6: tab character used for indentation; YAML allows only spaces"]),
    ("tend-copyrule-empty-selector", &["rule.yaml:9: spec.selector.matchLabels: must have at least one label: an empty selector would copy every object of the source namespace"]),
    ("tend-immortal-empty-image", &["immortal.yaml:7: spec.image: must not be empty: set a container image, e.g. nginx:1.27"]),
    ("tend-wrong-type", &["mirror.yaml:7: spec.port: invalid type: string \"five-thousand\", expected i32"]),
    ("tendignore-invalid", &[".tendignore:3: invalid pattern: error parsing glob '*.{tmp,bak': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"]),
    ("unknown-apiversion", &["deploy.yaml:2: unknown kind Deployment in apps/v2; use apiVersion apps/v1"]),
    ("unknown-kind-wrong-case", &["cm.yaml:2: unknown kind Configmap in v1; check the spelling of kind (kinds are CamelCase, e.g. Deployment)"]),
    ("wrong-type-command-string", &["pod.yaml:10: spec.containers[0].command: invalid type: string \"nginx -g \\\"daemon off;\\\"\", expected a sequence"]),
    ("wrong-type-container-port", &["deploy.yaml:18: spec.template.spec.containers[0].ports[0].containerPort: invalid type: string \"http\", expected i32"]),
    ("wrong-type-data-list", &["cm.yaml:6: data: invalid type: sequence, expected a map"]),
    ("wrong-type-env-from", &["deploy.yaml:18: spec.template.spec.containers[1].envFrom: invalid type: map, expected a sequence"]),
    ("wrong-type-labels-list", &["cm.yaml:5: metadata.labels must be a mapping of strings, found a list"]),
    ("wrong-type-replicas", &["deploy.yaml:7: spec.replicas: invalid type: string \"two\", expected i32"]),
    ("wrong-type-secret-data", &["secret.yaml:7: data.password: invalid value (not shown: Secret values are never printed); data values must be base64-encoded strings, stringData values strings"]),
    ("wrong-type-service-port", &["svc.yaml:10: spec.ports[0].port: invalid type: string \"80\", expected i32"]),
    ("several-defects", &[
        "a.yaml:7: missing apiVersion (e.g. `apiVersion: v1`)",
        "a.yaml:17: spec.eagerness: must be between 1 and 100, got 0",
        "b.yaml:1: duplicate object ConfigMap web/ok: first defined at a.yaml:1; remove one of them",
        "b.yaml:11: did not find expected ',' or ']'",
    ]),
];

/// Lines of stderr shaped like `path:line: message`.
pub fn problem_lines(stderr: &str) -> Vec<&str> {
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
    assert!(all >= 40, "corpus has {all} repos");
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

/// Write a generated broken repository; returns (name, dir, expected problem lines).
type Generated = (&'static str, tempfile::TempDir, Vec<String>);

fn generated_cases() -> Vec<Generated> {
    let mut cases = Vec::new();
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: web\n";

    // 50 MB of otherwise valid YAML: refused by size, before it is read.
    let dir = tempfile::tempdir().unwrap();
    {
        use std::io::Write;
        let mut f =
            std::io::BufWriter::new(std::fs::File::create(dir.path().join("dump.yaml")).unwrap());
        let doc = format!("---\n{cm}data:\n  k: \"{}\"\n", "x".repeat(1000));
        let mut written = 0;
        while written < 50 * 1024 * 1024 {
            f.write_all(doc.as_bytes()).unwrap();
            written += doc.len();
        }
    }
    let size = std::fs::metadata(dir.path().join("dump.yaml"))
        .unwrap()
        .len();
    cases.push(("huge-file", dir, vec![format!(
        "dump.yaml:1: file is {:.1} MiB; tend reads YAML files up to 4 MiB (a Kubernetes object is at most about 1.5 MiB); split it or add it to .tendignore",
        size as f64 / (1024.0 * 1024.0)
    )]));

    // One 1 MiB string repeated by 3,000 aliases: 3 GB if expanded.
    let dir = tempfile::tempdir().unwrap();
    let mut text = format!(
        "{cm}data:\n  big: &big \"{}\"\n  copies: [",
        "x".repeat(1 << 20)
    );
    text.push_str(&vec!["*big"; 3000].join(", "));
    text.push_str("]\n");
    std::fs::write(dir.path().join("bomb.yaml"), text).unwrap();
    cases.push(("alias-string-bomb", dir, vec![
        "bomb.yaml:7: data.copies[14]: YAML aliases expand this document to more than 16 MiB (an alias bomb, \"billion laughs\"?); write the values out or use fewer aliases".to_string(),
    ]));

    // 4 MB of `[`: libyaml is quadratic in flow depth; refused by a linear scan.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("deep.yaml"),
        format!("a: {}\n", "[".repeat(4_000_000)),
    )
    .unwrap();
    cases.push(("deep-flow-4mb", dir, vec![
        "deep.yaml:1: collections are nested more than 128 levels deep; a Kubernetes object is never this deep".to_string(),
    ]));

    // 10,000 bad annotations: the first few are reported, not 10,000 lines.
    let dir = tempfile::tempdir().unwrap();
    let mut text =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  annotations:\n".to_string();
    for i in 0..10_000 {
        text.push_str(&format!("    note-{i}: {i}\n"));
    }
    std::fs::write(dir.path().join("cm.yaml"), text).unwrap();
    let mut expected: Vec<String> = (0..5)
        .map(|i| format!("cm.yaml:{}: metadata.annotations.note-{i} must be a string, found a number; quote the value (e.g. \"true\")", 6 + i))
        .collect();
    expected.insert(
        0,
        "cm.yaml:5: metadata.annotations: more problems not shown".to_string(),
    );
    cases.push(("many-bad-annotations", dir, expected));

    // A FIFO named like YAML: reading it would block forever.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.yaml"), cm).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe.yaml"))
        .status()
        .unwrap();
    assert!(status.success());
    cases.push(("fifo", dir, vec![
        "pipe.yaml:1: not a regular file (a pipe, socket or device); remove it or add it to .tendignore".to_string(),
    ]));
    cases
}

#[test]
fn generated_broken_repos_exit_2_quickly() {
    let mut failures = Vec::new();
    for (name, dir, expected) in generated_cases() {
        let started = Instant::now();
        let (code, stdout, stderr) = run(tend()
            .args(["render", "--repo"])
            .arg(dir.path())
            .timeout(Duration::from_secs(60)));
        let elapsed = started.elapsed();
        let lines = problem_lines(&stderr);
        if code != 2 || !stdout.is_empty() || lines != expected {
            failures.push(format!(
                "{name}: exit {code}, stdout {} bytes\n  expected {expected:#?}\n  got {lines:#?}\n  stderr: {}",
                stdout.len(),
                stderr.chars().take(2000).collect::<String>()
            ));
        }
        if elapsed > Duration::from_secs(15) {
            failures.push(format!("{name}: took {elapsed:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `tend diff` and `tend apply` on `repo` against `cluster`: both exit 2, print the same
/// problem lines as `render` (`expected`, when given), and nothing is written.
fn assert_changes_nothing(
    cluster: &TestCluster,
    name: &str,
    repo: &Path,
    expected: Option<&[String]>,
    failures: &mut Vec<String>,
) {
    for command in ["diff", "apply"] {
        cluster.clear_requests();
        let mut cmd = tend();
        cmd.arg(command);
        if command == "apply" {
            cmd.args(["--lock-timeout", "1s"]);
        }
        let (code, _, stderr) = run(cmd
            .arg("--repo")
            .arg(repo)
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path())
            .timeout(Duration::from_secs(60)));
        let writes = writes(cluster);
        if code != 2 || !writes.is_empty() {
            failures.push(format!(
                "{name}: tend {command} exited {code} with writes {writes:?}\n  stderr: {}",
                stderr.chars().take(2000).collect::<String>()
            ));
        }
        if let Some(expected) = expected {
            let lines = problem_lines(&stderr);
            if lines != expected {
                failures.push(format!(
                    "{name}: tend {command} reported\n  {lines:#?}\n  expected {expected:#?}"
                ));
            }
        }
    }
}

#[test]
fn broken_repos_change_nothing_in_the_cluster() {
    let cluster = TestCluster::start();
    let before = cluster.resource_version();
    let mut failures = Vec::new();
    for (name, expected) in CASES {
        let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_changes_nothing(
            &cluster,
            name,
            &fixture("bad").join(name),
            Some(&expected),
            &mut failures,
        );
    }
    for (name, dir, expected) in generated_cases() {
        assert_changes_nothing(&cluster, name, dir.path(), Some(&expected), &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(cluster.resource_version(), before, "the cluster changed");
}

/// (repo in tests/fixtures/bad-cluster, a phrase the error must contain)
const CLUSTER_CASES: &[(&str, &str)] = &[
    ("crd-kind-not-served", "app.yaml:14: the cluster does not serve cert-manager.io/v1 Certificate; check apiVersion and kind, or install the CRD that defines it"),
    ("tend-crds-not-installed", "chaos.yaml:8: the cluster does not serve tend.dev/v1alpha1 ChaosAgent: tend's CRDs are not installed; install them with `tend crds | kubectl apply -f -`"),
    ("kind-not-in-discovery", "pdb.yaml:8: the cluster does not serve policy/v1 PodDisruptionBudget; check apiVersion and kind, or install the CRD that defines it"),
];

/// A kind whose CRD is in the same repository, declared cluster-scoped, used with a
/// namespace. Known after the CRD is read, so it is an input error like any other.
const CLUSTER_SCOPED_CUSTOM_KIND: (&str, &str) = (
    "custom-cluster-scoped-kind-with-namespace",
    "widgets.yaml:25: Widget is cluster-scoped (its CustomResourceDefinition says so) and cannot have metadata.namespace; remove it",
);

#[test]
fn repos_the_cluster_cannot_serve_change_nothing() {
    let all = std::fs::read_dir(fixture("bad-cluster")).unwrap().count();
    assert_eq!(all, CLUSTER_CASES.len() + 1, "every fixture has a case");
    let cluster = TestCluster::start();
    let before = cluster.resource_version();
    let mut failures = Vec::new();
    for (name, phrase) in CLUSTER_CASES {
        let repo = fixture("bad-cluster").join(name);
        let (code, _, stderr) = run(tend().args(["render", "--repo"]).arg(&repo));
        if code != 0 {
            failures.push(format!(
                "{name}: offline render should pass, got {code}: {stderr}"
            ));
        }
        assert_changes_nothing(
            &cluster,
            name,
            &repo,
            Some(&[phrase.to_string()]),
            &mut failures,
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(cluster.resource_version(), before, "the cluster changed");
}

#[test]
fn cluster_scoped_custom_kind_with_namespace_changes_nothing() {
    let (name, phrase) = CLUSTER_SCOPED_CUSTOM_KIND;
    let cluster = TestCluster::start();
    let mut failures = Vec::new();
    let repo = fixture("bad-cluster").join(name);
    assert_changes_nothing(
        &cluster,
        name,
        &repo,
        Some(&[phrase.to_string()]),
        &mut failures,
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn kinds_kubernetes_added_lately_render_offline_and_near_misses_stay_typos() {
    let policy = "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicy\nmetadata:\n  name: add-label\nspec:\n  failurePolicy: Fail\n";
    let workload = "apiVersion: scheduling.k8s.io/v1alpha1\nkind: Workload\nmetadata:\n  name: train\n  namespace: ml\n";
    let dir = site(&[("policy.yaml", policy), ("workload.yaml", workload)]);
    let (code, out, err) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("kind: MutatingAdmissionPolicy") && out.contains("kind: Workload"),
        "{out}"
    );
    let typo = site(&[(
        "policy.yaml",
        &policy.replace("MutatingAdmissionPolicy", "MutatingAdmisionPolicy"),
    )]);
    let (code, _, err) = run(tend().arg("render").arg("--repo").arg(typo.path()));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("policy.yaml:2: unknown kind MutatingAdmisionPolicy in admissionregistration.k8s.io/v1; check the spelling"), "{err}");
}
