//! Riding out outages (README "Outages"): a client layer under every request
//! that retries what an apiserver restart or overload looks like — connection refused, reset
//! or closed, TLS handshakes that break off, timeouts, 502/503/504, and 429 (API Priority and
//! Fairness, honouring `Retry-After`) — under one run-wide budget (`--retry-timeout`).
//!
//! The budget is wall-clock time during which at least one request is in trouble (from its
//! first such failure until it ends), so 1,000 objects waiting through the same 9 s restart
//! spend 9 s of it, not 9,000; once it is spent, requests fail at their first failure. Every
//! verb tend uses is safe to repeat, including a write whose connection broke after the
//! server may have acted (server-side apply is idempotent; the lock's create and update are
//! guarded by the Lease itself). Until the server has answered once in the run, connection
//! failures are not waited for (a wrong address should fail at once, as with kubectl). The
//! same layer logs each request at `-v`, as `kubectl -v=6`.

use crate::interrupt::Interrupt;
use http::{Request, Response, StatusCode};
use kube::client::Body;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;
use tower::{BoxError, Service, ServiceExt};

/// Default `--retry-timeout`: longer than an apiserver restart takes.
pub const DEFAULT_RETRY_TIMEOUT: Duration = Duration::from_secs(60);

/// The pause before retry number `n` (from 0) without `Retry-After`: 250 ms doubling to 2 s,
/// so a server that is back is noticed within 2 s.
fn backoff(n: u32) -> Duration {
    Duration::from_millis(250) * 2u32.pow(n.min(3))
}

/// A request failed the way outages fail, and the budget ran out (or the run was stopped).
#[derive(Debug, thiserror::Error)]
#[error("the API server did not answer ({reason}); {why}")]
pub struct Unreachable {
    pub reason: String,
    /// Why it was not retried (again).
    pub why: String,
    #[source]
    pub source: BoxError,
}

/// The run-wide retry budget.
#[derive(Debug)]
pub struct RetryBudget {
    total: Duration,
    state: Mutex<Spent>,
    /// Whether the server has answered this run at all. Before it has, a connection failure
    /// is a wrong address or a cluster that is down, not a restart: it fails at once, as
    /// kubectl does, instead of waiting out the budget.
    reached: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct Spent {
    /// Requests currently in trouble, and since when at least one has been.
    troubled: usize,
    since: Option<Instant>,
    spent: Duration,
}

impl RetryBudget {
    pub fn new(total: Duration) -> Self {
        RetryBudget {
            total,
            state: Mutex::new(Spent::default()),
            reached: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// What is left of the budget now.
    pub fn left(&self) -> Duration {
        let Ok(state) = self.state.lock() else {
            return Duration::ZERO;
        };
        let open = state.since.map(|s| s.elapsed()).unwrap_or_default();
        self.total.saturating_sub(state.spent + open)
    }

    /// A request is in trouble until the returned guard is dropped.
    fn trouble(self: &Arc<Self>) -> Trouble {
        if let Ok(mut state) = self.state.lock() {
            state.troubled += 1;
            if state.troubled == 1 {
                state.since = Some(Instant::now());
            }
        }
        Trouble(self.clone())
    }
}

struct Trouble(Arc<RetryBudget>);

impl Drop for Trouble {
    fn drop(&mut self) {
        if let Ok(mut state) = self.0.state.lock() {
            state.troubled = state.troubled.saturating_sub(1);
            if state.troubled == 0 {
                if let Some(since) = state.since.take() {
                    state.spent += since.elapsed();
                }
            }
        }
    }
}

/// Why a transport error looks like an outage (worth waiting through), or `None` when it
/// does not (a certificate the client rejects, a malformed answer): those fail at once.
pub fn outage_reason(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    use std::io::ErrorKind::*;
    let mut connect = false;
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                ConnectionRefused => Some("connection refused".into()),
                ConnectionReset => Some("connection reset".into()),
                ConnectionAborted | BrokenPipe | NotConnected | UnexpectedEof => {
                    Some("connection closed".into())
                }
                TimedOut => Some("timed out".into()),
                // rustls reports a rejected certificate as invalid data: not an outage.
                InvalidData => None,
                _ if connect => Some(format!("cannot connect: {io}")),
                _ => None,
            };
        }
        if let Some(hyper) = e.downcast_ref::<hyper::Error>() {
            if hyper.is_incomplete_message() || hyper.is_closed() || hyper.is_canceled() {
                return Some("connection closed before the answer".into());
            }
            if hyper.is_timeout() {
                return Some("timed out".into());
            }
        }
        if let Some(client) = e.downcast_ref::<hyper_util::client::legacy::Error>() {
            connect |= client.is_connect();
        }
        current = e.source();
    }
    connect.then(|| "cannot connect".into())
}

/// Answers that mean "not now": overload (429) and a server or gateway that is restarting.
fn is_outage_status(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 502 | 503 | 504)
}

/// Whether [`crate::cluster::retry`] should leave this error alone: this layer already
/// waited for it as long as the run allows.
pub fn already_retried(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => StatusCode::from_u16(status.code).is_ok_and(is_outage_status),
        kube::Error::Service(e) => e.is::<Unreachable>(),
        _ => false,
    }
}

fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let secs: u64 = headers
        .get("retry-after")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(secs))
}

/// The layer: see the module documentation.
#[derive(Clone)]
pub struct OutageLayer {
    pub budget: Arc<RetryBudget>,
    pub interrupt: Interrupt,
    /// The server's URL, for log lines (requests carry only the path here).
    pub server: String,
}

impl<S> tower::Layer<S> for OutageLayer {
    type Service = Outage<S>;
    fn layer(&self, inner: S) -> Outage<S> {
        Outage {
            // Requests are started one at a time under the lock and then run concurrently.
            inner: Arc::new(tokio::sync::Mutex::new(inner)),
            layer: self.clone(),
        }
    }
}

pub struct Outage<S> {
    inner: Arc<tokio::sync::Mutex<S>>,
    layer: OutageLayer,
}

impl<S> Clone for Outage<S> {
    fn clone(&self) -> Self {
        Outage {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

type Answer<B> = Result<Response<B>, BoxError>;

impl<S, B> Service<Request<Body>> for Outage<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Answer<B>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { this.send(req).await })
    }
}

impl<S, B> Outage<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    async fn once(&self, req: Request<Body>) -> Answer<B> {
        let future = {
            let mut inner = self.inner.lock().await;
            let ready = inner.ready().await.map_err(Into::into)?;
            ready.call(req)
        };
        future.await.map_err(Into::into)
    }

    async fn send(&self, req: Request<Body>) -> Answer<B> {
        let line = format!("{} {}{}", req.method(), self.layer.server, req.uri());
        let mut trouble: Option<(Trouble, Instant)> = None;
        let mut retries = 0;
        loop {
            // Every body tend sends is in memory; one that is not is sent once.
            let Some(attempt) = clone_request(&req) else {
                return self.once(req).await;
            };
            let started = Instant::now();
            let answer = self.once(attempt).await;
            let took = started.elapsed().as_millis();
            let reached = &self.layer.budget.reached;
            let (reason, wait) = match &answer {
                Ok(resp) => {
                    reached.store(true, std::sync::atomic::Ordering::Relaxed);
                    let status = resp.status();
                    let text = status.canonical_reason().unwrap_or("");
                    if !is_outage_status(status) {
                        tracing::debug!("{line} {} {text} in {took} ms", status.as_u16());
                        return answer;
                    }
                    let wait = retry_after(resp.headers()).unwrap_or(backoff(retries));
                    (format!("{} {text}", status.as_u16()), wait)
                }
                Err(err) => match outage_reason(err.as_ref()) {
                    Some(reason) if reached.load(std::sync::atomic::Ordering::Relaxed) => {
                        (reason, backoff(retries))
                    }
                    _ => {
                        tracing::debug!("{line} failed in {took} ms: {err}");
                        return answer;
                    }
                },
            };
            let since = trouble
                .get_or_insert_with(|| (self.layer.budget.trouble(), started))
                .1;
            let left = self.layer.interrupt.cap(self.layer.budget.left());
            let wait = wait.min(left);
            if left.is_zero() {
                tracing::debug!(
                    "{line} {reason} in {took} ms; not retried (the retry budget is spent or the run is stopping)"
                );
                let why = match self.layer.interrupt.is_set() {
                    true => "not retried: the run is stopping".to_string(),
                    false => format!(
                        "no retry left: the run's retry budget (--retry-timeout {:?}) is spent, this request's part {:.1?}",
                        self.layer.budget.total,
                        since.elapsed()
                    ),
                };
                return answer.map_err(|source| {
                    Box::new(Unreachable {
                        reason,
                        why,
                        source,
                    }) as BoxError
                });
            }
            tracing::debug!(
                "{line} {reason} in {took} ms; retry {} in {} ms ({:.0?} of the run's retry budget left)",
                retries + 1,
                wait.as_millis(),
                left
            );
            drop(answer);
            tokio::time::sleep(wait).await;
            retries += 1;
        }
    }
}

/// A copy of `req` to send, keeping the original for the next attempt.
fn clone_request(req: &Request<Body>) -> Option<Request<Body>> {
    let body = req.body().try_clone()?;
    let mut copy = Request::new(body);
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.version_mut() = req.version();
    *copy.headers_mut() = req.headers().clone();
    *copy.extensions_mut() = req.extensions().clone();
    Some(copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outages_are_told_from_other_transport_errors() {
        use std::io::{Error, ErrorKind};
        let refused = Error::new(ErrorKind::ConnectionRefused, "refused");
        assert_eq!(
            outage_reason(&refused).as_deref(),
            Some("connection refused")
        );
        let eof = Error::new(ErrorKind::UnexpectedEof, "tls handshake eof");
        assert_eq!(outage_reason(&eof).as_deref(), Some("connection closed"));
        // A certificate the client rejects is not waited for.
        let certificate = Error::new(ErrorKind::InvalidData, "invalid peer certificate");
        assert_eq!(outage_reason(&certificate), None);
        assert_eq!(outage_reason(&Error::other("something else")), None);
        let steps: Vec<u128> = (0..5).map(|n| backoff(n).as_millis()).collect();
        assert_eq!(steps, [250, 500, 1000, 2000, 2000]);
    }

    #[tokio::test]
    async fn requests_in_trouble_at_once_spend_the_budget_once() {
        let budget = Arc::new(RetryBudget::new(Duration::from_secs(10)));
        let (a, b) = (budget.trouble(), budget.trouble());
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop((a, b));
        let spent = Duration::from_secs(10) - budget.left();
        assert!(spent >= Duration::from_millis(200), "{spent:?}");
        assert!(
            spent < Duration::from_millis(390),
            "counted once: {spent:?}"
        );
        // Nothing in trouble: nothing is spent.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(Duration::from_secs(10) - budget.left(), spent);
    }

    #[test]
    fn what_the_layer_waited_for_is_not_retried_again() {
        let status = |code: u16| {
            kube::Error::Api(
                kube::core::Status::failure("x", "y")
                    .with_code(code)
                    .boxed(),
            )
        };
        assert!(already_retried(&status(429)));
        assert!(already_retried(&status(503)));
        assert!(!already_retried(&status(500)));
        let spent = Unreachable {
            reason: "connection refused".into(),
            why: "no retry left".into(),
            source: "refused".into(),
        };
        assert!(already_retried(&kube::Error::Service(Box::new(spent))));
    }
}
