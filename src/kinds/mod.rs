//! tend's own kinds (`tend.dev/v1alpha1`), one file each, and their CRDs.
//!
//! Each kind is a Rust type with serde + schemars via kube-derive's `CustomResource`, so the
//! CRDs that `tend crds` prints are generated from the same types that parse the repository:
//! what the schema accepts and what tend accepts cannot drift apart.
//!
//! Three layers reject bad input, from cheapest to richest:
//! 1. serde, while parsing: unknown fields (`deny_unknown_fields` on every struct tend owns),
//!    wrong types, unknown enum values, missing required fields — with the YAML line.
//! 2. [`TendObject::validate`]: what serde can't express (ranges, URL scheme, quantity and
//!    DNS-label syntax, non-empty strings), as [`FieldProblem`]s with a field path.
//! 3. The CRD's OpenAPI schema, in the cluster: the same ranges, enums, patterns and required
//!    fields, so `kubectl apply` of a bad object is rejected too.
//!
//! Not covered by serde: unknown keys at the *root* of a document (kube-derive generates the
//! root struct and does not allow serde attributes on it) and inside embedded k8s-openapi
//! types (`metadata`, `env`, `resources`), whose deserializers ignore unknown keys. For the
//! root, use [`root_field_problems`] on the parsed document.

pub mod chaos_agent;
mod checks;
pub mod copy_rule;
pub mod immortal_container;
pub mod registry_mirror;

pub use chaos_agent::{ChaosAgent, ChaosAgentSpec, ChaosAgentStatus};
pub use checks::parse_quantity;
pub use copy_rule::{CopyKind, CopyRule, CopyRuleSpec, CopyRuleStatus, MatchLabels};
pub use immortal_container::{ImmortalContainer, ImmortalContainerSpec, ImmortalContainerStatus};
pub use registry_mirror::{
    MirrorStorage, RegistryMirror, RegistryMirrorSpec, RegistryMirrorStatus,
};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResourceExt;
use serde::Serialize;
use std::fmt;

/// Annotation put on every object tend generates from one of its kinds, e.g.
/// `RegistryMirror registries/dockerhub`.
pub const GENERATED_BY_ANNOTATION: &str = "tend.dev/generated-by";

/// The CRDs of all tend kinds, in a stable order (the order of [`TendKind::ALL`]).
pub fn crds() -> Vec<CustomResourceDefinition> {
    TendKind::ALL.iter().map(|k| k.crd()).collect()
}

/// One of tend's kinds, without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TendKind {
    CopyRule,
    RegistryMirror,
    ImmortalContainer,
    ChaosAgent,
}

impl TendKind {
    /// Every kind, in the order `tend crds` prints them.
    pub const ALL: [TendKind; 4] = [
        TendKind::CopyRule,
        TendKind::RegistryMirror,
        TendKind::ImmortalContainer,
        TendKind::ChaosAgent,
    ];

    /// The kind for a document's `kind:` value (exact, case-sensitive, as Kubernetes).
    pub fn from_kind(kind: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.kind() == kind)
    }

    /// `kind:` as written in documents.
    pub fn kind(self) -> &'static str {
        match self {
            TendKind::CopyRule => "CopyRule",
            TendKind::RegistryMirror => "RegistryMirror",
            TendKind::ImmortalContainer => "ImmortalContainer",
            TendKind::ChaosAgent => "ChaosAgent",
        }
    }

    /// The resource name in URLs (`/apis/tend.dev/v1alpha1/.../<plural>`).
    pub fn plural(self) -> &'static str {
        match self {
            TendKind::CopyRule => "copyrules",
            TendKind::RegistryMirror => "registrymirrors",
            TendKind::ImmortalContainer => "immortalcontainers",
            TendKind::ChaosAgent => "chaosagents",
        }
    }

    /// Whether objects of this kind live in a namespace.
    pub fn namespaced(self) -> bool {
        matches!(self, TendKind::RegistryMirror | TendKind::ImmortalContainer)
    }

    /// The kind's CRD, generated from its Rust type.
    pub fn crd(self) -> CustomResourceDefinition {
        match self {
            TendKind::CopyRule => CopyRule::crd(),
            TendKind::RegistryMirror => RegistryMirror::crd(),
            TendKind::ImmortalContainer => ImmortalContainer::crd(),
            TendKind::ChaosAgent => ChaosAgent::crd(),
        }
    }
}

impl fmt::Display for TendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

/// A parsed object of one of tend's kinds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum TendObject {
    CopyRule(CopyRule),
    RegistryMirror(RegistryMirror),
    ImmortalContainer(ImmortalContainer),
    ChaosAgent(ChaosAgent),
}

impl TendObject {
    pub fn tend_kind(&self) -> TendKind {
        match self {
            TendObject::CopyRule(_) => TendKind::CopyRule,
            TendObject::RegistryMirror(_) => TendKind::RegistryMirror,
            TendObject::ImmortalContainer(_) => TendKind::ImmortalContainer,
            TendObject::ChaosAgent(_) => TendKind::ChaosAgent,
        }
    }

    pub fn meta(&self) -> &ObjectMeta {
        match self {
            TendObject::CopyRule(o) => &o.metadata,
            TendObject::RegistryMirror(o) => &o.metadata,
            TendObject::ImmortalContainer(o) => &o.metadata,
            TendObject::ChaosAgent(o) => &o.metadata,
        }
    }

    pub fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            TendObject::CopyRule(o) => &mut o.metadata,
            TendObject::RegistryMirror(o) => &mut o.metadata,
            TendObject::ImmortalContainer(o) => &mut o.metadata,
            TendObject::ChaosAgent(o) => &mut o.metadata,
        }
    }

    /// Semantic checks beyond what serde enforces while parsing: ranges, URL scheme,
    /// quantity syntax, DNS names, non-empty strings, and name lengths that the generated
    /// objects need. Empty when the object is valid. A missing `metadata.name` is not
    /// reported here (the loader checks it for every document).
    pub fn validate(&self) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        match self {
            TendObject::CopyRule(o) => o.spec.validate(&mut problems),
            TendObject::RegistryMirror(o) => {
                registry_mirror::validate_name(&o.metadata, &mut problems);
                o.spec.validate(&mut problems);
            }
            TendObject::ImmortalContainer(o) => {
                immortal_container::validate_name(&o.metadata, &mut problems);
                o.spec.validate(&mut problems);
            }
            TendObject::ChaosAgent(o) => o.spec.validate(&mut problems),
        }
        problems
    }
}

impl From<CopyRule> for TendObject {
    fn from(o: CopyRule) -> Self {
        TendObject::CopyRule(o)
    }
}
impl From<RegistryMirror> for TendObject {
    fn from(o: RegistryMirror) -> Self {
        TendObject::RegistryMirror(o)
    }
}
impl From<ImmortalContainer> for TendObject {
    fn from(o: ImmortalContainer) -> Self {
        TendObject::ImmortalContainer(o)
    }
}
impl From<ChaosAgent> for TendObject {
    fn from(o: ChaosAgent) -> Self {
        TendObject::ChaosAgent(o)
    }
}

/// One semantic problem in a tend object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FieldProblem {
    /// Mapping keys from the document root to the offending field, e.g. `["spec",
    /// "eagerness"]`. Only keys, never list indexes, so it can be looked up in the YAML
    /// text; a problem with a list item points at the list and names the item in `message`.
    pub path: Vec<String>,
    /// What is wrong and how to fix it, without the path (e.g. "must be between 1 and 100,
    /// got 200").
    pub message: String,
}

impl FieldProblem {
    pub fn new(path: &[&str], message: impl Into<String>) -> Self {
        FieldProblem {
            path: path.iter().map(|s| s.to_string()).collect(),
            message: message.into(),
        }
    }

    /// The path joined with dots, e.g. `spec.eagerness`.
    pub fn dotted_path(&self) -> String {
        self.path.join(".")
    }
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.dotted_path(), self.message)
    }
}

/// Unknown keys at the root of a tend document (e.g. a `spec` indented one level too little,
/// or `specs:`). serde can't catch them: kube-derive generates the root struct and allows no
/// `deny_unknown_fields` on it. `status` is allowed (it is ignored on apply, as by kubectl).
pub fn root_field_problems(doc: &serde_json::Value) -> Vec<FieldProblem> {
    const KNOWN: [&str; 5] = ["apiVersion", "kind", "metadata", "spec", "status"];
    let Some(map) = doc.as_object() else {
        return Vec::new();
    };
    map.keys()
        .filter(|k| !KNOWN.contains(&k.as_str()))
        .map(|k| FieldProblem {
            path: vec![k.clone()],
            message: format!(
                "unknown field `{k}` at the top level; a tend object has only apiVersion, kind, metadata and spec (did you mean to put it under spec?)"
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;

    #[test]
    fn kind_names_match_generated_types() {
        assert_eq!(CopyRule::kind(&()), TendKind::CopyRule.kind());
        assert_eq!(CopyRule::plural(&()), TendKind::CopyRule.plural());
        assert_eq!(RegistryMirror::kind(&()), TendKind::RegistryMirror.kind());
        assert_eq!(
            RegistryMirror::plural(&()),
            TendKind::RegistryMirror.plural()
        );
        assert_eq!(
            ImmortalContainer::kind(&()),
            TendKind::ImmortalContainer.kind()
        );
        assert_eq!(
            ImmortalContainer::plural(&()),
            TendKind::ImmortalContainer.plural()
        );
        assert_eq!(ChaosAgent::kind(&()), TendKind::ChaosAgent.kind());
        assert_eq!(ChaosAgent::plural(&()), TendKind::ChaosAgent.plural());
        for k in TendKind::ALL {
            let crd = k.crd();
            assert_eq!(crd.spec.group, crate::GROUP);
            assert_eq!(crd.spec.versions[0].name, crate::VERSION);
            assert_eq!(crd.spec.names.plural, k.plural());
            let scope = if k.namespaced() {
                "Namespaced"
            } else {
                "Cluster"
            };
            assert_eq!(crd.spec.scope, scope, "{k}");
            assert_eq!(TendKind::from_kind(k.kind()), Some(k));
        }
        assert_eq!(TendKind::from_kind("copyrule"), None);
        assert_eq!(TendKind::from_kind("Deployment"), None);
    }

    #[test]
    fn crds_are_stable_and_complete() {
        let crds = crds();
        let names: Vec<_> = crds
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        assert_eq!(
            names,
            [
                "copyrules.tend.dev",
                "registrymirrors.tend.dev",
                "immortalcontainers.tend.dev",
                "chaosagents.tend.dev"
            ]
        );
        for crd in &crds {
            assert_eq!(
                crd.spec.names.categories.as_deref(),
                Some(&["tend".to_string()][..])
            );
            assert!(crd
                .spec
                .names
                .short_names
                .as_ref()
                .is_some_and(|s| !s.is_empty()));
            let version = &crd.spec.versions[0];
            assert!(version.served && version.storage);
            assert!(version
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some());
            let columns = version.additional_printer_columns.as_deref().unwrap_or(&[]);
            assert_eq!(columns.last().map(|c| c.name.as_str()), Some("AGE"));
        }
    }

    #[test]
    fn root_unknown_fields_are_reported() {
        let doc = serde_json::json!({"apiVersion": "tend.dev/v1alpha1", "kind": "ChaosAgent",
            "metadata": {"name": "x"}, "spec": {}, "eagerness": 3});
        let problems = root_field_problems(&doc);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, ["eagerness"]);
        let ok = serde_json::json!({"apiVersion": "v", "kind": "k", "metadata": {}, "spec": {}, "status": {}});
        assert!(root_field_problems(&ok).is_empty());
    }

    #[test]
    fn field_problem_display() {
        let p = FieldProblem::new(&["spec", "eagerness"], "must be between 1 and 100, got 200");
        assert_eq!(
            p.to_string(),
            "spec.eagerness: must be between 1 and 100, got 200"
        );
    }
}
