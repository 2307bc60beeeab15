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
    /// An integer and which of Go's integer types holds it: `kindOf`, `typeOf`, `%T` and
    /// `deepEqual` tell them apart, while arithmetic, `eq`/`lt` and printing do not.
    Int(i64, IntType),
    Float(f64),
    Str(Rc<str>),
    List(Rc<Vec<Value>>),
    Map(Map),
    /// A Go struct, or pointer to one, that Helm hands templates (see [`Struct`]).
    Struct(Rc<Struct>),
}

/// A Go struct (or a pointer to one) in a template's data: `.Chart` (`*chart.Metadata`),
/// `.Capabilities` (`*chartutil.Capabilities`) and its `KubeVersion`, what Sprig's `semver`
/// returns. Unlike a map, a field it lacks is an error (`can't evaluate field X in type T`),
/// as Go's text/template has it, never an empty value.
#[derive(Debug, Clone)]
pub struct Struct {
    /// Go's name of the type (`*chart.Metadata`), for errors, `typeOf` and `kindOf`.
    pub type_name: &'static str,
    /// Exported fields, and the results of methods that take no argument, by Go name.
    pub fields: BTreeMap<String, Value>,
    /// What an action (`{{ .X }}`) prints: its `String()` (text/template takes the address
    /// of an addressable struct for a pointer-receiver `String`), else its fields. `None`
    /// where Go's text is not reproducible (it holds pointers): printing it is an error.
    pub text: Option<String>,
    /// What `fmt`'s `%v` prints for it as a function argument (a copy: a pointer-receiver
    /// `String` is not used), as `printf`, `print` and `toString` give it. `None` as above.
    pub fmt: Option<String>,
    /// How encoding/json writes it (its `json` tags, `omitempty`).
    pub json: serde_json::Value,
}

/// Go's integer types a template meets: `int` (`len`, `atoi`, `int`, YAML's integers),
/// `int64` (Sprig's arithmetic, `int64`, TOML's integers), `uint64` (a semver's numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntType {
    Int,
    Int64,
    Uint64,
}

impl IntType {
    /// Go's name of the type, which is also its `reflect.Kind` name.
    pub fn name(self) -> &'static str {
        match self {
            IntType::Int => "int",
            IntType::Int64 => "int64",
            IntType::Uint64 => "uint64",
        }
    }
}

impl Value {
    /// A Go `int`.
    pub fn int(i: i64) -> Value {
        Value::Int(i, IntType::Int)
    }

    /// A Go `int64`.
    pub fn int64(i: i64) -> Value {
        Value::Int(i, IntType::Int64)
    }

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
            Value::Int(i, _) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
            // A struct is never its type's zero value here (a non-nil pointer, or a struct
            // with a name).
            Value::Struct(_) => true,
        }
    }

    /// Go's name of the type, for error messages (`%T`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_, t) => t.name(),
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::List(_) => "[]interface {}",
            Value::Map(_) => "map[string]interface {}",
            Value::Struct(s) => s.type_name,
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
                Some(i) if !numbers_as_float => Value::int(i),
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

    /// The same value with every struct replaced by its encoding/json form (a map), for the
    /// writers that only know maps.
    pub fn without_structs(&self) -> Value {
        fn has_struct(v: &Value) -> bool {
            match v {
                Value::Struct(_) => true,
                Value::List(l) => l.iter().any(has_struct),
                Value::Map(m) => m.borrow().values().any(has_struct),
                _ => false,
            }
        }
        if !has_struct(self) {
            return self.clone();
        }
        match self {
            Value::Struct(s) => Value::from_json(&s.json, false),
            Value::List(l) => Value::list(l.iter().map(Value::without_structs).collect()),
            Value::Map(m) => Value::map(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.without_structs()))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// To JSON as Go's encoding/json writes it (maps with sorted keys).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i, _) => serde_json::Value::from(*i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => {
                serde_json::Value::from(*f as i64)
            }
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => serde_json::Value::String(s.to_string()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
            Value::Map(m) => serde_json::Value::Object(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
            Value::Struct(s) => s.json.clone(),
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
        Value::int(i)
    }
}
/// Dropping a value takes no stack however deep it nests (a template can build a chain of
/// a million maps in a loop): the items of containers this value was the last holder of are
/// moved to a work list and dropped from there, one level at a time.
impl Drop for Value {
    fn drop(&mut self) {
        fn take_items(value: &mut Value, pending: &mut Vec<Value>) {
            match value {
                Value::List(l) => {
                    if let Some(items) = Rc::get_mut(l) {
                        pending.append(items);
                    }
                }
                Value::Map(m) => {
                    if let Some(map) = Rc::get_mut(m) {
                        pending.extend(std::mem::take(map.get_mut()).into_values());
                    }
                }
                _ => {}
            }
        }
        let mut pending = Vec::new();
        take_items(self, &mut pending);
        while let Some(mut item) = pending.pop() {
            take_items(&mut item, &mut pending);
        }
    }
}
