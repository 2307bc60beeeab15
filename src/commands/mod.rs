//! One file per subcommand: its arguments, the options it builds from them, a call into its
//! operation in [`crate::ops`], and printing the result through [`crate::report`]. Commands
//! return a [`Verdict`]; [`crate::cli`] alone turns it into an exit code.

pub mod apply;
pub mod chaos;
pub mod completions;
pub mod crds;
pub mod diff;
pub mod global;
pub mod reconcile_args;
pub mod render;
mod run_outputs;
pub mod status;
mod stdout;
pub mod version;

pub use global::{GlobalArgs, LogFormat, OutputFormat};
pub(crate) use stdout::print;

use crate::ops::Verdict;
use crate::Error;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load, validate and expand the desired state and print it (offline).
    Render(render::RenderArgs),
    /// Plan against the live cluster and show what would change (exit 0 in sync, 1 differences, 2 error).
    Diff(diff::DiffArgs),
    /// Diff, then apply in order, prune, and record the run.
    Apply(apply::ApplyArgs),
    /// The last run of each ApplySet on each cluster, from the ApplySet parents (exit 1 when one failed).
    Status(status::StatusArgs),
    /// One pass of a ChaosAgent: a dry run unless --execute. Never run by apply.
    Chaos(chaos::ChaosArgs),
    /// Print the CustomResourceDefinitions of tend's own kinds.
    Crds,
    /// Print tend's version, build commit and supported Kubernetes versions.
    Version,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
    /// Print the manual page tend(1), or write all pages with --out-dir.
    Man(completions::ManArgs),
}

/// Run one command. `definition` gives the whole command line's clap definition (for
/// completions and manual pages), which lives in [`crate::cli`].
pub fn run(
    command: Command,
    global: &GlobalArgs,
    definition: fn() -> clap::Command,
) -> Result<Verdict, Error> {
    match command {
        Command::Render(args) => render::run(global, &args),
        Command::Diff(args) => diff::run(global, &args),
        Command::Apply(args) => apply::run(global, &args),
        Command::Status(args) => status::run(global, &args),
        Command::Chaos(args) => chaos::run(global, &args),
        Command::Crds => crds::run(global),
        Command::Version => version::run(global),
        Command::Completions(args) => completions::completions(&args, definition()),
        Command::Man(args) => completions::man(&args, definition()),
    }
}
