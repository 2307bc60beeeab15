//! Flags shared by `tend diff` and `tend apply` (README "Commands, flags and environment variables"), and the options they build.

use super::{GlobalArgs, LogFormat, OutputFormat};
use crate::apply::engine::EngineOptions;
use crate::ops::reconcile::{FleetOptions, ReconcileOptions, Reconciled};
use crate::ops::Verdict;
use crate::plan::planner::PruneLimits;
use crate::report::run::Mode;
use crate::report::{ReportFormat, Shown};
use crate::Error;
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
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
    /// Secret holding decryption keys, read at the start of the run (Flux's format: `*.agekey` entries age identities, `*.asc` entries armored PGP keys).
    #[arg(long, env = "TEND_DECRYPTION_SECRET", value_name = "NAMESPACE/NAME")]
    pub decryption_secret: Option<String>,
    /// Secret holding logins for chart repositories and OCI registries (key `.dockerconfigjson`, as `kubectl create secret docker-registry` makes), read at the start of the run.
    #[arg(
        long,
        env = "TEND_HELM_CREDENTIALS_SECRET",
        value_name = "NAMESPACE/NAME"
    )]
    pub helm_credentials_secret: Option<String>,
    /// Secret holding the keys --verify-signatures trusts (each entry armored OpenPGP public keys or allowed_signers lines, as Flux keeps them), read at the start of the run.
    #[arg(long, env = "TEND_TRUSTED_KEYS_SECRET", value_name = "NAMESPACE/NAME")]
    pub trusted_keys_secret: Option<String>,
    /// Print the full body of each created object (text and markdown show one line per create; -o json always has them).
    #[arg(long, env = "TEND_SHOW_CREATES")]
    pub show_creates: bool,
    /// Clusters run at once in a run over several (--context given more than once, --all-contexts, --fleet, a hub's spokes).
    #[arg(long, env = "TEND_PARALLEL", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: u16,
    /// In a run over several clusters (a hub's spokes too), start no further cluster once one failed (by default every cluster runs).
    #[arg(long, env = "TEND_FAIL_FAST")]
    pub fail_fast: bool,
    /// Flux's multi-tenancy lockdown (kustomize-controller's and helm-controller's --default-service-account): a Flux Kustomization or HelmRelease without spec.serviceAccountName is applied as this ServiceAccount of its own namespace.
    #[arg(long, env = "TEND_DEFAULT_SERVICE_ACCOUNT", value_name = "NAME")]
    pub default_service_account: Option<String>,
    /// Also write the report as one self-contained HTML page (no network needed to view it).
    #[arg(long, env = "TEND_REPORT_HTML", value_name = "FILE")]
    pub report_html: Option<PathBuf>,
    /// Write the run's metrics to PATH (OpenMetrics text, for node exporter's textfile collector).
    #[arg(long, env = "TEND_METRICS_FILE", value_name = "PATH")]
    pub metrics_file: Option<PathBuf>,
    /// Push the run's metrics to a Prometheus Pushgateway (http://HOST:PORT), one group per cluster and ApplySet under job "tend".
    #[arg(long, env = "TEND_PUSHGATEWAY", value_name = "URL")]
    pub pushgateway: Option<String>,
}

/// `NAMESPACE/NAME` of a Secret given to `flag`, both valid Kubernetes names.
fn parse_secret_ref(flag: &str, text: &str) -> Result<(String, String), Error> {
    use crate::object::names::{dns1123_label, dns1123_subdomain};
    match text.split_once('/') {
        Some((ns, name)) if dns1123_label(ns).is_ok() && dns1123_subdomain(name).is_ok() => {
            Ok((ns.to_string(), name.to_string()))
        }
        _ => Err(Error::Usage(format!(
            "{flag} {text:?}: expected NAMESPACE/NAME of a Secret, e.g. flux-system/sops-keys"
        ))),
    }
}

impl EngineArgs {
    /// The options of a reconcile, built once; every flag is checked here, before any work.
    pub fn options(
        &self,
        global: &GlobalArgs,
        mode: Mode,
        apply: Option<&ApplyFlags>,
    ) -> Result<ReconcileOptions, Error> {
        let defaults = ApplyFlags::default();
        let apply = apply.unwrap_or(&defaults);
        // One stop request for the run, seen by the engine and the cluster client alike.
        let interrupt = crate::interrupt::Interrupt::default();
        let fleet = crate::ops::fleet::clusters(&global.fleet_choice())?;
        if let (Some(_), Some(cluster)) = (&fleet, &global.cluster) {
            return Err(Error::Usage(format!(
                "--cluster {cluster} names the one cluster of a run; in a run over several, each cluster is named by its context or its Fleet entry"
            )));
        }
        Ok(ReconcileOptions {
            fleet: fleet.map(|clusters| FleetOptions { clusters }),
            parallel: self.parallel as usize,
            fail_fast: self.fail_fast,
            mode,
            source: global.source_options(self.trusted_keys_secret.is_some())?,
            render: global.render_options()?,
            decryption_secret: self
                .decryption_secret
                .as_deref()
                .map(|text| parse_secret_ref("--decryption-secret", text))
                .transpose()?,
            helm_credentials_secret: self
                .helm_credentials_secret
                .as_deref()
                .map(|text| parse_secret_ref("--helm-credentials-secret", text))
                .transpose()?,
            trusted_keys_secret: self
                .trusted_keys_secret
                .as_deref()
                .map(|text| parse_secret_ref("--trusted-keys-secret", text))
                .transpose()?,
            access: global.access(&interrupt),
            engine: EngineOptions {
                applyset: self.applyset.clone(),
                state_namespace: self.state_namespace.clone(),
                default_namespace: global.namespace.clone(),
                force_conflicts: !self.no_force_conflicts,
                dry_run: apply.dry_run,
                concurrency: self.concurrency as usize,
                prune_limits: PruneLimits {
                    allow_empty: self.allow_empty,
                    max_deletions: self.max_deletions,
                },
                lock_timeout: apply.lock_timeout,
                wait: apply.wait,
                timeout: apply.timeout,
                commit: None,
                signed_by: None,
                cluster_name: global.cluster.clone(),
                progress: std::io::stderr().is_terminal() && global.log_format == LogFormat::Text,
                interrupt,
                default_service_account: self.default_service_account.clone(),
                spokes: Vec::new(),
                unit_waits: Default::default(),
                settled: None,
            },
        })
    }
}

/// What only `apply` sets.
#[derive(Debug, Clone)]
pub struct ApplyFlags {
    pub dry_run: bool,
    pub wait: bool,
    pub timeout: Duration,
    pub lock_timeout: Duration,
}

impl Default for ApplyFlags {
    fn default() -> Self {
        ApplyFlags {
            dry_run: false,
            wait: false,
            timeout: Duration::from_secs(300),
            lock_timeout: Duration::from_secs(30),
        }
    }
}

/// The report format `-o` asks for; `diff` and `apply` print text, json or markdown. Checked
/// before anything is loaded.
pub fn report_format(
    global: &GlobalArgs,
    engine: &EngineArgs,
    command: &str,
) -> Result<ReportFormat, Error> {
    let shown = Shown {
        verbose: global.verbose > 0,
        show_creates: engine.show_creates,
    };
    match global.output {
        None | Some(OutputFormat::Text) => Ok(ReportFormat::Text {
            color: global.use_color(std::io::stdout().is_terminal()),
            shown,
        }),
        Some(OutputFormat::Json) => Ok(ReportFormat::Json),
        Some(OutputFormat::Markdown) => Ok(ReportFormat::Markdown { shown }),
        Some(OutputFormat::Yaml) => Err(Error::Usage(format!(
            "tend {command} prints text, json or markdown; use -o text, -o json or -o markdown"
        ))),
    }
}

/// Print a reconcile's report and its summary line; the verdict decides the exit code.
pub fn finish(result: &Reconciled, format: ReportFormat) -> Result<Verdict, Error> {
    super::print(&crate::report::format_run(&result.report, format))?;
    let failed = result.failures();
    tracing::info!(
        "{}{}{} ({} ms, {})",
        match (result.mode, result.report.dry_run) {
            (Mode::Diff, _) => "diff: ",
            (Mode::Apply, true) => "apply --dry-run: ",
            (Mode::Apply, false) => "apply: ",
        },
        result.report.summary(),
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        },
        result.report.duration.as_millis(),
        result.requests,
    );
    Ok(result.verdict())
}
