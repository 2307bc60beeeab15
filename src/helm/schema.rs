//! `values.schema.json` (helm/helm `pkg/chartutil/jsonschema.go`): the coalesced values of a
//! chart, and of each enabled subchart (its values under its name), checked against the
//! chart's JSON Schema (draft 7 unless the schema names another). Errors name the chart and
//! the JSON path of the value, never the value itself (values may come from SOPS files).

use super::node::Node;
use serde_json::{Map, Value};

/// The schema's file in a chart.
pub const SCHEMA_FILE: &str = "values.schema.json";

/// One line per problem: `<chart>: <path>: <what is wrong>`, in Helm's order (a chart, then
/// its subcharts).
pub fn validate(node: &Node, values: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    validate_into(node, values, &mut out);
    out
}

fn validate_into(node: &Node, values: &Map<String, Value>, out: &mut Vec<String>) {
    let name = node.name();
    if let Some(text) = node.chart.files.get(SCHEMA_FILE) {
        match check(text, values) {
            Ok(problems) => out.extend(problems.into_iter().map(|p| format!("{name}: {p}"))),
            Err(e) => out.push(format!(
                "{name}: {SCHEMA_FILE} is not a valid JSON Schema: {e}"
            )),
        }
    }
    for dep in &node.deps {
        let empty = Map::new();
        let sub = values
            .get(dep.name())
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        validate_into(dep, sub, out);
    }
}

fn check(schema_text: &str, values: &Map<String, Value>) -> Result<Vec<String>, String> {
    let schema: Value = serde_json::from_str(schema_text).map_err(|e| e.to_string())?;
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft7)
        .build(&schema)
        .map_err(|e| e.masked().to_string())?;
    let instance = Value::Object(values.clone());
    let mut problems: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| {
            let path = e.instance_path.as_str();
            let at = if path.is_empty() { "/" } else { path };
            format!("at {at:?}: {}", e.masked())
        })
        .collect();
    problems.sort();
    problems.dedup();
    Ok(problems)
}
