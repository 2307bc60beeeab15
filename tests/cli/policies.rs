//! Per-object policies (README "Per-object policies"): `tend.dev/apply: if-not-present`, `tend.dev/replace:
//! on-immutable`, Jobs replaced when their pod template changes; and CopyRule copies without
//! other tools' tracking labels (issue 11, items 3 and 4).

use crate::common::*;
use serde_json::{json, Value};
use tend_testserver::{TestCluster, Verb};

const NS: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n";

fn config(value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: migrate-config\n  namespace: web\ndata:\n  target: {value}\n")
}

const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: web
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: ghcr.io/example/migrate:1.0.0
          volumeMounts:
            - name: config
              mountPath: /etc/migrate
      volumes:
        - name: config
          configMap:
            name: migrate-config
";

fn deployment(app: &str, annotated: bool) -> String {
    let annotations = if annotated {
        "  annotations:\n    tend.dev/replace: on-immutable\n"
    } else {
        ""
    };
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: web
{annotations}spec:
  selector:
    matchLabels: {{app: {app}}}
  template:
    metadata:
      labels: {{app: {app}}}
    spec:
      containers:
        - name: api
          image: ghcr.io/example/api:1.0.0
"
    )
}

fn uid(object: Option<Value>) -> String {
    object.expect("object exists")["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string()
}

#[test]
fn a_job_whose_config_changes_is_replaced_and_diff_says_why() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS),
        ("config.yaml", &config("v1")),
        ("job.yaml", JOB),
    ]);
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let job = get(&cluster, "batch", "jobs", "web", "migrate");
    assert!(
        job.as_ref().unwrap()["spec"]["template"]["metadata"]["annotations"]
            ["tend.dev/config-hash"]
            .is_string(),
        "Jobs carry the config hash: {job:?}"
    );
    let before = uid(job);

    // The ConfigMap changes in git: the Job's config hash, so its pod template, changes.
    write_site(
        dir.path(),
        &[
            ("ns.yaml", NS),
            ("config.yaml", &config("v2")),
            ("job.yaml", JOB),
        ],
    );
    cluster.clear_requests();
    let (code, out, err) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("± batch/v1 Job web/migrate  # job.yaml:1\n  replace: spec.template: field is immutable (a Job is replaced when its pod template changes)\n"),
        "{out}"
    );
    assert!(out.contains("+        tend.dev/config-hash: "), "{out}");
    assert!(
        out.contains("0 to create, 1 to update, 1 to replace, 0 to prune, 1 unchanged"),
        "{out}"
    );
    assert!(!out.contains("Invalid value"), "the server's dump: {out}");
    assert_eq!(
        writes(&cluster),
        Vec::<String>::new(),
        "diff writes nothing"
    );
    let (code, out, _) = tend_on(&cluster, dir.path(), &["diff", "-o", "json"]);
    assert_eq!(code, 1);
    let report: Value = serde_json::from_str(&out).unwrap();
    let job = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Job")
        .unwrap();
    assert_eq!(job["action"], "replace");
    assert!(job["reason"]
        .as_str()
        .unwrap()
        .starts_with("spec.template: field is immutable"));
    assert_eq!(report["summary"]["replace"], 1);

    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("± batch/v1 Job web/migrate"), "{out}");
    assert!(out.contains("1 to replace"), "{out}");
    let job = get(&cluster, "batch", "jobs", "web", "migrate");
    assert_ne!(uid(job.clone()), before, "the Job was replaced");
    let cm = get(&cluster, "", "configmaps", "web", "migrate-config").unwrap();
    assert_eq!(cm["data"]["target"], "v2");
    assert_eq!(
        cluster.count(Verb::Delete, "jobs"),
        1,
        "deleted once, then created"
    );
    let (code, out, err) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "in sync after the replace: {out}\n{err}");
}

#[test]
fn an_annotated_deployment_whose_selector_changes_is_replaced() {
    let cluster = TestCluster::start();
    let dir = site(&[("ns.yaml", NS), ("api.yaml", &deployment("api", true))]);
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let before = uid(get(&cluster, "apps", "deployments", "web", "api"));
    write_site(
        dir.path(),
        &[("ns.yaml", NS), ("api.yaml", &deployment("api-v2", true))],
    );
    let (code, out, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "  replace: spec.selector: field is immutable (tend.dev/replace: on-immutable)\n"
        ),
        "{out}"
    );
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let live = get(&cluster, "apps", "deployments", "web", "api");
    assert_ne!(uid(live.clone()), before, "the Deployment was replaced");
    assert_eq!(
        live.unwrap()["spec"]["selector"]["matchLabels"]["app"],
        "api-v2"
    );
}

#[test]
fn a_replace_waits_for_the_old_object_at_most_the_timeout() {
    let cluster = TestCluster::start();
    let dir = site(&[("ns.yaml", NS), ("api.yaml", &deployment("api", true))]);
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    // A finalizer nobody removes keeps the deleted object around.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let api: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
            kube::Api::namespaced(cluster.client().await, "web");
        let patch = json!({"metadata": {"finalizers": ["example.com/hold"]}});
        api.patch(
            "api",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    });
    write_site(
        dir.path(),
        &[("ns.yaml", NS), ("api.yaml", &deployment("api-v2", true))],
    );
    let started = std::time::Instant::now();
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply", "--timeout", "1s"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        out.contains(
            "cannot replace Deployment web/api: deleted, but still there after --timeout 1s"
        ),
        "{out}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let live = get(&cluster, "apps", "deployments", "web", "api").unwrap();
    assert!(live["metadata"]["deletionTimestamp"].is_string());
}

#[test]
fn without_the_annotation_an_immutable_change_fails_with_its_cause_and_the_rest_applies() {
    let cluster = TestCluster::start();
    let dir = site(&[
        ("ns.yaml", NS),
        ("config.yaml", &config("v1")),
        ("api.yaml", &deployment("api", false)),
    ]);
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let before = uid(get(&cluster, "apps", "deployments", "web", "api"));
    write_site(
        dir.path(),
        &[
            ("ns.yaml", NS),
            ("config.yaml", &config("v2")),
            ("api.yaml", &deployment("api-v2", false)),
        ],
    );
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{out}\n{err}");
    let cause = "cannot apply Deployment web/api: spec.selector: field is immutable; annotate it tend.dev/replace: on-immutable to have tend delete and recreate it";
    assert!(out.contains(&format!("  ! failed: {cause}\n")), "{out}");
    assert!(err.contains(cause), "{err}");
    for text in [&out, &err] {
        assert!(!text.contains("Invalid value"), "the server's dump: {text}");
    }
    // The rest of the site was applied; the Deployment is untouched.
    let cm = get(&cluster, "", "configmaps", "web", "migrate-config").unwrap();
    assert_eq!(cm["data"]["target"], "v2");
    let live = get(&cluster, "apps", "deployments", "web", "api");
    assert_eq!(uid(live.clone()), before);
    assert_eq!(
        live.unwrap()["spec"]["selector"]["matchLabels"]["app"],
        "api"
    );
    // diff: the same one-line cause, exit 2.
    let (code, out, err) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        out.contains(&format!(
            "  ! failed: {}\n",
            cause.replace("cannot apply", "cannot dry-run apply")
        )),
        "{out}"
    );
}

const SECRET: &str = "apiVersion: v1
kind: Secret
metadata:
  name: webhook-token
  namespace: web
  annotations:
    tend.dev/apply: if-not-present
stringData:
  token: placeholder
";

#[test]
fn an_if_not_present_secret_edited_in_the_cluster_stays_edited() {
    let cluster = TestCluster::start();
    let dir = site(&[("ns.yaml", NS), ("secret.yaml", SECRET)]);
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let secret = get(&cluster, "", "secrets", "web", "webhook-token").unwrap();
    assert_eq!(secret["data"]["token"], "cGxhY2Vob2xkZXI="); // base64("placeholder")

    // The application fills in the real token.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
            kube::Api::namespaced(cluster.client().await, "web");
        let patch = json!({"data": {"token": "cmVhbA=="}}); // base64("real")
        api.patch(
            "webhook-token",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    });

    cluster.clear_requests();
    let (code, out, err) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("0 to create, 0 to update, 0 to prune, 2 unchanged"),
        "{out}"
    );
    assert_eq!(
        cluster.count(Verb::Apply, "secrets"),
        0,
        "settled without a dry run"
    );
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let secret = get(&cluster, "", "secrets", "web", "webhook-token").unwrap();
    assert_eq!(secret["data"]["token"], "cmVhbA==", "the edit stays");
    assert_eq!(object_writes(&cluster), Vec::<String>::new());

    // Deleted in the cluster: created again from git.
    rt.block_on(async {
        let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
            kube::Api::namespaced(cluster.client().await, "web");
        api.delete("webhook-token", &kube::api::DeleteParams::default())
            .await
            .unwrap();
    });
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let secret = get(&cluster, "", "secrets", "web", "webhook-token").unwrap();
    assert_eq!(secret["data"]["token"], "cGxhY2Vob2xkZXI=");
}

#[test]
fn an_unknown_policy_value_is_a_render_error_and_nothing_is_written() {
    let cluster = TestCluster::start();
    let bad = SECRET.replace("if-not-present", "if-missing");
    let replace = deployment("api", true).replace("on-immutable", "always");
    let dir = site(&[
        ("ns.yaml", NS),
        ("secret.yaml", &bad),
        ("api.yaml", &replace),
    ]);
    for command in ["apply", "diff"] {
        let (code, out, err) = tend_on(&cluster, dir.path(), &[command]);
        assert_eq!(code, 2, "{out}\n{err}");
        assert!(
            err.contains("secret.yaml:7: metadata.annotations.tend.dev/apply: unknown value \"if-missing\"; the only value is \"if-not-present\""),
            "{err}"
        );
        assert!(
            err.contains(
                "api.yaml:7: metadata.annotations.tend.dev/replace: unknown value \"always\""
            ),
            "{err}"
        );
    }
    assert_eq!(writes(&cluster), Vec::<String>::new());
    assert!(cluster
        .requests()
        .iter()
        .all(|r| !r.verb.is_mutating() || r.resource == "selfsubjectaccessreviews"));
}

#[test]
fn copies_drop_the_tracking_labels_of_other_tools() {
    let cluster = crate::kinds::cluster_with_crds();
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}))
        .unwrap();
    // A source that Argo CD and Flux (and another ApplySet) track as theirs.
    cluster
        .seed(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "ca", "namespace": "default",
                "labels": {"copy": "true", "app.kubernetes.io/instance": "platform",
                           "argocd.argoproj.io/instance": "platform",
                           "applyset.kubernetes.io/part-of": "applyset-someone-else-v1",
                           "kustomize.toolkit.fluxcd.io/name": "infra"},
                "annotations": {"argocd.argoproj.io/tracking-id": "platform:/ConfigMap:default/ca"}},
            "data": {"ca.crt": "PEM"}}))
        .unwrap();
    let rule = "apiVersion: tend.dev/v1alpha1
kind: CopyRule
metadata:
  name: ca
spec:
  kind: ConfigMap
  sourceNamespace: default
  selector:
    matchLabels: {copy: \"true\"}
  targetNamespaces: [team-a]
";
    let dir = site(&[("rule.yaml", rule)]);
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let copy = get(&cluster, "", "configmaps", "team-a", "ca").expect("copied");
    let labels = copy["metadata"]["labels"].as_object().unwrap();
    let mut keys: Vec<&str> = labels.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        ["applyset.kubernetes.io/part-of", "copy"],
        "{labels:?}"
    );
    // The part-of label is tend's own now: the copy is a member of tend's ApplySet.
    assert_ne!(
        labels["applyset.kubernetes.io/part-of"],
        "applyset-someone-else-v1"
    );
    let (code, out, err) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{out}\n{err}");
}

/// The README's "Per-object policies" section: its files applied with its commands, then what
/// it says about a changed ConfigMap and an immutable change without the annotation, checked
/// against what tend prints.
#[test]
fn the_readme_section_does_what_it_says() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = readme
        .split("\n## Per-object policies\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README has a Per-object policies section");
    let work = tempfile::tempdir().unwrap();
    let mut files = 0;
    for block in section.split("```yaml\n").skip(1) {
        let block = block.split("```").next().unwrap();
        let path = work
            .path()
            .join(block.lines().next().unwrap().trim_start_matches("# "));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, block).unwrap();
        files += 1;
    }
    assert_eq!(files, 5);
    let cluster = TestCluster::start();
    let tend_in = |args: &[&str]| {
        run(tend()
            .current_dir(work.path())
            .args(args)
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path()))
    };
    let commands = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap();
    for command in commands.lines().filter(|l| !l.trim().is_empty()) {
        let words: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(words[0], "tend");
        let (code, out, err) = tend_in(&words[1..]);
        assert_eq!(code, 0, "`{command}`:\n{out}\n{err}");
    }
    let quoted: Vec<&str> = section
        .split("```text\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert_eq!(quoted.len(), 2);
    let policies = work.path().join("policies");
    let edit = |file: &str, from: &str, to: &str| {
        let path = policies.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{text}");
        std::fs::write(path, text.replace(from, to)).unwrap();
    };

    // The if-not-present Secret, filled in by the application, stays as it is.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
            kube::Api::namespaced(cluster.client().await, "policies");
        let patch = json!({"stringData": {"token": "real"}});
        api.patch(
            "webhook-token",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    });

    edit("migrate-config.yaml", "\"42\"", "\"43\"");
    let job_uid = uid(get(&cluster, "batch", "jobs", "policies", "migrate"));
    let args = ["diff", "--repo", "policies", "--applyset", "policies"];
    let (code, out, err) = tend_in(&args);
    assert_eq!(code, 1, "{out}\n{err}");
    for line in quoted[0].lines() {
        assert!(
            out.contains(line),
            "README quotes `{line}`; tend says:\n{out}"
        );
    }
    let (code, out, err) = tend_in(&["apply", "--repo", "policies", "--applyset", "policies"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_ne!(
        uid(get(&cluster, "batch", "jobs", "policies", "migrate")),
        job_uid
    );
    let secret = get(&cluster, "", "secrets", "policies", "webhook-token").unwrap();
    assert_eq!(secret["data"]["token"], "cmVhbA=="); // base64("real")

    // Without the annotation, a selector change fails with the quoted line.
    edit(
        "api.yaml",
        "  annotations:\n    tend.dev/replace: on-immutable\n",
        "",
    );
    edit("api.yaml", "{app: api}", "{app: api-v2}");
    let (code, out, err) = tend_in(&["apply", "--repo", "policies", "--applyset", "policies"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains(quoted[1].trim()), "{err}");
    // -v has the server's whole message.
    let (code, _, err) = tend_in(&["diff", "-v", "--repo", "policies", "--applyset", "policies"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("is invalid: spec.selector: Invalid value: v1.LabelSelector"),
        "{err}"
    );
}
