//! Stopping cleanly and riding out outages (README "Signals" and "Outages"; issue 20): SIGTERM
//! mid-apply, a second signal, an apiserver stopped and restarted on the same port, a spent
//! retry budget, a 429 storm as API Priority and Fairness sends it, a dead holder's lock, and
//! the `-v` request lines. Figures are printed (`-- --nocapture`) for RELIABILITY.md.

use crate::common::*;
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tend_testserver::{Fault, TestCluster, Verb};

const INTERRUPTED: &str = "tend.dev/interrupted";

/// A site of `n` ConfigMaps in two namespaces.
fn many_configmaps(n: usize) -> tempfile::TempDir {
    let mut files = vec![(
        "ns.yaml".to_string(),
        format!("{}---\n{}", ns_yaml("out-a"), ns_yaml("out-b")),
    )];
    for i in 0..n {
        let ns = if i % 2 == 0 { "out-a" } else { "out-b" };
        files.push((
            format!("cm-{i}.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: {ns}\ndata:\n  n: \"{i}\"\n"),
        ));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    site(&files)
}

/// The `tend` binary as a child process with a clean environment plus `env`.
fn spawn(
    cluster: &TestCluster,
    dir: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Child {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("tend"));
    for (key, _) in std::env::vars() {
        if key.starts_with("TEND_") || key == "KUBECONFIG" {
            cmd.env_remove(key);
        }
    }
    cmd.env("TEND_COLOR", "never")
        .envs(env.iter().copied())
        .args(args)
        .arg("--repo")
        .arg(dir)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, name: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{name}");
}

fn finish(child: Child) -> (Option<i32>, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// ConfigMap applies the server answered (not dry runs).
fn applied(cluster: &TestCluster) -> usize {
    cluster
        .requests()
        .iter()
        .filter(|r| {
            r.verb == Verb::Apply
                && r.resource == "configmaps"
                && !r.dry_run
                && r.status.is_some_and(|s| s < 300)
        })
        .count()
}

fn wait_until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn lease(cluster: &TestCluster) -> Option<Value> {
    cluster.object("coordination.k8s.io", "leases", "tend-system", "tend-lock")
}

fn lock_free(cluster: &TestCluster) -> bool {
    lease(cluster).is_none_or(|l| {
        l["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or("")
            .is_empty()
    })
}

fn parent_annotation(cluster: &TestCluster, name: &str) -> Option<String> {
    let parent = cluster.object("", "secrets", "tend-system", "tend")?;
    parent["metadata"]["annotations"][name]
        .as_str()
        .map(str::to_string)
}

/// Every desired object once in the JSON report, none failed.
fn each_object_once(report: &str, n: usize) {
    let report: Value = serde_json::from_str(report).expect("a JSON report");
    let objects = report["objects"].as_array().expect("objects");
    let mut names: Vec<&str> = objects.iter().filter_map(|o| o["name"].as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "an object is in the report twice");
    assert_eq!(names.len(), n + 2, "every ConfigMap and both namespaces");
    assert_eq!(report["summary"]["failed"], json!(0), "{report}");
    assert!(objects.iter().all(|o| o["error"].is_null()));
}

/// Every server-side apply of a ConfigMap takes `delay`: a run is still writing when a test
/// signals it or spends its retry budget.
fn slow_config_map_applies(cluster: &TestCluster, delay: Duration) {
    cluster.inject(
        Fault::delay(delay)
            .verb(Verb::Apply)
            .path_contains("/configmaps/")
            .always(),
    );
}

#[test]
fn sigterm_mid_apply_stops_cleanly_and_the_next_run_converges() {
    let cluster = TestCluster::start();
    let dir = many_configmaps(200);
    // Slow writes, so the signal lands while the ConfigMaps are being applied.
    slow_config_map_applies(&cluster, Duration::from_millis(150));
    let child = spawn(&cluster, dir.path(), &["apply", "-o", "json"], &[]);
    wait_until("the first ConfigMaps", Duration::from_secs(30), || {
        applied(&cluster) >= 20
    });
    let at_signal = applied(&cluster);
    let signalled = Instant::now();
    signal(&child, "TERM");
    let (code, stdout, stderr) = finish(child);
    let stopped_in = signalled.elapsed();
    println!(
        "SIGTERM mid-apply: exit {code:?} {:.1} s after the signal",
        stopped_in.as_secs_f64()
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stopped_in < Duration::from_secs(5), "{stopped_in:?}");
    assert!(
        lock_free(&cluster),
        "the lock is released: {:?}",
        lease(&cluster)
    );
    let done = applied(&cluster);
    assert!(done < 200, "the run stopped early ({done} applied)");
    let record = parent_annotation(&cluster, INTERRUPTED).expect("the parent records the stop");
    assert!(
        record.starts_with("the run was stopped by SIGTERM: "),
        "{record}"
    );
    assert!(record.contains(" not started"), "{record}");
    assert!(
        stderr.contains("error: the run was stopped by SIGTERM"),
        "{stderr}"
    );
    // The report is printed as usual, the stop as its run error.
    let report: Value = serde_json::from_str(&stdout).expect("a JSON report");
    assert!(
        report["errors"].to_string().contains("stopped by SIGTERM"),
        "{report}"
    );
    // What the run says it did is what the cluster holds: every object reported as not
    // started really was not written.
    let report_done = report["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter(|o| o["kind"] == "ConfigMap" && o["error"].is_null())
        .count();
    let live = cluster
        .objects("", "configmaps")
        .iter()
        .filter(|c| {
            c["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("cm-"))
        })
        .count();
    assert_eq!(
        live, report_done,
        "{at_signal} applied at the signal, {done} in the end"
    );
    assert_eq!(done, report_done);
    println!("  {record}");

    cluster.clear_faults();
    let started = Instant::now();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    println!(
        "  next run: exit {code} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not held up by the lock"
    );
    assert_eq!(
        parent_annotation(&cluster, INTERRUPTED),
        None,
        "a finished run clears it"
    );
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn a_second_signal_exits_at_once() {
    let cluster = TestCluster::start();
    let dir = many_configmaps(40);
    slow_config_map_applies(&cluster, Duration::from_secs(4));
    let child = spawn(&cluster, dir.path(), &["apply"], &[]);
    wait_until("the lock", Duration::from_secs(30), || !lock_free(&cluster));
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, "INT");
    std::thread::sleep(Duration::from_millis(200));
    let second = Instant::now();
    signal(&child, "TERM");
    let (code, _, stderr) = finish(child);
    println!(
        "second signal: exit {code:?} {:.2} s after it",
        second.elapsed().as_secs_f64()
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        second.elapsed() < Duration::from_secs(1),
        "{:?}",
        second.elapsed()
    );
    assert!(
        stderr.contains("SIGTERM again: exiting at once"),
        "{stderr}"
    );
}

#[test]
fn diff_stops_at_once_on_sigterm() {
    let cluster = TestCluster::start();
    let dir = many_configmaps(4);
    cluster.inject(
        Fault::delay(Duration::from_secs(20))
            .verb(Verb::List)
            .always(),
    );
    let child = spawn(&cluster, dir.path(), &["diff"], &[]);
    std::thread::sleep(Duration::from_millis(700));
    let signalled = Instant::now();
    signal(&child, "TERM");
    let (code, _, _) = finish(child);
    assert_eq!(code, None, "ended by the signal");
    assert!(signalled.elapsed() < Duration::from_secs(1));
}

#[test]
fn an_apiserver_restart_mid_apply_fails_nothing() {
    let cluster = TestCluster::start();
    let dir = many_configmaps(200);
    slow_config_map_applies(&cluster, Duration::from_millis(60));
    let started = Instant::now();
    let child = spawn(&cluster, dir.path(), &["apply", "-o", "json", "-v"], &[]);
    wait_until("the first ConfigMaps", Duration::from_secs(30), || {
        applied(&cluster) >= 30
    });
    cluster.stop();
    let down = Instant::now();
    std::thread::sleep(Duration::from_secs(5));
    cluster.restart();
    println!("apiserver down for {:.1} s", down.elapsed().as_secs_f64());
    let (code, stdout, stderr) = finish(child);
    println!(
        "restart mid-apply: exit {code:?} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        code,
        Some(0),
        "{}",
        stderr
            .lines()
            .filter(|l| !l.starts_with("debug:"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    each_object_once(&stdout, 200);
    assert!(
        stderr.contains("connection refused"),
        "the outage is in the -v lines"
    );
    assert!(
        stderr.contains("of the run's retry budget left"),
        "retries are logged"
    );
    assert!(!stderr.lines().any(|l| l.starts_with("error:")));
    assert!(lock_free(&cluster));
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn a_spent_retry_budget_fails_every_object_quickly() {
    let cluster = TestCluster::start();
    let dir = many_configmaps(200);
    slow_config_map_applies(&cluster, Duration::from_millis(60));
    let child = spawn(
        &cluster,
        dir.path(),
        &["apply", "--retry-timeout", "2s"],
        &[],
    );
    wait_until("the first ConfigMaps", Duration::from_secs(30), || {
        applied(&cluster) >= 30
    });
    let down = Instant::now();
    cluster.stop();
    let (code, stdout, stderr) = finish(child);
    let failed_in = down.elapsed();
    println!(
        "server gone, --retry-timeout 2s: exit {code:?} {:.1} s after it stopped",
        failed_in.as_secs_f64()
    );
    assert_eq!(code, Some(2));
    // One budget for the whole run: 170 objects do not each wait 2 s.
    assert!(failed_in < Duration::from_secs(8), "{failed_in:?}");
    assert!(
        stderr.contains("the API server did not answer (connection refused); no retry left: the run's retry budget (--retry-timeout 2s) is spent"),
        "{stderr}"
    );
    assert!(stdout.contains("failed"), "{stdout}");
}

#[test]
fn a_429_storm_is_waited_out_as_told() {
    let cluster = TestCluster::start();
    let dir = many_configmaps(20);
    cluster.inject(
        Fault::throttle(1)
            .verb(Verb::Apply)
            .path_contains("/configmaps/")
            .times(30),
    );
    let started = Instant::now();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "-o", "json", "-v"]);
    let took = started.elapsed();
    let throttled = cluster
        .requests()
        .iter()
        .filter(|r| r.status == Some(429))
        .count();
    println!(
        "429 storm ({throttled} answered 429, Retry-After: 1): exit {code} in {:.1} s",
        took.as_secs_f64()
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(throttled, 30);
    assert!(took >= Duration::from_secs(1), "Retry-After is honoured");
    each_object_once(&stdout, 20);
    assert!(stderr.contains("429 Too Many Requests in "), "{stderr}");
    assert!(stderr.contains("retry 1 in 1000 ms"), "{stderr}");
}

#[test]
fn each_request_is_one_line_at_v() {
    let cluster = TestCluster::start();
    let dir = many_configmaps(2);
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply", "-v"]);
    assert_eq!(code, 0, "{stderr}");
    let url = cluster.url();
    let line = stderr
        .lines()
        .find(|l| l.contains("/api/v1/namespaces/out-a/configmaps/cm-0?"))
        .expect("the apply of cm-0 is logged");
    let pattern = format!("debug: PATCH {url}/api/v1/namespaces/out-a/configmaps/cm-0?");
    assert!(line.starts_with(&pattern), "{line}");
    assert!(
        line.contains(" 201 Created in ") || line.contains(" 200 OK in "),
        "{line}"
    );
    assert!(line.ends_with(" ms"), "{line}");
    assert!(
        stderr.contains(&format!(
            "debug: GET {url}/api/v1/namespaces/tend-system/secrets/tend 404 Not Found in "
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("tend-testserver-token"), "no tokens");
    assert!(!stderr.contains("\"n\":"), "no bodies");
}

fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A Lease held now (renewed this second) by `holder`.
fn held_lease(cluster: &TestCluster, holder: &str) {
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tend-system"}}))
        .unwrap();
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    cluster
        .seed(json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "tend-lock", "namespace": "tend-system"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 60, "acquireTime": now, "renewTime": now}
        }))
        .unwrap();
}

#[test]
fn a_dead_holders_lock_on_this_host_is_taken_over_at_once() {
    let cluster = TestCluster::start();
    let dir = many_configmaps(2);
    held_lease(&cluster, &format!("ci-runner-7/pid-{}", dead_pid()));
    let started = Instant::now();
    let (code, _, stderr) = run(tend()
        .env("HOSTNAME", "ci-runner-7")
        .args(["apply", "--lock-timeout", "30s", "--repo"])
        .arg(dir.path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    println!(
        "dead holder on this host: exit {code} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        stderr
            .contains("warning: taking over the lock tend-system/tend-lock from ci-runner-7/pid-"),
        "{stderr}"
    );
    assert!(
        stderr.contains("that process no longer runs on this host"),
        "{stderr}"
    );
    assert!(lock_free(&cluster));
}

#[test]
fn a_holder_on_another_host_is_waited_for() {
    let cluster = TestCluster::start();
    let dir = many_configmaps(2);
    held_lease(&cluster, &format!("elsewhere/pid-{}", dead_pid()));
    let (code, _, stderr) = run(tend()
        .env("HOSTNAME", "ci-runner-7")
        .args(["apply", "--lock-timeout", "1s", "--repo"])
        .arg(dir.path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "another tend run holds the lock tend-system/tend-lock: holder elsewhere/pid-"
        ),
        "{stderr}"
    );
}

#[test]
fn a_restarting_servers_503s_are_ridden_out() {
    let cluster = TestCluster::start();
    let dir = many_configmaps(20);
    cluster.inject(
        Fault::status(503)
            .message("the server is currently unable to handle the request")
            .verb(Verb::Apply)
            .path_contains("/configmaps/")
            .times(25),
    );
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "-o", "json"]);
    let unavailable = cluster
        .requests()
        .iter()
        .filter(|r| r.status == Some(503))
        .count();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(unavailable, 25);
    each_object_once(&stdout, 20);
}
