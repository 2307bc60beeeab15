//! The engine: `diff` and `apply` as a sequence of steps, each in its own file.
//!
//! diff:  prepare → observe (parent, LISTs) → triage → dry runs → plan → report
//! apply: prepare → read the lock → (take it ‖ observe) → triage → plan → widen parent →
//!        stages (by wave, with hooks) → tend's kinds → prune → narrow and record → wait → unlock
//!
//! A real apply does not dry-run first: it writes each object that may change next anyway and
//! reports the diff against what the server returns then, so a dry run would double its
//! requests and prevent nothing (independent objects are applied even when one fails).

use super::lists;
use super::lock::{self, Clock};
use super::observe::{self, Observed};
pub use super::options::{EngineError, EngineOptions};
use super::prepare::{self, prepare, Prepared};
use super::writes::{self, needed_after_apply};
use super::{hooks, interrupted, prune, tend_kinds, waves};
use crate::cluster::Session;
use crate::object::{Identity, Object, ObjectKey};
use crate::plan::planner::{self, Desired, Plan, PlanInput, Triage};
use crate::plan::settled::{self, DesiredDigest, Settled};
use crate::report::run::{Mode, Outcome, RunReport};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

/// A planned run: what was observed and the plan.
struct Planned {
    observed: Observed,
    plan: Plan,
    /// The prepared objects without the fields other managers own, when any asked
    /// (`tend.dev/ignore-fields-of`): what is applied instead.
    rewritten: Option<Vec<Prepared>>,
}

fn desired_of(prepared: &[Prepared]) -> Vec<Desired<'_>> {
    prepared
        .iter()
        .map(|p| Desired {
            object: &p.object,
            served: p.resource.is_some(),
        })
        .collect()
}

/// Observe and plan. `dry_run_all`: dry-run every object the fast path cannot settle (diff,
/// `--dry-run`); otherwise leave them pending for the real apply.
async fn observe_and_plan(
    session: &Session,
    (prepared, hooks): (&[Prepared], &[hooks::Hook]),
    opts: &EngineOptions,
    dry_run_all: bool,
    ahead: Option<lists::ReadAhead>,
) -> Result<Planned, EngineError> {
    let id = opts.applyset_id();
    let filter = FastPath {
        desired: prepared
            .iter()
            .zip(desired_of(prepared))
            .map(|(p, d)| (p.key.clone(), d))
            .collect(),
        settled: opts.settled.as_deref().map(|settled| {
            let digests = prepared
                .iter()
                .filter(|p| settled::may_note(&p.object))
                .map(|p| (p.key.clone(), settled::digest(&p.object.value)))
                .collect();
            (settled, digests)
        }),
    };
    let observed = observe::observe(session, prepared, opts, &id, &filter, ahead).await?;
    let rewritten = prepare::without_others_fields(prepared, &observed.live);
    let prepared = rewritten.as_deref().unwrap_or(prepared);
    let inputs = desired_of(prepared);
    let needs_server: BTreeSet<ObjectKey> = inputs
        .iter()
        .zip(prepared)
        .filter(|(_, p)| !observed.unchanged.contains(&p.key))
        .filter(|(d, p)| planner::triage(**d, observed.live.get(&p.key)) == Triage::NeedsServer)
        .map(|(_, p)| p.key.clone())
        .collect();
    let (dry_runs, pending) = if dry_run_all {
        let answers =
            observe::dry_runs(session, prepared, &needs_server, &observed.live, opts).await;
        (answers, BTreeSet::new())
    } else {
        (HashMap::new(), needs_server)
    };
    let mut plan = planner::plan(PlanInput {
        desired: &inputs,
        live: &observed.live,
        unchanged: &observed.unchanged,
        dry_runs: &dry_runs,
        pending: &pending,
        applyset_id: &id,
    });
    hooks::never_prune(&mut plan, hooks);
    Ok(Planned {
        observed,
        plan,
        rewritten,
    })
}

/// The planner's fast path, applied while LIST pages are read; with what earlier runs
/// settled, and the digests of the desired objects to compare with it.
struct FastPath<'a> {
    desired: HashMap<ObjectKey, Desired<'a>>,
    settled: Option<(&'a Settled, HashMap<ObjectKey, DesiredDigest>)>,
}

impl observe::LiveFilter for FastPath<'_> {
    fn unchanged(&self, key: &ObjectKey, live: &Value) -> bool {
        let unchanged = self
            .desired
            .get(key)
            .is_some_and(|d| planner::triage(*d, Some(live)) == Triage::Unchanged);
        if let (true, Some((settled, digests))) = (unchanged, &self.settled) {
            let api_version = live.get("apiVersion").and_then(Value::as_str);
            if let (Some(digest), Some(api_version)) = (digests.get(key), api_version) {
                settled.settle(key, &Identity::of_value(live), api_version, digest);
            }
        }
        unchanged
    }

    fn still_unchanged(&self, key: &ObjectKey, live: &Identity, api_version: &str) -> bool {
        let Some((settled, digests)) = &self.settled else {
            return false;
        };
        let Some(digest) = digests.get(key) else {
            return false;
        };
        let still = settled.still(key, live, api_version, digest);
        if still {
            settled.settle(key, live, api_version, digest);
        }
        still
    }

    fn keep(&self, key: &ObjectKey) -> bool {
        needed_after_apply(key)
    }
}

/// The report as planned: changes, planning errors, guard-kept prunes.
fn base_report(command: Mode, opts: &EngineOptions, plan: &Plan) -> RunReport {
    let mut report = RunReport {
        command,
        commit: opts.commit.clone(),
        signed_by: opts.signed_by.clone(),
        cluster: opts.cluster_name.clone(),
        dry_run: opts.dry_run,
        changes: plan.changes.clone(),
        ..RunReport::default()
    };
    for (key, error) in &plan.errors {
        super::log_object_error(key, error);
        report.outcomes.insert(
            key.clone(),
            Outcome {
                error: Some(error.clone()),
                ..Outcome::default()
            },
        );
    }
    for (key, reason) in &plan.kept {
        tracing::warn!("not pruning {key}: {reason}");
        report.outcomes.insert(
            key.clone(),
            Outcome {
                skipped: Some(reason.clone()),
                ..Outcome::default()
            },
        );
    }
    report
}

/// `tend diff`: plan and report, writing nothing.
pub async fn diff(
    session: &Session,
    desired: Vec<Object>,
    opts: &EngineOptions,
    kinds: &tend_kinds::KindsContext,
    ahead: Option<lists::ReadAhead>,
) -> Result<RunReport, EngineError> {
    let started = Instant::now();
    let (prepared, hooks) = prepare_site(session, desired, opts)?;
    // Every desired object is prepared, or preparing failed.
    let count = prepared.len();
    let planned = observe_and_plan(session, (&prepared, &hooks), opts, true, ahead).await?;
    let mut report = base_report(Mode::Diff, opts, &planned.plan);
    let (prune, observed) = (&planned.plan.prune, &planned.observed);
    let tenants = (prune, &observed.recorded.writers);
    report
        .errors
        .extend(prune::tenant_refusals(session, tenants, &observed.live, opts).await);
    waves::describe(&mut report, &prepared, &hooks, &planned.plan, None);
    tend_kinds::add_reload_changes(&mut report, kinds);
    if let Err(message) =
        planner::check_prune_limits(planned.plan.prune.len(), count, opts.prune_limits)
    {
        report.errors.push(message);
    }
    report.duration = started.elapsed();
    Ok(report)
}

/// The hooks taken out of the desired objects, and the rest checked against discovery and
/// ready to plan.
fn prepare_site(
    session: &Session,
    desired: Vec<Object>,
    opts: &EngineOptions,
) -> Result<(Vec<Prepared>, Vec<hooks::Hook>), EngineError> {
    let (desired, hooks) = hooks::take(&session.resources, desired, opts)?;
    let prepared = prepare(
        &session.resources,
        desired,
        &opts.default_namespace,
        &opts.applyset_id(),
    )?;
    Ok((prepared, hooks))
}

/// `tend apply`: lock, plan, apply, prune, record.
pub async fn apply(
    session: &Session,
    desired: Vec<Object>,
    opts: &EngineOptions,
    kinds: &tend_kinds::KindsContext,
    clock: Arc<dyn Clock>,
) -> Result<RunReport, EngineError> {
    let started = Instant::now();
    // Validate against discovery before the first write (the lock and state namespace are writes).
    let (prepared, hooks) = prepare_site(session, desired, opts)?;
    let site = (&prepared[..], &hooks[..]);
    if opts.dry_run {
        let planned = observe_and_plan(session, site, opts, true, None).await?;
        let mut report = apply_planned(session, site, planned, opts, kinds, &*clock).await?;
        report.duration = started.elapsed();
        return Ok(report);
    }
    let (lock, planned) = lock_and_plan(session, site, opts, clock.clone()).await?;
    let result = match planned {
        Ok(planned) => apply_planned(session, site, planned, opts, kinds, &*clock).await,
        Err(err) => Err(err),
    };
    if let Err(err) = lock.release().await {
        tracing::warn!("cannot release the lock: {err}");
    }
    let mut report = result?;
    report.duration = started.elapsed();
    Ok(report)
}

/// Take the run's lock and plan. A lock that is free is taken while the LISTs run (see
/// [`lock`]); one that is held is waited for, and the cluster observed once it is ours.
async fn lock_and_plan(
    session: &Session,
    site: (&[Prepared], &[hooks::Hook]),
    opts: &EngineOptions,
    clock: Arc<dyn Clock>,
) -> Result<(lock::Lock, Result<Planned, EngineError>), EngineError> {
    let sighting = lock::look(session, &opts.state_namespace, &opts.applyset).await?;
    if sighting.is_free(clock.now()) {
        let (taken, planned) = tokio::join!(
            lock::take_free(&sighting, clock.clone()),
            observe_and_plan(session, site, opts, false, None)
        );
        match taken {
            Ok(lock) => return Ok((lock, planned)),
            Err(lock::Missed::Failed(err)) => return Err(err.into()),
            // Another run took it first: what was observed may be mid-way through its writes.
            Err(lock::Missed::Raced) => {}
        }
    }
    let lock = lock::wait_for(&sighting, opts.lock_timeout, clock, &opts.interrupt).await?;
    let planned = observe_and_plan(session, site, opts, false, None).await;
    Ok((lock, planned))
}

/// Apply a plan (under the lock), or report it (`--dry-run`, planned with dry runs of
/// everything; nothing below is written then). The steps: widen the parent → the stages,
/// wave by wave → tend's kinds → prune → narrow the parent and record the run → wait.
async fn apply_planned(
    session: &Session,
    (prepared, hooks): (&[Prepared], &[hooks::Hook]),
    planned: Planned,
    opts: &EngineOptions,
    kinds: &tend_kinds::KindsContext,
    clock: &dyn Clock,
) -> Result<RunReport, EngineError> {
    let Planned {
        observed,
        plan,
        rewritten,
    } = planned;
    let prepared = rewritten.as_deref().unwrap_or(prepared);
    let mut report = base_report(Mode::Apply, opts, &plan);
    tend_kinds::add_reload_changes(&mut report, kinds);
    let limits = planner::check_prune_limits(plan.prune.len(), prepared.len(), opts.prune_limits);
    if opts.dry_run {
        waves::describe(&mut report, prepared, hooks, &plan, Some("--dry-run"));
        if let Err(message) = limits {
            report.errors.push(message);
        }
        return Ok(report);
    }
    if let Some(stop) = opts.interrupt.stopped() {
        // Stopped before the first write: the cluster and the parent are as they were.
        interrupted::not_started(&mut report, stop);
        return Ok(report);
    }
    let desired_keys: Vec<ObjectKey> = prepared.iter().map(|p| p.key.clone()).collect();
    let run = writes::Applying {
        session,
        site: (prepared, hooks),
        plan: &plan,
        observed: &observed,
        opts,
    };
    let (applied, wave_stopped) = run.write_stages(&desired_keys, &mut report).await?;
    run.after_stages(&applied, kinds, clock, &mut report).await;
    let still_members = match limits {
        _ if wave_stopped => plan.prune.iter().cloned().collect(),
        Err(message) => {
            tracing::error!("{message}");
            report.errors.push(message);
            plan.prune.iter().cloned().collect()
        }
        Ok(()) => run.prune(&mut report).await,
    };
    run.record(desired_keys, still_members, clock, &mut report)
        .await;
    if !opts.interrupt.is_set() && !wave_stopped {
        match opts.wait {
            true => run.wait(&applied, &mut report).await,
            false => run.wait_for_units(&applied, &mut report).await,
        }
    }
    Ok(report)
}
