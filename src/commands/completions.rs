//! `tend completions <shell>` and `tend man`: shell completion scripts and manual pages,
//! generated from the clap definition of the command line, so they never drift from it.

use crate::ops::Verdict;
use crate::Error;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// Shell to generate the completion script for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write tend.1 and one page per subcommand (tend-apply.1, ...) into this directory
    /// instead of printing tend.1 to stdout.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// `cmd` is the command line definition, as the binary parses it.
pub fn completions(args: &CompletionsArgs, mut cmd: clap::Command) -> Result<Verdict, Error> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "tend", &mut out);
    super::print(&String::from_utf8_lossy(&out))?;
    Ok(Verdict::Success)
}

pub fn man(args: &ManArgs, cmd: clap::Command) -> Result<Verdict, Error> {
    match &args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(Error::Output)?;
            clap_mangen::generate_to(cmd, dir).map_err(Error::Output)?;
            let mut pages: Vec<String> = std::fs::read_dir(dir)
                .map_err(Error::Output)?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".1"))
                .collect();
            pages.sort();
            tracing::info!(
                "wrote {} manual pages to {}: {}",
                pages.len(),
                dir.display(),
                pages.join(", ")
            );
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .map_err(Error::Output)?;
            super::print(&String::from_utf8_lossy(&out))?;
        }
    }
    Ok(Verdict::Success)
}
