//! The only module that talks to the Kubernetes API: connecting (kubeconfig, context,
//! in-cluster), discovery (aggregated, with a fallback for servers without it), and the few
//! verbs tend uses on `DynamicObject`s, each wrapped in a retry with backoff.

pub mod retry;
mod session;

pub use session::{key_of, Session};

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::{verbs, ApiCapabilities, Discovery, Scope};
use kube::{Client, Config};
use retry::retry;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot load kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("cannot configure cluster access: {0}")]
    Config(String),
    #[error("cannot create a Kubernetes client: {}", api_message(.0))]
    Client(#[source] kube::Error),
    #[error("API discovery failed: {}", api_message(.0))]
    Discovery(#[source] kube::Error),
    #[error("{what}: {}", api_message(.source))]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// A one-line message for an API error: the server's own message and reason for API errors
/// (kube's Display dumps the whole Status struct).
pub fn api_message(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) => {
            let mut text = status.message.clone();
            if !status.reason.is_empty() {
                text.push_str(&format!(" ({} {})", status.code, status.reason));
            }
            text
        }
        other => other.to_string(),
    }
}

impl ClusterError {
    /// HTTP status code of an API error, if this is one.
    pub fn code(&self) -> Option<u16> {
        match self {
            ClusterError::Api {
                source: kube::Error::Api(status),
                ..
            } => Some(status.code),
            _ => None,
        }
    }
}

/// How to reach the cluster (`--kubeconfig`, `--context`).
#[derive(Debug, Clone, Default)]
pub struct Access {
    pub kubeconfig: Option<std::path::PathBuf>,
    pub context: Option<String>,
}

/// Build a client: an explicit kubeconfig file, else `$KUBECONFIG`/`~/.kube/config`, else
/// the in-cluster service account (how the CronJob runs).
pub async fn connect(access: &Access, stats: Arc<RequestStats>) -> Result<Client, ClusterError> {
    let options = KubeConfigOptions {
        context: access.context.clone(),
        ..KubeConfigOptions::default()
    };
    let mut config = match &access.kubeconfig {
        Some(path) => {
            let kubeconfig =
                Kubeconfig::read_from(path).map_err(|source| ClusterError::Kubeconfig {
                    path: path.display().to_string(),
                    source,
                })?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|source| ClusterError::Kubeconfig {
                    path: path.display().to_string(),
                    source,
                })?
        }
        None if access.context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| ClusterError::Config(e.to_string()))?,
        None => Config::infer().await.map_err(|e| {
            ClusterError::Config(format!("{e}; pass --kubeconfig or set KUBECONFIG"))
        })?,
    };
    // A stuck connection must fail the request (and be retried), not hang the run.
    config.connect_timeout = Some(Duration::from_secs(10));
    config.read_timeout = Some(Duration::from_secs(30));
    config.write_timeout = Some(Duration::from_secs(30));
    let counter = stats.clone();
    let counting =
        tower::util::MapRequestLayer::new(move |req: http::Request<kube::client::Body>| {
            counter.record(req.method(), req.uri().query().unwrap_or(""));
            req
        });
    Ok(kube::client::ClientBuilder::try_from(config)
        .map_err(ClusterError::Client)?
        .with_layer(&counting)
        .build())
}

/// Requests a run made, by kind: for the summary line and benchmarks (which can then count
/// requests against any cluster, not only the test server).
#[derive(Debug, Default)]
pub struct RequestStats {
    reads: AtomicUsize,
    writes: AtomicUsize,
    dry_runs: AtomicUsize,
}

impl RequestStats {
    fn record(&self, method: &http::Method, query: &str) {
        let counter = if query.contains("dryRun=All") {
            &self.dry_runs
        } else if method == http::Method::GET {
            &self.reads
        } else {
            &self.writes
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn total(&self) -> usize {
        self.reads() + self.writes() + self.dry_runs()
    }
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::Relaxed)
    }
    pub fn writes(&self) -> usize {
        self.writes.load(Ordering::Relaxed)
    }
    pub fn dry_runs(&self) -> usize {
        self.dry_runs.load(Ordering::Relaxed)
    }
}

impl std::fmt::Display for RequestStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} API requests ({} reads, {} writes, {} dry runs)",
            self.total(),
            self.reads(),
            self.writes(),
            self.dry_runs()
        )
    }
}

/// One served resource: its API coordinates and scope.
#[derive(Debug, Clone)]
pub struct Resource {
    pub api: ApiResource,
    pub namespaced: bool,
    pub has_status: bool,
    pub can_list: bool,
}

/// Discovery results for one run: (group, version, kind) → resource.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    by_gvk: HashMap<(String, String, String), Resource>,
    /// Whether the server answered aggregated discovery (2 requests) or needed the fallback.
    pub aggregated: bool,
}

impl Resources {
    pub fn get(&self, group: &str, version: &str, kind: &str) -> Option<&Resource> {
        self.by_gvk
            .get(&(group.to_string(), version.to_string(), kind.to_string()))
    }

    /// The served resource of a group/kind in any version (the first one found).
    pub fn any_version(&self, group: &str, kind: &str) -> Option<&Resource> {
        let mut found: Vec<_> = self
            .by_gvk
            .iter()
            .filter(|((g, _, k), _)| g == group && k == kind)
            .collect();
        found.sort_by(|a, b| a.0.cmp(b.0));
        found.first().map(|(_, r)| *r)
    }

    pub fn len(&self) -> usize {
        self.by_gvk.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_gvk.is_empty()
    }

    fn add(&mut self, ar: ApiResource, caps: &ApiCapabilities) {
        let resource = Resource {
            namespaced: caps.scope == Scope::Namespaced,
            has_status: caps
                .subresources
                .iter()
                .any(|(sub, _)| sub.plural == "status"),
            can_list: caps.supports_operation(verbs::LIST),
            api: ar.clone(),
        };
        self.by_gvk.insert(
            (ar.group.clone(), ar.version.clone(), ar.kind.clone()),
            resource,
        );
    }
}

/// Discover what the server serves: aggregated discovery (Kubernetes 1.26+, two requests),
/// else the per-group fallback for servers without it.
pub async fn discover(client: &Client) -> Result<Resources, ClusterError> {
    let aggregated = retry("discovery", || {
        Discovery::new(client.clone()).run_aggregated()
    })
    .await;
    // A server without aggregated discovery may answer the aggregated request with the
    // legacy document, which parses as an empty list: treat "no core group" as unsupported.
    let (discovery, was_aggregated) = match aggregated {
        Ok(d) if d.has_group("") && d.groups().count() > 1 => (d, true),
        other => {
            if let Err(err) = other {
                tracing::debug!("aggregated discovery unavailable ({err}); falling back");
            }
            let d = retry("discovery", || Discovery::new(client.clone()).run())
                .await
                .map_err(ClusterError::Discovery)?;
            (d, false)
        }
    };
    let mut resources = Resources {
        aggregated: was_aggregated,
        ..Resources::default()
    };
    for group in discovery.groups() {
        for version in group.versions() {
            for (ar, caps) in group.versioned_resources(version) {
                resources.add(ar, &caps);
            }
        }
    }
    Ok(resources)
}

fn api_for(client: &Client, resource: &Resource, namespace: Option<&str>) -> Api<DynamicObject> {
    match (resource.namespaced, namespace) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource.api),
        _ => Api::all_with(client.clone(), &resource.api),
    }
}

/// An object's namespace (if any) and name.
fn coordinates(object: &Value) -> (Option<&str>, &str) {
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    (namespace, name)
}

fn describe(resource: &Resource, namespace: Option<&str>, name: &str) -> String {
    let ns = namespace.map(|n| format!("{n}/")).unwrap_or_default();
    format!("{} {}{}", resource.api.kind, ns, name)
}

/// LIST every object of a resource in a namespace (or cluster-wide), following `continue`.
pub async fn list(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<Value>, ClusterError> {
    list_selected(client, resource, namespace, label_selector, None).await
}

/// [`list`] with a field selector too (e.g. `metadata.name=x` across all namespaces).
pub async fn list_selected(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    label_selector: Option<&str>,
    field_selector: Option<&str>,
) -> Result<Vec<Value>, ClusterError> {
    let api = api_for(client, resource, namespace);
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(500);
        if let Some(sel) = label_selector {
            params = params.labels(sel);
        }
        if let Some(sel) = field_selector {
            params = params.fields(sel);
        }
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page = retry("list", || api.list(&params))
            .await
            .map_err(|source| ClusterError::Api {
                what: format!(
                    "cannot list {}{}",
                    resource.api.plural,
                    namespace
                        .map(|n| format!(" in namespace {n}"))
                        .unwrap_or_default()
                ),
                source,
            })?;
        for item in page.items {
            let mut value = serde_json::to_value(&item).unwrap_or(Value::Null);
            // LIST items carry no apiVersion/kind; the engine compares whole objects.
            if let Some(map) = value.as_object_mut() {
                map.insert(
                    "apiVersion".into(),
                    Value::String(resource.api.api_version.clone()),
                );
                map.insert("kind".into(), Value::String(resource.api.kind.clone()));
            }
            out.push(value);
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    Ok(out)
}

/// GET one object; `None` when it does not exist.
pub async fn get(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Value>, ClusterError> {
    let api = api_for(client, resource, namespace);
    retry("get", || api.get_opt(name))
        .await
        .map(|o| o.map(|obj| serde_json::to_value(obj).unwrap_or(Value::Null)))
        .map_err(|source| ClusterError::Api {
            what: format!("cannot read {}", describe(resource, namespace, name)),
            source,
        })
}

/// Server-side apply `object` with field manager `manager`.
pub async fn apply(
    client: &Client,
    resource: &Resource,
    object: &Value,
    manager: &str,
    force: bool,
    dry_run: bool,
) -> Result<Value, ClusterError> {
    let (namespace, name) = coordinates(object);
    let api = api_for(client, resource, namespace);
    let mut params = PatchParams::apply(manager);
    params.force = force;
    params.dry_run = dry_run;
    // Unknown fields are errors, not silently pruned (tend's kinds deny unknown fields too).
    params.field_validation = Some(kube::api::ValidationDirective::Strict);
    let patch = Patch::Apply(object);
    retry("apply", || api.patch(name, &params, &patch))
        .await
        .map(|obj| serde_json::to_value(obj).unwrap_or(Value::Null))
        .map_err(|source| ClusterError::Api {
            what: format!(
                "cannot {}apply {}",
                if dry_run { "dry-run " } else { "" },
                describe(resource, namespace, name)
            ),
            source,
        })
}

/// Server-side apply to the status subresource.
pub async fn apply_status(
    client: &Client,
    resource: &Resource,
    object: &Value,
    manager: &str,
) -> Result<Value, ClusterError> {
    let (namespace, name) = coordinates(object);
    let api = api_for(client, resource, namespace);
    let params = PatchParams::apply(manager).force();
    let patch = Patch::Apply(object);
    retry("apply status", || api.patch_status(name, &params, &patch))
        .await
        .map(|obj| serde_json::to_value(obj).unwrap_or(Value::Null))
        .map_err(|source| ClusterError::Api {
            what: format!(
                "cannot update the status of {}",
                describe(resource, namespace, name)
            ),
            source,
        })
}

/// DELETE an object (background propagation). Already gone counts as success.
pub async fn delete(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
    dry_run: bool,
) -> Result<(), ClusterError> {
    let api = api_for(client, resource, namespace);
    let mut params = DeleteParams::background();
    params.dry_run = dry_run;
    match retry("delete", || api.delete(name, &params)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(ClusterError::Api {
            what: format!("cannot delete {}", describe(resource, namespace, name)),
            source,
        }),
    }
}

/// Replace (PUT) an object, with optimistic concurrency on its resourceVersion. Used for the
/// lock Lease, where a 409 means somebody else won the race.
pub async fn replace(
    client: &Client,
    resource: &Resource,
    object: &Value,
) -> Result<Value, ClusterError> {
    let (namespace, name) = coordinates(object);
    let api = api_for(client, resource, namespace);
    let obj: DynamicObject =
        serde_json::from_value(object.clone()).map_err(|e| ClusterError::Config(e.to_string()))?;
    let post = kube::api::PostParams::default();
    retry("replace", || api.replace(name, &post, &obj))
        .await
        .map(|o| serde_json::to_value(o).unwrap_or(Value::Null))
        .map_err(|source| ClusterError::Api {
            what: format!("cannot update {}", describe(resource, namespace, name)),
            source,
        })
}

/// Create (POST) an object; 409 AlreadyExists is returned as an error with code 409.
pub async fn create(
    client: &Client,
    resource: &Resource,
    object: &Value,
) -> Result<Value, ClusterError> {
    let (namespace, name) = coordinates(object);
    let api = api_for(client, resource, namespace);
    let obj: DynamicObject =
        serde_json::from_value(object.clone()).map_err(|e| ClusterError::Config(e.to_string()))?;
    let post = kube::api::PostParams::default();
    retry("create", || api.create(&post, &obj))
        .await
        .map(|o| serde_json::to_value(o).unwrap_or(Value::Null))
        .map_err(|source| ClusterError::Api {
            what: format!("cannot create {}", describe(resource, namespace, name)),
            source,
        })
}

/// JSON merge patch an existing object, recorded in managedFields as an Update by `manager`
/// (`tend chaos` uses its own manager, so the next `tend apply` takes the fields back). A
/// missing object is an error (404), never created.
pub async fn merge_patch(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
    patch: &Value,
    manager: &str,
) -> Result<Value, ClusterError> {
    let api = api_for(client, resource, namespace);
    let params = PatchParams {
        field_manager: Some(manager.to_string()),
        ..PatchParams::default()
    };
    let patch = Patch::Merge(patch);
    retry("patch", || api.patch(name, &params, &patch))
        .await
        .map(|obj| serde_json::to_value(obj).unwrap_or(Value::Null))
        .map_err(|source| ClusterError::Api {
            what: format!("cannot patch {}", describe(resource, namespace, name)),
            source,
        })
}
