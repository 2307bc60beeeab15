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
mod complete;
pub mod config_hash;
mod decrypt;
pub mod file_modes;
pub mod helm_cache;
mod helm_charts;
mod options;
pub mod policy;
pub mod tend_kinds;
pub mod validate;
pub mod waves;

pub use complete::complete;
pub use options::{RenderOptions, CLUSTERS_ANNOTATION};

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
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

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
    /// Lookups of Helm charts not answered by `RenderOptions::helm_cluster` yet: read them
    /// from the cluster and render again.
    pub lookups_missed: BTreeSet<crate::helm::lookup::LookupKey>,
    /// Each HelmChart's release, for its status.
    pub releases: Vec<crate::kinds::run::ReleaseOutcome>,
}

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("the desired state has {count} problem{s}; nothing was rendered:\n{problems}", count = .0 .0.len(), s = if .0 .0.len() == 1 { "" } else { "s" }, problems = .0)]
    Invalid(Problems),
}

/// Render `files` into desired objects, or report every problem found.
pub fn render(files: &[SourceFile], opts: &RenderOptions) -> Result<Rendered, RenderError> {
    render_with_charts(files, &Charts::default(), opts)
}

/// [`render`], with the repository's Helm charts for its `HelmChart` objects.
pub fn render_with_charts(
    files: &[SourceFile],
    charts: &Charts,
    opts: &RenderOptions,
) -> Result<Rendered, RenderError> {
    let file_count = files.len();
    let charted = helm_charts::render_charts(files, charts, opts);
    if !charted.lookups_missed.is_empty() {
        // Rendered without the cluster's answers: what came out (or failed) may be wrong.
        // The caller reads them and renders again.
        return Ok(Rendered {
            objects: Vec::new(),
            notes: Vec::new(),
            files: files.len(),
            documents: 0,
            skipped_by_targeting: 0,
            tend: Vec::new(),
            copy_outcomes: Vec::new(),
            missing_config: BTreeSet::new(),
            random_charts: Vec::new(),
            lookups_missed: charted.lookups_missed,
            releases: Vec::new(),
        });
    }
    let mut problems: Vec<Problem> = charted.problems;
    let all_files: Vec<SourceFile>;
    let files = if charted.files.is_empty() {
        files
    } else {
        all_files = files.iter().cloned().chain(charted.files).collect();
        &all_files[..]
    };
    let default_namespace = |file: &std::path::Path| {
        charted
            .namespaces
            .get(file)
            .map_or(opts.default_namespace.as_str(), String::as_str)
    };
    let mut notes = charted.notes.clone();
    let mut documents = 0;
    let mut skipped_by_targeting = 0;
    let mut objects: Vec<Object> = Vec::new();

    // First pass: parse and check everything; CRDs found in the repo tell us the scope of
    // their kinds for namespace defaulting.
    let mut checked = Vec::new();
    // Decrypted values, masked in the problems (which may quote a value they refuse): of
    // the documents dropped on a problem here, and, only once there is a problem, of the
    // objects kept (gathering them costs as much as the rest of rendering them).
    let mut decrypted = Vec::new();
    let mut repo_scopes: HashMap<(String, String), bool> = HashMap::new();
    for (file, parsed) in files.iter().zip(parse_all(files, &opts.keys)) {
        let (docs, parse_problems) = parsed;
        problems.extend(parse_problems);
        let from_chart = charted.namespaces.contains_key(&file.path);
        let after_pre_hooks = charted.after_pre_hooks.contains(&file.path);
        for (mut doc, doc_problems) in docs {
            documents += 1;
            if !doc_problems.is_empty() {
                decrypted.extend(crate::object::secret_values(&doc.value, &doc.sealed));
                problems.extend(doc_problems);
                continue;
            }
            if from_chart {
                helm_charts::as_tend_hook(&mut doc, after_pre_hooks);
            }
            if let Some((group, kind, namespaced)) = crd_scope(&doc.value) {
                repo_scopes.insert((group, kind), namespaced);
            }
            checked.push((file, doc));
        }
    }

    let mut host_ports = HostPorts::default();
    let mut tend = Vec::new();
    for (file, doc) in checked {
        let origin = Origin {
            file: file.path.clone(),
            // What a chart rendered is at its HelmChart's line, see
            // README "HelmChart — a Helm chart rendered by tend itself".
            line: charted.lines.get(&file.path).copied().unwrap_or(doc.line),
            generated_by: None,
            sealed: doc.sealed.clone(),
        };
        let mut object = Object::new(doc.value.clone(), origin.clone());
        let targeted = is_targeted(&object, opts.cluster.as_deref());

        if object.group() == crate::GROUP {
            let Some(kind) = TendKind::from_kind(object.kind()) else {
                continue; // reported by validate
            };
            let mut tend_object = match tend_kinds::parse(&file.path, &doc, kind) {
                Ok(o) => o,
                Err(p) => {
                    decrypted.extend(crate::object::secret_values(&doc.value, &doc.sealed));
                    problems.extend(p);
                    continue;
                }
            };
            let spec_targeted = match (tend_object.clusters(), &opts.cluster) {
                (Some(clusters), Some(cluster)) => clusters.iter().any(|c| c == cluster),
                (Some(_), None) => false,
                (None, _) => true,
            };
            if !(targeted && spec_targeted) {
                skipped_by_targeting += 1;
                continue;
            }
            tend_object.default_namespace(&opts.default_namespace);
            // The uid is the cluster's: never part of desired state, nor an owner's uid.
            tend_object.meta_mut().uid = None;
            if let TendObject::RegistryMirror(m) = &tend_object {
                if let Err(message) = host_ports.claim(m, &origin) {
                    let line = doc.line_of(&["spec".to_string(), "hostPort".to_string()]);
                    problems.push(Problem::new(&file.path, line, message));
                }
            }
            objects.extend(tend_kinds::expand(&tend_object, &origin, &mut notes));
            object.value = tend_object.to_value();
            objects.push(object);
            tend.push((tend_object, origin));
            continue;
        }

        if !targeted {
            skipped_by_targeting += 1;
            continue;
        }
        let (group, version) = split_api_version(object.api_version());
        let namespaced = builtin::builtin_scope(group, version, object.kind()).or_else(|| {
            repo_scopes
                .get(&(group.to_string(), object.kind().to_string()))
                .copied()
        });
        if namespaced == Some(true) && object.namespace().is_none() {
            object.set_namespace(default_namespace(&file.path));
        }
        if namespaced == Some(false) && object.namespace().is_some() {
            decrypted.extend(crate::object::secret_values(&doc.value, &doc.sealed));
            problems.push(Problem::new(
                &object.origin.file,
                doc.line_of(&["metadata".to_string(), "namespace".to_string()]),
                format!(
                    "{} is cluster-scoped (its CustomResourceDefinition says so) and cannot have metadata.namespace; remove it",
                    object.kind()
                ),
            ));
            continue;
        }
        objects.push(object);
    }

    problems.extend(duplicates(&objects));
    if !problems.is_empty() {
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
        random_charts: charted.random.clone(),
        lookups_missed: charted.lookups_missed.clone(),
        releases,
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

/// Each file's documents, parsed, decrypted where SOPS-encrypted, and checked (octal file modes fixed, shape validated), in
/// file order. Files are independent, so this runs on every core (the bulk of rendering a
/// 10,000-object site); the result is the same as one after the other.
#[allow(clippy::type_complexity)]
fn parse_all(
    files: &[SourceFile],
    keys: &Keys,
) -> Vec<(Vec<(yaml::Document, Vec<Problem>)>, Vec<Problem>)> {
    let parse = |file: &SourceFile| {
        let (mut docs, mut problems) =
            kustomize_annotations::parse_source(&file.path, &file.text, file.unit.is_some());
        problems.extend(decrypt::decrypt_file(file, &mut docs, keys));
        let docs = docs
            .into_iter()
            .map(|mut doc| {
                file_modes::fix_octal_modes(&mut doc.value);
                let problems = validate::check_document(&file.path, &doc);
                (doc, problems)
            })
            .collect();
        (docs, problems)
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    // Threads pay off on enough text only: one costs more memory (its stack, its allocator
    // pages) than parsing a chart's output takes, and about the time.
    let bytes: usize = files.iter().map(|f| f.text.len()).sum();
    if threads < 2 || files.len() < 2 || bytes < PARALLEL_PARSE_MIN_BYTES {
        return files.iter().map(parse).collect();
    }
    // Files are handed out in small batches as threads ask for them, not in one share per
    // thread: the run's other threads (reading the cluster) take cores at times, and a
    // thread that fell behind would otherwise leave the rest of its share to itself.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let start = next.fetch_add(PARSE_BATCH, std::sync::atomic::Ordering::Relaxed);
            if start >= files.len() {
                return done;
            }
            let end = (start + PARSE_BATCH).min(files.len());
            done.push((
                start,
                files[start..end].iter().map(parse).collect::<Vec<_>>(),
            ));
        }
    };
    let mut batches: Vec<_> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut batches = work();
        for helper in helpers {
            batches.extend(
                helper
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        batches
    });
    batches.sort_unstable_by_key(|(start, _)| *start);
    batches.into_iter().flat_map(|(_, parsed)| parsed).collect()
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
        let names: Vec<String> = parse_all(&files, &Keys::default())
            .into_iter()
            .flat_map(|(docs, _)| docs)
            .map(|(doc, _)| doc.value["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        let expected: Vec<String> = (0..700).map(|i| format!("c{i}")).collect();
        assert_eq!(names, expected);
    }
}
