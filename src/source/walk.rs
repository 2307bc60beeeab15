//! Walk a desired-state directory: every `*.yaml`/`*.yml` file, skipping hidden entries and
//! `.tendignore` patterns, rejecting symlinks that leave the directory. Reads the files; all
//! parsing happens later in `render`. Kustomize directories are not read file by file but
//! built ([`super::kustomize`]); their output is read like a file.

use super::kustomize::{self, KustomizeOptions, Unit};
use super::{SourceFile, MAX_FILE_BYTES};
use crate::problem::Problem;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The result of a walk: readable files, plus problems with the others.
#[derive(Debug, Default)]
pub struct Walked {
    pub files: Vec<SourceFile>,
    /// Helm chart directories (holding `Chart.yaml`), by their path relative to the walked
    /// directory; not walked for manifests.
    pub charts: crate::helm::chart::Charts,
    pub problems: Vec<Problem>,
    /// The namespace namespaced objects without one get, by file, where a controller's unit
    /// says so (an Argo CD Application's `destination.namespace`); else `--namespace`.
    pub namespaces: std::collections::HashMap<std::path::PathBuf, String>,
}

/// Walk `dir`, building kustomize directories with the builder found on PATH.
#[cfg(test)]
pub fn walk(dir: &Path) -> std::io::Result<Walked> {
    walk_with(dir, &KustomizeOptions::default())
}

/// Walk `dir`. Fails only when `dir` itself cannot be read; problems with single files (and
/// failed kustomize builds) are collected so that all of them are reported at once.
pub fn walk_with(dir: &Path, kustomize: &KustomizeOptions) -> std::io::Result<Walked> {
    let root = dir.canonicalize()?;
    if !root.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("{} is not a directory", dir.display()),
        ));
    }
    let mut walked = Walked::default();
    let ignore = load_tendignore(&root, &mut walked.problems);
    let mut visited = BTreeSet::new();
    visited.insert(root.clone());
    let mut units = Vec::new();
    visit(
        &root,
        &root,
        Path::new(""),
        &ignore,
        &mut visited,
        &mut units,
        &mut walked,
    );
    // Values files of HelmCharts are values, not manifests.
    walked.charts.helm_chart_docs = super::charts::helm_chart_docs(&walked.files);
    walked.charts.values_files = super::charts::claim_values_files(
        &root,
        &mut walked.files,
        &walked.charts.helm_chart_docs,
        &mut walked.problems,
        &mut walked.charts.unreadable_values_files,
    );
    // What a unit refers to outside its own tree is kustomize's to read, not a plain file.
    let claimed: Vec<&PathBuf> = units.iter().flat_map(|u: &Unit| u.refs.iter()).collect();
    let is_claimed = |path: &Path| claimed.iter().any(|c| path.starts_with(c));
    walked.files.retain(|f| !is_claimed(&f.path));
    walked.problems.retain(|p| !is_claimed(&p.file));
    let (build, problems) = kustomize::select(&units);
    walked.problems.extend(problems);
    let boundary = kustomize
        .repository_root
        .as_ref()
        .and_then(|r| r.canonicalize().ok())
        .unwrap_or_else(|| root.clone());
    // Units reading SOPS-encrypted inputs are built from a private, decrypted copy.
    let (mut plain, mut decrypting) = (Vec::new(), Vec::new());
    for unit in build {
        // Every kustomization the build reads, those in directories below a unit included.
        let reached = super::encrypted::reachable_units(&root, unit, &units);
        let outside = super::kustomize_outside::outside_refs(&root, &boundary, &reached);
        if !outside.is_empty() {
            walked.problems.extend(outside);
            continue;
        }
        match super::encrypted::decrypt_for_build(&root, &reached, &kustomize.keys, &unit.file) {
            Ok(files) if files.is_empty() => plain.push(unit),
            Ok(files) => decrypting.push((unit, files)),
            Err(problems) => walked.problems.extend(problems),
        }
    }
    let (built, problems) =
        kustomize::build_all(&root, &plain, kustomize, kustomize::Inputs::AsCommitted);
    walked.files.extend(built);
    walked.problems.extend(problems);
    if !decrypting.is_empty() {
        let (built, problems) = build_decrypted(&root, &decrypting, kustomize);
        let plain: Vec<_> = decrypting
            .iter()
            .flat_map(|(_, f)| f.iter().cloned())
            .collect();
        let forms = crate::sops::leaks::all_forms(&super::encrypted::plaintexts(&plain));
        let exposed = super::encrypted::exposed_in_build(&built, &forms);
        if exposed.is_empty() {
            walked.files.extend(built);
        } else {
            walked.problems.extend(exposed);
        }
        // The builder's messages may quote the decrypted inputs they could not read.
        walked
            .problems
            .extend(problems.into_iter().map(|mut problem| {
                problem.message = crate::text::scrub(&problem.message, &forms);
                problem
            }));
    }
    walked.files.sort_by(|a, b| a.path.cmp(&b.path));
    walked.problems.sort();
    Ok(walked)
}

/// Build `units` in a private copy of `root` holding their decrypted inputs; the copy is
/// removed before this returns.
fn build_decrypted(
    root: &Path,
    units: &[(&Unit, Vec<super::encrypted::Decrypted>)],
    kustomize: &KustomizeOptions,
) -> (Vec<SourceFile>, Vec<Problem>) {
    let fail = |message: String| {
        let problems = units
            .iter()
            .map(|(u, _)| Problem::new(&u.file, 1, message.clone()))
            .collect();
        (Vec::new(), problems)
    };
    let copy = match super::private_copy::PrivateCopy::of(root) {
        Ok(copy) => copy,
        Err(err) => {
            return fail(format!(
                "cannot make a private copy to decrypt inputs into: {err}"
            ))
        }
    };
    for (file, bytes) in units.iter().flat_map(|(_, files)| files) {
        if let Err(err) = copy.write(file, bytes) {
            return fail(format!(
                "cannot write a decrypted input into the private copy: {err}"
            ));
        }
    }
    tracing::debug!(
        "building {} kustomize unit(s) from decrypted inputs in a private copy",
        units.len()
    );
    let list: Vec<&Unit> = units.iter().map(|(u, _)| *u).collect();
    kustomize::build_all(copy.path(), &list, kustomize, kustomize::Inputs::Decrypted)
}

fn load_tendignore(root: &Path, problems: &mut Vec<Problem>) -> Gitignore {
    let mut builder = GitignoreBuilder::new(root);
    let file = root.join(".tendignore");
    if file.is_file() {
        // Line by line, so that a bad pattern is reported with its line.
        match fs::read(&file) {
            Ok(bytes) if bytes.len() as u64 <= MAX_FILE_BYTES => {
                let text = String::from_utf8_lossy(&bytes);
                for (i, line) in text.lines().enumerate() {
                    if let Err(err) = builder.add_line(Some(file.clone()), line) {
                        problems.push(Problem::new(
                            ".tendignore",
                            i + 1,
                            format!("invalid pattern: {}", ignore_message(&err)),
                        ));
                    }
                }
            }
            Ok(_) => problems.push(Problem::new(
                ".tendignore",
                1,
                format!("file is larger than {} MiB", MAX_FILE_BYTES / (1024 * 1024)),
            )),
            Err(err) => problems.push(Problem::new(
                ".tendignore",
                1,
                format!("cannot read file: {err}"),
            )),
        }
    }
    builder.build().unwrap_or_else(|err| {
        problems.push(Problem::new(
            ".tendignore",
            1,
            format!("invalid pattern: {err}"),
        ));
        Gitignore::empty()
    })
}

/// The message of a pattern error without the ignore crate's own location wrapper.
fn ignore_message(err: &ignore::Error) -> String {
    match err {
        ignore::Error::WithLineNumber { err, .. }
        | ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. } => ignore_message(err),
        other => other.to_string(),
    }
}

fn visit(
    root: &Path,
    dir: &Path,
    rel: &Path,
    ignore: &Gitignore,
    visited: &mut BTreeSet<PathBuf>,
    units: &mut Vec<Unit>,
    out: &mut Walked,
) {
    // A kustomize directory is built as a whole (a `.tendignore`d kustomization file makes
    // it a plain directory again).
    for name in kustomize::KUSTOMIZATION_FILES {
        let file = dir.join(name);
        let rel_file = rel.join(name);
        if !file.is_file() || ignore.matched(&rel_file, false).is_ignore() {
            continue;
        }
        if !file.canonicalize().is_ok_and(|t| t.starts_with(root)) {
            break; // a symlink out of the repository: reported as such below
        }
        match read_text(&file, &rel_file) {
            Ok(text) => {
                if let Some(unit) = kustomize::detect(root, rel, &rel_file, &text) {
                    units.push(unit);
                    return;
                }
            }
            Err(problem) => {
                out.problems.push(problem);
                return;
            }
        }
        break;
    }
    // A chart's templates are not manifests: the chart is read whole for HelmChart objects.
    let chart_file = rel.join(super::charts::CHART_FILE);
    if dir.join(super::charts::CHART_FILE).is_file()
        && !ignore.matched(&chart_file, false).is_ignore()
    {
        // Known by its files' stamps first: a run whose renders of it were kept reads no
        // more of it.
        if let Some(chart) = super::charts::stamp_chart(root, dir, rel) {
            let unread = crate::helm::chart::UnreadChart {
                root: root.to_path_buf(),
                dir: dir.to_path_buf(),
            };
            out.charts.unread.insert(rel.to_path_buf(), unread);
            out.charts.dirs.insert(rel.to_path_buf(), chart);
            return;
        }
        match super::charts::read_chart(root, dir, rel) {
            Ok(chart) => {
                out.charts.dirs.insert(rel.to_path_buf(), chart);
            }
            Err(problem) => out.problems.push(problem),
        }
        return;
    }
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => {
            out.problems.push(Problem::new(
                rel,
                1,
                format!("cannot read directory: {err}"),
            ));
            return;
        }
    };
    let mut names: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for name in names {
        let name_str = name.to_string_lossy();
        if name_str.starts_with('.') {
            continue;
        }
        let path = dir.join(&name);
        let rel_path = rel.join(&name);
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let mut is_dir = meta.is_dir();
        let mut real = path.clone();
        if meta.file_type().is_symlink() {
            match path.canonicalize() {
                Ok(target) if target.starts_with(root) => {
                    is_dir = target.is_dir();
                    real = target;
                }
                Ok(target) => {
                    if is_dir_or_yaml(&target, &name_str) {
                        out.problems.push(Problem::new(
                            &rel_path,
                            1,
                            format!(
                                "symlink points outside the repository (to {}); copy the file into the repository instead",
                                target.display()
                            ),
                        ));
                    }
                    continue;
                }
                Err(err) => {
                    if is_yaml(&name_str) {
                        out.problems.push(Problem::new(
                            &rel_path,
                            1,
                            super::paths::unresolved_symlink(&err),
                        ));
                    }
                    continue;
                }
            }
        }
        if ignore.matched(&rel_path, is_dir).is_ignore() {
            continue;
        }
        if is_dir {
            // A symlinked directory could loop back; visit each real directory once.
            if visited.insert(real.clone()) {
                visit(root, &real, &rel_path, ignore, visited, units, out);
            }
        } else if is_yaml(&name_str) {
            read_file(&real, rel_path, out);
        }
    }
}

fn is_yaml(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml")
}

fn is_dir_or_yaml(target: &Path, name: &str) -> bool {
    target.is_dir() || is_yaml(name)
}

fn read_file(path: &Path, rel: PathBuf, out: &mut Walked) {
    match read_text(path, &rel) {
        Ok(text) => out.files.push(SourceFile {
            path: rel,
            text,
            unit: None,
        }),
        Err(problem) => out.problems.push(problem),
    }
}

/// A file's text: a regular file, at most [`MAX_FILE_BYTES`], UTF-8.
fn read_text(path: &Path, rel: &Path) -> Result<String, Problem> {
    match fs::metadata(path) {
        // A FIFO, socket or device named *.yaml: opening a FIFO would block forever, and
        // a device could be endless.
        Ok(meta) if !meta.is_file() => {
            return Err(Problem::new(
                rel,
                1,
                "not a regular file (a pipe, socket or device); remove it or add it to .tendignore",
            ));
        }
        Ok(meta) if meta.len() > MAX_FILE_BYTES => {
            return Err(Problem::new(
                rel,
                1,
                format!(
                    "file is {:.1} MiB; tend reads YAML files up to {} MiB (a Kubernetes object is at most about 1.5 MiB); split it or add it to .tendignore",
                    meta.len() as f64 / (1024.0 * 1024.0),
                    MAX_FILE_BYTES / (1024 * 1024)
                ),
            ));
        }
        Ok(_) => {}
        Err(err) => return Err(Problem::new(rel, 1, format!("cannot read file: {err}"))),
    }
    // Read at most one byte past the limit: a file that grew after the size check is still
    // refused instead of read whole.
    let mut bytes = Vec::new();
    let read = fs::File::open(path).and_then(|f| {
        use std::io::Read;
        f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)
    });
    if let Err(err) = read {
        return Err(Problem::new(rel, 1, format!("cannot read file: {err}")));
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Problem::new(
            rel,
            1,
            format!(
                "file is larger than {} MiB; split it or add it to .tendignore",
                MAX_FILE_BYTES / (1024 * 1024)
            ),
        ));
    }
    utf8_text(rel, bytes, "save it as UTF-8 or add it to .tendignore")
}

/// `bytes` as text, or the problem at the line of the first byte that is not UTF-8 (YAML
/// is UTF-8; Helm's and kubectl's readers refuse other bytes too), with `fix`.
pub(super) fn utf8_text(rel: &Path, bytes: Vec<u8>, fix: &str) -> Result<String, Problem> {
    String::from_utf8(bytes).map_err(|err| {
        let offset = err.utf8_error().valid_up_to();
        let line = 1 + err.as_bytes()[..offset]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        Problem::new(
            rel,
            line,
            format!("file is not valid UTF-8 (binary or another encoding); {fix}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_hidden_ignored_and_non_yaml() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("a/.hidden")).unwrap();
        fs::create_dir_all(root.join("skipme")).unwrap();
        fs::write(root.join("a/x.yaml"), "a: 1\n").unwrap();
        fs::write(root.join("a/y.yml"), "a: 1\n").unwrap();
        fs::write(root.join("a/readme.md"), "# no\n").unwrap();
        fs::write(root.join("a/.hidden/z.yaml"), "a: 1\n").unwrap();
        fs::write(root.join(".secret.yaml"), "a: 1\n").unwrap();
        fs::write(root.join("skipme/w.yaml"), "a: 1\n").unwrap();
        fs::write(root.join(".tendignore"), "skipme/\n*.tmp.yaml\n").unwrap();
        fs::write(root.join("b.tmp.yaml"), "a: 1\n").unwrap();
        let walked = walk(root).unwrap();
        let paths: Vec<_> = walked.files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(
            paths,
            vec![PathBuf::from("a/x.yaml"), PathBuf::from("a/y.yml")]
        );
        assert!(walked.problems.is_empty());
    }

    #[test]
    fn non_utf8_reports_line() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("bin.yaml"), b"a: 1\nb: \xff\xfe\n").unwrap();
        let walked = walk(dir.path()).unwrap();
        assert_eq!(walked.problems.len(), 1);
        assert_eq!(walked.problems[0].line, 2);
    }

    #[cfg(unix)]
    #[test]
    fn fifo_is_reported_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.yaml");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let walked = walk(dir.path()).unwrap();
        assert_eq!(walked.problems.len(), 1, "{:?}", walked.problems);
        assert!(walked.problems[0].message.contains("not a regular file"));
    }

    #[test]
    fn tendignore_pattern_errors_name_their_line() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".tendignore"), "# c\nok/\n*.{a,b\n").unwrap();
        let walked = walk(dir.path()).unwrap();
        assert_eq!(walked.problems.len(), 1);
        assert_eq!(walked.problems[0].line, 3);
        assert!(walked.problems[0].message.starts_with("invalid pattern: "));
    }

    #[cfg(unix)]
    #[test]
    fn symlink_escape_is_rejected_but_inner_symlink_is_fine() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("evil.yaml"), "a: 1\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("real.yaml"), "a: 1\n").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("evil.yaml"),
            dir.path().join("evil.yaml"),
        )
        .unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.yaml"), dir.path().join("alias.yaml"))
            .unwrap();
        let walked = walk(dir.path()).unwrap();
        assert_eq!(walked.problems.len(), 1);
        assert!(walked.problems[0]
            .message
            .contains("outside the repository"));
        assert_eq!(walked.files.len(), 2);
    }
}
