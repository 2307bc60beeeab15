//! Helm's `fromToml`: BurntSushi/toml (v1.5, as Helm 3.19 vendors it) decoding into a
//! `map[string]interface{}` — integers as int64, floats as float64, tables as maps, arrays
//! (of tables too) as lists.
//!
//! Two of its results tend cannot give, so it stops the render naming them rather than
//! render something else: TOML dates and times (Go's `time.Time`, whose printed forms carry
//! Go's location rules), and the text BurntSushi's parser puts under `"Error"` when the input
//! is not TOML (tend's parser words its messages differently).

use super::conv::want_str;
use crate::helm::template::builtins::exact;
use crate::helm::template::{CallError, Engine, Value};
use std::collections::BTreeMap;
use toml_edit::{DocumentMut, Item, Table};

pub fn register(engine: &mut Engine) {
    engine.register("fromToml", |_, args| {
        let [text] = exact::<1>(args, "fromToml")?;
        from_toml(want_str(&text)?).map_err(CallError::Message)
    });
}

pub fn from_toml(text: &str) -> Result<Value, String> {
    let document: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        format!(
            "the text is not TOML ({}); Helm would return its parser's message under the key \
             \"Error\", which tend cannot reproduce: check the TOML first",
            e.to_string().trim_end()
        )
    })?;
    table(document.as_table(), "")
}

fn table(t: &Table, path: &str) -> Result<Value, String> {
    let mut entries = BTreeMap::new();
    for (key, item) in t.iter() {
        let at = join(path, key);
        let value = match item {
            Item::None => continue,
            Item::Value(v) => value(v, &at)?,
            Item::Table(t) => table(t, &at)?,
            Item::ArrayOfTables(tables) => Value::list(
                tables
                    .iter()
                    .map(|t| table(t, &at))
                    .collect::<Result<_, _>>()?,
            ),
        };
        entries.insert(key.to_string(), value);
    }
    Ok(Value::map(entries))
}

fn value(v: &toml_edit::Value, at: &str) -> Result<Value, String> {
    use toml_edit::Value as T;
    Ok(match v {
        T::String(s) => Value::str(s.value().as_str()),
        T::Integer(i) => Value::int64(*i.value()),
        T::Float(f) => Value::Float(*f.value()),
        T::Boolean(b) => Value::Bool(*b.value()),
        T::Datetime(_) => {
            return Err(format!(
                "the TOML at {at} is a date or time, which Helm reads as Go's time.Time; tend \
                 does not have it: write it as a quoted string"
            ))
        }
        T::Array(items) => Value::list(
            items
                .iter()
                .map(|item| value(item, at))
                .collect::<Result<_, _>>()?,
        ),
        T::InlineTable(t) => {
            let mut entries = BTreeMap::new();
            for (key, item) in t.iter() {
                entries.insert(key.to_string(), value(item, &join(at, key))?);
            }
            Value::map(entries)
        }
    })
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::from_toml;
    use crate::helm::funcs::json::go_json;

    fn json(text: &str) -> String {
        go_json(&from_toml(text).expect("TOML"))
    }

    #[test]
    fn values_take_go_kinds() {
        // As BurntSushi decodes into interface{}: int64, float64, bool, string, nested maps.
        assert_eq!(
            json("a = 1\nb = 1.5\nc = true\nd = \"x\"\n[t]\ne = [1, 2]\n[[u]]\nf = 3\n[[u]]\nf = 4\n"),
            r#"{"a":1,"b":1.5,"c":true,"d":"x","t":{"e":[1,2]},"u":[{"f":3},{"f":4}]}"#
        );
        assert_eq!(json("x = { y = 'z' }\n"), r#"{"x":{"y":"z"}}"#);
        assert_eq!(json(""), "{}");
    }

    #[test]
    fn dates_and_bad_text_are_refused_by_name() {
        let date = from_toml("when = 1979-05-27T07:32:00Z\n").unwrap_err();
        assert!(date.contains("at when is a date or time"), "{date}");
        let bad = from_toml("a = \n").unwrap_err();
        assert!(bad.contains("not TOML"), "{bad}");
        let twice = from_toml("a = 1\na = 2\n").unwrap_err();
        assert!(twice.contains("not TOML"), "{twice}");
    }
}
