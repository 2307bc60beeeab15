//! The report of `tend diff` / `tend apply` in its three formats: text (coloured unified diffs
//! for a terminal or CI log), json (the machine report, schema in docs/report-schema.md) and
//! markdown (merge-request comments, in [`super::markdown`]).
//!
//! Sized for CI logs (README "What `diff` and `apply` print"): text and markdown print one line per created or pruned object
//! and a diff per updated one; bodies of created objects only with `--show-creates` (JSON
//! always has them). Server errors are cut to their cause ([`cut`]) except at `-v` and in JSON.
//!
//! Object contents reach the output only through [`Change::diff`], which masks Secret values;
//! nothing here prints a change's `before`/`after` directly.

use super::run::{Outcome, RunReport};
pub use crate::cluster::cause::cut;
use crate::object::ObjectKey;
use crate::plan::{Action, Change};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Version of the JSON report's schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// `+` create, `~` update, `±` replace, `-` prune, `=` unchanged.
pub(super) fn sigil(action: Action) -> char {
    match action {
        Action::Create => '+',
        Action::Update => '~',
        Action::Replace => '±',
        Action::Prune => '-',
        Action::Unchanged => '=',
    }
}

pub(super) fn action_name(action: Action) -> &'static str {
    match action {
        Action::Create => "create",
        Action::Update => "update",
        Action::Replace => "replace",
        Action::Prune => "prune",
        Action::Unchanged => "unchanged",
    }
}

/// `apps/v1 Deployment web/nginx`.
pub(super) fn title(change: &Change) -> String {
    let key = &change.key;
    match &key.namespace {
        Some(ns) => format!("{} {} {ns}/{}", change.api_version, key.kind, key.name),
        None => format!("{} {} {}", change.api_version, key.kind, key.name),
    }
}

/// `web/nginx.yaml:12`, `apps/shop.yaml:1 (chart shop, templates/x.yaml)` (no generated-by;
/// that is a separate field).
pub(super) fn source(change: &Change) -> Option<String> {
    change
        .origin
        .as_ref()
        .map(|o| crate::problem::location(&o.file, o.line))
}

/// The diff a report shows: nothing for unchanged objects (their before/after may be absent or
/// identical) and for prunes a guard skipped (nothing happens to them), the masked unified diff
/// otherwise.
pub(super) fn shown_diff(change: &Change, outcome: Option<&Outcome>) -> String {
    if change.action == Action::Unchanged || outcome.is_some_and(|o| o.skipped.is_some()) {
        String::new()
    } else {
        change.diff()
    }
}

/// Whether an object appears in the per-object part of a report.
pub(super) fn listed(change: &Change, outcome: Option<&Outcome>, verbose: bool) -> bool {
    verbose
        || change.action != Action::Unchanged
        || outcome.is_some_and(|o| o.error.is_some() || o.skipped.is_some())
}

/// `3 to create, 2 to update, 1 to prune, 994 unchanged[, N skipped by a guard][, N failed]`.
pub(super) fn summary_line(report: &RunReport) -> String {
    let mut line = report.summary().to_string();
    let skipped = report.skipped();
    if skipped > 0 {
        let _ = write!(line, ", {skipped} of them skipped by a guard");
    }
    let failed = report.failed();
    if failed > 0 {
        let _ = write!(line, ", {failed} failed");
    }
    line
}

/// What the text and markdown reports show besides the one line per object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shown {
    /// `-v`: unchanged objects too, and errors in full.
    pub verbose: bool,
    /// `--show-creates`: the body of each created object.
    pub show_creates: bool,
}

/// Whether a report prints the object's diff under its line: one match arm per action, so a
/// new action decides here. Creates and prunes are one line (a first apply of a large site
/// would otherwise print every body; README "What `diff` and `apply` print"), updates their diff.
pub(super) fn shows_body(action: Action, shown: Shown) -> bool {
    match action {
        Action::Create => shown.show_creates,
        Action::Update | Action::Replace => true,
        Action::Prune | Action::Unchanged => false,
    }
}

/// An error as a report prints it: cut to its cause unless verbose.
pub(super) fn error_text(error: &str, verbose: bool) -> String {
    if verbose {
        error.to_string()
    } else {
        cut(error)
    }
}

/// Human report: per listed object a header line (`~ apps/v1 Deployment web/nginx  # file:line`),
/// its drifted fields and its diff (see `shows_body`), and for `apply` its failure or skipped
/// prune; then the summary line and run-level errors. Unchanged objects are listed only when
/// verbose. `color` adds ANSI SGR colours.
pub fn text(report: &RunReport, color: bool, shown: Shown) -> String {
    let paint = |code: &str, s: &str| {
        if color {
            format!("{code}{s}{RESET}")
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    // Whether the last block ended with a blank line: one-line objects are not separated.
    let mut separated = true;
    for change in &report.changes {
        let outcome = report.outcomes.get(&change.key);
        if !listed(change, outcome, shown.verbose) {
            continue;
        }
        let action_color = match change.action {
            Action::Create => GREEN,
            Action::Update => YELLOW,
            Action::Replace | Action::Prune => RED,
            Action::Unchanged => "",
        };
        let header = format!("{} {}", sigil(change.action), title(change));
        out.push_str(&paint(&format!("{BOLD}{action_color}"), &header));
        if let Some(origin) = &change.origin {
            let _ = write!(out, "  # {origin}");
        }
        out.push('\n');
        if let Some(reason) = &change.reason {
            out.push_str(&paint(
                RED,
                &format!("  {}: {reason}", action_name(change.action)),
            ));
            out.push('\n');
        }
        for drift in &change.drift {
            out.push_str(&paint(YELLOW, &format!("  drift: {drift}")));
            out.push('\n');
        }
        let diff = if shows_body(change.action, shown) {
            shown_diff(change, outcome)
        } else {
            String::new()
        };
        for line in diff.lines() {
            let code = match line.as_bytes().first() {
                Some(b'+') => GREEN,
                Some(b'-') => RED,
                Some(b'@') => CYAN,
                _ => "",
            };
            if code.is_empty() {
                out.push_str(line);
            } else {
                out.push_str(&paint(code, line));
            }
            out.push('\n');
        }
        if let Some(outcome) = outcome {
            if let Some(error) = &outcome.error {
                let error = error_text(error, shown.verbose);
                out.push_str(&paint(RED, &format!("  ! failed: {error}")));
                out.push('\n');
            }
            if let Some(reason) = &outcome.skipped {
                out.push_str(&paint(YELLOW, &format!("  skipped: {reason}")));
                out.push('\n');
            }
        }
        separated = !diff.is_empty();
        if separated {
            out.push('\n');
        }
    }
    if !separated {
        out.push('\n');
    }
    for line in super::waves::lines(report)
        .into_iter()
        .chain(super::units::lines(report))
    {
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&summary_line(report));
    out.push('\n');
    if let Some(line) = super::waves::stopped_line(report) {
        out.push_str(&paint(RED, &line));
        out.push('\n');
    }
    for hook in report.hooks.iter().filter(|h| !h.log.is_empty()) {
        let _ = writeln!(out, "last lines of {}'s log:", hook.key.kind_and_name());
        for line in &hook.log {
            let _ = writeln!(out, "  | {line}");
        }
    }
    for (key, status) in not_ready(report) {
        out.push_str(&paint(RED, &format!("not ready: {key}: {status}")));
        out.push('\n');
    }
    for error in &report.errors {
        let error = error_text(error, shown.verbose);
        out.push_str(&paint(RED, &format!("error: {error}")));
        out.push('\n');
    }
    out
}

/// `--wait`: the objects waited for that did not become ready (Current).
pub(super) fn not_ready(
    report: &RunReport,
) -> impl Iterator<Item = (&ObjectKey, &crate::kstatus::Status)> {
    report.waits.iter().filter(|(_, s)| !s.is_current())
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The machine report as pretty JSON, schema version [`SCHEMA_VERSION`]
/// (docs/report-schema.md). Objects in plan order; every field always present.
pub fn json(report: &RunReport) -> String {
    let summary = report.summary();
    let objects: Vec<Value> = report
        .changes
        .iter()
        .map(|change| {
            let outcome = report.outcomes.get(&change.key);
            json!({
                "action": action_name(change.action),
                "apiVersion": change.api_version,
                "kind": change.key.kind,
                "namespace": change.key.namespace,
                "name": change.key.name,
                "source": source(change),
                "generatedBy": change.origin.as_ref().and_then(|o| o.generated_by.as_ref()).map(ObjectKey::kind_and_name),
                "durationMs": outcome.map(|o| millis(o.duration)),
                "error": outcome.and_then(|o| o.error.clone()),
                "cause": outcome.and_then(|o| o.error.as_deref()).map(cut),
                "skipped": outcome.and_then(|o| o.skipped.clone()),
                "reason": change.reason,
                "drift": change.drift,
                "diff": shown_diff(change, outcome),
                "wait": report.waits.get(&change.key),
                "unit": super::units::unit_of(report, change).map(|u| &u.name),
            })
        })
        .collect();
    let (waves, hooks, stopped_at_wave) = super::waves::json_fields(report);
    let value = json!({
        "schemaVersion": SCHEMA_VERSION,
        "command": report.command,
        "dryRun": report.dry_run,
        "commit": report.commit,
        "cluster": report.cluster,
        "summary": {
            "create": summary.create,
            "update": summary.update,
            "replace": summary.replace,
            "prune": summary.prune,
            "unchanged": summary.unchanged,
            "failed": report.failed(),
        },
        "durationMs": millis(report.duration),
        "errors": report.errors,
        "objects": objects,
        "waves": waves,
        "hooks": hooks,
        "stoppedAtWave": stopped_at_wave,
        "units": super::units::json_field(report),
    });
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::*;
    use crate::report::markdown::markdown;
    use crate::report::run::Mode;

    const PLAIN: Shown = Shown {
        verbose: false,
        show_creates: false,
    };
    const VERBOSE: Shown = Shown {
        verbose: true,
        show_creates: false,
    };

    #[test]
    fn text_diff_report() {
        let out = text(&diff_report(), false, PLAIN);
        assert_no_secret(&out);
        // Creates and prunes are one line each, updates a diff with drift first.
        assert!(out.starts_with("+ v1 ConfigMap web/app  # web/app.yaml:1\n~ apps/v1 Deployment web/nginx  # web/nginx.yaml:12\n  drift: spec.template.spec.containers[0].image: nginx:1.27 → nginx:1.28 (set by kubectl-set at 2026-11-23T21:40:00Z)\n@@"), "{out}");
        assert!(!out.contains("@@ -0,0"), "{out}");
        assert!(!out.contains("mode:"), "{out}");
        assert!(out.contains("-      - image: nginx:1.27\n+      - image: nginx:1.28\n"));
        assert!(
            out.contains("\n- v1 ConfigMap web/old\n- v1 Namespace legacy\n\n"),
            "{out}"
        );
        assert!(!out.contains("x: y"), "{out}");
        assert!(out.contains("*** (changed)"));
        assert!(
            !out.contains("mirror"),
            "unchanged listed without verbose:\n{out}"
        );
        assert!(
            out.ends_with("\n\n1 to create, 2 to update, 2 to prune, 2 unchanged\n"),
            "{out}"
        );
        assert!(!out.contains('\x1b'));
    }

    #[test]
    fn text_verbose_lists_unchanged_with_origin() {
        let out = text(&diff_report(), false, VERBOSE);
        assert_no_secret(&out);
        assert!(out.contains(
            "= v1 ConfigMap web/mirror  # registries/mirrors.yaml:4 (generated by RegistryMirror registries/dockerhub)\n"
        ));
        assert!(out.contains("= v1 Secret web/same  # web/same.yaml:1\n"));
    }

    #[test]
    fn text_colour() {
        let out = text(&diff_report(), true, PLAIN);
        assert_no_secret(&out);
        assert!(out.contains("\x1b[1m\x1b[33m~ apps/v1 Deployment web/nginx\x1b[0m"));
        assert!(out.contains("\x1b[32m+      - image: nginx:1.28\x1b[0m\n"));
        assert!(out.contains("\x1b[31m-      - image: nginx:1.27\x1b[0m\n"));
        assert!(out.contains("\x1b[36m@@"));
    }

    #[test]
    fn text_apply_report_shows_failures_skips_and_errors() {
        let out = text(&apply_report(), false, PLAIN);
        assert_no_secret(&out);
        assert!(out.contains("  ! failed: admission webhook denied the request\n"));
        assert!(out.contains("- v1 Namespace legacy\n  skipped: Namespaces are never pruned"));
        assert!(out.contains(
            "1 to create, 2 to update, 2 to prune, 2 unchanged, 1 of them skipped by a guard, 1 failed\n"
        ));
        assert!(out.ends_with("error: lease renewal failed | retrying\n"));
    }

    /// An apply with `--wait` where the first object became ready and the second did not.
    fn wait_report() -> RunReport {
        use crate::kstatus::Status;
        let mut r = diff_report();
        r.command = Mode::Apply;
        let keys: Vec<ObjectKey> = r.changes.iter().map(|c| c.key.clone()).collect();
        r.waits.insert(keys[0].clone(), Status::Current);
        r.waits.insert(
            keys[1].clone(),
            Status::InProgress("phase Pending: not bound to a PersistentVolume yet".into()),
        );
        r
    }

    #[test]
    fn wait_statuses_in_every_format() {
        let r = wait_report();
        let second = r.changes[1].key.to_string();
        let text = text(&r, false, PLAIN);
        let line = format!("not ready: {second}: InProgress: phase Pending");
        assert!(text.contains(&line), "{text}");
        assert_eq!(text.matches("not ready:").count(), 1, "{text}");
        let v: Value = serde_json::from_str(&json(&r)).unwrap();
        assert_eq!(v["objects"][0]["wait"], json!({"status": "Current"}));
        assert_eq!(v["objects"][1]["wait"]["status"], "InProgress");
        assert_eq!(v["objects"][2]["wait"], Value::Null);
        let md = markdown(&r, PLAIN);
        assert!(md.contains("**--wait:** 1 of 2 objects ready"), "{md}");
        assert!(md.contains("- not ready: "), "{md}");
    }

    #[test]
    fn replaces_show_their_reason_in_every_format() {
        let mut r = diff_report();
        r.changes.retain(|c| c.key.kind == "Deployment");
        r.changes[0].action = Action::Replace;
        r.changes[0].reason = Some("spec.selector: field is immutable".into());
        let out = text(&r, false, PLAIN);
        // The reason comes right under the object's line (before its drift and diff).
        assert!(out.starts_with("± apps/v1 Deployment web/nginx  # web/nginx.yaml:12\n  replace: spec.selector: field is immutable\n"), "{out}");
        assert!(out.contains("\n@@ -8,5 +8,5 @@\n"), "{out}");
        assert!(
            out.ends_with("0 to create, 0 to update, 1 to replace, 0 to prune, 0 unchanged\n"),
            "{out}"
        );
        let v: Value = serde_json::from_str(&json(&r)).unwrap();
        assert_eq!(v["summary"]["replace"], 1);
        assert_eq!(v["objects"][0]["action"], "replace");
        assert_eq!(
            v["objects"][0]["reason"],
            "spec.selector: field is immutable"
        );
        let md = markdown(&r, PLAIN);
        assert!(md.contains("| replace | 1 |\n"), "{md}");
        assert!(
            md.contains("| ± replace (spec.selector: field is immutable) | apps/v1 Deployment |"),
            "{md}"
        );
    }

    #[test]
    fn waves_and_hooks_in_every_format() {
        let r = waves_report();
        let text = text(&r, false, PLAIN);
        let summary = text.lines().position(|l| l.contains("to prune")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[summary + 1].starts_with("stopped at wave 0"),
            "{text}"
        );
        assert!(
            lines[summary - 1].starts_with("hook post-apply (wave 0) Job web/smoke: not run"),
            "{text}"
        );
        assert!(text.contains("  | error: relation exists"), "{text}");
        let md = markdown(&r, PLAIN);
        assert!(md.contains("**stopped at wave 0"), "{md}");
        assert!(
            md.contains("- hook pre-apply (wave 0) Job web/migrate: failed"),
            "{md}"
        );
        let v: Value = serde_json::from_str(&json(&r)).unwrap();
        assert_eq!(v["stoppedAtWave"], 0);
        assert_eq!(v["hooks"][0]["log"][1], "error: relation exists");
        assert_eq!(v["hooks"][1]["reason"], "the run stopped at wave 0");
        // Reports of sites without waves or hooks show none of it.
        assert!(!super::text(&apply_report(), false, PLAIN).contains("wave"));
    }

    #[test]
    fn text_in_sync_is_just_the_summary() {
        let mut r = diff_report();
        r.changes.retain(|c| c.action == Action::Unchanged);
        assert_eq!(
            text(&r, true, PLAIN),
            "0 to create, 0 to update, 0 to prune, 2 unchanged\n"
        );
    }

    #[test]
    fn text_show_creates_prints_bodies_masked() {
        let shown = Shown {
            verbose: false,
            show_creates: true,
        };
        let out = text(&diff_report(), false, shown);
        assert!(
            out.contains("+ v1 ConfigMap web/app  # web/app.yaml:1\n@@ -0,0 +1,"),
            "{out}"
        );
        assert!(out.contains("+  mode: a|b `x`\n"), "{out}");
        // Prunes stay one line.
        assert!(!out.contains("x: y"), "{out}");
        assert_no_secret(&out);
    }

    #[test]
    fn text_errors_cut_to_cause_unless_verbose() {
        let mut r = apply_report();
        let dump = format!("core.PodTemplateSpec{{{}}}", "Spec: x, ".repeat(400));
        let long = format!(
            "apply batch/v1 Job web/migrate: Job.batch \"migrate\" is invalid: spec.template: Invalid value: {dump}: field is immutable (422 Invalid)"
        );
        r.outcomes
            .get_mut(&key("apps", "Deployment", Some("web"), "nginx"))
            .unwrap()
            .error = Some(long.clone());
        r.errors = vec![long.clone()];
        let out = text(&r, false, PLAIN);
        assert!(
            out.contains("  ! failed: spec.template: field is immutable\n"),
            "{out}"
        );
        assert!(
            out.contains("error: spec.template: field is immutable\n"),
            "{out}"
        );
        assert!(!out.contains("PodTemplateSpec"), "{out}");
        let out = text(&r, false, VERBOSE);
        assert!(out.contains(&long), "{out}");
        let v: Value = serde_json::from_str(&json(&r)).unwrap();
        assert_eq!(v["objects"][1]["error"], long.as_str());
        assert_eq!(
            v["objects"][1]["cause"],
            "spec.template: field is immutable"
        );
    }

    #[test]
    fn json_report_shape() {
        let out = json(&apply_report());
        assert_no_secret(&out);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["schemaVersion"], 1);
        assert_eq!(v["command"], "apply");
        assert_eq!(v["dryRun"], false);
        assert_eq!(v["commit"], "0123456789abcdef0123456789abcdef01234567");
        assert_eq!(v["cluster"], "dc1");
        assert_eq!(
            v["summary"],
            json!({"create": 1, "update": 2, "replace": 0, "prune": 2, "unchanged": 2, "failed": 1})
        );
        assert_eq!(v["durationMs"], 1234);
        assert_eq!(v["errors"], json!(["lease renewal failed | retrying"]));
        let objects = v["objects"].as_array().unwrap();
        assert_eq!(objects.len(), 7);
        let names: Vec<&str> = objects
            .iter()
            .map(|o| o["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["app", "nginx", "db", "mirror", "same", "old", "legacy"]
        );
        let nginx = &objects[1];
        assert_eq!(nginx["action"], "update");
        assert_eq!(nginx["apiVersion"], "apps/v1");
        assert_eq!(nginx["kind"], "Deployment");
        assert_eq!(nginx["namespace"], "web");
        assert_eq!(nginx["source"], "web/nginx.yaml:12");
        assert_eq!(nginx["generatedBy"], Value::Null);
        assert_eq!(nginx["durationMs"], 7);
        assert_eq!(nginx["error"], "admission webhook denied the request");
        assert_eq!(nginx["skipped"], Value::Null);
        assert_eq!(nginx["cause"], "admission webhook denied the request");
        assert_eq!(nginx["drift"][0]["manager"], "kubectl-set");
        assert_eq!(
            nginx["drift"][0]["path"],
            "spec.template.spec.containers[0].image"
        );
        assert_eq!(nginx["drift"][0]["before"], "nginx:1.27");
        // Created objects' bodies are always in JSON.
        assert!(objects[0]["diff"].as_str().unwrap().starts_with("@@ -0,0"));
        assert!(nginx["diff"]
            .as_str()
            .unwrap()
            .contains("+      - image: nginx:1.28\n"));
        let mirror = &objects[3];
        assert_eq!(mirror["action"], "unchanged");
        assert_eq!(mirror["diff"], "");
        assert_eq!(mirror["generatedBy"], "RegistryMirror registries/dockerhub");
        let legacy = &objects[6];
        assert_eq!(legacy["namespace"], Value::Null);
        assert_eq!(legacy["source"], Value::Null);
        assert!(legacy["skipped"]
            .as_str()
            .unwrap()
            .starts_with("Namespaces"));
        // Key order is part of the contract's readability.
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "schemaVersion",
                "command",
                "dryRun",
                "commit",
                "cluster",
                "summary",
                "durationMs",
                "errors",
                "objects",
                "waves",
                "hooks",
                "stoppedAtWave",
                "units"
            ]
        );
    }

    #[test]
    fn json_diff_run_has_null_durations() {
        let v: Value = serde_json::from_str(&json(&diff_report())).unwrap();
        assert_eq!(v["summary"]["failed"], 0);
        for o in v["objects"].as_array().unwrap() {
            assert_eq!(o["durationMs"], Value::Null);
            assert_eq!(o["error"], Value::Null);
        }
    }

    /// The JSON Schema embedded in docs/report-schema.md (the first ```json block after the
    /// "## JSON Schema" heading).
    fn documented_schema() -> Value {
        let doc = include_str!("../../docs/report-schema.md");
        let section = doc.split("## JSON Schema").nth(1).expect("schema section");
        let block = section.split("```json\n").nth(1).expect("json block");
        let block = block.split("\n```").next().expect("end of block");
        serde_json::from_str(block).expect("schema is JSON")
    }

    #[test]
    fn json_matches_documented_schema() {
        let schema = documented_schema();
        let empty = RunReport {
            command: Mode::Diff,
            ..Default::default()
        };
        for report in [
            diff_report(),
            apply_report(),
            wait_report(),
            waves_report(),
            empty,
        ] {
            let v: Value = serde_json::from_str(&json(&report)).unwrap();
            if let Err(e) = jsonschema::validate(&schema, &v) {
                panic!("{e}\n{v:#}");
            }
        }
        // The schema is strict: an unknown field is a violation.
        let mut v: Value = serde_json::from_str(&json(&diff_report())).unwrap();
        v["objects"][0]["extra"] = json!(1);
        assert!(jsonschema::validate(&schema, &v).is_err());
    }
}
