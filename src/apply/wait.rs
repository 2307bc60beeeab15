//! Waits until objects are ready in kstatus terms ([`crate::kstatus`]): `--wait` (README
//! "Wait (`tend apply --wait`)"), waves, and what units ask for ([`super::unit_waits`]).
//!
//! A wait polls with one label-selected LIST per kind and namespace (per kind when the run may
//! list cluster-wide), not a GET per object, so a poll costs O(kinds × namespaces) requests
//! however many objects there are. It stops at once when an object is Failed, when all are
//! Current, or when every object not ready has had its time (`--timeout`, or its unit's).

use super::options::EngineOptions;
use super::prepare::Prepared;
use super::progress;
use super::unit_waits::Awaited;
use crate::cluster::{self, key_of, ListQuery, Resource, Session};
use crate::kstatus::{self, Status};
use crate::object::{split_api_version, ObjectKey};
use crate::plan::inventory;
use crate::report::run::RunReport;
use crate::text::count;
use futures::stream::{self, StreamExt};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// Short, so a set that is ready already finishes well within a second.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// How often a log line says what is still awaited (CI logs, no progress bar).
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// One LIST per poll: a resource in a namespace (`None`: cluster-scoped, or across all
/// namespaces), and the objects it covers.
struct Group {
    resource: Resource,
    namespace: Option<String>,
    keys: Vec<ObjectKey>,
}

/// `--wait` after an apply: wait for every desired object that applied without error, except
/// those annotated `tend.dev/wait: skip` and tend's own kinds, and record each one's final
/// status in `report.waits`; a Failed object or the timeout becomes a run error (exit 2).
/// `served`: resources of kinds whose CRD this run created (unknown when preparing).
pub async fn until_ready(
    session: &Session,
    prepared: &[Prepared],
    served: &HashMap<ObjectKey, Resource>,
    report: &mut RunReport,
    opts: &EngineOptions,
) {
    let (statuses, errors) = ready(session, prepared.iter(), served, report, opts, "--wait").await;
    report.waits = statuses;
    report.errors.extend(errors);
}

/// Wait until `prepared` are ready as `--wait` does (the same objects left out), for `why`
/// (`--wait`, a wave): each one's last status and the errors, one per Failed object or one
/// for the timeout.
pub async fn ready<'a>(
    session: &Session,
    prepared: impl Iterator<Item = &'a Prepared>,
    served: &HashMap<ObjectKey, Resource>,
    report: &RunReport,
    opts: &EngineOptions,
    why: &str,
) -> (BTreeMap<ObjectKey, Status>, Vec<String>) {
    let mut targets = Vec::new();
    for p in prepared {
        let key = p.key.clone();
        if !awaitable(&key, Some(&p.object.value), report) {
            continue;
        }
        if let Some(resource) = p.resource.as_ref().or_else(|| served.get(&key)) {
            targets.push(Target {
                resource: resource.clone(),
                key,
                timeout: opts.timeout,
                limit: "--timeout".into(),
            });
        }
    }
    let selector = format!("{}={}", inventory::PART_OF_LABEL, opts.applyset_id());
    wait_for(session, targets, &selector, opts, why).await
}

/// Wait until `awaited` are ready, each within its own timeout (units' waits,
/// [`super::unit_waits`]); left out as [`ready`] leaves them out. An object outside the run
/// (named by a health check) is read by its kind; one of a kind the cluster does not serve
/// is an error.
pub async fn ready_awaited(
    session: &Session,
    awaited: Vec<Awaited>,
    prepared: &[Prepared],
    served: &HashMap<ObjectKey, Resource>,
    report: &RunReport,
    opts: &EngineOptions,
    why: &str,
) -> (BTreeMap<ObjectKey, Status>, Vec<String>) {
    let prepared: HashMap<ObjectKey, &Prepared> =
        prepared.iter().map(|p| (p.key.clone(), p)).collect();
    let mut targets = Vec::new();
    let mut unserved = Vec::new();
    for a in awaited {
        let own = prepared.get(&a.key);
        if !awaitable(&a.key, own.map(|p| &p.object.value), report) {
            continue;
        }
        let (group, version) = split_api_version(&a.api_version);
        let resource = own
            .and_then(|p| p.resource.as_ref())
            .or_else(|| served.get(&a.key))
            .or_else(|| session.resources.get(group, version, &a.key.kind));
        match resource {
            Some(resource) => targets.push(Target {
                resource: resource.clone(),
                key: a.key,
                timeout: a.timeout,
                limit: a.limit,
            }),
            None => unserved.push(format!(
                "{} cannot be checked: the cluster serves no {} {} ({}, {why})",
                a.key, a.api_version, a.key.kind, a.limit
            )),
        }
    }
    let selector = format!("{}={}", inventory::PART_OF_LABEL, opts.applyset_id());
    let (statuses, mut errors) = wait_for(session, targets, &selector, opts, why).await;
    errors.extend(unserved);
    (statuses, errors)
}

/// Whether an object is waited on: not one that failed to apply, not `tend.dev/wait: skip`,
/// not tend's own kinds (they get their status from this run, computed before applying:
/// waiting on it would wait for the next run; what they generate is waited on instead).
fn awaitable(key: &ObjectKey, object: Option<&Value>, report: &RunReport) -> bool {
    let failed = report.outcomes.get(key).is_some_and(|o| o.error.is_some());
    !(failed || object.is_some_and(kstatus::wait_skipped) || key.group == crate::GROUP)
}

/// One object to wait for: how to read it, how long, and what said so.
struct Target {
    resource: Resource,
    key: ObjectKey,
    timeout: Duration,
    limit: String,
}

/// Poll until every target is Current, one is Failed, or `opts.timeout` passes. Returns each
/// target's last status and the run errors.
async fn wait_for(
    session: &Session,
    targets: Vec<Target>,
    selector: &str,
    opts: &EngineOptions,
    why: &str,
) -> (BTreeMap<ObjectKey, Status>, Vec<String>) {
    if targets.is_empty() {
        return (BTreeMap::new(), Vec::new());
    }
    let started = Instant::now();
    let total = targets.len();
    let mut statuses: BTreeMap<ObjectKey, Status> = targets
        .iter()
        .map(|t| (t.key.clone(), Status::Unknown("not read yet".into())))
        .collect();
    let limits: BTreeMap<ObjectKey, (Duration, String)> = targets
        .iter()
        .map(|t| (t.key.clone(), (t.timeout, t.limit.clone())))
        .collect();
    let longest = limits.values().map(|(t, _)| *t).max().unwrap_or_default();
    let mut groups = group(session, targets);
    tracing::info!(
        "waiting up to {longest:?} for {} to be ready ({why})",
        count(total, "object")
    );
    let bar = progress::bar(opts.progress, total, "wait");
    let mut logged = Instant::now();
    loop {
        let polls = groups.iter().map(|g| poll(session, g, selector));
        let results: Vec<Vec<(ObjectKey, Status)>> = stream::iter(polls)
            .buffer_unordered(opts.concurrency.max(1))
            .collect()
            .await;
        statuses.extend(results.into_iter().flatten());
        // Current is final for this wait (kpt and Flux stop watching it too).
        for g in &mut groups {
            g.keys
                .retain(|k| !statuses.get(k).is_some_and(Status::is_current));
        }
        groups.retain(|g| !g.keys.is_empty());
        let ready = statuses.values().filter(|s| s.is_current()).count();
        bar.set_position(ready as u64);
        if let Some(failed) = failures(&statuses, why) {
            bar.finish_and_clear();
            for message in &failed {
                tracing::error!("{message}");
            }
            return (statuses, failed);
        }
        if groups.is_empty() {
            bar.finish_and_clear();
            let took = started.elapsed().as_secs_f64();
            tracing::info!("{} ready after {took:.1}s", count(total, "object"));
            return (statuses, Vec::new());
        }
        let left = time_left(&groups, &limits, started.elapsed());
        if left.is_zero() {
            bar.finish_and_clear();
            return timed_out(statuses, &limits, why);
        }
        if logged.elapsed() >= LOG_INTERVAL {
            logged = Instant::now();
            log_waiting(&statuses, ready);
        }
        tokio::time::sleep(POLL_INTERVAL.min(left)).await;
    }
}

/// Each object waits within its own limit: the wait ends when every one not ready has run
/// out of time.
fn time_left(
    groups: &[Group],
    limits: &BTreeMap<ObjectKey, (Duration, String)>,
    elapsed: Duration,
) -> Duration {
    let left = groups.iter().flat_map(|g| &g.keys);
    let left = left.map(|k| {
        limits
            .get(k)
            .map_or(Duration::ZERO, |l| l.0.saturating_sub(elapsed))
    });
    left.max().unwrap_or_default()
}

/// A CI log line: how many are ready, and one still awaited.
fn log_waiting(statuses: &BTreeMap<ObjectKey, Status>, ready: usize) {
    let total = statuses.len();
    if let Some((key, status)) = statuses.iter().find(|(_, s)| !s.is_current()) {
        tracing::info!(
            "{ready} of {total} objects ready; still waiting for {key} ({status}) and {} more",
            total - ready - 1
        );
    }
}

/// The failures among `statuses`, if any.
fn failures(statuses: &BTreeMap<ObjectKey, Status>, why: &str) -> Option<Vec<String>> {
    let failed: Vec<String> = statuses
        .iter()
        .filter(|(_, s)| s.is_failed())
        .map(|(k, s)| format!("{k} failed: {} ({why})", s.reason().unwrap_or_default()))
        .collect();
    (!failed.is_empty()).then_some(failed)
}

/// The run errors of a timeout: one per limit, counting the objects not yet Current; each
/// of them is logged with its status (and listed by the report, from the statuses).
fn timed_out(
    statuses: BTreeMap<ObjectKey, Status>,
    limits: &BTreeMap<ObjectKey, (Duration, String)>,
    why: &str,
) -> (BTreeMap<ObjectKey, Status>, Vec<String>) {
    let mut waiting: BTreeMap<(Duration, &str), (usize, usize)> = BTreeMap::new();
    for (key, status) in &statuses {
        let (timeout, limit) = &limits[key];
        let entry = waiting.entry((*timeout, limit.as_str())).or_default();
        entry.1 += 1;
        if !status.is_current() {
            entry.0 += 1;
            tracing::error!("{key} not ready within {timeout:?} ({limit}): {status}");
        }
    }
    let errors = waiting
        .into_iter()
        .filter(|(_, (late, _))| *late > 0)
        .map(|((timeout, limit), (late, all))| {
            format!(
                "{late} of {} not ready within {timeout:?} ({limit} of {why})",
                count(all, "object")
            )
        })
        .collect();
    (statuses, errors)
}

/// The LISTs one poll makes: targets grouped by resource and namespace, or by resource alone
/// when this run found it may list that resource cluster-wide (observe asked already).
fn group(session: &Session, targets: Vec<Target>) -> Vec<Group> {
    let mut groups: BTreeMap<(String, String, Option<String>), Group> = BTreeMap::new();
    for Target { resource, key, .. } in targets {
        let namespace = match session.known_list_right(&resource) {
            Some(true) => None,
            _ => key.namespace.clone(),
        };
        let id = (
            resource.api.group.clone(),
            resource.api.plural.clone(),
            namespace.clone(),
        );
        groups
            .entry(id)
            .or_insert_with(|| Group {
                resource,
                namespace,
                keys: Vec::new(),
            })
            .keys
            .push(key);
    }
    groups.into_values().collect()
}

/// One LIST of a group's members, and their statuses. An object the LIST does not return (not
/// labelled as a member: `tend.dev/apply: if-not-present` on an object that existed) is read
/// with a GET; a failed read is Unknown and polled again.
async fn poll(session: &Session, group: &Group, selector: &str) -> Vec<(ObjectKey, Status)> {
    let query = ListQuery {
        stats: Some(session.stats.as_ref()),
        labels: Some(selector),
        ..ListQuery::default()
    };
    let mut live: HashMap<ObjectKey, Value> = HashMap::new();
    // A set: one LIST may return thousands of members.
    let keys: HashSet<&ObjectKey> = group.keys.iter().collect();
    let wanted = |key: &ObjectKey| keys.contains(key);
    let listed = cluster::list_each(
        &session.client,
        &group.resource,
        group.namespace.as_deref(),
        query,
        |item| {
            let key = key_of(&item);
            if wanted(&key) {
                live.insert(key, item);
            }
        },
    )
    .await;
    if let Err(err) = listed {
        let why = format!("cannot read it: {err}");
        return group
            .keys
            .iter()
            .map(|k| (k.clone(), Status::Unknown(why.clone())))
            .collect();
    }
    let mut out = Vec::with_capacity(group.keys.len());
    for key in &group.keys {
        let status = match live.get(key) {
            Some(object) => kstatus::compute(object),
            None => read_one(session, &group.resource, key).await,
        };
        out.push((key.clone(), status));
    }
    out
}

/// The status of one object read with a GET.
async fn read_one(session: &Session, resource: &Resource, key: &ObjectKey) -> Status {
    let got = cluster::get(
        &session.client,
        resource,
        key.namespace.as_deref(),
        &key.name,
    )
    .await;
    match got {
        Ok(Some(mut object)) => {
            // GET answers carry apiVersion and kind already; set them anyway, as for LISTs.
            if let Some(map) = object.as_object_mut() {
                map.insert("apiVersion".into(), resource.api.api_version.clone().into());
                map.insert("kind".into(), resource.api.kind.clone().into());
            }
            kstatus::compute(&object)
        }
        Ok(None) => Status::InProgress("not found in the cluster".into()),
        Err(err) => Status::Unknown(format!("cannot read it: {err}")),
    }
}
