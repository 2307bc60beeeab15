//! Helm's `toToml`: BurntSushi/toml's encoder (v1), as Helm calls it — keys sorted, plain
//! values before tables, nested tables indented two spaces per level, a list of maps as an
//! array of tables, nil values left out — and its error text as the result when the value
//! cannot be TOML (Helm returns `err.Error()`).

use crate::helm::template::builtins::exact;
use crate::helm::template::{Engine, Value};
use std::collections::BTreeMap;

pub fn register(engine: &mut Engine) {
    engine.register("toToml", |_, args| {
        let [v] = exact::<1>(args, "toToml")?;
        Ok(Value::str(to_toml(&v)))
    });
}

pub fn to_toml(v: &Value) -> String {
    let mut enc = Encoder::default();
    match enc.encode(&[], &v.without_structs()) {
        Ok(()) => enc.out,
        Err(message) => message.to_string(),
    }
}

const NO_KEY: &str = "toml: top-level values must be Go maps or structs";
const NIL_ELEMENT: &str = "toml: cannot encode array with nil element";

#[derive(Default)]
struct Encoder {
    out: String,
    written: bool,
}

type Result = std::result::Result<(), &'static str>;

impl Encoder {
    fn write(&mut self, text: &str) {
        self.out.push_str(text);
        self.written = true;
    }

    fn newline(&mut self) {
        if self.written {
            self.write("\n");
        }
    }

    fn encode(&mut self, key: &[String], v: &Value) -> Result {
        match v {
            Value::Nil => Ok(()),
            Value::Map(map) => self.table(key, &map.borrow()),
            Value::List(items) if is_array_of_tables(items)? => {
                if key.is_empty() {
                    return Err(NO_KEY);
                }
                for item in items.iter() {
                    let Value::Map(map) = item else { continue };
                    self.newline();
                    self.write(&format!("{}[[{}]]", indent(key), dotted(key)));
                    self.newline();
                    self.map(key, &map.borrow(), false)?;
                }
                Ok(())
            }
            _ => self.key_value(key, v, false),
        }
    }

    fn table(&mut self, key: &[String], map: &BTreeMap<String, Value>) -> Result {
        if key.len() == 1 {
            // An empty line between top-level tables.
            self.newline();
        }
        if !key.is_empty() {
            self.write(&format!("{}[{}]", indent(key), dotted(key)));
            self.newline();
        }
        self.map(key, map, false)
    }

    fn map(&mut self, key: &[String], map: &BTreeMap<String, Value>, inline: bool) -> Result {
        let mut direct = Vec::new();
        let mut sub = Vec::new();
        for (k, v) in map {
            if is_table(v)? {
                sub.push((k, v));
            } else {
                direct.push((k, v));
            }
        }
        if inline {
            self.write("{");
        }
        let subs = !sub.is_empty();
        for (keys, trailing_comma) in [(direct, subs), (sub, false)] {
            let count = keys.len();
            for (i, (k, v)) in keys.into_iter().enumerate() {
                if matches!(v, Value::Nil) {
                    continue;
                }
                if inline {
                    self.key_value(std::slice::from_ref(k), v, true)?;
                    // As the encoder does, by position: a nil last value leaves a comma.
                    if trailing_comma || i != count - 1 {
                        self.write(", ");
                    }
                } else {
                    let mut path = key.to_vec();
                    path.push(k.clone());
                    self.encode(&path, v)?;
                }
            }
        }
        if inline {
            self.write("}");
        }
        Ok(())
    }

    fn key_value(&mut self, key: &[String], v: &Value, inline: bool) -> Result {
        let Some(last) = key.last() else {
            return Err(NO_KEY);
        };
        self.write(&format!("{}{} = ", indent(key), quoted_key(last)));
        self.element(v)?;
        if !inline {
            self.newline();
        }
        Ok(())
    }

    fn element(&mut self, v: &Value) -> Result {
        match v {
            Value::Str(s) => self.write(&format!("\"{}\"", escape(s))),
            Value::Bool(b) => self.write(if *b { "true" } else { "false" }),
            Value::Int(i, _) => self.write(&i.to_string()),
            Value::Float(f) => self.write(&float(*f)),
            Value::List(items) => {
                self.write("[");
                for (i, item) in items.iter().enumerate() {
                    self.element(item)?;
                    if i != items.len() - 1 {
                        self.write(", ");
                    }
                }
                self.write("]");
            }
            Value::Map(map) => self.map(&[], &map.borrow(), true)?,
            Value::Nil => return Err(NIL_ELEMENT),
            // `to_toml` replaced structs by maps before encoding.
            Value::Struct(s) => self.element(&Value::from_json(&s.json, false))?,
        }
        Ok(())
    }
}

/// Whether a map value is written as a table (`[key]`, or `[[key]]` for a list of maps).
fn is_table(v: &Value) -> std::result::Result<bool, &'static str> {
    match v {
        Value::Map(_) => Ok(true),
        Value::List(items) => is_array_of_tables(items),
        _ => Ok(false),
    }
}

/// A list is an array of tables when its first element is a map; no element may be nil.
fn is_array_of_tables(items: &[Value]) -> std::result::Result<bool, &'static str> {
    if items.iter().any(|v| matches!(v, Value::Nil)) {
        return Err(NIL_ELEMENT);
    }
    Ok(matches!(items.first(), Some(Value::Map(_))))
}

fn indent(key: &[String]) -> String {
    "  ".repeat(key.len().saturating_sub(1))
}

fn dotted(key: &[String]) -> String {
    key.iter()
        .map(|k| quoted_key(k))
        .collect::<Vec<_>>()
        .join(".")
}

/// A bare key (letters, digits, `_`, `-`) as it is, any other quoted.
fn quoted_key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        k.to_string()
    } else {
        format!("\"{}\"", escape(k))
    }
}

/// The encoder's escapes: `"` and `\`, the short forms of \b \t \n \f \r, `\uXXXX` for the
/// other control characters and DEL.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// Go's `FormatFloat(f, 'f', -1, 64)` with a `.0` added where it has no point.
fn float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f.is_sign_negative() { "-inf" } else { "+inf" }.into();
    }
    let text = format!("{f}");
    if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(json: serde_json::Value) -> Value {
        Value::from_json_values(&json)
    }

    // Numbers in values are float64 in Helm (YAML goes through JSON), so they print as
    // floats; integers (`int`, `len`) print as integers.
    #[test]
    fn integers_and_floats_as_go_formats_them() {
        let mut map = BTreeMap::new();
        map.insert("i".to_string(), Value::int(3));
        map.insert("f".to_string(), Value::Float(0.5));
        map.insert("big".to_string(), Value::Float(1e21));
        assert_eq!(
            to_toml(&Value::map(map)),
            "big = 1000000000000000000000.0\nf = 0.5\ni = 3\n"
        );
    }

    #[test]
    fn tables_come_after_plain_keys_sorted_and_indented() {
        let v = value(serde_json::json!({
            "title": "x",
            "owner": {"name": "Tom", "dob": 1979, "nested": {"deep": true}},
            "ports": [8000, 8001],
            "ratio": 2.0,
            "skip": null,
            "servers": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
            "odd key": "a\"b\n",
        }));
        assert_eq!(
            to_toml(&v),
            "\"odd key\" = \"a\\\"b\\n\"\nports = [8000.0, 8001.0]\nratio = 2.0\ntitle = \"x\"\n\n[owner]\n  dob = 1979.0\n  name = \"Tom\"\n  [owner.nested]\n    deep = true\n\n[[servers]]\n  ip = \"10.0.0.1\"\n\n[[servers]]\n  ip = \"10.0.0.2\"\n"
        );
    }

    #[test]
    fn inline_tables_and_errors_as_helm_returns_them() {
        let v = value(serde_json::json!({"a": [[{"x": 1, "y": {"z": 2}}]]}));
        assert_eq!(to_toml(&v), "a = [[{x = 1.0, y = {z = 2.0}}]]\n");
        assert_eq!(to_toml(&value(serde_json::json!([1]))), NO_KEY);
        assert_eq!(
            to_toml(&value(serde_json::json!({"a": [1, null]}))),
            NIL_ELEMENT
        );
        assert_eq!(to_toml(&value(serde_json::json!({}))), "");
        assert_eq!(to_toml(&value(serde_json::json!({"e": {}}))), "[e]\n");
    }
}
