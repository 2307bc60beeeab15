//! The cluster as tend's kinds see it ([`ClusterView`]), and how they read it ([`read`]).
//!
//! Reading goes through [`Reader`], implemented over the Kubernetes client by the apply stage,
//! so this module (like all of `kinds/`) does no I/O and its reads are tested against an
//! in-memory cluster.

use super::copy_rule::{self, CopyRule, CopyView};
use super::read::{ReadQuery, Reader};
use super::{TendKind, TendObject};
use crate::object::{Object, ObjectKey, Origin};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What rendering is completed with: what tend read from the cluster.
#[derive(Debug, Clone, Default)]
pub struct ClusterView {
    /// The ApplySet id of this run: live objects labelled with it were created by tend.
    pub applyset_id: String,
    /// uids of live tend objects whose kind owns what it expands to, for ownerReferences.
    pub uids: BTreeMap<ObjectKey, String>,
    /// ConfigMaps/Secrets read from the cluster, for config hashes of references that are
    /// not in the desired set.
    pub live_config: BTreeMap<ObjectKey, Value>,
    /// What CopyRules are expanded against.
    pub copies: CopyView,
}

impl ClusterView {
    /// An empty view for a run with this ApplySet id and state namespace (which no CopyRule
    /// copies into).
    pub fn new(applyset_id: &str, state_namespace: &str) -> Self {
        let mut view = ClusterView {
            applyset_id: applyset_id.to_string(),
            ..ClusterView::default()
        };
        view.copies
            .reserved_namespaces
            .insert(state_namespace.to_string());
        view
    }
}

/// Read what `tend` (the rendered tend objects) needs from the cluster into `view`: the uids
/// of live owners (one LIST per owning kind present), then each kind's own reads.
/// `desired` is the rendered set.
pub async fn read<R: Reader>(
    reader: &R,
    tend: &[(TendObject, Origin)],
    desired: &[Object],
    view: &mut ClusterView,
) -> Result<(), R::Error> {
    let owners: BTreeSet<TendKind> = tend
        .iter()
        .map(|(t, _)| t.tend_kind())
        .filter(|k| k.owns_generated())
        .collect();
    for kind in owners {
        let query = ReadQuery {
            metadata_only: true,
            ..ReadQuery::all(crate::GROUP, crate::VERSION, kind.kind())
        };
        for item in reader.list(query).await?.unwrap_or_default() {
            if let Some(uid) = item.pointer("/metadata/uid").and_then(Value::as_str) {
                view.uids
                    .insert(ObjectKey::of_value(&item), uid.to_string());
            }
        }
    }
    let rules: Vec<&CopyRule> = tend
        .iter()
        .filter_map(|(t, _)| match t {
            TendObject::CopyRule(rule) => Some(rule),
            _ => None,
        })
        .collect();
    copy_rule::copy_view::read(reader, &rules, desired, &mut view.copies).await
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::object::split_api_version;

    /// A cluster in memory: LIST by kind, namespace, `a=b` label and `metadata.name=x` field
    /// selectors. Serves every kind.
    pub(crate) struct MemoryCluster {
        objects: Vec<Value>,
    }

    impl MemoryCluster {
        pub(crate) fn new(objects: Vec<Value>) -> Self {
            MemoryCluster { objects }
        }
    }

    impl Reader for MemoryCluster {
        type Error = String;

        async fn list(&self, query: ReadQuery<'_>) -> Result<Option<Vec<Value>>, String> {
            let matches = |o: &&Value| {
                let key = ObjectKey::of_value(o);
                let (group, version) =
                    split_api_version(o["apiVersion"].as_str().unwrap_or_default());
                let labels = |k: &str, v: &str| o["metadata"]["labels"][k] == v;
                group == query.group
                    && version == query.version
                    && key.kind == query.kind
                    && query
                        .namespace
                        .is_none_or(|ns| key.namespace.as_deref() == Some(ns))
                    && query.label_selector.is_none_or(|sel| {
                        sel.split(',')
                            .filter_map(|kv| kv.split_once('='))
                            .all(|(k, v)| labels(k, v))
                    })
                    && query
                        .field_selector
                        .and_then(|f| f.strip_prefix("metadata.name="))
                        .is_none_or(|name| key.name == name)
            };
            Ok(Some(self.objects.iter().filter(matches).cloned().collect()))
        }

        fn is_not_found(_: &String) -> bool {
            false
        }
    }

    #[test]
    fn reads_uids_of_owning_kinds_only() {
        let cluster = MemoryCluster::new(vec![
            serde_json::json!({"apiVersion": "tend.dev/v1alpha1", "kind": "RegistryMirror", "metadata": {"name": "m", "namespace": "r", "uid": "u-1"}}),
            serde_json::json!({"apiVersion": "tend.dev/v1alpha1", "kind": "ChaosAgent", "metadata": {"name": "c", "uid": "u-2"}}),
        ]);
        let parse = |v: Value| -> TendObject {
            let kind = TendKind::from_kind(v["kind"].as_str().unwrap_or_default()).expect("kind");
            kind.parse(&v).expect("valid")
        };
        let origin = Origin {
            file: "x.yaml".into(),
            line: 1,
            generated_by: None,
            sealed: Vec::new(),
        };
        let tend = vec![
            (
                parse(
                    serde_json::json!({"apiVersion": "tend.dev/v1alpha1", "kind": "RegistryMirror", "metadata": {"name": "m", "namespace": "r"},
                "spec": {"upstream": "https://a", "storage": {"size": "1Gi"}, "hostPort": 5001}}),
                ),
                origin.clone(),
            ),
            (
                parse(
                    serde_json::json!({"apiVersion": "tend.dev/v1alpha1", "kind": "ChaosAgent", "metadata": {"name": "c"},
                "spec": {"eagerness": 1}}),
                ),
                origin,
            ),
        ];
        let mut view = ClusterView::new("set-1", "tend-system");
        futures::executor::block_on(read(&cluster, &tend, &[], &mut view)).expect("read");
        let uids: Vec<(String, &str)> = view
            .uids
            .iter()
            .map(|(k, v)| (k.kind_and_name(), v.as_str()))
            .collect();
        assert_eq!(uids, [("RegistryMirror r/m".to_string(), "u-1")]);
        assert!(view.copies.reserved_namespaces.contains("tend-system"));
    }
}
