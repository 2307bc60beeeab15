//! What a run is, decided before any I/O it does not need: a [`Run`] is a mode and one
//! [`ClusterRun`] per cluster; a cluster run is where its desired state comes from, how to
//! reach the cluster, and what must be read from the cluster before the source can be (a
//! Secret of keys, a Secret of chart logins). Once the source is read, its [`Unit`]s say what
//! each producer of objects needs from the cluster, and the executor ([`super::executor`])
//! orders the run by that alone.

use crate::apply::engine::EngineOptions;
use crate::cluster::Access;
use crate::render::RenderOptions;
use crate::report::run::Mode;
use crate::source::SourceOptions;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One run of `diff` or `apply`.
#[derive(Debug, Clone)]
pub struct Run {
    pub mode: Mode,
    pub clusters: Vec<ClusterRun>,
    /// Clusters run at once (`--parallel`).
    pub parallel: usize,
    /// Start no further cluster once one failed (`--fail-fast`).
    pub fail_fast: bool,
}

/// Everything one cluster's part of a run needs, built once from flags and environment.
#[derive(Debug, Clone)]
pub struct ClusterRun {
    /// How the cluster is reached.
    pub target: Access,
    pub source: SourceOptions,
    pub render: RenderOptions,
    /// Secrets read once connected and before the source is read, since reading it (a
    /// kustomize build of encrypted inputs, a chart from a private repository) needs them.
    pub before_source: SecretReads,
    pub engine: EngineOptions,
    /// A kubeconfig kept in a Secret of another cluster (a fleet's `kubeconfigSecretRef`),
    /// read before connecting; `target` then reaches the cluster with it.
    pub kubeconfig_secret: Option<KubeconfigSecret>,
}

/// A Secret holding a cluster's kubeconfig, in the cluster `hub` reaches.
#[derive(Debug, Clone)]
pub struct KubeconfigSecret {
    pub hub: Access,
    pub namespace: String,
    pub name: String,
    /// The keys that may hold the kubeconfig, the first present read (Flux: `value`, else
    /// `value.yaml`).
    pub keys: Vec<String>,
}

/// Secrets named by flags, `(namespace, name)` each.
#[derive(Debug, Clone, Default)]
pub struct SecretReads {
    /// `--decryption-secret`: keys of SOPS-encrypted files.
    pub decryption_keys: Option<(String, String)>,
    /// `--helm-credentials-secret`: logins of chart repositories and registries.
    pub chart_credentials: Option<(String, String)>,
    /// `--trusted-keys-secret`: keys `--verify-signatures` trusts.
    pub trusted_keys: Option<(String, String)>,
}

impl SecretReads {
    pub fn is_empty(&self) -> bool {
        self.decryption_keys.is_none()
            && self.chart_credentials.is_none()
            && self.trusted_keys.is_none()
    }
}

impl ClusterRun {
    /// Where kept state between runs lives (git clones, charts, SOPS data keys, renders).
    pub fn cache_dir(&self) -> PathBuf {
        self.source
            .cache_dir
            .clone()
            .unwrap_or_else(crate::source::default_cache_dir)
    }

    /// Whether `apply` writes (neither a diff nor a dry run).
    pub fn writes(&self, mode: Mode) -> bool {
        mode == Mode::Apply && !self.engine.dry_run
    }
}

/// What one source produces, once the source is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    pub producer: Producer,
    /// Its directory or file, relative to the walked directory (`.` for the plain files).
    pub name: String,
    pub needs: Needs,
}

/// The kinds of producers of desired objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Producer {
    /// The plain manifests of the walked directory.
    Files,
    /// A kustomize build of one directory.
    KustomizeBuild,
    /// A `HelmChart` object's release.
    HelmChart,
    /// A Flux or Argo CD unit, expanded into files of the source (`source::units`).
    ControllerUnit(crate::source::units::Controller),
}

/// What a unit needs from the cluster to render.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// The server's version and the APIs it serves (Helm's `.Capabilities`), and perhaps its
    /// objects (`lookup`, known once rendered) and the seed of random functions: it renders
    /// once connected, or while connecting as the cluster was last seen.
    pub cluster: bool,
}

/// The units of a source read: the plain files as one, one per kustomize build, one per
/// `HelmChart` document. A unit whose text mentions `HelmChart` needs the cluster (a kustomize
/// build may hold one too).
pub fn units(
    walked: &crate::source::walk::Walked,
    expanded: &crate::source::units::Expanded,
) -> Vec<Unit> {
    let mut by_name: BTreeMap<(Producer, String), Needs> = BTreeMap::new();
    for file in &walked.files {
        let (producer, name) = match &file.unit {
            Some(dir) => (Producer::KustomizeBuild, dir.display().to_string()),
            None => (Producer::Files, ".".to_string()),
        };
        let needs = by_name.entry((producer, name)).or_default();
        needs.cluster |= file.text.contains("HelmChart");
    }
    for (file, docs) in &walked.charts.helm_chart_docs {
        for doc in docs.iter().filter(|d| is_helm_chart(&d.value)) {
            let name = format!("{}:{}", file.display(), doc.line);
            by_name.insert((Producer::HelmChart, name), Needs { cluster: true });
        }
    }
    for unit in &expanded.units {
        let needs = Needs {
            cluster: unit.files.iter().any(|f| {
                walked
                    .files
                    .iter()
                    .any(|w| &w.path == f && w.text.contains("HelmChart"))
            }),
        };
        let producer = Producer::ControllerUnit(unit.id.controller);
        by_name.insert((producer, unit.label()), needs);
    }
    by_name
        .into_iter()
        .map(|((producer, name), needs)| Unit {
            producer,
            name,
            needs,
        })
        .collect()
}

fn is_helm_chart(value: &serde_json::Value) -> bool {
    value.get("apiVersion").and_then(|v| v.as_str()) == Some(crate::API_VERSION)
        && value.get("kind").and_then(|v| v.as_str()) == Some("HelmChart")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceFile;

    fn file(path: &str, text: &str, unit: Option<&str>) -> SourceFile {
        SourceFile {
            path: path.into(),
            text: text.into(),
            unit: unit.map(PathBuf::from),
        }
    }

    #[test]
    fn plain_files_are_one_unit_and_each_build_its_own() {
        let walked = crate::source::walk::Walked {
            files: vec![
                file("a.yaml", "kind: ConfigMap", None),
                file("b.yaml", "kind: Secret", None),
                file("apps (kustomize build)", "kind: HelmChart", Some("apps")),
            ],
            charts: Default::default(),
            problems: Vec::new(),
            namespaces: Default::default(),
        };
        let units = units(&walked, &Default::default());
        assert_eq!(
            units,
            vec![
                Unit {
                    producer: Producer::Files,
                    name: ".".into(),
                    needs: Needs { cluster: false },
                },
                Unit {
                    producer: Producer::KustomizeBuild,
                    name: "apps".into(),
                    needs: Needs { cluster: true },
                },
            ]
        );
    }
}
