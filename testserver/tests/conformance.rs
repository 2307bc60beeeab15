//! Conformance suite: the Kubernetes API behaviour tend relies on, checked through the
//! `kube` client. By default every test starts its own `TestCluster`; with
//! `TEND_CONFORMANCE_KUBECONFIG=<path>` the same assertions run against that cluster
//! (each test in a fresh namespace, removed afterwards). Tests that need fault injection
//! or the request log print a note and return early on a real cluster.

use futures::FutureExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{Discovery, Scope};
use kube::{Client, ResourceExt};
use serde_json::{json, Value};
use std::borrow::Borrow;
use std::fmt::Debug;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};
use tend_testserver::{Fault, TestCluster, TestClusterOptions, Verb};

const REAL: &str = "TEND_CONFORMANCE_KUBECONFIG";

struct Env {
    client: Client,
    ns: String,
    suffix: String,
    cluster: Option<TestCluster>,
    extra_ns: parking_lot::Mutex<Vec<String>>,
    crds: parking_lot::Mutex<Vec<String>>,
}

impl Env {
    async fn new() -> Env {
        let suffix: String = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        let (client, cluster) = match std::env::var(REAL) {
            Ok(path) => {
                let kc = kube::config::Kubeconfig::read_from(path).expect("read kubeconfig");
                let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
                    .await
                    .expect("kubeconfig");
                (Client::try_from(cfg).expect("client"), None)
            }
            Err(_) => {
                let c = TestCluster::start();
                (c.client().await, Some(c))
            }
        };
        let ns = format!("conf-{suffix}");
        let env = Env {
            client,
            ns: ns.clone(),
            suffix,
            cluster,
            extra_ns: Default::default(),
            crds: Default::default(),
        };
        env.create_ns(&ns).await;
        env
    }

    async fn create_ns(&self, name: &str) {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
    }

    /// A further namespace, removed at cleanup.
    async fn extra_namespace(&self, prefix: &str) -> String {
        let name = format!("{prefix}-{}", self.suffix);
        self.create_ns(&name).await;
        self.extra_ns.lock().push(name.clone());
        name
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// The test server, or None (with a note) on a real cluster.
    fn local(&self, what: &str) -> Option<&TestCluster> {
        if self.cluster.is_none() {
            eprintln!(
                "note: skipping {what}: needs the test server (fault injection / request log)"
            );
        }
        self.cluster.as_ref()
    }

    async fn cleanup(&self) {
        if self.cluster.is_some() {
            return;
        }
        let crds = Api::<CustomResourceDefinition>::all(self.client.clone());
        let names = self.crds.lock().clone();
        for c in names {
            let _ = crds.delete(&c, &DeleteParams::default()).await;
        }
        let nss = Api::<Namespace>::all(self.client.clone());
        let mut all = self.extra_ns.lock().clone();
        all.push(self.ns.clone());
        for n in all {
            let _ = nss.delete(&n, &DeleteParams::default()).await;
        }
    }

    async fn raw(
        &self,
        method: &str,
        path: &str,
        ct: Option<&str>,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> (u16, Value, http::HeaderMap) {
        let (code, bytes, headers) = self.raw_bytes(method, path, ct, headers, body).await;
        (
            code,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            headers,
        )
    }

    async fn raw_bytes(
        &self,
        method: &str,
        path: &str,
        ct: Option<&str>,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> (u16, Vec<u8>, http::HeaderMap) {
        let mut b = http::Request::builder().method(method).uri(path);
        if let Some(ct) = ct {
            b = b.header("content-type", ct);
        }
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = b.body(kube::client::Body::from(body)).unwrap();
        let resp = self.client.send(req).await.expect("send");
        let code = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect_bytes().await.expect("body");
        (code, bytes.to_vec(), headers)
    }

    /// Creates a CRD `widgets.<group>` (kind Widget) and waits until it is Established.
    async fn widget_crd(&self, status_subresource: bool) -> (String, ApiResource) {
        let group = format!("w{}.conformance.tend.dev", self.suffix);
        let mut version = json!({
            "name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "default": 3},
                    "color": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}
                }},
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }}}
        });
        if status_subresource {
            version["subresources"] = json!({"status": {}});
        }
        let name = format!("widgets.{group}");
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                     "versions": [version]}
        }))
        .unwrap();
        let api = Api::<CustomResourceDefinition>::all(self.client.clone());
        api.create(&PostParams::default(), &crd)
            .await
            .expect("create CRD");
        self.crds.lock().push(name.clone());
        eventually("CRD established", || async {
            let c = api.get(&name).await.ok()?;
            let conds = c.status?.conditions?;
            conds
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        })
        .await;
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&group, "v1", "Widget"),
            "widgets",
        );
        // Discovery of a new CRD can lag briefly on a real server.
        let widgets: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &self.ns, &ar);
        eventually("CRD served", || async {
            widgets.list(&ListParams::default()).await.ok().map(|_| ())
        })
        .await;
        (name, ar)
    }
}

/// Polls `f` until it returns Some (up to 60 s; real clusters act asynchronously).
async fn eventually<T, F, Fut>(what: &str, f: F) -> T
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn api_err<T: std::fmt::Debug>(r: kube::Result<T>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn cm(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
}

fn managed(obj: &impl ResourceExt) -> Vec<Value> {
    obj.managed_fields()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect()
}

fn entry<'a>(mf: &'a [Value], manager: &str, op: &str) -> Option<&'a Value> {
    mf.iter()
        .find(|e| e["manager"] == manager && e["operation"] == op && e.get("subresource").is_none())
}

/// Unpadded URL-safe base64 of a JSON document, as continue tokens are encoded.
fn base64_url(doc: &Value) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = doc.to_string().into_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn apply_cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// Server-side apply of `object` to `name` as field manager `manager`: the request tend
/// makes for every object.
async fn apply<K>(
    api: &Api<K>,
    name: &str,
    manager: &str,
    object: impl Borrow<Value>,
) -> kube::Result<K>
where
    K: Clone + DeserializeOwned + Debug,
{
    apply_with(api, name, PatchParams::apply(manager), object).await
}

/// [`apply`] with other parameters: `.force()` to take over fields another manager owns,
/// `.dry_run()`.
async fn apply_with<K>(
    api: &Api<K>,
    name: &str,
    params: PatchParams,
    object: impl Borrow<Value>,
) -> kube::Result<K>
where
    K: Clone + DeserializeOwned + Debug,
{
    api.patch(name, &params, &Patch::Apply(object.borrow()))
        .await
}

macro_rules! conformance {
    ($name:ident, |$env:ident| $body:block) => {
        #[tokio::test]
        async fn $name() {
            let $env = Env::new().await;
            let result = AssertUnwindSafe(async { $body }).catch_unwind().await;
            $env.cleanup().await;
            if let Err(panic) = result {
                std::panic::resume_unwind(panic);
            }
        }
    };
}

// Impersonation and RBAC, in a file of their own.
#[path = "conformance/impersonation.rs"]
mod impersonation;

// ------------------------------------------------------------------------------------
// Discovery
// ------------------------------------------------------------------------------------

conformance!(version_endpoint, |env| {
    let v = env.client.apiserver_version().await.expect("version");
    assert_eq!(v.major, "1");
    let minor: u32 = v
        .minor
        .trim_end_matches('+')
        .parse()
        .expect("numeric minor");
    assert!(minor >= 26, "minor {minor}");
    assert!(v.git_version.starts_with('v'));
});

async fn check_discovery(d: &Discovery) {
    let find = |group: &str, kind: &str| {
        d.groups()
            .filter(|g| g.name() == group)
            .flat_map(|g| g.recommended_resources())
            .find(|(ar, _)| ar.kind == kind)
            .unwrap_or_else(|| panic!("{group}/{kind} not discovered"))
    };
    for (group, kind, plural, namespaced) in [
        ("", "ConfigMap", "configmaps", true),
        ("", "Namespace", "namespaces", false),
        ("", "Secret", "secrets", true),
        ("", "Service", "services", true),
        ("", "Pod", "pods", true),
        ("", "ServiceAccount", "serviceaccounts", true),
        ("", "PersistentVolumeClaim", "persistentvolumeclaims", true),
        ("", "Event", "events", true),
        ("apps", "Deployment", "deployments", true),
        ("apps", "StatefulSet", "statefulsets", true),
        ("apps", "DaemonSet", "daemonsets", true),
        ("batch", "Job", "jobs", true),
        ("batch", "CronJob", "cronjobs", true),
        ("rbac.authorization.k8s.io", "Role", "roles", true),
        (
            "rbac.authorization.k8s.io",
            "RoleBinding",
            "rolebindings",
            true,
        ),
        (
            "rbac.authorization.k8s.io",
            "ClusterRole",
            "clusterroles",
            false,
        ),
        (
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
        ),
        ("coordination.k8s.io", "Lease", "leases", true),
        (
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
        ),
    ] {
        let (ar, caps) = find(group, kind);
        assert_eq!(ar.plural, plural);
        assert_eq!(ar.version, "v1");
        assert_eq!(caps.scope == Scope::Namespaced, namespaced, "{kind} scope");
        for verb in ["get", "list", "create", "update", "patch", "delete"] {
            assert!(caps.supports_operation(verb), "{kind} verb {verb}");
        }
    }
    let (_, caps) = find("apps", "Deployment");
    assert!(
        caps.subresources
            .iter()
            .any(|(ar, _)| ar.plural == "status"),
        "deployments/status: {:?}",
        caps.subresources
    );
}

conformance!(legacy_discovery_lists_builtin_kinds, |env| {
    let d = Discovery::new(env.client.clone())
        .run()
        .await
        .expect("discovery");
    check_discovery(&d).await;
});

conformance!(aggregated_discovery_lists_builtin_kinds, |env| {
    let d = Discovery::new(env.client.clone())
        .run_aggregated()
        .await
        .expect("aggregated discovery");
    check_discovery(&d).await;
});

conformance!(aggregated_discovery_can_be_turned_off, |env| {
    if env.local("aggregated discovery switch").is_none() {
        return;
    }
    let old = TestCluster::start_with(TestClusterOptions {
        aggregated_discovery: false,
        ..Default::default()
    });
    let client = old.client().await;
    // Without aggregated discovery the server answers the aggregated Accept header with
    // the legacy document (as a pre-1.26 server does), so the client must fall back.
    let accept =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let req = http::Request::get("/apis")
        .header("accept", accept)
        .body(kube::client::Body::from(vec![]))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(!ct.contains("apidiscovery"), "{ct}");
    let body: Value =
        serde_json::from_slice(&resp.into_body().collect_bytes().await.unwrap()).unwrap();
    assert_eq!(body["kind"], "APIGroupList");
    let agg = Discovery::new(client.clone()).run_aggregated().await;
    assert!(agg.is_err() || agg.unwrap().groups().all(|g| g.name() != "apps"));
    let on = env.cluster.as_ref().unwrap();
    let req = http::Request::get("/apis")
        .header("accept", accept)
        .body(kube::client::Body::from(vec![]))
        .unwrap();
    let resp = on.client().await.send(req).await.unwrap();
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .contains("g=apidiscovery.k8s.io;v=v2"));
    let d = Discovery::new(client)
        .run()
        .await
        .expect("legacy discovery");
    check_discovery(&d).await;
});

conformance!(discovery_documents_have_kubernetes_shape, |env| {
    let groups = env.client.list_api_groups().await.expect("/apis");
    let apps = groups
        .groups
        .iter()
        .find(|g| g.name == "apps")
        .expect("apps group");
    assert_eq!(
        apps.preferred_version.as_ref().unwrap().group_version,
        "apps/v1"
    );
    let core = env
        .client
        .list_core_api_resources("v1")
        .await
        .expect("/api/v1");
    assert_eq!(core.group_version, "v1");
    let ns = core
        .resources
        .iter()
        .find(|r| r.name == "namespaces")
        .unwrap();
    assert!(!ns.namespaced);
    assert_eq!(ns.kind, "Namespace");
    assert!(ns.short_names.as_ref().unwrap().contains(&"ns".to_string()));
    assert!(core.resources.iter().any(|r| r.name == "namespaces/status"));
    let (code, body, _) = env.raw("GET", "/apis/apps", None, &[], vec![]).await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "APIGroup");
    assert_eq!(body["preferredVersion"]["version"], "v1");
    let versions = env.client.list_core_api_versions().await.expect("/api");
    assert!(versions.versions.contains(&"v1".to_string()));
});

conformance!(unknown_resources_are_404, |env| {
    // A path no API group serves falls through kube-apiserver's handler chain to the Go
    // mux's plain 404, not a Status.
    for path in [
        "/apis/nonexistent.tend.dev/v1/namespaces/default/things",
        "/apis/nonexistent.tend.dev",
        "/nonexistent",
    ] {
        let (code, body, headers) = env.raw_bytes("GET", path, None, &[], vec![]).await;
        assert_eq!(code, 404, "{path}");
        let ct = headers["content-type"].to_str().unwrap();
        assert!(ct.starts_with("text/plain"), "{path}: {ct}");
        assert_eq!(
            String::from_utf8_lossy(&body),
            "404 page not found\n",
            "{path}"
        );
    }
    // Unknown resources inside a served group version are go-restful's Status.
    for path in ["/api/v1/nonexistents", "/apis/apps/v1/nonexistents"] {
        let (code, body, _) = env.raw("GET", path, None, &[], vec![]).await;
        assert_eq!(code, 404, "{path}");
        assert_eq!(body["kind"], "Status", "{path}: {body}");
        assert_eq!(body["reason"], "NotFound", "{path}: {body}");
    }
    // kube's client still reports the plain 404 as an API error with the code.
    let api: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        &env.ns,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("nonexistent.tend.dev", "v1", "Thing"),
            "things",
        ),
    );
    assert_eq!(api_err(api.get("x").await).code, 404);
});

// ------------------------------------------------------------------------------------
// CRUD
// ------------------------------------------------------------------------------------

conformance!(create_and_get_keeps_bookkeeping, |env| {
    let api: Api<ConfigMap> = env.api();
    let created = api
        .create(&PostParams::default(), &cm("one", json!({"a": "1"})))
        .await
        .expect("create");
    assert_eq!(created.namespace().as_deref(), Some(env.ns.as_str()));
    assert!(!created.uid().unwrap_or_default().is_empty());
    assert!(created.metadata.creation_timestamp.is_some());
    assert!(!created.resource_version().unwrap_or_default().is_empty());
    // ConfigMaps have no spec and no generation.
    assert_eq!(created.metadata.generation, None);
    let got = api.get("one").await.expect("get");
    assert_eq!(got.uid(), created.uid());
    assert_eq!(got.resource_version(), created.resource_version());
    assert_eq!(got.data.unwrap()["a"], "1");
});

conformance!(create_existing_is_409_already_exists, |env| {
    let api: Api<ConfigMap> = env.api();
    api.create(&PostParams::default(), &cm("dup", json!({})))
        .await
        .unwrap();
    let s = api_err(
        api.create(&PostParams::default(), &cm("dup", json!({})))
            .await,
    );
    assert_eq!(s.code, 409);
    assert_eq!(s.reason, "AlreadyExists");
    assert_eq!(s.message, r#"configmaps "dup" already exists"#);
    let d = s.details.unwrap();
    assert_eq!(d.name, "dup");
    assert_eq!(d.kind, "configmaps");
});

conformance!(get_missing_is_404_not_found, |env| {
    let api: Api<ConfigMap> = env.api();
    let s = api_err(api.get("nope").await);
    assert_eq!(s.code, 404);
    assert_eq!(s.reason, "NotFound");
    assert_eq!(s.message, r#"configmaps "nope" not found"#);
    assert_eq!(s.details.unwrap().kind, "configmaps");
    let deps: Api<Deployment> = env.api();
    let s = api_err(deps.get("nope").await);
    assert_eq!(s.message, r#"deployments.apps "nope" not found"#);
    assert_eq!(s.details.unwrap().group, "apps");
});

conformance!(write_into_missing_namespace_is_404, |env| {
    let missing = format!("missing-{}", env.suffix);
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), &missing);
    let s = api_err(
        api.create(&PostParams::default(), &cm("x", json!({})))
            .await,
    );
    assert_eq!(s.code, 404);
    assert_eq!(s.reason, "NotFound");
    assert_eq!(s.message, format!(r#"namespaces "{missing}" not found"#));
    let s = api_err(apply(&api, "x", "tend", apply_cm("x", json!({}))).await);
    assert_eq!(s.code, 404);
    assert_eq!(s.message, format!(r#"namespaces "{missing}" not found"#));
});

conformance!(invalid_names_are_422, |env| {
    let api: Api<ConfigMap> = env.api();
    let s = api_err(
        api.create(&PostParams::default(), &cm("Bad_Name", json!({})))
            .await,
    );
    assert_eq!(s.code, 422);
    assert_eq!(s.reason, "Invalid");
    assert!(
        s.message.starts_with(
            r#"ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name""#
        ),
        "{}",
        s.message
    );
    let d = s.details.unwrap();
    assert_eq!(d.kind, "ConfigMap");
    assert_eq!(d.causes[0].field, "metadata.name");
    assert_eq!(d.causes[0].reason, "FieldValueInvalid");
    // Namespaces must be DNS-1123 labels: dots are not allowed.
    let nss = Api::<Namespace>::all(env.client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "a.b"}})).unwrap();
    assert_eq!(
        api_err(nss.create(&PostParams::default(), &ns).await).code,
        422
    );
    // Services must be RFC 1123 labels: no dots. Until 1.36 they had to be DNS-1035
    // labels (no leading digit either); KEP-5311 (RelaxedServiceNameValidation, on by
    // default in 1.36) allows `1svc`.
    let svcs: Api<Service> = env.api();
    let svc = |name: &str| -> Service {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}),
        )
        .unwrap()
    };
    let s = api_err(
        svcs.create(&PostParams::default(), &svc("svc.dotted"))
            .await,
    );
    assert_eq!(s.code, 422);
    assert!(
        s.message.starts_with(
            r#"Service "svc.dotted" is invalid: metadata.name: Invalid value: "svc.dotted""#
        ),
        "{}",
        s.message
    );
    let minor: u32 = env
        .client
        .apiserver_version()
        .await
        .unwrap()
        .minor
        .trim_end_matches('+')
        .parse()
        .unwrap();
    let leading_digit = svcs.create(&PostParams::default(), &svc("1svc")).await;
    if minor >= 36 {
        assert_eq!(
            leading_digit
                .expect("1svc is a valid Service name")
                .name_any(),
            "1svc"
        );
    } else {
        assert_eq!(api_err(leading_digit).code, 422);
    }
});

conformance!(generate_name_appends_a_suffix, |env| {
    let api: Api<ConfigMap> = env.api();
    let obj: ConfigMap =
        serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    let name = created.name_any();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
});

conformance!(update_with_stale_resource_version_is_409_conflict, |env| {
    let api: Api<ConfigMap> = env.api();
    let created = api
        .create(&PostParams::default(), &cm("rv", json!({"a": "1"})))
        .await
        .unwrap();
    let mut first = created.clone();
    first.data = Some([("a".to_string(), "2".to_string())].into());
    let updated = api
        .replace("rv", &PostParams::default(), &first)
        .await
        .unwrap();
    assert_ne!(updated.resource_version(), created.resource_version());
    let mut stale = created.clone();
    stale.data = Some([("a".to_string(), "3".to_string())].into());
    let s = api_err(api.replace("rv", &PostParams::default(), &stale).await);
    assert_eq!(s.code, 409);
    assert_eq!(s.reason, "Conflict");
    assert_eq!(
        s.message,
        r#"Operation cannot be fulfilled on configmaps "rv": the object has been modified; please apply your changes to the latest version and try again"#
    );
    assert_eq!(api.get("rv").await.unwrap().data.unwrap()["a"], "2");
});

conformance!(update_of_missing_object_is_404, |env| {
    let api: Api<ConfigMap> = env.api();
    let s = api_err(
        api.replace("ghost", &PostParams::default(), &cm("ghost", json!({})))
            .await,
    );
    assert_eq!(s.code, 404);
});

conformance!(list_has_list_kind_and_resource_version, |env| {
    let api: Api<ConfigMap> = env.api();
    api.create(&PostParams::default(), &cm("l1", json!({})))
        .await
        .unwrap();
    let (code, body, _) = env
        .raw(
            "GET",
            &format!("/api/v1/namespaces/{}/configmaps", env.ns),
            None,
            &[],
            vec![],
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "ConfigMapList");
    assert_eq!(body["apiVersion"], "v1");
    assert!(body["metadata"]["resourceVersion"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert!(body["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["metadata"]["name"] == "l1"));
    let (_, body, _) = env
        .raw(
            "GET",
            &format!("/apis/apps/v1/namespaces/{}/deployments", env.ns),
            None,
            &[],
            vec![],
        )
        .await;
    assert_eq!(body["kind"], "DeploymentList");
    assert_eq!(body["apiVersion"], "apps/v1");
});

async fn labelled(env: &Env) -> Api<ConfigMap> {
    let api: Api<ConfigMap> = env.api();
    for (name, labels) in [
        ("web", json!({"app": "web", "tier": "front"})),
        ("api", json!({"app": "api", "tier": "back"})),
        ("db", json!({"app": "db"})),
    ] {
        let obj: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
        api.create(&PostParams::default(), &obj).await.unwrap();
    }
    api
}

async fn names(api: &Api<ConfigMap>, lp: &ListParams) -> Vec<String> {
    let mut n: Vec<String> = api
        .list(lp)
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| o.name_any())
        .collect();
    n.sort();
    n
}

conformance!(label_selectors_equality_based, |env| {
    let api = labelled(&env).await;
    assert_eq!(
        names(&api, &ListParams::default().labels("app=web")).await,
        ["web"]
    );
    assert_eq!(
        names(&api, &ListParams::default().labels("app==api")).await,
        ["api"]
    );
    assert_eq!(
        names(&api, &ListParams::default().labels("app,app!=web")).await,
        ["api", "db"]
    );
    assert_eq!(
        names(&api, &ListParams::default().labels("app=web,tier=back")).await,
        Vec::<String>::new()
    );
});

conformance!(label_selectors_set_based, |env| {
    let api = labelled(&env).await;
    assert_eq!(
        names(&api, &ListParams::default().labels("app in (web,db)")).await,
        ["db", "web"]
    );
    assert_eq!(
        names(&api, &ListParams::default().labels("app,app notin (web)")).await,
        ["api", "db"]
    );
    assert_eq!(
        names(&api, &ListParams::default().labels("tier")).await,
        ["api", "web"]
    );
    assert_eq!(
        names(&api, &ListParams::default().labels("app,!tier")).await,
        ["db"]
    );
    let s = api_err(api.list(&ListParams::default().labels("app in (web")).await);
    assert_eq!(s.code, 400);
});

conformance!(field_selectors_on_metadata, |env| {
    let api = labelled(&env).await;
    assert_eq!(
        names(&api, &ListParams::default().fields("metadata.name=db")).await,
        ["db"]
    );
    let n = names(
        &api,
        &ListParams::default()
            .fields("metadata.name!=db")
            .labels("app"),
    )
    .await;
    assert_eq!(n, ["api", "web"]);
    let all: Api<ConfigMap> = Api::all(env.client.clone());
    let n = names(
        &all,
        &ListParams::default()
            .fields(&format!("metadata.namespace={}", env.ns))
            .labels("app"),
    )
    .await;
    assert_eq!(n, ["api", "db", "web"]);
    let s = api_err(
        api.list(&ListParams::default().fields("data.foo=bar"))
            .await,
    );
    assert_eq!(s.code, 400);
    assert_eq!(s.reason, "BadRequest");
    // Kinds without their own field-label conversion use apimachinery's
    // DefaultMetaV1FieldSelectorConversion; kinds with one (Pods) say "not supported".
    assert_eq!(
        s.message,
        r#""data.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
    let pods: Api<k8s_openapi::api::core::v1::Pod> = env.api();
    let s = api_err(
        pods.list(&ListParams::default().fields("spec.foo=bar"))
            .await,
    );
    assert_eq!(s.code, 400);
    assert_eq!(s.message, "field label not supported: spec.foo");
    assert!(pods
        .list(&ListParams::default().fields("status.phase=Running"))
        .await
        .is_ok());
});

conformance!(pagination_with_limit_and_continue, |env| {
    let api: Api<ConfigMap> = env.api();
    for i in 0..5 {
        let obj: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("p{i}"), "labels": {"page": "yes"}}}),
        )
        .unwrap();
        api.create(&PostParams::default(), &obj).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut lp = ListParams::default().labels("page=yes").limit(2);
    let mut pages = 0;
    loop {
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 2);
        seen.extend(page.items.iter().map(|o| o.name_any()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = lp.continue_token(&token),
            None => break,
        }
        assert!(pages < 10, "too many pages");
    }
    seen.sort();
    assert_eq!(seen, ["p0", "p1", "p2", "p3", "p4"]);
    assert_eq!(pages, 3);
});

conformance!(list_across_all_namespaces, |env| {
    let other = env.extra_namespace("conf-other").await;
    let label = format!("run={}", env.suffix);
    for ns in [env.ns.clone(), other.clone()] {
        let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), &ns);
        let obj: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": "shared", "labels": {"run": env.suffix}}}),
        )
        .unwrap();
        api.create(&PostParams::default(), &obj).await.unwrap();
    }
    let all: Api<ConfigMap> = Api::all(env.client.clone());
    let mut found: Vec<String> = all
        .list(&ListParams::default().labels(&label))
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| o.namespace().unwrap())
        .collect();
    found.sort();
    let mut want = vec![env.ns.clone(), other];
    want.sort();
    assert_eq!(found, want);
    // The dynamic API over all namespaces sees the same objects.
    let ar = ApiResource::erase::<ConfigMap>(&());
    let dynamic: Api<DynamicObject> = Api::all_with(env.client.clone(), &ar);
    assert_eq!(
        dynamic
            .list(&ListParams::default().labels(&label))
            .await
            .unwrap()
            .items
            .len(),
        2
    );
});

conformance!(delete_returns_status_and_removes, |env| {
    let api: Api<ConfigMap> = env.api();
    let created = api
        .create(&PostParams::default(), &cm("gone", json!({})))
        .await
        .unwrap();
    let res = api.delete("gone", &DeleteParams::default()).await.unwrap();
    let status = res.right().expect("ConfigMap delete answers with a Status");
    assert_eq!(status.details.as_ref().unwrap().name, "gone");
    assert_eq!(status.details.as_ref().unwrap().uid, created.uid().unwrap());
    assert_eq!(api_err(api.get("gone").await).code, 404);
    assert_eq!(
        api_err(api.delete("gone", &DeleteParams::default()).await).code,
        404
    );
});

conformance!(finalizers_hold_deletion_until_removed, |env| {
    let api: Api<ConfigMap> = env.api();
    let obj: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["conformance.tend.dev/hold"]}}),
    )
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    let res = api.delete("held", &DeleteParams::default()).await.unwrap();
    let pending = res.left().expect("pending deletion returns the object");
    assert!(pending.metadata.deletion_timestamp.is_some());
    let still = api.get("held").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("finalized object to disappear", || async {
        matches!(api.get("held").await, Err(kube::Error::Api(s)) if s.code == 404).then_some(())
    })
    .await;
});

conformance!(namespace_delete_cascades, |env| {
    let doomed = env.extra_namespace("conf-doomed").await;
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), &doomed);
    api.create(&PostParams::default(), &cm("inside", json!({})))
        .await
        .unwrap();
    let nss = Api::<Namespace>::all(env.client.clone());
    let res = nss.delete(&doomed, &DeleteParams::default()).await.unwrap();
    let ns = res.left().expect("namespace delete returns the namespace");
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    assert!(ns.metadata.deletion_timestamp.is_some());
    eventually("namespace contents to be deleted", || async {
        matches!(api.get("inside").await, Err(kube::Error::Api(s)) if s.code == 404).then_some(())
    })
    .await;
    eventually("namespace to be deleted", || async {
        matches!(nss.get(&doomed).await, Err(kube::Error::Api(s)) if s.code == 404).then_some(())
    })
    .await;
});

// ------------------------------------------------------------------------------------
// Patches
// ------------------------------------------------------------------------------------

conformance!(merge_patch_sets_and_removes_keys, |env| {
    let api: Api<ConfigMap> = env.api();
    api.create(
        &PostParams::default(),
        &cm("m", json!({"a": "1", "b": "2"})),
    )
    .await
    .unwrap();
    let p = api
        .patch(
            "m",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": null, "c": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        p.data.unwrap(),
        [
            ("a".to_string(), "1".to_string()),
            ("c".to_string(), "3".to_string())
        ]
        .into()
    );
});

conformance!(json_patch_operations_and_failed_test, |env| {
    let api: Api<ConfigMap> = env.api();
    api.create(&PostParams::default(), &cm("j", json!({"a": "1"})))
        .await
        .unwrap();
    let path = format!("/api/v1/namespaces/{}/configmaps/j", env.ns);
    let ops = json!([
        {"op": "add", "path": "/metadata/labels", "value": {"x": "y"}},
        {"op": "replace", "path": "/data/a", "value": "2"},
        {"op": "test", "path": "/data/a", "value": "2"}
    ]);
    let (code, p, _) = env
        .raw(
            "PATCH",
            &path,
            Some("application/json-patch+json"),
            &[],
            serde_json::to_vec(&ops).unwrap(),
        )
        .await;
    assert_eq!(code, 200, "{p}");
    assert_eq!(p["data"]["a"], "2");
    assert_eq!(p["metadata"]["labels"]["x"], "y");
    let bad = json!([{"op": "test", "path": "/data/a", "value": "nope"}]);
    let (code, s, _) = env
        .raw(
            "PATCH",
            &path,
            Some("application/json-patch+json"),
            &[],
            serde_json::to_vec(&bad).unwrap(),
        )
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(s["kind"], "Status");
});

conformance!(strategic_merge_patch_merges_containers_by_name, |env| {
    let api: Api<Deployment> = env.api();
    apply(
        &api,
        "smp",
        "tend",
        deployment(
            "smp",
            json!([
                {"name": "a", "image": "nginx:1"},
                {"name": "b", "image": "redis:7"}
            ]),
        ),
    )
    .await
    .unwrap();
    let p = api
        .patch("smp", &PatchParams::default(), &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "redis:8"}]}}}})))
        .await
        .unwrap();
    let cs = p.spec.unwrap().template.spec.unwrap().containers;
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[0].image.as_deref(), Some("nginx:1"));
    assert_eq!(cs[1].image.as_deref(), Some("redis:8"));
});

conformance!(strategic_merge_patch_on_custom_resource_is_415, |env| {
    let (_, ar) = env.widget_crd(false).await;
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns, &ar);
    let w: DynamicObject = serde_json::from_value(json!({"apiVersion": ar.api_version, "kind": "Widget", "metadata": {"name": "w"}, "spec": {"color": "red"}})).unwrap();
    api.create(&PostParams::default(), &w).await.unwrap();
    let s = api_err(
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"color": "blue"}})),
        )
        .await,
    );
    assert_eq!(s.code, 415);
    assert_eq!(s.reason, "UnsupportedMediaType");
});

// ------------------------------------------------------------------------------------
// Server-side apply
// ------------------------------------------------------------------------------------

conformance!(
    apply_creates_with_exact_managed_fields_for_configmap,
    |env| {
        let api: Api<ConfigMap> = env.api();
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "ssa", "labels": {"app": "demo"}, "annotations": {"note": "x"}},
        "data": {"a": "1", "b": "2"}});
        let obj = apply(&api, "ssa", "tend", cfg).await.unwrap();
        let mf = managed(&obj);
        assert_eq!(mf.len(), 1, "{mf:?}");
        let e = &mf[0];
        assert_eq!(e["manager"], "tend");
        assert_eq!(e["operation"], "Apply");
        assert_eq!(e["apiVersion"], "v1");
        assert_eq!(e["fieldsType"], "FieldsV1");
        assert!(e["time"].is_string());
        assert_eq!(
            e["fieldsV1"],
            json!({"f:data": {"f:a": {}, "f:b": {}},
               "f:metadata": {"f:annotations": {"f:note": {}}, "f:labels": {"f:app": {}}}})
        );
    }
);

fn deployment(name: &str, containers: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": containers}}}})
}

conformance!(apply_deployment_exact_managed_fields, |env| {
    let api: Api<Deployment> = env.api();
    let cfg = deployment(
        "web",
        json!([{
            "name": "web", "image": "nginx:1.27",
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": "MODE", "value": "prod"}]
        }]),
    );
    let obj = apply(&api, "web", "tend", cfg).await.unwrap();
    let mf = managed(&obj);
    let e = entry(&mf, "tend", "Apply").expect("tend entry");
    assert_eq!(e["apiVersion"], "apps/v1");
    assert_eq!(
        e["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {
                        ".": {},
                        "f:env": {"k:{\"name\":\"MODE\"}": {".": {}, "f:name": {}, "f:value": {}}},
                        "f:image": {},
                        "f:name": {},
                        "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}}
                    }}}
                }
            }
        })
    );
    // Defaults are set but owned by nobody.
    let spec = obj.spec.unwrap();
    assert_eq!(spec.progress_deadline_seconds, Some(600));
    assert!(!e["fieldsV1"]
        .to_string()
        .contains("progressDeadlineSeconds"));
});

conformance!(create_records_update_manager_with_markers, |env| {
    let api: Api<ConfigMap> = env.api();
    let obj: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "upd", "labels": {"app": "x"}}, "data": {"k": "v"}}),
    )
    .unwrap();
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..Default::default()
    };
    let created = api.create(&pp, &obj).await.unwrap();
    let mf = managed(&created);
    let e = entry(&mf, "creator", "Update").expect("creator entry");
    assert_eq!(e["apiVersion"], "v1");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    );
});

conformance!(default_field_manager_comes_from_user_agent, |env| {
    let body = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ua"}, "data": {"k": "v"}})).unwrap();
    let (code, obj, _) = env
        .raw(
            "POST",
            &format!("/api/v1/namespaces/{}/configmaps", env.ns),
            Some("application/json"),
            &[("user-agent", "conformance-agent/1.2.3 (linux/amd64)")],
            body,
        )
        .await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(
        obj["metadata"]["managedFields"][0]["manager"],
        "conformance-agent"
    );
    assert_eq!(obj["metadata"]["managedFields"][0]["operation"], "Update");
});

conformance!(apply_requires_field_manager, |env| {
    let body = serde_json::to_vec(&apply_cm("nofm", json!({"k": "v"}))).unwrap();
    let (code, s, _) = env
        .raw(
            "PATCH",
            &format!("/api/v1/namespaces/{}/configmaps/nofm", env.ns),
            Some("application/apply-patch+yaml"),
            &[],
            body,
        )
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(s["reason"], "Invalid");
    assert_eq!(s["details"]["kind"], "PatchOptions");
    assert_eq!(s["details"]["causes"][0]["field"], "fieldManager");
    assert!(s["message"]
        .as_str()
        .unwrap()
        .contains("is required for apply patch"));
});

conformance!(apply_accepts_yaml_bodies, |env| {
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  key: from-yaml\n";
    let (code, obj, _) = env
        .raw(
            "PATCH",
            &format!(
                "/api/v1/namespaces/{}/configmaps/yml?fieldManager=tend",
                env.ns
            ),
            Some("application/apply-patch+yaml"),
            &[],
            yaml.as_bytes().to_vec(),
        )
        .await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(obj["data"]["key"], "from-yaml");
});

conformance!(apply_same_config_twice_is_a_noop, |env| {
    let api: Api<ConfigMap> = env.api();
    let cfg = apply_cm("twice", json!({"k": "v"}));
    let first = apply(&api, "twice", "tend", &cfg).await.unwrap();
    let second = apply(&api, "twice", "tend", &cfg).await.unwrap();
    assert_eq!(first.resource_version(), second.resource_version());
    assert_eq!(managed(&first), managed(&second));
    let d = deployment("same", json!([{"name": "c", "image": "nginx"}]));
    let deps: Api<Deployment> = env.api();
    let a = apply(&deps, "same", "tend", &d).await.unwrap();
    let b = apply(&deps, "same", "tend", &d).await.unwrap();
    assert_eq!(a.resource_version(), b.resource_version());
    assert_eq!(a.metadata.generation, b.metadata.generation);
});

conformance!(apply_conflict_with_update_manager, |env| {
    let api: Api<ConfigMap> = env.api();
    let pp = PostParams {
        field_manager: Some("other".into()),
        ..Default::default()
    };
    api.create(&pp, &cm("c", json!({"key": "a"})))
        .await
        .unwrap();
    let s = api_err(apply(&api, "c", "tend", apply_cm("c", json!({"key": "b"}))).await);
    assert_eq!(s.code, 409);
    assert_eq!(s.reason, "Conflict");
    assert_eq!(
        s.message,
        r#"Apply failed with 1 conflict: conflict with "other" using v1: .data.key"#
    );
    let causes = s.details.unwrap().causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".data.key");
    assert_eq!(causes[0].message, r#"conflict with "other" using v1"#);
    assert_eq!(api.get("c").await.unwrap().data.unwrap()["key"], "a");
});

conformance!(apply_conflict_between_appliers_lists_each_field, |env| {
    let api: Api<ConfigMap> = env.api();
    apply(
        &api,
        "c2",
        "first",
        apply_cm("c2", json!({"x": "1", "y": "1"})),
    )
    .await
    .unwrap();
    let s = api_err(apply(&api, "c2", "second", apply_cm("c2", json!({"x": "2"}))).await);
    assert_eq!(
        s.message,
        r#"Apply failed with 1 conflict: conflict with "first": .data.x"#
    );
    let s = api_err(
        apply(
            &api,
            "c2",
            "second",
            apply_cm("c2", json!({"x": "2", "y": "2"})),
        )
        .await,
    );
    assert_eq!(
        s.message,
        "Apply failed with 2 conflicts: conflicts with \"first\":\n- .data.x\n- .data.y"
    );
    assert_eq!(s.details.unwrap().causes.len(), 2);
});

conformance!(apply_force_takes_ownership, |env| {
    let api: Api<ConfigMap> = env.api();
    let pp = PostParams {
        field_manager: Some("other".into()),
        ..Default::default()
    };
    api.create(&pp, &cm("f", json!({"key": "a", "keep": "z"})))
        .await
        .unwrap();
    let obj = apply_with(
        &api,
        "f",
        PatchParams::apply("tend").force(),
        apply_cm("f", json!({"key": "b"})),
    )
    .await
    .unwrap();
    assert_eq!(obj.data.as_ref().unwrap()["key"], "b");
    let mf = managed(&obj);
    assert_eq!(
        entry(&mf, "tend", "Apply").unwrap()["fieldsV1"],
        json!({"f:data": {"f:key": {}}})
    );
    assert_eq!(
        entry(&mf, "other", "Update").unwrap()["fieldsV1"],
        json!({"f:data": {".": {}, "f:keep": {}}})
    );
});

conformance!(apply_removes_fields_it_stops_applying, |env| {
    let api: Api<ConfigMap> = env.api();
    apply(
        &api,
        "r",
        "tend",
        apply_cm("r", json!({"a": "1", "b": "2"})),
    )
    .await
    .unwrap();
    let obj = apply(&api, "r", "tend", apply_cm("r", json!({"a": "1"})))
        .await
        .unwrap();
    assert_eq!(
        obj.data.unwrap(),
        [("a".to_string(), "1".to_string())].into()
    );
    // Dropping a whole map removes it.
    let obj = apply(&api, "r", "tend", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r", "labels": {"l": "v"}}}))
        .await
        .unwrap();
    assert!(obj.data.as_ref().is_none_or(|d| d.is_empty()));
    assert_eq!(obj.labels()["l"], "v");
});

conformance!(apply_keeps_dropped_fields_another_manager_owns, |env| {
    let api: Api<ConfigMap> = env.api();
    apply(
        &api,
        "s",
        "a",
        apply_cm("s", json!({"shared": "1", "mine": "a"})),
    )
    .await
    .unwrap();
    // Same value: no conflict, shared ownership.
    let obj = apply(&api, "s", "b", apply_cm("s", json!({"shared": "1"})))
        .await
        .unwrap();
    let mf = managed(&obj);
    assert_eq!(
        entry(&mf, "b", "Apply").unwrap()["fieldsV1"],
        json!({"f:data": {"f:shared": {}}})
    );
    // "a" stops applying "shared": "b" still owns it, so it stays.
    let obj = apply(&api, "s", "a", apply_cm("s", json!({"mine": "a"})))
        .await
        .unwrap();
    assert_eq!(obj.data.as_ref().unwrap()["shared"], "1");
    // Now "b" stops too: nobody owns it, it is removed.
    let obj = apply(&api, "s", "b", apply_cm("s", json!({})))
        .await
        .unwrap();
    assert!(!obj.data.unwrap().contains_key("shared"));
});

conformance!(update_takes_ownership_from_applier, |env| {
    let api: Api<ConfigMap> = env.api();
    apply(&api, "u", "tend", apply_cm("u", json!({"k": "1"})))
        .await
        .unwrap();
    let pp = PatchParams {
        field_manager: Some("editor".into()),
        ..Default::default()
    };
    let obj = api
        .patch("u", &pp, &Patch::Merge(json!({"data": {"k": "2"}})))
        .await
        .unwrap();
    let mf = managed(&obj);
    assert_eq!(
        entry(&mf, "editor", "Update").unwrap()["fieldsV1"],
        json!({"f:data": {"f:k": {}}})
    );
    assert!(
        entry(&mf, "tend", "Apply").is_none(),
        "tend lost its only field: {mf:?}"
    );
    let s = api_err(apply(&api, "u", "tend", apply_cm("u", json!({"k": "1"}))).await);
    assert_eq!(
        s.message,
        r#"Apply failed with 1 conflict: conflict with "editor" using v1: .data.k"#
    );
});

conformance!(apply_merges_associative_lists_between_managers, |env| {
    let api: Api<Deployment> = env.api();
    apply(
        &api,
        "multi",
        "tend",
        deployment("multi", json!([{"name": "app", "image": "nginx:1"}])),
    )
    .await
    .unwrap();
    let sidecar = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "multi"},
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "envoy:1"}]}}}});
    apply(&api, "multi", "mesh", sidecar).await.unwrap();
    let obj = apply(
        &api,
        "multi",
        "tend",
        deployment("multi", json!([{"name": "app", "image": "nginx:2"}])),
    )
    .await
    .unwrap();
    let names: Vec<(String, Option<String>)> = obj
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| (c.name, c.image))
        .collect();
    assert_eq!(
        names,
        [
            ("app".to_string(), Some("nginx:2".to_string())),
            ("sidecar".to_string(), Some("envoy:1".to_string()))
        ]
    );
});

conformance!(apply_rejects_list_items_without_their_key, |env| {
    // A Service port without its key field "port" cannot be tracked.
    let api: Api<Service> = env.api();
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "nokey"},
        "spec": {"ports": [{"name": "http", "targetPort": 80}]}});
    let err = apply(&api, "nokey", "tend", svc).await;
    let s = api_err(err);
    assert!(s.code == 422 || s.code == 400 || s.code == 500, "{s:?}");
});

// ------------------------------------------------------------------------------------
// dry-run
// ------------------------------------------------------------------------------------

conformance!(dry_run_create_returns_full_object_without_storing, |env| {
    let api: Api<Deployment> = env.api();
    let rv_before = env.cluster.as_ref().map(|c| c.resource_version());
    let d: Deployment =
        serde_json::from_value(deployment("dry", json!([{"name": "c", "image": "nginx"}])))
            .unwrap();
    let pp = PostParams {
        dry_run: true,
        field_manager: Some("tend".into()),
    };
    let out = api.create(&pp, &d).await.unwrap();
    assert_eq!(
        out.spec.as_ref().unwrap().progress_deadline_seconds,
        Some(600)
    );
    assert!(!managed(&out).is_empty());
    assert_eq!(api_err(api.get("dry").await).code, 404);
    if let (Some(c), Some(before)) = (&env.cluster, rv_before) {
        assert_eq!(c.resource_version(), before);
    }
});

conformance!(dry_run_apply_and_update_do_not_store, |env| {
    let api: Api<ConfigMap> = env.api();
    let live = apply(&api, "d", "tend", apply_cm("d", json!({"k": "1"})))
        .await
        .unwrap();
    let out = apply_with(
        &api,
        "d",
        PatchParams::apply("tend").dry_run(),
        apply_cm("d", json!({"k": "2"})),
    )
    .await
    .unwrap();
    assert_eq!(out.data.unwrap()["k"], "2");
    let out = api
        .patch(
            "d",
            &PatchParams {
                dry_run: true,
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"k": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(out.data.unwrap()["k"], "3");
    let now = api.get("d").await.unwrap();
    assert_eq!(now.data.as_ref().unwrap()["k"], "1");
    assert_eq!(now.resource_version(), live.resource_version());
    // Dry-run apply of a new object creates nothing.
    apply_with(
        &api,
        "d2",
        PatchParams::apply("tend").dry_run(),
        apply_cm("d2", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(api_err(api.get("d2").await).code, 404);
});

conformance!(dry_run_delete_keeps_object, |env| {
    let api: Api<ConfigMap> = env.api();
    api.create(&PostParams::default(), &cm("keep", json!({})))
        .await
        .unwrap();
    api.delete(
        "keep",
        &DeleteParams {
            dry_run: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(api.get("keep").await.is_ok());
});

// ------------------------------------------------------------------------------------
// Status subresource
// ------------------------------------------------------------------------------------

conformance!(deployment_status_is_a_subresource, |env| {
    let api: Api<Deployment> = env.api();
    apply(
        &api,
        "st",
        "tend",
        deployment("st", json!([{"name": "c", "image": "nginx"}])),
    )
    .await
    .unwrap();
    let pp = PatchParams {
        field_manager: Some("controller".into()),
        ..Default::default()
    };
    let s = api
        .patch_status(
            "st",
            &pp,
            &Patch::Merge(json!({"status": {"collisionCount": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(s.status.as_ref().unwrap().collision_count, Some(1));
    assert_eq!(s.spec.as_ref().unwrap().replicas, Some(2));
    let mf = managed(&s);
    let st = mf
        .iter()
        .find(|e| e["manager"] == "controller")
        .expect("status manager");
    assert_eq!(st["subresource"], "status");
    assert_eq!(
        st["fieldsV1"],
        json!({"f:status": {"f:collisionCount": {}}})
    );
    // Status changes through the main resource are ignored; spec changes apply.
    let main = api
        .patch(
            "st",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}, "status": {"collisionCount": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(main.spec.as_ref().unwrap().replicas, Some(3));
    assert_eq!(main.status.as_ref().unwrap().collision_count, Some(1));
    // Spec writes through /status are ignored.
    let st2 = api
        .patch_status("st", &pp, &Patch::Merge(json!({"spec": {"replicas": 9}})))
        .await
        .unwrap();
    assert_eq!(st2.spec.unwrap().replicas, Some(3));
});

conformance!(crd_status_subresource_and_generation, |env| {
    let (_, ar) = env.widget_crd(true).await;
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns, &ar);
    let w: DynamicObject =
        serde_json::from_value(json!({"apiVersion": ar.api_version, "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"color": "red"}, "status": {"ready": true}}))
        .unwrap();
    let created = api.create(&PostParams::default(), &w).await.unwrap();
    assert!(
        created.data.get("status").is_none(),
        "status is ignored on create: {:?}",
        created.data
    );
    assert_eq!(created.metadata.generation, Some(1));
    let s = api
        .patch_status("w", &PatchParams::apply("ctrl").force(), &Patch::Apply(json!({"apiVersion": ar.api_version, "kind": "Widget", "metadata": {"name": "w"}, "status": {"ready": true}})))
        .await
        .unwrap();
    assert_eq!(s.data["status"]["ready"], true);
    assert_eq!(
        s.metadata.generation,
        Some(1),
        "status writes keep generation"
    );
    let m = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "blue"}, "status": {"ready": false}})),
        )
        .await
        .unwrap();
    assert_eq!(m.data["status"]["ready"], true);
    assert_eq!(m.data["spec"]["color"], "blue");
    assert_eq!(m.metadata.generation, Some(2));
});

conformance!(
    crd_without_status_subresource_treats_status_as_data,
    |env| {
        let (_, ar) = env.widget_crd(false).await;
        let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns, &ar);
        let w: DynamicObject =
            serde_json::from_value(json!({"apiVersion": ar.api_version, "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"color": "red"}, "status": {"ready": true}}))
            .unwrap();
        let created = api.create(&PostParams::default(), &w).await.unwrap();
        assert_eq!(created.data["status"]["ready"], true);
        let (code, _, _) = env
            .raw(
                "GET",
                &format!(
                    "/apis/{}/namespaces/{}/widgets/w/status",
                    ar.api_version, env.ns
                ),
                None,
                &[],
                vec![],
            )
            .await;
        assert_eq!(code, 404);
    }
);

// ------------------------------------------------------------------------------------
// CRDs
// ------------------------------------------------------------------------------------

conformance!(crd_registers_resource_with_names_and_conditions, |env| {
    let (name, ar) = env.widget_crd(true).await;
    let crd = Api::<CustomResourceDefinition>::all(env.client.clone())
        .get(&name)
        .await
        .unwrap();
    let status = crd.status.unwrap();
    let conds = status.conditions.unwrap();
    for t in ["Established", "NamesAccepted"] {
        assert!(
            conds.iter().any(|c| c.type_ == t && c.status == "True"),
            "{t}: {conds:?}"
        );
    }
    assert_eq!(status.accepted_names.unwrap().kind, "Widget");
    assert_eq!(status.stored_versions.unwrap(), ["v1"]);
    let list = env
        .client
        .list_api_group_resources(&ar.api_version)
        .await
        .unwrap();
    let r = list
        .resources
        .iter()
        .find(|r| r.name == "widgets")
        .expect("widgets served");
    assert_eq!(r.kind, "Widget");
    assert!(r.namespaced);
    assert_eq!(r.singular_name, "widget");
    assert_eq!(r.short_names.as_deref(), Some(&["wd".to_string()][..]));
    assert!(list.resources.iter().any(|r| r.name == "widgets/status"));
    // Objects: schema defaults and pruning of unknown fields.
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns, &ar);
    let w: DynamicObject =
        serde_json::from_value(json!({"apiVersion": ar.api_version, "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"color": "red", "bogus": 1}}))
        .unwrap();
    let created = api.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(created.data["spec"]["size"], 3);
    assert!(created.data["spec"].get("bogus").is_none());
    let listed = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].types.as_ref().unwrap().kind, "Widget");
});

conformance!(crd_set_lists_are_tracked_per_value, |env| {
    let (_, ar) = env.widget_crd(false).await;
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns, &ar);
    let cfg = |tags: Value| json!({"apiVersion": ar.api_version, "kind": "Widget", "metadata": {"name": "w"}, "spec": {"tags": tags}});
    let obj = apply(&api, "w", "tend", cfg(json!(["a", "b"])))
        .await
        .unwrap();
    let mf = managed(&obj);
    assert_eq!(
        entry(&mf, "tend", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {"f:tags": {"v:\"a\"": {}, "v:\"b\"": {}}}})
    );
    let obj = apply(&api, "w", "other", cfg(json!(["c"]))).await.unwrap();
    let mut tags: Vec<String> = serde_json::from_value(obj.data["spec"]["tags"].clone()).unwrap();
    tags.sort();
    assert_eq!(tags, ["a", "b", "c"]);
});

conformance!(crd_delete_unregisters_and_deletes_objects, |env| {
    let (name, ar) = env.widget_crd(false).await;
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &env.ns, &ar);
    let w: DynamicObject = serde_json::from_value(
        json!({"apiVersion": ar.api_version, "kind": "Widget", "metadata": {"name": "w"}}),
    )
    .unwrap();
    api.create(&PostParams::default(), &w).await.unwrap();
    Api::<CustomResourceDefinition>::all(env.client.clone())
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    eventually("CRD resources to disappear", || async {
        match api.list(&ListParams::default()).await {
            Err(kube::Error::Api(s)) if s.code == 404 => Some(()),
            _ => None,
        }
    })
    .await;
    let groups = env.client.list_api_groups().await.unwrap();
    eventually("CRD group to leave discovery", || async {
        let groups = env.client.list_api_groups().await.ok()?;
        (!groups.groups.iter().any(|g| g.name == ar.group)).then_some(())
    })
    .await;
    drop(groups);
});

// ------------------------------------------------------------------------------------
// Bookkeeping and defaults
// ------------------------------------------------------------------------------------

conformance!(generation_tracks_spec_changes_only, |env| {
    let api: Api<Deployment> = env.api();
    let d = apply(
        &api,
        "g",
        "tend",
        deployment("g", json!([{"name": "c", "image": "nginx:1"}])),
    )
    .await
    .unwrap();
    assert_eq!(d.metadata.generation, Some(1));
    let d = api
        .patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"extra": "x"}}})),
        )
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(1));
    let d = api
        .patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(d.metadata.generation, Some(2));
});

conformance!(resource_version_changes_on_every_write, |env| {
    let api: Api<ConfigMap> = env.api();
    let a = api
        .create(&PostParams::default(), &cm("v", json!({"k": "1"})))
        .await
        .unwrap();
    let b = api
        .patch(
            "v",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "2"}})),
        )
        .await
        .unwrap();
    let c = api
        .patch(
            "v",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "3"}})),
        )
        .await
        .unwrap();
    let rvs = [
        a.resource_version(),
        b.resource_version(),
        c.resource_version(),
    ];
    assert!(
        rvs[0] != rvs[1] && rvs[1] != rvs[2] && rvs[0] != rvs[2],
        "{rvs:?}"
    );
    if let Some(cluster) = &env.cluster {
        // One cluster-wide counter, as etcd's revision.
        let n: u64 = c.resource_version().unwrap().parse().unwrap();
        assert_eq!(n, cluster.resource_version());
    }
});

conformance!(service_defaults_and_cluster_ip, |env| {
    let api: Api<Service> = env.api();
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}});
    let s = apply(&api, "svc", "tend", svc.clone()).await.unwrap();
    let spec = s.spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.session_affinity.as_deref(), Some("None"));
    let ip = spec.cluster_ip.clone().unwrap();
    assert!(!ip.is_empty() && ip != "None");
    assert_eq!(spec.cluster_ips.as_ref().unwrap()[0], ip);
    assert!(!spec.ip_families.unwrap().is_empty());
    assert_eq!(spec.ip_family_policy.as_deref(), Some("SingleStack"));
    assert_eq!(spec.internal_traffic_policy.as_deref(), Some("Cluster"));
    let port = &spec.ports.unwrap()[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    assert_eq!(
        port.target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(80))
    );
    // Re-applying keeps the allocated IP and changes nothing.
    let again = apply(&api, "svc", "tend", svc).await.unwrap();
    assert_eq!(again.spec.unwrap().cluster_ip.unwrap(), ip);
    assert_eq!(again.metadata.resource_version, s.metadata.resource_version);
});

conformance!(deployment_and_pod_template_defaults, |env| {
    let api: Api<Deployment> = env.api();
    let cfg = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "defs"},
    "spec": {"selector": {"matchLabels": {"app": "defs"}},
             "template": {"metadata": {"labels": {"app": "defs"}},
                          "spec": {"containers": [
                              {"name": "latest", "image": "nginx:latest"},
                              {"name": "untagged", "image": "nginx"},
                              {"name": "tagged", "image": "registry.local:5000/nginx:1.27", "ports": [{"containerPort": 80}]}
                          ]}}}});
    let d = apply(&api, "defs", "tend", cfg).await.unwrap();
    let spec = d.spec.unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.revision_history_limit, Some(10));
    assert_eq!(spec.progress_deadline_seconds, Some(600));
    let strategy = spec.strategy.unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    let ru = serde_json::to_value(strategy.rolling_update.unwrap()).unwrap();
    assert_eq!(ru, json!({"maxSurge": "25%", "maxUnavailable": "25%"}));
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Always"));
    assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(pod.scheduler_name.as_deref(), Some("default-scheduler"));
    assert_eq!(pod.termination_grace_period_seconds, Some(30));
    assert!(pod.security_context.is_some());
    let policies: Vec<Option<String>> = pod
        .containers
        .iter()
        .map(|c| c.image_pull_policy.clone())
        .collect();
    assert_eq!(
        policies,
        [
            Some("Always".into()),
            Some("Always".into()),
            Some("IfNotPresent".into())
        ]
    );
    for c in &pod.containers {
        assert_eq!(
            c.termination_message_path.as_deref(),
            Some("/dev/termination-log")
        );
        assert_eq!(c.termination_message_policy.as_deref(), Some("File"));
    }
    assert_eq!(
        pod.containers[2].ports.as_ref().unwrap()[0]
            .protocol
            .as_deref(),
        Some("TCP")
    );
});

conformance!(namespace_secret_and_workload_defaults, |env| {
    let ns = Api::<Namespace>::all(env.client.clone())
        .get(&env.ns)
        .await
        .unwrap();
    assert_eq!(ns.labels()["kubernetes.io/metadata.name"], env.ns);
    assert_eq!(ns.spec.unwrap().finalizers.unwrap(), ["kubernetes"]);
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
    let secrets: Api<Secret> = env.api();
    let s: Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}}))
            .unwrap();
    let s = secrets.create(&PostParams::default(), &s).await.unwrap();
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    assert_eq!(s.data.unwrap()["k"].0, b"v");
    let sts: Api<k8s_openapi::api::apps::v1::StatefulSet> = env.api();
    let cfg = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "sts"},
        "spec": {"serviceName": "sts", "selector": {"matchLabels": {"app": "sts"}},
                 "template": {"metadata": {"labels": {"app": "sts"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}});
    let st = apply(&sts, "sts", "tend", cfg).await.unwrap().spec.unwrap();
    assert_eq!(st.replicas, Some(1));
    assert_eq!(st.pod_management_policy.as_deref(), Some("OrderedReady"));
    assert_eq!(
        st.update_strategy.unwrap().type_.as_deref(),
        Some("RollingUpdate")
    );
    let ds: Api<k8s_openapi::api::apps::v1::DaemonSet> = env.api();
    let cfg = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"},
        "spec": {"selector": {"matchLabels": {"app": "ds"}},
                 "template": {"metadata": {"labels": {"app": "ds"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}});
    let d = apply(&ds, "ds", "tend", cfg).await.unwrap().spec.unwrap();
    assert_eq!(d.revision_history_limit, Some(10));
    assert_eq!(
        d.update_strategy.unwrap().type_.as_deref(),
        Some("RollingUpdate")
    );
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = env.api();
    let cfg = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1"}]}}}});
    let j = apply(&jobs, "job", "tend", cfg).await.unwrap();
    let js = j.spec.unwrap();
    assert_eq!(js.backoff_limit, Some(6));
    assert_eq!(js.completions, Some(1));
    assert_eq!(js.parallelism, Some(1));
    let sel = js.selector.unwrap().match_labels.unwrap();
    // The generated selector keys on the job's uid (the label name varies by version).
    let uid = j.metadata.uid.unwrap();
    assert!(sel.values().any(|v| *v == uid), "{sel:?}");
});

// ------------------------------------------------------------------------------------
// Fault injection, request log, startup (test server only)
// ------------------------------------------------------------------------------------

conformance!(request_log_records_verbs_managers_and_dry_run, |env| {
    let Some(c) = env.local("request log") else {
        return;
    };
    let api: Api<ConfigMap> = env.api();
    c.clear_requests();
    api.create(&PostParams::default(), &cm("log", json!({})))
        .await
        .unwrap();
    api.get("log").await.unwrap();
    api.list(&ListParams::default()).await.unwrap();
    let got = api.get("log").await.unwrap();
    api.replace("log", &PostParams::default(), &got)
        .await
        .unwrap();
    api.patch(
        "log",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "b"}})),
    )
    .await
    .unwrap();
    apply_with(
        &api,
        "log",
        PatchParams::apply("tend").dry_run(),
        apply_cm("log", json!({"a": "b"})),
    )
    .await
    .unwrap();
    api.delete("log", &DeleteParams::default()).await.unwrap();
    let verbs: Vec<Verb> = c.requests().iter().map(|r| r.verb).collect();
    assert_eq!(
        verbs,
        [
            Verb::Create,
            Verb::Get,
            Verb::List,
            Verb::Get,
            Verb::Update,
            Verb::Patch,
            Verb::Apply,
            Verb::Delete
        ]
    );
    let apply = c
        .requests()
        .into_iter()
        .find(|r| r.verb == Verb::Apply)
        .unwrap();
    assert_eq!(apply.method, "PATCH");
    assert!(apply.dry_run);
    assert_eq!(apply.field_manager.as_deref(), Some("tend"));
    assert_eq!(apply.status, Some(200));
    assert_eq!(apply.resource, "configmaps");
    assert_eq!(apply.namespace.as_deref(), Some(env.ns.as_str()));
    assert_eq!(apply.name.as_deref(), Some("log"));
    assert!(apply.path.ends_with("/configmaps/log"));
    assert!(apply.query.contains("dryRun=All"));
    assert_eq!(c.count(Verb::Get, "configmaps"), 2);
    assert_eq!(c.counts()[&(Verb::Create, "configmaps".to_string())], 1);
    c.clear_requests();
    assert!(c.requests().is_empty());
    let _ = api.get("log").await;
    assert_eq!(c.requests()[0].status, Some(404));
});

conformance!(fault_status_fails_next_matching_requests, |env| {
    let Some(c) = env.local("fault injection") else {
        return;
    };
    let api: Api<ConfigMap> = env.api();
    api.create(&PostParams::default(), &cm("f", json!({})))
        .await
        .unwrap();
    c.inject(
        Fault::status(500)
            .method("PATCH")
            .path_contains("/configmaps/")
            .times(2),
    );
    for _ in 0..2 {
        let s = api_err(
            api.patch(
                "f",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"a": "1"}})),
            )
            .await,
        );
        assert_eq!(s.code, 500);
        assert_eq!(s.reason, "InternalError");
    }
    // GETs do not match; the third PATCH succeeds.
    api.get("f").await.unwrap();
    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "1"}})),
    )
    .await
    .unwrap();
    let faulted = c.requests().iter().filter(|r| r.faulted).count();
    assert_eq!(faulted, 2);
    // Glob patterns and verbs.
    c.inject(
        Fault::status(409)
            .verb(Verb::Apply)
            .path_glob("/api/v1/namespaces/*/configmaps/?"),
    );
    let s = api_err(apply(&api, "f", "tend", apply_cm("f", json!({}))).await);
    assert_eq!(s.code, 409);
    assert_eq!(s.reason, "Conflict");
    apply(&api, "f", "tend", apply_cm("f", json!({})))
        .await
        .unwrap();
});

conformance!(fault_429_carries_retry_after, |env| {
    let Some(c) = env.local("fault injection") else {
        return;
    };
    c.inject(
        Fault::status(429)
            .retry_after(1)
            .path_contains("/configmaps"),
    );
    let api: Api<ConfigMap> = env.api();
    // kube retries 429 after the Retry-After delay; the log shows both attempts.
    let t = Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
    let lists: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.verb == Verb::List)
        .collect();
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[0].status, Some(429));
    assert!(lists[0].faulted);
    assert_eq!(lists[1].status, Some(200));
    // The raw answer carries the header and a TooManyRequests Status.
    c.inject(
        Fault::status(429)
            .retry_after(7)
            .path_contains("/configmaps"),
    );
    let addr = c.url().trim_start_matches("http://").to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    use std::io::{Read, Write};
    write!(
        s,
        "GET /api/v1/namespaces/{}/configmaps HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        env.ns
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 429"), "{out}");
    assert!(out.to_ascii_lowercase().contains("retry-after: 7"), "{out}");
    assert!(out.contains(r#""reason":"TooManyRequests""#), "{out}");
});

conformance!(fault_drop_closes_connection_without_response, |env| {
    let Some(c) = env.local("fault injection") else {
        return;
    };
    let api: Api<ConfigMap> = env.api();
    c.inject(
        Fault::drop_connection()
            .method("GET")
            .path_contains("/configmaps/dropme"),
    );
    let err = api.get("dropme").await.expect_err("dropped connection");
    assert!(!matches!(err, kube::Error::Api(_)), "{err:?}");
    let rec = c
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("dropme"))
        .unwrap();
    assert_eq!(rec.status, None);
    assert!(rec.faulted);
    // The next request is served normally (404: it does not exist).
    assert_eq!(api_err(api.get("dropme").await).code, 404);
});

conformance!(fault_delay_slows_responses, |env| {
    let Some(c) = env.local("fault injection") else {
        return;
    };
    let api: Api<ConfigMap> = env.api();
    c.inject(
        Fault::delay(Duration::from_millis(300))
            .verb(Verb::List)
            .always(),
    );
    let t = Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(300));
    c.clear_faults();
    let t = Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    assert!(t.elapsed() < Duration::from_millis(300));
});

conformance!(servers_start_fast_and_run_in_parallel, |env| {
    if env.local("startup timing").is_none() {
        return;
    }
    let handles: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(|| {
                let t = Instant::now();
                let c = TestCluster::start();
                (t.elapsed(), c)
            })
        })
        .collect();
    let started: Vec<(Duration, TestCluster)> =
        handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut ports: Vec<u16> = started.iter().map(|(_, c)| c.port()).collect();
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), 8);
    let slowest = started.iter().map(|(d, _)| *d).max().unwrap();
    eprintln!("slowest of 8 parallel starts: {slowest:?}");
    assert!(
        slowest < Duration::from_millis(250),
        "start took {slowest:?}"
    );
    // Sequential starts: the typical (median) cost must be under 50 ms; the bound is on
    // the median so that one scheduling hiccup on a busy CI machine does not fail the test.
    let mut times = Vec::new();
    let mut one = None;
    for _ in 0..5 {
        let t = Instant::now();
        let c = TestCluster::start();
        times.push(t.elapsed());
        one = Some(c);
    }
    times.sort();
    eprintln!("sequential starts: {times:?}");
    assert!(
        times[2] < Duration::from_millis(50),
        "median start {:?}",
        times[2]
    );
    let one = one.unwrap();
    for (_, c) in &started {
        let v = c.client().await.apiserver_version().await.unwrap();
        assert_eq!(v.major, "1");
    }
    assert!(std::fs::read_to_string(one.kubeconfig_path())
        .unwrap()
        .contains(&one.url()));
});

conformance!(seeded_objects_are_visible_over_http, |env| {
    let Some(c) = env.local("direct seeding") else {
        return;
    };
    c.seed(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seeded", "namespace": env.ns}, "data": {"k": "v"}}))
        .unwrap();
    let api: Api<ConfigMap> = env.api();
    assert_eq!(api.get("seeded").await.unwrap().data.unwrap()["k"], "v");
    api.patch(
        "seeded",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "w"}})),
    )
    .await
    .unwrap();
    assert_eq!(
        c.object("", "configmaps", &env.ns, "seeded").unwrap()["data"]["k"],
        "w"
    );
    assert!(c
        .objects("", "namespaces")
        .iter()
        .any(|n| n["metadata"]["name"] == env.ns));
});

// ------------------------------------------------------------------------------------
// Watch
// ------------------------------------------------------------------------------------

type EventStream =
    futures::stream::BoxStream<'static, kube::Result<kube::api::WatchEvent<ConfigMap>>>;

/// The next watch event as "TYPE name", skipping BOOKMARKs: kube's clients ask for them
/// (allowWatchBookmarks=true) and kube-apiserver sends them whenever it likes.
async fn next_event(s: &mut EventStream) -> String {
    use futures::TryStreamExt;
    use kube::api::WatchEvent;
    loop {
        let e = tokio::time::timeout(Duration::from_secs(20), s.try_next())
            .await
            .expect("watch event in time")
            .expect("watch ok")
            .expect("stream open");
        return match e {
            WatchEvent::Added(o) => format!("ADDED {}", o.name_any()),
            WatchEvent::Modified(o) => format!("MODIFIED {}", o.name_any()),
            WatchEvent::Deleted(o) => format!("DELETED {}", o.name_any()),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => format!("ERROR {}", e.code),
        };
    }
}

conformance!(watch_streams_changes_and_resumes, |env| {
    use futures::StreamExt;
    use kube::api::WatchParams;
    let api: Api<ConfigMap> = env.api();
    let labelled = |name: &str, v: &str| -> ConfigMap {
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"watch": "yes"}}, "data": {"v": v}}),
        )
        .unwrap()
    };
    let a = api
        .create(&PostParams::default(), &labelled("a", "1"))
        .await
        .unwrap();
    let wp = WatchParams::default().labels("watch=yes").timeout(30);
    let mut stream = api.watch(&wp, "0").await.unwrap().boxed();
    assert_eq!(next_event(&mut stream).await, "ADDED a");
    api.create(&PostParams::default(), &labelled("b", "1"))
        .await
        .unwrap();
    assert_eq!(next_event(&mut stream).await, "ADDED b");
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    assert_eq!(next_event(&mut stream).await, "MODIFIED b");
    api.delete("b", &DeleteParams::default()).await.unwrap();
    assert_eq!(next_event(&mut stream).await, "DELETED b");
    drop(stream);
    // Resuming from a resourceVersion replays only later changes.
    let mut resumed = api
        .watch(&wp, &a.resource_version().unwrap())
        .await
        .unwrap()
        .boxed();
    assert_eq!(next_event(&mut resumed).await, "ADDED b");
    assert_eq!(next_event(&mut resumed).await, "MODIFIED b");
    assert_eq!(next_event(&mut resumed).await, "DELETED b");
});

// ------------------------------------------------------------------------------------
// Malformed input: Status errors, never a crash
// ------------------------------------------------------------------------------------

conformance!(malformed_requests_get_status_errors, |env| {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let json_ct = Some("application/json");
    for (method, path, ct, body, want) in [
        ("POST", base.clone(), json_ct, b"{not json".to_vec(), 400),
        ("POST", base.clone(), json_ct, b"[1,2]".to_vec(), 400),
        ("GET", format!("{base}?limit=abc"), None, vec![], 400),
        // Well-formed in the URL, but not a continue token.
        (
            "GET",
            format!("{base}?continue=garbage!"),
            None,
            vec![],
            400,
        ),
        (
            "GET",
            format!("{base}?labelSelector=a%20in%20(b"),
            None,
            vec![],
            400,
        ),
        (
            "PATCH",
            format!("{base}/x?fieldManager=t"),
            Some("application/apply-patch+yaml"),
            b"a: [unclosed".to_vec(),
            400,
        ),
        (
            "POST",
            format!("{base}?dryRun=Bogus"),
            json_ct,
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#.to_vec(),
            422,
        ),
    ] {
        let (code, s, _) = env.raw(method, &path, ct, &[], body).await;
        assert_eq!(code, want, "{method} {path}: {s}");
        assert_eq!(s["kind"], "Status", "{method} {path}: {s}");
        assert_eq!(s["status"], "Failure");
        assert_eq!(s["code"], want);
    }
    let (_, s, _) = env
        .raw(
            "GET",
            &format!("{base}?continue=garbage!"),
            None,
            &[],
            vec![],
        )
        .await;
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid continue token: continue key is not valid"),
        "{s}"
    );
    let api: Api<ConfigMap> = env.api();
    api.create(&PostParams::default(), &cm("x", json!({})))
        .await
        .unwrap();
    // A malformed query string is not an error: Go's url.ParseQuery drops the pair, so
    // this is a plain LIST.
    let (code, list, _) = env
        .raw(
            "GET",
            &format!("{base}?continue=%%%garbage"),
            None,
            &[],
            vec![],
        )
        .await;
    assert_eq!(code, 200, "{list}");
    assert!(list["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["metadata"]["name"] == "x"));
    // A token for a resourceVersion compacted away is 410 Expired, with a fresh token to
    // carry on from (etcd may not have compacted revision 1 yet on a young cluster).
    let start =
        base64_url(&json!({"v": "meta.k8s.io/v1", "rv": 1, "start": format!("{}/a\u{0}", env.ns)}));
    let (code, s, _) = env
        .raw(
            "GET",
            &format!("{base}?limit=1&continue={start}"),
            None,
            &[],
            vec![],
        )
        .await;
    if env.cluster.is_some() || code != 200 {
        assert_eq!(code, 410, "{s}");
        assert_eq!(s["reason"], "Expired");
        assert!(
            s["metadata"]["continue"]
                .as_str()
                .is_some_and(|c| !c.is_empty()),
            "{s}"
        );
    }
    for (ct, body) in [
        ("application/json-patch+json", br#"{"op":"add"}"#.to_vec()),
        ("application/merge-patch+json", b"{broken".to_vec()),
        ("text/plain", b"hello".to_vec()),
    ] {
        let (code, s, _) = env
            .raw("PATCH", &format!("{base}/x"), Some(ct), &[], body)
            .await;
        assert!((400..500).contains(&code), "{ct}: {code} {s}");
        assert_eq!(s["kind"], "Status");
    }
    if let Some(c) = env.local("raw HTTP garbage") {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(c.url().trim_start_matches("http://")).unwrap();
        s.write_all(b"\x00\x01 garbage \r\n\r\n").unwrap();
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
        // The server is still up.
        assert!(api.get("x").await.is_ok());
    }
});

// ------------------------------------------------------------------------------------
// What tend's inventory, replace and wait logic rely on
// ------------------------------------------------------------------------------------

/// `key=value` etc. for a URL query.
fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn item_ids(list: &Value) -> Vec<String> {
    let mut ids: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            format!(
                "{}/{}",
                i["metadata"]["namespace"].as_str().unwrap(),
                i["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    ids.sort();
    ids
}

conformance!(label_selected_lists_across_namespaces, |env| {
    let other = env.extra_namespace("conf-sel").await;
    let run = format!("sel-{}", env.suffix);
    for ns in [env.ns.clone(), other.clone()] {
        let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &ns);
        for (name, labels) in [
            ("member", json!({"run": run, "tier": "a"})),
            ("other-tier", json!({"run": run, "tier": "b"})),
            ("stranger", json!({"run": format!("x{run}")})),
        ] {
            let obj: ConfigMap =
                serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
                    .unwrap();
            cms.create(&PostParams::default(), &obj).await.unwrap();
        }
        let deploys: Api<Deployment> = Api::namespaced(env.client.clone(), &ns);
        let mut d = deployment("web", json!([{"name": "c", "image": "nginx"}]));
        d["metadata"]["labels"]["run"] = run.clone().into();
        apply(&deploys, "web", "tend", d).await.unwrap();
    }
    let mut want = vec![
        format!("{}/member", env.ns),
        format!("{other}/member"),
        format!("{}/other-tier", env.ns),
        format!("{other}/other-tier"),
    ];
    want.sort();
    let sel = query_escape(&format!("run={run}"));
    let (code, list, _) = env
        .raw(
            "GET",
            &format!("/api/v1/configmaps?labelSelector={sel}"),
            None,
            &[],
            vec![],
        )
        .await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    assert!(list["metadata"]["resourceVersion"]
        .as_str()
        .is_some_and(|rv| !rv.is_empty()));
    assert_eq!(item_ids(&list), want);
    // Set-based requirements, across namespaces too.
    let sel = query_escape(&format!("run in ({run}),tier notin (b)"));
    let (_, list, _) = env
        .raw(
            "GET",
            &format!("/api/v1/configmaps?labelSelector={sel}"),
            None,
            &[],
            vec![],
        )
        .await;
    let mut members = vec![format!("{}/member", env.ns), format!("{other}/member")];
    members.sort();
    assert_eq!(item_ids(&list), members);
    // Pages of a selected list across namespaces.
    let sel = query_escape(&format!("run={run}"));
    let mut seen = Vec::new();
    let mut next = String::new();
    for page in 0.. {
        assert!(page < 10, "too many pages");
        let cont = if next.is_empty() {
            String::new()
        } else {
            format!("&continue={}", query_escape(&next))
        };
        let (code, list, _) = env
            .raw(
                "GET",
                &format!("/api/v1/configmaps?labelSelector={sel}&limit=3{cont}"),
                None,
                &[],
                vec![],
            )
            .await;
        assert_eq!(code, 200, "{list}");
        assert!(list["items"].as_array().unwrap().len() <= 3);
        seen.extend(item_ids(&list));
        next = list["metadata"]["continue"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if next.is_empty() {
            break;
        }
    }
    seen.sort();
    assert_eq!(seen, want);
    let (code, list, _) = env
        .raw(
            "GET",
            &format!("/apis/apps/v1/deployments?labelSelector={sel}"),
            None,
            &[],
            vec![],
        )
        .await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "DeploymentList");
    let mut webs = vec![format!("{}/web", env.ns), format!("{other}/web")];
    webs.sort();
    assert_eq!(item_ids(&list), webs);
});

const PARTIAL_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const PARTIAL: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

conformance!(partial_object_metadata_lists_and_gets, |env| {
    let api = labelled(&env).await;
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let accept = format!("{PARTIAL_LIST},application/json");
    let (code, list, headers) = env
        .raw(
            "GET",
            &format!("{base}?labelSelector=app"),
            None,
            &[("accept", accept.as_str())],
            vec![],
        )
        .await;
    assert_eq!(code, 200, "{list}");
    // kube-apiserver 1.36 names the serializer's media type, without the `as=` asked for.
    assert_eq!(
        headers["content-type"].to_str().unwrap(),
        "application/json"
    );
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert!(list["metadata"]["resourceVersion"]
        .as_str()
        .is_some_and(|rv| !rv.is_empty()));
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for item in items {
        assert_eq!(item["kind"], "PartialObjectMetadata");
        assert_eq!(item["apiVersion"], "meta.k8s.io/v1");
        assert!(item["metadata"]["labels"]["app"].is_string(), "{item}");
        assert!(item["metadata"]["managedFields"].is_array(), "{item}");
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["kind", "apiVersion", "metadata"],
            "metadata only: {item}"
        );
    }
    let (code, one, headers) = env
        .raw(
            "GET",
            &format!("{base}/web"),
            None,
            &[("accept", PARTIAL)],
            vec![],
        )
        .await;
    assert_eq!(code, 200, "{one}");
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(
        headers["content-type"].to_str().unwrap(),
        "application/json"
    );
    assert_eq!(one["metadata"]["name"], "web");
    assert!(one.get("data").is_none(), "{one}");
    // kube's metadata API asks the same way.
    let metas = api
        .list_metadata(&ListParams::default().labels("app"))
        .await
        .unwrap();
    let mut names: Vec<String> = metas.items.iter().map(|m| m.name_any()).collect();
    names.sort();
    assert_eq!(names, ["api", "db", "web"]);
    assert_eq!(api.get_metadata("db").await.unwrap().labels()["app"], "db");
    // An empty metadata list says `"items": null` (built-in kinds and custom resources
    // alike, on 1.36), while an empty full list says `[]`; kube's client reads both.
    let (code, empty, _) = env
        .raw(
            "GET",
            &format!("{base}?labelSelector=nobody%3Dhere"),
            None,
            &[("accept", PARTIAL_LIST)],
            vec![],
        )
        .await;
    assert_eq!(code, 200, "{empty}");
    assert_eq!(empty["kind"], "PartialObjectMetadataList");
    assert!(empty["items"].is_null(), "{empty}");
    let (code, full, _) = env
        .raw(
            "GET",
            &format!("{base}?labelSelector=nobody%3Dhere"),
            None,
            &[("accept", "application/json")],
            vec![],
        )
        .await;
    assert_eq!(code, 200, "{full}");
    assert_eq!(full["items"], json!([]), "{full}");
    assert!(api
        .list_metadata(&ListParams::default().labels("nobody=here"))
        .await
        .unwrap()
        .items
        .is_empty());
    // Errors stay Status objects.
    let (code, s, _) = env
        .raw(
            "GET",
            &format!("{base}/ghost"),
            None,
            &[("accept", PARTIAL)],
            vec![],
        )
        .await;
    assert_eq!(code, 404);
    assert_eq!(s["kind"], "Status");
});

fn job(name: &str, image: &str, suspend: bool) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"suspend": suspend, "backoffLimit": 0,
                 "template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": image}]}}}})
}

conformance!(job_template_and_deployment_selector_are_immutable, |env| {
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = env.api();
    apply(&jobs, "once", "tend", job("once", "busybox:1.36", true))
        .await
        .unwrap();
    let s = api_err(
        apply_with(
            &jobs,
            "once",
            PatchParams::apply("tend").force(),
            job("once", "busybox:1.37", true),
        )
        .await,
    );
    assert_eq!(s.code, 422, "{}", s.message);
    assert_eq!(s.reason, "Invalid");
    assert!(
        s.message
            .starts_with(r#"Job.batch "once" is invalid: spec.template.spec: Invalid value: "#),
        "{}",
        s.message
    );
    assert!(s.message.ends_with(": field is immutable"), "{}", s.message);
    let d = s.details.unwrap();
    assert_eq!(d.kind, "Job");
    assert_eq!(d.group, "batch");
    assert!(d
        .causes
        .iter()
        .any(|c| c.field == "spec.template.spec" && c.reason == "FieldValueInvalid"));
    // A dry run is refused the same way, and nothing changed.
    let s = api_err(
        apply_with(
            &jobs,
            "once",
            PatchParams::apply("tend").force().dry_run(),
            job("once", "busybox:1.37", true),
        )
        .await,
    );
    assert_eq!(s.code, 422);
    let live = jobs.get("once").await.unwrap();
    assert_eq!(
        live.spec.unwrap().template.spec.unwrap().containers[0]
            .image
            .as_deref(),
        Some("busybox:1.36")
    );

    let deploys: Api<Deployment> = env.api();
    apply(
        &deploys,
        "sel",
        "tend",
        deployment("sel", json!([{"name": "c", "image": "nginx"}])),
    )
    .await
    .unwrap();
    let mut changed = deployment("sel", json!([{"name": "c", "image": "nginx"}]));
    changed["spec"]["selector"]["matchLabels"] = json!({"app": "sel", "tier": "web"});
    changed["spec"]["template"]["metadata"]["labels"] = json!({"app": "sel", "tier": "web"});
    let s = api_err(apply_with(&deploys, "sel", PatchParams::apply("tend").force(), changed).await);
    assert_eq!(s.code, 422, "{}", s.message);
    assert!(
        s.message
            .starts_with(r#"Deployment.apps "sel" is invalid: spec.selector: Invalid value: "#),
        "{}",
        s.message
    );
    assert!(s.message.ends_with(": field is immutable"), "{}", s.message);
    // Other spec changes are fine.
    let mut scaled = deployment("sel", json!([{"name": "c", "image": "nginx"}]));
    scaled["spec"]["replicas"] = json!(3);
    apply(&deploys, "sel", "tend", scaled).await.unwrap();
});

fn condition(ty: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": ty, "status": status, "reason": reason, "message": message,
           "lastProbeTime": "2026-01-01T00:01:00Z", "lastTransitionTime": "2026-01-01T00:01:00Z"})
}

conformance!(job_status_shapes_round_trip, |env| {
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = env.api();
    // Suspended, so a real cluster's Job controller starts no pods for them.
    for name in ["done", "broken", "bad"] {
        apply(&jobs, name, "tend", job(name, "busybox", true))
            .await
            .unwrap();
    }
    let pp = PatchParams {
        field_manager: Some("job-controller".into()),
        ..Default::default()
    };
    let complete = json!({"status": {
    "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:00Z",
    "succeeded": 1, "active": 0,
    "conditions": [
        condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
        condition("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
    ]}});
    let j = jobs
        .patch_status("done", &pp, &Patch::Merge(&complete))
        .await
        .unwrap();
    let st = j.status.unwrap();
    assert_eq!(st.succeeded, Some(1));
    assert!(st.completion_time.is_some() && st.start_time.is_some());
    let conds = st.conditions.unwrap();
    let c = conds
        .iter()
        .find(|c| c.type_ == "Complete")
        .expect("Complete condition");
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("True", Some("CompletionsReached"))
    );
    let failed = json!({"status": {
    "startTime": "2026-01-01T00:00:00Z", "failed": 1, "active": 0,
    "conditions": [
        condition("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        condition("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ]}});
    let j = jobs
        .patch_status("broken", &pp, &Patch::Merge(&failed))
        .await
        .unwrap();
    let st = j.status.unwrap();
    assert_eq!(st.failed, Some(1));
    let conds = st.conditions.unwrap();
    let c = conds
        .iter()
        .find(|c| c.type_ == "Failed")
        .expect("Failed condition");
    assert_eq!(c.reason.as_deref(), Some("BackoffLimitExceeded"));
    assert_eq!(
        c.message.as_deref(),
        Some("Job has reached the specified backoff limit")
    );
    // Since 1.32 (JobManagedBy) a terminal condition needs its companion and its times.
    let minor: u32 = env
        .client
        .apiserver_version()
        .await
        .unwrap()
        .minor
        .trim_end_matches('+')
        .parse()
        .unwrap();
    if minor >= 32 {
        let bare = json!({"status": {"conditions": [condition("Complete", "True", "CompletionsReached", "done")]}});
        let s = api_err(jobs.patch_status("bad", &pp, &Patch::Merge(&bare)).await);
        assert_eq!(s.code, 422);
        assert!(
            s.message.starts_with(r#"Job.batch "bad" is invalid: "#),
            "{}",
            s.message
        );
        assert!(
            s.message.contains(
                "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"
            ),
            "{}",
            s.message
        );
        // A terminal condition cannot be taken back.
        let undo = json!({"status": {"conditions": [condition("SuccessCriteriaMet", "True", "CompletionsReached", "x")]}});
        let s = api_err(jobs.patch_status("done", &pp, &Patch::Merge(&undo)).await);
        assert_eq!(s.code, 422);
        assert!(
            s.message
                .contains("cannot disable the terminal Complete=True condition"),
            "{}",
            s.message
        );
    }
});

conformance!(deployment_status_shapes_round_trip, |env| {
    let api: Api<Deployment> = env.api();
    apply(
        &api,
        "stuck",
        "tend",
        deployment("stuck", json!([{"name": "c", "image": "nginx"}])),
    )
    .await
    .unwrap();
    let pp = PatchParams {
        field_manager: Some("deployment-controller".into()),
        ..Default::default()
    };
    let status = json!({"status": {
    "observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1,
    "availableReplicas": 1, "unavailableReplicas": 1,
    "conditions": [
        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
         "message": "Deployment does not have minimum availability.",
         "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
         "message": "ReplicaSet \"stuck-5d4f8c7b9\" has timed out progressing.",
         "lastUpdateTime": "2026-01-01T00:10:00Z", "lastTransitionTime": "2026-01-01T00:10:00Z"}
    ]}});
    let d = api
        .patch_status("stuck", &pp, &Patch::Merge(&status))
        .await
        .unwrap();
    let st = d.status.unwrap();
    assert_eq!(st.observed_generation, Some(1));
    assert_eq!(
        (
            st.replicas,
            st.updated_replicas,
            st.ready_replicas,
            st.available_replicas
        ),
        (Some(2), Some(2), Some(1), Some(1))
    );
    assert_eq!(st.unavailable_replicas, Some(1));
    let conds = st.conditions.unwrap();
    let p = conds
        .iter()
        .find(|c| c.type_ == "Progressing")
        .expect("Progressing");
    assert_eq!(
        (p.status.as_str(), p.reason.as_deref()),
        ("False", Some("ProgressDeadlineExceeded"))
    );
    assert!(p.last_update_time.is_some());
    // Counts must be consistent: no more ready replicas than replicas.
    let bad = json!({"status": {"replicas": 1, "readyReplicas": 3, "availableReplicas": 3}});
    let s = api_err(api.patch_status("stuck", &pp, &Patch::Merge(&bad)).await);
    assert_eq!(s.code, 422);
    assert!(
        s.message.contains(
            "status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas"
        ),
        "{}",
        s.message
    );
});

// ------------------------------------------------------------------------------------
// Watch bookmarks and selections
// ------------------------------------------------------------------------------------

/// Every event of a watch until the server ends it, as "TYPE name" (BOOKMARK with its
/// resourceVersion).
async fn drain(s: &mut EventStream) -> Vec<String> {
    use futures::TryStreamExt;
    use kube::api::WatchEvent;
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Some(e) = tokio::time::timeout_at(deadline.into(), s.try_next())
        .await
        .expect("the server ends the watch at its timeout")
        .expect("watch ok")
    {
        out.push(match e {
            WatchEvent::Added(o) => format!("ADDED {}", o.name_any()),
            WatchEvent::Modified(o) => format!("MODIFIED {}", o.name_any()),
            WatchEvent::Deleted(o) => format!("DELETED {}", o.name_any()),
            WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
            WatchEvent::Error(e) => format!("ERROR {}", e.code),
        });
    }
    out
}

conformance!(watch_sends_bookmarks_when_allowed, |env| {
    use futures::StreamExt;
    use kube::api::WatchParams;
    let api: Api<ConfigMap> = env.api();
    let created = api
        .create(&PostParams::default(), &cm("marked", json!({})))
        .await
        .unwrap();
    let start: u64 = created.resource_version().unwrap().parse().unwrap();
    // kube-apiserver sends a bookmark 2 s before a watch's timeout (and every minute).
    let with = WatchParams::default().timeout(5);
    let without = WatchParams::default().timeout(4).disable_bookmarks();
    let (mut a, mut b) = (
        api.watch(&with, "0").await.unwrap().boxed(),
        api.watch(&without, "0").await.unwrap().boxed(),
    );
    let (events, plain) = futures::join!(drain(&mut a), drain(&mut b));
    assert!(events.contains(&"ADDED marked".to_string()), "{events:?}");
    let bookmarks: Vec<u64> = events
        .iter()
        .filter_map(|e| e.strip_prefix("BOOKMARK "))
        .map(|rv| rv.parse().expect("numeric resourceVersion"))
        .collect();
    assert!(!bookmarks.is_empty(), "{events:?}");
    assert!(bookmarks.iter().all(|rv| *rv >= start), "{events:?}");
    assert!(
        plain.iter().all(|e| !e.starts_with("BOOKMARK")),
        "{plain:?}"
    );
    assert!(plain.contains(&"ADDED marked".to_string()), "{plain:?}");
});

conformance!(
    watch_reports_objects_entering_and_leaving_the_selection,
    |env| {
        use futures::StreamExt;
        use kube::api::WatchParams;
        let api: Api<ConfigMap> = env.api();
        api.create(&PostParams::default(), &cm("mover", json!({})))
            .await
            .unwrap();
        let start = api.get("mover").await.unwrap().resource_version().unwrap();
        let wp = WatchParams::default().labels("watched=yes").timeout(20);
        let mut stream = api.watch(&wp, &start).await.unwrap().boxed();
        let label = |v: Value| Patch::Merge(json!({"metadata": {"labels": {"watched": v}}}));
        api.patch("mover", &PatchParams::default(), &label(json!("yes")))
            .await
            .unwrap();
        assert_eq!(next_event(&mut stream).await, "ADDED mover");
        api.patch(
            "mover",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await
        .unwrap();
        assert_eq!(next_event(&mut stream).await, "MODIFIED mover");
        api.patch("mover", &PatchParams::default(), &label(json!("no")))
            .await
            .unwrap();
        assert_eq!(next_event(&mut stream).await, "DELETED mover");
    }
);

// ------------------------------------------------------------------------------------
// Namespaces with a controller-manager
// ------------------------------------------------------------------------------------

conformance!(new_namespaces_get_service_account_and_root_ca, |env| {
    let ns = env.extra_namespace("conf-setup").await;
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(env.client.clone(), &ns);
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &ns);
    eventually("default ServiceAccount", || async {
        sas.get("default").await.ok()
    })
    .await;
    let ca = eventually("kube-root-ca.crt", || async {
        cms.get("kube-root-ca.crt").await.ok()
    })
    .await;
    assert!(ca.data.unwrap()["ca.crt"].contains("BEGIN CERTIFICATE"));
});

conformance!(terminating_namespace_refuses_new_content, |env| {
    let doomed = env.extra_namespace("conf-term").await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), &doomed);
    let held: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["conformance.tend.dev/hold"]}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &held).await.unwrap();
    let nss = Api::<Namespace>::all(env.client.clone());
    nss.delete(&doomed, &DeleteParams::default()).await.unwrap();
    // The finalizer keeps the namespace Terminating until it is removed.
    let ns = eventually("held object marked for deletion", || async {
        let obj = cms.get("held").await.ok()?;
        obj.metadata.deletion_timestamp.as_ref()?;
        nss.get(&doomed).await.ok()
    })
    .await;
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    assert!(ns.metadata.deletion_timestamp.is_some());
    let s = api_err(
        cms.create(&PostParams::default(), &cm("late", json!({})))
            .await,
    );
    assert_eq!(s.code, 403);
    assert_eq!(s.reason, "Forbidden");
    assert_eq!(
        s.message,
        format!(
            r#"configmaps "late" is forbidden: unable to create new content in namespace {doomed} because it is being terminated"#
        )
    );
    let d = s.details.unwrap();
    assert_eq!(d.causes[0].reason, "NamespaceTerminating");
    assert_eq!(d.causes[0].field, "metadata.namespace");
    // Recreating it while it terminates is a conflict.
    let again: Namespace = serde_json::from_value(json!({"metadata": {"name": doomed}})).unwrap();
    let s = api_err(nss.create(&PostParams::default(), &again).await);
    assert_eq!(s.code, 409);
    assert_eq!(
        s.message,
        format!(r#"object is being deleted: namespaces "{doomed}" already exists"#)
    );
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("namespace gone", || async {
        matches!(nss.get(&doomed).await, Err(kube::Error::Api(s)) if s.code == 404).then_some(())
    })
    .await;
});

conformance!(pods_wait_for_their_service_account, |env| {
    if env.local("a delayed ServiceAccount controller").is_none() {
        return;
    }
    let pod = |name: &str| -> k8s_openapi::api::core::v1::Pod {
        serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
        .unwrap()
    };
    let slow = TestCluster::start_with(TestClusterOptions {
        namespace_setup_delay: Duration::from_secs(3),
        ..Default::default()
    });
    let client = slow.client().await;
    let nss = Api::<Namespace>::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "fresh"}})).unwrap();
    nss.create(&PostParams::default(), &ns).await.unwrap();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), "fresh");
    // The admission plugin looks the default ServiceAccount up for 1-2 s, then refuses.
    let t = Instant::now();
    let s = api_err(pods.create(&PostParams::default(), &pod("early")).await);
    assert!(t.elapsed() >= Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(s.code, 403);
    assert_eq!(s.reason, "Forbidden");
    assert_eq!(
        s.message,
        r#"pods "early" is forbidden: error looking up service account fresh/default: serviceaccount "default" not found"#
    );
    let d = s.details.unwrap();
    assert_eq!((d.name.as_str(), d.kind.as_str()), ("early", "pods"));
    // Server-side apply is admitted the same way.
    let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "applied"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let s = api_err(apply(&pods, "applied", "tend", &cfg).await);
    assert_eq!(s.code, 403);
    assert!(slow
        .object("", "serviceaccounts", "fresh", "default")
        .is_none());
    eventually("default ServiceAccount", || async {
        slow.object("", "serviceaccounts", "fresh", "default")
    })
    .await;
    assert!(slow
        .object("", "configmaps", "fresh", "kube-root-ca.crt")
        .is_some());
    let created = pods
        .create(&PostParams::default(), &pod("late"))
        .await
        .unwrap();
    assert_eq!(
        created.spec.unwrap().service_account_name.as_deref(),
        Some("default")
    );
    apply(&pods, "applied", "tend", &cfg).await.unwrap();
    // A named ServiceAccount that does not exist is refused at once.
    let mut named = pod("named");
    named.spec.as_mut().unwrap().service_account_name = Some("robot".into());
    let t = Instant::now();
    let s = api_err(pods.create(&PostParams::default(), &named).await);
    assert!(t.elapsed() < Duration::from_secs(1));
    assert!(
        s.message.ends_with(
            r#"error looking up service account fresh/robot: serviceaccount "robot" not found"#
        ),
        "{}",
        s.message
    );
    // Within the plugin's retries, a short delay is invisible.
    let quick = TestCluster::start_with(TestClusterOptions {
        namespace_setup_delay: Duration::from_millis(400),
        ..Default::default()
    });
    let client = quick.client().await;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client, "fresh")
        .create(&PostParams::default(), &pod("soon"))
        .await
        .expect("admitted once the ServiceAccount appears");
});

conformance!(response_bytes_are_counted, |env| {
    let Some(c) = env.local("the response byte counter") else {
        return;
    };
    let api: Api<ConfigMap> = env.api();
    api.create(&PostParams::default(), &cm("sized", json!({"k": "v"})))
        .await
        .unwrap();
    c.clear_requests();
    c.reset_response_bytes();
    assert_eq!(c.response_bytes(), 0);
    let path = format!("/api/v1/namespaces/{}/configmaps/sized", env.ns);
    let (code, body, _) = env.raw_bytes("GET", &path, None, &[], vec![]).await;
    assert_eq!(code, 200);
    let (code, missing, _) = env
        .raw_bytes("GET", &format!("{path}-missing"), None, &[], vec![])
        .await;
    assert_eq!(code, 404);
    let log = c.requests();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].response_bytes, body.len() as u64);
    assert_eq!(log[1].response_bytes, missing.len() as u64);
    assert_eq!(c.response_bytes(), (body.len() + missing.len()) as u64);
    assert!(log.iter().all(|r| !r.verb.is_mutating()));
    apply_with(
        &api,
        "sized",
        PatchParams::apply("tend").force(),
        apply_cm("sized", json!({"k": "w"})),
    )
    .await
    .unwrap();
    let writes: Vec<_> = c
        .requests()
        .into_iter()
        .filter(|r| r.verb.is_mutating())
        .collect();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].verb, Verb::Apply);
    // A watch's bytes count as they are streamed.
    c.reset_response_bytes();
    {
        use futures::StreamExt;
        let mut stream = api
            .watch(
                &kube::api::WatchParams::default()
                    .fields("metadata.name=sized")
                    .timeout(10),
                "0",
            )
            .await
            .unwrap()
            .boxed();
        assert_eq!(next_event(&mut stream).await, "ADDED sized");
    }
    let watch = c
        .requests()
        .into_iter()
        .find(|r| r.verb == Verb::Watch)
        .unwrap();
    assert!(watch.response_bytes > 0);
    assert_eq!(c.response_bytes(), watch.response_bytes);
});
