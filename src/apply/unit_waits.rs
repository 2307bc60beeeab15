//! What a wave waits for when controllers' units are in the run (README "Coming from Flux",
//! "Readiness"). An object of no unit waits as tend's waves decide: every object of a wave is
//! ready before the next starts. An object of a unit waits as its controller decides
//! (`source::units::Readiness`): a Kustomization without `wait` or `healthChecks` is ready
//! once applied, so its dependents start at once; one with `wait: true` waits for everything
//! it applied, one with `healthChecks` for the objects named, after its last wave; a
//! HelmRelease for all of its release as Helm's install or upgrade does. What a unit asks
//! for is waited on after the last wave too (after the prune, as the controllers check
//! health after theirs), each within its unit's timeout.

use crate::object::{Object, ObjectKey};
use crate::plan::planner::Plan;
use crate::plan::Action;
use crate::render::waves::wave_of;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

/// How the objects of units wait, unit by unit (made by `run::unit_waits`).
#[derive(Debug, Clone, Default)]
pub struct UnitWaits {
    pub units: Vec<UnitWait>,
    /// Each unit object's unit, by index into `units`.
    pub unit_of: HashMap<ObjectKey, usize>,
}

#[derive(Debug, Clone)]
pub struct UnitWait {
    /// As reports name it: `Flux Kustomization flux-system/apps`.
    pub label: String,
    /// Its objects (desired).
    pub members: Vec<ObjectKey>,
    /// The wave after which the objects it names are waited on: its last.
    pub last_wave: i64,
    /// On its first apply (none of its members in the cluster yet), and on later ones.
    pub install: Rule,
    pub upgrade: Rule,
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub awaits: Awaits,
    /// How long, and the field that says so; none: `--timeout`.
    pub timeout: Option<(Duration, String)>,
}

#[derive(Debug, Clone)]
pub enum Awaits {
    /// Every member (Jobs too unless `jobs` is false).
    All { jobs: bool },
    /// The objects named, with their apiVersions (one outside the run is read by its kind).
    Named(Vec<(ObjectKey, String)>),
    /// Nothing: ready once applied.
    Nothing,
}

/// One object to wait for, how long, and what said so.
#[derive(Debug, Clone)]
pub struct Awaited {
    pub key: ObjectKey,
    pub api_version: String,
    pub timeout: Duration,
    /// `--timeout`, `spec.timeout of Flux Kustomization flux-system/apps`.
    pub limit: String,
    /// Whether a unit asks for it: then the end of the run waits for it too.
    pub declared: bool,
}

impl UnitWaits {
    /// What to wait for once `wave` (its `members`) is applied. `all`: the objects of no unit
    /// too (before a next wave or post-apply hooks); else only what units ask for.
    pub fn after_wave(
        &self,
        wave: i64,
        members: &[&Object],
        plan: &Plan,
        timeout: Duration,
        all: bool,
    ) -> Vec<Awaited> {
        let installing = self.installing(plan);
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        for object in members {
            let key = object.key();
            let awaited = match self.unit_of.get(&key) {
                None if all => Some(plain(&key, object.api_version(), timeout)),
                None => None,
                Some(&unit) => {
                    let rule = self.units[unit].rule(installing[unit]);
                    rule.awaits_member(&key).then(|| {
                        self.units[unit].awaited(rule, &key, object.api_version(), timeout)
                    })
                }
            };
            if let Some(awaited) = awaited.filter(|a| seen.insert(a.key.clone())) {
                out.push(awaited);
            }
        }
        for (index, unit) in self.units.iter().enumerate() {
            let rule = unit.rule(installing[index]);
            let Awaits::Named(named) = &rule.awaits else {
                continue;
            };
            if unit.last_wave != wave {
                continue;
            }
            for (key, api_version) in named {
                if seen.insert(key.clone()) {
                    out.push(unit.awaited(rule, key, api_version, timeout));
                }
            }
        }
        out
    }

    /// What units ask for once the run is applied: what their last wave asks (the waves
    /// before were waited on before the next started).
    pub fn at_end(&self, objects: &[&Object], plan: &Plan, timeout: Duration) -> Vec<Awaited> {
        let Some(last) = objects.iter().map(|o| wave_of(&o.value)).max() else {
            return Vec::new();
        };
        let members: Vec<&Object> = objects
            .iter()
            .filter(|o| wave_of(&o.value) == last)
            .copied()
            .collect();
        let mut out = self.after_wave(last, &members, plan, timeout, false);
        // Objects named by units whose last wave came earlier were waited on then.
        out.retain(|a| a.declared);
        out
    }

    /// Per unit: whether this is its first apply (every member is created).
    /// (Hooks are members the plan does not list: they do not count.)
    fn installing(&self, plan: &Plan) -> Vec<bool> {
        let actions: HashMap<&ObjectKey, Action> =
            plan.changes.iter().map(|c| (&c.key, c.action)).collect();
        self.units
            .iter()
            .map(|u| {
                let mut planned = u.members.iter().filter_map(|k| actions.get(k)).peekable();
                planned.peek().is_some() && planned.all(|a| *a == Action::Create)
            })
            .collect()
    }
}

impl UnitWait {
    fn rule(&self, installing: bool) -> &Rule {
        match installing {
            true => &self.install,
            false => &self.upgrade,
        }
    }

    fn awaited(
        &self,
        rule: &Rule,
        key: &ObjectKey,
        api_version: &str,
        timeout: Duration,
    ) -> Awaited {
        let (timeout, limit) = match &rule.timeout {
            Some((timeout, field)) => (*timeout, format!("{field} of {}", self.label)),
            None => (timeout, "--timeout".to_string()),
        };
        Awaited {
            key: key.clone(),
            api_version: api_version.to_string(),
            timeout,
            limit,
            declared: true,
        }
    }
}

impl Rule {
    /// Whether a member is waited on after its own wave.
    fn awaits_member(&self, key: &ObjectKey) -> bool {
        match &self.awaits {
            Awaits::All { jobs } => *jobs || !(key.group == "batch" && key.kind == "Job"),
            // Named objects are waited on after the unit's last wave.
            Awaits::Named(_) | Awaits::Nothing => false,
        }
    }
}

/// An object of no unit, waited on as tend's waves do.
fn plain(key: &ObjectKey, api_version: &str, timeout: Duration) -> Awaited {
    Awaited {
        key: key.clone(),
        api_version: api_version.to_string(),
        timeout,
        limit: "--timeout".into(),
        declared: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Origin;
    use crate::plan::Change;
    use serde_json::json;

    fn object(kind: &str, name: &str) -> Object {
        let api_version = if kind == "Job" { "batch/v1" } else { "apps/v1" };
        let value = json!({"apiVersion": api_version, "kind": kind,
                           "metadata": {"name": name, "namespace": "shop"}});
        let origin = Origin {
            file: "shop.yaml".into(),
            line: 1,
            generated_by: None,
            sealed: Vec::new(),
        };
        Object::new(value, origin)
    }

    fn created(objects: &[&Object]) -> Plan {
        let changes = objects
            .iter()
            .map(|o| Change {
                key: o.key(),
                api_version: o.api_version().into(),
                action: Action::Create,
                origin: None,
                before: None,
                after: None,
                reason: None,
                drift: Vec::new(),
            })
            .collect();
        Plan {
            changes,
            ..Plan::default()
        }
    }

    fn rule(awaits: Awaits, seconds: u64) -> Rule {
        Rule {
            awaits,
            timeout: Some((Duration::from_secs(seconds), "spec.timeout".into())),
        }
    }

    /// A release that waits for all but Jobs on install and for nothing on upgrade, and a
    /// Kustomization that names one object outside it.
    fn waits(release: &[&Object], named: &ObjectKey) -> UnitWaits {
        let mut waits = UnitWaits::default();
        waits.units.push(UnitWait {
            label: "Flux HelmRelease flux-system/shop".into(),
            members: release.iter().map(|o| o.key()).collect(),
            last_wave: 0,
            install: rule(Awaits::All { jobs: false }, 60),
            upgrade: rule(Awaits::Nothing, 60),
        });
        waits.units.push(UnitWait {
            label: "Flux Kustomization flux-system/apps".into(),
            members: Vec::new(),
            last_wave: 0,
            install: rule(Awaits::Named(vec![(named.clone(), "apps/v1".into())]), 30),
            upgrade: rule(Awaits::Named(vec![(named.clone(), "apps/v1".into())]), 30),
        });
        for o in release {
            waits.unit_of.insert(o.key(), 0);
        }
        waits
    }

    fn keys(awaited: &[Awaited]) -> Vec<(String, bool, u64)> {
        awaited
            .iter()
            .map(|a| (a.key.name.clone(), a.declared, a.timeout.as_secs()))
            .collect()
    }

    #[test]
    fn units_wait_as_their_rules_say_and_other_objects_as_waves_do() {
        let (web, migrate, plain) = (
            object("Deployment", "web"),
            object("Job", "migrate"),
            object("Deployment", "plain"),
        );
        let named = ObjectKey::new("apps", "Deployment", Some("shop"), "elsewhere");
        let waits = waits(&[&web, &migrate], &named);
        let members = [&web, &migrate, &plain];
        let install = created(&members);
        let timeout = Duration::from_secs(300);
        // Before a next wave: the release's Deployment (not its Job), the object of no unit
        // within --timeout, and the object the Kustomization names.
        assert_eq!(
            keys(&waits.after_wave(0, &members, &install, timeout, true)),
            [
                ("web".into(), true, 60),
                ("plain".into(), false, 300),
                ("elsewhere".into(), true, 30)
            ]
        );
        // At the end, only what units ask for; an upgrade of the release asks for nothing.
        let upgrade = Plan::default();
        assert_eq!(
            keys(&waits.at_end(&members, &upgrade, timeout)),
            [("elsewhere".into(), true, 30)]
        );
        assert_eq!(keys(&waits.at_end(&members, &install, timeout)).len(), 2);
        // A member the plan does not list (a hook) does not make an install an upgrade.
        let hooks_unplanned = created(&[&web, &plain]);
        assert_eq!(
            keys(&waits.at_end(&members, &hooks_unplanned, timeout)),
            [("web".into(), true, 60), ("elsewhere".into(), true, 30)]
        );
    }
}
