//! `values.schema.json` (helm/helm `pkg/chartutil/jsonschema.go`): the coalesced values of a
//! chart, and of each enabled subchart (its values under its name), checked against the
//! chart's JSON Schema (draft 2020-12 unless the schema names another, as Helm 3.18+
//! validates with santhosh-tekuri/jsonschema v6). Errors name the chart and
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
            Err(e) => out.push(format!("{name}: {SCHEMA_FILE} {e}")),
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

/// The draft a `$schema` URL names, as santhosh-tekuri/jsonschema v6's `draftFromURL` (what
/// Helm 3.18+ validates with) reads it: `http` and `https` alike, an empty fragment (`#`)
/// ignored, `json-schema.org/schema` the latest draft (2020-12). A `#/` fragment v6 does not
/// take as built in: Helm downloads that URL, which is the same meta-schema, so it is read
/// as that draft here. `None` for any other URL: Helm would download that meta-schema;
/// tend never goes to the network while rendering.
fn draft_of(url: &str) -> Option<jsonschema::Draft> {
    use jsonschema::Draft;
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let rest = rest
        .strip_suffix("#/")
        .or_else(|| rest.strip_suffix('#'))
        .unwrap_or(rest);
    Some(match rest {
        "json-schema.org/schema" | "json-schema.org/draft/2020-12/schema" => Draft::Draft202012,
        "json-schema.org/draft/2019-09/schema" => Draft::Draft201909,
        "json-schema.org/draft-07/schema" => Draft::Draft7,
        "json-schema.org/draft-06/schema" => Draft::Draft6,
        "json-schema.org/draft-04/schema" => Draft::Draft4,
        _ => return None,
    })
}

/// The URL the `jsonschema` crate knows each draft's built-in meta-schema by.
fn canonical_url(draft: jsonschema::Draft) -> &'static str {
    use jsonschema::Draft;
    match draft {
        Draft::Draft4 => "http://json-schema.org/draft-04/schema#",
        Draft::Draft6 => "http://json-schema.org/draft-06/schema#",
        Draft::Draft7 => "http://json-schema.org/draft-07/schema#",
        Draft::Draft201909 => "https://json-schema.org/draft/2019-09/schema",
        _ => "https://json-schema.org/draft/2020-12/schema",
    }
}

fn check(schema_text: &str, values: &Map<String, Value>) -> Result<Vec<String>, String> {
    let invalid = |e: String| format!("is not a valid JSON Schema: {e}");
    let mut schema: Value =
        serde_json::from_str(schema_text).map_err(|e| invalid(e.to_string()))?;
    if let Some(cycle) = same_value_cycle(&schema) {
        return Err(format!(
            "applies a schema to the same value again and again without end (infinite recursion through {}): Helm's validator stops it as an infinite loop and refuses the chart; let one schema of the cycle descend into a property or item instead",
            cycle.join(" -> ")
        ));
    }
    // Without `$schema`, the library's latest draft (2020-12): Helm sets no default draft.
    let mut draft = jsonschema::Draft::Draft202012;
    if let Some(Value::String(url)) = schema.get("$schema") {
        draft = draft_of(url).ok_or_else(|| {
            invalid(format!(
                "its \"$schema\" names the meta-schema {url:?}, which is not a draft tend has built in (4, 6, 7, 2019-09, 2020-12, or json-schema.org/schema); Helm would download it, tend never fetches while rendering"
            ))
        })?;
        // The crate looks the meta-schema up by its own spelling of the URL.
        schema["$schema"] = Value::String(canonical_url(draft).into());
    }
    let validator = jsonschema::options()
        .with_draft(draft)
        .build(&schema)
        .map_err(|e| invalid(e.masked().to_string()))?;
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

/// Keywords whose subschemas apply to the very value their schema applies to.
const SAME_VALUE_ONE: [&str; 4] = ["not", "if", "then", "else"];
const SAME_VALUE_MANY: [&str; 3] = ["allOf", "anyOf", "oneOf"];
const SAME_VALUE_MAP: [&str; 2] = ["dependentSchemas", "dependencies"];
const REFS: [&str; 3] = ["$ref", "$dynamicRef", "$recursiveRef"];

/// A chain of schemas (JSON pointers) that apply one another to the same value and come back
/// to the first: `{"allOf":[{"$ref":"#"}]}`. Validating any value that reaches one of them
/// never ends (the `jsonschema` crate recurses until memory runs out; Helm's validator,
/// santhosh-tekuri/jsonschema, stops with an infinite-loop error). Only local references
/// (`#`, `#/json/pointer`, `#anchor`) are followed; tend resolves no others.
fn same_value_cycle(schema: &Value) -> Option<Vec<String>> {
    let mut nodes = Vec::new();
    collect_schemas(schema, String::new(), &mut nodes);
    let anchors: std::collections::BTreeMap<&str, String> = nodes
        .iter()
        .filter_map(|p| {
            let node = schema.pointer(p)?;
            let anchor = node
                .get("$anchor")
                .or_else(|| node.get("$dynamicAnchor"))?
                .as_str()?;
            Some((anchor, p.clone()))
        })
        .collect();
    let edges = |pointer: &str| -> Vec<String> {
        let Some(Value::Object(node)) = schema.pointer(pointer) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for key in SAME_VALUE_ONE {
            if node.get(key).is_some_and(Value::is_object) {
                out.push(format!("{pointer}/{key}"));
            }
        }
        for key in SAME_VALUE_MANY {
            for (i, _) in node
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                out.push(format!("{pointer}/{key}/{i}"));
            }
        }
        for key in SAME_VALUE_MAP {
            for (name, sub) in node
                .get(key)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if sub.is_object() {
                    out.push(format!("{pointer}/{key}/{}", escape_pointer(name)));
                }
            }
        }
        for key in REFS {
            let Some(target) = node.get(key).and_then(Value::as_str) else {
                continue;
            };
            let resolved = match target.strip_prefix('#') {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => Some(rest.to_string()),
                Some(anchor) => anchors.get(anchor).cloned(),
                None => None,
            };
            if let Some(p) = resolved.filter(|p| schema.pointer(p).is_some_and(Value::is_object)) {
                out.push(p);
            }
        }
        out
    };
    // Depth-first, without recursion: 0 unseen, 1 on the current path, 2 done.
    let mut state: std::collections::BTreeMap<String, u8> = std::collections::BTreeMap::new();
    for start in &nodes {
        if state.contains_key(start) {
            continue;
        }
        let mut path: Vec<(String, Vec<String>)> = vec![(start.clone(), edges(start))];
        state.insert(start.clone(), 1);
        while let Some((_, next)) = path.last_mut() {
            let Some(to) = next.pop() else {
                let (done, _) = path.pop()?;
                state.insert(done, 2);
                continue;
            };
            match state.get(&to) {
                Some(1) => {
                    let from = path.iter().position(|(p, _)| *p == to).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|(p, _)| format!("#{p}")).collect();
                    cycle.push(format!("#{to}"));
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    state.insert(to.clone(), 1);
                    let out = edges(&to);
                    path.push((to, out));
                }
            }
        }
    }
    None
}

/// The JSON pointer of every object in `value` (each may be a schema).
fn collect_schemas(value: &Value, pointer: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, sub) in map {
                collect_schemas(sub, format!("{pointer}/{}", escape_pointer(key)), out);
            }
            out.push(pointer);
        }
        Value::Array(items) => {
            for (i, sub) in items.iter().enumerate() {
                collect_schemas(sub, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(schema: Value, values: Value) -> Result<Vec<String>, String> {
        let Value::Object(values) = values else {
            unreachable!("test values are maps")
        };
        check(&schema.to_string(), &values)
    }

    #[test]
    fn meta_schemas_are_the_built_in_drafts_never_fetched() {
        use jsonschema::Draft;
        assert_eq!(
            draft_of("http://json-schema.org/schema#"),
            Some(Draft::Draft202012)
        );
        assert_eq!(
            draft_of("https://json-schema.org/schema"),
            Some(Draft::Draft202012)
        );
        assert_eq!(
            draft_of("https://json-schema.org/draft-07/schema"),
            Some(Draft::Draft7)
        );
        assert_eq!(
            draft_of("http://json-schema.org/draft-07/schema#/"),
            Some(Draft::Draft7)
        );
        assert_eq!(
            draft_of("http://json-schema.org/draft-04/schema#"),
            Some(Draft::Draft4)
        );
        assert_eq!(draft_of("https://example.com/my-meta"), None);
        let typed = |url: &str| {
            problems(
                json!({"$schema": url, "properties": {"port": {"type": "integer"}}}),
                json!({"port": "x"}),
            )
        };
        for url in [
            "http://json-schema.org/schema",
            "https://json-schema.org/draft-07/schema",
            "http://json-schema.org/draft-07/schema#",
            "https://json-schema.org/draft/2020-12/schema",
        ] {
            let found = typed(url).unwrap();
            assert_eq!(found.len(), 1, "{url}: {found:?}");
            assert!(found[0].contains("/port"), "{found:?}");
        }
        let unknown = typed("https://example.com/my-meta").unwrap_err();
        assert!(unknown.contains("example.com/my-meta"), "{unknown}");
    }

    #[test]
    fn without_a_meta_schema_the_draft_is_2020_12() {
        let schema = json!({"properties": {"l": {"prefixItems": [{"type": "string"}]}}});
        assert_eq!(problems(schema, json!({"l": [1]})).unwrap().len(), 1);
    }

    #[test]
    fn the_latest_draft_keeps_its_own_keywords() {
        // 2020-12's `prefixItems` checks, which draft 7 would ignore.
        let schema = json!({"$schema": "http://json-schema.org/schema",
            "properties": {"l": {"prefixItems": [{"type": "string"}]}}});
        assert_eq!(problems(schema, json!({"l": [1]})).unwrap().len(), 1);
    }

    #[test]
    fn schemas_that_apply_themselves_to_the_same_value_are_refused() {
        for schema in [
            json!({"allOf": [{"$ref": "#"}]}),
            json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}}, "properties": {"x": {"$ref": "#/$defs/a"}}}),
            json!({"$defs": {"a": {"$anchor": "top", "oneOf": [{"$ref": "#top"}]}}}),
        ] {
            let err = problems(schema.clone(), json!({})).unwrap_err();
            assert!(err.contains("infinite recursion"), "{schema}: {err}");
        }
        // Recursion through a property descends into the value: it ends with the value.
        let tree = json!({"properties": {"child": {"$ref": "#"}, "name": {"type": "string"}}});
        let deep = json!({"child": {"child": {"name": 1}}});
        assert_eq!(problems(tree, deep).unwrap().len(), 1);
    }
}
