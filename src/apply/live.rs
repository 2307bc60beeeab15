//! What tend's kinds need to know about the cluster before they can be rendered online:
//! CopyRule sources, namespaces and objects in the way; uids of tend's objects (for
//! ownerReferences); ConfigMaps/Secrets referenced by workloads but not in git; and the
//! live workloads that opted in to config-hash reloads with `tend.dev/reload: "true"`.

use super::engine::EngineError;
use super::inventory;
use crate::cluster::Session;
use crate::cluster::{self, Resource};
use crate::kinds::TendObject;
use crate::render::config_hash::{self, ConfigRef};
use crate::render::copies::LiveView;
use crate::render::object::{Object, ObjectKey};
use crate::render::Rendered;
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
        crate::cluster::key_of(&self.live)
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

/// Everything read for online rendering.
#[derive(Debug, Default)]
pub struct LiveContext {
    pub view: LiveView,
    pub live_config: BTreeMap<ObjectKey, Value>,
    pub reloads: Vec<Reload>,
}

fn tend_objects(rendered: &Rendered) -> Vec<TendObject> {
    rendered
        .objects
        .iter()
        .filter(|o| o.group() == crate::GROUP && o.origin.generated_by.is_none())
        .filter_map(|o| {
            let value = o.value.clone();
            Some(match o.kind() {
                "CopyRule" => TendObject::CopyRule(serde_json::from_value(value).ok()?),
                "RegistryMirror" => TendObject::RegistryMirror(serde_json::from_value(value).ok()?),
                "ImmortalContainer" => {
                    TendObject::ImmortalContainer(serde_json::from_value(value).ok()?)
                }
                "ChaosAgent" => TendObject::ChaosAgent(serde_json::from_value(value).ok()?),
                _ => return None,
            })
        })
        .collect()
}

fn core(session: &Session, kind: &str) -> Option<Resource> {
    session.resources.get("", "v1", kind).cloned()
}

/// Read what the offline rendering lacks. `rendered` is the offline result.
pub async fn gather(
    session: &Session,
    rendered: &Rendered,
    applyset_id: &str,
    state_namespace: &str,
) -> Result<LiveContext, EngineError> {
    let client = &session.client;
    let mut ctx = LiveContext::default();
    ctx.view.applyset_id = applyset_id.to_string();
    ctx.view
        .reserved_namespaces
        .insert(state_namespace.to_string());
    let tend = tend_objects(rendered);

    // uids of tend's objects that exist, per kind (one LIST each).
    let kinds: BTreeSet<&str> = tend
        .iter()
        .map(|t| t.tend_kind().kind())
        .filter(|k| matches!(*k, "RegistryMirror" | "ImmortalContainer"))
        .collect();
    for kind in kinds {
        if let Some(resource) = session.resources.get(crate::GROUP, crate::VERSION, kind) {
            for item in cluster::list(client, resource, None, None).await? {
                if let Some(uid) = item.pointer("/metadata/uid").and_then(Value::as_str) {
                    ctx.view
                        .uids
                        .insert(crate::cluster::key_of(&item), uid.to_string());
                }
            }
        }
    }

    // CopyRules: namespaces, sources, and whatever sits where copies would go.
    let rules: Vec<_> = tend
        .iter()
        .filter_map(|t| match t {
            TendObject::CopyRule(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    if !rules.is_empty() {
        if let Some(ns) = core(session, "Namespace") {
            ctx.view.namespaces = cluster::list(client, &ns, None, None).await?;
        }
        for rule in &rules {
            let kind = rule.spec.kind.as_str();
            let Some(resource) = core(session, kind) else {
                continue;
            };
            let name = rule.metadata.name.clone().unwrap_or_default();
            let selector = rule.spec.selector.to_query();
            let sources = match cluster::list(
                client,
                &resource,
                Some(&rule.spec.source_namespace),
                Some(&selector),
            )
            .await
            {
                Ok(items) => items,
                Err(err) if err.code() == Some(404) => Vec::new(),
                Err(err) => return Err(err.into()),
            };
            let mut names: BTreeSet<String> = sources
                .iter()
                .filter_map(|s| {
                    s.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .collect();
            names.extend(
                rendered
                    .objects
                    .iter()
                    .filter(|o| {
                        o.group().is_empty()
                            && o.kind() == kind
                            && o.namespace() == Some(rule.spec.source_namespace.as_str())
                    })
                    .map(|o| o.name().to_string()),
            );
            for source_name in names {
                let field = format!("metadata.name={source_name}");
                for item in
                    cluster::list_selected(client, &resource, None, None, Some(&field)).await?
                {
                    ctx.view
                        .same_named
                        .insert(crate::cluster::key_of(&item), item);
                }
            }
            ctx.view.copy_sources.insert(name, sources);
        }
    }

    // Live workloads that opted in to reloads (three cluster-wide LISTs).
    let desired_keys: BTreeSet<ObjectKey> = rendered.objects.iter().map(Object::key).collect();
    let mut candidates = Vec::new();
    for kind in ["Deployment", "StatefulSet", "DaemonSet"] {
        let Some(resource) = session.resources.get("apps", "v1", kind).cloned() else {
            continue;
        };
        for item in cluster::list(client, &resource, None, None).await? {
            let opted_in = item
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(config_hash::RELOAD_ANNOTATION))
                .and_then(Value::as_str)
                == Some("true");
            if opted_in
                && !desired_keys.contains(&crate::cluster::key_of(&item))
                && !inventory::is_member(&item, applyset_id)
            {
                candidates.push((resource.clone(), item));
            }
        }
    }

    // ConfigMaps/Secrets referenced but not in git: read them.
    let mut wanted: BTreeSet<ObjectKey> = rendered.missing_config.clone();
    for (resource, item) in &candidates {
        let pointer = config_hash::pod_template_pointer(&resource.api.group, &resource.api.kind)
            .unwrap_or("/spec/template");
        let namespace = item
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        for ConfigRef { kind, name } in item
            .pointer(pointer)
            .map(config_hash::references)
            .unwrap_or_default()
        {
            let key = ObjectKey {
                group: String::new(),
                kind: kind.to_string(),
                namespace: namespace.clone(),
                name,
            };
            if !desired_keys.contains(&key) {
                wanted.insert(key);
            }
        }
    }
    for key in wanted {
        let Some(resource) = core(session, &key.kind) else {
            continue;
        };
        match cluster::get(client, &resource, key.namespace.as_deref(), &key.name).await {
            Ok(Some(value)) => {
                ctx.live_config.insert(key, value);
            }
            Ok(None) => {}
            Err(err) => return Err(err.into()),
        }
    }

    let desired_config: BTreeMap<ObjectKey, Value> = rendered
        .objects
        .iter()
        .filter(|o| o.group().is_empty() && matches!(o.kind(), "ConfigMap" | "Secret"))
        .map(|o| (o.key(), o.value.clone()))
        .collect();
    for (resource, item) in candidates {
        let pointer = config_hash::pod_template_pointer(&resource.api.group, &resource.api.kind)
            .unwrap_or("/spec/template");
        let namespace = item
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut found = BTreeMap::new();
        for reference in item
            .pointer(pointer)
            .map(config_hash::references)
            .unwrap_or_default()
        {
            let key = ObjectKey {
                group: String::new(),
                kind: reference.kind.to_string(),
                namespace: namespace.clone(),
                name: reference.name.clone(),
            };
            if let Some(v) = desired_config
                .get(&key)
                .or_else(|| ctx.live_config.get(&key))
            {
                found.insert(reference, config_hash::content(v));
            }
        }
        if found.is_empty() {
            continue;
        }
        ctx.reloads.push(Reload {
            resource,
            live: item,
            hash: config_hash::hash(&found),
        });
    }
    Ok(ctx)
}
