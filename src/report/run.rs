//! The report of a `diff` or `apply` run, in every output format: text (coloured unified
//! diffs), json (the machine report, schema documented in docs/report-schema.md), markdown
//! (for merge-request comments).

use crate::plan::{Change, Summary};
use crate::render::object::ObjectKey;
use std::collections::BTreeMap;
use std::time::Duration;

/// What happened to one object during `apply` (absent for `diff`).
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub duration: Duration,
    /// Error message (already free of secret values), if applying/pruning this object failed.
    pub error: Option<String>,
    /// Prune skipped by a guard (protected kind, `tend.dev/prune: disabled`): why.
    pub skipped: Option<String>,
}

/// Everything a report needs.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    /// "diff" or "apply".
    pub command: String,
    pub commit: Option<String>,
    pub cluster: Option<String>,
    pub dry_run: bool,
    pub changes: Vec<Change>,
    pub outcomes: BTreeMap<ObjectKey, Outcome>,
    /// With `--wait`: the final status of every object waited for.
    pub waits: BTreeMap<ObjectKey, crate::kstatus::Status>,
    /// Run-level errors not tied to one object.
    pub errors: Vec<String>,
    pub duration: Duration,
}

impl RunReport {
    pub fn summary(&self) -> Summary {
        Summary::of(&self.changes)
    }
    /// Prunes a guard kept (listed as prunes, with a `skipped` reason).
    pub fn skipped(&self) -> usize {
        self.outcomes
            .values()
            .filter(|o| o.skipped.is_some())
            .count()
    }

    /// Whether the run changes (or, for `diff`, would change) anything: a guard-kept prune
    /// changes nothing, so a site whose only difference is one stays "in sync".
    pub fn has_differences(&self) -> bool {
        let s = self.summary();
        s.create + s.update + s.replace + s.prune.saturating_sub(self.skipped()) > 0
    }

    pub fn failed(&self) -> usize {
        self.outcomes.values().filter(|o| o.error.is_some()).count()
    }
}
