//! `tend render` from git URLs: tags, SHAs, branches, the cache, and clear errors.

use crate::common::*;
use git2::{Repository, Signature};

struct Fixture {
    _dir: tempfile::TempDir,
    work: std::path::PathBuf,
    url: String,
    v1: git2::Oid,
    v2: git2::Oid,
    cache: tempfile::TempDir,
}

/// A repository holding the example site at tag v1 and an edited nginx.conf at v2 (main).
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("site");
    copy_tree(&example_site(), &work);
    let repo = Repository::init(&work).unwrap();
    let v1 = commit_all(&repo, "v1");
    let sig = Signature::now("Test", "test@example.com").unwrap();
    repo.tag(
        "v1",
        &repo.find_object(v1, None).unwrap(),
        &sig,
        "release v1",
        false,
    )
    .unwrap();
    let conf = work.join("web/nginx-conf.yaml");
    let text = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(
        &conf,
        text.replace("worker_processes 1;", "worker_processes 4;"),
    )
    .unwrap();
    let v2 = commit_all(&repo, "v2");
    Fixture {
        url: format!("file://{}", work.display()),
        work,
        _dir: dir,
        v1,
        v2,
        cache: tempfile::tempdir().unwrap(),
    }
}

fn render_git(f: &Fixture, git_ref: Option<&str>) -> (i32, String, String) {
    let mut cmd = tend();
    cmd.args([
        "render",
        "--cluster",
        "dc1",
        "--repo",
        &f.url,
        "--cache-dir",
    ])
    .arg(f.cache.path());
    if let Some(r) = git_ref {
        cmd.args(["--ref", r]);
    }
    run(&mut cmd)
}

fn nginx_conf(stdout: &str) -> String {
    parse_stream(stdout)
        .into_iter()
        .find(|o| o["metadata"]["name"] == "nginx-conf")
        .and_then(|o| o["data"]["nginx.conf"].as_str().map(str::to_string))
        .expect("nginx-conf rendered")
}

#[test]
fn tag_and_sha_give_the_committed_content() {
    let f = fixture();
    let (code, at_tag, stderr) = render_git(&f, Some("v1"));
    assert_eq!(code, 0, "{stderr}");
    assert!(nginx_conf(&at_tag).contains("worker_processes 1;"));
    assert!(stderr.contains(&format!("at commit {}", f.v1)), "{stderr}");

    let short = f.v1.to_string()[..10].to_string();
    let (code, at_sha, stderr) = render_git(&f, Some(&short));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(at_sha, at_tag);

    let (code, at_full, _) = render_git(&f, Some(&f.v2.to_string()));
    assert_eq!(code, 0);
    assert!(nginx_conf(&at_full).contains("worker_processes 4;"));

    // Default branch (remote HEAD) is the newest commit, and matches the work tree.
    let (code, at_head, stderr) = render_git(&f, None);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("at commit {}", f.v2)), "{stderr}");
    let (code, local, _) = run(tend()
        .args(["render", "--cluster", "dc1", "--repo"])
        .arg(&f.work));
    assert_eq!(code, 0);
    assert_eq!(at_head, local);
}

#[test]
fn local_repo_with_ref_reads_that_commit() {
    let f = fixture();
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--cluster", "dc1", "--ref", "v1", "--cache-dir"])
        .arg(f.cache.path())
        .arg("--repo")
        .arg(&f.work));
    assert_eq!(code, 0, "{stderr}");
    assert!(nginx_conf(&stdout).contains("worker_processes 1;"));
}

#[test]
fn unknown_ref_and_unreachable_remote_are_clear_errors() {
    let f = fixture();
    let (code, stdout, stderr) = render_git(&f, Some("no-such-branch"));
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("no-such-branch"), "{stderr}");

    let (code, _, stderr) = run(tend()
        .args([
            "render",
            "--repo",
            "file:///nonexistent/tend-repo",
            "--cache-dir",
        ])
        .arg(f.cache.path()));
    assert_eq!(code, 2);
    assert!(stderr.contains("/nonexistent/tend-repo"), "{stderr}");
}

#[test]
fn later_runs_fetch_new_commits_into_the_cache() {
    let f = fixture();
    let (code, first, _) = render_git(&f, None);
    assert_eq!(code, 0);
    let conf = f.work.join("web/nginx-conf.yaml");
    let text = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(
        &conf,
        text.replace("worker_processes 4;", "worker_processes 8;"),
    )
    .unwrap();
    let repo = Repository::open(&f.work).unwrap();
    commit_all(&repo, "v3");
    let (code, second, stderr) = render_git(&f, None);
    assert_eq!(code, 0, "{stderr}");
    assert!(nginx_conf(&first).contains("worker_processes 4;"));
    assert!(nginx_conf(&second).contains("worker_processes 8;"));
}

#[test]
fn bad_ssh_key_is_reported_before_connecting() {
    let f = fixture();
    let key = f.cache.path().join("not-a-key");
    std::fs::write(&key, "hello").unwrap();
    let (code, _, stderr) = run(tend()
        .args([
            "render",
            "--repo",
            "ssh://git@127.0.0.1:1/site.git",
            "--ssh-key",
        ])
        .arg(&key)
        .arg("--cache-dir")
        .arg(f.cache.path()));
    assert_eq!(code, 2);
    assert!(stderr.contains("not-a-key"), "{stderr}");
}

#[test]
fn git_token_never_printed() {
    let f = fixture();
    let (code, stdout, stderr) = run(tend()
        .args([
            "render",
            "--repo",
            "https://user:s3cr3t-t0ken@127.0.0.1:1/site.git",
            "--cache-dir",
        ])
        .arg(f.cache.path())
        .env("TEND_GIT_TOKEN", "an0ther-s3cr3t"));
    assert_eq!(code, 2);
    for secret in ["s3cr3t-t0ken", "an0ther-s3cr3t"] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{stderr}"
        );
    }
}
