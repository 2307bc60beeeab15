//! The ApplySet parent Secret: widened before applying (a crash mid-run still leaves every
//! member findable), narrowed after pruning to what is desired plus members that still exist,
//! and carrying the record of the last run.

use super::options::EngineOptions;
use crate::cluster::{self, ClusterError, Session};
use crate::object::ObjectKey;
use crate::plan::inventory::{self, GroupKind, Inventory};
use crate::plan::Summary;

/// The inventory (group-kinds, namespaces) of a set of objects. The parent's namespace is
/// recorded only when members live there, so a run scans only namespaces with members.
pub fn inventory_of(keys: impl Iterator<Item = ObjectKey>) -> Inventory {
    let mut inv = Inventory::default();
    for key in keys {
        inv.group_kinds
            .insert(GroupKind::new(&key.group, &key.kind));
        if let Some(ns) = key.namespace {
            inv.namespaces.insert(ns);
        }
    }
    inv
}

/// Widen the recorded inventory by the desired one; skip the write when nothing is new.
pub async fn widen(
    session: &Session,
    opts: &EngineOptions,
    applyset_id: &str,
    has_parent: bool,
    recorded: &Inventory,
    desired: &Inventory,
) -> Result<(), ClusterError> {
    let widened = recorded.union(desired);
    if has_parent && widened == *recorded {
        return Ok(());
    }
    write(session, opts, applyset_id, &widened, &[]).await
}

/// The run's record on the parent: commit, time, and counts.
pub struct Record<'a> {
    pub commit: Option<&'a str>,
    /// Who signed it (`--verify-signatures`).
    pub signed_by: Option<&'a str>,
    /// RFC 3339 UTC, from the run's clock.
    pub time: String,
    pub summary: Summary,
    pub failed: usize,
    /// Objects found drifted.
    pub drifted: usize,
    /// Run-level errors so far (a wave that stopped the run, a hook that failed).
    pub errors: usize,
    /// What a run stopped by a signal did and did not do.
    pub interrupted: Option<&'a str>,
}

/// Narrow the parent to `inventory` and record the run.
pub async fn narrow_and_record(
    session: &Session,
    opts: &EngineOptions,
    applyset_id: &str,
    inventory: &Inventory,
    record: Record<'_>,
) -> Result<(), ClusterError> {
    let s = record.summary;
    let mut annotations = vec![
        (
            inventory::LAST_COMMIT_ANNOTATION,
            record.commit.unwrap_or_default().to_string(),
        ),
        (inventory::LAST_RUN_ANNOTATION, record.time),
        (
            inventory::LAST_SUMMARY_ANNOTATION,
            format!(
                "{} created, {} updated, {}{} pruned, {} unchanged, {} failed",
                s.create,
                s.update,
                match s.replace {
                    0 => String::new(),
                    n => format!("{n} replaced, "),
                },
                s.prune,
                s.unchanged,
                record.failed
            ),
        ),
    ];
    let result = match (record.interrupted, record.failed + record.errors) {
        (Some(_), _) => "interrupted",
        (None, 0) => "succeeded",
        (None, _) => "failed",
    };
    annotations.push((inventory::LAST_RESULT_ANNOTATION, result.to_string()));
    annotations.push((inventory::LAST_DRIFT_ANNOTATION, record.drifted.to_string()));
    // Absent when there are none: server-side apply then drops an earlier run's list.
    if !opts.spokes.is_empty() {
        annotations.push((inventory::SPOKES_ANNOTATION, opts.spokes.join(",")));
    }
    if let Some(signer) = record.signed_by {
        annotations.push((inventory::LAST_SIGNED_BY_ANNOTATION, signer.to_string()));
    }
    // Written only by a stopped run; the next run's apply drops it (server-side apply).
    if let Some(account) = record.interrupted {
        annotations.push((inventory::INTERRUPTED_ANNOTATION, account.to_string()));
    }
    write(session, opts, applyset_id, inventory, &annotations).await
}

async fn write(
    session: &Session,
    opts: &EngineOptions,
    applyset_id: &str,
    inventory: &Inventory,
    record: &[(&str, String)],
) -> Result<(), ClusterError> {
    let secret = session.core("Secret")?;
    let parent = inventory::parent_object(
        &opts.applyset,
        &opts.state_namespace,
        applyset_id,
        inventory,
        record,
    );
    cluster::apply(
        &session.client,
        &secret,
        &parent,
        crate::FIELD_MANAGER,
        true,
        false,
    )
    .await
    .map(|_| ())
}
