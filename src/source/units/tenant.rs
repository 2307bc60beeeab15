//! Tenants (README "Coming from Flux"): which ServiceAccount a unit's objects are written as.
//!
//! Flux's controllers impersonate per unit object (fluxcd/pkg `runtime/client`
//! `Impersonator`): a Kustomization or HelmRelease with `spec.serviceAccountName` is applied
//! as `system:serviceaccount:<its namespace>:<name>`; without one, as the controller's own
//! ServiceAccount, or as `--default-service-account` in the unit's namespace when the
//! controller runs with it (the lockdown flag). Here the controllers' own ServiceAccounts
//! (`kustomize-controller`, `helm-controller` in [`FLUX_NAMESPACE`]) stand for tend itself.
//!
//! One rule is tend's own: a unit without `serviceAccountName` (and without the default)
//! found inside a tenant's unit keeps that tenant's identity. Flux would need the tenant to
//! be allowed to write the nested Kustomization object itself; tend does not write it, so
//! the tenant's bounds carry over instead of tend's.

use super::model::{Controller, ExpandedUnit, UnitId};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The namespace the Flux controllers run in, where their own ServiceAccounts are tend.
pub const FLUX_NAMESPACE: &str = "flux-system";

/// The Flux controllers' ServiceAccounts a unit may name to mean "as the controller".
const CONTROLLER_ACCOUNTS: &[&str] = &["kustomize-controller", "helm-controller"];

/// `spec.serviceAccountName` of a Flux unit.
pub fn service_account_name(unit: &super::model::Found) -> Option<String> {
    if unit.id.controller != Controller::Flux {
        return None;
    }
    let name = unit.spec().get("serviceAccountName")?.as_str()?;
    (!name.is_empty()).then(|| name.to_string())
}

/// Whether a unit is written as a ServiceAccount of its own, other than its parent's: it
/// then starts after its parent is applied.
pub fn starts_after_parent(unit: &ExpandedUnit, parent: &ExpandedUnit) -> bool {
    unit.service_account.is_some()
        && unit.service_account != parent.service_account
        && !is_controller_account(unit)
}

/// Whether a unit names its controller's own ServiceAccount: tend itself.
fn is_controller_account(unit: &ExpandedUnit) -> bool {
    unit.service_account
        .as_deref()
        .is_some_and(|name| CONTROLLER_ACCOUNTS.contains(&name))
        && unit.id.namespace == FLUX_NAMESPACE
}

/// The ServiceAccount a unit's objects are written as, with the unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// The ServiceAccount's namespace and name.
    pub account: (String, String),
    /// The unit, as reports name it (`Flux Kustomization team-a/apps`).
    pub unit: String,
    /// Where the unit is defined.
    pub file: PathBuf,
    pub line: usize,
}

/// The tenants of a run, by the files their units produced.
#[derive(Debug, Default)]
pub struct Tenants {
    by_file: Vec<(PathBuf, Tenant)>,
}

impl Tenants {
    pub fn is_empty(&self) -> bool {
        self.by_file.is_empty()
    }

    /// The tenant of an object from `file` (a unit's file, or a chart rendered from it).
    pub fn of_file(&self, file: &Path) -> Option<&Tenant> {
        let text = file.to_string_lossy();
        self.by_file.iter().find_map(|(own, tenant)| {
            let own = own.to_string_lossy();
            (text == own || text.starts_with(&format!("{own} (chart "))).then_some(tenant)
        })
    }
}

/// Who writes a unit's objects.
#[derive(Debug, Clone, PartialEq)]
enum Identity {
    Tend,
    Account(String, String),
}

/// Each unit's identity (`default_account`: `--default-service-account`), and so the
/// tenant of every file a tenant's unit produced. Units come parents first.
pub fn tenants(units: &[ExpandedUnit], default_account: Option<&str>) -> Tenants {
    let mut resolved: BTreeMap<&UnitId, Identity> = BTreeMap::new();
    let mut out = Tenants::default();
    for unit in units {
        let namespace = unit.id.namespace.clone();
        let identity = match (&unit.service_account, default_account) {
            (Some(_), _) if is_controller_account(unit) => Identity::Tend,
            (Some(name), _) => Identity::Account(namespace, name.clone()),
            (None, Some(name)) if unit.id.controller == Controller::Flux => {
                Identity::Account(namespace, name.to_string())
            }
            (None, _) => unit
                .parents
                .last()
                .and_then(|parent| resolved.get(parent))
                .cloned()
                .unwrap_or(Identity::Tend),
        };
        if let Identity::Account(ns, name) = &identity {
            let tenant = Tenant {
                account: (ns.clone(), name.clone()),
                unit: unit.label(),
                file: unit.file.clone(),
                line: unit.line,
            };
            out.by_file
                .extend(unit.files.iter().map(|f| (f.clone(), tenant.clone())));
        }
        resolved.insert(&unit.id, identity);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::units::Outcome;

    fn unit(name: &str, ns: &str, account: Option<&str>, parents: &[UnitId]) -> ExpandedUnit {
        ExpandedUnit {
            id: UnitId {
                controller: Controller::Flux,
                kind: "Kustomization".into(),
                namespace: ns.into(),
                name: name.into(),
            },
            file: PathBuf::from(format!("{name}.yaml")),
            line: 1,
            parents: parents.to_vec(),
            outcome: Outcome::Expanded,
            revision: None,
            chart: None,
            files: vec![PathBuf::from(format!("{name} (kustomize build)"))],
            depends_on: Vec::new(),
            live: None,
            target: None,
            wave: 0,
            sync_wave: 0,
            readiness: None,
            service_account: account.map(str::to_string),
        }
    }

    #[test]
    fn units_are_written_as_their_service_account_or_the_one_around_them() {
        let platform = unit("platform", "flux-system", Some("kustomize-controller"), &[]);
        let team = unit(
            "team-a",
            "team-a",
            Some("team-a"),
            std::slice::from_ref(&platform.id),
        );
        let nested = unit(
            "nested",
            "team-a",
            None,
            &[platform.id.clone(), team.id.clone()],
        );
        let plain = unit(
            "plain",
            "flux-system",
            None,
            std::slice::from_ref(&platform.id),
        );
        let units = [platform, team, nested, plain];
        let found = tenants(&units, None);
        let of = |f: &str| found.of_file(Path::new(f)).map(|t| t.account.clone());
        let team_a = Some(("team-a".to_string(), "team-a".to_string()));
        assert_eq!(of("platform (kustomize build)"), None);
        assert_eq!(of("team-a (kustomize build)"), team_a);
        assert_eq!(of("team-a (kustomize build) (chart web, x.yaml)"), team_a);
        assert_eq!(of("nested (kustomize build)"), team_a);
        assert_eq!(of("plain (kustomize build)"), None);

        // Flux's lockdown flag: every unit without one is its namespace's default.
        let locked = tenants(&units, Some("default"));
        let of = |f: &str| locked.of_file(Path::new(f)).map(|t| t.account.clone());
        assert_eq!(of("platform (kustomize build)"), None);
        assert_eq!(
            of("plain (kustomize build)"),
            Some(("flux-system".to_string(), "default".to_string()))
        );
    }
}
