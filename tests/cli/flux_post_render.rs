//! A HelmRelease's `postRenderers` (README "Coming from Flux"): kustomize patches (strategic
//! merge, JSON 6902 with a target) and images over the release's manifests, several in
//! order, the hooks along unless `postRenderStrategy: nohooks`; v2beta2's deprecated
//! `patchesStrategicMerge` and `patchesJson6902`; a patch kustomize refuses stops the run at
//! the HelmRelease; v2's `commonMetadata` on every object after them.

use crate::common::*;
use tend_testserver::TestCluster;

const CHART: &str = "apiVersion: v2\nname: web\nversion: 1.0.0\n";

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: app\n          image: nginx:1.25\n        - name: sidecar\n          image: busybox:1.36\n";

const SERVICE: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  type: ClusterIP\n  selector: {app: web}\n  ports:\n    - port: 80\n";

const HOOK: &str = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n        - name: migrate\n          image: nginx:1.25\n";

/// Two post-renderers: the first a strategic merge patch (a container merged by name), a
/// JSON 6902 patch of the Service, one whose target matches nothing, and an image; the
/// second tests what the first wrote before it replaces it.
const POST_RENDERERS: &str = r#"  postRenderers:
    - kustomize:
        patches:
          - patch: |
              apiVersion: apps/v1
              kind: Deployment
              metadata:
                name: web
              spec:
                replicas: 3
                template:
                  spec:
                    containers:
                      - name: app
                        env:
                          - name: MODE
                            value: patched
          - target:
              kind: Service
            patch: |
              - op: replace
                path: /spec/type
                value: NodePort
          - target:
              kind: StatefulSet
            patch: |
              - op: remove
                path: /spec/replicas
        images:
          - name: nginx
            newTag: "1.27"
    - kustomize:
        patches:
          - target:
              kind: Deployment
              name: web
            patch: |
              - op: test
                path: /spec/replicas
                value: 3
              - op: replace
                path: /spec/replicas
                value: 5
"#;

fn release(version: &str, extra: &str) -> String {
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/{version}\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: flux-system\nspec:\n  interval: 1h\n  releaseName: web\n  targetNamespace: web\n  install:\n    createNamespace: true\n  chart:\n    spec:\n      chart: ./charts/web\n      sourceRef:\n        kind: GitRepository\n        name: flux-system\n{extra}"
    )
}

/// The chart and the release; with `hook`, a pre-install hook Job in the chart (which the
/// test API server would never run to completion).
fn release_site(release: &str, hook: bool) -> tempfile::TempDir {
    let mut files = vec![
        ("charts/web/Chart.yaml", CHART),
        ("charts/web/templates/deploy.yaml", DEPLOYMENT),
        ("charts/web/templates/svc.yaml", SERVICE),
        ("deploy/release.yaml", release),
    ];
    if hook {
        files.push(("charts/web/templates/hook.yaml", HOOK));
    }
    site(&files)
}

fn render(release: &str) -> (i32, String, String) {
    let dir = release_site(release, true);
    run(tend()
        .args(["render", "--path", "deploy", "--repo"])
        .arg(dir.path()))
}

/// The document of `kind` in a `tend render` stream.
fn object(stdout: &str, kind: &str) -> serde_json::Value {
    parse_stream(stdout)
        .into_iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {stdout}"))
}

#[test]
fn post_renderers_patch_the_release_in_order() {
    let (code, stdout, stderr) = render(&release("v2", POST_RENDERERS));
    assert_eq!(code, 0, "{stderr}");
    let deployment = object(&stdout, "Deployment");
    // The second post-renderer saw the first's replicas.
    assert_eq!(deployment["spec"]["replicas"], 5, "{stdout}");
    let containers = &deployment["spec"]["template"]["spec"]["containers"];
    // Merged by name: the sidecar stays, the app gets its env and the new image.
    assert_eq!(containers[0]["image"], "nginx:1.27", "{stdout}");
    assert_eq!(containers[0]["env"][0]["value"], "patched", "{stdout}");
    assert_eq!(containers[1]["image"], "busybox:1.36", "{stdout}");
    assert_eq!(object(&stdout, "Service")["spec"]["type"], "NodePort");
    // Helm 4 sends the hooks along (postRenderStrategy combined, the default).
    let job = object(&stdout, "Job");
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    assert!(!stdout.contains("postrender-filename"), "{stdout}");
    // Each object is still reported from its template.
    for template in ["deploy", "svc", "hook"] {
        assert!(
            stdout.contains(&format!(
                "release.yaml (Flux HelmRelease flux-system/web):1 (chart web, templates/{template}.yaml)"
            )),
            "{stdout}"
        );
    }
    // nohooks: Helm 3's way, the hook as the chart rendered it.
    let nohooks = format!("  postRenderStrategy: nohooks\n{POST_RENDERERS}");
    let (code, stdout, stderr) = render(&release("v2", &nohooks));
    assert_eq!(code, 0, "{stderr}");
    let job = object(&stdout, "Job");
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.25"
    );
    assert_eq!(object(&stdout, "Deployment")["spec"]["replicas"], 5);
}

#[test]
fn deprecated_patches_of_v2beta2_apply_and_v2_refuses_them() {
    let deprecated = "  postRenderers:\n    - kustomize:\n        patchesStrategicMerge:\n          - apiVersion: apps/v1\n            kind: Deployment\n            metadata:\n              name: web\n            spec:\n              replicas: 4\n        patchesJson6902:\n          - target:\n              version: v1\n              kind: Service\n              name: web\n            patch:\n              - op: add\n                path: /metadata/labels\n                value: {tier: front}\n";
    let (code, stdout, stderr) = render(&release("v2beta2", deprecated));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(object(&stdout, "Deployment")["spec"]["replicas"], 4);
    assert_eq!(
        object(&stdout, "Service")["metadata"]["labels"]["tier"],
        "front"
    );
    let (code, _, stderr) = render(&release("v2", deprecated));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("release.yaml:18: spec.postRenderers[0]: ")
            && stderr.contains("kustomize.patchesStrategicMerge is not a field here")
            && stderr.contains("removed it"),
        "{stderr}"
    );
}

#[test]
fn a_patch_kustomize_refuses_stops_the_run_at_the_release_and_writes_nothing() {
    let bad = "  postRenderers:\n    - kustomize:\n        patches:\n          - target:\n              kind: Deployment\n            patch: |\n              - op: frobnicate\n                path: /spec/replicas\n";
    let dir = release_site(&release("v2", bad), false);
    let cluster = TestCluster::start();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--path", "deploy"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("release.yaml (Flux HelmRelease flux-system/web):18")
            && stderr.contains("spec.postRenderers: post-renderer 0:")
            && stderr.contains("frobnicate"),
        "{stderr}"
    );
    assert_eq!(object_writes(&cluster), Vec::<String>::new());
}

#[test]
fn diff_and_apply_show_and_write_the_post_rendered_objects() {
    let dir = release_site(&release("v2", ""), false);
    let cluster = TestCluster::start();
    // Helm's install and upgrade wait for the release's Deployment: a controller is played.
    let apply = |dir: &std::path::Path| {
        with_controllers_played(&cluster, || {
            tend_on(&cluster, dir, &["apply", "--path", "deploy"])
        })
    };
    let (code, stdout, stderr) = apply(dir.path());
    assert_eq!(code, 0, "{stdout}{stderr}");
    let patched = release_site(&release("v2", POST_RENDERERS), false);
    let (code, stdout, stderr) = tend_on(&cluster, patched.path(), &["diff", "--path", "deploy"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("NodePort") && stdout.contains("nginx:1.27") && stdout.contains("MODE"),
        "{stdout}"
    );
    let (code, stdout, stderr) = apply(patched.path());
    assert_eq!(code, 0, "{stdout}{stderr}");
    let deployment = get(&cluster, "apps", "deployments", "web", "web").expect("applied");
    assert_eq!(deployment["spec"]["replicas"], 5);
    let (code, stdout, stderr) = tend_on(&cluster, patched.path(), &["diff", "--path", "deploy"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[test]
fn common_metadata_labels_and_annotates_every_object_of_the_release() {
    let common = "  commonMetadata:\n    labels:\n      team: a\n    annotations:\n      owner: team-a@example.com\n";
    let (code, stdout, stderr) = render(&release("v2", common));
    assert_eq!(code, 0, "{stderr}");
    for kind in ["Deployment", "Service", "Job"] {
        let metadata = &object(&stdout, kind)["metadata"];
        assert_eq!(metadata["labels"]["team"], "a", "{kind}: {stdout}");
        assert_eq!(
            metadata["annotations"]["owner"], "team-a@example.com",
            "{kind}: {stdout}"
        );
    }
    // The metadata of the objects only, not of the pods they make (helm-controller's
    // transformers name metadata/labels and metadata/annotations alone).
    let template = &object(&stdout, "Deployment")["spec"]["template"]["metadata"];
    assert!(template["labels"].get("team").is_none(), "{stdout}");
    // Only helm.toolkit.fluxcd.io/v2 has it.
    let (code, _, stderr) = render(&release("v2beta2", common));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("spec.commonMetadata is not a field of HelmRelease v2beta2"),
        "{stderr}"
    );
}
