//! Chart dependencies a chart's `charts/` lacks, fetched as `helm dependency build` fetches
//! them (README "HelmChart", "Coming from Argo CD"): from an HTTP chart repository (the
//! shared chart-repo, served here), with a version range or the version `Chart.lock` pins,
//! from `file://` directories, for tend's HelmChart and Argo CD Helm sources alike.

use crate::common::*;
use crate::kinds::cluster_with_crds;
use sha2::Digest;

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
    super::remote::serve(files).0
}

/// Write `files` into `dir`, keeping what else it holds.
fn put(dir: &std::path::Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn blog_chart(dependencies: &str) -> String {
    format!("apiVersion: v2\nname: blog\nversion: 0.1.0\ndependencies:\n{dependencies}")
}

const BLOG_TEMPLATE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-blog\ndata:\n  deps: \"{{ range .Chart.Dependencies }}{{ .Name }},{{ end }}\"\n";

const RELEASE: &str = "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: blog\n  namespace: blog\nspec:\n  chart: ../charts/blog\n  values:\n    mariadb:\n      db:\n        password: not-a-secret\n      rootUser:\n        password: not-a-secret\n";

fn render(dir: &std::path::Path, cache: &std::path::Path) -> (i32, String, String) {
    run(tend()
        .args(["render", "--cache-dir"])
        .arg(cache)
        .arg("--repo")
        .arg(dir))
}

#[test]
fn a_missing_dependency_is_fetched_from_its_repository_by_range_and_cached() {
    let base = serve_chart_repo();
    let deps = format!("  - name: mariadb\n    version: 7.x.x\n    repository: {base}\n");
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("blog")),
        ("apps/blog.yaml", RELEASE),
        ("charts/blog/Chart.yaml", &blog_chart(&deps)),
        ("charts/blog/templates/cm.yaml", BLOG_TEMPLATE),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let (code, out, err) = render(dir.path(), cache.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("deps: mariadb,"), "{out}");
    assert!(out.contains("kind: StatefulSet"), "{out}");
    assert!(out.contains("chart: mariadb-7.3.12"), "{out}");
    // The archive is kept by digest, as every chart is.
    let kept = std::fs::read_dir(cache.path().join("helm"))
        .unwrap()
        .count();
    assert_eq!(kept, 1);

    // Against the test API server: the subchart's objects are to be created.
    let cluster = cluster_with_crds();
    let cache_arg = cache.path().display().to_string();
    let (code, out, err) = tend_on(&cluster, dir.path(), &["diff", "--cache-dir", &cache_arg]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("+ apps/v1 StatefulSet blog/blog-mariadb-master"),
        "{out}"
    );
}

#[test]
fn a_lock_file_pins_the_version_and_must_match_the_dependencies() {
    let base = serve_chart_repo();
    let deps = format!("  - name: mariadb\n    version: \">=7.0.0 <8.0.0\"\n    repository: {base}\n    condition: mariadb.enabled\n");
    // Helm 3's digest of [dependencies, lock] as Go's encoding/json writes it.
    let hashed = format!(
        r#"[[{{"name":"mariadb","version":"\u003e=7.0.0 \u003c8.0.0","repository":"{base}","condition":"mariadb.enabled"}}],[{{"name":"mariadb","version":"7.3.12","repository":"{base}"}}]]"#
    );
    let digest = hex::encode(sha2::Sha256::digest(hashed.as_bytes()));
    let lock = |digest: &str| {
        format!("dependencies:\n- name: mariadb\n  repository: {base}\n  version: 7.3.12\ndigest: sha256:{digest}\ngenerated: \"2026-11-01T10:00:00Z\"\n")
    };
    let files = |lock: &str| {
        site(&[
            ("namespaces.yaml", &ns_yaml("blog")),
            ("apps/blog.yaml", RELEASE),
            ("charts/blog/Chart.yaml", &blog_chart(&deps)),
            ("charts/blog/Chart.lock", lock),
            ("charts/blog/templates/cm.yaml", BLOG_TEMPLATE),
        ])
    };
    let cache = tempfile::tempdir().unwrap();
    let dir = files(&lock(&digest));
    let (code, out, err) = render(dir.path(), cache.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("chart: mariadb-7.3.12"), "{out}");

    // A lock written for other dependencies: exit 2 at the HelmChart, nothing rendered.
    let dir = files(&lock(&"0".repeat(64)));
    let (code, out, err) = render(dir.path(), cache.path());
    assert_eq!(code, 2, "{out}");
    assert!(out.is_empty());
    assert!(
        err.contains("apps/blog.yaml:7: chart blog: the lock file (Chart.lock) is out of sync with the dependencies file (Chart.yaml); run `helm dependency update`"),
        "{err}"
    );
}

#[test]
fn file_dependencies_and_what_cannot_be_fetched() {
    let base = serve_chart_repo();
    let common = "apiVersion: v2\nname: common\nversion: 1.4.0\n";
    let common_template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-common\ndata: {}\n";
    let deps = "  - name: common\n    version: ^1.0.0\n    repository: file://../common\n";
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("blog")),
        ("apps/blog.yaml", RELEASE),
        ("charts/blog/Chart.yaml", &blog_chart(deps)),
        ("charts/blog/templates/cm.yaml", BLOG_TEMPLATE),
        ("charts/common/Chart.yaml", common),
        ("charts/common/templates/cm.yaml", common_template),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let (code, out, err) = render(dir.path(), cache.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("name: blog-common"), "{out}");

    // Outside the range of the local chart's version.
    let deps = "  - name: common\n    version: ~2.0.0\n    repository: file://../common\n";
    put(dir.path(), &[("charts/blog/Chart.yaml", &blog_chart(deps))]);
    let (code, _, err) = render(dir.path(), cache.path());
    assert_eq!(code, 2);
    assert!(
        err.contains("apps/blog.yaml:7: chart blog: dependency common (file://../common): the chart at ../common is version 1.4.0, which is not within \"~2.0.0\""),
        "{err}"
    );

    // A version the repository does not have.
    let deps = format!("  - name: mariadb\n    version: 99.x\n    repository: {base}\n");
    put(
        dir.path(),
        &[("charts/blog/Chart.yaml", &blog_chart(&deps))],
    );
    let (code, _, err) = render(dir.path(), cache.path());
    assert_eq!(code, 2);
    assert!(
        err.contains("apps/blog.yaml:7: chart blog: dependency mariadb"),
        "{err}"
    );
    assert!(err.contains("no version of mariadb"), "{err}");

    // An Argo CD repository name no Secret defines.
    let deps = "  - name: mariadb\n    version: 7.x.x\n    repository: \"@bitnami\"\n";
    put(dir.path(), &[("charts/blog/Chart.yaml", &blog_chart(deps))]);
    let (code, _, err) = render(dir.path(), cache.path());
    assert_eq!(code, 2);
    assert!(
        err.contains("names the repository \"@bitnami\", which no Argo CD repository Secret"),
        "{err}"
    );

    // ... and one that does.
    let secret = format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: bitnami\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: repository\nstringData:\n  name: bitnami\n  type: helm\n  url: {base}\n");
    put(
        dir.path(),
        &[
            ("argocd/repository.yaml", &secret),
            (
                "namespaces.yaml",
                &format!("{}---\n{}", ns_yaml("blog"), ns_yaml("argocd")),
            ),
        ],
    );
    let (code, out, err) = render(dir.path(), cache.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("chart: mariadb-7.3.12"), "{out}");
}
