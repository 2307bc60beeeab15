//! The annotations kustomize adds while building, which describe the build, not the object:
//! removed from what a kustomize build unit outputs before it is rendered.

use crate::problem::Problem;
use crate::yaml::{self, Document};
use serde_json::Value;
use std::path::Path;

/// Parse one source file: [`yaml::parse_file`], and for text that kustomize built (`built`), without
/// kustomize's build annotations (README "Kustomize": they describe the build, not the object).
pub fn parse_source(file: &Path, text: &str, built: bool) -> (Vec<Document>, Vec<Problem>) {
    if built {
        if let Some(docs) = parsed_builds::before(file, text) {
            return (docs, Vec::new());
        }
    }
    let (mut docs, problems) = yaml::parse_file(file, text);
    if built {
        for doc in &mut docs {
            let mut value = std::mem::take(&mut doc.value);
            if strip_build_annotations(&mut value) {
                // Typed parsing must then take the value: the text would put them back.
                doc.set_value(value);
            } else {
                doc.value = value;
            }
        }
        if problems.is_empty() {
            parsed_builds::keep(file, text, &docs);
        }
    }
    (docs, problems)
}

/// Text units built (kustomize builds), as parsed, for the rest of the process: a run reads
/// a unit's output more than once (scanning it for units, then rendering it; again for each
/// cluster of a fleet or hub's spoke reading the same source), and parsing the YAML is the
/// costly part (a third of a hub-and-spoke diff). Keyed by path and a hash of the text, the
/// text compared in full; plain files are not kept (a 10,000-object site would double its
/// memory for nothing: it is parsed once).
mod parsed_builds {
    use crate::yaml::Document;
    use std::collections::HashMap;
    use std::hash::{Hash, Hasher};
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, OnceLock};

    type Parsed = HashMap<(PathBuf, u64), (String, Vec<Document>)>;

    fn parsed() -> std::sync::MutexGuard<'static, Parsed> {
        static PARSED: OnceLock<Mutex<Parsed>> = OnceLock::new();
        // A poisoned lock only means a parse panicked elsewhere: what is kept is whole.
        PARSED
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn key(file: &Path, text: &str) -> (PathBuf, u64) {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        (file.to_path_buf(), hasher.finish())
    }

    pub(super) fn before(file: &Path, text: &str) -> Option<Vec<Document>> {
        let parsed = parsed();
        let (kept_text, docs) = parsed.get(&key(file, text))?;
        (kept_text == text).then(|| docs.clone())
    }

    pub(super) fn keep(file: &Path, text: &str, docs: &[Document]) {
        parsed().insert(key(file, text), (text.to_string(), docs.to_vec()));
    }
}

/// Annotations kustomize (and kyaml) add while building, never meant for the cluster: the
/// origin and transformer records of `buildMetadata`, and kyaml's internal bookkeeping.
pub fn is_build_annotation(key: &str) -> bool {
    matches!(
        key,
        "config.kubernetes.io/origin"
            | "alpha.config.kubernetes.io/transformations"
            | "config.kubernetes.io/path"
            | "config.kubernetes.io/index"
            | "config.k8s.io/id"
            | "kustomize.config.k8s.io/id"
    ) || key.starts_with("internal.config.kubernetes.io/")
}

/// Remove kustomize's build annotations (and an `annotations` mapping left empty by that).
/// Whether anything was removed.
fn strip_build_annotations(value: &mut Value) -> bool {
    let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) else {
        return false;
    };
    let before = annotations.len();
    annotations.retain(|key, _| !is_build_annotation(key));
    if annotations.len() == before {
        return false;
    }
    if annotations.is_empty() {
        meta.remove("annotations");
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_documents_lose_build_annotations() {
        let path = Path::new("x (kustomize build)");
        let text = "kind: A\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/origin: |\n      path: a.yaml\n    internal.config.kubernetes.io/x: y\n---\nkind: B\nmetadata:\n  annotations:\n    keep: me\n    config.kubernetes.io/origin: x\n";
        let (docs, _) = parse_source(path, text, true);
        assert!(docs[0].value["metadata"].get("annotations").is_none());
        assert_eq!(
            docs[1].value["metadata"]["annotations"],
            serde_json::json!({"keep": "me"})
        );
        let typed: Value = docs[0].parse_typed(Path::new("x")).unwrap();
        assert!(typed["metadata"].get("annotations").is_none());
        // A plain file keeps them.
        let (docs, _) = parse_source(path, text, false);
        assert!(docs[0].value["metadata"]["annotations"].is_object());
        // The same built text again: as parsed the first time.
        let (again, _) = parse_source(path, text, true);
        assert_eq!(again.len(), 2);
        assert!(again[0].value["metadata"].get("annotations").is_none());
        let typed: Value = again[0].parse_typed(Path::new("x")).unwrap();
        assert!(typed["metadata"].get("annotations").is_none());
    }
}
