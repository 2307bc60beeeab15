//! An Application's sources turned into files, as Argo CD's repo-server generates manifests:
//! the tree a `repoURL` names (the checkout under test, else fetched at `targetRevision`),
//! the source's type (`argo_app::source_type`), then a directory's manifests and Jsonnet
//! files, a kustomize build (with the source's options as an overlay), or a Helm release
//! (a tend `HelmChart` the chart pipeline renders: a chart of the tree, or `chart` from a
//! chart repository) whose values files may come from another source's `ref`.

use super::argo_app::{self, IgnoreRule, SourceType, SyncOptions};
use super::argo_jsonnet::{self, JsonnetOptions};
use super::argo_match::pathspec_match;
use super::{Context, Found, Outcome, Produced, EXPANDED_ANNOTATION};
use crate::problem::Problem;
use crate::source::kustomize::{self, KUSTOMIZATION_FILES};
use crate::source::paths::{leaves_root, normalize};
use crate::source::SourceFile;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the charts of Applications' trees are keyed (never a path of the walked tree).
const CHART_KEYS: &str = "/argo-charts";

/// What Argo CD skips in a directory source.
const SKIP_MARKER: &str = "+argocd:skip-file-rendering";

/// A repository's tree at a revision.
pub struct Tree {
    pub root: PathBuf,
    pub revision: Option<String>,
}

/// The tree `repo_url` names: the checkout under test when it is that repository (whatever
/// `targetRevision` says: tend shows what the checkout would do), else the repository
/// fetched at `revision` (`HEAD` or none: its default branch).
pub fn git_tree(ctx: &Context, repo_url: &str, revision: &str) -> Result<Tree, String> {
    if ctx.is_checkout_url(repo_url) {
        let (root, revision) = ctx.tree_of_checkout();
        return Ok(Tree { root, revision });
    }
    let git_ref = match revision.trim() {
        "" | "HEAD" => None,
        r => Some(r.trim_start_matches("refs/heads/").to_string()),
    };
    let spec = crate::source::git::GitSpec {
        url: repo_url.to_string(),
        git_ref,
        semver: None,
        login: None,
        cache_dir: ctx.cache_dir.to_path_buf(),
        ssh_key: None,
        known_hosts: None,
        token: None,
        limits: ctx.checkout.tree_limits,
    };
    let fetched = crate::source::git::fetch(&spec).map_err(|e| {
        format!(
            "cannot fetch {repo_url}: {e}; if it is the repository under test, run tend in its git checkout (the checkout's origin URL names it)"
        )
    })?;
    Ok(Tree {
        root: fetched.dir,
        revision: Some(fetched.commit),
    })
}

/// Every directory below `dir`, relative to `root`, hidden ones left out (the repo-server's
/// `GetGitDirectories`).
pub fn directories(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), String> {
    for entry in sorted_entries(dir)? {
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if path.is_dir() && !hidden {
            out.push(relative(root, &path));
            directories(root, &path, out)?;
        }
    }
    Ok(())
}

/// The files of the tree a git pathspec names, with their text.
pub fn matching_files(root: &Path, pattern: &str) -> Result<Vec<(String, String)>, String> {
    let mut all = Vec::new();
    every_file(root, root, &mut all)?;
    let mut out = Vec::new();
    for rel in all.into_iter().filter(|rel| pathspec_match(pattern, rel)) {
        let text = std::fs::read_to_string(root.join(&rel))
            .map_err(|e| format!("cannot read {rel}: {e}"))?;
        out.push((rel, text));
    }
    Ok(out)
}

fn every_file(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), String> {
    for entry in sorted_entries(dir)? {
        let path = entry.path();
        if entry.file_name() == ".git" {
            continue;
        }
        if path.is_dir() {
            every_file(root, &path, out)?;
        } else {
            out.push(relative(root, &path));
        }
    }
    Ok(())
}

fn sorted_entries(dir: &Path) -> Result<Vec<std::fs::DirEntry>, String> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    Ok(entries)
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// One Application's sources, and what applies to all it syncs.
pub struct AppSources<'a, 'c> {
    pub unit: &'a Found,
    pub ctx: &'a Context<'c>,
    /// `destination.namespace`.
    pub namespace: Option<String>,
    pub sync: SyncOptions,
    pub rules: Vec<IgnoreRule>,
}

impl AppSources<'_, '_> {
    /// Every source's files; `ref` sources give values files to the others.
    pub fn expand(&self) -> Result<Produced, Problem> {
        let spec = self.unit.spec();
        let (field, sources): (&str, Vec<&Value>) = match (spec.get("sources"), spec.get("source"))
        {
            (Some(Value::Array(list)), _) if !list.is_empty() => ("sources", list.iter().collect()),
            (_, Some(source)) if source.is_object() => ("source", vec![source]),
            _ => {
                return Err(self.unit.problem(
                    &["spec"],
                    "spec.source or spec.sources is required: where the manifests are",
                ))
            }
        };
        let mut refs = BTreeMap::new();
        for source in &sources {
            for key in source.as_object().into_iter().flatten().map(|(k, _)| k) {
                if !argo_app::SOURCE_FIELDS.contains(&key.as_str()) {
                    return Err(self.unit.problem(
                        &["spec", field],
                        format!("spec.{field}: {key} is not a field of an Application source; remove it or fix its spelling"),
                    ));
                }
            }
            if let Some(name) = source.get("ref").and_then(Value::as_str) {
                let tree = git_tree(
                    self.ctx,
                    text(source, "repoURL"),
                    text(source, "targetRevision"),
                )
                .map_err(|e| self.unit.problem(&["spec", field], e))?;
                refs.insert(name.to_string(), tree.root);
            }
        }
        let mut produced = Produced::outcome(Outcome::Expanded);
        let mut revisions = Vec::new();
        for (i, source) in sources.iter().enumerate() {
            let only_ref = source.get("ref").is_some()
                && source.get("path").is_none()
                && source.get("chart").is_none();
            if only_ref {
                continue;
            }
            let at = |message: String| self.unit.problem(&["spec", field], message);
            let revision = self.source(i, source, &refs, &mut produced).map_err(|e| {
                at(format!(
                    "spec.{field}{}: {e}",
                    if field == "sources" {
                        format!("[{i}]")
                    } else {
                        String::new()
                    }
                ))
            })?;
            revisions.extend(revision);
        }
        produced.revision = (!revisions.is_empty()).then(|| revisions.join(", "));
        Ok(produced)
    }

    /// One source's files (or chart); its revision.
    fn source(
        &self,
        index: usize,
        source: &Value,
        refs: &BTreeMap<String, PathBuf>,
        produced: &mut Produced,
    ) -> Result<Option<String>, String> {
        let helm = source.get("helm").cloned().unwrap_or(json!({}));
        if let Some(chart) = source
            .get("chart")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
        {
            let repo = text(source, "repoURL");
            let repository = if repo.contains("://") {
                repo.trim_end_matches('/').to_string()
            } else {
                format!("oci://{}", repo.trim_end_matches('/'))
            };
            let version = match text(source, "targetRevision") {
                "" => "*",
                v => v,
            };
            let values = self.values(&helm, None, refs)?;
            self.claim_values_files(&helm, refs, produced);
            let mut spec = Map::new();
            spec.insert("repository".into(), json!(repository));
            spec.insert("name".into(), json!(chart));
            spec.insert("version".into(), json!(version));
            self.helm_release(index, &helm, spec, values, produced);
            return Ok(Some(format!("chart {chart} {version}")));
        }
        let tree = git_tree(
            self.ctx,
            text(source, "repoURL"),
            text(source, "targetRevision"),
        )?;
        let path = normalize(Path::new(text(source, "path").trim_start_matches('/')));
        if leaves_root(&path) {
            return Err("path leaves the repository; write a path relative to its root".into());
        }
        let dir = tree.root.join(&path);
        if tree.root == self.ctx.checkout.root {
            produced.claims.push(path.clone());
        }
        if !dir.is_dir() {
            return Err(format!(
                "path {} is not a directory of the repository; fix the path (it is relative to the repository root)",
                path.display()
            ));
        }
        let names: Vec<String> = sorted_entries(&dir)?
            .into_iter()
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        match argo_app::source_type(source, &names)? {
            SourceType::Directory => {
                let options = source.get("directory").cloned().unwrap_or(json!({}));
                let files = self.directory(&tree.root, &path, &options)?;
                produced.files.extend(files);
            }
            SourceType::Kustomize => {
                let options = source.get("kustomize").cloned().unwrap_or(json!({}));
                let files = self.kustomize(&tree.root, &path, &names, &options)?;
                produced.files.extend(files);
            }
            SourceType::Helm => {
                let chart = crate::source::charts::read_chart(&tree.root, &dir, &path)
                    .map_err(|p| p.message)?;
                let key = PathBuf::from(format!(
                    "{CHART_KEYS}/{}/{}/{index}",
                    self.unit.id.namespace, self.unit.id.name
                ));
                let values = self.values(&helm, Some(&dir), refs)?;
                self.claim_values_files(&helm, refs, produced);
                let release = super::argo_nested::release_name(&helm, &self.unit.id.name);
                produced.files.extend(super::argo_nested::units_in_chart(
                    &chart,
                    &values,
                    (release, &self.release_namespace(&helm)),
                    &path,
                ));
                let mut spec = Map::new();
                spec.insert("chart".into(), json!(key.display().to_string()));
                produced.charts.push((key, chart));
                self.helm_release(index, &helm, spec, values, produced);
            }
        }
        Ok(tree.revision)
    }

    /// The values files, in order, then the inline values and parameters. A relative values
    /// file is the chart directory's (`chart_dir`); `$ref/path` is a `ref` source's.
    /// Values files named from a `ref` source of the checkout under test (`$values/...`)
    /// are the Application's input, not manifests of the run (like the paths it syncs).
    fn claim_values_files(
        &self,
        helm: &Value,
        refs: &BTreeMap<String, PathBuf>,
        produced: &mut Produced,
    ) {
        let files = helm.get("valueFiles").and_then(Value::as_array);
        for file in files.into_iter().flatten().filter_map(Value::as_str) {
            if !file.starts_with('$') {
                continue;
            }
            let Ok(path) = resolve_values_file(file, None, refs) else {
                continue;
            };
            if let Ok(rel) = path.strip_prefix(&self.ctx.checkout.root) {
                produced.claims.push(rel.to_path_buf());
            }
        }
    }

    fn values(
        &self,
        helm: &Value,
        chart_dir: Option<&Path>,
        refs: &BTreeMap<String, PathBuf>,
    ) -> Result<Value, String> {
        let ignore_missing = helm
            .get("ignoreMissingValueFiles")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut values = json!({});
        for file in helm
            .get("valueFiles")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let path = resolve_values_file(file, chart_dir, refs)?;
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(_) if ignore_missing => continue,
                Err(e) => {
                    return Err(format!(
                        "values file {file}: {e}; fix the path, or set helm.ignoreMissingValueFiles: true"
                    ))
                }
            };
            let parsed: Value = crate::yaml::parse_helm_yaml(&text)
                .map_err(|e| format!("values file {file} is not YAML: {e}"))?;
            if parsed.is_object() {
                argo_app::merge_values(&mut values, &parsed);
            } else if !parsed.is_null() {
                return Err(format!("values file {file} is not a map of values"));
            }
        }
        let read = |path: &str| -> Result<String, String> {
            let base = chart_dir.ok_or("helm.fileParameters of a chart from a chart repository are not supported by tend; put the value in helm.values")?;
            let rel = normalize(Path::new(path));
            if leaves_root(&rel) {
                return Err(format!(
                    "helm.fileParameters: {path} leaves the chart's directory"
                ));
            }
            std::fs::read_to_string(base.join(rel))
                .map_err(|e| format!("helm.fileParameters: {path}: {e}"))
        };
        argo_app::helm_values(helm, values, &read)
    }

    /// The tend HelmChart that renders a Helm source, and the Namespace it may need.
    fn helm_release(
        &self,
        index: usize,
        helm: &Value,
        mut spec: Map<String, Value>,
        values: Value,
        produced: &mut Produced,
    ) {
        let release = super::argo_nested::release_name(helm, &self.unit.id.name);
        spec.insert("releaseName".into(), json!(release));
        if values.as_object().is_some_and(|m| !m.is_empty()) {
            spec.insert("values".into(), values);
        }
        let skip_crds = helm
            .get("skipCrds")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        spec.insert("includeCrds".into(), json!(!skip_crds));
        let namespace = self.release_namespace(helm);
        let mut chain = (*self.unit.chain).clone();
        chain.push(self.unit.id.clone());
        let name = if index == 0 {
            self.unit.id.name.clone()
        } else {
            format!("{}-{index}", self.unit.id.name)
        };
        let mut annotations = Map::new();
        annotations.insert(
            EXPANDED_ANNOTATION.into(),
            json!(super::chain_label(&chain)),
        );
        if let Some(policies) = argo_app::encode_policies(&self.sync, &self.rules) {
            annotations.insert(argo_app::POLICIES_ANNOTATION.into(), json!(policies));
        }
        let helm_chart = json!({
            "apiVersion": crate::API_VERSION,
            "kind": "HelmChart",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "annotations": annotations,
            },
            "spec": Value::Object(spec),
        });
        produced.files.push(SourceFile {
            path: PathBuf::from(unit_line(self.unit)),
            text: crate::yaml::to_yaml(&helm_chart),
            unit: None,
        });
    }

    /// The release namespace of a Helm source: `helm.namespace`, else the destination's.
    fn release_namespace(&self, helm: &Value) -> String {
        helm.get("namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .or_else(|| self.namespace.clone())
            .unwrap_or_else(|| self.ctx.default_namespace.to_string())
    }

    /// A directory source: its YAML and JSON files (and below, with `recurse`), Jsonnet
    /// files evaluated, `include`/`exclude` globs on paths relative to the source's path.
    fn directory(
        &self,
        root: &Path,
        path: &Path,
        options: &Value,
    ) -> Result<Vec<SourceFile>, String> {
        let recurse = options
            .get("recurse")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let include = options.get("include").and_then(Value::as_str).unwrap_or("");
        let exclude = options.get("exclude").and_then(Value::as_str).unwrap_or("");
        let dir = root.join(path);
        let jsonnet = JsonnetOptions::of(options.get("jsonnet"), &dir, root)?;
        let mut files = Vec::new();
        if recurse {
            every_file(&dir, &dir, &mut files)?;
        } else {
            for entry in sorted_entries(&dir)? {
                if entry.path().is_file() {
                    files.push(entry.file_name().to_string_lossy().into_owned());
                }
            }
        }
        let mut out = Vec::new();
        for rel in files {
            let is_jsonnet = rel.ends_with(".jsonnet");
            let is_manifest = [".yaml", ".yml", ".json"].iter().any(|e| rel.ends_with(e));
            if !(is_jsonnet || is_manifest)
                || (!exclude.is_empty() && glob_match(exclude, &rel))
                || (!include.is_empty() && !glob_match(include, &rel))
            {
                continue;
            }
            let file = dir.join(&rel);
            let label = path.join(&rel);
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", label.display()))?;
            if text.contains(SKIP_MARKER) {
                continue;
            }
            let text = if is_jsonnet {
                let objects = argo_jsonnet::evaluate(&file, &jsonnet)
                    .map_err(|e| format!("failed to evaluate jsonnet {}: {e}", label.display()))?;
                let mut objects = objects;
                for object in &mut objects {
                    self.object_policies(object);
                }
                objects
                    .iter()
                    .map(crate::yaml::to_yaml)
                    .collect::<Vec<_>>()
                    .join("---\n")
            } else {
                self.file_policies(&label, text)
            };
            out.push(SourceFile {
                path: label,
                text,
                unit: None,
            });
        }
        Ok(out)
    }

    /// A kustomize source: built as it is, or, with options, through an overlay in a private
    /// copy of the tree.
    fn kustomize(
        &self,
        root: &Path,
        path: &Path,
        names: &[String],
        options: &Value,
    ) -> Result<Vec<SourceFile>, String> {
        let has_options = options.as_object().is_some_and(|o| !o.is_empty());
        let copy;
        let (build_root, dir, file, text) = if has_options {
            let overlay = PathBuf::from(".tend-argo-overlay").join(&self.unit.id.name);
            let base = format!("../../{}", path.display());
            let kustomization = argo_app::kustomize_overlay(options, &base)?;
            let text = crate::yaml::to_yaml(&kustomization);
            let file = overlay.join("kustomization.yaml");
            if let Some(files) = kustomize::detect(root, &overlay, &file, &text)
                .and_then(|unit| kustomize::kept_overlay(root, &unit, &text, self.ctx.kustomize))
            {
                return Ok(self.built_files(path, files));
            }
            copy = crate::source::private_copy::PrivateCopy::of(root)
                .map_err(|e| format!("cannot copy the repository to build it: {e}"))?;
            let dir = copy.path().join(&overlay);
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::write(dir.join("kustomization.yaml"), &text))
                .map_err(|e| format!("cannot write the kustomization to build: {e}"))?;
            (
                copy.path().to_path_buf(),
                overlay.clone(),
                overlay.join("kustomization.yaml"),
                text,
            )
        } else {
            let name = KUSTOMIZATION_FILES
                .iter()
                .find(|k| names.iter().any(|n| n == *k))
                .ok_or("no kustomization in the path")?;
            let text = std::fs::read_to_string(root.join(path).join(name))
                .map_err(|e| format!("cannot read {}: {e}", path.join(name).display()))?;
            (
                root.to_path_buf(),
                path.to_path_buf(),
                path.join(name),
                text,
            )
        };
        let Some(unit) = kustomize::detect(&build_root, &dir, &file, &text) else {
            return Err(format!(
                "cannot build {} as a kustomization",
                path.display()
            ));
        };
        let (files, problems) = kustomize::build_all(
            &build_root,
            &[&unit],
            self.ctx.kustomize,
            kustomize::Inputs::AsCommitted,
        );
        if let Some(p) = problems.first() {
            return Err(format!("building {}: {}", path.display(), p.message));
        }
        Ok(self.built_files(path, files))
    }

    /// A build's files, named by the source's path, with the Application's policies.
    fn built_files(&self, path: &Path, files: Vec<SourceFile>) -> Vec<SourceFile> {
        files
            .into_iter()
            .map(|mut f| {
                f.path = PathBuf::from(format!("{} (kustomize build)", path.display()));
                f.text = self.file_policies(&f.path, std::mem::take(&mut f.text));
                f
            })
            .collect()
    }

    /// The file's documents with the Application's policies; the text as written when they
    /// change nothing (its lines stay those of the file).
    fn file_policies(&self, label: &Path, text: String) -> String {
        let (docs, _) = crate::yaml::parse_file(label, &text);
        let mut changed = false;
        let mut out = Vec::new();
        for doc in docs {
            let mut value = doc.value.clone();
            self.object_policies(&mut value);
            changed |= value != doc.value;
            out.push(value);
        }
        if !changed {
            return text;
        }
        out.iter()
            .map(crate::yaml::to_yaml)
            .collect::<Vec<_>>()
            .join("---\n")
    }

    fn object_policies(&self, object: &mut Value) {
        if object.is_object() {
            argo_app::apply_policies(object, &self.sync, &self.rules);
        }
    }
}

/// `file:line` of the unit, as its file is known in its own tree (the loop adds the chain).
pub fn unit_line(unit: &Found) -> String {
    let file = unit.file.display().to_string();
    let own = if unit.chain.is_empty() {
        file.as_str()
    } else {
        let suffix = format!(" ({})", super::chain_label(&unit.chain));
        file.strip_suffix(&suffix).unwrap_or(&file)
    };
    // A generated Application is known by its ApplicationSet's line already.
    let has_line = own
        .rsplit_once(':')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if has_line {
        return own.to_string();
    }
    format!("{own}:{}", unit.doc.line)
}

fn text<'v>(source: &'v Value, key: &str) -> &'v str {
    source.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `$ref/path` (a `ref` source's tree), or a path of the chart's directory.
fn resolve_values_file(
    file: &str,
    chart_dir: Option<&Path>,
    refs: &BTreeMap<String, PathBuf>,
) -> Result<PathBuf, String> {
    if file.starts_with("http://") || file.starts_with("https://") {
        return Err(format!("values file {file}: values files by URL are not supported by tend; copy it into the repository"));
    }
    if let Some(rest) = file.strip_prefix('$') {
        let (name, rel) = rest.split_once('/').unwrap_or((rest, ""));
        let root = refs.get(name).ok_or_else(|| {
            format!("values file {file}: no source of this Application has ref: {name}")
        })?;
        let rel = normalize(Path::new(rel));
        if leaves_root(&rel) {
            return Err(format!("values file {file} leaves the repository"));
        }
        return Ok(root.join(rel));
    }
    let Some(dir) = chart_dir else {
        return Err(format!(
            "values file {file}: a relative values file of a chart from a chart repository is not supported by tend; name it from another source with ref ($ref/path)"
        ));
    };
    let rel = normalize(Path::new(file));
    if leaves_root(&rel) {
        return Err(format!("values file {file} leaves the chart's directory"));
    }
    Ok(dir.join(rel))
}

/// Argo CD's `glob.Match` (gobwas/glob, no separators): `*` crosses `/`, `{a,b}`
/// alternatives.
fn glob_match(pattern: &str, path: &str) -> bool {
    expand_braces(pattern)
        .iter()
        .any(|p| pathspec_glob(p, path))
}

fn pathspec_glob(pattern: &str, path: &str) -> bool {
    if pattern.contains(['*', '?', '[']) {
        pathspec_match(pattern, path)
    } else {
        pattern == path
    }
}

fn expand_braces(pattern: &str) -> Vec<String> {
    let Some(open) = pattern.find('{') else {
        return vec![pattern.to_string()];
    };
    let Some(close) = pattern[open..].find('}').map(|c| open + c) else {
        return vec![pattern.to_string()];
    };
    let (head, body, tail) = (
        &pattern[..open],
        &pattern[open + 1..close],
        &pattern[close + 1..],
    );
    body.split(',')
        .flat_map(|alt| expand_braces(&format!("{head}{alt}{tail}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_globs_are_gobwas_globs() {
        assert!(glob_match("exclude/*", "exclude/bootstrap.yaml"));
        assert!(glob_match("*.yaml", "sub/dir/a.yaml"));
        assert!(glob_match("{a,b}/*.yaml", "b/x.yaml"));
        assert!(!glob_match("{a,b}/*.yaml", "c/x.yaml"));
        assert!(glob_match("config.json", "config.json"));
        assert!(!glob_match("config.json", "sub/config.json"));
    }

    #[test]
    fn values_files_resolve_from_refs_or_the_chart() {
        let refs = BTreeMap::from([("values".to_string(), PathBuf::from("/repo"))]);
        assert_eq!(
            resolve_values_file("$values/env/dev.yaml", None, &refs).unwrap(),
            PathBuf::from("/repo/env/dev.yaml")
        );
        assert!(resolve_values_file("$other/x.yaml", None, &refs)
            .unwrap_err()
            .contains("ref: other"));
        assert!(resolve_values_file("x.yaml", None, &refs).is_err());
        assert_eq!(
            resolve_values_file("x.yaml", Some(Path::new("/c")), &refs).unwrap(),
            PathBuf::from("/c/x.yaml")
        );
        assert!(resolve_values_file("$values/../../etc", None, &refs).is_err());
    }
}
