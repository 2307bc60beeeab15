//! Helm chart directories in the repository (a directory holding `Chart.yaml`): read whole
//! for `HelmChart` objects to render, never walked as manifests (their templates are not
//! YAML until rendered).

use super::MAX_FILE_BYTES;
use crate::helm::chart::Chart;
use crate::problem::Problem;
use std::fs;
use std::path::Path;

/// The file that makes a directory a chart.
pub const CHART_FILE: &str = "Chart.yaml";

/// Reads the chart in `dir` (`rel` to the repository root, for messages): `Chart.yaml`,
/// `values.yaml` and every other file but hidden ones, as text.
pub fn read_chart(root: &Path, dir: &Path, rel: &Path) -> Result<Chart, Problem> {
    let mut chart = Chart::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let entries = fs::read_dir(&current)
            .map_err(|e| Problem::new(rel, 1, format!("cannot read chart directory: {e}")))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let inside = path.strip_prefix(dir).unwrap_or(&path).to_path_buf();
            let rel_file = rel.join(&inside);
            // A symlink may not lead out of the repository.
            if !path.canonicalize().is_ok_and(|t| t.starts_with(root)) {
                return Err(Problem::new(
                    &rel_file,
                    1,
                    "symlink points outside the repository; copy the file into the chart instead",
                ));
            }
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let bytes = match fs::metadata(&path) {
                Ok(m) if m.len() > MAX_FILE_BYTES => {
                    return Err(Problem::new(
                        &rel_file,
                        1,
                        format!("chart file is larger than {MAX_FILE_BYTES} bytes"),
                    ))
                }
                _ => fs::read(&path)
                    .map_err(|e| Problem::new(&rel_file, 1, format!("cannot read: {e}")))?,
            };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let name = inside.to_string_lossy().replace('\\', "/");
            match name.as_str() {
                CHART_FILE | "values.yaml" => {
                    let value = if text.trim().is_empty() {
                        serde_json::Value::Null
                    } else {
                        crate::yaml::parse_value(&text)
                            .ok_or_else(|| Problem::new(&rel_file, 1, "is not valid YAML"))?
                    };
                    if name == CHART_FILE {
                        chart.metadata = value;
                    } else {
                        chart.values = value;
                    }
                }
                _ => {
                    chart.files.insert(name, text);
                }
            }
        }
    }
    if chart.name().is_empty() {
        return Err(Problem::new(
            rel.join(CHART_FILE),
            1,
            "Chart.yaml has no name; add `name: <chart>`",
        ));
    }
    Ok(chart)
}
