//! Type information that server-side apply needs: which maps are structs (declared fields),
//! which lists are associative (and by which keys), sets or atomic, and which structs are
//! atomic. kube-apiserver takes this from its OpenAPI models; here the built-in kinds are
//! described by a small DSL (only the non-scalar fields matter) and CRDs are converted from
//! their `openAPIV3Schema`. Anything not described is "deduced" exactly like
//! structured-merge-diff does for untyped data: maps are granular, lists are atomic.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

mod builtin;
mod crd;

pub use builtin::*;
pub use crd::*;

#[derive(Debug, Clone)]
pub enum Ty {
    Scalar,
    /// Untyped: objects are granular maps without declared fields, arrays are atomic.
    Deduced,
    /// Owned as a whole (atomic struct/map/list).
    Atomic,
    Struct(Arc<StructTy>),
    /// A granular map with arbitrary keys (labels, data, resources.limits ...).
    Map(Arc<Ty>),
    List(ListKind, Arc<Ty>),
}

#[derive(Debug, Clone)]
pub enum ListKind {
    Atomic,
    Set,
    /// Associative list: key field names with an optional default (e.g. protocol=TCP).
    Map(Vec<(String, Option<Value>)>),
}

#[derive(Debug, Default)]
pub struct StructTy {
    pub fields: HashMap<String, Field>,
    /// CRD structural schemas: unknown fields are kept only with x-kubernetes-preserve-unknown-fields.
    pub preserve_unknown: bool,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub ty: Ty,
    /// A Go value (non-pointer) struct: always present, serialized as `{}` when empty.
    pub nonptr: bool,
    /// CRD schema default.
    pub default: Option<Value>,
}

impl Ty {
    /// The type of child `key` of an object value and whether it is a declared struct field.
    pub fn child(&self, key: &str) -> (Ty, bool) {
        match self {
            Ty::Struct(s) => match s.fields.get(key) {
                Some(f) => (f.ty.clone(), true),
                None => (Ty::Deduced, false),
            },
            Ty::Map(elem) => ((**elem).clone(), false),
            _ => (Ty::Deduced, false),
        }
    }

    /// True when a value of this type is tracked as a whole (a leaf for field ownership).
    pub fn is_leaf_for(&self, v: &Value) -> bool {
        match (self, v) {
            (Ty::Scalar | Ty::Atomic, _) => true,
            (Ty::Struct(_) | Ty::Map(_) | Ty::Deduced, Value::Object(_)) => false,
            (Ty::List(ListKind::Set | ListKind::Map(_), _), Value::Array(_)) => false,
            _ => true,
        }
    }

    pub fn list_elem(&self) -> Ty {
        match self {
            Ty::List(_, e) => (**e).clone(),
            _ => Ty::Deduced,
        }
    }
}
