//! Argo CD's ApplicationSet controller, run once: an ApplicationSet's generators (list,
//! clusters, git directories and files, matrix, merge; each with its `selector`) give
//! parameter sets, and each set renders the template (`argo_template`) into an Application,
//! as applicationset/generators and applicationset/utils do. Pure: a repository's
//! directories and files come through [`RepoTree`], read by the source stage.

use super::argo_match::{flatten, path_match, Selector};
use super::argo_template::{sanitize_name, Params, Renderer, Templating};
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;

/// Argo CD's name and address of the cluster it runs in.
pub const IN_CLUSTER_NAME: &str = "in-cluster";
pub const IN_CLUSTER_SERVER: &str = "https://kubernetes.default.svc";

/// A cluster the clusters generator can select: Argo CD's cluster Secret (name, server,
/// project, and the Secret's labels and annotations).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArgoCluster {
    pub name: String,
    pub server: String,
    pub project: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// The cluster of the run it is (by name, or by its Secret's server), if any.
    pub run_name: Option<String>,
}

/// A git repository's tree at a revision, as Argo CD's repo-server serves it to the git
/// generator.
pub trait RepoTree {
    /// Every directory below the root, `/`-separated, hidden ones (and what they hold) left
    /// out.
    fn directories(&self, repo_url: &str, revision: &str) -> Result<Vec<String>, String>;
    /// The files a git pathspec names, with their text.
    fn files(
        &self,
        repo_url: &str,
        revision: &str,
        pattern: &str,
    ) -> Result<Vec<(String, String)>, String>;
}

/// What generators read besides the ApplicationSet.
pub struct GenerateContext<'a> {
    pub clusters: &'a [ArgoCluster],
    pub repo: &'a dyn RepoTree,
}

/// Generators that need a service tend does not run, with the way out.
const SERVICE_GENERATORS: [&str; 4] = [
    "pullRequest",
    "scmProvider",
    "plugin",
    "clusterDecisionResource",
];
const KNOWN_GENERATORS: [&str; 5] = ["list", "clusters", "git", "matrix", "merge"];

/// The Applications `appset` generates, in generator order, each a full object
/// (`apiVersion`, `kind`, `metadata`, `spec`) in the ApplicationSet's namespace.
pub fn generate(appset: &Json, ctx: &GenerateContext) -> Result<Vec<Json>, String> {
    let spec = appset.get("spec").ok_or("an ApplicationSet needs a spec")?;
    let templating = Templating::of_spec(spec)?;
    let namespace = appset
        .pointer("/metadata/namespace")
        .and_then(Json::as_str)
        .unwrap_or("");
    let base = spec.get("template").cloned().unwrap_or_else(|| json!({}));
    let patch = spec.get("templatePatch").and_then(Json::as_str);
    let preserve = spec
        .pointer("/syncPolicy/preserveResourcesOnDeletion")
        .and_then(Json::as_bool)
        .unwrap_or(false);
    let generators = spec
        .get("generators")
        .and_then(Json::as_array)
        .ok_or("an ApplicationSet needs spec.generators")?;
    let mut apps = Vec::new();
    let mut names = BTreeMap::new();
    for (i, generator) in generators.iter().enumerate() {
        let at = format!("spec.generators[{i}]");
        let (kind, _) = generator_kind(generator).map_err(|e| format!("{at}: {e}"))?;
        let mut template = generator
            .get(kind)
            .and_then(|g| g.get("template"))
            .cloned()
            .unwrap_or_else(|| json!({}));
        fill_empty(&mut template, &base);
        let params =
            transform(generator, &templating, None, ctx).map_err(|e| format!("{at}: {e}"))?;
        for p in &params {
            let app = render_application(&template, patch, p, &templating, namespace, preserve)
                .map_err(|e| format!("{at}: {e}"))?;
            let name = app
                .pointer("/metadata/name")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string();
            if name.is_empty() {
                return Err(format!(
                    "{at}: a generated Application has no metadata.name"
                ));
            }
            if names.insert(name.clone(), i).is_some() {
                return Err(format!(
                    "ApplicationSet contains applications with duplicate name: {name}"
                ));
            }
            apps.push(app);
        }
    }
    Ok(apps)
}

/// The one generator a (nested) generator entry names, and the entry's other keys checked.
fn generator_kind(generator: &Json) -> Result<(&'static str, &Json), String> {
    let map = generator.as_object().ok_or("a generator must be a map")?;
    let mut found = None;
    for key in map.keys() {
        if key == "selector" {
            continue;
        }
        if let Some(service) = SERVICE_GENERATORS.iter().find(|s| **s == key) {
            return Err(format!(
                "the {service} generator needs a service tend does not run (Argo CD's \
                 applicationset controller and its SCM or plugin endpoints); generate the \
                 Applications it would and commit them, or use a list or git generator"
            ));
        }
        let Some(kind) = KNOWN_GENERATORS.iter().find(|k| **k == key) else {
            return Err(format!(
                "unknown generator {key:?}; Argo CD's generators are list, clusters, git, \
                 matrix, merge, pullRequest, scmProvider, plugin and clusterDecisionResource"
            ));
        };
        if found.is_some() {
            return Err("a generator entry must name exactly one generator".into());
        }
        found = Some(*kind);
    }
    let kind = found.ok_or("a generator entry names no generator")?;
    Ok((kind, &generator[kind]))
}

/// Argo CD's `Transform`: the entry's generator interpolated with `outer` parameters (a
/// matrix's first child's), run, and its parameter sets filtered by the entry's selector.
fn transform(
    entry: &Json,
    templating: &Templating,
    outer: Option<&Params>,
    ctx: &GenerateContext,
) -> Result<Vec<Params>, String> {
    let (kind, generator) = generator_kind(entry)?;
    let interpolated;
    let generator = match outer {
        Some(outer) if !outer.is_empty() => {
            interpolated = interpolate(generator, outer, templating)?;
            &interpolated
        }
        _ => generator,
    };
    let params = match kind {
        "list" => list(generator, templating)?,
        "clusters" => clusters(generator, templating, ctx.clusters)?,
        "git" => git(generator, templating, ctx.repo)?,
        "matrix" => matrix(generator, templating, ctx)?,
        _ => merge(generator, templating, ctx)?,
    };
    let Some(selector) = entry.get("selector") else {
        return Ok(params);
    };
    let selector = Selector::parse(selector).map_err(|e| format!("selector: {e}"))?;
    Ok(params
        .into_iter()
        .filter(|p| selector.matches(&flatten(p)))
        .collect())
}

/// `RenderGeneratorParams`: every string of a child generator rendered with the other
/// child's parameters; its `values` with `missingkey=error`, a missing key leaving the
/// value as written (it may name the child's own parameters).
fn interpolate(generator: &Json, params: &Params, templating: &Templating) -> Result<Json, String> {
    let mut out = Map::new();
    let mut renderer = Renderer::new(templating, params);
    let strict = templating.strict();
    let mut strict_renderer = Renderer::new(&strict, params);
    for (k, v) in generator.as_object().into_iter().flatten() {
        if k == "values" {
            let mut values = Map::new();
            for (vk, vv) in v.as_object().into_iter().flatten() {
                let text = vv.as_str().unwrap_or_default();
                let resolved = match strict_renderer.render(text) {
                    Ok(r) => r,
                    Err(e) if e.contains("map has no entry for key") => text.to_string(),
                    Err(e) => return Err(format!("failed to pre-resolve Values key {vk:?}: {e}")),
                };
                values.insert(vk.clone(), Json::String(resolved));
            }
            out.insert(k.clone(), Json::Object(values));
        } else {
            out.insert(renderer.render(k)?, renderer.render_tree(v)?);
        }
    }
    Ok(Json::Object(out))
}

/// `appendTemplatedValues`: a generator's `values`, rendered with its parameters, added
/// as `values.KEY` (fasttemplate) or a `values` map (Go templates).
fn add_values(
    generator: &Json,
    params: &mut Params,
    templating: &Templating,
) -> Result<(), String> {
    let Some(values) = generator.get("values").and_then(Json::as_object) else {
        return Ok(());
    };
    let mut rendered = Map::new();
    {
        let mut renderer = Renderer::new(templating, params);
        for (k, v) in values {
            let text = v
                .as_str()
                .ok_or_else(|| format!("values.{k} must be a string"))?;
            rendered.insert(k.clone(), Json::String(renderer.render(text)?));
        }
    }
    if templating.is_go() {
        params.insert("values".into(), Json::Object(rendered));
    } else {
        for (k, v) in rendered {
            params.insert(format!("values.{k}"), v);
        }
    }
    Ok(())
}

fn list(generator: &Json, templating: &Templating) -> Result<Vec<Params>, String> {
    let mut out = Vec::new();
    for element in generator
        .get("elements")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let element = element
            .as_object()
            .ok_or("list: every element must be a map")?;
        if templating.is_go() {
            out.push(element.clone());
            continue;
        }
        let mut params = Params::new();
        for (k, v) in element {
            if k == "values" {
                for (vk, vv) in v.as_object().ok_or("list: error parsing values map")? {
                    let s = vv
                        .as_str()
                        .ok_or_else(|| format!("list: values.{vk} must be a string"))?;
                    params.insert(format!("values.{vk}"), Json::String(s.into()));
                }
            } else {
                let s = v.as_str().ok_or_else(|| {
                    format!("list: element key {k} must be a string (or set goTemplate: true)")
                })?;
                params.insert(k.clone(), Json::String(s.into()));
            }
        }
        out.push(params);
    }
    if let Some(text) = generator.get("elementsYaml").and_then(Json::as_str) {
        if !text.trim().is_empty() {
            let items: Vec<Params> = serde_yaml::from_str(text)
                .map_err(|e| format!("list: elementsYaml is not a list of maps: {e}"))?;
            out.extend(items);
        }
    }
    Ok(out)
}

fn clusters(
    generator: &Json,
    templating: &Templating,
    all: &[ArgoCluster],
) -> Result<Vec<Params>, String> {
    let selector_json = generator.get("selector").cloned().unwrap_or(json!({}));
    let selector = Selector::parse(&selector_json).map_err(|e| format!("clusters: {e}"))?;
    let mut out = Vec::new();
    let mut has_local = false;
    for cluster in all.iter().filter(|c| selector.matches(&c.labels)) {
        has_local |= cluster.server == IN_CLUSTER_SERVER;
        let mut p = Params::new();
        p.insert("name".into(), json!(cluster.name));
        p.insert("nameNormalized".into(), json!(sanitize_name(&cluster.name)));
        p.insert("server".into(), json!(cluster.server));
        p.insert("project".into(), json!(cluster.project));
        if templating.is_go() {
            let mut meta = Map::new();
            if !cluster.annotations.is_empty() {
                meta.insert("annotations".into(), json!(cluster.annotations));
            }
            if !cluster.labels.is_empty() {
                meta.insert("labels".into(), json!(cluster.labels));
            }
            p.insert("metadata".into(), Json::Object(meta));
        } else {
            for (k, v) in &cluster.annotations {
                p.insert(format!("metadata.annotations.{k}"), json!(v));
            }
            for (k, v) in &cluster.labels {
                p.insert(format!("metadata.labels.{k}"), json!(v));
            }
        }
        add_values(generator, &mut p, templating)?;
        out.push(p);
    }
    // Argo CD's own cluster, when no Secret describes it and nothing selects by label.
    if selector.is_empty() && !has_local && !all.iter().any(|c| c.server == IN_CLUSTER_SERVER) {
        let mut p = Params::new();
        p.insert("name".into(), json!(IN_CLUSTER_NAME));
        p.insert("nameNormalized".into(), json!(IN_CLUSTER_NAME));
        p.insert("server".into(), json!(IN_CLUSTER_SERVER));
        p.insert("project".into(), json!(""));
        add_values(generator, &mut p, templating)?;
        out.push(p);
    }
    if generator
        .get("flatList")
        .and_then(Json::as_bool)
        .unwrap_or(false)
    {
        let list: Vec<Json> = out.into_iter().map(Json::Object).collect();
        let mut p = Params::new();
        p.insert("clusters".into(), Json::Array(list));
        return Ok(vec![p]);
    }
    Ok(out)
}

fn git(
    generator: &Json,
    templating: &Templating,
    repo: &dyn RepoTree,
) -> Result<Vec<Params>, String> {
    let url = generator
        .get("repoURL")
        .and_then(Json::as_str)
        .ok_or("git: repoURL is required")?;
    let revision = generator
        .get("revision")
        .and_then(Json::as_str)
        .unwrap_or("HEAD");
    let prefix = generator
        .get("pathParamPrefix")
        .and_then(Json::as_str)
        .unwrap_or("");
    let items = |key: &str| -> Vec<(String, bool)> {
        generator
            .get(key)
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(|i| {
                let path = i.get("path")?.as_str()?.to_string();
                let exclude = i.get("exclude").and_then(Json::as_bool).unwrap_or(false);
                Some((path, exclude))
            })
            .collect()
    };
    let directories = items("directories");
    let files = items("files");
    let mut out = Vec::new();
    if !directories.is_empty() {
        for dir in repo.directories(url, revision)? {
            let included = directories.iter().any(|(p, ex)| !ex && path_match(p, &dir));
            let excluded = directories.iter().any(|(p, ex)| *ex && path_match(p, &dir));
            if included && !excluded {
                let mut p = path_params(&dir, None, prefix, templating);
                add_values(generator, &mut p, templating)?;
                out.push(p);
            }
        }
    } else if !files.is_empty() {
        let mut found: BTreeMap<String, String> = BTreeMap::new();
        for (pattern, _) in files.iter().filter(|(_, ex)| !ex) {
            found.extend(repo.files(url, revision, pattern)?);
        }
        for (pattern, _) in files.iter().filter(|(_, ex)| *ex) {
            for (path, _) in repo.files(url, revision, pattern)? {
                found.remove(&path);
            }
        }
        for (path, text) in &found {
            for object in file_objects(text).map_err(|e| {
                format!("git: unable to process file '{path}' from repository '{url}': {e}")
            })? {
                let mut p = path_params(
                    parent(path),
                    Some(path.rsplit('/').next().unwrap_or(path)),
                    prefix,
                    templating,
                );
                if templating.is_go() {
                    let mut merged = object.clone();
                    merged.extend(p);
                    p = merged;
                } else {
                    let mut flat: Params = flatten(&object)
                        .into_iter()
                        .map(|(k, v)| (k, Json::String(v)))
                        .collect();
                    flat.extend(p);
                    p = flat;
                }
                add_values(generator, &mut p, templating)?;
                out.push(p);
            }
        }
    } else {
        return Err("git: set directories or files".into());
    }
    Ok(out)
}

/// Go's `path.Dir` of a relative path.
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[..i],
        None => ".",
    }
}

/// A file's parameter objects: one map, or a list of maps.
fn file_objects(text: &str) -> Result<Vec<Params>, String> {
    if let Ok(one) = serde_yaml::from_str::<Params>(text) {
        return Ok(vec![one]);
    }
    serde_yaml::from_str::<Vec<Params>>(text).map_err(|e| format!("unable to parse file: {e}"))
}

/// The path parameters of a directory (or of a file's directory and `filename`).
fn path_params(dir: &str, filename: Option<&str>, prefix: &str, templating: &Templating) -> Params {
    let basename = dir.rsplit('/').next().unwrap_or(dir).to_string();
    let mut p = Params::new();
    if templating.is_go() {
        let mut path = Map::new();
        path.insert("path".into(), json!(dir));
        path.insert("basename".into(), json!(basename));
        path.insert("basenameNormalized".into(), json!(sanitize_name(&basename)));
        if let Some(f) = filename {
            path.insert("filename".into(), json!(f));
            path.insert("filenameNormalized".into(), json!(sanitize_name(f)));
        }
        path.insert("segments".into(), json!(dir.split('/').collect::<Vec<_>>()));
        if prefix.is_empty() {
            p.insert("path".into(), Json::Object(path));
        } else {
            p.insert(prefix.into(), json!({ "path": path }));
        }
        return p;
    }
    let name = if prefix.is_empty() {
        "path".to_string()
    } else {
        format!("{prefix}.path")
    };
    p.insert(name.clone(), json!(dir));
    p.insert(format!("{name}.basename"), json!(basename));
    p.insert(
        format!("{name}.basenameNormalized"),
        json!(sanitize_name(&basename)),
    );
    if let Some(f) = filename {
        p.insert(format!("{name}.filename"), json!(f));
        p.insert(
            format!("{name}.filenameNormalized"),
            json!(sanitize_name(f)),
        );
    }
    for (i, segment) in dir.split('/').enumerate() {
        if !segment.is_empty() {
            p.insert(format!("{name}[{i}]"), json!(segment));
        }
    }
    p
}

/// The parameter sets of a matrix or merge's children (each exactly one set of sets).
fn children(generator: &Json, what: &str) -> Result<Vec<Json>, String> {
    let children = generator
        .get("generators")
        .and_then(Json::as_array)
        .ok_or_else(|| format!("{what}: generators is required"))?;
    Ok(children.clone())
}

fn matrix(
    generator: &Json,
    templating: &Templating,
    ctx: &GenerateContext,
) -> Result<Vec<Params>, String> {
    let children = children(generator, "matrix")?;
    if children.len() != 2 {
        return Err(format!(
            "matrix: found {} generators, there must be exactly two",
            children.len()
        ));
    }
    let first = transform(&children[0], templating, None, ctx).map_err(|e| {
        format!("error failed to get params for first generator in matrix generator: {e}")
    })?;
    let mut out = Vec::new();
    for a in &first {
        let second = transform(&children[1], templating, Some(a), ctx).map_err(|e| {
            format!("failed to get params for second generator in the matrix generator: {e}")
        })?;
        for b in second {
            if templating.is_go() {
                let mut merged = b.clone();
                deep_override(&mut merged, a);
                out.push(merged);
            } else {
                let mut merged = a.clone();
                for (k, v) in b {
                    match merged.get(&k) {
                        Some(existing) if *existing != v => {
                            return Err(format!(
                            "matrix: found duplicate key {k} with different value, a: {} ,b: {}",
                            existing.as_str().unwrap_or_default(),
                            v.as_str().unwrap_or_default()
                        ))
                        }
                        _ => {
                            merged.insert(k, v);
                        }
                    }
                }
                out.push(merged);
            }
        }
    }
    Ok(out)
}

fn merge(
    generator: &Json,
    templating: &Templating,
    ctx: &GenerateContext,
) -> Result<Vec<Params>, String> {
    let children = children(generator, "merge")?;
    if children.len() < 2 {
        return Err("merge: found less than two generators, merge requires two or more".into());
    }
    let keys: Vec<String> = generator
        .get("mergeKeys")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str().map(str::to_string))
        .collect();
    if keys.is_empty() {
        return Err("merge: mergeKeys is required and must name at least one key".into());
    }
    let key_of = |p: &Params| -> String {
        let key: BTreeMap<&str, &Json> = keys
            .iter()
            .map(|k| (k.as_str(), p.get(k).unwrap_or(&Json::Null)))
            .collect();
        serde_json::to_string(&key).unwrap_or_default()
    };
    let mut sets = Vec::new();
    for (i, child) in children.iter().enumerate() {
        let params = transform(child, templating, None, ctx).map_err(|e| {
            format!(
                "error getting params from generator {} of {}: {e}",
                i + 1,
                children.len()
            )
        })?;
        let mut by_key: Vec<(String, Params)> = Vec::new();
        for p in params {
            let k = key_of(&p);
            if by_key.iter().any(|(existing, _)| *existing == k) {
                return Err(format!(
                    "merge: the parameters from a generator were not unique by the given \
                     mergeKeys, Merge requires all param sets to be unique. Duplicate key was {k}"
                ));
            }
            by_key.push((k, p));
        }
        sets.push(by_key);
    }
    let mut base = sets.remove(0);
    for overrides in sets {
        for (k, params) in base.iter_mut() {
            if let Some((_, o)) = overrides.iter().find(|(ok, _)| ok == k) {
                if templating.is_go() {
                    deep_override(params, o);
                } else {
                    params.extend(o.clone());
                }
            }
        }
    }
    Ok(base.into_iter().map(|(_, p)| p).collect())
}

/// mergo's `Merge(dst, src, WithOverride)` on maps: `src`'s values win, maps merged deeply.
fn deep_override(dst: &mut Params, src: &Params) {
    for (k, v) in src {
        match (dst.get_mut(k), v) {
            (Some(Json::Object(d)), Json::Object(s)) => deep_override(d, s),
            _ => {
                dst.insert(k.clone(), v.clone());
            }
        }
    }
}

/// mergo's `Merge(dst, src)` on a template: what `dst` leaves empty, `src` fills.
fn fill_empty(dst: &mut Json, src: &Json) {
    let (Json::Object(d), Json::Object(s)) = (dst, src) else {
        return;
    };
    for (k, v) in s {
        match d.get_mut(k) {
            Some(existing @ Json::Object(_)) => fill_empty(existing, v),
            Some(existing) if is_empty(existing) => *existing = v.clone(),
            Some(_) => {}
            None => {
                d.insert(k.clone(), v.clone());
            }
        }
    }
}

fn is_empty(v: &Json) -> bool {
    match v {
        Json::Null => true,
        Json::String(s) => s.is_empty(),
        Json::Array(a) => a.is_empty(),
        Json::Object(o) => o.is_empty(),
        Json::Bool(b) => !b,
        Json::Number(n) => n.as_f64() == Some(0.0),
    }
}

/// One Application: the template rendered, `templatePatch` rendered and merged over it,
/// the finalizer Argo CD adds unless resources are preserved.
fn render_application(
    template: &Json,
    patch: Option<&str>,
    params: &Params,
    templating: &Templating,
    namespace: &str,
    preserve: bool,
) -> Result<Json, String> {
    let mut renderer = Renderer::new(templating, params);
    let mut app = renderer.render_tree(template)?;
    if let Some(patch) = patch {
        let text = renderer.render(patch)?;
        let patch: Json = serde_yaml::from_str(&text)
            .map_err(|e| format!("templatePatch is not YAML once rendered: {e}"))?;
        if !patch.is_null() {
            merge_patch(&mut app, &patch);
        }
    }
    let mut metadata = app
        .get("metadata")
        .and_then(Json::as_object)
        .cloned()
        .unwrap_or_default();
    if !namespace.is_empty() {
        metadata.insert("namespace".into(), json!(namespace));
    }
    let has_finalizers = metadata
        .get("finalizers")
        .and_then(Json::as_array)
        .is_some_and(|f| !f.is_empty());
    if !preserve && !has_finalizers {
        metadata.insert(
            "finalizers".into(),
            json!(["resources-finalizer.argocd.argoproj.io"]),
        );
    }
    Ok(json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": metadata,
        "spec": app.get("spec").cloned().unwrap_or_else(|| json!({})),
    }))
}

/// A JSON merge patch (RFC 7386): what an Application's strategic merge patch is, its type
/// having no merge keys: maps merge, anything else replaces, null removes.
fn merge_patch(target: &mut Json, patch: &Json) {
    let Json::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let Json::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Json::Null), v);
        }
    }
}

#[cfg(test)]
#[path = "argo_appset_tests.rs"]
mod tests;
