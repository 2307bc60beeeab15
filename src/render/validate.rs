//! Structural checks every document must pass before anything is rendered: it is a mapping,
//! has apiVersion, kind and metadata.name of the right shape, and its kind is plausible.

use super::builtin;
use super::object::{split_api_version, Problem};
use super::yaml::Document;
use serde_json::Value;
use std::path::Path;

/// Check one parsed document. Returns every problem found (empty = structurally valid).
pub fn check_document(file: &Path, doc: &Document) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut problem = |path: &[&str], message: String| {
        let owned: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        problems.push(Problem::new(file, doc.line_of(&owned), message));
    };
    let Some(map) = doc.value.as_object() else {
        problem(
            &[],
            format!(
                "document is {}, not a mapping; every document must be a Kubernetes object with apiVersion, kind and metadata",
                describe(&doc.value)
            ),
        );
        return problems;
    };

    let api_version = match map.get("apiVersion") {
        None => {
            problem(&[], "missing apiVersion (e.g. `apiVersion: v1`)".into());
            None
        }
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.as_str()),
        Some(other) => {
            problem(
                &["apiVersion"],
                format!(
                    "apiVersion must be a non-empty string, found {}",
                    describe(other)
                ),
            );
            None
        }
    };
    let kind = match map.get("kind") {
        None => {
            problem(&[], "missing kind (e.g. `kind: ConfigMap`)".into());
            None
        }
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.as_str()),
        Some(other) => {
            problem(
                &["kind"],
                format!("kind must be a non-empty string, found {}", describe(other)),
            );
            None
        }
    };

    let metadata = match map.get("metadata") {
        None => {
            problem(
                &[],
                "missing metadata.name; every object needs a name".into(),
            );
            None
        }
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            problem(
                &["metadata"],
                format!("metadata must be a mapping, found {}", describe(other)),
            );
            None
        }
    };
    let group = api_version.map(|v| split_api_version(v).0).unwrap_or("");

    if let Some(meta) = metadata {
        match meta.get("name") {
            None => problem(
                &["metadata"],
                if meta.contains_key("generateName") {
                    "missing metadata.name: generateName is not supported, tend needs a stable name to diff and prune".into()
                } else {
                    "missing metadata.name; every object needs a name".into()
                },
            ),
            Some(Value::String(name)) => {
                if let Some(why) = name_problem(group, kind.unwrap_or(""), name) {
                    problem(&["metadata", "name"], why);
                }
            }
            Some(other) => problem(
                &["metadata", "name"],
                format!(
                    "metadata.name must be a string, found {}; quote it",
                    describe(other)
                ),
            ),
        }
        match meta.get("namespace") {
            None => {}
            Some(Value::String(ns)) if !is_dns1123_label(ns) => problem(
                &["metadata", "namespace"],
                format!("metadata.namespace {ns:?} is not a valid namespace name (lowercase letters, digits and '-', at most 63 characters)"),
            ),
            Some(Value::String(_)) => {}
            Some(other) => problem(
                &["metadata", "namespace"],
                format!(
                    "metadata.namespace must be a string, found {}",
                    describe(other)
                ),
            ),
        }
        for field in ["labels", "annotations"] {
            match meta.get(field) {
                None | Some(Value::Null) => {}
                Some(Value::Object(entries)) => {
                    for (key, value) in entries {
                        if !value.is_string() {
                            problem(
                                &["metadata", field, key],
                                format!(
                                    "metadata.{field}.{key} must be a string, found {}; quote the value (e.g. \"true\")",
                                    describe(value)
                                ),
                            );
                        }
                    }
                }
                Some(other) => problem(
                    &["metadata", field],
                    format!(
                        "metadata.{field} must be a mapping of strings, found {}",
                        describe(other)
                    ),
                ),
            }
        }
    }

    if let (Some(api_version), Some(kind)) = (api_version, kind) {
        let (group, version) = split_api_version(api_version);
        if group == crate::GROUP {
            if version != crate::VERSION {
                problem(
                    &["apiVersion"],
                    format!(
                        "unknown apiVersion {api_version}; tend's kinds are served as {}",
                        crate::API_VERSION
                    ),
                );
            } else if crate::kinds::TendKind::from_kind(kind).is_none() {
                problem(
                    &["kind"],
                    format!("unknown kind {kind} in {api_version}; tend's kinds are CopyRule, RegistryMirror, ImmortalContainer and ChaosAgent"),
                );
            }
        } else if builtin::is_builtin_group(group) {
            match builtin::builtin_scope(group, version, kind) {
                Some(namespaced) => {
                    let has_ns = metadata.and_then(|m| m.get("namespace")).is_some();
                    if !namespaced && has_ns {
                        problem(
                            &["metadata", "namespace"],
                            format!("{kind} is cluster-scoped and cannot have metadata.namespace; remove it"),
                        );
                    }
                }
                None => {
                    let versions = builtin::builtin_versions(group, kind);
                    let hint = if versions.is_empty() {
                        "check the spelling of kind (kinds are CamelCase, e.g. Deployment)"
                            .to_string()
                    } else {
                        let group_prefix = if group.is_empty() {
                            String::new()
                        } else {
                            format!("{group}/")
                        };
                        format!(
                            "use apiVersion {}",
                            versions
                                .iter()
                                .map(|v| format!("{group_prefix}{v}"))
                                .collect::<Vec<_>>()
                                .join(" or ")
                        )
                    };
                    problem(
                        &["kind"],
                        format!("unknown kind {kind} in {api_version}; {hint}"),
                    );
                }
            }
        } else if !version.starts_with('v') || group.contains(char::is_whitespace) {
            problem(&["apiVersion"], format!("apiVersion {api_version:?} is not of the form <group>/<version> (e.g. apps/v1)"));
        }
    }
    problems
}

/// Why `name` is not a valid object name for this kind, if it is not.
fn name_problem(group: &str, kind: &str, name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("metadata.name is empty".into());
    }
    // RBAC objects (e.g. `system:controller:foo`) only need to be valid path segments.
    if group == "rbac.authorization.k8s.io" {
        if name == "." || name == ".." || name.contains('/') || name.contains('%') {
            return Some(format!(
                "metadata.name {name:?} may not be '.', '..' or contain '/' or '%'"
            ));
        }
        return None;
    }
    if !is_dns1123_subdomain(name) {
        return Some(format!(
            "metadata.name {name:?} is not a valid name: use lowercase letters, digits, '-' and '.', start and end with a letter or digit, at most 253 characters"
        ));
    }
    let _ = kind;
    None
}

pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        assert!(is_dns1123_subdomain("nginx.conf-1"));
        assert!(!is_dns1123_subdomain("Nginx"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(is_dns1123_label("web"));
        assert!(!is_dns1123_label("web.x"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
    }
}
