//! SIGTERM and SIGINT during `apply` (README "Signals"): the first sets the
//! run's [`Interrupt`], so the run stops starting writes, releases its lock, records and
//! reports; a second exits at once. Commands that write nothing (`render`, `diff`) keep the
//! default disposition and stop at once.

use crate::interrupt::Interrupt;
use tokio::signal::unix::{signal, SignalKind};

/// Listen for SIGTERM and SIGINT for the rest of the process; needs a tokio runtime.
pub fn listen(interrupt: Interrupt) -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        loop {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            if interrupt.trigger(name) {
                tracing::warn!(
                    "{name}: stopping; no new writes, the lock is released and the run recorded (a second signal exits at once)"
                );
            } else {
                tracing::error!(
                    "{name} again: exiting at once; the lock stays held until its lease expires"
                );
                // 2, as any error (`cli::EXIT_ERROR`); there is no result left to map.
                std::process::exit(2);
            }
        }
    });
    Ok(())
}
