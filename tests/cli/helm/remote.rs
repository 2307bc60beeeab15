//! Charts from an HTTP chart repository served by the test itself: `index.yaml` read, the
//! highest version in the range chosen, the archive's digest checked, the archive cached by
//! digest.

use super::subcharts::tgz;
use crate::common::*;
use crate::kinds::cluster_with_crds;
use sha2::Digest;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

/// Serves `files` (path → body) on 127.0.0.1 until the test ends; records each path asked.
pub fn serve(files: BTreeMap<String, Vec<u8>>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head);
            let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            log.lock().unwrap().push(target.clone());
            // A proxy is asked for the absolute URL: serve its path, as if forwarded.
            let path = match target.strip_prefix("http://") {
                Some(rest) => rest[rest.find('/').unwrap_or(rest.len())..].to_string(),
                None => target,
            };
            let response = match files.get(&path) {
                Some(body) => {
                    let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).into_bytes();
                    r.extend_from_slice(body);
                    r
                }
                None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found".to_vec(),
            };
            let _ = stream.write_all(&response);
        }
    });
    (base, asked)
}

fn chart(version: &str) -> Vec<u8> {
    tgz(&[
        ("shop/Chart.yaml", &format!("apiVersion: v2\nname: shop\nversion: {version}\n")),
        ("shop/values.yaml", "greeting: hello\n"),
        (
            "shop/templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-shop\ndata:\n  version: {{ .Chart.Version | quote }}\n  greeting: {{ .Values.greeting }}\n",
        ),
    ])
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A repository under `/stable` with shop 1.0.0, 1.2.0 (archive in a subdirectory), 1.3.0-rc.1
/// and 2.0.0; `bad_digest` gives 1.2.0 a wrong digest.
fn repository(bad_digest: bool) -> (String, Arc<Mutex<Vec<String>>>) {
    let mut files = BTreeMap::new();
    let mut entries = String::new();
    for (version, url) in [
        ("2.0.0", "shop-2.0.0.tgz"),
        ("1.3.0-rc.1", "shop-1.3.0-rc.1.tgz"),
        ("1.2.0", "archives/shop-1.2.0.tgz"),
        ("1.0.0", "shop-1.0.0.tgz"),
    ] {
        let archive = chart(version);
        let digest = if bad_digest && version == "1.2.0" {
            sha(b"something else")
        } else {
            sha(&archive)
        };
        entries.push_str(&format!(
            "    - name: shop\n      version: {version}\n      digest: {digest}\n      urls:\n        - {url}\n"
        ));
        files.insert(format!("/stable/{url}"), archive);
    }
    files.insert(
        "/stable/index.yaml".into(),
        format!("apiVersion: v1\nentries:\n  shop:\n{entries}").into_bytes(),
    );
    serve(files)
}

fn release(base: &str, version: &str) -> String {
    format!(
        "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: store\n  namespace: shop\nspec:\n  repository: {base}/stable\n  name: shop\n  version: \"{version}\"\n  values:\n    greeting: hi\n"
    )
}

#[test]
fn a_chart_from_a_repository_resolves_its_range_checks_its_digest_and_is_cached() {
    let (base, asked) = repository(false);
    let cache = tempfile::tempdir().unwrap();
    let cluster = cluster_with_crds();
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("shop")),
        ("apps/store.yaml", &release(&base, "^1.0.0")),
    ]);
    let render = || {
        run(tend()
            .arg("render")
            .arg("--repo")
            .arg(dir.path())
            .arg("--cache-dir")
            .arg(cache.path()))
    };
    let (code, stdout, stderr) = render();
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let cm = parse_stream(&stdout)
        .into_iter()
        .find(|o| o["kind"] == "ConfigMap")
        .expect("the chart's ConfigMap");
    assert_eq!(
        cm["data"]["version"], "1.2.0",
        "the highest 1.x release, not the rc"
    );
    assert_eq!(cm["data"]["greeting"], "hi");
    assert!(
        stderr.contains(&format!(
            "chart shop 1.2.0 (sha256:{})",
            sha(&chart("1.2.0"))
        )),
        "the resolved version is reported: {stderr}"
    );
    let archives = || {
        asked
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.ends_with(".tgz"))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(archives(), ["/stable/archives/shop-1.2.0.tgz"]);

    // Cached by digest: the next run reads the index, not the archive.
    let (code, stdout, stderr) = render();
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(archives().len(), 1, "{:?}", asked.lock().unwrap());

    let (code, stdout, stderr) = run(tend()
        .args(["apply", "--repo"])
        .arg(dir.path())
        .arg("--cache-dir")
        .arg(cache.path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(get(&cluster, "", "configmaps", "shop", "store-shop").is_some());
}

#[test]
fn a_wrong_digest_a_missing_version_or_chart_is_refused_at_the_helm_chart() {
    let (base, _) = repository(true);
    let cache = tempfile::tempdir().unwrap();
    let cluster = cluster_with_crds();
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("shop")),
        ("apps/store.yaml", &release(&base, "~1.2")),
    ]);
    let on = |dir: &std::path::Path| {
        run(tend()
            .args(["apply", "--repo"])
            .arg(dir)
            .arg("--cache-dir")
            .arg(cache.path())
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig_path()))
    };
    let (code, stdout, stderr) = on(dir.path());
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("apps/store.yaml:7"), "{stderr}");
    assert!(stderr.contains("not the sha256:"), "{stderr}");
    assert!(object_writes(&cluster).is_empty(), "nothing written");
    assert!(
        !cache.path().join("helm").exists()
            || std::fs::read_dir(cache.path().join("helm"))
                .unwrap()
                .count()
                == 0,
        "a refused archive is not cached"
    );

    let dir = site(&[("apps/store.yaml", &release(&base, ">=3.0.0"))]);
    let (code, _, stderr) = on(dir.path());
    assert_eq!(code, 2);
    assert!(stderr.contains("no version of shop"), "{stderr}");
    assert!(
        stderr.contains("2.0.0, 1.3.0-rc.1, 1.2.0, 1.0.0"),
        "{stderr}"
    );

    let dir = site(&[(
        "apps/store.yaml",
        &release(&base, "1.0.0").replace("name: shop", "name: cart"),
    )]);
    let (code, _, stderr) = on(dir.path());
    assert_eq!(code, 2);
    assert!(stderr.contains("has no chart named \"cart\""), "{stderr}");

    let dir = site(&[(
        "apps/store.yaml",
        &release(&format!("{base}/nowhere"), "1.0.0"),
    )]);
    let (code, _, stderr) = on(dir.path());
    assert_eq!(code, 2);
    assert!(stderr.contains("HTTP 404"), "{stderr}");

    let secret = release("https://user:t0ken-canary@charts.example.com", "1.0.0");
    let dir = site(&[("apps/store.yaml", &secret)]);
    let (code, _, stderr) = on(dir.path());
    assert_eq!(code, 2);
    assert!(stderr.contains("credentials in the URL"), "{stderr}");
    assert!(!stderr.contains("t0ken-canary"), "{stderr}");

    assert!(object_writes(&cluster).is_empty(), "nothing written");
}

#[test]
fn charts_are_fetched_through_the_proxy_the_environment_names_as_helm_does() {
    let (proxy, asked) = repository(false);
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("shop")),
        (
            "apps/store.yaml",
            &release("http://charts.invalid", "^1.0.0"),
        ),
    ]);
    let render = |vars: &[(&str, &str)]| {
        let cache = tempfile::tempdir().unwrap();
        let mut cmd = tend();
        cmd.args(["render", "--repo"])
            .arg(dir.path())
            .arg("--cache-dir")
            .arg(cache.path());
        for name in [
            "HTTP_PROXY",
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "NO_PROXY",
            "no_proxy",
        ] {
            cmd.env_remove(name);
        }
        cmd.envs(vars.iter().copied());
        run(&mut cmd)
    };
    // The host exists only behind the proxy: tend asks the proxy for the absolute URL.
    let (code, out, err) = render(&[("HTTP_PROXY", &proxy)]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("version: 1.2.0"), "{out}");
    let asked_now = asked.lock().unwrap().clone();
    assert!(
        asked_now.contains(&"http://charts.invalid/stable/index.yaml".to_string())
            && asked_now
                .contains(&"http://charts.invalid/stable/archives/shop-1.2.0.tgz".to_string()),
        "{asked_now:?}"
    );
    // NO_PROXY names the host: tend goes direct, and the host does not resolve.
    let (code, _, err) = render(&[("HTTP_PROXY", &proxy), ("NO_PROXY", "localhost,.invalid")]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot connect to http://charts.invalid/stable/index.yaml"),
        "{err}"
    );
    // An https repository is reached through a CONNECT tunnel; this proxy refuses it.
    let https = site(&[
        ("namespaces.yaml", &ns_yaml("shop")),
        (
            "apps/store.yaml",
            &release("https://charts.invalid", "^1.0.0"),
        ),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let (code, _, err) = run(tend()
        .args(["render", "--repo"])
        .arg(https.path())
        .arg("--cache-dir")
        .arg(cache.path())
        .env(
            "HTTPS_PROXY",
            proxy.replace("http://", "http://user:hunter2@"),
        ));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("the proxy {proxy} refused a tunnel to https://charts.invalid/stable/index.yaml: HTTP/1.1 404")),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
    assert!(asked
        .lock()
        .unwrap()
        .contains(&"charts.invalid:443".to_string()));
}
