//! A run's connection to the cluster, and how a live object's identity is read.

use super::impersonation::{Identities, ServiceAccount};
use super::{
    connect_with_config, discover, Access, ClusterError, RequestStats, Resource, Resources,
};
use crate::object::ObjectKey;
use kube::Client;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Everything a run needs from the cluster side: a client, what the server serves, and the
/// request counters.
pub struct Session {
    pub client: Client,
    pub resources: Resources,
    pub stats: Arc<RequestStats>,
    /// Answers of [`Session::may_list_cluster_wide`], by resource: asked once per run.
    list_rights: Mutex<HashMap<String, bool>>,
    /// The tenants' ServiceAccounts objects are written as, and their clients.
    identities: Identities,
}

impl Session {
    pub async fn connect(access: &Access) -> Result<Session, ClusterError> {
        let stats = Arc::new(RequestStats::default());
        let (client, connector) = connect_with_config(access, stats.clone()).await?;
        let resources = discover(&client).await?;
        Ok(Session {
            client,
            resources,
            stats,
            list_rights: Mutex::new(HashMap::new()),
            identities: Identities::new(connector),
        })
    }

    /// Write these objects as these ServiceAccounts (a tenant unit's objects); every other
    /// object is written as tend.
    pub fn write_as(&self, writers: HashMap<crate::object::ObjectKey, ServiceAccount>) {
        self.identities.set_writers(writers);
    }

    /// The client that writes `key`: its tenant's, or tend's own.
    pub fn writer(&self, key: &crate::object::ObjectKey) -> Result<Client, ClusterError> {
        match self.identities.writer_of(key) {
            Some(account) => self.identities.client_as(&account),
            None => Ok(self.client.clone()),
        }
    }

    /// The ServiceAccount that writes `key`, if a tenant does.
    pub fn writer_account(&self, key: &crate::object::ObjectKey) -> Option<ServiceAccount> {
        self.identities.writer_of(key)
    }

    /// A client acting as `account` (one per ServiceAccount and session).
    pub fn client_as(&self, account: &ServiceAccount) -> Result<Client, ClusterError> {
        self.identities.client_as(account)
    }

    /// The decoded `data` entries of a Secret (decryption keys, `--decryption-secret`);
    /// `None` when it does not exist. Its values are never logged.
    pub async fn read_secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Vec<(String, zeroize::Zeroizing<Vec<u8>>)>>, ClusterError> {
        use base64::Engine;
        let resource = self.core("Secret")?;
        let Some(secret) =
            super::verbs::get(&self.client, &resource, Some(namespace), name).await?
        else {
            return Ok(None);
        };
        let entries = secret
            .get("data")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(key, value)| {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(value.as_str()?)
                    .ok()?;
                Some((key.clone(), zeroize::Zeroizing::new(bytes)))
            })
            .collect();
        Ok(Some(entries))
    }

    /// A core (`v1`) object, `None` when it does not exist: a ConfigMap or Secret a Flux
    /// unit reads (`run::cluster_objects`). A Secret's values are never logged.
    pub async fn read_core_object(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, ClusterError> {
        let resource = self.core(kind)?;
        super::verbs::get(&self.client, &resource, Some(namespace), name).await
    }

    /// The server's version (`GET /version`), as `v1.36.0` or the vendor's longer form.
    pub async fn kube_version(&self) -> Result<String, ClusterError> {
        let info = super::retry::retry("version", || self.client.apiserver_version())
            .await
            .map_err(|source| ClusterError::Api {
                what: "cannot read the server's version".into(),
                source,
            })?;
        Ok(info.git_version)
    }

    /// What [`Session::may_list_cluster_wide`] already found out about `resource`, if anything.
    pub fn known_list_right(&self, resource: &Resource) -> Option<bool> {
        let id = format!("{}/{}", resource.api.group, resource.api.plural);
        self.list_rights.lock().ok()?.get(&id).copied()
    }

    /// Whether this client may LIST `resource` across all namespaces: one
    /// SelfSubjectAccessReview per resource and run; any failure to ask counts as no.
    pub async fn may_list_cluster_wide(&self, resource: &Resource) -> bool {
        let id = format!("{}/{}", resource.api.group, resource.api.plural);
        if let Some(known) = self
            .list_rights
            .lock()
            .ok()
            .and_then(|m| m.get(&id).copied())
        {
            return known;
        }
        let allowed = super::can_list_cluster_wide(&self.client, resource).await;
        if let Ok(mut rights) = self.list_rights.lock() {
            rights.insert(id, allowed);
        }
        allowed
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
