//! `diff` and `apply` end to end: the run (of one cluster, or of several), its report on
//! stdout, and what `--report-html`, `--metrics-file` and `--pushgateway` ask for besides.
//! A run of one cluster without the fleet flags prints exactly what it always did.

use super::reconcile_args::{finish, EngineArgs};
use super::GlobalArgs;
use crate::ops::reconcile::{
    reconcile_fleet, reconcile_hub, HubReconciled, ReconcileOptions, Reconciled,
};
use crate::ops::Verdict;
use crate::report::fleet::{self, ClusterEntry, ClusterState, FleetReport};
use crate::report::ReportFormat;
use crate::Error;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Run `opts` and report it in `format` and to the files and gateway the flags name.
pub fn run(
    global: &GlobalArgs,
    engine: &EngineArgs,
    opts: &ReconcileOptions,
    format: ReportFormat,
) -> Result<Verdict, Error> {
    let started = Instant::now();
    let result = match &opts.fleet {
        Some(fleet_opts) => reconcile_fleet(opts, fleet_opts),
        None => {
            let name = global
                .cluster
                .clone()
                .or_else(|| global.context.first().cloned())
                .unwrap_or_else(|| "default".to_string());
            match reconcile_hub(opts, &name) {
                HubReconciled::One(result) => {
                    return one_cluster(engine, opts, format, (name, *result), started)
                }
                // A hub whose units target spokes: a run over several clusters.
                HubReconciled::Several(result) => result,
            }
        }
    };
    let text = match format {
        ReportFormat::Text { color, shown } => fleet::text(&result.report, color, shown),
        ReportFormat::Json => fleet::json(&result.report),
        ReportFormat::Markdown { shown } => fleet::markdown(&result.report, shown),
    };
    super::print(&text)?;
    for (name, requests) in &result.requests {
        tracing::info!("cluster {name}: {requests}");
    }
    tracing::info!(
        "{}: {} ({} ms)",
        opts.mode.as_str(),
        fleet::totals_line(&result.report),
        started.elapsed().as_millis()
    );
    write_extras(engine, &result.report, &opts.engine.applyset, started)?;
    Ok(result.verdict())
}

/// A run of one cluster, reported as it always was.
fn one_cluster(
    engine: &EngineArgs,
    opts: &ReconcileOptions,
    format: ReportFormat,
    (name, result): (String, Result<Reconciled, Error>),
    started: Instant,
) -> Result<Verdict, Error> {
    let state = match &result {
        Ok(done) => ClusterState::Ran(Box::new(done.report.clone())),
        Err(err) => ClusterState::Error(crate::ops::reconcile::message(err)),
    };
    let one = FleetReport {
        command: opts.mode,
        dry_run: opts.engine.dry_run,
        clusters: vec![ClusterEntry { name, state }],
    };
    // The report first: a file or a gateway that cannot be written does not hide it.
    let verdict = result.and_then(|done| finish(&done, format));
    let extras = write_extras(engine, &one, &opts.engine.applyset, started);
    match (verdict, extras) {
        (Err(err), Err(extra)) => {
            tracing::error!("{extra}");
            Err(err)
        }
        (Err(err), Ok(())) | (Ok(_), Err(err)) => Err(err),
        (Ok(verdict), Ok(())) => Ok(verdict),
    }
}

/// `--report-html`, `--metrics-file`, `--pushgateway`.
fn write_extras(
    engine: &EngineArgs,
    report: &FleetReport,
    applyset: &str,
    started: Instant,
) -> Result<(), Error> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let run = crate::report::metrics::RunFacts {
        applyset,
        now,
        elapsed: started.elapsed(),
    };
    if let Some(path) = &engine.report_html {
        write_file(path, &crate::report::html::html(report))?;
        tracing::info!("wrote the HTML report to {}", path.display());
    }
    if let Some(path) = &engine.metrics_file {
        // The last success of a cluster that failed now is carried over from the file.
        let previous = std::fs::read_to_string(path).unwrap_or_default();
        let text = crate::report::metrics::openmetrics(report, &run, &previous);
        write_file(path, &text)?;
    }
    if let Some(url) = &engine.pushgateway {
        crate::ops::pushgateway::push(url, &crate::report::metrics::groups(report, &run))?;
    }
    Ok(())
}

/// Write `text` to `path` whole or not at all (a textfile collector must never read half a
/// file): into a temporary file beside it, then renamed over it.
fn write_file(path: &std::path::Path, text: &str) -> Result<(), Error> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(Error::Output)?;
    file.write_all(text.as_bytes()).map_err(Error::Output)?;
    file.persist(path).map_err(|e| Error::Output(e.error))?;
    Ok(())
}
