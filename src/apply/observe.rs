//! Observe: what the cluster holds for this run. The ApplySet parent (what earlier runs
//! recorded); label-selected LISTs of the members of every kind the desired set or the
//! recorded inventory touches (reads scale with what tend manages, not with the cluster);
//! for desired objects that are not members yet, nothing where this run creates their
//! namespace, else a GET each or one metadata-only LIST per kind and namespace; and, for
//! objects the fast path cannot settle, server-side dry runs.

use super::lists::{covered, read_parent, scans, ReadAhead, Scan};
use super::non_members;
use super::options::{EngineError, EngineOptions};
use super::prepare::Prepared;
use super::progress::{self, Tick};
use crate::cluster::{self, key_of, ListQuery, Listed, Resource, Session};
use crate::object::{Identity, ObjectKey};
use crate::plan::diff::scrub_message;
use crate::plan::inventory::{self, GroupKind, Inventory};
use crate::plan::planner::DryRun;
use futures::stream::{self, StreamExt};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// What the cluster holds for this run.
#[derive(Debug, Default)]
pub struct Observed {
    /// Whether the ApplySet parent existed before this run.
    pub has_parent: bool,
    /// The inventory the parent records.
    pub recorded: Inventory,
    /// Live objects, by key: members no longer desired, desired objects that may change, and
    /// those the caller asked to keep. Unchanged objects are not kept (memory at 10k objects).
    pub live: HashMap<ObjectKey, Value>,
    /// Desired objects that exist and that the fast path settled as unchanged.
    pub unchanged: HashSet<ObjectKey>,
    /// Desired objects that exist (kept in `live` or settled in `unchanged`).
    pub existing: HashSet<ObjectKey>,
    /// How many of `unchanged` an earlier run settled in the very version listed now, so
    /// they were not read past their identity (`plan::settled`).
    pub settled_earlier: usize,
    /// A LIST item that is not a JSON object after all (never seen from a server).
    unreadable: Option<String>,
}

/// How observation treats a desired object's live state.
pub trait LiveFilter: Sync {
    /// Whether the live object already is as desired (the fast path).
    fn unchanged(&self, key: &ObjectKey, live: &Value) -> bool;
    /// Whether an earlier run found this very version of the object (listed in
    /// `api_version`) as desired now: unchanged without reading it further.
    fn still_unchanged(&self, key: &ObjectKey, live: &Identity, api_version: &str) -> bool;
    /// Whether the live object is needed after planning even when unchanged.
    fn keep(&self, key: &ObjectKey) -> bool;
}

/// Read the parent; LIST the members of every kind the run desires or recorded, with the
/// ApplySet label selector (per kind across namespaces when allowed, else per namespace);
/// GET desired objects that are not members yet. What `ahead` read already is not read again.
pub async fn observe(
    session: &Session,
    prepared: &[Prepared],
    opts: &EngineOptions,
    applyset_id: &str,
    filter: &dyn LiveFilter,
    ahead: Option<ReadAhead>,
) -> Result<Observed, EngineError> {
    let (parent, ahead_lists) = match ahead {
        Some(ahead) => (ahead.parent, ahead.lists),
        None => (read_parent(session, opts).await?, Vec::new()),
    };
    let recorded = parent
        .as_ref()
        .map(Inventory::from_parent)
        .unwrap_or_default();
    let mut kinds = kinds_to_list(session, prepared, &recorded);
    let ahead_lists = covered(&mut kinds, ahead_lists);
    let scans = scans(session, kinds, opts.concurrency).await;
    let desired: HashSet<ObjectKey> = prepared.iter().map(|p| p.key.clone()).collect();
    let observed = std::sync::Mutex::new(Observed {
        has_parent: parent.is_some(),
        recorded,
        ..Observed::default()
    });
    let take = |item: Value| {
        let key = key_of(&item);
        if let Ok(mut o) = observed.lock() {
            o.take(key, item, &desired, filter);
        }
    };
    let take_listed = |item: Listed, resource: &Resource| {
        if let Ok(mut o) = observed.lock() {
            o.take_listed(item, resource, &desired, filter);
        }
    };
    let selector = format!("{}={}", inventory::PART_OF_LABEL, applyset_id);
    list_members(session, &scans, &selector, &take_listed, opts.concurrency).await?;
    for (scan, items) in ahead_lists {
        for item in items {
            take_listed(item, &scan.resource);
        }
    }
    read_non_members(session, prepared, &observed, &take, opts.concurrency).await?;
    let observed = observed.into_inner().map_err(|_| poisoned())?;
    if let Some(problem) = &observed.unreadable {
        return Err(EngineError::Cluster(cluster::ClusterError::Config(
            problem.clone(),
        )));
    }
    if observed.settled_earlier > 0 {
        tracing::info!(
            "{} object(s) found as an earlier run left them (same uid and resourceVersion, same desired state): not read again",
            observed.settled_earlier
        );
    }
    Ok(observed)
}

/// Which kinds, in which namespaces: every desired kind where it is desired, and every
/// recorded kind in every recorded namespace (members may be anywhere the parent says).
fn kinds_to_list(
    session: &Session,
    prepared: &[Prepared],
    recorded: &Inventory,
) -> BTreeMap<GroupKind, (Resource, BTreeSet<String>)> {
    let mut kinds: BTreeMap<GroupKind, (Resource, BTreeSet<String>)> = BTreeMap::new();
    for p in prepared {
        let Some(resource) = &p.resource else {
            continue;
        };
        let entry = kinds
            .entry(GroupKind::new(&resource.api.group, &resource.api.kind))
            .or_insert_with(|| (resource.clone(), BTreeSet::new()));
        if let Some(ns) = p.object.namespace() {
            entry.1.insert(ns.to_string());
        }
    }
    for gk in &recorded.group_kinds {
        let Some(resource) = session.resources.any_version(&gk.group, &gk.kind) else {
            tracing::warn!(
                "the cluster no longer serves {}; its members cannot be pruned",
                gk.encode()
            );
            continue;
        };
        kinds
            .entry(gk.clone())
            .or_insert_with(|| (resource.clone(), BTreeSet::new()));
    }
    for (resource, namespaces) in kinds.values_mut() {
        if resource.namespaced {
            namespaces.extend(recorded.namespaces.iter().cloned());
        }
    }
    kinds
}

/// LIST the members, page by page, each item handed to `take` as it comes.
async fn list_members(
    session: &Session,
    scans: &[Scan],
    selector: &str,
    take: &(dyn Fn(Listed, &Resource) + Sync),
    concurrency: usize,
) -> Result<(), EngineError> {
    let lists = stream::iter(scans.iter().map(|scan| {
        let query = ListQuery {
            labels: Some(selector),
            stats: Some(&session.stats),
            ..ListQuery::default()
        };
        async move {
            let namespace = scan.namespace.as_deref();
            let resource = &scan.resource;
            let each = |item| take(item, resource);
            let result =
                cluster::list_listed(&session.client, resource, namespace, query, each).await;
            match result {
                // A namespace that does not exist (yet, or any more) holds nothing.
                Err(err) if err.code() == Some(404) => Ok(()),
                other => other,
            }
        }
    }))
    .buffer_unordered(concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    for result in lists {
        result?;
    }
    Ok(())
}

/// Desired objects that are not members: new, or made by someone else (adopted). Namespaces
/// first, so objects in a namespace this run creates need no read at all.
async fn read_non_members(
    session: &Session,
    prepared: &[Prepared],
    observed: &std::sync::Mutex<Observed>,
    take: &(dyn Fn(Value) + Sync),
    concurrency: usize,
) -> Result<(), EngineError> {
    let missing: Vec<&Prepared> = {
        let o = observed.lock().map_err(|_| poisoned())?;
        prepared
            .iter()
            .filter(|p| p.resource.is_some() && !o.existing.contains(&p.key))
            .collect()
    };
    let (namespaces, others): (Vec<&Prepared>, Vec<&Prepared>) = missing
        .into_iter()
        .partition(|p| p.object.group().is_empty() && p.object.kind() == "Namespace");
    for item in non_members::read(session, &namespaces, concurrency).await? {
        take(item);
    }
    let created_namespaces: HashSet<&str> = {
        let o = observed.lock().map_err(|_| poisoned())?;
        namespaces
            .iter()
            .filter(|p| !o.existing.contains(&p.key))
            .map(|p| p.object.name())
            .collect()
    };
    let others: Vec<&Prepared> = others
        .into_iter()
        .filter(|p| {
            !p.object
                .namespace()
                .is_some_and(|ns| created_namespaces.contains(ns))
        })
        .collect();
    for item in non_members::read(session, &others, concurrency).await? {
        take(item);
    }
    Ok(())
}

fn poisoned() -> EngineError {
    EngineError::Cluster(crate::cluster::ClusterError::Config(
        "internal error: a LIST handler panicked".into(),
    ))
}

impl Observed {
    /// Record one LIST item: settled by an earlier run as it is now, or read in full and
    /// taken as any live object.
    fn take_listed(
        &mut self,
        item: Listed,
        resource: &Resource,
        desired: &HashSet<ObjectKey>,
        filter: &dyn LiveFilter,
    ) {
        let key = item.key(resource);
        if desired.contains(&key)
            && !filter.keep(&key)
            && filter.still_unchanged(&key, &item.identity, &resource.api.api_version)
        {
            self.existing.insert(key.clone());
            self.unchanged.insert(key);
            self.settled_earlier += 1;
            return;
        }
        match item.into_value(resource) {
            Ok(value) => self.take(key, value, desired, filter),
            Err(err) => {
                self.unreadable = Some(format!("cannot read {key} as the server listed it: {err}"))
            }
        }
    }

    /// Record one live object: settle it, keep it, or ignore it.
    fn take(
        &mut self,
        key: ObjectKey,
        item: Value,
        desired: &HashSet<ObjectKey>,
        filter: &dyn LiveFilter,
    ) {
        if desired.contains(&key) {
            self.existing.insert(key.clone());
            if filter.unchanged(&key, &item) {
                self.unchanged.insert(key.clone());
                if !filter.keep(&key) {
                    return;
                }
            }
        }
        self.live.insert(key, item);
    }
}

/// Server-side dry-run applies of `targets` (keys of prepared objects), concurrently.
pub async fn dry_runs(
    session: &Session,
    prepared: &[Prepared],
    targets: &BTreeSet<ObjectKey>,
    live: &HashMap<ObjectKey, Value>,
    opts: &EngineOptions,
) -> HashMap<ObjectKey, DryRun> {
    let new_namespaces: BTreeSet<&str> = prepared
        .iter()
        .filter(|p| {
            p.object.group().is_empty()
                && p.object.kind() == "Namespace"
                && !live.contains_key(&p.key)
        })
        .map(|p| p.object.name())
        .collect();
    let items: Vec<(&Prepared, &Resource)> = prepared
        .iter()
        .filter(|p| targets.contains(&p.key))
        .filter_map(|p| Some((p, p.resource.as_ref()?)))
        .collect();
    let bar = progress::bar(opts.progress, items.len(), "dry run");
    let results = stream::iter(items.into_iter().map(|(p, resource)| {
        // A tenant's object is dry-run as its ServiceAccount, as it will be written.
        let client = session.writer(&p.key);
        let bar = bar.clone();
        async move {
            let _tick = Tick(&bar);
            let result = match client {
                Ok(client) => {
                    cluster::apply(
                        &client,
                        resource,
                        &p.object.value,
                        crate::FIELD_MANAGER,
                        opts.force_conflicts,
                        true,
                    )
                    .await
                }
                Err(err) => Err(err),
            };
            (p, result)
        }
    }))
    .buffer_unordered(opts.concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    results
        .into_iter()
        .map(|(p, result)| (p.key.clone(), answer(p, result, live, &new_namespaces)))
        .collect()
}

/// What a dry run says of `p`: its result, a namespace this run creates first, or why the
/// server refused it (masked).
fn answer(
    p: &Prepared,
    result: Result<Value, cluster::ClusterError>,
    live: &HashMap<ObjectKey, Value>,
    new_namespaces: &BTreeSet<&str>,
) -> DryRun {
    match result {
        Ok(after) => DryRun::Applied(after),
        Err(err)
            if err.code() == Some(404)
                && !live.contains_key(&p.key)
                && p.object
                    .namespace()
                    .is_some_and(|ns| new_namespaces.contains(ns)) =>
        {
            DryRun::NamespaceNotYetCreated
        }
        Err(err) => {
            let scrub = |m: &str| scrub_message(m, &p.object.value, &p.object.origin.sealed);
            match err.immutable_cause() {
                Some(cause) => DryRun::Immutable {
                    cause,
                    server: scrub(err.server_message().unwrap_or_default()),
                },
                None => DryRun::Failed(scrub(&err.to_string())),
            }
        }
    }
}
