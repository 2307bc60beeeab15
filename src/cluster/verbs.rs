//! The verbs tend uses on `DynamicObject`s, as JSON values. Every call goes through [`call`]:
//! retried with backoff when transient, and its error names what was attempted.

use super::listed::{name_kind, Listed};
use super::retry::retry;
use super::{ClusterError, Resource};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::Client;
use serde_json::Value;
use std::future::Future;

/// Run one API call with retries; on failure, say what was attempted (`what`).
async fn call<T, F, Fut>(what: impl FnOnce() -> String, op: F) -> Result<T, ClusterError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    retry("request", op)
        .await
        .map_err(|source| ClusterError::Api {
            what: what(),
            source,
        })
}

/// A returned object as JSON.
fn json_of<T: serde::Serialize>(object: T) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn api_for(client: &Client, resource: &Resource, namespace: Option<&str>) -> Api<DynamicObject> {
    match (resource.namespaced, namespace) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource.api),
        _ => Api::all_with(client.clone(), &resource.api),
    }
}

/// An object's namespace (if any) and name.
fn coordinates(object: &Value) -> (Option<&str>, &str) {
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str);
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    (namespace, name)
}

fn describe(resource: &Resource, namespace: Option<&str>, name: &str) -> String {
    let ns = namespace.map(|n| format!("{n}/")).unwrap_or_default();
    format!("{} {}{}", resource.api.kind, ns, name)
}

/// What to LIST: label and field selectors, and whether only metadata is needed.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListQuery<'a> {
    /// Where to count the bytes read, if anywhere.
    pub stats: Option<&'a super::RequestStats>,
    pub labels: Option<&'a str>,
    pub fields: Option<&'a str>,
    /// Ask for `PartialObjectMetadataList` (names, labels, owners; no spec, data or status):
    /// a fraction of the bytes when only metadata is needed.
    pub metadata_only: bool,
}

/// One page of a LIST, parsed once: items stay JSON values (or [`Listed`] items), nothing
/// else is kept.
#[derive(serde::Deserialize)]
#[serde(bound = "T: serde::de::DeserializeOwned")]
struct Page<T> {
    /// A real apiserver answers an empty `PartialObjectMetadataList` with `"items": null`.
    #[serde(default = "Vec::new", deserialize_with = "null_as_empty")]
    items: Vec<T>,
    #[serde(default)]
    metadata: PageMeta,
}

/// `null` (or absent, with `default`) reads as an empty list.
fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    use serde::Deserialize;
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[derive(serde::Deserialize, Default)]
struct PageMeta {
    #[serde(rename = "continue", default)]
    next: Option<String>,
}

/// LIST a resource in a namespace (or cluster-wide), following `continue`, handing each item
/// to `each` as soon as its page is parsed (so a caller can keep only what it needs). Items
/// get the resource's apiVersion and kind, which LIST items lack.
pub async fn list_each(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    query: ListQuery<'_>,
    mut each: impl FnMut(Value),
) -> Result<(), ClusterError> {
    list_pages(client, resource, namespace, query, |mut item: Value| {
        name_kind(&mut item, resource);
        each(item)
    })
    .await
}

/// [`list_each`] with each item read only as far as its identity ([`Listed`]).
pub async fn list_listed(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    query: ListQuery<'_>,
    each: impl FnMut(Listed),
) -> Result<(), ClusterError> {
    list_pages(client, resource, namespace, query, each).await
}

async fn list_pages<T: serde::de::DeserializeOwned>(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    query: ListQuery<'_>,
    mut each: impl FnMut(T),
) -> Result<(), ClusterError> {
    let url = api_for(client, resource, namespace)
        .resource_url()
        .to_string();
    let request = kube::core::Request::new(url);
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(500);
        if let Some(sel) = query.labels {
            params = params.labels(sel);
        }
        if let Some(sel) = query.fields {
            params = params.fields(sel);
        }
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page: Page<T> = call(
            || {
                format!(
                    "cannot list {}{}",
                    resource.api.plural,
                    namespace
                        .map(|n| format!(" in namespace {n}"))
                        .unwrap_or_default()
                )
            },
            || {
                let built = if query.metadata_only {
                    request.list_metadata(&params)
                } else {
                    request.list(&params)
                };
                async {
                    let built = built.map_err(kube::Error::BuildRequest)?;
                    let text = client.request_text(built).await?;
                    if let Some(stats) = query.stats {
                        stats.record_list_bytes(text.len());
                    }
                    serde_json::from_str::<Page<T>>(&text).map_err(kube::Error::SerdeError)
                }
            },
        )
        .await?;
        page.items.into_iter().for_each(&mut each);
        match page.metadata.next.filter(|c| !c.is_empty()) {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    Ok(())
}

/// LIST every object of a resource in a namespace (or cluster-wide) matching `label_selector`.
pub async fn list(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<Value>, ClusterError> {
    list_selected(client, resource, namespace, label_selector, None).await
}

/// [`list`] with a field selector too (e.g. `metadata.name=x` across all namespaces).
pub async fn list_selected(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    label_selector: Option<&str>,
    field_selector: Option<&str>,
) -> Result<Vec<Value>, ClusterError> {
    let mut out = Vec::new();
    let query = ListQuery {
        labels: label_selector,
        fields: field_selector,
        ..ListQuery::default()
    };
    list_each(client, resource, namespace, query, |item| out.push(item)).await?;
    Ok(out)
}

/// Whether this client may LIST `resource` across all namespaces, asked once with a
/// SelfSubjectAccessReview. Any failure to ask (an old or restricted server) counts as no.
pub async fn can_list_cluster_wide(client: &Client, resource: &Resource) -> bool {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(resource.api.group.clone()),
                resource: Some(resource.api.plural.clone()),
                verb: Some("list".into()),
                namespace: Some(String::new()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    match api.create(&kube::api::PostParams::default(), &review).await {
        Ok(answer) => answer.status.is_some_and(|s| s.allowed),
        Err(err) => {
            tracing::debug!(
                "cannot ask whether {} may be listed cluster-wide ({err}); listing per namespace",
                resource.api.plural
            );
            false
        }
    }
}

/// GET one object; `None` when it does not exist.
pub async fn get(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Value>, ClusterError> {
    let api = api_for(client, resource, namespace);
    call(
        || format!("cannot read {}", describe(resource, namespace, name)),
        || api.get_opt(name),
    )
    .await
    .map(|o| o.map(json_of))
}

/// Server-side apply `object` with field manager `manager`.
pub async fn apply(
    client: &Client,
    resource: &Resource,
    object: &Value,
    manager: &str,
    force: bool,
    dry_run: bool,
) -> Result<Value, ClusterError> {
    let (namespace, name) = coordinates(object);
    let api = api_for(client, resource, namespace);
    let mut params = PatchParams::apply(manager);
    params.force = force;
    params.dry_run = dry_run;
    // Unknown fields are errors, not silently pruned (tend's kinds deny unknown fields too).
    params.field_validation = Some(kube::api::ValidationDirective::Strict);
    let patch = Patch::Apply(object);
    call(
        || {
            format!(
                "cannot {}apply {}",
                if dry_run { "dry-run " } else { "" },
                describe(resource, namespace, name)
            )
        },
        || api.patch(name, &params, &patch),
    )
    .await
    .map(json_of)
}

/// Server-side apply to the status subresource.
pub async fn apply_status(
    client: &Client,
    resource: &Resource,
    object: &Value,
    manager: &str,
) -> Result<Value, ClusterError> {
    let (namespace, name) = coordinates(object);
    let api = api_for(client, resource, namespace);
    let params = PatchParams::apply(manager).force();
    let patch = Patch::Apply(object);
    call(
        || {
            format!(
                "cannot update the status of {}",
                describe(resource, namespace, name)
            )
        },
        || api.patch_status(name, &params, &patch),
    )
    .await
    .map(json_of)
}

/// DELETE an object (background propagation). Already gone counts as success.
pub async fn delete(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
    dry_run: bool,
) -> Result<(), ClusterError> {
    let api = api_for(client, resource, namespace);
    let mut params = DeleteParams::background();
    params.dry_run = dry_run;
    match retry("delete", || api.delete(name, &params)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(ClusterError::Api {
            what: format!("cannot delete {}", describe(resource, namespace, name)),
            source,
        }),
    }
}

/// Replace (PUT) an object, with optimistic concurrency on its resourceVersion. Used for the
/// lock Lease, where a 409 means somebody else won the race.
pub async fn replace(
    client: &Client,
    resource: &Resource,
    object: &Value,
) -> Result<Value, ClusterError> {
    let (namespace, name) = coordinates(object);
    let api = api_for(client, resource, namespace);
    let obj: DynamicObject =
        serde_json::from_value(object.clone()).map_err(|e| ClusterError::Config(e.to_string()))?;
    let post = kube::api::PostParams::default();
    call(
        || format!("cannot update {}", describe(resource, namespace, name)),
        || api.replace(name, &post, &obj),
    )
    .await
    .map(json_of)
}

/// Create (POST) an object; 409 AlreadyExists is returned as an error with code 409.
pub async fn create(
    client: &Client,
    resource: &Resource,
    object: &Value,
) -> Result<Value, ClusterError> {
    let (namespace, name) = coordinates(object);
    let api = api_for(client, resource, namespace);
    let obj: DynamicObject =
        serde_json::from_value(object.clone()).map_err(|e| ClusterError::Config(e.to_string()))?;
    let post = kube::api::PostParams::default();
    call(
        || format!("cannot create {}", describe(resource, namespace, name)),
        || api.create(&post, &obj),
    )
    .await
    .map(json_of)
}

/// JSON merge patch an existing object, recorded in managedFields as an Update by `manager`
/// (`tend chaos` uses its own manager, so the next `tend apply` takes the fields back). A
/// missing object is an error (404), never created.
pub async fn merge_patch(
    client: &Client,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
    patch: &Value,
    manager: &str,
) -> Result<Value, ClusterError> {
    let api = api_for(client, resource, namespace);
    let params = PatchParams {
        field_manager: Some(manager.to_string()),
        ..PatchParams::default()
    };
    let patch = Patch::Merge(patch);
    call(
        || format!("cannot patch {}", describe(resource, namespace, name)),
        || api.patch(name, &params, &patch),
    )
    .await
    .map(json_of)
}
