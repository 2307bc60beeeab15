//! The only module that talks to the Kubernetes API: connecting (kubeconfig, context,
//! in-cluster), discovery (aggregated, with a fallback for servers without it), and the few
//! verbs tend uses on `DynamicObject`s, each wrapped in a retry with backoff.

pub mod cause;
mod discovery;
pub mod impersonation;
mod listed;
mod logs;
pub mod outage;
pub mod retry;
mod session;
mod verbs;

pub use discovery::{discover, Resource, Resources};
pub use listed::Listed;
pub use logs::pod_log_tail;
pub use verbs::{
    apply, apply_status, can_list_cluster_wide, create, delete, get, list, list_each, list_listed,
    merge_patch, replace, ListQuery,
};

pub use session::{key_of, Session};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
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

/// The message of an API error: the server's own message and reason (kube's Display dumps the
/// whole Status struct). Long messages are cut for display by [`cause::cut`], not here, so
/// `-v` and `-o json` keep them whole.
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

/// `spec.selector: field is immutable` when the server refused an update (422) because it
/// changes immutable fields: from the Status causes, else from the message.
pub fn immutable_cause(err: &kube::Error) -> Option<String> {
    const IMMUTABLE: &str = "field is immutable";
    let kube::Error::Api(status) = err else {
        return None;
    };
    if status.code != 422 || !status.message.contains(IMMUTABLE) {
        return None;
    }
    let fields: Vec<String> = status
        .details
        .iter()
        .flat_map(|d| &d.causes)
        .filter(|c| c.message.contains(IMMUTABLE) && !c.field.is_empty())
        .map(|c| format!("{}: {IMMUTABLE}", c.field))
        .collect();
    if !fields.is_empty() {
        return Some(fields.join(", "));
    }
    // `Job.batch "x" is invalid: spec.template: Invalid value: ...: field is immutable`
    let field = status
        .message
        .split_once(" is invalid: ")
        .and_then(|(_, rest)| rest.split(':').next())
        .filter(|f| !f.contains(' '))?;
    Some(format!("{field}: {IMMUTABLE}"))
}

impl ClusterError {
    /// Whether the server refused an update as immutable: the cause, one line.
    pub fn immutable_cause(&self) -> Option<String> {
        match self {
            ClusterError::Api { source, .. } => immutable_cause(source),
            _ => None,
        }
    }

    /// What was attempted (`cannot apply Deployment web/api`), for an API error.
    pub fn attempted(&self) -> Option<&str> {
        match self {
            ClusterError::Api { what, .. } => Some(what),
            _ => None,
        }
    }

    /// The server's whole message, for `-v` and `-o json`.
    pub fn server_message(&self) -> Option<&str> {
        match self {
            ClusterError::Api {
                source: kube::Error::Api(status),
                ..
            } => Some(&status.message),
            _ => None,
        }
    }

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

/// How to reach the cluster (`--kubeconfig`, `--context`), and how long to ride out its
/// outages (`--retry-timeout`, shared by the whole run; less once `interrupt` is set).
#[derive(Debug, Clone)]
pub struct Access {
    pub kubeconfig: Option<std::path::PathBuf>,
    /// A kubeconfig read from a Secret (a fleet's `kubeconfigSecretRef`): used instead of
    /// `kubeconfig`.
    pub kubeconfig_text: Option<KubeconfigText>,
    pub context: Option<String>,
    pub retry_timeout: Duration,
    pub interrupt: crate::interrupt::Interrupt,
}

impl Default for Access {
    fn default() -> Self {
        Access {
            kubeconfig: None,
            kubeconfig_text: None,
            context: None,
            retry_timeout: outage::DEFAULT_RETRY_TIMEOUT,
            interrupt: crate::interrupt::Interrupt::default(),
        }
    }
}

/// A kubeconfig's text and where it was read (`Secret ns/name key value`); never printed.
#[derive(Clone)]
pub struct KubeconfigText {
    pub origin: String,
    pub text: Arc<zeroize::Zeroizing<String>>,
}

impl std::fmt::Debug for KubeconfigText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KubeconfigText({})", self.origin)
    }
}

/// Build a client: an explicit kubeconfig file, else `$KUBECONFIG`/`~/.kube/config`, else
/// the in-cluster service account (how the CronJob runs).
pub async fn connect(access: &Access, stats: Arc<RequestStats>) -> Result<Client, ClusterError> {
    let (client, _) = connect_with_config(access, stats).await?;
    Ok(client)
}

/// [`connect`], with what it takes to build more clients of the same credentials (the
/// clients acting as a tenant's ServiceAccount, [`impersonation`]).
async fn connect_with_config(
    access: &Access,
    stats: Arc<RequestStats>,
) -> Result<(Client, Connector), ClusterError> {
    let options = KubeConfigOptions {
        context: access.context.clone(),
        ..KubeConfigOptions::default()
    };
    let mut config = match (&access.kubeconfig_text, &access.kubeconfig) {
        (Some(text), _) => {
            let from_secret = |source| ClusterError::Kubeconfig {
                path: text.origin.clone(),
                source,
            };
            let kubeconfig = Kubeconfig::from_yaml(&text.text).map_err(from_secret)?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(from_secret)?
        }
        (None, Some(path)) => {
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
        (None, None) if access.context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| ClusterError::Config(e.to_string()))?,
        (None, None) => Config::infer().await.map_err(|e| {
            ClusterError::Config(format!("{e}; pass --kubeconfig or set KUBECONFIG"))
        })?,
    };
    // A stuck connection must fail the request (and be retried), not hang the run.
    config.connect_timeout = Some(Duration::from_secs(10));
    config.read_timeout = Some(Duration::from_secs(30));
    config.write_timeout = Some(Duration::from_secs(30));
    // kube's own retry layer (429/503/504, up to 15 times) would wait outside the run's
    // budget; the outage layer below does this under `--retry-timeout`.
    config.default_retry = false;
    // A plain-HTTP server (`kubectl proxy`, a test server) needs no trust store, and without
    // a CA of its own kube would load the system's (~20M instructions per client, the most
    // costly step of connecting a cluster of a fleet): give it an empty one.
    let plain_http = config.cluster_url.scheme_str() == Some("http") && config.proxy_url.is_none();
    if plain_http && config.root_cert.is_none() && config.root_cert_file.is_none() {
        config.root_cert = Some(Vec::new());
    }
    let outages = outage::OutageLayer {
        budget: Arc::new(outage::RetryBudget::new(access.retry_timeout)),
        interrupt: access.interrupt.clone(),
        server: config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_string(),
    };
    let connector = Connector {
        config,
        stats,
        outages,
    };
    Ok((connector.client(None)?, connector))
}

/// What a client of the run's credentials is made of: more of them (acting as a tenant's
/// ServiceAccount, [`impersonation`]) share its request counters and its budget for riding
/// out outages.
pub(crate) struct Connector {
    config: Config,
    stats: Arc<RequestStats>,
    outages: outage::OutageLayer,
}

impl Connector {
    /// A client as tend (`None`) or impersonating `user`. Only the user is named, as Flux
    /// names it: the server adds a ServiceAccount's groups itself.
    fn client(&self, user: Option<String>) -> Result<Client, ClusterError> {
        let mut config = self.config.clone();
        if user.is_some() {
            config.auth_info.impersonate = user;
            config.auth_info.impersonate_groups = None;
        }
        let counter = self.stats.clone();
        let counting =
            tower::util::MapRequestLayer::new(move |req: http::Request<kube::client::Body>| {
                counter.record(req.method(), req.uri());
                req
            });
        Ok(kube::client::ClientBuilder::try_from(config)
            .map_err(ClusterError::Client)?
            .with_layer(&counting)
            .with_layer(&self.outages)
            .build())
    }
}

/// Requests a run made, by kind: for the summary line and benchmarks (which can then count
/// requests against any cluster, not only the test server).
#[derive(Debug, Default)]
pub struct RequestStats {
    reads: AtomicUsize,
    writes: AtomicUsize,
    dry_runs: AtomicUsize,
    /// Bytes of LIST responses read (the bulk of what a run reads).
    list_bytes: AtomicUsize,
}

impl RequestStats {
    /// Count the body of one LIST page.
    pub fn record_list_bytes(&self, bytes: usize) {
        self.list_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn list_bytes(&self) -> usize {
        self.list_bytes.load(Ordering::Relaxed)
    }

    fn record(&self, method: &http::Method, uri: &http::Uri) {
        let query = uri.query().unwrap_or("");
        // Asking what one may do (SelfSubjectAccessReview) is a POST that writes nothing.
        let asks = uri.path().ends_with("/selfsubjectaccessreviews");
        let counter = if query.contains("dryRun=All") {
            &self.dry_runs
        } else if method == http::Method::GET || asks {
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
            "{} API requests ({} reads, {} writes, {} dry runs), {} KiB listed",
            self.total(),
            self.reads(),
            self.writes(),
            self.dry_runs(),
            self.list_bytes().div_ceil(1024)
        )
    }
}

/// The context names of the kubeconfig tend would read (`--kubeconfig`, else `$KUBECONFIG`,
/// else `~/.kube/config`), in the file's order (`--all-contexts`).
pub fn context_names(kubeconfig: Option<&std::path::Path>) -> Result<Vec<String>, ClusterError> {
    let config = match kubeconfig {
        Some(path) => Kubeconfig::read_from(path).map_err(|source| ClusterError::Kubeconfig {
            path: path.display().to_string(),
            source,
        })?,
        None => Kubeconfig::read().map_err(|source| ClusterError::Kubeconfig {
            path: "$KUBECONFIG or ~/.kube/config".into(),
            source,
        })?,
    };
    Ok(config.contexts.into_iter().map(|c| c.name).collect())
}

/// The API server URL of each context of the kubeconfig (`--kubeconfig`, else the
/// default), by context name; none where the kubeconfig cannot be read (connecting says
/// why).
pub fn context_servers(
    kubeconfig: Option<&std::path::Path>,
) -> std::collections::BTreeMap<String, String> {
    let config = match kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    };
    let Ok(config) = config else {
        return Default::default();
    };
    config
        .contexts
        .iter()
        .filter_map(|named| {
            let cluster = &named.context.as_ref()?.cluster;
            let server = config
                .clusters
                .iter()
                .find(|c| &c.name == cluster)?
                .cluster
                .as_ref()?
                .server
                .clone()?;
            Some((named.name.clone(), server))
        })
        .collect()
}

/// The metadata of the Secrets in `namespace` that carry the label `label` (ApplySet
/// parents): one LIST of metadata, without discovery, for `tend status`.
pub async fn labelled_secrets(
    access: &Access,
    namespace: &str,
    label: &str,
) -> Result<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>, ClusterError> {
    use k8s_openapi::api::core::v1::Secret;
    let client = connect(access, Arc::new(RequestStats::default())).await?;
    let api: kube::Api<Secret> = kube::Api::namespaced(client, namespace);
    let params = kube::api::ListParams::default().labels(label);
    let list = retry::retry("list ApplySet parents", || api.list_metadata(&params))
        .await
        .map_err(|source| ClusterError::Api {
            what: format!("cannot list the ApplySet parents (Secrets) in namespace {namespace}"),
            source,
        })?;
    Ok(list.items.into_iter().map(|item| item.metadata).collect())
}

/// The `data` of Secret `namespace/name` in the cluster `access` reaches, without discovery
/// (a hub's kubeconfig Secret of a spoke); `None` when it does not exist. Its values are
/// never logged.
pub async fn secret_data(
    access: &Access,
    namespace: &str,
    name: &str,
) -> Result<Option<Vec<(String, zeroize::Zeroizing<Vec<u8>>)>>, ClusterError> {
    use k8s_openapi::api::core::v1::Secret;
    let client = connect(access, Arc::new(RequestStats::default())).await?;
    let api: kube::Api<Secret> = kube::Api::namespaced(client, namespace);
    let secret = retry::retry("read a Secret", || api.get_opt(name))
        .await
        .map_err(|source| ClusterError::Api {
            what: format!("cannot read Secret {namespace}/{name}"),
            source,
        })?;
    Ok(secret.map(|secret| {
        secret
            .data
            .into_iter()
            .flatten()
            .map(|(key, value)| (key, zeroize::Zeroizing::new(value.0)))
            .collect()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::response::StatusCause;
    use kube::core::Status;

    fn invalid(message: &str, causes: Vec<StatusCause>) -> kube::Error {
        let status: Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 422, "reason": "Invalid", "message": message,
            "details": {"causes": causes},
        }))
        .expect("a Status");
        kube::Error::Api(status.boxed())
    }

    #[test]
    fn immutable_errors_have_a_one_line_cause() {
        let long = format!(
            "Job.batch \"migrate\" is invalid: spec.template: Invalid value: core.PodTemplateSpec{{{}}}: field is immutable",
            "x".repeat(3000)
        );
        let cause = StatusCause {
            reason: "FieldValueInvalid".into(),
            message: "Invalid value: ...: field is immutable".into(),
            field: "spec.template".into(),
        };
        let refused = invalid(&long, vec![cause]);
        assert_eq!(
            immutable_cause(&refused).as_deref(),
            Some("spec.template: field is immutable")
        );
        // The message itself stays whole (cut for display by `cause::cut`).
        assert_eq!(api_message(&refused), format!("{long} (422 Invalid)"));
        // Without causes, from the message.
        assert_eq!(
            immutable_cause(&invalid(&long, vec![])).as_deref(),
            Some("spec.template: field is immutable")
        );
        // Other 422s keep their message.
        let other = invalid(
            "Service \"a\" is invalid: spec.ports: Required value",
            vec![],
        );
        assert_eq!(immutable_cause(&other), None);
        assert!(api_message(&other).starts_with("Service \"a\" is invalid"));
    }
}
