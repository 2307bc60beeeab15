//! Waves (README "Waves and hooks"): apply in ascending `tend.dev/wave` order, the kind
//! stages inside each wave; before a wave starts, every object of the waves before it is ready
//! (as `--wait` decides), and a wave that fails stops the run there. Pre-apply hooks of a wave
//! run before its objects, post-apply hooks after the last wave is ready.
//!
//! A site without waves or hooks goes straight to [`stages::apply_stages`]: the same requests
//! as before waves existed.

use super::hooks::{self, Hook};
use super::options::{EngineError, EngineOptions};
use super::prepare::Prepared;
use super::stages::{self, Applied};
use super::wait;
use crate::cluster::{self, Session};
use crate::kstatus::Status;
use crate::object::{split_api_version, ObjectKey};
use crate::plan::planner::Plan;
use crate::plan::Action;
use crate::render::waves::{wave_of, Phase};
use crate::report::run::{HookState, RunReport};
use std::collections::{BTreeMap, BTreeSet};

/// Whether the site has waves or hooks (and so reports them).
pub fn in_use(prepared: &[Prepared], hooks: &[Hook]) -> bool {
    !hooks.is_empty() || prepared.iter().any(|p| wave_of(&p.object.value) != 0)
}

/// Whether the run changes anything: only then do hooks run (a CronJob every five minutes must
/// not re-run migrations).
pub fn has_changes(plan: &Plan) -> bool {
    !plan.prune.is_empty()
        || !plan.pending.is_empty()
        || plan
            .changes
            .iter()
            .any(|c| matches!(c.action, Action::Create | Action::Update | Action::Replace))
}

/// Fill the report's waves and, for runs that run no hook (`diff`, `--dry-run`), its hooks:
/// `would run` for `diff` of a run with changes, else not run and why.
pub fn describe(
    report: &mut RunReport,
    prepared: &[Prepared],
    hooks: &[Hook],
    plan: &Plan,
    not_run: Option<&str>,
) {
    if !in_use(prepared, hooks) {
        return;
    }
    report.waves = prepared
        .iter()
        .map(|p| (p.object.key(), wave_of(&p.object.value)))
        .collect();
    let state = match (not_run, has_changes(plan)) {
        (_, false) => HookState::NotRun("nothing to change".into()),
        (Some(why), true) => HookState::NotRun(why.into()),
        (None, true) => HookState::WouldRun,
    };
    report.hooks = hooks.iter().map(|h| h.run_as(state.clone())).collect();
}

/// Apply the plan wave by wave, running the hooks. Returns what the stages wrote and whether
/// a wave stopped the run (then nothing must be pruned).
pub async fn apply_waves(
    session: &Session,
    prepared: &[Prepared],
    hooks: &[Hook],
    plan: &Plan,
    existing: &BTreeSet<ObjectKey>,
    opts: &EngineOptions,
    report: &mut RunReport,
) -> Result<(Applied, bool), EngineError> {
    if !in_use(prepared, hooks) {
        let applied = stages::apply_stages(session, prepared, plan, existing, opts).await?;
        return Ok((applied, false));
    }
    describe(report, prepared, hooks, plan, None);
    let changes = has_changes(plan);
    let mut by_wave: BTreeMap<i64, Vec<&Prepared>> = BTreeMap::new();
    for p in prepared {
        by_wave.entry(wave_of(&p.object.value)).or_default().push(p);
    }
    for hook in hooks.iter().filter(|h| h.phase == Phase::PreApply) {
        by_wave.entry(hook.wave).or_default();
    }
    let post_hooks = changes && hooks.iter().any(|h| h.phase == Phase::PostApply);
    let secrets = hooks::secret_values(prepared);
    let last = by_wave.keys().next_back().copied();
    let mut total = Applied::default();
    let mut crds_applied = false;
    for (wave, members) in by_wave {
        // A stop signal: no wave or hook starts (the engine reports the interruption).
        if opts.interrupt.is_set() {
            return Ok((total, true));
        }
        if changes {
            let pre = hooks
                .iter()
                .filter(|h| h.phase == Phase::PreApply && h.wave == wave);
            if !run_hooks(session, pre, opts, &secrets, report).await {
                let interrupted = opts.interrupt.is_set();
                return Ok(match interrupted {
                    true => (total, true),
                    false => stop(report, wave, total),
                });
            }
        }
        // Kinds whose CRD an earlier wave created are served now.
        let members = resolve(session, members, crds_applied, &mut total).await?;
        let keys: BTreeSet<ObjectKey> = members.iter().map(|p| p.object.key()).collect();
        let wave_plan = Plan {
            changes: plan
                .changes
                .iter()
                .filter(|c| keys.contains(&c.key))
                .cloned()
                .collect(),
            pending: plan.pending.clone(),
            recreate: plan.recreate.clone(),
            errors: plan.errors.clone(),
            prune: BTreeSet::new(),
            kept: BTreeMap::new(),
        };
        tracing::info!("wave {wave}: {} object(s)", members.len());
        let applied = stages::apply_stages(session, &members, &wave_plan, existing, opts).await?;
        crds_applied |= applied
            .outcomes
            .iter()
            .any(|(k, o)| k.kind == "CustomResourceDefinition" && o.error.is_none());
        merge(&mut total, applied);
        report.outcomes.extend(total.outcomes.clone());
        let failed = keys
            .iter()
            .any(|k| report.outcomes.get(k).is_some_and(|o| o.error.is_some()));
        if failed {
            report.errors.push(format!(
                "wave {wave}: objects failed to apply; later waves were not applied"
            ));
            return Ok(stop(report, wave, total));
        }
        // Before the next wave (or the post-apply hooks), this one is ready.
        if Some(wave) != last || post_hooks {
            let why = format!("wave {wave}");
            let ready = wait::ready(session, members.iter(), &total.served, report, opts, &why);
            let (statuses, errors) = tokio::select! {
                answer = ready => answer,
                _ = opts.interrupt.requested() => return Ok((total, true)),
            };
            if !errors.is_empty() {
                report.waits.extend(
                    statuses
                        .into_iter()
                        .filter(|(_, s): &(ObjectKey, Status)| !s.is_current()),
                );
                report.errors.extend(errors);
                return Ok(stop(report, wave, total));
            }
        }
    }
    if changes && !opts.interrupt.is_set() {
        let post = hooks.iter().filter(|h| h.phase == Phase::PostApply);
        run_hooks(session, post, opts, &secrets, report).await;
    }
    Ok((total, false))
}

/// Run hooks one after another until one fails; record each in the report. Whether all
/// succeeded.
async fn run_hooks<'a>(
    session: &Session,
    hooks: impl Iterator<Item = &'a Hook>,
    opts: &EngineOptions,
    secrets: &[String],
    report: &mut RunReport,
) -> bool {
    for hook in hooks {
        if opts.interrupt.is_set() {
            return false;
        }
        let run = tokio::select! {
            run = hooks::run(session, hook, opts, secrets) => run,
            _ = opts.interrupt.requested() => return false,
        };
        let failed = run.state == HookState::Failed;
        if failed {
            report.errors.push(format!(
                "{} hook {} failed: {}",
                hook.phase.name(),
                hook.key().kind_and_name(),
                run.error.as_deref().unwrap_or_default()
            ));
        }
        if let Some(entry) = report.hooks.iter_mut().find(|h| h.key == run.key) {
            *entry = run;
        }
        if failed {
            return false;
        }
    }
    true
}

/// Stop the run at `wave`: the hooks that did not run say why.
fn stop(report: &mut RunReport, wave: i64, applied: Applied) -> (Applied, bool) {
    tracing::error!("stopped at wave {wave}: later waves were not applied");
    report.stopped_at_wave = Some(wave);
    for hook in &mut report.hooks {
        if hook.state == HookState::WouldRun {
            hook.state = HookState::NotRun(format!("the run stopped at wave {wave}"));
        }
    }
    (applied, true)
}

/// The wave's objects, with the resources of kinds whose CRD an earlier wave of this run
/// created (unknown when preparing) looked up again; those are recorded as served for
/// `--wait`.
async fn resolve(
    session: &Session,
    members: Vec<&Prepared>,
    crds_applied: bool,
    applied: &mut Applied,
) -> Result<Vec<Prepared>, EngineError> {
    let unserved = members.iter().any(|p| p.resource.is_none());
    let resources = match crds_applied && unserved {
        true => Some(cluster::discover(&session.client).await?),
        false => None,
    };
    Ok(members
        .into_iter()
        .map(|p| {
            let mut p = p.clone();
            if let (None, Some(resources)) = (&p.resource, &resources) {
                let (g, v) = split_api_version(p.object.api_version());
                p.resource = resources.get(g, v, p.object.kind()).cloned();
                if let Some(r) = &p.resource {
                    applied.served.insert(p.object.key(), r.clone());
                }
            }
            p
        })
        .collect())
}

fn merge(into: &mut Applied, from: Applied) {
    into.outcomes.extend(from.outcomes);
    into.pending_results.extend(from.pending_results);
    into.replaced.extend(from.replaced);
    into.tend_objects.extend(from.tend_objects);
    into.served.extend(from.served);
}
