//! `Fleet` (README "A fleet of clusters"): the clusters one run of `tend diff`/`apply`/`status`
//! covers, given by `--fleet FILE`. Each cluster is reached through a kubeconfig context or a
//! kubeconfig held in a Secret of the cluster tend runs in (hub and spokes, as Flux's
//! `kubeConfig.secretRef`). A Fleet describes the run, not a cluster: found among the
//! repository's files it is checked and never applied.

use super::checks::FieldChecks;
use super::{FieldProblem, Kind, TendKind};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The clusters of a run.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "tend.dev",
    version = "v1alpha1",
    kind = "Fleet",
    derive = "PartialEq",
    shortname = "fl",
    category = "tend",
    printcolumn(name = "AGE", type_ = "date", json_path = ".metadata.creationTimestamp"),
    doc = "The clusters one tend run covers, each by kubeconfig context or kubeconfig Secret (tend)."
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetSpec {
    /// The clusters, in the order reports list them.
    #[schemars(length(min = 1))]
    pub clusters: Vec<FleetCluster>,
}

/// One cluster of a fleet.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetCluster {
    /// The cluster's name: reports name it so, and `tend.dev/clusters` and
    /// `spec.clusters` target it by it.
    #[schemars(length(min = 1), regex(pattern = r"^[^,\s]+$"))]
    pub name: String,
    /// The kubeconfig context that reaches it (default: the cluster's name when no
    /// kubeconfigSecretRef is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// A kubeconfig in a Secret of the cluster tend runs in (its in-cluster account, or
    /// `--kubeconfig`/`--context`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig_secret_ref: Option<KubeconfigSecretRef>,
    /// Labels of the cluster (for generators that select clusters by label).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The directory of the repository this cluster gets (`--path` for it; default `--path`);
    /// `paths` for several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The directories of the repository this cluster gets, read as one desired state
    /// (`clusters/<name>` and what every cluster gets); instead of `path`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// Where a kubeconfig is kept.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeconfigSecretRef {
    pub namespace: String,
    pub name: String,
    /// The Secret's key holding the kubeconfig (default `value`, as Flux and Cluster API).
    #[serde(default = "default_key")]
    pub key: String,
}

fn default_key() -> String {
    "value".to_string()
}

impl Kind for Fleet {
    const KIND: TendKind = TendKind::Fleet;
    type Status = ();

    fn validate(&self) -> Vec<FieldProblem> {
        let mut out = Vec::new();
        let mut checks = FieldChecks { out: &mut out };
        if self.spec.clusters.is_empty() {
            checks.push(&["spec", "clusters"], "must list at least one cluster");
        }
        for (i, cluster) in self.spec.clusters.iter().enumerate() {
            check_cluster(&mut checks, i, cluster, &self.spec.clusters[..i]);
        }
        out
    }
}

fn check_cluster(
    checks: &mut FieldChecks<'_>,
    i: usize,
    cluster: &FleetCluster,
    before: &[FleetCluster],
) {
    use crate::object::names;
    let item = format!("clusters[{i}]");
    let at = |field: &str| [String::from("spec"), item.clone(), field.to_string()];
    let path = at("name");
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    if cluster.name.is_empty() || cluster.name.contains([',', ' ', '\t', '\n']) {
        checks.push(
            &path,
            format!(
                "{:?} is not a cluster name: tend.dev/clusters lists names separated by commas, so a name is non-empty, without commas or spaces",
                cluster.name
            ),
        );
    } else if before.iter().any(|b| b.name == cluster.name) {
        checks.push(&path, format!("cluster {:?} is listed twice", cluster.name));
    }
    if let Some(secret) = &cluster.kubeconfig_secret_ref {
        let path = at("kubeconfigSecretRef");
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        if cluster.context.is_some() {
            checks.push(
                &path,
                "give either context or kubeconfigSecretRef, not both",
            );
        }
        if let Err(why) = names::dns1123_label(&secret.namespace) {
            checks.push(&path, format!("namespace {:?}: {why}", secret.namespace));
        }
        if let Err(why) = names::dns1123_subdomain(&secret.name) {
            checks.push(&path, format!("name {:?}: {why}", secret.name));
        }
        checks.non_empty(&path, &secret.key, "the Secret's key of the kubeconfig");
    }
    let path = at("labels");
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    checks.labels(&path, &cluster.labels);
    let path = at("paths");
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    if cluster.path.is_some() && !cluster.paths.is_empty() {
        checks.push(&path, "give either path or paths, not both");
    }
    for (j, dir) in cluster.paths.iter().enumerate() {
        if dir.trim().is_empty() {
            checks.push(&path, format!("paths[{j}] is empty: name a directory of the repository"));
        } else if cluster.paths[..j].contains(dir) {
            checks.push(&path, format!("{dir:?} is listed twice"));
        }
    }
}

impl FleetCluster {
    /// The directories it gets (`paths`, or `path`), none for the run's `--path`.
    pub fn directories(&self) -> Vec<&str> {
        match &self.path {
            Some(path) => vec![path.as_str()],
            None => self.paths.iter().map(String::as_str).collect(),
        }
    }

    /// The kubeconfig context that reaches it, when no Secret holds its kubeconfig.
    pub fn context(&self) -> Option<&str> {
        match (&self.context, &self.kubeconfig_secret_ref) {
            (Some(context), _) => Some(context),
            (None, None) => Some(&self.name),
            (None, Some(_)) => None,
        }
    }
}
