//! Pod logs: the last lines of a pod's log, for the report of a hook that failed.

use super::retry::retry;
use super::ClusterError;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use kube::Client;

/// The last `lines` lines of the pod's log (its first container unless it has one only).
pub async fn pod_log_tail(
    client: &Client,
    namespace: &str,
    pod: &str,
    lines: i64,
) -> Result<Vec<String>, ClusterError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let params = LogParams {
        tail_lines: Some(lines),
        ..LogParams::default()
    };
    let text = retry("request", || api.logs(pod, &params))
        .await
        .map_err(|source| ClusterError::Api {
            what: format!("cannot read the log of Pod {namespace}/{pod}"),
            source,
        })?;
    Ok(text.lines().map(str::to_string).collect())
}
