//! The inventory: an ApplySet (KEP-3659), compatible with `kubectl apply --applyset`. The
//! parent is a Secret in the state namespace; members carry the label
//! `applyset.kubernetes.io/part-of: <id>`. The parent lists the group-kinds and namespaces
//! members may live in, so pruning knows where to look without listing the whole cluster.

use crate::object::ObjectKey;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

pub const ID_LABEL: &str = "applyset.kubernetes.io/id";
pub use crate::PART_OF_LABEL;
pub const TOOLING_ANNOTATION: &str = "applyset.kubernetes.io/tooling";
pub const GROUP_KINDS_ANNOTATION: &str = "applyset.kubernetes.io/contains-group-kinds";
pub const NAMESPACES_ANNOTATION: &str = "applyset.kubernetes.io/additional-namespaces";
pub const LAST_COMMIT_ANNOTATION: &str = "tend.dev/last-commit";
pub const LAST_RUN_ANNOTATION: &str = "tend.dev/last-run";
/// Who signed the last run's commit and tag (`--verify-signatures`).
pub const LAST_SIGNED_BY_ANNOTATION: &str = "tend.dev/last-signed-by";
pub const LAST_SUMMARY_ANNOTATION: &str = "tend.dev/last-summary";
/// How the last apply ended when it recorded: `succeeded`, `failed` or `interrupted`.
pub const LAST_RESULT_ANNOTATION: &str = "tend.dev/last-result";
/// How many objects the last apply found drifted (changed by another field manager).
pub const LAST_DRIFT_ANNOTATION: &str = "tend.dev/last-drift";
/// The kubeconfig Secrets (in this cluster) the last apply's units targeted other clusters
/// through (hub and spoke), comma-separated `namespace/name` or `namespace/name:key`: where
/// `tend status` finds the spokes.
pub const SPOKES_ANNOTATION: &str = "tend.dev/spokes";
/// Set when the last run was stopped by a signal: what it wrote and what it did not.
pub const INTERRUPTED_ANNOTATION: &str = "tend.dev/interrupted";
/// The members a tenant's unit wrote, by ServiceAccount (`{"NS/NAME": {"Kind.group":
/// {"namespace": [names]}}}`): they are pruned as that ServiceAccount, as Flux's
/// kustomize-controller prunes a unit's inventory with its impersonated client. Kept on the
/// parent, which tenants cannot write, rather than on the members, which they can.
pub const TENANT_MEMBERS_ANNOTATION: &str = "tend.dev/tenant-members";

/// A tenant's ServiceAccount: namespace, name.
pub type Writer = (String, String);

/// The ApplySet ID, as the KEP specifies for a parent of kind `kind` in group `group`:
/// `applyset-<base64url(sha256("<name>.<namespace>.<kind>.<group>"))>-v1`, unpadded.
pub fn applyset_id(name: &str, namespace: &str, kind: &str, group: &str) -> String {
    let digest = Sha256::digest(format!("{name}.{namespace}.{kind}.{group}").as_bytes());
    format!(
        "applyset-{}-v1",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

/// A group-kind as the contains-group-kinds annotation writes it: `Kind.group`, or `Kind`
/// for the core group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKind {
    pub group: String,
    pub kind: String,
}

impl GroupKind {
    pub fn new(group: &str, kind: &str) -> Self {
        GroupKind {
            group: group.to_string(),
            kind: kind.to_string(),
        }
    }

    pub fn encode(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    pub fn parse(text: &str) -> Option<GroupKind> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        Some(match text.split_once('.') {
            Some((kind, group)) => GroupKind::new(group, kind),
            None => GroupKind::new("", text),
        })
    }
}

/// The parent's view of the set: where members may be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    pub group_kinds: BTreeSet<GroupKind>,
    /// Namespaces members may be in.
    pub namespaces: BTreeSet<String>,
    /// The members tenants wrote, with whom ([`TENANT_MEMBERS_ANNOTATION`]).
    pub writers: BTreeMap<ObjectKey, Writer>,
}

impl Inventory {
    /// Read the inventory recorded on a live parent.
    pub fn from_parent(parent: &Value) -> Inventory {
        let annotation = |key: &str| {
            crate::object::at(parent, &["metadata", "annotations"])
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        Inventory {
            group_kinds: annotation(GROUP_KINDS_ANNOTATION)
                .split(',')
                .filter_map(GroupKind::parse)
                .collect(),
            namespaces: annotation(NAMESPACES_ANNOTATION)
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect(),
            writers: parse_writers(&annotation(TENANT_MEMBERS_ANNOTATION)),
        }
    }

    /// Both inventories; a member `other` says a tenant writes is that tenant's.
    pub fn union(&self, other: &Inventory) -> Inventory {
        let mut writers = self.writers.clone();
        writers.extend(other.writers.clone());
        Inventory {
            group_kinds: self
                .group_kinds
                .union(&other.group_kinds)
                .cloned()
                .collect(),
            namespaces: self.namespaces.union(&other.namespaces).cloned().collect(),
            writers,
        }
    }
}

/// [`TENANT_MEMBERS_ANNOTATION`]'s value; nothing from a value tend did not write.
fn parse_writers(text: &str) -> BTreeMap<ObjectKey, Writer> {
    let mut writers = BTreeMap::new();
    let Ok(Value::Object(by_account)) = serde_json::from_str::<Value>(text) else {
        return writers;
    };
    let maps = |v: &Value| v.as_object().cloned().unwrap_or_default();
    for (account, by_kind) in by_account {
        let Some((namespace, name)) = account.split_once('/') else {
            continue;
        };
        for (kind, by_namespace) in maps(&by_kind) {
            let Some(gk) = GroupKind::parse(&kind) else {
                continue;
            };
            for (ns, names) in maps(&by_namespace) {
                let ns = Some(ns.as_str()).filter(|ns| !ns.is_empty());
                for member in names
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    writers.insert(
                        ObjectKey::new(&gk.group, &gk.kind, ns, member),
                        (namespace.to_string(), name.to_string()),
                    );
                }
            }
        }
    }
    writers
}

/// `{"NS/NAME": {"Kind.group": {"namespace": [names]}}}` (`""` for cluster-scoped members):
/// a few bytes per member beyond its name, as annotations hold 256 KiB in all.
fn encode_writers(writers: &BTreeMap<ObjectKey, Writer>) -> String {
    type ByNamespace<'k> = BTreeMap<&'k str, Vec<&'k str>>;
    let mut by_account: BTreeMap<String, BTreeMap<String, ByNamespace<'_>>> = BTreeMap::new();
    for (key, (namespace, name)) in writers {
        by_account
            .entry(format!("{namespace}/{name}"))
            .or_default()
            .entry(GroupKind::new(&key.group, &key.kind).encode())
            .or_default()
            .entry(key.namespace.as_deref().unwrap_or(""))
            .or_default()
            .push(&key.name);
    }
    json!(by_account).to_string()
}

/// The parent Secret as tend applies it (server-side apply, manager `tend`).
pub fn parent_object(
    name: &str,
    namespace: &str,
    id: &str,
    inventory: &Inventory,
    record: &[(&str, String)],
) -> Value {
    // Sorted by their encoded form, as kubectl writes the annotation.
    let mut group_kinds: Vec<String> = inventory
        .group_kinds
        .iter()
        .map(GroupKind::encode)
        .collect();
    group_kinds.sort();
    // Every namespace with members, the parent's own included when members live there (tend
    // then scans exactly these; kubectl reads the list the same way).
    let namespaces: Vec<&str> = inventory.namespaces.iter().map(String::as_str).collect();
    let mut annotations = serde_json::Map::new();
    annotations.insert(
        TOOLING_ANNOTATION.into(),
        json!(format!("tend/{}", env!("CARGO_PKG_VERSION"))),
    );
    annotations.insert(GROUP_KINDS_ANNOTATION.into(), json!(group_kinds.join(",")));
    annotations.insert(NAMESPACES_ANNOTATION.into(), json!(namespaces.join(",")));
    if !inventory.writers.is_empty() {
        annotations.insert(
            TENANT_MEMBERS_ANNOTATION.into(),
            json!(encode_writers(&inventory.writers)),
        );
    }
    for (key, value) in record {
        annotations.insert((*key).into(), json!(value));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": { ID_LABEL: id },
            "annotations": annotations,
        },
        "type": "Opaque",
    })
}

/// Add the part-of label to a desired object.
pub fn label_member(object: &mut Value, id: &str) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(PART_OF_LABEL.into(), Value::String(id.to_string()));
    }
}

/// Whether a live object is a member of the ApplySet `id`.
pub fn is_member(object: &Value, id: &str) -> bool {
    object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(PART_OF_LABEL))
        .and_then(Value::as_str)
        == Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_matches_kubectl() {
        // kubectl apply --applyset=secret/tend -n tend-system computes the same input string.
        let id = applyset_id("tend", "tend-system", "Secret", "");
        assert!(id.starts_with("applyset-") && id.ends_with("-v1"));
        assert_eq!(id.len(), "applyset-".len() + 43 + "-v1".len());
        assert!(!id.contains('=') && !id.contains('+') && !id.contains('/'));
        assert_ne!(id, applyset_id("other", "tend-system", "Secret", ""));
    }

    #[test]
    fn group_kinds_round_trip() {
        let gk = GroupKind::new("apps", "Deployment");
        assert_eq!(gk.encode(), "Deployment.apps");
        assert_eq!(GroupKind::parse("Deployment.apps"), Some(gk));
        assert_eq!(
            GroupKind::parse("ConfigMap"),
            Some(GroupKind::new("", "ConfigMap"))
        );
        assert_eq!(
            GroupKind::parse("RegistryMirror.tend.dev"),
            Some(GroupKind::new("tend.dev", "RegistryMirror"))
        );
        let inv = Inventory {
            group_kinds: [
                GroupKind::new("", "ConfigMap"),
                GroupKind::new("apps", "Deployment"),
            ]
            .into(),
            namespaces: ["web".to_string()].into(),
            writers: [
                (
                    ObjectKey::new("apps", "Deployment", Some("web"), "app"),
                    ("web".to_string(), "deployer".to_string()),
                ),
                (
                    ObjectKey::new("", "ConfigMap", Some("web"), "app"),
                    ("web".to_string(), "deployer".to_string()),
                ),
                (
                    ObjectKey::new("rbac.authorization.k8s.io", "ClusterRole", None, "r"),
                    ("other".to_string(), "admin".to_string()),
                ),
            ]
            .into(),
        };
        let parent = parent_object("tend", "tend-system", "id", &inv, &[]);
        assert_eq!(
            parent["metadata"]["annotations"][GROUP_KINDS_ANNOTATION],
            "ConfigMap,Deployment.apps"
        );
        assert_eq!(
            parent["metadata"]["annotations"][NAMESPACES_ANNOTATION],
            "web"
        );
        let back = Inventory::from_parent(&parent);
        assert_eq!(back.group_kinds, inv.group_kinds);
        assert_eq!(back.namespaces, ["web".to_string()].into());
        assert_eq!(back.writers, inv.writers);
    }
}
