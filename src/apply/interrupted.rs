//! A stopped run (README "Signals"): after the first SIGTERM/SIGINT no write
//! starts, writes in flight get [`GRACE`] to finish, and the run reports and records what
//! was written and what was not.

use crate::interrupt::{Interrupt, Stop, GRACE};
use crate::report::run::RunReport;
use std::future::Future;

/// How an object's error starts when its write never started because the run was stopped.
pub const NOT_STARTED: &str = "not started: the run was stopped";
/// How an object's error starts when its write was in flight for longer than the grace.
pub const ABANDONED: &str = "abandoned in flight: the run was stopped";

/// Run one write unless the run is stopping: not started after a stop, abandoned
/// [`GRACE`] after it (the server may or may not have acted; the next run converges).
pub async fn write<T>(
    interrupt: &Interrupt,
    write: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    if let Some(stop) = interrupt.stopped() {
        return Err(format!("{NOT_STARTED} ({})", stop.signal));
    }
    tokio::select! {
        result = write => result,
        _ = interrupt.grace_over() => Err(format!(
            "{ABANDONED} and this write took over {GRACE:?} more; it may or may not have been applied"
        )),
    }
}

/// Mark every planned write of a run stopped before its first write as not started, and
/// say so as the run's error.
pub fn not_started(report: &mut RunReport, stop: Stop) {
    use crate::plan::Action;
    for change in &report.changes {
        if matches!(
            change.action,
            Action::Create | Action::Update | Action::Replace | Action::Prune
        ) {
            let outcome = report.outcomes.entry(change.key.clone()).or_default();
            if outcome.skipped.is_none() && outcome.error.is_none() {
                outcome.error = Some(format!("{NOT_STARTED} ({})", stop.signal));
            }
        }
    }
    let account = account(report, stop);
    tracing::error!("{account}");
    report.errors.push(account);
}

/// Whether an object's error only says that the run was stopped.
pub fn is_stop(error: &str) -> bool {
    error.starts_with(NOT_STARTED) || error.starts_with(ABANDONED)
}

/// What a stopped run did, in one sentence: for the report's run error and the ApplySet
/// parent's `tend.dev/interrupted` annotation.
pub fn account(report: &RunReport, stop: Stop) -> String {
    let outcomes = report.outcomes.values();
    let (mut written, mut not_started, mut abandoned, mut failed) = (0, 0, 0, 0);
    for outcome in outcomes.filter(|o| o.skipped.is_none()) {
        match outcome.error.as_deref() {
            None => written += 1,
            Some(e) if e.starts_with(NOT_STARTED) => not_started += 1,
            Some(e) if e.starts_with(ABANDONED) => abandoned += 1,
            Some(_) => failed += 1,
        }
    }
    let mut text = format!(
        "the run was stopped by {}: {} done, {not_started} not started",
        stop.signal,
        crate::text::count(written, "write")
    );
    if abandoned > 0 {
        text.push_str(&format!(", {abandoned} abandoned in flight"));
    }
    if failed > 0 {
        text.push_str(&format!(", {failed} failed"));
    }
    text.push_str("; the next run applies the rest");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectKey;
    use crate::report::run::Outcome;

    #[tokio::test]
    async fn nothing_starts_after_a_stop() {
        let interrupt = Interrupt::default();
        assert_eq!(write(&interrupt, async { Ok::<_, String>(1) }).await, Ok(1));
        interrupt.trigger("SIGTERM");
        let refused = write(&interrupt, async { Ok::<_, String>(1) }).await;
        assert!(refused.is_err_and(|e| is_stop(&e) && e.contains("SIGTERM")));

        let mut report = RunReport::default();
        let key = |n: &str| ObjectKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: Some("a".into()),
            name: n.into(),
        };
        report.outcomes.insert(key("done"), Outcome::default());
        report.outcomes.insert(
            key("later"),
            Outcome {
                error: Some(format!("{NOT_STARTED} (SIGTERM)")),
                ..Outcome::default()
            },
        );
        let stop = interrupt.stopped().expect("stopped");
        assert_eq!(
            account(&report, stop),
            "the run was stopped by SIGTERM: 1 write done, 1 not started; the next run applies the rest"
        );
    }
}
