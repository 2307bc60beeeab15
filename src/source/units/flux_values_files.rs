//! A HelmRelease's `spec.chart.spec.valuesFiles` (and v2beta1's `valuesFile`, merged before
//! them), as source-controller builds the chart (`internal/helm/chart/builder_local.go`
//! `mergeFileValues`, `builder_remote.go` `mergeChartValues`): the files merged in order
//! (maps merge, anything else replaces) **replace** the chart's default values, so the
//! chart's own `values.yaml` counts only when listed; a missing file is an error unless
//! `ignoreMissingValuesFiles`. For a chart in a GitRepository, the paths are relative to the
//! repository root and merged here; for a chart from a repository, they name files of the
//! chart, merged by the render once the chart is fetched ([`VALUES_FILES_ANNOTATION`] on the
//! expanded HelmChart, read by [`merged_from_chart`]).

use super::model::Found;
use crate::helm::chart::Chart;
use crate::helm::values::merge_maps;
use crate::problem::Problem;
use crate::source::paths::{leaves_root, normalize};
use serde_json::{json, Value};
use std::path::Path;

/// The expanded HelmChart's annotation holding the listed files, as JSON.
pub const VALUES_FILES_ANNOTATION: &str = "tend.dev/flux-values-files";

/// The values files a release lists, in order, and whether a missing one is skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub files: Vec<String>,
    pub ignore_missing: bool,
}

impl std::fmt::Display for Listed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = json!({"files": self.files, "ignoreMissing": self.ignore_missing});
        write!(f, "{value}")
    }
}

impl Listed {
    /// What [`VALUES_FILES_ANNOTATION`] holds.
    pub fn parse(text: &str) -> Option<Listed> {
        let value: Value = serde_json::from_str(text).ok()?;
        let files = value
            .get("files")?
            .as_array()?
            .iter()
            .map(|f| f.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()?;
        Some(Listed {
            files,
            ignore_missing: value.get("ignoreMissing").and_then(Value::as_bool) == Some(true),
        })
    }
}

/// The values files `spec.chart.spec` (`template`) lists, `None` when it lists none.
pub fn listed(unit: &Found, template: &Value) -> Result<Option<Listed>, Problem> {
    let at =
        |field: &str, message: String| unit.problem(&["spec", "chart", "spec", field], message);
    let mut files = Vec::new();
    match template.get("valuesFile") {
        None | Some(Value::Null) => {}
        Some(Value::String(file)) if !file.is_empty() => files.push(file.clone()),
        Some(Value::String(_)) => {}
        Some(_) => return Err(at("valuesFile", "valuesFile must be a path".into())),
    }
    match template.get("valuesFiles") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for file in list {
                let Some(file) = file.as_str() else {
                    return Err(at(
                        "valuesFiles",
                        "valuesFiles must be a list of paths".into(),
                    ));
                };
                files.push(file.to_string());
            }
        }
        Some(_) => {
            return Err(at(
                "valuesFiles",
                "valuesFiles must be a list of paths".into(),
            ))
        }
    }
    if files.is_empty() {
        return Ok(None);
    }
    let ignore_missing = template
        .get("ignoreMissingValuesFiles")
        .and_then(Value::as_bool)
        == Some(true);
    Ok(Some(Listed {
        files,
        ignore_missing,
    }))
}

/// The chart's default values from files of a source's tree (paths relative to `root`).
pub fn merged_from_tree(
    root: &Path,
    listed: &Listed,
    (unit, field): (&Found, &[&str]),
) -> Result<Value, Problem> {
    let mut merged = json!({});
    for file in &listed.files {
        let path = normalize(Path::new(file.trim_start_matches('/')));
        if leaves_root(&path) {
            return Err(unit.problem(
                field,
                format!("values file {file:?} leaves the repository; write a path relative to the repository root"),
            ));
        }
        let full = root.join(&path);
        if !full.is_file() {
            if listed.ignore_missing && !full.exists() {
                continue;
            }
            return Err(unit.problem(
                field,
                format!("no values file found at path {file:?} (relative to the GitRepository's root); fix the path, or set ignoreMissingValuesFiles: true"),
            ));
        }
        let too_large = std::fs::metadata(&full)
            .map(|m| m.len() > crate::source::MAX_FILE_BYTES)
            .unwrap_or(false);
        let text = match too_large {
            true => Err("it is larger than tend reads".to_string()),
            false => std::fs::read_to_string(&full).map_err(|e| e.to_string()),
        }
        .map_err(|e| unit.problem(field, format!("cannot read values file {file:?}: {e}")))?;
        let values = values_of(&text)
            .map_err(|e| unit.problem(field, format!("values file {file:?}: {e}")))?;
        merged = merge_maps(&merged, &values);
    }
    Ok(merged)
}

/// The chart's default values from its own files (`values.yaml` is its values), or why not.
pub fn merged_from_chart(chart: &Chart, listed: &Listed) -> Result<Value, String> {
    let mut merged = json!({});
    for file in &listed.files {
        let clean = normalize(Path::new(file)).to_string_lossy().into_owned();
        let values = if clean == "values.yaml" {
            chart.values.clone()
        } else {
            match chart.files.get(&clean) {
                Some(text) => values_of(text).map_err(|e| format!("values file {file:?}: {e}"))?,
                None if listed.ignore_missing => continue,
                None => {
                    return Err(format!(
                        "no values file found at path {file:?} in chart {} (paths are relative to the chart's root); fix spec.chart.spec.valuesFiles, or set ignoreMissingValuesFiles: true",
                        chart.name()
                    ))
                }
            }
        };
        merged = merge_maps(&merged, &values);
    }
    Ok(merged)
}

fn values_of(text: &str) -> Result<Value, String> {
    match crate::yaml::parse_helm_yaml(text)? {
        Value::Null => Ok(json!({})),
        value @ Value::Object(_) => Ok(value),
        _ => Err("not a map of values".into()),
    }
}
