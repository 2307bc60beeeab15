//! The no-fight rule (README "Coming from Flux"): where the cluster runs a GitOps
//! controller and holds a live, active copy of a unit tend expands (same kind, namespace and
//! name), `apply` refuses before any write, at the unit's file:line, naming the live object
//! and the way out; `diff` goes on (it writes nothing). Each controller says what "active"
//! means in its unit's [`LiveRule`](crate::source::units::LiveRule); this reads and judges.

use crate::cluster::{self, Session};
use crate::problem::{Problem, Problems};
use crate::source::units::{Expanded, ExpandedUnit, Outcome};
use crate::Error;

/// Refuse when a live controller would apply a unit this run applies too.
pub async fn refuse_live_controllers(session: &Session, expanded: &Expanded) -> Result<(), Error> {
    let mut problems = Vec::new();
    for unit in expanded.units.iter().filter(|u| applies(u)) {
        if let Some(problem) = live_and_active(session, unit).await? {
            problems.push(problem);
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    problems.sort();
    Err(crate::render::RenderError::Invalid(Problems(problems)).into())
}

/// The units as reports show them.
pub fn reports(expanded: &Expanded) -> Vec<crate::report::run::UnitReport> {
    expanded
        .units
        .iter()
        .map(|unit| crate::report::run::UnitReport {
            name: unit.label(),
            revision: unit.revision.clone(),
            result: match &unit.outcome {
                Outcome::Expanded => "expanded".into(),
                Outcome::Suspended => "suspended (spec.suspend), nothing applied".into(),
                Outcome::Root => "the walked directory".into(),
                Outcome::NotExpanded(why) => format!("not expanded: {why}"),
            },
            files: unit.files.clone(),
        })
        .collect()
}

/// Whether the run applies what the unit stands for (its tree, or the walked directory).
/// A unit targeting another cluster lives in the hub, which this run does not read.
fn applies(unit: &ExpandedUnit) -> bool {
    matches!(unit.outcome, Outcome::Expanded | Outcome::Root) && unit.target.is_none()
}

async fn live_and_active(session: &Session, unit: &ExpandedUnit) -> Result<Option<Problem>, Error> {
    let Some(rule) = &unit.live else {
        return Ok(None);
    };
    // Any version the cluster serves holds the same object.
    let Some(resource) = session.resources.any_version(rule.group, &unit.id.kind) else {
        return Ok(None); // the controller is not installed
    };
    let live = cluster::get(
        &session.client,
        resource,
        Some(&unit.id.namespace),
        &unit.id.name,
    )
    .await
    .map_err(Error::Cluster)?;
    Ok(live.filter(|live| (rule.active)(live)).map(|_| {
        Problem::new(
            &unit.file,
            unit.line,
            format!(
                "{} {} is live in the cluster and active: its controller applies it too, and tend would fight it; suspend it first (`{}`), or preview with `tend diff`",
                unit.id.controller.name(),
                unit.id,
                rule.way_out
            ),
        )
    }))
}
