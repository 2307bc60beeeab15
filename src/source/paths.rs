//! The one lexical path normalisation of the source stage (kustomize inputs, chart
//! directories, values files). A leaf: it imports nothing of tend.

use std::path::{Component, Path, PathBuf};

/// `a/b/../c` as `a/c`, without touching the file system. A `..` that would climb above the
/// start is kept (`a/../../b` is `../b`), never dropped: dropping it would turn a path that
/// leaves the repository into one inside it, and callers refuse paths that start with `..`
/// as outside the repository ([`leaves_root`]).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`: the root has no parent to climb to.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(component),
            },
            other => out.push(other),
        }
    }
    out.iter().collect()
}

/// Whether a normalised path, relative to the repository root, is outside it: it climbs
/// above the root or is absolute.
pub fn leaves_root(normalized: &Path) -> bool {
    normalized.is_absolute() || normalized.starts_with("..")
}

/// Why a symlink has no target: it points at nothing, or (through others) at itself.
pub fn unresolved_symlink(err: &std::io::Error) -> &'static str {
    if err.raw_os_error() == Some(libc::ELOOP) {
        "symlink loop: it points (through other symlinks) back at itself; point it at a file"
    } else {
        "broken symlink: its target does not exist"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_parents_are_resolved() {
        assert_eq!(normalize(Path::new("a/b/../../c/./d")), Path::new("c/d"));
        assert_eq!(normalize(Path::new("./a/b/..")), Path::new("a"));
        assert_eq!(normalize(Path::new("a/..")), Path::new(""));
    }

    #[test]
    fn parents_above_the_start_are_kept() {
        assert_eq!(normalize(Path::new("a/../../b")), Path::new("../b"));
        // An odd and an even number of extra `..` alike: none is dropped.
        assert_eq!(
            normalize(Path::new("../../../values.yaml")),
            Path::new("../../../values.yaml")
        );
        assert_eq!(
            normalize(Path::new("apps/shop/../../../../values.yaml")),
            Path::new("../../values.yaml")
        );
        assert_eq!(normalize(Path::new("apps/../../..")), Path::new("../.."));
        assert!(leaves_root(&normalize(Path::new("apps/shop/../../../x"))));
        assert!(leaves_root(&normalize(Path::new("../../.."))));
        assert!(!leaves_root(&normalize(Path::new("apps/../values.yaml"))));
    }

    #[test]
    fn absolute_paths_stay_absolute() {
        assert_eq!(normalize(Path::new("/a/../../b")), Path::new("/b"));
        assert!(leaves_root(&normalize(Path::new("/etc/passwd"))));
    }
}
