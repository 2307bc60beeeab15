//! The report of a `diff` or `apply` run, in every output format: text (coloured unified
//! diffs), json (the machine report, schema documented in docs/report-schema.md), markdown
//! (for merge-request comments).

use crate::object::ObjectKey;
use crate::plan::{Change, Summary};
pub use crate::render::waves::Phase;
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

/// What a reconcile does: `tend diff` or `tend apply`. Reports name it as the command,
/// `"diff"` or `"apply"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Diff,
    Apply,
}

impl Mode {
    /// The command's name, as in `tend diff`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Diff => "diff",
            Mode::Apply => "apply",
        }
    }
}

/// Everything a report needs.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    pub command: Mode,
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
    /// The wave of every desired object, when the site has waves or hooks (empty otherwise:
    /// reports of such sites stay as they were).
    pub waves: BTreeMap<ObjectKey, i64>,
    /// The site's hooks, in the order they run (or would run), with what became of them.
    pub hooks: Vec<HookRun>,
    /// The wave that failed and stopped the run; later waves were not touched.
    pub stopped_at_wave: Option<i64>,
    /// Flux's and Argo CD's units the run expanded (empty for other sites).
    pub units: Vec<UnitReport>,
}

/// One hook of the site (README "Waves and hooks").
#[derive(Debug, Clone)]
pub struct HookRun {
    pub key: ObjectKey,
    pub phase: Phase,
    pub wave: i64,
    pub state: HookState,
    /// Its failure: the Job's or Pod's reason.
    pub error: Option<String>,
    /// The last lines of its pod's log when it failed, where the server gives them (Secret
    /// values of the site masked).
    pub log: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookState {
    /// `diff`: it runs on the next apply.
    WouldRun,
    /// Not run, and why (`--dry-run`, nothing to change, an earlier failure).
    NotRun(String),
    Succeeded,
    Failed,
}

impl HookState {
    /// The state as the reports name it.
    pub fn name(&self) -> &'static str {
        match self {
            HookState::WouldRun => "would run",
            HookState::NotRun(_) => "not run",
            HookState::Succeeded => "succeeded",
            HookState::Failed => "failed",
        }
    }
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

    /// Per wave, in order: the summary of its objects' changes (only for sites with waves or
    /// hooks; prunes run after the last wave and are in no wave).
    pub fn wave_summaries(&self) -> Vec<(i64, Summary)> {
        let mut by_wave: BTreeMap<i64, Vec<Change>> = BTreeMap::new();
        for change in &self.changes {
            if let Some(wave) = self.waves.get(&change.key) {
                by_wave.entry(*wave).or_default().push(change.clone());
            }
        }
        for hook in &self.hooks {
            by_wave.entry(hook.wave).or_default();
        }
        by_wave
            .into_iter()
            .map(|(wave, changes)| (wave, Summary::of(&changes)))
            .collect()
    }
}

/// One unit of the run, as reports show it.
#[derive(Debug, Clone, Default)]
pub struct UnitReport {
    /// `Flux Kustomization staging/apps → HelmRelease podinfo/podinfo`.
    pub name: String,
    /// The source revision it read (a commit, a chart version).
    pub revision: Option<String>,
    /// `expanded`, `suspended`, `the walked directory`, or `not expanded: <why>`.
    pub result: String,
    /// The labels of the source files it produced.
    pub files: Vec<std::path::PathBuf>,
}

impl UnitReport {
    /// Whether an object from `file` (one of its files, or a chart's output of one) is its.
    pub(super) fn owns(&self, file: &std::path::Path) -> bool {
        let text = file.to_string_lossy();
        self.files.iter().any(|f| {
            let own = f.to_string_lossy();
            text == own || text.starts_with(&format!("{own} (chart "))
        })
    }
}
