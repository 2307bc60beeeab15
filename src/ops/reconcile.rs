//! `diff` and `apply`: the options built once by the command become a [`Run`] of one
//! cluster, which [`crate::run::execute`] carries out; its report is the result.

use crate::apply::engine::EngineOptions;
use crate::cluster::Access;
use crate::kinds::fleet::FleetCluster;
use crate::ops::Verdict;
use crate::render::RenderOptions;
use crate::report::fleet::{ClusterEntry, ClusterState, FleetReport};
use crate::report::run::{Mode, RunReport};
use crate::run::{ClusterRun, SecretReads};
use crate::source::run_cluster::RunCluster;
use crate::source::SourceOptions;
use crate::Error;

/// Everything `diff` and `apply` need, built once from flags and environment.
#[derive(Debug, Clone)]
pub struct ReconcileOptions {
    pub mode: Mode,
    pub source: SourceOptions,
    pub render: RenderOptions,
    /// `--decryption-secret`: a Secret of decryption keys, read before rendering.
    pub decryption_secret: Option<(String, String)>,
    /// `--helm-credentials-secret`: a Secret of chart registry logins, read before rendering.
    pub helm_credentials_secret: Option<(String, String)>,
    /// `--trusted-keys-secret`: a Secret of keys `--verify-signatures` trusts.
    pub trusted_keys_secret: Option<(String, String)>,
    pub access: Access,
    pub engine: EngineOptions,
    /// Several clusters (`--context` more than once, `--all-contexts`, `--fleet`); `None`
    /// runs the one cluster `access` reaches, as tend always did.
    pub fleet: Option<FleetOptions>,
    /// Clusters run at once (`--parallel`), of a fleet or of a hub's spokes.
    pub parallel: usize,
    /// Start no further cluster once one failed (`--fail-fast`).
    pub fail_fast: bool,
}

/// The clusters of a run over several.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    pub clusters: Vec<FleetCluster>,
}

/// The result of a reconcile.
#[derive(Debug)]
pub struct Reconciled {
    pub mode: Mode,
    pub report: RunReport,
    /// `N API requests (r reads, w writes, d dry runs)`.
    pub requests: String,
}

impl Reconciled {
    /// Objects that failed plus run-level errors.
    pub fn failures(&self) -> usize {
        self.report.failed() + self.report.errors.len()
    }

    pub fn verdict(&self) -> Verdict {
        match self.mode {
            _ if self.failures() > 0 => Verdict::Failed,
            Mode::Diff if self.report.has_differences() => Verdict::Differences,
            _ => Verdict::Success,
        }
    }
}

/// The one cluster run of `opts`, reached as `opts.access` says.
fn single_cluster(opts: &ReconcileOptions) -> ClusterRun {
    ClusterRun {
        target: opts.access.clone(),
        source: opts.source.clone(),
        render: opts.render.clone(),
        before_source: SecretReads {
            decryption_keys: opts.decryption_secret.clone(),
            chart_credentials: opts.helm_credentials_secret.clone(),
            trusted_keys: opts.trusted_keys_secret.clone(),
        },
        engine: opts.engine.clone(),
        kubeconfig_secret: None,
    }
}

/// A run of the one cluster the flags reach: as it always was, unless its units target
/// other clusters through kubeconfig Secrets (hub and spoke), which make it a run over the
/// hub, `name`, and its spokes.
#[derive(Debug)]
pub enum HubReconciled {
    One(Box<Result<Reconciled, Error>>),
    Several(FleetReconciled),
}

/// Run a diff or an apply of one cluster, named `name` in reports, and of the spokes its
/// units target.
pub fn reconcile_hub(opts: &ReconcileOptions, name: &str) -> HubReconciled {
    let members = vec![(name.to_string(), single_cluster(opts))];
    let mut ran = super::spokes::run_with_spokes(opts.mode, members, opts.parallel, opts.fail_fast);
    if ran.len() > 1 {
        return HubReconciled::Several(fleet_reconciled(opts, ran));
    }
    let result = ran
        .pop()
        .and_then(|(_, outcome)| outcome)
        .unwrap_or_else(|| {
            Err(Error::Runtime(std::io::Error::other(
                "the run ended without an outcome",
            )))
        });
    HubReconciled::One(Box::new(result.map(|outcome| Reconciled {
        mode: opts.mode,
        report: outcome.report,
        requests: outcome.requests,
    })))
}

/// `member`'s part of a fleet run: its name for targeting and reports, its path, and how it
/// is reached (a context, or a kubeconfig Secret read through `opts.access`).
fn member_run(opts: &ReconcileOptions, member: &FleetCluster) -> ClusterRun {
    let mut run = single_cluster(opts);
    run.render.cluster = Some(member.name.clone());
    run.engine.cluster_name = Some(member.name.clone());
    // Several clusters' progress bars on one terminal would overwrite each other.
    run.engine.progress = false;
    if let Some((first, more)) = member.directories().split_first() {
        run.source.path = Some(first.into());
        run.source.more_paths = more.iter().map(Into::into).collect();
    }
    (run.target, run.kubeconfig_secret) = super::fleet::reach(&opts.access, member);
    run
}

/// The result of a run over several clusters.
#[derive(Debug)]
pub struct FleetReconciled {
    pub report: FleetReport,
    /// Per cluster that ran: its name and `N API requests (...)`.
    pub requests: Vec<(String, String)>,
}

impl FleetReconciled {
    /// The worst of the clusters: a failure (or a cluster not run) over differences over
    /// success.
    pub fn verdict(&self) -> Verdict {
        let mut verdict = Verdict::Success;
        for cluster in &self.report.clusters {
            let this = match &cluster.state {
                ClusterState::Ran(report) => Reconciled {
                    mode: self.report.command,
                    report: (**report).clone(),
                    requests: String::new(),
                }
                .verdict(),
                ClusterState::Error(_) | ClusterState::NotRun(_) => Verdict::Failed,
            };
            verdict = match (verdict, this) {
                (Verdict::Failed, _) | (_, Verdict::Failed) => Verdict::Failed,
                (Verdict::Differences, _) | (_, Verdict::Differences) => Verdict::Differences,
                _ => Verdict::Success,
            };
        }
        verdict
    }
}

/// Run a diff or an apply of every cluster of `fleet` (and of the spokes their units
/// target), `opts.parallel` at a time; each cluster's failure is its own.
pub fn reconcile_fleet(opts: &ReconcileOptions, fleet: &FleetOptions) -> FleetReconciled {
    let servers = crate::cluster::context_servers(opts.access.kubeconfig.as_deref());
    let run_clusters: Vec<RunCluster> = fleet
        .clusters
        .iter()
        .map(|m| RunCluster {
            name: m.name.clone(),
            server: m.context().and_then(|c| servers.get(c)).cloned(),
            labels: m.labels.clone(),
        })
        .collect();
    let run_clusters = std::sync::Arc::new(run_clusters);
    let members = fleet
        .clusters
        .iter()
        .map(|m| {
            let mut run = member_run(opts, m);
            run.source.run_clusters = run_clusters.clone();
            (m.name.clone(), run)
        })
        .collect();
    let ran = super::spokes::run_with_spokes(opts.mode, members, opts.parallel, opts.fail_fast);
    fleet_reconciled(opts, ran)
}

/// The report of clusters run, in order.
fn fleet_reconciled(opts: &ReconcileOptions, ran: Vec<super::spokes::Ran>) -> FleetReconciled {
    let mut requests = Vec::new();
    let mut clusters = Vec::new();
    for (name, outcome) in ran {
        let state = match outcome {
            Some(Ok(outcome)) => {
                requests.push((name.clone(), outcome.requests));
                ClusterState::Ran(Box::new(outcome.report))
            }
            Some(Err(err)) => ClusterState::Error(message(&err)),
            None => {
                ClusterState::NotRun("not started: --fail-fast after another cluster failed".into())
            }
        };
        clusters.push(ClusterEntry { name, state });
    }
    FleetReconciled {
        report: FleetReport {
            command: opts.mode,
            dry_run: opts.engine.dry_run,
            clusters,
        },
        requests,
    }
}

/// An error with its causes, one sentence each, as `tend` prints them on stderr.
pub fn message(err: &Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(&format!(": {cause_text}"));
        }
        source = cause.source();
    }
    text
}
