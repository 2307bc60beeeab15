//! Where logins for chart repositories and OCI registries come from
//! (README "HelmChart — a Helm chart rendered by tend itself"): Helm's registry config (what
//! `helm registry login` writes), each `--helm-credentials` file, and `--helm-credentials-secret`, later sources
//! winning. Reads files, the environment and the Secret; parsing is
//! [`crate::source::charts::credentials`].

use crate::source::charts::credentials::Credentials;
use crate::Error;
use std::path::{Path, PathBuf};

/// Largest credentials file read: a docker config is a few kilobytes.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The logins of a run: Helm's registry config when it exists, then each `files`. A file
/// named explicitly that cannot be read or parsed is an error; Helm's own config is noted
/// (and skipped, with a warning) when it is missing or unreadable, since most runs need none.
pub fn load(files: &[PathBuf]) -> Result<Credentials, Error> {
    let mut credentials = Credentials::default();
    if let Some(default) = helm_registry_config() {
        if default.is_file() {
            if let Err(why) = read_into(&mut credentials, &default) {
                tracing::warn!(
                    "ignoring Helm's registry config {}: {why}",
                    default.display()
                );
                credentials.note(format!("{} (unreadable)", default.display()));
            }
        } else {
            credentials.note(format!("{} (not found)", default.display()));
        }
    }
    for file in files {
        read_into(&mut credentials, file)
            .map_err(|why| Error::Usage(format!("--helm-credentials {}: {why}", file.display())))?;
    }
    Ok(credentials)
}

/// `$HELM_REGISTRY_CONFIG`, else `$XDG_CONFIG_HOME/helm/registry/config.json`, else
/// `$HOME/.config/helm/registry/config.json`, as Helm finds it on Linux.
fn helm_registry_config() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = set("HELM_REGISTRY_CONFIG") {
        return Some(PathBuf::from(path));
    }
    let config = set("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("helm").join("registry").join("config.json"))
}

fn read_into(credentials: &mut Credentials, path: &Path) -> Result<(), String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err("is larger than 1 MiB; is it a docker config JSON?".into());
    }
    let text =
        zeroize::Zeroizing::new(std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?);
    credentials.add_docker_config(&path.display().to_string(), &text)
}

/// The run's render options with the logins of `--helm-credentials-secret` added: the
/// Secret's `.dockerconfigjson` (a `kubernetes.io/dockerconfigjson` Secret, as `kubectl
/// create secret docker-registry` makes).
pub async fn with_secret(
    session: &crate::cluster::Session,
    render: &crate::render::RenderOptions,
    secret: &Option<(String, String)>,
) -> Result<crate::render::RenderOptions, Error> {
    let mut render = render.clone();
    let Some((namespace, name)) = secret else {
        return Ok(render);
    };
    let how = "create it with `kubectl create secret docker-registry` (key .dockerconfigjson)";
    let entries =
        super::keys::flag_secret(session, "--helm-credentials-secret", namespace, name, how)
            .await?;
    let (_, config) = entries
        .iter()
        .find(|(key, _)| key == ".dockerconfigjson")
        .ok_or_else(|| {
            Error::Usage(format!(
                "--helm-credentials-secret {namespace}/{name}: no .dockerconfigjson entry; {how}"
            ))
        })?;
    let mut credentials = (*render.chart_credentials).clone();
    credentials
        .add_docker_config(&format!("Secret {namespace}/{name}"), config)
        .map_err(|why| {
            Error::Usage(format!(
                "--helm-credentials-secret {namespace}/{name}: .dockerconfigjson: {why}"
            ))
        })?;
    render.chart_credentials = std::sync::Arc::new(credentials);
    Ok(render)
}
