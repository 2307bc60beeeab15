//! Repositories written to hurt: git trees, kustomize bases, special files.
