//! When libgit2 reads the system's CA certificates.
//!
//! libgit2 starts OpenSSL the first time any git function runs, and OpenSSL's
//! `SSL_CTX_set_default_verify_paths` then parses the whole CA bundle (~150 certificates,
//! ~240 M instructions: more than a no-op `tend diff` of a 1,000-object git checkout spends
//! on everything else). Most runs read a local checkout and never open a TLS connection. So
//! libgit2 is started at process start, before any thread exists, with an empty bundle
//! (`SSL_CERT_FILE=/dev/null` for that moment only; OpenSSL ignores a bundle it cannot read,
//! and keeps the certificate directory, which it reads certificate by certificate as a
//! handshake needs them), and the bundle OpenSSL would have read (the user's `SSL_CERT_FILE`,
//! else the system's) is loaded into it before the first fetch.

use std::sync::Once;

/// The bundle to load before the first fetch, found by the same probe git2 uses.
static DEFERRED_BUNDLE: std::sync::OnceLock<Option<std::path::PathBuf>> =
    std::sync::OnceLock::new();

/// Start libgit2 without reading the CA bundle. Call first thing in `main`, while the process
/// has one thread: it sets and then removes an environment variable.
pub fn start_libgit2_without_ca_bundle() {
    // What OpenSSL would have read: the user's SSL_CERT_FILE when it exists, else the
    // system's bundle (git2's probe, which honours the variable the same way).
    let bundle = openssl_probe::probe().cert_file;
    let users = std::env::var_os("SSL_CERT_FILE");
    // Sound: no other thread exists yet (the caller's contract), so none reads the
    // environment while it changes.
    std::env::set_var("SSL_CERT_FILE", "/dev/null");
    // Any libgit2 option call starts libgit2 (git2's `init`, once per process).
    // SAFETY: reading a libgit2 option has no precondition beyond libgit2 being started,
    // which the call itself does.
    let _ = unsafe { git2::opts::get_mwindow_size() };
    // Child processes (kustomize, post-renderers) see the environment tend was given.
    match users {
        Some(value) => std::env::set_var("SSL_CERT_FILE", value),
        None => std::env::remove_var("SSL_CERT_FILE"),
    }
    let _ = DEFERRED_BUNDLE.set(bundle);
}

/// Load the CA bundle into libgit2, once, before a fetch may open a TLS connection.
pub fn load_ca_bundle() {
    static LOADED: Once = Once::new();
    LOADED.call_once(|| {
        let Some(Some(bundle)) = DEFERRED_BUNDLE.get() else {
            return;
        };
        // SAFETY: git2 documents this as unsafe because libgit2's TLS state is global;
        // `Once` makes this the only call, made before the fetch that needs it.
        if let Err(err) = unsafe { git2::opts::set_ssl_cert_file(bundle.as_path()) } {
            tracing::debug!("cannot load the CA bundle {}: {err}", bundle.display());
        }
    });
}
