//! `tend render` on the example site: targeting, expansion, config hash, formats, secrets.

use crate::common::*;
use serde_json::Value;

fn render_site(cluster: Option<&str>) -> (Vec<Value>, String) {
    let mut cmd = tend();
    cmd.args(["render", "--repo"]).arg(example_site());
    if let Some(c) = cluster {
        cmd.args(["--cluster", c]);
    }
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, 0, "stderr: {stderr}");
    (parse_stream(&stdout), stderr)
}

fn count(objects: &[Value], kind: &str, part_of: &str) -> usize {
    objects
        .iter()
        .filter(|o| o["kind"] == kind)
        .filter(|o| o["metadata"]["labels"]["app.kubernetes.io/part-of"] == part_of)
        .count()
}

fn mirrors(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .filter(|o| o["kind"] == "RegistryMirror")
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn dc1_gets_its_mirrors_each_fully_expanded() {
    let (objects, stderr) = render_site(Some("dc1"));
    assert_eq!(mirrors(&objects), vec!["dockerhub", "gcr", "internal"]);
    for mirror in ["dockerhub", "gcr", "internal"] {
        assert_eq!(count(&objects, "Service", mirror), 2, "{mirror}");
        assert_eq!(count(&objects, "StatefulSet", mirror), 1, "{mirror}");
        assert_eq!(count(&objects, "DaemonSet", mirror), 1, "{mirror}");
        assert_eq!(
            count(&objects, "PersistentVolumeClaim", mirror),
            1,
            "{mirror}"
        );
    }
    assert_eq!(count(&objects, "Service", "quay"), 0);
    assert!(stderr.contains("rendered "), "{stderr}");
    assert!(stderr.contains("cluster dc1"), "{stderr}");
    assert!(
        stderr.contains("1 document targeted at other clusters skipped"),
        "{stderr}"
    );
}

#[test]
fn dc2_gets_different_mirrors_and_no_cluster_gets_untargeted_only() {
    let (dc2, _) = render_site(Some("dc2"));
    assert_eq!(mirrors(&dc2), vec!["dockerhub", "internal", "quay"]);
    assert_eq!(count(&dc2, "DaemonSet", "quay"), 1);
    let (none, stderr) = render_site(None);
    assert_eq!(mirrors(&none), vec!["dockerhub"]);
    assert!(
        stderr.contains("3 documents targeted at other clusters skipped"),
        "{stderr}"
    );
}

#[test]
fn nginx_deployment_carries_config_hash_and_everything_is_namespaced() {
    let (objects, _) = render_site(Some("dc1"));
    let nginx = objects
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "nginx")
        .expect("nginx deployment");
    let hash = nginx["spec"]["template"]["metadata"]["annotations"]["tend.dev/config-hash"]
        .as_str()
        .expect("config hash annotation");
    assert_eq!(hash.len(), 64);
    assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
    // The ImmortalContainer's pod and the copy source got namespaces.
    let ids = ids(&objects);
    assert!(
        ids.contains(&"Pod web/nginx-immortalpod".to_string()),
        "{ids:?}"
    );
    assert!(ids.contains(&"ConfigMap default/company-ca-bundle".to_string()));
    // Cluster-scoped kinds have no namespace.
    assert!(ids.contains(&"ChaosAgent /princeedmund".to_string()));
    assert!(ids.contains(&"CopyRule /copyrator".to_string()));
    // .tendignore'd drafts are not rendered.
    assert!(!ids.iter().any(|id| id.contains("not-ready")));
}

#[test]
fn editing_only_nginx_conf_changes_only_the_hash() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&example_site(), dir.path());
    let render = || {
        let (code, stdout, stderr) = run(tend()
            .args(["render", "--cluster", "dc1", "--repo"])
            .arg(dir.path()));
        assert_eq!(code, 0, "{stderr}");
        stdout
    };
    let before = render();
    let conf = dir.path().join("web/nginx-conf.yaml");
    let text = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(
        &conf,
        text.replace("worker_connections 1024", "worker_connections 2048"),
    )
    .unwrap();
    let after = render();
    let changed: Vec<(&str, &str)> = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(before.lines().count(), after.lines().count());
    // Exactly two lines differ: the ConfigMap's content and the Deployment's hash.
    assert_eq!(changed.len(), 2, "{changed:#?}");
    assert!(changed[0].0.contains("worker_connections 1024"));
    assert!(changed[1].0.contains("tend.dev/config-hash"));

    // An unrelated edit changes no hash.
    let svc = dir.path().join("web/nginx.yaml");
    let text = std::fs::read_to_string(&svc).unwrap();
    std::fs::write(&svc, text.replace("port: 80\n", "port: 81\n")).unwrap();
    let third = render();
    let hash_lines = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.contains("config-hash"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(hash_lines(&after), hash_lines(&third));
    assert_ne!(after, third);
}

#[test]
fn output_is_stable_and_in_apply_order() {
    let (a, _) = render_site(Some("dc1"));
    let (b, _) = render_site(Some("dc1"));
    assert_eq!(a, b);
    let kinds: Vec<&str> = a.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    let first_ns = kinds.iter().position(|k| *k == "Namespace").unwrap();
    let first_deploy = kinds.iter().position(|k| *k == "Deployment").unwrap();
    let first_tend = kinds.iter().position(|k| *k == "RegistryMirror").unwrap();
    let last_namespace = kinds.iter().rposition(|k| *k == "Namespace").unwrap();
    assert!(first_ns == 0 && last_namespace < first_deploy && first_deploy < first_tend);
}

#[test]
fn json_output_is_a_list() {
    let (code, stdout, stderr) = run(tend()
        .args(["render", "-o", "json", "--cluster", "dc2", "--repo"])
        .arg(example_site()));
    assert_eq!(code, 0, "{stderr}");
    let list: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(list["kind"], "List");
    let (yaml, _) = render_site(Some("dc2"));
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), yaml.len());
    for (i, (a, b)) in items.iter().zip(&yaml).enumerate() {
        assert!(a == b, "item {i} differs:\n{a}\n{b}");
    }
}

#[test]
fn secrets_are_masked_unless_revealed() {
    let (code, stdout, _) = run(tend().args(["render", "--repo"]).arg(example_site()));
    assert_eq!(code, 0);
    assert!(!stdout.contains("example-only-change-me"));
    assert!(stdout.contains("BASIC_AUTH_PASSWORD: '***'"), "{stdout}");
    let (code, stdout, _) = run(tend()
        .args(["render", "--show-secrets", "--repo"])
        .arg(example_site()));
    assert_eq!(code, 0);
    assert!(stdout.contains("example-only-change-me"));
    // The flag's environment variable, and its earlier name (a hidden alias) with its own.
    for (flag, env) in [
        (None, Some(("TEND_SHOW_SECRETS", "true"))),
        (Some("--reveal-secrets"), None),
        (None, Some(("TEND_REVEAL_SECRETS", "true"))),
    ] {
        let mut cmd = tend();
        cmd.args(["render", "--repo"]).arg(example_site());
        cmd.args(flag);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let (code, stdout, _) = run(&mut cmd);
        assert_eq!(code, 0);
        assert!(
            stdout.contains("example-only-change-me"),
            "{flag:?} {env:?}"
        );
    }
    let (_, help, _) = run(tend().args(["render", "--help"]));
    assert!(help.contains("--show-secrets") && !help.contains("--reveal-secrets"));
}

#[test]
fn copy_rules_are_noted_as_needing_the_cluster() {
    let (_, stderr) = render_site(None);
    assert!(stderr.contains("warning: CopyRule copyrator"), "{stderr}");
    assert!(
        stderr.contains("offline only the rule itself is rendered"),
        "{stderr}"
    );
}

#[test]
fn flags_read_environment_and_flags_win() {
    let (code, stdout, stderr) = run(tend()
        .arg("render")
        .env("TEND_REPO", example_site())
        .env("TEND_CLUSTER", "dc2"));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        mirrors(&parse_stream(&stdout)),
        vec!["dockerhub", "internal", "quay"]
    );
    let (code, stdout, _) = run(tend()
        .args(["render", "--cluster", "dc1"])
        .env("TEND_REPO", example_site())
        .env("TEND_CLUSTER", "dc2"));
    assert_eq!(code, 0);
    assert_eq!(
        mirrors(&parse_stream(&stdout)),
        vec!["dockerhub", "gcr", "internal"]
    );
}

#[test]
fn namespace_flag_defaults_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n",
    )
    .unwrap();
    let (code, stdout, _) = run(tend()
        .args(["render", "--namespace", "team-x", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0);
    assert_eq!(
        ids(&parse_stream(&stdout)),
        vec!["Namespace /b", "ConfigMap team-x/a"]
    );
}

#[test]
fn path_selects_a_subdirectory_and_rejects_escapes() {
    let (code, stdout, _) = run(tend()
        .args(["render", "--path", "web", "--repo"])
        .arg(example_site()));
    assert_eq!(code, 0);
    assert_eq!(parse_stream(&stdout).len(), 4);
    let (code, _, stderr) = run(tend()
        .args(["render", "--path", "../..", "--repo"])
        .arg(example_site()));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--path ../.. must be a relative path inside the repository"),
        "{stderr}"
    );
}

#[test]
fn markdown_is_not_a_render_format() {
    let (code, stdout, stderr) = run(tend()
        .args(["render", "-o", "markdown", "--repo"])
        .arg(example_site()));
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("tend render prints yaml or json"),
        "{stderr}"
    );
}

#[test]
fn json_logs_on_request() {
    let (code, _, stderr) = run(tend()
        .args(["render", "--log-format", "json", "--repo"])
        .arg(example_site()));
    assert_eq!(code, 0);
    for line in stderr.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["message"].is_string() && v["level"].is_string(), "{line}");
    }
}

/// kubectl, Helm, Flux and Argo CD read manifests with sigs.k8s.io/yaml (YAML 1.1): a plain
/// `yes` is true, `0644` is 420, a key `on` is "true"; a quoted scalar stays a string.
#[test]
fn manifests_are_read_as_kubectl_reads_them_yaml_1_1() {
    let dir = site(&[(
        "thing.yaml",
        "apiVersion: example.com/v1\nkind: Thing\nmetadata:\n  name: t\n  namespace: default\nspec:\n  enabled: yes\n  quoted: \"yes\"\n  mode: 0644\n  size: 1_000\n  flags: [on, Off]\n  on: push\n  description: turn it on or off\n",
    )]);
    let (code, stdout, stderr) = run(tend()
        .args(["render", "-o", "json", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let spec = &list["items"][0]["spec"];
    assert_eq!(
        spec,
        &serde_json::json!({
            "enabled": true, "quoted": "yes", "mode": 420, "size": 1000,
            "flags": [true, false], "true": "push", "description": "turn it on or off"
        })
    );
}

/// What `tend render` prints reads back, with kubectl's YAML 1.1 rules, as what was written:
/// a string `yes`, `on` or `0644` is quoted.
#[test]
fn rendered_yaml_reads_back_as_the_strings_it_holds() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: default\ndata:\n  a: \"yes\"\n  b: \"0644\"\n  \"on\": \"off\"\n  text: |\n    yes\n    on\n";
    let dir = site(&[("cm.yaml", cm)]);
    let (code, printed, stderr) = run(tend().args(["render", "--repo"]).arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        printed.contains("a: 'yes'") && printed.contains("'on': 'off'"),
        "{printed}"
    );
    let again = site(&[("cm.yaml", &printed)]);
    let (code, stdout, stderr) = run(tend()
        .args(["render", "-o", "json", "--repo"])
        .arg(again.path()));
    assert_eq!(code, 0, "{stderr}");
    let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        list["items"][0]["data"],
        serde_json::json!({"a": "yes", "b": "0644", "on": "off", "text": "yes\non\n"})
    );
}
