//! Flux's kinds (fluxcd/flux2): which are units (`Kustomization`, `HelmRelease`), which are
//! sources, which are neither; and the rules both units share (their sources, `dependsOn`,
//! the live-controller rule).

use super::model::{
    Context, Controller, Expander, Found, KubeConfigRef, LiveRule, Produced, Role, Sources, UnitId,
};
use serde_json::Value;

pub struct Flux;

/// One kind's expansion.
type ExpandFn = fn(&Found, &Sources, &Context) -> Produced;

pub const KUSTOMIZE_GROUP: &str = "kustomize.toolkit.fluxcd.io";
pub const HELM_GROUP: &str = "helm.toolkit.fluxcd.io";
pub const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";

/// The API versions each unit kind is read in (all still found in real repositories).
pub const KUSTOMIZATION_VERSIONS: &[&str] = &["v1", "v1beta2"];
pub const HELM_RELEASE_VERSIONS: &[&str] = &["v2", "v2beta2", "v2beta1"];

impl Expander for Flux {
    fn controller(&self) -> Controller {
        Controller::Flux
    }

    fn marker(&self) -> &'static str {
        // toolkit.fluxcd.io, and source.extensions.fluxcd.io (ArtifactGenerator).
        "fluxcd.io"
    }

    fn role(&self, api_version: &str, kind: &str) -> Option<Role> {
        let group = api_version.split('/').next().unwrap_or("");
        match (group, kind) {
            (KUSTOMIZE_GROUP, "Kustomization") | (HELM_GROUP, "HelmRelease") => Some(Role::Unit),
            (SOURCE_GROUP, _) | (super::flux_artifacts::GROUP, "ArtifactGenerator") => {
                Some(Role::Source)
            }
            (g, _) if g.ends_with(".toolkit.fluxcd.io") || g == super::flux_artifacts::GROUP => {
                Some(Role::Inert)
            }
            _ => None,
        }
    }

    /// `spec.kubeConfig.secretRef`: a Secret of the unit's namespace.
    fn kube_config(&self, unit: &Found) -> Option<KubeConfigRef> {
        let name = unit
            .spec()
            .pointer("/kubeConfig/secretRef/name")?
            .as_str()?;
        let key = unit
            .spec()
            .pointer("/kubeConfig/secretRef/key")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .map(str::to_string);
        Some(KubeConfigRef {
            namespace: unit.id.namespace.clone(),
            name: name.to_string(),
            key,
        })
    }

    fn expand(&self, unit: &Found, sources: &Sources, ctx: &Context) -> Produced {
        let version = unit.api_version.split('/').nth(1).unwrap_or("");
        let (versions, expand): (&[&str], ExpandFn) = match unit.id.kind.as_str() {
            "Kustomization" => (KUSTOMIZATION_VERSIONS, super::flux_kustomize::expand),
            _ => (HELM_RELEASE_VERSIONS, super::flux_helm::expand),
        };
        if !versions.contains(&version) {
            return Produced::failed(unit.problem(
                &["apiVersion"],
                format!(
                    "{} is not a version of Flux's {} tend reads ({}); write one of them",
                    unit.api_version,
                    unit.id.kind,
                    versions.join(", ")
                ),
            ));
        }
        let mut produced = expand(unit, sources, ctx);
        match super::flux_readiness::readiness(unit) {
            Ok(readiness) => produced.readiness = Some(readiness),
            Err(problem) => produced.problems.push(problem),
        }
        produced.depends_on = depends_on(unit);
        produced.live = Some(live_rule(unit));
        produced
    }
}

/// `spec.dependsOn`: units of the same kind, in the unit's namespace unless named.
fn depends_on(unit: &Found) -> Vec<UnitId> {
    let list = unit.spec().get("dependsOn").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(|entry| {
            let name = entry.get("name")?.as_str()?;
            let namespace = entry
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or(&unit.id.namespace);
            Some(UnitId {
                controller: Controller::Flux,
                kind: unit.id.kind.clone(),
                namespace: namespace.to_string(),
                name: name.to_string(),
            })
        })
        .collect()
}

/// A live Flux object is active unless `spec.suspend` is true.
fn live_rule(unit: &Found) -> LiveRule {
    let (group, command) = match unit.id.kind.as_str() {
        "Kustomization" => (KUSTOMIZE_GROUP, "kustomization"),
        _ => (HELM_GROUP, "helmrelease"),
    };
    LiveRule {
        group,
        active: |live| live.pointer("/spec/suspend").and_then(Value::as_bool) != Some(true),
        way_out: format!(
            "flux suspend {command} {} -n {}",
            unit.id.name, unit.id.namespace
        ),
    }
}
