//! The hostile-input corpus (RELIABILITY.md): charts, templates, archives, repositories and
//! encrypted files written to hurt, each built here at test time (nothing large is
//! committed) and run through `tend render` with 4 GiB of address space and 30 seconds. Every
//! case must end by itself with exit 0 or 2, never a panic or an abort, with the message that
//! names the limit; the leak cases print no form of their canary.

mod charts;
mod sops;
mod sources;
mod templates;

use crate::common::*;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one hostile run gave.
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

/// The address space every hostile run gets (`ulimit -v`), in KiB.
const ADDRESS_SPACE_KIB: u64 = 4 * 1024 * 1024;
/// The time every hostile run gets.
const DEADLINE: Duration = Duration::from_secs(30);

/// `tend render --repo DIR ARGS`, bounded: 4 GiB of address space, 30 seconds.
pub fn render_bounded(dir: &Path, args: &[&str]) -> Outcome {
    let mut all = vec!["render", "--repo", dir.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    bounded(&all)
}

/// The `tend` binary with `args`, in a shell that caps its address space, killed (and the
/// test failed) past the deadline.
pub fn bounded(args: &[&str]) -> Outcome {
    let out = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (stdout_path, stderr_path) = (out.path().join("stdout"), out.path().join("stderr"));
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "ulimit -v {ADDRESS_SPACE_KIB} && exec \"$0\" \"$@\" >'{}' 2>'{}'",
            stdout_path.display(),
            stderr_path.display()
        ))
        .arg(assert_cmd::cargo::cargo_bin("tend"))
        .args(args)
        .stdin(Stdio::null());
    for (key, _) in std::env::vars() {
        if key.starts_with("TEND_") || key == "KUBECONFIG" {
            cmd.env_remove(key);
        }
    }
    cmd.env("TEND_COLOR", "never")
        .env("TEND_CACHE_DIR", out.path().join("cache"));
    let start = Instant::now();
    let mut child = cmd.spawn().expect("start tend");
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for tend") {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tend {args:?} ran past {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |path: &Path| {
        let mut bytes = Vec::new();
        if let Ok(mut file) = std::fs::File::open(path) {
            let _ = file.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Outcome {
        code: status.code().unwrap_or(-1),
        stdout: read(&stdout_path),
        stderr: read(&stderr_path),
        took: start.elapsed(),
    }
}

impl Outcome {
    /// Ended with exit 2 (refused), its error saying `needle`.
    #[track_caller]
    pub fn refused_with(&self, needle: &str) {
        self.ended_by_itself();
        assert_eq!(self.code, 2, "expected a refusal\n{}", self.stderr);
        assert!(
            self.stderr.contains(needle),
            "expected {needle:?} in:\n{}",
            self.stderr
        );
    }

    /// Ended with exit 0.
    #[track_caller]
    pub fn rendered(&self) {
        self.ended_by_itself();
        assert_eq!(self.code, 0, "expected a render\n{}", self.stderr);
    }

    /// Exit 0 or 2, no panic, no abort.
    #[track_caller]
    pub fn ended_by_itself(&self) {
        assert!(
            self.code == 0 || self.code == 2,
            "exit {} after {:?}\n{}",
            self.code,
            self.took,
            self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        for sign in ["stack overflow", "attempt to", "memory allocation of"] {
            assert!(!self.stderr.contains(sign), "{}", self.stderr);
        }
    }
}

/// A repository with one chart (`charts/c`) released by a HelmChart; `files` are added
/// under the chart's directory (`templates/x.yaml`, `values.yaml`, ...).
pub fn chart_repo(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = site(&[
        (
            "apps/release.yaml",
            "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: r\n  namespace: default\nspec:\n  chart: ../charts/c\n",
        ),
        (
            "charts/c/Chart.yaml",
            "apiVersion: v2\nname: c\nversion: 1.0.0\n",
        ),
    ]);
    for (path, bytes) in files {
        let path = dir.path().join("charts/c").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    dir
}

/// A chart whose one template is `text`, rendered bounded.
pub fn render_template(text: &str) -> Outcome {
    let dir = chart_repo(&[("templates/t.yaml", text.as_bytes())]);
    render_bounded(dir.path(), &[])
}
