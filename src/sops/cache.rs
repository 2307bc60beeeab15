//! Opened data keys, remembered between runs. Opening a file's data key costs an X25519
//! scalar multiplication (age) or an RSA decryption (PGP), once per file and per run: most
//! of what decrypting a repository of Secrets costs. The cache keeps each opened data key
//! sealed (AES-256-GCM) under a key derived from the identity that opened it, indexed by a
//! keyed hash of the sealed stanza it came from. Whoever can read the cache but holds no
//! identity learns nothing (not even which files share a stanza with another repository);
//! whoever holds the identity could open the files anyway. Pure: the text in, the text out;
//! reading and writing the file is the caller's.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use zeroize::Zeroizing;

/// Entries kept at most; past it, only those this run used or added are written back.
const MAX_ENTRIES: usize = 50_000;

type Index = [u8; 32];

/// The cache of one run: entries read from the file, those used and those added.
pub struct DataKeyCache {
    /// One wrapping key per identity (derived from its secret, never written).
    wrapping: Vec<Zeroizing<[u8; 32]>>,
    entries: HashMap<Index, Vec<u8>>,
    used: Mutex<HashSet<Index>>,
    added: Mutex<Vec<(Index, Vec<u8>)>>,
}

impl std::fmt::Debug for DataKeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataKeyCache({} entries)", self.entries.len())
    }
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(key)
        .expect("HMAC takes keys of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

impl DataKeyCache {
    /// A cache for the identities whose secrets are `secrets` (their text, as in a key file),
    /// with the entries of `text` (the cache file; unreadable lines are skipped).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a [u8]>, text: &str) -> DataKeyCache {
        let wrapping = secrets
            .into_iter()
            .map(|secret| Zeroizing::new(hmac(b"tend sops data-key cache v1", &[secret])))
            .collect();
        let entries = text
            .lines()
            .filter_map(|line| {
                let (index, sealed) = line.split_once(' ')?;
                let index: Index = hex::decode(index).ok()?.try_into().ok()?;
                Some((index, hex::decode(sealed.trim()).ok()?))
            })
            .collect();
        DataKeyCache {
            wrapping,
            entries,
            used: Mutex::default(),
            added: Mutex::default(),
        }
    }

    /// The data key of `stanza` (a recipient's sealed copy of it, as the sops block holds
    /// it), if an earlier run opened it with one of this run's identities.
    pub fn open(&self, stanza: &str) -> Option<Zeroizing<[u8; 32]>> {
        for wrapping in &self.wrapping {
            let index = index_of(wrapping, stanza);
            let Some(sealed) = self.entries.get(&index) else {
                continue;
            };
            let plain = Zeroizing::new(
                cipher(wrapping)
                    .decrypt(
                        &nonce(&index),
                        Payload {
                            msg: sealed,
                            aad: &index,
                        },
                    )
                    .ok()?,
            );
            let key: [u8; 32] = plain[..].try_into().ok()?;
            if let Ok(mut used) = self.used.lock() {
                used.insert(index);
            }
            return Some(Zeroizing::new(key));
        }
        None
    }

    /// Remember the data key opened from `stanza`, under every identity of this run (which
    /// of them opened it is the crypto crates' business).
    pub fn remember(&self, stanza: &str, data_key: &[u8; 32]) {
        for wrapping in &self.wrapping {
            let index = index_of(wrapping, stanza);
            let Ok(sealed) = cipher(wrapping).encrypt(
                &nonce(&index),
                Payload {
                    msg: data_key,
                    aad: &index,
                },
            ) else {
                continue;
            };
            if let Ok(mut added) = self.added.lock() {
                added.push((index, sealed));
            }
        }
    }

    /// How many data keys this run found in the cache, and how many it opened and added.
    pub fn counts(&self) -> (usize, usize) {
        let used = self.used.lock().map_or(0, |u| u.len());
        let added = self.added.lock().map_or(0, |a| a.len());
        (used, added / self.wrapping.len().max(1))
    }

    /// The file's new text when this run added entries (None: nothing to write). Old entries
    /// are kept up to [`MAX_ENTRIES`]; past it, those this run did not use are dropped.
    pub fn updated_text(&self) -> Option<String> {
        let added = self.added.lock().ok()?;
        if added.is_empty() {
            return None;
        }
        let used = self.used.lock().ok()?;
        let keep_all = self.entries.len() + added.len() <= MAX_ENTRIES;
        let mut lines: Vec<String> = self
            .entries
            .iter()
            .filter(|(index, _)| keep_all || used.contains(*index))
            .chain(added.iter().map(|(i, s)| (i, s)))
            .map(|(index, sealed)| format!("{} {}\n", hex::encode(index), hex::encode(sealed)))
            .collect();
        lines.sort();
        lines.dedup();
        Some(lines.concat())
    }
}

fn cipher(wrapping: &[u8; 32]) -> Aes256Gcm {
    Aes256Gcm::new(&Key::<Aes256Gcm>::from(*wrapping))
}

/// Where a stanza's data key is filed: a keyed hash, so the file tells nothing about the
/// stanzas (which are in git) without the identity.
fn index_of(wrapping: &[u8; 32], stanza: &str) -> Index {
    hmac(wrapping, &[stanza.as_bytes()])
}

/// Deterministic, from the index: one stanza always seals one data key, so a repeated nonce
/// only repeats the same message, and the cache needs no randomness.
fn nonce(index: &Index) -> Nonce<aes_gcm::aes::cipher::consts::U12> {
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&index[..12]);
    Nonce::from(nonce)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_key_opens_in_the_next_run_only_with_the_same_identity() {
        let key = [7u8; 32];
        let first = DataKeyCache::new([&b"AGE-SECRET-KEY-1A"[..]], "");
        assert!(first.open("stanza").is_none());
        first.remember("stanza", &key);
        let text = first.updated_text().expect("an entry was added");
        assert!(!text.contains(&hex::encode(key)));

        let next = DataKeyCache::new([&b"AGE-SECRET-KEY-1A"[..]], &text);
        assert_eq!(next.open("stanza").as_deref(), Some(&key));
        assert!(next.open("another stanza").is_none());
        assert!(next.updated_text().is_none(), "nothing new to write");

        let stranger = DataKeyCache::new([&b"AGE-SECRET-KEY-1B"[..]], &text);
        assert!(stranger.open("stanza").is_none());
    }

    #[test]
    fn a_damaged_entry_is_ignored() {
        let first = DataKeyCache::new([&b"K"[..]], "");
        first.remember("stanza", &[1u8; 32]);
        let text = first.updated_text().unwrap();
        let (index, sealed) = text.trim().split_once(' ').unwrap();
        let flipped = if sealed.starts_with('0') { "1" } else { "0" };
        let damaged = format!("{index} {flipped}{}\nnot a line\n", &sealed[1..]);
        let next = DataKeyCache::new([&b"K"[..]], &damaged);
        assert!(next.open("stanza").is_none());
    }
}
