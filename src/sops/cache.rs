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
use std::collections::HashSet;
use std::sync::Mutex;
use zeroize::Zeroizing;

/// Entries kept at most; past it, only those this run used or added are written back.
const MAX_ENTRIES: usize = 50_000;

type Index = [u8; 32];

/// One line of the file: the index and the sealed data key (32 bytes and its 16-byte tag),
/// in hex, sorted by index. Fixed width, so a run finds an entry by binary search in the
/// text as read, without parsing the file (which cost more than the lookups it saved).
const LINE: usize = 64 + 1 + 96 + 1;

/// The cache of one run: the file's entries, and those used and added.
pub struct DataKeyCache {
    /// One wrapping key per identity (derived from its secret, never written).
    wrapping: Vec<Zeroizing<[u8; 32]>>,
    /// The file's lines, each [`LINE`] bytes, sorted.
    table: String,
    used: Mutex<HashSet<Index>>,
    added: Mutex<Vec<(Index, Vec<u8>)>>,
}

impl std::fmt::Debug for DataKeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataKeyCache({} entries)", self.table.len() / LINE)
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
        DataKeyCache {
            wrapping,
            table: table_of(text),
            used: Mutex::default(),
            added: Mutex::default(),
        }
    }

    /// The sealed data key filed under `index`, if the file holds one.
    fn entry(&self, index: &Index) -> Option<Vec<u8>> {
        let wanted = hex::encode(index);
        let key_of = |i: usize| &self.table[i * LINE..i * LINE + 64];
        let (mut low, mut high) = (0, self.table.len() / LINE);
        while low < high {
            let middle = (low + high) / 2;
            match key_of(middle).cmp(wanted.as_str()) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => {
                    let line = &self.table[middle * LINE..(middle + 1) * LINE];
                    return hex::decode(&line[65..LINE - 1]).ok();
                }
            }
        }
        None
    }

    /// The data key of `stanza` (a recipient's sealed copy of it, as the sops block holds
    /// it), if an earlier run opened it with one of this run's identities.
    pub fn open(&self, stanza: &str) -> Option<Zeroizing<[u8; 32]>> {
        for wrapping in &self.wrapping {
            let index = index_of(wrapping, stanza);
            let Some(sealed) = self.entry(&index) else {
                continue;
            };
            let plain = Zeroizing::new(
                cipher(wrapping)
                    .decrypt(
                        &nonce(&index),
                        Payload {
                            msg: &sealed,
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
        let entries = self.table.len() / LINE;
        let keep_all = entries + added.len() <= MAX_ENTRIES;
        let kept = (0..entries)
            .map(|i| &self.table[i * LINE..(i + 1) * LINE])
            .filter(|line| {
                keep_all
                    || hex::decode(&line[..64])
                        .ok()
                        .and_then(|index| Index::try_from(index).ok())
                        .is_some_and(|index| used.contains(&index))
            })
            .map(str::to_string);
        let mut lines: Vec<String> = kept
            .chain(added.iter().map(|(index, sealed)| line_of(index, sealed)))
            .collect();
        lines.sort();
        lines.dedup();
        Some(lines.concat())
    }
}

fn line_of(index: &Index, sealed: &[u8]) -> String {
    format!("{} {}\n", hex::encode(index), hex::encode(sealed))
}

/// The file's text as a table of [`LINE`]-byte lines, sorted: as it is when tend wrote it
/// (checked, not parsed); otherwise rebuilt from its well-formed lines.
fn table_of(text: &str) -> String {
    let well_formed = |line: &str| {
        line.len() == LINE
            && line.is_ascii()
            && line.as_bytes()[64] == b' '
            && line.ends_with('\n')
            && line[..64]
                .bytes()
                .chain(line[65..LINE - 1].bytes())
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let lines = || (0..text.len() / LINE).map(|i| &text[i * LINE..(i + 1) * LINE]);
    let as_written = text.len() % LINE == 0
        && text.is_ascii()
        && lines().all(well_formed)
        && lines().zip(lines().skip(1)).all(|(a, b)| a[..64] < b[..64]);
    if as_written {
        return text.to_string();
    }
    let mut lines: Vec<&str> = text
        .split_inclusive('\n')
        .filter(|line| well_formed(line))
        .collect();
    lines.sort();
    lines.dedup_by(|a, b| a[..64] == b[..64]);
    lines.concat()
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

    #[test]
    fn entries_are_found_among_many_and_in_a_file_not_as_written() {
        let first = DataKeyCache::new([&b"K"[..]], "");
        for i in 0..300u32 {
            first.remember(&format!("stanza {i}"), &[i as u8; 32]);
        }
        let text = first.updated_text().unwrap();
        assert_eq!(text.len(), 300 * LINE);
        let next = DataKeyCache::new([&b"K"[..]], &text);
        for i in [0u32, 1, 150, 298, 299] {
            assert_eq!(
                next.open(&format!("stanza {i}")).as_deref(),
                Some(&[i as u8; 32])
            );
        }
        assert!(next.open("stanza 300").is_none());
        // Lines out of order, a foreign line between them: still found.
        let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
        lines.reverse();
        lines.insert(7, "# edited by hand\n");
        lines.insert(9, "é not ascii, and as long as a line, at 162 bytes exactly .......................................................................................................\n");
        let shuffled = DataKeyCache::new([&b"K"[..]], &lines.concat());
        assert_eq!(shuffled.open("stanza 42").as_deref(), Some(&[42u8; 32]));
    }
}
