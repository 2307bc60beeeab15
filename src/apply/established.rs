//! CRDs waited on until Established, before the stages that use them.

use crate::cluster::{self, Session};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Wait until the named CRDs report Established (bounded by `timeout`).
pub async fn established(session: &Session, names: &[String], timeout: Duration) {
    let Some(resource) = session
        .resources
        .get("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
        .cloned()
    else {
        return;
    };
    let deadline = Instant::now() + timeout;
    for name in names {
        loop {
            let established = match cluster::get(&session.client, &resource, None, name).await {
                Ok(Some(crd)) => crd
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Established" && c["status"] == "True")
                    }),
                _ => false,
            };
            if established || Instant::now() >= deadline {
                if !established {
                    tracing::warn!("CRD {name} did not become Established within {timeout:?}");
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
