//! `HelmChart` objects rendered into plain manifests before anything else is parsed: each
//! chart template's output becomes a file of its own, named
//! `<file> (chart <name>, templates/<template>)`, that then goes through everything a plain
//! file does (validation, targeting, namespace defaulting — to the release namespace —,
//! duplicates, config hashes). Chart tests (`helm.sh/hook: test`) are left out, as
//! `helm template --skip-tests` does. Pure: the charts were read by the source stage.

use super::{is_targeted, tend_kinds, RenderOptions};
use crate::helm::chart::{self, Charts, Release};
use crate::kinds::helm_chart::{HelmChart, DEFAULT_KUBE_VERSION};
use crate::kinds::{TendKind, TendObject};
use crate::object::{Object, Origin};
use crate::problem::Problem;
use crate::source::kustomize_annotations;
use crate::source::SourceFile;
use crate::yaml;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// What the charts of a repository render to.
#[derive(Debug, Default)]
pub struct ChartOutput {
    /// One file per rendered template (and per CRD file of `crds/`).
    pub files: Vec<SourceFile>,
    /// The release namespace of each of those files: their namespaced objects without a
    /// namespace land there.
    pub namespaces: HashMap<PathBuf, String>,
    pub problems: Vec<Problem>,
    /// What the user should know (charts whose random values change on every run).
    pub notes: Vec<String>,
}

pub fn render_charts(files: &[SourceFile], charts: &Charts, opts: &RenderOptions) -> ChartOutput {
    let mut out = ChartOutput::default();
    for file in files.iter().filter(|f| f.text.contains("HelmChart")) {
        let (docs, _) =
            kustomize_annotations::parse_source(&file.path, &file.text, file.unit.is_some());
        for doc in docs {
            let is_helm_chart = doc.value.get("apiVersion").and_then(|v| v.as_str())
                == Some(crate::API_VERSION)
                && doc.value.get("kind").and_then(|v| v.as_str()) == Some("HelmChart");
            if !is_helm_chart {
                continue;
            }
            // An invalid HelmChart is reported by the main pass, with every other problem.
            let Ok(TendObject::HelmChart(helm_chart)) =
                tend_kinds::parse(&file.path, &doc, TendKind::HelmChart)
            else {
                continue;
            };
            let origin = Origin {
                file: file.path.clone(),
                line: doc.line,
                generated_by: None,
                sealed: Vec::new(),
            };
            let targeted = is_targeted(
                &Object::new(doc.value.clone(), origin),
                opts.cluster.as_deref(),
            );
            let spec_targeted = match (&helm_chart.spec.clusters, &opts.cluster) {
                (Some(clusters), Some(cluster)) => clusters.iter().any(|c| c == cluster),
                (Some(_), None) => false,
                (None, _) => true,
            };
            if targeted && spec_targeted {
                render_one(file, &doc, &helm_chart, charts, opts, &mut out);
            }
        }
    }
    out
}

/// `dir/../x` → `x`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn render_one(
    file: &SourceFile,
    doc: &yaml::Document,
    helm_chart: &HelmChart,
    charts: &Charts,
    opts: &RenderOptions,
    out: &mut ChartOutput,
) {
    let spec = &helm_chart.spec;
    let Some(chart_dir) = &spec.chart else { return };
    let chart_line = doc.line_of(&["spec".to_string(), "chart".to_string()]);
    let dir = normalize(&file.path.parent().unwrap_or(Path::new("")).join(chart_dir));
    let Some(chart) = charts.get(&dir) else {
        out.problems.push(Problem::new(
            &file.path,
            chart_line,
            format!(
                "spec.chart: no chart at {:?} (a directory holding Chart.yaml, inside the repository, relative to this file); check the path",
                dir.display().to_string()
            ),
        ));
        return;
    };
    let namespace = helm_chart
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| opts.default_namespace.clone());
    let release = Release {
        name: helm_chart.release_name().to_string(),
        namespace: namespace.clone(),
        kube_version: spec
            .kube_version
            .clone()
            .unwrap_or_else(|| DEFAULT_KUBE_VERSION.to_string()),
        api_versions: spec.api_versions.clone(),
        seed: opts.helm_seed,
    };
    let values = chart::coalesce(
        &chart.values,
        spec.values.as_ref().unwrap_or(&serde_json::Value::Null),
    );
    let manifests = match chart::render(chart, &values, &release) {
        Ok(manifests) => manifests,
        Err(e) => {
            out.problems
                .push(Problem::new(&file.path, chart_line, e.to_string()));
            return;
        }
    };
    let name = chart.name();
    let mut add = |template: &str, text: String| {
        let path = PathBuf::from(format!(
            "{} (chart {name}, {template})",
            file.path.display()
        ));
        out.namespaces.insert(path.clone(), namespace.clone());
        out.files.push(SourceFile {
            path,
            text,
            unit: None,
        });
    };
    if spec.include_crds.unwrap_or(true) {
        for (path, text) in chart.files.iter().filter(|(p, _)| p.starts_with("crds/")) {
            if path.ends_with(".yaml") || path.ends_with(".yml") || path.ends_with(".json") {
                add(path, text.clone());
            }
        }
    }
    let mut random = Vec::new();
    for manifest in manifests {
        let text = without_tests(&manifest.text);
        // Tests are left out, so their random names don't matter.
        if manifest.random && !text.trim().is_empty() {
            random.push(manifest.template.clone());
        }
        add(&manifest.template, text);
    }
    if !random.is_empty() {
        out.notes.push(format!(
            "HelmChart {}/{} ({}:{}): {} use random functions; their values change on every run (a stable per-cluster seed is not implemented yet)",
            namespace,
            helm_chart.release_name(),
            file.path.display(),
            doc.line,
            random.join(", ")
        ));
    }
}

/// The text with the documents that are chart tests blanked out (lines kept, so the lines
/// of the others hold).
fn without_tests(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut doc: Vec<&str> = Vec::new();
    let flush = |doc: &mut Vec<&str>, out: &mut String| {
        let body = doc.join("\n");
        let is_test = yaml::parse_value(&body).is_some_and(|v| chart::is_test_hook(&v));
        for line in doc.iter() {
            if !is_test {
                out.push_str(line);
            }
            out.push('\n');
        }
        doc.clear();
    };
    for line in text.lines() {
        if line.trim_end() == "---" {
            flush(&mut doc, &mut out);
            out.push_str("---\n");
        } else {
            doc.push(line);
        }
    }
    flush(&mut doc, &mut out);
    out
}
