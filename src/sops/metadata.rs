//! The `sops` metadata block: recipients holding the sealed data key, the MAC, and the rules
//! that say which leaves are encrypted.

use super::{Keys, SopsError};
use serde_json::Value;
use std::io::Read;
use std::sync::Arc;
use zeroize::Zeroizing;

/// One file's sops metadata, as far as decryption needs it.
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    /// `enc` of each age recipient, with its public key.
    pub age: Vec<(String, String)>,
    /// `enc` of each PGP recipient, with its fingerprint.
    pub pgp: Vec<(String, String)>,
    /// Recipients tend cannot use, described (`pgp 2504…`, `aws kms arn:…`).
    pub other: Vec<String>,
    pub key_groups: usize,
    pub lastmodified: String,
    pub mac: String,
    pub unencrypted_suffix: String,
    pub encrypted_suffix: String,
    pub unencrypted_regex: Option<Arc<regex::Regex>>,
    pub encrypted_regex: Option<Arc<regex::Regex>>,
    /// Comment rules: tend's YAML reader keeps no comments, so where one is set, which
    /// leaves are encrypted is read off the leaves themselves (a sealed value or not).
    pub comment_rules: bool,
    pub mac_only_encrypted: bool,
}

fn text(meta: &Value, key: &str) -> String {
    meta.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Compiling a regex costs more than decrypting a file's values (it builds a DFA), and a
/// repository's files share one `.sops.yaml` rule: each pattern is compiled once per run,
/// and shared, not cloned (a clone starts with empty search caches, allocated anew on its
/// first match: per file, that cost more than the matching).
fn regex(meta: &Value, key: &str) -> Result<Option<Arc<regex::Regex>>, SopsError> {
    static COMPILED: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<String, Arc<regex::Regex>>>,
    > = std::sync::OnceLock::new();
    let Some(pattern) = meta
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        return Ok(None);
    };
    let cache = COMPILED.get_or_init(Default::default);
    if let Some(re) = cache.lock().ok().and_then(|c| c.get(pattern).cloned()) {
        return Ok(Some(re));
    }
    let re = regex::Regex::new(pattern)
        .map(Arc::new)
        .map_err(|_| SopsError::BadMetadata(format!("{key} is not a valid regular expression")))?;
    if let Ok(mut cache) = cache.lock() {
        cache.insert(pattern.to_string(), re.clone());
    }
    Ok(Some(re))
}

impl Metadata {
    pub fn parse(meta: &Value) -> Result<Metadata, SopsError> {
        let mut out = Metadata {
            lastmodified: text(meta, "lastmodified"),
            mac: text(meta, "mac"),
            unencrypted_suffix: text(meta, "unencrypted_suffix"),
            encrypted_suffix: text(meta, "encrypted_suffix"),
            unencrypted_regex: regex(meta, "unencrypted_regex")?,
            encrypted_regex: regex(meta, "encrypted_regex")?,
            comment_rules: ["unencrypted_comment_regex", "encrypted_comment_regex"]
                .iter()
                .any(|k| {
                    meta.get(*k)
                        .and_then(Value::as_str)
                        .is_some_and(|s| !s.is_empty())
                }),
            // A string in dotenv files, whose values are all strings.
            mac_only_encrypted: matches!(meta.get("mac_only_encrypted"), Some(Value::Bool(true)))
                || meta.get("mac_only_encrypted").and_then(Value::as_str) == Some("true"),
            key_groups: 1,
            ..Metadata::default()
        };
        if out.mac.is_empty() || out.lastmodified.is_empty() {
            return Err(SopsError::BadMetadata(
                "it has no `mac` or no `lastmodified`".into(),
            ));
        }
        // Recipients are either top-level lists (one key group) or `key_groups`.
        let groups: Vec<&Value> = match meta.get("key_groups").and_then(Value::as_array) {
            Some(groups) if !groups.is_empty() => groups.iter().collect(),
            _ => vec![meta],
        };
        out.key_groups = groups.len();
        for group in groups {
            out.read_group(group);
        }
        Ok(out)
    }

    fn read_group(&mut self, group: &Value) {
        let entries = |key: &str| {
            group
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        for entry in entries("age") {
            self.age
                .push((text(&entry, "recipient"), text(&entry, "enc")));
        }
        for entry in entries("pgp") {
            self.pgp.push((text(&entry, "fp"), text(&entry, "enc")));
        }
        for entry in entries("kms") {
            self.other.push(format!("AWS KMS {}", text(&entry, "arn")));
        }
        for entry in entries("gcp_kms") {
            self.other
                .push(format!("GCP KMS {}", text(&entry, "resource_id")));
        }
        for entry in entries("azure_kv") {
            self.other.push(format!(
                "Azure Key Vault {}/keys/{}",
                text(&entry, "vault_url"),
                text(&entry, "name")
            ));
        }
        for entry in entries("hc_vault") {
            self.other.push(format!(
                "HashiCorp Vault {}/v1/{}/keys/{}",
                text(&entry, "vault_address"),
                text(&entry, "engine_path"),
                text(&entry, "key_name")
            ));
        }
    }

    /// Every recipient, described for messages.
    pub fn recipients(&self) -> Vec<String> {
        let mut all: Vec<String> = self.age.iter().map(|(r, _)| format!("age {r}")).collect();
        all.extend(self.pgp.iter().map(|(fp, _)| format!("PGP key {fp}")));
        all.extend(self.other.iter().cloned());
        all
    }

    /// The data key, opened with the first identity that matches an age recipient.
    pub fn data_key(&self, keys: &Keys) -> Result<Zeroizing<[u8; 32]>, SopsError> {
        if self.key_groups > 1 {
            return Err(SopsError::Shamir(self.key_groups));
        }
        if self.age.is_empty() && self.pgp.is_empty() {
            return Err(SopsError::Unsupported(self.other.clone()));
        }
        let stanzas = || self.age.iter().chain(&self.pgp).map(|(_, enc)| enc);
        if let Some(cache) = keys.cache() {
            if let Some(key) = stanzas().find_map(|enc| cache.open(enc)) {
                return Ok(key);
            }
        }
        // sops's default order: age, then PGP.
        let opened = self
            .age
            .iter()
            .find_map(|(_, enc)| open_age(enc, keys).map(|key| (enc, key)))
            .or_else(|| {
                self.pgp
                    .iter()
                    .find_map(|(_, enc)| open_pgp(enc, keys).map(|key| (enc, key)))
            });
        if let Some((enc, key)) = opened {
            if let Some(cache) = keys.cache() {
                cache.remember(enc, &key);
            }
            return Ok(key);
        }
        Err(SopsError::NoKey {
            recipients: self.recipients(),
            searched: keys.searched.clone(),
        })
    }
}

/// The data key sealed in one OpenPGP message, if a key opens it.
fn open_pgp(enc: &str, keys: &Keys) -> Option<Zeroizing<[u8; 32]>> {
    for secret in keys.pgp_keys() {
        let Ok((message, _)) = pgp::composed::Message::from_string(enc) else {
            return None;
        };
        let Ok(mut plain) = message.decrypt(&pgp::types::Password::empty(), secret) else {
            continue;
        };
        // gpg compresses what it encrypts.
        if plain.is_compressed() {
            plain = plain.decompress().ok()?;
        }
        let bytes = Zeroizing::new(plain.as_data_vec().ok()?);
        if bytes.len() == 32 {
            let mut key = Zeroizing::new([0u8; 32]);
            key.copy_from_slice(&bytes);
            return Some(key);
        }
    }
    None
}

/// The data key sealed in one age stanza (an armored age file), if a key opens it.
fn open_age(enc: &str, keys: &Keys) -> Option<Zeroizing<[u8; 32]>> {
    if keys.age_identities().is_empty() {
        return None;
    }
    let reader = age::armor::ArmoredReader::new(enc.as_bytes());
    let decryptor = age::Decryptor::new(reader).ok()?;
    let identities = keys
        .age_identities()
        .iter()
        .map(|i| i as &dyn age::Identity);
    let mut plain = decryptor.decrypt(identities).ok()?;
    let mut bytes = Zeroizing::new(Vec::with_capacity(32));
    plain.read_to_end(&mut bytes).ok()?;
    let mut key = Zeroizing::new([0u8; 32]);
    if bytes.len() != 32 {
        return None;
    }
    key.copy_from_slice(&bytes);
    Some(key)
}
