//! Label selectors (`=`, `==`, `!=`, `in`, `notin`, `key`, `!key`) and field selectors
//! (`=`, `==`, `!=` on a per-resource list of supported fields).

use crate::discovery::ResourceDef;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
}

#[derive(Debug, Clone, Default)]
pub struct LabelSelector {
    reqs: Vec<(String, Op)>,
}

/// Splits on commas that are not inside parentheses.
fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 316
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector { reqs });
        }
        for part in split_top(s) {
            let p = part.trim();
            let err = || {
                format!("unable to parse requirement: found '{p}', expected: valid label selector")
            };
            let req = if let Some(k) = p.strip_prefix('!') {
                (k.trim().to_string(), Op::NotExists)
            } else if let Some((k, v)) = p.split_once("!=") {
                (k.trim().to_string(), Op::NotEq(v.trim().to_string()))
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                (k.trim().to_string(), Op::Eq(v.trim().to_string()))
            } else if let Some(open) = p.find('(') {
                let head = p[..open].trim();
                let list = p[open + 1..].strip_suffix(')').ok_or_else(err)?;
                let values: Vec<String> = list
                    .split(',')
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                    .collect();
                let (k, op) = head.rsplit_once(char::is_whitespace).ok_or_else(err)?;
                match op {
                    "in" => (k.trim().to_string(), Op::In(values)),
                    "notin" => (k.trim().to_string(), Op::NotIn(values)),
                    _ => return Err(err()),
                }
            } else {
                (p.to_string(), Op::Exists)
            };
            if !valid_key(&req.0) {
                return Err(format!(
                    "unable to parse requirement: invalid label key {:?}",
                    req.0
                ));
            }
            let values: Vec<&String> = match &req.1 {
                Op::Eq(v) | Op::NotEq(v) => vec![v],
                Op::In(vs) | Op::NotIn(vs) => vs.iter().collect(),
                _ => vec![],
            };
            if let Some(bad) = values.into_iter().find(|v| !valid_value(v)) {
                return Err(format!(
                    "unable to parse requirement: invalid label value: {bad:?}"
                ));
            }
            reqs.push(req);
        }
        Ok(LabelSelector { reqs })
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.reqs.iter().all(|(k, op)| match op {
            Op::Eq(v) => get(k) == Some(v.as_str()),
            Op::NotEq(v) => get(k) != Some(v.as_str()),
            Op::In(vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Op::NotIn(vs) => get(k).is_none_or(|x| !vs.iter().any(|v| v == x)),
            Op::Exists => get(k).is_some(),
            Op::NotExists => get(k).is_none(),
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct FieldSelector {
    reqs: Vec<(String, bool, String)>,
}

/// The fields a built-in kind's own field-label conversion accepts beyond `metadata.name` and
/// `metadata.namespace` (kube-apiserver registers one for these kinds only), or None for
/// kinds that use the default conversion.
fn kind_fields(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "Pod" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "Secret" => &["type"],
        "Namespace" => &["status.phase"],
        "ReplicaSet" => &["status.replicas"],
        "Job" => &["status.successful"],
        _ => return None,
    })
}

/// Whether `field` may be selected on, or the error kube-apiserver gives (a 400 with this
/// message). Kinds with their own conversion say `field label not supported: F` (custom
/// resources too); the others use apimachinery's DefaultMetaV1FieldSelectorConversion.
fn check_field(def: &ResourceDef, field: &str) -> Result<(), String> {
    if def.crd.is_some() {
        return match field {
            "metadata.name" => Ok(()),
            "metadata.namespace" if def.namespaced => Ok(()),
            _ => Err(format!("field label not supported: {field}")),
        };
    }
    if matches!(field, "metadata.name" | "metadata.namespace") {
        return Ok(());
    }
    match kind_fields(&def.kind) {
        Some(fields) if fields.contains(&field) => Ok(()),
        Some(_) => Err(format!("field label not supported: {field}")),
        None => Err(format!(
            "{field:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        )),
    }
}

impl FieldSelector {
    pub fn parse(s: &str, def: &ResourceDef) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, true, v)
            } else {
                return Err(format!(
                    "invalid selector: '{part}'; can't understand '{part}'"
                ));
            };
            let field = field.trim();
            check_field(def, field)?;
            reqs.push((field.to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector { reqs })
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|(field, eq, value)| {
            let ptr = format!("/{}", field.replace('.', "/"));
            let actual = match obj.pointer(&ptr) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == *value) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selector_ops() {
        let o = json!({"metadata":{"labels":{"app":"web","tier":"front"}}});
        for (sel, want) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web, api)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing,app=web", true),
            ("app=web,tier=back", false),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&o),
                want,
                "{sel}"
            );
        }
        assert!(LabelSelector::parse("app in (a").is_err());
    }
}
