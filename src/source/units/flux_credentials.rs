//! Credentials of Flux sources (source-controller): a HelmRepository's `secretRef` (HTTP basic
//! auth: the Secret's `username` and `password`; for an OCI repository also a
//! `.dockerconfigjson`), read from the desired state or the cluster and given to tend's chart
//! fetchers for the repository's host. Never printed: a refused login names the Secret only.

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
