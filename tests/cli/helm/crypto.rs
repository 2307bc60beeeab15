//! Sprig's crypto functions in a chart (README "HelmChart"): a webhook's CA and certificate
//! from `genCA`/`genSignedCert` render, and a cluster keeps getting the same ones, since
//! their keys come from its seed (and their NotBefore from the render's `now`, which must
//! stay put between runs for this to hold).

use super::{chart_site, DEPLOYMENT, RELEASE};
use crate::common::*;
use crate::kinds::cluster_with_crds;
use base64::Engine as _;
use tend_testserver::TestCluster;

const TLS_SECRET: &str = r#"{{- $ca := genCA "shop-ca" 365 }}
{{- $cert := genSignedCert "shop.shop.svc" (list "10.0.0.1") (list "shop.shop.svc" "shop") 365 $ca }}
apiVersion: v1
kind: Secret
metadata:
  name: shop-tls
type: kubernetes.io/tls
data:
  ca.crt: {{ $ca.Cert | b64enc }}
  tls.crt: {{ $cert.Cert | b64enc }}
  tls.key: {{ $cert.Key | b64enc }}
"#;

fn decoded(data: &serde_json::Value, key: &str) -> String {
    let text = data[key].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn generated_certificates_render_and_stay_the_same_in_a_cluster() {
    let dir = chart_site(RELEASE, DEPLOYMENT);
    std::fs::write(
        dir.path().join("charts/shop/templates/tls.yaml"),
        TLS_SECRET,
    )
    .unwrap();

    let (code, stdout, stderr) = run(tend()
        .arg("render")
        .arg("--show-secrets")
        .arg("--repo")
        .arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let secret = parse_stream(&stdout)
        .into_iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == "shop-tls")
        .expect("the Secret");
    assert!(decoded(&secret["data"], "ca.crt").starts_with("-----BEGIN CERTIFICATE-----\n"));
    assert!(decoded(&secret["data"], "tls.crt").starts_with("-----BEGIN CERTIFICATE-----\n"));
    assert!(decoded(&secret["data"], "tls.key").starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    assert!(stderr.contains("use random functions"), "{stderr}");

    // A git commit: Helm's `now` (the certificates' validity) is the commit's time, the
    // same on every run.
    let repo = git2::Repository::init(dir.path()).unwrap();
    commit_all(&repo, "charts");
    let cluster = cluster_with_crds();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let tls_of = |cluster: &TestCluster| {
        get(cluster, "", "secrets", "shop", "shop-tls").expect("applied")["data"].clone()
    };
    let first = tls_of(&cluster);
    for _ in 0..2 {
        let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
        assert_eq!(code, 0, "the same certificates: {stdout}\n{stderr}");
    }
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(tls_of(&cluster), first);
    // Another cluster, another seed: other keys.
    let other = cluster_with_crds();
    let (code, _, stderr) = tend_on(&other, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    assert_ne!(
        decoded(&tls_of(&other), "tls.key"),
        decoded(&first, "tls.key")
    );
}
