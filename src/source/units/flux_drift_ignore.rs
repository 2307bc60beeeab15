//! A Kustomization's `spec.ignore` (Flux 2.7's drift ignore rules): each rule's `paths`
//! (JSON pointers) on the objects its `target` selects become tend's
//! `tend.dev/keep-live-at` policy (`plan::keep_live`): where the object exists, those fields
//! keep the in-cluster value, as kustomize-controller leaves them (an autoscaler's
//! `spec.replicas`). A target selects as fluxcd/pkg `jsondiff.SelectorRegex` does: `group`,
//! `version`, `kind`, `name` and `namespace` are Go regular expressions matching the whole
//! value (empty: any), `labelSelector` and `annotationSelector` Kubernetes selector
//! expressions.

use super::model::Found;
use crate::problem::Problem;
use crate::yaml::Step;
use serde_json::Value;

/// The rules of a unit, in order.
#[derive(Default)]
pub struct IgnoreRules(Vec<Rule>);

struct Rule {
    paths: Vec<String>,
    /// Regular expressions by field (`group`, `version`, `kind`, `name`, `namespace`).
    fields: Vec<(&'static str, regex::Regex)>,
    labels: Option<Selector>,
    annotations: Option<Selector>,
}

/// `spec.ignore` of `unit`; a rule Flux would refuse is a problem at its line.
pub fn rules(unit: &Found) -> Result<IgnoreRules, Problem> {
    let Some(list) = unit.spec().get("ignore") else {
        return Ok(IgnoreRules::default());
    };
    let mut rules = Vec::new();
    for (index, entry) in list.as_array().into_iter().flatten().enumerate() {
        let path = [
            Step::Key("spec".into()),
            Step::Key("ignore".into()),
            Step::Index(index),
        ];
        let at = |message: String| Problem::new(&unit.file, unit.doc.line_at(&path), message);
        let paths: Vec<String> = entry
            .get("paths")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        if paths.is_empty() || paths.iter().any(|p| !p.starts_with('/')) {
            return Err(at(format!(
                "spec.ignore[{index}].paths must list JSON pointers (\"/spec/replicas\")"
            )));
        }
        let target = entry.get("target").unwrap_or(&Value::Null);
        let text = |key: &str| target.get(key).and_then(Value::as_str).unwrap_or("");
        let mut fields = Vec::new();
        for field in ["group", "version", "kind", "name", "namespace"] {
            if text(field).is_empty() {
                continue;
            }
            let anchored = format!("^(?:{})$", text(field));
            let regex = crate::helm::funcs::goregex::compile(&anchored).map_err(|e| {
                at(format!(
                    "spec.ignore[{index}].target.{field}: invalid {field} regex: {e}"
                ))
            })?;
            fields.push((field, regex));
        }
        let selector = |key: &str| -> Result<Option<Selector>, Problem> {
            match text(key) {
                "" => Ok(None),
                written => Selector::parse(written)
                    .map(Some)
                    .map_err(|e| at(format!("spec.ignore[{index}].target.{key}: {e}"))),
            }
        };
        rules.push(Rule {
            paths,
            fields,
            labels: selector("labelSelector")?,
            annotations: selector("annotationSelector")?,
        });
    }
    Ok(IgnoreRules(rules))
}

impl IgnoreRules {
    /// The paths the rules selecting `object` ignore, each once, in order.
    pub fn paths_for(&self, object: &Value) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for rule in self.0.iter().filter(|r| r.selects(object)) {
            for path in &rule.paths {
                if !out.contains(path) {
                    out.push(path.clone());
                }
            }
        }
        out
    }
}

impl Rule {
    fn selects(&self, object: &Value) -> bool {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let api_version = text("/apiVersion");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let value_of = |field: &str| match field {
            "group" => group,
            "version" => version,
            "kind" => text("/kind"),
            "name" => text("/metadata/name"),
            _ => text("/metadata/namespace"),
        };
        let strings = |field: &str| -> Vec<(String, String)> {
            let map = object.pointer(&format!("/metadata/{field}"));
            let entries = map.and_then(Value::as_object).into_iter().flatten();
            entries
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        };
        self.fields
            .iter()
            .all(|(field, regex)| regex.is_match(value_of(field)))
            && self
                .labels
                .as_ref()
                .is_none_or(|s| s.matches(&strings("labels")))
            && (self.annotations.as_ref()).is_none_or(|s| s.matches(&strings("annotations")))
    }
}

/// A Kubernetes selector expression (apimachinery `labels.Parse`): requirements joined by
/// commas, each `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)` or
/// `key notin (a,b)`.
struct Selector(Vec<Requirement>);

enum Requirement {
    Exists(String),
    Absent(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

impl Selector {
    fn parse(text: &str) -> Result<Selector, String> {
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            let term = term.trim();
            let words: Vec<&str> = term.split_whitespace().collect();
            let requirement = if let Some(key) = term.strip_prefix('!') {
                Requirement::Absent(key.trim().to_string())
            } else if let Some((key, value)) = term.split_once("!=") {
                Requirement::NotIn(key.trim().to_string(), vec![value.trim().to_string()])
            } else if let Some((key, value)) = term.split_once('=') {
                let value = value.strip_prefix('=').unwrap_or(value);
                Requirement::In(key.trim().to_string(), vec![value.trim().to_string()])
            } else if words.len() >= 2 && matches!(words[1], "in" | "notin") {
                let values = set_values(term).ok_or_else(|| {
                    format!("{term:?}: a set needs its values in parentheses, e.g. env in (a,b)")
                })?;
                let key = words[0].to_string();
                match words[1] {
                    "in" => Requirement::In(key, values),
                    _ => Requirement::NotIn(key, values),
                }
            } else if words.len() == 1 && !term.contains(['<', '>', '(', ')']) {
                Requirement::Exists(term.to_string())
            } else {
                return Err(format!(
                    "{term:?} is not a selector requirement tend reads (key, !key, key=value, key!=value, key in (..), key notin (..))"
                ));
            };
            requirements.push(requirement);
        }
        Ok(Selector(requirements))
    }

    fn matches(&self, set: &[(String, String)]) -> bool {
        let get = |key: &str| set.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        self.0.iter().all(|r| match r {
            Requirement::Exists(key) => get(key).is_some(),
            Requirement::Absent(key) => get(key).is_none(),
            Requirement::In(key, values) => get(key).is_some_and(|v| values.iter().any(|w| w == v)),
            Requirement::NotIn(key, values) => {
                !get(key).is_some_and(|v| values.iter().any(|w| w == v))
            }
        })
    }
}

/// The comma-separated terms of a selector, commas inside parentheses kept.
fn split_terms(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out.into_iter().filter(|t| !t.trim().is_empty()).collect()
}

/// The values of `key in (a, b)`.
fn set_values(term: &str) -> Option<Vec<String>> {
    let inner = term.split_once('(')?.1.strip_suffix(')')?;
    Some(inner.split(',').map(|v| v.trim().to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selectors_read_as_kubernetes_reads_them() {
        let set = pairs(&[("app", "web"), ("tier", "front")]);
        for (text, matches) in [
            ("app=web", true),
            ("app==web,tier", true),
            ("app!=web", false),
            ("!owner", true),
            ("tier in (back, front)", true),
            ("tier notin (back,front)", false),
            ("app in (api),tier", false),
            ("", true),
        ] {
            assert_eq!(
                Selector::parse(text).unwrap().matches(&set),
                matches,
                "{text}"
            );
        }
        assert!(Selector::parse("replicas>2").is_err());
    }

    #[test]
    fn a_rule_selects_by_anchored_regex_and_selectors() {
        let rule = |target: Value| Rule {
            paths: vec!["/spec/replicas".into()],
            fields: ["group", "version", "kind", "name", "namespace"]
                .into_iter()
                .filter_map(|f| {
                    let p = target.get(f)?.as_str()?;
                    Some((
                        f,
                        crate::helm::funcs::goregex::compile(&format!("^(?:{p})$")).unwrap(),
                    ))
                })
                .collect(),
            labels: None,
            annotations: None,
        };
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "web-api", "namespace": "shop"}});
        assert!(rule(json!({"kind": "Deployment"})).selects(&deployment));
        assert!(rule(json!({"group": "apps", "name": "web-.*"})).selects(&deployment));
        // Anchored: a part of the name is no match.
        assert!(!rule(json!({"name": "web"})).selects(&deployment));
        assert!(!rule(json!({"kind": "StatefulSet"})).selects(&deployment));
        let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}});
        assert!(rule(json!({"group": "", "version": "v1"})).selects(&service));
    }
}
