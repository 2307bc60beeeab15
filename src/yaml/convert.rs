//! YAML to JSON: straight from the parser's events in the common case ([`direct`]); through
//! serde_yaml's tree, tracking the path, only where that is refused, to say what is wrong.

use super::document::{dotted, Step};
use serde_json::Value;

/// Parse one YAML document straight into JSON, without building (and dropping) serde_yaml's
/// own tree first: 3% of a 10,020-object no-op diff's instructions (BENCHMARKS.md). `None` for
/// anything this fast path does not take exactly as [`yaml_to_json`] would: keys that are not
/// strings, bools or integers, tags, non-finite numbers, duplicate keys, integers beyond 64
/// bits, syntax errors. The caller then parses again with serde_yaml's tree, which either gives
/// the same value or says what is wrong and where.
pub(super) fn direct(text: &str) -> Option<Value> {
    serde_yaml::from_str::<Direct>(text).ok().map(|d| d.0)
}

/// A JSON value deserialized from YAML events by [`DirectVisitor`].
struct Direct(Value);

impl<'de> serde::Deserialize<'de> for Direct {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DirectVisitor).map(Direct)
    }
}

struct DirectVisitor;

impl<'de> serde::de::Visitor<'de> for DirectVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML value that maps to JSON")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::from(i))
    }
    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        Ok(Value::from(u))
    }
    fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| E::custom("not a JSON number"))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(Direct(item)) = seq.next_element()? {
            out.push(item);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(DirectKey(key)) = map.next_key()? {
            let Direct(value) = map.next_value()?;
            if out.insert(key, value).is_some() {
                return Err(serde::de::Error::custom("duplicate key"));
            }
        }
        Ok(Value::Object(out))
    }
}

/// A mapping key as [`yaml_to_json`] writes it: strings as they are, bools and integers as
/// text; anything else is left to the slow path.
struct DirectKey(String);

impl<'de> serde::Deserialize<'de> for DirectKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DirectKeyVisitor).map(DirectKey)
    }
}

struct DirectKeyVisitor;

impl serde::de::Visitor<'_> for DirectKeyVisitor {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string, bool or integer key")
    }
    fn visit_bool<E>(self, b: bool) -> Result<String, E> {
        Ok(b.to_string())
    }
    fn visit_i64<E>(self, i: i64) -> Result<String, E> {
        Ok(i.to_string())
    }
    fn visit_u64<E>(self, u: u64) -> Result<String, E> {
        Ok(u.to_string())
    }
    fn visit_str<E>(self, s: &str) -> Result<String, E> {
        Ok(s.to_string())
    }
    fn visit_string<E>(self, s: String) -> Result<String, E> {
        Ok(s)
    }
}

/// Convert YAML to JSON: keys must be strings (as in every Kubernetes object), tags are
/// dropped, and non-finite floats are rejected. On error: the path of the offending node.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The slow path's value, for comparison.
    fn slow(text: &str) -> Option<Value> {
        let yaml = serde_yaml::from_str::<serde_yaml::Value>(text).ok()?;
        yaml_to_json(yaml, &mut Vec::new()).ok()
    }

    #[test]
    fn the_fast_path_gives_what_the_slow_path_gives() {
        for text in [
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {x: 'y'}}\ndata:\n  k: |\n    line\n",
            "a: 1\nb: -2\nc: 18446744073709551615\nd: 1.5\ne: 1e3\nf: true\ng: ~\nh: null\ni: ''\n",
            "mode: 0644\nhex: 0x1F\noct: 0o17\nyes: yes\non: off\nver: 1.10\nstr: '010'\n",
            "list: [1, two, {three: 3}, [4]]\nempty: []\nnone: {}\n",
            "1: one\ntrue: t\n-5: minus\n",
            "anchors: &a {x: 1}\nalias: *a\n",
            "# only a comment\n",
            "",
            "plain\n",
        ] {
            assert_eq!(direct(text), slow(text), "{text:?}");
        }
    }

    #[test]
    fn what_the_fast_path_leaves_to_the_slow_one() {
        for text in [
            "a: 1\na: 2\n",   // duplicate key: the slow path names it
            "? [x]\n: y\n",   // a key that is not a scalar
            "~: y\n",         // a null key
            "1.5: y\n",       // a float key (its text form is the slow path's)
            "x: !custom 1\n", // a tag
            "x: .nan\n",      // not representable in JSON
            "x: [unclosed\n", // a syntax error
            "big: 99999999999999999999999\n",
        ] {
            assert_eq!(direct(text), None, "{text:?}");
        }
    }
}
