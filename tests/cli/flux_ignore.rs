//! What source-controller leaves out of a source's artifact (`.sourceignore` files and
//! `spec.ignore` of a GitRepository or an OCIRepository, else Flux's default patterns) is
//! not read by a Kustomization's build, as kustomize-controller never gets it.

use crate::common::*;

fn config_map(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  from: {name}\n")
}

/// A bootstrap layout whose `apps` Kustomization builds `./apps` (no kustomization.yaml:
/// every YAML file below it), with `extra` files and the bootstrap GitRepository's `ignore`.
fn ignore_site(spec_ignore: &str, extra: &[(&str, &str)]) -> tempfile::TempDir {
    let git_repository = format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m\n  url: https://example.invalid/fleet.git\n  ref:\n    branch: main\n{spec_ignore}");
    let mut files = vec![
        ("clusters/dev/flux-system/gotk-sync.yaml", git_repository.as_str()),
        (
            "clusters/dev/apps.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        ),
    ];
    let app = config_map("app");
    let example = config_map("example");
    let cloudbuild = config_map("cloudbuild");
    files.push(("apps/app.yaml", &app));
    files.push(("apps/docs/example.yaml", &example));
    files.push(("apps/cloudbuild.yaml", &cloudbuild));
    files.extend_from_slice(extra);
    site(&files)
}

fn render(dir: &tempfile::TempDir) -> (i32, String, String) {
    run(tend()
        .args(["render", "--path", "clusters/dev", "--repo"])
        .arg(dir.path()))
}

#[test]
fn a_sourceignore_leaves_files_out_of_a_generated_kustomization() {
    // Without a pattern of the user's, Flux's defaults leave cloudbuild.yaml out.
    let dir = ignore_site("", &[]);
    let (code, stdout, stderr) = render(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("from: app\n"), "{stdout}");
    assert!(stdout.contains("from: example\n"), "{stdout}");
    assert!(!stdout.contains("from: cloudbuild"), "{stdout}");

    // A .sourceignore below the root is scoped to its directory; once a pattern exists, the
    // defaults no longer apply.
    let dir = ignore_site("", &[("apps/.sourceignore", "# not shipped\ndocs/\n")]);
    let (code, stdout, stderr) = render(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("from: app\n"), "{stdout}");
    assert!(!stdout.contains("from: example"), "{stdout}");
    assert!(stdout.contains("from: cloudbuild\n"), "{stdout}");

    // A kept build reads the archive: a change of .sourceignore changes the build.
    let cache = tempfile::tempdir().unwrap();
    let cached = || {
        run(tend()
            .args(["render", "-v", "--path", "clusters/dev", "--cache-dir"])
            .arg(cache.path())
            .arg("--repo")
            .arg(dir.path()))
    };
    let (code, first, stderr) = cached();
    assert_eq!(code, 0, "{stderr}");
    let (code, second, stderr) = cached();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(first, second);
    assert!(stderr.contains("apps built as kept"), "{stderr}");
    std::fs::write(dir.path().join("apps/.sourceignore"), "cloudbuild.yaml\n").unwrap();
    let (code, third, stderr) = cached();
    assert_eq!(code, 0, "{stderr}");
    assert!(third.contains("from: example\n"), "{third}");
    assert!(!third.contains("from: cloudbuild"), "{third}");
    std::fs::write(dir.path().join("apps/.sourceignore"), "docs/\n").unwrap();

    // Left out, it is not applied either.
    let cluster = tend_testserver::TestCluster::start();
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply", "--path", "clusters/dev"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(get(&cluster, "", "configmaps", "default", "app").is_some());
    assert!(get(&cluster, "", "configmaps", "default", "example").is_none());
}

#[test]
fn spec_ignore_of_a_git_repository_is_read_after_the_sourceignore_files() {
    let dir = ignore_site(
        "  ignore: |\n    # keep the examples\n    !/apps/docs/\n",
        &[(".sourceignore", "docs/\n")],
    );
    let (code, stdout, stderr) = render(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("from: example\n"), "{stdout}");

    let dir = ignore_site("  ignore: /apps/docs\n", &[]);
    let (code, stdout, stderr) = render(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains("from: example"), "{stdout}");
    assert!(stdout.contains("from: cloudbuild\n"), "{stdout}");

    // Not gitignore text: refused at its line.
    let dir = ignore_site("  ignore:\n    - docs/\n", &[]);
    let (code, _, stderr) = render(&dir);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("gotk-sync.yaml:") && stderr.contains("spec.ignore is not a string"),
        "{stderr}"
    );
}

/// fluxcd/flux2-kustomize-helm-example's `.sourceignore`: everything but the listed
/// directories is left out, so a resource elsewhere is not found, as Flux would not find it.
#[test]
fn negation_keeps_only_the_listed_directories() {
    let extra = [
        (
            "apps/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - app.yaml\n  - ../shared\n",
        ),
        (
            "shared/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - shared.yaml\n",
        ),
        ("shared/shared.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: default\n"),
    ];
    let mut files = extra.to_vec();
    files.push((".sourceignore", "/*\n!/apps/\n!/clusters/\n"));
    let dir = ignore_site("", &files);
    let (code, _, stderr) = render(&dir);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("shared"), "{stderr}");

    files.pop();
    files.push((".sourceignore", "/*\n!/apps/\n!/clusters/\n!/shared/\n"));
    let dir = ignore_site("", &files);
    let (code, stdout, stderr) = render(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("name: shared\n"), "{stdout}");
    assert!(stdout.contains("from: app\n"), "{stdout}");
}

/// A registry holding the Flux artifact `manifests/app` (no kustomization: every YAML file),
/// with a `tests/` directory of objects.
fn artifact_registry() -> String {
    use crate::helm::registry::{not_found, serve, sha};
    use crate::helm::subcharts::tgz;
    let layer = tgz(&[
        ("./app.yaml", &config_map("app")),
        ("./tests/fixture.yaml", &config_map("fixture")),
    ]);
    let digest = format!("sha256:{}", sha(&layer));
    let (base, _) = serve(move |request| {
        let path = request.path.as_str();
        if path == "/v2/manifests/app/manifests/1.0.0" {
            let manifest = format!(
                r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.cncf.flux.config.v1+json","digest":"sha256:{}","size":2}},"layers":[{{"mediaType":"application/vnd.cncf.flux.content.v1.tar+gzip","digest":"{digest}","size":{}}}]}}"#,
                sha(b"{}"),
                layer.len()
            );
            return (200, vec![], manifest.into_bytes());
        }
        if path == format!("/v2/manifests/app/blobs/{digest}") {
            return (200, vec![], layer.clone());
        }
        not_found()
    });
    base.replace("http://", "oci://")
}

#[test]
fn spec_ignore_of_an_oci_repository_leaves_files_out() {
    let registry = artifact_registry();
    let oci_site = |extra: &str| {
        site(&[
            (
                "clusters/dev/flux-system/gotk-sync.yaml",
                "# This file will be generated automatically by flux boostrap.\n",
            ),
            (
                "clusters/dev/app.yaml",
                &format!("apiVersion: source.toolkit.fluxcd.io/v1beta2\nkind: OCIRepository\nmetadata:\n  name: app\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: {registry}/manifests/app\n  ref:\n    tag: 1.0.0\n{extra}---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: app\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./\n  prune: true\n  sourceRef:\n    kind: OCIRepository\n    name: app\n"),
            ),
        ])
    };
    let render = |dir: &tempfile::TempDir| {
        run(tend()
            .args(["render", "--path", "clusters/dev", "--cache-dir"])
            .arg(dir.path().join(".cache"))
            .arg("--repo")
            .arg(dir.path()))
    };
    let dir = oci_site("");
    let (code, stdout, stderr) = render(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("from: fixture\n"), "{stdout}");
    let dir = oci_site("  ignore: |\n    tests/\n");
    let (code, stdout, stderr) = render(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("from: app\n"), "{stdout}");
    assert!(!stdout.contains("from: fixture"), "{stdout}");
}
