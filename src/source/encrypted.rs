//! SOPS-encrypted inputs of kustomize units (resources, patches, generator `files:` and
//! `envs:`, in the unit and every base and component it reaches): kustomize would build them
//! into objects holding ciphertext, so they are decrypted into a private copy of the tree
//! that kustomize builds instead ([`super::private_copy`]), or the unit is reported and not
//! built (README "Encrypted secrets (SOPS)").

use super::kustomize::{self, Unit, KUSTOMIZATION_FILES};
use super::paths::leaves_root;
use super::MAX_FILE_BYTES;
use crate::problem::Problem;
use crate::sops::{self, Keys};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// A decrypted input: its path relative to the walked directory, and its plaintext.
pub type Decrypted = (PathBuf, Zeroizing<Vec<u8>>);

/// `unit` and every kustomization it reaches: the units the walk found, and the directories
/// its references name that hold a kustomization of their own (a `resources:` directory,
/// a component, at any depth). The walk does not descend into a unit, so those below one
/// are found here, by reading their kustomization files.
pub fn reachable_units(root: &Path, unit: &Unit, units: &[Unit]) -> Vec<Unit> {
    let mut reached = Vec::new();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut stack = vec![unit.clone()];
    while let Some(current) = stack.pop() {
        if !seen.insert(current.dir.clone()) {
            continue;
        }
        for reference in &current.refs {
            if let Some(base) = units.iter().find(|u| &u.dir == reference) {
                stack.push(base.clone());
            } else if let Some(nested) = kustomization_in(root, reference) {
                stack.push(nested);
            }
        }
        reached.push(current);
    }
    reached
}

/// The kustomization in directory `dir` (relative to `root`), if it holds one inside `root`.
fn kustomization_in(root: &Path, dir: &Path) -> Option<Unit> {
    if leaves_root(dir) || !root.join(dir).is_dir() {
        return None;
    }
    let name = KUSTOMIZATION_FILES
        .iter()
        .find(|name| root.join(dir).join(name).is_file())?;
    let file = root.join(dir).join(name);
    // A symlink out of the repository is not followed (the build refuses it).
    let real = file.canonicalize().ok()?;
    if !root.canonicalize().is_ok_and(|r| real.starts_with(r)) {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&real)
        .ok()?
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    kustomize::detect(root, dir, &dir.join(name), &String::from_utf8_lossy(&bytes))
}

/// Every encrypted input file of `reached` (the units of one build, [`reachable_units`]),
/// relative to `root`, with the line where its encryption shows.
pub fn encrypted_inputs(root: &Path, reached: &[Unit]) -> Vec<(PathBuf, usize)> {
    let dirs: BTreeSet<&PathBuf> = reached.iter().map(|u| &u.dir).collect();
    let mut seen: BTreeSet<&PathBuf> = BTreeSet::new();
    let mut found = Vec::new();
    for reference in reached.iter().flat_map(|u| &u.refs) {
        if dirs.contains(reference) || !seen.insert(reference) {
            continue;
        }
        if let Some(line) = encrypted_line(&root.join(reference)) {
            found.push((reference.clone(), line));
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

/// The problem of an encrypted values file of a kustomization's `helmCharts`: what the
/// chart makes of its values cannot be traced back to the sealed fields to mask them.
pub fn feeds_a_helm_chart(file: &Path, line: usize, unit_file: &Path) -> Problem {
    Problem::new(
        file,
        line,
        format!(
            "this SOPS-encrypted file is a values file of a helmCharts entry of {}: tend cannot tell which fields of the chart's output came from its sealed values, so it could not mask them in diffs and reports; render the chart with a tend.dev HelmChart, whose encrypted spec.valuesFiles are decrypted and kept out of what tend prints",
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

/// The plaintext strings of decrypted inputs, as a build could copy them (a `replacements`
/// entry taking a Secret's field into a ConfigMap): the `data` and `stringData` strings of
/// YAML and JSON inputs (and what base64 ones decode to), the values of env files, and the
/// whole of other files.
pub fn plaintexts(inputs: &[Decrypted]) -> Vec<String> {
    use base64::Engine as _;
    fn leaves(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(s) => {
                if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(s) {
                    out.extend(String::from_utf8(bytes).ok());
                }
                out.push(s.clone());
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
            serde_json::Value::Object(map) => map.values().for_each(|v| leaves(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (file, bytes) in inputs {
        let text = String::from_utf8_lossy(bytes);
        match file.extension().and_then(|e| e.to_str()).unwrap_or("") {
            "yaml" | "yml" | "json" => {
                // Only Secrets are decrypted for a build (other kinds are refused first).
                let (docs, _) = crate::yaml::parse_file(file, &text);
                for doc in &docs {
                    for field in ["data", "stringData"] {
                        doc.value
                            .get(field)
                            .iter()
                            .for_each(|v| leaves(v, &mut out));
                    }
                }
            }
            "env" => out.extend(
                text.lines()
                    .filter_map(|l| l.split_once('=').map(|(_, v)| v.trim().to_string())),
            ),
            _ => out.push(text.trim().to_string()),
        }
    }
    out.retain(|s| s.chars().count() >= crate::sops::leaks::MIN_TRACKED_CHARS);
    out
}

/// Problems of a build from decrypted inputs whose output shows one of `forms` (of their
/// plaintexts) anywhere but a core Secret's data, each at the output's line.
pub fn exposed_in_build(built: &[super::SourceFile], forms: &[String]) -> Vec<Problem> {
    let mut problems = Vec::new();
    for file in built {
        let (docs, _) = crate::yaml::parse_file(&file.path, &file.text);
        for doc in docs {
            let mut value = doc.value.clone();
            if crate::sops::leaks::is_core_secret(&value) {
                if let Some(map) = value.as_object_mut() {
                    map.remove("data");
                    map.remove("stringData");
                }
            }
            if let Some(path) = crate::sops::leaks::find(&value, forms) {
                let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or("");
                problems.push(Problem::new(
                    &file.path,
                    doc.line_at(&path),
                    format!("a value decrypted from a SOPS-encrypted input of this build reaches this {kind}, which tend would print in plain text (only Secret data is masked); keep decrypted values in Secrets (check the kustomization's `replacements`)"),
                ));
            }
        }
    }
    problems
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
        if leaves_root(file) {
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

/// The decrypted inputs of the build of `reached` (the units of one build,
/// [`reachable_units`]), none when it reads no encrypted file; or why they cannot be given to
/// the build: tend masks Secret data only, so decrypted values must not become a ConfigMap's
/// or a chart's values, nor a decrypted YAML or JSON input an object other than a Secret.
/// Each problem is named by the kustomization that reads the file.
pub fn decrypt_for_build(
    root: &Path,
    reached: &[Unit],
    keys: &Keys,
    unit_file: &Path,
) -> Result<Vec<Decrypted>, Vec<Problem>> {
    let inputs = encrypted_inputs(root, reached);
    if inputs.is_empty() {
        return Ok(Vec::new());
    }
    let into_config_maps: Vec<Problem> = inputs
        .iter()
        .filter_map(|(file, line)| {
            let owner = reached.iter().find(|u| u.config_map_inputs.contains(file));
            if let Some(owner) = owner {
                return Some(feeds_a_config_map(file, *line, &owner.file));
            }
            let owner = reached
                .iter()
                .find(|u| u.helm_values_inputs.contains(file))?;
            Some(feeds_a_helm_chart(file, *line, &owner.file))
        })
        .collect();
    if !into_config_maps.is_empty() {
        return Err(into_config_maps);
    }
    let secret_inputs: BTreeSet<&PathBuf> = reached.iter().flat_map(|u| &u.secret_inputs).collect();
    let files = decrypt_inputs(root, &inputs, keys, unit_file)?;
    let exposed: Vec<Problem> = files
        .iter()
        .zip(&inputs)
        .filter(|((file, _), _)| !secret_inputs.contains(file))
        .filter_map(|((file, plain), (_, line))| exposes_values(file, *line, plain, unit_file))
        .collect();
    if exposed.is_empty() {
        Ok(files)
    } else {
        Err(exposed)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, name: &str, text: &str) {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn nested_kustomizations_are_reached_once_even_in_a_cycle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        write(&root, "kustomization.yaml", "resources: [a, plain.yaml]\n");
        write(&root, "plain.yaml", "kind: ConfigMap\n");
        write(&root, "a/kustomization.yaml", "resources: [b]\n");
        // b refers back to a: kustomize refuses the cycle; tend must still end.
        write(&root, "a/b/Kustomization", "resources: [..]\n");
        let top = kustomize::detect(
            &root,
            Path::new(""),
            Path::new("kustomization.yaml"),
            "resources: [a, plain.yaml]\n",
        )
        .expect("a unit");
        let reached = reachable_units(&root, &top, &[]);
        let dirs: Vec<PathBuf> = reached.iter().map(|u| u.dir.clone()).collect();
        assert_eq!(
            dirs,
            [PathBuf::new(), PathBuf::from("a"), PathBuf::from("a/b")]
        );
        assert_eq!(reached[2].file, Path::new("a/b/Kustomization"));
    }

    #[cfg(unix)]
    #[test]
    fn a_kustomization_symlinked_out_of_the_repository_is_not_read() {
        let outside = tempfile::tempdir().expect("tempdir");
        write(
            outside.path(),
            "kustomization.yaml",
            "resources: [x.yaml]\n",
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("link")).expect("mkdir");
        std::os::unix::fs::symlink(
            outside.path().join("kustomization.yaml"),
            root.join("link/kustomization.yaml"),
        )
        .expect("symlink");
        assert!(kustomization_in(&root, Path::new("link")).is_none());
        assert!(kustomization_in(&root, Path::new("../x")).is_none());
    }
}
