//! `diff` and `apply`: load the desired state, connect, complete tend's kinds with the
//! cluster's view, run the engine, and return the report.

use crate::apply::engine::{self, EngineError, EngineOptions};
use crate::apply::lock::SystemClock;
use crate::cluster::{Access, Session};
use crate::ops::{load, Verdict};
use crate::render::{RenderOptions, Rendered};
use crate::report::run::{Mode, RunReport};
use crate::source::SourceOptions;
use crate::Error;
use std::sync::Arc;

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

/// Run a diff or an apply. Connecting (kubeconfig, TLS, discovery: reads only) runs while
/// the desired state is loaded and rendered, which takes a while on its own; nothing touches
/// the cluster beyond that until the whole desired state is validated, and a problem in it
/// is reported before any connection error. With `--decryption-secret` or
/// `--helm-credentials-secret` the desired state is loaded once connected and that Secret
/// read, still before any write.
pub fn reconcile(opts: &ReconcileOptions) -> Result<Reconciled, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let access = opts.access.clone();
    // A diff also reads what the cluster holds of the previous run while rendering goes on:
    // with nothing new in git, nothing is left to read afterwards. (An apply reads under
    // its lock, after rendering.)
    let ahead_opts = (opts.mode == Mode::Diff).then(|| opts.engine.clone());
    // The session is handed over as soon as it is connected (charts render with it) while
    // this task goes on reading ahead.
    // With it goes the read of live workloads that opted in to reloads, which does not
    // depend on the desired state either.
    let (connected, session_rx) = tokio::sync::oneshot::channel::<(Arc<Session>, OptedInTask)>();
    let connecting = runtime.spawn(async move {
        let session = Arc::new(Session::connect(&access).await?);
        let reading = session.clone();
        let opted_in =
            tokio::spawn(async move { crate::apply::live::read_opted_in(&reading).await });
        let _ = connected.send((session.clone(), opted_in));
        let ahead = match &ahead_opts {
            Some(engine_opts) => {
                match crate::apply::lists::read_ahead(&session, engine_opts).await {
                    Ok(ahead) => Some(ahead),
                    Err(err) => {
                        // Read again once rendered, where the error is reported as usual.
                        tracing::debug!("reading ahead: {err}");
                        None
                    }
                }
            }
            None => None,
        };
        Ok::<_, crate::cluster::ClusterError>(ahead)
    });
    // Read (and, without charts, render) the source while connecting. Charts render once
    // connected: they see the cluster's version, what it serves and its objects.
    let early = match (&opts.decryption_secret, &opts.helm_credentials_secret) {
        (None, None) => match early_render(opts) {
            Ok(early) => Some(early),
            Err(err) => {
                connecting.abort();
                return Err(err);
            }
        },
        _ => None,
    };
    let (report, requests) = runtime.block_on(async {
        if opts.mode == Mode::Apply && !opts.engine.dry_run {
            super::signals::listen(opts.engine.interrupt.clone()).map_err(Error::Runtime)?;
        }
        let mut connecting = Some(connecting);
        let mut finish_connecting = async || -> Result<_, Error> {
            match connecting.take() {
                Some(task) => Ok(task
                    .await
                    .map_err(|err| Error::Runtime(std::io::Error::other(err)))?
                    .map_err(EngineError::from)?),
                None => Ok(None),
            }
        };
        let (session, opted_in) = match session_rx.await {
            Ok(connected) => connected,
            // Not connected: the task says why.
            Err(_) => {
                finish_connecting().await?;
                return Err(Error::Runtime(std::io::Error::other(
                    "the connection task ended without a session",
                )));
            }
        };
        let (loaded, rendered, speculative, render) = match early {
            Some((loaded, rendered, speculative)) => {
                (loaded, rendered, speculative, opts.render.clone())
            }
            None => {
                let render = super::keys::with_secret(
                    &session,
                    &opts.render,
                    &opts.decryption_secret,
                    &opts
                        .source
                        .cache_dir
                        .clone()
                        .unwrap_or_else(crate::source::default_cache_dir),
                )
                .await?;
                let render = super::chart_credentials::with_secret(
                    &session,
                    &render,
                    &opts.helm_credentials_secret,
                )
                .await?;
                let loaded = load::load(&opts.source, &render)?;
                (loaded, None, None, render)
            }
        };
        let storing = opts.mode == Mode::Apply && !opts.engine.dry_run;
        let (rendered, new_seed) = match rendered {
            Some(rendered) => (rendered, None),
            None if loaded.has_helm_charts() => {
                super::helm_cluster::render(
                    &session,
                    &loaded,
                    &render,
                    &opts.engine.state_namespace,
                    storing,
                    speculative,
                    (&cache_dir(opts), &opts.access),
                )
                .await?
            }
            None => (load::render(&loaded, &render)?, None),
        };
        let desired = load::DesiredState {
            checkout: loaded.checkout,
            rendered,
        };
        tracing::debug!(
            "offline: {}",
            desired.summary(opts.render.cluster.as_deref())
        );
        let mut engine_opts = opts.engine.clone();
        engine_opts.commit = desired.checkout.commit.clone();
        let engine_opts = &engine_opts;
        // tend's kinds need the cluster's view (CopyRule sources and namespaces, owner uids,
        // referenced config not in git): read it, then complete the rendered set with it.
        let id = engine_opts.applyset_id();
        // A failed read ahead is read again, where its error is reported as usual.
        let opted_in = match opted_in.await {
            Ok(Ok(lists)) => Some(lists),
            Ok(Err(err)) => {
                tracing::debug!("reading ahead: {err}");
                None
            }
            Err(_) => None,
        };
        let live = crate::apply::live::gather(
            &session,
            &desired.rendered,
            &id,
            &engine_opts.state_namespace,
            opted_in,
        )
        .await
        .map_err(EngineError::from)?;
        let rendered = crate::render::complete(desired.rendered, &live.view)?;
        for note in &rendered.notes {
            tracing::warn!("{note}");
        }
        let desired = load::DesiredState {
            checkout: desired.checkout,
            rendered,
        };
        tracing::info!("{}", desired.summary(engine_opts.cluster_name.as_deref()));
        let rendered = desired.rendered;
        let kinds = crate::apply::tend_kinds::KindsContext {
            reloads: live.reloads,
            copy_outcomes: rendered.copy_outcomes,
            releases: rendered.releases,
        };
        let objects = rendered.objects;
        let report = match opts.mode {
            Mode::Diff => {
                let ahead = finish_connecting().await?;
                engine::diff(&session, objects, engine_opts, &kinds, ahead).await?
            }
            Mode::Apply => {
                engine::apply(
                    &session,
                    objects,
                    engine_opts,
                    &kinds,
                    Arc::new(SystemClock),
                )
                .await?
            }
        };
        if let (Some(seed), true) = (new_seed, storing) {
            // What this run applied was rendered with it: later runs render the same.
            if let Err(err) =
                super::helm_seed::store(&session, &engine_opts.state_namespace, seed).await
            {
                tracing::warn!("cannot store the seed of Helm's random functions: {err}");
            }
        }
        Ok::<_, Error>((report, session.stats.to_string()))
    })?;
    Ok(Reconciled {
        mode: opts.mode,
        report,
        requests,
    })
}

/// The read of live workloads opted in to reloads, started once connected.
type OptedInTask =
    tokio::task::JoinHandle<Result<crate::apply::live::OptedIn, crate::cluster::ClusterError>>;

/// The source read while connecting, and rendered too unless it holds Helm charts.
fn early_render(opts: &ReconcileOptions) -> Result<Early, Error> {
    let loaded = load::load(&opts.source, &opts.render)?;
    if loaded.has_helm_charts() {
        let speculative =
            super::helm_cluster::speculate(&loaded, &opts.render, &cache_dir(opts), &opts.access);
        return Ok((loaded, None, speculative));
    }
    let rendered = load::render(&loaded, &opts.render)?;
    Ok((loaded, Some(rendered), None))
}

/// What is read and rendered while connecting: the source; its render, unless it holds
/// Helm charts; else perhaps their render as the cluster was last seen.
type Early = (
    load::Loaded,
    Option<Rendered>,
    Option<super::helm_cluster::Speculative>,
);

fn cache_dir(opts: &ReconcileOptions) -> std::path::PathBuf {
    opts.source
        .cache_dir
        .clone()
        .unwrap_or_else(crate::source::default_cache_dir)
}
