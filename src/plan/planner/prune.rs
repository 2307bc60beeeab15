//! What keeps a prune from happening: per object (`tend.dev/prune: disabled`, protected
//! kinds) and per run (an empty desired set, `--max-deletions`).

use crate::object::ObjectKey;
use serde_json::Value;

/// Annotation controlling pruning of one object: `disabled` keeps it, `allow` lets tend
/// delete a protected kind.
pub const PRUNE_ANNOTATION: &str = "tend.dev/prune";

/// Why a member must not be pruned, if it must not: `tend.dev/prune: disabled`, or a
/// protected kind (Namespace, PVC, PV, CRD) without `tend.dev/prune: allow`.
pub fn prune_guard(key: &ObjectKey, live: &Value) -> Option<String> {
    let annotation = live
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(PRUNE_ANNOTATION))
        .and_then(Value::as_str);
    if annotation == Some("disabled") {
        return Some(format!("{PRUNE_ANNOTATION}: disabled"));
    }
    let protected = matches!(
        (key.group.as_str(), key.kind.as_str()),
        (
            "",
            "Namespace" | "PersistentVolumeClaim" | "PersistentVolume"
        ) | ("apiextensions.k8s.io", "CustomResourceDefinition")
    );
    if protected && annotation != Some("allow") {
        return Some(format!(
            "{} is protected from pruning; annotate it {PRUNE_ANNOTATION}: allow to let tend delete it",
            key.kind
        ));
    }
    None
}

/// Limits on a whole run's prunes.
#[derive(Debug, Clone, Copy, Default)]
pub struct PruneLimits {
    /// `--allow-empty`: an empty desired set may prune everything.
    pub allow_empty: bool,
    /// `--max-deletions N`.
    pub max_deletions: Option<usize>,
}

/// Run-wide prune guards: refuse all prunes when the desired set is empty (unless allowed)
/// or when there are more than `--max-deletions`.
pub fn check_prune_limits(
    prunes: usize,
    desired: usize,
    limits: PruneLimits,
) -> Result<(), String> {
    if prunes == 0 {
        return Ok(());
    }
    if desired == 0 && !limits.allow_empty {
        return Err(format!(
            "refusing to prune {} because the desired set is empty (a wrong --path or --ref?); pass --allow-empty to prune everything",
            crate::text::count(prunes, "object")
        ));
    }
    if let Some(max) = limits.max_deletions {
        if prunes > max {
            return Err(format!(
                "refusing to prune {prunes} objects: more than --max-deletions {max}; nothing was pruned"
            ));
        }
    }
    Ok(())
}
