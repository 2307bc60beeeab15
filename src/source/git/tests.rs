use super::*;

const TOKEN: &str = "ghp_S3cr3tT0k3nValue";

#[test]
fn redacts_userinfo() {
    assert_eq!(
        redact_url("https://user:pw@example.com/a/b.git"),
        "https://***@example.com/a/b.git"
    );
    assert_eq!(
        redact_url(&format!("https://{TOKEN}@github.com/o/r")),
        "https://***@github.com/o/r"
    );
    assert_eq!(redact_url("ssh://git@host/x"), "ssh://git@host/x");
    assert_eq!(redact_url("ssh://git:pw@host/x"), "ssh://git:***@host/x");
    assert_eq!(
        redact_url("git@github.com:o/r.git"),
        "git@github.com:o/r.git"
    );
    assert_eq!(redact_url("https://host/a@b"), "https://host/a@b");
    assert_eq!(redact_url("/some/path"), "/some/path");
}

#[test]
fn sanitizes_messages() {
    let msg =
        format!("failed to fetch 'https://x:{TOKEN}@h.example/r.git': 401 (and also {TOKEN})");
    let clean = sanitize(&msg, Some(TOKEN));
    assert!(!clean.contains(TOKEN), "{clean}");
    assert!(clean.contains("'https://***@h.example/r.git'"), "{clean}");
    assert_eq!(sanitize("no urls here", None), "no urls here");
}

#[test]
fn url_detection() {
    for url in [
        "https://github.com/o/r",
        "http://h/r",
        "ssh://git@h/r",
        "git://h/r",
        "file:///tmp/r",
        "git@github.com:o/r.git",
        "GIT+SSH://h/r",
    ] {
        assert!(looks_like_git_url(url), "{url}");
    }
    for path in [
        ".",
        "./deploy",
        "/srv/repo",
        "deploy/prod",
        "C:\\x",
        "a:b",
        "./u@h:p",
    ] {
        assert!(!looks_like_git_url(path), "{path}");
    }
}

#[test]
fn ssh_ports() {
    assert_eq!(ssh_port("ssh://git@h:2222/r"), Some(2222));
    assert_eq!(ssh_port("ssh://[::1]:2200/r"), Some(2200));
    assert_eq!(ssh_port("ssh://h/r"), None);
    assert_eq!(ssh_port("git@h:r"), None);
    assert_eq!(ssh_port("https://h:8443/r"), None);
}

#[test]
fn cache_keys() {
    let a = cache_key("https://github.com/org/deploy.git");
    assert!(a.ends_with("-deploy"), "{a}");
    assert_eq!(a.len(), 12 + 1 + "deploy".len());
    // Credentials do not change the cache entry; different remotes do.
    assert_eq!(a, cache_key("https://u:p@github.com/org/deploy.git"));
    assert_ne!(a, cache_key("https://github.com/other/deploy.git"));
    assert!(cache_key("git@h:weird name/..").ends_with("-weird_name"));
    assert!(cache_key("file:///").ends_with("-repo"));
}

#[test]
fn glob() {
    assert!(glob_match(b"*.example.com", b"git.example.com"));
    assert!(!glob_match(b"*.example.com", b"example.com"));
    assert!(glob_match(b"gi?.h", b"git.h"));
    assert!(glob_match(b"*", b""));
    assert!(glob_match(b"a*b*c", b"aXbYbZc"));
    assert!(!glob_match(b"a*b*c", b"aXbYbZ"));
}

fn key_blob(kind: &str, body: &[u8]) -> Vec<u8> {
    let mut blob = (kind.len() as u32).to_be_bytes().to_vec();
    blob.extend_from_slice(kind.as_bytes());
    blob.extend_from_slice(body);
    blob
}

#[test]
fn negated_patterns_and_markers() {
    let key = key_blob("ssh-ed25519", b"k1");
    let b64 = BASE64.encode(&key);
    let text = format!("*.example.com,!bad.example.com ssh-ed25519 {b64}\n");
    assert_eq!(
        check_known_hosts(&text, "git.example.com", 22, &key),
        HostKeyStatus::Known { line: 1 }
    );
    assert!(matches!(
        check_known_hosts(&text, "bad.example.com", 22, &key),
        HostKeyStatus::Unknown { .. }
    ));
    let revoked = format!("{text}@revoked * ssh-ed25519 {b64}\n");
    assert_eq!(
        check_known_hosts(&revoked, "git.example.com", 22, &key),
        HostKeyStatus::Revoked { line: 2 }
    );
    let ca = format!("@cert-authority * ssh-ed25519 {b64}\n");
    assert!(matches!(
        check_known_hosts(&ca, "git.example.com", 22, &key),
        HostKeyStatus::Unknown { .. }
    ));
}

#[test]
fn other_key_types_are_not_a_change() {
    let server = key_blob("ecdsa-sha2-nistp256", b"k1");
    let listed = BASE64.encode(key_blob("ssh-ed25519", b"k2"));
    let text = format!("h ssh-ed25519 {listed}\n");
    assert_eq!(
        check_known_hosts(&text, "h", 22, &server),
        HostKeyStatus::Unknown {
            other_types: vec!["ssh-ed25519".into()]
        }
    );
}

#[test]
fn key_checks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        fs::write(&p, text).expect("write");
        p
    };
    let problem = |p: &Path| match check_private_key(p) {
        Err(GitError::BadKey { problem, .. }) => problem,
        other => panic!("expected BadKey, got {other:?}"),
    };
    assert!(problem(&dir.path().join("missing")).contains("does not exist"));
    assert!(problem(dir.path()).contains("directory"));
    assert!(problem(&write("id.pub", "ssh-ed25519 AAAA me@h\n")).contains("public key"));
    assert!(problem(&write("junk", "hello\n")).contains("not a private key"));
    let pem = write(
        "rsa",
        "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
    );
    assert!(check_private_key(&pem).is_ok());
    let enc = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
    assert!(problem(&write("enc", enc)).contains("passphrase"));
    // OpenSSH format: magic, then the cipher name as an SSH string.
    let openssh = |cipher: &str| {
        let mut blob = b"openssh-key-v1\0".to_vec();
        blob.extend(key_blob(cipher, b"rest"));
        format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
            BASE64.encode(blob)
        )
    };
    assert!(check_private_key(&write("plain", &openssh("none"))).is_ok());
    assert!(problem(&write("aes", &openssh("aes256-ctr"))).contains("passphrase"));
}

/// The token must not leak through any error, whatever the path that built it.
#[test]
fn token_absent_from_every_error() {
    let url = format!("https://x-access-token:{TOKEN}@git.example.com/o/r.git");
    let spec = GitSpec {
        url: url.clone(),
        token: Some(TOKEN.to_string()),
        ..GitSpec::default()
    };
    let ctx = Ctx::new(&spec);
    let raw = git2::Error::from_str(&format!("failed to connect to {url}: token {TOKEN}"));
    let auth = Auth::new(&ctx);
    let lib = ctx.libgit(&raw);
    let errors = vec![
        GitError::Unreachable {
            url: ctx.url.clone(),
            source: lib.clone(),
        },
        GitError::Fetch {
            url: ctx.url.clone(),
            source: lib.clone(),
        },
        GitError::CacheRepo {
            dir: PathBuf::from("/c"),
            source: lib.clone(),
        },
        ctx.unknown_ref(),
        GitError::AmbiguousRef {
            git_ref: "abcdef1".into(),
            url: ctx.url.clone(),
        },
        GitError::NotACommit {
            git_ref: "v1".into(),
            url: ctx.url.clone(),
        },
        GitError::NoDefaultBranch {
            url: ctx.url.clone(),
        },
        auth.network_error(&raw),
        {
            let _ = auth.credentials(None, CredentialType::USER_PASS_PLAINTEXT);
            let _ = auth.credentials(None, CredentialType::USER_PASS_PLAINTEXT);
            auth.take_failure().expect("second try fails")
        },
        GitError::UnsafePath {
            commit: "0".repeat(40),
            url: ctx.url.clone(),
            name: "..".into(),
        },
        GitError::CorruptCache {
            dir: PathBuf::from("/c"),
            source: Box::new(GitError::Fetch {
                url: ctx.url.clone(),
                source: lib,
            }),
        },
    ];
    let debug = format!("{spec:?}");
    assert!(!debug.contains(TOKEN), "token leaked by Debug: {debug}");
    for err in errors {
        let mut text = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(s) = source {
            text.push_str(&s.to_string());
            source = s.source();
        }
        assert!(!text.contains(TOKEN), "token leaked: {text}");
    }
}

#[test]
fn credential_retries_are_bounded() {
    let spec = GitSpec {
        url: "https://h.example/r".into(),
        token: Some(TOKEN.into()),
        ..GitSpec::default()
    };
    let ctx = Ctx::new(&spec);
    let auth = Auth::new(&ctx);
    assert!(auth
        .credentials(None, CredentialType::USER_PASS_PLAINTEXT)
        .is_ok());
    let second = auth.credentials(None, CredentialType::USER_PASS_PLAINTEXT);
    assert!(second.is_err());
    let failure = auth.take_failure().expect("recorded");
    assert!(matches!(failure, GitError::AuthFailed { .. }));
    assert!(
        failure.to_string().contains("rejected the token"),
        "{failure}"
    );
    // Without a token, the first request already fails with advice.
    let spec = GitSpec {
        url: "https://h.example/r".into(),
        ..GitSpec::default()
    };
    let ctx = Ctx::new(&spec);
    let auth = Auth::new(&ctx);
    assert!(auth
        .credentials(None, CredentialType::USER_PASS_PLAINTEXT)
        .is_err());
    let failure = auth.take_failure().expect("recorded");
    assert!(failure.to_string().contains("TEND_GIT_TOKEN"), "{failure}");
}
