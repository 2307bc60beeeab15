//! Dependencies a chart's `Chart.yaml` (or v1 `requirements.yaml`) names but its `charts/`
//! lacks, fetched as Argo CD's repo server has `helm dependency build` fetch them when a
//! render finds them missing (argo-cd `reposerver/repository/repository.go` runHelmBuild;
//! helm/helm `pkg/downloader/manager.go` Build):
//!
//! - with a lock file (`Chart.lock`, v1 `requirements.lock`), its digest must match the
//!   dependencies (Helm's `HashReq`, or `HashV2Req` for a v1 chart locked by Helm 2), else the
//!   lock is out of sync: an error; the versions fetched are the locked ones;
//! - without one, each dependency's `version` range is resolved against its repository;
//! - `repository:` an HTTP(S) chart repository (its `index.yaml`), `oci://` a registry, or
//!   `file://` a chart directory relative to the chart (inside the repository, its version
//!   within the range); `@name` and `alias:name` the URL of an Argo CD repository Secret of
//!   that name in the desired state (`argocd.argoproj.io/secret-type: repository`).
//!
//! Archives are kept in the cache directory as every chart is (`helm/<digest>.tgz`). Unlike
//! `helm dependency build`, the subcharts already in `charts/` stay as they are: only the
//! missing ones are added.

use super::credentials::Credentials;
use super::{oci, remote};
use crate::helm::chart::Chart;
use crate::helm::funcs::semver_compare;
use crate::source::SourceFile;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a chart's dependencies come from.
pub struct Fetch<'a> {
    pub cache_dir: &'a Path,
    pub credentials: &'a Credentials,
    /// Argo CD repository names (`@name`, `alias:name`) and their URLs.
    pub repositories: &'a BTreeMap<String, String>,
    /// No `file://` dependency may be read above this directory.
    pub boundary: &'a Path,
}

/// The names of the dependencies `chart` names that its `charts/` lacks.
pub fn missing(chart: &Chart) -> Vec<String> {
    requirements(chart)
        .iter()
        .filter_map(|r| r.get("name").and_then(Value::as_str))
        .filter(|name| !chart.dependencies.iter().any(|d| d.name() == *name))
        .map(str::to_string)
        .collect()
}

/// Add `chart`'s missing dependencies (its directory is `dir`, shown as `shown`). Returns a
/// line per dependency fetched, or what stopped it, with the way out.
pub fn fill(chart: &mut Chart, dir: &Path, fetch: &Fetch) -> Result<Vec<String>, String> {
    let missing = missing(chart);
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let reqs = requirements(chart);
    let v1 = chart.metadata.get("apiVersion").and_then(Value::as_str) == Some("v1");
    let lock_name = if v1 && chart.files.contains_key("requirements.lock") {
        "requirements.lock"
    } else {
        "Chart.lock"
    };
    let lock = match chart.files.get(lock_name) {
        Some(text) => Some(crate::yaml::parse_value(text).ok_or_else(|| {
            format!("{lock_name} is not valid YAML; run `helm dependency update` and commit it")
        })?),
        None => None,
    };
    let resolved: Vec<Value> = reqs
        .iter()
        .map(|r| resolve_alias(r, fetch.repositories))
        .collect::<Result<_, _>>()?;
    if let Some(lock) = &lock {
        check_lock(&reqs, &resolved, lock, lock_name, v1)?;
    }
    let mut notes = Vec::new();
    for name in &missing {
        let Some(req) = resolved
            .iter()
            .find(|r| r.get("name").and_then(Value::as_str) == Some(name))
        else {
            continue;
        };
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let locked = lock.as_ref().and_then(|l| {
            l.get("dependencies")?
                .as_array()?
                .iter()
                .find(|d| d.get("name").and_then(Value::as_str) == Some(name))
        });
        let version = match locked {
            Some(entry) => text(entry, "version"),
            None => text(req, "version"),
        };
        let repository = text(req, "repository");
        let fetched = dependency(name, &repository, &version, dir, fetch)
            .map_err(|why| format!("dependency {name} ({}): {why}", shown(&repository)))?;
        notes.push(format!(
            "dependency {name} {} from {}",
            fetched.1,
            shown(&repository)
        ));
        chart.dependencies.push(fetched.0);
    }
    Ok(notes)
}

fn shown(repository: &str) -> String {
    remote::shown(repository)
}

/// One dependency: the chart, and the version it is.
fn dependency(
    name: &str,
    repository: &str,
    version: &str,
    dir: &Path,
    fetch: &Fetch,
) -> Result<(Chart, String), String> {
    if let Some(path) = repository.strip_prefix("file://") {
        return local(name, path, version, dir, fetch.boundary);
    }
    if version.trim().is_empty() {
        return Err("no version; give the dependency a version or range in Chart.yaml".into());
    }
    let scheme = repository.split("://").next().unwrap_or("");
    let remote = match scheme {
        "oci" => oci::fetch(
            repository,
            name,
            version,
            fetch.cache_dir,
            fetch.credentials,
            None,
        )?,
        "http" | "https" => {
            remote::fetch(repository, name, version, fetch.cache_dir, fetch.credentials)?
        }
        _ if repository.is_empty() => {
            return Err("it is not in charts/ and names no repository; vendor it into charts/ or give its repository in Chart.yaml".into())
        }
        _ => {
            return Err(
                "the repository is neither https://, oci:// nor file://; write its URL".into(),
            )
        }
    };
    Ok((remote.chart, remote.version))
}

/// A `file://` dependency: a chart directory relative to the chart's.
fn local(
    name: &str,
    path: &str,
    version: &str,
    dir: &Path,
    boundary: &Path,
) -> Result<(Chart, String), String> {
    let target = dir.join(path);
    let real = target
        .canonicalize()
        .map_err(|_| format!("directory {path} not found next to the chart"))?;
    let inside = boundary
        .canonicalize()
        .is_ok_and(|boundary| real.starts_with(boundary));
    if !inside {
        return Err(format!(
            "{path} is outside the repository; keep the dependency's chart inside it"
        ));
    }
    let rel = PathBuf::from(format!("{} (file://{path})", dir.display()));
    let chart = super::read_chart(&real, &real, &rel).map_err(|p| p.to_string())?;
    let found = chart
        .metadata
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if chart.name() != name {
        return Err(format!(
            "the chart at {path} is named {:?}, not {name:?}",
            chart.name()
        ));
    }
    if !version.trim().is_empty() && !semver_compare(version, &found).unwrap_or(false) {
        return Err(format!(
            "the chart at {path} is version {found}, which is not within {version:?}; change one of them"
        ));
    }
    Ok((chart, found))
}

/// `dependencies` of Chart.yaml, or of requirements.yaml (which Helm reads for v2 too).
fn requirements(chart: &Chart) -> Vec<Value> {
    let from_file = chart
        .files
        .get("requirements.yaml")
        .and_then(|t| crate::yaml::parse_value(t))
        .and_then(|v| v.get("dependencies").cloned());
    from_file
        .or_else(|| chart.metadata.get("dependencies").cloned())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// The dependency with `@name`/`alias:name` replaced by that repository's URL (Helm's
/// resolveRepoNames).
fn resolve_alias(req: &Value, repositories: &BTreeMap<String, String>) -> Result<Value, String> {
    let repository = req.get("repository").and_then(Value::as_str).unwrap_or("");
    let Some(alias) = repository
        .strip_prefix('@')
        .or_else(|| repository.strip_prefix("alias:"))
    else {
        return Ok(req.clone());
    };
    let url = repositories.get(alias).ok_or_else(|| {
        format!(
            "dependency {} names the repository {repository:?}, which no Argo CD repository Secret in the desired state names (argocd.argoproj.io/secret-type: repository, with name {alias:?} and its url); add one, or write the repository's URL in Chart.yaml",
            req.get("name").and_then(Value::as_str).unwrap_or("?")
        )
    })?;
    let mut out = req.clone();
    if let Some(map) = out.as_object_mut() {
        map.insert("repository".into(), json!(url));
    }
    Ok(out)
}

/// Helm's check that the lock file was written for these dependencies.
fn check_lock(
    original: &[Value],
    resolved: &[Value],
    lock: &Value,
    lock_name: &str,
    v1: bool,
) -> Result<(), String> {
    let digest = lock.get("digest").and_then(Value::as_str).unwrap_or("");
    let locked: Vec<Value> = lock
        .get("dependencies")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if hash_req(resolved, &locked) == digest || (v1 && hash_v2_req(original) == digest) {
        return Ok(());
    }
    let file = if lock_name == "Chart.lock" {
        "Chart.yaml"
    } else {
        "requirements.yaml"
    };
    Err(format!(
        "the lock file ({lock_name}) is out of sync with the dependencies file ({file}); run `helm dependency update` in the chart and commit {lock_name}"
    ))
}

/// Helm's `HashReq`: sha256 of Go's JSON of `[req, lock]`.
fn hash_req(req: &[Value], lock: &[Value]) -> String {
    let both = Value::Array(vec![go_dependencies(req), go_dependencies(lock)]);
    digest(&both)
}

/// Helm's `HashV2Req`: sha256 of Go's JSON of `{"dependencies": req}`.
fn hash_v2_req(req: &[Value]) -> String {
    digest(&json!({"dependencies": go_dependencies(req)}))
}

fn digest(value: &Value) -> String {
    use sha2::Digest;
    // Go's encoding/json escapes <, > and & (a range such as ">=1.0 <2" holds them).
    let text = serde_json::to_string(value)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    format!(
        "sha256:{}",
        hex::encode(sha2::Sha256::digest(text.as_bytes()))
    )
}

/// Dependencies as Go marshals `chart.Dependency`: its fields in order, empty ones omitted
/// (but `name` and `repository`), maps with sorted keys.
fn go_dependencies(list: &[Value]) -> Value {
    let dependencies = list
        .iter()
        .map(|dep| {
            let mut out = Map::new();
            let text = |k: &str| dep.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            out.insert("name".into(), json!(text("name")));
            if !text("version").is_empty() {
                out.insert("version".into(), json!(text("version")));
            }
            out.insert("repository".into(), json!(text("repository")));
            if !text("condition").is_empty() {
                out.insert("condition".into(), json!(text("condition")));
            }
            if let Some(tags) = dep
                .get("tags")
                .and_then(Value::as_array)
                .filter(|t| !t.is_empty())
            {
                out.insert("tags".into(), Value::Array(tags.clone()));
            }
            if dep.get("enabled").and_then(Value::as_bool) == Some(true) {
                out.insert("enabled".into(), json!(true));
            }
            if let Some(values) = dep
                .get("import-values")
                .and_then(Value::as_array)
                .filter(|v| !v.is_empty())
            {
                out.insert(
                    "import-values".into(),
                    sorted(&Value::Array(values.clone())),
                );
            }
            if !text("alias").is_empty() {
                out.insert("alias".into(), json!(text("alias")));
            }
            Value::Object(out)
        })
        .collect();
    Value::Array(dependencies)
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Argo CD's repository Secrets in `files` (`argocd.argoproj.io/secret-type: repository`):
/// their `name` and `url`, from `stringData` or `data`.
pub fn argo_repositories(files: &[SourceFile]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for file in files {
        if !file.text.contains("argocd.argoproj.io/secret-type") {
            continue;
        }
        let (docs, _) = crate::yaml::parse_file(&file.path, &file.text);
        for doc in docs {
            let value = &doc.value;
            let kind = value.get("kind").and_then(Value::as_str);
            let secret_type = value
                .pointer("/metadata/labels/argocd.argoproj.io~1secret-type")
                .and_then(Value::as_str);
            if kind != Some("Secret") || secret_type != Some("repository") {
                continue;
            }
            let field = |k: &str| -> Option<String> {
                if let Some(text) = value
                    .pointer(&format!("/stringData/{k}"))
                    .and_then(Value::as_str)
                {
                    return Some(text.to_string());
                }
                let encoded = value
                    .pointer(&format!("/data/{k}"))
                    .and_then(Value::as_str)?;
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(encoded.trim())
                    .ok()?;
                String::from_utf8(bytes).ok()
            };
            if let (Some(name), Some(url)) = (field("name"), field("url")) {
                out.insert(name, url);
            }
        }
    }
    out
}

/// Fill in the missing dependencies of every chart directory a `HelmChart` of `charts`
/// renders (tend's own, and those units made of Argo CD and Flux Helm sources); what cannot
/// be fetched is a problem at the HelmChart's `spec.chart`. `walked` is the walked
/// directory (charts are keyed relative to it, or absolute for units' trees) and `root` the
/// repository's.
pub fn fill_all(
    charts: &mut crate::helm::chart::Charts,
    files: &[SourceFile],
    (walked, root): (&Path, &Path),
    cache_dir: &Path,
    credentials: &Credentials,
    problems: &mut Vec<crate::problem::Problem>,
) {
    let repositories = argo_repositories(files);
    let mut done = std::collections::BTreeSet::new();
    for (file, docs) in &charts.helm_chart_docs {
        for doc in docs {
            let spec = doc.value.get("spec");
            let (Some(chart_dir), None) = (
                spec.and_then(|s| s.get("chart")).and_then(Value::as_str),
                spec.and_then(|s| s.get("repository")),
            ) else {
                continue;
            };
            let key = crate::source::paths::normalize(
                &file.parent().unwrap_or(Path::new("")).join(chart_dir),
            );
            // A chart known by its stamps only was whole, its dependencies all in `charts/`,
            // when a run hashed it with these stamps (`run::load` reads any other whole).
            if charts.unread.contains_key(&key) {
                continue;
            }
            let Some(chart) = charts.dirs.get_mut(&key) else {
                continue; // render names what is wrong with the path
            };
            if !done.insert(key.clone()) || missing(chart).is_empty() {
                continue;
            }
            let (dir, boundary) = if key.is_absolute() {
                let boundary = if key.starts_with(root) {
                    root
                } else {
                    cache_dir
                };
                (key.clone(), boundary)
            } else {
                (walked.join(&key), root)
            };
            let fetch = Fetch {
                cache_dir,
                credentials,
                repositories: &repositories,
                boundary,
            };
            match fill(chart, &dir, &fetch) {
                Ok(notes) => {
                    for note in notes {
                        tracing::info!("chart {}: {note}", key.display());
                    }
                }
                Err(why) => {
                    let line = doc.line_of(&["spec".to_string(), "chart".to_string()]);
                    problems.push(crate::problem::Problem::new(
                        file,
                        line,
                        format!("chart {}: {why}", chart.name()),
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helm_2_and_helm_3_lock_digests_are_computed_as_helm_does() {
        // wordpress 9.0.3's requirements.lock, written by Helm 2.
        let req = vec![json!({
            "name": "mariadb", "version": "7.x.x",
            "repository": "https://kubernetes-charts.storage.googleapis.com/",
            "condition": "mariadb.enabled", "tags": ["wordpress-database"],
        })];
        assert_eq!(
            hash_v2_req(&req),
            "sha256:0a5be71f27bb4258b63df284f5006ab452666b4c3125a1c15b8753e71ec8c118"
        );
        let lock = vec![json!({"name": "mariadb", "version": "7.3.12",
            "repository": "https://kubernetes-charts.storage.googleapis.com/"})];
        assert_eq!(
            hash_req(&req, &lock),
            "sha256:3f28d5788a5de6ea45ab46583381147505fea1b5be41d58897e4b8b17184e291"
        );
        // Go escapes < and > in strings.
        let ranged = vec![json!({"name": "a", "version": ">=1.0.0 <2.0.0", "repository": "r"})];
        let expected = {
            use sha2::Digest;
            let text =
                r#"[[{"name":"a","version":"\u003e=1.0.0 \u003c2.0.0","repository":"r"}],[]]"#;
            format!(
                "sha256:{}",
                hex::encode(sha2::Sha256::digest(text.as_bytes()))
            )
        };
        assert_eq!(hash_req(&ranged, &[]), expected);
    }
}
