//! `tend chaos --agent NAME`: one pass of a ChaosAgent (README "ChaosAgent"). A dry run unless
//! `--execute`; `--seed` makes a pass reproducible.

use super::{GlobalArgs, OutputFormat};
use crate::ops::chaos::{self, ChaosOptions};
use crate::ops::Verdict;
use crate::report;
use crate::Error;
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct ChaosArgs {
    /// Name of the ChaosAgent (applied to the cluster by `tend apply`). TEND_CHAOS_AGENT is
    /// read too, as before.
    #[arg(long, env = "TEND_AGENT")]
    pub agent: Option<String>,
    /// Really do it: delete pods, scale Deployments, write ConfigMaps. Without it, only report.
    #[arg(long, env = "TEND_EXECUTE")]
    pub execute: bool,
    /// Seed of the random choices; the same seed and cluster give the same actions.
    #[arg(long, env = "TEND_SEED")]
    pub seed: Option<u64>,
    /// Namespace holding tend's state; always excluded from chaos.
    #[arg(long, env = "TEND_STATE_NAMESPACE", default_value = "tend-system")]
    pub state_namespace: String,
}

pub fn run(global: &GlobalArgs, args: &ChaosArgs) -> Result<Verdict, Error> {
    let json = match global.output {
        None | Some(OutputFormat::Text) => false,
        Some(OutputFormat::Json) => true,
        Some(_) => {
            return Err(Error::Usage(
                "tend chaos prints text or json; use -o text or -o json".into(),
            ))
        }
    };
    let agent = args
        .agent
        .clone()
        .or_else(|| {
            std::env::var("TEND_CHAOS_AGENT")
                .ok()
                .filter(|a| !a.is_empty())
        })
        .ok_or_else(|| Error::Usage("tend chaos needs --agent NAME (or TEND_AGENT)".into()))?;
    let opts = ChaosOptions {
        access: global.access(&Default::default()),
        agent,
        execute: args.execute || env_flag("TEND_CHAOS_EXECUTE"),
        seed: args
            .seed
            .or_else(|| std::env::var("TEND_CHAOS_SEED").ok()?.parse().ok()),
        state_namespace: args.state_namespace.clone(),
    };
    let result = chaos::run(&opts)?;
    if json && opts.seed.is_none() {
        tracing::info!(
            "seed {}; rerun with --seed {} to repeat",
            result.seed,
            result.seed
        );
    }
    super::print(&if json {
        report::chaos::json(&result)
    } else {
        report::chaos::text(&result)
    })?;
    for warning in &result.warnings {
        tracing::warn!("{warning}");
    }
    match result.failed() {
        0 => tracing::debug!("chaos: {}", result.requests),
        failed => tracing::error!(
            "{failed} of {} chaos actions failed ({})",
            result.results.len(),
            result.requests
        ),
    }
    Ok(if result.failed() > 0 {
        Verdict::Failed
    } else {
        Verdict::Success
    })
}

/// The old `TEND_CHAOS_*` names keep working (`true`/`1`, as clap reads booleans).
fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| matches!(v.as_str(), "true" | "1"))
}
