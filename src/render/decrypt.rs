//! SOPS-encrypted files among the desired state: decrypted with the run's keys, or a problem
//! of the file (README "Encrypted secrets (SOPS)"). Never applied as they are.

use crate::problem::Problem;
use crate::sops::{self, Keys, SopsError};
use crate::source::SourceFile;
use crate::yaml::{self, Document};

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
    // Which leaves were sealed, and where the metadata is (for a problem's line), are read
    // before the values are taken out to be decrypted in place.
    let sealed: Vec<Vec<String>> = docs
        .iter()
        .map(|d| sops::sealed_pointers(&d.value))
        .collect();
    let metadata_doc = docs.iter().rposition(|d| sops::has_metadata(&d.value));
    let mut values: Vec<_> = docs
        .iter_mut()
        .map(|d| std::mem::take(&mut d.value))
        .collect();
    match sops::decrypt_documents(&mut values, keys) {
        Ok(_) => {
            // Reports mask Secret data by kind; the fields sops sealed are masked in any kind,
            // so an encrypted ConfigMap value is no more printed than a Secret's.
            for ((doc, value), sealed) in docs.iter_mut().zip(values).zip(sealed) {
                doc.sealed = sealed;
                doc.set_decrypted_value(value);
            }
            // A List (of Secrets, a ConfigMapList, ...) is expanded once decrypted: its
            // `sops` block covered it whole.
            let mut problems = Vec::new();
            let mut expanded = Vec::with_capacity(docs.len());
            for doc in docs.drain(..) {
                let (items, found) = yaml::expand_decrypted(&file.path, doc);
                expanded.extend(items.into_iter().map(|mut item| {
                    // An item's name is its identity, printed in every report.
                    item.sealed.retain(|p| !sops::names_the_object(p));
                    item
                }));
                problems.extend(found);
            }
            *docs = expanded;
            problems
        }
        Err(err) => {
            let line = match &err {
                SopsError::Value { doc, path, .. } | SopsError::NoMetadata { doc, path } => {
                    docs.get(*doc).map_or(1, |d| d.line_at(path))
                }
                _ => metadata_doc
                    .and_then(|i| docs.get(i))
                    .map_or(1, |d| d.line_of(&[sops::METADATA_KEY.to_string()])),
            };
            docs.clear();
            vec![Problem::new(&file.path, line, err.to_string())]
        }
    }
}
