//! CopyRule expansion (README "CopyRule"): one copy of each selected source
//! object per target namespace. Needs a view of the cluster ([`CopyView`]): the namespaces,
//! the source objects, and whatever already sits where a copy would go. Pure.

use super::{CopyRule, CopyView};
use crate::kinds::run::CopyOutcome;
use crate::kinds::Kind;
use crate::object::{Object, ObjectKey, Origin};
use crate::PART_OF_LABEL;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Annotation on every copy naming its source, `<namespace>/<name>`.
pub const COPIED_FROM_ANNOTATION: &str = "tend.dev/copied-from";

fn labels_of(value: &Value) -> BTreeMap<String, String> {
    value
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Whether a live object carries this run's ApplySet label, i.e. tend created it.
fn is_ours(value: &Value, applyset_id: &str) -> bool {
    str_at(
        value,
        &format!("/metadata/labels/{}", PART_OF_LABEL.replace('/', "~1")),
    ) == applyset_id
}

/// Expand one rule against the desired set and the cluster's view. `applyset_id` is this
/// run's: live objects labelled with it were created by tend.
pub fn expand_rule(
    rule: &CopyRule,
    origin: &Origin,
    desired: &[Object],
    live: &CopyView,
    applyset_id: &str,
) -> (Vec<Object>, CopyOutcome) {
    let spec = &rule.spec;
    let rule_name = rule.metadata.name.clone().unwrap_or_default();
    let kind = spec.kind.as_str();
    let owner = rule.key();

    // Sources: desired objects (git wins) plus live ones, selected by label.
    // A source that git defines is judged by git's version, even before it is applied (its
    // labels may have just been removed).
    let in_git: BTreeSet<&str> = desired
        .iter()
        .filter(|o| o.group().is_empty() && o.kind() == kind)
        .filter(|o| o.namespace() == Some(spec.source_namespace.as_str()))
        .map(Object::name)
        .collect();
    let mut sources: BTreeMap<String, Value> = BTreeMap::new();
    for value in live.sources.get(&rule_name).into_iter().flatten() {
        if in_git.contains(str_at(value, "/metadata/name")) {
            continue;
        }
        // A source tend applied from git that git no longer has is being pruned this run.
        if is_ours(value, applyset_id) {
            continue;
        }
        if spec.selector.matches(&labels_of(value)) {
            sources.insert(str_at(value, "/metadata/name").to_string(), value.clone());
        }
    }
    for object in desired {
        if object.group().is_empty()
            && object.kind() == kind
            && object.namespace() == Some(spec.source_namespace.as_str())
            && spec.selector.matches(&labels_of(&object.value))
        {
            sources.insert(object.name().to_string(), object.value.clone());
        }
    }

    // Targets: Active namespaces, live or created by this run.
    let mut namespaces: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for ns in &live.namespaces {
        let phase = str_at(ns, "/status/phase");
        if phase.is_empty() || phase == "Active" {
            namespaces.insert(str_at(ns, "/metadata/name").to_string(), labels_of(ns));
        }
    }
    for object in desired {
        if object.group().is_empty() && object.kind() == "Namespace" {
            namespaces
                .entry(object.name().to_string())
                .or_insert_with(|| labels_of(&object.value));
        }
    }
    let excluded: BTreeSet<&str> = spec
        .exclude_namespaces
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let targets: Vec<String> = namespaces
        .into_iter()
        .filter(|(name, _)| {
            *name != spec.source_namespace
                && !excluded.contains(name.as_str())
                && !live.reserved_namespaces.contains(name)
        })
        .filter(|(name, _)| {
            spec.target_namespaces
                .as_ref()
                .is_none_or(|list| list.iter().any(|t| t == name))
        })
        .filter(|(_, labels)| {
            spec.namespace_selector
                .as_ref()
                .is_none_or(|sel| sel.matches(labels))
        })
        .map(|(name, _)| name)
        .collect();

    let desired_keys: BTreeSet<ObjectKey> = desired.iter().map(Object::key).collect();
    let mut copies = Vec::new();
    let mut conflicts = Vec::new();
    for (name, source) in &sources {
        for target in &targets {
            let key = ObjectKey {
                group: String::new(),
                kind: kind.to_string(),
                namespace: Some(target.clone()),
                name: name.clone(),
            };
            let ours = live
                .same_named
                .get(&key)
                .is_none_or(|existing| is_ours(existing, applyset_id));
            if desired_keys.contains(&key) || !ours {
                conflicts.push(format!("{target}/{name}"));
                continue;
            }
            copies.push(Object::new(
                copy_of(source, kind, target, &spec.source_namespace),
                Origin {
                    generated_by: Some(owner.clone()),
                    sealed: Vec::new(),
                    ..origin.clone()
                },
            ));
        }
    }
    let outcome = CopyOutcome {
        rule: rule_name,
        copies: copies.len(),
        targets,
        conflicts,
    };
    (copies, outcome)
}

/// Argo CD's tracking annotation: with it, `app.kubernetes.io/instance` is Argo CD's too.
const ARGOCD_TRACKING_ANNOTATION: &str = "argocd.argoproj.io/tracking-id";

/// Remove the labels by which GitOps tools (an ApplySet, Argo CD, Flux) track the source as
/// theirs: a copy carrying them would be claimed, or pruned, by that tool. tend's own
/// ApplySet label is added to the copy afterwards like to every object it applies.
fn drop_tracking_labels(labels: &mut Map<String, Value>, source: &Value) {
    labels.remove(PART_OF_LABEL);
    labels.remove("argocd.argoproj.io/instance");
    let argo_tracked = source
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(ARGOCD_TRACKING_ANNOTATION));
    if argo_tracked {
        labels.remove("app.kubernetes.io/instance");
    }
    labels.retain(|key, _| !key.starts_with("kustomize.toolkit.fluxcd.io/"));
}

/// A copy of `source` for `namespace`: same name, data and type, labels kept, server fields
/// stripped, annotated with its origin.
fn copy_of(source: &Value, kind: &str, namespace: &str, source_namespace: &str) -> Value {
    let name = str_at(source, "/metadata/name");
    let mut labels: Map<String, Value> = source
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    drop_tracking_labels(&mut labels, source);
    let mut copy = json!({
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": { COPIED_FROM_ANNOTATION: format!("{source_namespace}/{name}") },
        },
    });
    if !labels.is_empty() {
        copy["metadata"]["labels"] = Value::Object(labels);
    }
    let fields: &[&str] = if kind == "Secret" {
        &["type", "data", "stringData", "immutable"]
    } else {
        &["data", "binaryData", "immutable"]
    };
    for field in fields {
        if let Some(v) = source.get(*field) {
            copy[*field] = v.clone();
        }
    }
    copy
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(extra: Value) -> CopyRule {
        let mut spec = json!({"kind":"ConfigMap","sourceNamespace":"default","selector":{"matchLabels":{"copyrator":"true"}}});
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                s.insert(k.clone(), v.clone());
            }
        }
        serde_json::from_value(json!({"apiVersion":"tend.dev/v1alpha1","kind":"CopyRule","metadata":{"name":"r"},"spec":spec})).unwrap()
    }

    fn origin() -> Origin {
        Origin {
            file: "r.yaml".into(),
            line: 1,
            sealed: Vec::new(),
            generated_by: None,
        }
    }

    fn ns(name: &str, phase: &str) -> Value {
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":name,"labels":{"team":name}},"status":{"phase":phase}})
    }

    fn view() -> CopyView {
        CopyView {
            namespaces: vec![ns("default", "Active"), ns("a", "Active"), ns("b", "Active"), ns("gone", "Terminating"), ns("kube-system", "Active")],
            sources: [("r".to_string(), vec![
                json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ca","namespace":"default","labels":{"copyrator":"true"},"uid":"x","resourceVersion":"9"},"data":{"ca.crt":"PEM"}}),
            ])].into(),
            ..CopyView::default()
        }
    }

    #[test]
    fn copies_into_every_active_namespace_but_source_and_excluded() {
        let (copies, outcome) = expand_rule(
            &rule(json!({"excludeNamespaces":["kube-system"]})),
            &origin(),
            &[],
            &view(),
            "set-1",
        );
        let keys: Vec<String> = copies.iter().map(|c| c.key().to_string()).collect();
        assert_eq!(keys, vec!["ConfigMap a/ca", "ConfigMap b/ca"]);
        assert_eq!(outcome.targets, vec!["a", "b"]);
        let c = &copies[0].value;
        assert_eq!(
            c["metadata"]["annotations"][COPIED_FROM_ANNOTATION],
            "default/ca"
        );
        assert_eq!(c["data"]["ca.crt"], "PEM");
        assert!(
            c["metadata"].get("uid").is_none() && c["metadata"].get("resourceVersion").is_none()
        );
        assert_eq!(c["metadata"]["labels"]["copyrator"], "true");
        assert_eq!(
            copies[0].origin.generated_by.as_ref().map(ObjectKey::kind_and_name),
            Some("CopyRule r".to_string())
        );
    }

    #[test]
    fn copies_drop_the_tracking_labels_of_other_tools() {
        let mut live = view();
        let labels = json!({"copyrator": "true", "app": "ca",
            PART_OF_LABEL: "applyset-someone-else-v1",
            "argocd.argoproj.io/instance": "platform",
            "app.kubernetes.io/instance": "platform",
            "kustomize.toolkit.fluxcd.io/name": "infra",
            "kustomize.toolkit.fluxcd.io/namespace": "flux-system"});
        let source = |annotations: Value| {
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ca","namespace":"default",
                "labels": labels.clone(), "annotations": annotations},"data":{"ca.crt":"PEM"}})
        };
        let tracked = json!({"argocd.argoproj.io/tracking-id": "platform:/ConfigMap:default/ca"});
        live.sources.insert("r".into(), vec![source(tracked)]);
        let (copies, _) = expand_rule(&rule(json!({})), &origin(), &[], &live, "set-1");
        let kept = |c: &Object| {
            let mut keys: Vec<String> = labels_of(&c.value).into_keys().collect();
            keys.sort();
            keys
        };
        assert_eq!(kept(&copies[0]), ["app", "copyrator"]);
        // Without Argo CD's tracking annotation, app.kubernetes.io/instance is the app's own.
        live.sources.insert("r".into(), vec![source(json!({}))]);
        let (copies, _) = expand_rule(&rule(json!({})), &origin(), &[], &live, "set-1");
        assert_eq!(kept(&copies[0]), ["app", "app.kubernetes.io/instance", "copyrator"]);
    }

    #[test]
    fn foreign_objects_are_conflicts_and_our_copies_are_not() {
        let mut live = view();
        live.same_named.insert(
            ObjectKey::new("", "ConfigMap", Some("a"), "ca"),
            json!({"metadata":{"name":"ca","namespace":"a"}}),
        );
        live.same_named.insert(
            ObjectKey::new("", "ConfigMap", Some("b"), "ca"),
            json!({"metadata":{"name":"ca","namespace":"b","labels":{PART_OF_LABEL:"set-1"}}}),
        );
        let (copies, outcome) = expand_rule(
            &rule(json!({"targetNamespaces":["a","b"]})),
            &origin(),
            &[],
            &live,
            "set-1",
        );
        assert_eq!(copies.len(), 1);
        assert_eq!(copies[0].namespace(), Some("b"));
        assert_eq!(outcome.conflicts, vec!["a/ca"]);
    }

    #[test]
    fn selectors_and_desired_sources_and_namespaces() {
        let desired = vec![
            Object::new(
                json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"new","labels":{"team":"x"}}}),
                origin(),
            ),
            Object::new(
                json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"git-cm","namespace":"default","labels":{"copyrator":"true"}},"data":{"k":"v"}}),
                origin(),
            ),
        ];
        let (copies, outcome) = expand_rule(
            &rule(json!({"namespaceSelector":{"matchLabels":{"team":"x"}}})),
            &origin(),
            &desired,
            &view(),
            "set-1",
        );
        assert_eq!(outcome.targets, vec!["new"]);
        let keys: Vec<String> = copies.iter().map(|c| c.key().to_string()).collect();
        assert_eq!(keys, vec!["ConfigMap new/ca", "ConfigMap new/git-cm"]);
    }
}
