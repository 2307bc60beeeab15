//! Retries with exponential backoff for transient API failures: 500s and the like, per
//! request. Outages (connections refused or dropped, 429, 502-504) are ridden out under the
//! run-wide budget by [`super::outage`] before an error gets here. Every verb tend uses is safe to repeat (server-side apply is
//! idempotent, a repeated DELETE answers 404, which callers treat as done).
//!
//! One 403 is transient too: a Pod created right after its namespace is refused until
//! kube-controller-manager has created the namespace's `default` ServiceAccount (usually
//! well under a second, seconds on a busy cluster), so it is retried for a while.

use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// Attempts per operation, including the first.
pub const MAX_ATTEMPTS: u32 = 5;

/// How long after the first refusal for a missing ServiceAccount tend keeps retrying.
pub const SERVICE_ACCOUNT_WAIT: Duration = Duration::from_secs(10);

/// Whether an error is worth retrying here. Outages (connection failures, 429, 502-504) are
/// waited for by the client's outage layer under the run's budget, and not again here.
pub fn is_transient(err: &kube::Error) -> bool {
    if super::outage::already_retried(err) {
        return false;
    }
    match err {
        kube::Error::Api(status) => status.code == 429 || (500..600).contains(&status.code),
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        kube::Error::ReadEvents(_) => true,
        _ => false,
    }
}

/// The ServiceAccount admission plugin's refusal of a Pod whose ServiceAccount does not
/// exist (yet): `pods "x" is forbidden: error looking up service account ns/default:
/// serviceaccount "default" not found`. Other 403s (RBAC, terminating namespaces) are final.
pub fn is_missing_service_account(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => {
            status.code == 403
                && status.message.contains("error looking up service account ")
                && status.message.ends_with(" not found")
        }
        _ => false,
    }
}

/// How a missing ServiceAccount is waited for: `first` doubling up to 8 × `first`, for
/// `total` after the first refusal.
#[derive(Debug, Clone, Copy)]
struct ServiceAccountBackoff {
    first: Duration,
    total: Duration,
}

const SERVICE_ACCOUNT_BACKOFF: ServiceAccountBackoff = ServiceAccountBackoff {
    first: Duration::from_millis(250),
    total: SERVICE_ACCOUNT_WAIT,
};

impl ServiceAccountBackoff {
    /// The pause before retry number `n` (from 0): 250 ms, 500 ms, 1 s, then 2 s.
    fn pause(&self, n: u32) -> Duration {
        self.first * 2u32.pow(n.min(3))
    }
}

/// Run `op` until it succeeds, fails permanently, or [`MAX_ATTEMPTS`] is reached. Backoff
/// 100 ms, 200 ms, 400 ms, 800 ms (outages and 429s are waited for below, by
/// [`super::outage`]). A
/// missing ServiceAccount is retried separately, until [`SERVICE_ACCOUNT_WAIT`] has passed
/// since its first refusal.
pub async fn retry<T, F, Fut>(what: &str, op: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    retry_with(what, op, SERVICE_ACCOUNT_BACKOFF).await
}

async fn retry_with<T, F, Fut>(
    what: &str,
    mut op: F,
    sa: ServiceAccountBackoff,
) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut attempt = 1;
    let mut waiting_since: Option<Instant> = None;
    let mut sa_retries = 0;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(err) if is_missing_service_account(&err) => {
                let since = *waiting_since.get_or_insert_with(Instant::now);
                let left = sa.total.saturating_sub(since.elapsed());
                if left.is_zero() {
                    return Err(err);
                }
                let delay = sa.pause(sa_retries).min(left);
                tracing::debug!("{what} refused ({err}); the ServiceAccount may not exist yet, retry in {delay:?}");
                tokio::time::sleep(delay).await;
                sa_retries += 1;
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn api_error(code: u16, message: &str) -> kube::Error {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "Forbidden", "code": code
        }))
        .expect("a Status");
        kube::Error::Api(Box::new(status))
    }

    const SA_MISSING: &str = r#"pods "w" is forbidden: error looking up service account fresh/default: serviceaccount "default" not found"#;

    #[test]
    fn only_the_service_account_refusal_is_retried() {
        assert!(is_missing_service_account(&api_error(403, SA_MISSING)));
        assert!(!is_missing_service_account(&api_error(
            403,
            r#"pods "w" is forbidden: User "x" cannot create resource "pods""#
        )));
        assert!(!is_missing_service_account(&api_error(
            403,
            "configmaps \"c\" is forbidden: unable to create new content in namespace fresh because it is being terminated"
        )));
        assert!(!is_missing_service_account(&api_error(404, SA_MISSING)));
        assert!(!is_transient(&api_error(403, SA_MISSING)));
    }

    #[test]
    fn backoff_is_bounded() {
        let steps: Vec<u128> = (0..6)
            .map(|n| SERVICE_ACCOUNT_BACKOFF.pause(n).as_millis())
            .collect();
        assert_eq!(steps, [250, 500, 1000, 2000, 2000, 2000]);
    }

    /// The production shape at 1/50 of the time.
    const FAST: ServiceAccountBackoff = ServiceAccountBackoff {
        first: Duration::from_millis(5),
        total: Duration::from_millis(200),
    };

    #[tokio::test]
    async fn waits_for_the_service_account_then_gives_up() {
        let calls = Cell::new(0);
        let r = retry_with(
            "create pod",
            || {
                calls.set(calls.get() + 1);
                let n = calls.get();
                async move {
                    if n < 4 {
                        Err(api_error(403, SA_MISSING))
                    } else {
                        Ok(n)
                    }
                }
            },
            FAST,
        )
        .await;
        assert_eq!(r.expect("succeeds once the ServiceAccount exists"), 4);

        let calls = Cell::new(0);
        let started = Instant::now();
        let r: Result<(), _> = retry_with(
            "create pod",
            || {
                calls.set(calls.get() + 1);
                async { Err(api_error(403, SA_MISSING)) }
            },
            FAST,
        )
        .await;
        assert!(is_missing_service_account(&r.unwrap_err()));
        assert!(started.elapsed() >= FAST.total);
        // Retried until the budget ran out (how often depends on the machine's load: the
        // pauses double from 5 ms, so a busy machine fits fewer into 200 ms).
        assert!(calls.get() >= 2, "{}", calls.get());
    }

    #[tokio::test]
    async fn other_forbidden_errors_fail_at_once() {
        let calls = Cell::new(0);
        let r: Result<(), _> = retry_with(
            "apply",
            || {
                calls.set(calls.get() + 1);
                async { Err(api_error(403, "forbidden")) }
            },
            FAST,
        )
        .await;
        assert!(r.unwrap_err().to_string().contains("forbidden"));
        assert_eq!(calls.get(), 1);
    }
}
