//! `tend chaos --agent NAME`: one pass of a ChaosAgent (SPEC 3.5). A dry run unless
//! `--execute`; `--seed` makes a pass reproducible.

use crate::cli::GlobalArgs;
use crate::Error;
use clap::Args;
use std::process::ExitCode;

#[derive(Debug, Clone, Args)]
pub struct ChaosArgs {
    /// Name of the ChaosAgent (applied to the cluster by `tend apply`).
    #[arg(long, env = "TEND_CHAOS_AGENT")]
    pub agent: String,
    /// Really do it: delete pods, scale Deployments, write ConfigMaps. Without it, only report.
    #[arg(long, env = "TEND_CHAOS_EXECUTE")]
    pub execute: bool,
    /// Seed of the random choices; the same seed and cluster give the same actions.
    #[arg(long, env = "TEND_CHAOS_SEED")]
    pub seed: Option<u64>,
    /// Namespace holding tend's state; always excluded from chaos.
    #[arg(long, env = "TEND_STATE_NAMESPACE", default_value = "tend-system")]
    pub state_namespace: String,
}

pub fn run(global: &GlobalArgs, args: &ChaosArgs) -> Result<ExitCode, Error> {
    crate::ops::chaos::run(global, args)
}
