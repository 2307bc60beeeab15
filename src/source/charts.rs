//! Helm chart directories in the repository (a directory holding `Chart.yaml`): read whole
//! for `HelmChart` objects to render, never walked as manifests (their templates are not
//! YAML until rendered). Read as Helm's loader reads them (helm/helm `pkg/chart/loader`):
//! `.helmignore` applied, `charts/` holding subcharts as directories or `.tgz` archives.
//! Also the values files `HelmChart`s name ([`claim_values_files`]).

mod archive;
pub mod credentials;
pub mod dependencies;
mod helmignore;
mod http;
pub mod oci;
mod proxy;
pub mod remote;
mod validate;

use super::paths::{leaves_root, normalize};
use super::{SourceFile, MAX_FILE_BYTES};
use crate::helm::chart::{Chart, RemoteChart};
use crate::problem::Problem;
use crate::yaml::{self, Step};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The file that makes a directory a chart.
pub const CHART_FILE: &str = "Chart.yaml";

/// A file of a chart: its path inside the chart (`/`-separated) and bytes.
type ChartFile = (String, Vec<u8>);

/// Most bytes one chart may unpack to, its subcharts and the archives within archives
/// included (each archive alone stops at 64 MiB; a chart is kilobytes).
pub const MAX_TREE_BYTES: u64 = 256 * 1024 * 1024;
/// Most files one chart may hold, subcharts included (the largest public charts hold a few
/// thousand).
pub const MAX_TREE_FILES: usize = 50_000;
/// Deepest nesting of subcharts (`charts/a/charts/b/...`, archives within archives).
pub const MAX_TREE_DEPTH: usize = 20;

/// What is left of one chart tree's budget while its files are loaded.
struct TreeBudget {
    bytes: u64,
    files: usize,
}

impl TreeBudget {
    fn new() -> TreeBudget {
        TreeBudget {
            bytes: MAX_TREE_BYTES,
            files: MAX_TREE_FILES,
        }
    }

    /// Takes `files` for one chart of the tree.
    fn take<'f>(
        &mut self,
        files: impl IntoIterator<Item = &'f ChartFile>,
        origin: &Path,
    ) -> Result<(), Problem> {
        let (count, bytes) = files
            .into_iter()
            .fold((0, 0u64), |(n, b), (_, f)| (n + 1, b + f.len() as u64));
        if count > self.files {
            return Err(Problem::new(origin, 1, format!("the chart and its subcharts hold more than {MAX_TREE_FILES} files in all; a chart is a few thousand files at most")));
        }
        if bytes > self.bytes {
            return Err(Problem::new(origin, 1, format!("the chart and its subcharts unpack to more than the budget of the whole chart tree, {MAX_TREE_BYTES} bytes (archives within archives?); a chart is kilobytes")));
        }
        self.files -= count;
        self.bytes -= bytes;
        Ok(())
    }
}

/// Reads the chart in `dir` (`rel` to the repository root, for messages).
pub fn read_chart(root: &Path, dir: &Path, rel: &Path) -> Result<Chart, Problem> {
    let (read, read_at) = read_tree(root, dir, rel, DirRead::default())?;
    let mut chart = load_files(read.files, rel, &mut TreeBudget::new(), 0)?;
    chart.on_disk = read.stamps.map(|mut stamps| {
        stamps.sort();
        on_disk(&stamps, chart.dependencies.len(), read_at)
    });
    Ok(chart)
}

/// The chart in `dir` known by its files' stamps alone: its `Chart.yaml` read, no other
/// file (a chart's files are megabytes; a kept render of it needs only its digest, which
/// the stamps recall, see [`crate::helm::chart::OnDisk`]). `None` when the chart cannot be
/// known so (a symlink, files written in the last moments, anything [`read_chart`] would
/// refuse): read it whole. The caller reads it whole too when the render needs its files.
pub fn stamp_chart(root: &Path, dir: &Path, rel: &Path) -> Option<Chart> {
    let only_stamps = DirRead {
        only_stamps: true,
        ..DirRead::default()
    };
    let (read, read_at) = read_tree(root, dir, rel, only_stamps).ok()?;
    let mut stamps = read.stamps?;
    stamps.sort();
    let subcharts: BTreeSet<&str> = stamps
        .iter()
        .filter_map(|(name, _)| {
            name.strip_prefix("charts/")
                .filter(|_| !name.ends_with(".prov"))
        })
        .map(|inner| inner.split('/').next().unwrap_or(inner))
        .filter(|key| !key.starts_with(['_', '.']))
        .collect();
    let on_disk = on_disk(&stamps, subcharts.len(), read_at);
    if !on_disk.settled {
        return None;
    }
    let text = fs::read_to_string(dir.join(CHART_FILE)).ok()?;
    let metadata = yaml::parse_value(&text)?;
    let chart = Chart {
        metadata,
        on_disk: Some(on_disk),
        ..Chart::default()
    };
    let valid = !chart.name().is_empty() && validate::metadata(&chart.metadata).is_ok();
    valid.then_some(chart)
}

/// The files of the chart tree in `dir` (or only their stamps), and when they were read
/// (ns since the epoch).
fn read_tree(
    root: &Path,
    dir: &Path,
    rel: &Path,
    mut read: DirRead,
) -> Result<(DirRead, i128), Problem> {
    let rules = match fs::read_to_string(dir.join(helmignore::FILE)) {
        Ok(text) => helmignore::Rules::parse(&text)
            .map_err(|(line, e)| Problem::new(rel.join(helmignore::FILE), line, e))?,
        Err(_) => helmignore::Rules::default(),
    };
    let read_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let mut visited = BTreeSet::new();
    read_dir(root, dir, dir, rel, &rules, &mut visited, &mut read)?;
    read.files.sort();
    // Not there is a state too: creating it changes what is read.
    match fs::metadata(dir.join(helmignore::FILE)) {
        Ok(meta) => read.stamp(helmignore::FILE, Some(&meta)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => read.stamp(helmignore::FILE, None),
    }
    Ok((read, read_at))
}

/// How long before a chart is read its files must have last changed for their stamps to
/// be trusted ([`crate::helm::chart::OnDisk::settled`]).
const SETTLED_NS: i128 = 2_000_000_000;

/// What [`read_dir`] read: the chart's files, and the stamps of each (`None` once a symlink
/// or a file without stamps was met: such a chart is hashed whole every run).
struct DirRead {
    files: Vec<ChartFile>,
    stamps: Option<Vec<(String, [i64; 7])>>,
    /// Stamp the files without reading them.
    only_stamps: bool,
}

impl Default for DirRead {
    fn default() -> DirRead {
        DirRead {
            files: Vec::new(),
            stamps: Some(Vec::new()),
            only_stamps: false,
        }
    }
}

impl DirRead {
    /// Note the stamps of the file `name`; a file without them (`None`) leaves the chart
    /// unstamped.
    fn stamp(&mut self, name: &str, meta: Option<&fs::Metadata>) {
        #[cfg(unix)]
        let stamp = meta.map(|m| {
            use std::os::unix::fs::MetadataExt;
            [
                m.dev() as i64,
                m.ino() as i64,
                m.size() as i64,
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            ]
        });
        #[cfg(not(unix))]
        let stamp: Option<[i64; 7]> = None;
        match (self.stamps.as_mut(), stamp) {
            (Some(stamps), Some(stamp)) => stamps.push((name.to_string(), stamp)),
            _ => self.stamps = None,
        }
    }
}

/// The chart as read from disk, by its files' stamps (see [`crate::helm::chart::OnDisk`]).
fn on_disk(
    stamps: &[(String, [i64; 7])],
    dependencies: usize,
    read_at: i128,
) -> crate::helm::chart::OnDisk {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(b"tend chart files by stamps 1\0");
    let mut newest = 0i128;
    for (name, stamp) in stamps {
        hash.update((name.len() as u64).to_le_bytes());
        hash.update(name.as_bytes());
        for field in stamp {
            hash.update(field.to_le_bytes());
        }
        let [.., mtime, mtime_ns, ctime, ctime_ns] = *stamp;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        newest = newest.max(ns(mtime, mtime_ns)).max(ns(ctime, ctime_ns));
    }
    crate::helm::chart::OnDisk {
        stamps: hex::encode(hash.finalize()),
        settled: newest + SETTLED_NS < read_at,
        dependencies,
    }
}

fn read_dir(
    root: &Path,
    chart_dir: &Path,
    dir: &Path,
    rel: &Path,
    rules: &helmignore::Rules,
    visited: &mut BTreeSet<PathBuf>,
    out: &mut DirRead,
) -> Result<(), Problem> {
    // A symlinked directory could loop back; read each real directory once.
    if !visited.insert(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())) {
        return Ok(());
    }
    let entries = fs::read_dir(dir)
        .map_err(|e| Problem::new(rel, 1, format!("cannot read chart directory: {e}")))?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let inside = path.strip_prefix(chart_dir).unwrap_or(&path).to_path_buf();
        let name = inside.to_string_lossy().replace('\\', "/");
        let rel_file = rel.join(&inside);
        // The entry's own type needs no `stat`; a symlink is followed, as `is_dir` does.
        let file_type = entry.file_type().ok();
        let is_link = file_type.is_none_or(|t| t.is_symlink());
        let is_dir = match file_type {
            Some(t) if !t.is_symlink() => t.is_dir(),
            _ => path.is_dir(),
        };
        if rules.ignore(&name, is_dir) {
            continue;
        }
        // A symlink may not lead out of the repository. (Anything else here is inside: its
        // directory is.)
        if is_link && !path.canonicalize().is_ok_and(|t| t.starts_with(root)) {
            return Err(Problem::new(
                &rel_file,
                1,
                "symlink points outside the repository; copy the file into the chart instead",
            ));
        }
        if is_link {
            out.stamps = None;
        }
        if is_dir {
            read_dir(root, chart_dir, &path, rel, rules, visited, out)?;
            continue;
        }
        let meta = fs::metadata(&path);
        out.stamp(&name, meta.as_ref().ok());
        let bytes = match meta {
            // A named pipe, socket or device would block the read or never end.
            Ok(m) if !m.is_file() => {
                return Err(Problem::new(
                    &rel_file,
                    1,
                    "is not a regular file (a named pipe, socket or device); a chart holds only files and directories",
                ))
            }
            Ok(m) if m.len() > MAX_FILE_BYTES => {
                return Err(Problem::new(
                    &rel_file,
                    1,
                    format!("chart file is larger than {MAX_FILE_BYTES} bytes"),
                ))
            }
            _ if out.only_stamps => continue,
            _ => fs::read(&path)
                .map_err(|e| Problem::new(&rel_file, 1, format!("cannot read: {e}")))?,
        };
        out.files.push((name, bytes));
    }
    Ok(())
}

/// The chart in a downloaded archive (its digest checked): `what` names it in errors.
fn chart_of(
    bytes: &[u8],
    what: &str,
    name: &str,
    version: String,
    digest: &str,
) -> Result<RemoteChart, String> {
    let files = archive::files(bytes, MAX_TREE_BYTES)
        .map_err(|e| format!("cannot read the archive of {what}: {e}"))?;
    let origin = Path::new(&format!("{name}-{version}.tgz")).to_path_buf();
    let chart = load_files(files, &origin, &mut TreeBudget::new(), 0).map_err(|p| p.to_string())?;
    Ok(RemoteChart {
        chart,
        version,
        digest: format!("sha256:{digest}"),
        signed_by: None,
    })
}

/// Helm's `LoadFiles`: a chart from its files (paths inside the chart); `origin` names the
/// chart's directory or archive in messages.
fn load_files(
    files: Vec<ChartFile>,
    origin: &Path,
    budget: &mut TreeBudget,
    depth: usize,
) -> Result<Chart, Problem> {
    if depth > MAX_TREE_DEPTH {
        return Err(Problem::new(origin, 1, format!("subcharts nest more than {MAX_TREE_DEPTH} levels deep (charts/ within charts/); no real chart does")));
    }
    budget.take(
        files.iter().filter(|(n, _)| !n.starts_with("charts/")),
        origin,
    )?;
    let mut chart = Chart::default();
    let mut subcharts: BTreeMap<String, Vec<ChartFile>> = BTreeMap::new();
    for (name, bytes) in files {
        if let Some(inner) = name.strip_prefix("charts/") {
            if !name.ends_with(".prov") {
                let key = inner.split('/').next().unwrap_or(inner).to_string();
                subcharts.entry(key).or_default().push((name, bytes));
                continue;
            }
        }
        match name.as_str() {
            CHART_FILE | "values.yaml" => {
                let text = super::walk::utf8_text(
                    &origin.join(&name),
                    bytes,
                    "save it as UTF-8 (Helm's YAML reader refuses it too)",
                )?;
                let value = if text.trim().is_empty() {
                    serde_json::Value::Null
                } else if name == CHART_FILE {
                    yaml::parse_value(&text)
                        .ok_or_else(|| Problem::new(origin.join(&name), 1, "is not valid YAML"))?
                } else {
                    // Values as Helm reads them: YAML 1.1 (`yes` is true, `0644` is 420).
                    yaml::parse_helm_yaml(&text)
                        .map_err(|e| Problem::new(origin.join(&name), 1, e))?
                };
                if name == CHART_FILE {
                    chart.metadata = value;
                } else {
                    chart.values = value;
                }
            }
            _ => {
                // Templates read files as text (moved, not copied); a binary one keeps its
                // bytes for AsSecrets.
                let text = match String::from_utf8(bytes) {
                    Ok(text) => text,
                    Err(not_utf8) => {
                        let bytes = not_utf8.into_bytes();
                        let text = String::from_utf8_lossy(&bytes).into_owned();
                        chart.binary.insert(name.clone(), bytes);
                        text
                    }
                };
                chart.files.insert(name, text);
            }
        }
    }
    if chart.name().is_empty() {
        return Err(Problem::new(
            origin.join(CHART_FILE),
            1,
            "Chart.yaml is missing or has no name; add `name: <chart>`",
        ));
    }
    validate::metadata(&chart.metadata)
        .map_err(|why| Problem::new(origin.join(CHART_FILE), 1, why))?;
    for (key, files) in subcharts {
        if key.starts_with(['_', '.']) {
            continue;
        }
        let at = origin.join("charts").join(&key);
        let sub = if key.ends_with(".tgz") {
            let bytes = files.into_iter().next().map(|(_, b)| b).unwrap_or_default();
            let archive = (key.clone(), bytes);
            budget.take([&archive], &at)?;
            let bytes = archive.1;
            let files = archive::files(&bytes, budget.bytes).map_err(|e| {
                Problem::new(&at, 1, format!("cannot read this chart archive: {e}"))
            })?;
            load_files(files, &at, budget, depth + 1)?
        } else {
            let prefix = format!("charts/{key}/");
            let inner: Vec<ChartFile> = files
                .into_iter()
                .filter_map(|(n, b)| n.strip_prefix(&prefix).map(|n| (n.to_string(), b)))
                .collect();
            if inner.is_empty() {
                return Err(Problem::new(
                    &at,
                    1,
                    "is in charts/ but is not a chart (a directory holding Chart.yaml, or a .tgz archive); move it out of charts/ or list it in .helmignore",
                ));
            }
            load_files(inner, &at, budget, depth + 1)?
        };
        chart.dependencies.push(sub);
    }
    Ok(chart)
}

/// The `HelmChart` documents of a file tend reads (not a kustomize build's output).
/// The `HelmChart` documents of each plain file, none for most (see
/// `Charts::helm_chart_docs`).
pub fn helm_chart_docs(files: &[SourceFile]) -> BTreeMap<PathBuf, Vec<yaml::Document>> {
    files
        .iter()
        .filter(|file| file.unit.is_none())
        .map(|file| (file.path.clone(), named_docs(file)))
        .collect()
}

fn named_docs(file: &SourceFile) -> Vec<yaml::Document> {
    if file.unit.is_some() || !file.text.contains("HelmChart") {
        return Vec::new();
    }
    let (docs, _) =
        crate::source::kustomize_annotations::parse_source(&file.path, &file.text, false);
    docs.into_iter()
        .filter(|doc| {
            doc.value.get("apiVersion").and_then(|v| v.as_str()) == Some(crate::API_VERSION)
                && doc.value.get("kind").and_then(|v| v.as_str()) == Some("HelmChart")
        })
        .collect()
}

/// The values files each `HelmChart` of `files` names, relative to the walked directory
/// (`spec.valuesFiles` is relative to the HelmChart's file), with the line that names each.
pub fn named_values_files(path: &Path, docs: &[yaml::Document]) -> Vec<(PathBuf, usize)> {
    let mut out = Vec::new();
    for doc in docs {
        let Some(list) = doc
            .value
            .pointer("/spec/valuesFiles")
            .and_then(|v| v.as_array())
        else {
            continue;
        };
        for (i, entry) in list.iter().enumerate() {
            if let Some(name) = entry.as_str() {
                let line = doc.line_at(&[
                    Step::Key("spec".into()),
                    Step::Key("valuesFiles".into()),
                    Step::Index(i),
                ]);
                let dir = path.parent().unwrap_or(Path::new(""));
                out.push((normalize(&dir.join(name)), line));
            }
        }
    }
    out
}

/// Reads the values files the `HelmChart`s of `files` name and takes them out of `files`
/// (they are values, not manifests). A file that is not there is reported by render, at
/// the HelmChart that names it.
pub fn claim_values_files(
    root: &Path,
    files: &mut Vec<SourceFile>,
    helm_chart_docs: &BTreeMap<PathBuf, Vec<yaml::Document>>,
    problems: &mut Vec<Problem>,
    unreadable: &mut BTreeMap<PathBuf, String>,
) -> BTreeMap<PathBuf, String> {
    let mut read = BTreeMap::new();
    let named: BTreeSet<PathBuf> = helm_chart_docs
        .iter()
        .flat_map(|(path, docs)| named_values_files(path, docs))
        .map(|(p, _)| p)
        .collect();
    for path in named {
        if leaves_root(&path) {
            continue; // reported by render: outside the repository
        }
        let full = root.join(&path);
        if fs::symlink_metadata(&full).is_err() {
            continue; // not there: render says so at the HelmChart
        }
        let why = match fs::metadata(&full) {
            Ok(meta) if meta.is_file() => None,
            Ok(meta) if meta.is_dir() => Some("it is a directory".to_string()),
            // Opening a named pipe would block until something writes to it.
            Ok(_) => Some("not a regular file (a named pipe, socket or device)".to_string()),
            Err(err) => Some(super::paths::unresolved_symlink(&err).to_string()),
        };
        if let Some(why) = why {
            unreadable.insert(path, why);
            continue;
        }
        if !full.canonicalize().is_ok_and(|t| t.starts_with(root)) {
            problems.push(Problem::new(
                &path,
                1,
                "symlink points outside the repository; copy the values file into the repository instead",
            ));
            continue;
        }
        match fs::metadata(&full) {
            Ok(m) if m.len() > MAX_FILE_BYTES => problems.push(Problem::new(
                &path,
                1,
                format!("values file is larger than {MAX_FILE_BYTES} bytes"),
            )),
            _ => match fs::read(&full) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => {
                        read.insert(path, text);
                    }
                    Err(_) => {
                        unreadable.insert(path, "it is not UTF-8 text (binary or another encoding; Helm's YAML reader refuses it too); save it as UTF-8".to_string());
                    }
                },
                Err(e) => problems.push(Problem::new(&path, 1, format!("cannot read: {e}"))),
            },
        }
    }
    files.retain(|f| !read.contains_key(&f.path));
    // Said once, at the HelmChart naming the file.
    problems.retain(|p| !read.contains_key(&p.file) && !unreadable.contains_key(&p.file));
    read
}

#[cfg(test)]
mod tests {
    use super::archive::tests::{tgz, tgz_bytes};
    use std::path::Path;

    #[test]
    fn archives_in_archives_and_directories_load_as_helm_loads_them() {
        let inner = tgz(&[
            (
                "inner/Chart.yaml",
                "apiVersion: v2\nname: inner\nversion: 1.0.0\n",
            ),
            ("inner/templates/a.yaml", "kind: A\n"),
        ]);
        let outer = tgz_bytes(&[
            (
                "outer/Chart.yaml",
                b"apiVersion: v2\nname: outer\nversion: 2.0.0\n",
            ),
            ("outer/values.yaml", b"x: 1\n"),
            ("outer/charts/inner-1.0.0.tgz", &inner),
            ("outer/charts/_skipped/Chart.yaml", b"name: skipped\n"),
        ]);
        let files = vec![
            (
                "Chart.yaml".to_string(),
                b"apiVersion: v2\nname: top\nversion: 0.1.0\n".to_vec(),
            ),
            ("charts/outer-2.0.0.tgz".to_string(), outer),
            (
                "charts/dir/Chart.yaml".to_string(),
                b"name: dir\nversion: 0.0.1\n".to_vec(),
            ),
            ("charts/dir/files/f.txt".to_string(), b"text".to_vec()),
            ("charts/dir.prov".to_string(), b"signature".to_vec()),
        ];
        let top = super::load_files(
            files,
            Path::new("charts/top"),
            &mut super::TreeBudget::new(),
            0,
        )
        .unwrap();
        let names: Vec<&str> = top.dependencies.iter().map(|d| d.name()).collect();
        assert_eq!(names, ["dir", "outer"]);
        assert!(
            top.files.contains_key("charts/dir.prov"),
            "provenance files are files"
        );
        assert_eq!(top.dependencies[0].files["files/f.txt"], "text");
        let outer = &top.dependencies[1];
        assert_eq!(outer.values, serde_json::json!({"x": 1}));
        let inner: Vec<&str> = outer.dependencies.iter().map(|d| d.name()).collect();
        assert_eq!(inner, ["inner"], "_skipped is not a chart");
        assert!(outer.dependencies[0].files.contains_key("templates/a.yaml"));
    }
}
