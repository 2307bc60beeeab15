//! Which version of which live object: what a LIST item is read as first
//! (`cluster::Listed`), and what `plan::settled` compares between runs.

use serde_json::Value;

/// An object's name, namespace, uid and resourceVersion, as its metadata gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Identity {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub uid: String,
    #[serde(rename = "resourceVersion", default)]
    pub resource_version: String,
}

impl Identity {
    /// The identity of a parsed live object.
    pub fn of_value(live: &Value) -> Identity {
        let meta = |field: &str| {
            live.get("metadata")
                .and_then(|m| m.get(field))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Identity {
            name: meta("name"),
            namespace: Some(meta("namespace")).filter(|ns| !ns.is_empty()),
            uid: meta("uid"),
            resource_version: meta("resourceVersion"),
        }
    }
}
