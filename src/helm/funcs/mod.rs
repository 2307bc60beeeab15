//! Helm's template functions (`include`, `tpl`, `required`, `fail`, `toYaml`, `fromYaml`,
//! `toJson`) and the part of Sprig v3 charts use, with Sprig's
//! semantics: its `empty`, its string conversion (`strval`), mergo's merge rules.

mod collections;
mod files;
pub mod goyaml;
mod strings;
pub use strings::{semver_compare, semver_order};

use super::template::builtins::exact;
use super::template::gofmt;
use super::template::{CallError, Engine, Value};

/// Registers every Helm and Sprig function tend supports on `engine`.
pub fn register(engine: &mut Engine) {
    strings::register(engine);
    collections::register(engine);
    engine.register("include", |exec, args| {
        let [name, data] = exact::<2>(args, "include")?;
        let name = want_str(&name)?;
        Ok(Value::str(exec.execute_named(name, data)?))
    });
    engine.register("tpl", |exec, args| {
        let [text, data] = exact::<2>(args, "tpl")?;
        // Helm's tpl cleans "<no value>" itself: its result is text, not a template's output.
        let out = exec.execute_text(want_str(&text)?, data)?;
        Ok(Value::str(out.replace("<no value>", "")))
    });
    engine.register("required", |_, args| {
        let [message, value] = exact::<2>(args, "required")?;
        match &value {
            Value::Nil => Err(strval(&message).into()),
            Value::Str(s) if s.is_empty() => Err(strval(&message).into()),
            _ => Ok(value),
        }
    });
    engine.register("fail", |_, args| {
        let [message] = exact::<1>(args, "fail")?;
        Err(strval(&message).into())
    });
    engine.register("toYaml", |_, args| {
        let [v] = exact::<1>(args, "toYaml")?;
        let text = goyaml::to_yaml(&v);
        Ok(Value::str(text.strip_suffix('\n').unwrap_or(&text)))
    });
    engine.register("toJson", |_, args| {
        let [v] = exact::<1>(args, "toJson")?;
        Ok(Value::str(go_json(&v)))
    });
    engine.register("fromYaml", |_, args| {
        let [text] = exact::<1>(args, "fromYaml")?;
        Ok(from_yaml(want_str(&text)?, false))
    });
    engine.register("fromYamlArray", |_, args| {
        let [text] = exact::<1>(args, "fromYamlArray")?;
        Ok(from_yaml(want_str(&text)?, true))
    });
    engine.register("fromJson", |_, args| {
        let [text] = exact::<1>(args, "fromJson")?;
        Ok(
            match serde_json::from_str::<serde_json::Value>(want_str(&text)?) {
                Ok(json) => Value::from_json_values(&json),
                Err(e) => error_map(&e.to_string()),
            },
        )
    });
    // chartutil.VersionSet.Has: `.Capabilities.APIVersions.Has "apps/v1"`.
    engine.register_method("Has", |_, args| {
        let [set, wanted] = exact::<2>(args, "Has")?;
        let Value::List(set) = set else {
            return Err("Has needs a list of API versions".into());
        };
        Ok(Value::Bool(
            set.iter().any(|v| v.as_str() == wanted.as_str()),
        ))
    });
    files::register(engine);
    // `lookup` is registered with what the cluster answered: see `helm::lookup`.
    super::lookup::register(engine, None);
}

/// Sprig's random strings (`randAlphaNum`, `randAlpha`, `randNumeric`, `randAscii`), drawn
/// from `seed`: the caller decides how stable they are.
pub fn register_random(engine: &mut Engine, seed: u64) {
    RANDOM_SEED.with(|s| s.set(seed));
    RANDOM_USED.with(|u| u.set(false));
    engine.register("randAlphaNum", |_, args| {
        random(
            args,
            "randAlphaNum",
            b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        )
    });
    engine.register("randAlpha", |_, args| {
        random(
            args,
            "randAlpha",
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        )
    });
    engine.register("randNumeric", |_, args| {
        random(args, "randNumeric", b"0123456789")
    });
    engine.register("randAscii", |_, args| {
        let printable: Vec<u8> = (b' '..=b'~').collect();
        random(args, "randAscii", &printable)
    });
}

thread_local! {
    /// The state of the random functions of the render running on this thread (functions are
    /// plain `fn`s, so their state can't be captured).
    static RANDOM_SEED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Whether a random function ran since [`register_random`].
    static RANDOM_USED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the render on this thread used a random function since [`register_random`].
pub fn random_used() -> bool {
    RANDOM_USED.with(std::cell::Cell::get)
}

/// splitmix64: small, and good enough for names and test data.
fn next_random() -> u64 {
    RANDOM_USED.with(|u| u.set(true));
    RANDOM_SEED.with(|s| {
        let next = s.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        s.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

fn random(args: Vec<Value>, name: &str, alphabet: &[u8]) -> Result<Value, CallError> {
    let [n] = exact::<1>(args, name)?;
    let n = to_int(&n).max(0) as usize;
    let text: String = (0..n)
        .map(|_| alphabet[(next_random() % alphabet.len() as u64) as usize] as char)
        .collect();
    Ok(Value::str(text))
}

/// Helm's fromYaml: a map (or a list for fromYamlArray) with numbers as float64, or a map
/// holding the parse error under "Error".
fn from_yaml(text: &str, array: bool) -> Value {
    match crate::yaml::parse_value(text) {
        Some(json) if json.is_array() == array => Value::from_json_values(&json),
        Some(serde_json::Value::Null) if !array => Value::empty_map(),
        Some(_) if array => Value::list(vec![Value::str("error unmarshaling JSON: not an array")]),
        Some(_) => error_map("error unmarshaling JSON: not an object"),
        None if array => Value::list(vec![Value::str("error converting YAML to JSON")]),
        None => error_map("error converting YAML to JSON"),
    }
}

fn error_map(message: &str) -> Value {
    let map = Value::empty_map();
    if let Value::Map(m) = &map {
        m.borrow_mut().insert("Error".into(), Value::str(message));
    }
    map
}

/// Go's encoding/json text: sorted keys, HTML-safe escapes, floats without needless
/// exponents.
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v);
    out
}

fn write_json(out: &mut String, v: &Value) {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => {
            let abs = f.abs();
            if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
                let text = format!("{f:e}");
                let (m, e) = text.split_once('e').unwrap_or((&text, "0"));
                let e: i32 = e.parse().unwrap_or(0);
                out.push_str(&format!(
                    "{m}e{}{:02}",
                    if e < 0 { '-' } else { '+' },
                    e.abs()
                ));
                if let Some(pos) = out.rfind("e-0") {
                    out.replace_range(pos..pos + 3, "e-");
                } else if let Some(pos) = out.rfind("e+0") {
                    out.replace_range(pos..pos + 3, "e+");
                }
            } else {
                out.push_str(&format!("{f}"));
            }
        }
        Value::Str(s) => json_string(out, s),
        Value::List(l) => {
            out.push('[');
            for (i, item) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push('{');
            for (i, (k, item)) in m.borrow().iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(out, k);
                out.push(':');
                write_json(out, item);
            }
            out.push('}');
        }
    }
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Sprig's `strval`: strings as they are, everything else as `%v` prints it.
pub fn strval(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        other => gofmt::display(other),
    }
}

/// A string parameter, or Go's error for a value of another type.
pub fn want_str(v: &Value) -> Result<&str, CallError> {
    match v {
        Value::Str(s) => Ok(s),
        Value::Nil => Err("invalid value; expected string".into()),
        other => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )
        .into()),
    }
}

/// An int parameter, or Go's error for a value of another type.
pub fn want_int(v: &Value) -> Result<i64, CallError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Nil => Err("invalid value; expected int".into()),
        other => Err(format!(
            "wrong type for value; expected int; got {}",
            other.type_name()
        )
        .into()),
    }
}

/// spf13/cast's `ToInt64`, as Sprig's `int`/`int64` use it: floats truncate, strings parse
/// (a bad string gives 0), bools are 0/1, nil is 0.
pub fn to_int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::Str(s) => {
            let t = s.trim();
            t.parse::<i64>()
                .ok()
                .or_else(|| {
                    t.parse::<f64>()
                        .ok()
                        .filter(|_| t.contains('.'))
                        .map(|f| f as i64)
                })
                .unwrap_or(0)
        }
        _ => 0,
    }
}

pub fn to_float(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Str(s) => s.trim().parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests;
