//! Shared helpers: a `tend` command with a clean environment, paths, temp copies.

use assert_cmd::Command;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use tend_testserver::{RequestRecord, TestCluster};

/// The `tend` binary with every `TEND_*` variable removed, so the developer's environment
/// cannot change a test's outcome, and a private cache dir.
pub fn tend() -> Command {
    let mut cmd = Command::cargo_bin("tend").expect("tend binary");
    for (key, _) in std::env::vars() {
        if key.starts_with("TEND_") || key == "KUBECONFIG" || key == "NO_COLOR" {
            cmd.env_remove(key);
        }
    }
    cmd.env("TEND_COLOR", "never");
    cmd
}

/// A fresh directory for a command's HOME or XDG directories. Kept past the call (the
/// command outlives it), under the build's own scratch directory rather than /tmp, so that
/// `cargo clean` removes them.
pub fn scratch_home() -> PathBuf {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
        .keep()
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn example_site() -> PathBuf {
    repo_root().join("examples/site")
}

pub fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(name)
}

/// Copy a directory tree (files and directories; symlinks copied as links).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Run a command, returning (exit code, stdout, stderr).
pub fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("run tend");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Parse a YAML stream of objects (as `tend render` prints) into JSON values.
pub fn parse_stream(text: &str) -> Vec<serde_json::Value> {
    let mut chunks = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            chunks.push(String::new());
        } else if let Some(last) = chunks.last_mut() {
            last.push_str(line);
        }
    }
    chunks
        .iter()
        .filter(|chunk| {
            chunk
                .lines()
                .any(|l| !l.trim().is_empty() && !l.starts_with('#'))
        })
        .map(|chunk| serde_yaml::from_str::<serde_json::Value>(chunk).expect("valid yaml document"))
        .collect()
}

/// `kind namespace/name` of each object.
pub fn ids(objects: &[serde_json::Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            format!(
                "{} {}/{}",
                o["kind"].as_str().unwrap_or(""),
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// A desired-state directory with the given files.
pub fn site(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_site(dir.path(), files);
    dir
}

pub fn write_site(dir: &Path, files: &[(&str, &str)]) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            std::fs::remove_dir_all(path).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
    }
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// `tend <args> --repo <dir> --kubeconfig <cluster>`.
pub fn tend_on(cluster: &TestCluster, dir: &Path, args: &[&str]) -> (i32, String, String) {
    run(tend()
        .args(args)
        .arg("--repo")
        .arg(dir)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()))
}

pub fn get(
    cluster: &TestCluster,
    group: &str,
    resource: &str,
    ns: &str,
    name: &str,
) -> Option<Value> {
    cluster.object(group, resource, ns, name)
}

/// Mutating requests (dry runs marked) other than tend's own bookkeeping (the lock Lease and
/// the ApplySet parent).
pub fn object_writes(cluster: &TestCluster) -> Vec<String> {
    cluster
        .requests()
        .into_iter()
        .filter(|r| r.verb.is_mutating() && r.resource != "selfsubjectaccessreviews")
        .filter(|r| !is_bookkeeping(r))
        .map(|r| {
            format!(
                "{} {}{}",
                r.method,
                r.path,
                if r.dry_run { " (dry run)" } else { "" }
            )
        })
        .collect()
}

/// Whether a logged request changes what the server stores: a mutating verb that is not a
/// dry run. Asking what one may do (SelfSubjectAccessReview) is a POST that stores nothing.
pub fn is_write(r: &RequestRecord) -> bool {
    r.verb.is_mutating() && !r.dry_run && r.resource != "selfsubjectaccessreviews"
}

/// tend's own bookkeeping: the lock Lease and the ApplySet parent in tend-system.
pub fn is_bookkeeping(r: &RequestRecord) -> bool {
    r.resource == "leases"
        || (r.resource == "secrets" && r.namespace.as_deref() == Some("tend-system"))
}

/// Every write (bookkeeping included), as `METHOD path`.
pub fn writes(cluster: &TestCluster) -> Vec<String> {
    cluster
        .requests()
        .into_iter()
        .filter(is_write)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

/// A Namespace manifest.
pub fn ns_yaml(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n")
}

/// A Deployment `web/<name>` with `replicas`, selecting and labelling pods `app: <app>`.
pub fn deployment_yaml(name: &str, replicas: u32, app: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: {app}}}\n  template:\n    metadata:\n      labels: {{app: {app}}}\n    spec:\n      containers:\n        - name: app\n          image: nginx:1.27\n"
    )
}

/// JSON merge patch Deployment `web/<name>` as field manager `manager` (as `kubectl patch`
/// does), so its managedFields name that manager as the writer of the patched fields.
pub fn merge_patch_as(cluster: &TestCluster, manager: &str, name: &str, patch: Value) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let api: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
            kube::Api::namespaced(cluster.client().await, "web");
        let params = kube::api::PatchParams {
            field_manager: Some(manager.to_string()),
            ..Default::default()
        };
        api.patch(name, &params, &kube::api::Patch::Merge(&patch))
            .await
            .expect("merge patch");
    });
}

/// Commit everything in the work tree of `repo` and return the commit id.
pub fn commit_all(repo: &git2::Repository, message: &str) -> git2::Oid {
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("Test", "test@example.com").unwrap();
    let parents: Vec<git2::Commit> = repo
        .head()
        .ok()
        .and_then(|h| h.peel_to_commit().ok())
        .into_iter()
        .collect();
    let parent_refs: Vec<&git2::Commit> = parents.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parent_refs)
        .unwrap()
}

/// Runs `f` while playing the controllers the test API server does not run: every
/// Deployment rolled out and every Job complete as soon as they appear (tend waits for them
/// between the waves `dependsOn` makes, and for Helm's hook Jobs).
pub fn with_controllers_played<T>(cluster: &TestCluster, f: impl FnOnce() -> T) -> T {
    with_statuses_played(cluster, played_status, f)
}

/// Runs `f` while every Deployment and Job gets the status `played` gives it (by kind).
pub fn with_statuses_played<T>(
    cluster: &TestCluster,
    played: fn(&str, &Value) -> Option<Value>,
    f: impl FnOnce() -> T,
) -> T {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let client = runtime.block_on(cluster.client());
            while !stop.load(Ordering::Relaxed) {
                for (group, version, kind, plural) in [
                    ("apps", "v1", "Deployment", "deployments"),
                    ("batch", "v1", "Job", "jobs"),
                ] {
                    for object in cluster.objects(group, plural) {
                        if let Some(status) = played(kind, &object) {
                            runtime.block_on(patch_status(
                                &client,
                                (group, version, kind, plural),
                                &object,
                                status,
                            ));
                        }
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let result = f();
        stop.store(true, Ordering::Relaxed);
        result
    })
}

/// The status a controller would give `object`, when it has none for its generation yet.
pub fn played_status(kind: &str, object: &serde_json::Value) -> Option<serde_json::Value> {
    match kind {
        "Deployment"
            if object["status"]["observedGeneration"] != object["metadata"]["generation"]
                || object["status"]["availableReplicas"]
                    != json!(object["spec"]["replicas"].as_i64().unwrap_or(1)) =>
        {
            let replicas = object["spec"]["replicas"].as_i64().unwrap_or(1);
            Some(json!({
                "observedGeneration": object["metadata"]["generation"],
                "replicas": replicas, "updatedReplicas": replicas,
                "readyReplicas": replicas, "availableReplicas": replicas,
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
                ],
            }))
        }
        "Job" if object["status"]["succeeded"].is_null() => Some(json!({
            "startTime": "2026-11-25T10:00:00Z",
            "completionTime": "2026-11-25T10:00:05Z",
            "succeeded": 1,
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
                {"type": "Complete", "status": "True", "reason": "CompletionsReached"},
            ],
        })),
        _ => None,
    }
}

async fn patch_status(
    client: &kube::Client,
    (group, version, kind, plural): (&str, &str, &str, &str),
    object: &serde_json::Value,
    status: serde_json::Value,
) {
    use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
    let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
    let patch = json!({ "status": status });
    // A write racing tend's (a recreated hook) is played again on the next pass.
    let _ = api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await;
}
