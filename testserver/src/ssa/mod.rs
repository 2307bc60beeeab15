//! Server-side apply and managed fields, following structured-merge-diff (the library
//! kube-apiserver uses): field sets in the `fieldsV1` format, merge of an applied
//! configuration into the live object, pruning of fields a manager stopped applying,
//! conflict detection between managers, and ownership tracking for non-apply writes.

use crate::schema::{ListKind, Ty};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

mod fieldset;
mod merge;

pub use fieldset::*;
pub use merge::*;

/// One step of a field path. Keys and values hold canonical JSON text so they can be
/// ordered and hashed; the variant order matches structured-merge-diff's sort order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pe {
    Field(String),
    Key(String),
    Value(String),
    Index(usize),
}

impl Pe {
    fn encode(&self) -> String {
        match self {
            Pe::Field(n) => format!("f:{n}"),
            Pe::Key(k) => format!("k:{k}"),
            Pe::Value(v) => format!("v:{v}"),
            Pe::Index(i) => format!("i:{i}"),
        }
    }

    fn decode(s: &str) -> Option<Pe> {
        let (prefix, rest) = s.split_once(':')?;
        Some(match prefix {
            "f" => Pe::Field(rest.to_string()),
            "k" => Pe::Key(canonical(&serde_json::from_str(rest).ok()?)),
            "v" => Pe::Value(canonical(&serde_json::from_str(rest).ok()?)),
            "i" => Pe::Index(rest.parse().ok()?),
            _ => return None,
        })
    }

    /// The form used in conflict messages: `.name`, `[name="x"]`, `[=value]`, `[0]`.
    fn display(&self) -> String {
        match self {
            Pe::Field(n) => format!(".{n}"),
            Pe::Key(k) => {
                let parts: Vec<String> = serde_json::from_str::<Map<String, Value>>(k)
                    .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                    .unwrap_or_default();
                format!("[{}]", parts.join(","))
            }
            Pe::Value(v) => format!("[={v}]"),
            Pe::Index(i) => format!("[{i}]"),
        }
    }
}

pub fn path_string(path: &[Pe]) -> String {
    path.iter().map(Pe::display).collect()
}

/// JSON text with object keys sorted, so equal values compare equal.
pub fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

#[derive(Debug, Clone)]
pub struct Manager {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub time: Option<String>,
    pub subresource: String,
    pub set: Set,
}

impl Manager {
    /// The text conflict messages use for a manager (printManager in kube-apiserver).
    pub fn display(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == "Update" {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

pub fn decode_managers(obj: &Value) -> Vec<Manager> {
    let Some(entries) = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let s = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    entries
        .iter()
        .filter_map(|e| {
            Some(Manager {
                manager: s(e, "manager"),
                operation: s(e, "operation"),
                api_version: s(e, "apiVersion"),
                time: e.get("time").and_then(Value::as_str).map(str::to_string),
                subresource: s(e, "subresource"),
                set: Set::from_json(e.get("fieldsV1").unwrap_or(&Value::Null))?,
            })
        })
        .collect()
}

/// The `metadata.managedFields` list, sorted as kube-apiserver sorts it.
pub fn encode_managers(ms: &[Manager]) -> Value {
    let mut ms: Vec<&Manager> = ms.iter().collect();
    ms.sort_by(|a, b| {
        (
            &a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                &b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    Value::Array(
        ms.into_iter()
            .map(|m| {
                let mut e = Map::new();
                e.insert("manager".into(), m.manager.clone().into());
                e.insert("operation".into(), m.operation.clone().into());
                e.insert("apiVersion".into(), m.api_version.clone().into());
                if let Some(t) = &m.time {
                    e.insert("time".into(), t.clone().into());
                }
                e.insert("fieldsType".into(), "FieldsV1".into());
                e.insert("fieldsV1".into(), m.set.to_json());
                if !m.subresource.is_empty() {
                    e.insert("subresource".into(), m.subresource.clone().into());
                }
                Value::Object(e)
            })
            .collect(),
    )
}

#[derive(Debug)]
pub enum SsaError {
    /// (manager display, field path) pairs.
    Conflicts(Vec<(String, String)>),
    Invalid(String),
}

impl SsaError {
    pub fn message(&self) -> String {
        match self {
            SsaError::Invalid(m) => m.clone(),
            SsaError::Conflicts(c) if c.len() == 1 => {
                format!(
                    "Apply failed with 1 conflict: conflict with {}: {}",
                    c[0].0, c[0].1
                )
            }
            SsaError::Conflicts(c) => {
                let mut by: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
                for (m, p) in c {
                    by.entry(m).or_default().push(p);
                }
                let mut lines = Vec::new();
                for (m, ps) in by {
                    lines.push(format!("conflicts with {m}:"));
                    lines.extend(ps.iter().map(|p| format!("- {p}")));
                }
                format!(
                    "Apply failed with {} conflicts: {}",
                    c.len(),
                    lines.join("\n")
                )
            }
        }
    }
}

pub struct Ctx<'a> {
    pub ty: &'a Ty,
    pub scope: Scope,
    pub api_version: &'a str,
}

impl Ctx<'_> {
    fn subresource(&self) -> &'static str {
        match self.scope {
            Scope::Status => "status",
            Scope::Main { .. } => "",
        }
    }

    fn changes(&self, live: &Value, new: &Value) -> Comparison {
        let c = compare(live, new, self.ty);
        Comparison {
            added: filter(c.added, self.scope),
            modified: filter(c.modified, self.scope),
            removed: filter(c.removed, self.scope),
        }
    }
}

/// Server-side apply of `config` by `manager` onto `live` (live without managedFields).
/// Returns the merged and pruned object and the new managers.
pub fn apply(
    live: &Value,
    managers: &[Manager],
    config: &Value,
    manager: &str,
    force: bool,
    ctx: &Ctx,
) -> Result<(Value, Vec<Manager>), SsaError> {
    let merged = merge(live, config, ctx.ty).map_err(SsaError::Invalid)?;
    let new_set = filter(
        to_field_set(config, ctx.ty).map_err(SsaError::Invalid)?,
        ctx.scope,
    );
    let sub = ctx.subresource();
    let mut ms = managers.to_vec();
    let me = match ms
        .iter()
        .position(|m| m.operation == "Apply" && m.manager == manager && m.subresource == sub)
    {
        Some(i) => i,
        None => {
            ms.push(Manager {
                manager: manager.to_string(),
                operation: "Apply".into(),
                api_version: String::new(),
                time: None,
                subresource: sub.to_string(),
                set: Set::default(),
            });
            ms.len() - 1
        }
    };
    let last = std::mem::replace(&mut ms[me].set, new_set);
    ms[me].api_version = ctx.api_version.to_string();

    let pruned = if last.is_empty() {
        merged
    } else {
        // Fields this manager applied last time and nobody owns now are removed.
        let managed = ms.iter().fold(Set::default(), |acc, m| acc.union(&m.set));
        let mut remove = ensure_named(&last, ctx.ty).difference(&ensure_named(&managed, ctx.ty));
        // metadata itself is never removed, only the owned fields inside it.
        remove.members.remove(&Pe::Field("metadata".into()));
        remove_items(&merged, &remove, ctx.ty)
    };

    let c = ctx.changes(live, &pruned);
    let changed = c.modified.union(&c.added);
    let mut conflicts = Vec::new();
    for (i, m) in ms.iter().enumerate() {
        if i == me {
            continue;
        }
        let overlap = m.set.intersection(&changed);
        if !overlap.is_empty() {
            conflicts.push((i, overlap));
        }
    }
    if !force && !conflicts.is_empty() {
        let list = conflicts
            .iter()
            .flat_map(|(i, s)| {
                let who = ms[*i].display();
                s.paths()
                    .into_iter()
                    .map(move |p| (who.clone(), path_string(&p)))
            })
            .collect();
        return Err(SsaError::Conflicts(list));
    }
    for (i, overlap) in &conflicts {
        ms[*i].set = ms[*i].set.difference(overlap);
    }
    for (i, m) in ms.iter_mut().enumerate() {
        if i != me {
            m.set = m.set.difference(&c.removed);
        }
    }
    ms.retain(|m| !m.set.is_empty());
    Ok((pruned, ms))
}

/// Ownership bookkeeping for a non-apply write: the writer takes every changed field
/// (from whoever owned it) and removed fields leave every manager.
pub fn update(
    live: &Value,
    new: &Value,
    managers: &[Manager],
    manager: &str,
    ctx: &Ctx,
    now: &str,
) -> Vec<Manager> {
    let c = ctx.changes(live, new);
    let current = c.modified.union(&c.added);
    let mut ms: Vec<Manager> = managers
        .iter()
        .map(|m| Manager {
            set: m.set.difference(&current).difference(&c.removed),
            ..m.clone()
        })
        .collect();
    if !current.is_empty() {
        let sub = ctx.subresource();
        match ms.iter_mut().find(|m| {
            m.operation == "Update"
                && m.manager == manager
                && m.api_version == ctx.api_version
                && m.subresource == sub
        }) {
            Some(m) => {
                m.set = m.set.union(&current);
                m.time = Some(now.to_string());
            }
            None => ms.push(Manager {
                manager: manager.to_string(),
                operation: "Update".into(),
                api_version: ctx.api_version.to_string(),
                time: Some(now.to_string()),
                subresource: sub.to_string(),
                set: current,
            }),
        }
    }
    ms.retain(|m| !m.set.is_empty());
    ms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::builtin;
    use serde_json::json;

    #[test]
    fn configmap_apply_set_matches_kubernetes() {
        let ty = builtin("ConfigMap");
        let cfg = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b"}},"data":{"k":"v"}});
        let s = filter(
            to_field_set(&cfg, &ty).unwrap(),
            Scope::Main {
                status_reset: false,
            },
        );
        assert_eq!(
            s.to_json(),
            json!({"f:data":{"f:k":{}},"f:metadata":{"f:labels":{"f:a":{}}}})
        );
    }

    #[test]
    fn container_ports_use_defaulted_protocol_key() {
        let ty = builtin("Deployment");
        let cfg = json!({"spec":{"template":{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80}]}]}}}});
        let s = to_field_set(&cfg, &ty).unwrap();
        let j = s.to_json().to_string();
        assert!(
            j.contains(r#"k:{\"containerPort\":80,\"protocol\":\"TCP\"}"#),
            "{j}"
        );
    }

    #[test]
    fn fields_v1_roundtrip() {
        let v = json!({"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{}}}}});
        assert_eq!(Set::from_json(&v).unwrap().to_json(), v);
    }
}
