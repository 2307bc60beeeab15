//! Kustomizations that read above the repository's root (RELIABILITY.md, "reading outside
//! the repository"): refused before anything is built.

use super::kustomize::Unit;
use super::paths::normalize;
use crate::problem::Problem;
use std::path::Path;

/// Local paths the kustomizations of one build (`reached`, relative to the walked `root`)
/// refer to above `boundary`, the repository's root (symlinks followed), each a problem at
/// its kustomization's line. kustomize's own load restrictor (`LoadRestrictionsRootOnly`)
/// keeps files within the kustomization; bases and components it loads from anywhere, and
/// so tend refuses, for all of them, a path that leaves the repository: with a git source,
/// the directories above it are other checkouts in the cache.
pub fn outside_refs(root: &Path, boundary: &Path, reached: &[Unit]) -> Vec<Problem> {
    let mut problems = Vec::new();
    for unit in reached {
        let text = std::fs::read_to_string(root.join(&unit.file)).unwrap_or_default();
        for reference in &unit.refs {
            let inside = root
                .join(reference)
                .canonicalize()
                .is_ok_and(|real| real.starts_with(boundary));
            if inside {
                continue;
            }
            let line = line_naming(&text, &unit.dir, reference);
            problems.push(Problem::new(
                &unit.file,
                line,
                format!(
                    "refers to {}, which is outside the repository; kustomize may read only files within it (as its load restrictor does): move the base, component, patch or generator file into the repository",
                    reference.display()
                ),
            ));
        }
    }
    problems
}

/// The line of a kustomization `text` (in `dir`) that names `reference`, or 1.
fn line_naming(text: &str, dir: &Path, reference: &Path) -> usize {
    let separators = |c: char| c.is_whitespace() || "[],'\"".contains(c);
    text.lines()
        .position(|line| {
            line.split(separators).any(|token| {
                let token = token.rsplit('=').next().unwrap_or(token);
                !token.is_empty() && normalize(&dir.join(token)) == reference
            })
        })
        .map_or(1, |i| i + 1)
}
