//! tend's own kinds (`tend.dev/v1alpha1`): one folder each, behind one trait, [`Kind`].
//!
//! A kind's folder holds everything about it: its Rust type (serde + schemars via
//! kube-derive's `CustomResource`, so the CRDs that `tend crds` prints are generated from the
//! same types that parse the repository), its validation, what it expands to, what it reads
//! from the cluster and its status. The rest of tend reaches a kind through [`TendKind`] (the
//! kind without data: name, CRD, scope) and [`TendObject`] (a parsed object), both generated
//! from the one list in `tend_kinds!` below. Adding a kind is a folder plus a line in that list.
//!
//! Everything here is pure: reading the cluster goes through [`read::Reader`] and writing
//! statuses and late ownerReferences is the apply stage's, from what [`after_apply`] computes.
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

pub mod after_apply;
mod checks;
pub mod read;
pub mod run;
pub mod view;

pub use chaos_agent::{ChaosAgentSpec, ChaosAgentStatus};
pub use checks::parse_quantity;

use crate::object::ObjectKey;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::CustomResourceExt;
use run::RunState;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::fmt;

/// Annotation put on every object tend generates from one of its kinds, e.g.
/// `RegistryMirror registries/dockerhub`.
pub const GENERATED_BY_ANNOTATION: &str = "tend.dev/generated-by";
/// The well-known label saying which tool manages an object; tend sets it on what it
/// generates, with value [`crate::FIELD_MANAGER`].
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// Declares tend's kinds, one line each: `Variant => folder`, where the folder's module
/// defines the type `Variant` and implements [`Kind`] for it. Generates the folder's module,
/// [`TendKind`], [`TendObject`] and their dispatch.
macro_rules! tend_kinds {
    ($($kind:ident => $folder:ident),+ $(,)?) => {
        $(pub mod $folder;)+

        /// One of tend's kinds, without its data.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum TendKind {
            $($kind),+
        }

        impl TendKind {
            /// Every kind, in the order `tend crds` prints them.
            pub const ALL: [TendKind; [$(stringify!($kind)),+].len()] = [$(TendKind::$kind),+];

            /// `kind:` as written in documents.
            pub fn kind(self) -> &'static str {
                match self {
                    $(TendKind::$kind => stringify!($kind)),+
                }
            }

            /// The kind's CRD, generated from its Rust type.
            pub fn crd(self) -> CustomResourceDefinition {
                match self {
                    $(TendKind::$kind => <$folder::$kind as CustomResourceExt>::crd()),+
                }
            }

            /// Whether objects of this kind live in a namespace.
            pub fn namespaced(self) -> bool {
                match self {
                    $(TendKind::$kind => is_namespaced::<$folder::$kind>()),+
                }
            }

            /// Whether the objects it expands to get an ownerReference to it.
            pub fn owns_generated(self) -> bool {
                match self {
                    $(TendKind::$kind => <$folder::$kind as Kind>::OWNS_GENERATED),+
                }
            }

            /// Parse an object of this kind with `parser` (a YAML document, a JSON value).
            pub fn parse<P: TypedParser>(self, parser: &P) -> Result<TendObject, P::Error> {
                match self {
                    $(TendKind::$kind => parser.parse::<$folder::$kind>().map(TendObject::$kind)),+
                }
            }
        }

        /// A parsed object of one of tend's kinds.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(untagged)]
        pub enum TendObject {
            $($kind($folder::$kind)),+
        }

        impl TendObject {
            pub fn tend_kind(&self) -> TendKind {
                match self {
                    $(TendObject::$kind(_) => TendKind::$kind),+
                }
            }

            fn as_kind(&self) -> &dyn AnyKind {
                match self {
                    $(TendObject::$kind(o) => o),+
                }
            }

            fn as_kind_mut(&mut self) -> &mut dyn AnyKind {
                match self {
                    $(TendObject::$kind(o) => o),+
                }
            }
        }

        $(impl From<$folder::$kind> for TendObject {
            fn from(o: $folder::$kind) -> Self {
                TendObject::$kind(o)
            }
        })+
    };
}

tend_kinds! {
    CopyRule => copy_rule,
    RegistryMirror => registry_mirror,
    ImmortalContainer => immortal_container,
    ChaosAgent => chaos_agent,
    HelmChart => helm_chart,
    Fleet => fleet,
}

/// One of tend's kinds: what the rest of tend needs from it. Implemented by the type in the
/// kind's folder; [`TendObject`] dispatches to it.
pub trait Kind:
    kube::Resource<DynamicType = ()> + CustomResourceExt + Serialize + DeserializeOwned + Clone
{
    /// Which kind this is.
    const KIND: TendKind;
    /// Whether the objects it expands to get an ownerReference to it (so the cluster deletes
    /// them with it).
    const OWNS_GENERATED: bool = false;
    /// Its status, as tend writes it after applying.
    type Status: Serialize;

    /// Semantic checks beyond what serde enforces while parsing: ranges, URL scheme,
    /// quantity syntax, DNS names, non-empty strings, and name lengths that the generated
    /// objects need. Empty when the object is valid. A missing `metadata.name` is not
    /// reported here (the loader checks it for every document).
    fn validate(&self) -> Vec<FieldProblem>;

    /// The clusters it is limited to (`spec.clusters`, README "Targeting"), if any.
    fn clusters(&self) -> Option<&[String]> {
        None
    }

    /// The plain objects it stands for, as far as they can be computed without the cluster
    /// (objects that need the cluster are added when rendering is completed with a
    /// [`view::ClusterView`]).
    fn expand(&self) -> Expansion {
        Expansion::default()
    }

    /// Its status once a run has applied it; `None` when `tend apply` writes none.
    fn status(&self, _run: &RunState<'_>) -> Option<Self::Status> {
        None
    }

    /// Its identity in the cluster.
    fn key(&self) -> ObjectKey {
        key_of(Self::KIND, kube::Resource::meta(self))
    }
}

fn key_of(kind: TendKind, meta: &ObjectMeta) -> ObjectKey {
    ObjectKey {
        group: crate::GROUP.to_string(),
        kind: kind.kind().to_string(),
        namespace: meta.namespace.clone(),
        name: meta.name.clone().unwrap_or_default(),
    }
}

/// What a tend object expands to offline.
#[derive(Debug, Default)]
pub struct Expansion {
    /// Plain objects (JSON with apiVersion and kind), in apply order.
    pub objects: Vec<Value>,
    /// Something the user should know about this object offline.
    pub note: Option<String>,
}

/// [`Kind`] without its associated items, so [`TendObject`] can hand out one `dyn` view.
trait AnyKind {
    fn validate(&self) -> Vec<FieldProblem>;
    fn clusters(&self) -> Option<&[String]>;
    fn expand(&self) -> Expansion;
    fn status(&self, run: &RunState<'_>) -> Option<Value>;
    fn meta(&self) -> &ObjectMeta;
    fn meta_mut(&mut self) -> &mut ObjectMeta;
}

impl<K: Kind> AnyKind for K {
    fn validate(&self) -> Vec<FieldProblem> {
        Kind::validate(self)
    }
    fn clusters(&self) -> Option<&[String]> {
        Kind::clusters(self)
    }
    fn expand(&self) -> Expansion {
        Kind::expand(self)
    }
    fn status(&self, run: &RunState<'_>) -> Option<Value> {
        // Statuses are plain structs with string keys: serializing them cannot fail.
        Kind::status(self, run).and_then(|s| serde_json::to_value(s).ok())
    }
    fn meta(&self) -> &ObjectMeta {
        kube::Resource::meta(self)
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        kube::Resource::meta_mut(self)
    }
}

fn is_namespaced<K: kube::Resource>() -> bool
where
    K::Scope: 'static,
{
    std::any::TypeId::of::<K::Scope>()
        == std::any::TypeId::of::<k8s_openapi::NamespaceResourceScope>()
}

/// Parses a typed object from some input (a YAML document, a JSON value), for
/// [`TendKind::parse`].
pub trait TypedParser {
    type Error;
    fn parse<T: DeserializeOwned>(&self) -> Result<T, Self::Error>;
}

impl TypedParser for Value {
    type Error = serde_json::Error;
    fn parse<T: DeserializeOwned>(&self) -> Result<T, Self::Error> {
        T::deserialize(self)
    }
}

/// The CRDs of all tend kinds, in a stable order (the order of [`TendKind::ALL`]).
pub fn crds() -> Vec<CustomResourceDefinition> {
    TendKind::ALL.iter().map(|k| k.crd()).collect()
}

impl TendKind {
    /// The kind for a document's `kind:` value (exact, case-sensitive, as Kubernetes).
    pub fn from_kind(kind: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.kind() == kind)
    }

    /// Every kind's name for messages: `A, B, C and D`.
    pub fn names() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|k| k.kind()).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }
}

impl fmt::Display for TendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

impl TendObject {
    pub fn meta(&self) -> &ObjectMeta {
        self.as_kind().meta()
    }

    pub fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.as_kind_mut().meta_mut()
    }

    /// Its identity in the cluster.
    pub fn key(&self) -> ObjectKey {
        key_of(self.tend_kind(), self.meta())
    }

    /// See [`Kind::validate`].
    pub fn validate(&self) -> Vec<FieldProblem> {
        self.as_kind().validate()
    }

    /// See [`Kind::clusters`].
    pub fn clusters(&self) -> Option<&[String]> {
        self.as_kind().clusters()
    }

    /// See [`Kind::expand`].
    pub fn expand(&self) -> Expansion {
        self.as_kind().expand()
    }

    /// See [`Kind::status`]; as JSON.
    pub fn status(&self, run: &RunState<'_>) -> Option<Value> {
        self.as_kind().status(run)
    }

    /// Set the namespace of a namespaced object that has none.
    pub fn default_namespace(&mut self, namespace: &str) {
        if !self.tend_kind().namespaced() {
            return;
        }
        let meta = self.meta_mut();
        if meta.namespace.as_deref().unwrap_or("").is_empty() {
            meta.namespace = Some(namespace.to_string());
        }
    }

    /// The object as JSON, as it will be applied (namespace defaulted, defaults filled in,
    /// no status: status is the cluster's to write, never part of desired state).
    pub fn to_value(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(map) = value.as_object_mut() {
            map.remove("status");
        }
        value
    }
}

/// The ownerReference of an object tend generated from `owner` (a controller reference,
/// blocking the owner's deletion until it is gone).
pub fn owner_reference(owner: &ObjectKey, uid: &str) -> Value {
    let reference = OwnerReference {
        api_version: crate::API_VERSION.into(),
        kind: owner.kind.clone(),
        name: owner.name.clone(),
        uid: uid.to_string(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    // Plain strings and booleans: serializing cannot fail.
    serde_json::to_value(reference).unwrap_or(Value::Null)
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

/// The problems of an object, as displayed (`spec.eagerness: must be ...`).
#[cfg(test)]
pub(crate) fn displayed_problems(object: impl Into<TendObject>) -> Vec<String> {
    object
        .into()
        .validate()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chaos_agent::ChaosAgent;
    use copy_rule::CopyRule;
    use immortal_container::ImmortalContainer;
    use registry_mirror::RegistryMirror;

    #[test]
    fn kind_names_match_generated_types() {
        fn check<K: Kind>(object: TendObject) {
            assert_eq!(K::kind(&()), K::KIND.kind());
            assert_eq!(object.tend_kind(), K::KIND);
            assert_eq!(K::crd().spec.names.plural, K::plural(&()));
        }
        check::<CopyRule>(CopyRule::new("x", serde_json::from_value(serde_json::json!({"kind": "ConfigMap", "sourceNamespace": "a", "selector": {"matchLabels": {"a": "b"}}})).expect("spec")).into());
        check::<ChaosAgent>(
            ChaosAgent::new(
                "x",
                serde_json::from_value(serde_json::json!({"eagerness": 1})).expect("spec"),
            )
            .into(),
        );
        check::<RegistryMirror>(RegistryMirror::new("x", serde_json::from_value(serde_json::json!({"upstream": "https://a", "storage": {"size": "1Gi"}, "hostPort": 1})).expect("spec")).into());
        check::<ImmortalContainer>(
            ImmortalContainer::new(
                "x",
                serde_json::from_value(serde_json::json!({"image": "x"})).expect("spec"),
            )
            .into(),
        );
        let mut plurals = Vec::new();
        for k in TendKind::ALL {
            let crd = k.crd();
            assert_eq!(crd.spec.group, crate::GROUP);
            assert_eq!(crd.spec.versions[0].name, crate::VERSION);
            assert_eq!(crd.spec.names.kind, k.kind());
            plurals.push(crd.spec.names.plural.clone());
            let scope = if k.namespaced() {
                "Namespaced"
            } else {
                "Cluster"
            };
            assert_eq!(crd.spec.scope, scope, "{k}");
            assert_eq!(TendKind::from_kind(k.kind()), Some(k));
        }
        assert_eq!(
            plurals,
            [
                "copyrules",
                "registrymirrors",
                "immortalcontainers",
                "chaosagents",
                "helmcharts",
                "fleets"
            ]
        );
        assert_eq!(
            TendKind::names(),
            "CopyRule, RegistryMirror, ImmortalContainer, ChaosAgent, HelmChart and Fleet"
        );
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
                "chaosagents.tend.dev",
                "helmcharts.tend.dev",
                "fleets.tend.dev"
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
            // A Fleet is read by tend, never applied: it has no status.
            if crd.spec.names.kind == "Fleet" {
                continue;
            }
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
