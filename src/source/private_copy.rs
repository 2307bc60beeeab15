//! A private copy of the walked directory where kustomize reads decrypted SOPS inputs: mode
//! 0700 in the system temp dir (outside the repository and the git cache), removed when
//! dropped (end of the walk, or an error) and on SIGINT/SIGTERM while it exists.

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};
use std::path::{Path, PathBuf};

pub struct PrivateCopy {
    dir: Option<tempfile::TempDir>,
    signals: Option<(Handle, std::thread::JoinHandle<()>)>,
}

impl PrivateCopy {
    /// Copy `root` (without `.git`) into a new private directory.
    pub fn of(root: &Path) -> std::io::Result<PrivateCopy> {
        let dir = tempfile::Builder::new()
            .prefix("tend-decrypted-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()?;
        // Armed before anything is decrypted into it.
        let signals = Signals::new([SIGINT, SIGTERM]).ok().map(|mut signals| {
            let handle = signals.handle();
            let path = dir.path().to_path_buf();
            let thread = std::thread::spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    let _ = std::fs::remove_dir_all(&path);
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                }
            });
            (handle, thread)
        });
        let copy = PrivateCopy {
            dir: Some(dir),
            signals,
        };
        copy_tree(root, copy.path())?;
        Ok(copy)
    }

    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }

    /// Write a decrypted input at `relative` (mode 0600).
    pub fn write(&self, relative: &Path, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let target = self.path().join(relative);
        let _ = std::fs::remove_file(&target);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(target)?
            .write_all(bytes)
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
        if let Some((handle, thread)) = self.signals.take() {
            handle.close();
            let _ = thread.join();
        }
    }
}

/// Files, directories and symlinks (as links) of `from`, without `.git`.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_name() == ".git" {
            continue;
        }
        let target: PathBuf = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
