//! `tend diff`: plan against the live cluster and print what would change.
//! Exit 0 in sync, 1 differences, 2 error (as `kubectl diff`).

use super::engine_args::EngineArgs;
use crate::cli::GlobalArgs;
use crate::ops::reconcile;
use crate::Error;
use clap::Args;
use std::process::ExitCode;

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub fn run(global: &GlobalArgs, args: &DiffArgs) -> Result<ExitCode, Error> {
    reconcile::run(global, &args.engine, reconcile::Mode::Diff)
}
