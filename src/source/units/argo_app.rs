//! Argo CD's `Application` read as its repo-server and controller read it (reposerver
//! `GetAppSourceType`, `helmTemplate`, `kustomize.Build`, `findManifests`; controller sync
//! options): where it syncs to, each source's type and options, and what its sync options
//! and `ignoreDifferences` mean for tend's per-object policies. Pure: file checks and reads
//! come from the caller.

use super::argo_appset::{ArgoCluster, IN_CLUSTER_NAME, IN_CLUSTER_SERVER};
use serde_json::{json, Map, Value as Json};

/// The fields of an Application's `spec` (argoproj.io/v1alpha1).
pub const SPEC_FIELDS: &[&str] = &[
    "source",
    "sources",
    "destination",
    "project",
    "syncPolicy",
    "ignoreDifferences",
    "info",
    "revisionHistoryLimit",
    "sourceHydrator",
];

/// The fields of one source.
pub const SOURCE_FIELDS: &[&str] = &[
    "repoURL",
    "path",
    "targetRevision",
    "helm",
    "kustomize",
    "directory",
    "plugin",
    "chart",
    "ref",
    "name",
];

/// How the repo-server generates a source's manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceType {
    Helm,
    Kustomize,
    Directory,
}

/// `ExplicitType`: the one of `helm`, `kustomize`, `directory` a source sets; a `plugin` is
/// an error naming the way out.
pub fn explicit_type(source: &Json) -> Result<Option<SourceType>, String> {
    let mut found = Vec::new();
    for (key, kind) in [
        ("kustomize", Some(SourceType::Kustomize)),
        ("helm", Some(SourceType::Helm)),
        ("directory", Some(SourceType::Directory)),
        ("plugin", None),
    ] {
        if source.get(key).is_some_and(|v| !v.is_null()) {
            found.push((key, kind));
        }
    }
    match found.as_slice() {
        [] => Ok(None),
        [(_, Some(kind))] => Ok(Some(*kind)),
        [(_, None)] => Err(
            "a config management plugin (source.plugin) runs a program of Argo CD's repo-server \
             that tend does not have; commit the manifests it generates and point the source at \
             them, or use a helm, kustomize or directory source"
                .into(),
        ),
        more => Err(format!(
            "multiple application sources defined: {}",
            more.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(",")
        )),
    }
}

/// The source's type as the repo-server decides it: a `chart` is Helm; else its explicit
/// type; else what the files directly in the path are (a kustomization wins over a
/// `Chart.yaml`); else a directory of manifests.
pub fn source_type(source: &Json, files_in_path: &[String]) -> Result<SourceType, String> {
    if source
        .get("chart")
        .and_then(Json::as_str)
        .is_some_and(|c| !c.is_empty())
    {
        return Ok(SourceType::Helm);
    }
    if let Some(kind) = explicit_type(source)? {
        return Ok(kind);
    }
    let has = |pred: &dyn Fn(&str) -> bool| files_in_path.iter().any(|f| pred(f));
    if has(&|f| {
        matches!(
            f,
            "kustomization.yaml" | "kustomization.yml" | "Kustomization"
        )
    }) {
        return Ok(SourceType::Kustomize);
    }
    if has(&|f| f.ends_with("Chart.yaml")) {
        return Ok(SourceType::Helm);
    }
    Ok(SourceType::Directory)
}

/// Where an Application syncs to, judged against the run's clusters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The cluster tend runs against.
    ThisCluster,
    /// Another cluster: its name or server, for the report.
    Other(String),
    /// Another cluster of the run (by its name there), applied in that cluster's part.
    OfRun(String),
}

/// `destination.server` or `destination.name`: the run's cluster when it is Argo CD's own
/// (`https://kubernetes.default.svc`, `in-cluster`), `run_cluster` (`--cluster`, or the
/// cluster's name in a run over several), or a cluster (a Secret's, or the run's) that is
/// it; another cluster of the run is [`Target::OfRun`].
pub fn target(
    spec: &Json,
    clusters: &[ArgoCluster],
    run_cluster: Option<&str>,
) -> Result<Target, String> {
    let dest = spec
        .get("destination")
        .ok_or("spec.destination is required")?;
    let text = |k: &str| dest.get(k).and_then(Json::as_str).filter(|s| !s.is_empty());
    let server = match (text("server"), text("name")) {
        (Some(_), Some(_)) => {
            return Err(
                "spec.destination: set server or name, not both (Argo CD refuses both)".into(),
            )
        }
        (Some(server), None) => server.trim_end_matches('/').to_string(),
        (None, Some(name)) => {
            if name == IN_CLUSTER_NAME || Some(name) == run_cluster {
                return Ok(Target::ThisCluster);
            }
            return Ok(match clusters.iter().find(|c| c.name == name) {
                Some(c) if c.server.trim_end_matches('/') == IN_CLUSTER_SERVER => {
                    Target::ThisCluster
                }
                Some(c) => of_run(c, run_cluster)
                    .unwrap_or_else(|| Target::Other(format!("{name} ({})", c.server))),
                None => Target::Other(name.to_string()),
            });
        }
        (None, None) => return Err("spec.destination needs server or name".into()),
    };
    if server == IN_CLUSTER_SERVER {
        return Ok(Target::ThisCluster);
    }
    // A cluster Secret naming this server, named as --cluster names the run's cluster.
    match clusters
        .iter()
        .find(|c| !c.server.is_empty() && c.server.trim_end_matches('/') == server)
    {
        Some(c) if Some(c.name.as_str()) == run_cluster => Ok(Target::ThisCluster),
        Some(c) => Ok(of_run(c, run_cluster)
            .unwrap_or_else(|| Target::Other(format!("{} ({server})", c.name)))),
        None => Ok(Target::Other(server)),
    }
}

/// `cluster` as a cluster of the run: this one, or another.
fn of_run(cluster: &ArgoCluster, run_cluster: Option<&str>) -> Option<Target> {
    let name = cluster.run_name.as_deref()?;
    Some(match Some(name) == run_cluster {
        true => Target::ThisCluster,
        false => Target::OfRun(name.to_string()),
    })
}

/// The sync options that change what tend writes, from `syncPolicy.syncOptions` or an
/// object's `argocd.argoproj.io/sync-options` annotation.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SyncOptions {
    pub create_namespace: bool,
    /// `Prune=false` (or `Delete=false`): never pruned by tend.
    pub keep: bool,
    /// `Replace=true`: replaced where an update is refused.
    pub replace: bool,
}

/// Reads `Key=value` options; unknown ones are Argo CD's business and change nothing here
/// (`ServerSideApply=true`, `PruneLast=true`, `ApplyOutOfSyncOnly=true` are what tend always
/// does: server-side apply, prune last, write only what differs).
pub fn sync_options<'a>(options: impl IntoIterator<Item = &'a str>) -> SyncOptions {
    let mut out = SyncOptions::default();
    for option in options {
        let (key, value) = option.split_once('=').unwrap_or((option, ""));
        match (key.trim(), value.trim()) {
            ("CreateNamespace", "true") => out.create_namespace = true,
            ("Prune", "false") | ("Delete", "false") => out.keep = true,
            ("Replace", "true") => out.replace = true,
            _ => {}
        }
    }
    out
}

/// The Application's `syncPolicy.syncOptions`.
pub fn app_sync_options(spec: &Json) -> SyncOptions {
    sync_options(
        spec.pointer("/syncPolicy/syncOptions")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(Json::as_str),
    )
}

/// The Namespace `CreateNamespace=true` creates, with `managedNamespaceMetadata`.
pub fn managed_namespace(spec: &Json, namespace: &str) -> Json {
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(namespace));
    if let Some(meta) = spec.pointer("/syncPolicy/managedNamespaceMetadata") {
        for key in ["labels", "annotations"] {
            if let Some(v) = meta.get(key).filter(|v| v.is_object()) {
                metadata.insert(key.into(), v.clone());
            }
        }
    }
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})
}

/// Annotation on the HelmChart of an Application's Helm source: its sync options and
/// `ignoreDifferences` (JSON), applied by render to each object the chart renders.
pub const POLICIES_ANNOTATION: &str = "tend.dev/unit-policies";

/// One `ignoreDifferences` entry: which objects, and the fields tend leaves to others.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IgnoreRule {
    pub group: String,
    pub kind: String,
    pub name: Option<String>,
    pub namespace: Option<String>,
    /// JSON pointers (RFC 6901) of fields tend does not write.
    pub pointers: Vec<String>,
    /// jq path expressions of fields tend does not write (`jqPathExpressions`).
    #[serde(default)]
    pub jq: Vec<String>,
    /// Field managers whose fields in the live object tend leaves to them
    /// (`managedFieldsManagers`): the policy [`IGNORE_FIELDS_OF`], applied once the live
    /// object is read.
    #[serde(default)]
    pub managers: Vec<String>,
}

/// The per-object policy `managedFieldsManagers` becomes (the plan stage reads it).
pub const IGNORE_FIELDS_OF: &str = "tend.dev/ignore-fields-of";

impl IgnoreRule {
    pub fn matches(&self, object: &Json) -> bool {
        let text = |p: &str| object.pointer(p).and_then(Json::as_str).unwrap_or("");
        let group = text("/apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
        (self.kind == "*" || self.kind == text("/kind"))
            && (self.group == "*" || self.group == group)
            && self
                .name
                .as_deref()
                .is_none_or(|n| n == text("/metadata/name"))
            && self
                .namespace
                .as_deref()
                .is_none_or(|n| n == text("/metadata/namespace"))
    }
}

/// `spec.ignoreDifferences` as rules: JSON pointers, jq path expressions (checked here) and
/// field managers.
pub fn ignore_rules(spec: &Json) -> Result<Vec<IgnoreRule>, String> {
    let mut out = Vec::new();
    for (i, entry) in spec
        .get("ignoreDifferences")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let text = |k: &str| entry.get(k).and_then(Json::as_str).map(str::to_string);
        let pointers: Vec<String> = entry
            .get("jsonPointers")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        if let Some(bad) = pointers
            .iter()
            .find(|p| !p.is_empty() && !p.starts_with('/'))
        {
            return Err(format!(
                "spec.ignoreDifferences[{i}].jsonPointers: {bad:?} is not a JSON pointer; \
                 write it as /spec/replicas"
            ));
        }
        let managers: Vec<String> = entry
            .get("managedFieldsManagers")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str().map(str::to_string))
            .filter(|m| !m.is_empty() && !m.contains(','))
            .collect();
        let jq: Vec<String> = entry
            .get("jqPathExpressions")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        for expression in &jq {
            super::argo_jq::check(expression).map_err(|why| {
                format!(
                    "spec.ignoreDifferences[{i}].jqPathExpressions: {expression:?}: {why}; write a jq path expression, e.g. .spec.template.spec.containers[] | select(.name == \"sidecar\")"
                )
            })?;
        }
        out.push(IgnoreRule {
            group: text("group").unwrap_or_default(),
            kind: text("kind")
                .ok_or_else(|| format!("spec.ignoreDifferences[{i}].kind is required"))?,
            name: text("name").filter(|n| !n.is_empty()),
            namespace: text("namespace").filter(|n| !n.is_empty()),
            pointers,
            jq,
            managers,
        });
    }
    Ok(out)
}

/// Removes the fields `rules` name from `object`: tend then neither writes nor compares
/// them, and what another writer (an autoscaler, a webhook) set stays, as Argo CD's
/// `RespectIgnoreDifferences=true` keeps it.
pub fn strip_ignored(object: &mut Json, rules: &[IgnoreRule]) {
    let matching: Vec<&IgnoreRule> = rules.iter().filter(|r| r.matches(object)).collect();
    for rule in matching {
        for pointer in &rule.pointers {
            remove_pointer(object, pointer);
        }
        for expression in &rule.jq {
            super::argo_jq::delete(object, expression);
        }
        if !rule.managers.is_empty() {
            add_managers(object, &rule.managers);
        }
    }
}

/// Name `managers` in the object's [`IGNORE_FIELDS_OF`], after those it names already.
fn add_managers(object: &mut Json, managers: &[String]) {
    let Some(meta) = object.get_mut("metadata").and_then(Json::as_object_mut) else {
        return;
    };
    let Some(annotations) = meta
        .entry("annotations")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    else {
        return;
    };
    let mut named: Vec<String> = annotations
        .get(IGNORE_FIELDS_OF)
        .and_then(Json::as_str)
        .map(|t| t.split(',').map(|m| m.trim().to_string()).collect())
        .unwrap_or_default();
    for manager in managers {
        if !named.contains(manager) {
            named.push(manager.clone());
        }
    }
    named.retain(|m| !m.is_empty());
    annotations.insert(IGNORE_FIELDS_OF.into(), json!(named.join(",")));
}

fn remove_pointer(object: &mut Json, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match object.pointer_mut(parent) {
        Some(Json::Object(map)) => {
            map.shift_remove(&last);
        }
        Some(Json::Array(items)) => {
            if let Ok(i) = last.parse::<usize>() {
                if i < items.len() {
                    items.remove(i);
                }
            }
        }
        _ => {}
    }
}

/// What [`POLICIES_ANNOTATION`] holds, when there is anything to apply.
pub fn encode_policies(sync: &SyncOptions, rules: &[IgnoreRule]) -> Option<String> {
    if !sync.keep && !sync.replace && rules.is_empty() {
        return None;
    }
    serde_json::to_string(&json!({"sync": sync, "ignore": rules})).ok()
}

/// [`apply_policies`] with what [`encode_policies`] wrote; objects' own sync-options
/// annotations are read as for any other source.
pub fn apply_encoded_policies(object: &mut Json, encoded: &str) {
    let Ok(decoded) = serde_json::from_str::<Json>(encoded) else {
        return;
    };
    let sync: SyncOptions = decoded
        .get("sync")
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .unwrap_or_default();
    let rules: Vec<IgnoreRule> = decoded
        .get("ignore")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    if object.is_object() {
        apply_policies(object, &sync, &rules);
    }
}

/// The annotations tend reads as policies for what an object's sync options ask.
pub fn policy_annotations(options: &SyncOptions) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    if options.keep {
        out.push(("tend.dev/prune", "disabled"));
    }
    if options.replace {
        out.push(("tend.dev/replace", "on-immutable"));
    }
    out
}

/// Adds the policies of the Application's sync options and of the object's own
/// `argocd.argoproj.io/sync-options` annotation to `object`; drops what `ignoreDifferences`
/// names.
pub fn apply_policies(object: &mut Json, app: &SyncOptions, rules: &[IgnoreRule]) {
    let own = object
        .pointer("/metadata/annotations/argocd.argoproj.io~1sync-options")
        .and_then(Json::as_str)
        .map(|s| sync_options(s.split(',')))
        .unwrap_or_default();
    let merged = SyncOptions {
        create_namespace: false,
        keep: app.keep || own.keep,
        replace: app.replace || own.replace,
    };
    let annotations = policy_annotations(&merged);
    if !annotations.is_empty() {
        if let Some(meta) = object.get_mut("metadata").and_then(Json::as_object_mut) {
            let entry = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(map) = entry.as_object_mut() {
                for (k, v) in annotations {
                    map.entry(k).or_insert_with(|| json!(v));
                }
            }
        }
    }
    strip_ignored(object, rules);
}

/// The kustomization Argo CD's `kustomize edit` calls amount to, as an overlay whose one
/// resource is the source's path (`base`, relative to the overlay): `namePrefix`,
/// `nameSuffix`, `images`, `commonLabels`, `commonAnnotations`, `namespace`, `patches`,
/// `components`, `replicas`.
pub fn kustomize_overlay(options: &Json, base: &str) -> Result<Json, String> {
    let mut k = Map::new();
    k.insert(
        "apiVersion".into(),
        json!("kustomize.config.k8s.io/v1beta1"),
    );
    k.insert("kind".into(), json!("Kustomization"));
    k.insert("resources".into(), json!([base]));
    let Some(options) = options.as_object() else {
        return Ok(Json::Object(k));
    };
    for (key, value) in options {
        match key.as_str() {
            "namePrefix" | "nameSuffix" | "namespace" => {
                if value.as_str().is_some_and(|s| !s.is_empty()) {
                    k.insert(key.clone(), value.clone());
                }
            }
            "commonLabels" => {
                let with_selector = !options
                    .get("labelWithoutSelector")
                    .and_then(Json::as_bool)
                    .unwrap_or(false);
                k.insert(
                    "labels".into(),
                    json!([{"pairs": value, "includeSelectors": with_selector, "includeTemplates": true}]),
                );
            }
            "commonAnnotations" => {
                k.insert("commonAnnotations".into(), value.clone());
            }
            "images" => {
                let images: Vec<Json> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Json::as_str)
                    .map(image)
                    .collect();
                k.insert("images".into(), Json::Array(images));
            }
            "patches" | "components" | "replicas" => {
                k.insert(key.clone(), value.clone());
            }
            "version"
            | "forceCommonLabels"
            | "forceCommonAnnotations"
            | "labelWithoutSelector"
            | "commonAnnotationsEnvsubst"
            | "kubeVersion"
            | "apiVersions"
            | "ignoreMissingComponents"
            | "labelIncludeTemplates" => {}
            other => {
                return Err(format!(
                    "kustomize.{other} is not a field of an Application's kustomize source"
                ))
            }
        }
    }
    Ok(Json::Object(k))
}

/// `kustomize edit set image` syntax: `name=newName:tag`, `name:tag`, `name@digest`.
fn image(spec: &str) -> Json {
    let (name, target) = match spec.split_once('=') {
        Some((name, target)) => (name, target),
        None => {
            let end = spec
                .find('@')
                .or_else(|| spec.rfind(':').filter(|&i| !spec[i..].contains('/')))
                .unwrap_or(spec.len());
            (&spec[..end], spec)
        }
    };
    let mut out = Map::new();
    out.insert("name".into(), json!(name));
    let (rest, digest) = match target.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (target, None),
    };
    let (new_name, tag) = match rest.rfind(':').filter(|&i| !rest[i..].contains('/')) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    if new_name != name && !new_name.is_empty() {
        out.insert("newName".into(), json!(new_name));
    }
    if let Some(tag) = tag {
        out.insert("newTag".into(), json!(tag));
    }
    if let Some(digest) = digest {
        out.insert("digest".into(), json!(digest));
    }
    Json::Object(out)
}

/// Helm's `--set NAME=VALUE` (strvals), as Argo CD passes `helm.parameters`: dotted names
/// with `[i]` indexes, `\.` an escaped dot, `{a,b}` a list; values typed (`true`, `null`,
/// integers) unless `force_string`.
pub fn set_parameter(
    values: &mut Json,
    name: &str,
    value: &str,
    force_string: bool,
) -> Result<(), String> {
    let mut path: Vec<Step> = Vec::new();
    let mut key = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => key.extend(chars.next()),
            '.' => path.push(Step::Key(std::mem::take(&mut key))),
            '[' => {
                if !key.is_empty() {
                    path.push(Step::Key(std::mem::take(&mut key)));
                }
                let index: String = chars.by_ref().take_while(|&c| c != ']').collect();
                let i = index
                    .parse::<usize>()
                    .map_err(|_| format!("parameter {name}: {index:?} is not a list index"))?;
                path.push(Step::Index(i));
                if chars.peek() == Some(&'.') {
                    chars.next();
                }
            }
            c => key.push(c),
        }
    }
    if !key.is_empty() {
        path.push(Step::Key(key));
    }
    if path.is_empty() {
        return Err(format!("parameter {name:?} has no name"));
    }
    let typed = if value.starts_with('{') && value.ends_with('}') && !force_string {
        Json::Array(
            value[1..value.len() - 1]
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| typed(s, false))
                .collect(),
        )
    } else {
        typed(value, force_string)
    };
    put(values, &path, typed);
    Ok(())
}

enum Step {
    Key(String),
    Index(usize),
}

fn put(target: &mut Json, path: &[Step], value: Json) {
    let Some((first, rest)) = path.split_first() else {
        *target = value;
        return;
    };
    match first {
        Step::Key(k) => {
            if !target.is_object() {
                *target = json!({});
            }
            if let Json::Object(map) = target {
                let slot = map.entry(k.clone()).or_insert(Json::Null);
                put(slot, rest, value);
            }
        }
        Step::Index(i) => {
            if !target.is_array() {
                *target = json!([]);
            }
            if let Json::Array(items) = target {
                while items.len() <= *i {
                    items.push(Json::Null);
                }
                put(&mut items[*i], rest, value);
            }
        }
    }
}

/// strvals' `typedVal`.
fn typed(text: &str, force_string: bool) -> Json {
    if force_string {
        return json!(text);
    }
    match text.to_ascii_lowercase().as_str() {
        "true" => return json!(true),
        "false" => return json!(false),
        "null" => return Json::Null,
        _ => {}
    }
    if text == "0" {
        return json!(0);
    }
    if !text.starts_with('0') {
        if let Ok(i) = text.parse::<i64>() {
            return json!(i);
        }
    }
    json!(text)
}

/// Helm's values for a helm source, over `base` (its values files, merged in order): its
/// inline values, `valuesObject` (wins) or `values` (YAML text), then `parameters` (as
/// `--set`), then `fileParameters` (as `--set-file`, read by `read_file`).
pub fn helm_values(
    helm: &Json,
    base: Json,
    read_file: &dyn Fn(&str) -> Result<String, String>,
) -> Result<Json, String> {
    let inline = match (helm.get("valuesObject"), helm.get("values")) {
        (Some(obj), _) if obj.is_object() => obj.clone(),
        (_, Some(Json::String(text))) if !text.trim().is_empty() => {
            // Argo CD hands it to Helm as a values file: read as Helm reads one (YAML 1.1).
            let v: Json = crate::yaml::parse_helm_yaml(text)
                .map_err(|e| format!("helm.values is not YAML: {e}"))?;
            match v {
                Json::Null => json!({}),
                Json::Object(_) => v,
                _ => return Err("helm.values must be a map of values".into()),
            }
        }
        (_, Some(obj)) if obj.is_object() => obj.clone(),
        _ => json!({}),
    };
    let mut values = base;
    merge_values(&mut values, &inline);
    for p in helm
        .get("parameters")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let name = p
            .get("name")
            .and_then(Json::as_str)
            .ok_or("helm.parameters: every parameter needs a name")?;
        let value = match p.get("value") {
            Some(Json::String(s)) => s.clone(),
            Some(Json::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let force = p
            .get("forceString")
            .and_then(Json::as_bool)
            .unwrap_or(false);
        set_parameter(&mut values, name, &value, force)?;
    }
    for p in helm
        .get("fileParameters")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(name), Some(path)) = (
            p.get("name").and_then(Json::as_str),
            p.get("path").and_then(Json::as_str),
        ) else {
            return Err("helm.fileParameters: every entry needs a name and a path".into());
        };
        let text = read_file(path)?;
        set_parameter(&mut values, name, &text, true)?;
    }
    Ok(values)
}

/// Helm's merge of one values file over another: maps merge, anything else replaces.
pub fn merge_values(base: &mut Json, over: &Json) {
    match (base, over) {
        (Json::Object(b), Json::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        merge_values(existing, v)
                    }
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

#[cfg(test)]
#[path = "argo_app_tests.rs"]
mod tests;
