//! `CopyRule` (README "CopyRule"): copy labelled ConfigMaps or Secrets from one
//! namespace into others. Cluster-scoped, since it reaches across namespaces.
//!
//! Its copies depend on the cluster (the sources and namespaces live there), so offline it
//! expands to nothing; [`copy_view`] reads what it needs and [`copies`] computes the copies when
//! rendering is completed with that view.

pub mod copies;
pub mod copy_view;

pub use copy_view::CopyView;

use super::checks::FieldChecks;
use super::run::RunState;
use super::{Expansion, FieldProblem, Kind, TendKind};
use crate::object::names;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Copy the ConfigMaps or Secrets of `sourceNamespace` that match `selector` into the
/// target namespaces. A same-named object that tend did not create is never overwritten.
// Each printcolumn(...) repeats `type_ = ...`, which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "tend.dev",
    version = "v1alpha1",
    kind = "CopyRule",
    status = "CopyRuleStatus",
    derive = "PartialEq",
    // Not `cr`: cert-manager's CertificateRequest already uses it.
    shortname = "cpr",
    category = "tend",
    doc = "Copies labelled ConfigMaps or Secrets from one namespace into others (tend).",
    printcolumn(name = "KIND", type_ = "string", json_path = ".spec.kind"),
    printcolumn(name = "SOURCE", type_ = "string", json_path = ".spec.sourceNamespace"),
    printcolumn(name = "COPIES", type_ = "integer", json_path = ".status.copies"),
    // A list's length can't be a printer column (jsonPath has no length()), hence a count.
    printcolumn(name = "CONFLICTS", type_ = "integer", json_path = ".status.conflictCount"),
    printcolumn(name = "AGE", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CopyRuleSpec {
    /// What to copy: `ConfigMap` or `Secret`.
    pub kind: CopyKind,
    /// Namespace the source objects are read from.
    #[schemars(
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"),
        length(min = 1, max = 63)
    )]
    pub source_namespace: String,
    /// Which objects of `sourceNamespace` to copy.
    pub selector: MatchLabels,
    /// Copy only into these namespaces. Default: every Active namespace except the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(inner(regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"), length(max = 63)))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub target_namespaces: Option<Vec<String>>,
    /// Copy only into namespaces with these labels (combined with `targetNamespaces`, a
    /// namespace must satisfy both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<MatchLabels>,
    /// Never copy into these namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(inner(regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"), length(max = 63)))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub exclude_namespaces: Option<Vec<String>>,
}

/// The kinds a CopyRule can copy.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum CopyKind {
    ConfigMap,
    Secret,
}

impl CopyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CopyKind::ConfigMap => "ConfigMap",
            CopyKind::Secret => "Secret",
        }
    }

    /// Resource name in URLs.
    pub fn plural(self) -> &'static str {
        match self {
            CopyKind::ConfigMap => "configmaps",
            CopyKind::Secret => "secrets",
        }
    }
}

/// An equality-only label selector. Only `matchLabels`: set-based `matchExpressions` are
/// rejected as an unknown field rather than silently ignored.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchLabels {
    /// Labels that must all be present with these values. At least one: an empty selector
    /// would copy everything (for Secrets, including service-account tokens).
    #[schemars(extend("minProperties" = 1))]
    pub match_labels: BTreeMap<String, String>,
}

impl MatchLabels {
    /// Whether `labels` carry every label of this selector.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
    }

    /// The selector as a `labelSelector` query parameter value (`a=b,c=d`).
    pub fn to_query(&self) -> String {
        self.match_labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Written by `tend apply` after each run.
// Lenient (no `deny_unknown_fields`), so an older tend can read a newer tend's status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CopyRuleStatus {
    /// Number of copies tend manages.
    #[serde(default)]
    pub copies: i32,
    /// Namespaces the rule copies into.
    #[serde(default)]
    pub targets: Vec<String>,
    /// `namespace/name` of objects that exist in a target but were not created by tend, so
    /// are left alone.
    #[serde(default)]
    pub conflicts: Vec<String>,
    /// Number of conflicts (the CONFLICTS column).
    #[serde(default)]
    pub conflict_count: i32,
    /// When the last run computed this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_time: Option<Time>,
    /// `metadata.generation` this status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Standard conditions: `Ready` (every copy is in place; False with reason `Conflicts`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl CopyRuleStatus {
    /// A status with `conflictCount` derived from `conflicts`.
    pub fn new(
        copies: usize,
        targets: Vec<String>,
        conflicts: Vec<String>,
        last_sync_time: Option<Time>,
    ) -> Self {
        CopyRuleStatus {
            copies: i32::try_from(copies).unwrap_or(i32::MAX),
            conflict_count: i32::try_from(conflicts.len()).unwrap_or(i32::MAX),
            targets,
            conflicts,
            last_sync_time,
            observed_generation: None,
            conditions: Vec::new(),
        }
    }
}

impl CopyRuleSpec {
    pub(crate) fn validate(&self, out: &mut Vec<FieldProblem>) {
        let mut p = FieldChecks { out };
        if let Err(why) = names::dns1123_label(&self.source_namespace) {
            p.push(
                &["spec", "sourceNamespace"],
                format!(
                    "{:?} is not a valid namespace name: {why}",
                    self.source_namespace
                ),
            );
        }
        if self.selector.match_labels.is_empty() {
            p.push(
                &["spec", "selector", "matchLabels"],
                "must have at least one label: an empty selector would copy every object of the source namespace",
            );
        }
        p.labels(
            &["spec", "selector", "matchLabels"],
            &self.selector.match_labels,
        );
        if let Some(targets) = &self.target_namespaces {
            let path = ["spec", "targetNamespaces"];
            if targets.is_empty() {
                p.push(
                    &path,
                    "is empty, so nothing would be copied; remove the field to target every namespace",
                );
            }
            p.namespaces(&path, targets);
            if targets.contains(&self.source_namespace) {
                p.push(
                    &path,
                    format!(
                        "contains the source namespace {:?}: an object can't be copied onto itself",
                        self.source_namespace
                    ),
                );
            }
        }
        if let Some(sel) = &self.namespace_selector {
            let path = ["spec", "namespaceSelector", "matchLabels"];
            if sel.match_labels.is_empty() {
                p.push(
                    &path,
                    "must have at least one label; remove namespaceSelector to target every namespace",
                );
            }
            p.labels(&path, &sel.match_labels);
        }
        if let Some(excluded) = &self.exclude_namespaces {
            p.namespaces(&["spec", "excludeNamespaces"], excluded);
        }
    }
}

impl Kind for CopyRule {
    const KIND: TendKind = TendKind::CopyRule;
    type Status = CopyRuleStatus;

    fn validate(&self) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        self.spec.validate(&mut problems);
        problems
    }

    fn expand(&self) -> Expansion {
        Expansion {
            objects: Vec::new(),
            note: Some(format!(
                "CopyRule {}: copies are computed from the cluster's {}s and namespaces, so offline only the rule itself is rendered",
                self.metadata.name.as_deref().unwrap_or(""),
                self.spec.kind.as_str()
            )),
        }
    }

    fn status(&self, run: &RunState<'_>) -> Option<CopyRuleStatus> {
        let name = self.metadata.name.as_deref()?;
        let outcome = run.copy_outcomes.iter().find(|o| o.rule == name)?;
        let me = self.key();
        let mut status = CopyRuleStatus::new(
            outcome.copies,
            outcome.targets.clone(),
            outcome.conflicts.clone(),
            Some(Time(run.now)),
        );
        let condition = match outcome.conflicts.len() {
            0 => run.ready_condition(
                &me,
                true,
                "Synced",
                format!("{} copies in place", outcome.copies),
            ),
            n => run.ready_condition(
                &me,
                false,
                "Conflicts",
                format!(
                    "{n} target object(s) exist but were not created by tend and are left alone: {}",
                    outcome.conflicts.join(", ")
                ),
            ),
        };
        status.observed_generation = run.generation(&me);
        status.conditions = vec![condition];
        Some(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::TendObject;

    fn parse(yaml: &str) -> Result<CopyRule, serde_yaml::Error> {
        serde_yaml::from_str(yaml)
    }

    const VALID: &str = "
apiVersion: tend.dev/v1alpha1
kind: CopyRule
metadata: {name: shared-config}
spec:
  kind: ConfigMap
  sourceNamespace: shared
  selector: {matchLabels: {tend.dev/copy: 'true'}}
";

    #[test]
    fn valid_rule_parses_with_defaults() {
        let rule = parse(VALID).expect("valid");
        assert_eq!(rule.spec.kind, CopyKind::ConfigMap);
        assert_eq!(rule.spec.target_namespaces, None);
        assert_eq!(rule.spec.selector.to_query(), "tend.dev/copy=true");
        assert!(TendObject::CopyRule(rule).validate().is_empty());
    }

    #[test]
    fn unknown_fields_rejected_in_spec_and_selector() {
        let err = parse(&format!("{VALID}  targetNamespace: [a]\n")).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `targetNamespace`"),
            "{err}"
        );
        let err = parse(&VALID.replace(
            "{matchLabels: {tend.dev/copy: 'true'}}",
            "{matchExpressions: []}",
        ))
        .unwrap_err();
        assert!(
            err.to_string().contains("unknown field `matchExpressions`"),
            "{err}"
        );
    }

    #[test]
    fn bad_kind_rejected_with_choices() {
        let err = parse(&VALID.replace("kind: ConfigMap", "kind: Deployment")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("unknown variant `Deployment`"), "{msg}");
        assert!(msg.contains("ConfigMap") && msg.contains("Secret"), "{msg}");
    }

    #[test]
    fn missing_required_field_rejected() {
        let err = parse(&VALID.replace("  sourceNamespace: shared\n", "")).unwrap_err();
        assert!(
            err.to_string().contains("missing field `sourceNamespace`"),
            "{err}"
        );
    }

    #[test]
    fn semantic_problems() {
        let mut rule = parse(VALID).expect("valid");
        rule.spec.source_namespace = "Shared".into();
        rule.spec.target_namespaces = Some(vec!["ok".into(), "Bad_NS".into(), "ok".into()]);
        rule.spec.exclude_namespaces = Some(vec!["-x".into()]);
        rule.spec.namespace_selector = Some(MatchLabels::default());
        let problems = TendObject::CopyRule(rule).validate();
        let paths: Vec<String> = problems.iter().map(|p| p.dotted_path()).collect();
        assert_eq!(
            paths,
            [
                "spec.sourceNamespace",
                "spec.targetNamespaces",
                "spec.targetNamespaces",
                "spec.namespaceSelector.matchLabels",
                "spec.excludeNamespaces"
            ],
            "{problems:?}"
        );
        assert!(problems[1].message.contains("\"Bad_NS\""));
        assert!(problems[2].message.contains("twice"));
    }

    #[test]
    fn source_in_targets_and_empty_selector() {
        let mut rule = parse(VALID).expect("valid");
        rule.spec.target_namespaces = Some(vec!["shared".into()]);
        rule.spec.selector.match_labels.clear();
        let problems = TendObject::CopyRule(rule).validate();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| p.message.contains("onto itself")));
        assert!(problems
            .iter()
            .any(|p| p.message.contains("at least one label")));
    }

    #[test]
    fn status_counts_conflicts() {
        let s = CopyRuleStatus::new(3, vec!["a".into()], vec!["a/x".into(), "b/x".into()], None);
        assert_eq!((s.copies, s.conflict_count), (3, 2));
        let v = serde_json::to_value(&s).expect("json");
        assert_eq!(v["conflictCount"], 2);
        assert_eq!(v["targets"], serde_json::json!(["a"]));
    }

    #[test]
    fn selector_matching() {
        let sel = MatchLabels {
            match_labels: [("a".to_string(), "1".to_string())].into(),
        };
        assert!(sel.matches(&[("a".into(), "1".into()), ("b".into(), "2".into())].into()));
        assert!(!sel.matches(&[("a".into(), "2".into())].into()));
    }
}
