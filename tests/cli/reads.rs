//! Reads scale with what tend manages (SPEC 4): label-selected LISTs, GETs only for objects
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

/// A first run reads each desired object once (GET); later runs only the selected LISTs.
#[test]
fn new_objects_are_read_one_by_one_members_by_label() {
    let cluster = TestCluster::start();
    let dir = site(&[("app.yaml", MANAGED)]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let gets = |c: &TestCluster| c.requests().iter().filter(|r| r.verb == Verb::Get).count();
    // The parent, and the three desired objects.
    assert_eq!(gets(&cluster), 4, "{:#?}", cluster.requests());
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
