//! Equality with `helm template`: every render of the shared corpus that tend supports,
//! compared as sets of objects (kind, namespace, name) with equal content. Test hooks
//! (`helm.sh/hook: test`) are left out on both sides: tend does not render them.

use super::chart::{render, Chart, Release};
use super::hooks::{classify, Hook};
use super::values::merge_maps;
use std::collections::BTreeMap;
use std::path::Path;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/helm-corpus");

fn load_chart(dir: &Path) -> Chart {
    let mut chart = Chart::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("chart dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(dir)
                .expect("inside")
                .to_string_lossy()
                .into_owned();
            let text = String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned();
            match rel.as_str() {
                "Chart.yaml" => {
                    chart.metadata = crate::yaml::parse_value(&text).expect("Chart.yaml")
                }
                "values.yaml" => chart.values = crate::yaml::parse_value(&text).unwrap_or_default(),
                _ => {
                    chart.files.insert(rel, text);
                }
            }
        }
    }
    chart
}

type Objects = BTreeMap<(String, String, String), serde_json::Value>;

fn objects(text: &str) -> Objects {
    let mut out = Objects::new();
    let mut doc = String::new();
    let mut flush = |doc: &mut String| {
        if let Some(value) = crate::yaml::parse_value(doc) {
            if value.is_object() && !matches!(classify(&value), Hook::LeftOut(_)) {
                let get = |p: &str| {
                    value
                        .pointer(p)
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_string()
                };
                out.insert(
                    (
                        get("/kind"),
                        get("/metadata/namespace"),
                        get("/metadata/name"),
                    ),
                    value,
                );
            }
        }
        doc.clear();
    };
    for line in text.lines() {
        if line.trim_end() == "---" {
            flush(&mut doc);
        } else {
            doc.push_str(line);
            doc.push('\n');
        }
    }
    flush(&mut doc);
    out
}

/// `--set a.b=v` as the values a HelmChart's `spec.values` gives for it (`{a: {b: v}}`,
/// with v read as YAML: `3` a number, `true` a bool).
fn set_values(assignment: &str) -> serde_json::Value {
    let (path, value) = assignment.split_once('=').expect("key=value");
    let mut value = crate::yaml::parse_value(value).unwrap_or(serde_json::Value::Null);
    for key in path.rsplit('.') {
        value = serde_json::json!({ key: value });
    }
    value
}

/// Renders one corpus entry with the values its command gives.
fn render_entry(command: &str) -> Option<Result<Objects, String>> {
    if !command.starts_with("helm template rel charts/") {
        return None;
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    let corpus = Path::new(CORPUS);
    let chart = load_chart(&corpus.join(words[3]));
    let mut values = serde_json::json!({});
    for pair in words.windows(2).filter(|w| w[0] == "-f") {
        let text = std::fs::read_to_string(corpus.join(pair[1])).expect("values file");
        values = merge_maps(
            &values,
            &crate::yaml::parse_value(&text).unwrap_or_default(),
        );
    }
    // Helm applies --set after every -f file.
    for pair in words.windows(2).filter(|w| w[0] == "--set") {
        values = merge_maps(&values, &set_values(pair[1]));
    }
    let release = Release {
        name: "rel".into(),
        namespace: "ns1".into(),
        kube_version: "v1.33.0".into(),
        api_versions: Vec::new(),
        seed: 1,
        now: 0,
        cluster: None,
    };
    Some(
        render(&chart, &values, &release)
            .map_err(|e| e.to_string())
            .map(|manifests| {
                let text: Vec<String> = manifests
                    .into_iter()
                    .map(|m| format!("---\n{}\n", m.text))
                    .collect();
                objects(&text.join(""))
            }),
    )
}

fn describe_difference(ours: &Objects, theirs: &Objects) -> String {
    let mut notes = Vec::new();
    for key in theirs.keys().filter(|k| !ours.contains_key(*k)) {
        notes.push(format!("missing {key:?}"));
    }
    for key in ours.keys().filter(|k| !theirs.contains_key(*k)) {
        notes.push(format!("extra {key:?}"));
    }
    for (key, value) in ours {
        if let Some(expected) = theirs.get(key) {
            if value != expected {
                notes.push(format!(
                    "differs {key:?}:\n  tend: {}\n  helm: {}",
                    serde_json::to_string(value).unwrap_or_default(),
                    serde_json::to_string(expected).unwrap_or_default()
                ));
            }
        }
    }
    notes.join("\n")
}

#[test]
fn renders_equal_helm_template() {
    let Ok(index) = std::fs::read_to_string(Path::new(CORPUS).join("renders.tsv")) else {
        eprintln!("skipped: no Helm corpus at {CORPUS}");
        return;
    };
    let mut matching = Vec::new();
    let mut report = Vec::new();
    for line in index.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (chart, output, command) = (cols[0], cols[1], cols[3]);
        let name = format!("{chart}/{output}");
        let Some(result) = render_entry(command) else {
            report.push(format!("{name}: not supported"));
            continue;
        };
        let golden =
            std::fs::read_to_string(Path::new(CORPUS).join("golden").join(chart).join(output))
                .expect("golden");
        let theirs = objects(&golden);
        match result {
            Ok(ours) if ours == theirs => matching.push(name),
            Ok(ours) => report.push(format!("{name}: {}", describe_difference(&ours, &theirs))),
            Err(e) => report.push(format!("{name}: error: {e}")),
        }
    }
    eprintln!(
        "matching ({}):\n{}\n\nnot matching:\n{}",
        matching.len(),
        matching.join("\n"),
        report.join("\n\n")
    );
    assert!(
        report.is_empty(),
        "renders that differ from helm template:\n{}",
        report.join("\n\n")
    );
    assert_eq!(
        matching.len(),
        index.lines().skip(1).count(),
        "every render compared"
    );
}

/// The corpus's hooks, as tend runs them: ingress-nginx's admission webhook set-up is a
/// pre-install Job and a post-install Job (both Run), with the ServiceAccount and RBAC they
/// use applied before them; podinfo's tests are left out. Ours equal Helm's object for
/// object (above), so they map the same way.
#[test]
fn corpus_hooks_map_onto_tend_hooks() {
    let Ok(golden) =
        std::fs::read_to_string(Path::new(CORPUS).join("golden/ingress-nginx/default.yaml"))
    else {
        eprintln!("skipped: no Helm corpus at {CORPUS}");
        return;
    };
    let mut kinds: Vec<(String, Hook)> = Vec::new();
    for doc in golden.split("\n---") {
        if let Some(value) = crate::yaml::parse_value(doc) {
            let hook = classify(&value);
            if hook != Hook::None {
                let kind = value["kind"].as_str().unwrap_or("").to_string();
                kinds.push((kind, hook));
            }
        }
    }
    use super::hooks::When;
    let runs: Vec<&(String, Hook)> = kinds
        .iter()
        .filter(|(_, h)| matches!(h, Hook::Run { .. }))
        .collect();
    assert_eq!(runs.len(), 2, "{kinds:?}");
    assert!(runs.iter().all(|(k, h)| k == "Job"
        && matches!(
            h,
            Hook::Run {
                delete_on_success: true,
                ..
            }
        )));
    assert!(runs.iter().any(|(_, h)| matches!(
        h,
        Hook::Run {
            when: When::Before,
            ..
        }
    )));
    assert!(runs.iter().any(|(_, h)| matches!(
        h,
        Hook::Run {
            when: When::After,
            ..
        }
    )));
    let applied: Vec<&String> = kinds
        .iter()
        .filter(|(_, h)| *h == Hook::Apply { when: When::Before })
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        applied,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding"
        ],
        "{kinds:?}"
    );
}
