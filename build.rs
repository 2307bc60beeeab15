//! Records the git commit tend is built from, for `tend version`: `TEND_BUILD_COMMIT` from
//! the environment when set (container builds have no .git), else `git rev-parse`, else
//! "unknown".

use std::process::Command;

fn git_head() -> Option<String> {
    let output = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let commit = String::from_utf8(output.stdout).ok()?.trim().to_string();
    (!commit.is_empty()).then_some(commit)
}

fn main() {
    let commit = std::env::var("TEND_BUILD_COMMIT")
        .ok()
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .or_else(git_head)
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=TEND_BUILD_COMMIT={commit}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-env-changed=TEND_BUILD_COMMIT");
    link_order();
}

/// Where the release binary is linked, the functions a run executes are laid out together,
/// in the order of `link-order.txt` (`scripts/link-order.py` writes it): the kernel maps a
/// binary's code 64 KiB around each page a process touches, and the code of a `tend render`
/// spread over a 25 MB `.text` made some 7 MiB of its 15 MiB floor resident (BENCHMARKS.md).
/// Only with rustc's own lld (the default for x86_64 Linux since Rust 1.90), which knows
/// `--symbol-ordering-file`; names the file does not match (another rustc, changed code)
/// are skipped, so a stale file costs nothing but its gain.
fn link_order() {
    println!("cargo:rerun-if-changed=link-order.txt");
    println!("cargo:rerun-if-env-changed=TEND_LINK_ORDER");
    let wanted = std::env::var("TEND_LINK_ORDER").map_or(true, |v| v != "0");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = std::env::var("TARGET").unwrap_or_default();
    let file = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("link-order.txt");
    if !(wanted && release && target == "x86_64-unknown-linux-gnu" && file.exists()) {
        return;
    }
    // A linker of the user's own (RUSTFLAGS, `target.<triple>.linker`) may not be lld.
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let own_linker = flags.contains("linker")
        || flags.contains("fuse-ld")
        || std::env::vars().any(|(k, _)| k.starts_with("CARGO_TARGET_") && k.ends_with("_LINKER"));
    if own_linker || !rustc_links_with_lld() {
        return;
    }
    println!(
        "cargo:rustc-link-arg-bin=tend=-Wl,--symbol-ordering-file={},--no-warn-symbol-ordering",
        file.display()
    );
}

/// Whether rustc is 1.90 or newer, which links x86_64 Linux binaries with its own lld.
fn rustc_links_with_lld() -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split_whitespace().nth(1).unwrap_or("");
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (1, 90)
}
