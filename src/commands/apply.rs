//! `tend apply`: diff, then apply in order, prune, record the run.

use super::global::parse_duration;
use super::reconcile_args::{report_format, ApplyFlags, EngineArgs};
use super::GlobalArgs;
use crate::ops::Verdict;
use crate::report::run::Mode;
use crate::Error;
use clap::Args;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Server-side dry run of everything: nothing is persisted (no lock, no record).
    #[arg(long, env = "TEND_DRY_RUN")]
    pub dry_run: bool,
    /// Wait until every applied object is ready (kstatus: rolled out, complete, Bound,
    /// Established, Ready); fail at once on a failed one. `tend.dev/wait: skip` opts out.
    #[arg(long, env = "TEND_WAIT")]
    pub wait: bool,
    /// How long --wait (and CRD establishment) may take.
    #[arg(long, env = "TEND_TIMEOUT", default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// How long to wait for another run's lock before giving up.
    #[arg(long, env = "TEND_LOCK_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub lock_timeout: Duration,
}

pub fn run(global: &GlobalArgs, args: &ApplyArgs) -> Result<Verdict, Error> {
    let format = report_format(global, &args.engine, "apply")?;
    let flags = ApplyFlags {
        dry_run: args.dry_run,
        wait: args.wait,
        timeout: args.timeout,
        lock_timeout: args.lock_timeout,
    };
    let opts = args.engine.options(global, Mode::Apply, Some(&flags))?;
    super::run_outputs::run(global, &args.engine, &opts, format)
}
