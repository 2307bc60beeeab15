//! Layouts of Argo CD repositories beyond plain app of apps: an app of apps written as a
//! Helm chart (argoproj/argocd-example-apps' `apps/`), and the hooks such repositories hold
//! (`generateName`, Helm's hook annotations on plain manifests, `Sync` hooks).

use crate::common::*;
use tend_testserver::TestCluster;

const URL: &str = "https://git.example.com/platform/examples.git";

fn examples_repository() -> tempfile::TempDir {
    let root = format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: apps\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: {URL}\n    targetRevision: HEAD\n    path: apps\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: argocd\n");
    let values =
        format!("config:\n  repoURL: {URL}\napplications:\n  - name: guestbook\n  - name: hooks\n");
    let template = "{{- range .Values.applications }}\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {{ printf \"example.%s\" .name | quote }}\n  namespace: argocd\nspec:\n  project: default\n  source:\n    path: {{ .name }}\n    repoURL: {{ $.Values.config.repoURL }}\n    targetRevision: HEAD\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: {{ .name }}\n  syncPolicy:\n    syncOptions:\n      - CreateNamespace=true\n---\n{{ end -}}\n";
    let hooks = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\n  annotations:\n    helm.sh/hook: pre-install\nspec:\n  template:\n    spec:\n      containers:\n        - name: migrate\n          image: alpine:latest\n      restartPolicy: Never\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: maint-page-up\n  annotations:\n    argocd.argoproj.io/hook: Sync\n    argocd.argoproj.io/sync-wave: \"1\"\nspec:\n  template:\n    spec:\n      containers:\n        - name: up\n          image: alpine:latest\n      restartPolicy: Never\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frontend\n  annotations:\n    argocd.argoproj.io/sync-wave: \"2\"\ndata:\n  k: v\n";
    let dir = site(&[
        ("root/app.yaml", &root),
        (
            "apps/Chart.yaml",
            "apiVersion: v2\nname: apps\nversion: 1.0.0\n",
        ),
        ("apps/values.yaml", &values),
        ("apps/templates/applications.yaml", template),
        (
            "guestbook/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guestbook\ndata:\n  k: v\n",
        ),
        ("hooks/manifests.yaml", hooks),
    ]);
    let repo = git2::Repository::init(dir.path()).unwrap();
    repo.remote("origin", URL).unwrap();
    commit_all(&repo, "initial");
    dir
}

#[test]
fn an_app_of_apps_chart_expands_the_applications_it_renders() {
    let dir = examples_repository();
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "root", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(
            "# Source: guestbook/cm.yaml (Argo CD Application argocd/apps → Application argocd/example.guestbook)"
        ),
        "{stdout}"
    );
    // Helm's hook annotation on a plain manifest makes it a hook, as Argo CD reads it, and
    // its generateName a stable name.
    let job = stdout
        .split("---\n")
        .find(|doc| doc.contains("helm.sh/hook: pre-install"))
        .expect("the hook");
    assert!(job.contains("tend.dev/hook: pre-apply"), "{job}");
    assert!(job.contains("  name: migrate-"), "{job}");
    assert!(!job.contains("generateName"), "{job}");
    let (_, again, _) = run(tend()
        .args(["render", "--path", "root", "--repo"])
        .arg(dir.path()));
    assert_eq!(stdout, again, "the generated name is stable");
}

#[test]
fn sync_hooks_and_generated_names_run_as_hooks_in_their_wave() {
    let cluster = TestCluster::start();
    let dir = examples_repository();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff", "--path", "root"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("hook pre-apply (wave 1) Job hooks/maint-page-up: would run"),
        "{stdout}"
    );
    assert!(
        stdout.contains("hook pre-apply (wave 0) Job hooks/migrate-"),
        "{stdout}"
    );
}

#[test]
fn directories_an_application_syncs_are_its_own_not_also_the_runs() {
    // The whole app of apps in the directory tend runs on (christianh814/gitops-examples'
    // app-of-apps/): the root Application, the Applications it syncs, their manifests, and
    // a directory for another cluster.
    let app = |name: &str, path: &str, server: &str| {
        format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\nspec:\n  project: default\n  source:\n    repoURL: {URL}\n    targetRevision: main\n    path: {path}\n  destination:\n    server: {server}\n    namespace: shop\n")
    };
    let here = "https://kubernetes.default.svc";
    let dir = site(&[
        ("site/root.yaml", &app("root", "site/apps", here)),
        (
            "site/apps/frontend.yaml",
            &app("frontend", "site/manifests/frontend", here),
        ),
        (
            "site/apps/elsewhere.yaml",
            &app(
                "elsewhere",
                "site/manifests/elsewhere",
                "https://other.example.com:6443",
            ),
        ),
        (
            "site/manifests/frontend/kustomization.yaml",
            "resources: [cm.yaml]\n",
        ),
        (
            "site/manifests/frontend/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frontend\n  namespace: shop\n",
        ),
        (
            "site/manifests/elsewhere/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: shop\n",
        ),
    ]);
    let repo = git2::Repository::init(dir.path()).unwrap();
    repo.remote("origin", URL).unwrap();
    commit_all(&repo, "initial");
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "site", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    // Once, through its Application; the other cluster's not at all.
    assert_eq!(stdout.matches("name: frontend\n").count(), 1, "{stdout}");
    assert!(
        stdout.contains("(Argo CD Application argocd/frontend)"),
        "{stdout}"
    );
    assert!(!stdout.contains("name: elsewhere"), "{stdout}");
}

#[test]
fn the_files_a_git_files_generator_reads_are_its_parameters_not_manifests() {
    let appset = format!("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata:\n  name: shops\n  namespace: argocd\nspec:\n  generators:\n    - git:\n        repoURL: {URL}\n        revision: HEAD\n        files:\n          - path: \"shops/config/*.yaml\"\n  template:\n    metadata:\n      name: 'shop-{{{{shop.name}}}}'\n    spec:\n      project: default\n      source:\n        repoURL: {URL}\n        targetRevision: HEAD\n        path: 'shops/apps/{{{{shop.name}}}}'\n      destination:\n        server: https://kubernetes.default.svc\n        namespace: '{{{{shop.name}}}}'\n");
    let dir = site(&[
        ("shops/appset.yaml", &appset),
        ("shops/config/north.yaml", "shop:\n  name: north\n"),
        ("shops/config/south.yaml", "shop:\n  name: south\n"),
        (
            "shops/apps/north/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: north\ndata:\n  k: v\n",
        ),
        (
            "shops/apps/south/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: south\ndata:\n  k: v\n",
        ),
    ]);
    let repo = git2::Repository::init(dir.path()).unwrap();
    repo.remote("origin", URL).unwrap();
    commit_all(&repo, "initial");
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "shops", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    let objects = parse_stream(&stdout);
    let names: Vec<_> = objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        names.len(),
        2,
        "the two shops' ConfigMaps once each, the config files not at all: {names:?}"
    );
    assert!(
        names.contains(&"north/north".to_string()) && names.contains(&"south/south".to_string()),
        "{names:?}"
    );
}

#[test]
fn a_values_file_named_from_a_ref_source_is_the_applications_input_read_as_helm_reads_it() {
    let app = format!("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n  namespace: argocd\nspec:\n  project: default\n  sources:\n    - repoURL: {URL}\n      targetRevision: HEAD\n      path: charts/shop\n      helm:\n        valueFiles:\n          - $values/apps/shop-values.yaml\n    - repoURL: {URL}\n      targetRevision: HEAD\n      ref: values\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: shop\n");
    let dir = site(&[
        ("apps/shop.yaml", &app),
        ("apps/shop-values.yaml", "greeting: hi\nenabled: yes\n"),
        ("charts/shop/Chart.yaml", "apiVersion: v2\nname: shop\nversion: 1.0.0\n"),
        ("charts/shop/values.yaml", "greeting: hello\nenabled: false\n"),
        (
            "charts/shop/templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\ndata:\n  greeting: {{ .Values.greeting }}\n  enabled: {{ kindOf .Values.enabled | quote }}\n",
        ),
    ]);
    let repo = git2::Repository::init(dir.path()).unwrap();
    repo.remote("origin", URL).unwrap();
    commit_all(&repo, "initial");
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "apps", "--repo"])
        .arg(dir.path()));
    assert_eq!(
        code, 0,
        "the values file is not walked as a manifest: {stderr}"
    );
    let objects = parse_stream(&stdout);
    assert_eq!(objects.len(), 1, "{stdout}");
    assert_eq!(objects[0]["data"]["greeting"], "hi");
    // YAML 1.1, as Helm reads values files: `yes` is a boolean.
    assert_eq!(objects[0]["data"]["enabled"], "bool");
}
