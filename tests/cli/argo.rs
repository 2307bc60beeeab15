//! Argo CD repositories run unchanged (README "Coming from Argo CD"): Applications and
//! ApplicationSets expanded into what Argo CD would sync, on the test API server.

use crate::common::*;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use tend_testserver::TestCluster;

/// The fixture's repository URL: its Applications name it, so they mean the checkout.
const FIXTURE_URL: &str = "https://git.example.com/platform/deploy.git";

/// A git work tree holding `from`, whose `origin` is `url`.
fn checkout(from: &Path, url: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(from, dir.path());
    let repo = git2::Repository::init(dir.path()).unwrap();
    repo.remote("origin", url).unwrap();
    commit_all(&repo, "initial");
    dir
}

/// Play a controller: once `ns/name` exists, merge `status` into its status.
fn play(
    cluster: &TestCluster,
    ns: &str,
    (group, version, kind, plural): (&str, &str, &str, &str),
    name: &str,
    status: Value,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while cluster.object(group, plural, ns, name).is_none() {
        if Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    let patch = json!({ "status": status });
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let api: Api<DynamicObject> = Api::namespaced_with(cluster.client().await, ns, &resource);
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("status write");
    });
}

const JOBS: (&str, &str, &str, &str) = ("batch", "v1", "Job", "jobs");
const DEPLOYMENTS: (&str, &str, &str, &str) = ("apps", "v1", "Deployment", "deployments");
const STATEFULSETS: (&str, &str, &str, &str) = ("apps", "v1", "StatefulSet", "statefulsets");

fn job_complete() -> Value {
    json!({
        "startTime": "2026-11-25T10:00:00Z", "completionTime": "2026-11-25T10:00:05Z", "succeeded": 1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
            {"type": "Complete", "status": "True", "reason": "CompletionsReached"},
        ],
    })
}

fn rolled_out(replicas: i64) -> Value {
    json!({
        "observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
        "readyReplicas": replicas, "availableReplicas": replicas, "currentReplicas": replicas,
        "currentRevision": "r1", "updateRevision": "r1",
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
        ],
    })
}

/// `tend apply` of the app-of-apps fixture, its controllers played.
fn apply_fixture(cluster: &TestCluster, dir: &Path) -> (i32, String, String) {
    std::thread::scope(|s| {
        s.spawn(|| play(cluster, "shop", JOBS, "migrate", job_complete()));
        s.spawn(|| play(cluster, "shop", DEPLOYMENTS, "web", rolled_out(1)));
        s.spawn(|| play(cluster, "cache", STATEFULSETS, "team-redis", rolled_out(1)));
        s.spawn(|| play(cluster, "shop", JOBS, "smoke-test", job_complete()));
        tend_on(
            cluster,
            dir,
            &["apply", "--path", "bootstrap", "--timeout", "30s"],
        )
    })
}

#[test]
fn an_app_of_apps_applies_what_argo_cd_would_sync_and_a_second_diff_is_clean() {
    let repo = checkout(&fixture("argo-app-of-apps"), FIXTURE_URL);
    let cluster = TestCluster::start();
    let (code, out, err) = apply_fixture(&cluster, repo.path());
    assert_eq!(code, 0, "{out}\n{err}");

    // Plain manifests, with the destination namespace and the Namespace CreateNamespace makes.
    let ns = get(&cluster, "", "namespaces", "", "shop").expect("Namespace shop");
    assert_eq!(ns["metadata"]["labels"]["team"], "shop");
    assert!(get(&cluster, "", "configmaps", "shop", "shop-config").is_some());
    let service = get(&cluster, "", "services", "shop", "web").expect("Service web");
    assert_eq!(
        service["metadata"]["annotations"]["tend.dev/prune"],
        "disabled"
    );
    // Kustomize with the Application's options.
    let redis = get(&cluster, "apps", "statefulsets", "cache", "team-redis").expect("team-redis");
    assert_eq!(
        redis["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.example.com/redis:7.2"
    );
    assert_eq!(redis["metadata"]["labels"]["owner"], "platform");
    // Helm: values file, missing values file ignored, a parameter, the release name.
    let greeting =
        get(&cluster, "", "configmaps", "greeter", "hello-greeting").expect("chart output");
    assert_eq!(greeting["data"]["message"], "bonjour, production");
    // Jsonnet with an extVar, a TLA and a library.
    let settings =
        get(&cluster, "", "configmaps", "shop", "settings-prod").expect("jsonnet output");
    assert_eq!(settings["data"]["replicas"], "3");
    assert_eq!(
        settings["metadata"]["labels"]["app.kubernetes.io/part-of"],
        "shop"
    );
    // The hooks ran: the smoke test deleted once it succeeded, the migration kept.
    assert!(get(&cluster, "batch", "jobs", "shop", "migrate").is_some());
    assert!(get(&cluster, "batch", "jobs", "shop", "smoke-test").is_none());
    // The Applications themselves are not applied: nothing would read them.
    assert!(!out.contains("+ argoproj.io/v1alpha1"), "{out}");
    assert!(out.contains("+ apps/v1 StatefulSet cache/team-redis  # workloads/kustomize (kustomize build) (Argo CD Application argocd/root → Application argocd/cache)"), "{out}");

    // The autoscaler's replica count is its own (ignoreDifferences): no difference.
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let api: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(cluster.client().await, "shop");
        let params = PatchParams {
            field_manager: Some("autoscaler".into()),
            ..Default::default()
        };
        let patch = json!({"spec": {"replicas": 5}});
        api.patch("web", &params, &Patch::Merge(&patch))
            .await
            .expect("scale");
    });
    let (code, out, err) = tend_on(&cluster, repo.path(), &["diff", "--path", "bootstrap"]);
    assert_eq!(code, 0, "{out}\n{err}");
}
