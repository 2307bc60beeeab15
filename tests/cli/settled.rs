//! What a run found as desired is kept in the cache directory (uid, resourceVersion, a
//! digest of the desired object), so the next run reads those LIST items no further than
//! their identity (README "Reconcile (diff and apply)"). Every way an object or its desired
//! state can change since must still be seen. Secrets are never noted (a digest of their
//! data could confirm a guess), so of the three objects here two are taken.

use crate::common::*;
use serde_json::json;
use std::path::Path;
use tend_testserver::TestCluster;

const SITE: &str = "apiVersion: v1
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
  token: s3cr3t-t0ken
";

const NOTE: &str = "found as an earlier run left them";

/// `tend <args> -v` on `cluster` with `cache` as the cache directory.
fn tend_cached(
    cluster: &TestCluster,
    site: &Path,
    cache: &Path,
    args: &[&str],
) -> (i32, String, String) {
    run(tend()
        .args(args)
        .arg("-v")
        .arg("--repo")
        .arg(site)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .env("TEND_CACHE_DIR", cache))
}

/// How many objects the run took as an earlier run left them (0 when it says nothing).
fn settled_earlier(stderr: &str) -> usize {
    stderr
        .lines()
        .find(|l| l.contains(NOTE))
        .and_then(|l| {
            l.trim_start_matches(|c: char| !c.is_ascii_digit())
                .split(' ')
                .next()
        })
        .map(|n| n.parse().expect("a count"))
        .unwrap_or(0)
}

/// Change the ConfigMap's `mode` as another field manager would (`kubectl edit`).
fn edit_mode(cluster: &TestCluster, mode: &str) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(cluster.client().await, "app");
        let params = kube::api::PatchParams {
            field_manager: Some("kubectl-edit".into()),
            ..Default::default()
        };
        let patch = json!({"data": {"mode": mode}});
        api.patch("settings", &params, &kube::api::Patch::Merge(&patch))
            .await
            .expect("merge patch");
    });
}

fn applied(cluster: &TestCluster, site: &Path, cache: &Path) {
    let (code, stdout, stderr) = tend_cached(cluster, site, cache, &["apply"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[test]
fn a_no_op_diff_takes_what_the_run_before_found_and_sees_every_change_since() {
    let cluster = TestCluster::start();
    let site = site(&[("app.yaml", SITE)]);
    let cache = tempfile::tempdir().unwrap();
    applied(&cluster, site.path(), cache.path());
    // The first diff reads everything and notes it; the second reads identities only.
    let (code, stdout, stderr) = tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    assert_eq!((code, settled_earlier(&stderr)), (0, 0), "{stdout}{stderr}");
    let (code, stdout, stderr) = tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    assert_eq!((code, settled_earlier(&stderr)), (0, 2), "{stdout}{stderr}");
    assert!(
        stdout.contains("0 to update, 0 to prune, 3 unchanged"),
        "{stdout}"
    );

    // Changed live by someone else: a new resourceVersion, read in full, drift shown.
    edit_mode(&cluster, "debug");
    let (code, stdout, stderr) = tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    assert_eq!((code, settled_earlier(&stderr)), (1, 1), "{stdout}{stderr}");
    assert!(stdout.contains("1 to update"), "{stdout}");
    assert!(stdout.contains("set by kubectl-edit"), "{stdout}");

    // Changed in the repository: the digest differs though the live object did not move.
    applied(&cluster, site.path(), cache.path());
    tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    write_site(
        site.path(),
        &[("app.yaml", &SITE.replace("mode: prod", "mode: canary"))],
    );
    let (code, stdout, stderr) = tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    assert_eq!((code, settled_earlier(&stderr)), (1, 1), "{stdout}{stderr}");
    assert!(stdout.contains("+  mode: canary"), "{stdout}");

    // Deleted and created again as it was: another uid, read in full.
    write_site(site.path(), &[("app.yaml", SITE)]);
    tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    let (_, _, stderr) = tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    assert_eq!(settled_earlier(&stderr), 2, "{stderr}");
    let old = get(&cluster, "", "configmaps", "app", "settings").expect("the ConfigMap");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(cluster.client().await, "app");
        api.delete("settings", &Default::default())
            .await
            .expect("delete");
    });
    let mut again = old.clone();
    again["metadata"]
        .as_object_mut()
        .unwrap()
        .retain(|k, _| k == "name" || k == "namespace" || k == "labels");
    again["data"]["mode"] = json!("stale");
    cluster.seed(again).expect("created again");
    let now = get(&cluster, "", "configmaps", "app", "settings").unwrap();
    assert_ne!(now["metadata"]["uid"], old["metadata"]["uid"]);
    let (code, stdout, stderr) = tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    assert_eq!((code, settled_earlier(&stderr)), (1, 1), "{stdout}{stderr}");
    assert!(stdout.contains("-  mode: stale"), "{stdout}");
}

#[test]
fn what_is_kept_holds_no_content_and_a_damaged_record_costs_only_the_shortcut() {
    let cluster = TestCluster::start();
    let site = site(&[("app.yaml", SITE)]);
    let cache = tempfile::tempdir().unwrap();
    applied(&cluster, site.path(), cache.path());
    tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    let dir = cache.path().join("settled");
    let files: Vec<_> = std::fs::read_dir(&dir).expect("kept").flatten().collect();
    assert_eq!(files.len(), 1, "one file for one cluster and ApplySet");
    let path = files[0].path();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"settings\""), "{text}");
    for secret in ["s3cr3t-t0ken", "czNjcjN0LXQwa2Vu", "prod"] {
        assert!(!text.contains(secret), "{secret} kept: {text}");
    }

    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let (code, stdout, stderr) = tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    assert_eq!((code, settled_earlier(&stderr)), (0, 0), "{stdout}{stderr}");
    assert!(stdout.contains("3 unchanged"), "{stdout}");
    // Written whole again by that run.
    let (code, _, stderr) = tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    assert_eq!((code, settled_earlier(&stderr)), (0, 2), "{stderr}");
    // A no-op run that settled the same versions leaves the file as it was.
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();
    tend_cached(&cluster, site.path(), cache.path(), &["diff"]);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        before
    );

    // A kept record for another cluster's object of the same name is never taken: the uids
    // differ (the file is keyed by how the cluster is reached, here another server).
    let other = TestCluster::start();
    applied(&other, site.path(), cache.path());
    let other_dir_files = std::fs::read_dir(&dir).unwrap().count();
    let (code, _, stderr) = tend_cached(&other, site.path(), cache.path(), &["diff"]);
    assert_eq!((code, settled_earlier(&stderr)), (0, 0), "{stderr}");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        other_dir_files + 1
    );
}

#[test]
fn a_record_copied_to_another_cluster_is_not_taken() {
    // Same names, same desired state, same file (copied over): only the uids differ.
    let (first, second) = (TestCluster::start(), TestCluster::start());
    let site = site(&[("app.yaml", SITE)]);
    let cache = tempfile::tempdir().unwrap();
    for cluster in [&first, &second] {
        applied(cluster, site.path(), cache.path());
        tend_cached(cluster, site.path(), cache.path(), &["diff"]);
    }
    let dir = cache.path().join("settled");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|f| f.path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2);
    let (a, b) = (
        std::fs::read(&files[0]).unwrap(),
        std::fs::read(&files[1]).unwrap(),
    );
    assert_ne!(a, b, "the records name each cluster's own uids");
    std::fs::write(&files[1], &a).unwrap();
    std::fs::write(&files[0], &a).unwrap();
    let taken: Vec<usize> = [&first, &second]
        .iter()
        .map(|cluster| {
            let (code, _, stderr) = tend_cached(cluster, site.path(), cache.path(), &["diff"]);
            assert_eq!(code, 0, "{stderr}");
            settled_earlier(&stderr)
        })
        .collect();
    // The cluster whose records they are takes both; the other takes none.
    let mut sorted = taken.clone();
    sorted.sort();
    assert_eq!(sorted, vec![0, 2], "{taken:?}");
}
