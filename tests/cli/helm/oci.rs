//! Charts from an OCI registry served by the test itself (README "HelmChart", "Chart
//! repositories"): a range resolved from the tags, `+` written `_` in tags, the layer's digest
//! checked, the archive cached by digest; logins from files, Helm's registry config and a
//! Secret, never printed; logins for HTTP repositories too.

use super::registry::{
    chart, cosign_public_key, docker_config, registry, serve, sha, CosignSigned, RegistryOptions,
};
use crate::common::*;
use crate::kinds::cluster_with_crds;
use std::path::Path;

const CANARY: &str = "pa55-canary-91";

fn release(repository: &str, version: &str) -> String {
    format!(
        "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: store\n  namespace: shop\nspec:\n  repository: {repository}\n  name: shop\n  version: \"{version}\"\n"
    )
}

/// `oci://127.0.0.1:port/charts` of a registry at `http://127.0.0.1:port`.
fn oci(base: &str) -> String {
    format!("{}/charts", base.replace("http://", "oci://"))
}

/// `tend` with Helm's registry config at `helm_config` (missing unless written) and an empty
/// home, so the developer's own logins play no part.
fn tend_with(helm_config: &Path) -> assert_cmd::Command {
    let mut cmd = tend();
    let home = helm_config.parent().unwrap().join("home");
    cmd.env("HELM_REGISTRY_CONFIG", helm_config)
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME");
    cmd
}

fn render(dir: &Path, cache: &Path, helm_config: &Path, extra: &[&str]) -> (i32, String, String) {
    run(tend_with(helm_config)
        .arg("render")
        .arg("--repo")
        .arg(dir)
        .arg("--cache-dir")
        .arg(cache)
        .args(extra))
}

fn version_of(stdout: &str) -> String {
    let cm = parse_stream(stdout)
        .into_iter()
        .find(|o| o["kind"] == "ConfigMap")
        .expect("the chart's ConfigMap");
    cm["data"]["version"].as_str().unwrap().to_string()
}

#[test]
fn an_oci_chart_resolves_its_range_to_the_highest_tag_and_is_cached_by_digest() {
    let tags = [
        "1.0.0",
        "2.0.0",
        "1.2.1_build.5",
        "1.3.0-rc.1",
        "1.2.0",
        "latest",
    ];
    let (base, asked) = registry(&tags, RegistryOptions::default());
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let config = tmp.path().join("helm.json");
    let dir = site(&[("apps/store.yaml", &release(&oci(&base), "^1.0.0"))]);
    let (code, stdout, stderr) = render(dir.path(), &cache, &config, &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(
        version_of(&stdout),
        "1.2.1+build.5",
        "the highest 1.x, its tag 1.2.1_build.5, not the rc"
    );
    assert!(
        stderr.contains(&format!(
            "chart shop 1.2.1+build.5 (sha256:{})",
            sha(&chart("1.2.1+build.5"))
        )),
        "{stderr}"
    );
    let blobs = || {
        asked
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.contains("/blobs/"))
            .count()
    };
    assert_eq!(blobs(), 1);
    let tag_pages = asked
        .lock()
        .unwrap()
        .iter()
        .filter(|p| p.contains("/tags/list"))
        .count();
    assert_eq!(
        tag_pages,
        3,
        "every Link page read: {:?}",
        asked.lock().unwrap()
    );

    // Cached by digest: the next run reads tags and manifest, not the blob.
    let (code, stdout, stderr) = render(dir.path(), &cache, &config, &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(blobs(), 1, "{:?}", asked.lock().unwrap());

    // An exact version with build metadata is the `_` tag; an exact tag is taken as is.
    for (version, expected) in [("1.2.1+build.5", "1.2.1+build.5"), ("1.0.0", "1.0.0")] {
        write_site(
            dir.path(),
            &[("apps/store.yaml", &release(&oci(&base), version))],
        );
        let (code, stdout, stderr) = render(dir.path(), &cache, &config, &[]);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        assert_eq!(version_of(&stdout), expected);
    }
    write_site(
        dir.path(),
        &[("apps/store.yaml", &release(&oci(&base), ">=3.0.0"))],
    );
    let (code, _, stderr) = render(dir.path(), &cache, &config, &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("apps/store.yaml:7"), "{stderr}");
    assert!(
        stderr.contains("no version of oci://127.0.0.1:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("2.0.0, 1.3.0-rc.1, 1.2.1+build.5"),
        "{stderr}"
    );
    write_site(
        dir.path(),
        &[(
            "apps/store.yaml",
            &release(&oci(&base), "1.0.0").replace("name: shop", "name: cart"),
        )],
    );
    let (code, _, stderr) = render(dir.path(), &cache, &config, &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("has no chart repository charts/cart (HTTP 404"),
        "{stderr}"
    );
}

#[test]
fn a_wrong_oci_digest_is_refused_and_nothing_is_written_or_cached() {
    let opts = RegistryOptions {
        bad_digest: vec!["1.2.0".into()],
        ..RegistryOptions::default()
    };
    let (base, _) = registry(&["1.0.0", "1.2.0"], opts);
    let tmp = tempfile::tempdir().unwrap();
    let cluster = cluster_with_crds();
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("shop")),
        ("apps/store.yaml", &release(&oci(&base), "~1.2")),
    ]);
    let (code, stdout, stderr) = run(tend_with(&tmp.path().join("helm.json"))
        .args(["apply", "--repo"])
        .arg(dir.path())
        .arg("--cache-dir")
        .arg(tmp.path().join("cache"))
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("apps/store.yaml:7"), "{stderr}");
    assert!(stderr.contains("not the sha256:"), "{stderr}");
    assert!(stderr.contains("its manifest gives"), "{stderr}");
    assert!(object_writes(&cluster).is_empty(), "nothing written");
    assert!(
        !tmp.path().join("cache/helm").exists()
            || std::fs::read_dir(tmp.path().join("cache/helm"))
                .unwrap()
                .count()
                == 0
    );
}

#[test]
fn a_private_oci_registry_takes_its_login_from_a_file_or_helms_config_never_printing_it() {
    let login = format!("ann:{CANARY}");
    let opts = RegistryOptions {
        login: Some(login.clone()),
        ..RegistryOptions::default()
    };
    let (base, _) = registry(&["1.0.0", "1.1.0"], opts);
    let host = base.trim_start_matches("http://").to_string();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let config = tmp.path().join("helm.json");
    let dir = site(&[("apps/store.yaml", &release(&oci(&base), "^1"))]);
    let no_canary = |out: &str, err: &str| {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&login);
        for text in [out, err] {
            assert!(!text.contains(CANARY) && !text.contains(&b64), "{text}");
        }
    };

    // No login: the registry and where tend looked are named.
    let (code, out, err) = render(dir.path(), &cache, &config, &["-vvv"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("apps/store.yaml:7"), "{err}");
    assert!(
        err.contains(&format!("{host} requires credentials (HTTP 401")),
        "{err}"
    );
    assert!(
        err.contains(&format!("{} (not found)", config.display())),
        "{err}"
    );
    assert!(err.contains("--helm-credentials"), "{err}");

    // A wrong login: refused, its source named, nothing of it printed.
    let wrong = tmp.path().join("wrong.json");
    std::fs::write(&wrong, docker_config(&host, &format!("ann:{CANARY}-old"))).unwrap();
    let (code, out, err) = render(
        dir.path(),
        &cache,
        &config,
        &["-vvv", "--helm-credentials", wrong.to_str().unwrap()],
    );
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains(&format!(
            "{host} refused the credentials for it from {}",
            wrong.display()
        )),
        "{err}"
    );
    no_canary(&out, &err);

    // The right one, from Helm's registry config (what `helm registry login` writes).
    std::fs::write(&config, docker_config(&host, &login)).unwrap();
    let (code, out, err) = render(dir.path(), &cache, &config, &["-vvv"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(version_of(&out), "1.1.0");
    no_canary(&out, &err);

    // From TEND_HELM_CREDENTIALS, in the username/password form, over a wrong Helm config.
    std::fs::write(&config, docker_config(&host, "ann:nope")).unwrap();
    let right = tmp.path().join("right.json");
    let form = format!("{{\"auths\": {{\"http://{host}\": {{\"username\": \"ann\", \"password\": \"{CANARY}\"}}}}}}");
    std::fs::write(&right, form).unwrap();
    let (code, out, err) = run(tend_with(&config)
        .env("TEND_HELM_CREDENTIALS", &right)
        .args(["render", "-vvv", "--repo"])
        .arg(dir.path())
        .arg("--cache-dir")
        .arg(tmp.path().join("cache2")));
    assert_eq!(code, 0, "{out}\n{err}");
    no_canary(&out, &err);

    // A credentials file that is not one is an error naming it, before any work.
    std::fs::write(
        &right,
        format!("{{\"auths\": {{\"{host}\": {{\"auth\": \"{CANARY}\"}}}}}}"),
    )
    .unwrap();
    let (code, out, err) = render(
        dir.path(),
        &cache,
        &config,
        &["--helm-credentials", right.to_str().unwrap()],
    );
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("--helm-credentials") && err.contains("right.json"),
        "{err}"
    );
    no_canary(&out, &err);

    // Credentials in the URL stay refused (the HelmChart is stored in the cluster).
    write_site(
        dir.path(),
        &[(
            "apps/store.yaml",
            &release(
                &oci(&base).replace("oci://", &format!("oci://ann:{CANARY}@")),
                "^1",
            ),
        )],
    );
    let (code, out, err) = render(dir.path(), &cache, &config, &[]);
    assert_eq!(code, 2);
    assert!(err.contains("credentials in the URL"), "{err}");
    no_canary(&out, &err);
}

#[test]
fn a_chart_repository_with_basic_auth_takes_its_login_from_a_file() {
    use base64::Engine;
    let archive = chart("1.0.0");
    let index = format!(
        "apiVersion: v1\nentries:\n  shop:\n    - name: shop\n      version: 1.0.0\n      digest: {}\n      urls:\n        - shop-1.0.0.tgz\n",
        sha(&archive)
    );
    let wanted = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("bob:{CANARY}"))
    );
    let (base, _) = serve(move |req| {
        if req.header("authorization") != Some(wanted.as_str()) {
            return (
                401,
                vec![("WWW-Authenticate".into(), "Basic realm=\"charts\"".into())],
                vec![],
            );
        }
        match req.path.as_str() {
            "/stable/index.yaml" => (200, vec![], index.clone().into_bytes()),
            "/stable/shop-1.0.0.tgz" => (200, vec![], archive.clone()),
            _ => super::registry::not_found(),
        }
    });
    let host = base.trim_start_matches("http://").to_string();
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("helm.json");
    let dir = site(&[(
        "apps/store.yaml",
        &release(&format!("{base}/stable"), "1.0.0"),
    )]);
    let (code, _, err) = render(dir.path(), &tmp.path().join("c"), &config, &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("{host} requires credentials (HTTP 401")),
        "{err}"
    );
    let file = tmp.path().join("logins.json");
    std::fs::write(&file, docker_config(&host, &format!("bob:{CANARY}"))).unwrap();
    let (code, out, err) = render(
        dir.path(),
        &tmp.path().join("c"),
        &config,
        &["-vvv", "--helm-credentials", file.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(version_of(&out), "1.0.0");
    assert!(!out.contains(CANARY) && !err.contains(CANARY));
}

#[test]
fn a_login_comes_from_a_helm_credentials_secret_in_the_cluster() {
    let login = format!("ann:{CANARY}");
    let opts = RegistryOptions {
        login: Some(login.clone()),
        ..RegistryOptions::default()
    };
    let (base, _) = registry(&["1.0.0"], opts);
    let host = base.trim_start_matches("http://").to_string();
    let cluster = cluster_with_crds();
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    cluster
        .seed(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tend-system"}}))
        .unwrap();
    cluster
        .seed(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": "chart-logins", "namespace": "tend-system"},
            "data": {".dockerconfigjson": b64(&docker_config(&host, &login))},
        }))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("shop")),
        ("apps/store.yaml", &release(&oci(&base), "1.0.0")),
    ]);
    let on = |args: &[&str]| {
        run(tend_with(&tmp.path().join("helm.json"))
            .args(args)
            .arg("--repo")
            .arg(dir.path())
            .arg("--cache-dir")
            .arg(tmp.path().join("cache"))
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path()))
    };
    let (code, out, err) = on(&["diff", "--helm-credentials-secret", "tend-system/missing"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("--helm-credentials-secret tend-system/missing: no such Secret"),
        "{err}"
    );
    let (code, out, err) = on(&[
        "apply",
        "-vvv",
        "--helm-credentials-secret",
        "tend-system/chart-logins",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains(CANARY) && !err.contains(CANARY), "{err}");
    assert!(!err.contains(&b64(&login)), "{err}");
    assert!(get(&cluster, "", "configmaps", "shop", "store-shop").is_some());
    // Without it, the same apply says where tend looked.
    let (code, _, err) = on(&["apply"]);
    assert_eq!(code, 2);
    assert!(err.contains("requires credentials"), "{err}");
}

#[test]
fn a_chart_with_spec_verify_installs_only_when_a_trusted_cosign_key_signed_it() {
    let (alice, mallory) = ([7u8; 32], [9u8; 32]);
    let signed = |tag: &str, key: [u8; 32]| CosignSigned {
        tag: tag.into(),
        key,
        names_other_digest: false,
        keyless: false,
    };
    let opts = RegistryOptions {
        cosign: vec![
            signed("1.0.0", alice),
            signed("1.1.0", mallory),
            CosignSigned {
                names_other_digest: true,
                ..signed("1.2.0", alice)
            },
            CosignSigned {
                keyless: true,
                ..signed("1.3.0", alice)
            },
        ],
        ..RegistryOptions::default()
    };
    let (base, _) = registry(&["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0"], opts);
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("cosign.pub");
    std::fs::write(&keys, cosign_public_key(&alice)).unwrap();
    let verified = |version: &str| {
        format!(
            "{}  verify:\n    provider: cosign\n",
            release(&oci(&base), version)
        )
    };
    let render_version = |version: &str| {
        let dir = site(&[("store.yaml", &verified(version))]);
        render(
            dir.path(),
            &tmp.path().join("cache"),
            &tmp.path().join("helm.json"),
            &["--trusted-keys", keys.to_str().unwrap(), "-v"],
        )
    };
    let (code, out, err) = render_version("1.0.0");
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(version_of(&out), "1.0.0");
    assert!(err.contains("signature verified: signed by"), "{err}");

    for (version, reason) in [
        (
            "1.1.0",
            "it is signed by a cosign key, which is not a trusted key",
        ),
        ("1.2.0", "its payload names another digest"),
        ("1.3.0", "keyless"),
        ("1.4.0", "it is not signed"),
    ] {
        let (code, out, err) = render_version(version);
        assert_eq!((code, out.as_str()), (2, ""), "{version}: {err}");
        assert!(err.contains("store.yaml:7"), "{version}: {err}");
        assert!(err.contains(&format!("shop:{version}")), "{version}: {err}");
        assert!(err.contains(reason), "{version}: {err}");
    }

    // Without keys, and with what tend cannot check: clear errors before any fetch.
    let dir = site(&[("store.yaml", &verified("1.0.0"))]);
    let (code, _, err) = render(
        dir.path(),
        &tmp.path().join("cache"),
        &tmp.path().join("helm.json"),
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no cosign public key is trusted"), "{err}");
    let keyless = format!(
        "{}  verify:\n    provider: cosign\n    matchOIDCIdentity:\n      - issuer: https://token.actions.githubusercontent.com\n        subject: x\n",
        release(&oci(&base), "1.0.0")
    );
    let dir = site(&[("store.yaml", &keyless)]);
    let (code, _, err) = render(
        dir.path(),
        &tmp.path().join("cache"),
        &tmp.path().join("helm.json"),
        &["--trusted-keys", keys.to_str().unwrap()],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("keyless verification (Fulcio certificates, Rekor) needs the network"),
        "{err}"
    );
}

/// Flux's `OCIRepository.spec.verify` (cosign with a key pair): the chart a HelmRelease's
/// `chartRef` names installs only when a trusted cosign key signed it; keyless is refused.
#[test]
fn a_flux_oci_repository_with_spec_verify_is_checked_with_the_runs_cosign_keys() {
    let (alice, mallory) = ([7u8; 32], [9u8; 32]);
    let signed = |tag: &str, key: [u8; 32]| CosignSigned {
        tag: tag.into(),
        key,
        names_other_digest: false,
        keyless: false,
    };
    let opts = RegistryOptions {
        cosign: vec![signed("1.0.0", alice), signed("1.1.0", mallory)],
        ..RegistryOptions::default()
    };
    let (base, _) = registry(&["1.0.0", "1.1.0"], opts);
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("cosign.pub");
    std::fs::write(&keys, cosign_public_key(&alice)).unwrap();
    let site_of = |tag: &str, verify: &str| {
        let units = format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: shop\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: {}/shop\n  ref:\n    tag: \"{tag}\"\n{verify}---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: store\n  namespace: flux-system\nspec:\n  interval: 10m\n  targetNamespace: shop\n  chartRef:\n    kind: OCIRepository\n    name: shop\n",
            oci(&base)
        );
        site(&[("release.yaml", &units)])
    };
    let with_key = "  verify:\n    provider: cosign\n    secretRef:\n      name: cosign-pub\n";
    let render_site = |dir: &Path| {
        render(
            dir,
            &tmp.path().join("cache"),
            &tmp.path().join("helm.json"),
            &["--trusted-keys", keys.to_str().unwrap(), "-v"],
        )
    };
    let dir = site_of("1.0.0", with_key);
    let (code, out, err) = render_site(dir.path());
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(version_of(&out), "1.0.0");
    assert!(err.contains("signature verified"), "{err}");

    let dir = site_of("1.1.0", with_key);
    let (code, out, err) = render_site(dir.path());
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("which is not a trusted key"), "{err}");

    // No secretRef: Flux's keyless verification, which needs the network.
    let dir = site_of("1.0.0", "  verify:\n    provider: cosign\n");
    let (code, _, err) = render_site(dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("release.yaml:"), "{err}");
    assert!(err.contains("keyless verification"), "{err}");

    // A client certificate or private CA would change the pull: refused at its line.
    let dir = site_of("1.0.0", "  certSecretRef:\n    name: ca\n");
    let (code, _, err) = render_site(dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("release.yaml:11: spec.certSecretRef"), "{err}");
}
