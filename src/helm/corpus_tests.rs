//! The Helm corpus (`../shared/helm-corpus`) as tend's hooks see it. Whether every render
//! gives Helm's objects is `tests/helm_corpus.rs`.

use super::hooks::{classify, Hook};
use std::path::Path;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/helm-corpus");

/// The corpus's hooks, as tend runs them: ingress-nginx's admission webhook set-up is a
/// pre-install Job and a post-install Job (both Run), with the ServiceAccount and RBAC they
/// use applied before them; podinfo's tests are left out. Ours equal Helm's object for
/// object (tests/helm_corpus.rs), so they map the same way.
#[test]
fn corpus_hooks_map_onto_tend_hooks() {
    let Ok(golden) =
        std::fs::read_to_string(Path::new(CORPUS).join("golden/ingress-nginx/default.yaml"))
    else {
        eprintln!("skipped: no Helm corpus at {CORPUS}");
        return;
    };
    let mut kinds: Vec<(String, Hook)> = Vec::new();
    for doc in golden.split("\n---") {
        if let Some(value) = crate::yaml::parse_value(doc) {
            let hook = classify(&value);
            if hook != Hook::None {
                let kind = value["kind"].as_str().unwrap_or("").to_string();
                kinds.push((kind, hook));
            }
        }
    }
    use super::hooks::When;
    let runs: Vec<&(String, Hook)> = kinds
        .iter()
        .filter(|(_, h)| matches!(h, Hook::Run { .. }))
        .collect();
    assert_eq!(runs.len(), 2, "{kinds:?}");
    assert!(runs.iter().all(|(k, h)| k == "Job"
        && matches!(
            h,
            Hook::Run {
                delete_on_success: true,
                ..
            }
        )));
    assert!(runs.iter().any(|(_, h)| matches!(
        h,
        Hook::Run {
            when: When::Before,
            ..
        }
    )));
    assert!(runs.iter().any(|(_, h)| matches!(
        h,
        Hook::Run {
            when: When::After,
            ..
        }
    )));
    let applied: Vec<&String> = kinds
        .iter()
        .filter(|(_, h)| *h == Hook::Apply { when: When::Before })
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        applied,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding"
        ],
        "{kinds:?}"
    );
}
