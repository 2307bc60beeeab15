//! Flux's `ArtifactGenerator` (`source.extensions.fluxcd.io/v1beta1`, fluxcd/source-watcher,
//! Flux 2.7): the `ExternalArtifact`s it composes from other sources by copy operations, read
//! by a Kustomization whose `sourceRef` names one (the layout of fluxcd/flux2-kustomize-helm-
//! example). tend builds the artifact as source-watcher's builder does, into a private
//! directory the unit's build reads:
//!
//! - `from: "@<alias>/<pattern>"`, `to: "@artifact/<path>"`, applied in order, later files
//!   overwriting earlier ones;
//! - a pattern without `*?[]` names a file (copied to `to`, or into it when `to` ends with
//!   `/` or is a directory already) or a directory (copied as `to/<its name>/`);
//! - a glob is Go's `fs.Glob`, one path element per `*` (so `**` is `*`); each match is
//!   copied to `to/<match>`, or for `<dir>/**` to `to/<match without dir/>`, directories
//!   whole;
//! - `exclude`: doublestar patterns against the path in the source and the path under the
//!   pattern's literal prefix; a pattern without `/` also against the file name;
//! - `strategy: Merge` deep-merges a YAML file into one already copied (maps merged, other
//!   values replaced, as Helm merges values files); `Extract` (tarballs) is refused.
//!
//! Sources are `GitRepository`s (the checkout under test or fetched, as for a
//! Kustomization, without what source-controller leaves out of the artifact:
//! `flux_ignore.rs`); the other kinds, and `spec.pathPattern`, are refused with the way out.

use super::flux_ignore::element_match;
use super::flux_sources::git_tree;
use super::model::{Context, Found, Sources, Tree};
use crate::problem::Problem;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const GROUP: &str = "source.extensions.fluxcd.io";
const VERSIONS: &[&str] = &["v1beta1"];

/// The tree a Kustomization's `sourceRef` names: an ExternalArtifact's, an OCIRepository's
/// (see `flux_oci.rs`), or a GitRepository's ([`git_tree`]).
pub fn source_tree(
    unit: &Found,
    source_ref: &Value,
    field: &[&str],
    sources: &Sources,
    ctx: &Context,
) -> Result<Tree, Problem> {
    let text = |k: &str| source_ref.get(k).and_then(Value::as_str);
    let namespace = text("namespace").unwrap_or(&unit.id.namespace);
    let name = text("name").unwrap_or("");
    match text("kind") {
        Some("ExternalArtifact") => artifact_tree(unit, (namespace, name), field, sources, ctx),
        Some("OCIRepository") => match sources.get("OCIRepository", namespace, name) {
            Some(source) => {
                super::flux_sources::source_version(source)?;
                super::flux_oci::oci_tree(source, sources, ctx)
            }
            None => Err(unit.problem(
                field,
                format!("sourceRef names OCIRepository {namespace}/{name}, which the desired state does not define; define it, or fix the name"),
            )),
        },
        _ => git_tree(unit, source_ref, field, sources, ctx),
    }
}

/// The tree of ExternalArtifact `namespace/name`, built from the ArtifactGenerator of the
/// desired state that generates it.
fn artifact_tree(
    unit: &Found,
    (namespace, name): (&str, &str),
    field: &[&str],
    sources: &Sources,
    ctx: &Context,
) -> Result<Tree, Problem> {
    let Some((generator, artifact)) = generator_of(sources, namespace, name) else {
        return Err(unit.problem(
            field,
            format!("sourceRef names ExternalArtifact {namespace}/{name}, which no ArtifactGenerator of the desired state generates (tend reads ExternalArtifacts from ArtifactGenerators only); define the generator, or fix the name"),
        ));
    };
    let version = generator.api_version.split('/').nth(1).unwrap_or("");
    if !VERSIONS.contains(&version) {
        return Err(generator.problem(
            &["apiVersion"],
            format!(
                "{} is not a version of Flux's ArtifactGenerator tend reads ({}); write one of them",
                generator.api_version,
                VERSIONS.join(", ")
            ),
        ));
    }
    if generator.spec().get("pathPattern").is_some() {
        return Err(generator.problem(
            &["spec", "pathPattern"],
            "spec.pathPattern is not supported by tend yet; list each artifact under spec.artifacts",
        ));
    }
    let aliases = aliases(generator, sources, ctx)?;
    let staging = tempfile::Builder::new()
        .prefix("tend-artifact-")
        .tempdir()
        .map_err(|e| {
            generator.problem(
                &["spec"],
                format!("cannot make a directory to build ExternalArtifact {name} in: {e}"),
            )
        })?;
    let copies = artifact.get("copy").and_then(Value::as_array);
    for op in copies.into_iter().flatten() {
        copy(op, &aliases, staging.path()).map_err(|why| {
            generator.problem(
                &["spec", "artifacts"],
                format!(
                    "artifact {name}: copy from {:?} to {:?}: {why}",
                    op.get("from").and_then(Value::as_str).unwrap_or(""),
                    op.get("to").and_then(Value::as_str).unwrap_or("")
                ),
            )
        })?;
    }
    // The origin's revision when the artifact names one, as the generator annotates it.
    let origin = artifact
        .get("originRevision")
        .or_else(|| artifact.get("revision"))
        .and_then(Value::as_str)
        .and_then(|alias| aliases.get(alias.trim_start_matches('@')))
        .and_then(|tree| tree.revision.clone());
    Ok(Tree {
        root: staging.path().to_path_buf(),
        revision: Some(match origin {
            Some(revision) => format!("{name}@{revision}"),
            None => format!("{name}@latest"),
        }),
        is_checkout: false,
        _staging: Some(Arc::new(staging)),
    })
}

/// The generator of artifact `name` in `namespace`, and the artifact's entry.
fn generator_of<'s>(
    sources: &'s Sources,
    namespace: &str,
    name: &str,
) -> Option<(&'s Found, &'s Value)> {
    sources
        .of_kind("ArtifactGenerator")
        .filter(|g| g.id.namespace == namespace)
        .find_map(|g| {
            let artifacts = g.spec().get("artifacts")?.as_array()?;
            let artifact = artifacts
                .iter()
                .find(|a| a.get("name").and_then(Value::as_str) == Some(name))?;
            Some((g, artifact))
        })
}

/// Each source alias's tree.
fn aliases(
    generator: &Found,
    sources: &Sources,
    ctx: &Context,
) -> Result<BTreeMap<String, Tree>, Problem> {
    let mut out = BTreeMap::new();
    let list = generator.spec().get("sources").and_then(Value::as_array);
    for source in list.into_iter().flatten() {
        let text = |k: &str| source.get(k).and_then(Value::as_str).unwrap_or("");
        if text("kind") != "GitRepository" {
            return Err(generator.problem(
                &["spec", "sources"],
                format!(
                    "source {:?} is a {}, which tend does not read for an ArtifactGenerator yet; use a GitRepository",
                    text("alias"),
                    text("kind")
                ),
            ));
        }
        let namespace = source
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or(&generator.id.namespace);
        let source_ref =
            json!({"kind": "GitRepository", "name": text("name"), "namespace": namespace});
        let tree = git_tree(generator, &source_ref, &["spec", "sources"], sources, ctx)?;
        // The generator reads the source's artifact, which source-controller archived.
        let tree = super::flux_ignore::archived(
            tree,
            (generator, &source_ref),
            &["spec", "sources"],
            sources,
            ctx.archives,
        )?;
        out.insert(text("alias").to_string(), tree);
    }
    Ok(out)
}

/// One copy operation into `staging`.
fn copy(op: &Value, aliases: &BTreeMap<String, Tree>, staging: &Path) -> Result<(), String> {
    let text = |k: &str| op.get(k).and_then(Value::as_str).unwrap_or("");
    let (alias, pattern) = text("from")
        .strip_prefix('@')
        .and_then(|f| f.split_once('/'))
        .ok_or("from must be @<alias>/<pattern>")?;
    let to = text("to");
    let dest = to
        .strip_prefix("@artifact/")
        .ok_or("to must start with @artifact/")?;
    if leaves(dest) || leaves(pattern) {
        return Err("a path may not climb out with ..".into());
    }
    let tree = aliases
        .get(alias)
        .ok_or_else(|| format!("no source has the alias {alias:?}"))?;
    let exclude: Vec<String> = op
        .get("exclude")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.as_str().map(str::to_string))
        .collect();
    let strategy = match text("strategy") {
        "" | "Overwrite" => Strategy::Overwrite,
        "Merge" => Strategy::Merge,
        "Extract" => return Err("strategy Extract (tarballs) is not supported by tend yet; copy the files the archive holds instead".into()),
        other => return Err(format!("unknown strategy {other:?}; use Overwrite or Merge")),
    };
    let job = Job {
        root: &tree.root,
        staging,
        exclude: &exclude,
        strategy,
    };
    if !pattern.contains(['*', '?', '[', ']']) {
        let src = normalize(pattern);
        let full = tree.root.join(&src);
        let meta = fs::metadata(&full)
            .map_err(|_| format!("source {:?} does not exist", src.display()))?;
        let base = src.file_name().map(PathBuf::from).unwrap_or_default();
        if meta.is_dir() {
            return job.tree(&src, &Path::new(dest).join(&base), &src);
        }
        let target = if to.ends_with('/') || staging.join(dest).is_dir() {
            Path::new(dest).join(&base)
        } else {
            PathBuf::from(dest)
        };
        if excluded(&src, Path::new("."), &exclude) {
            return Ok(());
        }
        return job.file(&src, &target);
    }
    let matches = glob(&tree.root, pattern)?;
    if matches.is_empty() {
        return Err(format!(
            "no files match pattern {pattern:?} in source {alias:?}"
        ));
    }
    let base = literal_prefix(pattern);
    let kept: Vec<PathBuf> = matches
        .into_iter()
        .filter(|m| !excluded(m, &base, &exclude))
        .collect();
    if kept.is_empty() {
        return Err(format!(
            "all files matching pattern {pattern:?} in source {alias:?} were excluded"
        ));
    }
    for found in kept {
        let rel = pattern
            .strip_suffix("/**")
            .and_then(|dir| found.strip_prefix(dir).ok())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| found.clone());
        let target = Path::new(dest).join(rel);
        if tree.root.join(&found).is_dir() {
            job.tree(&found, &target, &base)?;
        } else {
            job.file(&found, &target)?;
        }
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Strategy {
    Overwrite,
    Merge,
}

/// A copy operation's source root, staging directory, excludes and strategy.
struct Job<'a> {
    root: &'a Path,
    staging: &'a Path,
    exclude: &'a [String],
    strategy: Strategy,
}

impl Job<'_> {
    /// Directory `src` (relative to the source root) into `dest`, whole but excluded paths.
    fn tree(&self, src: &Path, dest: &Path, base: &Path) -> Result<(), String> {
        fs::create_dir_all(self.staging.join(dest)).map_err(|e| e.to_string())?;
        let mut entries: Vec<_> = fs::read_dir(self.root.join(src))
            .map_err(|e| format!("cannot read {}: {e}", src.display()))?
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        entries.sort();
        for name in entries {
            let path = src.join(&name);
            if name == ".git" || excluded(&path, base, self.exclude) {
                continue;
            }
            if self.root.join(&path).is_dir() {
                self.tree(&path, &dest.join(&name), base)?;
            } else {
                self.copy_file(&path, &dest.join(&name))?;
            }
        }
        Ok(())
    }

    /// File `src` to `dest`, merged into what is there with the Merge strategy.
    fn file(&self, src: &Path, dest: &Path) -> Result<(), String> {
        let target = self.staging.join(dest);
        if self.strategy == Strategy::Merge && target.is_file() {
            let merged = crate::helm::values::merge_maps(
                &read_yaml(&target, dest)?,
                &read_yaml(&self.source(src)?, src)?,
            );
            let text = crate::yaml::to_yaml(&merged);
            return fs::write(&target, text).map_err(|e| e.to_string());
        }
        self.copy_file(src, dest)
    }

    fn copy_file(&self, src: &Path, dest: &Path) -> Result<(), String> {
        let from = self.source(src)?;
        let target = self.staging.join(dest);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        fs::copy(&from, &target)
            .map(|_| ())
            .map_err(|e| format!("cannot copy {}: {e}", src.display()))
    }

    /// The file `src` names in the source tree; a symlink only to a file inside the tree.
    fn source(&self, src: &Path) -> Result<PathBuf, String> {
        let full = self.root.join(src);
        let inside = match (full.canonicalize(), self.root.canonicalize()) {
            (Ok(target), Ok(root)) => target.starts_with(root),
            _ => false,
        };
        if !inside {
            return Err(format!(
                "{} leads outside the source (a symlink)",
                src.display()
            ));
        }
        Ok(full)
    }
}

/// Every YAML document of `path` merged into one map, as source-watcher reads a file to merge.
fn read_yaml(path: &Path, label: &Path) -> Result<Value, String> {
    let text =
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", label.display()))?;
    let (docs, problems) = crate::yaml::parse_file(label, &text);
    if let Some(problem) = problems.first() {
        return Err(problem.message.clone());
    }
    let mut merged = Value::Object(serde_json::Map::new());
    for doc in docs {
        if !doc.value.is_object() {
            return Err(format!(
                "{} is not a YAML map, which the Merge strategy merges",
                label.display()
            ));
        }
        merged = crate::helm::values::merge_maps(&merged, &doc.value);
    }
    Ok(merged)
}

fn leaves(path: &str) -> bool {
    path.split('/').any(|p| p == "..")
}

fn normalize(path: &str) -> PathBuf {
    crate::source::paths::normalize(Path::new(path.trim_end_matches('/')))
}

/// The pattern's elements before the first that holds a glob character (`.` for none).
fn literal_prefix(pattern: &str) -> PathBuf {
    let literal: Vec<&str> = pattern
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .take_while(|p| !p.contains(['*', '?', '[', ']']))
        .collect();
    if literal.is_empty() {
        PathBuf::from(".")
    } else {
        literal.iter().collect()
    }
}

/// Whether `path` (relative to the source) is excluded: as it is, relative to `base`, and
/// by its file name for a pattern without `/`.
fn excluded(path: &Path, base: &Path, exclude: &[String]) -> bool {
    let as_text = |p: &Path| p.to_string_lossy().replace('\\', "/");
    let full = as_text(path);
    let relative = (base != Path::new("."))
        .then(|| path.strip_prefix(base).ok().map(as_text))
        .flatten();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    exclude.iter().any(|pattern| {
        doublestar(pattern, &full)
            || relative
                .as_deref()
                .is_some_and(|r| !r.is_empty() && doublestar(pattern, r))
            || (!pattern.contains('/') && doublestar(pattern, &name))
    })
}

/// bmatcuk/doublestar's match: `**` as a whole element matches any number of elements, other
/// elements as Go's `path.Match`.
fn doublestar(pattern: &str, path: &str) -> bool {
    fn go(p: &[&str], n: &[&str]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some(&"**") => (0..=n.len()).any(|i| go(&p[1..], &n[i..])),
            Some(element) => n
                .first()
                .is_some_and(|name| element_match(element, name) && go(&p[1..], &n[1..])),
        }
    }
    let p: Vec<&str> = pattern.split('/').collect();
    let n: Vec<&str> = path.split('/').collect();
    go(&p, &n)
}

/// Go's `fs.Glob` over `root`: the matching paths, relative to it, in order.
fn glob(root: &Path, pattern: &str) -> Result<Vec<PathBuf>, String> {
    let elements: Vec<&str> = pattern
        .split('/')
        .filter(|e| !e.is_empty() && *e != ".")
        .collect();
    let mut found = vec![PathBuf::new()];
    for element in elements {
        let mut next = Vec::new();
        for dir in &found {
            if !element.contains(['*', '?', '[', '\\']) {
                if root.join(dir).join(element).exists() {
                    next.push(dir.join(element));
                }
                continue;
            }
            let Ok(entries) = fs::read_dir(root.join(dir)) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            for name in names {
                if name != ".git" && element_match(element, &name) {
                    next.push(dir.join(name));
                }
            }
        }
        found = next;
    }
    Ok(found
        .into_iter()
        .filter(|p| !p.as_os_str().is_empty())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doublestar_crosses_elements_only_as_a_whole_element() {
        assert!(doublestar("**/*.md", "a/b/c.md"));
        assert!(doublestar("**/*.md", "c.md"));
        assert!(!doublestar("*.md", "a/c.md"));
        assert!(doublestar("tests/**", "tests/a/b"));
    }

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let full = dir.path().join(path);
            fs::create_dir_all(full.parent().unwrap()).unwrap();
            fs::write(full, text).unwrap();
        }
        dir
    }

    fn run(source: &Path, ops: Value) -> Result<BTreeMap<String, String>, String> {
        let mut aliases = BTreeMap::new();
        aliases.insert(
            "repo".to_string(),
            Tree {
                root: source.to_path_buf(),
                revision: None,
                is_checkout: true,
                _staging: None,
            },
        );
        let staging = tempfile::tempdir().unwrap();
        for op in ops.as_array().unwrap() {
            copy(op, &aliases, staging.path())?;
        }
        let mut out = BTreeMap::new();
        for entry in walkdir(staging.path(), staging.path()) {
            out.insert(entry.0, entry.1);
        }
        Ok(out)
    }

    fn walkdir(root: &Path, dir: &Path) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(walkdir(root, &path));
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, fs::read_to_string(&path).unwrap()));
            }
        }
        out
    }

    #[test]
    fn copies_follow_source_watchers_cp_rules() {
        let src = tree(&[
            ("apps/base/podinfo/release.yaml", "r"),
            ("apps/base/podinfo/README.md", "doc"),
            ("apps/staging/kustomization.yaml", "k"),
            ("infra/a.yaml", "a"),
            ("values.yaml", "a: {b: 1, c: [1]}\n"),
            ("over.yaml", "a: {c: [2], d: 3}\n"),
        ]);
        let out = run(
            src.path(),
            json!([
                {"from": "@repo/apps/base/**", "to": "@artifact/base/", "exclude": ["*.md"]},
                {"from": "@repo/apps/staging/**", "to": "@artifact/staging/"},
                {"from": "@repo/infra", "to": "@artifact/"},
                {"from": "@repo/values.yaml", "to": "@artifact/v/"},
                {"from": "@repo/over.yaml", "to": "@artifact/v/values.yaml", "strategy": "Merge"},
                {"from": "@repo/infra/*.yaml", "to": "@artifact/kept/"}
            ]),
        )
        .unwrap();
        let names: Vec<&str> = out.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "base/podinfo/release.yaml",
                "infra/a.yaml",
                "kept/infra/a.yaml",
                "staging/kustomization.yaml",
                "v/values.yaml"
            ]
        );
        let merged = crate::yaml::parse_value(&out["v/values.yaml"]).unwrap();
        assert_eq!(merged, json!({"a": {"b": 1, "c": [2], "d": 3}}));
    }

    #[test]
    fn bad_operations_are_refused_with_the_reason() {
        let src = tree(&[("a/x.yaml", "x")]);
        let err = |ops| run(src.path(), ops).unwrap_err();
        assert!(err(json!([{"from": "@repo/b/*", "to": "@artifact/"}])).contains("no files match"));
        assert!(err(json!([{"from": "@other/a", "to": "@artifact/"}]))
            .contains("no source has the alias"));
        assert!(
            err(json!([{"from": "@repo/a/*", "to": "@artifact/", "exclude": ["*.yaml"]}]))
                .contains("were excluded")
        );
        assert!(err(json!([{"from": "@repo/../x", "to": "@artifact/"}])).contains("climb out"));
        assert!(err(json!([{"from": "@repo/a", "to": "x/"}])).contains("@artifact/"));
    }
}
