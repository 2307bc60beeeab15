//! Discovery: what the server serves, as (group, version, kind) → [`Resource`]. Aggregated
//! discovery (Kubernetes 1.26+, two requests), else the per-group fallback.

use super::retry::retry;
use super::ClusterError;
use kube::api::ApiResource;
use kube::discovery::{ApiCapabilities, Discovery, Scope};
use kube::Client;
use std::collections::HashMap;

/// One served resource: its API coordinates and scope.
#[derive(Debug, Clone)]
pub struct Resource {
    pub api: ApiResource,
    pub namespaced: bool,
}

/// Discovery results for one run: (group, version, kind) → resource.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    by_gvk: HashMap<(String, String, String), Resource>,
}

impl Resources {
    pub fn get(&self, group: &str, version: &str, kind: &str) -> Option<&Resource> {
        self.by_gvk
            .get(&(group.to_string(), version.to_string(), kind.to_string()))
    }

    /// The served resource of a group/kind in any version (the first one found).
    pub fn any_version(&self, group: &str, kind: &str) -> Option<&Resource> {
        let mut found: Vec<_> = self
            .by_gvk
            .iter()
            .filter(|((g, _, k), _)| g == group && k == kind)
            .collect();
        found.sort_by(|a, b| a.0.cmp(b.0));
        found.first().map(|(_, r)| *r)
    }

    /// Whether the server serves anything in `group`/`version`.
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.by_gvk
            .keys()
            .any(|(g, v, _)| g == group && v == version)
    }

    /// What is served as Helm's `.Capabilities.APIVersions` lists it: each `group/version`
    /// and each `group/version/Kind` (`v1`, `v1/Pod`, `apps/v1`, `apps/v1/Deployment`),
    /// sorted.
    pub fn api_versions(&self) -> Vec<String> {
        let mut out = std::collections::BTreeSet::new();
        for (group, version, kind) in self.by_gvk.keys() {
            let group_version = if group.is_empty() {
                version.clone()
            } else {
                format!("{group}/{version}")
            };
            out.insert(format!("{group_version}/{kind}"));
            out.insert(group_version);
        }
        out.into_iter().collect()
    }

    fn add(&mut self, ar: ApiResource, caps: &ApiCapabilities) {
        let resource = Resource {
            namespaced: caps.scope == Scope::Namespaced,
            api: ar.clone(),
        };
        self.by_gvk.insert(
            (ar.group.clone(), ar.version.clone(), ar.kind.clone()),
            resource,
        );
    }
}

/// Discover what the server serves: aggregated discovery (Kubernetes 1.26+, two requests),
/// else the per-group fallback for servers without it.
pub async fn discover(client: &Client) -> Result<Resources, ClusterError> {
    let aggregated = retry("discovery", || {
        Discovery::new(client.clone()).run_aggregated()
    })
    .await;
    // A server without aggregated discovery may answer the aggregated request with the
    // legacy document, which parses as an empty list: treat "no core group" as unsupported.
    let discovery = match aggregated {
        Ok(d) if d.has_group("") && d.groups().count() > 1 => d,
        other => {
            if let Err(err) = other {
                tracing::debug!("aggregated discovery unavailable ({err}); falling back");
            }
            retry("discovery", || Discovery::new(client.clone()).run())
                .await
                .map_err(ClusterError::Discovery)?
        }
    };
    let mut resources = Resources::default();
    for group in discovery.groups() {
        for version in group.versions() {
            for (ar, caps) in group.versioned_resources(version) {
                resources.add(ar, &caps);
            }
        }
    }
    Ok(resources)
}
