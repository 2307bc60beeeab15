//! `tend render`: print the desired objects, fully offline.

use super::{GlobalArgs, OutputFormat};
use crate::ops::Verdict;
use crate::report::objects::{format_objects, push_object_yaml, StreamFormat};
use crate::run::load;
use crate::Error;
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct RenderArgs {
    /// Print Secret values (and values decrypted from SOPS-encrypted fields) instead of
    /// masking them (e.g. to pipe into kubectl).
    #[arg(long, env = "TEND_SHOW_SECRETS")]
    pub show_secrets: bool,
    /// The name `--show-secrets` had before SPEC named it; still accepted, not shown in help.
    #[arg(long, env = "TEND_REVEAL_SECRETS", hide = true)]
    pub reveal_secrets: bool,
    /// What `.Capabilities.KubeVersion` reports to Helm charts whose HelmChart sets no
    /// `spec.kubeVersion` (default v1.33.0; diff and apply use the cluster's version).
    #[arg(long, env = "TEND_KUBE_VERSION", value_name = "VERSION", value_parser = kube_version)]
    pub kube_version: Option<String>,
    /// Print each HelmChart's release as `helm template` prints it (`# Source:` lines, Helm's
    /// install order, hooks last; CRDs first when the HelmChart includes them) instead of the
    /// desired objects, to compare tend's render with Helm's.
    #[arg(long, env = "TEND_HELM_TEMPLATE")]
    pub helm_template: bool,
}

/// A Kubernetes version as Helm's `--kube-version` reads it: `1.34` is `v1.34.0`.
fn kube_version(text: &str) -> Result<String, String> {
    crate::kinds::helm_chart::normalized_kube_version(text)
        .ok_or_else(|| format!("{text:?} is not a Kubernetes version; write e.g. v1.34.0"))
}

pub fn run(global: &GlobalArgs, args: &RenderArgs) -> Result<Verdict, Error> {
    let format = match global.output {
        None | Some(OutputFormat::Yaml) | Some(OutputFormat::Text) => StreamFormat::Yaml,
        Some(OutputFormat::Json) => StreamFormat::Json,
        Some(OutputFormat::Markdown) => {
            return Err(Error::Usage(
                "tend render prints yaml or json; use -o yaml or -o json".into(),
            ))
        }
    };
    let mut render_opts = global.render_options()?;
    render_opts.kube_version = args.kube_version.clone();
    render_opts.helm_template = args.helm_template;
    let (checkout, rendered) = load::read_and_render(&global.source_options(false)?, &render_opts)?;
    for note in &rendered.notes {
        tracing::warn!("{note}");
    }
    crate::run::helm_seed::warn_offline(&rendered.random_charts);
    let show_secrets = args.show_secrets || args.reveal_secrets;
    if args.helm_template {
        print_as_helm(&rendered.helm_template, show_secrets)?;
    } else if format == StreamFormat::Yaml {
        // Written into one buffer, printed every 64 KiB or so: a big chart's stream is
        // megabytes, not held whole.
        let mut text = String::new();
        for object in &rendered.objects {
            push_object_yaml(&mut text, object, show_secrets);
            if text.len() >= 1 << 16 {
                super::print(&text)?;
                text.clear();
            }
        }
        super::print(&text)?;
    } else {
        super::print(&format_objects(&rendered.objects, format, show_secrets))?;
    }
    let cluster = global.cluster.as_deref();
    tracing::info!("{}", load::summary(&checkout, &rendered, cluster));
    // The process ends here: freeing a big chart's objects node by node (some 70,000 JSON
    // nodes for kube-prometheus-stack) would only cost time. Nothing in them has a `Drop`
    // that does more than free memory; the checkout (which may remove decrypted files)
    // is dropped as usual.
    std::mem::forget(rendered);
    Ok(Verdict::Success)
}

/// The releases as `helm template` prints them. That text holds Secret values in plain text,
/// which tend never prints unasked: a release with a Secret needs `--show-secrets`.
fn print_as_helm(releases: &[String], show_secrets: bool) -> Result<(), Error> {
    let has_secret = |text: &String| text.lines().any(|line| line.trim_end() == "kind: Secret");
    if !show_secrets && releases.iter().any(has_secret) {
        return Err(Error::Usage(
            "--helm-template: a release renders a Secret, whose values helm template prints in plain text; add --show-secrets to print them".into(),
        ));
    }
    super::print(&releases.concat())
}
