//! The `tend` binary: parse the command line, run, map the result to an exit code.

use std::process::ExitCode;

fn main() -> ExitCode {
    tend::cli::main()
}
