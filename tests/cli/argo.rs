//! Argo CD repositories run unchanged (README "Coming from Argo CD"): Applications and
//! ApplicationSets expanded into what Argo CD would sync, on the test API server.

use crate::common::*;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use tend_testserver::TestCluster;

/// The fixture's repository URL: its Applications name it, so they mean the checkout.
const FIXTURE_URL: &str = "https://git.example.com/platform/deploy.git";

/// A git work tree holding `from`, whose `origin` is `url`.
fn checkout(from: &Path, url: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(from, dir.path());
    let repo = git2::Repository::init(dir.path()).unwrap();
    repo.remote("origin", url).unwrap();
    commit_all(&repo, "initial");
    dir
}

/// Play a controller: once `ns/name` exists, merge `status` into its status.
fn play(
    cluster: &TestCluster,
    ns: &str,
    (group, version, kind, plural): (&str, &str, &str, &str),
    name: &str,
    status: Value,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while cluster.object(group, plural, ns, name).is_none() {
        if Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
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

const JOBS: (&str, &str, &str, &str) = ("batch", "v1", "Job", "jobs");
const DEPLOYMENTS: (&str, &str, &str, &str) = ("apps", "v1", "Deployment", "deployments");
const STATEFULSETS: (&str, &str, &str, &str) = ("apps", "v1", "StatefulSet", "statefulsets");

fn job_complete() -> Value {
    json!({
        "startTime": "2026-11-25T10:00:00Z", "completionTime": "2026-11-25T10:00:05Z", "succeeded": 1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
            {"type": "Complete", "status": "True", "reason": "CompletionsReached"},
        ],
    })
}

fn rolled_out(replicas: i64) -> Value {
    json!({
        "observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
        "readyReplicas": replicas, "availableReplicas": replicas, "currentReplicas": replicas,
        "currentRevision": "r1", "updateRevision": "r1",
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
        ],
    })
}

/// `tend apply` of the app-of-apps fixture, its controllers played.
fn apply_fixture(cluster: &TestCluster, dir: &Path) -> (i32, String, String) {
    std::thread::scope(|s| {
        s.spawn(|| play(cluster, "shop", JOBS, "migrate", job_complete()));
        s.spawn(|| play(cluster, "shop", DEPLOYMENTS, "web", rolled_out(1)));
        s.spawn(|| play(cluster, "cache", STATEFULSETS, "team-redis", rolled_out(1)));
        s.spawn(|| play(cluster, "shop", JOBS, "smoke-test", job_complete()));
        tend_on(
            cluster,
            dir,
            &["apply", "--path", "bootstrap", "--timeout", "30s"],
        )
    })
}

#[test]
fn an_app_of_apps_applies_what_argo_cd_would_sync_and_a_second_diff_is_clean() {
    let repo = checkout(&fixture("argo-app-of-apps"), FIXTURE_URL);
    let cluster = TestCluster::start();
    let (code, out, err) = apply_fixture(&cluster, repo.path());
    assert_eq!(code, 0, "{out}\n{err}");

    // Plain manifests, with the destination namespace and the Namespace CreateNamespace makes.
    let ns = get(&cluster, "", "namespaces", "", "shop").expect("Namespace shop");
    assert_eq!(ns["metadata"]["labels"]["team"], "shop");
    assert!(get(&cluster, "", "configmaps", "shop", "shop-config").is_some());
    let service = get(&cluster, "", "services", "shop", "web").expect("Service web");
    assert_eq!(
        service["metadata"]["annotations"]["tend.dev/prune"],
        "disabled"
    );
    // Kustomize with the Application's options.
    let redis = get(&cluster, "apps", "statefulsets", "cache", "team-redis").expect("team-redis");
    assert_eq!(
        redis["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.example.com/redis:7.2"
    );
    assert_eq!(redis["metadata"]["labels"]["owner"], "platform");
    // Helm: values file, missing values file ignored, a parameter, the release name.
    let greeting =
        get(&cluster, "", "configmaps", "greeter", "hello-greeting").expect("chart output");
    assert_eq!(greeting["data"]["message"], "bonjour, production");
    assert_eq!(
        greeting["metadata"]["annotations"]["tend.dev/prune"],
        "disabled"
    );
    // Jsonnet with an extVar, a TLA and a library.
    let settings =
        get(&cluster, "", "configmaps", "shop", "settings-prod").expect("jsonnet output");
    assert_eq!(settings["data"]["replicas"], "3");
    assert_eq!(
        settings["metadata"]["labels"]["app.kubernetes.io/part-of"],
        "shop"
    );
    // The hooks ran: the smoke test deleted once it succeeded, the migration kept.
    assert!(get(&cluster, "batch", "jobs", "shop", "migrate").is_some());
    assert!(get(&cluster, "batch", "jobs", "shop", "smoke-test").is_none());
    // The Applications themselves are not applied: nothing would read them.
    assert!(!out.contains("+ argoproj.io/v1alpha1"), "{out}");
    assert!(out.contains("+ apps/v1 StatefulSet cache/team-redis  # workloads/kustomize (kustomize build) (Argo CD Application argocd/root → Application argocd/cache)"), "{out}");

    // The autoscaler's replica count is its own (ignoreDifferences): no difference.
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let api: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(cluster.client().await, "shop");
        let params = PatchParams {
            field_manager: Some("autoscaler".into()),
            ..Default::default()
        };
        let patch = json!({"spec": {"replicas": 5}});
        api.patch("web", &params, &Patch::Merge(&patch))
            .await
            .expect("scale");
    });
    let (code, out, err) = tend_on(&cluster, repo.path(), &["diff", "--path", "bootstrap"]);
    assert_eq!(code, 0, "{out}\n{err}");
}

/// The gitops-bridge control-plane template's URL: its cluster Secrets name it.
const BRIDGE_URL: &str =
    "https://github.com/gitops-bridge-dev/gitops-bridge-argocd-control-plane-template";

/// Argo CD's cluster Secret for `name` at `server`, labelled as gitops-bridge labels them.
fn cluster_secret(name: &str, server: &str, labels: &[(&str, &str)]) -> String {
    let labels: String = labels
        .iter()
        .map(|(k, v)| format!("    {k}: \"{v}\"\n"))
        .collect();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n{labels}  annotations:\n    addons_repo_url: {BRIDGE_URL}\n    addons_repo_basepath: \"\"\n    addons_repo_path: bootstrap/control-plane/addons\n    addons_repo_revision: main\n    cert_manager_namespace: cert-manager\nstringData:\n  name: {name}\n  server: {server}\n"
    )
}

/// A copy of the gitops-bridge template whose chart repositories are `charts` (the shared
/// chart repository, which holds cert-manager v1.21.1 and ingress-nginx 4.15.1), with a hub
/// (Argo CD's own cluster) and a spoke, both labelled for cert-manager and ingress-nginx, and
/// the hub for `extra` too.
fn gitops_bridge(charts: &str, extra: &[(&str, &str)]) -> tempfile::TempDir {
    let shared =
        repo_root().join("../shared/gitops-repos/gitops-bridge-argocd-control-plane-template");
    let copy = tempfile::tempdir().unwrap();
    copy_tree(&shared, copy.path());
    let appsets = copy.path().join("bootstrap/control-plane/addons");
    let mut stack = vec![appsets.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let text: String = text
                .lines()
                .map(|l| match l.split_once("addonChartRepository:") {
                    Some((indent, _)) => format!("{indent}addonChartRepository: {charts}\n"),
                    None => format!("{l}\n"),
                })
                .collect();
            let text = text
                .replace("addonChartVersion: v1.14.3", "addonChartVersion: v1.21.1")
                .replace("addonChartVersion: 4.10.0", "addonChartVersion: 4.15.1");
            std::fs::write(&path, text).unwrap();
        }
    }
    let enabled = [
        ("enable_cert_manager", "true"),
        ("enable_ingress_nginx", "true"),
    ];
    let hub_labels: Vec<(&str, &str)> = [("environment", "staging")]
        .into_iter()
        .chain(enabled)
        .chain(extra.iter().copied())
        .collect();
    let spoke_labels: Vec<(&str, &str)> = [("environment", "prod")]
        .into_iter()
        .chain(enabled)
        .collect();
    let clusters = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: argocd\n---\n{}---\n{}",
        cluster_secret("hub", "https://kubernetes.default.svc", &hub_labels),
        cluster_secret("spoke", "https://spoke.example.com:6443", &spoke_labels),
    );
    std::fs::write(appsets.join("clusters.yaml"), clusters).unwrap();
    let repo = git2::Repository::init(copy.path()).unwrap();
    repo.remote("origin", BRIDGE_URL).unwrap();
    commit_all(&repo, "the template, with its clusters");
    copy
}

fn serve_chart_repo() -> String {
    let dir = repo_root().join("../shared/gitops-repos/chart-repo");
    let files = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let name = format!("/{}", p.file_name().unwrap().to_string_lossy());
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    crate::helm::remote::serve(files).0
}

#[test]
fn gitops_bridge_application_sets_render_the_applications_of_two_labelled_clusters() {
    let charts = serve_chart_repo();
    let repo = gitops_bridge(&charts, &[]);
    let cluster = TestCluster::start();
    let args = ["diff", "--path", "bootstrap/control-plane/addons"];
    let (code, out, err) = tend_on(&cluster, repo.path(), &args);
    assert_eq!(code, 1, "{out}\n{err}");
    for app in ["cert-manager", "ingress-nginx"] {
        let appset = format!("ApplicationSet default/addons-{app}");
        // The hub is Argo CD's own cluster: its Applications are expanded, charts rendered.
        assert!(
            out.contains(&format!(
                "unit Argo CD {appset} → Application default/addon-hub-{app} at chart {app} "
            )),
            "{out}"
        );
        // The spoke is another cluster: its Applications are generated and named, not synced.
        assert!(
            out.contains(&format!(
                "unit Argo CD {appset} → Application default/addon-spoke-{app}: not expanded: it syncs to cluster spoke"
            )),
            "{out}"
        );
    }
    // The values of the merge generator's second cluster generator (environment: staging),
    // and the Application's inline values.
    assert!(
        out.contains("+ apps/v1 Deployment cert-manager/cert-manager "),
        "{out}"
    );
    assert!(
        out.contains("+ v1 Service ingress-nginx/ingress-nginx-controller "),
        "{out}"
    );

    // They apply (their controllers played), and a second diff is in sync.
    let (code, out, err) = std::thread::scope(|s| {
        for (ns, name) in [
            ("cert-manager", "cert-manager"),
            ("cert-manager", "cert-manager-cainjector"),
            ("cert-manager", "cert-manager-webhook"),
            ("ingress-nginx", "ingress-nginx-controller"),
        ] {
            let cluster = &cluster;
            s.spawn(move || play(cluster, ns, DEPLOYMENTS, name, rolled_out(1)));
        }
        for (ns, name) in [
            ("cert-manager", "cert-manager-startupapicheck"),
            ("ingress-nginx", "ingress-nginx-admission-create"),
            ("ingress-nginx", "ingress-nginx-admission-patch"),
        ] {
            let cluster = &cluster;
            s.spawn(move || play(cluster, ns, JOBS, name, job_complete()));
        }
        s.spawn(|| {
            let balanced = json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}});
            let services = ("", "v1", "Service", "services");
            play(
                &cluster,
                "ingress-nginx",
                services,
                "ingress-nginx-controller",
                balanced,
            )
        });
        let apply = [
            "apply",
            "--path",
            "bootstrap/control-plane/addons",
            "--timeout",
            "30s",
        ];
        tend_on(&cluster, repo.path(), &apply)
    });
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = tend_on(&cluster, repo.path(), &args);
    assert_eq!(code, 0, "{out}\n{err}");

    // A label enabling an addon whose chart the repository does not hold: the run fails,
    // naming the chart.
    let repo = gitops_bridge(&charts, &[("enable_metrics_server", "true")]);
    let (code, out, err) = tend_on(&cluster, repo.path(), &args);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("metrics-server"), "{err}");
}

#[test]
fn the_readme_section_runs_as_written() {
    use crate::shipping::{bin_dir, output, readme, readme_steps, shell, ReadmeStep};
    let readme = readme();
    let start = readme
        .find("\n## Coming from Argo CD\n")
        .expect("README section");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    let section = &rest[..end];
    let cluster = TestCluster::start();
    let bin = bin_dir();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut commands = Vec::new();
    for step in readme_steps(section) {
        match step {
            ReadmeStep::File(path, text) => {
                let path = work.path().join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            ReadmeStep::Command(command) => commands.push(command),
        }
    }
    assert_eq!(commands.len(), 5, "{commands:?}");
    let mut outputs = Vec::new();
    for command in &commands {
        let mut cmd = shell("bash", bin.path(), home.path(), &cluster, command);
        cmd.current_dir(work.path());
        let (code, stdout, stderr) = output(&mut cmd);
        let expected = if command.starts_with("tend diff") {
            1
        } else {
            0
        };
        assert_eq!(
            code, expected,
            "`{command}` exited {code}:\n{stdout}\n{stderr}"
        );
        outputs.push(stdout);
    }
    let chain = "Argo CD Application argocd/root → ApplicationSet argocd/web → Application argocd/web-staging";
    assert!(
        outputs[2].contains(&format!("web (kustomize build) ({chain}):1")),
        "{}",
        outputs[2]
    );
    assert!(
        outputs[3].contains(&format!("unit {chain}: expanded, 2 to create")),
        "{}",
        outputs[3]
    );
    let cm = get(&cluster, "", "configmaps", "web", "staging-web").expect("applied");
    assert_eq!(cm["data"]["greeting"], "hello");
    // A second diff finds nothing to do.
    let mut cmd = shell("bash", bin.path(), home.path(), &cluster, &commands[3]);
    cmd.current_dir(work.path());
    let (code, stdout, stderr) = output(&mut cmd);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

/// An Application of the fixture's URL syncing `path`, named `name`.
fn application(name: &str, path: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: {FIXTURE_URL}\n    path: {path}\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: {name}\n"
    )
}

fn checkout_of(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = site(files);
    let repo = git2::Repository::init(dir.path()).unwrap();
    repo.remote("origin", FIXTURE_URL).unwrap();
    commit_all(&repo, "initial");
    dir
}

#[test]
fn cycles_service_generators_and_plugins_are_errors_at_their_lines() {
    let cluster = TestCluster::start();
    let cases: [(&[(&str, &str)], &str); 3] = [
        (
            &[("root/app.yaml", &application("loop", "root"))],
            "Application argocd/loop expands itself",
        ),
        (
            &[(
                "root/pr.yaml",
                "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: previews\n  namespace: argocd\nspec:\n  generators:\n    - pullRequest:\n        github: {owner: o, repo: r}\n  template:\n    metadata: {name: 'pr-{{number}}'}\n    spec: {project: default, destination: {name: in-cluster}}\n",
            )],
            "the pullRequest generator needs a service tend does not run",
        ),
        (
            &[(
                "root/cmp.yaml",
                &application("cmp", "root").replace("    path: root\n", "    path: root\n    plugin: {name: tanka}\n"),
            )],
            "a config management plugin (source.plugin)",
        ),
    ];
    for (files, expected) in cases {
        let dir = checkout_of(files);
        let (code, out, err) = tend_on(&cluster, dir.path(), &["apply", "--path", "root"]);
        assert_eq!(code, 2, "{out}\n{err}");
        assert!(err.contains(expected), "{err}");
        assert!(err.contains(".yaml"), "names the file: {err}");
        assert!(object_writes(&cluster).is_empty(), "nothing written");
    }
}

#[test]
fn another_clusters_application_is_reported_not_synced_and_controller_objects_can_be_applied() {
    let dir = checkout_of(&[
        (
            "root/spoke.yaml",
            &application("spoke", "web").replace(
                "server: https://kubernetes.default.svc",
                "server: https://spoke.example.com:6443",
            ),
        ),
        (
            "web/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
        ),
    ]);
    let (code, out, err) = run(tend()
        .args(["render", "--path", "root", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("ConfigMap"), "{out}");
    // --apply-controller-objects: the Application is an ordinary object.
    let (code, out, err) = run(tend()
        .args([
            "render",
            "--apply-controller-objects",
            "--path",
            "root",
            "--repo",
        ])
        .arg(dir.path()));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("kind: Application"), "{out}");
    let cluster = TestCluster::start();
    let (code, out, err) = tend_on(&cluster, dir.path(), &["diff", "--path", "root"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("unit Argo CD Application argocd/spoke: not expanded: it syncs to cluster https://spoke.example.com:6443"),
        "{out}"
    );
}

#[test]
fn a_live_argo_cd_syncing_the_same_application_is_not_fought() {
    let dir = checkout_of(&[
        ("root/web.yaml", &application("web", "web")),
        (
            "web/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
        ),
    ]);
    let cluster = TestCluster::start();
    cluster
        .seed(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "applications.argoproj.io"},
            "spec": {
                "group": "argoproj.io", "scope": "Namespaced",
                "names": {"kind": "Application", "plural": "applications", "singular": "application", "listKind": "ApplicationList"},
                "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
            },
        }))
        .unwrap();
    cluster.seed(ns_value("argocd")).unwrap();
    cluster.seed(ns_value("web")).unwrap();
    let live = |automated: Value| {
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
               "metadata": {"name": "web", "namespace": "argocd"},
               "spec": {"syncPolicy": automated}})
    };
    cluster
        .seed(live(json!({"automated": {"prune": true}})))
        .unwrap();
    let (code, out, err) = tend_on(&cluster, dir.path(), &["apply", "--path", "root"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("argocd app set web --sync-policy none"),
        "{err}"
    );
    assert!(object_writes(&cluster).is_empty(), "nothing written");
    // diff is the read-only preview.
    let (code, out, err) = tend_on(&cluster, dir.path(), &["diff", "--path", "root"]);
    assert_eq!(code, 1, "{out}\n{err}");
}

fn ns_value(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// An Application of the fixture's URL syncing `path` into namespace default, to
/// `destination` (`name: b`, `server: URL`).
fn application_to(name: &str, path: &str, destination: &str) -> String {
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: {FIXTURE_URL}\n    path: {path}\n  destination:\n    {destination}\n    namespace: default\n"
    )
}

/// In a run over several clusters, an Application syncs to the cluster of the run its
/// destination names (by name, or by the server its kubeconfig context names), and the
/// clusters generator selects among the run's clusters by their Fleet labels.
#[test]
fn argo_destinations_and_the_clusters_generator_follow_the_runs_clusters() {
    let (a, b) = (TestCluster::start(), TestCluster::start());
    let appset = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: gen\n  namespace: argocd\nspec:\n  generators:\n  - clusters:\n      selector:\n        matchLabels:\n          env: dev\n  template:\n    metadata:\n      name: 'gen-{{{{name}}}}-{{{{metadata.labels.env}}}}'\n    spec:\n      project: default\n      source:\n        repoURL: {FIXTURE_URL}\n        path: gen\n      destination:\n        server: '{{{{server}}}}'\n        namespace: default\n"
    );
    let configmap = |name: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  x: \"1\"\n")
    };
    let dir = checkout_of(&[
        ("root/to-b.yaml", &application_to("to-b", "web", "name: b")),
        (
            "root/to-a.yaml",
            &application_to("to-a", "other", &format!("server: {}", a.url())),
        ),
        (
            "root/elsewhere.yaml",
            &application_to("elsewhere", "lost", "server: https://x.example.com"),
        ),
        ("root/gen.yaml", &appset),
        ("web/cm.yaml", &configmap("web")),
        ("other/cm.yaml", &configmap("other")),
        ("gen/cm.yaml", &configmap("gen")),
        ("lost/cm.yaml", &configmap("lost")),
    ]);
    let config = tempfile::tempdir().unwrap();
    let kubeconfig = crate::fleet::kubeconfig(config.path(), &[("a", a.url()), ("b", b.url())]);
    let fleet = config.path().join("fleet.yaml");
    std::fs::write(
        &fleet,
        "apiVersion: tend.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: two\nspec:\n  clusters:\n  - name: a\n    labels:\n      env: prod\n  - name: b\n    labels:\n      env: dev\n",
    )
    .unwrap();
    let tend_fleet = |command: &str| {
        run(tend()
            .args([command, "--path", "root", "--fleet"])
            .arg(&fleet)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--repo")
            .arg(dir.path()))
    };
    let (code, out, err) = tend_fleet("apply");
    assert_eq!(code, 0, "{out}\n{err}");
    let names = |cluster: &TestCluster| {
        let mut names: Vec<String> = cluster
            .objects("", "configmaps")
            .iter()
            .filter(|o| o["metadata"]["namespace"] == "default")
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .filter(|n| n != "kube-root-ca.crt")
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&a), ["other"], "{out}");
    assert_eq!(names(&b), ["gen", "web"], "{out}");
    assert!(
        out.contains("Application argocd/to-b: not expanded: it syncs to cluster b of the run"),
        "{out}"
    );
    assert!(
        out.contains("ApplicationSet argocd/gen → Application argocd/gen-b-dev"),
        "{out}"
    );
    assert!(
        out.contains(
            "Application argocd/elsewhere: not expanded: it syncs to cluster https://x.example.com"
        ),
        "{out}"
    );
    let (code, out, err) = tend_fleet("diff");
    assert_eq!(code, 0, "{out}\n{err}");
}

fn waved_application(name: &str, wave: Option<&str>, path: &str) -> String {
    let annotations = wave.map_or(String::new(), |w| {
        format!("  annotations:\n    argocd.argoproj.io/sync-wave: \"{w}\"\n")
    });
    format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\n{annotations}spec:\n  project: default\n  source:\n    repoURL: {FIXTURE_URL}\n    targetRevision: HEAD\n    path: {path}\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: waves\n"
    )
}

fn config_map(name: &str, wave: Option<&str>) -> String {
    let annotations = wave.map_or(String::new(), |w| {
        format!("  annotations:\n    argocd.argoproj.io/sync-wave: \"{w}\"\n")
    });
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: waves\n{annotations}data: {{}}\n")
}

/// The waves `tend render -o json` gives each ConfigMap, by name.
fn rendered_waves(repo: &Path) -> Vec<(String, Option<String>)> {
    let (code, out, err) = run(tend()
        .args(["render", "-o", "json", "--path", "bootstrap", "--repo"])
        .arg(repo));
    assert_eq!(code, 0, "{err}");
    let list: Value = serde_json::from_str(&out).unwrap();
    let mut waves: Vec<(String, Option<String>)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "ConfigMap")
        .map(|o| {
            let annotations = &o["metadata"]["annotations"];
            let wave = annotations["tend.dev/wave"]
                .as_str()
                .or(annotations["argocd.argoproj.io/sync-wave"].as_str());
            (
                o["metadata"]["name"].as_str().unwrap().to_string(),
                wave.map(str::to_string),
            )
        })
        .collect();
    waves.sort();
    waves
}

#[test]
fn an_applications_own_sync_wave_moves_what_it_syncs() {
    let tmp = tempfile::tempdir().unwrap();
    let files = [
        (
            "bootstrap/root.yaml",
            waved_application("root", None, "apps"),
        ),
        (
            "apps/infra.yaml",
            waved_application("infra", Some("-1"), "infra"),
        ),
        ("apps/web.yaml", waved_application("web", Some("2"), "web")),
        ("apps/plain.yaml", config_map("plain", None)),
        ("infra/namespace.yaml", ns_yaml("waves")),
        ("infra/config.yaml", config_map("infra", None)),
        ("web/config.yaml", config_map("web-config", None)),
        ("web/late.yaml", config_map("web-late", Some("1"))),
    ];
    for (path, text) in &files {
        let path = tmp.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let repo = checkout(tmp.path(), FIXTURE_URL);
    // infra's resources sync a step before the root's own objects, web's two after, each
    // keeping its own order inside the step.
    assert_eq!(
        rendered_waves(repo.path()),
        vec![
            ("infra".to_string(), Some("-100".to_string())),
            ("plain".to_string(), None),
            ("web-config".to_string(), Some("200".to_string())),
            ("web-late".to_string(), Some("201".to_string())),
        ]
    );
    // Applied in that order on the test API server, then in sync.
    let cluster = TestCluster::start();
    let args = ["apply", "--path", "bootstrap"];
    let (code, out, err) = tend_on(&cluster, repo.path(), &args);
    assert_eq!(code, 0, "{out}\n{err}");
    let writes = object_writes(&cluster);
    let at = |name: &str| {
        writes
            .iter()
            .position(|w| w.contains("/configmaps") && !w.contains("dry run") && w.contains(name))
            .unwrap_or_else(|| panic!("{name} written: {writes:#?}"))
    };
    assert!(
        at("infra") < at("plain") && at("plain") < at("web-config"),
        "{writes:#?}"
    );
    assert!(at("web-config") < at("web-late"), "{writes:#?}");
    let (code, out, err) = tend_on(&cluster, repo.path(), &["diff", "--path", "bootstrap"]);
    assert_eq!(code, 0, "{out}\n{err}");

    // A wave that is not a whole number: exit 2 at the Application, nothing written.
    let web = repo.path().join("apps/web.yaml");
    std::fs::write(&web, waved_application("web", Some("soon"), "web")).unwrap();
    let before = object_writes(&cluster).len();
    let (code, _, err) = tend_on(&cluster, repo.path(), &args);
    assert_eq!(code, 2);
    assert!(
        err.contains("apps/web.yaml")
            && err.contains(":7: argocd.argoproj.io/sync-wave: \"soon\" is not a whole number"),
        "{err}"
    );
    assert_eq!(object_writes(&cluster).len(), before);
}

#[test]
fn ignore_differences_by_field_manager_and_jq_leave_those_fields_to_others() {
    let ignore = |manager: &str| {
        format!("  ignoreDifferences:\n    - group: apps\n      kind: Deployment\n      managedFieldsManagers: [{manager}]\n    - group: apps\n      kind: Deployment\n      name: web\n      jqPathExpressions:\n        - .metadata.labels.release\n        - '.spec.template.spec.containers[] | select(.name == \"debug\")'\n")
    };
    let app = |manager: &str| {
        waved_application("web", None, "web").replace(
            "  destination:",
            &format!("{}  destination:", ignore(manager)),
        )
    };
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: waves\n  labels: {app: web, release: \"1\"}\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: app\n          image: nginx:1.27\n        - name: debug\n          image: busybox:1.36\n";
    let tmp = tempfile::tempdir().unwrap();
    let files = [
        (
            "bootstrap/root.yaml",
            waved_application("root", None, "apps"),
        ),
        ("apps/web.yaml", app("autoscaler")),
        ("apps/namespace.yaml", ns_yaml("waves")),
        ("web/deployment.yaml", deployment.to_string()),
    ];
    for (path, text) in &files {
        let path = tmp.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let repo = checkout(tmp.path(), FIXTURE_URL);
    let cluster = TestCluster::start();
    let apply = ["apply", "--path", "bootstrap"];
    let (code, out, err) = tend_on(&cluster, repo.path(), &apply);
    assert_eq!(code, 0, "{out}\n{err}");
    // What jq selects is not written: no release label, no debug container.
    let web = get(&cluster, "apps", "deployments", "waves", "web").expect("web");
    assert_eq!(web["metadata"]["labels"].get("release"), None, "{web}");
    let containers = web["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 1, "{web}");
    assert_eq!(web["spec"]["replicas"], 2);

    // Another writer scales it and labels it: neither is a difference, nor overwritten.
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let api: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(cluster.client().await, "waves");
        for (manager, patch) in [
            ("autoscaler", json!({"spec": {"replicas": 5}})),
            (
                "labeller",
                json!({"metadata": {"labels": {"release": "7"}}}),
            ),
        ] {
            let params = PatchParams {
                field_manager: Some(manager.into()),
                ..Default::default()
            };
            api.patch("web", &params, &Patch::Merge(&patch))
                .await
                .expect("patch");
        }
    });
    let diff = ["diff", "--path", "bootstrap"];
    let (code, out, err) = tend_on(&cluster, repo.path(), &diff);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = tend_on(&cluster, repo.path(), &apply);
    assert_eq!(code, 0, "{out}\n{err}");
    let web = get(&cluster, "apps", "deployments", "waves", "web").expect("web");
    assert_eq!(web["spec"]["replicas"], 5, "the autoscaler's count stays");
    assert_eq!(web["metadata"]["labels"]["release"], "7");
    assert_eq!(
        web["metadata"]["annotations"]["tend.dev/ignore-fields-of"],
        "autoscaler"
    );

    // Naming another manager: the autoscaler's count is a difference again.
    std::fs::write(repo.path().join("apps/web.yaml"), app("someone-else")).unwrap();
    let (code, out, _) = tend_on(&cluster, repo.path(), &diff);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("replicas"), "{out}");

    // A jq expression that does not parse: exit 2 at the Application, nothing written.
    let broken = app("autoscaler").replace(".metadata.labels.release", ".metadata.labels[");
    std::fs::write(repo.path().join("apps/web.yaml"), broken).unwrap();
    let before = object_writes(&cluster).len();
    let (code, _, err) = tend_on(&cluster, repo.path(), &apply);
    assert_eq!(code, 2);
    assert!(
        err.contains("apps/web.yaml")
            && err.contains("spec.ignoreDifferences[1].jqPathExpressions: \".metadata.labels[\""),
        "{err}"
    );
    assert_eq!(object_writes(&cluster).len(), before);
}
