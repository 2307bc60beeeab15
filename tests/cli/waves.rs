//! Waves and hooks (README "Waves and hooks") against the test API server, which runs no controllers: each test
//! plays the Job or Deployment controller through the status subresource while tend runs.

use crate::common::*;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tend_testserver::{RequestRecord, TestCluster, Verb};

const NS: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n";

fn configmap(value: &str, annotations: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: web\n{annotations}data:\n  key: {value}\n")
}

/// A Deployment `web/<name>` with `image`, in `wave` when given, with `annotation` (the wave
/// annotation's key).
fn deployment(name: &str, image: &str, wave: Option<(&str, i64)>) -> String {
    let annotations = match wave {
        Some((key, wave)) => format!("  annotations:\n    {key}: \"{wave}\"\n"),
        None => String::new(),
    };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: web\n{annotations}spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n        - name: app\n          image: {image}\n"
    )
}

/// A hook Job `web/migrate` with the given annotations (`key: value` lines).
fn hook_job(annotations: &[(&str, &str)]) -> String {
    let lines: String = annotations
        .iter()
        .map(|(k, v)| format!("    {k}: \"{v}\"\n"))
        .collect();
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  namespace: web\n  annotations:\n{lines}spec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: migrate\n          image: busybox:1.36\n          command: [sh, -c, 'echo migrating']\n"
    )
}

const JOBS: (&str, &str, &str, &str) = ("batch", "v1", "Job", "jobs");
const DEPLOYMENTS: (&str, &str, &str, &str) = ("apps", "v1", "Deployment", "deployments");

/// Play a controller: once `web/<name>` exists with a uid other than `not_uid`, wait `after`,
/// then merge `status` into its status. Gives up after 15 s.
fn play(
    cluster: &TestCluster,
    resource: (&str, &str, &str, &str),
    name: &str,
    not_uid: Option<String>,
    after: Duration,
    status: Value,
) {
    play_at(cluster, "web", resource, name, not_uid, after, status)
}

/// [`play`] in namespace `ns`, at once.
fn play_in(
    cluster: &TestCluster,
    ns: &str,
    resource: (&str, &str, &str, &str),
    name: &str,
    status: Value,
) {
    play_at(cluster, ns, resource, name, None, Duration::ZERO, status)
}

fn play_at(
    cluster: &TestCluster,
    ns: &str,
    (group, version, kind, plural): (&str, &str, &str, &str),
    name: &str,
    not_uid: Option<String>,
    after: Duration,
    status: Value,
) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let live = cluster.object(group, plural, ns, name);
        let uid = live
            .as_ref()
            .and_then(|l| l["metadata"]["uid"].as_str().map(str::to_string));
        if uid.is_some() && uid != not_uid {
            break;
        }
        if Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(after);
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

fn job_complete() -> Value {
    json!({
        "startTime": "2026-11-25T10:00:00Z",
        "completionTime": "2026-11-25T10:00:05Z",
        "succeeded": 1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
            {"type": "Complete", "status": "True", "reason": "CompletionsReached"},
        ],
    })
}

fn job_failed() -> Value {
    json!({
        "startTime": "2026-11-25T10:00:00Z",
        "failed": 1,
        "conditions": [
            {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
             "message": "Job has reached the specified backoff limit"},
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
             "message": "Job has reached the specified backoff limit"},
        ],
    })
}

/// A Deployment of one replica at `generation`, rolled out.
fn available(generation: i64) -> Value {
    available_with(generation, 1)
}

fn available_with(generation: i64, replicas: i64) -> Value {
    json!({
        "observedGeneration": generation,
        "replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
        ],
    })
}

/// `tend <args>` while `controllers` run alongside.
fn run_while(
    cluster: &TestCluster,
    dir: &std::path::Path,
    args: &[&str],
    controllers: impl FnOnce() + Send,
) -> (i32, String, String) {
    std::thread::scope(|s| {
        s.spawn(controllers);
        tend_on(cluster, dir, args)
    })
}

/// Index of the first request matching `pred` in the log.
fn first(log: &[RequestRecord], pred: impl Fn(&RequestRecord) -> bool) -> Option<usize> {
    log.iter().position(pred)
}

fn written(r: &RequestRecord, resource: &str, name: &str) -> bool {
    is_write(r)
        && r.subresource.is_none()
        && r.resource == resource
        && r.name.as_deref() == Some(name)
}

fn status_written(r: &RequestRecord, resource: &str, name: &str) -> bool {
    r.verb.is_mutating()
        && r.subresource.as_deref() == Some("status")
        && r.resource == resource
        && r.name.as_deref() == Some(name)
}

/// The Namespace and ConfigMap in wave -1, the migration hook and the app in wave 0 (`tend`'s
/// annotations, or Argo CD's).
fn migration_site(argo: bool, image: &str) -> tempfile::TempDir {
    let (wave_key, hook) = match argo {
        false => ("tend.dev/wave", ("tend.dev/hook", "pre-apply")),
        true => (
            "argocd.argoproj.io/sync-wave",
            ("argocd.argoproj.io/hook", "PreSync"),
        ),
    };
    let early = format!("  annotations:\n    {wave_key}: \"-1\"\n");
    site(&[
        (
            "ns.yaml",
            &NS.replace("  name: web\n", &format!("  name: web\n{early}")),
        ),
        ("cm.yaml", &configmap("v1", &early)),
        ("hook.yaml", &hook_job(&[hook])),
        ("app.yaml", &deployment("app", image, None)),
    ])
}

fn pre_apply_hook_runs_before_the_deployment(argo: bool) {
    let cluster = TestCluster::start();
    let dir = migration_site(argo, "app:1");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    for line in [
        "wave -1: 2 to create, 0 to update, 0 unchanged",
        "wave 0: 1 to create, 0 to update, 0 unchanged",
        "hook pre-apply (wave 0) Job web/migrate: would run",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
    // The hook is no object of the plan.
    assert!(!stdout.contains("+ batch/v1 Job"), "{stdout}");

    let (code, stdout, stderr) = run_while(&cluster, dir.path(), &["apply"], || {
        play(
            &cluster,
            JOBS,
            "migrate",
            None,
            Duration::from_millis(300),
            job_complete(),
        )
    });
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("hook pre-apply (wave 0) Job web/migrate: succeeded"),
        "{stdout}"
    );
    let log = cluster.requests();
    let ns = first(&log, |r| written(r, "namespaces", "web")).expect("namespace written");
    let job = first(&log, |r| written(r, "jobs", "migrate")).expect("hook created");
    let done = first(&log, |r| status_written(r, "jobs", "migrate")).expect("hook completed");
    let app = first(&log, |r| written(r, "deployments", "app")).expect("app applied");
    assert!(
        ns < job && job < done && done < app,
        "{ns} {job} {done} {app}"
    );
    // Not an ApplySet member: never pruned, never drift.
    let live = get(&cluster, "batch", "jobs", "web", "migrate").unwrap();
    assert!(live["metadata"]["labels"]
        .get("applyset.kubernetes.io/part-of")
        .is_none());

    // A run with nothing to change runs no hook, and writes nothing.
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("hook pre-apply (wave 0) Job web/migrate: not run (nothing to change)"),
        "{stdout}"
    );
    assert_eq!(object_writes(&cluster), Vec::<String>::new());
    assert_eq!(cluster.count(Verb::Get, "jobs"), 0);

    // A change runs it again: the last run's copy is deleted first, then created anew.
    let old_uid = live["metadata"]["uid"].as_str().map(str::to_string);
    let dir2 = migration_site(argo, "app:2");
    cluster.clear_requests();
    let (code, stdout, stderr) = run_while(&cluster, dir2.path(), &["apply"], || {
        play(
            &cluster,
            JOBS,
            "migrate",
            old_uid,
            Duration::ZERO,
            job_complete(),
        )
    });
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let log = cluster.requests();
    let delete = first(&log, |r| r.verb == Verb::Delete && r.resource == "jobs").expect("delete");
    let create = first(&log, |r| {
        written(r, "jobs", "migrate") && r.verb != Verb::Delete
    });
    let app = first(&log, |r| written(r, "deployments", "app")).expect("app applied");
    assert!(Some(delete) < create && create < Some(app), "{log:#?}");
}

#[test]
fn a_pre_apply_hook_completes_before_the_deployment_applies() {
    pre_apply_hook_runs_before_the_deployment(false);
}

#[test]
fn argo_cd_annotations_behave_like_tends() {
    pre_apply_hook_runs_before_the_deployment(true);
}

/// A first install whose pre-apply hook runs in the Namespace the same run creates, all in
/// wave 0 (issue 32): the Namespace is created first (as `helm install --create-namespace`
/// does), then the hook, then the rest; the next run runs no hook.
#[test]
fn a_first_install_creates_the_namespace_its_pre_apply_hook_runs_in() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS),
        ("cm.yaml", &configmap("v1", "")),
        ("hook.yaml", &hook_job(&[("tend.dev/hook", "pre-apply")])),
        ("app.yaml", &deployment("app", "app:1", None)),
    ]);
    // A dry run runs nothing and says what a real run would do first.
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--dry-run"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout
            .contains("Job web/migrate: not run (--dry-run; Namespace web would be created first)"),
        "{stdout}"
    );
    assert!(cluster.requests().iter().all(|r| !is_write(r)));
    cluster.clear_requests();

    let (code, stdout, stderr) = run_while(&cluster, dir.path(), &["apply"], || {
        play(
            &cluster,
            JOBS,
            "migrate",
            None,
            Duration::from_millis(100),
            job_complete(),
        )
    });
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("hook pre-apply (wave 0) Job web/migrate: succeeded"),
        "{stdout}"
    );
    assert!(
        stderr.contains("creating Namespace web first: pre-apply hooks of wave 0 run in it"),
        "{stderr}"
    );
    let log = cluster.requests();
    let ns = first(&log, |r| written(r, "namespaces", "web")).expect("namespace written");
    let job = first(&log, |r| written(r, "jobs", "migrate")).expect("hook created");
    let done = first(&log, |r| status_written(r, "jobs", "migrate")).expect("hook completed");
    let cm = first(&log, |r| written(r, "configmaps", "app")).expect("config applied");
    let app = first(&log, |r| written(r, "deployments", "app")).expect("app applied");
    assert!(
        ns < job && job < done && done < cm && done < app,
        "{ns} {job} {done} {cm} {app}"
    );
    // Created once, not applied again with the rest of its wave.
    let ns_writes = log
        .iter()
        .filter(|r| written(r, "namespaces", "web") && !r.dry_run)
        .count();
    assert_eq!(ns_writes, 1, "{log:#?}");
    // A member of the ApplySet like any other object of the site.
    let live = get(&cluster, "", "namespaces", "", "web").expect("namespace");
    assert!(live["metadata"]["labels"]
        .get("applyset.kubernetes.io/part-of")
        .is_some());

    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("hook pre-apply (wave 0) Job web/migrate: not run (nothing to change)"),
        "{stdout}"
    );
    assert!(!stderr.contains("creating Namespace"), "{stderr}");
    assert_eq!(object_writes(&cluster), Vec::<String>::new());
}

/// A hook whose pod needs an object the run creates in the hook's own wave (it would wait
/// for it until --timeout) stops the run before any object is written, naming the object
/// and the way out.
#[test]
fn a_hook_needing_an_object_of_its_own_wave_is_a_clear_error() {
    let cluster = TestCluster::start();
    let hook = hook_job(&[("tend.dev/hook", "pre-apply")]).replace(
        "          command:",
        "          envFrom:\n            - configMapRef:\n                name: app\n          command:",
    );
    let dir = site(&[
        ("ns.yaml", NS),
        ("cm.yaml", &configmap("v1", "")),
        ("hook.yaml", &hook),
    ]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let all = format!("{stdout}\n{stderr}");
    assert!(
        all.contains("pre-apply hook Job web/migrate (wave 0) needs ConfigMap web/app (wave 0)"),
        "{all}"
    );
    assert!(all.contains("put them in an earlier wave"), "{all}");
    assert!(get(&cluster, "", "namespaces", "", "web").is_none());
    assert!(get(&cluster, "batch", "jobs", "web", "migrate").is_none());

    // In an earlier wave, the ConfigMap exists when the hook starts.
    let early = "  annotations:\n    tend.dev/wave: \"-1\"\n";
    write_site(
        dir.path(),
        &[
            ("ns.yaml", &format!("{NS}{early}")),
            ("cm.yaml", &configmap("v1", early)),
            ("hook.yaml", &hook),
        ],
    );
    let (code, stdout, stderr) = run_while(&cluster, dir.path(), &["apply"], || {
        play(
            &cluster,
            JOBS,
            "migrate",
            None,
            Duration::ZERO,
            job_complete(),
        )
    });
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(get(&cluster, "", "configmaps", "web", "app").is_some());
}

/// Only the site's own Namespaces are created for hooks: a hook in a namespace the site does
/// not declare fails as the API server says, and nothing else is written.
#[test]
fn no_namespace_is_made_up_for_a_hook() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("hook.yaml", &hook_job(&[("tend.dev/hook", "pre-apply")])),
        (
            "cm.yaml",
            &configmap("v1", "").replace("namespace: web", "namespace: default"),
        ),
    ]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("namespaces \"web\" not found")
            || stderr.contains("namespaces \"web\" not found"),
        "{stdout}\n{stderr}"
    );
    assert!(get(&cluster, "", "namespaces", "", "web").is_none());
    assert!(get(&cluster, "", "configmaps", "default", "app").is_none());
}

#[test]
fn a_failed_hook_changes_nothing_else() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS),
        ("cm.yaml", &configmap("v1", "")),
        ("app.yaml", &deployment("app", "app:1", None)),
    ]);
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    write_site(
        dir.path(),
        &[
            ("ns.yaml", NS),
            ("cm.yaml", &configmap("v2", "")),
            ("app.yaml", &deployment("app", "app:2", None)),
            ("hook.yaml", &hook_job(&[("tend.dev/hook", "pre-apply")])),
        ],
    );
    cluster.clear_requests();
    let (code, stdout, stderr) = run_while(&cluster, dir.path(), &["apply", "-o", "json"], || {
        play(
            &cluster,
            JOBS,
            "migrate",
            None,
            Duration::ZERO,
            job_failed(),
        )
    });
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["hooks"][0]["state"], "failed", "{report:#}");
    assert_eq!(
        report["hooks"][0]["error"],
        "BackoffLimitExceeded: Job has reached the specified backoff limit"
    );
    assert_eq!(report["stoppedAtWave"], 0);
    assert!(report["errors"][0]
        .as_str()
        .unwrap()
        .contains("pre-apply hook Job web/migrate failed: BackoffLimitExceeded"));
    // Only the hook was written: the ConfigMap and the Deployment are as they were.
    let writes = object_writes(&cluster);
    assert!(writes.iter().all(|w| w.contains("/jobs")), "{writes:#?}");
    let app = get(&cluster, "apps", "deployments", "web", "app").unwrap();
    assert_eq!(
        app["spec"]["template"]["spec"]["containers"][0]["image"],
        "app:1"
    );
    let cm = get(&cluster, "", "configmaps", "web", "app").unwrap();
    assert_eq!(cm["data"]["key"], "v1");
}

#[test]
fn wave_1_waits_for_wave_0_to_be_available() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS),
        ("db.yaml", &deployment("db", "postgres:16", None)),
        (
            "app.yaml",
            &deployment("app", "app:1", Some(("tend.dev/wave", 1))),
        ),
    ]);
    let started = Instant::now();
    let (code, stdout, stderr) = run_while(&cluster, dir.path(), &["apply"], || {
        play(
            &cluster,
            DEPLOYMENTS,
            "db",
            None,
            Duration::from_secs(1),
            available(1),
        )
    });
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(started.elapsed() >= Duration::from_secs(1));
    let log = cluster.requests();
    let db = first(&log, |r| written(r, "deployments", "db")).unwrap();
    let ready = first(&log, |r| status_written(r, "deployments", "db")).unwrap();
    let app = first(&log, |r| written(r, "deployments", "app")).unwrap();
    assert!(db < ready && ready < app, "{db} {ready} {app}");
    assert!(stdout.contains("wave 1: 1 to create"), "{stdout}");
}

#[test]
fn a_stalled_wave_stops_the_run_and_leaves_later_waves_untouched() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS),
        ("db.yaml", &deployment("db", "postgres:16", None)),
        (
            "app.yaml",
            &deployment("app", "app:1", Some(("tend.dev/wave", 1))),
        ),
        ("old.yaml", &configmap("v1", "")),
    ]);
    let (code, _, stderr) = run_while(&cluster, dir.path(), &["apply"], || {
        play(
            &cluster,
            DEPLOYMENTS,
            "db",
            None,
            Duration::ZERO,
            available(1),
        )
    });
    assert_eq!(code, 0, "{stderr}");
    // The next commit changes both and drops the ConfigMap; the database never rolls out.
    write_site(
        dir.path(),
        &[
            ("ns.yaml", NS),
            ("db.yaml", &deployment("db", "postgres:17", None)),
            (
                "app.yaml",
                &deployment("app", "app:2", Some(("tend.dev/wave", 1))),
            ),
        ],
    );
    let stalled = json!({
        "observedGeneration": 2,
        "replicas": 2, "updatedReplicas": 1, "unavailableReplicas": 1,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
             "message": "ReplicaSet \"db-5d4f\" has timed out progressing."},
        ],
    });
    let old_uid = None;
    let started = Instant::now();
    let (code, stdout, stderr) =
        run_while(&cluster, dir.path(), &["apply", "--timeout", "30s"], || {
            // Wait for the new generation before stalling it.
            let deadline = Instant::now() + Duration::from_secs(10);
            while get(&cluster, "apps", "deployments", "web", "db")
                .is_some_and(|d| d["metadata"]["generation"] != 2)
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            play(
                &cluster,
                DEPLOYMENTS,
                "db",
                old_uid,
                Duration::ZERO,
                stalled,
            )
        });
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(started.elapsed() < Duration::from_secs(8), "{stderr}");
    let summary = stdout.lines().position(|l| l.contains("to prune")).unwrap();
    let lines: Vec<&str> = stdout.lines().skip(summary + 1).collect();
    assert!(lines[0].starts_with("stopped at wave 0"), "{stdout}");
    assert!(
        lines[1].starts_with("not ready: apps/Deployment web/db: Failed: ProgressDeadlineExceeded"),
        "{stdout}"
    );
    // Wave 1 untouched, nothing pruned.
    let app = get(&cluster, "apps", "deployments", "web", "app").unwrap();
    assert_eq!(
        app["spec"]["template"]["spec"]["containers"][0]["image"],
        "app:1"
    );
    assert!(get(&cluster, "", "configmaps", "web", "app").is_some());
}

#[test]
fn dry_run_runs_no_hook_and_says_so() {
    let cluster = TestCluster::start();
    let dir = migration_site(false, "app:1");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--dry-run"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("hook pre-apply (wave 0) Job web/migrate: not run (--dry-run)"),
        "{stdout}"
    );
    assert!(cluster.requests().iter().all(|r| !is_write(r)));
    let (_, markdown, _) = tend_on(&cluster, dir.path(), &["diff", "-o", "markdown"]);
    assert!(markdown.contains("- wave -1: 2 to create"), "{markdown}");
    let (_, json, _) = tend_on(&cluster, dir.path(), &["diff", "-o", "json"]);
    let report: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        report["waves"][0],
        json!({"wave": -1, "create": 2, "update": 0, "replace": 0, "unchanged": 0})
    );
    assert_eq!(report["hooks"][0]["state"], "would run");
    assert_eq!(report["hooks"][0]["phase"], "pre-apply");
}

#[test]
fn a_bad_wave_is_a_render_error_that_writes_nothing() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS),
        (
            "app.yaml",
            &deployment("app", "app:1", None).replace(
                "  namespace: web\n",
                "  namespace: web\n  annotations:\n    tend.dev/wave: first\n",
            ),
        ),
    ]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("app.yaml:7") && stderr.contains("\"first\" is not an integer"),
        "{stderr}"
    );
    assert!(cluster.requests().iter().all(|r| !is_write(r)));
}

/// The README's "Waves and hooks" section: its commands run as written on examples/migrations,
/// with the controllers played, in the order it describes; its quoted diff is what tend prints.
#[test]
fn the_readme_section_runs_as_written() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = readme
        .split("\n## Waves and hooks\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README has a Waves and hooks section");
    let block = |fence: &str| {
        section
            .split(fence)
            .nth(1)
            .and_then(|b| b.split("```").next())
            .unwrap()
    };
    let commands: Vec<Vec<&str>> = block("```sh\n")
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(commands.len(), 2);
    assert_eq!(
        (commands[0][..2].to_vec(), commands[1][..2].to_vec()),
        (vec!["tend", "diff"], vec!["tend", "apply"])
    );
    let cluster = TestCluster::start();
    let tend_here = |words: &[&str]| {
        run(tend()
            .current_dir(repo_root())
            .args(&words[1..])
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path()))
    };
    let (code, out, err) = tend_here(&commands[0]);
    assert_eq!(code, 1, "{out}\n{err}");
    for line in block("```text\n").lines() {
        assert!(
            out.contains(line),
            "README quotes `{line}`; tend says:\n{out}"
        );
    }
    let (code, out, err) = std::thread::scope(|s| {
        s.spawn(|| play_in(&cluster, "shop", DEPLOYMENTS, "db", available(1)));
        s.spawn(|| play_in(&cluster, "shop", JOBS, "migrate", job_complete()));
        s.spawn(|| play_in(&cluster, "shop", DEPLOYMENTS, "app", available_with(1, 2)));
        s.spawn(|| play_in(&cluster, "shop", JOBS, "smoke-test", job_complete()));
        tend_here(&commands[1])
    });
    assert_eq!(code, 0, "{out}\n{err}");
    let log = cluster.requests();
    let at = |what: &str, pred: &dyn Fn(&RequestRecord) -> bool| {
        first(&log, pred).unwrap_or_else(|| panic!("no request for {what}"))
    };
    let order = [
        at("db", &|r| written(r, "deployments", "db")),
        at("db ready", &|r| status_written(r, "deployments", "db")),
        at("migrate", &|r| written(r, "jobs", "migrate")),
        at("migrate done", &|r| status_written(r, "jobs", "migrate")),
        at("app", &|r| written(r, "deployments", "app")),
        at("app ready", &|r| status_written(r, "deployments", "app")),
        at("smoke-test", &|r| written(r, "jobs", "smoke-test")),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    // The smoke test is deleted once it succeeded; the migration stays for inspection.
    assert!(get(&cluster, "batch", "jobs", "shop", "smoke-test").is_none());
    assert!(get(&cluster, "batch", "jobs", "shop", "migrate").is_some());
    assert!(
        out.contains("hook post-apply (wave 0) Job shop/smoke-test: succeeded"),
        "{out}"
    );
}

/// Waves cost what they must and nothing more: a no-op run of a site with waves makes the
/// requests of the same site without them plus one readiness poll (a LIST per kind and
/// namespace) of each wave that has a later one; a site without waves takes the path it
/// took before waves existed.
#[test]
fn a_no_op_run_costs_one_readiness_poll_per_wave() {
    let no_op_counts = |files: &[(&str, &str)]| {
        let cluster = TestCluster::start();
        let dir = site(files);
        let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
        assert_eq!(code, 0, "{stderr}");
        cluster.clear_requests();
        let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stdout.contains("0 to create, 0 to update, 0 to prune, 3 unchanged"),
            "{stdout}"
        );
        assert_eq!(object_writes(&cluster), Vec::<String>::new());
        cluster.counts()
    };
    let plain = no_op_counts(&[
        ("ns.yaml", NS),
        ("cm.yaml", &configmap("v1", "")),
        ("app.yaml", &deployment("app", "app:1", None)),
    ]);
    let waves = no_op_counts(&[
        ("ns.yaml", NS),
        ("cm.yaml", &configmap("v1", "")),
        (
            "app.yaml",
            &deployment("app", "app:1", Some(("tend.dev/wave", 1))),
        ),
    ]);
    let mut extra = waves.clone();
    for (key, n) in &plain {
        let left = extra.get(key).copied().unwrap_or(0);
        assert!(left >= *n, "{key:?}: {left} with waves, {n} without");
        extra.insert(key.clone(), left - n);
    }
    extra.retain(|_, n| *n > 0);
    let expected = [
        ((Verb::List, "configmaps".to_string()), 1),
        ((Verb::List, "namespaces".to_string()), 1),
    ];
    assert_eq!(extra, expected.into_iter().collect(), "{waves:#?}");
}

/// A Job applied as an ordinary member and then annotated as a hook is run as a hook
/// (recreated) and kept: the prune that follows must not delete the hook it just ran.
#[test]
fn a_member_that_becomes_a_hook_is_not_pruned() {
    let cluster = TestCluster::start();
    let plain_job = hook_job(&[("example.com/owner", "db-team")]);
    let dir = site(&[
        ("ns.yaml", NS),
        ("cm.yaml", &configmap("v1", "")),
        ("job.yaml", &plain_job),
    ]);
    let (code, _, stderr) = run_while(&cluster, dir.path(), &["apply"], || {});
    assert_eq!(code, 0, "{stderr}");
    let member = get(&cluster, "batch", "jobs", "web", "migrate").unwrap();
    let old_uid = member["metadata"]["uid"].as_str().map(str::to_string);
    assert!(
        member["metadata"]["labels"]["applyset.kubernetes.io/part-of"].is_string(),
        "{member}"
    );
    write_site(
        dir.path(),
        &[
            ("ns.yaml", NS),
            ("cm.yaml", &configmap("v2", "")),
            ("job.yaml", &hook_job(&[("tend.dev/hook", "pre-apply")])),
        ],
    );
    let (code, stdout, stderr) = run_while(&cluster, dir.path(), &["apply"], || {
        play(
            &cluster,
            JOBS,
            "migrate",
            old_uid.clone(),
            Duration::ZERO,
            job_complete(),
        )
    });
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let hook = get(&cluster, "batch", "jobs", "web", "migrate").expect("the hook Job is kept");
    assert_ne!(
        hook["metadata"]["uid"].as_str().map(str::to_string),
        old_uid,
        "the hook was recreated"
    );
    assert!(
        hook["metadata"]["labels"]["applyset.kubernetes.io/part-of"].is_null(),
        "{hook}"
    );
    assert!(stdout.contains("hooks are never pruned"), "{stdout}");
}

/// Argo CD makes a hook of any kind: a PreSync ServiceAccount and its RBAC for the PreSync
/// Job that runs as it (christianh814/gitops-examples' poor-mans-syncwave). They run in
/// Argo CD's kind order within the wave, before the Job, and are no ApplySet members.
#[test]
fn argo_cd_hooks_of_any_kind_run_before_the_job_that_needs_them() {
    let cluster = TestCluster::start();
    let presync = "  annotations:\n    argocd.argoproj.io/hook: PreSync\n";
    let job = hook_job(&[("argocd.argoproj.io/hook", "PreSync")]).replace(
        "      restartPolicy: Never\n",
        "      restartPolicy: Never\n      serviceAccountName: migrator\n",
    );
    let dir = site(&[
        ("ns.yaml", NS),
        ("sa.yaml", &format!("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: migrator\n  namespace: web\n{presync}")),
        ("rbac.yaml", &format!("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: migrator\n{presync}rules:\n  - apiGroups: [\"\"]\n    resources: [pods]\n    verbs: [get]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: migrator\n{presync}roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: migrator\nsubjects:\n  - kind: ServiceAccount\n    name: migrator\n    namespace: web\n")),
        ("hook.yaml", &job),
        ("app.yaml", &deployment("app", "app:1", None)),
    ]);
    let (code, stdout, stderr) = run_while(&cluster, dir.path(), &["apply"], || {
        play(
            &cluster,
            JOBS,
            "migrate",
            None,
            Duration::from_millis(300),
            job_complete(),
        )
    });
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    for line in [
        "hook pre-apply (wave 0) ServiceAccount web/migrator: succeeded",
        "hook pre-apply (wave 0) Job web/migrate: succeeded",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
    let log = cluster.requests();
    let sa =
        first(&log, |r| written(r, "serviceaccounts", "migrator")).expect("the ServiceAccount");
    let binding =
        first(&log, |r| written(r, "clusterrolebindings", "migrator")).expect("the binding");
    let job = first(&log, |r| written(r, "jobs", "migrate")).expect("the Job");
    let app = first(&log, |r| written(r, "deployments", "app")).expect("the app");
    assert!(
        sa < job && binding < job && job < app,
        "{sa} {binding} {job} {app}"
    );
    let live = get(&cluster, "", "serviceaccounts", "web", "migrator").unwrap();
    assert!(
        live["metadata"]
            .get("labels")
            .and_then(|l| l.get("applyset.kubernetes.io/part-of"))
            .is_none(),
        "{live}"
    );
    // tend's own hooks stay Jobs and Pods.
    let own = site(&[("sa.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: x\n  namespace: web\n  annotations:\n    tend.dev/hook: pre-apply\n")]);
    let (code, _, stderr) = run(tend().args(["render", "--repo"]).arg(own.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("only a Job (batch/v1) or a Pod (v1) can be a hook"),
        "{stderr}"
    );
}
