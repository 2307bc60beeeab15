//! Conversions every function module shares: Sprig's `strval` and `strslice`, spf13/cast's
//! `ToInt64`/`ToFloat64`, Go's argument type checks, Helm's `fromYaml`. A leaf: it imports
//! no other function module, so they can all import it.

use crate::helm::template::gofmt;
use crate::helm::template::{CallError, Value};
use base64::Engine as _;

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
        other if is_binary_text(other) => Err(
            "the text is a chart file that is not UTF-8 (from .Files.Get): tend passes its bytes to b64enc, b32enc, sha256sum, sha1sum and adler32sum only"
                .into(),
        ),
        other => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )
        .into()),
    }
}

/// The bytes of a string parameter, which may be a chart file's bytes that are not UTF-8
/// text (`.Files.Get`): for the functions that only encode or hash them.
pub fn want_bytes(v: &Value) -> Result<std::borrow::Cow<'_, [u8]>, CallError> {
    match bytes_of(v) {
        Some(bytes) => Ok(bytes),
        None => want_str(v).map(|s| std::borrow::Cow::Borrowed(s.as_bytes())),
    }
}

/// An int parameter, or Go's error for a value of another type.
pub fn want_int(v: &Value) -> Result<i64, CallError> {
    match v {
        Value::Int(i, _) => Ok(*i),
        Value::Nil => Err("invalid value; expected int".into()),
        other => Err(format!(
            "wrong type for value; expected int; got {}",
            other.type_name()
        )
        .into()),
    }
}

/// spf13/cast's `ToInt64`, as Sprig's `int`/`int64` use it: floats truncate, bools are 0/1,
/// nil is 0, strings parse as Go's `ParseInt(s, 0, 64)` after a zero fraction is trimmed
/// (`"0x1A"` is 26, `"010"` is 8, `"3.0"` is 3; `"3.5"` or `" 3"` is 0).
pub fn to_int(v: &Value) -> i64 {
    match v {
        Value::Int(i, _) => *i,
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::Str(s) => parse_go_int(trim_zero_decimal(s)).unwrap_or(0),
        _ => 0,
    }
}

/// cast's `trimZeroDecimal`: `"12.00"` is `"12"`, `"12.5"` stays.
fn trim_zero_decimal(s: &str) -> &str {
    match s.rfind('.') {
        Some(dot) if dot + 1 < s.len() && s[dot + 1..].bytes().all(|b| b == b'0') => &s[..dot],
        _ => s,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`: a sign, then `0x`/`0o`/`0b`/`0` prefixes choose the
/// base, and underscores may separate digits.
fn parse_go_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d, true)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d, true)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d, true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..], true)
    } else {
        (10, lower.as_str(), false)
    };
    if digits.contains('_') {
        let ok = (prefixed || radix == 10 && body.starts_with('0'))
            && !digits.ends_with('_')
            && !digits.contains("__");
        if !ok {
            return None;
        }
    }
    let digits: String = digits.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = i128::from_str_radix(&digits, radix).ok()?;
    i64::try_from(if neg { -magnitude } else { magnitude }).ok()
}

/// cast's `ToFloat64`: strings parse as Go's `ParseFloat` (no surrounding spaces).
pub fn to_float(v: &Value) -> f64 {
    match v {
        Value::Int(i, _) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Str(s) => s.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Sprig's `strslice`: a list's items as strings (nil items left out), a string alone.
pub fn string_list(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) => l
            .iter()
            .filter(|i| !matches!(i, Value::Nil))
            .map(strval)
            .collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

/// Helm's fromYaml: a map (or a list for fromYamlArray) with numbers as float64, or a map
/// holding the parse error under "Error". Read as Helm reads YAML (sigs.k8s.io/yaml over
/// go-yaml v2: YAML 1.1, the first document only).
pub fn from_yaml(text: &str, array: bool) -> Value {
    match crate::yaml::parse_helm_yaml(text) {
        Ok(json) if json.is_array() == array && !json.is_null() => Value::from_json_values(&json),
        Ok(serde_json::Value::Null) if array => Value::list(Vec::new()),
        Ok(serde_json::Value::Null) => Value::empty_map(),
        Ok(_) if array => Value::list(vec![Value::str("error unmarshaling JSON: not an array")]),
        Ok(_) => error_map("error unmarshaling JSON: not an object"),
        Err(e) => {
            let message = if e.starts_with("error converting") {
                e
            } else {
                format!("error converting YAML to JSON: {e}")
            };
            if array {
                Value::list(vec![Value::str(message)])
            } else {
                error_map(&message)
            }
        }
    }
}

pub fn error_map(message: &str) -> Value {
    let map = Value::empty_map();
    if let Value::Map(m) = &map {
        m.borrow_mut().insert("Error".into(), Value::str(message));
    }
    map
}

/// Go's type of what `.Files.Get` returns: a string, which in Go may hold any bytes.
pub const BINARY_TEXT: &str = "string";

/// The bytes a string argument holds: its text, or the bytes of a chart file `.Files.Get`
/// read that is not UTF-8 text. `None` for any other value.
fn bytes_of(v: &Value) -> Option<std::borrow::Cow<'_, [u8]>> {
    match v {
        Value::Str(s) => Some(std::borrow::Cow::Borrowed(s.as_bytes())),
        Value::Struct(st) if st.type_name == BINARY_TEXT => {
            base64::engine::general_purpose::STANDARD
                .decode(st.json.as_str()?)
                .ok()
                .map(std::borrow::Cow::Owned)
        }
        _ => None,
    }
}

/// The functions that read a chart file's bytes that are not UTF-8 text exactly (they encode
/// or hash them, or name their type); any other is refused such an argument.
pub const BINARY_TEXT_FUNCTIONS: [&str; 6] = [
    "b64enc",
    "b32enc",
    "sha256sum",
    "sha1sum",
    "adler32sum",
    "typeOf",
];

/// Whether a value is the bytes of a chart file that is not UTF-8 text (what `.Files.Get` gives for one).
pub fn is_binary_text(v: &Value) -> bool {
    matches!(v, Value::Struct(st) if st.type_name == BINARY_TEXT)
}
