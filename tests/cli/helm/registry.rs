//! Chart servers for the tests: a small HTTP server that answers with a handler, an OCI
//! registry on it (tags with `Link` pages, manifests, blobs, optionally a Bearer token flow
//! that requires a login), and a chart archive to serve.

use super::subcharts::tgz;
use sha2::Digest;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

/// A request as the handler sees it.
pub struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A response: status, extra headers, body.
pub type Response = (u16, Vec<(String, String)>, Vec<u8>);

/// Every request's path, in order.
pub type Log = Arc<Mutex<Vec<String>>>;

/// Serves `handler` on 127.0.0.1 until the test ends: `(http://127.0.0.1:port, log)`.
pub fn serve(handler: impl Fn(&Request) -> Response + Send + 'static) -> (String, Log) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let asked: Log = Arc::default();
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
            let mut lines = head.split("\r\n");
            let path = lines
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .unwrap_or("/")
                .to_string();
            let headers = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect();
            log.lock().unwrap().push(path.clone());
            let (status, extra, body) = handler(&Request { path, headers });
            let mut response = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (k, v) in extra {
                response.push_str(&format!("{k}: {v}\r\n"));
            }
            response.push_str("\r\n");
            let mut response = response.into_bytes();
            response.extend_from_slice(&body);
            let _ = stream.write_all(&response);
        }
    });
    (base, asked)
}

pub fn not_found() -> Response {
    (404, vec![], b"not found".to_vec())
}

pub fn sha(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The chart `shop` of `version`: one ConfigMap saying its version.
pub fn chart(version: &str) -> Vec<u8> {
    tgz(&[
        ("shop/Chart.yaml", &format!("apiVersion: v2\nname: shop\nversion: {version}\n")),
        ("shop/values.yaml", "greeting: hello\n"),
        (
            "shop/templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-shop\ndata:\n  version: {{ .Chart.Version | quote }}\n  greeting: {{ .Values.greeting }}\n",
        ),
    ])
}

/// How the test registry behaves.
#[derive(Default, Clone)]
pub struct RegistryOptions {
    /// `user:password` the token service requires (else anonymous pulls work).
    pub login: Option<String>,
    /// Tags whose manifest gives a digest that is not their archive's.
    pub bad_digest: Vec<String>,
    /// cosign signatures stored beside tags (`sha256-<digest>.sig`), as `cosign sign --key`
    /// pushes them.
    pub cosign: Vec<CosignSigned>,
    /// Each tag a Flux artifact of manifests (`flux push artifact`: a ConfigMap saying the
    /// tag) instead of a chart.
    pub artifact: bool,
}

/// A tag signed with a cosign key.
#[derive(Clone)]
pub struct CosignSigned {
    pub tag: String,
    /// The signing key's secret scalar (the key pair `cosign generate-key-pair` makes).
    pub key: [u8; 32],
    /// The payload names another manifest's digest (a signature copied from elsewhere).
    pub names_other_digest: bool,
    /// A keyless signature: a certificate annotation instead of a trusted key's signature.
    pub keyless: bool,
}

/// `cosign.pub` of a key made by [`CosignSigned::key`].
pub fn cosign_public_key(key: &[u8; 32]) -> String {
    use p256::pkcs8::EncodePublicKey;
    let signing = p256::ecdsa::SigningKey::from_slice(key).unwrap();
    signing
        .verifying_key()
        .to_public_key_pem(p256::pkcs8::LineEnding::LF)
        .unwrap()
}

/// The `.sig` manifest and payload blob of `signed`, for the manifest `manifest`.
fn cosign_signature(
    signed: &CosignSigned,
    host_repo: &str,
    manifest: &[u8],
) -> (String, Vec<u8>, Vec<u8>) {
    use base64::Engine;
    use p256::ecdsa::signature::Signer;
    let digest = format!("sha256:{}", sha(manifest));
    let named = if signed.names_other_digest {
        format!("sha256:{}", sha(b"another artifact"))
    } else {
        digest.clone()
    };
    let payload = serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": {"docker-reference": host_repo},
            "image": {"docker-manifest-digest": named},
            "type": "cosign container image signature"
        },
        "optional": null
    }))
    .unwrap();
    let key = p256::ecdsa::SigningKey::from_slice(&signed.key).unwrap();
    let signature: p256::ecdsa::Signature = key.sign(&payload);
    let encoded = base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes());
    let mut annotations = serde_json::json!({"dev.cosignproject.cosign/signature": encoded});
    if signed.keyless {
        annotations = serde_json::json!({
            "dev.cosignproject.cosign/signature": "",
            "dev.sigstore.cosign/certificate": "-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n",
        });
    }
    let sig_manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": format!("sha256:{}", sha(b"{}")), "size": 2},
        "layers": [{
            "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
            "digest": format!("sha256:{}", sha(&payload)),
            "size": payload.len(),
            "annotations": annotations,
        }],
    });
    let tag = format!("{}.sig", digest.replace(':', "-"));
    (tag, serde_json::to_vec(&sig_manifest).unwrap(), payload)
}

/// An OCI registry holding `charts/shop` with `tags` (each a chart of the tag's version,
/// `_` read as `+`), two tags a page.
pub fn registry(tags: &[&str], opts: RegistryOptions) -> (String, Log) {
    let mut manifests = BTreeMap::new();
    let mut blobs = BTreeMap::new();
    let (config_type, layer_type) = match opts.artifact {
        true => (
            "application/vnd.cncf.flux.config.v1+json",
            "application/vnd.cncf.flux.content.v1.tar+gzip",
        ),
        false => (
            "application/vnd.cncf.helm.config.v1+json",
            "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
        ),
    };
    for tag in tags {
        let archive = match opts.artifact {
            true => tgz(&[(
                "./config.yaml",
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  version: \"{tag}\"\n"),
            )]),
            false => chart(&tag.replace('_', "+")),
        };
        let digest = if opts.bad_digest.iter().any(|t| t == tag) {
            sha(b"something else")
        } else {
            sha(&archive)
        };
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": config_type, "digest": format!("sha256:{}", sha(b"{}")), "size": 2},
            "layers": [{"mediaType": layer_type, "digest": format!("sha256:{digest}"), "size": archive.len()}],
        });
        let manifest = serde_json::to_vec(&manifest).unwrap();
        for signed in opts.cosign.iter().filter(|s| s.tag == *tag) {
            let (sig_tag, sig_manifest, payload) =
                cosign_signature(signed, "charts/shop", &manifest);
            manifests.insert(sig_tag, sig_manifest);
            blobs.insert(format!("sha256:{}", sha(&payload)), payload);
        }
        manifests.insert(tag.to_string(), manifest);
        blobs.insert(format!("sha256:{digest}"), archive);
    }
    let tags: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
    let base = Arc::new(Mutex::new(String::new()));
    let base_in = base.clone();
    const TOKEN: &str = "registry-token-7";
    let (url, log) = serve(move |req| {
        use base64::Engine;
        if req.path.starts_with("/token?") {
            let wanted = opts.login.as_deref().map(|l| {
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(l)
                )
            });
            return match (wanted, req.header("authorization")) {
                (Some(w), Some(got)) if w == got => (
                    200,
                    vec![],
                    format!("{{\"token\": \"{TOKEN}\"}}").into_bytes(),
                ),
                _ => (401, vec![], b"{\"errors\": []}".to_vec()),
            };
        }
        if opts.login.is_some() && req.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
            let realm = format!("{}/token", base_in.lock().unwrap());
            return (
                401,
                vec![(
                    "WWW-Authenticate".into(),
                    format!("Bearer realm=\"{realm}\",service=\"test-registry\",scope=\"repository:charts/shop:pull\""),
                )],
                b"{\"errors\": [{\"code\": \"UNAUTHORIZED\"}]}".to_vec(),
            );
        }
        let Some(rest) = req.path.strip_prefix("/v2/charts/shop/") else {
            return not_found();
        };
        if let Some(query) = rest.strip_prefix("tags/list") {
            let last = query
                .split(['?', '&'])
                .find_map(|kv| kv.strip_prefix("last="))
                .unwrap_or("");
            let start = tags.iter().position(|t| t == last).map_or(0, |i| i + 1);
            let page: Vec<&String> = tags.iter().skip(start).take(2).collect();
            let mut headers = vec![];
            if start + 2 < tags.len() {
                if let Some(last) = page.last() {
                    headers.push((
                        "Link".into(),
                        format!("</v2/charts/shop/tags/list?last={last}&n=2>; rel=\"next\""),
                    ));
                }
            }
            let body = serde_json::json!({"name": "charts/shop", "tags": page});
            return (200, headers, serde_json::to_vec(&body).unwrap());
        }
        if let Some(tag) = rest.strip_prefix("manifests/") {
            if req.header("accept") != Some("application/vnd.oci.image.manifest.v1+json") {
                return (406, vec![], b"wrong Accept".to_vec());
            }
            return match manifests.get(tag) {
                Some(m) => (200, vec![], m.clone()),
                None => not_found(),
            };
        }
        if let Some(digest) = rest.strip_prefix("blobs/") {
            return match blobs.get(digest) {
                Some(b) => (200, vec![], b.clone()),
                None => not_found(),
            };
        }
        not_found()
    });
    *base.lock().unwrap() = url.clone();
    (url, log)
}

/// A docker config JSON with `login` (`user:password`) for `host`, in the `auth` form.
pub fn docker_config(host: &str, login: &str) -> String {
    use base64::Engine;
    let auth = base64::engine::general_purpose::STANDARD.encode(login);
    format!("{{\"auths\": {{\"{host}\": {{\"auth\": \"{auth}\"}}}}}}")
}
