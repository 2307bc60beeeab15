//! How a unit reads a ConfigMap or Secret: from the desired state, else from what the run
//! read of the cluster ([`super::cluster_objects`]), else it waits for the run to read it.

use super::cluster_objects::Entries;
use super::model::{config_entries, Context, Sources};

/// An object a unit reads, looked up in the desired state, then the cluster.
pub enum Lookup {
    /// In the desired state.
    Desired(Entries),
    /// Only in the cluster.
    Cluster(Entries),
    /// Neither has it (or, with no cluster, the desired state does not).
    Absent,
    /// Not in the desired state, and the cluster is not read yet: the unit waits.
    Pending,
}

impl Lookup {
    /// The entries, wherever found.
    pub fn entries(self) -> Option<Entries> {
        match self {
            Lookup::Desired(entries) | Lookup::Cluster(entries) => Some(entries),
            Lookup::Absent | Lookup::Pending => None,
        }
    }
}

/// Why a unit could not be expanded yet: a problem, or an object it waits for.
pub enum Blocked {
    Problem(crate::problem::Problem),
    /// Waits for objects only the cluster holds (read once connected, then expanded again).
    Pending,
}

impl From<crate::problem::Problem> for Blocked {
    fn from(problem: crate::problem::Problem) -> Blocked {
        Blocked::Problem(problem)
    }
}

/// The ConfigMap or Secret `kind` `namespace/name`, from the desired state, else from the
/// cluster (recorded as wanted when not read yet); an error for a SOPS-encrypted one of the
/// desired state.
pub fn lookup(
    sources: &Sources,
    ctx: &Context,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Lookup, String> {
    if let Some(entries) = sources.config_data(kind, namespace, name)? {
        return Ok(Lookup::Desired(entries));
    }
    let Some(cluster) = ctx.cluster_objects else {
        return Ok(Lookup::Absent);
    };
    let key = (kind.to_string(), namespace.to_string(), name.to_string());
    match cluster.get(&key) {
        Some(Some(entries)) => Ok(Lookup::Cluster(entries.clone())),
        Some(None) => Ok(Lookup::Absent),
        None => {
            cluster.want(key);
            Ok(Lookup::Pending)
        }
    }
}

/// The entries of a live ConfigMap or Secret as a unit reads them.
pub fn live_entries(object: &serde_json::Value) -> Entries {
    config_entries(object)
}

/// Where a missing object was looked for, for messages: `the desired state` or `the desired
/// state nor the cluster`.
pub fn looked_in(ctx: &Context) -> &'static str {
    match ctx.cluster_objects {
        Some(_) => "neither the desired state nor the cluster holds",
        None => "the desired state does not hold (tend render reads no cluster: tend diff and apply read it there)",
    }
}

/// What a unit that could not be expanded yet produces.
pub fn produced(blocked: Blocked) -> super::model::Produced {
    use super::model::{Outcome, Produced};
    match blocked {
        Blocked::Problem(problem) => Produced::failed(problem),
        Blocked::Pending => Produced::outcome(Outcome::NotExpanded(
            "it reads ConfigMaps or Secrets only the cluster holds, read once connected".into(),
        )),
    }
}
