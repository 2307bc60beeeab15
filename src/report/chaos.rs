//! The report of a `tend chaos` pass ([`ChaosReport`]): text for people, json for machines.

use crate::kinds::chaos_agent::pass::{ActionState, Pass};
use crate::kinds::ChaosAgentSpec;
use crate::text::count;
use serde_json::{json, Value};

/// What a pass did (or would do).
#[derive(Debug)]
pub struct ChaosReport {
    pub agent: String,
    pub seed: u64,
    pub execute: bool,
    pub excluded: Vec<String>,
    pub spec: ChaosAgentSpec,
    pub pass: Pass,
    /// Per action, with `--execute`: Ok or the error message. Empty for a dry run.
    pub results: Vec<Result<(), String>>,
    pub warnings: Vec<String>,
    /// `N API requests (...)`.
    pub requests: String,
}

impl ChaosReport {
    pub fn failed(&self) -> usize {
        self.results.iter().filter(|r| r.is_err()).count()
    }

    pub fn done(&self) -> usize {
        self.results.iter().filter(|r| r.is_ok()).count()
    }

    pub fn state(&self, index: usize) -> ActionState<'_> {
        match self.results.get(index) {
            None => ActionState::Planned,
            Some(Ok(())) => ActionState::Done,
            Some(Err(e)) => ActionState::Failed(e),
        }
    }
}

pub fn text(report: &ChaosReport) -> String {
    let spec = &report.spec;
    let mut out = format!(
        "ChaosAgent {}: seed {seed}; rerun with --seed {seed} to repeat\n",
        report.agent,
        seed = report.seed
    );
    if !report.execute {
        out.push_str("dry run: nothing is changed; pass --execute to act\n");
    }
    out.push_str(&format!(
        "excluded namespaces: {}\n",
        report.excluded.join(", ")
    ));
    let c = &report.pass.candidates;
    let mut modes = Vec::new();
    if spec.tantrum_mode {
        modes.push(format!("{} (tantrum)", count(c.pods, "pod")));
    }
    if spec.cancer_mode {
        modes.push(format!("{} (cancer)", count(c.deployments, "Deployment")));
    }
    if spec.ipsum_mode {
        modes.push(format!("{} (ipsum)", count(c.configmaps, "ConfigMap")));
    }
    if modes.is_empty() {
        out.push_str("no mode is enabled (tantrumMode, cancerMode, ipsumMode): nothing to do\n");
    } else {
        out.push_str(&format!(
            "candidates: {}; eagerness {}%, at most {}\n",
            modes.join(", "),
            spec.eagerness,
            count(spec.max_actions.max(0) as usize, "action")
        ));
    }
    for note in &report.pass.notes {
        out.push_str(note);
        out.push('\n');
    }
    for (i, action) in report.pass.actions.iter().enumerate() {
        out.push_str(&action.line(report.state(i)));
        out.push('\n');
    }
    let n = report.pass.actions.len();
    let summary = if n == 0 {
        "no action: no candidate was hit".to_string()
    } else if !report.execute {
        format!("{} planned", count(n, "action"))
    } else if report.failed() == 0 {
        format!("{} done", count(n, "action"))
    } else {
        format!(
            "{}: {} done, {} failed",
            count(n, "action"),
            report.done(),
            report.failed()
        )
    };
    out.push_str(&summary);
    out.push('\n');
    out
}

pub fn json(report: &ChaosReport) -> String {
    let actions: Vec<Value> = report
        .pass
        .actions
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let (done, error) = match report.results.get(i) {
                None => (false, Value::Null),
                Some(Ok(())) => (true, Value::Null),
                Some(Err(e)) => (false, Value::String(e.clone())),
            };
            json!({
                "mode": a.mode.as_str(),
                "action": a.action(),
                "kind": a.kind,
                "namespace": a.namespace,
                "name": a.name,
                "detail": a.detail,
                "done": done,
                "error": error,
            })
        })
        .collect();
    let c = &report.pass.candidates;
    let doc = json!({
        "agent": report.agent,
        "seed": report.seed,
        "execute": report.execute,
        "excludedNamespaces": report.excluded,
        "candidates": {
            "pods": c.pods,
            "deployments": c.deployments,
            "configmaps": c.configmaps,
        },
        "notes": report.pass.notes,
        "actions": actions,
        "warnings": report.warnings,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}
