//! The keys `--verify-signatures` trusts, read from files or a Secret's entries, and the
//! check of one signature against them (the armor's first line says which kind it is).

use super::outcome::{KeyFileError, Refusal, Signer};
use super::{cosign, openpgp, ssh};
use std::fmt;
use std::path::{Path, PathBuf};

/// The keys whose signatures are accepted.
#[derive(Default, Clone)]
pub struct TrustedKeys {
    openpgp: Vec<openpgp::TrustedKey>,
    ssh: Vec<ssh::AllowedSigner>,
    cosign: Vec<cosign::CosignKey>,
}

impl fmt::Debug for TrustedKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TrustedKeys({} OpenPGP, {} SSH, {} cosign)",
            self.openpgp.len(),
            self.ssh.len(),
            self.cosign.len()
        )
    }
}

impl TrustedKeys {
    /// Reads each `--trusted-keys` path: a file, or every regular file of a directory
    /// (hidden ones skipped), in name order.
    pub fn read(paths: &[PathBuf]) -> Result<TrustedKeys, KeyFileError> {
        let mut keys = TrustedKeys::default();
        for path in paths {
            for file in key_files(path)? {
                let text = std::fs::read_to_string(&file).map_err(|e| KeyFileError {
                    origin: file.display().to_string(),
                    message: format!("cannot read trusted keys: {e}"),
                })?;
                keys.add(&file.display().to_string(), &text)?;
            }
        }
        Ok(keys)
    }

    /// Adds the keys of one text: armored OpenPGP public keys, cosign public keys (PEM), or
    /// `allowed_signers` lines.
    pub fn add(&mut self, origin: &str, text: &str) -> Result<(), KeyFileError> {
        let private = |how: &str| KeyFileError {
            origin: origin.to_string(),
            message: format!("holds a private key; give the public key only ({how})"),
        };
        if text.contains("-----BEGIN PGP PRIVATE KEY BLOCK-----") {
            return Err(private("gpg --export --armor KEYID"));
        }
        if text.contains("PRIVATE KEY-----") {
            return Err(private("cosign.pub, not cosign.key"));
        }
        if text.contains("-----BEGIN PUBLIC KEY-----") {
            self.cosign.extend(cosign::read_keys(origin, text)?);
        } else if text.contains("-----BEGIN PGP PUBLIC KEY BLOCK-----") {
            self.openpgp.extend(openpgp::read_keys(origin, text)?);
        } else {
            self.ssh.extend(ssh::read_allowed_signers(origin, text)?);
        }
        Ok(())
    }

    /// Whether no key could check a commit or tag.
    pub fn is_empty(&self) -> bool {
        self.openpgp.is_empty() && self.ssh.is_empty()
    }

    /// Checks the cosign signatures of an OCI artifact (its manifest digest `sha256:<hex>`).
    pub fn check_cosign(
        &self,
        manifest_digest: &str,
        signatures: &[cosign::CosignSignature],
    ) -> Result<Signer, Refusal> {
        if self.cosign.is_empty() {
            return Err(Refusal::UntrustedKey(
                "any key: no cosign public key is trusted (pass cosign.pub with --trusted-keys)"
                    .into(),
            ));
        }
        cosign::check(manifest_digest, signatures, &self.cosign)
    }
}

fn key_files(path: &Path) -> Result<Vec<PathBuf>, KeyFileError> {
    let error = |e: std::io::Error| KeyFileError {
        origin: path.display().to_string(),
        message: format!("cannot read trusted keys: {e}"),
    };
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(error)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Checks `signature` (an armored block as git stores it) over `signed` against the
/// trusted keys, at `now` (Unix seconds).
pub fn check(
    signature: &[u8],
    signed: &[u8],
    keys: &TrustedKeys,
    now: i64,
) -> Result<Signer, Refusal> {
    let text = String::from_utf8_lossy(signature);
    let first = text.lines().next().unwrap_or_default().trim();
    match first {
        "-----BEGIN PGP SIGNATURE-----" => openpgp::check(&text, signed, &keys.openpgp, now),
        "-----BEGIN SSH SIGNATURE-----" => ssh::check(&text, signed, &keys.ssh, now),
        "-----BEGIN SIGNED MESSAGE-----" => Err(Refusal::Unsupported(
            "an X.509 (S/MIME) signature".to_string(),
        )),
        _ => Err(Refusal::Unsupported(format!(
            "of an unknown kind ({first:?})"
        ))),
    }
}
