//! Where decryption keys come from (README "Encrypted secrets (SOPS)"): sops's own conventions,
//! then `--decryption-key-file`. Reads files and the environment; parsing is [`crate::sops`].

use crate::sops::Keys;
use crate::Error;
use std::path::{Path, PathBuf};

/// Largest key file read: identity files are a few hundred bytes.
const MAX_KEY_FILE_BYTES: u64 = 1024 * 1024;

/// The keys of a run: `SOPS_AGE_KEY`, `SOPS_AGE_KEY_FILE`, `$XDG_CONFIG_HOME/sops/age/keys.txt`
/// (default `~/.config/sops/age/keys.txt`), then each `--decryption-key-file`. A key source
/// named explicitly that cannot be read or holds something else is an error; the default
/// file is only noted when missing.
pub fn load(files: &[PathBuf], cache_dir: &Path) -> Result<Keys, Error> {
    let mut keys = Keys::default();
    match std::env::var("SOPS_AGE_KEY") {
        Ok(text) if !text.trim().is_empty() => {
            keys.add_text("SOPS_AGE_KEY", &text)
                .map_err(|e| Error::Usage(format!("SOPS_AGE_KEY: {e}")))?;
        }
        _ => keys.note("SOPS_AGE_KEY (unset)".into()),
    }
    match std::env::var_os("SOPS_AGE_KEY_FILE").filter(|v| !v.is_empty()) {
        Some(path) => read_into(&mut keys, Path::new(&path), "SOPS_AGE_KEY_FILE")?,
        None => keys.note("SOPS_AGE_KEY_FILE (unset)".into()),
    }
    if let Some(default) = default_key_file() {
        if default.is_file() {
            read_into(&mut keys, &default, "the default age key file")?;
        } else {
            keys.note(format!("{} (not found)", default.display()));
        }
    }
    for file in files {
        read_into(&mut keys, file, "--decryption-key-file")?;
    }
    attach_cache(&mut keys, cache_dir);
    Ok(keys)
}

/// The file of the data-key cache ([`crate::sops::cache`]) in tend's cache directory.
fn cache_file(cache_dir: &Path) -> PathBuf {
    cache_dir.join("sops-data-keys")
}

/// Give `keys` the data keys earlier runs opened with them (none without keys: nothing is
/// decrypted then). An unreadable cache is an empty one: it only saves time.
fn attach_cache(keys: &mut Keys, cache_dir: &Path) {
    if keys.is_empty() {
        return;
    }
    keys.attach_cache(std::fs::read(cache_file(cache_dir)).unwrap_or_default());
}

/// Write back the data keys this run opened, for the next run (mode 0600, replaced whole so
/// that a concurrent run never reads half a file). Failing to only costs the next run time.
pub fn save_cache(keys: &Keys, cache_dir: &Path) {
    let Some(cache) = keys.cache() else {
        return;
    };
    let (cached, opened) = cache.counts();
    if cached + opened > 0 {
        tracing::debug!("SOPS data keys: {cached} from the cache, {opened} opened with a key");
    }
    let Some(text) = cache.updated_text() else {
        return;
    };
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(cache_dir)?;
        let mut file = tempfile::Builder::new()
            .prefix(".sops-data-keys")
            .tempfile_in(cache_dir)?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        file.persist(cache_file(cache_dir))?;
        Ok(())
    };
    if let Err(err) = write() {
        tracing::debug!(
            "cannot write the SOPS data-key cache in {}: {err}",
            cache_dir.display()
        );
    }
}

/// `$XDG_CONFIG_HOME/sops/age/keys.txt`, else `$HOME/.config/sops/age/keys.txt`.
fn default_key_file() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".config"))
        })?;
    Some(config.join("sops").join("age").join("keys.txt"))
}

fn read_into(keys: &mut Keys, path: &Path, what: &str) -> Result<(), Error> {
    let fail = |message: String| Error::Usage(format!("{what} {}: {message}", path.display()));
    let size = std::fs::metadata(path)
        .map_err(|e| fail(format!("cannot read it: {e}")))?
        .len();
    if size > MAX_KEY_FILE_BYTES {
        return Err(fail("is larger than 1 MiB; is it a key file?".into()));
    }
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it: {e}")))?,
    );
    keys.add_text(&path.display().to_string(), &text)
        .map_err(|e| fail(e.to_string()))?;
    Ok(())
}

/// The run's render options with the keys of `--decryption-secret` added: its `*.agekey`
/// entries (age identities) and `*.asc` entries (armored PGP keys), as Flux reads them.
pub async fn with_secret(
    session: &crate::cluster::Session,
    render: &crate::render::RenderOptions,
    decryption_secret: &Option<(String, String)>,
    cache_dir: &Path,
) -> Result<crate::render::RenderOptions, Error> {
    let mut render = render.clone();
    let Some((namespace, name)) = decryption_secret else {
        return Ok(render);
    };
    let entries = flag_secret(
        session,
        "--decryption-secret",
        namespace,
        name,
        "create it with the age identities (`*.agekey`) or PGP keys (`*.asc`) that open the repository's files",
    )
    .await?;
    let mut keys = (*render.keys).clone();
    let mut used = 0;
    for (key, bytes) in &entries {
        if !(key.ends_with(".agekey") || key.ends_with(".asc")) {
            continue;
        }
        let text = zeroize::Zeroizing::new(String::from_utf8_lossy(bytes).into_owned());
        keys.add_text(&format!("Secret {namespace}/{name} key {key}"), &text)
            .map_err(|e| {
                Error::Usage(format!(
                    "--decryption-secret {namespace}/{name}: entry {key}: {e}"
                ))
            })?;
        used += 1;
    }
    if used == 0 {
        keys.note(format!(
            "Secret {namespace}/{name} (no *.agekey or *.asc entries)"
        ));
    }
    attach_cache(&mut keys, cache_dir);
    render.keys = std::sync::Arc::new(keys);
    Ok(render)
}

/// The decoded entries of the Secret a flag names (`--decryption-secret`,
/// `--helm-credentials-secret`), read at the start of a run; a missing one is an error that
/// says `how` to create it.
pub(super) async fn flag_secret(
    session: &crate::cluster::Session,
    flag: &str,
    namespace: &str,
    name: &str,
    how: &str,
) -> Result<Vec<(String, zeroize::Zeroizing<Vec<u8>>)>, Error> {
    session
        .read_secret(namespace, name)
        .await
        .map_err(Error::Cluster)?
        .ok_or_else(|| Error::Usage(format!("{flag} {namespace}/{name}: no such Secret; {how}")))
}
