//! Shared helpers: a `tend` command with a clean environment, paths, temp copies.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// The `tend` binary with every `TEND_*` variable removed, so the developer's environment
/// cannot change a test's outcome, and a private cache dir.
pub fn tend() -> Command {
    let mut cmd = Command::cargo_bin("tend").expect("tend binary");
    for (key, _) in std::env::vars() {
        if key.starts_with("TEND_") || key == "KUBECONFIG" || key == "NO_COLOR" {
            cmd.env_remove(key);
        }
    }
    cmd.env("TEND_COLOR", "never");
    cmd
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn example_site() -> PathBuf {
    repo_root().join("examples/site")
}

pub fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(name)
}

/// Copy a directory tree (files and directories; symlinks copied as links).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Run a command, returning (exit code, stdout, stderr).
pub fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("run tend");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Parse a YAML stream of objects (as `tend render` prints) into JSON values.
pub fn parse_stream(text: &str) -> Vec<serde_json::Value> {
    let mut chunks = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            chunks.push(String::new());
        } else if let Some(last) = chunks.last_mut() {
            last.push_str(line);
        }
    }
    chunks
        .iter()
        .filter(|chunk| {
            chunk
                .lines()
                .any(|l| !l.trim().is_empty() && !l.starts_with('#'))
        })
        .map(|chunk| serde_yaml::from_str::<serde_json::Value>(chunk).expect("valid yaml document"))
        .collect()
}

/// `kind namespace/name` of each object.
pub fn ids(objects: &[serde_json::Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            format!(
                "{} {}/{}",
                o["kind"].as_str().unwrap_or(""),
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect()
}
