//! The top-level error: one variant per layer, each keeping its cause as `#[source]`.

use crate::render::RenderError;
use crate::source::SourceError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the desired state: {0}")]
    Source(#[from] SourceError),
    #[error("cannot read {path}")]
    Walk {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    Engine(#[from] crate::apply::engine::EngineError),
    /// Connecting, discovery, or a read or write outside the engine (the secrets a run reads
    /// first, Helm's lookups, `tend chaos`).
    #[error(transparent)]
    Cluster(crate::cluster::ClusterError),
    #[error("{0}")]
    Usage(String),
    #[error("cannot write output")]
    Output(#[source] std::io::Error),
    /// The async runtime could not start, or a task on it died.
    #[error("cannot run tend's async runtime")]
    Runtime(#[source] std::io::Error),
}
