//! Load the desired state: resolve the source, walk it, render it.

use crate::render::{self, RenderOptions, Rendered};
use crate::source::{self, walk, Checkout, SourceOptions};
use crate::text::count;
use crate::Error;

/// The desired state of a run and where it came from.
#[derive(Debug)]
pub struct DesiredState {
    pub checkout: Checkout,
    pub rendered: Rendered,
}

impl DesiredState {
    /// One-line summary: objects, files, commit, targeting.
    pub fn summary(&self, cluster: Option<&str>) -> String {
        let r = &self.rendered;
        let mut line = format!(
            "rendered {} from {} ({}) of {}",
            count(r.objects.len(), "object"),
            count(r.files, "file"),
            count(r.documents, "document"),
            self.checkout.description,
        );
        match &self.checkout.commit {
            Some(commit) => line.push_str(&format!(" at commit {commit}")),
            None => line.push_str(" (not a git commit)"),
        }
        if let Some(cluster) = cluster {
            line.push_str(&format!(", cluster {cluster}"));
        }
        if r.skipped_by_targeting > 0 {
            line.push_str(&format!(
                ", {} targeted at other clusters skipped",
                count(r.skipped_by_targeting, "document")
            ));
        }
        line
    }
}

/// Resolve, walk and render. Walk problems (unreadable files, symlink escapes) and render
/// problems are reported together.
pub fn desired_state(
    source_opts: &SourceOptions,
    render_opts: &RenderOptions,
) -> Result<DesiredState, Error> {
    let mut checkout = source::resolve(source_opts)?;
    checkout.kustomize.keys = render_opts.keys.clone();
    tracing::debug!("reading desired state from {}", checkout.dir.display());
    let walked =
        walk::walk_with(&checkout.dir, &checkout.kustomize).map_err(|source| Error::Walk {
            path: checkout.dir.clone(),
            source,
        })?;
    let mut walked = walked;
    // Charts from chart repositories: fetched (or taken from the cache) before rendering.
    let cache_dir = source_opts
        .cache_dir
        .clone()
        .unwrap_or_else(source::default_cache_dir);
    walked.charts.remote = source::charts::remote::fetch_all(
        &walked.files,
        &cache_dir,
        &render_opts.chart_credentials,
        &mut walked.problems,
    );
    let rendered = render::render_with_charts(&walked.files, &walked.charts, render_opts);
    super::keys::save_cache(&render_opts.keys, &cache_dir);
    let rendered = match rendered {
        Ok(rendered) if walked.problems.is_empty() => rendered,
        Ok(_) => {
            return Err(
                render::RenderError::Invalid(crate::problem::Problems(walked.problems)).into(),
            )
        }
        Err(render::RenderError::Invalid(mut problems)) => {
            problems.0.extend(walked.problems);
            problems.0.sort();
            return Err(render::RenderError::Invalid(problems).into());
        }
    };
    Ok(DesiredState { checkout, rendered })
}
