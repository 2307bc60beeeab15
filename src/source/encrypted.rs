//! SOPS-encrypted inputs of kustomize units (resources, patches, generator `files:` and
//! `envs:`, in the unit and every base and component it reaches): kustomize would build them
//! into objects holding ciphertext, so a unit with one is not built but reported (SPEC 2).

use super::kustomize::Unit;
use super::walk::MAX_FILE_BYTES;
use crate::problem::Problem;
use crate::sops;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// One problem per encrypted input file of `unit`, at the line where its encryption shows.
pub fn encrypted_inputs(root: &Path, unit: &Unit, units: &[Unit]) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut stack = vec![unit];
    while let Some(current) = stack.pop() {
        if !seen.insert(current.dir.clone()) {
            continue;
        }
        for reference in &current.refs {
            if let Some(base) = units.iter().find(|u| &u.dir == reference) {
                stack.push(base);
                continue;
            }
            if !seen.insert(reference.clone()) {
                continue;
            }
            if let Some(line) = encrypted_line(&root.join(reference)) {
                problems.push(Problem::new(
                    reference,
                    line,
                    format!(
                        "this file is SOPS-encrypted and an input of the kustomization {}: tend does not build a kustomize unit from encrypted inputs (it would apply ciphertext); decrypting kustomize inputs is not supported yet, so keep encrypted manifests outside kustomize units, where tend decrypts them",
                        unit.file.display()
                    ),
                ));
            }
        }
    }
    problems
}

/// The line where `file` shows SOPS encryption, if it is a readable file that does.
fn encrypted_line(file: &Path) -> Option<usize> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .ok()?
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    sops::looks_encrypted(&String::from_utf8_lossy(&bytes))
}
