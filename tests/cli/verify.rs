//! `--verify-signatures` (README "Verifying what you apply"): commits and tags signed with
//! OpenPGP and SSH keys made here, through git2's signed-commit support; every refusal exits
//! 2 before anything is rendered or written.

use crate::common::*;
use pgp::composed::{DetachedSignature, KeyType, SecretKeyParamsBuilder, SignedSecretKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::types::Password;
use rand_chacha::rand_core::SeedableRng;
use std::path::Path;
use tend_testserver::TestCluster;

const CONFIG_MAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: signed\n  namespace: default\ndata:\n  a: \"1\"\n";

/// Another ConfigMap, for a later commit.
fn config_map(name: &str) -> String {
    CONFIG_MAP.replace("name: signed", &format!("name: {name}"))
}

/// A signer of commits and tags.
enum Key {
    Ssh(Box<ssh_key::PrivateKey>),
    Pgp(Box<SignedSecretKey>),
}

impl Key {
    fn ssh(seed: u8) -> Key {
        let pair = ssh_key::private::Ed25519Keypair::from_seed(&[seed; 32]);
        Key::Ssh(Box::new(ssh_key::PrivateKey::from(pair)))
    }

    /// An OpenPGP key made `age_days` ago, expiring after `valid_days` (None: never).
    fn pgp(seed: u64, age_days: i64, valid_days: Option<i64>) -> Key {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let created = chrono::Utc::now() - chrono::Duration::days(age_days);
        let params = SecretKeyParamsBuilder::default()
            .key_type(KeyType::Ed25519Legacy)
            .can_sign(true)
            .can_certify(true)
            .primary_user_id("Alice <alice@example.com>".into())
            .created_at(created)
            .build()
            .unwrap();
        let secret = params.generate(&mut rng).unwrap();
        let mut signed = secret.sign(&mut rng, &Password::empty()).unwrap();
        if let Some(days) = valid_days {
            expire_after(&mut signed, days);
        }
        Key::Pgp(Box::new(signed))
    }

    /// What `--trusted-keys` reads for this key.
    fn trusted(&self, principal: &str) -> String {
        match self {
            Key::Ssh(key) => format!(
                "{principal} namespaces=\"git\" {}\n",
                key.public_key().to_openssh().unwrap()
            ),
            Key::Pgp(key) => key
                .signed_public_key()
                .to_armored_string(Default::default())
                .unwrap(),
        }
    }

    /// An armored signature over `data`, as git stores it.
    fn sign(&self, data: &[u8]) -> String {
        match self {
            Key::Ssh(key) => key
                .sign("git", ssh_key::HashAlg::Sha512, data)
                .unwrap()
                .to_pem(ssh_key::LineEnding::LF)
                .unwrap(),
            Key::Pgp(key) => {
                let rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
                DetachedSignature::sign_binary_data(
                    rng,
                    &key.primary_key,
                    &Password::empty(),
                    HashAlgorithm::Sha256,
                    data,
                )
                .unwrap()
                .to_armored_string(Default::default())
                .unwrap()
            }
        }
    }
}

/// Re-signs the key's user ID with a key expiration time, as `gpg --quick-set-expire` does
/// (the crate's key builder sets none).
fn expire_after(key: &mut SignedSecretKey, days: i64) {
    use pgp::packet::{Subpacket, SubpacketData};
    let user = &key.details.users[0];
    let mut config = user.signatures[0].config().unwrap().clone();
    config.hashed_subpackets.push(
        Subpacket::regular(SubpacketData::KeyExpirationTime(chrono::Duration::days(
            days,
        )))
        .unwrap(),
    );
    let public = key.primary_key.public_key();
    let signature = config
        .sign_certification(
            &key.primary_key,
            &public,
            &Password::empty(),
            pgp::types::Tag::UserId,
            &user.id,
        )
        .unwrap();
    key.details.users[0].signatures = vec![signature];
}

/// Adds a key revocation signature, as `gpg --gen-revoke` makes and `gpg --import` attaches.
fn revoke(key: &mut SignedSecretKey) {
    let mut config = key.details.users[0].signatures[0].config().unwrap().clone();
    config.typ = pgp::packet::SignatureType::KeyRevocation;
    let public = key.primary_key.public_key();
    let signature = config
        .sign_key(&key.primary_key, &Password::empty(), &public)
        .unwrap();
    key.details.revocation_signatures.push(signature);
}

/// A repository whose `main` holds `files`, committed and signed by `key` (unsigned with
/// None); the commit's id.
fn commit(dir: &Path, files: &[(&str, &str)], key: Option<&Key>) -> String {
    let repo = git2::Repository::open(dir)
        .or_else(|_| git2::Repository::init(dir))
        .unwrap();
    write_site_keeping_git(dir, files);
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let who = git2::Signature::now("Alice", "alice@example.com").unwrap();
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    let oid = match key {
        None => repo
            .commit(Some("HEAD"), &who, &who, "unsigned", &tree, &parents)
            .unwrap(),
        Some(key) => {
            let buffer = repo
                .commit_create_buffer(&who, &who, "signed", &tree, &parents)
                .unwrap();
            let content = buffer.as_str().unwrap().to_string();
            let oid = repo
                .commit_signed(&content, &key.sign(content.as_bytes()), None)
                .unwrap();
            let head = repo
                .head()
                .ok()
                .and_then(|h| h.name().ok().map(|n| n.to_string()));
            let branch = head.unwrap_or_else(|| "refs/heads/main".to_string());
            repo.reference(&branch, oid, true, "signed commit").unwrap();
            repo.set_head(&branch).unwrap();
            oid
        }
    };
    oid.to_string()
}

fn write_site_keeping_git(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// An annotated tag `name` of HEAD, signed by `key`.
fn tag(dir: &Path, name: &str, key: Option<&Key>) {
    let repo = git2::Repository::open(dir).unwrap();
    let head = repo.head().unwrap().peel_to_commit().unwrap().id();
    let mut body = format!(
        "object {head}\ntype commit\ntag {name}\ntagger Alice <alice@example.com> 1700000000 +0000\n\nrelease {name}\n"
    );
    if let Some(key) = key {
        let signature = key.sign(body.as_bytes());
        body.push_str(&signature);
    }
    let oid = repo
        .odb()
        .unwrap()
        .write(git2::ObjectType::Tag, body.as_bytes())
        .unwrap();
    repo.reference(&format!("refs/tags/{name}"), oid, true, "tag")
        .unwrap();
}

/// `tend render` of `repo` with `args`, trusting `trusted` (written to a file).
fn render(repo: &Path, trusted: &str, args: &[&str]) -> (i32, String, String) {
    let keys = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(keys.path(), trusted).unwrap();
    run(tend()
        .env("TEND_CACHE_DIR", scratch_home())
        .args(["render", "--repo"])
        .arg(repo)
        .arg("--trusted-keys")
        .arg(keys.path())
        .args(args))
}

#[test]
fn a_commit_signed_with_a_trusted_ssh_key_renders_and_names_its_signer() {
    let repo = tempfile::tempdir().unwrap();
    let alice = Key::ssh(1);
    let sha = commit(repo.path(), &[("cm.yaml", CONFIG_MAP)], Some(&alice));
    let trusted = alice.trusted("alice@example.com");
    for args in [
        &["--verify-signatures", "head", "--ref", "HEAD", "-v"][..],
        &["--verify-signatures", "head", "-v"][..],
    ] {
        let (code, out, err) = render(repo.path(), &trusted, args);
        assert_eq!(code, 0, "{args:?}\n{out}\n{err}");
        assert!(out.contains("name: signed"), "{out}");
        assert!(
            err.contains(&format!(
                "at commit {sha}, commit signed by alice@example.com (SSH key SHA256:"
            )),
            "{err}"
        );
    }
}

#[test]
fn every_refusal_exits_2_naming_the_commit_the_key_and_the_reason() {
    let repo = tempfile::tempdir().unwrap();
    let (alice, mallory) = (Key::ssh(1), Key::ssh(2));
    let trusted = alice.trusted("alice@example.com");
    let verify = ["--verify-signatures", "head", "--ref", "HEAD"];

    let sha = commit(repo.path(), &[("cm.yaml", CONFIG_MAP)], None);
    let (code, out, err) = render(repo.path(), &trusted, &verify);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.contains(&format!("commit {sha} is refused: it is not signed")),
        "{err}"
    );

    let sha = commit(repo.path(), &[("b.yaml", &config_map("b"))], Some(&mallory));
    let (code, _, err) = render(repo.path(), &trusted, &verify);
    assert_eq!(code, 2, "{err}");
    let Key::Ssh(mallory_key) = &mallory else {
        unreachable!()
    };
    let fingerprint = mallory_key
        .public_key()
        .fingerprint(ssh_key::HashAlg::Sha256);
    assert!(
        err.contains(&format!("commit {sha} is refused: it is signed by SSH key {fingerprint}, which is not a trusted key")),
        "{err}"
    );

    // A signature made over other content: what a rewritten commit carrying a copied
    // signature looks like.
    let git = git2::Repository::open(repo.path()).unwrap();
    let head = git.head().unwrap().peel_to_commit().unwrap();
    let who = git2::Signature::now("Alice", "alice@example.com").unwrap();
    let buffer = git
        .commit_create_buffer(&who, &who, "forged", &head.tree().unwrap(), &[&head])
        .unwrap();
    let forged = git
        .commit_signed(
            buffer.as_str().unwrap(),
            &alice.sign(b"something else"),
            None,
        )
        .unwrap();
    git.reference("refs/heads/forged", forged, true, "forged")
        .unwrap();
    let (code, _, err) = render(
        repo.path(),
        &trusted,
        &["--verify-signatures", "head", "--ref", "forged"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not match its content"), "{err}");

    // A key past its valid-before date.
    let Key::Ssh(alice_key) = &alice else {
        unreachable!()
    };
    let expired = format!(
        "alice@example.com valid-before=\"20200101\" {}\n",
        alice_key.public_key().to_openssh().unwrap()
    );
    commit(repo.path(), &[("c.yaml", &config_map("c"))], Some(&alice));
    let (code, _, err) = render(repo.path(), &expired, &verify);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("signed by an expired key: SSH key"), "{err}");

    // No trusted keys at all is a usage error, not a pass.
    let (code, _, err) = run(tend()
        .args(["render", "--verify-signatures", "head", "--repo"])
        .arg(repo.path()));
    assert_eq!(code, 2);
    assert!(
        err.contains("--verify-signatures needs the keys it trusts"),
        "{err}"
    );
}

#[test]
fn openpgp_signatures_good_expired_and_untrusted() {
    let repo = tempfile::tempdir().unwrap();
    let alice = Key::pgp(1, 0, None);
    let sha = commit(repo.path(), &[("cm.yaml", CONFIG_MAP)], Some(&alice));
    let verify = ["--verify-signatures", "head", "--ref", "HEAD", "-v"];
    let (code, out, err) = render(repo.path(), &alice.trusted(""), &verify);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains(&format!(
            "at commit {sha}, commit signed by Alice <alice@example.com> (OpenPGP key "
        )),
        "{err}"
    );

    let bob = Key::pgp(2, 0, None);
    let (code, _, err) = render(repo.path(), &bob.trusted(""), &verify);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("it is signed by OpenPGP key"), "{err}");
    assert!(err.contains("which is not a trusted key"), "{err}");

    // Made ten days ago, valid for one: expired nine days ago.
    let carol = Key::pgp(3, 10, Some(1));
    commit(repo.path(), &[("b.yaml", &config_map("b"))], Some(&carol));
    let (code, _, err) = render(repo.path(), &carol.trusted(""), &verify);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("it is signed by an expired key"), "{err}");

    // Revoked after signing: the published key now carries its revocation.
    let mut dave = Key::pgp(4, 0, None);
    commit(repo.path(), &[("c.yaml", &config_map("c"))], Some(&dave));
    let Key::Pgp(secret) = &mut dave else {
        unreachable!()
    };
    revoke(secret);
    let (code, _, err) = render(repo.path(), &dave.trusted(""), &verify);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("it is signed by a revoked key"), "{err}");
}

#[test]
fn tag_mode_checks_the_annotated_tag_ref_names() {
    let repo = tempfile::tempdir().unwrap();
    let alice = Key::ssh(1);
    let trusted = alice.trusted("alice@example.com");
    // The commit itself is unsigned: tag mode checks only the tag, as Flux's does.
    commit(repo.path(), &[("cm.yaml", CONFIG_MAP)], None);
    tag(repo.path(), "v1.0.0", Some(&alice));
    tag(repo.path(), "v1.0.1", None);
    let (code, out, err) = render(
        repo.path(),
        &trusted,
        &["--verify-signatures", "tag", "--ref", "v1.0.0", "-v"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains("tag signed by alice@example.com (SSH key"),
        "{err}"
    );

    let (code, _, err) = render(
        repo.path(),
        &trusted,
        &["--verify-signatures", "tag", "--ref", "v1.0.1"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("tag v1.0.1 is refused: it is not signed"),
        "{err}"
    );

    let (code, _, err) = render(
        repo.path(),
        &trusted,
        &["--verify-signatures", "tag-and-head", "--ref", "v1.0.0"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is refused: it is not signed"), "{err}");

    let (code, _, err) = render(
        repo.path(),
        &trusted,
        &["--verify-signatures", "tag", "--ref", "HEAD"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no tag was asked for"), "{err}");
}

#[test]
fn a_work_tree_with_uncommitted_changes_is_refused() {
    let repo = tempfile::tempdir().unwrap();
    let alice = Key::ssh(1);
    commit(repo.path(), &[("cm.yaml", CONFIG_MAP)], Some(&alice));
    std::fs::write(
        repo.path().join("extra.yaml"),
        CONFIG_MAP.replace("signed", "extra"),
    )
    .unwrap();
    let (code, out, err) = render(
        repo.path(),
        &alice.trusted("alice@example.com"),
        &["--verify-signatures", "head"],
    );
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.contains("it has changes that no commit signs (extra.yaml)"),
        "{err}"
    );
}

#[test]
fn apply_records_the_signer_and_a_refused_commit_writes_nothing() {
    let cluster = TestCluster::start();
    let repo = tempfile::tempdir().unwrap();
    let alice = Key::ssh(1);
    commit(repo.path(), &[("cm.yaml", CONFIG_MAP)], None);
    let keys = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(keys.path(), alice.trusted("alice@example.com")).unwrap();
    let apply = |extra: &[&str]| {
        let mut cmd = tend();
        cmd.env("TEND_CACHE_DIR", scratch_home())
            .args([
                "apply",
                "--verify-signatures",
                "head",
                "--ref",
                "HEAD",
                "--repo",
            ])
            .arg(repo.path())
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path())
            .args(extra);
        run(&mut cmd)
    };
    let (code, _, err) = apply(&["--trusted-keys", keys.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(writes(&cluster).is_empty(), "{:?}", writes(&cluster));

    commit(repo.path(), &[("cm.yaml", CONFIG_MAP)], Some(&alice));
    let (code, out, err) = apply(&[
        "--trusted-keys",
        keys.path().to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let signer = report["signedBy"].as_str().unwrap_or_default().to_string();
    assert!(
        signer.starts_with("commit signed by alice@example.com (SSH key SHA256:"),
        "{out}"
    );
    let parent = get(&cluster, "", "secrets", "tend-system", "tend").expect("parent");
    assert_eq!(
        parent["metadata"]["annotations"]["tend.dev/last-signed-by"].as_str(),
        Some(signer.as_str())
    );

    // The same keys from a Secret in the cluster, as Flux keeps them.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use k8s_openapi::api::core::v1::Secret;
        let api: kube::Api<Secret> = kube::Api::namespaced(cluster.client().await, "tend-system");
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "signers"},
            "stringData": {"allowed_signers": alice.trusted("alice@example.com")},
        }))
        .unwrap();
        api.create(&Default::default(), &secret).await.unwrap();
    });
    let (code, out, err) = apply(&["--trusted-keys-secret", "tend-system/signers"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("verified: commit signed by alice@example.com"),
        "{out}"
    );
}

/// Flux's `GitRepository.spec.verify`: a repository a unit fetches is checked with the run's
/// keys and those of the Secret it names; the repository under test asks for
/// `--verify-signatures`.
#[test]
fn a_flux_git_repository_with_spec_verify_is_checked_when_fetched() {
    let alice = Key::ssh(1);
    let other = tempfile::tempdir().unwrap();
    commit(
        other.path(),
        &[("app.yaml", &config_map("from-other"))],
        Some(&alice),
    );
    let site = tempfile::tempdir().unwrap();
    let units = |verify: &str| {
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: other\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: {}\n  ref:\n    branch: main\n{verify}---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: other\n",
            other.path().display()
        )
    };
    let verify = "  verify:\n    mode: HEAD\n    secretRef:\n      name: signers\n";
    let signers = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: signers\n  namespace: flux-system\nstringData:\n  allowed_signers: |\n    {}",
        alice.trusted("alice@example.com")
    );
    write_site(
        site.path(),
        &[("units.yaml", &units(verify)), ("signers.yaml", &signers)],
    );
    let render = || {
        run(tend()
            .env("TEND_CACHE_DIR", scratch_home())
            .args(["render", "-v", "--repo"])
            .arg(site.path()))
    };
    let (code, out, err) = render();
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("name: from-other"), "{out}");
    assert!(
        err.contains("commit signed by alice@example.com (SSH key"),
        "{err}"
    );

    // The same repository, its newest commit unsigned: refused at the GitRepository.
    commit(other.path(), &[("b.yaml", &config_map("b"))], None);
    let (code, out, err) = render();
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("units.yaml:"), "{err}");
    assert!(err.contains("is refused: it is not signed"), "{err}");

    // No key at all: said, with the way out.
    write_site(site.path(), &[("units.yaml", &units(verify))]);
    let (code, _, err) = render();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the Secret signers is not in the desired state"),
        "{err}"
    );
}
