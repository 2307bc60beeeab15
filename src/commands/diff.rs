//! `tend diff`: plan against the live cluster and print what would change.
//! Exit 0 in sync, 1 differences, 2 error (as `kubectl diff`).

use super::reconcile_args::{report_format, EngineArgs};
use super::GlobalArgs;
use crate::ops::Verdict;
use crate::report::run::Mode;
use crate::Error;
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
}

pub fn run(global: &GlobalArgs, args: &DiffArgs) -> Result<Verdict, Error> {
    let format = report_format(global, &args.engine, "diff")?;
    let opts = args.engine.options(global, Mode::Diff, None)?;
    super::run_outputs::run(global, &args.engine, &opts, format)
}
