//! Plan: compare desired objects with live ones and decide, per object, what a run does.
//! Pure: no client, no I/O. The engine (`apply`) fetches live state and dry-run results and
//! hands them in; everything here is unit- and property-testable.

pub mod diff;
pub mod drift;
pub mod fast_path;
pub mod inventory;
pub mod normalize;
pub mod planner;

use crate::render::object::{ObjectKey, Origin};
use serde_json::Value;

/// What a run does (or would do) to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Create,
    Update,
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
    /// For updates: changed fields another field manager last wrote (from the live object's
    /// managedFields, which normalization drops, so captured by the planner).
    pub drift: Vec<drift::Drift>,
}

impl Change {
    /// Unified diff of before → after with Secret values masked.
    pub fn diff(&self) -> String {
        diff::unified(self.before.as_ref(), self.after.as_ref())
    }
}

/// Counts per action, for the summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    pub create: usize,
    pub update: usize,
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
                Action::Prune => s.prune += 1,
                Action::Unchanged => s.unchanged += 1,
            }
        }
        s
    }

    pub fn has_differences(&self) -> bool {
        self.create + self.update + self.prune > 0
    }
}

impl std::fmt::Display for Summary {
    /// `3 to create, 2 to update, 1 to prune, 994 unchanged`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} to create, {} to update, {} to prune, {} unchanged",
            self.create, self.update, self.prune, self.unchanged
        )
    }
}
