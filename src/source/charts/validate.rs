//! Helm's checks of a chart's `Chart.yaml` when it loads one (helm/helm
//! `pkg/chart/metadata.go` `Validate`, run by `loader.LoadFiles`): a chart Helm refuses is
//! refused here too, with the meaning of Helm's message, before anything renders.

use crate::helm::funcs::semver_order;
use serde_json::Value;
use std::collections::BTreeSet;

/// Why Helm would not load a chart with this metadata, if it would not.
pub fn metadata(meta: &Value) -> Result<(), String> {
    let text = |key: &str| meta.get(key).and_then(Value::as_str).unwrap_or("");
    let api_version = text("apiVersion");
    // Helm assumes v1 when none is given; it reads v1 and v2 charts only.
    if !matches!(api_version, "" | "v1" | "v2") {
        return Err(format!(
            "chart.metadata.apiVersion {api_version:?} is not supported: Helm 3 reads charts of apiVersion v1 and v2"
        ));
    }
    let name = text("name");
    if name.contains(['/', '\\']) || name == "." || name == ".." {
        return Err(format!(
            "chart.metadata.name {name:?} is invalid: a chart's name is one path element"
        ));
    }
    let version = text("version");
    if version.is_empty() {
        return Err("chart.metadata.version is required".into());
    }
    if semver_order(version, version).is_none() {
        return Err(format!(
            "chart.metadata.version {version:?} is invalid: it must be a semantic version (1.2.3)"
        ));
    }
    if !matches!(text("type"), "" | "application" | "library") {
        return Err("chart.metadata.type must be application or library".into());
    }
    let mut seen = BTreeSet::new();
    let dependencies = meta.get("dependencies").and_then(Value::as_array);
    for dependency in dependencies.into_iter().flatten() {
        let name = dependency.get("name").and_then(Value::as_str).unwrap_or("");
        let alias = dependency
            .get("alias")
            .and_then(Value::as_str)
            .unwrap_or("");
        let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if !alias.is_empty() && !alias.chars().all(allowed) {
            return Err(format!(
                "dependency {name:?} has disallowed characters in the alias {alias:?} (letters, digits, `_` and `-` only)"
            ));
        }
        if name.contains(['/', '\\']) || name == "." || name == ".." {
            return Err(format!(
                "dependency name {name:?} is invalid: a chart's name is one path element"
            ));
        }
        let key = if alias.is_empty() { name } else { alias };
        if !seen.insert(key.to_string()) {
            return Err(format!(
                "more than one dependency with name or alias {key:?}; give each an alias of its own"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::metadata;
    use serde_json::json;

    #[test]
    fn what_helm_refuses_is_refused() {
        let ok = json!({"apiVersion": "v2", "name": "a", "version": "1.2.3",
            "dependencies": [{"name": "db"}, {"name": "db", "alias": "db2"}]});
        assert_eq!(metadata(&ok), Ok(()));
        assert!(metadata(&json!({"name": "a", "version": "1"})).is_ok());
        let refused = [
            (
                json!({"apiVersion": "v3", "name": "a", "version": "1.0.0"}),
                "apiVersion",
            ),
            (
                json!({"name": "../../../etc", "version": "1.0.0"}),
                "is invalid",
            ),
            (
                json!({"name": "a", "version": "latest"}),
                "semantic version",
            ),
            (json!({"name": "a"}), "version is required"),
            (
                json!({"name": "a", "version": "1.0.0", "type": "x"}),
                "type",
            ),
            (
                json!({"name": "a", "version": "1.0.0", "dependencies": [{"name": "x", "alias": "../../etc"}]}),
                "disallowed characters",
            ),
            (
                json!({"name": "a", "version": "1.0.0", "dependencies": [{"name": "x", "alias": "b"}, {"name": "y", "alias": "b"}]}),
                "more than one dependency",
            ),
        ];
        for (meta, needle) in refused {
            let why = metadata(&meta).unwrap_err();
            assert!(why.contains(needle), "{meta}: {why}");
        }
    }
}
