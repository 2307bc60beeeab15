//! Plan: compare desired objects with live ones and decide, per object, what a run does.
//! Pure: no client, no I/O. The engine (`apply`) fetches live state and dry-run results and
//! hands them in; everything here is unit- and property-testable.

pub mod diff;
pub mod drift;
pub mod fast_path;
pub mod inventory;
pub mod keep_live;
pub mod normalize;
pub mod others_fields;
pub mod planner;
pub mod settled;

use crate::object::{ObjectKey, Origin};
use serde_json::Value;

/// What a run does (or would do) to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Create,
    Update,
    /// Delete and create again: the API refuses the update as immutable (a Job's pod
    /// template, or an object annotated `tend.dev/replace: on-immutable`).
    Replace,
    Unchanged,
    Prune,
}

/// One object's planned change.
#[derive(Debug, Clone)]
pub struct Change {
    pub key: ObjectKey,
    pub api_version: String,
    pub action: Action,
    /// Where the desired object came from (None for prunes).
    pub origin: Option<Origin>,
    /// The live object, normalized (None for creates).
    pub before: Option<Value>,
    /// The object as it will be after applying: the server's dry-run result, normalized
    /// (None for prunes; the desired object for creates of kinds the server does not serve yet).
    pub after: Option<Value>,
    /// Why the action was chosen, where it is not obvious (replaces: the field the API
    /// refuses to change).
    pub reason: Option<String>,
    /// For updates: changed fields another field manager last wrote (from the live object's
    /// managedFields, which normalization drops, so captured by the planner).
    pub drift: Vec<drift::Drift>,
}

impl Change {
    /// Unified diff of before → after with Secret values and SOPS-sealed fields masked.
    pub fn diff(&self) -> String {
        let sealed = self.origin.as_ref().map_or(&[][..], |o| &o.sealed[..]);
        diff::unified_sealed(self.before.as_ref(), self.after.as_ref(), sealed)
    }
}

/// Counts per action, for the summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    pub create: usize,
    pub update: usize,
    pub replace: usize,
    pub prune: usize,
    pub unchanged: usize,
}

impl Summary {
    pub fn of(changes: &[Change]) -> Summary {
        let mut s = Summary::default();
        for c in changes {
            match c.action {
                Action::Create => s.create += 1,
                Action::Update => s.update += 1,
                Action::Replace => s.replace += 1,
                Action::Prune => s.prune += 1,
                Action::Unchanged => s.unchanged += 1,
            }
        }
        s
    }

    #[cfg(test)]
    pub fn has_differences(&self) -> bool {
        self.create + self.update + self.replace + self.prune > 0
    }
}

impl std::fmt::Display for Summary {
    /// `3 to create, 2 to update, 1 to prune, 994 unchanged`; `, 1 to replace` after the
    /// updates only when there are replaces (the line CI scripts grep stays as it was).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} to create, {} to update, ", self.create, self.update)?;
        if self.replace > 0 {
            write!(f, "{} to replace, ", self.replace)?;
        }
        write!(f, "{} to prune, {} unchanged", self.prune, self.unchanged)
    }
}
