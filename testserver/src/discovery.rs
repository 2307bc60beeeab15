//! The resources the server knows (built-ins and CRD-registered ones) and the discovery
//! documents: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/<group>[/<version>]`, and
//! aggregated discovery (apidiscovery.k8s.io v2 / v2beta1) on `/api` and `/apis`.

use crate::schema::{self, Ty};
use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct ResourceDef {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<String>,
    /// Has a `/status` subresource (main-resource writes then ignore status).
    pub status: bool,
    /// Tracks metadata.generation.
    pub generation: bool,
    /// Name of the CRD that registered this resource.
    pub crd: Option<String>,
    pub ty: Ty,
}

impl ResourceDef {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Key under which objects are stored (shared by all versions of a group/resource).
    pub fn store_key(&self) -> (String, String) {
        (self.group.clone(), self.plural.clone())
    }
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn def(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    short: &[&str],
    status: bool,
) -> ResourceDef {
    let mut verbs: Vec<String> = ALL_VERBS.iter().map(|s| s.to_string()).collect();
    if plural == "namespaces" {
        verbs.retain(|v| v != "deletecollection");
    }
    let workload = matches!(
        plural,
        "deployments" | "statefulsets" | "daemonsets" | "replicasets" | "jobs" | "cronjobs"
    );
    let categories = if workload || matches!(plural, "pods" | "services") {
        vec!["all".to_string()]
    } else {
        vec![]
    };
    ResourceDef {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        namespaced,
        short_names: short.iter().map(|s| s.to_string()).collect(),
        categories,
        verbs,
        status,
        generation: workload || plural == "customresourcedefinitions",
        crd: None,
        ty: schema::builtin(kind),
    }
}

pub fn builtin_resources() -> Vec<ResourceDef> {
    vec![
        def("", "v1", "Namespace", "namespaces", false, &["ns"], true),
        def("", "v1", "ConfigMap", "configmaps", true, &["cm"], false),
        def("", "v1", "Secret", "secrets", true, &[], false),
        def("", "v1", "Service", "services", true, &["svc"], true),
        def("", "v1", "Pod", "pods", true, &["po"], true),
        def(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            true,
            &["sa"],
            false,
        ),
        def(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            true,
            &["pvc"],
            true,
        ),
        def("", "v1", "Event", "events", true, &["ev"], false),
        def(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            true,
            &["deploy"],
            true,
        ),
        def(
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            true,
            &["sts"],
            true,
        ),
        def("apps", "v1", "DaemonSet", "daemonsets", true, &["ds"], true),
        def(
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            true,
            &["rs"],
            true,
        ),
        def("batch", "v1", "Job", "jobs", true, &[], true),
        def("batch", "v1", "CronJob", "cronjobs", true, &["cj"], true),
        def(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            true,
            &[],
            false,
        ),
        def(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            true,
            &[],
            false,
        ),
        def(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            false,
            &[],
            false,
        ),
        def(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
            &[],
            false,
        ),
        // What charts commonly hold besides workloads (ingress-nginx, cert-manager).
        def(
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            true,
            &["ing"],
            true,
        ),
        def(
            "networking.k8s.io",
            "v1",
            "IngressClass",
            "ingressclasses",
            false,
            &[],
            false,
        ),
        def(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
            &[],
            false,
        ),
        def(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            false,
            &[],
            false,
        ),
        def(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            true,
            &[],
            false,
        ),
        def(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            &["crd", "crds"],
            true,
        ),
    ]
}

pub fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": "36",
        "emulationMajor": "1",
        "emulationMinor": "36",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "35",
        "gitVersion": "v1.36.0-tend-testserver",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-04-22T00:00:00Z",
        "goVersion": "go1.25.8",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// Groups in serving order, each with its versions (preferred first).
fn groups(defs: &[ResourceDef]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for d in defs.iter().filter(|d| !d.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == d.group) {
            Some((_, vs)) => {
                if !vs.contains(&d.version) {
                    vs.push(d.version.clone());
                }
            }
            None => out.push((d.group.clone(), vec![d.version.clone()])),
        }
    }
    out
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "name": name,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

pub fn api_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]
    })
}

pub fn api_group_list(defs: &[ResourceDef]) -> Value {
    let gs: Vec<Value> = groups(defs)
        .iter()
        .map(|(g, vs)| group_json(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": gs})
}

pub fn api_group(defs: &[ResourceDef], group: &str) -> Option<Value> {
    let (g, vs) = groups(defs).into_iter().find(|(g, _)| g == group)?;
    let mut v = group_json(&g, &vs);
    v["kind"] = "APIGroup".into();
    v["apiVersion"] = "v1".into();
    Some(v)
}

pub fn resource_list(defs: &[ResourceDef], group: &str, version: &str) -> Option<Value> {
    let mine: Vec<&ResourceDef> = defs
        .iter()
        .filter(|d| d.group == group && d.version == version)
        .collect();
    if mine.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for d in mine {
        let mut r = json!({
            "name": d.plural,
            "singularName": d.singular,
            "namespaced": d.namespaced,
            "kind": d.kind,
            "verbs": d.verbs,
        });
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        if !d.categories.is_empty() {
            r["categories"] = json!(d.categories);
        }
        resources.push(r);
        if d.status {
            resources.push(json!({
                "name": format!("{}/status", d.plural),
                "singularName": "",
                "namespaced": d.namespaced,
                "kind": d.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// Aggregated discovery for the core group (`core == true`, served on `/api`) or for all
/// named groups (`/apis`). `version` is `v2` or `v2beta1`.
pub fn aggregated(defs: &[ResourceDef], core: bool, version: &str) -> Value {
    let mut items = Vec::new();
    let group_names: Vec<(String, Vec<String>)> = if core {
        vec![(String::new(), vec!["v1".to_string()])]
    } else {
        groups(defs)
    };
    for (g, vs) in group_names {
        let versions: Vec<Value> = vs
            .iter()
            .map(|v| {
                let resources: Vec<Value> = defs
                    .iter()
                    .filter(|d| d.group == g && d.version == *v)
                    .map(|d| {
                        let gvk = json!({"group": d.group, "version": d.version, "kind": d.kind});
                        let mut r = json!({
                            "resource": d.plural,
                            "responseKind": gvk,
                            "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
                            "singularResource": d.singular,
                            "verbs": d.verbs,
                        });
                        if !d.short_names.is_empty() {
                            r["shortNames"] = json!(d.short_names);
                        }
                        if !d.categories.is_empty() {
                            r["categories"] = json!(d.categories);
                        }
                        if d.status {
                            r["subresources"] = json!([{
                                "subresource": "status",
                                "responseKind": gvk,
                                "verbs": ["get", "patch", "update"],
                            }]);
                        }
                        r
                    })
                    .collect();
                json!({"version": v, "resources": resources, "freshness": "Current"})
            })
            .collect();
        let metadata = if g.is_empty() {
            json!({"creationTimestamp": null})
        } else {
            json!({"name": g, "creationTimestamp": null})
        };
        items.push(json!({"metadata": metadata, "versions": versions}));
    }
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

/// Which aggregated discovery version the Accept header asks for first, if any.
pub fn wants_aggregated(accept: &str) -> Option<&'static str> {
    for part in accept.split(',') {
        let p = part.replace(' ', "");
        if p.contains("g=apidiscovery.k8s.io") && p.contains("as=APIGroupDiscoveryList") {
            if p.contains("v=v2beta1") {
                return Some("v2beta1");
            }
            if p.contains("v=v2") {
                return Some("v2");
            }
        } else if p.starts_with("application/json") || p.starts_with("*/*") {
            return None;
        }
    }
    None
}

/// True when the Accept header would also take the plain legacy document.
pub fn accepts_plain_json(accept: &str) -> bool {
    accept.is_empty()
        || accept.split(',').any(|p| {
            let p = p.trim();
            (p.starts_with("application/json") && !p.contains("g=")) || p.starts_with("*/*")
        })
}
