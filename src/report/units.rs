//! GitOps controllers' units in the reports (README "Coming from Flux"): one line per unit
//! with its source revision, what became of it and its objects' counts, and each object's
//! unit in JSON. Shown only for sites that have units, so every other report stays as it was.

use super::run::{RunReport, UnitReport};
use crate::plan::{Change, Summary};
use serde_json::{json, Value};

/// The unit a change's object came from: the innermost (units are listed outer first).
pub(super) fn unit_of<'r>(report: &'r RunReport, change: &Change) -> Option<&'r UnitReport> {
    let origin = change.origin.as_ref()?;
    report.units.iter().rev().find(|u| u.owns(&origin.file))
}

fn summary(report: &RunReport, unit: &UnitReport) -> Summary {
    let changes: Vec<Change> = report
        .changes
        .iter()
        .filter(|c| unit_of(report, c).is_some_and(|u| std::ptr::eq(u, unit)))
        .cloned()
        .collect();
    Summary::of(&changes)
}

/// `unit Flux Kustomization flux-system/apps at 1a2b3c4: expanded, 2 to create, 0 to
/// update, 1 unchanged`.
pub(super) fn lines(report: &RunReport) -> Vec<String> {
    report
        .units
        .iter()
        .map(|unit| {
            let mut line = format!("unit {}", unit.name);
            if let Some(revision) = &unit.revision {
                line.push_str(&format!(" at {revision}"));
            }
            line.push_str(&format!(": {}", unit.result));
            let s = summary(report, unit);
            if s.create + s.update + s.replace + s.unchanged > 0 {
                line.push_str(&format!(", {} to create, {} to update", s.create, s.update));
                if s.replace > 0 {
                    line.push_str(&format!(", {} to replace", s.replace));
                }
                line.push_str(&format!(", {} unchanged", s.unchanged));
            }
            line
        })
        .collect()
}

/// The additive JSON field `units`.
pub(super) fn json_field(report: &RunReport) -> Value {
    let units: Vec<Value> = report
        .units
        .iter()
        .map(|unit| {
            let s = summary(report, unit);
            json!({
                "name": unit.name,
                "revision": unit.revision,
                "result": unit.result,
                "create": s.create,
                "update": s.update,
                "replace": s.replace,
                "unchanged": s.unchanged,
            })
        })
        .collect();
    units.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{ObjectKey, Origin};
    use crate::plan::Action;

    #[test]
    fn objects_count_for_their_innermost_unit() {
        let change = |file: &str, action| Change {
            key: ObjectKey {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: Some("web".into()),
                name: file.into(),
            },
            api_version: "v1".into(),
            action,
            origin: Some(Origin {
                file: file.into(),
                line: 1,
                generated_by: None,
                sealed: Vec::new(),
            }),
            before: None,
            after: None,
            reason: None,
            drift: Vec::new(),
        };
        let report = RunReport {
            changes: vec![
                change("a (Flux Kustomization ns/apps)", Action::Create),
                change(
                    "a:3 (Flux Kustomization ns/apps → HelmRelease ns/web) (chart web, templates/x.yaml)",
                    Action::Unchanged,
                ),
            ],
            units: vec![
                UnitReport {
                    name: "Flux Kustomization ns/apps".into(),
                    revision: Some("abc".into()),
                    result: "expanded".into(),
                    files: vec!["a (Flux Kustomization ns/apps)".into()],
                },
                UnitReport {
                    name: "Flux Kustomization ns/apps → HelmRelease ns/web".into(),
                    revision: None,
                    result: "expanded".into(),
                    files: vec!["a:3 (Flux Kustomization ns/apps → HelmRelease ns/web)".into()],
                },
            ],
            ..Default::default()
        };
        assert_eq!(
            lines(&report),
            [
                "unit Flux Kustomization ns/apps at abc: expanded, 1 to create, 0 to update, 0 unchanged",
                "unit Flux Kustomization ns/apps → HelmRelease ns/web: expanded, 0 to create, 0 to update, 1 unchanged",
            ]
        );
    }
}
