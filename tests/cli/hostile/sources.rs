//! Repositories written to hurt: git trees, kustomize bases, special files.

use super::*;
use git2::{Oid, Repository, Signature};

/// A repository at `dir` whose branch `main` holds `tree`.
fn commit_tree(repo: &Repository, tree: Oid) {
    let sig = Signature::now("Test", "test@example.com").unwrap();
    let tree = repo.find_tree(tree).unwrap();
    repo.commit(Some("refs/heads/main"), &sig, &sig, "hostile", &tree, &[])
        .unwrap();
    repo.set_head("refs/heads/main").unwrap();
}

/// A tree of `names` all pointing at one object.
fn fan_out(repo: &Repository, names: usize, id: Oid, mode: i32) -> Oid {
    let mut builder = repo.treebuilder(None).unwrap();
    for i in 0..names {
        builder.insert(format!("e{i}"), id, mode).unwrap();
    }
    builder.write().unwrap()
}

#[test]
fn a_tree_that_names_one_subtree_a_billion_times_is_refused_at_the_file_limit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    // 10 entries a level, 9 levels: 10^9 files from a few kilobytes of repository.
    let blob = repo.blob(b"kind: ConfigMap\n").unwrap();
    let mut tree = fan_out(&repo, 10, blob, 0o100644);
    for _ in 1..9 {
        tree = fan_out(&repo, 10, tree, 0o040000);
    }
    commit_tree(&repo, tree);
    let out = render_bounded(
        dir.path(),
        &["--ref", "main", "--max-source-files", "20000"],
    );
    out.refused_with("more than 20000 entries");
    out.refused_with("--max-source-files");
    // Nothing half-written stays in the cache under the commit's name: refused again.
    render_bounded(
        dir.path(),
        &["--ref", "main", "--max-source-files", "20000"],
    )
    .refused_with("--max-source-files");
}

#[test]
fn the_default_file_limit_stops_a_tree_bomb() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let blob = repo.blob(b"").unwrap();
    let mut tree = fan_out(&repo, 10, blob, 0o100644);
    for _ in 1..9 {
        tree = fan_out(&repo, 10, tree, 0o040000);
    }
    commit_tree(&repo, tree);
    render_bounded(dir.path(), &["--ref", "main"]).refused_with("more than 200000 entries");
}

#[test]
fn a_tree_nested_past_any_real_repository_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let blob = repo.blob(b"").unwrap();
    let mut tree = fan_out(&repo, 1, blob, 0o100644);
    for _ in 0..3000 {
        tree = fan_out(&repo, 1, tree, 0o040000);
    }
    commit_tree(&repo, tree);
    render_bounded(dir.path(), &["--ref", "main"]).refused_with("nest more than 512 levels");
}

#[test]
fn a_large_blob_of_zeros_is_refused_before_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    // 8 MiB of zeros packs into a few kilobytes; the limit is lowered to stay quick.
    let zeros = repo.blob(&vec![0u8; 8 << 20]).unwrap();
    let mut builder = repo.treebuilder(None).unwrap();
    builder.insert("zeros.yaml", zeros, 0o100644).unwrap();
    commit_tree(&repo, builder.write().unwrap());
    let out = render_bounded(
        dir.path(),
        &["--ref", "main", "--max-source-blob-bytes", "4194304"],
    );
    out.refused_with("zeros.yaml holds 8388608 bytes");
    out.refused_with("--max-source-blob-bytes");
    // Many files under the per-file limit are stopped by the total.
    let out = render_bounded(
        dir.path(),
        &["--ref", "main", "--max-source-bytes", "4194304"],
    );
    out.refused_with("--max-source-bytes");
    // Raised, it renders (the file is not YAML a manifest can be read from, but it is read).
    let out = render_bounded(
        dir.path(),
        &["--ref", "main", "--max-source-blob-bytes", "16777216"],
    );
    out.ended_by_itself();
    assert!(
        !out.stderr.contains("too large to check out"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_fetch_that_downloads_past_the_limit_is_stopped_while_it_downloads() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    // 6 MiB that do not compress: the pack is as large as the blob.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..6 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let blob = repo.blob(&noise).unwrap();
    let mut builder = repo.treebuilder(None).unwrap();
    builder.insert("noise.bin", blob, 0o100644).unwrap();
    commit_tree(&repo, builder.write().unwrap());
    let out = render_bounded(
        dir.path(),
        &["--ref", "main", "--max-source-bytes", "2097152"],
    );
    out.refused_with("sent more than 4194304 bytes for one fetch");
    out.refused_with("--max-source-bytes");
}

#[test]
fn a_schema_that_applies_itself_to_the_same_value_is_refused_as_recursion() {
    for schema in [
        r##"{"allOf":[{"$ref":"#"}]}"##,
        r##"{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"}"##,
    ] {
        let dir = chart_repo(&[
            ("values.schema.json", schema.as_bytes()),
            (
                "templates/t.yaml",
                b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
            ),
        ]);
        let out = render_bounded(dir.path(), &[]);
        out.refused_with("infinite recursion");
    }
}

/// `files` under `repo/` and beside it (paths starting with `../`).
fn beside(files: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let top = tempfile::tempdir().unwrap();
    let repo = top.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for (name, text) in files {
        let path = repo.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    (top, repo)
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside\n  namespace: default\ndata:\n  k: v\n";

#[test]
fn kustomize_files_outside_the_repository_are_refused_at_their_line() {
    let outside_base = [
        (
            "../outside_base/kustomization.yaml",
            "resources: [cm.yaml]\n",
        ),
        ("../outside_base/cm.yaml", CM),
        (
            "../outside_component/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
        ),
        (
            "../patch.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside\n",
        ),
        ("../secret.env", "k=v\n"),
    ];
    let cases = [
        (
            "apps/kustomization.yaml",
            "namespace: default\nresources:\n  - ../../outside_base\n",
            3,
        ),
        (
            "apps/kustomization.yaml",
            "resources: [cm.yaml]\ncomponents:\n  - ../../outside_component\n",
            3,
        ),
        (
            "apps/kustomization.yaml",
            "resources: [cm.yaml]\npatches:\n  - path: ../../patch.yaml\n",
            3,
        ),
        (
            "apps/kustomization.yaml",
            "configMapGenerator:\n  - name: g\n    envs: [../../secret.env]\n",
            3,
        ),
        (
            "apps/kustomization.yaml",
            "configMapGenerator:\n  - name: g\n    files:\n      - key=../../secret.env\n",
            4,
        ),
    ];
    for (file, text, line) in cases {
        let mut files = outside_base.to_vec();
        files.push((file, text));
        files.push(("apps/cm.yaml", CM));
        let (_top, repo) = beside(&files);
        let out = render_bounded(
            &repo,
            &[
                "--kustomize-command",
                "kubectl kustomize --load-restrictor LoadRestrictionsNone",
            ],
        );
        out.refused_with(&format!("{file}:{line}"));
        out.refused_with("outside the repository");
        assert!(!out.stdout.contains("name: outside"), "{}", out.stdout);
    }
    // A symlink inside the repository to a base outside it is outside too.
    let mut files = outside_base.to_vec();
    files.push(("apps/kustomization.yaml", "resources:\n  - link\n"));
    let (_top, repo) = beside(&files);
    std::os::unix::fs::symlink(repo.join("../outside_base"), repo.join("apps/link")).unwrap();
    render_bounded(&repo, &["--kustomize-command", "kubectl kustomize"])
        .refused_with("apps/kustomization.yaml:2");
}

#[test]
fn a_base_beside_path_but_inside_the_repository_is_read() {
    let (_top, repo) = beside(&[
        ("base/kustomization.yaml", "resources: [cm.yaml]\n"),
        ("base/cm.yaml", CM),
        ("apps/kustomization.yaml", "resources:\n  - ../base\n"),
    ]);
    let out = render_bounded(
        &repo,
        &["--path", "apps", "--kustomize-command", "kubectl kustomize"],
    );
    out.rendered();
    assert!(out.stdout.contains("name: outside"), "{}", out.stdout);
}

#[cfg(unix)]
#[test]
fn a_named_pipe_as_a_values_file_is_not_read_and_a_symlink_loop_is_named() {
    let dir = chart_repo(&[(
        "templates/t.yaml",
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    )]);
    let release = "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: r\n  namespace: default\nspec:\n  chart: ../charts/c\n  valuesFiles: [values/v.yaml]\n";
    std::fs::write(dir.path().join("apps/release.yaml"), release).unwrap();
    std::fs::create_dir_all(dir.path().join("apps/values")).unwrap();
    let fifo = dir.path().join("apps/values/v.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = render_bounded(dir.path(), &[]);
    out.refused_with("not a regular file");
    assert!(!out.stderr.contains("no such file"), "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("not a regular file").count(),
        1,
        "{}",
        out.stderr
    );

    // A loop of symlinks, as a values file and as a manifest.
    std::fs::remove_file(&fifo).unwrap();
    std::os::unix::fs::symlink("w.yaml", &fifo).unwrap();
    std::os::unix::fs::symlink("v.yaml", dir.path().join("apps/values/w.yaml")).unwrap();
    let out = render_bounded(dir.path(), &[]);
    out.refused_with("symlink loop");
    assert!(!out.stderr.contains("broken symlink"), "{}", out.stderr);
    assert!(!out.stderr.contains("no such file"), "{}", out.stderr);
}
