//! Non-apply patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and a
//! basic strategic merge patch for built-in kinds (associative lists merged by key,
//! `$patch: delete|replace`, `null` deletes).

use crate::schema::{ListKind, Ty};
use crate::ssa::item_pe;
use serde_json::{Map, Value};

pub fn merge_patch(target: &Value, patch: &Value) -> Value {
    match patch {
        Value::Object(p) => {
            let mut out = match target {
                Value::Object(t) => t.clone(),
                _ => Map::new(),
            };
            for (k, pv) in p {
                if pv.is_null() {
                    out.remove(k);
                } else {
                    let nv = merge_patch(out.get(k).unwrap_or(&Value::Null), pv);
                    out.insert(k.clone(), nv);
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split_pointer(path: &str) -> Result<Vec<String>, String> {
    if path.is_empty() {
        return Ok(vec![]);
    }
    let rest = path
        .strip_prefix('/')
        .ok_or_else(|| format!("JSON pointer must start with '/': {path:?}"))?;
    Ok(rest.split('/').map(unescape).collect())
}

fn parent_mut<'a>(doc: &'a mut Value, tokens: &[String]) -> Result<&'a mut Value, String> {
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => m.get_mut(t).ok_or_else(|| format!("path not found: {t}"))?,
            Value::Array(a) => {
                let i: usize = t.parse().map_err(|_| format!("invalid index {t:?}"))?;
                a.get_mut(i)
                    .ok_or_else(|| format!("index out of range: {i}"))?
            }
            _ => return Err(format!("cannot traverse into scalar at {t:?}")),
        };
    }
    Ok(cur)
}

fn get_at(doc: &Value, path: &str) -> Result<Value, String> {
    let mut cur = doc;
    for t in split_pointer(path)? {
        cur = match cur {
            Value::Object(m) => m.get(&t).ok_or_else(|| format!("path not found: {path}"))?,
            Value::Array(a) => {
                let i: usize = t.parse().map_err(|_| format!("invalid index {t:?}"))?;
                a.get(i)
                    .ok_or_else(|| format!("index out of range: {path}"))?
            }
            _ => return Err(format!("path not found: {path}")),
        };
    }
    Ok(cur.clone())
}

fn add_at(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let tokens = split_pointer(path)?;
    let Some((last, parents)) = tokens.split_last() else {
        *doc = value;
        return Ok(());
    };
    match parent_mut(doc, parents)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            if last == "-" {
                a.push(value);
            } else {
                let i: usize = last
                    .parse()
                    .map_err(|_| format!("invalid index {last:?}"))?;
                if i > a.len() {
                    return Err(format!("index out of range: {i}"));
                }
                a.insert(i, value);
            }
        }
        _ => return Err(format!("cannot add to scalar at {path}")),
    }
    Ok(())
}

fn remove_at(doc: &mut Value, path: &str) -> Result<Value, String> {
    let tokens = split_pointer(path)?;
    let Some((last, parents)) = tokens.split_last() else {
        return Err("cannot remove the whole document".into());
    };
    match parent_mut(doc, parents)? {
        Value::Object(m) => m
            .shift_remove(last)
            .ok_or_else(|| format!("unable to remove nonexistent key: {last}")),
        Value::Array(a) => {
            let i: usize = last
                .parse()
                .map_err(|_| format!("invalid index {last:?}"))?;
            if i >= a.len() {
                return Err(format!("index out of range: {i}"));
            }
            Ok(a.remove(i))
        }
        _ => Err(format!("cannot remove from scalar at {path}")),
    }
}

pub fn json_patch(target: &Value, ops: &Value) -> Result<Value, String> {
    let ops = ops
        .as_array()
        .ok_or("json patch must be an array of operations")?;
    let mut doc = target.clone();
    for op in ops {
        let s = |k: &str| op.get(k).and_then(Value::as_str);
        let path = s("path").ok_or("operation is missing path")?;
        let value = || op.get("value").cloned().ok_or("operation is missing value");
        match s("op").unwrap_or("") {
            "add" => add_at(&mut doc, path, value()?)?,
            "remove" => {
                remove_at(&mut doc, path)?;
            }
            "replace" => {
                remove_at(&mut doc, path)?;
                add_at(&mut doc, path, value()?)?;
            }
            "move" => {
                let from = s("from").ok_or("move is missing from")?;
                let v = remove_at(&mut doc, from)?;
                add_at(&mut doc, path, v)?;
            }
            "copy" => {
                let from = s("from").ok_or("copy is missing from")?;
                let v = get_at(&doc, from)?;
                add_at(&mut doc, path, v)?;
            }
            "test" => {
                if get_at(&doc, path)? != value()? {
                    return Err(format!("testing value {path} failed"));
                }
            }
            other => return Err(format!("unexpected kind of operation: {other:?}")),
        }
    }
    Ok(doc)
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

pub fn strategic(target: &Value, patch: &Value, ty: &Ty) -> Value {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            if p.get("$patch").and_then(Value::as_str) == Some("replace") {
                return strip_directives(patch);
            }
            let mut out = t.clone();
            for (k, pv) in p.iter().filter(|(k, _)| !k.starts_with('$')) {
                if pv.is_null() {
                    out.shift_remove(k);
                    continue;
                }
                let (cty, _) = ty.child(k);
                let nv = match out.get(k) {
                    Some(tv) => strategic(tv, pv, &cty),
                    None => strip_directives(pv),
                };
                out.insert(k.clone(), nv);
            }
            Value::Object(out)
        }
        (Value::Array(t), Value::Array(p)) => match ty {
            Ty::List(ListKind::Map(keys), elem) => {
                let kind = ListKind::Map(keys.clone());
                let mut out: Vec<Value> = t.clone();
                for item in p {
                    let Ok(pe) = item_pe(&kind, item) else {
                        continue;
                    };
                    let pos = out
                        .iter()
                        .position(|o| item_pe(&kind, o).ok().as_ref() == Some(&pe));
                    let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
                    match (pos, delete) {
                        (Some(i), true) => {
                            out.remove(i);
                        }
                        (Some(i), false) => out[i] = strategic(&out[i], item, elem),
                        (None, false) => out.push(strip_directives(item)),
                        (None, true) => {}
                    }
                }
                Value::Array(out)
            }
            Ty::List(ListKind::Set, _) => {
                let mut out = t.clone();
                for item in p {
                    if !out.contains(item) {
                        out.push(item.clone());
                    }
                }
                Value::Array(out)
            }
            _ => strip_directives(patch),
        },
        _ => strip_directives(patch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_patch_ops() {
        let doc = json!({"a": {"b": [1, 2]}});
        let out = json_patch(
            &doc,
            &json!([
                {"op": "add", "path": "/a/b/-", "value": 3},
                {"op": "replace", "path": "/a/b/0", "value": 0},
                {"op": "test", "path": "/a/b/2", "value": 3},
                {"op": "copy", "from": "/a/b", "path": "/c"},
                {"op": "remove", "path": "/a/b/1"}
            ]),
        )
        .unwrap();
        assert_eq!(out, json!({"a": {"b": [0, 3]}, "c": [0, 2, 3]}));
    }

    #[test]
    fn merge_patch_deletes_nulls() {
        let out = merge_patch(
            &json!({"a": 1, "b": {"c": 2}}),
            &json!({"a": null, "b": {"d": 3}}),
        );
        assert_eq!(out, json!({"b": {"c": 2, "d": 3}}));
    }
}
