//! A Flux `OCIRepository` holding manifests (`flux push artifact`: one tar.gz layer of
//! media type `application/vnd.cncf.flux.content.v1.tar+gzip`) as a Kustomization's source,
//! pulled as source-controller pulls it: `ref.digest`, else `ref.semver` over the tags, else
//! `ref.tag` (default `latest`); the layer `layerSelector.mediaType` names (else the first),
//! extracted into a private directory the unit's build reads. `secretRef` is an image pull
//! Secret (`flux_credentials::oci_login`); `verify` checks cosign key-pair signatures with the
//! run's `--trusted-keys`, as for charts (keyless is refused). What else changes who may pull
//! or what is trusted (`certSecretRef`, a proxy, a ServiceAccount's pull secrets, a cloud
//! `provider`) and `layerSelector.operation: copy` are refused with the way out, never
//! ignored.
//! What source-controller leaves out of the artifact (`.sourceignore` files, `spec.ignore`)
//! is left out when a Kustomization reads it (`flux_ignore.rs`).

use super::model::{Context, Found, Sources, Tree};
use crate::problem::Problem;
use crate::source::charts::oci::{fetch_artifact, ArtifactRef};
use serde_json::Value;
use std::sync::Arc;

/// Fields of an OCIRepository that would change the pull and that tend does not read yet.
const REFUSED: &[(&str, &str)] = &[
    ("certSecretRef", "a TLS client certificate or a private CA"),
    ("proxySecretRef", "a proxy"),
    (
        "serviceAccountName",
        "image pull secrets of a ServiceAccount",
    ),
];

/// The tree of OCIRepository `source`, for `unit`.
pub fn oci_tree(source: &Found, sources: &Sources, ctx: &Context) -> Result<Tree, Problem> {
    let spec = source.spec();
    for (field, what) in REFUSED {
        if spec.get(*field).is_some() {
            return Err(source.problem(
                &["spec", field],
                format!("spec.{field} ({what}) of an OCIRepository of manifests is not supported by tend yet; make the artifact readable without it, or vendor its manifests into the repository"),
            ));
        }
    }
    let text = |pointer: &str| spec.pointer(pointer).and_then(Value::as_str);
    if let Some(provider) = text("/provider").filter(|p| *p != "generic") {
        return Err(source.problem(
            &["spec", "provider"],
            format!("provider {provider:?} logs in through a cloud's identity, which tend does not do; use provider generic"),
        ));
    }
    if text("/layerSelector/operation") == Some("copy") {
        return Err(source.problem(
            &["spec", "layerSelector"],
            "layerSelector.operation: copy keeps the layer as an archive, which a Kustomization cannot build; use extract (the default)",
        ));
    }
    let url = text("/url").unwrap_or("");
    if !url.starts_with("oci://") {
        return Err(source.problem(
            &["spec", "url"],
            format!("spec.url {url:?} must start with oci://"),
        ));
    }
    let wanted = match (text("/ref/digest"), text("/ref/semver"), text("/ref/tag")) {
        (Some(digest), _, _) => ArtifactRef::Digest(digest),
        (None, Some(range), _) => ArtifactRef::Semver(range),
        (None, None, tag) => ArtifactRef::Tag(tag.unwrap_or("latest")),
    };
    let media_type = text("/layerSelector/mediaType");
    let verify = match spec.get("verify") {
        Some(verify) => {
            super::flux_helm::cosign_verify(verify, (source, &["spec", "verify"]), true)?;
            Some(ctx.trusted_keys)
        }
        None => None,
    };
    super::flux_credentials::oci_login(source, sources, ctx)?;
    let credentials = ctx
        .chart_logins
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    let fetched = fetch_artifact(url, wanted, media_type, ctx.cache_dir, &credentials, verify);
    let (files, revision) = fetched.map_err(|e| {
        let field = match e.starts_with("spec.verify") {
            true => "verify",
            false => "url",
        };
        source.problem(&["spec", field], format!("cannot pull {}: {e}", source.id))
    })?;
    let staging = tempfile::Builder::new()
        .prefix("tend-oci-")
        .tempdir()
        .map_err(|e| {
            source.problem(
                &["spec"],
                format!("cannot make a directory for {}: {e}", source.id),
            )
        })?;
    for (path, bytes) in files {
        // The archive reader has refused absolute paths and paths that climb out.
        let target = staging.path().join(&path);
        let written = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&target, bytes));
        written.map_err(|e| {
            source.problem(
                &["spec"],
                format!("cannot unpack {path} of {}: {e}", source.id),
            )
        })?;
    }
    Ok(Tree {
        root: staging.path().to_path_buf(),
        revision: Some(revision),
        is_checkout: false,
        _staging: Some(Arc::new(staging)),
    })
}
