//! The executor's rules (ARCHITECTURE.md "Where concurrency lives"), seen from outside: a
//! problem in the desired state wins over a connection error; a connection error is the
//! run's when the desired state is sound; secrets named by flags are read before the source
//! is; a diff reads no more than its read ahead and the engine need.

use super::common::{run, site, tend, tend_on, write_site};
use tend_testserver::{TestCluster, Verb};

/// A kubeconfig whose server refuses connections (port 1 on this machine).
fn unreachable_kubeconfig(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n",
    )
    .expect("write kubeconfig");
    path
}

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  a: \"1\"\n";

#[test]
fn a_problem_in_the_desired_state_wins_over_an_unreachable_cluster() {
    let dir = site(&[(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
    )]);
    let kubeconfig = unreachable_kubeconfig(dir.path());
    for command in ["diff", "apply"] {
        let (code, _, stderr) = run(tend()
            .args([command, "--retry-timeout", "1s", "--repo"])
            .arg(dir.path())
            .arg("--kubeconfig")
            .arg(&kubeconfig));
        assert_eq!(code, 2, "{command}: {stderr}");
        assert!(stderr.contains("bad.yaml:3"), "{command}: {stderr}");
        assert!(
            !stderr.contains("Connection refused"),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn an_unreachable_cluster_is_the_error_of_a_sound_desired_state() {
    let dir = site(&[("cm.yaml", CONFIG_MAP)]);
    let kubeconfig = unreachable_kubeconfig(dir.path());
    let (code, _, stderr) = run(tend()
        .args(["diff", "--retry-timeout", "1s", "--repo"])
        .arg(dir.path())
        .arg("--kubeconfig")
        .arg(&kubeconfig));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("API discovery failed"), "{stderr}");
    assert!(stderr.contains("Connection refused"), "{stderr}");
}

#[test]
fn a_missing_decryption_secret_stops_the_run_before_the_source_is_read() {
    let cluster = TestCluster::start();
    // The source would fail to render; the Secret is read first, and its absence is the error.
    let dir = site(&[(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
    )]);
    let (code, _, stderr) = tend_on(
        &cluster,
        dir.path(),
        &["diff", "--decryption-secret", "flux-system/sops-keys"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--decryption-secret flux-system/sops-keys: no such Secret"),
        "{stderr}"
    );
    assert!(!stderr.contains("bad.yaml"), "{stderr}");
}

#[test]
fn a_no_op_diff_reads_what_it_read_ahead_once() {
    let cluster = TestCluster::start();
    let dir = site(&[("cm.yaml", CONFIG_MAP)]);
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    write_site(dir.path(), &[("cm.yaml", CONFIG_MAP)]);
    cluster.clear_requests();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stderr}");
    // Read ahead while rendering: the parent once, the members' LIST once; nothing written.
    assert_eq!(cluster.count(Verb::Get, "secrets"), 1, "{stderr}");
    assert_eq!(cluster.count(Verb::List, "configmaps"), 1, "{stderr}");
    let writes = [
        Verb::Create,
        Verb::Apply,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
    ];
    for verb in writes {
        assert_eq!(cluster.count(verb, "configmaps"), 0, "{verb:?}: {stderr}");
    }
}
