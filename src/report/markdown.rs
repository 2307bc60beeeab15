//! The `-o markdown` report, for merge-request notes (GitLab, GitHub).
//!
//! Sized for a note (README "What `diff` and `apply` print"): a diff longer than [`COLLAPSE_LINES`] lines is collapsed in a
//! `<details>` block, and the whole note stays under GitLab's 1,000,000-character limit. How
//! long content is cut: the object table may use half of [`MARKDOWN_BUDGET`] (rows past it are
//! counted, not listed), run-level errors a tenth; then, while the note would exceed the
//! budget, the largest remaining diff is replaced by a one-line stub. The note says at the
//! top how many diffs and characters were cut and that the full report is in `-o json`.

use super::formats::{
    action_name, error_text, listed, not_ready, shown_diff, shows_body, sigil, source,
    summary_line, title, Shown,
};
use super::run::{Mode, Outcome, RunReport};
use crate::plan::Change;
use std::fmt::Write as _;

/// GitLab rejects merge-request notes over this many characters.
pub const NOTE_LIMIT: usize = 1_000_000;
/// What a note may use: the limit less a margin for the notices about what was cut.
pub const MARKDOWN_BUDGET: usize = 900_000;
/// Object diffs longer than this many lines are collapsed in `<details>`.
pub const COLLAPSE_LINES: usize = 200;

/// Report for a merge-request note: title with commit and cluster, summary table, table of
/// changed objects, drifted fields, and the diffs `shows_body` allows.
pub fn markdown(report: &RunReport, shown: Shown) -> String {
    let mut head = format!("### tend {}", md_text(report.command.as_str()));
    if report.dry_run {
        head.push_str(" (dry run)");
    }
    if let Some(commit) = &report.commit {
        let _ = write!(head, " · commit {}", md_code(commit));
    }
    if let Some(cluster) = &report.cluster {
        let _ = write!(head, " · cluster {}", md_code(cluster));
    }
    head.push_str("\n\n");
    let _ = writeln!(head, "**{}**\n", summary_line(report));
    if let Some(line) = super::waves::stopped_line(report) {
        let _ = writeln!(head, "**{}**\n", md_text(&line));
    }
    let mut waves = super::waves::lines(report);
    waves.extend(super::units::lines(report));
    for line in &waves {
        let _ = writeln!(head, "- {}", md_cell(line));
    }
    if !waves.is_empty() {
        head.push('\n');
    }
    for hook in report.hooks.iter().filter(|h| !h.log.is_empty()) {
        let _ = writeln!(
            head,
            "last lines of {}'s log:\n\n```",
            md_text(&hook.key.kind_and_name())
        );
        for line in &hook.log {
            let _ = writeln!(head, "{}", line.replace("```", "'''"));
        }
        head.push_str("```\n\n");
    }

    let mut body = String::new();
    let summary = report.summary();
    body.push_str("| action | count |\n|---|---:|\n");
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
        let _ = writeln!(body, "| {name} | {count} |");
    }
    let is_apply = report.command == Mode::Apply;
    if is_apply {
        let _ = writeln!(body, "| failed | {} |", report.failed());
    }
    body.push('\n');

    let listed: Vec<&Change> = report
        .changes
        .iter()
        .filter(|c| listed(c, report.outcomes.get(&c.key), false))
        .collect();
    let mut notices = Vec::new();
    let mut blocks = Vec::new();
    if listed.is_empty() {
        body.push_str("No changes: the cluster matches git.\n");
    } else {
        let table_budget = MARKDOWN_BUDGET / 2;
        // A diff whose dry runs failed says why, as an apply does.
        let with_result = is_apply || report.failed() > 0;
        body.push_str(if with_result {
            "| action | kind | object | source | result |\n|---|---|---|---|---|\n"
        } else {
            "| action | kind | object | source |\n|---|---|---|---|\n"
        });
        let mut unlisted = 0;
        for change in &listed {
            let row = table_row(report, change, with_result, shown);
            if body.len() + row.len() > table_budget {
                unlisted += 1;
                continue;
            }
            body.push_str(&row);
        }
        body.push('\n');
        if unlisted > 0 {
            notices.push(format!(
                "{unlisted} more object(s) are not listed in the table, to keep this note under \
                 {NOTE_LIMIT} characters; the full report is in `-o json`."
            ));
        }
        blocks = listed
            .iter()
            .filter_map(|c| object_block(c, report.outcomes.get(&c.key), shown))
            .collect();
    }

    let mut tail = String::new();
    if !report.waits.is_empty() {
        let waited = report.waits.len();
        let ready = waited - not_ready(report).count();
        let _ = writeln!(tail, "**--wait:** {ready} of {waited} objects ready\n");
        for (key, status) in not_ready(report) {
            let _ = writeln!(
                tail,
                "- not ready: {}: {}",
                md_cell(&key.to_string()),
                md_cell(&status.to_string())
            );
        }
        tail.push('\n');
    }
    if !report.errors.is_empty() {
        tail.push_str("#### Errors\n\n");
        let mut unlisted = 0;
        for error in &report.errors {
            let line = format!("- {}\n", md_cell(&error_text(error, shown.verbose)));
            if tail.len() + line.len() > MARKDOWN_BUDGET / 10 {
                unlisted += 1;
                continue;
            }
            tail.push_str(&line);
        }
        if unlisted > 0 {
            let _ = writeln!(tail, "- … and {unlisted} more error(s), in `-o json`");
        }
        tail.push('\n');
    }

    // Cut diffs, largest first, until the note fits.
    let fixed = head.len() + body.len() + tail.len();
    let mut total = fixed + blocks.iter().map(|b| b.full.len()).sum::<usize>();
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(blocks[i].full.len()));
    let (mut cut_count, mut cut_chars) = (0, 0);
    for i in order {
        if total <= MARKDOWN_BUDGET {
            break;
        }
        let block = &mut blocks[i];
        total -= block.full.len() - block.stub.len();
        cut_count += 1;
        cut_chars += block.full.len();
        block.cut = true;
    }
    if cut_count > 0 {
        notices.push(format!(
            "{cut_count} of {} diff(s), {cut_chars} characters in all, were cut (largest first) \
             to keep this note under {NOTE_LIMIT} characters; the full report is in `-o json`.",
            blocks.len()
        ));
    }

    let mut out = head;
    for notice in &notices {
        let _ = writeln!(out, "> **Note:** {notice}\n");
    }
    out.push_str(&body);
    if !blocks.is_empty() {
        out.push('\n');
    }
    for block in &blocks {
        out.push_str(if block.cut { &block.stub } else { &block.full });
    }
    out.push_str(&tail);
    // One trailing newline.
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// One object's section: the full one, and the stub that replaces it when cut.
struct Block {
    full: String,
    stub: String,
    cut: bool,
}

/// A row of the object table.
fn table_row(report: &RunReport, change: &Change, with_result: bool, shown: Shown) -> String {
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
    let mut row = format!(
        "| {} | {} | {} | {} |",
        action,
        md_cell(&format!("{} {}", change.api_version, change.key.kind)),
        md_cell(&object),
        md_cell(&source),
    );
    if with_result {
        let result = match report.outcomes.get(&change.key) {
            Some(Outcome { error: Some(e), .. }) => {
                format!("failed: {}", error_text(e, shown.verbose))
            }
            Some(Outcome {
                skipped: Some(s), ..
            }) => format!("skipped: {s}"),
            Some(_) => "ok".to_string(),
            None => String::new(),
        };
        let _ = write!(row, " {} |", md_cell(&result));
    }
    row.push('\n');
    row
}

/// The section of an object with drift or a shown diff: a bold title, the drifted fields, and
/// the diff (in `<details>` past [`COLLAPSE_LINES`] lines). None when there is nothing to show.
fn object_block(change: &Change, outcome: Option<&Outcome>, shown: Shown) -> Option<Block> {
    let diff = if shows_body(change.action, shown) {
        shown_diff(change, outcome)
    } else {
        String::new()
    };
    if diff.is_empty() && change.drift.is_empty() {
        return None;
    }
    let mut head = format!(
        "**{} {}**\n\n",
        sigil(change.action),
        md_text(&title(change))
    );
    for drift in &change.drift {
        let _ = writeln!(head, "- drift: {}", md_text(&drift.to_string()));
    }
    if !change.drift.is_empty() {
        head.push('\n');
    }
    let lines = diff.lines().count();
    let full = if diff.is_empty() {
        head.clone()
    } else if lines > COLLAPSE_LINES {
        format!(
            "{head}<details><summary>diff: {lines} lines</summary>\n\n{}\n</details>\n\n",
            md_fenced_diff(&diff)
        )
    } else {
        format!("{head}{}\n", md_fenced_diff(&diff))
    };
    let stub = format!(
        "{head}_Diff of {lines} lines ({} characters) cut to fit the note; it is in `-o json`._\n\n",
        diff.len()
    );
    Some(Block {
        full,
        stub,
        cut: false,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Action;
    use crate::report::fixtures::*;
    use serde_json::{json, Value};

    const PLAIN: Shown = Shown {
        verbose: false,
        show_creates: false,
    };
    const CREATES: Shown = Shown {
        verbose: false,
        show_creates: true,
    };

    #[test]
    fn markdown_report() {
        let out = markdown(&apply_report(), CREATES);
        assert_no_secret(&out);
        assert!(out.starts_with(
            "### tend apply · commit `0123456789abcdef0123456789abcdef01234567` · cluster `dc1`\n\n"
        ));
        assert!(out.contains("| action | count |\n|---|---:|\n| create | 1 |\n| update | 2 |\n| prune | 2 |\n| unchanged | 2 |\n| failed | 1 |\n"));
        assert!(out.contains(
            "| ~ update | apps/v1 Deployment | web/nginx | web/nginx.yaml:12 | failed: admission webhook denied the request |\n"
        ));
        assert!(out.contains("| - prune | v1 Namespace | legacy |  | skipped: Namespaces are never pruned without tend.dev/prune: allow |\n"), "{out}");
        // Short diffs are open; drift is listed above the diff.
        assert!(out.contains("**~ apps/v1 Deployment web/nginx**\n\n- drift: spec.template.spec.containers\\[0\\].image: nginx:1.27 → nginx:1.28 (set by kubectl-set at 2026-11-23T21:40:00Z)\n\n```diff\n@@"), "{out}");
        assert!(!out.contains("<details>"), "{out}");
        assert!(!out.contains("> **Note:**"), "{out}");
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
    fn markdown_diff_with_failed_dry_runs_says_why() {
        let mut r = apply_report();
        r.command = Mode::Diff;
        let out = markdown(&r, PLAIN);
        assert!(
            out.contains("| action | kind | object | source | result |\n"),
            "{out}"
        );
        assert!(
            out.contains("| failed: admission webhook denied the request |\n"),
            "{out}"
        );
        // Without failures a diff has no result column.
        let out = markdown(&diff_report(), PLAIN);
        assert!(
            out.contains("| action | kind | object | source |\n|---|---|---|---|\n"),
            "{out}"
        );
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
        r.command = Mode::Apply;
        r.dry_run = true;
        r.commit = None;
        let out = markdown(&r, CREATES);
        assert!(out.starts_with("### tend apply (dry run) · cluster `dc1`\n"));
        assert!(out.contains("No changes: the cluster matches git.\n"));
        assert!(!out.contains("<details>"));
    }

    fn big_configmaps(count: usize, keys: usize) -> Vec<Change> {
        let big: serde_json::Map<String, Value> = (0..keys)
            .map(|i| (format!("key{i:04}"), json!("x".repeat(60))))
            .collect();
        (0..count)
            .map(|i| Change {
                key: key("", "ConfigMap", Some("web"), &format!("big{i}")),
                api_version: "v1".into(),
                action: Action::Create,
                origin: None,
                before: None,
                after: Some(cm(&format!("big{i}"), Value::Object(big.clone()))),
                reason: None,
                drift: vec![],
            })
            .collect()
    }

    #[test]
    fn markdown_creates_are_one_row_without_show_creates() {
        let mut r = diff_report();
        r.changes = big_configmaps(3, 10);
        let out = markdown(&r, PLAIN);
        assert!(
            out.contains("| + create | v1 ConfigMap | web/big2 |"),
            "{out}"
        );
        assert!(!out.contains("```diff"), "{out}");
    }

    #[test]
    fn markdown_collapses_long_diffs() {
        let mut r = diff_report();
        // 250 keys: a diff over 200 lines; 20 keys: under.
        r.changes = big_configmaps(1, 250);
        r.changes
            .extend(big_configmaps(1, 20).into_iter().map(|mut c| {
                c.key.name = "small".into();
                c
            }));
        let out = markdown(&r, CREATES);
        assert_eq!(out.matches("<details>").count(), 1, "{out}");
        assert!(
            out.contains("<details><summary>diff: 257 lines</summary>\n\n```diff\n@@"),
            "{out}"
        );
        assert!(
            out.contains("**+ v1 ConfigMap web/small**\n\n```diff\n@@"),
            "{out}"
        );
    }

    #[test]
    fn markdown_stays_under_the_note_limit() {
        let mut r = diff_report();
        // About 5 MB of diffs: 200 ConfigMaps of 400 lines of 70 characters.
        r.changes = big_configmaps(200, 400);
        let diffs: usize = r.changes.iter().map(|c| c.diff().len()).sum();
        assert!(diffs > 5_000_000, "{diffs}");
        let out = markdown(&r, CREATES);
        assert!(out.chars().count() < NOTE_LIMIT, "{}", out.len());
        assert!(out.len() <= MARKDOWN_BUDGET + 1000, "{}", out.len());
        assert!(out.contains("> **Note:** "), "{out:.2000}");
        assert!(
            out.contains("characters in all, were cut (largest first)"),
            "{out:.2000}"
        );
        assert!(out.contains("the full report is in `-o json`"));
        assert!(out.contains("cut to fit the note; it is in `-o json`"));
        // Every object is still in the table.
        assert_eq!(out.matches("| + create | v1 ConfigMap |").count(), 200);
    }

    #[test]
    fn markdown_table_is_bounded_too() {
        let mut r = diff_report();
        r.changes = big_configmaps(1, 1);
        let one = r.changes[0].clone();
        r.changes = (0..20_000)
            .map(|i| {
                let mut c = one.clone();
                c.key.name = format!("{}-{i}", "n".repeat(40));
                c
            })
            .collect();
        let out = markdown(&r, PLAIN);
        assert!(out.len() < NOTE_LIMIT, "{}", out.len());
        assert!(
            out.contains("more object(s) are not listed in the table"),
            "{out:.1000}"
        );
    }
}
