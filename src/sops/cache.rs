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
/// in hex, sorted by index. Fixed width, so a run reads the file as it is, without parsing
/// it (which cost more than the lookups it saved): it takes the first 8 bytes of each
/// line's index into [`DataKeyCache::prefixes`] and searches those, and checks only the
/// lines it finds. A file that looks as tend wrote it but is not (lines out of order, or
/// damaged) costs misses only: those files are opened with the key again, and the file is
/// written back sorted.
const LINE: usize = 64 + 1 + 96 + 1;

/// What one identity needs to find and open its entries, made once per run.
struct Wrapping {
    /// HMAC keyed with the wrapping key, cloned for each index (its key schedule done once).
    index_mac: Hmac<Sha256>,
    /// AES-256-GCM under the wrapping key (derived from the identity's secret, never written).
    cipher: Aes256Gcm,
}

/// The cache of one run: the file's entries, and those used and added.
pub struct DataKeyCache {
    /// One per identity.
    wrapping: Vec<Wrapping>,
    /// The file's lines, each [`LINE`] bytes, sorted (see [`LINE`]).
    table: Vec<u8>,
    /// The first 8 bytes of each line's index: searched in place of the table, which is 20
    /// times larger (a binary search in the table missed the CPU cache at every step).
    prefixes: Vec<u64>,
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
    /// with the entries of `file` (the cache file's bytes; unreadable lines are skipped).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a [u8]>, file: Vec<u8>) -> DataKeyCache {
        let wrapping = secrets
            .into_iter()
            .map(|secret| {
                let key = Zeroizing::new(hmac(b"tend sops data-key cache v1", &[secret]));
                Wrapping {
                    index_mac: <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(&key[..])
                        .expect("HMAC takes keys of any length"),
                    cipher: Aes256Gcm::new(&Key::<Aes256Gcm>::from(*key)),
                }
            })
            .collect();
        let table = table_of(file);
        let prefixes = table.chunks_exact(LINE).map(prefix_of).collect();
        DataKeyCache {
            wrapping,
            table,
            prefixes,
            used: Mutex::default(),
            added: Mutex::default(),
        }
    }

    /// The sealed data key filed under `index`, if the file holds one.
    fn entry(&self, index: &Index) -> Option<Vec<u8>> {
        let mut wanted = [0u8; 64];
        hex::encode_to_slice(index, &mut wanted).ok()?;
        let prefix = prefix_of(&wanted);
        let first = self.prefixes.partition_point(|p| *p < prefix);
        self.prefixes[first..]
            .iter()
            .take_while(|p| **p == prefix)
            .enumerate()
            .map(|(i, _)| &self.table[(first + i) * LINE..(first + i + 1) * LINE])
            .find(|line| line[..64] == wanted && well_formed(line))
            .and_then(|line| hex::decode(&line[65..LINE - 1]).ok())
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
                wrapping
                    .cipher
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
            let Ok(sealed) = wrapping.cipher.encrypt(
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
            .filter(|line| well_formed(line))
            .filter(|line| {
                keep_all
                    || hex::decode(&line[..64])
                        .ok()
                        .and_then(|index| Index::try_from(index).ok())
                        .is_some_and(|index| used.contains(&index))
            })
            .map(|line| String::from_utf8_lossy(line).into_owned());
        // What this run sealed comes first, so that it replaces a damaged line of its index.
        let mut lines: Vec<String> = added
            .iter()
            .map(|(index, sealed)| line_of(index, sealed))
            .chain(kept)
            .collect();
        lines.sort_by(|a, b| a[..64].cmp(&b[..64]));
        lines.dedup_by(|a, b| a[..64] == b[..64]);
        Some(lines.concat())
    }
}

fn line_of(index: &Index, sealed: &[u8]) -> String {
    format!("{} {}\n", hex::encode(index), hex::encode(sealed))
}

/// Whether `line` is one entry as tend writes it: index, space, sealed key, in lower hex.
fn well_formed(line: &[u8]) -> bool {
    let hex = |bytes: &[u8]| bytes.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    line.len() == LINE
        && line[64] == b' '
        && line[LINE - 1] == b'\n'
        && hex(&line[..64])
        && hex(&line[65..LINE - 1])
}

/// The file's text as a table of [`LINE`]-byte lines: as it is when it has that shape (a
/// newline ending every [`LINE`] bytes; lines are checked as they are visited); otherwise
/// rebuilt from its well-formed lines, sorted.
fn table_of(file: Vec<u8>) -> Vec<u8> {
    let bytes = &file[..];
    let fixed_width =
        bytes.len() % LINE == 0 && (1..=bytes.len() / LINE).all(|i| bytes[i * LINE - 1] == b'\n');
    if fixed_width {
        return file;
    }
    let mut lines: Vec<&[u8]> = bytes
        .split_inclusive(|b| *b == b'\n')
        .filter(|line| well_formed(line))
        .collect();
    lines.sort();
    lines.dedup_by(|a, b| a[..64] == b[..64]);
    lines.concat()
}

/// The first 16 hex digits of a line (its index's first 8 bytes) as a number, which sorts as
/// the lines do; the largest number when they are not hex (such a line is never found).
fn prefix_of(line: &[u8]) -> u64 {
    let mut value = 0u64;
    for &b in &line[..16] {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => return u64::MAX,
        };
        value = value << 4 | u64::from(digit);
    }
    value
}

/// Where a stanza's data key is filed: a keyed hash, so the file tells nothing about the
/// stanzas (which are in git) without the identity.
fn index_of(wrapping: &Wrapping, stanza: &str) -> Index {
    let mut mac = wrapping.index_mac.clone();
    mac.update(stanza.as_bytes());
    mac.finalize().into_bytes().into()
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
        let first = DataKeyCache::new([&b"AGE-SECRET-KEY-1A"[..]], Vec::new());
        assert!(first.open("stanza").is_none());
        first.remember("stanza", &key);
        let text = first.updated_text().expect("an entry was added");
        assert!(!text.contains(&hex::encode(key)));

        let next = DataKeyCache::new([&b"AGE-SECRET-KEY-1A"[..]], text.clone().into_bytes());
        assert_eq!(next.open("stanza").as_deref(), Some(&key));
        assert!(next.open("another stanza").is_none());
        assert!(next.updated_text().is_none(), "nothing new to write");

        let stranger = DataKeyCache::new([&b"AGE-SECRET-KEY-1B"[..]], text.clone().into_bytes());
        assert!(stranger.open("stanza").is_none());
    }

    #[test]
    fn lines_out_of_order_cost_misses_and_are_written_back_sorted() {
        let first = DataKeyCache::new([&b"K"[..]], Vec::new());
        for i in 0..50u32 {
            first.remember(&format!("stanza {i}"), &[i as u8; 32]);
        }
        let text = first.updated_text().unwrap();
        let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
        lines.reverse();
        let reversed = lines.concat();
        // Fixed width, so read as it is: whatever the search misses is opened again.
        let next = DataKeyCache::new([&b"K"[..]], reversed.into_bytes());
        let mut missed = 0;
        for i in 0..50u32 {
            match next.open(&format!("stanza {i}")) {
                Some(key) => assert_eq!(*key, [i as u8; 32]),
                None => {
                    missed += 1;
                    next.remember(&format!("stanza {i}"), &[i as u8; 32]);
                }
            }
        }
        assert!(missed > 0);
        assert_eq!(next.updated_text().as_deref(), Some(text.as_str()));
    }

    #[test]
    fn a_damaged_entry_is_ignored() {
        let first = DataKeyCache::new([&b"K"[..]], Vec::new());
        first.remember("stanza", &[1u8; 32]);
        let text = first.updated_text().unwrap();
        let (index, sealed) = text.trim().split_once(' ').unwrap();
        let flipped = if sealed.starts_with('0') { "1" } else { "0" };
        // With a foreign line (the file is rebuilt) and without (read as it is).
        for tail in ["not a line\n", ""] {
            let damaged = format!("{index} {flipped}{}\n{tail}", &sealed[1..]);
            let next = DataKeyCache::new([&b"K"[..]], damaged.into_bytes());
            assert!(next.open("stanza").is_none());
            // Opened with the key again, the entry replaces the damaged line.
            next.remember("stanza", &[1u8; 32]);
            assert_eq!(next.updated_text().as_deref(), Some(text.as_str()));
        }
    }

    #[test]
    fn entries_are_found_among_many_and_in_a_file_not_as_written() {
        let first = DataKeyCache::new([&b"K"[..]], Vec::new());
        for i in 0..300u32 {
            first.remember(&format!("stanza {i}"), &[i as u8; 32]);
        }
        let text = first.updated_text().unwrap();
        assert_eq!(text.len(), 300 * LINE);
        let next = DataKeyCache::new([&b"K"[..]], text.clone().into_bytes());
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
        let shuffled = DataKeyCache::new([&b"K"[..]], lines.concat().into_bytes());
        assert_eq!(shuffled.open("stanza 42").as_deref(), Some(&[42u8; 32]));
    }
}
