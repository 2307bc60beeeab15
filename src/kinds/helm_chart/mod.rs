//! `HelmChart` (README "HelmChart — a Helm chart rendered by tend itself"): a Helm chart in
//! the repository, rendered by tend itself (no helm binary) into plain objects that then go through everything else. The chart is
//! read by the source stage and rendered by `render` (see `render::helm_charts`); this
//! folder holds the type, its CRD and its checks.

use super::checks::FieldChecks;
use super::{FieldProblem, Kind, TendKind};
use crate::object::names;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `.Capabilities.KubeVersion` reports when `spec.kubeVersion` is not set.
pub const DEFAULT_KUBE_VERSION: &str = "v1.33.0";

/// A release of a chart: `metadata.name` is the release name (unless `spec.releaseName`),
/// `metadata.namespace` the release namespace.
// Each printcolumn(...) repeats `type_ = ...`, which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "tend.dev",
    version = "v1alpha1",
    kind = "HelmChart",
    namespaced,
    status = "HelmChartStatus",
    derive = "PartialEq",
    shortname = "hc",
    category = "tend",
    doc = "A Helm chart rendered natively by tend into plain objects (tend).",
    printcolumn(name = "CHART", type_ = "string", json_path = ".status.chart"),
    printcolumn(name = "VERSION", type_ = "string", json_path = ".status.version"),
    printcolumn(
        name = "READY",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelmChartSpec {
    /// The chart's directory (holding `Chart.yaml`), relative to this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<String>,
    /// A chart repository (the HTTP(S) URL holding `index.yaml`, or `oci://host/path` of an
    /// OCI registry), with `name` and `version`; the chart is downloaded, its digest checked,
    /// and cached by digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The chart's name in `repository`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The chart's version (or semver range) in `repository`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The release name. Default: `metadata.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_name: Option<String>,
    /// Values over the chart's `values.yaml` (maps merge, anything else replaces, `null`
    /// removes a default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
    pub values: Option<serde_json::Value>,
    /// Values files, relative to this file, applied in order under `spec.values` (as
    /// `helm template -f`); SOPS-encrypted ones are decrypted with the run's keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_files: Vec<String>,
    /// Whether the chart's `crds/` are applied. Default: true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_crds: Option<bool>,
    /// What `.Capabilities.KubeVersion` reports, e.g. `v1.33.0` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
    /// API versions `.Capabilities.APIVersions.Has` finds besides the built-in ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
    /// Render the chart only for these clusters (`--cluster`). Default: every cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<Vec<String>>,
    /// Install the chart only when it carries a signature by a trusted key (an `oci://`
    /// chart signed with `cosign sign --key`; the keys are the run's `--trusted-keys`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Box<ChartVerify>>,
}

/// `spec.verify`, as Flux's `HelmChart.spec.verify`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChartVerify {
    /// `cosign`: a signature made with a key pair, checked against the trusted cosign keys.
    pub provider: String,
    /// Flux's keyless identities: keyless verification needs the network, which tend refuses.
    #[serde(
        default,
        rename = "matchOIDCIdentity",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
    pub match_oidc_identity: Option<serde_json::Value>,
    /// Flux's Secret of public keys: tend takes them from `--trusted-keys` or
    /// `--trusted-keys-secret` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
    pub secret_ref: Option<serde_json::Value>,
}

/// What the last `tend apply` rendered and applied: the chart and version (resolved from a
/// repository's range), how many objects, and whether they all applied.
// Lenient (no `deny_unknown_fields`), so an older tend can read a newer tend's status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmChartStatus {
    /// `metadata.generation` this status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The chart's name (`Chart.yaml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<String>,
    /// The chart version rendered (for a repository, what `spec.version` resolved to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The chart's `appVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// `sha256:<hex>` of the chart archive, for a chart from a repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// What `.Capabilities.KubeVersion` reported to the chart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
    /// How many objects the release rendered (chart tests left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
}

impl HelmChart {
    /// The release name: `spec.releaseName`, else `metadata.name`.
    pub fn release_name(&self) -> &str {
        self.spec
            .release_name
            .as_deref()
            .or(self.metadata.name.as_deref())
            .unwrap_or("")
    }
}

impl Kind for HelmChart {
    const KIND: TendKind = TendKind::HelmChart;
    type Status = HelmChartStatus;

    fn validate(&self) -> Vec<FieldProblem> {
        let mut out = Vec::new();
        let mut p = FieldChecks { out: &mut out };
        let spec = &self.spec;
        match (&spec.chart, &spec.repository) {
            (None, None) => p.push(
                &["spec", "chart"],
                "missing: set spec.chart to the chart's directory, relative to this file (or spec.repository, spec.name and spec.version)",
            ),
            (Some(_), Some(_)) => p.push(
                &["spec", "repository"],
                "set either spec.chart (a directory in the repository) or spec.repository (a chart repository), not both",
            ),
            (None, Some(repository)) => {
                let scheme = repository.split("://").next().unwrap_or("");
                if !matches!(scheme, "https" | "http" | "oci") || repository.len() <= scheme.len() + 3 {
                    p.push(
                        &["spec", "repository"],
                        format!("{repository:?} is not a chart repository URL; write https://... (the URL that holds index.yaml) or oci://host/path (an OCI registry)"),
                    );
                }
                let authority = repository.split("://").nth(1).unwrap_or("").split('/').next().unwrap_or("");
                if authority.contains('@') {
                    p.push(
                        &["spec", "repository"],
                        "credentials in the URL would be stored in the cluster with this HelmChart and shown by diffs; remove them and give tend the login with --helm-credentials FILE or --helm-credentials-secret NAMESPACE/NAME (a docker config JSON, as `helm registry login` writes)",
                    );
                }
                if spec.name.as_deref().is_none_or(|n| n.trim().is_empty()) {
                    p.push(&["spec", "name"], "missing: the chart's name in spec.repository");
                }
                if spec.version.as_deref().is_none_or(|v| v.trim().is_empty()) {
                    p.push(
                        &["spec", "version"],
                        "missing: the chart's version, or a semver range such as ^1.2.0",
                    );
                }
            }
            (Some(chart), None) => p.non_empty(&["spec", "chart"], chart, "the chart's directory, relative to this file"),
        }
        for (i, file) in spec.values_files.iter().enumerate() {
            if file.trim().is_empty() {
                p.push(
                    &["spec", "valuesFiles"],
                    format!("entry {i} is empty; write a values file's path, relative to this file"),
                );
            }
        }
        if let Some(values) = &spec.values {
            if !values.is_object() {
                p.push(&["spec", "values"], "must be a map of values, as in values.yaml");
            }
        }
        if let Err(why) = names::dns1123_subdomain(self.release_name()) {
            let path: &[&str] = if spec.release_name.is_some() {
                &["spec", "releaseName"]
            } else {
                &["metadata", "name"]
            };
            p.push(path, format!("{:?} is not a valid release name: {why}", self.release_name()));
        }
        if let Some(verify) = &spec.verify {
            verify_problems(verify, spec.repository.as_deref(), &mut p);
        }
        if let Some(version) = &spec.kube_version {
            if normalized_kube_version(version).is_none() {
                p.push(
                    &["spec", "kubeVersion"],
                    format!("{version:?} is not a Kubernetes version; write e.g. v1.33.0"),
                );
            }
        }
        out
    }

    fn clusters(&self) -> Option<&[String]> {
        self.spec.clusters.as_deref()
    }

    fn status(&self, run: &super::run::RunState<'_>) -> Option<HelmChartStatus> {
        let me = self.key();
        let (release, failures) = run.releases.iter().find(|(r, _)| r.helm_chart == me)?;
        let condition = match failures {
            0 => run.ready_condition(
                &me,
                true,
                "Applied",
                format!(
                    "{} object(s) of chart {} {} applied",
                    release.objects, release.chart, release.version
                ),
            ),
            n => run.ready_condition(
                &me,
                false,
                "ApplyFailed",
                format!(
                    "{n} of the {} object(s) of chart {} {} failed to apply; see the run's report",
                    release.objects, release.chart, release.version
                ),
            ),
        };
        Some(HelmChartStatus {
            observed_generation: run.generation(&me),
            chart: Some(release.chart.clone()),
            version: Some(release.version.clone()),
            app_version: release.app_version.clone(),
            digest: release.digest.clone(),
            kube_version: Some(release.kube_version.clone()),
            objects: Some(release.objects as i64),
            conditions: vec![condition],
        })
    }
}

/// What tend cannot check of `spec.verify`, each with the way out.
fn verify_problems(verify: &ChartVerify, repository: Option<&str>, p: &mut FieldChecks<'_>) {
    if verify.provider != "cosign" {
        p.push(
            &["spec", "verify", "provider"],
            format!("{:?} is not supported; tend checks cosign signatures (provider: cosign)", verify.provider),
        );
    }
    if verify.match_oidc_identity.is_some() {
        p.push(
            &["spec", "verify", "matchOIDCIdentity"],
            "keyless verification (Fulcio certificates, Rekor) needs the network, which tend does not use; sign the chart with a key pair (cosign sign --key cosign.key) and give tend cosign.pub with --trusted-keys",
        );
    }
    if verify.secret_ref.is_some() {
        p.push(
            &["spec", "verify", "secretRef"],
            "tend reads the public keys of the run, not a Secret per chart: remove secretRef and pass cosign.pub with --trusted-keys (or --trusted-keys-secret NAMESPACE/NAME)",
        );
    }
    if !repository.is_some_and(|r| r.starts_with("oci://")) {
        p.push(
            &["spec", "verify"],
            "cosign signatures are stored in OCI registries: spec.verify needs spec.repository oci://...; charts in the repository or on HTTP repositories carry none",
        );
    }
}

/// A Kubernetes version as Helm reads `--kube-version` (`1.34` and `v1.34` are `v1.34.0`),
/// or `None` when it is not one.
pub fn normalized_kube_version(text: &str) -> Option<String> {
    let parts: Vec<&str> = text.trim_start_matches('v').split('.').collect();
    if parts.len() < 2 || parts.len() > 3 || parts.iter().any(|n| n.parse::<u32>().is_err()) {
        return None;
    }
    Some(format!(
        "v{}.{}.{}",
        parts[0],
        parts[1],
        parts.get(2).copied().unwrap_or("0")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::run::{ReleaseOutcome, RunState};
    use std::collections::{BTreeSet, HashMap};

    #[test]
    fn the_status_names_the_chart_and_is_ready_only_when_every_object_applied() {
        let helm_chart: HelmChart = serde_json::from_value(serde_json::json!({
            "apiVersion": "tend.dev/v1alpha1", "kind": "HelmChart",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"repository": "https://charts.example.com", "name": "nginx", "version": "^1"},
        }))
        .expect("valid");
        let release = ReleaseOutcome {
            helm_chart: helm_chart.key(),
            chart: "nginx".into(),
            version: "1.4.2".into(),
            app_version: Some("1.27".into()),
            digest: Some("sha256:ab".into()),
            kube_version: "v1.36.0".into(),
            files: BTreeSet::new(),
            objects: 7,
        };
        let (observed, applied, started) = (HashMap::new(), HashMap::new(), BTreeSet::new());
        let status_with = |failures: usize| {
            let releases = [(release.clone(), failures)];
            let run = RunState {
                observed: &observed,
                applied: &applied,
                started: &started,
                copy_outcomes: &[],
                releases: &releases,
                now: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            };
            Kind::status(&helm_chart, &run).expect("a status")
        };
        let ok = status_with(0);
        assert_eq!(
            (ok.version.as_deref(), ok.digest.as_deref(), ok.objects),
            (Some("1.4.2"), Some("sha256:ab"), Some(7))
        );
        assert_eq!(ok.conditions[0].status, "True");
        assert_eq!(ok.conditions[0].message, "7 object(s) of chart nginx 1.4.2 applied");
        let failed = status_with(2);
        assert_eq!(failed.conditions[0].status, "False");
        assert_eq!(failed.conditions[0].reason, "ApplyFailed");
        assert!(failed.conditions[0].message.starts_with("2 of the 7 object(s)"));
    }
}
