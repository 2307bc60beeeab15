//! Observe: what the cluster holds for this run. The ApplySet parent (what earlier runs
//! recorded), then LISTs of every (kind, namespace) the desired set or the recorded inventory
//! touches; and, for objects the fast path cannot settle, server-side dry runs.

use super::engine::{EngineError, EngineOptions};
use super::prepare::Prepared;
use super::progress::{self, Tick};
use crate::cluster::{self, key_of, Resource, Session};
use crate::plan::inventory::{self, GroupKind, Inventory};
use crate::plan::planner::DryRun;
use crate::render::object::ObjectKey;
use futures::stream::{self, StreamExt};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What the cluster holds for this run.
#[derive(Debug, Default)]
pub struct Observed {
    /// Whether the ApplySet parent existed before this run.
    pub has_parent: bool,
    /// The inventory the parent records.
    pub recorded: Inventory,
    /// Live objects from the LISTs, by key.
    pub live: HashMap<ObjectKey, Value>,
}

/// One LIST: a resource in a namespace (or cluster-wide), all objects or members only.
struct Scan {
    resource: Resource,
    namespace: Option<String>,
    unfiltered: bool,
}

/// Read the parent and LIST everything the run may compare with or prune.
pub async fn observe(
    session: &Session,
    prepared: &[Prepared],
    opts: &EngineOptions,
    applyset_id: &str,
) -> Result<Observed, EngineError> {
    let secret = session.core("Secret")?;
    let parent = cluster::get(
        &session.client,
        &secret,
        Some(&opts.state_namespace),
        &opts.applyset,
    )
    .await?;
    let recorded = parent
        .as_ref()
        .map(Inventory::from_parent)
        .unwrap_or_default();

    // Which LISTs: every (kind, namespace) with desired objects, unfiltered; every recorded
    // group-kind in every recorded namespace, by label.
    let mut scans: BTreeMap<(GroupKind, Option<String>), Scan> = BTreeMap::new();
    for p in prepared {
        let Some(resource) = &p.resource else {
            continue;
        };
        let gk = GroupKind::new(&resource.api.group, &resource.api.kind);
        let ns = p.object.namespace().map(str::to_string);
        scans.insert(
            (gk, ns.clone()),
            Scan {
                resource: resource.clone(),
                namespace: ns,
                unfiltered: true,
            },
        );
    }
    let mut namespaces: BTreeSet<String> = recorded.namespaces.clone();
    namespaces.insert(opts.state_namespace.clone());
    for gk in &recorded.group_kinds {
        let Some(resource) = session.resources.any_version(&gk.group, &gk.kind) else {
            tracing::warn!(
                "the cluster no longer serves {}; its members cannot be pruned",
                gk.encode()
            );
            continue;
        };
        let targets: Vec<Option<String>> = if resource.namespaced {
            namespaces.iter().cloned().map(Some).collect()
        } else {
            vec![None]
        };
        for ns in targets {
            scans.entry((gk.clone(), ns.clone())).or_insert(Scan {
                resource: resource.clone(),
                namespace: ns,
                unfiltered: false,
            });
        }
    }
    let selector = format!("{}={}", inventory::PART_OF_LABEL, applyset_id);
    let lists = stream::iter(scans.into_values().map(|scan| {
        let client = session.client.clone();
        let selector = selector.clone();
        async move {
            let sel = (!scan.unfiltered).then_some(selector.as_str());
            match cluster::list(&client, &scan.resource, scan.namespace.as_deref(), sel).await {
                Ok(items) => Ok(items),
                // A namespace that does not exist (yet, or any more) holds nothing.
                Err(err) if err.code() == Some(404) => Ok(Vec::new()),
                Err(err) => Err(err),
            }
        }
    }))
    .buffer_unordered(opts.concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    let mut live = HashMap::new();
    for items in lists {
        for item in items? {
            live.insert(key_of(&item), item);
        }
    }
    Ok(Observed {
        has_parent: parent.is_some(),
        recorded,
        live,
    })
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
                && !live.contains_key(&p.object.key())
        })
        .map(|p| p.object.name())
        .collect();
    let items: Vec<(&Prepared, &Resource)> = prepared
        .iter()
        .filter(|p| targets.contains(&p.object.key()))
        .filter_map(|p| Some((p, p.resource.as_ref()?)))
        .collect();
    let bar = progress::bar(opts.progress, items.len(), "dry run");
    let results = stream::iter(items.into_iter().map(|(p, resource)| {
        let client = session.client.clone();
        let bar = bar.clone();
        async move {
            let _tick = Tick(&bar);
            let result = cluster::apply(
                &client,
                resource,
                &p.object.value,
                crate::FIELD_MANAGER,
                opts.force_conflicts,
                true,
            )
            .await;
            (p, result)
        }
    }))
    .buffer_unordered(opts.concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    results
        .into_iter()
        .map(|(p, result)| {
            let key = p.object.key();
            let answer = match result {
                Ok(after) => DryRun::Applied(after),
                Err(err)
                    if err.code() == Some(404)
                        && !live.contains_key(&key)
                        && p.object
                            .namespace()
                            .is_some_and(|ns| new_namespaces.contains(ns)) =>
                {
                    DryRun::NamespaceNotYetCreated
                }
                Err(err) => DryRun::Failed(err.to_string()),
            };
            (key, answer)
        })
        .collect()
}
