//! SOPS-encrypted inputs of kustomize units (resources, patches, generator `files:` and
//! `envs:`, in the unit and every base and component it reaches): kustomize would build them
//! into objects holding ciphertext, so they are decrypted into a private copy of the tree
//! that kustomize builds instead ([`super::private_copy`]), or the unit is reported and not
//! built (README "Encrypted secrets (SOPS)").

use super::kustomize::Unit;
use super::MAX_FILE_BYTES;
use crate::problem::Problem;
use crate::sops::{self, Keys};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// A decrypted input: its path relative to the walked directory, and its plaintext.
pub type Decrypted = (PathBuf, Zeroizing<Vec<u8>>);

/// Every encrypted input file of `unit` (relative to `root`), with the line where its
/// encryption shows.
pub fn encrypted_inputs(root: &Path, unit: &Unit, units: &[Unit]) -> Vec<(PathBuf, usize)> {
    let mut found = Vec::new();
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
                found.push((reference.clone(), line));
            }
        }
    }
    found
}

/// The problem of an encrypted file that a `configMapGenerator` reads: its plaintext would
/// be a ConfigMap's data, which reports and logs show (only Secret data is masked).
pub fn feeds_a_config_map(file: &Path, line: usize, unit_file: &Path) -> Problem {
    Problem::new(
        file,
        line,
        format!(
            "this SOPS-encrypted file feeds a configMapGenerator of {}: its decrypted values would be shown in diffs and reports like any ConfigMap data; generate a Secret from it (secretGenerator), whose data tend always masks",
            unit_file.display()
        ),
    )
}

/// The problem of a decrypted YAML or JSON input (not a `secretGenerator`'s) holding an
/// object other than a Secret: what kustomize makes of it cannot be traced back to the
/// fields sops sealed, so, unlike a plain file's, they could not be masked in reports.
pub fn exposes_values(file: &Path, line: usize, plain: &[u8], unit_file: &Path) -> Option<Problem> {
    let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !matches!(ext, "yaml" | "yml" | "json") {
        return None;
    }
    let (docs, _) = crate::yaml::parse_file(file, &String::from_utf8_lossy(plain));
    let kind = docs.iter().find_map(|d| {
        d.value
            .get("kind")
            .and_then(|k| k.as_str())
            .filter(|k| *k != "Secret")
            .map(str::to_string)
    })?;
    Some(Problem::new(
        file,
        line,
        format!(
            "this SOPS-encrypted {kind} is an input of the kustomization {}: tend masks the encrypted fields of plain files and the data of Secrets, but cannot tell which fields of kustomize's output were encrypted; keep encrypted values in Secrets in kustomizations, or move this file out of the kustomization",
            unit_file.display()
        ),
    ))
}

/// Decrypt the encrypted inputs of `units`: the plaintext of each, or one problem per file
/// that does not open (then its units are not built).
pub fn decrypt_inputs(
    root: &Path,
    inputs: &[(PathBuf, usize)],
    keys: &Keys,
    unit_file: &Path,
) -> Result<Vec<Decrypted>, Vec<Problem>> {
    let mut plain = Vec::new();
    let mut problems = Vec::new();
    for (file, line) in inputs {
        if file.starts_with("..") {
            problems.push(Problem::new(
                file,
                *line,
                format!("this SOPS-encrypted input of {} lies outside the walked directory, where tend cannot decrypt it for kustomize; move it inside, or widen --path", unit_file.display()),
            ));
            continue;
        }
        let text = std::fs::read(root.join(file)).unwrap_or_default();
        match sops::formats::decrypt_file(file, &String::from_utf8_lossy(&text), keys) {
            Ok(bytes) => plain.push((file.clone(), bytes)),
            Err(err) => problems.push(Problem::new(
                file,
                *line,
                format!(
                    "{err} (an input of the kustomization {})",
                    unit_file.display()
                ),
            )),
        }
    }
    if problems.is_empty() {
        Ok(plain)
    } else {
        Err(problems)
    }
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
