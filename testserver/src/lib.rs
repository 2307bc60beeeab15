//! `tend-testserver`: an in-process Kubernetes API server for tend's tests.
//!
//! [`TestCluster::start`] binds 127.0.0.1 on a free port, serves the Kubernetes REST API
//! (discovery, CRUD, server-side apply with managedFields, dry-run, status subresources,
//! CRDs, namespaces) from a background thread with its own tokio runtime, and writes a
//! kubeconfig for it. Faults can be injected and every request is logged. See README.md.

// ApiError carries a full Status body; errors are the uncommon path of a test server,
// so boxing them would only add noise.
#![allow(clippy::result_large_err)]

mod defaults;
mod discovery;
mod errors;
mod http;
mod negotiate;
mod patch;
mod rbac;
mod schema;
mod selectors;
mod ssa;
mod store;

pub mod faults;

pub use faults::{Fault, FaultAction, RequestRecord, Verb};

use http::{Logged, Shared};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// Options for [`TestCluster::start_with`].
#[derive(Debug, Clone)]
pub struct TestClusterOptions {
    /// Serve aggregated discovery (apidiscovery.k8s.io v2) on `/api` and `/apis` as
    /// kube-apiserver 1.30+ does. When false, the server behaves like a pre-1.26 server:
    /// it answers with the legacy documents (or 406 if the client accepts nothing else).
    pub aggregated_discovery: bool,
    /// Simulate what kube-controller-manager and the admission plugins around it do to
    /// namespaces: each new namespace gets the `default` ServiceAccount and the
    /// `kube-root-ca.crt` ConfigMap (after [`Self::namespace_setup_delay`]); a Pod is
    /// refused (403) until its ServiceAccount exists; a deleted namespace stays Terminating
    /// while its contents are deleted (see [`Self::namespace_cleanup_delay`]). When false,
    /// none of that happens and namespaces are deleted at once with their contents.
    pub simulate_controllers: bool,
    /// How long after a namespace is created its ServiceAccount and CA ConfigMap appear.
    /// Zero (the default) creates them in the namespace's own create; on a real cluster it
    /// takes from milliseconds to seconds, and a Pod created in between gets
    /// `403 ... serviceaccount "default" not found`.
    pub namespace_setup_delay: Duration,
    /// How long the namespace controller takes per pass over a Terminating namespace
    /// (delete its contents; the next pass, once it is empty, deletes the namespace).
    /// Default 50 ms. Zero deletes a namespace and its contents within the DELETE.
    pub namespace_cleanup_delay: Duration,
}

impl Default for TestClusterOptions {
    fn default() -> Self {
        TestClusterOptions {
            aggregated_discovery: true,
            simulate_controllers: true,
            namespace_setup_delay: Duration::ZERO,
            namespace_cleanup_delay: Duration::from_millis(50),
        }
    }
}

/// A running test API server. Stopped when dropped.
pub struct TestCluster {
    shared: Arc<Shared>,
    addr: SocketAddr,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
    /// The serving thread and how to stop it; `None` while stopped.
    running: Mutex<Option<(oneshot::Sender<()>, JoinHandle<()>)>>,
}

/// Serve `listener` on a thread of its own until told to stop. The thread's runtime ends
/// with it, closing every connection it had open.
fn spawn_server(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
) -> (oneshot::Sender<()>, JoinHandle<()>) {
    let (tx, rx) = oneshot::channel();
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let thread = std::thread::Builder::new()
        .name(format!("tend-testserver-{port}"))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                http::serve(listener, shared, rx).await;
            });
        })
        .expect("spawn server thread");
    (tx, thread)
}

impl TestCluster {
    /// Starts a server with default options. Panics if it cannot bind or write its
    /// kubeconfig (this is test infrastructure: failing loudly is the useful behaviour).
    pub fn start() -> TestCluster {
        Self::start_with(TestClusterOptions::default())
    }

    pub fn start_with(opts: TestClusterOptions) -> TestCluster {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("set listener non-blocking");
        let addr = listener.local_addr().expect("listener address");
        let shared = Arc::new(Shared {
            state: Mutex::new(store::State::new(store::Controllers {
                enabled: opts.simulate_controllers,
                setup_delay: opts.namespace_setup_delay,
                cleanup_delay: opts.namespace_cleanup_delay,
            })),
            faults: Mutex::new(Vec::new()),
            log: Mutex::new(Vec::new()),
            aggregated_discovery: opts.aggregated_discovery,
            deny_cluster_wide_lists: std::sync::atomic::AtomicBool::new(false),
            response_bytes: Arc::new(AtomicU64::new(0)),
            controllers: tokio::sync::Notify::new(),
        });
        let (tx, thread) = spawn_server(listener, shared.clone());
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, kubeconfig_yaml(&format!("http://{addr}")))
            .expect("write kubeconfig");
        TestCluster {
            shared,
            addr,
            kubeconfig,
            _dir: dir,
            running: Mutex::new(Some((tx, thread))),
        }
    }

    /// Stop serving, as a crashed or restarting apiserver does: the port refuses
    /// connections and every open connection is closed (requests in flight get no answer).
    /// State, faults and the request log are kept for [`TestCluster::restart`].
    pub fn stop(&self) {
        if let Some((tx, thread)) = self.running.lock().take() {
            let _ = tx.send(());
            let _ = thread.join();
        }
    }

    /// Serve again on the same port, with the state as it was when stopped.
    pub fn restart(&self) {
        let mut running = self.running.lock();
        if running.is_some() {
            return;
        }
        let listener = std::net::TcpListener::bind(self.addr).expect("bind the same port again");
        listener
            .set_nonblocking(true)
            .expect("set listener non-blocking");
        *running = Some(spawn_server(listener, self.shared.clone()));
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A kubeconfig (cluster/context/user all named `test`, namespace `default`, a token
    /// user) in a temp dir owned by this TestCluster.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig_yaml(&self.url())
    }

    /// A `kube::Client` for this server (built from the kubeconfig).
    pub async fn client(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("read kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("kube config");
        kube::Client::try_from(config).expect("kube client")
    }

    /// Every request served so far (including faulted ones), oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared
            .log
            .lock()
            .iter()
            .map(Logged::snapshot)
            .collect()
    }

    /// Forbid (or allow again) LISTs of namespaced resources across all namespaces, as RBAC
    /// with only namespaced RoleBindings would; SelfSubjectAccessReviews answer accordingly.
    pub fn deny_cluster_wide_lists(&self, deny: bool) {
        self.shared
            .deny_cluster_wide_lists
            .store(deny, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn clear_requests(&self) {
        self.shared.log.lock().clear();
    }

    /// Request counts by (verb, resource plural); non-resource paths count under "".
    pub fn counts(&self) -> BTreeMap<(Verb, String), usize> {
        let mut m = BTreeMap::new();
        for r in self.shared.log.lock().iter().map(|l| &l.record) {
            *m.entry((r.verb, r.resource.clone())).or_insert(0) += 1;
        }
        m
    }

    /// Number of logged requests with this verb on this resource plural.
    pub fn count(&self, verb: Verb, resource: &str) -> usize {
        self.shared
            .log
            .lock()
            .iter()
            .filter(|l| l.record.verb == verb && l.record.resource == resource)
            .count()
    }

    /// Bytes of response bodies the server has sent since it started or since
    /// [`Self::reset_response_bytes`] (watch streams count as they go; faulted responses
    /// count their Status body). Per request: [`RequestRecord::response_bytes`].
    pub fn response_bytes(&self) -> u64 {
        self.shared.response_bytes.load(Ordering::Relaxed)
    }

    pub fn reset_response_bytes(&self) {
        self.shared.response_bytes.store(0, Ordering::Relaxed);
    }

    /// Adds a fault rule; rules are checked in the order they were added.
    pub fn inject(&self, fault: Fault) {
        self.shared.faults.lock().push(fault);
    }

    pub fn clear_faults(&self) {
        self.shared.faults.lock().clear();
    }

    /// Creates an object directly (no HTTP, not logged), as a POST by `manager` would.
    /// The object needs apiVersion, kind and metadata.name (namespace defaults to
    /// `default` for namespaced kinds). Returns the stored object or the error message.
    pub fn seed(&self, obj: Value) -> Result<Value, String> {
        let result = self
            .shared
            .state
            .lock()
            .seed(obj, "tend-testserver-seed")
            .map_err(|e| e.message);
        // A seeded namespace may have queued controller work.
        self.shared.controllers.notify_one();
        result
    }

    /// Reads an object directly. `group` is "" for the core group; `ns` "" when cluster-scoped.
    pub fn object(&self, group: &str, resource: &str, ns: &str, name: &str) -> Option<Value> {
        self.shared.state.lock().object(group, resource, ns, name)
    }

    /// All stored objects of a resource, across namespaces.
    pub fn objects(&self, group: &str, resource: &str) -> Vec<Value> {
        self.shared.state.lock().objects_of(group, resource)
    }

    /// The cluster-wide resourceVersion counter (bumped on every stored write).
    pub fn resource_version(&self) -> u64 {
        self.shared.state.lock().resource_version()
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

fn kubeconfig_yaml(server: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {server}
contexts:
- name: test
  context:
    cluster: test
    user: test
    namespace: default
current-context: test
users:
- name: test
  user:
    token: tend-testserver-token
preferences: {{}}
"
    )
}
