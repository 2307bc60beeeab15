//! What every step of reading the source passes on: a file's text ([`SourceFile`]), read
//! within [`MAX_FILE_BYTES`]. Below the walk, kustomize and charts, which all use it.

use std::path::PathBuf;

/// Largest YAML file tend reads. Kubernetes objects are limited to about 1.5 MiB by etcd, so
/// a file much larger than that is a mistake (a build artefact, a dump), not desired state.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// One YAML file of the desired state, or the output of one kustomize build.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path relative to the walked directory, used in every message; for a build,
    /// `<dir> (kustomize build)` (lines are those of the build output).
    pub path: PathBuf,
    pub text: String,
    /// For a build: the kustomize unit's directory, relative to the walked directory.
    pub unit: Option<PathBuf>,
}
