//! Writing as a tenant: Flux's multi-tenancy lockdown applies a unit with
//! `spec.serviceAccountName` as that ServiceAccount (kube-apiserver's impersonation,
//! `Impersonate-User: system:serviceaccount:NS:NAME`), so RBAC bounds what a tenant's
//! repository may write. A session holds one client per identity, made when first needed,
//! and knows which objects are written as which ServiceAccount
//! ([`Session::write_as`](super::Session::write_as)); every other request is tend's own.

use super::{ClusterError, Connector};
use crate::object::ObjectKey;
use kube::Client;
use std::collections::HashMap;
use std::sync::Mutex;

/// A ServiceAccount a tenant's objects are written as.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServiceAccount {
    pub namespace: String,
    pub name: String,
}

impl ServiceAccount {
    /// The user the API server knows it as.
    pub fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }
}

impl std::fmt::Display for ServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServiceAccount {}/{}", self.namespace, self.name)
    }
}

/// The identities of a session: which objects are written as which ServiceAccount, and the
/// clients made so far.
pub(super) struct Identities {
    connector: Connector,
    writers: Mutex<HashMap<ObjectKey, ServiceAccount>>,
    clients: Mutex<HashMap<ServiceAccount, Client>>,
}

impl Identities {
    pub(super) fn new(connector: Connector) -> Identities {
        Identities {
            connector,
            writers: Mutex::new(HashMap::new()),
            clients: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn set_writers(&self, writers: HashMap<ObjectKey, ServiceAccount>) {
        if let Ok(mut known) = self.writers.lock() {
            *known = writers;
        }
    }

    pub(super) fn writer_of(&self, key: &ObjectKey) -> Option<ServiceAccount> {
        self.writers.lock().ok()?.get(key).cloned()
    }

    /// The client acting as `account`, made on first use.
    pub(super) fn client_as(&self, account: &ServiceAccount) -> Result<Client, ClusterError> {
        let mut clients = self
            .clients
            .lock()
            .map_err(|_| ClusterError::Config("a client lock was poisoned".into()))?;
        if let Some(client) = clients.get(account) {
            return Ok(client.clone());
        }
        let client = self.connector.client(Some(account.username()))?;
        clients.insert(account.clone(), client.clone());
        Ok(client)
    }
}

/// Whether the client's user may `verb` `resource` in `namespace` (all of its objects; a
/// SelfSubjectAccessReview, which every authenticated user may ask). Any failure to ask
/// counts as no.
pub async fn may(
    client: &Client,
    resource: &super::Resource,
    verb: &str,
    namespace: Option<&str>,
) -> bool {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(resource.api.group.clone()),
                resource: Some(resource.api.plural.clone()),
                verb: Some(verb.into()),
                namespace: Some(namespace.unwrap_or_default().to_string()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: kube::Api<SelfSubjectAccessReview> = kube::Api::all(client.clone());
    let params = kube::api::PostParams::default();
    let asked = super::retry::retry("access review", || api.create(&params, &review)).await;
    match asked {
        Ok(answer) => answer.status.is_some_and(|s| s.allowed),
        Err(err) => {
            tracing::debug!(
                "cannot ask whether {verb} {} is allowed: {err}",
                resource.api.plural
            );
            false
        }
    }
}
