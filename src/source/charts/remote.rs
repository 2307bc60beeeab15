//! Charts from HTTP(S) chart repositories (`spec.repository`, `spec.name`, `spec.version`):
//! the repository's `index.yaml` read, the highest version that satisfies `spec.version` (a
//! semver range, as Helm reads it) chosen, its archive downloaded, its digest checked, and
//! kept in the cache directory under its digest, so a chart version is downloaded once.
//! `oci://` repositories are handed to [`super::oci`].

use super::credentials::Credentials;
use super::{archive, http, oci};
use crate::helm::chart::RemoteChart;
use crate::helm::funcs::{semver_compare, semver_order};
use crate::problem::Problem;
use std::collections::BTreeMap;
use std::path::Path;

/// Every chart the `HelmChart`s of `files` name by repository, fetched: by
/// [`crate::helm::chart::remote_key`]; a chart that could not be fetched is a problem at
/// its HelmChart (and its entry an `Err`, so render does not report it again).
pub fn fetch_all(
    helm_chart_docs: &BTreeMap<std::path::PathBuf, Vec<crate::yaml::Document>>,
    cache_dir: &Path,
    credentials: &Credentials,
    trusted: &crate::source::verify::TrustedKeys,
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, Result<RemoteChart, ()>> {
    let mut out: BTreeMap<String, Result<RemoteChart, ()>> = BTreeMap::new();
    for (path, docs) in helm_chart_docs {
        for doc in docs {
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
            let scheme = repository.split("://").next().unwrap_or("");
            if !matches!(scheme, "http" | "https" | "oci")
                || authority.is_some_and(|a| a.contains('@'))
            {
                continue; // credentials in the URL and others: refused by the kind's own checks
            }
            let verify = spec.and_then(|s| s.get("verify")).is_some();
            let key = crate::helm::chart::remote_key(repository, name, version);
            // The same chart twice: fetched once, but checked if either asks for it.
            match out.get(&key) {
                Some(Ok(chart)) if !verify || chart.signed_by.is_some() => continue,
                Some(Err(())) => continue,
                _ => {}
            }
            let line = doc.line_of(&["spec".to_string(), "repository".to_string()]);
            let fetched = if scheme == "oci" {
                oci::fetch(
                    repository,
                    name,
                    version,
                    cache_dir,
                    credentials,
                    verify.then_some(trusted),
                )
            } else {
                fetch(repository, name, version, cache_dir, credentials)
            };
            let fetched = fetched.map_err(|why| {
                problems.push(Problem::new(path, line, why));
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

/// The `Authorization` header for `url`: the login for its host, when that is the host of
/// `repository_url` and there is one.
fn auth_for(
    url: &str,
    repository_url: &str,
    credentials: &Credentials,
) -> Vec<(&'static str, String)> {
    let host = http::authority(url);
    match credentials.for_host(&host) {
        Some(login) if host == http::authority(repository_url) => {
            vec![("Authorization", login.basic())]
        }
        _ => Vec::new(),
    }
}

pub(super) fn fetch(
    repository: &str,
    name: &str,
    version: &str,
    cache_dir: &Path,
    credentials: &Credentials,
) -> Result<RemoteChart, String> {
    let shown = http::redact(repository);
    let index_url = format!("{}/index.yaml", repository.trim_end_matches('/'));
    let headers = auth_for(&index_url, &index_url, credentials);
    let reply = http::send(&index_url, &headers).map_err(|e| {
        format!("cannot read the chart repository's index.yaml: {e}; check spec.repository")
    })?;
    let index = match reply.status {
        200 => reply.body,
        401 | 403 => return Err(credentials.refused(&index_url, reply.status)),
        status => {
            return Err(format!(
                "cannot read the chart repository's index.yaml: HTTP {status} from {shown}/index.yaml; check spec.repository"
            ))
        }
    };
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
    let url = http::resolve(&index_url, url);
    // Helm passes a repository's credentials to its own host only (no --pass-credentials).
    let headers = auth_for(&url, &index_url, credentials);
    let bytes = archive::cached(
        cache_dir,
        &digest,
        &format!("{name} {resolved} from {shown}"),
        "its index.yaml gives",
        || http::get(&url, &headers).map_err(|e| format!("cannot download {name} {resolved}: {e}")),
    )?;
    super::chart_of(
        &bytes,
        &format!("{name} {resolved}"),
        name,
        resolved,
        &digest,
    )
}
