//! `--report-html FILE`: the run as one self-contained page (README "A fleet of clusters"), for
//! people and CI artifacts: no network, no external script, style or font. Per cluster: its
//! result and counts, its errors, the objects that failed first, then the objects wave by
//! wave, each with what the run did, its readiness and reason (with `--wait`), the drift
//! it found named with its manager, and its diff folded.
//!
//! Everything from the repository or the cluster is HTML-escaped ([`escape`]); object
//! contents reach the page only through [`super::formats::shown_diff`], which masks Secret
//! values as every other format does.

use super::fleet::{drifted, ClusterEntry, ClusterState, FleetReport};
use super::formats::{action_name, shown_diff, sigil, source, summary_line, title};
use super::run::{Mode, RunReport};
use crate::plan::{Action, Change};
use std::fmt::Write as _;

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1f24;background:#fff}
h1{font-size:1.4em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}h3{font-size:1em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:2px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right}.failed,.error,.bad{color:#b42318;font-weight:600}
.ok{color:#067647}.warn{color:#b54708}.muted{color:#667085}pre{background:#f6f8fa;padding:6px;overflow:auto;margin:4px 0}
.add{color:#067647}.del{color:#b42318}.hunk{color:#0e7490}details summary{cursor:pointer}
#filter{margin:.5em 0;padding:3px;width:20em}";

/// Hides objects not matching the filter box (the page works without it), then marks the
/// page loaded, which a browser test reads to know the script ran without an error.
const SCRIPT: &str = "document.getElementById('filter').addEventListener('input',function(e){var q=e.target.value.toLowerCase();document.querySelectorAll('tr.obj').forEach(function(r){r.style.display=r.textContent.toLowerCase().indexOf(q)<0?'none':''})});document.body.setAttribute('data-loaded','yes');";

/// `&`, `<`, `>`, `"` and `'` as entities: safe in text and in quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The whole page.
pub fn html(fleet: &FleetReport) -> String {
    let command = fleet.command.as_str();
    let dry = if fleet.dry_run { " (dry run)" } else { "" };
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>tend {command}{dry}</title><style>{STYLE}</style></head><body>\n\
         <h1>tend {command}{dry}</h1>\n<p>{}</p>\n",
        escape(&super::fleet::totals_line(fleet))
    );
    out.push_str(&clusters_table(fleet));
    out.push_str(
        "<input id=\"filter\" placeholder=\"filter objects\" aria-label=\"filter objects\">\n",
    );
    for (i, cluster) in fleet.clusters.iter().enumerate() {
        out.push_str(&cluster_section(fleet.command, i, cluster));
    }
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
    out
}

fn result_class(result: &str) -> &'static str {
    match result {
        "failed" | "error" | "not run" => "bad",
        "differences" | "applied" => "warn",
        _ => "ok",
    }
}

fn clusters_table(fleet: &FleetReport) -> String {
    let mut out = String::from(
        "<table><tr><th>cluster</th><th>result</th><th>create</th><th>update</th><th>replace</th>\
         <th>prune</th><th>unchanged</th><th>failed</th><th>drift</th><th>waves</th></tr>\n",
    );
    for (i, cluster) in fleet.clusters.iter().enumerate() {
        let result = cluster.state.result(fleet.command);
        let _ = write!(
            out,
            "<tr><td><a href=\"#cluster-{i}\">{}</a></td><td class=\"{}\">{result}</td>",
            escape(&cluster.name),
            result_class(result)
        );
        match cluster.state.report() {
            Some(report) => {
                let s = report.summary();
                let counts = [
                    s.create,
                    s.update,
                    s.replace,
                    s.prune,
                    s.unchanged,
                    report.failed(),
                    drifted(report),
                    report.wave_summaries().len(),
                ];
                for n in counts {
                    let _ = write!(out, "<td class=\"n\">{n}</td>");
                }
            }
            None => out.push_str(&"<td class=\"n\">–</td>".repeat(8)),
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

fn cluster_section(command: Mode, i: usize, cluster: &ClusterEntry) -> String {
    let result = cluster.state.result(command);
    let mut out = format!(
        "<section id=\"cluster-{i}\"><h2>cluster {} — <span class=\"{}\">{result}</span></h2>\n",
        escape(&cluster.name),
        result_class(result)
    );
    match &cluster.state {
        ClusterState::Ran(report) => out.push_str(&report_body(report)),
        ClusterState::Error(error) => {
            let _ = writeln!(out, "<p class=\"error\">error: {}</p>", escape(error));
        }
        ClusterState::NotRun(why) => {
            let _ = writeln!(out, "<p class=\"muted\">{}</p>", escape(why));
        }
    }
    out.push_str("</section>\n");
    out
}

fn report_body(report: &RunReport) -> String {
    let mut out = String::new();
    if let Some(commit) = &report.commit {
        let _ = writeln!(out, "<p>commit <code>{}</code></p>", escape(commit));
    }
    let _ = writeln!(
        out,
        "<p>{} <span class=\"muted\">({} ms)</span></p>",
        escape(&summary_line(report)),
        report.duration.as_millis()
    );
    if let Some(line) = super::waves::stopped_line(report) {
        let _ = writeln!(out, "<p class=\"error\">{}</p>", escape(&line));
    }
    for error in &report.errors {
        let _ = writeln!(out, "<p class=\"error\">error: {}</p>", escape(error));
    }
    let hooks = super::waves::lines(report);
    if !hooks.is_empty() {
        out.push_str("<h3>waves and hooks</h3><ul>\n");
        for line in hooks {
            let _ = writeln!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul>\n");
    }
    for hook in report.hooks.iter().filter(|h| !h.log.is_empty()) {
        let _ = writeln!(
            out,
            "<details open><summary>last lines of {}'s log</summary><pre>{}</pre></details>",
            escape(&hook.key.kind_and_name()),
            escape(&hook.log.join("\n"))
        );
    }
    let failed = |c: &&Change| {
        report
            .outcomes
            .get(&c.key)
            .is_some_and(|o| o.error.is_some())
    };
    let failures: Vec<&Change> = report.changes.iter().filter(failed).collect();
    if !failures.is_empty() {
        out.push_str("<h3 class=\"failed\">failed</h3>\n");
        out.push_str(&objects_table(report, &failures));
    }
    for (wave, changes) in by_wave(report) {
        let rest: Vec<&Change> = changes.into_iter().filter(|c| !failed(c)).collect();
        if rest.is_empty() {
            continue;
        }
        match wave {
            Some(wave) => {
                let _ = writeln!(out, "<h3>wave {wave}</h3>");
            }
            None if report.waves.is_empty() => out.push_str("<h3>objects</h3>\n"),
            None => out.push_str("<h3>in no wave (prunes)</h3>\n"),
        }
        out.push_str(&objects_table(report, &rest));
    }
    out
}

/// The changes by wave, in order; objects in no wave (sites without waves, prunes) last.
fn by_wave(report: &RunReport) -> Vec<(Option<i64>, Vec<&Change>)> {
    let mut waves: std::collections::BTreeMap<Option<i64>, Vec<&Change>> = Default::default();
    for change in &report.changes {
        let wave = report.waves.get(&change.key).copied();
        waves.entry(wave).or_default().push(change);
    }
    let none = waves.remove(&None);
    let mut out: Vec<_> = waves.into_iter().collect();
    if let Some(changes) = none {
        out.push((None, changes));
    }
    out
}

fn objects_table(report: &RunReport, changes: &[&Change]) -> String {
    let mut out = String::from(
        "<table><tr><th>action</th><th>object</th><th>source</th><th>readiness</th><th>details</th></tr>\n",
    );
    for change in changes {
        out.push_str(&object_row(report, change));
    }
    out.push_str("</table>\n");
    out
}

fn object_row(report: &RunReport, change: &Change) -> String {
    let outcome = report.outcomes.get(&change.key);
    let action_class = match change.action {
        Action::Create | Action::Update => "warn",
        Action::Replace | Action::Prune => "bad",
        Action::Unchanged => "muted",
    };
    let readiness = match report.waits.get(&change.key) {
        Some(status) => escape(&status.to_string()),
        None => "<span class=\"muted\">–</span>".to_string(),
    };
    let mut details = String::new();
    if let Some(reason) = &change.reason {
        let _ = write!(
            details,
            "<div>{}: {}</div>",
            action_name(change.action),
            escape(reason)
        );
    }
    for drift in &change.drift {
        let _ = write!(
            details,
            "<div class=\"warn\">drift: {}</div>",
            escape(&drift.to_string())
        );
    }
    if let Some(outcome) = outcome {
        if let Some(error) = &outcome.error {
            let _ = write!(
                details,
                "<div class=\"failed\">failed: {}</div>",
                escape(error)
            );
        }
        if let Some(skipped) = &outcome.skipped {
            let _ = write!(
                details,
                "<div class=\"muted\">skipped: {}</div>",
                escape(skipped)
            );
        }
    }
    let diff = shown_diff(change, outcome);
    if !diff.is_empty() {
        let _ = write!(
            details,
            "<details><summary>diff ({} lines)</summary><pre>{}</pre></details>",
            diff.lines().count(),
            diff_html(&diff)
        );
    }
    format!(
        "<tr class=\"obj\"><td class=\"{action_class}\">{} {}</td><td>{}</td><td>{}</td><td>{readiness}</td><td>{details}</td></tr>\n",
        escape(&sigil(change.action).to_string()),
        action_name(change.action),
        escape(&title(change)),
        escape(&source(change).unwrap_or_default()),
    )
}

/// A unified diff, escaped, its added, removed and hunk lines coloured.
fn diff_html(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len() + diff.len() / 4);
    for line in diff.lines() {
        let class = match line.as_bytes().first() {
            Some(b'+') => "add",
            Some(b'-') => "del",
            Some(b'@') => "hunk",
            _ => "",
        };
        if class.is_empty() {
            out.push_str(&escape(line));
        } else {
            let _ = write!(out, "<span class=\"{class}\">{}</span>", escape(line));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{apply_report, assert_no_secret};
    use crate::report::fleet::ClusterEntry;

    fn page(name: &str, report: RunReport) -> String {
        html(&FleetReport {
            command: Mode::Apply,
            dry_run: false,
            clusters: vec![
                ClusterEntry {
                    name: name.into(),
                    state: ClusterState::Ran(Box::new(report)),
                },
                ClusterEntry {
                    name: "down".into(),
                    state: ClusterState::Error("connection refused <b>".into()),
                },
            ],
        })
    }

    #[test]
    fn everything_is_escaped_and_secrets_masked() {
        let mut report = apply_report();
        report.changes[0].key.name = "<script>alert(1)</script>".into();
        let out = page("<img src=x onerror=alert(2)>", report);
        assert_no_secret(&out);
        assert!(!out.contains("<script>alert"), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert!(out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(out.contains("connection refused &lt;b&gt;"));
        // One script: the page's own.
        assert_eq!(out.matches("<script>").count(), 1);
        assert!(!out.contains("http://") && !out.contains("https://"));
    }

    #[test]
    fn failures_come_first() {
        let out = page("dc1", apply_report());
        let failed = out
            .find("<h3 class=\"failed\">failed</h3>")
            .expect("failed section");
        let objects = out.find("<h3>objects</h3>").expect("objects section");
        assert!(failed < objects);
        assert!(
            out.contains("drift: spec.template.spec.containers[0].image"),
            "{out}"
        );
    }
}
