//! The values a HelmChart gives its release: its values files in order (SOPS-encrypted ones
//! decrypted, their plaintext remembered), then `spec.values`; and the check that no such
//! plaintext reaches an object tend would print. Pure: the files were read by the source
//! stage.

use super::RenderOptions;
use crate::helm::chart::Charts;
use crate::helm::values;
use crate::kinds::helm_chart::HelmChartSpec;
use crate::problem::Problem;
use crate::sops::{self, SopsError};
use crate::source::paths::{leaves_root, normalize};
use crate::source::SourceFile;
use crate::yaml::{self, Step};
use std::path::Path;

/// Whether one of the values files of `spec` is SOPS-encrypted.
pub(super) fn encrypted_values(file: &SourceFile, spec: &HelmChartSpec, charts: &Charts) -> bool {
    let dir = file.path.parent().unwrap_or(Path::new(""));
    spec.values_files.iter().any(|entry| {
        let path = normalize(&dir.join(entry));
        charts
            .values_files
            .get(&path)
            .is_some_and(|text| sops::looks_encrypted(text).is_some())
    })
}

/// The user's values of a release: its values files in order, then `spec.values` (as
/// `helm template -f a -f b --set ...` merges them), and the plaintext strings of its
/// SOPS-encrypted values files.
pub(super) struct UserValues {
    pub(super) values: serde_json::Value,
    pub(super) secrets: Vec<String>,
}

pub(super) fn user_values(
    file: &SourceFile,
    doc: &yaml::Document,
    spec: &HelmChartSpec,
    charts: &Charts,
    opts: &RenderOptions,
    problems: &mut Vec<Problem>,
) -> Option<UserValues> {
    let mut merged = serde_json::Value::Object(serde_json::Map::new());
    let mut secrets = Vec::new();
    let mut ok = true;
    for (i, entry) in spec.values_files.iter().enumerate() {
        let line = doc.line_at(&[
            Step::Key("spec".into()),
            Step::Key("valuesFiles".into()),
            Step::Index(i),
        ]);
        let dir = file.path.parent().unwrap_or(Path::new(""));
        let path = normalize(&dir.join(entry));
        let text = match charts.values_files.get(&path) {
            Some(text) => text,
            None => {
                let why = if leaves_root(&path) {
                    "it is outside the repository (or --path); keep values files inside it"
                } else if let Some(why) = charts.unreadable_values_files.get(&path) {
                    why
                } else {
                    "there is no such file"
                };
                problems.push(Problem::new(
                    &file.path,
                    line,
                    format!(
                        "spec.valuesFiles[{i}]: cannot read values file {:?} (relative to this file): {why}; check the path",
                        path.display().to_string()
                    ),
                ));
                ok = false;
                continue;
            }
        };
        match values_file(&path, text, opts) {
            Ok((values, plain)) => {
                merged = values::merge_maps(&merged, &values);
                secrets.extend(plain);
            }
            Err(problem) => {
                problems.push(problem);
                ok = false;
            }
        }
    }
    if let Some(inline) = &spec.values {
        merged = values::merge_maps(&merged, inline);
    }
    // A SOPS-encrypted HelmChart's own values are as secret as an encrypted values file's.
    for pointer in &doc.sealed {
        if let Some(value) = doc.value.pointer(pointer) {
            leaves(value, &mut secrets);
        }
    }
    ok.then_some(UserValues {
        values: merged,
        secrets,
    })
}

/// A values file's values (decrypted when it is SOPS-encrypted), and the plaintext strings
/// of its encrypted values.
pub(super) fn values_file(
    path: &Path,
    text: &str,
    opts: &RenderOptions,
) -> Result<(serde_json::Value, Vec<String>), Problem> {
    let (docs, problems) = yaml::parse_file(path, text);
    if let Some(problem) = problems.into_iter().next() {
        return Err(problem);
    }
    let Some(first) = docs.first() else {
        return Ok((
            serde_json::Value::Object(serde_json::Map::new()),
            Vec::new(),
        ));
    };
    let mut value = first.value.clone();
    let mut secrets = Vec::new();
    if sops::has_metadata(&value) || sops::find_sealed(&value).is_some() {
        let sealed = value.clone();
        if let Err(err) = sops::decrypt_documents(std::slice::from_mut(&mut value), &opts.keys) {
            let line = match &err {
                SopsError::Value { path, .. } | SopsError::NoMetadata { path, .. } => {
                    first.line_at(path)
                }
                _ => first.line_of(&[sops::METADATA_KEY.to_string()]),
            };
            return Err(Problem::new(
                path,
                line,
                format!("{err} (a values file of a HelmChart)"),
            ));
        }
        plaintext_of_sealed(&sealed, &value, &mut secrets);
    } else {
        // As Helm reads a values file (`-f`): YAML 1.1 through go-yaml v2 (`yes` is true,
        // `0644` is 420, numbers float64), the first document only.
        value = yaml::parse_helm_yaml(text).map_err(|why| {
            Problem::new(
                path,
                first.line,
                format!("{why} (a values file of a HelmChart)"),
            )
        })?;
    }
    match value {
        serde_json::Value::Null => Ok((serde_json::Value::Object(serde_json::Map::new()), secrets)),
        serde_json::Value::Object(_) => Ok((value, secrets)),
        other => Err(Problem::new(
            path,
            first.line,
            format!(
                "a values file must hold a map of values, as values.yaml does, not {}",
                values::type_name(&other)
            ),
        )),
    }
}

/// The decrypted strings of `plain` whose counterpart in `sealed` was encrypted. Very short
/// ones are left out: they would be found everywhere.
pub(super) fn plaintext_of_sealed(
    sealed: &serde_json::Value,
    plain: &serde_json::Value,
    out: &mut Vec<String>,
) {
    use serde_json::Value as J;
    match (sealed, plain) {
        (J::String(s), J::String(p))
            if sops::looks_sealed(s) && p.chars().count() >= sops::leaks::MIN_TRACKED_CHARS =>
        {
            out.push(p.clone());
        }
        // An encrypted number (`type:int`, `type:float`) is tracked by its digits.
        (J::String(s), J::Number(n))
            if sops::looks_sealed(s)
                && n.to_string().chars().count() >= sops::leaks::MIN_TRACKED_CHARS =>
        {
            out.push(n.to_string());
        }
        (J::Object(s), J::Object(p)) => {
            for (key, value) in p {
                if let Some(other) = s.get(key) {
                    plaintext_of_sealed(other, value, out);
                }
            }
        }
        (J::Array(s), J::Array(p)) => {
            for (a, b) in s.iter().zip(p) {
                plaintext_of_sealed(a, b, out);
            }
        }
        _ => {}
    }
}

/// The strings and numbers (by their digits) of `value`, but very short ones.
fn leaves(value: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value as J;
    match value {
        J::String(s) if s.chars().count() >= sops::leaks::MIN_TRACKED_CHARS => out.push(s.clone()),
        J::Number(n) if n.to_string().chars().count() >= sops::leaks::MIN_TRACKED_CHARS => {
            out.push(n.to_string())
        }
        J::Array(items) => items.iter().for_each(|v| leaves(v, out)),
        J::Object(map) => map.values().for_each(|v| leaves(v, out)),
        _ => {}
    }
}

/// The objects of a rendered template that show one of `forms` (of decrypted values,
/// [`sops::leaks::forms`]) anywhere but a core Secret's data, in a value or a map key:
/// `Kind name (template:line)`, never the value.
pub(super) fn exposing(text: &str, forms: &[String], template: &str) -> Vec<String> {
    let (docs, _) = yaml::parse_file(Path::new(template), text);
    let mut out = Vec::new();
    for doc in docs {
        let mut value = doc.value.clone();
        if sops::leaks::is_core_secret(&value) {
            if let Some(map) = value.as_object_mut() {
                map.remove("data");
                map.remove("stringData");
            }
        }
        if let Some(path) = sops::leaks::find(&value, forms) {
            let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or("");
            let name = value
                .pointer("/metadata/name")
                .and_then(|n| n.as_str())
                .unwrap_or("");
            let line = doc.line_at(&path);
            // The path is not named: a map key on it may be the value itself.
            out.push(format!("{kind} {name} ({template}:{line})"));
        }
    }
    out
}

/// The chart a release renders: `chart`, or, for a Flux HelmRelease's `valuesFiles` of a
/// chart from a repository (the expanded HelmChart's annotation), a copy whose default
/// values are those files merged, as source-controller packages it.
pub(super) fn with_flux_values_files<'c>(
    helm_chart: &crate::kinds::helm_chart::HelmChart,
    chart: &'c crate::helm::chart::Chart,
) -> Result<std::borrow::Cow<'c, crate::helm::chart::Chart>, String> {
    use crate::source::units::{merged_from_chart, Listed, VALUES_FILES_ANNOTATION};
    let listed = helm_chart
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(VALUES_FILES_ANNOTATION))
        .and_then(|text| Listed::parse(text));
    let Some(listed) = listed else {
        return Ok(std::borrow::Cow::Borrowed(chart));
    };
    let values = merged_from_chart(chart, &listed)?;
    // A chart without values.yaml keeps none, as source-controller leaves it.
    if chart.values.is_null() {
        return Ok(std::borrow::Cow::Borrowed(chart));
    }
    Ok(std::borrow::Cow::Owned(crate::helm::chart::Chart {
        values,
        digest: std::sync::OnceLock::new(),
        ..chart.clone()
    }))
}
