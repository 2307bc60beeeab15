//! Sprig's functions over values, lists and dicts (`default`, `empty`, `coalesce`, `dict`,
//! `set`, `merge`, ...), its integer math, and type inspection.

use super::conv::string_list;
use super::conv::{strval, to_int};
use super::lists::deep_equal;
use crate::helm::template::builtins::exact;
use crate::helm::template::value::Map;
use crate::helm::template::{CallError, Engine, Exec, Value};
use std::collections::BTreeMap;

fn want_map(v: &Value) -> Result<&Map, CallError> {
    match v {
        Value::Map(m) => Ok(m),
        other => Err(format!(
            "wrong type for value; expected map[string]interface {{}}; got {}",
            other.type_name()
        )
        .into()),
    }
}

/// A `map[string]interface{}` parameter (argument `i`) as Go's text/template passes it: a
/// nil from a pipeline, a function or the piped value is the nil map (`None`: empty, and
/// nothing can be set in it); a nil a field lookup gave is a nil `interface{}`, which Go
/// refuses for a map parameter.
fn map_param<'v>(exec: &Exec, args: &'v [Value], i: usize) -> Result<Option<&'v Map>, CallError> {
    match args.get(i) {
        Some(Value::Nil) if exec.nil_interface_arg(i) => {
            Err("wrong type for value; expected map[string]interface {}; got interface {}".into())
        }
        Some(Value::Nil) | None => Ok(None),
        Some(other) => want_map(other).map(Some),
    }
}

fn want_list(v: &Value) -> Result<Vec<Value>, CallError> {
    match v {
        Value::List(l) => Ok(l.to_vec()),
        Value::Nil => Ok(Vec::new()),
        other => Err(format!("Cannot find on type {}", other.type_name()).into()),
    }
}

pub fn register(engine: &mut Engine) {
    engine.register("default", |_, args| {
        let mut args = args.into_iter();
        let fallback = args
            .next()
            .ok_or("wrong number of args for default: want 2 got 0")?;
        Ok(match args.next() {
            Some(given) if given.truthy() => given,
            _ => fallback,
        })
    });
    engine.register("empty", |_, args| {
        let [v] = exact::<1>(args, "empty")?;
        Ok(Value::Bool(!v.truthy()))
    });
    engine.register("coalesce", |_, args| {
        Ok(args.into_iter().find(Value::truthy).unwrap_or(Value::Nil))
    });
    engine.register("ternary", |_, args| {
        let [yes, no, cond] = exact::<3>(args, "ternary")?;
        Ok(if matches!(cond, Value::Bool(true)) {
            yes
        } else {
            no
        })
    });
    engine.register("list", |_, args| Ok(Value::list(args)));
    engine.register("dict", |_, args| {
        let mut map = BTreeMap::new();
        let mut it = args.chunks(2);
        for pair in &mut it {
            let value = pair.get(1).cloned().unwrap_or_else(|| Value::str(""));
            map.insert(strval(&pair[0]), value);
        }
        Ok(Value::map(map))
    });
    engine.register("set", |exec, args| {
        let [_, k, v] = exact::<3>(args.clone(), "set")?;
        // Go panics assigning into a nil map; text/template reports the panic.
        let m = map_param(exec, &args, 0)?.ok_or("assignment to entry in nil map")?;
        let key = strval(&k);
        // The map grows by one entry (the map itself is handed back, not made).
        exec.spend_bytes(80 + key.len() as u64)
            .map_err(CallError::Template)?;
        m.borrow_mut().insert(key, v);
        Ok(args[0].clone())
    });
    engine.register("unset", |exec, args| {
        let [_, k] = exact::<2>(args.clone(), "unset")?;
        match map_param(exec, &args, 0)? {
            Some(m) => {
                m.borrow_mut().remove(&strval(&k));
                Ok(args[0].clone())
            }
            None => Ok(Value::empty_map()),
        }
    });
    engine.register("hasKey", |exec, args| {
        let [_, k] = exact::<2>(args.clone(), "hasKey")?;
        let found =
            map_param(exec, &args, 0)?.is_some_and(|m| m.borrow().contains_key(&strval(&k)));
        Ok(Value::Bool(found))
    });
    engine.register("get", |exec, args| {
        let [_, k] = exact::<2>(args.clone(), "get")?;
        let found = map_param(exec, &args, 0)?.and_then(|m| m.borrow().get(&strval(&k)).cloned());
        Ok(found.unwrap_or_else(|| Value::str("")))
    });
    // Go's map order is random, so charts sort what `keys` gives; sorted here.
    engine.register("keys", |exec, args| {
        let mut keys = Vec::new();
        for i in 0..args.len() {
            if let Some(m) = map_param(exec, &args, i)? {
                keys.extend(m.borrow().keys().map(|k| Value::str(k.as_str())));
            }
        }
        Ok(Value::list(keys))
    });
    engine.register("values", |exec, args| {
        exact::<1>(args.clone(), "values")?;
        let values = map_param(exec, &args, 0)?
            .map(|m| m.borrow().values().cloned().collect())
            .unwrap_or_default();
        Ok(Value::list(values))
    });
    engine.register("omit", |exec, args| pick_or_omit(exec, args, false));
    engine.register("pick", |exec, args| pick_or_omit(exec, args, true));
    engine.register("merge", |exec, args| merge_all(exec, args, false));
    engine.register("mustMerge", |exec, args| merge_all(exec, args, false));
    engine.register("mergeOverwrite", |exec, args| merge_all(exec, args, true));
    engine.register("mustMergeOverwrite", |exec, args| {
        merge_all(exec, args, true)
    });
    engine.register("deepCopy", |_, args| {
        Ok(exact::<1>(args, "deepCopy")?[0].deep_copy())
    });
    engine.register("has", |_, args| {
        let [needle, haystack] = exact::<2>(args, "has")?;
        for item in want_list(&haystack)? {
            if deep_equal(&item, &needle) {
                return Ok(Value::Bool(true));
            }
        }
        Ok(Value::Bool(false))
    });
    engine.register("concat", |_, args| {
        let mut out = Vec::new();
        for l in &args {
            out.extend(want_list(l)?);
        }
        Ok(Value::list(out))
    });
    engine.register("uniq", |_, args| uniq(args));
    engine.register("mustUniq", |_, args| uniq(args));
    engine.register("first", |_, args| {
        Ok(want_list(&exact::<1>(args, "first")?[0])?
            .first()
            .cloned()
            .unwrap_or_default())
    });
    engine.register("last", |_, args| {
        Ok(want_list(&exact::<1>(args, "last")?[0])?
            .last()
            .cloned()
            .unwrap_or_default())
    });
    engine.register("append", |_, args| {
        let [l, v] = exact::<2>(args, "append")?;
        let mut out = want_list(&l)?;
        out.push(v);
        Ok(Value::list(out))
    });
    engine.register("prepend", |_, args| {
        let [l, v] = exact::<2>(args, "prepend")?;
        let mut out = vec![v];
        out.extend(want_list(&l)?);
        Ok(Value::list(out))
    });
    engine.register("compact", |_, args| {
        let [l] = exact::<1>(args, "compact")?;
        Ok(Value::list(
            want_list(&l)?.into_iter().filter(Value::truthy).collect(),
        ))
    });
    engine.register("sortAlpha", |_, args| {
        let [l] = exact::<1>(args, "sortAlpha")?;
        let mut items = string_list(&l);
        items.sort();
        Ok(Value::list(items.into_iter().map(Value::from).collect()))
    });
    engine.register("until", |exec, args| {
        let [n] = exact::<1>(args, "until")?;
        let n = to_int(&n);
        let step = if n < 0 { -1 } else { 1 };
        let items = super::lists::until_step(exec, 0, n, step, 24)?;
        Ok(Value::list(items.into_iter().map(Value::int).collect()))
    });
    engine.register("kindIs", |_, args| {
        let [kind, v] = exact::<2>(args, "kindIs")?;
        Ok(Value::Bool(strval(&kind) == kind_of(&v)))
    });
    engine.register("kindOf", |_, args| {
        Ok(Value::str(kind_of(&exact::<1>(args, "kindOf")?[0])))
    });
    engine.register("typeOf", |_, args| {
        Ok(Value::str(exact::<1>(args, "typeOf")?[0].type_name()))
    });
    engine.register("add", |_, args| {
        Ok(Value::int64(
            args.iter().map(to_int).fold(0, i64::wrapping_add),
        ))
    });
    engine.register("add1", |_, args| {
        Ok(Value::int64(
            to_int(&exact::<1>(args, "add1")?[0]).wrapping_add(1),
        ))
    });
    engine.register("mul", |_, args| {
        Ok(Value::int64(
            args.iter().map(to_int).fold(1, i64::wrapping_mul),
        ))
    });
    engine.register("sub", |_, args| {
        let [a, b] = exact::<2>(args, "sub")?;
        Ok(Value::int64(to_int(&a).wrapping_sub(to_int(&b))))
    });
    engine.register("div", |_, args| {
        let [a, b] = exact::<2>(args, "div")?;
        let b = to_int(&b);
        if b == 0 {
            return Err("integer divide by zero".into());
        }
        // Go's integers wrap: MinInt64 / -1 is MinInt64.
        Ok(Value::int64(to_int(&a).wrapping_div(b)))
    });
    engine.register("mod", |_, args| {
        let [a, b] = exact::<2>(args, "mod")?;
        let b = to_int(&b);
        if b == 0 {
            return Err("integer divide by zero".into());
        }
        Ok(Value::int64(to_int(&a).wrapping_rem(b)))
    });
    engine.register("max", |_, args| {
        Ok(Value::int64(args.iter().map(to_int).max().unwrap_or(0)))
    });
    engine.register("min", |_, args| {
        Ok(Value::int64(args.iter().map(to_int).min().unwrap_or(0)))
    });
}

/// Go's `reflect.Kind` name, as Sprig's `kindOf` gives it.
pub(super) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Nil => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_, t) => t.name(),
        Value::Float(_) => "float64",
        Value::Str(_) => "string",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        Value::Struct(s) if s.type_name.starts_with('*') => "ptr",
        Value::Struct(_) => "struct",
    }
}

fn uniq(args: Vec<Value>) -> Result<Value, CallError> {
    let [l] = exact::<1>(args, "uniq")?;
    let mut out: Vec<Value> = Vec::new();
    for item in want_list(&l)? {
        if !out.iter().any(|o| deep_equal(o, &item)) {
            out.push(item);
        }
    }
    Ok(Value::list(out))
}

fn pick_or_omit(exec: &Exec, args: Vec<Value>, keep: bool) -> Result<Value, CallError> {
    if args.is_empty() {
        return Err("missing dict".into());
    }
    let keys: Vec<String> = args[1..].iter().map(strval).collect();
    let map = match map_param(exec, &args, 0)? {
        Some(m) => m
            .borrow()
            .iter()
            .filter(|(k, _)| keys.contains(k) == keep)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        None => BTreeMap::new(),
    };
    Ok(Value::map(map))
}

/// Sprig's `merge`/`mergeOverwrite` (mergo): into the first dict, in place; nested dicts
/// merge; otherwise the destination's value stays unless it is empty (or `overwrite`). A
/// nil map source adds nothing; into a nil map destination mergo makes a new map.
fn merge_all(exec: &Exec, args: Vec<Value>, overwrite: bool) -> Result<Value, CallError> {
    if args.is_empty() {
        return Err("missing dict".into());
    }
    let dst_map: Map = match map_param(exec, &args, 0)? {
        Some(m) => m.clone(),
        None => Map::default(),
    };
    for i in 1..args.len() {
        let Some(src_map) = map_param(exec, &args, i)? else {
            continue;
        };
        if std::rc::Rc::ptr_eq(&dst_map, src_map) {
            continue;
        }
        merge_into(&dst_map, &src_map.borrow(), overwrite);
    }
    Ok(Value::Map(dst_map))
}

fn merge_into(dst: &Map, src: &BTreeMap<String, Value>, overwrite: bool) {
    for (key, value) in src {
        let existing = dst.borrow().get(key).cloned();
        match (&existing, value) {
            // mergo: a nil source value is skipped, or copied as nil when overwriting.
            (_, Value::Nil) => {
                if overwrite {
                    dst.borrow_mut().insert(key.clone(), Value::Nil);
                }
            }
            (Some(Value::Map(d)), Value::Map(s)) if !std::rc::Rc::ptr_eq(d, s) => {
                merge_into(d, &s.borrow(), overwrite);
            }
            // A map over a non-empty value of another kind leaves it, even when overwriting.
            (Some(current), Value::Map(_)) if current.truthy() => {}
            (Some(current), _) if current.truthy() && !overwrite => {}
            _ => {
                dst.borrow_mut().insert(key.clone(), value.clone());
            }
        }
    }
}
