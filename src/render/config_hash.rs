//! Config-hash rollouts (README "Config hash"): every workload's pod template gets the
//! annotation `tend.dev/config-hash`, a SHA-256 over the content of each ConfigMap and Secret
//! the template references. A change to that content changes the pod template, so the
//! workload rolls; nothing else changes the hash.

use crate::object::{Object, ObjectKey};
use base64::Engine;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

pub const CONFIG_HASH_ANNOTATION: &str = "tend.dev/config-hash";
/// Opt-in label (value `"true"`) for workloads that live in the cluster but not in git
/// (README "Config hash"): a label, so the server can select them.
pub const RELOAD_LABEL: &str = "tend.dev/reload";

/// A ConfigMap or Secret referenced by a pod template, by kind and name (same namespace).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConfigRef {
    pub kind: &'static str,
    pub name: String,
}

/// JSON pointer of the pod template of a workload kind, if it has one.
pub fn pod_template_pointer(group: &str, kind: &str) -> Option<&'static str> {
    match (group, kind) {
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") | ("batch", "Job") => {
            Some("/spec/template")
        }
        ("batch", "CronJob") => Some("/spec/jobTemplate/spec/template"),
        _ => None,
    }
}

/// Every ConfigMap/Secret a pod template references: volumes, projected volume sources,
/// `envFrom` and `env[].valueFrom` of containers and init containers.
pub fn references(template: &Value) -> BTreeSet<ConfigRef> {
    let mut refs = BTreeSet::new();
    let mut add = |kind: &'static str, name: Option<&Value>| {
        if let Some(name) = name.and_then(Value::as_str).filter(|n| !n.is_empty()) {
            refs.insert(ConfigRef {
                kind,
                name: name.to_string(),
            });
        }
    };
    let spec = template.get("spec");
    for volume in list(spec, "volumes") {
        add(
            "ConfigMap",
            crate::object::at(volume, &["configMap", "name"]),
        );
        add(
            "Secret",
            crate::object::at(volume, &["secret", "secretName"]),
        );
        for source in list(volume.get("projected"), "sources") {
            add(
                "ConfigMap",
                crate::object::at(source, &["configMap", "name"]),
            );
            add("Secret", crate::object::at(source, &["secret", "name"]));
        }
    }
    for containers in ["containers", "initContainers", "ephemeralContainers"] {
        for container in list(spec, containers) {
            for from in list(Some(container), "envFrom") {
                add(
                    "ConfigMap",
                    crate::object::at(from, &["configMapRef", "name"]),
                );
                add("Secret", crate::object::at(from, &["secretRef", "name"]));
            }
            for env in list(Some(container), "env") {
                add(
                    "ConfigMap",
                    crate::object::at(env, &["valueFrom", "configMapKeyRef", "name"]),
                );
                add(
                    "Secret",
                    crate::object::at(env, &["valueFrom", "secretKeyRef", "name"]),
                );
            }
        }
    }
    refs
}

/// [`references`] with the key of each referenced object (in the template's `namespace`).
pub fn reference_keys(template: &Value, namespace: Option<&str>) -> Vec<(ConfigRef, ObjectKey)> {
    references(template)
        .into_iter()
        .map(|reference| {
            let key = ObjectKey {
                group: String::new(),
                kind: reference.kind.to_string(),
                namespace: namespace.map(str::to_string),
                name: reference.name.clone(),
            };
            (reference, key)
        })
        .collect()
}

fn list<'a>(parent: Option<&'a Value>, field: &str) -> impl Iterator<Item = &'a Value> {
    parent
        .and_then(|p| p.get(field))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The content of a ConfigMap or Secret as key → bytes. Secrets are decoded, and
/// `stringData` merged over `data` as the API server does, so the same content hashes the same
/// however it is written.
pub fn content(object: &Value) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let b64 = base64::engine::general_purpose::STANDARD;
    let is_secret = object.get("kind").and_then(Value::as_str) == Some("Secret");
    let entries = |field: &str| {
        object
            .get(field)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    for (key, value) in entries("data") {
        let text = value.as_str().unwrap_or_default();
        let bytes = if is_secret {
            b64.decode(text.trim())
                .unwrap_or_else(|_| text.as_bytes().to_vec())
        } else {
            text.as_bytes().to_vec()
        };
        out.insert(key, bytes);
    }
    let second = if is_secret {
        "stringData"
    } else {
        "binaryData"
    };
    for (key, value) in entries(second) {
        let text = value.as_str().unwrap_or_default();
        let bytes = if is_secret {
            text.as_bytes().to_vec()
        } else {
            b64.decode(text.trim())
                .unwrap_or_else(|_| text.as_bytes().to_vec())
        };
        out.insert(key, bytes);
    }
    if let Some(t) = object.get("type").and_then(Value::as_str) {
        out.insert("\0type".into(), t.as_bytes().to_vec());
    }
    out
}

/// SHA-256 over the referenced objects in canonical order: for each (kind, name) in sorted
/// order, then each key in sorted order, length-prefixed fields, so no two different inputs
/// encode to the same bytes.
pub fn hash(found: &BTreeMap<ConfigRef, BTreeMap<String, Vec<u8>>>) -> String {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    for (reference, data) in found {
        field(reference.kind.as_bytes());
        field(reference.name.as_bytes());
        field(&(data.len() as u64).to_le_bytes());
        for (key, value) in data {
            field(key.as_bytes());
            field(value);
        }
    }
    hex::encode(hasher.finalize())
}

/// Set `tend.dev/config-hash` on every workload in `objects` that references at least one
/// ConfigMap or Secret. References are looked up first in `objects`, then in `external`
/// (objects read from the cluster; empty offline). Returns a note for each reference found in
/// neither, which is left out of the hash, and those references.
pub fn annotate_reporting_missing(
    objects: &mut [Object],
    external: &BTreeMap<ObjectKey, Value>,
) -> (Vec<String>, BTreeSet<ObjectKey>) {
    annotate_where(objects, external, |_| true)
}

/// [`annotate_reporting_missing`] for only the workloads that reference one of `changed`:
/// the others' hashes and notes cannot differ from what they already have.
pub fn reannotate(
    objects: &mut [Object],
    external: &BTreeMap<ObjectKey, Value>,
    changed: &BTreeSet<ObjectKey>,
) -> (Vec<String>, BTreeSet<ObjectKey>) {
    annotate_where(objects, external, |key| changed.contains(key))
}

/// Annotate the workloads with a reference for which `affected` holds.
fn annotate_where(
    objects: &mut [Object],
    external: &BTreeMap<ObjectKey, Value>,
    affected: impl Fn(&ObjectKey) -> bool,
) -> (Vec<String>, BTreeSet<ObjectKey>) {
    let mut missing = BTreeSet::new();
    let desired: BTreeMap<ObjectKey, BTreeMap<String, Vec<u8>>> = objects
        .iter()
        .filter(|o| o.group().is_empty() && matches!(o.kind(), "ConfigMap" | "Secret"))
        .map(|o| (o.key(), content(&o.value)))
        .collect();
    let mut notes = Vec::new();
    for object in objects.iter_mut() {
        let Some(pointer) = pod_template_pointer(object.group(), object.kind()) else {
            continue;
        };
        let Some(template) = object.value.pointer(pointer) else {
            continue;
        };
        let namespace = object.namespace().map(str::to_string);
        let refs = reference_keys(template, namespace.as_deref());
        if !refs.iter().any(|(_, key)| affected(key)) {
            continue;
        }
        let mut found = BTreeMap::new();
        for (reference, key) in refs {
            if let Some(data) = desired.get(&key) {
                found.insert(reference, data.clone());
            } else if let Some(live) = external.get(&key) {
                found.insert(reference, content(live));
            } else {
                missing.insert(key.clone());
                notes.push(format!(
                    "config-hash of {} leaves out {} {}/{}: it is not in the desired set{}",
                    object.key(),
                    reference.kind,
                    namespace.as_deref().unwrap_or(""),
                    reference.name,
                    if external.is_empty() {
                        " (offline: not read from the cluster)"
                    } else {
                        " nor in the cluster"
                    }
                ));
            }
        }
        let digest = hash(&found);
        if let Some(template) = object.value.pointer_mut(pointer) {
            set_annotation(template, CONFIG_HASH_ANNOTATION, &digest);
        }
    }
    (notes, missing)
}

/// Set `metadata.annotations[key] = value` on an object or pod template, creating maps.
pub fn set_annotation(target: &mut Value, key: &str, value: &str) {
    let Some(obj) = target.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(key.to_string(), Value::String(value.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Origin;
    use serde_json::json;

    fn obj(value: Value) -> Object {
        Object::new(
            value,
            Origin {
                file: "t.yaml".into(),
                line: 1,
                generated_by: None,
                sealed: Vec::new(),
            },
        )
    }

    fn deployment(template_spec: Value) -> Object {
        obj(
            json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ns"},
            "spec":{"template":{"metadata":{"labels":{"app":"web"}},"spec":template_spec}}}),
        )
    }

    fn hash_of(objects: &[Object]) -> Option<String> {
        objects
            .iter()
            .find(|o| o.kind() == "Deployment")
            .and_then(|o| {
                o.value
                    .pointer("/spec/template/metadata/annotations/tend.dev~1config-hash")
            })
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    fn run(cm_data: &str, secret_data: &str) -> Option<String> {
        let mut objects = vec![
            deployment(json!({"containers":[{"name":"c","image":"x",
                "envFrom":[{"secretRef":{"name":"s"}}],
                "env":[{"name":"A","valueFrom":{"configMapKeyRef":{"name":"other","key":"k"}}}]}],
                "volumes":[{"name":"v","configMap":{"name":"cm"}}]})),
            obj(
                json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns"},"data":{"nginx.conf":cm_data}}),
            ),
            obj(
                json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns"},"stringData":{"pw":secret_data}}),
            ),
            obj(
                json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"unrelated","namespace":"ns"},"data":{"x":"1"}}),
            ),
        ];
        let (notes, _) = annotate_reporting_missing(&mut objects, &BTreeMap::new());
        assert_eq!(
            notes.len(),
            1,
            "the missing ConfigMap 'other' is noted: {notes:?}"
        );
        hash_of(&objects)
    }

    #[test]
    fn hash_follows_referenced_content_only() {
        let base = run("a", "p").unwrap();
        assert_eq!(base.len(), 64);
        assert_eq!(run("a", "p").unwrap(), base);
        assert_ne!(run("b", "p").unwrap(), base);
        assert_ne!(run("a", "q").unwrap(), base);
    }

    #[test]
    fn secret_data_and_string_data_hash_the_same() {
        let enc = base64::engine::general_purpose::STANDARD.encode("hunter2");
        let a = content(&json!({"kind":"Secret","data":{"pw":enc}}));
        let b = content(&json!({"kind":"Secret","stringData":{"pw":"hunter2"}}));
        assert_eq!(a, b);
    }

    #[test]
    fn projected_and_cronjob_references() {
        let template = json!({"spec":{"volumes":[{"name":"p","projected":{"sources":[
            {"configMap":{"name":"a"}},{"secret":{"name":"b"}}]}}]}});
        let refs: Vec<_> = references(&template)
            .into_iter()
            .map(|r| (r.kind, r.name))
            .collect();
        assert_eq!(
            refs,
            vec![("ConfigMap", "a".to_string()), ("Secret", "b".to_string())]
        );
        assert_eq!(
            pod_template_pointer("batch", "CronJob"),
            Some("/spec/jobTemplate/spec/template")
        );
    }

    #[test]
    fn workloads_without_references_get_no_annotation() {
        let mut objects = vec![deployment(json!({"containers":[{"name":"c","image":"x"}]}))];
        assert!(annotate_reporting_missing(&mut objects, &BTreeMap::new())
            .0
            .is_empty());
        assert_eq!(hash_of(&objects), None);
    }
}
