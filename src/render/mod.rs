//! Render: from YAML files to the exact set of desired objects. Pure: no client, no I/O.
//!
//! Steps, in order: parse every document ([`yaml`]); check its shape ([`validate`]) and, for
//! tend's kinds, its typed spec ([`tend_kinds`]); apply cluster targeting; default
//! namespaces; expand tend's kinds ([`mirror`], [`immortal`]); reject duplicates; annotate
//! workloads with their config hash ([`config_hash`]); sort into apply order
//! ([`builtin::Stage`]). Every problem of every file is collected before anything is
//! returned, so one run reports them all.

pub mod builtin;
pub mod config_hash;
pub mod copies;
pub mod file_modes;
pub mod immortal;
pub mod mirror;
pub mod object;
pub mod tend_kinds;
pub mod validate;
pub mod yaml;

use crate::kinds::TendKind;
use crate::problem::Problems;
use crate::source::walk::SourceFile;
use object::{split_api_version, Object, ObjectKey, Origin, Problem};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Annotation limiting a document to some clusters: `tend.dev/clusters: "dc1,dc2"`.
pub const CLUSTERS_ANNOTATION: &str = "tend.dev/clusters";

#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// The cluster being rendered for (`--cluster`); targeted documents need it to match.
    pub cluster: Option<String>,
    /// Namespace given to namespaced objects that have none (`--namespace`).
    pub default_namespace: String,
    /// ConfigMaps/Secrets read from the cluster, for config hashes of references that are not
    /// in the desired set. Empty offline.
    pub live_config: BTreeMap<ObjectKey, Value>,
    /// What the engine read from the cluster for tend's kinds (CopyRule sources and targets,
    /// uids for ownerReferences). `None` offline.
    pub live: Option<copies::LiveView>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            cluster: None,
            default_namespace: "default".into(),
            live_config: BTreeMap::new(),
            live: None,
        }
    }
}

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
    /// Per CopyRule: copies, targets, conflicts (online only).
    pub copy_outcomes: Vec<copies::CopyOutcome>,
    /// ConfigMaps/Secrets referenced by workloads but found neither in the desired set nor in
    /// `live_config`.
    pub missing_config: BTreeSet<ObjectKey>,
}

#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("the desired state has {count} problem{s}; nothing was rendered:\n{problems}", count = .0 .0.len(), s = if .0 .0.len() == 1 { "" } else { "s" }, problems = .0)]
    Invalid(Problems),
}

/// Render `files` into desired objects, or report every problem found.
pub fn render(files: &[SourceFile], opts: &RenderOptions) -> Result<Rendered, RenderError> {
    let mut problems: Vec<Problem> = Vec::new();
    let mut notes = Vec::new();
    let mut documents = 0;
    let mut skipped_by_targeting = 0;
    let mut objects: Vec<Object> = Vec::new();

    // First pass: parse and check everything; CRDs found in the repo tell us the scope of
    // their kinds for namespace defaulting.
    let mut checked = Vec::new();
    let mut repo_scopes: HashMap<(String, String), bool> = HashMap::new();
    for file in files {
        let (docs, parse_problems) = yaml::parse_source(file);
        problems.extend(parse_problems);
        for mut doc in docs {
            documents += 1;
            file_modes::fix_octal_modes(&mut doc.value);
            let doc_problems = validate::check_document(&file.path, &doc);
            if !doc_problems.is_empty() {
                problems.extend(doc_problems);
                continue;
            }
            if let Some((group, kind, namespaced)) = crd_scope(&doc.value) {
                repo_scopes.insert((group, kind), namespaced);
            }
            checked.push((file, doc));
        }
    }

    let mut host_ports: BTreeMap<i32, (String, Origin)> = BTreeMap::new();
    let mut rules = Vec::new();
    for (file, doc) in checked {
        let origin = Origin {
            file: file.path.clone(),
            line: doc.line,
            generated_by: None,
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
                    problems.extend(p);
                    continue;
                }
            };
            let spec_targeted = match (tend_kinds::spec_clusters(&tend_object), &opts.cluster) {
                (Some(clusters), Some(cluster)) => clusters.iter().any(|c| c == cluster),
                (Some(_), None) => false,
                (None, _) => true,
            };
            if !(targeted && spec_targeted) {
                skipped_by_targeting += 1;
                continue;
            }
            if kind.namespaced() {
                tend_kinds::default_namespace(&mut tend_object, &opts.default_namespace);
            }
            if let crate::kinds::TendObject::RegistryMirror(m) = &tend_object {
                // Two mirrors on one hostPort would leave one node proxy unschedulable.
                let id = format!(
                    "{}/{}",
                    m.metadata.namespace.as_deref().unwrap_or(""),
                    m.metadata.name.as_deref().unwrap_or("")
                );
                if let Some((first_id, first_origin)) = host_ports.get(&m.spec.host_port) {
                    problems.push(Problem::new(
                        &file.path,
                        doc.line_of(&["spec".to_string(), "hostPort".to_string()]),
                        format!(
                            "RegistryMirror {id} uses hostPort {} like RegistryMirror {first_id} ({first_origin}); give each mirror targeted at a cluster its own port",
                            m.spec.host_port
                        ),
                    ));
                } else {
                    host_ports.insert(m.spec.host_port, (id, origin.clone()));
                }
            }
            if let Some(live) = &opts.live {
                let key = ObjectKey {
                    group: crate::GROUP.to_string(),
                    kind: kind.kind().to_string(),
                    namespace: tend_object.meta().namespace.clone(),
                    name: tend_object.meta().name.clone().unwrap_or_default(),
                };
                if let Some(uid) = live.uids.get(&key) {
                    tend_object.meta_mut().uid = Some(uid.clone());
                }
            }
            if let crate::kinds::TendObject::CopyRule(rule) = &tend_object {
                rules.push((rule.clone(), origin.clone()));
            }
            objects.extend(tend_kinds::expand(
                &tend_object,
                &origin,
                opts.live.is_some(),
                &mut notes,
            ));
            // The uid is the cluster's; it is not part of the desired object.
            tend_object.meta_mut().uid = None;
            object.value = tend_kinds::to_value(&tend_object);
            objects.push(object);
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
            object.set_namespace(&opts.default_namespace);
        }
        if namespaced == Some(false) && object.namespace().is_some() {
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

    // CopyRules, online: copies depend on the whole desired set (sources and namespaces in
    // git, objects git already defines at a copy's place).
    let mut copy_outcomes = Vec::new();
    if let Some(live) = &opts.live {
        let mut all_copies = Vec::new();
        for (rule, origin) in &rules {
            let (copies, outcome) = copies::expand_rule(rule, origin, &objects, live);
            all_copies.extend(copies);
            copy_outcomes.push(outcome);
        }
        objects.extend(all_copies);
    }

    // Duplicates: same group/kind/namespace/name twice, after targeting and defaulting.
    let mut seen: HashMap<ObjectKey, Origin> = HashMap::new();
    for object in &objects {
        if let Some(first) = seen.get(&object.key()) {
            problems.push(Problem::new(
                &object.origin.file,
                object.origin.line,
                format!(
                    "duplicate object {}{}: first defined at {}; remove one of them",
                    object.key(),
                    object
                        .origin
                        .generated_by
                        .as_ref()
                        .map(|by| format!(" (generated by {by})"))
                        .unwrap_or_default(),
                    first
                ),
            ));
        } else {
            seen.insert(object.key(), object.origin.clone());
        }
    }

    if !problems.is_empty() {
        problems.sort();
        problems.dedup();
        return Err(RenderError::Invalid(Problems(problems)));
    }

    let (hash_notes, missing_config) =
        config_hash::annotate_reporting_missing(&mut objects, &opts.live_config);
    notes.extend(hash_notes);
    sort_for_apply(&mut objects);
    Ok(Rendered {
        objects,
        notes,
        files: files.len(),
        documents,
        skipped_by_targeting,
        copy_outcomes,
        missing_config,
    })
}

/// Sort objects into apply order (stage, then identity), which is also the stable output
/// order of `tend render`.
pub fn sort_for_apply(objects: &mut [Object]) {
    objects.sort_by_cached_key(|o| (builtin::stage_of(o.group(), o.kind()), o.key()));
}

/// Whether a document's `tend.dev/clusters` annotation admits `cluster`.
fn is_targeted(object: &Object, cluster: Option<&str>) -> bool {
    match object.annotation(CLUSTERS_ANNOTATION) {
        None => true,
        Some(list) => cluster.is_some_and(|c| list.split(',').map(str::trim).any(|item| item == c)),
    }
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
