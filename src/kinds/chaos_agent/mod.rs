//! `ChaosAgent` (README "ChaosAgent"): configuration of `tend chaos`. `apply`
//! only stores it; chaos happens only in `tend chaos --agent NAME`, whose decisions are
//! [`pass`]'s (with [`rng`]'s seeded randomness and [`lorem`]'s text).

mod lorem;
pub mod pass;
pub mod rng;

use super::checks::FieldChecks;
use super::{FieldProblem, Kind, TendKind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Namespaces no chaos agent ever touches, whatever `excludedNamespaces` says (tend's own
/// state namespace is added by `tend chaos`, which knows it).
pub const ALWAYS_EXCLUDED: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];
/// Cancer mode never scales a Deployment above this many replicas.
pub const MAX_CANCER_REPLICAS: i32 = 128;

/// What one pass of `tend chaos --agent <name>` may do. Every mode is off unless enabled.
// Each printcolumn(...) repeats `type_ = ...`, which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "tend.dev",
    version = "v1alpha1",
    kind = "ChaosAgent",
    status = "ChaosAgentStatus",
    derive = "PartialEq",
    shortname = "ca",
    category = "tend",
    doc = "Configuration of a chaos agent, run one pass at a time by `tend chaos` (tend).",
    printcolumn(name = "TANTRUM", type_ = "boolean", json_path = ".spec.tantrumMode"),
    printcolumn(name = "CANCER", type_ = "boolean", json_path = ".spec.cancerMode"),
    printcolumn(name = "IPSUM", type_ = "boolean", json_path = ".spec.ipsumMode"),
    printcolumn(name = "EAGERNESS", type_ = "integer", json_path = ".spec.eagerness"),
    printcolumn(
        name = "TOLERANCE",
        type_ = "integer",
        json_path = ".spec.podTolerance",
        priority = 1
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
// The one cross-field rule, enforced by the apiserver too (CEL, Kubernetes >= 1.25).
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!self.tantrumMode || has(self.podTolerance)",
    "message": "podTolerance is required when tantrumMode is true"
}]))]
pub struct ChaosAgentSpec {
    /// Delete random pods, when the non-excluded namespaces hold at least `podTolerance`.
    #[serde(default)]
    pub tantrum_mode: bool,
    /// Double a random Deployment's replicas (capped at 128).
    #[serde(default)]
    pub cancer_mode: bool,
    /// Overwrite a random mutable ConfigMap's values with lorem ipsum.
    #[serde(default)]
    pub ipsum_mode: bool,
    /// Tantrum mode acts only when there are at least this many pods. Required with
    /// `tantrumMode: true`: there is no safe default for how many pods a cluster can lose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub pod_tolerance: Option<i32>,
    /// Probability, in percent, that each candidate is hit.
    #[schemars(range(min = 1, max = 100))]
    pub eagerness: i32,
    /// Namespaces never touched, in addition to kube-system, kube-public, kube-node-lease
    /// and tend's own.
    #[serde(default)]
    #[schemars(inner(regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"), length(max = 63)))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub excluded_namespaces: Vec<String>,
    /// At most this many actions per pass.
    #[serde(default = "default_max_actions")]
    #[schemars(range(min = 1))]
    pub max_actions: i32,
}

fn default_max_actions() -> i32 {
    1
}

/// Written by `tend chaos` after a pass.
// Lenient (no `deny_unknown_fields`), so an older tend can read a newer tend's status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChaosAgentStatus {
    /// When the last pass ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<Time>,
    /// Actions taken (or, in a dry run, that would have been taken) by the last pass.
    #[serde(default)]
    pub last_actions: i32,
    /// Whether the last pass was a dry run (no `--execute`).
    #[serde(default)]
    pub last_dry_run: bool,
    /// The `--seed` of the last pass, to reproduce it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seed: Option<i64>,
}

impl ChaosAgentSpec {
    /// Whether `namespace` is off limits for this agent (`own_namespace`: tend's state
    /// namespace, always excluded).
    pub fn excludes(&self, namespace: &str, own_namespace: &str) -> bool {
        ALWAYS_EXCLUDED.contains(&namespace)
            || namespace == own_namespace
            || self.excluded_namespaces.iter().any(|n| n == namespace)
    }

    pub(crate) fn validate(&self, out: &mut Vec<FieldProblem>) {
        let mut p = FieldChecks { out };
        p.range(&["spec", "eagerness"], self.eagerness.into(), 1, Some(100));
        p.range(&["spec", "maxActions"], self.max_actions.into(), 1, None);
        match self.pod_tolerance {
            Some(t) => p.range(&["spec", "podTolerance"], t.into(), 0, None),
            None if self.tantrum_mode => p.push(
                &["spec", "tantrumMode"],
                "tantrumMode needs spec.podTolerance: the number of pods below which no pod is deleted",
            ),
            None => {}
        }
        p.namespaces(&["spec", "excludedNamespaces"], &self.excluded_namespaces);
    }
}

/// Expands to nothing; its status is written by `tend chaos`, not by `tend apply`.
impl Kind for ChaosAgent {
    const KIND: TendKind = TendKind::ChaosAgent;
    type Status = ChaosAgentStatus;

    fn validate(&self) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        self.spec.validate(&mut problems);
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::displayed_problems;

    const VALID: &str = "
apiVersion: tend.dev/v1alpha1
kind: ChaosAgent
metadata: {name: princeedmund}
spec:
  tantrumMode: true
  podTolerance: 10
  eagerness: 20
";

    fn parse(yaml: &str) -> Result<ChaosAgent, serde_yaml::Error> {
        serde_yaml::from_str(yaml)
    }

    #[test]
    fn defaults_fill_in() {
        let a = parse(VALID).expect("valid");
        assert!(a.spec.tantrum_mode && !a.spec.cancer_mode && !a.spec.ipsum_mode);
        assert_eq!(a.spec.max_actions, 1);
        assert!(a.spec.excluded_namespaces.is_empty());
        assert!(displayed_problems(a).is_empty());
    }

    #[test]
    fn eagerness_range() {
        for (value, ok) in [
            (0, false),
            (1, true),
            (100, true),
            (200, false),
            (-5, false),
        ] {
            let a = parse(&VALID.replace("eagerness: 20", &format!("eagerness: {value}")))
                .expect("parses");
            let got = displayed_problems(a);
            assert_eq!(got.is_empty(), ok, "{value}: {got:?}");
            if !ok {
                assert_eq!(
                    got,
                    [format!(
                        "spec.eagerness: must be between 1 and 100, got {value}"
                    )]
                );
            }
        }
    }

    #[test]
    fn other_ranges_and_rules() {
        let mut a = parse(VALID).expect("valid");
        a.spec.max_actions = 0;
        a.spec.pod_tolerance = Some(-1);
        a.spec.excluded_namespaces = vec!["Not A Namespace".into()];
        assert_eq!(displayed_problems(a.clone()).len(), 3);
        a.spec.pod_tolerance = None;
        let got = displayed_problems(a);
        assert!(
            got.iter().any(|g| g.starts_with("spec.tantrumMode: ")),
            "{got:?}"
        );
    }

    #[test]
    fn eagerness_required_and_unknown_fields_rejected() {
        let err = parse(&VALID.replace("  eagerness: 20\n", "")).unwrap_err();
        assert!(
            err.to_string().contains("missing field `eagerness`"),
            "{err}"
        );
        let err = parse(&format!("{VALID}  tolerance: 3\n")).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `tolerance`"),
            "{err}"
        );
        let err =
            parse(&VALID.replace("tantrumMode: true", "tantrumMode: yes please")).unwrap_err();
        assert!(err.to_string().contains("tantrumMode"), "{err}");
    }

    #[test]
    fn exclusions() {
        let mut a = parse(VALID).expect("valid");
        a.spec.excluded_namespaces = vec!["prod".into()];
        assert!(a.spec.excludes("kube-system", "tend-system"));
        assert!(a.spec.excludes("tend-system", "tend-system"));
        assert!(a.spec.excludes("prod", "tend-system"));
        assert!(!a.spec.excludes("default", "tend-system"));
    }
}
