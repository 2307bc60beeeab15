//! Waves and hooks in the reports (README "Waves and hooks"): one line per wave with its counts, one per hook
//! with what became of it, and the wave that stopped the run. Shown only for sites that have
//! waves or hooks, so every other report stays as it was.

use super::run::{HookRun, HookState, RunReport};
use serde_json::{json, Value};

/// `stopped at wave 1: its objects are not ready; later waves were not applied`.
pub(super) fn stopped_line(report: &RunReport) -> Option<String> {
    report.stopped_at_wave.map(|wave| {
        format!("stopped at wave {wave}: later waves were not applied, nothing was pruned")
    })
}

/// `wave -1: 2 to create, 0 to update, 1 unchanged`, then one line per hook.
pub(super) fn lines(report: &RunReport) -> Vec<String> {
    let mut out = Vec::new();
    for (wave, s) in report.wave_summaries() {
        let mut line = format!(
            "wave {wave}: {} to create, {} to update",
            s.create, s.update
        );
        if s.replace > 0 {
            line.push_str(&format!(", {} to replace", s.replace));
        }
        line.push_str(&format!(", {} unchanged", s.unchanged));
        out.push(line);
    }
    out.extend(report.hooks.iter().map(hook_line));
    out
}

/// `hook pre-apply (wave -1) Job web/migrate: succeeded`.
fn hook_line(hook: &HookRun) -> String {
    let mut line = format!(
        "hook {} (wave {}) {}: {}",
        hook.phase.name(),
        hook.wave,
        hook.key.kind_and_name(),
        hook.state.name()
    );
    if let HookState::NotRun(why) = &hook.state {
        line.push_str(&format!(" ({why})"));
    }
    if let Some(error) = &hook.error {
        line.push_str(&format!(": {error}"));
    }
    line
}

/// The additive JSON fields: `waves`, `hooks`, `stoppedAtWave`.
pub(super) fn json_fields(report: &RunReport) -> (Value, Value, Value) {
    let waves: Vec<Value> = report
        .wave_summaries()
        .into_iter()
        .map(|(wave, s)| {
            json!({
                "wave": wave,
                "create": s.create,
                "update": s.update,
                "replace": s.replace,
                "unchanged": s.unchanged,
            })
        })
        .collect();
    let hooks: Vec<Value> = report
        .hooks
        .iter()
        .map(|h| {
            json!({
                "phase": h.phase.name(),
                "wave": h.wave,
                "kind": h.key.kind,
                "namespace": h.key.namespace,
                "name": h.key.name,
                "state": h.state.name(),
                "reason": match &h.state {
                    HookState::NotRun(why) => Some(why.as_str()),
                    _ => None,
                },
                "error": h.error,
                "log": h.log,
            })
        })
        .collect();
    (waves.into(), hooks.into(), json!(report.stopped_at_wave))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectKey;
    use crate::plan::{Action, Change};
    use crate::render::waves::Phase;

    fn key(kind: &str, name: &str) -> ObjectKey {
        ObjectKey {
            group: String::new(),
            kind: kind.into(),
            namespace: Some("web".into()),
            name: name.into(),
        }
    }

    #[test]
    fn waves_and_hooks_in_lines() {
        let mut report = RunReport::default();
        for (name, wave, action) in [
            ("a", -1, Action::Create),
            ("b", -1, Action::Create),
            ("c", 0, Action::Unchanged),
        ] {
            report.changes.push(Change {
                key: key("ConfigMap", name),
                api_version: "v1".into(),
                action,
                origin: None,
                before: None,
                after: None,
                reason: None,
                drift: Vec::new(),
            });
            report.waves.insert(key("ConfigMap", name), wave);
        }
        report.hooks.push(HookRun {
            key: key("Job", "migrate"),
            phase: Phase::PreApply,
            wave: -1,
            state: HookState::NotRun("--dry-run".into()),
            error: None,
            log: Vec::new(),
        });
        assert_eq!(
            lines(&report),
            [
                "wave -1: 2 to create, 0 to update, 0 unchanged",
                "wave 0: 0 to create, 0 to update, 1 unchanged",
                "hook pre-apply (wave -1) Job web/migrate: not run (--dry-run)",
            ]
        );
        assert_eq!(stopped_line(&report), None);
        report.stopped_at_wave = Some(0);
        assert!(stopped_line(&report)
            .unwrap()
            .starts_with("stopped at wave 0"));
    }
}
