//! `tend status`: the last run of each ApplySet on each cluster, read from the ApplySet
//! parents. Exit 0 when every last run succeeded, 1 when one failed or was interrupted, 2
//! when a cluster could not be read.

use super::{GlobalArgs, OutputFormat};
use crate::ops::status::{status, StatusOptions};
use crate::ops::Verdict;
use crate::Error;
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Namespace holding tend's state: the ApplySet parents.
    #[arg(long, env = "TEND_STATE_NAMESPACE", default_value = "tend-system")]
    pub state_namespace: String,
}

pub fn run(global: &GlobalArgs, args: &StatusArgs) -> Result<Verdict, Error> {
    let json = match global.output {
        None | Some(OutputFormat::Text) => false,
        Some(OutputFormat::Json) => true,
        Some(_) => {
            return Err(Error::Usage(
                "tend status prints text or json; use -o text or -o json".into(),
            ))
        }
    };
    let access = global.access(&crate::interrupt::Interrupt::default());
    let clusters = match crate::ops::fleet::clusters(&global.fleet_choice())? {
        Some(fleet) => fleet
            .iter()
            .map(|member| {
                let (reached, secret) = crate::ops::fleet::reach(&access, member);
                (member.name.clone(), reached, secret)
            })
            .collect(),
        None => {
            let name = global
                .cluster
                .clone()
                .or_else(|| global.context.first().cloned())
                .unwrap_or_else(|| "default".to_string());
            vec![(name, access, None)]
        }
    };
    let opts = StatusOptions {
        clusters,
        state_namespace: args.state_namespace.clone(),
    };
    let found = status(&opts)?;
    super::print(&if json {
        crate::report::status::json(&found)
    } else {
        crate::report::status::text(&found)
    })?;
    let unreadable = found.iter().any(|c| c.applysets.is_err());
    let failed = found
        .iter()
        .filter_map(|c| c.applysets.as_ref().ok())
        .flatten()
        .any(|s| s.failed());
    Ok(match (unreadable, failed) {
        (true, _) => Verdict::Failed,
        (false, true) => Verdict::Differences,
        (false, false) => Verdict::Success,
    })
}
