//! A render printed as `helm template` prints it (helm/helm `pkg/action` `renderResources`,
//! `pkg/releaseutil` `SortManifests` and `cmd/helm/template.go`), so users can diff tend's
//! render against their Helm's: the `crds/` files first (with `--include-crds`), then every
//! document that is not a hook in Helm's install order by kind, then the hooks (also by
//! kind), each after a `---` and a `# Source: <chart>/<path>` line.

use super::chart::{split_documents, Manifest};
use serde_json::Value;

/// Helm's `InstallOrder`: kinds earlier in the list print first; other kinds after them,
/// sorted by name; the order within a kind is the templates' (by path, then document).
const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
];

/// The hook events Helm knows (`test-success` is Helm 2's name for `test`).
const HOOK_EVENTS: &[&str] = &[
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

/// One document to print: its template's full path, its kind and text.
struct Entry<'a> {
    path: String,
    kind: String,
    text: &'a str,
    test: bool,
}

/// `lessByKind` as a sort key: known kinds by their place, then unknown kinds by name.
fn kind_key(kind: &str) -> (usize, &str) {
    match INSTALL_ORDER.iter().position(|k| *k == kind) {
        Some(i) => (i, ""),
        None => (INSTALL_ORDER.len(), kind),
    }
}

/// What `helm template <release> <chart> [--include-crds] [--skip-tests]` prints for the
/// render `manifests` of the chart named `chart`, or Helm's error for a document whose head
/// (kind, name, annotations) is not YAML.
pub fn helm_template_text(
    chart: &str,
    manifests: &[Manifest],
    include_crds: bool,
    skip_tests: bool,
) -> Result<String, String> {
    let mut release_manifest = String::new();
    if include_crds {
        for m in manifests.iter().filter(|m| m.crd) {
            release_manifest.push_str(&format!(
                "---\n# Source: {chart}/{}\n{}\n",
                m.template, m.text
            ));
        }
    }
    let mut templates: Vec<&Manifest> = manifests.iter().filter(|m| !m.crd).collect();
    templates.sort_by(|a, b| a.template.cmp(&b.template));
    let mut generic = Vec::new();
    let mut hooks = Vec::new();
    for m in templates {
        let path = format!("{chart}/{}", m.template);
        for text in split_documents(&m.text) {
            let head = crate::yaml::parse_helm_yaml(text)
                .map_err(|e| format!("YAML parse error on {path}: {e}"))?;
            let kind = head
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let hook = head
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(super::hooks::HOOK))
                .and_then(Value::as_str);
            let entry = Entry {
                path: path.clone(),
                kind,
                text,
                test: false,
            };
            match hook {
                None => generic.push(entry),
                Some(events) => {
                    let events: Vec<String> = events
                        .split(',')
                        .map(|e| e.trim().to_ascii_lowercase())
                        .collect();
                    // A hook naming an event Helm does not know is left out entirely.
                    if events.iter().all(|e| HOOK_EVENTS.contains(&e.as_str())) {
                        let test = events.iter().any(|e| e == "test" || e == "test-success");
                        hooks.push(Entry { test, ..entry });
                    }
                }
            }
        }
    }
    // Stable: documents of one kind keep their order.
    generic.sort_by(|a, b| kind_key(&a.kind).cmp(&kind_key(&b.kind)));
    hooks.sort_by(|a, b| kind_key(&a.kind).cmp(&kind_key(&b.kind)));
    for e in &generic {
        release_manifest.push_str(&format!("---\n# Source: {}\n{}\n", e.path, e.text));
    }
    let mut out = format!("{}\n", release_manifest.trim());
    for e in hooks.iter().filter(|e| !(skip_tests && e.test)) {
        out.push_str(&format!("---\n# Source: {}\n{}\n", e.path, e.text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(template: &str, crd: bool, text: &str) -> Manifest {
        Manifest {
            template: template.into(),
            crd,
            text: text.into(),
            random: false,
        }
    }

    #[test]
    fn kinds_in_install_order_hooks_last_crds_first() {
        let manifests = [
            manifest(
                "templates/a.yaml",
                false,
                "kind: Deployment\nmetadata:\n  name: d\n---\nkind: Widget\nmetadata:\n  name: w",
            ),
            manifest(
                "templates/b.yaml",
                false,
                "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install",
            ),
            manifest(
                "templates/c.yaml",
                false,
                "kind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test",
            ),
            manifest(
                "templates/d.yaml",
                false,
                "kind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    helm.sh/hook: unknown-event",
            ),
            manifest("templates/e.yaml", false, "kind: Service\nmetadata:\n  name: s"),
            manifest("crds/x.yaml", true, "kind: CustomResourceDefinition\n"),
        ];
        let text = helm_template_text("app", &manifests, true, false).unwrap();
        let sources: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# Source: "))
            .collect();
        assert_eq!(
            sources,
            [
                "app/crds/x.yaml",
                "app/templates/e.yaml",
                "app/templates/a.yaml",
                "app/templates/a.yaml",
                // Hooks by kind too: the Pod before the Job.
                "app/templates/c.yaml",
                "app/templates/b.yaml"
            ]
        );
        assert!(text.starts_with(
            "---\n# Source: app/crds/x.yaml\nkind: CustomResourceDefinition\n\n---\n"
        ));
        let skipped = helm_template_text("app", &manifests, false, true).unwrap();
        assert!(!skipped.contains("templates/c.yaml") && !skipped.contains("crds/x.yaml"));
        assert!(helm_template_text(
            "app",
            &[manifest("templates/z.yaml", false, "a: [")],
            false,
            false
        )
        .unwrap_err()
        .starts_with("YAML parse error on app/templates/z.yaml"));
    }
}
