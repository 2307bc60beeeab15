//! Layouts of Flux repositories beyond the bootstrap: Flux 2.7's ArtifactGenerator and
//! ExternalArtifact (fluxcd/flux2-kustomize-helm-example), and a tenant's GitRepository on
//! another branch of the same repository (fluxcd/flux2-multi-tenancy).

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

/// A git repository (origin `https://git.example.com/fleet.git`) whose `main` bootstraps a
/// tenant reading `tenant_branch` of the same repository, which holds `apps/`.
fn tenant_repository(tenant_branch: &str) -> tempfile::TempDir {
    let tenant = format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: dev-team\n  namespace: flux-system\nspec:\n  interval: 1m\n  url: https://git.example.com/fleet.git\n  ref:\n    branch: {tenant_branch}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: dev-team\n  namespace: flux-system\nspec:\n  interval: 5m\n  sourceRef:\n    kind: GitRepository\n    name: dev-team\n  path: ./apps\n  prune: true\n");
    let dir = site(&[
        (
            "clusters/staging/flux-system/gotk-sync.yaml",
            "# This file will be generated automatically by flux boostrap.\n",
        ),
        ("clusters/staging/tenant.yaml", &tenant),
        ("apps/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team\n  namespace: default\ndata:\n  from: main\n"),
    ]);
    let repo = git2::Repository::init(dir.path()).unwrap();
    repo.remote("origin", "https://git.example.com/fleet.git")
        .unwrap();
    let sig = git2::Signature::now("Test", "test@example.com").unwrap();
    let commit = |message: &str, parents: &[&git2::Commit]| {
        let mut index = repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        repo.commit(None, &sig, &sig, message, &tree, parents)
            .unwrap()
    };
    let main = commit("main", &[]);
    repo.reference("refs/heads/main", main, true, "main")
        .unwrap();
    repo.set_head("refs/heads/main").unwrap();
    // The tenant's branch: its own apps/.
    std::fs::write(
        dir.path().join("apps/config.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team\n  namespace: default\ndata:\n  from: dev-team\n",
    )
    .unwrap();
    let parent = repo.find_commit(main).unwrap();
    let branch = commit("dev-team", &[&parent]);
    repo.reference("refs/heads/dev-team", branch, true, "dev-team")
        .unwrap();
    // Back on main, its files as committed.
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .unwrap();
    dir
}

#[test]
fn a_git_repository_of_the_checkout_on_another_branch_reads_that_branch() {
    let dir = tenant_repository("dev-team");
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "clusters/staging", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("from: dev-team"), "{stdout}");
    // The main line itself is the checkout under test (its work tree's content).
    let dir = tenant_repository("main");
    std::fs::write(
        dir.path().join("apps/config.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team\n  namespace: default\ndata:\n  from: work-tree\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--path", "clusters/staging", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("from: work-tree"), "{stdout}");
}

/// A registry holding the Flux artifact `manifests/app` at tags 1.0.0 and 1.1.0, each a
/// ConfigMap saying its version, as `flux push artifact` stores them.
fn artifact_registry() -> String {
    use crate::helm::registry::{not_found, serve, sha};
    use crate::helm::subcharts::tgz;
    let layer = |version: &str| {
        tgz(&[
            ("./kustomization.yaml", "resources: [config.yaml]\n"),
            (
                "./config.yaml",
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  version: \"{version}\"\n"),
            ),
        ])
    };
    let layers: Vec<(String, Vec<u8>)> = ["1.0.0", "1.1.0"]
        .iter()
        .map(|v| (v.to_string(), layer(v)))
        .collect();
    let (base, _) = serve(move |request| {
        let path = request.path.as_str();
        if path == "/v2/manifests/app/tags/list" {
            return (
                200,
                vec![],
                br#"{"tags":["1.0.0","1.1.0","latest"]}"#.to_vec(),
            );
        }
        for (version, bytes) in &layers {
            let digest = format!("sha256:{}", sha(bytes));
            if path == format!("/v2/manifests/app/manifests/{version}") {
                let manifest = format!(
                    r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.cncf.flux.config.v1+json","digest":"sha256:{}","size":2}},"layers":[{{"mediaType":"application/vnd.cncf.flux.content.v1.tar+gzip","digest":"{digest}","size":{}}}]}}"#,
                    sha(b"{}"),
                    bytes.len()
                );
                return (200, vec![], manifest.into_bytes());
            }
            if path == format!("/v2/manifests/app/blobs/{digest}") {
                return (200, vec![], bytes.clone());
            }
        }
        not_found()
    });
    base.replace("http://", "oci://")
}

fn oci_site(registry: &str, reference: &str, extra: &str) -> tempfile::TempDir {
    site(&[
        (
            "clusters/dev/flux-system/gotk-sync.yaml",
            "# This file will be generated automatically by flux boostrap.\n",
        ),
        (
            "clusters/dev/app.yaml",
            &format!("apiVersion: source.toolkit.fluxcd.io/v1beta2\nkind: OCIRepository\nmetadata:\n  name: app\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: {registry}/manifests/app\n  ref:\n    {reference}\n{extra}---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: app\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./\n  prune: true\n  sourceRef:\n    kind: OCIRepository\n    name: app\n"),
        ),
    ])
}

#[test]
fn an_oci_repository_of_manifests_is_pulled_as_source_controller_pulls_it() {
    let registry = artifact_registry();
    let render = |dir: &tempfile::TempDir| {
        run(tend()
            .args(["render", "--path", "clusters/dev", "--cache-dir"])
            .arg(dir.path().join(".cache"))
            .arg("--repo")
            .arg(dir.path()))
    };
    let dir = oci_site(&registry, "semver: \">=1.0.0\"", "");
    let (code, stdout, stderr) = render(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("version: 1.1.0"), "{stdout}");
    assert!(
        stdout.contains("(Flux Kustomization flux-system/app)"),
        "{stdout}"
    );
    let dir = oci_site(&registry, "tag: 1.0.0", "");
    let (code, stdout, stderr) = render(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("version: 1.0.0"), "{stdout}");
    // What would change the pull and tend does not do is refused, never ignored.
    let dir = oci_site(&registry, "tag: 1.0.0", "  certSecretRef:\n    name: ca\n");
    let (code, _, stderr) = render(&dir);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("app.yaml:11") && stderr.contains("spec.certSecretRef"),
        "{stderr}"
    );
}

/// An OCIRepository of manifests behind a login (`secretRef`, an image pull Secret) and
/// signed with cosign (`verify`, checked with the run's `--trusted-keys`): pulled with the
/// Secret's login, applied only when a trusted key signed the tag; the login never shown.
#[test]
fn an_oci_repository_of_manifests_pulls_with_its_pull_secret_and_checks_its_signature() {
    use crate::helm::registry::{
        cosign_public_key, docker_config, registry, CosignSigned, RegistryOptions,
    };
    const PASSWORD: &str = "pull-canary-5518";
    let (alice, mallory) = ([7u8; 32], [9u8; 32]);
    let signed = |tag: &str, key: [u8; 32]| CosignSigned {
        tag: tag.into(),
        key,
        names_other_digest: false,
        keyless: false,
    };
    let opts = RegistryOptions {
        login: Some(format!("puller:{PASSWORD}")),
        cosign: vec![signed("1.0.0", alice), signed("1.1.0", mallory)],
        artifact: true,
        ..RegistryOptions::default()
    };
    let (base, _) = registry(&["1.0.0", "1.1.0"], opts);
    let host = base.trim_start_matches("http://").to_string();
    let keys = tempfile::tempdir().unwrap();
    std::fs::write(keys.path().join("cosign.pub"), cosign_public_key(&alice)).unwrap();
    let pull_secret = {
        use base64::Engine;
        let config = docker_config(&host, &format!("puller:{PASSWORD}"));
        let encoded = base64::engine::general_purpose::STANDARD.encode(config);
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: pull\n  namespace: flux-system\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {encoded}\n")
    };
    let render = |tag: &str, extra: &str| {
        let dir = oci_site(
            &base.replace("http://", "oci://"),
            &format!("tag: {tag}"),
            extra,
        );
        let units = dir.path().join("clusters/dev/app.yaml");
        let text = std::fs::read_to_string(&units).unwrap();
        std::fs::write(&units, text.replace("/manifests/app", "/charts/shop")).unwrap();
        std::fs::write(dir.path().join("clusters/dev/pull.yaml"), &pull_secret).unwrap();
        run(tend()
            .args(["render", "--path", "clusters/dev", "--trusted-keys"])
            .arg(keys.path().join("cosign.pub"))
            .arg("--cache-dir")
            .arg(dir.path().join(".cache"))
            .arg("--repo")
            .arg(dir.path()))
    };
    let both = "  secretRef:\n    name: pull\n  verify:\n    provider: cosign\n    secretRef:\n      name: cosign-pub\n";
    let (code, stdout, stderr) = render("1.0.0", both);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("version: 1.0.0"), "{stdout}");
    // Signed by a key the run does not trust.
    let (code, stdout, stderr) = render("1.1.0", both);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("which is not a trusted key"), "{stderr}");
    assert!(stderr.contains("spec.verify"), "{stderr}");
    // Without the pull Secret the registry refuses the pull.
    let verify_only = "  verify:\n    provider: cosign\n    secretRef:\n      name: cosign-pub\n";
    let (code, stdout, stderr) = render("1.0.0", verify_only);
    assert_eq!(code, 2, "{stdout}{stderr}");
    for output in [&stdout, &stderr] {
        assert!(!output.contains(PASSWORD), "{output}");
    }
}
