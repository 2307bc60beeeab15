//! The five seed operators, live (README "tend's kinds"): repeated `tend apply` runs against the test API
//! server stand in for the CronJob.

use crate::common::*;

use serde_json::{json, Value};
use tend_testserver::TestCluster;

/// A test cluster with tend's CRDs installed.
pub fn cluster_with_crds() -> TestCluster {
    let cluster = TestCluster::start();
    for crd in tend::crds() {
        cluster.seed(serde_json::to_value(crd).unwrap()).unwrap();
    }
    cluster
}

fn apply(cluster: &TestCluster, dir: &std::path::Path, extra: &[&str]) -> (String, String) {
    let mut args = vec!["apply"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = tend_on(cluster, dir, &args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    (stdout, stderr)
}

fn hash_of(deploy: &Value) -> String {
    deploy["spec"]["template"]["metadata"]["annotations"]["tend.dev/config-hash"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn config_hash_rolls_only_on_referenced_changes() {
    let cluster = cluster_with_crds();
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&example_site(), dir.path());
    apply(&cluster, dir.path(), &["--cluster", "dc1"]);
    let first = get(&cluster, "apps", "deployments", "web", "nginx").unwrap();

    // Unrelated change: the Deployment is not touched at all.
    let svc = dir.path().join("web/nginx.yaml");
    let text = std::fs::read_to_string(&svc).unwrap();
    std::fs::write(&svc, text.replace("port: 80\n", "port: 81\n")).unwrap();
    apply(&cluster, dir.path(), &["--cluster", "dc1"]);
    let second = get(&cluster, "apps", "deployments", "web", "nginx").unwrap();
    assert_eq!(
        first["metadata"]["resourceVersion"],
        second["metadata"]["resourceVersion"]
    );
    assert_eq!(
        get(&cluster, "", "services", "web", "nginx").unwrap()["spec"]["ports"][0]["port"],
        81
    );

    // nginx.conf changes: the hash changes, so the Deployment rolls.
    let conf = dir.path().join("web/nginx-conf.yaml");
    let text = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(
        &conf,
        text.replace("worker_processes 1;", "worker_processes 2;"),
    )
    .unwrap();
    apply(&cluster, dir.path(), &["--cluster", "dc1"]);
    let third = get(&cluster, "apps", "deployments", "web", "nginx").unwrap();
    assert_ne!(hash_of(&first), hash_of(&third));
    assert_eq!(hash_of(&first).len(), 64);
}

#[test]
fn live_workloads_opt_in_to_reloads_and_tend_owns_only_the_hash() {
    let cluster = cluster_with_crds();
    cluster
        .seed(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"legacy"}}))
        .unwrap();
    cluster
        .seed(json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"old-app","namespace":"legacy",
            "labels":{"tend.dev/reload":"true"}},
            "spec":{"selector":{"matchLabels":{"app":"old"}},"template":{"metadata":{"labels":{"app":"old"}},
            "spec":{"containers":[{"name":"c","image":"busybox","envFrom":[{"configMapRef":{"name":"settings"}}]}]}}}}))
        .unwrap();
    let settings = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: legacy\ndata:\n  level: {v}\n")
    };
    let dir = site(&[("settings.yaml", &settings("debug"))]);
    apply(&cluster, dir.path(), &[]);
    let deploy = get(&cluster, "apps", "deployments", "legacy", "old-app").unwrap();
    let first = hash_of(&deploy);
    assert_eq!(first.len(), 64, "{deploy}");
    let tend_fields: Vec<&Value> = deploy["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["manager"] == "tend")
        .map(|m| &m["fieldsV1"])
        .collect();
    assert_eq!(
        tend_fields,
        vec![
            &json!({"f:spec":{"f:template":{"f:metadata":{"f:annotations":{"f:tend.dev/config-hash":{}}}}}})
        ]
    );
    assert!(
        deploy["metadata"]["labels"]
            .get("applyset.kubernetes.io/part-of")
            .is_none(),
        "not made a member"
    );

    write_site(dir.path(), &[("settings.yaml", &settings("info"))]);
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1);
    assert!(stdout.contains("Deployment legacy/old-app"), "{stdout}");
    apply(&cluster, dir.path(), &[]);
    let second = hash_of(&get(&cluster, "apps", "deployments", "legacy", "old-app").unwrap());
    assert_ne!(first, second);
    assert_eq!(tend_on(&cluster, dir.path(), &["diff"]).0, 0);
}

const COPY_RULE: &str = "apiVersion: tend.dev/v1alpha1
kind: CopyRule
metadata:
  name: copyrator
spec:
  kind: ConfigMap
  sourceNamespace: default
  selector:
    matchLabels:
      copyrator: \"true\"
  excludeNamespaces: [kube-system]
";

fn source_cm(value: &str, labelled: bool) -> String {
    let label = if labelled {
        "  labels:\n    copyrator: \"true\"\n"
    } else {
        ""
    };
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: default\n{label}data:\n  value: {value}\n")
}

#[test]
fn copy_rule_copies_follows_sources_and_reports_conflicts() {
    let cluster = cluster_with_crds();
    for ns in ["team-a", "team-b"] {
        cluster
            .seed(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":ns}}))
            .unwrap();
    }
    // A same-named object tend did not create: a conflict, never overwritten.
    cluster
        .seed(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"team-b"},"data":{"value":"mine"}}))
        .unwrap();
    let dir = site(&[
        ("rule.yaml", COPY_RULE),
        ("source.yaml", &source_cm("one", true)),
    ]);
    apply(&cluster, dir.path(), &[]);
    let copy = get(&cluster, "", "configmaps", "team-a", "shared").expect("copied");
    assert_eq!(copy["data"]["value"], "one");
    assert_eq!(
        copy["metadata"]["annotations"]["tend.dev/copied-from"],
        "default/shared"
    );
    assert_eq!(
        get(&cluster, "", "configmaps", "team-b", "shared").unwrap()["data"]["value"],
        "mine"
    );
    assert!(get(&cluster, "", "configmaps", "kube-system", "shared").is_none());
    let rule = get(&cluster, "tend.dev", "copyrules", "", "copyrator").unwrap();
    assert_eq!(rule["status"]["conflicts"], json!(["team-b/shared"]));
    assert_eq!(rule["status"]["conflictCount"], 1);
    assert!(
        rule["status"]["copies"].as_i64().unwrap() >= 2,
        "{}",
        rule["status"]
    );

    // A namespace created between runs gets its copy on the next run.
    cluster
        .seed(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-c"}}))
        .unwrap();
    apply(&cluster, dir.path(), &[]);
    assert!(get(&cluster, "", "configmaps", "team-c", "shared").is_some());

    // Editing the source updates every copy.
    write_site(
        dir.path(),
        &[
            ("rule.yaml", COPY_RULE),
            ("source.yaml", &source_cm("two", true)),
        ],
    );
    apply(&cluster, dir.path(), &[]);
    for ns in ["team-a", "team-c"] {
        assert_eq!(
            get(&cluster, "", "configmaps", ns, "shared").unwrap()["data"]["value"],
            "two"
        );
    }

    // Removing the label prunes the copies (the source stays, the foreign object stays).
    write_site(
        dir.path(),
        &[
            ("rule.yaml", COPY_RULE),
            ("source.yaml", &source_cm("two", false)),
        ],
    );
    apply(&cluster, dir.path(), &[]);
    assert!(get(&cluster, "", "configmaps", "team-a", "shared").is_none());
    assert!(get(&cluster, "", "configmaps", "team-c", "shared").is_none());
    assert!(get(&cluster, "", "configmaps", "default", "shared").is_some());
    assert_eq!(
        get(&cluster, "", "configmaps", "team-b", "shared").unwrap()["data"]["value"],
        "mine"
    );
    assert_eq!(tend_on(&cluster, dir.path(), &["diff"]).0, 0);
}

#[test]
fn copy_rule_secrets_are_never_printed_and_live_sources_count() {
    let cluster = cluster_with_crds();
    cluster
        .seed(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}))
        .unwrap();
    // A source that lives only in the cluster, not in git.
    cluster
        .seed(json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"registry-creds","namespace":"default","labels":{"copy":"yes"}},
            "data":{"token":"c2VjcmV0LWNhbmFyeS05OTE="}}))
        .unwrap();
    let rule = "apiVersion: tend.dev/v1alpha1\nkind: CopyRule\nmetadata:\n  name: creds\nspec:\n  kind: Secret\n  sourceNamespace: default\n  selector:\n    matchLabels:\n      copy: \"yes\"\n";
    let dir = site(&[("rule.yaml", rule)]);
    let mut seen = String::new();
    for args in [
        &["diff", "-vv"][..],
        &["diff", "-o", "json"],
        &["diff", "-o", "markdown"],
        &["apply", "-vv"],
    ] {
        let (_, stdout, stderr) = tend_on(&cluster, dir.path(), args);
        seen.push_str(&stdout);
        seen.push_str(&stderr);
    }
    let copy = get(&cluster, "", "secrets", "team-a", "registry-creds").expect("secret copied");
    assert_eq!(copy["data"]["token"], "c2VjcmV0LWNhbmFyeS05OTE=");
    assert!(seen.contains("Secret team-a/registry-creds"), "{seen}");
    assert!(
        !seen.contains("c2VjcmV0LWNhbmFyeS05OTE") && !seen.contains("secret-canary-991"),
        "leaked: {seen}"
    );
}

#[test]
fn registry_mirrors_per_cluster_owned_and_pruned_with_pvc_guard() {
    let cluster = cluster_with_crds();
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&example_site(), dir.path());
    apply(&cluster, dir.path(), &["--cluster", "dc1"]);
    let mirror =
        get(&cluster, "tend.dev", "registrymirrors", "registries", "gcr").expect("gcr on dc1");
    let uid = mirror["metadata"]["uid"].as_str().unwrap();
    for (group, resource, name) in [
        ("", "services", "gcr"),
        ("", "services", "gcr-headless"),
        ("apps", "statefulsets", "gcr"),
        ("apps", "daemonsets", "gcr-node-proxy"),
        ("", "persistentvolumeclaims", "gcr-data"),
    ] {
        let obj = get(&cluster, group, resource, "registries", name)
            .unwrap_or_else(|| panic!("{resource}/{name}"));
        assert_eq!(
            obj["metadata"]["ownerReferences"][0]["uid"], uid,
            "{resource}/{name} owned"
        );
        assert_eq!(
            obj["metadata"]["labels"]["app.kubernetes.io/part-of"],
            "gcr"
        );
    }
    assert!(get(
        &cluster,
        "tend.dev",
        "registrymirrors",
        "registries",
        "quay"
    )
    .is_none());
    assert_eq!(mirror["status"]["endpoint"], "localhost:5002");
    // Second run is a no-op (ownerReferences now part of the desired objects).
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff", "--cluster", "dc1"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");

    // dc2 on another cluster gets quay, not gcr.
    let other = cluster_with_crds();
    apply(&other, dir.path(), &["--cluster", "dc2"]);
    assert!(get(&other, "tend.dev", "registrymirrors", "registries", "quay").is_some());
    assert!(get(&other, "apps", "statefulsets", "registries", "gcr").is_none());

    // Deleting gcr from git prunes its objects, but the PVC only once allowed.
    let mirrors = dir.path().join("mirrors/mirrors.yaml");
    let text = std::fs::read_to_string(&mirrors).unwrap();
    let docs: Vec<&str> = text
        .split("\n---\n")
        .filter(|d| !d.contains("name: gcr"))
        .collect();
    std::fs::write(&mirrors, docs.join("\n---\n")).unwrap();
    let (_, stderr) = apply(&cluster, dir.path(), &["--cluster", "dc1"]);
    assert!(get(&cluster, "apps", "statefulsets", "registries", "gcr").is_none());
    assert!(get(&cluster, "", "services", "registries", "gcr-headless").is_none());
    assert!(get(&cluster, "tend.dev", "registrymirrors", "registries", "gcr").is_none());
    assert!(
        get(
            &cluster,
            "",
            "persistentvolumeclaims",
            "registries",
            "gcr-data"
        )
        .is_some(),
        "PVC kept"
    );
    assert!(
        stderr.contains("PersistentVolumeClaim is protected from pruning"),
        "{stderr}"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let api: kube::Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
            kube::Api::namespaced(cluster.client().await, "registries");
        let patch = json!({"metadata":{"annotations":{"tend.dev/prune":"allow"}}});
        api.patch(
            "gcr-data",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    });
    apply(&cluster, dir.path(), &["--cluster", "dc1"]);
    assert!(
        get(
            &cluster,
            "",
            "persistentvolumeclaims",
            "registries",
            "gcr-data"
        )
        .is_none(),
        "PVC pruned once allowed"
    );
}

const IMMORTAL: &str = "apiVersion: tend.dev/v1alpha1
kind: ImmortalContainer
metadata:
  name: keeper
  namespace: web
spec:
  image: nginx:1.27
";

fn start_times(cluster: &TestCluster) -> i64 {
    get(cluster, "tend.dev", "immortalcontainers", "web", "keeper").unwrap()["status"]["startTimes"]
        .as_i64()
        .unwrap_or(0)
}

#[test]
fn immortal_container_is_recreated_and_counted() {
    let cluster = cluster_with_crds();
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n";
    let dir = site(&[("ns.yaml", ns), ("keeper.yaml", IMMORTAL)]);
    apply(&cluster, dir.path(), &[]);
    let pod = get(&cluster, "", "pods", "web", "keeper-immortalpod").expect("pod created");
    assert_eq!(pod["metadata"]["labels"]["tend.dev/immortal"], "keeper");
    let ic = get(&cluster, "tend.dev", "immortalcontainers", "web", "keeper").unwrap();
    assert_eq!(ic["status"]["startTimes"], 1);
    assert_eq!(ic["status"]["currentPod"], "keeper-immortalpod");
    assert_eq!(
        pod["metadata"]["ownerReferences"][0]["uid"],
        ic["metadata"]["uid"]
    );

    // Nothing happened: nothing changes.
    apply(&cluster, dir.path(), &[]);
    assert_eq!(start_times(&cluster), 1);

    // Deleted: recreated.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pods = || async {
        let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
            kube::Api::namespaced(cluster.client().await, "web");
        api
    };
    rt.block_on(async {
        pods()
            .await
            .delete("keeper-immortalpod", &Default::default())
            .await
            .unwrap()
    });
    apply(&cluster, dir.path(), &[]);
    assert!(get(&cluster, "", "pods", "web", "keeper-immortalpod").is_some());
    assert_eq!(start_times(&cluster), 2);

    // Failed: recreated.
    rt.block_on(async {
        let patch = json!({"status":{"phase":"Failed"}});
        pods()
            .await
            .patch_status(
                "keeper-immortalpod",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
            .unwrap();
    });
    apply(&cluster, dir.path(), &[]);
    let pod = get(&cluster, "", "pods", "web", "keeper-immortalpod").unwrap();
    assert_ne!(pod["status"]["phase"], "Failed");
    assert_eq!(start_times(&cluster), 3);

    // New image in git: recreated with it.
    write_site(
        dir.path(),
        &[
            ("ns.yaml", ns),
            ("keeper.yaml", &IMMORTAL.replace("nginx:1.27", "nginx:1.28")),
        ],
    );
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1);
    assert!(stdout.contains("Pod web/keeper-immortalpod"), "{stdout}");
    apply(&cluster, dir.path(), &[]);
    let pod = get(&cluster, "", "pods", "web", "keeper-immortalpod").unwrap();
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1.28");
    assert_eq!(start_times(&cluster), 4);
    assert_eq!(tend_on(&cluster, dir.path(), &["diff"]).0, 0);
}

#[test]
fn crds_print_the_columns_kubectl_shows() {
    let crd = tend::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == "ImmortalContainer")
        .unwrap();
    let columns: Vec<String> = crd.spec.versions[0]
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| c.name.clone())
        .collect();
    assert!(
        columns.starts_with(&[
            "IMAGE".to_string(),
            "CURRENT-POD".to_string(),
            "START-TIMES".to_string()
        ]),
        "{columns:?}"
    );
}

#[test]
fn render_and_diff_name_the_origin_of_expanded_objects() {
    let (code, stdout, _) = run(tend()
        .args(["render", "--cluster", "dc1", "--repo"])
        .arg(example_site()));
    assert_eq!(code, 0);
    assert!(stdout.contains("(generated by RegistryMirror registries/gcr)"));
    assert!(stdout.contains("(generated by ImmortalContainer web/nginx)"));
    let cluster = cluster_with_crds();
    let (code, stdout, _) = tend_on(&cluster, &example_site(), &["diff", "--cluster", "dc1"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("RegistryMirror registries/gcr"), "{stdout}");
    assert!(stdout.contains("CopyRule copyrator"), "{stdout}");
}

#[test]
fn a_failed_status_write_is_reported_and_undoes_nothing() {
    let cluster = cluster_with_crds();
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n";
    let dir = site(&[("ns.yaml", ns), ("keeper.yaml", IMMORTAL)]);
    cluster.inject(
        tend_testserver::Fault::status(500)
            .method("PATCH")
            .path_contains("/immortalcontainers/keeper/status")
            .always(),
    );
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("cannot update the status of ImmortalContainer web/keeper"),
        "{stderr}"
    );
    assert!(
        get(&cluster, "", "pods", "web", "keeper-immortalpod").is_some(),
        "pod kept"
    );
    assert!(get(&cluster, "tend.dev", "immortalcontainers", "web", "keeper").is_some());
    cluster.clear_faults();
    apply(&cluster, dir.path(), &[]);
    assert_eq!(start_times(&cluster), 1);
}
