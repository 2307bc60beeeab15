//! What a render is asked for: the cluster (and which documents target it), the default
//! namespace, the keys of encrypted files, the seed of Helm's random functions and what
//! charts see of the cluster.

use crate::helm::lookup::ClusterFacts;
use crate::object::Object;
use crate::sops::Keys;
use std::sync::Arc;

/// Annotation limiting a document to some clusters: `tend.dev/clusters: "dc1,dc2"`.
pub const CLUSTERS_ANNOTATION: &str = "tend.dev/clusters";

#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// The cluster being rendered for (`--cluster`); targeted documents need it to match.
    pub cluster: Option<String>,
    /// Namespace given to namespaced objects that have none (`--namespace`).
    pub default_namespace: String,
    /// Keys for SOPS-encrypted files (README "Encrypted secrets (SOPS)"); none by default.
    pub keys: Arc<Keys>,
    /// Seed of the random functions of Helm charts (`randAlphaNum`, ...): chosen at random
    /// by each run, so their values are never predictable (and change from run to run).
    pub helm_seed: u64,
    /// Whether `helm_seed` is the cluster's stored seed: then renders that drew random values
    /// may be kept, sealed with it (a throwaway seed's draws are never kept).
    pub helm_seed_kept: bool,
    /// What `.Capabilities.KubeVersion` of a chart reports offline, when its HelmChart names
    /// none (`tend render --kube-version`).
    pub kube_version: Option<String>,
    /// What Helm's `now` gives charts (Unix seconds): the commit's time when the source is
    /// a git commit (so it renders the same on every run), else the run's start.
    pub now: i64,
    /// The cluster as charts see it (`.Capabilities`, `lookup`), when connected.
    pub helm_cluster: Option<Arc<ClusterFacts>>,
    /// Renders of Helm releases kept from earlier runs, read for this render (and the renders
    /// it keeps); none: every release renders.
    pub kept_renders: Option<Arc<super::helm_cache::KeptRenders>>,
    /// Also print each HelmChart's release as `helm template` prints it
    /// (`tend render --helm-template`): see `Rendered::helm_template`.
    pub helm_template: bool,
    /// Logins for chart repositories and OCI registries (`--helm-credentials`,
    /// `--helm-credentials-secret`, Helm's registry config); their Debug shows no password.
    pub chart_credentials: Arc<crate::source::charts::credentials::Credentials>,
    /// What each Helm release's render may spend (`--helm-max-steps`, `--helm-max-bytes`).
    pub helm_limits: crate::helm::template::RenderLimits,
    /// Apply Flux's and Argo CD's own objects as ordinary objects, and expand none of them
    /// (`--apply-controller-objects`).
    pub apply_controller_objects: bool,
    /// The namespace of namespaced objects without one, by source file, where it is not
    /// `default_namespace` (the files of an Argo CD Application: its destination namespace).
    pub file_namespaces: Arc<std::collections::HashMap<std::path::PathBuf, String>>,
    /// The files Flux's and Argo CD's units produced, by label, with each unit's wave (its
    /// depth in the `dependsOn` graph): their objects without a wave of their own are applied
    /// in it, and a namespace on a cluster-scoped object is dropped, as the controllers'
    /// clients drop it.
    pub unit_files: Arc<Vec<(std::path::PathBuf, i64)>>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            cluster: None,
            default_namespace: "default".into(),
            keys: Arc::default(),
            helm_seed: 0,
            helm_seed_kept: false,
            kube_version: None,
            now: 0,
            helm_cluster: None,
            kept_renders: None,
            helm_template: false,
            chart_credentials: Arc::default(),
            helm_limits: Default::default(),
            apply_controller_objects: false,
            file_namespaces: Arc::default(),
            unit_files: Arc::default(),
        }
    }
}

/// Whether a document's `tend.dev/clusters` annotation admits `cluster`.
pub(super) fn is_targeted(object: &Object, cluster: Option<&str>) -> bool {
    match object.annotation(CLUSTERS_ANNOTATION) {
        None => true,
        Some(list) => cluster.is_some_and(|c| list.split(',').map(str::trim).any(|item| item == c)),
    }
}
