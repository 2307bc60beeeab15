//! A fleet of clusters in one run (issue 36, README "A fleet of clusters"): three test API
//! servers as three kubeconfig contexts (or a Fleet file), one of them down; every report
//! format, the HTML report in a real headless browser, `tend status`, and metrics to a file
//! and to a Pushgateway.

use crate::common::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use tend_testserver::TestCluster;

const CANARY: &str = "canary-fleet-7c41";
const HOSTILE: &str = "<script>alert(1)</script>";

/// The site: a ConfigMap everyone gets (with a hostile annotation), one only cluster `b`
/// gets, and a Secret whose value must never be printed.
fn fleet_site() -> tempfile::TempDir {
    site(&[(
        "app.yaml",
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n  annotations:\n    note: \"{HOSTILE}\"\ndata:\n  mode: \"{HOSTILE}\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: only-b\n  namespace: default\n  annotations:\n    tend.dev/clusters: b\ndata:\n  x: \"1\"\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: default\nstringData:\n  password: {CANARY}\n"
        ),
    )])
}

/// A kubeconfig with one context per `(name, server URL)`.
pub fn kubeconfig(dir: &Path, servers: &[(&str, String)]) -> PathBuf {
    let mut text = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
    for (name, url) in servers {
        text.push_str(&format!("- name: {name}\n  cluster:\n    server: {url}\n"));
    }
    text.push_str("users:\n- name: u\n  user:\n    token: t\ncontexts:\n");
    for (name, _) in servers {
        text.push_str(&format!(
            "- name: {name}\n  context:\n    cluster: {name}\n    user: u\n"
        ));
    }
    text.push_str(&format!("current-context: {}\n", servers[0].0));
    let path = dir.join("kubeconfig");
    std::fs::write(&path, text).unwrap();
    path
}

struct Fleet {
    a: TestCluster,
    b: TestCluster,
    c: TestCluster,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

/// Three servers; `c` is stopped (its port refuses connections).
fn fleet_with_c_down() -> Fleet {
    let (a, b, c) = (
        TestCluster::start(),
        TestCluster::start(),
        TestCluster::start(),
    );
    c.stop();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(
        dir.path(),
        &[("a", a.url()), ("b", b.url()), ("c", c.url())],
    );
    Fleet {
        a,
        b,
        c,
        dir,
        kubeconfig,
    }
}

fn tend_fleet(fleet: &Fleet, site: &Path, args: &[&str]) -> (i32, String, String) {
    run(tend()
        .args(args)
        .arg("--repo")
        .arg(site)
        .arg("--kubeconfig")
        .arg(&fleet.kubeconfig)
        .args(["--retry-timeout", "1s"]))
}

fn configmaps(cluster: &TestCluster) -> Vec<String> {
    let mut names: Vec<String> = cluster
        .objects("", "configmaps")
        .iter()
        .filter(|o| o["metadata"]["namespace"] == "default")
        .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string())
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    names.sort();
    names
}

fn assert_no_canary(out: &str) {
    assert!(!out.contains(CANARY), "secret value printed:\n{out}");
}

#[test]
fn a_fleet_converges_where_it_can_and_every_report_says_what_happened_where() {
    let fleet = fleet_with_c_down();
    let site = fleet_site();
    let contexts = ["--context", "a", "--context", "b", "--context", "c"];

    // diff -o json: one document, a report per cluster that ran, the error of the one down.
    let args: Vec<&str> = ["diff", "-o", "json"]
        .iter()
        .chain(&contexts)
        .copied()
        .collect();
    let (code, stdout, stderr) = tend_fleet(&fleet, site.path(), &args);
    assert_eq!(code, 2, "the worst of differences and an error: {stderr}");
    assert_no_canary(&stdout);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["fleetSchemaVersion"], 1);
    assert_eq!(doc["command"], "diff");
    let clusters = doc["clusters"].as_array().unwrap();
    let names: Vec<&str> = clusters
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(clusters[0]["result"], "differences");
    assert_eq!(clusters[0]["report"]["summary"]["create"], 2);
    assert_eq!(clusters[0]["report"]["cluster"], "a");
    // The cluster's name is its name for targeting: only b gets only-b.
    assert_eq!(clusters[1]["report"]["summary"]["create"], 3);
    assert_eq!(clusters[2]["result"], "error");
    assert_eq!(clusters[2]["report"], Value::Null);
    assert!(
        clusters[2]["error"]
            .as_str()
            .unwrap()
            .contains("onnection refused"),
        "{}",
        clusters[2]["error"]
    );
    // Nothing written by a diff.
    assert!(configmaps(&fleet.a).is_empty());

    // apply, text: a section per cluster, a table, exit 2 for the one down; a and b converge.
    let html = fleet.dir.path().join("report.html");
    let metrics = fleet.dir.path().join("tend.prom");
    let mut args: Vec<&str> = vec!["apply"];
    args.extend(contexts);
    let html_arg = html.to_str().unwrap();
    let metrics_arg = metrics.to_str().unwrap();
    args.extend(["--report-html", html_arg, "--metrics-file", metrics_arg]);
    let (code, stdout, stderr) = tend_fleet(&fleet, site.path(), &args);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert_no_canary(&stdout);
    assert!(
        stdout.starts_with("== cluster a: applied ==\n+ v1 ConfigMap default/app"),
        "{stdout}"
    );
    assert!(stdout.contains("== cluster b: applied ==\n"), "{stdout}");
    assert!(
        stdout.contains("== cluster c: error ==\nerror: "),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("3 clusters: 2 applied, 1 error\n"),
        "{stdout}"
    );
    let row = stdout.lines().find(|l| l.starts_with("b  ")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[..4], ["b", "applied", "3", "0"], "{row}");
    assert_eq!(configmaps(&fleet.a), ["app"]);
    assert_eq!(configmaps(&fleet.b), ["app", "only-b"]);
    let _ = &fleet.c;

    // The metrics file: success per cluster, objects by result, a last success for a and b.
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert!(
        text.contains("tend_run_success{cluster=\"a\",applyset=\"tend\",command=\"apply\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("tend_run_success{cluster=\"c\",applyset=\"tend\",command=\"apply\"} 0\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "tend_objects{cluster=\"b\",applyset=\"tend\",command=\"apply\",result=\"create\"} 3\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("tend_last_success_timestamp_seconds{cluster=\"a\","),
        "{text}"
    );
    assert!(
        !text.contains("tend_last_success_timestamp_seconds{cluster=\"c\","),
        "{text}"
    );

    // The HTML report: escaped, masked, in a browser.
    let page = std::fs::read_to_string(&html).unwrap();
    assert_no_canary(&page);
    assert!(!page.contains(HOSTILE), "unescaped:\n{page}");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_eq!(
        page.matches("<script>").count(),
        1,
        "only the page's own script"
    );
    check_in_browser(
        &html,
        &["cluster a", "cluster c", "only-b", "onnection refused"],
    );

    // markdown: one note with a table of clusters and each cluster folded.
    let args: Vec<&str> = ["diff", "-o", "markdown"]
        .iter()
        .chain(&contexts)
        .copied()
        .collect();
    let (code, stdout, _) = tend_fleet(&fleet, site.path(), &args);
    assert_eq!(code, 2);
    assert_no_canary(&stdout);
    assert!(
        stdout.starts_with("### tend diff · 3 clusters: 2 in sync, 1 error\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| `a` | in sync | 0 | 0 | 0 | 0 | 2 | 0 | 0 | 0 |\n"),
        "{stdout}"
    );
    assert!(stdout.contains("| `c` | error | – |"), "{stdout}");
    assert_eq!(
        stdout.matches("<details><summary>cluster ").count(),
        3,
        "{stdout}"
    );

    // status: what the parents say, the unreachable cluster an error.
    let (code, stdout, stderr) = tend_fleet(&fleet, site.path(), &["status", "--all-contexts"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("CLUSTER  APPLYSET  LAST RUN"),
        "{stdout}"
    );
    let b: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        (b[0], b[1], b[4], b[5], b[6], b[7]),
        ("b", "tend", "succeeded", "3", "0", "no"),
        "{stdout}"
    );
    assert!(
        lines[3].starts_with("c ") && lines[3].contains("unreachable"),
        "{stdout}"
    );

    // With c back, every last run of a and b succeeded, c was never applied: exit 0.
    fleet.c.restart();
    let (code, stdout, stderr) = tend_fleet(
        &fleet,
        site.path(),
        &["status", "--all-contexts", "-o", "json"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["clusters"][0]["applysets"][0]["objects"], 2);
    assert_eq!(doc["clusters"][2]["applysets"], json!([]));
}

#[test]
fn fail_fast_starts_no_cluster_after_a_failure_and_one_context_prints_as_before() {
    let fleet = fleet_with_c_down();
    let site = fleet_site();
    let (code, stdout, _) = tend_fleet(
        &fleet,
        site.path(),
        &[
            "apply",
            "--context",
            "c",
            "--context",
            "a",
            "--parallel",
            "1",
            "--fail-fast",
        ],
    );
    assert_eq!(code, 2);
    assert!(
        stdout.contains("== cluster a: not run ==\nnot started: --fail-fast"),
        "{stdout}"
    );
    assert!(configmaps(&fleet.a).is_empty());
    // One --context: the single-cluster report, byte for byte what `--kubeconfig` alone prints.
    let (code, one, _) = tend_fleet(&fleet, site.path(), &["diff", "--context", "b"]);
    let (code_plain, plain, _) = tend_on(&fleet.b, site.path(), &["diff"]);
    assert_eq!((code, code_plain), (1, 1));
    assert_eq!(one, plain);
}

#[test]
fn a_fleet_file_reaches_spokes_through_kubeconfig_secrets_of_the_hub() {
    let (hub, spoke) = (TestCluster::start(), TestCluster::start());
    hub.seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fleet"}}))
        .unwrap();
    use base64::Engine;
    let spoke_config = base64::engine::general_purpose::STANDARD.encode(spoke.kubeconfig_yaml());
    hub.seed(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "spoke-kubeconfig", "namespace": "fleet"},
        "data": {"value": spoke_config}}))
        .unwrap();
    let site = fleet_site();
    let fleet_file = site.path().join("fleet.yaml");
    std::fs::write(
        &fleet_file,
        "apiVersion: tend.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: all\nspec:\n  clusters:\n  - name: b\n    kubeconfigSecretRef:\n      namespace: fleet\n      name: spoke-kubeconfig\n  - name: missing\n    kubeconfigSecretRef:\n      namespace: fleet\n      name: nope\n",
    )
    .unwrap();
    // The Fleet in the repository is read by --fleet and never applied.
    let (code, stdout, stderr) = run(tend()
        .args([
            "apply",
            "--fleet",
            "fleet.yaml",
            "-o",
            "json",
            "--retry-timeout",
            "1s",
        ])
        .arg("--repo")
        .arg(site.path())
        .arg("--kubeconfig")
        .arg(hub.kubeconfig_path()));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["clusters"][0]["result"], "applied", "{stdout}");
    assert_eq!(doc["clusters"][0]["report"]["summary"]["create"], 3);
    let error = doc["clusters"][1]["error"].as_str().unwrap();
    assert!(
        error.contains("Secret fleet/nope key value: no such Secret"),
        "{error}"
    );
    assert_eq!(configmaps(&spoke), ["app", "only-b"]);
    assert!(configmaps(&hub).is_empty());

    // status reaches the spoke the same way; the cluster without a kubeconfig is an error.
    let (code, stdout, stderr) = run(tend()
        .args([
            "status",
            "--fleet",
            "fleet.yaml",
            "-o",
            "json",
            "--retry-timeout",
            "1s",
        ])
        .arg("--repo")
        .arg(site.path())
        .arg("--kubeconfig")
        .arg(hub.kubeconfig_path()));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["clusters"][0]["applysets"][0]["result"], "succeeded");
    assert_eq!(doc["clusters"][0]["applysets"][0]["objects"], 3);
    assert!(doc["clusters"][1]["error"]
        .as_str()
        .unwrap()
        .contains("no such Secret"));

    // A bad Fleet: file:line and exit 2, nothing run.
    std::fs::write(
        &fleet_file,
        "apiVersion: tend.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: all\nspec:\n  clusters:\n  - name: a,b\n    context: x\n    colour: blue\n",
    )
    .unwrap();
    let (code, _, stderr) = run(tend()
        .args(["diff", "--fleet"])
        .arg(&fleet_file)
        .arg("--repo")
        .arg(site.path()));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("fleet.yaml:") && stderr.contains("colour"),
        "{stderr}"
    );
}

#[test]
fn metrics_are_pushed_to_a_pushgateway_one_group_per_cluster() {
    let fleet = fleet_with_c_down();
    let site = fleet_site();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Answer each push 200 and keep what was pushed; at most 3 requests, 60 s.
    let server = std::thread::spawn(move || {
        let mut pushes = Vec::new();
        listener.set_nonblocking(false).unwrap();
        for _ in 0..3 {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(std::time::Duration::from_secs(60)))
                .unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                let n = stream.read(&mut buf).unwrap();
                request.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&request).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if body.len() >= length || n == 0 {
                        break;
                    }
                }
            }
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            pushes.push(String::from_utf8_lossy(&request).to_string());
        }
        pushes
    });
    let (code, stdout, stderr) = tend_fleet(
        &fleet,
        site.path(),
        &["diff", "--all-contexts", "--pushgateway", &url],
    );
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let pushes = server.join().unwrap();
    assert!(
        pushes[0].starts_with("POST /metrics/job/tend/cluster/a/applyset/tend HTTP/1.1\r\n"),
        "{}",
        pushes[0]
    );
    assert!(
        pushes[0].contains("tend_run_success{command=\"diff\"} 1\n"),
        "{}",
        pushes[0]
    );
    assert!(
        pushes[0].contains("tend_objects{command=\"diff\",result=\"create\"} 2\n"),
        "{}",
        pushes[0]
    );
    assert!(pushes[0].contains("tend_last_success_timestamp_seconds{command=\"diff\"} "));
    assert!(
        pushes[2].starts_with("POST /metrics/job/tend/cluster/c/applyset/tend "),
        "{}",
        pushes[2]
    );
    assert!(
        pushes[2].contains("tend_run_success{command=\"diff\"} 0\n"),
        "{}",
        pushes[2]
    );
    assert!(
        !pushes[2].contains("tend_last_success_timestamp_seconds"),
        "{}",
        pushes[2]
    );
}

/// Load `page` in Debian's headless chromium: the DOM it built holds `expected`, and a
/// screenshot of a sane size was taken. Skipped, with a note, where chromium is absent.
fn check_in_browser(page: &Path, expected: &[&str]) {
    let Some(chromium) = ["chromium", "chromium-browser"].iter().find(|c| {
        std::process::Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        eprintln!("note: no chromium on PATH; the HTML report's browser check is skipped (apt-get install chromium)");
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let shot = scratch.path().join("shot.png");
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,2000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            scratch.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The page's script ran to its end without an error.
    assert!(dom.contains("data-loaded=\"yes\""), "{dom}");
    for text in expected {
        assert!(dom.contains(text), "{text:?} not in the page:\n{dom}");
    }
    // The hostile name is text in the DOM, never an element.
    assert!(!dom.contains(HOSTILE), "{dom}");
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "screenshot of {size} bytes");
}

#[test]
fn a_cluster_stopped_mid_run_fails_alone() {
    let (a, b, c) = (
        TestCluster::start(),
        TestCluster::start(),
        TestCluster::start(),
    );
    // c answers slowly, so the run is still on it when it goes away.
    c.inject(tend_testserver::Fault::delay(std::time::Duration::from_millis(150)).always());
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(
        dir.path(),
        &[("a", a.url()), ("b", b.url()), ("c", c.url())],
    );
    let site = fleet_site();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("tend"))
        .args([
            "apply",
            "--all-contexts",
            "-o",
            "json",
            "--retry-timeout",
            "1s",
            "--color",
            "never",
        ])
        .arg("--repo")
        .arg(site.path())
        .arg("--kubeconfig")
        .arg(&config)
        .env_remove("KUBECONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stop c once tend has begun talking to it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while c.requests().len() < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    c.stop();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let results: Vec<&str> = doc["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["result"].as_str().unwrap())
        .collect();
    assert_eq!(results[..2], ["applied", "applied"], "{stdout}");
    assert!(["error", "failed"].contains(&results[2]), "{stdout}");
    assert_eq!(configmaps(&a), ["app"]);
    assert_eq!(configmaps(&b), ["app", "only-b"]);
}

#[test]
fn status_exits_1_when_a_last_run_failed() {
    let cluster = TestCluster::start();
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tend-system"}}))
        .unwrap();
    let parent = |name: &str, result: &str| {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": name, "namespace": "tend-system",
            "labels": {"applyset.kubernetes.io/id": format!("applyset-{name}-v1")},
            "annotations": {
                "applyset.kubernetes.io/tooling": "tend/0.1.0",
                "tend.dev/last-run": "2026-11-26T03:00:00Z",
                "tend.dev/last-commit": "9f2c1e0b7a44d2",
                "tend.dev/last-summary": "0 created, 1 updated, 0 pruned, 9 unchanged, 1 failed",
                "tend.dev/last-result": result,
                "tend.dev/last-drift": "2"}}})
    };
    cluster.seed(parent("web", "failed")).unwrap();
    cluster.seed(parent("infra", "succeeded")).unwrap();
    // Another tool's ApplySet is not tend's to report.
    let mut kubectl = parent("other", "failed");
    kubectl["metadata"]["annotations"]["applyset.kubernetes.io/tooling"] = json!("kubectl/v1.33");
    cluster.seed(kubectl).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["status", "--cluster", "dc1"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    let rows: Vec<Vec<&str>> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "dc1",
            "infra",
            "2026-11-26T03:00:00Z",
            "9f2c1e0b7a44",
            "succeeded",
            "10",
            "2",
            "no"
        ]
    );
    assert_eq!(
        rows[1][1..5],
        ["web", "2026-11-26T03:00:00Z", "9f2c1e0b7a44", "failed"]
    );
    // One LIST, no discovery.
    assert_eq!(cluster.requests().len(), 1, "{:?}", cluster.requests());
}

/// A Fleet cluster's `paths`: several directories of the repository read as its one desired
/// state (files of the same name in each are distinct); `path` still reads one.
#[test]
fn a_fleet_cluster_gets_every_directory_its_paths_name() {
    let (a, b) = (TestCluster::start(), TestCluster::start());
    let configmap = |name: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  x: \"1\"\n")
    };
    let dir = site(&[
        ("common/app.yaml", &configmap("common")),
        ("clusters/a/app.yaml", &configmap("only-a")),
        ("clusters/b/app.yaml", &configmap("only-b")),
    ]);
    let config = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(config.path(), &[("a", a.url()), ("b", b.url())]);
    let fleet = config.path().join("fleet.yaml");
    let write_fleet = |b_entry: &str| {
        std::fs::write(
            &fleet,
            format!("apiVersion: tend.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: two\nspec:\n  clusters:\n  - name: a\n    paths: [common, clusters/a]\n  - name: b\n{b_entry}"),
        )
        .unwrap();
    };
    let tend_fleet = |command: &str| {
        run(tend()
            .args([command, "--fleet"])
            .arg(&fleet)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--repo")
            .arg(dir.path()))
    };
    write_fleet("    path: clusters/b\n");
    let (code, out, err) = tend_fleet("apply");
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(configmaps(&a), ["common", "only-a"], "{out}");
    assert_eq!(configmaps(&b), ["only-b"], "{out}");
    let (code, out, err) = tend_fleet("diff");
    assert_eq!(code, 0, "{out}\n{err}");

    // A directory that is not there, and path with paths: exit 2, nothing written.
    write_fleet("    paths: [clusters/b, clusters/c]\n");
    let (code, out, err) = tend_fleet("diff");
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        out.contains("--path clusters/c does not exist"),
        "{out}\n{err}"
    );
    write_fleet("    path: clusters/b\n    paths: [common]\n");
    let (code, out, err) = tend_fleet("diff");
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("give either path or paths, not both"), "{err}");
}

/// Clusters of a run that read the same paths share one read and render of the source when
/// nothing in it depends on the cluster; targeting (`tend.dev/clusters`) renders per cluster.
#[test]
fn clusters_reading_the_same_paths_share_one_render_unless_targeting_decides() {
    let (a, b) = (TestCluster::start(), TestCluster::start());
    let config = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(config.path(), &[("a", a.url()), ("b", b.url())]);
    let apply = |dir: &Path| {
        run(tend()
            .args(["apply", "-v", "--context", "a", "--context", "b", "--repo"])
            .arg(dir)
            .arg("--kubeconfig")
            .arg(&kubeconfig))
    };
    const SHARED: &str = "the source as another cluster of the run read and rendered it";
    let plain = site(&[(
        "app.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  x: \"1\"\n",
    )]);
    let (code, out, err) = apply(plain.path());
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(err.matches(SHARED).count(), 1, "{err}");
    assert_eq!(configmaps(&a), ["app"]);
    assert_eq!(configmaps(&b), ["app"]);
    let targeted = fleet_site();
    let (code, out, err) = apply(targeted.path());
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!err.contains(SHARED), "{err}");
    assert_eq!(configmaps(&a), ["app"]);
    assert_eq!(configmaps(&b), ["app", "only-b"]);
}
