//! SOPS-encrypted files among the desired state: decrypted with the run's keys, or a problem
//! of the file (SPEC 2). Never applied as they are.

use crate::problem::Problem;
use crate::sops::{self, Keys, SopsError};
use crate::source::SourceFile;
use crate::yaml::Document;

/// Decrypt `docs` of `file` in place where they are SOPS-encrypted. On a problem the
/// documents are dropped, so that nothing of an undecrypted file goes further.
pub fn decrypt_file(file: &SourceFile, docs: &mut Vec<Document>, keys: &Keys) -> Vec<Problem> {
    let encrypted = docs
        .iter()
        .any(|d| sops::has_metadata(&d.value) || sops::find_sealed(&d.value).is_some());
    if !encrypted {
        return Vec::new();
    }
    if file.unit.is_some() {
        // Inputs are checked before a build; this is what slipped past (a remote base).
        let line = docs.first().map_or(1, |d| d.line);
        docs.clear();
        return vec![Problem::new(
            &file.path,
            line,
            "kustomize built a SOPS-encrypted document (from an input tend could not decrypt before the build); decrypt it or move it out of the kustomization",
        )];
    }
    let mut values: Vec<_> = docs.iter().map(|d| d.value.clone()).collect();
    match sops::decrypt_documents(&mut values, keys) {
        Ok(_) => {
            // Reports mask Secret data only: decrypted values in any other kind would be
            // printed by diff and render, so such a file is refused rather than shown.
            let exposed: Vec<Problem> = docs
                .iter()
                .zip(&values)
                .filter(|(doc, value)| {
                    let plain = sops::strip_metadata(&doc.value);
                    plain != **value && value.get("kind").and_then(|k| k.as_str()) != Some("Secret")
                })
                .map(|(doc, value)| {
                    Problem::new(
                        &file.path,
                        doc.line,
                        format!(
                            "this {} holds SOPS-encrypted values, which tend would print in plain text (only Secret data is masked); keep encrypted values in Secrets",
                            value.get("kind").and_then(|k| k.as_str()).unwrap_or("document")
                        ),
                    )
                })
                .collect();
            if !exposed.is_empty() {
                docs.clear();
                return exposed;
            }
            for (doc, value) in docs.iter_mut().zip(values) {
                doc.set_value(value);
            }
            Vec::new()
        }
        Err(err) => {
            let line = match &err {
                SopsError::Value { doc, path, .. } | SopsError::NoMetadata { doc, path } => {
                    docs.get(*doc).map_or(1, |d| d.line_at(path))
                }
                _ => docs
                    .iter()
                    .rev()
                    .find(|d| sops::has_metadata(&d.value))
                    .map_or(1, |d| d.line_of(&[sops::METADATA_KEY.to_string()])),
            };
            docs.clear();
            vec![Problem::new(&file.path, line, err.to_string())]
        }
    }
}
