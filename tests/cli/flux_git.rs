//! GitRepositories other than the checkout (README "Coming from Flux"): `ref.semver` as
//! source-controller resolves it, and `ref.name`.

use crate::common::*;

/// A repository of apps whose ConfigMap says which version it is, tagged at each version.
fn tagged_remote(tags: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = git2::Repository::init(dir.path()).unwrap();
    for tag in tags {
        std::fs::create_dir_all(dir.path().join("apps")).unwrap();
        std::fs::write(
            dir.path().join("apps/version.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: version\n  namespace: default\ndata:\n  version: \"{tag}\"\n"),
        )
        .unwrap();
        let commit = commit_all(&repo, tag);
        let object = repo.find_object(commit, None).unwrap();
        repo.tag_lightweight(tag, &object, false).unwrap();
    }
    dir
}

fn site_reading(remote: &std::path::Path, git_ref: &str) -> tempfile::TempDir {
    let units = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: file://{}\n  ref:\n{git_ref}---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: ./apps\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: apps\n",
        remote.display()
    );
    site(&[("units.yaml", &units)])
}

fn render(dir: &tempfile::TempDir, cache: &tempfile::TempDir) -> (i32, String, String) {
    run(tend()
        .args(["render", "--cache-dir"])
        .arg(cache.path())
        .arg("--repo")
        .arg(dir.path()))
}

#[test]
fn a_semver_ref_checks_out_the_highest_tag_in_its_range() {
    let remote = tagged_remote(&[
        "v1.0.0",
        "v1.2.0",
        "1.3.0-rc.1",
        "v1.10.1",
        "v2.0.0",
        "latest",
    ]);
    let cache = tempfile::tempdir().unwrap();
    let cases = [
        ("    semver: \">=1.0.0 <2.0.0\"\n", "v1.10.1"),
        ("    semver: \"~1.2\"\n", "v1.2.0"),
        ("    semver: \">=1.3.0-0 <1.4.0-0\"\n", "1.3.0-rc.1"),
        ("    semver: \"*\"\n", "v2.0.0"),
        // commit and name come before semver, semver before tag and branch.
        ("    semver: \"1.x\"\n    tag: v2.0.0\n", "v1.10.1"),
        (
            "    semver: \"1.x\"\n    name: refs/tags/v1.0.0\n",
            "v1.0.0",
        ),
    ];
    for (git_ref, version) in cases {
        let dir = site_reading(remote.path(), git_ref);
        let (code, stdout, stderr) = render(&dir, &cache);
        assert_eq!(code, 0, "{git_ref}: {stderr}");
        assert!(
            stdout.contains(&format!("version: {version}\n")),
            "{git_ref}: {stdout}"
        );
    }
    let dir = site_reading(remote.path(), "    semver: \">=3.0.0\"\n");
    let (code, _, stderr) = render(&dir, &cache);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("units.yaml:") && stderr.contains("semver >=3.0.0 (no tag matches it)"),
        "{stderr}"
    );
}

/// A loopback HTTP server answering every request with 401 (Basic auth), recording the
/// `Authorization` headers it received.
fn rejecting_git_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use crate::helm::registry::serve;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let (base, _) = serve(move |request| {
        let auth = request.header("Authorization").unwrap_or("").to_string();
        record.lock().unwrap().push(auth);
        (
            401,
            vec![("WWW-Authenticate".into(), "Basic realm=\"git\"".into())],
            Vec::new(),
        )
    });
    (base, seen)
}

#[test]
fn a_git_repository_secret_ref_is_its_login_and_is_never_shown() {
    let (base, seen) = rejecting_git_server();
    let password = "s3cret-git-password";
    let units = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: {base}/org/apps.git\n  ref:\n    branch: main\n  secretRef:\n    name: git-login\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: ./apps\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: apps\n"
    );
    let login = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: git-login\n  namespace: flux-system\nstringData:\n  username: flux\n  password: {password}\n"
    );
    let cache = tempfile::tempdir().unwrap();
    let dir = site(&[("units.yaml", &units), ("login.yaml", &login)]);
    let (code, _, stderr) = render(&dir, &cache);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "the remote rejected the login of Secret flux-system/git-login of GitRepository"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains(password), "{stderr}");
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("flux:{password}")
        )
    );
    assert!(
        seen.lock().unwrap().contains(&basic),
        "{:?}",
        seen.lock().unwrap()
    );

    // Named but nowhere: refused at the GitRepository, with the way out.
    let dir = site(&[("units.yaml", &units)]);
    let (code, _, stderr) = render(&dir, &cache);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("secretRef names Secret flux-system/git-login"),
        "{stderr}"
    );
}
