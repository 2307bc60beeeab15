//! What CopyRules read from the cluster: the namespaces (targets), each rule's label-selected
//! sources, and whatever already sits where a copy would go.

use super::CopyRule;
use crate::kinds::read::{ReadQuery, Reader};
use crate::object::{Object, ObjectKey};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The part of the cluster CopyRules are expanded against.
#[derive(Debug, Clone, Default)]
pub struct CopyView {
    /// Live Namespace objects.
    pub namespaces: Vec<Value>,
    /// Live source objects of each rule (by rule name), already label-selected.
    pub sources: BTreeMap<String, Vec<Value>>,
    /// Live objects at the keys copies would have (same kind and name as a source).
    pub same_named: BTreeMap<ObjectKey, Value>,
    /// Namespaces no rule copies into: tend's own state namespace.
    pub reserved_namespaces: BTreeSet<String>,
}

/// Read what `rules` need into `view`: one LIST of namespaces, one label-selected LIST of
/// sources per rule, and one cluster-wide LIST by name per source (git's sources included).
pub async fn read<R: Reader>(
    reader: &R,
    rules: &[&CopyRule],
    desired: &[Object],
    view: &mut CopyView,
) -> Result<(), R::Error> {
    if rules.is_empty() {
        return Ok(());
    }
    if let Some(namespaces) = reader.list(ReadQuery::all("", "v1", "Namespace")).await? {
        view.namespaces = namespaces;
    }
    for rule in rules {
        let kind = rule.spec.kind.as_str();
        let source_namespace = rule.spec.source_namespace.as_str();
        let selector = rule.spec.selector.to_query();
        let query = ReadQuery {
            namespace: Some(source_namespace),
            label_selector: Some(&selector),
            ..ReadQuery::all("", "v1", kind)
        };
        let sources = match reader.list(query).await {
            Ok(Some(items)) => items,
            Ok(None) => continue,
            Err(err) if R::is_not_found(&err) => Vec::new(),
            Err(err) => return Err(err),
        };
        let mut names: BTreeSet<String> = sources
            .iter()
            .filter_map(|s| s.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        names.extend(
            desired
                .iter()
                .filter(|o| o.group().is_empty() && o.kind() == kind)
                .filter(|o| o.namespace() == Some(source_namespace))
                .map(|o| o.name().to_string()),
        );
        for source_name in names {
            let field = format!("metadata.name={source_name}");
            // Whose it is shows in its labels: metadata is enough.
            let query = ReadQuery {
                field_selector: Some(&field),
                metadata_only: true,
                ..ReadQuery::all("", "v1", kind)
            };
            for item in reader.list(query).await?.unwrap_or_default() {
                view.same_named.insert(ObjectKey::of_value(&item), item);
            }
        }
        let name = rule.metadata.name.clone().unwrap_or_default();
        view.sources.insert(name, sources);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::view::tests::MemoryCluster;
    use serde_json::json;

    #[test]
    fn reads_namespaces_sources_and_same_named_objects() {
        let cluster = MemoryCluster::new(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ca", "namespace": "src", "labels": {"copy": "yes"}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "src"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ca", "namespace": "a"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "git", "namespace": "a"}}),
        ]);
        let rule: CopyRule = serde_json::from_value(json!({"apiVersion": "tend.dev/v1alpha1", "kind": "CopyRule", "metadata": {"name": "r"},
            "spec": {"kind": "ConfigMap", "sourceNamespace": "src", "selector": {"matchLabels": {"copy": "yes"}}}}))
        .expect("rule");
        let desired = [Object::new(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "git", "namespace": "src"}}),
            crate::object::Origin {
                file: "git.yaml".into(),
                line: 1,
                generated_by: None,
                sealed: Vec::new(),
            },
        )];
        let mut view = CopyView::default();
        futures::executor::block_on(read(&cluster, &[&rule], &desired, &mut view))
            .expect("read");
        assert_eq!(view.namespaces.len(), 1);
        let sources: Vec<&Value> = view.sources["r"].iter().collect();
        assert_eq!(sources.len(), 1);
        assert_eq!(sources[0]["metadata"]["name"], "ca");
        let same_named: Vec<String> = view.same_named.keys().map(|k| k.to_string()).collect();
        // By the names of the live source and of git's source, wherever they are.
        assert_eq!(
            same_named,
            ["ConfigMap a/ca", "ConfigMap a/git", "ConfigMap src/ca"]
        );
    }
}
