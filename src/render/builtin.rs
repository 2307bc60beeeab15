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
];

/// Groups whose kinds are all in [`BUILTIN_KINDS`]: a kind or version in these groups that is
/// not in the table is a typo or a removed API, so it is an error even offline.
pub fn is_builtin_group(group: &str) -> bool {
    BUILTIN_KINDS.iter().any(|(g, _, _, _)| *g == group)
}

/// Namespaced-ness of a built-in kind, or `None` if the kind is not built in.
pub fn builtin_scope(group: &str, version: &str, kind: &str) -> Option<bool> {
    BUILTIN_KINDS
        .iter()
        .find(|(g, v, k, _)| *g == group && *v == version && *k == kind)
        .map(|(_, _, _, namespaced)| *namespaced)
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
