//! A chart and its subcharts as Helm renders them (helm/helm `pkg/chartutil/dependencies.go`):
//! the dependencies of `Chart.yaml` (v2) or `requirements.yaml` (v1) matched with the charts
//! of `charts/`, renamed by `alias`, dropped by `condition` and `tags`, and their
//! `import-values` copied into the parent's values.

use super::funcs::semver_compare;
use super::node::{Dependency, Node};
use super::values::{coalesce_values, merge_tables, path_to_map, path_value, table};
use serde_json::{Map, Value};

/// One entry of `dependencies`.
/// `IsCompatibleRange`: whether `version` satisfies the constraint (an empty or bad
/// constraint matches nothing, as Masterminds/semver refuses to parse it).
fn compatible(constraint: &str, version: &str) -> bool {
    !constraint.trim().is_empty() && semver_compare(constraint, version).unwrap_or(false)
}

/// `ProcessDependenciesWithMerge`: what `helm install`/`template` does before coalescing.
pub fn process(root: &mut Node, user: &Value) -> Result<(), String> {
    let mut copies = 0;
    process_enabled(root, user, "", &mut copies)?;
    process_import_values(root)
}

/// Most chart copies one release may make of its dependencies: aliases copy a subchart
/// with all of its own, so a few levels of aliased dependencies multiply (10 aliases on 6
/// levels are a million charts). Real umbrella charts use a few dozen.
pub const MAX_CHARTS_PER_RELEASE: usize = 5_000;

fn size(node: &Node) -> usize {
    1 + node.deps.iter().map(size).sum::<usize>()
}

fn process_enabled(c: &mut Node, v: &Value, path: &str, copies: &mut usize) -> Result<(), String> {
    let Some(mut reqs) = c.reqs.take() else {
        return Ok(());
    };
    let existing = std::mem::take(&mut c.deps);
    // Charts in charts/ that no dependency names are kept as they are.
    let mut chart_deps: Vec<Node> = existing
        .iter()
        .filter(|e| {
            !reqs
                .iter()
                .any(|r| e.name() == r.name && compatible(&r.version, e.version()))
        })
        .cloned()
        .collect();
    for req in &mut reqs {
        if let Some(found) = existing
            .iter()
            .find(|e| e.name() == req.name && compatible(&req.version, e.version()))
        {
            *copies += size(found);
            if *copies > MAX_CHARTS_PER_RELEASE {
                return Err(format!(
                    "the release would hold more than {MAX_CHARTS_PER_RELEASE} charts: its dependencies, copied once per alias at every level, multiply; use fewer aliases or fewer levels"
                ));
            }
            let mut dep = found.clone();
            if !req.alias.is_empty() {
                if let Value::Object(m) = &mut dep.metadata {
                    m.insert("name".into(), Value::String(req.alias.clone()));
                }
            }
            chart_deps.push(dep);
        }
        if !req.alias.is_empty() {
            req.name = req.alias.clone();
        }
        req.enabled = true;
    }
    c.deps = chart_deps;
    c.reqs = Some(reqs);
    let cvals = coalesce_values(c, v, false)?;
    let reqs = c.reqs.as_mut().map(std::mem::take).unwrap_or_default();
    let reqs = with_tags(reqs, &cvals);
    let reqs = with_conditions(reqs, &cvals, path);
    let disabled: Vec<String> = reqs
        .iter()
        .filter(|r| !r.enabled)
        .map(|r| r.name.clone())
        .collect();
    c.deps.retain(|d| !disabled.iter().any(|n| n == d.name()));
    let cvals = Value::Object(cvals);
    for dep in &mut c.deps {
        let sub = format!("{path}{}.", dep.name());
        process_enabled(dep, &cvals, &sub, copies)?;
    }
    c.reqs = Some(
        reqs.into_iter()
            .filter(|r| !disabled.contains(&r.name))
            .collect(),
    );
    Ok(())
}

/// `processDependencyTags`: a dependency with only false tags is disabled; one with a true
/// tag (or no tag set) enabled.
fn with_tags(mut reqs: Vec<Dependency>, cvals: &Map<String, Value>) -> Vec<Dependency> {
    let Some(tags) = table(cvals, "tags") else {
        return reqs;
    };
    for req in &mut reqs {
        let (mut has_true, mut has_false) = (false, false);
        for tag in &req.tags {
            match tags.get(tag) {
                Some(Value::Bool(true)) => has_true = true,
                Some(Value::Bool(false)) => has_false = true,
                _ => {}
            }
        }
        // Only false tags disable; a true tag, or no tag set, enables.
        req.enabled = has_true || !has_false;
    }
    reqs
}

/// `processDependencyConditions`: the first condition path that holds a bool decides.
fn with_conditions(
    mut reqs: Vec<Dependency>,
    cvals: &Map<String, Value>,
    path: &str,
) -> Vec<Dependency> {
    for req in &mut reqs {
        for condition in req.condition.trim().split(',') {
            if condition.is_empty() {
                continue;
            }
            if let Some(Value::Bool(b)) = path_value(cvals, &format!("{path}{condition}")) {
                req.enabled = *b;
                break;
            }
        }
    }
    reqs
}

/// `processDependencyImportValues` with merge: children first, then each chart's
/// `import-values` under its own values (which win).
fn process_import_values(c: &mut Node) -> Result<(), String> {
    for dep in &mut c.deps {
        process_import_values(dep)?;
    }
    let Some(mut reqs) = c.reqs.take() else {
        return Ok(());
    };
    let cvals = coalesce_values(c, &Value::Object(Map::new()), true)?;
    let mut imported = Map::new();
    for req in &mut reqs {
        let mut normalized = Vec::new();
        for iv in &req.import_values {
            let (child, parent) = match iv {
                Value::Object(m) => (
                    m.get("child").and_then(Value::as_str).unwrap_or(""),
                    m.get("parent").and_then(Value::as_str).unwrap_or(""),
                ),
                Value::String(s) => {
                    normalized
                        .push(serde_json::json!({"child": format!("exports.{s}"), "parent": "."}));
                    if let Some(t) = table(&cvals, &format!("{}.exports.{s}", req.name)) {
                        imported = merge_tables(imported, t.clone());
                    }
                    continue;
                }
                _ => continue,
            };
            normalized.push(serde_json::json!({"child": child, "parent": parent}));
            if let Some(t) = table(&cvals, &format!("{}.{child}", req.name)) {
                imported = merge_tables(imported, path_to_map(parent, t.clone()));
            }
        }
        req.import_values = normalized;
    }
    c.reqs = Some(reqs);
    c.values = Value::Object(merge_tables(cvals, imported));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::helm::chart::Chart;
    use crate::helm::values::coalesce_values;
    use serde_json::json;

    fn chart(metadata: Value, values: Value, deps: Vec<Chart>) -> Chart {
        Chart {
            metadata,
            values,
            dependencies: deps,
            ..Chart::default()
        }
    }

    fn tree() -> Chart {
        let leaf = chart(
            json!({"name": "leaf", "version": "0.1.0"}),
            json!({"exports": {"data": {"leafPort": 1}}, "global": {"tier": "leaf"}}),
            vec![],
        );
        let mid = chart(
            json!({"name": "mid", "version": "1.0.0", "dependencies": [
                {"name": "leaf", "version": "0.x", "condition": "leaf.enabled", "import-values": ["data"]}
            ]}),
            json!({"leaf": {"enabled": false}, "own": "mid"}),
            vec![leaf],
        );
        chart(
            json!({"name": "top", "version": "1.0.0", "dependencies": [
                {"name": "mid", "version": ">=1.0.0", "alias": "middle"}
            ]}),
            json!({"global": {"tier": "top"}, "middle": {"own": "from-top"}}),
            vec![mid],
        )
    }

    fn names(node: &Node) -> Vec<String> {
        let mut out = vec![node.name().to_string()];
        for d in &node.deps {
            out.extend(names(d).into_iter().map(|n| format!("{}/{n}", node.name())));
        }
        out
    }

    #[test]
    fn nested_conditions_read_their_full_path() {
        let top = tree();
        let mut root = Node::new(&top);
        process(&mut root, &json!({})).unwrap();
        assert_eq!(
            names(&root),
            ["top", "top/middle"],
            "leaf disabled by mid's default"
        );

        let user = json!({"middle": {"leaf": {"enabled": true}}});
        let mut root = Node::new(&top);
        process(&mut root, &user).unwrap();
        assert_eq!(names(&root), ["top", "top/middle", "top/middle/leaf"]);
        // leaf's exports land in mid's values; globals flow down with the parent's winning.
        let values = coalesce_values(&root, &user, false).unwrap();
        assert_eq!(values["middle"]["leafPort"], json!(1));
        assert_eq!(values["middle"]["own"], json!("from-top"));
        assert_eq!(values["middle"]["leaf"]["global"]["tier"], json!("top"));
    }
}
