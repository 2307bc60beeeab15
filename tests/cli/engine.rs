//! `tend diff` and `tend apply` end to end: the binary against the test API server.

use crate::common::*;
// Kept for branches written before the helpers moved to common.rs.
#[allow(unused_imports)]
pub use crate::common::{get, object_writes, site, tend_on, write_site};
use serde_json::{json, Value};
use std::time::Duration;
use tend_testserver::{Fault, TestCluster, Verb};

pub const NS_WEB: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n";

pub fn configmap(name: &str, data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: web\ndata:\n  key: {data}\n")
}

pub const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: nginx}
  template:
    metadata:
      labels: {app: nginx}
    spec:
      containers:
        - name: nginx
          image: nginx:1.27
          ports:
            - containerPort: 8080
          env:
            - name: MODE
              value: prod
          volumeMounts:
            - name: config
              mountPath: /etc/nginx
      volumes:
        - name: config
          configMap:
            name: app
";

/// The run lock's Lease, `tend-system/tend-lock`.
fn lock_lease(cluster: &TestCluster) -> Value {
    get(
        cluster,
        "coordination.k8s.io",
        "leases",
        "tend-system",
        "tend-lock",
    )
    .expect("the lock lease")
}

fn basic_site() -> tempfile::TempDir {
    site(&[
        ("ns.yaml", NS_WEB),
        ("app.yaml", &configmap("app", "v1")),
        ("deploy.yaml", DEPLOYMENT),
    ])
}

#[test]
fn create_then_unchanged_with_no_writes() {
    let cluster = TestCluster::start();
    let dir = basic_site();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.contains("+ v1 ConfigMap web/app"), "{stdout}");
    assert!(
        stdout.contains("3 to create, 0 to update, 0 to prune, 0 unchanged"),
        "{stdout}"
    );

    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    let cm = get(&cluster, "", "configmaps", "web", "app").expect("configmap created");
    assert_eq!(cm["data"]["key"], "v1");
    let id = cm["metadata"]["labels"]["applyset.kubernetes.io/part-of"]
        .as_str()
        .unwrap()
        .to_string();
    let parent = get(&cluster, "", "secrets", "tend-system", "tend").expect("applyset parent");
    assert_eq!(
        parent["metadata"]["labels"]["applyset.kubernetes.io/id"],
        id.as_str()
    );
    let annotations = &parent["metadata"]["annotations"];
    assert_eq!(
        annotations["applyset.kubernetes.io/contains-group-kinds"],
        "ConfigMap,Deployment.apps,Namespace"
    );
    assert_eq!(
        annotations["applyset.kubernetes.io/additional-namespaces"],
        "web"
    );
    assert!(annotations["applyset.kubernetes.io/tooling"]
        .as_str()
        .unwrap()
        .starts_with("tend/"));
    assert!(annotations["tend.dev/last-run"].is_string());
    assert_eq!(
        annotations["tend.dev/last-summary"],
        "3 created, 0 updated, 0 pruned, 0 unchanged, 0 failed"
    );
    let deploy = get(&cluster, "apps", "deployments", "web", "nginx").unwrap();
    assert!(
        deploy["spec"]["template"]["metadata"]["annotations"]["tend.dev/config-hash"].is_string()
    );

    // No-op diff and apply: LISTs only, no dry runs, no object writes.
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("0 to create, 0 to update, 0 to prune, 3 unchanged"),
        "{stdout}"
    );
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(object_writes(&cluster), Vec::<String>::new());
    assert!(
        cluster.requests().iter().all(|r| !r.dry_run),
        "no dry-run requests on a no-op run"
    );
    assert_eq!(
        cluster.count(Verb::Get, "configmaps"),
        0,
        "no per-object GETs"
    );
}

#[test]
fn update_and_removed_field_and_prune() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS_WEB),
        ("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: web\n  labels:\n    keep: \"1\"\n    drop: \"1\"\ndata:\n  x: \"1\"\n"),
        ("b.yaml", &configmap("b", "v1")),
    ]);
    assert_eq!(tend_on(&cluster, dir.path(), &["apply"]).0, 0);
    write_site(dir.path(), &[
        ("ns.yaml", NS_WEB),
        ("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: web\n  labels:\n    keep: \"1\"\ndata:\n  x: \"2\"\n"),
    ]);
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1);
    assert!(stdout.contains("~ v1 ConfigMap web/a"), "{stdout}");
    assert!(stdout.contains("- v1 ConfigMap web/b"), "{stdout}");
    assert!(
        stdout.contains("0 to create, 1 to update, 1 to prune, 1 unchanged"),
        "{stdout}"
    );
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    let a = get(&cluster, "", "configmaps", "web", "a").unwrap();
    assert_eq!(a["data"]["x"], "2");
    assert!(
        a["metadata"]["labels"].get("drop").is_none(),
        "field removed from git is removed"
    );
    assert_eq!(a["metadata"]["labels"]["keep"], "1");
    assert!(
        get(&cluster, "", "configmaps", "web", "b").is_none(),
        "pruned"
    );
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn prune_guards() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS_WEB),
        ("a.yaml", &configmap("a", "1")),
        ("b.yaml", &configmap("b", "1")),
        ("keep.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n  namespace: web\n  annotations:\n    tend.dev/prune: disabled\n"),
    ]);
    assert_eq!(tend_on(&cluster, dir.path(), &["apply"]).0, 0);

    // Empty desired set: refuse.
    write_site(dir.path(), &[]);
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("desired set is empty"), "{stderr}");
    assert!(get(&cluster, "", "configmaps", "web", "a").is_some());

    // More deletions than allowed: refuse all.
    write_site(dir.path(), &[("ns.yaml", NS_WEB)]);
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply", "--max-deletions", "1"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("more than --max-deletions 1"), "{stderr}");
    assert!(get(&cluster, "", "configmaps", "web", "a").is_some());

    // Allowed: a and b go, `keep` stays (annotation), the Namespace stays (protected).
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--max-deletions", "2"]);
    assert_eq!(code, 0, "{stderr}");
    // Guard-kept prunes are in the report as skipped, not only in a log line.
    assert!(
        stdout.contains("- v1 ConfigMap web/keep")
            && stdout.contains("skipped: tend.dev/prune: disabled"),
        "{stdout}"
    );
    assert!(get(&cluster, "", "configmaps", "web", "a").is_none());
    assert!(get(&cluster, "", "configmaps", "web", "keep").is_some());
    assert!(
        stderr.contains("not pruning v1 ConfigMap web/keep")
            || stderr.contains("not pruning ConfigMap web/keep"),
        "{stderr}"
    );

    write_site(dir.path(), &[]);
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply", "--allow-empty"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        get(&cluster, "", "namespaces", "", "web").is_some(),
        "namespaces are protected"
    );
    assert!(
        stderr.contains("Namespace is protected from pruning"),
        "{stderr}"
    );
}

#[test]
fn two_applysets_side_by_side() {
    let cluster = TestCluster::start();
    let one = site(&[("ns.yaml", NS_WEB), ("a.yaml", &configmap("a", "1"))]);
    let two = site(&[("b.yaml", &configmap("b", "1"))]);
    assert_eq!(
        tend_on(&cluster, one.path(), &["apply", "--applyset", "one"]).0,
        0
    );
    assert_eq!(
        tend_on(&cluster, two.path(), &["apply", "--applyset", "two"]).0,
        0
    );
    // Emptying site two prunes only its own object.
    write_site(two.path(), &[]);
    let (code, _, stderr) = tend_on(
        &cluster,
        two.path(),
        &["apply", "--applyset", "two", "--allow-empty"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(get(&cluster, "", "configmaps", "web", "b").is_none());
    assert!(get(&cluster, "", "configmaps", "web", "a").is_some());
    let (code, stdout, _) = tend_on(&cluster, one.path(), &["diff", "--applyset", "one"]);
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn conflicts_with_another_manager() {
    let cluster = TestCluster::start();
    cluster
        .seed(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"web"}}))
        .unwrap();
    cluster
        .seed(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"web"},"data":{"key":"theirs"}}))
        .unwrap();
    let dir = site(&[("app.yaml", &configmap("app", "ours"))]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--no-force-conflicts"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("conflict"), "{stderr}");
    assert_eq!(
        get(&cluster, "", "configmaps", "web", "app").unwrap()["data"]["key"],
        "theirs"
    );
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    let cm = get(&cluster, "", "configmaps", "web", "app").unwrap();
    assert_eq!(cm["data"]["key"], "ours");
    let owners: Vec<&str> = cm["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["fieldsV1"].pointer("/f:data/f:key").is_some())
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert_eq!(owners, vec!["tend"]);
}

#[test]
fn secret_values_never_printed() {
    let cluster = TestCluster::start();
    let canary = "canary-7f3a9c2e-value";
    let secret = |v: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: web\nstringData:\n  password: {v}\n")
    };
    let dir = site(&[("ns.yaml", NS_WEB), ("s.yaml", &secret(canary))]);
    let mut outputs = Vec::new();
    for args in [
        &["diff", "-vv"][..],
        &["diff", "-o", "json"],
        &["diff", "-o", "markdown"],
        &["apply", "-vv"],
    ] {
        let (_, stdout, stderr) = tend_on(&cluster, dir.path(), args);
        outputs.push(stdout + &stderr);
    }
    write_site(
        dir.path(),
        &[
            ("ns.yaml", NS_WEB),
            ("s.yaml", &secret("canary-second-0b1d")),
        ],
    );
    for args in [
        &["diff", "-vv"][..],
        &["diff", "-o", "json"],
        &["diff", "-o", "markdown"],
        &["apply", "-vv", "-o", "json"],
    ] {
        let (_, stdout, stderr) = tend_on(&cluster, dir.path(), args);
        outputs.push(stdout + &stderr);
    }
    let encoded = base64_encode(canary);
    for out in &outputs {
        for needle in [canary, "canary-second-0b1d", encoded.as_str()] {
            assert!(!out.contains(needle), "secret leaked: {out}");
        }
    }
    assert!(outputs[4].contains("*** (changed)"), "{}", outputs[4]);
}

fn base64_encode(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn one_failing_object_does_not_stop_the_others() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS_WEB),
        ("a.yaml", &configmap("a", "1")),
        ("b.yaml", &configmap("b", "1")),
        ("c.yaml", &configmap("c", "1")),
    ]);
    cluster.inject(
        Fault::status(500)
            .method("PATCH")
            .path_contains("/configmaps/b")
            .always(),
    );
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "-o", "json"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(get(&cluster, "", "configmaps", "web", "a").is_some());
    assert!(get(&cluster, "", "configmaps", "web", "c").is_some());
    assert!(get(&cluster, "", "configmaps", "web", "b").is_none());
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let failed: Vec<&Value> = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| !o["error"].is_null())
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["name"], "b");
    cluster.clear_faults();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(get(&cluster, "", "configmaps", "web", "b").is_some());
    assert_eq!(tend_on(&cluster, dir.path(), &["diff"]).0, 0);
}

#[test]
fn transient_faults_are_retried() {
    let cluster = TestCluster::start();
    let dir = basic_site();
    cluster.inject(
        Fault::status(500)
            .method("PATCH")
            .path_contains("/configmaps/app")
            .times(2),
    );
    cluster.inject(Fault::drop_connection().verb(Verb::List).times(1));
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(get(&cluster, "", "configmaps", "web", "app").is_some());
}

#[test]
fn held_lock_makes_a_second_run_wait_then_fail() {
    let cluster = TestCluster::start();
    cluster
        .seed(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"tend-system"}}))
        .unwrap();
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    cluster
        .seed(json!({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"tend-lock","namespace":"tend-system"},
            "spec":{"holderIdentity":"ci-runner-42/pid-7","leaseDurationSeconds":60,"acquireTime":now,"renewTime":now}}))
        .unwrap();
    let dir = basic_site();
    let started = std::time::Instant::now();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply", "--lock-timeout", "1s"]);
    assert_eq!(code, 2);
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(stderr.contains("ci-runner-42/pid-7"), "{stderr}");
    assert!(
        get(&cluster, "", "configmaps", "web", "app").is_none(),
        "nothing applied without the lock"
    );

    // An expired lease is taken over, and released at the end.
    let old = "2020-01-01T00:00:00.000000Z";
    let mut lease = lock_lease(&cluster);
    lease["spec"]["renewTime"] = json!(old);
    // Age the lease: its holder stopped renewing long ago.
    let client_rt = tokio::runtime::Runtime::new().unwrap();
    client_rt.block_on(async {
        let client = cluster.client().await;
        let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
            kube::Api::namespaced(client, "tend-system");
        let lease: k8s_openapi::api::coordination::v1::Lease =
            serde_json::from_value(lease).unwrap();
        api.replace("tend-lock", &Default::default(), &lease)
            .await
            .unwrap();
    });
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply", "--lock-timeout", "1s"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("taking over the expired lock"), "{stderr}");
    let lease = lock_lease(&cluster);
    assert!(
        lease["spec"]["holderIdentity"].is_null(),
        "released: {lease}"
    );
}

#[test]
fn dry_run_writes_nothing() {
    let cluster = TestCluster::start();
    let dir = basic_site();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("3 to create"), "{stdout}");
    assert!(
        cluster.requests().iter().all(|r| r.dry_run
            || r.resource == "selfsubjectaccessreviews"
            || matches!(r.verb, Verb::Get | Verb::List | Verb::Discovery)),
        "only reads and dry runs"
    );
    assert!(get(&cluster, "", "namespaces", "", "web").is_none());
    assert!(get(&cluster, "", "namespaces", "", "tend-system").is_none());
}

#[test]
fn missing_tend_crds_are_a_clear_error_before_any_write() {
    let cluster = TestCluster::start();
    let (code, _, stderr) = tend_on(&cluster, &example_site(), &["apply", "--cluster", "dc1"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("tend crds | kubectl apply -f -"),
        "{stderr}"
    );
    assert!(object_writes(&cluster).is_empty());
    let (code, _, stderr) = tend_on(&cluster, &example_site(), &["diff", "--cluster", "dc1"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("tend crds | kubectl apply -f -"),
        "{stderr}"
    );
}

#[test]
fn works_without_aggregated_discovery() {
    let cluster = TestCluster::start_with(tend_testserver::TestClusterOptions {
        aggregated_discovery: false,
        ..Default::default()
    });
    let dir = basic_site();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(tend_on(&cluster, dir.path(), &["diff"]).0, 0);
}

#[test]
fn wait_for_rollouts_until_timeout() {
    let cluster = TestCluster::start();
    let dir = basic_site();
    // No controllers here: the Deployment never reports a rollout, so --wait times out.
    let (code, _, stderr) = tend_on(
        &cluster,
        dir.path(),
        &["apply", "--wait", "--timeout", "1s"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("apps/Deployment web/nginx not ready within 1s (--timeout)"),
        "{stderr}"
    );
    // Report the rollout as a controller would; now --wait succeeds.
    let deploy = get(&cluster, "apps", "deployments", "web", "nginx").unwrap();
    let generation = deploy["metadata"]["generation"].clone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let api: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
            kube::Api::namespaced(cluster.client().await, "web");
        let status = json!({"status":{"observedGeneration":generation,"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2,
            "conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}});
        api.patch_status("nginx", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&status))
            .await
            .unwrap();
    });
    let (code, _, stderr) = tend_on(
        &cluster,
        dir.path(),
        &["apply", "--wait", "--timeout", "5s"],
    );
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn context_selects_the_kubeconfig_context() {
    let cluster = TestCluster::start();
    let dir = basic_site();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["diff", "--context", "test"]);
    assert_eq!(code, 1, "{stderr}");
    let (code, _, stderr) = tend_on(
        &cluster,
        dir.path(),
        &["diff", "--context", "no-such-context"],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("no-such-context"), "{stderr}");
}

#[test]
fn unsupported_output_formats_are_refused_before_any_work() {
    let cluster = TestCluster::start();
    let dir = site(&[("web.yaml", NS_WEB)]);
    for command in ["apply", "diff"] {
        let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[command, "-o", "yaml"]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(
            stderr.contains(&format!("tend {command} prints text, json or markdown")),
            "{stderr}"
        );
        // Nothing was loaded or rendered (no summary line) and the cluster was not contacted.
        assert!(!stderr.contains("rendered"), "{stderr}");
    }
    assert!(cluster.requests().is_empty(), "{:?}", cluster.requests());
    // Before loading: even a repository that does not exist gives the -o error first.
    let (code, _, stderr) = run(tend().args(["apply", "-o", "yaml", "--repo", "/does/not/exist"]));
    assert_eq!(code, 2);
    assert!(stderr.contains("prints text, json or markdown"), "{stderr}");
}

/// The lock costs a no-op apply one read before the LISTs and two writes: taking it (beside
/// the LISTs) and releasing it (over the lease as taken, with no read first).
#[test]
fn a_free_lock_is_taken_beside_the_lists_and_released_without_a_read() {
    let cluster = TestCluster::start();
    let dir = basic_site();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let log = cluster.requests();
    let lease: Vec<String> = log
        .iter()
        .filter(|r| r.resource == "leases")
        .map(|r| r.method.clone())
        .collect();
    assert_eq!(lease, ["GET", "PUT", "PUT"], "{log:#?}");
    // The lease is read before the engine reads the parent and its members: a read that began
    // earlier could see another run's writes half done.
    let first_lease = log.iter().position(|r| r.resource == "leases").unwrap();
    let first_member_read = log
        .iter()
        .position(|r| {
            (r.verb == Verb::List && r.query.contains("applyset.kubernetes.io"))
                || (r.verb == Verb::Get && r.resource == "secrets")
        })
        .unwrap();
    assert!(first_lease < first_member_read, "{log:#?}");
    // No namespace read for the state namespace: the lease's answer says it exists.
    assert_eq!(cluster.count(Verb::Get, "namespaces"), 0, "{log:#?}");
    let lease = lock_lease(&cluster);
    assert!(lease["spec"]["holderIdentity"].is_null(), "{lease}");
}

/// When another run takes the lock between this run's read and its write, the run waits for
/// the lock as usual and observes the cluster again once it holds it.
#[test]
fn a_lock_lost_to_a_race_is_waited_for_and_the_cluster_read_again() {
    let cluster = TestCluster::start();
    let dir = basic_site();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    write_site(
        dir.path(),
        &[("ns.yaml", NS_WEB), ("app.yaml", &configmap("app", "v2"))],
    );
    // The write that takes the free lease meets a newer resourceVersion, as when another run
    // took it first.
    cluster.inject(
        Fault::status(409)
            .method("PUT")
            .path_contains("/leases/tend-lock")
            .times(1),
    );
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let log = cluster.requests();
    let taken = log
        .iter()
        .enumerate()
        .filter(|(_, r)| r.resource == "leases" && r.method == "PUT")
        .map(|(i, _)| i)
        .nth(1)
        .expect("a second write took the lease");
    assert!(
        log[taken..]
            .iter()
            .any(|r| r.verb == Verb::List && r.resource == "configmaps"),
        "observed again after taking the lock: {log:#?}"
    );
    assert_eq!(
        get(&cluster, "", "configmaps", "web", "app").unwrap()["data"]["key"],
        "v2"
    );
}
