//! `tend version`: version, build commit, supported Kubernetes versions.

use super::{GlobalArgs, OutputFormat};
use crate::ops::Verdict;
use crate::Error;

/// Oldest Kubernetes minor version tend supports (server-side apply and ApplySet labels).
pub const MIN_KUBERNETES: &str = "1.26";
/// Newest Kubernetes version whose API types tend is built against (k8s-openapi feature).
pub const MAX_KUBERNETES: &str = "1.33";

pub fn run(global: &GlobalArgs) -> Result<Verdict, Error> {
    let version = env!("CARGO_PKG_VERSION");
    let commit = env!("TEND_BUILD_COMMIT");
    let text = match global.output {
        Some(OutputFormat::Json) | Some(OutputFormat::Yaml) => {
            let value = serde_json::json!({
                "version": version,
                "commit": commit,
                "kubernetes": {"min": MIN_KUBERNETES, "max": MAX_KUBERNETES},
                "apiVersion": crate::API_VERSION,
            });
            if global.output == Some(OutputFormat::Json) {
                format!("{}\n", serde_json::to_string_pretty(&value).unwrap_or_default())
            } else {
                crate::yaml::to_yaml(&value)
            }
        }
        _ => format!(
            "tend {version}\ncommit: {commit}\nkubernetes: {MIN_KUBERNETES} to {MAX_KUBERNETES}\nkinds: {} ({})\n",
            crate::API_VERSION,
            crate::kinds::TendKind::ALL.map(|k| k.kind()).join(", ")
        ),
    };
    super::print(&text)?;
    Ok(Verdict::Success)
}
