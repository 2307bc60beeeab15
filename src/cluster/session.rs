//! A run's connection to the cluster, and how a live object's identity is read.

use super::{connect, discover, Access, ClusterError, RequestStats, Resource, Resources};
use crate::object::ObjectKey;
use kube::Client;
use serde_json::Value;
use std::sync::Arc;

/// Everything a run needs from the cluster side: a client, what the server serves, and the
/// request counters.
pub struct Session {
    pub client: Client,
    pub resources: Resources,
    pub stats: Arc<RequestStats>,
}

impl Session {
    pub async fn connect(access: &Access) -> Result<Session, ClusterError> {
        let stats = Arc::new(RequestStats::default());
        let client = connect(access, stats.clone()).await?;
        let resources = discover(&client).await?;
        Ok(Session {
            client,
            resources,
            stats,
        })
    }

    /// A core (`v1`) resource the run cannot do without.
    pub fn core(&self, kind: &str) -> Result<Resource, ClusterError> {
        self.served("", "v1", kind)
    }

    /// A served resource, or an error naming what the cluster lacks.
    pub fn served(&self, group: &str, version: &str, kind: &str) -> Result<Resource, ClusterError> {
        self.resources
            .get(group, version, kind)
            .cloned()
            .ok_or_else(|| {
                let api_version = if group.is_empty() {
                    version.to_string()
                } else {
                    format!("{group}/{version}")
                };
                ClusterError::Config(format!("the cluster does not serve {api_version} {kind}"))
            })
    }
}

/// The identity of a live object (as read from the API: apiVersion, kind, metadata).
pub fn key_of(value: &Value) -> ObjectKey {
    ObjectKey::of_value(value)
}
