//! Metrics of a run for unattended runs (README "A fleet of clusters"): OpenMetrics text for node
//! exporter's textfile collector (`--metrics-file`), and the same gauges grouped per cluster
//! and ApplySet for a Prometheus Pushgateway (`--pushgateway`). Every metric is a gauge with
//! the labels `cluster` and `applyset` (the Pushgateway's grouping key carries them there).
//!
//! A failed run leaves `tend_last_success_timestamp_seconds` as it was: the file carries the
//! previous value over, and the push (a POST, which replaces only the metrics it names) does
//! not send it.

use super::fleet::{drifted, ClusterState, FleetReport};
use super::run::RunReport;
use std::fmt::Write as _;
use std::time::Duration;

/// What the metrics need besides the report.
#[derive(Debug, Clone, Copy)]
pub struct RunFacts<'a> {
    pub applyset: &'a str,
    /// Seconds since the epoch, now.
    pub now: f64,
    /// How long the whole run took (the duration of a cluster without a report).
    pub elapsed: Duration,
}

/// One Pushgateway group: its grouping labels and its body (Prometheus text format).
#[derive(Debug, Clone, PartialEq)]
pub struct PushGroup {
    pub labels: Vec<(&'static str, String)>,
    pub body: String,
}

const LAST_SUCCESS: &str = "tend_last_success_timestamp_seconds";

/// (name, help, unit) of each metric, in the order written.
const METRICS: [(&str, &str, &str); 6] = [
    (
        "tend_run_success",
        "Whether the last run of the ApplySet on the cluster succeeded (1) or failed (0); differences found by diff are a success.",
        "",
    ),
    (
        "tend_run_duration_seconds",
        "How long the last run took.",
        "seconds",
    ),
    (
        "tend_run_timestamp_seconds",
        "When the last run ended, in seconds since the epoch.",
        "seconds",
    ),
    (
        LAST_SUCCESS,
        "When the last successful run ended, in seconds since the epoch.",
        "seconds",
    ),
    (
        "tend_objects",
        "Objects of the last run by what it did (or, for diff, would do) to them.",
        "",
    ),
    (
        "tend_drifted_objects",
        "Objects whose live state another field manager changed, found by the last run.",
        "",
    ),
];

/// One sample: its metric, its labels besides the cluster's, its value.
type Sample = (&'static str, String, f64);

/// The samples of one cluster.
fn samples(state: &ClusterState, run: &RunFacts<'_>) -> Vec<Sample> {
    let report = state.report();
    let success = report.is_some_and(|r| r.failed() + r.errors.len() == 0);
    let duration = report.map_or(run.elapsed, |r| r.duration);
    let mut out = vec![
        (
            "tend_run_success",
            String::new(),
            f64::from(u8::from(success)),
        ),
        (
            "tend_run_duration_seconds",
            String::new(),
            duration.as_secs_f64(),
        ),
        ("tend_run_timestamp_seconds", String::new(), run.now),
    ];
    if success {
        out.push((LAST_SUCCESS, String::new(), run.now));
    }
    if let Some(report) = report {
        for (result, count) in by_result(report) {
            out.push(("tend_objects", format!("result=\"{result}\""), count as f64));
        }
        out.push((
            "tend_drifted_objects",
            String::new(),
            drifted(report) as f64,
        ));
    }
    out
}

fn by_result(report: &RunReport) -> [(&'static str, usize); 6] {
    let s = report.summary();
    [
        ("create", s.create),
        ("update", s.update),
        ("replace", s.replace),
        ("prune", s.prune),
        ("unchanged", s.unchanged),
        ("failed", report.failed()),
    ]
}

/// `\`, `"` and newlines escaped, as both text formats want label values.
fn escape(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// `{cluster="a",applyset="tend",command="apply"[,extra]}`.
fn labels(base: &str, extra: &str) -> String {
    match (base.is_empty(), extra.is_empty()) {
        (true, true) => String::new(),
        (false, true) => format!("{{{base}}}"),
        (true, false) => format!("{{{extra}}}"),
        (false, false) => format!("{{{base},{extra}}}"),
    }
}

/// The textfile: every cluster's samples, metric by metric, ending in `# EOF`. `previous`
/// is the file as the last run left it, whose last-success values are kept for clusters
/// that did not succeed now.
pub fn openmetrics(fleet: &FleetReport, run: &RunFacts<'_>, previous: &str) -> String {
    let per_cluster: Vec<(String, Vec<Sample>)> = fleet
        .clusters
        .iter()
        .map(|cluster| {
            let base = format!(
                "cluster=\"{}\",applyset=\"{}\",command=\"{}\"",
                escape(&cluster.name),
                escape(run.applyset),
                fleet.command.as_str()
            );
            let mut samples = samples(&cluster.state, run);
            if !samples.iter().any(|(m, _, _)| *m == LAST_SUCCESS) {
                if let Some(value) = previous_success(previous, &cluster.name, run.applyset) {
                    samples.push((LAST_SUCCESS, String::new(), value));
                }
            }
            (base, samples)
        })
        .collect();
    let mut out = String::new();
    for (metric, help, unit) in METRICS {
        let _ = writeln!(out, "# TYPE {metric} gauge");
        if !unit.is_empty() {
            let _ = writeln!(out, "# UNIT {metric} {unit}");
        }
        let _ = writeln!(out, "# HELP {metric} {help}");
        for (base, samples) in &per_cluster {
            for (_, extra, value) in samples.iter().filter(|(m, _, _)| *m == metric) {
                let _ = writeln!(out, "{metric}{} {value}", labels(base, extra));
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

/// The last success of `cluster`'s `applyset` in a textfile this function wrote.
fn previous_success(previous: &str, cluster: &str, applyset: &str) -> Option<f64> {
    let cluster = format!("cluster=\"{}\"", escape(cluster));
    let applyset = format!("applyset=\"{}\"", escape(applyset));
    previous.lines().find_map(|line| {
        let rest = line.strip_prefix(LAST_SUCCESS)?.strip_prefix('{')?;
        let (labels, value) = rest.rsplit_once("} ")?;
        let names: Vec<&str> = labels.split(',').collect();
        (names.contains(&cluster.as_str()) && names.contains(&applyset.as_str()))
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}

/// One Pushgateway group per cluster (grouping key `cluster`, `applyset`), in Prometheus
/// text format.
pub fn groups(fleet: &FleetReport, run: &RunFacts<'_>) -> Vec<PushGroup> {
    fleet
        .clusters
        .iter()
        .map(|cluster| {
            let base = format!("command=\"{}\"", fleet.command.as_str());
            let samples = samples(&cluster.state, run);
            let mut body = String::new();
            for (metric, help, _) in METRICS {
                let mut of_metric = samples.iter().filter(|(m, _, _)| *m == metric).peekable();
                if of_metric.peek().is_none() {
                    continue;
                }
                let _ = writeln!(body, "# HELP {metric} {help}");
                let _ = writeln!(body, "# TYPE {metric} gauge");
                for (_, extra, value) in of_metric {
                    let _ = writeln!(body, "{metric}{} {value}", labels(&base, extra));
                }
            }
            PushGroup {
                labels: vec![
                    ("cluster", cluster.name.clone()),
                    ("applyset", run.applyset.to_string()),
                ],
                body,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::apply_report;
    use crate::report::fleet::ClusterEntry;
    use crate::report::run::Mode;

    fn fleet() -> FleetReport {
        FleetReport {
            command: Mode::Apply,
            dry_run: false,
            clusters: vec![
                ClusterEntry {
                    name: "a\"b".into(),
                    state: ClusterState::Ran(Box::new(apply_report())),
                },
                ClusterEntry {
                    name: "down".into(),
                    state: ClusterState::Error("connection refused".into()),
                },
            ],
        }
    }

    const RUN: RunFacts<'static> = RunFacts {
        applyset: "tend",
        now: 1_700_000_000.0,
        elapsed: Duration::from_millis(2500),
    };

    #[test]
    fn textfile_has_every_gauge_and_keeps_the_last_success_of_a_failed_cluster() {
        let previous = "tend_last_success_timestamp_seconds{cluster=\"down\",applyset=\"tend\",command=\"apply\"} 1600000000\n";
        let text = openmetrics(&fleet(), &RUN, previous);
        assert!(text.ends_with("# EOF\n"), "{text}");
        // apply_report has a failed object: not a success, and no previous value for it.
        assert!(
            text.contains(
                "tend_run_success{cluster=\"a\\\"b\",applyset=\"tend\",command=\"apply\"} 0\n"
            ),
            "{text}"
        );
        assert!(text.contains("tend_objects{cluster=\"a\\\"b\",applyset=\"tend\",command=\"apply\",result=\"failed\"} 1\n"), "{text}");
        assert!(
            text.contains(
                "tend_run_success{cluster=\"down\",applyset=\"tend\",command=\"apply\"} 0\n"
            ),
            "{text}"
        );
        assert!(text.contains("tend_last_success_timestamp_seconds{cluster=\"down\",applyset=\"tend\",command=\"apply\"} 1600000000\n"), "{text}");
        assert!(text.contains("tend_run_duration_seconds{cluster=\"down\",applyset=\"tend\",command=\"apply\"} 2.5\n"), "{text}");
        assert!(
            text.contains("# UNIT tend_run_duration_seconds seconds\n"),
            "{text}"
        );
        // Each metric's family is written once.
        assert_eq!(text.matches("# TYPE tend_objects gauge").count(), 1);
    }

    #[test]
    fn push_groups_leave_the_last_success_out_when_failed() {
        let groups = groups(&fleet(), &RUN);
        assert_eq!(groups.len(), 2);
        assert_eq!(
            groups[1].labels,
            vec![
                ("cluster", "down".to_string()),
                ("applyset", "tend".to_string())
            ]
        );
        assert!(!groups[1].body.contains(LAST_SUCCESS), "{}", groups[1].body);
        assert!(groups[1]
            .body
            .contains("tend_run_success{command=\"apply\"} 0\n"));
        assert!(!groups[0].body.contains("# EOF"));
    }
}
