//! Prepare the desired set for the cluster: resolve every object against discovery (unknown
//! kinds, scope mismatches and missing CRDs are reported together, before anything is
//! written), default namespaces, label ApplySet members, fold Secret `stringData`.

use super::options::EngineError;
use crate::cluster::{Resource, Resources};
use crate::object::{split_api_version, Object, ObjectKey};
use crate::plan::inventory;
use crate::problem::{Problem, Problems};
use serde_json::Value;
use std::collections::BTreeSet;

/// A desired object ready for the cluster: labelled as an ApplySet member, with its resource.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub object: Object,
    /// `object`'s key, read once: the engine looks objects up by key many times per run.
    pub key: ObjectKey,
    /// None when the kind is defined by a CRD of this same run and not served yet.
    pub resource: Option<Resource>,
}

impl Prepared {
    pub fn new(object: Object, resource: Option<Resource>) -> Self {
        let key = object.key();
        Prepared {
            object,
            key,
            resource,
        }
    }
}

/// Resolve every desired object against discovery, or report every problem at once.
pub fn prepare(
    resources: &Resources,
    desired: Vec<Object>,
    default_namespace: &str,
    applyset_id: &str,
) -> Result<Vec<Prepared>, EngineError> {
    let defined_here = kinds_defined_here(&desired);
    let mut problems = Vec::new();
    let mut prepared = Vec::with_capacity(desired.len());
    for mut object in desired {
        let (group, version) = split_api_version(object.api_version());
        let (group, version) = (group.to_string(), version.to_string());
        let resource = resources.get(&group, &version, object.kind()).cloned();
        let problem =
            |message: String| Problem::new(&object.origin.file, object.origin.line, message);
        match &resource {
            Some(r) if r.namespaced && object.namespace().is_none() => {
                object.set_namespace(default_namespace)
            }
            // kustomize's namespace transformer sets it on kinds its schema does not know,
            // charts set it too, and kube-apiserver drops it on write: from a build or a
            // chart, drop it as the server would.
            Some(r) if !r.namespaced && object.origin.is_tool_output() => object.clear_namespace(),
            Some(r) if !r.namespaced && object.namespace().is_some() => {
                problems.push(problem(format!(
                    "{} is cluster-scoped and cannot have metadata.namespace; remove it",
                    object.kind()
                )));
                continue;
            }
            Some(_) => {}
            None if defined_here.contains(&(group.clone(), object.kind().to_string())) => {}
            None if group == crate::GROUP => problems.push(problem(format!(
                "the cluster does not serve {} {}: tend's CRDs are not installed; install them with `tend crds | kubectl apply -f -`",
                object.api_version(),
                object.kind()
            ))),
            None => {
                let hint = match resources.any_version(&group, object.kind()) {
                    Some(r) => format!("; the cluster serves it as {}", r.api.api_version),
                    None => "; check apiVersion and kind, or install the CRD that defines it".to_string(),
                };
                problems.push(problem(format!(
                    "the cluster does not serve {} {}{hint}",
                    object.api_version(),
                    object.kind()
                )));
                continue;
            }
        }
        inventory::label_member(&mut object.value, applyset_id);
        secret_string_data_to_data(&mut object.value);
        prepared.push(Prepared::new(object, resource));
    }
    if problems.is_empty() {
        Ok(prepared)
    } else {
        problems.sort();
        Err(EngineError::Unresolved(Problems(problems)))
    }
}

/// Kinds whose CRD is part of this desired set: not served yet on a first run.
fn kinds_defined_here(desired: &[Object]) -> BTreeSet<(String, String)> {
    desired
        .iter()
        .filter(|o| o.kind() == "CustomResourceDefinition")
        .filter_map(|o| {
            let spec = o.value.get("spec")?;
            Some((
                spec.get("group")?.as_str()?.to_string(),
                spec.pointer("/names/kind")?.as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Fold a Secret's `stringData` into `data` (base64), as the API server does on write. The
/// server never returns `stringData`, so applying it would make every run look changed.
fn secret_string_data_to_data(value: &mut Value) {
    use base64::Engine;
    if value["apiVersion"] != "v1" || value["kind"] != "Secret" {
        return;
    }
    let Some(map) = value.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(data) = data.as_object_mut() {
        for (key, v) in string_data {
            let text = v.as_str().unwrap_or_default();
            data.insert(
                key,
                Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

/// The prepared objects with the fields other managers own taken out
/// (`tend.dev/ignore-fields-of`) and the live values at the pointers they name
/// (`tend.dev/keep-live-at`), where an object asks and its live copy says so; `None` when
/// that is none of them.
pub fn without_others_fields(
    prepared: &[Prepared],
    live: &std::collections::HashMap<crate::object::ObjectKey, Value>,
) -> Option<Vec<Prepared>> {
    use crate::plan::{keep_live, others_fields};
    let asked = |p: &&Prepared| {
        !others_fields::managers(&p.object.value).is_empty()
            || !keep_live::pointers(&p.object.value).is_empty()
    };
    if !prepared.iter().any(|p| asked(&p)) {
        return None;
    }
    let rewritten = prepared
        .iter()
        .map(|p| {
            let stripped = live.get(&p.object.key()).and_then(|live| {
                let kept = keep_live::with_live_values(&p.object.value, live);
                let desired = kept.as_ref().unwrap_or(&p.object.value);
                others_fields::without_others_fields(desired, live).or(kept)
            });
            match stripped {
                Some(value) => Prepared::new(
                    Object::new(value, p.object.origin.clone()),
                    p.resource.clone(),
                ),
                None => p.clone(),
            }
        })
        .collect();
    Some(rewritten)
}
