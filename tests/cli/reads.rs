//! Reads scale with what tend manages (README "Reconcile (diff and apply)"): label-selected LISTs, GETs only for objects
//! that are not members yet, whatever else lives in the cluster.

use crate::common::*;
use serde_json::json;
use tend_testserver::{TestCluster, Verb};

/// What `tend diff` printed as its own count: (requests, KiB listed).
fn counts(stderr: &str) -> (usize, usize) {
    let line = stderr
        .lines()
        .find(|l| l.contains("API requests"))
        .unwrap_or_else(|| panic!("no request count in:\n{stderr}"));
    let number_before = |marker: &str| -> usize {
        let end = line.find(marker).expect(marker);
        let start = line[..end]
            .trim_end()
            .rfind(|c: char| !c.is_ascii_digit())
            .map_or(0, |i| i + 1);
        line[start..end].trim().parse().expect("a number")
    };
    (number_before(" API requests"), number_before(" KiB listed"))
}

const MANAGED: &str = "apiVersion: v1
kind: Namespace
metadata:
  name: app
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: app
data:
  mode: prod
---
apiVersion: v1
kind: Secret
metadata:
  name: token
  namespace: app
stringData:
  token: s3cr3t
";

/// Helm keeps its release records as Secrets like these: 300 of ~200 KB beside the one
/// Secret and one ConfigMap tend manages in the same namespace.
#[test]
fn a_no_op_diff_does_not_read_what_tend_does_not_manage() {
    let cluster = TestCluster::start();
    let dir = site(&[("app.yaml", MANAGED)]);
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    let blob = "x".repeat(200 * 1024);
    for i in 0..300 {
        cluster
            .seed(
                json!({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                "metadata": {"name": format!("sh.helm.release.v1.other.v{i}"), "namespace": "app",
                             "labels": {"owner": "helm"}},
                "data": {"release": blob}}),
            )
            .unwrap();
    }
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("0 to create, 0 to update, 0 to prune, 3 unchanged"),
        "{stdout}"
    );
    let (requests, kib) = counts(&stderr);
    let log = cluster.requests();
    assert_eq!(
        requests,
        log.len(),
        "tend's count agrees with the server's log"
    );
    assert!(requests <= 10, "{requests} requests: {log:#?}");
    assert!(kib <= 1024, "read {kib} KiB listing, more than 1 MiB");
    // No LIST without a label selector, and no GET but the ApplySet parent's.
    for r in &log {
        if r.verb == Verb::List {
            assert!(
                r.query.contains("labelSelector="),
                "unselected LIST {} {}",
                r.path,
                r.query
            );
        }
        if r.verb == Verb::Get {
            assert_eq!(
                r.path, "/api/v1/namespaces/tend-system/secrets/tend",
                "only the parent"
            );
        }
    }
}

/// A first run reads nothing of objects in a namespace it creates; later runs only the
/// selected LISTs.
#[test]
fn new_objects_in_a_new_namespace_cost_no_read() {
    let cluster = TestCluster::start();
    let dir = site(&[("app.yaml", MANAGED)]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("3 to create"), "{stdout}");
    let gets = |c: &TestCluster| c.requests().iter().filter(|r| r.verb == Verb::Get).count();
    // The parent, and the Namespace (which does not exist, so nothing in it is read).
    assert_eq!(gets(&cluster), 2, "{:#?}", cluster.requests());
    tend_on(&cluster, dir.path(), &["apply"]);
    cluster.clear_requests();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        gets(&cluster),
        1,
        "only the parent: {:#?}",
        cluster.requests()
    );
}

/// In a namespace that exists, a few non-members are read with a GET each, many with one
/// metadata-only LIST per kind and namespace (then a GET of those that exist); objects that
/// existed without tend's label are adopted (an update), the others created.
#[test]
fn non_members_in_an_existing_namespace_are_read_per_kind_not_per_object() {
    let cluster = TestCluster::start();
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}))
        .unwrap();
    for name in ["cm-0", "hand-made"] {
        cluster
            .seed(json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": name, "namespace": "app"}, "data": {"k": "old"}}))
            .unwrap();
    }
    let mut files = String::new();
    for i in 0..20 {
        files.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: app\ndata:\n  k: v\n"
        ));
    }
    files.push_str("---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: app\nstringData:\n  t: x\n");
    let dir = site(&[("app.yaml", &files)]);
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("20 to create, 1 to update, 0 to prune, 0 unchanged"),
        "cm-0 is adopted, not created:\n{stdout}"
    );
    let log = cluster.requests();
    let unselected: Vec<_> = log
        .iter()
        .filter(|r| r.verb == Verb::List && !r.query.contains("labelSelector="))
        .collect();
    assert_eq!(unselected.len(), 1, "one LIST for 20 ConfigMaps: {log:#?}");
    assert_eq!(unselected[0].path, "/api/v1/namespaces/app/configmaps");
    let mut gets: Vec<&str> = log
        .iter()
        .filter(|r| r.verb == Verb::Get)
        .map(|r| r.path.as_str())
        .collect();
    gets.sort_unstable();
    assert_eq!(
        gets,
        [
            "/api/v1/namespaces/app/configmaps/cm-0",
            "/api/v1/namespaces/app/secrets/token",
            "/api/v1/namespaces/tend-system/secrets/tend",
        ],
        "the parent, the one ConfigMap that exists, the lone Secret"
    );
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(
        get(&cluster, "", "configmaps", "app", "cm-0").unwrap()["data"]["k"],
        "v"
    );
    // What tend did not declare stays as it was.
    assert_eq!(
        get(&cluster, "", "configmaps", "app", "hand-made").unwrap()["data"]["k"],
        "old"
    );
}

/// Without the right to list across namespaces, tend lists per namespace and skips reload
/// opt-ins; with it, one LIST per kind.
#[test]
fn cluster_wide_lists_only_where_allowed() {
    let cluster = TestCluster::start();
    let files: Vec<(String, String)> = (0..4)
        .map(|i| {
            (
                format!("ns{i}.yaml"),
                format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-{i}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: team-{i}\ndata:\n  a: \"1\"\n"),
            )
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let dir = site(&files);
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    let configmap_lists = |c: &TestCluster| {
        c.requests()
            .iter()
            .filter(|r| r.verb == Verb::List && r.resource == "configmaps")
            .map(|r| r.path.clone())
            .collect::<Vec<_>>()
    };
    cluster.clear_requests();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(configmap_lists(&cluster), ["/api/v1/configmaps"]);

    cluster.deny_cluster_wide_lists(true);
    cluster.clear_requests();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stderr}");
    let mut lists = configmap_lists(&cluster);
    lists.sort();
    assert_eq!(
        lists,
        (0..4)
            .map(|i| format!("/api/v1/namespaces/team-{i}/configmaps"))
            .collect::<Vec<_>>()
    );
}
