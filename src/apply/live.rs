//! What a run reads from the cluster before planning, in one place ([`gather`]): the view
//! the rendered set is completed with ([`ClusterView`]: what tend's kinds read, and
//! ConfigMaps/Secrets referenced by workloads but not in git), and the live workloads that
//! opted in to config-hash reloads with the label `tend.dev/reload: "true"`.

use crate::cluster::{self, ClusterError, Resource, Resources, Session};
use crate::kinds::read::{ReadQuery, Reader};
use crate::kinds::view::{self, ClusterView};
use crate::object::{Object, ObjectKey};
use crate::plan::inventory;
use crate::render::config_hash::{self, ConfigRef};
use crate::render::Rendered;
use kube::Client;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A live workload, not in git, that asked for config-hash reloads.
#[derive(Debug, Clone)]
pub struct Reload {
    pub resource: Resource,
    pub live: Value,
    /// The hash its pod template should carry.
    pub hash: String,
}

impl Reload {
    pub fn key(&self) -> ObjectKey {
        ObjectKey::of_value(&self.live)
    }

    pub fn current_hash(&self) -> Option<&str> {
        let pointer = config_hash::pod_template_pointer(
            self.resource.api.group.as_str(),
            self.resource.api.kind.as_str(),
        )?;
        self.live
            .pointer(pointer)?
            .pointer("/metadata/annotations")?
            .get(config_hash::CONFIG_HASH_ANNOTATION)?
            .as_str()
    }

    /// The one-field apply patch: only the pod-template hash annotation, so every other field
    /// keeps its owner.
    pub fn patch(&self) -> Value {
        let key = self.key();
        let mut patch = serde_json::json!({
            "apiVersion": self.resource.api.api_version,
            "kind": self.resource.api.kind,
            "metadata": {"name": key.name, "namespace": key.namespace},
        });
        let annotations = serde_json::json!({"metadata": {"annotations": {config_hash::CONFIG_HASH_ANNOTATION: self.hash}}});
        match self.resource.api.kind.as_str() {
            "CronJob" => {
                patch["spec"] =
                    serde_json::json!({"jobTemplate": {"spec": {"template": annotations}}})
            }
            _ => patch["spec"] = serde_json::json!({"template": annotations}),
        }
        patch
    }
}

/// tend's kinds read the cluster through this: LISTs with the client, of what it serves.
struct ClusterReader<'a> {
    client: &'a Client,
    resources: &'a Resources,
    stats: &'a cluster::RequestStats,
}

impl Reader for ClusterReader<'_> {
    type Error = ClusterError;

    async fn list(&self, query: ReadQuery<'_>) -> Result<Option<Vec<Value>>, ClusterError> {
        let Some(resource) = self.resources.get(query.group, query.version, query.kind) else {
            return Ok(None);
        };
        let mut items = Vec::new();
        let wanted = cluster::ListQuery {
            labels: query.label_selector,
            fields: query.field_selector,
            metadata_only: query.metadata_only,
            stats: Some(self.stats),
        };
        cluster::list_each(self.client, resource, query.namespace, wanted, |item| {
            items.push(item)
        })
        .await?;
        Ok(Some(items))
    }

    fn is_not_found(error: &ClusterError) -> bool {
        error.code() == Some(404)
    }
}

/// Read what the offline `rendered` set lacks: what tend's kinds need (owner uids, CopyRule
/// sources, namespaces and objects in the way), the live workloads that opted in to reloads,
/// and the ConfigMaps/Secrets referenced by either but not in git.
///
/// Returns the cluster view ([`crate::render::complete`] completes the rendered set with it)
/// and the opted-in live workloads with the config hash their pod template should carry.
/// `opted_in` is [`read_opted_in`]'s answer when it was read ahead, while rendering.
pub async fn gather(
    session: &Session,
    rendered: &Rendered,
    applyset_id: &str,
    state_namespace: &str,
    opted_in: Option<OptedIn>,
) -> Result<(ClusterView, Vec<Reload>), ClusterError> {
    let mut cluster_view = ClusterView::new(applyset_id, state_namespace);
    let reader = ClusterReader {
        client: &session.client,
        resources: &session.resources,
        stats: &session.stats,
    };
    view::read(
        &reader,
        &rendered.tend,
        &rendered.objects,
        &mut cluster_view,
    )
    .await?;
    let desired_keys: BTreeSet<ObjectKey> = rendered.objects.iter().map(Object::key).collect();
    let opted_in = match opted_in {
        Some(lists) => lists,
        None => read_opted_in(session).await?,
    };
    // Opted-in workloads this run does not manage.
    let mut candidates = Vec::new();
    for (resource, items) in opted_in {
        for item in items {
            if !desired_keys.contains(&ObjectKey::of_value(&item))
                && !inventory::is_member(&item, applyset_id)
            {
                candidates.push((resource.clone(), item));
            }
        }
    }
    let mut wanted: BTreeSet<ObjectKey> = rendered.missing_config.clone();
    for (resource, item) in &candidates {
        wanted.extend(
            config_keys(resource, item)
                .into_iter()
                .map(|(_, key)| key)
                .filter(|key| !desired_keys.contains(key)),
        );
    }
    read_live_config(session, wanted, &mut cluster_view).await?;
    let reloads = reloads(rendered, candidates, &cluster_view);
    Ok((cluster_view, reloads))
}

/// Config (ConfigMaps, Secrets) referenced but not desired, as the cluster holds it.
async fn read_live_config(
    session: &Session,
    wanted: BTreeSet<ObjectKey>,
    view: &mut ClusterView,
) -> Result<(), ClusterError> {
    for key in wanted {
        let Some(resource) = session.resources.get("", "v1", &key.kind) else {
            continue;
        };
        let namespace = key.namespace.as_deref();
        if let Some(value) = cluster::get(&session.client, resource, namespace, &key.name).await? {
            view.live_config.insert(key, value);
        }
    }
    Ok(())
}

/// The opted-in workloads whose config is known (desired, or live), with the hash their
/// pod template should carry.
fn reloads(
    rendered: &Rendered,
    candidates: Vec<(Resource, Value)>,
    view: &ClusterView,
) -> Vec<Reload> {
    let desired_config: BTreeMap<ObjectKey, &Value> = rendered
        .objects
        .iter()
        .filter(|o| o.group().is_empty() && matches!(o.kind(), "ConfigMap" | "Secret"))
        .map(|o| (o.key(), &o.value))
        .collect();
    let mut reloads = Vec::new();
    for (resource, item) in candidates {
        let mut found = BTreeMap::new();
        for (reference, key) in config_keys(&resource, &item) {
            let value = desired_config
                .get(&key)
                .copied()
                .or_else(|| view.live_config.get(&key));
            if let Some(v) = value {
                found.insert(reference, config_hash::content(v));
            }
        }
        if found.is_empty() {
            continue;
        }
        reloads.push(Reload {
            resource,
            live: item,
            hash: config_hash::hash(&found),
        });
    }
    reloads
}

/// The live workloads that opted in to reloads, by kind: what [`read_opted_in`] reads.
pub type OptedIn = Vec<(Resource, Vec<Value>)>;

/// Live workloads that opted in with the label: one label-selected LIST per workload kind
/// across all namespaces, the three at once. They do not depend on the desired state, so a
/// run reads them as soon as it is connected, beside rendering.
pub async fn read_opted_in(session: &Session) -> Result<OptedIn, ClusterError> {
    let selector = format!("{}=true", config_hash::RELOAD_LABEL);
    let lists = ["Deployment", "StatefulSet", "DaemonSet"]
        .into_iter()
        .filter_map(|kind| session.resources.get("apps", "v1", kind).cloned())
        .map(|resource| opted_in(session, resource, &selector));
    let mut found = Vec::new();
    for listed in futures::future::join_all(lists).await {
        found.extend(listed?);
    }
    Ok(found)
}

/// The live workloads of one kind labelled `selector`, across all namespaces; `None` when
/// this client may not list them so (reloads are then skipped: asking costs as much as
/// trying, and a 403 answers too).
async fn opted_in(
    session: &Session,
    resource: Resource,
    selector: &str,
) -> Result<Option<(Resource, Vec<Value>)>, ClusterError> {
    let skip = |why: &str| {
        tracing::debug!(
            "not looking for {} labelled {selector}: {why}",
            resource.api.plural
        )
    };
    if session.known_list_right(&resource) == Some(false) {
        skip("listing them across namespaces is not allowed");
        return Ok(None);
    }
    let mut items = Vec::new();
    let query = cluster::ListQuery {
        labels: Some(selector),
        stats: Some(&session.stats),
        ..cluster::ListQuery::default()
    };
    match cluster::list_each(&session.client, &resource, None, query, |item| {
        items.push(item)
    })
    .await
    {
        Ok(()) => Ok(Some((resource, items))),
        Err(err) if err.code() == Some(403) => {
            skip("listing them across namespaces is forbidden");
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

/// The ConfigMaps/Secrets a live workload's pod template references, with their keys.
fn config_keys(resource: &Resource, item: &Value) -> Vec<(ConfigRef, ObjectKey)> {
    let pointer = config_hash::pod_template_pointer(&resource.api.group, &resource.api.kind)
        .unwrap_or("/spec/template");
    let namespace = item.pointer("/metadata/namespace").and_then(Value::as_str);
    item.pointer(pointer)
        .map(|template| config_hash::reference_keys(template, namespace))
        .unwrap_or_default()
}
