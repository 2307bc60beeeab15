//! Render: from YAML files to the exact set of desired objects. Pure: no client, no I/O.
//!
//! Steps, in order: parse every document ([`crate::yaml`]); check its shape ([`validate`]) and, for
//! tend's kinds, its typed spec ([`tend_kinds`]); apply cluster targeting; default
//! namespaces; expand tend's kinds (each kind's [`crate::kinds::Kind::expand`]); reject
//! duplicates; annotate workloads with their config hash ([`config_hash`]); sort into apply
//! order ([`builtin::Stage`]). Every problem of every file is collected before anything is
//! returned, so one run reports them all.
//!
//! That is all `tend render` needs. `diff` and `apply` then read the cluster's view once and
//! [`complete`] the rendered set with it (CopyRule copies, ownerReferences, config hashes of
//! live config), without parsing anything again.

pub mod builtin;
mod chart_values;
mod complete;
pub mod config_hash;
mod decrypt;
pub mod file_modes;
pub mod helm_cache;
mod helm_charts;
pub mod kept_parse;
mod left_out;
mod options;
pub mod policy;
mod post_render;
pub mod tend_kinds;
pub mod validate;
pub mod waves;

pub use complete::complete;
pub use helm_charts::kept_render_keys;
pub use options::RenderOptions;

use options::is_targeted;

use crate::helm::chart::Charts;
use crate::kinds::registry_mirror::HostPorts;
use crate::kinds::run::CopyOutcome;
use crate::kinds::{TendKind, TendObject};
use crate::object::{split_api_version, Object, ObjectKey, Origin};
use crate::problem::{Problem, Problems};
use crate::sops::Keys;
use crate::source::kustomize_annotations;
use crate::source::SourceFile;
use crate::yaml;
use helm_charts::ChartOutput;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

/// The desired state of one run.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// In apply order: by stage, then group, kind, namespace, name.
    pub objects: Vec<Object>,
    /// Things the user should know that are not errors (e.g. offline limitations).
    pub notes: Vec<String>,
    pub files: usize,
    pub documents: usize,
    /// Documents left out because they target other clusters.
    pub skipped_by_targeting: usize,
    /// tend's own objects as parsed (namespace defaulted), with where they were defined:
    /// what the cluster's view is read for and what completion expands.
    pub tend: Vec<(TendObject, Origin)>,
    /// Per CopyRule: copies, targets, conflicts (once completed).
    pub copy_outcomes: Vec<CopyOutcome>,
    /// ConfigMaps/Secrets referenced by workloads but found neither in the desired set nor
    /// (once completed) in the cluster.
    pub missing_config: BTreeSet<ObjectKey>,
    /// Helm releases whose objects used random functions, with those templates: what they
    /// render depends on the seed (`RenderOptions::helm_seed`).
    pub random_charts: Vec<String>,
    /// Each HelmChart's release, for its status.
    pub releases: Vec<crate::kinds::run::ReleaseOutcome>,
    /// With `RenderOptions::helm_template`: each targeted release as `helm template` prints
    /// it (with `--include-crds` when the HelmChart includes its CRDs), in file order.
    pub helm_template: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("the desired state has {count} problem{s}; nothing was rendered:\n{problems}", count = .0 .0.len(), s = if .0 .0.len() == 1 { "" } else { "s" }, problems = .0)]
    Invalid(Problems),
}

/// One render pass over the whole desired state: the desired objects, or the lookups of
/// Helm charts that must be read from the cluster first (then the caller renders again with
/// their answers in `RenderOptions::helm_cluster`; what came out without them may be wrong,
/// so nothing of it is kept).
#[derive(Debug)]
pub enum RenderPass {
    Rendered(Rendered),
    NeedsLookups(BTreeSet<crate::helm::lookup::LookupKey>),
}

/// Render `files` into desired objects, or report every problem found.
pub fn render(files: &[SourceFile], opts: &RenderOptions) -> Result<Rendered, RenderError> {
    render_files(files, ChartOutput::default(), opts)
}

/// The first half of [`render`] with the repository's Helm charts for its `HelmChart`
/// objects: the charts rendered, each template's output a file; [`render_charted`] goes on
/// once the caller has built their post-renders ([`Charted::post_renders`]).
pub fn render_charts(files: &[SourceFile], charts: &Charts, opts: &RenderOptions) -> Charted {
    Charted(helm_charts::render_charts(files, charts, opts))
}

/// What the charts rendered, their releases' post-renderers (a Flux HelmRelease's
/// kustomize patches, a process the render does not run) still to build.
#[derive(Debug)]
pub struct Charted(ChartOutput);

impl Charted {
    /// The post-renders to build (`source::post_render::run_all`) before
    /// [`render_charted`]; none when the charts must look up the cluster first.
    pub fn post_renders(&mut self) -> Vec<&mut crate::source::post_render::PostRender> {
        if !self.0.lookups_missed.is_empty() {
            return Vec::new();
        }
        self.0
            .post_renders
            .iter_mut()
            .map(|p| &mut p.build)
            .collect()
    }
}

/// The rest of the render: what the charts made (post-rendered) goes through everything a
/// plain file does.
pub fn render_charted(
    files: &[SourceFile],
    charted: Charted,
    opts: &RenderOptions,
) -> Result<RenderPass, RenderError> {
    let mut charted = charted.0;
    if !charted.lookups_missed.is_empty() {
        return Ok(RenderPass::NeedsLookups(charted.lookups_missed));
    }
    // The charts' parse trees are kept on this thread for a pass that renders again with
    // the cluster's answers; this one is final, and its output is parsed next.
    crate::helm::template::forget_parsed();
    for pending in std::mem::take(&mut charted.post_renders) {
        if let Err(problem) = post_render::finish(pending, &mut charted.files) {
            charted.problems.push(problem);
        }
    }
    render_files(files, charted, opts).map(RenderPass::Rendered)
}

/// Render plain files and what the charts made of theirs: parse and check every document,
/// then make objects of them, then check the set and finish it.
fn render_files(
    files: &[SourceFile],
    mut charted: ChartOutput,
    opts: &RenderOptions,
) -> Result<Rendered, RenderError> {
    let file_count = files.len();
    // The charts' files are moved, not copied: a big chart's CRDs are megabytes. Their texts
    // go to the parse, which frees each once its documents are read.
    let mut chart_texts = Vec::new();
    let all_files: Option<Vec<SourceFile>> = (!charted.files.is_empty()).then(|| {
        let mut chart_files = std::mem::take(&mut charted.files);
        chart_texts = chart_files
            .iter_mut()
            .map(|f| std::mem::take(&mut f.text))
            .collect();
        files.iter().cloned().chain(chart_files).collect()
    });
    let mut kept_parses = std::mem::take(&mut charted.kept_parses);
    if !kept_parses.have.is_empty() {
        tracing::debug!(
            "Helm releases: {} file(s) of kept renders taken as parsed",
            kept_parses.have.len()
        );
    }
    let files = all_files.as_deref().unwrap_or(files);
    let texts = Texts {
        owned_from: file_count,
        owned: chart_texts,
    };
    let parsed = parse_all(files, texts, &opts.keys, &mut kept_parses);
    let documents = hand_over(files, parsed, &kept_parses, opts.kept_renders.as_deref());
    let parsed = parse_and_check(files, documents, &charted);
    let made = make_objects(parsed, &charted, opts);
    finish(made, charted, file_count)
}

/// Every document parsed, decrypted and checked, before any object is made of it.
struct Parsed<'f> {
    /// The documents without problems, with their files, in file order.
    checked: Vec<(&'f SourceFile, yaml::Document)>,
    problems: Vec<Problem>,
    /// Decrypted values of documents dropped on a problem (masked in every problem).
    decrypted: Vec<String>,
    /// Scopes of the kinds CRDs in the repository define: for namespace defaulting.
    repo_scopes: HashMap<(String, String), bool>,
    documents: usize,
}

#[allow(clippy::type_complexity)]
fn parse_and_check<'f>(
    files: &'f [SourceFile],
    documents: Vec<(Vec<(yaml::Document, Vec<Problem>)>, Vec<Problem>)>,
    charted: &ChartOutput,
) -> Parsed<'f> {
    let mut parsed = Parsed {
        checked: Vec::new(),
        problems: charted.problems.clone(),
        decrypted: Vec::new(),
        repo_scopes: HashMap::new(),
        documents: 0,
    };
    for (file, (docs, parse_problems)) in files.iter().zip(documents) {
        parsed.problems.extend(parse_problems);
        let from_chart = charted.namespaces.contains_key(&file.path);
        let after_pre_hooks = charted.after_pre_hooks.contains(&file.path);
        for (mut doc, doc_problems) in docs {
            parsed.documents += 1;
            if !doc_problems.is_empty() {
                // Masked in the problems, which may quote a value they refuse.
                parsed
                    .decrypted
                    .extend(crate::object::secret_values(&doc.value, &doc.sealed));
                parsed.problems.extend(doc_problems);
                continue;
            }
            if from_chart || crate::source::units::made_by_argo(&file.path) {
                helm_charts::as_tend_hook(&mut doc, after_pre_hooks);
                if let Some(policies) = charted.unit_policies.get(&file.path) {
                    crate::source::units::apply_encoded_policies(&mut doc.value, policies);
                }
            }
            if let Some((group, kind, namespaced)) = crd_scope(&doc.value) {
                parsed.repo_scopes.insert((group, kind), namespaced);
            }
            parsed.checked.push((file, doc));
        }
    }
    parsed
}

/// The objects of the checked documents: targeted, namespaces defaulted, tend's kinds
/// parsed and expanded.
struct Made {
    objects: Vec<Object>,
    tend: Vec<(TendObject, Origin)>,
    notes: Vec<String>,
    skipped_by_targeting: usize,
    problems: Vec<Problem>,
    decrypted: Vec<String>,
    documents: usize,
}

fn make_objects(parsed: Parsed<'_>, charted: &ChartOutput, opts: &RenderOptions) -> Made {
    let Parsed {
        checked,
        problems,
        decrypted,
        repo_scopes,
        documents,
    } = parsed;
    let mut made = Made {
        objects: Vec::new(),
        tend: Vec::new(),
        notes: charted.notes.clone(),
        skipped_by_targeting: 0,
        problems,
        decrypted,
        documents,
    };
    let mut host_ports = HostPorts::default();
    let mut controller_objects = 0;
    for (file, mut doc) in checked {
        let origin = Origin {
            file: file.path.clone(),
            // What a chart rendered is at its HelmChart's line, see
            // README "HelmChart — a Helm chart rendered by tend itself".
            line: charted.lines.get(&file.path).copied().unwrap_or(doc.line),
            generated_by: None,
            sealed: doc.sealed.clone(),
        };
        let mut value = object_value(&mut doc);
        let unit_wave = waves::unit_wave(&opts.unit_files, &file.path);
        if let Some(wave) = unit_wave.filter(|w| *w != 0) {
            waves::set_unit_wave(&mut value, wave);
        }
        let object = Object::new(value, origin);
        let targeted = is_targeted(&object, opts.cluster.as_deref());
        // Nothing would read a controller's objects: tend expanded them instead.
        if !opts.apply_controller_objects
            && crate::source::units::is_controller_object(object.api_version(), object.kind())
        {
            controller_objects += 1;
            continue;
        }
        if object.group() == crate::GROUP {
            add_tend_object(
                &mut made,
                object,
                targeted,
                (file, &doc),
                &mut host_ports,
                opts,
            );
        } else if !targeted {
            made.skipped_by_targeting += 1;
        } else {
            let default_namespace = default_namespace(&file.path, charted, opts);
            let from_tool = unit_wave.is_some() || charted.namespaces.contains_key(&file.path);
            let scopes = (&repo_scopes, from_tool);
            add_object(&mut made, object, &doc, scopes, default_namespace);
        }
    }
    if controller_objects > 0 {
        made.notes.push(format!(
            "{} of Flux or Argo CD not applied: tend expands them into what their controllers would apply (--apply-controller-objects applies them as they are)",
            crate::text::count(controller_objects, "object")
        ));
    }
    made
}

/// The value of the object a document makes: tend's kinds are parsed again from the
/// document, so theirs is a copy; other objects take it (a big chart's CRDs are megabytes).
fn object_value(doc: &mut yaml::Document) -> serde_json::Value {
    let api_version = doc.value.get("apiVersion").and_then(|v| v.as_str());
    if api_version.map(|v| split_api_version(v).0) == Some(crate::GROUP) {
        doc.value.clone()
    } else {
        std::mem::take(&mut doc.value)
    }
}

/// The namespace of a file's namespaced objects without one: its release's, its unit's
/// (an Argo CD Application's destination), else `--namespace`.
fn default_namespace<'a>(
    file: &std::path::Path,
    charted: &'a ChartOutput,
    opts: &'a RenderOptions,
) -> &'a str {
    charted
        .namespaces
        .get(file)
        .or_else(|| opts.file_namespaces.get(file))
        .map_or(opts.default_namespace.as_str(), String::as_str)
}

/// A tend kind: parsed, targeted by its annotation and its `spec.clusters`, expanded.
fn add_tend_object(
    made: &mut Made,
    mut object: Object,
    targeted: bool,
    (file, doc): (&SourceFile, &yaml::Document),
    host_ports: &mut HostPorts,
    opts: &RenderOptions,
) {
    let Some(kind) = TendKind::from_kind(object.kind()) else {
        return; // reported by validate
    };
    let mut tend_object = match tend_kinds::parse(&file.path, doc, kind) {
        Ok(o) => o,
        Err(p) => {
            made.decrypted
                .extend(crate::object::secret_values(&doc.value, &doc.sealed));
            made.problems.extend(p);
            return;
        }
    };
    // A Fleet describes the run (`--fleet`), not a cluster: checked, never applied.
    if matches!(tend_object, TendObject::Fleet(_)) {
        return;
    }
    let spec_targeted = match (tend_object.clusters(), &opts.cluster) {
        (Some(clusters), Some(cluster)) => clusters.iter().any(|c| c == cluster),
        (Some(_), None) => false,
        (None, _) => true,
    };
    if !(targeted && spec_targeted) {
        made.skipped_by_targeting += 1;
        return;
    }
    tend_object.default_namespace(&opts.default_namespace);
    // A release a controller's unit became: rendered by the chart pass, not applied.
    if object
        .annotation(crate::source::units::EXPANDED_ANNOTATION)
        .is_some()
    {
        return;
    }
    // The uid is the cluster's: never part of desired state, nor an owner's uid.
    tend_object.meta_mut().uid = None;
    let origin = object.origin.clone();
    if let TendObject::RegistryMirror(m) = &tend_object {
        if let Err(message) = host_ports.claim(m, &origin) {
            let line = doc.line_of(&["spec".to_string(), "hostPort".to_string()]);
            made.problems.push(Problem::new(&file.path, line, message));
        }
    }
    made.objects
        .extend(tend_kinds::expand(&tend_object, &origin, &mut made.notes));
    object.value = tend_object.to_value();
    made.objects.push(object);
    made.tend.push((tend_object, origin));
}

/// A plain object, its namespace defaulted or refused by its kind's scope.
fn add_object(
    made: &mut Made,
    mut object: Object,
    doc: &yaml::Document,
    (repo_scopes, from_unit): (&HashMap<(String, String), bool>, bool),
    default_namespace: &str,
) {
    let (group, version) = split_api_version(object.api_version());
    let namespaced = builtin::builtin_scope(group, version, object.kind()).or_else(|| {
        repo_scopes
            .get(&(group.to_string(), object.kind().to_string()))
            .copied()
    });
    if namespaced == Some(true) && object.namespace().is_none() {
        object.set_namespace(default_namespace);
    }
    if namespaced == Some(false) && from_unit {
        // A controller's client ignores it (controller-runtime's NamespaceIfScoped), and
        // kustomize's namespace transformer sets it on kinds it does not know; Helm's client
        // sends it and kube-apiserver drops it.
        if let Some(meta) = object
            .value
            .get_mut("metadata")
            .and_then(|m| m.as_object_mut())
        {
            meta.remove("namespace");
        }
    }
    if namespaced == Some(false) && object.namespace().is_some() {
        made.decrypted
            .extend(crate::object::secret_values(&object.value, &doc.sealed));
        made.problems.push(Problem::new(
            &object.origin.file,
            doc.line_of(&["metadata".to_string(), "namespace".to_string()]),
            format!(
                "{} is cluster-scoped (its CustomResourceDefinition says so) and cannot have metadata.namespace; remove it",
                object.kind()
            ),
        ));
        return;
    }
    made.objects.push(object);
}

/// Every problem at once (decrypted values masked), or the set with its config hashes, in
/// apply order.
fn finish(made: Made, charted: ChartOutput, file_count: usize) -> Result<Rendered, RenderError> {
    let Made {
        mut objects,
        tend,
        mut notes,
        skipped_by_targeting,
        mut problems,
        mut decrypted,
        documents,
    } = made;
    problems.extend(duplicates(&objects));
    if !problems.is_empty() {
        // Only now: gathering the values of the objects kept costs as much as the rest.
        decrypted.extend(
            objects
                .iter()
                .flat_map(|o| crate::object::secret_values(&o.value, &o.origin.sealed)),
        );
        for problem in &mut problems {
            problem.message = crate::text::scrub(&problem.message, &decrypted);
        }
        helm_charts::at_helm_chart_lines(&mut problems, &charted.lines);
        problems.sort();
        problems.dedup();
        return Err(RenderError::Invalid(Problems(problems)));
    }
    let (hash_notes, missing_config) =
        config_hash::annotate_reporting_missing(&mut objects, &BTreeMap::new());
    notes.extend(hash_notes);
    sort_for_apply(&mut objects);
    let mut releases = charted.releases;
    for release in &mut releases {
        release.objects = objects
            .iter()
            .filter(|o| release.files.contains(&o.origin.file))
            .count();
    }
    Ok(Rendered {
        objects,
        notes,
        files: file_count,
        documents,
        skipped_by_targeting,
        tend,
        copy_outcomes: Vec::new(),
        missing_config,
        random_charts: charted.random,
        releases,
        helm_template: charted.helm_template,
    })
}

/// Same group/kind/namespace/name twice, after targeting, defaulting and expansion.
fn duplicates(objects: &[Object]) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut seen: HashMap<ObjectKey, &Origin> = HashMap::new();
    for object in objects {
        let key = object.key();
        if let Some(first) = seen.get(&key) {
            problems.push(Problem::new(
                &object.origin.file,
                object.origin.line,
                format!(
                    "duplicate object {key}{}: first defined at {first}; remove one of them",
                    object
                        .origin
                        .generated_by
                        .as_ref()
                        .map(|by| format!(" (generated by {})", by.kind_and_name()))
                        .unwrap_or_default(),
                ),
            ));
        } else {
            seen.insert(key, &object.origin);
        }
    }
    problems
}

/// Below this much text, [`parse_all`] parses on the calling thread.
const PARALLEL_PARSE_MIN_BYTES: usize = 64 * 1024;

/// Files a thread of [`parse_all`] takes at a time.
const PARSE_BATCH: usize = 16;

/// A file's documents, each with its problems; the file's problems; and its documents as
/// parsed, when they are to be kept with a Helm render (see [`kept_parse`]).
type ParsedFile = (
    Vec<(yaml::Document, Vec<Problem>)>,
    Vec<Problem>,
    Option<String>,
);

/// Each file's documents, parsed (or as a kept Helm render brought them), decrypted where
/// SOPS-encrypted, and checked (octal file modes fixed, shape validated), in file order.
/// Files are independent, so this runs on every core (the bulk of rendering a
/// 10,000-object site); the result is the same as one after the other.
/// The texts of files the render owns (the charts' output, `owned_from` on in file order),
/// handed to [`parse_all`] to be freed once parsed; the others are the files' own.
struct Texts {
    owned_from: usize,
    owned: Vec<String>,
}

/// One file for [`parse_all`]: its documents as a kept render brought them, its text when
/// the render owns it, and whether a chart rendered it.
type ParseInput<'f> = (
    &'f SourceFile,
    Mutex<Option<Vec<yaml::Document>>>,
    Mutex<Option<String>>,
    bool,
);

fn parse_all(
    files: &[SourceFile],
    texts: Texts,
    keys: &Keys,
    kept: &mut kept_parse::KeptParses,
) -> Vec<ParsedFile> {
    let mut owned = texts.owned.into_iter();
    // The files from `owned_from` on are what charts rendered.
    let inputs: Vec<ParseInput<'_>> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let charted = i >= texts.owned_from;
            let text = charted.then(|| owned.next()).flatten();
            let have = Mutex::new(kept.have.remove(&f.path));
            (f, have, Mutex::new(text), charted)
        })
        .collect();
    // Threads pay off on enough text only: one costs more memory (its stack, its allocator
    // pages) than parsing a chart's output takes, and about the time.
    let bytes: usize = inputs
        .iter()
        .map(|(file, have, text, _)| {
            let parsed = have.lock().is_ok_and(|have| have.is_some());
            let owned = text
                .lock()
                .map_or(0, |text| text.as_ref().map_or(0, String::len));
            if parsed {
                0
            } else {
                owned + file.text.len()
            }
        })
        .sum();
    let keep = &kept.keep;
    let parse = |(file, have, text, charted): &ParseInput<'_>| {
        let have = have.lock().ok().and_then(|mut have| have.take());
        let owned = text.lock().ok().and_then(|mut text| text.take());
        let text = owned.as_deref().unwrap_or(&file.text);
        let parsed_before = have.is_some();
        let (mut docs, mut problems) = match have {
            Some(docs) => (docs, Vec::new()),
            None if *charted => yaml::parse_rendered(&file.path, text),
            None => kustomize_annotations::parse_source(&file.path, text, file.unit.is_some()),
        };
        let to_keep = (!parsed_before && problems.is_empty() && keep.contains_key(&file.path))
            .then(|| kept_parse::as_kept(&docs, text))
            .flatten();
        // Each document has its own text: the file's is not needed again.
        drop(owned);
        problems.extend(decrypt::decrypt_file(file, &mut docs, keys));
        (checked(file, docs, *charted), problems, to_keep)
    };
    let threads = if bytes < PARALLEL_PARSE_MIN_BYTES {
        1
    } else {
        crate::parallel::budget()
    };
    crate::parallel::map(&inputs, threads, PARSE_BATCH, parse)
}

/// A file's documents with octal file modes fixed, generated hook names given, and each
/// checked; their text dropped where nothing reads it again.
fn checked(
    file: &SourceFile,
    docs: Vec<yaml::Document>,
    charted: bool,
) -> Vec<(yaml::Document, Vec<Problem>)> {
    docs.into_iter()
        .map(|mut doc| {
            file_modes::fix_octal_modes(&mut doc.value);
            waves::name_generated_hook(&mut doc.value);
            if file.unit.is_some() || charted {
                builtin::clear_namespace_if_cluster_scoped(&mut doc.value);
            }
            let problems = validate::check_document(&file.path, &doc);
            if !text_read_later(&doc.value) {
                // A big chart's CRDs are megabytes of text, alive with their values until
                // objects are made.
                doc.text = String::new();
            }
            (doc, problems)
        })
        .collect()
}

/// Whether the render reads a checked document's text again once it is parsed: tend's
/// kinds are parsed from it (typed, with lines), and a namespace set on a kind that turns
/// out cluster-scoped is reported at its line. Other documents' lines are known by then.
fn text_read_later(value: &Value) -> bool {
    let api_version = value.get("apiVersion").and_then(|v| v.as_str());
    api_version.is_some_and(|v| split_api_version(v).0 == crate::GROUP)
        || value.pointer("/metadata/namespace").is_some()
}

/// The documents and problems of each file, with the documents of those to keep handed to
/// the render being kept (`kept_renders`).
#[allow(clippy::type_complexity)]
fn hand_over(
    files: &[SourceFile],
    parsed: Vec<ParsedFile>,
    kept: &kept_parse::KeptParses,
    kept_renders: Option<&helm_cache::KeptRenders>,
) -> Vec<(Vec<(yaml::Document, Vec<Problem>)>, Vec<Problem>)> {
    files
        .iter()
        .zip(parsed)
        .map(|(file, (docs, problems, to_keep))| {
            let key = kept.keep.get(&file.path);
            if let (Some(json), Some((key, template)), Some(renders)) = (to_keep, key, kept_renders)
            {
                renders.put_parsed(key, template, json);
            }
            (docs, problems)
        })
        .collect()
}

/// Sort objects into apply order (stage, then identity), which is also the stable output
/// order of `tend render`.
pub fn sort_for_apply(objects: &mut [Object]) {
    objects.sort_by_cached_key(|o| (builtin::stage_of(o.group(), o.kind()), o.key()));
}

/// (group, kind, namespaced) defined by a CustomResourceDefinition document.
fn crd_scope(value: &Value) -> Option<(String, String, bool)> {
    if value.get("kind")?.as_str()? != "CustomResourceDefinition" {
        return None;
    }
    let spec = value.get("spec")?;
    Some((
        spec.get("group")?.as_str()?.to_string(),
        spec.pointer("/names/kind")?.as_str()?.to_string(),
        spec.get("scope")?.as_str()? == "Namespaced",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_parsed_on_several_threads_come_back_in_file_order() {
        let files: Vec<SourceFile> = (0..700)
            .map(|i| SourceFile {
                path: format!("f{i}.yaml").into(),
                text: format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\ndata:\n  k: {}\n",
                    "v".repeat(i % 200)
                ),
                unit: None,
            })
            .collect();
        assert!(files.iter().map(|f| f.text.len()).sum::<usize>() > PARALLEL_PARSE_MIN_BYTES);
        let mut kept = kept_parse::KeptParses::default();
        let texts = Texts {
            owned_from: files.len(),
            owned: Vec::new(),
        };
        let names: Vec<String> = parse_all(&files, texts, &Keys::default(), &mut kept)
            .into_iter()
            .flat_map(|(docs, _, _)| docs)
            .map(|(doc, _)| doc.value["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        let expected: Vec<String> = (0..700).map(|i| format!("c{i}")).collect();
        assert_eq!(names, expected);
    }
}
