//! Charts from HTTP(S) chart repositories (`spec.repository`, `spec.name`, `spec.version`):
//! the repository's `index.yaml` read, the highest version that satisfies `spec.version` (a
//! semver range, as Helm reads it) chosen, its archive downloaded, its digest checked, and
//! kept in the cache directory under its digest, so a chart version is downloaded once.

use super::{archive, http, load_files, named_docs};
use crate::helm::chart::RemoteChart;
use crate::helm::funcs::{semver_compare, semver_order};
use crate::problem::Problem;
use crate::source::SourceFile;
use sha2::Digest;
use std::collections::BTreeMap;
use std::path::Path;

/// Every chart the `HelmChart`s of `files` name by repository, fetched: by
/// [`crate::helm::chart::remote_key`]; a chart that could not be fetched is a problem at
/// its HelmChart (and its entry an `Err`, so render does not report it again).
pub fn fetch_all(
    files: &[SourceFile],
    cache_dir: &Path,
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, Result<RemoteChart, ()>> {
    let mut out = BTreeMap::new();
    for file in files.iter().filter(|f| f.text.contains("repository")) {
        for doc in named_docs(file) {
            let spec = doc.value.get("spec");
            let field = |k: &str| spec.and_then(|s| s.get(k)).and_then(|v| v.as_str());
            let (Some(repository), Some(name), Some(version)) =
                (field("repository"), field("name"), field("version"))
            else {
                continue; // refused by the kind's own checks
            };
            let authority = repository
                .split("://")
                .nth(1)
                .unwrap_or("")
                .split('/')
                .next();
            if !(repository.starts_with("http://") || repository.starts_with("https://"))
                || authority.is_some_and(|a| a.contains('@'))
            {
                continue; // oci://, credentials and others: refused by the kind's own checks
            }
            let key = crate::helm::chart::remote_key(repository, name, version);
            if out.contains_key(&key) {
                continue;
            }
            let line = doc.line_of(&["spec".to_string(), "repository".to_string()]);
            let fetched = fetch(repository, name, version, cache_dir).map_err(|why| {
                problems.push(Problem::new(&file.path, line, why));
            });
            out.insert(key, fetched);
        }
    }
    out
}

/// A repository URL as messages show it (no credentials).
pub fn shown(repository: &str) -> String {
    http::redact(repository)
}

fn fetch(
    repository: &str,
    name: &str,
    version: &str,
    cache_dir: &Path,
) -> Result<RemoteChart, String> {
    let shown = http::redact(repository);
    let index_url = format!("{}/index.yaml", repository.trim_end_matches('/'));
    let index = http::get(&index_url).map_err(|e| {
        format!("cannot read the chart repository's index.yaml: {e}; check spec.repository")
    })?;
    let index = crate::yaml::parse_value(&String::from_utf8_lossy(&index)).ok_or_else(|| {
        format!("{shown}/index.yaml is not valid YAML; is spec.repository a Helm chart repository?")
    })?;
    let entries = index
        .pointer(&format!(
            "/entries/{}",
            name.replace('~', "~0").replace('/', "~1")
        ))
        .and_then(|e| e.as_array())
        .ok_or_else(|| {
            format!("the chart repository {shown} has no chart named {name:?}; check spec.name")
        })?;
    if semver_compare(version, "0.0.0").is_err() {
        return Err(format!(
            "spec.version {version:?} is not a version or semver range; write e.g. 1.2.3 or ^1.2.0"
        ));
    }
    let mut best: Option<&serde_json::Value> = None;
    for entry in entries {
        let Some(v) = entry.get("version").and_then(|v| v.as_str()) else {
            continue;
        };
        // Entries whose version is not semver are skipped, as Helm skips them.
        if !semver_compare(version, v).unwrap_or(false) {
            continue;
        }
        let better = best
            .and_then(|b| b.get("version").and_then(|x| x.as_str()))
            .is_none_or(|b| semver_order(v, b) == Some(std::cmp::Ordering::Greater));
        if better {
            best = Some(entry);
        }
    }
    let entry = best.ok_or_else(|| {
        let mut known: Vec<&str> = entries
            .iter()
            .filter_map(|e| e.get("version").and_then(|v| v.as_str()))
            .collect();
        known.truncate(10);
        format!(
            "no version of {name} in {shown} satisfies spec.version {version:?} (it has {})",
            known.join(", ")
        )
    })?;
    let resolved = entry
        .get("version")
        .and_then(|v| v.as_str())
        .unwrap_or("")
        .to_string();
    let digest = entry
        .get("digest")
        .and_then(|d| d.as_str())
        .map(|d| d.trim_start_matches("sha256:").to_ascii_lowercase())
        .filter(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| format!("{name} {resolved} in {shown}/index.yaml has no sha256 digest; tend only installs archives it can check"))?;
    let url = entry
        .get("urls")
        .and_then(|u| u.as_array())
        .and_then(|u| u.first())
        .and_then(|u| u.as_str())
        .ok_or_else(|| format!("{name} {resolved} in {shown}/index.yaml has no download URL"))?;
    let cached = cache_dir.join("helm").join(format!("{digest}.tgz"));
    let bytes = match std::fs::read(&cached) {
        Ok(bytes) if hex::encode(sha2::Sha256::digest(&bytes)) == digest => bytes,
        _ => {
            let url = http::resolve(&index_url, url);
            let bytes =
                http::get(&url).map_err(|e| format!("cannot download {name} {resolved}: {e}"))?;
            let got = hex::encode(sha2::Sha256::digest(&bytes));
            if got != digest {
                return Err(format!(
                    "the archive of {name} {resolved} from {shown} has digest sha256:{got}, not the sha256:{digest} its index.yaml gives; refusing it (a changed or corrupted chart)"
                ));
            }
            // The cache is an optimisation: a read-only cache directory costs a download.
            if std::fs::create_dir_all(cached.parent().unwrap_or(cache_dir)).is_ok() {
                let partial = cached.with_extension("tgz.partial");
                if std::fs::write(&partial, &bytes).is_ok() {
                    let _ = std::fs::rename(&partial, &cached);
                }
            }
            bytes
        }
    };
    let files = archive::files(&bytes)
        .map_err(|e| format!("cannot read the archive of {name} {resolved}: {e}"))?;
    let origin = Path::new(&format!("{name}-{resolved}.tgz")).to_path_buf();
    let chart = load_files(files, &origin).map_err(|p| p.to_string())?;
    Ok(RemoteChart {
        chart,
        version: resolved,
        digest: format!("sha256:{digest}"),
    })
}
