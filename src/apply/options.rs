//! What the engine's steps share: the run's options and the engine's error. Its own file so
//! every step imports it from here and none points back at the engine that calls it.

use super::lock;
use crate::cluster::ClusterError;
use crate::plan::inventory;
use crate::plan::planner::PruneLimits;
use crate::problem::Problems;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Name of the ApplySet parent Secret (`--applyset`).
    pub applyset: String,
    pub state_namespace: String,
    pub default_namespace: String,
    pub force_conflicts: bool,
    pub dry_run: bool,
    pub concurrency: usize,
    pub prune_limits: PruneLimits,
    pub lock_timeout: Duration,
    pub wait: bool,
    pub timeout: Duration,
    pub commit: Option<String>,
    /// Who signed the commit and tag (`--verify-signatures`), for the report and the parent.
    pub signed_by: Option<String>,
    pub cluster_name: Option<String>,
    /// Draw progress bars (stderr is a terminal); otherwise plain log lines only.
    pub progress: bool,
    /// Set by the first SIGTERM/SIGINT: no write starts after it.
    pub interrupt: crate::interrupt::Interrupt,
    /// Flux's lockdown flag (`--default-service-account`): Flux units without
    /// `serviceAccountName` are written as this ServiceAccount of their namespace.
    pub default_service_account: Option<String>,
    /// The kubeconfig Secrets this cluster's units target other clusters through (hub and
    /// spoke), as recorded on the parent for `tend status` (`KubeConfigRef::recorded`).
    pub spokes: Vec<String>,
    /// How the objects of Flux's units wait (their controllers' rules); empty: as waves do.
    pub unit_waits: std::sync::Arc<super::unit_waits::UnitWaits>,
    /// What earlier runs found as desired, and what this run finds (`plan::settled`);
    /// `None`: every LIST item is read in full and nothing is noted.
    pub settled: Option<std::sync::Arc<crate::plan::settled::Settled>>,
}

impl EngineOptions {
    /// The id of this run's ApplySet (KEP-3659), from the parent's name and namespace.
    pub fn applyset_id(&self) -> String {
        inventory::applyset_id(&self.applyset, &self.state_namespace, "Secret", "")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("the desired state does not match what the cluster serves; nothing was changed:\n{0}")]
    Unresolved(Problems),
    #[error(transparent)]
    Lock(#[from] lock::LockError),
}
