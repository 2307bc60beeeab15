//! The HTTP layer: hyper server, routing, fault injection and the request log.

use crate::discovery::{self, ResourceDef};
use crate::errors::ApiError;
use crate::faults::{Fault, FaultAction, RequestRecord, Verb};
use crate::negotiate::{negotiate, partial, represent, Representation};
use crate::store::{Call, Query, State, WatchStart};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::body::{Frame, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc, oneshot, Notify};

pub(crate) struct Shared {
    pub state: Mutex<State>,
    pub faults: Mutex<Vec<Fault>>,
    pub log: Mutex<Vec<Logged>>,
    pub aggregated_discovery: bool,
    /// When set, the client may not LIST namespaced resources across all namespaces: such
    /// LISTs are 403 and SelfSubjectAccessReviews for them say so.
    pub deny_cluster_wide_lists: std::sync::atomic::AtomicBool,
    /// Bytes of response bodies sent since the last reset.
    pub response_bytes: Arc<AtomicU64>,
    /// Woken when the simulated controllers have new work queued.
    pub controllers: Notify,
}

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

/// Counts bytes of a response body: the server-wide total and this request's own.
#[derive(Clone)]
struct ByteCount {
    total: Arc<AtomicU64>,
    this: Arc<AtomicU64>,
}

impl ByteCount {
    fn add(&self, n: usize) {
        self.total.fetch_add(n as u64, Ordering::Relaxed);
        self.this.fetch_add(n as u64, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Route {
    Version,
    Api,
    CoreV1,
    Apis,
    Group(String),
    GroupVersion(String, String),
    Resource {
        group: String,
        version: String,
        plural: String,
        namespace: Option<String>,
        name: Option<String>,
        sub: Option<String>,
    },
    Unknown,
}

fn route(path: &str) -> Route {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Route::Version,
        ["api"] => return Route::Api,
        ["api", "v1"] => return Route::CoreV1,
        ["apis"] => return Route::Apis,
        ["apis", g] => return Route::Group(g.to_string()),
        ["apis", g, v] => return Route::GroupVersion(g.to_string(), v.to_string()),
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Route::Unknown,
    };
    let s = |x: &&str| Some(x.to_string());
    let core_ns_sub =
        group.is_empty() && rest.len() == 3 && matches!(rest[2], "status" | "finalize");
    let (namespace, tail): (Option<String>, &[&str]) =
        if rest.len() >= 3 && rest[0] == "namespaces" && !core_ns_sub {
            (s(&rest[1]), &rest[2..])
        } else {
            (None, rest)
        };
    if tail.is_empty() || tail.len() > 3 || tail.iter().any(|t| t.is_empty()) {
        return Route::Unknown;
    }
    Route::Resource {
        group: group.to_string(),
        version: version.to_string(),
        plural: tail[0].to_string(),
        namespace,
        name: tail.get(1).map(|n| n.to_string()),
        sub: tail.get(2).map(|n| n.to_string()),
    }
}

fn verb_of(method: &str, route: &Route, query: &Query, content_type: &str) -> Verb {
    match route {
        Route::Unknown => Verb::Other,
        Route::Resource { name, .. } => match (method, name.is_some()) {
            ("GET", true) => Verb::Get,
            ("GET", false) => {
                if matches!(query.get("watch"), Some("true" | "1")) {
                    Verb::Watch
                } else {
                    Verb::List
                }
            }
            ("POST", _) => Verb::Create,
            ("PUT", _) => Verb::Update,
            ("PATCH", _) if content_type.starts_with("application/apply-patch") => Verb::Apply,
            ("PATCH", _) => Verb::Patch,
            ("DELETE", true) => Verb::Delete,
            ("DELETE", false) => Verb::DeleteCollection,
            _ => Verb::Other,
        },
        _ => Verb::Discovery,
    }
}

/// A response body: a complete document, or a stream of watch events.
pub(crate) enum Body {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Stream(_) => SizeHint::default(),
        }
    }
}

type Resp = Response<Body>;

/// What a response carries.
enum Payload {
    Json(Value),
    /// A non-JSON body (the plain `404 page not found` of paths no API serves).
    Text(&'static str),
    /// A watch's event stream.
    Stream(mpsc::Receiver<Bytes>),
}

struct Outcome {
    code: u16,
    payload: Payload,
    content_type: String,
    headers: Vec<(String, String)>,
}

impl Outcome {
    fn into_response(self, count: &ByteCount) -> Resp {
        let mut b = Response::builder()
            .status(self.code)
            .header("content-type", self.content_type.as_str())
            .header("cache-control", "no-cache, private");
        for (k, v) in &self.headers {
            b = b.header(k.as_str(), v.as_str());
        }
        let body = match self.payload {
            Payload::Json(v) => {
                let bytes = serde_json::to_vec(&v).unwrap_or_default();
                count.add(bytes.len());
                Body::Full(Some(Bytes::from(bytes)))
            }
            Payload::Text(t) => {
                count.add(t.len());
                Body::Full(Some(Bytes::from_static(t.as_bytes())))
            }
            Payload::Stream(rx) => Body::Stream(rx),
        };
        b.body(body)
            .unwrap_or_else(|_| Response::new(Body::Full(None)))
    }
}

fn json_outcome(r: Result<(u16, Value), ApiError>) -> Outcome {
    match r {
        Ok((code, body)) => Outcome {
            code,
            payload: Payload::Json(body),
            content_type: "application/json".into(),
            headers: vec![],
        },
        Err(e) => Outcome {
            code: e.code,
            payload: Payload::Json(e.to_json()),
            content_type: "application/json".into(),
            headers: e.headers.clone(),
        },
    }
}

/// kube-apiserver's answer for a path outside every API it serves: the Go mux's plain
/// text, not a Status (unknown resources inside a served group version get a Status).
fn page_not_found() -> Outcome {
    Outcome {
        code: 404,
        payload: Payload::Text("404 page not found\n"),
        content_type: "text/plain; charset=utf-8".into(),
        headers: vec![],
    }
}

/// Whether go-restful, which answers unknown routes with a Status, owns `path`: the core
/// API under `/api`, `/version`, and the groups compiled into the server (`/apis/<group>`).
/// Groups served from CRDs, unknown groups and everything else fall through to the plain
/// 404 handler (the apiextensions server delegates what no CRD claims).
fn under_builtin_root(defs: &[ResourceDef], path: &str) -> bool {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segs.as_slice() {
        ["api", ..] | ["version", ..] => true,
        ["apis", g, ..] => defs.iter().any(|d| d.group == *g && d.crd.is_none()),
        _ => false,
    }
}

fn not_found(defs: &[ResourceDef], path: &str) -> Outcome {
    if under_builtin_root(defs, path) {
        json_outcome(Err(ApiError::no_route()))
    } else {
        page_not_found()
    }
}

struct Incoming2<'a> {
    method: &'a str,
    path: &'a str,
    route: &'a Route,
    verb: Verb,
    query: &'a Query,
    body: &'a [u8],
    content_type: &'a str,
    accept: &'a str,
    user_agent: &'a str,
}

fn discovery_doc(shared: &Shared, core: bool, accept: &str) -> Outcome {
    let defs = shared.state.lock().defs.clone();
    if shared.aggregated_discovery {
        if let Some(v) = discovery::wants_aggregated(accept) {
            return Outcome {
                code: 200,
                payload: Payload::Json(discovery::aggregated(&defs, core, v)),
                content_type: format!(
                    "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
                ),
                headers: vec![],
            };
        }
    }
    if !discovery::accepts_plain_json(accept) {
        return json_outcome(Err(ApiError::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf (requested {accept})"),
        )));
    }
    let body = if core {
        discovery::api_versions()
    } else {
        discovery::api_group_list(&defs)
    };
    json_outcome(Ok((200, body)))
}

/// `POST selfsubjectaccessreviews`: the requester may do everything, except LIST namespaced
/// resources across all namespaces when [`Shared::deny_cluster_wide_lists`] is set. Nothing is
/// stored (as on a real server).
fn access_review(shared: &Shared, r: &Incoming2) -> Result<(u16, Value), ApiError> {
    if r.method != "POST" {
        return Err(ApiError::method_not_allowed());
    }
    let mut review: Value = serde_json::from_slice(r.body)
        .map_err(|e| ApiError::bad_request(format!("invalid SelfSubjectAccessReview: {e}")))?;
    let attrs = review
        .pointer("/spec/resourceAttributes")
        .cloned()
        .unwrap_or(Value::Null);
    let cluster_wide_list = attrs["verb"] == "list"
        && attrs["namespace"].as_str().unwrap_or("").is_empty()
        && namespaced(
            shared,
            attrs["group"].as_str().unwrap_or(""),
            attrs["resource"].as_str().unwrap_or(""),
        );
    let denied = cluster_wide_list
        && shared
            .deny_cluster_wide_lists
            .load(std::sync::atomic::Ordering::Relaxed);
    review["status"] = serde_json::json!({"allowed": !denied});
    Ok((201, review))
}

/// Whether a served resource (any version) is namespaced.
fn namespaced(shared: &Shared, group: &str, plural: &str) -> bool {
    let st = shared.state.lock();
    st.defs
        .iter()
        .any(|d| d.group == group && d.plural == plural && d.namespaced)
}

fn dispatch(shared: &Shared, r: &Incoming2, count: &ByteCount) -> Outcome {
    if r.verb == Verb::Discovery && r.method != "GET" {
        return json_outcome(Err(ApiError::method_not_allowed()));
    }
    let defs = || shared.state.lock().defs.clone();
    let found = |v: Option<Value>| match v {
        Some(v) => json_outcome(Ok((200, v))),
        None => not_found(&defs(), r.path),
    };
    match r.route {
        Route::Version => json_outcome(Ok((200, discovery::version_info()))),
        Route::Api => discovery_doc(shared, true, r.accept),
        Route::Apis => discovery_doc(shared, false, r.accept),
        Route::CoreV1 => found(discovery::resource_list(&defs(), "", "v1")),
        Route::Group(g) => found(discovery::api_group(&defs(), g)),
        Route::GroupVersion(g, v) => found(discovery::resource_list(&defs(), g, v)),
        Route::Unknown => not_found(&defs(), r.path),
        Route::Resource {
            group,
            plural,
            namespace: None,
            ..
        } if group == "authorization.k8s.io" && plural == "selfsubjectaccessreviews" => {
            json_outcome(access_review(shared, r))
        }
        Route::Resource {
            group,
            version,
            plural,
            namespace,
            name,
            sub,
        } => {
            let rep = match negotiate(r.accept) {
                Ok(rep) => rep,
                Err(e) => return json_outcome(Err(e)),
            };
            let mut st = shared.state.lock();
            let Some(def) = st.find_def(group, version, plural) else {
                return not_found(&st.defs, r.path);
            };
            if def.namespaced
                && namespace.is_none()
                && matches!(r.verb, Verb::List | Verb::Watch)
                && shared
                    .deny_cluster_wide_lists
                    .load(std::sync::atomic::Ordering::Relaxed)
            {
                let what = if group.is_empty() {
                    plural.clone()
                } else {
                    format!("{plural}.{group}")
                };
                return json_outcome(Err(ApiError::from_code(
                    403,
                    Some(format!(
                        "{what} is forbidden: User \"test\" cannot list resource \"{plural}\" in API group \"{group}\" at the cluster scope"
                    )),
                )));
            }
            // Scope mismatches are unknown paths on a real server; the apiextensions
            // server hands a namespaced path to a cluster-scoped CRD to the 404 page.
            if def.crd.is_some() && !def.namespaced && namespace.is_some() {
                return page_not_found();
            }
            if (!def.namespaced && namespace.is_some())
                || (def.namespaced && namespace.is_none() && name.is_some())
                || (def.namespaced && namespace.is_none() && r.verb == Verb::Create)
            {
                return json_outcome(Err(ApiError::no_route()));
            }
            let call = Call {
                def,
                namespace: namespace.clone(),
                name: name.clone(),
                subresource: sub.clone(),
                query: r.query,
                body: r.body,
                content_type: r.content_type,
                user_agent: r.user_agent,
            };
            if r.verb == Verb::Watch {
                return match st.watch(&call) {
                    Ok(start) => watch_outcome(start, r.query, rep, count.clone()),
                    Err(e) => json_outcome(Err(e)),
                };
            }
            let result = st.handle(&call, r.verb);
            let controller_work = st.next_controller_due().is_some();
            drop(st);
            if controller_work {
                shared.controllers.notify_one();
            }
            // The content type stays `application/json` for metadata-only answers too
            // (kube-apiserver names the serializer's media type, not the `as=` asked for).
            json_outcome(result.and_then(|reply| Ok((reply.code, represent(reply.body, rep)?))))
        }
    }
}

/// How often a watch that allows bookmarks gets one (kube-apiserver's cacher: every
/// minute, and once 2 s before the watch's timeout).
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// Streams watch events as JSON lines until `timeoutSeconds` (default 30 min) or the
/// client goes away. With `allowWatchBookmarks`, BOOKMARK events carry the latest
/// resourceVersion every minute and 2 s before the timeout.
fn watch_outcome(
    start: WatchStart,
    query: &Query,
    rep: Representation,
    count: ByteCount,
) -> Outcome {
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(1800);
    let bookmarks = matches!(
        query.get("allowWatchBookmarks"),
        Some("true" | "1" | "t" | "T" | "TRUE" | "True")
    );
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let WatchStart {
        initial,
        mut feed,
        filter,
        rv,
    } = start;
    let line = move |mut v: Value| {
        if let Representation::Partial { version, .. } = rep {
            if v["type"] != "ERROR" {
                v["object"] = partial(&v["object"], version);
            }
        }
        let mut b = serde_json::to_vec(&v).unwrap_or_default();
        b.push(b'\n');
        count.add(b.len());
        Bytes::from(b)
    };
    tokio::spawn(async move {
        for v in initial {
            if tx.send(line(v)).await.is_err() {
                return;
            }
        }
        let started = tokio::time::Instant::now();
        let deadline = started + Duration::from_secs(timeout);
        let pretimeout = deadline.checked_sub(Duration::from_secs(2));
        let next_after = |now: tokio::time::Instant| {
            let t = match pretimeout {
                Some(p) => (now + BOOKMARK_INTERVAL).min(p),
                None => now + BOOKMARK_INTERVAL,
            };
            (bookmarks && t > now).then_some(t)
        };
        let mut next_bookmark = next_after(started);
        let mut last_rv = rv;
        loop {
            let bookmark_at = next_bookmark.unwrap_or(deadline);
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tx.closed() => return,
                _ = tokio::time::sleep_until(bookmark_at), if next_bookmark.is_some() => {
                    if tx.send(line(filter.bookmark(last_rv))).await.is_err() {
                        return;
                    }
                    next_bookmark = next_after(tokio::time::Instant::now());
                }
                ev = feed.recv() => match ev {
                    Ok(e) => {
                        last_rv = last_rv.max(e.rv);
                        if let Some(v) = filter.render(&e) {
                            if tx.send(line(v)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let gone = ApiError::new(410, "Expired", "watch fell behind; resume with a new list");
                        let _ = tx.send(line(json!({"type": "ERROR", "object": gone.to_json()}))).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    Outcome {
        code: 200,
        payload: Payload::Stream(rx),
        content_type: "application/json".into(),
        headers: vec![],
    }
}

/// Finds the faults for a request: delays add up; the first status/drop fault wins.
fn take_faults(
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
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let query = Query::parse(&raw_query);
    let route = route(&path);
    let verb = verb_of(&method, &route, &query, &content_type);
    let (group, resource, namespace, name, subresource) = match &route {
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
    let mut record = RequestRecord {
        method: method.clone(),
        verb,
        path: path.clone(),
        query: raw_query,
        group,
        resource,
        subresource,
        namespace,
        name,
        dry_run: query.all("dryRun").contains(&"All")
            || (method == "DELETE"
                && serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|o| o.get("dryRun").cloned())
                    == Some(serde_json::json!(["All"]))),
        field_manager: query.get("fieldManager").map(str::to_string),
        content_type: (!content_type.is_empty()).then(|| content_type.clone()),
        user_agent: (!user_agent.is_empty()).then(|| user_agent.clone()),
        status: None,
        faulted: false,
        response_bytes: 0,
    };
    let count = ByteCount {
        total: shared.response_bytes.clone(),
        this: Arc::new(AtomicU64::new(0)),
    };

    let (delay, action) = take_faults(&shared, &method, verb, &path);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    match action {
        Some(FaultAction::Drop) => {
            record.faulted = true;
            shared.log.lock().push(Logged {
                record,
                streamed: None,
            });
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
                payload: Payload::Text("Too many requests, please try again later.\n"),
                content_type: "text/plain; charset=utf-8".into(),
                headers: vec![
                    ("retry-after".into(), retry_after.to_string()),
                    ("x-content-type-options".into(), "nosniff".into()),
                ],
            };
            record.faulted = true;
            record.status = Some(429);
            let resp = out.into_response(&count);
            record.response_bytes = count.this.load(Ordering::Relaxed);
            shared.log.lock().push(Logged {
                record,
                streamed: None,
            });
            return Ok(resp);
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
            let resp = json_outcome(Err(err)).into_response(&count);
            record.response_bytes = count.this.load(Ordering::Relaxed);
            shared.log.lock().push(Logged {
                record,
                streamed: None,
            });
            return Ok(resp);
        }
        _ => {}
    }

    let incoming = Incoming2 {
        method: &method,
        path: &path,
        route: &route,
        verb,
        query: &query,
        body: &body,
        content_type: &content_type,
        accept: &accept,
        user_agent: &user_agent,
    };
    let mut out = dispatch(&shared, &incoming, &count);
    // The ServiceAccount admission plugin looks a missing `default` ServiceAccount up
    // again, live, 10 times 100-200 ms apart (the controller is expected to create it any
    // moment) before it refuses the Pod.
    for _ in 1..SA_LOOKUP_ATTEMPTS {
        if !default_service_account_missing(&out) {
            break;
        }
        tokio::time::sleep(SA_LOOKUP_INTERVAL).await;
        out = dispatch(&shared, &incoming, &count);
    }
    record.status = Some(out.code);
    let streamed = matches!(out.payload, Payload::Stream(_)).then(|| count.this.clone());
    let resp = out.into_response(&count);
    record.response_bytes = count.this.load(Ordering::Relaxed);
    shared.log.lock().push(Logged { record, streamed });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            route("/api/v1/namespaces/foo/status"),
            Route::Resource {
                group: "".into(),
                version: "v1".into(),
                plural: "namespaces".into(),
                namespace: None,
                name: Some("foo".into()),
                sub: Some("status".into())
            }
        );
        assert_eq!(
            route("/apis/apps/v1/namespaces/a/deployments/b/status"),
            Route::Resource {
                group: "apps".into(),
                version: "v1".into(),
                plural: "deployments".into(),
                namespace: Some("a".into()),
                name: Some("b".into()),
                sub: Some("status".into())
            }
        );
        assert_eq!(
            route("/api/v1/namespaces"),
            Route::Resource {
                group: "".into(),
                version: "v1".into(),
                plural: "namespaces".into(),
                namespace: None,
                name: None,
                sub: None
            }
        );
        assert_eq!(route("/foo"), Route::Unknown);
    }
}
