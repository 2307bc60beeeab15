//! The report of a run over several clusters (README "A fleet of clusters"): each cluster's
//! own report (the one a single-cluster run prints), or why it has none, under one cover.
//! Text prints a section per cluster and a table; JSON one document with a `clusters` array
//! of the single-cluster reports (docs/report-schema.md, "Fleet report"); markdown one note:
//! a table of clusters, then each cluster's report folded, the note within GitLab's limit.

use super::formats::{self, summary_line, Shown};
use super::markdown::{markdown_within, md_cell, md_code, MARKDOWN_BUDGET, NOTE_LIMIT};
use super::run::{Mode, RunReport};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Version of the fleet JSON document's schema; bumped on any incompatible change.
pub const FLEET_SCHEMA_VERSION: u32 = 1;

/// What a run over several clusters came to, cluster by cluster, in the fleet's order.
#[derive(Debug, Clone)]
pub struct FleetReport {
    pub command: Mode,
    pub dry_run: bool,
    pub clusters: Vec<ClusterEntry>,
}

#[derive(Debug, Clone)]
pub struct ClusterEntry {
    pub name: String,
    pub state: ClusterState,
}

/// How one cluster's part of the run ended.
#[derive(Debug, Clone)]
pub enum ClusterState {
    /// It ran to a report (which may list failures).
    Ran(Box<RunReport>),
    /// It could not run: unreachable, lock held, the desired state refused. The error.
    Error(String),
    /// It was not started (`--fail-fast`), and why.
    NotRun(String),
}

impl ClusterState {
    /// One word for the cluster: `in sync`, `differences`, `applied`, `failed`, `error`,
    /// `not run`.
    pub fn result(&self, command: Mode) -> &'static str {
        match self {
            ClusterState::Ran(report) if report.failed() + report.errors.len() > 0 => "failed",
            ClusterState::Ran(report) if !report.has_differences() => "in sync",
            ClusterState::Ran(_) if command == Mode::Diff => "differences",
            ClusterState::Ran(_) => "applied",
            ClusterState::Error(_) => "error",
            ClusterState::NotRun(_) => "not run",
        }
    }

    pub fn report(&self) -> Option<&RunReport> {
        match self {
            ClusterState::Ran(report) => Some(report),
            _ => None,
        }
    }

    /// Why it has no report.
    pub fn error(&self) -> Option<&str> {
        match self {
            ClusterState::Ran(_) => None,
            ClusterState::Error(e) | ClusterState::NotRun(e) => Some(e),
        }
    }
}

/// Objects whose live state others changed (drift named with its manager).
pub fn drifted(report: &RunReport) -> usize {
    report
        .changes
        .iter()
        .filter(|c| !c.drift.is_empty())
        .count()
}

/// The counts the fleet's tables show for one cluster: created, updated, replaced, pruned,
/// unchanged, failed, drift, waves.
fn counts(report: &RunReport) -> [usize; 8] {
    let s = report.summary();
    [
        s.create,
        s.update,
        s.replace,
        s.prune,
        s.unchanged,
        report.failed(),
        drifted(report),
        report.wave_summaries().len(),
    ]
}

const COLUMNS: [&str; 8] = [
    "create",
    "update",
    "replace",
    "prune",
    "unchanged",
    "failed",
    "drift",
    "waves",
];

/// Text: a section per cluster (`== cluster NAME: RESULT ==`, then its report or its error),
/// then a table of the clusters.
pub fn text(fleet: &FleetReport, color: bool, shown: Shown) -> String {
    let mut out = String::new();
    for cluster in &fleet.clusters {
        let result = cluster.state.result(fleet.command);
        let _ = writeln!(out, "== cluster {}: {result} ==", cluster.name);
        match &cluster.state {
            ClusterState::Ran(report) => out.push_str(&formats::text(report, color, shown)),
            ClusterState::Error(error) => {
                let _ = writeln!(out, "error: {}", formats::error_text(error, shown.verbose));
            }
            ClusterState::NotRun(why) => {
                let _ = writeln!(out, "{why}");
            }
        }
        out.push('\n');
    }
    out.push_str(&text_table(fleet));
    out
}

fn text_table(fleet: &FleetReport) -> String {
    let name_width = fleet
        .clusters
        .iter()
        .map(|c| c.name.chars().count())
        .chain(["cluster".len()])
        .max()
        .unwrap_or(7);
    let mut out = format!("{:<name_width$}  {:<11}", "cluster", "result");
    for column in COLUMNS {
        let _ = write!(out, " {column:>9}");
    }
    out.push('\n');
    for cluster in &fleet.clusters {
        let result = cluster.state.result(fleet.command);
        let _ = write!(out, "{:<name_width$}  {result:<11}", cluster.name);
        match cluster.state.report() {
            Some(report) => {
                for count in counts(report) {
                    let _ = write!(out, " {count:>9}");
                }
            }
            None => {
                for _ in COLUMNS {
                    let _ = write!(out, " {:>9}", "-");
                }
            }
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", totals_line(fleet));
    out
}

/// `3 clusters: 1 in sync, 1 differences, 1 error`.
pub fn totals_line(fleet: &FleetReport) -> String {
    let mut by_result: Vec<(&str, usize)> = Vec::new();
    for cluster in &fleet.clusters {
        let result = cluster.state.result(fleet.command);
        match by_result.iter_mut().find(|(r, _)| *r == result) {
            Some((_, n)) => *n += 1,
            None => by_result.push((result, 1)),
        }
    }
    let parts: Vec<String> = by_result.iter().map(|(r, n)| format!("{n} {r}")).collect();
    format!(
        "{}: {}",
        crate::text::count(fleet.clusters.len(), "cluster"),
        parts.join(", ")
    )
}

/// The JSON document: `clusters`, each with its name, result, error and the report a
/// single-cluster run prints (`null` when it has none).
pub fn json(fleet: &FleetReport) -> String {
    let clusters: Vec<Value> = fleet
        .clusters
        .iter()
        .map(|cluster| {
            json!({
                "name": cluster.name,
                "result": cluster.state.result(fleet.command),
                "error": cluster.state.error(),
                "report": cluster.state.report().map(formats::json_value),
            })
        })
        .collect();
    let value = json!({
        "fleetSchemaVersion": FLEET_SCHEMA_VERSION,
        "command": fleet.command,
        "dryRun": fleet.dry_run,
        "summary": totals_line(fleet),
        "clusters": clusters,
    });
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}

/// One merge-request note: a table of the clusters, then each cluster's report in
/// `<details>`, each within its share of the note's budget.
pub fn markdown(fleet: &FleetReport, shown: Shown) -> String {
    let mut out = format!("### tend {}", fleet.command.as_str());
    if fleet.dry_run {
        out.push_str(" (dry run)");
    }
    let _ = write!(out, " · {}\n\n", totals_line(fleet));
    out.push_str("| cluster | result |");
    for column in COLUMNS {
        let _ = write!(out, " {column} |");
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---:|".repeat(COLUMNS.len()));
    out.push('\n');
    for cluster in &fleet.clusters {
        let result = cluster.state.result(fleet.command);
        let _ = write!(out, "| {} | {result} |", md_code(&cluster.name));
        match cluster.state.report() {
            Some(report) => {
                for count in counts(report) {
                    let _ = write!(out, " {count} |");
                }
            }
            None => out.push_str(&" – |".repeat(COLUMNS.len())),
        }
        out.push('\n');
    }
    out.push('\n');
    // The table is small; the clusters share the rest of the budget.
    let share = MARKDOWN_BUDGET.saturating_sub(out.len()) / fleet.clusters.len().max(1);
    // Each section keeps to its share, but a share has a floor: with very many clusters the
    // last sections may not fit at all.
    let mut unshown = 0;
    for cluster in &fleet.clusters {
        let section = details(fleet.command, cluster, shown, share);
        if out.len() + section.len() > MARKDOWN_BUDGET {
            unshown += 1;
            continue;
        }
        out.push_str(&section);
    }
    if unshown > 0 {
        let _ = writeln!(
            out,
            "> **Note:** the details of {unshown} cluster(s) are left out to keep this note under {NOTE_LIMIT} characters; the full report is in `-o json`.\n"
        );
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// One cluster's folded section, within `share` characters.
fn details(command: Mode, cluster: &ClusterEntry, shown: Shown, share: usize) -> String {
    let result = cluster.state.result(command);
    let summary = match &cluster.state {
        ClusterState::Ran(report) => summary_line(report),
        ClusterState::Error(error) => formats::error_text(error, false),
        ClusterState::NotRun(why) => why.clone(),
    };
    let mut out = format!(
        "<details><summary>cluster {}: {result} — {}</summary>\n\n",
        md_code(&cluster.name),
        md_cell(&summary)
    );
    match &cluster.state {
        ClusterState::Ran(report) => {
            // Room for the wrapper; the cluster's own report cuts its diffs to fit.
            let budget = share.saturating_sub(out.len() + 200).max(1_000);
            let body = markdown_within(report, shown, budget);
            out.push_str(&fit(body, budget));
        }
        ClusterState::Error(error) => {
            let _ = write!(out, "error: {}", md_cell(error));
        }
        ClusterState::NotRun(why) => out.push_str(&md_cell(why)),
    }
    out.push_str("\n\n</details>\n\n");
    out
}

/// `body` cut at a line to `budget` characters when the cluster's report could not make
/// itself small enough (its table rows and errors have floors), saying so.
fn fit(body: String, budget: usize) -> String {
    if body.len() <= budget {
        return body;
    }
    let mut cut = String::new();
    for line in body.split_inclusive('\n') {
        if cut.len() + line.len() > budget {
            break;
        }
        cut.push_str(line);
    }
    // A code block left open would swallow the rest of the note.
    if cut.lines().filter(|l| l.starts_with("```")).count() % 2 == 1 {
        cut.push_str("```\n");
    }
    let _ = write!(
        cut,
        "\n> **Note:** this cluster's report was cut by {} characters to keep the note under {NOTE_LIMIT} characters; the full report is in `-o json`.",
        body.len() - cut.len()
    );
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{apply_report, assert_no_secret, diff_report};

    const PLAIN: Shown = Shown {
        verbose: false,
        show_creates: false,
    };

    fn fleet(reports: Vec<(&str, ClusterState)>) -> FleetReport {
        FleetReport {
            command: Mode::Diff,
            dry_run: false,
            clusters: reports
                .into_iter()
                .map(|(name, state)| ClusterEntry {
                    name: name.into(),
                    state,
                })
                .collect(),
        }
    }

    fn three() -> FleetReport {
        fleet(vec![
            ("staging", ClusterState::Ran(Box::new(diff_report()))),
            (
                "prod",
                ClusterState::Error("API discovery failed: connection refused".into()),
            ),
            (
                "dr",
                ClusterState::NotRun(
                    "not started: --fail-fast after another cluster failed".into(),
                ),
            ),
        ])
    }

    #[test]
    fn text_has_a_section_per_cluster_then_the_table() {
        let out = text(&three(), false, PLAIN);
        assert_no_secret(&out);
        let single = formats::text(&diff_report(), false, PLAIN);
        assert!(
            out.starts_with(&format!("== cluster staging: differences ==\n{single}\n")),
            "{out}"
        );
        assert!(
            out.contains(
                "== cluster prod: error ==\nerror: API discovery failed: connection refused\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("== cluster dr: not run ==\nnot started: --fail-fast"),
            "{out}"
        );
        assert!(out.contains("\nstaging  differences         1         2         0         2         2         0         1         0\n"), "{out}");
        assert!(
            out.ends_with("3 clusters: 1 differences, 1 error, 1 not run\n"),
            "{out}"
        );
    }

    #[test]
    fn json_holds_each_cluster_report_unchanged() {
        let out = json(&three());
        assert_no_secret(&out);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["fleetSchemaVersion"], 1);
        assert_eq!(
            v["clusters"][0]["report"],
            formats::json_value(&diff_report())
        );
        assert_eq!(v["clusters"][0]["error"], Value::Null);
        assert_eq!(v["clusters"][1]["result"], "error");
        assert_eq!(v["clusters"][1]["report"], Value::Null);
        assert_eq!(v["clusters"][2]["result"], "not run");
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "fleetSchemaVersion",
                "command",
                "dryRun",
                "summary",
                "clusters"
            ]
        );
    }

    #[test]
    fn markdown_is_one_note_of_a_table_and_folded_clusters() {
        let out = markdown(&three(), PLAIN);
        assert_no_secret(&out);
        assert!(out.starts_with("### tend diff · 3 clusters: 1 differences, 1 error, 1 not run\n\n| cluster | result | create |"), "{out}");
        assert!(
            out.contains("| `staging` | differences | 1 | 2 | 0 | 2 | 2 | 0 | 1 | 0 |\n"),
            "{out}"
        );
        assert!(out.contains("| `prod` | error | – |"), "{out}");
        assert_eq!(out.matches("<details><summary>cluster ").count(), 3);
        assert_eq!(
            out.matches("</details>").count(),
            out.matches("<details>").count()
        );
    }

    #[test]
    fn a_large_fleet_fits_one_note_and_says_what_was_cut() {
        // Twelve clusters, each with a diff of ~200,000 characters: 2.4 MB uncut.
        let mut big = apply_report();
        let nginx = big
            .changes
            .iter_mut()
            .find(|c| c.key.name == "nginx")
            .unwrap();
        let lines: Vec<String> = (0..8000)
            .map(|i| format!("line-{i:05}-{}", "x".repeat(12)))
            .collect();
        nginx.after.as_mut().unwrap()["spec"]["template"]["metadata"] =
            serde_json::json!({"annotations": {"big": lines.join("\n")}});
        let clusters: Vec<(String, ClusterState)> = (0..12)
            .map(|i| (format!("c{i:02}"), ClusterState::Ran(Box::new(big.clone()))))
            .collect();
        let report = FleetReport {
            command: Mode::Apply,
            dry_run: false,
            clusters: clusters
                .into_iter()
                .map(|(name, state)| ClusterEntry { name, state })
                .collect(),
        };
        let single = crate::report::markdown::markdown(&big, PLAIN);
        assert!(single.len() > 150_000, "{}", single.len());
        let out = markdown(&report, PLAIN);
        assert!(out.len() < NOTE_LIMIT, "{}", out.len());
        assert_eq!(out.matches("<details><summary>cluster ").count(), 12);
        assert!(
            out.contains("were cut (largest first)"),
            "no notice of the cut"
        );
        assert_no_secret(&out);
    }
}
