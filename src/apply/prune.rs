//! Prune: delete the members the plan no longer wants, in reverse stage order (workloads
//! before the namespaces and CRDs they live in), after everything else was applied.

use super::options::EngineOptions;
use crate::cluster::{self, Session};
use crate::object::{split_api_version, ObjectKey};
use crate::render::builtin::stage_of;
use crate::report::run::Outcome;
use futures::stream::{self, StreamExt};
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

/// What pruning did.
#[derive(Debug, Default)]
pub struct Pruned {
    pub outcomes: BTreeMap<ObjectKey, Outcome>,
    /// Members that could not be deleted: they stay in the ApplySet's inventory.
    pub still_members: Vec<ObjectKey>,
}

/// Delete every key of `targets` (live values in `live`).
pub async fn prune(
    session: &Session,
    targets: &BTreeSet<ObjectKey>,
    live: &HashMap<ObjectKey, Value>,
    opts: &EngineOptions,
) -> Pruned {
    let mut by_stage: BTreeMap<_, Vec<&ObjectKey>> = BTreeMap::new();
    for key in targets {
        by_stage
            .entry(Reverse(stage_of(&key.group, &key.kind)))
            .or_default()
            .push(key);
    }
    let mut pruned = Pruned::default();
    for (_, keys) in by_stage {
        let results = stream::iter(keys.into_iter().map(|key| async move {
            let started = Instant::now();
            let delete = delete_one(session, key, live, opts);
            let result = super::interrupted::write(&opts.interrupt, delete).await;
            (key, started.elapsed(), result)
        }))
        .buffer_unordered(opts.concurrency.max(1))
        .collect::<Vec<_>>()
        .await;
        for (key, duration, result) in results {
            let error = match result {
                Ok(()) => {
                    tracing::debug!("pruned {key}");
                    None
                }
                Err(error) => {
                    super::log_object_error(key, &error);
                    pruned.still_members.push(key.clone());
                    Some(error)
                }
            };
            pruned.outcomes.insert(
                key.clone(),
                Outcome {
                    duration,
                    error,
                    ..Outcome::default()
                },
            );
        }
    }
    pruned
}

/// DELETE one member, with the version it was last seen at.
async fn delete_one(
    session: &Session,
    key: &ObjectKey,
    live: &HashMap<ObjectKey, Value>,
    opts: &EngineOptions,
) -> Result<(), String> {
    let api_version = live
        .get(key)
        .and_then(|v| v["apiVersion"].as_str())
        .unwrap_or_default();
    let (group, version) = split_api_version(api_version);
    match session.resources.get(group, version, &key.kind) {
        Some(resource) => cluster::delete(
            &session.client,
            resource,
            key.namespace.as_deref(),
            &key.name,
            opts.dry_run,
        )
        .await
        .map_err(|e| e.to_string()),
        None => Err(format!(
            "cannot delete {key}: the cluster no longer serves {api_version} {}",
            key.kind
        )),
    }
}
