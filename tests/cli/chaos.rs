//! `tend chaos --agent NAME` end to end (README "ChaosAgent"): the binary against the test API server.

use crate::common::*;

use serde_json::{json, Value};
use tend_testserver::{Fault, TestCluster, TestClusterOptions, Verb};

const AGENT: &str = "princeedmund";

/// A cluster with tend's CRDs and the namespaces web, api, prod (excluded by the agents
/// below) and tend-system (tend's own), without the simulated controllers' extra objects.
fn cluster() -> TestCluster {
    let cluster = TestCluster::start_with(TestClusterOptions {
        simulate_controllers: false,
        ..TestClusterOptions::default()
    });
    for crd in tend::crds() {
        cluster
            .seed(serde_json::to_value(crd).unwrap())
            .expect("seed CRD");
    }
    for ns in ["web", "api", "prod", "tend-system"] {
        cluster
            .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .expect("seed namespace");
    }
    cluster
}

fn agent(cluster: &TestCluster, spec: Value) {
    cluster
        .seed(json!({
            "apiVersion": "tend.dev/v1alpha1",
            "kind": "ChaosAgent",
            "metadata": {"name": AGENT},
            "spec": spec,
        }))
        .expect("seed ChaosAgent");
}

fn pod(cluster: &TestCluster, ns: &str, name: &str) {
    cluster
        .seed(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": ns, "name": name, "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
        }))
        .expect("seed pod");
}

fn deployment(cluster: &TestCluster, ns: &str, name: &str, replicas: i64) {
    cluster
        .seed(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"namespace": ns, "name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
                },
            },
        }))
        .expect("seed deployment");
}

fn configmap(cluster: &TestCluster, ns: &str, name: &str, immutable: bool) {
    let mut cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"namespace": ns, "name": name},
        "data": {"mode": "prod", "nginx.conf": "server {\n  listen 8080;\n  root /srv;\n}\n"},
    });
    if immutable {
        cm["immutable"] = json!(true);
    }
    cluster.seed(cm).expect("seed configmap");
}

/// Pods, Deployments and ConfigMaps in every namespace: ordinary (web, api), excluded by the
/// agent (prod), tend's own (tend-system) and the system ones.
fn populate(cluster: &TestCluster) {
    for ns in [
        "web",
        "api",
        "prod",
        "tend-system",
        "kube-system",
        "kube-public",
        "kube-node-lease",
    ] {
        for i in 0..3 {
            pod(cluster, ns, &format!("pod-{i}"));
        }
        deployment(cluster, ns, "app", 3);
        configmap(cluster, ns, "settings", false);
    }
}

fn chaos(cluster: &TestCluster, args: &[&str]) -> (i32, String, String) {
    run(tend()
        .args(["chaos", "--agent", AGENT])
        .args(args)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()))
}

fn chaos_json(cluster: &TestCluster, args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["-o", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = chaos(cluster, &all);
    let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, doc, err)
}

fn lines_starting<'a>(text: &'a str, prefixes: &[&str]) -> Vec<&'a str> {
    text.lines()
        .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
        .collect()
}

const ACTION_LINES: [&str; 6] = [
    "would ",
    "deleted ",
    "scaled ",
    "wrote ",
    "failed to ",
    "no action",
];

fn is_protected(ns: &str) -> bool {
    matches!(
        ns,
        "prod" | "tend-system" | "kube-system" | "kube-public" | "kube-node-lease"
    )
}

fn namespaces_in(doc: &Value) -> Vec<String> {
    doc["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["namespace"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn dry_run_is_repeatable_and_changes_nothing() {
    let cluster = cluster();
    agent(
        &cluster,
        json!({"tantrumMode": true, "cancerMode": true, "ipsumMode": true, "podTolerance": 1,
               "eagerness": 50, "maxActions": 4, "excludedNamespaces": ["prod"]}),
    );
    populate(&cluster);
    let before = cluster.resource_version();
    cluster.clear_requests();

    let (code, first, err) = chaos(&cluster, &["--seed", "7"]);
    assert_eq!(code, 0, "{first}\n{err}");
    let (_, second, _) = chaos(&cluster, &["--seed", "7"]);
    assert_eq!(first, second);
    assert!(
        first.starts_with("ChaosAgent princeedmund: seed 7; rerun with --seed 7 to repeat\n"),
        "{first}"
    );
    assert!(first.contains("dry run: nothing is changed; pass --execute to act"));
    assert!(first.contains(
        "excluded namespaces: kube-node-lease, kube-public, kube-system, prod, tend-system"
    ));
    let planned = lines_starting(&first, &["would "]);
    assert!(!planned.is_empty() && planned.len() <= 4, "{first}");
    for line in &planned {
        assert!(
            line.ends_with("(tantrum)") || line.ends_with("(cancer)") || line.ends_with("(ipsum)"),
            "{line}"
        );
        assert!(
            line.contains(" web/") || line.contains(" api/"),
            "chaos in a protected namespace: {line}"
        );
    }

    // Nothing written at all: no deletes, no patches, not even dry runs or the status.
    assert_eq!(writes(&cluster), Vec::<String>::new());
    assert!(cluster.requests().iter().all(|r| !r.dry_run));
    assert_eq!(cluster.resource_version(), before);
    let stored = cluster
        .object("tend.dev", "chaosagents", "", AGENT)
        .unwrap();
    assert!(stored.get("status").is_none(), "{stored}");

    // The JSON report plans the same actions, none done.
    let (code, doc, _) = chaos_json(&cluster, &["--seed", "7"]);
    assert_eq!(code, 0);
    assert_eq!(doc["agent"], AGENT);
    assert_eq!(doc["seed"], 7);
    assert_eq!(doc["execute"], false);
    assert_eq!(
        doc["excludedNamespaces"],
        json!([
            "kube-node-lease",
            "kube-public",
            "kube-system",
            "prod",
            "tend-system"
        ])
    );
    let actions = doc["actions"].as_array().unwrap();
    assert_eq!(actions.len(), planned.len());
    for a in actions {
        assert_eq!(a["done"], false);
        assert_eq!(a["error"], Value::Null);
        let line = format!(
            "{} {}/{}",
            a["kind"].as_str().unwrap().to_lowercase(),
            a["namespace"].as_str().unwrap(),
            a["name"].as_str().unwrap()
        );
        assert!(
            planned
                .iter()
                .any(|p| p.contains(&line)
                    && p.ends_with(&format!("({})", a["mode"].as_str().unwrap()))),
            "{line} not in {planned:?}"
        );
    }
    assert_eq!(writes(&cluster), Vec::<String>::new());

    // Another seed plans differently (over a few seeds).
    let others: std::collections::BTreeSet<String> = (1..6)
        .map(|s| chaos(&cluster, &["--seed", &s.to_string()]).1)
        .map(|out| lines_starting(&out, &ACTION_LINES).join("\n"))
        .collect();
    assert!(others.len() > 1, "{others:?}");
}

#[test]
fn a_pass_without_seed_prints_one_to_repeat_it() {
    let cluster = cluster();
    agent(
        &cluster,
        json!({"cancerMode": true, "ipsumMode": true, "eagerness": 50, "maxActions": 3}),
    );
    populate(&cluster);
    let (code, out, err) = chaos(&cluster, &[]);
    assert_eq!(code, 0, "{err}");
    let first = out.lines().next().unwrap();
    let seed = first
        .strip_prefix("ChaosAgent princeedmund: seed ")
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("{first}"));
    assert_eq!(
        first,
        format!("ChaosAgent princeedmund: seed {seed}; rerun with --seed {seed} to repeat")
    );
    let (_, again, _) = chaos(&cluster, &["--seed", seed]);
    assert_eq!(again, out);
}

#[test]
fn tantrum_deletes_pods_only_at_the_pod_tolerance() {
    for (tolerance, expect_deletes) in [(7, false), (6, true)] {
        let cluster = cluster();
        agent(
            &cluster,
            json!({"tantrumMode": true, "podTolerance": tolerance, "eagerness": 100,
                   "maxActions": 100, "excludedNamespaces": ["prod"]}),
        );
        // 6 pods in web and api; plenty elsewhere, which does not count.
        populate(&cluster);
        cluster.clear_requests();
        let (code, out, err) = chaos(&cluster, &["--execute", "--seed", "1"]);
        assert_eq!(code, 0, "{out}\n{err}");
        let deleted = lines_starting(&out, &["deleted pod "]);
        let remaining: Vec<String> = cluster
            .objects("", "pods")
            .iter()
            .map(|p| {
                format!(
                    "{}/{}",
                    p["metadata"]["namespace"].as_str().unwrap(),
                    p["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect();
        if expect_deletes {
            assert_eq!(deleted.len(), 6, "{out}");
            assert!(out.contains("deleted pod web/pod-0 (tantrum)"), "{out}");
            assert!(remaining
                .iter()
                .all(|p| is_protected(p.split('/').next().unwrap())));
            assert_eq!(remaining.len(), 15);
            let deletes = writes(&cluster)
                .into_iter()
                .filter(|m| m.starts_with("DELETE"))
                .count();
            assert_eq!(deletes, 6);
        } else {
            assert!(deleted.is_empty(), "{out}");
            assert!(
                out.contains("tantrum: 6 pods in non-excluded namespaces, fewer than podTolerance 7, so no pod is deleted"),
                "{out}"
            );
            assert_eq!(remaining.len(), 21);
            assert!(writes(&cluster).iter().all(|m| !m.starts_with("DELETE")));
        }
    }
}

#[test]
fn cancer_doubles_replicas_up_to_128() {
    let cluster = cluster();
    agent(
        &cluster,
        json!({"cancerMode": true, "eagerness": 100, "maxActions": 50}),
    );
    deployment(&cluster, "web", "small", 3);
    deployment(&cluster, "web", "big", 100);
    deployment(&cluster, "web", "full", 128);
    deployment(&cluster, "kube-system", "coredns", 2);
    deployment(&cluster, "tend-system", "tend", 1);
    cluster.clear_requests();

    let (code, doc, err) = chaos_json(&cluster, &["--execute", "--seed", "3"]);
    assert_eq!(code, 0, "{doc}\n{err}");
    let replicas = |ns: &str, name: &str| {
        cluster.object("apps", "deployments", ns, name).unwrap()["spec"]["replicas"].clone()
    };
    assert_eq!(replicas("web", "small"), 6);
    assert_eq!(replicas("web", "big"), 128);
    assert_eq!(replicas("web", "full"), 128);
    assert_eq!(replicas("kube-system", "coredns"), 2);
    assert_eq!(replicas("tend-system", "tend"), 1);
    let actions: Vec<(String, String, String, bool)> = doc["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["action"].as_str().unwrap().to_string(),
                a["name"].as_str().unwrap().to_string(),
                a["detail"].as_str().unwrap().to_string(),
                a["done"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            (
                "scale".into(),
                "big".into(),
                "replicas 100 → 128".into(),
                true
            ),
            (
                "scale".into(),
                "small".into(),
                "replicas 3 → 6".into(),
                true
            ),
        ]
    );
    // Merge patches under tend-chaos's own field manager (so `tend apply` can take them back).
    let patches: Vec<_> = cluster
        .requests()
        .into_iter()
        .filter(|r| r.resource == "deployments" && r.verb == Verb::Patch)
        .collect();
    assert_eq!(patches.len(), 2);
    assert!(patches
        .iter()
        .all(|r| r.field_manager.as_deref() == Some("tend-chaos")));
    assert_eq!(
        writes(&cluster)
            .iter()
            .filter(|m| !m.contains("/chaosagents/"))
            .count(),
        2
    );
}

#[test]
fn ipsum_writes_lorem_ipsum_only_into_mutable_configmaps() {
    let cluster = cluster();
    agent(
        &cluster,
        json!({"ipsumMode": true, "eagerness": 100, "maxActions": 50,
               "excludedNamespaces": ["prod"]}),
    );
    configmap(&cluster, "web", "settings", false);
    configmap(&cluster, "web", "frozen", true);
    configmap(&cluster, "api", "settings", false);
    configmap(&cluster, "prod", "settings", false);
    configmap(&cluster, "kube-public", "cluster-info", false);
    configmap(&cluster, "tend-system", "state", false);
    let original = cluster.object("", "configmaps", "web", "frozen").unwrap()["data"].clone();

    let (code, out, err) = chaos(&cluster, &["--execute", "--seed", "11"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(
        lines_starting(&out, &ACTION_LINES),
        [
            "wrote lorem ipsum into configmap api/settings: 2 keys: mode, nginx.conf (ipsum)",
            "wrote lorem ipsum into configmap web/settings: 2 keys: mode, nginx.conf (ipsum)",
        ]
    );
    for ns in ["web", "api"] {
        let data = cluster.object("", "configmaps", ns, "settings").unwrap()["data"].clone();
        let keys: Vec<&String> = data.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["mode", "nginx.conf"]);
        for value in data.as_object().unwrap().values() {
            let text = value.as_str().unwrap();
            assert!(text.starts_with("Lorem ipsum"), "{text:?}");
        }
        let conf = data["nginx.conf"].as_str().unwrap();
        assert!(conf.ends_with(".\n") && conf.len() < 60, "{conf:?}");
    }
    assert_eq!(
        cluster.object("", "configmaps", "web", "frozen").unwrap()["data"],
        original
    );
    for (ns, name) in [
        ("prod", "settings"),
        ("kube-public", "cluster-info"),
        ("tend-system", "state"),
    ] {
        assert_eq!(
            cluster.object("", "configmaps", ns, name).unwrap()["data"]["mode"],
            "prod"
        );
    }
    let writes: Vec<String> = writes(&cluster)
        .into_iter()
        .filter(|m| m.contains("/configmaps/"))
        .collect();
    assert_eq!(
        writes,
        [
            "PATCH /api/v1/namespaces/api/configmaps/settings",
            "PATCH /api/v1/namespaces/web/configmaps/settings",
        ]
    );
}

#[test]
fn max_actions_bounds_every_pass() {
    let cluster = cluster();
    agent(
        &cluster,
        json!({"tantrumMode": true, "cancerMode": true, "ipsumMode": true, "podTolerance": 0,
               "eagerness": 100, "maxActions": 2, "excludedNamespaces": ["prod"]}),
    );
    populate(&cluster);
    for seed in 0..5 {
        let (code, doc, _) = chaos_json(&cluster, &["--seed", &seed.to_string()]);
        assert_eq!(code, 0);
        assert_eq!(doc["actions"].as_array().unwrap().len(), 2, "{doc}");
        assert!(namespaces_in(&doc).iter().all(|ns| !is_protected(ns)));
    }
    cluster.clear_requests();
    let (code, doc, _) = chaos_json(&cluster, &["--execute", "--seed", "5"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["actions"].as_array().unwrap().len(), 2);
    let writes = writes(&cluster);
    assert_eq!(
        writes
            .iter()
            .filter(|m| !m.contains("/chaosagents/"))
            .count(),
        2,
        "{writes:?}"
    );
    let status = &cluster
        .object("tend.dev", "chaosagents", "", AGENT)
        .unwrap()["status"];
    assert_eq!(status["lastActions"], 2);
}

#[test]
fn execute_reports_every_action_and_records_the_pass() {
    let cluster = cluster();
    agent(
        &cluster,
        json!({"tantrumMode": true, "cancerMode": true, "ipsumMode": true, "podTolerance": 1,
               "eagerness": 100, "maxActions": 3, "excludedNamespaces": ["prod"]}),
    );
    pod(&cluster, "web", "nginx-abc");
    deployment(&cluster, "web", "nginx", 2);
    configmap(&cluster, "web", "app", false);
    populate(&cluster);
    // Only the three web objects above and populate()'s web and api ones are candidates;
    // a plan from the dry run must be exactly what --execute then does.
    let (_, dry, _) = chaos(&cluster, &["--seed", "42"]);
    let planned: Vec<String> = lines_starting(&dry, &["would "])
        .iter()
        .map(|l| l.trim_start_matches("would ").to_string())
        .collect();
    assert_eq!(planned.len(), 3, "{dry}");

    let (code, out, err) = chaos(&cluster, &["--execute", "--seed", "42"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("dry run"), "{out}");
    let done: Vec<String> = lines_starting(&out, &["deleted ", "scaled ", "wrote "])
        .iter()
        .map(|l| {
            l.replacen("deleted ", "delete ", 1)
                .replacen("scaled ", "scale ", 1)
                .replacen("wrote lorem", "write lorem", 1)
        })
        .collect();
    assert_eq!(done, planned, "{out}");
    assert!(out.ends_with("3 actions done\n"), "{out}");

    let stored = cluster
        .object("tend.dev", "chaosagents", "", AGENT)
        .unwrap();
    let status = &stored["status"];
    assert_eq!(status["lastActions"], 3, "{stored}");
    assert_eq!(status["lastDryRun"], false);
    assert_eq!(status["lastSeed"], 42);
    assert!(
        status["lastRun"].as_str().unwrap().ends_with('Z'),
        "{status}"
    );
    let status_writes: Vec<_> = cluster
        .requests()
        .into_iter()
        .filter(|r| r.resource == "chaosagents" && r.subresource.as_deref() == Some("status"))
        .collect();
    assert_eq!(status_writes.len(), 1);
    assert_eq!(status_writes[0].verb, Verb::Apply);
    assert_eq!(
        status_writes[0].field_manager.as_deref(),
        Some("tend-chaos")
    );
    // The spec is untouched: only the status subresource was written.
    assert!(cluster
        .requests()
        .iter()
        .filter(|r| r.resource == "chaosagents")
        .all(|r| r.verb == Verb::Get || r.subresource.is_some()));
}

#[test]
fn a_failed_action_is_reported_and_exits_2() {
    let cluster = cluster();
    agent(
        &cluster,
        json!({"cancerMode": true, "ipsumMode": true, "eagerness": 100, "maxActions": 10}),
    );
    deployment(&cluster, "web", "nginx", 2);
    configmap(&cluster, "web", "app", false);
    cluster.inject(
        Fault::status(403)
            .method("PATCH")
            .path_contains("/deployments/nginx")
            .message("deployments.apps \"nginx\" is forbidden: chaos not welcome")
            .always(),
    );
    let (code, doc, err) = chaos_json(&cluster, &["--execute", "--seed", "2"]);
    assert_eq!(code, 2, "{doc}\n{err}");
    assert!(err.contains("1 of 2 chaos actions failed"), "{err}");
    let actions = doc["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 2);
    let scale = actions.iter().find(|a| a["action"] == "scale").unwrap();
    assert_eq!(scale["done"], false);
    let error = scale["error"].as_str().unwrap();
    assert!(error.contains("chaos not welcome"), "{error}");
    let write = actions.iter().find(|a| a["action"] == "write").unwrap();
    assert_eq!(write["done"], true);
    assert_eq!(write["error"], Value::Null);
    // The pass is recorded with what was done.
    let stored = cluster
        .object("tend.dev", "chaosagents", "", AGENT)
        .unwrap();
    assert_eq!(stored["status"]["lastActions"], 1);

    let (code, out, _) = chaos(&cluster, &["--execute", "--seed", "2"]);
    assert_eq!(code, 2);
    assert!(
        out.contains("failed to scale deployment web/nginx: replicas 2 → 4 (cancer): "),
        "{out}"
    );
    assert!(out.ends_with("2 actions: 1 done, 1 failed\n"), "{out}");
}

#[test]
fn a_status_write_failure_is_only_a_warning() {
    let cluster = cluster();
    agent(&cluster, json!({"cancerMode": true, "eagerness": 100}));
    deployment(&cluster, "web", "nginx", 2);
    cluster.inject(Fault::status(403).path_contains("/status").always());
    let (code, out, err) = chaos(&cluster, &["--execute", "--seed", "2"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("scaled deployment web/nginx: replicas 2 → 4 (cancer)"));
    assert!(
        err.contains("warning: the pass is not recorded in the status of ChaosAgent princeedmund"),
        "{err}"
    );
}

#[test]
fn missing_agent_or_crds_are_clear_errors() {
    let cluster = cluster();
    let (code, _, err) = chaos(&cluster, &["--seed", "1"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("ChaosAgent princeedmund not found; apply it with tend apply first"),
        "{err}"
    );

    let bare = TestCluster::start();
    let (code, _, err) = chaos(&bare, &[]);
    assert_eq!(code, 2);
    assert!(err.contains("tend crds | kubectl apply -f -"), "{err}");
    assert_eq!(writes(&bare), Vec::<String>::new());
}

#[test]
fn apply_never_causes_chaos() {
    let cluster = TestCluster::start();
    for ns in ["web", "api"] {
        cluster
            .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .unwrap();
    }
    for crd in tend::crds() {
        cluster.seed(serde_json::to_value(crd).unwrap()).unwrap();
    }
    for i in 0..5 {
        pod(&cluster, "api", &format!("pod-{i}"));
    }
    deployment(&cluster, "api", "backend", 2);
    configmap(&cluster, "api", "settings", false);
    let before = |c: &TestCluster| {
        let mut all = c.objects("", "pods");
        all.extend(c.objects("apps", "deployments"));
        all.extend(c.objects("", "configmaps"));
        all
    };
    let seeded = before(&cluster);
    let dir = site(&[
        (
            "agent.yaml",
            "apiVersion: tend.dev/v1alpha1\nkind: ChaosAgent\nmetadata:\n  name: princeedmund\nspec:\n  tantrumMode: true\n  cancerMode: true\n  ipsumMode: true\n  podTolerance: 0\n  eagerness: 100\n  maxActions: 100\n",
        ),
        (
            "app.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: web\ndata:\n  key: v1\n",
        ),
    ]);
    cluster.clear_requests();
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    // Everything seeded is exactly as it was; the site's ConfigMap is there.
    let after = before(&cluster);
    assert!(cluster.object("", "configmaps", "web", "app").is_some());
    for obj in &seeded {
        assert!(after.contains(obj), "changed by apply: {obj}");
    }
    for r in cluster.requests() {
        if is_write(&r) {
            let chaotic = matches!(r.resource.as_str(), "pods" | "deployments")
                || (r.resource == "configmaps" && r.namespace.as_deref() == Some("api"));
            assert!(!chaotic, "apply wrote {} {}", r.method, r.path);
        }
    }
    // The agent itself is stored, without any pass recorded.
    let stored = cluster
        .object("tend.dev", "chaosagents", "", AGENT)
        .unwrap();
    assert_eq!(stored["spec"]["eagerness"], 100);
    assert!(stored["status"].get("lastRun").is_none(), "{stored}");
}

#[test]
fn chaos_then_apply_restores_git_replicas() {
    let cluster = TestCluster::start();
    for crd in tend::crds() {
        cluster.seed(serde_json::to_value(crd).unwrap()).unwrap();
    }
    let dir = site(&[
        ("ns.yaml", crate::engine::NS_WEB),
        ("deploy.yaml", crate::engine::DEPLOYMENT),
        (
            "agent.yaml",
            "apiVersion: tend.dev/v1alpha1\nkind: ChaosAgent\nmetadata:\n  name: princeedmund\nspec:\n  cancerMode: true\n  eagerness: 100\n",
        ),
    ]);
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let replicas = || {
        cluster
            .object("apps", "deployments", "web", "nginx")
            .unwrap()["spec"]["replicas"]
            .clone()
    };
    assert_eq!(replicas(), 2);
    let (code, out, err) = chaos(&cluster, &["--execute", "--seed", "9"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("scaled deployment web/nginx: replicas 2 → 4 (cancer)"),
        "{out}"
    );
    assert_eq!(replicas(), 4);
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(replicas(), 2);
}
