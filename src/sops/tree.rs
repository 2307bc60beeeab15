//! Walking a sops tree as sops.go does: mapping keys extend the path, list items keep their
//! list's path, nulls are skipped; which leaves are encrypted follows the metadata's suffix and
//! regex rules; the MAC is SHA-512 over the plaintext leaves in order.

use super::cipher::{self, Plain, ValueError};
use super::{Metadata, SopsError};
use crate::yaml::Step;
use serde_json::Value;
use sha2::{Digest, Sha512};

/// sops's `MACOnlyEncryptedInitialization`: SHA-256 of `sops`, fed first when only
/// encrypted values are in the MAC, so that the two kinds of MAC never agree.
const MAC_ONLY_ENCRYPTED_INIT: [u8; 32] = [
    0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0x0b,
    0x0b, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69,
];

/// Whether sops encrypts a leaf at `path` (`shouldBeEncrypted` without comments).
pub fn should_be_encrypted(meta: &Metadata, path: &[&str]) -> bool {
    let mut encrypted = true;
    if !meta.unencrypted_suffix.is_empty()
        && path.iter().any(|p| p.ends_with(&meta.unencrypted_suffix))
    {
        encrypted = false;
    }
    if !meta.encrypted_suffix.is_empty() {
        encrypted = path.iter().any(|p| p.ends_with(&meta.encrypted_suffix));
    }
    if let Some(re) = &meta.unencrypted_regex {
        if path.iter().any(|p| re.is_match(p)) {
            encrypted = false;
        }
    }
    if let Some(re) = &meta.encrypted_regex {
        encrypted = path.iter().any(|p| re.is_match(p));
    }
    encrypted
}

struct Walk<'a> {
    meta: &'a Metadata,
    key: cipher::DataKey,
    hash: Sha512,
    doc: usize,
    /// The full path's shape for a problem's line: `None` for a key (the next of the sops
    /// path, keys only, passed along the walk), an index for a list item.
    steps: Vec<Option<usize>>,
}

/// Decrypt every document in place and check the MAC against `meta.mac`.
pub fn decrypt(docs: &mut [Value], meta: &Metadata, key: &[u8; 32]) -> Result<(), SopsError> {
    let mut walk = Walk {
        meta,
        key: cipher::DataKey::new(key),
        hash: Sha512::new(),
        doc: 0,
        steps: Vec::new(),
    };
    if meta.mac_only_encrypted {
        walk.hash.update(MAC_ONLY_ENCRYPTED_INIT);
    }
    for (i, doc) in docs.iter_mut().enumerate() {
        walk.doc = i;
        walk.value(doc, &mut Vec::new())?;
    }
    let computed = upper_hex(&walk.hash.finalize());
    let stored = cipher::open(&meta.mac, &walk.key, &meta.lastmodified).map_err(|source| {
        SopsError::Value {
            doc: 0,
            path: vec![Step::Key("sops".into()), Step::Key("mac".into())],
            source,
        }
    })?;
    match stored {
        Plain::Str(mac) if mac.as_bytes() == computed => Ok(()),
        _ => Err(SopsError::MacMismatch),
    }
}

/// The MAC as sops writes it, in upper-case hex (`hex::encode_upper` builds it a char at a
/// time, which cost more than the hash).
fn upper_hex(bytes: &[u8]) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 15)]);
    }
    out
}

impl Walk<'_> {
    /// `keys`: the sops path of `value` (borrowed from the document: a walk visits every
    /// key of every document, and copying each cost more than opening the values).
    fn value<'v>(
        &mut self,
        value: &'v mut Value,
        keys: &mut Vec<&'v str>,
    ) -> Result<(), SopsError> {
        match value {
            Value::Null => Ok(()),
            Value::Object(map) => {
                for (k, v) in map {
                    keys.push(k);
                    self.steps.push(None);
                    let result = self.value(v, keys);
                    keys.pop();
                    self.steps.pop();
                    result?;
                }
                Ok(())
            }
            Value::Array(items) => {
                for (i, v) in items.iter_mut().enumerate() {
                    self.steps.push(Some(i));
                    let result = self.value(v, keys);
                    self.steps.pop();
                    result?;
                }
                Ok(())
            }
            _ => self.leaf(value, keys),
        }
    }

    fn leaf(&mut self, value: &mut Value, keys: &[&str]) -> Result<(), SopsError> {
        let encrypted = if self.meta.comment_rules {
            value.as_str().is_some_and(super::looks_sealed)
        } else {
            should_be_encrypted(self.meta, keys)
        };
        let plain = if encrypted {
            let Value::String(sealed) = value else {
                return Err(self.error(keys, ValueError::Format));
            };
            let aad = format!("{}:", keys.join(":"));
            cipher::open(sealed, &self.key, &aad).map_err(|e| self.error(keys, e))?
        } else {
            match value {
                Value::String(s) => {
                    // Open text goes into the MAC as it is; nothing to copy or replace.
                    if !self.meta.mac_only_encrypted {
                        self.hash.update(s.as_bytes());
                    }
                    return Ok(());
                }
                Value::Bool(b) => Plain::Bool(*b),
                Value::Number(n) => match n.as_i64() {
                    Some(i) => Plain::Int(i),
                    None => Plain::Float(n.as_f64().unwrap_or_default()),
                },
                _ => return Ok(()),
            }
        };
        // Comments are never in the MAC.
        if (!self.meta.mac_only_encrypted || encrypted) && !matches!(plain, Plain::Comment(_)) {
            self.hash.update(plain.mac_bytes());
        }
        if encrypted {
            *value = plain.into_value();
        }
        Ok(())
    }

    fn error(&self, keys: &[&str], source: ValueError) -> SopsError {
        let mut keys = keys.iter();
        let path = self
            .steps
            .iter()
            .map(|step| match step {
                Some(i) => Step::Index(*i),
                None => Step::Key(keys.next().map(|k| k.to_string()).unwrap_or_default()),
            })
            .collect();
        SopsError::Value {
            doc: self.doc,
            path,
            source,
        }
    }
}
