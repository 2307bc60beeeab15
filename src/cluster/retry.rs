//! Retries with exponential backoff for transient API failures: 429, 5xx, timeouts and
//! dropped connections. kube's own layer retries some of these; this one also covers 500s
//! and transport errors, and every verb tend uses is safe to repeat (server-side apply is
//! idempotent, a repeated DELETE answers 404, which callers treat as done).

use std::future::Future;
use std::time::Duration;

/// Attempts per operation, including the first.
pub const MAX_ATTEMPTS: u32 = 5;

/// Whether an error is worth retrying.
pub fn is_transient(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => status.code == 429 || (500..600).contains(&status.code),
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        kube::Error::ReadEvents(_) => true,
        _ => false,
    }
}

/// Run `op` until it succeeds, fails permanently, or [`MAX_ATTEMPTS`] is reached. Backoff
/// 100 ms, 200 ms, 400 ms, 800 ms (Retry-After is honoured by kube's layer for 429).
pub async fn retry<T, F, Fut>(what: &str, mut op: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut attempt = 1;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(err) if attempt < MAX_ATTEMPTS && is_transient(&err) => {
                let delay = Duration::from_millis(100 * 2u64.pow(attempt - 1));
                tracing::debug!("{what} failed ({err}); retry {attempt} in {delay:?}");
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            Err(err) => return Err(err),
        }
    }
}
