//! The command line: global flags (each also read from `TEND_<FLAG>`), subcommands, logging
//! setup, and the mapping from results to exit codes (0 ok/in sync, 1 differences, 2 error).

use crate::commands;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
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

/// Flags shared by every command (SPEC 1).
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Desired-state repository: a local directory or a git URL (https://, ssh://, git@host:path, file://).
    #[arg(long, global = true, env = "TEND_REPO", default_value = ".")]
    pub repo: String,
    /// Git branch, tag or commit SHA (full or short) to read.
    #[arg(long = "ref", global = true, env = "TEND_REF", value_name = "REF")]
    pub git_ref: Option<String>,
    /// Subdirectory of the repository that holds the desired state.
    #[arg(long, global = true, env = "TEND_PATH")]
    pub path: Option<PathBuf>,
    /// Name of the target cluster, for `tend.dev/clusters` and `RegistryMirror.spec.clusters`.
    #[arg(long, global = true, env = "TEND_CLUSTER")]
    pub cluster: Option<String>,
    /// Namespace for namespaced objects that do not name one.
    #[arg(long, global = true, env = "TEND_NAMESPACE", default_value = "default")]
    pub namespace: String,
    /// Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long, global = true, env = "TEND_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use.
    #[arg(long, global = true, env = "TEND_CONTEXT")]
    pub context: Option<String>,
    /// Output format (where it applies; each command has its own default).
    #[arg(short = 'o', long, global = true, env = "TEND_OUTPUT", value_enum)]
    pub output: Option<OutputFormat>,
    /// Format of log lines on stderr.
    #[arg(long, global = true, env = "TEND_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// More detail on stderr (-v debug, -vv trace).
    #[arg(short, long, global = true, env = "TEND_VERBOSE", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// When to colour output.
    #[arg(long, global = true, env = "TEND_COLOR", value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Where git repositories are cached (default $XDG_CACHE_HOME/tend).
    #[arg(long, global = true, env = "TEND_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Private key for SSH git remotes.
    #[arg(long, global = true, env = "TEND_SSH_KEY")]
    pub ssh_key: Option<PathBuf>,
    /// known_hosts file for SSH host key checking (default ~/.ssh/known_hosts).
    #[arg(long, global = true, env = "TEND_KNOWN_HOSTS")]
    pub known_hosts: Option<PathBuf>,
    /// Command that builds kustomize directories, as words; the directory is appended (default: `kustomize build` if kustomize is on PATH, else `kubectl kustomize`).
    #[arg(
        long,
        global = true,
        env = "TEND_KUSTOMIZE_COMMAND",
        value_name = "COMMAND"
    )]
    pub kustomize_command: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    Markdown,
    Yaml,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load, validate and expand the desired state and print it (offline).
    Render(commands::render::RenderArgs),
    /// Plan against the live cluster and show what would change (exit 0 in sync, 1 differences, 2 error).
    Diff(commands::diff::DiffArgs),
    /// Diff, then apply in order, prune, and record the run.
    Apply(commands::apply::ApplyArgs),
    /// One pass of a ChaosAgent: a dry run unless --execute. Never run by apply.
    Chaos(commands::chaos::ChaosArgs),
    /// Print the CustomResourceDefinitions of tend's own kinds.
    Crds,
    /// Print tend's version, build commit and supported Kubernetes versions.
    Version,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(commands::completions::CompletionsArgs),
    /// Print the manual page tend(1), or write all pages with --out-dir.
    Man(commands::completions::ManArgs),
}

impl GlobalArgs {
    /// Whether to colour output on a stream that is (or is not) a terminal.
    pub fn use_color(&self, is_terminal: bool) -> bool {
        match self.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_terminal && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    pub fn source_options(&self) -> crate::source::SourceOptions {
        crate::source::SourceOptions {
            repo: self.repo.clone(),
            git_ref: self.git_ref.clone(),
            path: self.path.clone(),
            cache_dir: self.cache_dir.clone(),
            ssh_key: self.ssh_key.clone(),
            known_hosts: self.known_hosts.clone(),
            // Environment only: a token on the command line would show up in `ps`.
            token: std::env::var("TEND_GIT_TOKEN")
                .ok()
                .filter(|t| !t.is_empty()),
            kustomize_command: self.kustomize_command.clone(),
        }
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.global);
    match commands::run(cli) {
        Ok(code) => code,
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
    // request-level detail helps, since they log retried failures as errors.
    let filter = tracing_subscriber::EnvFilter::new(match global.verbose {
        0 | 1 => format!("tend={level}"),
        _ => format!("tend={level},kube=debug,warn"),
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
