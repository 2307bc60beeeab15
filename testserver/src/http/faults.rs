//! Fault injection: the faults a test set up, matched against each request before it
//! reaches the store (delays add up; a status, throttle or dropped connection answers it).

use super::request_log::log;
use super::response::{json_outcome, ByteCount, Outcome, Payload, Resp};
use super::shared::Shared;
use crate::errors::ApiError;
use crate::faults::{FaultAction, RequestRecord, Verb};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::Notify;

/// Finds the faults for a request: delays add up; the first status/drop fault wins.
pub(super) fn take_faults(
    shared: &Shared,
    method: &str,
    verb: Verb,
    path: &str,
) -> (Duration, Option<FaultAction>) {
    let mut faults = shared.faults.lock();
    let mut delay = Duration::ZERO;
    let mut action = None;
    for f in faults.iter_mut() {
        if !f.matches(method, verb, path) {
            continue;
        }
        match &f.action {
            FaultAction::Delay(d) => {
                delay += *d;
                f.consume();
            }
            other if action.is_none() => {
                action = Some(other.clone());
                f.consume();
            }
            _ => {}
        }
    }
    faults.retain(|f| !f.exhausted());
    (delay, action)
}

/// Answer a request with its fault, if it has one that answers (logging it as faulted);
/// otherwise give the record back for the request to go on. A dropped connection never
/// answers: the connection is closed.
pub(super) async fn answer(
    action: Option<FaultAction>,
    mut record: RequestRecord,
    shared: &Shared,
    kill: &Notify,
    count: &ByteCount,
) -> Result<Resp, RequestRecord> {
    match action {
        Some(FaultAction::Drop) => {
            record.faulted = true;
            log(shared, record, None);
            // Closing the connection: the connection task drops the socket when notified.
            kill.notify_one();
            std::future::pending::<()>().await;
            unreachable!("pending never completes")
        }
        Some(FaultAction::Throttle { retry_after }) => {
            // staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go, tooManyRequests:
            // `Retry-After` and http.Error's plain text.
            let out = Outcome {
                code: 429,
                payload: Payload::Text("Too many requests, please try again later.\n".into()),
                content_type: "text/plain; charset=utf-8".into(),
                headers: vec![
                    ("retry-after".into(), retry_after.to_string()),
                    ("x-content-type-options".into(), "nosniff".into()),
                ],
            };
            record.faulted = true;
            record.status = Some(429);
            let resp = out.into_response(count);
            record.response_bytes = count.this.load(Ordering::Relaxed);
            log(shared, record, None);
            Ok(resp)
        }
        Some(FaultAction::Status {
            code,
            retry_after,
            message,
        }) => {
            let mut err = ApiError::from_code(code, message);
            if let Some(secs) = retry_after {
                err.headers.push(("retry-after".into(), secs.to_string()));
                err.details = Some(serde_json::json!({"retryAfterSeconds": secs}));
            }
            record.faulted = true;
            record.status = Some(code);
            let resp = json_outcome(Err(err)).into_response(count);
            record.response_bytes = count.this.load(Ordering::Relaxed);
            log(shared, record, None);
            Ok(resp)
        }
        _ => Err(record),
    }
}
