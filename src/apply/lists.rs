//! The member LISTs of a run: which ones ([`scans`]: per kind across namespaces, or per
//! namespace), and, for a diff, reading them ahead ([`read_ahead`]) while the desired state
//! still renders, so that [`super::observe`] has nothing left to read for what the previous
//! run recorded.

use super::options::{EngineError, EngineOptions};
use crate::cluster::{self, ListQuery, Listed, Resource, Session};
use crate::plan::inventory::{self, GroupKind, Inventory};
use futures::stream::{self, StreamExt};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// One LIST of members: a resource in a namespace, or across all namespaces.
pub struct Scan {
    pub resource: Resource,
    pub namespace: Option<String>,
}

/// What a diff reads while its desired state still renders: the ApplySet parent, and the
/// member LISTs of every kind the parent records in every namespace it records. When the
/// desired state is known, [`observe`] reads only what these did not cover: for a diff
/// with nothing new, nothing at all.
#[derive(Default)]
pub struct ReadAhead {
    pub(super) parent: Option<Value>,
    pub(super) lists: Vec<(Scan, Vec<Listed>)>,
}

/// Read the parent and LIST the members it records (see [`ReadAhead`]).
pub async fn read_ahead(session: &Session, opts: &EngineOptions) -> Result<ReadAhead, EngineError> {
    let parent = read_parent(session, opts).await?;
    let recorded = parent
        .as_ref()
        .map(Inventory::from_parent)
        .unwrap_or_default();
    let mut kinds = BTreeMap::new();
    for gk in &recorded.group_kinds {
        let Some(resource) = session.resources.any_version(&gk.group, &gk.kind) else {
            continue;
        };
        let namespaces = if resource.namespaced {
            recorded.namespaces.iter().cloned().collect()
        } else {
            BTreeSet::new()
        };
        kinds.insert(gk.clone(), (resource.clone(), namespaces));
    }
    let selector = format!("{}={}", inventory::PART_OF_LABEL, opts.applyset_id());
    let lists = stream::iter(
        scans(session, kinds, opts.concurrency)
            .await
            .into_iter()
            .map(|scan| {
                let selector = selector.as_str();
                async move {
                    let query = ListQuery {
                        labels: Some(selector),
                        stats: Some(&session.stats),
                        ..ListQuery::default()
                    };
                    let mut items = Vec::new();
                    let result = cluster::list_listed(
                        &session.client,
                        &scan.resource,
                        scan.namespace.as_deref(),
                        query,
                        |item| items.push(item),
                    )
                    .await;
                    match result {
                        Ok(()) => Ok((scan, items)),
                        Err(err) if err.code() == Some(404) => Ok((scan, Vec::new())),
                        Err(err) => Err(err),
                    }
                }
            }),
    )
    .buffer_unordered(opts.concurrency.max(1))
    .collect::<Vec<_>>()
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    Ok(ReadAhead { parent, lists })
}

pub async fn read_parent(
    session: &Session,
    opts: &EngineOptions,
) -> Result<Option<Value>, EngineError> {
    let secret = session.core("Secret")?;
    Ok(cluster::get(
        &session.client,
        &secret,
        Some(&opts.state_namespace),
        &opts.applyset,
    )
    .await?)
}

/// The LISTs read ahead that cover what `kinds` needs (the same resource version, across all
/// namespaces or in a namespace needed), taken out of `kinds`; the others are dropped.
pub fn covered(
    kinds: &mut BTreeMap<GroupKind, (Resource, BTreeSet<String>)>,
    ahead: Vec<(Scan, Vec<Listed>)>,
) -> Vec<(Scan, Vec<Listed>)> {
    let mut used = Vec::new();
    for (scan, items) in ahead {
        let gk = GroupKind::new(&scan.resource.api.group, &scan.resource.api.kind);
        let Some((resource, namespaces)) = kinds.get_mut(&gk) else {
            continue;
        };
        if resource.api.version != scan.resource.api.version {
            continue;
        }
        let done = match &scan.namespace {
            None => true,
            Some(ns) => {
                if !namespaces.remove(ns) {
                    continue;
                }
                namespaces.is_empty()
            }
        };
        if done {
            kinds.remove(&gk);
        }
        used.push((scan, items));
    }
    used
}

/// The LISTs for each kind: across all namespaces when the kind lives in several and the
/// client may list it cluster-wide (one SelfSubjectAccessReview per such kind), else one per
/// namespace.
pub async fn scans(
    session: &Session,
    kinds: BTreeMap<GroupKind, (Resource, BTreeSet<String>)>,
    concurrency: usize,
) -> Vec<Scan> {
    let decided = stream::iter(
        kinds
            .into_values()
            .map(|(resource, namespaces)| async move {
                let wide = !resource.namespaced
                    || (namespaces.len() > 1 && session.may_list_cluster_wide(&resource).await);
                (resource, namespaces, wide)
            }),
    )
    .buffer_unordered(concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    let mut scans = Vec::new();
    for (resource, namespaces, wide) in decided {
        if wide {
            scans.push(Scan {
                resource,
                namespace: None,
            });
        } else {
            scans.extend(namespaces.into_iter().map(|ns| Scan {
                resource: resource.clone(),
                namespace: Some(ns),
            }));
        }
    }
    scans
}
