//! Decryption keys: age X25519 identities and armored OpenPGP private keys parsed from the
//! text of key files, and where tend looked for them (for the message when none opens a file). Reading the files is the
//! caller's; nothing here does I/O, and key material is never printed.

use super::cache::DataKeyCache;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use zeroize::Zeroizing;

/// The keys a run may decrypt with.
#[derive(Default, Clone)]
pub struct Keys {
    age: Vec<age::x25519::Identity>,
    pgp: Vec<pgp::composed::SignedSecretKey>,
    /// Where tend looked, in order, with what it found: `SOPS_AGE_KEY (1 age key)`.
    pub searched: Vec<String>,
    /// Data keys opened by earlier runs (see [`DataKeyCache`]), when the caller gave one.
    cache: Option<Arc<DataKeyCache>>,
}

// Never the keys themselves.
impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Keys({} age, searched {:?})",
            self.age.len(),
            self.searched
        )
    }
}

/// A line of a key file that is not a key tend reads (its content is not repeated).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct KeyFileError {
    pub line: usize,
    pub message: String,
}

impl Keys {
    pub fn is_empty(&self) -> bool {
        self.age.is_empty() && self.pgp.is_empty()
    }

    pub fn pgp_keys(&self) -> &[pgp::composed::SignedSecretKey] {
        &self.pgp
    }

    pub fn age_identities(&self) -> &[age::x25519::Identity] {
        &self.age
    }

    /// Add the keys in `text` (an age identity file: `AGE-SECRET-KEY-1…` lines, `#` comments;
    /// and armored OpenPGP private key blocks), noting `source` as searched. Returns how many
    /// keys it held.
    pub fn add_text(&mut self, source: &str, text: &str) -> Result<usize, KeyFileError> {
        let mut found = Vec::new();
        let mut pgp_found = Vec::new();
        let mut block: Option<(usize, String)> = None;
        for (i, line) in text.lines().enumerate() {
            if let Some((start, armored)) = &mut block {
                armored.push_str(line);
                armored.push('\n');
                if line.trim() == "-----END PGP PRIVATE KEY BLOCK-----" {
                    pgp_found.push(parse_pgp(armored, *start)?);
                    block = None;
                }
                continue;
            }
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line == "-----BEGIN PGP PRIVATE KEY BLOCK-----" {
                block = Some((i + 1, format!("{line}\n")));
                continue;
            }
            if line.starts_with("AGE-PLUGIN-") {
                return Err(KeyFileError {
                    line: i + 1,
                    message: "an age plugin identity: tend reads X25519 identities (AGE-SECRET-KEY-1…) only".into(),
                });
            }
            match age::x25519::Identity::from_str(line) {
                Ok(identity) => found.push(identity),
                Err(_) => {
                    return Err(KeyFileError {
                        line: i + 1,
                        message: "not an age identity (expected AGE-SECRET-KEY-1… or a # comment)"
                            .into(),
                    })
                }
            }
        }
        if let Some((start, _)) = block {
            return Err(KeyFileError {
                line: start,
                message: "an OpenPGP private key block without its END line".into(),
            });
        }
        let (n, p) = (found.len(), pgp_found.len());
        self.age.extend(found);
        self.pgp.extend(pgp_found);
        let mut held = format!("{n} age key{}", if n == 1 { "" } else { "s" });
        if p > 0 {
            held.push_str(&format!(", {p} PGP key{}", if p == 1 { "" } else { "s" }));
        }
        self.searched.push(format!("{source} ({held})"));
        Ok(n + p)
    }

    /// Use the data-key cache whose file holds `file`, for the keys held now (call it after
    /// the last key is added: the cache opens only what these keys opened before).
    pub fn attach_cache(&mut self, file: Vec<u8>) {
        use age::secrecy::ExposeSecret;
        let age: Vec<_> = self.age.iter().map(|i| i.to_string()).collect();
        let pgp: Vec<Zeroizing<Vec<u8>>> = self
            .pgp
            .iter()
            .filter_map(|k| pgp::ser::Serialize::to_bytes(k).ok().map(Zeroizing::new))
            .collect();
        let secrets = age
            .iter()
            .map(|s| s.expose_secret().as_bytes())
            .chain(pgp.iter().map(|b| &b[..]));
        self.cache = Some(Arc::new(DataKeyCache::new(secrets, file)));
    }

    /// The same keys without the data-key cache: for keys about to be joined by others (a
    /// Flux unit's own decryption Secret), whose opened data keys must not be remembered
    /// under the run's keys alone.
    pub fn without_cache(&self) -> Keys {
        Keys {
            cache: None,
            ..self.clone()
        }
    }

    pub fn cache(&self) -> Option<&DataKeyCache> {
        self.cache.as_deref()
    }

    /// Note a place looked at that held nothing (`~/.config/sops/age/keys.txt (not found)`).
    pub fn note(&mut self, searched: String) {
        self.searched.push(searched);
    }

    /// The age public keys of the identities held (for messages).
    pub fn age_recipients(&self) -> Vec<String> {
        self.age.iter().map(|i| i.to_public().to_string()).collect()
    }
}

/// One armored OpenPGP private key; passphrase-protected ones are refused (tend never prompts).
fn parse_pgp(armored: &str, line: usize) -> Result<pgp::composed::SignedSecretKey, KeyFileError> {
    use pgp::composed::Deserializable;
    let (key, _) =
        pgp::composed::SignedSecretKey::from_string(armored).map_err(|_| KeyFileError {
            line,
            message: "not a readable armored OpenPGP private key".into(),
        })?;
    let protected = key.primary_key.secret_params().is_encrypted()
        || key
            .secret_subkeys
            .iter()
            .any(|s| s.key.secret_params().is_encrypted());
    if protected {
        return Err(KeyFileError {
            line,
            message: "an OpenPGP private key protected by a passphrase, which tend cannot ask for; export it without one (`gpg --export-secret-keys` after `gpg --passwd` with an empty passphrase) or use an age key (add its recipient with `sops updatekeys`)".into(),
        });
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AGE-SECRET-KEY-1NJT5YCS2LWU4V4QAJQ6R4JNU7LXPDX602DZ9NUFANVU5GDTGUWCQ5T59M6";

    #[test]
    fn identity_files_are_read_with_comments() {
        let mut keys = Keys::default();
        let text = format!("# created: now\n# public key: age1...\n{KEY}\n\n");
        assert_eq!(keys.add_text("k.txt", &text), Ok(1));
        assert_eq!(
            keys.age_recipients(),
            vec!["age1yt3tfqlfrwdwx0z0ynwplcr6qxcxfaqycuprpmy89nr83ltx74tqdpszlw"]
        );
        assert_eq!(keys.searched, vec!["k.txt (1 age key)"]);
        assert!(!format!("{keys:?}").contains("SECRET"));
    }

    #[test]
    fn a_bad_line_is_named_without_its_content() {
        let mut keys = Keys::default();
        let err = keys
            .add_text("k.txt", "# c\nAGE-SECRET-KEY-1XYZ\n")
            .unwrap_err();
        assert_eq!(err.line, 2);
        assert!(!err.to_string().contains("XYZ"));
    }
}
