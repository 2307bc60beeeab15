//! The live state of desired objects that are not ApplySet members yet: new ones (nothing to
//! read) and ones made by someone else (adopted: read in full, so the plan shows the update).

use super::options::EngineError;
use super::prepare::Prepared;
use crate::cluster::{self, ListQuery, Resource, Session};
use crate::plan::inventory::GroupKind;
use futures::stream::{self, StreamExt};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// Up to this many non-members of one resource in one namespace are read with a GET each;
/// more with one metadata-only LIST (names only, a few hundred bytes an object) followed by a
/// GET of those that exist. An initial apply then costs a read per kind and namespace, not
/// per object.
const GETS_PER_GROUP: usize = 3;

/// Non-members of one resource in one namespace.
type Group<'a> = (&'a Resource, Vec<&'a Prepared>);

/// The live state of desired objects that are not ApplySet members: the full object of each
/// that exists, nothing for those that do not.
pub async fn read(
    session: &Session,
    objects: &[&Prepared],
    concurrency: usize,
) -> Result<Vec<Value>, EngineError> {
    let mut groups: BTreeMap<(GroupKind, Option<&str>), Group<'_>> = BTreeMap::new();
    for p in objects {
        let Some(resource) = &p.resource else {
            continue;
        };
        let key = (
            GroupKind::new(&resource.api.group, &resource.api.kind),
            p.object.namespace(),
        );
        groups
            .entry(key)
            .or_insert((resource, Vec::new()))
            .1
            .push(p);
    }
    let listed = stream::iter(
        groups
            .into_iter()
            .map(|((_, namespace), (resource, members))| {
                may_exist(session, resource, namespace, members)
            }),
    )
    .buffer_unordered(concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    let mut candidates = Vec::new();
    for result in listed {
        candidates.extend(result?);
    }
    get_each(session, candidates, concurrency).await
}

/// Which objects of one group may exist: all of a small group; of a large one, those a
/// metadata-only LIST names.
async fn may_exist<'p>(
    session: &Session,
    resource: &Resource,
    namespace: Option<&str>,
    members: Vec<&'p Prepared>,
) -> Result<Vec<&'p Prepared>, crate::cluster::ClusterError> {
    if members.len() <= GETS_PER_GROUP {
        return Ok(members);
    }
    let mut names = HashSet::new();
    let query = ListQuery {
        stats: Some(&session.stats),
        metadata_only: true,
        ..ListQuery::default()
    };
    let listed = cluster::list_each(&session.client, resource, namespace, query, |item| {
        if let Some(name) = item.pointer("/metadata/name").and_then(Value::as_str) {
            names.insert(name.to_string());
        }
    })
    .await;
    match listed {
        Ok(()) => {}
        // A namespace that does not exist holds nothing.
        Err(err) if err.code() == Some(404) => return Ok(Vec::new()),
        Err(err) => return Err(err),
    }
    Ok(members
        .into_iter()
        .filter(|p| names.contains(p.object.name()))
        .collect())
}

/// GET each candidate; what exists.
async fn get_each(
    session: &Session,
    candidates: Vec<&Prepared>,
    concurrency: usize,
) -> Result<Vec<Value>, EngineError> {
    let gets = stream::iter(candidates.into_iter().map(|p| async move {
        let Some(resource) = &p.resource else {
            return Ok(None);
        };
        let namespace = p.object.namespace();
        cluster::get(&session.client, resource, namespace, p.object.name()).await
    }))
    .buffer_unordered(concurrency.max(1))
    .collect::<Vec<_>>()
    .await;
    let mut found = Vec::new();
    for result in gets {
        match result {
            Ok(Some(item)) => found.push(item),
            Ok(None) => {}
            // The namespace does not exist (yet): this run creates it, or the apply says so.
            Err(err) if err.code() == Some(404) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(found)
}
