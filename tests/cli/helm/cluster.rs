//! Charts rendered against a cluster (README "HelmChart"): `.Capabilities` reports the
//! server's version and what it serves, `lookup` reads its objects; offline, what
//! `helm template` reports.

use crate::common::*;
use crate::kinds::cluster_with_crds;
use serde_json::json;

const RELEASE: &str = "\
apiVersion: tend.dev/v1alpha1
kind: HelmChart
metadata:
  name: probe
  namespace: probe
spec:
  chart: ../charts/probe
";

const CAPABILITIES: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: capabilities
data:
  version: {{ .Capabilities.KubeVersion.Version | quote }}
  minor: {{ .Capabilities.KubeVersion.Minor | quote }}
  deployments: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}
  carts: {{ .Capabilities.APIVersions.Has "shop.example.com/v1" | quote }}
"#;

fn probe_site(release: &str, templates: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("probe")),
        ("apps/probe.yaml", release),
        (
            "charts/probe/Chart.yaml",
            "apiVersion: v2\nname: probe\nversion: 0.1.0\n",
        ),
    ]);
    for (name, text) in templates {
        let path = dir.path().join("charts/probe/templates").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn rendered_data(stdout: &str, name: &str) -> serde_json::Value {
    parse_stream(stdout)
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{name} rendered: {stdout}"))["data"]
        .clone()
}

#[test]
fn capabilities_are_the_clusters_when_connected_and_helm_templates_offline() {
    let dir = probe_site(RELEASE, &[("capabilities.yaml", CAPABILITIES)]);
    // Offline: helm template's defaults, or --kube-version.
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    let data = rendered_data(&stdout, "capabilities");
    assert_eq!(data["version"], "v1.33.0");
    assert_eq!(data["deployments"], "false", "helm template lists no kinds");
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--kube-version", "1.35", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(rendered_data(&stdout, "capabilities")["version"], "v1.35.0");
    let (code, _, stderr) = run(tend()
        .args(["render", "--kube-version", "one", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("\"one\" is not a Kubernetes version"),
        "{stderr}"
    );

    // Connected: the server's version and what it serves, its CRDs too.
    let cluster = cluster_with_crds();
    cluster
        .seed(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "carts.shop.example.com"},
            "spec": serde_yaml::from_str::<serde_json::Value>(
                &super::crd("shop.example.com", "Cart")
            ).unwrap()["spec"],
        }))
        .unwrap();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let data =
        get(&cluster, "", "configmaps", "probe", "capabilities").expect("applied")["data"].clone();
    assert_eq!(data["version"], "v1.36.0-tend-testserver");
    assert_eq!(data["minor"], "36");
    assert_eq!(data["deployments"], "true");
    assert_eq!(data["carts"], "true");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "in sync: {stdout}\n{stderr}");
    // The HelmChart's status says what was rendered and applied.
    let status = get(&cluster, "tend.dev", "helmcharts", "probe", "probe").expect("applied")
        ["status"]
        .clone();
    assert_eq!(status["chart"], "probe");
    assert_eq!(status["version"], "0.1.0");
    assert_eq!(status["kubeVersion"], "v1.36.0-tend-testserver");
    assert_eq!(status["objects"], 1);
    assert_eq!(status["conditions"][0]["type"], "Ready");
    assert_eq!(status["conditions"][0]["status"], "True");
    assert_eq!(status["conditions"][0]["reason"], "Applied");
    assert_eq!(status["observedGeneration"], 1);

    // Charts render while connecting, as the cluster was last seen from here; when it says
    // something else now, they render again with what it says.
    let cache = tempfile::tempdir().unwrap();
    let diff_in = |cache: &std::path::Path| {
        let cache = cache.to_str().unwrap();
        let (code, stdout, stderr) =
            tend_on(&cluster, dir.path(), &["-v", "--cache-dir", cache, "diff"]);
        assert_eq!(code, 0, "in sync: {stdout}\n{stderr}");
        stderr.contains("rendered while connecting, as the cluster was last seen")
    };
    assert!(!diff_in(cache.path()), "never seen from here");
    assert!(diff_in(cache.path()));
    let remembered = std::fs::read_dir(cache.path().join("helm-capabilities"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&remembered).unwrap();
    std::fs::write(
        &remembered,
        text.replace("v1.36.0-tend-testserver", "v1.20.0"),
    )
    .unwrap();
    assert!(!diff_in(cache.path()), "the cluster says otherwise now");
    assert!(diff_in(cache.path()));

    // A HelmChart's own kubeVersion wins over the cluster's.
    let pinned = format!("{RELEASE}  kubeVersion: v1.31\n");
    let dir = probe_site(&pinned, &[("capabilities.yaml", CAPABILITIES)]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("+  version: v1.31.0"), "{stdout}");
}

/// `lookup` reads the cluster when connected, as `helm install` does: the object, a list,
/// a lookup that depends on another one; nothing offline.
#[test]
fn lookup_reads_the_cluster_when_connected_and_finds_nothing_offline() {
    let template = r#"{{- $settings := lookup "v1" "ConfigMap" "probe" "settings" }}
{{- $sdata := default (dict) $settings.data }}
{{- $other := lookup "v1" "ConfigMap" "probe" (default "none" $sdata.next) }}
{{- $odata := default (dict) $other.data }}
{{- $all := lookup "v1" "ConfigMap" "probe" "" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: derived
data:
  mode: {{ default "default" $sdata.mode | quote }}
  next: {{ default "none" $odata.mode | quote }}
  count: {{ len (default (list) $all.items) | quote }}
  kinds: "{{ range $all.items }}{{ .kind }},{{ end }}"
  missing: {{ (lookup "v1" "ConfigMap" "probe" "nowhere") | toJson | quote }}
  node: {{ (default (dict) (lookup "v1" "Namespace" "" "probe").metadata).name | default "none" | quote }}
"#;
    let dir = probe_site(RELEASE, &[("derived.yaml", template)]);
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    let data = rendered_data(&stdout, "derived");
    assert_eq!(data["mode"], "default");
    assert_eq!(data["count"], "0");

    let cluster = cluster_with_crds();
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "probe"}}))
        .unwrap();
    for (name, mode, next) in [("settings", "fast", "second"), ("second", "slow", "")] {
        cluster
            .seed(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "probe"},
                "data": {"mode": mode, "next": next},
            }))
            .unwrap();
    }
    let in_probe = || {
        cluster
            .objects("", "configmaps")
            .iter()
            .filter(|o| o["metadata"]["namespace"] == "probe")
            .count()
    };
    let before = in_probe();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["-v", "apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let data =
        get(&cluster, "", "configmaps", "probe", "derived").expect("applied")["data"].clone();
    assert_eq!(data["mode"], "fast");
    assert_eq!(data["next"], "slow", "a lookup named by another lookup");
    assert_eq!(
        data["count"],
        before.to_string(),
        "the list as the cluster held it before the apply"
    );
    assert_eq!(
        data["kinds"],
        "ConfigMap,".repeat(before),
        "list items are typed"
    );
    assert_eq!(data["missing"], "{}");
    assert_eq!(data["node"], "probe", "a cluster-scoped object");
    // The next run sees the ConfigMap the apply created in the list: one more.
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains(&format!("+  count: '{}'", before + 1)),
        "{stdout}"
    );
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "in sync: {stdout}\n{stderr}");
}

/// A Secret's value read by `lookup` may go into a Secret (masked like any), never into an
/// object a diff prints; a lookup of something the cluster does not serve fails the run.
#[test]
fn looked_up_secrets_stay_in_secrets_and_unknown_apis_fail_clearly() {
    let canary = "canary-hunter2-value";
    let cluster = cluster_with_crds();
    use base64::Engine;
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "probe"}}))
        .unwrap();
    cluster
        .seed(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "namespace": "probe"},
            "data": {"password": base64::engine::general_purpose::STANDARD.encode(canary)},
        }))
        .unwrap();
    let kept = r#"{{- $db := lookup "v1" "Secret" "probe" "db" }}
apiVersion: v1
kind: Secret
metadata:
  name: app
data:
  password: {{ (default (dict) $db.data).password | quote }}
"#;
    let dir = probe_site(RELEASE, &[("secret.yaml", kept)]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["-vvv", "apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let app = get(&cluster, "", "secrets", "probe", "app").expect("applied");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(app["data"]["password"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, canary.as_bytes());
    assert!(!stdout.contains(canary) && !stderr.contains(canary));

    let leak = r#"{{- $db := lookup "v1" "Secret" "probe" "db" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: leak
data:
  password: {{ (default (dict) $db.data).password | b64dec | quote }}
"#;
    let dir = probe_site(RELEASE, &[("leak.yaml", leak)]);
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["-vvv", "apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "from a Secret the chart looked up reach ConfigMap leak (templates/leak.yaml:"
        ),
        "{stderr}"
    );
    assert!(!stdout.contains(canary) && !stderr.contains(canary));
    assert!(writes(&cluster).is_empty(), "{:?}", writes(&cluster));

    let unknown = "{{ $x := lookup \"nowhere.example.com/v1\" \"Thing\" \"\" \"\" }}\n";
    let dir = probe_site(RELEASE, &[("unknown.yaml", unknown)]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("lookup nowhere.example.com/v1 Thing (all): the cluster serves no nowhere.example.com/v1"),
        "{stderr}"
    );
    assert!(stderr.contains("templates/unknown.yaml:1"), "{stderr}");
}

/// Helm's `now` is the commit's time in a git source, so a commit renders the same on every
/// run; outside git it is the run's time.
/// A chart's `crds/` files are copied, never templated, so a looked-up Secret value that
/// happens to appear in them (kube-prometheus-stack's CRD descriptions say "admin", grafana
/// looks up its admin user "admin") is no leak: the release applies and diffs clean.
#[test]
fn a_looked_up_value_that_a_crd_happens_to_hold_is_no_leak() {
    use base64::Engine;
    let cluster = cluster_with_crds();
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "probe"}}))
        .unwrap();
    cluster
        .seed(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "grafana", "namespace": "probe"},
            "data": {"admin-user": base64::engine::general_purpose::STANDARD.encode("admin")},
        }))
        .unwrap();
    let secret = r#"{{- $found := lookup "v1" "Secret" "probe" "grafana" }}
apiVersion: v1
kind: Secret
metadata:
  name: grafana-copy
data:
  admin-user: {{ (default (dict) $found.data) | dig "admin-user" ("admin" | b64enc) | quote }}
"#;
    let dir = probe_site(RELEASE, &[("secret.yaml", secret)]);
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names:\n    kind: Widget\n    plural: widgets\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        description: Needs an admin to approve it.\n";
    std::fs::create_dir_all(dir.path().join("charts/probe/crds")).unwrap();
    std::fs::write(dir.path().join("charts/probe/crds/widgets.yaml"), crd).unwrap();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // The same value copied into a template's ConfigMap is still refused.
    let leak = r#"{{- $found := lookup "v1" "Secret" "probe" "grafana" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: leak
data:
  user: {{ index (default (dict) $found.data) "admin-user" | b64dec | quote }}
"#;
    std::fs::write(dir.path().join("charts/probe/templates/leak.yaml"), leak).unwrap();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("reach ConfigMap leak (templates/leak.yaml:"),
        "{stderr}"
    );
}

#[test]
fn now_is_the_commits_time_in_git_and_the_runs_time_outside() {
    let template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stamped\ndata:\n  at: {{ now | date \"2006-01-02T15:04:05Z07:00\" | quote }}\n";
    let dir = probe_site(RELEASE, &[("stamped.yaml", template)]);
    let render = |args: &[&str]| {
        let (code, stdout, stderr) = run(tend().args(args).arg("--repo").arg(dir.path()));
        assert_eq!(code, 0, "{stderr}");
        rendered_data(&stdout, "stamped")["at"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let today = render(&["render"]);
    let year: i32 = today[..4].parse().unwrap();
    assert!(year >= 2025, "the run's time: {today}");

    let repo = git2::Repository::init(dir.path()).unwrap();
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let when = git2::Time::new(1_700_000_000, 0);
    let sig = git2::Signature::new("Test", "test@example.com", &when).unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "charts", &tree, &[])
        .unwrap();
    assert_eq!(render(&["render"]), "2023-11-14T22:13:20Z");
    assert_eq!(render(&["render"]), "2023-11-14T22:13:20Z", "every run");
}

/// A lookup the cluster refuses (RBAC) stops the run naming it and what the server said;
/// lookups that keep naming new ones stop after a bounded number of rounds. Nothing is
/// written either way.
#[test]
fn refused_and_endless_lookups_stop_the_run_before_any_write() {
    let cluster = cluster_with_crds();
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "probe"}}))
        .unwrap();
    let all = "{{ $all := lookup \"v1\" \"ConfigMap\" \"\" \"\" }}\n";
    let dir = probe_site(RELEASE, &[("all.yaml", all)]);
    cluster.deny_cluster_wide_lists(true);
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("lookup v1 ConfigMap (all): configmaps is forbidden"),
        "{stderr}"
    );
    assert!(writes(&cluster).is_empty(), "{:?}", writes(&cluster));
    cluster.deny_cluster_wide_lists(false);

    // c0 names c1, c1 names c2, ...: each render finds one more.
    let mut chain = String::from("{{- $next := \"c0\" }}\n");
    for i in 0..8 {
        cluster
            .seed(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("c{i}"), "namespace": "probe"},
                "data": {"next": format!("c{}", i + 1)},
            }))
            .unwrap();
        chain.push_str("{{- $found := lookup \"v1\" \"ConfigMap\" \"probe\" $next }}\n");
        chain.push_str("{{- $next = default \"none\" (default (dict) $found.data).next }}\n");
    }
    let dir = probe_site(RELEASE, &[("chain.yaml", &chain)]);
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("Helm charts still look up new objects after 5 rounds"),
        "{stderr}"
    );
    assert!(writes(&cluster).is_empty(), "{:?}", writes(&cluster));
}
