//! The command line: global flags (each also read from `TEND_<FLAG>`), subcommands, logging
//! setup, and the mapping from results to exit codes (0 ok/in sync, 1 differences, 2 error).

use crate::commands::{self, Command, GlobalArgs, LogFormat};
use crate::ops::Verdict;
use clap::{CommandFactory, Parser};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Exit code for any error: bad input, API failure, partial apply, lock held.
pub const EXIT_ERROR: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "tend",
    version,
    about = "GitOps reconciliation for Kubernetes: render, diff, apply and prune desired state from git, then exit.",
    after_help = "Every flag can also be set with an environment variable TEND_<FLAG> (e.g. TEND_REPO, TEND_CLUSTER); flags win.\nExit codes: 0 success or in sync, 1 differences found (diff), 2 error."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    crate::source::git::start_libgit2_without_ca_bundle();
    let cli = Cli::parse();
    init_logging(&cli.global);
    exit_code(commands::run(cli.command, &cli.global, Cli::command))
}

/// The one place where results become exit codes: 0 success or in sync, 1 differences found
/// (`diff`, as `kubectl diff`), 2 any error.
pub fn exit_code(result: Result<Verdict, crate::Error>) -> ExitCode {
    match result {
        Ok(Verdict::Success) => ExitCode::SUCCESS,
        Ok(Verdict::Differences) => ExitCode::from(1),
        Ok(Verdict::Failed) => ExitCode::from(EXIT_ERROR),
        Err(err) => {
            report_error(&err);
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Print an error: the one-sentence summary first, then its causes.
fn report_error(err: &crate::Error) {
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(&format!("\n  caused by: {text}"));
        }
        source = cause.source();
    }
    tracing::error!("{message}");
}

fn init_logging(global: &GlobalArgs) {
    use tracing_subscriber::filter::LevelFilter;
    let level = match global.verbose {
        0 => LevelFilter::INFO,
        1 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    };
    let color = global.use_color(std::io::stderr().is_terminal());
    // Our own events at the chosen level; libraries' (kube, hyper) only at -vv, where their
    // request-level detail helps, since they log retried failures as errors. Never kube's
    // dump of a refused request's Status: servers quote the values they refuse, decrypted
    // ones included; tend reports the refusal itself, with secret values masked.
    let filter = tracing_subscriber::EnvFilter::new(match global.verbose {
        0 | 1 => format!("tend={level}"),
        _ => format!(
            "tend={level},kube=debug,kube_client::client=warn,kube_client::client::builder=debug,warn"
        ),
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match global.log_format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
        LogFormat::Text => builder.event_format(PlainFormat { color }).try_init(),
    };
}

/// Log lines for people: info as plain text, other levels prefixed (`error:`, `warning:`).
struct PlainFormat {
    color: bool,
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for PlainFormat
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        use tracing::Level;
        let (prefix, code) = match *event.metadata().level() {
            Level::ERROR => ("error: ", "31"),
            Level::WARN => ("warning: ", "33"),
            Level::INFO => ("", ""),
            Level::DEBUG => ("debug: ", "2"),
            Level::TRACE => ("trace: ", "2"),
        };
        if !prefix.is_empty() {
            if self.color {
                write!(writer, "\x1b[{code}m{prefix}\x1b[0m")?;
            } else {
                write!(writer, "{prefix}")?;
            }
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
