//! The built-in Kubernetes kinds tend knows offline: whether each is namespaced, and its
//! apply stage. Online, discovery is the authority; this table lets `tend render` default
//! namespaces and catch typos in well-known groups without a cluster.

/// (group, version, kind, namespaced)
pub const BUILTIN_KINDS: &[(&str, &str, &str, bool)] = &[
    ("", "v1", "Binding", true),
    ("", "v1", "ConfigMap", true),
    ("", "v1", "Endpoints", true),
    ("", "v1", "Event", true),
    ("", "v1", "LimitRange", true),
    ("", "v1", "Namespace", false),
    ("", "v1", "Node", false),
    ("", "v1", "PersistentVolume", false),
    ("", "v1", "PersistentVolumeClaim", true),
    ("", "v1", "Pod", true),
    ("", "v1", "PodTemplate", true),
    ("", "v1", "ReplicationController", true),
    ("", "v1", "ResourceQuota", true),
    ("", "v1", "Secret", true),
    ("", "v1", "Service", true),
    ("", "v1", "ServiceAccount", true),
    ("apps", "v1", "ControllerRevision", true),
    ("apps", "v1", "DaemonSet", true),
    ("apps", "v1", "Deployment", true),
    ("apps", "v1", "ReplicaSet", true),
    ("apps", "v1", "StatefulSet", true),
    ("batch", "v1", "CronJob", true),
    ("batch", "v1", "Job", true),
    ("autoscaling", "v1", "HorizontalPodAutoscaler", true),
    ("autoscaling", "v2", "HorizontalPodAutoscaler", true),
    ("policy", "v1", "PodDisruptionBudget", true),
    ("networking.k8s.io", "v1", "Ingress", true),
    ("networking.k8s.io", "v1", "IngressClass", false),
    ("networking.k8s.io", "v1", "NetworkPolicy", true),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", false),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        false,
    ),
    ("rbac.authorization.k8s.io", "v1", "Role", true),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", true),
    ("coordination.k8s.io", "v1", "Lease", true),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        false,
    ),
    ("storage.k8s.io", "v1", "CSIDriver", false),
    ("storage.k8s.io", "v1", "StorageClass", false),
    ("storage.k8s.io", "v1", "VolumeAttachment", false),
    ("scheduling.k8s.io", "v1", "PriorityClass", false),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        false,
    ),
    ("node.k8s.io", "v1", "RuntimeClass", false),
    ("discovery.k8s.io", "v1", "EndpointSlice", true),
    (
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        false,
    ),
    ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", false),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        false,
    ),
    ("apiregistration.k8s.io", "v1", "APIService", false),
    // Served by Kubernetes 1.33 to 1.36, beta and alpha versions included (a cluster may
    // enable them), so an offline render does not refuse what a current cluster serves.
    ("", "v1", "ComponentStatus", false),
    ("storage.k8s.io", "v1", "CSINode", false),
    ("storage.k8s.io", "v1", "CSIStorageCapacity", true),
    ("storage.k8s.io", "v1", "VolumeAttributesClass", false),
    ("storage.k8s.io", "v1beta1", "VolumeAttributesClass", false),
    ("storage.k8s.io", "v1alpha1", "VolumeAttributesClass", false),
    ("networking.k8s.io", "v1", "ServiceCIDR", false),
    ("networking.k8s.io", "v1", "IPAddress", false),
    ("networking.k8s.io", "v1beta1", "ServiceCIDR", false),
    ("networking.k8s.io", "v1beta1", "IPAddress", false),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingAdmissionPolicy",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingAdmissionPolicyBinding",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1beta1",
        "MutatingAdmissionPolicy",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1beta1",
        "MutatingAdmissionPolicyBinding",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1alpha1",
        "MutatingAdmissionPolicy",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1alpha1",
        "MutatingAdmissionPolicyBinding",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1beta1",
        "ValidatingAdmissionPolicy",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1beta1",
        "ValidatingAdmissionPolicyBinding",
        false,
    ),
    (
        "certificates.k8s.io",
        "v1beta1",
        "ClusterTrustBundle",
        false,
    ),
    (
        "certificates.k8s.io",
        "v1alpha1",
        "ClusterTrustBundle",
        false,
    ),
    (
        "certificates.k8s.io",
        "v1beta1",
        "PodCertificateRequest",
        true,
    ),
    (
        "certificates.k8s.io",
        "v1alpha1",
        "PodCertificateRequest",
        true,
    ),
    ("coordination.k8s.io", "v1beta1", "LeaseCandidate", true),
    ("coordination.k8s.io", "v1alpha2", "LeaseCandidate", true),
];

/// Groups of [`BUILTIN_KINDS`]: a known kind at a version not in the table is a removed API,
/// and a kind that is one slip from a known kind is a typo, so both are errors even offline.
pub fn is_builtin_group(group: &str) -> bool {
    BUILTIN_KINDS.iter().any(|(g, _, _, _)| *g == group)
}

/// Whether `kind`, unknown in `group`, is most likely a misspelt known kind of it (a case
/// slip, or at most two letters changed, added or removed). A kind far from every known one
/// is left to the cluster: Kubernetes adds kinds to its groups in every release.
pub fn looks_misspelt(group: &str, kind: &str) -> bool {
    BUILTIN_KINDS
        .iter()
        .filter(|(g, _, _, _)| *g == group)
        .any(|(_, _, known, _)| known.eq_ignore_ascii_case(kind) || edit_distance(known, kind) <= 2)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// Namespaced-ness of a built-in kind, or `None` if the kind is not built in.
pub fn builtin_scope(group: &str, version: &str, kind: &str) -> Option<bool> {
    BUILTIN_KINDS
        .iter()
        .find(|(g, v, k, _)| *g == group && *v == version && *k == kind)
        .map(|(_, _, _, namespaced)| *namespaced)
}

/// Drops `metadata.namespace` from a built-in cluster-scoped object, as kube-apiserver does on
/// write: kustomize's namespace transformer (a kustomization's `namespace`, Flux's
/// `targetNamespace`) sets it on kinds its schema does not know, and kubectl and Flux apply
/// the result without complaint; charts set it too (`namespace: {{ .Release.Namespace }}` on
/// a ClusterRole), and `helm install` applies them so.
pub fn clear_namespace_if_cluster_scoped(value: &mut serde_json::Value) {
    let api_version = value.get("apiVersion").and_then(|v| v.as_str());
    let kind = value.get("kind").and_then(|v| v.as_str());
    let (Some(api_version), Some(kind)) = (api_version, kind) else {
        return;
    };
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    if builtin_scope(group, version, kind) == Some(false) {
        if let Some(meta) = value.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            meta.remove("namespace");
        }
    }
}

/// Versions of a built-in kind that exist, for "did you mean" hints.
pub fn builtin_versions(group: &str, kind: &str) -> Vec<&'static str> {
    BUILTIN_KINDS
        .iter()
        .filter(|(g, _, k, _)| *g == group && *k == kind)
        .map(|(_, v, _, _)| *v)
        .collect()
}

/// Apply stage of an object: lower stages are applied first and pruned last (README "Reconcile (diff and apply)").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// CustomResourceDefinitions (applied, then waited on until Established).
    Crds,
    Namespaces,
    /// RBAC, ServiceAccounts, ConfigMaps, Secrets, storage: what workloads depend on.
    Foundations,
    /// Workloads and everything else.
    Workloads,
    /// tend's own custom resources, last, so their status reflects what was applied.
    TendResources,
}

pub fn stage_of(group: &str, kind: &str) -> Stage {
    match (group, kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Stage::Crds,
        ("", "Namespace") => Stage::Namespaces,
        ("rbac.authorization.k8s.io", _)
        | ("", "ServiceAccount" | "ConfigMap" | "Secret" | "PersistentVolumeClaim")
        | ("", "PersistentVolume" | "LimitRange" | "ResourceQuota")
        | ("storage.k8s.io", "StorageClass")
        | ("scheduling.k8s.io", "PriorityClass") => Stage::Foundations,
        (crate::GROUP, _) => Stage::TendResources,
        _ => Stage::Workloads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slips_from_a_known_kind_are_typos_and_new_kinds_are_left_to_the_cluster() {
        assert!(looks_misspelt("apps", "Deploymnet"));
        assert!(looks_misspelt("", "Configmap"));
        assert!(looks_misspelt("", "ConfigMaps"));
        assert!(!looks_misspelt("resource.k8s.io", "ResourceClaim"));
        assert!(!looks_misspelt("scheduling.k8s.io", "Workload"));
        assert!(!looks_misspelt("storage.k8s.io", "VolumeSnapshotPolicy"));
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(
            builtin_scope(
                "admissionregistration.k8s.io",
                "v1",
                "MutatingAdmissionPolicy"
            ),
            Some(false)
        );
    }
}
