//! The clusters of a run, as the source stage sees them: controllers' units (Argo CD
//! destinations, the clusters generator) send objects to them.

/// A cluster of a run over several (`--context` more than once, `--all-contexts`, a
/// `Fleet`), as controllers' units see it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunCluster {
    /// Its name in the run (`tend.dev/clusters`, reports).
    pub name: String,
    /// The API server URL its kubeconfig context names, when known before connecting.
    pub server: Option<String>,
    /// The Fleet's `labels` of it.
    pub labels: std::collections::BTreeMap<String, String>,
}
