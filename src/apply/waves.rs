//! Waves (README "Waves and hooks"): apply in ascending `tend.dev/wave` order, the kind
//! stages inside each wave; before a wave starts, every object of the waves before it is ready
//! (as `--wait` decides; a unit's as its controller would, [`super::unit_waits`]), and a wave
//! that fails stops the run there. Pre-apply hooks of a wave run before its objects,
//! post-apply hooks after the last wave is ready. A site without waves or hooks goes straight
//! to [`stages::apply_stages`]: the same requests as before waves existed.

use super::hook_needs;
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
        .map(|p| (p.key.clone(), wave_of(&p.object.value)))
        .collect();
    let state = match (not_run, has_changes(plan)) {
        (_, false) => HookState::NotRun("nothing to change".into()),
        (Some(why), true) => HookState::NotRun(why.into()),
        (None, true) => HookState::WouldRun,
    };
    // A dry run also says which Namespace a real run would create before a hook.
    let early = hook_needs::namespaces_to_create(hooks, prepared, plan);
    report.hooks = hooks
        .iter()
        .map(|h| {
            let namespace = h.key().namespace.and_then(|n| early.get(&n).copied());
            let first = namespace
                .filter(|ns| h.phase == Phase::PreApply && wave_of(&ns.object.value) >= h.wave);
            match (&state, not_run, first) {
                (HookState::NotRun(why), Some(_), Some(ns)) => {
                    h.run_as(HookState::NotRun(format!(
                        "{why}; Namespace {} would be created first",
                        ns.key.clone().name
                    )))
                }
                _ => h.run_as(state.clone()),
            }
        })
        .collect();
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
    // A hook whose pod needs objects created after it would only time out: stop first.
    let unmet = match changes {
        true => hook_needs::unmet_needs(hooks, prepared, plan),
        false => Vec::new(),
    };
    if !unmet.is_empty() {
        report.errors.extend(unmet);
        let why = HookState::NotRun("it needs objects created after it".into());
        report.hooks.iter_mut().for_each(|h| h.state = why.clone());
        return Ok((Applied::default(), true));
    }
    let mut by_wave: BTreeMap<i64, Vec<&Prepared>> = BTreeMap::new();
    for p in prepared {
        by_wave.entry(wave_of(&p.object.value)).or_default().push(p);
    }
    for hook in hooks.iter().filter(|h| h.phase == Phase::PreApply) {
        by_wave.entry(hook.wave).or_default();
    }
    let site = Waves {
        session,
        hooks,
        plan,
        existing,
        opts,
        changes,
        post_hooks: changes && hooks.iter().any(|h| h.phase == Phase::PostApply),
        secrets: hooks::secret_values(prepared),
        hook_namespaces: hook_needs::namespaces_to_create(hooks, prepared, plan),
        last: by_wave.keys().next_back().copied(),
    };
    let mut total = Applied::default();
    for (wave, members) in by_wave {
        // A stop signal: no wave or hook starts (the engine reports the interruption).
        if opts.interrupt.is_set() {
            return Ok((total, true));
        }
        match site.run_wave(wave, members, &mut total, report).await? {
            WaveEnd::Done => {}
            WaveEnd::Interrupted => return Ok((total, true)),
            WaveEnd::Stopped => return Ok(stop(report, wave, total)),
        }
    }
    if changes && !opts.interrupt.is_set() {
        let post = hooks.iter().filter(|h| h.phase == Phase::PostApply);
        run_hooks(session, post, opts, &site.secrets, report).await;
    }
    Ok((total, false))
}

/// What every wave of a run shares.
struct Waves<'a> {
    session: &'a Session,
    hooks: &'a [Hook],
    plan: &'a Plan,
    existing: &'a BTreeSet<ObjectKey>,
    opts: &'a EngineOptions,
    /// Whether the run changes anything (hooks run only then).
    changes: bool,
    post_hooks: bool,
    secrets: Vec<String>,
    /// The Namespaces this run creates that pre-apply hooks run in, by name.
    hook_namespaces: BTreeMap<String, &'a Prepared>,
    last: Option<i64>,
}

/// How a wave ended.
enum WaveEnd {
    /// Applied and ready: on to the next.
    Done,
    /// A stop signal came.
    Interrupted,
    /// A hook or an object failed, or the wave did not become ready: later waves do not run.
    Stopped,
}

impl Waves<'_> {
    /// The wave's pre-apply hooks, its objects, and (before the next wave or the post-apply
    /// hooks) its readiness.
    async fn run_wave(
        &self,
        wave: i64,
        members: Vec<&Prepared>,
        total: &mut Applied,
        report: &mut RunReport,
    ) -> Result<WaveEnd, EngineError> {
        let (session, opts) = (self.session, self.opts);
        if self.changes {
            if let Some(end) = self.pre_hooks(wave, total, report).await? {
                return Ok(end);
            }
        }
        // Namespaces created early for the hooks are not applied twice.
        let members: Vec<&Prepared> = members
            .into_iter()
            .filter(|p| !total.outcomes.contains_key(&p.key))
            .collect();
        // Kinds whose CRD an earlier wave created are served now.
        let crds_applied = total
            .outcomes
            .iter()
            .any(|(k, o)| k.kind == "CustomResourceDefinition" && o.error.is_none());
        let members = resolve(session, members, crds_applied, total).await?;
        let keys: BTreeSet<ObjectKey> = members.iter().map(|p| p.key.clone()).collect();
        let wave_plan = wave_plan(self.plan, &keys);
        tracing::info!("wave {wave}: {} object(s)", members.len());
        let applied =
            stages::apply_stages(session, &members, &wave_plan, self.existing, opts).await?;
        total.merge(applied);
        report.outcomes.extend(total.outcomes.clone());
        let failed = keys
            .iter()
            .any(|k| report.outcomes.get(k).is_some_and(|o| o.error.is_some()));
        if failed {
            report.errors.push(format!(
                "wave {wave}: objects failed to apply; later waves were not applied"
            ));
            return Ok(WaveEnd::Stopped);
        }
        if Some(wave) == self.last && !self.post_hooks {
            return Ok(WaveEnd::Done);
        }
        // Before the next wave (or the post-apply hooks), this one is ready (units: as asked).
        let why = format!("wave {wave}");
        let objects: Vec<_> = members.iter().map(|p| &p.object).collect();
        let awaited = (opts.unit_waits).after_wave(wave, &objects, self.plan, opts.timeout, true);
        let served = &total.served;
        let ready = wait::ready_awaited(session, awaited, &members, served, report, opts, &why);
        let (statuses, errors) = tokio::select! {
            answer = ready => answer,
            _ = opts.interrupt.requested() => return Ok(WaveEnd::Interrupted),
        };
        if errors.is_empty() {
            return Ok(WaveEnd::Done);
        }
        report.waits.extend(
            statuses
                .into_iter()
                .filter(|(_, s): &(ObjectKey, Status)| !s.is_current()),
        );
        report.errors.extend(errors);
        Ok(WaveEnd::Stopped)
    }
}

impl Waves<'_> {
    /// The wave's pre-apply hooks, after the Namespaces they run in that this run creates and
    /// that are not created yet (as `helm install --create-namespace` does: a hook cannot be
    /// created in a namespace that does not exist). `None` when all of them succeeded, else
    /// how the wave ends.
    async fn pre_hooks(
        &self,
        wave: i64,
        total: &mut Applied,
        report: &mut RunReport,
    ) -> Result<Option<WaveEnd>, EngineError> {
        let pre: Vec<&Hook> = self
            .hooks
            .iter()
            .filter(|h| h.phase == Phase::PreApply && h.wave == wave)
            .collect();
        let namespaces: BTreeMap<ObjectKey, Prepared> = pre
            .iter()
            .filter_map(|h| self.hook_namespaces.get(h.key().namespace.as_deref()?))
            .map(|p| (p.key.clone(), (*p).clone()))
            .filter(|(key, _)| !total.outcomes.contains_key(key))
            .collect();
        if !namespaces.is_empty() {
            let keys: BTreeSet<ObjectKey> = namespaces.keys().cloned().collect();
            for key in &keys {
                tracing::info!(
                    "creating Namespace {} first: pre-apply hooks of wave {wave} run in it",
                    key.name
                );
            }
            let namespaces: Vec<Prepared> = namespaces.into_values().collect();
            let plan = wave_plan(self.plan, &keys);
            let applied =
                stages::apply_stages(self.session, &namespaces, &plan, self.existing, self.opts)
                    .await?;
            total.merge(applied);
            report.outcomes.extend(total.outcomes.clone());
            let failed = keys
                .iter()
                .find(|k| report.outcomes.get(*k).is_some_and(|o| o.error.is_some()));
            if let Some(key) = failed {
                report.errors.push(format!(
                    "wave {wave}: cannot create Namespace {}, where its pre-apply hooks run; no hook ran",
                    key.name
                ));
                return Ok(Some(WaveEnd::Stopped));
            }
        }
        let opts = self.opts;
        if run_hooks(self.session, pre.into_iter(), opts, &self.secrets, report).await {
            return Ok(None);
        }
        Ok(Some(match opts.interrupt.is_set() {
            true => WaveEnd::Interrupted,
            false => WaveEnd::Stopped,
        }))
    }
}

/// The part of `plan` that one wave's objects (`keys`) make.
fn wave_plan(plan: &Plan, keys: &BTreeSet<ObjectKey>) -> Plan {
    Plan {
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
    }
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
                    applied.served.insert(p.key.clone(), r.clone());
                }
            }
            p
        })
        .collect())
}
