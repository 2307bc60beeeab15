//! Fuzzing the loader with proptest: random bytes, mutations of real desired-state files
//! (the example site and the bad-input corpus), and structure-aware random Kubernetes and tend
//! documents go through `tend::render::render` (parse, validate, tend kinds, expansion, config
//! hash). It must never panic and never take long; every input is either rendered or
//! rejected with `path:line:` problems. Panics found this way become regression tests at the
//! end of this file.
//!
//! `FUZZ_CASES=<n>` runs more cases (default: a quick run for the test suite).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tend::SourceFile;
use tend::{render, RenderOptions};

fn cases(default: u32) -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn config(default: u32) -> Config {
    Config {
        cases: cases(default),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Render `files` for a cluster (or none); panics propagate (proptest reports and shrinks
/// them). Checks the shape of problems and the time taken.
fn check(files: &[SourceFile], cluster: Option<&str>) -> Result<(), TestCaseError> {
    let opts = RenderOptions {
        cluster: cluster.map(str::to_string),
        ..RenderOptions::default()
    };
    let started = Instant::now();
    let result = render(files, &opts);
    let elapsed = started.elapsed();
    prop_assert!(
        elapsed < Duration::from_secs(5),
        "render took {:?} for {} bytes",
        elapsed,
        files.iter().map(|f| f.text.len()).sum::<usize>()
    );
    if let Err(err) = result {
        let text = err.to_string();
        let mut lines = text.lines();
        prop_assert!(lines.next().is_some_and(|l| l.contains("problem")));
        for line in lines {
            // `path:line: message`, one line each.
            let mut parts = line.splitn(3, ':');
            let (path, number, message) = (parts.next(), parts.next(), parts.next());
            prop_assert!(
                path.is_some_and(|p| !p.is_empty())
                    && number.is_some_and(|n| n.parse::<usize>().is_ok_and(|n| n >= 1))
                    && message.is_some_and(|m| !m.trim().is_empty()),
                "malformed problem line {:?} in\n{}",
                line,
                text
            );
            let n: usize = number.unwrap().parse().unwrap();
            let file = files.iter().find(|f| f.path == Path::new(path.unwrap()));
            if let Some(file) = file {
                let total = file.text.lines().count().max(1);
                prop_assert!(
                    n <= total + 1,
                    "line {} beyond the end ({} lines): {}",
                    n,
                    total,
                    line
                );
            }
        }
    }
    Ok(())
}

fn one(text: String) -> Vec<SourceFile> {
    vec![SourceFile {
        path: PathBuf::from("fuzz.yaml"),
        text,
        unit: None,
    }]
}

// ---------------------------------------------------------------------------------------
// Seeds: every YAML file of the example site and of the bad-input corpus.

fn seeds() -> Vec<String> {
    fn collect(dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_symlink() {
                continue;
            }
            if path.is_dir() {
                collect(&path, out);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                if let Ok(text) = std::fs::read_to_string(&path) {
                    if text.len() < 64 * 1024 {
                        out.push(text);
                    }
                }
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    collect(&root.join("examples"), &mut out);
    collect(&root.join("tests/fixtures"), &mut out);
    assert!(out.len() > 20, "seed corpus has {} files", out.len());
    out
}

/// One mutation of YAML text.
#[derive(Debug, Clone)]
enum Mutation {
    InsertText(prop::sample::Index, String),
    DeleteRange(prop::sample::Index, usize),
    DuplicateLine(prop::sample::Index),
    SwapLines(prop::sample::Index, prop::sample::Index),
    Indent(prop::sample::Index, usize),
    Dedent(prop::sample::Index),
    TabIndent(prop::sample::Index),
    Truncate(prop::sample::Index),
    ReplaceScalar(prop::sample::Index, String),
    SplitDocument(prop::sample::Index),
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(": ".to_string()),
        Just("- ".to_string()),
        Just("---\n".to_string()),
        Just("...\n".to_string()),
        Just("&a ".to_string()),
        Just("*a".to_string()),
        Just("<<: *a\n".to_string()),
        Just("!!binary ".to_string()),
        Just("!custom ".to_string()),
        Just("? ".to_string()),
        Just("|\n".to_string()),
        Just(">-\n".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("#".to_string()),
        Just("\t".to_string()),
        Just("\u{feff}".to_string()),
        Just("\u{0}".to_string()),
        Just("%YAML 1.2\n".to_string()),
        Just("null".to_string()),
        Just("~".to_string()),
        Just("1e400".to_string()),
        Just(".nan".to_string()),
        Just("123456789012345678901234567890".to_string()),
        Just("apiVersion: tend.dev/v1alpha1\n".to_string()),
        Just("kind: RegistryMirror\n".to_string()),
        Just("kind: ImmortalContainer\n".to_string()),
        Just("kind: CopyRule\n".to_string()),
        Just("kind: ChaosAgent\n".to_string()),
        Just("  namespace: \n".to_string()),
        Just("tend.dev/clusters: dc1\n".to_string()),
        "[ -~]{1,12}",
        "\\PC{1,4}",
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let i = any::<prop::sample::Index>;
    prop_oneof![
        (i(), fragment()).prop_map(|(a, b)| Mutation::InsertText(a, b)),
        (i(), 1usize..40).prop_map(|(a, b)| Mutation::DeleteRange(a, b)),
        i().prop_map(Mutation::DuplicateLine),
        (i(), i()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (i(), 1usize..6).prop_map(|(a, b)| Mutation::Indent(a, b)),
        i().prop_map(Mutation::Dedent),
        i().prop_map(Mutation::TabIndent),
        i().prop_map(Mutation::Truncate),
        (i(), fragment()).prop_map(|(a, b)| Mutation::ReplaceScalar(a, b)),
        i().prop_map(Mutation::SplitDocument),
    ]
}

fn char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn mutate(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let n = lines.len();
    match m {
        Mutation::InsertText(at, s) => {
            let at = char_boundary(text, at.index(text.len() + 1));
            format!("{}{}{}", &text[..at], s, &text[at..])
        }
        Mutation::DeleteRange(at, len) => {
            let from = char_boundary(text, at.index(text.len() + 1));
            let to = char_boundary(text, from + len);
            format!("{}{}", &text[..from], &text[to..])
        }
        Mutation::DuplicateLine(i) => {
            let i = i.index(n);
            let line = lines[i].clone();
            lines.insert(i, line);
            lines.join("\n") + "\n"
        }
        Mutation::SwapLines(a, b) => {
            lines.swap(a.index(n), b.index(n));
            lines.join("\n") + "\n"
        }
        Mutation::Indent(i, by) => {
            let i = i.index(n);
            lines[i] = format!("{}{}", " ".repeat(*by), lines[i]);
            lines.join("\n") + "\n"
        }
        Mutation::Dedent(i) => {
            let i = i.index(n);
            lines[i] = lines[i].trim_start().to_string();
            lines.join("\n") + "\n"
        }
        Mutation::TabIndent(i) => {
            let i = i.index(n);
            lines[i] = lines[i].replacen("  ", "\t", 1);
            lines.join("\n") + "\n"
        }
        Mutation::Truncate(at) => text[..char_boundary(text, at.index(text.len() + 1))].to_string(),
        Mutation::ReplaceScalar(i, s) => {
            let i = i.index(n);
            if let Some((key, _)) = lines[i].split_once(": ") {
                lines[i] = format!("{key}: {s}");
            }
            lines.join("\n") + "\n"
        }
        Mutation::SplitDocument(i) => {
            lines.insert(i.index(n), "---".into());
            lines.join("\n") + "\n"
        }
    }
}

#[test]
fn mutated_real_files_never_panic() {
    let seeds = seeds();
    let mut runner = TestRunner::new(config(1500));
    runner
        .run(
            &(
                prop::sample::select(seeds),
                prop::collection::vec(mutation(), 1..6),
                prop::option::of(prop::sample::select(vec!["dc1", "dc2", "other"])),
            ),
            |(seed, mutations, cluster)| {
                let mut text = seed;
                for m in &mutations {
                    text = mutate(&text, m);
                }
                check(&one(text), cluster)
            },
        )
        .unwrap();
}

#[test]
fn random_text_never_panics() {
    let mut runner = TestRunner::new(config(1500));
    runner
        .run(
            &prop_oneof![
                "\\PC{0,200}",
                "[\\[\\]{}:,\\-?|>!&*#'\"% \\n\\ta-z0-9]{0,300}",
                prop::collection::vec(any::<u8>(), 0..200)
                    .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            ],
            |text| check(&one(text), None),
        )
        .unwrap();
}

// ---------------------------------------------------------------------------------------
// Structure-aware: documents shaped like Kubernetes and tend objects, with random values of
// random types where the real fields are.

const FIELDS: &[&str] = &[
    "name",
    "namespace",
    "labels",
    "annotations",
    "spec",
    "data",
    "stringData",
    "binaryData",
    "replicas",
    "selector",
    "matchLabels",
    "template",
    "containers",
    "initContainers",
    "image",
    "env",
    "envFrom",
    "valueFrom",
    "configMapKeyRef",
    "secretKeyRef",
    "configMapRef",
    "secretRef",
    "volumes",
    "configMap",
    "secret",
    "secretName",
    "projected",
    "sources",
    "ports",
    "port",
    "hostPort",
    "containerPort",
    "upstream",
    "storage",
    "size",
    "storageClassName",
    "clusters",
    "resources",
    "limits",
    "requests",
    "command",
    "args",
    "kind",
    "sourceNamespace",
    "targetNamespaces",
    "namespaceSelector",
    "excludeNamespaces",
    "tantrumMode",
    "cancerMode",
    "ipsumMode",
    "podTolerance",
    "eagerness",
    "excludedNamespaces",
    "maxActions",
    "jobTemplate",
    "schedule",
    "type",
    "group",
    "names",
    "scope",
    "versions",
    "plural",
    "metadata",
    "ownerReferences",
    "finalizers",
    "generateName",
    "status",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        (-70000i64..70000).prop_map(|i| json!(i)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z0-9.-]{0,20}".prop_map(Value::String),
        "\\PC{0,12}".prop_map(Value::String),
        Just(json!("tend.dev/v1alpha1")),
        Just(json!("ConfigMap")),
        Just(json!("Secret")),
        Just(json!("dc1")),
        Just(json!("https://registry-1.docker.io")),
        Just(json!("10Gi")),
        Just(json!("true")),
    ]
}

fn tree() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(6, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(FIELDS), inner.clone()), 0..5).prop_map(
                |entries| {
                    Value::Object(
                        entries
                            .into_iter()
                            .map(|(k, v)| (k.to_string(), v))
                            .collect::<Map<String, Value>>(),
                    )
                }
            ),
            prop::collection::vec(("[a-z./-]{1,12}", inner), 0..3).prop_map(|entries| {
                Value::Object(entries.into_iter().collect::<Map<String, Value>>())
            }),
        ]
    })
}

fn document() -> impl Strategy<Value = Value> {
    let kinds = prop::sample::select(vec![
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Namespace"),
        ("v1", "Service"),
        ("v1", "Pod"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("batch/v1", "CronJob"),
        ("batch/v1", "Job"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("tend.dev/v1alpha1", "RegistryMirror"),
        ("tend.dev/v1alpha1", "ImmortalContainer"),
        ("tend.dev/v1alpha1", "CopyRule"),
        ("tend.dev/v1alpha1", "ChaosAgent"),
        ("example.com/v1", "Widget"),
    ]);
    (
        kinds,
        prop_oneof![
            "[a-z]([a-z0-9-]{0,8}[a-z0-9])?".prop_map(Value::String),
            scalar()
        ],
        prop::option::of("[a-z]{1,6}"),
        prop::collection::btree_map("[a-z]{1,6}", scalar(), 0..3),
        tree(),
        tree(),
    )
        .prop_map(|((api, kind), name, ns, labels, spec, data)| {
            let mut meta = json!({"name": name, "labels": labels});
            if let Some(ns) = ns {
                meta["namespace"] = json!(ns);
            }
            let mut doc = json!({"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec});
            if matches!(kind, "ConfigMap" | "Secret") {
                doc["data"] = data;
            }
            doc
        })
}

/// A structurally valid tend object with random (often wrong) spec values: exercises the
/// typed parsers, validation and expansion of tend's kinds.
fn tend_document() -> impl Strategy<Value = Value> {
    let mirror = (tree(), scalar(), scalar(), scalar(), prop::option::of(prop::collection::vec("[a-z0-9]{1,4}", 0..3)))
        .prop_map(|(resources, port, host_port, size, clusters)| {
            json!({"apiVersion": "tend.dev/v1alpha1", "kind": "RegistryMirror",
                "metadata": {"name": "hub", "namespace": "registries"},
                "spec": {"upstream": "https://registry-1.docker.io", "port": port, "hostPort": host_port,
                    "storage": {"size": size}, "clusters": clusters, "resources": resources}})
        });
    let immortal =
        (scalar(), tree(), tree(), tree()).prop_map(|(image, command, env, resources)| {
            json!({"apiVersion": "tend.dev/v1alpha1", "kind": "ImmortalContainer",
                "metadata": {"name": "keeper", "namespace": "web"},
                "spec": {"image": image, "command": command, "env": env, "resources": resources}})
        });
    let rule = (scalar(), scalar(), tree(), tree(), tree())
        .prop_map(|(kind, source, selector, targets, ns_selector)| {
            json!({"apiVersion": "tend.dev/v1alpha1", "kind": "CopyRule", "metadata": {"name": "copy"},
                "spec": {"kind": kind, "sourceNamespace": source, "selector": selector,
                    "targetNamespaces": targets, "namespaceSelector": ns_selector}})
        });
    let chaos = (scalar(), scalar(), scalar(), tree())
        .prop_map(|(eagerness, tolerance, max, excluded)| {
            json!({"apiVersion": "tend.dev/v1alpha1", "kind": "ChaosAgent", "metadata": {"name": "edmund"},
                "spec": {"tantrumMode": true, "eagerness": eagerness, "podTolerance": tolerance,
                    "maxActions": max, "excludedNamespaces": excluded}})
        });
    prop_oneof![mirror, immortal, rule, chaos]
}

fn yaml(value: &Value) -> String {
    serde_yaml::to_string(value).unwrap_or_default()
}

#[test]
fn random_objects_never_panic() {
    let mut runner = TestRunner::new(config(800));
    runner
        .run(
            &(
                prop::collection::vec(prop_oneof![document(), tend_document()], 1..6),
                prop::option::of(prop::sample::select(vec!["dc1", "dc2"])),
            ),
            |(docs, cluster)| {
                let text = docs.iter().map(yaml).collect::<Vec<_>>().join("---\n");
                check(&one(text), cluster)
            },
        )
        .unwrap();
}

// ---------------------------------------------------------------------------------------
// Regressions: inputs that once hung or exhausted memory, kept here.

#[test]
fn regression_deep_flow_nesting_is_fast() {
    let started = Instant::now();
    let text = format!("a: {}\n", "[".repeat(200_000));
    assert!(render(&one(text), &RenderOptions::default()).is_err());
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn regression_aliases_of_a_large_string_are_refused() {
    let started = Instant::now();
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  big: &b \"{}\"\n  more: [{}]\n",
        "x".repeat(1 << 20),
        vec!["*b"; 2000].join(", ")
    );
    let err = render(&one(text), &RenderOptions::default()).unwrap_err();
    assert!(err.to_string().contains("alias"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Found by `mutated_real_files_never_panic`: a kind holding a line break made its problem
/// two lines, the second not shaped `path:line:`.
#[test]
fn regression_values_with_line_breaks_stay_on_one_problem_line() {
    for text in [
        "apiVersion: v1\nkind: \"Config\\nMap\"\nmetadata:\n  name: a\n",
        "apiVersion: example.com/v1\nkind: \"Wid\\nget\"\nmetadata:\n  name: a\n",
        "apiVersion: \"example.com/v1\\nx\"\nkind: Widget\nmetadata:\n  name: a\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    \"a\\nb\": x\n",
    ] {
        let err = render(&one(text.to_string()), &RenderOptions::default()).unwrap_err();
        let text = err.to_string();
        for line in text.lines().skip(1) {
            assert!(line.starts_with("fuzz.yaml:"), "{line:?} in\n{text}");
        }
    }
}

/// Found by `random_text_never_panics`: libyaml counts U+2028 (and NEL, U+2029, a lone CR)
/// as line breaks, so its line numbers ran past the end of the file.
#[test]
fn regression_unicode_line_separators_do_not_shift_lines() {
    let err = render(
        &one("(:\u{2028}\u{ae}".to_string()),
        &RenderOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("fuzz.yaml:1:"), "{err}");
    let err = render(
        &one("a: 1\u{2028}b: 2\u{2028}\nc: [\n".to_string()),
        &RenderOptions::default(),
    )
    .unwrap_err();
    let text = err.to_string();
    let line: usize = text
        .lines()
        .nth(1)
        .unwrap()
        .split(':')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(line <= 3, "{text}");
}
