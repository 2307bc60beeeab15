//! Load the desired state: resolve the source, walk it, render it.

use super::plan::{Producer, Unit};
use crate::helm::chart::Charts;
use crate::problem::Problem;
use crate::render::{self, RenderOptions, RenderPass, Rendered};
use crate::source::{self, walk, Checkout, SourceOptions};
use crate::text::count;
use crate::Error;

/// One-line summary of a render: objects, files, commit, targeting.
pub fn summary(checkout: &Checkout, rendered: &Rendered, cluster: Option<&str>) -> String {
    let r = rendered;
    let mut line = format!(
        "rendered {} from {} ({}) of {}",
        count(r.objects.len(), "object"),
        count(r.files, "file"),
        count(r.documents, "document"),
        checkout.description,
    );
    match &checkout.commit {
        Some(commit) => line.push_str(&format!(" at commit {commit}")),
        None => line.push_str(" (not a git commit)"),
    }
    if let Some(signer) = &checkout.signed_by {
        line.push_str(&format!(", {signer}"));
    }
    if let Some(cluster) = cluster {
        line.push_str(&format!(", cluster {cluster}"));
    }
    if r.skipped_by_targeting > 0 {
        line.push_str(&format!(
            ", {} targeted at other clusters skipped",
            count(r.skipped_by_targeting, "document")
        ));
    }
    line
}

/// `3 units: . (files), apps (kustomize build), apps/podinfo.yaml:6 (HelmChart, needs the
/// cluster)`, for the debug log.
pub fn describe_units(units: &[Unit]) -> String {
    let listed: Vec<String> = units
        .iter()
        .map(|unit| {
            let producer = match unit.producer {
                Producer::Files => "files",
                Producer::KustomizeBuild => "kustomize build",
                Producer::HelmChart => "HelmChart",
                Producer::ControllerUnit(controller) => controller.name(),
            };
            let needs = if unit.needs.cluster {
                ", needs the cluster"
            } else {
                ""
            };
            format!("{} ({producer}{needs})", unit.name)
        })
        .collect();
    format!("{}: {}", count(units.len(), "unit"), listed.join(", "))
}

/// The source of a run, read: the checkout, its files and charts, and the problems found
/// reading them (reported with the render's).
pub struct Loaded {
    pub checkout: Checkout,
    walked: walk::Walked,
    cache_dir: std::path::PathBuf,
    /// Flux's and Argo CD's units found in the source, expanded into its files.
    pub expanded: source::units::Expanded,
    /// The charts with those of `walked.charts.unread` read whole, once a render needed
    /// them, and the problems reading them.
    read_charts: std::sync::OnceLock<(Charts, Vec<Problem>)>,
}

impl Loaded {
    /// What the source produces objects with, and what each needs of the cluster.
    pub fn units(&self) -> Vec<Unit> {
        super::plan::units(&self.walked, &self.expanded)
    }

    /// Whether rendering it gives the same for every cluster of a run: no controller's unit
    /// (Argo CD destinations name clusters) and no text naming clusters (`tend.dev/clusters`,
    /// a kind's or a HelmChart's `spec.clusters`), so targeting has nothing to decide.
    pub fn renders_the_same_for_every_cluster(&self) -> bool {
        self.expanded.units.is_empty()
            && !self
                .walked
                .files
                .iter()
                .any(|f| f.text.contains("clusters"))
    }
}

/// Resolve, walk and render, offline (`tend render`). Walk problems (unreadable files,
/// symlink escapes) and render problems are reported together.
pub fn read_and_render(
    source_opts: &SourceOptions,
    render_opts: &RenderOptions,
) -> Result<(Checkout, Rendered), Error> {
    let mut loaded = load(source_opts, render_opts)?;
    // Owned by this render alone: the charts' files are freed once the charts rendered.
    let charts = std::mem::take(&mut loaded.walked.charts);
    let rendered = match render_with(&loaded, ChartsIn::Owned(Box::new(charts)), render_opts)? {
        RenderPass::Rendered(rendered) => rendered,
        RenderPass::NeedsLookups(_) => return Err(offline_lookups()),
    };
    Ok((loaded.checkout, rendered))
}

/// Resolve and walk the source, and fetch the charts its HelmCharts name from chart
/// repositories (or take them from the cache).
pub fn load(source_opts: &SourceOptions, render_opts: &RenderOptions) -> Result<Loaded, Error> {
    let mut checkout = source::resolve(source_opts)?;
    checkout.kustomize.keys = render_opts.keys.clone();
    let mut walked = walk_checkout(source_opts, &checkout)?;
    let cache_dir = source_opts
        .cache_dir
        .clone()
        .unwrap_or_else(source::default_cache_dir);
    let store = super::render_cache::FileRenderCache::new(&cache_dir);
    read_unknown_charts(&mut walked, &store);
    let chart_logins = std::sync::Mutex::new(Default::default());
    let for_kubeconfig =
        source_opts
            .units_for_kubeconfig_secret
            .as_ref()
            .map(|(namespace, name)| source::units::KubeConfigRef {
                namespace: namespace.clone(),
                name: name.clone(),
                key: None,
            });
    let expanded = if render_opts.apply_controller_objects {
        source::units::Expanded::default()
    } else {
        let context = source::units::Context {
            checkout: &checkout,
            cache_dir: &cache_dir,
            default_namespace: &render_opts.default_namespace,
            kustomize: &checkout.kustomize,
            cluster: render_opts.cluster.as_deref(),
            for_kubeconfig: for_kubeconfig.as_ref(),
            run_clusters: &source_opts.run_clusters,
            trusted_keys: &source_opts.trusted_keys,
            cluster_objects: source_opts.cluster_objects.as_deref(),
            chart_logins: &chart_logins,
            archives: &Default::default(),
        };
        let expanded = source::units::expand(&mut walked, &context);
        if !expanded.units.is_empty() {
            // The releases units add are HelmCharts to fetch charts for.
            walked.charts.helm_chart_docs = source::charts::helm_chart_docs(&walked.files);
        }
        expanded
    };
    // Dependencies a local chart names but lacks, as `helm dependency build` fetches them.
    source::charts::dependencies::fill_all(
        &mut walked.charts,
        &walked.files,
        (&checkout.dir, &checkout.root),
        &cache_dir,
        &render_opts.chart_credentials,
        &mut walked.problems,
    );
    let credentials = with_unit_logins(&render_opts.chart_credentials, chart_logins);
    walked.charts.remote = source::charts::remote::fetch_all(
        &walked.charts.helm_chart_docs,
        &cache_dir,
        &credentials,
        &source_opts.trusted_keys,
        &mut walked.problems,
    );
    let mut expanded = expanded;
    resolved_chart_versions(&mut expanded, &walked.charts);
    Ok(Loaded {
        checkout,
        walked,
        cache_dir,
        expanded,
        read_charts: Default::default(),
    })
}

/// Read whole the charts the walk knows by their stamps only but no earlier run hashed
/// with these stamps: a render will need their files (a kept render is found by the
/// chart's digest). Those left unread had their digest recalled, and were whole, their
/// dependencies in `charts/`, when hashed.
fn read_unknown_charts(walked: &mut walk::Walked, store: &super::render_cache::FileRenderCache) {
    let charts = &mut walked.charts;
    let unknown: Vec<std::path::PathBuf> = charts
        .unread
        .keys()
        .filter(|dir| {
            !charts
                .dirs
                .get(*dir)
                .is_some_and(|c| store.recall_digest(c))
        })
        .cloned()
        .collect();
    for dir in unknown {
        walked.problems.extend(read_whole(charts, &dir));
    }
}

/// Read the unread chart `dir` of `charts` whole (a problem, and no chart, when it does
/// not read).
fn read_whole(charts: &mut Charts, dir: &std::path::Path) -> Option<Problem> {
    let unread = charts.unread.remove(dir)?;
    match source::charts::read_chart(&unread.root, &unread.dir, dir) {
        Ok(chart) => {
            charts.dirs.insert(dir.to_path_buf(), chart);
            None
        }
        Err(problem) => {
            charts.dirs.remove(dir);
            Some(problem)
        }
    }
}

/// The charts a render reads: those of a [`Loaded`] that may render again, or its own
/// (freed once the charts have rendered).
enum ChartsIn<'a> {
    Shared(&'a Charts),
    Owned(Box<Charts>),
}

impl<'a> ChartsIn<'a> {
    fn get(&self) -> &Charts {
        match self {
            ChartsIn::Shared(charts) => charts,
            ChartsIn::Owned(charts) => charts,
        }
    }

    /// These charts with the unread ones read whole, and the problems reading them.
    fn read_whole(self, loaded: &'a Loaded) -> (ChartsIn<'a>, Vec<Problem>) {
        let read = |charts: &mut Charts| {
            let dirs: Vec<_> = charts.unread.keys().cloned().collect();
            dirs.iter()
                .filter_map(|dir| read_whole(charts, dir))
                .collect::<Vec<_>>()
        };
        match self {
            ChartsIn::Owned(mut charts) => {
                let problems = read(&mut charts);
                (ChartsIn::Owned(charts), problems)
            }
            ChartsIn::Shared(charts) => {
                let (charts, problems) = loaded.read_charts.get_or_init(|| {
                    let mut charts = charts.clone();
                    let problems = read(&mut charts);
                    (charts, problems)
                });
                (ChartsIn::Shared(charts), problems.clone())
            }
        }
    }
}

/// The files of `--path` (and a Fleet cluster's other `paths`), walked.
fn walk_checkout(
    source_opts: &SourceOptions,
    checkout: &source::Checkout,
) -> Result<walk::Walked, Error> {
    tracing::debug!("reading desired state from {}", checkout.dir.display());
    if source_opts.more_paths.is_empty() {
        return walk::walk_with(&checkout.dir, &checkout.kustomize).map_err(|source| Error::Walk {
            path: checkout.dir.clone(),
            source,
        });
    }
    let mut paths = vec![source_opts.path.clone().unwrap_or_default()];
    paths.extend(source_opts.more_paths.iter().cloned());
    source::walk_paths::walk_paths(checkout, &paths)
}

/// The run's chart logins, then those of the units' chart repositories (Flux's
/// HelmRepository `secretRef`), which win.
fn with_unit_logins(
    run: &std::sync::Arc<source::charts::credentials::Credentials>,
    units: std::sync::Mutex<source::charts::credentials::Credentials>,
) -> std::sync::Arc<source::charts::credentials::Credentials> {
    let units = units
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if units.is_empty() {
        return run.clone();
    }
    let mut all = (**run).clone();
    all.extend(&units);
    std::sync::Arc::new(all)
}

/// A release's revision: the chart version its range resolved to.
fn resolved_chart_versions(
    expanded: &mut source::units::Expanded,
    charts: &crate::helm::chart::Charts,
) {
    for unit in &mut expanded.units {
        let Some((repository, name, range)) = &unit.chart else {
            continue;
        };
        let key = crate::helm::chart::remote_key(repository, name, range);
        if let Some(Ok(remote)) = charts.remote.get(&key) {
            unit.revision = Some(format!("chart {name} {}", remote.version));
        }
    }
}

/// Render what [`load`] read, as often as needed (a render with what the cluster said).
pub fn render(loaded: &Loaded, render_opts: &RenderOptions) -> Result<RenderPass, Error> {
    let charts = match loaded.read_charts.get() {
        Some((charts, _)) => charts,
        None => &loaded.walked.charts,
    };
    render_with(loaded, ChartsIn::Shared(charts), render_opts)
}

fn render_with(
    loaded: &Loaded,
    charts: ChartsIn<'_>,
    render_opts: &RenderOptions,
) -> Result<RenderPass, Error> {
    let walked = &loaded.walked;
    let mut render_opts = std::borrow::Cow::Borrowed(render_opts);
    if let Some(time) = loaded.checkout.commit_time {
        render_opts.to_mut().now = time;
    }
    if !walked.namespaces.is_empty() {
        render_opts.to_mut().file_namespaces = std::sync::Arc::new(walked.namespaces.clone());
    }
    let unit_files: Vec<_> = loaded
        .expanded
        .units
        .iter()
        .flat_map(|u| u.files.iter().map(|f| (f.clone(), u.wave)))
        .collect();
    if !unit_files.is_empty() {
        render_opts.to_mut().unit_files = std::sync::Arc::new(unit_files);
    }
    let render_opts = render_opts.as_ref();
    let (rendered, read_late) = render_keeping_renders(loaded, charts, render_opts);
    super::keys::save_cache(&render_opts.keys, &loaded.cache_dir);
    let mut problems = walked.problems.clone();
    problems.extend(read_late);
    match rendered {
        Ok(pass) if problems.is_empty() => Ok(pass),
        Ok(_) => Err(render::RenderError::Invalid(crate::problem::Problems(problems)).into()),
        Err(render::RenderError::Invalid(mut found)) => {
            found.0.extend(problems);
            found.0.sort();
            Err(render::RenderError::Invalid(found).into())
        }
    }
}

/// Render, with the renders of Helm releases kept by earlier runs read before (under the keys
/// the render names) and those it adds written after: the render itself reads no file.
/// Charts known by their stamps only are read whole first unless every release of them is
/// kept; the problems reading them are returned.
fn render_keeping_renders(
    loaded: &Loaded,
    charts: ChartsIn<'_>,
    render_opts: &RenderOptions,
) -> (Result<RenderPass, render::RenderError>, Vec<Problem>) {
    let store = super::render_cache::FileRenderCache::new(&loaded.cache_dir);
    let mut recalled = store.recall_digests(charts.get());
    let releases = render::kept_render_keys(&loaded.walked.files, charts.get(), render_opts);
    let keys: Vec<_> = releases.iter().flat_map(|r| r.keys.clone()).collect();
    let kept = std::sync::Arc::new(store.read(&keys));
    let (charts, read_late) = if kept.serves_all_unread(&releases) {
        // Their digests were recalled while loading.
        let unread = charts.get().unread.len();
        if unread > 0 {
            tracing::debug!("Helm charts: {unread} not read, every release of them kept");
        }
        recalled += unread;
        (charts, Vec::new())
    } else {
        let (charts, problems) = charts.read_whole(loaded);
        recalled += store.recall_digests(charts.get());
        (charts, problems)
    };
    store.keep_digests(charts.get());
    if recalled > 0 {
        tracing::debug!("Helm charts: {recalled} known by their files' stamps, not read again");
    }
    if keys.is_empty() {
        return (
            render_post_rendering(loaded, charts, render_opts),
            read_late,
        );
    }
    let mut opts = render_opts.clone();
    opts.kept_renders = Some(kept.clone());
    let rendered = render_post_rendering(loaded, charts, &opts);
    let added = store.write(&kept.take_added());
    let taken = kept.taken();
    if taken + added > 0 {
        tracing::debug!(
            "Helm releases: {taken} render(s) from the cache, {added} kept for the next run"
        );
    }
    (rendered, read_late)
}

/// Render the charts, build their releases' post-renderers (kustomize, run by the source
/// stage), and render the rest; charts owned by this render are freed once rendered.
fn render_post_rendering(
    loaded: &Loaded,
    charts: ChartsIn<'_>,
    render_opts: &RenderOptions,
) -> Result<RenderPass, render::RenderError> {
    let walked = &loaded.walked;
    let mut charted = render::render_charts(&walked.files, charts.get(), render_opts);
    drop(charts);
    let post_renders = charted.post_renders();
    if !post_renders.is_empty() {
        source::post_render::run_all(post_renders, &loaded.checkout.kustomize);
    }
    render::render_charted(&walked.files, charted, render_opts)
}

/// [`render`] without the cluster: Helm's `lookup` finds nothing, as `helm template`'s does,
/// so no lookup is left to read.
pub fn render_offline(loaded: &Loaded, render_opts: &RenderOptions) -> Result<Rendered, Error> {
    match render(loaded, render_opts)? {
        RenderPass::Rendered(rendered) => Ok(rendered),
        RenderPass::NeedsLookups(_) => Err(offline_lookups()),
    }
}

fn offline_lookups() -> Error {
    Error::Usage("Helm charts asked to look up the cluster in a render without one".into())
}
