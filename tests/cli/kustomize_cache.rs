//! Kustomize builds kept from one run to the next (README "Kustomize", "Kept builds"): the
//! builder runs again only when an input of the build, the builder or its options changed.

use crate::common::*;
use std::path::Path;

/// A builder that counts its runs in `count`, then builds with `kubectl kustomize`.
fn counting_builder(dir: &Path, count: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("counting-builder");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\necho run >> '{}'\nexec kubectl kustomize \"$@\"\n",
            count.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn runs(count: &Path) -> usize {
    std::fs::read_to_string(count).map_or(0, |t| t.lines().count())
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn render(repo: &Path, cache: &Path, builder: &str, extra: &[&str]) -> String {
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--kustomize-command", builder, "--cache-dir"])
        .arg(cache)
        .arg("--repo")
        .arg(repo)
        .args(extra));
    assert_eq!(code, 0, "{stderr}");
    stdout
}

#[test]
fn a_build_is_kept_until_one_of_its_inputs_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, cache) = (tmp.path().join("repo"), tmp.path().join("cache"));
    let count = tmp.path().join("count");
    let builder = counting_builder(tmp.path(), &count);
    write(
        &repo,
        "app/kustomization.yaml",
        "resources: [../base]\nnamePrefix: a-\n",
    );
    write(&repo, "base/kustomization.yaml", "resources: [cm.yaml]\n");
    write(
        &repo,
        "base/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: ns\ndata:\n  k: one\n",
    );
    write(&repo, "notes.txt", "read by no build\n");
    let first = render(&repo, &cache, &builder, &[]);
    assert!(
        first.contains("name: a-cm") && first.contains("k: one"),
        "{first}"
    );
    assert_eq!(runs(&count), 1);
    // Nothing changed, or only a file no build reads: the kept build, the same objects.
    assert_eq!(render(&repo, &cache, &builder, &[]), first);
    write(&repo, "notes.txt", "still read by no build\n");
    assert_eq!(render(&repo, &cache, &builder, &[]), first);
    assert_eq!(runs(&count), 1, "the builder did not run again");
    // A file of the base, outside the built directory, changed: built again.
    write(
        &repo,
        "base/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: ns\ndata:\n  k: two\n",
    );
    let second = render(&repo, &cache, &builder, &[]);
    assert!(second.contains("k: two"), "{second}");
    assert_eq!(runs(&count), 2);
    // Another builder command: built again.
    let (code, stdout, stderr) = run(tend()
        .args([
            "render",
            "--kustomize-command",
            &format!("{builder} --reorder=none"),
        ])
        .arg("--cache-dir")
        .arg(&cache)
        .arg("--repo")
        .arg(&repo));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("k: two"));
    assert_eq!(runs(&count), 3);
    let kept = std::fs::read_dir(cache.join("kustomize-builds"))
        .unwrap()
        .count();
    assert_eq!(kept, 3, "one entry per distinct build");
}

#[test]
fn an_argo_kustomize_source_with_options_is_kept_without_copying_the_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, cache) = (tmp.path().join("repo"), tmp.path().join("cache"));
    std::fs::create_dir_all(&repo).unwrap();
    copy_tree(&fixture("argo-app-of-apps"), &repo);
    let git = git2::Repository::init(&repo).unwrap();
    git.remote("origin", "https://git.example.com/platform/deploy.git")
        .unwrap();
    let count = tmp.path().join("count");
    let builder = counting_builder(tmp.path(), &count);
    let first = render(&repo, &cache, &builder, &["--path", "bootstrap"]);
    assert!(first.contains("name: team-redis"), "{first}");
    assert_eq!(runs(&count), 1);
    assert_eq!(
        render(&repo, &cache, &builder, &["--path", "bootstrap"]),
        first
    );
    assert_eq!(runs(&count), 1, "the overlay's build was kept");
    // The Application's options are an input: another prefix builds again.
    let app = repo.join("apps/kustomized.yaml");
    let text = std::fs::read_to_string(&app).unwrap();
    std::fs::write(&app, text.replace("namePrefix: team-", "namePrefix: crew-")).unwrap();
    let second = render(&repo, &cache, &builder, &["--path", "bootstrap"]);
    assert!(second.contains("name: crew-redis"), "{second}");
    assert_eq!(runs(&count), 2);
}
