//! The clusters of a run over several: from `--context` given more than once, from every
//! context of the kubeconfig (`--all-contexts`), or from a `Fleet` file (`--fleet`).

use crate::cluster::Access;
use crate::kinds::fleet::FleetCluster;
use crate::kinds::{TendKind, TendObject};
use crate::problem::Problem;
use crate::run::KubeconfigSecret;
use crate::Error;
use std::path::{Path, PathBuf};

/// Where the clusters of a run come from, as the flags say.
#[derive(Debug, Clone, Default)]
pub struct FleetChoice {
    /// `--context`, in order (one alone is a single-cluster run).
    pub contexts: Vec<String>,
    pub all_contexts: bool,
    /// `--fleet FILE`.
    pub fleet_file: Option<PathBuf>,
    pub kubeconfig: Option<PathBuf>,
    /// `--repo`, where a relative `--fleet` is also looked for.
    pub repo: String,
}

/// The fleet the flags name, or `None` for a run of one cluster.
pub fn clusters(choice: &FleetChoice) -> Result<Option<Vec<FleetCluster>>, Error> {
    if let Some(file) = &choice.fleet_file {
        return read_fleet(&locate(file, &choice.repo)?).map(Some);
    }
    let contexts = if choice.all_contexts {
        crate::cluster::context_names(choice.kubeconfig.as_deref()).map_err(Error::Cluster)?
    } else if choice.contexts.len() > 1 {
        choice.contexts.clone()
    } else {
        return Ok(None);
    };
    if contexts.is_empty() {
        return Err(Error::Usage(
            "--all-contexts: the kubeconfig has no context".into(),
        ));
    }
    Ok(Some(
        contexts
            .into_iter()
            .map(|context| FleetCluster {
                name: context.clone(),
                context: Some(context),
                kubeconfig_secret_ref: None,
                labels: Default::default(),
                path: None,
                paths: Vec::new(),
            })
            .collect(),
    ))
}

/// How `member` is reached: `base` (the flags' access) with the member's context, or
/// through a kubeconfig Secret read in the cluster `base` reaches.
pub fn reach(base: &Access, member: &FleetCluster) -> (Access, Option<KubeconfigSecret>) {
    let mut access = base.clone();
    access.context = member.context().map(str::to_string);
    let Some(secret) = &member.kubeconfig_secret_ref else {
        return (access, None);
    };
    access.kubeconfig = None;
    let secret = KubeconfigSecret {
        hub: base.clone(),
        namespace: secret.namespace.clone(),
        name: secret.name.clone(),
        keys: vec![secret.key.clone()],
    };
    (access, Some(secret))
}

/// A relative `--fleet` path: from the working directory, else within a local `--repo`.
fn locate(file: &Path, repo: &str) -> Result<PathBuf, Error> {
    if file.is_absolute() || file.exists() {
        return Ok(file.to_path_buf());
    }
    let in_repo = Path::new(repo).join(file);
    if in_repo.exists() {
        return Ok(in_repo);
    }
    Err(Error::Usage(format!(
        "--fleet {}: no such file, here or in --repo {repo}",
        file.display()
    )))
}

/// The clusters of the one `Fleet` in `path`, checked (problems with file:line).
pub fn read_fleet(path: &Path) -> Result<Vec<FleetCluster>, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Walk {
        path: path.to_path_buf(),
        source,
    })?;
    let (docs, mut problems) = crate::yaml::parse_file(path, &text);
    let mut fleets = Vec::new();
    for doc in &docs {
        let kind = doc.value.get("kind").and_then(|k| k.as_str());
        let api = doc.value.get("apiVersion").and_then(|k| k.as_str());
        if kind != Some("Fleet") || api != Some(crate::API_VERSION) {
            continue;
        }
        match crate::render::tend_kinds::parse(path, doc, TendKind::Fleet) {
            Ok(TendObject::Fleet(fleet)) => fleets.push(fleet),
            Ok(_) => {}
            Err(p) => problems.extend(p),
        }
    }
    if fleets.len() != 1 && problems.is_empty() {
        problems.push(Problem::new(
            path,
            1,
            format!(
                "expected one Fleet ({} kind: Fleet) in the file, found {}",
                crate::API_VERSION,
                fleets.len()
            ),
        ));
    }
    if !problems.is_empty() {
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        return Err(Error::Usage(lines.join("\n")));
    }
    Ok(fleets.remove(0).spec.clusters)
}
