//! Replace: delete an object and create it again, for updates the API refuses as immutable
//! (README "Per-object policies"). Only where the object's policy allows it: a Job, or an
//! object annotated `tend.dev/replace: on-immutable`; any other immutable update fails with
//! its one-line cause.
//!
//! Whether an update is immutable is the server's answer (a 422 on the apply), not a
//! comparison of pod templates here: the live template carries server defaults and the labels
//! the Job controller adds, and only the server knows what may still change (a suspended Job's
//! scheduling fields), so asking is exact where comparing would guess. It costs nothing extra:
//! the apply is sent anyway.

use super::options::EngineOptions;
use crate::cluster::{self, ClusterError, Resource};
use crate::object::ObjectKey;
use crate::render::policy;
use kube::Client;
use serde_json::Value;
use std::time::{Duration, Instant};

/// What writing one object did: the server's result, and why it was replaced if it was.
pub struct Written {
    pub value: Value,
    pub replaced: Option<String>,
}

/// Server-side apply `desired`; replace it instead when the plan says so (`planned`, the
/// reason), or when the server refuses the apply as immutable and the object's policy allows.
pub async fn apply_or_replace(
    client: &Client,
    resource: &Resource,
    desired: &Value,
    planned: Option<&str>,
    opts: &EngineOptions,
) -> Result<Written, String> {
    if let Some(reason) = planned {
        let value = replace(client, resource, desired, opts).await?;
        return Ok(Written {
            value,
            replaced: Some(reason.to_string()),
        });
    }
    let applied = apply(client, resource, desired, opts).await;
    let err = match applied {
        Ok(value) => {
            return Ok(Written {
                value,
                replaced: None,
            })
        }
        Err(err) => err,
    };
    let Some(cause) = err.immutable_cause() else {
        return Err(err.to_string());
    };
    let key = ObjectKey::of_value(desired);
    let name = key.kind_and_name();
    match policy::replace_on_immutable(desired) {
        Some(why) => {
            tracing::info!("replacing {name}: {cause} ({why})");
            let value = replace(client, resource, desired, opts).await?;
            Ok(Written {
                value,
                replaced: Some(format!("{cause} ({why})")),
            })
        }
        None => Err(crate::problem::with_server_text(
            format!(
                "{}: {cause}; annotate it {}: {} to have tend delete and recreate it",
                err.attempted().unwrap_or("cannot apply"),
                policy::REPLACE_ANNOTATION,
                policy::ON_IMMUTABLE
            ),
            err.server_message(),
        )),
    }
}

/// Delete (background propagation: a Job's pods are collected afterwards, they do not hold up
/// the new Job), wait until the object is gone within `--timeout`, then create it from git.
pub(super) async fn replace(
    client: &Client,
    resource: &Resource,
    desired: &Value,
    opts: &EngineOptions,
) -> Result<Value, String> {
    let key = ObjectKey::of_value(desired);
    let namespace = key.namespace.as_deref();
    let text = |e: ClusterError| e.to_string();
    cluster::delete(client, resource, namespace, &key.name, false)
        .await
        .map_err(text)?;
    let deadline = Instant::now() + opts.timeout;
    while cluster::get(client, resource, namespace, &key.name)
        .await
        .map_err(text)?
        .is_some()
    {
        if Instant::now() >= deadline {
            return Err(format!(
                "cannot replace {}: deleted, but still there after --timeout {}s (a finalizer?); the next run creates it once it is gone",
                key.kind_and_name(),
                opts.timeout.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    apply(client, resource, desired, opts).await.map_err(text)
}

/// One server-side apply of `desired` as tend writes everything.
async fn apply(
    client: &Client,
    resource: &Resource,
    desired: &Value,
    opts: &EngineOptions,
) -> Result<Value, ClusterError> {
    let force = opts.force_conflicts;
    cluster::apply(
        client,
        resource,
        desired,
        crate::FIELD_MANAGER,
        force,
        false,
    )
    .await
}
