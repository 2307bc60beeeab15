//! The annotations kustomize adds while building, which describe the build, not the object:
//! removed from what a kustomize build unit outputs before it is rendered.

use crate::problem::Problem;
use crate::yaml::{self, Document};
use serde_json::Value;
use std::path::Path;

/// Parse one source file: [`yaml::parse_file`], and for text that kustomize built (`built`), without
/// kustomize's build annotations (README "Kustomize": they describe the build, not the object).
pub fn parse_source(file: &Path, text: &str, built: bool) -> (Vec<Document>, Vec<Problem>) {
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
    }
    (docs, problems)
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
    }
}
