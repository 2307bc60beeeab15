//! Charts from OCI registries (`spec.repository: oci://host/path`), as Helm v3 pulls them:
//! the chart is `<host>/<path>/<name>:<tag>`, a tag being a version with `+` written `_`;
//! a range is resolved from the repository's tags (`/v2/<name>/tags/list`, `Link` pages
//! followed), an exact tag taken as is; the manifest's chart layer
//! (`application/vnd.cncf.helm.chart.content.v1.tar+gzip`) is downloaded as a blob, its
//! sha256 checked against its digest and cached by it, as archives of HTTP repositories are.
//! Anonymous first; a 401's `Bearer` challenge is answered with a token from its realm
//! (asked with the host's login, if any), a `Basic` one with the login.

use super::credentials::Credentials;
use super::{archive, http};
use crate::helm::chart::RemoteChart;
use crate::helm::funcs::{semver_compare, semver_order};
use crate::source::verify::cosign::{self, CosignSignature};
use crate::source::verify::TrustedKeys;
use sha2::Digest as _;
use std::path::Path;

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// What Helm before 3.8 pushed; Helm still pulls it.
const LEGACY_CHART_LAYER: &str = "application/tar+gzip";
/// Pages of tags followed at most (a registry's page is 100 tags or more).
const MAX_TAG_PAGES: usize = 100;

/// What a Flux `OCIRepository` names in its repository: a tag, a semver range over the
/// tags, or a manifest digest.
pub enum ArtifactRef<'a> {
    Tag(&'a str),
    Semver(&'a str),
    Digest(&'a str),
}

/// An artifact's files: path inside it, and bytes.
pub type ArtifactFiles = Vec<(String, Vec<u8>)>;

/// A Flux OCI artifact (`flux push artifact`) at `url` (`oci://host[:port]/path`): the files
/// of its manifest's layer of `media_type` (else its first layer, as source-controller
/// takes it), extracted, and its revision as Flux writes it (`<tag>@sha256:<manifest>`).
pub fn fetch_artifact(
    url: &str,
    wanted: ArtifactRef<'_>,
    media_type: Option<&str>,
    cache_dir: &Path,
    credentials: &Credentials,
    verify: Option<&TrustedKeys>,
) -> Result<(ArtifactFiles, String), String> {
    let rest = url.trim_start_matches("oci://").trim_end_matches('/');
    let (host, repo) = rest
        .split_once('/')
        .ok_or_else(|| format!("{url} names no repository; write oci://host/path"))?;
    let mut registry = Registry::new(host, repo.to_string(), credentials);
    let (reference, tag) = match wanted {
        ArtifactRef::Tag(tag) => (tag.to_string(), Some(tag.to_string())),
        ArtifactRef::Semver(range) => {
            let tag = registry.resolve(range)?;
            (tag.clone(), Some(tag))
        }
        ArtifactRef::Digest(digest) => (digest.to_string(), None),
    };
    let manifest = registry.get(
        &format!("/v2/{}/manifests/{reference}", registry.repo),
        Some(MANIFEST),
    )?;
    let manifest_digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&manifest)));
    if tag.is_none() && manifest_digest != reference {
        return Err(format!(
            "the manifest {url}@{reference} has the digest {manifest_digest}: not what was asked"
        ));
    }
    if let Some(keys) = verify {
        let signatures = registry.cosign_signatures(&manifest_digest)?;
        let signer = keys
            .check_cosign(&manifest_digest, &signatures)
            .map_err(|refusal| {
                format!("spec.verify: {url}:{reference} ({manifest_digest}) is refused: {refusal}")
            })?;
        tracing::info!("{url}:{reference}: signature verified: signed by {signer}");
    }
    let manifest: serde_json::Value = serde_json::from_slice(&manifest)
        .map_err(|_| format!("the manifest of {url}:{reference} is not JSON"))?;
    let layers = manifest.get("layers").and_then(|l| l.as_array());
    let layer = layers
        .and_then(|layers| match media_type {
            Some(kind) => layers
                .iter()
                .find(|l| l.get("mediaType").and_then(|m| m.as_str()) == Some(kind)),
            None => layers.first(),
        })
        .ok_or_else(|| match media_type {
            Some(kind) => format!("{url}:{reference} has no layer of media type {kind}"),
            None => format!("{url}:{reference} has no layers"),
        })?;
    let digest = layer
        .get("digest")
        .and_then(|d| d.as_str())
        .and_then(|d| d.strip_prefix("sha256:"))
        .map(str::to_ascii_lowercase)
        .filter(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| format!("the layer of {url}:{reference} has no sha256 digest; tend only unpacks what it can check"))?;
    let what = format!("{url}:{reference}");
    let bytes = archive::cached(cache_dir, &digest, &what, "its manifest gives", || {
        registry.get(
            &format!("/v2/{}/blobs/sha256:{digest}", registry.repo),
            None,
        )
    })?;
    let files = archive::entries(&bytes, u64::MAX, false)
        .map_err(|e| format!("the layer of {what} is not a tar.gz of files: {e}"))?;
    let revision = match tag {
        Some(tag) => format!("{tag}@{manifest_digest}"),
        None => manifest_digest,
    };
    Ok((files, revision))
}

/// The chart `name` of `version` (a tag, a version or a semver range) from the registry
/// repository `repository` (`oci://host[:port][/path]`).
pub fn fetch(
    repository: &str,
    name: &str,
    version: &str,
    cache_dir: &Path,
    credentials: &Credentials,
    verify: Option<&TrustedKeys>,
) -> Result<RemoteChart, String> {
    let rest = repository
        .trim_start_matches("oci://")
        .trim_end_matches('/');
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let repo = if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}/{name}")
    };
    let mut registry = Registry::new(host, repo, credentials);
    let tag = registry.resolve(version)?;
    let chart_version = tag.replace('_', "+");
    let reference = format!("oci://{}/{}:{tag}", registry.host, registry.repo);
    let manifest = registry.get(
        &format!("/v2/{}/manifests/{tag}", registry.repo),
        Some(MANIFEST),
    )?;
    let signed_by = match verify {
        Some(keys) => {
            let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&manifest)));
            let signatures = registry.cosign_signatures(&digest)?;
            let signer = keys.check_cosign(&digest, &signatures).map_err(|refusal| {
                format!("spec.verify: {reference} ({digest}) is refused: {refusal}")
            })?;
            tracing::info!("{reference}: signature verified: signed by {signer}");
            Some(signer.to_string())
        }
        None => None,
    };
    let manifest: serde_json::Value = serde_json::from_slice(&manifest)
        .map_err(|_| format!("the manifest of {reference} is not JSON; is it a Helm chart?"))?;
    let layer = manifest
        .get("layers")
        .and_then(|l| l.as_array())
        .and_then(|layers| {
            let of = |kind: &str| {
                layers
                    .iter()
                    .find(|l| l.get("mediaType").and_then(|m| m.as_str()) == Some(kind))
            };
            of(CHART_LAYER).or_else(|| of(LEGACY_CHART_LAYER))
        })
        .ok_or_else(|| {
            format!("{reference} is not a Helm chart: its manifest has no {CHART_LAYER} layer")
        })?;
    let layer_digest = layer.get("digest").and_then(|d| d.as_str()).unwrap_or("");
    let digest = layer_digest
        .strip_prefix("sha256:")
        .map(str::to_ascii_lowercase)
        .filter(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| {
            format!("the chart layer of {reference} has no sha256 digest; tend only installs archives it can check")
        })?;
    let bytes = archive::cached(cache_dir, &digest, &reference, "its manifest gives", || {
        registry.get(
            &format!("/v2/{}/blobs/sha256:{digest}", registry.repo),
            None,
        )
    })?;
    let mut chart = super::chart_of(&bytes, &reference, name, chart_version, &digest)?;
    chart.signed_by = signed_by;
    Ok(chart)
}

/// `https`, but plain `http` for a registry on this machine (`localhost`, `127.0.0.1`,
/// `[::1]`), as `helm --plain-http` would be needed for: a local test or mirror registry.
fn scheme(host: &str) -> &'static str {
    let name = match host.rsplit_once(':') {
        Some((name, port)) if !port.contains(']') => name,
        _ => host,
    };
    if matches!(name, "localhost" | "127.0.0.1" | "[::1]") {
        "http"
    } else {
        "https"
    }
}

struct Registry<'a> {
    /// `https://host[:port]`.
    base: String,
    host: String,
    /// The chart's repository in the registry: `<path>/<name>`.
    repo: String,
    credentials: &'a Credentials,
    /// The `Authorization` header once a challenge was answered.
    authorization: Option<String>,
    challenged: bool,
}

impl<'c> Registry<'c> {
    fn new(host: &str, repo: String, credentials: &'c Credentials) -> Registry<'c> {
        // Docker Hub's name is not its API's host (containerd's resolver, which Helm's ORAS
        // client uses, maps it the same way).
        let api_host = if host.eq_ignore_ascii_case("docker.io") {
            "registry-1.docker.io"
        } else {
            host
        };
        Registry {
            base: format!("{}://{api_host}", scheme(api_host)),
            host: host.to_ascii_lowercase(),
            repo,
            credentials,
            authorization: None,
            challenged: false,
        }
    }

    /// The tag for `version`: a tag equal to it (or to it with `+` as `_`), else the highest
    /// version among the tags that satisfies it as a semver range, as Helm picks it.
    fn resolve(&mut self, version: &str) -> Result<String, String> {
        let tags = self.tags()?;
        let exact = version.replace('+', "_");
        if let Some(tag) = tags.iter().find(|t| **t == version || **t == exact) {
            return Ok(tag.clone());
        }
        if semver_compare(version, "0.0.0").is_err() {
            return Err(format!(
                "spec.version {version:?} is neither a tag of oci://{}/{} nor a semver range; write e.g. 1.2.3 or ^1.2.0",
                self.host, self.repo
            ));
        }
        let mut best: Option<(&String, String)> = None;
        for tag in &tags {
            let v = tag.replace('_', "+");
            // Tags that are not versions (latest, sha256-...) are skipped, as Helm skips them.
            if !semver_compare(version, &v).unwrap_or(false) {
                continue;
            }
            if best
                .as_ref()
                .is_none_or(|(_, b)| semver_order(&v, b) == Some(std::cmp::Ordering::Greater))
            {
                best = Some((tag, v));
            }
        }
        match best {
            Some((tag, _)) => Ok(tag.clone()),
            None => {
                let mut known: Vec<String> = tags.iter().map(|t| t.replace('_', "+")).collect();
                known.sort_by(|a, b| semver_order(b, a).unwrap_or(std::cmp::Ordering::Equal));
                known.truncate(10);
                Err(format!(
                    "no version of oci://{}/{} satisfies spec.version {version:?} (it has {})",
                    self.host,
                    self.repo,
                    if known.is_empty() {
                        "no tags".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
            }
        }
    }

    /// Every tag of the repository, the `Link: <...>; rel="next"` pages followed.
    fn tags(&mut self) -> Result<Vec<String>, String> {
        let mut tags = Vec::new();
        let mut next = Some(format!("/v2/{}/tags/list", self.repo));
        for _ in 0..MAX_TAG_PAGES {
            let Some(path) = next.take() else { break };
            let (body, link) = self.get_with_link(&path)?;
            let page: serde_json::Value = serde_json::from_slice(&body).map_err(|_| {
                format!(
                    "the tag list of oci://{}/{} is not JSON; is spec.repository an OCI registry?",
                    self.host, self.repo
                )
            })?;
            if let Some(list) = page.get("tags").and_then(|t| t.as_array()) {
                tags.extend(list.iter().filter_map(|t| t.as_str()).map(String::from));
            }
            next = link.as_deref().and_then(next_page);
        }
        Ok(tags)
    }

    /// The cosign signatures stored for the manifest `digest` (`sha256:<hex>`): the layers
    /// of the manifest tagged `sha256-<hex>.sig`, each payload checked against its digest.
    fn cosign_signatures(&mut self, digest: &str) -> Result<Vec<CosignSignature>, String> {
        let tag = format!("{}.sig", digest.replace(':', "-"));
        let path = format!("/v2/{}/manifests/{tag}", self.repo);
        let Some(reply) = self.send_unless_missing(&path, Some(MANIFEST))? else {
            return Ok(Vec::new());
        };
        let manifest: serde_json::Value = serde_json::from_slice(&reply.body)
            .map_err(|_| format!("the signature manifest {tag} of {} is not JSON", self.repo))?;
        let layers = manifest.get("layers").and_then(|l| l.as_array()).cloned();
        let mut signatures = Vec::new();
        for layer in layers.unwrap_or_default() {
            let field = |k: &str| layer.get(k).and_then(|v| v.as_str()).unwrap_or("");
            if field("mediaType") != cosign::PAYLOAD_MEDIA_TYPE {
                continue;
            }
            let blob = field("digest").to_string();
            let payload = self.get(&format!("/v2/{}/blobs/{blob}", self.repo), None)?;
            let actual = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&payload)));
            if actual != blob {
                continue; // a payload that is not what the manifest says is no signature
            }
            let annotation = |k: &str| {
                layer
                    .get("annotations")
                    .and_then(|a| a.get(k))
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            };
            signatures.push(CosignSignature {
                payload,
                signature: annotation(cosign::SIGNATURE_ANNOTATION),
                keyless: annotation(cosign::CERTIFICATE_ANNOTATION).is_some(),
            });
        }
        Ok(signatures)
    }

    fn get(&mut self, path: &str, accept: Option<&str>) -> Result<Vec<u8>, String> {
        self.send(path, accept).map(|r| r.body)
    }

    fn get_with_link(&mut self, path: &str) -> Result<(Vec<u8>, Option<String>), String> {
        let reply = self.send(path, None)?;
        let link = reply.header("link").map(String::from);
        Ok((reply.body, link))
    }

    /// GET `path` (absolute on the registry), answering one authentication challenge; a
    /// status other than 200 is an error naming the registry, never a credential.
    fn send(&mut self, path: &str, accept: Option<&str>) -> Result<http::Reply, String> {
        self.send_unless_missing(path, accept)?.ok_or_else(|| {
            format!(
                "the registry {} has no {} (HTTP 404 from {}); check spec.repository, spec.name and spec.version",
                self.host,
                what_is(path, &self.repo),
                http::redact(&format!("{}{path}", self.base))
            )
        })
    }

    /// [`Self::send`], with a 404 as `None`.
    fn send_unless_missing(
        &mut self,
        path: &str,
        accept: Option<&str>,
    ) -> Result<Option<http::Reply>, String> {
        let url = format!("{}{path}", self.base);
        loop {
            let mut headers = Vec::new();
            if let Some(accept) = accept {
                headers.push(("Accept", accept.to_string()));
            }
            if let Some(authorization) = &self.authorization {
                headers.push(("Authorization", authorization.clone()));
            }
            let reply = http::send(&url, &headers)
                .map_err(|e| format!("cannot reach the registry {}: {e}", self.host))?;
            match reply.status {
                200 => return Ok(Some(reply)),
                401 if !self.challenged => {
                    self.challenged = true;
                    let challenge = reply.header("www-authenticate").unwrap_or("").to_string();
                    self.authorization = self.answer(&challenge, &url)?;
                    if self.authorization.is_none() {
                        return Err(self.credentials.refused(&url, 401));
                    }
                }
                401 | 403 => return Err(self.credentials.refused(&url, reply.status)),
                404 => return Ok(None),
                status => {
                    return Err(format!(
                        "HTTP {status} from the registry {} ({})",
                        self.host,
                        http::redact(&url)
                    ))
                }
            }
        }
    }

    /// The `Authorization` header that answers `challenge`: a Bearer token from the realm
    /// (with the host's login as basic credentials when there is one), or the login itself
    /// for `Basic`. `None`: nothing to answer with.
    fn answer(&self, challenge: &str, url: &str) -> Result<Option<String>, String> {
        let login = self.credentials.for_host(&self.host);
        let (kind, params) = challenge.split_once(' ').unwrap_or((challenge, ""));
        if kind.eq_ignore_ascii_case("basic") {
            return Ok(login.map(|l| l.basic()));
        }
        if !kind.eq_ignore_ascii_case("bearer") {
            return Ok(None);
        }
        let params = parse_params(params);
        let param = |k: &str| {
            params
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.as_str())
        };
        let realm = param("realm").ok_or_else(|| {
            format!("the registry {} asked for a token without saying where to get it (no realm in WWW-Authenticate)", self.host)
        })?;
        let scope = format!("repository:{}:pull", self.repo);
        let mut token_url = format!("{realm}?scope={}", encode(param("scope").unwrap_or(&scope)));
        if let Some(service) = param("service") {
            token_url.push_str(&format!("&service={}", encode(service)));
        }
        let headers: Vec<(&str, String)> =
            login.iter().map(|l| ("Authorization", l.basic())).collect();
        let reply = http::send(&token_url, &headers)
            .map_err(|e| format!("cannot get a token for the registry {}: {e}", self.host))?;
        match reply.status {
            200 => {}
            401 | 403 => return Err(self.credentials.refused(url, reply.status)),
            status => {
                return Err(format!(
                    "HTTP {status} from the token service of the registry {} ({})",
                    self.host,
                    http::redact(realm)
                ))
            }
        }
        let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap_or_default();
        let token = body
            .get("token")
            .or_else(|| body.get("access_token"))
            .and_then(|t| t.as_str())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                format!(
                    "the token service of the registry {} sent no token",
                    self.host
                )
            })?;
        Ok(Some(format!("Bearer {token}")))
    }
}

/// What a registry path asked for, for a 404's message.
fn what_is(path: &str, repo: &str) -> String {
    if path.contains("/tags/list") {
        format!("chart repository {repo}")
    } else if let Some((_, tag)) = path.split_once("/manifests/") {
        format!("tag {tag} of {repo}")
    } else {
        format!("blob of {repo}")
    }
}

/// The target of `rel="next"` in a `Link` header (`</v2/x/tags/list?last=a&n=100>; rel="next"`).
fn next_page(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, rest) = part.trim().split_once(';')?;
        let is_next = rest.split(';').any(|p| {
            let p = p.trim().replace(' ', "");
            p == "rel=\"next\"" || p == "rel=next"
        });
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        // Same registry only: an absolute URL is reduced to its path.
        let target = match target.split_once("://") {
            Some((_, rest)) => &rest[rest.find('/')?..],
            None => target,
        };
        (is_next && target.starts_with('/')).then(|| target.to_string())
    })
}

/// `k="v",k2=v2` of a `WWW-Authenticate` header; quoted values may hold commas.
fn parse_params(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim().to_string();
        let after = after.trim_start();
        let (value, tail) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"').unwrap_or(quoted.len());
            (&quoted[..end], quoted.get(end + 1..).unwrap_or(""))
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        out.push((key, value.to_string()));
        rest = tail.trim_start().trim_start_matches(',');
    }
    out
}

/// Percent-encoding of a query value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_links_and_schemes() {
        let params = parse_params(
            r#"realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(
            params,
            [
                ("realm".into(), "https://auth.example/token".into()),
                ("service".into(), "registry.example".into()),
                ("scope".into(), "repository:a/b:pull,push".into()),
            ]
        );
        assert_eq!(
            next_page(r#"</v2/c/shop/tags/list?last=1.0.0&n=2>; rel="next""#).as_deref(),
            Some("/v2/c/shop/tags/list?last=1.0.0&n=2")
        );
        assert_eq!(
            next_page(r#"<https://r.example/v2/x/tags/list?n=1>; rel=next"#).as_deref(),
            Some("/v2/x/tags/list?n=1")
        );
        assert_eq!(next_page(r#"</v2/x>; rel="prev""#), None);
        assert_eq!(scheme("localhost:5000"), "http");
        assert_eq!(scheme("127.0.0.1"), "http");
        assert_eq!(scheme("[::1]:5000"), "http");
        assert_eq!(scheme("registry.example.com"), "https");
        assert_eq!(scheme("localhost.example.com:5000"), "https");
        assert_eq!(encode("repository:a/b:pull"), "repository%3Aa%2Fb%3Apull");
    }
}
