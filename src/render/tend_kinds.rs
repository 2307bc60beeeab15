//! tend's own kinds in the render stage: parse each `tend.dev/v1alpha1` document into its
//! Rust type (unknown fields and bad values are errors with a line), then expand it into the
//! plain objects it stands for.

use super::object::{Object, Origin, Problem};
use super::yaml::Document;
use super::{immortal, mirror};
use crate::kinds::{ChaosAgent, CopyRule, ImmortalContainer, RegistryMirror, TendKind, TendObject};
use serde_json::Value;
use std::path::Path;

/// Parse and semantically validate a tend document. The caller has already checked that its
/// kind is one of tend's.
pub fn parse(file: &Path, doc: &Document, kind: TendKind) -> Result<TendObject, Vec<Problem>> {
    let to_problem = |fp: crate::kinds::FieldProblem| {
        let dotted = fp.path.join(".");
        let message = if fp.message.contains(&dotted) || dotted.is_empty() {
            fp.message
        } else {
            format!("{dotted}: {}", fp.message)
        };
        Problem::new(file, doc.line_of(&fp.path), message)
    };
    // kube-derive's root struct cannot deny unknown fields, so check the top level here.
    let mut problems: Vec<Problem> = crate::kinds::root_field_problems(&doc.value)
        .into_iter()
        .map(to_problem)
        .collect();
    let parsed = match kind {
        TendKind::CopyRule => doc.parse_typed::<CopyRule>(file).map(TendObject::CopyRule),
        TendKind::RegistryMirror => doc
            .parse_typed::<RegistryMirror>(file)
            .map(TendObject::RegistryMirror),
        TendKind::ImmortalContainer => doc
            .parse_typed::<ImmortalContainer>(file)
            .map(TendObject::ImmortalContainer),
        TendKind::ChaosAgent => doc
            .parse_typed::<ChaosAgent>(file)
            .map(TendObject::ChaosAgent),
    };
    match parsed {
        Ok(object) => {
            problems.extend(object.validate().into_iter().map(to_problem));
            if problems.is_empty() {
                Ok(object)
            } else {
                Err(problems)
            }
        }
        Err(p) => {
            problems.push(p);
            Err(problems)
        }
    }
}

/// Set the namespace of a namespaced tend object if it has none.
pub fn default_namespace(object: &mut TendObject, namespace: &str) {
    let meta = match object {
        TendObject::RegistryMirror(m) => &mut m.metadata,
        TendObject::ImmortalContainer(i) => &mut i.metadata,
        TendObject::CopyRule(_) | TendObject::ChaosAgent(_) => return,
    };
    if meta.namespace.as_deref().unwrap_or("").is_empty() {
        meta.namespace = Some(namespace.to_string());
    }
}

/// The clusters a RegistryMirror is limited to, if any (SPEC 2, targeting).
pub fn spec_clusters(object: &TendObject) -> Option<&[String]> {
    match object {
        TendObject::RegistryMirror(m) => m.spec.clusters.as_deref(),
        _ => None,
    }
}

/// The plain objects a tend object expands to, offline. CopyRules need the cluster (their
/// sources and namespaces live there), so offline they expand to nothing and say so.
pub fn expand(
    object: &TendObject,
    origin: &Origin,
    online: bool,
    notes: &mut Vec<String>,
) -> Vec<Object> {
    let generated = |values: Vec<Value>, by: String| -> Vec<Object> {
        values
            .into_iter()
            .map(|value| {
                Object::new(
                    value,
                    Origin {
                        generated_by: Some(by.clone()),
                        ..origin.clone()
                    },
                )
            })
            .collect()
    };
    match object {
        TendObject::RegistryMirror(m) => generated(
            mirror::expand(m),
            format!("RegistryMirror {}", ns_name(&m.metadata)),
        ),
        TendObject::ImmortalContainer(i) => generated(
            vec![immortal::pod_value(i)],
            format!("ImmortalContainer {}", ns_name(&i.metadata)),
        ),
        // Online, copies are expanded once the whole desired set is known (render/copies.rs).
        TendObject::CopyRule(_) if online => Vec::new(),
        TendObject::CopyRule(rule) => {
            notes.push(format!(
                "CopyRule {}: copies are computed from the cluster's {}s and namespaces, so offline only the rule itself is rendered",
                rule.metadata.name.as_deref().unwrap_or(""),
                kind_name(&rule.spec.kind)
            ));
            Vec::new()
        }
        TendObject::ChaosAgent(_) => Vec::new(),
    }
}

fn kind_name<T: serde::Serialize>(kind: &T) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn ns_name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or("")
    )
}

/// The tend object back as JSON, as it will be applied (namespace defaulted, defaults filled).
pub fn to_value(object: &TendObject) -> Value {
    let value = match object {
        TendObject::CopyRule(o) => serde_json::to_value(o),
        TendObject::RegistryMirror(o) => serde_json::to_value(o),
        TendObject::ImmortalContainer(o) => serde_json::to_value(o),
        TendObject::ChaosAgent(o) => serde_json::to_value(o),
    };
    let mut value = value.unwrap_or(Value::Null);
    // Status is the cluster's to write, never part of desired state.
    if let Some(map) = value.as_object_mut() {
        map.remove("status");
    }
    value
}
