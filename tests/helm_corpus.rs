//! Equality with `helm template`: every render of the shared corpus (`renders.tsv`, both
//! sets), its command line read as Helm's CLI reads it, compared under the corpus README's
//! rules: objects as sets keyed by (kind, namespace, name) with equal content; the objects
//! `random.tsv` names compared by shape; test, delete and rollback hooks left out on both
//! sides (tend never runs them). Cases tend does not yet render as Helm does are listed in
//! [`KNOWN_FAILURES`] with the reason, so the count stays honest and a fix is noticed.
//!
//! Charts are read by tend's own chart loader (`tend::charts::read_chart`, `.tgz` subcharts and
//! `.helmignore` as Helm's loader reads them), which is why this is an integration test:
//! `helm` may not depend on `source` (tests/cli/architecture.rs).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use tend::charts::{classify, merge_maps, parse_set, render, Hook, Manifest, Release};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/helm-corpus");

/// Renders (`<chart>/<output>`) that do not give Helm's objects yet, and why.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

type Objects = BTreeMap<(String, String, String), Vec<Value>>;

fn objects(text: &str) -> Objects {
    let mut out = Objects::new();
    let mut doc = String::new();
    let mut flush = |doc: &mut String| {
        if let Some(value) = tend::charts::parse_value(doc) {
            if value.is_object() && !matches!(classify(&value), Hook::LeftOut(_)) {
                let get = |p: &str| {
                    value
                        .pointer(p)
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_string()
                };
                out.entry((
                    get("/kind"),
                    get("/metadata/namespace"),
                    get("/metadata/name"),
                ))
                .or_default()
                .push(value);
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

/// A command line split as a POSIX shell splits it (the corpus quotes with `'` only).
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    for c in command.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            c if c.is_whitespace() && !quoted => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// What a `helm template` command line asks for.
#[derive(Debug, Default)]
struct Command {
    release: String,
    chart: String,
    namespace: String,
    kube_version: String,
    values_files: Vec<String>,
    sets: Vec<String>,
    api_versions: Vec<String>,
    include_crds: bool,
    skip_tests: bool,
}

fn parse_command(command: &str) -> Result<Command, String> {
    let words = shell_words(command);
    let mut it = words.iter().map(String::as_str);
    if (it.next(), it.next()) != (Some("helm"), Some("template")) {
        return Err(format!("not a helm template command: {command}"));
    }
    let mut cmd = Command::default();
    let mut positional = Vec::new();
    while let Some(word) = it.next() {
        let mut arg = || {
            it.next()
                .map(str::to_string)
                .ok_or_else(|| format!("{word} needs a value"))
        };
        match word {
            "--namespace" | "-n" => cmd.namespace = arg()?,
            "--kube-version" => cmd.kube_version = arg()?,
            "-f" | "--values" => cmd.values_files.push(arg()?),
            "--set" => cmd.sets.push(arg()?),
            "--api-versions" | "-a" => cmd.api_versions.push(arg()?),
            "--include-crds" => cmd.include_crds = true,
            "--skip-tests" => cmd.skip_tests = true,
            flag if flag.starts_with('-') => return Err(format!("flag {flag} not supported")),
            other => positional.push(other.to_string()),
        }
    }
    let [release, chart] = <[String; 2]>::try_from(positional)
        .map_err(|p| format!("want a release and a chart, got {p:?}"))?;
    cmd.release = release;
    cmd.chart = chart;
    Ok(cmd)
}

/// One corpus entry's chart rendered as its command asks: the command, the chart's name and
/// the manifests.
fn render_manifests(command: &str) -> Result<(Command, String, Vec<Manifest>), String> {
    let cmd = parse_command(command)?;
    let corpus = Path::new(CORPUS);
    let chart = tend::charts::read_chart(corpus, &corpus.join(&cmd.chart), Path::new(&cmd.chart))
        .map_err(|p| p.to_string())?;
    let mut values = serde_json::json!({});
    for file in &cmd.values_files {
        let text = std::fs::read_to_string(corpus.join(file)).map_err(|e| e.to_string())?;
        values = merge_maps(&values, &tend::charts::parse_helm_yaml(&text)?);
    }
    // Helm applies every --set after every -f file.
    for set in &cmd.sets {
        parse_set(set, &mut values)?;
    }
    let release = Release {
        name: cmd.release.clone(),
        namespace: cmd.namespace.clone(),
        kube_version: cmd.kube_version.clone(),
        api_versions: cmd.api_versions.clone(),
        seed: 1,
        now: 0,
        cluster: None,
        limits: Default::default(),
    };
    let manifests = render(&chart, &values, &release).map_err(|e| e.to_string())?;
    Ok((cmd, chart.name().to_string(), manifests))
}

/// Renders one corpus entry as its command asks.
fn render_entry(command: &str) -> Result<Objects, String> {
    let (cmd, _, manifests) = render_manifests(command)?;
    let text: String = manifests
        .into_iter()
        .filter(|m| cmd.include_crds || !m.crd)
        .map(|m| format!("---\n{}\n", m.text))
        .collect();
    let mut out = objects(&text);
    if cmd.skip_tests {
        // Already left out by `objects`; nothing else differs.
        out.retain(|_, v| !v.is_empty());
    }
    Ok(out)
}

/// The render of one corpus entry printed as `helm template` prints it.
fn render_text(command: &str) -> Result<String, String> {
    let (cmd, chart, manifests) = render_manifests(command)?;
    tend::charts::helm_template_text(&chart, &manifests, cmd.include_crds, cmd.skip_tests)
}

/// Same keys all the way down, values unchecked; `checksum/*` annotations ignored.
fn same_shape(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys = |m: &serde_json::Map<String, Value>| -> BTreeSet<String> {
                m.keys()
                    .filter(|k| !k.starts_with("checksum/"))
                    .cloned()
                    .collect()
            };
            keys(a) == keys(b)
                && a.iter()
                    .all(|(k, v)| k.starts_with("checksum/") || same_shape(v, &b[k]))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_shape(a, b))
        }
        _ => true,
    }
}

/// Without `checksum/*` annotations (they hash random values of other objects).
fn without_checksums(v: &Value) -> Value {
    let mut v = v.clone();
    for p in [
        "/metadata/annotations",
        "/spec/template/metadata/annotations",
    ] {
        if let Some(Value::Object(m)) = v.pointer_mut(p) {
            m.retain(|k, _| !k.starts_with("checksum/"));
        }
    }
    v
}

/// What differs, or an empty list. `random` holds `Kind/name` of the objects compared by
/// shape; with any, checksum annotations of the other objects are ignored too.
fn differences(ours: &Objects, theirs: &Objects, random: &BTreeSet<String>) -> Vec<String> {
    let mut notes = Vec::new();
    for key in theirs.keys().filter(|k| !ours.contains_key(*k)) {
        notes.push(format!("missing {key:?}"));
    }
    for key in ours.keys().filter(|k| !theirs.contains_key(*k)) {
        notes.push(format!("extra {key:?}"));
    }
    for (key, values) in ours {
        let Some(expected) = theirs.get(key) else {
            continue;
        };
        let by_shape = random.contains(&format!("{}/{}", key.0, key.2));
        let equal = values.len() == expected.len()
            && values.iter().zip(expected).all(|(a, b)| {
                if by_shape {
                    same_shape(a, b)
                } else if random.is_empty() {
                    a == b
                } else {
                    without_checksums(a) == without_checksums(b)
                }
            });
        if !equal {
            notes.push(format!(
                "differs {key:?}:\n  tend: {}\n  helm: {}",
                serde_json::to_string(values).unwrap_or_default(),
                serde_json::to_string(expected).unwrap_or_default()
            ));
        }
    }
    notes
}

/// `random.tsv`: by `<chart>/<output>`, the `Kind/name`s that change on every run.
fn random_objects() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(Path::new(CORPUS).join("random.tsv")).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            let [chart, output, objects] = cols.as_slice() else {
                return None;
            };
            let set = objects.split(',').map(|o| o.trim().to_string()).collect();
            Some((format!("{chart}/{output}"), set))
        })
        .collect()
}

#[test]
fn command_lines_read_as_helm_reads_them() {
    let cmd = parse_command(
        "helm template rel charts/x --namespace ns1 --include-crds --set 'a={p,q}' -f v.yaml --api-versions x/v1 --skip-tests --kube-version v1.33.0",
    )
    .unwrap();
    assert_eq!(
        (cmd.release.as_str(), cmd.chart.as_str()),
        ("rel", "charts/x")
    );
    assert_eq!(cmd.sets, ["a={p,q}"]);
    assert_eq!(cmd.values_files, ["v.yaml"]);
    assert_eq!(cmd.api_versions, ["x/v1"]);
    assert!(cmd.include_crds && cmd.skip_tests);
    assert_eq!(cmd.kube_version, "v1.33.0");
    assert!(parse_command("helm template rel charts/x --wait").is_err());
}

#[test]
fn renders_equal_helm_template() {
    let Ok(index) = std::fs::read_to_string(Path::new(CORPUS).join("renders.tsv")) else {
        eprintln!("skipped: no Helm corpus at {CORPUS}");
        return;
    };
    let random = random_objects();
    let only = std::env::var("CORPUS_ONLY").ok();
    let mut matching = Vec::new();
    let mut failing = BTreeMap::new();
    let mut total = 0;
    for line in index.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [chart, output, _, command] = cols.as_slice() else {
            panic!("renders.tsv line without 4 columns: {line}");
        };
        let name = format!("{chart}/{output}");
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        total += 1;
        let golden =
            std::fs::read_to_string(Path::new(CORPUS).join("golden").join(chart).join(output))
                .expect("golden");
        let theirs = objects(&golden);
        let no_random = BTreeSet::new();
        let random = random.get(&name).unwrap_or(&no_random);
        let notes = match render_entry(command) {
            Ok(ours) => differences(&ours, &theirs, random),
            Err(e) => vec![format!("error: {e}")],
        };
        if notes.is_empty() {
            matching.push(name);
        } else {
            failing.insert(name, notes.join("\n"));
        }
    }
    eprintln!("{} of {total} renders equal helm template", matching.len());
    for (name, why) in &failing {
        eprintln!("FAIL {name}: {why}\n");
    }
    let known: BTreeMap<&str, &str> = KNOWN_FAILURES.iter().copied().collect();
    let unexpected: Vec<&String> = failing
        .keys()
        .filter(|n| !known.contains_key(n.as_str()))
        .collect();
    let fixed: Vec<&&str> = known
        .keys()
        .filter(|n| matching.iter().any(|m| m == *n))
        .collect();
    assert!(
        unexpected.is_empty(),
        "renders that differ from helm template: {unexpected:?}"
    );
    assert!(
        fixed.is_empty(),
        "now equal to helm template: take them out of KNOWN_FAILURES: {fixed:?}"
    );
    if only.is_none() {
        assert_eq!(total, 90, "every render of renders.tsv compared");
    }
}

/// Renders that print other text than `helm template` does although their objects are
/// equal, and why.
const KNOWN_TEXT_DIFFERENCES: &[(&str, &str)] = &[];

/// Every render without random values, printed as `helm template` prints it, is Helm's
/// text byte for byte (documents, order, `# Source:` lines, hooks last).
#[test]
fn printed_renders_equal_helm_template_text() {
    let Ok(index) = std::fs::read_to_string(Path::new(CORPUS).join("renders.tsv")) else {
        eprintln!("skipped: no Helm corpus at {CORPUS}");
        return;
    };
    let random = random_objects();
    let (mut equal, mut skipped) = (0, 0);
    let mut differing = BTreeMap::new();
    for line in index.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [chart, output, _, command] = cols.as_slice() else {
            panic!("renders.tsv line without 4 columns: {line}");
        };
        let name = format!("{chart}/{output}");
        let golden =
            std::fs::read_to_string(Path::new(CORPUS).join("golden").join(chart).join(output))
                .expect("golden");
        // Random values (random.tsv) and podinfo's randomly named test pods differ on
        // every run of Helm itself.
        if random.contains_key(&name) || (*chart == "podinfo" && !command.contains("--skip-tests"))
        {
            skipped += 1;
            continue;
        }
        match render_text(command) {
            Ok(text) if text == golden => equal += 1,
            Ok(text) => {
                let at = text
                    .lines()
                    .zip(golden.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(text.lines().count().min(golden.lines().count()));
                let show = |t: &str| {
                    t.lines()
                        .skip(at.saturating_sub(2))
                        .take(5)
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                differing.insert(
                    name,
                    format!(
                        "line {}:\n tend:\n{}\n helm:\n{}",
                        at + 1,
                        show(&text),
                        show(&golden)
                    ),
                );
            }
            Err(e) => {
                differing.insert(name, format!("error: {e}"));
            }
        }
    }
    eprintln!("{equal} printed renders equal helm template's text ({skipped} with random values not compared)");
    assert_eq!(
        equal + skipped + differing.len(),
        90,
        "every render considered"
    );
    for (name, why) in &differing {
        eprintln!("TEXT {name}: {why}\n");
    }
    let known: BTreeMap<&str, &str> = KNOWN_TEXT_DIFFERENCES.iter().copied().collect();
    let unexpected: Vec<&String> = differing
        .keys()
        .filter(|n| !known.contains_key(n.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "printed renders that differ: {unexpected:?}"
    );
    let fixed: Vec<&&str> = known
        .keys()
        .filter(|n| !differing.contains_key(**n))
        .collect();
    assert!(
        fixed.is_empty(),
        "now equal: take them out of KNOWN_TEXT_DIFFERENCES: {fixed:?}"
    );
}

/// The silent wrong render: kube-prometheus-stack reads
/// `.Capabilities.KubeVersion.Version` to choose the kube-controller-manager port; with
/// Kubernetes 1.33 Helm renders the secure 10257, never the insecure 10252.
#[test]
fn kube_prometheus_stack_reads_the_kube_version() {
    let corpus = Path::new(CORPUS);
    let dir = corpus.join("bench-charts/kube-prometheus-stack");
    if !dir.exists() {
        eprintln!("skipped: no bench chart at {}", dir.display());
        return;
    }
    let mut chart =
        tend::charts::read_chart(corpus, &dir, Path::new("kube-prometheus-stack")).expect("chart");
    // This copy of the chart may lack some packaged dependencies (Helm refuses a chart
    // that names missing ones); the template under test needs none of them.
    let present: Vec<String> = chart
        .dependencies
        .iter()
        .map(|d| d.name().to_string())
        .collect();
    if let Some(Value::Array(deps)) = chart.metadata.get_mut("dependencies") {
        deps.retain(|d| {
            d["name"]
                .as_str()
                .is_some_and(|n| present.iter().any(|p| p == n))
        });
    }
    let release = Release {
        name: "kps".into(),
        namespace: "monitoring".into(),
        kube_version: "v1.33.0".into(),
        api_versions: Vec::new(),
        seed: 1,
        now: 0,
        cluster: None,
        limits: Default::default(),
    };
    // Without those subcharts, their parts of the chart are off.
    let values = serde_json::json!({
        "kubeStateMetrics": {"enabled": false}, "nodeExporter": {"enabled": false},
        "grafana": {"enabled": false}, "windowsMonitoring": {"enabled": false},
    });
    let manifests = render(&chart, &values, &release).expect("render");
    let text: String = manifests
        .iter()
        .map(|m| format!("---\n{}\n", m.text))
        .collect();
    let objects = objects(&text);
    let service = &objects[&(
        "Service".to_string(),
        "kube-system".to_string(),
        "kps-kube-prometheus-stack-kube-controller-manager".to_string(),
    )][0];
    assert_eq!(service["spec"]["ports"][0]["port"], 10257, "{service}");
    assert_eq!(
        service["spec"]["ports"][0]["targetPort"], 10257,
        "{service}"
    );
}
