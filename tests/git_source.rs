//! Integration tests of the git source (`tend::source::git`) through the library API.
//! No network: origins are local repositories in temp dirs, fetched over `file://`.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use git2::{Oid, Repository, RepositoryInitOptions, Signature};
use hmac::{KeyInit, Mac};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use tempfile::TempDir;
use tend::git::{
    check_known_hosts, fetch, head_commit, looks_like_git_url, redact_url, GitError, GitSpec,
    HostKeyStatus,
};

/// A non-bare origin repository whose HEAD is `trunk` (not main/master, so the default
/// branch must really be read from the remote's HEAD).
struct Origin {
    dir: TempDir,
    repo: Repository,
}

impl Origin {
    fn new() -> Origin {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut opts = RepositoryInitOptions::new();
        opts.initial_head("trunk");
        let repo = Repository::init_opts(dir.path(), &opts).expect("init origin");
        Origin { dir, repo }
    }

    fn url(&self) -> String {
        format!("file://{}", self.dir.path().display())
    }

    /// Write `files` (path, content), delete `remove`, and commit everything on HEAD.
    fn commit(&self, files: &[(&str, &str)], remove: &[&str], message: &str) -> Oid {
        let root = self.dir.path();
        for (path, content) in files {
            let path = root.join(path);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(&path, content).expect("write");
        }
        for path in remove {
            fs::remove_file(root.join(path)).expect("remove");
        }
        self.commit_worktree(message)
    }

    fn commit_worktree(&self, message: &str) -> Oid {
        let mut index = self.repo.index().expect("index");
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .expect("add");
        index.update_all(["*"], None).expect("update");
        index.write().expect("write index");
        let tree_id = index.write_tree().expect("tree");
        self.commit_tree(tree_id, message)
    }

    fn commit_tree(&self, tree_id: Oid, message: &str) -> Oid {
        let tree = self.repo.find_tree(tree_id).expect("find tree");
        let sig = Signature::now("Test", "test@example.com").expect("sig");
        let parent = self.repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        self.repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .expect("commit")
    }

    fn branch(&self, name: &str, at: Oid) {
        let commit = self.repo.find_commit(at).expect("commit");
        self.repo.branch(name, &commit, true).expect("branch");
    }

    fn checkout(&self, branch: &str) {
        self.repo
            .set_head(&format!("refs/heads/{branch}"))
            .expect("set head");
        self.repo
            .checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .expect("checkout");
    }
}

fn spec(url: &str, cache: &Path, git_ref: Option<&str>) -> GitSpec {
    GitSpec {
        url: url.to_string(),
        git_ref: git_ref.map(str::to_string),
        cache_dir: cache.to_path_buf(),
        ..GitSpec::default()
    }
}

/// Every entry under `dir`: files with their content, symlinks as `-> target`.
fn contents(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            let rel = path
                .strip_prefix(root)
                .expect("prefix")
                .to_string_lossy()
                .into_owned();
            let meta = fs::symlink_metadata(&path).expect("meta");
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).expect("link");
                out.insert(rel, format!("-> {}", target.display()));
            } else if meta.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, fs::read_to_string(&path).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn expect(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect()
}

/// The bare repositories in the cache.
fn cached_repos(cache: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(cache.join("repos"))
        .expect("repos dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn first_fetch_clones_and_extracts_the_default_branch() {
    let origin = Origin::new();
    origin.commit(
        &[("a.yaml", "a: 1\n"), ("sub/b.yaml", "b: 1\n")],
        &[],
        "one",
    );
    let head = origin.commit(&[("a.yaml", "a: 2\n")], &[], "two");
    // Another branch with other content must not leak into the default branch's tree.
    origin.branch("other", head);
    origin.checkout("other");
    origin.commit(&[("other.yaml", "o: 1\n")], &[], "other");
    origin.checkout("trunk");

    let cache = tempfile::tempdir().expect("cache");
    let fetched = fetch(&spec(&origin.url(), cache.path(), None)).expect("fetch");
    assert_eq!(fetched.commit, head.to_string());
    assert_eq!(fetched.resolved_ref.as_deref(), Some("refs/heads/trunk"));
    assert_eq!(
        fetched.dir,
        cache.path().join("trees").join(head.to_string())
    );
    assert_eq!(
        contents(&fetched.dir),
        expect(&[("a.yaml", "a: 2\n"), ("sub/b.yaml", "b: 1\n")])
    );
    let repos = cached_repos(cache.path());
    assert_eq!(repos.len(), 1, "{repos:?}");
    let name = repos[0]
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        name.ends_with(&format!("-{}", sanitized_last_segment(&origin))),
        "{name}"
    );
    assert!(Repository::open_bare(&repos[0]).is_ok());
}

fn sanitized_last_segment(origin: &Origin) -> String {
    origin
        .dir
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_string()
}

/// An origin with: c0 (untagged, not a tip), c1 (lightweight tag v1), c2 (annotated tag
/// v2), c3 (trunk tip), and branch `feature` = c1 + c4.
struct History {
    origin: Origin,
    c0: Oid,
    c1: Oid,
    c2: Oid,
    c3: Oid,
    c4: Oid,
}

fn history() -> History {
    let origin = Origin::new();
    let c0 = origin.commit(&[("app.yaml", "v: 0\n")], &[], "c0");
    let c1 = origin.commit(
        &[("app.yaml", "v: 1\n"), ("extra.yaml", "e: 1\n")],
        &[],
        "c1",
    );
    origin
        .repo
        .reference("refs/tags/v1", c1, false, "tag")
        .expect("lightweight tag");
    let c2 = origin.commit(&[("app.yaml", "v: 2\n")], &["extra.yaml"], "c2");
    let sig = Signature::now("Test", "test@example.com").expect("sig");
    {
        let c2_obj = origin.repo.find_object(c2, None).expect("c2");
        origin
            .repo
            .tag("v2", &c2_obj, &sig, "release 2", false)
            .expect("annotated tag");
    }
    let c3 = origin.commit(&[("app.yaml", "v: 3\n")], &[], "c3");
    origin.branch("feature", c1);
    origin.checkout("feature");
    let c4 = origin.commit(&[("feature.yaml", "f: 1\n")], &[], "c4");
    origin.checkout("trunk");
    History {
        origin,
        c0,
        c1,
        c2,
        c3,
        c4,
    }
}

#[test]
fn fetch_by_branch_tag_and_sha_extracts_exactly_that_commit() {
    let h = history();
    let c0 = expect(&[("app.yaml", "v: 0\n")]);
    let c1 = expect(&[("app.yaml", "v: 1\n"), ("extra.yaml", "e: 1\n")]);
    let c2 = expect(&[("app.yaml", "v: 2\n")]);
    let c3 = expect(&[("app.yaml", "v: 3\n")]);
    let c4 = expect(&[
        ("app.yaml", "v: 1\n"),
        ("extra.yaml", "e: 1\n"),
        ("feature.yaml", "f: 1\n"),
    ]);
    let c0_full = h.c0.to_string();
    let c2_short = h.c2.to_string()[..7].to_string();
    let c0_short = h.c0.to_string()[..9].to_string();
    let cases: Vec<(&str, Oid, &BTreeMap<String, String>)> = vec![
        ("trunk", h.c3, &c3),
        ("feature", h.c4, &c4),
        ("v1", h.c1, &c1),           // lightweight tag
        ("v2", h.c2, &c2),           // annotated tag, peeled to its commit
        ("refs/tags/v2", h.c2, &c2), // full ref name
        (&c0_full, h.c0, &c0),       // full SHA of a commit no ref points at
        (&c2_short, h.c2, &c2),      // short SHA of a tag's commit
        (&c0_short, h.c0, &c0),      // short SHA of an inner commit
    ];
    for (git_ref, commit, files) in cases {
        // A fresh cache each time, so every case goes through its own fetch path.
        let cache = tempfile::tempdir().expect("cache");
        let fetched = fetch(&spec(&h.origin.url(), cache.path(), Some(git_ref)))
            .unwrap_or_else(|e| panic!("fetch {git_ref}: {e}"));
        assert_eq!(fetched.commit, commit.to_string(), "ref {git_ref}");
        assert_eq!(&contents(&fetched.dir), files, "ref {git_ref}");
    }
}

#[test]
fn many_refs_share_one_cache() {
    let h = history();
    let cache = tempfile::tempdir().expect("cache");
    for (git_ref, commit) in [
        ("v1", h.c1),
        ("feature", h.c4),
        ("v2", h.c2),
        ("trunk", h.c3),
    ] {
        let fetched = fetch(&spec(&h.origin.url(), cache.path(), Some(git_ref))).expect("fetch");
        assert_eq!(fetched.commit, commit.to_string(), "ref {git_ref}");
    }
    assert_eq!(cached_repos(cache.path()).len(), 1);

    // A full SHA that is already cached needs no remote at all (pinned deployments keep
    // working while the git host is down); a branch needs the remote.
    let moved = h.origin.dir.path().with_extension("moved");
    fs::rename(h.origin.dir.path(), &moved).expect("move origin away");
    let pinned = fetch(&spec(
        &h.origin.url(),
        cache.path(),
        Some(&h.c1.to_string()),
    ));
    let branch = fetch(&spec(&h.origin.url(), cache.path(), Some("trunk")));
    fs::rename(&moved, h.origin.dir.path()).expect("move origin back");
    assert_eq!(pinned.expect("cached sha").commit, h.c1.to_string());
    assert!(
        matches!(branch, Err(GitError::Unreachable { .. })),
        "{branch:?}"
    );
}

#[test]
fn branch_names_win_over_shas() {
    let h = history();
    // A branch whose name looks like a short SHA of another commit.
    let name = h.c0.to_string()[..8].to_string();
    h.origin.branch(&name, h.c3);
    let cache = tempfile::tempdir().expect("cache");
    let fetched = fetch(&spec(&h.origin.url(), cache.path(), Some(&name))).expect("fetch");
    assert_eq!(fetched.commit, h.c3.to_string());
}

#[test]
fn new_commits_are_seen_on_the_next_fetch_with_the_cache_reused() {
    let origin = Origin::new();
    let first = origin.commit(&[("a.yaml", "a: 1\n")], &[], "one");
    let cache = tempfile::tempdir().expect("cache");
    let run = || fetch(&spec(&origin.url(), cache.path(), None)).expect("fetch");

    let before = run();
    assert_eq!(before.commit, first.to_string());
    let repos = cached_repos(cache.path());
    assert_eq!(repos.len(), 1);
    // A marker inside the bare repository proves it is fetched into, not cloned again.
    let marker = repos[0].join("tend-test-marker");
    fs::write(&marker, "x").expect("marker");

    let second = origin.commit(&[("b.yaml", "b: 1\n")], &["a.yaml"], "two");
    let after = run();
    assert_eq!(after.commit, second.to_string());
    assert_eq!(contents(&after.dir), expect(&[("b.yaml", "b: 1\n")]));
    assert_eq!(cached_repos(cache.path()), repos);
    assert!(marker.exists(), "the cached repository was re-created");
    // The previous tree is kept (the last few are) and still holds the old content.
    assert_eq!(contents(&before.dir), expect(&[("a.yaml", "a: 1\n")]));

    // Unchanged remote: same commit, same directory.
    let again = run();
    assert_eq!(again.commit, after.commit);
    assert_eq!(again.dir, after.dir);
}

#[test]
fn old_trees_of_a_remote_are_removed() {
    let origin = Origin::new();
    let cache = tempfile::tempdir().expect("cache");
    let mut dirs = Vec::new();
    for i in 0..8 {
        origin.commit(&[("n.yaml", &format!("n: {i}\n"))], &[], "next");
        let fetched = fetch(&spec(&origin.url(), cache.path(), None)).expect("fetch");
        dirs.push(fetched.dir);
    }
    let kept: Vec<bool> = dirs.iter().map(|d| d.is_dir()).collect();
    assert_eq!(kept, [false, false, false, true, true, true, true, true]);
}

#[test]
fn unknown_ref_is_a_clear_error() {
    let h = history();
    let cache = tempfile::tempdir().expect("cache");
    for bad in ["no-such-branch", "deadbeefdeadbeef"] {
        let err = fetch(&spec(&h.origin.url(), cache.path(), Some(bad))).expect_err("unknown");
        assert!(matches!(err, GitError::UnknownRef { .. }), "{err:?}");
        let text = err.to_string();
        assert!(text.contains(bad), "{text}");
        assert!(text.contains("not a branch, tag or commit of"), "{text}");
        assert!(text.contains(&h.origin.url()), "{text}");
    }
}

#[test]
fn unreachable_remote_is_a_clear_error() {
    let cache = tempfile::tempdir().expect("cache");
    let err = fetch(&spec("file:///nonexistent/repo", cache.path(), None)).expect_err("fails");
    assert!(matches!(err, GitError::Unreachable { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("cannot reach git remote file:///nonexistent/repo: "),
        "{text}"
    );
}

#[test]
fn empty_remote_has_no_default_branch() {
    let origin = Origin::new();
    let cache = tempfile::tempdir().expect("cache");
    let err = fetch(&spec(&origin.url(), cache.path(), None)).expect_err("empty");
    assert!(matches!(err, GitError::NoDefaultBranch { .. }), "{err:?}");
}

#[test]
fn bad_ssh_key_is_reported_before_connecting() {
    let cache = tempfile::tempdir().expect("cache");
    let mut s = spec(
        "ssh://git@git.example.invalid/org/repo.git",
        cache.path(),
        None,
    );
    s.ssh_key = Some(PathBuf::from("/nonexistent/id_ed25519"));
    let err = fetch(&s).expect_err("bad key");
    assert!(matches!(err, GitError::BadKey { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("/nonexistent/id_ed25519"), "{text}");
    assert!(text.contains("does not exist"), "{text}");

    let public = cache.path().join("id_ed25519.pub");
    fs::write(&public, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE me@host\n").expect("write");
    s.ssh_key = Some(public);
    let text = fetch(&s).expect_err("public key").to_string();
    assert!(text.contains("public key"), "{text}");
}

#[cfg(unix)]
#[test]
fn symlinks_are_extracted_as_symlinks() {
    let origin = Origin::new();
    let root = origin.dir.path();
    fs::create_dir_all(root.join("dir")).expect("mkdir");
    fs::write(root.join("real.yaml"), "r: 1\n").expect("write");
    std::os::unix::fs::symlink("real.yaml", root.join("link.yaml")).expect("symlink");
    std::os::unix::fs::symlink("../real.yaml", root.join("dir/up.yaml")).expect("symlink");
    std::os::unix::fs::symlink("/etc/passwd", root.join("escape.yaml")).expect("symlink");
    origin.commit_worktree("links");

    let cache = tempfile::tempdir().expect("cache");
    let fetched = fetch(&spec(&origin.url(), cache.path(), None)).expect("fetch");
    for (link, target) in [
        ("link.yaml", "real.yaml"),
        ("dir/up.yaml", "../real.yaml"),
        ("escape.yaml", "/etc/passwd"),
    ] {
        let path = fetched.dir.join(link);
        let meta = fs::symlink_metadata(&path).expect("meta");
        assert!(meta.file_type().is_symlink(), "{link} is not a symlink");
        assert_eq!(fs::read_link(&path).expect("link"), Path::new(target));
    }
    assert_eq!(
        fs::read_to_string(fetched.dir.join("link.yaml")).expect("read"),
        "r: 1\n"
    );
}

#[test]
fn submodules_are_skipped() {
    let origin = Origin::new();
    let base = origin.commit(&[("a.yaml", "a: 1\n")], &[], "base");
    let base_tree = origin.repo.find_commit(base).expect("c").tree().expect("t");
    let mut builder = origin.repo.treebuilder(Some(&base_tree)).expect("builder");
    // A gitlink entry pointing at a commit of another repository.
    let foreign = Oid::from_str("1234567890123456789012345678901234567890").expect("oid");
    builder.insert("vendor", foreign, 0o160000).expect("insert");
    let tree = builder.write().expect("write");
    let head = origin.commit_tree(tree, "add submodule");

    let cache = tempfile::tempdir().expect("cache");
    let fetched = fetch(&spec(&origin.url(), cache.path(), None)).expect("fetch");
    assert_eq!(fetched.commit, head.to_string());
    assert_eq!(contents(&fetched.dir), expect(&[("a.yaml", "a: 1\n")]));
}

#[test]
fn corrupt_cache_is_cloned_again() {
    let origin = Origin::new();
    origin.commit(&[("a.yaml", "a: 1\n")], &[], "one");
    let cache = tempfile::tempdir().expect("cache");
    let first = fetch(&spec(&origin.url(), cache.path(), None)).expect("fetch");
    let repo = cached_repos(cache.path()).remove(0);
    let second_commit = origin.commit(&[("a.yaml", "a: 2\n")], &[], "two");

    // Objects gone: the repository cannot even be opened.
    fs::remove_dir_all(repo.join("objects")).expect("break");
    let fetched = fetch(&spec(&origin.url(), cache.path(), None)).expect("recovered");
    assert_eq!(fetched.commit, second_commit.to_string());
    assert_eq!(contents(&fetched.dir), expect(&[("a.yaml", "a: 2\n")]));

    // Objects of an extracted-before commit gone, refs intact: found on extraction.
    fs::remove_dir_all(&first.dir).expect("drop tree");
    for pack in fs::read_dir(repo.join("objects/pack")).expect("packs") {
        fs::remove_file(pack.expect("entry").path()).expect("rm pack");
    }
    let first_sha = first.commit.clone();
    let fetched = fetch(&spec(&origin.url(), cache.path(), Some(&first_sha))).expect("recovered");
    assert_eq!(contents(&fetched.dir), expect(&[("a.yaml", "a: 1\n")]));
}

#[test]
fn token_is_never_printed() {
    const TOKEN: &str = "glpat-VerySecretTokenValue42";
    let cache = tempfile::tempdir().expect("cache");
    // Nothing listens on port 9 of the loopback: the connection is refused at once.
    let url = format!("https://oauth2:{TOKEN}@127.0.0.1:9/org/repo.git");
    let mut s = spec(&url, cache.path(), Some("main"));
    s.token = Some(TOKEN.to_string());
    let err = fetch(&s).expect_err("nothing listens");
    let mut text = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text.push_str(&format!("{err:?}{s:?}"));
    assert!(!text.contains(TOKEN), "token leaked: {text}");
    assert!(
        text.contains("https://***@127.0.0.1:9/org/repo.git"),
        "{text}"
    );
    // Nothing on disk names it either.
    for entry in walk_files(cache.path()) {
        let bytes = fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(TOKEN),
            "token written to {}",
            entry.display()
        );
    }
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk_files(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn urls_and_redaction() {
    assert!(looks_like_git_url("https://github.com/org/repo"));
    assert!(looks_like_git_url("git@github.com:org/repo.git"));
    assert!(looks_like_git_url("file:///srv/repo"));
    assert!(!looks_like_git_url("./deploy"));
    assert!(!looks_like_git_url("/srv/deploy"));
    assert_eq!(
        redact_url("https://user:secret@example.com/r.git"),
        "https://***@example.com/r.git"
    );
}

#[test]
fn head_commit_of_local_directories() {
    let origin = Origin::new();
    let sha = origin.commit(&[("sub/a.yaml", "a: 1\n")], &[], "one");
    let sha_of = |dir: &std::path::Path| head_commit(dir).map(|(sha, _)| sha);
    assert_eq!(sha_of(origin.dir.path()), Some(sha.to_string()));
    assert_eq!(
        sha_of(&origin.dir.path().join("sub")),
        Some(sha.to_string())
    );
    let plain = tempfile::tempdir().expect("plain");
    if Repository::discover(plain.path()).is_err() {
        assert_eq!(head_commit(plain.path()), None);
    }
    // A repository without commits has no HEAD commit.
    let empty = Origin::new();
    assert_eq!(head_commit(empty.dir.path()), None);
}

// ---- known_hosts matching (libgit2 cannot reach a real SSH server in tests) ----

/// An SSH wire-format public key blob: string type, then key material.
fn key_blob(kind: &str, material: &[u8]) -> Vec<u8> {
    let mut blob = (kind.len() as u32).to_be_bytes().to_vec();
    blob.extend_from_slice(kind.as_bytes());
    blob.extend_from_slice(&(material.len() as u32).to_be_bytes());
    blob.extend_from_slice(material);
    blob
}

fn ed25519(seed: u8) -> Vec<u8> {
    key_blob("ssh-ed25519", &[seed; 32])
}

#[test]
fn known_hosts_plain_entries() {
    let key = ed25519(1);
    let rsa = key_blob("ssh-rsa", &[7; 64]);
    let text = format!(
        "# comment\n\
         \n\
         other.example.com ssh-ed25519 {}\n\
         github.com,140.82.121.4 ssh-ed25519 {} comment here\n\
         *.corp.example ssh-rsa {}\n",
        BASE64.encode(ed25519(9)),
        BASE64.encode(&key),
        BASE64.encode(&rsa)
    );
    assert_eq!(
        check_known_hosts(&text, "github.com", 22, &key),
        HostKeyStatus::Known { line: 4 }
    );
    assert_eq!(
        check_known_hosts(&text, "GitHub.COM", 22, &key),
        HostKeyStatus::Known { line: 4 }
    );
    assert_eq!(
        check_known_hosts(&text, "140.82.121.4", 22, &key),
        HostKeyStatus::Known { line: 4 }
    );
    assert_eq!(
        check_known_hosts(&text, "git.corp.example", 22, &rsa),
        HostKeyStatus::Known { line: 5 }
    );
}

#[test]
fn known_hosts_hashed_entries() {
    let key = ed25519(2);
    let salt = [0x5a_u8; 20];
    let hashed = |name: &str| {
        let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(&salt).expect("hmac key");
        mac.update(name.as_bytes());
        BASE64.encode(mac.finalize().into_bytes())
    };
    let entry = |name: &str| {
        format!(
            "|1|{}|{} ssh-ed25519 {}\n",
            BASE64.encode(salt),
            hashed(name),
            BASE64.encode(&key)
        )
    };
    let text = entry("gitlab.example.com") + &entry("[git.example.com]:2222");
    assert_eq!(
        check_known_hosts(&text, "gitlab.example.com", 22, &key),
        HostKeyStatus::Known { line: 1 }
    );
    assert_eq!(
        check_known_hosts(&text, "git.example.com", 2222, &key),
        HostKeyStatus::Known { line: 2 }
    );
    assert!(matches!(
        check_known_hosts(&text, "git.example.com", 22, &key),
        HostKeyStatus::Unknown { .. }
    ));
    assert_eq!(
        check_known_hosts(&text, "gitlab.example.com", 22, &ed25519(3)),
        HostKeyStatus::Changed { line: 1 }
    );
}

#[test]
fn known_hosts_port_form() {
    let key = ed25519(4);
    let text = format!(
        "[git.example.com]:2222 ssh-ed25519 {}\n",
        BASE64.encode(&key)
    );
    assert_eq!(
        check_known_hosts(&text, "git.example.com", 2222, &key),
        HostKeyStatus::Known { line: 1 }
    );
    // Port 22 is written without brackets; the bracketed entry is for 2222 only.
    assert!(matches!(
        check_known_hosts(&text, "git.example.com", 22, &key),
        HostKeyStatus::Unknown { .. }
    ));
    assert!(matches!(
        check_known_hosts(&text, "git.example.com", 2200, &key),
        HostKeyStatus::Unknown { .. }
    ));
    let wildcard = format!("[*.example.com]:22?? ssh-ed25519 {}\n", BASE64.encode(&key));
    assert_eq!(
        check_known_hosts(&wildcard, "git.example.com", 2222, &key),
        HostKeyStatus::Known { line: 1 }
    );
}

#[test]
fn known_hosts_wrong_key_is_a_change() {
    let text = format!(
        "git.example.com ssh-ed25519 {}\n",
        BASE64.encode(ed25519(5))
    );
    assert_eq!(
        check_known_hosts(&text, "git.example.com", 22, &ed25519(6)),
        HostKeyStatus::Changed { line: 1 }
    );
}

#[test]
fn known_hosts_unknown_host() {
    let text = format!(
        "git.example.com ssh-ed25519 {}\n",
        BASE64.encode(ed25519(7))
    );
    assert_eq!(
        check_known_hosts(&text, "elsewhere.example.com", 22, &ed25519(7)),
        HostKeyStatus::Unknown {
            other_types: vec![]
        }
    );
    assert_eq!(
        check_known_hosts("", "git.example.com", 22, &ed25519(7)),
        HostKeyStatus::Unknown {
            other_types: vec![]
        }
    );
}

#[test]
fn host_key_errors_say_what_to_do() {
    let home = std::env::var("HOME").unwrap_or_default();
    let default_file = Path::new(&home).join(".ssh/known_hosts");
    let unknown = GitError::UnknownHostKey {
        host: "git.example.com".into(),
        port: 22,
        known_hosts: default_file.clone(),
        note: String::new(),
    };
    if !home.is_empty() {
        assert_eq!(
            unknown.to_string(),
            format!(
                "host key for git.example.com is not in {}; add it with \
                 `ssh-keyscan git.example.com >> ~/.ssh/known_hosts`",
                default_file.display()
            )
        );
    }
    let changed = GitError::HostKeyChanged {
        host: "git.example.com".into(),
        port: 2222,
        known_hosts: PathBuf::from("/kh"),
        line: 3,
    };
    let text = changed.to_string();
    assert!(
        text.contains("[git.example.com]:2222 has changed"),
        "{text}"
    );
    assert!(text.contains("/kh:3"), "{text}");
    assert!(
        text.contains("ssh-keyscan -p 2222 git.example.com"),
        "{text}"
    );
}

// ---- shallow fetches over a network transport (git daemon on the loopback) ----

/// `git daemon` serving one directory on a free loopback port; killed on drop. `None` when
/// git is not installed (the test is then skipped).
struct Daemon {
    child: std::process::Child,
    port: u16,
}

impl Daemon {
    fn start(base: &Path) -> Option<Daemon> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .ok()?
            .port();
        let child = std::process::Command::new("git")
            .arg("daemon")
            .arg("--reuseaddr")
            .arg("--export-all")
            .arg("--informative-errors")
            .arg("--listen=127.0.0.1")
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", base.display()))
            .arg(base)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        let mut daemon = Daemon { child, port };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(daemon);
            }
            if let Ok(Some(_)) = daemon.child.try_wait() {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = daemon.child.kill();
        None
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn network_fetches_are_shallow_and_incremental() {
    let h = history();
    let base = h.origin.dir.path().parent().expect("parent").to_path_buf();
    let name = h
        .origin
        .dir
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let Some(daemon) = Daemon::start(&base) else {
        eprintln!("skipped: cannot start `git daemon`");
        return;
    };
    let url = format!("git://127.0.0.1:{}/{name}", daemon.port);
    let cache = tempfile::tempdir().expect("cache");
    let run = |git_ref: Option<&str>| {
        fetch(&spec(&url, cache.path(), git_ref)).unwrap_or_else(|e| panic!("{git_ref:?}: {e}"))
    };

    let tip = run(None);
    assert_eq!(tip.commit, h.c3.to_string());
    let repo_dir = cached_repos(cache.path()).remove(0);
    let repo = Repository::open_bare(&repo_dir).expect("open cache");
    assert!(
        repo.is_shallow(),
        "the first fetch of a branch should be shallow"
    );
    // Only the tip commit came over: its parent is beyond the shallow boundary.
    assert!(repo.find_commit(h.c2).is_err());

    // An annotated tag, shallow too; then a new commit on the branch.
    assert_eq!(run(Some("v2")).commit, h.c2.to_string());
    let c5 = h.origin.commit(&[("app.yaml", "v: 5\n")], &[], "c5");
    let next = run(None);
    assert_eq!(next.commit, c5.to_string());
    assert_eq!(contents(&next.dir), expect(&[("app.yaml", "v: 5\n")]));

    // A commit no ref points at needs the history: the cache is unshallowed.
    let old = run(Some(&h.c0.to_string()[..10]));
    assert_eq!(old.commit, h.c0.to_string());
    assert_eq!(contents(&old.dir), expect(&[("app.yaml", "v: 0\n")]));
    let repo = Repository::open_bare(&repo_dir).expect("open cache");
    assert!(repo.find_commit(h.c1).is_ok());
    assert_eq!(cached_repos(cache.path()), vec![repo_dir]);
    drop(daemon);
}

// ---- SSH end to end (a private sshd on the loopback; skipped where sshd is not installed) ----

struct Sshd {
    child: std::process::Child,
    port: u16,
    dir: TempDir,
    user: String,
}

impl Sshd {
    fn start() -> Option<Sshd> {
        let sshd = Path::new("/usr/sbin/sshd");
        if !sshd.exists() {
            return None;
        }
        let dir = tempfile::tempdir().ok()?;
        let d = dir.path();
        for name in ["host", "client", "stranger"] {
            let ok = std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
                .arg(d.join(name))
                .status()
                .ok()?
                .success();
            if !ok {
                return None;
            }
        }
        fs::copy(d.join("client.pub"), d.join("authorized_keys")).ok()?;
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .or_else(|| {
                let out = std::process::Command::new("id").arg("-un").output().ok()?;
                Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
            })?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .ok()?
            .port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nAuthorizedKeysFile {auth}\n\
             PidFile {pid}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n",
            host = d.join("host").display(),
            auth = d.join("authorized_keys").display(),
            pid = d.join("sshd.pid").display(),
        );
        fs::write(d.join("sshd_config"), config).ok()?;
        let _ = fs::create_dir_all("/run/sshd");
        let child = std::process::Command::new(sshd)
            .arg("-D")
            .arg("-f")
            .arg(d.join("sshd_config"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        let mut server = Sshd {
            child,
            port,
            dir,
            user,
        };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(server);
            }
            if let Ok(Some(_)) = server.child.try_wait() {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        None
    }

    fn host_key_b64(&self) -> String {
        let text = fs::read_to_string(self.dir.path().join("host.pub")).expect("host.pub");
        text.split_whitespace().nth(1).expect("key").to_string()
    }

    fn known_hosts(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        fs::write(&path, text).expect("known_hosts");
        path
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "needs /usr/sbin/sshd (openssh-server); .ci/run installs it and runs this with --ignored"]
fn ssh_end_to_end_with_known_hosts() {
    let sshd = Sshd::start().expect("a usable /usr/sbin/sshd (install openssh-server)");
    let origin = Origin::new();
    let head = origin.commit(&[("a.yaml", "a: 1\n")], &[], "one");
    let url = format!(
        "ssh://{}@127.0.0.1:{}{}",
        sshd.user,
        sshd.port,
        origin.dir.path().display()
    );
    let cache = tempfile::tempdir().expect("cache");
    let ssh_spec = |known_hosts: &Path, key: &str| GitSpec {
        ssh_key: Some(sshd.dir.path().join(key)),
        known_hosts: Some(known_hosts.to_path_buf()),
        ..spec(&url, cache.path(), None)
    };
    let plain = sshd.known_hosts(
        "plain",
        &format!(
            "[127.0.0.1]:{} ssh-ed25519 {}\n",
            sshd.port,
            sshd.host_key_b64()
        ),
    );

    // The server must accept the client key at all, or this environment cannot run the test
    // (e.g. a locked account).
    let first = fetch(&ssh_spec(&plain, "client"));
    if let Err(GitError::AuthFailed { .. }) = &first {
        eprintln!("skipped: sshd does not let {} log in here", sshd.user);
        return;
    }
    let fetched = first.expect("ssh fetch");
    assert_eq!(fetched.commit, head.to_string());
    assert_eq!(contents(&fetched.dir), expect(&[("a.yaml", "a: 1\n")]));

    // Hashed entry, as `ssh-keyscan -H` writes it.
    let salt = [3_u8; 20];
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(&salt).expect("hmac");
    mac.update(format!("[127.0.0.1]:{}", sshd.port).as_bytes());
    let hashed = sshd.known_hosts(
        "hashed",
        &format!(
            "|1|{}|{} ssh-ed25519 {}\n",
            BASE64.encode(salt),
            BASE64.encode(mac.finalize().into_bytes()),
            sshd.host_key_b64()
        ),
    );
    origin.commit(&[("a.yaml", "a: 2\n")], &[], "two");
    assert!(fetch(&ssh_spec(&hashed, "client")).is_ok());

    // Unknown host: nothing in the file for this host.
    let empty = sshd.known_hosts("empty", "");
    let err = fetch(&ssh_spec(&empty, "client")).expect_err("unknown host");
    assert!(matches!(err, GitError::UnknownHostKey { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("ssh-keyscan -p {} 127.0.0.1", sshd.port)),
        "{text}"
    );

    // Changed key: the file has another ed25519 key for the host.
    let stranger = fs::read_to_string(sshd.dir.path().join("stranger.pub")).expect("pub");
    let other_key = stranger.split_whitespace().nth(1).expect("key");
    let changed = sshd.known_hosts(
        "changed",
        &format!("[127.0.0.1]:{} ssh-ed25519 {other_key}\n", sshd.port),
    );
    let err = fetch(&ssh_spec(&changed, "client")).expect_err("changed key");
    assert!(matches!(err, GitError::HostKeyChanged { .. }), "{err:?}");

    // A key the server does not accept: one clear error, no retry loop.
    let err = fetch(&ssh_spec(&plain, "stranger")).expect_err("rejected key");
    assert!(matches!(err, GitError::AuthFailed { .. }), "{err:?}");
    assert!(err.to_string().contains("rejected the SSH key"), "{err}");
}

// ---- HTTPS-style token auth against a server that rejects everything ----

/// A loopback HTTP server answering every request with `401` (Basic auth); returns its port
/// and the `Authorization` headers it received.
fn rejecting_http_server() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead as _, BufReader, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut auth = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.strip_prefix("Authorization: ") {
                    auth = value.trim().to_string();
                }
            }
            record.lock().expect("lock").push(auth);
            let _ = (&stream).write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\n\
                  Content-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (port, seen)
}

#[test]
fn rejected_token_fails_once_with_a_clear_error() {
    const TOKEN: &str = "tok-Sup3rS3cret";
    let (port, seen) = rejecting_http_server();
    let cache = tempfile::tempdir().expect("cache");
    let url = format!("http://127.0.0.1:{port}/org/repo.git");

    // No token: the remote asks for credentials; say how to give them.
    let err = fetch(&spec(&url, cache.path(), None)).expect_err("401");
    assert!(matches!(err, GitError::AuthFailed { .. }), "{err:?}");
    assert!(err.to_string().contains("TEND_GIT_TOKEN"), "{err}");

    // A token that is rejected: tried once, then a clear error (no endless retries).
    seen.lock().expect("lock").clear();
    let mut s = spec(&url, cache.path(), None);
    s.token = Some(TOKEN.to_string());
    let err = fetch(&s).expect_err("rejected");
    assert!(matches!(err, GitError::AuthFailed { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("rejected the token"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
    let seen = seen.lock().expect("lock").clone();
    let basic = format!("Basic {}", BASE64.encode(format!("x-access-token:{TOKEN}")));
    assert_eq!(
        seen.iter().filter(|a| **a == basic).count(),
        1,
        "token sent once as x-access-token: {seen:?}"
    );
    assert!(seen.len() <= 3, "too many requests: {seen:?}");
}

#[test]
fn plain_local_paths_work_and_are_cached_by_absolute_path() {
    let origin = Origin::new();
    let head = origin.commit(&[("a.yaml", "a: 1\n")], &[], "one");
    let cache = tempfile::tempdir().expect("cache");
    let path = origin.dir.path().to_string_lossy().into_owned();
    let fetched = fetch(&spec(&path, cache.path(), Some("trunk"))).expect("fetch by path");
    assert_eq!(fetched.commit, head.to_string());
    let repos = cached_repos(cache.path());
    let name = repos[0]
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(name.ends_with(&sanitized_last_segment(&origin)), "{name}");
}
