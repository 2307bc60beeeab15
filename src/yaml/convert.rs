//! From serde_yaml's tree to JSON: fast without path tracking; with it only to say where a document is wrong.

#[allow(unused_imports)]
use super::*;

/// Convert YAML to JSON: keys must be strings (as in every Kubernetes object), tags are
/// dropped, and non-finite floats are rejected. On error: the path of the offending node.
/// [`yaml_to_json`] without tracking the path: `None` where that would fail. The common case,
/// run for every document of a site, so it allocates nothing beyond the result.
pub(super) fn to_json(value: serde_yaml::Value) -> Option<Value> {
    use serde_yaml::Value as Y;
    Some(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::Number(serde_json::Number::from_f64(n.as_f64()?)?)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(to_json).collect::<Option<_>>()?),
        Y::Mapping(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (k, v) in map {
                let key = match k {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    _ => return None,
                };
                out.insert(key, to_json(v)?);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => to_json(tagged.value)?,
    })
}

pub(super) fn yaml_to_json(
    value: serde_yaml::Value,
    path: &mut Vec<Step>,
) -> Result<Value, (Vec<Step>, String)> {
    use serde_yaml::Value as Y;
    let at = |path: &Vec<Step>, message: String| {
        let place = dotted(path);
        let message = if place.is_empty() {
            message
        } else {
            format!("{place}: {message}")
        };
        (path.clone(), message)
    };
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                match serde_json::Number::from_f64(f) {
                    Some(n) => Value::Number(n),
                    None => {
                        return Err(at(
                            path,
                            format!("number {f} is not representable in JSON; quote it if it is meant as a string"),
                        ))
                    }
                }
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                path.push(Step::Index(i));
                out.push(yaml_to_json(item, path)?);
                path.pop();
            }
            Value::Array(out)
        }
        Y::Mapping(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (k, v) in map {
                let key = match k {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    other => {
                        let shown = serde_json::to_string(
                            &yaml_to_json(other, &mut Vec::new()).unwrap_or(Value::Null),
                        )
                        .unwrap_or_default();
                        let shown: String = shown.chars().take(60).collect();
                        return Err(at(
                            path,
                            format!("mapping key {shown} is not a string; keys of Kubernetes objects are strings (quote it)"),
                        ));
                    }
                };
                path.push(Step::Key(key.clone()));
                let value = yaml_to_json(v, path)?;
                path.pop();
                out.insert(key, value);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value, path)?,
    })
}
