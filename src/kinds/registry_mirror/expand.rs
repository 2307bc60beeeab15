//! A `RegistryMirror` expanded into the plain objects it stands for (README "RegistryMirror"):
//! a ClusterIP Service `<name>`, a headless Service `<name>-headless`, a PVC `<name>-data`,
//! a StatefulSet `<name>` running the registry in pull-through-cache mode, and a DaemonSet
//! `<name>-node-proxy` that serves the mirror on every node at `localhost:<hostPort>`.
//!
//! Built as typed k8s-openapi objects, not text templates (the conclusion of the RegistryMirror operator tend replaces): the
//! compiler checks field names and types, and there is no quoting to get wrong.

use super::RegistryMirror;
use crate::kinds::{GENERATED_BY_ANNOTATION, MANAGED_BY_LABEL};
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, HTTPGetAction, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, SecurityContext, Service, ServicePort, ServiceSpec, TCPSocketAction,
    Toleration, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;
use std::collections::BTreeMap;

/// The node proxy: socat, a plain TCP forwarder configured entirely by its arguments (no
/// config file, so no extra ConfigMap), pinned to a version.
pub const NODE_PROXY_IMAGE: &str = "docker.io/alpine/socat:1.8.0.3";
/// Port the node proxy listens on inside its pod; the node's `hostPort` maps to it. Above
/// 1024 so the proxy runs as non-root without NET_BIND_SERVICE.
pub const NODE_PROXY_PORT: i32 = 5000;
/// Where the registry keeps its cache; the PVC is mounted here.
pub const DATA_PATH: &str = "/var/lib/registry";
/// `app.kubernetes.io/name` of every object of a mirror.
pub const APP_NAME: &str = "registry-mirror";

const PORT_NAME: &str = "registry";

/// What nodes use to pull through the mirror: `localhost:<hostPort>`.
pub fn endpoint(mirror: &RegistryMirror) -> String {
    format!("localhost:{}", mirror.spec.host_port)
}

/// The five objects of a mirror, as JSON with `apiVersion` and `kind`, in apply order
/// (Services, PVC, StatefulSet, DaemonSet). Without ownerReferences: the mirror's uid is the
/// cluster's, added when rendering is completed.
pub fn objects(mirror: &RegistryMirror) -> Vec<Value> {
    let m = Mirror::new(mirror);
    vec![
        json(&m.service()),
        json(&m.headless_service()),
        json(&m.pvc()),
        json(&m.stateful_set()),
        json(&m.daemon_set()),
    ]
}

fn json<T: serde::Serialize>(object: &T) -> Value {
    // k8s-openapi types have string map keys and infallible Serialize impls, so this can't
    // fail; a panic here would be a bug in k8s-openapi, not bad input.
    serde_json::to_value(object).expect("k8s-openapi objects serialize to JSON")
}

/// The mirror's names and metadata, computed once.
struct Mirror<'a> {
    cr: &'a RegistryMirror,
    name: String,
    namespace: String,
}

impl<'a> Mirror<'a> {
    fn new(cr: &'a RegistryMirror) -> Self {
        Mirror {
            cr,
            name: cr.metadata.name.clone().unwrap_or_default(),
            // The loader defaults the namespace before expanding; "default" is what the
            // apiserver would use too.
            namespace: cr
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
        }
    }

    /// `app.kubernetes.io/*` labels; `component` is `cache` or `node-proxy`.
    fn labels(&self, component: &str) -> BTreeMap<String, String> {
        let mut labels = self.selector(component);
        labels.insert("app.kubernetes.io/part-of".into(), self.name.clone());
        labels.insert(MANAGED_BY_LABEL.into(), crate::FIELD_MANAGER.into());
        labels
    }

    /// The immutable subset of [`Self::labels`] used in selectors.
    fn selector(&self, component: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("app.kubernetes.io/name".to_string(), APP_NAME.to_string()),
            ("app.kubernetes.io/instance".to_string(), self.name.clone()),
            (
                "app.kubernetes.io/component".to_string(),
                component.to_string(),
            ),
        ])
    }

    fn meta(&self, name: String, component: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            namespace: Some(self.namespace.clone()),
            labels: Some(self.labels(component)),
            annotations: Some(BTreeMap::from([(
                GENERATED_BY_ANNOTATION.to_string(),
                format!("RegistryMirror {}/{}", self.namespace, self.name),
            )])),
            ..Default::default()
        }
    }

    fn service_spec(&self, headless: bool) -> ServiceSpec {
        ServiceSpec {
            type_: Some("ClusterIP".into()),
            cluster_ip: headless.then(|| "None".into()),
            selector: Some(self.selector("cache")),
            ports: Some(vec![ServicePort {
                name: Some(PORT_NAME.into()),
                port: self.cr.spec.port,
                target_port: Some(IntOrString::String(PORT_NAME.into())),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    fn service(&self) -> Service {
        Service {
            metadata: self.meta(self.name.clone(), "cache"),
            spec: Some(self.service_spec(false)),
            ..Default::default()
        }
    }

    /// Gives the StatefulSet's pod its stable DNS name (`<name>-0.<name>-headless`).
    fn headless_service(&self) -> Service {
        Service {
            metadata: self.meta(format!("{}-headless", self.name), "cache"),
            spec: Some(self.service_spec(true)),
            ..Default::default()
        }
    }

    fn pvc_name(&self) -> String {
        format!("{}-data", self.name)
    }

    /// A standalone PVC rather than a volumeClaimTemplate, so it has a fixed name, can be
    /// resized by editing `storage.size`, and the prune guard for PVCs applies to it.
    fn pvc(&self) -> PersistentVolumeClaim {
        let storage = &self.cr.spec.storage;
        PersistentVolumeClaim {
            metadata: self.meta(self.pvc_name(), "cache"),
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteOnce".into()]),
                storage_class_name: storage.storage_class_name.clone(),
                resources: Some(VolumeResourceRequirements {
                    requests: Some(BTreeMap::from([(
                        "storage".to_string(),
                        Quantity(storage.size.clone()),
                    )])),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn stateful_set(&self) -> StatefulSet {
        let spec = &self.cr.spec;
        let probe = |failure_threshold| Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/v2/".into()),
                port: IntOrString::String(PORT_NAME.into()),
                ..Default::default()
            }),
            period_seconds: Some(10),
            failure_threshold: Some(failure_threshold),
            ..Default::default()
        };
        let env = |name: &str, value: String| EnvVar {
            name: name.into(),
            value: Some(value),
            ..Default::default()
        };
        let container = Container {
            name: "registry".into(),
            image: Some(spec.image.clone()),
            // distribution reads any config key from REGISTRY_<SECTION>_<KEY>; setting
            // proxy.remoteurl turns the registry into a pull-through cache of upstream.
            env: Some(vec![
                env("REGISTRY_PROXY_REMOTEURL", spec.upstream.clone()),
                env("REGISTRY_HTTP_ADDR", format!(":{}", spec.port)),
                env(
                    "REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY",
                    DATA_PATH.into(),
                ),
            ]),
            ports: Some(vec![ContainerPort {
                name: Some(PORT_NAME.into()),
                container_port: spec.port,
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            volume_mounts: Some(vec![VolumeMount {
                name: "data".into(),
                mount_path: DATA_PATH.into(),
                ..Default::default()
            }]),
            // `/v2/` is the registry API root; it answers 200 locally, without asking
            // upstream, once the registry serves.
            readiness_probe: Some(probe(3)),
            liveness_probe: Some(probe(6)),
            resources: spec.resources.clone(),
            ..Default::default()
        };
        let (selector, template) = self.pods(
            "cache",
            PodSpec {
                containers: vec![container],
                automount_service_account_token: Some(false),
                volumes: Some(vec![Volume {
                    name: "data".into(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: self.pvc_name(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            },
        );
        StatefulSet {
            metadata: self.meta(self.name.clone(), "cache"),
            spec: Some(StatefulSetSpec {
                // One replica: the PVC is ReadWriteOnce and the cache is not shared.
                replicas: Some(1),
                service_name: Some(format!("{}-headless", self.name)),
                selector,
                template,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn daemon_set(&self) -> DaemonSet {
        let spec = &self.cr.spec;
        // socat forks per connection and resolves the Service name then, so the proxy needs
        // no restart when the registry pod moves. `<svc>.<ns>.svc` resolves through the pod's
        // DNS search path whatever the cluster domain is.
        let target = format!("TCP:{}.{}.svc:{}", self.name, self.namespace, spec.port);
        let container = Container {
            name: "proxy".into(),
            image: Some(NODE_PROXY_IMAGE.into()),
            command: Some(vec!["socat".into()]),
            args: Some(vec![
                format!("TCP-LISTEN:{NODE_PROXY_PORT},fork,reuseaddr"),
                target,
            ]),
            ports: Some(vec![ContainerPort {
                name: Some(PORT_NAME.into()),
                container_port: NODE_PROXY_PORT,
                // The node's port: container runtimes pull from localhost:<hostPort>.
                host_port: Some(spec.host_port),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            readiness_probe: Some(Probe {
                tcp_socket: Some(TCPSocketAction {
                    port: IntOrString::Int(NODE_PROXY_PORT),
                    ..Default::default()
                }),
                period_seconds: Some(10),
                ..Default::default()
            }),
            resources: Some(ResourceRequirements {
                requests: Some(BTreeMap::from([
                    ("cpu".to_string(), Quantity("10m".into())),
                    ("memory".to_string(), Quantity("16Mi".into())),
                ])),
                limits: Some(BTreeMap::from([(
                    "memory".to_string(),
                    Quantity("64Mi".into()),
                )])),
                ..Default::default()
            }),
            security_context: Some(SecurityContext {
                run_as_non_root: Some(true),
                run_as_user: Some(65534),
                allow_privilege_escalation: Some(false),
                read_only_root_filesystem: Some(true),
                capabilities: Some(Capabilities {
                    drop: Some(vec!["ALL".into()]),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let (selector, template) = self.pods(
            "node-proxy",
            PodSpec {
                containers: vec![container],
                automount_service_account_token: Some(false),
                // Every node pulls images, tainted ones (control plane, dedicated pools)
                // included.
                tolerations: Some(vec![Toleration {
                    operator: Some("Exists".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            },
        );
        DaemonSet {
            metadata: self.meta(format!("{}-node-proxy", self.name), "node-proxy"),
            spec: Some(DaemonSetSpec {
                selector,
                template,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// The selector of `component`'s pods, and their template running `spec`.
    fn pods(&self, component: &str, spec: PodSpec) -> (LabelSelector, PodTemplateSpec) {
        let selector = LabelSelector {
            match_labels: Some(self.selector(component)),
            ..Default::default()
        };
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(self.labels(component)),
                ..Default::default()
            }),
            spec: Some(spec),
        };
        (selector, template)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::registry_mirror::{MirrorStorage, RegistryMirrorSpec};
    use serde_json::json;

    fn mirror() -> RegistryMirror {
        let mut m = RegistryMirror::new(
            "dockerhub",
            RegistryMirrorSpec {
                upstream: "https://registry-1.docker.io".into(),
                image: "registry:2".into(),
                port: 5000,
                storage: MirrorStorage {
                    size: "10Gi".into(),
                    storage_class_name: Some("fast".into()),
                },
                host_port: 5001,
                clusters: None,
                resources: Some(ResourceRequirements {
                    limits: Some(BTreeMap::from([(
                        "memory".to_string(),
                        Quantity("512Mi".into()),
                    )])),
                    ..Default::default()
                }),
            },
        );
        m.metadata.namespace = Some("registries".into());
        m
    }

    fn by_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
        objects.iter().filter(|o| o["kind"] == kind).collect()
    }

    #[test]
    fn expands_to_exactly_five_objects() {
        let objects = objects(&mirror());
        assert_eq!(objects.len(), 5);
        let names = |kind| -> Vec<&str> {
            by_kind(&objects, kind)
                .iter()
                .filter_map(|o| o["metadata"]["name"].as_str())
                .collect()
        };
        assert_eq!(names("Service"), ["dockerhub", "dockerhub-headless"]);
        assert_eq!(names("StatefulSet"), ["dockerhub"]);
        assert_eq!(names("DaemonSet"), ["dockerhub-node-proxy"]);
        assert_eq!(names("PersistentVolumeClaim"), ["dockerhub-data"]);
        for o in &objects {
            let api_version = o["apiVersion"].as_str().unwrap_or("");
            let expected = if o["kind"] == "StatefulSet" || o["kind"] == "DaemonSet" {
                "apps/v1"
            } else {
                "v1"
            };
            assert_eq!(api_version, expected, "{}", o["kind"]);
            let meta = &o["metadata"];
            assert_eq!(meta["namespace"], "registries");
            assert_eq!(meta["labels"]["app.kubernetes.io/part-of"], "dockerhub");
            assert_eq!(meta["labels"]["app.kubernetes.io/managed-by"], "tend");
            assert_eq!(meta["labels"]["app.kubernetes.io/name"], APP_NAME);
            assert_eq!(
                meta["annotations"]["tend.dev/generated-by"],
                "RegistryMirror registries/dockerhub"
            );
            assert!(meta.get("ownerReferences").is_none(), "owners are the cluster's");
        }
    }

    #[test]
    fn services_select_the_cache() {
        let objects = objects(&mirror());
        let services = by_kind(&objects, "Service");
        assert!(services[0]["spec"].get("clusterIP").is_none());
        assert_eq!(services[1]["spec"]["clusterIP"], "None");
        for svc in services {
            assert_eq!(svc["spec"]["ports"][0]["port"], 5000);
            assert_eq!(svc["spec"]["ports"][0]["targetPort"], "registry");
            assert_eq!(
                svc["spec"]["selector"]["app.kubernetes.io/component"],
                "cache"
            );
        }
    }

    #[test]
    fn stateful_set_runs_the_registry_in_proxy_mode() {
        let objects = objects(&mirror());
        let sts = by_kind(&objects, "StatefulSet")[0];
        assert_eq!(sts["spec"]["replicas"], 1);
        assert_eq!(sts["spec"]["serviceName"], "dockerhub-headless");
        let selector = &sts["spec"]["selector"]["matchLabels"];
        for (k, v) in selector.as_object().into_iter().flatten() {
            assert_eq!(&sts["spec"]["template"]["metadata"]["labels"][k], v);
        }
        let pod = &sts["spec"]["template"]["spec"];
        let c = &pod["containers"][0];
        assert_eq!(c["image"], "registry:2");
        assert_eq!(
            c["env"],
            json!([
                {"name": "REGISTRY_PROXY_REMOTEURL", "value": "https://registry-1.docker.io"},
                {"name": "REGISTRY_HTTP_ADDR", "value": ":5000"},
                {"name": "REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY", "value": "/var/lib/registry"},
            ])
        );
        assert_eq!(c["ports"][0]["containerPort"], 5000);
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/v2/");
        assert_eq!(c["resources"]["limits"]["memory"], "512Mi");
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/var/lib/registry");
        assert_eq!(
            pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "dockerhub-data"
        );
    }

    #[test]
    fn pvc_requests_the_storage() {
        let objects = objects(&mirror());
        let pvc = by_kind(&objects, "PersistentVolumeClaim")[0];
        assert_eq!(pvc["spec"]["accessModes"], json!(["ReadWriteOnce"]));
        assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "10Gi");
        assert_eq!(pvc["spec"]["storageClassName"], "fast");
    }

    #[test]
    fn daemon_set_exposes_host_port_on_every_node() {
        let objects = objects(&mirror());
        let ds = by_kind(&objects, "DaemonSet")[0];
        assert_eq!(
            ds["metadata"]["labels"]["app.kubernetes.io/component"],
            "node-proxy"
        );
        let pod = &ds["spec"]["template"]["spec"];
        assert_eq!(pod["tolerations"], json!([{"operator": "Exists"}]));
        let c = &pod["containers"][0];
        assert_eq!(c["image"], NODE_PROXY_IMAGE);
        assert_eq!(c["ports"][0]["hostPort"], 5001);
        assert_eq!(c["ports"][0]["containerPort"], NODE_PROXY_PORT);
        assert_eq!(
            c["args"],
            json!([
                "TCP-LISTEN:5000,fork,reuseaddr",
                "TCP:dockerhub.registries.svc:5000"
            ])
        );
        assert_eq!(endpoint(&mirror()), "localhost:5001");
    }

    #[test]
    fn no_storage_class_means_cluster_default() {
        let mut m = mirror();
        m.spec.storage.storage_class_name = None;
        m.spec.resources = None;
        let objects = objects(&m);
        let pvc = by_kind(&objects, "PersistentVolumeClaim")[0];
        assert!(pvc["spec"].get("storageClassName").is_none());
        let sts = by_kind(&objects, "StatefulSet")[0];
        assert!(sts["spec"]["template"]["spec"]["containers"][0]
            .get("resources")
            .is_none());
    }
}
