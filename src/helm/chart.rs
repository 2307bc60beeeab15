//! One chart rendered as `helm template` renders it: values coalesced in Helm's order, the
//! built-in objects (`.Values`, `.Release`, `.Chart`, `.Capabilities`, `.Template`,
//! `.Files`), every template parsed into one set (partials `_*.tpl` define only,
//! `NOTES.txt` not rendered), each rendered template's text with `<no value>` removed.
//! Pure: the caller reads the chart's files ([`Chart`]) and supplies the seed for Sprig's
//! random functions.

use super::funcs;
use super::template::{Engine, TemplateError, Value};
use std::collections::BTreeMap;

/// A chart's files, as read from its directory.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    /// `Chart.yaml`, as JSON.
    pub metadata: serde_json::Value,
    /// `values.yaml`, as JSON (null when the chart has none).
    pub values: serde_json::Value,
    /// Every other file, by its path relative to the chart directory (`templates/x.yaml`,
    /// `crds/a.yaml`, `files/conf.ini`).
    pub files: BTreeMap<String, String>,
}

impl Chart {
    pub fn name(&self) -> &str {
        self.metadata
            .get("name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    }
}

/// The charts of a repository, by directory relative to its root.
pub type Charts = BTreeMap<std::path::PathBuf, Chart>;

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
}

/// One rendered template: its path in the chart (`templates/deployment.yaml`) and text.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub template: String,
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
}

/// Helm's value coalescing: `overrides` over `base`; maps merge key by key, anything else
/// replaces, and a `null` override deletes the default.
pub fn coalesce(base: &serde_json::Value, overrides: &serde_json::Value) -> serde_json::Value {
    match (base, overrides) {
        (serde_json::Value::Object(b), serde_json::Value::Object(o)) => {
            let mut out = b.clone();
            for (key, value) in o {
                if value.is_null() {
                    out.remove(key);
                    continue;
                }
                let merged = match out.get(key) {
                    Some(existing) => coalesce(existing, value),
                    None => value.clone(),
                };
                out.insert(key.clone(), merged);
            }
            serde_json::Value::Object(out)
        }
        (_, serde_json::Value::Null) => base.clone(),
        (_, o) => o.clone(),
    }
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

/// `.Chart`: Chart.yaml's fields under the Go names of Helm's `chart.Metadata`.
fn chart_object(metadata: &serde_json::Value) -> Value {
    let mut map = BTreeMap::new();
    for key in [
        "name",
        "version",
        "appVersion",
        "description",
        "type",
        "kubeVersion",
        "home",
        "icon",
    ] {
        map.insert(go_name(key), Value::str(""));
    }
    if let Some(fields) = metadata.as_object() {
        for (key, value) in fields {
            map.insert(go_name(key), Value::from_json(value, false));
        }
    }
    Value::map(map)
}

fn go_name(key: &str) -> String {
    match key {
        "apiVersion" => "APIVersion".into(),
        _ => {
            let mut chars = key.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        }
    }
}

/// FNV-1a of `text`: mixed into the run's seed so that each release and template draws its
/// own random values.
fn seed_of(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether an object is a chart test (`helm.sh/hook: test`, or Helm 2's `test-success`,
/// which Helm 3 still reads as one): tend never renders those, like `--skip-tests`.
pub fn is_test_hook(object: &serde_json::Value) -> bool {
    object
        .pointer("/metadata/annotations/helm.sh~1hook")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|hooks| {
            hooks
                .split(',')
                .any(|h| matches!(h.trim(), "test" | "test-success"))
        })
}

/// Renders every template of `chart` with `values` (already coalesced over the chart's
/// defaults by the caller with [`coalesce`]).
pub fn render(
    chart: &Chart,
    values: &serde_json::Value,
    release: &Release,
) -> Result<Vec<Manifest>, ChartError> {
    let name = chart.name().to_string();
    if name.is_empty() {
        return Err(ChartError::NoName { chart: "?".into() });
    }
    let template_error = |source| ChartError::Template {
        chart: name.clone(),
        source,
    };
    let mut engine = Engine::new();
    funcs::register(&mut engine);
    funcs::register_random(&mut engine, release.seed);
    let release_seed = seed_of(&format!("{}/{}", release.namespace, release.name));
    let release = &Release {
        seed: release.seed ^ release_seed,
        ..release.clone()
    };

    // Helm parses the deepest paths first and, at one depth, in reverse order; a later
    // `define` of the same name wins.
    let mut templates: Vec<&String> = chart
        .files
        .keys()
        .filter(|p| p.starts_with("templates/"))
        .collect();
    templates.sort_by(|a, b| {
        let (da, db) = (a.matches('/').count(), b.matches('/').count());
        db.cmp(&da).then_with(|| b.cmp(a))
    });
    for path in &templates {
        engine
            .add(&format!("{name}/{path}"), &chart.files[*path])
            .map_err(template_error)?;
    }

    let (major, minor) = {
        let v = release.kube_version.trim_start_matches('v');
        let mut parts = v.split('.');
        (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        )
    };
    let mut api_versions: Vec<Value> = BUILTIN_API_VERSIONS
        .iter()
        .map(|v| Value::str(*v))
        .collect();
    api_versions.extend(release.api_versions.iter().map(|v| Value::str(v.as_str())));
    let capabilities = text_map(&[
        (
            "KubeVersion",
            text_map(&[
                ("Version", Value::str(release.kube_version.as_str())),
                ("GitVersion", Value::str(release.kube_version.as_str())),
                ("Major", Value::str(major)),
                ("Minor", Value::str(minor)),
            ]),
        ),
        ("APIVersions", Value::list(api_versions)),
    ]);
    let release_object = text_map(&[
        ("Name", Value::str(release.name.as_str())),
        ("Namespace", Value::str(release.namespace.as_str())),
        ("Service", Value::str("Helm")),
        ("IsInstall", Value::Bool(true)),
        ("IsUpgrade", Value::Bool(false)),
        ("Revision", Value::Int(1)),
    ]);
    let files = Value::map(
        chart
            .files
            .iter()
            .filter(|(p, _)| !p.starts_with("templates/"))
            .map(|(p, text)| (p.clone(), Value::str(text.as_str())))
            .collect(),
    );
    let values = Value::from_json_values(values);
    let chart_value = chart_object(&chart.metadata);

    let mut out = Vec::new();
    for path in chart.files.keys().filter(|p| p.starts_with("templates/")) {
        let base = path.rsplit('/').next().unwrap_or(path);
        if base.starts_with('_') || base == "NOTES.txt" {
            continue;
        }
        let full = format!("{name}/{path}");
        let dot = text_map(&[
            ("Values", values.clone()),
            ("Release", release_object.clone()),
            ("Chart", chart_value.clone()),
            ("Capabilities", capabilities.clone()),
            ("Files", files.clone()),
            (
                "Template",
                text_map(&[
                    ("Name", Value::str(full.as_str())),
                    ("BasePath", Value::str(format!("{name}/templates"))),
                ]),
            ),
        ]);
        funcs::register_random(&mut engine, release.seed ^ seed_of(&full));
        let text = engine.execute(&full, dot).map_err(template_error)?;
        out.push(Manifest {
            template: path.clone(),
            text: text.replace("<no value>", ""),
            random: funcs::random_used(),
        });
    }
    Ok(out)
}
