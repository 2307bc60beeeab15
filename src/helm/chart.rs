//! One chart rendered as `helm template` renders it: values coalesced in Helm's order, the
//! built-in objects (`.Values`, `.Release`, `.Chart`, `.Capabilities`, `.Template`,
//! `.Files`), every template parsed into one set (partials `_*.tpl` define only,
//! `NOTES.txt` not rendered), each rendered template's text with `<no value>` removed.
//! Pure: the caller reads the chart's files ([`Chart`]) and supplies the seed for Sprig's
//! random functions.

use super::deps;
use super::facts::LookupKey;
use super::funcs;
use super::node::Node;
pub use super::node::{Chart, OnDisk};
use super::template::value::Struct;
use super::template::{gofmt, Engine, TemplateError, Value};
use super::values::coalesce_values;
use std::collections::{BTreeMap, BTreeSet};

/// What the source stage read for the `HelmChart` objects of a repository.
#[derive(Debug, Clone, Default)]
pub struct Charts {
    /// The charts, by directory relative to the walked directory.
    pub dirs: BTreeMap<std::path::PathBuf, Chart>,
    /// The values files `HelmChart`s name (`spec.valuesFiles`), by path relative to the
    /// walked directory, as text (SOPS-encrypted ones still encrypted).
    pub values_files: BTreeMap<std::path::PathBuf, String>,
    /// Values files that are there but cannot be read, with why (a named pipe, a symlink
    /// loop): render names the reason at the `HelmChart`, not "no such file".
    pub unreadable_values_files: BTreeMap<std::path::PathBuf, String>,
    /// Charts from chart repositories, by [`remote_key`]; `Err` when fetching failed (the
    /// source stage reported why).
    pub remote: BTreeMap<String, Result<RemoteChart, ()>>,
    /// The `HelmChart` documents of each plain file (not kustomize output), parsed once for
    /// everything that reads them; a file not here was not read by the source stage.
    pub helm_chart_docs: BTreeMap<std::path::PathBuf, Vec<crate::yaml::Document>>,
    /// The charts of [`Charts::dirs`] known so far by their files' stamps only: their
    /// `Chart.yaml` read, no other file (see `source::charts::stamp_chart`). The run reads
    /// them whole before a render that needs more than their kept renders.
    pub unread: BTreeMap<std::path::PathBuf, UnreadChart>,
}

/// Where to read a chart of [`Charts::unread`] from.
#[derive(Debug, Clone, Default)]
pub struct UnreadChart {
    /// The root symlinks in the chart may not lead out of.
    pub root: std::path::PathBuf,
    pub dir: std::path::PathBuf,
}

/// A chart fetched from a chart repository.
#[derive(Debug, Clone)]
pub struct RemoteChart {
    pub chart: Chart,
    /// The version `spec.version` resolved to.
    pub version: String,
    /// `sha256:<hex>` of its archive.
    pub digest: String,
    /// Who signed it, when `spec.verify` asked for a signature.
    pub signed_by: Option<String>,
}

/// How [`Charts::remote`] knows a repository's chart: repository, name and version range.
pub fn remote_key(repository: &str, name: &str, version: &str) -> String {
    format!("{}\n{name}\n{version}", repository.trim_end_matches('/'))
}

/// What `.Release` and `.Capabilities` report.
#[derive(Debug, Clone)]
pub struct Release {
    pub name: String,
    pub namespace: String,
    /// `v1.33.0`.
    pub kube_version: String,
    /// Extra API versions `.Capabilities.APIVersions.Has` finds, besides the built-in ones.
    pub api_versions: Vec<String>,
    /// Seed of `randAlphaNum` and friends.
    pub seed: u64,
    /// What `now` gives (Unix seconds).
    pub now: i64,
    /// The cluster, when tend is connected: what `.Capabilities.APIVersions` lists (instead
    /// of the built-in versions) and what `lookup` finds.
    pub cluster: Option<std::sync::Arc<super::lookup::ClusterFacts>>,
    /// What the render may spend (`--helm-max-steps`, `--helm-max-bytes`).
    pub limits: super::template::RenderLimits,
}

/// One rendered template, or one file of a `crds/` directory: its path in the chart
/// (`templates/deployment.yaml`, `charts/db/templates/db.yaml`, `crds/a.yaml`) and text.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub template: String,
    /// A file of a `crds/` directory (not a template: never rendered).
    pub crd: bool,
    pub text: String,
    /// Whether the template called a random function (`randAlphaNum`, ...).
    pub random: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("chart {chart}: {source}")]
    Template {
        chart: String,
        #[source]
        source: TemplateError,
    },
    #[error("chart {chart}: Chart.yaml has no name")]
    NoName { chart: String },
    #[error("chart {chart}: {message}")]
    Values { chart: String, message: String },
    #[error("chart {chart} is a library chart: it only defines templates for other charts and renders nothing; use it as a dependency of an application chart")]
    Library { chart: String },
    #[error("chart {chart}: values don't meet the specifications of the schema(s) in the following chart(s):\n{message}")]
    Schema { chart: String, message: String },
}

/// Built-in API versions of Kubernetes v1.33, what `helm template --kube-version v1.33.0`
/// reports for `.Capabilities.APIVersions` without a cluster.
const BUILTIN_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "apiextensions.k8s.io/v1",
    "apiregistration.k8s.io/v1",
    "apps/v1",
    "authentication.k8s.io/v1",
    "authorization.k8s.io/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "certificates.k8s.io/v1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "events.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1",
    "networking.k8s.io/v1",
    "node.k8s.io/v1",
    "policy/v1",
    "rbac.authorization.k8s.io/v1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1beta2",
];

fn text_map(entries: &[(&str, Value)]) -> Value {
    Value::map(
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

/// A Go struct value for the template data.
fn go_struct(
    type_name: &'static str,
    fields: Vec<(&str, Value)>,
    (text, fmt): (Option<String>, Option<String>),
    json: serde_json::Value,
) -> Value {
    Value::Struct(std::rc::Rc::new(Struct {
        type_name,
        fields: fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        text,
        fmt,
        json,
    }))
}

/// Fields of a Go struct from a YAML map: `(Go name, yaml key, kind)` where kind says what
/// the Go type's zero value is (`s` string, `b` bool, `l` list, `m` map) and the JSON
/// field is `omitempty` unless the kind is upper-case.
fn struct_fields(
    source: &serde_json::Value,
    spec: &[(&'static str, &'static str, char)],
) -> (Vec<(&'static str, Value)>, serde_json::Value) {
    let mut fields = Vec::new();
    let mut json = serde_json::Map::new();
    for &(go, key, kind) in spec {
        let given = source.get(key).filter(|v| !v.is_null());
        let value = match (given, kind.to_ascii_lowercase()) {
            (Some(v), _) => Value::from_json(v, false),
            (None, 's') => Value::str(""),
            (None, 'b') => Value::Bool(false),
            (None, 'l') => Value::list(Vec::new()),
            (None, _) => Value::empty_map(),
        };
        let empty = !value.truthy();
        if !empty || kind.is_ascii_uppercase() {
            json.insert(key.to_string(), value.to_json());
        }
        fields.push((go, value));
    }
    (fields, serde_json::Value::Object(json))
}

/// `.Chart`: what Helm's engine gives (`struct { chart.Metadata; IsRoot bool }`, Chart.yaml
/// read into `chart.Metadata`). Its fields only (a field it lacks is an error in Go, as it
/// is here), zero values for what Chart.yaml leaves out; maintainers and dependencies are
/// structs too (`.Name`, not `.name`).
fn chart_object(node: &Node, is_root: bool) -> Value {
    let metadata = &node.metadata;
    let (mut fields, json) = struct_fields(
        metadata,
        &[
            ("Name", "name", 'S'),
            ("Home", "home", 's'),
            ("Sources", "sources", 'l'),
            ("Version", "version", 'S'),
            ("Description", "description", 's'),
            ("Keywords", "keywords", 'l'),
            ("Icon", "icon", 's'),
            ("APIVersion", "apiVersion", 'S'),
            ("Condition", "condition", 's'),
            ("Tags", "tags", 's'),
            ("AppVersion", "appVersion", 's'),
            ("Deprecated", "deprecated", 'b'),
            ("Annotations", "annotations", 'm'),
            ("KubeVersion", "kubeVersion", 's'),
            ("Type", "type", 's'),
        ],
    );
    let maintainers = metadata
        .get("maintainers")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .map(|m| {
            let (f, j) = struct_fields(
                m,
                &[
                    ("Name", "name", 's'),
                    ("Email", "email", 's'),
                    ("URL", "url", 's'),
                ],
            );
            go_struct("*chart.Maintainer", f, (None, None), j)
        })
        .collect();
    fields.push(("Maintainers", Value::list(maintainers)));
    let dependencies: Vec<serde_json::Value> = match &node.reqs {
        // As Chart.yaml spells them (the fields below read those keys).
        Some(reqs) => reqs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "name": r.name, "version": r.version, "repository": r.repository,
                    "condition": r.condition, "tags": r.tags, "enabled": r.enabled,
                    "import-values": r.import_values, "alias": r.alias,
                })
            })
            .collect(),
        None => metadata
            .get("dependencies")
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default(),
    };
    let dependencies = dependencies
        .iter()
        .map(|d| {
            let (f, j) = struct_fields(
                d,
                &[
                    ("Name", "name", 'S'),
                    ("Version", "version", 's'),
                    ("Repository", "repository", 'S'),
                    ("Condition", "condition", 's'),
                    ("Tags", "tags", 'l'),
                    ("Enabled", "enabled", 'b'),
                    ("ImportValues", "import-values", 'l'),
                    ("Alias", "alias", 's'),
                ],
            );
            go_struct("*chart.Dependency", f, (None, None), j)
        })
        .collect();
    fields.push(("Dependencies", Value::list(dependencies)));
    fields.push(("IsRoot", Value::Bool(is_root)));
    let mut json = json;
    for key in ["maintainers", "dependencies"] {
        if let Some(v) = metadata
            .get(key)
            .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        {
            json[key] = v.clone();
        }
    }
    json["IsRoot"] = serde_json::Value::Bool(is_root);
    go_struct(
        "struct { chart.Metadata; IsRoot bool }",
        fields,
        (None, None),
        json,
    )
}

/// FNV-1a of `text`: mixed into the run's seed so that each release and template draws its
/// own random values.
fn seed_of(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A template to run: its full name (`shop/charts/db/templates/db.yaml`), its text and the
/// `.` of its chart.
struct Renderable<'a> {
    name: String,
    text: &'a str,
    dot: Value,
    base_path: String,
}

/// What every template's `.` shares.
struct Shared {
    release: Value,
    capabilities: Value,
}

/// `recAllTpls`: the templates of `node` and its subcharts, each with its chart's `.`
/// (`.Values` of a subchart: its parent's values under its name). Returns the chart's `.`.
fn collect<'a>(
    node: &Node<'a>,
    values: Value,
    path: &str,
    is_root: bool,
    shared: &Shared,
    out: &mut Vec<Renderable<'a>>,
) -> Value {
    let subcharts = Value::empty_map();
    let dot = text_map(&[
        ("Chart", chart_object(node, is_root)),
        ("Files", files_object(node.chart)),
        ("Release", shared.release.clone()),
        ("Capabilities", shared.capabilities.clone()),
        ("Values", values.clone()),
        ("Subcharts", subcharts.clone()),
    ]);
    for dep in &node.deps {
        let sub_values = match &values {
            Value::Map(m) => match m.borrow().get(dep.name()) {
                Some(v @ Value::Map(_)) => v.clone(),
                _ => Value::empty_map(),
            },
            _ => Value::empty_map(),
        };
        let sub_path = format!("{path}/charts/{}", dep.name());
        let sub_dot = collect(dep, sub_values, &sub_path, false, shared, out);
        if let Value::Map(m) = &subcharts {
            m.borrow_mut().insert(dep.name().to_string(), sub_dot);
        }
    }
    for (file, text) in node.chart.files.range("templates/".to_string()..) {
        if !file.starts_with("templates/") {
            break;
        }
        let base = file.rsplit('/').next().unwrap_or(file);
        // A library chart's templates only define; `isTemplateValid` keeps its partials.
        if node.is_library() && !base.starts_with('_') {
            continue;
        }
        out.push(Renderable {
            name: format!("{path}/{file}"),
            text,
            dot: dot.clone(),
            base_path: format!("{path}/templates"),
        });
    }
    dot
}

/// `.Files`: the chart's files that are neither templates nor what Helm's loader reads as
/// the chart's own metadata.
fn files_object(chart: &Chart) -> Value {
    const METADATA: [&str; 4] = [
        "values.schema.json",
        "requirements.yaml",
        "requirements.lock",
        "Chart.lock",
    ];
    Value::map(
        chart
            .files
            .iter()
            .filter(|(p, _)| !p.starts_with("templates/") && !METADATA.contains(&p.as_str()))
            .map(|(p, text)| {
                let value = match chart.binary.get(p) {
                    Some(bytes) => funcs::binary_file(bytes),
                    None => Value::str(text.as_str()),
                };
                (p.clone(), value)
            })
            .collect(),
    )
}

/// `CRDObjects`: the `crds/` files of the chart and its enabled subcharts.
fn crd_files(node: &Node, path: &str, out: &mut Vec<Manifest>) {
    for (file, text) in &node.chart.files {
        let manifest = [".yaml", ".yml", ".json"].iter().any(|e| file.ends_with(e));
        if file.starts_with("crds/") && manifest {
            out.push(Manifest {
                template: format!("{path}{file}"),
                crd: true,
                text: text.clone(),
                random: false,
            });
        }
    }
    for dep in &node.deps {
        crd_files(dep, &format!("{path}charts/{}/", dep.name()), out);
    }
}

/// What a render depended on besides its chart, values and release.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Depended {
    /// It asked for the time (`now` and the functions that default to it).
    pub on_time: bool,
    /// It read the cluster with `lookup`.
    pub on_cluster: bool,
    /// Lookups the release's cluster facts did not answer yet: read them and render again.
    pub lookups_missed: BTreeSet<LookupKey>,
}

/// Renders `chart` as `helm template` does with the user's `values` (the values files and
/// inline values merged, see [`super::values::merge_maps`]): dependencies processed,
/// values coalesced and checked against the charts' schemas, every template run. Returns
/// the rendered templates, then the `crds/` files.
pub fn render(
    chart: &Chart,
    user_values: &serde_json::Value,
    release: &Release,
) -> Result<Vec<Manifest>, ChartError> {
    render_reporting(chart, user_values, release).0
}

/// [`render`], and what the render depended on (read from its engine's context).
pub fn render_reporting(
    chart: &Chart,
    user_values: &serde_json::Value,
    release: &Release,
) -> (Result<Vec<Manifest>, ChartError>, Depended) {
    let mut engine = Engine::new();
    let rendered = render_on(&mut engine, chart, user_values, release);
    let context = engine.context();
    let depended = Depended {
        on_time: context.now_used(),
        on_cluster: context.looked_up(),
        lookups_missed: context.take_missed(),
    };
    (rendered, depended)
}

fn render_on(
    engine: &mut Engine,
    chart: &Chart,
    user_values: &serde_json::Value,
    release: &Release,
) -> Result<Vec<Manifest>, ChartError> {
    let name = chart.name().to_string();
    if name.is_empty() {
        return Err(ChartError::NoName { chart: "?".into() });
    }
    let values_error = |message| ChartError::Values {
        chart: name.clone(),
        message,
    };
    let mut root = Node::new(chart);
    if root.is_library() {
        return Err(ChartError::Library { chart: name });
    }
    // Helm's CheckDependencies: every dependency must be vendored, enabled or not.
    let missing: Vec<&str> = root
        .reqs
        .iter()
        .flatten()
        .filter(|r| !chart.dependencies.iter().any(|d| d.name() == r.name))
        .map(|r| r.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(values_error(format!(
            "found in Chart.yaml, but missing in charts/ directory: {}; run `helm dependency build` in the chart and commit its charts/ directory",
            missing.join(", ")
        )));
    }
    // Helm's install (and template) action: the chart's kubeVersion must admit the cluster's.
    let kube_version = chart
        .metadata
        .get("kubeVersion")
        .and_then(serde_json::Value::as_str);
    if let Some(constraint) = kube_version.filter(|c| !c.trim().is_empty()) {
        if !super::funcs::semver_compare(constraint, &release.kube_version).unwrap_or(false) {
            return Err(values_error(format!(
                "chart requires kubeVersion: {constraint} which is incompatible with Kubernetes {}; set the HelmChart's kubeVersion (or --kube-version) if the cluster is newer",
                release.kube_version
            )));
        }
    }
    deps::process(&mut root, user_values).map_err(values_error)?;
    let values = coalesce_values(&root, user_values, false).map_err(values_error)?;
    let problems = super::schema::validate(&root, &values);
    if !problems.is_empty() {
        return Err(ChartError::Schema {
            chart: name,
            message: problems.join("\n"),
        });
    }
    let template_error = |source| ChartError::Template {
        chart: name.clone(),
        source,
    };
    funcs::register(engine);
    funcs::register_random(engine, release.seed);
    super::lookup::register(engine, release.cluster.clone());
    engine.context().set_now(release.now);
    engine.context().start_budget(release.limits);
    let release_seed = seed_of(&format!("{}/{}", release.namespace, release.name));
    let release = &Release {
        seed: release.seed ^ release_seed,
        ..release.clone()
    };
    let shared = Shared {
        release: text_map(&[
            ("Name", Value::str(release.name.as_str())),
            ("Namespace", Value::str(release.namespace.as_str())),
            ("Service", Value::str("Helm")),
            ("IsInstall", Value::Bool(true)),
            ("IsUpgrade", Value::Bool(false)),
            ("Revision", Value::int(1)),
        ]),
        capabilities: capabilities(release),
    };
    let mut templates = Vec::new();
    let values = Value::from_json_values(&serde_json::Value::Object(values));
    collect(&root, values, &name, true, &shared, &mut templates);

    // Helm parses the deepest paths first and, at one depth, in reverse order; a later
    // `define` of the same name wins (so a parent's defines win over its subcharts').
    let mut order: Vec<usize> = (0..templates.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&templates[a].name, &templates[b].name);
        let (da, db) = (a.matches('/').count(), b.matches('/').count());
        db.cmp(&da).then_with(|| b.cmp(a))
    });
    for &i in &order {
        let t = &templates[i];
        engine.add(&t.name, t.text).map_err(template_error)?;
    }

    let prefix = format!("{name}/");
    let mut out = Vec::new();
    for &i in &order {
        let t = &templates[i];
        let base = t.name.rsplit('/').next().unwrap_or(&t.name);
        if base.starts_with('_') || base == "NOTES.txt" {
            continue;
        }
        // One `.` per chart, shared by its templates as Helm shares its map: `.Template` is
        // set on it in place, and what a template `set`s on `$` (istio's profiles replace
        // `$.Values`) the templates after it see.
        if let Value::Map(m) = &t.dot {
            m.borrow_mut().insert(
                "Template".into(),
                text_map(&[
                    ("Name", Value::str(t.name.as_str())),
                    ("BasePath", Value::str(t.base_path.as_str())),
                ]),
            );
        }
        funcs::register_random(engine, release.seed ^ seed_of(&t.name));
        let text = engine
            .execute(&t.name, t.dot.clone())
            .map_err(template_error)?;
        out.push(Manifest {
            template: t.name.strip_prefix(&prefix).unwrap_or(&t.name).to_string(),
            crd: false,
            text: helm_documents(&text.replace("<no value>", "")),
            random: engine.context().random_used(),
        });
    }
    // The templates' `.` hold `.Files`, a copy of every chart's files (the CRDs among
    // them): gone before the CRDs are copied out, so the two copies are never alive together.
    drop(templates);
    crd_files(&root, "", &mut out);
    Ok(out)
}

/// A template's output as Helm keeps it (`releaseutil.SplitManifests`): split where the
/// regex `(?:^|\s*\n)---\s*` matches, each document trimmed of surrounding whitespace
/// (a `|+` block at a document's end loses its trailing newlines), empty ones dropped;
/// joined again with `---` lines for tend's own document splitter.
fn helm_documents(text: &str) -> String {
    split_documents(text).join("\n---\n")
}

/// The documents of a template's output as Helm's `releaseutil.SplitManifests` splits them:
/// at every `---` that starts the text or a line, each trimmed (Go's TrimSpace), empty
/// ones dropped.
pub fn split_documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut rest = text.trim();
    loop {
        // Whitespace around a separator is the separator's or trimmed with the documents.
        let found = if rest.starts_with("---") {
            Some(0)
        } else {
            rest.find("\n---").map(|i| i + 1)
        };
        let Some(at) = found else {
            docs.push(rest);
            break;
        };
        docs.push(&rest[..at]);
        rest = &rest[at + 3..];
    }
    docs.into_iter()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect()
}

/// `.Capabilities`: of `helm template --kube-version` offline, of the cluster when connected.
fn capabilities(release: &Release) -> Value {
    let (major, minor) = {
        let v = release.kube_version.trim_start_matches('v');
        let mut parts = v.split('.');
        (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        )
    };
    let mut api_versions: Vec<Value> = match &release.cluster {
        Some(cluster) => cluster
            .api_versions
            .iter()
            .map(|v| Value::str(v.as_str()))
            .collect(),
        None => BUILTIN_API_VERSIONS
            .iter()
            .map(|v| Value::str(*v))
            .collect(),
    };
    api_versions.extend(release.api_versions.iter().map(|v| Value::str(v.as_str())));
    let kube = &release.kube_version;
    let kube_version = go_struct(
        "chartutil.KubeVersion",
        vec![
            ("Version", Value::str(kube.as_str())),
            ("Major", Value::str(major.as_str())),
            ("Minor", Value::str(minor.as_str())),
            // Methods: `String` and the deprecated `GitVersion` give Version.
            ("String", Value::str(kube.as_str())),
            ("GitVersion", Value::str(kube.as_str())),
        ],
        // `String` has a pointer receiver: an action prints the version, `printf`'s `%v`
        // of the struct its fields.
        (
            Some(kube.clone()),
            Some(format!("{{{kube} {major} {minor}}}")),
        ),
        serde_json::json!({"Version": kube, "Major": major, "Minor": minor}),
    );
    // The Helm whose output tend reproduces: the release binary of v3.19.5 (its release
    // build sets the version and commit; the corpus's second set was rendered by it).
    let helm = [
        ("Version", "version", "v3.19.5"),
        (
            "GitCommit",
            "git_commit",
            "4a19a5b6fb912c5c28a779e73f2e0880d9e239a4",
        ),
        ("GitTreeState", "git_tree_state", "clean"),
        ("GoVersion", "go_version", "go1.24.11"),
    ];
    let helm_text = format!(
        "{{{}}}",
        helm.iter()
            .map(|(_, _, v)| *v)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let helm_version = go_struct(
        "version.BuildInfo",
        helm.iter()
            .map(|(go, _, v)| (*go, Value::str(*v)))
            .collect(),
        (Some(helm_text.clone()), Some(helm_text.clone())),
        helm.iter()
            .filter(|(_, _, v)| !v.is_empty())
            .map(|(_, key, v)| (key.to_string(), serde_json::json!(v)))
            .collect(),
    );
    let json = serde_json::json!({
        "APIVersions": Value::list(api_versions.clone()).to_json(),
        "KubeVersion": kube_version.to_json(),
        "HelmVersion": helm_version.to_json(),
    });
    // Fields in declaration order (KubeVersion, APIVersions, HelmVersion); inside a struct
    // fmt prints KubeVersion's fields, its String having a pointer receiver.
    let inner = format!(
        "{{{{{kube} {major} {minor}}} {} {helm_text}}}",
        gofmt::display(&Value::list(api_versions.clone()))
    );
    go_struct(
        "*chartutil.Capabilities",
        vec![
            ("APIVersions", Value::list(api_versions)),
            ("KubeVersion", kube_version),
            ("HelmVersion", helm_version),
        ],
        (Some(inner.clone()), Some(format!("&{inner}"))),
        json,
    )
}

#[cfg(test)]
mod tests {
    use super::{helm_documents, render, Chart, Release};
    use serde_json::json;

    /// Renders one template of a chart with Chart.yaml `metadata`.
    fn render_one(metadata: serde_json::Value, template: &str) -> Result<String, String> {
        let mut chart = Chart {
            metadata,
            ..Chart::default()
        };
        chart
            .files
            .insert("templates/t.yaml".into(), template.to_string());
        let release = Release {
            name: "rel".into(),
            namespace: "ns1".into(),
            kube_version: "v1.33.0".into(),
            api_versions: vec!["x.io/v1".into()],
            seed: 1,
            now: 0,
            cluster: None,
            limits: Default::default(),
        };
        render(&chart, &json!({}), &release)
            .map(|m| m.into_iter().map(|m| m.text).collect())
            .map_err(|e| e.to_string())
    }

    fn chart_yaml() -> serde_json::Value {
        json!({"apiVersion": "v2", "name": "c", "version": "1.2.3", "appVersion": "9",
               "maintainers": [{"name": "Ann", "email": "a@x"}]})
    }

    #[test]
    fn capabilities_and_chart_are_go_structs() {
        assert_eq!(
            render_one(
                chart_yaml(),
                "{{ .Capabilities.KubeVersion.Version }} {{ .Capabilities.KubeVersion }} {{ .Capabilities.KubeVersion.Minor }} {{ .Capabilities.KubeVersion.GitVersion }} {{ .Capabilities.APIVersions.Has \"x.io/v1\" }} {{ .Chart.Name }}-{{ .Chart.Version }} {{ .Chart.AppVersion }} {{ .Chart.IsRoot }} {{ (index .Chart.Maintainers 0).Name }} {{ .Chart.Keywords }} {{ .Chart.Description | quote }} {{ kindOf .Capabilities }} {{ typeOf .Capabilities.KubeVersion }}"
            )
            .unwrap(),
            "v1.33.0 v1.33.0 33 v1.33.0 true c-1.2.3 9 true Ann [] \"\" ptr chartutil.KubeVersion"
        );
        // A field a struct lacks is Go's error, never an empty value.
        for (src, field, ty) in [
            (
                "{{ .Capabilities.KubeVersion.Patch }}",
                "Patch",
                "chartutil.KubeVersion",
            ),
            ("{{ .Capabilities.Foo }}", "Foo", "*chartutil.Capabilities"),
            (
                "{{ .Chart.version }}",
                "version",
                "struct { chart.Metadata; IsRoot bool }",
            ),
        ] {
            let err = render_one(chart_yaml(), src).unwrap_err();
            assert!(
                err.contains(&format!("can't evaluate field {field} in type {ty}")),
                "{src}: {err}"
            );
        }
        // fmt's text: an action uses KubeVersion's String (its address is taken), a function
        // argument is a copy printed field by field.
        assert_eq!(
            render_one(chart_yaml(), "{{ printf \"%v|%s\" .Capabilities.KubeVersion .Capabilities.KubeVersion }} {{ toString .Capabilities.KubeVersion }} {{ .Capabilities.HelmVersion }}").unwrap(),
            "{v1.33.0 1 33}|{v1.33.0 1 33} {v1.33.0 1 33} {v3.19.5 4a19a5b6fb912c5c28a779e73f2e0880d9e239a4 clean go1.24.11}"
        );
        assert!(render_one(chart_yaml(), "{{ .Capabilities }}")
            .unwrap()
            .starts_with("{{v1.33.0 1 33} [v1 admissionregistration.k8s.io/v1 "));
        // Go would print pointers for .Chart's maintainers: refused, not approximated.
        assert!(render_one(chart_yaml(), "{{ .Chart }}").is_err());
        // Written as encoding/json writes it.
        assert_eq!(
            render_one(
                chart_yaml(),
                "{{ .Capabilities.KubeVersion | toJson }} {{ .Chart | toJson }}"
            )
            .unwrap(),
            r#"{"Major":"1","Minor":"33","Version":"v1.33.0"} {"IsRoot":true,"apiVersion":"v2","appVersion":"9","maintainers":[{"email":"a@x","name":"Ann"}],"name":"c","version":"1.2.3"}"#
        );
    }

    /// Values files and `fromYaml` text are YAML 1.1 as Helm reads them, every number a
    /// float64 (sigs.k8s.io/yaml goes through JSON).
    #[test]
    fn values_are_yaml_1_1_with_float64_numbers() {
        let mut chart = Chart {
            metadata: chart_yaml(),
            values: crate::yaml::parse_helm_yaml(
                "enabled: yes\nflag: on\nmode: 0644\nname: 'yes'\nbig: 1000000\n",
            )
            .unwrap(),
            ..Chart::default()
        };
        chart
            .files
            .insert("files/x.yaml".into(), "port: 0x50\ntls: off\n".into());
        chart.files.insert(
            "templates/t.yaml".into(),
            "{{ .Values.enabled }} {{ .Values.flag }} {{ .Values.mode }} {{ kindOf .Values.mode }} {{ .Values.name }} {{ .Values.big }} {{ $f := .Files.Get \"files/x.yaml\" | fromYaml }}{{ $f.port }} {{ $f.tls }} {{ kindOf $f.port }}".into(),
        );
        let release = Release {
            name: "rel".into(),
            namespace: "ns1".into(),
            kube_version: "v1.33.0".into(),
            api_versions: vec![],
            seed: 1,
            now: 0,
            cluster: None,
            limits: Default::default(),
        };
        let text: String = render(&chart, &json!({}), &release)
            .unwrap()
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(text, "true true 420 float64 yes 1e+06 80 false float64");
    }

    /// A file that is not UTF-8 text: AsSecrets encodes its bytes as Helm does, and so do
    /// the encodings and hashes of what `.Files.Get` gives (Go's string of its bytes); any
    /// other read is an error, never its lossy text.
    #[test]
    fn binary_files_are_bytes_or_an_error() {
        let bytes = vec![0xff, 0x00, 0xfe, b'a'];
        let mut chart = Chart {
            metadata: chart_yaml(),
            ..Chart::default()
        };
        chart.files.insert(
            "files/k.jks".into(),
            String::from_utf8_lossy(&bytes).into_owned(),
        );
        chart.binary.insert("files/k.jks".into(), bytes);
        let release = Release {
            name: "rel".into(),
            namespace: "ns1".into(),
            kube_version: "v1.33.0".into(),
            api_versions: vec![],
            seed: 1,
            now: 0,
            cluster: None,
            limits: Default::default(),
        };
        let run = |template: &str| {
            let mut chart = chart.clone();
            chart
                .files
                .insert("templates/t.yaml".into(), template.into());
            render(&chart, &json!({}), &release)
                .map(|m| m.into_iter().map(|m| m.text).collect::<String>())
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            run("{{ (.Files.Glob \"files/*\").AsSecrets }}").unwrap(),
            "k.jks: /wD+YQ=="
        );
        assert_eq!(
            run(concat!(
                "{{ .Files.Get \"files/k.jks\" | b64enc }} {{ .Files.Get \"files/k.jks\" | b32enc }} ",
                "{{ .Files.Get \"files/k.jks\" | sha256sum }} {{ .Files.Get \"files/k.jks\" | sha1sum }} ",
                "{{ .Files.Get \"files/k.jks\" | adler32sum }} {{ .Files.Get \"files/k.jks\" | typeOf }}"
            ))
            .unwrap(),
            "/wD+YQ== 74AP4YI= c22c16ba4e9e4d71936c09a9b87e664614bc62f237dd51151de76b189c3958d4 4fc802b1cf872cba1f7cddd5574c41aae4ba0f47 106758751 string"
        );
        for (read, says) in [
            (
                "{{ .Files.Get \"files/k.jks\" }}",
                "tend cannot print a chart file that is not UTF-8 text",
            ),
            (
                "{{ .Files.Get \"files/k.jks\" | upper }}",
                "tend passes such bytes to b64enc",
            ),
            (
                "{{ .Files.Get \"files/k.jks\" | quote }}",
                "error calling quote: its argument is a chart file",
            ),
            (
                "{{ list (.Files.Get \"files/k.jks\") | toJson }}",
                "error calling list",
            ),
        ] {
            let err = run(read).unwrap_err();
            assert!(err.contains(says), "{read}: {err}");
        }
        for read in [
            "{{ .Files.GetBytes \"files/k.jks\" }}",
            "{{ .Files.Lines \"files/k.jks\" }}",
            "{{ (.Files.Glob \"files/*\").AsConfig }}",
        ] {
            let err = run(read).unwrap_err();
            assert!(
                err.contains("files/k.jks is not UTF-8 text"),
                "{read}: {err}"
            );
        }
    }

    #[test]
    fn semver_values_have_masterminds_methods() {
        assert_eq!(
            render_one(
                chart_yaml(),
                "{{ $v := semver \"v1.28.3-rc.1+b5\" }}{{ $v.Major }}.{{ $v.Minor }}.{{ $v.Patch }} {{ $v.Prerelease }} {{ $v.Metadata }} {{ $v.Original }} {{ $v }} {{ $v.LessThan (semver \"1.28.3\") }} {{ (semver \"2\").Compare $v }} {{ semver \"1.2\" | toJson }}"
            )
            .unwrap(),
            "1.28.3 rc.1 b5 v1.28.3-rc.1+b5 1.28.3-rc.1+b5 true 1 \"1.2.0\""
        );
        for bad in ["1.2.3.4", "x", "1.2.3-01", "1.2.3-"] {
            let err = render_one(chart_yaml(), &format!("{{{{ semver {bad:?} }}}}")).unwrap_err();
            assert!(err.contains("error calling semver"), "{bad}: {err}");
        }
        let err = render_one(chart_yaml(), "{{ (semver \"1.0.0\").Foo }}").unwrap_err();
        assert!(
            err.contains("can't evaluate field Foo in type *semver.Version"),
            "{err}"
        );
    }

    #[test]
    fn template_output_is_split_and_trimmed_as_helm_keeps_it() {
        assert_eq!(
            helm_documents("\n---\na: |+\n  x\n\n\n--- \n\n---\nb: 1\n  \n"),
            "a: |+\n  x\n---\nb: 1"
        );
        // `---` ends a separator wherever a line starts with it, as Helm's regex does.
        assert_eq!(helm_documents("a: 1\n----\nb: 2"), "a: 1\n---\n-\nb: 2");
        assert_eq!(helm_documents("  \n# only\n"), "# only");
        assert_eq!(helm_documents(""), "");
    }
}
