//! A chart as loaded ([`Chart`]: its files, subcharts in `charts/`) and as one release
//! renders it ([`Node`]: metadata with dependencies, values, enabled subcharts): the data the
//! dependency, values and schema steps share, below all of them.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A chart's files, as read from its directory.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    /// `Chart.yaml`, as JSON.
    pub metadata: serde_json::Value,
    /// `values.yaml`, as JSON (null when the chart has none).
    pub values: serde_json::Value,
    /// Every other file, by its path relative to the chart directory (`templates/x.yaml`,
    /// `crds/a.yaml`, `files/conf.ini`), but those of `charts/`.
    pub files: BTreeMap<String, String>,
    /// The charts of `charts/` (directories and `.tgz` archives), by name.
    pub dependencies: Vec<Chart>,
    /// The raw bytes of the files above that are not UTF-8 text (their text is lossy):
    /// `.Files.AsSecrets` encodes these bytes, as Helm does, and any other read of such a
    /// file through `.Files` is an error rather than the lossy text.
    pub binary: BTreeMap<String, Vec<u8>>,
    /// [`Chart::digest`], computed once (or recalled, see [`OnDisk`]).
    pub digest: std::sync::OnceLock<String>,
    /// For a chart read from a directory: its files' stamps.
    pub on_disk: Option<OnDisk>,
}

/// A chart directory by the stamps of its files, as git's index knows a work tree: the
/// name, device, inode, size, modification and change time (nanoseconds) of every file read
/// (and of `.helmignore`), hashed. A file written changes its change time, which no user can
/// set back, so while the stamps are those of a run that hashed the chart, its files are
/// that run's and so is [`Chart::digest`]: the caller may recall it instead of reading the
/// chart's bytes again. Files stamped in the last moments before that run are not trusted
/// (a write in the same clock tick leaves the times as they were); see `settled`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OnDisk {
    /// sha256 (hex) of the stamps.
    pub stamps: String,
    /// Whether every stamp was older than the read by more than a clock tick could be
    /// (two seconds, which also covers a network file system's clock a little apart).
    pub settled: bool,
    /// How many of [`Chart::dependencies`] were read from the directory: those after them
    /// were fetched (a `Chart.yaml` dependency missing from `charts/`) and are not stamped.
    pub dependencies: usize,
}

impl Chart {
    /// sha256 of everything the chart is made of (Chart.yaml, values, every file, its
    /// subcharts'), hex: what a render of it is cached under.
    pub fn digest(&self) -> &str {
        self.digest.get_or_init(|| {
            use sha2::Digest;
            let mut hash = sha2::Sha256::new();
            let mut field = |bytes: &[u8]| {
                // Length-prefixed, so no two charts hash the same bytes.
                hash.update((bytes.len() as u64).to_le_bytes());
                hash.update(bytes);
            };
            field(self.metadata.to_string().as_bytes());
            field(self.values.to_string().as_bytes());
            for (path, text) in &self.files {
                field(path.as_bytes());
                match self.binary.get(path) {
                    Some(bytes) => field(bytes),
                    None => field(text.as_bytes()),
                }
            }
            for dependency in &self.dependencies {
                field(dependency.digest().as_bytes());
            }
            hex::encode(hash.finalize())
        })
    }

    pub fn name(&self) -> &str {
        self.metadata
            .get("name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    }
}

#[derive(Debug, Clone, Default)]
pub struct Dependency {
    pub name: String,
    pub version: String,
    pub repository: String,
    pub condition: String,
    pub tags: Vec<String>,
    pub alias: String,
    pub enabled: bool,
    pub import_values: Vec<Value>,
}

impl Dependency {
    fn parse(value: &Value) -> Dependency {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let list = |key: &str| value.get(key).and_then(Value::as_array).cloned();
        Dependency {
            name: text("name"),
            version: text("version"),
            repository: text("repository"),
            condition: text("condition"),
            tags: list("tags")
                .unwrap_or_default()
                .iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect(),
            alias: text("alias"),
            enabled: false,
            import_values: list("import-values").unwrap_or_default(),
        }
    }
}

/// A chart as one release renders it: its (possibly aliased) metadata, its values (with
/// imported ones) and its enabled subcharts.
#[derive(Debug, Clone)]
pub struct Node<'a> {
    pub chart: &'a Chart,
    pub metadata: Value,
    pub values: Value,
    /// `dependencies` of the metadata; `None` when the chart declares none.
    pub reqs: Option<Vec<Dependency>>,
    pub deps: Vec<Node<'a>>,
}

impl<'a> Node<'a> {
    /// The chart and every chart in its `charts/`, as loaded.
    pub fn new(chart: &'a Chart) -> Node<'a> {
        let mut metadata = chart.metadata.clone();
        // A v1 chart lists its dependencies in requirements.yaml (Helm reads it for v2 too).
        if let Some(reqs) = chart
            .files
            .get("requirements.yaml")
            .and_then(|t| crate::yaml::parse_value(t))
            .and_then(|v| v.get("dependencies").cloned())
        {
            if let Value::Object(m) = &mut metadata {
                m.insert("dependencies".into(), reqs);
            }
        }
        let reqs = metadata
            .get("dependencies")
            .and_then(Value::as_array)
            .map(|list| list.iter().map(Dependency::parse).collect());
        Node {
            chart,
            values: match &chart.values {
                Value::Object(_) => chart.values.clone(),
                _ => Value::Object(Map::new()),
            },
            metadata,
            reqs,
            deps: chart.dependencies.iter().map(Node::new).collect(),
        }
    }

    pub fn name(&self) -> &str {
        self.metadata
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub(super) fn version(&self) -> &str {
        self.metadata
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub fn is_library(&self) -> bool {
        self.metadata.get("type").and_then(Value::as_str) == Some("library")
    }
}
