//! Credentials of Flux sources (source-controller): a HelmRepository's `secretRef` (HTTP basic
//! auth: the Secret's `username` and `password`; for an OCI repository also a
//! `.dockerconfigjson`) and an OCIRepository's (an image pull Secret: `.dockerconfigjson`,
//! or the older `.dockercfg`, as `k8schain.NewFromPullSecrets` reads them), read from the
//! desired state or the cluster and given to tend's chart and artifact fetchers for the
//! registry's host. Never printed: a refused login names the Secret only.

use super::lookup::{self, Blocked, Lookup};
use super::model::{Context, Found, Sources};
use serde_json::Value;

/// The login of the HelmRepository a release's `spec.chart.spec.sourceRef` names, when it
/// has a `secretRef`, added to the run's chart logins.
pub fn release_login(unit: &Found, sources: &Sources, ctx: &Context) -> Result<(), Blocked> {
    let Some(source_ref) = unit.spec().pointer("/chart/spec/sourceRef") else {
        return Ok(());
    };
    let text = |k: &str| source_ref.get(k).and_then(Value::as_str).unwrap_or("");
    if text("kind") != "HelmRepository" {
        return Ok(());
    }
    let namespace = Some(text("namespace"))
        .filter(|n| !n.is_empty())
        .unwrap_or(&unit.id.namespace);
    match sources.get("HelmRepository", namespace, text("name")) {
        Some(repository) => repository_login(repository, sources, ctx),
        None => Ok(()), // chart_source says it names nothing
    }
}

fn repository_login(repository: &Found, sources: &Sources, ctx: &Context) -> Result<(), Blocked> {
    let spec = repository.spec();
    // A client certificate or a private CA would change what the fetch trusts: refused
    // rather than fetched without it.
    if spec.get("certSecretRef").is_some() {
        return Err(repository
            .problem(
                &["spec", "certSecretRef"],
                "certSecretRef (a TLS client certificate or a private CA) is not supported by tend yet; serve the repository with a certificate the system trusts, or add its CA to the machine's trust store",
            )
            .into());
    }
    let Some(name) = spec.pointer("/secretRef/name").and_then(Value::as_str) else {
        return Ok(());
    };
    let url = spec.get("url").and_then(Value::as_str).unwrap_or("");
    let namespace = &repository.id.namespace;
    let at = |message: String| repository.problem(&["spec", "secretRef"], message);
    let entries = match lookup::lookup(sources, ctx, "Secret", namespace, name).map_err(at)? {
        Lookup::Pending => return Err(Blocked::Pending),
        Lookup::Absent => {
            return Err(at(format!(
                "secretRef names Secret {namespace}/{name}, which {}; create it with the repository's username and password",
                lookup::looked_in(ctx)
            ))
            .into())
        }
        found => found.entries().unwrap_or_default(),
    };
    let origin = format!(
        "Secret {namespace}/{name} of HelmRepository {}",
        repository.id
    );
    let mut logins = ctx
        .chart_logins
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(config) = entries.get(".dockerconfigjson") {
        return logins
            .add_docker_config(&origin, config.as_bytes())
            .map_err(|why| at(format!("{origin}: .dockerconfigjson: {why}")).into());
    }
    match (entries.get("username"), entries.get("password")) {
        (Some(username), Some(password)) => {
            logins.add_login(&origin, url, username, password);
            Ok(())
        }
        _ => Err(at(format!(
            "{origin} holds neither username and password nor .dockerconfigjson; put the repository's login in it (kubectl create secret generic {name} -n {namespace} --from-literal=username=USER --from-literal=password=PASSWORD)"
        ))
        .into()),
    }
}

/// The Secret a source's `spec.secretRef` names (in the source's namespace), with its origin
/// for messages (`Secret ns/name of GitRepository ns/name`); `None` without one. A Secret only
/// the cluster holds, not read yet, is a problem the run never shows: it reads the Secret and
/// reads the source again (see `lookup.rs`). `create`: how to create it when it is absent
/// (`NAME` and `NAMESPACE` stand for the Secret's).
fn secret_ref(
    source: &Found,
    sources: &Sources,
    ctx: &Context,
    create: &str,
) -> Result<Option<(String, super::cluster_objects::Entries)>, crate::problem::Problem> {
    let Some(name) = source
        .spec()
        .pointer("/secretRef/name")
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    let namespace = &source.id.namespace;
    let at = |message: String| source.problem(&["spec", "secretRef"], message);
    let origin = format!("Secret {namespace}/{name} of {}", source.id);
    match lookup::lookup(sources, ctx, "Secret", namespace, name).map_err(at)? {
        Lookup::Pending => Err(at(format!(
            "{origin} is only in the cluster; it is read once connected"
        ))),
        Lookup::Absent => Err(at(format!(
            "secretRef names Secret {namespace}/{name}, which {}; create it {}",
            lookup::looked_in(ctx),
            create.replace("NAMESPACE", namespace).replace("NAME", name)
        ))),
        found => Ok(Some((origin, found.entries().unwrap_or_default()))),
    }
}

/// The image pull Secret an OCIRepository's `secretRef` names, added to the run's registry
/// logins. A Secret only the cluster holds, not read yet, is a problem the run never shows
/// (as for [`git_login`]).
pub fn oci_login(
    source: &Found,
    sources: &Sources,
    ctx: &Context,
) -> Result<(), crate::problem::Problem> {
    let create = "as an image pull Secret (kubectl create secret docker-registry NAME -n NAMESPACE --docker-server=HOST --docker-username=USER --docker-password=PASSWORD)";
    let Some((origin, entries)) = secret_ref(source, sources, ctx, create)? else {
        return Ok(());
    };
    let at = |message: String| source.problem(&["spec", "secretRef"], message);
    // `.dockercfg` is the config's `auths` map alone.
    let config = match (entries.get(".dockerconfigjson"), entries.get(".dockercfg")) {
        (Some(config), _) => config.clone(),
        (None, Some(old)) => format!("{{\"auths\": {old}}}"),
        (None, None) => {
            return Err(at(format!(
                "{origin} holds neither .dockerconfigjson nor .dockercfg; make it an image pull Secret (kubectl create secret docker-registry ...)"
            )))
        }
    };
    let mut logins = ctx
        .chart_logins
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    logins
        .add_docker_config(&origin, config.as_bytes())
        .map_err(|why| at(format!("{origin}: {why}")))
}

/// A GitRepository's `secretRef` as tend's git source takes it: HTTP basic auth
/// (`username`, `password`) or SSH (`identity`, `known_hosts`, written to private temporary
/// files that live as long as this).
#[derive(Default)]
pub struct GitLogin {
    pub basic: Option<(String, String)>,
    pub identity: Option<tempfile::NamedTempFile>,
    pub known_hosts: Option<tempfile::NamedTempFile>,
    /// `Secret ns/name of GitRepository ns/name`, for messages.
    pub origin: String,
}

/// The login of `source`'s `secretRef`, `None` without one. A Secret only the cluster holds,
/// not read yet, is a problem here that the run never shows: it reads the Secret and reads
/// the source again (see `lookup.rs`).
pub fn git_login(
    source: &Found,
    sources: &Sources,
    ctx: &Context,
) -> Result<Option<GitLogin>, crate::problem::Problem> {
    let create =
        "with the repository's credentials (username and password, or identity and known_hosts)";
    let Some((origin, entries)) = secret_ref(source, sources, ctx, create)? else {
        return Ok(None);
    };
    let at = |message: String| source.problem(&["spec", "secretRef"], message);
    let mut login = GitLogin {
        origin: origin.clone(),
        ..GitLogin::default()
    };
    if entries.contains_key("bearerToken") {
        return Err(at(format!(
            "{origin}: bearerToken is not supported by tend's git source; give the token as password (with a username) instead"
        )));
    }
    if let (Some(user), Some(password)) = (entries.get("username"), entries.get("password")) {
        login.basic = Some((user.clone(), password.clone()));
    }
    let private_file = |text: &str| -> Result<tempfile::NamedTempFile, crate::problem::Problem> {
        let mut file = tempfile::NamedTempFile::new()
            .map_err(|e| at(format!("{origin}: cannot write a private file: {e}")))?;
        std::io::Write::write_all(&mut file, text.as_bytes())
            .map_err(|e| at(format!("{origin}: cannot write a private file: {e}")))?;
        Ok(file)
    };
    if let Some(identity) = entries.get("identity") {
        login.identity = Some(private_file(identity)?);
    }
    if let Some(known_hosts) = entries.get("known_hosts") {
        login.known_hosts = Some(private_file(known_hosts)?);
    }
    if login.basic.is_none() && login.identity.is_none() {
        return Err(at(format!(
            "{origin} holds neither username and password nor identity; put the repository's credentials in it"
        )));
    }
    Ok(Some(login))
}
