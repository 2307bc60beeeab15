//! The seed of Helm's random functions (`randAlphaNum`, `uuidv4`, ...), kept per cluster.
//! A chart that draws a password or a name at random would otherwise render differently on
//! every run, and every diff would show it. The seed is drawn once, by the first apply that
//! renders such a chart, and stored in a Secret of tend's state namespace; every later diff
//! and apply renders with it, so a cluster sees the same values run after run while nobody
//! can derive them from the repository. Offline (`tend render`) there is no cluster, so a
//! throwaway seed is used and said.

use crate::cluster::{ClusterError, Session};
use crate::Error;

/// The Secret, in tend's state namespace, that holds the seed (key [`SEED_KEY`]).
pub const SEED_SECRET: &str = "tend-helm-seed";
const SEED_KEY: &str = "seed";

/// Warn that `tend render` used a throwaway seed for these releases.
pub fn warn_offline(random_charts: &[String]) {
    for chart in random_charts {
        tracing::warn!(
            "{chart} use random functions: offline, their values come from a throwaway seed and differ on every render (diff and apply use the cluster's seed, in Secret {SEED_SECRET} of tend's state namespace)"
        );
    }
}

/// A seed to store after a successful apply: none was stored when this run began.
pub struct NewSeed(u64);

/// The seed stored in the cluster, if any.
pub async fn read(session: &Session, state_namespace: &str) -> Result<Option<u64>, Error> {
    Ok(session
        .read_secret(state_namespace, SEED_SECRET)
        .await
        .map_err(Error::Cluster)?
        .and_then(|entries| {
            let (_, bytes) = entries.into_iter().find(|(key, _)| key == SEED_KEY)?;
            let text = std::str::from_utf8(&bytes).ok()?.trim().to_string();
            u64::from_str_radix(&text, 16).ok()
        }))
}

/// With no seed stored and charts that used random functions: say so, and return the
/// run's `seed` for the apply to store.
pub fn first_seed(
    random_charts: &[String],
    none_stored: bool,
    state_namespace: &str,
    storing: bool,
    seed: u64,
) -> Option<NewSeed> {
    if random_charts.is_empty() || !none_stored {
        return None;
    }
    for chart in random_charts {
        if storing {
            tracing::warn!("{chart} use random functions: this first run draws their seed and stores it in Secret {state_namespace}/{SEED_SECRET}, so later runs render the same values");
        } else {
            tracing::warn!("{chart} use random functions: no seed is stored yet (Secret {state_namespace}/{SEED_SECRET}, written by the first apply), so this run used a throwaway one and their values will change");
        }
    }
    Some(NewSeed(seed))
}

/// Store the seed this run drew. Created, never replaced: a concurrent run that stored its
/// own first wins (409), and the next run renders with that one.
pub async fn store(
    session: &Session,
    state_namespace: &str,
    seed: NewSeed,
) -> Result<(), ClusterError> {
    let resource = session.core("Secret")?;
    let secret = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": SEED_SECRET,
            "namespace": state_namespace,
            "labels": {"app.kubernetes.io/managed-by": crate::FIELD_MANAGER},
        },
        "type": "Opaque",
        "stringData": {SEED_KEY: format!("{:016x}", seed.0)},
    });
    match crate::cluster::create(&session.client, &resource, &secret).await {
        Err(err) if err.code() == Some(409) => Ok(()),
        other => other.map(|_| ()),
    }
}
