//! The executor: the one place a run's concurrency lives. It builds the async runtime,
//! starts every task and joins it; the stages it calls (source, render, plan, apply steps)
//! take values and return values, and never spawn, hold a channel or call back up.
//!
//! The clusters of a run go `Run::parallel` at a time, each on its own thread of
//! [`crate::parallel::map`] sharing the one runtime; each has its own lock, parent and report,
//! and one's failure is its own (`Run::fail_fast` starts no further cluster after one).
//! They read the source one at a time: the clusters share its cache (git clones, charts).
//!
//! One cluster's run, as tasks:
//!
//! ```text
//! connect ──┬─ read opted-in workloads ─────────────────────┐
//!           └─ (diff) read ahead: parent and member LISTs ──┼──┐
//! read source ─ render units that need nothing of the cluster│  │   (while connecting)
//!               (or render them as the cluster was last seen)│  │
//! ── once connected ─────────────────────────────────────────┘  │
//! secrets before the source → read source → render units that need the cluster
//! (capabilities, lookups in rounds, the seed) → read the cluster view → complete
//! → engine (diff: with what was read ahead ─────────────────────┘; apply: reads under its lock)
//! → store the seed of random functions
//! ```
//!
//! The rules, written once here:
//! - **A problem in the desired state wins over a connection error**: the source is read and
//!   rendered before the connection is awaited; if that fails, the connection is dropped and
//!   the render's error is the run's.
//! - **Nothing is written before the whole desired state is validated**: connecting, the
//!   secrets, lookups, the seed and the cluster view are reads; the engine's first write
//!   comes after `render::complete`.
//! - **An apply reads under its lock**: only a diff reads ahead while rendering.
//! - **A failed read ahead is read again** by the engine, where its error is reported.

use super::helm_cluster::{self, Speculative};
use super::helm_seed::NewSeed;
use super::load::{self, Loaded};
use super::plan::{ClusterRun, KubeconfigSecret, Run};
use super::settled_cache;
use crate::apply::engine;
use crate::apply::lists::ReadAhead;
use crate::apply::live::OptedIn;
use crate::apply::lock::SystemClock;
use crate::cluster::{Access, ClusterError, KubeconfigText, Session};
use crate::interrupt::Interrupt;
use crate::render::{RenderOptions, Rendered};
use crate::report::run::{Mode, RunReport};
use crate::source::units::{KubeConfigRef, ObjectRef};
use crate::Error;
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// What one cluster's run came to.
#[derive(Debug)]
pub struct ClusterOutcome {
    pub report: RunReport,
    /// `N API requests (r reads, w writes, d dry runs)`.
    pub requests: String,
}

/// How one cluster's run ended, with the kubeconfig Secrets of this cluster its units target
/// other clusters through (hub and spoke: each a cluster the run goes on to), known once its
/// source was read, so a hub whose run then failed still leads to its spokes.
#[derive(Debug)]
pub struct ClusterEnd {
    pub result: Result<ClusterOutcome, Error>,
    pub spokes: Vec<crate::source::units::KubeConfigRef>,
}

/// Run every cluster of `run`, `run.parallel` at a time, each to its own end, in the
/// order of `run.clusters`: `None` for a cluster not started because `--fail-fast` saw
/// another fail. One cluster failing does not stop the others otherwise.
pub fn execute(run: &Run) -> Vec<Option<ClusterEnd>> {
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(err) => {
            let result = Err(err);
            return vec![Some(ClusterEnd {
                result,
                spokes: Vec::new(),
            })];
        }
    };
    let failed = AtomicBool::new(false);
    let shared = Shared {
        // Clusters reading one repository share its cache (git clones, charts): one at a time.
        reading: Mutex::new(()),
        rendered: Mutex::new(Vec::new()),
        readers: run
            .clusters
            .iter()
            .fold(HashMap::new(), |mut readers, cluster| {
                *readers.entry(paths_key(&cluster.source)).or_insert(0) += 1;
                readers
            }),
        listening: AtomicBool::new(false),
    };
    crate::parallel::map(&run.clusters, run.parallel.max(1), 1, |cluster| {
        if run.fail_fast && failed.load(Ordering::SeqCst) {
            return None;
        }
        let mut spokes = Vec::new();
        let result = execute_cluster(&runtime, (run.mode, cluster), &shared, &mut spokes);
        let failure = match &result {
            Ok(outcome) => outcome.report.failed() + outcome.report.errors.len() > 0,
            Err(_) => true,
        };
        if failure {
            failed.store(true, Ordering::SeqCst);
        }
        Some(ClusterEnd { result, spokes })
    })
}

/// Run `future` to completion on the runtime every operation uses (`tend chaos` too).
pub fn block_on<F: Future>(future: F) -> Result<F::Output, Error> {
    Ok(runtime()?.block_on(future))
}

fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

/// What the clusters of a run share.
struct Shared {
    reading: Mutex<()>,
    /// Sources read and rendered offline that render the same for every cluster, by their
    /// paths (the clusters of a run differ in nothing else that reading the source sees),
    /// with how many clusters are still to take a copy: the last takes the render itself.
    rendered: Mutex<Vec<SharedRender>>,
    /// How many clusters of the run read each source.
    readers: HashMap<PathsKey, usize>,
    /// Whether the run listens for signals already: one listener sets the one stop request
    /// every cluster shares.
    listening: AtomicBool,
}

/// One cluster's run; `spokes` is set as soon as its source is read.
fn execute_cluster(
    runtime: &tokio::runtime::Runtime,
    (mode, cluster): (Mode, &ClusterRun),
    shared: &Shared,
    spokes: &mut Vec<crate::source::units::KubeConfigRef>,
) -> Result<ClusterOutcome, Error> {
    let reading = &shared.reading;
    let mut connecting = Connecting::start(runtime, mode, cluster);
    let (offline, wanted) = match read_while_connecting(cluster, shared, spokes) {
        Ok(read) => read,
        Err(err) => {
            // A problem in the desired state wins over whatever connecting comes to.
            connecting.task.abort();
            return Err(err);
        }
    };
    runtime.block_on(async {
        if cluster.writes(mode) && !shared.listening.swap(true, Ordering::SeqCst) {
            listen_for_signals(cluster.engine.interrupt.clone()).map_err(Error::Runtime)?;
        }
        let (session, opted_in) = connecting.session().await?;
        let (loaded, render_opts, offline) = match offline {
            Some((loaded, render)) => (loaded, cluster.render.clone(), render),
            None => {
                let (loaded, opts, render) =
                    read_source_connected(&session, cluster, reading, wanted).await?;
                (Arc::new(loaded), opts, render)
            }
        };
        *spokes = spokes_of(cluster, &loaded);
        if cluster.writes(mode) {
            super::units_live::refuse_live_controllers(&session, &loaded.expanded).await?;
        }
        let rendered = render_connected(&session, (cluster, mode), &loaded, &render_opts, offline);
        let (rendered, new_seed) = rendered.await?;
        let default_account = cluster.engine.default_service_account.as_deref();
        super::tenants::impersonate(
            &session,
            &loaded.expanded,
            &rendered.objects,
            default_account,
        )
        .await?;
        let (engine_opts, settled) = engine_options(cluster, &loaded, &rendered.objects, spokes)?;
        let ahead = match mode {
            Mode::Diff => Some(connecting),
            Mode::Apply => None,
        };
        let mut report = complete_and_run_engine(
            &session,
            (mode, &engine_opts),
            (&loaded.checkout, rendered),
            opted_in,
            ahead,
        )
        .await?;
        settled.write();
        report.units = super::units_live::reports(&loaded.expanded);
        if let (Some(seed), true) = (new_seed, cluster.writes(mode)) {
            store_seed(&session, &engine_opts.state_namespace, seed).await;
        }
        Ok(ClusterOutcome {
            report,
            requests: session.stats.to_string(),
        })
    })
}

/// The cluster's engine options with what its source said: the commit, the spokes, how its
/// units wait; and what the last run here found as desired.
fn engine_options(
    cluster: &ClusterRun,
    loaded: &Loaded,
    objects: &[crate::object::Object],
    spokes: &[KubeConfigRef],
) -> Result<(crate::apply::options::EngineOptions, settled_cache::Kept), Error> {
    let mut engine_opts = cluster.engine.clone();
    engine_opts.commit = loaded.checkout.commit.clone();
    engine_opts.signed_by = loaded.checkout.signed_by.clone();
    engine_opts.spokes = spokes.iter().map(KubeConfigRef::recorded).collect();
    let waits = super::unit_waits::unit_waits(&loaded.expanded, objects)
        .map_err(crate::render::RenderError::Invalid)?;
    engine_opts.unit_waits = Arc::new(waits);
    let settled = settled_cache::read(cluster, &engine_opts.applyset_id());
    engine_opts.settled = Some(settled.settled.clone());
    Ok((engine_opts, settled))
}

/// The spokes a cluster's units target; none for a spoke's own run (its units all target
/// the Secret it is reached through).
fn spokes_of(cluster: &ClusterRun, loaded: &Loaded) -> Vec<KubeConfigRef> {
    match cluster.source.units_for_kubeconfig_secret {
        Some(_) => Vec::new(),
        None => loaded.expanded.spokes(),
    }
}

/// The connection, made while the source is read: the session is handed over as soon as it
/// is connected, with the read of workloads opted in to reloads (which does not depend on
/// the desired state) already under way; a diff then goes on reading what the cluster holds
/// of the previous run.
struct Connecting {
    session: oneshot::Receiver<(Arc<Session>, OptedInTask)>,
    task: JoinHandle<Result<Option<ReadAhead>, ClusterError>>,
}

type OptedInTask = JoinHandle<Result<OptedIn, ClusterError>>;

impl Connecting {
    fn start(runtime: &tokio::runtime::Runtime, mode: Mode, cluster: &ClusterRun) -> Connecting {
        let access = cluster.target.clone();
        let kubeconfig_secret = cluster.kubeconfig_secret.clone();
        let ahead_opts = (mode == Mode::Diff).then(|| cluster.engine.clone());
        let (connected, session) = oneshot::channel();
        let task = runtime.spawn(async move {
            let access = match &kubeconfig_secret {
                Some(secret) => with_kubeconfig_of(secret, access).await?,
                None => access,
            };
            let session = Arc::new(Session::connect(&access).await?);
            let reading = session.clone();
            let opted_in =
                tokio::spawn(async move { crate::apply::live::read_opted_in(&reading).await });
            let _ = connected.send((session.clone(), opted_in));
            let Some(engine_opts) = &ahead_opts else {
                return Ok(None);
            };
            match crate::apply::lists::read_ahead(&session, engine_opts).await {
                Ok(ahead) => Ok(Some(ahead)),
                Err(err) => {
                    tracing::debug!("reading ahead: {err}");
                    Ok(None)
                }
            }
        });
        Connecting { session, task }
    }

    /// The session, or why there is none.
    async fn session(&mut self) -> Result<(Arc<Session>, OptedInTask), Error> {
        match (&mut self.session).await {
            Ok(connected) => Ok(connected),
            Err(_) => {
                // Not connected: the task says why.
                join(&mut self.task).await?;
                Err(Error::Runtime(std::io::Error::other(
                    "the connection task ended without a session",
                )))
            }
        }
    }

    /// What was read ahead, once the task is done.
    async fn read_ahead(mut self) -> Result<Option<ReadAhead>, Error> {
        join(&mut self.task).await
    }
}

async fn join<T>(task: &mut JoinHandle<Result<T, ClusterError>>) -> Result<T, Error> {
    task.await
        .map_err(|err| Error::Runtime(std::io::Error::other(err)))?
        .map_err(Error::Cluster)
}

/// `access` with the kubeconfig a Secret of the hub holds (a fleet's `kubeconfigSecretRef`).
pub async fn with_kubeconfig_of(
    secret: &KubeconfigSecret,
    access: Access,
) -> Result<Access, ClusterError> {
    let origin = format!(
        "Secret {}/{} key {}",
        secret.namespace,
        secret.name,
        secret.keys.join(" or ")
    );
    let missing = |what: &str| {
        ClusterError::Config(format!(
            "{origin}: {what} in the cluster tend runs in; create it with the cluster's kubeconfig (kubectl create secret generic {} -n {} --from-file={}=KUBECONFIG)",
            secret.name,
            secret.namespace,
            secret.keys.first().map_or("value", String::as_str)
        ))
    };
    let mut entries = crate::cluster::secret_data(&secret.hub, &secret.namespace, &secret.name)
        .await?
        .ok_or_else(|| missing("no such Secret"))?;
    let at = secret
        .keys
        .iter()
        .find_map(|wanted| entries.iter().position(|(key, _)| key == wanted))
        .ok_or_else(|| missing("no such key"))?;
    let (_, value) = entries.swap_remove(at);
    let text = String::from_utf8(value.to_vec())
        .map_err(|_| ClusterError::Config(format!("{origin}: not UTF-8 text")))?;
    Ok(Access {
        kubeconfig_text: Some(KubeconfigText {
            origin,
            text: Arc::new(zeroize::Zeroizing::new(text)),
        }),
        ..access
    })
}

/// A render made before connecting.
enum OfflineRender {
    /// No unit needs the cluster: this is the render.
    Done(Rendered),
    /// Units need the cluster: render them once connected, unless this render, made as the
    /// cluster was last seen, still stands.
    NeedsCluster(Option<Speculative>),
}

/// Read (and, where no unit needs the cluster, render) the source while connecting, setting
/// `spokes`; with secrets to read first, or objects only the cluster holds that units read (returned),
/// it is read once connected.
fn read_while_connecting(
    cluster: &ClusterRun,
    shared: &Shared,
    spokes: &mut Vec<KubeConfigRef>,
) -> Result<(Option<ReadOffline>, BTreeSet<ObjectRef>), Error> {
    if !cluster.before_source.is_empty() {
        return Ok((None, BTreeSet::new()));
    }
    Ok(match read_and_render_offline(cluster, shared)? {
        Ok(offline) => {
            *spokes = spokes_of(cluster, &offline.0);
            (Some(offline), BTreeSet::new())
        }
        Err(wanted) => (None, wanted),
    })
}

/// The source read before connecting, and its render so far.
type ReadOffline = (Arc<Loaded>, OfflineRender);

/// `--path` and a Fleet cluster's other `paths`, and the spoke a run is for.
/// A render shared by the clusters reading the same paths, and how many are still to take it.
type SharedRender = (PathsKey, Arc<Loaded>, Arc<Rendered>, usize);

type PathsKey = (
    Option<std::path::PathBuf>,
    Vec<std::path::PathBuf>,
    Option<(String, String)>,
);

/// The source read, and rendered as far as it can be without the cluster: once for the
/// clusters of the run that read the same paths, when the render is the same for every
/// cluster (the others wait for it, then take a copy); or the objects only the cluster
/// holds that its units read.
fn read_and_render_offline(
    cluster: &ClusterRun,
    shared: &Shared,
) -> Result<Result<ReadOffline, BTreeSet<ObjectRef>>, Error> {
    // A poisoned lock only means another cluster's read panicked: the cache is still usable.
    let turn = shared
        .reading
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let key = paths_key(&cluster.source);
    let rendered = || {
        shared
            .rendered
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    let taken = {
        let mut rendered = rendered();
        let at = rendered.iter().position(|(k, ..)| *k == key);
        at.map(|at| {
            rendered[at].3 -= 1;
            if rendered[at].3 == 0 {
                let (_, loaded, done, _) = rendered.remove(at);
                (loaded, done)
            } else {
                (rendered[at].1.clone(), rendered[at].2.clone())
            }
        })
    };
    if let Some((loaded, done)) = taken {
        tracing::debug!("the source as another cluster of the run read and rendered it");
        // Copied outside the locks: the clusters copy side by side.
        drop(turn);
        return Ok(Ok((loaded, OfflineRender::Done(own_copy(done)))));
    }
    let reading = super::cluster_objects::reading(&cluster.source);
    let loaded = Arc::new(load::load(&reading, &cluster.render)?);
    let wanted = super::cluster_objects::wanted(&reading);
    if !wanted.is_empty() {
        return Ok(Err(wanted));
    }
    // A render that needs the cluster is not shared: render it side by side with the others.
    let needs_cluster = loaded.units().iter().any(|unit| unit.needs.cluster);
    if needs_cluster || !loaded.renders_the_same_for_every_cluster() {
        drop(turn);
        let render = render_offline(&loaded, cluster, &cluster.render, true)?;
        return Ok(Ok((loaded, render)));
    }
    let render = render_offline(&loaded, cluster, &cluster.render, true)?;
    let others = shared.readers.get(&key).map_or(0, |n| n.saturating_sub(1));
    let OfflineRender::Done(done) = render else {
        return Ok(Ok((loaded, render)));
    };
    if others == 0 {
        return Ok(Ok((loaded, OfflineRender::Done(done))));
    }
    let done = Arc::new(done);
    rendered().push((key, loaded.clone(), done.clone(), others));
    drop(turn);
    Ok(Ok((loaded, OfflineRender::Done(own_copy(done)))))
}

/// The render itself when no other cluster holds it any more, else a copy of it.
fn own_copy(rendered: Arc<Rendered>) -> Rendered {
    Arc::try_unwrap(rendered).unwrap_or_else(|shared| (*shared).clone())
}

fn paths_key(source: &crate::source::SourceOptions) -> PathsKey {
    (
        source.path.clone(),
        source.more_paths.clone(),
        source.units_for_kubeconfig_secret.clone(),
    )
}

/// Read the source while no other cluster of the run reads it.
fn load_one_at_a_time(
    source: &crate::source::SourceOptions,
    render_opts: &RenderOptions,
    reading: &Mutex<()>,
) -> Result<Loaded, Error> {
    // A poisoned lock only means another cluster's read panicked: the cache is still usable.
    let _turn = reading
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    load::load(source, render_opts)
}

/// Render the units if none needs the cluster; else, with `speculate`, render them as the
/// cluster was last seen from here, to be checked once connected.
fn render_offline(
    loaded: &Loaded,
    cluster: &ClusterRun,
    render_opts: &RenderOptions,
    speculate: bool,
) -> Result<OfflineRender, Error> {
    let units = loaded.units();
    tracing::debug!("units: {}", load::describe_units(&units));
    if !units.iter().any(|unit| unit.needs.cluster) {
        return Ok(OfflineRender::Done(load::render_offline(
            loaded,
            render_opts,
        )?));
    }
    let speculative = speculate
        .then(|| {
            let cache_dir = cluster.cache_dir();
            helm_cluster::speculate(loaded, render_opts, &cache_dir, &cluster.target)
        })
        .flatten();
    Ok(OfflineRender::NeedsCluster(speculative))
}

/// The render options with what the Secrets named by flags hold.
async fn read_secrets(session: &Session, cluster: &ClusterRun) -> Result<RenderOptions, Error> {
    let secrets = &cluster.before_source;
    let render = super::keys::with_secret(
        session,
        &cluster.render,
        &secrets.decryption_keys,
        &cluster.cache_dir(),
    )
    .await?;
    super::chart_credentials::with_secret(session, &render, &secrets.chart_credentials).await
}

/// The source read once connected, after the Secrets its reading needs.
async fn read_source_connected(
    session: &Session,
    cluster: &ClusterRun,
    reading: &Mutex<()>,
    wanted: BTreeSet<ObjectRef>,
) -> Result<(Loaded, RenderOptions, OfflineRender), Error> {
    let render_opts = read_secrets(session, cluster).await?;
    let secret = &cluster.before_source.trusted_keys;
    let source = super::trusted_keys::with_secret(session, &cluster.source, secret).await?;
    let load = |source: &_| load_one_at_a_time(source, &render_opts, reading);
    let loaded = super::cluster_objects::load_reading(session, &source, wanted, load).await?;
    let render = render_offline(&loaded, cluster, &render_opts, false)?;
    Ok((loaded, render_opts, render))
}

/// The whole render, connected: what was rendered offline, or the units that need the
/// cluster rendered with it. Returns the seed to store when this run drew the first.
async fn render_connected(
    session: &Session,
    (cluster, mode): (&ClusterRun, Mode),
    loaded: &Loaded,
    render_opts: &RenderOptions,
    offline: OfflineRender,
) -> Result<(Rendered, Option<NewSeed>), Error> {
    let cluster_name = cluster.render.cluster.as_deref();
    let speculative = match offline {
        OfflineRender::Done(rendered) => {
            let summary = load::summary(&loaded.checkout, &rendered, cluster_name);
            tracing::debug!("offline: {summary}");
            return Ok((rendered, None));
        }
        OfflineRender::NeedsCluster(speculative) => speculative,
    };
    let seen_as = (cluster.cache_dir(), &cluster.target);
    let state_namespace = &cluster.engine.state_namespace;
    let storing = cluster.writes(mode);
    let rendered = helm_cluster::render(
        session,
        loaded,
        render_opts,
        (state_namespace, storing),
        speculative,
        (&seen_as.0, seen_as.1),
    )
    .await?;
    tracing::debug!(
        "offline: {}",
        load::summary(&loaded.checkout, &rendered.0, cluster_name)
    );
    Ok(rendered)
}

/// Read the cluster's view for tend's kinds, complete the rendered set with it, and run the
/// engine: a diff with what was read ahead, an apply under its lock.
async fn complete_and_run_engine(
    session: &Session,
    (mode, engine_opts): (Mode, &engine::EngineOptions),
    (checkout, rendered): (&crate::source::Checkout, Rendered),
    opted_in: OptedInTask,
    ahead: Option<Connecting>,
) -> Result<RunReport, Error> {
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
    let state_namespace = &engine_opts.state_namespace;
    let (view, reloads) =
        crate::apply::live::gather(session, &rendered, &id, state_namespace, opted_in)
            .await
            .map_err(Error::Cluster)?;
    let rendered = crate::render::complete(rendered, &view)?;
    for note in &rendered.notes {
        tracing::warn!("{note}");
    }
    let cluster_name = engine_opts.cluster_name.as_deref();
    tracing::info!("{}", load::summary(checkout, &rendered, cluster_name));
    let kinds = crate::apply::tend_kinds::KindsContext {
        reloads,
        copy_outcomes: rendered.copy_outcomes,
        releases: rendered.releases,
    };
    let objects = rendered.objects;
    Ok(match (mode, ahead) {
        (Mode::Diff, Some(connecting)) => {
            let ahead = connecting.read_ahead().await?;
            engine::diff(session, objects, engine_opts, &kinds, ahead).await?
        }
        (Mode::Diff, None) => engine::diff(session, objects, engine_opts, &kinds, None).await?,
        (Mode::Apply, _) => {
            let clock = Arc::new(SystemClock);
            engine::apply(session, objects, engine_opts, &kinds, clock).await?
        }
    })
}

/// Store the seed this run drew: what it applied was rendered with it, and later runs
/// render the same.
async fn store_seed(session: &Session, state_namespace: &str, seed: NewSeed) {
    if let Err(err) = super::helm_seed::store(session, state_namespace, seed).await {
        tracing::warn!("cannot store the seed of Helm's random functions: {err}");
    }
}

/// SIGTERM and SIGINT during a writing apply (README "Signals"): the first sets the run's
/// [`Interrupt`], so the run stops starting writes, releases its lock, records and reports;
/// a second exits at once. Commands that write nothing keep the default disposition.
fn listen_for_signals(interrupt: Interrupt) -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        loop {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            if interrupt.trigger(name) {
                tracing::warn!(
                    "{name}: stopping; no new writes, the lock is released and the run recorded (a second signal exits at once)"
                );
            } else {
                tracing::error!(
                    "{name} again: exiting at once; the lock stays held until its lease expires"
                );
                // 2, as any error (`cli::EXIT_ERROR`); there is no result left to map.
                std::process::exit(2);
            }
        }
    });
    Ok(())
}
