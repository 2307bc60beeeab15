//! `HelmChart` objects rendered into plain manifests before anything else is parsed: each
//! chart template's output becomes a file of its own, named
//! `<file> (chart <name>, templates/<template>)` (reported as `<file>:<line> (chart <name>,
//! templates/<template>)`, the line the HelmChart's), that then goes through everything a plain
//! file does (validation, targeting, namespace defaulting — to the release namespace —,
//! duplicates, config hashes). Chart tests (`helm.sh/hook: test`) are left out, as
//! `helm template --skip-tests` does. Pure: the charts were read by the source stage.

use super::chart_values::{encrypted_values, exposing, user_values, UserValues};
use super::kept_parse::ReleaseParse;
use super::left_out::{pre_hook_jobs, without_left_out};
use super::{is_targeted, tend_kinds, waves, RenderOptions};
use crate::helm::chart::{self, Chart, Charts, Release};
use crate::helm::hooks::{self, Hook, When};
use crate::helm::lookup::{self, LookupKey};
use crate::kinds::helm_chart::{HelmChart, DEFAULT_KUBE_VERSION};
use crate::kinds::run::ReleaseOutcome;
use crate::kinds::{TendKind, TendObject};
use crate::object::{Object, Origin};
use crate::problem::Problem;
use crate::sops;
use crate::source::kustomize_annotations;
use crate::source::paths::{leaves_root, normalize};
use crate::source::SourceFile;
use crate::yaml;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// What the charts of a repository render to.
#[derive(Debug, Default)]
pub struct ChartOutput {
    /// One file per rendered template (and per CRD file of `crds/`).
    pub files: Vec<SourceFile>,
    /// The release namespace of each of those files: their namespaced objects without a
    /// namespace land there.
    pub namespaces: HashMap<PathBuf, String>,
    /// The line of the HelmChart that rendered each of those files: where their objects
    /// are reported (`<file>:<line> (chart <name>, <template>)`).
    pub lines: HashMap<PathBuf, usize>,
    /// The files of releases with pre-install hook Jobs, but their `crds/`: their objects
    /// move one wave later (see [`as_tend_hook`]).
    pub after_pre_hooks: HashSet<PathBuf>,
    pub problems: Vec<Problem>,
    /// Releases whose rendered objects used random functions (`randAlphaNum`, `uuidv4`, ...),
    /// with those templates: their values depend on `RenderOptions::helm_seed`.
    pub random: Vec<String>,
    /// What the user should know.
    pub notes: Vec<String>,
    /// Lookups the charts made that `RenderOptions::helm_cluster` did not answer yet.
    pub lookups_missed: BTreeSet<LookupKey>,
    /// Each release rendered, for its HelmChart's status.
    pub releases: Vec<ReleaseOutcome>,
    /// With `RenderOptions::helm_template`: each release as `helm template` prints it.
    pub helm_template: Vec<String>,
    /// The policies a GitOps controller's unit asks of each file's objects (an Argo CD
    /// Application's sync options and `ignoreDifferences`), as its HelmChart carries them.
    pub unit_policies: HashMap<PathBuf, String>,
    /// The post-renders of Flux HelmReleases, for the source stage to build before the
    /// render goes on (`super::post_render`).
    pub post_renders: Vec<super::post_render::Pending>,
    /// Files parsed already by a kept render, or to keep parsed with the render.
    pub kept_parses: super::kept_parse::KeptParses,
}

impl ChartOutput {
    /// Add `other` (the output of a later release) after what this one holds.
    fn extend(&mut self, other: ChartOutput) {
        self.files.extend(other.files);
        self.namespaces.extend(other.namespaces);
        self.lines.extend(other.lines);
        self.after_pre_hooks.extend(other.after_pre_hooks);
        self.problems.extend(other.problems);
        self.random.extend(other.random);
        self.notes.extend(other.notes);
        self.lookups_missed.extend(other.lookups_missed);
        self.releases.extend(other.releases);
        self.helm_template.extend(other.helm_template);
        self.unit_policies.extend(other.unit_policies);
        self.post_renders.extend(other.post_renders);
        self.kept_parses.extend(other.kept_parses);
    }
}

pub fn render_charts(files: &[SourceFile], charts: &Charts, opts: &RenderOptions) -> ChartOutput {
    let releases = releases(files, charts, opts);
    // Releases are independent (each render's seed, clock and lookups live in its own
    // engine's context), so they render on every core, each into its own output, joined in
    // file order.
    let rendered = crate::parallel::map(&releases, crate::parallel::budget(), 1, |release| {
        let (file, doc, helm_chart) = release;
        let mut out = ChartOutput::default();
        render_one(file, doc, helm_chart, charts, opts, &mut out);
        out
    });
    let mut out = ChartOutput::default();
    for part in rendered {
        out.extend(part);
    }
    out
}

/// The targeted HelmChart objects of `files`, in file order.
fn releases<'f>(
    files: &'f [SourceFile],
    charts: &Charts,
    opts: &RenderOptions,
) -> Vec<(&'f SourceFile, yaml::Document, HelmChart)> {
    let mut out = Vec::new();
    for file in files.iter().filter(|f| f.text.contains("HelmChart")) {
        let mut docs = match charts.helm_chart_docs.get(&file.path) {
            Some(docs) => docs.clone(),
            None => {
                kustomize_annotations::parse_source(&file.path, &file.text, file.unit.is_some()).0
            }
        };
        // A SOPS-encrypted HelmChart renders from its decrypted values; a file that does not
        // decrypt is reported by the main pass.
        let _ = super::decrypt::decrypt_file(file, &mut docs, &opts.keys);
        for doc in docs {
            let is_helm_chart = doc.value.get("apiVersion").and_then(|v| v.as_str())
                == Some(crate::API_VERSION)
                && doc.value.get("kind").and_then(|v| v.as_str()) == Some("HelmChart");
            if !is_helm_chart {
                continue;
            }
            // An invalid HelmChart is reported by the main pass, with every other problem.
            let Ok(TendObject::HelmChart(helm_chart)) =
                tend_kinds::parse(&file.path, &doc, TendKind::HelmChart)
            else {
                continue;
            };
            let origin = Origin {
                file: file.path.clone(),
                line: doc.line,
                generated_by: None,
                sealed: Vec::new(),
            };
            let targeted = is_targeted(
                &Object::new(doc.value.clone(), origin),
                opts.cluster.as_deref(),
            );
            let spec_targeted = match (&helm_chart.spec.clusters, &opts.cluster) {
                (Some(clusters), Some(cluster)) => clusters.iter().any(|c| c == cluster),
                (Some(_), None) => false,
                (None, _) => true,
            };
            if targeted && spec_targeted {
                out.push((file, doc, helm_chart));
            }
        }
    }
    out
}

/// A release ready to render: its chart, its release, the user's values, and where its
/// HelmChart says so.
struct ReleaseInput<'c> {
    chart: std::borrow::Cow<'c, Chart>,
    /// The line of `spec.chart` or `spec.repository`.
    chart_line: usize,
    /// For a chart from a repository: the version its range resolved to, and its digest.
    resolved: Option<(String, String)>,
    namespace: String,
    release: Release,
    user: UserValues,
    /// The chart is known by its stamps only (see `Charts::unread`): renders from what was
    /// kept, or not at all.
    unread: bool,
}

/// What a release renders from, or `None` (with the problem in `out`) when it cannot render.
fn release_input<'c>(
    file: &SourceFile,
    doc: &yaml::Document,
    helm_chart: &HelmChart,
    charts: &'c Charts,
    opts: &RenderOptions,
    out: &mut ChartOutput,
) -> Option<ReleaseInput<'c>> {
    let spec = &helm_chart.spec;
    let mut resolved: Option<(String, String)> = None;
    let mut unread = false;
    let (chart, chart_line) = match (&spec.chart, &spec.repository, &spec.name, &spec.version) {
        (Some(chart_dir), None, _, _) => {
            let chart_line = doc.line_of(&["spec".to_string(), "chart".to_string()]);
            let dir = local_chart_dir(file, chart_dir);
            unread = charts.unread.contains_key(&dir);
            let Some(chart) = charts.dirs.get(&dir) else {
                let why = if leaves_root(&dir) {
                    "it is outside the repository (or --path); keep charts inside it"
                } else {
                    "a chart is a directory holding Chart.yaml, inside the repository, relative to this file"
                };
                out.problems.push(Problem::new(
                    &file.path,
                    chart_line,
                    format!(
                        "spec.chart: no chart at {:?} ({why}); check the path",
                        dir.display().to_string()
                    ),
                ));
                return None;
            };
            (chart, chart_line)
        }
        (None, Some(repository), Some(name), Some(version)) => {
            let line = doc.line_of(&["spec".to_string(), "repository".to_string()]);
            match charts
                .remote
                .get(&chart::remote_key(repository, name, version))
            {
                Some(Ok(remote)) => {
                    out.notes.push(format!(
                        "HelmChart {}/{} ({}:{}): chart {name} {} ({}) from {}",
                        helm_chart
                            .metadata
                            .namespace
                            .as_deref()
                            .unwrap_or(&opts.default_namespace),
                        helm_chart.release_name(),
                        file.path.display(),
                        doc.line,
                        remote.version,
                        remote.digest,
                        crate::source::charts::remote::shown(repository),
                    ));
                    resolved = Some((remote.version.clone(), remote.digest.clone()));
                    (&remote.chart, line)
                }
                Some(Err(())) => return None, // the source stage said why
                None => {
                    out.problems.push(Problem::new(
                        &file.path,
                        line,
                        "the chart was not fetched from its repository (charts from repositories are read with the rest of the source); run tend render, diff or apply on the repository",
                    ));
                    return None;
                }
            }
        }
        _ => return None, // refused by the kind's own checks
    };
    let chart = match super::chart_values::with_flux_values_files(helm_chart, chart) {
        Ok(chart) => chart,
        Err(message) => {
            out.problems
                .push(Problem::new(&file.path, chart_line, message));
            return None;
        }
    };
    let namespace = helm_chart
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| opts.default_namespace.clone());
    let release = Release {
        name: helm_chart.release_name().to_string(),
        namespace: namespace.clone(),
        // The HelmChart's own pin first, then the cluster's version.
        kube_version: spec
            .kube_version
            .as_deref()
            .and_then(crate::kinds::helm_chart::normalized_kube_version)
            .or_else(|| opts.helm_cluster.as_ref().map(|c| c.kube_version.clone()))
            .or_else(|| opts.kube_version.clone())
            .unwrap_or_else(|| DEFAULT_KUBE_VERSION.to_string()),
        api_versions: spec.api_versions.clone(),
        seed: opts.helm_seed,
        now: opts.now,
        cluster: opts.helm_cluster.clone(),
        limits: opts.helm_limits,
    };
    let user = user_values(file, doc, spec, charts, opts, &mut out.problems)?;
    Some(ReleaseInput {
        chart,
        chart_line,
        resolved,
        namespace,
        release,
        user,
        unread,
    })
}

/// The chart directory `spec.chart` names, relative to the walked directory.
fn local_chart_dir(file: &SourceFile, chart_dir: &str) -> PathBuf {
    normalize(&file.path.parent().unwrap_or(Path::new("")).join(chart_dir))
}

/// Whether the release reads its chart's files for more than its kept render: values files
/// inside the chart (a Flux HelmRelease's `valuesFiles`) are merged into its values.
fn needs_chart_files(helm_chart: &HelmChart) -> bool {
    let annotations = helm_chart.metadata.annotations.as_ref();
    annotations.is_some_and(|a| a.contains_key(crate::source::units::VALUES_FILES_ANNOTATION))
}

/// The keys under which the renders of the targeted releases of `files` are kept (see
/// [`super::helm_cache`]), for the caller to read them before the render, and whether each
/// release's chart is unread. Releases with a SOPS-encrypted values file are never kept,
/// and are left out without decrypting anything; nor are releases printed as Helm prints
/// them.
pub fn kept_render_keys(
    files: &[SourceFile],
    charts: &Charts,
    opts: &RenderOptions,
) -> Vec<super::helm_cache::ReleaseKeys> {
    releases(files, charts, opts)
        .iter()
        .filter_map(|(file, doc, helm_chart)| {
            let spec = &helm_chart.spec;
            let unread_chart = spec.repository.is_none()
                && spec
                    .chart
                    .as_ref()
                    .is_some_and(|dir| charts.unread.contains_key(&local_chart_dir(file, dir)));
            let never_kept = opts.helm_template
                || encrypted_values(file, spec, charts)
                || (unread_chart && needs_chart_files(helm_chart));
            if never_kept {
                let keys = Vec::new();
                return Some(super::helm_cache::ReleaseKeys { keys, unread_chart });
            }
            let input = release_input(
                file,
                doc,
                helm_chart,
                charts,
                opts,
                &mut ChartOutput::default(),
            )?;
            let ReleaseInput {
                chart,
                user,
                release,
                ..
            } = input;
            let seed = opts.helm_seed_kept.then_some(release.seed);
            let mut keys = Vec::new();
            if user.secrets.is_empty() {
                let key = super::helm_cache::key(&chart, &user.values, &release);
                keys = super::helm_cache::KeptKey::both(&key, seed);
            }
            Some(super::helm_cache::ReleaseKeys { keys, unread_chart })
        })
        .collect()
}

/// Render one release into files of `out`, or its problems, which never quote a decrypted
/// value: a chart's `fail`, its schema's and Go's messages may quote values they refuse.
fn render_one(
    file: &SourceFile,
    doc: &yaml::Document,
    helm_chart: &HelmChart,
    charts: &Charts,
    opts: &RenderOptions,
    out: &mut ChartOutput,
) {
    let before = out.problems.len();
    let secrets = render_release(file, doc, helm_chart, charts, opts, out);
    if !secrets.is_empty() && out.problems.len() > before {
        let forms = sops::leaks::all_forms(&secrets);
        for problem in &mut out.problems[before..] {
            problem.message = crate::text::scrub(&problem.message, &forms);
        }
    }
}

/// Render one release into files of `out`, or its problems; the decrypted values it read.
fn render_release(
    file: &SourceFile,
    doc: &yaml::Document,
    helm_chart: &HelmChart,
    charts: &Charts,
    opts: &RenderOptions,
    out: &mut ChartOutput,
) -> Vec<String> {
    let Some(mut input) = release_input(file, doc, helm_chart, charts, opts, out) else {
        return Vec::new();
    };
    let (rendered, parse) = manifests(&input, opts, out);
    if let Some(cluster) = opts
        .helm_cluster
        .as_deref()
        .filter(|c| !c.lookups.is_empty())
    {
        input.user.secrets.extend(lookup::secret_strings(cluster));
    }
    let secrets = input.user.secrets.clone();
    let manifests = match rendered {
        Ok(manifests) => manifests,
        Err(e) => {
            out.problems
                .push(Problem::new(&file.path, input.chart_line, e.to_string()));
            return secrets;
        }
    };
    let at = ReleaseAt {
        file,
        doc,
        helm_chart,
    };
    if opts.helm_template {
        print_as_helm(&at, &input, &manifests, out);
    }
    if let Some(mut made) = release_files(&at, &input, manifests, out) {
        made.parse = parse;
        add_release(&at, input, made, out);
    }
    secrets
}

/// The release as `helm template <release> <chart> --namespace <ns>` prints it (with
/// `--include-crds` when the HelmChart includes its CRDs), or why it cannot be.
fn print_as_helm(
    at: &ReleaseAt<'_>,
    input: &ReleaseInput<'_>,
    manifests: &[chart::Manifest],
    out: &mut ChartOutput,
) {
    let include_crds = at.helm_chart.spec.include_crds.unwrap_or(true);
    let name = input.chart.name();
    match crate::helm::template_text::helm_template_text(name, manifests, include_crds, false) {
        Ok(text) => out.helm_template.push(text),
        Err(why) => out.problems.push(Problem::new(
            &at.file.path,
            input.chart_line,
            format!("cannot print the release as helm template does: {why}"),
        )),
    }
}

/// Where a release is defined: its HelmChart, in its file.
struct ReleaseAt<'a> {
    file: &'a SourceFile,
    doc: &'a yaml::Document,
    helm_chart: &'a HelmChart,
}

impl ReleaseAt<'_> {
    /// `HelmChart <namespace>/<release> (<file>:<line>)`, what notes about it start with.
    fn described(&self, namespace: &str) -> String {
        format!(
            "HelmChart {namespace}/{} ({}:{})",
            self.helm_chart.release_name(),
            self.file.path.display(),
            self.doc.line
        )
    }
}

/// The release's manifests: kept from an earlier run (with their files' documents), or
/// rendered (and kept when they may be; renders of releases whose values came from SOPS
/// files never are).
fn manifests(
    input: &ReleaseInput<'_>,
    opts: &RenderOptions,
    out: &mut ChartOutput,
) -> (
    Result<Vec<chart::Manifest>, chart::ChartError>,
    ReleaseParse,
) {
    let ReleaseInput {
        chart,
        release,
        user,
        ..
    } = input;
    // Printed as Helm prints it, a release renders afresh: a kept render blanks chart tests
    // that draw random names, which `helm template` prints.
    let cache = opts
        .kept_renders
        .as_ref()
        .filter(|_| user.secrets.is_empty() && !opts.helm_template);
    let key = cache.map(|_| super::helm_cache::key(chart, &user.values, release));
    let seed = opts.helm_seed_kept.then_some(release.seed);
    let kept = cache.zip(key.as_ref()).and_then(|(c, key)| {
        super::helm_cache::KeptKey::both(key, seed)
            .into_iter()
            .find_map(|k| c.get(&k.key))
    });
    if let Some(kept) = kept {
        return (Ok(kept.manifests), ReleaseParse::Have(kept.parsed));
    }
    if input.unread {
        // The run reads a chart whole unless all its releases are kept: never an empty render.
        let not_read = chart::ChartError::Values {
            chart: chart.name().to_string(),
            message: "its files were not read before it rendered (a bug in tend); run again"
                .to_string(),
        };
        return (Err(not_read), ReleaseParse::Neither);
    }
    let (rendered, depended) = chart::render_reporting(chart, &user.values, release);
    out.lookups_missed
        .extend(depended.lookups_missed.iter().cloned());
    if let (Some(cache), Some(key), Ok(manifests)) = (cache, &key, &rendered) {
        let left_out = |m: &chart::Manifest| {
            let mut notes = Vec::new();
            let text = without_left_out(&m.text, &m.template, &mut notes);
            (text, !notes.is_empty())
        };
        let kept = super::helm_cache::keepable(manifests, &depended, left_out, (key, seed));
        if let Some((key, kept)) = kept {
            let parse = ReleaseParse::Keep(key.key.clone());
            cache.put(key, &kept);
            return (rendered, parse);
        }
    }
    (rendered, ReleaseParse::Neither)
}

/// What a release's manifests make: `(template, text, is a CRD)` per file, the templates
/// that drew random values, and whether it has pre-install hook Jobs.
struct ReleaseFiles {
    files: Vec<(String, String, bool)>,
    random: Vec<String>,
    has_pre_hooks: bool,
    parse: ReleaseParse,
}

/// The release's files, without what tend leaves out (noted), or `None` when values of
/// secrets reach a file tend would print (a problem).
fn release_files(
    at: &ReleaseAt<'_>,
    input: &ReleaseInput<'_>,
    manifests: Vec<chart::Manifest>,
    out: &mut ChartOutput,
) -> Option<ReleaseFiles> {
    let forms = sops::leaks::all_forms(&input.user.secrets);
    let mut made = ReleaseFiles {
        files: Vec::new(),
        random: Vec::new(),
        has_pre_hooks: false,
        parse: ReleaseParse::Neither,
    };
    let mut exposed = Vec::new();
    for manifest in manifests {
        if manifest.crd && !at.helm_chart.spec.include_crds.unwrap_or(true) {
            continue;
        }
        let text = if manifest.crd {
            manifest.text
        } else {
            let mut left_out = Vec::new();
            let text = without_left_out(&manifest.text, &manifest.template, &mut left_out);
            made.has_pre_hooks |= pre_hook_jobs(&text);
            let described = at.described(&input.namespace);
            out.notes
                .extend(left_out.into_iter().map(|n| format!("{described}: {n}")));
            text
        };
        // Tests are left out, so their random names don't matter.
        if manifest.random && !text.trim().is_empty() {
            made.random.push(manifest.template.clone());
        }
        // A chart's `crds/` files are never templated (Helm copies them as they are), so no
        // value can reach them: a secret value found there is a coincidence (grafana's
        // looked-up admin user "admin" in kube-prometheus-stack's CRD descriptions).
        if !forms.is_empty() && !manifest.crd {
            exposed.extend(exposing(&text, &forms, &manifest.template));
        }
        made.files.push((manifest.template, text, manifest.crd));
    }
    if exposed.is_empty() {
        return Some(made);
    }
    out.problems.push(Problem::new(
        &at.file.path,
        at.doc
            .line_of(&["spec".to_string(), "valuesFiles".to_string()]),
        format!(
            "values from a SOPS-encrypted values file or from a Secret the chart looked up reach {}, which tend would print in plain text (only Secret data is masked); use such values in Secrets only",
            exposed.join(", ")
        ),
    ));
    None
}

/// Add the release's files (those that hold anything) to `out`, with its outcome.
fn add_release(
    at: &ReleaseAt<'_>,
    input: ReleaseInput<'_>,
    made: ReleaseFiles,
    out: &mut ChartOutput,
) {
    let ReleaseInput {
        chart,
        resolved,
        namespace,
        release,
        user,
        ..
    } = input;
    let name = chart.name();
    let mut outcome = release_outcome(at, &chart, resolved, &namespace, &release);
    let first = out.files.len();
    let mut templates = Vec::new();
    let mut parse = made.parse;
    for (template, text, crd) in made.files {
        // A template that rendered nothing (a feature turned off) holds no object: not
        // parsed at all.
        if text.trim().is_empty() {
            continue;
        }
        let path = PathBuf::from(format!(
            "{} (chart {name}, {template})",
            at.file.path.display()
        ));
        outcome.files.insert(path.clone());
        out.namespaces.insert(path.clone(), namespace.clone());
        out.lines.insert(path.clone(), at.doc.line);
        let policies = at
            .doc
            .value
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(crate::source::units::POLICIES_ANNOTATION))
            .and_then(serde_json::Value::as_str);
        if let Some(policies) = policies {
            out.unit_policies.insert(path.clone(), policies.to_string());
        }
        if made.has_pre_hooks && !crd {
            out.after_pre_hooks.insert(path.clone());
        }
        if !crd {
            templates.push(path.clone());
        }
        out.kept_parses.note(&mut parse, &template, &path, &text);
        out.files.push(SourceFile {
            path,
            text,
            unit: None,
        });
    }
    out.releases.push(outcome);
    let post_renders = out.post_renders.len();
    post_render(at, &user, (first, &templates), out);
    if out.post_renders.len() > post_renders {
        let files = out.files[first..].iter().map(|f| f.path.as_path());
        out.kept_parses.forget(files);
    }
    if !made.random.is_empty() {
        let described = at.described(&namespace);
        out.random
            .push(format!("{described}: {}", made.random.join(", ")));
    }
}

/// A Flux HelmRelease's post-renderers over the release's templates (`templates`, the
/// files `out` holds from `first` on that are not CRDs), left for the source stage to run.
fn post_render(
    at: &ReleaseAt<'_>,
    user: &UserValues,
    (first, templates): (usize, &[PathBuf]),
    out: &mut ChartOutput,
) {
    let files: Vec<&SourceFile> = out.files[first..]
        .iter()
        .filter(|f| templates.contains(&f.path))
        .collect();
    let sealed = !user.secrets.is_empty();
    match super::post_render::of_release(at.doc, &at.file.path, sealed, &files) {
        Ok(Some(pending)) => out.post_renders.push(pending),
        Ok(None) => {}
        Err(problem) => out.problems.push(problem),
    }
}

/// The release as its HelmChart's status reports it (its files added by the caller).
fn release_outcome(
    at: &ReleaseAt<'_>,
    chart: &Chart,
    resolved: Option<(String, String)>,
    namespace: &str,
    release: &Release,
) -> ReleaseOutcome {
    let metadata_text = |key: &str| match chart.metadata.get(key) {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let (version, digest) = match resolved {
        Some((version, digest)) => (version, Some(digest)),
        None => (metadata_text("version").unwrap_or_default(), None),
    };
    ReleaseOutcome {
        helm_chart: crate::object::ObjectKey {
            group: crate::GROUP.to_string(),
            kind: "HelmChart".into(),
            namespace: Some(namespace.to_string()),
            name: at.helm_chart.metadata.name.clone().unwrap_or_default(),
        },
        chart: chart.name().to_string(),
        version,
        app_version: metadata_text("appVersion"),
        digest,
        kube_version: release.kube_version.clone(),
        files: Default::default(),
        objects: 0,
    }
}

/// Problems found in what a chart rendered, moved to the line of their HelmChart (their
/// file names the chart and template); the line in the rendered text goes into the message.
pub fn at_helm_chart_lines(problems: &mut [Problem], lines: &HashMap<PathBuf, usize>) {
    for problem in problems {
        if let Some(&line) = lines.get(&problem.file) {
            if problem.line != line {
                problem.message = format!(
                    "{} (at line {} of what the template rendered)",
                    problem.message, problem.line
                );
            }
            problem.line = line;
        }
    }
}

/// tend's prune policy (`plan`'s `PRUNE_ANNOTATION`, which render may not import).
const PRUNE_ANNOTATION: &str = "tend.dev/prune";

/// A rendered object with Helm's annotations, given tend's. Hooks (README "Waves and hooks"): Jobs and Pods of
/// `pre-install`/`pre-upgrade` become `pre-apply` hooks, of `post-install`/`post-upgrade`
/// `post-apply` hooks (ordered by `helm.sh/hook-weight`, deleted on success when the delete
/// policy says `hook-succeeded`). Helm runs pre hooks before the release's objects but after
/// the objects the hooks use (the ServiceAccount a hook Job runs as, itself a pre hook): so
/// in a release with pre hooks (`after_pre_hooks`), the pre hooks and every object but those
/// (and but Namespaces and CRDs) move one wave later, to run after the wave that creates what they need (and the
/// repository's Namespaces). `helm.sh/resource-policy: keep` (never deleted by an upgrade
/// or uninstall) becomes `tend.dev/prune: disabled`. Helm's annotations stay.
pub fn as_tend_hook(doc: &mut yaml::Document, after_pre_hooks: bool) {
    let value = &doc.value;
    let later = (waves::wave_of(value) + 1).to_string();
    let mut changes: Vec<(&str, String)> = Vec::new();
    match hooks::classify(value) {
        // A chart that asks for tend's (or Argo CD's) hook itself gets it as written.
        Hook::Run { .. } if waves::hook_of(value).is_some() => {}
        Hook::Run {
            when,
            delete_on_success,
            ..
        } => {
            let phase = match when {
                When::Before => waves::Phase::PreApply,
                When::After => waves::Phase::PostApply,
            };
            changes.push((waves::HOOK_ANNOTATION, phase.name().to_string()));
            if delete_on_success {
                changes.push((waves::HOOK_DELETE_ANNOTATION, waves::ON_SUCCESS.to_string()));
            }
            if when == When::Before && after_pre_hooks {
                changes.push((waves::WAVE_ANNOTATION, later));
            }
        }
        Hook::Apply { when: When::Before } | Hook::LeftOut(_) => {}
        Hook::None | Hook::Apply { when: When::After } => {
            // Namespaces and CRDs a chart renders are what the hooks may need too.
            let kind = value.get("kind").and_then(|k| k.as_str());
            let foundation = matches!(kind, Some("Namespace" | "CustomResourceDefinition"));
            if after_pre_hooks && !foundation {
                changes.push((waves::WAVE_ANNOTATION, later));
            }
        }
    }
    let annotation =
        |key: &str| value.pointer(&format!("/metadata/annotations/{}", key.replace('/', "~1")));
    let keep = annotation(hooks::RESOURCE_POLICY)
        .and_then(|v| v.as_str())
        .is_some_and(|p| p.trim() == "keep");
    if keep && annotation(PRUNE_ANNOTATION).is_none() {
        changes.push((PRUNE_ANNOTATION, "disabled".to_string()));
    }
    if changes.is_empty() {
        return;
    }
    let mut value = doc.value.clone();
    let Some(serde_json::Value::Object(metadata)) = value.pointer_mut("/metadata") else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    let Some(annotations) = annotations.as_object_mut() else {
        return;
    };
    for (key, text) in changes {
        annotations.insert(key.to_string(), serde_json::Value::String(text));
    }
    doc.set_value(value);
}
