//! Operations: what each command does, independent of argument parsing and printing. Each
//! takes domain options built once by its command, and returns a domain result; none of
//! them prints to stdout or decides an exit code. The work itself is planned and carried out
//! by [`crate::run`].

pub mod chaos;
pub mod fleet;
pub mod pushgateway;
pub mod reconcile;
mod spokes;
pub mod status;

/// How a command ended, for [`crate::cli`] to turn into an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Done, or in sync (exit 0).
    Success,
    /// `diff` found differences (exit 1, as `kubectl diff`).
    Differences,
    /// The command ran to the end but something failed (exit 2).
    Failed,
}
