//! One file per subcommand: its arguments and a call into its operation.

pub mod apply;
pub mod chaos;
pub mod completions;
pub mod crds;
pub mod diff;
pub mod engine_args;
pub mod render;
pub mod version;

use crate::cli::{Cli, Command};
use crate::Error;
use std::process::ExitCode;

/// Run the parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Render(args) => render::run(&cli.global, &args),
        Command::Diff(args) => diff::run(&cli.global, &args),
        Command::Apply(args) => apply::run(&cli.global, &args),
        Command::Chaos(args) => chaos::run(&cli.global, &args),
        Command::Crds => crds::run(&cli.global),
        Command::Version => version::run(&cli.global),
        Command::Completions(args) => completions::completions(&args),
        Command::Man(args) => completions::man(&args),
    }
}

/// Write to stdout, treating a closed pipe (`tend render | head`) as success.
pub(crate) fn print(text: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(Error::Output),
    }
}
