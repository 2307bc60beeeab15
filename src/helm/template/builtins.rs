//! The functions every Go template has (`text/template/funcs.go`): comparisons with Go's
//! rules, `not`, `len`, `index`, `slice`, `print`/`printf`/`println`, `urlquery`.
//! (`and`/`or` short-circuit, so the executor evaluates them itself.)

use super::value::Value;
use super::{gofmt, CallError, Engine};
use std::cmp::Ordering;

/// Go's `url.QueryEscape`, which `urlquery` applies: unreserved bytes kept, space as `+`.
pub fn query_escape(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

pub fn register(engine: &mut Engine) {
    engine.register("not", |_, args| {
        let [v] = exact::<1>(args, "not")?;
        Ok(Value::Bool(!v.truthy()))
    });
    engine.register("len", |_, args| {
        let [v] = exact::<1>(args, "len")?;
        Ok(Value::int(match &v {
            Value::Str(s) => s.len(),
            Value::List(l) => l.len(),
            Value::Map(m) => m.borrow().len(),
            other => return Err(format!("len of type {}", other.type_name()).into()),
        } as i64))
    });
    engine.register("index", |_, args| {
        let mut args = args.into_iter();
        let mut item = args
            .next()
            .ok_or("wrong number of args for index: want at least 1 got 0")?;
        for (i, key) in args.enumerate() {
            // After the first step the item is an element as its map or list holds it: a
            // nil one is a nil interface, which Go's `index` reports apart from nil data.
            if i > 0 && matches!(item, Value::Nil) {
                return Err("index of nil pointer".into());
            }
            item = index(&item, &key)?;
        }
        Ok(item)
    });
    engine.register("slice", |_, args| slice(args));
    engine.register("print", |_, args| Ok(Value::str(gofmt::sprint(&args))));
    engine.register("println", |_, args| Ok(Value::str(gofmt::sprintln(&args))));
    engine.register("printf", |exec, args| {
        let mut args = args.into_iter();
        let format = match args.next() {
            Some(Value::Str(ref s)) => s.clone(),
            Some(other) => {
                return Err(format!(
                    "wrong type for value; expected string; got {}",
                    other.type_name()
                )
                .into())
            }
            None => return Err("wrong number of args for printf: want at least 1 got 0".into()),
        };
        let limit = usize::try_from(exec.bytes_left()).unwrap_or(usize::MAX);
        gofmt::sprintf_within(&format, &args.collect::<Vec<_>>(), limit)
            .map(Value::str)
            .ok_or_else(|| super::limits::bytes_spent(&exec.context().limits()).into())
    });
    engine.register("urlquery", |_, args| {
        Ok(Value::str(query_escape(&gofmt::sprint(&args))))
    });
    engine.register("eq", |_, args| {
        let (first, rest) = args
            .split_first()
            .ok_or("missing argument for comparison")?;
        if rest.is_empty() {
            return Err("missing argument for comparison".into());
        }
        for other in rest {
            if equal(first, other)? {
                return Ok(Value::Bool(true));
            }
        }
        Ok(Value::Bool(false))
    });
    engine.register("ne", |_, args| {
        let [a, b] = exact::<2>(args, "ne")?;
        Ok(Value::Bool(!equal(&a, &b)?))
    });
    engine.register("lt", |_, args| ordered(args, "lt", |o| o == Ordering::Less));
    engine.register("le", |_, args| {
        ordered(args, "le", |o| o != Ordering::Greater)
    });
    engine.register("gt", |_, args| {
        ordered(args, "gt", |o| o == Ordering::Greater)
    });
    engine.register("ge", |_, args| ordered(args, "ge", |o| o != Ordering::Less));
}

/// Exactly `N` arguments, or Go's "wrong number of args" error.
pub fn exact<const N: usize>(args: Vec<Value>, name: &str) -> Result<[Value; N], CallError> {
    let got = args.len();
    args.try_into().map_err(|_| {
        CallError::Message(format!(
            "wrong number of args for {name}: want {N} got {got}"
        ))
    })
}

/// Go's `eq` for two values: same basic kind compares, an int never equals a float (an
/// error, as in Go), nil equals only nil, maps and lists don't compare.
pub fn equal(a: &Value, b: &Value) -> Result<bool, CallError> {
    Ok(match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Nil, _) | (_, Value::Nil) => false,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x, _), Value::Int(y, _)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        // Go's `==` of two values of one comparable type: a `time.Time` by its instant
        // (cilium's `ne $now ($now | dateModify ...)`; tend's times share one location), a
        // pointer (`*semver.Version`) by identity.
        (Value::Struct(x), Value::Struct(y)) if x.type_name == y.type_name => {
            if x.type_name == "time.Time" {
                x.json == y.json
            } else if x.type_name.starts_with('*') {
                std::rc::Rc::ptr_eq(x, y)
            } else {
                return Err(format!("non-comparable type {}", x.type_name).into());
            }
        }
        (Value::List(_) | Value::Map(_), _) | (_, Value::List(_) | Value::Map(_)) => {
            return Err(format!(
                "non-comparable types {}: {}",
                gofmt::display(a),
                a.type_name()
            )
            .into());
        }
        _ => return Err("incompatible types for comparison".into()),
    })
}

fn ordered(args: Vec<Value>, name: &str, test: fn(Ordering) -> bool) -> Result<Value, CallError> {
    let [a, b] = exact::<2>(args, name)?;
    let order = match (&a, &b) {
        (Value::Int(x, _), Value::Int(y, _)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (Value::Str(x), Value::Str(y)) => x.cmp(y),
        (
            Value::Int(..) | Value::Float(_) | Value::Str(_),
            Value::Int(..) | Value::Float(_) | Value::Str(_),
        ) => {
            return Err("incompatible types for comparison".into());
        }
        _ => return Err("invalid type for comparison".into()),
    };
    Ok(Value::Bool(test(order)))
}

fn int_arg(v: &Value, what: &str) -> Result<i64, CallError> {
    match v {
        Value::Int(i, _) => Ok(*i),
        other => Err(format!("cannot {what} with type {}", other.type_name()).into()),
    }
}

fn index(item: &Value, key: &Value) -> Result<Value, CallError> {
    match item {
        Value::Map(m) => match key {
            Value::Str(k) => Ok(m.borrow().get(&**k).cloned().unwrap_or(Value::Nil)),
            other => Err(format!("value has type {}; should be string", other.type_name()).into()),
        },
        Value::List(l) => {
            let i = int_arg(key, "index slice/array")?;
            if i < 0 || i as usize >= l.len() {
                return Err(format!("index out of range: {i}").into());
            }
            Ok(l[i as usize].clone())
        }
        Value::Str(s) => {
            let i = int_arg(key, "index string")?;
            s.as_bytes()
                .get(i as usize)
                .filter(|_| i >= 0)
                .map(|b| Value::int(*b as i64))
                .ok_or_else(|| format!("index out of range: {i}").into())
        }
        Value::Nil => Err("index of untyped nil".into()),
        other => Err(format!("can't index item of type {}", other.type_name()).into()),
    }
}

fn slice(args: Vec<Value>) -> Result<Value, CallError> {
    let mut args = args.into_iter();
    let item = args
        .next()
        .ok_or("wrong number of args for slice: want at least 1 got 0")?;
    let bounds: Vec<i64> = args
        .map(|a| int_arg(&a, "slice"))
        .collect::<Result<_, _>>()?;
    let len = match &item {
        Value::Str(s) => s.len(),
        Value::List(l) => l.len(),
        Value::Nil => return Err("slice of untyped nil".into()),
        other => return Err(format!("can't slice item of type {}", other.type_name()).into()),
    } as i64;
    if bounds.len() > 2 {
        return Err("too many slice indexes".into());
    }
    let lo = bounds.first().copied().unwrap_or(0);
    let hi = bounds.get(1).copied().unwrap_or(len);
    if lo < 0 || hi < lo || hi > len {
        return Err(format!("index out of range: {hi}").into());
    }
    Ok(match &item {
        Value::Str(s) => Value::str(
            s.get(lo as usize..hi as usize)
                .ok_or("slice splits a character")?,
        ),
        Value::List(l) => Value::list(l[lo as usize..hi as usize].to_vec()),
        _ => Value::Nil,
    })
}
