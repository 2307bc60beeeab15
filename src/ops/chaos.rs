//! One chaos pass (in progress).

use crate::cli::GlobalArgs;
use crate::commands::chaos::ChaosArgs;
use crate::Error;
use std::process::ExitCode;

pub fn run(_global: &GlobalArgs, args: &ChaosArgs) -> Result<ExitCode, Error> {
    Err(Error::Usage(format!(
        "tend chaos --agent {} is not available in this build yet",
        args.agent
    )))
}
