//! Flux 2.7's ArtifactGenerator and ExternalArtifact (the layout of fluxcd/flux2-kustomize-
//! helm-example): Kustomizations whose sourceRef is an artifact composed from the checkout.

use crate::common::*;
use tend_testserver::TestCluster;

const GENERATOR: &str = "apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata:
  name: flux-system
  namespace: flux-system
spec:
  sources:
    - alias: monorepo
      kind: GitRepository
      name: flux-system
  artifacts:
    - name: infrastructure
      originRevision: \"@monorepo\"
      copy:
        - from: \"@monorepo/infrastructure/**\"
          to: \"@artifact/\"
          exclude: [\"*.md\"]
    - name: apps
      originRevision: \"@monorepo\"
      copy:
        - from: \"@monorepo/apps/base/**\"
          to: \"@artifact/base/\"
        - from: \"@monorepo/apps/staging/**\"
          to: \"@artifact/staging/\"
";

fn kustomization(name: &str, artifact: &str, path: &str, extra: &str) -> String {
    format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 1h\n  sourceRef:\n    kind: ExternalArtifact\n    name: {artifact}\n  path: {path}\n  prune: true\n{extra}")
}

fn artifact_site(generator: &str) -> tempfile::TempDir {
    site(&[
        (
            "clusters/staging/flux-system/gotk-sync.yaml",
            "# This file will be generated automatically by flux boostrap.\n",
        ),
        (
            "clusters/staging/flux-system/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gotk-sync.yaml\n",
        ),
        ("clusters/staging/artifacts.yaml", generator),
        (
            "clusters/staging/infrastructure.yaml",
            &kustomization("infra-configs", "infrastructure", "./configs", ""),
        ),
        (
            "clusters/staging/apps.yaml",
            &kustomization(
                "apps",
                "apps",
                "./staging",
                "  dependsOn:\n    - name: infra-configs\n",
            ),
        ),
        ("infrastructure/configs/namespace.yaml", &ns_yaml("podinfo")),
        ("infrastructure/configs/README.md", "not a manifest"),
        (
            "apps/base/podinfo/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: podinfo\nresources:\n  - config.yaml\n",
        ),
        (
            "apps/base/podinfo/config.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo\ndata:\n  env: base\n",
        ),
        (
            "apps/staging/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base/podinfo\npatches:\n  - path: env.yaml\n",
        ),
        (
            "apps/staging/env.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo\n  namespace: podinfo\ndata:\n  env: staging\n",
        ),
        // Not copied into any artifact: never applied.
        (
            "apps/production/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
        ),
    ])
}

#[test]
fn kustomizations_of_external_artifacts_build_what_the_generator_composes() {
    let dir = artifact_site(GENERATOR);
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "clusters/staging", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    // The staging overlay built in the artifact, its base copied beside it.
    assert!(stdout.contains("env: staging"), "{stdout}");
    assert!(
        stdout.contains("kind: Namespace\nmetadata:\n  name: podinfo"),
        "{stdout}"
    );
    assert!(
        stdout.contains("(Flux Kustomization flux-system/apps)"),
        "{stdout}"
    );
    // The generator is Flux's object: not rendered.
    assert!(!stdout.contains("ArtifactGenerator"), "{stdout}");

    let cluster = TestCluster::start();
    let args = ["--path", "clusters/staging"];
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 0, "{stderr}");
    let cm = get(&cluster, "", "configmaps", "podinfo", "podinfo").expect("applied");
    assert_eq!(cm["data"]["env"], "staging");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["diff"][..], &args].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[test]
fn artifacts_that_cannot_be_built_are_refused_at_the_generators_line() {
    let missing = GENERATOR.replace("@monorepo/apps/staging/**", "@monorepo/apps/stage/**");
    let (code, _, stderr) = run(tend()
        .args(["render", "--path", "clusters/staging", "--repo"])
        .arg(artifact_site(&missing).path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("artifacts.yaml:"), "{stderr}");
    assert!(
        stderr.contains("no files match pattern \"apps/stage/**\""),
        "{stderr}"
    );
    let unnamed = GENERATOR.replace("name: apps\n", "name: applications\n");
    let (code, _, stderr) = run(tend()
        .args(["render", "--path", "clusters/staging", "--repo"])
        .arg(artifact_site(&unnamed).path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("apps.yaml:"), "{stderr}");
    assert!(
        stderr.contains("no ArtifactGenerator of the desired state generates"),
        "{stderr}"
    );
}
