//! The paths a kustomization names (resources, bases, components, patches, generator
//! inputs, Helm values files), and whether any of them is remote: what tend reads of a
//! kustomization before kustomize builds it.

use serde_json::Value;

/// The file names kustomize looks for in a directory, in its order.
pub const KUSTOMIZATION_FILES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// The values files a kustomization's `helmCharts` name.
pub(super) fn helm_values_files(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for chart in value
        .get("helmCharts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.extend(
            chart
                .get("valuesFile")
                .and_then(Value::as_str)
                .map(str::to_string),
        );
        for file in chart
            .get("additionalValuesFiles")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.extend(file.as_str().map(str::to_string));
        }
    }
    out
}

/// The `files:`, `envs:` and `env:` paths of a kustomization's generators of one kind.
pub(super) fn generator_inputs(value: &Value, key: &str, out: &mut Vec<String>) {
    for item in value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mut files = Vec::new();
        for list in [item.get("files"), item.get("envs")] {
            for f in list.and_then(Value::as_array).into_iter().flatten() {
                if let Some(f) = f.as_str().filter(|f| !f.contains('\n')) {
                    files.push(f.to_string());
                }
            }
        }
        out.extend(files.into_iter().map(|f| match f.split_once('=') {
            Some((_, path)) => path.to_string(),
            None => f,
        }));
        if let Some(env) = item.get("env").and_then(Value::as_str) {
            out.push(env.to_string());
        }
    }
}

/// Every path a kustomization names, local or not.
pub(super) fn local_refs(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let strings = |v: Option<&Value>, out: &mut Vec<String>| {
        for item in v.and_then(Value::as_array).into_iter().flatten() {
            // Inline patches (`patchesStrategicMerge: ["apiVersion: ..."]`) are not paths.
            if let Some(s) = item.as_str().filter(|s| !s.contains('\n')) {
                out.push(s.to_string());
            }
        }
    };
    for key in [
        "resources",
        "bases",
        "components",
        "crds",
        "patchesStrategicMerge",
        "configurations",
        "generators",
        "transformers",
        "validators",
    ] {
        strings(value.get(key), &mut out);
    }
    for key in ["patches", "patchesJson6902", "replacements"] {
        for item in value
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(path) = item.get("path").and_then(Value::as_str) {
                out.push(path.to_string());
            }
        }
    }
    for key in ["configMapGenerator", "secretGenerator"] {
        generator_inputs(value, key, &mut out);
    }
    if let Some(path) = value.pointer("/openapi/path").and_then(Value::as_str) {
        out.push(path.to_string());
    }
    out.extend(helm_values_files(value));
    out
}

/// A remote base (`https://...`, `github.com/org/repo//dir?ref=v1`, `git@host:...`).
pub(super) fn is_remote(reference: &str) -> bool {
    reference.contains("://")
        || reference.starts_with("git@")
        || reference.contains("?ref=")
        || reference.contains("?version=")
        || ["github.com/", "gitlab.com/", "bitbucket.org/"]
            .iter()
            .any(|host| reference.starts_with(host))
}
