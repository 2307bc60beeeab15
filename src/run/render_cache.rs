//! Kept renders of Helm releases (see [`crate::render::helm_cache`]) as files of the cache
//! directory: `<cache dir>/helm-renders/<sha256>.json`, one per release render, written
//! atomically, owner-only. The file name mixes in the binary's identity, so a rebuilt or
//! upgraded tend never reads what another build rendered.
//!
//! A render that drew random values (the passwords a chart generates) is sealed: AES-256-GCM
//! under a key derived (HMAC-SHA256) from the cluster's seed and the render's key, the key as
//! associated data, the nonce derived from the content (the same render seals to the same
//! bytes). Reading the cache without the seed, held in the cluster's Secret, gives nothing;
//! whoever holds the seed could draw the same values anyway.

use crate::helm::chart::{Chart, Charts, OnDisk};
use crate::render::helm_cache::{Added, Kept, KeptKey, KeptRenders};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use hmac::{Hmac, Mac};
use sha2::Digest;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Bytes of the nonce at the start of a sealed entry.
const NONCE: usize = 12;

#[derive(Debug)]
pub struct FileRenderCache {
    dir: PathBuf,
    /// This binary: its version, size and modification time.
    build: String,
}

impl FileRenderCache {
    pub fn new(cache_dir: &Path) -> FileRenderCache {
        let exe = std::env::current_exe()
            .and_then(std::fs::metadata)
            .map(|m| {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                format!("{}:{modified}", m.len())
            })
            .unwrap_or_default();
        FileRenderCache {
            dir: cache_dir.join("helm-renders"),
            build: format!("{} {exe}", env!("CARGO_PKG_VERSION")),
        }
    }

    fn path(&self, key: &str) -> PathBuf {
        let mut hash = sha2::Sha256::new();
        hash.update(self.build.as_bytes());
        hash.update([0]);
        hash.update(key.as_bytes());
        self.dir
            .join(format!("{}.json", hex::encode(hash.finalize())))
    }

    /// What was kept under `keys`, for a render to take.
    pub fn read(&self, keys: &[KeptKey]) -> KeptRenders {
        let found = keys
            .iter()
            .filter_map(|key| {
                let bytes = std::fs::read(self.path(&key.key)).ok()?;
                let bytes = match key.sealed_with {
                    None => bytes,
                    Some(seed) => unseal(key, seed, &bytes)?,
                };
                // A damaged entry is rendered again (and replaced).
                let kept = Kept::read(&bytes)?;
                Some((key.key.clone(), kept))
            })
            .collect();
        KeptRenders::new(found)
    }

    /// Keep what a render added. Returns how many were written.
    pub fn write(&self, added: &[Added]) -> usize {
        let mut written = 0;
        for added in added {
            let key = &added.key;
            let path = self.path(&key.key);
            let result = match key.sealed_with {
                None => write_private_with(&self.dir, &path, |file| added.write_entry(file)),
                Some(seed) => added
                    .to_entry()
                    .map(|bytes| seal(key, seed, &bytes))
                    .and_then(|bytes| write_private(&self.dir, &path, &bytes)),
            };
            match result {
                Ok(()) => written += 1,
                // Only a cost: the next run renders it again.
                Err(err) => {
                    tracing::debug!("cannot keep a Helm render in {}: {err}", path.display())
                }
            }
        }
        written
    }
}

impl FileRenderCache {
    /// Where the digest of a chart directory read with the stamps `on_disk` is kept:
    /// `helm-renders/charts/<sha256>`, of this binary, the stamps and the digests of the
    /// dependencies fetched for it (not on disk, so not stamped).
    fn digest_path(&self, chart: &Chart, on_disk: &OnDisk) -> PathBuf {
        let mut hash = sha2::Sha256::new();
        hash.update(self.build.as_bytes());
        hash.update(b"\0chart digest by stamps\0");
        hash.update(on_disk.stamps.as_bytes());
        for fetched in chart.dependencies.iter().skip(on_disk.dependencies) {
            hash.update([0]);
            hash.update(fetched.digest().as_bytes());
        }
        self.dir.join("charts").join(hex::encode(hash.finalize()))
    }

    /// Give each chart directory whose files are stamped as when a run hashed them that
    /// run's digest, so its bytes are not hashed again (see [`OnDisk`]).
    pub fn recall_digests(&self, charts: &Charts) -> usize {
        let unrecalled = charts.dirs.values().filter(|c| c.digest.get().is_none());
        unrecalled.filter(|c| self.recall_digest(c)).count()
    }

    /// Whether `chart` has its digest: recalled now, or had it already.
    pub fn recall_digest(&self, chart: &Chart) -> bool {
        if chart.digest.get().is_some() {
            return true;
        }
        let Some(on_disk) = chart.on_disk.as_ref().filter(|d| d.settled) else {
            return false;
        };
        let Ok(digest) = std::fs::read_to_string(self.digest_path(chart, on_disk)) else {
            return false;
        };
        let well_formed = digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit());
        well_formed && chart.digest.set(digest).is_ok()
    }

    /// Keep the digests of chart directories that were hashed, when their files' stamps
    /// can be trusted.
    pub fn keep_digests(&self, charts: &Charts) {
        for chart in charts.dirs.values() {
            let (Some(on_disk), Some(digest)) = (&chart.on_disk, chart.digest.get()) else {
                continue;
            };
            let path = self.digest_path(chart, on_disk);
            if !on_disk.settled || path.exists() {
                continue;
            }
            if let Err(err) = write_private(&self.dir.join("charts"), &path, digest.as_bytes()) {
                tracing::debug!("cannot keep a chart's digest in {}: {err}", path.display());
            }
        }
    }
}

/// The cipher of one sealed entry: its key derived from the seed and the entry's key.
fn cipher(key: &KeptKey, seed: u64) -> Option<Aes256Gcm> {
    let mut mac =
        <Hmac<sha2::Sha256> as hmac::KeyInit>::new_from_slice(&seed.to_le_bytes()).ok()?;
    mac.update(b"tend sealed helm render\0");
    mac.update(key.key.as_bytes());
    Aes256Gcm::new_from_slice(&mac.finalize().into_bytes()).ok()
}

/// `nonce ‖ ciphertext` of `plain`.
fn seal(key: &KeptKey, seed: u64, plain: &[u8]) -> Vec<u8> {
    let Some(cipher) = cipher(key, seed) else {
        return Vec::new();
    };
    let nonce: [u8; NONCE] = {
        let digest = sha2::Sha256::new()
            .chain_update(seed.to_le_bytes())
            .chain_update(plain)
            .finalize();
        let mut nonce = [0u8; NONCE];
        nonce.copy_from_slice(&digest[..NONCE]);
        nonce
    };
    let payload = Payload {
        msg: plain,
        aad: key.key.as_bytes(),
    };
    match cipher.encrypt(&Nonce::from(nonce), payload) {
        Ok(sealed) => [nonce.as_slice(), &sealed].concat(),
        Err(_) => Vec::new(),
    }
}

/// What [`seal`] sealed; `None` when the bytes were not sealed with this seed and key.
fn unseal(key: &KeptKey, seed: u64, bytes: &[u8]) -> Option<Vec<u8>> {
    if bytes.len() < NONCE {
        return None;
    }
    let (nonce, sealed) = bytes.split_at(NONCE);
    let nonce: [u8; NONCE] = nonce.try_into().ok()?;
    let payload = Payload {
        msg: sealed,
        aad: key.key.as_bytes(),
    };
    cipher(key, seed)?
        .decrypt(&Nonce::from(nonce), payload)
        .ok()
}

/// Write `bytes` to `path` in `dir` (created owner-only) through a temporary file, so a
/// reader never sees half of it.
pub(super) fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_private_with(dir, path, |file| file.write_all(bytes))
}

/// Write what `write` writes to `path` in `dir`, as [`write_private`] does.
fn write_private_with(
    dir: &Path,
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    {
        let mut buffered = std::io::BufWriter::new(file.as_file_mut());
        write(&mut buffered)?;
        buffered.flush()?;
    }
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::helm::chart::Manifest;

    #[test]
    fn a_kept_render_is_read_back_and_a_damaged_one_is_not() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = FileRenderCache::new(dir.path());
        let manifests = vec![Manifest {
            template: "templates/a.yaml".into(),
            crd: false,
            text: "kind: ConfigMap\n".into(),
            random: false,
        }];
        let plain = |k: &str| KeptKey {
            key: k.to_string(),
            sealed_with: None,
        };
        let keys = [plain("k"), plain("other")];
        assert!(cache.read(&keys).get("k").is_none());
        let added = Added {
            key: plain("k"),
            manifests: manifests.clone(),
            parsed: Vec::new(),
        };
        assert_eq!(cache.write(&[added]), 1);
        let kept = cache.read(&keys);
        let found = kept.get("k").expect("kept");
        assert_eq!((found.manifests, found.parsed.len()), (manifests, 0));
        assert!(kept.get("other").is_none());
        assert_eq!(kept.taken(), 1);
        // Cut short, one byte more, or damaged anywhere: rendered again.
        let entry = std::fs::read(cache.path("k")).expect("entry");
        for damaged in [
            &entry[..entry.len() - 1],
            &[entry.as_slice(), b"x"].concat(),
            &entry[..entry.len() / 2],
            &entry
                .iter()
                .map(|&b| if b == b'{' { b'[' } else { b })
                .collect::<Vec<_>>(),
        ] {
            std::fs::write(cache.path("k"), damaged).expect("write");
            assert!(cache.read(&keys).get("k").is_none());
        }
        // Earlier layouts: the manifests and documents as one JSON document, or a list.
        std::fs::write(cache.path("k"), br#"{"manifests":[],"parsed":{}}"#).expect("write");
        assert!(cache.read(&keys).get("k").is_none());
        let layout_4 = b"tend kept helm render 4\n28\n{\"manifests\":[],\"parsed\":{}}";
        std::fs::write(cache.path("k"), layout_4).expect("write");
        assert!(cache.read(&keys).get("k").is_none());
        std::fs::write(cache.path("k"), b"[]").expect("write");
        assert!(cache.read(&keys).get("k").is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("helm-renders"))
                .expect("dir")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn a_render_drawn_from_a_seed_is_sealed_and_opens_with_that_seed_only() {
        let dir = tempfile::tempdir().expect("tmp");
        let cache = FileRenderCache::new(dir.path());
        let manifests = vec![Manifest {
            template: "templates/secret.yaml".into(),
            crd: false,
            text: "password: drawn-at-random-1234\n".into(),
            random: true,
        }];
        let key = KeptKey::sealed("release", 42);
        let (docs, _) = crate::yaml::parse_file(Path::new("f"), &manifests[0].text);
        let docs_kept =
            crate::render::kept_parse::as_kept(&docs, &manifests[0].text).expect("kept");
        let added = Added {
            key: key.clone(),
            manifests: manifests.clone(),
            parsed: vec![("templates/secret.yaml".into(), docs_kept)],
        };
        assert_eq!(cache.write(&[added]), 1);
        let on_disk = std::fs::read(cache.path(&key.key)).expect("written");
        let text = String::from_utf8_lossy(&on_disk);
        assert!(!text.contains("drawn-at-random") && !text.contains("secret.yaml"));
        let found = cache
            .read(std::slice::from_ref(&key))
            .get(&key.key)
            .expect("opens");
        assert_eq!(found.manifests, manifests);
        assert_eq!(found.parsed["templates/secret.yaml"].len(), 1);
        // The same file read as if sealed with another seed, or as plain: nothing.
        let other_seed = KeptKey {
            key: key.key.clone(),
            sealed_with: Some(43),
        };
        assert!(cache.read(&[other_seed]).get(&key.key).is_none());
        let plain = KeptKey {
            key: key.key.clone(),
            sealed_with: None,
        };
        assert!(cache.read(&[plain]).get(&key.key).is_none());
    }
}
