//! Kustomize build units (README "Kustomize"): directories whose `kustomization.yaml` is kustomize's
//! (`kustomize.config.k8s.io`), built with `kustomize build` (or `kubectl kustomize`) instead
//! of being read file by file.
//!
//! Which units are built: every `Kustomization` the walk finds, except those another unit in
//! the tree refers to (a `base/` used by `overlays/*` is built as part of each overlay, not
//! also on its own) and except `Component`s, which only overlays use. A unit's whole
//! directory tree belongs to it: its files are kustomize's to read (resources, patches,
//! generator inputs) and are never read again as plain objects, and neither are local paths
//! it refers to outside its tree (with a load restrictor that allows them).
//!
//! The builder runs in the checked-out tree (for git sources, the fetched commit) with a
//! timeout, its stdin closed, without tend's own `TEND_*` variables (the git token among
//! them), and with git prompts off. It only reaches the network when a kustomization names a
//! remote base.

use super::kustomize_refs::{generator_inputs, helm_values_files, is_remote, local_refs};
use super::paths::normalize;
use super::SourceFile;
use crate::problem::Problem;
use crate::yaml;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub use super::kustomize_refs::KUSTOMIZATION_FILES;

/// How long one build may take. Remote bases are cloned during the build, so this is
/// generous; a build that takes longer is stuck (a prompt, a dead remote).
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(300);

/// Largest build output tend reads: far beyond any real site (a big monitoring stack builds
/// to a few MiB), small enough not to exhaust memory.
pub const MAX_BUILD_BYTES: usize = 64 * 1024 * 1024;

/// Most of the builder's error output kept for the message.
const MAX_MESSAGE_CHARS: usize = 800;

/// The group of kustomize's own kinds.
const KUSTOMIZE_GROUP: &str = "kustomize.config.k8s.io/";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    Kustomization,
    /// A kustomize Component: only ever built as part of an overlay that lists it.
    Component,
}

/// A directory kustomize builds.
#[derive(Debug, Clone)]
pub struct Unit {
    /// The directory, relative to the walked root (empty for the root itself).
    pub dir: PathBuf,
    /// Its kustomization file, relative to the walked root.
    pub file: PathBuf,
    pub kind: UnitKind,
    /// Local paths the kustomization refers to (resources, bases, components, patches,
    /// generator inputs...), relative to the walked root; `..` where they lie outside it.
    pub refs: Vec<PathBuf>,
    /// The inputs of its `configMapGenerator`s (a subset of `refs`): tend masks Secret data
    /// only, so a decrypted file must not become a ConfigMap's values.
    pub config_map_inputs: Vec<PathBuf>,
    /// The inputs of its `secretGenerator`s: their content becomes Secret data, whatever it
    /// holds (a kubeconfig's `kind: Config` included).
    pub secret_inputs: Vec<PathBuf>,
    /// The values files of its `helmCharts` (`valuesFile`, `additionalValuesFiles`): what a
    /// chart makes of them cannot be traced back to sealed fields, so none may be encrypted.
    pub helm_values_inputs: Vec<PathBuf>,
}

/// How to build units: `--kustomize-command`, or found on PATH.
#[derive(Debug, Clone, Default)]
pub struct KustomizeOptions {
    /// The builder's command words (`--kustomize-command`); the unit directory is appended.
    pub command: Option<String>,
    /// Keys for SOPS-encrypted inputs (decrypted into a private copy before the build).
    pub keys: std::sync::Arc<crate::sops::Keys>,
    /// The repository's root, which no kustomization may read above (the walked directory
    /// when not given). With `--path`, bases beside the path are inside it.
    pub repository_root: Option<PathBuf>,
    /// Where builds are kept from one run to the next ([`super::kustomize_cache`]); none kept
    /// without it.
    pub cache_dir: Option<PathBuf>,
}

/// Whether the kustomization file `file` (text `text`) in `dir` makes `dir` a unit, and if so
/// which. A file named like a kustomization but holding something else (a Flux
/// `kustomize.toolkit.fluxcd.io` Kustomization, say) is an ordinary object: `None`.
pub fn detect(root: &Path, dir: &Path, file: &Path, text: &str) -> Option<Unit> {
    let (docs, _) = yaml::parse_file(file, text);
    let unit = |kind, refs, config_map_inputs, secret_inputs| {
        Some(Unit {
            dir: dir.to_path_buf(),
            file: file.to_path_buf(),
            kind,
            refs,
            config_map_inputs,
            secret_inputs,
            helm_values_inputs: Vec::new(),
        })
    };
    let Some(value) = docs.first().map(|d| &d.value) else {
        // Unreadable or empty: it is named as kustomize's, so kustomize reports what is wrong.
        return unit(UnitKind::Kustomization, Vec::new(), Vec::new(), Vec::new());
    };
    let Some(map) = value.as_object() else {
        return unit(UnitKind::Kustomization, Vec::new(), Vec::new(), Vec::new());
    };
    let kind = map.get("kind").and_then(Value::as_str);
    match map.get("apiVersion") {
        Some(Value::String(api)) if api.starts_with(KUSTOMIZE_GROUP) => {}
        // kustomize reads a kustomization without apiVersion and kind as a Kustomization.
        None if matches!(kind, None | Some("Kustomization" | "Component")) => {}
        _ => return None,
    }
    let kind = if kind == Some("Component") {
        UnitKind::Component
    } else {
        UnitKind::Kustomization
    };
    let local = |refs: Vec<String>| -> Vec<PathBuf> {
        refs.into_iter()
            .filter(|r| !is_remote(r))
            .map(|r| normalize(&dir.join(r)))
            .filter(|p| !p.as_os_str().is_empty() && root.join(p).exists())
            .collect()
    };
    let mut config_map_inputs = Vec::new();
    generator_inputs(value, "configMapGenerator", &mut config_map_inputs);
    let mut secret_inputs = Vec::new();
    generator_inputs(value, "secretGenerator", &mut secret_inputs);
    let mut found = unit(
        kind,
        local(local_refs(value)),
        local(config_map_inputs),
        local(secret_inputs),
    )?;
    found.helm_values_inputs = local(helm_values_files(value));
    Some(found)
}

/// The units to build: every Kustomization no other unit refers to. Units that only refer
/// to each other (a cycle, which kustomize refuses) are built too, so that kustomize says
/// what is wrong instead of tend silently rendering nothing. A Component at the root of the
/// walk is a problem: there is nothing to build.
pub fn select(units: &[Unit]) -> (Vec<&Unit>, Vec<Problem>) {
    let mut problems = Vec::new();
    let by_dir: BTreeMap<&Path, &Unit> = units.iter().map(|u| (u.dir.as_path(), u)).collect();
    let referenced: BTreeSet<&Path> = units
        .iter()
        .flat_map(|u| u.refs.iter())
        .filter_map(|r| by_dir.get(r.as_path()).map(|u| u.dir.as_path()))
        .collect();
    for unit in units {
        if unit.kind == UnitKind::Component && unit.dir.as_os_str().is_empty() {
            problems.push(Problem::new(
                &unit.file,
                1,
                "this directory is a kustomize Component, which is built only as part of an overlay that lists it under `components:`; point --path at such an overlay",
            ));
        }
    }
    // Reachable from the roots, through references.
    fn reach<'a>(
        from: &'a Unit,
        by_dir: &BTreeMap<&'a Path, &'a Unit>,
        reached: &mut BTreeSet<&'a Path>,
    ) {
        let mut stack = vec![from];
        while let Some(unit) = stack.pop() {
            if reached.insert(unit.dir.as_path()) {
                stack.extend(
                    unit.refs
                        .iter()
                        .filter_map(|r| by_dir.get(r.as_path()).copied()),
                );
            }
        }
    }
    let mut reached: BTreeSet<&Path> = BTreeSet::new();
    let mut build: Vec<&Unit> = Vec::new();
    for unit in units {
        if !referenced.contains(unit.dir.as_path()) {
            reach(unit, &by_dir, &mut reached);
            if unit.kind == UnitKind::Kustomization {
                build.push(unit);
            }
        }
    }
    for unit in units {
        if unit.kind == UnitKind::Kustomization && !reached.contains(unit.dir.as_path()) {
            reach(unit, &by_dir, &mut reached);
            build.push(unit);
        }
    }
    for unit in units {
        if !build.iter().any(|b| b.dir == unit.dir) {
            tracing::debug!(
                "{}: kustomize {} built only as part of the units that use it",
                unit.file.display(),
                match unit.kind {
                    UnitKind::Kustomization => "base",
                    UnitKind::Component => "Component",
                }
            );
        }
    }
    (build, problems)
}

/// The builder's command words: `--kustomize-command`, else `kustomize build` if kustomize
/// is on PATH, else `kubectl kustomize`.
fn builder(opts: &KustomizeOptions) -> Result<Vec<String>, String> {
    if let Some(command) = &opts.command {
        let words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            return Err("--kustomize-command is empty; give the builder's command words, e.g. \"kustomize build\"".into());
        }
        return Ok(words);
    }
    if on_path("kustomize") {
        return Ok(vec!["kustomize".into(), "build".into()]);
    }
    if on_path("kubectl") {
        return Ok(vec!["kubectl".into(), "kustomize".into()]);
    }
    Err("neither `kustomize` nor `kubectl` is on PATH; install one of them, or name the builder with --kustomize-command (TEND_KUSTOMIZE_COMMAND)".into())
}

fn on_path(program: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        let candidate = dir.join(program);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(&candidate)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        }
        #[cfg(not(unix))]
        {
            candidate.is_file()
        }
    })
}

/// Build `units` (at most a few at once) into source files, or report why not.
pub fn build_all(
    root: &Path,
    units: &[&Unit],
    opts: &KustomizeOptions,
    inputs: Inputs,
) -> (Vec<SourceFile>, Vec<Problem>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    if units.is_empty() {
        return (files, problems);
    }
    let words = match builder(opts) {
        Ok(words) => words,
        Err(why) => {
            for unit in units {
                problems.push(Problem::new(
                    &unit.file,
                    1,
                    format!("cannot build this kustomization: {why}"),
                ));
            }
            return (files, problems);
        }
    };
    let built = crate::parallel::map(units, crate::parallel::budget(), 1, |unit| {
        let text = kept_or_built(root, unit, &words, opts, inputs)?;
        Ok(split_by_origin(unit, &display_dir(&unit.dir), text))
    });
    for result in built {
        match result {
            Ok(built) => files.extend(built),
            Err(problem) => problems.push(problem),
        }
    }
    (files, problems)
}

/// Build one unit into the builder's output as it printed it (not split by origin): a
/// kustomization tend writes itself (a HelmRelease's post-renderer, `super::post_render`).
pub fn build_output(
    root: &Path,
    unit: &Unit,
    opts: &KustomizeOptions,
    inputs: Inputs,
) -> Result<String, Problem> {
    let words = builder(opts).map_err(|why| {
        Problem::new(
            &unit.file,
            1,
            format!("cannot build this kustomization: {why}"),
        )
    })?;
    kept_or_built(root, unit, &words, opts, inputs)
}

/// The kept build of `unit`, or its build (then kept).
fn kept_or_built(
    root: &Path,
    unit: &Unit,
    words: &[String],
    opts: &KustomizeOptions,
    inputs: Inputs,
) -> Result<String, Problem> {
    // Decrypted inputs are never kept: the cache would hold their plaintext.
    let cache = opts
        .cache_dir
        .as_deref()
        .filter(|_| inputs == Inputs::AsCommitted);
    let key = cache.and_then(|_| super::kustomize_cache::key(root, &unit.dir, None, words));
    if let (Some(cache), Some(key)) = (cache, &key) {
        if let Some(kept) = super::kustomize_cache::read(cache, key) {
            tracing::debug!("{} built as kept", unit.file.display());
            return Ok(kept.output);
        }
    }
    build(root, unit, words, inputs, cache.zip(key.as_deref()))
}

/// The kept build of a kustomization not written yet: `overlay`, the text of `unit`'s file
/// in `root`. The build that would keep it runs in a private copy holding that file; it keys
/// the same, so a kept build spares the copy too.
pub fn kept_overlay(
    root: &Path,
    unit: &Unit,
    overlay: &str,
    opts: &KustomizeOptions,
) -> Option<Vec<SourceFile>> {
    let cache = opts.cache_dir.as_deref()?;
    let words = builder(opts).ok()?;
    let key = super::kustomize_cache::key(root, &unit.dir, Some(overlay), &words)?;
    let kept = super::kustomize_cache::read(cache, &key)?;
    Some(split_by_origin(unit, &display_dir(&unit.dir), kept.output))
}

/// What a build reads: the repository's own files, or a private copy holding decrypted SOPS
/// inputs (whose builder messages may quote plaintext, so they are never shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inputs {
    AsCommitted,
    Decrypted,
}

/// `overlays/prod`, or `.` for the root.
fn display_dir(dir: &Path) -> String {
    if dir.as_os_str().is_empty() {
        ".".to_string()
    } else {
        dir.display().to_string()
    }
}

/// Build one unit into the builder's output (kept under `keep`). Split by
/// [`split_by_origin`], its documents keep the lines the builder printed them at.
fn build(
    root: &Path,
    unit: &Unit,
    words: &[String],
    inputs: Inputs,
    keep: Option<(&Path, &str)>,
) -> Result<String, Problem> {
    let dir = display_dir(&unit.dir);
    let shown = format!("{} {dir}", words.join(" "));
    let mut cmd = Command::new(&words[0]);
    cmd.args(&words[1..]).arg(&dir).current_dir(root);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("TEND_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0");
    tracing::debug!("building {} with `{shown}`", unit.file.display());
    let started = Instant::now();
    let ran = run(cmd, BUILD_TIMEOUT, MAX_BUILD_BYTES).map_err(|err| {
        let message = match err {
            RunError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => format!(
                "cannot build this kustomization: `{}` was not found; install it or fix --kustomize-command (TEND_KUSTOMIZE_COMMAND)",
                words[0]
            ),
            RunError::Spawn(e) => format!("cannot run `{shown}`: {e}"),
            RunError::Timeout => format!(
                "`{shown}` did not finish within {} s (a remote base that does not answer?); it was stopped",
                BUILD_TIMEOUT.as_secs()
            ),
        };
        Problem::new(&unit.file, 1, message)
    })?;
    tracing::debug!(
        "built {} in {} ms ({} bytes)",
        dir,
        started.elapsed().as_millis(),
        ran.stdout.len()
    );
    if inputs == Inputs::Decrypted {
        // The builder read plaintext and may quote it in any message (a YAML error shows
        // the line): its stderr is dropped unread, never logged or reported.
        if !ran.status.success() {
            return Err(Problem::new(
                &unit.file,
                1,
                format!("`{shown}` failed on the unit's decrypted inputs; its message is not shown, as it may quote decrypted values (decrypt the inputs with `sops -d` into a scratch copy and build that to see it)"),
            ));
        }
    } else if !ran.status.success() {
        let stderr = String::from_utf8_lossy(&ran.stderr);
        tracing::debug!("`{shown}` failed ({}):\n{stderr}", ran.status);
        let message = builder_message(&stderr, root);
        let line = kustomization_line(&message, root, unit);
        return Err(Problem::new(
            &unit.file,
            line,
            format!("`{shown}` failed: {message}"),
        ));
    }
    // Deprecation notices and the like: worth seeing (on every run, a kept build's too), not
    // worth failing for.
    let notes = (inputs == Inputs::AsCommitted && !ran.stderr.iter().all(u8::is_ascii_whitespace))
        .then(|| builder_message(&String::from_utf8_lossy(&ran.stderr), root));
    if let Some(notes) = &notes {
        tracing::warn!("`{shown}`: {notes}");
    }
    if ran.truncated {
        return Err(Problem::new(
            &unit.file,
            1,
            format!(
                "`{shown}` printed more than {} MiB; tend reads builds up to that size",
                MAX_BUILD_BYTES / (1024 * 1024)
            ),
        ));
    }
    let text = String::from_utf8(ran.stdout).map_err(|_| {
        Problem::new(
            &unit.file,
            1,
            format!("`{shown}` printed something that is not UTF-8 text"),
        )
    })?;
    if let Some((cache, key)) = keep {
        let kept = super::kustomize_cache::Kept {
            output: text,
            notes,
            shown,
        };
        super::kustomize_cache::write(cache, key, &kept);
        return Ok(kept.output);
    }
    Ok(text)
}

/// One source file for the build output, under the name `<dir> (kustomize build)`; or, where origin annotations name the files the
/// documents came from, one per file, each holding its documents at their lines of the build
/// output (the others blanked), so that every message names both.
fn split_by_origin(unit: &Unit, dir: &str, text: String) -> Vec<SourceFile> {
    let label = PathBuf::from(format!("{dir} (kustomize build)"));
    let whole = |text: String| {
        vec![SourceFile {
            path: label.clone(),
            text,
            unit: Some(unit.dir.clone()),
        }]
    };
    let (docs, problems) = yaml::parse_file(&label, &text);
    if !problems.is_empty() {
        return whole(text);
    }
    let mut groups: BTreeMap<Option<String>, Vec<std::ops::Range<usize>>> = BTreeMap::new();
    let mut last_end = 0;
    for doc in &docs {
        let lines = doc.lines();
        if lines.start < last_end {
            return whole(text); // documents that share lines (items of a List)
        }
        last_end = lines.end;
        groups
            .entry(origin_of(&doc.value, unit))
            .or_default()
            .push(lines);
    }
    let named = groups.keys().any(Option::is_some);
    // Each group repeats the output's line breaks: bounded, for very large builds.
    if !named || groups.len().saturating_mul(text.lines().count()) > MAX_BUILD_BYTES / 4 {
        return whole(text);
    }
    groups
        .into_iter()
        .map(|(from, ranges)| {
            let mut own = String::with_capacity(text.len());
            for (i, line) in text.split_inclusive('\n').enumerate() {
                if ranges.iter().any(|r| r.contains(&(i + 1))) {
                    own.push_str(line);
                } else {
                    own.push('\n');
                }
            }
            SourceFile {
                path: match from {
                    Some(from) => PathBuf::from(format!("{dir} (kustomize build, from {from})")),
                    None => label.clone(),
                },
                text: own,
                unit: Some(unit.dir.clone()),
            }
        })
        .collect()
}

/// The file a built document came from, from kustomize's `config.kubernetes.io/origin`
/// annotation: a resource file (relative to the walked root), a remote file, or the
/// kustomization whose generator made it.
fn origin_of(value: &Value, unit: &Unit) -> Option<String> {
    let origin = value
        .pointer("/metadata/annotations")?
        .get("config.kubernetes.io/origin")?
        .as_str()?;
    let origin = yaml::parse_value(origin)?;
    let local = |p: &str| normalize(&unit.dir.join(p)).display().to_string();
    if let Some(path) = origin.get("path").and_then(Value::as_str) {
        return Some(match origin.get("repo").and_then(Value::as_str) {
            Some(repo) => match origin.get("ref").and_then(Value::as_str) {
                Some(r) => format!("{repo}//{path}?ref={r}"),
                None => format!("{repo}//{path}"),
            },
            None => local(path),
        });
    }
    let configured_in = origin.get("configuredIn").and_then(Value::as_str)?;
    Some(
        match origin.pointer("/configuredBy/kind").and_then(Value::as_str) {
            Some(kind) => format!("the {kind} of {}", local(configured_in)),
            None => local(configured_in),
        },
    )
}

/// The builder's error, readable: kubectl's log line (`E1123 ... "command failed"
/// err="..."`) reduced to the error, kustomize's `Error: ` dropped, absolute paths of the
/// checkout made relative, one line, cut to a readable length (the whole text is logged at
/// `-v`).
fn builder_message(stderr: &str, root: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for line in stderr.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let line = line.strip_prefix("# ").unwrap_or(line);
        if let Some(err) = klog_err(line) {
            parts.extend(
                err.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string),
            );
        } else if let Some(rest) = line.strip_prefix("Error: ") {
            parts.push(rest.to_string());
        } else if !line.starts_with("Usage:") {
            parts.push(line.to_string());
        }
    }
    let mut message = parts.join("; ");
    let root_text = root.display().to_string();
    message = message.replace(&format!("{root_text}/"), "");
    message = message.replace(&root_text, ".");
    if message.is_empty() {
        message = "it printed no error message".to_string();
    }
    let message = yaml::one_line(&message);
    if message.chars().count() > MAX_MESSAGE_CHARS {
        let cut: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
        format!("{cut}... (cut; run with -v for the whole message)")
    } else {
        message
    }
}

/// The `err="..."` of a klog line, unquoted as Go quotes it.
fn klog_err(line: &str) -> Option<String> {
    let start = line.find(" err=\"")? + " err=\"".len();
    let mut out = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    Some(out)
}

/// The line of the kustomization file the builder's message points at, where it says: a
/// YAML error (`yaml: line 3: ...`) or an unknown field (`unknown field "resourcez"`).
fn kustomization_line(message: &str, root: &Path, unit: &Unit) -> usize {
    if let Some(rest) = message.split("invalid Kustomization: yaml: line ").nth(1) {
        if let Ok(line) = rest
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
        {
            return line;
        }
    }
    if let Some(field) = message
        .split("unknown field \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
    {
        if let Ok(text) = std::fs::read_to_string(root.join(&unit.file)) {
            if let Some(i) = text.lines().position(|l| {
                l.strip_prefix(field)
                    .is_some_and(|r| r.trim_start().starts_with(':'))
            }) {
                return i + 1;
            }
        }
    }
    1
}

struct Ran {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// stdout went past the limit; the rest was read and dropped.
    truncated: bool,
}

#[derive(Debug)]
enum RunError {
    Spawn(std::io::Error),
    Timeout,
}

/// Read `reader` to its end on a thread of its own, keeping up to `limit` bytes (reading on,
/// so the builder never blocks on a full pipe), then send (which, bytes, went over).
fn pump<R: Read + Send + 'static>(
    which: u8,
    mut reader: R,
    limit: usize,
    tx: mpsc::Sender<(u8, Vec<u8>, bool)>,
) {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut over = false;
        let mut buf = [0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = limit.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    over |= n > room;
                }
            }
        }
        let _ = tx.send((which, kept, over));
    });
}

/// Run `cmd` to completion within `timeout`, reading at most `max_stdout` bytes of its
/// output (and 64 KiB of its errors). On timeout it is killed.
fn run(mut cmd: Command, timeout: Duration, max_stdout: usize) -> Result<Ran, RunError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    let (tx, rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        pump(0, stdout, max_stdout, tx.clone());
    }
    if let Some(stderr) = child.stderr.take() {
        pump(1, stderr, 64 * 1024, tx.clone());
    }
    drop(tx);
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Timeout);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(RunError::Spawn(e)),
        }
    };
    let mut ran = Ran {
        status,
        stdout: Vec::new(),
        stderr: Vec::new(),
        truncated: false,
    };
    // The pipes close when the builder and anything it started are done.
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((0, bytes, over)) => {
                ran.stdout = bytes;
                ran.truncated = over;
            }
            Ok((_, bytes, _)) => ran.stderr = bytes,
            Err(mpsc::RecvTimeoutError::Timeout) => return Err(RunError::Timeout),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    Ok(ran)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(dir: &str, kind: UnitKind, refs: &[&str]) -> Unit {
        Unit {
            dir: PathBuf::from(dir),
            file: Path::new(dir).join("kustomization.yaml"),
            kind,
            refs: refs.iter().map(PathBuf::from).collect(),
            config_map_inputs: Vec::new(),
            secret_inputs: Vec::new(),
            helm_values_inputs: Vec::new(),
        }
    }

    #[test]
    fn bases_and_components_are_not_built_on_their_own() {
        let units = vec![
            unit("apps/base", UnitKind::Kustomization, &[]),
            unit("apps/ha", UnitKind::Component, &[]),
            unit("apps/dev", UnitKind::Kustomization, &["apps/base"]),
            unit(
                "apps/prod",
                UnitKind::Kustomization,
                &["apps/base", "apps/ha"],
            ),
            unit("lonely", UnitKind::Component, &[]),
        ];
        let (build, problems) = select(&units);
        let dirs: Vec<_> = build.iter().map(|u| u.dir.display().to_string()).collect();
        assert_eq!(dirs, ["apps/dev", "apps/prod"]);
        assert!(problems.is_empty());
    }

    #[test]
    fn a_cycle_is_built_so_kustomize_reports_it() {
        let units = vec![
            unit("a", UnitKind::Kustomization, &["b"]),
            unit("b", UnitKind::Kustomization, &["a"]),
        ];
        let (build, _) = select(&units);
        assert_eq!(build.len(), 1);
        assert_eq!(build[0].dir, Path::new("a"));
    }

    #[test]
    fn a_component_at_the_root_is_a_problem() {
        let units = [unit("", UnitKind::Component, &[])];
        let (build, problems) = select(&units);
        assert!(build.is_empty());
        assert!(problems[0].message.contains("Component"));
    }

    #[test]
    fn detect_reads_kustomize_files_only() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("o/base")).unwrap();
        std::fs::write(root.path().join("o/base/x.yaml"), "a: 1\n").unwrap();
        let file = Path::new("o/kustomization.yaml");
        let u = detect(
            root.path(),
            Path::new("o"),
            file,
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- base\n- https://example.com/x.yaml\n- github.com/org/repo//dir?ref=v1\n- missing.yaml\n",
        )
        .unwrap();
        assert_eq!(u.kind, UnitKind::Kustomization);
        assert_eq!(u.refs, vec![PathBuf::from("o/base")]);
        let u = detect(
            root.path(),
            Path::new("o"),
            file,
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: base/x.yaml\n",
        )
        .unwrap();
        assert_eq!(u.kind, UnitKind::Component);
        assert_eq!(u.refs, vec![PathBuf::from("o/base/x.yaml")]);
        // helmCharts values files are inputs, and known as such.
        std::fs::write(root.path().join("o/values.yaml"), "a: 1\n").unwrap();
        let u = detect(
            root.path(),
            Path::new("o"),
            file,
            "helmCharts:\n- name: c\n  valuesFile: values.yaml\n  additionalValuesFiles: [base/x.yaml, gone.yaml]\n",
        )
        .unwrap();
        let both = vec![
            PathBuf::from("o/values.yaml"),
            PathBuf::from("o/base/x.yaml"),
        ];
        assert_eq!(u.refs, both);
        assert_eq!(u.helm_values_inputs, both);
        // No apiVersion and no kind: kustomize's default.
        assert!(detect(root.path(), Path::new("o"), file, "resources: [base]\n").is_some());
        // Flux's Kustomization is an object.
        assert!(detect(
            root.path(),
            Path::new("o"),
            file,
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n"
        )
        .is_none());
    }

    #[test]
    fn kubectl_errors_are_unquoted_and_relative() {
        let root = Path::new("/tmp/repo");
        let stderr = "E1123 00:44:45.261672    7525 run.go:72] \"command failed\" err=\"accumulating resources: 'missing.yaml': lstat /tmp/repo/bad/missing.yaml: no such file or \\\"directory\\\"\"\n";
        assert_eq!(
            builder_message(stderr, root),
            "accumulating resources: 'missing.yaml': lstat bad/missing.yaml: no such file or \"directory\""
        );
        assert_eq!(
            builder_message("Error: invalid Kustomization: bad\n", root),
            "invalid Kustomization: bad"
        );
        assert_eq!(
            builder_message("E1 run.go:72] \"command failed\" err=\"a\\n  b\"\n", root),
            "a; b"
        );
        assert_eq!(
            builder_message("# Warning: 'commonLabels' is deprecated.\n", root),
            "Warning: 'commonLabels' is deprecated."
        );
        let long = format!("Error: {}\n", "x".repeat(5000));
        assert!(builder_message(&long, root).ends_with("(cut; run with -v for the whole message)"));
    }

    #[cfg(unix)]
    #[test]
    fn a_stuck_builder_is_stopped() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let started = Instant::now();
        let result = run(cmd, Duration::from_millis(200), 1024);
        assert!(matches!(result, Err(RunError::Timeout)));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[cfg(unix)]
    #[test]
    fn output_beyond_the_limit_is_flagged() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "head -c 100000 /dev/zero; echo oops >&2"]);
        let ran = run(cmd, Duration::from_secs(10), 1000).unwrap();
        assert!(ran.status.success());
        assert!(ran.truncated);
        assert_eq!(ran.stdout.len(), 1000);
        assert_eq!(String::from_utf8_lossy(&ran.stderr), "oops\n");
    }
}
