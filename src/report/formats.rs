//! The report of `tend diff` / `tend apply` in its three formats: text (coloured unified diffs
//! for a terminal or CI log), json (the machine report, schema in docs/report-schema.md) and
//! markdown (merge-request comments).
//!
//! Object contents reach the output only through [`Change::diff`], which masks Secret values;
//! nothing here prints a change's `before`/`after` directly.

use super::run::{Outcome, RunReport};
use crate::plan::{Action, Change};
use crate::render::object::ObjectKey;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Version of the JSON report's schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// GitHub rejects comments over 65536 characters; keep a margin for the tables.
const MARKDOWN_BUDGET: usize = 60_000;

const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// `+` create, `~` update, `±` replace, `-` prune, `=` unchanged.
fn sigil(action: Action) -> char {
    match action {
        Action::Create => '+',
        Action::Update => '~',
        Action::Replace => '±',
        Action::Prune => '-',
        Action::Unchanged => '=',
    }
}

fn action_name(action: Action) -> &'static str {
    match action {
        Action::Create => "create",
        Action::Update => "update",
        Action::Replace => "replace",
        Action::Prune => "prune",
        Action::Unchanged => "unchanged",
    }
}

/// `apps/v1 Deployment web/nginx`.
fn title(change: &Change) -> String {
    let key = &change.key;
    match &key.namespace {
        Some(ns) => format!("{} {} {ns}/{}", change.api_version, key.kind, key.name),
        None => format!("{} {} {}", change.api_version, key.kind, key.name),
    }
}

/// `web/nginx.yaml:12` (no generated-by; that is a separate field).
fn source(change: &Change) -> Option<String> {
    change
        .origin
        .as_ref()
        .map(|o| format!("{}:{}", o.file.display(), o.line))
}

/// The diff a report shows: nothing for unchanged objects (their before/after may be absent or
/// identical) and for prunes a guard skipped (nothing happens to them), the masked unified diff
/// otherwise.
fn shown_diff(change: &Change, outcome: Option<&Outcome>) -> String {
    if change.action == Action::Unchanged || outcome.is_some_and(|o| o.skipped.is_some()) {
        String::new()
    } else {
        change.diff()
    }
}

/// Whether an object appears in the per-object part of a report.
fn listed(change: &Change, outcome: Option<&Outcome>, verbose: bool) -> bool {
    verbose
        || change.action != Action::Unchanged
        || outcome.is_some_and(|o| o.error.is_some() || o.skipped.is_some())
}

/// `3 to create, 2 to update, 1 to prune, 994 unchanged[, N skipped by a guard][, N failed]`.
fn summary_line(report: &RunReport) -> String {
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

/// Human report: per listed object a header line (`~ apps/v1 Deployment web/nginx  # file:line`),
/// its diff, and for `apply` its failure or skipped prune; then the summary line and run-level
/// errors. Unchanged objects are listed only when `verbose`. `color` adds ANSI SGR colours.
pub fn text(report: &RunReport, color: bool, verbose: bool) -> String {
    let paint = |code: &str, s: &str| {
        if color {
            format!("{code}{s}{RESET}")
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    for change in &report.changes {
        let outcome = report.outcomes.get(&change.key);
        if !listed(change, outcome, verbose) {
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
        for line in shown_diff(change, outcome).lines() {
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
                out.push_str(&paint(RED, &format!("  ! failed: {error}")));
                out.push('\n');
            }
            if let Some(reason) = &outcome.skipped {
                out.push_str(&paint(YELLOW, &format!("  skipped: {reason}")));
                out.push('\n');
            }
        }
        if change.action != Action::Unchanged {
            out.push('\n');
        }
    }
    out.push_str(&summary_line(report));
    out.push('\n');
    for (key, status) in not_ready(report) {
        out.push_str(&paint(RED, &format!("not ready: {key}: {status}")));
        out.push('\n');
    }
    for error in &report.errors {
        out.push_str(&paint(RED, &format!("error: {error}")));
        out.push('\n');
    }
    out
}

/// `--wait`: the objects waited for that did not become ready (Current).
fn not_ready(report: &RunReport) -> impl Iterator<Item = (&ObjectKey, &crate::kstatus::Status)> {
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
                "skipped": outcome.and_then(|o| o.skipped.clone()),
                "reason": change.reason,
                "diff": shown_diff(change, outcome),
                "wait": report.waits.get(&change.key),
            })
        })
        .collect();
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
    });
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// Escape text for raw HTML (`<summary>`: markdown is not processed inside an HTML block).
fn html_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Escape text for inline markdown.
fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Escape text for a table cell: inline escaping, plus `|` and line breaks.
fn md_cell(s: &str) -> String {
    md_text(s)
        .replace('|', "\\|")
        .replace("\r\n", "<br>")
        .replace('\n', "<br>")
}

/// Inline code span that survives backticks in `s`.
fn md_code(s: &str) -> String {
    let longest = longest_run(s, '`');
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in s.chars() {
        run = if ch == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// A fenced ```diff block whose fence is longer than any backtick run in the diff (a ConfigMap
/// may well contain markdown).
fn md_fenced_diff(diff: &str) -> String {
    let fence = "`".repeat(longest_run(diff, '`').max(2) + 1);
    let mut out = format!("{fence}diff\n{diff}");
    if !diff.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    out
}

/// Report for a merge-request comment (GitHub/GitLab markdown): title with commit and
/// cluster, summary table, table of changed objects, and each diff in a collapsible block.
pub fn markdown(report: &RunReport) -> String {
    let mut out = format!("### tend {}", md_text(&report.command));
    if report.dry_run {
        out.push_str(" (dry run)");
    }
    if let Some(commit) = &report.commit {
        let _ = write!(out, " · commit {}", md_code(commit));
    }
    if let Some(cluster) = &report.cluster {
        let _ = write!(out, " · cluster {}", md_code(cluster));
    }
    out.push_str("\n\n");
    let _ = writeln!(out, "**{}**\n", summary_line(report));

    let summary = report.summary();
    out.push_str("| action | count |\n|---|---:|\n");
    for (name, count) in [
        ("create", summary.create),
        ("update", summary.update),
        ("replace", summary.replace),
        ("prune", summary.prune),
        ("unchanged", summary.unchanged),
    ] {
        // A replace row only when there are any (the table stays as it was otherwise).
        if name == "replace" && count == 0 {
            continue;
        }
        let _ = writeln!(out, "| {name} | {count} |");
    }
    let is_apply = report.command == "apply";
    if is_apply {
        let _ = writeln!(out, "| failed | {} |", report.failed());
    }
    out.push('\n');

    let listed: Vec<&Change> = report
        .changes
        .iter()
        .filter(|c| listed(c, report.outcomes.get(&c.key), false))
        .collect();
    if listed.is_empty() {
        out.push_str("No changes: the cluster matches git.\n");
    } else {
        out.push_str(if is_apply {
            "| action | kind | object | source | result |\n|---|---|---|---|---|\n"
        } else {
            "| action | kind | object | source |\n|---|---|---|---|\n"
        });
        for change in &listed {
            let object = match &change.key.namespace {
                Some(ns) => format!("{ns}/{}", change.key.name),
                None => change.key.name.clone(),
            };
            let mut source = source(change).unwrap_or_default();
            if let Some(by) = change.origin.as_ref().and_then(|o| o.generated_by.as_ref()) {
                let _ = write!(source, " (generated by {})", by.kind_and_name());
            }
            let mut action = format!("{} {}", sigil(change.action), action_name(change.action));
            if let Some(reason) = &change.reason {
                let _ = write!(action, " ({})", md_cell(reason));
            }
            let _ = write!(
                out,
                "| {} | {} | {} | {} |",
                action,
                md_cell(&format!("{} {}", change.api_version, change.key.kind)),
                md_cell(&object),
                md_cell(&source),
            );
            if is_apply {
                let result = match report.outcomes.get(&change.key) {
                    Some(Outcome { error: Some(e), .. }) => format!("failed: {e}"),
                    Some(Outcome {
                        skipped: Some(s), ..
                    }) => format!("skipped: {s}"),
                    Some(_) => "ok".to_string(),
                    None => String::new(),
                };
                let _ = write!(out, " {} |", md_cell(&result));
            }
            out.push('\n');
        }
        out.push('\n');

        let mut omitted = 0;
        for change in &listed {
            let diff = shown_diff(change, report.outcomes.get(&change.key));
            if diff.is_empty() {
                continue;
            }
            let block = format!(
                "<details><summary>{} {}</summary>\n\n{}\n</details>\n\n",
                sigil(change.action),
                html_text(&title(change)),
                md_fenced_diff(&diff)
            );
            if out.len() + block.len() > MARKDOWN_BUDGET {
                omitted += 1;
                continue;
            }
            out.push_str(&block);
        }
        if omitted > 0 {
            let _ = writeln!(
                out,
                "_{omitted} more diff(s) omitted to stay within the comment size limit; \
                 run `tend diff` to see them._\n"
            );
        }
    }

    if !report.waits.is_empty() {
        if !out.ends_with("\n\n") {
            out.push('\n');
        }
        let waited = report.waits.len();
        let ready = waited - not_ready(report).count();
        let _ = writeln!(out, "**--wait:** {ready} of {waited} objects ready\n");
        for (key, status) in not_ready(report) {
            let _ = writeln!(
                out,
                "- not ready: {}: {}",
                md_cell(&key.to_string()),
                md_cell(&status.to_string())
            );
        }
        out.push('\n');
    }
    if !report.errors.is_empty() {
        out.push_str("#### Errors\n\n");
        for error in &report.errors {
            let _ = writeln!(out, "- {}", md_cell(error));
        }
        out.push('\n');
    }
    // One trailing newline.
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::object::{ObjectKey, Origin};
    use std::path::PathBuf;
    use std::time::Duration;

    const CANARY: &str = "canary-hunter2";
    const CANARY_B64: &str = "Y2FuYXJ5LWh1bnRlcjI="; // base64("canary-hunter2")

    fn key(group: &str, kind: &str, ns: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            kind: kind.into(),
            namespace: ns.map(str::to_string),
            name: name.into(),
        }
    }

    fn origin(file: &str, line: usize, by: Option<&str>) -> Option<Origin> {
        Some(Origin {
            file: PathBuf::from(file),
            line,
            generated_by: by
                .map(|owner| key(crate::GROUP, "RegistryMirror", Some("registries"), owner)),
        })
    }

    fn cm(name: &str, data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "web"}, "data": data})
    }

    fn secret(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "db", "namespace": "web"}, "data": data})
    }

    fn deployment(image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "nginx", "namespace": "web"},
               "spec": {"replicas": 2, "template": {"spec": {"containers": [
                   {"name": "nginx", "image": image}]}}}})
    }

    fn changes() -> Vec<Change> {
        vec![
            Change {
                key: key("", "ConfigMap", Some("web"), "app"),
                api_version: "v1".into(),
                action: Action::Create,
                origin: origin("web/app.yaml", 1, None),
                before: None,
                after: Some(cm("app", json!({"mode": "a|b `x`"}))),
                reason: None,
            },
            Change {
                key: key("apps", "Deployment", Some("web"), "nginx"),
                api_version: "apps/v1".into(),
                action: Action::Update,
                origin: origin("web/nginx.yaml", 12, None),
                before: Some(deployment("nginx:1.27")),
                after: Some(deployment("nginx:1.28")),
                reason: None,
            },
            Change {
                key: key("", "Secret", Some("web"), "db"),
                api_version: "v1".into(),
                action: Action::Update,
                origin: origin("web/db.yaml", 3, None),
                before: Some(secret(json!({"pw": "b2xk"}))),
                after: Some(secret(json!({"pw": CANARY_B64, "raw": CANARY}))),
                reason: None,
            },
            Change {
                key: key("", "ConfigMap", Some("web"), "mirror"),
                api_version: "v1".into(),
                action: Action::Unchanged,
                origin: origin("registries/mirrors.yaml", 4, Some("dockerhub")),
                before: Some(cm("mirror", json!({"a": "1"}))),
                after: Some(cm("mirror", json!({"a": "1"}))),
                reason: None,
            },
            Change {
                key: key("", "Secret", Some("web"), "same"),
                api_version: "v1".into(),
                action: Action::Unchanged,
                origin: origin("web/same.yaml", 1, None),
                before: Some(secret(json!({"pw": CANARY_B64}))),
                after: Some(secret(json!({"pw": CANARY_B64}))),
                reason: None,
            },
            Change {
                key: key("", "ConfigMap", Some("web"), "old"),
                api_version: "v1".into(),
                action: Action::Prune,
                origin: None,
                before: Some(cm("old", json!({"x": "y"}))),
                after: None,
                reason: None,
            },
            Change {
                key: key("", "Namespace", None, "legacy"),
                api_version: "v1".into(),
                action: Action::Prune,
                origin: None,
                before: Some(json!({"apiVersion": "v1", "kind": "Namespace",
                                    "metadata": {"name": "legacy"}})),
                after: None,
                reason: None,
            },
        ]
    }

    fn diff_report() -> RunReport {
        RunReport {
            command: "diff".into(),
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            cluster: Some("dc1".into()),
            dry_run: false,
            changes: changes(),
            outcomes: Default::default(),
            waits: Default::default(),
            errors: vec![],
            duration: Duration::from_millis(1234),
        }
    }

    /// An apply with `--wait` where the first object became ready and the second did not.
    fn wait_report() -> RunReport {
        use crate::kstatus::Status;
        let mut r = diff_report();
        r.command = "apply".into();
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
        let text = text(&r, false, false);
        let line = format!("not ready: {second}: InProgress: phase Pending");
        assert!(text.contains(&line), "{text}");
        assert_eq!(text.matches("not ready:").count(), 1, "{text}");
        let v: Value = serde_json::from_str(&json(&r)).unwrap();
        assert_eq!(v["objects"][0]["wait"], json!({"status": "Current"}));
        assert_eq!(v["objects"][1]["wait"]["status"], "InProgress");
        assert_eq!(v["objects"][2]["wait"], Value::Null);
        let md = markdown(&r);
        assert!(md.contains("**--wait:** 1 of 2 objects ready"), "{md}");
        assert!(md.contains("- not ready: "), "{md}");
    }

    fn apply_report() -> RunReport {
        let mut r = diff_report();
        r.command = "apply".into();
        for c in &r.changes {
            r.outcomes.insert(
                c.key.clone(),
                Outcome {
                    duration: Duration::from_millis(7),
                    ..Default::default()
                },
            );
        }
        r.outcomes
            .get_mut(&key("apps", "Deployment", Some("web"), "nginx"))
            .unwrap()
            .error = Some("admission webhook denied the request".into());
        r.outcomes
            .get_mut(&key("", "Namespace", None, "legacy"))
            .unwrap()
            .skipped = Some("Namespaces are never pruned without tend.dev/prune: allow".into());
        r.errors = vec!["lease renewal failed | retrying".into()];
        r
    }

    fn assert_no_secret(out: &str) {
        for v in [CANARY, CANARY_B64, "b2xk", "Y2FuYXJ5"] {
            assert!(!out.contains(v), "secret value {v} leaked:\n{out}");
        }
    }

    #[test]
    fn text_diff_report() {
        let out = text(&diff_report(), false, false);
        assert_no_secret(&out);
        assert!(out.contains("+ v1 ConfigMap web/app  # web/app.yaml:1\n@@ -0,0 +1,"));
        assert!(out.contains("~ apps/v1 Deployment web/nginx  # web/nginx.yaml:12\n@@"));
        assert!(out.contains("-      - image: nginx:1.27\n+      - image: nginx:1.28\n"));
        assert!(out.contains("- v1 ConfigMap web/old\n"));
        assert!(out.contains("- v1 Namespace legacy\n"));
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
        let out = text(&diff_report(), false, true);
        assert_no_secret(&out);
        assert!(out.contains(
            "= v1 ConfigMap web/mirror  # registries/mirrors.yaml:4 (generated by RegistryMirror registries/dockerhub)\n"
        ));
        assert!(out.contains("= v1 Secret web/same  # web/same.yaml:1\n"));
    }

    #[test]
    fn text_colour() {
        let out = text(&diff_report(), true, false);
        assert_no_secret(&out);
        assert!(out.contains("\x1b[1m\x1b[33m~ apps/v1 Deployment web/nginx\x1b[0m"));
        assert!(out.contains("\x1b[32m+      - image: nginx:1.28\x1b[0m\n"));
        assert!(out.contains("\x1b[31m-      - image: nginx:1.27\x1b[0m\n"));
        assert!(out.contains("\x1b[36m@@"));
    }

    #[test]
    fn text_apply_report_shows_failures_skips_and_errors() {
        let out = text(&apply_report(), false, false);
        assert_no_secret(&out);
        assert!(out.contains("  ! failed: admission webhook denied the request\n"));
        assert!(out.contains("- v1 Namespace legacy\n  skipped: Namespaces are never pruned"));
        assert!(out.contains(
            "1 to create, 2 to update, 2 to prune, 2 unchanged, 1 of them skipped by a guard, 1 failed\n"
        ));
        assert!(out.ends_with("error: lease renewal failed | retrying\n"));
    }

    #[test]
    fn replaces_show_their_reason_in_every_format() {
        let mut r = diff_report();
        r.changes.retain(|c| c.key.kind == "Deployment");
        r.changes[0].action = Action::Replace;
        r.changes[0].reason = Some("spec.selector: field is immutable".into());
        let out = text(&r, false, false);
        assert!(out.starts_with("± apps/v1 Deployment web/nginx  # web/nginx.yaml:12\n  replace: spec.selector: field is immutable\n@@"), "{out}");
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
        let md = markdown(&r);
        assert!(md.contains("| replace | 1 |\n"), "{md}");
        assert!(
            md.contains("| ± replace (spec.selector: field is immutable) | apps/v1 Deployment |"),
            "{md}"
        );
    }

    #[test]
    fn text_in_sync_is_just_the_summary() {
        let mut r = diff_report();
        r.changes.retain(|c| c.action == Action::Unchanged);
        assert_eq!(
            text(&r, true, false),
            "0 to create, 0 to update, 0 to prune, 2 unchanged\n"
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
                "objects"
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
            command: "diff".into(),
            ..Default::default()
        };
        for report in [diff_report(), apply_report(), wait_report(), empty] {
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

    #[test]
    fn markdown_report() {
        let out = markdown(&apply_report());
        assert_no_secret(&out);
        assert!(out.starts_with(
            "### tend apply · commit `0123456789abcdef0123456789abcdef01234567` · cluster `dc1`\n\n"
        ));
        assert!(out.contains("| action | count |\n|---|---:|\n| create | 1 |\n| update | 2 |\n| prune | 2 |\n| unchanged | 2 |\n| failed | 1 |\n"));
        assert!(out.contains(
            "| ~ update | apps/v1 Deployment | web/nginx | web/nginx.yaml:12 | failed: admission webhook denied the request |\n"
        ));
        assert!(out.contains("| - prune | v1 Namespace | legacy |  | skipped: Namespaces are never pruned without tend.dev/prune: allow |\n"), "{out}");
        assert!(out
            .contains("<details><summary>~ apps/v1 Deployment web/nginx</summary>\n\n```diff\n@@"));
        assert!(out.contains("```\n\n</details>\n"));
        // The ConfigMap's value has a backtick: fences still close, `|` is only in the diff.
        assert!(out.contains("+  mode: a|b `x`\n"));
        assert!(out.contains("- lease renewal failed \\| retrying\n"));
        assert!(!out.contains("mirror"), "{out}");
        assert!(out.ends_with('\n') && !out.ends_with("\n\n"));
        // Every table row has the same number of unescaped pipes as its header.
        for table in out.split("\n\n").filter(|b| b.starts_with('|')) {
            let counts: Vec<usize> = table
                .lines()
                .map(|l| l.replace("\\|", "").matches('|').count())
                .collect();
            assert!(counts.windows(2).all(|w| w[0] == w[1]), "{table}");
        }
    }

    #[test]
    fn markdown_escapes_and_fences() {
        assert_eq!(md_cell("a|b\nc <x> *y*"), "a\\|b<br>c &lt;x&gt; \\*y\\*");
        assert_eq!(md_code("a`b"), "``a`b``");
        assert_eq!(md_code("`a"), "`` `a ``");
        let fenced = md_fenced_diff("+x: ```\n");
        assert!(fenced.starts_with("````diff\n") && fenced.ends_with("\n````\n"));
    }

    #[test]
    fn markdown_in_sync_and_dry_run() {
        let mut r = diff_report();
        r.changes.retain(|c| c.action == Action::Unchanged);
        r.command = "apply".into();
        r.dry_run = true;
        r.commit = None;
        let out = markdown(&r);
        assert!(out.starts_with("### tend apply (dry run) · cluster `dc1`\n"));
        assert!(out.contains("No changes: the cluster matches git.\n"));
        assert!(!out.contains("<details>"));
    }

    #[test]
    fn markdown_respects_size_budget() {
        let big: serde_json::Map<String, Value> = (0..400)
            .map(|i| (format!("key{i:04}"), json!("x".repeat(60))))
            .collect();
        let mut r = diff_report();
        r.changes = (0..10)
            .map(|i| Change {
                key: key("", "ConfigMap", Some("web"), &format!("big{i}")),
                api_version: "v1".into(),
                action: Action::Create,
                origin: None,
                before: None,
                after: Some(cm(&format!("big{i}"), Value::Object(big.clone()))),
                reason: None,
            })
            .collect();
        let out = markdown(&r);
        assert!(out.len() < 65_536, "{}", out.len());
        assert!(out.contains("more diff(s) omitted"));
        assert!(out.matches("<details>").count() >= 1);
    }
}
