//! `tend apply --wait` against the test API server, which runs no controllers: each test plays
//! the controller itself, writing status through the status subresource once tend has created
//! the object (or writing none, for objects that never become ready).

use crate::common::*;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tend_testserver::{TestCluster, Verb};

const NS: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n";

const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: web\ndata:\n  key: v1\n";

const SERVICE: &str = "apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: web
spec:
  selector: {app: web}
  ports:
    - port: 80
";

fn deployment(replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: web
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
"
    )
}

const PVC: &str = "apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: web
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 1Gi}
";

const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: web
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: busybox:1.36
          command: [sh, -c, 'true']
";

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: certificates.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: certificates, singular: certificate, kind: Certificate}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
";

const CERTIFICATE: &str = "apiVersion: example.com/v1
kind: Certificate
metadata:
  name: web-tls
  namespace: web
spec:
  secretName: web-tls
";

/// Play a controller for one object: once it exists, merge `status(live object)` into its
/// status through the status subresource. Gives up after 10 s (the run it serves is over).
fn controller(
    cluster: &TestCluster,
    (group, version, kind, plural): (&str, &str, &str, &str),
    name: &str,
    status: impl Fn(&Value) -> Value,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let live = loop {
        if let Some(live) = cluster.object(group, plural, "web", name) {
            break live;
        }
        if Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    let patch = json!({ "status": status(&live) });
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let api: Api<DynamicObject> =
            Api::namespaced_with(cluster.client().await, "web", &resource);
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("status write");
    });
}

const DEPLOYMENTS: (&str, &str, &str, &str) = ("apps", "v1", "Deployment", "deployments");

/// `tend apply --wait <args>` timed, while `play` runs alongside as the controller.
fn apply_while(
    cluster: &TestCluster,
    dir: &std::path::Path,
    args: &[&str],
    play: impl FnOnce() + Send,
) -> (i32, String, String, Duration) {
    std::thread::scope(|s| {
        s.spawn(play);
        let started = Instant::now();
        let mut all = vec!["apply", "--wait"];
        all.extend_from_slice(args);
        let (code, stdout, stderr) = tend_on(cluster, dir, &all);
        let took = started.elapsed();
        eprintln!("tend {}: exit {code} in {took:?}", all.join(" "));
        (code, stdout, stderr, took)
    })
}

#[test]
fn a_ready_set_finishes_at_once() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS),
        ("cm.yaml", CONFIGMAP),
        ("svc.yaml", SERVICE),
        ("deploy.yaml", &deployment(0)),
    ]);
    let (code, stdout, stderr, took) = apply_while(&cluster, dir.path(), &["-o", "json"], || {
        controller(&cluster, DEPLOYMENTS, "web", |live| {
            json!({
                "observedGeneration": live["metadata"]["generation"],
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
                ],
            })
        })
    });
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(took < Duration::from_secs(2), "took {took:?}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    for object in report["objects"].as_array().unwrap() {
        assert_eq!(object["wait"], json!({"status": "Current"}), "{object}");
    }
    // Polling LISTs each kind; it GETs no object (and objects in a namespace the run
    // creates are not read before they are applied either).
    assert_eq!(cluster.count(Verb::Get, "deployments"), 0);
}

#[test]
fn progress_deadline_exceeded_fails_at_once() {
    let cluster = TestCluster::start();
    let dir = site(&[("ns.yaml", NS), ("deploy.yaml", &deployment(1))]);
    let (code, stdout, stderr, took) = apply_while(
        &cluster,
        dir.path(),
        &["--timeout", "30s"],
        || {
            controller(&cluster, DEPLOYMENTS, "web", |live| {
                json!({
                    "observedGeneration": live["metadata"]["generation"],
                    "replicas": 1,
                    "updatedReplicas": 1,
                    "unavailableReplicas": 1,
                    "conditions": [
                        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
                        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                         "message": "ReplicaSet \"web-5d4f\" has timed out progressing."},
                    ],
                })
            })
        },
    );
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(took < Duration::from_secs(5), "took {took:?}\n{stderr}");
    assert!(
        stdout.contains("not ready: apps/Deployment web/web: Failed: ProgressDeadlineExceeded"),
        "{stdout}"
    );
    assert!(
        stderr.contains("apps/Deployment web/web failed: ProgressDeadlineExceeded"),
        "{stderr}"
    );
}

#[test]
fn a_pending_pvc_and_an_unfinished_job_time_out_listed_with_reasons() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS),
        ("cm.yaml", CONFIGMAP),
        ("pvc.yaml", PVC),
        ("job.yaml", JOB),
    ]);
    let (code, stdout, stderr, took) =
        apply_while(&cluster, dir.path(), &["--timeout", "2s"], || {});
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(6),
        "took {took:?}\n{stderr}"
    );
    for line in [
        "not ready: PersistentVolumeClaim web/data: InProgress: phase Pending",
        "not ready: batch/Job web/migrate: InProgress: not started yet",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
    // The ready ones are not listed.
    assert!(!stdout.contains("ConfigMap web/app:"), "{stdout}");
    assert!(
        stderr.contains("PersistentVolumeClaim web/data not ready within 2s (--timeout)"),
        "{stderr}"
    );
    assert!(
        stdout.contains("error: 2 of 4 objects not ready within 2s (--timeout of --wait)"),
        "{stdout}"
    );
    // A poll is a LIST per kind and namespace, not a GET per object: about 5 polls here.
    assert!(cluster.count(Verb::List, "persistentvolumeclaims") >= 3);
    assert!(cluster.count(Verb::Get, "persistentvolumeclaims") <= 1);

    // The same in markdown and JSON.
    let (code, stdout, _, _) = apply_while(
        &cluster,
        dir.path(),
        &["--timeout", "1s", "-o", "markdown"],
        || {},
    );
    assert_eq!(code, 2);
    assert!(stdout.contains("2 of 4 objects ready"), "{stdout}");
    assert!(stdout.contains("phase Pending"), "{stdout}");
    let (code, stdout, _, _) = apply_while(
        &cluster,
        dir.path(),
        &["--timeout", "1s", "-o", "json"],
        || {},
    );
    assert_eq!(code, 2);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let pvc = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "PersistentVolumeClaim")
        .unwrap();
    assert_eq!(pvc["wait"]["status"], "InProgress");
    assert!(pvc["wait"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("phase Pending"));
}

#[test]
fn a_custom_resource_with_ready_false_fails_naming_the_reason() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS),
        ("crd.yaml", CRD),
        ("cert.yaml", CERTIFICATE),
    ]);
    // A custom resource without status counts as ready (kstatus: nothing says it is not), so
    // its controller answers between two runs here: the first creates the CRD and the object
    // (waited for through the resource discovered once its CRD was established).
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--wait", "-o", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let cert = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Certificate")
        .unwrap();
    assert_eq!(cert["wait"], json!({"status": "Current"}));
    controller(
        &cluster,
        ("example.com", "v1", "Certificate", "certificates"),
        "web-tls",
        |live| {
            json!({"conditions": [{
                "type": "Ready", "status": "False", "reason": "IssuerNotFound",
                "message": "issuer letsencrypt not found",
                "observedGeneration": live["metadata"]["generation"],
                "lastTransitionTime": "2026-11-23T10:00:00Z",
            }]})
        },
    );
    let (code, stdout, stderr, took) =
        apply_while(&cluster, dir.path(), &["--timeout", "30s"], || {});
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(took < Duration::from_secs(5), "took {took:?}\n{stderr}");
    assert!(
        stdout.contains(
            "not ready: example.com/Certificate web/web-tls: Failed: IssuerNotFound: issuer letsencrypt not found"
        ),
        "{stdout}"
    );
}

#[test]
fn wait_skip_leaves_an_object_out() {
    let cluster = TestCluster::start();
    let skipped = PVC.replace(
        "  namespace: web\n",
        "  namespace: web\n  annotations:\n    tend.dev/wait: skip\n",
    );
    let dir = site(&[
        ("ns.yaml", NS),
        ("cm.yaml", CONFIGMAP),
        ("pvc.yaml", &skipped),
    ]);
    let (code, stdout, stderr, took) = apply_while(
        &cluster,
        dir.path(),
        &["--timeout", "10s", "-o", "json"],
        || {},
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(took < Duration::from_secs(2), "took {took:?}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    for object in report["objects"].as_array().unwrap() {
        let want = match object["kind"].as_str() {
            Some("PersistentVolumeClaim") => Value::Null,
            _ => json!({"status": "Current"}),
        };
        assert_eq!(object["wait"], want, "{object}");
    }
}
