//! What Flux's source-controller leaves out of a GitRepository's or an OCIRepository's
//! artifact (fluxcd/pkg `sourceignore`, `artifact/storage/archive.go`), so a Kustomization
//! reads the files kustomize-controller would get, not the whole tree:
//!
//! - the patterns are every `.sourceignore` of the tree (each scoped to its directory), then
//!   the source's `spec.ignore`; when there are none, git's own files and the default
//!   patterns (images, archives, CI configuration, `.sops.yaml`, ...) are left out instead;
//! - the last pattern that matches a path decides (`!` keeps it); each file is decided on
//!   its own, so a kept file below a left-out directory stays;
//! - patterns match as go-git's gitignore patterns: a leading `/` anchors to the pattern's
//!   directory, a trailing `/` matches directories (and what is below them), `**` any number
//!   of directories, each element as Go's `filepath.Match`;
//! - symlinks are never archived.

use super::flux_archives::{Archive, Archives};
use super::model::{Found, Sources, Tree};
use crate::problem::Problem;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const IGNORE_FILE: &str = ".sourceignore";
const VCS: &str = ".git/,.gitignore,.gitmodules,.gitattributes";
const DEFAULTS: &[&str] = &[
    "*.jpg,*.jpeg,*.gif,*.png,*.wmv,*.flv,*.tar.gz,*.zip",
    ".github/,.circleci/,.travis.yml,.gitlab-ci.yml,appveyor.yml,.drone.yml,cloudbuild.yaml,codeship-services.yml,codeship-steps.yml",
    "**/.goreleaser.yml,**/.sops.yaml,**/.flux.yaml",
];

/// One gitignore pattern, scoped to the directory `domain` (elements from the root).
#[derive(Debug, Clone)]
struct Pattern {
    domain: Vec<String>,
    elements: Vec<String>,
    keeps: bool,
    dir_only: bool,
    /// Holds a `/`: matched element by element from the domain, not by any name.
    anchored: bool,
}

impl Pattern {
    fn parse(line: &str, domain: &[String]) -> Pattern {
        let (keeps, rest) = match line.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        // An escaped trailing space is part of the pattern (and, as in go-git, stays escaped).
        let rest = if rest.ends_with("\\ ") {
            rest
        } else {
            rest.trim_end_matches(' ')
        };
        let (dir_only, rest) = match rest.strip_suffix('/') {
            Some(rest) => (true, rest),
            None => (false, rest),
        };
        Pattern {
            domain: domain.to_vec(),
            elements: rest.split('/').map(str::to_string).collect(),
            keeps,
            dir_only,
            anchored: rest.contains('/'),
        }
    }

    /// `Some(true)` when the pattern leaves `path` out, `Some(false)` when it keeps it.
    fn decides(&self, path: &[&str], is_dir: bool) -> Option<bool> {
        if path.len() <= self.domain.len() || !self.domain.iter().zip(path).all(|(d, p)| d == p) {
            return None;
        }
        let path = &path[self.domain.len()..];
        let matched = match self.anchored {
            true => self.matches_from_start(path, is_dir),
            false => self.matches_a_name(path, is_dir),
        };
        matched.then_some(!self.keeps)
    }

    /// Any element of the path matches; for a directory-only pattern, not the last one of a
    /// file.
    fn matches_a_name(&self, path: &[&str], is_dir: bool) -> bool {
        let last = path.len() - 1;
        path.iter().enumerate().any(|(i, name)| {
            element_match(&self.elements[0], name) && !(self.dir_only && !is_dir && i == last)
        })
    }

    /// The elements in order from the start of the path (a path below a match matches too);
    /// `**` skips to the first element matching the next one.
    fn matches_from_start(&self, mut path: &[&str], is_dir: bool) -> bool {
        let mut matched = false;
        let mut skipping = false;
        let last = self.elements.len() - 1;
        for (i, element) in self.elements.iter().enumerate() {
            if element.is_empty() {
                skipping = false;
                continue;
            }
            if element == "**" {
                if i == last {
                    break;
                }
                skipping = true;
                continue;
            }
            if element.contains("**") || path.is_empty() {
                return false;
            }
            if skipping {
                skipping = false;
                matched = false;
                while let Some((first, rest)) = path.split_first() {
                    path = rest;
                    if element_match(element, first) {
                        matched = true;
                        break;
                    }
                }
            } else {
                if !element_match(element, path[0]) {
                    return false;
                }
                matched = true;
                path = &path[1..];
            }
        }
        matched && !(self.dir_only && !is_dir && path.is_empty())
    }
}

/// The patterns of one archive: the last one deciding a path wins.
#[derive(Debug, Clone)]
pub struct Rules {
    patterns: Vec<Pattern>,
}

impl Rules {
    /// Source-controller's rules from the user's patterns (`.sourceignore` files, then
    /// `spec.ignore`): git's files and those, or git's files and the defaults when none.
    fn new(user: Vec<Pattern>) -> Rules {
        let listed = |list: &str| -> Vec<Pattern> {
            list.split(',').map(|p| Pattern::parse(p, &[])).collect()
        };
        let mut patterns = listed(VCS);
        if user.is_empty() {
            patterns.extend(DEFAULTS.iter().flat_map(|list| listed(list)));
        }
        patterns.extend(user);
        Rules { patterns }
    }

    /// Whether the archive leaves out `path` (elements from the root).
    pub fn leaves_out(&self, path: &[&str], is_dir: bool) -> bool {
        self.patterns
            .iter()
            .rev()
            .find_map(|p| p.decides(path, is_dir))
            .unwrap_or(false)
    }
}

/// The patterns of a gitignore-format text: a line per pattern, but blank lines and
/// comments (`#` first).
fn read_patterns(text: &str, domain: &[String]) -> Vec<Pattern> {
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| Pattern::parse(line, domain))
        .collect()
}

/// Every `.sourceignore` of the tree at `dir` (`domain` from the root), parents first and
/// directories by name, as source-controller loads them; `.git` is not read.
fn load_ignore_files(
    root: &Path,
    domain: &mut Vec<String>,
    out: &mut Vec<Pattern>,
) -> Result<(), String> {
    let dir: PathBuf = root.join(domain.iter().collect::<PathBuf>());
    let file = dir.join(IGNORE_FILE);
    match fs::read_to_string(&file) {
        Ok(text) => out.extend(read_patterns(&text, domain)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {}: {e}", shown(domain, IGNORE_FILE))),
    }
    let mut names = Vec::new();
    let entries =
        fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", shown(domain, "")))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", shown(domain, "")))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_dir && name != ".git" {
            names.push(name);
        }
    }
    names.sort();
    for name in names {
        domain.push(name);
        load_ignore_files(root, domain, out)?;
        domain.pop();
    }
    Ok(())
}

fn shown(domain: &[String], name: &str) -> String {
    let mut parts: Vec<&str> = domain.iter().map(String::as_str).collect();
    if !name.is_empty() {
        parts.push(name);
    }
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

/// The rules of the tree at `root` with the source's `spec.ignore`.
pub fn rules_of(root: &Path, spec_ignore: Option<&str>) -> Result<Rules, String> {
    let mut user = Vec::new();
    load_ignore_files(root, &mut Vec::new(), &mut user)?;
    user.extend(read_patterns(spec_ignore.unwrap_or(""), &[]));
    Ok(Rules::new(user))
}

/// The tree as source-controller archives the source `source_ref` names (a GitRepository or
/// an OCIRepository; an ExternalArtifact is an archive already): the same tree when nothing
/// is left out, else the kept files in a private directory.
pub fn archived(
    tree: Tree,
    (unit, source_ref): (&Found, &Value),
    field: &[&str],
    sources: &Sources,
    archives: &Archives,
) -> Result<Tree, Problem> {
    let text = |k: &str| source_ref.get(k).and_then(Value::as_str);
    let kind = text("kind").unwrap_or("GitRepository");
    if kind == "ExternalArtifact" {
        return Ok(tree);
    }
    let namespace = text("namespace").unwrap_or(&unit.id.namespace);
    let name = text("name").unwrap_or("");
    let source = sources.get(kind, namespace, name);
    let spec_ignore = match source.and_then(|s| s.spec().get("ignore")) {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.as_str()),
        Some(_) => {
            let source = source.unwrap_or(unit);
            return Err(source.problem(&["spec", "ignore"], "spec.ignore is not a string; write the patterns as gitignore text, one a line (a block scalar: `ignore: |`)"));
        }
    };
    let made = |root: &Path| {
        archive(root, spec_ignore).map_err(|e| {
            unit.problem(field, format!("in the tree of {kind} {namespace}/{name}: {e}; source-controller could not archive it either: make it readable"))
        })
    };
    // A tree in a private directory (a pulled OCIRepository) is read by this unit only.
    let archive = match tree._staging {
        Some(_) => made(&tree.root)?,
        None => {
            let key = (tree.root.clone(), spec_ignore.map(str::to_string));
            archives.get_or_make(key, || made(&tree.root))?
        }
    };
    let Some(staging) = archive else {
        return Ok(tree);
    };
    tracing::debug!(
        "{kind} {namespace}/{name}: read without what its ignore rules leave out, as source-controller archives it"
    );
    Ok(Tree {
        root: staging.path().to_path_buf(),
        revision: tree.revision,
        is_checkout: tree.is_checkout,
        _staging: Some(staging),
    })
}

/// The kept files of the tree at `root` in a private directory, or `None` when the rules
/// leave nothing out.
fn archive(root: &Path, spec_ignore: Option<&str>) -> Result<Archive, String> {
    let rules = rules_of(root, spec_ignore)?;
    let mut kept = Vec::new();
    let mut left_out = false;
    walk(root, &rules, &mut Vec::new(), &mut kept, &mut left_out)?;
    if !left_out {
        return Ok(None);
    }
    let staging = tempfile::Builder::new()
        .prefix("tend-archive-")
        .tempdir()
        .map_err(|e| format!("cannot make a directory for the archived source: {e}"))?;
    for (path, is_dir) in kept {
        let target = staging.path().join(&path);
        let done = match is_dir {
            true => fs::create_dir_all(&target),
            false => target
                .parent()
                .map_or(Ok(()), fs::create_dir_all)
                .and_then(|()| link_or_copy(&root.join(&path), &target)),
        };
        done.map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
    }
    Ok(Some(Arc::new(staging)))
}

/// A hard link where the file system allows it (the archive is only read: a build copies
/// it again before writing), else a copy.
fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::hard_link(from, to).or_else(|_| fs::copy(from, to).map(|_| ()))
}

/// The kept files and directories below `domain`, and whether any was left out. A symlink is
/// left out; `.git` is not walked (git's own files are always left out).
fn walk(
    root: &Path,
    rules: &Rules,
    domain: &mut Vec<String>,
    kept: &mut Vec<(PathBuf, bool)>,
    left_out: &mut bool,
) -> Result<(), String> {
    let dir: PathBuf = domain.iter().collect();
    let entries = fs::read_dir(root.join(&dir))
        .map_err(|e| format!("cannot read {}: {e}", shown(domain, "")))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", shown(domain, "")))?;
        let kind = entry
            .file_type()
            .map_err(|e| format!("cannot read {}: {e}", shown(domain, "")))?;
        names.push((entry.file_name().to_string_lossy().into_owned(), kind));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in names {
        if name == ".git" {
            continue;
        }
        domain.push(name);
        let path: Vec<&str> = domain.iter().map(String::as_str).collect();
        if kind.is_dir() {
            if !rules.leaves_out(&path, true) {
                kept.push((domain.iter().collect(), true));
            }
            walk(root, rules, domain, kept, left_out)?;
        } else if kind.is_file() && !rules.leaves_out(&path, false) {
            kept.push((domain.iter().collect(), false));
        } else {
            *left_out = true;
        }
        domain.pop();
    }
    Ok(())
}

/// Go's `path.Match` of one element: `*` any run of characters, `?` one, `[...]` a class
/// (`^` negates, `a-z` ranges), `\` escapes. A malformed class matches nothing.
pub fn element_match(pattern: &str, name: &str) -> bool {
    fn class(p: &[char], c: char) -> Option<(bool, usize)> {
        let mut i = 1;
        let negate = p.get(1) == Some(&'^');
        if negate {
            i += 1;
        }
        let mut matched = false;
        let mut first = true;
        loop {
            let &lo = p.get(i)?;
            if lo == ']' && !first {
                break;
            }
            first = false;
            let (lo, step) = match lo {
                '\\' => (*p.get(i + 1)?, 2),
                lo => (lo, 1),
            };
            i += step;
            let hi = if p.get(i) == Some(&'-') && p.get(i + 1).is_some_and(|h| *h != ']') {
                let hi = p[i + 1];
                i += 2;
                hi
            } else {
                lo
            };
            matched |= lo <= c && c <= hi;
        }
        Some((matched != negate, i + 1))
    }
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|i| go(&p[1..], &n[i..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => match (n.first(), n.first().and_then(|c| class(p, *c))) {
                (Some(_), Some((true, used))) => go(&p[used..], &n[1..]),
                _ => false,
            },
            Some('\\') => match p.get(1) {
                Some(e) => n.first() == Some(e) && go(&p[2..], &n[1..]),
                None => false,
            },
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

#[cfg(test)]
#[path = "flux_ignore_tests.rs"]
mod tests;
