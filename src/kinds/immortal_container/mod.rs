//! `ImmortalContainer` (README "ImmortalContainer"): a container that tend recreates whenever its pod
//! is gone or has terminated. The pod, and whether to recreate it, is [`pod`]'s; it owns it.

mod kind;
pub mod pod;

use super::checks::{self, FieldChecks};
use super::{FieldProblem, TendKind};
use crate::object::names;
use k8s_openapi::api::core::v1::{EnvVar, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Suffix of the pod's name: `<name>-immortalpod`, as the original ImmortalContainer operator named it.
pub const POD_SUFFIX: &str = "-immortalpod";

/// A container that runs forever: tend recreates its pod `<name>-immortalpod` on every run
/// where it is missing, has terminated, or no longer matches this spec.
// Each printcolumn(...) repeats `type_ = ...`, which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "tend.dev",
    version = "v1alpha1",
    kind = "ImmortalContainer",
    namespaced,
    status = "ImmortalContainerStatus",
    derive = "PartialEq",
    shortname = "ic",
    category = "tend",
    doc = "A container that tend recreates whenever it terminates or is deleted (tend).",
    printcolumn(name = "IMAGE", type_ = "string", json_path = ".spec.image"),
    printcolumn(
        name = "CURRENT-POD",
        type_ = "string",
        json_path = ".status.currentPod"
    ),
    printcolumn(
        name = "START-TIMES",
        type_ = "integer",
        json_path = ".status.startTimes"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImmortalContainerSpec {
    /// Container image, e.g. `nginx:1.27`.
    #[schemars(length(min = 1))]
    pub image: String,
    /// Entrypoint override (the image's ENTRYPOINT when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Arguments (the image's CMD when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Environment variables, as in a Pod's container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Resource requests and limits, as in a Pod's container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

/// Written by `tend apply`.
// Lenient (no `deny_unknown_fields`), so an older tend can read a newer tend's status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImmortalContainerStatus {
    /// Name of the pod running the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_pod: Option<String>,
    /// How many times tend has (re)created the pod.
    #[serde(default)]
    pub start_times: i64,
    /// `metadata.generation` this status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Standard conditions: `Ready` (the pod was running and ready when the run started).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl ImmortalContainerSpec {
    pub(crate) fn validate(&self, out: &mut Vec<FieldProblem>) {
        let mut p = FieldChecks { out };
        p.non_empty(
            &["spec", "image"],
            &self.image,
            "a container image, e.g. nginx:1.27",
        );
        if self.image.chars().any(char::is_whitespace) {
            p.push(
                &["spec", "image"],
                format!("{:?} must not contain whitespace", self.image),
            );
        }
        if let Some(env) = &self.env {
            for (i, var) in env.iter().enumerate() {
                if var.name.is_empty() {
                    p.push(&["spec", "env"], format!("item {i} has an empty name"));
                } else if env[..i].iter().any(|e| e.name == var.name) {
                    p.push(
                        &["spec", "env"],
                        format!("item {i} ({:?}) is defined twice", var.name),
                    );
                }
                if var.value.is_some() && var.value_from.is_some() {
                    p.push(
                        &["spec", "env"],
                        format!(
                            "item {i} ({:?}) sets both value and valueFrom; keep one",
                            var.name
                        ),
                    );
                }
            }
        }
        if let Some(res) = &self.resources {
            for (which, map) in [("limits", &res.limits), ("requests", &res.requests)] {
                for (name, q) in map.iter().flatten() {
                    if checks::parse_quantity(&q.0).is_none_or(|n| n < 0) {
                        p.push(
                            &["spec", "resources", which],
                            format!(
                                "{name}: {:?} is not a non-negative quantity; write e.g. 500m or 128Mi",
                                q.0
                            ),
                        );
                    }
                }
            }
        }
    }
}

/// The pod is `<name>-immortalpod` (a DNS subdomain) and is labelled with `<name>` (a label
/// value, at most 63 characters).
pub(crate) fn validate_name(meta: &ObjectMeta, out: &mut Vec<FieldProblem>) {
    let Some(name) = meta.name.as_deref() else {
        return;
    };
    let mut p = FieldChecks { out };
    if let Err(why) = names::dns1123_subdomain(name) {
        p.push(
            &["metadata", "name"],
            format!("{name:?} is not a valid object name: {why}"),
        );
    } else if name.len() > 63 {
        p.push(
            &["metadata", "name"],
            format!(
                "must be at most 63 characters (it is the value of the pod's tend.dev/immortal label), has {}",
                name.len()
            ),
        );
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::TendObject;

    const VALID: &str = "
apiVersion: tend.dev/v1alpha1
kind: ImmortalContainer
metadata: {name: example, namespace: default}
spec:
  image: nginx:1.27
";

    fn parse(yaml: &str) -> Result<ImmortalContainer, serde_yaml::Error> {
        serde_yaml::from_str(yaml)
    }

    #[test]
    fn minimal_spec_parses() {
        let ic = parse(VALID).expect("valid");
        assert_eq!(ic.spec.image, "nginx:1.27");
        assert_eq!(ic.spec.command, None);
        assert!(ic.status.is_none());
        assert!(TendObject::ImmortalContainer(ic).validate().is_empty());
    }

    #[test]
    fn full_spec_parses() {
        let ic = parse(&format!(
            "{VALID}  command: [nginx]\n  args: ['-g', 'daemon off;']\n  env: [{{name: A, value: b}}]\n  resources: {{limits: {{memory: 128Mi}}}}\n"
        ))
        .expect("valid");
        assert_eq!(ic.spec.env.as_ref().map(Vec::len), Some(1));
        assert!(TendObject::ImmortalContainer(ic).validate().is_empty());
    }

    #[test]
    fn unknown_field_and_missing_image_rejected() {
        let err = parse(&format!("{VALID}  restartPolicy: Always\n")).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `restartPolicy`"),
            "{err}"
        );
        let err = parse(&VALID.replace("  image: nginx:1.27\n", "  args: [x]\n")).unwrap_err();
        assert!(err.to_string().contains("missing field `image`"), "{err}");
    }

    #[test]
    fn semantic_problems() {
        let mut ic = parse(VALID).expect("valid");
        ic.spec.image = "".into();
        ic.spec.env = Some(vec![
            EnvVar {
                name: "A".into(),
                ..Default::default()
            },
            EnvVar {
                name: "A".into(),
                ..Default::default()
            },
        ]);
        ic.spec.resources = Some(ResourceRequirements {
            limits: Some(
                [(
                    "memory".to_string(),
                    k8s_openapi::apimachinery::pkg::api::resource::Quantity("lots".into()),
                )]
                .into(),
            ),
            ..Default::default()
        });
        ic.metadata.name = Some("x".repeat(64));
        let problems = TendObject::ImmortalContainer(ic).validate();
        let paths: Vec<String> = problems.iter().map(|p| p.dotted_path()).collect();
        assert_eq!(
            paths,
            [
                "metadata.name",
                "spec.image",
                "spec.env",
                "spec.resources.limits"
            ],
            "{problems:?}"
        );
    }
}
