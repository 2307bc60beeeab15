//! Flags shared by every command (README "Commands, flags and environment variables"): each also reads `TEND_<FLAG>`; flags win.

use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// Flags shared by every command (README "Commands, flags and environment variables").
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
    /// Kubeconfig context to use. Given more than once, each context is a cluster of the run, named as the context (README "A fleet of clusters"); with --fleet, the context of the cluster that holds the fleet's kubeconfig Secrets.
    #[arg(long, global = true, env = "TEND_CONTEXT")]
    pub context: Vec<String>,
    /// Run every context of the kubeconfig, each a cluster named as its context.
    #[arg(
        long,
        global = true,
        env = "TEND_ALL_CONTEXTS",
        conflicts_with = "fleet"
    )]
    pub all_contexts: bool,
    /// A Fleet file (tend.dev/v1alpha1 kind Fleet) listing the clusters of the run: a path here, else in the --repo directory.
    #[arg(long, global = true, env = "TEND_FLEET", value_name = "FILE")]
    pub fleet: Option<PathBuf>,
    /// How long the run as a whole rides out API outages (connections refused or dropped, 429, 502-504): one budget shared by every request, after which requests fail.
    #[arg(long, global = true, env = "TEND_RETRY_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub retry_timeout: std::time::Duration,
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
    /// Work budget of each Helm release's render, in template steps (nodes walked, calls, items ranged over): a chart past it is refused (RELIABILITY.md).
    #[arg(
        long,
        global = true,
        env = "TEND_HELM_MAX_STEPS",
        value_name = "STEPS",
        default_value_t = 50_000_000
    )]
    pub helm_max_steps: u64,
    /// Memory budget of each Helm release's render, in bytes of text and values it makes: a chart past it is refused (RELIABILITY.md).
    #[arg(long, global = true, env = "TEND_HELM_MAX_BYTES", value_name = "BYTES", default_value_t = 1 << 30)]
    pub helm_max_bytes: u64,
    /// Largest git checkout, in bytes of all its files together: a commit past it is refused before it is written (RELIABILITY.md).
    #[arg(long, global = true, env = "TEND_MAX_SOURCE_BYTES", value_name = "BYTES", default_value_t = 1 << 30)]
    pub max_source_bytes: u64,
    /// Most files, directories and symlinks in a git checkout.
    #[arg(
        long,
        global = true,
        env = "TEND_MAX_SOURCE_FILES",
        value_name = "COUNT",
        default_value_t = 200_000
    )]
    pub max_source_files: u64,
    /// Largest single file in a git checkout, in bytes.
    #[arg(long, global = true, env = "TEND_MAX_SOURCE_BLOB_BYTES", value_name = "BYTES", default_value_t = 64 << 20)]
    pub max_source_blob_bytes: u64,
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
    /// File of age identities (AGE-SECRET-KEY-1…) for SOPS-encrypted files, besides SOPS_AGE_KEY, SOPS_AGE_KEY_FILE and ~/.config/sops/age/keys.txt; repeatable (in the variable: separated by ':').
    #[arg(
        long,
        global = true,
        env = "TEND_DECRYPTION_KEY_FILE",
        value_name = "PATH",
        value_delimiter = ':'
    )]
    pub decryption_key_file: Vec<PathBuf>,
    /// Docker config JSON of logins for chart repositories and OCI registries (what `helm registry login` writes), besides Helm's own registry config; repeatable (in the variable: separated by ':').
    #[arg(
        long,
        global = true,
        env = "TEND_HELM_CREDENTIALS",
        value_name = "PATH",
        value_delimiter = ':'
    )]
    pub helm_credentials: Vec<PathBuf>,
    /// Refuse to read a commit (head), a tag (tag) or both (tag-and-head) unless a trusted key signed it (README "Verifying what you apply").
    #[arg(
        long,
        global = true,
        env = "TEND_VERIFY_SIGNATURES",
        value_enum,
        value_name = "MODE"
    )]
    pub verify_signatures: Option<crate::source::verify::VerifyMode>,
    /// Keys --verify-signatures trusts: armored OpenPGP public keys or an SSH allowed_signers file, or a directory of them; repeatable (in the variable: separated by ':').
    #[arg(
        long,
        global = true,
        env = "TEND_TRUSTED_KEYS",
        value_name = "PATH",
        value_delimiter = ':'
    )]
    pub trusted_keys: Vec<PathBuf>,
    /// Apply Flux's and Argo CD's own objects (Kustomization, HelmRelease, GitRepository, Application, ...) as ordinary objects instead of expanding them into what their controllers would apply: for a repository that installs Flux or Argo CD itself.
    #[arg(long, global = true, env = "TEND_APPLY_CONTROLLER_OBJECTS")]
    pub apply_controller_objects: bool,
    /// Hub and spoke, one spoke alone: expand only the Flux units whose spec.kubeConfig.secretRef is this Secret (and what they contain), and apply nothing else, with that spoke's --kubeconfig. Without it, a run against the hub applies each spoke's units to that spoke, reading its kubeconfig from the hub.
    #[arg(long, global = true, env = "TEND_UNITS_FOR_KUBECONFIG_SECRET", value_name = "NAMESPACE/NAME", value_parser = secret_ref)]
    pub units_for_kubeconfig_secret: Option<(String, String)>,
}

/// `NAMESPACE/NAME` of a Secret.
fn secret_ref(text: &str) -> Result<(String, String), String> {
    use crate::object::names::{dns1123_label, dns1123_subdomain};
    match text.split_once('/') {
        Some((ns, name)) if dns1123_label(ns).is_ok() && dns1123_subdomain(name).is_ok() => {
            Ok((ns.to_string(), name.to_string()))
        }
        _ => Err("expected NAMESPACE/NAME of a Secret, e.g. staging/cluster-kubeconfig".into()),
    }
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

impl GlobalArgs {
    /// Whether to colour output on a stream that is (or is not) a terminal.
    pub fn use_color(&self, is_terminal: bool) -> bool {
        match self.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_terminal && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    /// Render options, with the decryption keys read from every source (bad key files are
    /// errors here, before any work).
    pub fn render_options(&self) -> Result<crate::render::RenderOptions, crate::Error> {
        Ok(crate::render::RenderOptions {
            cluster: self.cluster.clone(),
            default_namespace: self.namespace.clone(),
            keys: std::sync::Arc::new(crate::run::keys::load(
                &self.decryption_key_file,
                &self
                    .cache_dir
                    .clone()
                    .unwrap_or_else(crate::source::default_cache_dir),
            )?),
            // A fresh seed each run (std's per-process random hasher keys): chart values made
            // with randAlphaNum & co. are never predictable from the repository.
            helm_seed: {
                use std::hash::BuildHasher;
                std::collections::hash_map::RandomState::new().hash_one(0u8)
            },
            helm_seed_kept: false,
            kube_version: None,
            kept_renders: None,
            helm_template: false,
            // Read here, at the edge; replaced by the commit's time where there is one.
            now: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
            helm_cluster: None,
            chart_credentials: std::sync::Arc::new(crate::run::chart_credentials::load(
                &self.helm_credentials,
            )?),
            helm_limits: crate::helm::template::RenderLimits {
                steps: self.helm_max_steps,
                bytes: self.helm_max_bytes,
            },
            apply_controller_objects: self.apply_controller_objects,
            file_namespaces: Default::default(),
            unit_files: Default::default(),
        })
    }

    /// Source options, with the trusted keys read (bad key files are errors here). `secret`:
    /// whether `--trusted-keys-secret` adds keys once connected.
    pub fn source_options(
        &self,
        secret: bool,
    ) -> Result<crate::source::SourceOptions, crate::Error> {
        if self.verify_signatures.is_some() && self.trusted_keys.is_empty() && !secret {
            return Err(crate::Error::Usage(
                "--verify-signatures needs the keys it trusts: pass --trusted-keys FILE|DIR \
                 (or, with diff and apply, --trusted-keys-secret NAMESPACE/NAME)"
                    .into(),
            ));
        }
        let trusted_keys = crate::source::verify::TrustedKeys::read(&self.trusted_keys)
            .map_err(|e| crate::Error::Usage(format!("--trusted-keys {e}")))?;
        Ok(crate::source::SourceOptions {
            repo: self.repo.clone(),
            git_ref: self.git_ref.clone(),
            path: self.path.clone(),
            cache_dir: self.cache_dir.clone(),
            ssh_key: self.ssh_key.clone(),
            known_hosts: self.known_hosts.clone(),
            kustomize_command: self.kustomize_command.clone(),
            units_for_kubeconfig_secret: self.units_for_kubeconfig_secret.clone(),
            // A run over several clusters sets them per cluster (ops::reconcile).
            run_clusters: Default::default(),
            more_paths: Vec::new(),
            // Environment only: a token on the command line would show up in `ps`.
            token: std::env::var("TEND_GIT_TOKEN")
                .ok()
                .filter(|t| !t.is_empty()),
            verify: self.verify_signatures,
            trusted_keys: std::sync::Arc::new(trusted_keys),
            tree_limits: crate::source::git::TreeLimits {
                bytes: self.max_source_bytes,
                files: self.max_source_files,
                blob_bytes: self.max_source_blob_bytes,
            },
            // A run that connects reads them (`run::executor`).
            cluster_objects: None,
        })
    }
}

impl GlobalArgs {
    /// How to reach the cluster; `interrupt` is the run's stop request.
    pub fn access(&self, interrupt: &crate::interrupt::Interrupt) -> crate::cluster::Access {
        crate::cluster::Access {
            kubeconfig: self.kubeconfig.clone(),
            kubeconfig_text: None,
            context: self.context.first().cloned(),
            retry_timeout: self.retry_timeout,
            interrupt: interrupt.clone(),
        }
    }
}

impl GlobalArgs {
    /// Where the clusters of a run come from (`--context`, `--all-contexts`, `--fleet`).
    pub fn fleet_choice(&self) -> crate::ops::fleet::FleetChoice {
        crate::ops::fleet::FleetChoice {
            contexts: self.context.clone(),
            all_contexts: self.all_contexts,
            fleet_file: self.fleet.clone(),
            kubeconfig: self.kubeconfig.clone(),
            repo: self.repo.clone(),
        }
    }
}

/// Parse `30s`, `5m`, `1h`, `500ms` or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: use e.g. 30s, 5m, 1h"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "invalid duration unit in {text:?}: use ms, s, m or h"
            ))
        }
    };
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert!(parse_duration("5x").is_err());
    }
}
