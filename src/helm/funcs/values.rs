//! The methods of Helm's `chartutil.Values`, the type of every chart's `.Values` (helm/helm
//! `pkg/chartutil/values.go`): `AsMap`, `YAML`, `Table`, `PathValue`, `Encode`. Go's
//! text/template calls a method before it looks a key up, so `.Values.AsMap` is the values
//! (cilium's `dig "a" "" .Values.AsMap`), never a missing key's nil.
//!
//! tend's maps carry no Go type, so these answer on any map that lacks a key of the name:
//! Go would find no method on a plain nested map (`.Values.sub.AsMap`), and would call the
//! method on values that hold a key `AsMap`; no chart writes either.

use super::conv::want_str;
use super::goyaml;
use crate::helm::template::builtins::exact;
use crate::helm::template::{gofmt, CallError, Engine, Value};

/// The receiver's map, or Go's error for a method a non-map type lacks.
fn values_of(v: &Value, method: &str) -> Result<crate::helm::template::value::Map, CallError> {
    match v {
        Value::Map(m) => Ok(m.clone()),
        other => Err(format!(
            "can't evaluate field {method} in type {}",
            other.type_name()
        )
        .into()),
    }
}

/// `Values.Table`: the table at a dotted path, or `"<key>" is not a table`.
fn table(values: &Value, path: &str) -> Result<Value, String> {
    let mut table = values.clone();
    for key in path.split('.') {
        let Value::Map(m) = &table else {
            return Err(format!("{} is not a table", gofmt::quote(key)));
        };
        let next = m.borrow().get(key).cloned();
        table = match next {
            Some(v @ Value::Map(_)) => v,
            _ => return Err(format!("{} is not a table", gofmt::quote(key))),
        };
    }
    Ok(table)
}

pub fn register(engine: &mut Engine) {
    engine.register_method("AsMap", |_, args| {
        let [values] = exact::<1>(args, "AsMap")?;
        values_of(&values, "AsMap")?;
        Ok(values)
    });
    // sigs.k8s.io/yaml's text, its final newline kept (toYaml trims it).
    engine.register_method("YAML", |_, args| {
        let [values] = exact::<1>(args, "YAML")?;
        values_of(&values, "YAML")?;
        Ok(Value::str(goyaml::to_yaml(&values)))
    });
    engine.register_method("Table", |_, args| {
        let [values, path] = exact::<2>(args, "Table")?;
        values_of(&values, "Table")?;
        Ok(table(&values, want_str(&path)?)?)
    });
    // The value at a dotted path that is not a table, or `"<key>" is not a value`.
    engine.register_method("PathValue", |_, args| {
        let [values, path] = exact::<2>(args, "PathValue")?;
        values_of(&values, "PathValue")?;
        let path = want_str(&path)?;
        if path.is_empty() {
            return Err("YAML path cannot be empty".into());
        }
        let (parent, key) = match path.rsplit_once('.') {
            Some((parent, key)) => (table(&values, parent).ok(), key),
            None => (Some(values), path),
        };
        let found = match &parent {
            Some(Value::Map(m)) => m.borrow().get(key).cloned(),
            _ => None,
        };
        match found {
            Some(Value::Map(_)) | None => {
                Err(format!("{} is not a value", gofmt::quote(key)).into())
            }
            Some(v) => Ok(v),
        }
    });
    // It writes to an io.Writer, which a template cannot make.
    engine.register_method("Encode", |_, args| match args.get(1) {
        None => Err("wrong number of args for Encode: want 1 got 0".into()),
        Some(w) => Err(format!(
            "wrong type for value; expected io.Writer; got {}",
            w.type_name()
        )
        .into()),
    });
}
