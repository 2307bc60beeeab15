//! `RegistryMirror` (README "RegistryMirror"): a pull-through cache of an upstream registry,
//! exposed on every node. Expanded into plain objects by [`expand`]; owns them.

mod kind;
pub mod expand;

use super::checks::{self, FieldChecks};
use super::FieldProblem;
use crate::object::{names, Origin};
use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Default registry image: the CNCF distribution registry, which supports proxy mode.
pub const DEFAULT_IMAGE: &str = "registry:2";
/// Default port the registry listens on inside the cluster.
pub const DEFAULT_PORT: i32 = 5000;
/// Longest mirror name: the StatefulSet's pods get a `controller-revision-hash` label of
/// `<name>-<10 chars>`, and label values are limited to 63 characters.
pub const MAX_NAME_LEN: usize = 52;

/// A pull-through cache of `upstream`, served to every node at `localhost:<hostPort>`.
// Each printcolumn(...) repeats `type_ = ...`, which clippy mistakes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "tend.dev",
    version = "v1alpha1",
    kind = "RegistryMirror",
    namespaced,
    status = "RegistryMirrorStatus",
    derive = "PartialEq",
    shortname = "rm",
    category = "tend",
    doc = "A pull-through cache of a container registry, exposed on every node (tend).",
    printcolumn(name = "UPSTREAM", type_ = "string", json_path = ".spec.upstream"),
    printcolumn(name = "ENDPOINT", type_ = "string", json_path = ".status.endpoint"),
    printcolumn(name = "READY", type_ = "integer", json_path = ".status.readyReplicas"),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegistryMirrorSpec {
    /// The registry to mirror, e.g. `https://registry-1.docker.io`.
    #[schemars(regex(pattern = r"^https?://[^\s/?#]+(/\S*)?$"))]
    pub upstream: String,
    /// Registry image, running in proxy mode.
    #[serde(default = "default_image")]
    #[schemars(length(min = 1))]
    pub image: String,
    /// Port the registry listens on (container and Service).
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// The cache's volume.
    pub storage: MirrorStorage,
    /// Port every node serves the mirror on (`localhost:<hostPort>`).
    #[schemars(range(min = 1, max = 65535))]
    pub host_port: i32,
    /// Render the mirror only for these clusters (`--cluster`). Default: every cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<Vec<String>>,
    /// Resources of the registry container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

fn default_image() -> String {
    DEFAULT_IMAGE.to_string()
}

fn default_port() -> i32 {
    DEFAULT_PORT
}

/// The PersistentVolumeClaim of the cache.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MirrorStorage {
    /// Requested size, a Kubernetes quantity such as `10Gi`.
    // The pattern is the one controller-gen emits for resource.Quantity.
    #[schemars(regex(
        pattern = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
    ))]
    pub size: String,
    /// StorageClass of the claim. Default: the cluster's default StorageClass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

/// Written by `tend apply`.
// Lenient (no `deny_unknown_fields`), so an older tend can read a newer tend's status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryMirrorStatus {
    /// Ready replicas of the registry StatefulSet.
    #[serde(default)]
    pub ready_replicas: i32,
    /// What nodes pull through: `localhost:<hostPort>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// `metadata.generation` this status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Standard conditions (e.g. `Ready`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl RegistryMirrorSpec {
    pub(crate) fn validate(&self, out: &mut Vec<FieldProblem>) {
        let mut p = FieldChecks { out };
        if let Err(why) = upstream_url(&self.upstream) {
            p.push(&["spec", "upstream"], why);
        }
        p.non_empty(
            &["spec", "image"],
            &self.image,
            "a registry image, e.g. registry:2",
        );
        p.range(&["spec", "port"], self.port.into(), 1, Some(65535));
        p.range(&["spec", "hostPort"], self.host_port.into(), 1, Some(65535));
        match checks::parse_quantity(&self.storage.size) {
            None => p.push(
                &["spec", "storage", "size"],
                format!(
                    "{:?} is not a Kubernetes quantity; write e.g. 10Gi or 500Mi",
                    self.storage.size
                ),
            ),
            Some(n) if n <= 0 => p.push(
                &["spec", "storage", "size"],
                format!("must be greater than zero, got {:?}", self.storage.size),
            ),
            Some(_) => {}
        }
        if let Some(class) = &self.storage.storage_class_name {
            if let Err(why) = names::dns1123_subdomain(class) {
                p.push(
                    &["spec", "storage", "storageClassName"],
                    format!("{class:?} is not a valid StorageClass name: {why}"),
                );
            }
        }
        if let Some(clusters) = &self.clusters {
            let path = ["spec", "clusters"];
            if clusters.is_empty() {
                p.push(
                    &path,
                    "is empty, so the mirror would never be rendered; remove the field to render it for every cluster",
                );
            }
            for (i, c) in clusters.iter().enumerate() {
                if c.trim().is_empty() || c.contains([',', ' ']) {
                    p.push(
                        &path,
                        format!("item {i} ({c:?}) must be a single non-empty cluster name (one list item per cluster)"),
                    );
                }
            }
        }
    }
}

/// `upstream` must be an absolute http(s) URL with a host.
fn upstream_url(url: &str) -> Result<(), String> {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return Err(format!(
            "{url:?} must start with https:// or http://, e.g. https://registry-1.docker.io"
        ));
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || url.chars().any(char::is_whitespace) {
        return Err(format!(
            "{url:?} is not a URL with a host, e.g. https://registry-1.docker.io"
        ));
    }
    Ok(())
}

/// Object names derived from the mirror's name must be valid: the ClusterIP Service needs a
/// DNS-1035 label, the StatefulSet's revision label needs at most 52 characters.
pub(crate) fn validate_name(meta: &ObjectMeta, out: &mut Vec<FieldProblem>) {
    let Some(name) = meta.name.as_deref() else {
        return;
    };
    let mut p = FieldChecks { out };
    if let Err(why) = names::dns1035_label(name) {
        p.push(
            &["metadata", "name"],
            format!("{name:?} must be usable as a Service name: {why}"),
        );
    } else if name.len() > MAX_NAME_LEN {
        p.push(
            &["metadata", "name"],
            format!(
                "must be at most {MAX_NAME_LEN} characters (it names a StatefulSet), has {}",
                name.len()
            ),
        );
    }
}

/// The hostPorts of the mirrors rendered for one cluster. Each must have its own: two
/// node-proxy pods can't bind the same port on a node, so the second DaemonSet would never
/// run.
#[derive(Debug, Default)]
pub struct HostPorts {
    /// hostPort → the first mirror using it (`namespace/name`) and where it is defined.
    claimed: BTreeMap<i32, (String, Origin)>,
}

impl HostPorts {
    /// Claim `mirror`'s hostPort, defined at `origin`; why not, if another mirror has it.
    pub fn claim(&mut self, mirror: &RegistryMirror, origin: &Origin) -> Result<(), String> {
        let id = format!(
            "{}/{}",
            mirror.metadata.namespace.as_deref().unwrap_or(""),
            mirror.metadata.name.as_deref().unwrap_or("")
        );
        let port = mirror.spec.host_port;
        if let Some((first_id, first_origin)) = self.claimed.get(&port) {
            return Err(format!(
                "RegistryMirror {id} uses hostPort {port} like RegistryMirror {first_id} ({first_origin}); give each mirror targeted at a cluster its own port"
            ));
        }
        self.claimed.insert(port, (id, origin.clone()));
        Ok(())
    }
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::displayed_problems;

    const VALID: &str = "
apiVersion: tend.dev/v1alpha1
kind: RegistryMirror
metadata: {name: dockerhub, namespace: registries}
spec:
  upstream: https://registry-1.docker.io
  storage: {size: 10Gi}
  hostPort: 5001
";

    fn parse(yaml: &str) -> Result<RegistryMirror, serde_yaml::Error> {
        serde_yaml::from_str(yaml)
    }

    #[test]
    fn defaults_fill_in() {
        let m = parse(VALID).expect("valid");
        assert_eq!(m.spec.image, "registry:2");
        assert_eq!(m.spec.port, 5000);
        assert_eq!(m.spec.storage.storage_class_name, None);
        assert_eq!(m.spec.clusters, None);
        assert!(displayed_problems(m).is_empty());
    }

    #[test]
    fn unknown_fields_rejected() {
        let err = parse(&format!("{VALID}  replicas: 2\n")).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `replicas`"),
            "{err}"
        );
        let err = parse(&VALID.replace("{size: 10Gi}", "{size: 10Gi, class: fast}")).unwrap_err();
        assert!(err.to_string().contains("unknown field `class`"), "{err}");
    }

    #[test]
    fn missing_host_port_rejected() {
        let err = parse(&VALID.replace("  hostPort: 5001\n", "")).unwrap_err();
        assert!(
            err.to_string().contains("missing field `hostPort`"),
            "{err}"
        );
    }

    #[test]
    fn ranges_and_syntax() {
        let mut m = parse(VALID).expect("valid");
        m.spec.port = 70000;
        m.spec.host_port = 0;
        m.spec.upstream = "ftp://example.com".into();
        m.spec.storage.size = "10GB".into();
        m.spec.image = " ".into();
        m.spec.clusters = Some(vec!["dc1,dc2".into()]);
        let got = displayed_problems(m);
        assert_eq!(got.len(), 6, "{got:#?}");
        assert!(got.contains(&"spec.port: must be between 1 and 65535, got 70000".to_string()));
        assert!(got.contains(&"spec.hostPort: must be between 1 and 65535, got 0".to_string()));
        assert!(got.iter().any(|g| g.starts_with("spec.upstream: \"ftp://")));
        assert!(got
            .iter()
            .any(|g| g.starts_with("spec.storage.size: \"10GB\"")));
        assert!(got.iter().any(|g| g.starts_with("spec.image:")));
        assert!(got.iter().any(|g| g.starts_with("spec.clusters:")));
    }

    #[test]
    fn upstream_urls() {
        assert!(upstream_url("https://quay.io").is_ok());
        assert!(upstream_url("http://internal:8080/path").is_ok());
        assert!(upstream_url("https://").is_err());
        assert!(upstream_url("quay.io").is_err());
        assert!(upstream_url("https://a b").is_err());
    }

    #[test]
    fn names_must_fit_generated_objects() {
        let mut m = parse(VALID).expect("valid");
        m.metadata.name = Some("1mirror".into());
        assert_eq!(displayed_problems(m.clone()).len(), 1);
        m.metadata.name = Some("m".repeat(53));
        assert_eq!(displayed_problems(m.clone()).len(), 1);
        m.metadata.name = Some("m".repeat(52));
        assert!(displayed_problems(m).is_empty());
    }

    #[test]
    fn host_ports_are_claimed_once() {
        let a = parse(VALID).expect("valid");
        let mut b = a.clone();
        b.metadata.name = Some("quay".into());
        let mut c = a.clone();
        c.metadata.name = Some("gcr".into());
        c.spec.host_port = 5002;
        let origin = Origin {
            file: "m.yaml".into(),
            line: 2,
            generated_by: None,
            sealed: Vec::new(),
        };
        let mut ports = HostPorts::default();
        assert_eq!(ports.claim(&a, &origin), Ok(()));
        assert_eq!(ports.claim(&c, &origin), Ok(()));
        assert_eq!(
            ports.claim(&b, &origin),
            Err("RegistryMirror registries/quay uses hostPort 5001 like RegistryMirror registries/dockerhub (m.yaml:2); give each mirror targeted at a cluster its own port".into())
        );
    }

    #[test]
    fn empty_clusters_list_is_a_problem() {
        let mut m = parse(VALID).expect("valid");
        m.spec.clusters = Some(vec![]);
        assert_eq!(displayed_problems(m).len(), 1);
    }
}
