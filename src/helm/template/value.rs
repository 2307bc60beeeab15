//! The values templates work on, modelled on what Helm hands Go's `text/template`:
//! `interface{}` holding nil, bool, int, float64, string, `[]interface{}` or
//! `map[string]interface{}`. Maps are shared by reference, as Go maps are, because charts
//! mutate them (`set`, `unset`, `merge`) and expect every holder to see the change.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// A map as Go shares it: one table, many holders. Keys iterate sorted, which is the order
/// Go's `range` and Helm's YAML writer use.
pub type Map = Rc<RefCell<BTreeMap<String, Value>>>;

#[derive(Debug, Clone, Default)]
pub enum Value {
    /// Go's nil interface; also what a missing map key gives (Helm runs with
    /// `missingkey=zero`).
    #[default]
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    List(Rc<Vec<Value>>),
    Map(Map),
}

impl Value {
    pub fn str(s: impl Into<Rc<str>>) -> Value {
        Value::Str(s.into())
    }

    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(items))
    }

    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Rc::new(RefCell::new(entries)))
    }

    pub fn empty_map() -> Value {
        Value::map(BTreeMap::new())
    }

    /// Go's `template.IsTrue`: the zero value of its type is false, as are empty containers.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
        }
    }

    /// Go's name of the type, for error messages (`%T`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::List(_) => "[]interface {}",
            Value::Map(_) => "map[string]interface {}",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A deep copy: new maps and lists all the way down (Sprig's `deepCopy`, and what values
    /// coalescing needs so a chart can't mutate its caller's maps).
    pub fn deep_copy(&self) -> Value {
        match self {
            Value::List(l) => Value::list(l.iter().map(Value::deep_copy).collect()),
            Value::Map(m) => Value::map(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.deep_copy()))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// From JSON, the way Helm reads values: sigs.k8s.io/yaml decodes every number as
    /// float64.
    pub fn from_json_values(json: &serde_json::Value) -> Value {
        Value::from_json(json, true)
    }

    /// From JSON, keeping integers as ints (what `fromJson`/Go's YAML decoder give
    /// template functions that parse into `interface{}` with integer support).
    pub fn from_json(json: &serde_json::Value, numbers_as_float: bool) -> Value {
        match json {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) if !numbers_as_float => Value::Int(i),
                _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::str(s.as_str()),
            serde_json::Value::Array(a) => Value::list(
                a.iter()
                    .map(|v| Value::from_json(v, numbers_as_float))
                    .collect(),
            ),
            serde_json::Value::Object(o) => Value::map(
                o.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v, numbers_as_float)))
                    .collect(),
            ),
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::str(s)
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::str(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}
