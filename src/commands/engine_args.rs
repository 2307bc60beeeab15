//! Flags shared by `tend diff` and `tend apply` (SPEC 4).

use crate::apply::engine::EngineOptions;
use crate::cli::GlobalArgs;
use clap::Args;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// Name of the ApplySet (its parent Secret in --state-namespace); sites sharing a cluster use different names.
    #[arg(long, env = "TEND_APPLYSET", default_value = "tend")]
    pub applyset: String,
    /// Namespace holding tend's state: the ApplySet parent and the lock Lease.
    #[arg(long, env = "TEND_STATE_NAMESPACE", default_value = "tend-system")]
    pub state_namespace: String,
    /// Requests in flight at once within a stage.
    #[arg(long, env = "TEND_CONCURRENCY", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// Report conflicts with other field managers instead of taking the fields over.
    #[arg(long, env = "TEND_NO_FORCE_CONFLICTS")]
    pub no_force_conflicts: bool,
    /// Refuse to prune when more than N objects would be deleted.
    #[arg(long, env = "TEND_MAX_DELETIONS", value_name = "N")]
    pub max_deletions: Option<usize>,
    /// Allow pruning everything when the desired set is empty.
    #[arg(long, env = "TEND_ALLOW_EMPTY")]
    pub allow_empty: bool,
}

/// Parse `30s`, `5m`, `1h`, `500ms` or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: use e.g. 30s, 5m, 1h"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "invalid duration unit in {text:?}: use ms, s, m or h"
            ))
        }
    };
    Ok(Duration::from_secs_f64(seconds))
}

impl EngineArgs {
    pub fn options(&self, global: &GlobalArgs, commit: Option<String>) -> EngineOptions {
        EngineOptions {
            applyset: self.applyset.clone(),
            state_namespace: self.state_namespace.clone(),
            default_namespace: global.namespace.clone(),
            force_conflicts: !self.no_force_conflicts,
            dry_run: false,
            concurrency: self.concurrency as usize,
            max_deletions: self.max_deletions,
            allow_empty: self.allow_empty,
            lock_timeout: Duration::from_secs(30),
            wait: false,
            timeout: Duration::from_secs(300),
            commit,
            cluster_name: global.cluster.clone(),
            progress: std::io::IsTerminal::is_terminal(&std::io::stderr())
                && global.log_format == crate::cli::LogFormat::Text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert!(parse_duration("5x").is_err());
    }
}
