//! A run's stop request (README "Signals"): created once per run, passed down
//! to the engine (which starts no write once it is set) and to the cluster client (which
//! stops riding out outages). The first SIGTERM/SIGINT sets it; see `run::executor`.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long requests already in flight may take to finish after a stop, before they are
/// abandoned: the lock release and the parent record still fit in the 5 s the run has.
pub const GRACE: Duration = Duration::from_secs(2);

/// When and why a run was asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop {
    /// `SIGTERM` or `SIGINT`.
    pub signal: &'static str,
    pub at: Instant,
}

/// A stop request shared by every part of one run.
#[derive(Debug, Clone)]
pub struct Interrupt {
    state: Arc<watch::Sender<Option<Stop>>>,
}

impl Default for Interrupt {
    fn default() -> Self {
        Interrupt {
            state: Arc::new(watch::Sender::new(None)),
        }
    }
}

impl Interrupt {
    /// Ask the run to stop; true when this is the first request.
    pub fn trigger(&self, signal: &'static str) -> bool {
        self.state.send_if_modified(|state| match state {
            Some(_) => false,
            None => {
                *state = Some(Stop {
                    signal,
                    at: Instant::now(),
                });
                true
            }
        })
    }

    /// The stop request, once there is one.
    pub fn stopped(&self) -> Option<Stop> {
        *self.state.borrow()
    }

    pub fn is_set(&self) -> bool {
        self.stopped().is_some()
    }

    /// Resolves when the run is asked to stop.
    pub async fn requested(&self) {
        let mut rx = self.state.subscribe();
        // The sender lives as long as `self`, so this only ends with a stop.
        let _ = rx.wait_for(Option::is_some).await;
    }

    /// Resolves [`GRACE`] after the stop: when work still in flight is abandoned.
    pub async fn grace_over(&self) {
        self.requested().await;
        if let Some(stop) = self.stopped() {
            tokio::time::sleep_until(stop.at + GRACE).await;
        }
    }

    /// The time left to wait for something (a retry, a pause) without overrunning the grace
    /// after a stop: `wanted`, or less once the run is stopping.
    pub fn cap(&self, wanted: Duration) -> Duration {
        match self.stopped() {
            None => wanted,
            Some(stop) => wanted.min((stop.at + GRACE).saturating_duration_since(Instant::now())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_stop_wins_and_wakes_waiters() {
        let interrupt = Interrupt::default();
        assert!(!interrupt.is_set());
        assert_eq!(
            interrupt.cap(Duration::from_secs(9)),
            Duration::from_secs(9)
        );
        let waiter = tokio::spawn({
            let interrupt = interrupt.clone();
            async move { interrupt.requested().await }
        });
        assert!(interrupt.trigger("SIGTERM"));
        assert!(!interrupt.trigger("SIGINT"));
        waiter.await.expect("woken");
        assert_eq!(interrupt.stopped().map(|s| s.signal), Some("SIGTERM"));
        assert!(interrupt.cap(Duration::from_secs(9)) <= GRACE);
    }
}
