//! An app of apps written as a Helm chart (argoproj/argocd-example-apps' `apps/`: a chart
//! whose templates are Applications): the controller objects a chart of the tree renders
//! are units too, found here by rendering it once while units are expanded. The chart's
//! objects themselves are rendered (again, with the cluster's facts) by the chart pipeline.

use super::model::Context;
use crate::helm::chart::{self, Chart, Release};
use crate::source::SourceFile;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The release name of a Helm source: `helm.releaseName`, else the Application's name.
pub fn release_name<'a>(helm: &'a Value, application: &'a str) -> &'a str {
    helm.get("releaseName")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .unwrap_or(application)
}

/// The Argo CD and Flux documents the chart at `chart_dir` renders with `values`, one file
/// per template, labelled `<chart_dir>/<template>`. A chart that does not render here is
/// reported by the chart pipeline, with its reason.
pub fn units_in_chart(
    chart: &Chart,
    values: &Value,
    (release, namespace): (&str, &str),
    chart_dir: &Path,
) -> Vec<SourceFile> {
    let release = Release {
        name: release.to_string(),
        namespace: namespace.to_string(),
        kube_version: crate::kinds::helm_chart::DEFAULT_KUBE_VERSION.to_string(),
        api_versions: Vec::new(),
        seed: 0,
        now: 0,
        cluster: None,
        limits: Default::default(),
    };
    let Ok(manifests) = chart::render(chart, values, &release) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for manifest in manifests.iter().filter(|m| !m.crd) {
        let path = chart_dir.join(&manifest.template);
        let (docs, _) = crate::yaml::parse_file(&path, &manifest.text);
        let controllers: Vec<String> = docs
            .iter()
            .filter(|doc| {
                let text = |k: &str| doc.value.get(k).and_then(Value::as_str).unwrap_or("");
                let group = text("apiVersion").split('/').next().unwrap_or("");
                // Argo CD's own kinds, not the group's others (Argo Rollouts' `Rollout`).
                (group == "argoproj.io" && matches!(text("kind"), "Application" | "ApplicationSet"))
                    || group.ends_with("fluxcd.io")
            })
            .map(|doc| crate::yaml::to_yaml(&doc.value))
            .collect();
        if !controllers.is_empty() {
            files.push(SourceFile {
                path: PathBuf::from(format!("{} (helm template)", path.display())),
                text: controllers.join("---\n"),
                unit: None,
            });
        }
    }
    files
}

/// The directories of the checkout under test an Application's sources name (`path` of a
/// `source` or `sources` entry whose `repoURL` is the checkout's), relative to its root.
pub fn checkout_paths(spec: &Value, ctx: &Context) -> Vec<PathBuf> {
    let single = spec.get("source").into_iter();
    let many = spec
        .get("sources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    single
        .chain(many)
        .filter(|source| {
            let url = source.get("repoURL").and_then(Value::as_str).unwrap_or("");
            source.get("chart").is_none() && ctx.is_checkout_url(url)
        })
        .filter_map(|source| source.get("path").and_then(Value::as_str))
        .map(|path| crate::source::paths::normalize(Path::new(path.trim_start_matches('/'))))
        .filter(|path| !path.as_os_str().is_empty())
        .collect()
}
