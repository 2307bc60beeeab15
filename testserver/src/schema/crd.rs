//! Types of custom resources from their CRD's `openAPIV3Schema`, and the defaulting and pruning the API server applies with them.

use super::*;

/// Converts a CRD version's `openAPIV3Schema` into a type for its custom resources.
pub fn from_crd_schema(schema: Option<&Value>) -> Ty {
    let Some(schema) = schema else {
        return untyped_object();
    };
    let mut root = match openapi(schema) {
        Ty::Struct(s) => Arc::try_unwrap(s).unwrap_or_else(|s| StructTy {
            fields: s.fields.clone(),
            preserve_unknown: s.preserve_unknown,
        }),
        _ => StructTy {
            preserve_unknown: true,
            ..Default::default()
        },
    };
    root.fields.insert(
        "metadata".into(),
        Field {
            ty: object_meta(),
            nonptr: false,
            default: None,
        },
    );
    for k in ["apiVersion", "kind"] {
        root.fields.insert(
            k.into(),
            Field {
                ty: Ty::Scalar,
                nonptr: false,
                default: None,
            },
        );
    }
    Ty::Struct(Arc::new(root))
}

pub(super) fn openapi(s: &Value) -> Ty {
    let get = |k: &str| s.get(k);
    let is_true = |k: &str| get(k).and_then(Value::as_bool).unwrap_or(false);
    if is_true("x-kubernetes-int-or-string") {
        return Ty::Scalar;
    }
    let ty = get("type").and_then(Value::as_str).unwrap_or("");
    let props = get("properties").and_then(Value::as_object);
    if ty == "object" || props.is_some() {
        if get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
            return Ty::Atomic;
        }
        if let Some(props) = props {
            let mut st = StructTy {
                preserve_unknown: is_true("x-kubernetes-preserve-unknown-fields"),
                ..Default::default()
            };
            for (name, p) in props {
                st.fields.insert(
                    name.clone(),
                    Field {
                        ty: openapi(p),
                        nonptr: false,
                        default: p.get("default").cloned(),
                    },
                );
            }
            return Ty::Struct(Arc::new(st));
        }
        if let Some(ap) = get("additionalProperties").filter(|v| v.is_object()) {
            return Ty::Map(Arc::new(openapi(ap)));
        }
        if is_true("x-kubernetes-preserve-unknown-fields") {
            return Ty::Deduced;
        }
        return Ty::Struct(Arc::new(StructTy::default()));
    }
    if ty == "array" {
        let elem = Arc::new(get("items").map(openapi).unwrap_or(Ty::Deduced));
        return match get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => Ty::List(ListKind::Set, elem),
            Some("map") => {
                let keys = get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|ks| {
                        ks.iter()
                            .filter_map(Value::as_str)
                            .map(|k| {
                                let default = get("items")
                                    .and_then(|i| i.pointer(&format!("/properties/{k}/default")))
                                    .cloned();
                                (k.to_string(), default)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Ty::List(ListKind::Map(keys), elem)
            }
            _ => Ty::List(ListKind::Atomic, elem),
        };
    }
    if ty.is_empty() && is_true("x-kubernetes-preserve-unknown-fields") {
        return Ty::Deduced;
    }
    Ty::Scalar
}

/// Fills in Go value structs that are always present on built-in objects (`status: {}`,
/// `resources: {}`, ...), as the real server's typed decoding does.
pub fn fill_value_structs(v: &mut Value, ty: &Ty) {
    match (ty, v) {
        (Ty::Struct(st), Value::Object(obj)) => {
            for (name, f) in &st.fields {
                if f.nonptr && !obj.contains_key(name) {
                    obj.insert(name.clone(), Value::Object(Default::default()));
                }
                if let Some(child) = obj.get_mut(name) {
                    fill_value_structs(child, &f.ty);
                }
            }
        }
        (Ty::Map(elem), Value::Object(obj)) => {
            for child in obj.values_mut() {
                fill_value_structs(child, elem);
            }
        }
        (Ty::List(_, elem), Value::Array(items)) => {
            for item in items {
                fill_value_structs(item, elem);
            }
        }
        _ => {}
    }
}

/// CRD structural defaulting and pruning of unknown fields.
pub fn default_and_prune(v: &mut Value, ty: &Ty) {
    match (ty, v) {
        (Ty::Struct(st), Value::Object(obj)) => {
            if !st.preserve_unknown {
                obj.retain(|k, _| st.fields.contains_key(k));
            }
            for (name, f) in &st.fields {
                if let (Some(d), false) = (&f.default, obj.contains_key(name)) {
                    obj.insert(name.clone(), d.clone());
                }
                if let Some(child) = obj.get_mut(name) {
                    // metadata is handled by the server, never pruned.
                    if name != "metadata" {
                        default_and_prune(child, &f.ty);
                    }
                }
            }
        }
        (Ty::Map(elem), Value::Object(obj)) => {
            for child in obj.values_mut() {
                default_and_prune(child, elem);
            }
        }
        (Ty::List(_, elem), Value::Array(items)) => {
            for item in items {
                default_and_prune(item, elem);
            }
        }
        _ => {}
    }
}
