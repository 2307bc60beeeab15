//! The waits of a run's units (`apply::unit_waits`), from what the source stage read of
//! each Flux unit (`source::units::Readiness`) and the objects render made of it. A health
//! check that could never pass (a unit the run does not define, an object without the
//! namespace it is in, one applied only after the unit) is refused here, before any write.

use crate::apply::unit_waits::{Awaits, Rule, UnitWait, UnitWaits};
use crate::object::{split_api_version, Object, ObjectKey};
use crate::problem::{Problem, Problems};
use crate::render::waves::wave_of;
use crate::source::units::{
    chain_label, CheckRef, Checks, Expanded, ExpandedUnit, Outcome, WaitRule,
};
use std::collections::HashMap;

pub fn unit_waits(expanded: &Expanded, objects: &[Object]) -> Result<UnitWaits, Problems> {
    let mut waits = UnitWaits::default();
    if expanded.units.iter().all(|u| u.readiness.is_none()) {
        // No unit waits: skip indexing every object of every cluster by key.
        return Ok(waits);
    }
    let mut problems = Vec::new();
    let by_key: HashMap<ObjectKey, &Object> = objects.iter().map(|o| (o.key(), o)).collect();
    for unit in &expanded.units {
        let Some(readiness) = &unit.readiness else {
            continue;
        };
        let members: Vec<&Object> = match unit.outcome {
            Outcome::Expanded => objects
                .iter()
                .filter(|o| unit.produced(&o.origin.file))
                .collect(),
            // The walked directory's own objects: those no unit produced.
            Outcome::Root => objects
                .iter()
                .filter(|o| !expanded.units.iter().any(|u| u.produced(&o.origin.file)))
                .collect(),
            Outcome::Suspended | Outcome::NotExpanded(_) => continue,
        };
        let last_wave = members
            .iter()
            .map(|o| wave_of(&o.value))
            .max()
            .unwrap_or(unit.wave);
        let context = Context {
            unit,
            last_wave,
            by_key: &by_key,
            expanded,
        };
        let install = context.rule(&readiness.install, &mut problems);
        let upgrade = context.rule(&readiness.upgrade, &mut problems);
        let index = waits.units.len();
        for member in &members {
            waits.unit_of.insert(member.key(), index);
        }
        waits.units.push(UnitWait {
            label: label(unit),
            members: members.iter().map(|o| o.key()).collect(),
            last_wave,
            install,
            upgrade,
        });
    }
    match problems.is_empty() {
        true => Ok(waits),
        false => {
            problems.sort();
            problems.dedup();
            Err(Problems(problems))
        }
    }
}

fn label(unit: &ExpandedUnit) -> String {
    let mut chain = unit.parents.clone();
    chain.push(unit.id.clone());
    chain_label(&chain)
}

struct Context<'a> {
    unit: &'a ExpandedUnit,
    last_wave: i64,
    by_key: &'a HashMap<ObjectKey, &'a Object>,
    expanded: &'a Expanded,
}

impl Context<'_> {
    fn rule(&self, rule: &WaitRule, problems: &mut Vec<Problem>) -> Rule {
        let awaits = match &rule.checks {
            Checks::All { jobs } => Awaits::All { jobs: *jobs },
            Checks::Applied => Awaits::Nothing,
            Checks::Named(checks) => Awaits::Named(
                checks
                    .iter()
                    .filter_map(|check| match self.named(check) {
                        Ok(named) => named,
                        Err(problem) => {
                            problems.push(problem);
                            None
                        }
                    })
                    .collect(),
            ),
        };
        Rule {
            awaits,
            timeout: rule.timeout.clone(),
        }
    }

    /// The object a health check names, to wait on; none where nothing is to be waited on
    /// here: a unit of the run (its own readiness decides, in its own waves), or a source
    /// tend read itself.
    fn named(&self, check: &CheckRef) -> Result<Option<(ObjectKey, String)>, Problem> {
        let unit = self.unit;
        let (group, _) = split_api_version(&check.api_version);
        let problem = |message: String| Problem::new(&unit.file, check.line, message);
        let written = format!(
            "{} {}{}",
            check.kind,
            check
                .namespace
                .as_deref()
                .map(|n| format!("{n}/"))
                .unwrap_or_default(),
            check.name
        );
        if crate::source::units::is_controller_object(&check.api_version, &check.kind) {
            let is_unit = |u: &&ExpandedUnit| {
                u.id.kind == check.kind
                    && Some(u.id.namespace.as_str()) == check.namespace.as_deref()
                    && u.id.name == check.name
            };
            let is_unit_kind = matches!(check.kind.as_str(), "Kustomization" | "HelmRelease");
            if is_unit_kind && !self.expanded.units.iter().any(|u| is_unit(&u)) {
                return Err(problem(format!(
                    "spec.healthChecks names {written}, which the desired state does not define; tend runs Flux's units itself and can check only those: name one, or remove the check"
                )));
            }
            return Ok(None);
        }
        let key = ObjectKey {
            group: group.to_string(),
            kind: check.kind.clone(),
            namespace: check.namespace.clone(),
            name: check.name.clone(),
        };
        match self.by_key.get(&key) {
            Some(object) => {
                let wave = wave_of(&object.value);
                if wave > self.last_wave {
                    return Err(problem(format!(
                        "spec.healthChecks names {written}, which this run applies in wave {wave}, after this unit's last wave {}: the check could never pass; remove it, or check it from a unit that depends on the one applying it",
                        self.last_wave
                    )));
                }
            }
            None if check.namespace.is_none() => {
                let elsewhere = self
                    .by_key
                    .keys()
                    .find(|k| k.group == key.group && k.kind == key.kind && k.name == key.name);
                if let Some(found) = elsewhere {
                    return Err(problem(format!(
                        "spec.healthChecks names {written} without a namespace, so a cluster-scoped object, but this run applies it in namespace {}; add namespace: {}",
                        found.namespace.as_deref().unwrap_or_default(),
                        found.namespace.as_deref().unwrap_or_default()
                    )));
                }
            }
            // Outside the run: read from the cluster by its kind when waited on.
            None => {}
        }
        Ok(Some((key, check.api_version.clone())))
    }
}
