//! `tend apply`: diff, then apply in order, prune, record the run.

use super::engine_args::{parse_duration, EngineArgs};
use crate::cli::GlobalArgs;
use crate::ops::reconcile;
use crate::Error;
use clap::Args;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Server-side dry run of everything: nothing is persisted (no lock, no record).
    #[arg(long, env = "TEND_DRY_RUN")]
    pub dry_run: bool,
    /// Wait for applied Deployments, StatefulSets and DaemonSets to roll out.
    #[arg(long, env = "TEND_WAIT")]
    pub wait: bool,
    /// How long --wait (and CRD establishment) may take.
    #[arg(long, env = "TEND_TIMEOUT", default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// How long to wait for another run's lock before giving up.
    #[arg(long, env = "TEND_LOCK_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub lock_timeout: Duration,
}

pub fn run(global: &GlobalArgs, args: &ApplyArgs) -> Result<ExitCode, Error> {
    reconcile::run(
        global,
        &args.engine,
        reconcile::Mode::Apply {
            dry_run: args.dry_run,
            wait: args.wait,
            timeout: args.timeout,
            lock_timeout: args.lock_timeout,
        },
    )
}
