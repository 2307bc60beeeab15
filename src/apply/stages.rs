//! Apply the planned creates and updates stage by stage (CRDs, then Namespaces, then the
//! rest; README "Reconcile (diff and apply)"), with bounded concurrency within a stage. One object failing does not stop
//! independent objects.

use super::established;
use super::interrupted;
use super::options::{EngineError, EngineOptions};
use super::prepare::Prepared;
use super::progress::{self, Tick};
use super::replace::{apply_or_replace, Written};
use crate::cluster::{self, Resource, Session};
use crate::object::{split_api_version, ObjectKey};
use crate::plan::diff::scrub_message;
use crate::plan::drift;
use crate::plan::normalize::normalize;
use crate::plan::planner::Plan;
use crate::plan::Action;
use crate::render::builtin::{stage_of, Stage};
use crate::report::run::{Outcome, RunReport};
use futures::stream::{self, StreamExt};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

/// What the stages wrote.
#[derive(Debug, Default)]
pub struct Applied {
    /// Per object: how long it took, and its error if it failed.
    pub outcomes: BTreeMap<ObjectKey, Outcome>,
    /// The server's result for objects applied without a dry run, normalized.
    pub pending_results: HashMap<ObjectKey, Value>,
    /// Objects deleted and created again, with the reason.
    pub replaced: BTreeMap<ObjectKey, String>,
    /// tend's own objects as the server returned them (their uids, for ownerReferences).
    pub tend_objects: HashMap<ObjectKey, Value>,
    /// Resources of kinds whose CRD this run created (not known when preparing), for `--wait`.
    pub served: HashMap<ObjectKey, Resource>,
}

impl Applied {
    /// Add what a later part of the run (a wave) wrote.
    pub fn merge(&mut self, from: Applied) {
        self.outcomes.extend(from.outcomes);
        self.pending_results.extend(from.pending_results);
        self.replaced.extend(from.replaced);
        self.tend_objects.extend(from.tend_objects);
        self.served.extend(from.served);
    }
}

/// Apply every create and update of `plan` that has no planning error.
pub async fn apply_stages(
    session: &Session,
    prepared: &[Prepared],
    plan: &Plan,
    existing: &BTreeSet<ObjectKey>,
    opts: &EngineOptions,
) -> Result<Applied, EngineError> {
    // ImmortalContainer pods that exist and must be replaced (deleted, then created).
    let recreate: BTreeSet<&ObjectKey> = plan
        .recreate
        .keys()
        .filter(|k| existing.contains(*k))
        .collect();
    // Replaces the plan already knows of (a dry run was refused as immutable).
    let planned: HashMap<&ObjectKey, &str> = plan
        .changes
        .iter()
        .filter(|c| c.action == Action::Replace)
        .filter_map(|c| Some((&c.key, c.reason.as_deref()?)))
        .collect();
    let how = How {
        recreate: &recreate,
        planned: &planned,
        opts,
    };
    let mut resources = session.resources.clone();
    let mut applied = Applied::default();
    for (stage, items) in by_stage(prepared, plan) {
        let count = items.len();
        let bar = progress::bar(opts.progress, count, &format!("{stage:?}").to_lowercase());
        let results = stream::iter(items.into_iter().map(|p| {
            // A tenant's object is written as its ServiceAccount.
            let client = session.writer(&p.key).map_err(|e| e.to_string());
            let bar = bar.clone();
            // Kinds whose CRD was created in an earlier stage of this run are served now.
            let resource = p.resource.clone().or_else(|| {
                let (g, v) = split_api_version(p.object.api_version());
                resources.get(g, v, p.object.kind()).cloned()
            });
            let how = &how;
            async move {
                let _tick = Tick(&bar);
                let started = Instant::now();
                let write = async { how.write(client?, p, resource.as_ref()).await };
                let result = interrupted::write(&opts.interrupt, write).await;
                (p, resource, started.elapsed(), result)
            }
        }))
        .buffer_unordered(opts.concurrency.max(1))
        .collect::<Vec<_>>()
        .await;
        let (failed, crds) = record_results(&mut applied, plan, results);
        tracing::info!(
            "applied {} in stage {stage:?}{}",
            crate::text::count(count - failed, "object"),
            if failed > 0 {
                format!(", {failed} failed")
            } else {
                String::new()
            }
        );
        if stage == Stage::Crds && !crds.is_empty() && !opts.interrupt.is_set() {
            established::established(session, &crds, opts.timeout).await;
            resources = cluster::discover(&session.client).await?;
        }
    }
    Ok(applied)
}

/// The objects to write, by stage: created, updated or replaced, without a planning error.
fn by_stage<'p>(prepared: &'p [Prepared], plan: &Plan) -> BTreeMap<Stage, Vec<&'p Prepared>> {
    let by_key: HashMap<ObjectKey, &Prepared> =
        prepared.iter().map(|p| (p.key.clone(), p)).collect();
    let mut stages: BTreeMap<Stage, Vec<&Prepared>> = BTreeMap::new();
    for c in &plan.changes {
        if matches!(c.action, Action::Create | Action::Update | Action::Replace)
            && !plan.errors.contains_key(&c.key)
        {
            if let Some(p) = by_key.get(&c.key) {
                stages
                    .entry(stage_of(&c.key.group, &c.key.kind))
                    .or_default()
                    .push(p);
            }
        }
    }
    stages
}

/// How each object is written: pods to recreate, replaces already planned.
struct How<'a> {
    recreate: &'a BTreeSet<&'a ObjectKey>,
    planned: &'a HashMap<&'a ObjectKey, &'a str>,
    opts: &'a EngineOptions,
}

impl How<'_> {
    async fn write(
        &self,
        client: kube::Client,
        p: &Prepared,
        resource: Option<&Resource>,
    ) -> Result<Written, String> {
        match resource {
            Some(r) if self.recreate.contains(&p.key) => crate::apply::tend_kinds::recreate_pod(
                &client,
                r,
                &p.object.value,
                self.opts.timeout,
            )
            .await
            .map(|value| Written {
                value,
                replaced: None,
            })
            .map_err(|e| e.to_string()),
            Some(r) => {
                let key = p.key.clone();
                let planned = self.planned.get(&key).copied();
                apply_or_replace(&client, r, &p.object.value, planned, self.opts).await
            }
            None => Err(format!(
                "the cluster does not serve {} {} (its CRD did not become established)",
                p.object.api_version(),
                p.object.kind()
            )),
        }
    }
}

type WriteResult<'p> = (
    &'p Prepared,
    Option<Resource>,
    std::time::Duration,
    Result<Written, String>,
);

/// Fold one stage's results into `applied`. Returns how many failed, and the CRDs written.
fn record_results(
    applied: &mut Applied,
    plan: &Plan,
    results: Vec<WriteResult<'_>>,
) -> (usize, Vec<String>) {
    let mut failed = 0;
    let mut crds = Vec::new();
    for (p, resource, duration, result) in results {
        let key = p.key.clone();
        let error = match result {
            Ok(Written { value, replaced }) => {
                tracing::debug!("applied {key}");
                if let Some(reason) = replaced {
                    applied.replaced.insert(key.clone(), reason);
                }
                if plan.pending.contains(&key) {
                    applied
                        .pending_results
                        .insert(key.clone(), normalize(&value));
                }
                if key.group == crate::GROUP {
                    applied.tend_objects.insert(key.clone(), value.clone());
                }
                if key.kind == "CustomResourceDefinition" {
                    crds.push(key.name.clone());
                }
                if let (None, Some(resource)) = (&p.resource, resource) {
                    applied.served.insert(key.clone(), resource);
                }
                None
            }
            Err(error) => {
                failed += 1;
                let error = scrub_message(&error, &p.object.value, &p.object.origin.sealed);
                super::log_object_error(&key, &error);
                Some(error)
            }
        };
        let outcome = Outcome {
            duration,
            error,
            ..Outcome::default()
        };
        applied.outcomes.insert(key, outcome);
    }
    (failed, crds)
}

/// Objects applied without a dry run: the diff is live vs what the server returned (unchanged
/// when equal), the desired object when the apply failed; replaced objects are replaces.
pub fn changes_of_applies_without_dry_run(
    report: &mut RunReport,
    plan: &Plan,
    applied: &Applied,
    prepared: &[Prepared],
    live: &HashMap<ObjectKey, Value>,
) {
    for c in report.changes.iter_mut() {
        if let Some(reason) = applied.replaced.get(&c.key) {
            c.action = Action::Replace;
            c.reason = Some(reason.clone());
        }
        if !plan.pending.contains(&c.key) {
            continue;
        }
        match applied.pending_results.get(&c.key) {
            Some(after) => {
                if c.before.as_ref() == Some(after) && c.action != Action::Replace {
                    c.action = Action::Unchanged;
                } else if let (Some(live), Some(before)) = (live.get(&c.key), &c.before) {
                    // The live object read before the apply still has its managedFields.
                    let sealed = c.origin.as_ref().map_or(&[][..], |o| &o.sealed[..]);
                    c.drift = drift::drift(live, before, after, crate::FIELD_MANAGER, sealed);
                }
                c.after = Some(after.clone());
            }
            None => {
                c.after = c.before.clone().or_else(|| {
                    prepared
                        .iter()
                        .find(|p| p.key.clone() == c.key)
                        .map(|p| normalize(&p.object.value))
                });
            }
        }
    }
}
