//! Several directories of one repository read as one desired state (a Fleet cluster's
//! `paths`): each is walked on its own (its `.tendignore`, its kustomize builds, its charts),
//! and everything it yields is labelled by the directory's path in the repository, so every
//! label is unique and a `HelmChart`'s chart and values files still resolve beside it.

use super::walk::{walk_with, Walked};
use super::{Checkout, SourceError};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Walk `paths` (relative to the checkout's root; the first is `checkout.dir`) into one
/// [`Walked`].
pub fn walk_paths(checkout: &Checkout, paths: &[PathBuf]) -> Result<Walked, crate::Error> {
    let mut out = Walked::default();
    for path in paths {
        let dir = checked(checkout, path)?;
        let walked = walk_with(&dir, &checkout.kustomize).map_err(|source| crate::Error::Walk {
            path: dir.clone(),
            source,
        })?;
        merge(&mut out, walked, path);
    }
    Ok(out)
}

/// `path` inside the repository and a directory there, as `--path` is checked.
fn checked(checkout: &Checkout, path: &Path) -> Result<PathBuf, SourceError> {
    let inside = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside {
        return Err(SourceError::BadPath(path.to_path_buf()));
    }
    let dir = checkout.root.join(path);
    if !dir.is_dir() {
        return Err(SourceError::MissingPath {
            path: path.to_path_buf(),
            repo: checkout.description.clone(),
        });
    }
    Ok(dir)
}

/// Add `walked` to `out`, each label under `prefix`.
fn merge(out: &mut Walked, walked: Walked, prefix: &Path) {
    let under = |p: &Path| super::paths::normalize(&prefix.join(p));
    let keys = |map: BTreeMap<PathBuf, String>| -> Vec<(PathBuf, String)> {
        map.into_iter().map(|(k, v)| (under(&k), v)).collect()
    };
    for mut file in walked.files {
        file.path = under(&file.path);
        file.unit = file.unit.map(|unit| under(&unit));
        out.files.push(file);
    }
    let charts = walked.charts;
    out.charts
        .dirs
        .extend(charts.dirs.into_iter().map(|(k, v)| (under(&k), v)));
    out.charts.values_files.extend(keys(charts.values_files));
    out.charts
        .unreadable_values_files
        .extend(keys(charts.unreadable_values_files));
    out.charts.helm_chart_docs.extend(
        charts
            .helm_chart_docs
            .into_iter()
            .map(|(k, v)| (under(&k), v)),
    );
    out.charts.remote.extend(charts.remote);
    out.charts
        .unread
        .extend(charts.unread.into_iter().map(|(k, v)| (under(&k), v)));
    for mut problem in walked.problems {
        if problem.file.is_relative() {
            problem.file = under(&problem.file);
        }
        out.problems.push(problem);
    }
    out.namespaces
        .extend(walked.namespaces.into_iter().map(|(k, v)| (under(&k), v)));
}
