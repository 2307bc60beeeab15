//! `diff` and `apply`: the options built once by the command become a [`Run`] of one
//! cluster, which [`crate::run::execute`] carries out; its report is the result.

use crate::apply::engine::EngineOptions;
use crate::cluster::Access;
use crate::ops::Verdict;
use crate::render::RenderOptions;
use crate::report::run::{Mode, RunReport};
use crate::run::{ClusterRun, Run, SecretReads};
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

/// Run a diff or an apply of one cluster.
pub fn reconcile(opts: &ReconcileOptions) -> Result<Reconciled, Error> {
    let run = Run {
        mode: opts.mode,
        clusters: vec![ClusterRun {
            target: opts.access.clone(),
            source: opts.source.clone(),
            render: opts.render.clone(),
            before_source: SecretReads {
                decryption_keys: opts.decryption_secret.clone(),
                chart_credentials: opts.helm_credentials_secret.clone(),
                trusted_keys: opts.trusted_keys_secret.clone(),
            },
            engine: opts.engine.clone(),
        }],
    };
    let outcome = crate::run::execute(&run)
        .into_iter()
        .next()
        .ok_or_else(|| {
            Error::Runtime(std::io::Error::other("the run ended without an outcome"))
        })??;
    Ok(Reconciled {
        mode: opts.mode,
        report: outcome.report,
        requests: outcome.requests,
    })
}
