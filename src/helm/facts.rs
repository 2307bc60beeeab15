//! What a chart may learn of the cluster, as data: the answers to `lookup` calls and the
//! server's version and APIs. A leaf: the template engine's render context and the `lookup`
//! function both use it.

use std::collections::BTreeMap;

/// One `lookup apiVersion kind namespace name` call (an empty name lists).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LookupKey {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for LookupKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match (self.namespace.as_str(), self.name.as_str()) {
            ("", "") => "(all)".to_string(),
            (ns, "") => format!("{ns}/(all)"),
            ("", name) => name.to_string(),
            (ns, name) => format!("{ns}/{name}"),
        };
        write!(f, "{} {} {what}", self.api_version, self.kind)
    }
}

/// The answer the cluster gave to one lookup.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The object, or a list (`{"apiVersion", "kind": "<Kind>List", "items": [...]}`), or
    /// an empty map when nothing is there: what Helm's lookup returns.
    Found(serde_json::Value),
    /// Helm's lookup fails the render with this (a group/version the cluster does not
    /// serve, no right to read): the message, without any value.
    Failed(String),
}

/// The cluster as a chart sees it when tend is connected.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterFacts {
    /// The server's version (`v1.36.0`): `.Capabilities.KubeVersion`.
    pub kube_version: String,
    /// What the server serves, as Helm lists it: `group/version` and
    /// `group/version/Kind` (`v1`, `v1/Pod`, `apps/v1/Deployment`).
    pub api_versions: Vec<String>,
    /// The lookups read so far.
    pub lookups: BTreeMap<LookupKey, Answer>,
}
