//! `diff` and `apply`: load the desired state, connect, run the engine, print the report.

use crate::apply::engine::{self, EngineError, Session};
use crate::apply::lock::SystemClock;
use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::Access;
use crate::commands::engine_args::EngineArgs;
use crate::ops::load;
use crate::render::RenderOptions;
use crate::report;
use crate::Error;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub enum Mode {
    Diff,
    Apply {
        dry_run: bool,
        wait: bool,
        timeout: Duration,
        lock_timeout: Duration,
    },
}

pub fn run(global: &GlobalArgs, args: &EngineArgs, mode: Mode) -> Result<ExitCode, Error> {
    let render_opts = RenderOptions {
        cluster: global.cluster.clone(),
        default_namespace: global.namespace.clone(),
    };
    // Everything is loaded and validated before the cluster is even contacted.
    let desired = load::desired_state(&global.source_options(), &render_opts)?;
    tracing::debug!("offline: {}", desired.summary(global.cluster.as_deref()));
    let mut opts = args.options(global, desired.checkout.commit.clone());
    if let Mode::Apply {
        dry_run,
        wait,
        timeout,
        lock_timeout,
    } = mode
    {
        opts.dry_run = dry_run;
        opts.wait = wait;
        opts.timeout = timeout;
        opts.lock_timeout = lock_timeout;
    }
    let access = Access {
        kubeconfig: global.kubeconfig.clone(),
        context: global.context.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Output)?;
    let (report, stats) = runtime.block_on(async {
        let session = Session::connect(&access).await.map_err(EngineError::from)?;
        // Read the cluster's view once (CopyRule sources and namespaces, owner uids, config
        // not in git, reload candidates), then complete the rendered set with it: pure, and
        // nothing is parsed again.
        let id = crate::apply::inventory::applyset_id(
            &opts.applyset,
            &opts.state_namespace,
            "Secret",
            "",
        );
        let live = crate::apply::live::gather(
            &session.client,
            &session.resources,
            &desired.rendered,
            &id,
            &opts.state_namespace,
        )
        .await
        .map_err(EngineError::from)?;
        let rendered = crate::render::complete(desired.rendered, &live.view).map_err(Box::new)?;
        for note in &rendered.notes {
            tracing::warn!("{note}");
        }
        let summary = crate::ops::load::Desired {
            checkout: desired.checkout.clone(),
            rendered: rendered.clone(),
        }
        .summary(opts.cluster_name.as_deref());
        tracing::info!("{summary}");
        let kinds = crate::apply::kinds::KindsContext {
            reloads: live.reloads,
            copy_outcomes: rendered.copy_outcomes.clone(),
        };
        let objects = &rendered.objects;
        let report = match mode {
            Mode::Diff => engine::diff(&session, objects, &opts, &kinds).await,
            Mode::Apply { .. } => {
                engine::apply(&session, objects, &opts, &kinds, Arc::new(SystemClock)).await
            }
        }?;
        Ok::<_, OnlineError>((report, session.stats.clone()))
    })?;

    let color = global.use_color(std::io::stdout().is_terminal());
    let text = match global.output {
        Some(OutputFormat::Json) => report::plan::json(&report),
        Some(OutputFormat::Markdown) => report::plan::markdown(&report),
        Some(OutputFormat::Yaml) => {
            return Err(Error::Usage(format!(
                "tend {} prints text, json or markdown",
                report.command
            )))
        }
        _ => report::plan::text(&report, color, global.verbose > 0),
    };
    crate::commands::print(&text)?;
    let summary = report.summary();
    let failed = report.failed() + report.errors.len();
    tracing::info!(
        "{}{summary}{} ({} ms, {stats})",
        match mode {
            Mode::Diff => "diff: ",
            Mode::Apply { dry_run: true, .. } => "apply --dry-run: ",
            Mode::Apply { .. } => "apply: ",
        },
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        },
        report.duration.as_millis()
    );
    Ok(match mode {
        _ if failed > 0 => ExitCode::from(crate::cli::EXIT_ERROR),
        Mode::Diff if summary.has_differences() => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}

/// Errors of the online part of a run.
#[derive(Debug)]
enum OnlineError {
    Engine(EngineError),
    Render(Box<crate::render::RenderError>),
}

impl From<EngineError> for OnlineError {
    fn from(err: EngineError) -> Self {
        OnlineError::Engine(err)
    }
}

impl From<Box<crate::render::RenderError>> for OnlineError {
    fn from(err: Box<crate::render::RenderError>) -> Self {
        OnlineError::Render(err)
    }
}

impl From<OnlineError> for Error {
    fn from(err: OnlineError) -> Self {
        match err {
            OnlineError::Engine(e) => Error::Engine(e),
            OnlineError::Render(e) => Error::Render(*e),
        }
    }
}

impl From<EngineError> for Error {
    fn from(err: EngineError) -> Self {
        Error::Engine(err)
    }
}
