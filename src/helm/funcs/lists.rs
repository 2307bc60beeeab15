//! Sprig's list and dict functions beyond the basics (`rest`, `initial`, `reverse`,
//! `without`, `chunk`, `dig`, `pluck`, `all`, `any`, `seq`, `untilStep`, `deepEqual`, ...).
//! Sprig's non-`must` variants panic where the `must` ones return an error, and Go's
//! template engine turns both into the same failed call, so each pair shares one function.

use super::conv::{string_list, strval, to_int};
use crate::helm::template::builtins::exact;
use crate::helm::template::{CallError, Engine, Exec, Value};
use std::collections::BTreeMap;

fn list_of(v: &Value, what: &str) -> Result<Vec<Value>, CallError> {
    match v {
        Value::List(l) => Ok(l.to_vec()),
        other => Err(format!("Cannot {what} on type {}", go_type(other)).into()),
    }
}

/// The type Sprig names in its errors (`reflect.TypeOf(v)`).
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Nil => "<nil>",
        other => other.type_name(),
    }
}

pub fn register(engine: &mut Engine) {
    engine.register("tuple", |_, args| Ok(Value::list(args)));
    for name in ["push", "mustPush", "mustAppend"] {
        engine.register(name, |_, args| {
            let [l, v] = exact::<2>(args, "push")?;
            let mut out = list_of(&l, "push")?;
            out.push(v);
            Ok(Value::list(out))
        });
    }
    engine.register("mustPrepend", |_, args| {
        let [l, v] = exact::<2>(args, "mustPrepend")?;
        let mut out = vec![v];
        out.extend(list_of(&l, "prepend")?);
        Ok(Value::list(out))
    });
    engine.register("mustFirst", |_, args| {
        let [l] = exact::<1>(args, "mustFirst")?;
        Ok(list_of(&l, "find first")?
            .first()
            .cloned()
            .unwrap_or_default())
    });
    engine.register("mustLast", |_, args| {
        let [l] = exact::<1>(args, "mustLast")?;
        Ok(list_of(&l, "find last")?
            .last()
            .cloned()
            .unwrap_or_default())
    });
    for name in ["rest", "mustRest"] {
        engine.register(name, |_, args| {
            let [l] = exact::<1>(args, "rest")?;
            let items = list_of(&l, "find rest")?;
            // Sprig gives nil for an empty list, not an empty one.
            Ok(match items.split_first() {
                Some((_, rest)) => Value::list(rest.to_vec()),
                None => Value::Nil,
            })
        });
    }
    for name in ["initial", "mustInitial"] {
        engine.register(name, |_, args| {
            let [l] = exact::<1>(args, "initial")?;
            let items = list_of(&l, "find initial")?;
            Ok(match items.split_last() {
                Some((_, init)) => Value::list(init.to_vec()),
                None => Value::Nil,
            })
        });
    }
    for name in ["reverse", "mustReverse"] {
        engine.register(name, |_, args| {
            let [l] = exact::<1>(args, "reverse")?;
            let mut items = list_of(&l, "find reverse")?;
            items.reverse();
            Ok(Value::list(items))
        });
    }
    for name in ["without", "mustWithout"] {
        engine.register(name, |_, args| {
            let (l, omit) = args.split_first().ok_or("missing list")?;
            let kept = list_of(l, "find without")?
                .into_iter()
                .filter(|item| !omit.iter().any(|o| deep_equal(o, item)))
                .collect();
            Ok(Value::list(kept))
        });
    }
    engine.register("mustHas", |_, args| {
        let [needle, haystack] = exact::<2>(args, "mustHas")?;
        if matches!(haystack, Value::Nil) {
            return Ok(Value::Bool(false));
        }
        let items = list_of(&haystack, "find has")?;
        Ok(Value::Bool(items.iter().any(|i| deep_equal(i, &needle))))
    });
    // Sprig's `slice` replaces Go's builtin (template functions win over builtins): indices
    // go through `toInt`, and an empty list slices to nil.
    for name in ["slice", "mustSlice"] {
        engine.register(name, |_, args| sprig_slice(args));
    }
    for name in ["chunk", "mustChunk"] {
        engine.register(name, |_, args| {
            let [size, l] = exact::<2>(args, "chunk")?;
            let size = to_int(&size);
            let items = list_of(&l, "chunk")?;
            if size <= 0 {
                return Err("runtime error: integer divide by zero".into());
            }
            Ok(Value::list(
                items
                    .chunks(size as usize)
                    .map(|c| Value::list(c.to_vec()))
                    .collect(),
            ))
        });
    }
    engine.register("mustCompact", |_, args| {
        let [l] = exact::<1>(args, "mustCompact")?;
        Ok(Value::list(
            list_of(&l, "compact")?
                .into_iter()
                .filter(Value::truthy)
                .collect(),
        ))
    });
    engine.register("dig", |_, args| dig(args));
    engine.register("pluck", |exec, args| {
        let (key, dicts) = args.split_first().ok_or("missing key")?;
        let key = strval(key);
        let mut out = Vec::new();
        for (i, d) in dicts.iter().enumerate() {
            // A nil that is not a looked-up nil interface is Go's nil map: nothing in it.
            if matches!(d, Value::Nil) && !exec.nil_interface_arg(i + 1) {
                continue;
            }
            let Value::Map(m) = d else {
                return Err(format!(
                    "wrong type for value; expected map[string]interface {{}}; got {}",
                    d.type_name()
                )
                .into());
            };
            if let Some(v) = m.borrow().get(&key) {
                out.push(v.clone());
            }
        }
        Ok(Value::list(out))
    });
    engine.register("all", |_, args| {
        Ok(Value::Bool(args.iter().all(Value::truthy)))
    });
    engine.register("any", |_, args| {
        Ok(Value::Bool(args.iter().any(Value::truthy)))
    });
    engine.register("seq", |exec, args| seq(exec, &args));
    engine.register("untilStep", |exec, args| {
        let [start, stop, step] = exact::<3>(args, "untilStep")?;
        let items = until_step(exec, to_int(&start), to_int(&stop), to_int(&step), 24)?;
        Ok(Value::list(items.into_iter().map(Value::int).collect()))
    });
    engine.register("toStrings", |_, args| {
        let [v] = exact::<1>(args, "toStrings")?;
        Ok(Value::list(
            string_list(&v).into_iter().map(Value::from).collect(),
        ))
    });
    engine.register("deepEqual", |_, args| {
        let [a, b] = exact::<2>(args, "deepEqual")?;
        Ok(Value::Bool(deep_equal(&a, &b)))
    });
    engine.register("typeIs", |_, args| {
        let [t, v] = exact::<2>(args, "typeIs")?;
        Ok(Value::Bool(strval(&t) == v.type_name()))
    });
    engine.register("typeIsLike", |_, args| {
        let [t, v] = exact::<2>(args, "typeIsLike")?;
        let t = strval(&t);
        Ok(Value::Bool(
            t == v.type_name() || t == format!("*{}", v.type_name()),
        ))
    });
    engine.register("mustDeepCopy", |_, args| {
        let [v] = exact::<1>(args, "mustDeepCopy")?;
        if matches!(v, Value::Nil) {
            return Err("deepCopy cannot be nil".into());
        }
        Ok(v.deep_copy())
    });
}

/// Go's `reflect.DeepEqual` over template values: an int never equals a float, nor an int64;
/// lists and maps compare item by item.
pub fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x, s), Value::Int(y, t)) => x == y && s == t,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| deep_equal(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => false,
    }
}

fn sprig_slice(args: Vec<Value>) -> Result<Value, CallError> {
    let (list, indices) = args
        .split_first()
        .ok_or("wrong number of args for slice: want at least 1 got 0")?;
    let items = match list {
        Value::List(l) => l,
        other => {
            return Err(format!(
                "list should be type of slice or array but {}",
                go_type(other)
            )
            .into())
        }
    };
    if items.is_empty() {
        return Ok(Value::Nil);
    }
    let start = indices.first().map_or(0, to_int);
    let end = indices.get(1).map_or(items.len() as i64, to_int);
    if start < 0 || end < start || end as usize > items.len() {
        return Err(format!("runtime error: slice bounds out of range [{start}:{end}]").into());
    }
    Ok(Value::list(items[start as usize..end as usize].to_vec()))
}

/// `dig "a" "b" default dict`: the value at the path (even a null one), or the default
/// when a key is missing; a step that is not a dict is an error, as Sprig's type assertion.
fn dig(args: Vec<Value>) -> Result<Value, CallError> {
    if args.len() < 3 {
        return Err("dig needs at least three arguments".into());
    }
    let n = args.len();
    let mut current = args[n - 1].clone();
    let default = args[n - 2].clone();
    for key in &args[..n - 2] {
        let Value::Str(key) = key else {
            return Err(format!(
                "interface conversion: interface {{}} is {}, not string",
                go_type(key)
            )
            .into());
        };
        let Value::Map(m) = &current else {
            return Err(format!(
                "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                go_type(&current)
            )
            .into());
        };
        let step = m.borrow().get(&**key).cloned();
        match step {
            Some(v) => current = v,
            None => return Ok(default),
        }
    }
    Ok(current)
}

/// Sprig's `untilStep`: from `start` towards `stop` (excluded) by `step`; nothing when
/// the step points away. The numbers are paid for (`item_bytes` each) before they are made.
pub fn until_step(
    exec: &Exec,
    start: i64,
    stop: i64,
    step: i64,
    item_bytes: u64,
) -> Result<Vec<i64>, CallError> {
    let (start, stop, step) = (start as i128, stop as i128, step as i128);
    let count = if (stop < start && step < 0) || (stop > start && step > 0) {
        ((stop - start).abs() + step.abs() - 1) / step.abs()
    } else {
        0
    };
    exec.spend_bytes((count as u64).saturating_mul(item_bytes))?;
    Ok((0..count).map(|i| (start + i * step) as i64).collect())
}

/// Sprig's `seq`, like the shell's: a string of numbers separated by spaces.
fn seq(exec: &Exec, args: &[Value]) -> Result<Value, CallError> {
    let p: Vec<i64> = args.iter().map(to_int).collect();
    // Each number costs its digits and a space.
    let numbers = match p.as_slice() {
        [end] => {
            let inc = if *end < 1 { -1 } else { 1 };
            until_step(exec, 1, end.wrapping_add(inc), inc, 21)?
        }
        [start, end] => {
            let inc = if end < start { -1 } else { 1 };
            until_step(exec, *start, end.wrapping_add(inc), inc, 21)?
        }
        [start, end, step] => {
            let inc = if end < start { -1 } else { 1 };
            if end < start && *step > 0 {
                Vec::new()
            } else {
                until_step(exec, *start, end.wrapping_add(inc), *step, 21)?
            }
        }
        _ => Vec::new(),
    };
    let text: Vec<String> = numbers.iter().map(i64::to_string).collect();
    Ok(Value::str(text.join(" ")))
}

/// A dict of `_0`, `_1`, ... as Sprig's `split`/`splitn` give.
pub fn numbered(parts: Vec<&str>) -> Value {
    let map: BTreeMap<String, Value> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("_{i}"), Value::from(p)))
        .collect();
    Value::map(map)
}
