//! Prune: delete the members the plan no longer wants, in reverse stage order (workloads
//! before the namespaces and CRDs they live in), after everything else was applied; a member
//! a tenant wrote as that tenant, whose RBAC decides (README "Coming from Flux").

use super::options::EngineOptions;
use crate::cluster::impersonation::ServiceAccount;
use crate::cluster::{self, Session};
use crate::object::{split_api_version, ObjectKey};
use crate::plan::inventory::Writer;
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

/// Delete every key of `targets` (live values in `live`), each member a tenant wrote as
/// that tenant (`writers`, as the parent recorded them), the others as tend.
pub async fn prune(
    session: &Session,
    (targets, writers): (&BTreeSet<ObjectKey>, &BTreeMap<ObjectKey, Writer>),
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
            let writer = writers.get(key).map(|(namespace, name)| ServiceAccount {
                namespace: namespace.clone(),
                name: name.clone(),
            });
            let delete = delete_one(session, key, (live, writer), opts);
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

/// `tend diff`: the prunes tenants would make, dry-run as each tenant, so a refusal shows in
/// the merge request before `apply` meets it. One error per refused prune.
pub async fn tenant_refusals(
    session: &Session,
    (targets, writers): (&BTreeSet<ObjectKey>, &BTreeMap<ObjectKey, Writer>),
    live: &HashMap<ObjectKey, Value>,
    opts: &EngineOptions,
) -> Vec<String> {
    let tenants: BTreeSet<ObjectKey> = targets
        .iter()
        .filter(|k| writers.contains_key(*k))
        .cloned()
        .collect();
    if tenants.is_empty() {
        return Vec::new();
    }
    let dry_run = EngineOptions {
        dry_run: true,
        ..opts.clone()
    };
    let pruned = prune(session, (&tenants, writers), live, &dry_run).await;
    let refused = pruned.outcomes.into_iter();
    refused
        .filter_map(|(key, outcome)| Some(format!("{key}: {}", outcome.error?)))
        .collect()
}

/// DELETE one member, with the version it was last seen at, as the tenant that wrote it
/// (`writer`) or as tend.
async fn delete_one(
    session: &Session,
    key: &ObjectKey,
    (live, writer): (&HashMap<ObjectKey, Value>, Option<ServiceAccount>),
    opts: &EngineOptions,
) -> Result<(), String> {
    let api_version = live
        .get(key)
        .and_then(|v| v["apiVersion"].as_str())
        .unwrap_or_default();
    let (group, version) = split_api_version(api_version);
    let Some(resource) = session.resources.get(group, version, &key.kind) else {
        return Err(format!(
            "cannot delete {key}: the cluster no longer serves {api_version} {}",
            key.kind
        ));
    };
    let client = match &writer {
        Some(account) => session.client_as(account).map_err(|e| e.to_string())?,
        None => session.client.clone(),
    };
    let (namespace, name) = (key.namespace.as_deref(), &key.name);
    let deleted = cluster::delete(&client, resource, namespace, name, opts.dry_run).await;
    match (deleted, writer) {
        (Ok(()), _) => Ok(()),
        (Err(err), Some(account)) if err.code() == Some(403) => Err(format!(
            "{}: {account}, whose unit wrote it, may not delete it (grant it delete, or delete the object yourself); the cluster said: {}",
            match opts.dry_run {
                true => "would not be pruned",
                false => "not pruned",
            },
            err.server_message().unwrap_or("forbidden")
        )),
        (Err(err), _) => Err(err.to_string()),
    }
}
