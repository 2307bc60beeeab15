//! Helm's value handling (helm/helm `pkg/chartutil/coalesce.go`, `values.go` and the CLI's
//! `mergeMaps`): user values merged file over file, then coalesced over each chart's
//! defaults and down into its subcharts, with globals copied top-down. Values are JSON trees;
//! Go's maps are unordered, and everything that prints them sorts keys.

use super::node::Node;
use serde_json::{Map, Value};

/// The key of values shared by a chart and all its subcharts.
pub const GLOBAL_KEY: &str = "global";

/// The CLI's `mergeMaps`: `b` over `a`, maps merged key by key, anything else (null too)
/// replaced. How `-f` files (and then `--set`) combine before the chart is involved.
pub fn merge_maps(a: &Value, b: &Value) -> Value {
    let mut out = match a {
        Value::Object(a) => a.clone(),
        _ => Map::new(),
    };
    if let Value::Object(b) = b {
        for (key, value) in b {
            let merged = match (out.get(key), value) {
                (Some(existing @ Value::Object(_)), Value::Object(_)) => {
                    merge_maps(existing, value)
                }
                _ => value.clone(),
            };
            out.insert(key.clone(), merged);
        }
    }
    Value::Object(out)
}

/// `CoalesceValues` (`merge` false: a null removes the key) or `MergeValues` (`merge` true:
/// nulls are kept) of `node` with the user's `vals`.
pub fn coalesce_values(
    node: &Node,
    vals: &Value,
    merge: bool,
) -> Result<Map<String, Value>, String> {
    let mut dest = match vals {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    coalesce(node, &mut dest, merge)?;
    Ok(dest)
}

fn coalesce(node: &Node, dest: &mut Map<String, Value>, merge: bool) -> Result<(), String> {
    coalesce_own(node, dest, merge);
    coalesce_deps(node, dest, merge)
}

/// `coalesceValues`: the chart's defaults under `v`.
fn coalesce_own(node: &Node, v: &mut Map<String, Value>, merge: bool) {
    let Value::Object(defaults) = &node.values else {
        return;
    };
    for (key, default) in defaults {
        match v.get_mut(key) {
            None => {
                v.insert(key.clone(), default.clone());
            }
            Some(Value::Null) if !merge => {
                v.remove(key);
            }
            Some(Value::Object(dest)) => {
                if let Value::Object(src) = default {
                    // A subchart's table is always merged: its nulls reach the subchart.
                    let merge = merge || node.deps.iter().any(|d| d.name() == key);
                    coalesce_tables(dest, &mut src.clone(), merge);
                }
            }
            Some(_) => {}
        }
    }
}

/// `coalesceDeps`: each subchart's values, under its name, coalesced with its own defaults
/// after the parent's globals were copied in.
fn coalesce_deps(node: &Node, dest: &mut Map<String, Value>, merge: bool) -> Result<(), String> {
    for sub in &node.deps {
        let name = sub.name().to_string();
        let mut table = match dest.remove(&name) {
            None => Map::new(),
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "type mismatch on {name}: the values for subchart {name} must be a map, not {}",
                    type_name(&other)
                ))
            }
        };
        coalesce_globals(&mut table, dest);
        coalesce(sub, &mut table, merge)?;
        dest.insert(name, Value::Object(table));
    }
    Ok(())
}

/// `coalesceGlobals`: the parent's globals over the subchart's (top-down).
fn coalesce_globals(dest: &mut Map<String, Value>, src: &Map<String, Value>) {
    let mut dg = match dest.get(GLOBAL_KEY) {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return,
    };
    let sg = match src.get(GLOBAL_KEY) {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return,
    };
    for (key, value) in sg {
        match (&value, dg.get(&key)) {
            (Value::Object(table), None) => {
                dg.insert(key, Value::Object(table.clone()));
            }
            (Value::Object(table), Some(Value::Object(existing))) => {
                let mut vv = table.clone();
                coalesce_tables(&mut vv, &mut existing.clone(), true);
                dg.insert(key, Value::Object(vv));
            }
            (Value::Object(_), Some(_)) => {} // a map can't go onto a non-map
            (_, Some(Value::Object(_))) => {} // nor a non-map onto a map
            _ => {
                dg.insert(key, value);
            }
        }
    }
    dest.insert(GLOBAL_KEY.into(), Value::Object(dg));
}

/// `coalesceTablesFullKey`: `src` under `dst` (dst authoritative). Unless `merge`, a null
/// in `dst` removes the key.
pub fn coalesce_tables(dst: &mut Map<String, Value>, src: &mut Map<String, Value>, merge: bool) {
    for (key, value) in dst.iter() {
        if value.is_null() {
            src.insert(key.clone(), Value::Null);
        }
    }
    for (key, value) in std::mem::take(src) {
        match dst.get_mut(&key) {
            Some(Value::Null) if !merge => {
                dst.remove(&key);
            }
            None => {
                dst.insert(key, value);
            }
            Some(Value::Object(dv)) => {
                if let Value::Object(mut sv) = value {
                    coalesce_tables(dv, &mut sv, merge);
                }
            }
            Some(_) => {}
        }
    }
}

/// `MergeTables`.
pub fn merge_tables(
    mut dst: Map<String, Value>,
    mut src: Map<String, Value>,
) -> Map<String, Value> {
    coalesce_tables(&mut dst, &mut src, true);
    dst
}

/// `Values.Table`: the map at a dotted path.
pub fn table<'a>(values: &'a Map<String, Value>, path: &str) -> Option<&'a Map<String, Value>> {
    let mut current = values;
    for key in path.split('.') {
        match current.get(key) {
            Some(Value::Object(m)) => current = m,
            _ => return None,
        }
    }
    Some(current)
}

/// `Values.PathValue`: the value at a dotted path (its last step a key of a map).
pub fn path_value<'a>(values: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    match path.rsplit_once('.') {
        None => values.get(path),
        Some((parent, key)) => table(values, parent)?.get(key),
    }
}

/// `pathToMap`: `data` nested under a dotted path (`.` is the top).
pub fn path_to_map(path: &str, data: Map<String, Value>) -> Map<String, Value> {
    if path == "." {
        return data;
    }
    let mut current = data;
    for key in path.split('.').rev() {
        let mut outer = Map::new();
        outer.insert(key.to_string(), Value::Object(current));
        current = outer;
    }
    current
}

/// Helm's `strvals.ParseInto`: one `--set` argument (`a.b=c,d[0].e={x,y}`) merged into
/// `into`. Values are typed as strvals types them: `true`/`false` (any case) bools, `null`
/// nil, decimal integers without a leading zero int64, everything else (floats too) a
/// string.
pub fn parse_set(text: &str, into: &mut Value) -> Result<(), String> {
    let chars: Vec<char> = text.chars().collect();
    let mut pos = 0;
    while pos < chars.len() {
        let (key_end, op) = scan(&chars, pos, &['=', ','])
            .ok_or_else(|| format!("key {:?} has no value", rest(&chars, pos)))?;
        if op == ',' {
            return Err(format!(
                "key {:?} has no value (cannot end with ,)",
                rest(&chars, pos)
            ));
        }
        let path = parse_path(&chars[pos..key_end])?;
        pos = key_end + 1;
        let value = if chars.get(pos) == Some(&'{') {
            let (items, next) = set_list(&chars, pos + 1)?;
            pos = next;
            Value::Array(items)
        } else {
            let (end, _) = scan(&chars, pos, &[',']).unwrap_or((chars.len(), ','));
            let raw: String = unescape(&chars[pos..end]);
            pos = end;
            typed(&raw)
        };
        set_path(into, &path, value)?;
        if chars.get(pos) == Some(&',') {
            pos += 1;
        }
    }
    Ok(())
}

fn rest(chars: &[char], pos: usize) -> String {
    chars[pos..].iter().collect()
}

/// The first unescaped char of `stops` at or after `pos`, with its position.
fn scan(chars: &[char], mut pos: usize, stops: &[char]) -> Option<(usize, char)> {
    while pos < chars.len() {
        match chars[pos] {
            '\\' => pos += 2,
            c if stops.contains(&c) => return Some((pos, c)),
            _ => pos += 1,
        }
    }
    None
}

fn unescape(chars: &[char]) -> String {
    let mut out = String::new();
    let mut it = chars.iter();
    while let Some(&c) = it.next() {
        if c == '\\' {
            if let Some(&n) = it.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `typedVal`.
fn typed(raw: &str) -> Value {
    if raw.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if raw.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if raw.eq_ignore_ascii_case("null") {
        return Value::Null;
    }
    if raw == "0" {
        return Value::from(0);
    }
    if !raw.starts_with('0') {
        if let Ok(i) = raw.parse::<i64>() {
            // ParseInt takes a sign but no `+` with digits only; Rust's parse agrees.
            return Value::from(i);
        }
    }
    Value::String(raw.to_string())
}

/// `{a,b}` after its `{`: the items and the position after `}`.
fn set_list(chars: &[char], mut pos: usize) -> Result<(Vec<Value>, usize), String> {
    let mut items = Vec::new();
    loop {
        let (end, stop) = scan(chars, pos, &[',', '}'])
            .ok_or_else(|| "list must terminate with '}'".to_string())?;
        let raw = unescape(&chars[pos..end]);
        if !(raw.is_empty() && stop == '}' && items.is_empty()) {
            items.push(typed(&raw));
        }
        pos = end + 1;
        if stop == '}' {
            return Ok((items, pos));
        }
    }
}

enum Step {
    Key(String),
    Index(usize),
}

/// `a.b[0].c` as steps; `\.` keeps a dot inside a key.
fn parse_path(chars: &[char]) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut key = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                key.push(chars[i + 1]);
                i += 2;
                continue;
            }
            '.' => {
                if !key.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut key)));
                }
            }
            '[' => {
                if !key.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut key)));
                }
                let close = chars[i..]
                    .iter()
                    .position(|&c| c == ']')
                    .ok_or("missing ] in list index")?;
                let index: String = chars[i + 1..i + close].iter().collect();
                let index = index
                    .parse::<usize>()
                    .map_err(|_| format!("negative or bad list index {index:?}"))?;
                steps.push(Step::Index(index));
                i += close;
            }
            c => key.push(c),
        }
        i += 1;
    }
    if !key.is_empty() {
        steps.push(Step::Key(key));
    }
    if steps.is_empty() {
        return Err("empty key".into());
    }
    Ok(steps)
}

/// Puts `value` at `path`, making maps and lists on the way (lists padded with nulls, as
/// strvals' `setIndex` does).
fn set_path(at: &mut Value, path: &[Step], value: Value) -> Result<(), String> {
    let Some((step, rest)) = path.split_first() else {
        *at = value;
        return Ok(());
    };
    match step {
        Step::Key(key) => {
            if !at.is_object() {
                *at = Value::Object(Map::new());
            }
            let map = at.as_object_mut().ok_or("a map was made here")?;
            let slot = map.entry(key.clone()).or_insert(Value::Null);
            set_path(slot, rest, value)
        }
        Step::Index(index) => {
            if *index > 65536 {
                return Err(format!(
                    "index of {index} is greater than maximum supported index of 65536"
                ));
            }
            if !at.is_array() {
                *at = Value::Array(Vec::new());
            }
            let list = at.as_array_mut().ok_or("a list was made here")?;
            if list.len() <= *index {
                list.resize(index + 1, Value::Null);
            }
            set_path(&mut list[*index], rest, value)
        }
    }
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn user_files_merge_maps_and_replace_the_rest() {
        let a = json!({"a": {"x": 1, "y": [1]}, "b": 1});
        let b = json!({"a": {"y": [2], "z": null}, "c": 2});
        assert_eq!(
            merge_maps(&a, &b),
            json!({"a": {"x": 1, "y": [2], "z": null}, "b": 1, "c": 2})
        );
    }

    #[test]
    fn tables_coalesce_with_nulls_removed_unless_merging() {
        let mut dst = json!({"a": {"x": null, "n": null}, "k": 1});
        let mut src = json!({"a": {"x": 1, "y": 2}, "k": 2, "d": 3});
        let (Value::Object(d), Value::Object(s)) = (&mut dst, &mut src) else {
            unreachable!()
        };
        let mut kept = d.clone();
        coalesce_tables(d, &mut s.clone(), false);
        assert_eq!(
            Value::Object(d.clone()),
            json!({"a": {"y": 2}, "k": 1, "d": 3})
        );
        coalesce_tables(&mut kept, s, true);
        assert_eq!(
            Value::Object(kept),
            json!({"a": {"x": null, "n": null, "y": 2}, "k": 1, "d": 3})
        );
    }

    #[test]
    fn set_values_are_typed_as_strvals_types_them() {
        let mut v = json!({});
        parse_set("a.b=3,c=TRUE,d=1.5,e=007,f=null,g=0", &mut v).unwrap();
        parse_set("l={x,y},k[1].n=z,esc=a\\,b", &mut v).unwrap();
        parse_set("m\\.n=1", &mut v).unwrap();
        assert_eq!(
            v,
            json!({"a": {"b": 3}, "c": true, "d": "1.5", "e": "007", "f": null, "g": 0,
                   "l": ["x", "y"], "k": [null, {"n": "z"}], "esc": "a,b", "m.n": 1})
        );
        assert!(parse_set("a", &mut v).is_err());
    }

    #[test]
    fn paths() {
        let Value::Object(v) = json!({"a": {"b": {"c": true}}}) else {
            unreachable!()
        };
        assert_eq!(path_value(&v, "a.b.c"), Some(&json!(true)));
        assert_eq!(path_value(&v, "a.x.c"), None);
        assert!(table(&v, "a.b").is_some());
        assert_eq!(
            Value::Object(path_to_map("p.q", v.clone())),
            json!({"p": {"q": {"a": {"b": {"c": true}}}}})
        );
    }
}
