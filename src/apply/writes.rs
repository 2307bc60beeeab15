//! The writing steps of a real apply, in order, once planned under the lock: widen the
//! parent → the stages, wave by wave → tend's kinds → prune → narrow the parent and record
//! the run → wait. [`super::engine`] calls them in that order.

use super::hooks;
use super::observe::Observed;
use super::options::{EngineError, EngineOptions};
use super::parent::{self, inventory_of, Record};
use super::prepare::Prepared;
use super::{interrupted, lock::Clock, prune, stages, tend_kinds, wait, waves};
use crate::cluster::Session;
use crate::object::ObjectKey;
use crate::plan::inventory::Writer;
use crate::plan::planner::Plan;
use crate::report::run::RunReport;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What the steps of a real apply share.
pub(super) struct Applying<'a> {
    pub session: &'a Session,
    pub site: (&'a [Prepared], &'a [hooks::Hook]),
    pub plan: &'a Plan,
    pub observed: &'a Observed,
    pub opts: &'a EngineOptions,
}

impl Applying<'_> {
    /// Widen the parent to every desired object, then apply the stages wave by wave (with
    /// their hooks). Returns what was applied and whether a wave stopped the run.
    pub async fn write_stages(
        &self,
        desired_keys: &[ObjectKey],
        report: &mut RunReport,
    ) -> Result<(stages::Applied, bool), EngineError> {
        let (opts, observed) = (self.opts, self.observed);
        let mut desired_inventory = inventory_of(desired_keys.iter().cloned());
        desired_inventory.writers = self.tenant_writers(desired_keys.iter());
        let id = opts.applyset_id();
        let (has_parent, recorded) = (observed.has_parent, &observed.recorded);
        parent::widen(
            self.session,
            opts,
            &id,
            has_parent,
            recorded,
            &desired_inventory,
        )
        .await?;
        let existing: BTreeSet<ObjectKey> = observed.existing.iter().cloned().collect();
        let (prepared, hooks) = self.site;
        let (applied, wave_stopped) = waves::apply_waves(
            self.session,
            prepared,
            hooks,
            self.plan,
            &existing,
            opts,
            report,
        )
        .await?;
        report.outcomes.extend(applied.outcomes.clone());
        Ok((applied, wave_stopped))
    }

    /// tend's kinds: ownerReferences for objects whose owner was created just now, status of
    /// every tend object, config-hash reloads of opted-in live workloads; then the changes
    /// of objects applied without a dry run.
    pub async fn after_stages(
        &self,
        applied: &stages::Applied,
        kinds: &tend_kinds::KindsContext,
        clock: &dyn Clock,
        report: &mut RunReport,
    ) {
        let prepared = self.site.0;
        let live_desired: HashMap<ObjectKey, Value> = prepared
            .iter()
            .map(|p| p.key.clone())
            .filter(needed_after_apply)
            .filter_map(|k| Some((k.clone(), self.observed.live.get(&k)?.clone())))
            .collect();
        // A stopped run writes no status and reloads nothing; prunes below do not start.
        if !self.opts.interrupt.is_set() {
            let stages = tend_kinds::AfterStages {
                prepared,
                live_desired: &live_desired,
                recreate: &self.plan.recreate,
                kinds,
                applied_tend: &applied.tend_objects,
            };
            let errors = tend_kinds::after_apply(self.session, stages, report, clock).await;
            report.errors.extend(errors);
        }
        let live = &self.observed.live;
        stages::changes_of_applies_without_dry_run(report, self.plan, applied, prepared, live);
    }

    /// Prune, in reverse stage order, after everything else. Returns the members that
    /// still exist.
    pub async fn prune(&self, report: &mut RunReport) -> Vec<ObjectKey> {
        let (live, writers) = (&self.observed.live, &self.observed.recorded.writers);
        let targets = (&self.plan.prune, writers);
        let pruned = prune::prune(self.session, targets, live, self.opts).await;
        report.outcomes.extend(pruned.outcomes);
        pruned.still_members
    }

    /// Narrow the parent to what is desired plus members that still exist, and record the
    /// run (and a stop, if one came).
    pub async fn record(
        &self,
        desired_keys: Vec<ObjectKey>,
        still_members: Vec<ObjectKey>,
        clock: &dyn Clock,
        report: &mut RunReport,
    ) {
        let kept: Vec<ObjectKey> = self.plan.kept.keys().cloned().collect();
        // Members no longer desired stay their tenant's until they are gone.
        let recorded = &self.observed.recorded.writers;
        let mut writers: BTreeMap<ObjectKey, Writer> = kept
            .iter()
            .chain(&still_members)
            .filter_map(|k| Some((k.clone(), recorded.get(k)?.clone())))
            .collect();
        writers.extend(self.tenant_writers(desired_keys.iter()));
        let mut narrowed = inventory_of(desired_keys.into_iter().chain(kept).chain(still_members));
        narrowed.writers = writers;
        let stopped = self.opts.interrupt.stopped().map(|stop| {
            let account = interrupted::account(report, stop);
            tracing::error!("{account}");
            report.errors.push(account.clone());
            account
        });
        let record = Record {
            commit: self.opts.commit.as_deref(),
            signed_by: self.opts.signed_by.as_deref(),
            time: clock.now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            summary: report.summary(),
            failed: report.failed(),
            drifted: report
                .changes
                .iter()
                .filter(|c| !c.drift.is_empty())
                .count(),
            errors: report.errors.len(),
            interrupted: stopped.as_deref(),
        };
        let id = self.opts.applyset_id();
        let recorded = parent::narrow_and_record(self.session, self.opts, &id, &narrowed, record);
        if let Err(err) = recorded.await {
            let message = format!("cannot record the run on the ApplySet parent: {err}");
            tracing::error!("{message}");
            report.errors.push(message);
        }
    }

    /// The desired objects a tenant writes, with its ServiceAccount.
    fn tenant_writers<'k>(
        &self,
        keys: impl Iterator<Item = &'k ObjectKey>,
    ) -> BTreeMap<ObjectKey, Writer> {
        keys.filter_map(|k| {
            let account = self.session.writer_account(k)?;
            Some((k.clone(), (account.namespace, account.name)))
        })
        .collect()
    }

    /// `--wait`: until what was applied is ready, or a stop.
    pub async fn wait(&self, applied: &stages::Applied, report: &mut RunReport) {
        let (session, prepared, opts) = (self.session, self.site.0, self.opts);
        let stopped = tokio::select! {
            _ = wait::until_ready(session, prepared, &applied.served, report, opts) => None,
            _ = opts.interrupt.requested() => opts.interrupt.stopped(),
        };
        stopped_waiting(stopped, report);
    }

    /// Without `--wait`: what the units of the last wave ask for (`unit_waits`), once
    /// everything is applied and pruned, as their controllers check health after their
    /// prune; or a stop.
    pub async fn wait_for_units(&self, applied: &stages::Applied, report: &mut RunReport) {
        let (session, prepared, opts) = (self.session, self.site.0, self.opts);
        if opts.unit_waits.units.is_empty() {
            return;
        }
        let objects: Vec<_> = prepared.iter().map(|p| &p.object).collect();
        let awaited = opts.unit_waits.at_end(&objects, self.plan, opts.timeout);
        if awaited.is_empty() {
            return;
        }
        let why = "what the units wait for";
        let served = &applied.served;
        let ready = wait::ready_awaited(session, awaited, prepared, served, report, opts, why);
        let stopped = tokio::select! {
            (statuses, errors) = ready => {
                report.waits.extend(statuses);
                report.errors.extend(errors);
                None
            }
            _ = opts.interrupt.requested() => opts.interrupt.stopped(),
        };
        stopped_waiting(stopped, report);
    }
}

fn stopped_waiting(stopped: Option<crate::interrupt::Stop>, report: &mut RunReport) {
    if let Some(stop) = stopped {
        report.errors.push(format!(
            "the run was stopped by {} while waiting for readiness (everything was applied)",
            stop.signal
        ));
    }
}

/// tend's kinds need their own objects (status), their mirrors' StatefulSets and their pods
/// after applying; nothing else is kept (memory at 10k objects).
pub(super) fn needed_after_apply(key: &ObjectKey) -> bool {
    key.group == crate::GROUP
        || (key.group == "apps" && key.kind == "StatefulSet")
        || (key.group.is_empty() && key.kind == "Pod")
}
