//! The HTTP layer: the hyper server and one request's way through it: parsed and logged
//! ([`request_log`]), faults injected ([`faults`]), routed to its handler ([`routing`]).

mod faults;
mod request_log;
mod response;
mod routing;
mod shared;
mod watch;

pub(crate) use request_log::Logged;
pub(crate) use shared::Shared;

use crate::store::Query;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::Request;
use hyper_util::rt::TokioIo;
use response::{ByteCount, Outcome, Payload, Resp};
use routing::{dispatch, route, verb_of, ApiRequest};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Notify};

async fn handle(
    shared: Arc<Shared>,
    kill: Arc<Notify>,
    req: Request<Incoming>,
) -> Result<Resp, Infallible> {
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let raw_query = req.uri().query().unwrap_or("").to_string();
    let header = |k: &str| {
        req.headers()
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let content_type = header("content-type");
    let accept = header("accept");
    let user_agent = header("user-agent");
    let groups: Vec<String> = req
        .headers()
        .get_all("impersonate-group")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    let user = crate::rbac::User::impersonated(&header("impersonate-user"), &groups);
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let query = Query::parse(&raw_query);
    let route = route(&path);
    let verb = verb_of(&method, &route, &query, &content_type);
    let request = ApiRequest {
        method: &method,
        path: &path,
        route: &route,
        verb,
        query: &query,
        body: &body,
        content_type: &content_type,
        accept: &accept,
        user_agent: &user_agent,
        user: user.as_ref().ok().and_then(Option::as_ref),
    };
    let record = request_log::record_of(&request, raw_query);
    let count = ByteCount {
        total: shared.response_bytes.clone(),
        this: Arc::new(AtomicU64::new(0)),
    };

    let (delay, action) = faults::take_faults(&shared, &method, verb, &path);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let mut record = match faults::answer(action, record, &shared, &kill, &count).await {
        Ok(faulted) => return Ok(faulted),
        Err(record) => record,
    };

    let mut out = match &user {
        Ok(_) => dispatch(&shared, &request, &count),
        Err(e) => response::internal_error(&path, e),
    };
    // The ServiceAccount admission plugin looks a missing `default` ServiceAccount up
    // again, live, 10 times 100-200 ms apart (the controller is expected to create it any
    // moment) before it refuses the Pod.
    for _ in 1..SA_LOOKUP_ATTEMPTS {
        if !default_service_account_missing(&out) {
            break;
        }
        tokio::time::sleep(SA_LOOKUP_INTERVAL).await;
        out = dispatch(&shared, &request, &count);
    }
    record.status = Some(out.code);
    let streamed = matches!(out.payload, Payload::Stream(_)).then(|| count.this.clone());
    let resp = out.into_response(&count);
    record.response_bytes = count.this.load(Ordering::Relaxed);
    request_log::log(&shared, record, streamed);
    Ok(resp)
}

const SA_LOOKUP_ATTEMPTS: u32 = 10;
const SA_LOOKUP_INTERVAL: Duration = Duration::from_millis(150);

fn default_service_account_missing(out: &Outcome) -> bool {
    out.code == 403
        && matches!(&out.payload, Payload::Json(s) if s["message"].as_str().is_some_and(|m| {
            m.ends_with("serviceaccount \"default\" not found")
        }))
}

/// Runs the simulated controllers' queued work when it is due.
async fn controllers(shared: Arc<Shared>) {
    loop {
        let due = shared.state.lock().next_controller_due();
        match due {
            Some(at) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => {}
                    _ = shared.controllers.notified() => {}
                }
            }
            None => shared.controllers.notified().await,
        }
        shared
            .state
            .lock()
            .run_controllers(std::time::Instant::now());
    }
}

pub(crate) async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let controllers = tokio::spawn(controllers(shared.clone()));
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                tokio::spawn(async move {
                    let kill = Arc::new(Notify::new());
                    let k2 = kill.clone();
                    let svc = service_fn(move |req| handle(shared.clone(), k2.clone(), req));
                    let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
                    tokio::select! {
                        _ = conn => {}
                        _ = kill.notified() => {}
                    }
                });
            }
        }
    }
    controllers.abort();
}
