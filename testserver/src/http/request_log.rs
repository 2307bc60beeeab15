//! The request log: one [`RequestRecord`] per request, as the tests read it back.

use super::routing::{ApiRequest, Route};
use super::shared::Shared;
use crate::faults::RequestRecord;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A request log entry. A watch's body is still streaming when it is logged, so its byte
/// count lives in a counter the stream updates.
pub(crate) struct Logged {
    pub record: RequestRecord,
    pub streamed: Option<Arc<AtomicU64>>,
}

impl Logged {
    pub fn snapshot(&self) -> RequestRecord {
        let mut r = self.record.clone();
        if let Some(n) = &self.streamed {
            r.response_bytes = n.load(Ordering::Relaxed);
        }
        r
    }
}

/// The log entry of a request, before its answer is known.
pub(crate) fn record_of(request: &ApiRequest, raw_query: String) -> RequestRecord {
    let (group, resource, namespace, name, subresource) = match request.route {
        Route::Resource {
            group,
            plural,
            namespace,
            name,
            sub,
            ..
        } => (
            group.clone(),
            plural.clone(),
            namespace.clone(),
            name.clone(),
            sub.clone(),
        ),
        _ => (String::new(), String::new(), None, None, None),
    };
    let method = request.method;
    RequestRecord {
        method: method.to_string(),
        verb: request.verb,
        path: request.path.to_string(),
        query: raw_query,
        group,
        resource,
        subresource,
        namespace,
        name,
        dry_run: request.query.all("dryRun").contains(&"All")
            || (method == "DELETE"
                && serde_json::from_slice::<Value>(request.body)
                    .ok()
                    .and_then(|o| o.get("dryRun").cloned())
                    == Some(serde_json::json!(["All"]))),
        field_manager: request.query.get("fieldManager").map(str::to_string),
        content_type: (!request.content_type.is_empty()).then(|| request.content_type.to_string()),
        user_agent: (!request.user_agent.is_empty()).then(|| request.user_agent.to_string()),
        status: None,
        faulted: false,
        response_bytes: 0,
        impersonated: request.user.map(|u| u.name.clone()),
    }
}

/// Log a request once answered; `streamed` counts a watch's bytes as they go out.
pub(crate) fn log(shared: &Shared, record: RequestRecord, streamed: Option<Arc<AtomicU64>>) {
    shared.log.lock().push(Logged { record, streamed });
}
